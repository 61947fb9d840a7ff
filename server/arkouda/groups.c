/* Grouping commands of the Arkouda dialect, as its GroupBy and Categorical constructors
 * send them: unique (through the native groupby_make) and gbbroadcast. */
#include "arkouda/commands.h"
#include "arkouda/values.h"
#include "objects/groupby.h"
#include "objects/object.h"
#include "locales.h"
#include "ranks.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Publish objs[0..n) and reply their created texts joined by "+": all or none. */
static int reply_all_created(ak_ctx *ctx, object **objs, size_t n, h5ark_error *err) {
    size_t published = 0;
    char *msg = NULL;
    int rc = 0;
    for (; rc == 0 && published < n; published++)
        if (registry_publish(objs[published], NULL, err)) rc = -1;
    if (rc) published--; /* the one that failed is not published */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *text = ak_created(objs[i]), *joined = NULL;
        if (!text || asprintf(&joined, "%s%s%s", msg ? msg : "", msg ? "+" : "", text) < 0)
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        free(text);
        free(msg);
        msg = joined;
    }
    if (ranks_call_seq()) rc = ranks_agree(rc, err); /* published on every rank or none */
    if (rc) {
        for (size_t i = 0; i < published; i++)
            registry_remove(objs[i]->name, &(h5ark_error){0});
        free(msg);
        return -1;
    }
    free(ctx->msg);
    ctx->msg = msg;
    return 0;
}

/* unique {returnGroupStr, assumeSortedStr, nstr, keynames, keytypes}: the permutation and
 * segments of the grouping (with returnGroupStr), then each key's unique values. */
static int cmd_unique(ak_ctx *ctx, h5ark_error *err) {
    bool groups = false;
    if (ak_arg(ctx->in, "returnGroupStr") && ak_arg_bool(ctx->in, "returnGroupStr", &groups, err))
        return -1;
    json_t *names = ak_arg_list(ctx->in, "keynames", err);
    if (!names) return -1;
    size_t n = json_array_size(names), m = 0;
    object **keys = calloc(n ? n : 1, sizeof *keys), **out = calloc(n + 2, sizeof *out);
    int rc = keys && out ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && n == 0) rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'keynames' is empty");
    for (size_t k = 0; rc == 0 && k < n; k++) {
        char what[32];
        snprintf(what, sizeof what, "key %zu", k);
        if (!(keys[k] = registry_get(json_string_value(json_array_get(names, k)), err)) ||
            groupby_check_key(keys[k], what, err))
            rc = -1;
        else if (keys[k]->size != keys[0]->size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the keys differ in length");
    }
    object *gb = rc == 0 ? groupby_make(keys, n, err) : NULL;
    if (rc == 0 && !gb) rc = -1;
    if (rc == 0 && groups) {
        out[m++] = object_ref(object_component_get(gb, "permutation"));
        out[m++] = object_ref(object_component_get(gb, "segments"));
    }
    object *uki = gb ? object_component_get(gb, "unique_key_idx") : NULL;
    for (size_t k = 0; rc == 0 && k < n; k++)
        if (!(out[m++] = groupby_take(keys[k], uki, err))) rc = -1;
    if (rc == 0) rc = reply_all_created(ctx, out, m, err);
    for (size_t i = 0; out && i < m; i++)
        object_release(out[i]);
    free(out);
    object_release(gb);
    for (size_t k = 0; keys && k < n; k++)
        object_release(keys[k]);
    free(keys);
    json_decref(names);
    return rc;
}

static int64_t i64_at(const object *a, uint64_t i) {
    return ak_load_i(ak_elem(a->values, i), a->dtype, 0);
}

/* At several ranks: a copy of the whole of `a` on every rank (each rank's shards, the rest
 * zeros, summed word by word over the ranks); NULL with err set (on every rank) when it
 * fails. Its segments and values are one per group: few beside the rows, but as many as
 * the rows at worst, so counted against --max-memory (*reserved grows). */
