/* Indexing commands of the Arkouda dialect: [int] [slice] [pdarray] [pdarray]=pdarray
 * [pdarray]=val and concatenate. Gathers go through the native groupby_take (pdarrays and
 * strings alike). */
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"
#include "objects/groupby.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"
#include "sysio.h"

#include <stdlib.h>
#include <string.h>

/* A bigint has no data of its own, only limbs: refused where one would be gathered. */
static int no_bigint(const object *a, h5ark_error *err) {
    return h5ark_fail(err, H5ARK_TYPE_ERROR,
                      "%s is a bigint array, which this command does not take",
                      a->name ? a->name : "the array");
}

/* Element w of a bigint array in decimal (malloc'd; NULL when out of memory): its limbs
 * divided by 10^19 from the top until nothing is left. */
static char *bigint_decimal(const object *a, uint64_t w, h5ark_error *err) {
    size_t k = a->ncomponents ? a->ncomponents : 1;
    uint64_t *x = calloc(k, sizeof *x);
    char *text = malloc(20 * k + 2), *end = text ? text + 20 * k + 1 : NULL;
    int rc = x && text ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_call_seq()) rc = ranks_agree(rc, err); /* before the limbs' fetches */
    if (rc) {
        free(x);
        free(text);
        return NULL;
    }
    for (size_t j = 0; j < a->ncomponents; j++) {
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", j);
        const object *limb = object_component_get(a, name);
        if (limb && elem_fetch(limb->values, w, &x[j], err)) {
            free(x);
            free(text);
            return NULL;
        }
    }
    *end = '\0';
    char *at = end;
    const uint64_t base = 10000000000000000000ULL;
    for (size_t top = k; top > 0;) {
        unsigned __int128 rem = 0;
        for (size_t j = top; j-- > 0;) {
            unsigned __int128 cur = rem << 64 | x[j];
            x[j] = (uint64_t)(cur / base);
            rem = cur % base;
        }
        while (top > 0 && x[top - 1] == 0)
            top--;
        uint64_t r = (uint64_t)rem;
        for (int d = 0; d < 19 && (top > 0 || r || at == end); d++) { /* zeros only inside */
            *--at = (char)('0' + r % 10);
            r /= 10;
        }
    }
    memmove(text, at, (size_t)(end - at) + 1);
    free(x);
    return text;
}

/* [int]<T,1> {array, idx}: one element, "<dtype> <value>" (a bigint's in decimal). */
static int cmd_int_index(ak_ctx *ctx, h5ark_error *err) {
    int64_t i;
    if (ak_arg_int(ctx->in, "idx", &i, err)) return -1;
    object *a = ak_object_arg(ctx, "array", H5ARK_PDARRAY, err);
    if (!a) return -1;
    int64_t w = i < 0 ? i + (int64_t)a->size : i;
    int rc = 0;
    if (w < 0 || (uint64_t)w >= a->size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "index %lld is out of bounds for %llu elements",
                        (long long)i, (unsigned long long)a->size);
    if (rc == 0 && a->dtype == H5ARK_BIGINT) {
        char *text = bigint_decimal(a, (uint64_t)w, err);
        rc = text ? ak_reply(ctx, err, "bigint %s", text) : -1;
        free(text);
    } else if (rc == 0) {
        char text[96];
        uint64_t e[2]; /* an element, from the rank holding it */
        rc = elem_fetch(a->values, (uint64_t)w, e, err);
        if (rc == 0) ak_scalar_text(a->dtype, e, 0, text, sizeof text);
        if (rc == 0) rc = ak_reply(ctx, err, "%s", text);
    }
    object_release(a);
    return rc;
}

/* The rows of src at the positions of idx (checked), published. */
static int take_created(ak_ctx *ctx, const object *src, const object *idx, h5ark_error *err) {
    object *out = groupby_take(src, idx, err);
    if (!out) return -1;
    int rc = ak_reply_created(ctx, out, err);
    object_release(out);
    return rc;
}

