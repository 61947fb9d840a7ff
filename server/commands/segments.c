/* Commands on groups given as segments: unique (a grouping as its permutation, segments and
 * first rows), broadcast (each group's value over its rows) and segmented_reduce (one value
 * per segment). One path at any rank count, with the rank layer's collectives. */
#include "commands.h"

#include "front/arkouda/values.h"
#include "objects/groupby.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Publish objs[0..n) (fresh names) on every rank or none, and reply each descriptor under
 * keys[i]. */
static int publish_all(command_ctx *ctx, object **objs, const char *const *keys, size_t n,
                       h5ark_error *err) {
    size_t published = 0;
    int rc = 0;
    for (; rc == 0 && published < n; published++)
        if (registry_publish(objs[published], NULL, err)) rc = -1;
    if (rc) published--; /* the one that failed is not published */
    if ((rc = ranks_agree(rc, err))) {
        for (size_t i = 0; i < published; i++)
            registry_remove(objs[i]->name, NULL);
        return -1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = reply_set(ctx, keys[i], object_describe(objs[i]), err);
    return rc;
}

static int publish_one(command_ctx *ctx, object *obj, h5ark_error *err) {
    int rc = registry_publish(obj, arg_str(ctx, "name", NULL), err);
    int all = ranks_agree(rc, err);
    if (all != 0 && rc == 0) registry_remove(obj->name, NULL);
    if (all == 0) all = reply_set(ctx, "object", object_describe(obj), err);
    return all;
}

static object *object_arg(command_ctx *ctx, const char *cmd, const char *arg, h5ark_error *err) {
    object *obj = registry_get(arg_str(ctx, arg, ""), err);
    if (!obj) h5ark_fail_context(err, "%s: argument '%s'", cmd, arg);
    return obj;
}

/* ---- Arkouda's order of short strings ----
 * Arkouda's server groups one Strings key whose strings are all shorter than 16 bytes by
 * numbers made of their bytes (big-endian, right-aligned: `bytesToUintArr`): one number
 * per string when none is longer than 8 bytes, else two, of its first half (floor) and of
 * the rest. So its groups, and a Categorical's categories made from them, come shortest
 * first: "string 2" before "string 10". The same numbers grouped here give its order; the
 * length, grouped last, keeps apart strings those numbers would merge (leading NULs). */

enum { SHORT_STRING = 16 };

typedef struct {
    const object *s;
    darray *key[3];    /* first half (or all), rest (NULL: none), length */
    uint64_t *longest; /* per locale */
} short_job;

static uint64_t be_number(const unsigned char *p, uint64_t n) {
    uint64_t v = 0;
    for (uint64_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static void longest_locale(int b, void *arg) {
    short_job *j = arg;
    uint64_t most = 0, len;
    for (uint64_t k = 0; k < j->s->segments->shards[b].count; k++)
        if (ak_string_in_shard(j->s, b, k, &len) && len > most) most = len;
    j->longest[b] = most;
}

/* The keys are laid out as the strings' segments, so row k of shard b is string k of the
 * strings' shard b, read from that shard alone. */
static void short_keys_locale(int b, void *arg) {
    short_job *j = arg;
    uint64_t *k1 = j->key[0]->shards[b].data, *len = j->key[2]->shards[b].data;
    uint64_t *k2 = j->key[1] ? j->key[1]->shards[b].data : NULL;
    for (uint64_t k = 0; k < j->key[0]->shards[b].count; k++) {
        const unsigned char *p = (const unsigned char *)ak_string_in_shard(j->s, b, k, &len[k]);
        uint64_t half = k2 ? len[k] / 2 : len[k];
        k1[k] = be_number(p, half);
        if (k2) k2[k] = be_number(p + half, len[k] - half);
    }
}

/* The keys that group the Strings s as Arkouda's server does (into keys[0..*n)), when all
 * its strings are short; *n 0 otherwise. */
static int short_string_keys(const object *s, object **keys, size_t *n, h5ark_error *err) {
    *n = 0;
    int L = locales_count();
    short_job j = {.s = s, .longest = calloc((size_t)L, sizeof *j.longest)};
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    int rc = j.longest && counts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if ((rc = ranks_agree(rc, err))) goto out;
    locales_run(longest_locale, &j);
    uint64_t most = 0;
    for (int b = 0; b < L; b++) {
        if (j.longest[b] > most) most = j.longest[b];
        counts[b] = s->segments->shards[b].count;
    }
    if ((rc = ranks_allreduce_u64(&most, 1, RANKS_MAX, err)) || most >= SHORT_STRING) goto out;
    size_t m = most > 8 ? 3 : 2;
    for (size_t i = 0; rc == 0 && i < m; i++)
        if (!(keys[i] = object_new_pdarray_counts(H5ARK_UINT64, s->size, counts, err))) rc = -1;
    if ((rc = ranks_agree(rc, err))) {
        for (size_t i = 0; i < m; i++) {
            object_release(keys[i]);
            keys[i] = NULL;
        }
        goto out;
    }
    j.key[0] = keys[0]->values;
    j.key[1] = m == 3 ? keys[1]->values : NULL;
    j.key[2] = keys[m - 1]->values;
    locales_run(short_keys_locale, &j);
    *n = m;
out:
    free(j.longest);
    free(counts);
    return rc;
}

/* unique {keys, groups, order}: the grouping of the keys' rows as `unique_key_idx` (the
 * first row of each group, in group order) and, with groups, `permutation` and `segments`.
 * order "arkouda": one strings key of strings all shorter than 16 bytes groups in
 * Arkouda's server's order (above); "bytes" (the default) as groupby. */
static int cmd_unique(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *names = arg_value(ctx, "keys");
    const char *order = arg_str(ctx, "order", "bytes");
    bool groups = arg_bool(ctx, "groups", false);
    size_t n = h5ark_value_len(names), nsk = 0;
    if (strcmp(order, "bytes") != 0 && strcmp(order, "arkouda") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "unique: 'order' must be \"bytes\" or \"arkouda\", not '%.40s'", order);
    if (n == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "unique: 'keys' names no key");
    object **keys = calloc(n, sizeof *keys), *sk[3] = {0}, *gb = NULL;
    int rc = keys ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t k = 0; rc == 0 && k < n; k++) {
        char what[32];
        snprintf(what, sizeof what, "key %zu", k);
        if (!(keys[k] = registry_get(h5ark_value_at(names, k)->as.s.ptr, err)))
            rc = h5ark_fail_context(err, "unique: keys[%zu]", k);
        else if (groupby_check_key(keys[k], what, err))
            rc = -1;
        else if (keys[k]->size != keys[0]->size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "unique: the keys differ in length");
    }
    if (rc == 0 && n == 1 && keys[0]->objtype == H5ARK_STRINGS && strcmp(order, "arkouda") == 0)
        rc = short_string_keys(keys[0], sk, &nsk, err);
    if (rc == 0 && !(gb = groupby_make(nsk ? sk : keys, nsk ? nsk : n, err))) rc = -1;
    if (rc == 0) {
        static const char *const parts[] = {"permutation", "segments", "unique_key_idx"};
        object *out[3];
        size_t first = groups ? 0 : 2;
        for (size_t i = first; i < 3; i++)
            out[i] = object_component_get(gb, parts[i]);
        rc = publish_all(ctx, out + first, parts + first, 3 - first, err);
    }
    object_release(gb);
    for (size_t i = 0; i < nsk; i++)
        object_release(sk[i]);
    for (size_t k = 0; keys && k < n; k++)
        object_release(keys[k]);
    free(keys);
    return rc;
}

/* ---- segments ---- */

/* A copy of the whole of `a` on every rank (each rank's shards, the rest zeros, summed word
 * by word over the ranks); NULL with err set (on every rank) when it fails. Segments and
 * values are one per group: few beside the rows, but as many as the rows at worst, so
 * counted against --max-memory (*reserved grows). */
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

/* Segments sg[0..G) of `size` rows: they start at 0, never decrease and stay within the
 * rows; bad_request naming the first that does not. */
static int check_segments(const int64_t *sg, uint64_t G, uint64_t size, h5ark_error *err) {
    int64_t prev = 0;
    for (uint64_t g = 0; g < G; g++) {
        int64_t s = sg[g];
        if ((g == 0 && s != 0) || s < prev || (uint64_t)s > size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "segment %llu (%lld) is out of order",
                              (unsigned long long)g, (long long)s);
        prev = s;
    }
    if (G == 0 && size)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "no segments for %llu rows",
                          (unsigned long long)size);
    return 0;
}

/* Whether this rank holds every row of d in [lo, hi). */
static bool holds_rows(const darray *d, uint64_t lo, uint64_t hi) {
    for (uint64_t at = lo; at < hi;) {
        int b = darray_shard_of(d, at);
        if (!locales_is_local(b)) return false;
        at = d->shards[b].start + d->shards[b].count;
    }
    return true;
}

/* Each group's value over this rank's rows [lo, hi) of the grouping: into `out` where there
 * is no permutation, else as (row, value) pairs for ak_put_rows. */
static int spread_groups(const int64_t *sg, uint64_t G, const char *vl, size_t item,
                         const object *perm, uint64_t size, darray *out, uint64_t lo, uint64_t hi,
                         uint64_t *rows, char *items, h5ark_error *err) {
    uint64_t g = 0; /* the group of row lo: the last segment starting at or before it */
    while (g + 1 < G && (uint64_t)sg[g + 1] <= lo)
        g++;
    for (uint64_t j = lo; j < hi; j++) {
        while (g + 1 < G && (uint64_t)sg[g + 1] <= j)
            g++;
        const char *v = vl + g * item;
        if (!perm) {
            memcpy((void *)ak_elem(out, j), v, item);
            continue;
        }
        int64_t at = *(const int64_t *)ak_elem(perm->values, j);
        if (at < 0 || (uint64_t)at >= size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "broadcast: permutation entry %lld is out of bounds", (long long)at);
        rows[j - lo] = (uint64_t)at;
        memcpy(items + (j - lo) * item, v, item);
    }
    return 0;
}

/* broadcast {segments, values, size, permutation, name}: each group's value over the rows
 * of its segment, in the grouping's order or (permutation) back in the rows' own order.
 * Every rank has the segments and values whole, checks them, and gives its rows of the
 * result their group's value, written in place or sent to the rows' ranks. */
static int cmd_broadcast(command_ctx *ctx, h5ark_error *err) {
    uint64_t size = arg_uint(ctx, "size", 0);
    object *segs = object_arg(ctx, "broadcast", "segments", err);
    object *vals = segs ? object_arg(ctx, "broadcast", "values", err) : NULL;
    object *perm = vals && arg_has(ctx, "permutation")
                       ? object_arg(ctx, "broadcast", "permutation", err)
                       : NULL;
    int rc = vals && (perm || !arg_has(ctx, "permutation")) ? 0 : -1;
    if (rc == 0 && (segs->objtype != H5ARK_PDARRAY || vals->objtype != H5ARK_PDARRAY ||
                    (perm && perm->objtype != H5ARK_PDARRAY)))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                        "broadcast: segments, values and permutation must be pdarrays");
    if (rc == 0 && (segs->dtype != H5ARK_INT64 || (perm && perm->dtype != H5ARK_INT64)))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "broadcast: segments and permutation must be int64");
    if (rc == 0 && (vals->dtype == H5ARK_BIGINT || vals->size != segs->size))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "broadcast: %llu values for %llu segments",
                        (unsigned long long)vals->size, (unsigned long long)segs->size);
    if (rc == 0 && perm && perm->size != size)
        rc =
            h5ark_fail(err, H5ARK_BAD_REQUEST, "broadcast: the permutation has %llu rows, not %llu",
                       (unsigned long long)perm->size, (unsigned long long)size);
    uint64_t reserved = 0; /* the copies, rows and items: against --max-memory */
    int64_t *sg = rc == 0 ? whole_copy(segs, &reserved, err) : NULL;
    char *vl = sg ? whole_copy(vals, &reserved, err) : NULL;
    object *out = NULL;
    uint64_t *rows = NULL;
    char *items = NULL;
    if (!vl) rc = -1;
    if (rc == 0) rc = check_segments(sg, segs->size, size, err);
    if (rc == 0 && !(out = object_new_pdarray(vals->dtype, size, err))) rc = -1;
    rc = ranks_agree(rc, err);
    size_t item = rc == 0 ? vals->values->itemsize : 0;
    /* this rank's rows [lo, hi) of the grouping (out's, and the permutation's) */
    int first = locales_local_first(), T = locales_local_count();
    uint64_t lo = rc == 0 ? out->values->shards[first].start : 0;
    uint64_t hi = rc == 0 ? out->values->shards[first + T - 1].start +
                                out->values->shards[first + T - 1].count
                          : 0;
    if (rc == 0) {
        /* zeros first: a permutation with repeats would leave rows unwritten, and new
         * memory may hold an earlier array's bytes */
        for (int b = first; b < first + T; b++)
            if (out->values->shards[b].count)
                memset(out->values->shards[b].data, 0, out->values->shards[b].count * item);
        if (perm && !holds_rows(perm->values, lo, hi))
            rc = ranks_not_yet(err, "broadcast with a permutation laid out unlike the rows");
        else if (perm && (registry_scratch((hi - lo) * 8, (void **)&rows, &reserved, err) ||
                          registry_scratch((hi - lo) * item, (void **)&items, &reserved, err)))
            rc = -1;
        if (rc == 0)
            rc = spread_groups(sg, segs->size, vl, item, perm, size, out->values, lo, hi, rows,
                               items, err);
        rc = ranks_agree(rc, err); /* the first bad entry of all */
        if (rc == 0 && perm)
            rc = ranks_agree(ak_put_rows(out->values, rows, items, hi - lo, err), err);
    }
    if (rc == 0) rc = publish_one(ctx, out, err);
    object_release(out);
    free(rows);
    free(items);
    free(sg);
    free(vl);
    registry_unreserve(reserved);
    object_release(segs);
    object_release(vals);
    object_release(perm);
    return rc;
}

