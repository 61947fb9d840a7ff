/* Unit tests of the ranks layer (server/dist/) in one process: R = 1, 2, 3, 4 ranks as
 * threads whose messages go through memory (ranks_threads_run), running the very
 * collectives the daemon runs under mpirun. Every primitive, the calls' tags kept apart,
 * a broken job failing the waits with its reason, the SPMD helpers, and the block of items
 * a rank's locales hold. */
#include "check.h"
#include "config.h"
#include "dist/ranks.h"
#include "locales.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <zmq.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

/* check.h counts in plain variables: the ranks' threads check under one lock, their
 * conditions evaluated before it is taken (a collective waits for the other ranks) */
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
#define LOCKED(stmt)                                                                               \
    do {                                                                                           \
        pthread_mutex_lock(&check_lock);                                                           \
        stmt;                                                                                      \
        pthread_mutex_unlock(&check_lock);                                                         \
    } while (0)
#define TCHECKF(c, ...)                                                                            \
    do {                                                                                           \
        bool c_ = (c);                                                                             \
        LOCKED(CHECKF(c_, __VA_ARGS__));                                                           \
    } while (0)
#define TCHECK(c) TCHECKF(c, "%s", #c)
#define TCHECK_INT(a, b)                                                                           \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        LOCKED(CHECKF(a_ == b_, "%s: %lld, not %lld", #a, a_, b_));                                \
    } while (0)
#define TCHECK_STR(a, b)    LOCKED(CHECK_STR(a, b))
#define TCHECK_HAS(s, part) TCHECKF(strstr((s), (part)) != NULL, "\"%s\" lacks \"%s\"", (s), (part))

enum { MAX_R = 4 };

static int R; /* the ranks of the run under way */

/* Run fn on R ranks as threads; every message sent must have been received. */
static void run(int r, void (*fn)(int rank, void *ctx), void *ctx) {
    R = r;
    CHECK_INT(ranks_threads_run(r, 20, fn, ctx), 0);
}

static unsigned char pattern(int a, int b, uint64_t i) {
    return (unsigned char)(a * 31 + b * 7 + i * 13 + 1);
}

/* Whether p[0..n) holds pattern(a, b, from + i); the first byte that does not, else n. */
static uint64_t bad_at(const void *p, uint64_t n, int a, int b, uint64_t from) {
    for (uint64_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != pattern(a, b, from + i)) return i;
    return n;
}

/* ---- the collectives ---- */

static void rank_allreduce(int rank, void *ctx) {
    (void)ctx;
    TCHECK_INT(ranks_count(), R);
    TCHECK_INT(ranks_self(), rank);
    ranks_call_enter(1);
    static const ranks_op ops[] = {RANKS_SUM, RANKS_MIN, RANKS_MAX};
    for (int o = 0; o < 3; o++) {
        uint64_t v[3] = {(uint64_t)rank + 1, 10 * (uint64_t)rank + 5, 100 - (uint64_t)rank};
        h5ark_error err = {0};
        TCHECK_INT(ranks_allreduce_u64(v, 3, ops[o], &err), 0);
        uint64_t want[3] = {0, 0, 0};
        for (int r = 0; r < R; r++) {
            uint64_t x[3] = {(uint64_t)r + 1, 10 * (uint64_t)r + 5, 100 - (uint64_t)r};
            for (int i = 0; i < 3; i++)
                want[i] = r == 0                ? x[i]
                          : ops[o] == RANKS_SUM ? want[i] + x[i]
                          : ops[o] == RANKS_MIN ? (x[i] < want[i] ? x[i] : want[i])
                                                : (x[i] > want[i] ? x[i] : want[i]);
        }
        for (int i = 0; i < 3; i++)
            TCHECKF(v[i] == want[i], "op %d element %d at R=%d: %llu, not %llu", o, i, R,
                    (unsigned long long)v[i], (unsigned long long)want[i]);
    }
    h5ark_error err = {0};
    TCHECK_INT(ranks_allreduce_u64(NULL, 0, RANKS_SUM, &err), 0);
    TCHECK_INT(ranks_barrier(&err), 0);
    ranks_call_leave();
}

