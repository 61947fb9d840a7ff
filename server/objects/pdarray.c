/* pdarray construction (see pdarray.h). Fills run on every locale at once; random fills
 * use a counter-based generator so a seed gives the same array for any locale count. */
#include "pdarray.h"

#include "locales.h"
#include "progress.h"
#include "dist/place.h"
#include "dist/ranks.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const char *const fill_names[] = {"empty",  "zeros",    "ones",    "full",
                                         "arange", "linspace", "uniform", "randint"};

int pdarray_fill_from_name(const char *name, fill_kind *out) {
    for (size_t i = 0; i < sizeof fill_names / sizeof fill_names[0]; i++)
        if (strcmp(fill_names[i], name) == 0) {
            *out = (fill_kind)i;
            return 0;
        }
    return -1;
}

/* splitmix64: a good 64-bit mix of a counter, so element i's draw needs no state. */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static double unit_double(uint64_t seed, uint64_t i) {
    return (double)(mix64(seed ^ mix64(i)) >> 11) * 0x1.0p-53; /* [0, 1) */
}

/* Store one value into element i of a buffer of `dtype`, converting as C does. */
#define STORE(dtype, p, i, v)                                                                      \
    do {                                                                                           \
        switch (dtype) {                                                                           \
        case H5ARK_INT8: ((int8_t *)(p))[i] = (int8_t)(v); break;                                  \
        case H5ARK_INT16: ((int16_t *)(p))[i] = (int16_t)(v); break;                               \
        case H5ARK_INT32: ((int32_t *)(p))[i] = (int32_t)(v); break;                               \
        case H5ARK_INT64: ((int64_t *)(p))[i] = (int64_t)(v); break;                               \
        case H5ARK_UINT8: ((uint8_t *)(p))[i] = (uint8_t)(v); break;                               \
        case H5ARK_UINT16: ((uint16_t *)(p))[i] = (uint16_t)(v); break;                            \
        case H5ARK_UINT32: ((uint32_t *)(p))[i] = (uint32_t)(v); break;                            \
        case H5ARK_UINT64: ((uint64_t *)(p))[i] = (uint64_t)(v); break;                            \
        case H5ARK_FLOAT32: ((float *)(p))[i] = (float)(v); break;                                 \
        case H5ARK_FLOAT64: ((double *)(p))[i] = (double)(v); break;                               \
        case H5ARK_BOOLEAN: ((uint8_t *)(p))[i] = (v) != 0; break;                                 \
        default: break;                                                                            \
        }                                                                                          \
    } while (0)

typedef struct {
    object *obj;
    const fill_spec *spec;
} fill_job;

static void fill_shard(int locale, void *ctx) {
    fill_job *job = ctx;
    const fill_spec *s = job->spec;
    shard *sh = &job->obj->values->shards[locale];
    h5ark_dtype dt = job->obj->dtype;
    size_t itemsize = job->obj->values->itemsize;
    uint64_t n = job->obj->size;
    if (sh->count == 0) return;
    void *p = sh->data;
    switch (s->kind) {
    case FILL_EMPTY:
    case FILL_ZEROS: memset(p, 0, sh->count * itemsize); return; /* also touches the pages */
    case FILL_ONES:
        for (uint64_t i = 0; i < sh->count; i++)
            STORE(dt, p, i, 1);
        return;
    case FILL_FULL:
        for (uint64_t i = 0; i < sh->count; i++) {
            if (h5ark_dtype_is_float(dt) || !s->value.is_int)
                STORE(dt, p, i, s->value.f);
            else if (s->value.negative)
                STORE(dt, p, i, s->value.i);
            else
                STORE(dt, p, i, s->value.u);
        }
        return;
    case FILL_ARANGE:
        for (uint64_t i = 0; i < sh->count; i++) {
            uint64_t k = sh->start + i;
            if (s->start.is_int && s->step.is_int && !h5ark_dtype_is_float(dt)) {
                /* exact in two's complement: start + k*step wraps only where the dtype does */
                uint64_t v = (uint64_t)s->start.i + k * (uint64_t)s->step.i;
                if (h5ark_dtype_is_unsigned(dt) || dt == H5ARK_BOOLEAN)
                    STORE(dt, p, i, v);
                else
                    STORE(dt, p, i, (int64_t)v);
            } else {
                STORE(dt, p, i, s->start.f + (double)k * s->step.f);
            }
        }
        return;
    case FILL_LINSPACE: {
        double a = s->start.f, b = s->stop.f;
        double step = n > 1 ? (b - a) / (double)(n - 1) : 0.0;
        for (uint64_t i = 0; i < sh->count; i++) {
            uint64_t k = sh->start + i;
            double v = (n > 1 && k == n - 1) ? b : a + (double)k * step;
            STORE(dt, p, i, v);
        }
        return;
    }
    case FILL_UNIFORM:
        for (uint64_t i = 0; i < sh->count; i++) {
            double u = unit_double(s->seed, sh->start + i);
            STORE(dt, p, i, s->low.f + u * (s->high.f - s->low.f));
        }
        return;
    case FILL_RANDINT:
        for (uint64_t i = 0; i < sh->count; i++) {
            uint64_t k = sh->start + i;
            if (h5ark_dtype_is_float(dt)) {
                STORE(dt, p, i, s->low.f + unit_double(s->seed, k) * (s->high.f - s->low.f));
            } else {
                /* range = high - low in [1, 2^64); a 128-bit multiply maps the draw into it */
                uint64_t range = (uint64_t)s->high.i - (uint64_t)s->low.i;
                uint64_t r =
                    (uint64_t)(((unsigned __int128)mix64(s->seed ^ mix64(k)) * range) >> 64);
                uint64_t v = (uint64_t)s->low.i + r;
                if (h5ark_dtype_is_unsigned(dt) || dt == H5ARK_BOOLEAN)
                    STORE(dt, p, i, v);
                else
                    STORE(dt, p, i, (int64_t)v);
            }
        }
        return;
    }
}