static void *whole_copy(const object *a, uint64_t *reserved, h5ark_error *err) {
    const darray *d = a->values;
    uint64_t words = (d->size * d->itemsize + 7) / 8;
    uint64_t *w = NULL;
    if (registry_scratch_ranks(words * 8, (void **)&w, reserved, err)) {
        free(w);
        return NULL;
    }
    memset(w, 0, words * 8);
    for (int b = 0; b < d->nshards; b++)
        if (locales_is_local(b) && d->shards[b].count)
            memcpy((char *)w + d->shards[b].start * d->itemsize, d->shards[b].data,
                   d->shards[b].count * d->itemsize);
    if (ranks_allreduce_u64(w, words, RANKS_SUM, err)) {
        free(w);
        return NULL;
    }
    return w;
}

/* gbbroadcast at several ranks: segments and values copied to every rank, which checks
 * them as one daemon does; each rank then gives its rows of the grouping their group's
 * value, written in place or (permute) sent to the rows' ranks. */
static int broadcast_ranks(ak_ctx *ctx, object *segs, object *vals, object *perm, uint64_t size,
                           h5ark_error *err) {
    if ((perm && !ak_block_layout(perm->values)))
        return ranks_not_yet(err, "gbbroadcast with a permutation not block distributed");
    uint64_t reserved = 0; /* the copies, rows and items: against --max-memory */
    int64_t *sg = whole_copy(segs, &reserved, err);
    char *vl = sg ? whole_copy(vals, &reserved, err) : NULL;
    if (!vl) {
        free(sg);
        registry_unreserve(reserved);
        return -1;
    }
    int rc = 0;
    uint64_t G = segs->size;
    for (uint64_t g = 0; rc == 0 && g < G; g++)
        if ((g == 0 && sg[g] != 0) || (g && sg[g] < sg[g - 1]) || (uint64_t)sg[g] > size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "segment %llu (%lld) is out of order",
                            (unsigned long long)g, (long long)sg[g]);
    if (rc == 0 && G == 0 && size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "no segments for %llu rows",
                        (unsigned long long)size);
    object *out = rc == 0 ? object_new_pdarray(vals->dtype, size, err) : NULL;
    if (rc == 0 && !out) rc = -1;
    size_t item = vals->values->itemsize;
    /* this rank's rows [lo, hi) of the grouping (out's, or the permutation's: one layout) */
    int first = locales_local_first(), T = locales_local_count();
    uint64_t lo = out ? out->values->shards[first].start : 0;
    uint64_t hi =
        out ? out->values->shards[first + T - 1].start + out->values->shards[first + T - 1].count
            : 0;
    uint64_t *rows = NULL;
    char *items = NULL;
    if (out) {
        for (int b = first; b < first + T; b++)
            if (out->values->shards[b].count)
                memset(out->values->shards[b].data, 0, out->values->shards[b].count * item);
        if (perm && (registry_scratch((hi - lo) * 8, (void **)&rows, &reserved, err) ||
                     registry_scratch((hi - lo) * item, (void **)&items, &reserved, err)))
            rc = -1;
    }
    /* the group of row lo: the last segment starting at or before it */
    uint64_t g = 0;
    while (out && g + 1 < G && (uint64_t)sg[g + 1] <= lo)
        g++;
    for (uint64_t j = lo; rc == 0 && j < hi; j++) {
        while (g + 1 < G && (uint64_t)sg[g + 1] <= j)
            g++;
        const char *v = vl + g * item;
        if (!perm) {
            memcpy((void *)ak_elem(out->values, j), v, item);
            continue;
        }
        int64_t at = *(const int64_t *)ak_elem(perm->values, j);
        if (at < 0 || (uint64_t)at >= size) {
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "permutation entry %lld is out of bounds",
                            (long long)at);
            break;
        }
        rows[j - lo] = (uint64_t)at;
        memcpy(items + (j - lo) * item, v, item);
    }
    if (out) rc = ranks_agree(rc, err); /* the first bad entry of all */
    if (rc == 0 && perm) rc = ak_put_rows(out->values, rows, items, hi - lo, err);
    if (rc == 0) rc = ak_reply_created(ctx, out, err);
    object_release(out);
    free(rows);
    free(items);
    registry_unreserve(reserved);
    free(sg);
    free(vl);
    return rc;
}

