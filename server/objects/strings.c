/* strings construction and checks (see strings.h). */
#include "strings.h"

#include "locales.h"
#include "progress.h"
#include "dist/place.h"
#include "dist/spmd.h"
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

/* String i (within shard b of its segments, whose values shard holds its bytes) and a NUL
 * after it; its end is the next offset, or its values shard's end. */
static char *dup_in_shard(const object *s, int b, uint64_t i, uint64_t *len) {
    const shard *seg = &s->segments->shards[b], *val = &s->values->shards[b];
    const int64_t *off = seg->data;
    uint64_t from = (uint64_t)off[i - seg->start];
    uint64_t to = i + 1 < seg->start + seg->count ? (uint64_t)off[i + 1 - seg->start]
                                                  : val->start + val->count;
    char *out = malloc(to - from);
    if (!out) return NULL;
    memcpy(out, (const char *)val->data + (from - val->start), to - from - 1);
    out[to - from - 1] = '\0';
    if (len) *len = to - from - 1; /* the offsets say where it ends: its own NULs are data */
    return out;
}

char *strings_dup_here(const object *s, uint64_t i, uint64_t *len) {
    return dup_in_shard(s, darray_shard_of(s->segments, i), i, len);
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
    uint64_t n, *counts;
    _Atomic uint64_t first_bad;
    atomic_int failed;
    bool from_payload;
} copy_job;

/* A locale's segments and bytes: copied from the payload where this rank holds it, else
 * they came from rank 0; checked either way. */
static void fill_shard(int locale, void *ctx) {
    copy_job *job = ctx;
    shard *seg = &job->obj->segments->shards[locale];
    shard *val = &job->obj->values->shards[locale];
    if (job->from_payload) {
        if (h5ark_payload_copy(job->payload, job->segments->offset + seg->start * 8, seg->data,
                               seg->count * 8) ||
            h5ark_payload_copy(job->payload, job->values->offset + val->start, val->data,
                               val->count)) {
            atomic_store(&job->failed, 1);
            return;
        }
        progress_add(progress_here(), seg->count * 8 + val->count);
    }
    locales_note_first(&job->first_bad, strings_check_shard(job->obj, locale));
}

static void fill_shards(void *ctx, bool from_payload) {
    copy_job *job = ctx;
    job->from_payload = from_payload;
    locales_run(fill_shard, job);
}

/* Each locale's byte count, from the offset of its first string in the payload. */
static int read_counts(void *ctx, h5ark_error *err) {
    copy_job *job = ctx;
    int L = locales_count();
    uint64_t prev = 0;
    for (int b = 0; b < L; b++) {
        uint64_t first = locales_block_start(job->n, L, b + 1);
        int64_t off = (int64_t)job->values->nbytes;
        if (first < job->n)
            h5ark_payload_copy(job->payload, job->segments->offset + first * 8, &off, 8);
        if (off < (int64_t)prev || (uint64_t)off > job->values->nbytes)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "segments[%llu] = %lld is out of order or past the %llu bytes of "
                              "'values'",
                              (unsigned long long)first, (long long)off,
                              (unsigned long long)job->values->nbytes);
        job->counts[b] = (uint64_t)off - prev;
        prev = (uint64_t)off;
    }
    return 0;
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
    /* Each locale's byte range starts at the offset of its first string: the rank holding
     * the payload reads those and every rank learns them. */
    int L = locales_count();
    copy_job job = {.payload = payload, .segments = segments, .values = values, .n = n};
    atomic_init(&job.first_bad, UINT64_MAX);
    job.counts = calloc((size_t)L, sizeof *job.counts);
    int rc = job.counts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = place_from_root(rc, read_counts, &job, job.counts, (uint64_t)L * sizeof *job.counts, err);
    object *obj = rc == 0 ? object_new_strings(n, job.counts, err) : NULL;
    free(job.counts);
    if (!obj) return NULL;
    job.obj = obj;
    /* every locale's segments and bytes, from the payload or from rank 0's frames */
    const darray *seg = obj->segments, *val = obj->values;
    place_piece *pieces = malloc((size_t)L * 2 * sizeof *pieces);
    for (int b = 0; pieces && b < L; b++) {
        bool here = locales_is_local(b);
        int to = locales_rank_of(b);
        pieces[2 * b] = (place_piece){to, segments->offset + seg->shards[b].start * 8,
                                      seg->shards[b].count * 8, here ? seg->shards[b].data : NULL};
        pieces[2 * b + 1] = (place_piece){to, values->offset + val->shards[b].start,
                                          val->shards[b].count, here ? val->shards[b].data : NULL};
    }
    rc = pieces ? place_payload(payload, pieces, (size_t)L * 2, fill_shards, &job, err)
                : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(pieces);
    /* every rank learns the first bad string of all, and any failure */
    uint64_t v[2] = {atomic_load(&job.first_bad), atomic_load(&job.failed) ? 0 : 1};
    if ((rc = ranks_agree(rc, err)) != 0 || ranks_allreduce_u64(v, 2, RANKS_MIN, err)) {
        object_release(obj);
        return NULL;
    }
    if (v[1] == 0 || v[0] != UINT64_MAX) {
        object_release(obj);
        if (v[0] != UINT64_MAX)
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "string %llu is malformed: segments must start at 0 and increase, and "
                       "each string must be followed by a NUL byte (the byte before the next "
                       "offset)",
                       (unsigned long long)v[0]);
        else
            h5ark_fail(err, H5ARK_BAD_REQUEST, "the payload is shorter than its buffers declare");
        return NULL;
    }
    return obj;
}

