/* SegArray on disk (docs/FORMAT.md): group `/<name>` (ObjType=3) holding `segments`
 * (int64 start of each sub-array in `values`) and `values` (a pdarray dataset, a bigint
 * group of limbs, or a Strings group for a SegArray of strings). A distributed file holds the
 * sub-arrays whose segment lies on its locale, with their segments restarted at 0: the values
 * block-distributed on their own, so one file's values may come from several values shards. Readers
 * also take Arkouda's `values` without attributes and the older top-level `<name>_segments` /
 * `<name>_values` pair. */
#include "families.h"

#include "locales.h"
#include "objects/pdarray.h"
#include "objects/strings.h"
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int segarray_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                          write_plan *plan, h5ark_error *err) {
    const object *seg = object_component_get(obj, CHILD_SEGMENTS);
    const object *vals = object_component_get(obj, CHILD_VALUES);
    if (!seg || !vals || !seg->values || seg->dtype != H5ARK_INT64)
        return h5ark_fail(err, H5ARK_INTERNAL, "SegArray '%s' lacks int64 segments or values",
                          name);
    uint64_t lo, hi;
    object_part_rows(obj, part, &lo, &hi);
    uint64_t n = seg->size, nvals = vals->size;
    /* segments[0] is 0 (checked when made or read); with several ranks the others may be
     * another rank's, fetched before the layout (write.c) */
    int64_t at_lo = 0, at_hi = (int64_t)nvals;
    if (lo > 0 && lo < n && plan_int64_at(plan, seg->values, lo, &at_lo, err)) return -1;
    if (lo >= n) at_lo = (int64_t)nvals;
    if (hi < n && plan_int64_at(plan, seg->values, hi, &at_hi, err)) return -1;
    uint64_t vlo = (uint64_t)at_lo, vhi = (uint64_t)at_hi;
    if (at_lo < 0 || vlo > vhi || vhi > nvals)
        return h5ark_fail(err, H5ARK_INTERNAL, "SegArray '%s' has segments out of order", name);
    hid_t group = write_group(loc, name, OBJTYPE_SEGARRAY, err);
    if (group < 0) return h5ark_fail_context(err, "SegArray '%s'", name);
    int rc = write_darray_range(group, file_index, CHILD_SEGMENTS, seg->values, lo, hi,
                                OBJTYPE_PDARRAY, false, (int64_t)vlo, plan, err);
    if (rc == 0 && vals->objtype == H5ARK_STRINGS)
        rc = strings_write_rows(group, file_index, CHILD_VALUES, vals, vlo, vhi, plan, err);
    else if (rc == 0 && vals->objtype == H5ARK_PDARRAY && vals->dtype == H5ARK_BIGINT)
        rc = bigint_write_rows(group, file_index, CHILD_VALUES, vals, vlo, vhi, plan, err);
    else if (rc == 0 && vals->objtype == H5ARK_PDARRAY && vals->values)
        rc = write_darray_range(group, file_index, CHILD_VALUES, vals->values, vlo, vhi,
                                OBJTYPE_PDARRAY, vals->dtype == H5ARK_BOOLEAN, 0, plan, err);
    else if (rc == 0)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "its values are a %s, not a pdarray or strings",
                        h5ark_objtype_name(vals->objtype));
    if (H5Gclose(group) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close group '%s'", name);
    return rc ? h5ark_fail_context(err, "SegArray '%s'", name) : 0;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    char path[1100];
    if (n->nkids == 0) {
        read_node *k;
        if (node_child_path(n, CHILD_SEGMENTS, "_", path, sizeof path) ||
            !(k = node_add_kid(n, CHILD_SEGMENTS, path, err)))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s': name too long", n->path);
        k->as_index = true;
        if (node_child_path(n, CHILD_VALUES, "_", path, sizeof path) ||
            !node_add_kid(n, CHILD_VALUES, path, err))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s': name too long", n->path);
    }
    read_node *seg = node_kid(n, CHILD_SEGMENTS), *vals = node_kid(n, CHILD_VALUES);
    /* the values of earlier files come first: this file's offsets are rebased by them */
    uint64_t before = node_elements(vals);
    probe_ctx vpc = *pc;
    vpc.calc_offsets = false; /* sub-arrays of strings are counted by their offsets */
    if (schema_probe(&vpc, vals, err)) return -1;
    if (vals->kind != KIND_PDARRAY && vals->kind != KIND_STRINGS && vals->kind != KIND_BIGINT)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "SegArray '%s': 'values' must be a pdarray (a bigint too) or Strings",
                          n->path);
    if (vals->kind == KIND_STRINGS && vals->ds.no_segments)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "SegArray '%s': its Strings 'values' need 'segments'", n->path);
    size_t had = seg->ds.values.n;
    if (schema_probe(pc, seg, err)) return -1;
    if (seg->kind != KIND_PDARRAY)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "SegArray '%s': 'segments' must be a pdarray",
                          n->path);
    if (seg->ds.values.n > had) seg->ds.values.src[seg->ds.values.n - 1].rebase = (int64_t)before;
    return 0;
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    read_node *seg = node_kid(n, CHILD_SEGMENTS), *vals = node_kid(n, CHILD_VALUES);
    object *s = NULL, *v = NULL, *t = NULL, *vt = NULL;
    *obj = *tag = NULL;
    if (schema_build(seg, strict, tags, &s, &t, err) ||
        schema_build(vals, strict, false, &v, &vt, err))
        goto fail;
    char what[1200];
    snprintf(what, sizeof what, "SegArray '%s': 'segments'", n->path);
    if (pdarray_check_range(s, 0, (int64_t)v->size + 1, true, what, err)) goto fail;
    if (s->size > 0) {
        int64_t first; /* several ranks: from the rank that holds it */
        if (pdarray_int64_at(s, 0, &first, err)) goto fail;
        if (first != 0) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s must start at 0", what);
            goto fail;
        }
    }
    object *sa = object_new_composite(H5ARK_SEGARRAY, v->dtype, s->size, err);
    if (!sa) goto fail;
    if (object_add_component(sa, CHILD_SEGMENTS, s, err) ||
        object_add_component(sa, CHILD_VALUES, v, err)) {
        object_release(sa);
        goto fail;
    }
    object_release(s);
    object_release(v);
    *obj = sa;
    *tag = t;
    return 0;