/* The lowest failing rank's error wins; a resource error names its rank. */
static void rank_agree(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(2);
    h5ark_error err = {0};
    TCHECK_INT(ranks_agree(0, &err), 0);
    TCHECK_INT(err.code, H5ARK_OK);

    /* ranks 1 and 3 fail (rank 0 at R = 1): rank 1's error on every rank */
    int first = R > 1 ? 1 : 0;
    int rc =
        rank == first || rank == 3 ? h5ark_fail(&err, H5ARK_NOT_FOUND, "no object 'x%d'", rank) : 0;
    TCHECK_INT(ranks_agree(rc, &err), -1);
    TCHECK_INT(err.code, H5ARK_NOT_FOUND);
    char want[64];
    snprintf(want, sizeof want, "no object 'x%d'", first);
    TCHECK_STR(err.message, want);

    /* the last rank runs short of memory: "rank N: " in front, but from rank 0 */
    err = (h5ark_error){0};
    rc = rank == R - 1 ? h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory") : 0;
    TCHECK_INT(ranks_agree(rc, &err), -1);
    TCHECK_INT(err.code, H5ARK_RESOURCE_LIMIT);
    snprintf(want, sizeof want, R > 1 ? "rank %d: out of memory" : "out of memory", R - 1);
    TCHECK_STR(err.message, want);

    /* one that already names its rank is left alone */
    err = (h5ark_error){0};
    rc = rank == R - 1 ? h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "rank %d: no scratch", rank) : 0;
    TCHECK_INT(ranks_agree(rc, &err), -1);
    snprintf(want, sizeof want, "rank %d: no scratch", R - 1);
    TCHECK_STR(err.message, want);

    /* a failure with no error set still fails every rank, saying which */
    err = (h5ark_error){0};
    TCHECK_INT(ranks_agree(rank == R - 1 ? -1 : 0, &err), -1);
    if (R > 1) {
        TCHECK_INT(err.code, H5ARK_INTERNAL);
        snprintf(want, sizeof want, "rank %d failed", R - 1);
        TCHECK_STR(err.message, want);
    }
    ranks_call_leave();
}

static void rank_bcast(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(3);
    static const uint64_t sizes[] = {0, 1, 8, 100000};
    for (int root = 0; root < R; root++)
        for (int s = 0; s < 4; s++) {
            uint64_t n = sizes[s];
            unsigned char *buf = calloc(1, n + 1);
            for (uint64_t i = 0; rank == root && i < n; i++)
                buf[i] = pattern(root, s, i);
            h5ark_error err = {0};
            TCHECK_INT(ranks_bcast(root, buf, n, &err), 0);
            uint64_t bad = bad_at(buf, n, root, s, 0);
            TCHECKF(bad == n, "rank %d, root %d, %llu bytes: byte %llu differs", rank, root,
                    (unsigned long long)n, (unsigned long long)bad);
            free(buf);
        }
    ranks_call_leave();
}

/* Rank r gives gather_count(r) bytes, as two spans (none for an empty part). */
static uint64_t gather_count(int r) {
    return r == 1 ? 0 : 3 * (uint64_t)r + 1 + (r == 2 ? 50000 : 0);
}

static void rank_gatherv(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(4);
    uint64_t n = gather_count(rank), counts[MAX_R], total = 0;
    for (int r = 0; r < R; r++)
        total += counts[r] = gather_count(r);
    unsigned char *mine = malloc(n + 1), *all = calloc(1, total + 1);
    for (uint64_t i = 0; i < n; i++)
        mine[i] = pattern(rank, 0, i);
    h5ark_span spans[2] = {{mine, n / 3}, {mine + n / 3, n - n / 3}};
    h5ark_error err = {0};
    TCHECK_INT(ranks_gatherv(spans, n ? 2 : 0, rank == 0 ? all : NULL, counts, &err), 0);
    if (rank == 0) {
        uint64_t off = 0;
        for (int r = 0; r < R; off += counts[r++])
            TCHECKF(bad_at(all + off, counts[r], r, 0, 0) == counts[r], "rank %d's bytes", r);
    }
    free(mine);
    free(all);
    ranks_call_leave();
}