void pdarray_fill(object *obj, const fill_spec *spec) {
    fill_job job = {obj, spec};
    locales_run(fill_shard, &job);
}

int pdarray_arange_size(const fill_spec *s, uint64_t *size, h5ark_error *err) {
    if (s->start.is_int && s->stop.is_int && s->step.is_int) {
        if (s->step.i == 0 && !s->step.negative && s->step.u == 0)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "create arange: 'step' must not be 0");
        /* work in 128 bits: start and stop may be anywhere in int64 or uint64 */
        __int128 a = s->start.negative ? (__int128)s->start.i : (__int128)s->start.u;
        __int128 b = s->stop.negative ? (__int128)s->stop.i : (__int128)s->stop.u;
        __int128 st = s->step.negative ? (__int128)s->step.i : (__int128)s->step.u;
        __int128 n = 0;
        if (st > 0 && b > a) n = (b - a + st - 1) / st;
        if (st < 0 && b < a) n = (a - b + (-st) - 1) / (-st);
        if (n > (__int128)OBJECT_MAX_ELEMENTS)
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "create arange: the range is too long");
        *size = (uint64_t)n;
        return 0;
    }
    double a = s->start.f, b = s->stop.f, st = s->step.f;
    if (!isfinite(a) || !isfinite(b) || !isfinite(st) || st == 0.0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "create arange: start, stop and step must be finite and step not 0");
    double n = ceil((b - a) / st);
    if (n <= 0) n = 0;
    if (n > (double)OBJECT_MAX_ELEMENTS)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "create arange: the range is too long");
    *size = (uint64_t)n;
    return 0;
}

/* Does an exact integer fit dtype? */
static bool int_fits(bool negative, int64_t i, uint64_t u, h5ark_dtype dt) {
    static const struct {
        int64_t lo;
        uint64_t hi;
    } range[] = {
        [H5ARK_INT8] = {INT8_MIN, INT8_MAX},
        [H5ARK_INT16] = {INT16_MIN, INT16_MAX},
        [H5ARK_INT32] = {INT32_MIN, INT32_MAX},
        [H5ARK_INT64] = {INT64_MIN, INT64_MAX},
        [H5ARK_UINT8] = {0, UINT8_MAX},
        [H5ARK_UINT16] = {0, UINT16_MAX},
        [H5ARK_UINT32] = {0, UINT32_MAX},
        [H5ARK_UINT64] = {0, UINT64_MAX},
        [H5ARK_BOOLEAN] = {0, 1},
    };
    if (h5ark_dtype_is_float(dt)) return true;
    if (negative) return i >= range[dt].lo;
    return u <= range[dt].hi;
}

