/* Arkouda's registry (its RegistrationMsg): register, attach, list_registry and unregister,
 * on the caller's namespace through the native register, info and unregister. A
 * registered name is a name of the caller's own. Arkouda's client registers a composite as
 * the names of its parts; the dialect makes the native composite they describe with the
 * native constructors (parts.h) and registers that, so the name holds the parts whatever
 * becomes of the client's temporaries; the client's names of the parts are kept too, as
 * Arkouda's registry keeps them (pins.h). attach gives it back in Arkouda's forms: an array
 * as the client's array, a composite's parts named by their component paths (`reg/codes`). Series
 * and BitVector, which have no objtype of their own, are kept as a native index whose last level's
 * name says so (a JSON object with the key "arkouda"), and a DataFrame's BitVector columns are
 * noted so on its index. attach of `OWNER/NAME` follows the share rules as every read does. */
#include "front/arkouda/parts.h"
#include "front/arkouda/pins.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The mark a native index's last level name holds (a JSON object whose "arkouda" says
 * what it keeps), and how many levels it has; NULL for none. */
static json_t *mark_of(const h5ark_value *d, size_t *nlevels) {
    if (!ak_desc_is(d, "index") && !ak_desc_is(d, "multiindex")) return NULL;
    const h5ark_value *names = h5ark_value_get(d, "names");
    size_t n = h5ark_value_len(names);
    const h5ark_value *last = n ? h5ark_value_at(names, n - 1) : NULL;
    json_t *mark = last && last->kind == H5ARK_STR ? json_loads(last->as.s.ptr, 0, NULL) : NULL;
    if (!json_is_string(json_object_get(mark, "arkouda"))) {
        json_decref(mark);
        return NULL;
    }
    if (nlevels) *nlevels = n;
    return mark;
}

/* What a native index keeps: NULL (a plain index), "SERIES" or "BITVECTOR" (then its width
 * and reverse). */
static const char *kept_kind(const h5ark_value *d, int64_t *width, bool *reverse) {
    size_t n = 0;
    json_t *mark = mark_of(d, &n);
    const char *kind = json_string_value(json_object_get(mark, "arkouda")), *out = NULL;
    if (kind && strcmp(kind, "Series") == 0 && n >= 2) {
        out = "SERIES";
    } else if (kind && strcmp(kind, "BitVector") == 0 && n == 1) {
        out = "BITVECTOR";
        if (width) *width = json_integer_value(json_object_get(mark, "width"));
        if (reverse) *reverse = json_is_true(json_object_get(mark, "reverse"));
    }
    json_decref(mark);
    return out;
}

/* Arkouda's ObjType of a described object: its own, or its native objtype in capitals
 * for one Arkouda's client cannot hold (an awkward array registered natively). */
static const char *kind_of(const h5ark_value *d, char buf[32]) {
    const char *kind = kept_kind(d, NULL, NULL);
    if (!kind) kind = ak_type_name(d);
    if (kind) return kind;
    snprintf(buf, 32, "%s", ak_desc_str(d, "objtype"));
    for (char *c = buf; *c; c++)
        if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
    return buf;
}

/* The argument `name`, described by the native info into res (its one descriptor in
 * *desc). */
static int described(ak_ctx *ctx, const char **name, dispatch_result *res, const h5ark_value **desc,
                     h5ark_error *err) {
    if (ak_arg_str(ctx->in, "name", name, err) || ak_describe(ctx, *name, res, err)) return -1;
    const h5ark_value *list = h5ark_value_get(res->result, "objects");
    *desc = h5ark_value_len(list) == 1 ? h5ark_value_at(list, 0) : NULL;
    if (*desc) return 0;
    dispatch_result_free(res);
    return h5ark_fail(err, H5ARK_INTERNAL, "info described no object");
}

/* A native command of one name argument (and `as`, when not NULL). */
static int native_named(ak_ctx *ctx, const char *cmd, const char *name, const char *as,
                        h5ark_error *err) {
    h5ark_value *args = ak_str_args("name", name, "as", as, NULL);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, cmd, args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc == 0) dispatch_result_free(&res);
    return rc;
}

