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
    bool space, type, layout;
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

static int layout(walk *w, const unsigned char *m, size_t n) {
    unsigned O = w->f->sizeof_addr, L = w->f->sizeof_size;
    if (w->layout || n < 2 || (m[0] != 3 && m[0] != 4)) return -1;
    ohdr_dataset *o = w->out;
    if (m[1] == 0) { /* compact: the raw data follows */
        if (n < 4 || get_le(m + 2, 2) > n - 4) return -1;
        o->compact = true;
        w->stored = get_le(m + 2, 2);
    } else if (m[1] == 1) {
        if (n < 2 + (size_t)O + L) return -1;
        o->compact = false;
        o->allocated = !all_ones(m + 2, O);
        o->offset = get_le(m + 2, O);
        w->stored = get_le(m + 2 + O, L);
    } else {
        return -1; /* chunked or virtual */
    }
    w->layout = true;
    return 0;
}

/* One chunk's messages, p[0, n). */
static int messages(walk *w, const unsigned char *p, size_t n) {
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
            if (shared || layout(w, m, size)) return -1;
            break;
        case MSG_CONTINUATION:
            if (size < (size_t)O + L || w->nconts == CHUNKS_MAX) return -1;
            w->conts[w->nconts].addr = get_le(m, O);
            w->conts[w->nconts].len = get_le(m + O, L);
            w->nconts++;
            break;
        default: return -1; /* filters, external files, a group's, anything unknown */
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
            rc = messages(w, p + pre, (size_t)len - 4);
    } else {
        rc = messages(w, p + pre, (size_t)len);
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
                 : messages(w, p + 4, n - 8);
    } else {
        rc = messages(w, p, (size_t)len);
    }
    if (p != buf) free(p);
    return rc;
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
    if (out->compact) return w.stored == nbytes ? 0 : -1;
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
