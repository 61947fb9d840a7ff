/* groupby: a parallel stable sort of row indices by key tuple (see groupby.h).
 *
 * 1. Each locale sorts its own block of rows (block distribution of the row count): keys
 *    are taken from last to first, each a stable sort of the block's order by that key
 *    alone (LSD over keys), so the result is sorted by the whole tuple and stable. Numeric
 *    keys are mapped to order-preserving uint64 and radix sorted; strings are merge sorted.
 * 2. The runs are merged with the order (key tuple, row), a strict total order: locale c
 *    finds, by binary search, how many elements of each run come before global rank
 *    block_start(c), then merges its slice of every run into its shard of `permutation`,
 *    flagging each position where the key tuple changes.
 * 3. Group counts give every group its index; each locale fills its own shards of
 *    `segments` and `unique_key_idx` from the flags of the locales that found them.
 * Reads cross locales freely once a fan-out has finished; each shard is written only by its
 * own locale, except the scatter that builds categorical codes (see categorical.c). */
#include "groupby.h"

#include "locales.h"
#include "strings.h"
#include "progress.h"
#include "dist/ranks.h"
#include "registry.h"
#include "shardcache.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- element access ---- */

/* Pointer to element i of a darray and how many follow it contiguously in its shard. */
static const void *span_at(const darray *a, uint64_t i, uint64_t *avail) {
    int b = (int)((unsigned __int128)i * (unsigned)a->nshards / (a->size ? a->size : 1));
    if (b >= a->nshards) b = a->nshards - 1;
    const shard *s = &a->shards[b];
    if (!(s->start <= i && i < s->start + s->count)) s = &a->shards[darray_shard_of(a, i)];
    if (avail) *avail = s->start + s->count - i;
    return (const char *)s->data + (i - s->start) * a->itemsize;
}

static inline int64_t get_i64(const darray *a, uint64_t i) {
    return *(const int64_t *)span_at(a, i, NULL);
}

typedef struct {
    const char *p;
    uint64_t len; /* without the NUL */
} strref;

static strref str_at(const object *s, uint64_t i) {
    uint64_t from = (uint64_t)get_i64(s->segments, i);
    uint64_t to = i + 1 < s->size ? (uint64_t)get_i64(s->segments, i + 1) : s->values->size;
    return (strref){span_at(s->values, from, NULL), to - from - 1};
}

static int strref_cmp(strref a, strref b) {
    uint64_t m = a.len < b.len ? a.len : b.len;
    int c = m ? memcmp(a.p, b.p, m) : 0;
    if (c) return c < 0 ? -1 : 1;
    return (a.len > b.len) - (a.len < b.len);
}

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
static void encode_range(const darray *a, uint64_t lo, uint64_t hi, uint64_t *out) {
    while (lo < hi) {
        uint64_t avail;
        const char *p = span_at(a, lo, &avail);
        uint64_t m = hi - lo < avail ? hi - lo : avail;
        h5ark_dtype dt = a->dtype;
        if (dt == H5ARK_INT64) {
            const int64_t *q = (const int64_t *)p;
            for (uint64_t j = 0; j < m; j++)
                out[j] = (uint64_t)q[j] ^ (UINT64_C(1) << 63);
        } else {
            for (uint64_t j = 0; j < m; j++)
                out[j] = enc_elem(p + j * a->itemsize, dt);
        }
        out += m;
        lo += m;
    }
}

/* ---- keys ---- */

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

/* The array a key sorts by: strings themselves, or the values of a pdarray / codes. */
static const object *sort_source(const object *key) {
    if (key->objtype == H5ARK_CATEGORICAL) return object_component_get(key, "codes");
    return key;
}

/* ---- local sorts ---- */

#define RADIX_BITS    11
#define RADIX_BUCKETS (1u << RADIX_BITS)
#define RADIX_PASSES  6

/* Stable LSD radix sort of (key, val) pairs; passes whose digit is the same everywhere are
 * skipped. tk/tv are scratch of n each. The buffers are swapped rather than copied back:
 * the result is in *keyp and *valp, and *tkp and *tvp are the scratch. `rows_from`: the
 * values are rows_from, rows_from + 1, ... and *valp is written, not read (UINT64_MAX: the
 * values are in *valp). Memory traffic is what it costs, so every pass over the keys is
 * made to count: one finds the bits that vary and digit 0's histogram, a second only
 * when higher digits vary too. */
static int radix_sort(uint64_t **keyp, uint64_t **valp, uint64_t **tkp, uint64_t **tvp, uint64_t n,
                      uint64_t rows_from) {
    uint64_t *key = *keyp, *val = *valp, *tk = *tkp, *tv = *tvp;
    bool implicit = rows_from != UINT64_MAX;
    uint64_t *hist = calloc((size_t)RADIX_PASSES * RADIX_BUCKETS, sizeof *hist);
    if (!hist) return -1;
    uint64_t differ = 0, k0 = n ? key[0] : 0;
    for (uint64_t i = 0; i < n; i++) {
        differ |= key[i] ^ k0;
        hist[key[i] & (RADIX_BUCKETS - 1)]++;
    }
    int pass[RADIX_PASSES], npasses = 0;
    bool higher = false;
    for (int p = 0; p < RADIX_PASSES; p++)
        if ((differ >> (p * RADIX_BITS)) & (RADIX_BUCKETS - 1)) {
            pass[npasses++] = p;
            higher |= p > 0;
        }
    if (higher)
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = key[i];
            for (int j = 0; j < npasses; j++)
                if (pass[j] > 0)
                    hist[pass[j] * RADIX_BUCKETS +
                         ((k >> (pass[j] * RADIX_BITS)) & (RADIX_BUCKETS - 1))]++;
        }
    uint64_t *sk = key, *sv = val, *dk = tk, *dv = tv;
    for (int j = 0; j < npasses; j++) {
        uint64_t *h = hist + pass[j] * RADIX_BUCKETS;
        int shift = pass[j] * RADIX_BITS;
        uint64_t sum = 0;
        for (unsigned d = 0; d < RADIX_BUCKETS; d++) {
            uint64_t c = h[d];
            h[d] = sum;
            sum += c;
        }
        if (j == 0 && implicit)
            for (uint64_t i = 0; i < n; i++) {
                uint64_t pos = h[(sk[i] >> shift) & (RADIX_BUCKETS - 1)]++;
                dk[pos] = sk[i];
                dv[pos] = rows_from + i;
            }
        else
            for (uint64_t i = 0; i < n; i++) {
                uint64_t pos = h[(sk[i] >> shift) & (RADIX_BUCKETS - 1)]++;
                dk[pos] = sk[i];
                dv[pos] = sv[i];
            }
        uint64_t *t = sk;
        sk = dk;
        dk = t;
        t = sv;
        sv = dv;
        dv = t;
        /* progress: the rows once over all the passes */
        progress_add(progress_here(), n / (unsigned)npasses + (j == 0 ? n % (unsigned)npasses : 0));
    }
    if (npasses == 0) progress_add(progress_here(), n);
    if (npasses == 0 && implicit) /* all keys equal: the rows stay in order */
        for (uint64_t i = 0; i < n; i++)
            val[i] = rows_from + i;
    *keyp = sk;
    *valp = sv;
    *tkp = dk;
    *tvp = dv;
    free(hist);
    return 0;
}

