/* The write plan (plan.h). */
#include "plan.h"

#include "locales.h"
#include "layout.h"

#include <stdlib.h>

/* HDF5's default chunk cache holds 1 MiB: a chunk of that size is still cached on reading */
#define CHUNK_BYTES (1u << 20)

uint64_t chunk_elems(size_t itemsize, uint64_t n) {
    uint64_t c = CHUNK_BYTES / itemsize;
    return n < c ? n : c;
}

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the direct data path writes memory as little-endian file bytes"
#endif

int write_plan_add(write_plan *plan, const write_region *r, h5ark_error *err) {
    write_region *v = grow_array(plan->v, plan->n, &plan->cap, sizeof *v);
    if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    plan->v = v;
    plan->v[plan->n++] = *r;
    return 0;
}

int write_plan_close(write_plan *plan, h5ark_error *err) {
    int rc = 0;
    for (size_t i = 0; i < plan->ndsets; i++)
        if (h5u_close_written(plan->dsets[i]) && rc == 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close a compressed dataset");
    free(plan->v);
    free(plan->chunks);
    free(plan->dsets);
    *plan = (write_plan){.gzip_level = plan->gzip_level,
                         .dataframe_columns = plan->dataframe_columns,
                         .awkward0 = plan->awkward0};
    return rc;
}

/* Plan the chunks of the new dataset dset, elements [lo, hi) of a, `chunk` to a chunk; the
 * plan closes dset from now on. */
static int plan_chunks(write_plan *plan, int file_index, hid_t dset, const darray *a, uint64_t lo,
                       uint64_t hi, uint64_t chunk, int64_t rebase, h5ark_error *err) {
    hid_t *d = grow_array(plan->dsets, plan->ndsets, &plan->dsets_cap, sizeof *d);
    if (!d) {
        H5Dclose(dset);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    plan->dsets = d;
    size_t index = plan->ndsets;
    plan->dsets[plan->ndsets++] = dset;
    for (uint64_t at = 0; at < hi - lo; at += chunk) {
        write_chunk *c = grow_array(plan->chunks, plan->nchunks, &plan->chunks_cap, sizeof *c);
        if (!c) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        plan->chunks = c;
        uint64_t count = hi - lo - at < chunk ? hi - lo - at : chunk;
        plan->chunks[plan->nchunks++] = (write_chunk){
            .file = file_index,
            /* the middle element's: of a chunk over two shards, the one holding more */
            .locale = darray_shard_of(a, lo + at + count / 2),
            .dset = index,
            .src = a,
            .first = lo + at,
            .count = count,
            .elems = chunk,
            .at = at,
            .rebase = rebase,
        };
    }
    return 0;
}

/* One planned region per shard of `a` overlapping [lo, hi), to be written at `offset`
 * (where element lo goes) by the shard's locale. */
static int plan_regions(write_plan *plan, int file_index, const darray *a, uint64_t lo, uint64_t hi,
                        uint64_t offset, int64_t rebase, h5ark_error *err) {
    for (int b = 0; b < a->nshards && lo < hi; b++) {
        const shard *s = &a->shards[b];
        uint64_t first = s->start > lo ? s->start : lo;
        uint64_t end = s->start + s->count < hi ? s->start + s->count : hi;
        if (first >= end) continue;
        write_region r = {
            .file = file_index,
            .locale = b,
            .data = s->data ? (const char *)s->data + (first - s->start) * a->itemsize : NULL,
            .nbytes = (end - first) * a->itemsize,
            .offset = offset + (first - lo) * a->itemsize,
            .rebase = rebase,
            .src = a,
            .first = first,
        };
        if (write_plan_add(plan, &r, err)) return -1;
    }
    return 0;
}

int write_darray_range(hid_t loc, int file_index, const char *name, const darray *a, uint64_t lo,
                       uint64_t hi, int64_t objtype, bool is_bool, int64_t rebase, write_plan *plan,
                       h5ark_error *err) {
    uint64_t offset = 0;
    uint64_t chunk = plan->gzip_level > 0 ? chunk_elems(a->itemsize, hi - lo) : 0;
    hid_t dset =
        h5u_create_dataset(loc, name, a->dtype, hi - lo, chunk, plan->gzip_level, &offset, err);
    if (dset < 0) return -1;
    int rc = h5u_write_object_attrs(dset, objtype, is_bool, err);
    if (rc == 0 && chunk > 0)
        return plan_chunks(plan, file_index, dset, a, lo, hi, chunk, rebase, err);
    if (h5u_close_written(dset) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close dataset '%s'", name);
    return rc ? -1 : plan_regions(plan, file_index, a, lo, hi, offset, rebase, err);
}

int write_darray_pairs(hid_t loc, int file_index, const char *name, const darray *a,
                       write_plan *plan, h5ark_error *err) {
    uint64_t offset = 0;
    hid_t dset = h5u_create_complex_dataset(loc, name, a->dtype, a->size / 2, &offset, err);
    if (dset < 0) return -1;
    if (h5u_close_written(dset))
        return h5u_fail(err, H5ARK_IO_ERROR, "cannot close dataset '%s'", name);
    return plan_regions(plan, file_index, a, 0, a->size / 2 * 2, offset, 0, err);
}

int plan_int64_at(const write_plan *plan, const darray *a, uint64_t i, int64_t *out,
                  h5ark_error *err) {
    const shard *s = &a->shards[darray_shard_of(a, i)];
    if (s->data) {
        *out = ((const int64_t *)s->data)[i - s->start];
        return 0;
    }
    for (size_t k = 0; k < plan->nfetched; k++)
        if (plan->fetched[k].a == a && plan->fetched[k].i == i) {
            *out = plan->fetched[k].v;
            return 0;
        }
    return h5ark_fail(err, H5ARK_INTERNAL, "element %llu lies on another rank and was not fetched",
                      (unsigned long long)i);
}

void object_part_rows(const object *obj, int part, uint64_t *lo, uint64_t *hi) {
    const darray *rows = obj->objtype == H5ARK_STRINGS ? obj->segments : obj->values;
    if (obj->objtype == H5ARK_SEGARRAY) {
        const object *seg = object_component_get(obj, CHILD_SEGMENTS);
        rows = seg ? seg->values : NULL;
    } else if (obj->dtype == H5ARK_BIGINT && obj->ncomponents > 0) {
        rows = obj->components[0].obj->values;
    }
    if (part < 0 || !rows) {
        *lo = 0;
        *hi = obj->size;
        return;
    }
    *lo = rows->shards[part].start;
    *hi = *lo + rows->shards[part].count;
}

hid_t write_group(hid_t loc, const char *name, int64_t objtype, h5ark_error *err) {
    hid_t group = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (group < 0) {
        h5u_fail(err, H5ARK_IO_ERROR, "cannot create group '%s'", name);
        return H5I_INVALID_HID;
    }
    if (h5u_write_object_attrs(group, objtype, false, err)) {
        H5Gclose(group);
        return H5I_INVALID_HID;
    }
    return group;
}

int write_small_int64(hid_t loc, const char *name, const int64_t *v, uint64_t n, h5ark_error *err) {
    uint64_t offset;
    hid_t dset = h5u_create_dataset(loc, name, H5ARK_INT64, n, 0, 0, &offset, err);
    if (dset < 0) return -1;
    int rc = h5u_write_object_attrs(dset, OBJTYPE_PDARRAY, false, err);
    if (rc == 0 && n > 0 && H5Dwrite(dset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write dataset '%s'", name);
    if (h5u_close_written(dset) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close dataset '%s'", name);
    return rc;
}

int locale_errors_init(locale_errors *le, h5ark_error *err) {
    le->errs = calloc((size_t)locales_count(), sizeof *le->errs);
    return le->errs ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

void locale_errors_free(locale_errors *le) {
    free(le->errs);
    le->errs = NULL;
}

void locale_errors_set(locale_errors *le, int locale) {
    /* each locale writes only its own slot; locales_run's wait orders it before the read */
    if (le->errs[locale].code == H5ARK_OK) le->errs[locale].code = H5ARK_INTERNAL;
}

int locale_errors_take(locale_errors *le, h5ark_error *err) {
    for (int b = 0; b < locales_count(); b++)
        if (le->errs[b].code != H5ARK_OK) {
            *err = le->errs[b];
            return -1;
        }
    return 0;
}
