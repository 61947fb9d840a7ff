/* Tests of libh5ark against a running daemon: test_h5ark_client ENDPOINT [MODE...].
 * MODE: `basic` (default) round-trips every dtype, strings, large buffers and errors;
 * `hdf` round-trips through tohdf / lshdf / readhdf and globs, probes and removes files; `select`
 * takes, slices, assigns, concatenates and groups by segments; `destructive` ends with clear and
 * shutdown (use a daemon of its own). Prints each failure and exits 1 if there was one. */
#include "h5ark.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures, checks;
static h5ark_error err;
static char prefix[64]; /* makes object names unique per run */

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* expr must succeed */
#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        memset(&err, 0, sizeof err);                                                               \
        int rc_ = (expr);                                                                          \
        CHECK(rc_ == 0, "%s -> %s: %s", #expr, h5ark_code_name(err.code), err.message);            \
    } while (0)

/* expr must fail with code `want` */
#define CHECK_ERR(expr, want)                                                                      \
    do {                                                                                           \
        memset(&err, 0, sizeof err);                                                               \
        int rc_ = (expr);                                                                          \
        CHECK(rc_ == -1 && err.code == (want), "%s -> rc %d, %s: %s (wanted %s)", #expr, rc_,      \
              h5ark_code_name(err.code), err.message, h5ark_code_name(want));                      \
        CHECK(err.message[0] != '\0', "%s failed without a message", #expr);                       \
    } while (0)

static const char *uname(const char *base) {
    static char names[16][128];
    static int next;
    char *n = names[next++ % 16];
    snprintf(n, sizeof names[0], "%s_%s", prefix, base);
    return n;
}

static const char *desc_str(const h5ark_value *obj, const char *key) {
    const h5ark_value *v = h5ark_value_get(obj, key);
    return v && v->kind == H5ARK_STR ? v->as.s.ptr : "";
}

static uint64_t desc_uint(const h5ark_value *obj, const char *key) {
    uint64_t u = UINT64_MAX;
    h5ark_value_to_uint64(h5ark_value_get(obj, key), &u);
    return u;
}

/* ---- numeric dtypes ------------------------------------------------------------------ */

/* Edge values of a dtype as little-endian bytes; returns the element count. */
static size_t edge_values(h5ark_dtype d, unsigned char *out) {
    size_t item = h5ark_dtype_size(d), n = 0;
    if (d == H5ARK_BOOLEAN) {
        static const unsigned char b[] = {1, 0, 1, 1, 0};
        memcpy(out, b, sizeof b);
        return sizeof b;
    }
    if (d == H5ARK_FLOAT64) {
        uint64_t nan_payload = 0x7ff8000000000005ull;
        double nanp;
        memcpy(&nanp, &nan_payload, 8);
        double v[] = {NAN, nanp,  INFINITY, -INFINITY, -0.0,    0.0,
                      1.5, -2.25, DBL_MAX,  -DBL_MAX,  DBL_MIN, 4.9406564584124654e-324};
        memcpy(out, v, sizeof v);
        return sizeof v / sizeof *v;
    }
    if (d == H5ARK_FLOAT32) {
        uint32_t nan_payload = 0x7fc00005u;
        float nanp;
        memcpy(&nanp, &nan_payload, 4);
        float v[] = {NAN,  nanp,   INFINITY, -INFINITY, -0.0f,   0.0f,
                     1.5f, -2.25f, FLT_MAX,  -FLT_MAX,  FLT_MIN, 1.40129846e-45f};
        memcpy(out, v, sizeof v);
        return sizeof v / sizeof *v;
    }
    int bits = (int)item * 8;
    if (h5ark_dtype_is_signed(d)) {
        int64_t max = bits == 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
        int64_t min = -max - 1;
        int64_t v[] = {min, min + 1, -2, -1, 0, 1, 2, max - 1, max};
        for (size_t i = 0; i < sizeof v / sizeof *v; i++, n++)
            memcpy(out + n * item, &v[i], item); /* the low bytes on a little-endian host */
    } else {
        uint64_t max = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
        uint64_t v[] = {0, 1, 2, 0x7f, 0x80, max - 1, max};
        for (size_t i = 0; i < sizeof v / sizeof *v; i++, n++)
            memcpy(out + n * item, &v[i], item);
    }
    return n;
}

static void test_dtypes(h5ark_client_t *c) {
    for (int d = 0; d < H5ARK_STRING; d++) {
        h5ark_dtype dt = (h5ark_dtype)d;
        const char *dn = h5ark_dtype_name(dt);
        unsigned char vals[256];
        size_t n = edge_values(dt, vals), item = h5ark_dtype_size(dt);
        const char *name = uname(dn);
        h5ark_value *obj = NULL;
        CHECK_OK(h5ark_client_put_array(c, dt, n, vals, name, &obj, &err));
        CHECK(strcmp(desc_str(obj, "name"), name) == 0, "put %s: name %s", dn,
              desc_str(obj, "name"));
        CHECK(strcmp(desc_str(obj, "dtype"), dn) == 0, "put %s: dtype %s", dn,
              desc_str(obj, "dtype"));
        CHECK(strcmp(desc_str(obj, "objtype"), "pdarray") == 0, "put %s: objtype", dn);
        CHECK(desc_uint(obj, "size") == n, "put %s: size %" PRIu64, dn, desc_uint(obj, "size"));
        CHECK(desc_uint(obj, "itemsize") == item, "put %s: itemsize", dn);
        h5ark_value_destroy(&obj);

        h5ark_data data;
        CHECK_OK(h5ark_client_get(c, name, 0, H5ARK_END, &data, &err));
        CHECK(data.dtype == dt && data.objtype == H5ARK_PDARRAY, "get %s: type", dn);
        CHECK(data.count == n && data.values_nbytes == n * item, "get %s: %" PRIu64 " elements", dn,
              data.count);
        CHECK(data.values && memcmp(data.values, vals, n * item) == 0,
              "get %s: values differ bitwise", dn);
        h5ark_data_free(&data);

        unsigned char back[256] = {0};
        uint64_t nbytes = 0;
        CHECK_OK(h5ark_client_get_into(c, name, 2, 5, back, sizeof back, &nbytes, NULL, &err));
        CHECK(nbytes == 3 * item && memcmp(back, vals + 2 * item, 3 * item) == 0,
              "get_into %s [2,5): %" PRIu64 " bytes or values differ", dn, nbytes);

        /* an empty array, and an empty range */
        char ebuf[128] = "";
        const char *ename = ebuf;
        CHECK_OK(h5ark_client_put_array(c, dt, 0, NULL, NULL, &obj, &err));
        CHECK(obj && desc_uint(obj, "size") == 0, "put empty %s", dn);
        if (obj) snprintf(ebuf, sizeof ebuf, "%s", desc_str(obj, "name"));
        h5ark_value_destroy(&obj);
        CHECK_OK(h5ark_client_get(c, ename, 0, H5ARK_END, &data, &err));
        CHECK(data.count == 0 && data.values_nbytes == 0, "get empty %s", dn);
        h5ark_data_free(&data);
        CHECK_OK(h5ark_client_get(c, name, 3, 3, &data, &err));
        CHECK(data.count == 0 && data.start == 3, "get %s [3,3)", dn);
        h5ark_data_free(&data);
        CHECK_OK(h5ark_client_delete(c, &ename, 1, NULL, &err));
    }
}

/* ---- large buffers (zero-copy send, many frames each way) ---------------------------- */

static void test_large(h5ark_client_t *c) {
    const uint64_t n = 3 * 1024 * 1024 + 7; /* 24 MiB of int64, not a multiple of a frame */
    const char *name = uname("large");
    int64_t *v = malloc(n * 8);
    for (uint64_t i = 0; i < n; i++)
        v[i] = (int64_t)(i * 2654435761u) ^ -(int64_t)(i & 1);
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, n, v, name, NULL, &err));

    h5ark_data data;
    CHECK_OK(h5ark_client_get(c, name, 0, H5ARK_END, &data, &err));
    CHECK(data.count == n && memcmp(data.values, v, n * 8) == 0, "large get differs");
    h5ark_data_free(&data);

    uint64_t lo = 1000003, hi = 2500001;
    int64_t *part = malloc((hi - lo) * 8);
    uint64_t nbytes = 0;
    CHECK_OK(h5ark_client_get_into(c, name, lo, hi, part, (hi - lo) * 8, &nbytes, NULL, &err));
    CHECK(nbytes == (hi - lo) * 8 && memcmp(part, v + lo, nbytes) == 0,
          "large get_into slice differs");
    CHECK_ERR(h5ark_client_get_into(c, name, lo, hi, part, (hi - lo) * 8 - 1, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
    free(part);

    /* the caller may free its buffer as soon as put returns */
    for (int round = 0; round < 3; round++) {
        int64_t *tmp = malloc(n * 8);
        memcpy(tmp, v, n * 8);
        char nm[128];
        snprintf(nm, sizeof nm, "%s_%d", name, round);
        CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, n, tmp, nm, NULL, &err));
        memset(tmp, 0xab, n * 8);
        free(tmp);
        const char *one = nm;
        CHECK_OK(h5ark_client_get(c, nm, n - 5, n, &data, &err));
        CHECK(data.count == 5 && memcmp(data.values, v + n - 5, 40) == 0, "round %d", round);
        h5ark_data_free(&data);
        CHECK_OK(h5ark_client_delete(c, &one, 1, NULL, &err));
    }
    free(v);
    CHECK_OK(h5ark_client_delete(c, &name, 1, NULL, &err));
}

