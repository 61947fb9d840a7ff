/* h5grove's /data/: a dataset's values, or a selection of them, read through the storage
 * layer (on every rank, through the entry) and encoded as json, bin or npy (see h5grove.h). */
#include "front/h5grove.h"

#include "entry.h"
#include "objects/object.h"
#include "objects/strings.h"
#include "registry.h"
#include "storage/storage.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most bytes of values one /data/ request reads from a file: larger arrays are asked
 * for in slices (h5web asks with `selection`), never read whole. */
#define DATA_MAX_BYTES (64u << 20)
/* The most strings (and numbers sent as JSON) one /data/ answer holds. */
#define DATA_MAX_JSON_ELEMS (4u << 20)
#define SELECTION_MAX_LEN   1024

/* ---- /data/ -------------------------------------------------------------------------- */

typedef struct {
    unsigned ndim;
    uint64_t shape[OBJECT_MAX_DIMS];
    uint64_t start[OBJECT_MAX_DIMS], step[OBJECT_MAX_DIMS], count[OBJECT_MAX_DIMS];
    bool keep[OBJECT_MAX_DIMS]; /* a slice keeps its axis; an index drops it */
} selection;

static int parse_int64(const char *s, size_t n, int64_t *out) {
    char buf[32];
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* One item of NumPy's indexing: "", ":", "I", "A:B" or "A:B:S" (S > 0), as Python clamps
 * slices and wraps negative indices. */
static int parse_item(const char *s, size_t n, unsigned d, selection *sel, h5ark_error *err) {
    int64_t size = (int64_t)sel->shape[d];
    const char *colon = memchr(s, ':', n);
    sel->keep[d] = colon != NULL || n == 0;
    if (!colon && n > 0) {
        int64_t i;
        if (parse_int64(s, n, &i))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "selection: '%.*s' is not an index", (int)n,
                              s);
        if (i < 0) i += size;
        if (i < 0 || i >= size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "selection: index %.*s is out of range for axis %u of size %" PRId64,
                              (int)n, s, d, size);
        sel->start[d] = (uint64_t)i, sel->step[d] = 1, sel->count[d] = 1;
        return 0;
    }
    int64_t v[3] = {0, size, 1};
    const char *p = s, *end = s + n;
    for (int k = 0; k < 3 && p <= end; k++) {
        const char *c = memchr(p, ':', (size_t)(end - p));
        const char *stop = c ? c : end;
        if (stop > p && parse_int64(p, (size_t)(stop - p), &v[k]))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "selection: '%.*s' is not a slice", (int)n,
                              s);
        if (k == 2 && c)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "selection: '%.*s' is not a slice", (int)n,
                              s);
        if (k < 2 && stop > p && v[k] < 0) v[k] = v[k] + size < 0 ? 0 : v[k] + size;
        if (k < 2 && v[k] > size) v[k] = size;
        p = stop + 1;
    }
    if (v[2] <= 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "selection: '%.*s': the step must be a positive number", (int)n, s);
    sel->start[d] = (uint64_t)v[0];
    sel->step[d] = (uint64_t)v[2];
    sel->count[d] = v[1] > v[0] ? (uint64_t)((v[1] - v[0] - 1) / v[2]) + 1 : 0;
    return 0;
}

static int parse_selection(const char *text, selection *sel, h5ark_error *err) {
    for (unsigned d = 0; d < sel->ndim; d++)
        sel->start[d] = 0, sel->step[d] = 1, sel->count[d] = sel->shape[d], sel->keep[d] = true;
    if (!text || !text[0]) return 0;
    if (strlen(text) > SELECTION_MAX_LEN)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "selection: longer than %d characters",
                          SELECTION_MAX_LEN);
    unsigned d = 0;
    for (const char *p = text;; d++) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (d >= sel->ndim)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "selection '%s' has more items than the dataset's %u axes", text,
                              sel->ndim);
        if (parse_item(p, n, d, sel, err)) return -1;
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

