/* Values in Arkouda's terms (see values.h). */
#include "front/arkouda/values.h"
#include "front/arkouda/commands.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include "objects/strings.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOAD(T, base, i) (((const T *)(base))[i])

void ak_value_text(h5ark_dtype t, const void *b, uint64_t i, char *out, size_t n) {
    if (t == H5ARK_BOOLEAN) {
        snprintf(out, n, "%s", LOAD(uint8_t, b, i) ? "True" : "False");
    } else if (elem_is_float(t)) {
        double v = elem_load_f(b, t, i);
        /* the shortest text that reads back as the same double */
        for (int p = 1; p <= 17; p++) {
            snprintf(out, n, "%.*g", p, v);
            if (isnan(v) || strtod(out, NULL) == v) break;
        }
        if (isnan(v))
            snprintf(out, n, "nan");
        else if (isinf(v))
            snprintf(out, n, "%s", v < 0 ? "-inf" : "inf");
    } else if (elem_is_unsigned(t)) {
        snprintf(out, n, "%" PRIu64, elem_load_u(b, t, i));
    } else {
        snprintf(out, n, "%" PRId64, elem_load_i(b, t, i));
    }
}

void ak_scalar_text(h5ark_dtype t, const void *b, uint64_t i, char *out, size_t n) {
    char v[64];
    if (t == H5ARK_BOOLEAN)
        snprintf(v, sizeof v, "%s", LOAD(uint8_t, b, i) ? "true" : "false");
    else
        ak_value_text(t, b, i, v, sizeof v);
    snprintf(out, n, "%s %s", h5ark_dtype_name(t), v);
}

int ak_scalar_parse(h5ark_dtype t, const char *text, const char *key, void *out, h5ark_error *err) {
    bool ok;
    if (t == H5ARK_BOOLEAN) {
        bool v = strcmp(text, "True") == 0 || strcmp(text, "true") == 0 || strcmp(text, "1") == 0;
        ok =
            v || strcmp(text, "False") == 0 || strcmp(text, "false") == 0 || strcmp(text, "0") == 0;
        elem_store_i(out, t, 0, v);
    } else if (elem_is_float(t)) {
        double v;
        ok = ak_parse_double(text, &v);
        elem_store_f(out, t, 0, v);
    } else if (elem_is_unsigned(t)) {
        uint64_t v;
        ok = ak_parse_uint(text, &v);
        elem_store_u(out, t, 0, v);
    } else {
        int64_t v;
        ok = ak_parse_int(text, &v);
        elem_store_i(out, t, 0, v);
    }
    return ok ? 0
              : h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' is not a %s: '%.60s'", key,
                           h5ark_dtype_name(t), text);
}

const char *ak_string_at(const object *s, uint64_t i, uint64_t *len) {
    uint64_t from = strings_offset(s, i), to = strings_offset(s, i + 1);
    *len = to > from ? to - from - 1 : 0;
    return elem_at(s->values, from);
}

const char *ak_string_in_shard(const object *s, int b, uint64_t k, uint64_t *len) {
    const shard *seg = &s->segments->shards[b], *val = &s->values->shards[b];
    const int64_t *off = seg->data;
    uint64_t from = (uint64_t)off[k];
    uint64_t to = k + 1 < seg->count ? (uint64_t)off[k + 1] : val->start + val->count;
    *len = to > from ? to - from - 1 : 0;
    return (const char *)val->data + (from - val->start);
}

/* How many of [lo, hi) are in [lo2, hi2). */
static uint64_t overlap(uint64_t lo, uint64_t hi, uint64_t lo2, uint64_t hi2) {
    uint64_t a = lo > lo2 ? lo : lo2, b = hi < hi2 ? hi : hi2;
    return b > a ? b - a : 0;
}

/* A bool mask's true positions at several ranks (a block distributed mask): each locale
 * counts its trues, an allreduce gives every rank where each locale's positions go in the
 * result, and one all to all moves them to the ranks holding those rows of it. */
