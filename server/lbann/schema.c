/* LBANN's schemas: trickle-down, experiment-over-data, the fields and their pack groups. */
#include "lbann.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define META "metadata"

/* A schema node with its metadata after trickle-down. */
typedef struct snode {
    char *path; /* from the root, "" for it */
    h5ark_value *meta;
    struct snode *kids;
    size_t nkids;
} snode;

static void snode_free(snode *n) {
    for (size_t i = 0; i < n->nkids; i++)
        snode_free(&n->kids[i]);
    free(n->kids);
    free(n->path);
    h5ark_value_destroy(&n->meta);
}

static const char *const known_keys[] = {"pack",      "ordering", "coerce", "scale",
                                         "bias",      "channels", "dims",   "layout",
                                         "transpose", "hwc",      NULL};

static bool known(const char *k) {
    for (const char *const *w = known_keys; *w; w++)
        if (strcmp(*w, k) == 0) return true;
    return false;
}

/* Build n from value v (a map or nil) under parent metadata `inherit`. */
static int snode_build(snode *n, const char *path, const h5ark_value *v, const h5ark_value *inherit,
                       const char *what, h5ark_value *warnings, h5ark_error *err) {
    *n = (snode){0};
    n->path = strdup(path);
    n->meta = inherit ? h5ark_value_copy(inherit) : h5ark_value_map();
    if (!n->path || !n->meta) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (!v || v->kind == H5ARK_NIL) return 0;
    if (v->kind != H5ARK_MAP)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "%s: '%s' must be a mapping (of fields and 'metadata'), not a %s", what,
                          *path ? path : "(top level)", h5ark_value_kind_name(v->kind));
    const h5ark_value *own = h5ark_value_get(v, META);
    if (own && own->kind != H5ARK_NIL) {
        if (own->kind != H5ARK_MAP)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: '%s/metadata' must be a mapping", what,
                              *path ? path : "(top level)");
        for (size_t i = 0; i < own->as.m.len; i++) {
            const char *k = own->as.m.keys[i];
            if (!known(k) && warnings) {
                char msg[600];
                snprintf(msg, sizeof msg,
                         "%s: '%.200s' has metadata key '%.200s', which LBANN does not know "
                         "(kept, not used)",
                         what, *path ? path : "(top level)", k);
                h5ark_value_push(warnings, h5ark_value_str(msg));
            }
            if (h5ark_value_set(n->meta, k, h5ark_value_copy(own->as.m.vals[i])))
                return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
    }
    size_t nk = 0;
    for (size_t i = 0; i < v->as.m.len; i++)
        nk += strcmp(v->as.m.keys[i], META) != 0;
    if (!nk) return 0;
    n->kids = calloc(nk, sizeof *n->kids);
    if (!n->kids) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < v->as.m.len; i++) {
        const char *k = v->as.m.keys[i];
        if (strcmp(k, META) == 0) continue;
        if (!*k || strchr(k, '/'))
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "%s: field name '%s' under '%s' is not "
                              "a name (empty or holding '/')",
                              what, k, *path ? path : "(top level)");
        char *p = malloc(strlen(path) + strlen(k) + 2);
        if (!p) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        sprintf(p, "%s%s%s", path, *path ? "/" : "", k);
        int rc =
            snode_build(&n->kids[n->nkids++], p, v->as.m.vals[i], n->meta, what, warnings, err);
        free(p);
        if (rc) return -1;
    }
    return 0;
}

static const snode *snode_find(const snode *root, const char *path) {
    const snode *n = root;
    while (*path) {
        const char *slash = strchr(path, '/');
        size_t len = slash ? (size_t)(slash - path) : strlen(path);
        const snode *next = NULL;
        for (size_t i = 0; i < n->nkids && !next; i++) {
            const char *name = strrchr(n->kids[i].path, '/');
            name = name ? name + 1 : n->kids[i].path;
            if (strlen(name) == len && strncmp(name, path, len) == 0) next = &n->kids[i];
        }
        if (!next) return NULL;
        n = next;
        path += len + (slash != NULL);
    }
    return n;
}

typedef struct {
    lbann_field *v;
    size_t n, cap;
} field_vec;

