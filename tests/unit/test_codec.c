/* Unit tests of the protocol codec: h5ark_value (MessagePack encode and decode, and the
 * rejection of malformed input), h5ark_frames (buffer lists, payload byte streams across
 * frame boundaries, zero-copy span sending) and the name tables of h5ark_wire. */
#include "check.h"
#include "h5ark_frames.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* ------------------------------------------------------------------ helpers */

/* Structural equality; integers compare by value whatever their kind (a non-negative
 * H5ARK_INT decodes as H5ARK_UINT), floats bit for bit (NaN payloads, -0.0). */
static bool value_equal(const h5ark_value *a, const h5ark_value *b) {
    if (!a || !b) return a == b;
    if (h5ark_value_is_integer(a) && h5ark_value_is_integer(b)) {
        int64_t ia, ib;
        uint64_t ua, ub;
        if (h5ark_value_to_int64(a, &ia) && h5ark_value_to_int64(b, &ib)) return ia == ib;
        if (h5ark_value_to_uint64(a, &ua) && h5ark_value_to_uint64(b, &ub)) return ua == ub;
        return false;
    }
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case H5ARK_NIL: return true;
    case H5ARK_BOOL: return a->as.b == b->as.b;
    case H5ARK_FLOAT: return memcmp(&a->as.f, &b->as.f, sizeof a->as.f) == 0;
    case H5ARK_STR:
    case H5ARK_BIN:
        return a->as.s.len == b->as.s.len && memcmp(a->as.s.ptr, b->as.s.ptr, a->as.s.len) == 0 &&
               a->as.s.ptr[a->as.s.len] == '\0' && b->as.s.ptr[b->as.s.len] == '\0';
    case H5ARK_ARRAY:
        if (a->as.a.len != b->as.a.len) return false;
        for (size_t i = 0; i < a->as.a.len; i++)
            if (!value_equal(a->as.a.items[i], b->as.a.items[i])) return false;
        return true;
    case H5ARK_MAP:
        if (a->as.m.len != b->as.m.len) return false;
        for (size_t i = 0; i < a->as.m.len; i++)
            if (strcmp(a->as.m.keys[i], b->as.m.keys[i]) != 0 ||
                !value_equal(a->as.m.vals[i], b->as.m.vals[i]))
                return false;
        return true;
    default: return false;
    }
}

/* Encode v, decode the bytes, and check the result equals v; also that h5ark_value_pack
 * writes the same bytes. Takes ownership of v. */
#define ROUND_TRIP(v) round_trip((v), __FILE__, __LINE__)
static void round_trip(h5ark_value *v, const char *file, int line) {
    char *data = NULL;
    size_t len = 0;
    if (!v) {
        CHECKF(v != NULL, "constructor failed (from %s:%d)", file, line);
        return;
    }
    int rc = h5ark_value_encode(v, &data, &len);
    CHECKF(rc == 0 && data && len > 0, "encode failed (from %s:%d)", file, line);
    if (rc == 0) {
        const char *why = "unset";
        h5ark_value *back = h5ark_value_decode(data, len, &why);
        CHECKF(back != NULL, "decode failed: %s (from %s:%d)", why ? why : "?", file, line);
        CHECKF(back == NULL || why == NULL, "success left a reason (from %s:%d)", file, line);
        CHECKF(value_equal(v, back), "decoded value differs (from %s:%d)", file, line);
        h5ark_value *copy = h5ark_value_copy(v);
        CHECKF(value_equal(v, copy), "copy differs (from %s:%d)", file, line);

        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        CHECKF(h5ark_value_pack(v, &pk) == 0, "pack failed (from %s:%d)", file, line);
        CHECKF(sb.size == len && memcmp(sb.data, data, len) == 0,
               "pack and encode differ (from %s:%d)", file, line);
        msgpack_sbuffer_destroy(&sb);
        h5ark_value_destroy(&copy);
        h5ark_value_destroy(&back);
    }
    free(data);
    h5ark_value_destroy(&v);
    CHECK(v == NULL);
}

/* Expect h5ark_value_decode to refuse [p, p+n) with a reason. */
#define REJECT(p, n)                                                                               \
    do {                                                                                           \
        const char *why_ = NULL;                                                                   \
        h5ark_value *v_ = h5ark_value_decode((p), (n), &why_);                                     \
        CHECKF(v_ == NULL && why_ != NULL && why_[0] != '\0', "accepted %zu bytes", (size_t)(n));  \
        h5ark_value_destroy(&v_);                                                                  \
    } while (0)
#define REJECT_LIT(lit) REJECT(lit, sizeof(lit) - 1)

static h5ark_value *decode_bytes(const void *p, size_t n) {
    const char *why = NULL;
    h5ark_value *v = h5ark_value_decode(p, n, &why);
    if (!v) fprintf(stderr, "  (decode refused: %s)\n", why ? why : "no reason");
    return v;
}
#define DECODE_LIT(lit) decode_bytes(lit, sizeof(lit) - 1)

/* Check that encoding v gives exactly the bytes of lit. Takes ownership of v. */
#define ENCODES_AS(v, lit) encodes_as((v), lit, sizeof(lit) - 1, __LINE__)
static void encodes_as(h5ark_value *v, const char *want, size_t n, int line) {
    char *data = NULL;
    size_t len = 0;
    int rc = h5ark_value_encode(v, &data, &len);
    CHECKF(rc == 0 && len == n && memcmp(data, want, n) == 0, "encoding differs (line %d)", line);
    free(data);
    h5ark_value_destroy(&v);
}

static h5ark_value *map1(const char *k, h5ark_value *v) {
    h5ark_value *m = h5ark_value_map();
    h5ark_value_set(m, k, v);
    return m;
}

static h5ark_value *array_of(int n, ...) {
    h5ark_value *a = h5ark_value_array();
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        h5ark_value_push(a, va_arg(ap, h5ark_value *));
    va_end(ap);
    return a;
}

/* A value using every kind, nested. */
static h5ark_value *sample_value(void) {
    h5ark_value *m = h5ark_value_map();
    h5ark_value_set(m, "v", h5ark_value_uint(1));
    h5ark_value_set(m, "id", h5ark_value_uint(UINT64_MAX));
    h5ark_value_set(m, "cmd", h5ark_value_str("put"));
    h5ark_value_set(m, "neg", h5ark_value_int(INT64_MIN));
    h5ark_value_set(m, "f", h5ark_value_float(-2.5));
    h5ark_value_set(m, "nil", h5ark_value_nil());
    h5ark_value_set(m, "t", h5ark_value_bool(true));
    h5ark_value_set(m, "bin", h5ark_value_bin("\0\1\2\3", 4));
    h5ark_value *bufs = h5ark_value_array();
    for (int i = 0; i < 3; i++) {
        h5ark_value *b = h5ark_value_map();
        h5ark_value_set(b, "name", h5ark_value_str(i == 0 ? "segments" : "values"));
        h5ark_value_set(b, "nbytes", h5ark_value_uint((uint64_t)i * 70000u));
        h5ark_value_push(bufs, b);
    }
    h5ark_value_set(m, "buffers", bufs);
    h5ark_value_set(m, "args",
                    map1("shape", array_of(2, h5ark_value_uint(300), h5ark_value_int(-40000))));
    return m;
}

