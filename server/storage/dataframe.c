/* DataFrame on disk (docs/FORMAT.md, protocol/PROTOCOL.md "Files of composites"). The snapshot
 * layout: group `/<name>` (ObjType=6, NumCols, ColumnOrder) holding one child per column
 * (pdarray, Strings, Categorical or SegArray) and the index as an Index group `Index`. The
 * columns layout: each column a top-level object named after it, the index a top-level
 * `Index`, and ColumnOrder on the file's root. ColumnOrder (1-D fixed-length ASCII
 * strings) is h5ark's: Arkouda records no order, and a file without it gives its columns in
 * HDF5 link (name) order. */
#include "families.h"

#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_index(const object_component *c) {
    return strcmp(c->name, CHILD_INDEX) == 0;
}

static int check(const object *obj, const char *dataset, h5ark_error *err) {
    for (size_t i = 0; i < obj->ncomponents; i++) {
        const char *c = obj->components[i].name;
        if (!c[0] || strchr(c, '/') || strcmp(c, ".") == 0 || strlen(c) >= 1000 ||
            strcmp(c, LEGACY_METADATA_GROUP) == 0)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "tohdf: DataFrame '%s' has a column named '%s', which cannot be an "
                              "HDF5 name (empty, '/', '.', reserved or too long)",
                              dataset, c);
        for (const char *p = c; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                return h5ark_fail(err, H5ARK_BAD_REQUEST,
                                  "tohdf: DataFrame '%s' has a column name '%s' that is not "
                                  "printable ASCII (ColumnOrder is ASCII)",
                                  dataset, c);
    }
    return 0;
}

/* The snapshot group, or (plan->dataframe_columns, at a file's top level) each column at
 * loc's top level and the index as `Index`; both record ColumnOrder. */
static int dataframe_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                           write_plan *plan, h5ark_error *err) {
    bool columns = plan->dataframe_columns;
    const char **order = calloc(obj->ncomponents + 1, sizeof *order);
    if (!order) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t ncols = 0;
    const object *index = NULL;
    for (size_t i = 0; i < obj->ncomponents; i++) {
        if (is_index(&obj->components[i]))
            index = obj->components[i].obj;
        else
            order[ncols++] = obj->components[i].name;
    }
    hid_t group = loc;
    int rc = 0;
    if (!columns) {
        group = write_group(loc, name, OBJTYPE_DATAFRAME, err);
        if (group < 0) rc = -1;
        if (rc == 0) rc = h5u_write_int_attr(group, ATTR_NUM_COLS, (int64_t)ncols, err);
    } else if (H5Aexists(loc, ATTR_COLUMN_ORDER) > 0 && H5Adelete(loc, ATTR_COLUMN_ORDER) < 0) {
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot replace the file's ColumnOrder");
    }
    H5Eclear2(H5E_DEFAULT);
    if (rc == 0) rc = h5u_write_str_array_attr(group, ATTR_COLUMN_ORDER, order, ncols, err);
    for (size_t i = 0; i < obj->ncomponents && rc == 0; i++) {
        const object_component *c = &obj->components[i];
        if (is_index(c)) continue;
        if (c->obj->objtype != H5ARK_PDARRAY && c->obj->objtype != H5ARK_STRINGS &&
            c->obj->objtype != H5ARK_CATEGORICAL && c->obj->objtype != H5ARK_SEGARRAY)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "column '%s' is a %s", c->name,
                            h5ark_objtype_name(c->obj->objtype));
        else
            rc = schema_write(group, file_index, c->name, c->obj, part, plan, err);
    }
    if (rc == 0 && index) rc = index_write(group, file_index, CHILD_INDEX, index, part, plan, err);
    if (!columns && group >= 0 && H5Gclose(group) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close group '%s'", name);
    free(order);
    return rc ? h5ark_fail_context(err, "DataFrame '%s'", name) : 0;
}

static int make_kids(const probe_ctx *pc, read_node *n, h5ark_error *err) {
    h5u_names links = {0};
    char **order = NULL;
    size_t norder = 0;
    int rc = 0;
    hid_t g = H5Gopen2(pc->file, n->path, H5P_DEFAULT);
    if (g < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "DataFrame '%s' cannot be opened", n->path);
    char what[1200];
    snprintf(what, sizeof what, "DataFrame '%s'", n->path);
    rc = h5u_link_names(g, NULL, &links, what, err);
    if (rc == 0 && h5u_read_str_array_attr(g, ATTR_COLUMN_ORDER, &order, &norder, what, err) < 0)
        rc = -1;
    H5Gclose(g);
    /* the recorded order first, then any other children in link order, the index last */
    bool *used = rc == 0 ? calloc(links.n + 1, sizeof *used) : NULL;
    if (rc == 0 && !used) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < norder && rc == 0; i++) {
        size_t k = 0;
        while (k < links.n && strcmp(links.v[k], order[i]) != 0)
            k++;
        if (k == links.n || used[k] || strcmp(order[i], CHILD_INDEX) == 0) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "DataFrame '%s': ColumnOrder names '%s', which is not one of its "
                            "columns",
                            n->path, order[i]);
            break;
        }
        used[k] = true;
    }
    for (size_t pass = 0; pass < 3 && rc == 0; pass++) {
        size_t count = pass == 0 ? norder : links.n;
        for (size_t i = 0; i < count && rc == 0; i++) {
            const char *name = pass == 0 ? order[i] : links.v[i];
            if (pass == 1 && (used[i] || strcmp(name, CHILD_INDEX) == 0)) continue;
            if (pass == 2 && strcmp(name, CHILD_INDEX) != 0) continue;
            char path[1100];
            if (snprintf(path, sizeof path, "%s/%s", n->path, name) >= (int)sizeof path)
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s/%s': name too long", n->path, name);
            else if (!node_add_kid(n, name, path, err))
                rc = -1;
        }
    }
    free(used);
    h5u_free_strs(order, norder);
    h5u_names_free(&links);
    return rc;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    if (n->nkids == 0 ? make_kids(pc, n, err)
                      : node_check_children(pc->file, n, "DataFrame", "column", err))
        return -1;
    for (size_t i = 0; i < n->nkids; i++)
        if (schema_probe(pc, &n->kids[i], err)) return -1;
    return 0;
}

