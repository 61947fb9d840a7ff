/* Arkouda's client keeps a composite as the names of its parts: the dialect makes the
 * object those names describe with the native constructors (tohdf, register) and gives a
 * described object back in Arkouda's forms (readAllHdf, attach). */
#include "front/arkouda/parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run native constructor `cmd` (args taken; NULL: out of memory) and give the name of the
 * object it made, which joins m->made (malloc'd; NULL with err set). */
char *ak_make(ak_made *m, const char *cmd, h5ark_value *args, h5ark_error *err) {
    dispatch_result res;
    /* args NULL: building them failed (err set) or ran out of memory */
    int rc = args                    ? ak_native(m->ctx, cmd, args, NULL, &res, err)
             : err->code != H5ARK_OK ? -1
                                     : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value_destroy(&args);
    if (rc) return NULL;
    const char *name = ak_desc_str(h5ark_value_get(res.result, "object"), "name");
    /* the list holds it first, so that it goes again whatever follows */
    int bad = h5ark_value_push(m->made, h5ark_value_str(name));
    char *copy = bad ? NULL : strdup(name);
    if (!copy) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result_free(&res);
    return copy;
}

char *ak_dup_name(const char *name, h5ark_error *err) {
    char *copy = strdup(name);
    if (!copy) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return copy;
}

/* The objects `names` go, through the native delete; errors ignored. */
static void delete_names(ak_ctx *ctx, h5ark_value *names) {
    h5ark_value *args = h5ark_value_map();
    dispatch_result res;
    if (!args || h5ark_value_set(args, "names", names)) {
        if (!args) h5ark_value_destroy(&names);
    } else if (ak_native(ctx, "delete", args, NULL, &res, &(h5ark_error){0}) == 0) {
        dispatch_result_free(&res);
    }
    h5ark_value_destroy(&args);
}

void ak_delete_quietly(ak_ctx *ctx, const char *name) {
    h5ark_value *names = h5ark_value_array();
    if (names && h5ark_value_push(names, h5ark_value_str(name)) == 0)
        delete_names(ctx, names);
    else
        h5ark_value_destroy(&names);
}

/* The objects made go. */
void ak_unmake(ak_made *m) {
    if (h5ark_value_len(m->made)) delete_names(m->ctx, h5ark_value_copy(m->made));
}

/* The objtype of the object `name` (the native info) into out. */
int ak_objtype_of(ak_ctx *ctx, const char *name, char out[32], uint64_t *size, h5ark_error *err) {
    dispatch_result res;
    if (ak_describe(ctx, name, &res, err)) return -1;
    const h5ark_value *d = h5ark_value_at(h5ark_value_get(res.result, "objects"), 0);
    snprintf(out, 32, "%s", ak_desc_str(d, "objtype"));
    if (size) *size = ak_desc_uint(d, "size");
    dispatch_result_free(&res);
    return 0;
}

/* The first element of the int64 array `name` (a Categorical's NA code), read with the
 * native get. */
static int first_int64(ak_ctx *ctx, const char *name, int64_t *out, h5ark_error *err) {
    h5ark_value *args = ak_str_args("name", name, NULL);
    dispatch_result res;
    int rc = args && h5ark_value_set(args, "start", h5ark_value_uint(0)) == 0 &&
                     h5ark_value_set(args, "stop", h5ark_value_uint(1)) == 0
                 ? ak_native(ctx, "get", args, NULL, &res, err)
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value_destroy(&args);
    if (rc) {
        /* a range past an empty array: no code */
        return err->code == H5ARK_BAD_REQUEST
                   ? h5ark_fail(err, H5ARK_TYPE_ERROR,
                                "NA_codes must be an int64 array of one code")
                   : -1;
    }
    const h5ark_value *d = h5ark_value_get(res.result, "object");
    unsigned char bytes[8];
    size_t got = 0;
    for (size_t i = 0; i < res.nspans && got < 8; i++) {
        size_t take = res.spans[i].len < 8 - got ? (size_t)res.spans[i].len : 8 - got;
        memcpy(bytes + got, res.spans[i].ptr, take);
        got += take;
    }
    if (strcmp(ak_desc_str(d, "objtype"), "pdarray") != 0 ||
        strcmp(ak_desc_str(d, "dtype"), "int64") != 0 || got != 8)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "NA_codes must be an int64 array of one code");
    else
        memcpy(out, bytes, 8);
    dispatch_result_free(&res);
    return rc;
}

