/* SPMD forms over the collectives of ranks.h (see spmd.h). */
#include "dist/spmd.h"

#include "dist/ranks.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ranks of the current call, as the collectives see them: outside a call, this rank
 * alone (ranks.h). */
static int group_count(void) {
    return ranks_call_seq() ? ranks_count() : 1;
}
static int group_self(void) {
    return ranks_call_seq() ? ranks_self() : 0;
}

uint64_t spmd_pieces_recv_bytes(const spmd_piece *p, size_t n) {
    uint64_t bytes = 0;
    for (size_t i = 0; group_self() == 0 && i < n; i++)
        if (p[i].rank != 0) bytes += p[i].len;
    return bytes;
}

int spmd_pieces_gather(int rc, spmd_piece *p, size_t *n, void *recv, h5ark_error *err) {
    int R = group_count(), self = group_self();
    if (R == 1) return rc;
    uint64_t *at = calloc((size_t)R, sizeof *at), remote = 0;
    size_t nmine = 0;
    for (size_t i = 0; i < *n; i++)
        nmine += p[i].rank == self && self != 0;
    h5ark_span *mine = malloc((nmine ? nmine : 1) * sizeof *mine);
    if (rc == 0 && (!at || !mine)) rc = spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if ((rc = ranks_agree(rc, err)) == 0) {
        nmine = 0;
        for (size_t i = 0; i < *n; i++) {
            if (p[i].rank == 0) continue; /* rank 0 reads its own where they are */
            at[p[i].rank] += p[i].len;
            remote += p[i].len;
            if (p[i].rank == self) mine[nmine++] = (h5ark_span){p[i].ptr, p[i].len};
        }
        if (remote) rc = ranks_gatherv(mine, nmine, recv, at, err);
    }
    if (rc == 0 && self == 0) {
        /* each rank's stream arrived back to back in rank order: where each one starts */
        uint64_t off = 0;
        for (int r = 0; r < R; r++) {
            uint64_t len = at[r];
            at[r] = off;
            off += len;
        }
        for (size_t i = 0; i < *n; i++)
            if (p[i].rank != 0) {
                p[i].ptr = (const char *)recv + at[p[i].rank];
                at[p[i].rank] += p[i].len;
            }
    }
    if (self != 0) *n = 0;
    free(at);
    free(mine);
    return rc;
}

static int room(const spmd_codec *c, void *ctx, uint64_t len, void **buf, h5ark_error *err) {
    if (c->room) return c->room(ctx, len, buf, err);
    if (!(*buf = malloc(len ? len : 1)))
        return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory receiving %llu bytes",
                         (unsigned long long)len);
    return 0;
}

int spmd_share(int rc, const spmd_codec *c, void *ctx, h5ark_error *err) {
    if (group_count() == 1) return rc;
    bool root = group_self() == 0;
    void *buf = NULL;
    uint64_t len = 0;
    if (rc == 0 && root) rc = c->encode(ctx, &buf, &len, err);
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, &len, sizeof len, err);
    if (rc == 0 && !root) rc = room(c, ctx, len, &buf, err);
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, buf, len, err);
    if (rc == 0 && !root) rc = c->decode(ctx, 0, buf, len, err);
    free(buf);
    return ranks_agree(rc, err);
}

int spmd_collect(int rc, const spmd_codec *c, void *ctx, h5ark_error *err) {
    int R = group_count(), self = group_self();
    if (R == 1) return rc;
    void *data = NULL, *recv = NULL;
    uint64_t len = 0, total = 0;
    uint64_t *counts = calloc((size_t)R, sizeof *counts);
    if (rc == 0 && !counts) rc = spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && self != 0) rc = c->encode(ctx, &data, &len, err); /* rank 0's stays put */
    if ((rc = ranks_agree(rc, err)) == 0) {
        counts[self] = len;
        rc = ranks_allreduce_u64(counts, (size_t)R, RANKS_SUM, err);
    }
    for (int r = 0; rc == 0 && r < R; r++)
        total += counts[r];
    if (rc == 0 && self == 0) rc = room(c, ctx, total, &recv, err);
    if ((rc = ranks_agree(rc, err)) == 0) {
        h5ark_span span = {data, len};
        rc = ranks_gatherv(&span, 1, recv, counts, err);
    }
    uint64_t off = counts ? counts[0] : 0;
    for (int r = 1; rc == 0 && self == 0 && r < R; off += counts[r++])
        rc = c->decode(ctx, r, (char *)recv + off, counts[r], err);
    free(recv);
    free(data);
    free(counts);
    return ranks_agree(rc, err);
}

/* Where part b of n items dealt among `parts` starts: as locales deal shards, n*b/parts
 * rounded up. */
static uint64_t block_start(uint64_t n, int parts, int b) {
    unsigned __int128 x = (unsigned __int128)n * (unsigned)b;
    return (uint64_t)((x + (unsigned)parts - 1) / (unsigned)parts);
}

void spmd_block_of(uint64_t n, int r, uint64_t *lo, uint64_t *hi) {
    *lo = block_start(n, group_count(), r);
    *hi = block_start(n, group_count(), r + 1);
}

void spmd_block(uint64_t n, uint64_t *lo, uint64_t *hi) {
    spmd_block_of(n, group_self(), lo, hi);
}

h5ark_value *spmd_hosts(void) {
    h5ark_value *hosts = h5ark_value_array();
    for (int r = 0; hosts && r < ranks_count(); r++)
        if (h5ark_value_push(hosts, h5ark_value_str(ranks_host(r))) != 0)
            h5ark_value_destroy(&hosts);
    return hosts;
}

int spmd_check_rank(int64_t rank, const char *what, h5ark_error *err) {
    if (rank >= 0 && rank < ranks_count()) return 0;
    return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: rank must be 0 to %d, not %lld", what,
                      ranks_count() - 1, (long long)rank);
}

uint64_t spmd_on_rank(int64_t rank, uint64_t v) {
    return rank == ranks_self() ? v : 0;
}

int spmd_name_rank(int rc, h5ark_error *err) {
    if (rc && ranks_call_seq() != 0) h5ark_fail_context(err, "rank %d", ranks_self());
    return rc;
}

int spmd_fail(h5ark_error *err, h5ark_code code, const char *fmt, ...) {
    char what[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    h5ark_fail(err, code, "%s", what);
    return spmd_name_rank(-1, err);
}

/* ---- steps rank 0 takes for all ---- */

bool spmd_is_root_rank(int rank) {
    return rank == 0;
}

int spmd_root_does(int rc, int (*fn)(void *ctx, h5ark_error *err), void *ctx, h5ark_error *err) {
    rc = ranks_agree(rc, err);
    return rc ? rc : ranks_on_root(fn, ctx, err);
}

int spmd_share_value(h5ark_value *(*make)(void *ctx, h5ark_error *err),
                     int (*take)(const h5ark_value *v, void *ctx, h5ark_error *err), void *ctx,
                     h5ark_error *err) {
    if (group_count() == 1) return 0; /* rank 0's state is every rank's */
    h5ark_value *v = NULL;
    int rc = ranks_on_root_value(make, ctx, &v, err);
    if (rc == 0 && group_self() != 0) rc = take(v, ctx, err);
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
    if (rc) spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
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
