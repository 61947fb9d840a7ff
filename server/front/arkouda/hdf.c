/* HDF5 I/O of the Arkouda dialect (protocol/PROTOCOL.md, "The Arkouda endpoint"): tohdf readAllHdf
 * lsany getfiletype hdffileformat globExpansion deleteMatchingFilenames, translated to the
 * native tohdf, readhdf, glob, lshdf, filetype, fileformat and rmhdf. tohdf assembles the
 * object the client describes by its parts and writes it with the native tohdf; readAllHdf
 * runs the native readhdf and answers in Arkouda's forms, each part of a composite published
 * under a name of its own (Arkouda's client keeps composites on its side, as names of their
 * parts). Paths may be absolute: they are made relative to the data directory, and the
 * native confinement (files.c) then applies. */
#include "front/arkouda/commands.h"
#include "access.h"
#include "config.h"
#include "dist/ranks.h"
#include "objects/arrayview.h"
#include "objects/categorical.h"
#include "objects/dataframe.h"
#include "objects/groupby.h"
#include "objects/index.h"
#include "objects/pdarray.h"
#include "objects/segarray.h"
#include "objects/strings.h"
#include "registry.h"
#include "storage/files.h"

#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdio.h>
#include <strings.h>

/* ---- paths ---- */

/* A client path as the native commands take it: relative ones as they are (with users:
 * in the caller's home); an absolute one by resolving its longest existing directory
 * prefix without glob characters, which must lie inside the data directory (forbidden
 * otherwise), made relative to it (with users: from '/', the data directory's root). */
static int relative_path(const char *given, char out[PATH_MAX], h5ark_error *err) {
    if (given[0] != '/') {
        if (strlen(given) >= PATH_MAX)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "the path is too long");
        strcpy(out, given);
        return 0;
    }
    size_t cut = strcspn(given, "*?[");
    char prefix[PATH_MAX], real[PATH_MAX];
    if (cut >= sizeof prefix) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the path is too long");
    memcpy(prefix, given, cut);
    prefix[cut] = '\0';
    for (;;) {
        char *slash = strrchr(prefix, '/');
        if (!slash) return h5ark_fail(err, H5ARK_BAD_REQUEST, "bad path '%.200s'", given);
        slash[slash == prefix ? 1 : 0] = '\0'; /* the parent; "/" stays */
        cut = strlen(prefix);
        if (realpath(prefix, real)) break;
        if (cut == 1) return h5ark_fail(err, H5ARK_FORBIDDEN, "cannot resolve '%.200s'", given);
    }
    size_t dn = strlen(config.data_dir);
    if (strncmp(real, config.data_dir, dn) != 0 || (real[dn] != '\0' && real[dn] != '/'))
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "'%.300s' is outside the data directory; absolute paths must lie in %s",
                          given, config.data_dir);
    const char *inside = real + dn + (real[dn] == '/');
    const char *rest = given + cut + (given[cut] == '/');
    file_access fa = access_here();
    const char *root = file_access_on(&fa) ? "/" : "";
    int n = snprintf(out, PATH_MAX, "%s%s%s%s", root, inside, *inside && *rest ? "/" : "", rest);
    if (n < 0 || n >= PATH_MAX) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the path is too long");
    if (!out[strlen(root)])
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%.200s' names no file", given);
    return 0;
}

/* A native command `cmd` on one client path (made relative) as {path} (or {paths: [path]}
 * for glob); not_found saying that it "does not exist", the words Arkouda's client looks
 * for. */
