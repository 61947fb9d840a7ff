/* What groupby's files share (groupby.h is the interface): reading elements and strings of
 * a darray wherever they lie on this rank, the order-preserving encodings of keys, and the
 * local sort of this rank's rows on its locales (groupby_sort.c). */
#ifndef H5ARK_GROUPBY_ROWS_H
#define H5ARK_GROUPBY_ROWS_H

#include "object.h"
#include "locales.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- element access ---- */

/* Pointer to element i of a darray and how many follow it contiguously in its shard. */
static inline const void *span_at(const darray *a, uint64_t i, uint64_t *avail) {
    int b = (int)((unsigned __int128)i * (unsigned)a->nshards / (a->size ? a->size : 1));
    if (b >= a->nshards) b = a->nshards - 1;
    const shard *s = &a->shards[b];
    if (!(s->start <= i && i < s->start + s->count)) s = &a->shards[darray_shard_of(a, i)];
    if (avail) *avail = s->start + s->count - i;
    return (const char *)s->data + (i - s->start) * a->itemsize;
}

/* Pointer to element i of a when this rank holds it, else NULL. */
static inline const void *elem_here(const darray *a, uint64_t i) {
    int b = (int)((unsigned __int128)i * (unsigned)a->nshards / (a->size ? a->size : 1));
    if (b >= a->nshards) b = a->nshards - 1;
    const shard *s = &a->shards[b];
    if (!(s->start <= i && i < s->start + s->count)) s = &a->shards[b = darray_shard_of(a, i)];
    if (!locales_is_local(b)) return NULL;
    return (const char *)s->data + (i - s->start) * a->itemsize;
}

static inline int64_t get_i64(const darray *a, uint64_t i) {
    return *(const int64_t *)span_at(a, i, NULL);
}

typedef struct {
    const char *p;
    uint64_t len; /* without the NUL */
} strref;

/* String i of s, held on this rank. It ends where string i + 1 starts when that offset is
 * here; else (the last string of a shard whose next shard is another rank's) where its
 * values shard ends: strings made on several ranks keep a shard's bytes in its own values
 * shard. */
static inline strref str_at(const object *s, uint64_t i) {
    uint64_t avail, to;
    const int64_t *off = span_at(s->segments, i, &avail);
    uint64_t from = (uint64_t)off[0];
    if (avail > 1) {
        to = (uint64_t)off[1];
    } else if (i + 1 >= s->size) {
        to = s->values->size;
    } else if (locales_is_local(darray_shard_of(s->segments, i + 1))) {
        to = (uint64_t)get_i64(s->segments, i + 1);
    } else {
        const shard *v = &s->values->shards[darray_shard_of(s->values, from)];
        to = v->start + v->count;
    }
    return (strref){span_at(s->values, from, NULL), to - from - 1};
}

static inline int strref_cmp(strref a, strref b) {
    uint64_t m = a.len < b.len ? a.len : b.len;
    int c = m ? memcmp(a.p, b.p, m) : 0;
    if (c) return c < 0 ? -1 : 1;
    return (a.len > b.len) - (a.len < b.len);
}

/* Whether every shard of a holding an element of [lo, hi) is on this rank. */
bool groupby_rows_here(const darray *a, uint64_t lo, uint64_t hi);

/* ---- rows from other ranks (groupby_fetch.c); every rank calls, nothing moves at one ---- */

/* out[i] = element rows[i] of the darray a (a->itemsize bytes each, any distribution),
 * whichever rank holds it: each rank sends the owners the rows it wants and gets their
 * elements back (all-to-alls of the counts, the rows and the elements). Reads every row
 * before it writes out: rows and out may be the same memory. */
int groupby_fetch_rows(const darray *a, const int64_t *rows, uint64_t nrows, void *out,
                       h5ark_error *err);
/* The strings of src at rows[0..nrows), wherever they lie: offs[i] where string i starts in
 * *bytes (scratch reserved into *reserved; *nbytes of them), the strings back to back in
 * that order, each followed by its NUL (all-to-alls of the counts, the rows, the lengths and
 * the bytes). */
