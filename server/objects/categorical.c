/* categorical construction (see categorical.h). */
#include "categorical.h"

#include "groupby.h"
#include "pdarray.h"
#include "dist/ranks.h"

#include <stdlib.h>
#include <string.h>

/* Assemble the composite; takes no ownership of its arguments. */
static object *categorical_new(object *codes, object *categories, object *perm, object *segments,
                               const char *na_value, uint64_t na_code, h5ark_error *err) {
    object *cat = object_new_composite(H5ARK_CATEGORICAL, H5ARK_STRING, codes->size, err);
    if (!cat) return NULL;
    int rc = object_add_component(cat, "codes", codes, err) ||
             object_add_component(cat, "categories", categories, err);
    if (!rc && perm)
        rc = object_add_component(cat, "permutation", perm, err) ||
             object_add_component(cat, "segments", segments, err);
    if (!rc && !(cat->na_value = strdup(na_value)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (!rc) rc = object_set_extra(cat, "na_code", h5ark_value_int((int64_t)na_code), err);
    if (rc) {
        object_release(cat);
        return NULL;
    }
    return cat;
}

object *categorical_from_values(object *values, const char *na_value, bool keep_groups,
                                h5ark_error *err) {
    /* the grouping gives each row's group number, its code, too */
    object *codes = NULL, *categories = NULL, *cat = NULL;
    object *gb = groupby_make_codes(&values, 1, &codes, err);
    if (!gb) return NULL;
    object *perm = object_component_get(gb, "permutation");
    object *seg = object_component_get(gb, "segments");
    object *uik = object_component_get(gb, "unique_key_idx");
    /* the categories are in byte order: the NA text, if present, is one of them */
    uint64_t na_code = UINT64_MAX;
    categories = groupby_take_strings(values, uik, NULL, err);
    if (!categories) goto out;
    na_code = groupby_find_string(categories, na_value);
    if (ranks_allreduce_u64(&na_code, 1, RANKS_MIN, err)) goto out;
    if (na_code == UINT64_MAX) {
        object_release(categories);
        categories = groupby_take_strings(values, uik, na_value, err);
        if (!categories) goto out;
        na_code = categories->size - 1;
    }
    cat =
        categorical_new(codes, categories, keep_groups ? perm : NULL, seg, na_value, na_code, err);
out:
    object_release(codes);
    object_release(categories);
    object_release(gb);
    return cat;
}

object *categorical_from_codes(object *codes, object *categories, const char *na_value,
                               h5ark_error *err) {
    uint64_t bad;
    if (pdarray_first_outside(codes, 0, (int64_t)categories->size, false, &bad, err)) return NULL;
    if (bad != UINT64_MAX) {
        int64_t v; /* from the rank that holds it */
        if (pdarray_int64_at(codes, bad, &v, err)) return NULL;
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "categorical: codes[%llu] = %lld is not a category index in [0, %llu)",
                   (unsigned long long)bad, (long long)v, (unsigned long long)categories->size);
        return NULL;
    }
    uint64_t na_code = groupby_find_string(categories, na_value);
    if (ranks_allreduce_u64(&na_code, 1, RANKS_MIN, err)) return NULL;
    object *cats = categories;
    if (na_code == UINT64_MAX) {
        /* several ranks: each rank fetches the strings of its new shards */
        cats = groupby_take_strings(categories, NULL, na_value, err);
        if (!cats) return NULL;
        na_code = categories->size;
    } else {
        object_ref(cats);
    }
    object *cat = categorical_new(codes, cats, NULL, NULL, na_value, na_code, err);
    object_release(cats);
    return cat;
}
