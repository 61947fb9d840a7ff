/* bigint compute: bigint_binop (elementwise arithmetic, bitwise operators and comparisons
 * of bigint arrays with bigint, integer or bool arrays or one integer of any size),
 * bigint_full and bigint_fill (an array of one value) and bigint_assign (one value at
 * positions). A bigint is unsigned limbs (objects/bigint.h); each element is computed here
 * in two's complement over enough limbs for its exact result, then cut to the array's
 * max_bits (wrapping, as Arkouda's server masks its GMP results) or, unbounded, refused
 * when negative. One path at any rank count: each locale computes its own rows, and
 * objects are published on every rank or none. */
#include "commands/bigint_compute.h"

#include "commands.h"
#include "elements.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Working limbs of one element: results of up to 16384 bits, and the sign. */
enum { MAX_W = 257, MAX_SCALAR = 64 /* 4096 bits, as bigint_arange's bounds */ };

/* ---- numbers: w limbs of two's complement, least significant first ---- */

static bool is_neg(const uint64_t *x, size_t w) {
    return x[w - 1] >> 63;
}

static void negate(uint64_t *x, size_t w) {
    unsigned __int128 c = 1;
    for (size_t j = 0; j < w; j++) {
        c += (uint64_t)~x[j];
        x[j] = (uint64_t)c;
        c >>= 64;
    }
}

/* r = x + y, or x - y with sub */
static void add(uint64_t *r, const uint64_t *x, const uint64_t *y, size_t w, bool sub) {
    unsigned __int128 c = sub;
    for (size_t j = 0; j < w; j++) {
        c += (unsigned __int128)x[j] + (sub ? (uint64_t)~y[j] : y[j]);
        r[j] = (uint64_t)c;
        c >>= 64;
    }
}

/* r = x * y mod 2^(64 w): the signed product when it fits */
static void mul(uint64_t *r, const uint64_t *x, const uint64_t *y, size_t w) {
    memset(r, 0, w * 8);
    for (size_t i = 0; i < w; i++) {
        if (!x[i]) continue;
        unsigned __int128 c = 0;
        for (size_t j = 0; i + j < w; j++) {
            c += (unsigned __int128)x[i] * y[j] + r[i + j];
            r[i + j] = (uint64_t)c;
            c >>= 64;
        }
    }
}

/* -1, 0, 1 as x <, ==, > y (signed) */
static int cmp(const uint64_t *x, const uint64_t *y, size_t w) {
    bool nx = is_neg(x, w), ny = is_neg(y, w);
    if (nx != ny) return nx ? -1 : 1;
    for (size_t j = w; j-- > 0;)
        if (x[j] != y[j]) return x[j] < y[j] ? -1 : 1;
    return 0;
}

static bool is_zero(const uint64_t *x, size_t w) {
    for (size_t j = 0; j < w; j++)
        if (x[j]) return false;
    return true;
}

/* Python's floor division (q) and modulo (r, the divisor's sign) of x by y; by 0 both are
 * 0, as Arkouda's server gives. t holds 2 w scratch limbs. */
static void divmod(uint64_t *q, uint64_t *r, const uint64_t *x, const uint64_t *y, size_t w,
                   uint64_t *t) {
    memset(q, 0, w * 8);
    memset(r, 0, w * 8);
    if (is_zero(y, w)) return;
    uint64_t *ax = t, *ay = t + w;
    bool sx = is_neg(x, w), sy = is_neg(y, w);
    memcpy(ax, x, w * 8);
    memcpy(ay, y, w * 8);
    if (sx) negate(ax, w);
    if (sy) negate(ay, w);
    size_t top = w; /* long division, a bit at a time from ax's highest limb */
    while (top > 0 && !ax[top - 1])
        top--;
    for (size_t bit = top * 64; bit-- > 0;) {
        for (size_t j = w; j-- > 1;) /* r = r << 1 | the bit */
            r[j] = r[j] << 1 | r[j - 1] >> 63;
        r[0] = r[0] << 1 | (ax[bit / 64] >> (bit % 64) & 1);
        if (cmp(r, ay, w) >= 0) {
            add(r, r, ay, w, true);
            q[bit / 64] |= UINT64_C(1) << (bit % 64);
        }
    }
    if (sx != sy) {
        negate(q, w);
        if (!is_zero(r, w)) {
            memset(ax, 0, w * 8);
            ax[0] = 1;
            add(q, q, ax, w, true);
            add(r, ay, r, w, true);
        }
    }
    if (sy) negate(r, w);
}

