/* awkward0's HDF5 layout (docs/FORMAT.md, "awkward0"): a group holding `schema.json` (a 1-D
 * uint8 dataset of JSON) and one 1-D uint8 dataset per blob. The schema names Python
 * functions to call; h5ark checks every one against the allow-list (objects/awkward0.h)
 * and refuses pickles before anything else, in the probe. The blobs the schema reads are
 * the node's kids (uint8 pdarrays); the daemon interprets the schema over them into an
 * awkward 2 form and buffers and builds an awkward object with put's checks. */
#include "families.h"

#include "layout.h"
#include "locales.h"
#include "objects/awkward.h"
#include "objects/awkward0.h"
#include "objects/awkward_form.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "storage.h"

#include <jansson.h>
#include <zlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHILD_SCHEMA "schema.json"

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    if (!f->is_group || f->has_objtype) return SCHEMA_NOT_MINE;
    return schema_child_of(f, CHILD_SCHEMA) == SCHEMA_CHILD_BYTES ? SCHEMA_BY_SHAPE
                                                                  : SCHEMA_NOT_MINE;
}

/* The bytes of the group's schema.json, malloc'd (NUL-terminated), or NULL with err. */
static char *read_schema(hid_t file, const char *gpath, size_t *len, h5ark_error *err) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", gpath, CHILD_SCHEMA);
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hssize_t n =
        sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 ? H5Sget_simple_extent_npoints(sp) : -1;
    char *buf = NULL;
    if (n < 0 || (uint64_t)n > AK0_MAX_SCHEMA_BYTES)
        h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 group '%s': '%s' is not 1-D or too large",
                   gpath, CHILD_SCHEMA);
    else if (!(buf = malloc((size_t)n + 1)))
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    else if (n > 0 && H5Dread(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        h5u_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 group '%s': cannot read '%s'", gpath,
                 CHILD_SCHEMA);
        free(buf);
        buf = NULL;
    }
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    H5Eclear2(H5E_DEFAULT);
    return buf;
}

