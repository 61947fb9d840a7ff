/* Selection commands: take slice assign concatenate, and on groups given as segments: unique
 * (a grouping as its permutation, segments and first rows), broadcast (each group's value
 * over its rows) and segmented_reduce (one value per segment). One path at any rank count:
 * each rank works on its own shards, and rows bound for another rank's shards move with the
 * rank layer's collectives (which do nothing at one rank). */
#include "commands.h"

#include "elements.h"
#include "strings_ops.h"
#include "objects/groupby.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Publish obj under argument `name` (or a fresh one) on every rank or none, and reply its
 * descriptor as `object`. */
static int publish(command_ctx *ctx, object *obj, h5ark_error *err) {
    int rc = registry_publish(obj, arg_str(ctx, "name", NULL), err);
    int all = ranks_agree(rc, err);
    if (all != 0 && rc == 0) registry_unpublish(obj);
    if (all == 0) all = reply_set(ctx, "object", object_describe(obj), err);
    return all;
}

/* The object named by argument `arg`: not_found names the argument. */
static object *object_arg(command_ctx *ctx, const char *cmd, const char *arg, h5ark_error *err) {
    object *obj = registry_get(arg_str(ctx, arg, ""), err);
    if (!obj) h5ark_fail_context(err, "%s: argument '%s'", cmd, arg);
    return obj;
}

/* An array rows can be taken from: a pdarray or strings. */
static int rows_source(const object *a, const char *cmd, h5ark_error *err) {
    if (a->objtype == H5ARK_PDARRAY || a->objtype == H5ARK_STRINGS) return 0;
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s: 'array' must be a pdarray or strings, not %s",
                      cmd, h5ark_objtype_name(a->objtype));
}

static int take_and_publish(command_ctx *ctx, const object *a, const object *pos,
                            h5ark_error *err) {
    object *out = groupby_take(a, pos, err);
    int rc = out ? publish(ctx, out, err) : -1;
    object_release(out);
    return rc;
}

/* take {array, index, name}: the rows of `array` at the positions of `index` (an integer
 * pdarray, negative entries counted from the end) or where it is true (a bool mask). */
static int cmd_take(command_ctx *ctx, h5ark_error *err) {
    object *a = object_arg(ctx, "take", "array", err);
    object *idx = a ? object_arg(ctx, "take", "index", err) : NULL;
    int rc = idx ? rows_source(a, "take", err) : -1;
    object *pos = rc == 0 ? elem_positions(idx, a->size, err) : NULL;
    /* the first bad index of all ranks */
    if (ranks_agree(pos ? 0 : -1, err) == 0)
        rc = take_and_publish(ctx, a, pos, err);
    else
        rc = -1;
    object_release(pos);
    object_release(idx);
    object_release(a);
    return rc;
}

/* slice {array, start, stop, step, name}: the rows range(start, stop, step) of `array`;
 * start and stop lie in [-1, size] (-1: before the first row, for a negative step), and
 * every row the range gives is a row of the array. */
static int cmd_slice(command_ctx *ctx, h5ark_error *err) {
    int64_t start = arg_int(ctx, "start", 0), stop = arg_int(ctx, "stop", 0);
    int64_t step = arg_int(ctx, "step", 1);
    if (step == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "slice: the step is 0");
    object *a = object_arg(ctx, "slice", "array", err);
    if (!a) return -1;
    int64_t size = (int64_t)a->size;
    int rc = rows_source(a, "slice", err);
    if (rc == 0 && a->dtype == H5ARK_BIGINT)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                        "slice: %s is a bigint array, which it does not take", a->name);
    uint64_t n = 0;
    /* the span is checked before it is divided, so nothing below overflows */
    if (start < -1 || start > size || stop < -1 || stop > size)
        n = 1, start = -1, step = 1;
    else if (step > 0 && stop > start)
        n = (uint64_t)((stop - start - 1) / step) + 1;
    else if (step < 0 && start > stop)
        n = (uint64_t)((start - stop - 1) / -step) + 1;
    int64_t last = n ? start + (int64_t)(n - 1) * step : 0;
    if (rc == 0 && n && (start < 0 || start >= size || last < 0 || last >= size))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "slice: the slice is outside the %lld rows",
                        (long long)size);
    object *idx = rc == 0 ? object_new_pdarray(H5ARK_INT64, n, err) : NULL;
    if (idx) {
        for (int b = 0; b < idx->values->nshards; b++) {
            shard *s = &idx->values->shards[b];
            if (!locales_is_local(b)) continue; /* another rank's */
            for (uint64_t k = 0; k < s->count; k++)
                ((int64_t *)s->data)[k] = start + (int64_t)(s->start + k) * step;
        }
        rc = take_and_publish(ctx, a, idx, err);
    } else {
        rc = -1;
    }
    object_release(idx);
    object_release(a);
    return rc;
}