static int add_field(field_vec *out, const snode *leaf, const h5ark_value *over, h5ark_error *err) {
    for (size_t i = 0; i < out->n; i++)
        if (strcmp(out->v[i].path, leaf->path) == 0) return 0; /* selected twice: once */
    if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 16;
        lbann_field *v = realloc(out->v, cap * sizeof *v);
        if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        out->v = v;
        out->cap = cap;
    }
    lbann_field *f = &out->v[out->n];
    *f = (lbann_field){0};
    f->path = strdup(leaf->path);
    f->meta = h5ark_value_copy(leaf->meta);
    if (!f->path || !f->meta) {
        free(f->path);
        h5ark_value_destroy(&f->meta);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    out->n++;
    for (size_t i = 0; over && i < over->as.m.len; i++)
        if (h5ark_value_set(f->meta, over->as.m.keys[i], h5ark_value_copy(over->as.m.vals[i])))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return 0;
}

static int add_leaves(field_vec *out, const snode *n, const h5ark_value *over, h5ark_error *err) {
    if (n->nkids == 0) return *n->path ? add_field(out, n, over, err) : 0;
    for (size_t i = 0; i < n->nkids; i++)
        if (add_leaves(out, &n->kids[i], over, err)) return -1;
    return 0;
}

static int select_exp(field_vec *out, const snode *data, const snode *e, h5ark_error *err) {
    if (e->nkids == 0) {
        if (!*e->path) return 0;
        const snode *d = snode_find(data, e->path);
        if (!d)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "experiment_schema selects '%s', which the data_schema does not "
                              "have",
                              e->path);
        return add_leaves(out, d, e->meta, err);
    }
    for (size_t i = 0; i < e->nkids; i++)
        if (select_exp(out, data, &e->kids[i], err)) return -1;
    return 0;
}

/* ---- one field's metadata ------------------------------------------------------------ */

static int numbers(const lbann_field *f, const char *key, const h5ark_value *v, double **out,
                   size_t *n, h5ark_error *err) {
    size_t len = v->kind == H5ARK_ARRAY ? h5ark_value_len(v) : 1;
    if (len == 0 || len > (1u << 20))
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "field '%s': '%s' must be a number or a "
                          "non-empty list of numbers",
                          f->path, key);
    *out = malloc(len * sizeof **out);
    if (!*out) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    *n = len;
    for (size_t i = 0; i < len; i++) {
        const h5ark_value *x = v->kind == H5ARK_ARRAY ? h5ark_value_at(v, i) : v;
        if (!h5ark_value_is_number(x) || !h5ark_value_to_double(x, &(*out)[i]))
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "field '%s': '%s' must be a number or a list of numbers", f->path,
                              key);
    }
    return 0;
}

static int layout_of(const lbann_field *f, const char *key, int *out, h5ark_error *err) {
    const h5ark_value *v = h5ark_value_get(f->meta, key);
    *out = LBANN_LAYOUT_NONE;
    if (!v) return 0;
    static const char *const names[] = {"", "hwc", "dhwc", "chw", "cdhw"};
    if (v->kind == H5ARK_STR)
        for (int i = 1; i < 5; i++)
            if (strcmp(v->as.s.ptr, names[i]) == 0) return *out = i, 0;
    return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "field '%s': '%s' must be hwc, dhwc, chw or cdhw",
                      f->path, key);
}

