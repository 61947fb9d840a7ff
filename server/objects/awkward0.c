/* awkward0 schemas: the allow-list check (see awkward0.h). */
#include "awkward0.h"

#include "registry.h"

#include <fnmatch.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lz4.h>
#include <lzma.h>
#include <zlib.h>

#define P(...)                                                                                     \
    {                                                                                              \
        (const char *const[]){__VA_ARGS__},                                                        \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)                      \
    }

const ak0_pattern ak0_default_whitelist[] = {
    P("numpy", "frombuffer"),
    P("zlib", "decompress"),
    P("lzma", "decompress"),
    P("backports.lzma", "decompress"),
    P("lz4.block", "decompress"),
    P("awkward0", "*Array"),
    P("awkward0", "Table"),
    P("awkward0", "numpy", "frombuffer"),
    P("awkward0.util", "frombuffer"),
    P("awkward0.persist"),
    P("awkward0.arrow", "_ParquetFile", "fromjson"),
    P("awkward", "*Array"),
    P("awkward", "Table"),
    P("awkward", "numpy", "frombuffer"),
    P("awkward.util", "frombuffer"),
    P("awkward.persist"),
    P("awkward.arrow", "_ParquetFile", "fromjson"),
    P("uproot3_methods.classes.*"),
    P("uproot3_methods.profiles.*"),
    P("uproot_methods.classes.*"),
    P("uproot_methods.profiles.*"),
    P("uproot.tree", "_LazyFiles"),
    P("uproot.tree", "_LazyTree"),
    P("uproot.tree", "_LazyBranch"),
};
const size_t ak0_default_whitelist_len =
    sizeof ak0_default_whitelist / sizeof ak0_default_whitelist[0];

typedef struct {
    const ak0_pattern *wl;
    size_t nwl;
    h5ark_error *err;
} walker;

/* awkward0's spec2function: an entry matches when every pair of (spec part, pattern
 * part) matches, over the shorter of the two (fnmatchcase: no special case for '/'). */
static bool allowed(const walker *w, json_t *spec) {
    size_t n = json_array_size(spec);
    for (size_t e = 0; e < w->nwl; e++) {
        bool ok = true;
        for (size_t i = 0; ok && i < n && i < w->wl[e].n; i++)
            ok = fnmatch(w->wl[e].parts[i], json_string_value(json_array_get(spec, i)), 0) == 0;
        if (ok) return true;
    }
    return false;
}

/* The spec as Python's repr writes a list of str: ['tests.test_persist', 'FloatPoint']. */
static void spec_repr(json_t *spec, char *out, size_t size) {
    size_t pos = 0;
    pos += (size_t)snprintf(out + pos, size - pos, "[");
    for (size_t i = 0; i < json_array_size(spec) && pos < size; i++)
        pos += (size_t)snprintf(out + pos, size - pos, "%s'%s'", i ? ", " : "",
                                json_string_value(json_array_get(spec, i)));
    if (pos < size) snprintf(out + pos, size - pos, "]");
}

static int check_spec(walker *w, json_t *spec) {
    bool strings = json_is_array(spec) && json_array_size(spec) > 0;
    for (size_t i = 0; strings && i < json_array_size(spec); i++)
        strings = json_is_string(json_array_get(spec, i));
    if (!strings)
        return h5ark_fail(w->err, H5ARK_SCHEMA_ERROR,
                          "awkward0 schema: a function is named by an array of strings");
    if (allowed(w, spec)) return 0;
    char repr[600];
    spec_repr(spec, repr, sizeof repr);
    return h5ark_fail(w->err, H5ARK_FORBIDDEN,
                      "callable not in whitelist; add it by passing a whitelist argument:\n\n"
                      "    whitelist = awkward0.persist.whitelist + [%s]",
                      repr);
}

static int walk(walker *w, json_t *node, int depth) {
    if (depth > AK0_MAX_DEPTH)
        return h5ark_fail(w->err, H5ARK_SCHEMA_ERROR,
                          "awkward0 schema: nested deeper than %d levels", AK0_MAX_DEPTH);
    if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v) {
            if (walk(w, v, depth + 1)) return -1;
        }
        return 0;
    }
    if (!json_is_object(node)) return 0;
    /* data, not schema: what they hold is never called */
    if (json_object_get(node, "json") || json_object_get(node, "dtype") ||
        json_object_get(node, "read") || json_object_get(node, "ref"))
        return 0;
    if (json_object_get(node, "python"))
        return h5ark_fail(w->err, H5ARK_FORBIDDEN,
                          "awkward0 schema: a pickled Python object ('python' node) is never "
                          "read");
    json_t *call = json_object_get(node, "call");
    if (call && check_spec(w, call)) return -1;
    json_t *fn = json_object_get(node, "function");
    if (fn && check_spec(w, fn)) return -1;
    /* then what the call takes, in awkward0's order: args, kwargs, and the containers */
    static const char *const keys[] = {"args", "kwargs", "list", "tuple", "dict", "pairs"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(node, keys[k]);
        if (!v) continue;
        if (json_is_object(v)) {
            const char *key;
            json_t *x;
            json_object_foreach(v, key, x) {
                if (walk(w, x, depth + 1)) return -1;
            }
        } else if (walk(w, v, depth + 1)) {
            return -1;
        }
    }
    return 0;
}

static json_t *load(const char *json, size_t len, h5ark_error *err) {
    if (len > AK0_MAX_SCHEMA_BYTES) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 schema: %zu bytes is more than %u", len,
                   AK0_MAX_SCHEMA_BYTES);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    if (!root) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 schema: not JSON: %s", jerr.text);
        return NULL;
    }
    if (!json_is_object(root) ||
        (!json_object_get(root, "awkward0") && !json_object_get(root, "awkward")) ||
        !json_object_get(root, "schema")) {
        json_decref(root);
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "awkward0 schema: not an awkward0 schema (no 'awkward0' and 'schema' keys)");
        return NULL;
    }
    return root;
}

int ak0_check_schema(const char *json, size_t len, const ak0_pattern *wl, size_t nwl,
                     h5ark_error *err) {
    json_t *root = load(json, len, err);
    if (!root) return -1;
    walker w = {wl ? wl : ak0_default_whitelist, wl ? nwl : ak0_default_whitelist_len, err};
    int rc = walk(&w, json_object_get(root, "schema"), 1);
    json_decref(root);
    return rc;
}

void ak0_top_call(const char *json, size_t len, char *out, size_t size) {
    h5ark_error ignored;
    out[0] = '\0';
    json_t *root = load(json, len, &ignored);
    json_t *call = root ? json_object_get(json_object_get(root, "schema"), "call") : NULL;
    size_t pos = 0;
    for (size_t i = 0; json_is_array(call) && i < json_array_size(call) && pos < size; i++)
        if (json_is_string(json_array_get(call, i)))
            pos += (size_t)snprintf(out + pos, size - pos, "%s%s", i ? "." : "",
                                    json_string_value(json_array_get(call, i)));
    json_decref(root);
}

/* ---- interpretation --------------------------------------------------------------------- */

/* zlib output is bounded: a blob is a part of one array. */
#define AK0_MAX_BLOB (UINT64_C(1) << 32)

typedef enum { V_JSON, V_DTYPE, V_BYTES, V_ARRAY, V_LIST } vkind;

typedef struct val val;
struct val {
    vkind kind;
    json_t *json; /* V_JSON: borrowed from the schema */
    /* V_DTYPE */
    char prim[32];
    size_t itemsize;
    bool swap, is_int, is_bool;
    uint64_t inner;
    json_t *shape; /* inner shape (a new array) */
    val **fields;  /* a record dtype's fields, packed in order (names in fnames) */
    const char **fnames;
    size_t nfields;
    /* V_BYTES (borrowed from a blob or from ctx->blocks) */
    const unsigned char *bytes;
    uint64_t nbytes;
    /* V_ARRAY: a form node (owned until given to a parent), its length, and for a
     * NumpyArray the buffer holding its data */
    json_t *form;
    uint64_t length;
    int buf;
    val *dt; /* a NumpyArray's dtype */
    /* V_LIST */
    val **items;
    size_t nitems;
    bool used;     /* an array given to a parent: a second use gets a copy (clone) */
    json_t *given; /* its form as it was given, for those copies */
};

