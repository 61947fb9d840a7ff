/* bigint commands of the Arkouda dialect: arange of bigint, get_max_bits and set_max_bits,
 * as Arkouda's client sends them for `ak.arange(..., dtype=bigint)` and `pdarray.max_bits`,
 * and bigint_to_uint_list / big_int_creation, which move limbs. They only translate, to
 * the native bigint_arange, limitbits, bigint_limbs and bigint_from_limbs
 * (commands/bigint_ops.c). A bigint here is a composite of uint64 limbs: its values are
 * unsigned. */
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* arange<bigint,1> {start, stop, step}: the native bigint_arange. */
int ak_bigint_arange(ak_ctx *ctx, h5ark_error *err) {
    const char *start, *stop, *step;
    if (ak_arg_str(ctx->in, "start", &start, err) || ak_arg_str(ctx->in, "stop", &stop, err) ||
        ak_arg_str(ctx->in, "step", &step, err))
        return -1;
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "start", h5ark_value_str(start)) ||
                 h5ark_value_set(args, "stop", h5ark_value_str(stop)) ||
                 h5ark_value_set(args, "step", h5ark_value_str(step))))
        h5ark_value_destroy(&args);
    return ak_native_created(ctx, "bigint_arange", args, err);
}

/* The bigint array named by argument `array`. */
static int bigint_arg(ak_ctx *ctx, ak_array *a, h5ark_error *err) {
    if (ak_array_arg(ctx, "array", true, a, err)) return -1;
    if (a->dtype == H5ARK_BIGINT) return 0;
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not bigint", a->name,
                      h5ark_dtype_name(a->dtype));
}

/* get_max_bits<bigint,1> {array}: its max_bits (-1: unbounded), as JSON. */
static int cmd_get_max_bits(ak_ctx *ctx, h5ark_error *err) {
    ak_array a;
    if (bigint_arg(ctx, &a, err)) return -1;
    return ak_reply(ctx, err, "%lld", (long long)a.max_bits);
}

/* set_max_bits<bigint,1> {array, max_bits}: every value cut to its low max_bits bits (-1:
 * none), as Arkouda's server does in place; here a changed copy published under the
 * array's name (limbs wholly above max_bits left out, the others shared or masked). */
static int cmd_set_max_bits(ak_ctx *ctx, h5ark_error *err) {
    int64_t bits;
    ak_array a;
    if (ak_arg_int(ctx->in, "max_bits", &bits, err)) return -1;
    if (bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    if (bigint_arg(ctx, &a, err)) return -1;
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "array", h5ark_value_str(a.name)) ||
                 h5ark_value_set(args, "max_bits", h5ark_value_int(bits))))
        h5ark_value_destroy(&args);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "limitbits", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    dispatch_result_free(&res);
    return ak_reply(ctx, err, "Sucessfully set max_bits");
}

/* bigint_to_uint_list<bigint,1> {array}: the limbs as new uint64 arrays, least significant
 * first and as many as the largest value needs (at least one), as Arkouda's server gives
 * them: a JSON list of their created texts (the client reverses it and downloads each).
 * The native bigint_limbs. */
static int cmd_bigint_limbs(ak_ctx *ctx, h5ark_error *err) {
    if (ctx->in->nparams && ak_check_rank(ctx, err)) return -1; /* older clients send no template */
    ak_array a;
    if (bigint_arg(ctx, &a, err)) return -1;
    h5ark_value *args = h5ark_value_map();
    if (args && h5ark_value_set(args, "array", h5ark_value_str(a.name))) h5ark_value_destroy(&args);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "bigint_limbs", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    const h5ark_value *limbs = h5ark_value_get(res.result, "limbs");
    json_t *list = json_array();
    if (!list) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < h5ark_value_len(limbs); i++) {
        char *text = ak_created_of(h5ark_value_at(limbs, i), "bigint_limbs", err);
        rc = text && json_array_append_new(list, json_string(text)) == 0 ? 0 : -1;
        free(text);
    }
    char *msg = rc == 0 ? json_dumps(list, JSON_COMPACT) : NULL;
    if (rc == 0 && !msg) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) {
        free(ctx->msg);
        ctx->msg = msg;
    } else { /* all or none: the limbs made go again, through the native delete */
        h5ark_value *del = h5ark_value_map(), *names = h5ark_value_array();
        for (size_t i = 0; names && i < h5ark_value_len(limbs); i++) {
            const h5ark_value *name = h5ark_value_get(h5ark_value_at(limbs, i), "name");
            if (name && name->kind == H5ARK_STR) h5ark_value_push(names, h5ark_value_copy(name));
        }
        if (del && !h5ark_value_set(del, "names", names)) {
            dispatch_result gone;
            if (ak_native(ctx, "delete", del, NULL, &gone, &(h5ark_error){0}) == 0)
                dispatch_result_free(&gone);
        } else if (!del) {
            h5ark_value_destroy(&names);
        }
        h5ark_value_destroy(&del);
    }
    json_decref(list);
    dispatch_result_free(&res);
    return rc;
}

/* big_int_creation<bigint,1> {num_arrays, shape, arrays, max_bits}: a bigint from uint64
 * arrays of one length given most significant first (the client's bigint_from_uint_arrays
 * and ak.array of Python ints), cut to max_bits (-1: unbounded) as Arkouda's server cuts
 * them: the native bigint_from_limbs. */
static int cmd_bigint_create(ak_ctx *ctx, h5ark_error *err) {
    int64_t max_bits = -1;
    if ((ctx->in->nparams && ak_check_rank(ctx, err)) ||
        (ak_arg(ctx->in, "max_bits") && ak_arg_int(ctx->in, "max_bits", &max_bits, err)))
        return -1;
    if (max_bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    json_t *names = ak_arg_list(ctx->in, "arrays", err);
    if (!names) return -1;
    size_t k = json_array_size(names);
    int rc = k && k <= 4096 ? 0
                            : h5ark_fail(err, H5ARK_BAD_REQUEST,
                                         "argument 'arrays' must name 1 to 4096 arrays");
    h5ark_value *list = rc == 0 ? h5ark_value_array() : NULL;
    if (rc == 0 && !list) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < k; i++) {
        const char *name = json_string_value(json_array_get(names, i));
        if (!name)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'arrays' must list names");
        else if (h5ark_value_push(list, h5ark_value_str(name)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    json_decref(names);
    if (rc) {
        h5ark_value_destroy(&list);
        return -1;
    }
    h5ark_value *args = h5ark_value_map();
    if (!args) h5ark_value_destroy(&list);
    /* the map takes the list, also when setting fails */
    if (args && (h5ark_value_set(args, "arrays", list) ||
                 h5ark_value_set(args, "max_bits", h5ark_value_int(max_bits))))
        h5ark_value_destroy(&args);
    return ak_native_created(ctx, "bigint_from_limbs", args, err);
}

const ak_command ak_bigint_commands[] = {
    {"get_max_bits", cmd_get_max_bits, AK_READ_ONLY, RANKS_ZERO},
    {"set_max_bits", cmd_set_max_bits, 0, RANKS_ZERO},
    {"bigint_to_uint_list", cmd_bigint_limbs, 0, RANKS_ZERO},
    {"big_int_creation", cmd_bigint_create, 0, RANKS_ZERO},
    {0},
};
