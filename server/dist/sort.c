/* The sample sort across the ranks (see sort.h). */
#include "dist/sort.h"

#include "dist/ranks.h"
#include "dist/spmd.h"
#include "progress.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { SAMPLES = 64 }; /* records a rank sends every rank to pick the splitters */

/* The records of one sort: their kind and how two compare. */
typedef struct {
    size_t width, tail;
} kind;

static uint64_t rec_size(const kind *k, const char *r) {
    if (k->width) return k->width;
    uint64_t l;
    memcpy(&l, r, 8);
    return 8 + l;
}

static int rec_cmp(const kind *k, const char *x, const char *y) {
    if (k->width) {
        for (size_t i = 0; i < k->width; i += 8) {
            uint64_t a, b;
            memcpy(&a, x + i, 8);
            memcpy(&b, y + i, 8);
            if (a != b) return a < b ? -1 : 1;
        }
        return 0;
    }
    uint64_t lx = rec_size(k, x) - 8, ly = rec_size(k, y) - 8, m = lx < ly ? lx : ly;
    int c = memcmp(x + 8, y + 8, m);
    if (c) return c < 0 ? -1 : 1;
    return (lx > ly) - (lx < ly);
}

/* Whether two records hold the same key (they may differ in their last `tail` bytes). */
static bool same_key(const kind *k, const char *x, const char *y) {
    uint64_t lx = rec_size(k, x);
    return lx == rec_size(k, y) && lx >= k->tail && memcmp(x, y, lx - k->tail) == 0;
}

/* Offsets of the n records back to back in buf into off (n + 1 entries: the last is the
 * end). */
static void index_records(const kind *k, const char *buf, uint64_t n, uint64_t *off) {
    uint64_t p = 0;
    for (uint64_t i = 0; i < n; i++) {
        off[i] = p;
        p += rec_size(k, buf + p);
    }
    off[n] = p;
}

/* Merge `runs` sorted runs of records (run r: records [first[r], first[r + 1]) of buf, off
 * indexing them) into out, back to back, their offsets into oout (n + 1 entries). Ties go
 * to the lower run, though records are distinct. */
static int merge(const kind *k, const char *buf, const uint64_t *off, const uint64_t *first,
                 int runs, char *out, uint64_t *oout) {
    uint64_t *head = malloc((size_t)runs * sizeof *head);
    if (!head) return -1;
    for (int r = 0; r < runs; r++)
        head[r] = first[r];
    uint64_t n = first[runs], p = 0;
    for (uint64_t i = 0; i < n; i++) {
        int best = -1;
        for (int r = 0; r < runs; r++)
            if (head[r] < first[r + 1] &&
                (best < 0 || rec_cmp(k, buf + off[head[r]], buf + off[head[best]]) < 0))
                best = r;
        const char *x = buf + off[head[best]++];
        uint64_t l = rec_size(k, x);
        memcpy(out + p, x, l);
        oout[i] = p;
        p += l;
    }
    oout[n] = p;
    free(head);
    return 0;
}

