/* bigint on disk (docs/FORMAT.md): group `/<name>` with Arkouda's object attributes
 * (ObjType=1), then `isBigInt`=1, `MaxBits` (-1 unbounded) and `NumLimbs`, holding the limbs
 * `Limb_0` ... (uint64 datasets, least significant first), each block-distributed. */
#include "families.h"

#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The group with its attributes and limbs: each limb's rows range[0] to range[1] (a
 * SegArray's values), or with range NULL the part's own rows. */
static int write_limbs(hid_t loc, int file_index, const char *name, const object *obj, int part,
                       const uint64_t *range, write_plan *plan, h5ark_error *err) {
    hid_t group = write_group(loc, name, OBJTYPE_PDARRAY, err);
    if (group < 0) return h5ark_fail_context(err, "bigint '%s'", name);
    int rc = h5u_write_int_attr(group, ATTR_IS_BIGINT, 1, err);
    if (rc == 0) rc = h5u_write_int_attr(group, ATTR_MAX_BITS, obj->max_bits, err);
    if (rc == 0) rc = h5u_write_int_attr(group, ATTR_NUM_LIMBS, (int64_t)obj->ncomponents, err);
    for (size_t i = 0; i < obj->ncomponents && rc == 0; i++) {
        char limb[32];
        snprintf(limb, sizeof limb, PREFIX_LIMB "%zu", i);
        const object *l = obj->components[i].obj;
        rc = !range ? schema_write(group, file_index, limb, l, part, plan, err)
                    : write_darray_range(group, file_index, limb, l->values, range[0], range[1],
                                         OBJTYPE_PDARRAY, false, 0, plan, err);
    }
    if (H5Gclose(group) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close group '%s'", name);
    return rc ? h5ark_fail_context(err, "bigint '%s'", name) : 0;
}

static int bigint_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                        write_plan *plan, h5ark_error *err) {
    return write_limbs(loc, file_index, name, obj, part, NULL, plan, err);
}

int bigint_write_rows(hid_t loc, int file_index, const char *name, const object *obj, uint64_t lo,
                      uint64_t hi, write_plan *plan, h5ark_error *err) {
    uint64_t range[2] = {lo, hi};
    return write_limbs(loc, file_index, name, obj, -1, range, plan, err);
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    hid_t g = H5Gopen2(pc->file, n->path, H5P_DEFAULT);
    if (g < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be opened", n->path);
    char what[1200];
    snprintf(what, sizeof what, "bigint '%s'", n->path);
    int64_t bits = -1;
    int r = h5u_read_int_attr(g, ATTR_MAX_BITS, &bits, what, err);
    H5Gclose(g);
    if (r < 0) return -1;
    if (n->nkids == 0) n->max_bits = r == 1 ? bits : -1;
    size_t before = n->nkids;
    if (schema_probe_numbered_kids(pc, n, PREFIX_LIMB, ATTR_NUM_LIMBS, err)) return -1;
    for (size_t i = before; i < n->nkids; i++)
        n->kids[i].as_limb = true;
    return 0;
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    if (n->nkids == 0)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "bigint '%s' has no limbs", n->path);
    if (schema_build_composite(n, H5ARK_PDARRAY, H5ARK_BIGINT, strict, tags, 0, obj, tag, err))
        return -1;
    object *b = *obj;
    b->size = b->shape[0] = b->components[0].obj->size;
    b->max_bits = n->max_bits;
    for (size_t i = 0; i < b->ncomponents; i++)
        if (b->components[i].obj->size != b->size || b->components[i].obj->dtype != H5ARK_UINT64 ||
            b->components[i].obj->objtype != H5ARK_PDARRAY) {
            object_release(*obj);
            object_release(*tag);
            *obj = *tag = NULL;
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "bigint '%s': its limbs must be uint64 arrays of one length",
                              n->path);
        }
    return 0;
}

static void list(const schema_facts *f, schema_listing *out) {
    snprintf(out->dtype, sizeof out->dtype, "bigint");
    out->rows = schema_child_rows(f, PREFIX_LIMB "0");
}

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    if (!f->is_group) return SCHEMA_NOT_MINE;
    if (f->is_bigint) return SCHEMA_BY_MARK;
    if (schema_child_of(f, PREFIX_LIMB "0") == SCHEMA_CHILD_NONE) return SCHEMA_NOT_MINE;
    if (!f->has_objtype) return SCHEMA_BY_SHAPE;
    return f->objtype == OBJTYPE_PDARRAY ? SCHEMA_BY_OBJTYPE : SCHEMA_NOT_MINE;
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_PDARRAY && obj->dtype == H5ARK_BIGINT;
}

static const schema_part parts[] = {
    {PREFIX_LIMB, ATTR_NUM_LIMBS, SCHEMA_PART_NUMBERS},
    {NULL, NULL, 0},
};

const schema_family schema_bigint = {
    .kind = KIND_BIGINT,
    .what = "a bigint",
    .objtype = "pdarray",
    .detect = detect,
    .probe = probe,
    .build = build,
    .slice = schema_slice_kids,
    .list = list,
    .writes = writes,
    .write = bigint_write,
    .parts = parts,
};
