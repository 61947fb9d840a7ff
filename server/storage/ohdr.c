/* A dataset's object header read without the library (ohdr.h); the layouts are those of
 * the HDF5 file format specification (object headers version 1 and 2, and the dataspace,
 * datatype, data layout, filter pipeline, external file list and continuation messages). */
#include "ohdr.h"

#include <stdlib.h>
#include <string.h>

#define CHUNKS_MAX 64         /* continuation chunks followed, at most */
#define BYTES_MAX  (1u << 20) /* header bytes read, at most, over all chunks */
#define FIRST_READ 1024       /* bytes read at once for the first chunk, usually all of it */

/* message types */
enum {
    MSG_NIL = 0x00,
    MSG_DATASPACE = 0x01,
    MSG_DATATYPE = 0x03,
    MSG_FILL_OLD = 0x04,
    MSG_FILL = 0x05,
    MSG_EXTERNAL = 0x07,
    MSG_LAYOUT = 0x08,
    MSG_FILTERS = 0x0B,
    MSG_ATTRIBUTE = 0x0C,
    MSG_COMMENT = 0x0D,
    MSG_MTIME_OLD = 0x0E,
    MSG_CONTINUATION = 0x10,
    MSG_MTIME = 0x12,
    MSG_ATTR_INFO = 0x15,
    MSG_REFCOUNT = 0x16,
};

#define MSGFLAG_SHARED 0x02u

