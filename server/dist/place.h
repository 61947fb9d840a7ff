/* Placing bytes on the ranks that own them, within a call (every rank calls, in the same
 * order): a request's payload cut into its ranks' pieces, rank 0's answer to every rank,
 * a gather to rank 0, and rows held anywhere sent to the ranks whose block holds them. At
 * one rank each is the local step alone. Nothing here knows what the bytes are. */
#ifndef H5ARK_PLACE_H
#define H5ARK_PLACE_H

#include "h5ark_frames.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- rank 0's payload and answers ---- */

/* A piece of a request's payload for one rank: len bytes from offset, for rank `rank`, into
 * dst there (read on that rank only). */
typedef struct {
    int rank;
    uint64_t offset, len;
    void *dst;
} place_piece;

/* The pieces of a buffer of the payload, which rank 0 holds, to their ranks (every rank
 * gives the whole list): rank 0 runs fill(ctx, true), which copies its own pieces, and
 * sends the other ranks' straight from the frames; every other rank receives its pieces
 * into their dst, in list order, then runs fill(ctx, false). */
int place_payload(const h5ark_payload *p, const place_piece *pieces, size_t npieces,
                  void (*fill)(void *ctx, bool from_payload), void *ctx, h5ark_error *err);

/* rc is this rank's outcome so far (err set when not 0). answer(ctx, err) runs on rank 0
 * when its rc is 0 (it reads what rank 0 alone holds: the payload), and fills buf's n
 * bytes; every rank agrees on the outcomes, then has rank 0's bytes in buf. */
int place_from_root(int rc, int (*answer)(void *ctx, h5ark_error *err), void *ctx, void *buf,
                    uint64_t n, h5ark_error *err);

/* ---- gathers to rank 0 ---- */

/* n zeroed bytes at *out on rank 0, where gathers land; NULL on the other ranks (and
 * outside a call, this rank is rank 0). -1 (resource_limit) when rank 0 is short. */
int place_root_calloc(size_t n, void **out, h5ark_error *err);

/* ---- rows to the ranks that hold them ---- */

/* Consecutive rows: `count` rows from `row`, their bytes back to back in
 * bytes[0..nbytes), row k starting at offsets[k] - base (the first at 0) and ending where
 * the next starts (or at nbytes). */
typedef struct {
    uint64_t row, count;
    const char *bytes;
    uint64_t nbytes;
    const int64_t *offsets;
    int64_t base;
} place_rows;

/* Rows for rank `to`. */
typedef struct {
    int to;
    place_rows rows;
} place_rows_piece;

/* Scratch memory the caller counts (against --max-memory): take n bytes into *out (every
 * rank takes part, as for a collective; *taken grows by what stays counted, even when it
 * fails), and give back n bytes' worth once freed. */
typedef struct {
    int (*take)(void *ctx, uint64_t n, void **out, uint64_t *taken, h5ark_error *err);
    void (*give_back)(void *ctx, uint64_t n);
    void *ctx;
} place_scratch;

/* rc is this rank's outcome so far (err set when not 0): every rank agrees on it first.
 * Every rank's pieces to their ranks (all to alls of their counts, of their (row, count,
 * bytes) and of their bytes and offsets; a rank's own pieces are not copied), then
 * use(ctx, got, ngot, err) on every rank with its own rows, those that came (offsets from
 * 0) and its own pieces, sorted by row; what came is freed after use returns. The send
 * buffers are given back before use runs. */
int place_rows_exchange(int rc, const place_rows_piece *pieces, size_t npieces,
                        const place_scratch *scratch,
                        int (*use)(void *ctx, place_rows *got, size_t ngot, h5ark_error *err),
                        void *ctx, h5ark_error *err);

#endif