static object *mask_positions_ranks(const darray *a, h5ark_error *err) {
    int L = locales_count(), R = ranks_count(), T = locales_local_count(), me = ranks_self();
    uint64_t *off = calloc((size_t)L + 1, sizeof *off);
    uint64_t *sc = calloc((size_t)R, sizeof *sc), *rc_ = calloc((size_t)R, sizeof *rc_);
    int64_t *send = NULL, *recv = NULL;
    uint64_t reserved = 0; /* send and recv, counted against --max-memory */
    object *out = NULL;
    int rc = off && sc && rc_ ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) goto out;
    for (int b = locales_local_first(); b < locales_local_first() + T; b++)
        for (uint64_t i = 0; i < a->shards[b].count; i++)
            off[b + 1] += ((const uint8_t *)a->shards[b].data)[i] != 0;
    if (ranks_allreduce_u64(off + 1, (size_t)L, RANKS_SUM, err)) goto out;
    for (int b = 0; b < L; b++)
        off[b + 1] += off[b];
    uint64_t n = off[L];
    if (!(out = object_new_pdarray(H5ARK_INT64, n, err))) goto out;
    /* rank r gives result rows [off[r T], off[(r + 1) T]) and holds the rows its locales'
     * shards of the result start at */
    uint64_t lo = off[me * T], hi = off[(me + 1) * T];
    uint64_t my_lo = locales_block_start(n, L, me * T),
             my_hi = locales_block_start(n, L, me * T + T);
    for (int r = 0; r < R; r++) {
        uint64_t r_lo = locales_block_start(n, L, r * T),
                 r_hi = locales_block_start(n, L, r * T + T);
        sc[r] = 8 * overlap(lo, hi, r_lo, r_hi);
        rc_[r] = 8 * overlap(off[r * T], off[(r + 1) * T], my_lo, my_hi);
    }
    rc = registry_scratch((hi - lo) * 8, (void **)&send, &reserved, err) ||
                 registry_scratch((my_hi - my_lo) * 8, (void **)&recv, &reserved, err)
             ? -1
             : 0;
    if (ranks_agree(rc, err)) goto fail;
    uint64_t k = 0;
    for (int b = locales_local_first(); b < locales_local_first() + T; b++)
        for (uint64_t i = 0; i < a->shards[b].count; i++)
            if (((const uint8_t *)a->shards[b].data)[i])
                send[k++] = (int64_t)(a->shards[b].start + i);
    if (ranks_alltoallv(send, sc, recv, rc_, err)) goto fail;
    /* what arrived is this rank's rows of the result, in order */
    k = 0;
    for (int b = locales_local_first(); b < locales_local_first() + T; b++) {
        shard *s = &out->values->shards[b];
        if (s->count) memcpy(s->data, recv + k, s->count * 8);
        k += s->count;
    }
    goto out;
fail:
    object_release(out);
    out = NULL;
out:
    free(off);
    free(sc);
    free(rc_);
    free(send);
    free(recv);
    registry_unreserve(reserved);
    return out;
}

object *ak_positions(const object *idx, uint64_t size, h5ark_error *err) {
    if (idx->objtype != H5ARK_PDARRAY || elem_is_float(idx->dtype) || idx->dtype == H5ARK_BIGINT) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "an index must be an integer or bool array");
        return NULL;
    }
    const darray *a = idx->values;
    bool mask = idx->dtype == H5ARK_BOOLEAN;
    if (mask && idx->size != size) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "a bool index of %llu for %llu rows",
                   (unsigned long long)idx->size, (unsigned long long)size);
        return NULL;
    }
    /* at several ranks, integer positions of a block distributed index: each rank makes its
     * rows of the result from its own shards (a mask's positions move between ranks) */
    bool ranks = ranks_count() > 1;
    if (ranks && !ak_block_layout(a)) {
        ranks_not_yet(err, "indexing with %s that are not block distributed",
                      mask ? "a mask" : "positions");
        return NULL;
    }
    if (ranks && mask) return mask_positions_ranks(a, err);
    uint64_t n = 0;
    for (int b = 0; mask && b < a->nshards; b++)
        for (uint64_t i = 0; i < a->shards[b].count; i++)
            n += ((const uint8_t *)a->shards[b].data)[i] != 0;
    object *out = object_new_pdarray(H5ARK_INT64, mask ? n : idx->size, err);
    if (!out) return NULL;
    uint64_t k = 0;
    for (int b = 0; b < a->nshards; b++) {
        const shard *s = &a->shards[b];
        if (ranks && !locales_is_local(b)) continue;
        if (!mask) k = s->start; /* position i of idx is element i of out */
        for (uint64_t i = 0; i < s->count; i++) {
            int64_t v;
            if (mask) {
                if (!((const uint8_t *)s->data)[i]) continue;
                v = (int64_t)(s->start + i);
            } else if (elem_is_unsigned(idx->dtype)) {
                uint64_t u = elem_load_u(s->data, idx->dtype, i);
                v = (int64_t)u;
                if (u >= size) {
                    h5ark_fail(err, H5ARK_BAD_REQUEST, "index %llu is out of bounds for %llu rows",
                               (unsigned long long)u, (unsigned long long)size);
                    object_release(out);
                    return NULL;
                }
            } else {
                v = elem_load_i(s->data, idx->dtype, i);
                int64_t w = v < 0 ? v + (int64_t)size : v;
                if (w < 0 || (uint64_t)w >= size) {
                    h5ark_fail(err, H5ARK_BAD_REQUEST, "index %lld is out of bounds for %llu rows",
                               (long long)v, (unsigned long long)size);
                    object_release(out);
                    return NULL;
                }
                v = w;
            }
            int64_t *dst = (int64_t *)elem_at(out->values, k++);
            *dst = v;
        }
    }
    return out;
}