/* ---- operands ---- */

typedef enum { B_ADD, B_SUB, B_MUL, B_FLOORDIV, B_MOD, B_AND, B_OR, B_XOR, B_CMP } bin_op;

static const struct {
    const char *name;
    bin_op op;
    int cmp; /* B_CMP: which results are true, bits of (cmp + 1) */
} op_table[] = {{"+", B_ADD, 0},  {"-", B_SUB, 0},  {"*", B_MUL, 0}, {"//", B_FLOORDIV, 0},
                {"%", B_MOD, 0},  {"&", B_AND, 0},  {"|", B_OR, 0},  {"^", B_XOR, 0},
                {"==", B_CMP, 2}, {"!=", B_CMP, 5}, {"<", B_CMP, 1}, {"<=", B_CMP, 3},
                {">", B_CMP, 4},  {">=", B_CMP, 6}};

/* An operand: an array (bigint, integer or bool) or one integer. */
typedef struct {
    const object *obj; /* NULL: the scalar */
    h5ark_dtype dtype;
    size_t k;         /* limbs its values need with a sign (as signed numbers: at most k) */
    int64_t max_bits; /* a bigint's; -1 otherwise */
    const darray *limb[MAX_W];
    uint64_t s[MAX_W]; /* the scalar, two's complement over MAX_W limbs */
} operand;

/* The integer argument `key` (an integer, or a decimal string of up to 4096 bits with an
 * optional sign) in two's complement over MAX_W limbs; *k the limbs it needs with its
 * sign. */
static int scalar_arg(command_ctx *ctx, const char *cmd, const char *key, uint64_t *s, size_t *k,
                      h5ark_error *err) {
    const h5ark_value *v = arg_value(ctx, key);
    memset(s, 0, MAX_W * 8);
    *k = 1;
    if (!v) return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: missing argument '%s'", cmd, key);
    if (v->kind == H5ARK_BOOL) {
        s[0] = v->as.b;
        return 0;
    }
    if (v->kind == H5ARK_INT || v->kind == H5ARK_UINT) {
        int64_t i;
        bool neg = h5ark_value_to_int64(v, &i) && i < 0;
        s[0] = neg ? (uint64_t)i : v->kind == H5ARK_UINT ? v->as.u : (uint64_t)v->as.i;
        if (neg) memset(s + 1, 0xff, (MAX_W - 1) * 8);
        *k = neg || !(s[0] >> 63) ? 1 : 2;
        return 0;
    }
    if (v->kind != H5ARK_STR)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "%s: argument '%s' must be an integer or a decimal string", cmd, key);
    const char *text = v->as.s.ptr, *p = text + (text[0] == '-' || text[0] == '+');
    if (*p < '0' || *p > '9' || v->as.s.len > 1300)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "%s: argument '%s' is not a decimal integer: '%.40s'", cmd, key, text);
    size_t n = 1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "%s: argument '%s' is not a decimal integer: '%.40s'", cmd, key,
                              text);
        unsigned __int128 c = (unsigned)(*p - '0');
        for (size_t j = 0; j < n; j++) {
            c += (unsigned __int128)s[j] * 10;
            s[j] = (uint64_t)c;
            c >>= 64;
        }
        if (c && n == MAX_SCALAR)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: argument '%s' has more than %d bits",
                              cmd, key, MAX_SCALAR * 64);
        if (c) s[n++] = (uint64_t)c;
    }
    *k = n + (s[n - 1] >> 63); /* room for the sign */
    if (text[0] == '-') negate(s, MAX_W);
    return 0;
}

