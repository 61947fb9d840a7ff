/* Grouping commands of the Arkouda dialect, as its GroupBy, Categorical and SegArray code
 * sends them: unique (through the native groupby_make), gbbroadcast and segmentedReduction
 * (through the native aggregate). */
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"
#include "objects/groupby.h"
#include "objects/object.h"
#include "locales.h"
#include "dist/ranks.h"
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

/* Row k of shard b of `rows` (laid out as s at several ranks, where s is block distributed) */
static const char *row_string(const object *s, const darray *rows, int b, uint64_t k,
                              uint64_t *len) {
    return ranks_count() > 1 ? ak_string_in_shard(s, b, k, len)
                             : ak_string_at(s, rows->shards[b].start + k, len);
}

static void longest_locale(int b, void *arg) {
    short_job *j = arg;
    uint64_t most = 0, len;
    for (uint64_t k = 0; k < j->s->segments->shards[b].count; k++)
        if (row_string(j->s, j->s->segments, b, k, &len) && len > most) most = len;
    j->longest[b] = most;
}

static void short_keys_locale(int b, void *arg) {
    short_job *j = arg;
    uint64_t *k1 = j->key[0]->shards[b].data, *len = j->key[2]->shards[b].data;
    uint64_t *k2 = j->key[1] ? j->key[1]->shards[b].data : NULL;
    for (uint64_t k = 0; k < j->key[0]->shards[b].count; k++) {
        const unsigned char *p = (const unsigned char *)row_string(j->s, j->key[0], b, k, &len[k]);
        uint64_t half = k2 ? len[k] / 2 : len[k];
        k1[k] = be_number(p, half);
        if (k2) k2[k] = be_number(p + half, len[k] - half);
    }
}

/* The keys that group the Strings s as Arkouda's server does (into keys[0..*n)), when all
 * its strings are short; *n 0 otherwise (and at several ranks when s is not block
 * distributed: then h5ark's own order). */
static int short_string_keys(const object *s, object **keys, size_t *n, h5ark_error *err) {
    *n = 0;
    if (ranks_count() > 1 && !ak_block_layout(s->segments)) return 0;
    short_job j = {.s = s, .longest = calloc((size_t)locales_count(), sizeof *j.longest)};
    int rc = j.longest ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_call_seq()) rc = ranks_agree(rc, err);
    if (rc) {
        free(j.longest);
        return -1;
    }
    locales_run(longest_locale, &j);
    uint64_t most = 0;
    for (int b = 0; b < locales_count(); b++)
        if (j.longest[b] > most) most = j.longest[b];
    free(j.longest);
    if (ranks_call_seq() && ranks_allreduce_u64(&most, 1, RANKS_MAX, err)) return -1;
    if (most >= SHORT_STRING) return 0;
    size_t m = most > 8 ? 3 : 2;
    for (size_t i = 0; rc == 0 && i < m; i++)
        if (!(keys[i] = object_new_pdarray(H5ARK_UINT64, s->size, err))) rc = -1;
    if (ranks_call_seq()) rc = ranks_agree(rc, err);
    if (rc) {
        for (size_t i = 0; i < m; i++)
            object_release(keys[i]);
        return -1;
    }
    j.key[0] = keys[0]->values;
    j.key[1] = m == 3 ? keys[1]->values : NULL;
    j.key[2] = keys[m - 1]->values;
    locales_run(short_keys_locale, &j);
    *n = m;
    return 0;
}

/* unique {returnGroupStr, assumeSortedStr, nstr, keynames, keytypes}: the permutation and
 * segments of the grouping (with returnGroupStr), then the unique key indices (the first
 * row of each group), as Arkouda's server answers: its client gathers each key's unique
 * values itself (`keys[uki]`), whatever the keys' types. One Strings key of short strings
 * groups in Arkouda's order (above). */
