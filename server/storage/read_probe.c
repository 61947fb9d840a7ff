/* What probing files for readhdf found, as it travels from a file probe process to the
 * daemon (MessagePack), and the joining of what several probes found in consecutive slices
 * of the file list. The daemon trusts nothing in it: every index, type and kind is checked
 * on the way in, and the data it points at is read with bounds-checked pread/HDF5 calls. */
#include "layout.h"
#include "probe.h"

#include <stdlib.h>
#include <string.h>

/* ---- encoding ---------------------------------------------------------------------- */

enum { SRC_INTEGER = 1, SRC_ENUM_BOOL = 2, SRC_EXACT = 4, SRC_CONTIGUOUS = 8 };

static int put(h5ark_value *map, const char *key, h5ark_value *v) {
    return h5ark_value_set(map, key, v);
}

/* Names and messages from files travel as bytes: a damaged file's are not always UTF-8. */
static h5ark_value *bytes(const char *s) {
    return h5ark_value_bin(s, strlen(s));
}

static h5ark_value *encode_part(const read_part *p) {
    h5ark_value *m = h5ark_value_map(), *srcs = h5ark_value_array();
    int bad = !m || !srcs;
    for (size_t i = 0; !bad && i < p->n; i++) {
        const read_src *s = &p->src[i];
        const h5u_dset_info *in = &s->info;
        h5ark_value *t = h5ark_value_array();
        int flags = (in->is_integer ? SRC_INTEGER : 0) | (in->enum_bool ? SRC_ENUM_BOOL : 0) |
                    (in->exact ? SRC_EXACT : 0) | (in->contiguous ? SRC_CONTIGUOUS : 0);
        bad = !t || h5ark_value_push(t, h5ark_value_int(s->file)) ||
              h5ark_value_push(t, bytes(s->dset)) ||
              h5ark_value_push(t, h5ark_value_uint(in->count)) ||
              h5ark_value_push(t, h5ark_value_int(in->dtype)) ||
              h5ark_value_push(t, h5ark_value_int(flags)) ||
              h5ark_value_push(t, h5ark_value_uint(in->offset)) ||
              h5ark_value_push(t, h5ark_value_int(s->rebase)) || h5ark_value_push(srcs, t);
    }
    if (!bad) {
        /* put() takes its value even when it fails: call each once */
        bad = put(m, "dtype", h5ark_value_int(p->dtype)) | put(m, "src", srcs);
        srcs = NULL;
    }
    h5ark_value_destroy(&srcs);
    if (bad) h5ark_value_destroy(&m);
    return m;
}

static h5ark_value *encode_node(const read_node *n) {
    h5ark_value *m = h5ark_value_map(), *kids = h5ark_value_array(), *shape = h5ark_value_array();
    h5ark_value *names = n->names ? h5ark_value_array() : h5ark_value_nil();
    int bad = !m || !kids || !shape || !names;
    for (size_t i = 0; !bad && i < n->nkids; i++)
        bad = h5ark_value_push(kids, encode_node(&n->kids[i]));
    for (unsigned i = 0; !bad && i < n->ndim; i++)
        bad = h5ark_value_push(shape, h5ark_value_uint(n->shape[i]));
    for (size_t i = 0; !bad && n->names && i < n->nnames; i++)
        bad = h5ark_value_push(names, bytes(n->names[i]));
    int tag = !n->tag                                     ? 0
              : strcmp(n->tag, OBJECT_TAG_DATETIME) == 0  ? OBJTYPE_DATETIME
              : strcmp(n->tag, OBJECT_TAG_TIMEDELTA) == 0 ? OBJTYPE_TIMEDELTA
                                                          : OBJTYPE_IPV4;
    int flags = n->legacy | n->as_index << 1 | n->as_limb << 2 | n->component << 3 |
                n->optional << 4 | n->ds.no_segments << 5 | n->ds.have_dtype << 6 | n->plain << 7 |
                n->ds.unterminated << 8;
    bad = bad || put(m, "name", bytes(n->name)) || put(m, "path", bytes(n->path)) ||
          put(m, "kind", h5ark_value_int(n->kind)) || put(m, "flags", h5ark_value_int(flags)) ||
          put(m, "tag", h5ark_value_int(tag)) || put(m, "max_bits", h5ark_value_int(n->max_bits)) ||
          put(m, "first_dtype", h5ark_value_int(n->ds.first_dtype)) ||
          put(m, "values", encode_part(&n->ds.values)) ||
          put(m, "segments", encode_part(&n->ds.segments)) ||
          put(m, "fieldtype", n->fieldtype ? bytes(n->fieldtype) : h5ark_value_nil()) ||
          put(m, "completed", h5ark_value_int(n->completed));
    if (!bad) {
        bad = put(m, "kids", kids) | put(m, "shape", shape) | put(m, "names", names);
        kids = shape = names = NULL;
    }
    h5ark_value_destroy(&kids);
    h5ark_value_destroy(&shape);
    h5ark_value_destroy(&names);
    if (bad) h5ark_value_destroy(&m);
    return m;
}