/* ---- strings ------------------------------------------------------------------------- */

static void check_strings(const h5ark_data *d, const char *const *want, uint64_t n,
                          const char *what) {
    CHECK(d->objtype == H5ARK_STRINGS && d->dtype == H5ARK_STRING, "%s: type", what);
    CHECK(d->count == n, "%s: %" PRIu64 " strings, wanted %" PRIu64, what, d->count, n);
    for (uint64_t i = 0; i < n && i < d->count; i++) {
        size_t len = 0;
        const char *s = h5ark_data_string(d, i, &len);
        CHECK(s && len == strlen(want[i]) && memcmp(s, want[i], len) == 0 && s[len] == '\0',
              "%s: string %" PRIu64 " differs (%zu bytes, wanted %zu)", what, i, len,
              strlen(want[i]));
    }
}

static void test_strings(h5ark_client_t *c) {
    size_t big_n = 70000, huge_n = 3 * 1024 * 1024 + 11;
    char *big = malloc(big_n + 1), *huge = malloc(huge_n + 1);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (char)('a' + i % 26);
    big[big_n] = '\0';
    /* UTF-8 all through a multi-frame string: "é" is two bytes */
    for (size_t i = 0; i + 1 < huge_n; i += 2)
        memcpy(huge + i, "\xc3\xa9", 2);
    huge[huge_n - 1] = 'z';
    huge[huge_n] = '\0';
    const char *strs[] = {"",
                          "a",
                          "héllo wörld",
                          "日本語テキスト",
                          "🎉 emoji",
                          "",
                          "quote\" back\\slash",
                          "tab\tnew\nline",
                          big,
                          "",
                          huge,
                          "last"};
    uint64_t n = sizeof strs / sizeof *strs;
    const char *name = uname("strings");
    h5ark_value *obj = NULL;
    CHECK_OK(h5ark_client_put_strings(c, n, strs, name, &obj, &err));
    CHECK(strcmp(desc_str(obj, "objtype"), "strings") == 0, "strings objtype %s",
          desc_str(obj, "objtype"));
    CHECK(strcmp(desc_str(obj, "dtype"), "str") == 0, "strings dtype %s", desc_str(obj, "dtype"));
    CHECK(desc_uint(obj, "size") == n, "strings size %" PRIu64, desc_uint(obj, "size"));
    h5ark_value_destroy(&obj);

    h5ark_data d;
    CHECK_OK(h5ark_client_get(c, name, 0, H5ARK_END, &d, &err));
    check_strings(&d, strs, n, "get all");
    h5ark_data_free(&d);
    CHECK_OK(h5ark_client_get(c, name, 2, 5, &d, &err));
    check_strings(&d, strs + 2, 3, "get [2,5)");
    CHECK(d.count == 0 || d.segments[0] == 0, "slice segments start at %" PRId64, d.segments[0]);
    h5ark_data_free(&d);
    CHECK_OK(h5ark_client_get(c, name, 9, 11, &d, &err));
    check_strings(&d, strs + 9, 2, "get [9,11)");
    h5ark_data_free(&d);
    CHECK_OK(h5ark_client_get(c, name, 5, 6, &d, &err));
    check_strings(&d, strs + 5, 1, "get [5,6) (one empty string)");
    h5ark_data_free(&d);
    CHECK_OK(h5ark_client_get(c, name, 4, 4, &d, &err));
    CHECK(d.count == 0, "get [4,4)");
    h5ark_data_free(&d);

    /* only empty strings; no strings at all */
    const char *empties[] = {"", "", ""};
    const char *ename = uname("empties");
    CHECK_OK(h5ark_client_put_strings(c, 3, empties, ename, NULL, &err));
    CHECK_OK(h5ark_client_get(c, ename, 0, H5ARK_END, &d, &err));
    check_strings(&d, empties, 3, "empty strings");
    h5ark_data_free(&d);
    const char *zname = uname("nostrings");
    CHECK_OK(h5ark_client_put_strings(c, 0, NULL, zname, NULL, &err));
    CHECK_OK(h5ark_client_get(c, zname, 0, H5ARK_END, &d, &err));
    CHECK(d.count == 0 && d.values_nbytes == 0, "zero strings");
    h5ark_data_free(&d);

    /* the packed form, and a malformed one the daemon must refuse */
    int64_t segs[] = {0, 2, 3};
    CHECK_OK(
        h5ark_client_put_strings_packed(c, 3, segs, "x\0\0yz", 6, uname("packed"), &obj, &err));
    h5ark_value_destroy(&obj);
    /* the packed form holds any bytes: a NUL inside a string is data, its length from the
     * offsets (start, middle, end, alone, empty) */
    const char nul_values[] = "a\0b\0"
                              "\0\0"
                              "\0"
                              "c\0\0"
                              "\0\0\0\0";
    int64_t nul_segs[] = {0, 4, 6, 7, 10};
    const char *nul_name = uname("nuls");
    CHECK_OK(h5ark_client_put_strings_packed(c, 5, nul_segs, nul_values, 14, nul_name, NULL, &err));
    CHECK_OK(h5ark_client_get(c, nul_name, 0, H5ARK_END, &d, &err));
    static const struct {
        const char *bytes;
        size_t len;
    } nul_want[] = {{"a\0b", 3}, {"\0", 1}, {"", 0}, {"c\0", 2}, {"\0\0\0", 3}};
    CHECK(d.count == 5 && d.values_nbytes == 14, "nuls: %" PRIu64 " strings", d.count);
    for (uint64_t i = 0; i < 5 && i < d.count; i++) {
        size_t len = 0;
        const char *s = h5ark_data_string(&d, i, &len);
        CHECK(s && len == nul_want[i].len && memcmp(s, nul_want[i].bytes, len) == 0,
              "nuls: string %" PRIu64 " is %zu bytes, wanted %zu", i, len, nul_want[i].len);
    }
    h5ark_data_free(&d);
    CHECK_OK(h5ark_client_get(c, nul_name, 3, 5, &d, &err));
    CHECK(d.count == 2 && d.values_nbytes == 7 && memcmp(d.values, "c\0\0\0\0\0\0", 7) == 0,
          "nuls [3,5): %" PRIu64 " bytes", d.values_nbytes);
    h5ark_data_free(&d);
    int64_t bad_segs[] = {0, 5, 3};
    CHECK_ERR(h5ark_client_put_strings_packed(c, 3, bad_segs, "x\0\0yz", 6, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
    int64_t no_nul[] = {0, 2};
    CHECK_ERR(h5ark_client_put_strings_packed(c, 2, no_nul, "x\0yz", 4, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
    free(big);
    free(huge);
}

/* ---- create -------------------------------------------------------------------------- */

static void test_create(h5ark_client_t *c) {
    h5ark_value *obj = NULL;
    h5ark_data d;
    h5ark_fill ar = {.fill = "arange",
                     .start = h5ark_num_int(-3),
                     .stop = h5ark_num_int(7),
                     .step = h5ark_num_int(2)};
    const char *name = uname("arange");
    CHECK_OK(h5ark_client_create(c, H5ARK_INT64, H5ARK_SIZE_AUTO, &ar, name, &obj, &err));
    CHECK(desc_uint(obj, "size") == 5, "arange size %" PRIu64, desc_uint(obj, "size"));
    h5ark_value_destroy(&obj);
    CHECK_OK(h5ark_client_get(c, name, 0, H5ARK_END, &d, &err));
    const int64_t want[] = {-3, -1, 1, 3, 5};
    CHECK(d.count == 5 && memcmp(d.values, want, sizeof want) == 0, "arange values");
    h5ark_data_free(&d);

    h5ark_fill full = {.fill = "full", .value = h5ark_num_int(-300)};
    CHECK_OK(h5ark_client_create(c, H5ARK_INT16, 4, &full, uname("full"), NULL, &err));
    CHECK_OK(h5ark_client_get(c, uname("full"), 0, H5ARK_END, &d, &err));
    const int16_t wf[] = {-300, -300, -300, -300};
    CHECK(d.count == 4 && memcmp(d.values, wf, sizeof wf) == 0, "full values");
    h5ark_data_free(&d);

    CHECK_OK(h5ark_client_create(c, H5ARK_FLOAT64, 10, NULL, uname("zeros"), &obj, &err));
    CHECK(strcmp(desc_str(obj, "dtype"), "float64") == 0, "zeros dtype");
    h5ark_value_destroy(&obj);

    h5ark_fill ri = {.fill = "randint",
                     .low = h5ark_num_int(-5),
                     .high = h5ark_num_int(5),
                     .has_seed = true,
                     .seed = 42};
    CHECK_OK(h5ark_client_create(c, H5ARK_INT32, 1000, &ri, uname("ri1"), NULL, &err));
    CHECK_OK(h5ark_client_create(c, H5ARK_INT32, 1000, &ri, uname("ri2"), NULL, &err));
    h5ark_data d2;
    CHECK_OK(h5ark_client_get(c, uname("ri1"), 0, H5ARK_END, &d, &err));
    CHECK_OK(h5ark_client_get(c, uname("ri2"), 0, H5ARK_END, &d2, &err));
    CHECK(d.count == 1000 && d2.count == 1000 && memcmp(d.values, d2.values, 4000) == 0,
          "randint with one seed differs");
    for (uint64_t i = 0; i < d.count; i++) {
        int32_t x = ((int32_t *)d.values)[i];
        if (x < -5 || x >= 5) {
            CHECK(false, "randint value %d outside [-5, 5)", x);
            break;
        }
    }
    h5ark_data_free(&d);
    h5ark_data_free(&d2);

    h5ark_number num;
    CHECK(h5ark_number_parse("-12", &num) && num.kind == H5ARK_NUM_INT && num.as.i == -12, "-12");
    CHECK(h5ark_number_parse("18446744073709551615", &num) && num.kind == H5ARK_NUM_UINT &&
              num.as.u == UINT64_MAX,
          "uint64 max");
    CHECK(h5ark_number_parse("2.5e3", &num) && num.kind == H5ARK_NUM_FLOAT && num.as.f == 2500,
          "2.5e3");
    CHECK(h5ark_number_parse("0x10", &num) && num.as.u == 16, "0x10");
    CHECK(h5ark_number_parse("010", &num) && num.as.u == 10, "010 is decimal");
    CHECK(h5ark_number_parse("true", &num) && num.kind == H5ARK_NUM_BOOL && num.as.b, "true");
    CHECK(!h5ark_number_parse("12abc", &num) && !h5ark_number_parse("", &num), "junk");
}

/* ---- numeric compute ------------------------------------------------------------------ */

/* The int64 elements of `name` (n of them) into out. */
static void get_i64(h5ark_client_t *c, const char *name, int64_t *out, uint64_t n) {
    h5ark_data d;
    memset(out, 0, n * sizeof *out);
    CHECK_OK(h5ark_client_get(c, name, 0, H5ARK_END, &d, &err));
    CHECK(d.count == n && d.dtype == H5ARK_INT64, "%s: %" PRIu64 " %s", name, d.count,
          h5ark_dtype_name(d.dtype));
    if (d.count == n && d.dtype == H5ARK_INT64) memcpy(out, d.values, n * sizeof *out);
    h5ark_data_free(&d);
}

static void test_compute(h5ark_client_t *c) {
    enum { N = 1000 };
    int64_t a[N], b[N], got[N + 1], want[N + 1];
    for (int64_t i = 0; i < N; i++) {
        a[i] = i * 7919 % 2003 - 1000;
        b[i] = i % 13 - 6; /* zeros among them: // and % by 0 give 0 */
    }
    const char *na = uname("ca"), *nb = uname("cb"), *out = uname("cout");
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, N, a, na, NULL, &err));
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, N, b, nb, NULL, &err));
    h5ark_value *obj = NULL;
    CHECK_OK(h5ark_client_binop(c, "//", na, nb, out, &obj, &err));
    CHECK(strcmp(desc_str(obj, "dtype"), "int64") == 0, "// dtype %s", desc_str(obj, "dtype"));
    h5ark_value_destroy(&obj);
    get_i64(c, out, got, N);
    bool same = true;
    for (int i = 0; i < N; i++) {
        int64_t q = b[i] ? a[i] / b[i] - (a[i] % b[i] != 0 && (a[i] < 0) != (b[i] < 0)) : 0;
        same &= got[i] == q;
    }
    CHECK(same, "a // b (floored, 0 for a zero divisor)");
    /* 100 - a, the scalar on the left */
    const char *rev = uname("crev");
    CHECK_OK(
        h5ark_client_binop_scalar(c, "-", na, h5ark_num_int(100), NULL, true, rev, NULL, &err));
    get_i64(c, rev, got, N);
    same = true;
    for (int i = 0; i < N; i++)
        same &= got[i] == 100 - a[i];
    CHECK(same, "100 - a");
    /* a < 0.5 as float64: bool */
    CHECK_OK(
        h5ark_client_binop_scalar(c, "<", na, h5ark_num_float(0.5), NULL, false, NULL, &obj, &err));
    CHECK(strcmp(desc_str(obj, "dtype"), "bool") == 0, "< dtype %s", desc_str(obj, "dtype"));
    h5ark_value_destroy(&obj);

    h5ark_value *r = NULL;
    int64_t sum = 0, mx = a[0];
    uint64_t at = 0;
    for (int i = 0; i < N; i++) {
        sum += a[i];
        if (a[i] > mx) mx = a[i], at = (uint64_t)i;
    }
    CHECK_OK(h5ark_client_reduce(c, na, "sum", &r, &err));
    int64_t v = 0;
    CHECK(h5ark_value_to_int64(h5ark_value_get(r, "value"), &v) && v == sum &&
              strcmp(desc_str(r, "dtype"), "int64") == 0,
          "sum %lld, wanted %lld", (long long)v, (long long)sum);
    h5ark_value_destroy(&r);
    CHECK_OK(h5ark_client_reduce(c, na, "argmax", &r, &err));
    CHECK(desc_uint(r, "value") == at, "argmax %" PRIu64, desc_uint(r, "value"));
    h5ark_value_destroy(&r);

    const char *cs = uname("ccum");
    CHECK_OK(h5ark_client_cumsum(c, na, true, cs, NULL, &err));
    get_i64(c, cs, got, N + 1);
    want[0] = 0;
    for (int i = 0; i < N; i++)
        want[i + 1] = want[i] + a[i];
    CHECK(memcmp(got, want, sizeof want) == 0, "cumsum with the initial 0");

    const char *cf = uname("ccast");
    CHECK_OK(h5ark_client_cast(c, na, H5ARK_FLOAT64, cf, &obj, &err));
    CHECK(strcmp(desc_str(obj, "dtype"), "float64") == 0, "cast dtype");
    h5ark_value_destroy(&obj);
    CHECK_OK(h5ark_client_fill(c, cf, h5ark_num_float(2.5), &obj, &err));
    CHECK(strcmp(desc_str(obj, "name"), cf) == 0, "fill keeps the name");
    h5ark_value_destroy(&obj);
    CHECK_OK(h5ark_client_reduce(c, cf, "sum", &r, &err));
    double f = 0;
    CHECK(h5ark_value_to_double(h5ark_value_get(r, "value"), &f) && f == 2.5 * N, "fill sum %g", f);
    h5ark_value_destroy(&r);

    /* errors */
    CHECK_ERR(h5ark_client_binop(c, "&", cf, na, NULL, NULL, &err), H5ARK_TYPE_ERROR);
    CHECK_ERR(h5ark_client_binop(c, "+", na, uname("nothing"), NULL, NULL, &err), H5ARK_NOT_FOUND);
    CHECK_ERR(h5ark_client_binop(c, "@", na, nb, NULL, NULL, &err), H5ARK_BAD_REQUEST);
    CHECK_ERR(h5ark_client_fill(c, na, h5ark_num_float(2.5), NULL, &err), H5ARK_TYPE_ERROR);
    CHECK_ERR(h5ark_client_reduce(c, na, "median", NULL, &err), H5ARK_BAD_REQUEST);
    CHECK_ERR(h5ark_client_limitbits(c, na, 3, NULL, &err), H5ARK_TYPE_ERROR);
}

