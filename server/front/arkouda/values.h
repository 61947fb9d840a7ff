/* Values in Arkouda's terms: its scalar reply text and the text of its scalars, the strings
 * of a strings object, and the positions an index array selects (element access itself is
 * commands/elements.h). */
#ifndef H5ARK_AK_VALUES_H
#define H5ARK_AK_VALUES_H

#include "commands/elements.h"
#include "objects/object.h"

#include <stdbool.h>
#include <stdint.h>

/* Arkouda's text of a scalar of dtype t (bool True/False/true/false/1/0, an integer, a
 * float) stored at element 0 of out, as t. bad_request naming `key` when it is not one. */
int ak_scalar_parse(h5ark_dtype t, const char *text, const char *key, void *out, h5ark_error *err);

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
#endif
