/* readhdf: probe every file's metadata with HDF5 (one file open at a time), decide each
 * dataset's kind and type across the files, then let the locales read their blocks of the
 * concatenation in parallel: pread straight into their shards where a dataset's bytes are
 * contiguous and already in memory's form, HDF5 (hyperslab reads) elsewhere. */
#include "storage.h"

#include "files.h"
#include "io.h"
#include "locales.h"
#include "schema.h"
#include "storage_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- sources ----------------------------------------------------------------------- */

int read_part_add(read_part *part, int file, const char *path, char *dset,
                  const h5u_dset_info *info, int64_t rebase, h5ark_error *err) {
    if (info->count > OBJECT_MAX_ELEMENTS - part->total) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "'%s' makes more than %llu elements across the files",
                   dset, (unsigned long long)OBJECT_MAX_ELEMENTS);
        free(dset);
        return -1;
    }
    if (part->n == part->cap) {
        size_t cap = part->cap ? part->cap * 2 : 8;
        read_src *v = realloc(part->src, cap * sizeof *v);
        if (!v) {
            free(dset);
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        part->src = v;
        part->cap = cap;
    }
    part->src[part->n++] = (read_src){
        .file = file,
        .path = path,
        .dset = dset,
        .start = part->total,
        .info = *info,
        .rebase = rebase,
    };
    part->total += info->count;
    return 0;
}

static void read_part_truncate(read_part *part, size_t n) {
    while (part->n > n) {
        read_src *s = &part->src[--part->n];
        part->total -= s->info.count;
        free(s->dset);
    }
}

void read_part_clear(read_part *part) {
    read_part_truncate(part, 0);
    free(part->src);
    part->src = NULL;
    part->cap = 0;
}

size_t read_part_find(const read_part *part, uint64_t i) {
    size_t lo = 0, hi = part->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (part->src[mid].start <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int pread_src(const read_src *src, uint64_t first, uint64_t count, size_t itemsize,
                     void *dest, h5ark_error *err) {
    int fd = open(src->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot open '%s': %s", files_display(src->path),
                          strerror(errno));
    int rc = 0;
    if (io_pread_full(fd, dest, count * itemsize, src->info.offset + first * itemsize))
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot read '%s' from '%s': %s", src->dset,
                        files_display(src->path),
                        errno == EIO ? "the file ends early" : strerror(errno));
    close(fd);
    return rc;
}

int read_part_range(const read_part *part, uint64_t lo, uint64_t hi, void *dest, h5ark_error *err) {
    size_t itemsize = h5ark_dtype_size(part->dtype);
    if (lo >= hi || part->n == 0) return 0;
    for (size_t i = read_part_find(part, lo); i < part->n; i++) {
        const read_src *src = &part->src[i];
        if (src->start >= hi) break;
        uint64_t a = lo > src->start ? lo : src->start;
        uint64_t b = src->start + src->info.count < hi ? src->start + src->info.count : hi;
        if (a >= b) continue;
        void *out = (char *)dest + (a - lo) * itemsize;
        uint64_t first = a - src->start, count = b - a;
        bool direct = src->info.contiguous && src->info.exact && src->info.dtype == part->dtype;
        if (direct ? pread_src(src, first, count, itemsize, out, err)
                   : h5u_read_slab(src->path, src->dset, first, count, part->dtype, out, err)) {
            if (!direct)
                h5ark_fail_context(err, "reading '%s' from '%s'", src->dset,
                                   files_display(src->path));
            return -1;
        }
        if (src->rebase) {
            int64_t *v = out;
            for (uint64_t k = 0; k < count; k++)
                v[k] += src->rebase;
        }
        if (part->dtype == H5ARK_BOOLEAN) {
            /* a bool is 0 or 1 in memory, whatever byte the file used for true */
            unsigned char *v = out;
            for (uint64_t k = 0; k < count; k++)
                v[k] = v[k] != 0;
        }
    }
    return 0;
}

void read_part_tags(const read_part *part, uint64_t lo, uint64_t hi, int64_t *dest) {
    if (lo >= hi || part->n == 0) return;
    for (size_t i = read_part_find(part, lo); i < part->n; i++) {
        const read_src *src = &part->src[i];
        if (src->start >= hi) break;
        uint64_t a = lo > src->start ? lo : src->start;
        uint64_t b = src->start + src->info.count < hi ? src->start + src->info.count : hi;
        for (uint64_t k = a; k < b; k++)
            dest[k - lo] = src->file;
    }
}

/* ---- probing ----------------------------------------------------------------------- */

typedef struct {
    char **v;
    size_t n, cap;
    bool failed;
} name_list;

static int push_name(name_list *l, const char *name) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(name))) return -1;
    l->n++;
    return 0;
}