/* Rank s sends rank r (s + 2r) % 4 bytes, some of them none. */
static uint64_t a2a_count(int s, int r) {
    return (uint64_t)((s + 2 * r) % 4) * 5;
}

static void rank_alltoallv(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(5);
    uint64_t sc[MAX_R], rc[MAX_R], st = 0, rt = 0;
    for (int r = 0; r < R; r++) {
        st += sc[r] = a2a_count(rank, r);
        rt += rc[r] = a2a_count(r, rank);
    }
    unsigned char *send = malloc(st + 1), *recv = calloc(1, rt + 1);
    uint64_t off = 0;
    for (int r = 0; r < R; r++)
        for (uint64_t i = 0; i < sc[r]; i++)
            send[off++] = pattern(rank, r, i);
    h5ark_error err = {0};
    TCHECK_INT(ranks_alltoallv(send, sc, recv, rc, &err), 0);
    off = 0;
    for (int s = 0; s < R; off += rc[s++])
        TCHECKF(bad_at(recv + off, rc[s], s, rank, 0) == rc[s], "rank %d from %d", rank, s);
    /* a rank that would send itself other than it expects: refused before any message */
    sc[rank]++;
    TCHECK_INT(ranks_alltoallv(send, sc, recv, rc, &err), -1);
    TCHECK_INT(err.code, H5ARK_INTERNAL);
    free(send);
    free(recv);
    ranks_call_leave();
}

/* Point to point around a ring: messages between two ranks arrive in order; recv_many
 * takes several at once. */
static void rank_send_recv(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(6);
    h5ark_error err = {0};
    unsigned char msgs[3][40];
    uint64_t lens[3] = {0, 17, 40};
    if (R == 1) {
        h5ark_span s = {msgs[0], 1};
        TCHECK_INT(ranks_send(0, &s, 1, &err), -1);
        TCHECK_INT(ranks_recv(0, msgs[0], 1, &err), -1);
        ranks_call_leave();
        return;
    }
    int to = (rank + 1) % R, from = (rank + R - 1) % R;
    for (int round = 0; round < 2; round++) { /* one message at a time, then recv_many */
        for (int k = 0; rank != 0 && k < 3; k++) {
            if (round == 0) TCHECK_INT(ranks_recv(from, msgs[k], lens[k], &err), 0);
        }
        if (rank != 0 && round == 1) {
            void *bufs[3] = {msgs[0], msgs[1], msgs[2]};
            TCHECK_INT(ranks_recv_many(from, 3, bufs, lens, &err), 0);
        }
        for (int k = 0; rank != 0 && k < 3; k++)
            TCHECKF(bad_at(msgs[k], lens[k], from, k + round, 0) == lens[k], "message %d from %d",
                    k, from);
        unsigned char out[3][40];
        for (int k = 0; k < 3; k++) {
            for (uint64_t i = 0; i < lens[k]; i++)
                out[k][i] = pattern(rank, k + round, i);
            h5ark_span s[2] = {{out[k], lens[k] / 2},
                               {out[k] + lens[k] / 2, lens[k] - lens[k] / 2}};
            TCHECK_INT(ranks_send(to, s, 2, &err), 0);
        }
        if (rank == 0) {
            void *bufs[3] = {msgs[0], msgs[1], msgs[2]};
            TCHECK_INT(ranks_recv_many(from, 3, bufs, lens, &err), 0);
            for (int k = 0; k < 3; k++)
                TCHECKF(bad_at(msgs[k], lens[k], from, k + round, 0) == lens[k],
                        "message %d from %d", k, from);
        }
    }
    ranks_call_leave();
}

/* Rank 0 sends pieces of a payload of three frames, pieces crossing frames; rank r gets
 * pieces 2r-2 and 2r-1 (rank 0 none). */
