/* awkward0's HDF5 layout (docs/FORMAT.md, "awkward0"): a group holding `schema.json` (a 1-D
 * uint8 dataset of JSON) and one 1-D uint8 dataset per blob. The schema names Python
 * functions to call; h5ark checks every one against the allow-list (objects/awkward0.h)
 * and refuses pickles before anything else, in the probe. The blobs the schema reads are
 * the node's kids (uint8 pdarrays); the daemon interprets the schema over them into an
 * awkward 2 form and buffers and builds an awkward object with put's checks. */
#include "families.h"

#include "layout.h"
#include "objects/awkward.h"
#include "objects/awkward0.h"

#include <jansson.h>
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
    object **blobs;
    unsigned char **bytes;
} blob_ctx;

static int get_blob(void *ctx, const char *key, const unsigned char **data, uint64_t *len) {
    blob_ctx *b = ctx;
    for (size_t i = 0; i < b->n->nkids; i++)
        if (strcmp(b->n->kids[i].name, key) == 0) {
            *data = b->bytes[i];
            *len = b->blobs[i]->size;
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
    size_t nk = n->nkids;
    object **blobs = calloc(nk ? nk : 1, sizeof *blobs);
    unsigned char **bytes = calloc(nk ? nk : 1, sizeof *bytes);
    int rc = blobs && bytes ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < nk; i++) {
        object *t = NULL;
        if (n->kids[i].ds.values.n > 1) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 group '%s' is in more than one file",
                            n->path);
            break;
        }
        rc = schema_build(&n->kids[i], strict, false, &blobs[i], &t, err);
        object_release(t);
        if (rc) break;
        /* the blob whole in one piece: the schema reads it as bytes */
        const darray *a = blobs[i]->values;
        if (!(bytes[i] = malloc(a->size ? a->size : 1))) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
        for (int b = 0; b < a->nshards; b++)
            if (a->shards[b].count)
                memcpy(bytes[i] + a->shards[b].start, a->shards[b].data, a->shards[b].count);
    }
    ak0_result r = {0};
    if (rc == 0) {
        blob_ctx bc = {n, blobs, bytes};
        const char *schema = n->fieldtype ? n->fieldtype : "";
        rc = ak0_interpret(schema, strlen(schema), get_blob, &bc, &r, err);
        if (rc) h5ark_fail_context(err, "awkward0 group '%s'", n->path);
    }
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
            for (uint64_t k = 0; k < t->values->shards[b].count; k++)
                ((int64_t *)t->values->shards[b].data)[k] = file;
        if (!t) rc = -1;
        *tag = t;
    }
    ak0_result_free(&r);
    for (size_t i = 0; i < nk; i++) {
        if (blobs) object_release(blobs[i]);
        if (bytes) free(bytes[i]);
    }
    free(blobs);
    free(bytes);
    if (rc) {
        object_release(*obj);
        object_release(*tag);
        *obj = *tag = NULL;
    }
    return rc;
}

static void list(const schema_facts *f, schema_listing *out) {
    (void)f;
    out->kind = "group"; /* one entry: its blobs are not objects of their own */
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