static int parse_field(lbann_field *f, h5ark_error *err) {
    const h5ark_value *v;
    if ((v = h5ark_value_get(f->meta, "pack"))) {
        if (v->kind != H5ARK_STR || !v->as.s.len)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "field '%s': 'pack' must be a name",
                              f->path);
        if (!(f->pack = strdup(v->as.s.ptr)))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        const h5ark_value *o = h5ark_value_get(f->meta, "ordering");
        if (!o)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "field '%s': metadata has 'pack' but is missing 'ordering'", f->path);
    }
    if ((v = h5ark_value_get(f->meta, "ordering")) &&
        (!h5ark_value_is_number(v) || !h5ark_value_to_double(v, &f->ordering) ||
         isnan(f->ordering)))
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "field '%s': 'ordering' must be a number",
                          f->path);
    if ((v = h5ark_value_get(f->meta, "coerce"))) {
        static const struct {
            const char *name;
            h5ark_dtype dtype;
        } names[] = {{"float", H5ARK_FLOAT32},
                     {"double", H5ARK_FLOAT64},
                     {"int", H5ARK_INT32},
                     {"long", H5ARK_INT64},
                     {"int64", H5ARK_INT64}};
        for (size_t i = 0; v->kind == H5ARK_STR && i < 5 && !f->has_coerce; i++)
            if (strcmp(v->as.s.ptr, names[i].name) == 0)
                f->has_coerce = true, f->coerce = names[i].dtype;
        if (!f->has_coerce)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "field '%s': unknown coerce '%s' (LBANN's are float, double, int, "
                              "long and int64)",
                              f->path, v->kind == H5ARK_STR ? v->as.s.ptr : "(not a string)");
    }
    if ((v = h5ark_value_get(f->meta, "channels"))) {
        int64_t c;
        if (!h5ark_value_is_integer(v) || !h5ark_value_to_int64(v, &c) || c < 1 || c > (1 << 20))
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "field '%s': 'channels' must be a positive integer", f->path);
        f->channels = (uint64_t)c;
    }
    if ((v = h5ark_value_get(f->meta, "scale")) &&
        numbers(f, "scale", v, &f->scale, &f->nscale, err))
        return -1;
    if ((v = h5ark_value_get(f->meta, "bias")) && numbers(f, "bias", v, &f->bias, &f->nbias, err))
        return -1;
    size_t per = f->channels > 1 ? f->channels : 1;
    if ((f->scale && f->nscale != 1 && f->nscale != per) ||
        (f->bias && f->nbias != 1 && f->nbias != per))
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "field '%s': 'scale' and 'bias' need one value, or one per channel "
                          "(%zu channels; scale has %zu, bias %zu)",
                          f->path, per, f->scale ? f->nscale : 0, f->bias ? f->nbias : 0);
    if ((v = h5ark_value_get(f->meta, "dims"))) {
        size_t n = v->kind == H5ARK_ARRAY ? h5ark_value_len(v) : 0;
        bool good = n > 0 && n <= 32;
        for (size_t i = 0; good && i < n; i++) {
            int64_t d;
            good = h5ark_value_is_integer(h5ark_value_at(v, i)) &&
                   h5ark_value_to_int64(h5ark_value_at(v, i), &d) && d > 0 && d <= (1LL << 40);
            if (good) f->dims[i] = (uint64_t)d;
        }
        if (!good)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "field '%s': 'dims' must be a list of 1 to 32 positive integers",
                              f->path);
        f->ndims = n;
    }
    if (layout_of(f, "layout", &f->layout, err) || layout_of(f, "transpose", &f->transpose, err))
        return -1;
    /* the repacks LBANN knows: hwc -> chw, dhwc -> cdhw */
    if (f->transpose != LBANN_LAYOUT_NONE &&
        !((f->layout == LBANN_LAYOUT_HWC && f->transpose == LBANN_LAYOUT_CHW) ||
          (f->layout == LBANN_LAYOUT_DHWC && f->transpose == LBANN_LAYOUT_CDHW) ||
          f->layout == f->transpose))
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "field '%s': layout '%s' cannot be transposed to '%s' (hwc -> chw and "
                          "dhwc -> cdhw are known)",
                          f->path,
                          h5ark_value_get(f->meta, "layout")
                              ? h5ark_value_get(f->meta, "layout")->as.s.ptr
                              : "(none)",
                          h5ark_value_get(f->meta, "transpose")->as.s.ptr);
    return 0;
}

void lbann_fields_free(lbann_fields *f) {
    for (size_t i = 0; i < f->n; i++) {
        lbann_field *x = &f->v[i];
        free(x->path);
        free(x->pack);
        free(x->scale);
        free(x->bias);
        h5ark_value_destroy(&x->meta);
    }
    free(f->v);
    *f = (lbann_fields){0};
}

int lbann_fields_make(const h5ark_value *data, const h5ark_value *exp, lbann_fields *out,
                      h5ark_value *warnings, h5ark_error *err) {
    *out = (lbann_fields){0};
    snode d = {0}, e = {0};
    field_vec fv = {0};
    int rc = -1;
    if (snode_build(&d, "", data, NULL, "data_schema", warnings, err)) goto done;
    if (exp && snode_build(&e, "", exp, NULL, "experiment_schema", warnings, err)) goto done;
    if (exp ? select_exp(&fv, &d, &e, err) : add_leaves(&fv, &d, NULL, err)) goto done;
    out->v = fv.v;
    out->n = fv.n;
    fv.v = NULL;
    if (out->n == 0) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR, "the schemas select no field");
        goto done;
    }
    for (size_t i = 0; i < out->n; i++)
        if (parse_field(&out->v[i], err)) goto done;
    rc = 0;
