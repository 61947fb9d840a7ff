/* Two zlib streams inflated at once (inflate_pair.h). DEFLATE (RFC 1951) in a zlib wrapper
 * (RFC 1950). Each stream's bits sit in a 64-bit buffer, least significant first; a symbol
 * is found in a table of LB (or DB) bits, its codes longer than that decoded canonically. The
 * fast loop, the two streams' symbols in turn (up to four of each a turn), runs while both
 * have input and output room for a turn; the rest (block headers, stored blocks, long codes,
 * the streams' ends) goes a step at a time. */
#include "inflate_pair.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LB    11        /* bits of the literal/length table */
#define DB    8         /* bits of the distance table */
#define ROOM  (258 + 8) /* output the fast loop keeps: a longest match copied 8 bytes at a time */
#define SLACK 8         /* input the fast loop keeps: a refill loads 8 bytes */

/* A table entry: bits 0-4 the code's length, 5-8 extra bits after it, then what it is; the
 * value (a literal, a length's or a distance's base) in bits 16-31. */
#define E_LONG   0x200u /* a code longer than the table's bits: decoded canonically */
#define E_BAD    0x400u /* no code, or a symbol that is not allowed */
#define E_EOB    0x800u
#define E_LIT    0x1000u
#define E_LENGTH 0x2000u

enum { HEADER, HUFF, DONE };

typedef struct {
    uint16_t count[16], sym[288];
} huff;

typedef struct {
    const unsigned char *in, *end;
    unsigned char *begin, *out, *stop;
    uint64_t bb; /* bits, the next one lowest; bc of them valid */
    unsigned bc;
    int state;
    bool final;
    huff lh, dh;
    uint32_t lit[1u << LB], dist[1u << DB];
} stream;

struct inflate_pair {
    stream s[2];
};

static const uint16_t len_base[29] = {3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                      15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                      67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static uint32_t lit_meta(unsigned sym) {
    if (sym < 256) return E_LIT | (uint32_t)sym << 16;
    if (sym == 256) return E_EOB;
    if (sym > 285) return E_BAD;
    return E_LENGTH | (uint32_t)len_extra[sym - 257] << 5 | (uint32_t)len_base[sym - 257] << 16;
}
static uint32_t dist_meta(unsigned sym) {
    if (sym > 29) return E_BAD;
    return (uint32_t)dist_extra[sym] << 5 | (uint32_t)dist_base[sym] << 16;
}
static uint8_t rev8[256];

static void rev8_init(void) {
    for (unsigned i = 0; i < 256; i++) {
        unsigned r = 0;
        for (unsigned b = 0; b < 8; b++)
            r |= (i >> b & 1) << (7 - b);
        rev8[i] = (uint8_t)r;
    }
}

static uint32_t plain_meta(unsigned sym) {
    return (uint32_t)sym << 16;
}

inflate_pair *inflate_pair_new(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, rev8_init);
    return malloc(sizeof(inflate_pair));
}
void inflate_pair_free(inflate_pair *p) {
    free(p);
}

/* The canonical code of lens[0..n) into h and a table of tb bits. -1 when over-subscribed,
 * or incomplete otherwise than as the reference decoders allow (then its missing codes are
 * E_BAD). */