static h5ark_value *nest_arrays(int depth) {
    h5ark_value *v = h5ark_value_uint(1);
    for (int i = 0; i < depth; i++) {
        h5ark_value *a = h5ark_value_array();
        h5ark_value_push(a, v);
        v = a;
    }
    return v;
}

static uint64_t rng_next(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t x = *s;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    return x ^ (x >> 33);
}

/* ------------------------------------------------------------------ value round trips */

static void test_round_trips(void) {
    ROUND_TRIP(h5ark_value_nil());
    ROUND_TRIP(h5ark_value_bool(true));
    ROUND_TRIP(h5ark_value_bool(false));
    const int64_t ints[] = {
        -1,        -32, -33, -128,     -129, -32768, -32769, INT32_MIN, (int64_t)INT32_MIN - 1,
        INT64_MIN, 0,   5,   INT64_MAX};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        ROUND_TRIP(h5ark_value_int(ints[i]));
    const uint64_t uints[] = {0,
                              1,
                              127,
                              128,
                              255,
                              256,
                              65535,
                              65536,
                              UINT32_MAX,
                              (uint64_t)UINT32_MAX + 1,
                              (uint64_t)INT64_MAX + 1,
                              UINT64_MAX};
    for (size_t i = 0; i < sizeof uints / sizeof uints[0]; i++)
        ROUND_TRIP(h5ark_value_uint(uints[i]));
    const double floats[] = {0.0, -0.0, 1.5, -2.25, DBL_MAX, DBL_MIN, 5e-324, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        ROUND_TRIP(h5ark_value_float(floats[i]));
    uint64_t nan_bits = 0x7ff8000000000123ULL;
    double nan_payload;
    memcpy(&nan_payload, &nan_bits, sizeof nan_payload);
    ROUND_TRIP(h5ark_value_float(nan_payload));

    ROUND_TRIP(h5ark_value_str(""));
    ROUND_TRIP(h5ark_value_str("ping"));
    ROUND_TRIP(h5ark_value_str("h\xc3\xa9llo w\xc3\xb6rld \xe6\x97\xa5\xe6\x9c\xac"));
    ROUND_TRIP(h5ark_value_strn("a\0b", 3));
    const size_t lens[] = {31, 32, 255, 256, 65535, 65536, 100000};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char *buf = malloc(lens[i]);
        for (size_t k = 0; k < lens[i]; k++)
            buf[k] = (char)('a' + k % 26);
        ROUND_TRIP(h5ark_value_strn(buf, lens[i]));
        for (size_t k = 0; k < lens[i]; k++)
            buf[k] = (char)(k * 7);
        ROUND_TRIP(h5ark_value_bin(buf, lens[i]));
        free(buf);
    }
    ROUND_TRIP(h5ark_value_bin("", 0));
    ROUND_TRIP(h5ark_value_bin("\0\0\0", 3));

    ROUND_TRIP(h5ark_value_array());
    ROUND_TRIP(h5ark_value_map());
    ROUND_TRIP(array_of(3, h5ark_value_nil(), h5ark_value_str("x"), h5ark_value_array()));
    for (int n = 15; n <= 17; n++) { /* fixarray/array16 and fixmap/map16 boundaries */
        h5ark_value *a = h5ark_value_array(), *m = h5ark_value_map();
        for (int i = 0; i < n; i++) {
            char key[16];
            snprintf(key, sizeof key, "k%d", i);
            h5ark_value_push(a, h5ark_value_int(-i));
            h5ark_value_set(m, key, h5ark_value_uint((uint64_t)i));
        }
        ROUND_TRIP(a);
        ROUND_TRIP(m);
    }
    h5ark_value *big = h5ark_value_array();
    for (int i = 0; i < 70000; i++)
        h5ark_value_push(big, h5ark_value_uint((uint64_t)i));
    CHECK(h5ark_value_len(big) == 70000);
    ROUND_TRIP(big); /* array32 */
    ROUND_TRIP(map1("", h5ark_value_nil()));
    ROUND_TRIP(map1("k\xc3\xa9y", map1("inner", array_of(1, map1("deep", h5ark_value_bool(0))))));
    ROUND_TRIP(sample_value());
    ROUND_TRIP(nest_arrays(32));
}

static void test_known_encodings(void) {
    ENCODES_AS(h5ark_value_nil(), "\xc0");
    ENCODES_AS(h5ark_value_bool(false), "\xc2");
    ENCODES_AS(h5ark_value_bool(true), "\xc3");
    ENCODES_AS(h5ark_value_uint(1), "\x01");
    ENCODES_AS(h5ark_value_uint(300), "\xcd\x01\x2c");
    ENCODES_AS(h5ark_value_uint(UINT64_MAX), "\xcf\xff\xff\xff\xff\xff\xff\xff\xff");
    ENCODES_AS(h5ark_value_int(-1), "\xff");
    ENCODES_AS(h5ark_value_int(-33), "\xd0\xdf");
    ENCODES_AS(h5ark_value_int(INT64_MIN), "\xd3\x80\x00\x00\x00\x00\x00\x00\x00");
    ENCODES_AS(h5ark_value_float(1.5), "\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00");
    ENCODES_AS(h5ark_value_str("v"), "\xa1v");
    ENCODES_AS(h5ark_value_bin("ab", 2), "\xc4\x02"
                                         "ab");
    ENCODES_AS(h5ark_value_array(), "\x90");
    ENCODES_AS(map1("v", h5ark_value_uint(1)), "\x81\xa1v\x01");
}

