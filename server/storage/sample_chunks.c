/* pack's chunked sample fields (sample_chunks.h). */
#include "sample_chunks.h"

#include "io.h"
#include "shuffle.h"
#include "sysio.h"

#include <errno.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#define HEAD  3 /* rank, filters, chunks */
#define CHUNK 4 /* words a chunk */

int sample_chunks_add(sample_chunk_table *t, const ohdr_dataset *d, const ohdr_chunk *c,
                      uint64_t *at) {
    size_t need = HEAD + 2 * (size_t)d->rank + CHUNK * (size_t)d->nchunks;
    if (t->cap - t->n < need) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        while (cap - t->n < need)
            cap *= 2;
        uint64_t *v = realloc(t->v, cap * sizeof *v);
        if (!v) return -1;
        t->v = v;
        t->cap = cap;
    }
    uint64_t *w = t->v + t->n, filters = d->nfilters;
    for (unsigned i = 0; i < d->nfilters; i++)
        filters |= (uint64_t)d->filters[i] << (8 * (i + 1));
    *w++ = d->rank;
    *w++ = filters;
    *w++ = d->nchunks;
    memcpy(w, d->dims, d->rank * sizeof *w);
    memcpy(w + d->rank, d->chunk, d->rank * sizeof *w);
    w += 2 * d->rank;
    for (uint64_t k = 0; k < d->nchunks; k++, w += CHUNK) {
        w[0] = c[k].addr;
        w[1] = c[k].size;
        w[2] = c[k].mask;
        w[3] = c[k].index;
    }
    *at = t->n;
    t->n += need;
    return 0;
}

static int reserve(unsigned char **buf, size_t *cap, uint64_t n) {
    if (n <= *cap) return 0;
    unsigned char *p = sysio.realloc(*buf, (size_t)n);
    if (!p) return -1;
    *buf = p;
    *cap = (size_t)n;
    return 0;
}

/* The field as a table entry describes it: its geometry checked against what the plan says
 * of the field (count elements of itemsize), its chunks all of the grid once, in order. */
typedef struct {
    unsigned rank, nfilters;
    unsigned char filters[OHDR_MAX_FILTERS];
    const uint64_t *dims, *chunk, *chunks;
    uint64_t nchunks, chunk_elems;
} entry;

static int entry_of(const uint64_t *words, size_t nwords, uint64_t at, size_t itemsize,
                    uint64_t count, entry *e) {
    if (at > nwords || nwords - at < HEAD) return -1;
    const uint64_t *w = words + at;
    e->rank = (unsigned)w[0];
    e->nfilters = (unsigned)(w[1] & 0xff);
    e->nchunks = w[2];
    if (w[0] < 1 || w[0] > OHDR_MAX_RANK || e->nfilters > OHDR_MAX_FILTERS ||
        e->nchunks > OHDR_CHUNKS_MAX ||
        nwords - at - HEAD < 2 * (uint64_t)e->rank + CHUNK * e->nchunks)
        return -1;
    for (unsigned i = 0; i < e->nfilters; i++) {
        e->filters[i] = (unsigned char)(w[1] >> (8 * (i + 1)));
        if (e->filters[i] != OHDR_FILTER_DEFLATE && e->filters[i] != OHDR_FILTER_SHUFFLE) return -1;
    }
    e->dims = w + HEAD;
    e->chunk = e->dims + e->rank;
    e->chunks = e->chunk + e->rank;
    uint64_t n = 1, grid = 1, elems = 1;
    for (unsigned i = 0; i < e->rank; i++) {
        if (e->chunk[i] == 0 || e->dims[i] == 0 || e->chunk[i] > OHDR_CHUNK_BYTES_MAX ||
            e->dims[i] > count)
            return -1;
        n *= e->dims[i];
        elems *= e->chunk[i];
        grid *= (e->dims[i] + e->chunk[i] - 1) / e->chunk[i];
        if (n > count || elems > OHDR_CHUNK_BYTES_MAX / itemsize || grid > OHDR_CHUNKS_MAX)
            return -1;
    }
    if (n != count || grid != e->nchunks) return -1;
    for (uint64_t k = 0; k < e->nchunks; k++)
        if (e->chunks[CHUNK * k + 3] != k) return -1; /* every chunk once, in grid order */
    e->chunk_elems = elems;
    return 0;
}

