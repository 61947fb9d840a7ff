/* pack's chunked sample fields (sample_chunks.h). */
#include "sample_chunks.h"

#include "inflate_pair.h"
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

/* Pairs of chunks of this size are inflated together (inflate_pair.h): smaller ones, a
 * sample's scalars say, cost little either way, and larger ones would double the locale's
 * memory for chunks for a gain that does not grow with them. */
#define PAIR_MIN 1024
#define PAIR_MAX (4u << 20)

static int read_failed(h5ark_error *err, uint64_t at) {
    return h5ark_fail(err, H5ARK_IO_ERROR, "cannot read its chunk at byte %llu: %s",
                      (unsigned long long)at,
                      errno == ENODATA ? "the file ends early" : strerror(errno));
}

/* A chunk to decode: its stored bytes (in), where it inflates to (out), what was done to it. */
typedef struct {
    const unsigned char *in;
    unsigned char *out;
    uint64_t addr, size;
    bool deflated, shuffled, direct;
} chunk;

/* Chunk k of e, its stored bytes in the span read from lo (UINT64_MAX: none) or else read
 * into the slot'th of the two places for them; out, the slot'th inflated chunk or, when
 * nothing else is left to do, its place in dest. */
static int chunk_of(int fd, const entry *e, uint64_t k, unsigned slot, size_t itemsize,
                    uint64_t most, uint64_t lo, unsigned char *dest, sample_chunk_buffers *b,
                    chunk *c, h5ark_error *err) {
    const uint64_t *w = e->chunks + CHUNK * k;
    uint64_t cbytes = e->chunk_elems * itemsize;
    *c = (chunk){.addr = w[0], .size = w[1]};
    for (unsigned i = 0; i < e->nfilters; i++)
        if (!(w[2] & (1u << i))) {
            c->deflated |= e->filters[i] == OHDR_FILTER_DEFLATE;
            c->shuffled |= e->filters[i] == OHDR_FILTER_SHUFFLE;
        }
    if (c->size == 0 || c->size > (c->deflated ? most : cbytes) ||
        (!c->deflated && c->size != cbytes))
        return h5ark_fail(err, H5ARK_INTERNAL, "a malformed chunk table from the file probe");
    if (lo != UINT64_MAX) {
        c->in = b->stored + (c->addr - lo);
    } else {
        unsigned char *buf = b->stored + slot * most;
        int small = io_window_read(b->window, c->addr, buf, c->size);
        if (small < 0 || (small && io_pread_full(fd, buf, c->size, c->addr)))
            return read_failed(err, c->addr);
        c->in = buf;
    }
    c->direct = c->deflated && !(c->shuffled && itemsize > 1) && whole_run(e, k);
    c->out = c->direct ? dest + k * cbytes : b->inflated + slot * cbytes;
    return 0;
}

static int inflate_one(const chunk *c, uint64_t cbytes, sample_chunk_buffers *b, h5ark_error *err) {
    /* NULL for the size out: anything but exactly a whole chunk is not a success */
    enum libdeflate_result r =
        libdeflate_zlib_decompress(b->inflater, c->in, c->size, c->out, cbytes, NULL);
    if (r == LIBDEFLATE_SUCCESS) return 0;
    return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "the chunk at byte %llu of the file is damaged: %s",
                      (unsigned long long)c->addr,
                      r == LIBDEFLATE_BAD_DATA ? "not a valid deflate stream"
                                               : "it does not inflate to a whole chunk");
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
    /* two chunks' room when deflated chunks are inflated two at a time (inflate_pair.h) */
    unsigned slots = cbytes >= PAIR_MIN && cbytes <= PAIR_MAX && e.nchunks > 1 ? 2 : 1;
    if (reserve(&b->stored, &b->stored_cap, span ? hi - lo : slots * most) ||
        reserve(&b->inflated, &b->inflated_cap, slots * cbytes) ||
        reserve(&b->unshuffled, &b->unshuffled_cap, cbytes) ||
        (!b->inflater && !(b->inflater = libdeflate_alloc_decompressor())) ||
        (slots == 2 && !b->pair && !(b->pair = inflate_pair_new())))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory to read chunks");
    if (span && io_pread_full(fd, b->stored, hi - lo, lo)) return read_failed(err, lo);
    for (k = 0; k < e.nchunks;) {
        chunk c[2];
        if (chunk_of(fd, &e, k, 0, itemsize, most, span ? lo : UINT64_MAX, dest, b, &c[0], err))
            return -1;
        unsigned m = slots == 2 && c[0].deflated && k + 1 < e.nchunks ? 2 : 1;
        h5ark_error next = {0}; /* the second's error comes after anything wrong with the first */
        int late = m == 2 && chunk_of(fd, &e, k + 1, 1, itemsize, most, span ? lo : UINT64_MAX,
                                      dest, b, &c[1], &next);
        if (late) m = 1;
        /* two deflated chunks inflated at once; one alone, or a pair that fails, by libdeflate,
         * which then words the error */
        bool done = m == 2 && c[1].deflated &&
                    inflate_pair_run(b->pair, (const unsigned char *const[2]){c[0].in, c[1].in},
                                     (const size_t[2]){c[0].size, c[1].size},
                                     (unsigned char *const[2]){c[0].out, c[1].out},
                                     (const size_t[2]){cbytes, cbytes}) == 0;
        for (unsigned i = 0; i < m; i++) {
            if (c[i].deflated && !done && inflate_one(&c[i], cbytes, b, err)) return -1;
            if (c[i].direct) continue;
            const unsigned char *in = c[i].deflated ? c[i].out : c[i].in;
            if (c[i].shuffled && itemsize > 1) {
                shuffle_undo(in, e.chunk_elems, itemsize, 0, e.chunk_elems, true, b->unshuffled);
                in = b->unshuffled;
            }
            place(&e, k + i, itemsize, in, dest);
        }
        if (late) {
            *err = next;
            return -1;
        }
        k += m;
    }
    return 0;
}

void sample_chunk_buffers_free(sample_chunk_buffers *b) {
    free(b->stored);
    free(b->inflated);
    free(b->unshuffled);
    if (b->inflater) libdeflate_free_decompressor(b->inflater);
    inflate_pair_free(b->pair);
    *b = (sample_chunk_buffers){0};
}
