/* Element access for the Arkouda compute commands: numbers of any stored dtype read as
 * int64, uint64 or double, written back as one of Arkouda's four dtypes; a range of a
 * darray as one pointer whatever its shards; Arkouda's scalar reply text; and the strings
 * of a strings object. */
#ifndef H5ARK_AK_VALUES_H
#define H5ARK_AK_VALUES_H

#include "objects/object.h"

#include <stdbool.h>
#include <stdint.h>

int64_t ak_load_i(const void *base, h5ark_dtype t, uint64_t i);
uint64_t ak_load_u(const void *base, h5ark_dtype t, uint64_t i);
double ak_load_f(const void *base, h5ark_dtype t, uint64_t i);
void ak_store_i(void *base, h5ark_dtype t, uint64_t i, int64_t v);
void ak_store_u(void *base, h5ark_dtype t, uint64_t i, uint64_t v);
void ak_store_f(void *base, h5ark_dtype t, uint64_t i, double v);

/* Arkouda's text of a scalar of dtype t (bool True/False/true/false/1/0, an integer, a
 * float) stored at element 0 of out, as t. bad_request naming `key` when it is not one. */
int ak_scalar_parse(h5ark_dtype t, const char *text, const char *key, void *out, h5ark_error *err);

/* The dtypes of Arkouda's four kinds here. */
bool ak_is_float(h5ark_dtype t);
bool ak_is_unsigned(h5ark_dtype t); /* unsigned integers, not bool */

/* Elements [start, start + count) of a: a pointer into one shard when they lie in it,
 * else a copy in *scratch (malloc'd; the caller frees it). NULL when out of memory. */
const void *ak_range(const darray *a, uint64_t start, uint64_t count, void **scratch);
/* Element i's address. */
const void *ak_elem(const darray *a, uint64_t i);
/* Element i's itemsize bytes into out on every rank of the call, from the rank holding it
 * (with one rank, a copy from ak_elem). */
int ak_elem_ranks(const darray *a, uint64_t i, void *out, h5ark_error *err);

/* "<dtype> <value>" (bool true, int64 3, uint64 18446744073709551500, float64 0.5) into
 * out. */
void ak_scalar_text(h5ark_dtype t, const void *base, uint64_t i, char *out, size_t n);
/* The value alone, as Arkouda prints array elements. */
void ak_value_text(h5ark_dtype t, const void *base, uint64_t i, char *out, size_t n);

/* String i of a strings object: its bytes (inside one shard) and length without the NUL. */
const char *ak_string_at(const object *s, uint64_t i, uint64_t *len);
/* String k of shard b, read from that shard alone: a shard's strings' bytes are in its own
 * values shard, the last ending where that shard ends (so at several ranks a locale reads
 * only its own shards). */
const char *ak_string_in_shard(const object *s, int b, uint64_t k, uint64_t *len);

/* The row positions an index array selects from `size` rows: a bool mask of that length
 * gives where it is true, an integer array its entries with negative ones counted from the
 * end. A new int64 pdarray; bad_request naming the first index out of bounds. */
object *ak_positions(const object *idx, uint64_t size, h5ark_error *err);
/* At several ranks, in a command every rank runs: n elements (out's itemsize each, at
 * items) written to rows at[0..n) of `out`, wherever they are held: each rank sends its
 * elements to the ranks holding their rows, which write them in rank order, then in the
 * order given (a row given twice keeps the last, as one daemon writing them in order). */
int ak_put_rows(darray *out, const uint64_t *at, const void *items, uint64_t n, h5ark_error *err);
/* Copy n elements of a's dtype from src into a at global index `at`. */
void ak_copy_into(darray *a, uint64_t at, const void *src, uint64_t n);

#endif
