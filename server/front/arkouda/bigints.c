/* bigint commands of the Arkouda dialect beside those that move limbs (compute.c): arange of
 * bigint, get_max_bits and set_max_bits, as Arkouda's client sends them for
 * `ak.arange(..., dtype=bigint)` and `pdarray.max_bits`. A bigint here is a composite of
 * uint64 limbs (objects/bigint.h): its values are unsigned. */
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LIMBS = 64 }; /* 4096 bits: the most big_int_creation takes */

/* A non-negative decimal integer as little-endian limbs (*k of them, at least one). */
static int parse_big(const char *text, const char *key, uint64_t *limb, size_t *k,
                     h5ark_error *err) {
    *k = 1;
    limb[0] = 0;
    const char *p = text;
    if (*p == '+') p++;
    if (*p == '-')
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "argument '%s' is negative (%.40s): bigints here are unsigned", key,
                          text);
    if (!*p) return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' is empty", key);
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' is not an integer: '%.40s'",
                              key, text);
        unsigned __int128 carry = (unsigned)(*p - '0');
        for (size_t i = 0; i < *k; i++) {
            carry += (unsigned __int128)limb[i] * 10;
            limb[i] = (uint64_t)carry;
            carry >>= 64;
        }
        if (carry && *k == MAX_LIMBS)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' has more than %d bits", key,
                              MAX_LIMBS * 64);
        if (carry) limb[(*k)++] = (uint64_t)carry;
    }
    return 0;
}

/* out[0..k) = a + i * b, all little-endian limbs of k (the caller sizes k for the result). */
static void mul_add(const uint64_t *a, const uint64_t *b, uint64_t i, uint64_t *out, size_t k) {
    unsigned __int128 carry = 0;
    for (size_t j = 0; j < k; j++) {
        carry += (unsigned __int128)b[j] * i + a[j];
        out[j] = (uint64_t)carry;
        carry >>= 64;
    }
}

/* a < b, both of k limbs */
static bool less(const uint64_t *a, const uint64_t *b, size_t k) {
    for (size_t j = k; j-- > 0;)
        if (a[j] != b[j]) return a[j] < b[j];
    return false;
}

typedef struct {
    uint64_t start[MAX_LIMBS + 2], step[MAX_LIMBS + 2];
    size_t k; /* limbs of the result */
    darray *limb[MAX_LIMBS + 2];
} arange_job;

static void arange_locale(int b, void *arg) {
    arange_job *j = arg;
    uint64_t v[MAX_LIMBS + 2];
    const shard *s = &j->limb[0]->shards[b];
    for (uint64_t r = 0; r < s->count; r++) {
        mul_add(j->start, j->step, s->start + r, v, j->k);
        for (size_t q = 0; q < j->k; q++)
            ((uint64_t *)j->limb[q]->shards[b].data)[r] = v[q];
    }
}

int ak_bigint_arange(ak_ctx *ctx, h5ark_error *err) {
    const char *t_start, *t_stop, *t_step;
    if (ak_arg_str(ctx->in, "start", &t_start, err) || ak_arg_str(ctx->in, "stop", &t_stop, err) ||
        ak_arg_str(ctx->in, "step", &t_step, err))
        return -1;
    arange_job *j = calloc(1, sizeof *j);
    uint64_t stop[MAX_LIMBS + 2] = {0}, v[MAX_LIMBS + 2];
    size_t ka = 0, kb = 0, kc = 0;
    if (!j) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = parse_big(t_start, "start", j->start, &ka, err) ||
                     parse_big(t_stop, "stop", stop, &kb, err) ||
                     parse_big(t_step, "step", j->step, &kc, err)
                 ? -1
                 : 0;
    size_t k = ka > kb ? ka : kb;
    if (kc > k) k = kc;
    k += 2; /* start + i * step for i < 2^64 fits in two limbs more */
    if (rc == 0 && kc == 1 && j->step[0] == 0)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "step must not be 0");
    /* the length: the least n with start + n * step >= stop (a binary search) */
    uint64_t lo = 0, hi = OBJECT_MAX_ELEMENTS + 1;
    while (rc == 0 && lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        mul_add(j->start, j->step, mid, v, k);
        if (less(v, stop, k))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (rc == 0 && lo > OBJECT_MAX_ELEMENTS)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "arange of bigint: too many elements");
    uint64_t n = lo;
    /* the limbs the largest value needs (at least one), as many as Arkouda would keep */
    if (rc == 0) {
        mul_add(j->start, j->step, n ? n - 1 : 0, v, k);
        while (k > 1 && v[k - 1] == 0)
            k--;
        j->k = k;
    }
    object *big = rc == 0 ? object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, n, err) : NULL;
    if (rc == 0 && !big) rc = -1;
    if (big) big->max_bits = -1;
    for (size_t q = 0; rc == 0 && q < k; q++) {
        object *limb = object_new_pdarray(H5ARK_UINT64, n, err);
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", q);
        rc = limb && object_add_component(big, name, limb, err) == 0 ? 0 : -1;
        if (limb) j->limb[q] = limb->values;
        object_release(limb);
    }
    if (ranks_call_seq()) rc = ranks_agree(rc, err); /* every rank made it, or none */
    if (rc == 0) locales_run(arange_locale, j);
    if (rc == 0) rc = ak_reply_created(ctx, big, err);
    object_release(big);
    free(j);
    return rc;
}

