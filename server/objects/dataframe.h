/* dataframe: named columns of equal length, in order, plus an optional row index.
 * Components: each column under its column name (pdarray, strings, categorical or
 * segarray), then `Index` (an index or multiindex) when there is one; all shared by
 * reference. The descriptor adds `columns`, the column names in order. */
#ifndef H5ARK_DATAFRAME_H
#define H5ARK_DATAFRAME_H

#include "object.h"

#include <stddef.h>

/* Build a dataframe of columns[0..n) named names[0..n) (new references are taken);
 * `labels[i]` is how the caller named column i's object (for messages). `index` is NULL,
 * an index/multiindex, or a pdarray, strings or categorical (made a one-level index).
 * bad_request for unequal lengths and bad or repeated column names, type_error for an
 * object of the wrong objtype. */
object *dataframe_new(object *const *columns, const char *const *labels, const char *const *names,
                      size_t n, object *index, const char *index_label, h5ark_error *err);

/* Is `name` usable as a column name: 1 to 255 bytes, no '/' (component paths use it), no
 * control characters, not "." (HDF5 link names). */
int dataframe_check_column_name(const char *name, size_t i, h5ark_error *err);

#endif
