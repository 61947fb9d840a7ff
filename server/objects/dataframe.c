/* dataframe construction (see dataframe.h). */
#include "dataframe.h"

#include "index.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int dataframe_check_column_name(const char *name, size_t i, h5ark_error *err) {
    size_t len = strlen(name);
    if (len == 0 || len > 255)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "dataframe: column name %zu must be 1 to 255 bytes long", i);
    if (strcmp(name, ".") == 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "dataframe: column name %zu must not be '.'", i);
    for (const char *p = name; *p; p++)
        if (*p == '/' || iscntrl((unsigned char)*p))
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "dataframe: column name %zu ('%s') contains '/' or a control "
                              "character",
                              i, name);
    return 0;
}

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The first name equal to an earlier one: sets *dup and *first; false when all differ.
 * A hash set, so a request with many columns costs linear time. */
static int find_duplicate(const char *const *names, size_t n, size_t *dup, size_t *first,
                          h5ark_error *err) {
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *slots = malloc(cap * sizeof *slots); /* index + 1, 0 = empty */
    if (!slots) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    memset(slots, 0, cap * sizeof *slots);
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) {
        size_t h = (size_t)(hash(names[i]) & (cap - 1));
        while (slots[h] && strcmp(names[slots[h] - 1], names[i]) != 0)
            h = (h + 1) & (cap - 1);
        if (slots[h]) {
            *dup = i;
            *first = slots[h] - 1;
            found = 1;
        } else {
            slots[h] = i + 1;
        }
    }
    free(slots);
    return found;
}

static bool column_ok(const object *obj) {
    return obj->objtype == H5ARK_PDARRAY || obj->objtype == H5ARK_STRINGS ||
           obj->objtype == H5ARK_CATEGORICAL || obj->objtype == H5ARK_SEGARRAY;
}

object *dataframe_new(object *const *columns, const char *const *labels, const char *const *names,
                      size_t n, object *index, const char *index_label, h5ark_error *err) {
    for (size_t i = 0; i < n; i++) {
        if (dataframe_check_column_name(names[i], i, err)) return NULL;
        if (index && strcmp(names[i], "Index") == 0) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "dataframe: column %zu is named 'Index', which is the index's component "
                       "name when an 'index' is given",
                       i);
            return NULL;
        }
    }
    size_t dup = 0, first = 0;
    int d = find_duplicate(names, n, &dup, &first, err);
    if (d < 0) return NULL;
    if (d) {
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "dataframe: column %zu is named '%s', like column %zu; column names must be "
                   "distinct",
                   dup, names[dup], first);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!column_ok(columns[i])) {
            h5ark_fail(err, H5ARK_TYPE_ERROR,
                       "dataframe: 'columns'[%zu] ('%s') is a %s; a column must be a pdarray, "
                       "strings, categorical or segarray",
                       i, labels[i], h5ark_objtype_name(columns[i]->objtype));
            return NULL;
        }
        if (columns[i]->size != columns[0]->size) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "dataframe: 'columns'[%zu] ('%s') has %llu rows but 'columns'[0] ('%s') "
                       "has %llu",
                       i, labels[i], (unsigned long long)columns[i]->size, labels[0],
                       (unsigned long long)columns[0]->size);
            return NULL;
        }
    }
    object *idx = NULL;
    if (index) {
        if (index->objtype == H5ARK_INDEX || index->objtype == H5ARK_MULTIINDEX) {
            idx = object_ref(index);
        } else if (index_level_ok(index)) {
            idx = index_new(&index, &index_label, 1, NULL, err);
            if (!idx) return NULL;
        } else {
            h5ark_fail(err, H5ARK_TYPE_ERROR,
                       "dataframe: 'index' ('%s') is a %s; it must be an index, multiindex, "
                       "pdarray, strings or categorical",
                       index_label, h5ark_objtype_name(index->objtype));
            return NULL;
        }
        if (n && idx->size != columns[0]->size) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "dataframe: 'index' ('%s') has %llu elements but the columns have %llu "
                       "rows",
                       index_label, (unsigned long long)idx->size,
                       (unsigned long long)columns[0]->size);
            object_release(idx);
            return NULL;
        }
    }
    uint64_t rows = n ? columns[0]->size : idx ? idx->size : 0;
    object *df = object_new_composite(H5ARK_DATAFRAME, H5ARK_INT64, rows, err);
    h5ark_value *cols = h5ark_value_array();
    int rc = df && cols ? 0 : -1;
    if (df && !cols) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = object_add_component(df, names[i], columns[i], err);
        if (rc == 0 && h5ark_value_push(cols, h5ark_value_str(names[i])))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (rc == 0 && idx) rc = object_add_component(df, "Index", idx, err);
    if (rc == 0) {
        rc = object_set_extra(df, "columns", cols, err);
        cols = NULL;
    }
    h5ark_value_destroy(&cols);
    object_release(idx);
    if (rc) {
        object_release(df);
        return NULL;
    }
    return df;
}