static bool next_index(const selection *sel, uint64_t *idx) {
    for (unsigned d = sel->ndim; d-- > 0;) {
        if (++idx[d] < sel->count[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* Element offset (in the rows read, which start at row `lo`) of the selection's idx. */
static uint64_t source_offset(const selection *sel, const uint64_t *idx, uint64_t lo) {
    uint64_t off = 0;
    for (unsigned d = 0; d < sel->ndim; d++) {
        uint64_t i = sel->start[d] + idx[d] * sel->step[d] - (d == 0 ? lo : 0);
        off = off * (d == 0 ? 1 : sel->shape[d]) + i;
    }
    return off;
}

static uint64_t selected_count(const selection *sel) {
    uint64_t n = 1;
    for (unsigned d = 0; d < sel->ndim; d++)
        n *= sel->count[d];
    return n;
}

static unsigned kept_dims(const selection *sel) {
    unsigned k = 0;
    for (unsigned d = 0; d < sel->ndim; d++)
        k += sel->keep[d];
    return k;
}

/* A growing text or byte buffer, its capacity counted against --max-memory (`why` says
 * why it failed to grow). */
typedef struct {
    char *p;
    size_t len, cap;
    bool failed;
    h5ark_error why;
} buf;

static void put_bytes(buf *b, const void *s, size_t n) {
    if (b->failed || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *p = NULL;
        if (registry_reserve(cap - b->cap, &b->why) == 0 && !(p = realloc(b->p, cap))) {
            registry_unreserve(cap - b->cap);
            h5ark_fail(&b->why, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_text(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_text(buf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put_bytes(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* The shortest of %.15g / %.17g (%.6g / %.9g for float32) that reads back as the value;
 * JSON has no NaN or infinity: null, as h5grove writes them. */
static void put_real(buf *b, double v, bool single) {
    if (!isfinite(v)) {
        put_bytes(b, "null", 4);
        return;
    }
    char tmp[40];
    snprintf(tmp, sizeof tmp, single ? "%.6g" : "%.15g", v);
    if (single ? (float)strtod(tmp, NULL) != (float)v : strtod(tmp, NULL) != v)
        snprintf(tmp, sizeof tmp, single ? "%.9g" : "%.17g", v);
    put_bytes(b, tmp, strlen(tmp));
}

static void put_number(buf *b, h5ark_dtype dtype, const void *p) {
    switch (dtype) {
    case H5ARK_INT8: put_text(b, "%d", *(const int8_t *)p); break;
    case H5ARK_INT16: put_text(b, "%d", *(const int16_t *)p); break;
    case H5ARK_INT32: put_text(b, "%" PRId32, *(const int32_t *)p); break;
    case H5ARK_INT64: put_text(b, "%" PRId64, *(const int64_t *)p); break;
    case H5ARK_UINT8: put_text(b, "%u", *(const uint8_t *)p); break;
    case H5ARK_UINT16: put_text(b, "%u", *(const uint16_t *)p); break;
    case H5ARK_UINT32: put_text(b, "%" PRIu32, *(const uint32_t *)p); break;
    case H5ARK_UINT64: put_text(b, "%" PRIu64, *(const uint64_t *)p); break;
    case H5ARK_FLOAT32: put_real(b, *(const float *)p, true); break;
    case H5ARK_FLOAT64: put_real(b, *(const double *)p, false); break;
    case H5ARK_BOOLEAN: put_text(b, "%s", *(const uint8_t *)p ? "true" : "false"); break;
    default: put_bytes(b, "null", 4); break;
    }
}

/* JSON of the selected elements: nested by the axes kept, or flat with `flatten`; an
 * element alone (every axis indexed) is a bare value. elem(k) writes the k-th. */
typedef void (*elem_fn)(buf *b, void *arg, uint64_t k);

static unsigned next_kept(const selection *sel, unsigned d) {
    while (d < sel->ndim && !sel->keep[d])
        d++;
    return d;
}

/* An empty selection of several axes kept, nested as NumPy's tolist() nests it: [[], []]. */
static void put_empty(buf *b, const selection *sel, unsigned d) {
    d = next_kept(sel, d);
    unsigned next = next_kept(sel, d + 1);
    put_bytes(b, "[", 1);
    for (uint64_t i = 0; next < sel->ndim && i < sel->count[d]; i++) {
        if (i) put_bytes(b, ",", 1);
        put_empty(b, sel, next);
    }
    put_bytes(b, "]", 1);
}

/* The JSON elements an answer writes, brackets of empty lists counted. */
static uint64_t json_elements(const selection *sel) {
    uint64_t total = selected_count(sel);
    if (total) return total;
    uint64_t lists = 1;
    for (unsigned d = 0; d < sel->ndim && sel->count[d]; d++)
        if (__builtin_mul_overflow(lists, sel->count[d], &lists)) return UINT64_MAX;
    return lists;
}

static void put_json_elements(buf *b, const selection *sel, bool flatten, elem_fn elem, void *arg) {
    uint64_t total = selected_count(sel);
    unsigned kept = kept_dims(sel);
    if (kept == 0) {
        elem(b, arg, 0);
        return;
    }
    if (total == 0 && !flatten && kept > 1) {
        put_empty(b, sel, 0);
        return;
    }
    if (flatten || kept == 1 || total == 0) {
        put_bytes(b, "[", 1);
        for (uint64_t k = 0; k < total; k++) {
            if (k) put_bytes(b, ",", 1);
            elem(b, arg, k);
        }
        put_bytes(b, "]", 1);
        return;
    }
    uint64_t idx[OBJECT_MAX_DIMS] = {0};
    for (uint64_t k = 0; k < total; k++) {
        if (k) put_bytes(b, ",", 1);
        for (unsigned d = sel->ndim; d-- > 0;) { /* open the axes starting here */
            if (!sel->keep[d]) continue;
            if (idx[d] != 0) break;
            put_bytes(b, "[", 1);
        }
        elem(b, arg, k);
        for (unsigned d = sel->ndim; d-- > 0;) { /* close the axes ending here */
            if (!sel->keep[d]) continue;
            if (idx[d] != sel->count[d] - 1) break;
            put_bytes(b, "]", 1);
        }
        next_index(sel, idx);
    }
}

typedef struct {
    h5ark_dtype dtype;
    size_t itemsize;
    const char *values; /* the selection's elements, contiguous */
    object *obj;        /* strings: the strings read; categorical: its labels' object */
    const object *codes;
    const selection *sel;
    uint64_t lo;
} elements;

static void number_elem(buf *b, void *arg, uint64_t k) {
    const elements *e = arg;
    put_number(b, e->dtype, e->values + k * e->itemsize);
}

/* A string of len bytes as JSON (a NUL in it as \u0000), ill-formed UTF-8 scrubbed. */
static void put_string(buf *b, const char *s, uint64_t len) {
    json_t *j = s ? http_json_str(s, (size_t)len) : json_null();
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text) {
        b->failed = true;
        return;
    }
    put_bytes(b, text, strlen(text));
    free(text);
}

static uint64_t row_of(const elements *e, uint64_t k) {
    return e->sel->start[0] + k * e->sel->step[0] - e->lo;
}

static void string_elem(buf *b, void *arg, uint64_t k) {
    const elements *e = arg;
    uint64_t len = 0;
    char *s = strings_dup_here(e->obj, row_of(e, k), &len);
    if (!s) b->failed = true;
    put_string(b, s, len);
    free(s);
}

/* A categorical's label: categories[code], null for a code outside them. */
static void label_elem(buf *b, void *arg, uint64_t k) {
    const elements *e = arg;
    const darray *codes = e->codes->values;
    uint64_t row = row_of(e, k);
    int s = darray_shard_of(codes, row);
    int64_t code = ((const int64_t *)codes->shards[s].data)[row - codes->shards[s].start];
    if (code < 0 || (uint64_t)code >= e->obj->size) {
        put_bytes(b, "null", 4);
        return;
    }
    uint64_t len = 0;
    char *label = strings_dup_here(e->obj, (uint64_t)code, &len);
    if (!label) b->failed = true;
    put_string(b, label, len);
    free(label);
}

/* The selected elements of a pdarray or arrayview read as rows [lo, ...), contiguous;
 * *reserved grows by the bytes counted against --max-memory. */
static char *gather(const object *obj, const selection *sel, uint64_t lo, uint64_t *reserved,
                    h5ark_error *err) {
    const darray *a = obj->values;
    uint64_t total = selected_count(sel);
    char *out;
    if (registry_scratch(total * a->itemsize, (void **)&out, reserved, err)) return NULL;
    uint64_t idx[OBJECT_MAX_DIMS] = {0};
    int s = 0;
    for (uint64_t k = 0; k < total; k++, next_index(sel, idx)) {
        uint64_t i = source_offset(sel, idx, lo);
        if (i < a->shards[s].start || i >= a->shards[s].start + a->shards[s].count)
            s = darray_shard_of(a, i);
        memcpy(out + k * a->itemsize,
               (const char *)a->shards[s].data + (i - a->shards[s].start) * a->itemsize,
               a->itemsize);
    }
    return out;
}

static const char *npy_descr(h5ark_dtype dtype) {
    switch (dtype) {
    case H5ARK_INT8: return "|i1";
    case H5ARK_INT16: return "<i2";
    case H5ARK_INT32: return "<i4";
    case H5ARK_INT64: return "<i8";
    case H5ARK_UINT8: return "|u1";
    case H5ARK_UINT16: return "<u2";
    case H5ARK_UINT32: return "<u4";
    case H5ARK_UINT64: return "<u8";
    case H5ARK_FLOAT32: return "<f4";
    case H5ARK_FLOAT64: return "<f8";
    case H5ARK_BOOLEAN: return "|b1";
    default: return NULL;
    }
}

/* NumPy's .npy format 1.0: magic, header length, a dict padded so that the data starts at
 * a multiple of 64. The shape: the axes kept, or one axis with `flatten`. */
static void put_npy_header(buf *b, h5ark_dtype dtype, const selection *sel, bool flatten) {
    char shape[OBJECT_MAX_DIMS * 24 + 8] = "(";
    size_t n = 1;
    unsigned kept = kept_dims(sel);
    if (flatten && kept > 0) {
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%" PRIu64 ",", selected_count(sel));
    } else {
        for (unsigned d = 0, k = 0; d < sel->ndim; d++)
            if (sel->keep[d])
                n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%" PRIu64, k++ ? ", " : "",
                                      sel->count[d]);
        if (kept == 1) shape[n++] = ',';
    }
    snprintf(shape + n, sizeof shape - n, ")");
    char header[sizeof shape + 128];
    int len =
        snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                 npy_descr(dtype), shape);
    size_t pad = (64 - (10 + (size_t)len + 1) % 64) % 64;
    uint16_t hlen = (uint16_t)((size_t)len + pad + 1);
    unsigned char le[2] = {(unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    put_bytes(b, "\x93NUMPY\x01\x00", 8);
    put_bytes(b, le, 2);
    put_bytes(b, header, (size_t)len);
    for (size_t i = 0; i < pad; i++)
        put_bytes(b, " ", 1);
    put_bytes(b, "\n", 1);
}

static int parse_shape(const h5ark_value *e, selection *sel, h5ark_error *err) {
    const h5ark_value *shape = h5grove_shape(e);
    const h5ark_value *length = h5ark_value_get(e, "length");
    uint64_t n;
    if (shape && shape->kind == H5ARK_ARRAY) {
        if (shape->as.a.len == 0 || shape->as.a.len > OBJECT_MAX_DIMS)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "h5ark reads arrays of 1 to %d axes, and this dataset has %zu",
                              OBJECT_MAX_DIMS, shape->as.a.len);
        sel->ndim = (unsigned)shape->as.a.len;
        for (unsigned d = 0; d < sel->ndim; d++)
            if (!h5ark_value_to_uint64(shape->as.a.items[d], &sel->shape[d]) ||
                sel->shape[d] > OBJECT_MAX_ELEMENTS)
                return h5ark_fail(err, H5ARK_TYPE_ERROR,
                                  "the dataset's axes must be numbers of at most 2^48");
        return 0;
    }
    if (length && h5ark_value_to_uint64(length, &n)) {
        sel->ndim = 1;
        sel->shape[0] = n;
        return 0;
    }
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "the dataset has no shape h5ark reads");
}

/* Whether a request may read rows [lo, lo + rows) of `row` elements each (itemsize bytes;
 * 0 for strings: the file's average) and answer its selection: resource_limit past the
 * bytes one request may read or the elements one JSON answer may hold. */
static int check_size(const target *t, const selection *sel, uint64_t itemsize, uint64_t rows,
                      uint64_t row, bool json, h5ark_error *err) {
    uint64_t item = itemsize ? itemsize : 8, stored, elems = 1, bytes;
    const h5ark_value *sb = h5ark_value_get(t->entry, "storage_bytes");
    for (unsigned d = 0; d < sel->ndim; d++)
        elems = __builtin_mul_overflow(elems, sel->shape[d], &elems) ? UINT64_MAX : elems;
    if (!itemsize && sb && h5ark_value_to_uint64(sb, &stored) && elems) item = stored / elems + 1;
    if (__builtin_mul_overflow(rows, row, &bytes) || __builtin_mul_overflow(bytes, item, &bytes) ||
        bytes > DATA_MAX_BYTES)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "'%s': the selection reads %" PRIu64 " rows of %" PRIu64
                          " elements, more than the %u MiB one request may read: ask for a "
                          "slice (selection=START:STOP)",
                          t->path, rows, row, DATA_MAX_BYTES >> 20);
    uint64_t n = json_elements(sel);
    if ((json || !itemsize) && n > DATA_MAX_JSON_ELEMS)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "'%s': %" PRIu64 " elements are more than the %u one JSON answer may "
                          "hold: ask for a slice or format=bin",
                          t->path, n, DATA_MAX_JSON_ELEMS);
    return 0;
}

/* The header rank 0 forwards for the gateway's read at several ranks (gateway_read). */
static h5ark_value *read_header(const target *t, uint64_t lo, uint64_t hi) {
    h5ark_value *h = h5ark_value_map(), *args = h5ark_value_map();
    h5ark_value_set(h, "v", h5ark_value_uint(H5ARK_PROTOCOL_VERSION));
    h5ark_value_set(h, "cmd", h5ark_value_str("gateway_read"));
    h5ark_value_set(args, "path", h5ark_value_str(t->abs));
    h5ark_value_set(args, "dataset", h5ark_value_str(t->path + 1));
    h5ark_value_set(args, "start", h5ark_value_uint(lo));
    h5ark_value_set(args, "stop", h5ark_value_uint(hi));
    if (h5ark_value_len(args) != 4 || h5ark_value_set(h, "args", args) != 0)
        h5ark_value_destroy(&args);
    if (h5ark_value_len(h) != 3) h5ark_value_destroy(&h);
    return h;
}

/* Rows [lo, hi) of the dataset, read through the storage layer as readhdf reads them, and
 * checked to be the array the listing describes (rows of `row` elements). At several ranks
 * every rank reads its part, as a request that runs everywhere, and rank 0 gathers them
 * (*whole, which the answer is made from). */
/* One read on every rank, a part of the /data/ request the entry admitted. */
typedef struct {
    const target *t;
    uint64_t lo, hi;
    storage_read_item **items;
    size_t *nitems;
    object **whole;
} rows_read;

static h5ark_value *rows_header(void *door) {
    const rows_read *r = door;
    return read_header(r->t, r->lo, r->hi);
}

static int rows_run(void *door, const caller *who, h5ark_error *err) {
    (void)who;
    rows_read *r = door;
    return storage_read_rows(r->t->abs, r->t->path + 1, r->lo, r->hi, r->items, r->nitems, r->whole,
                             err);
}

static object *read_rows(const target *t, uint64_t lo, uint64_t hi, uint64_t row,
                         storage_read_item **items, size_t *nitems, object **whole,
                         h5ark_error *err) {
    rows_read r = {t, lo, hi, items, nitems, whole};
    entry_call call = {.name = "gateway_read",
                       .read_only = true,
                       .ranks = RANKS_EVERY,
                       .known = entry_caller(),
                       .forward = rows_header,
                       .run = rows_run,
                       .door = &r};
    int rc = entry_run(&call, err);
    if (rc) return NULL;
    object *obj = *whole ? *whole : *nitems == 1 ? (*items)[0].obj : NULL;
    bool fits = false;
    if (obj && obj->objtype == H5ARK_CATEGORICAL)
        fits = obj->size == hi - lo && object_component_get(obj, "codes") &&
               object_component_get(obj, "categories");
    else if (obj && obj->objtype == H5ARK_STRINGS)
        fits = obj->size == hi - lo;
    else if (obj && (obj->objtype == H5ARK_PDARRAY || obj->objtype == H5ARK_ARRAYVIEW))
        fits = obj->values && obj->dtype != H5ARK_BIGINT && obj->values->size == (hi - lo) * row;
    if (!fits) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' did not read as the array it is listed as",
                   t->path);
        return NULL;
    }
    return obj;
}

static bool is_scalar(const h5ark_value *e) {
    const h5ark_value *shape = h5ark_value_get(e, "shape");
    return str_is(listed_str(e, "kind"), "dataset") && shape && shape->kind == H5ARK_ARRAY &&
           shape->as.a.len == 0;
}

/* A scalar's value as one element of dtype, native (little-endian) as the gateway sends
 * every number; false for a value or dtype it cannot be. */
static bool scalar_element(const h5ark_value *v, h5ark_dtype dt, void *out) {
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0;
    if (v->kind == H5ARK_BOOL)
        i = v->as.b, u = v->as.b, f = v->as.b;
    else if (!h5ark_value_to_double(v, &f))
        return false;
    if (v->kind != H5ARK_BOOL && !h5ark_value_to_int64(v, &i)) i = (int64_t)f;
    if (v->kind != H5ARK_BOOL && !h5ark_value_to_uint64(v, &u)) u = (uint64_t)i;
    union {
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        float f32;
        double f64;
    } e;
    switch (dt) {
    case H5ARK_INT8: e.i8 = (int8_t)i; break;
    case H5ARK_INT16: e.i16 = (int16_t)i; break;
    case H5ARK_INT32: e.i32 = (int32_t)i; break;
    case H5ARK_INT64: e.i64 = i; break;
    case H5ARK_UINT8: e.u8 = (uint8_t)u; break;
    case H5ARK_UINT16: e.u16 = (uint16_t)u; break;
    case H5ARK_UINT32: e.u32 = (uint32_t)u; break;
    case H5ARK_UINT64: e.u64 = u; break;
    case H5ARK_FLOAT32: e.f32 = (float)f; break;
    case H5ARK_FLOAT64: e.f64 = f; break;
    case H5ARK_BOOLEAN: e.u8 = f != 0; break;
    default: return false;
    }
    memcpy(out, &e, h5ark_dtype_size(dt));
    return true;
}

/* A scalar dataset: its value from the listing (LIST_VIEW), answered as h5grove answers
 * one: a bare JSON value, the element's bytes (a string's bytes as stored), or a .npy of
 * shape () (numbers only). */
static int scalar_answer(const target *t, const char *format, const char *asked, buf *b,
                         h5ark_error *err) {
    const h5ark_value *v = h5ark_value_get(t->entry, "value");
    const h5ark_value *bytes = h5ark_value_get(t->entry, "value_bytes");
    const char *why = listed_str(t->entry, "value_error"), *dtname = listed_str(t->entry, "dtype");
    uint64_t n = 0;
    if (asked && asked[0])
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is a scalar: it takes no selection",
                          t->path);
    if (bytes && h5ark_value_to_uint64(bytes, &n))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "'%s' is a string of %" PRIu64 " bytes, more than the %u MiB the "
                          "gateway reads of a scalar",
                          t->path, n, STORAGE_SCALAR_MAX_BYTES >> 20);
    if (why) return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "cannot read '%s': %s", t->path, why);
    if (v && h5grove_string_valued(t->entry) && (v->kind == H5ARK_STR || v->kind == H5ARK_BIN)) {
        if (strcmp(format, "npy") == 0)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "'%s' holds a string: npy is for numbers (json or bin)", t->path);
        if (strcmp(format, "bin") == 0)
            put_bytes(b, v->as.s.ptr, v->as.s.len);
        else
            put_string(b, v->as.s.ptr, v->as.s.len);
        return 0;
    }
    h5ark_dtype dt;
    unsigned char elem[8];
    if (!v || !dtname || !h5ark_dtype_from_name(dtname, &dt) || !npy_descr(dt) ||
        !scalar_element(v, dt, elem))
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "'%s': a scalar of a type h5ark does not read (%s)", t->path,
                          dtname ? dtname : "unknown");
    if (strcmp(format, "json") == 0) {
        put_number(b, dt, elem);
        return 0;
    }
    selection none = {0}; /* no axes: shape () */
    if (strcmp(format, "npy") == 0) put_npy_header(b, dt, &none, false);
    put_bytes(b, elem, h5ark_dtype_size(dt));
    return 0;
}

