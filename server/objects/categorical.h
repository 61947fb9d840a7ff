/* categorical objects: int64 `codes` into a strings object of `categories`, one of which is
 * the NA category (its text in object.na_value, its index in the descriptor's `na_code`).
 * Built from strings (categories = the distinct strings in byte order, then the NA text
 * when absent) or from codes and categories (codes checked on the locales). */
#ifndef H5ARK_CATEGORICAL_H
#define H5ARK_CATEGORICAL_H

#include "object.h"

#include <stdbool.h>

/* From a strings object. keep_groups adds `permutation` and `segments`: the stable
 * grouping of values by category. */
object *categorical_from_values(object *values, const char *na_value, bool keep_groups,
                                h5ark_error *err);

/* From an int64 pdarray of codes (every one in [0, categories->size), else bad_request
 * naming the first bad index) and a strings object of categories; na_value is appended to
 * the categories (a new strings object) when absent. */
object *categorical_from_codes(object *codes, object *categories, const char *na_value,
                               h5ark_error *err);

#endif