/* ---- register: the object the client's parts describe ---- */

/* A count argument (num_keys, ...), when sent, must be how many `list_key` lists. */
static int count_agrees(ak_ctx *ctx, const char *count_key, const char *list_key, size_t n,
                        h5ark_error *err) {
    int64_t count;
    if (!ak_arg(ctx->in, count_key)) return 0;
    if (ak_arg_int(ctx->in, count_key, &count, err)) return -1;
    if (count != (int64_t)n)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' is %lld but '%s' lists %zu",
                          count_key, (long long)count, list_key, n);
    return 0;
}

/* A native index of `levels` (taken) whose last level's name is `mark` (NULL: no names). */
static char *index_of(ak_made *m, h5ark_value *levels, const char *mark, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map(), *names = mark ? h5ark_value_array() : NULL;
    for (size_t i = 0; names && i < h5ark_value_len(levels); i++)
        if (h5ark_value_push(names, h5ark_value_str(i + 1 < h5ark_value_len(levels) ? "" : mark)))
            h5ark_value_destroy(&names);
    bool bad = !args || (mark && !names);
    if (!bad) {
        bad = h5ark_value_set(args, "levels", levels) != 0;
        levels = NULL;
        bad = bad || (names && h5ark_value_set(args, "names", names));
        names = NULL;
    }
    h5ark_value_destroy(&levels);
    h5ark_value_destroy(&names);
    if (bad) {
        h5ark_value_destroy(&args);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    return ak_make(m, "index", args, err);
}

/* Index/MultiIndex {num_idxs, idx_names, idx_types}; Series adds {values, val_type}: the
 * index's levels, then the values, marked as a Series. */
static char *index_or_series(ak_made *m, bool series, h5ark_error *err) {
    h5ark_value *levels = ak_parts_of(m, "idx_names", err);
    if (!levels || count_agrees(m->ctx, "num_idxs", "idx_names", h5ark_value_len(levels), err)) {
        h5ark_value_destroy(&levels);
        return NULL;
    }
    if (series) {
        const char *values;
        json_t *spec = NULL;
        char *made = NULL;
        if (ak_arg_str(m->ctx->in, "values", &values, err) == 0 && !(spec = json_string(values)))
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        if (spec) made = ak_part_of(m, spec, err);
        json_decref(spec);
        if (made && h5ark_value_push(levels, h5ark_value_str(made)))
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        free(made);
        if (err->code != H5ARK_OK) {
            h5ark_value_destroy(&levels);
            return NULL;
        }
    }
    return index_of(m, levels, series ? "{\"arkouda\":\"Series\"}" : NULL, err);
}

/* BitVector {values, width, reverse} (Fields registers as one) */
static char *bitvector_of(ak_made *m, h5ark_error *err) {
    const char *values;
    int64_t width;
    bool reverse;
    if (ak_arg_str(m->ctx->in, "values", &values, err) ||
        ak_arg_int(m->ctx->in, "width", &width, err) ||
        ak_arg_bool(m->ctx->in, "reverse", &reverse, err))
        return NULL;
    if (width < 1 || width > 64) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'width' must be 1 to 64 bits, not %lld",
                   (long long)width);
        return NULL;
    }
    char mark[96];
    snprintf(mark, sizeof mark, "{\"arkouda\":\"BitVector\",\"width\":%lld,\"reverse\":%s}",
             (long long)width, reverse ? "true" : "false");
    h5ark_value *levels = h5ark_value_array();
    if (levels && h5ark_value_push(levels, h5ark_value_str(values))) h5ark_value_destroy(&levels);
    if (!levels) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    return index_of(m, levels, mark, err);
}

/* The tag of Arkouda's array ObjTypes that are tagged pdarrays ("" for pdarray, NULL for
 * none of them). */