/* The selected values of an array dataset, read through the storage layer. */
static int array_answer(const http_request *req, const target *t, const char *format, bool flatten,
                        buf *b, h5ark_error *err) {
    if (!h5grove_readable(t->entry)) {
        const char *note = listed_str(t->entry, "note");
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s': %s", t->path,
                          note ? note : "not an object h5ark reads");
    }
    selection sel = {0};
    if (parse_shape(t->entry, &sel, err) ||
        parse_selection(http_query(req, "selection"), &sel, err))
        return -1;
    bool strings = h5grove_string_valued(t->entry);
    if (strings && strcmp(format, "json") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "'%s' holds strings, which the gateway sends as json", t->path);
    uint64_t total = selected_count(&sel), row = 1;
    for (unsigned d = 1; d < sel.ndim; d++)
        row = __builtin_mul_overflow(row, sel.shape[d], &row) ? UINT64_MAX : row;
    /* rows [lo, hi) hold the selection: only those are read */
    uint64_t lo = sel.start[0], hi = sel.count[0] ? lo + (sel.count[0] - 1) * sel.step[0] + 1 : lo;
    h5ark_dtype listed = H5ARK_FLOAT64;
    const char *dtname = listed_str(t->entry, "dtype");
    if (!strings && dtname) h5ark_dtype_from_name(dtname, &listed);
    bool json = strcmp(format, "json") == 0;
    if (check_size(t, &sel, strings ? 0 : h5ark_dtype_size(listed), hi - lo, row, json, err))
        return -1;
    storage_read_item *items = NULL;
    size_t nitems = 0;
    object *whole = NULL, *obj = NULL;
    char *values = NULL;
    uint64_t reserved = 0;
    int rc = -1;
    if (total > 0 && !(obj = read_rows(t, lo, hi, row, &items, &nitems, &whole, err))) goto done;
    elements el = {.sel = &sel, .lo = lo};
    if (!obj && strings) {
        put_json_elements(b, &sel, flatten, string_elem, &el);
    } else if (strings) {
        el.obj = obj;
        if (obj->objtype == H5ARK_CATEGORICAL) {
            el.codes = object_component_get(obj, "codes");
            el.obj = object_component_get(obj, "categories");
        }
        put_json_elements(b, &sel, flatten,
                          obj->objtype == H5ARK_CATEGORICAL ? label_elem : string_elem, &el);
    } else {
        h5ark_dtype dt = obj ? obj->dtype : listed;
        el.dtype = dt;
        el.itemsize = h5ark_dtype_size(dt);
        if (obj && !(values = gather(obj, &sel, lo, &reserved, err))) goto done;
        el.values = values;
        if (json) {
            put_json_elements(b, &sel, flatten, number_elem, &el);
        } else {
            if (strcmp(format, "npy") == 0) put_npy_header(b, dt, &sel, flatten);
            if (total) put_bytes(b, values, total * el.itemsize);
        }
    }
    rc = 0;
