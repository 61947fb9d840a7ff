/* Distributed arrays and objects (see object.h). */
#include "object.h"

#include "locales.h"
#include "dist/place.h"
#include "dist/spmd.h"
#include "dist/ranks.h"
#include "registry.h"
#include "shardcache.h"
#include "sysio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    darray *a;
    atomic_int failed;
} alloc_job;

static void alloc_shard(int locale, void *ctx) {
    alloc_job *job = ctx;
    shard *s = &job->a->shards[locale];
    if (s->count == 0 || s->data) return;
    s->data = sysio.malloc(s->count * job->a->itemsize);
    if (!s->data) atomic_store(&job->failed, 1);
}

darray *darray_new(h5ark_dtype dtype, uint64_t size, const uint64_t *counts, h5ark_error *err) {
    int n = locales_count();
    size_t itemsize = h5ark_dtype_size(dtype);
    if (size > OBJECT_MAX_ELEMENTS) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "%llu elements is more than the limit of %llu",
                   (unsigned long long)size, (unsigned long long)OBJECT_MAX_ELEMENTS);
        return NULL;
    }
    /* With several ranks each rank accounts (and holds) only its own shards' bytes; the
     * owner is charged every rank's, the same on every rank. */
    uint64_t bytes = 0, start = 0;
    for (int b = 0; b < n; b++) {
        uint64_t count = counts ? counts[b] : locales_block_start(size, n, b + 1) - start;
        if (locales_is_local(b)) bytes += count * itemsize;
        start += count;
    }
    struct registry_account *account = NULL;
    int rc = registry_charge(start * itemsize, &account, err);
    /* in a call, every rank goes on or none does (the lowest failing rank's error) */
    if (rc == 0 && (rc = registry_reserve_only(bytes, err)) != 0) {
        registry_uncharge(account, start * itemsize);
        spmd_name_rank(-1, err); /* a quota is the same on every rank: no rank named */
    }
    bool reserved = rc == 0;
    darray *a = rc == 0 ? calloc(1, sizeof *a) : NULL;
    shard *shards = rc == 0 ? calloc((size_t)n, sizeof *shards) : NULL;
    if (rc == 0 && (!a || !shards)) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    if (rc != 0) {
        free(a);
        free(shards);
        if (reserved) {
            registry_unreserve(bytes);
            registry_uncharge(account, start * itemsize);
        }
        return NULL;
    }
    atomic_init(&a->refs, 1);
    a->account = account;
    a->charged = start * itemsize;
    a->dtype = dtype;
    a->itemsize = itemsize;
    a->size = size;
    a->nshards = n;
    a->shards = shards;
    a->reserved = bytes;
    start = 0;
    for (int b = 0; b < n; b++) {
        uint64_t count = counts ? counts[b] : locales_block_start(size, n, b + 1) - start;
        shards[b].start = start;
        shards[b].count = count;
        start += count;
    }
    if (start != size) {
        darray_free(a);
        h5ark_fail(err, H5ARK_INTERNAL, "shard counts add up to %llu, not %llu",
                   (unsigned long long)start, (unsigned long long)size);
        return NULL;
    }
    /* Reuse cached blocks first, then let the cache shrink to make room for the rest. */
    bool fresh = false;
    for (int b = 0; b < n; b++) {
        if (!locales_is_local(b)) continue; /* another rank's shard */
        if (shards[b].count) shards[b].data = shardcache_take(b, shards[b].count * itemsize);
        fresh |= shards[b].count && !shards[b].data;
    }
    registry_make_room();
    alloc_job job = {.a = a};
    if (fresh) locales_run(alloc_shard, &job);
    rc = 0;
    if (atomic_load(&job.failed)) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory allocating %llu bytes",
                   (unsigned long long)bytes);
        rc = spmd_name_rank(-1, err);
    }
    if (ranks_agree(rc, err) != 0) {
        darray_free(a);
        return NULL;
    }
    return a;
}

darray *darray_ref(darray *a) {
    if (a) atomic_fetch_add(&a->refs, 1);
    return a;
}

void darray_free(darray *a) {
    if (!a || atomic_fetch_sub(&a->refs, 1) != 1) return;
    /* cached before unreserving, so the books never show free bytes that are still held */
    for (int b = 0; b < a->nshards; b++)
        shardcache_give(b, a->shards[b].data, a->shards[b].count * a->itemsize);
    free(a->shards);
    registry_unreserve(a->reserved);
    registry_uncharge(a->account, a->charged);
    free(a);
}