/* The array argument `key` as an operand: bigint, integers or bool. */
static int array_operand(command_ctx *ctx, const char *cmd, const char *key, object **held,
                         operand *o, h5ark_error *err) {
    object *a = *held = registry_get(arg_str(ctx, key, ""), err);
    if (!a) return h5ark_fail_context(err, "%s: argument '%s'", cmd, key);
    o->obj = a;
    o->dtype = a->dtype;
    o->max_bits = -1;
    o->k = 1;
    if (a->objtype != H5ARK_PDARRAY || a->dtype == H5ARK_STRING || elem_is_float(a->dtype))
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "%s: '%s' must be a bigint, integer or bool pdarray, not %s %s", cmd, key,
                          h5ark_objtype_name(a->objtype), h5ark_dtype_name(a->dtype));
    if (a->dtype != H5ARK_BIGINT) {
        o->limb[0] = a->values;
        o->k = elem_is_unsigned(a->dtype) ? 2 : 1;
        return 0;
    }
    o->max_bits = a->max_bits;
    o->k = a->ncomponents + 1;
    if (o->k > MAX_W)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: '%s' has more than %d limbs", cmd, key,
                          MAX_W - 1);
    for (size_t q = 0; q < a->ncomponents; q++) {
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", q);
        object *limb = object_component_get(a, name);
        if (!limb) return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has no %s", a->name, name);
        o->limb[q] = limb->values;
    }
    return 0;
}

/* Whether this rank holds every row of `a` its shards of `out` cover (always at one rank),
 * agreed on by every rank. */
static int rows_held(const darray *a, const darray *out, h5ark_error *err) {
    bool held = true;
    for (int b = 0; b < out->nshards && held; b++) {
        const shard *o = &out->shards[b];
        if (!locales_is_local(b) || !o->count) continue;
        for (int s = darray_shard_of(a, o->start); s <= darray_shard_of(a, o->start + o->count - 1);
             s++)
            held &= locales_is_local(s);
    }
    return ranks_agree(held ? 0 : ranks_not_yet(err, "bigint work on arrays laid out apart"), err);
}

/* Rows [o->start, +o->count) of an operand's arrays: pointers in p (copies in scratch). */
static bool operand_rows(const operand *o, const shard *sh, const void **p, void **scratch) {
    size_t n = !o->obj ? 0 : o->dtype == H5ARK_BIGINT ? o->obj->ncomponents : 1;
    for (size_t q = 0; q < n; q++)
        if (!(p[q] = elem_range(o->limb[q], sh->start, sh->count, &scratch[q]))) return false;
    return true;
}

/* Element i of an operand into x (w limbs). */
static void operand_load(const operand *o, const void *const *p, uint64_t i, uint64_t *x,
                         size_t w) {
    if (!o->obj) {
        memcpy(x, o->s, w * 8);
        return;
    }
    memset(x, 0, w * 8);
    if (o->dtype == H5ARK_BIGINT) {
        for (size_t q = 0; q < o->obj->ncomponents; q++)
            x[q] = ((const uint64_t *)p[q])[i];
    } else if (elem_is_unsigned(o->dtype) || o->dtype == H5ARK_BOOLEAN) {
        x[0] = o->dtype == H5ARK_BOOLEAN ? elem_load_i(p[0], o->dtype, i) != 0
                                         : elem_load_u(p[0], o->dtype, i);
    } else {
        int64_t v = elem_load_i(p[0], o->dtype, i);
        x[0] = (uint64_t)v;
        if (v < 0) memset(x + 1, 0xff, (w - 1) * 8);
    }
}

/* ---- the elementwise job ---- */

typedef struct {
    bin_op op;
    int cmp_true;
    const operand *x, *y;
    size_t w;         /* working limbs */
    int64_t max_bits; /* of the result: its values are cut to it; -1: negatives refused */
    size_t kout;      /* limbs written */
    darray *out[MAX_W];
    darray *flags;             /* comparisons: the bool result */
    uint64_t *first_neg, *top; /* per locale */
    atomic_bool failed;
} bin_job;

static const shard *job_shard(const bin_job *j, int b) {
    return j->flags ? &j->flags->shards[b] : &j->out[0]->shards[b];
}

/* r (w limbs) cut to max_bits bits */
static void cut(uint64_t *r, size_t w, int64_t max_bits) {
    for (size_t q = 0; q < w; q++) {
        int64_t keep = max_bits - (int64_t)q * 64;
        if (keep <= 0)
            r[q] = 0;
        else if (keep < 64)
            r[q] &= (UINT64_C(1) << keep) - 1;
    }
}