static uint64_t get_le(const unsigned char *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static bool all_ones(const unsigned char *p, unsigned n) {
    for (unsigned i = 0; i < n; i++)
        if (p[i] != 0xff) return false;
    return true;
}

#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

uint32_t ohdr_checksum(const unsigned char *k, size_t n) {
    uint32_t a, b, c;
    a = b = c = 0xdeadbeefu + (uint32_t)n;
    while (n > 12) {
        a += (uint32_t)get_le(k, 4);
        b += (uint32_t)get_le(k + 4, 4);
        c += (uint32_t)get_le(k + 8, 4);
        a -= c, a ^= ROT(c, 4), c += b;
        b -= a, b ^= ROT(a, 6), a += c;
        c -= b, c ^= ROT(b, 8), b += a;
        a -= c, a ^= ROT(c, 16), c += b;
        b -= a, b ^= ROT(a, 19), a += c;
        c -= b, c ^= ROT(b, 4), b += a;
        n -= 12;
        k += 12;
    }
    if (n == 0) return c;
    unsigned char last[12] = {0};
    memcpy(last, k, n);
    a += (uint32_t)get_le(last, 4);
    b += (uint32_t)get_le(last + 4, 4);
    c += (uint32_t)get_le(last + 8, 4);
    c ^= b, c -= ROT(b, 14);
    a ^= c, a -= ROT(c, 11);
    b ^= a, b -= ROT(a, 25);
    c ^= b, c -= ROT(b, 16);
    a ^= c, a -= ROT(c, 4);
    b ^= a, b -= ROT(a, 14);
    c ^= b, c -= ROT(b, 24);
    return c;
}

/* What the walk over the header's messages has found. */
typedef struct {
    const ohdr_file *f;
    unsigned version; /* of the header: 1 or 2 */
    bool order;       /* v2: messages carry a creation order */
    bool space, type, layout, filters;
    unsigned chunk_ndims;  /* chunked: the layout's dimensions, the dataspace's rank + 1 */
    uint64_t chunk_last;   /* its last, the element's size */
    uint32_t shuffle_size; /* a shuffle filter's element size */
    size_t nconts;
    struct {
        uint64_t addr, len;
    } conts[CHUNKS_MAX];
    uint64_t bytes;  /* read so far */
    uint64_t stored; /* the size of contiguous storage, or of compact data */
    ohdr_dataset *out;
} walk;

static int dataspace(walk *w, const unsigned char *m, size_t n) {
    unsigned L = w->f->sizeof_size;
    if (w->space || n < 2) return -1;
    unsigned version = m[0], rank = m[1];
    size_t at;
    if (version == 1) {
        if (n < 8 || (m[2] & 0x02)) return -1; /* a permutation: never written */
        at = 8;
    } else if (version == 2) {
        if (n < 4 || m[3] != 1) return -1; /* scalar or null */
        at = 4;
    } else {
        return -1;
    }
    if (rank < 1 || rank > OHDR_MAX_RANK || (size_t)rank * L > n - at) return -1;
    ohdr_dataset *o = w->out;
    o->rank = rank;
    o->count = 1;
    for (unsigned i = 0; i < rank; i++) {
        o->dims[i] = get_le(m + at + (size_t)i * L, L);
        if (o->dims[i] && o->count > UINT64_MAX / o->dims[i]) return -1;
        o->count *= o->dims[i];
    }
    w->space = true;
    return 0;
}

/* Only the standard types: h5ark's dtypes, in either byte order, with no odd padding or
 * precision (anything else the library converts, and decides). */
static int datatype(walk *w, const unsigned char *m, size_t n) {
    if (w->type || n < 8) return -1;
    unsigned cls = m[0] & 0x0f, version = m[0] >> 4, b0 = m[1];
    uint32_t size = (uint32_t)get_le(m + 4, 4);
    if (version < 1 || version > 3 || m[3] != 0) return -1;
    ohdr_dataset *o = w->out;
    if (cls == 0) {
        if (n < 12 || (b0 & ~0x09u) || m[2] != 0) return -1;
        if (size != 1 && size != 2 && size != 4 && size != 8) return -1;
        if (get_le(m + 8, 2) != 0 || get_le(m + 10, 2) != 8 * size) return -1;
        o->is_float = false;
        o->is_signed = b0 & 0x08;
    } else if (cls == 1) {
        /* byte order little or big (not VAX), no padding, implied mantissa bit */
        if (n < 20 || (b0 & ~0x01u) != 0x20) return -1;
        bool single = size == 4;
        if (size != 4 && size != 8) return -1;
        if (m[2] != (single ? 31 : 63) || get_le(m + 8, 2) != 0 || get_le(m + 10, 2) != 8 * size ||
            m[12] != (single ? 23 : 52) || m[13] != (single ? 8 : 11) || m[14] != 0 ||
            m[15] != (single ? 23 : 52) || get_le(m + 16, 4) != (single ? 127u : 1023u))
            return -1;
        o->is_float = true;
        o->is_signed = true;
    } else {
        return -1;
    }
    o->size = size;
    o->big_endian = b0 & 0x01;
    w->type = true;
    return 0;
}

/* A chunked layout: version 3 (a version 1 B-tree) or 4 (the index named), m[2, n). */
static int chunked(walk *w, const unsigned char *m, size_t n) {
    unsigned O = w->f->sizeof_addr, L = w->f->sizeof_size, nd, enc = 4;
    ohdr_dataset *o = w->out;
    size_t at;
    if (m[0] == 3) {
        if (n < 3 + (size_t)O) return -1;
        nd = m[2];
        o->index = 0;
        o->index_addr = get_le(m + 3, O);
        at = 3 + O;
    } else {
        if (n < 5 || (m[2] & ~0x02u)) return -1; /* edge chunks unfiltered: not read here */
        nd = m[3];
        enc = m[4];
        at = 5;
    }
    if (nd < 2 || nd > OHDR_MAX_RANK + 1 || enc < 1 || enc > 8 || (size_t)nd * enc > n - at)
        return -1;
    for (unsigned i = 0; i < nd; i++) {
        uint64_t c = get_le(m + at + (size_t)i * enc, enc);
        if (c == 0) return -1;
        if (i + 1 < nd)
            o->chunk[i] = c;
        else
            w->chunk_last = c;
    }
    at += (size_t)nd * enc;
    if (m[0] == 4) {
        if (n - at < 1) return -1;
        o->index = m[at++];
        size_t need = o->index == 1 ? ((m[2] & 0x02) ? (size_t)L + 4 : 0) : o->index == 3 ? 1 : 0;
        if (o->index != 1 && o->index != 3) return -1; /* implicit, extensible array, v2 B-tree */
        if (n - at < need + O) return -1;
        if (o->index == 1 && (m[2] & 0x02)) {
            o->single_size = get_le(m + at, L);
            o->single_mask = (uint32_t)get_le(m + at + L, 4);
        } else if (o->index == 1) {
            o->single_size = 0; /* unfiltered: a whole chunk */
        }
        at += need;
        o->index_addr = get_le(m + at, O);
        if (all_ones(m + at, O)) return -1; /* no chunk written yet */
    } else if (all_ones(m + 3, O)) {
        return -1;
    }
    w->chunk_ndims = nd;
    o->chunked = true;
    return 0;
}

static int layout(walk *w, const unsigned char *m, size_t n, uint64_t pos) {
    unsigned O = w->f->sizeof_addr, L = w->f->sizeof_size;
    if (w->layout || n < 2 || (m[0] != 3 && m[0] != 4)) return -1;
    ohdr_dataset *o = w->out;
    if (m[1] == 0) { /* compact: the raw data follows, at pos + 4 */
        if (n < 4 || get_le(m + 2, 2) > n - 4) return -1;
        o->compact = true;
        o->allocated = true;
        o->offset = pos + 4;
        w->stored = get_le(m + 2, 2);
    } else if (m[1] == 1) {
        if (n < 2 + (size_t)O + L) return -1;
        o->compact = false;
        o->allocated = !all_ones(m + 2, O);
        o->offset = get_le(m + 2, O);
        w->stored = get_le(m + 2 + O, L);
    } else if (m[1] == 2) {
        if (chunked(w, m, n)) return -1;
    } else {
        return -1; /* virtual */
    }
    w->layout = true;
    return 0;
}

/* The filter pipeline: deflate and shuffle only (any other filter, the library's). */
static int filters(walk *w, const unsigned char *m, size_t n) {
    if (w->filters || n < 2 || (m[0] != 1 && m[0] != 2)) return -1;
    unsigned version = m[0], nf = m[1];
    ohdr_dataset *o = w->out;
    if (nf < 1 || nf > OHDR_MAX_FILTERS) return -1;
    size_t at = version == 1 ? 8 : 2;
    if (n < at) return -1; /* every `n - at` below counts on at <= n */
    for (unsigned i = 0; i < nf; i++) {
        if (n - at < 2) return -1;
        unsigned id = (unsigned)get_le(m + at, 2), namelen = 0;
        at += 2;
        if (version == 1 || id >= 256) {
            if (n - at < 2) return -1;
            namelen = (unsigned)get_le(m + at, 2);
            at += 2;
        }
        if (n - at < 4) return -1;
        unsigned ncd = (unsigned)get_le(m + at + 2, 2);
        at += 4;
        if (namelen > n - at) return -1;
        at += namelen; /* version 1 pads names to 8 bytes; the length counts it */
        if ((size_t)ncd * 4 > n - at) return -1;
        const unsigned char *cd = m + at;
        at += (size_t)ncd * 4;
        if (version == 1 && (ncd & 1)) at += at + 4 <= n ? 4 : n - at;
        if (id == 1) {
            o->filters[i] = OHDR_FILTER_DEFLATE;
        } else if (id == 2 && ncd >= 1) {
            o->filters[i] = OHDR_FILTER_SHUFFLE;
            w->shuffle_size = (uint32_t)get_le(cd, 4);
        } else {
            return -1; /* fletcher32, szip, nbit, scale-offset, anything registered */
        }
    }
    /* what is read here: deflate, shuffle, or shuffle then deflate */
    if (nf == 2 && (o->filters[0] != OHDR_FILTER_SHUFFLE || o->filters[1] != OHDR_FILTER_DEFLATE))
        return -1;
    o->nfilters = nf;
    w->filters = true;
    return 0;
}

/* One chunk's messages, p[0, n), which lie at absolute file offset pos. */
static int messages(walk *w, const unsigned char *p, size_t n, uint64_t pos) {
    size_t head = w->version == 1 ? 8 : (w->order ? 6 : 4);
    unsigned O = w->f->sizeof_addr, L = w->f->sizeof_size;
    size_t at = 0;
    while (n - at >= head) {
        const unsigned char *h = p + at;
        unsigned type = w->version == 1 ? (unsigned)get_le(h, 2) : h[0];
        size_t size = w->version == 1 ? (size_t)get_le(h + 2, 2) : (size_t)get_le(h + 1, 2);
        unsigned flags = w->version == 1 ? h[4] : h[3];
        at += head;
        if (size > n - at) return -1;
        const unsigned char *m = p + at;
        at += size;
        bool shared = flags & MSGFLAG_SHARED;
        switch (type) {
        case MSG_NIL:
        case MSG_FILL_OLD:
        case MSG_FILL:
        case MSG_ATTRIBUTE:
        case MSG_COMMENT:
        case MSG_MTIME_OLD:
        case MSG_MTIME:
        case MSG_ATTR_INFO:
        case MSG_REFCOUNT: break; /* nothing to do with where the data is */
        case MSG_DATASPACE:
            if (shared || dataspace(w, m, size)) return -1;
            break;
        case MSG_DATATYPE:
            if (shared || datatype(w, m, size)) return -1;
            break;
        case MSG_LAYOUT:
            if (shared || layout(w, m, size, pos + (uint64_t)(m - p))) return -1;
            break;
        case MSG_FILTERS:
            if (shared || filters(w, m, size)) return -1;
            break;
        case MSG_CONTINUATION:
            if (size < (size_t)O + L || w->nconts == CHUNKS_MAX) return -1;
            w->conts[w->nconts].addr = get_le(m, O);
            w->conts[w->nconts].len = get_le(m + O, L);
            w->nconts++;
            break;
        default: return -1; /* external files, a group's, anything unknown */
        }
    }
    return 0;
}

/* n bytes of the file at relative address addr into buf (or a larger buffer the caller
 * frees): -1 when they are not all in the file or past the walk's budget. */
static int fetch(walk *w, uint64_t addr, uint64_t n, unsigned char *buf, size_t bufsize,
                 unsigned char **out) {
    const ohdr_file *f = w->f;
    if (n == 0 || n > BYTES_MAX - w->bytes || addr > f->eof || f->base > f->eof - addr ||
        n > f->eof - f->base - addr)
        return -1;
    w->bytes += n;
    unsigned char *p = n <= bufsize ? buf : malloc((size_t)n);
    if (!p) return -1;
    if (f->read(f->ctx, f->base + addr, p, (size_t)n)) {
        if (p != buf) free(p);
        return -1;
    }
    *out = p;
    return 0;
}

/* The first chunk: its prefix, then its messages. */
static int first_chunk(walk *w, uint64_t addr) {
    const ohdr_file *f = w->f;
    unsigned char buf[FIRST_READ], *big = NULL;
    uint64_t avail = addr <= f->eof && f->base <= f->eof - addr ? f->eof - f->base - addr : 0;
    size_t got = avail < FIRST_READ ? (size_t)avail : FIRST_READ;
    if (got < 16 || f->read(f->ctx, f->base + addr, buf, got)) return -1;
    size_t pre;
    uint64_t len;
    if (memcmp(buf, "OHDR", 4) == 0) {
        unsigned flags = buf[5];
        if (buf[4] != 2 || (flags & 0xc0)) return -1;
        w->version = 2;
        w->order = flags & 0x04;
        pre = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
        unsigned width = 1u << (flags & 3);
        if (pre + width > got) return -1;
        len = get_le(buf + pre, width);
        pre += width;
        len += 4; /* and the checksum */
    } else if (buf[0] == 1 && buf[1] == 0) {
        w->version = 1;
        len = get_le(buf + 8, 4);
        pre = 16; /* the prefix's 12 bytes, aligned to 8 */
    } else {
        return -1;
    }
    if (len > BYTES_MAX - pre) return -1;
    uint64_t total = pre + len;
    const unsigned char *p = buf;
    if (total > got) {
        if (fetch(w, addr, total, NULL, 0, &big)) return -1;
        p = big;
    } else {
        w->bytes = total;
    }
    int rc = 0;
    if (w->version == 2) {
        size_t body = (size_t)total - 4;
        if (len < 4 || ohdr_checksum(p, body) != (uint32_t)get_le(p + body, 4))
            rc = -1;
        else
            rc = messages(w, p + pre, (size_t)len - 4, f->base + addr + pre);
    } else {
        rc = messages(w, p + pre, (size_t)len, f->base + addr + pre);
    }
    free(big);
    return rc;
}

static int continuation(walk *w, uint64_t addr, uint64_t len) {
    unsigned char buf[FIRST_READ], *p;
    if (fetch(w, addr, len, buf, sizeof buf, &p)) return -1;
    int rc;
    if (w->version == 2) {
        size_t n = (size_t)len;
        rc = n < 8 || memcmp(p, "OCHK", 4) != 0 ||
                     ohdr_checksum(p, n - 4) != (uint32_t)get_le(p + n - 4, 4)
                 ? -1
                 : messages(w, p + 4, n - 8, w->f->base + addr + 4);
    } else {
        rc = messages(w, p, (size_t)len, w->f->base + addr);
    }
    if (p != buf) free(p);
    return rc;
}

/* A chunked dataset's chunks as the reader takes them: their shape the dataspace's rank, in
 * elements of the type's size, a shuffle of that size, at most OHDR_CHUNK_BYTES_MAX bytes a
 * chunk and OHDR_CHUNKS_MAX chunks. */
static int chunk_grid(walk *w) {
    ohdr_dataset *o = w->out;
    if (w->chunk_ndims != o->rank + 1 || w->chunk_last != o->size || o->count == 0) return -1;
    for (unsigned i = 0; i < o->nfilters; i++)
        if (o->filters[i] == OHDR_FILTER_SHUFFLE && w->shuffle_size != o->size) return -1;
    uint64_t bytes = o->size, n = 1;
    for (unsigned i = 0; i < o->rank; i++) {
        if (o->chunk[i] > OHDR_CHUNK_BYTES_MAX / bytes) return -1;
        bytes *= o->chunk[i];
        n *= (o->dims[i] + o->chunk[i] - 1) / o->chunk[i];
        if (n > OHDR_CHUNKS_MAX) return -1;
    }
    if (o->index == 1 && n != 1) return -1;
    o->nchunks = n;
    return 0;
}

int ohdr_read_dataset(const ohdr_file *f, uint64_t addr, ohdr_dataset *out) {
    memset(out, 0, sizeof *out);
    unsigned O = f->sizeof_addr, L = f->sizeof_size;
    if ((O != 2 && O != 4 && O != 8) || (L != 2 && L != 4 && L != 8) || f->base > f->eof) return -1;
    walk w = {.f = f, .out = out};
    if (first_chunk(&w, addr)) return -1;
    for (size_t i = 0; i < w.nconts; i++)
        if (continuation(&w, w.conts[i].addr, w.conts[i].len)) return -1;
    if (!w.space || !w.type || !w.layout) return -1; /* not a dataset, or not all here */
    if (out->count > UINT64_MAX / out->size) return -1;
    uint64_t nbytes = out->count * out->size;
    if (w.filters && !out->chunked) return -1;
    if (out->chunked) return chunk_grid(&w);
    if (out->compact) {
        /* where the bytes are is read as contiguous data is: all of it in the file */
        if (w.stored != nbytes || out->offset > f->eof || nbytes > f->eof - out->offset) return -1;
        return 0;
    }
    if (!out->allocated) {
        out->offset = 0;
        return 0;
    }
    /* the stored size must be the shape's, and all of it in the file */
    if (w.stored != nbytes || out->offset > f->eof - f->base ||
        nbytes > f->eof - f->base - out->offset)
        return -1;
    out->offset += f->base;
    return 0;
}

/* ---- chunk indexes: a version 1 B-tree (layout version 3), a single chunk and a fixed
 * array (version 4), as the format specification lays them out ---- */

#define NODES_MAX   4096       /* B-tree nodes read, at most */
#define DEPTH_MAX   32         /* B-tree levels, at most */
#define INDEX_BYTES (4u << 20) /* bytes of one node or data block, at most */

typedef struct {
    const ohdr_file *f;
    const ohdr_dataset *d;
    ohdr_chunk *out;
    uint64_t n;           /* chunks found */
    uint64_t chunk_bytes; /* a whole chunk's, unfiltered */
    unsigned nodes;
} chunks_walk;

/* n bytes at relative address addr: into buf when they fit, else a buffer the caller frees;
 * NULL when they are not all in the file. */
static unsigned char *load(const ohdr_file *f, uint64_t addr, uint64_t n, unsigned char *buf,
                           size_t cap) {
    if (n == 0 || n > INDEX_BYTES || addr > f->eof - f->base || n > f->eof - f->base - addr)
        return NULL;
    unsigned char *p = n <= cap ? buf : malloc((size_t)n);
    if (p && f->read(f->ctx, f->base + addr, p, (size_t)n)) {
        if (p != buf) free(p);
        p = NULL;
    }
    return p;
}

/* The next chunk, in grid order, at relative address addr: all of it in the file, of a
 * whole chunk's size unless a deflate was applied to it. */
static int add_chunk(chunks_walk *c, uint64_t addr, uint64_t size, uint32_t mask, uint64_t index) {
    const ohdr_file *f = c->f;
    const ohdr_dataset *d = c->d;
    if (c->n == d->nchunks || index >= d->nchunks || (c->n && index <= c->out[c->n - 1].index))
        return -1;
    if (size == 0 || addr > f->eof - f->base || size > f->eof - f->base - addr) return -1;
    if (d->nfilters < 32 && (mask >> d->nfilters)) return -1;
    bool deflated = false;
    for (unsigned i = 0; i < d->nfilters; i++)
        if (d->filters[i] == OHDR_FILTER_DEFLATE && !(mask & (1u << i))) deflated = true;
    if (deflated ? size > ohdr_stream_max(c->chunk_bytes) : size != c->chunk_bytes) return -1;
    c->out[c->n++] =
        (ohdr_chunk){.addr = f->base + addr, .size = size, .mask = mask, .index = index};
    return 0;
}

/* A version 1 B-tree node of chunks and what is under it; level: the one expected (-1 at
 * the root). Keys: the chunk's stored size, its filter mask, its offset in elements in
 * each dimension and a last 0; children: the nodes below, or at level 0 the chunks. */
static int btree_node(chunks_walk *c, uint64_t addr, int level, unsigned depth) {
    const ohdr_file *f = c->f;
    const ohdr_dataset *d = c->d;
    unsigned O = f->sizeof_addr, nd = d->rank + 1;
    size_t key = 8 + 8 * (size_t)nd, head = 8 + 2 * (size_t)O;
    if (++c->nodes > NODES_MAX || depth > DEPTH_MAX) return -1;
    /* a small node is all in the first read */
    unsigned char buf[2048], *p;
    uint64_t avail = addr <= f->eof - f->base ? f->eof - f->base - addr : 0;
    uint64_t first = avail < sizeof buf ? avail : sizeof buf;
    if (first < head || !(p = load(f, addr, first, buf, sizeof buf))) return -1;
    if (memcmp(p, "TREE", 4) != 0 || p[4] != 1 || (level >= 0 && p[5] != level)) return -1;
    unsigned lvl = p[5], entries = (unsigned)get_le(p + 6, 2);
    uint64_t size = head + (uint64_t)entries * (key + O) + key;
    if (entries == 0 || (size > first && !(p = load(f, addr, size, buf, sizeof buf)))) return -1;
    int rc = 0;
    for (unsigned u = 0; rc == 0 && u < entries; u++) {
        const unsigned char *k = p + head + (size_t)u * (key + O);
        uint64_t child = get_le(k + key, O);
        if (lvl > 0) {
            rc = btree_node(c, child, (int)lvl - 1, depth + 1);
            continue;
        }
        uint64_t index = 0;
        for (unsigned i = 0; rc == 0 && i < d->rank; i++) {
            uint64_t at = get_le(k + 8 + 8 * (size_t)i, 8);
            if (at % d->chunk[i] || at >= d->dims[i]) rc = -1;
            index = index * ((d->dims[i] + d->chunk[i] - 1) / d->chunk[i]) + at / d->chunk[i];
        }
        if (rc == 0 && get_le(k + 8 + 8 * (size_t)d->rank, 8) != 0) rc = -1;
        if (rc == 0) rc = add_chunk(c, child, get_le(k, 4), (uint32_t)get_le(k + 4, 4), index);
    }
    if (p != buf) free(p);
    return rc;
}

/* A fixed array: its header, then its one data block (a paged one is the library's), an
 * element a chunk in grid order: its address and, filtered, its size and filter mask. */
static int fixed_array(chunks_walk *c) {
    const ohdr_file *f = c->f;
    const ohdr_dataset *d = c->d;
    unsigned O = f->sizeof_addr, L = f->sizeof_size;
    bool filtered = d->nfilters > 0;
    size_t hsize = 12 + (size_t)L + O;
    unsigned char hbuf[64], buf[4096], *h = load(f, d->index_addr, hsize, hbuf, sizeof hbuf);
    if (!h || memcmp(h, "FAHD", 4) != 0 || h[4] != 0 || h[5] != (filtered ? 1 : 0) ||
        ohdr_checksum(h, hsize - 4) != (uint32_t)get_le(h + hsize - 4, 4))
        return -1;
    unsigned esize = h[6], bits = h[7];
    uint64_t nelmts = get_le(h + 8, L), dblk = get_le(h + 8 + L, O);
    size_t csl = filtered ? (size_t)esize - O - 4 : 0;
    if (nelmts != d->nchunks || bits >= 32 || nelmts > (1ull << bits) || all_ones(h + 8 + L, O) ||
        (filtered ? esize <= O + 4 || csl > 8 : esize != O))
        return -1;
    uint64_t dsize = 10 + (uint64_t)O + nelmts * esize;
    unsigned char *p = load(f, dblk, dsize, buf, sizeof buf);
    if (!p) return -1;
    int rc = memcmp(p, "FADB", 4) != 0 || p[4] != 0 || p[5] != h[5] ||
                     get_le(p + 6, O) != d->index_addr ||
                     ohdr_checksum(p, (size_t)dsize - 4) != (uint32_t)get_le(p + dsize - 4, 4)
                 ? -1
                 : 0;
    for (uint64_t i = 0; rc == 0 && i < nelmts; i++) {
        const unsigned char *e = p + 6 + O + i * esize;
        if (all_ones(e, O))
            rc = -1; /* a chunk never written: its fill value is the library's */
        else if (filtered)
            rc = add_chunk(c, get_le(e, O), get_le(e + O, (unsigned)csl),
                           (uint32_t)get_le(e + O + csl, 4), i);
        else
            rc = add_chunk(c, get_le(e, O), c->chunk_bytes, 0, i);
    }
    if (p != buf) free(p);
    return rc;
}

int ohdr_read_chunks(const ohdr_file *f, const ohdr_dataset *d, ohdr_chunk *out) {
    if (!d->chunked) return -1;
    chunks_walk c = {.f = f, .d = d, .out = out, .chunk_bytes = d->size};
    for (unsigned i = 0; i < d->rank; i++)
        c.chunk_bytes *= d->chunk[i];
    int rc;
    if (d->index == 0) {
        rc = btree_node(&c, d->index_addr, -1, 0);
    } else if (d->index == 1) {
        uint64_t size = d->single_size ? d->single_size : c.chunk_bytes;
        rc = d->nfilters && !d->single_size ? -1
                                            : add_chunk(&c, d->index_addr, size, d->single_mask, 0);
    } else {
        rc = fixed_array(&c);
    }
    return rc == 0 && c.n == d->nchunks ? 0 : -1;
}
