/* strings construction and checks (see strings.h). */
#include "strings.h"

#include "locales.h"
#include "progress.h"
#include "dist/ranks.h"
#include "registry.h"
#include "sysio.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

uint64_t strings_offset(const object *s, uint64_t i) {
    if (i >= s->size) return s->values->size;
    const darray *seg = s->segments;
    const shard *sh = &seg->shards[darray_shard_of(seg, i)];
    return ((const int64_t *)sh->data)[i - sh->start];
}

char *strings_dup(const object *s, uint64_t i, uint64_t *len) {
    uint64_t a = strings_offset(s, i), b = strings_offset(s, i + 1);
    char *out = malloc(b - a + 1);
    if (!out) return NULL;
    for (uint64_t k = a; k < b; k++) {
        const shard *sh = &s->values->shards[darray_shard_of(s->values, k)];
        out[k - a] = ((const char *)sh->data)[k - sh->start];
    }
    out[b - a] = '\0';
    if (len) *len = b - a - 1; /* the offsets say where it ends: its own NULs are data */
    return out;
}

uint64_t strings_check_shard(const object *s, int locale) {
    const shard *seg = &s->segments->shards[locale];
    const shard *val = &s->values->shards[locale];
    const int64_t *off = seg->data;
    const char *bytes = val->data;
    uint64_t end = val->start + val->count;
    for (uint64_t i = 0; i < seg->count; i++) {
        uint64_t from = (uint64_t)off[i];
        uint64_t to = i + 1 < seg->count ? (uint64_t)off[i + 1] : end;
        /* from..to must lie in this shard's bytes and end in the NUL after the string (NULs
         * before it are the string's own bytes) */
        if (off[i] < 0 || from < val->start || to > end || to <= from ||
            (i == 0 && from != val->start))
            return seg->start + i;
        if (bytes[to - 1 - val->start] != '\0') return seg->start + i;
    }
    return UINT64_MAX;
}

typedef struct {
    object *obj;
    const h5ark_payload *payload;
    const h5ark_buffer *segments, *values;
    _Atomic uint64_t first_bad;
    atomic_int failed;
} copy_job;

static void copy_shard(int locale, void *ctx) {
    copy_job *job = ctx;
    shard *seg = &job->obj->segments->shards[locale];
    shard *val = &job->obj->values->shards[locale];
    if (h5ark_payload_copy(job->payload, job->segments->offset + seg->start * 8, seg->data,
                           seg->count * 8) ||
        h5ark_payload_copy(job->payload, job->values->offset + val->start, val->data, val->count)) {
        atomic_store(&job->failed, 1);
        return;
    }
    progress_add(progress_here(), seg->count * 8 + val->count);
    locales_note_first(&job->first_bad, strings_check_shard(job->obj, locale));
}

static void check_shard(int locale, void *ctx) {
    copy_job *job = ctx;
    locales_note_first(&job->first_bad, strings_check_shard(job->obj, locale));
}

/* Several ranks: rank 0 copies its locales' shards from the payload and sends every other
 * locale its segments and bytes straight from the request's frames; each rank then checks
 * its own shards. */
static int copy_in_ranks(object *obj, copy_job *job, h5ark_error *err) {
    const darray *seg = obj->segments, *val = obj->values;
    int L = seg->nshards, T = locales_local_count(), first = locales_local_first(), rc = 0;
    if (ranks_self() == 0) {
        int n = 0, *to = malloc((size_t)L * 2 * sizeof *to);
        uint64_t *offs = malloc((size_t)L * 2 * sizeof *offs);
        uint64_t *lens = malloc((size_t)L * 2 * sizeof *lens);
        for (int b = 0; to && offs && lens && b < L; b++) {
            if (locales_is_local(b)) continue;
            to[n] = to[n + 1] = locales_rank_of(b);
            offs[n] = job->segments->offset + seg->shards[b].start * 8;
            lens[n++] = seg->shards[b].count * 8;
            offs[n] = job->values->offset + val->shards[b].start;
            lens[n++] = val->shards[b].count;
        }
        locales_run(copy_shard, job);
        rc = to && offs && lens ? ranks_scatter_payload(job->payload, n, to, offs, lens, err)
                                : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        free(to);
        free(offs);
        free(lens);
        return rc;
    }
    void **bufs = malloc((size_t)T * 2 * sizeof *bufs);
    uint64_t *lens = malloc((size_t)T * 2 * sizeof *lens);
    for (int t = 0; bufs && lens && t < T; t++) {
        bufs[2 * t] = seg->shards[first + t].data;
        lens[2 * t] = seg->shards[first + t].count * 8;
        bufs[2 * t + 1] = val->shards[first + t].data;
        lens[2 * t + 1] = val->shards[first + t].count;
    }
    rc = bufs && lens ? ranks_recv_many(0, 2 * T, bufs, lens, err)
                      : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) locales_run(check_shard, job);
    free(bufs);
    free(lens);
    return rc;
}

