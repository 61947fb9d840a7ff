/* Elements with variable-length strings anywhere in them (a compound's member, an array's
 * base) in HSDS's binary form (HSDS_API.md §8.2): fixed parts as their bytes, each string
 * as a 4-byte little-endian byte count and its bytes; and compound members picked by name
 * (`fields=a:b`). Buffers hold the elements as h5obj_wire_type makes them: strings as
 * char *, malloc'd when the client sent them. */
#include "storage/h5obj_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELDS_MAX 256

/* Walks one element of type t at p: encode into (or measure for) out, decode from in, or
 * free its strings. */
typedef enum { WALK_MEASURE, WALK_ENCODE, WALK_DECODE, WALK_FREE } walk_op;

typedef struct {
    walk_op op;
    char *out;                     /* ENCODE: where the next bytes go */
    const unsigned char *in, *end; /* DECODE: the body left */
    uint64_t total;                /* MEASURE: bytes so far */
    h5ark_error *err;
} walker;

static int walk(walker *w, hid_t t, char *p) {
    H5T_class_t cls = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    if (cls == H5T_STRING && H5Tis_variable_str(t) > 0) {
        char *s;
        memcpy(&s, p, sizeof s);
        if (w->op == WALK_FREE) {
            free(s);
            s = NULL;
            memcpy(p, &s, sizeof s);
            return 0;
        }
        if (w->op == WALK_DECODE) {
            if (w->end - w->in < 4)
                return h5ark_fail(w->err, H5ARK_BAD_REQUEST, "the body ends inside an element");
            uint32_t k = (uint32_t)w->in[0] | (uint32_t)w->in[1] << 8 | (uint32_t)w->in[2] << 16 |
                         (uint32_t)w->in[3] << 24;
            if ((uint64_t)(w->end - w->in - 4) < k)
                return h5ark_fail(w->err, H5ARK_BAD_REQUEST, "the body ends inside an element");
            if (!(s = strndup((const char *)w->in + 4, k)))
                return h5ark_fail(w->err, H5ARK_RESOURCE_LIMIT, "out of memory");
            memcpy(p, &s, sizeof s);
            w->in += 4 + k;
            return 0;
        }
        uint32_t k = s ? (uint32_t)strlen(s) : 0;
        if (w->op == WALK_MEASURE) {
            w->total += 4 + (uint64_t)k;
            return 0;
        }
        unsigned char le[4] = {(unsigned char)k, (unsigned char)(k >> 8), (unsigned char)(k >> 16),
                               (unsigned char)(k >> 24)};
        memcpy(w->out, le, 4);
        if (k) memcpy(w->out + 4, s, k);
        w->out += 4 + k;
        return 0;
    }
    if (cls == H5T_VLEN) { /* the byte count of its elements, then their bytes */
        hvl_t s;
        memcpy(&s, p, sizeof s);
        hid_t base = H5Tget_super(t);
        size_t bsize = base >= 0 ? H5Tget_size(base) : 0;
        if (base >= 0) H5Tclose(base);
        if (!bsize) return h5ark_fail(w->err, H5ARK_TYPE_ERROR, "a sequence without a base");
        if (w->op == WALK_FREE) {
            free(s.p);
            s = (hvl_t){0};
            memcpy(p, &s, sizeof s);
        } else if (w->op == WALK_DECODE) {
            if (w->end - w->in < 4)
                return h5ark_fail(w->err, H5ARK_BAD_REQUEST, "the body ends inside an element");
            uint32_t k = (uint32_t)w->in[0] | (uint32_t)w->in[1] << 8 | (uint32_t)w->in[2] << 16 |
                         (uint32_t)w->in[3] << 24;
            if ((uint64_t)(w->end - w->in - 4) < k || k % bsize)
                return h5ark_fail(w->err, H5ARK_BAD_REQUEST,
                                  "a sequence's byte count (%u) is not whole elements of %zu "
                                  "bytes within the body",
                                  k, bsize);
            s = (hvl_t){.len = k / bsize, .p = k ? malloc(k) : NULL};
            if (k && !s.p) return h5ark_fail(w->err, H5ARK_RESOURCE_LIMIT, "out of memory");
            if (k) memcpy(s.p, w->in + 4, k);
            memcpy(p, &s, sizeof s);
            w->in += 4 + k;
        } else {
            uint32_t k = (uint32_t)(s.len * bsize);
            if (w->op == WALK_MEASURE) w->total += 4 + (uint64_t)k;
            if (w->op == WALK_ENCODE) {
                unsigned char le[4] = {(unsigned char)k, (unsigned char)(k >> 8),
                                       (unsigned char)(k >> 16), (unsigned char)(k >> 24)};
                memcpy(w->out, le, 4);
                if (k) memcpy(w->out + 4, s.p, k);
                w->out += 4 + k;
            }
        }
        return 0;
    }
    if (cls == H5T_COMPOUND || cls == H5T_ARRAY) {
        int n = cls == H5T_COMPOUND ? H5Tget_nmembers(t) : 1;
        hid_t base = cls == H5T_ARRAY ? H5Tget_super(t) : H5I_INVALID_HID;
        size_t count = cls == H5T_ARRAY && base >= 0 ? size / H5Tget_size(base) : 1;
        int rc = 0;
        for (int i = 0; rc == 0 && i < n; i++) {
            hid_t mt = cls == H5T_COMPOUND ? H5Tget_member_type(t, (unsigned)i) : base;
            size_t off = cls == H5T_COMPOUND ? H5Tget_member_offset(t, (unsigned)i) : 0;
            size_t msize = mt >= 0 ? H5Tget_size(mt) : 0;
            for (size_t k = 0; rc == 0 && k < count; k++)
                rc = mt >= 0 ? walk(w, mt, p + off + k * msize)
                             : h5ark_fail(w->err, H5ARK_TYPE_ERROR, "a type that cannot be read");
            if (cls == H5T_COMPOUND && mt >= 0) H5Tclose(mt);
        }
        if (base >= 0) H5Tclose(base);
        return rc;
    }
    if (w->op == WALK_MEASURE) w->total += size;
    if (w->op == WALK_ENCODE) {
        memcpy(w->out, p, size);
        w->out += size;
    }
    if (w->op == WALK_DECODE) {
        if ((size_t)(w->end - w->in) < size)
            return h5ark_fail(w->err, H5ARK_BAD_REQUEST, "the body ends inside an element");
        memcpy(p, w->in, size);
        w->in += size;
    }
    return 0;
}