typedef struct {
    ak0_blob_fn blob;
    void *bctx;
    h5ark_error *err;
    void **allocs; /* everything to free at the end */
    size_t nallocs, capallocs;
    val **vals; /* every value, whose forms not given to a parent are freed at the end */
    size_t nvals, capvals;
    struct {
        char name[40];
        unsigned char *data;
        uint64_t nbytes;
        bool out; /* false: turned into another buffer, kept for a shared array's copy */
    } * bufs;
    size_t nbufs, capbufs;
    struct {
        json_int_t id;
        val *v; /* NULL: being evaluated */
    } * memo;
    size_t nmemo, capmemo;
    int next_key;
    json_t *owned;     /* JSON made along the way (shapes), freed at the end */
    uint64_t reserved; /* bytes made, accounted against --max-memory */
    bool limited;      /* a reservation was refused (the error says so) */
} interp;

/* What the schema makes counts against --max-memory: a small schema may reference a big
 * blob many times, or a blob may decompress to far more than it holds. */
static int reserve(interp *c, uint64_t n) {
    if (registry_reserve(n, c->err)) {
        c->limited = true;
        return -1;
    }
    c->reserved += n;
    return 0;
}

static void *keep(interp *c, void *p) {
    if (!p) return NULL;
    if (c->nallocs == c->capallocs) {
        size_t cap = c->capallocs ? 2 * c->capallocs : 64;
        void **n = realloc(c->allocs, cap * sizeof *n);
        if (!n) {
            free(p);
            return NULL;
        }
        c->allocs = n;
        c->capallocs = cap;
    }
    return c->allocs[c->nallocs++] = p;
}

static json_t *keep_json(interp *c, json_t *j) {
    if (json_array_append_new(c->owned, j)) {
        h5ark_fail(c->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    return j;
}

static val *new_val(interp *c, vkind kind) {
    if (c->nvals == c->capvals) {
        size_t cap = c->capvals ? 2 * c->capvals : 64;
        val **n = realloc(c->vals, cap * sizeof *n);
        if (!n) {
            h5ark_fail(c->err, H5ARK_RESOURCE_LIMIT, "out of memory");
            return NULL;
        }
        c->vals = n;
        c->capvals = cap;
    }
    val *v = calloc(1, sizeof *v);
    if (v) c->vals[c->nvals++] = v;
    if (!v) {
        h5ark_fail(c->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    v->kind = kind;
    v->buf = -1;
    return v;
}

static int oom(interp *c) {
    return h5ark_fail(c->err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

static int not_read(interp *c, const char *what) {
    return h5ark_fail(c->err, H5ARK_TYPE_ERROR,
                      "awkward0 schema: %s has no awkward 2 equivalent that h5ark reads", what);
}

/* A new buffer "<key>-<attr>" taking `data` (malloc'd); its index, or -1. */
static int add_buf(interp *c, const char *key, const char *attr, unsigned char *data,
                   uint64_t nbytes) {
    if (c->nbufs == c->capbufs) {
        size_t cap = c->capbufs ? 2 * c->capbufs : 16;
        void *n = realloc(c->bufs, cap * sizeof *c->bufs);
        if (!n) {
            free(data);
            return oom(c);
        }
        c->bufs = n;
        c->capbufs = cap;
    }
    if (reserve(c, nbytes)) {
        free(data);
        return -1;
    }
    snprintf(c->bufs[c->nbufs].name, sizeof c->bufs[c->nbufs].name, "%s-%s", key, attr);
    c->bufs[c->nbufs].data = data;
    c->bufs[c->nbufs].nbytes = nbytes;
    c->bufs[c->nbufs].out = true;
    return (int)c->nbufs++;
}

/* Not in the result; its bytes stay until the end, as a shared array's copy may need them. */
static void drop_buf(interp *c, int i) {
    if (i >= 0) c->bufs[i].out = false;
}

static void next_key(interp *c, char *out, size_t size) {
    snprintf(out, size, "node%d", c->next_key++);
}

/* numpy dtype text: "int64", "<i8", ">u2", "bool", "|u1", "float32", ... */
static bool parse_dtype(const char *s, val *d) {
    static const struct {
        const char *name, *code, *prim;
        size_t size;
        bool is_int;
    } t[] = {
        {"bool", "b1", "bool", 1, true},
        {"int8", "i1", "int8", 1, true},
        {"uint8", "u1", "uint8", 1, true},
        {"int16", "i2", "int16", 2, true},
        {"uint16", "u2", "uint16", 2, true},
        {"int32", "i4", "int32", 4, true},
        {"uint32", "u4", "uint32", 4, true},
        {"int64", "i8", "int64", 8, true},
        {"uint64", "u8", "uint64", 8, true},
        {"float32", "f4", "float32", 4, false},
        {"float64", "f8", "float64", 8, false},
        {"float16", "f2", "float16", 2, false},
        {"complex64", "c8", "complex64", 8, false},
        {"complex128", "c16", "complex128", 16, false},
    };
    char order = '=';
    if (*s == '<' || *s == '>' || *s == '|' || *s == '=') order = *s++;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(s, t[i].name) == 0 || strcmp(s, t[i].code) == 0) {
            snprintf(d->prim, sizeof d->prim, "%s", t[i].prim);
            d->itemsize = t[i].size;
            d->is_int = t[i].is_int;
            d->is_bool = strcmp(t[i].prim, "bool") == 0;
            /* complex swaps each half; the rest as a whole */
            d->swap = order == '>' && t[i].size > 1;
            return true;
        }
    return false;
}

static val *eval(interp *c, json_t *node, int depth);

/* A shape: an integer or an array of them (numpy takes both), none negative. */
static bool shape_of(json_t *s, uint64_t *n) {
    *n = 1;
    if (json_is_integer(s)) {
        json_int_t k = json_integer_value(s);
        *n = (uint64_t)k;
        return k >= 0 && k <= (1 << 24);
    }
    if (!json_is_array(s) || json_array_size(s) > 8) return false;
    for (size_t i = 0; i < json_array_size(s); i++) {
        json_t *k = json_array_get(s, i);
        if (!json_is_integer(k) || json_integer_value(k) < 0 || json_integer_value(k) > (1 << 24))
            return false;
        *n *= (uint64_t)json_integer_value(k);
    }
    return *n <= (1 << 24);
}

/* awkward0's JSON of a numpy dtype: "int64" or ">u2"; [base, shape] (a sub-array); or a
 * record, [[name, dtype], ...] or [[name, dtype, shape], ...], its fields packed in order. */
static val *dtype_val(interp *c, json_t *x, int depth) {
    if (depth > AK0_MAX_DEPTH) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: nested deeper than %d levels",
                   AK0_MAX_DEPTH);
        return NULL;
    }
    val *v = new_val(c, V_DTYPE);
    if (!v) return NULL;
    v->inner = 1;
    if (json_is_string(x)) {
        if (parse_dtype(json_string_value(x), v)) return v;
        not_read(c, "a numpy dtype other than a number, a bool or a record of them");
        return NULL;
    }
    json_t *shape = json_array_get(x, 1);
    if (json_array_size(x) == 2 &&
        (json_is_integer(shape) ||
         (json_is_array(shape) &&
          (json_array_size(shape) == 0 || json_is_integer(json_array_get(shape, 0)))))) {
        val *base = dtype_val(c, json_array_get(x, 0), depth + 1);
        if (!base) return NULL;
        if (base->nfields) {
            not_read(c, "a sub-array of records");
            return NULL;
        }
        uint64_t n;
        if (!shape_of(shape, &n) || base->inner * n > (1 << 24)) {
            not_read(c, "that sub-array dtype");
            return NULL;
        }
        *v = *base;
        v->inner = base->inner * n;
        /* inner_shape: the base's then this one's, as numpy nests them */
        json_t *s = json_is_integer(shape) ? json_pack("[O]", shape) : json_copy(shape);
        if (!s || !keep_json(c, s)) return NULL;
        if (base->shape) json_array_extend(s, base->shape);
        v->shape = s;
        return v;
    }
    size_t nf = json_array_size(x);
    if (!json_is_array(x) || nf == 0 || nf > 4096) {
        not_read(c, "that numpy dtype");
        return NULL;
    }
    v->fields = keep(c, calloc(nf, sizeof *v->fields));
    v->fnames = keep(c, calloc(nf, sizeof *v->fnames));
    if (!v->fields || !v->fnames) {
        oom(c);
        return NULL;
    }
    v->nfields = nf;
    for (size_t i = 0; i < nf; i++) {
        json_t *f = json_array_get(x, i);
        size_t fl = json_array_size(f);
        if ((fl != 2 && fl != 3) || !json_is_string(json_array_get(f, 0))) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: a record dtype's field is not [name, dtype]");
            return NULL;
        }
        json_t *sub = json_array_get(f, 1);
        json_t *pair = fl == 3 ? json_pack("[OO]", sub, json_array_get(f, 2)) : NULL;
        if (fl == 3 && (!pair || !keep_json(c, pair))) return NULL;
        val *fd = dtype_val(c, pair ? pair : sub, depth + 1);
        if (!fd) return NULL;
        v->fields[i] = fd;
        v->fnames[i] = json_string_value(json_array_get(f, 0));
        v->itemsize += fd->itemsize * fd->inner;
        if (v->itemsize > (1u << 28)) { /* so that count * itemsize cannot overflow */
            not_read(c, "a record dtype of more than 256 MiB");
            return NULL;
        }
    }
    snprintf(v->prim, sizeof v->prim, "record");
    return v;
}

static val *arg(interp *c, json_t *call, size_t i, int depth) {
    json_t *args = json_object_get(call, "args");
    json_t *a = json_is_array(args) ? json_array_get(args, i) : NULL;
    if (!a) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a call lacks argument %zu", i);
        return NULL;
    }
    return eval(c, a, depth + 1);
}

static val *take(interp *c, val *v);

static val *want(interp *c, val *v, vkind kind, const char *what) {
    if (!v) return NULL;
    if (v->kind != kind) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: %s is not what it must be", what);
        return NULL;
    }
    return kind == V_ARRAY ? take(c, v) : v;
}