static void free_names(name_list *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (name_list){0};
}

static herr_t list_cb(hid_t group, const char *name, const H5L_info_t *info, void *data) {
    (void)group, (void)info;
    name_list *l = data;
    if (strcmp(name, LEGACY_METADATA_GROUP) == 0) return 0; /* v1 metadata, not an object */
    if (push_name(l, name)) {
        l->failed = true;
        return -1;
    }
    return 0;
}

/* What the object at ds->name is, and its share of this file. */
static int probe_object(hid_t file, int index, const char *path, uint64_t size, read_dataset *ds,
                        bool calc_offsets, h5ark_error *err) {
    if (h5u_link_exists(file, ds->name) != 1)
        return h5ark_fail(err, H5ARK_NOT_FOUND, "dataset '%s' is not in the file", ds->name);
    if (h5u_check_local(file, ds->name, "the dataset", err)) return -1;
    hid_t obj = H5Oopen(file, ds->name, H5P_DEFAULT);
    if (obj < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be opened", ds->name);
    H5I_type_t type = H5Iget_type(obj);
    char what[600];
    snprintf(what, sizeof what, "'%s'", ds->name);
    int64_t objtype = -1;
    int has_type = h5u_read_int_attr(obj, ATTR_OBJTYPE, &objtype, what, err);
    int has_values = type == H5I_GROUP ? h5u_link_exists(obj, CHILD_VALUES) : 0;
    int has_booleans = type == H5I_GROUP ? h5u_link_exists(obj, LEGACY_BOOLEANS) : 0;
    H5Oclose(obj);
    if (has_type < 0) return -1;
    read_kind kind = KIND_NONE;
    bool legacy_bool = false;
    if (type == H5I_DATASET) {
        if (has_type == 0 || objtype == OBJTYPE_PDARRAY || objtype == OBJTYPE_DATETIME ||
            objtype == OBJTYPE_TIMEDELTA || objtype == OBJTYPE_IPV4)
            kind = KIND_PDARRAY;
    } else if (type == H5I_GROUP) {
        /* files without ObjType: a group holding `values` is Strings */
        if ((has_type == 0 || objtype == OBJTYPE_STRINGS) && has_values == 1) {
            kind = KIND_STRINGS;
        } else if ((has_type == 0 || objtype == OBJTYPE_PDARRAY) && has_booleans == 1) {
            kind = KIND_PDARRAY;
            legacy_bool = true;
        } else if (has_type == 0 || objtype == OBJTYPE_STRINGS) {
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "group '%s' is not an object h5ark reads: Strings need a 'values' "
                              "dataset",
                              ds->name);
        }
    } else {
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is neither a dataset nor a group", ds->name);
    }
    if (kind == KIND_NONE) {
        static const char *const names[] = {
            "an ArrayView", "a pdarray",   "Strings",    "a SegArray",  "a Categorical",
            "a GroupBy",    "a DataFrame", "a Datetime", "a Timedelta", "an IPv4",
            "a BitVector",  "a Series",    "an Index",   "a MultiIndex"};
        const char *name = objtype >= 0 && objtype < (int64_t)(sizeof names / sizeof names[0])
                               ? names[objtype]
                               : "an unknown object";
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "'%s' is %s (ObjType %lld%s); readhdf reads pdarrays and Strings",
                          ds->name, name, (long long)objtype,
                          type == H5I_GROUP ? " on a group" : " on a dataset");
    }
    if (ds->kind != KIND_NONE && ds->kind != kind) {
        const read_part *before = &ds->values;
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is %s here but %s in '%s'", ds->name,
                          kind == KIND_STRINGS ? "Strings" : "a pdarray",
                          ds->kind == KIND_STRINGS ? "Strings" : "a pdarray",
                          before->n ? files_display(before->src[before->n - 1].path)
                                    : "the files before");
    }
    ds->kind = kind;
    if (kind == KIND_STRINGS) return strings_probe(file, index, path, size, ds, calc_offsets, err);
    return pdarray_probe(file, index, path, size, ds, legacy_bool, err);
}

