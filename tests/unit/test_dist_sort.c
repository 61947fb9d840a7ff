/* Unit tests of the sample sort across the ranks (server/dist/sort.h): records of one width
 * and of varying length, sorted by every rank's share into one global order, evened out to
 * the distribution asked, the starts of keys marked across rank boundaries; the sort with a
 * local part given (nothing but the local sort at one rank); dist_rebalance.
 *
 * R = 1 to 4 ranks run as threads of one process whose messages go through memory
 * (ranks_threads_run), each in a call of its own, running the very collectives the daemon
 * runs under mpirun. */
#include "check.h"
#include "config.h"
#include "dist/ranks.h"
#include "dist/sort.h"
#include "progress.h"

#include <pthread.h>
#include <stdlib.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
#define TCHECK(c)                                                                                  \
    do {                                                                                           \
        pthread_mutex_lock(&check_lock);                                                           \
        CHECK(c);                                                                                  \
        pthread_mutex_unlock(&check_lock);                                                         \
    } while (0)

enum { MAX_R = 4 };

static int R; /* the ranks of the run under way */

typedef struct {
    void (*fn)(int rank, void *ctx);
    void *ctx;
    uint64_t seq;
} in_call;

static void rank_in_call(int rank, void *arg) {
    in_call *c = arg;
    ranks_call_enter(c->seq);
    c->fn(rank, c->ctx);
    ranks_call_leave();
}

/* fn(rank, ctx) on every rank of a run of r, within a call; every message sent must have
 * been received. */
static bool run(int r, void (*fn)(int rank, void *ctx), void *ctx) {
    static uint64_t seq;
    in_call c = {fn, ctx, ++seq};
    R = r;
    CHECK(ranks_threads_run(r, 20, rank_in_call, &c) == 0);
    return true;
}