static const char *tag_of(const char *type) {
    static const struct {
        const char *type, *tag;
    } tags[] = {{"pdarray", ""},
                {"Datetime", OBJECT_TAG_DATETIME},
                {"Timedelta", OBJECT_TAG_TIMEDELTA},
                {"IPv4", OBJECT_TAG_IPV4}};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (strcasecmp(type, tags[i].type) == 0) return tags[i].tag;
    return NULL;
}

/* The array `name` as Arkouda's ObjType `type` has it: tagged (a twin the native tag
 * makes) for Datetime, Timedelta and IPv4. */
static char *array_as(ak_made *m, const char *name, const char *type, h5ark_error *err) {
    const char *tag = tag_of(type);
    if (!tag || !*tag) return ak_dup_name(name, err);
    return ak_make(m, "tag", ak_str_args("array", name, "tag", tag, NULL), err);
}

/* A DataFrame's BitVector column, JSON {"name", "width", "reverse"} (col): its values'
 * name (malloc'd), its width and order noted in bits under its column name. */
static char *bitvector_column(const char *column, json_t *col, json_t *bits, h5ark_error *err) {
    json_t *spec = json_loads(json_string_value(col) ? json_string_value(col) : "", 0, NULL);
    json_t *w = json_object_get(spec, "width"), *r = json_object_get(spec, "reverse");
    const char *values = json_string_value(json_object_get(spec, "name"));
    char *name = NULL;
    if (!values || !json_is_integer(w) || !json_is_boolean(r) || json_integer_value(w) < 1 ||
        json_integer_value(w) > 64)
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "column '%.200s' is a BitVector: a JSON object {\"name\", \"width\" (1 to "
                   "64), \"reverse\"}",
                   column);
    else if (json_object_set_new(bits, column, json_pack("[O,O]", w, r)) == 0)
        name = ak_dup_name(values, err);
    else
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    json_decref(spec);
    return name;
}

/* The one-level index of `idx` whose name marks the DataFrame's BitVector columns. */
static char *marked_index(ak_made *m, const char *idx, json_t *bits, h5ark_error *err) {
    json_t *mark = json_pack("{s:s,s:O}", "arkouda", "DataFrame", "BitVector", bits);
    char *text = mark ? json_dumps(mark, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(mark);
    h5ark_value *levels = h5ark_value_array();
    if (levels && h5ark_value_push(levels, h5ark_value_str(idx))) h5ark_value_destroy(&levels);
    char *made = NULL;
    if (!text || !levels) {
        h5ark_value_destroy(&levels);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    } else {
        made = index_of(m, levels, text, err);
    }
    free(text);
    return made;
}

/* DataFrame {idx, num_cols, column_names, columns, col_objTypes}: its columns (names, or
 * JSON objects of a Categorical's or SegArray's parts) and its index. */
static char *dataframe_of(ak_made *m, h5ark_error *err) {
    const char *idx;
    json_t *cols = NULL, *types = NULL, *bits = json_object();
    h5ark_value *args = h5ark_value_map(), *names = NULL, *parts = h5ark_value_array();
    char *made = NULL, *index = NULL, ot[32];
    if (!args || !parts || !bits) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    if (ak_arg_str(m->ctx->in, "idx", &idx, err) ||
        !(cols = ak_arg_list(m->ctx->in, "columns", err)) ||
        !(types = ak_arg_list(m->ctx->in, "col_objTypes", err)) ||
        !(names = ak_names_arg(m->ctx, "column_names", err)) ||
        count_agrees(m->ctx, "num_cols", "columns", json_array_size(cols), err))
        goto out;
    if (json_array_size(types) != json_array_size(cols) ||
        h5ark_value_len(names) != json_array_size(cols)) {
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "arguments 'columns', 'column_names' and 'col_objTypes' list %zu, %zu and %zu",
                   json_array_size(cols), h5ark_value_len(names), json_array_size(types));
        goto out;
    }
    /* the index: Arkouda's client sends the one array of a plain Index */
    if (ak_objtype_of(m->ctx, idx, ot, NULL, err)) goto out;
    if (strcmp(ot, "pdarray") != 0 && strcmp(ot, "strings") != 0) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "argument 'idx' names a %s, not a pdarray or Strings",
                   ot);
        goto out;
    }
    size_t i;
    json_t *col;
    json_array_foreach(cols, i, col) {
        const char *type = json_string_value(json_array_get(types, i));
        char *part = type && strcasecmp(type, "BitVector") == 0
                         ? bitvector_column(h5ark_value_at(names, i)->as.s.ptr, col, bits, err)
                         : ak_part_of(m, col, err);
        char *name = part && type ? array_as(m, part, type, err) : part;
        if (name != part) free(part);
        if (!name) goto out;
        int bad = h5ark_value_push(parts, h5ark_value_str(name));
        free(name);
        if (bad) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
    }
    /* BitVector columns: their widths and orders ride on the index's name */
    if (json_object_size(bits) && !(index = marked_index(m, idx, bits, err))) goto out;
    if (h5ark_value_set(args, "columns", parts) | h5ark_value_set(args, "column_names", names) ||
        h5ark_value_set(args, "index", h5ark_value_str(index ? index : idx))) {
        parts = names = NULL;
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    parts = names = NULL;
    made = ak_make(m, "dataframe", args, err);
    args = NULL;
out:
    h5ark_value_destroy(&args);
    h5ark_value_destroy(&names);
    h5ark_value_destroy(&parts);
    json_decref(cols);
    json_decref(types);
    json_decref(bits);
    free(index);
    return made;
}

