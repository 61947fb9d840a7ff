/* arrayview: an N-d view of a pdarray's elements in C order. It shares the pdarray's
 * darray (reference counted), so reshaping never copies. */
#ifndef H5ARK_ARRAYVIEW_H
#define H5ARK_ARRAYVIEW_H

#include "object.h"

/* A new object over src's data with the given shape: a pdarray when ndim == 1, an
 * arrayview otherwise. src must be a numeric pdarray or an arrayview (type_error); ndim
 * must be 1..OBJECT_MAX_DIMS and the shape's product src->size (bad_request). A pdarray's
 * tag is kept when the result is a pdarray. `label` names src in messages. */
object *arrayview_reshape(object *src, const char *label, const uint64_t *shape, size_t ndim,
                          h5ark_error *err);

#endif
