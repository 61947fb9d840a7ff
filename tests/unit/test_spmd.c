/* Unit tests of dist/spmd.c at one rank (no mpirun): every form is the direct one there —
 * the gather moves nothing and leaves every piece where it is, rank 0's work runs, shares
 * and collections encode nothing, the one rank's block is the whole list, and the checks
 * of a named rank read as with one rank. */
#include "check.h"
#include "dist/spmd.h"

#include <stdlib.h>
#include <unistd.h>

static int encoded, roomed, decoded, ran;

static int count_encode(void *ctx, void **buf, uint64_t *len, h5ark_error *err) {
    (void)ctx, (void)err;
    encoded++;
    *buf = malloc(1);
    *len = 0;
    return 0;
}
static int count_room(void *ctx, uint64_t len, void **buf, h5ark_error *err) {
    (void)ctx, (void)len, (void)err;
    roomed++;
    *buf = malloc(1);
    return 0;
}
static int count_decode(void *ctx, int from, const void *buf, uint64_t len, h5ark_error *err) {
    (void)ctx, (void)from, (void)buf, (void)len, (void)err;
    decoded++;
    return 0;
}
static int root_work(void *ctx, h5ark_error *err) {
    ran++;
    return *(int *)ctx ? h5ark_fail(err, H5ARK_NOT_FOUND, "no such thing") : 0;
}

int main(void) {
    h5ark_error err = {0};

    /* a stream at one rank: every piece is rank 0's, read where it lies */
    char a[] = "abc", b[] = "defg";
    spmd_piece p[2] = {{0, a, 3}, {0, b, 4}};
    size_t n = 2;
    CHECK_INT(spmd_pieces_recv_bytes(p, n), 0);
    CHECK_INT(spmd_pieces_gather(0, p, &n, NULL, &err), 0);
    CHECK_INT(n, 2);
    CHECK(p[0].ptr == a && p[1].ptr == b);
    CHECK_INT(p[0].len + p[1].len, 7);
    /* an outcome given is the outcome returned, the pieces untouched */
    CHECK_INT(spmd_pieces_gather(-1, p, &n, NULL, &err), -1);
    CHECK_INT(n, 2);

    /* rank 0's work runs here, and says how it went */
    int fail = 0;
    CHECK_INT(spmd_on_root(root_work, &fail, &err), 0);
    fail = 1;
    CHECK_INT(spmd_on_root(root_work, &fail, &err), -1);
    CHECK_INT(ran, 2);
    CHECK_STR(err.message, "no such thing");

    /* sharing and collecting move nothing: nothing is encoded, made room for or decoded */
    spmd_codec codec = {count_encode, count_room, count_decode};
    CHECK_INT(spmd_share(0, &codec, NULL, &err), 0);
    CHECK_INT(spmd_share(-1, &codec, NULL, &err), -1);
    CHECK_INT(spmd_collect(0, &codec, NULL, &err), 0);
    CHECK_INT(spmd_collect(-1, &codec, NULL, &err), -1);
    CHECK_INT(encoded + roomed + decoded, 0);

    /* the one rank's block is the whole list */
    uint64_t lo = 7, hi = 7;
    spmd_block(10, &lo, &hi);
    CHECK_INT(lo, 0);
    CHECK_INT(hi, 10);
    spmd_block_of(0, 0, &lo, &hi);
    CHECK_INT(lo, 0);
    CHECK_INT(hi, 0);

    /* the ranks' hosts: one, this one */
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    h5ark_value *hosts = spmd_hosts();
    CHECK(hosts != NULL);
    CHECK_INT(h5ark_value_len(hosts), 1);
    if (hosts && h5ark_value_len(hosts) == 1) CHECK_STR(h5ark_value_at(hosts, 0)->as.s.ptr, host);
    h5ark_value_destroy(&hosts);

    /* a named rank */
    CHECK_INT(spmd_check_rank(0, "fault", &err), 0);
    CHECK_INT(spmd_check_rank(1, "fault", &err), -1);
    CHECK_STR(err.message, "fault: rank must be 0 to 0, not 1");
    CHECK_INT(err.code, H5ARK_BAD_REQUEST);
    CHECK_INT(spmd_check_rank(-1, "fault", &err), -1);
    CHECK_INT(spmd_on_rank(0, 5), 5);
    CHECK_INT(spmd_on_rank(1, 5), 0);

    /* an error that names its rank */
    CHECK_INT(spmd_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory for %d bytes", 12), -1);
    CHECK_STR(err.message, "rank 0: out of memory for 12 bytes");
    CHECK_INT(err.code, H5ARK_RESOURCE_LIMIT);
    return check_exit("test_spmd");
}
