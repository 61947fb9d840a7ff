/* groupby: making a groupby at any rank count, and checking one (see groupby.h).
 *
 * 1. Each rank sorts its own rows on its locales (groupby_sort.c): the whole sort at one
 *    rank. With several, the ranks' sorted rows cross as records in dist/sort.h's sample
 *    sort, which hands each rank its block of the permutation, group starts marked.
 * 2. Group counts give every group its index; each group's start and first row go to the
 *    place of `segments` and `unique_key_idx` that holds it (nothing moves at one rank).
 * Reads cross locales freely once a fan-out has finished; each shard is written only by its
 * own locale, except the scatter that builds the codes of a categorical. */
#include "groupby.h"
#include "groupby_rows.h"

#include "progress.h"
#include "registry.h"
#include "dist/ranks.h"
#include "dist/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int groupby_check_key(const object *key, const char *what, h5ark_error *err) {
    if (key->objtype == H5ARK_STRINGS) return 0;
    if (key->objtype == H5ARK_CATEGORICAL) {
        const object *codes = object_component_get(key, "codes");
        if (!codes || codes->objtype != H5ARK_PDARRAY || codes->dtype != H5ARK_INT64 ||
            codes->size != key->size)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "%s: categorical '%s' has no int64 'codes' of its length", what,
                              key->name ? key->name : "");
        return 0;
    }
    if (key->objtype == H5ARK_PDARRAY && key->dtype < H5ARK_STRING && key->values) return 0;
    return h5ark_fail(err, H5ARK_TYPE_ERROR,
                      "%s: '%s' is a %s of dtype %s; keys must be pdarrays of a numeric or bool "
                      "dtype, strings or categoricals",
                      what, key->name ? key->name : "", h5ark_objtype_name(key->objtype),
                      h5ark_dtype_name(key->dtype));
}

/* The GroupBy object from its parts (its components take references; the caller keeps
 * its own): Arkouda's components and the group count, the same at one rank or several. */
static object *groupby_assemble(uint64_t n, object *perm, object *segments, object *uik,
                                object *const *keys, size_t nkeys, uint64_t ngroups,
                                h5ark_error *err) {
    object *gb = object_new_composite(H5ARK_GROUPBY, H5ARK_INT64, n, err);
    if (!gb) return NULL;
    int rc = object_add_component(gb, "permutation", perm, err) ||
             object_add_component(gb, "segments", segments, err) ||
             object_add_component(gb, "unique_key_idx", uik, err);
    for (size_t k = 0; k < nkeys && !rc; k++) {
        char name[32];
        snprintf(name, sizeof name, "KEY_%zu", k);
        rc = object_add_component(gb, name, keys[k], err);
    }
    if (!rc) rc = object_set_extra(gb, "ngroups", h5ark_value_uint(ngroups), err);
    if (rc) object_release(gb);
    return rc ? NULL : gb;
}

/* ---- records: this rank's sorted rows as they cross to other ranks ----
 *
 * Numeric keys: a record is the keys' encodings, then the row (native words). Keys with
 * strings: a record is its length (a native uint64) then its bytes: each key in turn, a
 * numeric key as its encoding in 8 big-endian bytes, a strings key as its bytes with each
 * NUL written as NUL 0x01, then NUL NUL (so no key's bytes are a prefix of another's, and a
 * string sorts before every longer one it begins), then the row in 8 big-endian bytes.
 * memcmp of two records' bytes (the shorter first when one is a prefix of the other) is
 * then the order (key tuple, row) of the local sort, and two rows have the same keys
 * exactly when their records agree up to the row. */

static void put_be64(char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--) {
        p[i] = (char)(v & 0xff);
        v >>= 8;
    }
}

static uint64_t get_be64(const char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (uint8_t)p[i];
    return v;
}

