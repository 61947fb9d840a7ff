/* strings construction and access (layout in object.h). */
#ifndef H5ARK_STRINGS_H
#define H5ARK_STRINGS_H

#include "dist/place.h"
#include "h5ark_frames.h"
#include "object.h"

/* Build a strings object of `nstrings` strings from a request's `segments` (int64 start
 * offsets) and `values` (bytes, each string followed by one NUL) buffers. Every offset and
 * terminator is checked (bad_request naming the first bad string); a NUL before a string's
 * last byte is its data. */
object *strings_from_payload(uint64_t nstrings, const h5ark_payload *payload,
                             const h5ark_buffer *segments, const h5ark_buffer *values,
                             h5ark_error *err);
/* Build a strings object from a request's `values` buffer alone (its only buffer: the whole
 * payload, which rank 0 holds): each string followed by one NUL and holding none, so each NUL ends
 * one; the bytes must end with a NUL (bad_request). *nstrings: how many (on every rank). */
object *strings_from_nuls(const h5ark_payload *payload, const h5ark_buffer *values,
                          uint64_t *nstrings, h5ark_error *err);

/* Byte offset where string i starts in the concatenated values (i == size: total bytes). */
uint64_t strings_offset(const object *strings, uint64_t i);

/* Within a call (every rank calls): a malloc'd copy of string i followed by a NUL, on every
 * rank, from the rank that holds it; *len (when len is not NULL) its length from the
 * offsets, which counts any NUL it holds. NULL with err set when it fails. */
char *strings_dup(const object *strings, uint64_t i, uint64_t *len, h5ark_error *err);
/* The same from this process's shards alone, no collective (an object gathered whole);
 * NULL when out of memory. */
char *strings_dup_here(const object *strings, uint64_t i, uint64_t *len);

/* Check that a locale's strings are well formed: offsets increasing from values' shard
 * start, each string followed by a NUL (the byte before the next offset). Returns the index of the
 * first bad string, or UINT64_MAX when all are good. Runs on any thread. */
uint64_t strings_check_shard(const object *strings, int locale);

/* Consecutive strings this rank holds: `count` strings back to back, each followed by a
 * NUL, in bytes[0..nbytes), the first being string `row` of the object to make. String k
 * starts at offsets[k] - base (the first at 0) and ends a byte before the next one's start
 * (or nbytes): the offsets, never a NUL, say where it ends. */
typedef place_rows strings_run;

/* Within a call (every rank calls): a new strings object of n strings, block distributed
 * over every locale of every rank, from this rank's block of its rows given as runs in row
 * order (one after another, exactly the rows this rank's locales hold). Each rank fills
 * its own shards; the runs are checked (internal error otherwise). */
object *strings_from_block(uint64_t n, const strings_run *runs, size_t nruns, h5ark_error *err);
/* The same from runs held anywhere: every row of the n in exactly one run of one rank, in
 * any order. Each rank sends its strings to the ranks whose blocks hold their rows
 * (place_rows_exchange, through scratch counted against --max-memory; the pieces that stay
 * on a rank are not copied). */
object *strings_place(uint64_t n, const strings_run *runs, size_t nruns, h5ark_error *err);

#endif
