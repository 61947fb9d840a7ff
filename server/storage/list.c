/* lshdf: describe the groups, datasets and links of any HDF5 file in Arkouda's terms
 * (docs/FORMAT.md). The file is untrusted: it is opened read-only, links are never
 * followed (soft and external links are reported, hard-link aliases and cycles are
 * reported once), and entry count, depth, attribute sizes and text lengths are capped so a
 * hostile file costs bounded time and memory. */
#include "storage.h"
#include "list_values.h"
#include "twin.h"

#include "files.h"
#include "sandbox.h"
#include "layout.h"
#include "schema.h"

#include <hdf5.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIST_MAX_ENTRIES 100000
#define LIST_MAX_DEPTH   64

/* ---- the listing state --------------------------------------------------------------- */

static size_t seen_hash(haddr_t a, size_t cap) {
    uint64_t x = (uint64_t)a * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 17) & (cap - 1);
}

/* The path where the object at addr was first seen, or NULL. */
static const char *seen_find(const lister *ls, haddr_t addr) {
    if (!ls->seen_cap) return NULL;
    for (size_t i = seen_hash(addr, ls->seen_cap);; i = (i + 1) & (ls->seen_cap - 1)) {
        if (!ls->seen[i].path) return NULL;
        if (ls->seen[i].addr == addr) return ls->seen[i].path;
    }
}

static int seen_add(lister *ls, haddr_t addr, const char *path) {
    if ((ls->seen_len + 1) * 2 > ls->seen_cap) {
        size_t cap = ls->seen_cap ? ls->seen_cap * 2 : 256;
        seen_slot *t = calloc(cap, sizeof *t);
        if (!t) return lister_oom(ls);
        for (size_t j = 0; j < ls->seen_cap; j++) {
            if (!ls->seen[j].path) continue;
            size_t i = seen_hash(ls->seen[j].addr, cap);
            while (t[i].path)
                i = (i + 1) & (cap - 1);
            t[i] = ls->seen[j];
        }
        free(ls->seen);
        ls->seen = t;
        ls->seen_cap = cap;
    }
    char *copy = strdup(path);
    if (!copy) return lister_oom(ls);
    size_t i = seen_hash(addr, ls->seen_cap);
    while (ls->seen[i].path)
        i = (i + 1) & (ls->seen_cap - 1);
    ls->seen[i].addr = addr;
    ls->seen[i].path = copy;
    ls->seen_len++;
    return 0;
}

static void seen_free(lister *ls) {
    for (size_t i = 0; i < ls->seen_cap; i++)
        free(ls->seen[i].path);
    free(ls->seen);
}

/* ---- children looked at to infer an objtype ------------------------------------------- */

static h5ark_value *shape1(int64_t n) {
    h5ark_value *a = h5ark_value_array();
    if (a && h5ark_value_push(a, h5ark_value_uint((uint64_t)n))) h5ark_value_destroy(&a);
    return a;
}

/* ---- objtypes ------------------------------------------------------------------------- */

static const char *objtype_names[] = {
    [OBJTYPE_ARRAYVIEW] = "arrayview",
    [OBJTYPE_PDARRAY] = "pdarray",
    [OBJTYPE_STRINGS] = "strings",
    [OBJTYPE_SEGARRAY] = "segarray",
    [OBJTYPE_CATEGORICAL] = "categorical",
    [OBJTYPE_GROUPBY] = "groupby",
    [OBJTYPE_DATAFRAME] = "dataframe",
    [OBJTYPE_DATETIME] = "pdarray",
    [OBJTYPE_TIMEDELTA] = "pdarray",
    [OBJTYPE_IPV4] = "pdarray",
    [OBJTYPE_BITVECTOR] = "bitvector",
    [OBJTYPE_SERIES] = "series",
    [OBJTYPE_INDEX] = "index",
    [OBJTYPE_MULTIINDEX] = "multiindex",
};

