/* Strings commands of the Arkouda dialect, as its Strings and Categorical code sends them:
 * randomStrings segmentedIndex segmentedBinopvv segmentedBinopvs concatenateStr
 * segmentedSplit. They only translate: Arkouda's arguments checked and given to the native
 * random_strings, get, slice, take, compare, concatenate and split (commands/strings_ops.c,
 * commands/select.c), whose objects are replied as Arkouda's "created" text. */
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"

#include <stdlib.h>
#include <string.h>

static int strings_arg(ak_ctx *ctx, const char *key, ak_array *out, h5ark_error *err) {
    return ak_object_arg(ctx, key, H5ARK_STRINGS, out, err);
}

/* randomStrings {size, dist uniform|lognormal, chars, arg1, arg2, seed}: the native
 * random_strings (seed None: none). */
static int cmd_random_strings(ak_ctx *ctx, h5ark_error *err) {
    uint64_t n;
    const char *dist, *chars;
    double a1, a2;
    if (ak_arg_uint(ctx->in, "size", &n, err) || ak_arg_str(ctx->in, "dist", &dist, err) ||
        ak_arg_str(ctx->in, "chars", &chars, err) || ak_arg_double(ctx->in, "arg1", &a1, err) ||
        ak_arg_double(ctx->in, "arg2", &a2, err))
        return -1;
    const char *seedtext = ak_arg(ctx->in, "seed");
    int64_t seed = -1;
    if (seedtext && strcmp(seedtext, "None") != 0 && !ak_parse_int(seedtext, &seed))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'seed' must be an int64");
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "size", h5ark_value_uint(n)) ||
                 h5ark_value_set(args, "dist", h5ark_value_str(dist)) ||
                 h5ark_value_set(args, "chars", h5ark_value_str(chars)) ||
                 h5ark_value_set(args, "arg1", h5ark_value_float(a1)) ||
                 h5ark_value_set(args, "arg2", h5ark_value_float(a2)) ||
                 (seed >= 0 && h5ark_value_set(args, "seed", h5ark_value_int(seed)))))
        h5ark_value_destroy(&args);
    return ak_native_created(ctx, "random_strings", args, err);
}

/* The native compare of Strings `obj` with Strings `other` or a text, op == or !=. */
static int compare(ak_ctx *ctx, const char *other, const char *text, size_t text_len,
                   h5ark_error *err) {
    const char *op, *obj;
    if (ak_arg_str(ctx->in, "op", &op, err) || ak_arg_str(ctx->in, "obj", &obj, err)) return -1;
    if (strcmp(op, "==") != 0 && strcmp(op, "!=") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "strings compare with == and != only, not %.20s",
                          op);
    h5ark_value *args = h5ark_value_map();
    if (args &&
        (h5ark_value_set(args, "strings", h5ark_value_str(obj)) ||
         h5ark_value_set(args, "op", h5ark_value_str(op)) ||
         h5ark_value_set(args, other ? "other" : "text",
                         other ? h5ark_value_str(other) : h5ark_value_strn(text, text_len))))
        h5ark_value_destroy(&args);
    return ak_native_created(ctx, "compare", args, err);
}

/* segmentedBinopvv {op, objType, obj, otherType, other, left, delim} */
static int cmd_binopvv(ak_ctx *ctx, h5ark_error *err) {
    const char *other;
    if (ak_arg_str(ctx->in, "other", &other, err)) return -1;
    return compare(ctx, other, NULL, 0, err);
}

/* segmentedBinopvs {op, objType, obj, otherType, other (the string)} */
static int cmd_binopvs(ak_ctx *ctx, h5ark_error *err) {
    const char *text;
    size_t text_len;
    if (ak_arg_bytes(ctx->in, "other", &text, &text_len, err)) return -1;
    return compare(ctx, NULL, text, text_len, err);
}

/* The bytes of string w of `name` through the native get, as Arkouda's reply "item str
 * <JSON string>" (its length from the offsets: NULs are data). */
