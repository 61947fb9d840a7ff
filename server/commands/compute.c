/* Numeric compute on pdarrays: binop (arithmetic, comparison and bitwise operators of two
 * arrays or an array and a scalar, with numpy's result dtypes), cast, fill, reduce and
 * cumsum; and limitbits, a bigint's max_bits. Elementwise work runs on the locales, each on its
 * shard of the result; every command is one path at any rank count (dist/ranks.h's collectives cost
 * nothing at one rank). */
#include "commands.h"

#include "commands/elements.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"
#include "sysio.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arguments and results ---- */

/* The numeric pdarray named by argument `key`: a new reference, or NULL. */
static object *numeric_arg(command_ctx *ctx, const char *cmd, const char *key, h5ark_error *err) {
    object *obj = registry_get(arg_str(ctx, key, ""), err);
    if (obj && (obj->objtype != H5ARK_PDARRAY || obj->dtype == H5ARK_BIGINT ||
                obj->dtype == H5ARK_STRING)) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "%s: '%s' must be a numeric or bool pdarray, not %s %s",
                   cmd, key, h5ark_objtype_name(obj->objtype), h5ark_dtype_name(obj->dtype));
        object_release(obj);
        return NULL;
    }
    return obj;
}

/* Publish obj (taken) under `name` (NULL: a generated one) on every rank or on none, and
 * describe it in the result. */
static int publish(command_ctx *ctx, object *obj, const char *name, bool replace,
                   h5ark_error *err) {
    int rc = replace ? registry_replace(obj, name, err) : registry_publish(obj, name, err);
    int all = ranks_agree(rc, err);
    if (all && rc == 0) registry_unpublish(obj);
    if (all == 0) all = reply_set(ctx, "object", object_describe(obj), err);
    object_release(obj);
    return all;
}

/* Whether this rank holds every row of `a` its shards of `out` cover (always at one rank;
 * at several, when a is laid out as out is), agreed on by every rank. */
static int rows_held(const darray *a, const darray *out, const char *what, h5ark_error *err) {
    bool held = true;
    for (int b = 0; b < out->nshards && held; b++) {
        const shard *o = &out->shards[b];
        if (!locales_is_local(b) || !o->count) continue;
        int last = darray_shard_of(a, o->start + o->count - 1);
        for (int k = darray_shard_of(a, o->start); k <= last; k++)
            held &= locales_is_local(k);
    }
    int rc = held ? 0 : ranks_not_yet(err, "%s of an array that is not block distributed", what);
    return ranks_agree(rc, err);
}

/* ---- elementwise work on the locales ---- */

typedef enum {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_TRUEDIV,
    OP_FLOORDIV,
    OP_MOD,
    OP_POW,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_AND,
    OP_OR,
    OP_XOR,
    OP_SHL,
    OP_SHR,
    OP_CAST, /* no operator: the first operand converted */
    OP_FILL, /* no operator: the scalar */
} op_kind;

static const char *const op_names[] = {"+", "-",  "*", "/",  "//", "%", "**", "==", "!=",
                                       "<", "<=", ">", ">=", "&",  "|", "^",  "<<", ">>"};

static bool is_comparison(op_kind op) {
    return op >= OP_EQ && op <= OP_GE;
}

/* How the operands are combined: as double, int64 or uint64. */
typedef enum { CALC_F, CALC_I, CALC_U } calc_kind;

typedef struct {
    op_kind op;
    calc_kind calc;
    const darray *a, *b; /* b NULL: the scalar */
    h5ark_dtype adt, bdt;
    bool scalar_left; /* scalar op array */
    double sf;
    int64_t si;
    uint64_t su;
    darray *out;
    atomic_bool failed;
} ew_job;

static double f_op(op_kind op, double x, double y) {
    switch (op) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_TRUEDIV: return x / y;
    case OP_FLOORDIV: return floor(x / y);
    case OP_MOD: {
        double m = fmod(x, y);
        return m != 0 && ((m < 0) != (y < 0)) ? m + y : m; /* the divisor's sign, as Python */
    }
    case OP_POW: return pow(x, y);
    case OP_EQ: return x == y;
    case OP_NE: return x != y;
    case OP_LT: return x < y;
    case OP_LE: return x <= y;
    case OP_GT: return x > y;
    case OP_GE: return x >= y;
    default: return NAN;
    }
}