static void bin_element(const bin_job *j, uint64_t *x, uint64_t *y, uint64_t *r, uint64_t *t) {
    size_t w = j->w;
    switch (j->op) {
    case B_ADD: add(r, x, y, w, false); break;
    case B_SUB: add(r, x, y, w, true); break;
    case B_MUL: mul(r, x, y, w); break;
    case B_FLOORDIV: divmod(r, t + 2 * w, x, y, w, t); break;
    case B_MOD: divmod(t + 2 * w, r, x, y, w, t); break;
    case B_AND:
    case B_OR:
    case B_XOR:
        for (size_t q = 0; q < w; q++)
            r[q] = j->op == B_AND ? x[q] & y[q] : j->op == B_OR ? x[q] | y[q] : x[q] ^ y[q];
        break;
    case B_CMP: break;
    }
}

static void bin_locale(int b, void *arg) {
    bin_job *j = arg;
    const shard *sh = job_shard(j, b);
    j->first_neg[b] = UINT64_MAX;
    j->top[b] = 0;
    if (!sh->count) return;
    size_t w = j->w;
    const void *px[MAX_W], *py[MAX_W];
    void *sx[MAX_W] = {0}, *sy[MAX_W] = {0};
    uint64_t *buf = malloc(6 * w * 8);
    bool ok = buf && operand_rows(j->x, sh, px, sx) && operand_rows(j->y, sh, py, sy);
    for (uint64_t i = 0; ok && i < sh->count; i++) {
        uint64_t *x = buf, *y = buf + w, *r = buf + 2 * w, *t = buf + 3 * w;
        operand_load(j->x, px, i, x, w);
        operand_load(j->y, py, i, y, w);
        if (j->op == B_CMP) {
            ((uint8_t *)j->flags->shards[b].data)[i] = j->cmp_true >> (cmp(x, y, w) + 1) & 1;
            continue;
        }
        bin_element(j, x, y, r, t);
        if (j->max_bits >= 0) {
            cut(r, w, j->max_bits);
        } else if (is_neg(r, w)) {
            if (j->first_neg[b] == UINT64_MAX) j->first_neg[b] = sh->start + i;
            memset(r, 0, w * 8);
        }
        for (size_t q = 0; q < j->kout; q++) {
            ((uint64_t *)j->out[q]->shards[b].data)[i] = r[q];
            if (r[q] && q > j->top[b]) j->top[b] = q;
        }
    }
    if (!ok) atomic_store(&j->failed, true);
    for (size_t q = 0; q < MAX_W; q++) {
        free(sx[q]);
        free(sy[q]);
    }
    free(buf);
}

/* A bigint of `n` elements from limbs[0..k) and max_bits (limbs referenced). */
static object *bigint_of(object *const *limbs, size_t k, uint64_t n, int64_t max_bits,
                         h5ark_error *err) {
    object *big = object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, n, err);
    int rc = big ? 0 : -1;
    if (big) big->max_bits = max_bits;
    for (size_t q = 0; rc == 0 && q < k; q++) {
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", q);
        rc = object_add_component(big, name, limbs[q], err);
    }
    if (rc == 0) return big;
    object_release(big);
    return NULL;
}

/* Limbs for max_bits bits (at least one). */
static size_t limbs_for(int64_t max_bits) {
    return max_bits <= 64 ? 1 : (size_t)(max_bits + 63) / 64;
}

/* The elementwise work of j over n rows into a new bigint (or bool array) published as
 * the reply's object. */