h5ark_value *read_probe_encode(const read_probe *p) {
    h5ark_value *m = h5ark_value_map(), *nodes = h5ark_value_array(), *errs = h5ark_value_array(),
                *warns = h5ark_value_array();
    int bad = !m || !nodes || !errs || !warns;
    for (size_t i = 0; !bad && i < p->warnings.n; i++)
        bad = h5ark_value_push(warns, bytes(p->warnings.v[i]));
    for (size_t i = 0; !bad && p->nodes && i < p->names.n; i++)
        bad = h5ark_value_push(nodes, encode_node(&p->nodes[i]));
    for (size_t i = 0; !bad && i < p->nerrors; i++) {
        h5ark_value *e = h5ark_value_array();
        bad = !e || h5ark_value_push(e, h5ark_value_int(p->errors[i].index)) ||
              h5ark_value_push(e, h5ark_value_int(p->errors[i].code)) ||
              h5ark_value_push(e, bytes(p->errors[i].message)) || h5ark_value_push(errs, e);
    }
    if (!bad) {
        bad = put(m, "nodes", nodes) | put(m, "errors", errs) | put(m, "warnings", warns) |
              put(m, "stopped", h5ark_value_bool(p->stopped));
        nodes = errs = warns = NULL;
    }
    h5ark_value_destroy(&warns);
    h5ark_value_destroy(&nodes);
    h5ark_value_destroy(&errs);
    if (bad) h5ark_value_destroy(&m);
    return m;
}

h5ark_value *read_probe_request_encode(const read_probe_request *rq) {
    h5ark_value *m = h5ark_value_map(), *paths = h5ark_value_array(), *index = h5ark_value_array(),
                *ds = h5ark_value_array();
    int bad = !m || !paths || !index || !ds;
    for (size_t i = 0; !bad && i < rq->npaths; i++)
        bad = h5ark_value_push(paths, bytes(rq->paths[i])) ||
              h5ark_value_push(index, h5ark_value_int(rq->index ? rq->index[i] : (int)i));
    for (size_t i = 0; !bad && i < rq->ndatasets; i++)
        bad = h5ark_value_push(ds, bytes(rq->datasets[i]));
    if (!bad) {
        bad = put(m, "paths", paths) | put(m, "index", index) | put(m, "datasets", ds) |
              put(m, "allow_errors", h5ark_value_bool(rq->allow_errors)) |
              put(m, "calc_offsets", h5ark_value_bool(rq->calc_offsets)) |
              put(m, "whitelist",
                  rq->ak0_whitelist ? h5ark_value_copy(rq->ak0_whitelist) : h5ark_value_nil());
        paths = index = ds = NULL;
    }
    h5ark_value_destroy(&paths);
    h5ark_value_destroy(&index);
    h5ark_value_destroy(&ds);
    if (bad) h5ark_value_destroy(&m);
    return m;
}

/* ---- decoding ---------------------------------------------------------------------- */

typedef struct {
    char *const *paths;
    size_t npaths;
    h5ark_error *err;
} decoder;

static int garbled(decoder *d, const char *what) {
    return h5ark_fail(d->err, H5ARK_INTERNAL, "the file probe's answer is garbled (%s)", what);
}

static bool get_int(const h5ark_value *m, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    return h5ark_value_to_int64(h5ark_value_get(m, key), out) && *out >= lo && *out <= hi;
}

static const char *get_str(const h5ark_value *m, const char *key) {
    const h5ark_value *v = h5ark_value_get(m, key);
    return v && v->kind == H5ARK_BIN && strlen(v->as.s.ptr) == v->as.s.len ? v->as.s.ptr : NULL;
}

