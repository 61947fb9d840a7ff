/* index and multiindex: the row labels of a dataframe. Components `IDX_0` ... (one per
 * level: pdarray, strings or categorical of equal lengths), shared by reference; the
 * descriptor adds `names` (one str or nil per level). One level makes an `index`, more a
 * `multiindex`. */
#ifndef H5ARK_INDEX_H
#define H5ARK_INDEX_H

#include "object.h"

#include <stddef.h>

/* Build an index over levels[0..n) (new references are taken). `labels[i]` is how the
 * caller named level i (for messages); `names` is NULL or n level names. bad_request for
 * no levels or unequal lengths, type_error for a level of the wrong objtype. */
object *index_new(object *const *levels, const char *const *labels, size_t n,
                  const char *const *names, h5ark_error *err);

/* Can `obj` be an index level: a 1-D pdarray, strings or categorical. */
bool index_level_ok(const object *obj);

#endif