/* The integers of a 1-D integer (or bool) NumpyArray, as int64 (malloc'd). */
static int64_t *ints_of(interp *c, val *a, const char *what) {
    if (!a->dt || !a->dt->is_int || a->dt->inner != 1) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: %s must be 1-D integers", what);
        return NULL;
    }
    int64_t *out = malloc((a->length ? a->length : 1) * sizeof *out);
    if (!out) {
        oom(c);
        return NULL;
    }
    const unsigned char *p = c->bufs[a->buf].data;
    for (uint64_t i = 0; i < a->length; i++) {
        const unsigned char *e = p + i * a->dt->itemsize;
        bool sgn = a->dt->prim[0] == 'i';
        switch (a->dt->itemsize) {
        case 1: out[i] = sgn ? (int64_t)(int8_t)e[0] : (int64_t)e[0]; break;
        case 2: {
            uint16_t u;
            memcpy(&u, e, 2);
            out[i] = sgn ? (int64_t)(int16_t)u : (int64_t)u;
            break;
        }
        case 4: {
            uint32_t u;
            memcpy(&u, e, 4);
            out[i] = sgn ? (int64_t)(int32_t)u : (int64_t)u;
            break;
        }
        default: memcpy(&out[i], e, 8);
        }
    }
    return out;
}

static val *array_val(interp *c, json_t *form, uint64_t length) {
    val *v = new_val(c, V_ARRAY);
    if (!v || !form) {
        json_decref(form);
        if (v && !form) oom(c);
        return NULL;
    }
    v->form = form;
    v->length = length;
    return v;
}

/* A node of class `cls` with form_key `key` and content(s). */
static json_t *node(const char *cls, const char *key) {
    return json_pack("{s:s, s:s, s:{}}", "class", cls, "form_key", key, "parameters");
}

static int64_t json_int_or(json_t *j, int64_t def) {
    return json_is_integer(j) ? (int64_t)json_integer_value(j) : def;
}

/* The form f (a copy, changed in place) and everything under it with fresh form keys, each
 * buffer of the old keys copied under the new; *dst is the copy of buffer src. Only the
 * buffers there were before (nold) are looked at. */
static int rekey(interp *c, json_t *f, int src, int *dst, size_t nold) {
    json_t *k = json_object_get(f, "form_key");
    if (json_is_string(k)) {
        char old[48], key[32];
        snprintf(old, sizeof old, "%s-", json_string_value(k));
        size_t ol = strlen(old);
        next_key(c, key, sizeof key);
        for (size_t i = 0; i < nold; i++) {
            if (strncmp(c->bufs[i].name, old, ol) != 0) continue;
            char attr[40];
            snprintf(attr, sizeof attr, "%s", c->bufs[i].name + ol);
            uint64_t nb = c->bufs[i].nbytes;
            unsigned char *d = malloc(nb ? nb : 1);
            if (!d) return oom(c);
            memcpy(d, c->bufs[i].data, nb);
            int bi = add_buf(c, key, attr, d, nb);
            if (bi < 0) return -1;
            if ((int)i == src) *dst = bi;
        }
        if (json_object_set_new(f, "form_key", json_string(key))) return oom(c);
    }
    json_t *ct = json_object_get(f, "content");
    if (json_is_object(ct) && rekey(c, ct, src, dst, nold)) return -1;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(f, "contents"), i, x) {
        if (rekey(c, x, src, dst, nold)) return -1;
    }
    return 0;
}

/* An array for a parent. awkward0 lets one array appear in several places (a {"ref": id});
 * an awkward 2 form is a tree, so every use after the first gets a copy of its own. */
static val *take(interp *c, val *v) {
    if (!v->used) {
        v->used = true;
        if (!v->given) v->given = json_incref(v->form);
        return v;
    }
    json_t *f = json_deep_copy(v->given);
    int bi = -1;
    if (!f) {
        oom(c);
        return NULL;
    }
    if (rekey(c, f, v->buf, &bi, c->nbufs)) {
        json_decref(f);
        return NULL;
    }
    val *n = array_val(c, f, v->length);
    if (n) {
        n->buf = bi;
        n->dt = v->dt;
        n->used = true;
    }
    return n;
}

/* int64 values as a new buffer "<key>-<attr>" */
static int int64_buf(interp *c, const char *key, const char *attr, int64_t *v, uint64_t n) {
    return add_buf(c, key, attr, (unsigned char *)v, n * 8);
}

/* A NumpyArray of the items of dtype d at byte `off` of each of n records of `stride` bytes
 * (a plain array: stride is the item, off 0), little-endian; *bi its buffer. */
