/* awkward0 schemas: the interpreter's values and their memory (see awkward0_interp.h),
 * below the evaluation (awkward0.c) and the arrays of the calls (awkward0_build.c). */
#include "awkward0_interp.h"

#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the schema makes counts against --max-memory: a small schema may reference a big
 * blob many times, or a blob may decompress to far more than it holds. */
int ak0_reserve(interp *c, uint64_t n) {
    if (registry_reserve(n, c->err)) {
        c->limited = true;
        return -1;
    }
    c->reserved += n;
    return 0;
}

void *ak0_keep(interp *c, void *p) {
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

val *ak0_new_val(interp *c, vkind kind) {
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

int ak0_oom(interp *c) {
    return h5ark_fail(c->err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

int ak0_not_read(interp *c, const char *what) {
    return h5ark_fail(c->err, H5ARK_TYPE_ERROR,
                      "awkward0 schema: %s has no awkward 2 equivalent that h5ark reads", what);
}

/* A new buffer "<key>-<attr>" taking `data` (malloc'd); its index, or -1. */
int ak0_add_buf(interp *c, const char *key, const char *attr, unsigned char *data,
                uint64_t nbytes) {
    if (c->nbufs == c->capbufs) {
        size_t cap = c->capbufs ? 2 * c->capbufs : 16;
        void *n = realloc(c->bufs, cap * sizeof *c->bufs);
        if (!n) {
            free(data);
            return ak0_oom(c);
        }
        c->bufs = n;
        c->capbufs = cap;
    }
    if (ak0_reserve(c, nbytes)) {
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
void ak0_drop_buf(interp *c, int i) {
    if (i >= 0) c->bufs[i].out = false;
}

void ak0_next_key(interp *c, char *out, size_t size) {
    snprintf(out, size, "node%d", c->next_key++);
}

/* numpy dtype text: "int64", "<i8", ">u2", "bool", "|u1", "float32", ... */
bool ak0_parse_dtype(const char *s, val *d) {
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

val *ak0_want(interp *c, val *v, vkind kind, const char *what) {
    if (!v) return NULL;
    if (v->kind != kind) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: %s is not what it must be", what);
        return NULL;
    }
    return kind == V_ARRAY ? ak0_take(c, v) : v;
}

/* The integers of a 1-D integer (or bool) NumpyArray, as int64 (malloc'd). */
int64_t *ak0_ints_of(interp *c, val *a, const char *what) {
    if (!a->dt || !a->dt->is_int || a->dt->inner != 1) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: %s must be 1-D integers", what);
        return NULL;
    }
    int64_t *out = malloc((a->length ? a->length : 1) * sizeof *out);
    if (!out) {
        ak0_oom(c);
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

val *ak0_array_val(interp *c, json_t *form, uint64_t length) {
    val *v = ak0_new_val(c, V_ARRAY);
    if (!v || !form) {
        json_decref(form);
        if (v && !form) ak0_oom(c);
        return NULL;
    }
    v->form = form;
    v->length = length;
    return v;
}

/* A node of class `cls` with form_key `key` and content(s). */
json_t *ak0_form_node(const char *cls, const char *key) {
    return json_pack("{s:s, s:s, s:{}}", "class", cls, "form_key", key, "parameters");
}

int64_t ak0_json_int_or(json_t *j, int64_t def) {
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
        ak0_next_key(c, key, sizeof key);
        for (size_t i = 0; i < nold; i++) {
            if (strncmp(c->bufs[i].name, old, ol) != 0) continue;
            char attr[40];
            snprintf(attr, sizeof attr, "%s", c->bufs[i].name + ol);
            uint64_t nb = c->bufs[i].nbytes;
            unsigned char *d = malloc(nb ? nb : 1);
            if (!d) return ak0_oom(c);
            memcpy(d, c->bufs[i].data, nb);
            int bi = ak0_add_buf(c, key, attr, d, nb);
            if (bi < 0) return -1;
            if ((int)i == src) *dst = bi;
        }
        if (json_object_set_new(f, "form_key", json_string(key))) return ak0_oom(c);
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
val *ak0_take(interp *c, val *v) {
    if (!v->used) {
        v->used = true;
        if (!v->given) v->given = json_incref(v->form);
        return v;
    }
    json_t *f = json_deep_copy(v->given);
    int bi = -1;
    if (!f) {
        ak0_oom(c);
        return NULL;
    }
    if (rekey(c, f, v->buf, &bi, c->nbufs)) {
        json_decref(f);
        return NULL;
    }
    val *n = ak0_array_val(c, f, v->length);
    if (n) {
        n->buf = bi;
        n->dt = v->dt;
        n->used = true;
    }
    return n;
}