static int scratch(uint64_t bytes, void **p, void *ctx, h5ark_error *err) {
    (void)ctx;
    *p = malloc(bytes ? bytes : 1);
    return *p ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

static uint64_t mix(uint64_t x) { /* splitmix64: the data of row x, the same on every rank */
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* ---- records: the test's own making and order ---- */

typedef struct {
    int kind;       /* 0: (key, row) words; 1: bytes with NULs, then the row big-endian */
    uint64_t n;     /* records of all ranks */
    uint64_t range; /* keys drawn from [0, range) */
    int shape;      /* distribution asked: 0 blocks, 1 all on rank 0, 2 all on the last */
    /* per rank: its output */
    dist_sorted out[MAX_R];
    uint64_t dist[MAX_R + 1];
    int rc[MAX_R];
} sort_case;

/* Record of row i at p (when not NULL); its size. */
static uint64_t make_record(const sort_case *c, uint64_t i, char *p) {
    uint64_t key = mix(i) % c->range;
    if (c->kind == 0) {
        if (p) {
            memcpy(p, &key, 8);
            memcpy(p + 8, &i, 8);
        }
        return 16;
    }
    uint64_t len = key % 5; /* 0..4 bytes of '\0', 'a', 'b': prefixes and NULs */
    if (p) {
        for (uint64_t k = 0; k < len; k++)
            p[8 + k] = "\0ab"[(key / 5 >> (2 * k)) % 3];
        for (int b = 0; b < 8; b++)
            p[8 + len + (uint64_t)b] = (char)(i >> (56 - 8 * b));
        uint64_t l = len + 8;
        memcpy(p, &l, 8);
    }
    return 8 + len + 8;
}

static uint64_t record_size(const sort_case *c, const char *p) {
    uint64_t l = 8;
    if (c->kind == 1) memcpy(&l, p, 8);
    return 8 + l;
}

static int kind_of_cmp; /* for qsort */
static int cmp_records(const void *a, const void *b) {
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    if (kind_of_cmp == 0) {
        uint64_t u, v;
        for (int w = 0; w < 2; w++) {
            memcpy(&u, x + 8 * w, 8);
            memcpy(&v, y + 8 * w, 8);
            if (u != v) return u < v ? -1 : 1;
        }
        return 0;
    }
    uint64_t lx, ly;
    memcpy(&lx, x, 8);
    memcpy(&ly, y, 8);
    int c = memcmp(x + 8, y + 8, lx < ly ? lx : ly);
    if (c) return c;
    return (lx > ly) - (lx < ly);
}

/* Records [lo, hi) made and sorted: the buffer (*bytes long) and pointers into it. */
static char *sorted_records(const sort_case *c, uint64_t lo, uint64_t hi, char ***ptrs,
                            uint64_t *bytes) {
    uint64_t total = 0;
    for (uint64_t i = lo; i < hi; i++)
        total += make_record(c, i, NULL);
    char *buf = malloc(total + 1), *q = buf;
    *ptrs = malloc((hi - lo + 1) * sizeof **ptrs);
    for (uint64_t i = lo; i < hi; i++) {
        (*ptrs)[i - lo] = q;
        q += make_record(c, i, q);
    }
    kind_of_cmp = c->kind;
    qsort(*ptrs, hi - lo, sizeof **ptrs, cmp_records);
    char *out = malloc(total + 1);
    q = out;
    for (uint64_t i = lo; i < hi; i++) {
        uint64_t l = record_size(c, (*ptrs)[i - lo]);
        memcpy(q, (*ptrs)[i - lo], l);
        (*ptrs)[i - lo] = q;
        q += l;
    }
    free(buf);
    *bytes = total;
    return out;
}

static void rank_sort(int rank, void *ctx) {
    sort_case *c = ctx;
    uint64_t lo = c->n * (uint64_t)rank / (uint64_t)R, hi = c->n * ((uint64_t)rank + 1) / R;
    char **ptrs, *mine;
    uint64_t bytes;
    pthread_mutex_lock(&check_lock); /* qsort's order is shared */
    mine = sorted_records(c, lo, hi, &ptrs, &bytes);
    pthread_mutex_unlock(&check_lock);
    dist_sort_spec s = {.width = c->kind == 0 ? 16 : 0,
                        .tail = 8,
                        .dist = c->dist,
                        .scratch = scratch,
                        .scratch_ctx = NULL};
    h5ark_error err = {0};
    c->rc[rank] = dist_sort_records(&s, mine, hi - lo, bytes, &c->out[rank], &err);
    free(mine);
    free(ptrs);
}

/* Every rank's output, one after another, is the whole set sorted, with the starts of keys
 * where the records differ other than in their row. */
static void check_sort(int r, sort_case *c) {
    for (int q = 0; q <= r; q++)
        c->dist[q] = c->shape == 0   ? c->n * (uint64_t)q / (uint64_t)r
                     : c->shape == 1 ? (q == 0 ? 0 : c->n)
                                     : (q == r ? c->n : 0);
    memset(c->out, 0, sizeof c->out);
    if (!run(r, rank_sort, c)) return;
    char **want;
    uint64_t bytes, at = 0;
    char *all = sorted_records(c, 0, c->n, &want, &bytes);
    for (int q = 0; q < r; q++) {
        const dist_sorted *o = &c->out[q];
        CHECKF(c->rc[q] == 0, "rank %d of %d failed", q, r);
        CHECKF(o->n == c->dist[q + 1] - c->dist[q], "rank %d holds %llu", q,
               (unsigned long long)o->n);
        for (uint64_t i = 0; c->rc[q] == 0 && i < o->n && at < c->n; i++, at++) {
            const char *x = (const char *)o->rec + o->off[i], *w = want[at];
            uint64_t l = record_size(c, w);
            CHECKF(memcmp(x, w, l) == 0, "kind %d, %d ranks: record %llu out of order", c->kind, r,
                   (unsigned long long)at);
            bool start = at == 0 || memcmp(want[at - 1], w, l - 8) != 0;
            CHECKF(o->starts[i] == start, "kind %d, %d ranks: start of record %llu", c->kind, r,
                   (unsigned long long)at);
        }
    }
    CHECK(at == c->n);
    for (int q = 0; q < r; q++)
        dist_sorted_free(&c->out[q]);
    free(all);
    free(want);
}

static void test_sorts(void) {
    static const uint64_t sizes[] = {0, 1, 7, 1000, 20000};
    static const uint64_t ranges[] = {1, 3, 1000, UINT64_MAX};
    for (int r = 1; r <= MAX_R; r++)
        for (int kind = 0; kind < 2; kind++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                for (size_t g = 0; g < sizeof ranges / sizeof *ranges; g++)
                    for (int shape = 0; shape < 3; shape++) {
                        sort_case c = {
                            .kind = kind, .n = sizes[s], .range = ranges[g], .shape = shape};
                        check_sort(r, &c);
                    }
}

/* ---- the sort with its local part given ---- */

typedef struct {
    int sorted[MAX_R], packed[MAX_R], unpacked[MAX_R];
    uint64_t got[MAX_R];
    uint64_t dist[MAX_R + 1];
    uint64_t n;
    progress_sink sink[MAX_R];
} job_case;

typedef struct {
    job_case *c;
    int rank;
    uint64_t *rows; /* this rank's rows, sorted by key (the key is the row's mix) */
    uint64_t lo, hi;
} job_ctx;

static int cmp_mix(const void *a, const void *b) {
    uint64_t x = mix(*(const uint64_t *)a), y = mix(*(const uint64_t *)b);
    return (x > y) - (x < y);
}

static int job_sort(void *ctx, h5ark_error *err) {
    job_ctx *j = ctx;
    (void)err;
    j->c->sorted[j->rank]++;
    for (uint64_t i = j->lo; i < j->hi; i++)
        j->rows[i - j->lo] = i;
    qsort(j->rows, j->hi - j->lo, 8, cmp_mix);
    progress_add(progress_here(), j->hi - j->lo); /* counted at one rank only */
    return 0;
}

static int job_pack(void *ctx, void **rec, uint64_t *n, uint64_t *bytes, h5ark_error *err) {
    job_ctx *j = ctx;
    j->c->packed[j->rank]++;
    *n = j->hi - j->lo;
    *bytes = *n * 16;
    if (scratch(*bytes, rec, NULL, err)) return -1;
    for (uint64_t i = 0; i < *n; i++) {
        ((uint64_t *)*rec)[2 * i] = mix(j->rows[i]);
        ((uint64_t *)*rec)[2 * i + 1] = j->rows[i];
    }
    return 0;
}

static int job_unpack(void *ctx, const dist_sorted *s, h5ark_error *err) {
    job_ctx *j = ctx;
    (void)err;
    j->c->unpacked[j->rank]++;
    j->c->got[j->rank] = s->n;
    return 0;
}

static void rank_job(int rank, void *ctx) {
    job_case *c = ctx;
    job_ctx j = {.c = c, .rank = rank};
    j.lo = c->n * (uint64_t)rank / (uint64_t)R;
    j.hi = c->n * ((uint64_t)rank + 1) / (uint64_t)R;
    j.rows = malloc((j.hi - j.lo + 1) * 8);
    dist_sort_job job = {.spec = {.width = 16, .tail = 8, .dist = c->dist, .scratch = scratch},
                         .progress = 3 * c->n,
                         .ctx = &j,
                         .sort_local = job_sort,
                         .pack = job_pack,
                         .unpack = job_unpack};
    progress_sink *old = progress_swap(&c->sink[rank]);
    h5ark_error err = {0};
    int rc = dist_sort(&job, &err); /* not within TCHECK: its lock would hold the others */
    TCHECK(rc == 0);
    progress_swap(old);
    free(j.rows);
}

static void test_job(void) {
    for (int r = 1; r <= MAX_R; r++) {
        job_case c = {.n = 1001};
        for (int q = 0; q <= r; q++)
            c.dist[q] = c.n * (uint64_t)q / (uint64_t)r;
        if (!run(r, rank_job, &c)) continue;
        for (int q = 0; q < r; q++) {
            CHECK(c.sorted[q] == 1);
            /* one rank: the local sort is all, its progress the request's; several: the
             * records cross, the whole progress counted once at the end */
            CHECK(c.packed[q] == (r > 1) && c.unpacked[q] == (r > 1));
            if (r > 1) CHECK(c.got[q] == c.dist[q + 1] - c.dist[q]);
            uint64_t done = atomic_load(&c.sink[q].done);
            CHECKF(done == (r > 1 ? 3 * c.n : c.n), "%d ranks: progress %llu", r,
                   (unsigned long long)done);
        }
    }
}

/* ---- dist_rebalance ---- */

typedef struct {
    uint64_t held[MAX_R + 1], tgt[MAX_R + 1];
    int ok[MAX_R];
    bool same[MAX_R];
} rebalance_case;

static void rank_rebalance(int rank, void *ctx) {
    rebalance_case *c = ctx;
    uint64_t lo = c->held[rank], hi = c->held[rank + 1];
    uint32_t *in = malloc((hi - lo + 1) * 4), *out = NULL;
    for (uint64_t i = lo; i < hi; i++)
        in[i - lo] = (uint32_t)mix(i);
    h5ark_error err = {0};
    int rc = dist_rebalance(in, c->held, c->tgt, 4, scratch, NULL, (void **)&out, &err);
    bool ok = rc == 0;
    for (uint64_t i = c->tgt[rank]; ok && i < c->tgt[rank + 1]; i++)
        ok = out[i - c->tgt[rank]] == (uint32_t)mix(i);
    c->ok[rank] = ok;
    c->same[rank] = out == in;
    if (out != in) free(out);
    free(in);
}

static void test_rebalance(void) {
    for (int r = 1; r <= MAX_R; r++) {
        rebalance_case c = {0};
        uint64_t n = 777;
        for (int q = 0; q <= r; q++) {
            c.held[q] = q == r ? n : n * (uint64_t)q * (uint64_t)q / ((uint64_t)r * (uint64_t)r);
            c.tgt[q] = n * (uint64_t)q / (uint64_t)r;
        }
        if (!run(r, rank_rebalance, &c)) continue;
        for (int q = 0; q < r; q++) {
            CHECKF(c.ok[q], "%d ranks: rank %d's elements", r, q);
            CHECK(c.same[q] == (r == 1)); /* nothing moves at one rank */
        }
    }
}

int main(void) {
    test_sorts();
    test_job();
    test_rebalance();
    return check_exit("test_dist_sort");
}
