/* arrayview construction (see arrayview.h). */
#include "arrayview.h"

#include <stdio.h>

/* "[2, 3, 4]" into buf, shortened with "..." when long. */
static const char *shape_text(const uint64_t *shape, size_t ndim, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < ndim && used < cap; i++) {
        if (used > cap - 32) {
            snprintf(buf + used, cap - used, ", ...");
            used = cap;
            break;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%llu", i ? ", " : "",
                                 (unsigned long long)shape[i]);
    }
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

object *arrayview_reshape(object *src, const char *label, const uint64_t *shape, size_t ndim,
                          h5ark_error *err) {
    if ((src->objtype != H5ARK_PDARRAY && src->objtype != H5ARK_ARRAYVIEW) || !src->values) {
        h5ark_fail(err, H5ARK_TYPE_ERROR,
                   "reshape: 'array' ('%s') is a %s of dtype %s; only numeric pdarrays and "
                   "arrayviews can be reshaped",
                   label, h5ark_objtype_name(src->objtype), h5ark_dtype_name(src->dtype));
        return NULL;
    }
    if (ndim == 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "reshape: 'shape' must have at least one dimension");
        return NULL;
    }
    if (ndim > OBJECT_MAX_DIMS) {
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "reshape: 'shape' has %zu dimensions; at most %d are allowed", ndim,
                   OBJECT_MAX_DIMS);
        return NULL;
    }
    /* the product, refusing overflow (a zero dimension makes it 0 whatever follows) */
    unsigned __int128 product = 1;
    bool zero = false;
    for (size_t i = 0; i < ndim; i++) {
        zero |= shape[i] == 0;
        if (!zero) {
            product *= shape[i];
            if (product > OBJECT_MAX_ELEMENTS) product = (unsigned __int128)OBJECT_MAX_ELEMENTS + 1;
        }
    }
    if (zero) product = 0;
    if (product != src->size) {
        char text[256];
        if (product > OBJECT_MAX_ELEMENTS)
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "reshape: 'shape' %s has more than %llu elements but 'array' ('%s') has "
                       "%llu",
                       shape_text(shape, ndim, text, sizeof text),
                       (unsigned long long)OBJECT_MAX_ELEMENTS, label,
                       (unsigned long long)src->size);
        else
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "reshape: 'shape' %s has %llu elements but 'array' ('%s') has %llu",
                       shape_text(shape, ndim, text, sizeof text), (unsigned long long)product,
                       label, (unsigned long long)src->size);
        return NULL;
    }
    h5ark_objtype type = ndim == 1 ? H5ARK_PDARRAY : H5ARK_ARRAYVIEW;
    object *obj = object_new_composite(type, src->dtype, src->size, err);
    if (!obj) return NULL;
    obj->values = darray_ref(src->values);
    obj->ndim = (unsigned)ndim;
    for (size_t i = 0; i < ndim; i++)
        obj->shape[i] = shape[i];
    if (type == H5ARK_PDARRAY) obj->tag = src->tag;
    return obj;
}