/* Element 0 of src (dtype `from`) as dtype `to` at dst, numpy's cast: integers wrap to
 * their low bytes, floats truncate toward zero (out of range: INT64_MIN's bytes, as the
 * hardware gives), anything but 0 is true. */
static void cast_one(void *dst, h5ark_dtype to, const void *src, h5ark_dtype from) {
    if (to == H5ARK_FLOAT64 || to == H5ARK_FLOAT32) {
        double f = elem_load_f(src, from, 0);
        float g = (float)f;
        memcpy(dst, to == H5ARK_FLOAT64 ? (const void *)&f : (const void *)&g,
               h5ark_dtype_size(to));
        return;
    }
    uint64_t bits;
    if (elem_is_float(from)) {
        double f = elem_load_f(src, from, 0);
        if (to == H5ARK_BOOLEAN) {
            *(uint8_t *)dst = f != 0; /* NaN too */
            return;
        }
        bits = f >= -9223372036854775808.0 && f < 9223372036854775808.0 ? (uint64_t)(int64_t)f
               : f >= 0 && f < 18446744073709551616.0                   ? (uint64_t)f
                                                                        : (uint64_t)INT64_MIN;
    } else {
        bits = elem_load_u(src, from, 0);
    }
    if (to == H5ARK_BOOLEAN)
        *(uint8_t *)dst = bits != 0;
    else
        memcpy(dst, &bits, h5ark_dtype_size(to)); /* the low bytes, on a little-endian host */
}

/* The scalar argument `value` as dtype t, at element 0 of out: bool takes a bool or 0 / 1,
 * an unsigned dtype a non-negative integer, a signed one an integer, a float any number;
 * type_error otherwise. */
static int scalar_as(const h5ark_value *v, h5ark_dtype t, void *out, h5ark_error *err) {
    int64_t i;
    uint64_t u;
    double d;
    bool ok;
    if (t == H5ARK_BOOLEAN) {
        ok = v->kind == H5ARK_BOOL || (h5ark_value_to_uint64(v, &u) && u <= 1);
        *(uint8_t *)out = ok && (v->kind == H5ARK_BOOL ? v->as.b : u);
    } else if (elem_is_float(t)) {
        ok = v->kind != H5ARK_BOOL && h5ark_value_to_double(v, &d);
        cast_one(out, t, &d, H5ARK_FLOAT64);
    } else if (elem_is_unsigned(t)) {
        ok = v->kind != H5ARK_BOOL && h5ark_value_to_uint64(v, &u);
        cast_one(out, t, &u, H5ARK_UINT64);
    } else {
        ok = v->kind != H5ARK_BOOL && h5ark_value_to_int64(v, &i);
        cast_one(out, t, &i, H5ARK_INT64);
    }
    return ok ? 0
              : h5ark_fail(err, H5ARK_TYPE_ERROR, "assign: 'value' is not a %s",
                           h5ark_dtype_name(t));
}

/* Rows bound for other ranks: row numbers and their elements, counted against
 * --max-memory. */
typedef struct {
    uint64_t n, *rows, reserved;
    char *vals;
} row_values;

static void row_values_free(row_values *p) {
    free(p->rows);
    free(p->vals);
    registry_unreserve(p->reserved);
}

/* Rows [at, at + n) of `out` from src: written where this rank holds them, else added to
 * `p` for the ranks that do. */