static int string_item(ak_ctx *ctx, const char *name, uint64_t w, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (!args || h5ark_value_set(args, "name", h5ark_value_str(name)) ||
        h5ark_value_set(args, "start", h5ark_value_uint(w)) ||
        h5ark_value_set(args, "stop", h5ark_value_uint(w + 1))) {
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    dispatch_result res;
    int rc = ak_native(ctx, "get", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    /* the buffers back to back: segments (one offset), then the string and its NUL */
    uint64_t seg = 0, total = 0, got = 0;
    for (size_t i = 0; i < h5ark_value_len(res.buffers); i++) {
        const h5ark_value *b = h5ark_value_at(res.buffers, i), *nm = h5ark_value_get(b, "name");
        uint64_t n = 0;
        h5ark_value_to_uint64(h5ark_value_get(b, "nbytes"), &n);
        if (nm && nm->kind == H5ARK_STR && strcmp(nm->as.s.ptr, "segments") == 0) seg = total + n;
        total += n;
    }
    char *all = malloc(total ? total : 1);
    for (size_t i = 0; all && i < res.nspans; i++) {
        memcpy(all + got, res.spans[i].ptr, res.spans[i].len);
        got += res.spans[i].len;
    }
    dispatch_result_free(&res);
    if (!all) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (got != total || total <= seg)
        rc =
            h5ark_fail(err, H5ARK_INTERNAL, "get gave string %llu no bytes", (unsigned long long)w);
    json_t *str = rc == 0 ? json_stringn(all + seg, total - seg - 1) : NULL;
    char *text = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
    if (rc == 0)
        rc = text ? ak_reply(ctx, err, "item str %s", text)
                  : h5ark_fail(err, H5ARK_BAD_REQUEST, "string %llu is not UTF-8",
                               (unsigned long long)w);
    free(text);
    json_decref(str);
    free(all);
    return rc;
}

/* segmentedIndex {subcmd intIndex|sliceIndex|pdarrayIndex, objType, dtype, obj, key}: the
 * native get (one string), slice or take. */
static int cmd_index(ak_ctx *ctx, h5ark_error *err) {
    const char *sub, *key, *name;
    if (ak_arg_str(ctx->in, "subcmd", &sub, err) || ak_arg_str(ctx->in, "key", &key, err) ||
        ak_arg_str(ctx->in, "obj", &name, err))
        return -1;
    ak_array s;
    if (strings_arg(ctx, "obj", &s, err)) return -1;
    int64_t size = (int64_t)s.size;
    h5ark_value *args = NULL;
    if (strcmp(sub, "intIndex") == 0) {
        int64_t i;
        if (!ak_parse_int(key, &i))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'key' must be an int64");
        int64_t w = i < 0 ? i + size : i;
        if (w < 0 || w >= size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "index %lld is out of bounds for %llu",
                              (long long)i, (unsigned long long)size);
        return string_item(ctx, name, (uint64_t)w, err);
    }
    if (strcmp(sub, "sliceIndex") == 0) {
        /* key: a JSON list [start, stop, stride] (strings or numbers) */
        json_t *list = json_loads(key, 0, NULL);
        int64_t v[3];
        bool ok = json_is_array(list) && json_array_size(list) == 3;
        for (size_t k = 0; ok && k < 3; k++) {
            json_t *e = json_array_get(list, k);
            ok = json_is_integer(e) ? (v[k] = json_integer_value(e), true)
                                    : ak_parse_int(json_string_value(e), &v[k]);
        }
        json_decref(list);
        uint64_t n = 0;
        if (!ok || v[2] == 0 || v[0] < -1 || v[0] > size || v[1] < -1 || v[1] > size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "'key' must be [start, stop, stride] within %lld", (long long)size);
        if (v[2] > 0 && v[1] > v[0])
            n = (uint64_t)((v[1] - v[0] - 1) / v[2]) + 1;
        else if (v[2] < 0 && v[0] > v[1])
            n = (uint64_t)((v[0] - v[1] - 1) / -v[2]) + 1;
        if (n && (v[0] < 0 || v[0] >= size || v[0] + (int64_t)(n - 1) * v[2] < 0 ||
                  v[0] + (int64_t)(n - 1) * v[2] >= size))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "the slice is outside the Strings");
        args = h5ark_value_map();
        if (args && (h5ark_value_set(args, "array", h5ark_value_str(name)) ||
                     h5ark_value_set(args, "start", h5ark_value_int(v[0])) ||
                     h5ark_value_set(args, "stop", h5ark_value_int(v[1])) ||
                     h5ark_value_set(args, "step", h5ark_value_int(v[2]))))
            h5ark_value_destroy(&args);
        return ak_native_created(ctx, "slice", args, err);
    }
    if (strcmp(sub, "pdarrayIndex") == 0) {
        args = h5ark_value_map();
        if (args && (h5ark_value_set(args, "array", h5ark_value_str(name)) ||
                     h5ark_value_set(args, "index", h5ark_value_str(key))))
            h5ark_value_destroy(&args);
        return ak_native_created(ctx, "take", args, err);
    }
    return h5ark_fail(err, H5ARK_BAD_REQUEST, "unknown subcmd '%.40s'", sub);
}

/* concatenateStr {objType Strings, names, mode}: the Strings end to end (interleave, which
 * Arkouda allows to reorder, is the same here): the native concatenate. */
static int cmd_concatenate(ak_ctx *ctx, h5ark_error *err) {
    h5ark_value *names = ak_names_arg(ctx, "names", err);
    if (!names) return -1;
    /* every part Strings (the native concatenate joins arrays too): the native info */
    h5ark_value *info = h5ark_value_map();
    if (info && h5ark_value_set(info, "names", h5ark_value_copy(names))) h5ark_value_destroy(&info);
    dispatch_result res = {0};
    int rc = !info                    ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
             : h5ark_value_len(names) ? ak_native(ctx, "info", info, NULL, &res, err)
                                      : 0;
    const h5ark_value *objs = h5ark_value_get(res.result, "objects");
    for (size_t k = 0; rc == 0 && k < h5ark_value_len(objs); k++) {
        const h5ark_value *d = h5ark_value_at(objs, k);
        if (strcmp(ak_desc_str(d, "objtype"), "strings") != 0)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is not Strings", ak_desc_str(d, "name"));
    }
    dispatch_result_free(&res);
    h5ark_value_destroy(&info);
    if (rc) {
        h5ark_value_destroy(&names);
        return -1;
    }
    if (h5ark_value_len(names) == 0) { /* no parts: empty Strings */
        h5ark_value_destroy(&names);
        return ak_strings_put(ctx, err);
    }
    h5ark_value *args = h5ark_value_map();
    if (!args) h5ark_value_destroy(&names);
    /* the map takes the names, also when setting fails */
    if (args && h5ark_value_set(args, "names", names)) h5ark_value_destroy(&args);
    return ak_native_created(ctx, "concatenate", args, err);
}

/* segmentedSplit {parent_name, objtype Matcher, max, return_segs, pattern}: each string
 * split at the pattern (at most `max` splits; 0: all), the pieces as new Strings and,
 * with return_segs, the index of each string's first piece: the native split. Literal
 * patterns only: regular expressions are refused. */
static int cmd_split(ak_ctx *ctx, h5ark_error *err) {
    const char *pattern, *parent;
    int64_t max = 0;
    bool segs_too = false;
    if (ak_arg_str(ctx->in, "pattern", &pattern, err) ||
        ak_arg_str(ctx->in, "parent_name", &parent, err) ||
        (ak_arg(ctx->in, "max") && ak_arg_int(ctx->in, "max", &max, err)) ||
        (ak_arg(ctx->in, "return_segs") && ak_arg_bool(ctx->in, "return_segs", &segs_too, err)))
        return -1;
    size_t plen = strlen(pattern);
    if (plen == 0 || pattern[strcspn(pattern, "\\.^$|?*+()[]{}")] != '\0')
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "only literal split patterns are served, not regular expressions "
                          "('%.60s')",
                          pattern);
    ak_array s;
    if (strings_arg(ctx, "parent_name", &s, err)) return -1;
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "strings", h5ark_value_str(parent)) ||
                 h5ark_value_set(args, "pattern", h5ark_value_str(pattern)) ||
                 h5ark_value_set(args, "max", h5ark_value_int(max)) ||
                 h5ark_value_set(args, "segments", h5ark_value_bool(segs_too))))
        h5ark_value_destroy(&args);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "split", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    char *pieces = ak_created_of(h5ark_value_get(res.result, "object"), "split", err);
    char *segs = pieces && segs_too
                     ? ak_created_of(h5ark_value_get(res.result, "segments"), "split", err)
                     : NULL;
    dispatch_result_free(&res);
    if (pieces && segs_too && !segs) rc = -1;
    if (!pieces) rc = -1;
    if (rc == 0 && segs)
        rc = ak_reply(ctx, err, "%s+%s", pieces, segs);
    else if (rc == 0) {
        free(ctx->msg);
        ctx->msg = pieces;
        pieces = NULL;
    }
    free(pieces);
    free(segs);
    return rc;
}

const ak_command ak_strings_commands[] = {
    {"segmentedSplit", cmd_split, 0, RANKS_ZERO},
    {"randomStrings", cmd_random_strings, 0, RANKS_ZERO},
    {"segmentedBinopvv", cmd_binopvv, 0, RANKS_ZERO},
    {"segmentedBinopvs", cmd_binopvs, 0, RANKS_ZERO},
    {"segmentedIndex", cmd_index, 0, RANKS_ZERO},
    {"concatenateStr", cmd_concatenate, 0, RANKS_ZERO},
    {0},
};