char *strings_dup(const object *s, uint64_t i, uint64_t *slen, h5ark_error *err) {
    /* a string's bytes lie in the values shard of its segments shard: one rank has both */
    int b = darray_shard_of(s->segments, i);
    int holder = locales_rank_of(b);
    uint64_t len = 0;
    char *out = NULL;
    int rc = 0;
    if (locales_is_local(b)) {
        if ((out = dup_in_shard(s, b, i, &len))) {
            len++;
        } else {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            rc = spmd_name_rank(-1, err);
        }
    }
    if (ranks_agree(rc, err) || ranks_bcast(holder, &len, sizeof len, err)) goto fail;
    if (!out && !(out = calloc(1, len))) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = spmd_name_rank(-1, err);
    }
    if (ranks_agree(rc, err) || ranks_bcast(holder, out, len, err)) goto fail;
    if (slen) *slen = len - 1;
    return out;
fail:
    free(out);
    return NULL;
}

/* ---- strings laid out from runs ---- */

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

object *strings_from_block(uint64_t n, const strings_run *runs, size_t nruns, h5ark_error *err) {
    int L = locales_count(), T = locales_local_count(), first = locales_local_first();
    uint64_t lo = locales_block_start(n, L, first), hi = locales_block_start(n, L, first + T);
    uint64_t *bc = sysio.calloc((size_t)L, sizeof *bc);
    block_job j = {.runs = runs,
                   .run_at = sysio.calloc((size_t)T, sizeof *j.run_at),
                   .str_at = sysio.calloc((size_t)T, sizeof *j.str_at)};
    object *out = NULL;
    int rc = 0;
    if (!bc || !j.run_at || !j.str_at) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = spmd_name_rank(-1, err);
    }
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
        if (bad) {
            h5ark_fail(err, H5ARK_INTERNAL,
                       "strings for rows from %llu are not the %llu strings expected there",
                       (unsigned long long)run->row, (unsigned long long)run->count);
            rc = spmd_name_rank(-1, err);
        }
    }
    if (rc == 0 && row != hi) {
        h5ark_fail(err, H5ARK_INTERNAL, "strings for rows %llu..%llu are missing",
                   (unsigned long long)row, (unsigned long long)hi);
        rc = spmd_name_rank(-1, err);
    }
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

/* The locale whose block holds `row` (starts[b]: locale b's first row; an empty locale
 * shares the next one's start, so the last locale starting at or before row). */