static int oom(h5ark_error *err) {
    return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
    uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

/* Step 4: sorted records (n here, offsets off) evened out to s->dist into out. */
static int even_out(const dist_sort_spec *s, const kind *k, const char *in, const uint64_t *off,
                    uint64_t n, dist_sorted *out, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    uint64_t *held = calloc((size_t)R + 1, 8), *sc = calloc((size_t)R, 8);
    uint64_t *rb = calloc((size_t)R, 8), *eight = calloc((size_t)R, 8);
    int rc = held && sc && rb && eight ? 0 : oom(err);
    if (ranks_agree(rc, err)) goto fail;
    held[me + 1] = n;
    if (ranks_allreduce_u64(held, (size_t)R + 1, RANKS_SUM, err)) goto fail;
    for (int r = 0; r < R; r++)
        held[r + 1] += held[r];
    /* bytes of the records this rank sends each rank; each rank tells the others its own */
    for (int q = 0; q < R; q++) {
        uint64_t lo = held[me] > s->dist[q] ? held[me] : s->dist[q];
        uint64_t c = overlap(held[me], held[me + 1], s->dist[q], s->dist[q + 1]);
        sc[q] = c ? off[lo - held[me] + c] - off[lo - held[me]] : 0;
        eight[q] = 8;
    }
    out->n = s->dist[me + 1] - s->dist[me];
    if (ranks_alltoallv(sc, eight, rb, eight, err)) goto fail;
    for (int q = 0; q < R; q++)
        out->bytes += rb[q];
    if (s->scratch(out->bytes, &out->rec, s->scratch_ctx, err) ||
        s->scratch((out->n + 1) * 8, (void **)&out->off, s->scratch_ctx, err) ||
        s->scratch(out->n, (void **)&out->starts, s->scratch_ctx, err) ||
        ranks_alltoallv(in, sc, out->rec, rb, err))
        goto fail;
    index_records(k, out->rec, out->n, out->off);
    rc = 0;
    goto done;
fail:
    rc = -1;
done:
    free(held);
    free(sc);
    free(rb);
    free(eight);
    return rc;
}

/* Step 5: which records start a key, the one before a rank's first being the last record
 * of the nearest earlier rank holding any. */
static int mark_starts(const dist_sort_spec *s, const kind *k, dist_sorted *out, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    uint64_t *len = calloc((size_t)R, 8), *sc = calloc((size_t)R, 8);
    char *lasts = NULL;
    int rc = len && sc ? 0 : oom(err);
    if (ranks_agree(rc, err)) goto fail;
    const char *mine = out->n ? (const char *)out->rec + out->off[out->n - 1] : "";
    uint64_t mlen = out->n ? rec_size(k, mine) : 0, all = 0;
    len[me] = mlen;
    if (ranks_allreduce_u64(len, (size_t)R, RANKS_SUM, err)) goto fail;
    for (int r = 0; r < R; r++)
        all += len[r];
    if (s->scratch(all + (uint64_t)R * mlen, (void **)&lasts, s->scratch_ctx, err)) goto fail;
    for (int r = 0; r < R; r++) {
        memcpy(lasts + all + (uint64_t)r * mlen, mine, mlen);
        sc[r] = mlen;
    }
    if (ranks_alltoallv(lasts + all, sc, lasts, len, err)) goto fail;
    const char *prev = NULL;
    for (uint64_t r = 0, p = 0; r < (uint64_t)me; p += len[r], r++)
        if (len[r]) prev = lasts + p;
    for (uint64_t i = 0; i < out->n; i++) {
        const char *x = (const char *)out->rec + out->off[i];
        const char *y = i ? (const char *)out->rec + out->off[i - 1] : prev;
        out->starts[i] = !y || !same_key(k, x, y);
    }
    free(len);
    free(sc);
    free(lasts);
    return 0;
fail:
    free(len);
    free(sc);
    free(lasts);
    return -1;
}

int dist_sort_records(const dist_sort_spec *s, const void *rec, uint64_t n, uint64_t bytes,
                      dist_sorted *out, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    kind k = {s->width, s->tail};
    *out = (dist_sorted){0};
    const char *buf = rec;
    uint64_t *off = NULL, *soff = NULL, *goff = NULL, *moff = NULL;
    char *samples = NULL, *got = NULL, *merged = NULL;
    uint64_t *cnt = calloc(2 * (size_t)R, 8), *rcnt = calloc(2 * (size_t)R, 8);
    uint64_t *sc = calloc((size_t)R, 8), *rcv = calloc((size_t)R + 1, 8);
    int rc = cnt && rcnt && sc && rcv ? 0 : oom(err);
    if (ranks_agree(rc, err) || s->scratch((n + 1) * 8, (void **)&off, s->scratch_ctx, err))
        goto fail;
    index_records(&k, buf, n, off);
    (void)bytes;
    /* 1. samples from every rank, the same splitters on all */
    uint64_t ns = n < SAMPLES ? n : SAMPLES, sbytes = 0, total = 0, tbytes = 0;
    for (uint64_t j = 0; j < ns; j++)
        sbytes += rec_size(&k, buf + off[j * n / ns]);
    cnt[2 * me] = ns;
    cnt[2 * me + 1] = sbytes;
    if (ranks_allreduce_u64(cnt, 2 * (size_t)R, RANKS_SUM, err)) goto fail;
    for (int r = 0; r < R; r++) {
        total += cnt[2 * r];
        tbytes += cnt[2 * r + 1];
    }
    if (s->scratch(tbytes + (uint64_t)R * sbytes, (void **)&samples, s->scratch_ctx, err) ||
        s->scratch((total + 1) * 8, (void **)&soff, s->scratch_ctx, err) ||
        s->scratch((total + 1) * 8, (void **)&goff, s->scratch_ctx, err))
        goto fail;
    char *mine = samples + tbytes; /* my samples, once for every rank */
    for (uint64_t r = 0, p = 0; r < (uint64_t)R; r++) {
        for (uint64_t j = 0; j < ns; j++) {
            const char *x = buf + off[j * n / ns];
            uint64_t l = rec_size(&k, x);
            memcpy(mine + p, x, l);
            p += l;
        }
        sc[r] = sbytes;
        rcv[r] = cnt[2 * r + 1];
    }
    if (ranks_alltoallv(mine, sc, samples, rcv, err)) goto fail;
    /* every rank's samples, a sorted run each: merged, the splitters picked from them */
    for (int r = 0; r <= R; r++)
        rcv[r] = r ? rcv[r - 1] + cnt[2 * (r - 1)] : 0; /* first sample of run r */
    index_records(&k, samples, total, goff);
    char *sm = NULL;
    if (s->scratch(tbytes, (void **)&sm, s->scratch_ctx, err)) goto fail;
    if (ranks_agree(merge(&k, samples, goff, rcv, R, sm, soff) ? oom(err) : 0, err)) {
        free(sm);
        goto fail;
    }
    free(samples);
    samples = sm;
    /* 2. each record to the rank whose range of the order holds it (records are sorted, so
     * each rank's are one stretch) */
    memset(cnt, 0, 2 * (size_t)R * 8);
    for (uint64_t i = 0, d = 0; i < n; i++) {
        const char *x = buf + off[i];
        /* splitter q (1 <= q < R) is sample q * total / R; records from it on go to q */
        while (d + 1 < (uint64_t)R &&
               rec_cmp(&k, x, samples + soff[(d + 1) * total / (uint64_t)R]) >= 0)
            d++;
        cnt[2 * d]++;
        cnt[2 * d + 1] += off[i + 1] - off[i];
    }
    for (int r = 0; r < R; r++)
        sc[r] = 16;
    if (ranks_alltoallv(cnt, sc, rcnt, sc, err)) goto fail; /* records and bytes to me */
    uint64_t ngot = 0, gbytes = 0;
    for (int r = 0; r < R; r++) {
        rcv[r] = ngot; /* first record of run r */
        ngot += rcnt[2 * r];
        gbytes += rcnt[2 * r + 1];
        sc[r] = cnt[2 * r + 1];
    }
    rcv[R] = ngot;
    uint64_t *rbytes = rcnt; /* in place: entry r is read before it is written */
    for (int r = 0; r < R; r++)
        rbytes[r] = rcnt[2 * r + 1];
    free(goff);
    goff = NULL;
    if (s->scratch(gbytes, (void **)&got, s->scratch_ctx, err) ||
        s->scratch((ngot + 1) * 8, (void **)&goff, s->scratch_ctx, err) ||
        ranks_alltoallv(buf, sc, got, rbytes, err))
        goto fail;
    /* 3. the R sorted runs merged */
    index_records(&k, got, ngot, goff);
    if (s->scratch(gbytes, (void **)&merged, s->scratch_ctx, err) ||
        s->scratch((ngot + 1) * 8, (void **)&moff, s->scratch_ctx, err))
        goto fail;
    if (ranks_agree(merge(&k, got, goff, rcv, R, merged, moff) ? oom(err) : 0, err)) goto fail;
    free(got);
    got = NULL;
    /* 4. evened out; 5. the starts of keys */
    if (even_out(s, &k, merged, moff, ngot, out, err) || mark_starts(s, &k, out, err)) goto fail;
    rc = 0;
    goto done;
fail:
    rc = -1;
    dist_sorted_free(out);
done:
    free(off);
    free(soff);
    free(goff);
    free(moff);
    free(samples);
    free(got);
    free(merged);
    free(cnt);
    free(rcnt);
    free(sc);
    free(rcv);
    return rc;
}

void dist_sorted_free(dist_sorted *d) {
    free(d->rec);
    free(d->off);
    free(d->starts);
    *d = (dist_sorted){0};
}

int dist_sort(const dist_sort_job *job, h5ark_error *err) {
    if (ranks_count() == 1) /* the local sort is the whole sort, its progress the request's */
        return job->sort_local(job->ctx, err);
    /* a rank's part is not the request's progress: the whole is counted once it is done */
    progress_sink *sink = progress_swap(NULL);
    int rc = ranks_agree(job->sort_local(job->ctx, err), err);
    progress_swap(sink);
    void *rec = NULL;
    uint64_t n = 0, bytes = 0;
    dist_sorted out = {0};
    if (rc == 0) rc = ranks_agree(job->pack(job->ctx, &rec, &n, &bytes, err), err);
    if (rc == 0) rc = dist_sort_records(&job->spec, rec, n, bytes, &out, err);
    free(rec);
    if (rc == 0) rc = ranks_agree(job->unpack(job->ctx, &out, err), err);
    dist_sorted_free(&out);
    if (rc == 0) progress_add(sink, job->progress);
    return rc;
}

int dist_rebalance(void *in, const uint64_t *held, const uint64_t *tgt, size_t width,
                   dist_scratch_fn scratch, void *scratch_ctx, void **out, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    if (R == 1) { /* held and tgt are the same one range */
        *out = in;
        return 0;
    }
    *out = NULL;
    uint64_t *sc = calloc((size_t)R, sizeof *sc), *rc = calloc((size_t)R, sizeof *rc);
    int r = sc && rc ? 0 : oom(err);
    if (r == 0)
        for (int q = 0; q < R; q++) {
            sc[q] = overlap(held[me], held[me + 1], tgt[q], tgt[q + 1]) * width;
            rc[q] = overlap(held[q], held[q + 1], tgt[me], tgt[me + 1]) * width;
        }
    if ((r = ranks_agree(r, err)) == 0 &&
        (r = scratch((tgt[me + 1] - tgt[me]) * width, out, scratch_ctx, err)) == 0)
        r = ranks_alltoallv(in, sc, *out, rc, err);
    if (r) {
        free(*out);
        *out = NULL;
    }
    free(sc);
    free(rc);
    return r;
}
