/* Compute commands of the Arkouda dialect that build and check numeric arrays, as
 * Arkouda's client sends them (protocol/PROTOCOL.md, "The Arkouda endpoint": Commands): arange
 * randint create set cast binopvv binopvs binopsv the reductions (allAll ... argmaxAll) cumSum str
 * repr. Construction goes through the native `create`; elementwise work runs on the locales, each
 * on its shard of the result. */
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"
#include "sysio.h"

#include <math.h>
#include <stdatomic.h>
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

/* The last template parameter, the rank: only 1-d arrays here. */
static int check_rank(ak_ctx *ctx, h5ark_error *err) {
    const ak_request *in = ctx->in;
    if (in->nparams == 0 || strcmp(in->params[in->nparams - 1], "1") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: only 1-dimensional arrays are served",
                          in->cmd);
    return 0;
}

/* The numeric pdarray named by argument `key`. */
static object *numeric_arg(ak_ctx *ctx, const char *key, h5ark_error *err) {
    object *obj = ak_object_arg(ctx, key, H5ARK_PDARRAY, err);
    if (obj && (obj->dtype == H5ARK_BIGINT || obj->dtype == H5ARK_STRING)) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' must be a numeric or bool array", key);
        object_release(obj);
        return NULL;
    }
    return obj;
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

/* Through the native create on rank 0, but a bigint's limbs are made on every rank. */
static ranks_mode arange_ranks(const ak_request *in) {
    return bigint_template(in) ? RANKS_EVERY : RANKS_ZERO;
}