static int native_on_path(ak_ctx *ctx, const char *cmd, const char *given, dispatch_result *res,
                          h5ark_error *err) {
    char rel[PATH_MAX];
    if (relative_path(given, rel, err)) return -1;
    h5ark_value *args = h5ark_value_map(), *path = h5ark_value_str(rel);
    bool glob = strcmp(cmd, "glob") == 0;
    if (glob && path) {
        h5ark_value *list = h5ark_value_array();
        if (!list || h5ark_value_push(list, path)) {
            h5ark_value_destroy(&list);
            path = NULL;
        } else {
            path = list;
        }
    }
    if (!args || !path || h5ark_value_set(args, glob ? "paths" : "path", path)) {
        if (!args) h5ark_value_destroy(&path);
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    int rc = ak_native(ctx, cmd, args, NULL, res, err);
    h5ark_value_destroy(&args);
    if (rc && err->code == H5ARK_NOT_FOUND)
        return h5ark_fail(err, H5ARK_NOT_FOUND, "%.300s does not exist", given);
    return rc;
}

/* ---- tohdf: the object the client describes ---- */

static object *named(const char *name, h5ark_error *err) {
    return name ? registry_get(name, err)
                : (h5ark_fail(err, H5ARK_BAD_REQUEST, "a part is not named"), NULL);
}

static object *arg_object(ak_ctx *ctx, const char *key, h5ark_error *err) {
    const char *name;
    if (ak_arg_str(ctx->in, key, &name, err)) return NULL;
    return registry_get(name, err);
}

/* A categorical from its parts: codes, categories, the NA code's array, and the grouping
 * (permutation, segments) when both are given. */
static object *categorical_of(object *codes, object *categories, object *na_codes, object *perm,
                              object *segs, h5ark_error *err) {
    if (!codes || !categories) return NULL;
    if (categories->objtype != H5ARK_STRINGS) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "a Categorical's categories must be Strings");
        return NULL;
    }
    char *na_value = NULL;
    int64_t na = -1;
    if (na_codes && (na_codes->objtype != H5ARK_PDARRAY || na_codes->dtype != H5ARK_INT64 ||
                     na_codes->size == 0)) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "NA_codes must be an int64 array of one code");
        return NULL;
    }
    if (na_codes && pdarray_int64_at(na_codes, 0, &na, err)) return NULL;
    if (na >= 0 && (uint64_t)na < categories->size &&
        !(na_value = strings_dup(categories, (uint64_t)na, NULL, err)))
        return NULL;
    object *cat = categorical_from_codes(codes, categories, na_value ? na_value : "N/A", err);
    free(na_value);
    if (cat && perm && segs &&
        (object_add_component(cat, "permutation", perm, err) ||
         object_add_component(cat, "segments", segs, err))) {
        object_release(cat);
        return NULL;
    }
    return cat;
}

/* A part given by name, or as a JSON object of the parts of a SegArray
 * {"segments", "values"} or a Categorical {"codes", "categories", ...}. */
static object *part_of(json_t *spec, h5ark_error *err) {
    json_t *owned = NULL;
    if (json_is_string(spec) && json_string_value(spec)[0] == '{')
        spec = owned = json_loads(json_string_value(spec), 0, NULL);
    if (json_is_string(spec)) return registry_get(json_string_value(spec), err);
    object *obj = NULL;
    if (!json_is_object(spec)) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "a part must be a name or a JSON object of names");
    } else if (json_object_get(spec, "codes")) {
        const char *na = json_string_value(json_object_get(spec, "NA_codes"));
        if (!na) na = json_string_value(json_object_get(spec, "_akNAcode"));
        object *codes = named(json_string_value(json_object_get(spec, "codes")), err);
        object *cats =
            codes ? named(json_string_value(json_object_get(spec, "categories")), err) : NULL;
        object *nac = cats && na ? registry_get(na, err) : NULL;
        const char *p = json_string_value(json_object_get(spec, "permutation"));
        const char *s = json_string_value(json_object_get(spec, "segments"));
        object *perm = p && s ? registry_get(p, err) : NULL;
        object *segs = perm ? registry_get(s, err) : NULL;
        if (!na || nac) obj = categorical_of(codes, cats, nac, perm, segs, err);
        object_release(codes);
        object_release(cats);
        object_release(nac);
        object_release(perm);
        object_release(segs);
    } else {
        object *segs = named(json_string_value(json_object_get(spec, "segments")), err);
        object *vals = segs ? named(json_string_value(json_object_get(spec, "values")), err) : NULL;
        if (vals) obj = segarray_new(segs, vals, err);
        object_release(segs);
        object_release(vals);
    }
    json_decref(owned);
    return obj;
}

/* The parts listed in argument `key`, n of them (new references; NULL on failure). */
static object **parts_of(ak_ctx *ctx, const char *key, size_t *n, h5ark_error *err) {
    json_t *list = json_loads(ak_arg(ctx->in, key) ? ak_arg(ctx->in, key) : "", 0, NULL);
    if (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > 4096) {
        json_decref(list);
        h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' must be a JSON list of 1 to 4096 parts",
                   key);
        return NULL;
    }
    *n = json_array_size(list);
    object **parts = calloc(*n, sizeof *parts);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (!parts || !(parts[i] = part_of(item, err))) {
            if (!parts) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            for (size_t k = 0; parts && k < i; k++)
                object_release(parts[k]);
            free(parts);
            parts = NULL;
            break;
        }
    }
    json_decref(list);
    return parts;
}

static void parts_free(object **parts, size_t n) {
    for (size_t i = 0; parts && i < n; i++)
        object_release(parts[i]);
    free(parts);
}

/* A pdarray that Arkouda stores with its own ObjType: the same data, tagged. */
static object *tagged(object *values, const char *tag, h5ark_error *err) {
    if (values->objtype != H5ARK_PDARRAY) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "%s must be a pdarray", values->name);
        return NULL;
    }
    uint64_t n = values->size;
    object *obj = arrayview_reshape(values, values->name, &n, 1, err);
    if (obj) obj->tag = tag;
    return obj;
}

