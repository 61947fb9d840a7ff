/* groupby's exchange of rows between the ranks: elements and strings fetched from
 * whichever rank holds them (see groupby_rows.h). */
#include "groupby_rows.h"

#include "registry.h"
#include "dist/ranks.h"
#include "dist/spmd.h"

#include <stdlib.h>
#include <string.h>

int groupby_fetch_rows(const darray *a, const int64_t *rows, uint64_t nrows, void *out,
                       h5ark_error *err) {
    int R = ranks_count(), rc = 0; /* R sizes the per-rank counts */
    size_t is = a->itemsize;
    uint64_t reserved = 0, nin = 0;
    uint64_t *cnt = calloc((size_t)R, sizeof *cnt), *rcnt = calloc((size_t)R, sizeof *rcnt);
    uint64_t *sc = calloc((size_t)R, sizeof *sc), *rcv = calloc((size_t)R, sizeof *rcv);
    uint64_t *pos = calloc((size_t)R + 1, sizeof *pos);
    uint64_t *req = NULL, *order = NULL, *inreq = NULL;
    char *rep = NULL, *back = NULL;
    if (!cnt || !rcnt || !sc || !rcv || !pos)
        rc = spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err) ||
        registry_scratch_agreed(nrows * 16, (void **)&req, &reserved, err) ||
        registry_scratch_agreed(nrows * is, (void **)&back, &reserved, err)) {
        rc = -1;
        goto out;
    }
    order = req + nrows;
    for (uint64_t i = 0; i < nrows; i++)
        cnt[locales_rank_of(darray_shard_of(a, (uint64_t)rows[i]))]++;
    for (int r = 0; r < R; r++)
        pos[r + 1] = pos[r] + cnt[r];
    for (uint64_t i = 0; i < nrows; i++) { /* grouped by owner, in order within each */
        uint64_t k = pos[locales_rank_of(darray_shard_of(a, (uint64_t)rows[i]))]++;
        req[k] = (uint64_t)rows[i];
        order[k] = i;
    }
    for (int r = 0; r < R; r++)
        sc[r] = 8;
    if ((rc = ranks_alltoallv(cnt, sc, rcnt, sc, err)) != 0) goto out;
    for (int r = 0; r < R; r++) {
        nin += rcnt[r];
        sc[r] = cnt[r] * 8;
        rcv[r] = rcnt[r] * 8;
    }
    if ((rc = registry_scratch_agreed(nin * (8 + is), (void **)&inreq, &reserved, err)) != 0 ||
        (rc = ranks_alltoallv(req, sc, inreq, rcv, err)) != 0)
        goto out;
    rep = (char *)(inreq + nin);
    for (uint64_t k = 0; k < nin; k++)
        memcpy(rep + k * is, span_at(a, inreq[k], NULL), is);
    for (int r = 0; r < R; r++) {
        sc[r] = rcnt[r] * is;
        rcv[r] = cnt[r] * is;
    }
    if ((rc = ranks_alltoallv(rep, sc, back, rcv, err)) != 0) goto out;
    for (uint64_t k = 0; k < nrows; k++)
        memcpy((char *)out + order[k] * is, back + k * is, is);
out:
    free(cnt);
    free(rcnt);
    free(sc);
    free(rcv);
    free(pos);
    free(req);
    free(inreq);
    free(back);
    if (reserved) registry_unreserve(reserved);
    return rc;
}

int groupby_fetch_strings(const object *src, const uint64_t *rows, uint64_t nrows, uint64_t *offs,
                          char **bytes, uint64_t *nbytes, uint64_t *reserved, h5ark_error *err) {
    int R = ranks_count(), rc = 0; /* R sizes the per-rank counts */
    uint64_t nin = 0, inbytes = 0, outbytes = 0;
    uint64_t *cnt = calloc((size_t)R, 8), *rcnt = calloc((size_t)R, 8);
    uint64_t *sc = calloc((size_t)R, 8), *rcv = calloc((size_t)R, 8), *bsc = calloc((size_t)R, 8);
    uint64_t *pos = calloc((size_t)R + 1, 8), *req = NULL, *inreq = NULL, *glen = NULL;
    char *rep = NULL, *back = NULL;
    if (!cnt || !rcnt || !sc || !rcv || !bsc || !pos)
        rc = spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err) || registry_scratch_agreed(nrows * 24, (void **)&req, reserved, err))
        goto fail;
    uint64_t *order = req + nrows;
    glen = req + 2 * nrows;
    for (uint64_t i = 0; i < nrows; i++)
        cnt[locales_rank_of(darray_shard_of(src->segments, rows[i]))]++;
    for (int r = 0; r < R; r++)
        pos[r + 1] = pos[r] + cnt[r];
    for (uint64_t i = 0; i < nrows; i++) { /* grouped by owner, in order within each */
        uint64_t k = pos[locales_rank_of(darray_shard_of(src->segments, rows[i]))]++;
        req[k] = rows[i];
        order[k] = i;
    }
    for (int r = 0; r < R; r++)
        sc[r] = 8;
    if (ranks_alltoallv(cnt, sc, rcnt, sc, err)) goto fail;
    for (int r = 0; r < R; r++) {
        nin += rcnt[r];
        sc[r] = cnt[r] * 8;
        rcv[r] = rcnt[r] * 8;
    }
    if (registry_scratch_agreed(nin * 16, (void **)&inreq, reserved, err) ||
        ranks_alltoallv(req, sc, inreq, rcv, err))
        goto fail;
    uint64_t *inlen = inreq + nin;
    for (uint64_t k = 0, r = 0, left = rcnt[0]; k < nin; k++, left--) {
        while (left == 0)
            left = rcnt[++r];
        inlen[k] = str_at(src, inreq[k]).len + 1;
        bsc[r] += inlen[k];
        inbytes += inlen[k];
    }
    if (ranks_alltoallv(inlen, rcv, glen, sc, err)) goto fail; /* the lengths back */
    memset(rcv, 0, (size_t)R * 8);
    for (uint64_t k = 0, r = 0, left = cnt[0]; k < nrows; k++, left--) {
        while (left == 0)
            left = cnt[++r];
        rcv[r] += glen[k];
        outbytes += glen[k];
    }
    if (registry_scratch_agreed(inbytes, (void **)&rep, reserved, err) ||
        registry_scratch_agreed(outbytes, (void **)&back, reserved, err) ||
        registry_scratch_agreed(outbytes, (void **)bytes, reserved, err))
        goto fail;
    for (uint64_t k = 0, p = 0; k < nin; k++) {
        memcpy(rep + p, str_at(src, inreq[k]).p, inlen[k] - 1);
        rep[p + inlen[k] - 1] = '\0';
        p += inlen[k];
    }
    if (ranks_alltoallv(rep, bsc, back, rcv, err)) goto fail;
    /* back in the order asked: where each string starts in the result */
    for (uint64_t k = 0; k < nrows; k++)
        offs[order[k]] = glen[k];
    for (uint64_t i = 0, p = 0; i < nrows; i++) {
        uint64_t l = offs[i];
        offs[i] = p;
        p += l;
    }
    for (uint64_t k = 0, p = 0; k < nrows; k++) {
        memcpy(*bytes + offs[order[k]], back + p, glen[k]);
        p += glen[k];
    }
    *nbytes = outbytes;
    goto out;
fail:
    rc = -1;
out:
    free(cnt);
    free(rcnt);
    free(sc);
    free(rcv);
    free(bsc);
    free(pos);
    free(req);
    free(inreq);
    free(rep);
    free(back);
    return rc;
}
