/* Placing bytes on the ranks that own them (see place.h). */
#include "dist/place.h"

#include "dist/ranks.h"
#include "dist/spmd.h"

#include <stdlib.h>
#include <string.h>

int place_payload(const h5ark_payload *p, const place_piece *pieces, size_t npieces,
                  void (*fill)(void *ctx, bool from_payload), void *ctx, h5ark_error *err) {
    int me = ranks_self(), n = 0, rc;
    int *to = malloc((npieces ? npieces : 1) * sizeof *to);
    uint64_t *offs = malloc((npieces ? npieces : 1) * sizeof *offs);
    uint64_t *lens = malloc((npieces ? npieces : 1) * sizeof *lens);
    void **bufs = malloc((npieces ? npieces : 1) * sizeof *bufs);
    if (!to || !offs || !lens || !bufs) {
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    } else if (me == 0) { /* the others' pieces from the frames, while its own are copied */
        for (size_t i = 0; i < npieces; i++)
            if (pieces[i].rank != 0) {
                to[n] = pieces[i].rank;
                offs[n] = pieces[i].offset;
                lens[n++] = pieces[i].len;
            }
        fill(ctx, true);
        rc = ranks_scatter_payload(p, n, to, offs, lens, err);
    } else {
        for (size_t i = 0; i < npieces; i++)
            if (pieces[i].rank == me) {
                bufs[n] = pieces[i].dst;
                lens[n++] = pieces[i].len;
            }
        rc = ranks_recv_many(0, n, bufs, lens, err);
        if (rc == 0) fill(ctx, false);
    }
    free(to);
    free(offs);
    free(lens);
    free(bufs);
    return rc;
}

int place_from_root(int rc, int (*answer)(void *ctx, h5ark_error *err), void *ctx, void *buf,
                    uint64_t n, h5ark_error *err) {
    if (rc == 0 && ranks_self() == 0) rc = answer(ctx, err);
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, buf, n, err);
    return rc;
}

int place_root_calloc(size_t n, void **out, h5ark_error *err) {
    *out = NULL;
    if (ranks_self() != 0) return 0;
    if (!(*out = calloc(1, n ? n : 1))) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory allocating %zu bytes", n);
        return spmd_name_rank(-1, err);
    }
    return 0;
}

/* ---- rows to the ranks that hold them ---- */

/* Where row k of a run starts in its bytes (k == count: where its bytes end). */
static uint64_t row_at(const place_rows *r, uint64_t k) {
    return k < r->count ? (uint64_t)(r->offsets[k] - r->base) : r->nbytes;
}

static int row_cmp(const void *a, const void *b) {
    uint64_t x = ((const place_rows *)a)->row, y = ((const place_rows *)b)->row;
    return (x > y) - (x < y);
}

/* The buffers of one exchange: three streams (headers, bytes, offsets) each way. */
typedef struct {
    uint64_t *cnt, *rcnt; /* per rank: pieces, bytes, rows sent / received */
    uint64_t *sc, *rc;    /* per rank: byte counts of one stream */
    uint64_t *hdr, *rhdr;
    char *sendb, *recvb;
    int64_t *sendo, *recvo;
    place_rows *got;
    uint64_t taken; /* scratch not yet given back */
} exchange;

/* Stream s (0 headers, 1 bytes, 2 offsets) of every rank to every rank. */
static int move_stream(exchange *x, int R, int s, const void *send, void *recv, h5ark_error *err) {
    uint64_t unit = s == 1 ? 1 : s == 0 ? 24 : 8;
    for (int q = 0; q < R; q++) {
        x->sc[q] = x->cnt[3 * q + s] * unit;
        x->rc[q] = x->rcnt[3 * q + s] * unit;
    }
    return ranks_alltoallv(send, x->sc, recv, x->rc, err);
}

static void exchange_free(exchange *x, const place_scratch *scratch) {
    free(x->cnt);
    free(x->rcnt);
    free(x->sc);
    free(x->rc);
    free(x->hdr);
    free(x->rhdr);
    free(x->sendb);
    free(x->recvb);
    free(x->sendo);
    free(x->recvo);
    free(x->got);
    if (x->taken) scratch->give_back(scratch->ctx, x->taken);
}

static int take(exchange *x, const place_scratch *scratch, uint64_t n, void **out,
                h5ark_error *err) {
    return scratch->take(scratch->ctx, n, out, &x->taken, err);
}