/* What probing a file changed in a dataset, to undo it when the file is skipped. */
typedef struct {
    read_kind kind;
    size_t values_n, segments_n;
    bool no_segments, have_dtype;
} ds_mark;

typedef struct {
    char *const *paths;
    const storage_read_options *opts;
    name_list names; /* the datasets to read */
    read_dataset *ds;
} read_state;

static int make_datasets(read_state *st, h5ark_error *err) {
    st->ds = calloc(st->names.n ? st->names.n : 1, sizeof *st->ds);
    if (!st->ds) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < st->names.n; i++)
        st->ds[i].name = st->names.v[i];
    return 0;
}

static void free_datasets(read_state *st) {
    if (!st->ds) return;
    for (size_t i = 0; i < st->names.n; i++) {
        read_part_clear(&st->ds[i].values);
        read_part_clear(&st->ds[i].segments);
    }
    free(st->ds);
    st->ds = NULL;
}

static int probe_file(read_state *st, int index, h5ark_error *err) {
    const char *path = st->paths[index];
    struct stat sb;
    if (stat(path, &sb) != 0)
        return h5ark_fail(err, errno == ENOENT ? H5ARK_NOT_FOUND : H5ARK_IO_ERROR, "%s",
                          strerror(errno));
    htri_t hdf5 = h5u_is_hdf5(path);
    if (hdf5 == 0) {
        H5Eclear2(H5E_DEFAULT);
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "not an HDF5 file");
    }
    hid_t file = hdf5 > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : H5I_INVALID_HID;
    if (file < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "not a readable HDF5 file");
    int rc = 0;
    bool listed_here = false;
    if (!st->ds) {
        /* no datasets asked for: every top-level object of the first readable file */
        hsize_t idx = 0;
        if (H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &idx, list_cb, &st->names) < 0) {
            if (st->names.failed)
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            else
                rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot list its objects");
        }
        listed_here = true;
        if (rc == 0) rc = make_datasets(st, err);
    }
    ds_mark *marks = rc == 0 ? calloc(st->names.n ? st->names.n : 1, sizeof *marks) : NULL;
    if (rc == 0 && !marks) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t probed = 0;
    for (; rc == 0 && probed < st->names.n; probed++) {
        read_dataset *ds = &st->ds[probed];
        marks[probed] =
            (ds_mark){ds->kind, ds->values.n, ds->segments.n, ds->no_segments, ds->have_dtype};
        rc = probe_object(file, index, path, (uint64_t)sb.st_size, ds,
                          st->opts->calc_string_offsets, err);
    }
    if (H5Fclose(file) < 0 && rc == 0) rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close it");
    if (rc && st->ds) {
        /* the file is skipped whole: undo what it added */
        if (listed_here) {
            free_datasets(st);
            free_names(&st->names);
        } else {
            for (size_t i = 0; i < probed; i++) {
                read_dataset *ds = &st->ds[i];
                ds->kind = marks[i].kind;
                ds->no_segments = marks[i].no_segments;
                ds->have_dtype = marks[i].have_dtype;
                read_part_truncate(&ds->values, marks[i].values_n);
                read_part_truncate(&ds->segments, marks[i].segments_n);
            }
        }
    }
    free(marks);
    return rc;
}