/* ---- segmented_reduce ---- */

static void identity_locale(int b, void *arg) {
    shard *o = &((darray *)arg)->shards[b];
    for (uint64_t k = 0; k < o->count; k++)
        ((int64_t *)o->data)[k] = (int64_t)(o->start + k);
}

/* A grouping of `n` rows already in group order: the segments and an identity permutation,
 * for groupby_aggregate. */
static object *grouping_of_segments(object *segs, uint64_t n, h5ark_error *err) {
    object *gb = object_new_composite(H5ARK_GROUPBY, H5ARK_INT64, n, err);
    object *perm = gb ? object_new_pdarray(H5ARK_INT64, n, err) : NULL;
    int rc = perm ? 0 : -1;
    if (perm) locales_run(identity_locale, perm->values);
    if (rc == 0 && (object_add_component(gb, "permutation", perm, err) ||
                    object_add_component(gb, "segments", segs, err)))
        rc = -1;
    rc = ranks_agree(rc, err);
    object_release(perm);
    if (rc) {
        object_release(gb);
        return NULL;
    }
    return gb;
}

typedef struct {
    const darray *sum, *count; /* count NULL: any (sum > 0), else all (sum == count) */
    darray *out;
} any_all_job;

static void any_all_locale(int b, void *arg) {
    any_all_job *j = arg;
    const shard *s = &j->sum->shards[b];
    for (uint64_t k = 0; k < s->count; k++) {
        int64_t sum = ((const int64_t *)s->data)[k];
        bool v = j->count ? sum == ((const int64_t *)j->count->shards[b].data)[k] : sum > 0;
        ((uint8_t *)j->out->shards[b].data)[k] = v;
    }
}

