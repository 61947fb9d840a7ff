/* Dynamically typed values and their MessagePack encoding (see h5ark_value.h). */
#include "h5ark_value.h"

#include <stdlib.h>
#include <string.h>

static h5ark_value *value_new(h5ark_kind kind) {
    h5ark_value *v = calloc(1, sizeof *v);
    if (v) v->kind = kind;
    return v;
}

h5ark_value *h5ark_value_nil(void) {
    return value_new(H5ARK_NIL);
}

h5ark_value *h5ark_value_bool(bool b) {
    h5ark_value *v = value_new(H5ARK_BOOL);
    if (v) v->as.b = b;
    return v;
}

h5ark_value *h5ark_value_int(int64_t i) {
    h5ark_value *v = value_new(H5ARK_INT);
    if (v) v->as.i = i;
    return v;
}

h5ark_value *h5ark_value_uint(uint64_t u) {
    h5ark_value *v = value_new(H5ARK_UINT);
    if (v) v->as.u = u;
    return v;
}

h5ark_value *h5ark_value_float(double f) {
    h5ark_value *v = value_new(H5ARK_FLOAT);
    if (v) v->as.f = f;
    return v;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF): MessagePack
 * strings must be, and replies quote request strings back to clients that decode them.
 * The length of the well-formed sequence at s[0], or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t k;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0)
        k = 1, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        k = 2, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        k = 3, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n <= k) return 0;
    for (size_t j = 1; j <= k; j++) {
        if ((s[j] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[j] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return k + 1;
}

static bool utf8_valid(const unsigned char *s, size_t n) {
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_seq(s + i, n - i))) return false;
    return true;
}

/* Strings and map keys are UTF-8 whatever they came from (names in damaged files are not
 * always): each byte that starts no well-formed sequence becomes '?'. */
static void utf8_scrub(char *s, size_t len) {
    unsigned char *u = (unsigned char *)s;
    for (size_t i = 0, k; i < len; i += k ? k : 1)
        if (!(k = utf8_seq(u + i, len - i))) u[i] = '?';
}

static h5ark_value *value_bytes(h5ark_kind kind, const void *p, size_t len) {
    h5ark_value *v = value_new(kind);
    if (!v) return NULL;
    v->as.s.ptr = malloc(len + 1);
    if (!v->as.s.ptr) {
        free(v);
        return NULL;
    }
    if (len) memcpy(v->as.s.ptr, p, len);
    v->as.s.ptr[len] = '\0';
    v->as.s.len = len;
    if (kind == H5ARK_STR) utf8_scrub(v->as.s.ptr, len);
    return v;
}

h5ark_value *h5ark_value_str(const char *s) {
    return value_bytes(H5ARK_STR, s, strlen(s));
}
h5ark_value *h5ark_value_strn(const char *s, size_t len) {
    return value_bytes(H5ARK_STR, s, len);
}
h5ark_value *h5ark_value_bin(const void *p, size_t len) {
    return value_bytes(H5ARK_BIN, p, len);
}
h5ark_value *h5ark_value_array(void) {
    return value_new(H5ARK_ARRAY);
}
h5ark_value *h5ark_value_map(void) {
    return value_new(H5ARK_MAP);
}

void h5ark_value_destroy(h5ark_value **self) {
    if (!self || !*self) return;
    h5ark_value *v = *self;
    switch (v->kind) {
    case H5ARK_STR:
    case H5ARK_BIN: free(v->as.s.ptr); break;
    case H5ARK_ARRAY:
        for (size_t i = 0; i < v->as.a.len; i++)
            h5ark_value_destroy(&v->as.a.items[i]);
        free(v->as.a.items);
        break;
    case H5ARK_MAP:
        for (size_t i = 0; i < v->as.m.len; i++) {
            free(v->as.m.keys[i]);
            h5ark_value_destroy(&v->as.m.vals[i]);
        }
        free(v->as.m.keys);
        free(v->as.m.vals);
        break;
    default: break;
    }
    free(v);
    *self = NULL;
}

int h5ark_value_push(h5ark_value *array, h5ark_value *item) {
    if (!array || array->kind != H5ARK_ARRAY || !item) {
        h5ark_value_destroy(&item);
        return -1;
    }
    if (array->as.a.len == array->as.a.cap) {
        size_t cap = array->as.a.cap ? array->as.a.cap * 2 : 4;
        h5ark_value **items = realloc(array->as.a.items, cap * sizeof *items);
        if (!items) {
            h5ark_value_destroy(&item);
            return -1;
        }
        array->as.a.items = items;
        array->as.a.cap = cap;
    }
    array->as.a.items[array->as.a.len++] = item;
    return 0;
}

