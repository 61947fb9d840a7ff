/* Unit tests of the storage layer's toolkits, below the families: the read tree's sources
 * (adding, finding, slicing and rebasing a component concatenated over files, reading
 * through them), the one detector of the schema table on objects made with the HDF5 C
 * library, the HDF5 error reader, and the file-name helpers (distributed sets, missing
 * names kept for allow_errors). */
#include "check.h"
#include "config.h"
#include "locales.h"
#include "storage/files.h"
#include "storage/hdf5_util.h"
#include "storage/node.h"
#include "storage/schema.h"
#include "storage/storage.h"

#include <hdf5.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

static void data_path(const char *name, char *out) {
    if (snprintf(out, PATH_MAX, "%s/%s", config.data_dir, name) >= PATH_MAX) abort();
}

/* A file holding int64 dataset "v" = first, first+1, ... (n of them), contiguous. */
static void write_ints(const char *name, int64_t first, hsize_t n) {
    char path[PATH_MAX];
    data_path(name, path);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "v", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    for (hsize_t i = 0; i < n; i++)
        v[i] = first + (int64_t)i;
    if (n) H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    free(v);
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(f);
}

/* The sources of "v" in files a (5 elements: 0..4), b (0 elements), c (7: 100..106). */
static void make_part(read_part *part, char paths[3][PATH_MAX]) {
    static const char *names[] = {"a.h5", "b.h5", "c.h5"};
    static const int64_t firsts[] = {0, 50, 100};
    static const hsize_t counts[] = {5, 0, 7};
    *part = (read_part){.dtype = H5ARK_INT64};
    for (int i = 0; i < 3; i++) {
        write_ints(names[i], firsts[i], counts[i]);
        data_path(names[i], paths[i]);
        h5ark_error err = {0};
        hid_t f = H5Fopen(paths[i], H5F_ACC_RDONLY, H5P_DEFAULT);
        h5u_dset_info info;
        CHECK(h5u_inspect(f, "v", UINT64_MAX, "v", &info, &err) == 0);
        H5Fclose(f);
        CHECK(read_part_add(part, i, paths[i], strdup("v"), &info, 0, &err) == 0);
    }
}

static void test_sources(void) {
    char paths[3][PATH_MAX];
    read_part part;
    make_part(&part, paths);
    CHECK(part.n == 3 && part.total == 12);
    CHECK(read_part_find(&part, 0) == 0 && read_part_find(&part, 4) == 0);
    CHECK(read_part_find(&part, 5) == 2 && read_part_find(&part, 11) == 2);

    int64_t all[12], want[12] = {0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 105, 106};
    h5ark_error err = {0};
    CHECK(read_part_range(&part, 0, 12, all, &err) == 0);
    CHECK(memcmp(all, want, sizeof want) == 0);
    int64_t tags[12];
    read_part_tags(&part, 3, 8, tags);
    CHECK(tags[0] == 0 && tags[1] == 0 && tags[2] == 2 && tags[4] == 2);

    /* rows 3..9: the last two of a, none of b, the first four of c */
    read_part_slice(&part, 3, 9);
    CHECK(part.total == 6 && part.n == 3);
    CHECK(part.src[0].first == 3 && part.src[0].info.count == 2 && part.src[0].start == 0);
    CHECK(part.src[1].info.count == 0);
    CHECK(part.src[2].first == 0 && part.src[2].info.count == 4 && part.src[2].start == 2);
    int64_t got[6] = {0};
    CHECK(read_part_range(&part, 0, 6, got, &err) == 0);
    CHECK(memcmp(got, want + 3, sizeof got) == 0);
    CHECK(read_part_find(&part, 2) == 2);
    int64_t one = 0;
    CHECK(read_part_int64_at(&part, 5, &one, &err) == 0 && one == 103);

    /* a slice of a slice, then offsets moved down */
    read_part_slice(&part, 1, 3);
    CHECK(part.total == 2);
    read_part_rebase(&part, -1000);
    CHECK(read_part_range(&part, 0, 2, got, &err) == 0);
    CHECK(got[0] == 4 - 1000 && got[1] == 100 - 1000);

    /* an empty range keeps every source (their types still count), all empty */
    read_part_slice(&part, 2, 2);
    CHECK(part.total == 0 && part.n == 3);
    for (size_t i = 0; i < part.n; i++)
        CHECK(part.src[i].info.count == 0);
    read_part_clear(&part);
    CHECK(part.n == 0 && part.src == NULL);
}

