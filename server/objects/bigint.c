/* bigint construction and checks (see bigint.h). */
#include "bigint.h"

#include "locales.h"
#include "pdarray.h"
#include "dist/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The limb number of a buffer named "Limb_<i>" (decimal, no sign or leading zero), or -1. */
static int64_t limb_number(const char *name) {
    if (strncmp(name, "Limb_", 5) != 0) return -1;
    const char *p = name + 5;
    if (!*p || (*p == '0' && p[1]) || strlen(p) > 9) return -1;
    int64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

typedef struct {
    object *const *limbs;
    size_t nlimbs;
    int64_t max_bits;
    uint64_t *first_bad; /* per locale */
} bits_job;

static void check_bits_shard(int locale, void *ctx) {
    bits_job *job = ctx;
    job->first_bad[locale] = UINT64_MAX;
    uint64_t count = job->limbs[0]->values->shards[locale].count;
    uint64_t first = count; /* first bad element within this shard */
    for (size_t j = 0; j < job->nlimbs; j++) {
        uint64_t lo_bit = 64 * (uint64_t)j;
        if ((uint64_t)job->max_bits >= lo_bit + 64) continue; /* any value fits this limb */
        /* bits [max_bits - lo_bit, 64) of this limb must be zero */
        uint64_t mask = (uint64_t)job->max_bits <= lo_bit
                            ? UINT64_MAX
                            : ~((UINT64_C(1) << ((uint64_t)job->max_bits - lo_bit)) - 1);
        const uint64_t *v = job->limbs[j]->values->shards[locale].data;
        for (uint64_t i = 0; i < first; i++)
            if (v[i] & mask) {
                first = i;
                break;
            }
    }
    if (first < count) job->first_bad[locale] = job->limbs[0]->values->shards[locale].start + first;
}

static int check_bits(object *const *limbs, size_t k, int64_t max_bits, h5ark_error *err) {
    int L = locales_count();
    bits_job job = {limbs, k, max_bits, calloc((size_t)L, sizeof(uint64_t))};
    if (!job.first_bad) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (int b = 0; b < L; b++) /* several ranks: other ranks' locales are not run here */
        job.first_bad[b] = UINT64_MAX;
    locales_run(check_bits_shard, &job);
    uint64_t bad = UINT64_MAX;
    for (int b = 0; b < L; b++)
        if (job.first_bad[b] < bad) bad = job.first_bad[b];
    free(job.first_bad);
    uint64_t mine = bad;
    if (ranks_allreduce_u64(&bad, 1, RANKS_MIN, err)) return -1;
    if (bad == UINT64_MAX) return 0;
    /* the offending value's bits, from the rank that holds it */
    uint64_t bits = 0;
    if (mine == bad) {
        size_t top = 0; /* the value's highest limb that is not zero */
        for (size_t j = 0; j < k; j++) {
            const darray *a = limbs[j]->values;
            const shard *sh = &a->shards[darray_shard_of(a, bad)];
            if (((const uint64_t *)sh->data)[bad - sh->start]) top = j;
        }
        const darray *a = limbs[top]->values;
        const shard *sh = &a->shards[darray_shard_of(a, bad)];
        uint64_t v = ((const uint64_t *)sh->data)[bad - sh->start];
        bits = 64 * (uint64_t)top + (64 - (uint64_t)__builtin_clzll(v));
    }
    if (ranks_allreduce_u64(&bits, 1, RANKS_MAX, err)) return -1;
    return h5ark_fail(err, H5ARK_TYPE_ERROR,
                      "put: bigint element %llu needs %u bits, more than max_bits = %lld",
                      (unsigned long long)bad, (unsigned)bits, (long long)max_bits);
}

object *bigint_from_payload(uint64_t n, int64_t max_bits, const h5ark_payload *payload,
                            const h5ark_buffer_list *buffers, h5ark_error *err) {
    if (max_bits < -1) {
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "put: 'max_bits' must be -1 (unbounded) or at least 0, not %lld",
                   (long long)max_bits);
        return NULL;
    }
    size_t k = buffers->count;
    if (k == 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "put: a bigint needs buffers 'Limb_0' ... (k >= 1)");
        return NULL;
    }
    const h5ark_buffer **order = calloc(k, sizeof *order);
    object **limbs = calloc(k, sizeof *limbs);
    object *big = NULL;
    if (!order || !limbs) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < k; i++) {
        const h5ark_buffer *b = &buffers->items[i];
        int64_t j = limb_number(b->name);
        if (j < 0 || (uint64_t)j >= k) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "put: unexpected buffer '%s'; a bigint of %zu limbs takes buffers "
                       "'Limb_0' ... 'Limb_%zu'",
                       b->name, k, k - 1);
            goto out;
        }
        if (order[j]) {
            h5ark_fail(err, H5ARK_BAD_REQUEST, "put: buffer '%s' is given twice", b->name);
            goto out;
        }
        if (b->nbytes != n * 8) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "put: buffer '%s' has %llu bytes but %llu bigint elements need %llu "
                       "(one uint64 each)",
                       b->name, (unsigned long long)b->nbytes, (unsigned long long)n,
                       (unsigned long long)(n * 8));
            goto out;
        }
        order[j] = b;
    }
    /* k distinct numbers below k: every limb is there */
    big = object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, n, err);
    if (!big) goto out;
    big->max_bits = max_bits;
    for (size_t j = 0; j < k; j++) {
        limbs[j] = object_new_pdarray(H5ARK_UINT64, n, err);
        if (!limbs[j]) goto fail;
        if (pdarray_copy_in(limbs[j], payload, order[j], err)) goto fail;
    }
    if (max_bits >= 0 && check_bits(limbs, k, max_bits, err)) goto fail;
    for (size_t j = 0; j < k; j++) {
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", j);
        if (object_add_component(big, name, limbs[j], err)) goto fail;
    }
    goto out;
fail:
    object_release(big);
    big = NULL;
out:
    for (size_t j = 0; limbs && j < k; j++)
        object_release(limbs[j]);
    free(limbs);
    free(order);
    return big;
}