static int locale_holding(const uint64_t *starts, int L, uint64_t row) {
    int lo = 0, hi = L - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (starts[mid] <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The runs cut where the rank holding their rows changes (a rank's locales are
 * consecutive) into pieces (counted only when pieces is NULL); -1 when a run's offsets
 * leave its bytes. */
static int cut_runs(const strings_run *runs, size_t nruns, const uint64_t *starts, int L,
                    place_rows_piece *pieces, size_t *np) {
    size_t k = 0;
    for (size_t r = 0; r < nruns; r++) {
        const strings_run *run = &runs[r];
        uint64_t i = 0, at = 0; /* strings and bytes of the run passed */
        if (run->count > starts[L] || run->row > starts[L] - run->count) return -1;
        while (i < run->count) {
            int b = locale_holding(starts, L, run->row + i), q = locales_rank_of(b);
            while (b + 1 < L && locales_rank_of(b + 1) == q)
                b++;
            uint64_t end = starts[b + 1] - run->row, i0 = i, at0 = at;
            i = end < run->count ? end : run->count;
            at = run_at(run, i);
            if (at < at0 || at > run->nbytes) return -1;
            if (pieces)
                pieces[k] = (place_rows_piece){q,
                                               {run->row + i0, i - i0, run->bytes + at0, at - at0,
                                                run->offsets + i0, run->base + (int64_t)at0}};
            k++;
        }
    }
    *np = k;
    return 0;
}

typedef struct {
    uint64_t n;
    object *out;
} place_job;

static int take_scratch(void *ctx, uint64_t n, void **out, uint64_t *taken, h5ark_error *err) {
    (void)ctx;
    return registry_scratch_agreed(n, out, taken, err);
}

static void give_back_scratch(void *ctx, uint64_t n) {
    (void)ctx;
    registry_unreserve(n);
}

static int make_block(void *ctx, place_rows *got, size_t ngot, h5ark_error *err) {
    place_job *j = ctx;
    j->out = strings_from_block(j->n, got, ngot, err);
    return j->out ? 0 : -1;
}

object *strings_place(uint64_t n, const strings_run *runs, size_t nruns, h5ark_error *err) {
    int L = locales_count(), rc = 0;
    uint64_t *starts = sysio.calloc((size_t)L + 1, sizeof *starts);
    place_rows_piece *pieces = NULL;
    size_t np = 0;
    for (int b = 0; starts && b <= L; b++)
        starts[b] = locales_block_start(n, L, b);
    if (starts && cut_runs(runs, nruns, starts, L, NULL, &np)) {
        h5ark_fail(err, H5ARK_INTERNAL, "a run does not hold its strings");
        rc = spmd_name_rank(-1, err);
    } else if (!starts || !(pieces = sysio.malloc((np ? np : 1) * sizeof *pieces))) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = spmd_name_rank(-1, err);
    } else {
        cut_runs(runs, nruns, starts, L, pieces, &np);
    }
    place_job j = {.n = n};
    place_scratch scratch = {take_scratch, give_back_scratch, NULL};
    place_rows_exchange(rc, pieces, np, &scratch, make_block, &j, err);
    free(starts);
    free(pieces);
    return j.out;
}

/* ---- strings whose NULs end them ---- */

typedef struct {
    const h5ark_payload *payload;
    h5ark_payload with_offsets; /* rank 0: the start offsets' frame, then the payload's */
    uint64_t count, reserved;
} nuls_job;

static void free_offsets(void *data, void *hint) {
    (void)hint;
    free(data);
}

/* Rank 0: the strings' start offsets found from their NULs, as a first frame before the
 * payload's own (shared, not copied); the payload is the one buffer `values`. */
static int offsets_at_nuls(void *ctx, h5ark_error *err) {
    nuls_job *job = ctx;
    const h5ark_payload *p = job->payload;
    uint64_t n = 0;
    for (size_t f = 0; f < p->count; f++) {
        const char *b = zmq_msg_data(&p->frames[f]);
        size_t len = zmq_msg_size(&p->frames[f]);
        for (const char *at = b; (at = memchr(at, '\0', len - (size_t)(at - b))); at++)
            n++;
    }
    if (p->total) {
        zmq_msg_t *last = &p->frames[p->count - 1];
        size_t len = zmq_msg_size(last);
        if (len == 0 || ((const char *)zmq_msg_data(last))[len - 1] != '\0')
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "the strings' bytes must end with a NUL");
    }
    if (n > OBJECT_MAX_ELEMENTS) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "too many strings");
    if (registry_reserve(n * 8, err)) return -1;
    job->reserved = n * 8;
    int64_t *offsets = malloc(n ? n * 8 : 1);
    zmq_msg_t msg;
    if (!offsets || zmq_msg_init_data(&msg, offsets, (size_t)(n * 8), free_offsets, NULL) != 0) {
        free(offsets);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    uint64_t at = 0, k = 0;
    bool start = true;
    for (size_t f = 0; f < p->count; f++) {
        const char *b = zmq_msg_data(&p->frames[f]);
        size_t len = zmq_msg_size(&p->frames[f]);
        for (size_t i = 0; i < len; i++, at++) {
            if (start) offsets[k++] = (int64_t)at;
            start = b[i] == '\0';
        }
    }
    int bad = h5ark_payload_append(&job->with_offsets, &msg);
    zmq_msg_close(&msg);
    for (size_t f = 0; !bad && f < p->count; f++) {
        zmq_msg_t copy;
        zmq_msg_init(&copy);
        bad = zmq_msg_copy(&copy, &p->frames[f]) || h5ark_payload_append(&job->with_offsets, &copy);
        zmq_msg_close(&copy);
    }
    if (bad) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    job->count = n;
    return 0;
}

object *strings_from_nuls(const h5ark_payload *payload, const h5ark_buffer *values,
                          uint64_t *nstrings, h5ark_error *err) {
    nuls_job job = {.payload = payload};
    h5ark_payload_init(&job.with_offsets);
    object *obj = NULL;
    /* the only buffer: the payload is its bytes (rank 0 holds them) */
    if (place_from_root(0, offsets_at_nuls, &job, &job.count, sizeof job.count, err) == 0) {
        uint64_t n = job.count;
        h5ark_buffer segs = {(char *)"segments", n * 8, 0},
                     vals = {(char *)"values", values->nbytes, n * 8};
        obj = strings_from_payload(n, &job.with_offsets, &segs, &vals, err);
        *nstrings = n;
    }
    h5ark_payload_free(&job.with_offsets);
    registry_unreserve(job.reserved);
    return obj;
}