static inline __attribute__((always_inline)) int build(const uint8_t *lens, unsigned n,
                                                       uint32_t (*meta)(unsigned), uint32_t *table,
                                                       unsigned tb, huff *h) {
    uint16_t offs[16];
    uint16_t c4[4][16] = {{0}}; /* four counts: consecutive lengths are mostly the same */
    unsigned i = 0;
    for (; i + 4 <= n; i += 4)
        for (unsigned j = 0; j < 4; j++)
            c4[j][lens[i + j]]++;
    for (; i < n; i++)
        c4[0][lens[i]]++;
    for (unsigned len = 0; len < 16; len++)
        h->count[len] = (uint16_t)(c4[0][len] + c4[1][len] + c4[2][len] + c4[3][len]);
    h->count[0] = 0;
    int left = 1;
    for (unsigned len = 1; len < 16; len++) {
        left = 2 * left - h->count[len];
        if (left < 0) return -1;
    }
    /* incomplete only as zlib and libdeflate allow it: no code at all, or one of one bit */
    if (left && left != 1 << 15 && !(h->count[1] == 1 && left == 1 << 14)) return -1;
    offs[1] = 0;
    for (unsigned len = 1; len < 15; len++)
        offs[len + 1] = (uint16_t)(offs[len] + h->count[len]);
    for (unsigned i = 0; i < n; i++)
        if (lens[i]) h->sym[offs[lens[i]]++] = (uint16_t)i;
    /* codes in canonical order, shortest first; after the codes of each length the table's
     * filled part doubles, which repeats them at every index their bits end (libdeflate's
     * way: a store a code, not one a table entry) */
    unsigned code = 0, at = 0, size = 2, mask = (1u << tb) - 1;
    table[0] = table[1] = E_BAD; /* what no code reaches, when the code is incomplete */
    for (unsigned len = 1; len < 16; len++) {
        for (unsigned k = 0; k < h->count[len]; k++, code++) {
            unsigned r = (unsigned)(rev8[code & 0xff] << 8 | rev8[code >> 8 & 0xff]) >> (16 - len);
            table[r & mask] = len <= tb ? meta(h->sym[at + k]) | len : E_LONG;
        }
        at += h->count[len];
        code <<= 1;
        if (len < tb) {
            memcpy(table + size, table, size * sizeof *table);
            size *= 2;
        }
    }
    return 0;
}

/* A code longer than the table's bits, from the bc bits of bb (puff's decode). */
static int canon(const huff *h, uint64_t bb, unsigned bc, unsigned *sym, unsigned *len) {
    int code = 0, first = 0, index = 0;
    for (unsigned l = 1; l < 16 && l <= bc; l++) {
        code |= (int)(bb & 1);
        bb >>= 1;
        int c = h->count[l];
        if (code - c < first) {
            *sym = h->sym[index + (code - first)];
            *len = l;
            return 0;
        }
        index += c;
        first = (first + c) << 1;
        code <<= 1;
    }
    return -1;
}

static uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The checked bit reader: whole bytes while they fit and the input lasts. Bits above bc may
 * hold the next input's bits already (the fast refill's), which OR-ing them again keeps. */
static inline void refill_bits(uint64_t *bb, unsigned *bc, const unsigned char **in,
                               const unsigned char *end) {
    while (*bc < 56 && *in < end) { /* bc stays below 64: the fast refill shifts by it */
        *bb |= (uint64_t) * (*in)++ << *bc;
        *bc += 8;
    }
}
static void refill(stream *s) {
    refill_bits(&s->bb, &s->bc, &s->in, s->end);
}
static int take(stream *s, unsigned n, unsigned *v) {
    if (s->bc < n) refill(s);
    if (s->bc < n) return -1;
    *v = (unsigned)(s->bb & ((1ull << n) - 1));
    s->bb >>= n;
    s->bc -= n;
    return 0;
}

static void fixed_tables(stream *s) {
    uint8_t lens[288 + 32];
    memset(lens, 8, 144);
    memset(lens + 144, 9, 112);
    memset(lens + 256, 7, 24);
    memset(lens + 280, 8, 8);
    memset(lens + 288, 5, 32);
    build(lens, 288, lit_meta, s->lit, LB, &s->lh);
    build(lens + 288, 32, dist_meta, s->dist, DB, &s->dh);
}