/* [slice]<T,1> {array, starts, stops, strides, max_bits}: Python's slice, as the client
 * gives it after slice.indices(). */
static int cmd_slice(ak_ctx *ctx, h5ark_error *err) {
    int64_t start, stop, stride;
    if (ak_arg_int(ctx->in, "starts", &start, err) || ak_arg_int(ctx->in, "stops", &stop, err) ||
        ak_arg_int(ctx->in, "strides", &stride, err))
        return -1;
    if (stride == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the slice step is 0");
    object *a = ak_object_arg(ctx, "array", H5ARK_OBJTYPE_COUNT, err);
    if (!a) return -1;
    int64_t size = (int64_t)a->size;
    int rc = 0;
    if (a->objtype != H5ARK_PDARRAY && a->objtype != H5ARK_STRINGS)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "'array' must be a pdarray");
    else if (a->dtype == H5ARK_BIGINT)
        rc = no_bigint(a, err);
    uint64_t n = 0;
    /* the span is checked before it is divided, so nothing below overflows */
    if (start < -1 || start > size || stop < -1 || stop > size)
        n = 1, start = -1, stride = 1;
    else if (stride > 0 && stop > start)
        n = (uint64_t)((stop - start - 1) / stride) + 1;
    else if (stride < 0 && start > stop)
        n = (uint64_t)((start - stop - 1) / -stride) + 1;
    int64_t last = n ? start + (int64_t)(n - 1) * stride : 0;
    if (rc == 0 && n && (start < 0 || start >= size || last < 0 || last >= size))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the slice is outside the %lld elements",
                        (long long)size);
    object *idx = rc == 0 ? object_new_pdarray(H5ARK_INT64, n, err) : NULL;
    if (idx) {
        for (int b = 0; b < idx->values->nshards; b++) {
            shard *s = &idx->values->shards[b];
            if (!locales_is_local(b)) continue; /* another rank's */
            for (uint64_t k = 0; k < s->count; k++)
                ((int64_t *)s->data)[k] = start + (int64_t)(s->start + k) * stride;
        }
        rc = take_created(ctx, a, idx, err);
    } else {
        rc = -1;
    }
    object_release(idx);
    object_release(a);
    return rc;
}

/* [pdarray] {array, idx}: a bool mask or integer positions (of a bigint too). */
static int cmd_pdarray_index(ak_ctx *ctx, h5ark_error *err) {
    object *a = ak_object_arg(ctx, "array", H5ARK_OBJTYPE_COUNT, err);
    object *i = a ? ak_object_arg(ctx, "idx", H5ARK_PDARRAY, err) : NULL;
    int rc = i ? 0 : -1;
    if (rc == 0 && a->objtype != H5ARK_PDARRAY && a->objtype != H5ARK_STRINGS)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "'array' must be a pdarray");
    object *pos = rc == 0 ? ak_positions(i, a->size, err) : NULL;
    if (ranks_call_seq() && ranks_agree(pos ? 0 : -1, err)) { /* the first bad index of all */
        object_release(pos);
        pos = NULL;
    }
    if (pos)
        rc = take_created(ctx, a, pos, err);
    else
        rc = -1;
    object_release(pos);
    object_release(i);
    object_release(a);
    return rc;
}

/* [pdarray]=pdarray {array, idx, value} and [pdarray]=val {array, idx, dtype, value}:
 * array[idx] = value (an array, or one scalar for every position), in Arkouda's place
 * (here: a changed copy published under the array's name). */