/* The blob names the schema reads, each once (data nodes are not searched). */
static int collect_reads(json_t *node, h5u_names *out, int depth, h5ark_error *err) {
    if (depth > AK0_MAX_DEPTH)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 schema: nested too deep");
    if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v) {
            if (collect_reads(v, out, depth + 1, err)) return -1;
        }
        return 0;
    }
    if (!json_is_object(node) || json_object_get(node, "json") || json_object_get(node, "dtype"))
        return 0;
    json_t *r = json_object_get(node, "read");
    if (r) {
        if (!json_is_string(r) || !json_string_value(r)[0] || strchr(json_string_value(r), '/'))
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "awkward0 schema: a blob name is not a name");
        for (size_t i = 0; i < out->n; i++)
            if (strcmp(out->v[i], json_string_value(r)) == 0) return 0;
        if (out->n > 100000)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 schema: too many blobs");
        return h5u_names_push(out, json_string_value(r))
                   ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
                   : 0;
    }
    const char *key;
    json_t *v;
    json_object_foreach(node, key, v) {
        if (collect_reads(v, out, depth + 1, err)) return -1;
    }
    return 0;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    size_t len = 0;
    char *schema = read_schema(pc->file, n->path, &len, err);
    if (!schema) return -1;
    /* the request's whitelist replaces the default, as awkward0's `whitelist` argument */
    const h5ark_value *wv = pc->ak0_whitelist;
    size_t nwl = wv ? h5ark_value_len(wv) : 0, nparts = 0;
    for (size_t i = 0; i < nwl; i++)
        nparts += h5ark_value_len(h5ark_value_at(wv, i));
    ak0_pattern *wl = wv ? calloc(nwl ? nwl : 1, sizeof *wl) : NULL;
    const char **parts = wv ? calloc(nparts ? nparts : 1, sizeof *parts) : NULL;
    if (wv && (!wl || !parts)) {
        free(wl);
        free(parts);
        free(schema);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (size_t i = 0, at = 0; i < nwl; i++) {
        const h5ark_value *spec = h5ark_value_at(wv, i);
        wl[i].parts = parts + at;
        wl[i].n = h5ark_value_len(spec);
        for (size_t k = 0; k < wl[i].n; k++) {
            const h5ark_value *p = h5ark_value_at(spec, k);
            parts[at++] = p->kind == H5ARK_STR || p->kind == H5ARK_BIN ? p->as.s.ptr : "";
        }
    }
    int rc = ak0_check_schema(schema, len, wl, nwl, err);
    free(wl);
    free(parts);
    if (rc) {
        if (err->code == H5ARK_SCHEMA_ERROR || err->code == H5ARK_FORBIDDEN)
            h5ark_fail_context(err, "awkward0 group '%s'", n->path);
        free(schema);
        return -1;
    }
    if (n->nkids > 0 || n->fieldtype) {
        free(schema);
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "awkward0 group '%s' is in more than one file; an awkward0 array is "
                          "read from one file",
                          n->path);
    }
    /* the blobs it reads, each once, as uint8 kids */
    json_t *root = json_loadb(schema, len, 0, NULL);
    h5u_names keys = {0};
    rc = root ? collect_reads(json_object_get(root, "schema"), &keys, 0, err)
              : h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 group '%s': not JSON", n->path);
    json_decref(root);
    for (size_t i = 0; rc == 0 && i < keys.n; i++) {
        char path[1400];
        if (snprintf(path, sizeof path, "%s/%s", n->path, keys.v[i]) >= (int)sizeof path) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 group '%s': a blob name is too long",
                            n->path);
            break;
        }
        read_node *k = node_add_kid(n, keys.v[i], path, err);
        if (!k) {
            rc = -1;
            break;
        }
        k->component = true;
        rc = schema_probe(pc, k, err);
        if (rc == 0 && (k->kind != KIND_PDARRAY ||
                        (k->ds.values.n > 0 &&
                         k->ds.values.src[k->ds.values.n - 1].info.dtype != H5ARK_UINT8)))
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "awkward0 group '%s': blob '%s' is not a 1-D uint8 dataset", n->path,
                            keys.v[i]);
        else if (rc) {
            err->code = H5ARK_SCHEMA_ERROR;
            h5ark_fail_context(err, "awkward0 group '%s'", n->path);
        }
    }
    h5u_names_free(&keys);
    if (rc == 0) {
        n->fieldtype = schema; /* to the daemon with the node */
        return 0;
    }
    free(schema);
    return -1;
}

typedef struct {
    read_node *n;
    unsigned char **bytes;
} blob_ctx;

static int get_blob(void *ctx, const char *key, const unsigned char **data, uint64_t *len) {
    blob_ctx *b = ctx;
    for (size_t i = 0; i < b->n->nkids; i++)
        if (strcmp(b->n->kids[i].name, key) == 0) {
            *data = b->bytes[i];
            *len = b->n->kids[i].ds.values.total;
            return 0;
        }
    return -1;
}

typedef struct {
    const ak0_result *r;
} result_source;