static json_t *numpy_form(interp *c, const unsigned char *src, uint64_t n, uint64_t stride,
                          uint64_t off, const val *d, int *bi) {
    uint64_t w = d->itemsize * d->inner, need = n * w;
    unsigned char *data = malloc(need ? need : 1);
    if (!data) {
        oom(c);
        return NULL;
    }
    if (stride == w)
        memcpy(data, src + off, need);
    else
        for (uint64_t r = 0; r < n; r++)
            memcpy(data + r * w, src + r * stride + off, w);
    if (d->swap) { /* awkward 2 buffers are little-endian; complex swaps each half */
        size_t h = strncmp(d->prim, "complex", 7) == 0 ? d->itemsize / 2 : d->itemsize;
        for (uint64_t k = 0; k + h <= need; k += h)
            for (size_t x = 0; x < h / 2; x++) {
                unsigned char t = data[k + x];
                data[k + x] = data[k + h - 1 - x];
                data[k + h - 1 - x] = t;
            }
    }
    char key[32];
    next_key(c, key, sizeof key);
    if ((*bi = add_buf(c, key, "data", data, need)) < 0) return NULL;
    json_t *f = node("NumpyArray", key);
    if (!f || json_object_set_new(f, "primitive", json_string(d->prim)) ||
        json_object_set_new(f, "inner_shape", d->shape ? json_copy(d->shape) : json_array())) {
        json_decref(f);
        oom(c);
        return NULL;
    }
    return f;
}

/* A RecordArray of a record dtype's fields (numpy's structured arrays: awkward 2 makes
 * records of them too), each field's column taken out of the packed records. */
static json_t *record_form(interp *c, const unsigned char *src, uint64_t n, uint64_t stride,
                           uint64_t off, const val *d) {
    char key[32];
    next_key(c, key, sizeof key);
    json_t *f = node("RecordArray", key), *fields = json_array(), *contents = json_array();
    if (!f || !fields || !contents || json_object_set(f, "fields", fields) ||
        json_object_set(f, "contents", contents)) {
        oom(c);
        f = NULL;
    }
    for (size_t i = 0; f && i < d->nfields; i++) {
        const val *fd = d->fields[i];
        int bi;
        json_t *sub = fd->nfields ? record_form(c, src, n, stride, off, fd)
                                  : numpy_form(c, src, n, stride, off, fd, &bi);
        if (sub && (json_array_append_new(contents, sub) ||
                    json_array_append_new(fields, json_string(d->fnames[i]))))
            sub = NULL, oom(c);
        if (!sub) { /* the error is said */
            json_decref(f);
            f = NULL;
        }
        off += fd->itemsize * fd->inner;
    }
    json_decref(fields);
    json_decref(contents);
    return f;
}

static val *call_frombuffer(interp *c, json_t *j, int depth) {
    val *b = want(c, arg(c, j, 0, depth), V_BYTES, "frombuffer's buffer");
    val *d = b ? want(c, arg(c, j, 1, depth), V_DTYPE, "frombuffer's dtype") : NULL;
    val *n = d ? want(c, arg(c, j, 2, depth), V_JSON, "frombuffer's count") : NULL;
    if (!n) return NULL;
    int64_t count = json_int_or(n->json, -1);
    if (count < 0 || (uint64_t)count > AK0_MAX_BLOB) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: frombuffer count is not a size");
        return NULL;
    }
    uint64_t need = (uint64_t)count * d->itemsize * d->inner;
    if (need > b->nbytes) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                   "awkward0 schema: a blob of %llu bytes holds fewer than %lld items of %s",
                   (unsigned long long)b->nbytes, (long long)count, d->prim);
        return NULL;
    }
    if (d->nfields) { /* a record array: a column per field */
        json_t *f = record_form(c, b->bytes, (uint64_t)count, d->itemsize, 0, d);
        return f ? array_val(c, f, (uint64_t)count) : NULL;
    }
    int bi;
    json_t *f =
        numpy_form(c, b->bytes, (uint64_t)count, need / (count ? (uint64_t)count : 1), 0, d, &bi);
    val *v = f ? array_val(c, f, (uint64_t)count) : NULL;
    if (v) {
        v->buf = bi;
        v->dt = d;
    }
    return v;
}

static val *bytes_val(interp *c, unsigned char *out, uint64_t len) {
    val *v = new_val(c, V_BYTES);
    if (!v || !keep(c, out)) {
        if (v) oom(c);
        return NULL;
    }
    v->bytes = out;
    v->nbytes = len;
    return v;
}

/* A decompressor's output buffer of cap bytes (reserved first), or NULL. */
static unsigned char *blob_out(interp *c, uint64_t cap) {
    return reserve(c, cap) ? NULL : malloc(cap);
}

/* A decompressor's output buffer, full: doubled, up to AK0_MAX_BLOB; false when it may not
 * grow (the blob is refused) or memory ran out (*out then still valid, freed by the caller). */
static bool grow_blob(interp *c, unsigned char **out, uint64_t *cap) {
    if (*cap >= AK0_MAX_BLOB || reserve(c, *cap)) return false;
    unsigned char *n = realloc(*out, *cap * 2);
    if (!n) return false;
    *out = n;
    *cap *= 2;
    return true;
}

static val *call_inflate(interp *c, json_t *j, int depth) {
    val *b = want(c, arg(c, j, 0, depth), V_BYTES, "decompress's buffer");
    if (!b) return NULL;
    z_stream zs = {0};
    if (inflateInit(&zs) != Z_OK) {
        oom(c);
        return NULL;
    }
    uint64_t cap = b->nbytes * 4 + 64, len = 0;
    unsigned char *out = blob_out(c, cap);
    zs.next_in = (unsigned char *)b->bytes;
    int rc = Z_OK;
    uint64_t left = b->nbytes;
    while (out && rc != Z_STREAM_END) {
        if (len == cap && !grow_blob(c, &out, &cap)) break;
        uInt in = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
        zs.avail_in = in;
        uInt room = cap - len > UINT32_MAX ? UINT32_MAX : (uInt)(cap - len);
        zs.next_out = out + len;
        zs.avail_out = room;
        rc = inflate(&zs, Z_NO_FLUSH);
        left -= in - zs.avail_in;
        len += room - zs.avail_out;
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
        if (rc == Z_BUF_ERROR && zs.avail_out != 0) break; /* input ended early */
    }
    inflateEnd(&zs);
    if (!out || rc != Z_STREAM_END) {
        free(out);
        if (!c->limited)
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: a zlib blob does not decompress (or is over 4 GiB)");
        return NULL;
    }
    return bytes_val(c, out, len);
}

/* lzma.decompress: .xz or .lzma, as Python's FORMAT_AUTO takes them */
static val *call_unxz(interp *c, json_t *j, int depth) {
    val *b = want(c, arg(c, j, 0, depth), V_BYTES, "decompress's buffer");
    if (!b) return NULL;
    lzma_stream zs = LZMA_STREAM_INIT;
    if (lzma_auto_decoder(&zs, AK0_MAX_BLOB, 0) != LZMA_OK) {
        oom(c);
        return NULL;
    }
    uint64_t cap = b->nbytes * 4 + 64, len = 0;
    unsigned char *out = blob_out(c, cap);
    zs.next_in = b->bytes;
    zs.avail_in = b->nbytes;
    lzma_ret rc = LZMA_OK;
    while (out && rc == LZMA_OK) {
        if (len == cap && !grow_blob(c, &out, &cap)) break;
        zs.next_out = out + len;
        zs.avail_out = cap - len;
        rc = lzma_code(&zs, LZMA_FINISH);
        len = cap - zs.avail_out;
    }
    lzma_end(&zs);
    if (!out || rc != LZMA_STREAM_END) {
        free(out);
        if (!c->limited)
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: an lzma blob does not decompress (or is over 4 GiB)");
        return NULL;
    }
    return bytes_val(c, out, len);
}

