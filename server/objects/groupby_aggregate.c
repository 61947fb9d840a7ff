/* groupby's reductions: one value per group (see groupby.h). Each rank reduces the groups
 * of its shards of the result on its locales, reading the permutation and the values in
 * place when it holds what its groups need (always, with one rank), else a copy of them
 * fetched from the ranks that hold them, in permutation order. */
#include "groupby.h"
#include "groupby_rows.h"

#include "registry.h"
#include "dist/ranks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {"count", "sum", "min", "max", "mean", "first", "nunique"};

int groupby_op_from_name(const char *name, agg_op *out) {
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
        if (strcmp(op_names[i], name) == 0) {
            *out = (agg_op)i;
            return 0;
        }
    return -1;
}

int groupby_check_values(agg_op op, const object *values, h5ark_error *err) {
    if (!values) {
        if (op == AGG_COUNT) return 0;
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "aggregate %s: missing argument 'values'",
                          op_names[op]);
    }
    const char *name = values->name ? values->name : "";
    if (values->objtype == H5ARK_STRINGS) {
        if (op == AGG_COUNT || op == AGG_FIRST || op == AGG_NUNIQUE) return 0;
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "aggregate %s: 'values' ('%s') are strings; strings take only count, "
                          "first and nunique",
                          op_names[op], name);
    }
    if (values->objtype != H5ARK_PDARRAY || values->dtype >= H5ARK_STRING || !values->values)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "aggregate %s: 'values' ('%s') must be a pdarray of a numeric or bool "
                          "dtype or strings, not a %s of dtype %s",
                          op_names[op], name, h5ark_objtype_name(values->objtype),
                          h5ark_dtype_name(values->dtype));
    return 0;
}

static h5ark_dtype result_dtype(agg_op op, h5ark_dtype dt) {
    switch (op) {
    case AGG_COUNT:
    case AGG_NUNIQUE: return H5ARK_INT64;
    case AGG_MEAN: return H5ARK_FLOAT64;
    case AGG_SUM:
        return h5ark_dtype_is_float(dt)      ? H5ARK_FLOAT64
               : h5ark_dtype_is_unsigned(dt) ? H5ARK_UINT64
                                             : H5ARK_INT64;
    default: return dt;
    }
}

static inline double load_f64(const void *p, h5ark_dtype dt) {
    switch (dt) {
    case H5ARK_FLOAT32: return *(const float *)p;
    case H5ARK_FLOAT64: return *(const double *)p;
    case H5ARK_UINT64: return (double)*(const uint64_t *)p;
    default: {
        uint64_t e = enc_elem(p, dt);
        return h5ark_dtype_is_signed(dt) ? (double)(int64_t)(e ^ (UINT64_C(1) << 63)) : (double)e;
    }
    }
}

/* Integers as uint64 two's complement (sign-extended for signed dtypes). */
static inline uint64_t load_bits(const void *p, h5ark_dtype dt) {
    uint64_t e = enc_elem(p, dt);
    return h5ark_dtype_is_signed(dt) ? e ^ (UINT64_C(1) << 63) : e;
}

typedef struct {
    const object *values;
    agg_op op;
    const darray *perm, *seg;
    uint64_t g1, p1; /* this rank's groups end at g1, its places in perm at p1 */
    object *out;
    atomic_int failed;
} agg_job;

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_strref(const void *a, const void *b) {
    return strref_cmp(*(const strref *)a, *(const strref *)b);
}