/* arange<T,1> {start, stop, step} */
static int cmd_arange(ak_ctx *ctx, h5ark_error *err) {
    h5ark_dtype dtype;
    if (bigint_template(ctx->in)) return check_rank(ctx, err) ? -1 : ak_bigint_arange(ctx, err);
    if (param_dtype(ctx, 0, &dtype, err) || check_rank(ctx, err)) return -1;
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
    if (param_dtype(ctx, 0, &dtype, err) || check_rank(ctx, err) ||
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
    if (param_dtype(ctx, 0, &dtype, err) || check_rank(ctx, err) ||
        ak_arg_uint(ctx->in, "shape", &size, err))
        return -1;
    return ak_native_created(ctx, "create", create_args(dtype, &size, "zeros"), err);
}

/* Publish `obj` under `name` in place of the object there: Arkouda's commands that change
 * an array in place (objects here are immutable: readers of the old one keep it). */
static int replace(const char *name, object *obj, h5ark_error *err) {
    int rc = registry_remove(name, err) || registry_publish(obj, name, err) ? -1 : 0;
    return ranks_call_seq() ? ranks_agree(rc, err) : rc; /* the same metadata on every rank */
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
    bool scalar_left; /* binopsv: scalar op array */
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

static int64_t i_op(op_kind op, int64_t x, int64_t y) {
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    switch (op) {
    case OP_ADD: return (int64_t)(ux + uy); /* wrapping, as numpy */
    case OP_SUB: return (int64_t)(ux - uy);
    case OP_MUL: return (int64_t)(ux * uy);
    case OP_FLOORDIV:
        if (y == 0) return 0;
        if (y == -1) return (int64_t)(0 - ux);
        return x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
    case OP_MOD:
        if (y == 0 || y == -1) return 0;
        {
            int64_t m = x % y;
            return m != 0 && ((m < 0) != (y < 0)) ? m + y : m;
        }
    case OP_POW: {
        if (y < 0) return 0;
        uint64_t r = 1, b = ux;
        for (uint64_t e = uy; e; e >>= 1, b *= b)
            if (e & 1) r *= b;
        return (int64_t)r;
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
    case OP_SHL: return y < 0 || y > 63 ? 0 : (int64_t)(ux << y);
    case OP_SHR: return y < 0 || y > 63 ? (x < 0 ? -1 : 0) : x >> y;
    default: return 0;
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

static void ew_locale(int locale, void *arg) {
    ew_job *j = arg;
    shard *o = &j->out->shards[locale];
    if (!o->count) return;
    void *sa = NULL, *sb = NULL;
    const void *pa = j->a ? ak_range(j->a, o->start, o->count, &sa) : "";
    const void *pb = j->b ? ak_range(j->b, o->start, o->count, &sb) : "";
    if (!pa || !pb) {
        atomic_store(&j->failed, true);
        free(sa);
        free(sb);
        return;
    }
    h5ark_dtype odt = j->out->dtype;
    for (uint64_t i = 0; i < o->count; i++) {
        if (j->op == OP_FILL) {
            if (j->calc == CALC_F)
                ak_store_f(o->data, odt, i, j->sf);
            else if (j->calc == CALC_U)
                ak_store_u(o->data, odt, i, j->su);
            else
                ak_store_i(o->data, odt, i, j->si);
            continue;
        }
        if (j->op == OP_CAST) {
            if (ak_is_float(j->adt))
                ak_store_f(o->data, odt, i, ak_load_f(pa, j->adt, i));
            else if (ak_is_unsigned(j->adt))
                ak_store_u(o->data, odt, i, ak_load_u(pa, j->adt, i));
            else
                ak_store_i(o->data, odt, i, ak_load_i(pa, j->adt, i));
            continue;
        }
        switch (j->calc) {
        case CALC_F: {
            double x = ak_load_f(pa, j->adt, i);
            double y = j->b ? ak_load_f(pb, j->bdt, i) : j->sf;
            ak_store_f(o->data, odt, i, j->scalar_left ? f_op(j->op, y, x) : f_op(j->op, x, y));
            break;
        }
        case CALC_U: {
            uint64_t x = ak_load_u(pa, j->adt, i);
            uint64_t y = j->b ? ak_load_u(pb, j->bdt, i) : j->su;
            ak_store_u(o->data, odt, i, j->scalar_left ? u_op(j->op, y, x) : u_op(j->op, x, y));
            break;
        }
        case CALC_I: {
            int64_t x = ak_load_i(pa, j->adt, i);
            int64_t y = j->b ? ak_load_i(pb, j->bdt, i) : j->si;
            ak_store_i(o->data, odt, i, j->scalar_left ? i_op(j->op, y, x) : i_op(j->op, x, y));
            break;
        }
        }
    }
    free(sa);
    free(sb);
}

/* Run the job into a new array of `dtype` and `size` (unpublished). */
static object *ew_make(ew_job *j, h5ark_dtype dtype, uint64_t size, h5ark_error *err) {
    /* at several ranks a locale reads its rows of the operands from its own shards */
    if ((j->a && !ak_block_layout(j->a)) || (j->b && !ak_block_layout(j->b))) {
        ranks_not_yet(err, "elementwise work on an array that is not block distributed");
        return NULL;
    }
    object *out = object_new_pdarray(dtype, size, err);
    if (!out) return NULL;
    j->out = out->values;
    atomic_init(&j->failed, false);
    locales_run(ew_locale, j);
    if (!atomic_load(&j->failed)) return out;
    object_release(out);
    h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return NULL;
}

/* Run the job into a new array of `dtype` and `size`, reply its created text. */
static int ew_run(ak_ctx *ctx, ew_job *j, h5ark_dtype dtype, uint64_t size, h5ark_error *err) {
    object *out = ew_make(j, dtype, size, err);
    if (!out) return -1;
    int rc = ak_reply_created(ctx, out, err);
    object_release(out);
    return rc;
}

/* cast<from,to,1> {name} */
static int cmd_cast(ak_ctx *ctx, h5ark_error *err) {
    h5ark_dtype from, to;
    if (param_dtype(ctx, 0, &from, err) || param_dtype(ctx, 1, &to, err) || check_rank(ctx, err))
        return -1;
    object *a = numeric_arg(ctx, "name", err);
    if (!a) return -1;
    int rc = 0;
    if (a->dtype != from)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not %s", a->name,
                        h5ark_dtype_name(a->dtype), h5ark_dtype_name(from));
    ew_job j = {.op = OP_CAST, .a = a->values, .adt = a->dtype};
    if (rc == 0) rc = ew_run(ctx, &j, to, a->size, err);
    object_release(a);
    return rc;
}

/* Whether a uint64 array is all zeros (each rank looks at its own shards). */
static int all_zero(const darray *a, bool *zero, h5ark_error *err) {
    uint64_t nonzero = 0;
    for (int b = 0; b < a->nshards && !nonzero; b++) {
        const uint64_t *v = a->shards[b].data;
        for (uint64_t i = 0; locales_is_local(b) && i < a->shards[b].count && !nonzero; i++)
            nonzero = v[i] != 0;
    }
    if (ranks_call_seq() && ranks_allreduce_u64(&nonzero, 1, RANKS_MAX, err)) return -1;
    *zero = !nonzero;
    return 0;
}

/* bigint_to_uint_list<bigint,1> {array}: the limbs as new uint64 arrays, least significant
 * first and as many as the largest value needs (at least one), as Arkouda's server gives
 * them: a JSON list of their created texts (the client reverses it and downloads each). */
static int cmd_bigint_limbs(ak_ctx *ctx, h5ark_error *err) {
    if (ctx->in->nparams && check_rank(ctx, err)) return -1; /* older clients send no template */
    object *a = ak_object_arg(ctx, "array", H5ARK_PDARRAY, err);
    if (!a) return -1;
    json_t *list = json_array(), *made = json_array();
    int rc = list && made ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && a->dtype != H5ARK_BIGINT)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not bigint", a->name,
                        h5ark_dtype_name(a->dtype));
    if (ranks_call_seq()) rc = ranks_agree(rc, err); /* each step on every rank or none */
    size_t k = rc == 0 ? a->ncomponents : 0;
    char limb[32];
    for (; k > 1; k--) {
        snprintf(limb, sizeof limb, "Limb_%zu", k - 1);
        object *top = object_component_get(a, limb);
        bool zero = false;
        if (top && all_zero(top->values, &zero, err)) rc = -1;
        if (!top || !zero) break;
    }
    for (size_t i = 0; rc == 0 && i < k; i++) {
        snprintf(limb, sizeof limb, "Limb_%zu", i);
        object *src = object_component_get(a, limb);
        ew_job j = {.op = OP_CAST, .a = src ? src->values : NULL, .adt = H5ARK_UINT64};
        object *out = src ? ew_make(&j, H5ARK_UINT64, a->size, err) : NULL;
        if (!src) h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has no %s", a->name, limb);
        int published = out ? registry_publish(out, NULL, err) : -1;
        if (out && ranks_call_seq()) { /* on every rank or on none */
            int all = ranks_agree(published, err);
            if (all && published == 0) registry_remove(out->name, &(h5ark_error){0});
            published = all;
        }
        char *text = published == 0 ? ak_created(out) : NULL;
        if (published == 0) json_array_append_new(made, json_string(out->name));
        if (published == 0 && !text) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = text && json_array_append_new(list, json_string(text)) == 0 ? 0 : -1;
        if (ranks_call_seq()) rc = ranks_agree(rc, err);
        free(text);
        object_release(out);
    }
    char *msg = rc == 0 ? json_dumps(list, JSON_COMPACT) : NULL;
    if (rc == 0 && !msg) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc) { /* all or none */
        size_t m;
        json_t *name;
        json_array_foreach(made, m, name)
            registry_remove(json_string_value(name), &(h5ark_error){0});
    } else {
        free(ctx->msg);
        ctx->msg = msg;
    }
    json_decref(list);
    json_decref(made);
    object_release(a);
    return rc;
}

/* big_int_creation<bigint,1> {num_arrays, shape, arrays, max_bits}: a bigint from uint64
 * arrays of one length given most significant first (the client's bigint_from_uint_arrays
 * and ak.array of Python ints), each copied into a limb, the values cut to max_bits (-1:
 * unbounded) as Arkouda's server cuts them. */
static int cmd_bigint_create(ak_ctx *ctx, h5ark_error *err) {
    int64_t max_bits = -1;
    if ((ctx->in->nparams && check_rank(ctx, err)) ||
        (ak_arg(ctx->in, "max_bits") && ak_arg_int(ctx->in, "max_bits", &max_bits, err)))
        return -1;
    if (max_bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    json_t *names = ak_arg_list(ctx->in, "arrays", err);
    if (!names) return -1;
    size_t k = json_array_size(names);
    object **parts = k && k <= 4096 ? calloc(k, sizeof *parts) : NULL;
    int rc = parts            ? 0
             : k && k <= 4096 ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
                              : h5ark_fail(err, H5ARK_BAD_REQUEST,
                                           "argument 'arrays' must name 1 to 4096 arrays");
    for (size_t i = 0; rc == 0 && i < k; i++) {
        const char *name = json_string_value(json_array_get(names, i));
        if (!name || !(parts[i] = registry_get(name, err)))
            rc = name ? -1 : h5ark_fail(err, H5ARK_BAD_REQUEST, "'arrays' must list names");
        else if (parts[i]->objtype != H5ARK_PDARRAY || parts[i]->dtype != H5ARK_UINT64)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is not a uint64 pdarray", name);
        else if (parts[i]->size != parts[0]->size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%s has %llu elements, %s %llu", name,
                            (unsigned long long)parts[i]->size, parts[0]->name,
                            (unsigned long long)parts[0]->size);
    }
    /* every failure of one rank alone (out of memory) goes through an agreement before the
     * next collective: making `big`, and each limb */
    if (ranks_call_seq()) rc = ranks_agree(rc, err);
    object *big =
        rc == 0 ? object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, parts[0]->size, err) : NULL;
    if (rc == 0 && !big) rc = -1;
    if (big) big->max_bits = max_bits;
    /* limb j from the j-th array from the end; limbs wholly above max_bits are left out */
    for (size_t j = 0; rc == 0 && j < k && (j == 0 || max_bits < 0 || (int64_t)j * 64 < max_bits);
         j++) {
        int64_t keep = max_bits < 0 ? 64 : max_bits - (int64_t)j * 64;
        uint64_t mask = keep >= 64 ? UINT64_MAX : (UINT64_C(1) << keep) - 1;
        ew_job jj = {.op = keep >= 64 ? OP_CAST : OP_AND,
                     .calc = CALC_U,
                     .a = parts[k - 1 - j]->values,
                     .adt = H5ARK_UINT64,
                     .su = mask};
        object *limb = ew_make(&jj, H5ARK_UINT64, big->size, err);
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", j);
        rc = limb && object_add_component(big, name, limb, err) == 0 ? 0 : -1;
        if (ranks_call_seq()) rc = ranks_agree(rc, err);
        object_release(limb);
    }
    if (rc == 0) rc = ak_reply_created(ctx, big, err);
    object_release(big);
    for (size_t i = 0; parts && i < k; i++)
        object_release(parts[i]);
    free(parts);
    json_decref(names);
    return rc;
}

static int op_of(const char *name, op_kind *op, h5ark_error *err) {
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
        if (strcmp(op_names[i], name) == 0) {
            *op = (op_kind)i;
            return 0;
        }
    return h5ark_fail(err, H5ARK_BAD_REQUEST, "unsupported operator '%.20s'", name);
}

/* numpy's result dtype of `a op b` for Arkouda's four dtypes, and how to compute it. */
static int result_of(op_kind op, h5ark_dtype a, h5ark_dtype b, h5ark_dtype *out, calc_kind *calc,
                     h5ark_error *err) {
    bool fa = ak_is_float(a), fb = ak_is_float(b);
    bool ua = ak_is_unsigned(a), ub = ak_is_unsigned(b);
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
                   : H5ARK_INT64; /* numpy: bool + bool is or (callers use OP_OR) */
    }
    if (is_comparison(op)) *out = H5ARK_BOOLEAN;
    return 0;
}

