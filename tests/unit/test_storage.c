/* Unit tests of the storage layer without the daemon: storage_write and storage_read round
 * trips on three locales for every dtype and Strings, both file types and both modes;
 * empty arrays, more locales than elements, _LOCALE file names, the schema's attributes
 * as HDF5 sees them, append collisions leaving files untouched, refused paths, and
 * compressed datasets. */
#include "check.h"
#include "config.h"
#include "locales.h"
#include "objects/object.h"
#include "objects/strings.h"
#include "registry.h"
#include "storage/storage.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

#define LOCALES 3

/* ------------------------------------------------------------------ helpers */

static object *make_pdarray(h5ark_dtype dtype, uint64_t n, uint64_t seed) {
    h5ark_error err = {0};
    object *obj = object_new_pdarray(dtype, n, &err);
    if (!obj) return NULL;
    size_t isz = h5ark_dtype_size(dtype);
    for (int b = 0; b < obj->values->nshards; b++) {
        shard *s = &obj->values->shards[b];
        unsigned char *p = s->data;
        for (uint64_t i = 0; i < s->count; i++) {
            uint64_t g = s->start + i;
            uint64_t v = (g + 1) * 0x9E3779B97F4A7C15ull ^ seed;
            if (dtype == H5ARK_BOOLEAN) v &= 1;
            if (dtype == H5ARK_FLOAT64) {
                double d = g % 5 == 0 ? NAN : g % 5 == 1 ? -0.0 : (double)(int64_t)v / 7.0;
                memcpy(&v, &d, 8);
            }
            if (dtype == H5ARK_FLOAT32) {
                float f = g % 3 == 0 ? INFINITY : (float)(int32_t)v / 3.0f;
                uint32_t u;
                memcpy(&u, &f, 4);
                v = u;
            }
            memcpy(p + i * isz, &v, isz); /* little-endian: the low bytes */
        }
    }
    return obj;
}

static object *make_strings(const char *const *strs, uint64_t n) {
    uint64_t counts[LOCALES] = {0};
    for (int b = 0; b < LOCALES; b++)
        for (uint64_t i = locales_block_start(n, LOCALES, b);
             i < locales_block_start(n, LOCALES, b + 1); i++)
            counts[b] += strlen(strs[i]) + 1;
    h5ark_error err = {0};
    object *obj = object_new_strings(n, counts, &err);
    if (!obj) return NULL;
    uint64_t off = 0;
    for (int b = 0; b < LOCALES; b++) {
        shard *seg = &obj->segments->shards[b], *val = &obj->values->shards[b];
        for (uint64_t i = 0; i < seg->count; i++) {
            const char *s = strs[seg->start + i];
            ((int64_t *)seg->data)[i] = (int64_t)off;
            memcpy((char *)val->data + (off - val->start), s, strlen(s) + 1);
            off += strlen(s) + 1;
        }
    }
    return obj;
}

/* Copy a darray's contents out, in order, into a malloc'd buffer. */
static unsigned char *gather(const darray *a) {
    unsigned char *out = malloc(a->size * a->itemsize + 1);
    for (int b = 0; b < a->nshards; b++)
        if (a->shards[b].count)
            memcpy(out + a->shards[b].start * a->itemsize, a->shards[b].data,
                   a->shards[b].count * a->itemsize);
    return out;
}

static bool same_darray(const darray *a, const darray *b) {
    if (a->size != b->size || a->itemsize != b->itemsize) return false;
    unsigned char *x = gather(a), *y = gather(b);
    bool same = memcmp(x, y, a->size * a->itemsize) == 0;
    free(x);
    free(y);
    return same;
}

static bool exists(const char *rel) {
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", config.data_dir, rel);
    struct stat st;
    return stat(p, &st) == 0;
}