/* Every MessagePack format the protocol uses, decoded from hand-written bytes. */
static void test_decode_formats(void) {
    h5ark_value *v;
    int64_t i;
    uint64_t u;
    double d;
#define DEC_INT(lit, want)                                                                         \
    v = DECODE_LIT(lit);                                                                           \
    CHECKF(v &&h5ark_value_to_int64(v, &i) && i == (want), "%s", #lit);                            \
    h5ark_value_destroy(&v)
#define DEC_UINT(lit, want)                                                                        \
    v = DECODE_LIT(lit);                                                                           \
    CHECKF(v && v->kind == H5ARK_UINT && h5ark_value_to_uint64(v, &u) && u == (want), "%s", #lit); \
    h5ark_value_destroy(&v)
    DEC_UINT("\x00", 0u);
    DEC_UINT("\x7f", 127u);
    DEC_UINT("\xcc\xff", 255u);
    DEC_UINT("\xcd\xff\xff", 65535u);
    DEC_UINT("\xce\xff\xff\xff\xff", 4294967295u);
    DEC_UINT("\xcf\xff\xff\xff\xff\xff\xff\xff\xff", UINT64_MAX);
    DEC_UINT("\xd0\x05", 5u); /* a signed format holding a non-negative value */
    DEC_INT("\xff", -1);
    DEC_INT("\xe0", -32);
    DEC_INT("\xd0\x80", -128);
    DEC_INT("\xd1\x80\x00", -32768);
    DEC_INT("\xd2\x80\x00\x00\x00", INT32_MIN);
    DEC_INT("\xd3\x80\x00\x00\x00\x00\x00\x00\x00", INT64_MIN);
    v = DECODE_LIT("\xd3\x80\x00\x00\x00\x00\x00\x00\x00");
    CHECK(v && v->kind == H5ARK_INT && !h5ark_value_to_uint64(v, &u));
    h5ark_value_destroy(&v);
    v = DECODE_LIT("\xcf\xff\xff\xff\xff\xff\xff\xff\xff");
    CHECK(v && !h5ark_value_to_int64(v, &i) && h5ark_value_to_double(v, &d));
    h5ark_value_destroy(&v);

    v = DECODE_LIT("\xca\x3f\xc0\x00\x00");
    CHECK(v && v->kind == H5ARK_FLOAT && v->as.f == 1.5);
    h5ark_value_destroy(&v);
    v = DECODE_LIT("\xcb\x80\x00\x00\x00\x00\x00\x00\x00");
    CHECK(v && v->kind == H5ARK_FLOAT && v->as.f == 0.0 && signbit(v->as.f));
    h5ark_value_destroy(&v);
    v = DECODE_LIT("\xc0");
    CHECK(v && v->kind == H5ARK_NIL);
    h5ark_value_destroy(&v);
    v = DECODE_LIT("\xc3");
    CHECK(v && v->kind == H5ARK_BOOL && v->as.b);
    h5ark_value_destroy(&v);
    v = DECODE_LIT("\xc2");
    CHECK(v && v->kind == H5ARK_BOOL && !v->as.b);
    h5ark_value_destroy(&v);

    static const struct {
        const char *bytes;
        size_t len;
        h5ark_kind kind;
        const char *text;
    } strs[] = {
        {"\xa2hi", 3, H5ARK_STR, "hi"},
        {"\xd9\x02hi", 4, H5ARK_STR, "hi"},
        {"\xda\x00\x02hi", 5, H5ARK_STR, "hi"},
        {"\xdb\x00\x00\x00\x02hi", 7, H5ARK_STR, "hi"},
        {"\xa0", 1, H5ARK_STR, ""},
        {"\xc4\x02hi", 4, H5ARK_BIN, "hi"},
        {"\xc5\x00\x02hi", 5, H5ARK_BIN, "hi"},
        {"\xc6\x00\x00\x00\x02hi", 7, H5ARK_BIN, "hi"},
        {"\xc4\x00", 2, H5ARK_BIN, ""},
    };
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
        v = decode_bytes(strs[k].bytes, strs[k].len);
        CHECKF(v && v->kind == strs[k].kind && h5ark_value_len(v) == strlen(strs[k].text) &&
                   strcmp(v->as.s.ptr, strs[k].text) == 0,
               "string format %zu", k);
        h5ark_value_destroy(&v);
    }

    static const struct {
        const char *bytes;
        size_t len;
        h5ark_kind kind;
        size_t n;
    } conts[] = {
        {"\x92\x01\x02", 3, H5ARK_ARRAY, 2},
        {"\xdc\x00\x02\x01\x02", 5, H5ARK_ARRAY, 2},
        {"\xdd\x00\x00\x00\x02\x01\x02", 7, H5ARK_ARRAY, 2},
        {"\xdc\x00\x00", 3, H5ARK_ARRAY, 0},
        {"\x81\xa1k\x01", 4, H5ARK_MAP, 1},
        {"\xde\x00\x01\xa1k\x01", 6, H5ARK_MAP, 1},
        {"\xdf\x00\x00\x00\x01\xa1k\x01", 8, H5ARK_MAP, 1},
        {"\x80", 1, H5ARK_MAP, 0},
    };
    for (size_t k = 0; k < sizeof conts / sizeof conts[0]; k++) {
        v = decode_bytes(conts[k].bytes, conts[k].len);
        CHECKF(v && v->kind == conts[k].kind && h5ark_value_len(v) == conts[k].n,
               "container format %zu", k);
        if (v && v->kind == H5ARK_MAP && conts[k].n == 1) {
            CHECKF(h5ark_value_to_uint64(h5ark_value_get(v, "k"), &u) && u == 1, "map %zu", k);
        }
        h5ark_value_destroy(&v);
    }
    /* a map that repeats a key keeps one entry */
    v = DECODE_LIT("\x82\xa1k\x01\xa1k\x02");
    CHECK(v && v->kind == H5ARK_MAP && h5ark_value_len(v) == 1);
    h5ark_value_destroy(&v);
#undef DEC_INT
#undef DEC_UINT
}

/* ------------------------------------------------------------------ malformed input */

static void test_reject_truncated(void) {
    h5ark_value *v = sample_value();
    char *data = NULL;
    size_t len = 0;
    CHECK(h5ark_value_encode(v, &data, &len) == 0);
    for (size_t n = 0; n < len; n++)
        REJECT(data, n);
    h5ark_value *back = decode_bytes(data, len);
    CHECK(value_equal(v, back));
    h5ark_value_destroy(&back);
    free(data);
    h5ark_value_destroy(&v);

    REJECT("", 0);
    REJECT_LIT("\xcc");
    REJECT_LIT("\xcd\x01");
    REJECT_LIT("\xce\x01\x02\x03");
    REJECT_LIT("\xcf\x01\x02\x03\x04\x05\x06\x07");
    REJECT_LIT("\xd3\x01");
    REJECT_LIT("\xca\x3f\xc0");
    REJECT_LIT("\xcb\x3f\xc0\x00\x00");
    REJECT_LIT("\xa5hell");
    REJECT_LIT("\xd9");
    REJECT_LIT("\xda\x00");
    REJECT_LIT("\xdb\x00\x00\x00");
    REJECT_LIT("\xc4");
    REJECT_LIT("\x92\x01");
    REJECT_LIT("\x81\xa1k");
}

static void test_reject_ext_and_reserved(void) {
    REJECT_LIT("\xc1");
    REJECT_LIT("\xd4\x01\x00");
    REJECT_LIT("\xd5\x01\x00\x00");
    REJECT_LIT("\xd6\x01\x00\x00\x00\x00");
    REJECT_LIT("\xd6\xff\x00\x00\x00\x00"); /* the timestamp extension */
    REJECT_LIT("\xd7\x01\x00\x00\x00\x00\x00\x00\x00\x00");
    REJECT_LIT("\xd8\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00");
    REJECT_LIT("\xc7\x01\x05\x00");
    REJECT_LIT("\xc8\x00\x01\x05\x00");
    REJECT_LIT("\xc9\x00\x00\x00\x01\x05\x00");
    REJECT_LIT("\x81\xa1k\xd4\x01\x00");
    REJECT_LIT("\x92\x01\xc1");

    /* from_msgpack on an ext object directly */
    msgpack_object o;
    memset(&o, 0, sizeof o);
    o.type = MSGPACK_OBJECT_EXT;
    o.via.ext.type = 1;
    o.via.ext.size = 0;
    o.via.ext.ptr = "";
    CHECK(h5ark_value_from_msgpack(&o) == NULL);
}

static void test_reject_declared_lengths(void) {
    REJECT_LIT("\xdd\xff\xff\xff\xff\x01");
    REJECT_LIT("\xdd\x00\x00\x00\x03\x01\x02");
    REJECT_LIT("\xdc\xff\xff");
    REJECT_LIT("\xdc\x00\x05\x01\x02");
    REJECT_LIT("\xdf\xff\xff\xff\xff\xa1v\x01");
    REJECT_LIT("\xde\xff\xff\xa1v\x01");
    REJECT_LIT("\x83\xa1v\x01\xa3"
               "cmd\xa4ping");
    REJECT_LIT("\x9f\x01\x02\x03");
    REJECT_LIT("\x8f\xa1k\x01");
    REJECT_LIT("\xdb\xff\xff\xff\xffping");
    REJECT_LIT("\xda\x01\x00ping");
    REJECT_LIT("\xd9\x10ping");
    REJECT_LIT("\xc6\xff\xff\xff\xffping");
    REJECT_LIT("\xc6\x7f\xff\xff\xffping");
    REJECT_LIT("\xc5\x01\x00ping");
    REJECT_LIT("\xc4\x10ping");
    REJECT_LIT("\x82\xa1v\x01\xa3"
               "cmd\xdd\xff\xff\xff\xff\x01");
    /* a declared count of nested empty arrays, each one byte: exactly backed is fine */
    h5ark_value *v = DECODE_LIT("\x93\x90\x90\x90");
    CHECK(v && h5ark_value_len(v) == 3);
    h5ark_value_destroy(&v);
    REJECT_LIT("\x94\x90\x90\x90");
}

static void test_reject_nesting(void) {
    for (int depth = 30; depth <= 40; depth++) {
        size_t n = (size_t)depth + 1;
        char *buf = malloc(n);
        memset(buf, 0x91, (size_t)depth);
        buf[depth] = 0x01;
        const char *why = NULL;
        h5ark_value *v = h5ark_value_decode(buf, n, &why);
        if (depth <= 32) {
            CHECKF(v != NULL, "depth %d refused: %s", depth, why ? why : "?");
            h5ark_value *want = nest_arrays(depth);
            CHECKF(value_equal(v, want), "depth %d decodes wrong", depth);
            h5ark_value_destroy(&want);
        } else {
            CHECKF(v == NULL && why && *why, "depth %d accepted", depth);
        }
        h5ark_value_destroy(&v);
        /* maps: {"k": {"k": ... 1}} */
        char *mbuf = malloc((size_t)depth * 3 + 1);
        for (int k = 0; k < depth; k++)
            memcpy(mbuf + 3 * k, "\x81\xa1k", 3);
        mbuf[3 * depth] = 0x01;
        v = h5ark_value_decode(mbuf, (size_t)depth * 3 + 1, &why);
        CHECKF((v != NULL) == (depth <= 32), "map depth %d: %s", depth, v ? "accepted" : why);
        h5ark_value_destroy(&v);
        free(mbuf);
        free(buf);
    }
    for (size_t depth = 1000; depth <= 1000000; depth *= 10) {
        char *buf = malloc(depth + 1);
        memset(buf, 0x91, depth);
        buf[depth] = 0x01;
        REJECT(buf, depth + 1);
        memset(buf, 0xdc, depth); /* array16 headers, truncated and deep */
        REJECT(buf, depth + 1);
        free(buf);
    }
}

static void test_reject_map_keys(void) {
    REJECT_LIT("\x81\x01\x02");
    REJECT_LIT("\x81\xff\x02");
    REJECT_LIT("\x81\xc0\x01");
    REJECT_LIT("\x81\xc3\x01");
    REJECT_LIT("\x81\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00\x01");
    REJECT_LIT("\x81\x91\x01\x01");
    REJECT_LIT("\x81\x80\x01");
    REJECT_LIT("\x81\xc4\x01k\x01");
    REJECT_LIT("\x81\xa3"
               "a\0b"
               "\x01"); /* a key with a NUL cannot be a C string */
    REJECT_LIT("\x92\x01\x81\x01\x02");
    REJECT_LIT("\x82\xa1k\x01\x05\x02");
    REJECT_LIT("\x81\xa1k\x81\x01\x02");

    msgpack_object_kv kv;
    memset(&kv, 0, sizeof kv);
    kv.key.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
    kv.key.via.u64 = 1;
    kv.val.type = MSGPACK_OBJECT_NIL;
    msgpack_object o;
    memset(&o, 0, sizeof o);
    o.type = MSGPACK_OBJECT_MAP;
    o.via.map.size = 1;
    o.via.map.ptr = &kv;
    CHECK(h5ark_value_from_msgpack(&o) == NULL);
    kv.key.type = MSGPACK_OBJECT_STR;
    kv.key.via.str.ptr = "key";
    kv.key.via.str.size = 3;
    h5ark_value *v = h5ark_value_from_msgpack(&o);
    CHECK(v && v->kind == H5ARK_MAP && h5ark_value_get(v, "key") &&
          h5ark_value_get(v, "key")->kind == H5ARK_NIL);
    h5ark_value_destroy(&v);
}

static void test_reject_trailing(void) {
    REJECT_LIT("\x01\x01");
    REJECT_LIT("\xc0\xc0");
    REJECT_LIT("\x80\x00");
    REJECT_LIT("\x81\xa1v\x01\xc1");
    REJECT_LIT("\x81\xa1v\x01\x81\xa1v\x01");
    REJECT_LIT("\xa1vv");
    char *data = NULL;
    size_t len = 0;
    h5ark_value *v = sample_value();
    CHECK(h5ark_value_encode(v, &data, &len) == 0);
    char *more = malloc(len + 1);
    memcpy(more, data, len);
    more[len] = 0;
    REJECT(more, len + 1);
    free(more);
    free(data);
    h5ark_value_destroy(&v);
}

/* Random byte strings built mostly of type bytes: decoding must never crash, and whatever
 * is accepted must survive a re-encode and decode unchanged. */
static void test_decode_fuzz(void) {
    static const unsigned char alphabet[] = {
        0x00, 0x01, 0x7f, 0x80, 0x81, 0x82, 0x8f, 0x90, 0x91, 0x92, 0x9f, 0xa0, 0xa1, 0xa3, 0xbf,
        0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0,
        0xd3, 0xd4, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff, 'k',  'v'};
    uint64_t seed = 12345;
    int accepted = 0;
    unsigned char buf[48];
    for (int iter = 0; iter < 200000; iter++) {
        size_t n = 1 + rng_next(&seed) % sizeof buf;
        for (size_t k = 0; k < n; k++)
            buf[k] = alphabet[rng_next(&seed) % sizeof alphabet];
        const char *why = NULL;
        h5ark_value *v = h5ark_value_decode(buf, n, &why);
        if (!v) {
            CHECKF(why && *why, "iteration %d refused without a reason", iter);
            continue;
        }
        accepted++;
        char *data = NULL;
        size_t len = 0;
        CHECKF(h5ark_value_encode(v, &data, &len) == 0, "iteration %d", iter);
        h5ark_value *again = decode_bytes(data, len);
        CHECKF(value_equal(v, again), "iteration %d re-decodes differently", iter);
        h5ark_value_destroy(&again);
        free(data);
        h5ark_value_destroy(&v);
    }
    CHECK(accepted > 100);
}

/* ------------------------------------------------------------------ value API */

static void test_value_api(void) {
    h5ark_value *m = h5ark_value_map();
    CHECK(m && m->kind == H5ARK_MAP && h5ark_value_len(m) == 0);
    CHECK(h5ark_value_set(m, "a", h5ark_value_uint(1)) == 0);
    CHECK(h5ark_value_set(m, "b", h5ark_value_str("x")) == 0);
    CHECK(h5ark_value_set(m, "a", h5ark_value_int(-2)) == 0); /* replaces */
    CHECK(h5ark_value_len(m) == 2);
    int64_t i = 0;
    CHECK(h5ark_value_to_int64(h5ark_value_get(m, "a"), &i) && i == -2);
    CHECK(h5ark_value_get(m, "zz") == NULL);
    CHECK(h5ark_value_set(m, "c", NULL) == -1);
    CHECK(h5ark_value_set(m, NULL, h5ark_value_nil()) == -1);
    CHECK(h5ark_value_len(m) == 2);
    for (int k = 0; k < 100; k++) { /* growth */
        char key[16];
        snprintf(key, sizeof key, "key%d", k);
        CHECK(h5ark_value_set(m, key, h5ark_value_uint((uint64_t)k)) == 0);
    }
    CHECK(h5ark_value_len(m) == 102);
    uint64_t u = 0;
    CHECK(h5ark_value_to_uint64(h5ark_value_get(m, "key99"), &u) && u == 99);

    h5ark_value *a = h5ark_value_array();
    CHECK(h5ark_value_push(a, h5ark_value_bool(true)) == 0);
    CHECK(h5ark_value_push(a, NULL) == -1);
    CHECK(h5ark_value_push(m, h5ark_value_nil()) == -1);     /* not an array: item freed */
    CHECK(h5ark_value_set(a, "k", h5ark_value_nil()) == -1); /* not a map: value freed */
    CHECK(h5ark_value_len(a) == 1);
    CHECK(h5ark_value_at(a, 0) && h5ark_value_at(a, 0)->kind == H5ARK_BOOL);
    CHECK(h5ark_value_at(a, 1) == NULL);
    CHECK(h5ark_value_at(m, 0) == NULL);
    CHECK(h5ark_value_get(a, "k") == NULL);
    CHECK(h5ark_value_get(NULL, "k") == NULL);
    CHECK(h5ark_value_len(NULL) == 0);

    h5ark_value *copy = h5ark_value_copy(m);
    CHECK(value_equal(m, copy));
    h5ark_value_set(copy, "a", h5ark_value_uint(7));
    CHECK(h5ark_value_to_int64(h5ark_value_get(m, "a"), &i) && i == -2); /* deep copy */
    CHECK(!value_equal(m, copy));
    CHECK(h5ark_value_copy(NULL) == NULL);
    h5ark_value_destroy(&copy);
    h5ark_value_destroy(&m);
    h5ark_value_destroy(&a);
    CHECK(m == NULL && a == NULL);
    h5ark_value_destroy(&m); /* destroying NULL is fine */
    h5ark_value_destroy(NULL);

    /* typed reads */
    h5ark_value *big = h5ark_value_uint(UINT64_MAX), *neg = h5ark_value_int(-5),
                *f = h5ark_value_float(2.5), *b = h5ark_value_bool(true),
                *s = h5ark_value_strn("ab\0c", 4), *small = h5ark_value_uint(42);
    double d = 0;
    CHECK(!h5ark_value_to_int64(big, &i));
    CHECK(h5ark_value_to_uint64(big, &u) && u == UINT64_MAX);
    CHECK(!h5ark_value_to_uint64(neg, &u));
    CHECK(h5ark_value_to_int64(neg, &i) && i == -5);
    CHECK(h5ark_value_to_double(neg, &d) && d == -5.0);
    CHECK(h5ark_value_to_double(big, &d) && d == 18446744073709551616.0);
    CHECK(h5ark_value_to_int64(small, &i) && i == 42);
    CHECK(!h5ark_value_to_int64(f, &i) && !h5ark_value_to_uint64(f, &u));
    CHECK(h5ark_value_to_double(f, &d) && d == 2.5);
    CHECK(!h5ark_value_to_double(b, &d) && !h5ark_value_to_int64(b, &i));
    CHECK(!h5ark_value_to_double(s, &d) && !h5ark_value_to_int64(NULL, &i));
    CHECK(h5ark_value_is_integer(big) && h5ark_value_is_integer(neg) && !h5ark_value_is_integer(f));
    CHECK(h5ark_value_is_number(f) && h5ark_value_is_number(neg) && !h5ark_value_is_number(b));
    CHECK(!h5ark_value_is_number(NULL) && !h5ark_value_is_integer(NULL));
    CHECK(h5ark_value_len(s) == 4 && s->as.s.ptr[4] == '\0' && s->as.s.ptr[2] == '\0');
    h5ark_value *vals[] = {big, neg, f, b, s, small};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++)
        h5ark_value_destroy(&vals[k]);

    CHECK_STR(h5ark_value_kind_name(H5ARK_NIL), "nil");
    CHECK_STR(h5ark_value_kind_name(H5ARK_BOOL), "bool");
    CHECK_STR(h5ark_value_kind_name(H5ARK_INT), "integer");
    CHECK_STR(h5ark_value_kind_name(H5ARK_UINT), "integer");
    CHECK_STR(h5ark_value_kind_name(H5ARK_FLOAT), "float");
    CHECK_STR(h5ark_value_kind_name(H5ARK_STR), "str");
    CHECK_STR(h5ark_value_kind_name(H5ARK_BIN), "binary");
    CHECK_STR(h5ark_value_kind_name(H5ARK_ARRAY), "array");
    CHECK_STR(h5ark_value_kind_name(H5ARK_MAP), "map");
    CHECK_STR(h5ark_value_kind_name((h5ark_kind)99), "unknown");

    char *data = (char *)"untouched";
    size_t len = 0;
    CHECK(h5ark_value_encode(NULL, &data, &len) == -1);
}

