/* Unit tests of dist/place at one rank: a payload's pieces filled by the rank holding it,
 * rank 0's answer, a gather buffer, a failure's rank context inside a call only, and rows
 * given in any order handed back in row order with every byte of scratch given back. */
#include "check.h"
#include "dist/place.h"
#include "dist/ranks.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

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

static void test_context(void) {
    h5ark_error err = {0};
    h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
    CHECK(place_rank_context(&err) == -1);
    CHECK_STR(err.message, "out of memory"); /* outside a call: as it is */
    CHECK(place_agree(-1, &err) == -1);
    CHECK(place_agree(0, &err) == 0);
    ranks_call_enter(7);
    CHECK(place_rank_context(&err) == -1);
    CHECK_STR(err.message, "rank 0: out of memory");
    CHECK(place_agree(0, &err) == 0);
    ranks_call_leave();
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

int main(void) {
    test_payload();
    test_root();
    test_context();
    test_rows();
    return check_exit("test_place");
}