/* The bigint array named by argument `array`. */
static object *bigint_arg(ak_ctx *ctx, h5ark_error *err) {
    object *a = ak_object_arg(ctx, "array", H5ARK_PDARRAY, err);
    if (a && a->dtype != H5ARK_BIGINT) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not bigint", a->name,
                   h5ark_dtype_name(a->dtype));
        object_release(a);
        return NULL;
    }
    return a;
}

/* get_max_bits<bigint,1> {array}: its max_bits (-1: unbounded), as JSON. */
static int cmd_get_max_bits(ak_ctx *ctx, h5ark_error *err) {
    object *a = bigint_arg(ctx, err);
    if (!a) return -1;
    int rc = ak_reply(ctx, err, "%lld", (long long)a->max_bits);
    object_release(a);
    return rc;
}

typedef struct {
    const darray *src;
    darray *dst;
    uint64_t mask;
} mask_job;

static void mask_locale(int b, void *arg) {
    mask_job *j = arg;
    const shard *s = &j->src->shards[b];
    for (uint64_t r = 0; r < s->count; r++)
        ((uint64_t *)j->dst->shards[b].data)[r] = ((const uint64_t *)s->data)[r] & j->mask;
}

/* set_max_bits<bigint,1> {array, max_bits}: every value cut to its low max_bits bits (-1:
 * none), as Arkouda's server does in place; here a changed copy published under the
 * array's name (limbs wholly above max_bits left out, the others shared or masked). */
static int cmd_set_max_bits(ak_ctx *ctx, h5ark_error *err) {
    const char *name;
    int64_t bits;
    if (ak_arg_str(ctx->in, "array", &name, err) || ak_arg_int(ctx->in, "max_bits", &bits, err))
        return -1;
    if (bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    object *a = bigint_arg(ctx, err);
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
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has no %s", a->name, limb);
            break;
        }
        if (keep <= 0 && q > 0) break; /* limb 0 stays, zero, as big_int_creation keeps it */
        object *dst = keep >= 64 ? object_ref(src) : object_new_pdarray(H5ARK_UINT64, a->size, err);
        if (dst && keep < 64) {
            mask_job j = {src->values, dst->values, keep <= 0 ? 0 : (UINT64_C(1) << keep) - 1};
            locales_run(mask_locale, &j);
        }
        rc = dst && object_add_component(out, limb, dst, err) == 0 ? 0 : -1;
        object_release(dst);
    }
    if (ranks_call_seq()) rc = ranks_agree(rc, err);
    if (rc == 0) rc = registry_remove(name, err) || registry_publish(out, name, err) ? -1 : 0;
    if (ranks_call_seq()) rc = ranks_agree(rc, err);
    object_release(out);
    object_release(a);
    return rc ? -1 : ak_reply(ctx, err, "Sucessfully set max_bits");
}

const ak_command ak_bigint_commands[] = {
    {"get_max_bits", cmd_get_max_bits, AK_READ_ONLY, RANKS_EVERY},
    {"set_max_bits", cmd_set_max_bits, 0, RANKS_EVERY},
    {0},
};