/* Bytes of row's record after its length; the record written at out when out is not NULL. */
static uint64_t brec_make(const object *const *src, size_t nkeys, uint64_t row, char *out) {
    uint64_t len = 8; /* the row */
    char *q = out ? out + 8 : NULL;
    for (size_t k = 0; k < nkeys; k++) {
        const object *s = src[k];
        if (s->objtype == H5ARK_STRINGS) {
            strref t = str_at(s, row);
            /* the bytes between NULs copied whole, each NUL as NUL 0x01, then NUL NUL */
            for (const char *p = t.p, *end = t.p + t.len;;) {
                const char *z = p < end ? memchr(p, '\0', (size_t)(end - p)) : NULL;
                size_t run = (size_t)((z ? z : end) - p);
                if (q) {
                    memcpy(q, p, run);
                    q[run] = '\0';
                    q[run + 1] = z ? 1 : 0;
                    q += run + 2;
                }
                len += run + 2;
                if (!z) break;
                p = z + 1;
            }
        } else {
            if (q) {
                put_be64(q, enc_elem(span_at(s->values, row, NULL), s->values->dtype));
                q += 8;
            }
            len += 8;
        }
    }
    if (q) {
        put_be64(q, row);
        memcpy(out, &len, 8);
    }
    return len;
}

/* ---- making a groupby ---- */

typedef struct {
    sort_plan p;
    const object **src; /* what each key sorts by, holding this rank's rows */
    size_t nkeys;
    bool bytes;         /* records of varying length (a strings key) */
    uint64_t lo, hi;    /* this rank's rows */
    uint64_t *reserved; /* scratch reserved, for registry_unreserve */
} make_job;

static int take_scratch(uint64_t bytes, void **p, void *ctx, h5ark_error *err) {
    return registry_scratch_agreed(bytes, p, ctx, err);
}

static int make_sort_local(void *ctx, h5ark_error *err) {
    make_job *j = ctx;
    return sort_plan_run(&j->p, err);
}

/* The row at this rank's sorted place i (its own permutation shards). */
static uint64_t sorted_row(const make_job *j, uint64_t i) {
    return (uint64_t)get_i64(j->p.perm->values, j->lo + i);
}

static int make_pack(void *ctx, void **rec, uint64_t *n, uint64_t *bytes, h5ark_error *err) {
    make_job *j = ctx;
    uint64_t nloc = j->hi - j->lo, total = 0;
    size_t w = j->nkeys + 1;
    if (!j->bytes) {
        total = nloc * w * 8;
    } else {
        for (uint64_t i = 0; i < nloc; i++)
            total += 8 + brec_make(j->src, j->nkeys, sorted_row(j, i), NULL);
    }
    if (take_scratch(total, rec, j->reserved, err)) return -1;
    for (uint64_t i = 0, p = 0; i < nloc; i++) {
        uint64_t row = sorted_row(j, i);
        if (j->bytes) {
            p += 8 + brec_make(j->src, j->nkeys, row, (char *)*rec + p);
            continue;
        }
        uint64_t *r = (uint64_t *)*rec + i * w;
        for (size_t k = 0; k < j->nkeys; k++)
            r[k] = enc_elem(span_at(j->src[k]->values, row, NULL), j->src[k]->values->dtype);
        r[j->nkeys] = row;
    }
    *n = nloc;
    *bytes = total;
    return 0;
}

/* This rank's share of the global order into its permutation shards and group flags. */
static int make_unpack(void *ctx, const dist_sorted *s, h5ark_error *err) {
    make_job *j = ctx;
    (void)err;
    for (int b = 0; b < j->p.T; b++) {
        shard *sh = &j->p.perm->values->shards[j->p.first + b];
        int64_t *perm = sh->data;
        uint64_t groups = 0;
        for (uint64_t i = 0; i < sh->count; i++) {
            uint64_t k = sh->start - j->lo + i;
            const char *r = (const char *)s->rec + s->off[k];
            if (j->bytes) {
                uint64_t len;
                memcpy(&len, r, 8);
                perm[i] = (int64_t)get_be64(r + len);
            } else {
                memcpy(&perm[i], r + j->nkeys * 8, 8);
            }
            j->p.flags[b][i] = s->starts[k];
            groups += s->starts[k];
        }
        j->p.gcount[b] = groups;
    }
    return 0;
}