static int bin_run(command_ctx *ctx, bin_job *j, uint64_t n, h5ark_error *err) {
    object *made[MAX_W] = {0}, *flags = NULL, *out = NULL;
    int L = locales_count();
    j->first_neg = calloc((size_t)L, sizeof *j->first_neg);
    j->top = calloc((size_t)L, sizeof *j->top);
    int rc = j->first_neg && j->top ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (j->op == B_CMP) {
        flags = rc == 0 ? object_new_pdarray(H5ARK_BOOLEAN, n, err) : NULL;
        if (!flags) rc = -1;
        j->flags = flags ? flags->values : NULL;
    }
    for (size_t q = 0; rc == 0 && j->op != B_CMP && q < j->kout; q++) {
        made[q] = object_new_pdarray(H5ARK_UINT64, n, err);
        if (!made[q]) rc = -1;
        j->out[q] = made[q] ? made[q]->values : NULL;
    }
    rc = ranks_agree(rc, err);
    const darray *shape = rc ? NULL : flags ? flags->values : j->out[0];
    for (int side = 0; rc == 0 && side < 2; side++) {
        const operand *o = side ? j->y : j->x;
        if (o->obj) rc = rows_held(o->limb[0], shape, err);
    }
    if (rc == 0) {
        for (int b = 0; b < L; b++)
            j->first_neg[b] = UINT64_MAX;
        atomic_init(&j->failed, false);
        locales_run(bin_locale, j);
        if (atomic_load(&j->failed)) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = ranks_agree(rc, err);
    }
    uint64_t info[2] = {UINT64_MAX, 0}; /* the first negative element, the top limb */
    for (int b = 0; rc == 0 && b < L; b++) {
        if (j->first_neg[b] < info[0]) info[0] = j->first_neg[b];
        if (j->top[b] > info[1]) info[1] = j->top[b];
    }
    if (rc == 0) rc = ranks_allreduce_u64(&info[0], 1, RANKS_MIN, err);
    if (rc == 0) rc = ranks_allreduce_u64(&info[1], 1, RANKS_MAX, err);
    if (rc == 0 && info[0] != UINT64_MAX)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                        "bigint_binop: element %llu of the result is negative; bigints here are "
                        "unsigned (with max_bits set, results wrap)",
                        (unsigned long long)info[0]);
    if (rc == 0 && flags) {
        out = flags;
        flags = NULL;
    } else if (rc == 0) { /* unbounded: the limbs the largest value needs */
        size_t k = j->max_bits >= 0 ? j->kout : (size_t)info[1] + 1;
        if (!(out = bigint_of(made, k, n, j->max_bits, err))) rc = -1;
        rc = ranks_agree(rc, err);
    }
    if (rc == 0)
        rc = command_publish(ctx, out, err);
    else
        object_release(out);
    object_release(flags);
    for (size_t q = 0; q < MAX_W; q++)
        object_release(made[q]);
    free(j->first_neg);
    free(j->top);
    return rc;
}

/* bigint_binop {op, a, b | value, reverse, name}: `a op b` (or `value op a` with reverse)
 * as integers of any size, at least one side a bigint array or `value` an integer; the
 * result a bigint (max_bits the operands' largest), or bool for comparisons. */
int bigint_cmd_binop(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "op", "");
    bool has_b = arg_has(ctx, "b"), reverse = arg_bool(ctx, "reverse", false);
    size_t which = 0, nops = sizeof op_table / sizeof op_table[0];
    while (which < nops && strcmp(op_table[which].name, name) != 0)
        which++;
    if (which == nops)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "bigint_binop: unsupported operator '%.20s' (+ - * // %% & | ^ == != < "
                          "<= > >=)",
                          name);
    if (has_b == arg_has(ctx, "value"))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "bigint_binop: give either 'b' (an array) or 'value' (an integer)");
    if (has_b && reverse)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "bigint_binop: 'reverse' goes with 'value'");
    operand *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    object *ha = NULL, *hb = NULL;
    if (!a || !b) {
        free(a);
        free(b);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    int rc = array_operand(ctx, "bigint_binop", "a", &ha, a, err);
    if (rc == 0 && has_b) rc = array_operand(ctx, "bigint_binop", "b", &hb, b, err);
    if (rc == 0 && !has_b) rc = scalar_arg(ctx, "bigint_binop", "value", b->s, &b->k, err);
    if (rc == 0 && !has_b) b->max_bits = -1;
    if (rc == 0 && hb && ha->size != hb->size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the arrays differ in size: %llu and %llu",
                        (unsigned long long)ha->size, (unsigned long long)hb->size);
    if (rc == 0 && hb && ha->dtype != H5ARK_BIGINT && hb->dtype != H5ARK_BIGINT)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "bigint_binop: neither array is a bigint");
    bin_job j = {.op = op_table[which].op, .cmp_true = op_table[which].cmp};
    j.x = reverse ? b : a;
    j.y = reverse ? a : b;
    j.max_bits = a->max_bits > b->max_bits ? a->max_bits : b->max_bits;
    size_t kx = j.x->k, ky = j.y->k, wide = kx > ky ? kx : ky;
    j.w = (j.op == B_MUL ? kx + ky : wide) + 1;
    if (j.max_bits >= 0 && limbs_for(j.max_bits) + 1 > j.w) j.w = limbs_for(j.max_bits) + 1;
    if (rc == 0 && j.w > MAX_W)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                        "bigint_binop: the result may need more than %d bits", (MAX_W - 1) * 64);
    j.kout = j.max_bits >= 0 ? limbs_for(j.max_bits) : j.w;
    if (rc == 0) rc = bin_run(ctx, &j, ha->size, err);
    object_release(ha);
    object_release(hb);
    free(a);
    free(b);
    return rc;
}