/* binopvv<T,U,1> {op, a, b} */
static int cmd_binopvv(ak_ctx *ctx, h5ark_error *err) {
    const char *opname;
    op_kind op = OP_ADD;
    if (check_rank(ctx, err) || ak_arg_str(ctx->in, "op", &opname, err) || op_of(opname, &op, err))
        return -1;
    object *a = numeric_arg(ctx, "a", err);
    object *b = a ? numeric_arg(ctx, "b", err) : NULL;
    int rc = b ? 0 : -1;
    if (rc == 0 && a->size != b->size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the arrays differ in size: %llu and %llu",
                        (unsigned long long)a->size, (unsigned long long)b->size);
    ew_job j = {.op = op};
    h5ark_dtype dtype;
    if (rc == 0) rc = result_of(op, a->dtype, b->dtype, &dtype, &j.calc, err);
    if (rc == 0) {
        if (a->dtype == H5ARK_BOOLEAN && b->dtype == H5ARK_BOOLEAN && op == OP_ADD) j.op = OP_OR;
        j.a = a->values, j.b = b->values, j.adt = a->dtype, j.bdt = b->dtype;
        rc = ew_run(ctx, &j, dtype, a->size, err);
    }
    object_release(a);
    object_release(b);
    return rc;
}

/* The scalar argument `value`, as the dtype the template gives it. */
static int scalar_arg(ak_ctx *ctx, h5ark_dtype t, ew_job *j, h5ark_error *err) {
    const char *text;
    if (ak_arg_str(ctx->in, "value", &text, err)) return -1;
    bool ok;
    if (t == H5ARK_BOOLEAN) {
        ok = strcmp(text, "True") == 0 || strcmp(text, "False") == 0 || strcmp(text, "true") == 0 ||
             strcmp(text, "false") == 0;
        j->si = text[0] == 'T' || text[0] == 't';
        j->su = (uint64_t)j->si;
        j->sf = (double)j->si;
    } else if (ak_is_float(t)) {
        ok = ak_parse_double(text, &j->sf);
        j->si = (int64_t)j->sf;
        j->su = (uint64_t)j->si;
    } else if (ak_is_unsigned(t)) {
        ok = ak_parse_uint(text, &j->su);
        j->si = (int64_t)j->su;
        j->sf = (double)j->su;
    } else {
        ok = ak_parse_int(text, &j->si);
        j->su = (uint64_t)j->si;
        j->sf = (double)j->si;
    }
    if (!ok)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'value' is not a %s: '%.60s'",
                          h5ark_dtype_name(t), text);
    return 0;
}