/* ------------------------------------------------------------------ buffer lists */

static h5ark_value *buffer_entry(h5ark_value *name, h5ark_value *nbytes) {
    h5ark_value *b = h5ark_value_map();
    if (name) h5ark_value_set(b, "name", name);
    if (nbytes) h5ark_value_set(b, "nbytes", nbytes);
    return b;
}

#define PARSE_FAILS(list) parse_fails((list), __LINE__)
static void parse_fails(h5ark_value *list, int line) {
    h5ark_buffer_list out;
    memset(&out, 0xab, sizeof out);
    h5ark_error err = {0};
    int rc = h5ark_buffer_list_parse(list, &out, &err);
    CHECKF(rc == -1, "line %d: accepted", line);
    CHECKF(err.code == H5ARK_BAD_REQUEST, "line %d: code %s", line, h5ark_code_name(err.code));
    CHECKF(err.message[0] != '\0', "line %d: no message", line);
    CHECKF(out.count == 0 && out.items == NULL && out.total == 0, "line %d: list left filled",
           line);
    if (rc == 0) h5ark_buffer_list_free(&out);
    h5ark_buffer_list_free(&out); /* freeing a cleared list is harmless */
    h5ark_value_destroy(&list);
}

static void test_buffer_lists(void) {
    h5ark_buffer_list out;
    h5ark_error err = {0};
    CHECK(h5ark_buffer_list_parse(NULL, &out, &err) == 0 && out.count == 0 && out.total == 0);
    h5ark_buffer_list_free(&out);
    h5ark_value *nil = h5ark_value_nil();
    CHECK(h5ark_buffer_list_parse(nil, &out, &err) == 0 && out.count == 0);
    h5ark_buffer_list_free(&out);
    h5ark_value_destroy(&nil);
    h5ark_value *empty = h5ark_value_array();
    CHECK(h5ark_buffer_list_parse(empty, &out, &err) == 0 && out.count == 0 && out.total == 0);
    CHECK(h5ark_buffer_list_find(&out, "values") == NULL);
    h5ark_buffer_list_free(&out);
    h5ark_value_destroy(&empty);

    h5ark_value *list =
        array_of(4, buffer_entry(h5ark_value_str("segments"), h5ark_value_uint(24)),
                 buffer_entry(h5ark_value_str("empty"), h5ark_value_uint(0)),
                 buffer_entry(h5ark_value_str("values"), h5ark_value_int(10)),
                 buffer_entry(h5ark_value_str("big"), h5ark_value_uint(UINT64_MAX - 34)));
    CHECK(h5ark_buffer_list_parse(list, &out, &err) == 0);
    CHECK(out.count == 4 && out.total == UINT64_MAX);
    if (out.count == 4) {
        CHECK_STR(out.items[0].name, "segments");
        CHECK(out.items[0].offset == 0 && out.items[0].nbytes == 24);
        CHECK(out.items[1].offset == 24 && out.items[1].nbytes == 0);
        CHECK(out.items[2].offset == 24 && out.items[2].nbytes == 10);
        CHECK(out.items[3].offset == 34 && out.items[3].nbytes == UINT64_MAX - 34);
    }
    const h5ark_buffer *found = h5ark_buffer_list_find(&out, "values");
    CHECK(found && found->offset == 24 && found->nbytes == 10);
    CHECK(h5ark_buffer_list_find(&out, "value") == NULL);
    h5ark_buffer_list_free(&out);
    CHECK(out.count == 0 && out.items == NULL);
    h5ark_value_destroy(&list);

    PARSE_FAILS(h5ark_value_str("values"));
    PARSE_FAILS(h5ark_value_map());
    PARSE_FAILS(h5ark_value_uint(3));
    PARSE_FAILS(array_of(1, h5ark_value_uint(5)));
    PARSE_FAILS(array_of(1, h5ark_value_nil()));
    PARSE_FAILS(array_of(1, h5ark_value_array()));
    PARSE_FAILS(array_of(1, buffer_entry(h5ark_value_str("values"), NULL)));
    PARSE_FAILS(array_of(1, buffer_entry(NULL, h5ark_value_uint(8))));
    PARSE_FAILS(array_of(1, buffer_entry(NULL, NULL)));
    PARSE_FAILS(array_of(1, buffer_entry(h5ark_value_uint(1), h5ark_value_uint(8))));
    PARSE_FAILS(array_of(1, buffer_entry(h5ark_value_bin("v", 1), h5ark_value_uint(8))));
    PARSE_FAILS(array_of(1, buffer_entry(h5ark_value_str("values"), h5ark_value_int(-8))));
    PARSE_FAILS(array_of(1, buffer_entry(h5ark_value_str("values"), h5ark_value_float(8.0))));
    PARSE_FAILS(array_of(1, buffer_entry(h5ark_value_str("values"), h5ark_value_str("8"))));
    PARSE_FAILS(array_of(1, buffer_entry(h5ark_value_str("values"), h5ark_value_nil())));
    h5ark_value *extra = buffer_entry(h5ark_value_str("values"), h5ark_value_uint(8));
    h5ark_value_set(extra, "dtype", h5ark_value_str("int64"));
    PARSE_FAILS(array_of(1, extra));
    /* a bad entry after good ones: the good ones are released too */
    PARSE_FAILS(array_of(3, buffer_entry(h5ark_value_str("a"), h5ark_value_uint(1)),
                         buffer_entry(h5ark_value_str("b"), h5ark_value_uint(2)),
                         buffer_entry(h5ark_value_str("c"), h5ark_value_int(-1))));
    /* sizes that overflow 64 bits */
    PARSE_FAILS(array_of(2, buffer_entry(h5ark_value_str("a"), h5ark_value_uint(UINT64_MAX)),
                         buffer_entry(h5ark_value_str("b"), h5ark_value_uint(1))));
    PARSE_FAILS(array_of(3, buffer_entry(h5ark_value_str("a"), h5ark_value_uint(1ULL << 63)),
                         buffer_entry(h5ark_value_str("b"), h5ark_value_uint(1ULL << 62)),
                         buffer_entry(h5ark_value_str("c"), h5ark_value_uint(1ULL << 62))));
}

