/* Element access for the numeric commands: numbers of any stored dtype read as int64,
 * uint64 or double and written back as int64, uint64, float64 or bool; a range of a
 * darray as one pointer whatever its shards; one element fetched from the rank holding
 * it; and elements written to rows wherever they are held. */
#ifndef H5ARK_ELEMENTS_H
#define H5ARK_ELEMENTS_H

#include "objects/object.h"

#include <stdbool.h>
#include <stdint.h>

int64_t elem_load_i(const void *base, h5ark_dtype t, uint64_t i);
uint64_t elem_load_u(const void *base, h5ark_dtype t, uint64_t i);
double elem_load_f(const void *base, h5ark_dtype t, uint64_t i);
void elem_store_i(void *base, h5ark_dtype t, uint64_t i, int64_t v);
void elem_store_u(void *base, h5ark_dtype t, uint64_t i, uint64_t v);
void elem_store_f(void *base, h5ark_dtype t, uint64_t i, double v);

bool elem_is_float(h5ark_dtype t);
bool elem_is_unsigned(h5ark_dtype t); /* unsigned integers, not bool */

/* Elements [start, start + count) of a: a pointer into one shard when they lie in it,
 * else a copy in *scratch (malloc'd; the caller frees it). NULL when out of memory. */
const void *elem_range(const darray *a, uint64_t start, uint64_t count, void **scratch);
/* Element i's address (in a shard this rank holds). */
const void *elem_at(const darray *a, uint64_t i);
/* Element i's itemsize bytes into out on every rank of the call, from the rank holding it. */
int elem_fetch(const darray *a, uint64_t i, void *out, h5ark_error *err);
/* In a command every rank runs: n elements (out's itemsize each, at items) written to rows
 * at[0..n) of `out`, wherever they are held: each rank sends its elements to the ranks
 * holding their rows, which write them in rank order, then in the order given (a row
 * given twice keeps the last, as one daemon writing them in order). */
int elem_put_rows(darray *out, const uint64_t *at, const void *items, uint64_t n, h5ark_error *err);
/* In a command every rank runs: a new uint64 pdarray (unpublished) of src's uint64 values
 * & mask; NULL (on every rank) when any rank is out of memory. */
object *elem_masked_u64(const object *src, uint64_t mask, h5ark_error *err);
/* Copy n elements of a's dtype from src into a at global index `at`. */
void elem_copy_into(darray *a, uint64_t at, const void *src, uint64_t n);

/* String i of a strings object: its bytes (inside one shard) and length without the NUL. */
const char *elem_string_at(const object *s, uint64_t i, uint64_t *len);
/* String k of shard b, read from that shard alone: a shard's strings' bytes are in its own
 * values shard, the last ending where that shard ends (so at several ranks a locale reads
 * only its own shards). */
const char *elem_string_in_shard(const object *s, int b, uint64_t k, uint64_t *len);

/* The row positions an index array selects from `size` rows: a bool mask of that length
 * gives where it is true, an integer array its entries with negative ones counted from the
 * end. A new int64 pdarray; bad_request naming the first index out of bounds. Inside a
 * command that runs on every rank (every rank calls, and all get the same outcome): each
 * rank makes the positions of its own shards of the index, and those of another rank's
 * rows of the result move there (against --max-memory; at one rank nothing moves). */
object *elem_positions(const object *idx, uint64_t size, h5ark_error *err);

#endif