/* Chunk k's elements (in `in`, the chunk's C order) to their places in dest: a row (the
 * chunk's extent in the last dimension) at a time, often of a few elements only, so the
 * rows of the next-to-last dimension go in a tight loop of their own. */
static void place(const entry *e, uint64_t k, size_t isz, const unsigned char *in,
                  unsigned char *dest) {
    unsigned r = e->rank;
    uint64_t ext[OHDR_MAX_RANK], pos[OHDR_MAX_RANK] = {0};
    uint64_t sstride[OHDR_MAX_RANK], dstride[OHDR_MAX_RANK], src = 0, dst = 0;
    for (unsigned i = r; i-- > 0;) { /* the chunk's place in the grid, from its index */
        uint64_t g = (e->dims[i] + e->chunk[i] - 1) / e->chunk[i], start = k % g * e->chunk[i];
        k /= g;
        ext[i] = e->dims[i] - start < e->chunk[i] ? e->dims[i] - start : e->chunk[i];
        sstride[i] = i + 1 < r ? sstride[i + 1] * e->chunk[i + 1] : isz;
        dstride[i] = i + 1 < r ? dstride[i + 1] * e->dims[i + 1] : isz;
        dst += start * dstride[i];
    }
    bool block = true; /* the chunk lies in dest as one run of bytes */
    for (unsigned i = 1; i < r; i++)
        block &= ext[i] == e->dims[i] && e->chunk[i] == e->dims[i];
    if (block) {
        memcpy(dest + dst, in, ext[0] * sstride[0]);
        return;
    }
    size_t run = (size_t)ext[r - 1] * isz;
    /* the odometer below runs over the dimensions before the last two */
    unsigned outer = r >= 2 ? r - 2 : 0;
    uint64_t inner = r >= 2 ? ext[r - 2] : 1;
    uint64_t sin = r >= 2 ? sstride[r - 2] : 0, din = r >= 2 ? dstride[r - 2] : 0;
    for (;;) {
        const unsigned char *s = in + src;
        unsigned char *d = dest + dst;
        if (run == 8) /* inlined: rows of two floats or one double */
            for (uint64_t j = 0; j < inner; j++, s += sin, d += din)
                memcpy(d, s, 8);
        else if (run == 16)
            for (uint64_t j = 0; j < inner; j++, s += sin, d += din)
                memcpy(d, s, 16);
        else
            for (uint64_t j = 0; j < inner; j++, s += sin, d += din)
                memcpy(d, s, run);
        unsigned i = outer;
        while (i-- > 0) { /* the next block of rows */
            src += sstride[i];
            dst += dstride[i];
            if (++pos[i] < ext[i]) break;
            src -= ext[i] * sstride[i];
            dst -= ext[i] * dstride[i];
            pos[i] = 0;
        }
        if (i == (unsigned)-1) return;
    }
}

/* Whether chunk k, whole, is one run of dest's bytes (the chunk spans every dimension but
 * the first, and does not reach past the field's end): then it is at byte k * cbytes. */
static bool whole_run(const entry *e, uint64_t k) {
    for (unsigned i = 1; i < e->rank; i++)
        if (e->chunk[i] != e->dims[i]) return false;
    return e->dims[0] / e->chunk[0] > k;
}