int groupby_fetch_strings(const object *src, const uint64_t *rows, uint64_t nrows, uint64_t *offs,
                          char **bytes, uint64_t *nbytes, uint64_t *reserved, h5ark_error *err);

/* ---- key encodings ---- */

/* Order-preserving maps to uint64: all NaNs equal and last, -0.0 equal to 0.0. */
static inline uint64_t enc_f64(double d) {
    if (d != d) return UINT64_MAX;
    if (d == 0) d = 0.0;
    uint64_t u;
    memcpy(&u, &d, 8);
    return (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
}

static inline uint64_t enc_elem(const void *p, h5ark_dtype dt) {
    const uint64_t flip = UINT64_C(1) << 63;
    switch (dt) {
    case H5ARK_INT8: return (uint64_t)(int64_t) * (const int8_t *)p ^ flip;
    case H5ARK_INT16: return (uint64_t)(int64_t) * (const int16_t *)p ^ flip;
    case H5ARK_INT32: return (uint64_t)(int64_t) * (const int32_t *)p ^ flip;
    case H5ARK_INT64: return (uint64_t) * (const int64_t *)p ^ flip;
    case H5ARK_UINT8:
    case H5ARK_BOOLEAN: return *(const uint8_t *)p;
    case H5ARK_UINT16: return *(const uint16_t *)p;
    case H5ARK_UINT32: return *(const uint32_t *)p;
    case H5ARK_UINT64: return *(const uint64_t *)p;
    case H5ARK_FLOAT32: return enc_f64(*(const float *)p);
    case H5ARK_FLOAT64: return enc_f64(*(const double *)p);
    default: return 0;
    }
}

/* out[j] = encoding of element lo + j, for j < hi - lo, walking the shards. */
void groupby_encode_range(const darray *a, uint64_t lo, uint64_t hi, uint64_t *out);

/* The array a key sorts by: strings themselves, or the values of a pdarray / codes. */
const object *groupby_sort_source(const object *key);

/* ---- the local sort ---- */

/* This rank's rows [lo[0], lo[T]), one run per local locale (run b is locale first + b),
 * sorted stably by key tuple on the locales: `perm`'s local shards get the rows in order,
 * flags[b][i] is 1 where a group starts in perm shard first + b (the first row of the rank
 * starts one), gcount[b] counts them. */
typedef struct {
    int L, first, T; /* locales: all of them, this rank's first, and how many */
    uint64_t n;      /* rows of the whole array */
    size_t nkeys;
    const object **src; /* per key: strings, or a pdarray holding this rank's rows */
    bool *is_str;       /* per key: sorted as strings */
    uint64_t *lo, *len; /* per run b: rows [lo[b], lo[b] + len[b]) */
    uint64_t **order;   /* [b]: the run's rows, sorted */
    uint64_t **skey;    /* [b]: encodings of key 0 in sorted order (numeric key 0), or NULL */
    uint64_t **enc;     /* [k * T + b]: encodings of numeric key k, in row order */
    strref **refs;      /* [k * T + b]: strings of key k, in row order */
    uint64_t *split;    /* [c * T + r]: elements of run r before rank lo[c]; row c = T: len */
    uint8_t **flags;
    uint64_t *gcount;
    object *perm;
    atomic_int failed;
} sort_plan;

/* Scratch per row the plan takes (to reserve it first). */
uint64_t sort_plan_bytes_per_row(const object *const *src, size_t nkeys);
/* Set up the plan of src[0..nkeys) (each row of this rank readable) for `perm`, an int64
 * pdarray of the rows. -1 (out of memory) with err set. */
int sort_plan_init(sort_plan *p, const object *const *src, size_t nkeys, object *perm,
                   h5ark_error *err);
/* Sort: -1 (out of memory) with err set. */
int sort_plan_run(sort_plan *p, h5ark_error *err);
void sort_plan_free(sort_plan *p);

#endif
