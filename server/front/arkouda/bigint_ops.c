/* bigint compute of the Arkouda dialect, as Arkouda's client sends it: `ak.arange(n) +
 * 2**200` (binopvs<int64,bigint,1>), the binops of bigint arrays with bigint, integer or
 * bool arrays and scalars, `ak.zeros(n, dtype=bigint)` (create<bigint,1>), `ak.full` and
 * `ak.ones` of bigint (set<bigint,1>), casts to bigint and str/repr. They only translate,
 * to the native bigint_binop, bigint_full and bigint_fill (commands/bigint_compute.c), whose
 * results wrap at max_bits as Arkouda's server masks them; h5ark's bigints are unsigned,
 * so an unbounded negative result is refused. */
#include "front/arkouda/bigint_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A bigint element in decimal (malloc'd; NULL when out of memory) from its k limbs x
 * (least significant first, changed here): divided by 10^19 from the top until nothing is
 * left. */
char *ak_bigint_decimal(uint64_t *x, size_t k) {
    char *text = malloc(20 * (k ? k : 1) + 2);
    if (!text) return NULL;
    char *end = text + 20 * (k ? k : 1) + 1, *at = end;
    *end = '\0';
    const uint64_t base = 10000000000000000000ULL;
    for (size_t top = k;;) {
        unsigned __int128 rem = 0;
        for (size_t j = top; j-- > 0;) {
            unsigned __int128 cur = rem << 64 | x[j];
            x[j] = (uint64_t)(cur / base);
            rem = cur % base;
        }
        while (top > 0 && x[top - 1] == 0)
            top--;
        uint64_t r = (uint64_t)rem;
        for (int d = 0; d < 19 && (top > 0 || r || at == end); d++) { /* zeros only inside */
            *--at = (char)('0' + r % 10);
            r /= 10;
        }
        if (top == 0) break;
    }
    memmove(text, at, (size_t)(end - at) + 1);
    return text;
}

/* The reply's bytes, every span end to end, into out (n bytes at most); how many. */
uint64_t ak_result_bytes(const dispatch_result *res, void *out, uint64_t n) {
    uint64_t got = 0;
    for (size_t i = 0; i < res->nspans && got < n; i++) {
        uint64_t take = res->spans[i].len < n - got ? res->spans[i].len : n - got;
        memcpy((char *)out + got, res->spans[i].ptr, take);
        got += take;
    }
    return got;
}

bool ak_bigint_template(const ak_request *in) {
    for (int i = 0; i < in->nparams; i++)
        if (strcmp(in->params[i], "bigint") == 0) return true;
    return false;
}

/* binopvv<T,U,1> {op, a, b}, binopvs<T,U,1> {op, a, value} (a op value) and
 * binopsv<T,U,1> {op, a, value} (value op a): a is of dtype T, b or value of U. */
int ak_bigint_binop(ak_ctx *ctx, h5ark_error *err) {
    const char *op, *a, *other;
    bool vv = strcmp(ctx->in->base, "binopvv") == 0;
    if (ak_check_rank(ctx, err) || ak_arg_str(ctx->in, "op", &op, err) ||
        ak_arg_str(ctx->in, "a", &a, err) || ak_arg_str(ctx->in, vv ? "b" : "value", &other, err))
        return -1;
    h5ark_value *args = ak_str_args("op", op, "a", a, vv ? "b" : NULL, other, NULL);
    if (args && !vv) {
        bool t = strcmp(other, "True") == 0, f = strcmp(other, "False") == 0;
        h5ark_value *v = t || f ? h5ark_value_bool(t) : h5ark_value_str(other);
        if (h5ark_value_set(args, "value", v) ||
            h5ark_value_set(args, "reverse",
                            h5ark_value_bool(strcmp(ctx->in->base, "binopsv") == 0)))
            h5ark_value_destroy(&args);
    }
    return ak_native_created(ctx, "bigint_binop", args, err);
}