static uint64_t u_op(op_kind op, uint64_t x, uint64_t y) {
    switch (op) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_FLOORDIV: return y ? x / y : 0;
    case OP_MOD: return y ? x % y : 0;
    case OP_POW: {
        uint64_t r = 1, b = x;
        for (uint64_t e = y; e; e >>= 1, b *= b)
            if (e & 1) r *= b;
        return r;
    }
    case OP_EQ: return x == y;
    case OP_NE: return x != y;
    case OP_LT: return x < y;
    case OP_LE: return x <= y;
    case OP_GT: return x > y;
    case OP_GE: return x >= y;
    case OP_AND: return x & y;
    case OP_OR: return x | y;
    case OP_XOR: return x ^ y;
    case OP_SHL: return y > 63 ? 0 : x << y;
    case OP_SHR: return y > 63 ? 0 : x >> y;
    default: return 0;
    }
}

/* The operators whose sign matters here; the others are the same on the two's-complement
 * bits as on uint64 (+ - * ** wrap as numpy's, == != & | ^, and << where a negative count
 * is past 63). */
static int64_t i_op(op_kind op, int64_t x, int64_t y) {
    switch (op) {
    case OP_FLOORDIV:
        if (y == 0) return 0;
        if (y == -1) return (int64_t)(0 - (uint64_t)x);
        return x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
    case OP_MOD:
        if (y == 0 || y == -1) return 0;
        {
            int64_t m = x % y;
            return m != 0 && ((m < 0) != (y < 0)) ? m + y : m;
        }
    case OP_POW:
        if (y < 0) return 0;
        break;
    case OP_LT: return x < y;
    case OP_LE: return x <= y;
    case OP_GT: return x > y;
    case OP_GE: return x >= y;
    case OP_SHR: return y < 0 || y > 63 ? (x < 0 ? -1 : 0) : x >> y;
    default: break;
    }
    return (int64_t)u_op(op, (uint64_t)x, (uint64_t)y);
}

/* o[i] = x[i] OP y[i], or with the scalar s on either side */
#define EW_LOOPS(T, R, S, OP)                                                                      \
    do {                                                                                           \
        const T *x = pa, *y = pb;                                                                  \
        R *o = out;                                                                                \
        T s = (T)(S);                                                                              \
        if (j->b)                                                                                  \
            for (uint64_t i = 0; i < n; i++)                                                       \
                o[i] = (R)(x[i] OP y[i]);                                                          \
        else if (j->scalar_left)                                                                   \
            for (uint64_t i = 0; i < n; i++)                                                       \
                o[i] = (R)(s OP x[i]);                                                             \
        else                                                                                       \
            for (uint64_t i = 0; i < n; i++)                                                       \
                o[i] = (R)(x[i] OP s);                                                             \
    } while (0)

/* Arithmetic in type T (int64 as uint64: wrapping), comparisons in CT. */
#define EW_BY_OP(T, CT, S)                                                                         \
    switch (j->op) {                                                                               \
    case OP_ADD: EW_LOOPS(T, T, S, +); break;                                                      \
    case OP_SUB: EW_LOOPS(T, T, S, -); break;                                                      \
    case OP_MUL: EW_LOOPS(T, T, S, *); break;                                                      \
    case OP_EQ: EW_LOOPS(CT, uint8_t, S, ==); break;                                               \
    case OP_NE: EW_LOOPS(CT, uint8_t, S, !=); break;                                               \
    case OP_LT: EW_LOOPS(CT, uint8_t, S, <); break;                                                \
    case OP_LE: EW_LOOPS(CT, uint8_t, S, <=); break;                                               \
    case OP_GT: EW_LOOPS(CT, uint8_t, S, >); break;                                                \
    case OP_GE: EW_LOOPS(CT, uint8_t, S, >=); break;                                               \
    default: return false;                                                                         \
    }

/* The common case without conversions: + - * and comparisons of operands of the result's
 * 64-bit dtype (or two of one dtype compared), in loops the compiler vectorises. False when
 * the job is not of that kind (the general loop then runs). */
static bool ew_fast(const ew_job *j, const void *pa, const void *pb, void *out, uint64_t n) {
    h5ark_dtype t = j->adt;
    bool cmp = is_comparison(j->op);
    if (j->bdt != t || j->out->dtype != (cmp ? H5ARK_BOOLEAN : t)) return false;
    if (t == H5ARK_INT64 && j->calc == CALC_I)
        EW_BY_OP(uint64_t, int64_t, j->si)
    else if (t == H5ARK_UINT64 && j->calc == CALC_U)
        EW_BY_OP(uint64_t, uint64_t, j->su)
    else if (t == H5ARK_FLOAT64 && j->calc == CALC_F)
        EW_BY_OP(double, double, j->sf)
    else
        return false;
    return true;
}