/* ---- the generic request and reply accessors ----------------------------------------- */

static void test_reply(h5ark_client_t *c) {
    const int32_t v[] = {7, -8, 9};
    const char *name = uname("reply");
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT32, 3, v, name, NULL, &err));
    h5ark_value *args = h5ark_value_map();
    h5ark_value_set(args, "name", h5ark_value_str(name));
    h5ark_reply_t *r = NULL;
    CHECK_OK(h5ark_client_request(c, "get", args, NULL, 0, &r, &err));
    if (!r) return;
    CHECK(h5ark_reply_ok(r), "reply not ok");
    CHECK(h5ark_reply_error_code(r) == H5ARK_OK, "error code on success");
    CHECK(h5ark_reply_result(r) && h5ark_value_get(h5ark_reply_result(r), "object"),
          "no result.object");
    CHECK(h5ark_reply_buffer_count(r) == 1, "%zu buffers", h5ark_reply_buffer_count(r));
    CHECK(h5ark_reply_buffer_name(r, 0) && strcmp(h5ark_reply_buffer_name(r, 0), "values") == 0,
          "buffer name");
    CHECK(h5ark_reply_buffer_name(r, 1) == NULL, "buffer 1 exists");
    uint64_t nb = 0;
    /* the daemon sends a frame per shard, so three elements may span frames */
    const void *p = h5ark_reply_buffer_data(r, "values", &nb);
    CHECK(nb == 12 && (!p || memcmp(p, v, 12) == 0), "zero-copy buffer");
    int32_t back[3];
    CHECK_OK(h5ark_reply_buffer_copy(r, "values", back, sizeof back, &err));
    CHECK(memcmp(back, v, 12) == 0, "copied buffer");
    CHECK_ERR(h5ark_reply_buffer_copy(r, "values", back, 11, &err), H5ARK_BAD_REQUEST);
    CHECK_ERR(h5ark_reply_buffer_size(r, "nope", &nb, &err), H5ARK_NOT_FOUND);
    CHECK(h5ark_reply_buffer_data(r, "nope", NULL) == NULL, "absent buffer has data");
    h5ark_reply_destroy(&r);
    CHECK(r == NULL, "destroy did not clear the pointer");
    h5ark_reply_destroy(&r); /* no-op */

    /* one element lies in one frame */
    args = h5ark_value_map();
    h5ark_value_set(args, "name", h5ark_value_str(name));
    h5ark_value_set(args, "start", h5ark_value_uint(1));
    h5ark_value_set(args, "stop", h5ark_value_uint(2));
    CHECK_OK(h5ark_client_request(c, "get", args, NULL, 0, &r, &err));
    p = r ? h5ark_reply_buffer_data(r, "values", &nb) : NULL;
    CHECK(p && nb == 4 && memcmp(p, v + 1, 4) == 0, "zero-copy buffer of one element");
    h5ark_reply_destroy(&r);

    /* a failed request still hands back its reply */
    CHECK_ERR(h5ark_client_request(c, "no_such_command", NULL, NULL, 0, &r, &err),
              H5ARK_UNKNOWN_COMMAND);
    CHECK(r && !h5ark_reply_ok(r) && h5ark_reply_error_code(r) == H5ARK_UNKNOWN_COMMAND &&
              strlen(h5ark_reply_error_message(r)) > 0,
          "failed reply accessors");
    h5ark_reply_destroy(&r);

    /* named input buffers through the generic call */
    args = h5ark_value_map();
    h5ark_value *shape = h5ark_value_array();
    h5ark_value_push(shape, h5ark_value_uint(2));
    h5ark_value_set(args, "dtype", h5ark_value_str("uint16"));
    h5ark_value_set(args, "shape", shape);
    const uint16_t u[] = {65535, 1};
    h5ark_buffer_in in = {"values", u, sizeof u};
    CHECK_OK(h5ark_client_request(c, "put", args, &in, 1, &r, &err));
    if (r) CHECK(desc_uint(h5ark_value_get(h5ark_reply_result(r), "object"), "size") == 2, "put");
    h5ark_reply_destroy(&r);
}

