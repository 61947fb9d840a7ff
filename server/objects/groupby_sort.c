/* groupby's local sort: this rank's rows, stably by key tuple, on its locales.
 *
 * 1. Each locale sorts its own block of rows (block distribution of the row count): keys
 *    are taken from last to first, each a stable sort of the block's order by that key
 *    alone (LSD over keys), so the result is sorted by the whole tuple and stable. Numeric
 *    keys are mapped to order-preserving uint64 and radix sorted; strings are merge sorted.
 * 2. The runs are merged with the order (key tuple, row), a strict total order: locale c
 *    finds, by binary search, how many elements of each run come before its first place,
 *    then merges its slice of every run into its shard of `permutation`, flagging each
 *    position where the key tuple changes.
 * With one rank this is the whole sort; with several, dist/sort.h merges the ranks'. */
#include "groupby_rows.h"

#include "progress.h"
#include "shardcache.h"

#include <stdlib.h>

void groupby_encode_range(const darray *a, uint64_t lo, uint64_t hi, uint64_t *out) {
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

const object *groupby_sort_source(const object *key) {
    if (key->objtype == H5ARK_CATEGORICAL) return object_component_get(key, "codes");
    return key;
}

bool groupby_rows_here(const darray *a, uint64_t lo, uint64_t hi) {
    for (int b = 0; b < a->nshards; b++) {
        const shard *s = &a->shards[b];
        if (s->count && s->start < hi && lo < s->start + s->count && !locales_is_local(b))
            return false;
    }
    return true;
}

/* ---- sorts of one run ---- */

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

/* ---- the plan: runs sorted, then merged ---- */

/* The run holding `row` (one of this rank's). */
static inline int run_of(const sort_plan *p, uint64_t row) {
    return (int)((unsigned __int128)row * (unsigned)p->L / p->n) - p->first;
}

/* Compare the key tuples of two rows from key `from` on. */
static int cmp_rows(const sort_plan *p, uint64_t a, uint64_t b, size_t from) {
    int ra = run_of(p, a), rb = run_of(p, b);
    uint64_t oa = a - p->lo[ra], ob = b - p->lo[rb];
    for (size_t k = from; k < p->nkeys; k++) {
        if (p->is_str[k]) {
            int c = strref_cmp(p->refs[k * p->T + ra][oa], p->refs[k * p->T + rb][ob]);
            if (c) return c;
        } else {
            uint64_t x = p->enc[k * p->T + ra][oa], y = p->enc[k * p->T + rb][ob];
            if (x != y) return x < y ? -1 : 1;
        }
    }
    return 0;
}

/* Element q of run r against element t of run s by key tuple only. */
static inline int cmp_keys(const sort_plan *p, int r, uint64_t q, int s, uint64_t t) {
    if (p->is_str[0]) return cmp_rows(p, p->order[r][q], p->order[s][t], 0);
    uint64_t x = p->skey[r][q], y = p->skey[s][t];
    if (x != y) return x < y ? -1 : 1;
    return p->nkeys == 1 ? 0 : cmp_rows(p, p->order[r][q], p->order[s][t], 1);
}

/* The strict total order (key tuple, row). Runs hold ascending blocks of rows and each
 * run is sorted stably, so among equal keys the row order is the run order, then the
 * order within the run. */
static inline int cmp_elems(const sort_plan *p, int r, uint64_t q, int s, uint64_t t) {
    int c = cmp_keys(p, r, q, s, t);
    if (c) return c;
    if (r != s) return (r > s) - (r < s);
    return (q > t) - (q < t);
}

static void sort_run(int c, void *ctx) {
    sort_plan *p = ctx;
    int b = c - p->first, T = p->T;
    uint64_t lo = p->lo[b], n = p->len[b];
    if (n == 0) return;
    /* scratch from the locale's cache of touched memory: fresh pages cost more than the
     * sort itself when the keys take one radix pass */
    uint64_t bytes = n * sizeof(uint64_t);
    uint64_t *order = shardcache_alloc(c, bytes), *key = shardcache_alloc(c, bytes);
    uint64_t *tk = shardcache_alloc(c, bytes), *tv = shardcache_alloc(c, bytes);
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
            strref *r = shardcache_alloc(c, n * sizeof *r);
            if (!(p->refs[k * T + b] = r)) goto fail;
            for (uint64_t i = 0; i < n; i++)
                r[i] = str_at(s, lo + i);
        } else if (p->nkeys > 1) {
            uint64_t *e = shardcache_alloc(c, bytes);
            if (!(p->enc[k * T + b] = e)) goto fail;
            groupby_encode_range(s->values, lo, lo + n, e);
        }
    }
    for (size_t k = p->nkeys; k-- > 0;) {
        if (p->refs[k * T + b]) {
            string_sort(order, tk, n, p->refs[k * T + b], lo);
            progress_add(progress_here(), n);
            continue;
        }
        if (p->nkeys == 1) {
            groupby_encode_range(p->src[0]->values, lo, lo + n, key);
        } else {
            const uint64_t *e = p->enc[k * T + b];
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
    shardcache_give(c, key, bytes);
    shardcache_give(c, tk, bytes);
    shardcache_give(c, tv, bytes);
    return;
fail:
    shardcache_give(c, key, bytes);
    shardcache_give(c, tk, bytes);
    shardcache_give(c, tv, bytes);
    atomic_store(&p->failed, 1);
}

/* Rank of element q of run r: the elements of every run before it. */
static uint64_t rank_of(const sort_plan *p, int r, uint64_t q) {
    uint64_t rank = q;
    for (int s = 0; s < p->T; s++) {
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
    sort_plan *p = ctx;
    int t = c - p->first;
    uint64_t k = p->lo[t] - p->lo[0]; /* this locale's first place among the rank's rows */
    for (int r = 0; r < p->T; r++) {
        uint64_t a = 0, b = p->len[r]; /* first element of r whose rank is >= k */
        while (a < b) {
            uint64_t m = a + (b - a) / 2;
            if (rank_of(p, r, m) < k)
                a = m + 1;
            else
                b = m;
        }
        p->split[t * p->T + r] = a;
    }
}

static void merge_runs(int c, void *ctx) {
    sort_plan *p = ctx;
    int b = c - p->first, L = p->T;
    shard *out = &p->perm->values->shards[c];
    uint64_t cnt = out->count;
    p->gcount[b] = 0;
    if (cnt == 0) return;
    uint8_t *flags = shardcache_alloc(c, cnt);
    uint64_t *head = malloc((size_t)L * 2 * sizeof *head);
    if (!flags || !head) {
        shardcache_give(c, flags, cnt);
        free(head);
        atomic_store(&p->failed, 1);
        return;
    }
    p->flags[b] = flags;
    uint64_t *end = head + L;
    int prev_r = -1;
    uint64_t prev_q = 0;
    for (int r = 0; r < L; r++) {
        head[r] = p->split[b * L + r];
        end[r] = p->split[(b + 1) * L + r];
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
    p->gcount[b] = groups;
    free(head);
    progress_add(progress_here(), cnt);
}

uint64_t sort_plan_bytes_per_row(const object *const *src, size_t nkeys) {
    /* order, sorted key 0, two radix buffers, flags, and per key a view */
    uint64_t per_row = 8 * 4 + 1;
    for (size_t k = 0; k < nkeys; k++)
        per_row += src[k]->objtype == H5ARK_STRINGS ? sizeof(strref) : nkeys > 1 ? 8 : 0;
    return per_row;
}

int sort_plan_init(sort_plan *p, const object *const *src, size_t nkeys, object *perm,
                   h5ark_error *err) {
    int T = locales_local_count();
    *p = (sort_plan){.L = locales_count(),
                     .first = locales_local_first(),
                     .T = T,
                     .n = perm->size,
                     .nkeys = nkeys,
                     .perm = perm};
    p->src = calloc(nkeys, sizeof *p->src);
    p->is_str = calloc(nkeys, sizeof *p->is_str);
    p->lo = calloc((size_t)T + 1, sizeof *p->lo);
    p->len = calloc((size_t)T, sizeof *p->len);
    p->order = calloc((size_t)T, sizeof *p->order);
    p->skey = calloc((size_t)T, sizeof *p->skey);
    p->flags = calloc((size_t)T, sizeof *p->flags);
    p->enc = calloc(nkeys * (size_t)T, sizeof *p->enc);
    p->refs = calloc(nkeys * (size_t)T, sizeof *p->refs);
    p->split = calloc(((size_t)T + 1) * (size_t)T, sizeof *p->split);
    p->gcount = calloc((size_t)T, sizeof *p->gcount);
    if (!p->src || !p->is_str || !p->lo || !p->len || !p->order || !p->skey || !p->flags ||
        !p->enc || !p->refs || !p->split || !p->gcount)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t k = 0; k < nkeys; k++) {
        p->src[k] = src[k];
        p->is_str[k] = src[k]->objtype == H5ARK_STRINGS;
    }
    for (int b = 0; b <= T; b++)
        p->lo[b] = locales_block_start(p->n, p->L, p->first + b);
    for (int b = 0; b < T; b++)
        p->len[b] = p->lo[b + 1] - p->lo[b];
    for (int r = 0; r < T; r++)
        p->split[(size_t)T * T + r] = p->len[r];
    return 0;
}

int sort_plan_run(sort_plan *p, h5ark_error *err) {
    if (p->lo[p->T] > p->lo[0]) {
        locales_run(sort_run, p);
        if (!atomic_load(&p->failed)) {
            locales_run(find_splits, p);
            locales_run(merge_runs, p);
        }
    }
    if (atomic_load(&p->failed))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory sorting %llu rows",
                          (unsigned long long)(p->lo[p->T] - p->lo[0]));
    return 0;
}

void sort_plan_free(sort_plan *p) {
    /* scratch goes back to its locale's cache; a pointer set means its sizes are known */
    for (int b = 0; b < p->T; b++) {
        int c = p->first + b;
        if (p->order && p->order[b]) shardcache_give(c, p->order[b], p->len[b] * 8);
        if (p->skey && p->skey[b]) shardcache_give(c, p->skey[b], p->len[b] * 8);
        if (p->flags && p->flags[b]) shardcache_give(c, p->flags[b], p->len[b]);
    }
    for (size_t k = 0; k < p->nkeys * (size_t)p->T; k++) {
        int b = (int)(k % (size_t)p->T);
        if (p->enc && p->enc[k]) shardcache_give(p->first + b, p->enc[k], p->len[b] * 8);
        if (p->refs && p->refs[k])
            shardcache_give(p->first + b, p->refs[k], p->len[b] * sizeof(strref));
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
}