/* ------------------------------------------------------------------ payload streams */

static unsigned char pattern(uint64_t i) {
    return (unsigned char)((i * 7 + i / 251) % 251);
}

/* A payload of frames of the given sizes whose stream holds pattern(0), pattern(1), ... */
static void build_payload(h5ark_payload *p, const size_t *sizes, size_t count) {
    h5ark_payload_init(p);
    uint64_t pos = 0;
    for (size_t f = 0; f < count; f++) {
        zmq_msg_t msg;
        CHECK(zmq_msg_init_size(&msg, sizes[f]) == 0);
        unsigned char *d = zmq_msg_data(&msg);
        for (size_t k = 0; k < sizes[f]; k++)
            d[k] = pattern(pos + k);
        pos += sizes[f];
        CHECK(h5ark_payload_append(p, &msg) == 0);
        CHECK(zmq_msg_size(&msg) == 0); /* ownership moved */
        zmq_msg_close(&msg);
    }
    CHECK(p->count == count && p->total == pos);
}

static bool copy_matches(const h5ark_payload *p, uint64_t off, uint64_t n, unsigned char *dst) {
    memset(dst, 0xee, n + 1);
    if (h5ark_payload_copy(p, off, dst, n) != 0) return false;
    for (uint64_t k = 0; k < n; k++)
        if (dst[k] != pattern(off + k)) return false;
    return dst[n] == 0xee; /* nothing written past the end */
}