/* Stable merge sort of rows (global indices) by refs[row - lo]. tmp: scratch of n. */
static void string_sort(uint64_t *rows, uint64_t *tmp, uint64_t n, const strref *refs,
                        uint64_t lo) {
    const uint64_t run = 16;
    for (uint64_t s = 0; s < n; s += run) { /* insertion sort of short runs */
        uint64_t e = s + run < n ? s + run : n;
        for (uint64_t i = s + 1; i < e; i++) {
            uint64_t r = rows[i], j = i;
            while (j > s && strref_cmp(refs[rows[j - 1] - lo], refs[r - lo]) > 0) {
                rows[j] = rows[j - 1];
                j--;
            }
            rows[j] = r;
        }
    }
    uint64_t *src = rows, *dst = tmp;
    for (uint64_t w = run; w < n; w *= 2) {
        for (uint64_t s = 0; s < n; s += 2 * w) {
            uint64_t m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;
            uint64_t i = s, j = m, k = s;
            while (i < m && j < e)
                dst[k++] =
                    strref_cmp(refs[src[j] - lo], refs[src[i] - lo]) < 0 ? src[j++] : src[i++];
            while (i < m)
                dst[k++] = src[i++];
            while (j < e)
                dst[k++] = src[j++];
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != rows) memcpy(rows, src, n * sizeof *rows);
}

/* ---- the plan shared by the fan-outs ---- */

typedef struct {
    int L;
    uint64_t n;
    size_t nkeys;
    const object **src; /* per key: strings, or the pdarray sorted by */
    bool *is_str;       /* per key: sorted as strings */
    /* per run (= locale) b: rows [lo[b], lo[b] + len[b]) */
    uint64_t *lo, *len;
    uint64_t **order; /* [b]: the run's rows, sorted */
    uint64_t **skey;  /* [b]: encodings of key 0 in sorted order (numeric key 0), or NULL */
    uint64_t **enc;   /* [k * L + b]: encodings of numeric key k, in row order */
    strref **refs;    /* [k * L + b]: strings of key k, in row order */
    uint64_t *split;  /* [c * L + r]: elements of run r before rank lo[c]; row c = L: len */
    uint8_t **flags;  /* [c]: 1 where a group starts in permutation shard c */
    uint64_t *gcount, *gfirst; /* groups starting on each locale, and their first index */
    uint64_t *startpos;        /* [b * L + c]: flag index in b of destination c's first group */
    object *perm, *segments, *uik;
    atomic_int failed;
} plan;

static inline int run_of(const plan *p, uint64_t row) {
    return (int)((unsigned __int128)row * (unsigned)p->L / p->n);
}

/* Compare the key tuples of two rows from key `from` on. */
static int cmp_rows(const plan *p, uint64_t a, uint64_t b, size_t from) {
    int ra = run_of(p, a), rb = run_of(p, b);
    uint64_t oa = a - p->lo[ra], ob = b - p->lo[rb];
    for (size_t k = from; k < p->nkeys; k++) {
        if (p->is_str[k]) {
            int c = strref_cmp(p->refs[k * p->L + ra][oa], p->refs[k * p->L + rb][ob]);
            if (c) return c;
        } else {
            uint64_t x = p->enc[k * p->L + ra][oa], y = p->enc[k * p->L + rb][ob];
            if (x != y) return x < y ? -1 : 1;
        }
    }
    return 0;
}

/* Element q of run r against element t of run s by key tuple only. */
static inline int cmp_keys(const plan *p, int r, uint64_t q, int s, uint64_t t) {
    if (p->is_str[0]) return cmp_rows(p, p->order[r][q], p->order[s][t], 0);
    uint64_t x = p->skey[r][q], y = p->skey[s][t];
    if (x != y) return x < y ? -1 : 1;
    return p->nkeys == 1 ? 0 : cmp_rows(p, p->order[r][q], p->order[s][t], 1);
}

/* The strict total order (key tuple, row). Runs hold ascending blocks of rows and each
 * run is sorted stably, so among equal keys the row order is the run order, then the
 * order within the run. */
static inline int cmp_elems(const plan *p, int r, uint64_t q, int s, uint64_t t) {
    int c = cmp_keys(p, r, q, s, t);
    if (c) return c;
    if (r != s) return (r > s) - (r < s);
    return (q > t) - (q < t);
}

static void sort_run(int b, void *ctx) {
    plan *p = ctx;
    uint64_t lo = p->lo[b], n = p->len[b];
    if (n == 0) return;
    int L = p->L;
    /* scratch from the locale's cache of touched memory: fresh pages cost more than the
     * sort itself when the keys take one radix pass */
    uint64_t bytes = n * sizeof(uint64_t);
    uint64_t *order = shardcache_alloc(b, bytes), *key = shardcache_alloc(b, bytes);
    uint64_t *tk = shardcache_alloc(b, bytes), *tv = shardcache_alloc(b, bytes);
    p->order[b] = order;
    if (!order || !key || !tk || !tv) goto fail;
    /* one numeric key: its radix sort writes the row numbers as it first moves them */
    bool one_numeric = p->nkeys == 1 && !p->is_str[0];
    if (!one_numeric)
        for (uint64_t i = 0; i < n; i++)
            order[i] = lo + i;
    for (size_t k = 0; k < p->nkeys; k++) { /* the views of every key, in row order */
        const object *s = p->src[k];
        if (s->objtype == H5ARK_STRINGS) {
            strref *r = shardcache_alloc(b, n * sizeof *r);
            if (!(p->refs[k * L + b] = r)) goto fail;
            for (uint64_t i = 0; i < n; i++)
                r[i] = str_at(s, lo + i);
        } else if (p->nkeys > 1) {
            uint64_t *e = shardcache_alloc(b, bytes);
            if (!(p->enc[k * L + b] = e)) goto fail;
            encode_range(s->values, lo, lo + n, e);
        }
    }
    for (size_t k = p->nkeys; k-- > 0;) {
        if (p->refs[k * L + b]) {
            string_sort(order, tk, n, p->refs[k * L + b], lo);
            progress_add(progress_here(), n);
            continue;
        }
        if (p->nkeys == 1) {
            encode_range(p->src[0]->values, lo, lo + n, key);
        } else {
            const uint64_t *e = p->enc[k * L + b];
            for (uint64_t i = 0; i < n; i++)
                key[i] = e[order[i] - lo];
        }
        if (radix_sort(&key, &order, &tk, &tv, n, one_numeric ? lo : UINT64_MAX)) goto fail;
        p->order[b] = order;
    }
    if (!p->is_str[0]) { /* key 0 is numeric: keep its sorted encodings for the merge */
        p->skey[b] = key;
        key = NULL;
    }
    shardcache_give(b, key, bytes);
    shardcache_give(b, tk, bytes);
    shardcache_give(b, tv, bytes);
    return;
fail:
    shardcache_give(b, key, bytes);
    shardcache_give(b, tk, bytes);
    shardcache_give(b, tv, bytes);
    atomic_store(&p->failed, 1);
}

/* Rank of element q of run r: the elements of every run before it. */
static uint64_t rank_of(const plan *p, int r, uint64_t q) {
    uint64_t rank = q;
    for (int s = 0; s < p->L; s++) {
        if (s == r) continue;
        uint64_t a = 0, b = p->len[s]; /* first element of s after (r, q) */
        while (a < b) {
            uint64_t m = a + (b - a) / 2;
            if (cmp_elems(p, s, m, r, q) < 0)
                a = m + 1;
            else
                b = m;
        }
        rank += a;
    }
    return rank;
}

static void find_splits(int c, void *ctx) {
    plan *p = ctx;
    uint64_t k = p->lo[c];
    for (int r = 0; r < p->L; r++) {
        uint64_t a = 0, b = p->len[r]; /* first element of r whose rank is >= k */
        while (a < b) {
            uint64_t m = a + (b - a) / 2;
            if (rank_of(p, r, m) < k)
                a = m + 1;
            else
                b = m;
        }
        p->split[c * p->L + r] = a;
    }
}

static void merge_runs(int c, void *ctx) {
    plan *p = ctx;
    int L = p->L;
    shard *out = &p->perm->values->shards[c];
    uint64_t cnt = out->count;
    p->gcount[c] = 0;
    if (cnt == 0) return;
    uint8_t *flags = shardcache_alloc(c, cnt);
    uint64_t *head = malloc((size_t)L * 2 * sizeof *head);
    if (!flags || !head) {
        shardcache_give(c, flags, cnt);
        free(head);
        atomic_store(&p->failed, 1);
        return;
    }
    p->flags[c] = flags;
    uint64_t *end = head + L;
    int prev_r = -1;
    uint64_t prev_q = 0;
    for (int r = 0; r < L; r++) {
        head[r] = p->split[c * L + r];
        end[r] = p->split[(c + 1) * L + r];
        /* the element just before this locale's slice is the largest one before the split */
        if (head[r] > 0 && (prev_r < 0 || cmp_elems(p, r, head[r] - 1, prev_r, prev_q) > 0)) {
            prev_r = r;
            prev_q = head[r] - 1;
        }
    }
    int64_t *perm = out->data;
    uint64_t groups = 0;
    if (p->nkeys == 1 && !p->is_str[0]) {
        /* one numeric key, the common case: compare its encodings alone; a tie goes to
         * the lower run, which holds the lower rows */
        bool have_prev = prev_r >= 0;
        uint64_t prev_key = have_prev ? p->skey[prev_r][prev_q] : 0;
        for (uint64_t i = 0; i < cnt; i++) {
            int best = -1;
            uint64_t bk = 0;
            for (int r = 0; r < L; r++)
                if (head[r] < end[r] && (best < 0 || p->skey[r][head[r]] < bk)) {
                    best = r;
                    bk = p->skey[r][head[r]];
                }
            perm[i] = (int64_t)p->order[best][head[best]++];
            uint8_t f = !have_prev || bk != prev_key;
            flags[i] = f;
            groups += f;
            have_prev = true;
            prev_key = bk;
        }
    } else {
        for (uint64_t i = 0; i < cnt; i++) {
            int best = -1;
            for (int r = 0; r < L; r++)
                if (head[r] < end[r] &&
                    (best < 0 || cmp_elems(p, r, head[r], best, head[best]) < 0))
                    best = r;
            uint64_t q = head[best]++;
            perm[i] = (int64_t)p->order[best][q];
            uint8_t f = prev_r < 0 || cmp_keys(p, prev_r, prev_q, best, q) != 0;
            flags[i] = f;
            groups += f;
            prev_r = best;
            prev_q = q;
        }
    }
    p->gcount[c] = groups;
    free(head);
    progress_add(progress_here(), cnt);
}

/* Where, in locale b's flags, each destination's first group lies. */
static void find_group_starts(int b, void *ctx) {
    plan *p = ctx;
    int L = p->L;
    uint64_t g0 = p->gfirst[b], g1 = g0 + p->gcount[b];
    const darray *seg = p->segments->values;
    int c = 0;
    uint64_t j = g0; /* the group starting at flag i */
    for (uint64_t i = 0; j < g1 && i < p->perm->values->shards[b].count; i++) {
        if (!p->flags[b][i]) continue;
        while (c < L) {
            const shard *d = &seg->shards[c];
            if (d->count == 0 || d->start + d->count <= j) { /* empty, or wholly before */
                c++;
                continue;
            }
            if ((d->start > g0 ? d->start : g0) != j) break; /* its first group comes later */
            p->startpos[b * L + c++] = i;
        }
        j++;
    }
}

static void fill_groups(int c, void *ctx) {
    plan *p = ctx;
    int L = p->L;
    const shard *sh = &p->segments->values->shards[c];
    int64_t *seg = sh->data;
    int64_t *uik = p->uik->values->shards[c].data;
    uint64_t s0 = sh->start, s1 = sh->start + sh->count;
    for (int b = 0; b < L; b++) {
        uint64_t g0 = p->gfirst[b], g1 = g0 + p->gcount[b];
        uint64_t lo = g0 > s0 ? g0 : s0, hi = g1 < s1 ? g1 : s1;
        if (lo >= hi) continue;
        const uint8_t *flags = p->flags[b];
        const int64_t *perm = p->perm->values->shards[b].data;
        uint64_t base = p->perm->values->shards[b].start;
        for (uint64_t i = p->startpos[b * L + c], g = lo; g < hi; i++)
            if (flags[i]) {
                seg[g - s0] = (int64_t)(base + i);
                uik[g - s0] = perm[i];
                g++;
            }
    }
}

static void free_plan(plan *p) {
    /* scratch goes back to its locale's cache; a pointer set means its sizes are known */
    for (int b = 0; b < p->L; b++) {
        if (p->order && p->order[b]) shardcache_give(b, p->order[b], p->len[b] * 8);
        if (p->skey && p->skey[b]) shardcache_give(b, p->skey[b], p->len[b] * 8);
        if (p->flags && p->flags[b])
            shardcache_give(b, p->flags[b], p->perm->values->shards[b].count);
    }
    for (size_t k = 0; k < p->nkeys * (size_t)p->L; k++) {
        int b = (int)(k % (size_t)p->L);
        if (p->enc && p->enc[k]) shardcache_give(b, p->enc[k], p->len[b] * 8);
        if (p->refs && p->refs[k]) shardcache_give(b, p->refs[k], p->len[b] * sizeof(strref));
    }
    free(p->order);
    free(p->skey);
    free(p->flags);
    free(p->enc);
    free(p->refs);
    free(p->src);
    free(p->is_str);
    free(p->lo);
    free(p->len);
    free(p->split);
    free(p->gcount);
    free(p->gfirst);
    free(p->startpos);
    object_release(p->perm);
    object_release(p->segments);
    object_release(p->uik);
}

/* ---- several ranks: a sample sort ----------------------------------------------------
 *
 * Each rank's rows are the rows of its locales' shards. A row is a record of its keys'
 * order-preserving encodings followed by its row number, so that records compare in the
 * order (key tuple, row) the one-rank sort gives. Each rank sorts its records; samples of
 * every rank's records pick R - 1 splitters; an all-to-all sends each record to the rank
 * whose range holds it, which sorts what it got; a second all-to-all evens the records
 * out to the block distribution of `permutation`; a third sends each group's start and
 * first row to the rank holding its place in `segments` and `unique_key_idx`. */

static _Thread_local size_t rec_words; /* record width for rec_cmp (qsort has no context) */

static int rec_cmp(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    for (size_t i = 0; i < rec_words; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* Element counts [a0, a1) and [b0, b1) overlap by how many. */
static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
    uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

/* Rank r's share of n block-distributed elements: [*lo, *hi). */
static void rank_range(uint64_t n, int r, uint64_t *lo, uint64_t *hi) {
    int L = locales_count(), T = locales_local_count();
    *lo = locales_block_start(n, L, r * T);
    *hi = locales_block_start(n, L, (r + 1) * T);
}

/* The locale whose block of n elements holds element i (i < n). */
static int block_of(uint64_t n, int L, uint64_t i) {
    int a = 0, b = L; /* block a starts at or before i, block b after it */
    while (b - a > 1) {
        int m = a + (b - a) / 2;
        if (locales_block_start(n, L, m) <= i)
            a = m;
        else
            b = m;
    }
    return a;
}

/* Send what this rank holds of positions [held[me], held[me + 1]) to the ranks whose
 * target ranges [tgt[q], tgt[q + 1]) hold them, and receive this rank's target range from
 * the ranks holding it. `width` bytes per element. */
static int rebalance(const void *in, const uint64_t *held, const uint64_t *tgt, size_t width,
                     void *out, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    uint64_t *sc = calloc((size_t)R, sizeof *sc), *rc = calloc((size_t)R, sizeof *rc);
    int r = 0;
    if (!sc || !rc) {
        r = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    } else {
        for (int q = 0; q < R; q++) {
            sc[q] = overlap(held[me], held[me + 1], tgt[q], tgt[q + 1]) * width;
            rc[q] = overlap(held[q], held[q + 1], tgt[me], tgt[me + 1]) * width;
        }
    }
    if ((r = ranks_agree(r, err)) == 0) r = ranks_alltoallv(in, sc, out, rc, err);
    free(sc);
    free(rc);
    return r;
}

/* Every rank's block-distributed range of n: starts[r] for r <= R. */
static void block_starts(uint64_t n, uint64_t *starts) {
    int R = ranks_count();
    for (int r = 0; r < R; r++) {
        uint64_t hi;
        rank_range(n, r, &starts[r], &hi);
    }
    starts[R] = n;
}

/* Records held in sorted order, `nheld` here, evened out to the block distribution of
 * all n over the ranks (*fin: this rank's nloc, `width` bytes each). pstarts and tgt are
 * R + 1 words of scratch. */
static int even_out(const void *in, uint64_t nheld, uint64_t n, uint64_t nloc, size_t width,
                    uint64_t *pstarts, uint64_t *tgt, void **fin, uint64_t *reserved,
                    h5ark_error *err) {
    int R = ranks_count();
    memset(pstarts, 0, ((size_t)R + 1) * sizeof *pstarts);
    pstarts[ranks_self() + 1] = nheld;
    if (ranks_allreduce_u64(pstarts, (size_t)R + 1, RANKS_SUM, err)) return -1;
    for (int r = 0; r < R; r++)
        pstarts[r + 1] += pstarts[r];
    block_starts(n, tgt);
    if (registry_scratch_ranks(nloc * width, fin, reserved, err) ||
        rebalance(in, pstarts, tgt, width, *fin, err))
        return -1;
    return 0;
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

enum { SAMPLES = 64 }; /* records a rank sends every rank to pick the splitters */

/* Steps 1-4 for numeric keys: *fin gets this rank's block of the permutation's records, each
 * the keys' nkeys encodings then the row (w = nkeys + 1 words). */
static int sort_words(const object *const *src, size_t nkeys, uint64_t n, uint64_t **fin,
                      uint64_t *reserved, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    size_t w = nkeys + 1;
    rec_words = w;
    uint64_t lo, hi;
    rank_range(n, me, &lo, &hi);
    uint64_t nloc = hi - lo, *rec = NULL, *col = NULL, *samples = NULL, *got = NULL;
    uint64_t *cnt = calloc((size_t)R, sizeof *cnt), *sc = calloc((size_t)R, sizeof *sc);
    uint64_t *rcv = calloc((size_t)R, sizeof *rcv), *pstarts = calloc((size_t)R + 1, 8);
    uint64_t *tgt = calloc((size_t)R + 1, sizeof *tgt);
    int rc = cnt && sc && rcv && pstarts && tgt
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    if (ranks_agree(rc, err) ||
        registry_scratch_ranks(nloc * w * 8, (void **)&rec, reserved, err) ||
        registry_scratch_ranks(nloc * 8, (void **)&col, reserved, err))
        goto fail;
    /* 1. this rank's records, sorted */
    for (size_t k = 0; k < nkeys; k++) {
        encode_range(src[k]->values, lo, hi, col);
        for (uint64_t i = 0; i < nloc; i++)
            rec[i * w + k] = col[i];
    }
    for (uint64_t i = 0; i < nloc; i++)
        rec[i * w + nkeys] = lo + i;
    qsort(rec, nloc, w * 8, rec_cmp);
    /* 2. samples from every rank, the same splitters on all */
    uint64_t ns = nloc < SAMPLES ? nloc : SAMPLES, total = 0;
    cnt[me] = ns;
    if (ranks_allreduce_u64(cnt, (size_t)R, RANKS_SUM, err)) goto fail;
    for (int r = 0; r < R; r++)
        total += cnt[r];
    if (registry_scratch_ranks((total + (uint64_t)R * ns) * w * 8, (void **)&samples, reserved,
                               err))
        goto fail;
    uint64_t *mine = samples + total * w; /* my samples, once for every rank */
    for (int r = 0; r < R; r++) {
        for (uint64_t j = 0; j < ns; j++)
            memcpy(mine + (r * ns + j) * w, rec + (j * nloc / ns) * w, w * 8);
        sc[r] = ns * w * 8;
        rcv[r] = cnt[r] * w * 8;
    }
    if (ranks_alltoallv(mine, sc, samples, rcv, err)) goto fail;
    qsort(samples, total, w * 8, rec_cmp);
    /* 3. each record to the rank whose range of the order holds it */
    memset(cnt, 0, (size_t)R * sizeof *cnt);
    for (uint64_t i = 0, d = 0; i < nloc; i++) {
        /* splitter q (1 <= q < R) is sample q * total / R; records from it on go to q */
        while (d + 1 < (uint64_t)R &&
               rec_cmp(rec + i * w, samples + ((d + 1) * total / (uint64_t)R) * w) >= 0)
            d++;
        cnt[d]++;
    }
    for (int r = 0; r < R; r++)
        sc[r] = 8;
    if (ranks_alltoallv(cnt, sc, rcv, sc, err)) goto fail; /* how many each rank sends me */
    uint64_t ngot = 0;
    for (int r = 0; r < R; r++) {
        ngot += rcv[r];
        rcv[r] *= w * 8;
        sc[r] = cnt[r] * w * 8;
    }
    if (registry_scratch_ranks(ngot * w * 8, (void **)&got, reserved, err) ||
        ranks_alltoallv(rec, sc, got, rcv, err))
        goto fail;
    qsort(got, ngot, w * 8, rec_cmp);
    /* 4. evened out to permutation's block distribution */
    if (even_out(got, ngot, n, nloc, w * 8, pstarts, tgt, (void **)fin, reserved, err)) goto fail;
    rc = 0;
    goto out;
fail:
    rc = -1;
out:
    free(rec);
    free(col);
    free(samples);
    free(got);
    free(cnt);
    free(sc);
    free(rcv);
    free(pstarts);
    free(tgt);
    return rc;
}

/* ---- records of varying length: keys with strings ----
 *
 * A record is its length (a native uint64) then its bytes: each key in turn, a numeric
 * key as its encoding in 8 big-endian bytes, a strings key as its bytes with each NUL
 * written as NUL 0x01, then NUL NUL (so no key's bytes are a prefix of another's, and a
 * string sorts before every longer one it begins), then the row in 8 big-endian bytes.
 * memcmp of two records' bytes (the shorter first when one is a prefix of the other) is
 * then the order (key tuple, row) of the one-rank sort, and two rows have the same keys
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

static uint64_t brec_len(const char *r) {
    uint64_t l;
    memcpy(&l, r, 8);
    return l;
}

static int brec_cmp(const char *x, const char *y) {
    uint64_t lx = brec_len(x), ly = brec_len(y), m = lx < ly ? lx : ly;
    int c = memcmp(x + 8, y + 8, m);
    if (c) return c < 0 ? -1 : 1;
    return (lx > ly) - (lx < ly);
}

/* Whether two records hold the same keys (they may differ only in the row). */
static bool brec_same_keys(const char *x, const char *y) {
    uint64_t lx = brec_len(x);
    return lx == brec_len(y) && memcmp(x + 8, y + 8, lx - 8) == 0;
}

static _Thread_local const char *brec_base; /* for brec_off_cmp (qsort has no context) */

static int brec_off_cmp(const void *a, const void *b) {
    return brec_cmp(brec_base + *(const uint64_t *)a, brec_base + *(const uint64_t *)b);
}

/* The offsets of the records back to back in buf[0..bytes), sorted by record. */
static void brec_sort(const char *buf, uint64_t bytes, uint64_t *off, uint64_t count) {
    uint64_t k = 0;
    for (uint64_t p = 0; p < bytes && k < count; p += 8 + brec_len(buf + p))
        off[k++] = p;
    brec_base = buf;
    qsort(off, count, 8, brec_off_cmp);
}

/* Several ranks: string `row` of s, on this rank. A shard's strings are in its own values
 * shard, so the last string of a shard ends where that values shard ends. */
static strref local_str(const object *s, uint64_t row) {
    const shard *seg = &s->segments->shards[darray_shard_of(s->segments, row)];
    const shard *val = &s->values->shards[darray_shard_of(s->segments, row)];
    const int64_t *off = seg->data;
    uint64_t i = row - seg->start, from = (uint64_t)off[i];
    uint64_t to = i + 1 < seg->count ? (uint64_t)off[i + 1] : val->start + val->count;
    return (strref){(const char *)val->data + (from - val->start), to - from - 1};
}

/* Bytes of row's record after its length; the record written at out when out is not NULL. */
static uint64_t brec_make(const object *const *src, size_t nkeys, uint64_t row, char *out) {
    uint64_t len = 8; /* the row */
    char *q = out ? out + 8 : NULL;
    for (size_t k = 0; k < nkeys; k++) {
        const object *s = src[k];
        if (s->objtype == H5ARK_STRINGS) {
            strref t = local_str(s, row);
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

/* Steps 1-4 for keys with strings, a sample sort of the records above. *fin gets this
 * rank's block of the permutation as 2 words a record: the group's number (the same for
 * the rows of a group and rising from one group to the next), then the row. */
static int sort_bytes(const object *const *src, size_t nkeys, uint64_t n, uint64_t **fin,
                      uint64_t *reserved, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    uint64_t lo, hi;
    rank_range(n, me, &lo, &hi);
    uint64_t nloc = hi - lo, bytes = 0;
    char *buf = NULL, *samples = NULL, *sorted = NULL, *got = NULL, *lasts = NULL;
    uint64_t *off = NULL, *soff = NULL, *goff = NULL, *pairs = NULL;
    uint64_t *cnt = calloc(2 * (size_t)R, sizeof *cnt), *rcnt = calloc(2 * (size_t)R, 8);
    uint64_t *sc = calloc((size_t)R, sizeof *sc), *rcv = calloc((size_t)R, sizeof *rcv);
    uint64_t *pstarts = calloc((size_t)R + 1, 8), *tgt = calloc((size_t)R + 1, sizeof *tgt);
    int rc = cnt && rcnt && sc && rcv && pstarts && tgt
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    /* 1. this rank's records, sorted */
    for (uint64_t i = 0; i < nloc; i++)
        bytes += 8 + brec_make(src, nkeys, lo + i, NULL);
    if (ranks_agree(rc, err) || registry_scratch_ranks(bytes, (void **)&buf, reserved, err) ||
        registry_scratch_ranks(nloc * 8, (void **)&off, reserved, err))
        goto fail;
    for (uint64_t i = 0, p = 0; i < nloc; i++)
        p += 8 + brec_make(src, nkeys, lo + i, buf + p);
    brec_sort(buf, bytes, off, nloc);
    /* 2. samples from every rank, the same splitters on all */
    uint64_t ns = nloc < SAMPLES ? nloc : SAMPLES, sbytes = 0, total = 0, tbytes = 0;
    for (uint64_t j = 0; j < ns; j++)
        sbytes += 8 + brec_len(buf + off[j * nloc / ns]);
    cnt[2 * me] = ns;
    cnt[2 * me + 1] = sbytes;
    if (ranks_allreduce_u64(cnt, 2 * (size_t)R, RANKS_SUM, err)) goto fail;
    for (int r = 0; r < R; r++) {
        total += cnt[2 * r];
        tbytes += cnt[2 * r + 1];
    }
    if (registry_scratch_ranks(tbytes + (uint64_t)R * sbytes, (void **)&samples, reserved, err) ||
        registry_scratch_ranks(total * 8, (void **)&soff, reserved, err))
        goto fail;
    char *mine = samples + tbytes; /* my samples, once for every rank */
    for (uint64_t r = 0, p = 0; r < (uint64_t)R; r++) {
        for (uint64_t j = 0; j < ns; j++) {
            const char *x = buf + off[j * nloc / ns];
            memcpy(mine + p, x, 8 + brec_len(x));
            p += 8 + brec_len(x);
        }
        sc[r] = sbytes;
        rcv[r] = cnt[2 * r + 1];
    }
    if (ranks_alltoallv(mine, sc, samples, rcv, err)) goto fail;
    brec_sort(samples, tbytes, soff, total);
    /* 3. each record to the rank whose range of the order holds it, in order */
    memset(cnt, 0, 2 * (size_t)R * sizeof *cnt);
    if (registry_scratch_ranks(bytes, (void **)&sorted, reserved, err)) goto fail;
    for (uint64_t i = 0, d = 0, p = 0; i < nloc; i++) {
        const char *x = buf + off[i];
        while (d + 1 < (uint64_t)R &&
               brec_cmp(x, samples + soff[(d + 1) * total / (uint64_t)R]) >= 0)
            d++;
        uint64_t l = 8 + brec_len(x);
        memcpy(sorted + p, x, l);
        p += l;
        cnt[2 * d]++;
        cnt[2 * d + 1] += l;
    }
    free(buf);
    buf = NULL;
    for (int r = 0; r < R; r++)
        sc[r] = 16;
    if (ranks_alltoallv(cnt, sc, rcnt, sc, err)) goto fail; /* records and bytes to me */
    uint64_t ngot = 0, gbytes = 0;
    for (int r = 0; r < R; r++) {
        ngot += rcnt[2 * r];
        gbytes += rcnt[2 * r + 1];
        sc[r] = cnt[2 * r + 1];
        rcv[r] = rcnt[2 * r + 1];
    }
    if (registry_scratch_ranks(gbytes, (void **)&got, reserved, err) ||
        registry_scratch_ranks(ngot * 8, (void **)&goff, reserved, err) ||
        ranks_alltoallv(sorted, sc, got, rcv, err))
        goto fail;
    brec_sort(got, gbytes, goff, ngot);
    /* 4. group starts: a record whose keys differ from the one before, the one before a
     * rank's first being the last record of the nearest earlier rank holding any */
    memset(cnt, 0, 2 * (size_t)R * sizeof *cnt);
    uint64_t lastlen = ngot ? 8 + brec_len(got + goff[ngot - 1]) : 0, lbytes = 0;
    cnt[me] = lastlen;
    if (ranks_allreduce_u64(cnt, (size_t)R, RANKS_SUM, err)) goto fail;
    for (int r = 0; r < R; r++)
        lbytes += cnt[r];
    if (registry_scratch_ranks(lbytes + (uint64_t)R * lastlen, (void **)&lasts, reserved, err))
        goto fail;
    for (int r = 0; r < R; r++) {
        memcpy(lasts + lbytes + (uint64_t)r * lastlen, ngot ? got + goff[ngot - 1] : "", lastlen);
        sc[r] = lastlen;
        rcv[r] = cnt[r];
    }
    if (ranks_alltoallv(lasts + lbytes, sc, lasts, rcv, err)) goto fail;
    const char *prev = NULL;
    for (uint64_t r = 0, p = 0; r < (uint64_t)me; p += cnt[r], r++)
        if (cnt[r]) prev = lasts + p;
    if (registry_scratch_ranks(ngot * 16, (void **)&pairs, reserved, err)) goto fail;
    uint64_t nstart = 0;
    for (uint64_t i = 0; i < ngot; i++) {
        const char *x = got + goff[i], *y = i ? got + goff[i - 1] : prev;
        pairs[2 * i] = !y || !brec_same_keys(x, y);
        pairs[2 * i + 1] = get_be64(x + brec_len(x));
        nstart += pairs[2 * i];
    }
    memset(cnt, 0, 2 * (size_t)R * sizeof *cnt);
    cnt[me] = nstart;
    if (ranks_allreduce_u64(cnt, (size_t)R, RANKS_SUM, err)) goto fail;
    uint64_t g = 0; /* groups started before my first record, then the group's number */
    for (int r = 0; r < me; r++)
        g += cnt[r];
    g--; /* wraps when no group came before: my first record then starts one */
    for (uint64_t i = 0; i < ngot; i++) {
        g += pairs[2 * i];
        pairs[2 * i] = g;
    }
    /* 5. evened out to permutation's block distribution */
    if (even_out(pairs, ngot, n, nloc, 16, pstarts, tgt, (void **)fin, reserved, err)) goto fail;
    rc = 0;
    goto out;
fail:
    rc = -1;
out:
    free(buf);
    free(samples);
    free(sorted);
    free(got);
    free(lasts);
    free(off);
    free(soff);
    free(goff);
    free(pairs);
    free(cnt);
    free(rcnt);
    free(sc);
    free(rcv);
    free(pstarts);
    free(tgt);
    return rc;
}

static int fetch_rows(const darray *a, const int64_t *rows, uint64_t nrows, void *out,
                      h5ark_error *err);

/* Whether the key's rows are the block distribution (else its shards are laid out as,
 * say, an awkward array's buffer). */
static bool key_in_blocks(const object *s, uint64_t n) {
    const darray *a = s->objtype == H5ARK_STRINGS ? s->segments : s->values;
    for (int b = 0; b < a->nshards; b++)
        if (a->shards[b].start != locales_block_start(n, a->nshards, b)) return false;
    return true;
}

/* The groupby across ranks; with codes, also *codes: each row's group number (the codes
 * of a categorical made from the key). */
static object *make_ranks(object *const *keys, size_t nkeys, object **codes, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self(), L = locales_count(), T = locales_local_count();
    uint64_t n = keys[0]->size, reserved = 0;
    uint64_t lo, hi;
    rank_range(n, me, &lo, &hi);
    uint64_t nloc = hi - lo, *fin = NULL, *last = NULL, *gcount = NULL, *cpairs = NULL;
    uint64_t *pairs = NULL, *gpairs = NULL, *gstarts = NULL, *tgt = NULL, *cin = NULL;
    uint64_t *cnt = NULL, *rcnt = NULL, *sc = NULL, *rcv = NULL;
    object *perm = NULL, *segments = NULL, *uik = NULL, *gb = NULL;
    bool bytes = false;
    int rc = 0;
    if (codes) *codes = NULL;
    for (size_t k = 0; k < nkeys && rc == 0; k++) {
        const object *s = sort_source(keys[k]);
        bytes |= s->objtype == H5ARK_STRINGS;
        if (s->objtype == H5ARK_STRINGS ? !s->segments || !s->values : !s->values)
            rc = ranks_not_yet(err, "groupby of a %s key", h5ark_objtype_name(keys[k]->objtype));
        else if (s->objtype == H5ARK_STRINGS && !key_in_blocks(s, n))
            rc = ranks_not_yet(err, "groupby of strings keys that are not block distributed");
    }
    if (rc) return NULL; /* metadata: the same answer on every rank */
    /* what each key sorts by; a pdarray laid out otherwise than in blocks is first fetched
     * to the ranks whose block of rows it is, as one shard of the rows [lo, hi) */
    const object **src = calloc(nkeys, sizeof *src);
    object *fobj = calloc(nkeys, sizeof *fobj);
    darray *fd = calloc(nkeys, sizeof *fd);
    shard *fs = calloc(nkeys, sizeof *fs);
    int64_t *rows = NULL;
    rc = src && fobj && fd && fs
             ? 0
             : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    if (ranks_agree(rc, err)) goto out;
    for (size_t k = 0; k < nkeys; k++) {
        const object *s = src[k] = sort_source(keys[k]);
        if (s->objtype == H5ARK_STRINGS || key_in_blocks(s, n)) continue;
        if (!rows) {
            if (registry_scratch_ranks(nloc * 8, (void **)&rows, &reserved, err)) goto out;
            for (uint64_t i = 0; i < nloc; i++)
                rows[i] = (int64_t)(lo + i);
        }
        size_t is = s->values->itemsize;
        void *buf = NULL;
        if (registry_scratch_ranks(nloc * is, &buf, &reserved, err)) goto out;
        fs[k] = (shard){buf, lo, nloc};
        fd[k] = (darray){
            .dtype = s->values->dtype, .itemsize = is, .size = n, .nshards = 1, .shards = &fs[k]};
        fobj[k] =
            (object){.objtype = H5ARK_PDARRAY, .dtype = s->dtype, .size = n, .values = &fd[k]};
        src[k] = &fobj[k];
        if (fetch_rows(s->values, rows, nloc, buf, err)) goto out;
    }
    /* records sorted and evened out: kw words of keys, then the row. Progress as at one
     * rank (n rows a key's sort, then n for the groups), each counted once the collective
     * step that ends it is over: rank 0's status then holds for every rank */
    size_t w = bytes ? 2 : nkeys + 1, kw = w - 1;
    progress_start(progress_here(), PROGRESS_ROWS, n * (nkeys + 1));
    if (bytes ? sort_bytes(src, nkeys, n, &fin, &reserved, err)
              : sort_words(src, nkeys, n, &fin, &reserved, err))
        goto out;
    progress_add(progress_here(), n * nkeys);
    gstarts = calloc((size_t)R + 1, sizeof *gstarts);
    last = calloc((size_t)R * (w + 1), sizeof *last);
    gcount = calloc((size_t)L, sizeof *gcount);
    tgt = calloc((size_t)R + 1, sizeof *tgt);
    cnt = calloc((size_t)R, sizeof *cnt);
    rcnt = calloc((size_t)R, sizeof *rcnt);
    sc = calloc((size_t)R, sizeof *sc);
    rcv = calloc((size_t)R, sizeof *rcv);
    rc = gstarts && last && gcount && tgt && cnt && rcnt && sc && rcv
             ? 0
             : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    if (ranks_agree(rc, err)) goto out;
    /* 5. group starts: a record whose keys differ from the one before (maybe a rank's) */
    if (nloc) {
        last[(size_t)me * (w + 1)] = 1;
        memcpy(last + (size_t)me * (w + 1) + 1, fin + (nloc - 1) * w, w * 8);
    }
    if (ranks_allreduce_u64(last, (size_t)R * (w + 1), RANKS_SUM, err)) goto out;
    const uint64_t *prev = NULL;
    for (int r = me - 1; r >= 0 && !prev; r--)
        if (last[(size_t)r * (w + 1)]) prev = last + (size_t)r * (w + 1) + 1;
    if (registry_scratch_ranks(nloc * 2 * 8, (void **)&pairs, &reserved, err)) goto out;
    uint64_t nmine = 0;
    for (uint64_t i = 0; i < nloc; i++) {
        const uint64_t *x = fin + i * w, *y = i ? fin + (i - 1) * w : prev;
        if (y && memcmp(x, y, kw * 8) == 0) continue;
        pairs[2 * nmine] = lo + i;    /* where the group starts */
        pairs[2 * nmine + 1] = x[kw]; /* its first row */
        nmine++;
        gcount[block_of(n, L, lo + i)]++;
    }
    if (ranks_allreduce_u64(gcount, (size_t)L, RANKS_SUM, err)) goto out;
    uint64_t ngroups = 0;
    for (int r = 0; r < R; r++) {
        gstarts[r] = ngroups;
        for (int t = 0; t < T; t++)
            ngroups += gcount[r * T + t];
    }
    gstarts[R] = ngroups;
    /* 6. the objects, each group's start and first row to its place */
    perm = object_new_pdarray(H5ARK_INT64, n, err);
    if (perm) segments = object_new_pdarray(H5ARK_INT64, ngroups, err);
    if (segments) uik = object_new_pdarray(H5ARK_INT64, ngroups, err);
    if (!uik) goto out;
    for (int t = 0; t < T; t++) {
        shard *sh = &perm->values->shards[locales_local_first() + t];
        int64_t *out = sh->data;
        for (uint64_t i = 0; i < sh->count; i++)
            out[i] = (int64_t)fin[(sh->start - lo + i) * w + kw];
    }
    uint64_t g0, g1;
    rank_range(ngroups, me, &g0, &g1);
    block_starts(ngroups, tgt);
    if (registry_scratch_ranks((g1 - g0) * 2 * 8, (void **)&gpairs, &reserved, err) ||
        rebalance(pairs, gstarts, tgt, 2 * 8, gpairs, err))
        goto out;
    for (int t = 0; t < T; t++) {
        int c = locales_local_first() + t;
        shard *ss = &segments->values->shards[c], *us = &uik->values->shards[c];
        for (uint64_t i = 0; i < ss->count; i++) {
            ((int64_t *)ss->data)[i] = (int64_t)gpairs[2 * (ss->start - g0 + i)];
            ((int64_t *)us->data)[i] = (int64_t)gpairs[2 * (ss->start - g0 + i) + 1];
        }
    }
    /* 7. each row's group number to the rank holding the row */
    if (codes) {
        if (!(*codes = object_new_pdarray(H5ARK_INT64, n, err)) ||
            registry_scratch_ranks(nloc * 2 * 16, (void **)&cpairs, &reserved, err))
            goto out;
        cin = cpairs + 2 * nloc;
        block_starts(n, tgt);
        uint64_t g = gstarts[me] - 1; /* wraps: my first record then starts a group */
        for (uint64_t i = 0; i < nloc; i++) {
            const uint64_t *x = fin + i * w, *y = i ? fin + (i - 1) * w : prev;
            if (!y || memcmp(x, y, kw * 8) != 0) g++;
            int q = 0;
            while (q + 1 < R && tgt[q + 1] <= x[kw])
                q++;
            cnt[q]++;
            pairs[2 * i] = g; /* pairs is no longer needed: a scratch of the codes */
            pairs[2 * i + 1] = x[kw];
        }
        for (int r = 0; r < R; r++)
            sc[r] = 8;
        if (ranks_alltoallv(cnt, sc, rcnt, sc, err)) goto out;
        uint64_t *pos = gstarts; /* no longer needed: where each rank's pairs go */
        for (int r = 0; r < R; r++) {
            pos[r] = r ? pos[r - 1] + cnt[r - 1] : 0;
            sc[r] = cnt[r] * 16;
            rcv[r] = rcnt[r] * 16;
        }
        for (uint64_t i = 0; i < nloc; i++) {
            int q = 0;
            while (q + 1 < R && tgt[q + 1] <= pairs[2 * i + 1])
                q++;
            memcpy(cpairs + 2 * pos[q]++, pairs + 2 * i, 16);
        }
        if (ranks_alltoallv(cpairs, sc, cin, rcv, err)) goto out;
        for (uint64_t i = 0; i < nloc; i++) {
            shard *sh =
                &(*codes)->values->shards[darray_shard_of((*codes)->values, cin[2 * i + 1])];
            ((int64_t *)sh->data)[cin[2 * i + 1] - sh->start] = (int64_t)cin[2 * i];
        }
    }
    gb = groupby_assemble(n, perm, segments, uik, keys, nkeys, ngroups, err);
    if (gb) progress_add(progress_here(), n);
out:
    for (size_t k = 0; fs && k < nkeys; k++)
        free(fs[k].data);
    free(src);
    free(fobj);
    free(fd);
    free(fs);
    free(rows);
    if (!gb && codes) {
        object_release(*codes);
        *codes = NULL;
    }
    object_release(perm);
    object_release(segments);
    object_release(uik);
    free(fin);
    free(pairs);
    free(gpairs);
    free(cpairs);
    free(last);
    free(gcount);
    free(gstarts);
    free(tgt);
    free(cnt);
    free(rcnt);
    free(sc);
    free(rcv);
    if (reserved) registry_unreserve(reserved);
    return gb;
}

/* Several ranks: out[i] = element rows[i] of the darray a (a->itemsize bytes each, any
 * distribution), whichever rank holds it: each rank sends the owners the rows it wants and
 * gets their elements back (all-to-alls of the counts, the rows and the elements). */
static int fetch_rows(const darray *a, const int64_t *rows, uint64_t nrows, void *out,
                      h5ark_error *err) {
    int R = ranks_count(), me = ranks_self(), rc = 0;
    size_t is = a->itemsize;
    uint64_t reserved = 0, nin = 0;
    uint64_t *cnt = calloc((size_t)R, sizeof *cnt), *rcnt = calloc((size_t)R, sizeof *rcnt);
    uint64_t *sc = calloc((size_t)R, sizeof *sc), *rcv = calloc((size_t)R, sizeof *rcv);
    uint64_t *pos = calloc((size_t)R + 1, sizeof *pos);
    uint64_t *req = NULL, *order = NULL, *inreq = NULL;
    char *rep = NULL, *back = NULL;
    if (!cnt || !rcnt || !sc || !rcv || !pos)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    if (ranks_agree(rc, err) || registry_scratch_ranks(nrows * 16, (void **)&req, &reserved, err) ||
        registry_scratch_ranks(nrows * is, (void **)&back, &reserved, err)) {
        rc = -1;
        goto out;
    }
    order = req + nrows;
    for (uint64_t i = 0; i < nrows; i++)
        cnt[locales_rank_of(darray_shard_of(a, (uint64_t)rows[i]))]++;
    for (int r = 0; r < R; r++)
        pos[r + 1] = pos[r] + cnt[r];
    for (uint64_t i = 0; i < nrows; i++) { /* grouped by owner, in order within each */
        uint64_t k = pos[locales_rank_of(darray_shard_of(a, (uint64_t)rows[i]))]++;
        req[k] = (uint64_t)rows[i];
        order[k] = i;
    }
    for (int r = 0; r < R; r++)
        sc[r] = 8;
    if ((rc = ranks_alltoallv(cnt, sc, rcnt, sc, err)) != 0) goto out;
    for (int r = 0; r < R; r++) {
        nin += rcnt[r];
        sc[r] = cnt[r] * 8;
        rcv[r] = rcnt[r] * 8;
    }
    if ((rc = registry_scratch_ranks(nin * (8 + is), (void **)&inreq, &reserved, err)) != 0 ||
        (rc = ranks_alltoallv(req, sc, inreq, rcv, err)) != 0)
        goto out;
    rep = (char *)(inreq + nin);
    for (uint64_t k = 0; k < nin; k++)
        memcpy(rep + k * is, span_at(a, inreq[k], NULL), is);
    for (int r = 0; r < R; r++) {
        sc[r] = rcnt[r] * is;
        rcv[r] = cnt[r] * is;
    }
    if ((rc = ranks_alltoallv(rep, sc, back, rcv, err)) != 0) goto out;
    for (uint64_t k = 0; k < nrows; k++)
        memcpy((char *)out + order[k] * is, back + k * is, is);
out:
    free(cnt);
    free(rcnt);
    free(sc);
    free(rcv);
    free(pos);
    free(req);
    free(inreq);
    free(back);
    if (reserved) registry_unreserve(reserved);
    return rc;
}

/* This rank's shards of a block-distributed darray, back to back (they are contiguous
 * elements): a malloc'd copy. */
static void *local_elements(const darray *a) {
    int first = locales_local_first(), T = locales_local_count();
    uint64_t bytes = 0;
    for (int t = 0; t < T; t++)
        bytes += a->shards[first + t].count * a->itemsize;
    char *p = malloc(bytes ? bytes : 1), *q = p;
    for (int t = 0; p && t < T; t++) {
        const shard *sh = &a->shards[first + t];
        if (sh->count) memcpy(q, sh->data, sh->count * a->itemsize);
        q += sh->count * a->itemsize;
    }
    return p;
}

/* Several ranks: src's elements at the rows idx holds (groupby_take of a pdarray). */
static object *take_ranks(const object *src, const object *idx, h5ark_error *err) {
    object *out = object_new_pdarray(src->dtype, idx->size, err);
    if (!out) return NULL;
    out->tag = src->tag;
    int64_t *rows = local_elements(idx->values);
    void *vals = local_elements(out->values); /* room of the right size */
    uint64_t i0, i1;
    rank_range(idx->size, ranks_self(), &i0, &i1);
    int rc = rows && vals ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err) || fetch_rows(src->values, rows, i1 - i0, vals, err)) {
        rc = -1;
    } else {
        const char *p = vals;
        for (int t = 0; t < locales_local_count(); t++) {
            shard *sh = &out->values->shards[locales_local_first() + t];
            if (sh->count) memcpy(sh->data, p, sh->count * out->values->itemsize);
            p += sh->count * out->values->itemsize;
        }
    }
    free(rows);
    free(vals);
    if (rc) {
        object_release(out);
        return NULL;
    }
    return out;
}

/* Several ranks: the strings of src at rows[0..nrows), wherever they lie: offs[i] where
 * string i starts in *bytes (scratch reserved into *reserved; *nbytes of them), the strings
 * back to back in that order, each followed by its NUL. Each rank asks the ranks holding the rows
 * (all-to-alls of the counts, the rows, the lengths and the bytes). */
static int fetch_strings(const object *src, const uint64_t *rows, uint64_t nrows, uint64_t *offs,
                         char **bytes, uint64_t *nbytes, uint64_t *reserved, h5ark_error *err) {
    int R = ranks_count(), me = ranks_self(), rc = 0;
    uint64_t nin = 0, inbytes = 0, outbytes = 0;
    uint64_t *cnt = calloc((size_t)R, 8), *rcnt = calloc((size_t)R, 8);
    uint64_t *sc = calloc((size_t)R, 8), *rcv = calloc((size_t)R, 8), *bsc = calloc((size_t)R, 8);
    uint64_t *pos = calloc((size_t)R + 1, 8), *req = NULL, *inreq = NULL, *glen = NULL;
    char *rep = NULL, *back = NULL;
    if (!cnt || !rcnt || !sc || !rcv || !bsc || !pos)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    if (ranks_agree(rc, err) || registry_scratch_ranks(nrows * 24, (void **)&req, reserved, err))
        goto fail;
    uint64_t *order = req + nrows;
    glen = req + 2 * nrows;
    for (uint64_t i = 0; i < nrows; i++)
        cnt[locales_rank_of(darray_shard_of(src->segments, rows[i]))]++;
    for (int r = 0; r < R; r++)
        pos[r + 1] = pos[r] + cnt[r];
    for (uint64_t i = 0; i < nrows; i++) { /* grouped by owner, in order within each */
        uint64_t k = pos[locales_rank_of(darray_shard_of(src->segments, rows[i]))]++;
        req[k] = rows[i];
        order[k] = i;
    }
    for (int r = 0; r < R; r++)
        sc[r] = 8;
    if (ranks_alltoallv(cnt, sc, rcnt, sc, err)) goto fail;
    for (int r = 0; r < R; r++) {
        nin += rcnt[r];
        sc[r] = cnt[r] * 8;
        rcv[r] = rcnt[r] * 8;
    }
    if (registry_scratch_ranks(nin * 16, (void **)&inreq, reserved, err) ||
        ranks_alltoallv(req, sc, inreq, rcv, err))
        goto fail;
    uint64_t *inlen = inreq + nin;
    for (uint64_t k = 0, r = 0, left = rcnt[0]; k < nin; k++, left--) {
        while (left == 0)
            left = rcnt[++r];
        inlen[k] = local_str(src, inreq[k]).len + 1;
        bsc[r] += inlen[k];
        inbytes += inlen[k];
    }
    if (ranks_alltoallv(inlen, rcv, glen, sc, err)) goto fail; /* the lengths back */
    memset(rcv, 0, (size_t)R * 8);
    for (uint64_t k = 0, r = 0, left = cnt[0]; k < nrows; k++, left--) {
        while (left == 0)
            left = cnt[++r];
        rcv[r] += glen[k];
        outbytes += glen[k];
    }
    if (registry_scratch_ranks(inbytes, (void **)&rep, reserved, err) ||
        registry_scratch_ranks(outbytes, (void **)&back, reserved, err) ||
        registry_scratch_ranks(outbytes, (void **)bytes, reserved, err))
        goto fail;
    for (uint64_t k = 0, p = 0; k < nin; k++) {
        memcpy(rep + p, local_str(src, inreq[k]).p, inlen[k] - 1);
        rep[p + inlen[k] - 1] = '\0';
        p += inlen[k];
    }
    if (ranks_alltoallv(rep, bsc, back, rcv, err)) goto fail;
    /* back in the order asked: where each string starts in the result */
    for (uint64_t k = 0; k < nrows; k++)
        offs[order[k]] = glen[k];
    for (uint64_t i = 0, p = 0; i < nrows; i++) {
        uint64_t l = offs[i];
        offs[i] = p;
        p += l;
    }
    for (uint64_t k = 0, p = 0; k < nrows; k++) {
        memcpy(*bytes + offs[order[k]], back + p, glen[k]);
        p += glen[k];
    }
    *nbytes = outbytes;
    goto out;
fail:
    rc = -1;
out:
    free(cnt);
    free(rcnt);
    free(sc);
    free(rcv);
    free(bsc);
    free(pos);
    free(req);
    free(inreq);
    free(rep);
    free(back);
    return rc;
}

/* Several ranks: groupby_take_strings. Each rank fetches the strings of its block of the
 * result (the rows first, when idx gives them), the ranks add up each locale's bytes and
 * make the strings, and each rank fills its own shards. */
static object *take_strings_ranks(const object *src, const object *idx, const char *extra,
                                  h5ark_error *err) {
    uint64_t ntake = idx ? idx->size : src->size, count = ntake + (extra ? 1 : 0);
    uint64_t elen = extra ? strlen(extra) + 1 : 0, o0, o1, reserved = 0, nbytes = 0;
    rank_range(count, ranks_self(), &o0, &o1);
    uint64_t m = o1 < ntake ? o1 - o0 : ntake > o0 ? ntake - o0 : 0; /* rows from src */
    uint64_t *rows = NULL, *offs = NULL;
    char *bytes = NULL;
    object *out = NULL;
    if (registry_scratch_ranks(m * 16, (void **)&rows, &reserved, err)) goto out;
    offs = rows + m;
    for (uint64_t i = 0; i < m; i++)
        rows[i] = o0 + i;
    /* fetch_rows reads every row asked before it writes a result: in place is safe */
    if (idx && fetch_rows(idx->values, (const int64_t *)rows, m, rows, err)) goto out;
    if (fetch_strings(src, rows, m, offs, &bytes, &nbytes, &reserved, err)) goto out;
    /* this rank's block: the strings taken, then the extra one when it falls here */
    static const int64_t zero = 0;
    strings_run runs[2] = {{o0, m, bytes, nbytes, (const int64_t *)offs, 0},
                           {ntake, 1, extra, elen, &zero, 0}};
    out = strings_from_block(count, runs, extra && ntake >= o0 && ntake < o1 ? 2 : 1, err);
out:
    free(rows);
    free(bytes);
    if (reserved) registry_unreserve(reserved);
    return out;
}

object *groupby_make_codes(object *const *keys, size_t nkeys, object **codes, h5ark_error *err) {
    return make_ranks(keys, nkeys, codes, err);
}

object *groupby_make(object *const *keys, size_t nkeys, h5ark_error *err) {
    if (ranks_call_seq()) return make_ranks(keys, nkeys, NULL, err);
    plan p = {.L = locales_count(), .n = keys[0]->size, .nkeys = nkeys};
    int L = p.L;
    object *gb = NULL;
    /* scratch per row: order, sorted key 0, two radix buffers, flags, and per key a view */
    uint64_t per_row = 8 * 4 + 1, reserved = 0;
    for (size_t k = 0; k < nkeys; k++)
        per_row += keys[k]->objtype == H5ARK_STRINGS ? sizeof(strref) : nkeys > 1 ? 8 : 0;
    if (p.n > OBJECT_MAX_ELEMENTS) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "too many rows");
        return NULL;
    }
    if (registry_reserve(p.n * per_row, err)) return NULL;
    reserved = p.n * per_row;
    p.src = calloc(nkeys, sizeof *p.src);
    p.is_str = calloc(nkeys, sizeof *p.is_str);
    p.lo = calloc((size_t)L + 1, sizeof *p.lo);
    p.len = calloc((size_t)L, sizeof *p.len);
    p.order = calloc((size_t)L, sizeof *p.order);
    p.skey = calloc((size_t)L, sizeof *p.skey);
    p.flags = calloc((size_t)L, sizeof *p.flags);
    p.enc = calloc(nkeys * (size_t)L, sizeof *p.enc);
    p.refs = calloc(nkeys * (size_t)L, sizeof *p.refs);
    p.split = calloc(((size_t)L + 1) * (size_t)L, sizeof *p.split);
    p.gcount = calloc((size_t)L, sizeof *p.gcount);
    p.gfirst = calloc((size_t)L, sizeof *p.gfirst);
    p.startpos = calloc((size_t)L * (size_t)L, sizeof *p.startpos);
    if (!p.src || !p.is_str || !p.lo || !p.len || !p.order || !p.skey || !p.flags || !p.enc ||
        !p.refs || !p.split || !p.gcount || !p.gfirst || !p.startpos) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < nkeys; k++) {
        p.src[k] = sort_source(keys[k]);
        p.is_str[k] = p.src[k]->objtype == H5ARK_STRINGS;
    }
    for (int b = 0; b <= L; b++)
        p.lo[b] = locales_block_start(p.n, L, b);
    for (int b = 0; b < L; b++)
        p.len[b] = p.lo[b + 1] - p.lo[b];
    for (int r = 0; r < L; r++)
        p.split[(size_t)L * L + r] = p.len[r];

    p.perm = object_new_pdarray(H5ARK_INT64, p.n, err);
    if (!p.perm) goto out;
    /* the rows, sorted once by each key and merged once */
    progress_start(progress_here(), PROGRESS_ROWS, p.n * (nkeys + 1));
    if (p.n > 0) {
        locales_run(sort_run, &p);
        if (atomic_load(&p.failed)) goto oom;
        locales_run(find_splits, &p);
        locales_run(merge_runs, &p);
        if (atomic_load(&p.failed)) goto oom;
    }
    uint64_t ngroups = 0;
    for (int b = 0; b < L; b++) {
        p.gfirst[b] = ngroups;
        ngroups += p.gcount[b];
    }
    p.segments = object_new_pdarray(H5ARK_INT64, ngroups, err);
    if (p.segments) p.uik = object_new_pdarray(H5ARK_INT64, ngroups, err);
    if (!p.uik) goto out;
    if (ngroups > 0) {
        locales_run(find_group_starts, &p);
        locales_run(fill_groups, &p);
    }
    gb = groupby_assemble(p.n, p.perm, p.segments, p.uik, keys, nkeys, ngroups, err);
    goto out;
oom:
    h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory sorting %llu rows",
               (unsigned long long)p.n);
out:
    free_plan(&p);
    registry_unreserve(reserved);
    return gb;
}

/* ---- checks of a groupby that may come from a file ---- */

typedef struct {
    const object *perm, *seg, *uik;
    uint64_t n;
    _Atomic uint64_t bad_perm, bad_seg, bad_uik; /* first bad index, or UINT64_MAX */
    const int64_t *prev; /* several ranks: per locale, the segment before its first */
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
        int64_t prev = g == 0    ? 0
                       : i > 0   ? v[i - 1]
                       : j->prev ? j->prev[b]
                                 : get_i64(j->seg->values, g - 1);
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
    /* several ranks: the segment before each locale's first may be another rank's; every
     * rank learns each shard's last one, and the first bad index of all */
    int L = locales_count();
    uint64_t *last = NULL;
    if (ranks_call_seq()) {
        last = calloc(2 * (size_t)L, sizeof *last);
        if (ranks_agree(last ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err))
            return -1;
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
    }
    locales_run(check_shard, &j);
    static const char *const what[] = {"permutation", "segments", "unique_key_idx"};
    uint64_t bad[] = {atomic_load(&j.bad_perm), atomic_load(&j.bad_seg), atomic_load(&j.bad_uik)};
    if (last) {
        free(last);
        if (ranks_allreduce_u64(bad, 3, RANKS_MIN, err)) return -1;
    }
    for (int i = 0; i < 3; i++)
        if (bad[i] != UINT64_MAX)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "groupby '%s': %s[%llu] is out of range%s",
                              name, what[i], (unsigned long long)bad[i],
                              i == 1 ? " (segments start at 0, never decrease and stay within "
                                       "the rows)"
                                     : "");
    return 0;
}