static void ew_locale(int locale, void *arg) {
    ew_job *j = arg;
    shard *o = &j->out->shards[locale];
    if (!o->count) return;
    void *sa = NULL, *sb = NULL;
    const void *pa = j->a ? elem_range(j->a, o->start, o->count, &sa) : "";
    const void *pb = j->b ? elem_range(j->b, o->start, o->count, &sb) : "";
    if (!pa || !pb) {
        atomic_store(&j->failed, true);
        free(sa);
        free(sb);
        return;
    }
    h5ark_dtype odt = j->out->dtype;
    bool fast = j->op < OP_CAST && ew_fast(j, pa, pb, o->data, o->count);
    for (uint64_t i = 0; !fast && i < o->count; i++) {
        if (j->op == OP_FILL) {
            if (j->calc == CALC_F)
                elem_store_f(o->data, odt, i, j->sf);
            else if (j->calc == CALC_U)
                elem_store_u(o->data, odt, i, j->su);
            else
                elem_store_i(o->data, odt, i, j->si);
            continue;
        }
        if (j->op == OP_CAST) {
            if (elem_is_float(j->adt))
                elem_store_f(o->data, odt, i, elem_load_f(pa, j->adt, i));
            else if (elem_is_unsigned(j->adt))
                elem_store_u(o->data, odt, i, elem_load_u(pa, j->adt, i));
            else
                elem_store_i(o->data, odt, i, elem_load_i(pa, j->adt, i));
            continue;
        }
        switch (j->calc) {
        case CALC_F: {
            double x = elem_load_f(pa, j->adt, i);
            double y = j->b ? elem_load_f(pb, j->bdt, i) : j->sf;
            elem_store_f(o->data, odt, i, j->scalar_left ? f_op(j->op, y, x) : f_op(j->op, x, y));
            break;
        }
        case CALC_U: {
            uint64_t x = elem_load_u(pa, j->adt, i);
            uint64_t y = j->b ? elem_load_u(pb, j->bdt, i) : j->su;
            elem_store_u(o->data, odt, i, j->scalar_left ? u_op(j->op, y, x) : u_op(j->op, x, y));
            break;
        }
        case CALC_I: {
            int64_t x = elem_load_i(pa, j->adt, i);
            int64_t y = j->b ? elem_load_i(pb, j->bdt, i) : j->si;
            elem_store_i(o->data, odt, i, j->scalar_left ? i_op(j->op, y, x) : i_op(j->op, x, y));
            break;
        }
        }
    }
    free(sa);
    free(sb);
}

/* Run the job into a new array of `dtype` and `size` (unpublished), or NULL. */
static object *ew_make(ew_job *j, const char *what, h5ark_dtype dtype, uint64_t size,
                       h5ark_error *err) {
    object *out = object_new_pdarray(dtype, size, err);
    int rc = ranks_agree(out ? 0 : -1, err);
    /* a locale reads its rows of the operands from this rank's shards */
    if (rc == 0 && j->a) rc = rows_held(j->a, out->values, what, err);
    if (rc == 0 && j->b) rc = rows_held(j->b, out->values, what, err);
    if (rc == 0) {
        j->out = out->values;
        atomic_init(&j->failed, false);
        locales_run(ew_locale, j);
        if (atomic_load(&j->failed)) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = ranks_agree(rc, err);
    }
    if (rc == 0) return out;
    object_release(out);
    return NULL;
}

/* ---- binop ---- */

static int op_of(const char *name, op_kind *op, h5ark_error *err) {
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
        if (strcmp(op_names[i], name) == 0) {
            *op = (op_kind)i;
            return 0;
        }
    return h5ark_fail(err, H5ARK_BAD_REQUEST, "unsupported operator '%.20s'", name);
}

/* numpy's result dtype of `a op b` for the kinds int64, uint64, float64 and bool (smaller
 * types count as their kind), and how to compute it. */