static int dynamic_tables(stream *s) {
    static const uint8_t order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                      11, 4,  12, 3, 13, 2, 14, 1, 15};
    unsigned hlit, hdist, hclen, v;
    if (take(s, 5, &hlit) || take(s, 5, &hdist) || take(s, 4, &hclen)) return -1;
    hlit += 257;
    hdist += 1;
    hclen += 4;
    if (hlit > 286 || hdist > 30) return -1;
    uint8_t cl[19] = {0}, lens[286 + 30] = {0};
    for (unsigned i = 0; i < hclen; i++) {
        if (take(s, 3, &v)) return -1;
        cl[order[i]] = (uint8_t)v;
    }
    uint32_t clt[1u << 7];
    huff clh;
    if (build(cl, 19, plain_meta, clt, 7, &clh)) return -1; /* its codes are 7 bits at most */
    uint64_t bb = s->bb; /* in registers: the lengths' stores would reload the stream's */
    unsigned bc = s->bc;
    const unsigned char *in = s->in;
    for (unsigned i = 0; i < hlit + hdist;) {
        if (bc < 14) /* a code and its extra bits */
            refill_bits(&bb, &bc, &in, s->end);
        uint32_t e = clt[bb & 127];
        if ((e & E_BAD) || (e & 31) > bc) return -1;
        bb >>= e & 31;
        bc -= e & 31;
        unsigned sym = e >> 16;
        if (sym < 16) {
            lens[i++] = (uint8_t)sym;
            continue;
        }
        unsigned x = sym == 16 ? 2 : sym == 17 ? 3 : 7;
        if (x > bc || (sym == 16 && i == 0)) return -1;
        unsigned rep = (unsigned)(bb & ((1u << x) - 1)) + (sym == 18 ? 11 : 3);
        bb >>= x;
        bc -= x;
        if (rep > hlit + hdist - i) return -1;
        memset(lens + i, sym == 16 ? lens[i - 1] : 0, rep);
        i += rep;
    }
    s->bb = bb;
    s->bc = bc;
    s->in = in;
    if (!lens[256]) return -1; /* a block must be able to end */
    return build(lens, hlit, lit_meta, s->lit, LB, &s->lh) ||
                   build(lens + hlit, hdist, dist_meta, s->dist, DB, &s->dh)
               ? -1
               : 0;
}

/* A stored block: its bytes copied, from the next whole byte. */
static int stored_block(stream *s) {
    s->bb >>= s->bc % 8;
    s->bc -= s->bc % 8;
    s->in -= s->bc / 8; /* the bytes still in the buffer, read again from the input */
    s->bb = 0;
    s->bc = 0;
    if (s->end - s->in < 4) return -1;
    unsigned len = s->in[0] | (unsigned)s->in[1] << 8, nlen = s->in[2] | (unsigned)s->in[3] << 8;
    s->in += 4;
    if (len != (~nlen & 0xffffu) || (size_t)(s->end - s->in) < len ||
        (size_t)(s->stop - s->out) < len)
        return -1;
    memcpy(s->out, s->in, len);
    s->in += len;
    s->out += len;
    s->state = s->final ? DONE : HEADER;
    return 0;
}

static int block_header(stream *s) {
    unsigned final, type;
    if (take(s, 1, &final) || take(s, 2, &type)) return -1;
    s->final = final;
    s->state = HUFF;
    if (type == 0) return stored_block(s);
    if (type == 1) {
        fixed_tables(s);
        return 0;
    }
    return type == 2 ? dynamic_tables(s) : -1;
}

/* One symbol's entry from table t (canonically for a long code) with the bits of bb, bc of
 * them valid: E_BAD when none. */
static inline uint32_t entry(const uint32_t *t, unsigned tb, const huff *h,
                             uint32_t (*meta)(unsigned), uint64_t bb, unsigned bc) {
    uint32_t e = t[bb & ((1u << tb) - 1)];
    if (e & E_LONG) {
        unsigned sym, len;
        e = canon(h, bb, bc, &sym, &len) ? E_BAD : meta(sym) | len;
    }
    return (e & E_BAD) || (e & 31) > bc ? E_BAD : e;
}

