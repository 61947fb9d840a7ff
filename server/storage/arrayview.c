/* ArrayView on disk (docs/FORMAT.md): one flattened rank-1 dataset (C order) with
 * ObjType=0 and the attributes `Rank` (int64 scalar) and `Shape` (int64, length Rank). A
 * distributed file holds its locale's block of the flattened elements and the whole shape. */
#include "families.h"

#include "layout.h"
#include "locales.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int arrayview_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                           write_plan *plan, h5ark_error *err) {
    uint64_t lo, hi;
    object_part_rows(obj, part, &lo, &hi);
    if (part < 0) hi = obj->values->size;
    if (part >= 0) hi = lo + obj->values->shards[part].count;
    if (write_darray_range(loc, file_index, name, obj->values, lo, hi, OBJTYPE_ARRAYVIEW,
                           obj->dtype == H5ARK_BOOLEAN, 0, plan, err))
        return h5ark_fail_context(err, "ArrayView '%s'", name);
    int64_t shape[OBJECT_MAX_DIMS];
    for (unsigned i = 0; i < obj->ndim; i++)
        shape[i] = (int64_t)obj->shape[i];
    hid_t dset = H5Dopen2(loc, name, H5P_DEFAULT);
    if (dset < 0) return h5u_fail(err, H5ARK_IO_ERROR, "cannot reopen dataset '%s'", name);
    int rc = h5u_write_int_attr(dset, ATTR_RANK, obj->ndim, err);
    if (rc == 0) rc = h5u_write_int_array_attr(dset, ATTR_SHAPE, shape, obj->ndim, err);
    if (H5Dclose(dset) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close dataset '%s'", name);
    return rc ? h5ark_fail_context(err, "ArrayView '%s'", name) : 0;
}

/* A plain N-d dataset (h5py's): its shape is its dataspace's; the files concatenate along
 * the first axis, so the other dimensions must agree. */
static int probe_plain(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    hid_t space = H5Dget_space(dset);
    hsize_t dims[H5S_MAX_RANK];
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank < 2 || rank > OBJECT_MAX_DIMS || H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        if (space >= 0) H5Sclose(space);
        H5Dclose(dset);
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "dataset '%s' has %d dimensions (h5ark: 2 to %d)",
                          n->path, rank, OBJECT_MAX_DIMS);
    }
    H5Sclose(space);
    if (n->ndim == 0) {
        n->ndim = (unsigned)rank;
        for (int i = 0; i < rank; i++)
            n->shape[i] = i == 0 ? 0 : dims[i];
    } else {
        bool same = n->ndim == (unsigned)rank;
        for (int i = 1; same && i < rank; i++)
            same = n->shape[i] == dims[i];
        if (!same) {
            H5Dclose(dset);
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "dataset '%s' has other dimensions after the first here than in the "
                              "files before; files join along the first axis only",
                              n->path);
        }
    }
    n->plain = true;
    n->shape[0] += dims[0];
    return pdarray_probe_dataset(pc, &n->ds, dset, false, PROBE_FLAT, err);
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    char what[1200];
    snprintf(what, sizeof what, "ArrayView '%s'", n->path);
    int64_t rank = 0, shape[OBJECT_MAX_DIMS];
    size_t got = 0;
    int r1 = h5u_read_int_attr(dset, ATTR_RANK, &rank, what, err);
    int r2 =
        r1 < 0 ? -1
               : h5u_read_int_array_attr(dset, ATTR_SHAPE, shape, OBJECT_MAX_DIMS, &got, what, err);
    if (r1 < 0 || r2 < 0) goto fail;
    if (r1 == 0 && r2 == 0) return probe_plain(pc, n, dset, err);
    if (r1 == 0 || r2 == 0 || rank < 1 || (uint64_t)rank != got) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "%s needs 'Rank' and a 'Shape' of Rank elements (1 to %d)", what,
                   OBJECT_MAX_DIMS);
        goto fail;
    }
    for (size_t i = 0; i < got; i++)
        if (shape[i] < 0) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has a negative dimension", what);
            goto fail;
        }
    if (n->ndim == 0) {
        n->ndim = (unsigned)rank;
        for (size_t i = 0; i < got; i++)
            n->shape[i] = (uint64_t)shape[i];
    } else {
        bool same = n->ndim == (unsigned)rank;
        for (size_t i = 0; same && i < got; i++)
            same = n->shape[i] == (uint64_t)shape[i];
        if (!same) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                       "%s has another Shape here than in the files before", what);
            goto fail;
        }
    }
    return pdarray_probe_dataset(pc, &n->ds, dset, false, 0, err);
fail:
    H5Dclose(dset);
    return -1;
}

typedef struct {
    const read_part *part;
    object *tag;
    uint64_t inner; /* elements a row */
} row_tag_job;

