/* groupby objects: the stable grouping of rows by a tuple of keys, computed on the locales,
 * and the per-group reductions (aggregate) and gathers built on it. A groupby is a
 * composite with components `permutation` (row indices in key order, stable), `segments`
 * (start of each group in the permutation), `unique_key_idx` (first row of each group) and
 * the keys `KEY_0` ... shared by reference.
 *
 * Key order: numbers ascending with every NaN in one group after +inf and -0.0 grouped with
 * 0.0; bools false < true; strings by bytes (so UTF-8 by code point); categoricals by code.
 * Ties keep row order, so permutation[segments[g]] is the first row of group g. */
#ifndef H5ARK_GROUPBY_H
#define H5ARK_GROUPBY_H

#include "object.h"

/* The key a groupby can sort: a pdarray of a numeric or bool dtype, strings, or a
 * categorical (by its int64 codes). type_error naming `what` otherwise. */
int groupby_check_key(const object *key, const char *what, h5ark_error *err);

/* Group the rows of keys[0..nkeys) (all of one length, nkeys >= 1, each passing
 * groupby_check_key). Returns an unpublished groupby. */
object *groupby_make(object *const *keys, size_t nkeys, h5ark_error *err);
/* groupby_make, and *codes each row's group number (an int64 pdarray of the rows' length,
 * unpublished; NULL on failure), at any rank count. */
object *groupby_make_codes(object *const *keys, size_t nkeys, object **codes, h5ark_error *err);

/* Check a groupby's components (it may come from a file): int64 pdarrays `permutation` of
 * the groupby's size with every entry a row index, `segments` starting at 0,
 * non-decreasing and within the rows, `unique_key_idx` of the same length holding row
 * indices. bad_request naming the component and the first bad index otherwise. */
int groupby_check(const object *gb, h5ark_error *err);

/* A new object holding src's elements at the row indices of `idx` (an int64 pdarray whose
 * entries the caller has checked lie in [0, src->size)): a pdarray of src's dtype (a bigint
 * limb by limb), strings, or a categorical sharing src's categories. */
object *groupby_take(const object *src, const object *idx, h5ark_error *err);

/* A strings object of src's strings at idx (NULL: all of src, in order), followed by the
 * string `extra` when it is not NULL. */
object *groupby_take_strings(const object *src, const object *idx, const char *extra,
                             h5ark_error *err);

/* Index of the first string of src equal to `s` (searched on the locales), or UINT64_MAX. */
uint64_t groupby_find_string(const object *src, const char *s);

typedef enum { AGG_COUNT, AGG_SUM, AGG_MIN, AGG_MAX, AGG_MEAN, AGG_FIRST, AGG_NUNIQUE } agg_op;

int groupby_op_from_name(const char *name, agg_op *out);
/* type_error when `op` cannot reduce `values` (a pdarray or strings; NULL for count). */
int groupby_check_values(agg_op op, const object *values, h5ark_error *err);
/* One value per group of a checked groupby: count -> int64; sum -> int64 (signed ints and
 * bool, wrapping as numpy does), uint64 (unsigned), float64 (floats); min, max, first ->
 * the values' dtype (NaN propagates through min and max, as np.minimum.reduceat); mean ->
 * float64; nunique -> int64 (NaN counts as one value). `values` has the groupby's size. */
object *groupby_aggregate(const object *gb, agg_op op, const object *values, h5ark_error *err);

#endif
