/* Commands that build composite objects from registry objects, and take them apart:
 * segarray dataframe index reshape tag unpack. The new objects hold references to their
 * components; nothing is copied. */
#include "commands.h"

#include "objects/arrayview.h"
#include "objects/dataframe.h"
#include "objects/index.h"
#include "objects/segarray.h"
#include "dist/ranks.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

/* New references to the objects an array argument names; not_found naming the first
 * unknown one. */
static object **get_all(command_ctx *ctx, const char *cmd, const char *arg, size_t *count,
                        h5ark_error *err) {
    const h5ark_value *names = arg_value(ctx, arg);
    size_t n = names ? h5ark_value_len(names) : 0;
    object **objs = calloc(n ? n : 1, sizeof *objs);
    if (!objs) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const char *name = h5ark_value_at(names, i)->as.s.ptr;
        objs[i] = registry_get(name, err);
        if (!objs[i]) {
            h5ark_fail(err, H5ARK_NOT_FOUND, "%s: '%s'[%zu]: no object named '%.300s'", cmd, arg, i,
                       name);
            for (size_t j = 0; j < i; j++)
                object_release(objs[j]);
            free(objs);
            return NULL;
        }
    }
    *count = n;
    return objs;
}

static void release_all(object **objs, size_t n) {
    for (size_t i = 0; objs && i < n; i++)
        object_release(objs[i]);
    free(objs);
}

/* The strings of an array argument (NULL when absent); *n set to its length. */
static const char **str_items(command_ctx *ctx, const char *arg, size_t *n, h5ark_error *err) {
    const h5ark_value *v = arg_value(ctx, arg);
    *n = v ? h5ark_value_len(v) : 0;
    const char **out = calloc(*n ? *n : 1, sizeof *out);
    if (!out) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < *n; i++)
        out[i] = h5ark_value_at(v, i)->as.s.ptr;
    return out;
}

/* One named object argument; not_found naming the argument. */
static object *get_one(command_ctx *ctx, const char *cmd, const char *arg, h5ark_error *err) {
    const char *name = arg_str(ctx, arg, "");
    object *obj = registry_get(name, err);
    if (!obj)
        h5ark_fail(err, H5ARK_NOT_FOUND, "%s: '%s': no object named '%.300s'", cmd, arg, name);
    return obj;
}

static int cmd_segarray(command_ctx *ctx, h5ark_error *err) {
    object *segments = get_one(ctx, "segarray", "segments", err);
    if (!segments) return -1;
    object *values = get_one(ctx, "segarray", "values", err);
    object *sa = values ? segarray_new(segments, values, err) : NULL;
    object_release(segments);
    object_release(values);
    return sa ? command_publish(ctx, sa, err) : -1;
}

static int cmd_index(command_ctx *ctx, h5ark_error *err) {
    size_t n = 0, nlabels = 0, nnames = 0;
    const char **names = NULL, **labels = NULL;
    object *idx = NULL;
    object **levels = get_all(ctx, "index", "levels", &n, err);
    if (!levels) return -1;
    labels = str_items(ctx, "levels", &nlabels, err);
    if (!labels) goto out;
    if (arg_has(ctx, "names")) {
        names = str_items(ctx, "names", &nnames, err);
        if (!names) goto out;
        if (nnames != n) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "index: 'names' has %zu entries but 'levels' has %zu", nnames, n);
            goto out;
        }
    }
    idx = index_new(levels, labels, n, names, err);
out:
    release_all(levels, n);
    free(labels);
    free(names);
    return idx ? command_publish(ctx, idx, err) : -1;
}

static int cmd_dataframe(command_ctx *ctx, h5ark_error *err) {
    size_t n = 0, nlabels = 0, nnames = 0;
    const char **names = NULL, **labels = NULL;
    object *df = NULL, *index = NULL;
    object **columns = get_all(ctx, "dataframe", "columns", &n, err);
    if (!columns) return -1;
    labels = str_items(ctx, "columns", &nlabels, err);
    if (!labels) goto out;
    if (arg_has(ctx, "column_names")) {
        names = str_items(ctx, "column_names", &nnames, err);
        if (!names) goto out;
        if (nnames != n) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "dataframe: 'column_names' has %zu entries but 'columns' has %zu", nnames,
                       n);
            goto out;
        }
    } else {
        /* default: the objects' names; for a component path, its last part */
        names = calloc(n ? n : 1, sizeof *names);
        if (!names) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            const char *slash = strrchr(labels[i], '/');
            names[i] = slash ? slash + 1 : labels[i];
        }
    }
    if (arg_has(ctx, "index") && !(index = get_one(ctx, "dataframe", "index", err))) goto out;
    df = dataframe_new(columns, labels, names, n, index, arg_str(ctx, "index", ""), err);
out:
    release_all(columns, n);
    object_release(index);
    free(labels);
    free(names);
    return df ? command_publish(ctx, df, err) : -1;
}

static int cmd_reshape(command_ctx *ctx, h5ark_error *err) {
    object *src = get_one(ctx, "reshape", "array", err);
    if (!src) return -1;
    const h5ark_value *shape_arg = arg_value(ctx, "shape");
    size_t ndim = h5ark_value_len(shape_arg);
    uint64_t shape[OBJECT_MAX_DIMS];
    for (size_t i = 0; i < ndim && i < OBJECT_MAX_DIMS; i++)
        h5ark_value_to_uint64(h5ark_value_at(shape_arg, i), &shape[i]);
    object *obj = arrayview_reshape(src, arg_str(ctx, "array", ""), shape, ndim, err);
    object_release(src);
    return obj ? command_publish(ctx, obj, err) : -1;
}