/* GroupBy {segments, permutation, uki, num_keys, keys, key_objTypes}: the grouping given,
 * kept as it is (the native groupby checks it). */
static char *groupby_of(ak_made *m, h5ark_error *err) {
    h5ark_value *args = ak_list_args(m, "keys", "keys", err);
    if (!args || count_agrees(m->ctx, "num_keys", "keys",
                              h5ark_value_len(h5ark_value_get(args, "keys")), err)) {
        h5ark_value_destroy(&args);
        return NULL;
    }
    static const char *const parts[][2] = {
        {"permutation", "permutation"}, {"segments", "segments"}, {"uki", "unique_key_idx"}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const char *name;
        if (ak_arg_str(m->ctx->in, parts[i][0], &name, err) ||
            h5ark_value_set(args, parts[i][1], h5ark_value_str(name))) {
            if (err->code == H5ARK_OK) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            h5ark_value_destroy(&args);
            return NULL;
        }
    }
    return ak_make(m, "groupby", args, err);
}

/* The name of the object to register as Arkouda's ObjType `type` (malloc'd): the array
 * given, or one made from the parts given; *said: how Arkouda's server names the type in
 * its answer. */
static char *object_to_register(ak_made *m, const char *type, const char **said, h5ark_error *err) {
    static const char *const arrays[] = {"PDARRAY", "STRINGS", "DATETIME", "TIMEDELTA", "IPV4"};
    const ak_request *in = m->ctx->in;
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        const char *array;
        if (strcasecmp(type, arrays[i]) != 0) continue;
        *said = arrays[i];
        return ak_arg_str(in, "array", &array, err) ? NULL : array_as(m, array, type, err);
    }
    if (strcasecmp(type, "SegArray") == 0) {
        const char *segs, *values;
        *said = "SegArray";
        if (ak_arg_str(in, "segments", &segs, err) || ak_arg_str(in, "values", &values, err))
            return NULL;
        return ak_make(m, "segarray", ak_str_args("segments", segs, "values", values, NULL), err);
    }
    if (strcasecmp(type, "Categorical") == 0) {
        const char *codes, *cats, *na;
        *said = "Categorical";
        if (ak_arg_str(in, "codes", &codes, err) || ak_arg_str(in, "categories", &cats, err) ||
            ak_arg_str(in, "_akNAcode", &na, err))
            return NULL;
        return ak_categorical_of(m, codes, cats, na, ak_arg(in, "permutation"),
                                 ak_arg(in, "segments"), err);
    }
    if (strcasecmp(type, "GroupBy") == 0) return *said = "GroupBy", groupby_of(m, err);
    if (strcasecmp(type, "DataFrame") == 0) return *said = "DataFrame", dataframe_of(m, err);
    if (strcasecmp(type, "Index") == 0 || strcasecmp(type, "MultiIndex") == 0)
        return *said = "Index", index_or_series(m, false, err);
    if (strcasecmp(type, "Series") == 0) return *said = "Series", index_or_series(m, true, err);
    if (strcasecmp(type, "BitVector") == 0) return *said = "BitVector", bitvector_of(m, err);
    h5ark_fail(err, H5ARK_BAD_REQUEST,
               "ObjType Not Supported by Registry: %.60s (this server registers pdarray, "
               "Strings, Datetime, Timedelta, IPv4, SegArray, Categorical, GroupBy, DataFrame, "
               "Index, MultiIndex, Series and BitVector)",
               type);
    return NULL;
}