/* ---- the request ------------------------------------------------------------------- */

static int check_names(const char *const *datasets, size_t n, h5ark_error *err) {
    for (size_t i = 0; i < n; i++) {
        if (!datasets[i][0] || datasets[i][0] == '/' || strlen(datasets[i]) >= 1000)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "readhdf: '%s' is not a dataset name (empty, absolute or too long)",
                              datasets[i]);
        for (size_t k = 0; k < i; k++)
            if (strcmp(datasets[k], datasets[i]) == 0)
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "readhdf: dataset '%s' is named twice",
                                  datasets[i]);
    }
    return 0;
}

static void free_items(storage_read_item *items, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(items[i].dataset);
        object_release(items[i].obj);
        object_release(items[i].file_tag);
    }
    free(items);
}

void storage_read_items_free(storage_read_item *items, size_t nitems) {
    if (items) free_items(items, nitems);
}

int storage_read(char *const *paths, size_t npaths, const char *const *datasets, size_t ndatasets,
                 const storage_read_options *opts, storage_read_item **items, size_t *nitems,
                 h5ark_value *file_errors, h5ark_error *err) {
    h5u_quiet();
    *items = NULL;
    *nitems = 0;
    if (!datasets) ndatasets = 0;
    if (check_names(datasets, ndatasets, err)) return -1;
    read_state st = {.paths = paths, .opts = opts};
    storage_read_item *out = NULL;
    size_t built = 0;
    int rc = -1;
    for (size_t i = 0; i < ndatasets; i++)
        if (push_name(&st.names, datasets[i])) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
    if (ndatasets && make_datasets(&st, err)) goto out;

    size_t readable = 0;
    h5ark_error ferr = {0};
    const char *last_bad = NULL;
    for (size_t f = 0; f < npaths; f++) {
        if (probe_file(&st, (int)f, &ferr) == 0) {
            readable++;
            continue;
        }
        last_bad = files_display(paths[f]);
        if (!opts->allow_errors) {
            *err = ferr;
            h5ark_fail_context(err, "cannot read '%s'", last_bad);
            goto out;
        }
        char line[sizeof ferr.message + PATH_MAX];
        snprintf(line, sizeof line, "%s: %s", last_bad, ferr.message);
        if (h5ark_value_push(file_errors, h5ark_value_str(line))) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
    }
    if (readable == 0) {
        if (last_bad)
            h5ark_fail(err, ferr.code, "none of the %zu files could be read; '%s': %s", npaths,
                       last_bad, ferr.message);
        else
            h5ark_fail(err, H5ARK_BAD_REQUEST, "readhdf: no files to read");
        goto out;
    }
    out = calloc(st.names.n ? st.names.n : 1, sizeof *out);
    if (!out) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    for (; built < st.names.n; built++) {
        read_dataset *ds = &st.ds[built];
        storage_read_item *it = &out[built];
        if (!(it->dataset = strdup(ds->name))) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
        int r;
        if (ds->kind == KIND_STRINGS) {
            r = strings_read(ds, opts->tag_data, &it->obj, &it->file_tag, err);
        } else {
            r = pdarray_settle_dtype(ds, opts->strict_types, err);
            if (r == 0) r = pdarray_read(ds, opts->tag_data, &it->obj, &it->file_tag, err);
        }
        if (r) {
            built++; /* its name is freed with the rest */
            goto out;
        }
    }
    *items = out;
    *nitems = built;
    out = NULL;
    rc = 0;
out:
    if (out) free_items(out, built);
    free_datasets(&st);
    free_names(&st.names);
    return rc;
}