static object *groupby_of(ak_ctx *ctx, h5ark_error *err) {
    size_t nkeys = 0;
    object **keys = parts_of(ctx, "key_names", &nkeys, err);
    object *perm = keys ? arg_object(ctx, "permutation", err) : NULL;
    object *segs = perm ? arg_object(ctx, "segments", err) : NULL;
    object *uki = segs ? arg_object(ctx, "unique_key_idx", err) : NULL;
    object *gb = uki ? object_new_composite(H5ARK_GROUPBY, H5ARK_INT64, perm->size, err) : NULL;
    int rc = gb ? 0 : -1;
    if (rc == 0)
        rc = object_add_component(gb, "permutation", perm, err) ||
             object_add_component(gb, "segments", segs, err) ||
             object_add_component(gb, "unique_key_idx", uki, err);
    for (size_t k = 0; rc == 0 && k < nkeys; k++) {
        char name[32];
        snprintf(name, sizeof name, "KEY_%zu", k);
        /* the grouping is given: a key need not be one h5ark sorts (a bigint, as a read
         * GroupBy may hold) */
        bool big = keys[k]->objtype == H5ARK_PDARRAY && keys[k]->dtype == H5ARK_BIGINT;
        rc = big ? 0 : groupby_check_key(keys[k], name, err);
        if (rc == 0 && keys[k]->size != perm->size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "key %zu has %llu rows, the groupby %llu", k,
                            (unsigned long long)keys[k]->size, (unsigned long long)perm->size);
        if (rc == 0) rc = object_add_component(gb, name, keys[k], err);
    }
    if (rc == 0) rc = object_set_extra(gb, "ngroups", h5ark_value_uint(segs->size), err);
    if (rc == 0) rc = groupby_check(gb, err);
    parts_free(keys, nkeys);
    object_release(perm);
    object_release(segs);
    object_release(uki);
    if (rc) object_release(gb);
    return rc ? NULL : gb;
}

static object *index_of(ak_ctx *ctx, h5ark_error *err) {
    size_t n = 0;
    object **levels = parts_of(ctx, "idx", &n, err);
    if (!levels) return NULL;
    const char **labels = calloc(n, sizeof *labels);
    object *idx = NULL;
    if (labels) {
        for (size_t i = 0; i < n; i++)
            labels[i] = levels[i]->name ? levels[i]->name : "a level";
        idx = index_new(levels, labels, n, NULL, err);
    } else {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    free(labels);
    parts_free(levels, n);
    return idx;
}

static object *dataframe_of(ak_ctx *ctx, h5ark_error *err) {
    size_t n = 0;
    object **cols = parts_of(ctx, "columns", &n, err);
    if (!cols) return NULL;
    json_t *names = ak_arg_list(ctx->in, "column_names", err);
    object *index = NULL, *df = NULL;
    const char **labels = calloc(n, sizeof *labels), **cnames = calloc(n, sizeof *cnames);
    if (!names || !labels || !cnames) {
        if (names) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    } else if (json_array_size(names) != n) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "%zu column_names for %zu columns",
                   json_array_size(names), n);
    } else if (!ak_arg(ctx->in, "index") || (index = arg_object(ctx, "index", err))) {
        for (size_t i = 0; i < n; i++) {
            cnames[i] = json_string_value(json_array_get(names, i));
            labels[i] = cnames[i];
        }
        df = dataframe_new(cols, labels, cnames, n, index, "index", err);
    }
    free(labels);
    free(cnames);
    json_decref(names);
    object_release(index);
    parts_free(cols, n);
    return df;
}

