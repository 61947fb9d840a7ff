/* Rank 0's layout of a write, shared with every rank (write_files.h): the planned regions
 * travel as numbers in a list of the items' darrays, which every rank makes alike. */
#include "write_files.h"

#include "dist/ranks.h"
#include "dist/spmd.h"
#include "layout.h"
#include "schema.h"
#include "sysio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every darray of the items, in an order every rank sees alike (every rank holds the same
 * metadata): a planned region's source travels as its number in this list. */
typedef struct {
    const darray **v;
    size_t n, cap;
} darray_list;

static int list_darrays(const object *obj, darray_list *l) {
    const darray *mine[2] = {obj->values, obj->segments};
    for (int k = 0; k < 2; k++) {
        if (!mine[k]) continue;
        const darray **v = grow_array(l->v, l->n, &l->cap, sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->v[l->n++] = mine[k];
    }
    for (size_t i = 0; i < obj->ncomponents; i++)
        if (list_darrays(obj->components[i].obj, l)) return -1;
    return 0;
}

typedef struct {
    uint64_t file, locale, src, first, nbytes, offset;
    int64_t rebase;
} region_wire;

typedef struct {
    uint64_t file, locale, dset, src, first, count, elems, at;
    int64_t rebase;
} chunk_wire;

typedef struct {
    out_file *of;
    int nfiles;
    write_plan *plan;
    darray_list dl;
} share_job;

static size_t darray_number(const darray_list *dl, const darray *a) {
    size_t k = 0;
    while (k < dl->n && dl->v[k] != a)
        k++;
    return k;
}

static h5ark_value *encode_plan(void *ctx, h5ark_error *err) {
    const share_job *sj = ctx;
    const out_file *of = sj->of;
    int nfiles = sj->nfiles;
    const write_plan *plan = sj->plan;
    const darray_list *dl = &sj->dl;
    h5ark_value *v = h5ark_value_map(), *tmp = h5ark_value_array(), *rel = h5ark_value_array();
    region_wire *w = sysio.calloc(plan->n ? plan->n : 1, sizeof *w);
    chunk_wire *cw = sysio.calloc(plan->nchunks ? plan->nchunks : 1, sizeof *cw);
    bool ok = v && tmp && rel && w && cw;
    for (int i = 0; ok && i < nfiles; i++)
        ok = h5ark_value_push(tmp, h5ark_value_str(of[i].tmp)) == 0 &&
             h5ark_value_push(rel, h5ark_value_str(of[i].rel)) == 0;
    for (size_t i = 0; ok && i < plan->n; i++) {
        const write_region *r = &plan->v[i];
        size_t k = darray_number(dl, r->src);
        ok = k < dl->n;
        w[i] = (region_wire){(uint64_t)r->file, (uint64_t)r->locale, k,        r->first,
                             r->nbytes,         r->offset,           r->rebase};
    }
    if (ok) ok = h5ark_value_set(v, "tmp", tmp) == 0, tmp = NULL;
    if (ok) ok = h5ark_value_set(v, "rel", rel) == 0, rel = NULL;
    for (size_t i = 0; ok && i < plan->nchunks; i++) {
        const write_chunk *c = &plan->chunks[i];
        size_t k = darray_number(dl, c->src);
        ok = k < dl->n;
        cw[i] = (chunk_wire){
            (uint64_t)c->file, (uint64_t)c->locale, c->dset, k, c->first, c->count, c->elems, c->at,
            c->rebase};
    }
    if (ok) ok = h5ark_value_set(v, "regions", h5ark_value_bin(w, plan->n * sizeof *w)) == 0;
    if (ok) ok = h5ark_value_set(v, "chunks", h5ark_value_bin(cw, plan->nchunks * sizeof *cw)) == 0;
    free(w);
    free(cw);
    h5ark_value_destroy(&tmp);
    h5ark_value_destroy(&rel);
    if (!ok) {
        h5ark_value_destroy(&v);
        spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory encoding a value");
    }
    return v;
}

static int decode_plan(const h5ark_value *v, void *ctx, h5ark_error *err) {
    share_job *sj = ctx;
    const h5ark_value *tmp = h5ark_value_get(v, "tmp"), *rel = h5ark_value_get(v, "rel");
    const h5ark_value *regions = h5ark_value_get(v, "regions");
    const darray_list *dl = &sj->dl;
    write_plan *plan = sj->plan;
    out_file *of = sj->of;
    size_t n = h5ark_value_len(tmp);
    if (n != (size_t)sj->nfiles)
        return h5ark_fail(err, H5ARK_INTERNAL, "rank 0 laid out %zu files, not %d", n, sj->nfiles);
    for (size_t i = 0; i < n; i++) {
        snprintf(of[i].tmp, sizeof of[i].tmp, "%s", h5ark_value_at(tmp, i)->as.s.ptr);
        snprintf(of[i].rel, sizeof of[i].rel, "%s", h5ark_value_at(rel, i)->as.s.ptr);
        of[i].h5 = H5I_INVALID_HID;
    }
    const region_wire *w = (const region_wire *)regions->as.s.ptr;
    size_t nw = regions->as.s.len / sizeof *w;
    for (size_t i = 0; i < nw; i++) {
        region_wire r;
        memcpy(&r, &w[i], sizeof r); /* the bytes need not be aligned */
        if (r.src >= dl->n || r.file >= n || r.locale >= (uint64_t)locales_count())
            return h5ark_fail(err, H5ARK_INTERNAL, "a region of rank 0's plan is unknown");
        if (!locales_is_local((int)r.locale)) continue;
        const darray *a = dl->v[r.src];
        const shard *sh = &a->shards[r.locale];
        write_region out = {.file = (int)r.file,
                            .locale = (int)r.locale,
                            .data = (const char *)sh->data + (r.first - sh->start) * a->itemsize,
                            .nbytes = r.nbytes,
                            .offset = r.offset,
                            .rebase = r.rebase,
                            .src = a,
                            .first = r.first};
        if (write_plan_add(plan, &out, err)) return -1;
    }
    /* every chunk, not only this rank's: each rank works out the same exchanges from them */
    const h5ark_value *chunks = h5ark_value_get(v, "chunks");
    const chunk_wire *cw = (const chunk_wire *)chunks->as.s.ptr;
    size_t nc = chunks->as.s.len / sizeof *cw;
    for (size_t i = 0; i < nc; i++) {
        chunk_wire c;
        memcpy(&c, &cw[i], sizeof c);
        if (c.src >= dl->n || c.file >= n || c.locale >= (uint64_t)locales_count())
            return h5ark_fail(err, H5ARK_INTERNAL, "a chunk of rank 0's plan is unknown");
        write_chunk *g = grow_array(plan->chunks, plan->nchunks, &plan->chunks_cap, sizeof *g);
        if (!g) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        plan->chunks = g;
        plan->chunks[plan->nchunks++] = (write_chunk){.file = (int)c.file,
                                                      .locale = (int)c.locale,
                                                      .dset = c.dset,
                                                      .src = dl->v[c.src],
                                                      .first = c.first,
                                                      .count = c.count,
                                                      .elems = c.elems,
                                                      .at = c.at,
                                                      .rebase = c.rebase};
    }
    return 0;
}

int write_share_plan(const storage_item *items, size_t nitems, out_file *of, int nfiles,
                     write_plan *plan, h5ark_error *err) {
    share_job sj = {.of = of, .nfiles = nfiles, .plan = plan};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nitems; i++)
        if (list_darrays(items[i].obj, &sj.dl))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    if (rc == 0) rc = spmd_share_value(encode_plan, decode_plan, &sj, err);
    free(sj.dl.v);
    return rc;
}