/* ---- errors -------------------------------------------------------------------------- */

static void test_errors(h5ark_client_t *c) {
    h5ark_data d;
    const char *missing = uname("does_not_exist");
    CHECK_ERR(h5ark_client_get(c, missing, 0, H5ARK_END, &d, &err), H5ARK_NOT_FOUND);
    CHECK(strstr(err.message, missing) != NULL, "not_found message does not name the object: %s",
          err.message);
    CHECK_ERR(h5ark_client_info(c, &missing, 1, NULL, &err), H5ARK_NOT_FOUND);

    const char *name = uname("exists");
    CHECK_OK(h5ark_client_create(c, H5ARK_UINT8, 3, NULL, name, NULL, &err));
    CHECK_ERR(h5ark_client_create(c, H5ARK_UINT8, 3, NULL, name, NULL, &err), H5ARK_ALREADY_EXISTS);
    CHECK_ERR(h5ark_client_get(c, name, 2, 4, &d, &err), H5ARK_BAD_REQUEST);
    CHECK_ERR(h5ark_client_get(c, name, 3, 2, &d, &err), H5ARK_BAD_REQUEST);
    const char *both[] = {name, missing};
    CHECK_ERR(h5ark_client_delete(c, both, 2, NULL, &err), H5ARK_NOT_FOUND);
    CHECK_OK(h5ark_client_get(c, name, 0, H5ARK_END, &d, &err)); /* all or nothing */
    h5ark_data_free(&d);

    h5ark_fill bad_fill = {.fill = "sparkles"};
    CHECK_ERR(h5ark_client_create(c, H5ARK_INT8, 3, &bad_fill, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
    h5ark_fill full_no_value = {.fill = "full"};
    CHECK_ERR(h5ark_client_create(c, H5ARK_INT8, 3, &full_no_value, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
    CHECK_ERR(h5ark_client_put_array(c, H5ARK_STRING, 1, "x", NULL, NULL, &err), H5ARK_TYPE_ERROR);

    h5ark_value *args = h5ark_value_map();
    h5ark_value_set(args, "bogus", h5ark_value_int(1));
    CHECK_ERR(h5ark_client_request(c, "ping", args, NULL, 0, NULL, &err), H5ARK_BAD_REQUEST);
    CHECK(strstr(err.message, "bogus") != NULL, "bad_request does not name the argument: %s",
          err.message);
    CHECK_ERR(h5ark_client_request(c, "get", h5ark_value_array(), NULL, 0, NULL, &err),
              H5ARK_BAD_REQUEST);

    /* buffer sizes that disagree with the shape */
    args = h5ark_value_map();
    h5ark_value *shape = h5ark_value_array();
    h5ark_value_push(shape, h5ark_value_uint(3));
    h5ark_value_set(args, "dtype", h5ark_value_str("int64"));
    h5ark_value_set(args, "shape", shape);
    int64_t two[2] = {1, 2};
    h5ark_buffer_in in = {"values", two, sizeof two};
    CHECK_ERR(h5ark_client_request(c, "put", args, &in, 1, NULL, &err), H5ARK_BAD_REQUEST);

    /* the client keeps working after errors */
    CHECK_OK(h5ark_client_ping(c, NULL, &err));
}

static void test_info_delete(h5ark_client_t *c) {
    const char *names[] = {uname("i1"), uname("i2")};
    CHECK_OK(h5ark_client_create(c, H5ARK_BOOLEAN, 5, NULL, names[0], NULL, &err));
    CHECK_OK(h5ark_client_create(c, H5ARK_FLOAT32, 6, NULL, names[1], NULL, &err));
    h5ark_value *objs = NULL;
    CHECK_OK(h5ark_client_info(c, names, 2, &objs, &err));
    CHECK(h5ark_value_len(objs) == 2, "info of 2 names gave %zu", h5ark_value_len(objs));
    CHECK(strcmp(desc_str(h5ark_value_at(objs, 0), "name"), names[0]) == 0 &&
              strcmp(desc_str(h5ark_value_at(objs, 1), "name"), names[1]) == 0,
          "info order");
    CHECK(desc_uint(h5ark_value_at(objs, 1), "nbytes") == 24, "float32 nbytes");
    h5ark_value_destroy(&objs);
    CHECK_OK(h5ark_client_info(c, NULL, 0, &objs, &err));
    size_t found = 0;
    for (size_t i = 0; i < h5ark_value_len(objs); i++)
        for (int k = 0; k < 2; k++)
            found += strcmp(desc_str(h5ark_value_at(objs, i), "name"), names[k]) == 0;
    CHECK(found == 2, "info of all lists %zu of the 2", found);
    h5ark_value_destroy(&objs);
    h5ark_value *deleted = NULL;
    CHECK_OK(h5ark_client_delete(c, names, 2, &deleted, &err));
    CHECK(h5ark_value_len(deleted) == 2, "deleted %zu", h5ark_value_len(deleted));
    h5ark_value_destroy(&deleted);
    CHECK_ERR(h5ark_client_info(c, names, 1, NULL, &err), H5ARK_NOT_FOUND);
}

static void test_ping_config(h5ark_client_t *c) {
    double rtt = -1;
    CHECK_OK(h5ark_client_ping(c, &rtt, &err));
    CHECK(rtt > 0 && rtt < 10, "rtt %g", rtt);
    h5ark_value *conf = NULL;
    CHECK_OK(h5ark_client_getconfig(c, &conf, &err));
    CHECK(desc_uint(conf, "protocol") == 1, "protocol %" PRIu64, desc_uint(conf, "protocol"));
    CHECK(desc_uint(conf, "locales") >= 1, "locales");
    CHECK(strlen(desc_str(conf, "version")) > 0, "version");
    h5ark_value_destroy(&conf);
}

/* A fresh client's first request, not a ping, goes after the first-contact ping; error
 * replies and later requests go as ever. */
static void test_first_contact(const char *endpoint) {
    h5ark_client_t *c = h5ark_client_new(endpoint, NULL, &err);
    CHECK(c != NULL, "client_new(%s): %s", endpoint, err.message);
    if (!c) return;
    h5ark_value *objects = NULL;
    CHECK_OK(h5ark_client_info(c, NULL, 0, &objects, &err));
    h5ark_value_destroy(&objects);
    const char *missing = uname("missing");
    CHECK_ERR(h5ark_client_info(c, &missing, 1, NULL, &err), H5ARK_NOT_FOUND);
    CHECK_OK(h5ark_client_info(c, NULL, 0, NULL, &err));
    h5ark_client_destroy(&c);
}

static double seconds_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* No daemon: requests end with io_error at the timeout, also with zero-copy buffers queued;
 * and the first contact gives up at the connect timeout, however long the timeout. */
static void test_unreachable(void) {
    char ep[128];
    snprintf(ep, sizeof ep, "ipc:///tmp/h5ark-nobody-%d.sock", (int)getpid());
    h5ark_client_t *c = h5ark_client_new(ep, "tok", &err);
    CHECK(c != NULL, "client_new(%s): %s", ep, err.message);
    if (!c) return;
    CHECK(h5ark_client_connect_timeout(c) == H5ARK_DEFAULT_CONNECT_TIMEOUT_MS, "connect timeout");
    h5ark_client_set_timeout(c, 300);
    CHECK(h5ark_client_timeout(c) == 300, "timeout");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_ERR(h5ark_client_ping(c, NULL, &err), H5ARK_IO_ERROR);
    /* no first-contact ping: the put itself sends its zero-copy frames and times out */
    h5ark_client_set_connect_timeout(c, -1);
    CHECK(h5ark_client_connect_timeout(c) == -1, "connect timeout");
    size_t n = 4 * 1024 * 1024;
    char *big = malloc(n);
    memset(big, 1, n);
    CHECK_ERR(h5ark_client_put_array(c, H5ARK_UINT8, n, big, NULL, NULL, &err), H5ARK_IO_ERROR);
    free(big);
    double took = seconds_since(&t0);
    CHECK(took < 5, "two timeouts of 0.3 s took %.2f s", took);

    h5ark_client_set_timeout(c, 600000);
    h5ark_client_set_connect_timeout(c, 500);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_ERR(h5ark_client_create(c, H5ARK_INT64, 10, NULL, NULL, NULL, &err), H5ARK_IO_ERROR);
    took = seconds_since(&t0);
    CHECK(took < 10, "a connect timeout of 0.5 s took %.2f s", took);
    CHECK(strstr(err.message, ep) && strstr(err.message, "nothing answered") &&
              strstr(err.message, "0.5 s") && strstr(err.message, "h5arkd running"),
          "message: %s", err.message);
    h5ark_client_destroy(&c);
    CHECK(c == NULL, "destroy did not clear the pointer");
    h5ark_client_destroy(&c);

    CHECK(h5ark_client_new("no-such-transport://x", NULL, &err) == NULL,
          "a bad endpoint was accepted");
    CHECK(err.message[0] != '\0', "bad endpoint: no message");
}

/* ---- HDF5 ---------------------------------------------------------------------------- */

static void test_hdf(h5ark_client_t *c) {
    const int64_t v[] = {5, -4, 3, 0, 1 << 30, -1, 7};
    const char *strs[] = {"α", "", "βγ", "plain", "last one"};
    const char *names[] = {uname("h_ints"), uname("h_strs")};
    const char *datasets[] = {"ints", "strs"};
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 7, v, names[0], NULL, &err));
    CHECK_OK(h5ark_client_put_strings(c, 5, strs, names[1], NULL, &err));
    char path[128];
    snprintf(path, sizeof path, "%s_c.h5", prefix);
    h5ark_value *result = NULL;
    CHECK_OK(h5ark_client_tohdf(c, names, 2, datasets, path, "truncate", "single", &result, &err));
    const h5ark_value *files = h5ark_value_get(result, "files");
    CHECK(h5ark_value_len(files) == 1, "single file type wrote %zu files", h5ark_value_len(files));
    h5ark_value_destroy(&result);

    /* truncating again names the overwritten file in the warnings */
    CHECK_OK(h5ark_client_tohdf(c, names, 2, datasets, path, NULL, "single", NULL, &err));
    CHECK(h5ark_value_len(h5ark_client_warnings(c)) >= 1, "no warning about the overwrite");

    CHECK_OK(h5ark_client_lshdf(c, path, false, &result, &err));
    const h5ark_value *entries = h5ark_value_get(result, "entries");
    int seen = 0;
    for (size_t i = 0; i < h5ark_value_len(entries); i++) {
        const char *nm = desc_str(h5ark_value_at(entries, i), "name");
        seen += strcmp(nm, "ints") == 0 || strcmp(nm, "strs") == 0;
    }
    CHECK(seen == 2, "lshdf lists %d of ints, strs", seen);
    h5ark_value_destroy(&result);

    /* every tohdf option: gzip at level 6 makes chunked, shuffled, deflated datasets */
    char gz[128];
    snprintf(gz, sizeof gz, "%s_gz.h5", prefix);
    h5ark_tohdf_opts gzip = {.file_type = "single", .compression = "gzip", .compression_level = 6};
    CHECK_OK(h5ark_client_tohdf_opts(c, names, 1, datasets, gz, &gzip, NULL, &err));
    CHECK_OK(h5ark_client_lshdf(c, gz, false, &result, &err));
    const h5ark_value *e0 = h5ark_value_at(h5ark_value_get(result, "entries"), 0);
    const h5ark_value *filters = h5ark_value_get(e0, "filters");
    CHECK(strcmp(desc_str(e0, "storage"), "chunked") == 0 && h5ark_value_len(filters) == 2 &&
              strcmp(h5ark_value_at(filters, 0)->as.s.ptr, "shuffle") == 0 &&
              strcmp(h5ark_value_at(filters, 1)->as.s.ptr, "gzip") == 0,
          "gzip tohdf made storage %s with %zu filters", desc_str(e0, "storage"),
          h5ark_value_len(filters));
    h5ark_value_destroy(&result);
    gzip.compression_level = 12;
    CHECK_ERR(h5ark_client_tohdf_opts(c, names, 1, datasets, gz, &gzip, NULL, &err),
              H5ARK_BAD_REQUEST);

    /* strings without offsets: the group holds `values` alone, and reads back by the NULs */
    char noseg[128];
    snprintf(noseg, sizeof noseg, "%s_noseg.h5", prefix);
    h5ark_tohdf_opts bare = {.file_type = "single", .strings_without_segments = 1};
    CHECK_OK(h5ark_client_tohdf_opts(c, names + 1, 1, datasets + 1, noseg, &bare, NULL, &err));
    CHECK_OK(h5ark_client_lshdf(c, noseg, true, &result, &err));
    entries = h5ark_value_get(result, "entries");
    int segs = 0, vals = 0;
    for (size_t i = 0; i < h5ark_value_len(entries); i++) {
        const char *p = desc_str(h5ark_value_at(entries, i), "path");
        segs += strstr(p, "segments") != NULL;
        vals += strstr(p, "values") != NULL;
    }
    CHECK(segs == 0 && vals == 1, "strings without segments: %d segments, %d values", segs, vals);
    h5ark_value_destroy(&result);
    const char *nopaths[] = {noseg};
    CHECK_OK(h5ark_client_readhdf(c, nopaths, 1, NULL, 0, NULL, &result, &err));
    const h5ark_value *nos = h5ark_value_get(h5ark_value_get(result, "objects"), "strs");
    CHECK(nos != NULL, "readhdf of strings without segments lacks strs");
    if (nos) {
        h5ark_data nd;
        CHECK_OK(h5ark_client_get(c, desc_str(nos, "name"), 0, H5ARK_END, &nd, &err));
        check_strings(&nd, strs, 5, "strings without segments after the round trip");
        h5ark_data_free(&nd);
    }
    h5ark_value_destroy(&result);

    const char *paths[] = {path};
    CHECK_OK(h5ark_client_readhdf(c, paths, 1, NULL, 0, NULL, &result, &err));
    const h5ark_value *objects = h5ark_value_get(result, "objects");
    const h5ark_value *ints = h5ark_value_get(objects, "ints");
    const h5ark_value *sobj = h5ark_value_get(objects, "strs");
    CHECK(ints && sobj, "readhdf objects lack ints or strs");
    h5ark_data d;
    if (ints) {
        CHECK_OK(h5ark_client_get(c, desc_str(ints, "name"), 0, H5ARK_END, &d, &err));
        CHECK(d.count == 7 && d.dtype == H5ARK_INT64 && memcmp(d.values, v, sizeof v) == 0,
              "ints after the HDF5 round trip");
        h5ark_data_free(&d);
    }
    if (sobj) {
        CHECK_OK(h5ark_client_get(c, desc_str(sobj, "name"), 0, H5ARK_END, &d, &err));
        check_strings(&d, strs, 5, "strings after the HDF5 round trip");
        h5ark_data_free(&d);
    }
    h5ark_value_destroy(&result);

    const char *only[] = {"strs"};
    CHECK_OK(h5ark_client_readhdf(c, paths, 1, only, 1, NULL, &result, &err));
    objects = h5ark_value_get(result, "objects");
    CHECK(h5ark_value_len(objects) == 1 && h5ark_value_get(objects, "strs"),
          "readhdf of one dataset gave %zu objects", h5ark_value_len(objects));
    h5ark_value_destroy(&result);

    /* ExeTera: a dataframe of two fields, one more written in two parts and completed */
    char ex[128];
    snprintf(ex, sizeof ex, "%s_ex.hdf5", prefix);
    h5ark_tohdf_opts exetera = {.format = "exetera", .group = "people"};
    CHECK_OK(h5ark_client_tohdf_opts(c, names, 2, datasets, ex, &exetera, NULL, &err));
    CHECK_OK(h5ark_client_writepart(c, ex, "people/parts", names[0], NULL, NULL, &err));
    CHECK_OK(h5ark_client_writepart(c, ex, "people/parts", names[0], NULL, &result, &err));
    CHECK(desc_uint(result, "rows") == 14, "two parts of 7 rows made %lld",
          (long long)desc_uint(result, "rows"));
    h5ark_value_destroy(&result);
    CHECK_ERR(h5ark_client_writepart(c, ex, "people/parts", names[1], NULL, NULL, &err),
              H5ARK_TYPE_ERROR);
    CHECK_ERR(h5ark_client_writepart(c, ex, "noslash", names[0], NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
    CHECK_OK(h5ark_client_complete(c, ex, "people/parts", &result, &err));
    CHECK(desc_uint(result, "rows") == 14, "complete reports %lld rows",
          (long long)desc_uint(result, "rows"));
    h5ark_value_destroy(&result);
    CHECK_ERR(h5ark_client_complete(c, ex, "people/none", NULL, &err), H5ARK_NOT_FOUND);
    const char *expaths[] = {ex};
    const char *exfields[] = {"people/strs", "people/parts"};
    CHECK_OK(h5ark_client_readhdf(c, expaths, 1, exfields, 2, NULL, &result, &err));
    objects = h5ark_value_get(result, "objects");
    const h5ark_value *parts = h5ark_value_get(objects, "people/parts");
    CHECK(parts && desc_uint(parts, "size") == 14, "the parts read back as %lld rows",
          parts ? (long long)desc_uint(parts, "size") : -1LL);
    const h5ark_value *exstrs = h5ark_value_get(objects, "people/strs");
    if (exstrs) {
        CHECK_OK(h5ark_client_get(c, desc_str(exstrs, "name"), 0, H5ARK_END, &d, &err));
        check_strings(&d, strs, 5, "strings after the ExeTera round trip");
        h5ark_data_free(&d);
    }
    h5ark_value_destroy(&result);

    const char *nofile[] = {"no_such_file.h5"};
    CHECK_ERR(h5ark_client_readhdf(c, nofile, 1, NULL, 0, NULL, NULL, &err), H5ARK_NOT_FOUND);
    CHECK_ERR(h5ark_client_lshdf(c, "../outside.h5", false, NULL, &err), H5ARK_FORBIDDEN);
    CHECK_ERR(h5ark_client_tohdf(c, names, 1, NULL, "/tmp/abs.h5", NULL, NULL, NULL, &err),
              H5ARK_FORBIDDEN);
}

/* Delete what this run made, so a shared daemon is left as it was found. */
/* glob, filetype, fileformat and rmhdf on a distributed set this writes and removes */
static void test_files(h5ark_client_t *c) {
    char a[128], path[128], pattern[160];
    snprintf(a, sizeof a, "%s", uname("files_a"));
    snprintf(path, sizeof path, "%s_set.h5", prefix);
    snprintf(pattern, sizeof pattern, "%s_set*", prefix);
    const int64_t v[] = {1, 2, 3, 4, 5};
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 5, v, a, NULL, &err));
    const char *names[] = {a};
    CHECK_OK(h5ark_client_tohdf(c, names, 1, NULL, path, NULL, "distribute", NULL, &err));
    const char *pats[] = {pattern};
    h5ark_value *files = NULL, *result = NULL;
    CHECK_OK(h5ark_client_glob(c, pats, 1, &files, &err));
    size_t nfiles = h5ark_value_len(files);
    CHECK(nfiles >= 1, "glob found %zu files", nfiles);
    for (size_t i = 0; i < nfiles; i++)
        CHECK(strstr(h5ark_value_at(files, i)->as.s.ptr, "_LOCALE") != NULL, "glob file %s",
              h5ark_value_at(files, i)->as.s.ptr);
    h5ark_value_destroy(&files);
    CHECK_OK(h5ark_client_filetype(c, path, &result, &err));
    CHECK(strcmp(desc_str(result, "type"), "hdf5") == 0, "filetype %s", desc_str(result, "type"));
    h5ark_value_destroy(&result);
    CHECK_OK(h5ark_client_fileformat(c, path, &result, &err));
    CHECK(strcmp(desc_str(result, "file_format"), "distribute") == 0, "fileformat %s",
          desc_str(result, "file_format"));
    h5ark_value_destroy(&result);
    h5ark_value *deleted = NULL;
    CHECK_OK(h5ark_client_rmhdf(c, path, &deleted, &err));
    CHECK(h5ark_value_len(deleted) == nfiles, "rmhdf deleted %zu of %zu", h5ark_value_len(deleted),
          nfiles);
    h5ark_value_destroy(&deleted);
    CHECK_ERR(h5ark_client_glob(c, pats, 1, NULL, &err), H5ARK_NOT_FOUND);
    CHECK_ERR(h5ark_client_filetype(c, "../outside.h5", NULL, &err), H5ARK_FORBIDDEN);
}

/* ---- selection and segments ----------------------------------------------------------- */

/* The int64 values of object `name` equal want[0..n). */
static bool int64s_are(h5ark_client_t *c, const char *name, const int64_t *want, size_t n) {
    h5ark_data d;
    memset(&err, 0, sizeof err);
    if (h5ark_client_get(c, name, 0, H5ARK_END, &d, &err)) return false;
    bool same = d.count == n && d.dtype == H5ARK_INT64 && memcmp(d.values, want, n * 8) == 0;
    h5ark_data_free(&d);
    return same;
}

/* The strings of object `name` equal want[0..n). */
static bool strings_are(h5ark_client_t *c, const char *name, const char *const *want, size_t n) {
    h5ark_data d;
    memset(&err, 0, sizeof err);
    if (h5ark_client_get(c, name, 0, H5ARK_END, &d, &err)) return false;
    bool same = d.count == n;
    for (size_t i = 0; same && i < n; i++) {
        size_t len;
        const char *s = h5ark_data_string(&d, i, &len);
        same = len == strlen(want[i]) && memcmp(s, want[i], len) == 0;
    }
    h5ark_data_free(&d);
    return same;
}

/* compare, split, concatenate and random_strings of strings */
static void test_strings_compute(h5ark_client_t *c) {
    const char *a[] = {"x,y", "", "a,,b", "x,y"}, *b[] = {"x,y", "", "a,b", "q"};
    char na[128], nb[128];
    snprintf(na, sizeof na, "%s", uname("so_a"));
    snprintf(nb, sizeof nb, "%s", uname("so_b"));
    CHECK_OK(h5ark_client_put_strings(c, 4, a, na, NULL, &err));
    CHECK_OK(h5ark_client_put_strings(c, 4, b, nb, NULL, &err));
    h5ark_value *obj = NULL;
    CHECK_OK(h5ark_client_compare(c, na, "==", nb, NULL, 0, &obj, &err));
    h5ark_data d;
    CHECK_OK(h5ark_client_get(c, desc_str(obj, "name"), 0, H5ARK_END, &d, &err));
    CHECK(d.count == 4 && d.dtype == H5ARK_BOOLEAN &&
              memcmp(d.values, (const uint8_t[]){1, 1, 0, 0}, 4) == 0,
          "compare ==");
    h5ark_data_free(&d);
    h5ark_value_destroy(&obj);
    CHECK_OK(h5ark_client_compare(c, na, "!=", NULL, "x,y", 3, &obj, &err));
    CHECK_OK(h5ark_client_get(c, desc_str(obj, "name"), 0, H5ARK_END, &d, &err));
    CHECK(d.count == 4 && memcmp(d.values, (const uint8_t[]){0, 1, 1, 0}, 4) == 0,
          "compare != text");
    h5ark_data_free(&d);
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_compare(c, na, "<", nb, NULL, 0, NULL, &err), H5ARK_BAD_REQUEST);

    h5ark_value *res = NULL;
    CHECK_OK(h5ark_client_split(c, na, ",", 0, true, NULL, &res, &err));
    const char *pieces[] = {"x", "y", "", "a", "", "b", "x", "y"};
    CHECK(strings_are(c, desc_str(h5ark_value_get(res, "object"), "name"), pieces, 8), "split");
    CHECK(int64s_are(c, desc_str(h5ark_value_get(res, "segments"), "name"),
                     (const int64_t[]){0, 2, 3, 6}, 4),
          "split segments");
    h5ark_value_destroy(&res);
    CHECK_ERR(h5ark_client_split(c, na, "", 0, false, NULL, NULL, &err), H5ARK_BAD_REQUEST);

    const char *both[] = {na, nb};
    CHECK_OK(h5ark_client_concatenate(c, both, 2, NULL, &obj, &err));
    const char *ab[] = {"x,y", "", "a,,b", "x,y", "x,y", "", "a,b", "q"};
    CHECK(strings_are(c, desc_str(obj, "name"), ab, 8), "concatenate strings");
    h5ark_value_destroy(&obj);

    CHECK_OK(h5ark_client_random_strings(c, 20, "numeric", "uniform", 2, 3, 9, NULL, &obj, &err));
    CHECK_OK(h5ark_client_get(c, desc_str(obj, "name"), 0, H5ARK_END, &d, &err));
    bool digits = d.count == 20;
    for (uint64_t i = 0; digits && i < d.count; i++) {
        size_t len;
        const char *s = h5ark_data_string(&d, i, &len);
        digits = len == 2 && s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9';
    }
    CHECK(digits, "random_strings: 20 strings of two digits");
    h5ark_data_free(&d);
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_random_strings(c, 3, "greek", "uniform", 0, 2, -1, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
}

/* bigint_arange, bigint_limbs and bigint_from_limbs */
static void test_bigint_compute(h5ark_client_t *c) {
    h5ark_value *obj = NULL, *res = NULL;
    /* 2^64 + 5, + 7 ... below 2^64 + 40: 5 values of two limbs */
    CHECK_OK(h5ark_client_bigint_arange(c, "18446744073709551621", "18446744073709551656", "7",
                                        NULL, &obj, &err));
    CHECK(desc_uint(obj, "size") == 5, "bigint_arange size %" PRIu64, desc_uint(obj, "size"));
    CHECK_OK(h5ark_client_bigint_limbs(c, desc_str(obj, "name"), &res, &err));
    const h5ark_value *limbs = h5ark_value_get(res, "limbs");
    CHECK(h5ark_value_len(limbs) == 2, "two limbs, not %zu", h5ark_value_len(limbs));
    if (h5ark_value_len(limbs) == 2) {
        h5ark_data d;
        CHECK_OK(h5ark_client_get(c, desc_str(h5ark_value_at(limbs, 0), "name"), 0, H5ARK_END, &d,
                                  &err));
        const uint64_t lo[] = {5, 12, 19, 26, 33};
        CHECK(d.count == 5 && memcmp(d.values, lo, sizeof lo) == 0, "limb 0");
        h5ark_data_free(&d);
        const char *both[] = {desc_str(h5ark_value_at(limbs, 1), "name"),
                              desc_str(h5ark_value_at(limbs, 0), "name")};
        h5ark_value *again = NULL;
        CHECK_OK(h5ark_client_bigint_from_limbs(c, both, 2, 64, NULL, &again, &err));
        CHECK(strcmp(desc_str(again, "dtype"), "bigint") == 0, "bigint_from_limbs dtype");
        h5ark_value_destroy(&again);
    }
    h5ark_value_destroy(&res);
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_bigint_arange(c, "-1", "5", NULL, NULL, NULL, &err), H5ARK_BAD_REQUEST);
    /* zeros, a[1] = 2^64 + 1, then a * 2 + 1 (bigint_full, bigint_assign, bigint_binop) */
    const int64_t one[] = {1};
    char at[128], big[128];
    snprintf(at, sizeof at, "%s", uname("big_at"));
    snprintf(big, sizeof big, "%s", uname("big_z"));
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 1, one, at, NULL, &err));
    CHECK_OK(h5ark_client_bigint_full(c, 3, NULL, -1, big, NULL, &err));
    CHECK_OK(h5ark_client_bigint_assign(c, big, at, "18446744073709551617", NULL, &err));
    CHECK_OK(h5ark_client_bigint_binop(c, "*", big, NULL, "2", false, NULL, &obj, &err));
    h5ark_value *sum = NULL;
    CHECK_ERR(h5ark_client_bigint_binop(c, "-", desc_str(obj, "name"), NULL, "1", false, NULL, NULL,
                                        &err),
              H5ARK_TYPE_ERROR); /* 0 - 1: negative, and bigints here are unsigned */
    CHECK_OK(h5ark_client_bigint_binop(c, "+", desc_str(obj, "name"), NULL, "1", false, NULL, &sum,
                                       &err));
    CHECK_OK(h5ark_client_bigint_limbs(c, desc_str(sum, "name"), &res, &err));
    limbs = h5ark_value_get(res, "limbs");
    CHECK(h5ark_value_len(limbs) == 2, "2 (2^64 + 1) + 1 has two limbs");
    if (h5ark_value_len(limbs) == 2) { /* 2^65 + 3: limbs {3, 2} at row 1 */
        h5ark_data d;
        CHECK_OK(h5ark_client_get(c, desc_str(h5ark_value_at(limbs, 1), "name"), 0, H5ARK_END, &d,
                                  &err));
        CHECK(d.count == 3 && ((const uint64_t *)d.values)[1] == 2, "limb 1 of row 1");
        h5ark_data_free(&d);
    }
    h5ark_value_destroy(&res);
    h5ark_value_destroy(&sum);
    h5ark_value_destroy(&obj);
    CHECK_OK(h5ark_client_bigint_fill(c, big, "36893488147419103232", NULL, &err)); /* 2^65 */
    CHECK_OK(h5ark_client_bigint_limbs(c, big, &res, &err));
    CHECK(h5ark_value_len(h5ark_value_get(res, "limbs")) == 2, "2^65 in two limbs");
    h5ark_value_destroy(&res);
}