int dataframe_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                    h5ark_error *err) {
    if (schema_build_composite(n, H5ARK_DATAFRAME, H5ARK_INT64, strict, tags, 0, obj, tag, err))
        return -1;
    object *df = *obj;
    int rc = 0;
    df->size = df->shape[0] = df->ncomponents ? df->components[0].obj->size : 0;
    h5ark_value *cols = h5ark_value_array();
    if (!cols) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < df->ncomponents && rc == 0; i++) {
        const object_component *c = &df->components[i];
        if (c->obj->size != df->size)
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "DataFrame '%s': '%s' has %llu rows but '%s' has %llu", n->path,
                            c->name, (unsigned long long)c->obj->size, df->components[0].name,
                            (unsigned long long)df->size);
        else if (!is_index(c) && h5ark_value_push(cols, h5ark_value_str(c->name)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        else if (is_index(c) && c->obj->objtype != H5ARK_INDEX &&
                 c->obj->objtype != H5ARK_MULTIINDEX && c->obj->objtype != H5ARK_PDARRAY &&
                 c->obj->objtype != H5ARK_STRINGS)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "DataFrame '%s': 'Index' is a %s", n->path,
                            h5ark_objtype_name(c->obj->objtype));
    }
    if (rc == 0)
        rc = object_set_extra(df, "columns", cols, err);
    else
        h5ark_value_destroy(&cols);
    if (rc) {
        object_release(*obj);
        object_release(*tag);
        *obj = *tag = NULL;
    }
    return rc;
}

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    return f->is_group && f->has_objtype && f->objtype == OBJTYPE_DATAFRAME ? SCHEMA_BY_OBJTYPE
                                                                            : SCHEMA_NOT_MINE;
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_DATAFRAME;
}

/* Every column (and the index) readable and of one length, and ColumnOrder naming only
 * columns it holds. */
static void whole(const schema_facts *f, unsigned depth, schema_verdict *v) {
    h5u_names links = {0};
    char **order = NULL;
    size_t norder = 0;
    h5ark_error err = {0};
    if (h5u_link_names(f->obj, NULL, &links, f->path, &err) < 0 ||
        h5u_read_str_array_attr(f->obj, ATTR_COLUMN_ORDER, &order, &norder, f->path, &err) < 0) {
        v->code = err.code;
        snprintf(v->why, sizeof v->why, "%.600s", err.message);
    }
    for (size_t i = 0; v->code == H5ARK_OK && i < norder; i++) {
        bool found = false;
        for (size_t k = 0; k < links.n && !found; k++)
            found = strcmp(links.v[k], order[i]) == 0;
        if (!found || strcmp(order[i], CHILD_INDEX) == 0) {
            v->code = H5ARK_SCHEMA_ERROR;
            snprintf(v->why, sizeof v->why, "its ColumnOrder names '%s', which is not a column",
                     order[i]);
        }
    }
    int64_t first = -1;
    const char *first_name = NULL;
    for (size_t i = 0; v->code == H5ARK_OK && i < links.n; i++) {
        read_kind kind;
        int64_t rows;
        if (schema_classify_part(f, links.v[i], SCHEMA_PART_OBJECT, depth, &kind, &rows, v)) break;
        if (rows < 0) continue;
        if (first_name && rows != first) {
            v->code = H5ARK_TYPE_ERROR;
            snprintf(v->why, sizeof v->why,
                     "its columns differ in length ('%s': %lld rows, '%s': %lld)", first_name,
                     (long long)first, links.v[i], (long long)rows);
        }
        if (!first_name) first = rows, first_name = links.v[i];
    }
    h5u_free_strs(order, norder);
    h5u_names_free(&links);
}

const schema_family schema_dataframe = {
    .kind = KIND_DATAFRAME,
    .what = "a DataFrame",
    .objtype = "dataframe",
    .detect = detect,
    .probe = probe,
    .build = dataframe_build,
    .slice = schema_slice_kids,
    .writes = writes,
    .write = dataframe_write,
    .check = check,
    .whole = whole,
};