static void place_rows(darray *out, uint64_t at, const char *src, uint64_t n, row_values *p) {
    size_t item = out->itemsize;
    while (n > 0) {
        int b = darray_shard_of(out, at);
        shard *s = &out->shards[b];
        uint64_t off = at - s->start, take = s->count - off;
        if (take > n) take = n;
        if (locales_is_local(b)) {
            memcpy((char *)s->data + off * item, src, take * item);
        } else {
            for (uint64_t r = 0; r < take; r++)
                p->rows[p->n + r] = at + r;
            memcpy(p->vals + p->n * item, src, take * item);
            p->n += take;
        }
        src += take * item;
        at += take;
        n -= take;
    }
}

/* The parts (pdarrays of out's dtype) end to end into `out`, wherever their rows and out's
 * are held: each rank writes its own shards' rows and sends the rest. Every rank calls it;
 * they agree on the outcome. */
static int place_parts(darray *out, object *const *parts, size_t n, h5ark_error *err) {
    uint64_t mine = 0; /* at most every row this rank holds goes elsewhere */
    for (size_t k = 0; k < n; k++)
        for (int b = 0; b < parts[k]->values->nshards; b++)
            if (locales_is_local(b)) mine += parts[k]->values->shards[b].count;
    row_values p = {0};
    int rc = registry_scratch(mine * 8, (void **)&p.rows, &p.reserved, err) ||
                     registry_scratch(mine * out->itemsize, (void **)&p.vals, &p.reserved, err)
                 ? -1
                 : 0;
    if ((rc = ranks_agree(rc, err)) == 0) {
        uint64_t at = 0;
        for (size_t k = 0; k < n; at += parts[k++]->size)
            for (int b = 0; b < parts[k]->values->nshards; b++) {
                const shard *s = &parts[k]->values->shards[b];
                if (locales_is_local(b)) place_rows(out, at + s->start, s->data, s->count, &p);
            }
        rc = ranks_agree(elem_put_rows(out, p.rows, p.vals, p.n, err), err);
    }
    row_values_free(&p);
    return rc;
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

/* An assignment's (row, value) pairs this rank makes: the positions it holds of `pos`, each
 * with its value (values' element, which it must hold too, or the one scalar) as out's
 * dtype. */
static int assignment_pairs(const object *pos, const object *v, const void *one, darray *out,
                            row_values *p, h5ark_error *err) {
    const darray *pd = pos->values;
    for (int b = 0; b < pd->nshards; b++) {
        const shard *s = &pd->shards[b];
        if (!locales_is_local(b)) continue;
        p->n += s->count;
        if (v && !holds_rows(v->values, s->start, s->start + s->count))
            return ranks_not_yet(err, "assigning values not laid out as their positions");
    }
    if (registry_scratch(p->n * 8, (void **)&p->rows, &p->reserved, err) ||
        registry_scratch(p->n * out->itemsize, (void **)&p->vals, &p->reserved, err))
        return -1;
    uint64_t k = 0;
    for (int b = 0; b < pd->nshards; b++) {
        const shard *s = &pd->shards[b];
        if (!locales_is_local(b)) continue;
        for (uint64_t r = 0; r < s->count; r++, k++) {
            p->rows[k] = (uint64_t)((const int64_t *)s->data)[r];
            char *dst = p->vals + k * out->itemsize;
            if (v)
                cast_one(dst, out->dtype, elem_at(v->values, s->start + r), v->dtype);
            else
                memcpy(dst, one, out->itemsize);
        }
    }
    return 0;
}

/* assign {array, index, values | value}: array[index] = values (a pdarray, one per
 * position) or value (one scalar for every position), numpy's way (values cast to the
 * array's dtype; a row given twice keeps the last). The array is replaced under its name
 * by a changed copy. */
static int cmd_assign(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "array", "");
    const h5ark_value *scalar = arg_value(ctx, "value");
    if (!scalar == !arg_has(ctx, "values"))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "assign: give 'values' or 'value', not %s",
                          scalar ? "both" : "neither");
    object *a = object_arg(ctx, "assign", "array", err);
    object *i = a ? object_arg(ctx, "assign", "index", err) : NULL;
    object *v = i && !scalar ? object_arg(ctx, "assign", "values", err) : NULL;
    int rc = i && (v || scalar) ? 0 : -1;
    if (rc == 0 && (a->objtype != H5ARK_PDARRAY || (v && v->objtype != H5ARK_PDARRAY)))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "assign: 'array' and 'values' must be pdarrays");
    if (rc == 0 && (a->dtype == H5ARK_BIGINT || (v && v->dtype == H5ARK_BIGINT)))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                        "assign: %s is a bigint array, which it does not take",
                        a->dtype == H5ARK_BIGINT ? a->name : v->name);
    uint64_t one[2] = {0}; /* the scalar, stored as the array's dtype */
    if (rc == 0 && scalar) rc = scalar_as(scalar, a->dtype, one, err);
    object *pos = rc == 0 ? elem_positions(i, a->size, err) : NULL;
    if (rc == 0 && !pos) rc = -1;
    if (rc == 0 && v && v->size != pos->size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "assign: %llu values for %llu positions",
                        (unsigned long long)v->size, (unsigned long long)pos->size);
    rc = ranks_agree(rc, err); /* the first bad position of all */
    object *out = rc == 0 ? object_new_pdarray(a->dtype, a->size, err) : NULL;
    rc = ranks_agree(rc == 0 && !out ? -1 : rc, err);
    if (rc == 0) rc = place_parts(out->values, &a, 1, err);
    if (rc == 0) {
        /* the pairs go to the ranks holding their rows, written in rank order, then in
         * the order given */
        row_values p = {0};
        int made = ranks_agree(assignment_pairs(pos, v, one, out->values, &p, err), err);
        rc = made ? -1 : ranks_agree(elem_put_rows(out->values, p.rows, p.vals, p.n, err), err);
        row_values_free(&p);
    }
    if (rc == 0) {
        out->tag = a->tag;
        rc = command_replace(ctx, out, name, err);
    }
    object_release(out);
    object_release(pos);
    object_release(v);
    object_release(i);
    object_release(a);
    return rc;
}

