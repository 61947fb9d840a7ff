/* Compressed chunks (see plan.h): the bytes HDF5's shuffle and deflate filters
 * would make of a chunk, made on the locale threads. Through H5Dwrite every thread's
 * deflate would run inside HDF5's one lock; here only the write of the finished bytes
 * (H5Dwrite_chunk) takes it. */
#include "plan.h"

#include "sysio.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Elements [first, first + count) of the darray, rebased, then zeros up to a whole chunk. */
static void gather(const write_chunk *c, unsigned char *out) {
    const darray *a = c->src;
    size_t isz = a->itemsize;
    uint64_t i = c->first, end = c->first + c->count;
    for (int b = darray_shard_of(a, i); i < end && b < a->nshards; b++) {
        const shard *s = &a->shards[b];
        uint64_t stop = s->start + s->count < end ? s->start + s->count : end;
        if (i >= stop) continue;
        memcpy(out + (i - c->first) * isz, (const unsigned char *)s->data + (i - s->start) * isz,
               (stop - i) * isz);
        i = stop;
    }
    if (c->rebase) {
        int64_t *v = (int64_t *)(void *)out;
        for (uint64_t k = 0; k < c->count; k++)
            v[k] -= c->rebase;
    }
    memset(out + c->count * isz, 0, (c->elems - c->count) * isz);
}

/* HDF5's shuffle filter: byte j of element i goes to out[j * n + i], so that the like bytes
 * of neighbouring elements sit together, which deflate packs better. */
static void shuffle(const unsigned char *in, unsigned char *out, uint64_t n, size_t isz) {
    for (size_t j = 0; j < isz; j++) {
        unsigned char *o = out + j * n;
        const unsigned char *p = in + j;
        for (uint64_t i = 0; i < n; i++)
            o[i] = p[i * isz];
    }
}

static int reserve(unsigned char **buf, size_t *cap, size_t n) {
    if (n <= *cap) return 0;
    unsigned char *p = sysio.realloc(*buf, n);
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

int chunk_write(const write_plan *plan, const write_chunk *c, chunk_buffers *b, h5ark_error *err) {
    size_t isz = c->src->itemsize;
    size_t nbytes = (size_t)(c->elems * isz);
    uLong bound = compressBound((uLong)nbytes);
    if (reserve(&b->raw, &b->raw_cap, nbytes) ||
        (isz > 1 && reserve(&b->shuffled, &b->shuffled_cap, nbytes)) ||
        reserve(&b->packed, &b->packed_cap, bound))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for a compressed chunk");
    gather(c, b->raw);
    const unsigned char *in = b->raw;
    if (isz > 1) { /* HDF5 leaves 1-byte elements as they are */
        shuffle(b->raw, b->shuffled, c->elems, isz);
        in = b->shuffled;
    }
    uLongf packed = bound;
    int z = compress2(b->packed, &packed, in, (uLong)nbytes, plan->gzip_level);
    if (z != Z_OK)
        return h5ark_fail(err, z == Z_MEM_ERROR ? H5ARK_RESOURCE_LIMIT : H5ARK_INTERNAL,
                          "cannot compress the chunk at element %llu: %s",
                          (unsigned long long)c->at, zError(z));
    h5u_quiet();
    hsize_t at[1] = {c->at};
    /* filter mask 0: both filters applied */
    if (H5Dwrite_chunk(plan->dsets[c->dset], H5P_DEFAULT, 0, at, packed, b->packed) < 0)
        return h5u_fail(err, H5ARK_IO_ERROR, "cannot write the chunk at element %llu",
                        (unsigned long long)c->at);
    return 0;
}

void chunk_buffers_free(chunk_buffers *b) {
    free(b->raw);
    free(b->shuffled);
    free(b->packed);
    *b = (chunk_buffers){0};
}