static char *slurp(const char *rel, size_t *len) {
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", config.data_dir, rel);
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

static int write_items(const storage_item *items, size_t n, const char *path, storage_mode mode,
                       storage_file_type type, const storage_write_options *opts,
                       h5ark_value **warnings, h5ark_error *err) {
    h5ark_value *files = h5ark_value_array(), *warn = h5ark_value_array();
    int rc = storage_write_ex(items, n, path, mode, type, opts, files, warn, err);
    h5ark_value_destroy(&files);
    if (warnings)
        *warnings = warn;
    else
        h5ark_value_destroy(&warn);
    return rc;
}

static int write_one(object *obj, const char *dset, const char *path, storage_mode mode,
                     storage_file_type type, h5ark_value **warnings, h5ark_error *err) {
    storage_item item = {.obj = obj, .dataset = dset};
    return write_items(&item, 1, path, mode, type, NULL, warnings, err);
}

/* Read one dataset from the given relative files; NULL on failure (err filled). */
static storage_read_item *read_rel(const char *const *rel, size_t n, const char *dset,
                                   storage_read_options opts, h5ark_value *file_errors,
                                   h5ark_error *err) {
    char *paths[16];
    for (size_t i = 0; i < n; i++) {
        paths[i] = malloc(2 * PATH_MAX);
        snprintf(paths[i], 2 * PATH_MAX, "%s/%s", config.data_dir, rel[i]);
    }
    storage_read_item *items = NULL;
    size_t nitems = 0;
    const char *names[1] = {dset};
    h5ark_value *fe = file_errors ? file_errors : h5ark_value_array();
    h5ark_value *warnings = h5ark_value_array();
    int rc = storage_read(paths, n, dset ? names : NULL, dset ? 1 : 0, &opts, &items, &nitems, fe,
                          warnings, err);
    h5ark_value_destroy(&warnings);
    if (!file_errors) h5ark_value_destroy(&fe);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    if (rc) return NULL;
    if (nitems != 1) {
        storage_read_items_free(items, nitems);
        return NULL;
    }
    return items;
}

static const storage_read_options strict = {.strict_types = true};

static void locale_names(const char *path, char names[LOCALES][PATH_MAX], const char **ptrs) {
    for (int i = 0; i < LOCALES; i++) {
        snprintf(names[i], PATH_MAX, "%s", path);
        char *dot = strrchr(names[i], '.');
        char tail[64] = "";
        if (dot) {
            snprintf(tail, sizeof tail, "%s", dot);
            *dot = '\0';
        }
        size_t len = strlen(names[i]);
        snprintf(names[i] + len, PATH_MAX - len, "_LOCALE%04d%s", i, tail);
        ptrs[i] = names[i];
    }
}

/* ------------------------------------------------------------------ tests */

static void test_pdarray_roundtrips(void) {
    static const uint64_t sizes[] = {0, 1, 2, 3, 10, 1001};
    for (int dt = 0; dt < H5ARK_STRING; dt++) {
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            for (int single = 0; single < 2; single++) {
                object *obj = make_pdarray((h5ark_dtype)dt, sizes[k], (uint64_t)dt);
                CHECK(obj != NULL);
                if (!obj) continue;
                char path[64];
                snprintf(path, sizeof path, "rt_%s_%llu_%d.h5", h5ark_dtype_name(dt),
                         (unsigned long long)sizes[k], single);
                h5ark_error err = {0};
                int rc = write_one(obj, "vals", path, STORAGE_TRUNCATE,
                                   single ? STORAGE_SINGLE : STORAGE_DISTRIBUTE, NULL, &err);
                CHECK(rc == 0);
                if (rc) fprintf(stderr, "  write %s: %s\n", path, err.message);
                char names[LOCALES][PATH_MAX];
                const char *rel[LOCALES] = {path};
                size_t nrel = 1;
                if (!single) {
                    locale_names(path, names, rel);
                    nrel = LOCALES;
                }
                for (size_t i = 0; i < nrel; i++)
                    CHECK(exists(rel[i]));
                if (!single) CHECK(!exists(path));
                storage_read_item *it = read_rel(rel, nrel, "vals", strict, NULL, &err);
                CHECK(it != NULL);
                if (!it) {
                    fprintf(stderr, "  read %s: %s\n", path, err.message);
                } else {
                    CHECK(it->obj->objtype == H5ARK_PDARRAY);
                    CHECK(it->obj->dtype == (h5ark_dtype)dt);
                    CHECK(it->obj->size == sizes[k]);
                    CHECK(it->file_tag == NULL);
                    CHECK(same_darray(it->obj->values, obj->values));
                    storage_read_items_free(it, 1);
                }
                object_release(obj);
            }
        }
    }
}

static void test_strings_roundtrips(void) {
    static const char *const words[] = {"alpha", "", "gamma", "δέλτα", "e", "", "", "zeta"};
    for (uint64_t n = 0; n <= 8; n++) {
        object *obj = make_strings(words, n);
        CHECK(obj != NULL);
        for (int single = 0; single < 2; single++) {
            char path[64];
            snprintf(path, sizeof path, "str_%llu_%d.h5", (unsigned long long)n, single);
            h5ark_error err = {0};
            CHECK(write_one(obj, "s", path, STORAGE_TRUNCATE,
                            single ? STORAGE_SINGLE : STORAGE_DISTRIBUTE, NULL, &err) == 0);
            char names[LOCALES][PATH_MAX];
            const char *rel[LOCALES] = {path};
            size_t nrel = 1;
            if (!single) {
                locale_names(path, names, rel);
                nrel = LOCALES;
            }
            for (int calc = 0; calc < 2; calc++) {
                storage_read_options opts = {
                    .strict_types = true, .calc_string_offsets = calc, .tag_data = true};
                storage_read_item *it = read_rel(rel, nrel, "s", opts, NULL, &err);
                CHECK(it != NULL);
                if (!it) {
                    fprintf(stderr, "  read %s: %s\n", path, err.message);
                    continue;
                }
                CHECK(it->obj->objtype == H5ARK_STRINGS && it->obj->size == n);
                CHECK(same_darray(it->obj->values, obj->values));
                CHECK(same_darray(it->obj->segments, obj->segments));
                for (int b = 0; b < LOCALES; b++)
                    CHECK(strings_check_shard(it->obj, b) == UINT64_MAX);
                CHECK(it->file_tag && it->file_tag->size == n);
                if (it->file_tag && !single && n > 0) {
                    int64_t *tags = (int64_t *)gather(it->file_tag->values);
                    for (uint64_t i = 0; i < n; i++) {
                        int want = 0;
                        while (want + 1 < LOCALES && locales_block_start(n, LOCALES, want + 1) <= i)
                            want++;
                        CHECK(tags[i] == want);
                    }
                    free(tags);
                }
                storage_read_items_free(it, 1);
            }
        }
        object_release(obj);
    }
}

