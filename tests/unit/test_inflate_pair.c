/* inflate_pair (storage/inflate_pair.h): two zlib streams inflated at once give what zlib
 * gives, whatever zlib or libdeflate made them with (stored, fixed and dynamic blocks, one or
 * many, long matches, short distances); a stream that is damaged, cut short, of another size
 * than its output's or preceded by a preset dictionary is a failure, never a wrong success. */
#include "check.h"
#include "storage/inflate_pair.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <zlib.h>

enum { MAXN = 70000 };

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

/* n bytes of kind k: random bytes, random float32 in [0, 1), text-like, runs, zeros, and
 * float32 byte planes (what shuffle makes of them). */
static void fill(unsigned char *p, size_t n, int k) {
    for (size_t i = 0; i < n; i++) {
        switch (k) {
        case 0: p[i] = (unsigned char)next(); break;
        case 1:
            if (i % 4 == 0) {
                float f = (float)(next() >> 8) / 16777216.0f;
                memcpy(p + i, &f, n - i < 4 ? n - i : 4);
            }
            break;
        case 2: p[i] = "the quick brown fox jumps over "[next() % 31]; break;
        case 3: p[i] = (unsigned char)(i / (1 + next() % 300) % 3); break;
        case 4: p[i] = 0; break;
        default: p[i] = i < n / 4 ? (unsigned char)(0x3e + next() % 2) : (unsigned char)next();
        }
    }
}

/* raw into a zlib stream: zlib at level/strategy, or libdeflate at level - 100 */
static size_t squeeze(const unsigned char *raw, size_t n, int level, int strategy,
                      unsigned char *out, size_t cap) {
    if (level >= 100) {
        struct libdeflate_compressor *c = libdeflate_alloc_compressor(level - 100);
        size_t got = libdeflate_zlib_compress(c, raw, n, out, cap);
        libdeflate_free_compressor(c);
        return got;
    }
    z_stream z = {0};
    if (deflateInit2(&z, level, Z_DEFLATED, 15, 8, strategy) != Z_OK) return 0;
    z.next_in = (unsigned char *)raw;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_FINISH);
    size_t got = cap - z.avail_out;
    deflateEnd(&z);
    return r == Z_STREAM_END ? got : 0;
}

static unsigned char raw[2][MAXN], packed[2][MAXN + 1000], got[2][MAXN + 8];

static int pair(inflate_pair *p, const size_t zn[2], const size_t n[2]) {
    const unsigned char *in[2] = {packed[0], packed[1]};
    unsigned char *out[2] = {got[0], got[1]};
    return inflate_pair_run(p, in, zn, out, n);
}

int main(void) {
    inflate_pair *p = inflate_pair_new();
    CHECK(p != NULL);
    static const size_t sizes[] = {1, 7, 100, 265, 266, 267, 1000, 8192, 8193, 65536, MAXN};
    static const int levels[][2] = {{0, Z_DEFAULT_STRATEGY},
                                    {1, Z_DEFAULT_STRATEGY},
                                    {4, Z_DEFAULT_STRATEGY},
                                    {9, Z_DEFAULT_STRATEGY},
                                    {6, Z_FIXED},
                                    {6, Z_HUFFMAN_ONLY},
                                    {6, Z_RLE},
                                    {101, 0},
                                    {106, 0},
                                    {112, 0}};
    size_t nl = sizeof levels / sizeof *levels, ns = sizeof sizes / sizeof *sizes;
    int cases = 0;
    for (int round = 0; round < 400; round++) {
        size_t n[2], zn[2];
        for (int s = 0; s < 2; s++) {
            n[s] = round < 100 ? sizes[next() % ns] : 1 + next() % MAXN;
            fill(raw[s], n[s], (int)(next() % 6));
            const int *lv = levels[next() % nl];
            zn[s] = squeeze(raw[s], n[s], lv[0], lv[1], packed[s], sizeof packed[s]);
        }
        if (!zn[0] || !zn[1]) continue;
        cases++;
        CHECKF(pair(p, zn, n) == 0, "round %d: sizes %zu %zu", round, n[0], n[1]);
        CHECKF(memcmp(got[0], raw[0], n[0]) == 0 && memcmp(got[1], raw[1], n[1]) == 0,
               "round %d: wrong bytes", round);
        /* an output of another size: a failure, either way */
        size_t more[2] = {n[0] + 1, n[1]}, less[2] = {n[0], n[1] - 1};
        CHECKF(pair(p, zn, more) == -1, "round %d: one byte too few in the stream", round);
        if (n[1] > 0) CHECKF(pair(p, zn, less) == -1, "round %d: one byte too many", round);
        /* cut short */
        size_t cut[2] = {zn[0], 2 + next() % (zn[1] - 2)};
        CHECKF(pair(p, cut, n) == -1, "round %d: cut at %zu of %zu", round, cut[1], zn[1]);
        /* a byte after the Adler-32: not a whole stream as zlib reads it */
        size_t longer[2] = {zn[0], zn[1] + 1};
        CHECKF(pair(p, longer, n) == -1, "round %d: a byte after the stream", round);
        /* damaged: a failure, or (a flip zlib also reads past) what zlib gives; short
         * streams, mostly their headers (code lengths), flipped many times */
        for (int flip = 0; flip < (zn[0] < 400 ? 40 : 1); flip++) {
            size_t at = next() % zn[0];
            unsigned char bit = (unsigned char)(1u << next() % 8);
            packed[0][at] ^= bit;
            static unsigned char want[MAXN];
            uLongf wn = n[0];
            int zr = uncompress(want, &wn, packed[0], zn[0]);
            if (pair(p, zn, n) == 0)
                CHECKF(zr == Z_OK && wn == n[0] && memcmp(got[0], want, n[0]) == 0,
                       "round %d: a flip at %zu read as something zlib does not read", round, at);
            packed[0][at] ^= bit;
        }
    }
    CHECK(cases > 300);
    /* a preset dictionary (FDICT) is refused */
    size_t n[2] = {1000, 1000}, zn[2];
    fill(raw[0], n[0], 2);
    fill(raw[1], n[1], 2);
    zn[0] = squeeze(raw[0], n[0], 6, Z_DEFAULT_STRATEGY, packed[0], sizeof packed[0]);
    zn[1] = squeeze(raw[1], n[1], 6, Z_DEFAULT_STRATEGY, packed[1], sizeof packed[1]);
    CHECK(pair(p, zn, n) == 0);
    packed[1][1] = (unsigned char)((packed[1][1] & 0xc0) | 0x20); /* and FCHECK made right */
    packed[1][1] |= (unsigned char)((31 - (packed[1][0] << 8 | packed[1][1]) % 31) % 31);
    CHECK(pair(p, zn, n) == -1);
    /* nothing that is not a zlib stream */
    size_t tiny[2] = {zn[0], 3};
    CHECK(pair(p, tiny, n) == -1);
    inflate_pair_free(p);
    return check_exit("test_inflate_pair");
}