static int result_of(op_kind op, h5ark_dtype a, h5ark_dtype b, h5ark_dtype *out, calc_kind *calc,
                     h5ark_error *err) {
    bool fa = elem_is_float(a), fb = elem_is_float(b);
    bool ua = elem_is_unsigned(a), ub = elem_is_unsigned(b);
    bool ba = a == H5ARK_BOOLEAN, bb = b == H5ARK_BOOLEAN;
    bool bitwise = op == OP_AND || op == OP_OR || op == OP_XOR || op == OP_SHL || op == OP_SHR;
    if (bitwise && (fa || fb))
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s does not apply to float64", op_names[op]);
    if (fa || fb || op == OP_TRUEDIV || (ua && !ub && !bb) || (ub && !ua && !ba)) {
        *calc = CALC_F; /* int64 with uint64 meets in float64, as in numpy */
        *out = H5ARK_FLOAT64;
        if (bitwise)
            return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s of int64 and uint64", op_names[op]);
    } else if (ua || ub) {
        *calc = CALC_U;
        *out = H5ARK_UINT64;
    } else {
        *calc = CALC_I;
        *out = ba && bb &&
                       (op == OP_AND || op == OP_OR || op == OP_XOR || op == OP_ADD || op == OP_MUL)
                   ? H5ARK_BOOLEAN
                   : H5ARK_INT64; /* numpy: bool + bool is or (computed as OP_OR) */
    }
    if (is_comparison(op)) *out = H5ARK_BOOLEAN;
    return 0;
}

/* The dtype a scalar argument counts as: `value_dtype` when given (int64 uint64 float64
 * bool), else its kind's (an integer above int64's range is uint64). */
static int scalar_dtype(command_ctx *ctx, const h5ark_value *v, h5ark_dtype *st, h5ark_error *err) {
    const char *name = arg_str(ctx, "value_dtype", NULL);
    if (!name) {
        int64_t i;
        *st = v->kind == H5ARK_BOOL         ? H5ARK_BOOLEAN
              : v->kind == H5ARK_FLOAT      ? H5ARK_FLOAT64
              : h5ark_value_to_int64(v, &i) ? H5ARK_INT64
                                            : H5ARK_UINT64;
        return 0;
    }
    if (!h5ark_dtype_from_name(name, st) ||
        (*st != H5ARK_INT64 && *st != H5ARK_UINT64 && *st != H5ARK_FLOAT64 && *st != H5ARK_BOOLEAN))
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "'value_dtype' must be int64, uint64, float64 or bool, not '%.40s'",
                          name);
    return 0;
}

/* The scalar v as dtype t (in every kind: *i, *u, *f); type_error when t cannot hold it (a
 * fraction, or a number out of t's kind's range, as an integer; a number as bool). */
static int scalar_as(const char *cmd, const h5ark_value *v, h5ark_dtype t, int64_t *i, uint64_t *u,
                     double *f, h5ark_error *err) {
    bool is_bool = v->kind == H5ARK_BOOL, ok = true;
    bool uns = elem_is_unsigned(t);
    if (is_bool) {
        *i = v->as.b, *u = v->as.b, *f = v->as.b;
    } else if (h5ark_value_to_int64(v, i)) {
        *u = (uint64_t)*i, *f = (double)*i;
        ok = !uns || *i >= 0;
    } else if (h5ark_value_to_uint64(v, u)) {
        *i = (int64_t)*u, *f = (double)*u;
        ok = uns;
    } else {
        h5ark_value_to_double(v, f);
        bool in_i = *f >= -9.2233720368547758e18 && *f < 9.2233720368547758e18;
        bool in_u = *f >= 0 && *f < 1.8446744073709552e19;
        *i = in_i ? (int64_t)*f : INT64_MIN;
        *u = in_u ? (uint64_t)*f : (uint64_t)*i;
        ok = *f == floor(*f) && (uns ? in_u : in_i);
    }
    if (elem_is_float(t)) return 0;
    if (t == H5ARK_BOOLEAN) ok = is_bool;
    if (ok) return 0;
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s: value %.17g does not fit %s", cmd, *f,
                      h5ark_dtype_name(t));
}