/* The groups' places once every locale's count is known. */
typedef struct {
    const sort_plan *p;
    const uint64_t *gfirst; /* per locale: its first group */
    uint64_t *pairs;        /* this rank's groups: (start, first row) each */
    const uint64_t *gpairs; /* the pairs of the groups this rank's segments hold */
    uint64_t g0;            /* the first of those */
    object *segments, *uik, *codes;
    const darray *cshards; /* codes->values */
} groups_job;

/* Locale c's group starts: their (start, first row) pairs, into segments and
 * unique_key_idx themselves when this rank holds the places of all its groups (always with
 * one rank), else into the pairs to move. */
static void group_pairs(int c, void *ctx) {
    groups_job *j = ctx;
    const sort_plan *p = j->p;
    int b = c - p->first;
    const shard *sh = &p->perm->values->shards[c];
    const int64_t *perm = sh->data;
    uint64_t g = j->gfirst[c];
    uint64_t *out = j->pairs ? j->pairs + 2 * (g - j->gfirst[p->first]) : NULL;
    const darray *seg = j->segments->values, *uik = j->uik->values;
    for (uint64_t i = 0; i < sh->count; i++) {
        if (!p->flags[b][i]) continue;
        if (out) {
            *out++ = sh->start + i;
            *out++ = (uint64_t)perm[i];
            continue;
        }
        int d = darray_shard_of(seg, g);
        ((int64_t *)seg->shards[d].data)[g - seg->shards[d].start] = (int64_t)(sh->start + i);
        ((int64_t *)uik->shards[d].data)[g - uik->shards[d].start] = perm[i];
        g++;
    }
}

static void fill_groups(int c, void *ctx) {
    groups_job *j = ctx;
    const shard *ss = &j->segments->values->shards[c];
    int64_t *seg = ss->data, *uik = j->uik->values->shards[c].data;
    const uint64_t *in = j->gpairs + 2 * (ss->start - j->g0);
    for (uint64_t i = 0; i < ss->count; i++) {
        seg[i] = (int64_t)in[2 * i];
        uik[i] = (int64_t)in[2 * i + 1];
    }
}

/* Each row's group number into codes: the rows' shards here are written in place (locales
 * write each other's: distinct elements), the others' go to their ranks (codes_remote). */
static void local_codes(int c, void *ctx) {
    groups_job *j = ctx;
    const sort_plan *p = j->p;
    const shard *sh = &p->perm->values->shards[c];
    const int64_t *perm = sh->data;
    const uint8_t *flags = p->flags[c - p->first];
    uint64_t g = j->gfirst[c] - 1; /* wraps: the shard's first place starts a group */
    for (uint64_t i = 0; i < sh->count; i++) {
        g += flags[i];
        int d = darray_shard_of(j->cshards, (uint64_t)perm[i]);
        if (!locales_is_local(d)) continue;
        shard *cs = &j->cshards->shards[d];
        ((int64_t *)cs->data)[(uint64_t)perm[i] - cs->start] = (int64_t)g;
    }
}

/* The group numbers of rows on other ranks: (row, group) pairs to each owner, which writes
 * them. */