int h5ark_value_set(h5ark_value *map, const char *key, h5ark_value *val) {
    if (!map || map->kind != H5ARK_MAP || !val || !key) {
        h5ark_value_destroy(&val);
        return -1;
    }
    for (size_t i = 0; i < map->as.m.len; i++) {
        if (strcmp(map->as.m.keys[i], key) == 0) {
            h5ark_value_destroy(&map->as.m.vals[i]);
            map->as.m.vals[i] = val;
            return 0;
        }
    }
    if (map->as.m.len == map->as.m.cap) {
        size_t cap = map->as.m.cap ? map->as.m.cap * 2 : 8;
        char **keys = realloc(map->as.m.keys, cap * sizeof *keys);
        if (!keys) goto fail;
        map->as.m.keys = keys;
        h5ark_value **vals = realloc(map->as.m.vals, cap * sizeof *vals);
        if (!vals) goto fail;
        map->as.m.vals = vals;
        map->as.m.cap = cap;
    }
    char *k = strdup(key);
    if (!k) goto fail;
    utf8_scrub(k, strlen(k));
    map->as.m.keys[map->as.m.len] = k;
    map->as.m.vals[map->as.m.len++] = val;
    return 0;
fail:
    h5ark_value_destroy(&val);
    return -1;
}

h5ark_value *h5ark_value_get(const h5ark_value *map, const char *key) {
    if (!map || map->kind != H5ARK_MAP) return NULL;
    for (size_t i = 0; i < map->as.m.len; i++)
        if (strcmp(map->as.m.keys[i], key) == 0) return map->as.m.vals[i];
    return NULL;
}

size_t h5ark_value_len(const h5ark_value *v) {
    if (!v) return 0;
    if (v->kind == H5ARK_ARRAY) return v->as.a.len;
    if (v->kind == H5ARK_MAP) return v->as.m.len;
    if (v->kind == H5ARK_STR || v->kind == H5ARK_BIN) return v->as.s.len;
    return 0;
}

h5ark_value *h5ark_value_at(const h5ark_value *array, size_t i) {
    if (!array || array->kind != H5ARK_ARRAY || i >= array->as.a.len) return NULL;
    return array->as.a.items[i];
}

bool h5ark_value_to_int64(const h5ark_value *v, int64_t *out) {
    if (!v) return false;
    if (v->kind == H5ARK_INT) {
        *out = v->as.i;
        return true;
    }
    if (v->kind == H5ARK_UINT && v->as.u <= (uint64_t)INT64_MAX) {
        *out = (int64_t)v->as.u;
        return true;
    }
    return false;
}

bool h5ark_value_to_uint64(const h5ark_value *v, uint64_t *out) {
    if (!v) return false;
    if (v->kind == H5ARK_UINT) {
        *out = v->as.u;
        return true;
    }
    if (v->kind == H5ARK_INT && v->as.i >= 0) {
        *out = (uint64_t)v->as.i;
        return true;
    }
    return false;
}

bool h5ark_value_to_double(const h5ark_value *v, double *out) {
    if (!v) return false;
    switch (v->kind) {
    case H5ARK_FLOAT: *out = v->as.f; return true;
    case H5ARK_INT: *out = (double)v->as.i; return true;
    case H5ARK_UINT: *out = (double)v->as.u; return true;
    default: return false;
    }
}

bool h5ark_value_is_integer(const h5ark_value *v) {
    return v && (v->kind == H5ARK_INT || v->kind == H5ARK_UINT);
}

bool h5ark_value_is_number(const h5ark_value *v) {
    return h5ark_value_is_integer(v) || (v && v->kind == H5ARK_FLOAT);
}

