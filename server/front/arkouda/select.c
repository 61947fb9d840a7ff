/* Indexing commands of the Arkouda dialect: [int] [slice] [pdarray] [pdarray]=pdarray
 * [pdarray]=val [int]=val and concatenate, translated to the native get, slice, take,
 * assign and concatenate. */
#include "front/arkouda/bigint_ops.h"
#include "front/arkouda/parts.h"
#include "front/arkouda/values.h"

#include <stdlib.h>
#include <string.h>

/* [int]<T,1> {array, idx}: one element, "<dtype> <value>" (a bigint's in decimal), through
 * the native info and get. */
static int cmd_int_index(ak_ctx *ctx, h5ark_error *err) {
    int64_t i;
    const char *name;
    if (ak_arg_int(ctx->in, "idx", &i, err) || ak_arg_str(ctx->in, "array", &name, err)) return -1;
    dispatch_result res = {0};
    if (ak_describe(ctx, name, &res, err)) return -1;
    const h5ark_value *d = h5ark_value_at(h5ark_value_get(res.result, "objects"), 0);
    const h5ark_value *objtype = h5ark_value_get(d, "objtype"), *dt = h5ark_value_get(d, "dtype");
    uint64_t size = 0, limbs = 0;
    h5ark_dtype dtype = H5ARK_INT64;
    h5ark_value_to_uint64(h5ark_value_get(d, "size"), &size);
    h5ark_value_to_uint64(h5ark_value_get(d, "itemsize"), &limbs);
    int rc = 0;
    if (!objtype || objtype->kind != H5ARK_STR || strcmp(objtype->as.s.ptr, "pdarray") != 0)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'array' names %s %.200s, not pdarray",
                        objtype && objtype->kind == H5ARK_STR ? objtype->as.s.ptr : "an object",
                        name);
    else if (!dt || dt->kind != H5ARK_STR || !h5ark_dtype_from_name(dt->as.s.ptr, &dtype))
        rc = h5ark_fail(err, H5ARK_INTERNAL, "info gave %.200s no dtype", name);
    dispatch_result_free(&res);
    int64_t w = i < 0 ? i + (int64_t)size : i;
    if (rc == 0 && (w < 0 || (uint64_t)w >= size))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "index %lld is out of bounds for %llu elements",
                        (long long)i, (unsigned long long)size);
    h5ark_value *args = rc == 0 ? h5ark_value_map() : NULL;
    if (rc == 0 && (!args || h5ark_value_set(args, "name", h5ark_value_str(name)) ||
                    h5ark_value_set(args, "start", h5ark_value_uint((uint64_t)w)) ||
                    h5ark_value_set(args, "stop", h5ark_value_uint((uint64_t)w + 1))))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) rc = ak_native(ctx, "get", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    if (dtype == H5ARK_BIGINT) { /* its limbs, Limb_0 first, one uint64 each */
        limbs /= 8;
        uint64_t *x = calloc(limbs ? limbs : 1, sizeof *x);
        char *text = x ? (ak_result_bytes(&res, x, limbs * 8), ak_bigint_decimal(x, limbs)) : NULL;
        rc = text ? ak_reply(ctx, err, "bigint %s", text)
                  : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        free(text);
        free(x);
    } else {
        uint64_t e[2] = {0};
        char text[96];
        ak_result_bytes(&res, e, sizeof e);
        ak_scalar_text(dtype, e, 0, text, sizeof text);
        rc = ak_reply(ctx, err, "%s", text);
    }
    dispatch_result_free(&res);
    return rc;
}

/* [slice]<T,1> {array, starts, stops, strides, max_bits}: Python's slice, as the client
 * gives it after slice.indices(): the native slice. */
static int cmd_slice(ak_ctx *ctx, h5ark_error *err) {
    int64_t start, stop, stride;
    const char *name;
    if (ak_arg_int(ctx->in, "starts", &start, err) || ak_arg_int(ctx->in, "stops", &stop, err) ||
        ak_arg_int(ctx->in, "strides", &stride, err) || ak_arg_str(ctx->in, "array", &name, err))
        return -1;
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "array", h5ark_value_str(name)) ||
                 h5ark_value_set(args, "start", h5ark_value_int(start)) ||
                 h5ark_value_set(args, "stop", h5ark_value_int(stop)) ||
                 h5ark_value_set(args, "step", h5ark_value_int(stride))))
        h5ark_value_destroy(&args);
    return ak_native_created(ctx, "slice", args, err);
}

/* [pdarray] {array, idx}: a bool mask or integer positions (of a bigint too): the native
 * take. */
static int cmd_pdarray_index(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *idx;
    if (ak_arg_str(ctx->in, "array", &name, err) || ak_arg_str(ctx->in, "idx", &idx, err))
        return -1;
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "array", h5ark_value_str(name)) ||
                 h5ark_value_set(args, "index", h5ark_value_str(idx))))
        h5ark_value_destroy(&args);
    return ak_native_created(ctx, "take", args, err);
}

/* Whether the array assigned to is a bigint (the dtype the client gives: its argument, or
 * the template's). */
static bool bigint_dtype(const ak_request *in) {
    const char *dtype = ak_arg(in, "dtype") ? ak_arg(in, "dtype")
                        : in->nparams       ? in->params[0]
                                            : "";
    return strcmp(dtype, "bigint") == 0;
}

/* Arkouda's text of a scalar as a native value: True/False (any case Arkouda writes) a
 * bool, else a number; bad_request naming the dtype the client gave (its argument, or the
 * template's) when it is neither. */