/* lz4.block.decompress: the size (4 bytes, little-endian) then one LZ4 block */
static val *call_unlz4(interp *c, json_t *j, int depth) {
    val *b = want(c, arg(c, j, 0, depth), V_BYTES, "decompress's buffer");
    if (!b) return NULL;
    uint32_t size = 0;
    if (b->nbytes >= 4)
        size = (uint32_t)b->bytes[0] | (uint32_t)b->bytes[1] << 8 | (uint32_t)b->bytes[2] << 16 |
               (uint32_t)b->bytes[3] << 24;
    unsigned char *out = b->nbytes >= 4 && size <= INT32_MAX && b->nbytes - 4 <= INT32_MAX
                             ? blob_out(c, (uint64_t)size + 1)
                             : NULL;
    int got = out ? LZ4_decompress_safe((const char *)b->bytes + 4, (char *)out,
                                        (int)(b->nbytes - 4), (int)size)
                  : -1;
    if (got < 0 || (uint32_t)got != size) {
        free(out);
        if (!c->limited)
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: an lz4.block blob does not decompress");
        return NULL;
    }
    return bytes_val(c, out, size);
}

/* offsets from counts (JaggedArray.fromcounts, StringArray.fromcounts) */
static int64_t *offsets_of(interp *c, val *counts) {
    int64_t *n = ints_of(c, counts, "counts");
    int64_t *off = n ? malloc((counts->length + 1) * sizeof *off) : NULL;
    if (n && !off) oom(c);
    for (uint64_t i = 0; off && i <= counts->length; i++) {
        if (i && n[i - 1] < 0) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a negative count");
            free(off);
            off = NULL;
            break;
        }
        off[i] = i ? off[i - 1] + n[i - 1] : 0;
    }
    free(n);
    return off;
}

static val *list_offsets(interp *c, val *counts, val *content, json_t *params,
                         json_t *content_params, bool given) {
    /* counts, or (given) the offsets themselves (fromoffsets: one more than the rows) */
    int64_t *off = given ? ints_of(c, counts, "offsets") : offsets_of(c, counts);
    if (off && given && counts->length == 0) {
        free(off);
        off = NULL;
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: offsets are empty");
    }
    if (!off) {
        json_decref(params);
        json_decref(content_params);
        return NULL;
    }
    if (given) counts->length--; /* rows */
    drop_buf(c, counts->buf);
    char key[32];
    next_key(c, key, sizeof key);
    if (int64_buf(c, key, "offsets", off, counts->length + 1) < 0) return NULL;
    json_t *f = node("ListOffsetArray", key);
    if (!f) return array_val(c, NULL, 0);
    json_object_set_new(f, "offsets", json_string("i64"));
    if (params) json_object_set_new(f, "parameters", params);
    json_t *cf = content->form;
    content->form = NULL;
    if (content_params) { /* on a copy: the form as given stays as it was for other uses */
        json_t *copy = json_copy(cf);
        json_decref(cf);
        if ((cf = copy))
            json_object_set_new(cf, "parameters", content_params);
        else
            json_decref(content_params);
    }
    json_object_set_new(f, "content", cf);
    return array_val(c, f, counts->length);
}

/* A UnionArray of the arrays in cs with the tags and index the caller made (taken over:
 * freed on failure); rc is the caller's outcome so far. The schema's own tags (t) and index
 * (x, when it gave one) give way to the new buffers. */
static val *union_val(interp *c, int rc, val *t, val *x, val *cs, int8_t *tags, int64_t *xv) {
    json_t *contents = rc == 0 ? json_array() : NULL;
    for (size_t i = 0; contents && i < cs->nitems; i++) {
        val *v = cs->items[i];
        if (v->kind != V_ARRAY) {
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                            "awkward0 schema: a union content is not an array");
            break;
        }
        if (!(v = take(c, v))) {
            rc = -1;
            break;
        }
        json_array_append_new(contents, v->form);
        v->form = NULL;
    }
    char key[32];
    next_key(c, key, sizeof key);
    if (rc || !contents) {
        free(xv);
        free(tags);
        json_decref(contents);
        if (!rc) oom(c);
        return NULL;
    }
    drop_buf(c, t->buf);
    if (x) drop_buf(c, x->buf);
    if (add_buf(c, key, "tags", (unsigned char *)tags, t->length) < 0 ||
        int64_buf(c, key, "index", xv, t->length) < 0) {
        json_decref(contents);
        return NULL;
    }
    json_t *f = node("UnionArray", key);
    if (!f) {
        json_decref(contents);
        return array_val(c, NULL, 0);
    }
    json_object_set_new(f, "tags", json_string("i8"));
    json_object_set_new(f, "index", json_string("i64"));
    json_object_set_new(f, "contents", contents);
    return array_val(c, f, t->length);
}

static int find_buf(interp *c, json_t *f, const char *attr) {
    char name[48];
    snprintf(name, sizeof name, "%s-%s", json_string_value(json_object_get(f, "form_key")), attr);
    for (size_t i = 0; i < c->nbufs; i++)
        if (strcmp(c->bufs[i].name, name) == 0) return (int)i;
    return -1;
}

static bool is_class(json_t *f, const char *cls) {
    const char *s = json_string_value(json_object_get(f, "class"));
    return s && strcmp(s, cls) == 0;
}

/* Items in a NumpyArray's buffer (0 when an item has no bytes), rows of a ListOffsetArray:
 * the lengths of the nodes concat takes. */
static uint64_t node_len(interp *c, json_t *f) {
    int b = find_buf(c, f, is_class(f, "NumpyArray") ? "data" : "offsets");
    if (b < 0) return 0;
    if (is_class(f, "ListOffsetArray"))
        return c->bufs[b].nbytes < 8 ? 0 : c->bufs[b].nbytes / 8 - 1;
    val d = {0};
    parse_dtype(json_string_value(json_object_get(f, "primitive")), &d);
    uint64_t w = d.itemsize;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(f, "inner_shape"), i, k) {
        w *= (uint64_t)json_integer_value(k);
    }
    return w ? c->bufs[b].nbytes / w : 0;
}

/* The int64 offsets of a ListOffsetArray of this interpreter, as an array of n + 1. */
static const int64_t *offsets_at(interp *c, json_t *f, uint64_t *n) {
    int b = find_buf(c, f, "offsets");
    if (b < 0 || c->bufs[b].nbytes < 8) return NULL;
    *n = c->bufs[b].nbytes / 8 - 1;
    return (const int64_t *)c->bufs[b].data;
}

/* ChunkedArray: the n chunks' forms (all of one type) as one array, their buffers joined.
 * NumpyArray chunks join their data; ListOffsetArray chunks their contents, with offsets
 * moved by the contents before them (a ListArray when the rows do not tile the contents). */
