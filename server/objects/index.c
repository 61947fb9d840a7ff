/* index and multiindex construction (see index.h). */
#include "index.h"

#include <stdio.h>

bool index_level_ok(const object *obj) {
    return obj->objtype == H5ARK_PDARRAY || obj->objtype == H5ARK_STRINGS ||
           obj->objtype == H5ARK_CATEGORICAL;
}

object *index_new(object *const *levels, const char *const *labels, size_t n,
                  const char *const *names, h5ark_error *err) {
    if (n == 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "index: 'levels' must name at least one object");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!index_level_ok(levels[i])) {
            h5ark_fail(err, H5ARK_TYPE_ERROR,
                       "index: 'levels'[%zu] ('%s') is a %s; a level must be a pdarray, strings "
                       "or categorical",
                       i, labels[i], h5ark_objtype_name(levels[i]->objtype));
            return NULL;
        }
        if (levels[i]->size != levels[0]->size) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "index: 'levels'[%zu] ('%s') has %llu elements but 'levels'[0] ('%s') "
                       "has %llu",
                       i, labels[i], (unsigned long long)levels[i]->size, labels[0],
                       (unsigned long long)levels[0]->size);
            return NULL;
        }
    }
    object *idx = object_new_composite(n == 1 ? H5ARK_INDEX : H5ARK_MULTIINDEX, H5ARK_INT64,
                                       levels[0]->size, err);
    if (!idx) return NULL;
    h5ark_value *names_val = h5ark_value_array();
    int rc = names_val ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char comp[32];
        snprintf(comp, sizeof comp, "IDX_%zu", i);
        rc = object_add_component(idx, comp, levels[i], err);
        if (rc == 0 &&
            h5ark_value_push(names_val, names ? h5ark_value_str(names[i]) : h5ark_value_nil()))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (rc == 0) {
        rc = object_set_extra(idx, "names", names_val, err);
        names_val = NULL;
    }
    h5ark_value_destroy(&names_val);
    if (rc) {
        object_release(idx);
        return NULL;
    }
    return idx;
}
