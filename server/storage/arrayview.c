/* ArrayView on disk (ARKOUDA_FORMAT.md): one flattened rank-1 dataset (C order) with
 * ObjType=0 and the attributes `Rank` (int64 scalar) and `Shape` (int64, length Rank). A
 * distributed file holds its locale's block of the flattened elements and the whole shape. */
#include "storage_internal.h"

#include "schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int arrayview_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
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

int arrayview_probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    char what[1200];
    snprintf(what, sizeof what, "ArrayView '%s'", n->path);
    int64_t rank = 0, shape[OBJECT_MAX_DIMS];
    size_t got = 0;
    int r1 = h5u_read_int_attr(dset, ATTR_RANK, &rank, what, err);
    int r2 =
        r1 < 0 ? -1
               : h5u_read_int_array_attr(dset, ATTR_SHAPE, shape, OBJECT_MAX_DIMS, &got, what, err);
    if (r1 < 0 || r2 < 0) goto fail;
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
    return pdarray_probe(pc->file, pc->index, pc->path, pc->size, &n->ds, dset, false, err);
fail:
    H5Dclose(dset);
    return -1;
}

int arrayview_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                    h5ark_error *err) {
    *obj = *tag = NULL;
    if (pdarray_settle_dtype(&n->ds, strict, err)) return -1;
    object *flat = NULL;
    if (pdarray_read(&n->ds, tags, &flat, tag, err)) return -1;
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