/* Which family claims the object at `path` of file f, or KIND_NONE. */
static read_kind detected(hid_t f, const char *path) {
    hid_t obj = H5Oopen(f, path, H5P_DEFAULT);
    h5ark_error err = {0};
    schema_facts facts;
    schema_match m = {0};
    read_kind kind = KIND_NONE;
    if (obj >= 0 && schema_facts_read(obj, path, &facts, &err) == 0 && schema_detect(&facts, &m))
        kind = m.kind;
    if (obj >= 0) H5Oclose(obj);
    return kind;
}

static hid_t dataset(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims) {
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sclose(space);
    return d;
}

static void set_objtype(hid_t obj, int64_t objtype) {
    h5ark_error err = {0};
    CHECK(h5u_write_object_attrs(obj, objtype, false, &err) == 0);
}

static void test_detector(void) {
    char path[PATH_MAX];
    data_path("detect.h5", path);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 4, nd[2] = {2, 3};
    H5Dclose(dataset(f, "plain", H5T_STD_I32LE, 1, &n));
    H5Dclose(dataset(f, "matrix", H5T_IEEE_F64LE, 2, nd));
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, H5T_VARIABLE);
    H5Dclose(dataset(f, "words", str, 1, &n));
    H5Tclose(str);
    hid_t cmp = H5Tcreate(H5T_COMPOUND, 8);
    H5Tinsert(cmp, "x", 0, H5T_NATIVE_INT32);
    H5Tinsert(cmp, "y", 4, H5T_NATIVE_INT32);
    H5Dclose(dataset(f, "compound", cmp, 1, &n));
    H5Tclose(cmp);
    hid_t d = dataset(f, "marked", H5T_STD_I64LE, 1, &n);
    set_objtype(d, 1);
    H5Dclose(d);
    /* a group with KEY_0 and permutation is a GroupBy without ObjType, as with it */
    hid_t g = H5Gcreate2(f, "grouped", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(dataset(g, "KEY_0", H5T_STD_I64LE, 1, &n));
    H5Dclose(dataset(g, "permutation", H5T_STD_I64LE, 1, &n));
    H5Gclose(g);
    g = H5Gcreate2(f, "text", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(dataset(g, "values", H5T_STD_U8LE, 1, &n));
    H5Dclose(dataset(g, "segments", H5T_STD_I64LE, 1, &n));
    H5Gclose(g);
    g = H5Gcreate2(f, "seg", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(dataset(g, "values", H5T_STD_I64LE, 1, &n));
    H5Dclose(dataset(g, "segments", H5T_STD_I64LE, 1, &n));
    H5Gclose(g);
    g = H5Gcreate2(f, "cat", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    set_objtype(g, 4);
    H5Gclose(g);
    g = H5Gcreate2(f, "big", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    set_objtype(g, 1);
    h5ark_error err = {0};
    CHECK(h5u_write_int_attr(g, "isBigInt", 1, &err) == 0);
    H5Gclose(g);
    H5Gclose(H5Gcreate2(f, "bare", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));

    CHECK(detected(f, "plain") == KIND_PDARRAY);
    CHECK(detected(f, "marked") == KIND_PDARRAY);
    CHECK(detected(f, "matrix") == KIND_ARRAYVIEW);
    CHECK(detected(f, "words") == KIND_H5STRINGS);
    CHECK(detected(f, "grouped") == KIND_GROUPBY);
    CHECK(detected(f, "text") == KIND_STRINGS);
    CHECK(detected(f, "seg") == KIND_SEGARRAY);
    CHECK(detected(f, "cat") == KIND_CATEGORICAL); /* by ObjType, whatever it holds */
    CHECK(detected(f, "big") == KIND_BIGINT);      /* the mark beats ObjType 1 */
    CHECK(detected(f, "compound") == KIND_NONE);
    CHECK(detected(f, "bare") == KIND_NONE);

    /* what nothing claims: type_error naming it */
    hid_t obj = H5Oopen(f, "compound", H5P_DEFAULT);
    schema_facts facts;
    CHECK(schema_facts_read(obj, "compound", &facts, &err) == 0);
    CHECK(schema_unclaimed(&facts, &err) == -1);
    CHECK(err.code == H5ARK_TYPE_ERROR && strstr(err.message, "compound"));
    H5Oclose(obj);
    CHECK(strcmp(schema_what(KIND_SEGARRAY), "a SegArray") == 0);
    CHECK(schema_family_of(KIND_NONE) == NULL);
    H5Fclose(f);
}

static void test_hdf5_reasons(void) {
    char path[PATH_MAX];
    data_path("notes.txt", path);
    FILE *fp = fopen(path, "w");
    fputs("not HDF5\n", fp);
    fclose(fp);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f < 0);
    char why[600];
    CHECK(h5u_reason(why, sizeof why, H5ARK_SCHEMA_ERROR) == H5ARK_SCHEMA_ERROR);
    CHECK(why[0] != '\0' && strcmp(why, "the HDF5 library gave no reason") != 0);
    /* the stack is cleared: asked again, there is nothing */
    CHECK(h5u_reason(why, sizeof why, H5ARK_INTERNAL) == H5ARK_INTERNAL);
    CHECK(strcmp(why, "the HDF5 library gave no reason") == 0);
    h5ark_error err = {0};
    H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(h5u_fail(&err, H5ARK_SCHEMA_ERROR, "opening '%s'", "notes.txt") == -1);
    CHECK(err.code == H5ARK_SCHEMA_ERROR && strncmp(err.message, "opening 'notes.txt': ", 21) == 0);
}

static void test_file_names(void) {
    char out[2 * PATH_MAX];
    size_t tail = 0;
    CHECK(files_locale_glob("/d/x.h5", out, sizeof out, &tail) == 0);
    CHECK(strcmp(out, "/d/x_LOCALE[0-9][0-9][0-9][0-9].h5") == 0 && tail == 3);
    CHECK(files_locale_glob("/d/we[ir]d*", out, sizeof out, &tail) == 0);
    CHECK(strcmp(out, "/d/we\\[ir\\]d\\*_LOCALE[0-9][0-9][0-9][0-9]") == 0 && tail == 0);

    for (int k = 0; k < 3; k++) {
        char name[64];
        snprintf(name, sizeof name, "set_LOCALE%04d.h5", k);
        write_ints(name, k, 1);
    }
    const char *patterns[] = {"set.h5", "gone.h5", "nothing*.h5"};
    char **paths = NULL;
    size_t count = 0;
    h5ark_error err = {0};
    CHECK(files_expand(NULL, PERM_READ, patterns, 3, false, &paths, &count, &err) == -1);
    CHECK(err.code == H5ARK_NOT_FOUND && strstr(err.message, "gone.h5"));
    err = (h5ark_error){0};
    CHECK(files_expand(NULL, PERM_READ, patterns, 3, true, &paths, &count, &err) == 0);
    CHECK(count == 5);
    if (count == 5) {
        CHECK(strcmp(files_display(paths[0]), "set_LOCALE0000.h5") == 0);
        CHECK(strcmp(files_display(paths[2]), "set_LOCALE0002.h5") == 0);
        CHECK(strcmp(files_display(paths[3]), "gone.h5") == 0);
        CHECK(strcmp(files_display(paths[4]), "nothing*.h5") == 0);
    }
    files_list_free(paths, count);
    const char *outside[] = {"../x.h5"};
    CHECK(files_expand(NULL, PERM_READ, outside, 1, true, &paths, &count, &err) == -1);
    CHECK(err.code == H5ARK_FORBIDDEN);
}

int main(void) {
    if (storage_init() < 0) return 1;
    char tmpl[] = "/tmp/h5ark-test-toolkits-XXXXXX";
    if (!mkdtemp(tmpl) || !realpath(tmpl, config.data_dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (locales_start(2, 0, 1) != 0) return 1;
    test_sources();
    test_detector();
    test_hdf5_reasons();
    test_file_names();
    locales_stop();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", config.data_dir);
    if (check_failures == 0 && !getenv("KEEP") && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", config.data_dir);
    return check_exit("test_storage_toolkits");
}