done:
    for (size_t i = 0; i < fv.n && fv.v; i++) {
        free(fv.v[i].path);
        h5ark_value_destroy(&fv.v[i].meta);
    }
    free(fv.v);
    if (rc) lbann_fields_free(out);
    snode_free(&d);
    snode_free(&e);
    return rc;
}

/* ---- pack groups ------------------------------------------------------------------- */

void lbann_groups_free(lbann_groups *g) {
    for (size_t i = 0; i < g->n; i++) {
        free(g->v[i].name);
        free(g->v[i].members);
    }
    free(g->v);
    *g = (lbann_groups){0};
}

int lbann_groups_make(const lbann_fields *f, lbann_groups *out, h5ark_error *err) {
    *out = (lbann_groups){0};
    out->v = calloc(f->n, sizeof *out->v);
    if (!out->v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < f->n; i++) {
        const char *name = f->v[i].pack ? f->v[i].pack : f->v[i].path;
        lbann_group *g = NULL;
        for (size_t j = 0; j < out->n && !g; j++)
            if (strcmp(out->v[j].name, name) == 0) g = &out->v[j];
        if (g && (!g->packed || !f->v[i].pack)) {
            lbann_groups_free(out);
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "'%s' names both a pack group and a field of its own", name);
        }
        if (!g) {
            g = &out->v[out->n++];
            g->name = strdup(name);
            g->members = calloc(f->n, sizeof *g->members);
            g->packed = f->v[i].pack != NULL;
            if (!g->name || !g->members) {
                lbann_groups_free(out);
                return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            }
        }
        /* insertion keeps ties in schema order: a stable sort by ordering */
        size_t at = g->n;
        while (at > 0 && f->v[g->members[at - 1]].ordering > f->v[i].ordering) {
            g->members[at] = g->members[at - 1];
            at--;
        }
        g->members[at] = i;
        g->n++;
    }
    return 0;
}

/* ---- transforms -------------------------------------------------------------------- */

int lbann_field_check(const lbann_field *f, uint64_t count, h5ark_error *err) {
    if (f->channels > 1 && count % f->channels)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "field '%s': %llu channels do not divide its %llu elements", f->path,
                          (unsigned long long)f->channels, (unsigned long long)count);
    if (f->channels > 1 && f->ndims && f->transpose != LBANN_LAYOUT_NONE &&
        f->transpose != f->layout) {
        uint64_t p = f->channels;
        for (size_t i = 0; i < f->ndims; i++)
            p *= f->dims[i];
        if (p != count)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "field '%s': dims times %llu channels make %llu elements, not its "
                              "%llu",
                              f->path, (unsigned long long)f->channels, (unsigned long long)p,
                              (unsigned long long)count);
    }
    return 0;
}

static bool repacks(const lbann_field *f) {
    return f->channels > 1 && f->transpose != LBANN_LAYOUT_NONE && f->transpose != f->layout;
}

size_t lbann_field_dims(const lbann_field *f, uint64_t count, uint64_t *dims) {
    uint64_t p = f->channels > 1 ? f->channels : 1;
    for (size_t i = 0; i < f->ndims; i++)
        p *= f->dims[i];
    if (!f->ndims || p != count) {
        dims[0] = count;
        return 1;
    }
    size_t n = 0;
    bool first = f->channels > 1 &&
                 (repacks(f) || f->layout == LBANN_LAYOUT_CHW || f->layout == LBANN_LAYOUT_CDHW);
    if (first) dims[n++] = f->channels;
    for (size_t i = 0; i < f->ndims; i++)
        dims[n++] = f->dims[i];
    if (f->channels > 1 && !first) dims[n++] = f->channels;
    return n;
}

/* dst[i] = (D)src[i], then with scale/bias (D)((double)dst[i] * s + b), s and b those of
 * element i's channel: LBANN coerces, then normalizes in double into the field's type. With
 * `first`, channels-last elements go to their channels-first places in the same pass (the
 * repack, without a second one over the field). */