done:
    free(values);
    registry_unreserve(reserved);
    object_whole_free(whole);
    storage_read_items_free(items, nitems);
    return rc;
}

void h5grove_values(const http_request *req, http_response *out, h5ark_error *err) {
    target t = {0};
    buf b = {0};
    const char *format = http_query(req, "format"), *dtype = http_query(req, "dtype");
    const char *flat = http_query(req, "flatten");
    bool flatten =
        flat && (strcmp(flat, "true") == 0 || strcmp(flat, "True") == 0 || strcmp(flat, "1") == 0);
    if (!format) format = "json";
    if (strcmp(format, "json") != 0 && strcmp(format, "bin") != 0 && strcmp(format, "npy") != 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "format '%s': the gateway writes json, bin or npy",
                   format);
        goto fail;
    }
    /* every type the daemon reads is one h5grove's "safe" conversion keeps */
    if (dtype && strcmp(dtype, "origin") != 0 && strcmp(dtype, "safe") != 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "dtype '%s': origin or safe", dtype);
        goto fail;
    }
    if (h5grove_open(req, &t, err)) goto fail;
    if (!h5grove_shown_as_dataset(t.entry)) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is not a dataset", t.path);
        goto fail;
    }
    if (is_scalar(t.entry) ? scalar_answer(&t, format, http_query(req, "selection"), &b, err)
                           : array_answer(req, &t, format, flatten, &b, err))
        goto fail;
    if (b.failed) {
        if (b.why.code)
            *err = b.why;
        else
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto fail;
    }
    /* (an empty answer has no buffer: an empty body) */
    http_reply_held(out, 200,
                    strcmp(format, "json") == 0 ? "application/json" : "application/octet-stream",
                    b.p, b.len, b.cap);
    b.p = NULL;
    b.cap = 0;
    goto done;
fail:
    http_reply_error(out, err);
done:
    free(b.p);
    registry_unreserve(b.cap);
    h5grove_tree_release(t.tree);
}
