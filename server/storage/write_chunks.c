/* The compressed chunks of a write (write_files.h).
 *
 * Serial HDF5 cannot have several processes add chunks to one file (each chunk's place is
 * allocated in the file's metadata, held in the memory of the process writing it), so the
 * rank owning a chunk (the owner of its middle element) makes it on its locales, in
 * parallel with the other ranks, and rank 0, whose file is open, adds it: its own chunks as
 * they are made (only the adding takes HDF5's lock), the other ranks' as they arrive
 * (spmd_funnel). Cost over one rank: the compressed bytes of ranks > 0 cross to rank 0,
 * and the elements of a chunk lying on another rank than its owner's (at most a chunk per
 * rank boundary of each dataset) cross first. Memory: ROUND_BYTES of a rank's chunks are
 * made at a time, and rank 0 holds one rank's made chunks of a round at a time. */
#include "write_files.h"

#include "dist/ranks.h"
#include "dist/spmd.h"
#include "progress.h"
#include "sysio.h"

#include <stdlib.h>
#include <string.h>

enum { ROUND_BYTES = 64u << 20 };

static uint64_t chunk_bytes(const write_chunk *c) {
    return c->count * c->src->itemsize;
}

/* Calls back for each shard of c's elements on another rank than c's owner: its rank and
 * the overlap [lo, hi) of elements. */
typedef void (*span_fn)(const write_chunk *c, int owner, int rank, int b, uint64_t lo, uint64_t hi,
                        void *ctx);

static void foreign_spans(const write_chunk *c, span_fn fn, void *ctx) {
    const darray *a = c->src;
    int owner = locales_rank_of(c->locale);
    uint64_t end = c->first + c->count;
    for (int b = c->count ? darray_shard_of(a, c->first) : a->nshards; b < a->nshards; b++) {
        const shard *s = &a->shards[b];
        if (s->start >= end) break;
        uint64_t lo = s->start > c->first ? s->start : c->first;
        uint64_t hi = s->start + s->count < end ? s->start + s->count : end;
        if (lo < hi && locales_rank_of(b) != owner)
            fn(c, owner, locales_rank_of(b), b, lo, hi, ctx);
    }
}

typedef struct {
    uint64_t *send, *recv; /* bytes per rank, then (second pass) positions */
    char *sendbuf;
    bool *straddles; /* per chunk */
    size_t chunk;
} edge_pass;

static void count_edge(const write_chunk *c, int owner, int rank, int b, uint64_t lo, uint64_t hi,
                       void *ctx) {
    edge_pass *e = ctx;
    uint64_t n = (hi - lo) * c->src->itemsize;
    if (locales_is_local(b)) e->send[owner] += n;
    if (locales_is_local(c->locale)) e->recv[rank] += n, e->straddles[e->chunk] = true;
}

static void pack_edge(const write_chunk *c, int owner, int rank, int b, uint64_t lo, uint64_t hi,
                      void *ctx) {
    (void)rank;
    edge_pass *e = ctx;
    if (!locales_is_local(b)) return;
    const shard *s = &c->src->shards[b];
    size_t isz = c->src->itemsize;
    memcpy(e->sendbuf + e->send[owner], (const char *)s->data + (lo - s->start) * isz,
           (hi - lo) * isz);
    e->send[owner] += (hi - lo) * isz;
}

/* Each of this rank's chunks with elements on other ranks gets them all in c->whole (one
 * all-to-all of those elements); *wholes lists the memory to free. */
