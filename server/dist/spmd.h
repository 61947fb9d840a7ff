/* SPMD forms over the collectives of ranks.h, for code outside dist/ that must say what
 * rank 0 alone holds without testing which rank it is on: a stream gathered to rank 0,
 * rank 0's state shared with every rank and every rank's state collected on rank 0 (rank
 * 0's own work: ranks_on_root), each rank's block of a list, and what one named rank does.
 *
 * Every rank of a call makes the same calls in the same order (ranks.h); outside a call,
 * as there, the ranks are this one alone. With one rank each is a constant-time no-op:
 * nothing is encoded, nothing moves. */
#ifndef H5ARK_SPMD_H
#define H5ARK_SPMD_H

#include "h5ark_frames.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- a stream gathered to rank 0 ---- */

/* One piece of a stream whose pieces lie on several ranks: `rank` holds `len` bytes at
 * `ptr` (ptr is read on that rank only). */
typedef struct {
    int rank;
    const void *ptr;
    uint64_t len;
} spmd_piece;

/* The bytes this rank receives when the pieces are gathered: on rank 0 those of every
 * piece another rank holds, elsewhere 0. Every rank gives the same ranks and lengths. */
uint64_t spmd_pieces_recv_bytes(const spmd_piece *p, size_t n);
/* Gather the pieces to rank 0: each rank sends the pieces it holds, in order; rank 0
 * receives the others' into recv (spmd_pieces_recv_bytes of room) and points their ptr
 * there, so on rank 0 every piece is readable, in order. Elsewhere *n becomes 0: there
 * is nothing to read there. rc: this rank's outcome so far (its room made or not), agreed
 * before anything moves; returns the agreed outcome. */
int spmd_pieces_gather(int rc, spmd_piece *p, size_t *n, void *recv, h5ark_error *err);

/* ---- rank 0's state ---- */

/* A state in bytes, for spmd_share and spmd_collect. */
typedef struct {
    /* This rank's state as bytes (*buf freed by the caller of encode with free()). */
    int (*encode)(void *ctx, void **buf, uint64_t *len, h5ark_error *err);
    /* Room for len bytes arriving (freed with free() after decode); NULL: malloc. */
    int (*room)(void *ctx, uint64_t len, void **buf, h5ark_error *err);
    /* The state of rank `from` into this rank's. */
    int (*decode)(void *ctx, int from, const void *buf, uint64_t len, h5ark_error *err);
} spmd_codec;

/* Rank 0's state to every rank: encoded on rank 0, decoded on every other. rc: this rank's
 * outcome so far, agreed first; returns the agreed outcome (err the lowest failing rank's). */
int spmd_share(int rc, const spmd_codec *c, void *ctx, h5ark_error *err);
/* Every other rank's state to rank 0: encoded on each, decoded on rank 0 in rank order
 * (rank 0's own state stays where it is). rc and the return as spmd_share. */
int spmd_collect(int rc, const spmd_codec *c, void *ctx, h5ark_error *err);

/* ---- the ranks as a list ---- */

/* This rank's block [*lo, *hi) of n items dealt out in rank order (at one rank, all). */
void spmd_block(uint64_t n, uint64_t *lo, uint64_t *hi);
/* Rank r's block of n items, as spmd_block deals them: [*lo, *hi). */
void spmd_block_of(uint64_t n, int r, uint64_t *lo, uint64_t *hi);
/* ---- the job's ranks by number (whether in a call or not) ---- */

/* The ranks' hosts in rank order, as an array of str (its length is the rank count);
 * NULL when out of memory. */
h5ark_value *spmd_hosts(void);
/* bad_request "<what>: rank must be 0 to R-1, not <rank>" unless `rank` names a rank. */
int spmd_check_rank(int64_t rank, const char *what, h5ark_error *err);
/* v on rank `rank`, 0 on the others. */
uint64_t spmd_on_rank(int64_t rank, uint64_t v);

/* ---- which rank a failure happened on ---- */

/* The one way an error names its rank: within a call (several ranks at work), a failure's
 * message (rc != 0) gets this rank before it, "rank N: ..."; outside one (one rank, or
 * rank 0 alone) it reads as it is. Returns rc. */
int spmd_name_rank(int rc, h5ark_error *err);
/* err failed as h5ark_fail would, then named by spmd_name_rank. Returns -1. */
int spmd_fail(h5ark_error *err, h5ark_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- steps rank 0 takes for all: its step and outcome, what it knows, pieces to it ---- */

/* Whether rank `rank` is the root, rank 0 (a shard's rank, locales_rank_of). */
bool spmd_is_root_rank(int rank);

/* ranks_on_root after agreeing on rc, this rank's status so far: fn(ctx, err) on rank 0
 * alone, and every rank returns its outcome (0, or -1 with rank 0's error); a rank that
 * failed before makes every rank fail with its error, fn unrun. */
int spmd_root_does(int rc, int (*fn)(void *ctx, h5ark_error *err), void *ctx, h5ark_error *err);

/* What rank 0 knows, to every rank: ranks_on_root_value's make(ctx, err) on rank 0, and
 * take(v, ctx, err) of its value on every other rank (rank 0 has it already). Every rank
 * returns the same outcome (the lowest failing rank's error). With one rank: 0, nothing
 * made. */
int spmd_share_value(h5ark_value *(*make)(void *ctx, h5ark_error *err),
                     int (*take)(const h5ark_value *v, void *ctx, h5ark_error *err), void *ctx,
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