fail:
    object_release(s);
    object_release(v);
    object_release(t);
    object_release(vt);
    return -1;
}

/* Rows are sub-arrays: rows [lo, hi) of `segments` and the values they cover,
 * [segments[lo], segments[hi]), offsets moved down by where those start. */
static int slice(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err) {
    read_node *seg = node_kid(n, CHILD_SEGMENTS), *vals = node_kid(n, CHILD_VALUES);
    read_part *offs = &seg->ds.values;
    if (schema_rows(n, offs->total, lo, &hi, err)) return -1;
    int64_t p = 0, q = 0;
    uint64_t vhi = SCHEMA_TO_END;
    if (lo < hi) {
        if (read_part_int64_at(offs, lo, &p, err) ||
            (hi < offs->total && read_part_int64_at(offs, hi, &q, err)))
            return h5ark_fail_context(err, "SegArray '%s'", n->path);
        if (hi < offs->total) vhi = (uint64_t)q;
        if (p < 0 || (hi < offs->total && q < p))
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "SegArray '%s': 'segments' must increase from 0 within 'values'",
                              n->path);
    } else {
        vhi = 0;
    }
    if (schema_slice(vals, (uint64_t)p, vhi, err)) {
        if (err->code == H5ARK_BAD_REQUEST)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "SegArray '%s': 'segments' point past the end of 'values'", n->path);
        return -1;
    }
    read_part_slice(offs, lo, hi);
    read_part_rebase(offs, -p);
    return 0;
}

static void list(const schema_facts *f, schema_listing *out) {
    hid_t v = h5u_open_child(f->obj, CHILD_VALUES, H5O_TYPE_DATASET);
    if (v >= 0) {
        hid_t t = H5Dget_type(v);
        if (t >= 0) {
            h5u_type_name(t, out->dtype, sizeof out->dtype);
            H5Tclose(t);
        }
        H5Oclose(v);
        H5Eclear2(H5E_DEFAULT);
    } else if ((v = h5u_open_child(f->obj, CHILD_VALUES, H5O_TYPE_GROUP)) >= 0) {
        snprintf(out->dtype, sizeof out->dtype, "str");
        H5Oclose(v);
    }
    out->rows = schema_child_rows(f, CHILD_SEGMENTS);
}

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    if (!f->is_group) return SCHEMA_NOT_MINE;
    if (f->has_objtype) return f->objtype == OBJTYPE_SEGARRAY ? SCHEMA_BY_OBJTYPE : SCHEMA_NOT_MINE;
    /* unmarked: `segments` beside `values` that are not Strings bytes (bytes say Strings) */
    schema_child v = schema_child_of(f, CHILD_VALUES);
    return (v == SCHEMA_CHILD_GROUP || v == SCHEMA_CHILD_DATA) &&
                   schema_child_of(f, CHILD_SEGMENTS) != SCHEMA_CHILD_NONE
               ? SCHEMA_BY_SHAPE
               : SCHEMA_NOT_MINE;
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_SEGARRAY;
}

static const schema_part parts[] = {
    {CHILD_SEGMENTS, NULL, SCHEMA_PART_NUMBERS},
    {CHILD_VALUES, NULL, SCHEMA_PART_OBJECT},
    {NULL, NULL, 0},
};

const schema_family schema_segarray = {
    .kind = KIND_SEGARRAY,
    .what = "a SegArray",
    .objtype = "segarray",
    .detect = detect,
    .probe = probe,
    .build = build,
    .slice = slice,
    .list = list,
    .writes = writes,
    .write = segarray_write,
    .parts = parts,
};