/* concatenate {names, name}: pdarrays of one dtype, or strings, end to end. */
static int cmd_concatenate(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *names = arg_value(ctx, "names");
    size_t n = h5ark_value_len(names);
    if (n == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "concatenate: 'names' names nothing");
    object **parts = calloc(n, sizeof *parts);
    int rc = parts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t total = 0;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        if (!(parts[k] = registry_get(h5ark_value_at(names, k)->as.s.ptr, err)))
            rc = h5ark_fail_context(err, "concatenate: names[%zu]", k);
        else if (parts[k]->objtype != parts[0]->objtype ||
                 (parts[0]->objtype != H5ARK_STRINGS &&
                  (parts[k]->objtype != H5ARK_PDARRAY || parts[k]->dtype != parts[0]->dtype ||
                   parts[k]->dtype == H5ARK_BIGINT)))
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                            "concatenate takes pdarrays of one dtype, or strings; %s differs",
                            parts[k]->name);
        else
            total += parts[k]->size;
    }
    /* a rank failing alone so far (out of memory) must not leave the others in the next
     * collective (making `out`) */
    rc = ranks_agree(rc, err);
    bool strings = rc == 0 && parts[0]->objtype == H5ARK_STRINGS;
    object *out = rc || strings ? NULL : object_new_pdarray(parts[0]->dtype, total, err);
    if (strings && !(out = strings_concatenate(parts, n, err))) rc = -1;
    rc = ranks_agree(rc == 0 && !out ? -1 : rc, err);
    if (rc == 0 && !strings) rc = place_parts(out->values, parts, n, err);
    if (rc == 0) rc = publish(ctx, out, err);
    object_release(out);
    for (size_t k = 0; parts && k < n; k++)
        object_release(parts[k]);
    free(parts);
    return rc;
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
        if (elem_string_in_shard(j->s, b, k, &len) && len > most) most = len;
    j->longest[b] = most;
}

/* The keys are laid out as the strings' segments, so row k of shard b is string k of the
 * strings' shard b, read from that shard alone. */
