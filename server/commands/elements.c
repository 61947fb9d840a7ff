/* Element access for the numeric commands (see elements.h). */
#include "commands/elements.h"

#include "locales.h"
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