/* register {name, objType, and the object's parts as Arkouda's client sends them}: the
 * object under the caller's name `name`; what was made on the way goes again */
static int cmd_register(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *type, *said = "";
    if (ak_arg_str(ctx->in, "name", &name, err) || ak_arg_str(ctx->in, "objType", &type, err))
        return -1;
    ak_made m = {ctx, h5ark_value_array()};
    json_t *parts = ak_pins_of_request(ctx->in);
    if (!m.made || !parts) {
        h5ark_value_destroy(&m.made);
        json_decref(parts);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    char *made = object_to_register(&m, type, &said, err);
    int rc = made ? native_named(ctx, "register", made, name, err) : -1;
    ak_unmake(&m);
    h5ark_value_destroy(&m.made);
    free(made);
    if (rc) {
        json_decref(parts);
        return -1;
    }
    /* the client's names of the parts: Components, kept from delete and clear */
    if (ak_pins_set(name, parts)) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return ak_reply(ctx, err, "Registered %s", said);
}

/* ---- attach: the registered object in Arkouda's forms ---- */

static char *json_text(json_t *value, h5ark_error *err) {
    char *text = value ? json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(value);
    if (!text) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return text;
}

/* Series: {"index": JSON list of its levels' typed forms, "value": typed form} */
static char *series_form(ak_made *m, const h5ark_value *d, h5ark_error *err) {
    const h5ark_value *levels = h5ark_value_get(d, "components");
    size_t n = h5ark_value_len(levels);
    json_t *index = json_array();
    int rc = index ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i + 1 < n; i++) {
        json_t *t = ak_typed_form(m, levels->as.m.vals[i], err);
        rc = t ? json_array_append_new(index, t) : -1;
    }
    char *text = rc == 0 ? json_text(index, err) : (json_decref(index), NULL);
    json_t *value = text ? ak_typed_form(m, levels->as.m.vals[n - 1], err) : NULL;
    json_t *out = value ? json_pack("{s:s,s:o}", "index", text, "value", value) : NULL;
    free(text);
    return value ? json_text(out, err) : NULL;
}

/* BitVector: {"values": created text, "width", "reverse"}, as Arkouda's server gives them
 * (strings: "64", "false"), of its values described by d */
static char *bitvector_form(const h5ark_value *d, int64_t width, bool reverse, h5ark_error *err) {
    char *values = ak_created_of(d, "info", err), w[24];
    if (!values) return NULL;
    snprintf(w, sizeof w, "%lld", (long long)width);
    json_t *out = json_pack("{s:s,s:s,s:s}", "values", values, "width", w, "reverse",
                            reverse ? "true" : "false");
    free(values);
    return json_text(out, err);
}

/* A BitVector kept as a one-level index */
static char *bitvector_of_index(const h5ark_value *d, h5ark_error *err) {
    int64_t width = 64;
    bool reverse = false;
    kept_kind(d, &width, &reverse);
    return bitvector_form(h5ark_value_get(d, "components")->as.m.vals[0], width, reverse, err);
}

/* A DataFrame's BitVector column: "BITVECTOR+|+<form>" */
static json_t *bitvector_typed(const h5ark_value *d, json_t *spec, h5ark_error *err) {
    char *form = bitvector_form(d, json_integer_value(json_array_get(spec, 0)),
                                json_is_true(json_array_get(spec, 1)), err);
    char *text = NULL;
    json_t *s = form && asprintf(&text, "BITVECTOR+|+%s", form) >= 0 ? json_string(text) : NULL;
    if (form && !s) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(form);
    free(text);
    return s;
}