/* binopvs<T,U,1> {op, a, value} and binopsv<U,T,1> {op, a, value}: the scalar's dtype is
 * the template's second (vs) or first (sv) parameter. */
static int binop_scalar(ak_ctx *ctx, bool scalar_left, h5ark_error *err) {
    const char *opname;
    op_kind op = OP_ADD;
    h5ark_dtype st;
    if (check_rank(ctx, err) || param_dtype(ctx, scalar_left ? 0 : 1, &st, err) ||
        ak_arg_str(ctx->in, "op", &opname, err) || op_of(opname, &op, err))
        return -1;
    object *a = numeric_arg(ctx, "a", err);
    if (!a) return -1;
    ew_job j = {.op = op, .a = a->values, .adt = a->dtype, .scalar_left = scalar_left};
    h5ark_dtype dtype;
    int rc = scalar_arg(ctx, st, &j, err);
    if (rc == 0)
        rc = scalar_left ? result_of(op, st, a->dtype, &dtype, &j.calc, err)
                         : result_of(op, a->dtype, st, &dtype, &j.calc, err);
    if (rc == 0) {
        if (a->dtype == H5ARK_BOOLEAN && st == H5ARK_BOOLEAN && op == OP_ADD) j.op = OP_OR;
        j.bdt = st;
        rc = ew_run(ctx, &j, dtype, a->size, err);
    }
    object_release(a);
    return rc;
}

