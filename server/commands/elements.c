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

/* Only the floats take a uint64 otherwise than an int64 of the same bits. */
void elem_store_u(void *b, h5ark_dtype t, uint64_t i, uint64_t v) {
    if (t == H5ARK_FLOAT32)
        ((float *)b)[i] = (float)v;
    else if (t == H5ARK_FLOAT64)
        ((double *)b)[i] = (double)v;
    else
        elem_store_i(b, t, i, (int64_t)v);
}

void elem_store_f(void *b, h5ark_dtype t, uint64_t i, double v) {
    bool in_int64 = v >= -9.2233720368547758e18 && v < 9.2233720368547758e18; /* NaN is not */
    switch (t) {
    case H5ARK_FLOAT32: ((float *)b)[i] = (float)v; break;
    case H5ARK_FLOAT64: ((double *)b)[i] = v; break;
    case H5ARK_BOOLEAN: ((uint8_t *)b)[i] = v != 0; break;
    case H5ARK_INT64:
        ((int64_t *)b)[i] = in_int64 ? (int64_t)v : INT64_MIN; /* numpy's for NaN and overflow */
        break;
    case H5ARK_UINT64:
        ((uint64_t *)b)[i] = v >= 0 && v < 1.8446744073709552e19   ? (uint64_t)v
                             : v < 0 && v > -9.2233720368547758e18 ? (uint64_t)(int64_t)v
                                                                   : UINT64_C(1) << 63;
        break;
    default: /* the narrower integers through int64, as numpy's astype of an in-range value */
        elem_store_i(b, t, i, in_int64 ? (int64_t)v : 0);
        break;
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

/* ---- an index's positions ---- */

/* Rows [row, row + count) of the positions, made by this rank from its shard b of the
 * index, in order: `done` made so far, and for a mask where its scan has got to. */
typedef struct {
    uint64_t row, count, done, scan;
    int b;
} pos_run;

typedef struct {
    const object *idx;
    uint64_t size; /* the rows the index selects from */
    bool mask;
    pos_run *runs; /* this rank's, in the order of its shards */
    size_t nruns;
} pos_job;

/* The next n positions of run r into dst: bad_request at an index out of bounds. */
static int make_positions(const pos_job *j, pos_run *r, int64_t *dst, uint64_t n,
                          h5ark_error *err) {
    const shard *s = &j->idx->values->shards[r->b];
    h5ark_dtype t = j->idx->dtype;
    for (uint64_t k = 0; k < n; k++) {
        int64_t v;
        if (j->mask) {
            while (!((const uint8_t *)s->data)[r->scan])
                r->scan++;
            v = (int64_t)(s->start + r->scan++);
        } else if (elem_is_unsigned(t)) {
            uint64_t u = elem_load_u(s->data, t, r->done + k);
            if (u >= j->size)
                return h5ark_fail(err, H5ARK_BAD_REQUEST,
                                  "index %llu is out of bounds for %llu rows",
                                  (unsigned long long)u, (unsigned long long)j->size);
            v = (int64_t)u;
        } else {
            v = elem_load_i(s->data, t, r->done + k);
            int64_t w = v < 0 ? v + (int64_t)j->size : v;
            if (w < 0 || (uint64_t)w >= j->size)
                return h5ark_fail(err, H5ARK_BAD_REQUEST,
                                  "index %lld is out of bounds for %llu rows", (long long)v,
                                  (unsigned long long)j->size);
            v = w;
        }
        dst[k] = v;
    }
    r->done += n;
    return 0;
}

/* The next len positions of run r, for rows [row, row + len) of out held here, made where
 * those rows are. */
static int make_in_place(const pos_job *j, pos_run *r, darray *out, uint64_t row, uint64_t len,
                         h5ark_error *err) {
    while (len > 0) {
        shard *s = &out->shards[darray_shard_of(out, row)];
        uint64_t take = s->start + s->count - row;
        if (take > len) take = len;
        if (make_positions(j, r, (int64_t *)s->data + (row - s->start), take, err)) return -1;
        row += take;
        len -= take;
    }
    return 0;
}

/* The rank holding row `row` of the result, rank q's rows being [starts[q], starts[q + 1]):
 * the last whose rows start at or before it (an empty rank starts where the next does). */
static int holder(const uint64_t *starts, int R, uint64_t row) {
    int lo = 0, hi = R - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (starts[mid] <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The buffers that move positions between ranks: per rank, pieces and positions each way,
 * and the pieces' (row, count) and positions themselves. */
typedef struct {
    uint64_t *starts, *cnt, *rcnt, *sc, *rc, *hat, *at;
    uint64_t *hdr, *rhdr;
    int64_t *send, *recv;
    uint64_t reserved; /* send and recv, counted against --max-memory */
} pos_moves;

static void pos_moves_free(pos_moves *m) {
    free(m->starts);
    free(m->cnt);
    free(m->rcnt);
    free(m->sc);
    free(m->rc);
    free(m->hat);
    free(m->at);
    free(m->hdr);
    free(m->rhdr);
    free(m->send);
    free(m->recv);
    registry_unreserve(m->reserved);
}

/* Where the piece of a run from `row` (held by rank q) ends: at q's last row or the run's end. */
static uint64_t piece_end(const pos_moves *m, int q, uint64_t end) {
    return m->starts[q + 1] < end ? m->starts[q + 1] : end;
}

/* Every run's positions to the rank holding their rows of out (block distributed, this
 * rank's rows [lo, hi)): those of this rank's own rows are made in place; the others are
 * made into a buffer and moved by two all to alls, their (row, count) pieces then the
 * positions. At one rank every row is its own: nothing is copied or reserved. */
static int place_positions(pos_job *j, darray *out, h5ark_error *err) {
    int R = ranks_count(); /* sizes the per-rank counts */
    size_t r8 = (size_t)R * 8;
    uint64_t lo, hi, npieces = 0, nout = 0, rpieces = 0, nin = 0;
    locales_local_block(out->size, &lo, &hi);
    pos_moves m = {.starts = malloc(r8 + 8),
                   .cnt = calloc(2, r8),
                   .rcnt = calloc(2, r8),
                   .sc = malloc(r8),
                   .rc = malloc(r8),
                   .hat = calloc(1, r8),
                   .at = calloc(1, r8)};
    int rc = m.starts && m.cnt && m.rcnt && m.sc && m.rc && m.hat && m.at
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if ((rc = ranks_agree(rc, err)) || (rc = ranks_allgather(&lo, m.starts, 8, err))) goto out;
    m.starts[R] = out->size;
    /* how many pieces and positions go to each other rank */
    for (size_t k = 0; k < j->nruns; k++) {
        const pos_run *r = &j->runs[k];
        for (uint64_t row = r->row, end = r->row + r->count, stop; row < end; row = stop) {
            int q = holder(m.starts, R, row);
            stop = piece_end(&m, q, end);
            if (m.starts[q] == lo && m.starts[q + 1] == hi) continue; /* this rank's */
            m.cnt[2 * q]++;
            m.cnt[2 * q + 1] += stop - row;
        }
    }
    for (int q = 0; q < R; q++)
        m.sc[q] = 16;
    if ((rc = ranks_alltoallv(m.cnt, m.sc, m.rcnt, m.sc, err))) goto out;
    for (int q = 0; q < R; q++) {
        m.hat[q] = npieces;
        m.at[q] = nout;
        npieces += m.cnt[2 * q];
        nout += m.cnt[2 * q + 1];
        rpieces += m.rcnt[2 * q];
        nin += m.rcnt[2 * q + 1];
    }
    rc = registry_scratch(nout * 8, (void **)&m.send, &m.reserved, err) ||
                 registry_scratch(nin * 8, (void **)&m.recv, &m.reserved, err)
             ? -1
             : 0;
    if (rc == 0 && (!(m.hdr = malloc(npieces * 16 + 1)) || !(m.rhdr = malloc(rpieces * 16 + 1))))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if ((rc = ranks_agree(rc, err))) goto out;
    /* made in the runs' order, so that a rank reports its first bad index */
    for (size_t k = 0; rc == 0 && k < j->nruns; k++) {
        pos_run *r = &j->runs[k];
        for (uint64_t row = r->row, end = r->row + r->count, stop; rc == 0 && row < end;
             row = stop) {
            int q = holder(m.starts, R, row);
            stop = piece_end(&m, q, end);
            if (m.starts[q] == lo && m.starts[q + 1] == hi) {
                rc = make_in_place(j, r, out, row, stop - row, err);
                continue;
            }
            m.hdr[2 * m.hat[q]] = row;
            m.hdr[2 * m.hat[q]++ + 1] = stop - row;
            rc = make_positions(j, r, m.send + m.at[q], stop - row, err);
            m.at[q] += stop - row;
        }
    }
    if ((rc = ranks_agree(rc, err))) goto out;
    for (int q = 0; q < R; q++) {
        m.sc[q] = m.cnt[2 * q] * 16;
        m.rc[q] = m.rcnt[2 * q] * 16;
    }
    if ((rc = ranks_alltoallv(m.hdr, m.sc, m.rhdr, m.rc, err))) goto out;
    for (int q = 0; q < R; q++) {
        m.sc[q] = m.cnt[2 * q + 1] * 8;
        m.rc[q] = m.rcnt[2 * q + 1] * 8;
    }
    if ((rc = ranks_alltoallv(m.send, m.sc, m.recv, m.rc, err))) goto out;
    for (uint64_t p = 0, off = 0; p < rpieces; off += m.rhdr[2 * p + 1], p++)
        elem_copy_into(out, m.rhdr[2 * p], m.recv + off, m.rhdr[2 * p + 1]);
out:
    pos_moves_free(&m);
    return rc;
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
    /* a run per shard held here: position i of integers is row i of the result; a mask's
     * true positions follow those of the shards before, this rank's after the ranks' below */
    pos_job j = {.idx = idx, .size = size, .mask = mask};
    j.runs = calloc((size_t)a->nshards + 1, sizeof *j.runs);
    int rc = j.runs ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t mine = 0, before = 0, n = idx->size;
    for (int b = 0; rc == 0 && b < a->nshards; b++) {
        const shard *s = &a->shards[b];
        if (!locales_is_local(b)) continue;
        uint64_t c = mask ? 0 : s->count;
        for (uint64_t i = 0; mask && i < s->count; i++)
            c += ((const uint8_t *)s->data)[i] != 0;
        j.runs[j.nruns++] = (pos_run){.row = mask ? mine : s->start, .count = c, .b = b};
        mine += c;
    }
    if ((rc = ranks_agree(rc, err)) == 0 && mask) rc = ranks_exscan_u64(mine, &before, &n, err);
    for (size_t k = 0; mask && k < j.nruns; k++)
        j.runs[k].row += before;
    object *out = rc == 0 ? object_new_pdarray(H5ARK_INT64, n, err) : NULL;
    if (rc == 0) rc = ranks_agree(out ? 0 : -1, err);
    if (rc == 0) rc = place_positions(&j, out->values, err);
    free(j.runs);
    if (rc == 0) return out;
    object_release(out);
    return NULL;
}