/* DataFrame: {"<column>": typed form, ...} and "Index" when it is one array, which
 * Arkouda's client takes as the frame's index (its server leaves the index out) */
static char *dataframe_form(ak_made *m, const h5ark_value *d, h5ark_error *err) {
    const h5ark_value *comps = h5ark_value_get(d, "components");
    json_t *out = json_object();
    json_t *mark = mark_of(h5ark_value_get(comps, "Index"), NULL);
    json_t *bits = json_object_get(mark, "BitVector");
    int rc = out ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < h5ark_value_len(comps); i++) {
        const char *name = comps->as.m.keys[i];
        const h5ark_value *part = comps->as.m.vals[i];
        if (strcmp(name, "Index") == 0) {
            const h5ark_value *levels = h5ark_value_get(part, "components");
            if (h5ark_value_len(levels) != 1 || !ak_is_leaf(levels->as.m.vals[0])) continue;
            part = levels->as.m.vals[0];
        }
        json_t *spec = strcmp(name, "Index") ? json_object_get(bits, name) : NULL;
        json_t *t = spec && ak_is_leaf(part) ? bitvector_typed(part, spec, err)
                                             : ak_typed_form(m, part, err);
        rc = t ? json_object_set_new(out, name, t) : -1;
    }
    json_decref(mark);
    if (rc) {
        json_decref(out);
        return NULL;
    }
    return json_text(out, err);
}

/* The created text of the client's array the caller's registered array `name` (described
 * by d) keeps, as Arkouda's attach names it; NULL when it keeps none (one restored from a
 * checkpoint, another's) or that name holds another array now. */
static char *kept_array(ak_ctx *ctx, const char *name, const h5ark_value *d) {
    json_t *kept = strchr(name, '/') ? NULL : ak_pins_get(name);
    const char *array =
        json_array_size(kept) == 1 ? json_string_value(json_array_get(kept, 0)) : NULL;
    dispatch_result res;
    h5ark_error ignore = {0};
    char *text = NULL;
    if (array && ak_describe(ctx, array, &res, &ignore) == 0) {
        const h5ark_value *a = h5ark_value_at(h5ark_value_get(res.result, "objects"), 0);
        if (a && ak_is_leaf(a) && ak_desc_uint(a, "size") == ak_desc_uint(d, "size") &&
            strcmp(ak_desc_str(a, "dtype"), ak_desc_str(d, "dtype")) == 0)
            text = ak_created(a);
        dispatch_result_free(&res);
    }
    json_decref(kept);
    return text;
}

/* attach {name}: {"objType", "create"} as Arkouda's server answers; an array the client
 * registered is its own array again; a composite's parts are named by their paths; a
 * Categorical's _akNAcode is a new one-element array (the client's, as every array it is
 * told of) */
static int cmd_attach(ak_ctx *ctx, h5ark_error *err) {
    const char *name;
    dispatch_result res;
    const h5ark_value *d;
    if (described(ctx, &name, &res, &d, err)) return -1;
    char buf[32];
    const char *type = kind_of(d, buf), *kept = kept_kind(d, NULL, NULL);
    ak_made m = {ctx, h5ark_value_array()};
    char *form = NULL;
    if (!m.made)
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    else if (!ak_type_name(d))
        h5ark_fail(err, H5ARK_BAD_REQUEST, "'%.300s' is a %s, which Arkouda's client cannot attach",
                   name, ak_desc_str(d, "objtype"));
    else if (kept && strcmp(kept, "SERIES") == 0)
        form = series_form(&m, d, err);
    else if (kept)
        form = bitvector_of_index(d, err);
    else if (ak_desc_is(d, "dataframe"))
        form = dataframe_form(&m, d, err);
    else if (!ak_is_leaf(d) || !(form = kept_array(ctx, name, d)))
        form = ak_form_of(&m, d, err);
    json_t *reply = form ? json_pack("{s:s,s:s}", "objType", type, "create", form) : NULL;
    free(form);
    dispatch_result_free(&res);
    if (!reply && m.made) ak_unmake(&m);
    h5ark_value_destroy(&m.made);
    if (!reply && err->code != H5ARK_OK) return -1;
    return ak_reply_value(ctx, reply, err);
}