/* One symbol, every read and write checked. */
static int checked_symbol(stream *s) {
    refill(s);
    uint32_t e = entry(s->lit, LB, &s->lh, lit_meta, s->bb, s->bc);
    if (e & E_BAD) return -1;
    s->bb >>= e & 31;
    s->bc -= e & 31;
    if (e & E_LIT) {
        if (s->out == s->stop) return -1;
        *s->out++ = (unsigned char)(e >> 16);
        return 0;
    }
    if (e & E_EOB) {
        s->state = s->final ? DONE : HEADER;
        return 0;
    }
    unsigned extra, len, dist;
    if (take(s, (e >> 5) & 15, &extra)) return -1;
    len = (e >> 16) + extra;
    refill(s);
    uint32_t d = entry(s->dist, DB, &s->dh, dist_meta, s->bb, s->bc);
    if (d & E_BAD) return -1;
    s->bb >>= d & 31;
    s->bc -= d & 31;
    if (take(s, (d >> 5) & 15, &extra)) return -1;
    dist = (d >> 16) + extra;
    if (dist > (size_t)(s->out - s->begin) || len > (size_t)(s->stop - s->out)) return -1;
    for (unsigned i = 0; i < len; i++, s->out++)
        *s->out = s->out[-(ptrdiff_t)dist];
    return 0;
}

/* len bytes from dist back, at out: 8 at a time when they do not overlap, ROOM letting the
 * last run over. */
static inline void copy_match(unsigned char *out, size_t dist, unsigned len) {
    const unsigned char *from = out - dist;
    unsigned char *to = out + len;
    if (dist >= 8) do {
            memcpy(out, from, 8);
            out += 8;
            from += 8;
        } while (out < to);
    else
        while (out < to)
            *out++ = *from++;
}

/* One symbol of s in the fast loop: its state in the caller's registers (*bbp ... *outp).
 * 0 to go on, 1 at the block's end, -1 on an error. */
static inline __attribute__((always_inline)) int fast_symbol(stream *s, uint64_t *bbp,
                                                             unsigned *bcp,
                                                             const unsigned char **inp,
                                                             unsigned char **outp) {
    uint64_t bb = *bbp;
    unsigned bc = *bcp;
    const unsigned char *in = *inp;
    unsigned char *out = *outp;
    int r = 0;
    bb |= load64(in) << bc; /* 56 bits or more: a whole match's codes and extra bits */
    in += (bc ^ 63) >> 3;   /* 63 - bc */
    bc |= 56;
    uint32_t e = s->lit[bb & ((1u << LB) - 1)];
    if (__builtin_expect(!(e & (E_LONG | E_BAD | E_EOB | E_LENGTH)), 1)) {
        *out++ = (unsigned char)(e >> 16);
        bb >>= e & 31;
        bc -= e & 31;
        goto done;
    }
    e = entry(s->lit, LB, &s->lh, lit_meta, bb, bc);
    if (e & E_BAD) {
        r = -1;
        goto done;
    }
    bb >>= e & 31;
    bc -= e & 31;
    if (e & E_LIT) {
        *out++ = (unsigned char)(e >> 16);
        goto done;
    }
    if (e & E_EOB) {
        s->state = s->final ? DONE : HEADER;
        r = 1;
        goto done;
    }
    unsigned x = (e >> 5) & 15, len = (e >> 16) + (unsigned)(bb & ((1u << x) - 1));
    bb >>= x;
    bc -= x;
    uint32_t d = entry(s->dist, DB, &s->dh, dist_meta, bb, bc);
    if (d & E_BAD) {
        r = -1;
        goto done;
    }
    bb >>= d & 31;
    bc -= d & 31;
    x = (d >> 5) & 15;
    unsigned dist = (d >> 16) + (unsigned)(bb & ((1u << x) - 1));
    bb >>= x;
    bc -= x;
    if (dist > (size_t)(out - s->begin)) {
        r = -1;
        goto done;
    }
    copy_match(out, dist, len);
    out += len;
done:
    *bbp = bb;
    *bcp = bc;
    *inp = in;
    *outp = out;
    return r;
}

