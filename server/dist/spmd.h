/* Steps of a call that one rank takes for all, on top of ranks.h's collectives: rank 0
 * (the call's root) does what only one process may do (probe files a sandbox opens, lay out
 * files serial HDF5 writes, write the chunks of a compressed file), and the other ranks
 * learn its outcome or send it their part. Every rank calls each in the same order; with
 * one rank each is the plain local step, with nothing encoded, copied or sent. */
#ifndef H5ARK_SPMD_H
#define H5ARK_SPMD_H

#include "h5ark_frames.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether rank `rank` is the root, rank 0 (a shard's rank, locales_rank_of). */
bool spmd_is_root_rank(int rank);

/* rc, and on a rank other than 0 a failure's err given that rank's name as context ("rank
 * N: ..."): rank 0's errors read as with one rank. */
int spmd_name_rank(int rc, h5ark_error *err);

/* ranks_on_root after agreeing on rc, this rank's status so far: fn(ctx, err) on rank 0
 * alone, and every rank returns its outcome (0, or -1 with rank 0's error); a rank that
 * failed before makes every rank fail with its error, fn unrun. */
int spmd_root_does(int rc, int (*fn)(void *ctx, h5ark_error *err), void *ctx, h5ark_error *err);

/* What rank 0 knows, to every rank: encode(ctx) on rank 0 makes a value (NULL when out of
 * memory), which decode(v, ctx, err) takes in on every other rank. Every rank returns the
 * same outcome (the lowest failing rank's error). With one rank: 0, nothing encoded. */
int spmd_share(h5ark_value *(*encode)(void *ctx),
               int (*decode)(const h5ark_value *v, void *ctx, h5ark_error *err), void *ctx,
               h5ark_error *err);

/* A new buffer on rank 0 holding every rank's spans back to back in rank order (counts[r]:
 * rank r's bytes, alike on every rank; total their sum); *whole stays NULL elsewhere. */
int spmd_gather_new(const h5ark_span *spans, size_t nspans, const uint64_t *counts, uint64_t total,
                    void **whole, h5ark_error *err);

/* Pieces made on every rank to rank 0, which takes them in: each rank gives its pieces in
 * its order (rank 0 its own too, taken from where they are); rank 0 calls take(ctx, rank,
 * i, bytes, len, err) for every piece of every rank in rank order, holding one other rank's
 * pieces at a time. After a failed take the rest are received, not taken. Every rank
 * returns the same outcome. */
typedef int (*spmd_take_fn)(void *ctx, int rank, size_t i, const void *p, uint64_t len,
                            h5ark_error *err);
int spmd_funnel(const h5ark_span *mine, size_t n, spmd_take_fn take, void *ctx, h5ark_error *err);

#endif
