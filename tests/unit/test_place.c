/* Unit tests of dist/place, at one rank and at 2 to 4 ranks as threads of this process
 * (ranks_threads_run): a payload's pieces filled by the rank holding it and received by
 * the others, rank 0's answer on every rank, a gather buffer on rank 0 alone, and rows
 * held anywhere handed to the ranks they are for, in row order, with every byte of scratch
 * given back. */
#include "check.h"
#include "dist/place.h"
#include "dist/ranks.h"
#include "dist/spmd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* check.h counts in plain variables: the ranks' threads check under one lock */
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
#define TCHECK(c)                                                                                  \
    do {                                                                                           \
        bool c_ = (c);                                                                             \
        pthread_mutex_lock(&check_lock);                                                           \
        CHECKF(c_, "%s", #c);                                                                      \
        pthread_mutex_unlock(&check_lock);                                                         \
    } while (0)

/* ---- payload ---- */

typedef struct {
    const h5ark_payload *p;
    const place_piece *pieces;
    size_t n;
    int calls, from_payload;
} fill_job;

static void fill(void *ctx, bool from_payload) {
    fill_job *j = ctx;
    j->calls++;
    j->from_payload = from_payload;
    for (size_t i = 0; from_payload && i < j->n; i++)
        h5ark_payload_copy(j->p, j->pieces[i].offset, j->pieces[i].dst, j->pieces[i].len);
}

static void append(h5ark_payload *p, const char *text) {
    zmq_msg_t m;
    zmq_msg_init_size(&m, strlen(text));
    memcpy(zmq_msg_data(&m), text, strlen(text));
    CHECK(h5ark_payload_append(p, &m) == 0);
}

static void test_payload(void) {
    h5ark_payload p;
    h5ark_payload_init(&p);
    append(&p, "abcdef");
    append(&p, "ghij"); /* a piece across the two frames */
    char a[4] = {0}, b[5] = {0};
    place_piece pieces[] = {{0, 1, 3, a}, {0, 5, 4, b}};
    fill_job j = {&p, pieces, 2, 0, 0};
    h5ark_error err = {0};
    CHECK(place_payload(&p, pieces, 2, fill, &j, &err) == 0);
    CHECK_INT(j.calls, 1);
    CHECK_INT(j.from_payload, 1);
    CHECK_STR(a, "bcd");
    CHECK_STR(b, "fghi");
    /* a piece for a rank there is not: refused, nothing filled twice */
    place_piece away[] = {{1, 0, 2, NULL}};
    fill_job k = {&p, away, 0, 0, 0};
    CHECK(place_payload(&p, away, 1, fill, &k, &err) == -1);
    CHECK_INT(err.code, H5ARK_INTERNAL);
    h5ark_payload_free(&p);
}

/* ---- rank 0's answer, the gather buffer, failures ---- */

static int answer(void *ctx, h5ark_error *err) {
    uint64_t *v = ctx;
    if (v[0] == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "no answer");
    v[1] = v[0] * 2;
    return 0;
}

static void test_root(void) {
    uint64_t v[2] = {21, 0};
    h5ark_error err = {0};
    CHECK(place_from_root(0, answer, v, &v[1], sizeof v[1], &err) == 0);
    CHECK_INT(v[1], 42);
    v[0] = 0;
    CHECK(place_from_root(0, answer, v, &v[1], sizeof v[1], &err) == -1);
    CHECK_STR(err.message, "no answer");
    /* a failure before: no answer asked, the failure kept */
    v[0] = 5;
    v[1] = 0;
    h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "short before");
    CHECK(place_from_root(-1, answer, v, &v[1], sizeof v[1], &err) == -1);
    CHECK_INT(v[1], 0);
    CHECK_STR(err.message, "short before");

    void *buf = NULL;
    CHECK(place_root_calloc(16, &buf, &err) == 0);
    CHECK(buf != NULL && ((char *)buf)[15] == 0);
    free(buf);
}

/* ---- rows ---- */

static uint64_t held; /* scratch counted, not yet given back */
static int takes;

static int take(void *ctx, uint64_t n, void **out, uint64_t *taken, h5ark_error *err) {
    (void)ctx;
    if (!(*out = malloc(n ? n : 1))) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "short");
    held += n;
    *taken += n;
    takes++;
    return 0;
}

static void give_back(void *ctx, uint64_t n) {
    (void)ctx;
    held -= n;
}

typedef struct {
    int calls;
    char text[64];
    uint64_t rows;
} use_job;

