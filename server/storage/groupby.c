/* GroupBy on disk (docs/FORMAT.md): group `/<name>` (ObjType=5, NumKeys) holding
 * `segments`, `permutation`, `unique_key_idx` (int64) and the keys `KEY_0` ... (each a
 * pdarray, Strings or Categorical). Every component is its own block-distributed array. */
#include "families.h"

#include "layout.h"
#include "objects/groupby.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int groupby_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                         write_plan *plan, h5ark_error *err) {
    size_t nkeys = 0;
    for (size_t i = 0; i < obj->ncomponents; i++)
        nkeys += strncmp(obj->components[i].name, PREFIX_KEY, strlen(PREFIX_KEY)) == 0;
    hid_t group = write_group(loc, name, OBJTYPE_GROUPBY, err);
    if (group < 0) return h5ark_fail_context(err, "GroupBy '%s'", name);
    int rc = h5u_write_int_attr(group, ATTR_NUM_KEYS, (int64_t)nkeys, err);
    for (size_t i = 0; i < obj->ncomponents && rc == 0; i++)
        rc = schema_write(group, file_index, obj->components[i].name, obj->components[i].obj, part,
                          plan, err);
    if (H5Gclose(group) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close group '%s'", name);
    return rc ? h5ark_fail_context(err, "GroupBy '%s'", name) : 0;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    static const char *const fixed[] = {CHILD_PERMUTATION, CHILD_SEGMENTS, CHILD_UNIQUE_KEY_IDX};
    if (n->nkids == 0)
        for (size_t i = 0; i < 3; i++) {
            char path[1100];
            snprintf(path, sizeof path, "%s/%s", n->path, fixed[i]);
            read_node *k = node_add_kid(n, fixed[i], path, err);
            if (!k) return -1;
            k->as_index = true;
        }
    for (size_t i = 0; i < 3; i++)
        if (schema_probe(pc, &n->kids[i], err)) return -1;
    return schema_probe_numbered_kids(pc, n, PREFIX_KEY, ATTR_NUM_KEYS, err);
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    if (n->nkids < 4)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "GroupBy '%s' has no keys", n->path);
    if (schema_build_composite(n, H5ARK_GROUPBY, H5ARK_INT64, strict, tags, 0, obj, tag, err))
        return -1;
    object *g = *obj;
    const object *perm = g->components[0].obj, *segs = g->components[1].obj;
    int rc = 0;
    g->size = g->shape[0] = perm->size;
    for (size_t i = 3; i < g->ncomponents && rc == 0; i++)
        if (g->components[i].obj->size != perm->size)
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "GroupBy '%s': key '%s' has %llu rows but 'permutation' has %llu",
                            n->path, g->components[i].name,
                            (unsigned long long)g->components[i].obj->size,
                            (unsigned long long)perm->size);
    /* the same rules as a GroupBy made from its parts, blamed on the file */
    if (rc == 0 && groupby_check(g, err)) {
        err->code = H5ARK_SCHEMA_ERROR;
        rc = h5ark_fail_context(err, "GroupBy '%s' in the files", n->path);
    }
    if (rc == 0) rc = object_set_extra(g, "ngroups", h5ark_value_uint(segs->size), err);
    if (rc) {
        object_release(*obj);
        object_release(*tag);
        *obj = *tag = NULL;
    }
    return rc;
}

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    if (!f->is_group) return SCHEMA_NOT_MINE;
    if (f->has_objtype) return f->objtype == OBJTYPE_GROUPBY ? SCHEMA_BY_OBJTYPE : SCHEMA_NOT_MINE;
    return schema_child_of(f, PREFIX_KEY "0") != SCHEMA_CHILD_NONE &&
                   schema_child_of(f, CHILD_PERMUTATION) != SCHEMA_CHILD_NONE
               ? SCHEMA_BY_SHAPE
               : SCHEMA_NOT_MINE;
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_GROUPBY;
}

static const schema_part parts[] = {
    {CHILD_PERMUTATION, NULL, SCHEMA_PART_NUMBERS},
    {CHILD_SEGMENTS, NULL, SCHEMA_PART_NUMBERS},
    {CHILD_UNIQUE_KEY_IDX, NULL, SCHEMA_PART_NUMBERS},
    {PREFIX_KEY, ATTR_NUM_KEYS, SCHEMA_PART_OBJECT},
    {NULL, NULL, 0},
};

const schema_family schema_groupby = {
    .kind = KIND_GROUPBY,
    .what = "a GroupBy",
    .objtype = "groupby",
    .detect = detect,
    .probe = probe,
    .build = build,
    .writes = writes,
    .write = groupby_write,
    .parts = parts,
};