#define FAST_LOCALS(s, p)                                                                          \
    uint64_t p##bb = (s)->bb;                                                                      \
    unsigned p##bc = (s)->bc;                                                                      \
    const unsigned char *p##in = (s)->in;                                                          \
    unsigned char *p##out = (s)->out
#define FAST_SAVE(s, p) ((s)->bb = p##bb, (s)->bc = p##bc, (s)->in = p##in, (s)->out = p##out)

/* The literal loop takes a turn while each stream has IN_TURN bytes of input left (two
 * refills and a refill's load) and OUT_TURN of room (three literals, then a match of 258
 * bytes copied 8 at a time). */
#define IN_TURN  (2 * 7 + SLACK)
#define OUT_TURN (3 + ROOM)

static bool can_turn(const stream *s) {
    return s->state == HUFF && s->end - s->in >= IN_TURN && s->stop - s->out >= OUT_TURN;
}

/* A symbol that is not a literal or a match the tables hold, from the stream's own state
 * (out of the literal loop, whose registers it would crowd). */
static __attribute__((noinline)) int odd_symbol(stream *s) {
    if (s->end - s->in < SLACK || s->stop - s->out < ROOM) return checked_symbol(s);
    return fast_symbol(s, &s->bb, &s->bc, &s->in, &s->out) < 0 ? -1 : 0;
}

#define REFILL(p)                                                                                  \
    p##bb |= load64(p##in) << p##bc;                                                               \
    p##in += (p##bc ^ 63) >> 3; /* 63 - bc */                                                      \
    p##bc |= 56
/* A symbol of stream p: a literal, or a match whose codes the tables hold (which ends the
 * turn); anything else leaves the loop for odd_symbol, with nothing of it taken. */