int darray_shard_of(const darray *a, uint64_t i) {
    int lo = 0, hi = a->nshards;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (a->shards[mid].start <= i)
            lo = mid;
        else
            hi = mid;
    }
    /* skip empty shards that share the start */
    while (lo + 1 < a->nshards && a->shards[lo].count == 0 && a->shards[lo + 1].start <= i)
        lo++;
    return lo;
}

static object *object_alloc(h5ark_objtype objtype, h5ark_dtype dtype, uint64_t size,
                            h5ark_error *err) {
    object *obj = calloc(1, sizeof *obj);
    if (!obj) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    atomic_init(&obj->refs, 1);
    obj->objtype = objtype;
    obj->dtype = dtype;
    obj->size = size;
    obj->ndim = 1;
    obj->shape[0] = size;
    return obj;
}

object *object_new_pdarray(h5ark_dtype dtype, uint64_t size, h5ark_error *err) {
    if (dtype == H5ARK_STRING) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "a pdarray cannot have dtype str");
        return NULL;
    }
    object *obj = object_alloc(H5ARK_PDARRAY, dtype, size, err);
    if (!obj) return NULL;
    obj->values = darray_new(dtype, size, NULL, err);
    if (!obj->values) {
        object_release(obj);
        return NULL;
    }
    return obj;
}

object *object_new_pdarray_counts(h5ark_dtype dtype, uint64_t size, const uint64_t *counts,
                                  h5ark_error *err) {
    if (dtype == H5ARK_STRING) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "a pdarray cannot have dtype str");
        return NULL;
    }
    object *obj = object_alloc(H5ARK_PDARRAY, dtype, size, err);
    if (!obj) return NULL;
    obj->values = darray_new(dtype, size, counts, err);
    if (!obj->values) {
        object_release(obj);
        return NULL;
    }
    return obj;
}

object *object_new_strings(uint64_t nstrings, const uint64_t *byte_counts, h5ark_error *err) {
    object *obj = object_alloc(H5ARK_STRINGS, H5ARK_STRING, nstrings, err);
    if (!obj) return NULL;
    uint64_t total = 0;
    for (int b = 0; b < locales_count(); b++) {
        if (byte_counts[b] > OBJECT_MAX_ELEMENTS - total) {
            object_release(obj);
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "strings larger than %llu bytes",
                       (unsigned long long)OBJECT_MAX_ELEMENTS);
            return NULL;
        }
        total += byte_counts[b];
    }
    obj->segments = darray_new(H5ARK_INT64, nstrings, NULL, err);
    if (obj->segments) obj->values = darray_new(H5ARK_UINT8, total, byte_counts, err);
    if (!obj->values) {
        object_release(obj);
        return NULL;
    }
    return obj;
}

object *object_new_composite(h5ark_objtype objtype, h5ark_dtype dtype, uint64_t size,
                             h5ark_error *err) {
    return object_alloc(objtype, dtype, size, err);
}

int object_add_component(object *obj, const char *name, object *child, h5ark_error *err) {
    object_component *c =
        realloc(obj->components, (obj->ncomponents + 1) * sizeof *obj->components);
    if (!c) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    obj->components = c;
    char *copy = strdup(name);
    if (!copy) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    c[obj->ncomponents++] = (object_component){copy, object_ref(child)};
    return 0;
}

object *object_component_get(const object *obj, const char *name) {
    for (size_t i = 0; i < obj->ncomponents; i++)
        if (strcmp(obj->components[i].name, name) == 0) return obj->components[i].obj;
    return NULL;
}