static void test_select(h5ark_client_t *c) {
    char a[128], pos[128], mask[128], out[128], vals[128];
    snprintf(a, sizeof a, "%s", uname("sel_a"));
    snprintf(pos, sizeof pos, "%s", uname("sel_pos"));
    snprintf(mask, sizeof mask, "%s", uname("sel_mask"));
    snprintf(out, sizeof out, "%s", uname("sel_out"));
    snprintf(vals, sizeof vals, "%s", uname("sel_vals"));
    int64_t v[10];
    for (int i = 0; i < 10; i++)
        v[i] = 3 * i;
    const int64_t p[] = {3, -1, 3};
    const uint8_t m[] = {1, 0, 0, 1, 0, 0, 0, 0, 0, 1};
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 10, v, a, NULL, &err));
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 3, p, pos, NULL, &err));
    CHECK_OK(h5ark_client_put_array(c, H5ARK_BOOLEAN, 10, m, mask, NULL, &err));
    h5ark_value *obj = NULL;
    CHECK_OK(h5ark_client_take(c, a, pos, out, &obj, &err));
    CHECK(desc_uint(obj, "size") == 3, "take size %" PRIu64, desc_uint(obj, "size"));
    h5ark_value_destroy(&obj);
    CHECK(int64s_are(c, out, (const int64_t[]){9, 27, 9}, 3), "take by positions");
    CHECK_OK(h5ark_client_take(c, a, mask, NULL, &obj, &err));
    CHECK(int64s_are(c, desc_str(obj, "name"), (const int64_t[]){0, 9, 27}, 3), "take by mask");
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_take(c, a, "no_such_index", NULL, NULL, &err), H5ARK_NOT_FOUND);
    CHECK_OK(h5ark_client_slice(c, a, 8, -1, -3, NULL, &obj, &err));
    CHECK(int64s_are(c, desc_str(obj, "name"), (const int64_t[]){24, 15, 6}, 3), "slice");
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_slice(c, a, 0, 4, 0, NULL, NULL, &err), H5ARK_BAD_REQUEST);
    CHECK_ERR(h5ark_client_slice(c, a, -5, 4, 1, NULL, NULL, &err), H5ARK_BAD_REQUEST);

    /* a[3] = -1 (a row given twice keeps the last), then a[mask] = 7 */
    const int64_t two[] = {-2, -1, 5};
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 3, two, vals, NULL, &err));
    CHECK_OK(h5ark_client_assign(c, a, pos, vals, (h5ark_number){0}, NULL, &err));
    CHECK(int64s_are(c, a, (const int64_t[]){0, 3, 6, 5, 12, 15, 18, 21, 24, -1}, 10),
          "assign values");
    CHECK_OK(h5ark_client_assign(c, a, mask, NULL, h5ark_num_int(7), NULL, &err));
    CHECK(int64s_are(c, a, (const int64_t[]){7, 3, 6, 7, 12, 15, 18, 21, 24, 7}, 10),
          "assign values then a scalar");
    CHECK_ERR(h5ark_client_assign(c, a, mask, NULL, h5ark_num_float(0.5), NULL, &err),
              H5ARK_TYPE_ERROR);
    CHECK_ERR(h5ark_client_assign(c, a, mask, a, (h5ark_number){0}, NULL, &err), H5ARK_BAD_REQUEST);

    const char *parts[] = {vals, pos};
    CHECK_OK(h5ark_client_concatenate(c, parts, 2, NULL, &obj, &err));
    CHECK(int64s_are(c, desc_str(obj, "name"), (const int64_t[]){-2, -1, 5, 3, -1, 3}, 6),
          "concatenate");
    h5ark_value_destroy(&obj);
    const char *mixed[] = {vals, mask};
    CHECK_ERR(h5ark_client_concatenate(c, mixed, 2, NULL, NULL, &err), H5ARK_TYPE_ERROR);

    /* keys 5 1 5 3 1 5: groups 1 3 5 */
    const int64_t keys[] = {5, 1, 5, 3, 1, 5};
    char key[128];
    snprintf(key, sizeof key, "%s", uname("sel_key"));
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 6, keys, key, NULL, &err));
    const char *kn[] = {key};
    h5ark_value *res = NULL;
    CHECK_OK(h5ark_client_unique(c, kn, 1, true, NULL, &res, &err));
    char segs[256], perm[256];
    snprintf(segs, sizeof segs, "%s", desc_str(h5ark_value_get(res, "segments"), "name"));
    snprintf(perm, sizeof perm, "%s", desc_str(h5ark_value_get(res, "permutation"), "name"));
    CHECK(int64s_are(c, desc_str(h5ark_value_get(res, "unique_key_idx"), "name"),
                     (const int64_t[]){1, 3, 0}, 3),
          "unique_key_idx");
    CHECK(int64s_are(c, segs, (const int64_t[]){0, 2, 3}, 3), "segments");
    CHECK(int64s_are(c, perm, (const int64_t[]){1, 4, 3, 0, 2, 5}, 6), "permutation");
    h5ark_value_destroy(&res);
    const int64_t per_group[] = {10, 30, 50};
    char pg[128];
    snprintf(pg, sizeof pg, "%s", uname("sel_pg"));
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 3, per_group, pg, NULL, &err));
    CHECK_OK(h5ark_client_broadcast(c, segs, pg, 6, perm, NULL, &obj, &err));
    CHECK(int64s_are(c, desc_str(obj, "name"), (const int64_t[]){50, 10, 50, 30, 10, 50}, 6),
          "broadcast back to the rows");
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_broadcast(c, pg, pg, 6, NULL, NULL, NULL, &err), H5ARK_BAD_REQUEST);
    CHECK_OK(h5ark_client_segmented_reduce(c, key, segs, "sum", false, NULL, &obj, &err));
    CHECK(int64s_are(c, desc_str(obj, "name"), (const int64_t[]){6, 5, 9}, 3), "segment sums");
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_segmented_reduce(c, key, segs, "median", false, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
}

