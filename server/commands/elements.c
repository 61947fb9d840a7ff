/* Element access for the numeric commands (see elements.h). */
#include "commands/elements.h"

#include "locales.h"
#include "objects/strings.h"
#include "dist/ranks.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

#define LOAD(T, base, i) (((const T *)(base))[i])

int64_t elem_load_i(const void *b, h5ark_dtype t, uint64_t i) {
    switch (t) {
    case H5ARK_INT8: return LOAD(int8_t, b, i);
    case H5ARK_INT16: return LOAD(int16_t, b, i);
    case H5ARK_INT32: return LOAD(int32_t, b, i);
    case H5ARK_INT64: return LOAD(int64_t, b, i);
    case H5ARK_UINT8:
    case H5ARK_BOOLEAN: return LOAD(uint8_t, b, i);
    case H5ARK_UINT16: return LOAD(uint16_t, b, i);
    case H5ARK_UINT32: return LOAD(uint32_t, b, i);
    case H5ARK_UINT64: return (int64_t)LOAD(uint64_t, b, i);
    case H5ARK_FLOAT32: {
        float f = LOAD(float, b, i);
        return f >= -9.2233720368547758e18f && f < 9.2233720368547758e18f ? (int64_t)f : INT64_MIN;
    }
    case H5ARK_FLOAT64: {
        double f = LOAD(double, b, i);
        return f >= -9.2233720368547758e18 && f < 9.2233720368547758e18 ? (int64_t)f : INT64_MIN;
    }
    default: return 0;
    }
}

uint64_t elem_load_u(const void *b, h5ark_dtype t, uint64_t i) {
    if (t == H5ARK_UINT64) return LOAD(uint64_t, b, i);
    if (t == H5ARK_FLOAT64 || t == H5ARK_FLOAT32) {
        double f = elem_load_f(b, t, i);
        return f >= 0 && f < 1.8446744073709552e19 ? (uint64_t)f : 0;
    }
    return (uint64_t)elem_load_i(b, t, i);
}

double elem_load_f(const void *b, h5ark_dtype t, uint64_t i) {
    switch (t) {
    case H5ARK_FLOAT64: return LOAD(double, b, i);
    case H5ARK_FLOAT32: return LOAD(float, b, i);
    case H5ARK_UINT64: return (double)LOAD(uint64_t, b, i);
    default: return (double)elem_load_i(b, t, i);
    }
}

void elem_store_i(void *b, h5ark_dtype t, uint64_t i, int64_t v) {
    switch (t) {
    case H5ARK_INT8: ((int8_t *)b)[i] = (int8_t)v; break;
    case H5ARK_INT16: ((int16_t *)b)[i] = (int16_t)v; break;
    case H5ARK_INT32: ((int32_t *)b)[i] = (int32_t)v; break;
    case H5ARK_UINT8: ((uint8_t *)b)[i] = (uint8_t)v; break;
    case H5ARK_UINT16: ((uint16_t *)b)[i] = (uint16_t)v; break;
    case H5ARK_UINT32: ((uint32_t *)b)[i] = (uint32_t)v; break;
    case H5ARK_FLOAT32: ((float *)b)[i] = (float)v; break;
    case H5ARK_INT64: ((int64_t *)b)[i] = v; break;
    case H5ARK_UINT64: ((uint64_t *)b)[i] = (uint64_t)v; break;
    case H5ARK_FLOAT64: ((double *)b)[i] = (double)v; break;
    case H5ARK_BOOLEAN: ((uint8_t *)b)[i] = v != 0; break;
    default: break;
    }
}