/* set<bigint,1> {array, dtype, val}: every element val, the native bigint_fill. */
int ak_bigint_set(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *val;
    if (ak_check_rank(ctx, err) || ak_arg_str(ctx->in, "array", &name, err) ||
        ak_arg_str(ctx->in, "val", &val, err))
        return -1;
    h5ark_value *args = ak_str_args("array", name, "value", val, NULL);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "bigint_fill", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    dispatch_result_free(&res);
    return ak_reply(ctx, err, "set element in %s", name);
}

/* cast<T,bigint,1> {name}: the values as a new bigint (bigint_binop's `+ 0`; a negative
 * int64 is refused, bigints here being unsigned); a bigint to another dtype is not
 * served. */
int ak_bigint_cast(ak_ctx *ctx, h5ark_error *err) {
    const char *name;
    const ak_request *in = ctx->in;
    if (in->nparams != 3 || strcmp(in->params[1], "bigint") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: a bigint is cast to bigint only", in->cmd);
    if (ak_check_rank(ctx, err) || ak_arg_str(in, "name", &name, err)) return -1;
    return ak_native_created(ctx, "bigint_binop",
                             ak_str_args("op", "+", "a", name, "value", "0", NULL), err);
}

int ak_bigint_create(ak_ctx *ctx, h5ark_error *err) {
    uint64_t size;
    if (ak_check_rank(ctx, err) || ak_arg_uint(ctx->in, "shape", &size, err)) return -1;
    h5ark_value *args = h5ark_value_map();
    if (args && h5ark_value_set(args, "size", h5ark_value_uint(size))) h5ark_value_destroy(&args);
    return ak_native_created(ctx, "bigint_full", args, err);
}

/* Elements [from, to) of the bigint `name` in decimal, each after a space (the first
 * after `lead`), appended to *text (malloc'd, *len long): the native get of its limbs, whose
 * bytes are Limb_0's values, then Limb_1's ... */
static int decimals(ak_ctx *ctx, const char *name, uint64_t from, uint64_t to, const char *lead,
                    char **text, size_t *len, h5ark_error *err) {
    h5ark_value *args = ak_str_args("name", name, NULL);
    if (args && (h5ark_value_set(args, "start", h5ark_value_uint(from)) ||
                 h5ark_value_set(args, "stop", h5ark_value_uint(to))))
        h5ark_value_destroy(&args);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "get", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    uint64_t n = to - from, k = 0;
    for (size_t i = 0; i < res.nspans; i++)
        k += res.spans[i].len;
    k = n ? k / 8 / n : 0;
    uint64_t *all = malloc((n * k > 0 ? n * k : 1) * 8), *x = malloc((k ? k : 1) * 8);
    rc = all && x ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) ak_result_bytes(&res, all, n * k * 8);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        for (uint64_t q = 0; q < k; q++)
            x[q] = all[q * n + i];
        char *v = ak_bigint_decimal(x, k);
        char *grown = v ? realloc(*text, *len + strlen(v) + strlen(lead) + 2) : NULL;
        if (grown) {
            *text = grown;
            *len += (size_t)sprintf(grown + *len, "%s%s", i ? " " : lead, v);
        } else {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        free(v);
    }
    dispatch_result_free(&res);
    free(all);
    free(x);
    return rc;
}

/* str / repr of a bigint {array, printThresh}: compute.c's layout (three and three around
 * "..." past printThresh), each element in decimal. */
int ak_bigint_str(ak_ctx *ctx, const ak_array *a, int64_t thresh, h5ark_error *err) {
    bool repr = strcmp(ctx->in->base, "repr") == 0;
    bool cut = thresh >= 0 && a->size > (uint64_t)thresh && a->size > 6;
    char *text = strdup(repr ? "array([" : "[");
    size_t len = text ? strlen(text) : 0;
    int rc = text ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) rc = decimals(ctx, a->name, 0, cut ? 3 : a->size, "", &text, &len, err);
    if (rc == 0 && cut)
        rc = decimals(ctx, a->name, a->size - 3, a->size, " ... ", &text, &len, err);
    if (rc == 0) rc = ak_reply(ctx, err, "%s]%s", text, repr ? ")" : "");
    free(text);
    return rc;
}