static void test_file_names(void) {
    object *obj = make_pdarray(H5ARK_INT64, 2, 1); /* fewer elements than locales */
    static const struct {
        const char *path, *first, *last;
    } cases[] = {
        {"data.h5", "data_LOCALE0000.h5", "data_LOCALE0002.h5"},
        {"out", "out_LOCALE0000", "out_LOCALE0002"},
        {"a.b.c", "a.b_LOCALE0000.c", "a.b_LOCALE0002.c"},
        {"sub.d/plain", "sub.d/plain_LOCALE0000", "sub.d/plain_LOCALE0002"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        storage_item item = {.obj = obj, .dataset = "x"};
        h5ark_value *files = h5ark_value_array(), *warn = h5ark_value_array();
        h5ark_error err = {0};
        int rc = storage_write(&item, 1, cases[i].path, STORAGE_TRUNCATE, STORAGE_DISTRIBUTE, files,
                               warn, &err);
        CHECK(rc == 0);
        if (rc) fprintf(stderr, "  %s: %s\n", cases[i].path, err.message);
        CHECK(h5ark_value_len(files) == LOCALES);
        if (h5ark_value_len(files) == LOCALES) {
            CHECK(strcmp(h5ark_value_at(files, 0)->as.s.ptr, cases[i].first) == 0);
            CHECK(strcmp(h5ark_value_at(files, LOCALES - 1)->as.s.ptr, cases[i].last) == 0);
        }
        CHECK(exists(cases[i].first) && exists(cases[i].last));
        CHECK(h5ark_value_len(warn) == 0);
        h5ark_value_destroy(&files);
        h5ark_value_destroy(&warn);
    }
    object_release(obj);
}

static void test_schema_attributes(void) {
    object *b = make_pdarray(H5ARK_BOOLEAN, 5, 3);
    object *f = make_pdarray(H5ARK_FLOAT32, 5, 3);
    static const char *const words[] = {"x", "yy"};
    object *s = make_strings(words, 2);
    storage_item items[] = {{b, "b"}, {f, "f"}, {s, "s"}};
    h5ark_value *files = h5ark_value_array(), *warn = h5ark_value_array();
    h5ark_error err = {0};
    CHECK(storage_write(items, 3, "attrs.h5", STORAGE_TRUNCATE, STORAGE_SINGLE, files, warn,
                        &err) == 0);
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/attrs.h5", config.data_dir);
    hid_t file = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(file >= 0);
    int64_t v = -1;
    hid_t a = H5Aopen(file, "File_Format", H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    CHECK(H5Tequal(t, H5T_STD_I64LE) > 0);
    CHECK(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0 && v == 0);
    H5Tclose(t);
    H5Aclose(a);
    hid_t d = H5Dopen2(file, "b", H5P_DEFAULT);
    t = H5Dget_type(d);
    CHECK(H5Tequal(t, H5T_STD_U8LE) > 0);
    H5Tclose(t);
    hid_t dcpl = H5Dget_create_plist(d);
    CHECK(H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0);
    H5Pclose(dcpl);
    static const char *const order[] = {"ObjType", "isBool", "file_version", "arkouda_version"};
    for (int i = 0; i < 4; i++) {
        char name[64] = "";
        /* native order of an untracked object header is creation order */
        H5Aget_name_by_idx(d, ".", H5_INDEX_NAME, H5_ITER_NATIVE, (hsize_t)i, name, sizeof name,
                           H5P_DEFAULT);
        CHECK(strcmp(name, order[i]) == 0);
    }
    a = H5Aopen(d, "isBool", H5P_DEFAULT);
    CHECK(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0 && v == 1);
    H5Aclose(a);
    a = H5Aopen(d, "file_version", H5P_DEFAULT);
    t = H5Aget_type(a);
    float fv = 0;
    CHECK(H5Tequal(t, H5T_IEEE_F32LE) > 0);
    CHECK(H5Aread(a, H5T_NATIVE_FLOAT, &fv) >= 0 && fv == 2.0f);
    H5Tclose(t);
    H5Aclose(a);
    a = H5Aopen(d, "arkouda_version", H5P_DEFAULT);
    t = H5Aget_type(a);
    char ver[64] = "";
    CHECK(H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0);
    CHECK(H5Tget_strpad(t) == H5T_STR_NULLTERM && H5Tget_cset(t) == H5T_CSET_ASCII);
    size_t vsize = H5Tget_size(t);
    CHECK(vsize < sizeof ver && H5Aread(a, t, ver) >= 0 && strlen(ver) + 1 == vsize);
    H5Tclose(t);
    H5Aclose(a);
    H5Dclose(d);
    d = H5Dopen2(file, "f", H5P_DEFAULT);
    t = H5Dget_type(d);
    CHECK(H5Tequal(t, H5T_IEEE_F32LE) > 0);
    CHECK(H5Aexists(d, "isBool") == 0);
    H5Tclose(t);
    H5Dclose(d);
    hid_t g = H5Gopen2(file, "s", H5P_DEFAULT);
    a = H5Aopen(g, "ObjType", H5P_DEFAULT);
    CHECK(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0 && v == 2);
    H5Aclose(a);
    for (int i = 0; i < 2; i++) {
        d = H5Dopen2(g, i ? "segments" : "values", H5P_DEFAULT);
        t = H5Dget_type(d);
        CHECK(H5Tequal(t, i ? H5T_STD_I64LE : H5T_STD_U8LE) > 0);
        a = H5Aopen(d, "ObjType", H5P_DEFAULT);
        CHECK(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0 && v == 1);
        H5Aclose(a);
        H5Tclose(t);
        H5Dclose(d);
    }
    H5Gclose(g);
    H5Fclose(file);
    h5ark_value_destroy(&files);
    h5ark_value_destroy(&warn);
    object_release(b);
    object_release(f);
    object_release(s);
}

static void test_modes(void) {
    object *a = make_pdarray(H5ARK_INT64, 7, 5), *c = make_pdarray(H5ARK_INT32, 4, 6);
    h5ark_error err = {0};
    h5ark_value *warn = NULL;
    /* truncate over existing files warns once per file */
    CHECK(write_one(a, "a", "m.h5", STORAGE_TRUNCATE, STORAGE_DISTRIBUTE, NULL, &err) == 0);
    CHECK(write_one(a, "a", "m.h5", STORAGE_TRUNCATE, STORAGE_DISTRIBUTE, &warn, &err) == 0);
    CHECK(h5ark_value_len(warn) == LOCALES);
    if (h5ark_value_len(warn) == LOCALES)
        CHECK(strstr(h5ark_value_at(warn, 1)->as.s.ptr, "m_LOCALE0001.h5") != NULL);
    h5ark_value_destroy(&warn);
    /* append a new dataset; then a colliding one fails and changes nothing */
    CHECK(write_one(c, "c", "m.h5", STORAGE_APPEND, STORAGE_DISTRIBUTE, &warn, &err) == 0);
    CHECK(h5ark_value_len(warn) == 0);
    h5ark_value_destroy(&warn);
    size_t len0, len1;
    char *before = slurp("m_LOCALE0002.h5", &len0);
    CHECK(write_one(c, "a", "m.h5", STORAGE_APPEND, STORAGE_DISTRIBUTE, NULL, &err) != 0);
    CHECK(err.code == H5ARK_ALREADY_EXISTS);
    CHECK(strstr(err.message, "'a'") && strstr(err.message, "m_LOCALE0000.h5"));
    char *after = slurp("m_LOCALE0002.h5", &len1);
    CHECK(before && after && len0 == len1 && memcmp(before, after, len0) == 0);
    free(before);
    free(after);
    char names[LOCALES][PATH_MAX];
    const char *rel[LOCALES];
    locale_names("m.h5", names, rel);
    storage_read_item *it = read_rel(rel, LOCALES, "a", strict, NULL, &err);
    CHECK(it && same_darray(it->obj->values, a->values));
    storage_read_items_free(it, it ? 1 : 0);
    it = read_rel(rel, LOCALES, "c", strict, NULL, &err);
    CHECK(it && it->obj->dtype == H5ARK_INT32 && same_darray(it->obj->values, c->values));
    storage_read_items_free(it, it ? 1 : 0);
    /* a missing file among the set: the count no longer matches */
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", config.data_dir, rel[2]);
    unlink(p);
    CHECK(write_one(c, "d", "m.h5", STORAGE_APPEND, STORAGE_DISTRIBUTE, NULL, &err) != 0);
    CHECK(err.code == H5ARK_BAD_REQUEST && strstr(err.message, "2 _LOCALE files"));
    CHECK(!exists(rel[2]));
    /* append to a file that does not exist creates it */
    CHECK(write_one(c, "c", "new_single.h5", STORAGE_APPEND, STORAGE_SINGLE, NULL, &err) == 0);
    CHECK(exists("new_single.h5"));
    /* stale files of a larger run are removed by a distributed truncate */
    FILE *f = fopen(p, "w");
    fclose(f);
    snprintf(p, sizeof p, "%s/m_LOCALE0007.h5", config.data_dir);
    f = fopen(p, "w");
    fclose(f);
    CHECK(write_one(c, "c", "m.h5", STORAGE_TRUNCATE, STORAGE_DISTRIBUTE, &warn, &err) == 0);
    CHECK(!exists("m_LOCALE0007.h5"));
    bool said = false;
    for (size_t i = 0; i < h5ark_value_len(warn); i++)
        said = said || strstr(h5ark_value_at(warn, i)->as.s.ptr, "m_LOCALE0007.h5");
    CHECK(said);
    h5ark_value_destroy(&warn);
    object_release(a);
    object_release(c);
}

static void test_refusals(void) {
    object *a = make_pdarray(H5ARK_INT64, 3, 1);
    h5ark_error err = {0};
    CHECK(write_one(a, "a", "../x.h5", STORAGE_TRUNCATE, STORAGE_SINGLE, NULL, &err) != 0);
    CHECK(err.code == H5ARK_FORBIDDEN);
    CHECK(write_one(a, "a", "/etc/x.h5", STORAGE_TRUNCATE, STORAGE_DISTRIBUTE, NULL, &err) != 0);
    CHECK(err.code == H5ARK_FORBIDDEN);
    CHECK(write_one(a, "a/b", "ok.h5", STORAGE_TRUNCATE, STORAGE_SINGLE, NULL, &err) != 0);
    CHECK(err.code == H5ARK_BAD_REQUEST && !exists("ok.h5"));
    /* a file that is not HDF5: an error naming it, or skipped with allow_errors */
    CHECK(write_one(a, "a", "good.h5", STORAGE_TRUNCATE, STORAGE_SINGLE, NULL, &err) == 0);
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/junk.h5", config.data_dir);
    FILE *f = fopen(p, "w");
    fputs("not an HDF5 file at all, just text", f);
    fclose(f);
    const char *rel[] = {"good.h5", "junk.h5"};
    storage_read_item *it = read_rel(rel, 2, "a", strict, NULL, &err);
    CHECK(it == NULL && err.code == H5ARK_SCHEMA_ERROR && strstr(err.message, "junk.h5"));
    storage_read_options lenient = {.strict_types = true, .allow_errors = true};
    h5ark_value *fe = h5ark_value_array();
    it = read_rel(rel, 2, "a", lenient, fe, &err);
    CHECK(it && it->obj->size == 3);
    CHECK(h5ark_value_len(fe) == 1 &&
          strncmp(h5ark_value_at(fe, 0)->as.s.ptr, "junk.h5: ", 9) == 0);
    storage_read_items_free(it, it ? 1 : 0);
    h5ark_value_destroy(&fe);
    /* a dataset missing from a file */
    it = read_rel(rel, 1, "nope", strict, NULL, &err);
    CHECK(it == NULL && err.code == H5ARK_NOT_FOUND && strstr(err.message, "nope") &&
          strstr(err.message, "good.h5"));
    /* append to a file that is not HDF5 */
    CHECK(write_one(a, "a", "junk.h5", STORAGE_APPEND, STORAGE_SINGLE, NULL, &err) != 0);
    CHECK(err.code == H5ARK_SCHEMA_ERROR);
    object_release(a);
}

static void test_memory_limit(void) {
    object *a = make_pdarray(H5ARK_INT64, 1000, 1);
    h5ark_error err = {0};
    CHECK(write_one(a, "a", "big.h5", STORAGE_TRUNCATE, STORAGE_SINGLE, NULL, &err) == 0);
    /* leave room for a few bytes only */
    uint64_t hold = registry_memory_limit() - registry_memory_used() - 100;
    CHECK(registry_reserve(hold, &err) == 0);
    const char *rel[] = {"big.h5"};
    storage_read_item *it = read_rel(rel, 1, "a", strict, NULL, &err);
    CHECK(it == NULL && err.code == H5ARK_RESOURCE_LIMIT);
    registry_unreserve(hold);
    object_release(a);
}

/* ------------------------------------------------------------------ composites */

static object *make_int64(const int64_t *v, uint64_t n) {
    h5ark_error err = {0};
    object *obj = object_new_pdarray(H5ARK_INT64, n, &err);
    if (!obj) return NULL;
    for (int b = 0; b < obj->values->nshards; b++) {
        shard *s = &obj->values->shards[b];
        for (uint64_t i = 0; i < s->count; i++)
            ((int64_t *)s->data)[i] = v[s->start + i];
    }
    return obj;
}

static object *compose(h5ark_objtype t, h5ark_dtype d, uint64_t size, const char *const *names,
                       object **parts, size_t n) {
    h5ark_error err = {0};
    object *c = object_new_composite(t, d, size, &err);
    for (size_t i = 0; i < n; i++) {
        object_add_component(c, names[i], parts[i], &err);
        object_release(parts[i]);
    }
    return c;
}

static bool same_object(const object *a, const object *b) {
    if (!a || !b) return false;
    if (a->objtype != b->objtype || a->dtype != b->dtype || a->size != b->size ||
        a->ndim != b->ndim || a->ncomponents != b->ncomponents)
        return false;
    if ((a->tag == NULL) != (b->tag == NULL) || (a->tag && strcmp(a->tag, b->tag) != 0))
        return false;
    for (unsigned i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    if ((a->values == NULL) != (b->values == NULL) ||
        (a->values && !same_darray(a->values, b->values)))
        return false;
    if ((a->segments == NULL) != (b->segments == NULL) ||
        (a->segments && !same_darray(a->segments, b->segments)))
        return false;
    for (size_t i = 0; i < a->ncomponents; i++)
        if (strcmp(a->components[i].name, b->components[i].name) != 0 ||
            !same_object(a->components[i].obj, b->components[i].obj))
            return false;
    return true;
}

/* Write obj in both file types, read it back and compare; returns the single-file read. */
static void roundtrip(object *obj, const char *what) {
    for (int single = 0; single < 2; single++) {
        char path[128];
        snprintf(path, sizeof path, "comp_%s_%d.h5", what, single);
        h5ark_error err = {0};
        int rc = write_one(obj, "x", path, STORAGE_TRUNCATE,
                           single ? STORAGE_SINGLE : STORAGE_DISTRIBUTE, NULL, &err);
        if (rc) fprintf(stderr, "%s: %s\n", what, err.message);
        CHECK(rc == 0);
        char names[LOCALES][PATH_MAX];
        const char *ptrs[LOCALES] = {path};
        if (!single) locale_names(path, names, ptrs);
        storage_read_item *it = read_rel(ptrs, single ? 1 : LOCALES, "x", strict, NULL, &err);
        if (!it) fprintf(stderr, "%s read: %s\n", what, err.message);
        CHECK(it != NULL);
        if (!it) continue;
        bool same = same_object(obj, it->obj);
        if (!same)
            fprintf(stderr, "%s (%s) differs after a round trip\n", what,
                    single ? "single" : "distributed");
        CHECK(same);
        storage_read_items_free(it, 1);
    }
}

static void test_composites(void) {
    static const char *const sv[] = {"a", "bb", "", "dddd", "e", "ff", "g", "hhh", "i", "jj"};
    /* sub-arrays whose values cross the values' shards, with empty ones */
    int64_t vals[10], segs[] = {0, 0, 3, 3, 7, 7, 9};
    for (int i = 0; i < 10; i++)
        vals[i] = 100 + i;
    const char *const sa_names[] = {"segments", "values"};
    object *parts[8];
    parts[0] = make_int64(segs, 7);
    parts[1] = make_int64(vals, 10);
    object *sa = compose(H5ARK_SEGARRAY, H5ARK_INT64, 7, sa_names, parts, 2);
    roundtrip(sa, "segarray");
    parts[0] = make_int64(segs, 7);
    parts[1] = make_strings(sv, 10);
    object *ssa = compose(H5ARK_SEGARRAY, H5ARK_STRING, 7, sa_names, parts, 2);
    roundtrip(ssa, "segarray_str");
    parts[0] = make_int64(segs, 0);
    parts[1] = make_int64(vals, 0);
    object *esa = compose(H5ARK_SEGARRAY, H5ARK_INT64, 0, sa_names, parts, 2);
    roundtrip(esa, "segarray_empty");
    int64_t zeros[4] = {0, 0, 0, 0};
    parts[0] = make_int64(zeros, 4);
    parts[1] = make_int64(vals, 0);
    object *allempty = compose(H5ARK_SEGARRAY, H5ARK_INT64, 4, sa_names, parts, 2);
    roundtrip(allempty, "segarray_all_empty");

    /* categorical */
    static const char *const cats[] = {"x", "y", "N/A"};
    int64_t codes[] = {0, 1, 1, 2, 0};
    const char *const cat_names[] = {"codes", "categories"};
    parts[0] = make_int64(codes, 5);
    parts[1] = make_strings(cats, 3);
    object *cat = compose(H5ARK_CATEGORICAL, H5ARK_STRING, 5, cat_names, parts, 2);
    cat->na_value = strdup("N/A");
    roundtrip(cat, "categorical");

    /* groupby over an int64 key and a strings key */
    int64_t perm[] = {0, 4, 1, 2, 3}, gsegs[] = {0, 2, 4}, uki[] = {0, 1, 3};
    static const char *const k1[] = {"p", "q", "q", "r", "p"};
    const char *const gb_names[] = {"permutation", "segments", "unique_key_idx", "KEY_0", "KEY_1"};
    parts[0] = make_int64(perm, 5);
    parts[1] = make_int64(gsegs, 3);
    parts[2] = make_int64(uki, 3);
    parts[3] = make_int64(codes, 5);
    parts[4] = make_strings(k1, 5);
    object *gb = compose(H5ARK_GROUPBY, H5ARK_INT64, 5, gb_names, parts, 5);
    roundtrip(gb, "groupby");

    /* index, multiindex */
    const char *const ix_names[] = {"IDX_0", "IDX_1"};
    parts[0] = make_int64(codes, 5);
    object *ix = compose(H5ARK_INDEX, H5ARK_INT64, 5, ix_names, parts, 1);
    roundtrip(ix, "index");
    parts[0] = make_int64(codes, 5);
    parts[1] = make_strings(k1, 5);
    object *mix = compose(H5ARK_MULTIINDEX, H5ARK_INT64, 5, ix_names, parts, 2);
    roundtrip(mix, "multiindex");

    /* dataframe: columns in an order that is not alphabetical, and an index */
    const char *const df_names[] = {"zeta", "alpha", "mid", "Index"};
    parts[0] = make_int64(codes, 5);
    parts[1] = make_strings(k1, 5);
    parts[2] = object_ref(cat);
    parts[3] = object_ref(ix);
    object *df = compose(H5ARK_DATAFRAME, H5ARK_INT64, 5, df_names, parts, 4);
    roundtrip(df, "dataframe");
    /* the columns layout: one top-level object per column, ColumnOrder on the root */
    {
        storage_write_options o = {.dataframe_columns = true};
        storage_item item = {.obj = df, .dataset = "df"};
        h5ark_value *files = h5ark_value_array(), *warn = h5ark_value_array();
        h5ark_error err = {0};
        CHECK(storage_write_ex(&item, 1, "dfcols.h5", STORAGE_TRUNCATE, STORAGE_SINGLE, &o, files,
                               warn, &err) == 0);
        char p[2 * PATH_MAX];
        snprintf(p, sizeof p, "%s/dfcols.h5", config.data_dir);
        char *paths[] = {p};
        storage_read_item *items = NULL;
        size_t n = 0;
        CHECK(storage_read(paths, 1, NULL, 0, &strict, &items, &n, files, warn, &err) == 0);
        CHECK(n == 4);
        if (n == 4) {
            CHECK(strcmp(items[0].dataset, "zeta") == 0);
            CHECK(strcmp(items[1].dataset, "alpha") == 0);
            CHECK(strcmp(items[2].dataset, "mid") == 0);
            CHECK(strcmp(items[3].dataset, "Index") == 0);
            CHECK(same_object(items[2].obj, cat));
        }
        storage_read_items_free(items, n);
        h5ark_value_destroy(&files);
        h5ark_value_destroy(&warn);
    }
    /* an empty dataframe */
    parts[0] = make_int64(codes, 0);
    parts[1] = make_strings(k1, 0);
    object *edf = compose(H5ARK_DATAFRAME, H5ARK_INT64, 0, df_names, parts, 2);
    roundtrip(edf, "dataframe_empty");

    /* arrayview 2x3x2 */
    h5ark_error err = {0};
    object *flat = make_pdarray(H5ARK_FLOAT64, 12, 5);
    object *av = object_new_composite(H5ARK_ARRAYVIEW, H5ARK_FLOAT64, 12, &err);
    av->values = darray_ref(flat->values);
    av->ndim = 3;
    av->shape[0] = 2, av->shape[1] = 3, av->shape[2] = 2;
    roundtrip(av, "arrayview");

    /* bigint of two limbs */
    const char *const limb_names[] = {"Limb_0", "Limb_1"};
    parts[0] = make_pdarray(H5ARK_UINT64, 7, 1);
    parts[1] = make_pdarray(H5ARK_UINT64, 7, 2);
    object *big = compose(H5ARK_PDARRAY, H5ARK_BIGINT, 7, limb_names, parts, 2);
    big->max_bits = 128;
    roundtrip(big, "bigint");

    /* tagged pdarrays */
    object *dt = make_pdarray(H5ARK_INT64, 5, 9);
    dt->tag = OBJECT_TAG_DATETIME;
    roundtrip(dt, "datetime");
    object *ip = make_pdarray(H5ARK_UINT64, 5, 9);
    ip->tag = OBJECT_TAG_IPV4;
    roundtrip(ip, "ipv4");

    /* update replaces one dataset and keeps the other; repack shrinks the file */
    {
        object *a = make_pdarray(H5ARK_INT64, 4000, 1), *b = make_pdarray(H5ARK_INT64, 10, 2);
        storage_item items[] = {{a, "a"}, {b, "b"}};
        h5ark_value *files = h5ark_value_array(), *warn = h5ark_value_array();
        CHECK(storage_write(items, 2, "upd.h5", STORAGE_TRUNCATE, STORAGE_SINGLE, files, warn,
                            &err) == 0);
        object *a2 = make_pdarray(H5ARK_INT64, 6000, 3);
        items[0].obj = a2;
        CHECK(storage_write(items, 1, "upd.h5", STORAGE_UPDATE, STORAGE_SINGLE, files, warn,
                            &err) == 0);
        items[0].dataset = "nope";
        CHECK(storage_write(items, 1, "upd.h5", STORAGE_UPDATE, STORAGE_SINGLE, files, warn,
                            &err) != 0 &&
              err.code == H5ARK_NOT_FOUND);
        const char *rel[] = {"upd.h5"};
        storage_read_item *it = read_rel(rel, 1, "a", strict, NULL, &err);
        CHECK(it && same_object(it->obj, a2));
        storage_read_items_free(it, it ? 1 : 0);
        it = read_rel(rel, 1, "b", strict, NULL, &err);
        CHECK(it && same_object(it->obj, b));
        storage_read_items_free(it, it ? 1 : 0);
        /* a smaller a leaves a hole that repack removes */
        items[0] = (storage_item){b, "a"};
        CHECK(storage_write(items, 1, "upd.h5", STORAGE_UPDATE, STORAGE_SINGLE, files, warn,
                            &err) == 0);
        char p[2 * PATH_MAX];
        snprintf(p, sizeof p, "%s/upd.h5", config.data_dir);
        char *paths[] = {p};
        uint64_t before = 0, after = 0;
        CHECK(storage_repack(NULL, paths, 1, files, &before, &after, &err) == 0);
        CHECK(after <= before);
        it = read_rel(rel, 1, "a", strict, NULL, &err);
        CHECK(it && same_object(it->obj, b));
        storage_read_items_free(it, it ? 1 : 0);
        h5ark_value_destroy(&files);
        h5ark_value_destroy(&warn);
        object_release(a);
        object_release(a2);
        object_release(b);
    }

    object_release(sa);
    object_release(ssa);
    object_release(esa);
    object_release(allempty);
    object_release(cat);
    object_release(gb);
    object_release(ix);
    object_release(mix);
    object_release(df);
    object_release(edf);
    object_release(flat);
    object_release(av);
    object_release(big);
    object_release(dt);
    object_release(ip);
}

/* The filters and chunks HDF5 records for a compressed dataset at `level`. */
static void check_compressed(hid_t file, const char *dset, uint64_t chunk, unsigned level) {
    hid_t d = H5Dopen2(file, dset, H5P_DEFAULT);
    hid_t dcpl = d >= 0 ? H5Dget_create_plist(d) : H5I_INVALID_HID;
    CHECK(dcpl >= 0);
    if (dcpl < 0) return;
    hsize_t dims[1] = {0};
    CHECK(H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 1, dims) == 1);
    CHECK(dims[0] == chunk);
    CHECK(H5Pget_nfilters(dcpl) == 2);
    unsigned flags, cd[4];
    size_t ncd = 4;
    CHECK(H5Pget_filter2(dcpl, 0, &flags, &(size_t){0}, NULL, 0, NULL, NULL) == H5Z_FILTER_SHUFFLE);
    CHECK(H5Pget_filter2(dcpl, 1, &flags, &ncd, cd, 0, NULL, NULL) == H5Z_FILTER_DEFLATE);
    CHECK(ncd == 1 && cd[0] == level);
    H5Pclose(dcpl);
    H5Dclose(d);
}

/* gzip_level: chunked, shuffled, deflated datasets that read back as written, with chunks
 * over the shards' edges and a padded last chunk. */
static void test_compression(void) {
    static const char *const words[] = {"alpha", "", "gamma", "δέλτα", "e", "", "", "zeta"};
    const char *strs[5000];
    for (size_t i = 0; i < 5000; i++)
        strs[i] = words[i % 8];
    object *nums = make_pdarray(H5ARK_INT64, 300001, 4); /* chunks of 131072 */
    object *text = make_strings(strs, 5000);
    storage_write_options o = {.gzip_level = 6};
    for (int single = 0; single < 2; single++) {
        const char *path = single ? "gz.h5" : "gzd.h5";
        storage_item items[] = {{nums, "n"}, {text, "s"}};
        h5ark_error err = {0};
        CHECK(write_items(items, 2, path, STORAGE_TRUNCATE,
                          single ? STORAGE_SINGLE : STORAGE_DISTRIBUTE, &o, NULL, &err) == 0);
        char names[LOCALES][PATH_MAX];
        const char *rel[LOCALES] = {path};
        size_t nrel = single ? 1 : LOCALES;
        if (!single) locale_names(path, names, rel);
        char p[2 * PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", config.data_dir, rel[0]);
        hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
        CHECK(f >= 0);
        if (f >= 0) {
            uint64_t rows = single ? 300001 : nums->values->shards[0].count;
            check_compressed(f, "n", rows < 131072 ? rows : 131072, 6);
            check_compressed(f, "s/segments", single ? 5000 : text->segments->shards[0].count, 6);
            H5Fclose(f);
        }
        storage_read_item *it = read_rel(rel, nrel, "n", strict, NULL, &err);
        CHECK(it && same_object(it->obj, nums));
        storage_read_items_free(it, it ? 1 : 0);
        it = read_rel(rel, nrel, "s", strict, NULL, &err);
        CHECK(it && same_object(it->obj, text));
        storage_read_items_free(it, it ? 1 : 0);
    }
    object_release(nums);
    object_release(text);
}

int main(void) {
    if (storage_init() < 0) return 1;
    char tmpl[] = "/tmp/h5ark-test-storage-XXXXXX";
    if (!mkdtemp(tmpl) || !realpath(tmpl, config.data_dir)) {
        perror("mkdtemp");
        return 1;
    }
    registry_init(UINT64_C(1) << 32);
    if (locales_start(LOCALES, 0, 1) != 0) return 1;
    test_pdarray_roundtrips();
    test_strings_roundtrips();
    test_file_names();
    test_schema_attributes();
    test_modes();
    test_refusals();
    test_memory_limit();
    test_composites();
    test_compression();
    registry_shutdown();
    locales_stop();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", config.data_dir);
    if (check_failures == 0 && !getenv("KEEP") && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", config.data_dir);
    return check_exit("test_storage");
}