/* binop {op, a, b | value [value_dtype] [reverse], name} */
static int cmd_binop(command_ctx *ctx, h5ark_error *err) {
    op_kind op = OP_ADD;
    bool has_b = arg_has(ctx, "b");
    const h5ark_value *v = arg_value(ctx, "value");
    if (op_of(arg_str(ctx, "op", ""), &op, err)) return -1;
    if (has_b == (v != NULL))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "binop: give either 'b' (an array) or 'value' (a scalar)");
    if (has_b && (arg_has(ctx, "reverse") || arg_has(ctx, "value_dtype")))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "binop: 'reverse' and 'value_dtype' go with a scalar 'value'");
    object *a = numeric_arg(ctx, "binop", "a", err);
    object *b = a && has_b ? numeric_arg(ctx, "binop", "b", err) : NULL;
    int rc = a && (b || !has_b) ? 0 : -1;
    if (rc == 0 && b && a->size != b->size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the arrays differ in size: %llu and %llu",
                        (unsigned long long)a->size, (unsigned long long)b->size);
    ew_job j = {.op = op, .scalar_left = arg_bool(ctx, "reverse", false)};
    h5ark_dtype st = H5ARK_INT64, dtype = H5ARK_INT64;
    if (rc == 0 && v)
        rc = scalar_dtype(ctx, v, &st, err) || scalar_as("binop", v, st, &j.si, &j.su, &j.sf, err)
                 ? -1
                 : 0;
    if (rc == 0) {
        h5ark_dtype bdt = b ? b->dtype : st;
        rc = j.scalar_left ? result_of(op, bdt, a->dtype, &dtype, &j.calc, err)
                           : result_of(op, a->dtype, bdt, &dtype, &j.calc, err);
        j.a = a->values, j.adt = a->dtype, j.bdt = bdt;
        if (b) j.b = b->values;
        if (a->dtype == H5ARK_BOOLEAN && bdt == H5ARK_BOOLEAN && op == OP_ADD) j.op = OP_OR;
    }
    object *out = rc == 0 ? ew_make(&j, "elementwise work", dtype, a->size, err) : NULL;
    object_release(a);
    object_release(b);
    return out ? publish(ctx, out, arg_str(ctx, "name", NULL), false, err) : -1;
}

/* ---- cast and fill ---- */

static int numeric_dtype(const char *cmd, const char *name, h5ark_dtype *t, h5ark_error *err) {
    if (!h5ark_dtype_from_name(name, t) || *t == H5ARK_STRING || *t == H5ARK_BIGINT)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "%s: 'dtype' must be a numeric dtype or bool, not '%.40s'", cmd, name);
    return 0;
}

/* cast {array, dtype, name}: numpy's astype (floats to integers truncate; NaN and values out
 * of range give the integer's least value, as numpy does on this machine). */
static int cmd_cast(command_ctx *ctx, h5ark_error *err) {
    h5ark_dtype to;
    if (numeric_dtype("cast", arg_str(ctx, "dtype", ""), &to, err)) return -1;
    object *a = numeric_arg(ctx, "cast", "array", err);
    if (!a) return -1;
    ew_job j = {.op = OP_CAST, .a = a->values, .adt = a->dtype};
    object *out = ew_make(&j, "elementwise work", to, a->size, err);
    object_release(a);
    return out ? publish(ctx, out, arg_str(ctx, "name", NULL), false, err) : -1;
}

/* fill {array, value}: every element set to value; the array's name then names the filled
 * copy (objects are immutable: a reader of the old one keeps it). */
static int cmd_fill(command_ctx *ctx, h5ark_error *err) {
    object *a = numeric_arg(ctx, "fill", "array", err);
    if (!a) return -1;
    h5ark_dtype t = a->dtype;
    ew_job j = {.op = OP_FILL,
                .calc = elem_is_float(t)      ? CALC_F
                        : elem_is_unsigned(t) ? CALC_U
                                              : CALC_I};
    int rc = scalar_as("fill", arg_value(ctx, "value"), t, &j.si, &j.su, &j.sf, err);
    object *out = rc == 0 ? ew_make(&j, "fill", t, a->size, err) : NULL;
    if (out) out->tag = a->tag;
    object_release(a);
    return out ? publish(ctx, out, arg_str(ctx, "array", ""), true, err) : -1;
}

/* ---- reductions ---- */

typedef enum { R_ALL, R_ANY, R_SUM, R_PROD, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN, R_SORTED } red_kind;

static const char *const red_names[] = {"all", "any",    "sum",    "prod",     "max",
                                        "min", "argmax", "argmin", "is_sorted"};

/* One locale's part, of 8-byte fields only: every rank adds up the parts of all locales
 * (each rank's own filled in, the others zero) with one allreduce. */
typedef struct {
    uint64_t seen; /* the shard has elements */
    uint64_t any, all, sorted, nan, have;
    int64_t si;
    uint64_t su;
    double sf;
    uint64_t at;        /* index of the extreme */
    double first, last; /* the shard's ends, for is_sorted across shards (in its kind) */
    int64_t first_i, last_i;
    uint64_t first_u, last_u;
} red_part;

typedef struct {
    const darray *x;
    red_kind kind;
    red_part *parts;
} red_job;

/* Whether v (kind f: double, u: uint64, else int64) beats the best so far for max/min: the
 * first extreme wins (argmax's tie rule), and a NaN beats every number, as in numpy. */