static json_t *concat(interp *c, json_t **f, size_t n, int depth) {
    if (depth > AK0_MAX_DEPTH) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: nested deeper than %d levels",
                   AK0_MAX_DEPTH);
        return NULL;
    }
    bool numpy = is_class(f[0], "NumpyArray"), list = is_class(f[0], "ListOffsetArray");
    for (size_t i = 1; i < n; i++) {
        static const char *const same[] = {"class", "parameters", "primitive", "inner_shape"};
        for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
            if (!json_equal(json_object_get(f[0], same[k]), json_object_get(f[i], same[k])) &&
                (json_object_get(f[0], same[k]) || json_object_get(f[i], same[k]))) {
                not_read(c, "a ChunkedArray whose chunks differ in type");
                return NULL;
            }
    }
    if (!numpy && !list) {
        char what[120];
        snprintf(what, sizeof what, "a ChunkedArray of %.40s chunks",
                 json_string_value(json_object_get(f[0], "class")));
        not_read(c, what);
        return NULL;
    }
    char key[32];
    next_key(c, key, sizeof key);
    json_t *out = json_copy(f[0]);
    if (!out || json_object_set_new(out, "form_key", json_string(key))) {
        json_decref(out);
        oom(c);
        return NULL;
    }
    if (numpy) {
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++) {
            int b = find_buf(c, f[i], "data");
            total += b < 0 ? 0 : c->bufs[b].nbytes;
        }
        unsigned char *data = malloc(total ? total : 1);
        uint64_t pos = 0;
        for (size_t i = 0; data && i < n; i++) {
            int b = find_buf(c, f[i], "data");
            if (b < 0) continue;
            memcpy(data + pos, c->bufs[b].data, c->bufs[b].nbytes);
            pos += c->bufs[b].nbytes;
            drop_buf(c, b);
        }
        if (!data) oom(c);
        if (!data || add_buf(c, key, "data", data, total) < 0) {
            json_decref(out);
            return NULL;
        }
        return out;
    }
    json_t **cs = calloc(n, sizeof *cs);
    uint64_t rows = 0, *clen = calloc(n, sizeof *clen);
    bool tiled = true;
    int rc = cs && clen ? 0 : oom(c);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t r = 0;
        const int64_t *o = offsets_at(c, f[i], &r);
        if (!o || !(cs[i] = json_object_get(f[i], "content"))) {
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a chunk has no offsets");
            break;
        }
        clen[i] = node_len(c, cs[i]);
        for (uint64_t k = 0; rc == 0 && k <= r; k++)
            if (o[k] < 0 || (uint64_t)o[k] > clen[i] || (k && o[k] < o[k - 1]))
                rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                                "awkward0 schema: a ChunkedArray chunk's offsets are out of its "
                                "content");
        tiled = tiled && o[0] == 0 && (uint64_t)o[r] == clen[i];
        rows += r;
    }
    json_t *content = rc == 0 ? concat(c, cs, n, depth + 1) : NULL;
    int64_t *a = content ? malloc((rows + 1) * 8) : NULL, *b = NULL;
    if (content && !a) oom(c);
    if (a && !tiled && !(b = malloc((rows ? rows : 1) * 8))) oom(c);
    if (a && (tiled || b)) {
        uint64_t pos = 0, shift = 0;
        a[0] = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = 0;
            const int64_t *o = offsets_at(c, f[i], &r);
            for (uint64_t k = 0; k < r; k++, pos++) {
                if (tiled) {
                    a[pos + 1] = o[k + 1] + (int64_t)shift;
                } else {
                    a[pos] = o[k] + (int64_t)shift;
                    b[pos] = o[k + 1] + (int64_t)shift;
                }
            }
            drop_buf(c, find_buf(c, f[i], "offsets"));
            shift += clen[i];
        }
        if (tiled) {
            rc = int64_buf(c, key, "offsets", a, rows + 1);
        } else if ((rc = int64_buf(c, key, "starts", a, rows)) >= 0) {
            rc = int64_buf(c, key, "stops", b, rows);
        } else {
            free(b); /* add_buf took a, even failing */
        }
        a = b = NULL;
    } else {
        rc = -1;
    }
    free(a);
    free(b);
    free(cs);
    free(clen);
    if (rc < 0 || (!tiled && (json_object_del(out, "offsets") ||
                              json_object_set_new(out, "class", json_string("ListArray")) ||
                              json_object_set_new(out, "starts", json_string("i64")) ||
                              json_object_set_new(out, "stops", json_string("i64"))))) {
        if (rc == 0) oom(c);
        json_decref(content);
        json_decref(out);
        return NULL;
    }
    json_object_set_new(out, "content", content);
    return out;
}

static val *call_chunked(interp *c, json_t *j, int depth) {
    val *cs = want(c, arg(c, j, 0, depth), V_LIST, "ChunkedArray's chunks");
    if (!cs) return NULL;
    json_t *counts = NULL;
    if (json_array_size(json_object_get(j, "args")) > 1) {
        val *cn = want(c, arg(c, j, 1, depth), V_JSON, "ChunkedArray's counts");
        if (!cn) return NULL;
        counts = cn->json;
    }
    char key[32];
    if (cs->nitems == 0) { /* no chunks, no type: awkward 2's EmptyArray */
        next_key(c, key, sizeof key);
        return array_val(c, node("EmptyArray", key), 0);
    }
    json_t **fs = calloc(cs->nitems, sizeof *fs);
    uint64_t total = 0;
    int rc = fs ? 0 : oom(c);
    for (size_t i = 0; rc == 0 && i < cs->nitems; i++) {
        val *v = cs->items[i];
        if (v->kind != V_ARRAY) {
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                            "awkward0 schema: a ChunkedArray chunk is not an array");
            break;
        }
        if (!(v = take(c, v))) {
            rc = -1;
            break;
        }
        json_t *k = json_is_array(counts) ? json_array_get(counts, i) : NULL;
        if (k && json_int_or(k, -1) != (int64_t)v->length) {
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                            "awkward0 schema: ChunkedArray's counts do not match its chunks");
            break;
        }
        fs[i] = v->form;
        v->form = NULL;
        total += v->length;
    }
    json_t *f = NULL;
    if (rc == 0) f = cs->nitems == 1 ? json_incref(fs[0]) : concat(c, fs, cs->nitems, depth + 1);
    for (size_t i = 0; fs && i < cs->nitems; i++)
        json_decref(fs[i]);
    free(fs);
    if (!f) return NULL;
    return array_val(c, f, total);
}