/* Rank 0 lays the files out from metadata, which every rank holds, and from the few
 * elements that say where a SegArray's per-locale files start, fetched first
 * (write_fetch_layout). */

typedef struct {
    fetched_int64 *v;
    size_t n, cap;
} fetched_list;

static int fetch_add(fetched_list *l, const darray *a, uint64_t i) {
    for (size_t k = 0; k < l->n; k++)
        if (l->v[k].a == a && l->v[k].i == i) return 0;
    fetched_int64 *v = grow_array(l->v, l->n, &l->cap, sizeof *v);
    if (!v) return -1;
    l->v = v;
    const shard *s = &a->shards[darray_shard_of(a, i)];
    l->v[l->n++] = (fetched_int64){
        .a = a, .i = i, .v = s->data ? ((const int64_t *)s->data)[i - s->start] : 0};
    return 0;
}

/* Pass 0: every SegArray's segment at each locale's first row. Pass 1 (after pass 0's
 * values are known): for a SegArray of Strings, the Strings' byte offset at each of those
 * segments, which is where a file's bytes start. */
static int list_layout(const object *obj, int pass, const fetched_list *known, fetched_list *l) {
    const object *seg =
        obj->objtype == H5ARK_SEGARRAY ? object_component_get(obj, CHILD_SEGMENTS) : NULL;
    const object *vals = seg ? object_component_get(obj, CHILD_VALUES) : NULL;
    const darray *a = seg ? seg->values : NULL;
    for (int b = 0; a && b < a->nshards; b++) {
        uint64_t row = a->shards[b].start;
        if (row == 0 || row >= a->size) continue; /* 0, or no row */
        if (pass == 0 && fetch_add(l, a, row)) return -1;
        if (pass == 1 && vals && vals->objtype == H5ARK_STRINGS) {
            for (size_t k = 0; k < known->n; k++)
                if (known->v[k].a == a && known->v[k].i == row && known->v[k].v > 0 &&
                    (uint64_t)known->v[k].v < vals->size &&
                    fetch_add(l, vals->segments, (uint64_t)known->v[k].v))
                    return -1;
        }
    }
    for (size_t i = 0; i < obj->ncomponents; i++)
        if (list_layout(obj->components[i].obj, pass, known, l)) return -1;
    return 0;
}

