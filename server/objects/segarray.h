/* segarray: an array of variable-length sub-arrays. Components `segments` (int64 pdarray:
 * the start of each sub-array in `values`) and `values` (a pdarray or strings), shared by
 * reference. */
#ifndef H5ARK_SEGARRAY_H
#define H5ARK_SEGARRAY_H

#include "object.h"

/* Build a segarray over `segments` and `values` (new references are taken). The segments
 * are checked on the locales in parallel: segments[0] == 0 when there are any, offsets
 * non-decreasing and at most len(values); bad_request naming the first offending element,
 * type_error for a wrong objtype or dtype. */
object *segarray_new(object *segments, object *values, h5ark_error *err);

#endif
