/* A sample sort across the ranks: the records each rank holds, sorted, end up in one global
 * order evened out to a distribution the caller gives, with the places where the key
 * changes marked. It knows nothing of what the records mean, nor of locales or memory
 * limits (the caller passes its scratch allocator): it sits below everything but ranks.h.
 *
 * The local sort is the caller's (dist_sort takes it as a parameter): with one rank it is
 * the whole sort, and the records are never made. With several, each rank packs its sorted
 * rows as records; samples of every rank's records pick R - 1 splitters; an all-to-all sends
 * each record to the rank whose range of the order holds it, which merges the R runs it
 * got; a second all-to-all evens the records out to the caller's distribution.
 *
 * Records are either of one width (a multiple of 8 bytes, compared as native uint64 words,
 * first word first), or of varying length (a native uint64 byte count, then the bytes,
 * compared by memcmp, a record that is a prefix of another first). Records must be distinct
 * (end them with the row they stand for) so that the order is total and the sort stable. */
#ifndef H5ARK_DIST_SORT_H
#define H5ARK_DIST_SORT_H

#include "h5ark_wire.h"

#include <stddef.h>
#include <stdint.h>

/* Scratch for the sort, called on every rank at once: *p gets `bytes` (freed with free), or
 * every rank fails (-1, err set). */
typedef int (*dist_scratch_fn)(uint64_t bytes, void **p, void *ctx, h5ark_error *err);

typedef struct {
    size_t width;         /* bytes of a record, a multiple of 8; 0: records of varying length */
    size_t tail;          /* the last `tail` bytes of a record are not its key (the row, say) */
    const uint64_t *dist; /* R + 1 entries: rank r ends with records [dist[r], dist[r + 1]) */
    dist_scratch_fn scratch;
    void *scratch_ctx;
} dist_sort_spec;

typedef struct {
    void *rec; /* this rank's records of the global order, back to back */
    uint64_t n, bytes;
    uint64_t *off;   /* [i]: where record i starts in rec */
    uint8_t *starts; /* [i]: 1 when record i's key differs from the record before it in the
                      * global order (the first record of all starts one) */
} dist_sorted;

/* The sample sort of rec, this rank's n records (`bytes` long), each rank's sorted. Every
 * rank calls it; *out is this rank's share (dist_sorted_free it). At one rank: a copy. */
int dist_sort_records(const dist_sort_spec *s, const void *rec, uint64_t n, uint64_t bytes,
                      dist_sorted *out, h5ark_error *err);
void dist_sorted_free(dist_sorted *d);

/* A sort with the local part given: sort_local on every rank (the whole sort at one rank);
 * then, with several ranks only, pack (this rank's sorted records, scratch from the spec's
 * allocator), dist_sort_records and unpack (this rank's share of the global order). 0 on
 * every rank, or -1 on every rank with the lowest failing rank's error.
 *
 * Progress (progress.h): at one rank the local sort reports the request's as it goes; with
 * several, what one rank's local sort does is not the request's progress, so it reports
 * nothing and dist_sort adds `progress` once the whole sort is over. */
typedef struct {
    dist_sort_spec spec;
    uint64_t progress;
    void *ctx;
    int (*sort_local)(void *ctx, h5ark_error *err);
    int (*pack)(void *ctx, void **rec, uint64_t *n, uint64_t *bytes, h5ark_error *err);
    int (*unpack)(void *ctx, const dist_sorted *sorted, h5ark_error *err);
} dist_sort_job;

int dist_sort(const dist_sort_job *job, h5ark_error *err);

/* Elements of `width` bytes, positions [held[r], held[r + 1]) on rank r, moved so that rank
 * r holds [tgt[r], tgt[r + 1]) (R + 1 entries each, the same total). *out: this rank's, from
 * the allocator; with one rank nothing moves and *out is `in` itself. */
int dist_rebalance(void *in, const uint64_t *held, const uint64_t *tgt, size_t width,
                   dist_scratch_fn scratch, void *scratch_ctx, void **out, h5ark_error *err);

#endif