object *strings_from_payload(uint64_t n, const h5ark_payload *payload, const h5ark_buffer *segments,
                             const h5ark_buffer *values, h5ark_error *err) {
    if (n > OBJECT_MAX_ELEMENTS || segments->nbytes != n * 8) {
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "buffer 'segments' has %llu bytes but %llu strings need %llu (int64 each)",
                   (unsigned long long)segments->nbytes, (unsigned long long)n,
                   (unsigned long long)(n * 8));
        return NULL;
    }
    if (n == 0 && values->nbytes != 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "no strings, but buffer 'values' is not empty");
        return NULL;
    }
    /* Each locale's byte range starts at the offset of its first string: read those. With
     * several ranks only rank 0 has the payload: it reads them and sends the counts. */
    int L = locales_count();
    bool ranks = ranks_count() > 1;
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    if (!counts) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        if (ranks) ranks_agree(-1, err);
        return NULL;
    }
    int rc = 0;
    uint64_t prev = 0;
    for (int b = 0; ranks_self() == 0 && b < L; b++) {
        uint64_t first = locales_block_start(n, L, b + 1);
        int64_t off = (int64_t)values->nbytes;
        if (first < n) h5ark_payload_copy(payload, segments->offset + first * 8, &off, 8);
        if (off < (int64_t)prev || (uint64_t)off > values->nbytes) {
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "segments[%llu] = %lld is out of order or past the %llu bytes of "
                            "'values'",
                            (unsigned long long)first, (long long)off,
                            (unsigned long long)values->nbytes);
            break;
        }
        counts[b] = (uint64_t)off - prev;
        prev = (uint64_t)off;
    }
    if (ranks && (rc = ranks_agree(rc, err)) == 0)
        rc = ranks_bcast(0, counts, (uint64_t)L * sizeof *counts, err);
    if (rc != 0) {
        free(counts);
        return NULL;
    }
    object *obj = object_new_strings(n, counts, err);
    free(counts);
    if (!obj) return NULL;
    copy_job job = {.obj = obj, .payload = payload, .segments = segments, .values = values};
    atomic_init(&job.first_bad, UINT64_MAX);
    if (ranks) {
        rc = copy_in_ranks(obj, &job, err);
        /* every rank learns the first bad string of all, and any failure */
        uint64_t v[2] = {atomic_load(&job.first_bad), atomic_load(&job.failed) ? 0 : 1};
        if ((rc = ranks_agree(rc, err)) != 0 || ranks_allreduce_u64(v, 2, RANKS_MIN, err)) {
            object_release(obj);
            return NULL;
        }
        atomic_store(&job.first_bad, v[0]);
        atomic_store(&job.failed, v[1] == 0);
    } else {
        locales_run(copy_shard, &job);
    }
    uint64_t bad = atomic_load(&job.first_bad);
    if (atomic_load(&job.failed) || bad != UINT64_MAX) {
        object_release(obj);
        if (bad != UINT64_MAX)
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "string %llu is malformed: segments must start at 0 and increase, and "
                       "each string must be followed by a NUL byte (the byte before the next "
                       "offset)",
                       (unsigned long long)bad);
        else
            h5ark_fail(err, H5ARK_BAD_REQUEST, "the payload is shorter than its buffers declare");
        return NULL;
    }
    return obj;
}