/* The object a tohdf describes, by its objType. */
static object *object_to_write(ak_ctx *ctx, const char *type, h5ark_error *err) {
    static const struct {
        const char *type, *tag;
    } pdarrays[] = {{"pdarray", NULL},
                    {"Datetime", OBJECT_TAG_DATETIME},
                    {"Timedelta", OBJECT_TAG_TIMEDELTA},
                    {"IPv4", OBJECT_TAG_IPV4}};
    for (size_t i = 0; i < sizeof pdarrays / sizeof pdarrays[0]; i++) {
        if (strcasecmp(type, pdarrays[i].type) != 0) continue;
        object *v = arg_object(ctx, "values", err);
        if (!v || !pdarrays[i].tag) return v;
        object *t = tagged(v, pdarrays[i].tag, err);
        object_release(v);
        return t;
    }
    if (strcasecmp(type, "strings") == 0) {
        object *v = arg_object(ctx, "values", err);
        if (v && v->objtype != H5ARK_STRINGS) {
            h5ark_fail(err, H5ARK_TYPE_ERROR, "'values' must name Strings");
            object_release(v);
            return NULL;
        }
        return v;
    }
    if (strcasecmp(type, "SegArray") == 0) {
        object *segs = arg_object(ctx, "segments", err);
        object *vals = segs ? arg_object(ctx, "values", err) : NULL;
        object *sa = vals ? segarray_new(segs, vals, err) : NULL;
        object_release(segs);
        object_release(vals);
        return sa;
    }
    if (strcasecmp(type, "categorical") == 0) {
        object *codes = arg_object(ctx, "codes", err);
        object *cats = codes ? arg_object(ctx, "categories", err) : NULL;
        object *na = cats && ak_arg(ctx->in, "NA_codes") ? arg_object(ctx, "NA_codes", err) : NULL;
        object *perm = NULL, *segs = NULL;
        if (cats && ak_arg(ctx->in, "permutation") && ak_arg(ctx->in, "segments")) {
            perm = registry_get(ak_arg(ctx->in, "permutation"), &(h5ark_error){0});
            segs = perm ? registry_get(ak_arg(ctx->in, "segments"), &(h5ark_error){0}) : NULL;
        }
        object *cat = cats && (na || !ak_arg(ctx->in, "NA_codes"))
                          ? categorical_of(codes, cats, na, perm, segs, err)
                          : NULL;
        object_release(codes);
        object_release(cats);
        object_release(na);
        object_release(perm);
        object_release(segs);
        return cat;
    }
    if (strcasecmp(type, "GroupBy") == 0) return groupby_of(ctx, err);
    if (strcasecmp(type, "Index") == 0 || strcasecmp(type, "MultiIndex") == 0)
        return index_of(ctx, err);
    if (strcasecmp(type, "DataFrame") == 0) return dataframe_of(ctx, err);
    h5ark_fail(err, H5ARK_BAD_REQUEST, "objType '%.60s' is not one tohdf writes", type);
    return NULL;
}

/* The native tohdf of the object named `name` as dataset `dset`, in mode `mode`. */
static int native_tohdf(ak_ctx *ctx, const char *name, const char *dset, const char *path,
                        const char *mode, bool distribute, bool strings_segments,
                        h5ark_error *err) {
    h5ark_value *args = h5ark_value_map(), *names = h5ark_value_array(),
                *sets = h5ark_value_array();
    int bad = !args || !names || !sets || h5ark_value_push(names, h5ark_value_str(name)) ||
              h5ark_value_push(sets, h5ark_value_str(dset));
    if (!bad) {
        bad = h5ark_value_set(args, "names", names) | h5ark_value_set(args, "datasets", sets);
        names = sets = NULL;
        bad |= h5ark_value_set(args, "path", h5ark_value_str(path)) ||
               h5ark_value_set(args, "mode", h5ark_value_str(mode)) ||
               h5ark_value_set(args, "file_type",
                               h5ark_value_str(distribute ? "distribute" : "single")) ||
               h5ark_value_set(args, "strings_segments", h5ark_value_bool(strings_segments));
    }
    h5ark_value_destroy(&names);
    h5ark_value_destroy(&sets);
    dispatch_result res;
    int rc = bad ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
                 : ak_native(ctx, "tohdf", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc == 0) dispatch_result_free(&res);
    return rc;
}

/* tohdf {objType, dset, filename, write_mode 0 truncate / 1 append, file_format 0 single /
 * 1 distribute, overwrite (update: replace the dataset), save_offsets (Strings), and the
 * object's parts}: the object the client describes, assembled from its parts, written by
 * the native tohdf (under a name of its own for the call when it is not one object of the
 * registry already). */
static int cmd_tohdf(ak_ctx *ctx, h5ark_error *err) {
    const char *type, *dset, *filename;
    int64_t write_mode = 0, file_format = 1;
    bool overwrite = false, save_offsets = true;
    if (ak_arg_str(ctx->in, "objType", &type, err) || ak_arg_str(ctx->in, "dset", &dset, err) ||
        ak_arg_str(ctx->in, "filename", &filename, err) ||
        ak_arg_int(ctx->in, "write_mode", &write_mode, err) ||
        (ak_arg(ctx->in, "file_format") && ak_arg_int(ctx->in, "file_format", &file_format, err)) ||
        (ak_arg(ctx->in, "overwrite") && ak_arg_bool(ctx->in, "overwrite", &overwrite, err)) ||
        (ak_arg(ctx->in, "save_offsets") &&
         ak_arg_bool(ctx->in, "save_offsets", &save_offsets, err)))
        return -1;
    if (write_mode != 0 && write_mode != 1)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "write_mode must be 0 (truncate) or 1 (append)");
    if (file_format != 0 && file_format != 1)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "file_format must be 0 (single) or 1 (distribute)");
    char rel[PATH_MAX];
    if (relative_path(filename, rel, err)) return -1;
    object *obj = object_to_write(ctx, type, err);
    if (!obj) return -1;
    /* an object of the registry is written by its name; one assembled here gets one */
    object *known = obj->name ? registry_get(obj->name, &(h5ark_error){0}) : NULL;
    object_release(known);
    int rc = 0;
    bool made = known != obj;
    if (made) {
        rc = registry_publish(obj, NULL, err);
        int all = ranks_agree(rc, err);
        if (all && rc == 0) registry_remove(obj->name, &(h5ark_error){0});
        rc = all;
    }
    const char *mode = overwrite ? "update" : write_mode ? "append" : "truncate";
    if (rc == 0) rc = native_tohdf(ctx, obj->name, dset, rel, mode, file_format, save_offsets, err);
    if (rc && overwrite && err->code == H5ARK_NOT_FOUND) {
        /* update_hdf of a dataset the files do not have yet: added */
        *err = (h5ark_error){0};
        rc = native_tohdf(ctx, obj->name, dset, rel, "append", file_format, save_offsets, err);
    }
    if (made && obj->name) registry_remove(obj->name, &(h5ark_error){0});
    object_release(obj);
    return rc ? -1 : ak_reply(ctx, err, "Dataset written successfully!");
}