static void rank_scatter(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(7);
    h5ark_error err = {0};
    enum { TOTAL = 3000 };
    if (rank == 0) {
        h5ark_payload p;
        h5ark_payload_init(&p);
        static const size_t frames[] = {1000, 1, 1999};
        uint64_t at = 0;
        for (int f = 0; f < 3; f++) {
            zmq_msg_t m;
            zmq_msg_init_size(&m, frames[f]);
            for (size_t i = 0; i < frames[f]; i++)
                ((unsigned char *)zmq_msg_data(&m))[i] = pattern(9, 9, at + i);
            at += frames[f];
            h5ark_payload_append(&p, &m);
            zmq_msg_close(&m);
        }
        int to[2 * MAX_R];
        uint64_t offs[2 * MAX_R], lens[2 * MAX_R];
        int n = 0;
        for (int r = 1; r < R; r++)
            for (int k = 0; k < 2; k++, n++) {
                to[n] = r;
                offs[n] = 400 + (uint64_t)n * 450; /* piece 0 crosses frames 0, 1, 2 */
                lens[n] = k ? 250 : 701;
            }
        TCHECK_INT(ranks_scatter_payload(&p, n, to, offs, lens, &err), 0);
        uint64_t bad_off = TOTAL - 1, bad_len = 2;
        int zero = 0;
        TCHECK_INT(ranks_scatter_payload(&p, 1, &zero, &bad_off, &bad_len, &err), -1);
        TCHECK_INT(err.code, H5ARK_BAD_REQUEST);
        h5ark_payload_free(&p);
    } else {
        unsigned char a[701], b[250];
        uint64_t n0 = (uint64_t)(2 * rank - 2), n1 = n0 + 1;
        uint64_t offs[2] = {400 + n0 * 450, 400 + n1 * 450}, lens[2] = {701, 250};
        void *bufs[2] = {a, b};
        TCHECK_INT(ranks_recv_many(0, 2, bufs, lens, &err), 0);
        for (int k = 0; k < 2; k++)
            TCHECKF(bad_at(bufs[k], lens[k], 9, 9, offs[k]) == lens[k], "rank %d piece %d", rank,
                    k);
    }
    ranks_call_leave();
}

static void rank_bcast_value(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(8);
    h5ark_value *v = NULL;
    if (rank == 0) {
        v = h5ark_value_map();
        h5ark_value_set(v, "a", h5ark_value_int(-12));
        h5ark_value_set(v, "b", h5ark_value_str("twelve"));
    }
    h5ark_error err = {0};
    TCHECK_INT(ranks_bcast_value(&v, &err), 0);
    int64_t a = 0;
    h5ark_value *b = h5ark_value_get(v, "b");
    TCHECK(h5ark_value_to_int64(h5ark_value_get(v, "a"), &a) && a == -12);
    TCHECK(b && b->kind == H5ARK_STR && strcmp(b->as.s.ptr, "twelve") == 0);
    h5ark_value_destroy(&v);
    ranks_call_leave();
}

/* The names a call makes are the same on every rank, and differ from each other. */
static void rank_call_names(int rank, void *ctx) {
    (void)ctx;
    (void)rank;
    ranks_call_enter(9);
    char names[3][48], all[MAX_R][3][48];
    memset(names, 0, sizeof names);
    for (int k = 0; k < 3; k++)
        ranks_call_name(names[k], sizeof names[k]);
    h5ark_error err = {0};
    TCHECK_INT(ranks_allgather(names, all, sizeof names, &err), 0);
    for (int r = 0; r < R; r++)
        for (int k = 0; k < 3; k++)
            TCHECK_STR(all[r][k], names[k]);
    TCHECK(strcmp(names[0], names[1]) != 0 && strcmp(names[1], names[2]) != 0);
    TCHECK(strncmp(names[0], "id_", 3) == 0 && strlen(names[0]) == 12 &&
           strcmp(names[0] + 10, "_9") == 0);
    ranks_call_leave();
}