static int cmd_binopvs(ak_ctx *ctx, h5ark_error *err) {
    return binop_scalar(ctx, false, err);
}

static int cmd_binopsv(ak_ctx *ctx, h5ark_error *err) {
    return binop_scalar(ctx, true, err);
}

/* set<T,1> {array, dtype, val}: every element set to val. */
static int cmd_set(ak_ctx *ctx, h5ark_error *err) {
    const char *text, *name;
    if (check_rank(ctx, err) || ak_arg_str(ctx->in, "val", &text, err) ||
        ak_arg_str(ctx->in, "array", &name, err))
        return -1;
    object *a = numeric_arg(ctx, "array", err);
    if (!a) return -1;
    ew_job j = {.op = OP_FILL};
    uint64_t v = 0; /* the value, stored as the array's dtype */
    int rc = ak_scalar_parse(a->dtype, text, "val", &v, err);
    j.calc = ak_is_float(a->dtype) ? CALC_F : ak_is_unsigned(a->dtype) ? CALC_U : CALC_I;
    j.sf = ak_load_f(&v, a->dtype, 0);
    j.su = ak_load_u(&v, a->dtype, 0);
    j.si = ak_load_i(&v, a->dtype, 0);
    object *out = rc == 0 ? object_new_pdarray(a->dtype, a->size, err) : NULL;
    if (out) {
        j.out = out->values;
        atomic_init(&j.failed, false);
        locales_run(ew_locale, &j);
        rc = replace(name, out, err);
        object_release(out);
    } else {
        rc = -1;
    }
    object_release(a);
    return rc ? -1 : ak_reply(ctx, err, "set element in %s", name);
}

/* ---- reductions ---- */

typedef enum { R_ALL, R_ANY, R_SUM, R_MAX, R_MIN, R_ISSORTED, R_ARGMAX, R_ARGMIN, R_PROD } red_kind;

static const struct {
    const char *name;
    red_kind kind;
} reductions[] = {{"allAll", R_ALL},       {"anyAll", R_ANY},       {"sumAll", R_SUM},
                  {"maxAll", R_MAX},       {"minAll", R_MIN},       {"isSortedAll", R_ISSORTED},
                  {"argmaxAll", R_ARGMAX}, {"argminAll", R_ARGMIN}, {"prodAll", R_PROD}};

typedef struct {
    bool any, all, sorted, nan;
    int64_t si;
    uint64_t su;
    double sf;
    uint64_t at; /* index of the extreme */
    bool have;
    double first, last; /* a shard's ends, for isSorted across shards (in its kind) */
    int64_t first_i, last_i;
    uint64_t first_u, last_u;
} red_part;

typedef struct {
    const object *x;
    red_kind kind;
    red_part *parts;
} red_job;

/* One locale's part of a reduction over its shard. For max and min the first extreme
 * wins (argmax's tie rule), and a NaN beats every number, as in numpy. */
static void red_locale(int locale, void *arg) {
    red_job *j = arg;
    const darray *a = j->x->values;
    const shard *s = &a->shards[locale];
    red_part *p = &j->parts[locale];
    h5ark_dtype t = a->dtype;
    bool f = ak_is_float(t), u = ak_is_unsigned(t);
    p->all = true;
    p->sorted = true;
    p->si = j->kind == R_PROD ? 1 : 0;
    p->su = j->kind == R_PROD ? 1 : 0;
    p->sf = j->kind == R_PROD ? 1 : 0;
    for (uint64_t i = 0; i < s->count; i++) {
        double fv = f ? ak_load_f(s->data, t, i) : 0;
        int64_t iv = !f && !u ? ak_load_i(s->data, t, i) : 0;
        uint64_t uv = u ? ak_load_u(s->data, t, i) : 0;
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
        case R_ARGMIN: {
            bool more = j->kind == R_MAX || j->kind == R_ARGMAX;
            bool better;
            if (!p->have)
                better = true;
            else if (f)
                better = !p->nan && (isnan(fv) || (more ? fv > p->sf : fv < p->sf));
            else if (u)
                better = more ? uv > p->su : uv < p->su;
            else
                better = more ? iv > p->si : iv < p->si;
            if (better) {
                p->sf = fv, p->si = iv, p->su = uv, p->at = s->start + i, p->have = true;
                p->nan = f && isnan(fv);
            }
            break;
        }
        case R_ISSORTED:
            if (i > 0) {
                double pf = f ? ak_load_f(s->data, t, i - 1) : 0;
                bool ok = f   ? pf <= fv
                          : u ? ak_load_u(s->data, t, i - 1) <= uv
                              : ak_load_i(s->data, t, i - 1) <= iv;
                p->sorted &= ok;
            }
            break;
        default: break;
        }
        if (i == 0) p->first = fv, p->first_i = iv, p->first_u = uv;
        p->last = fv, p->last_i = iv, p->last_u = uv;
    }
}

