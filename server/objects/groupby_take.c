/* groupby's gathers: the rows of an object at given row indices (groupby_take), strings
 * with an extra one (groupby_take_strings), and the search of a string. Each rank fills its
 * own shards of the result on its locales: what it holds is read in place, what another
 * rank holds (a miss) is fetched (groupby_fetch.c); with one rank everything is here. */
#include "groupby.h"
#include "groupby_rows.h"

#include "registry.h"
#include "dist/ranks.h"

#include <stdlib.h>
#include <string.h>

/* Outputs whose source row another rank holds: output position and row. */
typedef struct {
    uint64_t *pos, *row;
    uint64_t n, cap;
} misses;

static int miss_add(misses *m, uint64_t pos, uint64_t row) {
    if (m->n == m->cap) {
        uint64_t cap = m->cap ? 2 * m->cap : 256;
        uint64_t *p = realloc(m->pos, cap * 8), *r = p ? realloc(m->row, cap * 8) : NULL;
        if (p) m->pos = p;
        if (!r) return -1;
        m->row = r;
        m->cap = cap;
    }
    m->pos[m->n] = pos;
    m->row[m->n++] = row;
    return 0;
}

typedef struct {
    const object *src;
    const object *idx;       /* NULL: identity */
    const int64_t *idx_here; /* idx's entries of this rank's block when fetched, else NULL */
    uint64_t o0;             /* this rank's first output element */
    const char *extra;
    uint64_t extra_len;
    object *out;
    uint64_t count;  /* elements of the output */
    uint64_t *bytes; /* strings: bytes per output locale (every locale) */
    misses *miss;    /* per local locale */
    atomic_int failed;
    /* strings: the misses' strings fetched, local locale b's from fbase[b] on */
    const char *fbytes;
    const uint64_t *foffs;
    uint64_t *fbase;
} take_job;

static inline uint64_t take_index(const take_job *j, uint64_t i) {
    if (!j->idx) return i;
    if (j->idx_here) return (uint64_t)j->idx_here[i - j->o0];
    return (uint64_t)get_i64(j->idx->values, i);
}

/* idx's entries of this rank's output block [o0, o1), fetched when another rank holds any
 * (every rank learns whether one does); *here stays NULL when they are all here. */
static int index_block(take_job *j, uint64_t o1, int64_t **here, uint64_t *reserved,
                       h5ark_error *err) {
    *here = NULL;
    uint64_t need = j->idx && !groupby_rows_here(j->idx->values, j->o0, o1);
    if (ranks_allreduce_u64(&need, 1, RANKS_MAX, err)) return -1;
    if (!need) return 0;
    uint64_t m = o1 - j->o0;
    if (registry_scratch_agreed(m * 8, (void **)here, reserved, err)) return -1;
    for (uint64_t i = 0; i < m; i++)
        (*here)[i] = (int64_t)(j->o0 + i);
    return groupby_fetch_rows(j->idx->values, *here, m, *here, err);
}

/* The misses of every local locale, one after another: their rows, and where each
 * locale's begin (fbase, T + 1 entries). */
static int gather_misses(take_job *j, int64_t **rows, uint64_t *reserved, h5ark_error *err) {
    int T = locales_local_count();
    uint64_t total = 0;
    for (int b = 0; b < T; b++) {
        j->fbase[b] = total;
        total += j->miss[b].n;
    }
    j->fbase[T] = total;
    if (registry_scratch_agreed(total * 8, (void **)rows, reserved, err)) return -1;
    for (int b = 0; b < T; b++)
        for (uint64_t k = 0; k < j->miss[b].n; k++)
            (*rows)[j->fbase[b] + k] = (int64_t)j->miss[b].row[k];
    return 0;
}

static int take_setup(take_job *j, h5ark_error *err) {
    int T = locales_local_count();
    j->miss = calloc((size_t)T, sizeof *j->miss);
    j->fbase = calloc((size_t)T + 1, sizeof *j->fbase);
    j->bytes = calloc((size_t)locales_count(), sizeof *j->bytes);
    int rc = j->miss && j->fbase && j->bytes
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return ranks_agree(rc, err);
}

/* What take_setup and index_block took, and the scratch reserved (freed by the caller). */
static void take_cleanup(take_job *j, uint64_t reserved) {
    for (int b = 0; j->miss && b < locales_local_count(); b++) {
        free(j->miss[b].pos);
        free(j->miss[b].row);
    }
    free(j->miss);
    free(j->fbase);
    free(j->bytes);
    free((void *)j->idx_here);
    if (reserved) registry_unreserve(reserved);
}

