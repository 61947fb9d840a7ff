/* HDF5 I/O of the Arkouda dialect (protocol/PROTOCOL.md, "The Arkouda endpoint"): tohdf readAllHdf
 * lsany getfiletype hdffileformat globExpansion deleteMatchingFilenames, translated to the
 * native tohdf, readhdf, glob, lshdf, filetype, fileformat and rmhdf. tohdf makes the object
 * the client describes from its named parts with the native constructors (segarray,
 * categorical, groupby, tag, index, dataframe), writes it with the native tohdf and deletes
 * what it made; readAllHdf runs the native readhdf and answers in Arkouda's forms, each
 * composite taken apart by the native unpack (Arkouda's client keeps composites on its side,
 * as names of their parts). tohdf runs on rank 0 (it asks the native info and get), each native
 * command on every rank; readAllHdf runs on every rank, its native commands within its call.
 * Paths may be absolute (ak_client_path, paths.c). */
#include "front/arkouda/parts.h"
#include "access.h"
#include "config.h"
#include "storage/files.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A native command `cmd` on one client path (made relative) as {path} (or {paths: [path]}
 * for glob); not_found saying that it "does not exist", the words Arkouda's client looks
 * for. */
static int native_on_path(ak_ctx *ctx, const char *cmd, const char *given, dispatch_result *res,
                          h5ark_error *err) {
    char rel[PATH_MAX];
    if (ak_client_path(given, false, rel, err)) return -1;
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

static char *groupby_of(ak_made *m, h5ark_error *err) {
    h5ark_value *args = ak_list_args(m, "key_names", "keys", err);
    if (!args) return NULL;
    static const char *const parts[] = {"permutation", "segments", "unique_key_idx"};
    for (int i = 0; i < 3; i++) {
        const char *name;
        if (ak_arg_str(m->ctx->in, parts[i], &name, err) ||
            h5ark_value_set(args, parts[i], h5ark_value_str(name))) {
            if (err->code == H5ARK_OK) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            h5ark_value_destroy(&args);
            return NULL;
        }
    }
    return ak_make(m, "groupby", args, err);
}

static char *dataframe_of(ak_made *m, h5ark_error *err) {
    h5ark_value *args = ak_list_args(m, "columns", "columns", err);
    h5ark_value *names = args ? ak_names_arg(m->ctx, "column_names", err) : NULL;
    const char *index = ak_arg(m->ctx->in, "index");
    if (!names || h5ark_value_set(args, "column_names", names) ||
        (index && h5ark_value_set(args, "index", h5ark_value_str(index)))) {
        if (names && err->code == H5ARK_OK) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        h5ark_value_destroy(&args);
        return NULL;
    }
    return ak_make(m, "dataframe", args, err);
}

/* The name of the object a tohdf describes, by its objType: one of the registry, or one
 * made from its parts by the native constructors (malloc'd). */
static char *object_to_write(ak_made *m, const char *type, h5ark_error *err) {
    static const struct {
        const char *type, *tag;
    } pdarrays[] = {{"pdarray", NULL},
                    {"Datetime", OBJECT_TAG_DATETIME},
                    {"Timedelta", OBJECT_TAG_TIMEDELTA},
                    {"IPv4", OBJECT_TAG_IPV4}};
    const ak_request *in = m->ctx->in;
    const char *values;
    for (size_t i = 0; i < sizeof pdarrays / sizeof pdarrays[0]; i++) {
        if (strcasecmp(type, pdarrays[i].type) != 0) continue;
        if (ak_arg_str(in, "values", &values, err)) return NULL;
        if (!pdarrays[i].tag) return ak_dup_name(values, err);
        return ak_make(m, "tag", ak_str_args("array", values, "tag", pdarrays[i].tag, NULL), err);
    }
    if (strcasecmp(type, "strings") == 0) {
        char ot[32];
        if (ak_arg_str(in, "values", &values, err) || ak_objtype_of(m->ctx, values, ot, NULL, err))
            return NULL;
        if (strcmp(ot, "strings") != 0) {
            h5ark_fail(err, H5ARK_TYPE_ERROR, "'values' must name Strings");
            return NULL;
        }
        return ak_dup_name(values, err);
    }
    if (strcasecmp(type, "SegArray") == 0) {
        const char *segs;
        if (ak_arg_str(in, "segments", &segs, err) || ak_arg_str(in, "values", &values, err))
            return NULL;
        return ak_make(m, "segarray", ak_str_args("segments", segs, "values", values, NULL), err);
    }
    if (strcasecmp(type, "categorical") == 0) {
        const char *codes, *cats;
        if (ak_arg_str(in, "codes", &codes, err) || ak_arg_str(in, "categories", &cats, err))
            return NULL;
        return ak_categorical_of(m, codes, cats, ak_arg(in, "NA_codes"), ak_arg(in, "permutation"),
                                 ak_arg(in, "segments"), err);
    }
    if (strcasecmp(type, "GroupBy") == 0) return groupby_of(m, err);
    if (strcasecmp(type, "Index") == 0 || strcasecmp(type, "MultiIndex") == 0)
        return ak_make(m, "index", ak_list_args(m, "idx", "levels", err), err);
    if (strcasecmp(type, "DataFrame") == 0) return dataframe_of(m, err);
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
 * object's parts}: the object the client describes, made from its parts by the native
 * constructors (deleted again after the write) when it is not one object of the registry,
 * written by the native tohdf. */
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
    if (ak_client_path(filename, false, rel, err)) return -1;
    ak_made m = {ctx, h5ark_value_array()};
    if (!m.made) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    char *name = object_to_write(&m, type, err);
    int rc = name ? 0 : -1;
    const char *mode = overwrite ? "update" : write_mode ? "append" : "truncate";
    if (rc == 0) rc = native_tohdf(ctx, name, dset, rel, mode, file_format, save_offsets, err);
    if (rc && name && overwrite && err->code == H5ARK_NOT_FOUND) {
        /* update_hdf of a dataset the files do not have yet: added */
        *err = (h5ark_error){0};
        rc = native_tohdf(ctx, name, dset, rel, "append", file_format, save_offsets, err);
    }
    ak_unmake(&m);
    h5ark_value_destroy(&m.made);
    free(name);
    return rc ? -1 : ak_reply(ctx, err, "Dataset written successfully!");
}

/* ---- readAllHdf: objects in Arkouda's forms ---- */

/* The dataset's item of the reply: its type and form. A composite the read made is first
 * taken apart by the native unpack (Arkouda's client holds composites as their parts). */
static json_t *item_of(ak_made *m, const char *dataset, const h5ark_value *desc, h5ark_error *err) {
    const char *type = ak_type_name(desc);
    if (!type) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "dataset %.200s is a %s, which Arkouda cannot hold",
                   dataset, ak_desc_str(desc, "objtype"));
        return NULL;
    }
    dispatch_result res = {0};
    if (!ak_is_leaf(desc)) {
        h5ark_value *args = ak_str_args("name", ak_desc_str(desc, "name"), NULL);
        int rc = args ? ak_native(m->ctx, "unpack", args, NULL, &res, err)
                      : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        h5ark_value_destroy(&args);
        if (rc) return NULL;
        desc = h5ark_value_get(res.result, "object");
        if (ak_made_leaves(m, desc, err)) {
            dispatch_result_free(&res);
            return NULL;
        }
    }
    char *form = ak_form_of(m, desc, err);
    json_t *item = form ? json_pack("{s:s,s:s,s:s}", "dataset_name", dataset, "arkouda_type", type,
                                    "created", form)
                        : NULL;
    if (form && !item) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(form);
    dispatch_result_free(&res);
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
    json_t *items = json_array();
    ak_made m = {ctx, h5ark_value_array()};
    int rc = -1;
    if (!names) goto out;
    if (!args || !paths || !sets || !items || !m.made) {
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
        if (ak_client_path(json_string_value(item), false, rel, err)) goto out;
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
    /* Filename_Codes first, then the datasets in order; the composites are taken apart
     * (Arkouda's client holds their parts) */
    rc = 0;
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        for (size_t k = 0; rc == 0 && k < h5ark_value_len(objects); k++) {
            const char *dataset = objects->as.m.keys[k];
            if ((strcmp(dataset, "Filename_Codes") == 0) != (pass == 0)) continue;
            json_t *it = item_of(&m, dataset, objects->as.m.vals[k], err);
            rc = it && json_array_append_new(items, it) == 0 ? 0 : -1;
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
    if (rc && res.result) {
        /* nothing of a failed read stays: what the read made, the parts taken apart so far
         * and the NA codes made (one by one: some are gone with their composite) */
        const h5ark_value *objs = h5ark_value_get(res.result, "objects");
        for (size_t k = 0; m.made && k < h5ark_value_len(objs); k++)
            h5ark_value_push(m.made, h5ark_value_str(ak_desc_str(objs->as.m.vals[k], "name")));
        for (size_t k = 0; k < h5ark_value_len(m.made); k++)
            ak_delete_quietly(ctx, h5ark_value_at(m.made, k)->as.s.ptr);
    }
    h5ark_value_destroy(&m.made);
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
    {"tohdf", cmd_tohdf, 0, RANKS_ZERO},
    {"readAllHdf", cmd_read_all, 0, RANKS_EVERY},
    {"lsany", cmd_lsany, AK_READ_ONLY, RANKS_ZERO},
    {"getfiletype", cmd_getfiletype, AK_READ_ONLY, RANKS_ZERO},
    {"hdffileformat", cmd_hdffileformat, AK_READ_ONLY, RANKS_ZERO},
    {"globExpansion", cmd_glob, AK_READ_ONLY, RANKS_ZERO},
    {"deleteMatchingFilenames", cmd_delete_files, 0, RANKS_ZERO},
    {0},
};