void elem_store_u(void *b, h5ark_dtype t, uint64_t i, uint64_t v) {
    switch (t) {
    case H5ARK_FLOAT32: ((float *)b)[i] = (float)v; break;
    case H5ARK_INT8:
    case H5ARK_INT16:
    case H5ARK_INT32:
    case H5ARK_UINT8:
    case H5ARK_UINT16:
    case H5ARK_UINT32: elem_store_i(b, t, i, (int64_t)v); break;
    case H5ARK_INT64: ((int64_t *)b)[i] = (int64_t)v; break;
    case H5ARK_UINT64: ((uint64_t *)b)[i] = v; break;
    case H5ARK_FLOAT64: ((double *)b)[i] = (double)v; break;
    case H5ARK_BOOLEAN: ((uint8_t *)b)[i] = v != 0; break;
    default: break;
    }
}

void elem_store_f(void *b, h5ark_dtype t, uint64_t i, double v) {
    switch (t) {
    case H5ARK_FLOAT32: ((float *)b)[i] = (float)v; break;
    case H5ARK_INT8:
    case H5ARK_INT16:
    case H5ARK_INT32:
    case H5ARK_UINT8:
    case H5ARK_UINT16:
    case H5ARK_UINT32: /* through int64, as numpy's astype of an in-range value */
        elem_store_i(b, t, i,
                     v >= -9.2233720368547758e18 && v < 9.2233720368547758e18 ? (int64_t)v : 0);
        break;
    case H5ARK_INT64:
        ((int64_t *)b)[i] = v >= -9.2233720368547758e18 && v < 9.2233720368547758e18
                                ? (int64_t)v
                                : INT64_MIN; /* numpy's value for NaN and overflow */
        break;
    case H5ARK_UINT64:
        ((uint64_t *)b)[i] = v >= 0 && v < 1.8446744073709552e19   ? (uint64_t)v
                             : v < 0 && v > -9.2233720368547758e18 ? (uint64_t)(int64_t)v
                                                                   : UINT64_C(1) << 63;
        break;
    case H5ARK_FLOAT64: ((double *)b)[i] = v; break;
    case H5ARK_BOOLEAN: ((uint8_t *)b)[i] = v != 0; break;
    default: break;
    }
}

bool elem_is_float(h5ark_dtype t) {
    return t == H5ARK_FLOAT64 || t == H5ARK_FLOAT32;
}

bool elem_is_unsigned(h5ark_dtype t) {
    return t == H5ARK_UINT64 || t == H5ARK_UINT32 || t == H5ARK_UINT16 || t == H5ARK_UINT8;
}

const void *elem_at(const darray *a, uint64_t i) {
    const shard *s = &a->shards[darray_shard_of(a, i)];
    return (const char *)s->data + (i - s->start) * a->itemsize;
}

int elem_fetch(const darray *a, uint64_t i, void *out, h5ark_error *err) {
    int b = darray_shard_of(a, i);
    if (locales_is_local(b)) memcpy(out, elem_at(a, i), a->itemsize);
    return ranks_bcast(locales_rank_of(b), out, a->itemsize, err);
}

const void *elem_range(const darray *a, uint64_t start, uint64_t count, void **scratch) {
    *scratch = NULL;
    if (count == 0) return "";
    const shard *s = &a->shards[darray_shard_of(a, start)];
    if (start + count <= s->start + s->count)
        return (const char *)s->data + (start - s->start) * a->itemsize;
    char *copy = malloc(count * a->itemsize);
    if (!copy) return NULL;
    uint64_t done = 0;
    while (done < count) {
        const shard *t = &a->shards[darray_shard_of(a, start + done)];
        uint64_t off = start + done - t->start, take = t->count - off;
        if (take > count - done) take = count - done;
        memcpy(copy + done * a->itemsize, (const char *)t->data + off * a->itemsize,
               take * a->itemsize);
        done += take;
    }
    *scratch = copy;
    return copy;
}

void elem_copy_into(darray *a, uint64_t at, const void *src, uint64_t n) {
    const char *from = src;
    while (n > 0) {
        shard *s = &a->shards[darray_shard_of(a, at)];
        uint64_t off = at - s->start, take = s->count - off;
        if (take > n) take = n;
        memcpy((char *)s->data + off * a->itemsize, from, take * a->itemsize);
        from += take * a->itemsize;
        at += take;
        n -= take;
    }
}