#define SYMBOL(s, p)                                                                               \
    e = (s)->lit[p##bb & ((1u << LB) - 1)];                                                        \
    if (__builtin_expect(!(e & E_LIT), 0)) {                                                       \
        if (!(e & E_LENGTH)) {                                                                     \
            odd = (s);                                                                             \
            break;                                                                                 \
        }                                                                                          \
        REFILL(p); /* 56 bits: the match's codes and extra bits */                                 \
        unsigned x = (e >> 5) & 15, used = (e & 31) + x;                                           \
        unsigned len = (e >> 16) + (unsigned)(p##bb >> (e & 31) & ((1u << x) - 1));                \
        uint32_t d = (s)->dist[p##bb >> used & ((1u << DB) - 1)];                                  \
        unsigned y = (d >> 5) & 15;                                                                \
        size_t dist = (d >> 16) + (unsigned)(p##bb >> (used + (d & 31)) & ((1u << y) - 1));        \
        if ((d & (E_LONG | E_BAD)) || dist > (size_t)(p##out - (s)->begin)) {                      \
            odd = (s);                                                                             \
            break;                                                                                 \
        }                                                                                          \
        used += (d & 31) + y;                                                                      \
        p##bb >>= used;                                                                            \
        p##bc -= used;                                                                             \
        copy_match(p##out, dist, len);                                                             \
        p##out += len;                                                                             \
        continue;                                                                                  \
    }                                                                                              \
    *p##out++ = (unsigned char)(e >> 16);                                                          \
    p##bb >>= e & 63; /* a literal's extra bits are none: its length */                            \
    p##bc -= e & 31

/* Both streams' symbols, interleaved (four a turn: 4 x LB bits of the 56 a refill gives),
 * while both can go fast. */
static int fast_pair(stream *a, stream *b) {
    while (can_turn(a) && can_turn(b)) {
        FAST_LOCALS(a, a);
        FAST_LOCALS(b, b);
        stream *odd = NULL;
        uint32_t e;
        for (;;) {
            if (a->end - ain < IN_TURN || a->stop - aout < OUT_TURN || b->end - bin < IN_TURN ||
                b->stop - bout < OUT_TURN)
                break;
            REFILL(a);
            REFILL(b);
            SYMBOL(a, a);
            SYMBOL(b, b);
            SYMBOL(a, a);
            SYMBOL(b, b);
            SYMBOL(a, a);
            SYMBOL(b, b);
            SYMBOL(a, a);
            SYMBOL(b, b);
        }
        FAST_SAVE(a, a);
        FAST_SAVE(b, b);
        if (!odd) return 0;
        if (odd_symbol(odd)) return -1;
    }
    return 0;
}

static int fast_one(stream *a) {
    while (can_turn(a)) {
        FAST_LOCALS(a, a);
        stream *odd = NULL;
        uint32_t e;
        for (;;) {
            if (a->end - ain < IN_TURN || a->stop - aout < OUT_TURN) break;
            REFILL(a);
            SYMBOL(a, a);
            SYMBOL(a, a);
            SYMBOL(a, a);
            SYMBOL(a, a);
        }
        FAST_SAVE(a, a);
        if (!odd) return 0;
        if (odd_symbol(odd)) return -1;
    }
    return 0;
}

/* One step of a stream the literal loop cannot take: a block's header, or a symbol near the
 * output's end (a literal while there is room; anything else checked) or the input's. */
static int step(stream *s) {
    if (s->state == HEADER) return block_header(s);
    if (s->end - s->in < SLACK || s->out == s->stop) return checked_symbol(s);
    FAST_LOCALS(s, s);
    REFILL(s);
    uint32_t e = s->lit[sbb & ((1u << LB) - 1)];
    if (!(e & E_LIT)) {
        FAST_SAVE(s, s);
        return odd_symbol(s);
    }
    *sout++ = (unsigned char)(e >> 16);
    sbb >>= e & 31;
    sbc -= e & 31;
    FAST_SAVE(s, s);
    return 0;
}

static int start(stream *s, const unsigned char *in, size_t n, unsigned char *out, size_t m) {
    /* deflate, a window of 32 KiB or less, no preset dictionary, the header's check */
    if (n < 7 || (in[0] & 0x0f) != 8 || in[0] >> 4 > 7 || (in[1] & 0x20) ||
        ((unsigned)in[0] << 8 | in[1]) % 31)
        return -1;
    s->in = in + 2; /* the fields, not the tables: those are built before they are read */
    s->end = in + n;
    s->begin = s->out = out;
    s->stop = out + m;
    s->bb = 0;
    s->bc = 0;
    s->state = HEADER;
    s->final = false;
    return 0;
}

/* Whole, and the Adler-32 after the last block's last whole byte matching and ending the
 * input: bytes after it are not this loop's to judge (libdeflate's verdict stands). */
static int finish(const stream *s) {
    if (s->state != DONE || s->out != s->stop) return -1;
    const unsigned char *t = s->in - s->bc / 8;
    if (s->end - t != 4) return -1;
    uint32_t want = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
    return libdeflate_adler32(1, s->begin, (size_t)(s->stop - s->begin)) == want ? 0 : -1;
}

int inflate_pair_run(inflate_pair *p, const unsigned char *const in[2], const size_t in_size[2],
                     unsigned char *const out[2], const size_t out_size[2]) {
    stream *a = &p->s[0], *b = &p->s[1];
    if (start(a, in[0], in_size[0], out[0], out_size[0]) ||
        start(b, in[1], in_size[1], out[1], out_size[1]))
        return -1;
    for (;;) { /* each turn makes progress: a symbol, a header, or a stream's end */
        bool fa = can_turn(a), fb = can_turn(b);
        int r;
        if (fa && fb)
            r = fast_pair(a, b);
        else if (!fa && a->state != DONE)
            r = step(a);
        else if (!fb && b->state != DONE)
            r = step(b);
        else if (fa)
            r = fast_one(a);
        else if (fb)
            r = fast_one(b);
        else
            break;
        if (r) return -1;
    }
    return finish(a) || finish(b) ? -1 : 0;
}