static int read_result(const void *ctx, size_t i, uint64_t offset, void *dst, uint64_t n) {
    const ak0_result *r = ((const result_source *)ctx)->r;
    if (offset > r->nbytes[i] || n > r->nbytes[i] - offset) return -1;
    memcpy(dst, r->data[i] + offset, n);
    return 0;
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    *obj = *tag = NULL;
    (void)strict; /* blobs are bytes: uint8 whatever the request says of types */
    size_t nk = n->nkids;
    unsigned char **bytes = calloc(nk ? nk : 1, sizeof *bytes);
    int rc = bytes ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < nk; i++) {
        read_part *p = &n->kids[i].ds.values;
        if (p->n > 1) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 group '%s' is in more than one file",
                            n->path);
            break;
        }
        /* the blob whole in one piece, straight from the file: the schema reads it as bytes
         * (on every rank: each interprets the schema and lays out its own shards) */
        p->dtype = H5ARK_UINT8;
        if (!(bytes[i] = malloc(p->total ? p->total : 1))) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
        if (p->total && read_part_range(p, 0, p->total, bytes[i], err)) {
            rc =
                h5ark_fail_context(err, "awkward0 group '%s', blob '%s'", n->path, n->kids[i].name);
            break;
        }
    }
    ak0_result r = {0};
    if (rc == 0) {
        blob_ctx bc = {n, bytes};
        const char *schema = n->fieldtype ? n->fieldtype : "";
        rc = ak0_interpret(schema, strlen(schema), get_blob, &bc, &r, err);
        if (rc) h5ark_fail_context(err, "awkward0 group '%s'", n->path);
    }
    /* the build below is collective: every rank goes on, or none */
    rc = ranks_agree(rc, err);
    if (rc == 0) {
        result_source rs = {&r};
        ak_source src = {r.n, (const char *const *)r.names, r.nbytes, read_result, &rs};
        *obj = awkward_build(r.form, strlen(r.form), r.length, &src, err);
        if (!*obj) {
            if (err->code == H5ARK_BAD_REQUEST) err->code = H5ARK_SCHEMA_ERROR;
            rc = h5ark_fail_context(err, "awkward0 group '%s'", n->path);
        }
    }
    if (rc == 0 && tags) {
        object *t = object_new_pdarray(H5ARK_INT64, (*obj)->size, err);
        int file = nk && n->kids[0].ds.values.n ? n->kids[0].ds.values.src[0].file : 0;
        for (int b = 0; t && b < t->values->nshards; b++)
            for (uint64_t k = 0; locales_is_local(b) && k < t->values->shards[b].count; k++)
                ((int64_t *)t->values->shards[b].data)[k] = file;
        if (!t) rc = -1;
        *tag = t;
    }
    ak0_result_free(&r);
    for (size_t i = 0; bytes && i < nk; i++)
        free(bytes[i]);
    free(bytes);
    if (rc) {
        object_release(*obj);
        object_release(*tag);
        *obj = *tag = NULL;
    }
    return rc;
}

/* lshdf reads an awkward0 group's blobs to say its length and form, up to this much */
#define AK0_LIST_MAX_BYTES (16u << 20)

typedef struct {
    hid_t group;
    uint64_t budget;
    unsigned char **kept;
    size_t nkept;
} list_blobs;

