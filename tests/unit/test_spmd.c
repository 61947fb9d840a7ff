/* Unit tests of dist/spmd.h at one rank, where each step must be the plain local one: the
 * root's step runs once and its error is every rank's, nothing is encoded to be shared, a
 * gather to a new buffer is a copy of the spans, and a funnel takes rank 0's own pieces in
 * order and stops taking at the first failure. */
#include "check.h"
#include "config.h"
#include "dist/spmd.h"

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

static h5ark_value *encode(void *ctx) {
    (void)ctx;
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
    CHECK(spmd_share(encode, decode, NULL, &err) == 0);
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
    CHECK(spmd_is_root_rank(0));
    CHECK(!spmd_is_root_rank(1));
}

int main(void) {
    test_root_does();
    test_share();
    test_gather_new();
    test_funnel();
    test_names();
    return check_exit("test_spmd");
}