static int codes_remote(groups_job *j, uint64_t *reserved, h5ark_error *err) {
    const sort_plan *p = j->p;
    int R = ranks_count();
    uint64_t *cnt = calloc((size_t)R, 8), *rcnt = calloc((size_t)R, 8);
    uint64_t *sc = calloc((size_t)R, 8), *pos = calloc((size_t)R + 1, 8);
    uint64_t *out = NULL, *in = NULL, nout = 0, nin = 0;
    int rc = cnt && rcnt && sc && pos ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) goto fail;
    for (int pass = 0; pass < 2; pass++) { /* count, then place grouped by owner */
        for (int b = 0; b < p->T; b++) {
            const shard *sh = &p->perm->values->shards[p->first + b];
            const int64_t *perm = sh->data;
            uint64_t g = j->gfirst[p->first + b] - 1;
            for (uint64_t i = 0; i < sh->count; i++) {
                g += p->flags[b][i];
                int d = darray_shard_of(j->cshards, (uint64_t)perm[i]);
                if (locales_is_local(d)) continue;
                int q = locales_rank_of(d);
                if (pass == 0) {
                    cnt[q]++;
                    continue;
                }
                out[2 * pos[q]] = (uint64_t)perm[i];
                out[2 * pos[q]++ + 1] = g;
            }
        }
        if (pass == 1) break;
        for (int q = 0; q < R; q++) {
            pos[q + 1] = pos[q] + cnt[q];
            sc[q] = 8;
        }
        nout = pos[R];
        if (ranks_alltoallv(cnt, sc, rcnt, sc, err)) goto fail;
        for (int q = 0; q < R; q++) {
            nin += rcnt[q];
            cnt[q] *= 16;
            rcnt[q] *= 16;
        }
        if (take_scratch(nout * 16, (void **)&out, reserved, err) ||
            take_scratch(nin * 16, (void **)&in, reserved, err))
            goto fail;
    }
    if (ranks_alltoallv(out, cnt, in, rcnt, err)) goto fail;
    for (uint64_t i = 0; i < nin; i++) {
        shard *cs = &j->cshards->shards[darray_shard_of(j->cshards, in[2 * i])];
        ((int64_t *)cs->data)[in[2 * i] - cs->start] = (int64_t)in[2 * i + 1];
    }
    rc = 0;
    goto done;
fail:
    rc = -1;
done:
    free(cnt);
    free(rcnt);
    free(sc);
    free(pos);
    free(out);
    free(in);
    return rc;
}

/* The groups from the sorted permutation: every locale's count, then each group's start
 * and first row to its place in segments and unique_key_idx (and each row's group number
 * to codes, when asked). *gb on success. */
static int make_groups(make_job *mj, object *const *keys, object **codes, object **gb,
                       h5ark_error *err) {
    const sort_plan *p = &mj->p;
    int L = p->L, T = p->T, R = ranks_count(); /* R sizes the rebalance's bounds */
    uint64_t *gfirst = calloc((size_t)L + 1, 8), *held = calloc((size_t)R + 1, 8);
    uint64_t *tgt = calloc((size_t)R + 1, 8), *pairs = NULL, *gpairs = NULL;
    object *segments = NULL, *uik = NULL;
    int rc = gfirst && held && tgt ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) goto out;
    for (int b = 0; b < T; b++)
        gfirst[p->first + b] = p->gcount[b];
    if (ranks_allreduce_u64(gfirst, (size_t)L, RANKS_SUM, err)) goto out;
    uint64_t ngroups = 0;
    for (int c = 0; c <= L; c++) { /* counts to firsts, in place */
        uint64_t k = c < L ? gfirst[c] : 0;
        gfirst[c] = ngroups;
        ngroups += k;
    }
    segments = object_new_pdarray(H5ARK_INT64, ngroups, err);
    if (segments) uik = object_new_pdarray(H5ARK_INT64, ngroups, err);
    rc = uik ? 0 : -1;
    if (ranks_agree(rc, err)) goto out;
    groups_job j = {.p = p, .gfirst = gfirst, .segments = segments, .uik = uik};
    for (int r = 0; r <= R; r++) {
        held[r] = gfirst[r * T < L ? r * T : L];
        tgt[r] = locales_block_start(ngroups, L, r * T);
    }
    /* the groups' places are this rank's own when every rank's groups fall in its block of
     * segments (always with one rank; held and tgt are the same on every rank): written in
     * place; else the pairs move */
    bool away = false;
    for (int r = 0; r < R; r++)
        away |= held[r] != tgt[r];
    if (away && take_scratch((gfirst[p->first + T] - gfirst[p->first]) * 16, (void **)&pairs,
                             mj->reserved, err))
        goto out;
    j.pairs = pairs;
    locales_run(group_pairs, &j);
    if (away) {
        j.g0 = locales_block_start(ngroups, L, p->first);
        if (dist_rebalance(pairs, held, tgt, 16, take_scratch, mj->reserved, (void **)&gpairs, err))
            goto out;
        j.gpairs = gpairs;
        locales_run(fill_groups, &j);
    }
    if (codes) {
        rc = (*codes = object_new_pdarray(H5ARK_INT64, p->n, err)) ? 0 : -1;
        if (ranks_agree(rc, err)) goto out;
        j.codes = *codes;
        j.cshards = (*codes)->values;
        locales_run(local_codes, &j);
        if (codes_remote(&j, mj->reserved, err)) goto out;
    }
    *gb = groupby_assemble(p->n, p->perm, segments, uik, keys, mj->nkeys, ngroups, err);
    rc = ranks_agree(*gb ? 0 : -1, err);
    if (rc) {
        object_release(*gb);
        *gb = NULL;
    }