/* ---- one value ---- */

/* The integer argument `value` cut to max_bits (-1: refused when negative) into s; *k the
 * limbs the cut value needs (at least one). */
static int value_for(command_ctx *ctx, const char *cmd, int64_t max_bits, uint64_t *s, size_t *k,
                     h5ark_error *err) {
    if (scalar_arg(ctx, cmd, "value", s, k, err)) return -1;
    if (is_neg(s, MAX_W) && max_bits > (MAX_W - 1) * 64)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "%s: a negative value wraps at max_bits up to %d only", cmd,
                          (MAX_W - 1) * 64);
    if (max_bits >= 0)
        cut(s, MAX_W, max_bits);
    else if (is_neg(s, MAX_W))
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "%s: value is negative; bigints here are unsigned (with max_bits set, "
                          "values wrap)",
                          cmd);
    for (*k = MAX_W; *k > 1 && !s[*k - 1]; --*k)
        ;
    return 0;
}

typedef struct {
    darray *limb[MAX_W];
    size_t k;
    const uint64_t *v;
} full_job;

static void full_locale(int b, void *arg) {
    full_job *j = arg;
    for (size_t q = 0; q < j->k; q++) {
        uint64_t *d = j->limb[q]->shards[b].data;
        for (uint64_t i = 0; i < j->limb[q]->shards[b].count; i++)
            d[i] = j->v[q];
    }
}

/* A new bigint of n copies of the argument `value` (0 when absent), cut to max_bits; NULL
 * on every rank or none. */
static object *full_of(command_ctx *ctx, const char *cmd, uint64_t n, int64_t max_bits,
                       h5ark_error *err) {
    uint64_t s[MAX_W];
    full_job j = {.v = s};
    if (!arg_has(ctx, "value"))
        memset(s, 0, sizeof s), j.k = 1;
    else if (value_for(ctx, cmd, max_bits, s, &j.k, err))
        return NULL;
    object *limbs[MAX_W] = {0}, *big = NULL;
    int rc = 0;
    for (size_t q = 0; rc == 0 && q < j.k; q++) {
        limbs[q] = object_new_pdarray(H5ARK_UINT64, n, err);
        rc = ranks_agree(limbs[q] ? 0 : -1, err);
        if (rc == 0) j.limb[q] = limbs[q]->values;
    }
    if (rc == 0) locales_run(full_locale, &j);
    if (rc == 0 && !(big = bigint_of(limbs, j.k, n, max_bits, err))) rc = -1;
    if (ranks_agree(rc, err)) {
        object_release(big);
        big = NULL;
    }
    for (size_t q = 0; q < j.k; q++)
        object_release(limbs[q]);
    return big;
}

/* bigint_full {size, value, max_bits, name}: `size` copies of value (an integer or a
 * decimal string; cut to max_bits, -1 unbounded). */
int bigint_cmd_full(command_ctx *ctx, h5ark_error *err) {
    int64_t max_bits = arg_int(ctx, "max_bits", -1);
    uint64_t n = arg_uint(ctx, "size", 0);
    if (max_bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    if (n > OBJECT_MAX_ELEMENTS)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "bigint_full: %llu elements is too many",
                          (unsigned long long)n);
    object *big = full_of(ctx, "bigint_full", n, max_bits, err);
    return big ? command_publish(ctx, big, err) : -1;
}

/* bigint_fill {array, value}: every element of a bigint set to value (cut to its max_bits),
 * the filled copy replacing it under its name (as fill does). */
int bigint_cmd_fill(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "array", "");
    object *a = registry_get(name, err), *big = NULL;
    if (!a) return h5ark_fail_context(err, "bigint_fill: argument 'array'");
    int rc = 0;
    if (a->objtype != H5ARK_PDARRAY || a->dtype != H5ARK_BIGINT)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "bigint_fill: %s is %s %s, not a bigint pdarray",
                        name, h5ark_objtype_name(a->objtype), h5ark_dtype_name(a->dtype));
    else if (!(big = full_of(ctx, "bigint_fill", a->size, a->max_bits, err)))
        rc = -1;
    if (rc == 0) {
        big->tag = a->tag;
        rc = command_replace(ctx, big, name, err);
    }
    object_release(big);
    object_release(a);
    return rc;
}