/* ---- gathers ---- */

typedef struct {
    const object *src;
    const object *idx; /* NULL: identity */
    const char *extra;
    uint64_t extra_len;
    object *out;
    uint64_t count;  /* elements of the output */
    uint64_t *bytes; /* strings: bytes per output locale */
} take_job;

static inline uint64_t take_index(const take_job *j, uint64_t i) {
    return j->idx ? (uint64_t)get_i64(j->idx->values, i) : i;
}

static void take_values(int c, void *ctx) {
    take_job *j = ctx;
    shard *o = &j->out->values->shards[c];
    size_t w = j->out->values->itemsize;
    char *dst = o->data;
    for (uint64_t i = 0; i < o->count; i++)
        memcpy(dst + i * w, span_at(j->src->values, take_index(j, o->start + i), NULL), w);
}

/* Output string i of a strings take: a source string, or the extra one at the end. */
static strref take_string(const take_job *j, uint64_t i, uint64_t count) {
    if (j->extra && i == count - 1) return (strref){j->extra, j->extra_len};
    return str_at(j->src, take_index(j, i));
}

static void take_count_bytes(int c, void *ctx) {
    take_job *j = ctx;
    uint64_t count = j->count;
    uint64_t lo = locales_block_start(count, locales_count(), c);
    uint64_t hi = locales_block_start(count, locales_count(), c + 1), total = 0;
    for (uint64_t i = lo; i < hi; i++)
        total += take_string(j, i, count).len + 1;
    j->bytes[c] = total;
}