static void cleanup(h5ark_client_t *c) {
    h5ark_value *objs = NULL;
    CHECK_OK(h5ark_client_info(c, NULL, 0, &objs, &err));
    size_t plen = strlen(prefix);
    for (size_t i = 0; i < h5ark_value_len(objs); i++) {
        const char *nm = desc_str(h5ark_value_at(objs, i), "name");
        if (strncmp(nm, prefix, plen) == 0) CHECK_OK(h5ark_client_delete(c, &nm, 1, NULL, &err));
    }
    h5ark_value_destroy(&objs);
}

static void test_destructive(h5ark_client_t *c) {
    CHECK_OK(h5ark_client_create(c, H5ARK_INT8, 1, NULL, uname("doomed"), NULL, &err));
    uint64_t n = 0;
    CHECK_OK(h5ark_client_clear(c, &n, &err));
    CHECK(n >= 1, "clear deleted %" PRIu64, n);
    h5ark_value *objs = NULL;
    CHECK_OK(h5ark_client_info(c, NULL, 0, &objs, &err));
    CHECK(h5ark_value_len(objs) == 0, "%zu objects after clear", h5ark_value_len(objs));
    h5ark_value_destroy(&objs);
    CHECK_OK(h5ark_client_shutdown(c, &err));
}

/* ---- objects from named parts ----------------------------------------------------------- */