/* objtype (and tag) from an ObjType attribute; the ObjType number stays in attrs. */
static int objtype_from_attr(lister *ls, const attr_facts *f, h5ark_value *entry) {
    if (!f->objtype_int || f->objtype < 0 || f->objtype > OBJTYPE_MULTIINDEX) {
        char note[96];
        if (f->objtype_int)
            snprintf(note, sizeof note, "unknown ObjType %" PRId64, f->objtype);
        else
            snprintf(note, sizeof note, "ObjType is not an integer scalar");
        return lister_put(ls, entry, "note", h5ark_value_str(note));
    }
    if (lister_put(ls, entry, "objtype", h5ark_value_str(objtype_names[f->objtype]))) return -1;
    const char *tag = f->objtype == OBJTYPE_DATETIME    ? "datetime64[ns]"
                      : f->objtype == OBJTYPE_TIMEDELTA ? "timedelta64[ns]"
                      : f->objtype == OBJTYPE_IPV4      ? "ipv4"
                                                        : NULL;
    return tag ? lister_put(ls, entry, "tag", h5ark_value_str(tag)) : 0;
}

static const char *layout_name(H5D_layout_t l) {
    switch (l) {
    case H5D_COMPACT: return "compact";
    case H5D_CONTIGUOUS: return "contiguous";
    case H5D_CHUNKED: return "chunked";
    case H5D_VIRTUAL: return "virtual";
    default: return "unknown";
    }
}

static const char *filter_name(H5Z_filter_t f) {
    switch (f) {
    case H5Z_FILTER_DEFLATE: return "gzip";
    case H5Z_FILTER_SHUFFLE: return "shuffle";
    case H5Z_FILTER_FLETCHER32: return "fletcher32";
    case H5Z_FILTER_SZIP: return "szip";
    case H5Z_FILTER_NBIT: return "nbit";
    case H5Z_FILTER_SCALEOFFSET: return "scaleoffset";
    default: return NULL;
    }
}

static h5ark_value *dims_value(int rank, const hsize_t *dims) {
    h5ark_value *a = h5ark_value_array();
    for (int i = 0; a && i < rank; i++)
        if (h5ark_value_push(a, h5ark_value_uint(dims[i]))) h5ark_value_destroy(&a);
    return a;
}

/* storage, filters, chunks: how the data lies in the file (what readhdf's path depends on). */
static int dataset_storage(lister *ls, hid_t did, const char *path, h5ark_value *entry) {
    hid_t dcpl = H5Dget_create_plist(did);
    if (dcpl < 0) return lister_fail(ls, "cannot read the storage properties of '%s'", path);
    int rc = -1;
    H5D_layout_t layout = H5Pget_layout(dcpl);
    if (layout < 0) {
        lister_fail(ls, "cannot read the storage layout of '%s'", path);
        goto out;
    }
    if (lister_put(ls, entry, "storage", h5ark_value_str(layout_name(layout)))) goto out;
    if (layout == H5D_CHUNKED) {
        hsize_t chunk[H5S_MAX_RANK];
        int r = H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk);
        if (r > 0 && lister_put(ls, entry, "chunks", dims_value(r, chunk))) goto out;
        H5Eclear2(H5E_DEFAULT);
    }
    int nf = H5Pget_nfilters(dcpl);
    h5ark_value *filters = h5ark_value_array();
    if (!filters) {
        lister_oom(ls);
        goto out;
    }
    for (int i = 0; i < nf; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        char name[64] = "";
        H5Z_filter_t f =
            H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof name, name, NULL);
        const char *known = filter_name(f);
        char fallback[96];
        if (!known) {
            name[sizeof name - 1] = '\0';
            snprintf(fallback, sizeof fallback, "%s (filter %d)", name[0] ? name : "unknown",
                     (int)f);
        }
        if (lister_push(ls, filters, known ? h5ark_value_str(known) : lister_cstr(fallback))) {
            h5ark_value_destroy(&filters);
            goto out;
        }
    }
    H5Eclear2(H5E_DEFAULT);
    if (lister_put(ls, entry, "filters", filters)) goto out;
    int next = H5Pget_external_count(dcpl);
    if (next > 0 && lister_put(ls, entry, "external_storage", h5ark_value_uint((uint64_t)next)))
        goto out;
    H5Eclear2(H5E_DEFAULT);
    if (lister_put(ls, entry, "storage_bytes", h5ark_value_uint(H5Dget_storage_size(did))))
        goto out;
    rc = 0;
out:
    H5Pclose(dcpl);
    return rc;
}