int elem_put_rows(darray *out, const uint64_t *at, const void *items, uint64_t n,
                  h5ark_error *err) {
    int R = ranks_count();
    size_t item = out->itemsize, rec = 8 + item;
    uint64_t *sc = calloc((size_t)R, sizeof *sc), *rcv = calloc((size_t)R, sizeof *rcv);
    uint64_t *eight = calloc((size_t)R, sizeof *eight), *fill = calloc((size_t)R, sizeof *fill);
    char *send = NULL, *recv = NULL;
    uint64_t reserved = 0; /* the records sent and received, counted against --max-memory */
    int rc = !(sc && rcv && eight && fill)
                 ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
                 : registry_scratch(n * rec, (void **)&send, &reserved, err);
    if ((rc = ranks_agree(rc, err))) goto out;
    /* records (row, element) grouped by the rank holding the row, in the order given */
    for (uint64_t j = 0; j < n; j++)
        sc[locales_rank_of(darray_shard_of(out, at[j]))]++;
    for (int r = 0; r < R; r++) {
        fill[r] = r ? fill[r - 1] + sc[r - 1] : 0;
        eight[r] = 8;
    }
    for (uint64_t j = 0; j < n; j++) {
        char *to = send + fill[locales_rank_of(darray_shard_of(out, at[j]))]++ * rec;
        memcpy(to, &at[j], 8);
        memcpy(to + 8, (const char *)items + j * item, item);
    }
    for (int r = 0; r < R; r++)
        sc[r] *= rec;
    if ((rc = ranks_alltoallv(sc, eight, rcv, eight, err))) goto out;
    uint64_t total = 0;
    for (int r = 0; r < R; r++)
        total += rcv[r];
    rc = registry_scratch(total, (void **)&recv, &reserved, err);
    if ((rc = ranks_agree(rc, err)) || (rc = ranks_alltoallv(send, sc, recv, rcv, err))) goto out;
    for (uint64_t o = 0; o < total; o += rec) {
        uint64_t row;
        memcpy(&row, recv + o, 8);
        shard *s = &out->shards[darray_shard_of(out, row)];
        memcpy((char *)s->data + (row - s->start) * item, recv + o + 8, item);
    }
out:
    free(sc);
    free(rcv);
    free(eight);
    free(fill);
    free(send);
    free(recv);
    registry_unreserve(reserved);
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

object *elem_masked_u64(const object *src, uint64_t mask, h5ark_error *err) {
    object *dst = object_new_pdarray(H5ARK_UINT64, src->size, err);
    if (ranks_agree(dst ? 0 : -1, err)) {
        object_release(dst);
        return NULL;
    }
    mask_job j = {src->values, dst->values, mask};
    locales_run(mask_locale, &j);
    return dst;
}

bool elem_block_layout(const darray *d) {
    if (ranks_count() == 1) return true;
    int L = locales_count();
    if (!d || d->nshards != L) return false;
    for (int b = 0; b < L; b++)
        if (d->shards[b].start != locales_block_start(d->size, L, b) ||
            d->shards[b].count != locales_block_start(d->size, L, b + 1) - d->shards[b].start)
            return false;
    return true;
}

const char *elem_string_at(const object *s, uint64_t i, uint64_t *len) {
    uint64_t from = strings_offset(s, i), to = strings_offset(s, i + 1);
    *len = to > from ? to - from - 1 : 0;
    return elem_at(s->values, from);
}

const char *elem_string_in_shard(const object *s, int b, uint64_t k, uint64_t *len) {
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

object *elem_positions(const object *idx, uint64_t size, h5ark_error *err) {
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
    if (ranks && !elem_block_layout(a)) {
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