/* ---- readAllHdf: objects in Arkouda's forms ---- */

static const char *type_name(const object *obj) {
    switch (obj->objtype) {
    case H5ARK_PDARRAY:
        if (obj->tag == NULL) return "PDARRAY";
        return strcmp(obj->tag, OBJECT_TAG_DATETIME) == 0    ? "DATETIME"
               : strcmp(obj->tag, OBJECT_TAG_TIMEDELTA) == 0 ? "TIMEDELTA"
                                                             : "IPV4";
    case H5ARK_ARRAYVIEW: return "PDARRAY";
    case H5ARK_STRINGS: return "STRINGS";
    case H5ARK_SEGARRAY: return "SEGARRAY";
    case H5ARK_CATEGORICAL: return "CATEGORICAL";
    case H5ARK_GROUPBY: return "GROUPBY";
    case H5ARK_DATAFRAME: return "DATAFRAME";
    case H5ARK_INDEX: return "INDEX";
    case H5ARK_MULTIINDEX: return "MULTIINDEX";
    default: return NULL;
    }
}

/* Publish a part under a name of its own (unless it has one) and give its created text. */
static char *leaf(object *obj, json_t *made, h5ark_error *err) {
    object *same = obj->name ? registry_get(obj->name, &(h5ark_error){0}) : NULL;
    object_release(same);
    if (same != obj) {
        if (registry_publish(obj, NULL, err)) return NULL;
        json_array_append_new(made, json_string(obj->name));
    }
    char *text = ak_created(obj);
    if (!text) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return text;
}

static char *form_of(ak_ctx *ctx, object *obj, json_t *made, h5ark_error *err);

/* "<TYPE>+|+<form>", as nested parts are given */
static json_t *typed_form(ak_ctx *ctx, object *obj, json_t *made, h5ark_error *err) {
    const char *type = type_name(obj);
    char *form = type ? form_of(ctx, obj, made, err) : NULL;
    if (!type)
        h5ark_fail(err, H5ARK_TYPE_ERROR, "a %s cannot be given to Arkouda's client",
                   h5ark_objtype_name(obj->objtype));
    if (!form) return NULL;
    char *text = NULL;
    json_t *s = asprintf(&text, "%s+|+%s", type, form) < 0 ? NULL : json_string(text);
    free(text);
    free(form);
    if (!s) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return s;
}

static int put_form(json_t *map, const char *key, char *text, h5ark_error *err) {
    if (!text) return -1;
    int rc = json_object_set_new(map, key, json_string(text));
    free(text);
    return rc ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory") : 0;
}

/* The created text of a new one-element int64 array holding v (a Categorical's
 * _akNAcode), made by the native create; its name joins `made`. */