static h5ark_value *scalar_value(const ak_request *in, const char *text, h5ark_error *err) {
    if (bigint_dtype(in)) return h5ark_value_str(text); /* any size: bigint_assign reads it */
    if (strcmp(text, "True") == 0 || strcmp(text, "true") == 0) return h5ark_value_bool(true);
    if (strcmp(text, "False") == 0 || strcmp(text, "false") == 0) return h5ark_value_bool(false);
    h5ark_value *v = ak_number_value("value", text, err);
    const char *dtype = ak_arg(in, "dtype") ? ak_arg(in, "dtype")
                        : in->nparams       ? in->params[0]
                                            : "number";
    if (!v && err->code == H5ARK_BAD_REQUEST)
        h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'value' is not a %s: '%.60s'", dtype, text);
    return v;
}

/* [pdarray]=pdarray {array, idx, value} and [pdarray]=val {array, idx, dtype, value}:
 * array[idx] = value (an array, or one scalar for every position), in Arkouda's place:
 * the native assign. */
static int cmd_pdarray_assign(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *idx, *text;
    bool scalar = strcmp(ctx->in->base, "[pdarray]=val") == 0;
    if (ak_arg_str(ctx->in, "array", &name, err) || ak_arg_str(ctx->in, "idx", &idx, err) ||
        ak_arg_str(ctx->in, "value", &text, err))
        return -1;
    h5ark_value *value = scalar ? scalar_value(ctx->in, text, err) : h5ark_value_str(text);
    if (!value) return err->code ? -1 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value *args = h5ark_value_map();
    if (!args || h5ark_value_set(args, "array", h5ark_value_str(name)) ||
        h5ark_value_set(args, "index", h5ark_value_str(idx))) {
        h5ark_value_destroy(&args);
        h5ark_value_destroy(&value);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (h5ark_value_set(args, scalar ? "value" : "values", value)) {
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    dispatch_result res;
    int rc = ak_native(ctx, scalar && bigint_dtype(ctx->in) ? "bigint_assign" : "assign", args,
                       NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    dispatch_result_free(&res);
    return ak_reply(ctx, err, "%s success", name);
}

/* The length of the array `name` (the native info). */
static int size_of(ak_ctx *ctx, const char *name, uint64_t *size, h5ark_error *err) {
    dispatch_result res;
    if (ak_describe(ctx, name, &res, err)) return -1;
    *size = ak_desc_uint(h5ark_value_at(h5ark_value_get(res.result, "objects"), 0), "size");
    dispatch_result_free(&res);
    return 0;
}

/* [int]=val<T,1> {array, idx, value, max_bits}: array[idx] = value, one element in
 * Arkouda's place: the native assign at a one-element index array made for it (and
 * deleted again); answered with Arkouda's empty success. */
static int cmd_int_assign(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *text;
    int64_t i;
    uint64_t size;
    if (ak_arg_str(ctx->in, "array", &name, err) || ak_arg_int(ctx->in, "idx", &i, err) ||
        ak_arg_str(ctx->in, "value", &text, err) || size_of(ctx, name, &size, err))
        return -1;
    int64_t w = i < 0 ? i + (int64_t)size : i;
    if (w < 0 || (uint64_t)w >= size)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "index %lld is out of bounds for %llu elements",
                          (long long)i, (unsigned long long)size);
    h5ark_value *value = scalar_value(ctx->in, text, err);
    if (!value) return err->code ? -1 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value *args = ak_str_args("dtype", "int64", "fill", "full", NULL);
    dispatch_result res;
    if (!args || h5ark_value_set(args, "size", h5ark_value_uint(1)) ||
        h5ark_value_set(args, "value", h5ark_value_int(w))) {
        h5ark_value_destroy(&args);
        h5ark_value_destroy(&value);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    int rc = ak_native(ctx, "create", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) {
        h5ark_value_destroy(&value);
        return -1;
    }
    char *idx = strdup(ak_desc_str(h5ark_value_get(res.result, "object"), "name"));
    dispatch_result_free(&res);
    args = idx ? ak_str_args("array", name, "index", idx, NULL) : NULL;
    if (!args || h5ark_value_set(args, "value", value)) {
        if (!args) h5ark_value_destroy(&value);
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    } else if ((rc = ak_native(ctx, bigint_dtype(ctx->in) ? "bigint_assign" : "assign", args, NULL,
                               &res, err)) == 0) {
        dispatch_result_free(&res);
    }
    h5ark_value_destroy(&args);
    if (idx) ak_delete_quietly(ctx, idx);
    free(idx);
    return rc ? -1 : ak_reply(ctx, err, "%s", "");
}

/* concatenate<T,1> {names, axis, offsets}: the native concatenate. */
static int cmd_concatenate(ak_ctx *ctx, h5ark_error *err) {
    h5ark_value *names = ak_names_arg(ctx, "names", err);
    if (!names) return -1;
    h5ark_value *args = h5ark_value_map();
    if (!args) h5ark_value_destroy(&names);
    /* the map takes names, also when setting it fails */
    else if (h5ark_value_set(args, "names", names))
        h5ark_value_destroy(&args);
    return ak_native_created(ctx, "concatenate", args, err);
}

const ak_command ak_select_commands[] = {
    {"[int]", cmd_int_index, AK_READ_ONLY, RANKS_ZERO},
    {"[slice]", cmd_slice, 0, RANKS_ZERO},
    {"[pdarray]", cmd_pdarray_index, 0, RANKS_ZERO},
    {"[pdarray]=pdarray", cmd_pdarray_assign, 0, RANKS_ZERO},
    {"[pdarray]=val", cmd_pdarray_assign, 0, RANKS_ZERO},
    {"[int]=val", cmd_int_assign, 0, RANKS_ZERO},
    {"concatenate", cmd_concatenate, 0, RANKS_ZERO},
    {0},
};