static void take_values(int c, void *ctx) {
    take_job *j = ctx;
    shard *o = &j->out->values->shards[c];
    misses *m = &j->miss[c - locales_local_first()];
    size_t w = j->out->values->itemsize;
    char *dst = o->data;
    for (uint64_t i = 0; i < o->count; i++) {
        uint64_t row = take_index(j, o->start + i);
        const void *p = elem_here(j->src->values, row);
        if (p)
            memcpy(dst + i * w, p, w);
        else if (miss_add(m, o->start + i, row))
            atomic_store(&j->failed, 1);
    }
}

/* A pdarray's elements (any dtype but bigint) at idx. */
static object *take_elements(const object *src, const object *idx, h5ark_error *err) {
    int L = locales_count(), first = locales_local_first(), T = locales_local_count();
    uint64_t reserved = 0;
    int64_t *rows = NULL;
    char *got = NULL;
    take_job j = {.src = src, .idx = idx};
    j.o0 = locales_block_start(idx->size, L, first);
    object *out = NULL;
    if (take_setup(&j, err) || index_block(&j, locales_block_start(idx->size, L, first + T),
                                           (int64_t **)&j.idx_here, &reserved, err))
        goto fail;
    out = object_new_pdarray(src->dtype, idx->size, err);
    if (ranks_agree(out ? 0 : -1, err)) goto fail;
    out->tag = src->tag;
    j.out = out;
    locales_run(take_values, &j);
    int rc = atomic_load(&j.failed) ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory") : 0;
    size_t w = out->values->itemsize;
    if (ranks_agree(rc, err) || gather_misses(&j, &rows, &reserved, err) ||
        registry_scratch_agreed(j.fbase[T] * w, (void **)&got, &reserved, err) ||
        groupby_fetch_rows(src->values, rows, j.fbase[T], got, err))
        goto fail;
    for (int b = 0; b < T; b++)
        for (uint64_t k = 0; k < j.miss[b].n; k++) {
            uint64_t pos = j.miss[b].pos[k];
            shard *o = &out->values->shards[first + b];
            memcpy((char *)o->data + (pos - o->start) * w, got + (j.fbase[b] + k) * w, w);
        }
    goto done;
fail:
    object_release(out);
    out = NULL;
done:
    free(rows);
    free(got);
    take_cleanup(&j, reserved);
    return out;
}

/* Output string i of a strings take held here: a source string, or the extra one at the
 * end; NULL p when another rank holds it. */
static strref take_string(const take_job *j, uint64_t i) {
    if (j->extra && i == j->count - 1) return (strref){j->extra, j->extra_len};
    uint64_t row = take_index(j, i);
    if (!elem_here(j->src->segments, row)) return (strref){NULL, row};
    return str_at(j->src, row);
}

static void take_count_bytes(int c, void *ctx) {
    take_job *j = ctx;
    misses *m = &j->miss[c - locales_local_first()];
    uint64_t lo = locales_block_start(j->count, locales_count(), c);
    uint64_t hi = locales_block_start(j->count, locales_count(), c + 1), total = 0;
    for (uint64_t i = lo; i < hi; i++) {
        strref s = take_string(j, i);
        if (s.p)
            total += s.len + 1;
        else if (miss_add(m, i, s.len)) /* s.len: the row */
            atomic_store(&j->failed, 1);
    }
    j->bytes[c] = total;
}

static void take_fill_strings(int c, void *ctx) {
    take_job *j = ctx;
    int b = c - locales_local_first();
    shard *seg = &j->out->segments->shards[c];
    shard *val = &j->out->values->shards[c];
    int64_t *off = seg->data;
    char *bytes = val->data;
    uint64_t pos = 0, k = j->fbase[b];
    for (uint64_t i = 0; i < seg->count; i++) {
        strref s = take_string(j, seg->start + i);
        if (!s.p) { /* the next miss, fetched */
            s = (strref){j->fbytes + j->foffs[k], j->foffs[k + 1] - j->foffs[k] - 1};
            k++;
        }
        off[i] = (int64_t)(val->start + pos);
        memcpy(bytes + pos, s.p, s.len);
        bytes[pos + s.len] = '\0';
        pos += s.len + 1;
    }
}