const char *h5ark_value_kind_name(h5ark_kind kind) {
    static const char *names[] = {"nil", "bool",   "integer", "integer", "float",
                                  "str", "binary", "array",   "map"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

h5ark_value *h5ark_value_from_msgpack(const msgpack_object *o) {
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: return h5ark_value_nil();
    case MSGPACK_OBJECT_BOOLEAN: return h5ark_value_bool(o->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return h5ark_value_uint(o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return h5ark_value_int(o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return h5ark_value_float(o->via.f64);
    case MSGPACK_OBJECT_STR: return h5ark_value_strn(o->via.str.ptr, o->via.str.size);
    case MSGPACK_OBJECT_BIN: return h5ark_value_bin(o->via.bin.ptr, o->via.bin.size);
    case MSGPACK_OBJECT_ARRAY: {
        h5ark_value *a = h5ark_value_array();
        for (uint32_t i = 0; a && i < o->via.array.size; i++) {
            h5ark_value *item = h5ark_value_from_msgpack(&o->via.array.ptr[i]);
            if (!item || h5ark_value_push(a, item) != 0) h5ark_value_destroy(&a);
        }
        return a;
    }
    case MSGPACK_OBJECT_MAP: {
        h5ark_value *m = h5ark_value_map();
        for (uint32_t i = 0; m && i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            /* msgpack-c may give an empty string a NULL pointer: test the size first */
            if (kv->key.type != MSGPACK_OBJECT_STR ||
                (kv->key.via.str.size && memchr(kv->key.via.str.ptr, '\0', kv->key.via.str.size))) {
                h5ark_value_destroy(&m);
                break;
            }
            char *key = kv->key.via.str.size ? strndup(kv->key.via.str.ptr, kv->key.via.str.size)
                                             : strdup("");
            h5ark_value *val = h5ark_value_from_msgpack(&kv->val);
            if (!key || !val || h5ark_value_set(m, key, val) != 0) {
                if (!key) h5ark_value_destroy(&val);
                h5ark_value_destroy(&m);
            }
            free(key);
        }
        return m;
    }
    default: return NULL; /* EXT and anything newer: not part of the protocol */
    }
}

int h5ark_value_pack(const h5ark_value *v, msgpack_packer *pk) {
    if (!v) return -1;
    switch (v->kind) {
    case H5ARK_NIL: return msgpack_pack_nil(pk);
    case H5ARK_BOOL: return v->as.b ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    case H5ARK_INT: return msgpack_pack_int64(pk, v->as.i);
    case H5ARK_UINT: return msgpack_pack_uint64(pk, v->as.u);
    case H5ARK_FLOAT: return msgpack_pack_double(pk, v->as.f);
    case H5ARK_STR:
        if (msgpack_pack_str(pk, v->as.s.len)) return -1;
        return msgpack_pack_str_body(pk, v->as.s.ptr, v->as.s.len);
    case H5ARK_BIN:
        if (msgpack_pack_bin(pk, v->as.s.len)) return -1;
        return msgpack_pack_bin_body(pk, v->as.s.ptr, v->as.s.len);
    case H5ARK_ARRAY:
        if (msgpack_pack_array(pk, v->as.a.len)) return -1;
        for (size_t i = 0; i < v->as.a.len; i++)
            if (h5ark_value_pack(v->as.a.items[i], pk)) return -1;
        return 0;
    case H5ARK_MAP:
        if (msgpack_pack_map(pk, v->as.m.len)) return -1;
        for (size_t i = 0; i < v->as.m.len; i++) {
            size_t kl = strlen(v->as.m.keys[i]);
            if (msgpack_pack_str(pk, kl) || msgpack_pack_str_body(pk, v->as.m.keys[i], kl) ||
                h5ark_value_pack(v->as.m.vals[i], pk))
                return -1;
        }
        return 0;
    }
    return -1;
}

/* msgpack-c allocates a container's element array from its declared count before it
 * reads the elements, so a five-byte message claiming 2^32 entries would ask for 64 GiB.
 * This scanner walks the bytes first and accepts only messages whose declared counts are
 * backed by bytes, within a nesting limit. */
enum { SCAN_MAX_DEPTH = 32 };

static int be_read(const unsigned char *p, int n, uint64_t *out) {
    uint64_t x = 0;
    for (int i = 0; i < n; i++)
        x = (x << 8) | p[i];
    *out = x;
    return 0;
}

static int scan_value(const unsigned char *p, size_t len, size_t *pos, int depth,
                      const char **why) {
    if (depth > SCAN_MAX_DEPTH) {
        *why = "nested more than 32 levels deep";
        return -1;
    }
    if (*pos >= len) {
        *why = "truncated";
        return -1;
    }
    unsigned char t = p[(*pos)++];
    uint64_t n = 0, skip = 0, items = 0;
    int lenbytes = 0;
    bool is_map = false, container = false;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) return 0;
    if ((t & 0xe0) == 0xa0)
        skip = t & 0x1f;
    else if ((t & 0xf0) == 0x90)
        items = t & 0x0f, container = true;
    else if ((t & 0xf0) == 0x80)
        items = t & 0x0f, container = true, is_map = true;
    else {
        switch (t) {
        case 0xcc:
        case 0xd0: skip = 1; break;
        case 0xcd:
        case 0xd1: skip = 2; break;
        case 0xce:
        case 0xd2:
        case 0xca: skip = 4; break;
        case 0xcf:
        case 0xd3:
        case 0xcb: skip = 8; break;
        case 0xd9:
        case 0xc4: lenbytes = 1; break;
        case 0xda:
        case 0xc5: lenbytes = 2; break;
        case 0xdb:
        case 0xc6: lenbytes = 4; break;
        case 0xdc: lenbytes = 2, container = true; break;
        case 0xdd: lenbytes = 4, container = true; break;
        case 0xde: lenbytes = 2, container = true, is_map = true; break;
        case 0xdf: lenbytes = 4, container = true, is_map = true; break;
        default:
            *why = "uses a MessagePack type the protocol does not (ext or reserved)";
            return -1;
        }
        if (lenbytes) {
            if (len - *pos < (size_t)lenbytes) {
                *why = "truncated";
                return -1;
            }
            be_read(p + *pos, lenbytes, &n);
            *pos += (size_t)lenbytes;
            if (container)
                items = n;
            else
                skip = n;
        }
    }
    if (!container) {
        if (len - *pos < skip) {
            *why = "truncated";
            return -1;
        }
        bool is_str = (t & 0xe0) == 0xa0 || t == 0xd9 || t == 0xda || t == 0xdb;
        if (is_str && !utf8_valid(p + *pos, (size_t)skip)) {
            *why = "holds a string that is not valid UTF-8";
            return -1;
        }
        *pos += (size_t)skip;
        return 0;
    }
    uint64_t elems = is_map ? items * 2 : items;
    if (elems > len - *pos) { /* every element takes at least one byte */
        *why = "declares more elements than it has bytes";
        return -1;
    }
    for (uint64_t i = 0; i < elems; i++)
        if (scan_value(p, len, pos, depth + 1, why)) return -1;
    return 0;
}

h5ark_value *h5ark_value_decode(const void *data, size_t len, const char **why) {
    size_t pos = 0;
    *why = NULL;
    if (scan_value(data, len, &pos, 0, why)) return NULL;
    if (pos != len) {
        *why = "has trailing bytes after the first value";
        return NULL;
    }
    msgpack_zone zone;
    msgpack_zone_init(&zone, 2048);
    msgpack_object obj;
    size_t off = 0;
    h5ark_value *v = NULL;
    if (msgpack_unpack(data, len, &off, &zone, &obj) == MSGPACK_UNPACK_SUCCESS) {
        v = h5ark_value_from_msgpack(&obj);
        if (!v) *why = "has a map key that is not a string, or an unsupported type";
    } else {
        *why = "is not valid MessagePack";
    }
    msgpack_zone_destroy(&zone);
    return v;
}

int h5ark_value_encode(const h5ark_value *v, char **data, size_t *len) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    if (h5ark_value_pack(v, &pk) != 0) {
        msgpack_sbuffer_destroy(&sb);
        return -1;
    }
    *len = sb.size;
    *data = msgpack_sbuffer_release(&sb);
    if (!*data) { /* an empty buffer is never produced: every value packs to >= 1 byte */
        return -1;
    }
    return 0;
}

h5ark_value *h5ark_value_copy(const h5ark_value *v) {
    if (!v) return NULL;
    switch (v->kind) {
    case H5ARK_NIL: return h5ark_value_nil();
    case H5ARK_BOOL: return h5ark_value_bool(v->as.b);
    case H5ARK_INT: return h5ark_value_int(v->as.i);
    case H5ARK_UINT: return h5ark_value_uint(v->as.u);
    case H5ARK_FLOAT: return h5ark_value_float(v->as.f);
    case H5ARK_STR: return h5ark_value_strn(v->as.s.ptr, v->as.s.len);
    case H5ARK_BIN: return h5ark_value_bin(v->as.s.ptr, v->as.s.len);
    case H5ARK_ARRAY: {
        h5ark_value *a = h5ark_value_array();
        for (size_t i = 0; a && i < v->as.a.len; i++)
            if (h5ark_value_push(a, h5ark_value_copy(v->as.a.items[i]))) h5ark_value_destroy(&a);
        return a;
    }
    case H5ARK_MAP: {
        h5ark_value *m = h5ark_value_map();
        for (size_t i = 0; m && i < v->as.m.len; i++)
            if (h5ark_value_set(m, v->as.m.keys[i], h5ark_value_copy(v->as.m.vals[i])))
                h5ark_value_destroy(&m);
        return m;
    }
    }
    return NULL;
}