/* tag_data names each row's file: the file of the row's first element. */
static void tag_rows(int b, void *ctx) {
    row_tag_job *j = ctx;
    const shard *s = &j->tag->values->shards[b];
    int64_t *out = s->data;
    for (uint64_t i = 0; i < s->count; i++) {
        uint64_t e = (s->start + i) * j->inner;
        out[i] =
            j->part->n && e < j->part->total ? j->part->src[read_part_find(j->part, e)].file : 0;
    }
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    *obj = *tag = NULL;
    if (pdarray_settle_dtype(&n->ds, strict, err)) return -1;
    object *flat = NULL, *unused = NULL;
    if (pdarray_read(&n->ds, false, &flat, &unused, err)) return -1;
    uint64_t product = 1;
    bool overflow = false;
    for (unsigned i = 0; i < n->ndim; i++) {
        if (n->shape[i] && product > UINT64_MAX / n->shape[i]) overflow = true;
        product *= n->shape[i];
    }
    if (overflow || product != flat->size) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "ArrayView '%s': its Shape does not match its %llu elements", n->path,
                   (unsigned long long)flat->size);
        goto fail;
    }
    uint64_t rows = n->ndim ? n->shape[0] : 0;
    if (tags) {
        if (!(*tag = object_new_pdarray(H5ARK_INT64, rows, err))) goto fail;
        row_tag_job j = {&n->ds.values, *tag, rows ? product / rows : 0};
        locales_run(tag_rows, &j);
    }
    object *av = object_new_composite(H5ARK_ARRAYVIEW, flat->dtype, flat->size, err);
    if (!av) goto fail;
    av->values = darray_ref(flat->values);
    av->ndim = n->ndim;
    memcpy(av->shape, n->shape, sizeof av->shape);
    object_release(flat);
    *obj = av;
    return 0;
fail:
    object_release(flat);
    object_release(*tag);
    *tag = NULL;
    return -1;
}

/* Rows are first-axis rows: whole runs of the product of the other dimensions. */
static int slice(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err) {
    uint64_t rows = n->ndim ? n->shape[0] : 0, inner = 1;
    if (schema_rows(n, rows, lo, &hi, err)) return -1;
    for (unsigned i = 1; i < n->ndim; i++) {
        if (n->shape[i] && inner > UINT64_MAX / n->shape[i]) inner = 0;
        inner *= n->shape[i];
    }
    if (rows &&
        (inner == 0 || inner > n->ds.values.total / rows || rows * inner != n->ds.values.total))
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "ArrayView '%s': its Shape does not match its %llu elements", n->path,
                          (unsigned long long)n->ds.values.total);
    read_part_slice(&n->ds.values, lo * inner, hi * inner);
    n->shape[0] = hi - lo;
    return 0;
}

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    if (f->is_group) return SCHEMA_NOT_MINE;
    if (f->has_objtype)
        return f->objtype == OBJTYPE_ARRAYVIEW ? SCHEMA_BY_OBJTYPE : SCHEMA_NOT_MINE;
    /* a plain N-d numeric dataset */
    bool numeric = f->tclass == H5T_INTEGER || f->tclass == H5T_FLOAT || f->bool_enum;
    return f->rank >= 2 && numeric ? SCHEMA_BY_SHAPE : SCHEMA_NOT_MINE;
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_ARRAYVIEW;
}

/* Numbers, and Rank with a Shape of Rank elements; without both, a plain N-d dataset. */
static void whole(const schema_facts *f, unsigned depth, schema_verdict *v) {
    (void)depth;
    h5ark_error err = {0};
    int64_t rank = 0, shape[OBJECT_MAX_DIMS];
    size_t got = 0;
    int r1 = h5u_read_int_attr(f->obj, ATTR_RANK, &rank, f->path, &err);
    int r2 = r1 < 0 ? -1
                    : h5u_read_int_array_attr(f->obj, ATTR_SHAPE, shape, OBJECT_MAX_DIMS, &got,
                                              f->path, &err);
    H5Eclear2(H5E_DEFAULT);
    if (r1 == 0 && r2 == 0) {
        schema_verdict_numbers(f, 2, OBJECT_MAX_DIMS, v);
        return;
    }
    schema_verdict_numbers(f, 1, 1, v);
    bool negative = false;
    for (size_t i = 0; i < got; i++)
        negative = negative || shape[i] < 0;
    if (v->code == H5ARK_OK &&
        (r1 != 1 || r2 != 1 || rank < 1 || (uint64_t)rank != got || negative)) {
        v->code = H5ARK_SCHEMA_ERROR;
        snprintf(v->why, sizeof v->why,
                 "it needs 'Rank' and a 'Shape' of Rank dimensions of no less than 0 (1 to %d)",
                 OBJECT_MAX_DIMS);
    }
}

const schema_family schema_arrayview = {
    .kind = KIND_ARRAYVIEW,
    .what = "an ArrayView",
    .objtype = "arrayview",
    .detect = detect,
    .probe = probe,
    .build = build,
    .slice = slice,
    .writes = writes,
    .write = arrayview_write,
    .whole = whole,
};