char *ak_categorical_of(ak_made *m, const char *codes, const char *cats, const char *na,
                        const char *perm, const char *segs, h5ark_error *err) {
    /* Arkouda's client sends "" for a grouping it does not have */
    if (na && !*na) na = NULL;
    if (perm && !*perm) perm = NULL;
    if (segs && !*segs) segs = NULL;
    if (!codes || !cats) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "a part is not named");
        return NULL;
    }
    char type[32];
    uint64_t ncats = 0;
    int64_t code = -1;
    if (ak_objtype_of(m->ctx, cats, type, &ncats, err)) return NULL;
    if (strcmp(type, "strings") != 0) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "a Categorical's categories must be Strings");
        return NULL;
    }
    if (na && first_int64(m->ctx, na, &code, err)) return NULL;
    h5ark_value *args =
        ak_str_args("codes", codes, "categories", cats, "permutation", perm && segs ? perm : NULL,
                    "segments", perm ? segs : NULL, NULL);
    /* a code outside the categories: the default NA value, "N/A" */
    if (args && code >= 0 && (uint64_t)code < ncats &&
        h5ark_value_set(args, "na_code", h5ark_value_int(code)))
        h5ark_value_destroy(&args);
    return ak_make(m, "categorical", args, err);
}

char *ak_part_of(ak_made *m, json_t *spec, h5ark_error *err) {
    json_t *owned = NULL;
    if (json_is_string(spec) && json_string_value(spec)[0] == '{')
        spec = owned = json_loads(json_string_value(spec), 0, NULL);
    char *name = NULL;
    if (json_is_string(spec)) {
        name = ak_dup_name(json_string_value(spec), err);
    } else if (!json_is_object(spec)) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "a part must be a name or a JSON object of names");
    } else if (json_object_get(spec, "codes")) {
        const char *na = json_string_value(json_object_get(spec, "NA_codes"));
        if (!na) na = json_string_value(json_object_get(spec, "_akNAcode"));
        name = ak_categorical_of(m, json_string_value(json_object_get(spec, "codes")),
                                 json_string_value(json_object_get(spec, "categories")), na,
                                 json_string_value(json_object_get(spec, "permutation")),
                                 json_string_value(json_object_get(spec, "segments")), err);
    } else {
        const char *segs = json_string_value(json_object_get(spec, "segments"));
        const char *vals = json_string_value(json_object_get(spec, "values"));
        name = segs && vals ? ak_make(m, "segarray",
                                      ak_str_args("segments", segs, "values", vals, NULL), err)
                            : (h5ark_fail(err, H5ARK_BAD_REQUEST, "a part is not named"), NULL);
    }
    json_decref(owned);
    return name;
}

/* The names of the parts listed in argument `key` (a native array of str), NULL with err
 * set. */
h5ark_value *ak_parts_of(ak_made *m, const char *key, h5ark_error *err) {
    json_t *list = json_loads(ak_arg(m->ctx->in, key) ? ak_arg(m->ctx->in, key) : "", 0, NULL);
    if (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > 4096) {
        json_decref(list);
        h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' must be a JSON list of 1 to 4096 parts",
                   key);
        return NULL;
    }
    h5ark_value *names = h5ark_value_array();
    if (!names) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        char *name = names ? ak_part_of(m, item, err) : NULL;
        if (!name || h5ark_value_push(names, h5ark_value_str(name))) {
            if (name) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            h5ark_value_destroy(&names);
        }
        free(name);
        if (!names) break;
    }
    json_decref(list);
    return names;
}

/* A constructor's args: the list of parts under `key`, with `arg` naming them natively. */
h5ark_value *ak_list_args(ak_made *m, const char *key, const char *arg, h5ark_error *err) {
    h5ark_value *names = ak_parts_of(m, key, err);
    if (!names) return NULL;
    h5ark_value *args = h5ark_value_map();
    if (!args || h5ark_value_set(args, arg, names)) {
        if (!args) h5ark_value_destroy(&names);
        h5ark_value_destroy(&args);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    return args;
}

bool ak_desc_is(const h5ark_value *d, const char *objtype) {
    return strcmp(ak_desc_str(d, "objtype"), objtype) == 0;
}

bool ak_is_leaf(const h5ark_value *d) {
    return ak_desc_is(d, "pdarray") || ak_desc_is(d, "arrayview") || ak_desc_is(d, "strings");
}

/* Arkouda's ObjType name of a described object, NULL for one Arkouda cannot hold. */
const char *ak_type_name(const h5ark_value *d) {
    static const struct {
        const char *objtype, *type;
    } types[] = {{"arrayview", "PDARRAY"}, {"strings", "STRINGS"},
                 {"segarray", "SEGARRAY"}, {"categorical", "CATEGORICAL"},
                 {"groupby", "GROUPBY"},   {"dataframe", "DATAFRAME"},
                 {"index", "INDEX"},       {"multiindex", "MULTIINDEX"}};
    if (ak_desc_is(d, "pdarray")) {
        const char *tag = ak_desc_str(d, "tag");
        return !*tag                                    ? "PDARRAY"
               : strcmp(tag, OBJECT_TAG_DATETIME) == 0  ? "DATETIME"
               : strcmp(tag, OBJECT_TAG_TIMEDELTA) == 0 ? "TIMEDELTA"
                                                        : "IPV4";
    }
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (ak_desc_is(d, types[i].objtype)) return types[i].type;
    return NULL;
}

/* The created text of a leaf part (a bigint too: its limbs are fetched by name). */
static char *leaf(const h5ark_value *d, h5ark_error *err) {
    return ak_created_of(d, "readhdf", err);
}

/* "<TYPE>+|+<form>", as nested parts are given */
json_t *ak_typed_form(ak_made *m, const h5ark_value *d, h5ark_error *err) {
    const char *type = ak_type_name(d);
    char *form = type ? ak_form_of(m, d, err) : NULL;
    if (!type)
        h5ark_fail(err, H5ARK_TYPE_ERROR, "a %s cannot be given to Arkouda's client",
                   ak_desc_str(d, "objtype"));
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
 * _akNAcode), made by the native create; it joins m->made. */
static char *one_int64(ak_made *m, int64_t v, h5ark_error *err) {
    h5ark_value *args = ak_str_args("dtype", "int64", "fill", "full", NULL);
    if (args && (h5ark_value_set(args, "size", h5ark_value_uint(1)) ||
                 h5ark_value_set(args, "value", h5ark_value_int(v))))
        h5ark_value_destroy(&args);
    dispatch_result res;
    int rc = args ? ak_native(m->ctx, "create", args, NULL, &res, err)
                  : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value_destroy(&args);
    if (rc) return NULL;
    const h5ark_value *desc = h5ark_value_get(res.result, "object");
    char *text = h5ark_value_push(m->made, h5ark_value_str(ak_desc_str(desc, "name")))
                     ? (h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), NULL)
                     : ak_created_of(desc, "create", err);
    dispatch_result_free(&res);
    return text;
}