static val *call(interp *c, json_t *j, int depth) {
    json_t *spec = json_object_get(j, "call");
    char name[200] = "";
    size_t pos = 0;
    for (size_t i = 0; i < json_array_size(spec) && pos < sizeof name; i++)
        pos += (size_t)snprintf(name + pos, sizeof name - pos, "%s%s", i ? "." : "",
                                json_string_value(json_array_get(spec, i)));
    const char *n = strncmp(name, "awkward0.", 9) == 0  ? name + 9
                    : strncmp(name, "awkward.", 8) == 0 ? name + 8
                                                        : name;
    if (strcmp(n, "numpy.frombuffer") == 0 || strcmp(name, "numpy.frombuffer") == 0 ||
        strcmp(n, "util.frombuffer") == 0)
        return call_frombuffer(c, j, depth);
    if (strcmp(name, "zlib.decompress") == 0) return call_inflate(c, j, depth);
    if (strcmp(name, "lzma.decompress") == 0 || strcmp(name, "backports.lzma.decompress") == 0)
        return call_unxz(c, j, depth);
    if (strcmp(name, "lz4.block.decompress") == 0) return call_unlz4(c, j, depth);
    if (strcmp(n, "JaggedArray.fromcounts") == 0 || strcmp(n, "JaggedArray.fromoffsets") == 0) {
        val *cn = want(c, arg(c, j, 0, depth), V_ARRAY, "JaggedArray's counts or offsets");
        val *ct = cn ? want(c, arg(c, j, 1, depth), V_ARRAY, "JaggedArray's content") : NULL;
        return ct ? list_offsets(c, cn, ct, NULL, NULL, n[16] == 'o') : NULL;
    }
    if (strcmp(n, "StringArray.fromcounts") == 0 || strcmp(n, "StringArray.fromoffsets") == 0) {
        bool given = n[16] == 'o';
        val *cn = want(c, arg(c, j, 0, depth), V_ARRAY, "StringArray's counts");
        val *ct = cn ? want(c, arg(c, j, 1, depth), V_ARRAY, "StringArray's content") : NULL;
        val *enc = ct ? arg(c, j, 2, depth) : NULL;
        if (!enc) return NULL;
        if (!ct->dt || strcmp(ct->dt->prim, "uint8") != 0 || ct->dt->inner != 1) {
            not_read(c, "a StringArray whose content is not bytes");
            return NULL;
        }
        bool utf8 = enc->kind == V_JSON && json_is_string(enc->json);
        return list_offsets(c, cn, ct,
                            json_pack("{s:s}", "__array__", utf8 ? "string" : "bytestring"),
                            json_pack("{s:s}", "__array__", utf8 ? "char" : "byte"), given);
    }
    if (strcmp(n, "JaggedArray") == 0) {
        val *s = want(c, arg(c, j, 0, depth), V_ARRAY, "JaggedArray's starts");
        val *e = s ? want(c, arg(c, j, 1, depth), V_ARRAY, "JaggedArray's stops") : NULL;
        val *ct = e ? want(c, arg(c, j, 2, depth), V_ARRAY, "JaggedArray's content") : NULL;
        int64_t *sv = ct ? ints_of(c, s, "starts") : NULL;
        int64_t *ev = sv ? ints_of(c, e, "stops") : NULL;
        if (!ev) {
            free(sv);
            return NULL;
        }
        if (e->length < s->length) {
            free(sv);
            free(ev);
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: fewer stops than starts");
            return NULL;
        }
        drop_buf(c, s->buf);
        drop_buf(c, e->buf);
        char key[32];
        next_key(c, key, sizeof key);
        if (int64_buf(c, key, "starts", sv, s->length) < 0 ||
            int64_buf(c, key, "stops", ev, s->length) < 0)
            return NULL;
        json_t *f = node("ListArray", key);
        if (!f) return array_val(c, NULL, 0);
        json_object_set_new(f, "starts", json_string("i64"));
        json_object_set_new(f, "stops", json_string("i64"));
        json_object_set_new(f, "content", ct->form);
        ct->form = NULL;
        return array_val(c, f, s->length);
    }
    if (strcmp(n, "Table.frompairs") == 0) {
        val *pairs = want(c, arg(c, j, 0, depth), V_LIST, "Table's pairs");
        if (!pairs) return NULL;
        json_t *args = json_object_get(j, "args");
        if (json_array_size(args) > 1) {
            val *rs = want(c, arg(c, j, 1, depth), V_JSON, "Table's rowstart");
            if (!rs) return NULL;
            if (json_int_or(rs->json, -1) != 0) {
                not_read(c, "a Table view that does not start at row 0");
                return NULL;
            }
        }
        char key[32];
        next_key(c, key, sizeof key);
        json_t *f = node("RecordArray", key), *fields = json_array(), *contents = json_array();
        uint64_t length = UINT64_MAX;
        for (size_t i = 0; f && fields && contents && i < pairs->nitems; i++) {
            val *p = pairs->items[i], *col = NULL;
            bool pair = p->kind == V_LIST && p->nitems == 2 && p->items[0]->kind == V_JSON &&
                        json_is_string(p->items[0]->json) && p->items[1]->kind == V_ARRAY;
            if (!pair)
                h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                           "awkward0 schema: a Table column is not a (name, array) pair");
            if (!pair || !(col = take(c, p->items[1]))) {
                json_decref(f);
                json_decref(fields);
                json_decref(contents);
                return NULL;
            }
            json_array_append_new(fields, json_string(json_string_value(p->items[0]->json)));
            json_array_append_new(contents, col->form);
            col->form = NULL;
            if (col->length < length) length = col->length;
        }
        if (!f || !fields || !contents) {
            json_decref(f);
            json_decref(fields);
            json_decref(contents);
            oom(c);
            return NULL;
        }
        /* columns "0", "1", ... in order are a tuple, as awkward0 names a tuple's */
        bool tuple = json_array_size(fields) > 0;
        for (size_t i = 0; tuple && i < json_array_size(fields); i++) {
            char num[32];
            snprintf(num, sizeof num, "%zu", i);
            tuple = strcmp(json_string_value(json_array_get(fields, i)), num) == 0;
        }
        if (tuple) {
            json_decref(fields);
            fields = json_null();
        }
        json_object_set_new(f, "fields", fields);
        json_object_set_new(f, "contents", contents);
        return array_val(c, f, length == UINT64_MAX ? 0 : length);
    }
    if (strcmp(n, "Table.fromview") == 0) {
        val *view = want(c, arg(c, j, 0, depth), V_LIST, "Table's view");
        val *t = view ? want(c, arg(c, j, 1, depth), V_ARRAY, "Table.fromview's table") : NULL;
        if (!t) return NULL;
        bool whole = view->nitems == 3 && view->items[0]->kind == V_JSON &&
                     view->items[1]->kind == V_JSON && view->items[2]->kind == V_JSON &&
                     json_int_or(view->items[0]->json, -1) == 0 &&
                     json_int_or(view->items[1]->json, -1) == 1 &&
                     json_int_or(view->items[2]->json, -1) == (int64_t)t->length;
        if (!whole) {
            not_read(c, "a Table view of part of its rows");
            return NULL;
        }
        t->used = false; /* passed through whole */
        return t;
    }
    if (strcmp(n, "MaskedArray") == 0 || strcmp(n, "BitMaskedArray") == 0) {
        bool bit = n[0] == 'B';
        val *m = want(c, arg(c, j, 0, depth), V_ARRAY, "the mask");
        val *ct = m ? want(c, arg(c, j, 1, depth), V_ARRAY, "the content") : NULL;
        if (!ct) return NULL;
        json_t *args = json_object_get(j, "args");
        bool maskedwhen = true, lsb = true;
        if (json_array_size(args) > 2) {
            val *mw = want(c, arg(c, j, 2, depth), V_JSON, "maskedwhen");
            if (!mw) return NULL;
            maskedwhen = json_is_true(mw->json);
        }
        if (bit && json_array_size(args) > 3) {
            val *lo = want(c, arg(c, j, 3, depth), V_JSON, "lsborder");
            if (!lo) return NULL;
            lsb = json_is_true(lo->json);
        }
        if (!m->dt || m->dt->itemsize != 1 || m->dt->inner != 1) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a mask must be bytes");
            return NULL;
        }
        uint64_t length = bit ? ct->length : m->length;
        uint64_t mbytes = bit ? (length + 7) / 8 : length;
        if (m->length < mbytes) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: the mask is too short");
            return NULL;
        }
        char key[32];
        next_key(c, key, sizeof key);
        unsigned char *mask = malloc(mbytes ? mbytes : 1);
        if (!mask) {
            oom(c);
            return NULL;
        }
        memcpy(mask, c->bufs[m->buf].data, mbytes);
        drop_buf(c, m->buf);
        if (add_buf(c, key, "mask", mask, mbytes) < 0) return NULL;
        json_t *f = node(bit ? "BitMaskedArray" : "ByteMaskedArray", key);
        if (!f) return array_val(c, NULL, 0);
        json_object_set_new(f, "mask", json_string(bit ? "u8" : "i8"));
        json_object_set_new(f, "valid_when", json_boolean(!maskedwhen));
        if (bit) json_object_set_new(f, "lsb_order", json_boolean(lsb));
        json_object_set_new(f, "content", ct->form);
        ct->form = NULL;
        return array_val(c, f, length);
    }
    if (strcmp(n, "IndexedArray") == 0 || strcmp(n, "IndexedMaskedArray") == 0) {
        bool opt = n[7] == 'M';
        val *x = want(c, arg(c, j, 0, depth), V_ARRAY, "the index");
        val *ct = x ? want(c, arg(c, j, 1, depth), V_ARRAY, "the content") : NULL;
        int64_t *iv = ct ? ints_of(c, x, "the index") : NULL;
        if (!iv) return NULL;
        drop_buf(c, x->buf);
        char key[32];
        next_key(c, key, sizeof key);
        if (int64_buf(c, key, "index", iv, x->length) < 0) return NULL;
        json_t *f = node(opt ? "IndexedOptionArray" : "IndexedArray", key);
        if (!f) return array_val(c, NULL, 0);
        json_object_set_new(f, "index", json_string("i64"));
        json_object_set_new(f, "content", ct->form);
        ct->form = NULL;
        return array_val(c, f, x->length);
    }
    if (strcmp(n, "ChunkedArray") == 0) return call_chunked(c, j, depth);
    if (strcmp(n, "UnionArray") == 0) { /* tags, index, contents as given */
        val *t = want(c, arg(c, j, 0, depth), V_ARRAY, "the tags");
        val *x = t ? want(c, arg(c, j, 1, depth), V_ARRAY, "the index") : NULL;
        val *cs = x ? want(c, arg(c, j, 2, depth), V_LIST, "the contents") : NULL;
        int64_t *tv = cs ? ints_of(c, t, "the tags") : NULL;
        int64_t *xv = tv ? ints_of(c, x, "the index") : NULL;
        int8_t *tags = xv ? malloc(t->length ? t->length : 1) : NULL;
        int rc = tags ? 0 : -1;
        if (xv && !tags) oom(c);
        if (rc == 0 && x->length < t->length)
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a short union index");
        for (uint64_t i = 0; rc == 0 && i < t->length; i++) {
            if (tv[i] < 0 || tv[i] >= (int64_t)cs->nitems || tv[i] > 126)
                rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                                "awkward0 schema: union tag %lld has no content", (long long)tv[i]);
            else
                tags[i] = (int8_t)tv[i];
        }
        free(tv);
        return union_val(c, rc, t, x, cs, tags, xv);
    }
    if (strcmp(n, "UnionArray.fromtags") == 0) {
        val *t = want(c, arg(c, j, 0, depth), V_ARRAY, "the tags");
        val *cs = t ? want(c, arg(c, j, 1, depth), V_LIST, "the contents") : NULL;
        int64_t *tv = cs ? ints_of(c, t, "the tags") : NULL;
        if (!tv) return NULL;
        int64_t *xv = malloc((t->length ? t->length : 1) * 8);
        int8_t *tags = malloc(t->length ? t->length : 1);
        int64_t seen[127] = {0};
        int rc = xv && tags ? 0 : oom(c);
        for (uint64_t i = 0; rc == 0 && i < t->length; i++) {
            if (tv[i] < 0 || tv[i] >= (int64_t)cs->nitems || tv[i] > 126)
                rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                                "awkward0 schema: union tag %lld has no content", (long long)tv[i]);
            else {
                tags[i] = (int8_t)tv[i];
                xv[i] = seen[tv[i]]++;
            }
        }
        free(tv);
        return union_val(c, rc, t, NULL, cs, tags, xv);
    }
    char what[260];
    snprintf(what, sizeof what, "the call %s", name);
    not_read(c, what);
    return NULL;
}