static void test_parts(h5ark_client_t *c) {
    char key[128], cats[128], t[128], s[128];
    snprintf(key, sizeof key, "%s", uname("parts_key"));
    snprintf(cats, sizeof cats, "%s", uname("parts_cats"));
    snprintf(t, sizeof t, "%s", uname("parts_tagged"));
    snprintf(s, sizeof s, "%s", uname("parts_nuls"));
    const int64_t k[] = {2, 0, 2, 1, 0};
    CHECK_OK(h5ark_client_put_array(c, H5ARK_INT64, 5, k, key, NULL, &err));
    h5ark_value *obj = NULL;
    CHECK_OK(h5ark_client_tag(c, key, "timedelta64[ns]", t, &obj, &err));
    CHECK(strcmp(desc_str(obj, "tag"), "timedelta64[ns]") == 0, "tag: %s", desc_str(obj, "tag"));
    h5ark_value_destroy(&obj);
    CHECK(int64s_are(c, t, k, 5), "tagged values");
    CHECK_ERR(h5ark_client_tag(c, key, "week", NULL, NULL, &err), H5ARK_BAD_REQUEST);

    static const char nuls[] = "a\0bb\0\0ccc"; /* the last NUL: the literal's own */
    CHECK_OK(h5ark_client_put_strings_at_nuls(c, nuls, sizeof nuls, s, &obj, &err));
    CHECK(desc_uint(obj, "size") == 4, "strings at NULs: %" PRIu64, desc_uint(obj, "size"));
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_put_strings_at_nuls(c, "ab", 2, NULL, NULL, &err), H5ARK_BAD_REQUEST);
    CHECK_OK(
        h5ark_client_put_strings(c, 3, (const char *const[]){"x", "y", "z"}, cats, NULL, &err));

    /* a groupby, taken apart, then made again from its parts */
    const char *keys[] = {key};
    CHECK_OK(h5ark_client_groupby(c, keys, 1, NULL, NULL, NULL, NULL, &obj, &err));
    char gb[128];
    snprintf(gb, sizeof gb, "%s", desc_str(obj, "name"));
    h5ark_value_destroy(&obj);
    CHECK_OK(h5ark_client_unpack(c, gb, false, &obj, &err));
    const h5ark_value *comps = h5ark_value_get(obj, "components");
    char perm[128], segs[128], uki[128];
    snprintf(perm, sizeof perm, "%s", desc_str(h5ark_value_get(comps, "permutation"), "name"));
    snprintf(segs, sizeof segs, "%s", desc_str(h5ark_value_get(comps, "segments"), "name"));
    snprintf(uki, sizeof uki, "%s", desc_str(h5ark_value_get(comps, "unique_key_idx"), "name"));
    h5ark_value_destroy(&obj);
    CHECK(int64s_are(c, perm, (const int64_t[]){1, 4, 3, 0, 2}, 5), "unpacked permutation");
    CHECK_ERR(h5ark_client_info(c, (const char *const[]){gb}, 1, NULL, &err), H5ARK_NOT_FOUND);
    CHECK_OK(h5ark_client_groupby(c, keys, 1, perm, segs, uki, NULL, &obj, &err));
    CHECK(desc_uint(obj, "ngroups") == 3, "groupby given: %" PRIu64, desc_uint(obj, "ngroups"));
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_groupby(c, keys, 1, perm, segs, NULL, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);

    /* the categorical of codes whose NA value is category 1, with a grouping kept */
    CHECK_OK(h5ark_client_categorical_codes(c, key, cats, 1, perm, segs, NULL, &obj, &err));
    CHECK(strcmp(desc_str(obj, "na_value"), "y") == 0, "na_value %s", desc_str(obj, "na_value"));
    CHECK(h5ark_value_get(h5ark_value_get(obj, "components"), "permutation") != NULL,
          "grouping kept");
    h5ark_value_destroy(&obj);
    CHECK_ERR(h5ark_client_categorical_codes(c, key, cats, 3, NULL, NULL, NULL, NULL, &err),
              H5ARK_BAD_REQUEST);
}