static bool beats(const red_part *best, double f_, int64_t i, uint64_t u, bool nan, bool f,
                  bool uns, bool more) {
    if (!best->have) return true;
    if (f) return !best->nan && (nan || (more ? f_ > best->sf : f_ < best->sf));
    if (uns) return more ? u > best->su : u < best->su;
    return more ? i > best->si : i < best->si;
}

static void red_locale(int locale, void *arg) {
    red_job *j = arg;
    const shard *s = &j->x->shards[locale];
    red_part *p = &j->parts[locale];
    h5ark_dtype t = j->x->dtype;
    bool f = elem_is_float(t), u = elem_is_unsigned(t);
    bool more = j->kind == R_MAX || j->kind == R_ARGMAX;
    p->seen = s->count != 0;
    p->all = p->sorted = 1;
    p->si = p->su = j->kind == R_PROD;
    p->sf = j->kind == R_PROD;
    for (uint64_t i = 0; i < s->count; i++) {
        double fv = f ? elem_load_f(s->data, t, i) : 0;
        int64_t iv = !f && !u ? elem_load_i(s->data, t, i) : 0;
        uint64_t uv = u ? elem_load_u(s->data, t, i) : 0;
        bool nz = f ? fv != 0 : u ? uv != 0 : iv != 0;
        p->any |= nz;
        p->all &= nz;
        switch (j->kind) {
        case R_SUM:
            p->sf += fv;
            p->si = (int64_t)((uint64_t)p->si + (uint64_t)iv);
            p->su += uv;
            break;
        case R_PROD:
            p->sf *= fv;
            p->si = (int64_t)((uint64_t)p->si * (uint64_t)iv);
            p->su *= uv;
            break;
        case R_MAX:
        case R_MIN:
        case R_ARGMAX:
        case R_ARGMIN:
            if (beats(p, fv, iv, uv, f && isnan(fv), f, u, more)) {
                p->sf = fv, p->si = iv, p->su = uv, p->at = s->start + i, p->have = 1;
                p->nan = f && isnan(fv);
            }
            break;
        case R_SORTED:
            if (i > 0) p->sorted &= f ? p->last <= fv : u ? p->last_u <= uv : p->last_i <= iv;
            break;
        default: break;
        }
        if (i == 0) p->first = fv, p->first_i = iv, p->first_u = uv;
        p->last = fv, p->last_i = iv, p->last_u = uv;
    }
}

/* The parts combined in locale order. */
static red_part red_combine(const red_part *parts, int n, red_kind kind, h5ark_dtype t) {
    bool f = elem_is_float(t), u = elem_is_unsigned(t);
    bool more = kind == R_MAX || kind == R_ARGMAX, seen = false;
    red_part r = {.all = 1, .sorted = 1, .si = kind == R_PROD, .su = kind == R_PROD};
    r.sf = kind == R_PROD;
    const red_part *prev = NULL;
    for (int b = 0; b < n; b++) {
        const red_part *p = &parts[b];
        if (!p->seen) continue;
        r.any |= p->any;
        r.all &= p->all;
        r.sorted &= p->sorted;
        if (seen) /* the shard's first against the last before it */
            r.sorted &= f   ? prev->last <= p->first
                        : u ? prev->last_u <= p->first_u
                            : prev->last_i <= p->first_i;
        prev = p;
        seen = true;
        if (kind == R_SUM) {
            r.sf += p->sf;
            r.si = (int64_t)((uint64_t)r.si + (uint64_t)p->si);
            r.su += p->su;
        } else if (kind == R_PROD) {
            r.sf *= p->sf;
            r.si = (int64_t)((uint64_t)r.si * (uint64_t)p->si);
            r.su *= p->su;
        } else if (p->have && beats(&r, p->sf, p->si, p->su, p->nan, f, u, more)) {
            r.sf = p->sf, r.si = p->si, r.su = p->su, r.at = p->at, r.nan = p->nan, r.have = 1;
        }
    }
    return r;
}

