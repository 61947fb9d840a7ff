/* Index and MultiIndex on disk (docs/FORMAT.md): group `/<name>` (ObjType=12 or 13,
 * NumIdx) holding the levels `IDX_0` ... (each a pdarray, Strings or Categorical; Arkouda's
 * single files omit the pdarray levels' attributes). */
#include "families.h"

#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The level names (h5ark's attribute `Names`, written when any level has a name; a level
 * without one is stored as ""). */
static int write_names(hid_t group, const object *obj, h5ark_error *err) {
    const h5ark_value *names = NULL;
    for (size_t i = 0; obj->extra && i < obj->extra->as.m.len; i++)
        if (strcmp(obj->extra->as.m.keys[i], "names") == 0) names = obj->extra->as.m.vals[i];
    if (!names || names->kind != H5ARK_ARRAY) return 0;
    size_t n = names->as.a.len;
    bool any = false;
    const char **v = calloc(n + 1, sizeof *v);
    if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const h5ark_value *x = names->as.a.items[i];
        v[i] = x->kind == H5ARK_STR ? x->as.s.ptr : "";
        any = any || x->kind == H5ARK_STR;
    }
    int rc = any ? h5u_write_str_array_attr(group, ATTR_NAMES, v, n, err) : 0;
    free(v);
    return rc;
}

int index_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                write_plan *plan, h5ark_error *err) {
    bool multi = obj->objtype == H5ARK_MULTIINDEX;
    hid_t group = write_group(loc, name, multi ? OBJTYPE_MULTIINDEX : OBJTYPE_INDEX, err);
    if (group < 0) return h5ark_fail_context(err, "Index '%s'", name);
    bool levels = obj->objtype == H5ARK_INDEX || multi;
    size_t n = levels ? obj->ncomponents : 1;
    int rc = h5u_write_int_attr(group, ATTR_NUM_IDX, (int64_t)n, err);
    if (rc == 0 && levels) rc = write_names(group, obj, err);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char level[32];
        snprintf(level, sizeof level, PREFIX_IDX "%zu", i);
        /* a plain pdarray or strings given as a DataFrame's index is its one level */
        rc = schema_write(group, file_index, level, levels ? obj->components[i].obj : obj, part,
                          plan, err);
    }
    if (H5Gclose(group) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close group '%s'", name);
    return rc ? h5ark_fail_context(err, "Index '%s'", name) : 0;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    if (n->nkids == 0 && !n->names) {
        hid_t g = H5Gopen2(pc->file, n->path, H5P_DEFAULT);
        if (g < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be opened", n->path);
        char what[1200];
        snprintf(what, sizeof what, "Index '%s'", n->path);
        int r = h5u_read_str_array_attr(g, ATTR_NAMES, &n->names, &n->nnames, what, err);
        H5Gclose(g);
        if (r < 0) return -1;
    }
    return schema_probe_numbered_kids(pc, n, PREFIX_IDX, ATTR_NUM_IDX, err);
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    if (n->nkids == 0)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "Index '%s' has no levels", n->path);
    h5ark_objtype t = n->kind == KIND_MULTIINDEX || n->nkids > 1 ? H5ARK_MULTIINDEX : H5ARK_INDEX;
    if (schema_build_composite(n, t, H5ARK_INT64, strict, tags, 0, obj, tag, err)) return -1;
    object *ix = *obj;
    int rc = 0;
    ix->size = ix->shape[0] = ix->components[0].obj->size;
    for (size_t i = 1; i < ix->ncomponents && rc == 0; i++)
        if (ix->components[i].obj->size != ix->size)
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "Index '%s': its levels differ in length",
                            n->path);
    h5ark_value *names = rc == 0 ? h5ark_value_array() : NULL;
    for (size_t i = 0; names && i < ix->ncomponents; i++)
        h5ark_value_push(names, i < n->nnames && n->names[i][0] ? h5ark_value_str(n->names[i])
                                                                : h5ark_value_nil());
    if (rc == 0) rc = object_set_extra(ix, "names", names, err);
    if (rc) {
        object_release(*obj);
        object_release(*tag);
        *obj = *tag = NULL;
    }
    return rc;
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_INDEX || obj->objtype == H5ARK_MULTIINDEX;
}

/* An Index and a MultiIndex are one layout, told apart by ObjType or by their level count. */
static int detect_levels(const schema_facts *f, bool multi) {
    if (!f->is_group) return SCHEMA_NOT_MINE;
    if (f->has_objtype)
        return f->objtype == (multi ? OBJTYPE_MULTIINDEX : OBJTYPE_INDEX) ? SCHEMA_BY_OBJTYPE
                                                                          : SCHEMA_NOT_MINE;
    if (schema_child_of(f, PREFIX_IDX "0") == SCHEMA_CHILD_NONE) return SCHEMA_NOT_MINE;
    return (schema_child_of(f, PREFIX_IDX "1") != SCHEMA_CHILD_NONE) == multi ? SCHEMA_BY_SHAPE
                                                                              : SCHEMA_NOT_MINE;
}

static int detect_index(const schema_facts *f, schema_match *m) {
    (void)m;
    return detect_levels(f, false);
}

static int detect_multiindex(const schema_facts *f, schema_match *m) {
    (void)m;
    return detect_levels(f, true);
}

static const schema_part parts[] = {
    {PREFIX_IDX, ATTR_NUM_IDX, SCHEMA_PART_OBJECT},
    {NULL, NULL, 0},
};

const schema_family schema_index = {
    .kind = KIND_INDEX,
    .what = "an Index",
    .objtype = "index",
    .detect = detect_index,
    .probe = probe,
    .build = build,
    .slice = schema_slice_kids,
    .writes = writes,
    .write = index_write,
    .parts = parts,
};

/* the writer is the Index's */
const schema_family schema_multiindex = {
    .kind = KIND_MULTIINDEX,
    .what = "a MultiIndex",
    .objtype = "multiindex",
    .detect = detect_multiindex,
    .probe = probe,
    .build = build,
    .slice = schema_slice_kids,
    .parts = parts,
};
