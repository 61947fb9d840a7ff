/* Unit tests of dist/spmd.c: at one rank every form is the direct one (the gather moves
 * nothing and leaves every piece where it is, shares and collections encode nothing, the
 * one rank's block is the whole list); at R = 2, 3, 4 ranks as threads of this process
 * (ranks_threads_run) a stream of pieces held here and there arrives whole and in order
 * on rank 0 and nowhere else, rank 0's state reaches every rank, every rank's reaches
 * rank 0, the blocks deal out a list, and a failure on one rank is every rank's. */
#include "check.h"
#include "config.h"
#include "dist/ranks.h"
#include "dist/spmd.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

/* check.h counts in plain variables: the ranks' threads check under one lock */
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
#define TCHECKF(c, ...)                                                                            \
    do {                                                                                           \
        bool c_ = (c);                                                                             \
        pthread_mutex_lock(&check_lock);                                                           \
        CHECKF(c_, __VA_ARGS__);                                                                   \
        pthread_mutex_unlock(&check_lock);                                                         \
    } while (0)
#define TCHECK_INT(a, b)                                                                           \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        TCHECKF(a_ == b_, "%s: %lld, not %lld", #a, a_, b_);                                       \
    } while (0)

enum { MAX_R = 4, NPIECES = 11 };

static int R;

/* ---- codecs that count their calls, a rank's state an int ---- */

typedef struct {
    int state[MAX_R];
    int got[MAX_R][MAX_R]; /* got[r][from]: what rank r decoded from rank `from` */
    int encoded[MAX_R], roomed[MAX_R], decoded[MAX_R];
} counts;

typedef struct {
    counts *c;
    int rank;
} rank_ctx;

static int int_encode(void *ctx, void **buf, uint64_t *len, h5ark_error *err) {
    rank_ctx *x = ctx;
    (void)err;
    x->c->encoded[x->rank]++;
    *buf = malloc(sizeof(int));
    memcpy(*buf, &x->c->state[x->rank], sizeof(int));
    *len = sizeof(int);
    return 0;
}
static int int_room(void *ctx, uint64_t len, void **buf, h5ark_error *err) {
    rank_ctx *x = ctx;
    (void)err;
    x->c->roomed[x->rank]++;
    *buf = malloc(len ? len : 1);
    return 0;
}
static int int_decode(void *ctx, int from, const void *buf, uint64_t len, h5ark_error *err) {
    rank_ctx *x = ctx;
    x->c->decoded[x->rank]++;
    if (len != sizeof(int))
        return h5ark_fail(err, H5ARK_INTERNAL, "%llu bytes", (unsigned long long)len);
    memcpy(&x->c->got[x->rank][from], buf, sizeof(int));
    return 0;
}
static const spmd_codec int_codec = {int_encode, int_room, int_decode};

/* ---- a stream of pieces: piece i held by rank (3i + 1) % R, 5i % 7 bytes ---- */

static int piece_rank(int i) {
    return (3 * i + 1) % R;
}
static uint64_t piece_len(int i) {
    return (uint64_t)(5 * i % 7);
}
static unsigned char piece_byte(int i, uint64_t k) {
    return (unsigned char)(i * 31 + (int)k * 7 + 1);
}