int pdarray_check_fill(const fill_spec *s, h5ark_dtype dt, h5ark_error *err) {
    const char *kind = fill_names[s->kind];
    if (h5ark_dtype_is_float(dt)) return 0;
    switch (s->kind) {
    case FILL_FULL:
        if (!s->value.is_int)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "create full: value %g is not an integer, so it does not fit %s",
                              s->value.f, h5ark_dtype_name(dt));
        if (!int_fits(s->value.negative, s->value.i, s->value.u, dt))
            return h5ark_fail(err, H5ARK_TYPE_ERROR, "create full: value %.17g does not fit %s",
                              s->value.f, h5ark_dtype_name(dt));
        return 0;
    case FILL_ARANGE:
        if (!s->start.is_int || !s->step.is_int || !s->stop.is_int)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "create arange: an integer dtype (%s) needs integer start, stop "
                              "and step",
                              h5ark_dtype_name(dt));
        return 0;
    case FILL_RANDINT:
    case FILL_UNIFORM:
        if (s->kind == FILL_UNIFORM)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "create uniform draws floats; use randint for dtype %s",
                              h5ark_dtype_name(dt));
        if (!s->low.is_int || !s->high.is_int)
            return h5ark_fail(err, H5ARK_TYPE_ERROR, "create %s: low and high must be integers",
                              kind);
        {
            __int128 lo = s->low.negative ? (__int128)s->low.i : (__int128)s->low.u;
            __int128 hi = s->high.negative ? (__int128)s->high.i : (__int128)s->high.u;
            if (hi <= lo)
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "create %s: high must be above low",
                                  kind);
            if (!int_fits(s->low.negative, s->low.i, s->low.u, dt) ||
                !int_fits(hi - 1 < 0, (int64_t)(hi - 1), (uint64_t)(hi - 1), dt))
                return h5ark_fail(err, H5ARK_TYPE_ERROR,
                                  "create %s: [low, high) does not fit dtype %s", kind,
                                  h5ark_dtype_name(dt));
        }
        return 0;
    default: return 0;
    }
}

typedef struct {
    object *obj;
    const h5ark_payload *payload;
    uint64_t offset;
    atomic_int bad_bool; /* 1 + index of a bad byte is hard to merge; a flag is enough */
    atomic_int failed;
} copy_job;

static void copy_shard(int locale, void *ctx) {
    copy_job *job = ctx;
    darray *a = job->obj->values;
    shard *sh = &a->shards[locale];
    if (sh->count == 0) return;
    /* in pieces, so that the request's progress moves while a large shard is copied */
    progress_sink *progress = progress_here();
    uint64_t len = sh->count * a->itemsize, from = job->offset + sh->start * a->itemsize;
    for (uint64_t at = 0; at < len; at += PROGRESS_PIECE) {
        uint64_t n = len - at < PROGRESS_PIECE ? len - at : PROGRESS_PIECE;
        if (h5ark_payload_copy(job->payload, from + at, (char *)sh->data + at, n) != 0) {
            atomic_store(&job->failed, 1);
            return;
        }
        progress_add(progress, n);
    }
    if (a->dtype == H5ARK_BOOLEAN) {
        const uint8_t *b = sh->data;
        for (uint64_t i = 0; i < sh->count; i++)
            if (b[i] > 1) {
                atomic_store(&job->bad_bool, 1);
                return;
            }
    }
}

static void check_bool_shard(int locale, void *ctx) {
    copy_job *job = ctx;
    shard *sh = &job->obj->values->shards[locale];
    const uint8_t *b = sh->data;
    for (uint64_t i = 0; i < sh->count; i++)
        if (b[i] > 1) {
            atomic_store(&job->bad_bool, 1);
            return;
        }
}

typedef struct {
    locale_fn copy_own, check_arrived;
    void *job;
} scatter_job;

static void fill_shards(void *ctx, bool from_payload) {
    scatter_job *s = ctx;
    locale_fn fn = from_payload ? s->copy_own : s->check_arrived;
    if (fn) locales_run(fn, s->job);
}

int darray_scatter_in(const darray *a, const h5ark_payload *payload, uint64_t offset,
                      locale_fn copy_own, locale_fn check_arrived, void *job, h5ark_error *err) {
    int L = a->nshards;
    place_piece *pieces = malloc((size_t)L * sizeof *pieces);
    if (!pieces) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (int b = 0; b < L; b++)
        pieces[b] = (place_piece){locales_rank_of(b), offset + a->shards[b].start * a->itemsize,
                                  a->shards[b].count * a->itemsize,
                                  locales_is_local(b) ? a->shards[b].data : NULL};
    scatter_job s = {copy_own, check_arrived, job};
    int rc = place_payload(payload, pieces, (size_t)L, fill_shards, &s, err);
    free(pieces);
    return rc;
}