static void take_fill_strings(int c, void *ctx) {
    take_job *j = ctx;
    shard *seg = &j->out->segments->shards[c];
    shard *val = &j->out->values->shards[c];
    int64_t *off = seg->data;
    char *bytes = val->data;
    uint64_t pos = 0;
    for (uint64_t i = 0; i < seg->count; i++) {
        strref s = take_string(j, seg->start + i, j->count);
        off[i] = (int64_t)(val->start + pos);
        memcpy(bytes + pos, s.p, s.len);
        bytes[pos + s.len] = '\0';
        pos += s.len + 1;
    }
}

object *groupby_take_strings(const object *src, const object *idx, const char *extra,
                             h5ark_error *err) {
    if (ranks_call_seq()) return take_strings_ranks(src, idx, extra, err);
    int L = locales_count();
    take_job j = {.src = src, .idx = idx, .extra = extra, .extra_len = extra ? strlen(extra) : 0};
    uint64_t count = j.count = (idx ? idx->size : src->size) + (extra ? 1 : 0);
    j.bytes = calloc((size_t)L, sizeof *j.bytes);
    if (!j.bytes) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    locales_run(take_count_bytes, &j);
    j.out = object_new_strings(count, j.bytes, err);
    free(j.bytes);
    if (!j.out) return NULL;
    locales_run(take_fill_strings, &j);
    return j.out;
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
    /* several ranks: pdarrays, strings, and categoricals through their codes (the categories
     * are shared, and every rank holds the object) */
    if (ranks_call_seq() && src->objtype != H5ARK_CATEGORICAL && src->objtype != H5ARK_STRINGS) {
        if (src->objtype == H5ARK_PDARRAY && src->values) return take_ranks(src, idx, err);
        ranks_not_yet(err, "taking the rows of a %s", h5ark_objtype_name(src->objtype));
        return NULL;
    }
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
    object *out = object_new_pdarray(src->dtype, idx->size, err);
    if (!out) return NULL;
    out->tag = src->tag;
    take_job j = {.src = src, .idx = idx, .out = out};
    locales_run(take_values, &j);
    return out;
}

