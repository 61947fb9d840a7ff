/* Steps one rank takes for all (spmd.h). */
#include "dist/spmd.h"

#include "dist/ranks.h"

#include <stdlib.h>
#include <string.h>

bool spmd_is_root_rank(int rank) {
    return rank == 0;
}

int spmd_name_rank(int rc, h5ark_error *err) {
    if (rc && ranks_self() != 0) h5ark_fail_context(err, "rank %d", ranks_self());
    return rc;
}

int spmd_root_does(int rc, int (*fn)(void *ctx, h5ark_error *err), void *ctx, h5ark_error *err) {
    rc = ranks_agree(rc, err);
    return rc ? rc : ranks_on_root(fn, ctx, err);
}

int spmd_share(h5ark_value *(*encode)(void *ctx),
               int (*decode)(const h5ark_value *v, void *ctx, h5ark_error *err), void *ctx,
               h5ark_error *err) {
    if (ranks_count() == 1) return 0;
    h5ark_value *v = ranks_self() == 0 ? encode(ctx) : NULL;
    int rc = ranks_bcast_value(&v, err); /* agreed: a NULL value on rank 0 fails every rank */
    if (rc == 0 && ranks_self() != 0) rc = decode(v, ctx, err);
    h5ark_value_destroy(&v);
    return ranks_agree(rc, err);
}

int spmd_gather_new(const h5ark_span *spans, size_t nspans, const uint64_t *counts, uint64_t total,
                    void **whole, h5ark_error *err) {
    *whole = NULL;
    int rc = 0;
    if (ranks_self() == 0 && !(*whole = malloc(total ? total : 1)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for %llu bytes",
                        (unsigned long long)total);
    rc = ranks_agree(rc, err);
    if (rc == 0) rc = ranks_gatherv(spans, nspans, *whole, counts, err);
    if (rc) {
        free(*whole);
        *whole = NULL;
    }
    return rc;
}

/* Rank 0: the other ranks' pieces, a rank at a time into buf, each taken unless a take
 * failed before (*trc). sizes: every rank's piece sizes back to back, n[r] of them. */
static int funnel_receive(const uint64_t *n, const uint64_t *sizes, unsigned char *buf,
                          spmd_take_fn take, void *ctx, int *trc, h5ark_error *err) {
    uint64_t at = n[0];
    for (int r = 1; r < ranks_count(); r++) {
        uint64_t total = 0, off = 0;
        for (uint64_t j = 0; j < n[r]; j++)
            total += sizes[at + j];
        if (n[r] > 0 && ranks_recv(r, buf, total, err)) return -1;
        for (uint64_t j = 0; j < n[r] && *trc == 0; j++) {
            *trc = take(ctx, r, (size_t)j, buf + off, sizes[at + j], err);
            off += sizes[at + j];
        }
        at += n[r];
    }
    return 0;
}

int spmd_funnel(const h5ark_span *mine, size_t n, spmd_take_fn take, void *ctx, h5ark_error *err) {
    int R = ranks_count(), self = ranks_self();
    int trc = 0; /* rank 0: the first failed take */
    for (size_t i = 0; self == 0 && i < n && trc == 0; i++)
        trc = take(ctx, 0, i, mine[i].ptr, mine[i].len, err);
    if (R == 1) return trc;
    /* rank 0 learns how many pieces each rank has, then their sizes */
    uint64_t count = n, *sizes = malloc((n + 1) * sizeof *sizes);
    uint64_t *each = self == 0 ? calloc((size_t)R, sizeof *each) : NULL;
    uint64_t *eight = self == 0 ? calloc((size_t)R, sizeof *eight) : NULL;
    uint64_t *all = NULL;
    unsigned char *buf = NULL;
    int rc = sizes && (self != 0 || (each && eight)) ? 0 : -1;
    for (size_t i = 0; sizes && i < n; i++)
        sizes[i] = mine[i].len;
    for (int r = 0; eight && r < R; r++)
        eight[r] = sizeof count;
    if (rc) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", self);
    rc = ranks_agree(rc, err);
    h5ark_span one = {&count, sizeof count};
    if (rc == 0) rc = ranks_gatherv(&one, 1, each, eight, err);
    uint64_t nall = 0, most = 0;
    for (int r = 0; rc == 0 && self == 0 && r < R; r++) {
        nall += each[r];
        eight[r] = each[r] * sizeof *sizes; /* now the bytes of each rank's sizes */
    }
    if (rc == 0 && self == 0 && !(all = malloc((nall + 1) * sizeof *all)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    h5ark_span mysizes = {sizes, n * sizeof *sizes};
    if (rc == 0) rc = ranks_gatherv(&mysizes, 1, all, eight, err);
    /* room on rank 0 for the largest of the other ranks' pieces */
    uint64_t at = 0;
    for (int r = 0; rc == 0 && self == 0 && r < R; r++) {
        uint64_t total = 0;
        for (uint64_t j = 0; j < each[r]; j++)
            total += all[at + j];
        at += each[r];
        if (r > 0) most = total > most ? total : most;
    }
    if (rc == 0 && self == 0 && !(buf = malloc(most ? most : 1)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for %llu bytes of pieces",
                        (unsigned long long)most);
    rc = ranks_agree(rc, err);
    if (rc == 0 && self != 0 && n > 0) rc = ranks_send(0, mine, n, err);
    if (rc == 0 && self == 0) rc = funnel_receive(each, all, buf, take, ctx, &trc, err);
    if (rc == 0) rc = trc;
    free(buf);
    free(all);
    free(eight);
    free(each);
    free(sizes);
    return ranks_agree(rc, err);
}