int place_rows_exchange(int rc, const place_rows_piece *pieces, size_t npieces,
                        const place_scratch *scratch,
                        int (*use)(void *ctx, place_rows *got, size_t ngot, h5ark_error *err),
                        void *ctx, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    exchange x = {.cnt = calloc(3 * (size_t)R, 8),
                  .rcnt = calloc(3 * (size_t)R, 8),
                  .sc = calloc((size_t)R, 8),
                  .rc = calloc((size_t)R, 8)};
    uint64_t nout = 0, outbytes = 0, outrows = 0, nin = 0, inbytes = 0, inrows = 0;
    if (rc == 0 && (!x.cnt || !x.rcnt || !x.sc || !x.rc)) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = spmd_name_rank(-1, err);
    }
    /* how many pieces, bytes and rows go to each other rank (a rank's own stay) */
    for (size_t k = 0; rc == 0 && k < npieces; k++) {
        const place_rows_piece *pc = &pieces[k];
        if (pc->to == me) continue;
        if (pc->to < 0 || pc->to >= R) {
            h5ark_fail(err, H5ARK_INTERNAL, "rows for rank %d of %d", pc->to, R);
            rc = spmd_name_rank(-1, err);
            break;
        }
        x.cnt[3 * pc->to]++;
        x.cnt[3 * pc->to + 1] += pc->rows.nbytes;
        x.cnt[3 * pc->to + 2] += pc->rows.count;
        nout++;
        outbytes += pc->rows.nbytes;
        outrows += pc->rows.count;
    }
    for (int q = 0; rc == 0 && q < R; q++)
        x.sc[q] = 24;
    if (ranks_agree(rc, err) || ranks_alltoallv(x.cnt, x.sc, x.rcnt, x.sc, err)) {
        rc = -1;
        goto out;
    }
    for (int q = 0; q < R; q++) {
        nin += x.rcnt[3 * q];
        inbytes += x.rcnt[3 * q + 1];
        inrows += x.rcnt[3 * q + 2];
    }
    if (take(&x, scratch, nout * 24, (void **)&x.hdr, err) ||
        take(&x, scratch, nin * 24, (void **)&x.rhdr, err) ||
        take(&x, scratch, outbytes, (void **)&x.sendb, err) ||
        take(&x, scratch, inbytes, (void **)&x.recvb, err) ||
        take(&x, scratch, outrows * 8, (void **)&x.sendo, err) ||
        take(&x, scratch, inrows * 8, (void **)&x.recvo, err)) {
        rc = -1;
        goto out;
    }
    /* each piece as (row, count, bytes), grouped by rank, its bytes in the same order, and
     * its rows' offsets from its first byte (the offsets say where a row ends) */
    uint64_t h = 0, p = 0, o = 0;
    for (int q = 0; q < R; q++)
        for (size_t k = 0; q != me && k < npieces; k++) {
            const place_rows *r = &pieces[k].rows;
            if (pieces[k].to != q) continue;
            x.hdr[h++] = r->row;
            x.hdr[h++] = r->count;
            x.hdr[h++] = r->nbytes;
            if (r->nbytes) memcpy(x.sendb + p, r->bytes, r->nbytes);
            p += r->nbytes;
            for (uint64_t i = 0; i < r->count; i++)
                x.sendo[o++] = (int64_t)row_at(r, i);
        }
    if (move_stream(&x, R, 0, x.hdr, x.rhdr, err) || move_stream(&x, R, 1, x.sendb, x.recvb, err) ||
        move_stream(&x, R, 2, x.sendo, x.recvo, err)) {
        rc = -1;
        goto out;
    }
    free(x.sendb); /* given back before use makes what it makes */
    free(x.sendo);
    x.sendb = NULL;
    x.sendo = NULL;
    if (outbytes + outrows * 8) scratch->give_back(scratch->ctx, outbytes + outrows * 8);
    x.taken -= outbytes + outrows * 8;
    /* this rank's rows: what came, and its own pieces, in row order */
    size_t ngot = 0;
    x.got = malloc((nin + npieces ? nin + npieces : 1) * sizeof *x.got);
    if (!x.got) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = spmd_name_rank(-1, err);
    }
    if ((rc = ranks_agree(rc, err)) != 0) goto out;
    for (uint64_t k = 0, at = 0, os = 0; k < nin; k++) {
        x.got[ngot++] = (place_rows){x.rhdr[3 * k],     x.rhdr[3 * k + 1], x.recvb + at,
                                     x.rhdr[3 * k + 2], x.recvo + os,      0};
        at += x.rhdr[3 * k + 2];
        os += x.rhdr[3 * k + 1];
    }
    for (size_t k = 0; k < npieces; k++)
        if (pieces[k].to == me) x.got[ngot++] = pieces[k].rows;
    qsort(x.got, ngot, sizeof *x.got, row_cmp);
    rc = use(ctx, x.got, ngot, err);
out:
    exchange_free(&x, scratch);
    return rc;
}