/* unregister {name}: the caller's registered name goes */
static int cmd_unregister(ak_ctx *ctx, h5ark_error *err) {
    const char *name;
    dispatch_result res;
    const h5ark_value *d;
    if (described(ctx, &name, &res, &d, err)) return -1;
    char buf[32], type[32];
    snprintf(type, sizeof type, "%s", kind_of(d, buf));
    dispatch_result_free(&res);
    if (native_named(ctx, "unregister", name, NULL, err)) return -1;
    ak_pins_drop(name);
    return ak_reply(ctx, err, "Unregistered %s %s", type, name);
}

/* The names of the leaves of a described composite, as attach names its parts. */
static void leaves_of(const h5ark_value *d, json_t *out) {
    const h5ark_value *comps = h5ark_value_get(d, "components");
    for (size_t i = 0; i < h5ark_value_len(comps); i++) {
        const h5ark_value *part = comps->as.m.vals[i];
        if (ak_is_leaf(part))
            json_array_append_new(out, json_string(ak_desc_str(part, "name")));
        else
            leaves_of(part, out);
    }
}

/* list_registry: the caller's registered names, {"Objects", "Object_Types", "Components"}
 * each a JSON text, as Arkouda's server answers; Components are the client's names of the
 * parts it registered (pins.h) */
static int cmd_list_registry(ak_ctx *ctx, h5ark_error *err) {
    dispatch_result res;
    if (ak_list_objects(ctx, &res, err)) return -1;
    json_t *names = json_array(), *types = json_array(), *parts = json_array();
    const h5ark_value *list = h5ark_value_get(res.result, "objects");
    for (size_t i = 0; names && types && parts && i < h5ark_value_len(list); i++) {
        const h5ark_value *d = h5ark_value_at(list, i), *reg = h5ark_value_get(d, "registered");
        const h5ark_value *n = h5ark_value_get(d, "name");
        /* the caller's own: others' shared names carry their owner */
        if (!reg || !n || n->kind != H5ARK_STR || strchr(n->as.s.ptr, '/')) continue;
        char buf[32];
        json_array_append_new(names, json_string(n->as.s.ptr));
        json_array_append_new(types, json_string(kind_of(d, buf)));
        /* the client's names of its parts; without them (a restored name), the paths
         * attach names a composite's parts by (a bigint's limbs are no parts) */
        json_t *kept = ak_pins_get(n->as.s.ptr);
        if (kept)
            json_array_extend(parts, kept);
        else if (!ak_is_leaf(d))
            leaves_of(d, parts);
        json_decref(kept);
    }
    dispatch_result_free(&res);
    char *objects = names ? json_dumps(names, JSON_COMPACT) : NULL;
    char *objtypes = types ? json_dumps(types, JSON_COMPACT) : NULL;
    char *components = parts ? json_dumps(parts, JSON_COMPACT) : NULL;
    json_decref(names);
    json_decref(types);
    json_decref(parts);
    json_t *reply = objects && objtypes && components
                        ? json_pack("{s:s,s:s,s:s}", "Objects", objects, "Object_Types", objtypes,
                                    "Components", components)
                        : NULL;
    free(objects);
    free(objtypes);
    free(components);
    return ak_reply_value(ctx, reply, err);
}

const ak_command ak_registry_commands[] = {
    {"register", cmd_register, 0, RANKS_ZERO},
    {"attach", cmd_attach, AK_READ_ONLY, RANKS_ZERO},
    {"unregister", cmd_unregister, 0, RANKS_ZERO},
    {"list_registry", cmd_list_registry, AK_READ_ONLY, RANKS_ZERO},
    {0},
};