static int cmd_pdarray_assign(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *text = NULL;
    bool scalar = strcmp(ctx->in->base, "[pdarray]=val") == 0;
    if (ak_arg_str(ctx->in, "array", &name, err) ||
        (scalar && ak_arg_str(ctx->in, "value", &text, err)))
        return -1;
    object *a = ak_object_arg(ctx, "array", H5ARK_PDARRAY, err);
    object *i = a ? ak_object_arg(ctx, "idx", H5ARK_PDARRAY, err) : NULL;
    object *v = i && !scalar ? ak_object_arg(ctx, "value", H5ARK_PDARRAY, err) : NULL;
    int rc = i && (v || scalar) ? 0 : -1;
    if (rc == 0 && (a->dtype == H5ARK_BIGINT || (v && v->dtype == H5ARK_BIGINT)))
        rc = no_bigint(a->dtype == H5ARK_BIGINT ? a : v, err);
    uint64_t one = 0; /* the scalar, stored as the array's dtype */
    if (rc == 0 && scalar) rc = ak_scalar_parse(a->dtype, text, "value", &one, err);
    /* at several ranks each rank sends its values to the rows' ranks (elem_put_rows) */
    bool ranks = ranks_count() > 1;
    if (rc == 0 && ranks && (!ak_block_layout(a->values) || (v && !ak_block_layout(v->values))))
        rc = ranks_not_yet(err, "assigning to or from arrays that are not block distributed");
    object *pos = rc == 0 ? ak_positions(i, a->size, err) : NULL;
    object *out = NULL;
    if (rc == 0 && !pos) rc = -1;
    if (rc == 0 && v && v->size != pos->size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%llu values for %llu positions",
                        (unsigned long long)v->size, (unsigned long long)pos->size);
    if (ranks_call_seq()) rc = ranks_agree(rc, err); /* the first bad position of all */
    if (rc == 0 && !(out = object_new_pdarray(a->dtype, a->size, err))) rc = -1;
    for (int b = 0; rc == 0 && b < a->values->nshards; b++) {
        const shard *s = &a->values->shards[b];
        if (!ranks || locales_is_local(b)) elem_copy_into(out->values, s->start, s->data, s->count);
    }
    uint64_t nloc = 0, *rows = NULL, reserved = 0; /* rows and vals, against --max-memory */
    char *vals = NULL;
    if (rc == 0 && ranks) { /* this rank's (row, value) pairs, in order */
        for (int b = locales_local_first(); b < locales_local_first() + locales_local_count(); b++)
            nloc += pos->values->shards[b].count;
        if (registry_scratch(nloc * 8, (void **)&rows, &reserved, err) ||
            registry_scratch(nloc * out->values->itemsize, (void **)&vals, &reserved, err))
            rc = -1;
    }
    uint64_t first = ranks && pos ? pos->values->shards[locales_local_first()].start : 0;
    for (uint64_t k = 0; rc == 0 && k < (ranks ? nloc : pos->size); k++) {
        uint64_t at = (uint64_t) * (const int64_t *)elem_at(pos->values, first + k);
        void *dst = ranks ? vals + k * out->values->itemsize : (void *)elem_at(out->values, at);
        if (ranks) rows[k] = at;
        const void *e = v ? elem_at(v->values, first + k) : NULL;
        if (!v)
            memcpy(dst, &one, out->values->itemsize);
        else if (elem_is_float(v->dtype))
            elem_store_f(dst, a->dtype, 0, elem_load_f(e, v->dtype, 0));
        else if (elem_is_unsigned(v->dtype))
            elem_store_u(dst, a->dtype, 0, elem_load_u(e, v->dtype, 0));
        else
            elem_store_i(dst, a->dtype, 0, elem_load_i(e, v->dtype, 0));
    }
    if (out && ranks) { /* every rank made `out`: each takes part, then they agree */
        int moved = elem_put_rows(out->values, rows, vals, rc == 0 ? nloc : 0, err);
        rc = ranks_agree(moved || rc ? -1 : 0, err);
    }
    free(rows);
    free(vals);
    registry_unreserve(reserved);
    if (rc == 0) {
        out->tag = a->tag;
        rc = registry_remove(name, err) || registry_publish(out, name, err) ? -1 : 0;
        if (ranks_call_seq()) rc = ranks_agree(rc, err);
    }
    object_release(out);
    object_release(pos);
    object_release(v);
    object_release(i);
    object_release(a);
    return rc ? -1 : ak_reply(ctx, err, "%s success", name);
}

