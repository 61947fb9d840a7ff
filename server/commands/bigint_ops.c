/* bigint commands: bigint_arange (start + i * step of decimal integers of up to 4096
 * bits), bigint_limbs (a bigint's limbs as uint64 arrays) and bigint_from_limbs (a bigint
 * from uint64 arrays). A bigint is a composite of uint64 limbs (objects/bigint.h): its
 * values are unsigned. One path at any rank count: each rank fills its own shards, and
 * objects are published on every rank or none. */
#include "commands.h"

#include "commands/bigint_compute.h"
#include "elements.h"
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

/* Publish obj (argument `name`, or a fresh one) on every rank or none and reply it as
 * `object`. */
static int publish_one(command_ctx *ctx, object *obj, h5ark_error *err) {
    int rc = registry_publish(obj, arg_str(ctx, "name", NULL), err);
    int all = ranks_agree(rc, err);
    if (all != 0 && rc == 0) registry_unpublish(obj);
    if (all == 0) all = reply_set(ctx, "object", object_describe(obj), err);
    return all;
}

/* bigint_arange {start, stop, step, name}: decimal integers (none negative, up to 4096
 * bits); the values start + i * step below stop, in as many limbs as the largest needs. */
static int cmd_bigint_arange(command_ctx *ctx, h5ark_error *err) {
    const char *t_start = arg_str(ctx, "start", ""), *t_stop = arg_str(ctx, "stop", "");
    const char *t_step = arg_str(ctx, "step", "1");
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
    rc = ranks_agree(rc, err); /* every rank made it, or none */
    if (rc == 0) locales_run(arange_locale, j);
    if (rc == 0) rc = publish_one(ctx, big, err);
    object_release(big);
    free(j);
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
    if (ranks_allreduce_u64(&nonzero, 1, RANKS_MAX, err)) return -1;
    *zero = !nonzero;
    return 0;
}

/* bigint_limbs {array}: {"limbs": [desc...]}: the limbs of a bigint as new uint64 arrays,
 * least significant first and as many as the largest value needs (at least one). */
static int cmd_bigint_limbs(command_ctx *ctx, h5ark_error *err) {
    object *a = registry_get(arg_str(ctx, "array", ""), err);
    if (!a) return h5ark_fail_context(err, "bigint_limbs: argument 'array'");
    int rc = a->objtype == H5ARK_PDARRAY && a->dtype == H5ARK_BIGINT
                 ? 0
                 : h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not bigint", a->name,
                              a->objtype == H5ARK_PDARRAY ? h5ark_dtype_name(a->dtype)
                                                          : h5ark_objtype_name(a->objtype));
    size_t k = rc == 0 ? a->ncomponents : 0;
    char limb[32];
    for (; k > 1; k--) {
        snprintf(limb, sizeof limb, "Limb_%zu", k - 1);
        object *top = object_component_get(a, limb);
        bool zero = false;
        if (top && all_zero(top->values, &zero, err)) rc = -1;
        if (!top || !zero) break;
    }
    object **made = rc == 0 ? calloc(k ? k : 1, sizeof *made) : NULL;
    if (rc == 0 && !made) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t published = 0;
    for (size_t i = 0; rc == 0 && i < k; i++) {
        snprintf(limb, sizeof limb, "Limb_%zu", i);
        object *src = object_component_get(a, limb);
        if (!src) h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has no %s", a->name, limb);
        made[i] = src ? elem_masked_u64(src, UINT64_MAX, err) : NULL;
        int one = made[i] ? registry_publish(made[i], NULL, err) : -1;
        rc = ranks_agree(one, err); /* on every rank or on none */
        if (rc == 0)
            published++;
        else if (one == 0)
            registry_remove(made[i]->name, NULL);
    }
    h5ark_value *list = rc == 0 ? h5ark_value_array() : NULL;
    for (size_t i = 0; list && i < k; i++)
        if (h5ark_value_push(list, object_describe(made[i]))) h5ark_value_destroy(&list);
    if (rc == 0 && !list) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) rc = reply_set(ctx, "limbs", list, err);
    if (rc) /* all or none */
        for (size_t i = 0; i < published; i++)
            registry_remove(made[i]->name, NULL);
    for (size_t i = 0; made && i < k; i++)
        object_release(made[i]);
    free(made);
    object_release(a);
    return rc;
}