/* The form of a part the native unpack described (each leaf under a name of its own): a
 * created text for arrays and Strings, the JSON text of a map or list of its parts' forms
 * for composites. */
char *ak_form_of(ak_made *m, const h5ark_value *d, h5ark_error *err) {
    if (ak_is_leaf(d)) return leaf(d, err);
    bool listed = ak_desc_is(d, "index") || ak_desc_is(d, "multiindex");
    json_t *out = listed ? json_array() : json_object();
    int rc = out ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    const h5ark_value *comps = h5ark_value_get(d, "components");
    for (size_t i = 0; rc == 0 && i < h5ark_value_len(comps); i++) {
        const char *name = comps->as.m.keys[i];
        const h5ark_value *part = comps->as.m.vals[i];
        if (ak_desc_is(d, "segarray") || ak_desc_is(d, "categorical")) {
            rc = put_form(out, name, leaf(part, err), err);
        } else if (ak_desc_is(d, "groupby")) {
            if (strncmp(name, "KEY_", 4) == 0) {
                json_t *t = ak_typed_form(m, part, err);
                rc = t ? json_object_set_new(out, name, t) : -1;
            } else {
                rc = put_form(out, strcmp(name, "unique_key_idx") == 0 ? "uki" : name,
                              leaf(part, err), err);
            }
        } else if (listed) {
            json_t *t = ak_typed_form(m, part, err);
            rc = t ? json_array_append_new(out, t) : -1;
        } else if (ak_desc_is(d, "dataframe")) {
            /* the index as its one level, as Arkouda's snapshot gives it */
            const h5ark_value *levels = h5ark_value_get(part, "components");
            const h5ark_value *p = strcmp(name, "Index") == 0 && ak_desc_is(part, "index") &&
                                           h5ark_value_len(levels) == 1
                                       ? levels->as.m.vals[0]
                                       : part;
            json_t *t = ak_typed_form(m, p, err);
            rc = t ? json_object_set_new(out, name, t) : -1;
        } else {
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "a %s cannot be given to Arkouda's client",
                            ak_desc_str(d, "objtype"));
        }
    }
    if (rc == 0 && ak_desc_is(d, "categorical")) {
        int64_t na = -1;
        h5ark_value_to_int64(h5ark_value_get(d, "na_code"), &na);
        rc = put_form(out, "_akNAcode", one_int64(m, na, err), err);
    }
    char *text = rc == 0 ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (rc == 0 && !text) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    json_decref(out);
    return text;
}

/* The names of the leaves of a described composite join m->made (so that a failed read
 * deletes them). */
int ak_made_leaves(ak_made *m, const h5ark_value *d, h5ark_error *err) {
    const h5ark_value *comps = h5ark_value_get(d, "components");
    for (size_t i = 0; i < h5ark_value_len(comps); i++) {
        const h5ark_value *part = comps->as.m.vals[i];
        int rc = ak_is_leaf(part)
                     ? h5ark_value_push(m->made, h5ark_value_str(ak_desc_str(part, "name")))
                     : ak_made_leaves(m, part, err);
        if (rc) return err->code ? -1 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    return 0;
}