/* Two calls at once on two threads of every rank, each making collectives of its own
 * sizes: neither takes the other's messages. */
typedef struct {
    ranks_thread_place place;
    uint64_t seq;
} second;

static void interleaved(uint64_t seq) {
    ranks_call_enter(seq);
    int rank = ranks_self();
    uint64_t words = seq == 100 ? 1 : 3;
    for (int i = 0; i < 60; i++) {
        uint64_t v[3] = {seq + (uint64_t)i, seq, (uint64_t)rank};
        h5ark_error err = {0};
        int root = i % R;
        if (rank != root) v[0] = v[1] = v[2] = 0;
        TCHECK_INT(ranks_bcast(root, v, words * 8, &err), 0);
        TCHECKF(v[0] == seq + (uint64_t)i &&
                    (words == 1 || (v[1] == seq && v[2] == (uint64_t)root)),
                "call %llu round %d: %llu", (unsigned long long)seq, i, (unsigned long long)v[0]);
        uint64_t s = seq;
        TCHECK_INT(ranks_allreduce_u64(&s, 1, RANKS_SUM, &err), 0);
        TCHECK_INT(s, seq * (uint64_t)R);
    }
    ranks_call_leave();
}

static void *second_thread(void *arg) {
    second *s = arg;
    ranks_threads_adopt(s->place);
    interleaved(s->seq);
    return NULL;
}

static void rank_interleaved(int rank, void *ctx) {
    (void)rank, (void)ctx;
    second s = {ranks_threads_here(), 101};
    pthread_t t;
    if (pthread_create(&t, NULL, second_thread, &s) != 0) {
        TCHECK(!"a second thread");
        return;
    }
    interleaved(100);
    pthread_join(t, NULL);
}

/* ---- the job's health ---- */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int failed; /* ranks whose wait has failed */
} gate;

/* The last rank breaks the job and stays (so no wait sees it gone) until every other
 * rank's wait has failed with the reason; its own wait fails too. */
static void rank_broken(int rank, void *ctx) {
    gate *g = ctx;
    ranks_call_enter(10);
    h5ark_error err = {0};
    char why[512] = "";
    if (rank == R - 1) {
        ranks_set_broken("rank %d: told to fail", rank);
        TCHECK(ranks_is_broken(why, sizeof why));
        char want[64];
        snprintf(want, sizeof want, "rank %d: told to fail", rank);
        TCHECK_STR(why, want);
        if (R > 1) {
            uint64_t v = 0;
            TCHECK_INT(ranks_recv(0, &v, sizeof v, &err), -1);
            TCHECK_HAS(err.message, "told to fail");
            TCHECK_INT(err.code, H5ARK_IO_ERROR);
        }
        pthread_mutex_lock(&g->lock);
        while (g->failed < R - 1)
            pthread_cond_wait(&g->cond, &g->lock);
        pthread_mutex_unlock(&g->lock);
    } else {
        uint64_t v = 1;
        TCHECK_INT(ranks_bcast(R - 1, &v, sizeof v, &err), -1);
        TCHECK_INT(err.code, H5ARK_IO_ERROR);
        char want[64];
        snprintf(want, sizeof want, "rank %d: told to fail (while broadcasting)", R - 1);
        TCHECK_STR(err.message, want);
        TCHECK(ranks_is_broken(why, sizeof why));
        TCHECK_INT(ranks_barrier(&err), -1);
        TCHECK_HAS(err.message, "told to fail");
        pthread_mutex_lock(&g->lock);
        g->failed++;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
    }
    ranks_call_leave();
}

/* A rank that returns while another waits for it, a message of another length, a wait
 * past the limit: each breaks the job rather than hanging. */
static void rank_gone(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(11);
    h5ark_error err = {0};
    uint64_t v = 0;
    if (rank == 0) {
        TCHECK_INT(ranks_recv(1, &v, sizeof v, &err), -1);
        TCHECK_HAS(err.message, "rank 1 ended without sending");
    }
    ranks_call_leave();
}