static void aggregate_shard(int c, void *ctx) {
    agg_job *j = ctx;
    shard *o = &j->out->values->shards[c];
    if (o->count == 0) return;
    const darray *vals = j->values ? j->values->values : NULL;
    bool is_str = j->values && j->values->objtype == H5ARK_STRINGS;
    h5ark_dtype dt = vals && !is_str ? vals->dtype : H5ARK_INT64;
    void *scratch = NULL;
    uint64_t reserved = 0;
    if (j->op == AGG_NUNIQUE) { /* room for the largest group */
        uint64_t largest = 0;
        for (uint64_t g = o->start; g < o->start + o->count; g++) {
            uint64_t a = (uint64_t)get_i64(j->seg, g);
            uint64_t b = g + 1 < j->g1 ? (uint64_t)get_i64(j->seg, g + 1) : j->p1;
            if (b - a > largest) largest = b - a;
        }
        reserved = largest * (is_str ? sizeof(strref) : 8);
        if (registry_reserve(reserved, NULL) || (reserved && !(scratch = malloc(reserved)))) {
            if (!scratch && reserved) registry_unreserve(reserved);
            atomic_store(&j->failed, 1);
            return;
        }
    }
    for (uint64_t i = 0; i < o->count; i++) {
        uint64_t g = o->start + i;
        uint64_t a = (uint64_t)get_i64(j->seg, g);
        uint64_t b = g + 1 < j->g1 ? (uint64_t)get_i64(j->seg, g + 1) : j->p1;
        uint64_t cnt = b - a, usum = 0, ext = 0, k = 0;
        double fsum = 0, fext = NAN;
        bool have = false;
        while (a < b && j->op != AGG_COUNT) {
            uint64_t avail;
            const int64_t *perm = span_at(j->perm, a, &avail);
            uint64_t m = b - a < avail ? b - a : avail;
            for (uint64_t q = 0; q < m; q++) {
                uint64_t row = (uint64_t)perm[q];
                if (is_str) {
                    ((strref *)scratch)[k++] = str_at(j->values, row);
                    continue;
                }
                const void *p = span_at(vals, row, NULL);
                switch (j->op) {
                case AGG_SUM:
                case AGG_MEAN:
                    if (h5ark_dtype_is_float(dt) || j->op == AGG_MEAN)
                        fsum += load_f64(p, dt);
                    else
                        usum += load_bits(p, dt);
                    break;
                case AGG_MIN:
                case AGG_MAX: {
                    bool mx = j->op == AGG_MAX;
                    if (h5ark_dtype_is_float(dt)) { /* a NaN, once seen, stays */
                        double v = load_f64(p, dt);
                        if (!have || (!isnan(fext) && (isnan(v) || (mx ? v > fext : v < fext))))
                            fext = v;
                    } else {
                        uint64_t e = enc_elem(p, dt);
                        if (!have || (mx ? e > ext : e < ext)) ext = e;
                    }
                    have = true;
                    break;
                }
                case AGG_NUNIQUE: ((uint64_t *)scratch)[k++] = enc_elem(p, dt); break;
                default: break;
                }
            }
            a += m;
        }
        void *dst = (char *)o->data + i * j->out->values->itemsize;
        h5ark_dtype odt = j->out->dtype;
        switch (j->op) {
        case AGG_COUNT: *(int64_t *)dst = (int64_t)cnt; break;
        case AGG_SUM:
            if (odt == H5ARK_FLOAT64)
                *(double *)dst = fsum;
            else
                *(uint64_t *)dst = usum;
            break;
        case AGG_MEAN: *(double *)dst = cnt ? fsum / (double)cnt : NAN; break;
        case AGG_MIN:
        case AGG_MAX:
            if (h5ark_dtype_is_float(odt)) {
                if (odt == H5ARK_FLOAT32)
                    *(float *)dst = (float)fext;
                else
                    *(double *)dst = fext;
            } else { /* back from the order-preserving encoding */
                uint64_t v = h5ark_dtype_is_signed(odt) ? ext ^ (UINT64_C(1) << 63) : ext;
                memcpy(dst, &v, j->out->values->itemsize); /* little-endian low bytes */
            }
            break;
        case AGG_NUNIQUE: {
            uint64_t distinct = 0;
            if (is_str) {
                strref *s = scratch;
                if (k) qsort(s, k, sizeof *s, cmp_strref); /* an empty segment: no scratch */
                for (uint64_t q = 0; q < k; q++)
                    distinct += q == 0 || strref_cmp(s[q - 1], s[q]) != 0;
            } else {
                uint64_t *s = scratch;
                if (k) qsort(s, k, sizeof *s, cmp_u64);
                for (uint64_t q = 0; q < k; q++)
                    distinct += q == 0 || s[q - 1] != s[q];
            }
            *(int64_t *)dst = (int64_t)distinct;
            break;
        }
        default: break;
        }
    }
    free(scratch);
    registry_unreserve(reserved);
}

/* The places in the permutation of this rank's groups [g0, g1): [*p0, *p1), a group ending
 * where the next one starts, the last of a rank where the next rank's first does. */
static int group_places(const darray *seg, uint64_t n, uint64_t g0, uint64_t g1, uint64_t *p0,
                        uint64_t *p1, h5ark_error *err) {
    int L = locales_count(), first = locales_local_first(), T = locales_local_count();
    uint64_t *start = calloc(2 * (size_t)L, sizeof *start); /* per locale: has, first place */
    if (ranks_agree(start ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err)) {
        free(start);
        return -1;
    }
    for (int c = first; c < first + T; c++)
        if (seg->shards[c].count) {
            start[2 * c] = 1;
            start[2 * c + 1] = (uint64_t)((const int64_t *)seg->shards[c].data)[0];
        }
    int rc = ranks_allreduce_u64(start, 2 * (size_t)L, RANKS_SUM, err);
    *p1 = n;
    for (int c = L - 1; c >= first + T; c--)
        if (start[2 * c]) *p1 = start[2 * c + 1];
    *p0 = g1 > g0 ? (uint64_t)get_i64(seg, g0) : *p1;
    free(start);
    return rc;
}