/* getacl/setacl as a user whose home is "." (a daemon with users; the token from
 * H5ARK_TEST_TOKEN): an ACL written, read back, a bad one refused with the old kept. */
static void test_acl(h5ark_client_t *c) {
    h5ark_value *acl = h5ark_value_array(), *mine = h5ark_value_map(), *group = h5ark_value_map();
    static const char *const perms[] = {"read",   "create",  "update",
                                        "delete", "readACL", "updateACL"};
    h5ark_value_set(mine, "subject", h5ark_value_str(getenv("H5ARK_TEST_USER")));
    for (size_t i = 0; i < 6; i++)
        h5ark_value_set(mine, perms[i], h5ark_value_bool(true));
    h5ark_value_set(group, "subject", h5ark_value_str("g:physics"));
    h5ark_value_set(group, "read", h5ark_value_bool(true));
    h5ark_value_push(acl, mine);
    h5ark_value_push(acl, group);
    h5ark_value *written = NULL, *got = NULL;
    CHECK_OK(h5ark_client_setacl(c, ".", acl, &written, &err));
    CHECK(h5ark_value_len(written) == 2, "setacl answers %zu entries", h5ark_value_len(written));
    const h5ark_value *g = h5ark_value_at(written, 1);
    CHECK(g && strcmp(desc_str(g, "subject"), "g:physics") == 0, "the group's entry second");
    CHECK(h5ark_value_get(g, "read") && h5ark_value_get(g, "read")->as.b &&
              h5ark_value_get(g, "create") && !h5ark_value_get(g, "create")->as.b,
          "the group may read, not create");
    CHECK_OK(h5ark_client_getacl(c, "sub/../x.h5", &got, &err));
    CHECK(strcmp(desc_str(got, "from"), ".") == 0, "from %s", desc_str(got, "from"));
    CHECK(!h5ark_value_get(got, "default")->as.b, "not the defaults");
    CHECK(h5ark_value_len(h5ark_value_get(got, "acl")) == 2, "two entries read back");
    h5ark_value_destroy(&got);
    /* a bad subject: refused, the ACL unchanged; a shared folder (no updateACL): forbidden */
    h5ark_value_set(h5ark_value_at(acl, 1), "subject", h5ark_value_str("bad name"));
    CHECK_ERR(h5ark_client_setacl(c, ".", acl, NULL, &err), H5ARK_BAD_REQUEST);
    CHECK(strstr(err.message, "bad name") != NULL, "names the subject: %s", err.message);
    CHECK_OK(h5ark_client_getacl(c, ".", &got, &err));
    CHECK(strcmp(desc_str(h5ark_value_at(h5ark_value_get(got, "acl"), 1), "subject"),
                 "g:physics") == 0,
          "the old ACL kept");
    CHECK_ERR(h5ark_client_setacl(c, "/shared/physics", acl, NULL, &err), H5ARK_FORBIDDEN);
    CHECK_ERR(h5ark_client_getacl(c, "../../outside", NULL, &err), H5ARK_FORBIDDEN);
    h5ark_value_destroy(&got);
    h5ark_value_destroy(&written);
    h5ark_value_destroy(&acl);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: %s ENDPOINT [basic|hdf|compute|select|ops|parts|acl|destructive]...\n",
                argv[0]);
        return 2;
    }
    snprintf(prefix, sizeof prefix, "ct%d_%ld", (int)getpid(), (long)time(NULL) % 100000);
    h5ark_client_t *c = h5ark_client_new(argv[1], getenv("H5ARK_TEST_TOKEN"), &err);
    if (!c) {
        fprintf(stderr, "FAIL: cannot create a client for %s: %s\n", argv[1], err.message);
        return 1;
    }
    h5ark_client_set_timeout(c, 60000);
    bool basic = argc == 2, hdf = false, select = false, destructive = false, compute = false;
    bool ops = false, parts = false; /* strings and bigint compute; objects from parts */
    bool acl = false;
    for (int i = 2; i < argc; i++) {
        basic |= strcmp(argv[i], "basic") == 0;
        hdf |= strcmp(argv[i], "hdf") == 0;
        select |= strcmp(argv[i], "select") == 0;
        destructive |= strcmp(argv[i], "destructive") == 0;
        compute |= strcmp(argv[i], "compute") == 0;
        ops |= strcmp(argv[i], "ops") == 0;
        parts |= strcmp(argv[i], "parts") == 0;
        acl |= strcmp(argv[i], "acl") == 0;
    }
    if (compute && !basic) test_compute(c);
    if (basic) {
        test_ping_config(c);
        test_dtypes(c);
        test_create(c);
        test_compute(c);
        test_strings(c);
        test_large(c);
        test_reply(c);
        test_errors(c);
        test_info_delete(c);
        test_first_contact(argv[1]);
        test_unreachable();
    }
    if (hdf) test_hdf(c);
    if (hdf) test_files(c);
    if (select) test_select(c);
    if (ops) test_strings_compute(c);
    if (ops) test_bigint_compute(c);
    if (parts) test_parts(c);
    if (acl) test_acl(c);
    cleanup(c);
    if (destructive) test_destructive(c);
    h5ark_client_destroy(&c);
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