static int decode_part(decoder *d, const h5ark_value *v, read_part *p) {
    int64_t dtype;
    const h5ark_value *srcs = h5ark_value_get(v, "src");
    if (!get_int(v, "dtype", 0, H5ARK_DTYPE_COUNT - 1, &dtype) || !srcs ||
        srcs->kind != H5ARK_ARRAY)
        return garbled(d, "a part");
    p->dtype = (h5ark_dtype)dtype;
    for (size_t i = 0; i < h5ark_value_len(srcs); i++) {
        const h5ark_value *t = h5ark_value_at(srcs, i);
        int64_t file, idtype, flags, rebase;
        uint64_t count, offset;
        const h5ark_value *dset =
            t && t->kind == H5ARK_ARRAY && h5ark_value_len(t) == 7 ? h5ark_value_at(t, 1) : NULL;
        if (!dset || dset->kind != H5ARK_BIN ||
            !h5ark_value_to_int64(h5ark_value_at(t, 0), &file) || file < 0 ||
            (uint64_t)file >= d->npaths || !h5ark_value_to_uint64(h5ark_value_at(t, 2), &count) ||
            !h5ark_value_to_int64(h5ark_value_at(t, 3), &idtype) || idtype < 0 ||
            idtype >= H5ARK_DTYPE_COUNT || !h5ark_value_to_int64(h5ark_value_at(t, 4), &flags) ||
            !h5ark_value_to_uint64(h5ark_value_at(t, 5), &offset) ||
            !h5ark_value_to_int64(h5ark_value_at(t, 6), &rebase))
            return garbled(d, "a source");
        h5u_dset_info info = {
            .count = count,
            .dtype = (h5ark_dtype)idtype,
            .is_integer = flags & SRC_INTEGER,
            .enum_bool = flags & SRC_ENUM_BOOL,
            .exact = flags & SRC_EXACT,
            .contiguous = flags & SRC_CONTIGUOUS,
            .offset = offset,
        };
        char *name = strdup(dset->as.s.ptr);
        if (!name) return h5ark_fail(d->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        if (read_part_add(p, (int)file, d->paths[file], name, &info, rebase, d->err)) return -1;
    }
    return 0;
}

static int decode_node(decoder *d, const h5ark_value *v, read_node *n, unsigned depth) {
    const h5ark_value *kids = h5ark_value_get(v, "kids"), *shape = h5ark_value_get(v, "shape"),
                      *names = h5ark_value_get(v, "names");
    int64_t kind, flags, tag, max_bits, first_dtype;
    if (depth > 8 || !v || v->kind != H5ARK_MAP || !get_str(v, "name") || !get_str(v, "path") ||
        !get_int(v, "kind", KIND_NONE, KIND_COUNT - 1, &kind) ||
        !get_int(v, "flags", 0, 511, &flags) || !get_int(v, "tag", 0, OBJTYPE_IPV4, &tag) ||
        !get_int(v, "max_bits", -1, INT64_MAX, &max_bits) ||
        !get_int(v, "first_dtype", 0, H5ARK_DTYPE_COUNT - 1, &first_dtype) || !kids ||
        kids->kind != H5ARK_ARRAY || !shape || shape->kind != H5ARK_ARRAY ||
        h5ark_value_len(shape) > OBJECT_MAX_DIMS || !names ||
        (names->kind != H5ARK_ARRAY && names->kind != H5ARK_NIL))
        return garbled(d, "a node");
    n->kind = (read_kind)kind;
    n->legacy = flags & 1, n->as_index = flags & 2, n->as_limb = flags & 4;
    n->component = flags & 8, n->optional = flags & 16;
    n->ds.no_segments = flags & 32, n->ds.have_dtype = flags & 64, n->plain = flags & 128;
    n->ds.first_dtype = (h5ark_dtype)first_dtype;
    n->ds.unterminated = flags & 256;
    int64_t completed;
    const h5ark_value *fieldtype = h5ark_value_get(v, "fieldtype");
    if (!get_int(v, "completed", NODE_COMPLETED_UNSEEN, NODE_COMPLETED_TRUE, &completed) ||
        !fieldtype || (fieldtype->kind != H5ARK_NIL && !get_str(v, "fieldtype")))
        return garbled(d, "a field");
    n->completed = (uint8_t)completed;
    if (fieldtype->kind != H5ARK_NIL && !(n->fieldtype = strdup(fieldtype->as.s.ptr)))
        return h5ark_fail(d->err, H5ARK_RESOURCE_LIMIT, "out of memory");
    n->tag = tag == OBJTYPE_DATETIME    ? OBJECT_TAG_DATETIME
             : tag == OBJTYPE_TIMEDELTA ? OBJECT_TAG_TIMEDELTA
             : tag == OBJTYPE_IPV4      ? OBJECT_TAG_IPV4
                                        : NULL;
    n->max_bits = max_bits;
    n->ndim = (unsigned)h5ark_value_len(shape);
    for (unsigned i = 0; i < n->ndim; i++)
        if (!h5ark_value_to_uint64(h5ark_value_at(shape, i), &n->shape[i]))
            return garbled(d, "a shape");
    if (names->kind == H5ARK_ARRAY) {
        size_t nn = h5ark_value_len(names);
        n->names = calloc(nn ? nn : 1, sizeof *n->names);
        if (!n->names) return h5ark_fail(d->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        for (; n->nnames < nn; n->nnames++) {
            const h5ark_value *s = h5ark_value_at(names, n->nnames);
            if (!s || s->kind != H5ARK_BIN) return garbled(d, "a name");
            if (!(n->names[n->nnames] = strdup(s->as.s.ptr)))
                return h5ark_fail(d->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
    }
    if (decode_part(d, h5ark_value_get(v, "values"), &n->ds.values) ||
        decode_part(d, h5ark_value_get(v, "segments"), &n->ds.segments))
        return -1;
    for (size_t i = 0; i < h5ark_value_len(kids); i++) {
        const h5ark_value *k = h5ark_value_at(kids, i);
        const char *name = get_str(k, "name"), *path = get_str(k, "path");
        if (!name || !path) return garbled(d, "a component");
        read_node *kid = node_add_kid(n, name, path, d->err);
        if (!kid || decode_node(d, k, kid, depth + 1)) return -1;
    }
    return 0;
}

int read_probe_decode(const h5ark_value *v, char *const *paths, size_t npaths, read_probe *p,
                      h5ark_error *err) {
    *p = (read_probe){0};
    decoder d = {paths, npaths, err};
    const h5ark_value *nodes = h5ark_value_get(v, "nodes"), *errs = h5ark_value_get(v, "errors"),
                      *stopped = h5ark_value_get(v, "stopped"),
                      *warns = h5ark_value_get(v, "warnings");
    if (!nodes || nodes->kind != H5ARK_ARRAY || !errs || errs->kind != H5ARK_ARRAY || !stopped ||
        stopped->kind != H5ARK_BOOL || !warns || warns->kind != H5ARK_ARRAY)
        return garbled(&d, "its fields");
    for (size_t i = 0; i < h5ark_value_len(warns); i++) {
        const h5ark_value *w = h5ark_value_at(warns, i);
        if (w->kind != H5ARK_BIN) {
            read_probe_clear(p);
            return garbled(&d, "a warning");
        }
        if (h5u_names_push(&p->warnings, w->as.s.ptr)) {
            read_probe_clear(p);
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
    }
    p->stopped = stopped->as.b;
    size_t n = h5ark_value_len(nodes);
    p->nodes = calloc(n ? n : 1, sizeof *p->nodes);
    if (!p->nodes) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const h5ark_value *k = h5ark_value_at(nodes, i);
        const char *name = get_str(k, "name"), *path = get_str(k, "path");
        if (!name || !path || strcmp(name, path) != 0) {
            rc = garbled(&d, "an object");
            break;
        }
        /* names and nodes grow together, so clearing after a failure frees what was made */
        read_node *node = &p->nodes[i];
        if (h5u_names_push(&p->names, name) || !(node->name = strdup(name)) ||
            !(node->path = strdup(path))) {
            if (p->names.n == i) h5u_names_push(&p->names, "");
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
        node->ds.name = node->path;
        rc = decode_node(&d, k, node, 0);
    }
    for (size_t i = 0; rc == 0 && i < h5ark_value_len(errs); i++) {
        const h5ark_value *e = h5ark_value_at(errs, i);
        int64_t index, code;
        const h5ark_value *msg =
            e && e->kind == H5ARK_ARRAY && h5ark_value_len(e) == 3 ? h5ark_value_at(e, 2) : NULL;
        if (!msg || msg->kind != H5ARK_BIN || !h5ark_value_to_int64(h5ark_value_at(e, 0), &index) ||
            index < 0 || (uint64_t)index >= npaths ||
            !h5ark_value_to_int64(h5ark_value_at(e, 1), &code) || code <= 0 ||
            code >= H5ARK_CODE_COUNT)
            rc = garbled(&d, "a file error");
        else
            rc = read_probe_add_error(p, (int)index, (h5ark_code)code, msg->as.s.ptr, err);
    }
    if (rc == 0 && p->stopped && p->nerrors == 0) rc = garbled(&d, "stopped without an error");
    if (rc) read_probe_clear(p);
    return rc;
}

/* ---- joining slices ---------------------------------------------------------------- */

static bool node_empty(const read_node *n) {
    return n->kind == KIND_NONE && n->nkids == 0 && n->ds.values.n == 0 && n->ds.segments.n == 0;
}

/* Whether a's and b's files describe the node alike (b may lack an optional part). */
static bool node_alike(const read_node *a, const read_node *b) {
    if (strcmp(a->name, b->name) != 0 || strcmp(a->path, b->path) != 0) return false;
    if (node_empty(a) || node_empty(b)) return true;
    if (a->kind != b->kind || a->legacy != b->legacy || a->tag != b->tag || a->ndim != b->ndim ||
        a->nkids != b->nkids)
        return false;
    if (a->plain != b->plain || a->ds.unterminated != b->ds.unterminated) return false;
    if ((a->fieldtype || b->fieldtype) &&
        (!a->fieldtype || !b->fieldtype || strcmp(a->fieldtype, b->fieldtype) != 0))
        return false;
    /* a plain N-d array's first dimension is the sum over its files */
    for (unsigned i = a->plain ? 1 : 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    for (size_t i = 0; i < a->nkids; i++)
        if (!node_alike(&a->kids[i], &b->kids[i])) return false;
    return true;
}

/* Move b's sources after a's, shifting b's rebases by `shift`. */
static int join_part(read_part *a, read_part *b, int64_t shift, h5ark_error *err) {
    if (a->n == 0) a->dtype = b->dtype;
    for (size_t i = 0; i < b->n; i++) {
        read_src *s = &b->src[i];
        char *dset = s->dset;
        s->dset = NULL; /* read_part_add owns it now, even when it fails */
        if (read_part_add(a, s->file, s->path, dset, &s->info, s->rebase + shift, err)) return -1;
    }
    read_part_clear(b);
    return 0;
}

static int join_node(read_node *a, read_node *b, h5ark_error *err) {
    if (node_empty(b)) return 0;
    if (node_empty(a)) {
        /* an optional part that only b's files have: b's description is the whole */
        read_node t = *a;
        *a = *b;
        *b = t;
        return 0;
    }
    if (!a->ds.have_dtype && b->ds.have_dtype) {
        a->ds.have_dtype = true;
        a->ds.first_dtype = b->ds.first_dtype;
    }
    a->ds.no_segments |= b->ds.no_segments;
    if (b->completed != NODE_COMPLETED_UNSEEN &&
        (a->completed == NODE_COMPLETED_UNSEEN || b->completed < a->completed))
        a->completed = b->completed;
    if (a->plain) a->shape[0] += b->shape[0];
    /* offsets in b's files count from b's first file: add what a's files hold before them */
    int64_t string_shift = (int64_t)a->ds.values.total, segment_shift = 0;
    read_node *values = a->kind == KIND_SEGARRAY ? node_kid(a, CHILD_VALUES) : NULL;
    if (values) segment_shift = (int64_t)node_elements(values);
    if (join_part(&a->ds.values, &b->ds.values, 0, err) ||
        join_part(&a->ds.segments, &b->ds.segments, a->kind == KIND_STRINGS ? string_shift : 0,
                  err))
        return -1;
    for (size_t i = 0; i < a->nkids; i++) {
        read_node *ka = &a->kids[i], *kb = &b->kids[i];
        if (a->kind == KIND_SEGARRAY && strcmp(ka->name, CHILD_SEGMENTS) == 0 && !node_empty(kb)) {
            if (join_part(&ka->ds.values, &kb->ds.values, segment_shift, err)) return -1;
        }
        if (join_node(ka, kb, err)) return -1;
    }
    return 0;
}

int read_probe_merge(read_probe *a, read_probe *b, h5ark_error *err) {
    if (a->stopped || b->stopped || a->nerrors || b->nerrors || a->names.n != b->names.n) return 1;
    for (size_t i = 0; i < a->names.n; i++)
        if (!node_alike(&a->nodes[i], &b->nodes[i])) return 1;
    for (size_t i = 0; i < a->names.n; i++)
        if (join_node(&a->nodes[i], &b->nodes[i], err)) return -1;
    for (size_t i = 0; i < b->warnings.n; i++) {
        bool seen = false;
        for (size_t k = 0; k < a->warnings.n && !seen; k++)
            seen = strcmp(a->warnings.v[k], b->warnings.v[i]) == 0;
        if (!seen && h5u_names_push(&a->warnings, b->warnings.v[i]))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    read_probe_clear(b);
    return 0;
}