static void rank_run(int rank, void *arg) {
    counts *c = arg;
    rank_ctx x = {c, rank};
    h5ark_error err = {0};
    ranks_call_enter(21);

    /* the stream: each rank fills its own pieces, and gives the whole list */
    unsigned char bytes[NPIECES][8];
    spmd_piece p[NPIECES];
    for (int i = 0; i < NPIECES; i++) {
        for (uint64_t k = 0; k < piece_len(i); k++)
            bytes[i][k] = piece_byte(i, k);
        p[i] = (spmd_piece){piece_rank(i), piece_rank(i) == rank ? bytes[i] : NULL, piece_len(i)};
    }
    uint64_t want = 0;
    for (int i = 0; rank == 0 && i < NPIECES; i++)
        if (piece_rank(i) != 0) want += piece_len(i);
    uint64_t room = spmd_pieces_recv_bytes(p, NPIECES);
    TCHECK_INT(room, want);
    void *recv = malloc(room ? room : 1);
    size_t n = NPIECES;
    TCHECK_INT(spmd_pieces_gather(0, p, &n, recv, &err), 0);
    TCHECK_INT(n, rank == 0 ? NPIECES : 0);
    for (size_t i = 0; i < n; i++) {
        bool same = p[i].len == piece_len((int)i);
        for (uint64_t k = 0; same && k < p[i].len; k++)
            same = ((const unsigned char *)p[i].ptr)[k] == piece_byte((int)i, k);
        TCHECKF(same, "rank 0's piece %zu (rank %d's)", i, piece_rank((int)i));
        if (piece_rank((int)i) == 0)
            TCHECKF(p[i].ptr == bytes[i], "rank 0's own piece %zu moved", i);
    }
    free(recv);

    /* a failure on the last rank is every rank's, and nothing moves */
    n = NPIECES;
    int rc = rank == R - 1 && R > 1 ? h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "no room here") : 0;
    TCHECK_INT(spmd_pieces_gather(rc, p, &n, NULL, &err), R > 1 ? -1 : 0);
    if (R > 1) TCHECKF(strstr(err.message, "no room here") != NULL, "%s", err.message);

    /* rank 0's state to every rank; every rank's to rank 0 */
    c->state[rank] = 100 + rank;
    TCHECK_INT(spmd_share(0, &int_codec, &x, &err), 0);
    for (int r = 0; r < R; r++)
        TCHECK_INT(c->got[rank][0], rank == 0 ? 0 : 100);
    TCHECK_INT(ranks_barrier(&err), 0);
    c->got[rank][0] = 0;
    TCHECK_INT(spmd_collect(0, &int_codec, &x, &err), 0);
    for (int r = 1; r < R; r++)
        TCHECK_INT(c->got[rank][r], rank == 0 ? 100 + r : 0);
    /* a failure before either: nothing is encoded, every rank fails */
    err = (h5ark_error){0};
    rc = rank == 0 ? 0 : h5ark_fail(&err, H5ARK_NOT_FOUND, "rank %d lacks it", rank);
    TCHECK_INT(spmd_share(rc, &int_codec, &x, &err), R > 1 ? -1 : 0);
    TCHECK_INT(spmd_collect(rc, &int_codec, &x, &err), R > 1 ? -1 : 0);

    /* the blocks deal out 10 items in rank order */
    uint64_t lo, hi, plo, phi;
    spmd_block(10, &lo, &hi);
    spmd_block_of(10, rank, &plo, &phi);
    TCHECK_INT(lo, plo);
    TCHECK_INT(hi, phi);
    if (rank == 0) TCHECK_INT(lo, 0);
    if (rank == R - 1) TCHECK_INT(hi, 10);
    if (rank > 0) {
        spmd_block_of(10, rank - 1, &plo, &phi);
        TCHECK_INT(phi, lo);
    }
    ranks_call_leave();
}

int main(void) {
    h5ark_error err = {0};

    /* one rank, outside any call: every piece is rank 0's, read where it lies */
    char a[] = "abc", b[] = "defg";
    spmd_piece p[2] = {{0, a, 3}, {0, b, 4}};
    size_t n = 2;
    CHECK_INT(spmd_pieces_recv_bytes(p, n), 0);
    CHECK_INT(spmd_pieces_gather(0, p, &n, NULL, &err), 0);
    CHECK_INT(n, 2);
    CHECK(p[0].ptr == a && p[1].ptr == b);
    CHECK_INT(spmd_pieces_gather(-1, p, &n, NULL, &err), -1); /* the outcome given */
    CHECK_INT(n, 2);
    counts one = {0};
    rank_ctx x = {&one, 0};
    CHECK_INT(spmd_share(0, &int_codec, &x, &err), 0);
    CHECK_INT(spmd_share(-1, &int_codec, &x, &err), -1);
    CHECK_INT(spmd_collect(0, &int_codec, &x, &err), 0);
    CHECK_INT(one.encoded[0] + one.roomed[0] + one.decoded[0], 0);
    uint64_t lo = 7, hi = 7;
    spmd_block(10, &lo, &hi);
    CHECK(lo == 0 && hi == 10);

    /* R ranks as threads, R = 1 within a call too */
    for (R = 1; R <= MAX_R; R++) {
        counts c = {0};
        CHECKF(ranks_threads_run(R, 20, rank_run, &c) == 0, "R = %d", R);
        /* share: rank 0 encodes (its outcome was fine in the failed share too), the others
         * make room and decode once; collect: the others encode once, rank 0 decodes each */
        CHECK_INT(c.encoded[0], R > 1 ? 2 : 0);
        CHECK_INT(c.roomed[0], R > 1 ? 1 : 0);
        for (int r = 1; r < R; r++) {
            CHECK_INT(c.encoded[r], 1);
            CHECK_INT(c.roomed[r], 1);
            CHECK_INT(c.decoded[r], 1);
        }
        CHECK_INT(c.decoded[0], R - 1);
    }

    /* the job's ranks by number: one, this host */
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    h5ark_value *hosts = spmd_hosts();
    CHECK(hosts != NULL);
    CHECK_INT(h5ark_value_len(hosts), 1);
    if (hosts && h5ark_value_len(hosts) == 1) CHECK_STR(h5ark_value_at(hosts, 0)->as.s.ptr, host);
    h5ark_value_destroy(&hosts);
    CHECK_INT(spmd_check_rank(0, "fault", &err), 0);
    CHECK_INT(spmd_check_rank(1, "fault", &err), -1);
    CHECK_STR(err.message, "fault: rank must be 0 to 0, not 1");
    CHECK_INT(err.code, H5ARK_BAD_REQUEST);
    CHECK_INT(spmd_check_rank(-1, "fault", &err), -1);
    CHECK_INT(spmd_on_rank(0, 5), 5);
    CHECK_INT(spmd_on_rank(1, 5), 0);
    return check_exit("test_spmd");
}