out:
    if (gpairs != pairs) free(gpairs);
    free(pairs);
    free(gfirst);
    free(held);
    free(tgt);
    object_release(segments);
    object_release(uik);
    return rc ? -1 : 0;
}

/* What each key sorts by, holding this rank's rows: a pdarray whose rows are not all here
 * (laid out as, say, an awkward array's buffer) is fetched first, as one shard of the rows
 * [lo, hi). Strings must be here. The fetched copies go into fetched[k]'s parts. */
typedef struct {
    object obj;
    darray d;
    shard s;
} fetched_key;

static int key_sources(object *const *keys, size_t nkeys, uint64_t lo, uint64_t hi,
                       const object **src, fetched_key *fk, uint64_t *reserved, h5ark_error *err) {
    uint64_t n = keys[0]->size, nloc = hi - lo, *need = calloc(nkeys, 8);
    int64_t *rows = NULL;
    int rc = need ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t k = 0; k < nkeys && rc == 0; k++) {
        const object *s = src[k] = groupby_sort_source(keys[k]);
        if (s->objtype == H5ARK_STRINGS ? !s->segments || !s->values : !s->values)
            rc = ranks_not_yet(err, "groupby of a %s key", h5ark_objtype_name(keys[k]->objtype));
        else if (s->objtype == H5ARK_STRINGS && !groupby_rows_here(s->segments, lo, hi))
            rc = ranks_not_yet(err, "groupby of strings keys that are not block distributed");
        else if (s->objtype != H5ARK_STRINGS)
            need[k] = !groupby_rows_here(s->values, lo, hi);
    }
    if (ranks_agree(rc, err) || ranks_allreduce_u64(need, nkeys, RANKS_MAX, err)) goto fail;
    for (size_t k = 0; k < nkeys; k++) {
        if (!need[k]) continue;
        const object *s = src[k];
        if (!rows) {
            if (take_scratch(nloc * 8, (void **)&rows, reserved, err)) goto fail;
            for (uint64_t i = 0; i < nloc; i++)
                rows[i] = (int64_t)(lo + i);
        }
        size_t is = s->values->itemsize;
        void *buf = NULL;
        if (take_scratch(nloc * is, &buf, reserved, err)) goto fail;
        fk[k].s = (shard){buf, lo, nloc};
        fk[k].d = (darray){
            .dtype = s->values->dtype, .itemsize = is, .size = n, .nshards = 1, .shards = &fk[k].s};
        fk[k].obj =
            (object){.objtype = H5ARK_PDARRAY, .dtype = s->dtype, .size = n, .values = &fk[k].d};
        src[k] = &fk[k].obj;
        if (groupby_fetch_rows(s->values, rows, nloc, buf, err)) goto fail;
    }
    free(need);
    free(rows);
    return 0;
fail:
    free(need);
    free(rows);
    return -1;
}