char *strings_dup_ranks(const object *s, uint64_t i, uint64_t *slen, h5ark_error *err) {
    if (ranks_count() == 1) {
        char *out = strings_dup(s, i, slen);
        if (!out) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return out;
    }
    /* a string's bytes lie in the values shard of its segments shard: one rank has both */
    int b = darray_shard_of(s->segments, i);
    int holder = locales_rank_of(b);
    uint64_t len = 0;
    char *out = NULL;
    if (locales_is_local(b)) { /* its end is the next offset, or its values shard's end */
        const shard *seg = &s->segments->shards[b], *val = &s->values->shards[b];
        const int64_t *off = seg->data;
        uint64_t from = (uint64_t)off[i - seg->start];
        uint64_t to = i + 1 < seg->start + seg->count ? (uint64_t)off[i + 1 - seg->start]
                                                      : val->start + val->count;
        out = malloc(to - from);
        if (out) {
            memcpy(out, (const char *)val->data + (from - val->start), to - from - 1);
            out[to - from - 1] = '\0';
            len = to - from;
        }
    }
    if (ranks_bcast(holder, &len, sizeof len, err)) goto fail;
    if (len == 0) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", holder);
        goto fail;
    }
    if (!out) out = calloc(1, len);
    if (ranks_agree(out ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err) ||
        ranks_bcast(holder, out, len, err))
        goto fail;
    if (slen) *slen = len - 1;
    return out;
fail:
    free(out);
    return NULL;
}

/* ---- several ranks: strings laid out from runs ---- */

/* Where string k of a run starts in its bytes (k == count: where its bytes end). */
static uint64_t run_at(const strings_run *run, uint64_t k) {
    return k < run->count ? (uint64_t)(run->offsets[k] - run->base) : run->nbytes;
}

typedef struct {
    const strings_run *runs;
    object *out;
    size_t *run_at;   /* per local locale: the run holding its first string */
    uint64_t *str_at; /* and that string's index in it */
} block_job;

/* Locale b's strings from the runs: each string's offset, the bytes a run's part at once. */
static void fill_block(int b, void *arg) {
    block_job *j = arg;
    int t = b - locales_local_first();
    shard *seg = &j->out->segments->shards[b], *val = &j->out->values->shards[b];
    int64_t *off = seg->data;
    size_t r = j->run_at[t];
    uint64_t k = j->str_at[t], q = 0;
    for (uint64_t i = 0; i < seg->count; r++, k = 0) {
        const strings_run *run = &j->runs[r];
        uint64_t from = run_at(run, k);
        for (; i < seg->count && k < run->count; i++, k++)
            off[i] = (int64_t)(val->start + q + (run_at(run, k) - from));
        uint64_t to = run_at(run, k);
        if (to > from) memcpy((char *)val->data + q, run->bytes + from, to - from);
        q += to - from;
    }
}

object *strings_from_block_ranks(uint64_t n, const strings_run *runs, size_t nruns,
                                 h5ark_error *err) {
    int L = locales_count(), T = locales_local_count(), first = locales_local_first();
    uint64_t lo = locales_block_start(n, L, first), hi = locales_block_start(n, L, first + T);
    uint64_t *bc = sysio.calloc((size_t)L, sizeof *bc);
    block_job j = {.runs = runs,
                   .run_at = sysio.calloc((size_t)T, sizeof *j.run_at),
                   .str_at = sysio.calloc((size_t)T, sizeof *j.str_at)};
    object *out = NULL;
    int rc = bc && j.run_at && j.str_at
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
    /* the strings in row order: where each local locale's first lies, and its bytes; each
     * string runs from its offset to the next and ends in a NUL */
    uint64_t row = lo, next = lo; /* next: where local locale t starts */
    int t = 0;
    for (size_t r = 0; rc == 0 && r < nruns; r++) {
        const strings_run *run = &runs[r];
        bool bad = run->row != row || run->count > hi - row || run_at(run, 0) != 0;
        for (uint64_t i = 0; !bad && i < run->count; i++, row++) {
            for (; t < T && next == row; t++) { /* (empty locales share a start) */
                j.run_at[t] = r;
                j.str_at[t] = i;
                next = t + 1 < T ? locales_block_start(n, L, first + t + 1) : UINT64_MAX;
            }
            uint64_t from = run_at(run, i), to = run_at(run, i + 1);
            bad = to <= from || to > run->nbytes || run->bytes[to - 1] != '\0';
            bc[first + t - 1] += bad ? 0 : to - from;
        }
        if (bad)
            rc = h5ark_fail(err, H5ARK_INTERNAL,
                            "rank %d: strings for rows from %llu are not the %llu strings "
                            "expected there",
                            ranks_self(), (unsigned long long)run->row,
                            (unsigned long long)run->count);
    }
    if (rc == 0 && row != hi)
        rc = h5ark_fail(err, H5ARK_INTERNAL, "rank %d: strings for rows %llu..%llu are missing",
                        ranks_self(), (unsigned long long)row, (unsigned long long)hi);
    if (ranks_agree(rc, err) == 0 && ranks_allreduce_u64(bc, (size_t)L, RANKS_SUM, err) == 0 &&
        (out = object_new_strings(n, bc, err)) != NULL) {
        j.out = out;
        locales_run(fill_block, &j);
    }
    free(bc);
    free(j.run_at);
    free(j.str_at);
    return out;
}