int object_set_extra(object *obj, const char *key, h5ark_value *val, h5ark_error *err) {
    if (!obj->extra && !(obj->extra = h5ark_value_map())) {
        h5ark_value_destroy(&val);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (h5ark_value_set(obj->extra, key, val))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return 0;
}

object *object_twin(const object *obj, h5ark_error *err) {
    object *t = object_alloc(obj->objtype, obj->dtype, obj->size, err);
    if (!t) return NULL;
    t->ndim = obj->ndim;
    memcpy(t->shape, obj->shape, sizeof t->shape);
    t->tag = obj->tag;
    t->max_bits = obj->max_bits;
    t->values = darray_ref(obj->values);
    t->segments = darray_ref(obj->segments);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < obj->ncomponents; i++)
        rc = object_add_component(t, obj->components[i].name, obj->components[i].obj, err);
    if (rc == 0 && obj->na_value && !(t->na_value = strdup(obj->na_value)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && obj->extra && !(t->extra = h5ark_value_copy(obj->extra)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc) {
        object_release(t);
        return NULL;
    }
    return t;
}

object *object_ref(object *obj) {
    if (obj) atomic_fetch_add(&obj->refs, 1);
    return obj;
}

void object_release(object *obj) {
    if (!obj || atomic_fetch_sub(&obj->refs, 1) != 1) return;
    darray_free(obj->values);
    darray_free(obj->segments);
    for (size_t i = 0; i < obj->ncomponents; i++) {
        free(obj->components[i].name);
        object_release(obj->components[i].obj);
    }
    free(obj->components);
    free(obj->na_value);
    h5ark_value_destroy(&obj->extra);
    free(obj->scratch);
    if (obj->scratch_reserved) registry_unreserve(obj->scratch_reserved);
    free(obj->name);
    free(obj);
}

uint64_t object_nbytes(const object *obj) {
    uint64_t n = 0;
    if (obj->values) n += obj->values->size * obj->values->itemsize;
    if (obj->segments) n += obj->segments->size * obj->segments->itemsize;
    for (size_t i = 0; i < obj->ncomponents; i++)
        n += object_nbytes(obj->components[i].obj);
    return n;
}

/* Bytes per element as the descriptor reports them: a bigint's limbs together. */
static uint64_t itemsize_of(const object *obj) {
    if (obj->dtype == H5ARK_BIGINT) return 8 * (uint64_t)obj->ncomponents;
    return h5ark_dtype_size(obj->dtype);
}

h5ark_value *object_describe_as(const object *obj, const char *name) {
    h5ark_value *d = h5ark_value_map();
    h5ark_value *shape = h5ark_value_array();
    for (unsigned i = 0; i < obj->ndim; i++)
        h5ark_value_push(shape, h5ark_value_uint(obj->shape[i]));
    int rc = h5ark_value_set(d, "name", h5ark_value_str(name ? name : ""));
    if (obj->owner) rc |= h5ark_value_set(d, "owner", h5ark_value_str(obj->owner));
    if (obj->registered) rc |= h5ark_value_set(d, "registered", h5ark_value_bool(true));
    rc |= h5ark_value_set(d, "objtype", h5ark_value_str(h5ark_objtype_name(obj->objtype)));
    rc |= h5ark_value_set(d, "dtype", h5ark_value_str(h5ark_dtype_name(obj->dtype)));
    rc |= h5ark_value_set(d, "size", h5ark_value_uint(obj->size));
    rc |= h5ark_value_set(d, "shape", shape);
    rc |= h5ark_value_set(d, "ndim", h5ark_value_uint(obj->ndim));
    rc |= h5ark_value_set(d, "itemsize", h5ark_value_uint(itemsize_of(obj)));
    rc |= h5ark_value_set(d, "nbytes", h5ark_value_uint(object_nbytes(obj)));
    if (obj->objtype == H5ARK_STRINGS)
        rc |= h5ark_value_set(d, "bytes", h5ark_value_uint(obj->values ? obj->values->size : 0));
    if (obj->tag) rc |= h5ark_value_set(d, "tag", h5ark_value_str(obj->tag));
    if (obj->na_value) rc |= h5ark_value_set(d, "na_value", h5ark_value_str(obj->na_value));
    if (obj->dtype == H5ARK_BIGINT)
        rc |= h5ark_value_set(d, "max_bits", h5ark_value_int(obj->max_bits));
    for (size_t i = 0; obj->extra && i < obj->extra->as.m.len; i++)
        rc |= h5ark_value_set(d, obj->extra->as.m.keys[i],
                              h5ark_value_copy(obj->extra->as.m.vals[i]));
    if (obj->ncomponents) {
        h5ark_value *comps = h5ark_value_map();
        for (size_t i = 0; i < obj->ncomponents; i++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", name ? name : "", obj->components[i].name);
            rc |= h5ark_value_set(comps, obj->components[i].name,
                                  object_describe_as(obj->components[i].obj, path));
        }
        rc |= h5ark_value_set(d, "components", comps);
    }
    if (rc) h5ark_value_destroy(&d);
    return d;
}

h5ark_value *object_describe(const object *obj) {
    char name[REGISTRY_MAX_NAME * 2];
    return object_describe_as(obj, registry_name_for(obj, name));
}

/* ---- an object whole on rank 0 -------------------------------------------------------- */

/* A darray of object_gather_whole: a copy whose other ranks' shards point into buf. */
typedef struct {
    darray a;
    void *buf;
} whole_darray;

static void whole_darray_free(darray *a) {
    if (!a) return;
    whole_darray *w = (whole_darray *)a;
    free(w->buf);
    registry_unreserve(a->reserved);
    free(a->shards);
    free(w);
}

/* Every rank: the other ranks' shards of a gathered to rank 0, into *out there (a copy of a
 * sharing rank 0's own shards; out is NULL on the other ranks). */
static int gather_darray(const darray *a, darray **out, h5ark_error *err) {
    int rc = 0;
    /* per rank (a rank has one locale or more) */
    int L = locales_count() > a->nshards ? locales_count() : a->nshards;
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    h5ark_span *mine = calloc((size_t)a->nshards + 1, sizeof *mine);
    size_t nmine = 0;
    whole_darray *w = NULL;
    if (!counts || !mine) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t remote = 0;
    for (int b = 0; rc == 0 && b < a->nshards; b++) {
        uint64_t bytes = a->shards[b].count * a->itemsize;
        int r = locales_rank_of(b);
        if (r == 0) continue;
        counts[r] += bytes;
        remote += bytes;
        if (locales_is_local(b) && bytes) mine[nmine++] = (h5ark_span){a->shards[b].data, bytes};
    }
    if (rc == 0 && out) {
        w = calloc(1, sizeof *w);
        if (!w || !(w->a.shards = malloc((size_t)a->nshards * sizeof *a->shards)) ||
            !(w->buf = malloc(remote ? remote : 1))) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory gathering %llu bytes",
                       (unsigned long long)remote);
            rc = spmd_name_rank(-1, err);
        } else if ((rc = registry_reserve(remote, err)) == 0) {
            w->a.reserved = remote;
        }
    }
    rc = ranks_agree(rc, err);
    if (rc == 0 && remote) rc = ranks_gatherv(mine, nmine, w ? w->buf : NULL, counts, err);
    if (rc == 0 && w) {
        /* the ranks' shards are in shard order (a rank's locales are consecutive) */
        w->a.dtype = a->dtype;
        w->a.itemsize = a->itemsize;
        w->a.size = a->size;
        w->a.nshards = a->nshards;
        uint64_t off = 0;
        for (int b = 0; b < a->nshards; b++) {
            w->a.shards[b] = a->shards[b];
            if (locales_rank_of(b) == 0) continue;
            w->a.shards[b].data = a->shards[b].count ? (char *)w->buf + off : NULL;
            off += a->shards[b].count * a->itemsize;
        }
        *out = &w->a;
        w = NULL;
    }
    if (w) {
        free(w->a.shards);
        free(w->buf);
        registry_unreserve(w->a.reserved);
        free(w);
    }
    free(counts);
    free(mine);
    return rc;
}