object *groupby_take_strings(const object *src, const object *idx, const char *extra,
                             h5ark_error *err) {
    int L = locales_count(), first = locales_local_first(), T = locales_local_count();
    take_job j = {.src = src, .idx = idx, .extra = extra, .extra_len = extra ? strlen(extra) : 0};
    uint64_t ntake = idx ? idx->size : src->size, reserved = 0, nbytes = 0;
    j.count = ntake + (extra ? 1 : 0);
    j.o0 = locales_block_start(j.count, L, first);
    uint64_t o1 = locales_block_start(j.count, L, first + T);
    int64_t *rows = NULL;
    uint64_t *offs = NULL;
    char *fetched = NULL;
    object *out = NULL;
    if (take_setup(&j, err) || index_block(&j,
                                           o1 < ntake     ? o1
                                           : ntake > j.o0 ? ntake
                                                          : j.o0,
                                           (int64_t **)&j.idx_here, &reserved, err))
        goto fail;
    locales_run(take_count_bytes, &j);
    int rc = atomic_load(&j.failed) ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory") : 0;
    if (ranks_agree(rc, err) || gather_misses(&j, &rows, &reserved, err) ||
        registry_scratch_agreed((j.fbase[T] + 1) * 8, (void **)&offs, &reserved, err) ||
        groupby_fetch_strings(src, (const uint64_t *)rows, j.fbase[T], offs, &fetched, &nbytes,
                              &reserved, err))
        goto fail;
    offs[j.fbase[T]] = nbytes;
    for (int b = 0; b < T; b++) /* the fetched strings' bytes to their locales */
        j.bytes[first + b] += offs[j.fbase[b + 1]] - offs[j.fbase[b]];
    if (ranks_allreduce_u64(j.bytes, (size_t)L, RANKS_SUM, err)) goto fail;
    out = object_new_strings(j.count, j.bytes, err);
    if (ranks_agree(out ? 0 : -1, err)) goto fail;
    j.out = out;
    j.fbytes = fetched;
    j.foffs = offs;
    locales_run(take_fill_strings, &j);
    goto done;
fail:
    object_release(out);
    out = NULL;
done:
    free(rows);
    free(offs);
    free(fetched);
    take_cleanup(&j, reserved);
    return out;
}

/* A bigint's rows: each limb's, in a new bigint of the same max_bits. */
static object *take_bigint(const object *src, const object *idx, h5ark_error *err) {
    object *out = object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, idx->size, err);
    int rc = out ? 0 : -1;
    if (out) {
        out->max_bits = src->max_bits;
        out->tag = src->tag;
    }
    for (size_t i = 0; rc == 0 && i < src->ncomponents; i++) {
        object *limb = groupby_take(src->components[i].obj, idx, err);
        rc = limb && object_add_component(out, src->components[i].name, limb, err) == 0 ? 0 : -1;
        object_release(limb);
    }
    if (rc) {
        object_release(out);
        return NULL;
    }
    return out;
}

object *groupby_take(const object *src, const object *idx, h5ark_error *err) {
    if (src->objtype == H5ARK_PDARRAY && src->dtype == H5ARK_BIGINT)
        return take_bigint(src, idx, err);
    if (src->objtype == H5ARK_STRINGS) return groupby_take_strings(src, idx, NULL, err);
    if (src->objtype == H5ARK_CATEGORICAL) {
        object *categories = object_component_get(src, "categories");
        if (!categories) {
            h5ark_fail(err, H5ARK_TYPE_ERROR, "categorical '%s' has no categories",
                       src->name ? src->name : "");
            return NULL;
        }
        object *codes = groupby_take(object_component_get(src, "codes"), idx, err);
        if (!codes) return NULL;
        object *cat = object_new_composite(H5ARK_CATEGORICAL, H5ARK_STRING, codes->size, err);
        int rc = !cat || object_add_component(cat, "codes", codes, err) ||
                 object_add_component(cat, "categories", categories, err);
        if (!rc && src->na_value && !(cat->na_value = strdup(src->na_value)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        const h5ark_value *na_code = h5ark_value_get(src->extra, "na_code");
        if (!rc && na_code) rc = object_set_extra(cat, "na_code", h5ark_value_copy(na_code), err);
        object_release(codes);
        if (rc) {
            object_release(cat);
            return NULL;
        }
        return cat;
    }
    if (!src->values) { /* metadata: the same answer on every rank */
        ranks_not_yet(err, "taking the rows of a %s", h5ark_objtype_name(src->objtype));
        return NULL;
    }
    return take_elements(src, idx, err);
}

typedef struct {
    const object *src;
    strref s;
    _Atomic uint64_t found;
} find_job;

static void find_shard(int b, void *ctx) {
    find_job *j = ctx;
    const shard *seg = &j->src->segments->shards[b];
    for (uint64_t i = 0; i < seg->count; i++)
        if (strref_cmp(str_at(j->src, seg->start + i), j->s) == 0) {
            locales_note_first(&j->found, seg->start + i);
            return;
        }
}

uint64_t groupby_find_string(const object *src, const char *s) {
    find_job j = {.src = src, .s = {s, strlen(s)}};
    atomic_init(&j.found, UINT64_MAX);
    locales_run(find_shard, &j);
    return atomic_load(&j.found);
}