/* What the reduction reads, when this rank does not hold it all: the permutation's entries
 * at [p0, p1) as one shard, and then, when the values are elsewhere too, the values at
 * those rows in permutation order with the permutation read as the identity. */
typedef struct {
    shard ps, vs;
    darray perm, vals;
    object vobj;
    int64_t *entries, *ident;
    void *v;
} agg_view;

static int view_of(agg_view *w, agg_job *j, const object *values, uint64_t p0, uint64_t p1,
                   uint64_t *reserved, h5ark_error *err) {
    uint64_t m = p1 - p0, need[2] = {!groupby_rows_here(j->perm, p0, p1), 0};
    if (values)
        need[1] = !groupby_rows_here(
            values->objtype == H5ARK_STRINGS ? values->segments : values->values, 0, values->size);
    if (ranks_allreduce_u64(need, 2, RANKS_MAX, err)) return -1;
    if (!need[0] && !need[1]) return 0;
    if (registry_scratch_agreed(m * 8, (void **)&w->entries, reserved, err)) return -1;
    for (uint64_t i = 0; i < m; i++)
        w->entries[i] = (int64_t)(p0 + i);
    if (groupby_fetch_rows(j->perm, w->entries, m, w->entries, err)) return -1;
    w->ps = (shard){w->entries, p0, m};
    w->perm =
        (darray){.dtype = H5ARK_INT64, .itemsize = 8, .size = p1, .nshards = 1, .shards = &w->ps};
    j->perm = &w->perm;
    if (!need[1]) return 0;
    size_t is = values->values->itemsize;
    if (registry_scratch_agreed(m * is, &w->v, reserved, err) ||
        groupby_fetch_rows(values->values, w->entries, m, w->v, err))
        return -1;
    for (uint64_t i = 0; i < m; i++) /* the values are now in place order */
        w->entries[i] = (int64_t)(p0 + i);
    w->vs = (shard){w->v, p0, m};
    w->vals = (darray){
        .dtype = values->values->dtype, .itemsize = is, .size = p1, .nshards = 1, .shards = &w->vs};
    w->vobj =
        (object){.objtype = H5ARK_PDARRAY, .dtype = values->dtype, .size = p1, .values = &w->vals};
    j->values = &w->vobj;
    return 0;
}

object *groupby_aggregate(const object *gb, agg_op op, const object *values, h5ark_error *err) {
    if (op == AGG_FIRST)
        return groupby_take(values, object_component_get(gb, "unique_key_idx"), err);
    const object *seg = object_component_get(gb, "segments");
    uint64_t ng = seg->size, n = gb->size, p0, p1, reserved = 0, g0, g1;
    locales_local_block(ng, &g0, &g1);
    if (op == AGG_COUNT) values = NULL; /* count reads no values */
    if (values && values->objtype == H5ARK_STRINGS && op == AGG_NUNIQUE) {
        /* strings held elsewhere: their group numbers in a grouping of their own, as many
         * distinct in a group as the strings themselves */
        uint64_t away = !groupby_rows_here(values->segments, 0, values->size);
        if (ranks_allreduce_u64(&away, 1, RANKS_MAX, err)) return NULL;
        if (away) {
            object *codes = NULL,
                   *vgb = groupby_make_codes((object *const *)&values, 1, &codes, err);
            object_release(vgb);
            object *out = codes ? groupby_aggregate(gb, op, codes, err) : NULL;
            object_release(codes);
            return out;
        }
    }
    h5ark_dtype dt = values && values->objtype == H5ARK_PDARRAY ? values->dtype : H5ARK_INT64;
    object *out = object_new_pdarray(result_dtype(op, dt), ng, err);
    agg_view w = {0};
    agg_job j = {.values = values,
                 .op = op,
                 .perm = object_component_get(gb, "permutation")->values,
                 .seg = seg->values,
                 .g1 = g1,
                 .out = out};
    if (ranks_agree(out ? 0 : -1, err) || group_places(seg->values, n, g0, g1, &p0, &p1, err) ||
        view_of(&w, &j, values, p0, p1, &reserved, err))
        goto fail;
    j.p1 = p1;
    locales_run(aggregate_shard, &j);
    int rc = atomic_load(&j.failed)
                 ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                              "aggregate %s: out of memory for the largest group", op_names[op])
                 : 0;
    if (ranks_agree(rc, err)) goto fail;
    goto done;
fail:
    object_release(out);
    out = NULL;
done:
    free(w.entries);
    free(w.v);
    if (reserved) registry_unreserve(reserved);
    return out;
}