int sample_chunks_read(int fd, const uint64_t *words, size_t nwords, uint64_t at, size_t itemsize,
                       uint64_t count, void *dest, sample_chunk_buffers *b, h5ark_error *err) {
    entry e;
    if (entry_of(words, nwords, at, itemsize, count, &e))
        return h5ark_fail(err, H5ARK_INTERNAL, "a malformed chunk table from the file probe");
    uint64_t cbytes = e.chunk_elems * itemsize, most = ohdr_stream_max(cbytes);
    /* chunks written one after another (as a whole dataset's write lays them out) are read
     * in one pread when they fill most of the span they lie in */
    uint64_t lo = UINT64_MAX, hi = 0, sum = 0, k = 0;
    for (; k < e.nchunks; k++) {
        const uint64_t *c = e.chunks + CHUNK * k;
        if (c[1] > most || c[0] > UINT64_MAX - c[1]) break;
        lo = c[0] < lo ? c[0] : lo;
        hi = c[0] + c[1] > hi ? c[0] + c[1] : hi;
        sum += c[1];
    }
    bool span = k == e.nchunks && e.nchunks > 1 && hi > lo && hi - lo <= sum + sum / 4 &&
                hi - lo <= OHDR_CHUNK_BYTES_MAX;
    if (reserve(&b->stored, &b->stored_cap, span ? hi - lo : most) ||
        reserve(&b->inflated, &b->inflated_cap, cbytes) ||
        reserve(&b->unshuffled, &b->unshuffled_cap, cbytes) ||
        (!b->inflater && !(b->inflater = libdeflate_alloc_decompressor())))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory to read chunks");
    for (k = 0; k < e.nchunks; k++) {
        const uint64_t *c = e.chunks + CHUNK * k;
        uint64_t addr = c[0], size = c[1], mask = c[2];
        bool deflated = false, shuffled = false;
        for (unsigned i = 0; i < e.nfilters; i++)
            if (!(mask & (1u << i))) {
                deflated |= e.filters[i] == OHDR_FILTER_DEFLATE;
                shuffled |= e.filters[i] == OHDR_FILTER_SHUFFLE;
            }
        if (size == 0 || size > (deflated ? most : cbytes) || (!deflated && size != cbytes))
            return h5ark_fail(err, H5ARK_INTERNAL, "a malformed chunk table from the file probe");
        int small = span ? 1 : io_window_read(b->window, addr, b->stored, size);
        if (small < 0 || (span ? k == 0 && io_pread_full(fd, b->stored, hi - lo, lo)
                               : small && io_pread_full(fd, b->stored, size, addr)))
            return h5ark_fail(err, H5ARK_IO_ERROR, "cannot read its chunk at byte %llu: %s",
                              (unsigned long long)(span ? lo : addr),
                              errno == ENODATA ? "the file ends early" : strerror(errno));
        const unsigned char *in = span ? b->stored + (addr - lo) : b->stored;
        /* inflated straight into place when nothing else is left to do */
        bool direct = deflated && !(shuffled && itemsize > 1) && whole_run(&e, k);
        if (deflated) {
            unsigned char *out = direct ? (unsigned char *)dest + k * cbytes : b->inflated;
            /* NULL for the size out: anything but exactly a whole chunk is not a success */
            enum libdeflate_result r =
                libdeflate_zlib_decompress(b->inflater, in, size, out, cbytes, NULL);
            if (r != LIBDEFLATE_SUCCESS)
                return h5ark_fail(
                    err, H5ARK_SCHEMA_ERROR, "the chunk at byte %llu of the file is damaged: %s",
                    (unsigned long long)addr,
                    r == LIBDEFLATE_BAD_DATA ? "not a valid deflate stream"
                                             : "it does not inflate to a whole chunk");
            if (direct) continue;
            in = b->inflated;
        }
        if (shuffled && itemsize > 1) {
            shuffle_undo(in, e.chunk_elems, itemsize, 0, e.chunk_elems, true, b->unshuffled);
            in = b->unshuffled;
        }
        place(&e, k, itemsize, in, dest);
    }
    return 0;
}

void sample_chunk_buffers_free(sample_chunk_buffers *b) {
    free(b->stored);
    free(b->inflated);
    free(b->unshuffled);
    if (b->inflater) libdeflate_free_decompressor(b->inflater);
    *b = (sample_chunk_buffers){0};
}