/* ---- assignment ---- */

/* This rank's rows of the positions `pos` (its shards of them), in *rows (scratch). */
static int local_rows(const object *pos, uint64_t **rows, uint64_t *n, uint64_t *reserved,
                      h5ark_error *err) {
    const darray *pd = pos->values;
    *n = 0;
    for (int b = 0; b < pd->nshards; b++)
        *n += locales_is_local(b) ? pd->shards[b].count : 0;
    if (registry_scratch(*n * 8 + 8, (void **)rows, reserved, err)) return -1;
    uint64_t k = 0;
    for (int b = 0; b < pd->nshards; b++)
        for (uint64_t r = 0; locales_is_local(b) && r < pd->shards[b].count; r++)
            (*rows)[k++] = (uint64_t)((const int64_t *)pd->shards[b].data)[r];
    return 0;
}

/* bigint_assign {array, index, value}: array[index] = value (an integer or a decimal
 * string, cut to the array's max_bits), the changed copy replacing the array under its
 * name; limbs are added when the value needs more. */
int bigint_cmd_assign(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "array", "");
    object *a = registry_get(name, err), *idx = NULL, *pos = NULL, *out = NULL;
    object *limbs[MAX_W] = {0};
    uint64_t s[MAX_W], *rows = NULL, *vals = NULL, n = 0, reserved = 0;
    size_t kv = 1;
    int rc = a ? 0 : h5ark_fail_context(err, "bigint_assign: argument 'array'");
    if (rc == 0 && (a->objtype != H5ARK_PDARRAY || a->dtype != H5ARK_BIGINT))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "bigint_assign: %s is %s %s, not a bigint pdarray",
                        name, h5ark_objtype_name(a->objtype), h5ark_dtype_name(a->dtype));
    if (rc == 0 && a->ncomponents >= MAX_W)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "bigint_assign: %s has more than %d limbs", name,
                        MAX_W - 1);
    if (rc == 0) rc = value_for(ctx, "bigint_assign", a->max_bits, s, &kv, err);
    if (rc == 0 && !(idx = registry_get(arg_str(ctx, "index", ""), err)))
        rc = h5ark_fail_context(err, "bigint_assign: argument 'index'");
    if (rc) {
        object_release(a);
        return -1;
    }
    size_t k = a->ncomponents > kv ? a->ncomponents : kv;
    pos = elem_positions(idx, a->size, err); /* every rank, one outcome */
    rc = pos ? local_rows(pos, &rows, &n, &reserved, err) : -1;
    if (rc == 0) rc = registry_scratch(n * 8 + 8, (void **)&vals, &reserved, err);
    rc = ranks_agree(rc, err);
    for (size_t q = 0; rc == 0 && q < k; q++) {
        char limb[32];
        snprintf(limb, sizeof limb, "Limb_%zu", q);
        object *src = object_component_get(a, q < a->ncomponents ? limb : "Limb_0");
        /* a copy of the limb, or zeros laid out as the array's first limb */
        limbs[q] = src ? elem_masked_u64(src, q < a->ncomponents ? UINT64_MAX : 0, err) : NULL;
        if (!src) h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has no %s", name, limb);
        rc = ranks_agree(limbs[q] ? 0 : -1, err);
        for (uint64_t i = 0; rc == 0 && i < n; i++)
            vals[i] = s[q];
        if (rc == 0) rc = ranks_agree(elem_put_rows(limbs[q]->values, rows, vals, n, err), err);
    }
    if (rc == 0 && !(out = bigint_of(limbs, k, a->size, a->max_bits, err))) rc = -1;
    rc = ranks_agree(rc, err);
    if (rc == 0) {
        out->tag = a->tag;
        rc = command_replace(ctx, out, name, err);
    }
    free(rows);
    free(vals);
    registry_unreserve(reserved);
    for (size_t q = 0; q < k; q++)
        object_release(limbs[q]);
    object_release(out);
    object_release(pos);
    object_release(idx);
    object_release(a);
    return rc;
}
