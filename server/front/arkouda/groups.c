/* Grouping commands of the Arkouda dialect, as its GroupBy, Categorical and SegArray code
 * sends them: unique, gbbroadcast and segmentedReduction, translated to the native unique,
 * broadcast and segmented_reduce. */
#include "front/arkouda/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reply the created texts of the objects a native command described under keys[0..n),
 * joined by "+". */
static int reply_made_all(ak_ctx *ctx, const dispatch_result *res, const char *const *keys,
                          size_t n, h5ark_error *err) {
    char *msg = NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *text = ak_created_of(h5ark_value_get(res->result, keys[i]), "unique", err);
        char *joined = NULL;
        if (!text)
            rc = -1;
        else if (asprintf(&joined, "%s%s%s", msg ? msg : "", msg ? "+" : "", text) < 0)
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        free(text);
        free(msg);
        msg = joined;
    }
    if (rc) {
        free(msg);
        return -1;
    }
    free(ctx->msg);
    ctx->msg = msg;
    return 0;
}

/* A bool argument given when present: into the native args under `to`. */
static int copy_bool(ak_ctx *ctx, const char *key, h5ark_value *args, const char *to,
                     h5ark_error *err) {
    bool b;
    if (!ak_arg(ctx->in, key)) return 0;
    if (ak_arg_bool(ctx->in, key, &b, err)) return -1;
    return h5ark_value_set(args, to, h5ark_value_bool(b))
               ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
               : 0;
}

/* A name argument into the native args under `to`. */
static int copy_name(ak_ctx *ctx, const char *key, h5ark_value *args, const char *to,
                     h5ark_error *err) {
    const char *name;
    if (ak_arg_str(ctx->in, key, &name, err)) return -1;
    return h5ark_value_set(args, to, h5ark_value_str(name))
               ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
               : 0;
}

/* unique {returnGroupStr, assumeSortedStr, nstr, keynames, keytypes}: the permutation and
 * segments of the grouping (with returnGroupStr), then the unique key indices (the first
 * row of each group), as Arkouda's server answers: its client gathers each key's unique
 * values itself (`keys[uki]`), whatever the keys' types. One Strings key of short strings
 * groups in Arkouda's order (the native unique's order "arkouda"). */
static int cmd_unique(ak_ctx *ctx, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value *keys = ak_names_arg(ctx, "keynames", err);
    int rc = keys ? 0 : -1;
    if (rc == 0 && h5ark_value_len(keys) == 0) {
        h5ark_value_destroy(&keys);
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'keynames' is empty");
    }
    if (rc == 0 && (h5ark_value_set(args, "keys", keys) ||
                    h5ark_value_set(args, "order", h5ark_value_str("arkouda"))))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) rc = copy_bool(ctx, "returnGroupStr", args, "groups", err);
    bool groups = h5ark_value_get(args, "groups") && h5ark_value_get(args, "groups")->as.b;
    dispatch_result res = {0};
    if (rc == 0) rc = ak_native(ctx, "unique", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    static const char *const parts[] = {"permutation", "segments", "unique_key_idx"};
    rc = reply_made_all(ctx, &res, groups ? parts : parts + 2, groups ? 3 : 1, err);
    dispatch_result_free(&res);
    return rc;
}

/* gbbroadcast {permName ("none" unless permute), segName, valName, permute, size}: the
 * native broadcast, with the permutation when permute. */
static int cmd_broadcast(ak_ctx *ctx, h5ark_error *err) {
    bool permute = false;
    uint64_t size;
    if (ak_arg_uint(ctx->in, "size", &size, err) ||
        (ak_arg(ctx->in, "permute") && ak_arg_bool(ctx->in, "permute", &permute, err)))
        return -1;
    h5ark_value *args = h5ark_value_map();
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (copy_name(ctx, "segName", args, "segments", err) ||
        copy_name(ctx, "valName", args, "values", err) ||
        (permute && copy_name(ctx, "permName", args, "permutation", err)) ||
        (h5ark_value_set(args, "size", h5ark_value_uint(size)) &&
         h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"))) {
        h5ark_value_destroy(&args);
        return -1;
    }
    return ak_native_created(ctx, "broadcast", args, err);
}

/* segmentedReduction {values, segments, op, skip_nan, ddof}: the native segmented_reduce
 * (ddof: no op served here takes it). */
static int cmd_segmented_reduction(ak_ctx *ctx, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (copy_name(ctx, "values", args, "values", err) ||
        copy_name(ctx, "segments", args, "segments", err) ||
        copy_name(ctx, "op", args, "op", err) ||
        copy_bool(ctx, "skip_nan", args, "skip_nan", err)) {
        h5ark_value_destroy(&args);
        return -1;
    }
    return ak_native_created(ctx, "segmented_reduce", args, err);
}

const ak_command ak_group_commands[] = {
    {"unique", cmd_unique, 0, RANKS_ZERO},
    {"gbbroadcast", cmd_broadcast, 0, RANKS_ZERO},
    {"segmentedReduction", cmd_segmented_reduction, 0, RANKS_ZERO},
    {0},
};
