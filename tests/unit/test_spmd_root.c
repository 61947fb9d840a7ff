/* Unit tests of dist/spmd.h. At one rank each step must be the plain local one: the root's
 * step runs once and its error is every rank's, nothing is encoded to be shared, a gather to
 * a new buffer is a copy of the spans, and a funnel takes rank 0's own pieces in order and
 * stops taking at the first failure. At R = 2, 3 (ranks as threads, ranks_threads_run) the
 * same steps across ranks: rank 0 alone runs the step, every rank gets its outcome or a
 * failing rank's, the other ranks take in what rank 0 made, and rank 0 takes every
 * rank's pieces in rank order. A failure names its rank within a call only (spmd_name_rank,
 * spmd_fail), rank 0 too. */
#include "check.h"
#include "config.h"
#include "dist/ranks.h"
#include "dist/spmd.h"

#include <pthread.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

static int runs;

static int step_ok(void *ctx, h5ark_error *err) {
    (void)err;
    runs++;
    *(int *)ctx = 42;
    return 0;
}

static int step_fails(void *ctx, h5ark_error *err) {
    (void)ctx;
    runs++;
    return h5ark_fail(err, H5ARK_IO_ERROR, "cannot write 'x'");
}

static void test_root_does(void) {
    h5ark_error err = {0};
    int v = 0;
    runs = 0;
    CHECK(spmd_root_does(0, step_ok, &v, &err) == 0);
    CHECK(runs == 1 && v == 42);
    CHECK(spmd_root_does(0, step_fails, NULL, &err) == -1);
    CHECK(runs == 2);
    CHECK(err.code == H5ARK_IO_ERROR);
    CHECK_STR(err.message, "cannot write 'x'");
    /* a rank that failed before: the step is not taken, the failure stays */
    err = (h5ark_error){0};
    h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
    CHECK(spmd_root_does(-1, step_ok, &v, &err) == -1);
    CHECK(runs == 2);
    CHECK(err.code == H5ARK_RESOURCE_LIMIT);
}

static int encodes, decodes;

static h5ark_value *encode(void *ctx, h5ark_error *err) {
    (void)ctx, (void)err;
    encodes++;
    return h5ark_value_map();
}

static int decode(const h5ark_value *v, void *ctx, h5ark_error *err) {
    (void)v, (void)ctx, (void)err;
    decodes++;
    return 0;
}

static void test_share(void) {
    h5ark_error err = {0};
    CHECK(spmd_share_value(encode, decode, NULL, &err) == 0);
    CHECK(encodes == 0 && decodes == 0); /* one rank: rank 0 knows it already */
}

static void test_gather_new(void) {
    h5ark_error err = {0};
    h5ark_span spans[2] = {{"abc", 3}, {"defg", 4}};
    uint64_t counts[1] = {7};
    void *whole = NULL;
    CHECK(spmd_gather_new(spans, 2, counts, 7, &whole, &err) == 0);
    CHECK(whole && memcmp(whole, "abcdefg", 7) == 0);
    free(whole);
    CHECK(spmd_gather_new(NULL, 0, (uint64_t[1]){0}, 0, &whole, &err) == 0);
    CHECK(whole != NULL); /* a buffer even for no bytes */
    free(whole);
}

typedef struct {
    int ntaken;
    int fail_at;
    char got[64];
} funnel_ctx;

static int take(void *ctx, int rank, size_t i, const void *p, uint64_t len, h5ark_error *err) {
    funnel_ctx *f = ctx;
    CHECK(rank == 0);
    CHECK(i == (size_t)f->ntaken);
    if (f->ntaken++ == f->fail_at) return h5ark_fail(err, H5ARK_IO_ERROR, "piece %zu", i);
    strncat(f->got, p, len);
    return 0;
}

static void test_funnel(void) {
    h5ark_error err = {0};
    h5ark_span mine[3] = {{"one", 3}, {"two", 3}, {"three", 5}};
    funnel_ctx f = {.fail_at = -1};
    CHECK(spmd_funnel(mine, 3, take, &f, &err) == 0);
    CHECK(f.ntaken == 3);
    CHECK_STR(f.got, "onetwothree");
    funnel_ctx g = {.fail_at = 1};
    CHECK(spmd_funnel(mine, 3, take, &g, &err) == -1);
    CHECK(g.ntaken == 2); /* nothing taken after the failure */
    CHECK_STR(err.message, "piece 1");
    funnel_ctx h = {.fail_at = -1};
    CHECK(spmd_funnel(NULL, 0, take, &h, &err) == 0 && h.ntaken == 0);
}