static int describe_dataset(lister *ls, hid_t did, const char *path, const attr_facts *facts,
                            h5ark_value *entry) {
    hid_t type = H5Dget_type(did);
    if (type < 0) return lister_fail(ls, "cannot read the element type of '%s'", path);
    hid_t space = H5Dget_space(did);
    if (space < 0) {
        lister_capture();
        H5Tclose(type);
        return lister_fail(ls, "cannot read the shape of '%s'", path);
    }
    int rc = -1;
    char tname[32], detail[128];
    h5u_type_name(type, tname, sizeof tname);
    bool numeric = list_type_is_numeric(type);
    if (facts->is_bool && H5Tget_class(type) == H5T_INTEGER) snprintf(tname, sizeof tname, "bool");
    if (lister_put(ls, entry, "dtype", h5ark_value_str(tname))) goto out;
    list_type_detail(type, detail, sizeof detail);
    if (detail[0] && lister_put(ls, entry, "dtype_detail", h5ark_value_str(detail))) goto out;

    H5S_class_t sclass = H5Sget_simple_extent_type(space);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[H5S_MAX_RANK];
    if (sclass == H5S_NO_CLASS || rank < 0 || rank > H5S_MAX_RANK ||
        H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        lister_fail(ls, "cannot read the shape of '%s'", path);
        goto out;
    }
    if (sclass != H5S_NULL && lister_put(ls, entry, "shape", dims_value(rank, dims))) goto out;
    if (ls->mode == LIST_VIEW && sclass == H5S_SCALAR &&
        list_scalar_value(ls, did, type, facts->is_bool, entry))
        goto out;

    (void)numeric;
    (void)facts;
    rc = dataset_storage(ls, did, path, entry);
out:
    H5Sclose(space);
    H5Tclose(type);
    return rc;
}

/* objtype as readhdf sees it: the schema table's one classification decides (inferred when
 * no ObjType says so). What it claims but cannot read has no objtype and a note saying why;
 * what no family reads keeps the name its ObjType gives, or a note. */
static int list_objtype(lister *ls, hid_t oid, const char *path, const attr_facts *facts,
                        h5ark_value *entry, bool *whole) {
    schema_facts f;
    schema_match m = {0};
    schema_verdict v = {0};
    h5ark_error ignored = {0};
    bool found = schema_facts_read(oid, path, &f, &ignored) == 0 && schema_classify(&f, &m, &v);
    H5Eclear2(H5E_DEFAULT);
    if (found) {
        const schema_family *fam = schema_family_of(m.kind);
        schema_listing li;
        schema_list(m.kind, &f, &li);
        H5Eclear2(H5E_DEFAULT);
        const char *objtype = v.code != H5ARK_OK ? "" : li.objtype ? li.objtype : fam->objtype;
        char note[sizeof v.why + 100];
        if (v.code != H5ARK_OK) {
            schema_verdict_note(m.kind, &v, note, sizeof note);
            li.note = note;
        }
        if (li.extra)
            for (size_t i = 0; i < li.extra->as.m.len; i++)
                if (lister_put(ls, entry, li.extra->as.m.keys[i],
                               h5ark_value_copy(li.extra->as.m.vals[i]))) {
                    h5ark_value_destroy(&li.extra);
                    return -1;
                }
        h5ark_value_destroy(&li.extra);
        if (li.kind) {
            *whole = true;
            if (lister_put(ls, entry, "kind", h5ark_value_str(li.kind))) return -1;
        }
        if (objtype[0] && lister_put(ls, entry, "objtype", h5ark_value_str(objtype))) return -1;
        if (m.tag && lister_put(ls, entry, "tag", h5ark_value_str(m.tag))) return -1;
        if (li.dtype[0] && lister_put(ls, entry, "dtype", h5ark_value_str(li.dtype))) return -1;
        if (li.rows >= 0 && lister_put(ls, entry, "shape", shape1(li.rows))) return -1;
        if (li.note && lister_put(ls, entry, "note", lister_cstr(li.note))) return -1;
        if (li.legacy && lister_put(ls, entry, "legacy", h5ark_value_str(li.legacy))) return -1;
        /* inferred: an objtype no ObjType gave */
        return f.has_objtype || !objtype[0]
                   ? 0
                   : lister_put(ls, entry, "inferred", h5ark_value_bool(true));
    }
    if (facts->has_objtype) return objtype_from_attr(ls, facts, entry);
    if (f.is_group) return 0;
    return lister_put(
        ls, entry, "note",
        h5ark_value_str("not an object h5ark reads: an element type or shape it cannot "
                        "hold"));
}

