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

#endif
