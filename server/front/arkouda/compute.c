/* Compute commands of the Arkouda dialect that build and check numeric arrays, as
 * Arkouda's client sends them (protocol/PROTOCOL.md, "The Arkouda endpoint": Commands): arange
 * randint create set cast binopvv binopvs binopsv the reductions (allAll ... argmaxAll) cumSum str
 * repr. Each is translated onto native commands (create, info, fill, cast, binop, reduce,
 * cumsum, get) and their results into Arkouda's replies. */
#include "front/arkouda/bigint_ops.h"
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"

#include <stdlib.h>
#include <string.h>

/* The template's dtype parameter i, as a native dtype. */
static int param_dtype(ak_ctx *ctx, int i, h5ark_dtype *out, h5ark_error *err) {
    const ak_request *in = ctx->in;
    if (i >= in->nparams || !h5ark_dtype_from_name(in->params[i], out) || *out == H5ARK_STRING ||
        *out == H5ARK_BIGINT)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: no supported dtype in '%s'", in->base,
                          in->cmd);
    return 0;
}

static int check_dtype(const ak_array *a, h5ark_dtype want, h5ark_error *err) {
    if (a->dtype == want) return 0;
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not %s", a->name,
                      h5ark_dtype_name(a->dtype), h5ark_dtype_name(want));
}