/* ---- the walk --------------------------------------------------------------------------- */

typedef struct {
    char *name;
    H5L_type_t type;
    haddr_t addr;
    size_t val_size;
    int64_t corder; /* INT64_MAX when not recorded */
    hsize_t pos;    /* position in the native order of the index iterated */
} link_rec;

typedef struct {
    link_rec *items;
    size_t len, cap;
    size_t limit;
    bool oom, over;
} link_list;

static void link_list_free(link_list *l) {
    for (size_t i = 0; i < l->len; i++)
        free(l->items[i].name);
    free(l->items);
    l->items = NULL;
    l->len = l->cap = 0;
}

static herr_t link_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    (void)g;
    link_list *l = data;
    if (l->len >= l->limit) {
        l->over = true;
        return 1;
    }
    if (l->len == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        link_rec *t = realloc(l->items, cap * sizeof *t);
        if (!t) goto fail;
        l->items = t;
        l->cap = cap;
    }
    link_rec *r = &l->items[l->len];
    if (!(r->name = strdup(name))) goto fail;
    r->type = info->type;
    r->addr = info->type == H5L_TYPE_HARD ? info->u.address : HADDR_UNDEF;
    r->val_size = info->type == H5L_TYPE_HARD ? 0 : info->u.val_size;
    r->corder = info->corder_valid ? info->corder : INT64_MAX;
    r->pos = l->len;
    l->len++;
    return 0;
fail:
    l->oom = true;
    return -1;
}