/* At several ranks: every rank's parts (its locales') to rank 0, into j->parts; rc is this
 * rank's outcome so far, agreed on before anything moves (a rank failing alone before the
 * gather must not leave the others waiting in it). */
static int gather_parts(red_job *j, int rc, h5ark_error *err) {
    int R = ranks_count(), T = locales_local_count();
    uint64_t piece = (uint64_t)T * sizeof *j->parts;
    uint64_t *counts = rc ? NULL : sysio.calloc((size_t)R, sizeof *counts);
    red_part *all = rc ? NULL : sysio.calloc((size_t)R * (size_t)T, sizeof *all);
    if (rc == 0 && !(counts && all)) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (int r = 0; counts && r < R; r++)
        counts[r] = piece;
    if (ranks_agree(rc, err) == 0) {
        h5ark_span mine = {j->parts + locales_local_first(), piece};
        rc = ranks_gatherv(&mine, 1, all, counts, err);
        if (rc == 0 && ranks_self() == 0) memcpy(j->parts, all, (size_t)R * (size_t)piece);
    } else {
        rc = -1;
    }
    free(counts);
    free(all);
    return rc;
}

/* <op>All<T,1> {x, skipNan} */
static int cmd_reduce(ak_ctx *ctx, h5ark_error *err) {
    red_kind kind = R_ALL;
    for (size_t i = 0; i < sizeof reductions / sizeof reductions[0]; i++)
        if (strcmp(reductions[i].name, ctx->in->base) == 0) kind = reductions[i].kind;
    h5ark_dtype dt;
    if (param_dtype(ctx, 0, &dt, err) || check_rank(ctx, err)) return -1;
    object *x = numeric_arg(ctx, "x", err);
    if (!x) return -1;
    h5ark_dtype t = x->dtype;
    if (t != dt) {
        object_release(x);
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not %s", x->name, h5ark_dtype_name(t),
                          h5ark_dtype_name(dt));
    }
    int n = x->values->nshards;
    red_job j = {.x = x, .kind = kind, .parts = sysio.calloc((size_t)n, sizeof *j.parts)};
    int rc = j.parts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && x->size) locales_run(red_locale, &j);
    if (ranks_count() > 1) rc = gather_parts(&j, rc, err);
    if (rc) {
        free(j.parts);
        object_release(x);
        return -1;
    }
    if (ranks_self() != 0) { /* the answer is rank 0's */
        free(j.parts);
        object_release(x);
        return 0;
    }
    bool f = ak_is_float(t), u = ak_is_unsigned(t);
    red_part r = {.all = true,
                  .sorted = true,
                  .si = kind == R_PROD,
                  .su = kind == R_PROD,
                  .sf = kind == R_PROD};
    bool seen = false;
    double prev_f = 0;
    int64_t prev_i = 0;
    uint64_t prev_u = 0;
    for (int b = 0; b < n; b++) {
        red_part *p = &j.parts[b];
        if (!x->values->shards[b].count) continue;
        r.any |= p->any;
        r.all &= p->all;
        r.sorted &= p->sorted;
        if (seen) /* the shard's first against the last before it */
            r.sorted &= f ? prev_f <= p->first : u ? prev_u <= p->first_u : prev_i <= p->first_i;
        prev_f = p->last, prev_i = p->last_i, prev_u = p->last_u;
        seen = true;
        if (kind == R_SUM) {
            r.sf += p->sf;
            r.si = (int64_t)((uint64_t)r.si + (uint64_t)p->si);
            r.su += p->su;
        } else if (kind == R_PROD) {
            r.sf *= p->sf;
            r.si = (int64_t)((uint64_t)r.si * (uint64_t)p->si);
            r.su *= p->su;
        } else if (p->have) {
            bool more = kind == R_MAX || kind == R_ARGMAX, better;
            if (!r.have)
                better = true;
            else if (f)
                better = !r.nan && (p->nan || (more ? p->sf > r.sf : p->sf < r.sf));
            else if (u)
                better = more ? p->su > r.su : p->su < r.su;
            else
                better = more ? p->si > r.si : p->si < r.si;
            if (better)
                r.sf = p->sf, r.si = p->si, r.su = p->su, r.at = p->at, r.nan = p->nan,
                r.have = true;
        }
    }
    free(j.parts);
    object_release(x);
    char text[96];
    rc = 0;
    switch (kind) {
    case R_ALL: rc = ak_reply(ctx, err, "bool %s", r.all ? "true" : "false"); break;
    case R_ANY: rc = ak_reply(ctx, err, "bool %s", r.any ? "true" : "false"); break;
    case R_ISSORTED: rc = ak_reply(ctx, err, "bool %s", r.sorted ? "true" : "false"); break;
    case R_SUM:
    case R_PROD:
        /* numpy: bool and signed sum to int64, unsigned to uint64 */
        if (f)
            ak_scalar_text(H5ARK_FLOAT64, &r.sf, 0, text, sizeof text);
        else if (u)
            ak_scalar_text(H5ARK_UINT64, &r.su, 0, text, sizeof text);
        else
            ak_scalar_text(H5ARK_INT64, &r.si, 0, text, sizeof text);
        rc = ak_reply(ctx, err, "%s", text);
        break;
    case R_ARGMAX:
    case R_ARGMIN:
        if (!r.have)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s of an empty array", ctx->in->base);
        rc = ak_reply(ctx, err, "int64 %llu", (unsigned long long)r.at);
        break;
    case R_MAX:
    case R_MIN: {
        if (!r.have)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s of an empty array", ctx->in->base);
        uint8_t b = (uint8_t)(r.si != 0);
        if (t == H5ARK_BOOLEAN)
            ak_scalar_text(t, &b, 0, text, sizeof text);
        else if (f)
            ak_scalar_text(H5ARK_FLOAT64, &r.sf, 0, text, sizeof text);
        else if (u)
            ak_scalar_text(H5ARK_UINT64, &r.su, 0, text, sizeof text);
        else
            ak_scalar_text(H5ARK_INT64, &r.si, 0, text, sizeof text);
        rc = ak_reply(ctx, err, "%s", text);
        break;
    }
    }
    return rc;
}