static int list_blob(void *ctx, const char *key, const unsigned char **data, uint64_t *n) {
    list_blobs *lb = ctx;
    if (lb->nkept >= 4096) return -1;
    hid_t d = h5u_open_child(lb->group, key, H5O_TYPE_DATASET);
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hssize_t len =
        sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 ? H5Sget_simple_extent_npoints(sp) : -1;
    unsigned char *buf = len >= 0 && (uint64_t)len <= lb->budget ? malloc((size_t)len + 1) : NULL;
    int rc =
        buf && (len == 0 || H5Dread(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0)
            ? 0
            : -1;
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Oclose(d);
    H5Eclear2(H5E_DEFAULT);
    if (rc) {
        free(buf);
        return -1;
    }
    lb->budget -= (uint64_t)len;
    lb->kept[lb->nkept++] = buf;
    *data = buf;
    *n = (uint64_t)len;
    return 0;
}

static void list(const schema_facts *f, schema_listing *out) {
    out->kind = "group"; /* one entry: its blobs are not objects of their own */
    /* length and form as readhdf would make them, when the whitelist allows the schema and
     * the blobs are small enough to read here */
    h5ark_error err = {0};
    size_t len = 0;
    char *schema = read_schema(f->obj, ".", &len, &err);
    ak0_result r = {0};
    list_blobs lb = {f->obj, AK0_LIST_MAX_BYTES, calloc(4096, sizeof(unsigned char *)), 0};
    bool ok = schema && lb.kept && ak0_check_schema(schema, len, NULL, 0, &err) == 0 &&
              ak0_interpret(schema, len, list_blob, &lb, &r, &err) == 0;
    out->extra = h5ark_value_map();
    if (out->extra &&
        (h5ark_value_set(out->extra, "length",
                         ok ? h5ark_value_uint(r.length) : h5ark_value_nil()) ||
         h5ark_value_set(out->extra, "form", ok ? h5ark_value_str(r.form) : h5ark_value_nil())))
        h5ark_value_destroy(&out->extra);
    if (ok) out->rows = (int64_t)r.length;
    if (!ok)
        out->note = "length and form unknown: a function outside the whitelist, a structure "
                    "h5ark does not read, or blobs over 16 MiB";
    ak0_result_free(&r);
    for (size_t i = 0; i < lb.nkept; i++)
        free(lb.kept[i]);
    free(lb.kept);
    free(schema);
}

const schema_family schema_awkward0 = {
    .kind = KIND_AWKWARD0,
    .what = "an awkward0 array",
    .objtype = "awkward0",
    .detect = detect,
    .probe = probe,
    .build = build,
    .list = list,
};

/* ---- writing awkward0's layout ---------------------------------------------------------- */

typedef struct {
    hid_t group;
    const object *obj;
    unsigned char *const *whole; /* several ranks: obj's buffers whole (awkward0_gather) */
    int policy;                  /* AK0_COMPRESS_* */
    int next_id;
    h5ark_error *err;
} writer;

/* Buffer `name` of obj whole, when the ranks gathered it; NULL: its shards are here. */
static const unsigned char *whole_of(const writer *w, const char *name) {
    for (size_t i = 0; w->whole && i < w->obj->ncomponents; i++)
        if (strcmp(w->obj->components[i].name, name) == 0) return w->whole[i];
    return NULL;
}

int awkward0_gather(const object *obj, unsigned char ***whole, h5ark_error *err) {
    *whole = calloc(obj->ncomponents ? obj->ncomponents : 1, sizeof **whole);
    int rc = *whole ? 0 : -1;
    uint64_t *counts = calloc((size_t)locales_count(), sizeof *counts);
    if (!counts) rc = -1;
    if (rc) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    for (size_t i = 0; rc == 0 && i < obj->ncomponents; i++) {
        const darray *a = obj->components[i].obj->values;
        h5ark_span *spans = calloc((size_t)a->nshards + 1, sizeof *spans);
        size_t n = 0;
        bool on_root = true; /* then the writer reads its shards, as they are */
        memset(counts, 0, (size_t)locales_count() * sizeof *counts);
        for (int b = 0; spans && b < a->nshards; b++) {
            uint64_t bytes = a->shards[b].count * a->itemsize;
            counts[locales_rank_of(b)] += bytes;
            on_root = on_root && (bytes == 0 || spmd_is_root_rank(locales_rank_of(b)));
            if (locales_is_local(b) && bytes) spans[n++] = (h5ark_span){a->shards[b].data, bytes};
        }
        /* rank 0 holds it all, as the blobs made from it will be */
        rc = ranks_agree(spans ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err);
        void *all = NULL;
        if (rc == 0 && !on_root)
            rc = spmd_gather_new(spans, n, counts, a->size * a->itemsize, &all, err);
        (*whole)[i] = all;
        free(spans);
    }
    free(counts);
    if (rc) {
        awkward0_whole_free(obj, *whole);
        *whole = NULL;
    }
    return rc;
}

void awkward0_whole_free(const object *obj, unsigned char **whole) {
    for (size_t i = 0; whole && i < obj->ncomponents; i++)
        free(whole[i]);
    free(whole);
}

/* The bytes [from, from + n) of buffer `name` of obj, gathered (malloc'd). */
static unsigned char *gather(writer *w, const char *name, uint64_t from, uint64_t n) {
    const object *c = object_component_get(w->obj, name);
    const darray *a = c ? c->values : NULL;
    if (!a || from + n > a->size) {
        h5ark_fail(w->err, H5ARK_INTERNAL, "awkward array: buffer '%s' is missing or short", name);
        return NULL;
    }
    unsigned char *out = malloc(n * a->itemsize + 1);
    if (!out) {
        h5ark_fail(w->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    const unsigned char *all = whole_of(w, name);
    if (all) {
        memcpy(out, all + from * a->itemsize, n * a->itemsize);
        return out;
    }
    for (int b = 0; b < a->nshards; b++) {
        const shard *s = &a->shards[b];
        uint64_t lo = from > s->start ? from : s->start;
        uint64_t hi = from + n < s->start + s->count ? from + n : s->start + s->count;
        if (lo < hi)
            memcpy(out + (lo - from) * a->itemsize,
                   (const char *)s->data + (lo - s->start) * a->itemsize, (hi - lo) * a->itemsize);
    }
    return out;
}

/* Element i of an integer buffer, as int64. */
static int64_t int_at(writer *w, const char *name, uint64_t i) {
    const object *c = object_component_get(w->obj, name);
    const darray *a = c->values;
    const unsigned char *all = whole_of(w, name);
    const shard *s = &a->shards[darray_shard_of(a, i)];
    const char *p = all ? (const char *)all + i * a->itemsize
                        : (const char *)s->data + (i - s->start) * a->itemsize;
    switch (a->dtype) {
    case H5ARK_INT8: return *(const int8_t *)p;
    case H5ARK_UINT8: return *(const uint8_t *)p;
    case H5ARK_INT32: return *(const int32_t *)p;
    case H5ARK_UINT32: return *(const uint32_t *)p;
    default: return *(const int64_t *)p;
    }
}

/* A blob dataset named by a fresh id, compressed as the policy says, and the schema node
 * that reads it back: numpy.frombuffer(blob, dtype, count). Takes data. */
static json_t *blob(writer *w, unsigned char *data, uint64_t nbytes, json_t *dtype, uint64_t count,
                    bool integer) {
    char key[32];
    snprintf(key, sizeof key, "%d", w->next_id++);
    bool zip = w->policy == AK0_COMPRESS_ALL ||
               (w->policy == AK0_COMPRESS_DEFAULT && integer && nbytes >= 8192);
    unsigned char *out = data;
    uLongf packed = 0;
    if (zip) { /* awkward0 compresses even when it makes a blob larger */
        packed = compressBound((uLong)nbytes);
        out = malloc(packed ? packed : 1);
        if (!out || compress2(out, &packed, data, (uLong)nbytes, Z_DEFAULT_COMPRESSION) != Z_OK) {
            free(out);
            free(data);
            json_decref(dtype);
            h5ark_fail(w->err, H5ARK_RESOURCE_LIMIT, "cannot compress a blob");
            return NULL;
        }
        free(data);
        nbytes = packed;
    }
    hsize_t dims[1] = {nbytes};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t d =
        sp >= 0 ? H5Dcreate2(w->group, key, H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                : H5I_INVALID_HID;
    int rc = d >= 0 && (nbytes == 0 ||
                        H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0)
                 ? 0
                 : h5u_fail(w->err, H5ARK_IO_ERROR, "cannot write blob '%s'", key);
    if (d >= 0) H5Dclose(d);
    if (sp >= 0) H5Sclose(sp);
    free(out);
    if (rc) {
        json_decref(dtype);
        return NULL;
    }
    json_t *read = json_pack("{s:s}", "read", key);
    if (zip) read = json_pack("{s:[s,s], s:[o]}", "call", "zlib", "decompress", "args", read);
    return json_pack("{s:[s,s,s], s:[o, {s:o}, {s:I}], s:i}", "call", "awkward0", "numpy",
                     "frombuffer", "args", read, "dtype", dtype, "json", (json_int_t)count, "id",
                     w->next_id++);
}

static json_t *ak0_call(const char *a, const char *b, json_t *args) {
    if (b) return json_pack("{s:[s,s,s], s:o}", "call", "awkward0", a, b, "args", args);
    return json_pack("{s:[s,s], s:o}", "call", "awkward0", a, "args", args);
}

/* A buffer's integers [0, n) as a blob of their own type. */
static json_t *int_blob(writer *w, const char *name, uint64_t n) {
    const object *c = object_component_get(w->obj, name);
    if (!c) {
        h5ark_fail(w->err, H5ARK_INTERNAL, "awkward array: buffer '%s' is missing", name);
        return NULL;
    }
    unsigned char *data = gather(w, name, 0, n);
    return data ? blob(w, data, n * c->values->itemsize,
                       json_string(h5ark_dtype_name(c->values->dtype)), n, true)
                : NULL;
}

/* Values computed here (int64 or bool bytes) as a blob; takes v. */
static json_t *made_blob(writer *w, void *v, uint64_t n, const char *dtype, size_t size) {
    return blob(w, v, n * size, json_string(dtype), n, true);
}

static json_t *write_node(writer *w, const ak_node *n, uint64_t length, int depth);

static json_t *content_of(writer *w, const ak_node *n, size_t i, uint64_t length, int depth) {
    return write_node(w, n->contents[i], length, depth + 1);
}

static json_t *write_node(writer *w, const ak_node *n, uint64_t length, int depth) {
    char name[AK_MAX_KEY_BYTES + 16], name2[AK_MAX_KEY_BYTES + 16];
    if (depth > AK_MAX_DEPTH) {
        h5ark_fail(w->err, H5ARK_INTERNAL, "awkward array: form too deep");
        return NULL;
    }
    switch (n->cls) {
    case AK_NUMPY: {
        if (strncmp(n->primitive, "datetime", 8) == 0 ||
            strncmp(n->primitive, "timedelta", 9) == 0) {
            h5ark_fail(w->err, H5ARK_TYPE_ERROR, "tohdf: awkward0 blobs of %s are not written yet",
                       n->primitive);
            return NULL;
        }
        ak_buffer_name(n, AK_BUF_DATA, name, sizeof name);
        uint64_t elems = length * n->inner * n->per_item;
        unsigned char *data = gather(w, name, 0, elems);
        if (!data) return NULL;
        json_t *dt = json_string(n->primitive);
        if (n->inner_ndim) {
            json_t *shape = json_array();
            for (unsigned d = 0; d < n->inner_ndim; d++)
                json_array_append_new(shape, json_integer((json_int_t)n->inner_shape[d]));
            dt = json_pack("[o,o]", dt, shape);
        }
        bool integer = n->dtype != H5ARK_FLOAT32 && n->dtype != H5ARK_FLOAT64 &&
                       strcmp(n->primitive, "float16") != 0;
        return blob(w, data, elems * h5ark_dtype_size(n->dtype), dt, length, integer);
    }
    case AK_EMPTY: return blob(w, malloc(1), 0, json_string("float64"), 0, false);
    case AK_LISTOFFSET:
    case AK_REGULAR: {
        json_t *offs;
        uint64_t clen;
        if (n->cls == AK_REGULAR) {
            int64_t *o = malloc((length + 1) * sizeof *o);
            if (!o) {
                h5ark_fail(w->err, H5ARK_RESOURCE_LIMIT, "out of memory");
                return NULL;
            }
            for (uint64_t i = 0; i <= length; i++)
                o[i] = (int64_t)(i * n->size);
            clen = length * n->size;
            offs = made_blob(w, o, length + 1, "int64", 8);
        } else {
            ak_buffer_name(n, AK_BUF_OFFSETS, name, sizeof name);
            clen = (uint64_t)int_at(w, name, length);
            offs = int_blob(w, name, length + 1);
        }
        json_t *content = offs ? content_of(w, n, 0, clen, depth) : NULL;
        if (!content) {
            json_decref(offs);
            return NULL;
        }
        bool str = n->array_param && (strcmp(n->array_param, "string") == 0 ||
                                      strcmp(n->array_param, "bytestring") == 0);
        if (str)
            return ak0_call("StringArray", "fromoffsets",
                            json_pack("[o, o, {s:o}]", offs, content, "json",
                                      strcmp(n->array_param, "string") == 0 ? json_string("utf-8")
                                                                            : json_null()));
        return ak0_call("JaggedArray", "fromoffsets", json_pack("[o, o]", offs, content));
    }
    case AK_LIST: {
        ak_buffer_name(n, AK_BUF_STARTS, name, sizeof name);
        ak_buffer_name(n, AK_BUF_STOPS, name2, sizeof name2);
        int64_t max = 0;
        for (uint64_t i = 0; i < length; i++)
            if (int_at(w, name2, i) > max) max = int_at(w, name2, i);
        json_t *s = int_blob(w, name, length);
        json_t *e = s ? int_blob(w, name2, length) : NULL;
        json_t *content = e ? content_of(w, n, 0, (uint64_t)max, depth) : NULL;
        if (!content) {
            json_decref(s);
            json_decref(e);
            return NULL;
        }
        return ak0_call("JaggedArray", NULL, json_pack("[o, o, o]", s, e, content));
    }
    case AK_RECORD: {
        json_t *pairs = json_array();
        for (size_t i = 0; pairs && i < n->ncontents; i++) {
            json_t *c = content_of(w, n, i, length, depth);
            if (!c) {
                json_decref(pairs);
                return NULL;
            }
            char field[32];
            snprintf(field, sizeof field, "%zu", i);
            json_array_append_new(pairs, json_pack("[s, o]", n->fields ? n->fields[i] : field, c));
        }
        return ak0_call("Table", "frompairs",
                        json_pack("[{s:o}, {s:i}]", "pairs", pairs, "json", 0));
    }
    case AK_INDEXED:
    case AK_INDEXEDOPTION: {
        ak_buffer_name(n, AK_BUF_INDEX, name, sizeof name);
        int64_t *x = malloc((length ? length : 1) * sizeof *x), max = -1;
        if (!x) {
            h5ark_fail(w->err, H5ARK_RESOURCE_LIMIT, "out of memory");
            return NULL;
        }
        for (uint64_t i = 0; i < length; i++) {
            x[i] = int_at(w, name, i);
            if (x[i] < 0) x[i] = -1; /* awkward0 masks exactly maskedwhen */
            if (x[i] > max) max = x[i];
        }
        json_t *ix = made_blob(w, x, length, "int64", 8);
        json_t *content = ix ? content_of(w, n, 0, (uint64_t)(max + 1), depth) : NULL;
        if (!content) {
            json_decref(ix);
            return NULL;
        }
        if (n->cls == AK_INDEXED)
            return ak0_call("IndexedArray", NULL, json_pack("[o, o]", ix, content));
        return ak0_call("IndexedMaskedArray", NULL,
                        json_pack("[o, o, {s:i}]", ix, content, "json", -1));
    }
    case AK_BYTEMASKED:
    case AK_BITMASKED: {
        ak_buffer_name(n, AK_BUF_MASK, name, sizeof name);
        json_t *m;
        if (n->cls == AK_BYTEMASKED) {
            unsigned char *b = gather(w, name, 0, length);
            for (uint64_t i = 0; b && i < length; i++)
                b[i] = b[i] != 0;
            m = b ? made_blob(w, b, length, "bool", 1) : NULL;
        } else {
            m = int_blob(w, name, (length + 7) / 8);
        }
        json_t *content = m ? content_of(w, n, 0, length, depth) : NULL;
        if (!content) {
            json_decref(m);
            return NULL;
        }
        if (n->cls == AK_BYTEMASKED)
            return ak0_call("MaskedArray", NULL,
                            json_pack("[o, o, {s:b}]", m, content, "json", !n->valid_when));
        return ak0_call("BitMaskedArray", NULL,
                        json_pack("[o, o, {s:b}, {s:b}]", m, content, "json", !n->valid_when,
                                  "json", n->lsb_order));
    }
    case AK_UNMASKED: return content_of(w, n, 0, length, depth); /* no mask: the values */
    case AK_UNION: {
        ak_buffer_name(n, AK_BUF_TAGS, name, sizeof name);
        ak_buffer_name(n, AK_BUF_INDEX, name2, sizeof name2);
        int64_t max[128];
        for (size_t k = 0; k < n->ncontents; k++)
            max[k] = -1;
        for (uint64_t i = 0; i < length; i++) {
            int64_t t = int_at(w, name, i), x = int_at(w, name2, i);
            if (t >= 0 && (size_t)t < n->ncontents && x > max[t]) max[t] = x;
        }
        json_t *t = int_blob(w, name, length);
        json_t *x = t ? int_blob(w, name2, length) : NULL;
        json_t *contents = x ? json_array() : NULL;
        for (size_t k = 0; contents && k < n->ncontents; k++) {
            json_t *c = content_of(w, n, k, (uint64_t)(max[k] + 1), depth);
            if (!c) {
                json_decref(contents);
                contents = NULL;
                break;
            }
            json_array_append_new(contents, c);
        }
        if (!contents) {
            json_decref(t);
            json_decref(x);
            return NULL;
        }
        return ak0_call("UnionArray", NULL, json_pack("[o, o, {s:o}]", t, x, "list", contents));
    }
    default: break;
    }
    h5ark_fail(w->err, H5ARK_INTERNAL, "awkward array: a node h5ark cannot write");
    return NULL;
}

int awkward0_write(hid_t loc, const char *name, const object *obj, int policy,
                   unsigned char *const *whole, h5ark_error *err) {
    const char *text = awkward_form_json(obj);
    ak_form *form = text ? ak_form_parse(text, strlen(text), err) : NULL;
    if (!form) return h5ark_fail_context(err, "awkward array '%s'", name);
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) {
        ak_form_free(form);
        return h5u_fail(err, H5ARK_IO_ERROR, "cannot create group '%s'", name);
    }
    writer w = {.group = g, .obj = obj, .whole = whole, .policy = policy, .next_id = 1, .err = err};
    json_t *schema = write_node(&w, form->root, obj->size, 0);
    int rc = schema ? 0 : -1;
    char prefix[1100];
    snprintf(prefix, sizeof prefix, "%s/", name);
    json_t *doc = schema ? json_pack("{s:s, s:o, s:s}", "awkward0", "0.15.5", "schema", schema,
                                     "prefix", prefix)
                         : NULL;
    char *bytes = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (rc == 0 && !bytes) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) {
        hsize_t dims[1] = {strlen(bytes)};
        hid_t sp = H5Screate_simple(1, dims, NULL);
        hid_t d = sp >= 0 ? H5Dcreate2(g, CHILD_SCHEMA, H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT,
                                       H5P_DEFAULT)
                          : H5I_INVALID_HID;
        if (d < 0 || H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes) < 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write '%s'", CHILD_SCHEMA);
        if (d >= 0) H5Dclose(d);
        if (sp >= 0) H5Sclose(sp);
    }
    free(bytes);
    json_decref(doc);
    ak_form_free(form);
    if (H5Gclose(g) < 0 && rc == 0) rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close '%s'", name);
    return rc ? h5ark_fail_context(err, "awkward array '%s' in awkward0's layout", name) : 0;
}