/* Element 0 of `elem` (of dtype t) as a native scalar argument. */
static h5ark_value *scalar_value(h5ark_dtype t, const void *elem) {
    if (t == H5ARK_BOOLEAN) return h5ark_value_bool(elem_load_i(elem, t, 0) != 0);
    if (elem_is_float(t)) return h5ark_value_float(elem_load_f(elem, t, 0));
    if (elem_is_unsigned(t)) return h5ark_value_uint(elem_load_u(elem, t, 0));
    return h5ark_value_int(elem_load_i(elem, t, 0));
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

/* ---- construction ---- */

/* The native `create`'s args: dtype, size (none when NULL) and fill; NULL without memory. */
static h5ark_value *create_args(h5ark_dtype dtype, const uint64_t *size, const char *fill) {
    h5ark_value *args = h5ark_value_map();
    if (!args) return NULL;
    h5ark_value_set(args, "dtype", h5ark_value_str(h5ark_dtype_name(dtype)));
    if (size) h5ark_value_set(args, "size", h5ark_value_uint(*size));
    h5ark_value_set(args, "fill", h5ark_value_str(fill));
    return args;
}

static bool bigint_template(const ak_request *in) {
    return in->nparams && strcmp(in->params[0], "bigint") == 0;
}

/* arange<T,1> {start, stop, step} */
static int cmd_arange(ak_ctx *ctx, h5ark_error *err) {
    h5ark_dtype dtype;
    if (bigint_template(ctx->in)) return ak_check_rank(ctx, err) ? -1 : ak_bigint_arange(ctx, err);
    if (param_dtype(ctx, 0, &dtype, err) || ak_check_rank(ctx, err)) return -1;
    h5ark_value *args = create_args(dtype, NULL, "arange");
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
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
    if (param_dtype(ctx, 0, &dtype, err) || ak_check_rank(ctx, err) ||
        ak_arg_uint(ctx->in, "shape", &size, err))
        return -1;
    h5ark_value *args =
        create_args(dtype, &size, h5ark_dtype_is_float(dtype) ? "uniform" : "randint");
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (dtype == H5ARK_BOOLEAN) {
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

/* create<T,1> {shape}: zeros (Arkouda fills them after, with set). */
static int cmd_create(ak_ctx *ctx, h5ark_error *err) {
    h5ark_dtype dtype;
    uint64_t size;
    if (bigint_template(ctx->in)) return ak_bigint_create(ctx, err);
    if (param_dtype(ctx, 0, &dtype, err) || ak_check_rank(ctx, err) ||
        ak_arg_uint(ctx->in, "shape", &size, err))
        return -1;
    return ak_native_created(ctx, "create", create_args(dtype, &size, "zeros"), err);
}

/* set<T,1> {array, dtype, val}: every element set to val (read as the array's dtype), by
 * the native fill. */
static int cmd_set(ak_ctx *ctx, h5ark_error *err) {
    const char *text;
    ak_array a;
    if (bigint_template(ctx->in)) return ak_bigint_set(ctx, err);
    if (ak_check_rank(ctx, err) || ak_arg_str(ctx->in, "val", &text, err) ||
        ak_array_arg(ctx, "array", false, &a, err))
        return -1;
    uint64_t v = 0; /* the value, stored as the array's dtype */
    if (ak_scalar_parse(a.dtype, text, "val", &v, err)) return -1;
    h5ark_value *args = ak_str_args("array", a.name, NULL);
    if (args && h5ark_value_set(args, "value", scalar_value(a.dtype, &v)))
        h5ark_value_destroy(&args);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "fill", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    dispatch_result_free(&res);
    return ak_reply(ctx, err, "set element in %s", a.name);
}

/* cast<from,to,1> {name} */
static int cmd_cast(ak_ctx *ctx, h5ark_error *err) {
    h5ark_dtype from, to;
    ak_array a;
    if (ak_bigint_template(ctx->in)) return ak_bigint_cast(ctx, err);
    if (param_dtype(ctx, 0, &from, err) || param_dtype(ctx, 1, &to, err) ||
        ak_check_rank(ctx, err) || ak_array_arg(ctx, "name", false, &a, err) ||
        check_dtype(&a, from, err))
        return -1;
    return ak_native_created(
        ctx, "cast", ak_str_args("array", a.name, "dtype", h5ark_dtype_name(to), NULL), err);
}

/* ---- binops ---- */

/* binopvv<T,U,1> {op, a, b} */
static int cmd_binopvv(ak_ctx *ctx, h5ark_error *err) {
    const char *op;
    ak_array a, b;
    if (ak_bigint_template(ctx->in)) return ak_bigint_binop(ctx, err);
    if (ak_check_rank(ctx, err) || ak_arg_str(ctx->in, "op", &op, err) ||
        ak_array_arg(ctx, "a", false, &a, err) || ak_array_arg(ctx, "b", false, &b, err))
        return -1;
    h5ark_value *args = ak_str_args("op", op, "a", a.name, NULL);
    if (args && h5ark_value_set(args, "b", h5ark_value_str(b.name))) h5ark_value_destroy(&args);
    return ak_native_created(ctx, "binop", args, err);
}

/* The scalar argument `value`, as the dtype the template gives it, into *out (a native
 * scalar). */
static int scalar_arg(ak_ctx *ctx, h5ark_dtype t, h5ark_value **out, h5ark_error *err) {
    const char *text;
    if (ak_arg_str(ctx->in, "value", &text, err)) return -1;
    bool ok;
    uint64_t v = 0;
    if (t == H5ARK_BOOLEAN) {
        ok = strcmp(text, "True") == 0 || strcmp(text, "False") == 0 || strcmp(text, "true") == 0 ||
             strcmp(text, "false") == 0;
        elem_store_i(&v, t, 0, text[0] == 'T' || text[0] == 't');
    } else {
        ok = ak_scalar_parse(t, text, "value", &v, &(h5ark_error){0}) == 0;
    }
    if (!ok)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'value' is not a %s: '%.60s'",
                          h5ark_dtype_name(t), text);
    *out = scalar_value(t, &v);
    return *out ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

/* binopvs<T,U,1> {op, a, value} and binopsv<T,U,1> {op, a, value}: T is the array's dtype
 * and U the scalar's in both (the client's pdarray.r_binop names them so for sv too). */
static int binop_scalar(ak_ctx *ctx, bool scalar_left, h5ark_error *err) {
    const char *op;
    h5ark_dtype st;
    ak_array a;
    h5ark_value *value = NULL;
    if (ak_bigint_template(ctx->in)) return ak_bigint_binop(ctx, err);
    if (ak_check_rank(ctx, err) || param_dtype(ctx, 1, &st, err) ||
        ak_arg_str(ctx->in, "op", &op, err) || ak_array_arg(ctx, "a", false, &a, err))
        return -1;
    /* the scalar's kind, as the native value_dtype names it */
    h5ark_dtype kind = st == H5ARK_BOOLEAN    ? H5ARK_BOOLEAN
                       : elem_is_float(st)    ? H5ARK_FLOAT64
                       : elem_is_unsigned(st) ? H5ARK_UINT64
                                              : H5ARK_INT64;
    if (scalar_arg(ctx, kind, &value, err)) return -1;
    h5ark_value *args = ak_str_args("op", op, "a", a.name, NULL);
    if (args && (h5ark_value_set(args, "value", value) ||
                 h5ark_value_set(args, "value_dtype", h5ark_value_str(h5ark_dtype_name(kind))) ||
                 h5ark_value_set(args, "reverse", h5ark_value_bool(scalar_left))))
        h5ark_value_destroy(&args);
    else if (!args)
        h5ark_value_destroy(&value);
    return ak_native_created(ctx, "binop", args, err);
}

static int cmd_binopvs(ak_ctx *ctx, h5ark_error *err) {
    return binop_scalar(ctx, false, err);
}

static int cmd_binopsv(ak_ctx *ctx, h5ark_error *err) {
    return binop_scalar(ctx, true, err);
}

/* ---- reductions ---- */

static const struct {
    const char *name, *native;
} reductions[] = {{"allAll", "all"},       {"anyAll", "any"},       {"sumAll", "sum"},
                  {"prodAll", "prod"},     {"maxAll", "max"},       {"minAll", "min"},
                  {"argmaxAll", "argmax"}, {"argminAll", "argmin"}, {"isSortedAll", "is_sorted"}};

/* <op>All<T,1> {x, skipNan}: the native reduce's value as Arkouda's "<dtype> <value>". */
static int cmd_reduce(ak_ctx *ctx, h5ark_error *err) {
    const char *op = "all";
    for (size_t i = 0; i < sizeof reductions / sizeof reductions[0]; i++)
        if (strcmp(reductions[i].name, ctx->in->base) == 0) op = reductions[i].native;
    h5ark_dtype dt;
    ak_array x;
    if (param_dtype(ctx, 0, &dt, err) || ak_check_rank(ctx, err) ||
        ak_array_arg(ctx, "x", false, &x, err) || check_dtype(&x, dt, err))
        return -1;
    if (x.size == 0 && (strstr(op, "max") || strstr(op, "min")))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s of an empty array", ctx->in->base);
    h5ark_value *args = ak_str_args("array", x.name, "op", op, NULL);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "reduce", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    const h5ark_value *v = h5ark_value_get(res.result, "value");
    const h5ark_value *d = h5ark_value_get(res.result, "dtype");
    h5ark_dtype t = H5ARK_INT64;
    if (d && d->kind == H5ARK_STR) h5ark_dtype_from_name(d->as.s.ptr, &t);
    uint64_t e = 0; /* the value, stored as t */
    double f;
    int64_t i;
    if (v && v->kind == H5ARK_BOOL)
        elem_store_i(&e, t, 0, v->as.b);
    else if (elem_is_float(t) && h5ark_value_to_double(v, &f))
        elem_store_f(&e, t, 0, f);
    else if (h5ark_value_to_int64(v, &i))
        elem_store_i(&e, t, 0, i);
    else
        h5ark_value_to_uint64(v, &e);
    dispatch_result_free(&res);
    char text[96];
    ak_scalar_text(t, &e, 0, text, sizeof text);
    return ak_reply(ctx, err, "%s", text);
}

/* cumSum<T,1> {x, axis, includeInitial} */
static int cmd_cumsum(ak_ctx *ctx, h5ark_error *err) {
    bool initial = false;
    ak_array x;
    if (ak_check_rank(ctx, err) || (ak_arg(ctx->in, "includeInitial") &&
                                    ak_arg_bool(ctx->in, "includeInitial", &initial, err)))
        return -1;
    if (ak_array_arg(ctx, "x", false, &x, err)) return -1;
    h5ark_value *args = ak_str_args("array", x.name, NULL);
    if (args && h5ark_value_set(args, "include_initial", h5ark_value_bool(initial)))
        h5ark_value_destroy(&args);
    return ak_native_created(ctx, "cumsum", args, err);
}

/* str / repr {array, printThresh}: numpy's text of the array, the first and last three
 * elements with "..." between when it has more than printThresh; the elements by the
 * native get. */
static int cmd_str(ak_ctx *ctx, h5ark_error *err) {
    int64_t thresh = 100;
    ak_array a;
    if (ak_arg(ctx->in, "printThresh") && ak_arg_int(ctx->in, "printThresh", &thresh, err))
        return -1;
    if (ak_array_arg(ctx, "array", true, &a, err)) return -1;
    if (a.dtype == H5ARK_BIGINT) return ak_bigint_str(ctx, &a, thresh, err);
    bool repr = strcmp(ctx->in->base, "repr") == 0;
    bool cut = thresh >= 0 && a.size > (uint64_t)thresh && a.size > 6;
    h5ark_value *args = ak_str_args("name", a.name, NULL), *rows = h5ark_value_array();
    for (uint64_t i = 0; cut && rows && i < 6; i++)
        if (h5ark_value_push(rows, h5ark_value_uint(i < 3 ? i : a.size - 6 + i)))
            h5ark_value_destroy(&rows);
    if (args && (!rows || (cut && h5ark_value_set(args, "rows", rows)))) h5ark_value_destroy(&args);
    if (!cut || !args) h5ark_value_destroy(&rows);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "get", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    uint64_t n = cut ? 6 : a.size, item = h5ark_dtype_size(a.dtype), got = 0;
    char *vals = malloc(n * item + 1), *text = malloc(n * 72 + 32);
    for (size_t s = 0; vals && s < res.nspans && got + res.spans[s].len <= n * item; s++) {
        memcpy(vals + got, res.spans[s].ptr, res.spans[s].len);
        got += res.spans[s].len;
    }
    dispatch_result_free(&res);
    if (!vals || !text)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    else if (got != n * item)
        rc = h5ark_fail(err, H5ARK_INTERNAL, "get sent %llu bytes, not %llu",
                        (unsigned long long)got, (unsigned long long)(n * item));
    size_t len = rc ? 0 : (size_t)sprintf(text, "%s[", repr ? "array(" : "");
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        char v[72];
        ak_value_text(a.dtype, vals, i, v, sizeof v);
        len += (size_t)sprintf(text + len, "%s%s%s", i ? " " : "", cut && i == 3 ? "... " : "", v);
    }
    if (rc == 0) rc = ak_reply(ctx, err, "%s]%s", text, repr ? ")" : "");
    free(vals);
    free(text);
    return rc;
}

const ak_command ak_compute_commands[] = {
    {"arange", cmd_arange, 0, RANKS_ZERO},
    {"randint", cmd_randint, 0, RANKS_ZERO},
    {"create", cmd_create, 0, RANKS_ZERO},
    {"set", cmd_set, 0, RANKS_ZERO},
    {"cast", cmd_cast, 0, RANKS_ZERO},
    {"binopvv", cmd_binopvv, 0, RANKS_ZERO},
    {"binopvs", cmd_binopvs, 0, RANKS_ZERO},
    {"binopsv", cmd_binopsv, 0, RANKS_ZERO},
    {"allAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"anyAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"sumAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"prodAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"maxAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"minAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"isSortedAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"argmaxAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"argminAll", cmd_reduce, AK_READ_ONLY, RANKS_ZERO},
    {"cumSum", cmd_cumsum, 0, RANKS_ZERO},
    {"str", cmd_str, AK_READ_ONLY, RANKS_ZERO},
    {"repr", cmd_str, AK_READ_ONLY, RANKS_ZERO},
    {0},
};