static int gather_edges(write_plan *plan, void ***wholes, h5ark_error *err) {
    int R = ranks_count();
    /* per rank: bytes to send, to receive, the send and receive positions, the send counts */
    uint64_t *t = sysio.calloc((size_t)R * 5, sizeof *t);
    edge_pass e = {.straddles = sysio.calloc(plan->nchunks + 1, sizeof *e.straddles)};
    char *recvbuf = NULL;
    *wholes = sysio.calloc(plan->nchunks + 1, sizeof **wholes);
    int rc = 0;
    if (!t || !e.straddles || !*wholes) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t *soff = t ? t + 2 * R : NULL, *roff = t ? t + 3 * R : NULL;
    uint64_t *counts = t ? t + 4 * R : NULL;
    if (rc == 0) {
        e.send = t;
        e.recv = t + R;
        for (e.chunk = 0; e.chunk < plan->nchunks; e.chunk++)
            foreign_spans(&plan->chunks[e.chunk], count_edge, &e);
        uint64_t st = 0, rt = 0;
        for (int r = 0; r < R; r++)
            soff[r] = st, roff[r] = rt, st += e.send[r], rt += e.recv[r];
        e.sendbuf = sysio.malloc(st ? st : 1);
        recvbuf = sysio.malloc(rt ? rt : 1);
        if (!e.sendbuf || !recvbuf) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    /* the memory is there on every rank before anything moves */
    rc = ranks_agree(rc, err);
    if (rc == 0) {
        memcpy(counts, e.send, (size_t)R * sizeof *counts);
        memcpy(e.send, soff, (size_t)R * sizeof *e.send); /* now positions */
        for (size_t i = 0; i < plan->nchunks; i++)
            foreign_spans(&plan->chunks[i], pack_edge, &e);
        rc = ranks_alltoallv(e.sendbuf, counts, recvbuf, e.recv, err);
    }
    /* the owners put their chunks together: their own shards, then what came, in plan order */
    for (size_t i = 0; rc == 0 && i < plan->nchunks; i++) {
        write_chunk *c = &plan->chunks[i];
        if (!e.straddles[i]) continue;
        const darray *a = c->src;
        size_t isz = a->itemsize;
        char *w = sysio.malloc(chunk_bytes(c) ? chunk_bytes(c) : 1);
        if (!w) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
        (*wholes)[i] = w;
        uint64_t end = c->first + c->count;
        for (int b = darray_shard_of(a, c->first); b < a->nshards; b++) {
            const shard *s = &a->shards[b];
            if (s->start >= end) break;
            uint64_t lo = s->start > c->first ? s->start : c->first;
            uint64_t hi = s->start + s->count < end ? s->start + s->count : end;
            if (lo >= hi) continue;
            char *to = w + (lo - c->first) * isz;
            if (locales_is_local(b)) {
                memcpy(to, (const char *)s->data + (lo - s->start) * isz, (hi - lo) * isz);
            } else {
                int r = locales_rank_of(b);
                memcpy(to, recvbuf + roff[r], (hi - lo) * isz);
                roff[r] += (hi - lo) * isz;
            }
        }
        c->whole = w;
    }
    free(t);
    free(e.straddles);
    free(e.sendbuf);
    free(recvbuf);
    return ranks_agree(rc, err);
}

typedef struct {
    write_job *job;
    locale_errors le;
    const uint32_t *round; /* per chunk */
    uint32_t k;
    unsigned char **made; /* chunks of files not open here: per chunk, its stored bytes */
    uint64_t *len;
    size_t next; /* rank 0 taking a rank's chunks: the plan's chunk to look from */
    int from;    /* and that rank */
} round_job;

/* The chunks of round k on this locale: added to the file where it is open here (rank 0),
 * else kept to be sent there. */
static void make_round(int locale, void *ctx) {
    round_job *rj = ctx;
    write_job *job = rj->job;
    h5ark_error *err = &rj->le.errs[locale];
    chunk_buffers b = {0};
    for (size_t i = 0; i < job->plan->nchunks; i++) {
        const write_chunk *c = &job->plan->chunks[i];
        if (c->locale != locale || rj->round[i] != rj->k) continue;
        const unsigned char *out;
        size_t len;
        int rc = chunk_make(job->plan, c, &b, &out, &len, err);
        if (rc == 0 && job->files[c->file].h5 >= 0) {
            rc = chunk_store(job->plan, c->dset, c->at, out, len, err);
        } else if (rc == 0) {
            if (!(rj->made[i] = sysio.malloc(len)))
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for a chunk");
            else
                memcpy(rj->made[i], out, len), rj->len[i] = len;
        }
        if (rc) {
            h5ark_fail_context(err, "cannot write '%s'", job->files[c->file].rel);
            locale_errors_set(&rj->le, locale);
            break;
        }
        progress_add(progress_here(), chunk_bytes(c));
    }
    chunk_buffers_free(&b);
}

/* Rank 0: chunk i of round k from rank `rank` (they come in plan order), added to its file. */
static int take_chunk(void *ctx, int rank, size_t i, const void *p, uint64_t len,
                      h5ark_error *err) {
    round_job *rj = ctx;
    const write_plan *plan = rj->job->plan;
    if (i == 0 || rank != rj->from) rj->next = 0, rj->from = rank;
    while (rj->next < plan->nchunks &&
           (rj->round[rj->next] != rj->k || locales_rank_of(plan->chunks[rj->next].locale) != rank))
        rj->next++;
    if (rj->next == plan->nchunks)
        return h5ark_fail(err, H5ARK_INTERNAL, "rank %d sent a chunk the plan does not have", rank);
    const write_chunk *c = &plan->chunks[rj->next++];
    if (chunk_store(plan, c->dset, c->at, p, len, err))
        return h5ark_fail_context(err, "cannot write '%s'", rj->job->files[c->file].rel);
    return 0;
}

/* Round k: every rank makes its chunks of the round, rank 0 adding its own; the other
 * ranks' go to rank 0, which adds them. */
static int write_round(round_job *rj, h5ark_error *err) {
    const write_plan *plan = rj->job->plan;
    int rc = locale_errors_init(&rj->le, err);
    if (rc == 0) {
        locales_run(make_round, rj);
        rc = locale_errors_take(&rj->le, err);
    }
    locale_errors_free(&rj->le);
    size_t n = 0;
    h5ark_span *mine = sysio.calloc(plan->nchunks + 1, sizeof *mine);
    if (!mine && rc == 0) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; mine && i < plan->nchunks; i++)
        if (rj->made[i]) mine[n++] = (h5ark_span){rj->made[i], rj->len[i]};
    /* every rank made its chunks before anything moves */
    rc = ranks_agree(rc, err);
    if (rc == 0) rc = spmd_funnel(mine, n, take_chunk, rj, err);
    for (size_t i = 0; i < plan->nchunks; i++) {
        free(rj->made[i]);
        rj->made[i] = NULL;
    }
    free(mine);
    return rc;
}

