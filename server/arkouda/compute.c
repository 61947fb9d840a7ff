/* Compute commands of the Arkouda dialect: those Arkouda's client sends to build and check
 * data in its HDF5 workflows (ARKOUDA_WIRE.md section 2). Construction goes through the
 * native `create`; the rest works on the registry's objects. */
#include "arkouda/commands.h"

#include <stdlib.h>
#include <string.h>

/* The template's dtype parameter i, as a native dtype. */
static int param_dtype(ak_ctx *ctx, int i, h5ark_dtype *out, h5ark_error *err) {
    const ak_request *in = ctx->in;
    if (i >= in->nparams || !h5ark_dtype_from_name(in->params[i], out) || *out == H5ARK_STRING)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: no supported dtype in '%s'", in->base,
                          in->cmd);
    return 0;
}

/* The last template parameter, the rank: only 1-d arrays here. */
static int check_rank(ak_ctx *ctx, h5ark_error *err) {
    const ak_request *in = ctx->in;
    if (in->nparams == 0 || strcmp(in->params[in->nparams - 1], "1") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: only 1-dimensional arrays are served",
                          in->cmd);
    return 0;
}

static int set_number(h5ark_value *args, const char *native, ak_ctx *ctx, const char *key,
                      h5ark_error *err) {
    const char *text;
    if (ak_arg_str(ctx->in, key, &text, err)) return -1;
    h5ark_value *v = ak_number_value(key, text, err);
    if (!v) return -1;
    if (h5ark_value_set(args, native, v))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return 0;
}

/* arange<T,1> {start, stop, step} */
static int cmd_arange(ak_ctx *ctx, h5ark_error *err) {
    h5ark_dtype dtype;
    if (ctx->in->nparams && strcmp(ctx->in->params[0], "bigint") == 0)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "bigint arange not supported by this server");
    if (param_dtype(ctx, 0, &dtype, err) || check_rank(ctx, err)) return -1;
    h5ark_value *args = h5ark_value_map();
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value_set(args, "dtype", h5ark_value_str(h5ark_dtype_name(dtype)));
    h5ark_value_set(args, "fill", h5ark_value_str("arange"));
    if (set_number(args, "start", ctx, "start", err) ||
        set_number(args, "stop", ctx, "stop", err) || set_number(args, "step", ctx, "step", err)) {
        h5ark_value_destroy(&args);
        return -1;
    }
    return ak_native_created(ctx, "create", args, err);
}

/* randint<T,1> {shape, low, high, seed (-1 or None: none)}; float64 draws uniformly in
 * [low, high), bool draws both values whatever the bounds, as Arkouda's does. */
static int cmd_randint(ak_ctx *ctx, h5ark_error *err) {
    h5ark_dtype dtype;
    uint64_t size;
    if (param_dtype(ctx, 0, &dtype, err) || check_rank(ctx, err) ||
        ak_arg_uint(ctx->in, "shape", &size, err))
        return -1;
    h5ark_value *args = h5ark_value_map();
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value_set(args, "dtype", h5ark_value_str(h5ark_dtype_name(dtype)));
    h5ark_value_set(args, "size", h5ark_value_uint(size));
    bool is_bool = dtype == H5ARK_BOOLEAN;
    h5ark_value_set(args, "fill",
                    h5ark_value_str(h5ark_dtype_is_float(dtype) ? "uniform" : "randint"));
    if (is_bool) {
        h5ark_value_set(args, "low", h5ark_value_int(0));
        h5ark_value_set(args, "high", h5ark_value_int(2));
    } else if (set_number(args, "low", ctx, "low", err) ||
               set_number(args, "high", ctx, "high", err)) {
        h5ark_value_destroy(&args);
        return -1;
    }
    const char *seed = ak_arg(ctx->in, "seed");
    int64_t s;
    if (seed && strcmp(seed, "None") != 0) {
        if (!ak_parse_int(seed, &s)) {
            h5ark_value_destroy(&args);
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'seed' must be an int64");
        }
        if (s >= 0) h5ark_value_set(args, "seed", h5ark_value_uint((uint64_t)s));
    }
    return ak_native_created(ctx, "create", args, err);
}

const ak_command ak_compute_commands[] = {
    {"arange", cmd_arange, 0},
    {"randint", cmd_randint, 0},
    {0},
};