static void rank_wrong_length(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(12);
    h5ark_error err = {0};
    uint64_t v[2] = {0, 0};
    if (rank == 0) {
        TCHECK_INT(ranks_recv(1, v, sizeof v, &err), -1);
        TCHECK_HAS(err.message, "rank 1 sent 8 bytes where 16 were expected");
    } else {
        h5ark_span s = {v, 8};
        TCHECK_INT(ranks_send(0, &s, 1, &err), 0);
    }
    ranks_call_leave();
}

/* The other rank stays until the wait has failed (so it is not seen gone instead). */
static void rank_too_long(int rank, void *ctx) {
    gate *g = ctx;
    ranks_call_enter(13);
    h5ark_error err = {0};
    uint64_t v = 0;
    if (rank == 0) {
        TCHECK_INT(ranks_recv(1, &v, sizeof v, &err), -1);
        TCHECK_HAS(err.message, "waited 1 s (H5ARK_RANK_WAIT)");
        pthread_mutex_lock(&g->lock);
        g->failed++;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
    } else { /* at most 10 s: a limit not kept then shows as this rank gone */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&g->lock);
        while (!g->failed && pthread_cond_timedwait(&g->cond, &g->lock, &until) == 0) {}
        pthread_mutex_unlock(&g->lock);
    }
    ranks_call_leave();
}

/* ---- outside a call, a collective is this rank's alone ---- */

static void rank_outside(int rank, void *ctx) {
    (void)ctx;
    h5ark_error err = {0};
    TCHECK_INT(ranks_call_seq(), 0);
    h5ark_fail(&err, H5ARK_NOT_FOUND, "mine %d", rank);
    TCHECK_INT(ranks_agree(-1, &err), -1);
    char want[32];
    snprintf(want, sizeof want, "mine %d", rank);
    TCHECK_STR(err.message, want);
    uint64_t v = (uint64_t)rank + 5, before = 9, total = 0, got = 0;
    TCHECK_INT(ranks_allreduce_u64(&v, 1, RANKS_SUM, &err), 0);
    TCHECK_INT(v, rank + 5);
    h5ark_span s = {&v, sizeof v};
    uint64_t count = sizeof v;
    TCHECK_INT(ranks_gatherv(&s, 1, &got, &count, &err), 0);
    TCHECK_INT(got, rank + 5);
    TCHECK_INT(ranks_exscan_u64(v, &before, &total, &err), 0);
    TCHECK(before == 0 && total == v);
    char a[48], b[48];
    ranks_call_name(a, sizeof a);
    ranks_call_name(b, sizeof b);
    TCHECK(strncmp(a, "id_", 3) == 0 && strlen(a) >= 12 && strcmp(a, b) != 0);
}

/* ---- SPMD helpers ---- */

static int root_work(void *ctx, h5ark_error *err) {
    int *ran = ctx;
    ran[ranks_self()]++;
    return ran[MAX_R] ? h5ark_fail(err, H5ARK_BAD_REQUEST, "root said no") : 0;
}

static h5ark_value *root_value(void *ctx, h5ark_error *err) {
    int *ran = ctx;
    ran[ranks_self()]++;
    if (ran[MAX_R]) {
        h5ark_fail(err, H5ARK_NOT_FOUND, "nothing at the root");
        return NULL;
    }
    return h5ark_value_uint(4242);
}