/* The groupby of keys at any rank count; with codes, also *codes: each row's group number
 * (the codes of a categorical made from the key). */
static object *make(object *const *keys, size_t nkeys, object **codes, h5ark_error *err) {
    int L = locales_count();
    uint64_t n = keys[0]->size, reserved = 0, lo, hi;
    locales_local_block(n, &lo, &hi);
    object *gb = NULL, *perm = NULL;
    if (codes) *codes = NULL;
    if (n > OBJECT_MAX_ELEMENTS) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "too many rows");
        return NULL;
    }
    const object **src = calloc(nkeys, sizeof *src);
    fetched_key *fk = calloc(nkeys, sizeof *fk);
    int rc = src && fk ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    make_job mj = {.nkeys = nkeys, .lo = lo, .hi = hi, .reserved = &reserved, .src = src};
    if (ranks_agree(rc, err) || key_sources(keys, nkeys, lo, hi, src, fk, &reserved, err)) goto out;
    for (size_t k = 0; k < nkeys; k++)
        mj.bytes |= src[k]->objtype == H5ARK_STRINGS;
    uint64_t plan_bytes = (hi - lo) * sort_plan_bytes_per_row(src, nkeys);
    rc = registry_reserve(plan_bytes, err);
    if (ranks_agree(rc, err)) {
        if (rc == 0) registry_unreserve(plan_bytes);
        goto out;
    }
    reserved += plan_bytes;
    perm = object_new_pdarray(H5ARK_INT64, n, err);
    rc = perm ? sort_plan_init(&mj.p, src, nkeys, perm, err) : -1;
    if (ranks_agree(rc, err)) goto out;
    /* the rows, sorted once by each key and merged once */
    progress_start(progress_here(), PROGRESS_ROWS, n * (nkeys + 1));
    size_t w = nkeys + 1;
    uint64_t *dist = calloc((size_t)ranks_count() + 1, 8); /* the rank count sizes it */
    rc = dist ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) goto out;
    for (int r = 0; r <= ranks_count(); r++)
        dist[r] = locales_block_start(n, L, r * locales_local_count());
    dist_sort_job job = {.spec = {.width = mj.bytes ? 0 : w * 8,
                                  .tail = 8,
                                  .dist = dist,
                                  .scratch = take_scratch,
                                  .scratch_ctx = &reserved},
                         .progress = n * (nkeys + 1),
                         .ctx = &mj,
                         .sort_local = make_sort_local,
                         .pack = make_pack,
                         .unpack = make_unpack};
    rc = dist_sort(&job, err);
    free(dist);
    if (rc == 0) make_groups(&mj, keys, codes, &gb, err);
out:
    for (size_t k = 0; fk && k < nkeys; k++)
        free(fk[k].s.data);
    free(src);
    free(fk);
    if (!gb && codes) {
        object_release(*codes);
        *codes = NULL;
    }
    sort_plan_free(&mj.p);
    object_release(perm);
    if (reserved) registry_unreserve(reserved);
    return gb;
}

object *groupby_make_codes(object *const *keys, size_t nkeys, object **codes, h5ark_error *err) {
    return make(keys, nkeys, codes, err);
}

object *groupby_make(object *const *keys, size_t nkeys, h5ark_error *err) {
    return make(keys, nkeys, NULL, err);
}

/* ---- checks of a groupby that may come from a file ---- */

typedef struct {
    const object *perm, *seg, *uik;
    uint64_t n;
    _Atomic uint64_t bad_perm, bad_seg, bad_uik; /* first bad index, or UINT64_MAX */
    const int64_t *prev;                         /* per locale: the segment before its first */
} check_job;

