/* HDF5's shuffle filter, both ways (shuffle.h). */
#include "shuffle.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#ifdef __SSE2__
/* 8-byte elements 16 at a time: a byte transpose in SSE2 registers (as Blosc's shuffle
 * does), twice as fast as the loop below, which is a tenth of a chunk's time otherwise.
 * Returns the elements done. */
static uint64_t shuffle8(const unsigned char *in, unsigned char *out, uint64_t n) {
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a[8], b[8];
        for (int k = 0; k < 8; k++) { /* elements 2k, 2k+1: bytes of both interleaved */
            a[k] = _mm_loadu_si128((const __m128i *)(const void *)(in + i * 8 + k * 16));
            b[k] = _mm_unpacklo_epi8(a[k], _mm_shuffle_epi32(a[k], 0x4e));
        }
        for (int k = 0; k < 4; k++) {
            a[2 * k] = _mm_unpacklo_epi16(b[2 * k], b[2 * k + 1]);
            a[2 * k + 1] = _mm_unpackhi_epi16(b[2 * k], b[2 * k + 1]);
        }
        for (int k = 0, l = 0; k < 4; k++, l++) {
            if (k == 2) l += 2;
            b[2 * k] = _mm_unpacklo_epi32(a[l], a[l + 2]);
            b[2 * k + 1] = _mm_unpackhi_epi32(a[l], a[l + 2]);
        }
        for (int k = 0; k < 4; k++) { /* byte k of 16 elements */
            a[2 * k] = _mm_unpacklo_epi64(b[k], b[k + 4]);
            a[2 * k + 1] = _mm_unpackhi_epi64(b[k], b[k + 4]);
        }
        for (int k = 0; k < 8; k++)
            _mm_storeu_si128((__m128i *)(void *)(out + k * n + i), a[k]);
    }
    return i;
}
#endif

/* HDF5's shuffle filter: byte j of element i goes to out[j * n + i], so that the like bytes
 * of neighbouring elements sit together, which deflate packs better. */
void shuffle_apply(const unsigned char *in, unsigned char *out, uint64_t n, size_t isz) {
    uint64_t done = 0;
#ifdef __SSE2__
    if (isz == 8) done = shuffle8(in, out, n);
#endif
    for (size_t j = 0; j < isz; j++) {
        unsigned char *o = out + j * n;
        const unsigned char *p = in + j;
        for (uint64_t i = done; i < n; i++)
            o[i] = p[i * isz];
    }
}

#ifdef __SSE2__
/* 8-byte elements 16 at a time, the byte transpose of shuffle8 undone in SSE2
 * registers: each element written whole, once (the loop below writes every cache line of
 * out eight times, and was half of a read's time). Returns the element it stopped at. */
static uint64_t unshuffle8(const unsigned char *in, uint64_t n, uint64_t lo, uint64_t hi,
                           unsigned char *out) {
    uint64_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        __m128i p[8], a[8], b[8];
        for (int j = 0; j < 8; j++) /* byte j of elements i..i+15 */
            p[j] = _mm_loadu_si128((const __m128i *)(const void *)(in + j * n + i));
        for (int k = 0; k < 4; k++) { /* bytes 2k, 2k+1 of elements 0-7, then 8-15 */
            a[2 * k] = _mm_unpacklo_epi8(p[2 * k], p[2 * k + 1]);
            a[2 * k + 1] = _mm_unpackhi_epi8(p[2 * k], p[2 * k + 1]);
        }
        for (int h = 0; h < 2; h++) { /* bytes 0-3, then 4-7, of elements 8h..8h+3, 8h+4.. */
            b[4 * h] = _mm_unpacklo_epi16(a[h], a[2 + h]);
            b[4 * h + 1] = _mm_unpackhi_epi16(a[h], a[2 + h]);
            b[4 * h + 2] = _mm_unpacklo_epi16(a[4 + h], a[6 + h]);
            b[4 * h + 3] = _mm_unpackhi_epi16(a[4 + h], a[6 + h]);
        }
        unsigned char *o = out + (i - lo) * 8;
        for (int g = 0; g < 4; g++) { /* elements 4g..4g+3, whole */
            __m128i x = b[4 * (g / 2) + g % 2], y = b[4 * (g / 2) + 2 + g % 2];
            _mm_storeu_si128((__m128i *)(void *)(o + 32 * g), _mm_unpacklo_epi32(x, y));
            _mm_storeu_si128((__m128i *)(void *)(o + 32 * g + 16), _mm_unpackhi_epi32(x, y));
        }
    }
    return i;
}
#endif

#ifdef __SSE2__
/* 4-byte elements 16 at a time, as unshuffle8 does 8-byte ones. */
static uint64_t unshuffle4(const unsigned char *in, uint64_t n, uint64_t lo, uint64_t hi,
                           unsigned char *out) {
    uint64_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        __m128i p[4], a[4];
        for (int j = 0; j < 4; j++) /* byte j of elements i..i+15 */
            p[j] = _mm_loadu_si128((const __m128i *)(const void *)(in + j * n + i));
        a[0] = _mm_unpacklo_epi8(p[0], p[1]); /* bytes 0, 1 of elements 0-7 */
        a[1] = _mm_unpackhi_epi8(p[0], p[1]); /* of 8-15 */
        a[2] = _mm_unpacklo_epi8(p[2], p[3]); /* bytes 2, 3 of 0-7 */
        a[3] = _mm_unpackhi_epi8(p[2], p[3]);
        unsigned char *o = out + (i - lo) * 4;
        _mm_storeu_si128((__m128i *)(void *)o, _mm_unpacklo_epi16(a[0], a[2]));
        _mm_storeu_si128((__m128i *)(void *)(o + 16), _mm_unpackhi_epi16(a[0], a[2]));
        _mm_storeu_si128((__m128i *)(void *)(o + 32), _mm_unpacklo_epi16(a[1], a[3]));
        _mm_storeu_si128((__m128i *)(void *)(o + 48), _mm_unpackhi_epi16(a[1], a[3]));
    }
    return i;
}
#endif

void shuffle_undo(const unsigned char *in, uint64_t n, size_t isz, uint64_t lo, uint64_t hi,
                  bool shuffled, unsigned char *out) {
    if (!shuffled || isz == 1) {
        memcpy(out, in + lo * isz, (hi - lo) * isz);
        return;
    }
    uint64_t done = lo;
#ifdef __SSE2__
    if (isz == 8) done = unshuffle8(in, n, lo, hi, out);
    if (isz == 4) done = unshuffle4(in, n, lo, hi, out);
#endif
    for (size_t j = 0; j < isz; j++) {
        const unsigned char *p = in + j * n;
        unsigned char *o = out + j;
        for (uint64_t i = done; i < hi; i++)
            o[(i - lo) * isz] = p[i];
    }
}