static void test_payload_copy(void) {
    static const size_t sizes[] = {1, 0, 5, 1024, 3, 0, 0, 7, 1, 1, 64, 2};
    const size_t nframes = sizeof sizes / sizeof sizes[0];
    h5ark_payload p;
    build_payload(&p, sizes, nframes);
    uint64_t total = p.total;
    unsigned char *dst = malloc(total + 1);
    int bad = 0;
    for (uint64_t off = 0; off <= total; off++)
        for (uint64_t n = 0; off + n <= total; n++)
            if (!copy_matches(&p, off, n, dst)) {
                if (bad++ < 5)
                    CHECKF(0, "copy of %llu bytes at %llu", (unsigned long long)n,
                           (unsigned long long)off);
            }
    CHECKF(bad == 0, "%d bad copies", bad);
    /* out of range */
    CHECK(h5ark_payload_copy(&p, 0, dst, total + 1) == -1);
    CHECK(h5ark_payload_copy(&p, total, dst, 1) == -1);
    CHECK(h5ark_payload_copy(&p, total + 1, dst, 0) == -1);
    CHECK(h5ark_payload_copy(&p, 1, dst, UINT64_MAX) == -1);
    CHECK(h5ark_payload_copy(&p, UINT64_MAX, dst, 2) == -1);
    CHECK(h5ark_payload_copy(&p, total, dst, 0) == 0);
    h5ark_payload_free(&p);
    CHECK(p.count == 0 && p.total == 0 && p.frames == NULL);
    free(dst);

    /* no frames at all, and only empty frames */
    h5ark_payload none;
    h5ark_payload_init(&none);
    unsigned char byte;
    CHECK(h5ark_payload_copy(&none, 0, &byte, 0) == 0);
    CHECK(h5ark_payload_copy(&none, 0, &byte, 1) == -1);
    h5ark_payload_free(&none);
    static const size_t empties[] = {0, 0, 0};
    build_payload(&none, empties, 3);
    CHECK(h5ark_payload_copy(&none, 0, &byte, 0) == 0);
    CHECK(h5ark_payload_copy(&none, 0, &byte, 1) == -1);
    h5ark_payload_free(&none);

    /* many one-byte frames (the frame table grows), and a buffer spanning all of them */
    size_t *ones = malloc(5000 * sizeof *ones);
    for (size_t k = 0; k < 5000; k++)
        ones[k] = k % 3 == 2 ? 0 : 1;
    build_payload(&p, ones, 5000);
    dst = malloc(p.total + 1);
    CHECK(copy_matches(&p, 0, p.total, dst));
    CHECK(copy_matches(&p, 1234, 1000, dst));
    CHECK(copy_matches(&p, p.total - 1, 1, dst));
    h5ark_payload_free(&p);
    free(dst);
    free(ones);
}