/* A pdarray sharing `array`'s data, tagged as another system stores it (a datetime,
 * timedelta or IPv4 address). */
static int cmd_tag(command_ctx *ctx, h5ark_error *err) {
    object *src = get_one(ctx, "tag", "array", err);
    if (!src) return -1;
    const char *tag = NULL;
    object *obj = NULL;
    if (src->objtype != H5ARK_PDARRAY)
        h5ark_fail(err, H5ARK_TYPE_ERROR, "tag: 'array' ('%s') is a %s, not a pdarray",
                   arg_str(ctx, "array", ""), h5ark_objtype_name(src->objtype));
    else if (command_tag_arg(ctx, "tag", src->objtype, src->dtype, &tag, err) == 0 &&
             (obj = arrayview_reshape(src, arg_str(ctx, "array", ""), &src->size, 1, err)))
        obj->tag = tag;
    object_release(src);
    return obj ? command_publish(ctx, obj, err) : -1;
}

/* ---- unpack: a composite's parts as objects of their own ---- */

static bool is_leaf(const object *obj) {
    return obj->objtype == H5ARK_PDARRAY || obj->objtype == H5ARK_ARRAYVIEW ||
           obj->objtype == H5ARK_STRINGS;
}

/* obj is in the registry under its own name (a part shared by reference keeps it). */
static bool published(const object *obj) {
    if (!obj->name || strchr(obj->name, '/')) return false;
    object *same = registry_get(obj->name, &(h5ark_error){0});
    object_release(same);
    return same == obj;
}

typedef struct {
    object **v;
    size_t n, cap;
} leaf_list;

/* The leaves (arrays and strings) under obj, at any depth, each once, not yet published. */
static int collect_leaves(const object *obj, leaf_list *l, h5ark_error *err) {
    for (size_t i = 0; i < obj->ncomponents; i++) {
        object *c = obj->components[i].obj;
        if (!is_leaf(c)) {
            if (collect_leaves(c, l, err)) return -1;
            continue;
        }
        bool seen = published(c);
        for (size_t k = 0; !seen && k < l->n; k++)
            seen = l->v[k] == c;
        if (seen) continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 8;
            object **v = realloc(l->v, cap * sizeof *v);
            if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            l->v = v;
            l->cap = cap;
        }
        l->v[l->n++] = c;
    }
    return 0;
}

/* obj's descriptor (as `path`), each leaf part described under its own name. */
static h5ark_value *describe_unpacked(const object *obj, const char *path) {
    if (is_leaf(obj)) return object_describe(obj);
    h5ark_value *d = object_describe_as(obj, path);
    h5ark_value *comps = h5ark_value_map();
    for (size_t i = 0; d && comps && i < obj->ncomponents; i++) {
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", path, obj->components[i].name);
        h5ark_value *c = describe_unpacked(obj->components[i].obj, sub);
        if (!c || h5ark_value_set(comps, obj->components[i].name, c)) h5ark_value_destroy(&comps);
    }
    if (!comps || h5ark_value_set(d, "components", comps)) h5ark_value_destroy(&d);
    return d;
}

/* Every array and Strings inside composite `name` published under a name of its own (none
 * copied; one already published keeps its name), and the composite deleted unless `keep`:
 * its descriptor gives the new names. On every rank or on none. */
static int cmd_unpack(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "name", "");
    object *obj = get_one(ctx, "unpack", "name", err);
    if (!obj) return -1;
    leaf_list l = {0};
    int rc = is_leaf(obj)
                 ? h5ark_fail(err, H5ARK_TYPE_ERROR, "unpack: '%.300s' is a %s, not a composite",
                              name, h5ark_objtype_name(obj->objtype))
                 : collect_leaves(obj, &l, err);
    if (ranks_agree(rc, err) == 0 && command_publish_all(ctx, l.v, NULL, l.n, NULL, err) == 0) {
        /* every rank the same before the reply (a composite given by a component path
         * stays inside its parent) */
        if (!arg_bool(ctx, "keep", false) && !strchr(name, '/')) registry_remove(name, NULL);
        rc = reply_set(ctx, "object", describe_unpacked(obj, name), err);
    } else {
        rc = -1;
    }
    free(l.v);
    object_release(obj);
    return rc;
}

const command_def composite_commands[] = {
    {"segarray",
     cmd_segarray,
     {{"segments", ARG_STR, true}, {"values", ARG_STR, true}, {"name", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},
    {"dataframe",
     cmd_dataframe,
     {{"columns", ARG_STR_ARRAY, true},
      {"column_names", ARG_STR_ARRAY, false},
      {"index", ARG_STR, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"index",
     cmd_index,
     {{"levels", ARG_STR_ARRAY, true},
      {"names", ARG_STR_ARRAY, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"reshape",
     cmd_reshape,
     {{"array", ARG_STR, true}, {"shape", ARG_UINT_ARRAY, true}, {"name", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},
    {"tag",
     cmd_tag,
     {{"array", ARG_STR, true}, {"tag", ARG_STR, true}, {"name", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},
    {"unpack",
     cmd_unpack,
     {{"name", ARG_STR, true}, {"keep", ARG_BOOL, false}, {0}},
     .ranks = RANKS_EVERY},
    {0},
};