static val *eval(interp *c, json_t *j, int depth) {
    if (depth > AK0_MAX_DEPTH) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: nested deeper than %d levels",
                   AK0_MAX_DEPTH);
        return NULL;
    }
    val *v = NULL;
    if (json_is_array(j)) { /* a pair inside "pairs" */
        v = new_val(c, V_LIST);
        if (!v) return NULL;
        v->nitems = json_array_size(j);
        v->items = keep(c, calloc(v->nitems ? v->nitems : 1, sizeof *v->items));
        if (!v->items) {
            oom(c);
            return NULL;
        }
        for (size_t i = 0; i < v->nitems; i++) {
            json_t *x = json_array_get(j, i);
            if (json_is_string(x)) { /* a column name */
                val *s = new_val(c, V_JSON);
                if (!s) return NULL;
                s->json = x;
                v->items[i] = s;
            } else if (!(v->items[i] = eval(c, x, depth + 1))) {
                return NULL;
            }
        }
        return v;
    }
    if (!json_is_object(j)) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a node is not a JSON object");
        return NULL;
    }
    json_t *id = json_object_get(j, "id"), *x;
    if ((x = json_object_get(j, "ref"))) {
        for (size_t i = 0; i < c->nmemo; i++)
            if (json_is_integer(x) && c->memo[i].id == json_integer_value(x)) {
                if (!c->memo[i].v) {
                    not_read(c, "a cyclic (self-referencing) structure");
                    return NULL;
                }
                return c->memo[i].v;
            }
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a reference to no node");
        return NULL;
    }
    size_t slot = c->nmemo;
    if (json_is_integer(id)) { /* being evaluated: a reference to it now is a cycle */
        if (c->nmemo == c->capmemo) {
            size_t cap = c->capmemo ? 2 * c->capmemo : 32;
            void *n = realloc(c->memo, cap * sizeof *c->memo);
            if (!n) {
                oom(c);
                return NULL;
            }
            c->memo = n;
            c->capmemo = cap;
        }
        c->memo[c->nmemo].id = json_integer_value(id);
        c->memo[c->nmemo++].v = NULL;
    }
    if ((x = json_object_get(j, "json"))) {
        if ((v = new_val(c, V_JSON))) v->json = x;
    } else if ((x = json_object_get(j, "dtype"))) {
        v = dtype_val(c, x, depth + 1);
    } else if ((x = json_object_get(j, "read"))) {
        v = new_val(c, V_BYTES);
        if (v &&
            (!json_is_string(x) || c->blob(c->bctx, json_string_value(x), &v->bytes, &v->nbytes))) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: blob '%s' is missing",
                       json_is_string(x) ? json_string_value(x) : "?");
            return NULL;
        }
    } else if ((x = json_object_get(j, "list")) || (x = json_object_get(j, "tuple")) ||
               (x = json_object_get(j, "pairs"))) {
        if (!json_is_array(x)) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a list is not an array");
            return NULL;
        }
        v = eval(c, x, depth + 1);
    } else if (json_object_get(j, "call")) {
        v = call(c, j, depth);
    } else {
        const char *key = json_object_iter_key(json_object_iter(j));
        char what[120];
        snprintf(what, sizeof what, "a '%.60s' node", key ? key : "empty");
        not_read(c, what);
        return NULL;
    }
    if (v && json_is_integer(id)) c->memo[slot].v = v;
    return v;
}

void ak0_result_free(ak0_result *r) {
    registry_unreserve(r->reserved);
    for (size_t i = 0; i < r->n; i++) {
        free(r->names[i]);
        free(r->data[i]);
    }
    free(r->names);
    free(r->data);
    free(r->nbytes);
    free(r->form);
    memset(r, 0, sizeof *r);
}

int ak0_interpret(const char *json, size_t len, ak0_blob_fn blob, void *bctx, ak0_result *out,
                  h5ark_error *err) {
    memset(out, 0, sizeof *out);
    json_t *root = load(json, len, err);
    if (!root) return -1;
    interp c = {.blob = blob, .bctx = bctx, .err = err, .owned = json_array()};
    val *v = c.owned ? eval(&c, json_object_get(root, "schema"), 1) : NULL;
    if (!c.owned) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = v ? 0 : -1;
    if (v && v->kind != V_ARRAY)
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 schema: it makes no array");
    if (rc == 0 && (!(out->form = json_dumps(v->form, JSON_COMPACT))))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) {
        out->length = v->length;
        out->names = calloc(c.nbufs + 1, sizeof *out->names);
        out->data = calloc(c.nbufs + 1, sizeof *out->data);
        out->nbytes = calloc(c.nbufs + 1, sizeof *out->nbytes);
        if (!out->names || !out->data || !out->nbytes) rc = oom(&c);
        for (size_t i = 0; rc == 0 && i < c.nbufs; i++) {
            if (!c.bufs[i].out) continue;
            if (!(out->names[out->n] = strdup(c.bufs[i].name))) {
                rc = oom(&c);
                break;
            }
            out->data[out->n] = c.bufs[i].data;
            out->nbytes[out->n++] = c.bufs[i].nbytes;
            out->reserved += c.bufs[i].nbytes;
            c.bufs[i].data = NULL;
        }
    }
    /* forms of values never given to a parent (the root's, dumped), then the values */
    for (size_t i = 0; i < c.nvals; i++) {
        json_decref(c.vals[i]->form);
        json_decref(c.vals[i]->given);
        free(c.vals[i]);
    }
    free(c.vals);
    for (size_t i = 0; i < c.nbufs; i++)
        free(c.bufs[i].data);
    free(c.bufs);
    free(c.memo);
    for (size_t i = 0; i < c.nallocs; i++)
        free(c.allocs[i]);
    free(c.allocs);
    json_decref(c.owned);
    json_decref(root);
    registry_unreserve(c.reserved - out->reserved); /* the result's are freed with it */
    if (rc) ak0_result_free(out);
    return rc;
}