int pdarray_copy_in(object *obj, const h5ark_payload *payload, const h5ark_buffer *buf,
                    h5ark_error *err) {
    darray *a = obj->values;
    uint64_t want = a->size * a->itemsize;
    if (buf->nbytes != want) /* the header's sizes: every rank sees the same */
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "buffer '%s' has %llu bytes but %llu %s elements need %llu", buf->name,
                          (unsigned long long)buf->nbytes, (unsigned long long)obj->size,
                          h5ark_dtype_name(obj->dtype), (unsigned long long)want);
    copy_job job = {.obj = obj, .payload = payload, .offset = buf->offset};
    int rc = darray_scatter_in(a, payload, buf->offset, copy_shard,
                               a->dtype == H5ARK_BOOLEAN ? check_bool_shard : NULL, &job, err);
    if (rc == 0 && atomic_load(&job.failed))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "buffer '%s' is shorter than declared", buf->name);
    if (rc == 0 && atomic_load(&job.bad_bool))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                        "buffer '%s' holds a bool byte that is neither 0 nor 1", buf->name);
    return ranks_agree(rc, err);
}

typedef struct {
    const object *obj;
    int64_t lo, hi;
    bool nondecreasing;
    _Atomic uint64_t first_bad;
    const uint64_t *shard_last; /* nondecreasing: the last element of every shard */
} range_job;

static void range_check_shard(int b, void *ctx) {
    range_job *job = ctx;
    const shard *s = &job->obj->values->shards[b];
    const int64_t *v = s->data;
    if (!job->nondecreasing && job->lo < job->hi) {
        /* blocks without a branch an element (v - lo as unsigned wraps below lo), then the
         * first bad one of the block that has one */
        uint64_t span = (uint64_t)job->hi - (uint64_t)job->lo;
        for (uint64_t i = 0; i < s->count; i += 4096) {
            uint64_t end = s->count - i < 4096 ? s->count : i + 4096;
            bool any = false;
            for (uint64_t k = i; k < end; k++)
                any |= (uint64_t)v[k] - (uint64_t)job->lo >= span;
            for (uint64_t k = i; any && k < end; k++)
                if ((uint64_t)v[k] - (uint64_t)job->lo >= span) {
                    locales_note_first(&job->first_bad, s->start + k);
                    return;
                }
        }
        return;
    }
    for (uint64_t i = 0; i < s->count; i++) {
        bool bad = v[i] < job->lo || v[i] >= job->hi;
        if (!bad && job->nondecreasing) {
            if (i > 0)
                bad = v[i] < v[i - 1];
            else if (s->start > 0) /* the element before may be another rank's */
                bad = v[0] <
                      (int64_t)job->shard_last[darray_shard_of(job->obj->values, s->start - 1)];
        }
        if (bad) {
            locales_note_first(&job->first_bad, s->start + i);
            return;
        }
    }
}

int pdarray_first_outside(const object *obj, int64_t lo, int64_t hi, bool nondecreasing,
                          uint64_t *first, h5ark_error *err) {
    const darray *a = obj->values;
    uint64_t *last = calloc((size_t)a->nshards, sizeof *last);
    if (ranks_agree(last ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err)) {
        free(last);
        return -1;
    }
    for (int b = 0; nondecreasing && b < a->nshards; b++)
        if (locales_is_local(b) && a->shards[b].count)
            last[b] = (uint64_t)((const int64_t *)a->shards[b].data)[a->shards[b].count - 1];
    int rc = nondecreasing ? ranks_allreduce_u64(last, (size_t)a->nshards, RANKS_SUM, err) : 0;
    if (rc == 0) {
        range_job job = {.obj = obj, .lo = lo, .hi = hi, .nondecreasing = nondecreasing};
        job.shard_last = last;
        atomic_init(&job.first_bad, UINT64_MAX);
        locales_run(range_check_shard, &job);
        *first = atomic_load(&job.first_bad);
        rc = ranks_allreduce_u64(first, 1, RANKS_MIN, err);
    }
    free(last);
    return rc;
}

int pdarray_int64_at(const object *obj, uint64_t i, int64_t *out, h5ark_error *err) {
    const darray *a = obj->values;
    int b = darray_shard_of(a, i);
    uint64_t v = 0;
    if (locales_is_local(b))
        v = (uint64_t)((const int64_t *)a->shards[b].data)[i - a->shards[b].start];
    if (ranks_allreduce_u64(&v, 1, RANKS_SUM, err)) return -1;
    *out = (int64_t)v;
    return 0;
}