typedef struct {
    double sf;
    uint64_t su;
} cum_run;

/* Output element k (of dtype ot) of the running sum, adding element e (of dtype t). */
static void cum_step(cum_run *r, h5ark_dtype ot, void *out, uint64_t k, h5ark_dtype t,
                     const void *e) {
    if (ot == H5ARK_FLOAT64) {
        r->sf += ak_load_f(e, t, 0);
        ak_store_f(out, ot, k, r->sf);
    } else {
        r->su += ot == H5ARK_UINT64 ? ak_load_u(e, t, 0) : (uint64_t)ak_load_i(e, t, 0);
        ak_store_u(out, ot, k, r->su);
    }
}

/* cumSum<T,1> {x, axis, includeInitial}: running sums in order (int64 for bool and
 * signed, uint64, float64). */
static int cmd_cumsum(ak_ctx *ctx, h5ark_error *err) {
    bool initial = false;
    if (check_rank(ctx, err) || (ak_arg(ctx->in, "includeInitial") &&
                                 ak_arg_bool(ctx->in, "includeInitial", &initial, err)))
        return -1;
    object *x = numeric_arg(ctx, "x", err);
    if (!x) return -1;
    h5ark_dtype t = x->dtype;
    h5ark_dtype ot = ak_is_float(t)      ? H5ARK_FLOAT64
                     : ak_is_unsigned(t) ? H5ARK_UINT64
                                         : H5ARK_INT64;
    uint64_t n = x->size + (initial ? 1 : 0);
    int rc = 0;
    if (!ak_block_layout(x->values))
        rc = ranks_not_yet(err, "cumSum of an array that is not block distributed");
    object *out = rc == 0 ? object_new_pdarray(ot, n, err) : NULL;
    if (rc == 0 && !out) rc = -1;
    cum_run run = {0};
    if (rc == 0 && ranks_count() > 1) {
        /* in order, as one daemon: each rank goes on from the running sum of the rank
         * before it and hands its own on; with includeInitial every sum moves one row on,
         * some onto the next rank (ak_put_rows) */
        int me = ranks_self(), first = locales_local_first(), T = locales_local_count();
        uint64_t nloc = 0, j = 0, *rows = NULL, reserved = 0; /* against --max-memory */
        char *vals = NULL;
        for (int b = first; b < first + T; b++)
            nloc += x->values->shards[b].count;
        if (initial && (registry_scratch(nloc * 8, (void **)&rows, &reserved, err) ||
                        registry_scratch(nloc * 8, (void **)&vals, &reserved, err)))
            rc = -1;
        rc = ranks_agree(rc, err);
        if (rc == 0 && me > 0) rc = ranks_recv(me - 1, &run, sizeof run, err);
        for (int b = first; rc == 0 && b < first + T; b++) {
            const shard *xs = &x->values->shards[b];
            for (uint64_t k = 0; k < xs->count; k++, j++) {
                const char *e = (const char *)xs->data + k * x->values->itemsize;
                if (initial) rows[j] = xs->start + k + 1;
                cum_step(&run, ot, initial ? (void *)vals : out->values->shards[b].data,
                         initial ? j : k, t, e);
            }
        }
        h5ark_span span = {&run, sizeof run};
        if (rc == 0 && me + 1 < ranks_count()) rc = ranks_send(me + 1, &span, 1, err);
        if (rc == 0 && initial) {
            if (locales_is_local(0)) ak_store_u(out->values->shards[0].data, ot, 0, 0);
            rc = ak_put_rows(out->values, rows, vals, nloc, err);
        }
        free(rows);
        free(vals);
        registry_unreserve(reserved);
    }
    /* one pass in order: each output element's shard is looked up once per shard run */
    for (uint64_t i = 0; rc == 0 && ranks_count() == 1 && i < n;) {
        const shard *o = &out->values->shards[darray_shard_of(out->values, i)];
        for (uint64_t k = i - o->start; k < o->count; k++, i++) {
            if (initial && i == 0) {
                ak_store_u(o->data, ot, k, 0);
                continue;
            }
            cum_step(&run, ot, o->data, k, t, ak_elem(x->values, initial ? i - 1 : i));
        }
    }
    if (rc == 0) rc = ak_reply_created(ctx, out, err);
    object_release(out);
    object_release(x);
    return rc;
}