typedef struct {
    const h5ark_payload *p;
    uint64_t seed;
    int bad;
} copy_thread_arg;

static void *copy_thread(void *arg) {
    copy_thread_arg *a = arg;
    unsigned char *dst = malloc(a->p->total + 1);
    for (int k = 0; k < 3000; k++) {
        uint64_t off = rng_next(&a->seed) % (a->p->total + 1);
        uint64_t n = rng_next(&a->seed) % (a->p->total - off + 1);
        if (n > 5000) n %= 5000;
        if (!copy_matches(a->p, off, n, dst)) a->bad++;
    }
    free(dst);
    return NULL;
}

static void test_payload_copy_threads(void) {
    size_t sizes[300];
    uint64_t seed = 99;
    for (size_t k = 0; k < 300; k++)
        sizes[k] = rng_next(&seed) % 700;
    h5ark_payload p;
    build_payload(&p, sizes, 300);
    pthread_t th[4];
    copy_thread_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t] = (copy_thread_arg){&p, (uint64_t)t + 1, 0};
        CHECK(pthread_create(&th[t], NULL, copy_thread, &args[t]) == 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        CHECKF(args[t].bad == 0, "thread %d: %d bad copies", t, args[t].bad);
    }
    h5ark_payload_free(&p);
}

/* ------------------------------------------------------------------ span sending */

static int released;
static void on_release(void *arg) {
    (*(int *)arg)++;
}

static void test_send_spans(void) {
    void *ctx = zmq_ctx_new();
    void *tx = zmq_socket(ctx, ZMQ_PAIR), *rx = zmq_socket(ctx, ZMQ_PAIR);
    CHECK(zmq_bind(rx, "inproc://codec-spans") == 0);
    CHECK(zmq_connect(tx, "inproc://codec-spans") == 0);

    size_t big = 2 * H5ARK_FRAME_BYTES + H5ARK_FRAME_BYTES / 2, tail = 10;
    unsigned char *a = malloc(big), *c = malloc(tail);
    for (size_t k = 0; k < big; k++)
        a[k] = pattern(k);
    for (size_t k = 0; k < tail; k++)
        c[k] = pattern(big + k);
    h5ark_span spans[] = {{a, big}, {NULL, 0}, {c, tail}, {NULL, 0}};
    released = 0;
    h5ark_hold *hold = h5ark_hold_new(on_release, &released);
    CHECK(hold != NULL);
    CHECK(h5ark_send_spans(tx, spans, 4, hold, false) == 0);
    h5ark_hold_drop(hold);

    size_t frames = 0, got = 0;
    bool ok = true;
    int more = 1;
    while (more) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, rx, 0) < 0) {
            CHECK(!"receive failed");
            zmq_msg_close(&msg);
            break;
        }
        more = zmq_msg_more(&msg);
        size_t n = zmq_msg_size(&msg);
        CHECKF(n > 0 && n <= H5ARK_FRAME_BYTES, "frame %zu has %zu bytes", frames, n);
        const unsigned char *d = zmq_msg_data(&msg);
        for (size_t k = 0; k < n && ok; k++)
            ok = d[k] == pattern(got + k);
        got += n;
        frames++;
        zmq_msg_close(&msg);
    }
    CHECK(ok);
    CHECK(got == big + tail);
    CHECK(frames == 4); /* three for the big span, one for the tail */

    /* the last span needs several frames: only its last frame ends the message */
    int flag1 = 0;
    hold = h5ark_hold_new(on_release, &flag1);
    h5ark_span rev[] = {{c, tail}, {a, big}, {NULL, 0}};
    CHECK(h5ark_send_spans(tx, rev, 3, hold, false) == 0);
    h5ark_hold_drop(hold);
    frames = got = 0;
    more = 1;
    while (more) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, rx, 0) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        more = zmq_msg_more(&msg);
        got += zmq_msg_size(&msg);
        frames++;
        zmq_msg_close(&msg);
    }
    CHECK(got == big + tail);
    CHECK(frames == 4);

    /* more = true: the last frame keeps ZMQ_SNDMORE, so a final frame can follow */
    int flag2 = 0;
    hold = h5ark_hold_new(on_release, &flag2);
    h5ark_span one[] = {{c, tail}};
    CHECK(h5ark_send_spans(tx, one, 1, hold, true) == 0);
    h5ark_hold_drop(hold);
    CHECK(zmq_send(tx, "end", 3, 0) == 3);
    char buf[16];
    CHECK(zmq_recv(rx, buf, sizeof buf, 0) == (int)tail);
    int rcvmore = 0;
    size_t optlen = sizeof rcvmore;
    zmq_getsockopt(rx, ZMQ_RCVMORE, &rcvmore, &optlen);
    CHECK(rcvmore == 1);
    CHECK(zmq_recv(rx, buf, sizeof buf, 0) == 3 && memcmp(buf, "end", 3) == 0);

    zmq_close(tx);
    zmq_close(rx);
    zmq_ctx_term(ctx);
    CHECK(released == 1); /* released once, after the last frame was done with */
    CHECK(flag1 == 1);
    CHECK(flag2 == 1);
    free(a);
    free(c);

    int flag3 = 0;
    hold = h5ark_hold_new(on_release, &flag3);
    h5ark_hold_drop(hold);
    CHECK(flag3 == 1);
    h5ark_hold_drop(NULL);
}