static void short_keys_locale(int b, void *arg) {
    short_job *j = arg;
    uint64_t *k1 = j->key[0]->shards[b].data, *len = j->key[2]->shards[b].data;
    uint64_t *k2 = j->key[1] ? j->key[1]->shards[b].data : NULL;
    for (uint64_t k = 0; k < j->key[0]->shards[b].count; k++) {
        const unsigned char *p = (const unsigned char *)elem_string_in_shard(j->s, b, k, &len[k]);
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
        rc = command_publish_all(ctx, out + first, parts + first, 3 - first, NULL, err);
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
    if (registry_scratch_agreed(words * 8, (void **)&w, reserved, err)) {
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

/* Whether shard b of a and of o hold the same rows. */
static bool same_split(const darray *a, const darray *o, int b) {
    return a->nshards == o->nshards && a->shards[b].start == o->shards[b].start &&
           a->shards[b].count == o->shards[b].count;
}

/* One element of `item` bytes (a constant size for the compiler where it can be). */
static inline void put_item(char *dst, const char *src, size_t item) {
    switch (item) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, item);
    }
}

/* Each group's value over the rows of the grouping this rank holds (its shards of `out`,
 * and of the permutation, which holds the same rows): into `out` where there is no
 * permutation or the row it names is held here, else as (row, value) pairs for
 * elem_put_rows (*nsend of them). */
static int spread_groups(const int64_t *sg, uint64_t G, const char *vl, size_t item,
                         const object *perm, uint64_t size, darray *out, uint64_t *rows,
                         char *items, uint64_t *nsend, h5ark_error *err) {
    *nsend = 0;
    for (int b = 0; b < out->nshards; b++) {
        const shard *o = &out->shards[b];
        if (!locales_is_local(b) || o->count == 0) continue;
        /* the permutation's rows of this shard, when it is split as out is */
        const int64_t *pd =
            perm && same_split(perm->values, out, b) ? perm->values->shards[b].data : NULL;
        uint64_t g = 0; /* the group of the shard's first row: the last segment at or before */
        while (g + 1 < G && (uint64_t)sg[g + 1] <= o->start)
            g++;
        for (uint64_t j = o->start; j < o->start + o->count; j++) {
            while (g + 1 < G && (uint64_t)sg[g + 1] <= j)
                g++;
            const char *v = vl + g * item;
            if (!perm) {
                put_item((char *)o->data + (j - o->start) * item, v, item);
                continue;
            }
            int64_t at = pd ? pd[j - o->start] : *(const int64_t *)elem_at(perm->values, j);
            if (at < 0 || (uint64_t)at >= size)
                return h5ark_fail(err, H5ARK_BAD_REQUEST,
                                  "broadcast: permutation entry %lld is out of bounds",
                                  (long long)at);
            int t = darray_shard_of(out, (uint64_t)at);
            if (locales_is_local(t)) {
                put_item((char *)out->shards[t].data + ((uint64_t)at - out->shards[t].start) * item,
                         v, item);
                continue;
            }
            rows[*nsend] = (uint64_t)at;
            put_item(items + *nsend * item, v, item);
            ++*nsend;
        }
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
        /* rows sent: at most this rank's rows, and the rows other ranks hold */
        uint64_t nsend = perm ? (hi - lo < size - (hi - lo) ? hi - lo : size - (hi - lo)) : 0;
        if (rc == 0 && (registry_scratch(nsend * 8, (void **)&rows, &reserved, err) ||
                        registry_scratch(nsend * item, (void **)&items, &reserved, err)))
            rc = -1;
        if (rc == 0)
            rc = spread_groups(sg, segs->size, vl, item, perm, size, out->values, rows, items,
                               &nsend, err);
        rc = ranks_agree(rc, err); /* the first bad entry of all */
        if (rc == 0 && perm)
            rc = ranks_agree(elem_put_rows(out->values, rows, items, nsend, err), err);
    }
    if (rc == 0) rc = publish(ctx, out, err);
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
    else if (rc == 0 && skip_nan && elem_is_float(vals->dtype) && aop != AGG_COUNT &&
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
    rc = out ? publish(ctx, out, err) : -1;
    object_release(out);
    object_release(gb);
    object_release(segs);
    object_release(vals);
    return rc;
}

const command_def select_commands[] = {
    {"take",
     cmd_take,
     {{"array", ARG_STR, true}, {"index", ARG_STR, true}, {"name", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},
    {"slice",
     cmd_slice,
     {{"array", ARG_STR, true},
      {"start", ARG_INT, true},
      {"stop", ARG_INT, true},
      {"step", ARG_INT, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"assign",
     cmd_assign,
     {{"array", ARG_STR, true},
      {"index", ARG_STR, true},
      {"values", ARG_STR, false},
      {"value", ARG_SCALAR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"concatenate",
     cmd_concatenate,
     {{"names", ARG_STR_ARRAY, true}, {"name", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},

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