typedef struct {
    int to; /* the rank whose block holds the rows */
    strings_run run;
} strings_piece;

static int run_cmp(const void *a, const void *b) {
    uint64_t x = ((const strings_run *)a)->row, y = ((const strings_run *)b)->row;
    return (x > y) - (x < y);
}

/* The rank whose block of n rows holds `row`: starts[q] is rank q's first row. */
static int rank_holding(const uint64_t *starts, int R, uint64_t row) {
    int q = 0;
    while (q + 1 < R && starts[q + 1] <= row)
        q++;
    return q;
}

/* The runs cut at the ranks' blocks (`starts`) into *pieces; -1 when a run's offsets leave
 * its bytes. */
static int cut_runs(const strings_run *runs, size_t nruns, const uint64_t *starts, int R,
                    strings_piece *pieces, size_t *np) {
    size_t k = 0;
    for (size_t r = 0; r < nruns; r++) {
        const strings_run *run = &runs[r];
        if (run->count == 0) continue;
        int q0 = rank_holding(starts, R, run->row);
        int q1 = rank_holding(starts, R, run->row + run->count - 1);
        uint64_t i = 0, at = 0; /* strings and bytes of the run passed */
        for (int q = q0; q <= q1; q++) {
            uint64_t end = q == q1 ? run->count : starts[q + 1] - run->row, i0 = i, at0 = at;
            i = end;
            at = run_at(run, end);
            if (at < at0 || at > run->nbytes) return -1;
            pieces[k++] = (strings_piece){q,
                                          {run->row + i0, i - i0, run->bytes + at0, at - at0,
                                           run->offsets + i0, run->base + (int64_t)at0}};
        }
    }
    *np = k;
    return 0;
}