static int cmd_unique(ak_ctx *ctx, h5ark_error *err) {
    bool groups = false;
    if (ak_arg(ctx->in, "returnGroupStr") && ak_arg_bool(ctx->in, "returnGroupStr", &groups, err))
        return -1;
    json_t *names = ak_arg_list(ctx->in, "keynames", err);
    if (!names) return -1;
    size_t n = json_array_size(names), m = 0;
    object **keys = calloc(n ? n : 1, sizeof *keys), **out = calloc(3, sizeof *out);
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
    object *sk[3] = {0};
    size_t nsk = 0;
    if (rc == 0 && n == 1 && keys[0]->objtype == H5ARK_STRINGS)
        rc = short_string_keys(keys[0], sk, &nsk, err);
    object *gb = rc == 0 ? groupby_make(nsk ? sk : keys, nsk ? nsk : n, err) : NULL;
    for (size_t i = 0; i < nsk; i++)
        object_release(sk[i]);
    if (rc == 0 && !gb) rc = -1;
    if (rc == 0 && groups) {
        out[m++] = object_ref(object_component_get(gb, "permutation"));
        out[m++] = object_ref(object_component_get(gb, "segments"));
    }
    if (rc == 0) out[m++] = object_ref(object_component_get(gb, "unique_key_idx"));
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
    return elem_load_i(elem_at(a->values, i), a->dtype, 0);
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

/* Segments of `size` rows, read from sg (a whole copy) or else from segs: they start at 0,
 * never decrease and stay within the rows; bad_request naming the first that does not. */
static int check_segments(const int64_t *sg, const object *segs, uint64_t size, h5ark_error *err) {
    int64_t prev = 0;
    for (uint64_t g = 0; g < segs->size; g++) {
        int64_t s = sg ? sg[g] : i64_at(segs, g);
        if ((g == 0 && s != 0) || s < prev || (uint64_t)s > size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "segment %llu (%lld) is out of order",
                              (unsigned long long)g, (long long)s);
        prev = s;
    }
    if (segs->size == 0 && size)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "no segments for %llu rows",
                          (unsigned long long)size);
    return 0;
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
    uint64_t G = segs->size;
    int rc = check_segments(sg, segs, size, err);
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
            memcpy((void *)elem_at(out->values, j), v, item);
            continue;
        }
        int64_t at = *(const int64_t *)elem_at(perm->values, j);
        if (at < 0 || (uint64_t)at >= size) {
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "permutation entry %lld is out of bounds",
                            (long long)at);
            break;
        }
        rows[j - lo] = (uint64_t)at;
        memcpy(items + (j - lo) * item, v, item);
    }
    if (out) rc = ranks_agree(rc, err); /* the first bad entry of all */
    if (rc == 0 && perm) rc = elem_put_rows(out->values, rows, items, hi - lo, err);
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
    if (rc == 0) rc = check_segments(NULL, segs, size, err);
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
        const void *v = elem_at(vals->values, g);
        for (uint64_t j = from; rc == 0 && j < to; j++) {
            int64_t at = perm ? i64_at(perm, j) : (int64_t)j;
            if (at < 0 || (uint64_t)at >= size)
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "permutation entry %lld is out of bounds",
                                (long long)at);
            else
                memcpy((void *)elem_at(out->values, (uint64_t)at), v, item);
        }
    }
    if (rc == 0) rc = ak_reply_created(ctx, out, err);
    object_release(out);
    object_release(segs);
    object_release(vals);
    object_release(perm);
    return rc;
}

/* ---- segmentedReduction ---- */

static void identity_locale(int b, void *arg) {
    shard *o = &((darray *)arg)->shards[b];
    for (uint64_t k = 0; k < o->count; k++)
        ((int64_t *)o->data)[k] = (int64_t)(o->start + k);
}

/* A grouping of `n` rows already in group order: the segments and an identity permutation,
 * for the native aggregate. */
