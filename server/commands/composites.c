/* Commands that build composite objects from registry objects: segarray dataframe index
 * reshape. The new object holds references to its components; nothing is copied. */
#include "commands.h"

#include "objects/arrayview.h"
#include "objects/dataframe.h"
#include "objects/index.h"
#include "objects/segarray.h"
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
    {0},
};