/* gbbroadcast {permName ("none" unless permute), segName, valName, permute, size}: each
 * group's value over the rows of its segment, in the grouping's order or (permute) back
 * in the rows' own. */
static int cmd_broadcast(ak_ctx *ctx, h5ark_error *err) {
    bool permute = false;
    uint64_t size;
    if (ak_arg_uint(ctx->in, "size", &size, err) ||
        (ak_arg(ctx->in, "permute") && ak_arg_bool(ctx->in, "permute", &permute, err)))
        return -1;
    object *segs = ak_object_arg(ctx, "segName", H5ARK_PDARRAY, err);
    object *vals = segs ? ak_object_arg(ctx, "valName", H5ARK_PDARRAY, err) : NULL;
    object *perm = vals && permute ? ak_object_arg(ctx, "permName", H5ARK_PDARRAY, err) : NULL;
    int rc = vals && (perm || !permute) ? 0 : -1;
    if (rc == 0 && (segs->dtype != H5ARK_INT64 || (perm && perm->dtype != H5ARK_INT64)))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "segments and permutation must be int64");
    if (rc == 0 && (vals->dtype == H5ARK_BIGINT || vals->size != segs->size))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%llu values for %llu segments",
                        (unsigned long long)vals->size, (unsigned long long)segs->size);
    if (rc == 0 && perm && perm->size != size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the permutation has %llu rows, not %llu",
                        (unsigned long long)perm->size, (unsigned long long)size);
    if (rc == 0 && ranks_count() > 1) {
        rc = broadcast_ranks(ctx, segs, vals, perm, size, err);
        object_release(segs);
        object_release(vals);
        object_release(perm);
        return rc;
    }
    /* segments start at 0, never decrease, stay within the rows */
    for (uint64_t g = 0; rc == 0 && g < segs->size; g++) {
        int64_t s = i64_at(segs, g), prev = g ? i64_at(segs, g - 1) : 0;
        if ((g == 0 && s != 0) || s < prev || (uint64_t)s > size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "segment %llu (%lld) is out of order",
                            (unsigned long long)g, (long long)s);
    }
    if (rc == 0 && segs->size == 0 && size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "no segments for %llu rows",
                        (unsigned long long)size);
    object *out = rc == 0 ? object_new_pdarray(vals->dtype, size, err) : NULL;
    if (rc == 0 && !out) rc = -1;
    /* zeros first: a permutation with repeats would leave rows unwritten, and new memory
     * may hold an earlier array's bytes */
    for (int b = 0; out && b < out->values->nshards; b++)
        if (out->values->shards[b].count)
            memset(out->values->shards[b].data, 0,
                   out->values->shards[b].count * out->values->itemsize);
    size_t item = rc == 0 ? vals->values->itemsize : 0;
    for (uint64_t g = 0; rc == 0 && g < segs->size; g++) {
        uint64_t from = (uint64_t)i64_at(segs, g);
        uint64_t to = g + 1 < segs->size ? (uint64_t)i64_at(segs, g + 1) : size;
        const void *v = ak_elem(vals->values, g);
        for (uint64_t j = from; rc == 0 && j < to; j++) {
            int64_t at = perm ? i64_at(perm, j) : (int64_t)j;
            if (at < 0 || (uint64_t)at >= size)
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "permutation entry %lld is out of bounds",
                                (long long)at);
            else
                memcpy((void *)ak_elem(out->values, (uint64_t)at), v, item);
        }
    }
    if (rc == 0) rc = ak_reply_created(ctx, out, err);
    object_release(out);
    object_release(segs);
    object_release(vals);
    object_release(perm);
    return rc;
}

const ak_command ak_group_commands[] = {
    {"unique", cmd_unique, 0, RANKS_EVERY},
    {"gbbroadcast", cmd_broadcast, 0, RANKS_EVERY},
    {0},
};