/* concatenate<T,1> {names, axis, offsets}: arrays of one dtype end to end. */
static int cmd_concatenate(ak_ctx *ctx, h5ark_error *err) {
    json_t *names = ak_arg_list(ctx->in, "names", err);
    if (!names) return -1;
    size_t n = json_array_size(names);
    object **parts = sysio.calloc(n ? n : 1, sizeof *parts);
    int rc = parts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t total = 0;
    if (rc == 0 && n == 0) rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "nothing to concatenate");
    for (size_t k = 0; rc == 0 && k < n; k++) {
        if (!(parts[k] = registry_get(json_string_value(json_array_get(names, k)), err)))
            rc = -1;
        else if (parts[k]->objtype != H5ARK_PDARRAY || parts[k]->dtype != parts[0]->dtype ||
                 parts[k]->dtype == H5ARK_BIGINT)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                            "concatenate takes pdarrays of one dtype; %s differs", parts[k]->name);
        else
            total += parts[k]->size;
    }
    /* a rank failing alone so far (out of memory) must not leave the others in the next
     * collective (making `out`) */
    if (ranks_call_seq()) rc = ranks_agree(rc, err);
    object *out = rc == 0 ? object_new_pdarray(parts[0]->dtype, total, err) : NULL;
    if (rc == 0 && !out) rc = -1;
    if (rc == 0 && ranks_count() > 1) {
        /* this rank's rows of every part, to the ranks holding their rows of the result */
        size_t item = out->values->itemsize;
        uint64_t nloc = 0, at = 0, j = 0;
        for (size_t k = 0; k < n; k++)
            for (int b = locales_local_first(); b < locales_local_first() + locales_local_count();
                 b++)
                nloc += parts[k]->values->shards[b].count;
        uint64_t *rows = NULL, reserved = 0; /* rows and vals, against --max-memory */
        char *vals = NULL;
        bool ok = registry_scratch(nloc * 8, (void **)&rows, &reserved, err) == 0 &&
                  registry_scratch(nloc * item, (void **)&vals, &reserved, err) == 0;
        for (size_t k = 0; ok && k < n; at += parts[k++]->size)
            for (int b = 0; b < parts[k]->values->nshards; b++) {
                const shard *s = &parts[k]->values->shards[b];
                if (!locales_is_local(b)) continue;
                for (uint64_t r = 0; r < s->count; r++, j++)
                    rows[j] = at + s->start + r;
                if (s->count) memcpy(vals + (j - s->count) * item, s->data, s->count * item);
            }
        rc = ok ? 0 : -1;
        int moved = elem_put_rows(out->values, rows, vals, ok ? nloc : 0, err);
        rc = ranks_agree(moved || rc ? -1 : 0, err);
        free(rows);
        free(vals);
        registry_unreserve(reserved);
    }
    uint64_t at = 0;
    for (size_t k = 0; rc == 0 && ranks_count() == 1 && k < n; k++)
        for (int b = 0; b < parts[k]->values->nshards; b++) {
            const shard *s = &parts[k]->values->shards[b];
            elem_copy_into(out->values, at, s->data, s->count);
            at += s->count;
        }
    if (rc == 0) rc = ak_reply_created(ctx, out, err);
    object_release(out);
    for (size_t k = 0; parts && k < n; k++)
        object_release(parts[k]);
    free(parts);
    json_decref(names);
    return rc;
}

const ak_command ak_select_commands[] = {
    {"[int]", cmd_int_index, AK_READ_ONLY, RANKS_EVERY},
    {"[slice]", cmd_slice, 0, RANKS_EVERY},
    {"[pdarray]", cmd_pdarray_index, 0, RANKS_EVERY},
    {"[pdarray]=pdarray", cmd_pdarray_assign, 0, RANKS_EVERY},
    {"[pdarray]=val", cmd_pdarray_assign, 0, RANKS_EVERY},
    {"concatenate", cmd_concatenate, 0, RANKS_EVERY},
    {0},
};