/* Every rank, in the same order: obj's darrays and components'; *out built on rank 0. */
static int gather_object(const object *obj, object **out, h5ark_error *err) {
    object *w = NULL;
    int rc = place_root_calloc(sizeof *w, (void **)&w, err);
    if (rc == 0 && w) { /* rank 0 */
        *w = *obj;      /* the metadata, shared: the copy frees only what it made */
        w->refs = 1;
        w->values = w->segments = NULL;
        w->components = NULL;
        w->ncomponents = 0;
        w->scratch = NULL;
        w->scratch_reserved = 0;
        if (obj->ncomponents && !(w->components = calloc(obj->ncomponents, sizeof *w->components)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        *out = w;
    }
    rc = ranks_agree(rc, err);
    if (rc == 0 && obj->values) rc = gather_darray(obj->values, w ? &w->values : NULL, err);
    if (rc == 0 && obj->segments) rc = gather_darray(obj->segments, w ? &w->segments : NULL, err);
    for (size_t i = 0; rc == 0 && i < obj->ncomponents; i++) {
        rc = gather_object(obj->components[i].obj, w ? &w->components[i].obj : NULL, err);
        if (w) {
            w->components[i].name = obj->components[i].name;
            w->ncomponents = i + 1;
        }
    }
    return rc;
}

void object_whole_free(object *whole) {
    if (!whole) return;
    whole_darray_free(whole->values);
    whole_darray_free(whole->segments);
    for (size_t i = 0; i < whole->ncomponents; i++)
        object_whole_free(whole->components[i].obj);
    free(whole->components);
    free(whole);
}

int object_gather_whole(const object *obj, object **whole, h5ark_error *err) {
    *whole = NULL;
    int rc = gather_object(obj, whole, err);
    if (rc) {
        object_whole_free(*whole);
        *whole = NULL;
    }
    return rc;
}
