/* libFuzzer target: pack's pair decoder (storage/inflate_pair.h) against zlib. The first
 * byte picks how the two streams are made, the next four their output sizes:
 *   even: the rest, cut in two, are two streams as they come (damaged, foreign, anything);
 *   odd:  the rest, cut in two, are two payloads zlib deflates (level and strategy from the
 *         first byte), then one bit of the pair flipped (where the size bytes say), or none.
 * Whatever the decoder accepts must be exactly what zlib's inflate makes of each stream,
 * with zlib accepting both; a valid pair of the right sizes must be accepted. */
#include "storage/inflate_pair.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_OUT (1u << 16)

static inflate_pair *pair;

/* zlib's inflate of a whole stream into exactly n bytes: 0 when it is that, -1 else. */
static int zlib_exact(const unsigned char *in, size_t in_n, unsigned char *out, size_t n) {
    z_stream z = {0};
    if (inflateInit(&z) != Z_OK) abort();
    unsigned char extra;
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)in_n;
    z.next_out = out;
    z.avail_out = (uInt)n;
    int rc = inflate(&z, Z_FINISH);
    if (rc == Z_BUF_ERROR && z.avail_out == 0) { /* full: is there more? */
        z.next_out = &extra;
        z.avail_out = 1;
        rc = inflate(&z, Z_FINISH);
        if (z.avail_out == 0) rc = Z_DATA_ERROR; /* longer than n */
    }
    bool whole = rc == Z_STREAM_END && z.total_out == n && z.avail_in == 0;
    inflateEnd(&z);
    return whole ? 0 : -1;
}

static size_t deflated(const unsigned char *p, size_t n, int level, int strategy,
                       unsigned char *out, size_t cap) {
    z_stream z = {0};
    if (deflateInit2(&z, level, Z_DEFLATED, 15, 8, strategy) != Z_OK) abort();
    z.next_in = (unsigned char *)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    size_t len = z.total_out;
    deflateEnd(&z);
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 5) return 0;
    if (!pair && !(pair = inflate_pair_new())) abort();
    const unsigned mode = data[0];
    size_t out_n[2] = {(size_t)(data[1] | data[2] << 8), (size_t)(data[3] | data[4] << 8)};
    const size_t flip_at = out_n[0] | out_n[1] << 16;
    data += 5, size -= 5;
    size_t half = size / 2;
    const unsigned char *src[2] = {data, data + half};
    size_t src_n[2] = {half, size - half};
    unsigned char *made[2] = {NULL, NULL};
    const unsigned char *in[2] = {src[0], src[1]};
    size_t in_n[2] = {src_n[0], src_n[1]};
    bool valid = false;
    if (mode & 1) { /* streams zlib made of the payloads, maybe with one bit flipped */
        static const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE,
                                         Z_FIXED};
        int level = (int)((mode >> 1) % 10), strategy = strategies[(mode >> 5) % 5];
        for (int i = 0; i < 2; i++) {
            size_t cap = deflateBound(NULL, (uLong)src_n[i]) + 64;
            if (!(made[i] = malloc(cap))) abort();
            in_n[i] = deflated(src[i], src_n[i], level, strategy, made[i], cap);
            in[i] = made[i];
            out_n[i] = src_n[i]; /* their true sizes */
        }
        valid = true;
        size_t bits = (in_n[0] + in_n[1]) * 8, at = flip_at; /* the size bytes, unused here */
        if ((mode & 6) == 6 && bits) {                       /* a flipped bit, in either stream */
            at %= bits;
            unsigned char *p = at / 8 < in_n[0] ? made[0] + at / 8 : made[1] + at / 8 - in_n[0];
            *p ^= (unsigned char)(1u << (at % 8));
            valid = false;
        }
    }
    if (out_n[0] > MAX_OUT) out_n[0] %= MAX_OUT;
    if (out_n[1] > MAX_OUT) out_n[1] %= MAX_OUT;
    unsigned char *out[2], *want[2];
    for (int i = 0; i < 2; i++) {
        out[i] = malloc(out_n[i] ? out_n[i] : 1);
        want[i] = malloc(out_n[i] ? out_n[i] : 1);
        if (!out[i] || !want[i]) abort();
    }
    int rc = inflate_pair_run(pair, in, in_n, out, out_n);
    if (rc == 0)
        for (int i = 0; i < 2; i++)
            if (zlib_exact(in[i], in_n[i], want[i], out_n[i]) ||
                memcmp(out[i], want[i], out_n[i]) != 0)
                abort();           /* accepted what zlib does not make the same */
    if (valid && rc != 0) abort(); /* refused a valid pair of the right sizes */
    if (valid && (memcmp(out[0], src[0], out_n[0]) || memcmp(out[1], src[1], out_n[1]))) abort();
    for (int i = 0; i < 2; i++) {
        free(out[i]);
        free(want[i]);
        free(made[i]);
    }
    return 0;
}