/* any / all of bool values: from each segment's sum and length. */
static object *any_all(const object *gb, const object *vals, bool all, h5ark_error *err) {
    object *sum = groupby_aggregate(gb, AGG_SUM, vals, err);
    object *count = sum && all ? groupby_aggregate(gb, AGG_COUNT, NULL, err) : NULL;
    object *out = sum && (count || !all) ? object_new_pdarray(H5ARK_BOOLEAN, sum->size, err) : NULL;
    int rc = out ? 0 : -1;
    if (sum && (count || !all)) rc = ranks_agree(rc, err);
    if (rc == 0) {
        any_all_job j = {sum->values, count ? count->values : NULL, out->values};
        locales_run(any_all_locale, &j);
    } else {
        object_release(out);
        out = NULL;
    }
    object_release(sum);
    object_release(count);
    return out;
}

/* segmented_reduce {values, segments, op, skip_nan, name}: one value per segment of
 * `values`, which are in segment order: count sum min max mean nunique as aggregate, and
 * any all of bool values. With skip_nan, float values only where no NaN can change the
 * answer (count, nunique). */
static int cmd_segmented_reduce(command_ctx *ctx, h5ark_error *err) {
    const char *op = arg_str(ctx, "op", "");
    bool skip_nan = arg_bool(ctx, "skip_nan", false);
    bool any = strcmp(op, "any") == 0, all = strcmp(op, "all") == 0;
    agg_op aop = AGG_SUM;
    if (!any && !all && (groupby_op_from_name(op, &aop) || aop == AGG_FIRST))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "segmented_reduce: op '%.20s' is not served here (count sum min max "
                          "mean nunique any all)",
                          op);
    object *vals = object_arg(ctx, "segmented_reduce", "values", err);
    object *segs = vals ? object_arg(ctx, "segmented_reduce", "segments", err) : NULL;
    int rc = segs ? 0 : -1;
    if (rc == 0 && (vals->objtype != H5ARK_PDARRAY || segs->objtype != H5ARK_PDARRAY))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                        "segmented_reduce: values and segments must be pdarrays");
    else if (rc == 0 && segs->dtype != H5ARK_INT64)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "segmented_reduce: the segments must be int64");
    else if (rc == 0 && (any || all) && vals->dtype != H5ARK_BOOLEAN)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "segmented_reduce: %s reduces bool values, not %s",
                        op, h5ark_dtype_name(vals->dtype));
    else if (rc == 0 && vals->dtype == H5ARK_BIGINT)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "segmented_reduce of %s values is not served",
                        h5ark_dtype_name(vals->dtype));
    else if (rc == 0 && skip_nan && ak_is_float(vals->dtype) && aop != AGG_COUNT &&
             aop != AGG_NUNIQUE)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                        "segmented_reduce: %s of float values with skip_nan is not served "
                        "(NaN propagates here; send skip_nan false)",
                        op);
    if (rc == 0 && !any && !all) rc = groupby_check_values(aop, vals, err);
    if (rc == 0) {
        uint64_t reserved = 0;
        int64_t *sg = whole_copy(segs, &reserved, err);
        rc = sg ? check_segments(sg, segs->size, vals->size, err) : -1;
        free(sg);
        registry_unreserve(reserved);
        rc = ranks_agree(rc, err);
    }
    object *gb = rc == 0 ? grouping_of_segments(segs, vals->size, err) : NULL;
    object *out = !gb          ? NULL
                  : any || all ? any_all(gb, vals, all, err)
                               : groupby_aggregate(gb, aop, vals, err);
    rc = out ? publish_one(ctx, out, err) : -1;
    object_release(out);
    object_release(gb);
    object_release(segs);
    object_release(vals);
    return rc;
}

const command_def segment_commands[] = {
    {"unique",
     cmd_unique,
     {{"keys", ARG_STR_ARRAY, true}, {"groups", ARG_BOOL, false}, {"order", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},
    {"broadcast",
     cmd_broadcast,
     {{"segments", ARG_STR, true},
      {"values", ARG_STR, true},
      {"size", ARG_UINT, true},
      {"permutation", ARG_STR, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"segmented_reduce",
     cmd_segmented_reduce,
     {{"values", ARG_STR, true},
      {"segments", ARG_STR, true},
      {"op", ARG_STR, true},
      {"skip_nan", ARG_BOOL, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {0},
};