object *strings_place_ranks(uint64_t n, const strings_run *runs, size_t nruns, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self(), T = locales_local_count(), L = locales_count();
    uint64_t reserved = 0, *starts = sysio.calloc((size_t)R + 1, sizeof *starts);
    uint64_t *cnt = sysio.calloc(3 * (size_t)R, 8), *rcnt = sysio.calloc(3 * (size_t)R, 8);
    uint64_t *sc = sysio.calloc((size_t)R, 8), *rcv = sysio.calloc((size_t)R, 8);
    uint64_t *hdr = NULL, *rhdr = NULL, outbytes = 0, inbytes = 0, nout = 0, nin = 0;
    uint64_t outstr = 0, instr = 0;
    int64_t *sendo = NULL, *recvo = NULL;
    char *sendb = NULL, *recvb = NULL;
    strings_piece *pieces = NULL;
    strings_run *got = NULL;
    object *obj = NULL;
    size_t np = 0, npmax = 0, ngot = 0;
    int rc = starts && cnt && rcnt && sc && rcv ? 0 : -1;
    for (int q = 0; rc == 0 && q <= R; q++)
        starts[q] = locales_block_start(n, L, q * T);
    for (size_t r = 0; rc == 0 && r < nruns; r++)
        if (runs[r].count)
            npmax += (size_t)(rank_holding(starts, R, runs[r].row + runs[r].count - 1) -
                              rank_holding(starts, R, runs[r].row) + 1);
    if (rc == 0 && !(pieces = sysio.malloc((npmax ? npmax : 1) * sizeof *pieces))) rc = -1;
    if (rc) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    if (rc == 0 && cut_runs(runs, nruns, starts, R, pieces, &np))
        rc = h5ark_fail(err, H5ARK_INTERNAL, "rank %d: a run does not hold its strings", me);
    /* how many pieces, bytes and strings go to each other rank (a rank's own stay where they
     * are) */
    for (size_t k = 0; rc == 0 && k < np; k++) {
        if (pieces[k].to == me) continue;
        cnt[3 * pieces[k].to]++;
        cnt[3 * pieces[k].to + 1] += pieces[k].run.nbytes;
        cnt[3 * pieces[k].to + 2] += pieces[k].run.count;
        nout++;
        outbytes += pieces[k].run.nbytes;
        outstr += pieces[k].run.count;
    }
    for (int q = 0; rc == 0 && q < R; q++)
        sc[q] = 24;
    if (ranks_agree(rc, err) || ranks_alltoallv(cnt, sc, rcnt, sc, err)) goto out;
    for (int q = 0; q < R; q++) {
        nin += rcnt[3 * q];
        inbytes += rcnt[3 * q + 1];
        instr += rcnt[3 * q + 2];
    }
    if (registry_scratch_ranks(nout * 24, (void **)&hdr, &reserved, err) ||
        registry_scratch_ranks(nin * 24, (void **)&rhdr, &reserved, err) ||
        registry_scratch_ranks(outbytes, (void **)&sendb, &reserved, err) ||
        registry_scratch_ranks(inbytes, (void **)&recvb, &reserved, err) ||
        registry_scratch_ranks(outstr * 8, (void **)&sendo, &reserved, err) ||
        registry_scratch_ranks(instr * 8, (void **)&recvo, &reserved, err))
        goto out;
    /* each piece as (row, count, bytes), grouped by rank, its bytes in the same order, and
     * its strings' offsets from its first byte (a string's NULs are its data: the offsets
     * say where it ends) */
    uint64_t h = 0, p = 0, o = 0;
    for (int q = 0; q < R; q++)
        for (size_t k = 0; q != me && k < np; k++) {
            const strings_run *run = &pieces[k].run;
            if (pieces[k].to != q) continue;
            hdr[h++] = run->row;
            hdr[h++] = run->count;
            hdr[h++] = run->nbytes;
            memcpy(sendb + p, run->bytes, run->nbytes);
            p += run->nbytes;
            for (uint64_t i = 0; i < run->count; i++)
                sendo[o++] = (int64_t)run_at(run, i);
        }
    for (int q = 0; q < R; q++) {
        sc[q] = cnt[3 * q] * 24;
        rcv[q] = rcnt[3 * q] * 24;
    }
    if (ranks_alltoallv(hdr, sc, rhdr, rcv, err)) goto out;
    for (int q = 0; q < R; q++) {
        sc[q] = cnt[3 * q + 1];
        rcv[q] = rcnt[3 * q + 1];
    }
    if (ranks_alltoallv(sendb, sc, recvb, rcv, err)) goto out;
    for (int q = 0; q < R; q++) {
        sc[q] = cnt[3 * q + 2] * 8;
        rcv[q] = rcnt[3 * q + 2] * 8;
    }
    if (ranks_alltoallv(sendo, sc, recvo, rcv, err)) goto out;
    free(sendb); /* given back before the object is made */
    free(sendo);
    sendb = NULL;
    sendo = NULL;
    registry_unreserve(outbytes + outstr * 8);
    reserved -= outbytes + outstr * 8;
    /* this rank's block: what came, and its own pieces, in row order */
    got = sysio.malloc((nin + np ? nin + np : 1) * sizeof *got);
    if (ranks_agree(got ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me),
                    err))
        goto out;
    for (uint64_t k = 0, at = 0, os = 0; k < nin; k++) {
        got[ngot++] =
            (strings_run){rhdr[3 * k], rhdr[3 * k + 1], recvb + at, rhdr[3 * k + 2], recvo + os, 0};
        at += rhdr[3 * k + 2];
        os += rhdr[3 * k + 1];
    }
    for (size_t k = 0; k < np; k++)
        if (pieces[k].to == me) got[ngot++] = pieces[k].run;
    qsort(got, ngot, sizeof *got, run_cmp);
    obj = strings_from_block_ranks(n, got, ngot, err);
out:
    free(starts);
    free(cnt);
    free(rcnt);
    free(sc);
    free(rcv);
    free(pieces);
    free(hdr);
    free(rhdr);
    free(sendb);
    free(recvb);
    free(sendo);
    free(recvo);
    free(got);
    registry_unreserve(reserved);
    return obj;
}