static int walk_all(walker *w, hid_t wire, char *buf, uint64_t n) {
    size_t size = H5Tget_size(wire);
    for (uint64_t i = 0; i < n; i++)
        if (walk(w, wire, buf + i * size)) return -1;
    return 0;
}

int h5obj_vlen_binary(hid_t wire, const char *buf, uint64_t n, uint64_t max, char **out,
                      size_t *len, h5ark_error *err) {
    walker w = {.op = WALK_MEASURE, .err = err};
    if (walk_all(&w, wire, (char *)buf, n)) return -1;
    if (w.total > max)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "the answer would be %llu bytes, over max_request_size (%llu)",
                          (unsigned long long)w.total, (unsigned long long)max);
    char *b = malloc(w.total ? w.total : 1);
    if (!b) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    *len = w.total;
    w = (walker){.op = WALK_ENCODE, .out = b, .err = err};
    walk_all(&w, wire, (char *)buf, n);
    *out = b;
    return 0;
}

int h5obj_vlen_from_binary(hid_t wire, const void *body, size_t len, uint64_t n, char *buf,
                           h5ark_error *err) {
    walker w = {
        .op = WALK_DECODE, .in = body, .end = (const unsigned char *)body + len, .err = err};
    if (walk_all(&w, wire, buf, n)) return -1;
    if (w.in != w.end)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the body holds more than %llu elements",
                          (unsigned long long)n);
    return 0;
}

void h5obj_vlen_free(hid_t wire, char *buf, uint64_t n) {
    walker w = {.op = WALK_FREE};
    if (buf) walk_all(&w, wire, buf, n);
}

hid_t h5obj_wire_fields(hid_t wire, const char *fields, h5ark_error *err) {
    if (H5Tget_class(wire) != H5T_COMPOUND) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "fields: the dataset's type is not a compound");
        return H5I_INVALID_HID;
    }
    hid_t members[FIELDS_MAX];
    char *names[FIELDS_MAX];
    int n = 0, rc = 0;
    size_t size = 0;
    for (const char *p = fields; rc == 0;) {
        size_t k = strcspn(p, ":");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(k < sizeof name ? k : sizeof name - 1), p);
        int idx = k && k < sizeof name ? H5Tget_member_index(wire, name) : -1;
        if (n == FIELDS_MAX)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "fields: more than %d", FIELDS_MAX);
        else if (idx < 0)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "fields: '%.100s' is not a member of the type",
                            name);
        if (rc == 0) {
            members[n] = H5Tget_member_type(wire, (unsigned)idx);
            names[n] = strdup(name);
            if (members[n] < 0 || !names[n]) {
                if (members[n] >= 0) H5Tclose(members[n]);
                free(names[n]);
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            } else {
                size += H5Tget_size(members[n++]);
            }
        }
        if (!p[k]) break;
        p += k + 1;
    }
    H5Eclear2(H5E_DEFAULT);
    hid_t t = rc == 0 ? H5Tcreate(H5T_COMPOUND, size) : H5I_INVALID_HID;
    size_t off = 0;
    for (int i = 0; t >= 0 && i < n; i++) {
        if (H5Tinsert(t, names[i], off, members[i]) < 0) {
            H5Tclose(t);
            t = H5I_INVALID_HID;
            h5ark_fail(err, H5ARK_BAD_REQUEST, "fields: '%.100s' named twice", names[i]);
        }
        off += H5Tget_size(members[i]);
    }
    for (int i = 0; i < n; i++) {
        H5Tclose(members[i]);
        free(names[i]);
    }
    H5Eclear2(H5E_DEFAULT);
    return t;
}
