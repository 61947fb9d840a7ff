/* awkward arrays: building from a form and buffers, with every check (see awkward.h). */
#include "awkward.h"

#include "awkward_form.h"
#include "locales.h"
#include "pdarray.h"
#include "dist/ranks.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const ak_source *src;
    object *obj;
    bool *used;
    int L;
    h5ark_error *err;
} builder;

/* ---- element access ---------------------------------------------------------------------- */

static int64_t load(const darray *a, const void *data, uint64_t k) {
    switch (a->dtype) {
    case H5ARK_INT8: return ((const int8_t *)data)[k];
    case H5ARK_UINT8: return ((const uint8_t *)data)[k];
    case H5ARK_INT32: return ((const int32_t *)data)[k];
    case H5ARK_UINT32: return ((const uint32_t *)data)[k];
    default: return ((const int64_t *)data)[k];
    }
}

/* Element i of an integer darray, from a shard of this rank. */
static int64_t elem(const darray *a, uint64_t i) {
    const shard *sh = &a->shards[darray_shard_of(a, i)];
    return load(a, sh->data, i - sh->start);
}

/* Elements idx[0..n) of an integer darray wherever their shards are: each rank reads those
 * its own shards hold, then one sum over the ranks (the others gave 0). Collective: every
 * rank calls it with the same indices. */