/* reduce {array, op}: {value, dtype}. */
static int cmd_reduce(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "op", "");
    red_kind kind = R_ALL;
    size_t nk = sizeof red_names / sizeof red_names[0], k = 0;
    while (k < nk && strcmp(red_names[k], name) != 0)
        k++;
    if (k == nk)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "reduce: unknown op '%.40s' (all any sum prod max min argmax argmin "
                          "is_sorted)",
                          name);
    kind = (red_kind)k;
    object *x = numeric_arg(ctx, "reduce", "array", err);
    if (!x) return -1;
    h5ark_dtype t = x->dtype;
    int n = x->values->nshards;
    red_job j = {.x = x->values, .kind = kind, .parts = sysio.calloc((size_t)n, sizeof *j.parts)};
    int rc = j.parts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err) == 0) {
        locales_run(red_locale, &j);
        rc = ranks_allreduce_u64((uint64_t *)j.parts, (size_t)n * sizeof *j.parts / 8, RANKS_SUM,
                                 err);
    } else {
        rc = -1;
    }
    red_part r = rc == 0 ? red_combine(j.parts, n, kind, t) : (red_part){0};
    free(j.parts);
    object_release(x);
    if (rc) return -1;
    bool f = elem_is_float(t), u = elem_is_unsigned(t);
    h5ark_value *v = NULL;
    h5ark_dtype out = f ? H5ARK_FLOAT64 : u ? H5ARK_UINT64 : H5ARK_INT64;
    if ((kind >= R_MAX && kind <= R_ARGMIN) && !r.have)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "reduce: %s of an empty array", name);
    switch (kind) {
    case R_ALL:
    case R_ANY:
    case R_SORTED:
        out = H5ARK_BOOLEAN;
        v = h5ark_value_bool(kind == R_ALL ? r.all : kind == R_ANY ? r.any : r.sorted);
        break;
    case R_ARGMAX:
    case R_ARGMIN:
        out = H5ARK_INT64;
        v = h5ark_value_uint(r.at);
        break;
    default: /* sum, prod: numpy's bool and signed to int64, unsigned to uint64 */
        if (t == H5ARK_BOOLEAN && (kind == R_MAX || kind == R_MIN)) {
            out = H5ARK_BOOLEAN;
            v = h5ark_value_bool(r.si != 0);
        } else {
            v = f ? h5ark_value_float(r.sf) : u ? h5ark_value_uint(r.su) : h5ark_value_int(r.si);
        }
    }
    if (reply_set(ctx, "value", v, err)) return -1;
    return reply_set(ctx, "dtype", h5ark_value_str(h5ark_dtype_name(out)), err);
}

/* ---- cumsum ---- */

typedef struct {
    double sf;
    uint64_t su;
} cum_run;

/* Output element k (of dtype ot) of the running sum, adding element i of e (of dtype t). */
static void cum_step(cum_run *r, h5ark_dtype ot, void *out, uint64_t k, h5ark_dtype t,
                     const void *e, uint64_t i) {
    if (ot == H5ARK_FLOAT64) {
        r->sf += elem_load_f(e, t, i);
        elem_store_f(out, ot, k, r->sf);
    } else {
        r->su += ot == H5ARK_UINT64 ? elem_load_u(e, t, i) : (uint64_t)elem_load_i(e, t, i);
        elem_store_u(out, ot, k, r->su);
    }
}

/* cumsum {array, include_initial, name}: running sums in order (int64 for bool and signed,
 * uint64, float64), with include_initial a 0 first. Each shard in turn, on the rank holding
 * it, goes on from the running sum of the shard before (broadcast to every rank). */