static void check_shard(int b, void *ctx) {
    check_job *j = ctx;
    const shard *s = &j->perm->values->shards[b];
    const int64_t *v = s->data;
    for (uint64_t i = 0; i < s->count; i++)
        if (v[i] < 0 || (uint64_t)v[i] >= j->n) {
            locales_note_first(&j->bad_perm, s->start + i);
            break;
        }
    s = &j->uik->values->shards[b];
    v = s->data;
    for (uint64_t i = 0; i < s->count; i++)
        if (v[i] < 0 || (uint64_t)v[i] >= j->n) {
            locales_note_first(&j->bad_uik, s->start + i);
            break;
        }
    s = &j->seg->values->shards[b];
    v = s->data;
    for (uint64_t i = 0; i < s->count; i++) {
        uint64_t g = s->start + i;
        int64_t prev = g == 0 ? 0 : i > 0 ? v[i - 1] : j->prev[b];
        if (v[i] < prev || (uint64_t)v[i] > j->n || (g == 0 && v[i] != 0)) {
            locales_note_first(&j->bad_seg, g);
            break;
        }
    }
}

static int check_component(const object *gb, const char *name, const object **out,
                           h5ark_error *err) {
    const object *c = object_component_get(gb, name);
    if (!c || c->objtype != H5ARK_PDARRAY || c->dtype != H5ARK_INT64 || !c->values)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "groupby '%s' has no int64 pdarray '%s'",
                          gb->name ? gb->name : "", name);
    *out = c;
    return 0;
}

int groupby_check(const object *gb, h5ark_error *err) {
    check_job j = {.n = gb->size};
    const char *name = gb->name ? gb->name : "";
    if (gb->objtype != H5ARK_GROUPBY)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is a %s, not a groupby", name,
                          h5ark_objtype_name(gb->objtype));
    if (check_component(gb, "permutation", &j.perm, err) ||
        check_component(gb, "segments", &j.seg, err) ||
        check_component(gb, "unique_key_idx", &j.uik, err))
        return -1;
    if (j.perm->size != gb->size)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "groupby '%s': permutation has %llu entries for %llu rows", name,
                          (unsigned long long)j.perm->size, (unsigned long long)gb->size);
    if (j.uik->size != j.seg->size)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "groupby '%s': unique_key_idx has %llu entries for %llu segments", name,
                          (unsigned long long)j.uik->size, (unsigned long long)j.seg->size);
    atomic_init(&j.bad_perm, UINT64_MAX);
    atomic_init(&j.bad_seg, UINT64_MAX);
    atomic_init(&j.bad_uik, UINT64_MAX);
    /* the segment before each locale's first may be another rank's: every rank learns each
     * shard's last one, and the first bad index of all */
    int L = locales_count();
    uint64_t *last = calloc(2 * (size_t)L, sizeof *last);
    if (ranks_agree(last ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err)) {
        free(last);
        return -1;
    }
    for (int b = 0; b < L; b++) {
        const shard *sh = &j.seg->values->shards[b];
        if (!locales_is_local(b) || !sh->count) continue;
        last[b] = 1;
        last[L + b] = (uint64_t)((const int64_t *)sh->data)[sh->count - 1];
    }
    if (ranks_allreduce_u64(last, 2 * (size_t)L, RANKS_SUM, err)) {
        free(last);
        return -1;
    }
    int64_t *prev = (int64_t *)last, carry = 0; /* in place: b's reads come before b's write */
    for (int b = 0; b < L; b++) {
        int64_t v = (int64_t)last[L + b];
        bool has = last[b];
        prev[b] = carry;
        if (has) carry = v;
    }
    j.prev = prev;
    locales_run(check_shard, &j);
    static const char *const what[] = {"permutation", "segments", "unique_key_idx"};
    uint64_t bad[] = {atomic_load(&j.bad_perm), atomic_load(&j.bad_seg), atomic_load(&j.bad_uik)};
    free(last);
    if (ranks_allreduce_u64(bad, 3, RANKS_MIN, err)) return -1;
    for (int i = 0; i < 3; i++)
        if (bad[i] != UINT64_MAX)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "groupby '%s': %s[%llu] is out of range%s",
                              name, what[i], (unsigned long long)bad[i],
                              i == 1 ? " (segments start at 0, never decrease and stay within "
                                       "the rows)"
                                     : "");
    return 0;
}