static void test_names(void) {
    h5ark_error err = {0};
    h5ark_fail(&err, H5ARK_IO_ERROR, "cannot write 'x'");
    CHECK(spmd_name_rank(-1, &err) == -1);
    CHECK_STR(err.message, "cannot write 'x'"); /* rank 0 reads as with one rank */
    CHECK(spmd_name_rank(0, &err) == 0);
    CHECK_INT(spmd_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory for %d bytes", 12), -1);
    CHECK_STR(err.message, "out of memory for 12 bytes"); /* outside a call: as it is */
    CHECK_INT(err.code, H5ARK_RESOURCE_LIMIT);
    ranks_call_enter(7); /* within a call, even rank 0 says which it is */
    h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
    CHECK(spmd_name_rank(-1, &err) == -1);
    CHECK_STR(err.message, "rank 0: out of memory");
    CHECK_INT(spmd_fail(&err, H5ARK_IO_ERROR, "short by %d", 3), -1);
    CHECK_STR(err.message, "rank 0: short by 3");
    ranks_call_leave();
    CHECK(spmd_is_root_rank(0));
    CHECK(!spmd_is_root_rank(1));
}

/* ---- several ranks, as threads ---- */

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
#define TCHECK(c)                                                                                  \
    do {                                                                                           \
        bool c_ = (c);                                                                             \
        pthread_mutex_lock(&check_lock);                                                           \
        CHECKF(c_, "%s (rank %d of %d)", #c, ranks_self(), ranks_count());                         \
        pthread_mutex_unlock(&check_lock);                                                         \
    } while (0)

static _Atomic int root_runs;

static int count_root(void *ctx, h5ark_error *err) {
    (void)ctx, (void)err;
    root_runs++;
    return ranks_self() == 0 ? 0 : -1; /* run anywhere else, it would fail the step */
}

static void rank_root_does(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(1);
    h5ark_error err = {0};
    TCHECK(spmd_root_does(0, count_root, NULL, &err) == 0);
    TCHECK(spmd_root_does(0, step_fails, NULL, &err) == -1);
    TCHECK(err.code == H5ARK_IO_ERROR && strcmp(err.message, "cannot write 'x'") == 0);
    /* rank 1 failed before the step: nobody takes it, every rank has rank 1's error */
    err = (h5ark_error){0};
    int rc = rank == 1 ? h5ark_fail(&err, H5ARK_BAD_REQUEST, "no room on rank 1") : 0;
    TCHECK(spmd_root_does(rc, count_root, NULL, &err) == -1);
    TCHECK(strcmp(err.message, "no room on rank 1") == 0);
    ranks_call_leave();
}

/* share_value's state: n, rank 0's to share; a make failing when n is 0, a take when the
 * value's n is 1 on rank `refuse`; how many takes ran */
typedef struct {
    int64_t n;
    int refuse, takes;
} share_state;

static h5ark_value *encode_n(void *ctx, h5ark_error *err) {
    share_state *s = ctx;
    if (s->n == 0) {
        spmd_fail(err, H5ARK_NOT_FOUND, "nothing to share");
        return NULL;
    }
    h5ark_value *v = h5ark_value_map();
    if (v && h5ark_value_set(v, "n", h5ark_value_int(s->n))) h5ark_value_destroy(&v);
    return v;
}

static int decode_n(const h5ark_value *v, void *ctx, h5ark_error *err) {
    share_state *s = ctx;
    s->takes++;
    if (h5ark_value_to_int64(h5ark_value_get(v, "n"), &s->n) != 1)
        return h5ark_fail(err, H5ARK_INTERNAL, "no n");
    if (s->n == 1 && ranks_self() == s->refuse) return spmd_fail(err, H5ARK_IO_ERROR, "refused");
    return 0;
}

static void rank_share(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(2);
    h5ark_error err = {0};
    share_state s = {rank == 0 ? 7 : -1, -1, 0};
    TCHECK(spmd_share_value(encode_n, decode_n, &s, &err) == 0);
    TCHECK(s.n == 7);
    TCHECK(s.takes == (rank == 0 ? 0 : 1)); /* rank 0 has it already */
    /* rank 0 fails to make it: every rank fails with its error, nothing taken */
    s = (share_state){rank == 0 ? 0 : -1, -1, 0};
    TCHECK(spmd_share_value(encode_n, decode_n, &s, &err) == -1);
    TCHECK(strcmp(err.message, "rank 0: nothing to share") == 0 && err.code == H5ARK_NOT_FOUND);
    TCHECK(s.takes == 0);
    /* the last rank fails to take it: every rank fails with that rank's error */
    s = (share_state){rank == 0 ? 1 : -1, ranks_count() - 1, 0};
    TCHECK(spmd_share_value(encode_n, decode_n, &s, &err) == -1);
    char want[32];
    snprintf(want, sizeof want, "rank %d: refused", ranks_count() - 1);
    TCHECK(strcmp(err.message, want) == 0 && err.code == H5ARK_IO_ERROR);
    ranks_call_leave();
}

static void rank_gather_new(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(3);
    h5ark_error err = {0};
    char mine[8];
    int len = snprintf(mine, sizeof mine, "<%d>", rank); /* rank r gives "<r>" */
    h5ark_span span = {mine, (uint64_t)len};
    uint64_t counts[4] = {3, 3, 3, 3};
    void *whole = NULL;
    TCHECK(spmd_gather_new(&span, 1, counts, 3 * (uint64_t)ranks_count(), &whole, &err) == 0);
    if (rank == 0) {
        TCHECK(whole && memcmp(whole, "<0><1><2>", 3 * (size_t)ranks_count()) == 0);
    } else {
        TCHECK(whole == NULL);
    }
    free(whole);
    ranks_call_leave();
}

typedef struct {
    int fail_rank; /* the rank whose first piece fails to be taken, or -1 */
    char got[64];
    int ntaken;
} funnel_run;

static int take_in_order(void *ctx, int rank, size_t i, const void *p, uint64_t len,
                         h5ark_error *err) {
    funnel_run *f = ctx;
    f->ntaken++;
    if (rank == f->fail_rank) return h5ark_fail(err, H5ARK_IO_ERROR, "rank %d's piece", rank);
    char want[16];
    int n = snprintf(want, sizeof want, "%d.%zu", rank, i);
    TCHECK(len == (uint64_t)n && memcmp(p, want, len) == 0);
    strncat(f->got, p, len);
    strncat(f->got, " ", 2);
    return 0;
}

static void rank_funnel(int rank, void *ctx) {
    funnel_run *runs = ctx; /* one per rank: rank 0's is the one taken into */
    ranks_call_enter(4);
    h5ark_error err = {0};
    char text[3][8];
    h5ark_span mine[3];
    int n = rank + 1; /* rank r gives r + 1 pieces "r.i" */
    for (int i = 0; i < n; i++)
        mine[i] = (h5ark_span){text[i], (uint64_t)snprintf(text[i], 8, "%d.%d", rank, i)};
    TCHECK(spmd_funnel(mine, (size_t)n, take_in_order, &runs[rank], &err) == 0);
    if (rank == 0) {
        TCHECK(strcmp(runs[0].got,
                      ranks_count() == 2 ? "0.0 1.0 1.1 " : "0.0 1.0 1.1 2.0 2.1 2.2 ") == 0);
    }
    /* a take failing on rank 1's first piece: nothing more taken, every rank fails alike */
    runs[rank] = (funnel_run){.fail_rank = 1};
    TCHECK(spmd_funnel(mine, (size_t)n, take_in_order, &runs[rank], &err) == -1);
    TCHECK(strcmp(err.message, "rank 1's piece") == 0);
    if (rank == 0) TCHECK(runs[0].ntaken == 2); /* rank 0's one piece, then rank 1's first */
    /* every rank names itself in its errors within a call */
    h5ark_fail(&err, H5ARK_IO_ERROR, "cannot write 'x'");
    spmd_name_rank(-1, &err);
    TCHECK(strcmp(err.message, rank == 0   ? "rank 0: cannot write 'x'"
                               : rank == 1 ? "rank 1: cannot write 'x'"
                                           : "rank 2: cannot write 'x'") == 0);
    ranks_call_leave();
}

static void test_ranks(void) {
    for (int r = 2; r <= 3; r++) {
        root_runs = 0;
        CHECK(ranks_threads_run(r, 20, rank_root_does, NULL) == 0);
        CHECK(root_runs == 1); /* the failing step runs too, but on rank 0 alone */
        CHECK(ranks_threads_run(r, 20, rank_share, NULL) == 0);
        CHECK(ranks_threads_run(r, 20, rank_gather_new, NULL) == 0);
        funnel_run runs[3] = {{.fail_rank = -1}, {.fail_rank = -1}, {.fail_rank = -1}};
        CHECK(ranks_threads_run(r, 20, rank_funnel, runs) == 0);
    }
}

int main(void) {
    test_root_does();
    test_share();
    test_gather_new();
    test_funnel();
    test_names();
    test_ranks();
    return check_exit("test_spmd");
}