#define NORM_LOOP(S, D)                                                                            \
    do {                                                                                           \
        const S *s = src;                                                                          \
        D *d = dst;                                                                                \
        if (!norm) {                                                                               \
            for (uint64_t i = 0; i < count; i++)                                                   \
                d[i] = (D)s[i];                                                                    \
        } else if (nch == 1) {                                                                     \
            double sc = scale[0], bi = bias[0];                                                    \
            for (uint64_t i = 0; i < count; i++)                                                   \
                d[i] = (D)((double)(D)s[i] * sc + bi);                                             \
        } else if (last && first) {                                                                \
            uint64_t per = count / nch;                                                            \
            for (uint64_t p = 0; p < per; p++)                                                     \
                for (uint64_t c = 0; c < nch; c++)                                                 \
                    d[c * per + p] = (D)((double)(D)s[p * nch + c] * scale[c] + bias[c]);          \
        } else if (last) {                                                                         \
            for (uint64_t i = 0; i < count; i += nch)                                              \
                for (uint64_t c = 0; c < nch; c++)                                                 \
                    d[i + c] = (D)((double)(D)s[i + c] * scale[c] + bias[c]);                      \
        } else {                                                                                   \
            uint64_t per = count / nch;                                                            \
            for (uint64_t c = 0; c < nch; c++)                                                     \
                for (uint64_t i = c * per; i < (c + 1) * per; i++)                                 \
                    d[i] = (D)((double)(D)s[i] * scale[c] + bias[c]);                              \
        }                                                                                          \
    } while (0)

#define BY_DST(S)                                                                                  \
    switch (dt) {                                                                                  \
    case H5ARK_INT8: NORM_LOOP(S, int8_t); break;                                                  \
    case H5ARK_INT16: NORM_LOOP(S, int16_t); break;                                                \
    case H5ARK_INT32: NORM_LOOP(S, int32_t); break;                                                \
    case H5ARK_INT64: NORM_LOOP(S, int64_t); break;                                                \
    case H5ARK_UINT8: NORM_LOOP(S, uint8_t); break;                                                \
    case H5ARK_UINT16: NORM_LOOP(S, uint16_t); break;                                              \
    case H5ARK_UINT32: NORM_LOOP(S, uint32_t); break;                                              \
    case H5ARK_UINT64: NORM_LOOP(S, uint64_t); break;                                              \
    case H5ARK_FLOAT32: NORM_LOOP(S, float); break;                                                \
    case H5ARK_FLOAT64: NORM_LOOP(S, double); break;                                               \
    default: NORM_LOOP(S, uint8_t); break;                                                         \
    }

static void normalize(const void *src, h5ark_dtype st, void *dst, h5ark_dtype dt, uint64_t count,
                      bool norm, const double *scale, const double *bias, uint64_t nch, bool last,
                      bool first) {
    switch (st) {
    case H5ARK_INT8: BY_DST(int8_t); break;
    case H5ARK_INT16: BY_DST(int16_t); break;
    case H5ARK_INT32: BY_DST(int32_t); break;
    case H5ARK_INT64: BY_DST(int64_t); break;
    case H5ARK_UINT16: BY_DST(uint16_t); break;
    case H5ARK_UINT32: BY_DST(uint32_t); break;
    case H5ARK_UINT64: BY_DST(uint64_t); break;
    case H5ARK_FLOAT32: BY_DST(float); break;
    case H5ARK_FLOAT64: BY_DST(double); break;
    default: BY_DST(uint8_t); break; /* uint8, bool */
    }
}

/* NORM_LOOP's repacking pass for float32 into float32 and four channels (RGBA, say), four
 * pixels at a time in SSE2 registers: their channels transposed, normalized in double
 * exactly as the scalar loop does, each channel's four values stored at once. The loop
 * for any type and count spends about 12 instructions an element. */
