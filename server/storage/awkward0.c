/* awkward0's HDF5 layout (docs/FORMAT.md, "awkward0"): a group holding `schema.json` (a 1-D
 * uint8 dataset of JSON) and one 1-D uint8 dataset per blob. The schema names Python
 * functions to call; h5ark checks every one against the allow-list (objects/awkward0.h)
 * and refuses pickles before anything else. Interpreting the structure into an awkward
 * array is to come: a schema that passes is a type_error saying so. */
#include "families.h"

#include "layout.h"
#include "objects/awkward0.h"

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
    if (rc == 0) {
        char top[200];
        ak0_top_call(schema, len, top, sizeof top);
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                        "awkward0 group '%s' (%s): its schema passes the whitelist, but h5ark "
                        "does not interpret awkward0 structures yet",
                        n->path, top[0] ? top : "no call");
    } else if (err->code == H5ARK_SCHEMA_ERROR || err->code == H5ARK_FORBIDDEN) {
        h5ark_fail_context(err, "awkward0 group '%s'", n->path);
    }
    free(schema);
    return rc;
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    (void)strict, (void)tags;
    *obj = *tag = NULL;
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "awkward0 group '%s' is not read yet", n->path);
}

static void list(const schema_facts *f, schema_listing *out) {
    (void)f;
    out->kind = "group"; /* one entry: its blobs are not objects of their own */
    out->note = "awkward0's layout: listed, not read yet";
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