static void rank_spmd(int rank, void *ctx) {
    int *ran = ctx; /* [MAX_R]: runs of each rank, [MAX_R]: whether the root fails */
    ranks_call_enter(14);
    h5ark_error err = {0};
    uint64_t before = 1, total = 0;
    TCHECK_INT(ranks_exscan_u64((uint64_t)rank * rank + 1, &before, &total, &err), 0);
    uint64_t wb = 0, wt = 0;
    for (int r = 0; r < R; r++) {
        if (r < rank) wb += (uint64_t)r * r + 1;
        wt += (uint64_t)r * r + 1;
    }
    TCHECK_INT(before, wb);
    TCHECK_INT(total, wt);
    TCHECK_INT(ranks_exscan_u64(7, NULL, &total, &err), 0);
    TCHECK_INT(total, 7 * R);

    unsigned char mine[5], all[MAX_R][5];
    for (int i = 0; i < 5; i++)
        mine[i] = pattern(rank, 5, (uint64_t)i);
    TCHECK_INT(ranks_allgather(mine, all, 5, &err), 0);
    for (int r = 0; r < R; r++)
        TCHECKF(bad_at(all[r], 5, r, 5, 0) == 5, "rank %d's bytes", r);

    for (int fail = 0; fail < 2; fail++) {
        TCHECK_INT(ranks_barrier(&err), 0); /* rank 0 sets ran[MAX_R] between runs */
        if (rank == 0) ran[MAX_R] = fail;
        TCHECK_INT(ranks_barrier(&err), 0);
        err = (h5ark_error){0};
        TCHECK_INT(ranks_on_root(root_work, ran, &err), fail ? -1 : 0);
        if (fail) TCHECK_STR(err.message, "root said no");
        h5ark_value *v = NULL;
        err = (h5ark_error){0};
        TCHECK_INT(ranks_on_root_value(root_value, ran, &v, &err), fail ? -1 : 0);
        uint64_t u = 0;
        if (fail)
            TCHECK(!v && err.code == H5ARK_NOT_FOUND);
        else
            TCHECK(h5ark_value_to_uint64(v, &u) && u == 4242);
        h5ark_value_destroy(&v);
    }
    TCHECK_INT(ranks_barrier(&err), 0);
    TCHECK_INT(ran[rank], rank == 0 ? 4 : 0); /* the root alone ran them */
    ranks_call_leave();
}

/* ---- a rank's block of n items over every rank's locales ---- */

static void test_local_block(void) {
    static const uint64_t ns[] = {0, 1, 5, 7, 1000, 1001};
    for (int ranks = 1; ranks <= 3; ranks++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            uint64_t n = ns[k], next = 0;
            for (int r = 0; r < ranks; r++) {
                if (locales_start(2, r, ranks) != 0) {
                    CHECK(!"locales start");
                    return;
                }
                uint64_t lo, hi;
                locales_local_block(n, &lo, &hi);
                CHECKF(lo == next && hi >= lo, "n %llu rank %d of %d: [%llu, %llu)",
                       (unsigned long long)n, r, ranks, (unsigned long long)lo,
                       (unsigned long long)hi);
                CHECK_INT(lo, locales_block_start(n, 2 * ranks, 2 * r));
                CHECK_INT(hi, locales_block_start(n, 2 * ranks, 2 * r + 2));
                next = hi;
                locales_stop();
            }
            CHECK_INT(next, n);
        }
}

int main(void) {
    for (int r = 1; r <= MAX_R; r++) {
        run(r, rank_allreduce, NULL);
        run(r, rank_agree, NULL);
        run(r, rank_bcast, NULL);
        run(r, rank_gatherv, NULL);
        run(r, rank_alltoallv, NULL);
        run(r, rank_send_recv, NULL);
        run(r, rank_scatter, NULL);
        run(r, rank_bcast_value, NULL);
        run(r, rank_call_names, NULL);
        run(r, rank_interleaved, NULL);
        run(r, rank_outside, NULL);
        int ran[MAX_R + 1] = {0};
        run(r, rank_spmd, ran);
        gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
        R = r;
        CHECK(ranks_threads_run(r, 20, rank_broken, &g) >= 0);
    }
    R = 2;
    CHECK(ranks_threads_run(2, 20, rank_gone, NULL) >= 0);
    CHECK(ranks_threads_run(2, 20, rank_wrong_length, NULL) >= 0);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    CHECK(ranks_threads_run(2, 1, rank_too_long, &g) >= 0);
    /* the process's own job is untouched by the ones that broke */
    CHECK(!ranks_is_broken(NULL, 0));
    CHECK_INT(ranks_count(), 1);
    test_local_block();
    return check_exit("test_dist");
}