static int elems(const darray *a, const uint64_t *idx, size_t n, int64_t *out, h5ark_error *err) {
    uint64_t *v = calloc(n ? n : 1, sizeof *v);
    int rc = v ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (locales_is_local(darray_shard_of(a, idx[i]))) v[i] = (uint64_t)elem(a, idx[i]);
    rc = ranks_agree(rc, err) || ranks_allreduce_u64(v, n, RANKS_SUM, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        out[i] = (int64_t)v[i];
    free(v);
    return rc ? -1 : 0;
}

/* Element i of a, as int64 (elems, for one). */
static int one_elem(const darray *a, uint64_t i, int64_t *out, h5ark_error *err) {
    return elems(a, &i, 1, out, err);
}

static void atomic_max(_Atomic int64_t *m, int64_t v) {
    int64_t cur = atomic_load(m);
    while (v > cur && !atomic_compare_exchange_weak(m, &cur, v)) {}
}

/* ---- copying buffers in ------------------------------------------------------------------ */

typedef struct {
    const ak_source *src;
    size_t index;
    darray *a;
    atomic_int failed;
} copy_job;

static void copy_shard(int locale, void *ctx) {
    copy_job *job = ctx;
    shard *sh = &job->a->shards[locale];
    if (sh->count && job->src->read(job->src->ctx, job->index, sh->start * job->a->itemsize,
                                    sh->data, sh->count * job->a->itemsize))
        atomic_store(&job->failed, 1);
}

/* Buffers from the request's payload, which rank 0 holds (pdarray's scatter). */
static int scatter_in(builder *bd, copy_job *job, size_t i) {
    return darray_scatter_in(job->a, bd->src->frames, bd->src->payload_offsets[i], copy_shard, NULL,
                             job, bd->err);
}

static int fail_node(builder *bd, const ak_node *n, const char *msg) {
    char label[AK_MAX_KEY_BYTES + 64];
    ak_node_label(n, label, sizeof label);
    return h5ark_fail(bd->err, H5ARK_BAD_REQUEST, "awkward: %s: %s", label, msg);
}

/* The buffer of `role` of node n, `nelem` elements sharded by `counts`, copied in on the
 * locales and added to the object as a component. */
static darray *add_buffer(builder *bd, const ak_node *n, ak_buffer_role role, uint64_t nelem,
                          const uint64_t *rows) {
    char name[AK_MAX_KEY_BYTES + 16];
    ak_buffer_name(n, role, name, sizeof name);
    size_t i = 0;
    while (i < bd->src->count && strcmp(bd->src->names[i], name) != 0)
        i++;
    char msg[400];
    if (i == bd->src->count) {
        snprintf(msg, sizeof msg, "missing buffer '%s'", name);
        fail_node(bd, n, msg);
        return NULL;
    }
    h5ark_dtype dtype = ak_buffer_dtype(n, role);
    size_t itemsize = h5ark_dtype_size(dtype);
    uint64_t have = bd->src->nbytes[i] / itemsize;
    if (nelem > OBJECT_MAX_ELEMENTS || have > OBJECT_MAX_ELEMENTS ||
        bd->src->nbytes[i] % itemsize || have < nelem) {
        snprintf(msg, sizeof msg,
                 "buffer '%s' has %llu bytes but the form and length need %llu (%llu %s)", name,
                 (unsigned long long)bd->src->nbytes[i], (unsigned long long)(nelem * itemsize),
                 (unsigned long long)nelem, h5ark_dtype_name(dtype));
        fail_node(bd, n, msg);
        return NULL;
    }
    if (bd->used[i]) { /* two form keys that differ only past 256 bytes, or such */
        snprintf(msg, sizeof msg, "buffer '%s' is named twice", name);
        fail_node(bd, n, msg);
        return NULL;
    }
    /* ak.from_buffers reads the first `nelem` and ignores the rest (a sliced, unpacked
     * array's contents run on); the rest is kept, unread, on the last locale so that get
     * and tohdf give back the buffer as it came. */
    uint64_t *counts = malloc((size_t)bd->L * sizeof *counts);
    int ok = counts ? 0 : h5ark_fail(bd->err, H5ARK_RESOURCE_LIMIT, "out of memory");
    ok = ranks_agree(ok, bd->err);
    if (ok) {
        free(counts);
        return NULL;
    }
    memcpy(counts, rows, (size_t)bd->L * sizeof *counts);
    counts[bd->L - 1] += have - nelem;
    bd->used[i] = true;
    object *buf = object_new_pdarray_counts(dtype, have, counts, bd->err);
    free(counts);
    if (!buf) return NULL;
    int rc = object_add_component(bd->obj, name, buf, bd->err);
    object_release(buf); /* the component holds it now */
    rc = ranks_agree(rc, bd->err);
    if (rc) return NULL;
    copy_job job = {.src = bd->src, .index = i, .a = buf->values};
    atomic_init(&job.failed, 0);
    if (bd->src->payload) {
        rc = scatter_in(bd, &job, i);
    } else {
        locales_run(copy_shard, &job);
        rc = 0;
    }
    if (rc == 0)
        rc = atomic_load(&job.failed)
                 ? h5ark_fail(bd->err, H5ARK_BAD_REQUEST,
                              "awkward: buffer '%s' could not be read whole", name)
                 : 0;
    rc = ranks_agree(rc, bd->err); /* each rank read its own shards */
    return rc ? NULL : buf->values;
}

/* ---- checks, per shard on the locales ------------------------------------------------------ */

typedef enum { V_OFFSETS, V_STARTSTOPS, V_INDEX, V_OPTINDEX, V_UNION, V_BOOL } check_kind;

typedef struct {
    check_kind kind;
    const darray *a, *b; /* offsets|starts|index|tags|data, and stops|union index */
    int64_t limit;       /* offsets: the content length */
    uint64_t n;          /* elements that the form reads (the rest is not interpreted) */
    int ntags;
    const int64_t *prev; /* offsets: per locale, the element before its shard's first */
    _Atomic uint64_t first_bad;
    _Atomic int64_t max[128]; /* largest stop / index (per tag for unions) */
} check_job;

static void check_shard(int locale, void *ctx) {
    check_job *job = ctx;
    const shard *sa = &job->a->shards[locale];
    const shard *sb = job->b ? &job->b->shards[locale] : NULL;
    int64_t best = -1;
    for (uint64_t k = 0; k < sa->count && sa->start + k < job->n; k++) {
        uint64_t g = sa->start + k;
        bool bad = false;
        switch (job->kind) {
        case V_OFFSETS: {
            int64_t v = load(job->a, sa->data, k);
            int64_t prev = k ? load(job->a, sa->data, k - 1) : g ? job->prev[locale] : 0;
            bad = v < 0 || v > job->limit || v < prev;
            break;
        }
        case V_STARTSTOPS: {
            int64_t s = load(job->a, sa->data, k), e = load(job->b, sb->data, k);
            if (s != e) bad = s < 0 || s > e;
            if (e > best) best = e;
            break;
        }
        case V_INDEX:
        case V_OPTINDEX: {
            int64_t v = load(job->a, sa->data, k);
            bad = job->kind == V_INDEX && v < 0;
            if (v > best) best = v;
            break;
        }
        case V_UNION: {
            int64_t t = load(job->a, sa->data, k), v = load(job->b, sb->data, k);
            bad = t < 0 || t >= job->ntags || v < 0;
            if (!bad) atomic_max(&job->max[t], v);
            break;
        }
        case V_BOOL: bad = ((const uint8_t *)sa->data)[k] > 1; break;
        }
        if (bad) {
            locales_note_first(&job->first_bad, g);
            return;
        }
    }
    if (job->kind != V_UNION) atomic_max(&job->max[0], best);
}

/* Several ranks: the first bad element and the largest values over every rank's shards
 * (maxima carried as max + 1, so that -1, none, is 0). */
static int reduce_check(check_job *job, uint64_t *bad, int64_t *max, int nmax, h5ark_error *err) {
    uint64_t v[129];
    v[0] = *bad;
    if (ranks_allreduce_u64(v, 1, RANKS_MIN, err)) return -1;
    *bad = v[0];
    for (int t = 0; t < nmax; t++)
        v[t] = (uint64_t)(max[t] + 1);
    if (nmax && ranks_allreduce_u64(v, (size_t)nmax, RANKS_MAX, err)) return -1;
    for (int t = 0; t < nmax; t++)
        max[t] = (int64_t)v[t] - 1;
    (void)job;
    return 0;
}

static int run_check(builder *bd, const ak_node *n, check_job *job, int64_t *max) {
    int64_t *prev = NULL;
    if (job->kind == V_OFFSETS) { /* each shard's predecessor, maybe on another rank */
        prev = calloc((size_t)bd->L, sizeof *prev);
        uint64_t *idx = calloc((size_t)bd->L, sizeof *idx);
        size_t ni = 0;
        int rc = prev && idx ? 0 : h5ark_fail(bd->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = ranks_agree(rc, bd->err);
        for (int k = 0; rc == 0 && k < bd->L; k++)
            if (job->a->shards[k].start > 0 && job->a->shards[k].start < job->n)
                idx[ni++] = job->a->shards[k].start - 1;
        int64_t *got = rc == 0 ? calloc(ni ? ni : 1, sizeof *got) : NULL;
        if (rc == 0 && !got) rc = h5ark_fail(bd->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = ranks_agree(rc, bd->err);
        if (rc == 0) rc = elems(job->a, idx, ni, got, bd->err);
        for (int k = 0, j = 0; rc == 0 && k < bd->L; k++)
            if (job->a->shards[k].start > 0 && job->a->shards[k].start < job->n) prev[k] = got[j++];
        free(idx);
        free(got);
        if (rc) {
            free(prev);
            return -1;
        }
        job->prev = prev;
    }
    atomic_init(&job->first_bad, UINT64_MAX);
    for (int t = 0; t < 128; t++)
        atomic_init(&job->max[t], -1);
    locales_run(check_shard, job);
    free(prev);
    job->prev = NULL;
    uint64_t bad = atomic_load(&job->first_bad);
    int64_t all[128];
    int nmax = job->kind == V_UNION ? job->ntags : 1;
    for (int t = 0; t < nmax; t++)
        all[t] = atomic_load(&job->max[t]);
    if (reduce_check(job, &bad, all, nmax, bd->err)) return -1;
    for (int t = 0; max && t < nmax; t++)
        max[t] = all[t];
    if (bad == UINT64_MAX) return 0;
    int64_t va = 0, vb = 0; /* the bad element(s), for the message (a bool's is its index) */
    if (job->kind != V_BOOL &&
        (one_elem(job->a, bad, &va, bd->err) || (job->b && one_elem(job->b, bad, &vb, bd->err))))
        return -1;
    char msg[400];
    switch (job->kind) {
    case V_OFFSETS:
        snprintf(msg, sizeof msg,
                 "offsets[%llu] = %lld: offsets must be non-decreasing and within the %lld "
                 "elements of the content",
                 (unsigned long long)bad, (long long)va, (long long)job->limit);
        break;
    case V_STARTSTOPS:
        snprintf(msg, sizeof msg,
                 "list %llu: starts = %lld, stops = %lld (a non-empty list needs 0 <= start < "
                 "stop)",
                 (unsigned long long)bad, (long long)va, (long long)vb);
        break;
    case V_INDEX:
        snprintf(msg, sizeof msg, "index[%llu] = %lld is negative", (unsigned long long)bad,
                 (long long)va);
        break;
    case V_UNION:
        snprintf(msg, sizeof msg,
                 "row %llu: tag %lld, index %lld (tags must be 0 to %d, indices non-negative)",
                 (unsigned long long)bad, (long long)va, (long long)vb, job->ntags - 1);
        break;
    case V_BOOL:
        snprintf(msg, sizeof msg, "bool element %llu is neither 0 nor 1", (unsigned long long)bad);
        break;
    default: snprintf(msg, sizeof msg, "element %llu is out of range", (unsigned long long)bad);
    }
    return fail_node(bd, n, msg);
}

/* ---- the layout, top down ------------------------------------------------------------------ */

static int build_node(builder *bd, const ak_node *n, uint64_t length, const uint64_t *bounds);

/* bounds of a block distribution of `length` rows */
static uint64_t *block_bounds(builder *bd, uint64_t length) {
    uint64_t *b = malloc(((size_t)bd->L + 1) * sizeof *b);
    if (!b) {
        h5ark_fail(bd->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    for (int k = 0; k <= bd->L; k++)
        b[k] = locales_block_start(length, bd->L, k);
    return b;
}

/* build_node with the rows in a block distribution. */
static int build_block(builder *bd, const ak_node *n, uint64_t length) {
    uint64_t *b = block_bounds(bd, length);
    if (!b) return -1;
    int rc = build_node(bd, n, length, b);
    free(b);
    return rc;
}

/* counts[k] = rows of locale k times `per`, plus `extra` on the last locale */
static void row_counts(const builder *bd, const uint64_t *bounds, uint64_t per, uint64_t extra,
                       uint64_t *counts) {
    for (int k = 0; k < bd->L; k++)
        counts[k] = (bounds[k + 1] - bounds[k]) * per + (k == bd->L - 1 ? extra : 0);
}

static int too_long(builder *bd, const ak_node *n, uint64_t a, uint64_t b) {
    if (a == 0 || b <= OBJECT_MAX_ELEMENTS / a) return 0;
    return fail_node(bd, n, "content would have more than 2^48 elements");
}

/* Node n of `length` rows, locale k holding rows bounds[k]..bounds[k+1]: its buffers
 * copied in and checked as components of the object, then its contents, rows laid out
 * under their parents' rows. */
static int build_node(builder *bd, const ak_node *n, uint64_t length, const uint64_t *bounds) {
    int L = bd->L, rc = -1;
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    uint64_t *cb = calloc((size_t)L + 1, sizeof *cb);
    if (!counts || !cb) {
        h5ark_fail(bd->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    if (length > OBJECT_MAX_ELEMENTS) {
        fail_node(bd, n, "more than 2^48 rows");
        goto out;
    }
    switch (n->cls) {
    case AK_NUMPY: {
        uint64_t per = n->inner * n->per_item;
        if (too_long(bd, n, per, length)) goto out;
        row_counts(bd, bounds, per, 0, counts);
        darray *a = add_buffer(bd, n, AK_BUF_DATA, length * per, counts);
        if (!a) goto out;
        if (n->dtype == H5ARK_BOOLEAN) {
            check_job job = {.kind = V_BOOL, .a = a, .n = length * per};
            if (run_check(bd, n, &job, NULL)) goto out;
        }
        break;
    }
    case AK_EMPTY:
        if (length != 0) {
            char msg[100];
            snprintf(msg, sizeof msg, "has length %llu; an EmptyArray must have none",
                     (unsigned long long)length);
            fail_node(bd, n, msg);
            goto out;
        }
        break;
    case AK_LISTOFFSET: {
        row_counts(bd, bounds, 1, 1, counts);
        darray *a = add_buffer(bd, n, AK_BUF_OFFSETS, length + 1, counts);
        if (!a) goto out;
        /* the last offset, and the offsets at the locales' row bounds (cb[1..L-1]) */
        uint64_t *at = calloc((size_t)L + 1, sizeof *at);
        int64_t *got = calloc((size_t)L + 1, sizeof *got);
        int r = at && got ? 0 : h5ark_fail(bd->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        r = ranks_agree(r, bd->err);
        for (int k = 1; r == 0 && k < L; k++)
            at[k] = bounds[k];
        if (r == 0) at[0] = length;
        if (r == 0) r = elems(a, at, (size_t)L, got, bd->err);
        int64_t last = got ? got[0] : 0;
        for (int k = 1; r == 0 && k < L; k++)
            cb[k] = (uint64_t)got[k];
        free(at);
        free(got);
        if (r) goto out;
        if (last < 0 || (uint64_t)last > OBJECT_MAX_ELEMENTS) {
            fail_node(bd, n, "the last offset is negative or past 2^48");
            goto out;
        }
        check_job job = {.kind = V_OFFSETS, .a = a, .limit = last, .n = length + 1};
        if (run_check(bd, n, &job, NULL)) goto out;
        /* a locale's content is what its rows' offsets span (rows before offsets[0]
         * belong to no row: the first locale keeps them); cb[1..L-1] read above */
        cb[0] = 0;
        cb[L] = (uint64_t)last;
        if (build_node(bd, n->contents[0], (uint64_t)last, cb)) goto out;
        break;
    }
    case AK_LIST: {
        row_counts(bd, bounds, 1, 0, counts);
        darray *s = add_buffer(bd, n, AK_BUF_STARTS, length, counts);
        darray *e = s ? add_buffer(bd, n, AK_BUF_STOPS, length, counts) : NULL;
        if (!e) goto out;
        check_job job = {.kind = V_STARTSTOPS, .a = s, .b = e, .n = length};
        int64_t max;
        if (run_check(bd, n, &job, &max)) goto out;
        if (build_block(bd, n->contents[0], max > 0 ? (uint64_t)max : 0)) goto out;
        break;
    }
    case AK_REGULAR:
        if (too_long(bd, n, n->size, length)) goto out;
        for (int k = 0; k <= L; k++)
            cb[k] = bounds[k] * n->size;
        if (build_node(bd, n->contents[0], length * n->size, cb)) goto out;
        break;
    case AK_RECORD:
        for (size_t c = 0; c < n->ncontents; c++)
            if (build_node(bd, n->contents[c], length, bounds)) goto out;
        break;
    case AK_INDEXED:
    case AK_INDEXEDOPTION: {
        row_counts(bd, bounds, 1, 0, counts);
        darray *a = add_buffer(bd, n, AK_BUF_INDEX, length, counts);
        if (!a) goto out;
        check_job job = {.kind = n->cls == AK_INDEXED ? V_INDEX : V_OPTINDEX, .a = a, .n = length};
        int64_t max;
        if (run_check(bd, n, &job, &max)) goto out;
        if ((uint64_t)(max + 1) > OBJECT_MAX_ELEMENTS + 1) {
            fail_node(bd, n, "an index is past 2^48");
            goto out;
        }
        if (build_block(bd, n->contents[0], (uint64_t)(max + 1))) goto out;
        break;
    }
    case AK_BYTEMASKED:
    case AK_BITMASKED:
        if (n->cls == AK_BYTEMASKED) {
            row_counts(bd, bounds, 1, 0, counts);
            if (!add_buffer(bd, n, AK_BUF_MASK, length, counts)) goto out;
        } else { /* bits do not split at rows: the mask bytes are block-distributed */
            uint64_t bytes = (length + 7) / 8;
            for (int k = 0; k < L; k++)
                counts[k] = locales_block_start(bytes, L, k + 1) - locales_block_start(bytes, L, k);
            if (!add_buffer(bd, n, AK_BUF_MASK, bytes, counts)) goto out;
        }
        /* the content has the same rows */
        if (build_node(bd, n->contents[0], length, bounds)) goto out;
        break;
    case AK_UNMASKED:
        if (build_node(bd, n->contents[0], length, bounds)) goto out;
        break;
    case AK_UNION: {
        row_counts(bd, bounds, 1, 0, counts);
        darray *t = add_buffer(bd, n, AK_BUF_TAGS, length, counts);
        darray *x = t ? add_buffer(bd, n, AK_BUF_INDEX, length, counts) : NULL;
        if (!x) goto out;
        check_job job = {.kind = V_UNION, .a = t, .b = x, .ntags = (int)n->ncontents, .n = length};
        int64_t max[128];
        if (run_check(bd, n, &job, max)) goto out;
        for (size_t c = 0; c < n->ncontents; c++) {
            if ((uint64_t)(max[c] + 1) > OBJECT_MAX_ELEMENTS + 1) {
                fail_node(bd, n, "an index is past 2^48");
                goto out;
            }
            if (build_block(bd, n->contents[c], (uint64_t)(max[c] + 1))) goto out;
        }
        break;
    }
    default: break;
    }
    rc = 0;
out:
    free(counts);
    free(cb);
    return rc;
}

object *awkward_build(const char *form_json, size_t form_len, uint64_t length, const ak_source *src,
                      h5ark_error *err) {
    if (length > OBJECT_MAX_ELEMENTS) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "awkward: length %llu is more than 2^48",
                   (unsigned long long)length);
        return NULL;
    }
    ak_form *form = ak_form_parse(form_json, form_len, err);
    if (!form) return NULL;
    builder bd = {.src = src, .L = locales_count(), .err = err};
    bd.used = calloc(src->count ? src->count : 1, sizeof *bd.used);
    object *obj = bd.used ? object_new_composite(H5ARK_AWKWARD, H5ARK_UINT8, length, err) : NULL;
    if (!bd.used && !obj) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    bd.obj = obj;
    int rc = obj ? 0 : -1;
    if (rc == 0) rc = build_block(&bd, form->root, length);
    for (size_t i = 0; rc == 0 && i < src->count; i++)
        if (!bd.used[i])
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "awkward: buffer '%s' is not one the form names", src->names[i]);
    if (rc == 0)
        rc = object_set_extra(obj, "dtype", h5ark_value_str("awkward"), err) ||
             object_set_extra(obj, "form", h5ark_value_str(form->json), err) ||
             object_set_extra(obj, "length", h5ark_value_uint(length), err);
    free(bd.used);
    ak_form_free(form);
    if (rc) {
        object_release(obj);
        return NULL;
    }
    return obj;
}

void ak_swap_bytes(unsigned char *data, uint64_t nbytes, size_t width) {
    for (uint64_t k = 0; width > 1 && k + width <= nbytes; k += width)
        for (size_t x = 0; x < width / 2; x++) {
            unsigned char t = data[k + x];
            data[k + x] = data[k + width - 1 - x];
            data[k + width - 1 - x] = t;
        }
}

const char *awkward_form_json(const object *obj) {
    if (!obj || obj->objtype != H5ARK_AWKWARD || !obj->extra) return NULL;
    for (size_t i = 0; i < obj->extra->as.m.len; i++)
        if (strcmp(obj->extra->as.m.keys[i], "form") == 0 &&
            obj->extra->as.m.vals[i]->kind == H5ARK_STR)
            return obj->extra->as.m.vals[i]->as.s.ptr;
    return NULL;
}