static object *grouping_of_segments(object *segs, uint64_t n, h5ark_error *err) {
    object *gb = object_new_composite(H5ARK_GROUPBY, H5ARK_INT64, n, err);
    object *perm = gb ? object_new_pdarray(H5ARK_INT64, n, err) : NULL;
    int rc = perm ? 0 : -1;
    if (perm) locales_run(identity_locale, perm->values);
    if (rc == 0 && (object_add_component(gb, "permutation", perm, err) ||
                    object_add_component(gb, "segments", segs, err)))
        rc = -1;
    if (ranks_call_seq()) rc = ranks_agree(rc, err);
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

/* any / all of bool values: from each segment's sum and length, as Arkouda's server. */
static object *any_all(const object *gb, const object *vals, bool all, h5ark_error *err) {
    object *sum = groupby_aggregate(gb, AGG_SUM, vals, err);
    object *count = sum && all ? groupby_aggregate(gb, AGG_COUNT, NULL, err) : NULL;
    object *out = sum && (count || !all) ? object_new_pdarray(H5ARK_BOOLEAN, sum->size, err) : NULL;
    int rc = out ? 0 : -1;
    if (ranks_call_seq() && (sum && (count || !all))) rc = ranks_agree(rc, err);
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

/* segmentedReduction {values, segments, op, skip_nan, ddof}: one value per segment of
 * `values`, which are in segment order (GroupBy's reductions permute them first; SegArray's
 * comparisons reduce with all). count sum min max mean nunique through the native
 * aggregate, and any all of bool values; float64 values with skip_nan only where no NaN
 * can change the answer (count, nunique). */
static int cmd_segmented_reduction(ak_ctx *ctx, h5ark_error *err) {
    const char *op;
    bool skip_nan = false;
    if (ak_arg_str(ctx->in, "op", &op, err) ||
        (ak_arg(ctx->in, "skip_nan") && ak_arg_bool(ctx->in, "skip_nan", &skip_nan, err)))
        return -1;
    bool any = strcmp(op, "any") == 0, all = strcmp(op, "all") == 0;
    agg_op aop = AGG_SUM;
    if (!any && !all && (groupby_op_from_name(op, &aop) || aop == AGG_FIRST))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "segmentedReduction: op '%.20s' is not served here (count sum min max "
                          "mean nunique any all)",
                          op);
    object *vals = ak_object_arg(ctx, "values", H5ARK_PDARRAY, err);
    object *segs = vals ? ak_object_arg(ctx, "segments", H5ARK_PDARRAY, err) : NULL;
    int rc = segs ? 0 : -1;
    if (rc == 0 && segs->dtype != H5ARK_INT64)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "the segments must be int64");
    else if (rc == 0 && (any || all) && vals->dtype != H5ARK_BOOLEAN)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s reduces bool values, not %s", op,
                        h5ark_dtype_name(vals->dtype));
    else if (rc == 0 && (vals->dtype == H5ARK_BIGINT || vals->dtype == H5ARK_STRING))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "segmentedReduction of %s values is not served",
                        h5ark_dtype_name(vals->dtype));
    else if (rc == 0 && skip_nan && elem_is_float(vals->dtype) && aop != AGG_COUNT &&
             aop != AGG_NUNIQUE)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                        "segmentedReduction: %s of float64 values with skip_nan is not served "
                        "(NaN propagates here; send skip_nan False)",
                        op);
    if (rc == 0 && !any && !all) rc = groupby_check_values(aop, vals, err);
    if (rc == 0 && ranks_count() > 1) {
        uint64_t reserved = 0;
        int64_t *sg = whole_copy(segs, &reserved, err);
        rc = sg ? check_segments(sg, segs, vals->size, err) : -1;
        free(sg);
        registry_unreserve(reserved);
        rc = ranks_agree(rc, err);
    } else if (rc == 0) {
        rc = check_segments(NULL, segs, vals->size, err);
    }
    object *gb = rc == 0 ? grouping_of_segments(segs, vals->size, err) : NULL;
    object *out = !gb          ? NULL
                  : any || all ? any_all(gb, vals, all, err)
                               : groupby_aggregate(gb, aop, vals, err);
    rc = out ? ak_reply_created(ctx, out, err) : -1;
    object_release(out);
    object_release(gb);
    object_release(segs);
    object_release(vals);
    return rc;
}

const ak_command ak_group_commands[] = {
    {"unique", cmd_unique, 0, RANKS_EVERY},
    {"gbbroadcast", cmd_broadcast, 0, RANKS_EVERY},
    {"segmentedReduction", cmd_segmented_reduction, 0, RANKS_EVERY},
    {0},
};