typedef struct {
    const object *src;
    strref s;
    _Atomic uint64_t found;
} find_job;

static void find_shard(int b, void *ctx) {
    find_job *j = ctx;
    const shard *seg = &j->src->segments->shards[b];
    const shard *val = &j->src->values->shards[b];
    for (uint64_t i = 0; i < seg->count; i++) {
        strref here;
        if (ranks_count() > 1) { /* a shard's strings are in its own values shard */
            const int64_t *off = seg->data;
            uint64_t to = i + 1 < seg->count ? (uint64_t)off[i + 1] : val->start + val->count;
            here = (strref){(const char *)val->data + ((uint64_t)off[i] - val->start),
                            to - (uint64_t)off[i] - 1};
        } else {
            here = str_at(j->src, seg->start + i);
        }
        if (strref_cmp(here, j->s) == 0) {
            locales_note_first(&j->found, seg->start + i);
            return;
        }
    }
}

uint64_t groupby_find_string(const object *src, const char *s) {
    find_job j = {.src = src, .s = {s, strlen(s)}};
    atomic_init(&j.found, UINT64_MAX);
    locales_run(find_shard, &j);
    return atomic_load(&j.found);
}

/* ---- aggregate ---- */

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
    uint64_t n;
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
    uint64_t ng = j->seg->size;
    void *scratch = NULL;
    uint64_t reserved = 0;
    if (j->op == AGG_NUNIQUE) { /* room for the largest group */
        uint64_t largest = 0;
        for (uint64_t g = o->start; g < o->start + o->count; g++) {
            uint64_t a = (uint64_t)get_i64(j->seg, g);
            uint64_t b = g + 1 < ng ? (uint64_t)get_i64(j->seg, g + 1) : j->n;
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
        uint64_t b = g + 1 < ng ? (uint64_t)get_i64(j->seg, g + 1) : j->n;
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

/* Several ranks: every value is fetched to the place of its row in the permutation, then
 * moved to the rank whose groups cover that place; each rank then aggregates its groups
 * with aggregate_shard over arrays of its own (one shard each, indexed as the whole). */
static object *aggregate_ranks(const object *gb, agg_op op, const object *values,
                               h5ark_error *err) {
    int R = ranks_count(), me = ranks_self();
    const object *seg = object_component_get(gb, "segments");
    const darray *perm = object_component_get(gb, "permutation")->values;
    uint64_t n = gb->size, ng = seg->size, p0, p1, g0, g1;
    rank_range(n, me, &p0, &p1);
    rank_range(ng, me, &g0, &g1);
    h5ark_dtype dt = values ? values->dtype : H5ARK_INT64;
    object *out = object_new_pdarray(result_dtype(op, dt), ng, err);
    if (!out) return NULL;
    uint64_t *held = calloc((size_t)R + 1, sizeof *held), *tgt = calloc((size_t)R + 1, sizeof *tgt);
    uint64_t *first = calloc(2 * (size_t)R, sizeof *first);
    int64_t *rows = NULL, *ident = NULL, *sg = NULL;
    void *pv = NULL, *tv = NULL;
    size_t is = values ? values->values->itemsize : 8;
    int rc = held && tgt && first ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) goto fail;
    /* where each rank's groups start in the permutation: they end where the next start */
    if (g1 > g0) {
        first[2 * me] = 1;
        first[2 * me + 1] = (uint64_t)get_i64(seg->values, g0);
    }
    if (ranks_allreduce_u64(first, 2 * (size_t)R, RANKS_SUM, err)) goto fail;
    block_starts(n, held);
    tgt[R] = n;
    for (int q = R - 1; q >= 0; q--)
        tgt[q] = first[2 * q] ? first[2 * q + 1] : tgt[q + 1];
    uint64_t P0 = tgt[me], P1 = tgt[me + 1];
    rows = local_elements(perm);
    pv = malloc((p1 - p0) * is + 1);
    tv = malloc((P1 - P0) * is + 1);
    ident = malloc((P1 - P0) * 8 + 1);
    sg = malloc((g1 - g0 + 1) * 8);
    rc = rows && pv && tv && ident && sg ? 0
                                         : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) goto fail;
    if (values && (fetch_rows(values->values, rows, p1 - p0, pv, err) ||
                   rebalance(pv, held, tgt, is, tv, err)))
        goto fail;
    for (uint64_t i = 0; i < P1 - P0; i++)
        ident[i] = (int64_t)(P0 + i);
    for (uint64_t g = g0; g < g1; g++)
        sg[g - g0] = get_i64(seg->values, g);
    sg[g1 - g0] = (int64_t)P1;
    /* this rank's arrays, indexed as the whole ones */
    shard sp = {ident, P0, P1 - P0}, sv = {tv, P0, P1 - P0}, ss = {sg, g0, g1 - g0 + 1};
    darray fperm = {.dtype = H5ARK_INT64, .itemsize = 8, .size = P1, .nshards = 1, .shards = &sp};
    darray fseg = {
        .dtype = H5ARK_INT64, .itemsize = 8, .size = g1 + 1, .nshards = 1, .shards = &ss};
    darray fval = {.dtype = dt, .itemsize = is, .size = P1, .nshards = 1, .shards = &sv};
    object fobj = {.objtype = H5ARK_PDARRAY, .dtype = dt, .size = P1, .values = &fval};
    agg_job j = {.values = values ? &fobj : NULL,
                 .op = op,
                 .perm = &fperm,
                 .seg = &fseg,
                 .n = n,
                 .out = out};
    locales_run(aggregate_shard, &j);
    rc = atomic_load(&j.failed)
             ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "aggregate %s: out of memory for the largest group on rank %d",
                          op_names[op], me)
             : 0;
    if (ranks_agree(rc, err)) goto fail;
    goto done;