/* str / repr {array, printThresh}: numpy's text of the array, the first and last three
 * elements with "..." between when it has more than printThresh. */
static int cmd_str(ak_ctx *ctx, h5ark_error *err) {
    int64_t thresh = 100;
    if (ak_arg(ctx->in, "printThresh") && ak_arg_int(ctx->in, "printThresh", &thresh, err))
        return -1;
    object *a = numeric_arg(ctx, "array", err);
    if (!a) return -1;
    bool repr = strcmp(ctx->in->base, "repr") == 0;
    size_t cap = 64, len = 0;
    char *text = malloc(cap);
    bool cut = thresh >= 0 && a->size > (uint64_t)thresh && a->size > 6;
    int rc = text ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (text) len = (size_t)snprintf(text, cap, "%s[", repr ? "array(" : "");
    /* a rank that ran out of memory still takes part in every element's fetch */
    for (uint64_t i = 0; i < a->size; i++) {
        if (cut && i == 3) i = a->size - 3;
        char v[72];
        uint64_t e[2];                             /* an element, from the rank holding it */
        if (ak_elem_ranks(a->values, i, e, err)) { /* the job is broken: every rank fails */
            rc = -1;
            break;
        }
        if (rc) continue;
        ak_value_text(a->dtype, e, 0, v, sizeof v);
        size_t need = len + strlen(v) + 8;
        if (need > cap) {
            char *bigger = realloc(text, need * 2);
            if (!bigger) {
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
                continue;
            }
            text = bigger;
            cap = need * 2;
        }
        len += (size_t)snprintf(text + len, cap - len, "%s%s%s", i ? " " : "",
                                cut && i == a->size - 3 ? "... " : "", v);
    }
    if (rc == 0) rc = ak_reply(ctx, err, "%s]%s", text, repr ? ")" : "");
    free(text);
    object_release(a);
    return rc;
}

const ak_command ak_compute_commands[] = {
    {"arange", cmd_arange, 0, RANKS_ZERO, arange_ranks},
    {"randint", cmd_randint, 0, RANKS_ZERO},
    {"create", cmd_create, 0, RANKS_ZERO},
    {"set", cmd_set, 0, RANKS_EVERY},
    {"cast", cmd_cast, 0, RANKS_EVERY},
    {"binopvv", cmd_binopvv, 0, RANKS_EVERY},
    {"binopvs", cmd_binopvs, 0, RANKS_EVERY},
    {"binopsv", cmd_binopsv, 0, RANKS_EVERY},
    {"allAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"anyAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"sumAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"prodAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"maxAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"minAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"isSortedAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"argmaxAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"argminAll", cmd_reduce, AK_READ_ONLY, RANKS_EVERY},
    {"cumSum", cmd_cumsum, 0, RANKS_EVERY},
    {"str", cmd_str, AK_READ_ONLY, RANKS_EVERY},
    {"repr", cmd_str, AK_READ_ONLY, RANKS_EVERY},
    {"bigint_to_uint_list", cmd_bigint_limbs, 0, RANKS_EVERY},
    {"big_int_creation", cmd_bigint_create, 0, RANKS_EVERY},
    {0},
};