static char *one_int64(ak_ctx *ctx, int64_t v, json_t *made, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (!args || h5ark_value_set(args, "dtype", h5ark_value_str("int64")) ||
        h5ark_value_set(args, "size", h5ark_value_uint(1)) ||
        h5ark_value_set(args, "fill", h5ark_value_str("full")) ||
        h5ark_value_set(args, "value", h5ark_value_int(v))) {
        h5ark_value_destroy(&args);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    dispatch_result res;
    int rc = ak_native(ctx, "create", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return NULL;
    const h5ark_value *desc = h5ark_value_get(res.result, "object");
    const h5ark_value *name = h5ark_value_get(desc, "name");
    if (name && name->kind == H5ARK_STR) json_array_append_new(made, json_string(name->as.s.ptr));
    char *text = ak_created_of(desc, "create", err);
    dispatch_result_free(&res);
    return text;
}

static int64_t na_code_of(const object *cat) {
    const h5ark_value *v = h5ark_value_get(cat->extra, "na_code");
    int64_t na = -1;
    h5ark_value_to_int64(v, &na);
    return na;
}

/* The form of a part: a created text for arrays and Strings, the JSON text of a map or
 * list of its parts' forms for composites. */
static char *form_of(ak_ctx *ctx, object *obj, json_t *made, h5ark_error *err) {
    if (obj->objtype == H5ARK_PDARRAY || obj->objtype == H5ARK_ARRAYVIEW ||
        obj->objtype == H5ARK_STRINGS)
        return leaf(obj, made, err); /* a bigint too: its limbs are fetched by name */
    json_t *out = obj->objtype == H5ARK_INDEX || obj->objtype == H5ARK_MULTIINDEX ? json_array()
                                                                                  : json_object();
    int rc = out ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < obj->ncomponents; i++) {
        const char *name = obj->components[i].name;
        object *part = obj->components[i].obj;
        switch (obj->objtype) {
        case H5ARK_SEGARRAY:
        case H5ARK_CATEGORICAL: rc = put_form(out, name, leaf(part, made, err), err); break;
        case H5ARK_GROUPBY:
            if (strncmp(name, "KEY_", 4) == 0) {
                json_t *t = typed_form(ctx, part, made, err);
                rc = t ? json_object_set_new(out, name, t) : -1;
            } else {
                rc = put_form(out, strcmp(name, "unique_key_idx") == 0 ? "uki" : name,
                              leaf(part, made, err), err);
            }
            break;
        case H5ARK_INDEX:
        case H5ARK_MULTIINDEX: {
            json_t *t = typed_form(ctx, part, made, err);
            rc = t ? json_array_append_new(out, t) : -1;
            break;
        }
        case H5ARK_DATAFRAME: {
            /* the index as its one level, as Arkouda's snapshot gives it */
            object *p =
                strcmp(name, "Index") == 0 && part->objtype == H5ARK_INDEX && part->ncomponents == 1
                    ? part->components[0].obj
                    : part;
            json_t *t = typed_form(ctx, p, made, err);
            rc = t ? json_object_set_new(out, name, t) : -1;
            break;
        }
        default:
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "a %s cannot be given to Arkouda's client",
                            h5ark_objtype_name(obj->objtype));
        }
    }
    if (rc == 0 && obj->objtype == H5ARK_CATEGORICAL)
        rc = put_form(out, "_akNAcode", one_int64(ctx, na_code_of(obj), made, err), err);
    char *text = rc == 0 ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (rc == 0 && !text) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    json_decref(out);
    return text;
}

static json_t *item_of(ak_ctx *ctx, const char *dataset, object *obj, json_t *made,
                       h5ark_error *err) {
    const char *type = type_name(obj);
    char *form = type ? form_of(ctx, obj, made, err) : NULL;
    if (!type)
        h5ark_fail(err, H5ARK_TYPE_ERROR, "dataset %.200s is a %s, which Arkouda cannot hold",
                   dataset, h5ark_objtype_name(obj->objtype));
    if (!form) return NULL;
    json_t *item =
        json_pack("{s:s,s:s,s:s}", "dataset_name", dataset, "arkouda_type", type, "created", form);
    free(form);
    if (!item) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return item;
}

static int set_bool_arg(h5ark_value *args, ak_ctx *ctx, const char *key, h5ark_error *err) {
    bool b;
    if (!ak_arg(ctx->in, key)) return 0;
    if (ak_arg_bool(ctx->in, key, &b, err)) return -1;
    return h5ark_value_set(args, key, h5ark_value_bool(b))
               ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
               : 0;
}