/* ------------------------------------------------------------------ name tables */

static void test_name_tables(void) {
    static const char *const codes[] = {"ok",           "bad_request",    "unknown_command",
                                        "unauthorized", "not_found",      "already_exists",
                                        "type_error",   "schema_error",   "io_error",
                                        "forbidden",    "resource_limit", "busy",
                                        "internal"};
    CHECK(sizeof codes / sizeof codes[0] == H5ARK_CODE_COUNT);
    for (int c = 0; c < H5ARK_CODE_COUNT; c++) {
        CHECK_STR(h5ark_code_name((h5ark_code)c), codes[c]);
        CHECK(h5ark_code_from_name(codes[c]) == (h5ark_code)c);
    }
    CHECK_STR(h5ark_code_name(H5ARK_CODE_COUNT), "internal");
    CHECK_STR(h5ark_code_name((h5ark_code)-1), "internal");
    CHECK(h5ark_code_from_name("no_such_code") == H5ARK_INTERNAL);
    CHECK(h5ark_code_from_name("") == H5ARK_INTERNAL);
    CHECK(h5ark_code_from_name("BAD_REQUEST") == H5ARK_INTERNAL);

    static const struct {
        const char *name;
        size_t size;
        bool is_signed, is_unsigned, is_float;
    } dtypes[] = {
        {"int8", 1, 1, 0, 0},    {"int16", 2, 1, 0, 0},  {"int32", 4, 1, 0, 0},
        {"int64", 8, 1, 0, 0},   {"uint8", 1, 0, 1, 0},  {"uint16", 2, 0, 1, 0},
        {"uint32", 4, 0, 1, 0},  {"uint64", 8, 0, 1, 0}, {"float32", 4, 0, 0, 1},
        {"float64", 8, 0, 0, 1}, {"bool", 1, 0, 0, 0},   {"str", 1, 0, 0, 0},
        {"bigint", 8, 0, 0, 0},
    };
    CHECK(sizeof dtypes / sizeof dtypes[0] == H5ARK_DTYPE_COUNT);
    for (int t = 0; t < H5ARK_DTYPE_COUNT; t++) {
        h5ark_dtype d = (h5ark_dtype)t, back = H5ARK_DTYPE_COUNT;
        CHECK_STR(h5ark_dtype_name(d), dtypes[t].name);
        CHECKF(h5ark_dtype_from_name(dtypes[t].name, &back) && back == d, "%s", dtypes[t].name);
        CHECKF(h5ark_dtype_size(d) == dtypes[t].size, "%s", dtypes[t].name);
        CHECKF(h5ark_dtype_is_signed(d) == dtypes[t].is_signed, "%s", dtypes[t].name);
        CHECKF(h5ark_dtype_is_unsigned(d) == dtypes[t].is_unsigned, "%s", dtypes[t].name);
        CHECKF(h5ark_dtype_is_float(d) == dtypes[t].is_float, "%s", dtypes[t].name);
    }
    h5ark_dtype d = H5ARK_INT8;
    CHECK(!h5ark_dtype_from_name("float16", &d) && d == H5ARK_INT8);
    CHECK(!h5ark_dtype_from_name("", &d));
    CHECK(!h5ark_dtype_from_name("Int8", &d));
    CHECK(!h5ark_dtype_from_name("int", &d));
    CHECK_STR(h5ark_dtype_name(H5ARK_DTYPE_COUNT), "unknown");
    CHECK(h5ark_dtype_size(H5ARK_DTYPE_COUNT) == 0);

    static const char *const objtypes[] = {"pdarray",     "strings", "arrayview", "segarray",
                                           "categorical", "groupby", "dataframe", "index",
                                           "multiindex",  "awkward"};
    CHECK(sizeof objtypes / sizeof objtypes[0] == H5ARK_OBJTYPE_COUNT);
    for (int t = 0; t < H5ARK_OBJTYPE_COUNT; t++) {
        h5ark_objtype o = H5ARK_OBJTYPE_COUNT;
        CHECK_STR(h5ark_objtype_name((h5ark_objtype)t), objtypes[t]);
        CHECKF(h5ark_objtype_from_name(objtypes[t], &o) && o == (h5ark_objtype)t, "%s",
               objtypes[t]);
    }
    h5ark_objtype o;
    CHECK(!h5ark_objtype_from_name("array", &o));
    CHECK(!h5ark_objtype_from_name("", &o));
    CHECK_STR(h5ark_objtype_name(H5ARK_OBJTYPE_COUNT), "unknown");
}

static void test_errors(void) {
    h5ark_error err = {0};
    CHECK(h5ark_fail(&err, H5ARK_NOT_FOUND, "no object '%s' (%d)", "x", 3) == -1);
    CHECK(err.code == H5ARK_NOT_FOUND);
    CHECK_STR(err.message, "no object 'x' (3)");
    CHECK(h5ark_fail_context(&err, "get %s", "x") == -1);
    CHECK(err.code == H5ARK_NOT_FOUND);
    CHECK_STR(err.message, "get x: no object 'x' (3)");
    CHECK(h5ark_fail(NULL, H5ARK_INTERNAL, "ignored") == -1);
    CHECK(h5ark_fail_context(NULL, "ignored") == -1);
    /* long messages are cut, never overflow */
    char longer[3000];
    memset(longer, 'm', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    h5ark_fail(&err, H5ARK_BAD_REQUEST, "%s", longer);
    CHECK(strlen(err.message) == sizeof err.message - 1);
    h5ark_fail_context(&err, "%s", longer);
    CHECK(strlen(err.message) < sizeof err.message);
    h5ark_fail(&err, H5ARK_BAD_REQUEST, "short");
    h5ark_fail_context(&err, "%s", longer);
    CHECK(strlen(err.message) < sizeof err.message);
}

int main(void) {
    test_round_trips();
    test_known_encodings();
    test_decode_formats();
    test_reject_truncated();
    test_reject_ext_and_reserved();
    test_reject_declared_lengths();
    test_reject_nesting();
    test_reject_map_keys();
    test_reject_trailing();
    test_decode_fuzz();
    test_value_api();
    test_buffer_lists();
    test_payload_copy();
    test_payload_copy_threads();
    test_send_spans();
    test_name_tables();
    test_errors();
    return check_exit("test_codec");
}
