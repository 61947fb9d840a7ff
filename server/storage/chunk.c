/* Compressed chunks (see plan.h): what HDF5's shuffle and deflate filters store for a
 * chunk, made on the locale threads. Through H5Dwrite every thread's deflate would run
 * inside HDF5's one lock; here only the write of the finished bytes (H5Dwrite_chunk) takes
 * it. The deflate is libdeflate's: a zlib stream, as the filter stores and any zlib
 * reader inflates, made faster than zlib makes one. */
#include "plan.h"

#include "sysio.h"

#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>

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

/* The libdeflate level a requested gzip level (1-9, HDF5's and zlib's scale) is made with:
 * the lowest that compresses at least as well as zlib at the requested level, so that a
 * file is never larger than zlib would have made it, and so runs fastest. Measured on 1 MiB
 * shuffled chunks of int64 keys, rounded and random float64, Strings' bytes and offsets
 * (docs/DESIGN.md, "HDF5 and compression"). */
int chunk_deflate_level(int gzip_level) {
    static const int level[10] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    return gzip_level < 1 ? 1 : gzip_level > 9 ? level[9] : level[gzip_level];
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
    int level = chunk_deflate_level(plan->gzip_level);
    if (b->deflater && b->deflater_level != level) {
        libdeflate_free_compressor(b->deflater);
        b->deflater = NULL;
    }
    if (!b->deflater) {
        /* its work memory is allocated once and kept for the locale's chunks */
        if (!(b->deflater = libdeflate_alloc_compressor(level)))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for a compressor");
        b->deflater_level = level;
    }
    /* room for the worst case: data that does not compress goes out in stored blocks */
    size_t bound = libdeflate_zlib_compress_bound(b->deflater, nbytes);
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
    size_t packed = libdeflate_zlib_compress(b->deflater, in, nbytes, b->packed, bound);
    if (packed == 0)
        return h5ark_fail(err, H5ARK_INTERNAL,
                          "cannot compress the chunk at element %llu: %zu bytes did not fit in %zu",
                          (unsigned long long)c->at, nbytes, bound);
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
    if (b->deflater) libdeflate_free_compressor(b->deflater);
    *b = (chunk_buffers){0};
}
