/* Selection commands: take slice assign concatenate. One path at any rank count: each rank
 * works on its own shards, and rows bound for another rank's shards move with the rank
 * layer's collectives (which do nothing at one rank). */
#include "commands.h"

#include "front/arkouda/values.h"
#include "objects/groupby.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

/* Publish obj under argument `name` (or a fresh one) on every rank or none, and reply its
 * descriptor. Takes obj. */
static int publish_and_describe(command_ctx *ctx, object *obj, h5ark_error *err) {
    int rc = registry_publish(obj, arg_str(ctx, "name", NULL), err);
    int all = ranks_agree(rc, err);
    if (all != 0 && rc == 0) registry_remove(obj->name, NULL);
    if (all == 0) all = reply_set(ctx, "object", object_describe(obj), err);
    object_release(obj);
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
    return out ? publish_and_describe(ctx, out, err) : -1;
}

/* take {array, index, name}: the rows of `array` at the positions of `index` (an integer
 * pdarray, negative entries counted from the end) or where it is true (a bool mask). */
static int cmd_take(command_ctx *ctx, h5ark_error *err) {
    object *a = object_arg(ctx, "take", "array", err);
    object *idx = a ? object_arg(ctx, "take", "index", err) : NULL;
    int rc = idx ? rows_source(a, "take", err) : -1;
    object *pos = rc == 0 ? ak_positions(idx, a->size, err) : NULL;
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
        double f = ak_load_f(src, from, 0);
        float g = (float)f;
        memcpy(dst, to == H5ARK_FLOAT64 ? (const void *)&f : (const void *)&g,
               h5ark_dtype_size(to));
        return;
    }
    uint64_t bits;
    if (ak_is_float(from)) {
        double f = ak_load_f(src, from, 0);
        if (to == H5ARK_BOOLEAN) {
            *(uint8_t *)dst = f != 0; /* NaN too */
            return;
        }
        bits = f >= -9223372036854775808.0 && f < 9223372036854775808.0 ? (uint64_t)(int64_t)f
               : f >= 0 && f < 18446744073709551616.0                   ? (uint64_t)f
                                                                        : (uint64_t)INT64_MIN;
    } else {
        bits = ak_load_u(src, from, 0);
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
    } else if (ak_is_float(t)) {
        ok = v->kind != H5ARK_BOOL && h5ark_value_to_double(v, &d);
        cast_one(out, t, &d, H5ARK_FLOAT64);
    } else if (ak_is_unsigned(t)) {
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
        rc = ranks_agree(ak_put_rows(out, p.rows, p.vals, p.n, err), err);
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
                cast_one(dst, out->dtype, ak_elem(v->values, s->start + r), v->dtype);
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
    object *pos = rc == 0 ? ak_positions(i, a->size, err) : NULL;
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
        rc = made ? -1 : ranks_agree(ak_put_rows(out->values, p.rows, p.vals, p.n, err), err);
        row_values_free(&p);
    }
    if (rc == 0) {
        out->tag = a->tag;
        rc = registry_remove(name, err) || registry_publish(out, name, err) ? -1 : 0;
        rc = ranks_agree(rc, err);
    }
    if (rc == 0) rc = reply_set(ctx, "object", object_describe(out), err);
    object_release(out);
    object_release(pos);
    object_release(v);
    object_release(i);
    object_release(a);
    return rc;
}

/* concatenate {names, name}: pdarrays of one dtype end to end. */
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
        else if (parts[k]->objtype != H5ARK_PDARRAY || parts[k]->dtype != parts[0]->dtype ||
                 parts[k]->dtype == H5ARK_BIGINT)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                            "concatenate takes pdarrays of one dtype; %s differs", parts[k]->name);
        else
            total += parts[k]->size;
    }
    /* a rank failing alone so far (out of memory) must not leave the others in the next
     * collective (making `out`) */
    rc = ranks_agree(rc, err);
    object *out = rc == 0 ? object_new_pdarray(parts[0]->dtype, total, err) : NULL;
    rc = ranks_agree(rc == 0 && !out ? -1 : rc, err);
    if (rc == 0) rc = place_parts(out->values, parts, n, err);
    if (rc == 0)
        rc = publish_and_describe(ctx, out, err);
    else
        object_release(out);
    for (size_t k = 0; parts && k < n; k++)
        object_release(parts[k]);
    free(parts);
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
    {0},
};