/* The rows as "row:text|" in the order given: each row from its offset to the next. */
static int use(void *ctx, place_rows *got, size_t ngot, h5ark_error *err) {
    use_job *u = ctx;
    u->calls++;
    size_t at = 0;
    for (size_t r = 0; r < ngot; r++)
        for (uint64_t k = 0; k < got[r].count; k++) {
            uint64_t from = (uint64_t)(got[r].offsets[k] - got[r].base);
            uint64_t to = k + 1 < got[r].count ? (uint64_t)(got[r].offsets[k + 1] - got[r].base)
                                               : got[r].nbytes;
            at += (size_t)snprintf(u->text + at, sizeof u->text - at, "%llu:%.*s|",
                                   (unsigned long long)(got[r].row + k), (int)(to - from),
                                   got[r].bytes + from);
            u->rows++;
        }
    return u->rows == 5
               ? 0
               : h5ark_fail(err, H5ARK_INTERNAL, "rows: %llu", (unsigned long long)u->rows);
}

static void test_rows(void) {
    /* rows 3..4 ("de", "f") given before rows 0..2 ("a", "bb", "c"), offsets from a base */
    static const int64_t off_late[] = {100, 102}, off_early[] = {10, 11, 13};
    place_rows_piece pieces[] = {{0, {3, 2, "def", 3, off_late, 100}},
                                 {0, {0, 3, "abbc", 4, off_early, 10}}};
    place_scratch scratch = {take, give_back, NULL};
    use_job u = {0};
    h5ark_error err = {0};
    CHECK(place_rows_exchange(0, pieces, 2, &scratch, use, &u, &err) == 0);
    CHECK_INT(u.calls, 1);
    CHECK_STR(u.text, "0:a|1:bb|2:c|3:de|4:f|");
    CHECK_INT(held, 0);
    CHECK(takes > 0);

    /* use's failure is the exchange's, and the scratch is given back still */
    use_job v = {.rows = 1};
    CHECK(place_rows_exchange(0, pieces, 2, &scratch, use, &v, &err) == -1);
    CHECK_STR(err.message, "rows: 6");
    CHECK_INT(held, 0);

    /* a failure before: nothing moves, use is not run */
    use_job f = {0};
    h5ark_fail(&err, H5ARK_BAD_REQUEST, "failed before");
    CHECK(place_rows_exchange(-1, pieces, 2, &scratch, use, &f, &err) == -1);
    CHECK_STR(err.message, "failed before");
    CHECK_INT(f.calls, 0);
    CHECK_INT(held, 0);

    /* rows for a rank there is not: an internal error before anything moves */
    place_rows_piece away[] = {{3, {0, 1, "a", 1, off_early, 10}}};
    use_job w = {0};
    CHECK(place_rows_exchange(0, away, 1, &scratch, use, &w, &err) == -1);
    CHECK_INT(err.code, H5ARK_INTERNAL);
    CHECK_INT(w.calls, 0);
    CHECK_INT(held, 0);
}

/* ---- several ranks as threads ---- */

enum { NROWS = 30, MAX_DST = 4 };

static int nranks_run; /* the ranks of the run under way */

/* The rank rows from `row` go to: any rank, not their holder's. */
static int dest_of(uint64_t row) {
    return (int)((row * 5 + 1) % (uint64_t)nranks_run);
}

static int take_counted(void *ctx, uint64_t n, void **out, uint64_t *taken, h5ark_error *err) {
    if (!(*out = malloc(n ? n : 1))) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "short");
    *(uint64_t *)ctx += n;
    *taken += n;
    return 0;
}

static void give_back_counted(void *ctx, uint64_t n) {
    *(uint64_t *)ctx -= n;
}

typedef struct {
    int rank, calls;
    bool ok;
} rows_check;

/* Rank q gets exactly the rows dest_of gives it, in row order, each "r<row>" */
static int check_rows(void *ctx, place_rows *got, size_t ngot, h5ark_error *err) {
    rows_check *rc = ctx;
    rc->calls++;
    uint64_t row = 0;
    bool ok = true;
    for (size_t r = 0; r < ngot; r++)
        for (uint64_t k = 0; k < got[r].count; k++) {
            while (row < NROWS && dest_of(row) != rc->rank)
                row++;
            uint64_t from = (uint64_t)(got[r].offsets[k] - got[r].base);
            uint64_t to = k + 1 < got[r].count ? (uint64_t)(got[r].offsets[k + 1] - got[r].base)
                                               : got[r].nbytes;
            char want[16];
            int len = snprintf(want, sizeof want, "r%llu", (unsigned long long)row);
            ok &= got[r].row + k == row && to - from == (uint64_t)len &&
                  memcmp(got[r].bytes + from, want, (size_t)len) == 0;
            row++;
        }
    while (row < NROWS && dest_of(row) != rc->rank)
        row++;
    rc->ok = ok && row == NROWS;
    (void)err;
    return 0;
}