int write_compressed_chunks(write_job *job, write_plan *plan, int rc, h5ark_error *err) {
    void **wholes = NULL;
    uint32_t *round = sysio.calloc(plan->nchunks + 1, sizeof *round);
    unsigned char **made = sysio.calloc(plan->nchunks + 1, sizeof *made);
    uint64_t *len = sysio.calloc(plan->nchunks + 1, sizeof *len);
    uint64_t *acc = sysio.calloc((size_t)locales_count(), sizeof *acc);
    if (rc == 0 && !(round && made && len && acc))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    if (rc == 0 && plan->nchunks > 0) rc = gather_edges(plan, &wholes, err);
    /* rounds of ROUND_BYTES per rank, shared evenly by its locales, alike on every rank (all
     * hold the whole plan); only chunks kept to be sent need them: when rank 0 owns every
     * chunk (one rank), one round, the locales never waiting for each other */
    uint64_t per_locale = ROUND_BYTES / (uint64_t)locales_local_count();
    bool kept = false;
    for (size_t i = 0; i < plan->nchunks; i++)
        kept = kept || !spmd_is_root_rank(locales_rank_of(plan->chunks[i].locale));
    uint32_t nrounds = 0;
    for (size_t i = 0; rc == 0 && i < plan->nchunks; i++) {
        int l = plan->chunks[i].locale;
        round[i] = kept ? (uint32_t)(acc[l] / per_locale) : 0;
        acc[l] += chunk_bytes(&plan->chunks[i]);
        nrounds = round[i] + 1 > nrounds ? round[i] + 1 : nrounds;
    }
    round_job rj = {.job = job, .round = round, .made = made, .len = len};
    for (rj.k = 0; rc == 0 && rj.k < nrounds; rj.k++)
        rc = write_round(&rj, err);
    for (size_t i = 0; wholes && i < plan->nchunks; i++) {
        free(wholes[i]);
        plan->chunks[i].whole = NULL;
    }
    free(wholes);
    free(round);
    free(made);
    free(len);
    free(acc);
    return rc;
}