static int cmd_cumsum(command_ctx *ctx, h5ark_error *err) {
    bool initial = arg_bool(ctx, "include_initial", false);
    object *x = numeric_arg(ctx, "cumsum", "array", err);
    if (!x) return -1;
    h5ark_dtype t = x->dtype;
    h5ark_dtype ot = elem_is_float(t)      ? H5ARK_FLOAT64
                     : elem_is_unsigned(t) ? H5ARK_UINT64
                                           : H5ARK_INT64;
    const darray *xv = x->values;
    uint64_t n = x->size + (initial ? 1 : 0), nloc = 0, reserved = 0, *rows = NULL;
    char *vals = NULL; /* with include_initial: this rank's sums, for rows one on */
    for (int b = 0; b < xv->nshards; b++)
        nloc += locales_is_local(b) ? xv->shards[b].count : 0;
    /* without include_initial the result is laid out as x: every row stays on its rank */
    uint64_t *counts = sysio.calloc((size_t)xv->nshards, sizeof *counts);
    for (int b = 0; counts && b < xv->nshards; b++)
        counts[b] = xv->shards[b].count;
    int rc = ranks_agree(counts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err);
    object *out = rc        ? NULL /* making one is a collective: on every rank or none */
                  : initial ? object_new_pdarray(ot, n, err)
                            : object_new_pdarray_counts(ot, n, counts, err);
    if (rc == 0 && !out) rc = -1;
    if (rc == 0 && initial &&
        (registry_scratch(nloc * 8, (void **)&rows, &reserved, err) ||
         registry_scratch(nloc * 8, (void **)&vals, &reserved, err)))
        rc = -1;
    rc = ranks_agree(rc, err);
    cum_run run = {0};
    uint64_t k = 0;
    for (int b = 0; rc == 0 && b < xv->nshards; b++) {
        const shard *xs = &xv->shards[b];
        if (!xs->count) continue;
        for (uint64_t i = 0; locales_is_local(b) && i < xs->count; i++, k++) {
            if (initial) rows[k] = xs->start + i + 1;
            cum_step(&run, ot, initial ? (void *)vals : out->values->shards[b].data,
                     initial ? k : i, t, xs->data, i);
        }
        rc = ranks_bcast(locales_rank_of(b), &run, sizeof run, err);
    }
    if (rc == 0 && initial) {
        if (locales_is_local(0)) elem_store_u(out->values->shards[0].data, ot, 0, 0);
        rc = elem_put_rows(out->values, rows, vals, nloc, err);
    }
    free(counts);
    free(rows);
    free(vals);
    registry_unreserve(reserved);
    object_release(x);
    if (rc) {
        object_release(out);
        return -1;
    }
    return publish(ctx, out, arg_str(ctx, "name", NULL), false, err);
}

/* ---- bigint ---- */

/* limitbits {array, max_bits}: a bigint's values cut to their low max_bits bits (-1: none)
 * and its max_bits set, under its name (limbs wholly above max_bits left out, the others
 * shared or masked). */
static int cmd_limitbits(command_ctx *ctx, h5ark_error *err) {
    int64_t bits = arg_int(ctx, "max_bits", -1);
    if (bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    const char *name = arg_str(ctx, "array", "");
    object *a = registry_get(name, err);
    if (a && (a->objtype != H5ARK_PDARRAY || a->dtype != H5ARK_BIGINT)) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s %s, not a bigint pdarray", name,
                   h5ark_objtype_name(a->objtype), h5ark_dtype_name(a->dtype));
        object_release(a);
        return -1;
    }
    if (!a) return -1;
    object *out = object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, a->size, err);
    int rc = out ? 0 : -1;
    if (out) {
        out->max_bits = bits;
        out->tag = a->tag;
    }
    for (size_t q = 0; rc == 0 && q < a->ncomponents; q++) {
        char limb[32];
        snprintf(limb, sizeof limb, "Limb_%zu", q);
        object *src = object_component_get(a, limb);
        int64_t keep = bits < 0 ? 64 : bits - (int64_t)q * 64;
        if (!src) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has no %s", name, limb);
            break;
        }
        if (keep <= 0 && q > 0) break; /* limb 0 stays, zero */
        object *dst = keep >= 64
                          ? object_ref(src)
                          : elem_masked_u64(src, keep <= 0 ? 0 : (UINT64_C(1) << keep) - 1, err);
        rc = dst && object_add_component(out, limb, dst, err) == 0 ? 0 : -1;
        object_release(dst);
    }
    object_release(a);
    rc = ranks_agree(rc, err);
    if (rc) {
        object_release(out);
        return -1;
    }
    return publish(ctx, out, name, true, err);
}

const command_def compute_commands[] = {
    {"binop",
     cmd_binop,
     {{"op", ARG_STR, true},
      {"a", ARG_STR, true},
      {"b", ARG_STR, false},
      {"value", ARG_SCALAR, false},
      {"value_dtype", ARG_STR, false},
      {"reverse", ARG_BOOL, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"cast",
     cmd_cast,
     {{"array", ARG_STR, true}, {"dtype", ARG_STR, true}, {"name", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},
    {"fill",
     cmd_fill,
     {{"array", ARG_STR, true}, {"value", ARG_SCALAR, true}, {0}},
     .ranks = RANKS_EVERY},
    {"reduce",
     cmd_reduce,
     {{"array", ARG_STR, true}, {"op", ARG_STR, true}, {0}},
     .read_only = true,
     .ranks = RANKS_EVERY},
    {"cumsum",
     cmd_cumsum,
     {{"array", ARG_STR, true},
      {"include_initial", ARG_BOOL, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"limitbits",
     cmd_limitbits,
     {{"array", ARG_STR, true}, {"max_bits", ARG_INT, true}, {0}},
     .ranks = RANKS_EVERY},
    {0},
};