/* Rank r holds the rows k with k % R == r, each a piece of one row for dest_of(k), given
 * from the last to the first. */
static void rank_rows(int rank, void *ctx) {
    (void)ctx;
    ranks_call_enter(3);
    char bytes[NROWS][16];
    int64_t offs[NROWS];
    place_rows_piece pieces[NROWS];
    size_t n = 0;
    for (int k = NROWS - 1; k >= 0; k--) {
        if (k % nranks_run != rank) continue;
        int len = snprintf(bytes[k], sizeof bytes[k], "r%d", k);
        offs[k] = 1000 + k; /* any base */
        pieces[n++] = (place_rows_piece){
            dest_of((uint64_t)k), {(uint64_t)k, 1, bytes[k], (uint64_t)len, &offs[k], 1000 + k}};
    }
    uint64_t held_here = 0;
    place_scratch scratch = {take_counted, give_back_counted, &held_here};
    rows_check rc = {.rank = rank};
    h5ark_error err = {0};
    TCHECK(place_rows_exchange(0, pieces, n, &scratch, check_rows, &rc, &err) == 0);
    TCHECK(rc.calls == 1 && rc.ok);
    TCHECK(held_here == 0);
    /* one rank's failure is every rank's, its message with its rank */
    rows_check none = {.rank = rank};
    int mine = 0;
    if (rank == nranks_run - 1) {
        h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "short here");
        mine = spmd_name_rank(-1, &err);
    }
    TCHECK(place_rows_exchange(mine, pieces, n, &scratch, check_rows, &none, &err) == -1);
    char want[64];
    snprintf(want, sizeof want, "rank %d: short here", nranks_run - 1);
    TCHECK(strcmp(err.message, want) == 0);
    TCHECK(none.calls == 0 && held_here == 0);
    ranks_call_leave();
}

typedef struct {
    const h5ark_payload *p;
    char *dst;
    bool from_payload;
    int calls;
} one_fill;

static void fill_one(void *ctx, bool from_payload) {
    one_fill *f = ctx;
    f->calls++;
    f->from_payload = from_payload;
    if (from_payload) h5ark_payload_copy(f->p, 0, f->dst, 4); /* rank 0's piece */
}

/* Rank q's 4 bytes at 4q of rank 0's payload; rank 0's answer; rank 0's gather buffer */
static void rank_payload(int rank, void *ctx) {
    const h5ark_payload *full = ctx;
    h5ark_payload none;
    h5ark_payload_init(&none);
    ranks_call_enter(4);
    char got[MAX_DST][5];
    memset(got, 0, sizeof got);
    place_piece pieces[MAX_DST];
    for (int q = 0; q < nranks_run; q++)
        pieces[q] = (place_piece){q, 4 * (uint64_t)q, 4, q == rank ? got[q] : NULL};
    one_fill f = {rank == 0 ? full : &none, got[0], false, 0};
    h5ark_error err = {0};
    TCHECK(place_payload(rank == 0 ? full : &none, pieces, (size_t)nranks_run, fill_one, &f,
                         &err) == 0);
    char want[5];
    memcpy(want, "abcdefghijklmnop" + 4 * rank, 4);
    want[4] = 0;
    TCHECK(strcmp(got[rank], want) == 0);
    TCHECK(f.calls == 1 && f.from_payload == (rank == 0));

    uint64_t v[2] = {21, 0};
    TCHECK(place_from_root(0, answer, v, &v[1], sizeof v[1], &err) == 0 && v[1] == 42);
    /* a failure on another rank: no answer on any, its error on all */
    int mine = 0;
    if (rank == 1) mine = h5ark_fail(&err, H5ARK_BAD_REQUEST, "rank 1 says no");
    v[1] = 7;
    TCHECK(place_from_root(mine, answer, v, &v[1], sizeof v[1], &err) == -1);
    TCHECK(strcmp(err.message, "rank 1 says no") == 0);

    void *buf = NULL;
    TCHECK(place_root_calloc(8, &buf, &err) == 0 && (buf != NULL) == (rank == 0));
    free(buf);
    ranks_call_leave();
    h5ark_payload_free(&none);
}

static void test_ranks(void) {
    h5ark_payload p;
    h5ark_payload_init(&p);
    append(&p, "abcdefg");
    append(&p, "hijklmnop");
    for (int r = 2; r <= MAX_DST; r++) {
        nranks_run = r;
        CHECK_INT(ranks_threads_run(r, 20, rank_rows, NULL), 0);
        CHECK_INT(ranks_threads_run(r, 20, rank_payload, &p), 0);
    }
    h5ark_payload_free(&p);
}

int main(void) {
    test_payload();
    test_root();
    test_rows();
    test_ranks();
    return check_exit("test_place");
}