/* One pass: list the elements, then each comes from the rank holding it (an allreduce:
 * the others give 0). Every rank calls it. */
static int fetch_pass(const storage_item *items, size_t nitems, int pass, const fetched_list *known,
                      fetched_list *l, h5ark_error *err) {
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nitems; i++)
        if (list_layout(items[i].obj, pass, known, l))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t *v = rc == 0 ? sysio.calloc(l->n + 1, sizeof *v) : NULL;
    if (rc == 0 && !v) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    if (rc == 0 && l->n > 0) {
        for (size_t i = 0; i < l->n; i++)
            v[i] = (uint64_t)l->v[i].v;
        rc = ranks_allreduce_u64(v, l->n, RANKS_SUM, err);
        for (size_t i = 0; rc == 0 && i < l->n; i++)
            l->v[i].v = (int64_t)v[i];
    }
    free(v);
    return rc;
}

int write_fetch_layout(const storage_item *items, size_t nitems, write_plan *plan,
                       h5ark_error *err) {
    fetched_list seg = {0}, off = {0};
    int rc = fetch_pass(items, nitems, 0, NULL, &seg, err);
    if (rc == 0) rc = fetch_pass(items, nitems, 1, &seg, &off, err);
    fetched_int64 *all = NULL;
    if (rc == 0 && !(all = sysio.calloc(seg.n + off.n + 1, sizeof *all)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) {
        if (seg.n) memcpy(all, seg.v, seg.n * sizeof *all);
        if (off.n) memcpy(all + seg.n, off.v, off.n * sizeof *all);
    }
    free(seg.v);
    free(off.v);
    /* the memory is local: whether every rank has it is agreed, as rank 0 alone uses it */
    rc = ranks_agree(rc, err);
    if (rc) {
        free(all);
        return -1;
    }
    plan->fetched = all;
    plan->nfetched = seg.n + off.n;
    return 0;
}
