/* segarray construction and checks (see segarray.h). */
#include "segarray.h"

#include "locales.h"
#include "dist/ranks.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef enum { SEG_OK, SEG_FIRST_NOT_ZERO, SEG_NEGATIVE, SEG_DECREASING, SEG_PAST_END } seg_fault;

typedef struct {
    const darray *seg;
    uint64_t nvalues;
    /* the first offending element over all locales, and what was wrong with it */
    int nlocales;
    uint64_t *bad_at; /* per locale: the index of its first bad element, or UINT64_MAX */
    seg_fault *why;
    int64_t *prev;        /* per locale: the offset before the bad element (for the message) */
    uint64_t *shard_last; /* per locale: its last offset (another rank's shards included) */
} seg_check_job;

/* The last offset before locale's first element (the last element of an earlier non-empty
 * shard), or false when there is none. Another rank's shards are not in memory: every
 * shard's last offset came with the job. */
static bool previous_offset(const seg_check_job *job, int locale, int64_t *out) {
    for (int b = locale - 1; b >= 0; b--)
        if (job->seg->shards[b].count) {
            *out = (int64_t)job->shard_last[b];
            return true;
        }
    return false;
}

static void check_shard(int locale, void *ctx) {
    seg_check_job *job = ctx;
    const shard *sh = &job->seg->shards[locale];
    const int64_t *off = sh->data;
    job->bad_at[locale] = UINT64_MAX;
    if (sh->count == 0) return;
    int64_t prev = 0;
    bool has_prev = previous_offset(job, locale, &prev);
    for (uint64_t i = 0; i < sh->count; i++) {
        int64_t v = off[i];
        seg_fault f = SEG_OK;
        if (!has_prev && v != 0)
            f = SEG_FIRST_NOT_ZERO;
        else if (v < 0)
            f = SEG_NEGATIVE;
        else if (has_prev && v < prev)
            f = SEG_DECREASING;
        else if ((uint64_t)v > job->nvalues)
            f = SEG_PAST_END;
        if (f != SEG_OK) {
            job->bad_at[locale] = sh->start + i;
            job->why[locale] = f;
            job->prev[locale] = has_prev ? prev : 0;
            return;
        }
        prev = v;
        has_prev = true;
    }
}

static int check_segments(const object *segments, uint64_t nvalues, h5ark_error *err) {
    int L = segments->values->nshards;
    seg_check_job job = {.seg = segments->values, .nvalues = nvalues, .nlocales = L};
    job.bad_at = calloc((size_t)L, sizeof *job.bad_at);
    job.why = calloc((size_t)L, sizeof *job.why);
    job.prev = calloc((size_t)L, sizeof *job.prev);
    job.shard_last = calloc((size_t)L, sizeof *job.shard_last);
    int rc = 0;
    if (!job.bad_at || !job.why || !job.prev || !job.shard_last) {
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    for (int b = 0; b < L; b++)
        job.bad_at[b] = UINT64_MAX;
    /* the last offset of every shard, for the first element of the next */
    for (int b = 0; b < L; b++)
        if (locales_is_local(b) && job.seg->shards[b].count)
            job.shard_last[b] =
                (uint64_t)((const int64_t *)job.seg->shards[b].data)[job.seg->shards[b].count - 1];
    if (ranks_allreduce_u64(job.shard_last, (size_t)L, RANKS_SUM, err)) {
        rc = -1;
        goto out;
    }
    locales_run(check_shard, &job);
    /* the first bad element, and on the rank that holds it what was wrong */
    uint64_t first = UINT64_MAX, detail[3] = {0, 0, 0}; /* why, value, previous */
    for (int b = 0; b < L && first == UINT64_MAX; b++) {
        uint64_t i = job.bad_at[b];
        if (i == UINT64_MAX) continue;
        const shard *sh = &job.seg->shards[b];
        first = i;
        detail[0] = (uint64_t)job.why[b];
        detail[1] = (uint64_t)((const int64_t *)sh->data)[i - sh->start];
        detail[2] = (uint64_t)job.prev[b];
    }
    /* over every rank: the first, and its details from the rank that holds it */
    uint64_t mine = first;
    if (ranks_allreduce_u64(&first, 1, RANKS_MIN, err)) {
        rc = -1;
        goto out;
    }
    if (mine != first) memset(detail, 0, sizeof detail);
    if (first != UINT64_MAX && ranks_allreduce_u64(detail, 3, RANKS_SUM, err)) {
        rc = -1;
        goto out;
    }
    if (first != UINT64_MAX) {
        long long v = (long long)(int64_t)detail[1];
        unsigned long long ui = (unsigned long long)first;
        switch ((seg_fault)detail[0]) {
        case SEG_FIRST_NOT_ZERO:
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "segarray: 'segments' must start at 0, but segments[0] = %lld", v);
            break;
        case SEG_NEGATIVE:
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "segarray: 'segments'[%llu] = %lld is negative",
                            ui, v);
            break;
        case SEG_DECREASING:
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "segarray: 'segments' must not decrease, but segments[%llu] = %lld "
                            "follows %lld",
                            ui, v, (long long)(int64_t)detail[2]);
            break;
        default:
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "segarray: 'segments'[%llu] = %lld is past the end of 'values' "
                            "(%llu elements)",
                            ui, v, (unsigned long long)nvalues);
            break;
        }
    }
out:
    free(job.bad_at);
    free(job.why);
    free(job.prev);
    free(job.shard_last);
    return rc;
}

object *segarray_new(object *segments, object *values, h5ark_error *err) {
    if (segments->objtype != H5ARK_PDARRAY || segments->dtype != H5ARK_INT64 || !segments->values) {
        h5ark_fail(err, H5ARK_TYPE_ERROR,
                   "segarray: 'segments' must be an int64 pdarray, not a %s of dtype %s",
                   h5ark_objtype_name(segments->objtype), h5ark_dtype_name(segments->dtype));
        return NULL;
    }
    bool numeric =
        values->objtype == H5ARK_PDARRAY && (values->values || values->dtype == H5ARK_BIGINT);
    if (!numeric && values->objtype != H5ARK_STRINGS) {
        h5ark_fail(err, H5ARK_TYPE_ERROR,
                   "segarray: 'values' must be a pdarray or strings, not a %s of dtype %s",
                   h5ark_objtype_name(values->objtype), h5ark_dtype_name(values->dtype));
        return NULL;
    }
    if (check_segments(segments, values->size, err)) return NULL;
    object *sa = object_new_composite(H5ARK_SEGARRAY, values->dtype, segments->size, err);
    if (!sa) return NULL;
    if (object_add_component(sa, "segments", segments, err) ||
        object_add_component(sa, "values", values, err)) {
        object_release(sa);
        return NULL;
    }
    return sa;
}