static int link_by_corder(const void *a, const void *b) {
    const link_rec *x = a, *y = b;
    if (x->corder != y->corder) return x->corder < y->corder ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int link_by_name(const void *a, const void *b) {
    return strcmp(((const link_rec *)a)->name, ((const link_rec *)b)->name);
}

/* The group's links, in creation order when the group tracks it, else by name (HDF5's
 * link order). Iterated in native order and sorted here: any other order makes HDF5 1.10
 * build a table whose error path frees uninitialised pointers on a damaged file. */
static int collect_links(lister *ls, hid_t gid, const char *path, link_list *l, H5_index_t *used) {
    l->limit = LIST_MAX_ENTRIES - ls->nentries + 1;
    bool tracked = false;
    hid_t gcpl = H5Gget_create_plist(gid);
    unsigned flags = 0;
    if (gcpl >= 0) {
        tracked = H5Pget_link_creation_order(gcpl, &flags) >= 0 && (flags & H5P_CRT_ORDER_TRACKED);
        H5Pclose(gcpl);
    }
    H5Eclear2(H5E_DEFAULT);
    if (H5Lexists(gid, PROBE_NAME, H5P_DEFAULT) < 0)
        return lister_fail(ls, "cannot read the members of '%s'", path[0] ? path : "/");
    hsize_t idx = 0;
    *used = H5_INDEX_CRT_ORDER;
    if (!tracked || H5Literate(gid, H5_INDEX_CRT_ORDER, H5_ITER_NATIVE, &idx, link_cb, l) < 0) {
        if (l->oom) return lister_oom(ls);
        H5Eclear2(H5E_DEFAULT);
        link_list_free(l);
        l->over = false;
        idx = 0;
        *used = H5_INDEX_NAME;
        if (H5Literate(gid, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, link_cb, l) < 0) {
            if (l->oom) return lister_oom(ls);
            return lister_fail(ls, "cannot list the members of '%s'", path[0] ? path : "/");
        }
    }
    if (l->len)
        qsort(l->items, l->len, sizeof *l->items,
              *used == H5_INDEX_CRT_ORDER ? link_by_corder : link_by_name);
    if (l->over)
        return h5ark_fail(ls->err, H5ARK_RESOURCE_LIMIT,
                          "'%s' holds more than %d groups, datasets and links; lshdf lists at "
                          "most %d",
                          ls->file, LIST_MAX_ENTRIES, LIST_MAX_ENTRIES);
    return 0;
}

static h5ark_value *new_entry(lister *ls, const char *name, const char *path, const char *kind) {
    h5ark_value *e = h5ark_value_map();
    if (!e || h5ark_value_set(e, "name", lister_cstr(name)) ||
        h5ark_value_set(e, "path", lister_cstr(path)) ||
        h5ark_value_set(e, "kind", h5ark_value_str(kind))) {
        h5ark_value_destroy(&e);
        lister_oom(ls);
    }
    return e;
}

/* Entries always carry every key of the contract, nil where nothing applies. */
static int finish_entry(lister *ls, h5ark_value *e) {
    static const char *keys[] = {"objtype", "dtype", "shape"};
    for (size_t i = 0; i < 3; i++)
        if (!h5ark_value_get(e, keys[i]) && lister_put(ls, e, keys[i], h5ark_value_nil()))
            return -1;
    if (!h5ark_value_get(e, "attrs") && lister_put(ls, e, "attrs", h5ark_value_map())) return -1;
    return 0;
}

static int add_entry(lister *ls, h5ark_value *e) {
    if (finish_entry(ls, e)) {
        h5ark_value_destroy(&e);
        return -1;
    }
    if (ls->nentries >= LIST_MAX_ENTRIES) {
        h5ark_value_destroy(&e);
        return h5ark_fail(ls->err, H5ARK_RESOURCE_LIMIT,
                          "'%s' holds more than %d groups, datasets and links; lshdf lists at "
                          "most %d",
                          ls->file, LIST_MAX_ENTRIES, LIST_MAX_ENTRIES);
    }
    ls->nentries++;
    return lister_push(ls, ls->entries, e);
}

/* A soft, external or user-defined link: described, never followed. */
static int list_link(lister *ls, hid_t gid, H5_index_t idx_type, const link_rec *r,
                     const char *path) {
    h5ark_value *e = new_entry(ls, r->name, path, "link");
    if (!e) return -1;
    const char *lt = r->type == H5L_TYPE_SOFT       ? "soft"
                     : r->type == H5L_TYPE_EXTERNAL ? "external"
                                                    : "user-defined";
    int rc = lister_put(ls, e, "link_type", h5ark_value_str(lt));
    char *val = NULL;
    if (!rc && (r->type == H5L_TYPE_SOFT || r->type == H5L_TYPE_EXTERNAL) && r->val_size > 0 &&
        r->val_size <= LINK_VALUE_MAX && (val = malloc(r->val_size + 1))) {
        if (H5Lget_val_by_idx(gid, ".", idx_type, H5_ITER_NATIVE, r->pos, val, r->val_size,
                              H5P_DEFAULT) < 0) {
            H5Eclear2(H5E_DEFAULT);
            rc = lister_put(ls, e, "note", h5ark_value_str("the link's value is unreadable"));
        } else if (r->type == H5L_TYPE_SOFT) {
            rc = lister_put(ls, e, "target", lister_text(val, strnlen(val, r->val_size)));
        } else {
            const char *file = NULL, *obj = NULL;
            unsigned flags;
            if (H5Lunpack_elink_val(val, r->val_size, &flags, &file, &obj) < 0 || !file || !obj) {
                H5Eclear2(H5E_DEFAULT);
                rc = lister_put(ls, e, "note", h5ark_value_str("the external link is malformed"));
            } else {
                /* the unpacked strings lie inside val, which is r->val_size bytes */
                size_t fmax = r->val_size - (size_t)(file - val);
                size_t omax = r->val_size - (size_t)(obj - val);
                rc = lister_put(ls, e, "file", lister_text(file, strnlen(file, fmax)));
                if (!rc) rc = lister_put(ls, e, "target", lister_text(obj, strnlen(obj, omax)));
            }
        }
    }
    free(val);
    if (rc) {
        h5ark_value_destroy(&e);
        return -1;
    }
    return add_entry(ls, e);
}

static char *child_path(const char *parent, const char *name) {
    size_t a = strlen(parent), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, parent, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

static int list_group(lister *ls, hid_t gid, const char *path, int depth);

static int list_object(lister *ls, const link_rec *r, const char *path, int depth) {
    const char *first = seen_find(ls, r->addr);
    if (first) {
        /* a second name for an object already listed (an alias, or a cycle) */
        h5ark_value *e = new_entry(ls, r->name, path, "link");
        if (!e) return -1;
        if (lister_put(ls, e, "link_type", h5ark_value_str("hard")) ||
            lister_put(ls, e, "target", lister_cstr(first))) {
            h5ark_value_destroy(&e);
            return -1;
        }
        return add_entry(ls, e);
    }
    hid_t oid = H5Oopen_by_addr(ls->fid, r->addr);
    if (oid < 0) return lister_fail(ls, "cannot open '%s'", path);
    int rc = -1;
    H5O_info_t oi;
    if (H5Oget_info2(oid, &oi, H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS) < 0) {
        lister_fail(ls, "cannot read the object header of '%s'", path);
        goto out;
    }
    if (seen_add(ls, r->addr, path)) goto out;
    const char *kind = oi.type == H5O_TYPE_GROUP            ? "group"
                       : oi.type == H5O_TYPE_DATASET        ? "dataset"
                       : oi.type == H5O_TYPE_NAMED_DATATYPE ? "datatype"
                                                            : "unknown";
    h5ark_value *e = new_entry(ls, r->name, path, kind);
    if (!e) goto out;
    attr_facts facts = {0};
    if (list_read_attrs(ls, oid, oi.type, path, oi.num_attrs, e, &facts)) goto fail_entry;
    if (oi.type == H5O_TYPE_DATASET) {
        if (describe_dataset(ls, oid, path, &facts, e)) goto fail_entry;
    } else if (oi.type == H5O_TYPE_GROUP && depth == 0 && !facts.has_objtype &&
               strcmp(r->name, LEGACY_METADATA_GROUP) == 0) {
        if (lister_put(ls, e, "legacy",
                       h5ark_value_str("Arkouda v1 file metadata (file_version, arkouda_version); "
                                       "not a data object")))
            goto fail_entry;
    } else if (oi.type == H5O_TYPE_NAMED_DATATYPE) {
        char tname[32];
        h5u_type_name(oid, tname, sizeof tname);
        if (lister_put(ls, e, "dtype", h5ark_value_str(tname))) goto fail_entry;
    }
    bool whole = false; /* an entry for the whole object (an ExeTera field) */
    if ((oi.type == H5O_TYPE_GROUP || oi.type == H5O_TYPE_DATASET) &&
        list_objtype(ls, oid, path, &facts, e, &whole))
        goto fail_entry;
    if (add_entry(ls, e)) goto out;
    if (oi.type == H5O_TYPE_GROUP && ls->mode != LIST_TOP && !whole) {
        if (depth + 1 >= LIST_MAX_DEPTH) {
            h5ark_fail(ls->err, H5ARK_RESOURCE_LIMIT,
                       "'%s' nests groups more than %d deep (at '%s'); lshdf descends at most %d",
                       ls->file, LIST_MAX_DEPTH, path, LIST_MAX_DEPTH);
            goto out;
        }
        if (list_group(ls, oid, path, depth + 1)) goto out;
    }
    rc = 0;
    goto out;
fail_entry:
    h5ark_value_destroy(&e);
out:
    H5Oclose(oid);
    return rc;
}

static int list_group(lister *ls, hid_t gid, const char *path, int depth) {
    link_list links = {0};
    H5_index_t idx_type = H5_INDEX_NAME;
    if (collect_links(ls, gid, path, &links, &idx_type)) {
        link_list_free(&links);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < links.len && rc == 0; i++) {
        const link_rec *r = &links.items[i];
        char *cpath = child_path(path, r->name);
        if (!cpath) {
            rc = lister_oom(ls);
            break;
        }
        if (r->type == H5L_TYPE_HARD)
            rc = list_object(ls, r, cpath, depth);
        else
            rc = list_link(ls, gid, idx_type, r, cpath);
        free(cpath);
    }
    link_list_free(&links);
    return rc;
}

/* ---- entry point ------------------------------------------------------------------------ */

/* OS-level checks first, so a missing, unreadable or special file gets the right code and
 * HDF5 never opens a FIFO or a device. */
static int check_file(const char *abs_path, const char *shown, h5ark_error *err) {
    struct stat st;
    if (stat(abs_path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return h5ark_fail(err, H5ARK_NOT_FOUND, "file '%s' does not exist", shown);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot read '%s': %s", shown, strerror(errno));
    }
    if (S_ISDIR(st.st_mode))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is a directory, not a file", shown);
    if (!S_ISREG(st.st_mode))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is not a regular file", shown);
    int fd = open(abs_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot open '%s': %s", shown, strerror(errno));
    close(fd);
    if (st.st_size == 0)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "'%s' is empty, not an HDF5 file", shown);
    return 0;
}

/* Open the file at abs_path read-only after the checks every read makes (a regular file
 * inside the data directory, sound in the sandbox, an HDF5 signature); -1 with err set. */
static hid_t open_checked(const char *abs_path, const char *shown, h5ark_error *err) {
    /* the error stack and its printing are per thread: silence it in this one */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    lister_capture_clear();
    if (check_file(abs_path, shown, err)) return -1;
    if (sandbox_check_file(abs_path, err)) return h5ark_fail_context(err, "'%s'", shown);
    htri_t is = H5Fis_hdf5(abs_path);
    char why[600];
    if (is <= 0) {
        h5ark_code code = h5u_reason(why, sizeof why, H5ARK_SCHEMA_ERROR);
        if (is == 0)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "'%s' is not an HDF5 file (no HDF5 signature found)", shown);
        return h5ark_fail(err, code, "'%s' cannot be read as HDF5: %s", shown, why);
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "cannot set up file access");
    /* whatever is left open on an error path is closed with the file */
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    hid_t fid = H5Fopen(abs_path, H5F_ACC_RDONLY, fapl);
    h5ark_code code = fid < 0 ? h5u_reason(why, sizeof why, H5ARK_SCHEMA_ERROR) : H5ARK_OK;
    H5Pclose(fapl);
    if (fid >= 0) return fid;
    if (code == H5ARK_BUSY)
        return h5ark_fail(err, code,
                          "'%s' is locked by another program writing it; try again when it "
                          "is closed: %s",
                          shown, why);
    if (code == H5ARK_IO_ERROR) return h5ark_fail(err, code, "cannot read '%s': %s", shown, why);
    return h5ark_fail(err, code, "'%s' is not a readable HDF5 file (truncated or corrupt?): %s",
                      shown, why);
}

/* The root group as an entry of its own (path "/"), with its attributes. */
static int list_root(lister *ls, hid_t root, const H5O_info_t *oi) {
    h5ark_value *e = new_entry(ls, "", "/", "group");
    attr_facts facts = {0};
    if (!e) return -1;
    if (list_read_attrs(ls, root, H5O_TYPE_GROUP, "/", oi->num_attrs, e, &facts)) {
        h5ark_value_destroy(&e);
        return -1;
    }
    return add_entry(ls, e);
}

static int list_file(const char *abs_path, list_mode mode, h5ark_value *entries, h5ark_error *err) {
    const char *shown = files_display(abs_path);
    lister ls = {.file = shown, .fid = -1, .mode = mode, .entries = entries, .err = err};
    ls.fid = open_checked(abs_path, shown, err);
    if (ls.fid < 0) return -1;
    int rc = -1;
    hid_t root = H5Gopen2(ls.fid, "/", H5P_DEFAULT);
    H5O_info_t oi;
    if (root < 0 || H5Oget_info2(root, &oi, H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS) < 0) {
        lister_fail(&ls, "cannot open the root group");
    } else if (seen_add(&ls, oi.addr, "/") == 0 &&
               (mode != LIST_VIEW || list_root(&ls, root, &oi) == 0)) {
        rc = list_group(&ls, root, "", 0);
    }
    if (root >= 0) H5Gclose(root);
    if (H5Fclose(ls.fid) < 0) H5Eclear2(H5E_DEFAULT);
    seen_free(&ls);
    return rc;
}

/* Files read while no part's change is being repeated on an old file (twin.h). */
int storage_list(const char *abs_path, list_mode mode, h5ark_value *entries, h5ark_error *err) {
    twin_readers_enter();
    int rc = list_file(abs_path, mode, entries, err);
    twin_readers_leave();
    return rc;
}

int storage_file_format(const char *abs_path, int64_t *format, h5ark_error *err) {
    twin_readers_enter();
    const char *shown = files_display(abs_path);
    hid_t fid = open_checked(abs_path, shown, err);
    int rc = fid < 0 ? -1 : h5u_read_int_attr(fid, ATTR_FILE_FORMAT, format, shown, err);
    if (fid >= 0 && H5Fclose(fid) < 0) H5Eclear2(H5E_DEFAULT);
    twin_readers_leave();
    return rc;
}