/* bigint_from_limbs {arrays, max_bits, name}: a bigint from uint64 arrays of one length
 * given most significant first, each copied into a limb, the values cut to max_bits (-1:
 * unbounded). */
static int cmd_bigint_from_limbs(command_ctx *ctx, h5ark_error *err) {
    int64_t max_bits = arg_int(ctx, "max_bits", -1);
    if (max_bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    const h5ark_value *names = arg_value(ctx, "arrays");
    size_t k = h5ark_value_len(names);
    object **parts = k && k <= 4096 ? calloc(k, sizeof *parts) : NULL;
    int rc = parts            ? 0
             : k && k <= 4096 ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
                              : h5ark_fail(err, H5ARK_BAD_REQUEST,
                                           "argument 'arrays' must name 1 to 4096 arrays");
    for (size_t i = 0; rc == 0 && i < k; i++) {
        const char *name = h5ark_value_at(names, i)->as.s.ptr;
        if (!(parts[i] = registry_get(name, err)))
            rc = -1;
        else if (parts[i]->objtype != H5ARK_PDARRAY || parts[i]->dtype != H5ARK_UINT64)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is not a uint64 pdarray", name);
        else if (parts[i]->size != parts[0]->size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%s has %llu elements, %s %llu", name,
                            (unsigned long long)parts[i]->size, parts[0]->name,
                            (unsigned long long)parts[0]->size);
    }
    /* every failure of one rank alone (out of memory) goes through an agreement before the
     * next collective: making `big`, and each limb */
    rc = ranks_agree(rc, err);
    object *big =
        rc == 0 ? object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, parts[0]->size, err) : NULL;
    if (rc == 0 && !big) rc = -1;
    if (big) big->max_bits = max_bits;
    /* limb j from the j-th array from the end; limbs wholly above max_bits are left out */
    for (size_t j = 0; rc == 0 && j < k && (j == 0 || max_bits < 0 || (int64_t)j * 64 < max_bits);
         j++) {
        int64_t keep = max_bits < 0 ? 64 : max_bits - (int64_t)j * 64;
        uint64_t mask = keep >= 64 ? UINT64_MAX : (UINT64_C(1) << keep) - 1;
        object *limb = elem_masked_u64(parts[k - 1 - j], mask, err);
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", j);
        rc = limb && object_add_component(big, name, limb, err) == 0 ? 0 : -1;
        rc = ranks_agree(rc, err);
        object_release(limb);
    }
    if (rc == 0) rc = publish_one(ctx, big, err);
    object_release(big);
    for (size_t i = 0; parts && i < k; i++)
        object_release(parts[i]);
    free(parts);
    return rc;
}

const command_def bigint_commands[] = {
    {"bigint_arange",
     cmd_bigint_arange,
     {{"start", ARG_STR, true},
      {"stop", ARG_STR, true},
      {"step", ARG_STR, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"bigint_limbs", cmd_bigint_limbs, {{"array", ARG_STR, true}, {0}}, .ranks = RANKS_EVERY},
    {"bigint_from_limbs",
     cmd_bigint_from_limbs,
     {{"arrays", ARG_STR_ARRAY, true}, {"max_bits", ARG_INT, false}, {"name", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},
    {"bigint_binop",
     bigint_cmd_binop,
     {{"op", ARG_STR, true},
      {"a", ARG_STR, true},
      {"b", ARG_STR, false},
      {"value", ARG_ANY, false},
      {"reverse", ARG_BOOL, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"bigint_full",
     bigint_cmd_full,
     {{"size", ARG_UINT, true},
      {"value", ARG_ANY, false},
      {"max_bits", ARG_INT, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"bigint_fill",
     bigint_cmd_fill,
     {{"array", ARG_STR, true}, {"value", ARG_ANY, true}, {0}},
     .ranks = RANKS_EVERY},
    {"bigint_assign",
     bigint_cmd_assign,
     {{"array", ARG_STR, true}, {"index", ARG_STR, true}, {"value", ARG_ANY, true}, {0}},
     .ranks = RANKS_EVERY},
    {0},
};
