/* Compressed chunks (see plan.h): what HDF5's shuffle and deflate filters store for a
 * chunk, made on the locale threads. Through H5Dwrite every thread's deflate would run
 * inside HDF5's one lock; here only the write of the finished bytes (H5Dwrite_chunk) takes
 * it. The deflate is libdeflate's: a zlib stream, as the filter stores and any zlib
 * reader inflates, made faster than zlib makes one. */
#include "plan.h"

#include "shuffle.h"
#include "sysio.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

/* Elements [first, first + count) of the darray, rebased, then zeros up to a whole chunk. */
static void gather(const write_chunk *c, unsigned char *out) {
    const darray *a = c->src;
    size_t isz = a->itemsize;
    uint64_t i = c->first, end = c->first + c->count;
    if (c->whole) {
        memcpy(out, c->whole, c->count * isz);
        i = end;
    }
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

/* The chunk's elements where they lie whole in one shard and need nothing done to them (no
 * rebase, no padding), to be shuffled from there without a copy; NULL otherwise. */
static const unsigned char *in_place(const write_chunk *c) {
    const darray *a = c->src;
    if (c->rebase || c->count != c->elems || c->count == 0 || c->whole) return NULL;
    const shard *s = &a->shards[darray_shard_of(a, c->first)];
    if (c->first < s->start || c->first + c->count > s->start + s->count) return NULL;
    return (const unsigned char *)s->data + (c->first - s->start) * a->itemsize;
}

/* The libdeflate level a requested gzip level (1-9, zlib's scale, which the file records)
 * is made with: the lowest that compresses at least as well as zlib at the requested level,
 * and so the fastest that does not make files larger than zlib would. Measured by
 * bench/deflate_levels.c on 1 MiB shuffled chunks of int64 keys, rounded and random
 * float64, Strings' bytes and offsets, sorted, spaced and random int64, random bytes;
 * booleans (bytes 0 and 1) need higher levels from 4 on and have a row of their own.
 * Measured exceptions, kept for speed (docs/DESIGN.md, "Compression"): at 4-9, sorted
 * int64 (1/370 of its size either way) comes out 1.2% larger, and near-random bytes
 * 0.07%; at 1-3, zlib's fastest mode makes small steps such as Strings' offsets 10-14%
 * smaller than libdeflate does at any level near its speed. */
int chunk_deflate_level(int gzip_level, h5ark_dtype dtype) {
    static const int level[10] = {1, 1, 1, 1, 2, 5, 5, 5, 6, 7};
    static const int boolean[10] = {1, 1, 1, 1, 3, 4, 7, 8, 9, 10};
    int l = gzip_level < 1 ? 1 : gzip_level > 9 ? 9 : gzip_level;
    return dtype == H5ARK_BOOLEAN ? boolean[l] : level[l];
}

static int reserve(unsigned char **buf, size_t *cap, size_t n) {
    if (n <= *cap) return 0;
    unsigned char *p = sysio.realloc(*buf, n);
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

/* Chunk bytes deflated by the locale's compressor at `level` into *out (grown as needed);
 * the stream's length, or 0 (err set). */
static size_t deflate_chunk(chunk_buffers *b, int level, const unsigned char *in, size_t nbytes,
                            unsigned char **out, size_t *cap, h5ark_error *err) {
    /* a compressor's work memory is allocated once and kept for the locale's chunks */
    struct libdeflate_compressor **d = &b->deflaters[level];
    if (!*d && !(*d = libdeflate_alloc_compressor(level))) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for a compressor");
        return 0;
    }
    /* room for the worst case: data that does not compress goes out in stored blocks */
    size_t bound = libdeflate_zlib_compress_bound(*d, nbytes);
    if (reserve(out, cap, bound)) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for a compressed chunk");
        return 0;
    }
    size_t n = libdeflate_zlib_compress(*d, in, nbytes, *out, bound);
    if (n == 0)
        h5ark_fail(err, H5ARK_INTERNAL, "%zu bytes did not fit in libdeflate's bound of %zu",
                   nbytes, bound);
    return n;
}

/* Chunks that shrink more than this many times over (sorted or evenly spaced values, a last
 * chunk mostly padding) are made again at AGAIN_LEVEL, and the smaller stream kept: there
 * libdeflate's faster levels can miss the distant matches zlib finds (measured: up to 2.6
 * times zlib's bytes), and level 9 finds them as fast as the first pass ran. */
enum { AGAIN_RATIO = 16, AGAIN_LEVEL = 9 };

int chunk_make(const write_plan *plan, const write_chunk *c, chunk_buffers *b,
               const unsigned char **outp, size_t *len, h5ark_error *err) {
    size_t isz = c->src->itemsize;
    size_t nbytes = (size_t)(c->elems * isz);
    int level = chunk_deflate_level(plan->gzip_level, c->src->dtype);
    const unsigned char *in = in_place(c);
    if ((!in && reserve(&b->raw, &b->raw_cap, nbytes)) ||
        (isz > 1 && reserve(&b->shuffled, &b->shuffled_cap, nbytes)))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for a compressed chunk");
    if (!in) {
        gather(c, b->raw);
        in = b->raw;
    }
    if (isz > 1) { /* HDF5 leaves 1-byte elements as they are */
        shuffle_apply(in, b->shuffled, c->elems, isz);
        in = b->shuffled;
    }
    size_t packed = deflate_chunk(b, level, in, nbytes, &b->packed, &b->packed_cap, err);
    const unsigned char *out = b->packed;
    if (packed > 0 && level < AGAIN_LEVEL && packed < nbytes / AGAIN_RATIO) {
        size_t again = deflate_chunk(b, AGAIN_LEVEL, in, nbytes, &b->again, &b->again_cap, err);
        if (again > 0 && again < packed) {
            packed = again;
            out = b->again;
        }
        if (again == 0) packed = 0;
    }
    if (packed == 0)
        return h5ark_fail_context(err, "cannot compress the chunk at element %llu",
                                  (unsigned long long)c->at);
    *outp = out;
    *len = packed;
    return 0;
}

int chunk_store(const write_plan *plan, size_t dset, uint64_t at, const void *bytes, size_t len,
                h5ark_error *err) {
    h5u_quiet();
    hsize_t where[1] = {at};
    /* filter mask 0: both filters applied */
    if (H5Dwrite_chunk(plan->dsets[dset], H5P_DEFAULT, 0, where, len, bytes) < 0)
        return h5u_fail(err, H5ARK_IO_ERROR, "cannot write the chunk at element %llu",
                        (unsigned long long)at);
    return 0;
}

void chunk_buffers_free(chunk_buffers *b) {
    free(b->raw);
    free(b->shuffled);
    free(b->packed);
    free(b->again);
    for (int i = 0; i < CHUNK_DEFLATE_LEVELS; i++)
        if (b->deflaters[i]) libdeflate_free_compressor(b->deflaters[i]);
    *b = (chunk_buffers){0};
}