static void chw4_float(const float *s, float *d, uint64_t count, const double *scale,
                       const double *bias) {
    uint64_t per = count / 4, p = 0;
#ifdef __SSE2__
    __m128d sc[4], bi[4];
    for (int c = 0; c < 4; c++) {
        sc[c] = _mm_set1_pd(scale[c]);
        bi[c] = _mm_set1_pd(bias[c]);
    }
    for (; p + 4 <= per; p += 4) {
        __m128 v[4];
        for (int k = 0; k < 4; k++) /* pixel p + k, channels 0-3 */
            v[k] = _mm_loadu_ps(s + 4 * (p + k));
        _MM_TRANSPOSE4_PS(v[0], v[1], v[2], v[3]); /* channel k of pixels p..p+3 */
        for (int c = 0; c < 4; c++) {
            __m128d lo = _mm_cvtps_pd(v[c]), hi = _mm_cvtps_pd(_mm_movehl_ps(v[c], v[c]));
            lo = _mm_add_pd(_mm_mul_pd(lo, sc[c]), bi[c]);
            hi = _mm_add_pd(_mm_mul_pd(hi, sc[c]), bi[c]);
            _mm_storeu_ps(d + c * per + p, _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi)));
        }
    }
#endif
    for (; p < per; p++)
        for (int c = 0; c < 4; c++)
            d[c * per + p] = (float)((double)s[p * 4 + c] * scale[c] + bias[c]);
}

void lbann_field_transform(const lbann_field *f, const void *src, h5ark_dtype src_dtype,
                           uint64_t count, void *dst, void *tmp) {
    h5ark_dtype dt = lbann_field_dtype(f, src_dtype);
    bool norm = f->scale || f->bias;
    uint64_t nch = f->channels > 1 ? f->channels : 1;
    double one = 1.0, zero = 0.0;
    double sc_buf[1], bi_buf[1];
    const double *scale = f->scale, *bias = f->bias;
    double *sc_all = NULL, *bi_all = NULL;
    /* one value for every channel, or one per channel */
    if (norm && nch > 1 && (!scale || f->nscale == 1 || !bias || f->nbias == 1)) {
        sc_all = malloc(nch * sizeof *sc_all);
        bi_all = malloc(nch * sizeof *bi_all);
        if (sc_all && bi_all) {
            for (uint64_t c = 0; c < nch; c++) {
                sc_all[c] = !scale ? 1.0 : f->nscale == 1 ? scale[0] : scale[c];
                bi_all[c] = !bias ? 0.0 : f->nbias == 1 ? bias[0] : bias[c];
            }
            scale = sc_all;
            bias = bi_all;
        } else { /* out of memory: the same transform, channel by channel below */
            nch = 1;
        }
    } else if (norm && nch == 1) {
        sc_buf[0] = scale ? scale[0] : one;
        bi_buf[0] = bias ? bias[0] : zero;
        scale = sc_buf;
        bias = bi_buf;
    }
    bool last = !(f->layout == LBANN_LAYOUT_CHW || f->layout == LBANN_LAYOUT_CDHW);
    bool repack = repacks(f);
    /* normalizing channels-last elements per channel repacks them as it goes */
    bool fused = repack && norm && last && nch == f->channels;
    void *out = repack && !fused ? tmp : dst;
    if (fused && nch == 4 && src_dtype == H5ARK_FLOAT32 && dt == H5ARK_FLOAT32)
        chw4_float(src, dst, count, scale, bias);
    else
        normalize(src, src_dtype, out, dt, count, norm, scale, bias, nch, last, fused);
    if (repack && !fused) { /* channels last -> channels first: dst[c][p] = tmp[p][c] */
        size_t size = h5ark_dtype_size(dt);
        uint64_t c = f->channels, per = count / c;
        const char *t = tmp;
        char *d = dst;
        if (size == 4) {
            const uint32_t *ts = tmp;
            uint32_t *ds = dst;
            for (uint64_t p = 0; p < per; p++)
                for (uint64_t k = 0; k < c; k++)
                    ds[k * per + p] = ts[p * c + k];
        } else if (size == 8) {
            const uint64_t *ts = tmp;
            uint64_t *ds = dst;
            for (uint64_t p = 0; p < per; p++)
                for (uint64_t k = 0; k < c; k++)
                    ds[k * per + p] = ts[p * c + k];
        } else {
            for (uint64_t p = 0; p < per; p++)
                for (uint64_t k = 0; k < c; k++)
                    memcpy(d + (k * per + p) * size, t + (p * c + k) * size, size);
        }
    }
    free(sc_all);
    free(bi_all);
}