fail:
    object_release(out);
    out = NULL;
done:
    free(held);
    free(tgt);
    free(first);
    free(rows);
    free(pv);
    free(tv);
    free(ident);
    free(sg);
    return out;
}

object *groupby_aggregate(const object *gb, agg_op op, const object *values, h5ark_error *err) {
    if (ranks_call_seq() && op == AGG_NUNIQUE && values && values->objtype == H5ARK_STRINGS) {
        /* the strings' group numbers in a grouping of their own: as many distinct in a
         * group as the strings themselves */
        object *codes = NULL, *vgb = make_ranks((object *const *)&values, 1, &codes, err);
        object_release(vgb);
        object *out = codes ? aggregate_ranks(gb, op, codes, err) : NULL;
        object_release(codes);
        return out;
    }
    if (ranks_call_seq() && op != AGG_FIRST) return aggregate_ranks(gb, op, values, err);
    const object *seg = object_component_get(gb, "segments");
    if (op == AGG_FIRST)
        return groupby_take(values, object_component_get(gb, "unique_key_idx"), err);
    h5ark_dtype dt = values && values->objtype == H5ARK_PDARRAY ? values->dtype : H5ARK_INT64;
    object *out = object_new_pdarray(result_dtype(op, dt), seg->size, err);
    if (!out) return NULL;
    agg_job j = {.values = values,
                 .op = op,
                 .perm = object_component_get(gb, "permutation")->values,
                 .seg = seg->values,
                 .n = gb->size,
                 .out = out};
    locales_run(aggregate_shard, &j);
    if (atomic_load(&j.failed)) {
        object_release(out);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "aggregate %s: out of memory for the largest group",
                   op_names[op]);
        return NULL;
    }
    return out;
}