/* readAllHdf {dsets, filenames, strict_types, allow_errors, calc_string_offsets, tag_data} */
static int cmd_read_all(ak_ctx *ctx, h5ark_error *err) {
    json_t *dsets = ak_arg_list(ctx->in, "dsets", err);
    json_t *names = dsets ? ak_arg_list(ctx->in, "filenames", err) : NULL;
    h5ark_value *args = h5ark_value_map(), *paths = h5ark_value_array(),
                *sets = h5ark_value_array();
    dispatch_result res = {0};
    json_t *items = json_array(), *made = json_array();
    int rc = -1;
    if (!names) goto out;
    if (!args || !paths || !sets || !items || !made) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    if (json_array_size(names) == 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'filenames' names no file");
        goto out;
    }
    size_t i;
    json_t *item;
    json_array_foreach(names, i, item) {
        char rel[PATH_MAX];
        if (relative_path(json_string_value(item), rel, err)) goto out;
        h5ark_value_push(paths, h5ark_value_str(rel));
    }
    json_array_foreach(dsets, i, item)
        h5ark_value_push(sets, h5ark_value_str(json_string_value(item)));
    h5ark_value_set(args, "paths", paths);
    paths = NULL;
    if (h5ark_value_len(sets)) {
        h5ark_value_set(args, "datasets", sets);
        sets = NULL;
    }
    if (set_bool_arg(args, ctx, "strict_types", err) ||
        set_bool_arg(args, ctx, "allow_errors", err) ||
        set_bool_arg(args, ctx, "calc_string_offsets", err) ||
        set_bool_arg(args, ctx, "tag_data", err))
        goto out;
    if (ak_native(ctx, "readhdf", args, NULL, &res, err)) goto out;
    const h5ark_value *objects = h5ark_value_get(res.result, "objects");
    /* Filename_Codes first, then the datasets in order; every part gets a name of its own
     * and the composites the native read published go (Arkouda's client holds those) */
    rc = 0;
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        for (size_t k = 0; rc == 0 && k < h5ark_value_len(objects); k++) {
            const char *dataset = objects->as.m.keys[k];
            if ((strcmp(dataset, "Filename_Codes") == 0) != (pass == 0)) continue;
            const h5ark_value *n = h5ark_value_get(objects->as.m.vals[k], "name");
            object *obj = n && n->kind == H5ARK_STR ? registry_get(n->as.s.ptr, err) : NULL;
            json_t *it = obj ? item_of(ctx, dataset, obj, made, err) : NULL;
            rc = it && json_array_append_new(items, it) == 0 ? 0 : -1;
            bool composite = obj && obj->objtype != H5ARK_PDARRAY &&
                             obj->objtype != H5ARK_STRINGS && obj->objtype != H5ARK_ARRAYVIEW;
            if (composite) registry_remove(n->as.s.ptr, &(h5ark_error){0});
            object_release(obj);
        }
    }
    if (rc) goto out;
    char *text = json_dumps(items, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_t *reply = text ? json_pack("{s:s}", "items", text) : NULL;
    free(text);
    const h5ark_value *file_errors = h5ark_value_get(res.result, "file_errors");
    size_t nerrors = h5ark_value_len(file_errors);
    if (reply && nerrors) {
        json_t *list = json_array();
        for (size_t e = 0; e < nerrors; e++)
            json_array_append_new(list, json_string(h5ark_value_at(file_errors, e)->as.s.ptr));
        char *errors = json_dumps(list, JSON_COMPACT);
        char count[24];
        snprintf(count, sizeof count, "%zu", nerrors);
        json_object_set_new(reply, "allow_errors", json_string("true"));
        json_object_set_new(reply, "file_error_count", json_string(count));
        json_object_set_new(reply, "file_errors", json_string(errors ? errors : "[]"));
        free(errors);
        json_decref(list);
    }
    /* what the read left out or went on despite: named as file_errors are (JSON text of a
     * list), and the reply a WARNING, which Arkouda's client issues as a Python warning */
    size_t nwarnings = h5ark_value_len(res.warnings);
    if (reply && nwarnings) {
        json_t *list = json_array();
        for (size_t w = 0; w < nwarnings; w++) {
            const h5ark_value *t = h5ark_value_at(res.warnings, w);
            if (t && t->kind == H5ARK_STR) json_array_append_new(list, json_string(t->as.s.ptr));
        }
        char *text = json_dumps(list, JSON_COMPACT);
        json_object_set_new(reply, "warnings", json_string(text ? text : "[]"));
        free(text);
        json_decref(list);
        ctx->warning = true;
    }
    char *msg = reply ? json_dumps(reply, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(reply);
    if (!msg) {
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    free(ctx->msg);
    ctx->msg = msg;
out:
    /* every rank read (res.result) or none did: the parts stay on every rank or on none */
    if (res.result) rc = ranks_agree(rc, err);
    if (rc && res.result) {
        /* nothing of a failed read stays: the parts published so far, and what the native
         * read published */
        const h5ark_value *objs = h5ark_value_get(res.result, "objects");
        size_t m;
        json_t *name;
        json_array_foreach(made, m, name)
            registry_remove(json_string_value(name), &(h5ark_error){0});
        for (size_t k = 0; k < h5ark_value_len(objs); k++) {
            const h5ark_value *n = h5ark_value_get(objs->as.m.vals[k], "name");
            if (n && n->kind == H5ARK_STR) registry_remove(n->as.s.ptr, &(h5ark_error){0});
        }
    }
    json_decref(made);
    dispatch_result_free(&res);
    json_decref(dsets);
    json_decref(names);
    json_decref(items);
    h5ark_value_destroy(&args);
    h5ark_value_destroy(&paths);
    h5ark_value_destroy(&sets);
    return rc;
}

/* ---- listing and files ---- */

/* lsany {filename, col_delim, read_nested}: the top-level objects of the first file the name
 * stands for (the native glob, then lshdf). */
static int cmd_lsany(ak_ctx *ctx, h5ark_error *err) {
    const char *filename;
    dispatch_result res;
    if (ak_arg_str(ctx->in, "filename", &filename, err) ||
        native_on_path(ctx, "glob", filename, &res, err))
        return -1;
    const h5ark_value *first = h5ark_value_at(h5ark_value_get(res.result, "files"), 0);
    h5ark_value *args = h5ark_value_map();
    int rc = first && first->kind == H5ARK_STR && args &&
                     h5ark_value_set(args, "path", h5ark_value_str(first->as.s.ptr)) == 0
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result_free(&res);
    if (rc == 0) rc = ak_native(ctx, "lshdf", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    const h5ark_value *entries = h5ark_value_get(res.result, "entries");
    json_t *list = json_array();
    for (size_t i = 0; list && i < h5ark_value_len(entries); i++) {
        const h5ark_value *name = h5ark_value_get(h5ark_value_at(entries, i), "name");
        if (name && name->kind == H5ARK_STR && strcmp(name->as.s.ptr, "_arkouda_metadata") != 0)
            json_array_append_new(list, json_string(name->as.s.ptr));
    }
    dispatch_result_free(&res);
    char *text = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    if (!text) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(ctx->msg);
    ctx->msg = text;
    return 0;
}

/* getfiletype {filename}: HDF5 or Parquet, of the first file it names (the native
 * filetype). */
static int cmd_getfiletype(ak_ctx *ctx, h5ark_error *err) {
    const char *filename;
    dispatch_result res;
    if (ak_arg_str(ctx->in, "filename", &filename, err) ||
        native_on_path(ctx, "filetype", filename, &res, err))
        return -1;
    const h5ark_value *type = h5ark_value_get(res.result, "type");
    bool hdf5 = type && type->kind == H5ARK_STR && strcmp(type->as.s.ptr, "hdf5") == 0;
    dispatch_result_free(&res);
    return ak_reply(ctx, err, "%s", hdf5 ? "HDF5" : "Parquet");
}

/* hdffileformat {filename}: single or distribute, of the first file the name stands for
 * (the native fileformat). */
static int cmd_hdffileformat(ak_ctx *ctx, h5ark_error *err) {
    const char *filename;
    dispatch_result res;
    if (ak_arg_str(ctx->in, "filename", &filename, err) ||
        native_on_path(ctx, "fileformat", filename, &res, err))
        return -1;
    const h5ark_value *f = h5ark_value_get(res.result, "file_format");
    int rc = f && f->kind == H5ARK_STR ? ak_reply(ctx, err, "%s", f->as.s.ptr)
                                       : h5ark_fail(err, H5ARK_INTERNAL, "fileformat said nothing");
    dispatch_result_free(&res);
    return rc;
}

/* globExpansion {filenames, file_count}: the files the names and patterns stand for that
 * the caller may read, as absolute paths (the native glob of each name). */
static int cmd_glob(ak_ctx *ctx, h5ark_error *err) {
    json_t *names = ak_arg_list(ctx->in, "filenames", err);
    if (!names) return -1;
    json_t *out = json_array();
    size_t i;
    json_t *item;
    int rc = out ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    file_access fa = access_here();
    json_array_foreach(names, i, item) {
        dispatch_result res;
        if (rc || (rc = native_on_path(ctx, "glob", json_string_value(item), &res, err))) break;
        const h5ark_value *files = h5ark_value_get(res.result, "files");
        for (size_t k = 0; rc == 0 && k < h5ark_value_len(files); k++) {
            char abs[PATH_MAX];
            rc = files_absolute(&fa, h5ark_value_at(files, k)->as.s.ptr, abs, err);
            if (rc == 0) json_array_append_new(out, json_string(abs));
        }
        dispatch_result_free(&res);
    }
    char *text = rc == 0 ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    json_decref(names);
    if (rc) return -1;
    if (!text) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(ctx->msg);
    ctx->msg = text;
    return 0;
}

/* deleteMatchingFilenames {prefix}: the file set prefix_LOCALE#### and prefix itself (the
 * native rmhdf). */
static int cmd_delete_files(ak_ctx *ctx, h5ark_error *err) {
    const char *prefix;
    dispatch_result res;
    if (ak_arg_str(ctx->in, "prefix", &prefix, err) ||
        native_on_path(ctx, "rmhdf", prefix, &res, err))
        return -1;
    dispatch_result_free(&res);
    return ak_reply(ctx, err, "Files deleted successfully!");
}

const ak_command ak_hdf_commands[] = {
    {"tohdf", cmd_tohdf, 0, RANKS_EVERY},
    {"readAllHdf", cmd_read_all, 0, RANKS_EVERY},
    {"lsany", cmd_lsany, AK_READ_ONLY, RANKS_ZERO},
    {"getfiletype", cmd_getfiletype, AK_READ_ONLY, RANKS_ZERO},
    {"hdffileformat", cmd_hdffileformat, AK_READ_ONLY, RANKS_ZERO},
    {"globExpansion", cmd_glob, AK_READ_ONLY, RANKS_ZERO},
    {"deleteMatchingFilenames", cmd_delete_files, 0, RANKS_ZERO},
    {0},
};
