/* lshdf: describe the groups, datasets and links of any HDF5 file in Arkouda's terms
 * (docs/FORMAT.md). The file is untrusted: it is opened read-only, links are never
 * followed (soft and external links are reported, hard-link aliases and cycles are
 * reported once), and entry count, depth, attribute sizes and text lengths are capped so a
 * hostile file costs bounded time and memory. */
#include "storage.h"
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
/* Attributes larger than this are described, not read. */
#define ATTR_MAX_ELEMS 64
#define ATTR_MAX_BYTES 65536
#define ATTR_MAX_COUNT 256
/* Longest text put in a reply for one name, path or string value. */
#define TEXT_MAX       4096
#define LINK_VALUE_MAX 65536

/* ---- HDF5 error stack -> message ------------------------------------------------------ */

/* The reason for a failure, kept when cleanup calls (which clear the stack on success) must
 * run between the failing call and the report. */
static _Thread_local struct {
    bool set;
    h5ark_code code;
    char why[600];
} captured;

static void h5_capture(void) {
    captured.code = h5u_reason(captured.why, sizeof captured.why, H5ARK_SCHEMA_ERROR);
    captured.set = true;
}

/* ---- text ---------------------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s (at most n bytes), 0 if ill-formed. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return len;
}

/* A reply string from bytes a file supplied: MessagePack str must be UTF-8 or the client
 * cannot decode the whole reply, so ill-formed bytes become \xNN; long text is cut. */
static h5ark_value *text_value(const char *s, size_t n) {
    size_t cap = (n < TEXT_MAX ? n : TEXT_MAX) * 4 + 8;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n && o < TEXT_MAX) {
        size_t k = utf8_seq(p + i, n - i);
        if (k == 0 || p[i] == 0) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", p[i]);
            i++;
        } else {
            memcpy(out + o, p + i, k);
            o += k;
            i += k;
        }
    }
    if (i < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    h5ark_value *v = h5ark_value_strn(out, o);
    free(out);
    return v;
}

static h5ark_value *text_cstr(const char *s) {
    return text_value(s, strlen(s));
}

/* ---- the listing state --------------------------------------------------------------- */

typedef struct {
    haddr_t addr;
    char *path; /* where the object was first seen */
} seen_slot;

typedef struct {
    const char *file; /* as the client named it, for messages */
    hid_t fid;
    list_mode mode;
    h5ark_value *entries;
    size_t nentries;
    seen_slot *seen; /* open addressing on object address */
    size_t seen_cap, seen_len;
    h5ark_error *err;
} lister;

static int oom(lister *ls) {
    return h5ark_fail(ls->err, H5ARK_RESOURCE_LIMIT, "out of memory listing '%s'", ls->file);
}

/* schema_error naming the file and what was being done, with HDF5's reason. */
static int h5_fail(lister *ls, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int h5_fail(lister *ls, const char *fmt, ...) {
    char what[512], why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    h5ark_code code;
    if (captured.set) {
        code = captured.code;
        snprintf(why, sizeof why, "%s", captured.why);
        captured.set = false;
    } else {
        code = h5u_reason(why, sizeof why, H5ARK_SCHEMA_ERROR);
    }
    return h5ark_fail(ls->err, code, "'%s' is corrupt or unreadable: %s: %s", ls->file, what, why);
}

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
        if (!t) return oom(ls);
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
    if (!copy) return oom(ls);
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

/* Map helpers that turn an out-of-memory failure into the lister's error. */
static int put(lister *ls, h5ark_value *map, const char *key, h5ark_value *val) {
    return h5ark_value_set(map, key, val) ? oom(ls) : 0;
}

static int push(lister *ls, h5ark_value *array, h5ark_value *item) {
    return h5ark_value_push(array, item) ? oom(ls) : 0;
}

/* ---- types ----------------------------------------------------------------------------- */

/* A sentence on types the dtype name says too little about. */
static void type_detail(hid_t type, char *buf, size_t len) {
    size_t size = H5Tget_size(type);
    buf[0] = '\0';
    switch (H5Tget_class(type)) {
    case H5T_STRING: {
        htri_t var = H5Tis_variable_str(type);
        bool utf8 = H5Tget_cset(type) == H5T_CSET_UTF8;
        if (var > 0)
            snprintf(buf, len, "variable-length %s string", utf8 ? "UTF-8" : "ASCII");
        else
            snprintf(buf, len, "fixed-length %s string of %zu bytes", utf8 ? "UTF-8" : "ASCII",
                     size);
        break;
    }
    case H5T_COMPOUND: {
        int n = H5Tget_nmembers(type);
        snprintf(buf, len, "compound of %d members, %zu bytes", n, size);
        break;
    }
    case H5T_VLEN: {
        hid_t base = H5Tget_super(type);
        char b[32] = "unknown";
        if (base >= 0) {
            h5u_type_name(base, b, sizeof b);
            H5Tclose(base);
        }
        snprintf(buf, len, "variable-length sequence of %s", b);
        break;
    }
    case H5T_ARRAY: {
        hid_t base = H5Tget_super(type);
        char b[32] = "unknown";
        if (base >= 0) {
            h5u_type_name(base, b, sizeof b);
            H5Tclose(base);
        }
        snprintf(buf, len, "array of %s, %zu bytes", b, size);
        break;
    }
    case H5T_ENUM:
        if (!h5u_is_bool_enum(type))
            snprintf(buf, len, "enum of %d members, %zu bytes", H5Tget_nmembers(type), size);
        break;
    case H5T_INTEGER:
    case H5T_FLOAT:
        if (H5Tget_order(type) == H5T_ORDER_BE) snprintf(buf, len, "big-endian");
        break;
    default:
        if (size) snprintf(buf, len, "%zu bytes per element", size);
        break;
    }
    H5Eclear2(H5E_DEFAULT);
}

static bool type_is_numeric(hid_t type) {
    H5T_class_t c = H5Tget_class(type);
    return c == H5T_INTEGER || c == H5T_FLOAT || h5u_is_bool_enum(type);
}

/* ---- attributes ------------------------------------------------------------------------ */

typedef struct {
    bool has_objtype, objtype_int;
    int64_t objtype;
    bool is_bool;
    bool is_bigint;
} attr_facts;

static h5ark_value *describe(const char *what, int rank, const hsize_t *dims) {
    char buf[256];
    int o = snprintf(buf, sizeof buf, "<%s", what);
    if (rank >= 0) {
        o += snprintf(buf + o, sizeof buf - (size_t)o, ", shape (");
        for (int i = 0; i < rank && o < 200; i++)
            o += snprintf(buf + o, sizeof buf - (size_t)o, "%s%llu", i ? ", " : "",
                          (unsigned long long)dims[i]);
        o += snprintf(buf + o, sizeof buf - (size_t)o, "%s)", rank == 1 ? "," : "");
    }
    snprintf(buf + o, sizeof buf - (size_t)o, ">");
    return h5ark_value_str(buf);
}

/* Strings of fixed length: cut at the NUL (or trailing spaces) their padding says. */
static h5ark_value *fixed_string(const char *p, size_t size, H5T_str_t pad) {
    size_t n = size;
    if (pad == H5T_STR_SPACEPAD) {
        while (n && p[n - 1] == ' ')
            n--;
    } else {
        const char *nul = memchr(p, '\0', size);
        if (nul) n = (size_t)(nul - p);
    }
    return text_value(p, n);
}

/* What values are read from: an attribute, or (for the value of a scalar dataset) a
 * dataset, read whole. */
typedef struct {
    hid_t id;
    bool dataset;
} source;

static herr_t source_read(source src, hid_t mem, void *buf) {
    return src.dataset ? H5Dread(src.id, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf)
                       : H5Aread(src.id, mem, buf);
}

static void source_reclaim(source src, hid_t mem, void *buf) {
    hid_t space = src.dataset ? H5Dget_space(src.id) : H5Aget_space(src.id);
    if (space < 0) return;
    H5Dvlen_reclaim(mem, space, H5P_DEFAULT, buf);
    H5Sclose(space);
}

/* Read n elements of src (type ftype) into values; 1 = read, 0 = type not read (caller
 * describes it), -1 = read failed (HDF5 stack set). */
static int read_attr_elems(source src, hid_t ftype, size_t n, h5ark_value **vals, bool *oomp) {
    H5T_class_t cls = H5Tget_class(ftype);
    size_t size = H5Tget_size(ftype);
    int rc = 0;
    *oomp = false;
    if (cls == H5T_INTEGER && size >= 1 && size <= 8) {
        bool sign = H5Tget_sign(ftype) != H5T_SGN_NONE;
        int64_t buf[ATTR_MAX_ELEMS];
        if (source_read(src, sign ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64, buf) < 0) return -1;
        for (size_t i = 0; i < n; i++)
            vals[i] = sign ? h5ark_value_int(buf[i]) : h5ark_value_uint((uint64_t)buf[i]);
        rc = 1;
    } else if (cls == H5T_FLOAT) {
        double buf[ATTR_MAX_ELEMS];
        if (source_read(src, H5T_NATIVE_DOUBLE, buf) < 0) return -1;
        for (size_t i = 0; i < n; i++)
            vals[i] = h5ark_value_float(buf[i]);
        rc = 1;
    } else if (cls == H5T_ENUM && h5u_is_bool_enum(ftype)) {
        hid_t mem = H5Tget_native_type(ftype, H5T_DIR_ASCEND);
        if (mem < 0) return -1;
        unsigned char buf[ATTR_MAX_ELEMS];
        herr_t r = source_read(src, mem, buf);
        if (r < 0) h5_capture();
        H5Tclose(mem);
        if (r < 0) return -1;
        for (size_t i = 0; i < n; i++)
            vals[i] = h5ark_value_bool(buf[i] != 0);
        rc = 1;
    } else if (cls == H5T_STRING) {
        htri_t var = H5Tis_variable_str(ftype);
        if (var < 0) return -1;
        hid_t mem = H5Tcopy(ftype);
        if (mem < 0) return -1;
        if (var) {
            char *ptrs[ATTR_MAX_ELEMS] = {0};
            if (source_read(src, mem, ptrs) < 0) {
                h5_capture();
                H5Tclose(mem);
                return -1;
            }
            for (size_t i = 0; i < n; i++)
                vals[i] = ptrs[i] ? text_value(ptrs[i], strnlen(ptrs[i], TEXT_MAX + 1))
                                  : h5ark_value_str("");
            source_reclaim(src, mem, ptrs);
        } else if (size > 0 && size * n <= ATTR_MAX_BYTES) {
            char *buf = malloc(size * n);
            if (!buf) {
                H5Tclose(mem);
                *oomp = true;
                return 0;
            }
            if (source_read(src, mem, buf) < 0) {
                h5_capture();
                free(buf);
                H5Tclose(mem);
                return -1;
            }
            H5T_str_t pad = H5Tget_strpad(ftype);
            for (size_t i = 0; i < n; i++)
                vals[i] = fixed_string(buf + i * size, size, pad);
            free(buf);
        } else {
            H5Tclose(mem);
            return 0;
        }
        H5Tclose(mem);
        rc = 1;
    }
    if (rc == 1)
        for (size_t i = 0; i < n; i++)
            if (!vals[i]) *oomp = true;
    return rc;
}

/* The value of one attribute as a reply value; facts about Arkouda's own attributes are
 * noted on the way. */
static int attr_value(lister *ls, hid_t obj, const char *objpath, const char *aname,
                      h5ark_value **out, attr_facts *facts) {
    *out = NULL;
    hid_t aid = H5Aopen(obj, aname, H5P_DEFAULT);
    if (aid < 0) return h5_fail(ls, "cannot open attribute '%s' of '%s'", aname, objpath);
    hid_t ftype = H5Aget_type(aid);
    hid_t space = H5Aget_space(aid);
    int rc = -1;
    if (ftype < 0 || space < 0) {
        h5_fail(ls, "cannot read the type of attribute '%s' of '%s'", aname, objpath);
        goto done;
    }
    H5S_class_t sclass = H5Sget_simple_extent_type(space);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[H5S_MAX_RANK];
    if (sclass == H5S_NO_CLASS || rank < 0 || rank > H5S_MAX_RANK ||
        H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        h5_fail(ls, "cannot read the shape of attribute '%s' of '%s'", aname, objpath);
        goto done;
    }
    if (sclass == H5S_NULL) {
        *out = h5ark_value_nil();
        rc = *out ? 0 : oom(ls);
        goto done;
    }
    hsize_t n = 1;
    bool big = false;
    for (int i = 0; i < rank && n; i++) {
        if (dims[i] && n > (hsize_t)ATTR_MAX_ELEMS / dims[i]) big = true;
        n = big ? n : n * dims[i];
    }
    char tname[32];
    h5u_type_name(ftype, tname, sizeof tname);
    if (big || n > ATTR_MAX_ELEMS || rank > 1) {
        *out = describe(tname, rank, dims);
        rc = *out ? 0 : oom(ls);
        goto done;
    }
    h5ark_value *vals[ATTR_MAX_ELEMS] = {0};
    bool no_mem;
    int got = read_attr_elems((source){aid, false}, ftype, (size_t)n, vals, &no_mem);
    if (got < 0) {
        h5_fail(ls, "cannot read attribute '%s' of '%s'", aname, objpath);
        goto done;
    }
    if (no_mem) {
        for (hsize_t i = 0; i < n; i++)
            h5ark_value_destroy(&vals[i]);
        oom(ls);
        goto done;
    }
    if (got == 0) {
        char detail[128];
        type_detail(ftype, detail, sizeof detail);
        *out = describe(detail[0] ? detail : tname, rank == 0 ? -1 : rank, dims);
    } else if (rank == 0) {
        *out = vals[0];
    } else {
        *out = h5ark_value_array();
        for (hsize_t i = 0; i < n; i++)
            if (!*out || h5ark_value_push(*out, vals[i])) {
                h5ark_value_destroy(out);
                for (hsize_t j = i + 1; j < n; j++)
                    h5ark_value_destroy(&vals[j]);
                break;
            }
    }
    if (!*out) {
        oom(ls);
        goto done;
    }
    if (got == 1 && rank == 0 && H5Tget_class(ftype) == H5T_INTEGER) {
        int64_t v = 0;
        bool isint = h5ark_value_to_int64(*out, &v);
        if (strcmp(aname, ATTR_OBJTYPE) == 0) {
            facts->has_objtype = true;
            facts->objtype_int = isint;
            facts->objtype = v;
        } else if (strcmp(aname, ATTR_IS_BOOL) == 0) {
            facts->is_bool = isint && v == 1;
        } else if (strcmp(aname, "isBigInt") == 0) {
            facts->is_bigint = isint && v == 1;
        }
    } else if (strcmp(aname, ATTR_OBJTYPE) == 0) {
        facts->has_objtype = true;
        facts->objtype_int = false;
    }
    rc = 0;
done:
    if (ftype >= 0) H5Tclose(ftype);
    if (space >= 0) H5Sclose(space);
    H5Aclose(aid);
    return rc;
}

typedef struct {
    char *name;
    int64_t corder; /* INT64_MAX when not recorded */
} attr_rec;

typedef struct {
    attr_rec *items;
    size_t len, cap;
    bool oom;
} name_list;

static void name_list_free(name_list *l) {
    for (size_t i = 0; i < l->len; i++)
        free(l->items[i].name);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int by_corder(const void *a, const void *b) {
    const attr_rec *x = a, *y = b;
    if (x->corder != y->corder) return x->corder < y->corder ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_attr_name(const void *a, const void *b) {
    return strcmp(((const attr_rec *)a)->name, ((const attr_rec *)b)->name);
}

static herr_t attr_name_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data) {
    (void)loc;
    name_list *l = data;
    if (l->len == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        attr_rec *t = realloc(l->items, cap * sizeof *t);
        if (!t) goto fail;
        l->items = t;
        l->cap = cap;
    }
    if (!(l->items[l->len].name = strdup(name))) goto fail;
    l->items[l->len].corder = info->corder_valid ? info->corder : INT64_MAX;
    l->len++;
    /* stop early: the rest are only counted */
    return l->len >= ATTR_MAX_COUNT ? 1 : 0;
fail:
    l->oom = true;
    return -1;
}

/* Whether the object records its attributes' creation order: without it, iterating by
 * creation order gives an unspecified order. */
static bool attr_order_tracked(hid_t obj, H5O_type_t type) {
    hid_t plist = type == H5O_TYPE_DATASET ? H5Dget_create_plist(obj)
                  : type == H5O_TYPE_GROUP ? H5Gget_create_plist(obj)
                                           : H5Tget_create_plist(obj);
    unsigned flags = 0;
    bool tracked = plist >= 0 && H5Pget_attr_creation_order(plist, &flags) >= 0 &&
                   (flags & H5P_CRT_ORDER_TRACKED);
    if (plist >= 0) H5Pclose(plist);
    H5Eclear2(H5E_DEFAULT);
    return tracked;
}

/* A name no file uses: looking it up makes HDF5 decode every attribute (or link) message
 * of an object header one by one, failing cleanly on a damaged one. Listing them instead
 * first builds a table whose error path in HDF5 1.10 frees uninitialised entries (a crash),
 * so the lookup runs first as a probe. */
#define PROBE_NAME "\x7fh5ark-probe\x7f"

/* attrs map of an object, in creation order when tracked, else by name. */
static int read_attrs(lister *ls, hid_t obj, H5O_type_t type, const char *path, hsize_t nattrs,
                      h5ark_value *entry, attr_facts *facts) {
    h5ark_value *attrs = h5ark_value_map();
    if (!attrs) return oom(ls);
    name_list names = {0};
    if (nattrs > 0) {
        /* Native order, sorted here: iterating in any other order makes HDF5 1.10 build a
         * table whose error path frees uninitialised pointers on a damaged file. */
        hsize_t idx = 0;
        bool tracked = attr_order_tracked(obj, type);
        if (H5Aexists(obj, PROBE_NAME) < 0) {
            h5ark_value_destroy(&attrs);
            return h5_fail(ls, "cannot read the attributes of '%s'", path);
        }
        if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, attr_name_cb, &names) < 0 &&
            !names.oom) {
            name_list_free(&names);
            h5ark_value_destroy(&attrs);
            return h5_fail(ls, "cannot list the attributes of '%s'", path);
        }
        if (names.oom) {
            name_list_free(&names);
            h5ark_value_destroy(&attrs);
            return oom(ls);
        }
        if (names.len)
            qsort(names.items, names.len, sizeof *names.items, tracked ? by_corder : by_attr_name);
    }
    int rc = 0;
    for (size_t i = 0; i < names.len && rc == 0; i++) {
        h5ark_value *v;
        rc = attr_value(ls, obj, path, names.items[i].name, &v, facts);
        if (rc == 0) {
            /* keys must be valid UTF-8 as well */
            h5ark_value *key = text_cstr(names.items[i].name);
            rc = key ? put(ls, attrs, key->as.s.ptr, v) : (h5ark_value_destroy(&v), oom(ls));
            h5ark_value_destroy(&key);
        }
    }
    name_list_free(&names);
    if (rc == 0 && nattrs > ATTR_MAX_COUNT)
        rc = put(ls, entry, "attrs_omitted", h5ark_value_uint(nattrs - ATTR_MAX_COUNT));
    if (rc) {
        h5ark_value_destroy(&attrs);
        return -1;
    }
    return put(ls, entry, "attrs", attrs);
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
        return put(ls, entry, "note", h5ark_value_str(note));
    }
    if (put(ls, entry, "objtype", h5ark_value_str(objtype_names[f->objtype]))) return -1;
    const char *tag = f->objtype == OBJTYPE_DATETIME    ? "datetime64[ns]"
                      : f->objtype == OBJTYPE_TIMEDELTA ? "timedelta64[ns]"
                      : f->objtype == OBJTYPE_IPV4      ? "ipv4"
                                                        : NULL;
    return tag ? put(ls, entry, "tag", h5ark_value_str(tag)) : 0;
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
    if (dcpl < 0) return h5_fail(ls, "cannot read the storage properties of '%s'", path);
    int rc = -1;
    H5D_layout_t layout = H5Pget_layout(dcpl);
    if (layout < 0) {
        h5_fail(ls, "cannot read the storage layout of '%s'", path);
        goto out;
    }
    if (put(ls, entry, "storage", h5ark_value_str(layout_name(layout)))) goto out;
    if (layout == H5D_CHUNKED) {
        hsize_t chunk[H5S_MAX_RANK];
        int r = H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk);
        if (r > 0 && put(ls, entry, "chunks", dims_value(r, chunk))) goto out;
        H5Eclear2(H5E_DEFAULT);
    }
    int nf = H5Pget_nfilters(dcpl);
    h5ark_value *filters = h5ark_value_array();
    if (!filters) {
        oom(ls);
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
        if (push(ls, filters, known ? h5ark_value_str(known) : text_cstr(fallback))) {
            h5ark_value_destroy(&filters);
            goto out;
        }
    }
    H5Eclear2(H5E_DEFAULT);
    if (put(ls, entry, "filters", filters)) goto out;
    int next = H5Pget_external_count(dcpl);
    if (next > 0 && put(ls, entry, "external_storage", h5ark_value_uint((uint64_t)next))) goto out;
    H5Eclear2(H5E_DEFAULT);
    if (put(ls, entry, "storage_bytes", h5ark_value_uint(H5Dget_storage_size(did)))) goto out;
    rc = 0;
out:
    H5Pclose(dcpl);
    return rc;
}

/* A scalar string's bytes as stored: a fixed-length one without the NULs that pad it. */
static h5ark_value *scalar_string(hid_t did, hid_t type, uint64_t *bytes, bool *failed) {
    htri_t var = H5Tis_variable_str(type);
    hid_t mem = var < 0 ? -1 : H5Tcopy(type);
    h5ark_value *v = NULL;
    *failed = mem < 0;
    if (mem >= 0 && var) {
        char *p = NULL;
        *failed = source_read((source){did, true}, mem, &p) < 0;
        *bytes = p ? strlen(p) : 0;
        if (!*failed && *bytes <= STORAGE_SCALAR_MAX_BYTES) v = h5ark_value_bin(p ? p : "", *bytes);
        if (!*failed) source_reclaim((source){did, true}, mem, &p);
    } else if (mem >= 0) {
        size_t size = H5Tget_size(type);
        char *buf = size <= STORAGE_SCALAR_MAX_BYTES ? malloc(size ? size : 1) : NULL;
        *bytes = size;
        *failed = buf && source_read((source){did, true}, mem, buf) < 0;
        while (buf && !*failed && *bytes && buf[*bytes - 1] == '\0')
            --*bytes;
        if (buf && !*failed) v = h5ark_value_bin(buf, *bytes);
        free(buf);
    }
    if (*failed) h5_capture();
    if (mem >= 0) H5Tclose(mem);
    return v;
}

/* The value of a scalar dataset, for the gateway (LIST_VIEW): numbers and bools read as
 * an attribute's are, a string's bytes (or, past STORAGE_SCALAR_MAX_BYTES, their count);
 * other types get none. A value that cannot be read is `value_error`, not a failed
 * listing: the rest of the file is still shown. */
static int scalar_value(lister *ls, hid_t did, hid_t type, bool is_bool, h5ark_value *entry) {
    h5ark_value *v = NULL;
    uint64_t bytes = 0;
    bool failed = false, no_mem = false;
    if (H5Tget_class(type) == H5T_STRING) {
        v = scalar_string(did, type, &bytes, &failed);
        no_mem = !failed && !v && bytes <= STORAGE_SCALAR_MAX_BYTES;
        if (!failed && !v && !no_mem) return put(ls, entry, "value_bytes", h5ark_value_uint(bytes));
    } else {
        int got = read_attr_elems((source){did, true}, type, 1, &v, &no_mem);
        failed = got < 0;
        if (got == 0 && !no_mem) return 0;
    }
    if (failed) {
        h5ark_value_destroy(&v);
        if (!captured.set) h5_capture();
        captured.set = false;
        return put(ls, entry, "value_error", text_cstr(captured.why));
    }
    if (no_mem || !v) {
        h5ark_value_destroy(&v);
        return oom(ls);
    }
    int64_t i;
    if (is_bool && h5ark_value_to_int64(v, &i)) { /* an Arkouda bool: integers marked isBool */
        h5ark_value_destroy(&v);
        v = h5ark_value_bool(i != 0);
    }
    return put(ls, entry, "value", v);
}

static int describe_dataset(lister *ls, hid_t did, const char *path, const attr_facts *facts,
                            h5ark_value *entry) {
    hid_t type = H5Dget_type(did);
    if (type < 0) return h5_fail(ls, "cannot read the element type of '%s'", path);
    hid_t space = H5Dget_space(did);
    if (space < 0) {
        h5_capture();
        H5Tclose(type);
        return h5_fail(ls, "cannot read the shape of '%s'", path);
    }
    int rc = -1;
    char tname[32], detail[128];
    h5u_type_name(type, tname, sizeof tname);
    bool numeric = type_is_numeric(type);
    if (facts->is_bool && H5Tget_class(type) == H5T_INTEGER) snprintf(tname, sizeof tname, "bool");
    if (put(ls, entry, "dtype", h5ark_value_str(tname))) goto out;
    type_detail(type, detail, sizeof detail);
    if (detail[0] && put(ls, entry, "dtype_detail", h5ark_value_str(detail))) goto out;

    H5S_class_t sclass = H5Sget_simple_extent_type(space);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[H5S_MAX_RANK];
    if (sclass == H5S_NO_CLASS || rank < 0 || rank > H5S_MAX_RANK ||
        H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        h5_fail(ls, "cannot read the shape of '%s'", path);
        goto out;
    }
    if (sclass != H5S_NULL && put(ls, entry, "shape", dims_value(rank, dims))) goto out;
    if (ls->mode == LIST_VIEW && sclass == H5S_SCALAR &&
        scalar_value(ls, did, type, facts->is_bool, entry))
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
                if (put(ls, entry, li.extra->as.m.keys[i],
                        h5ark_value_copy(li.extra->as.m.vals[i]))) {
                    h5ark_value_destroy(&li.extra);
                    return -1;
                }
        h5ark_value_destroy(&li.extra);
        if (li.kind) {
            *whole = true;
            if (put(ls, entry, "kind", h5ark_value_str(li.kind))) return -1;
        }
        if (objtype[0] && put(ls, entry, "objtype", h5ark_value_str(objtype))) return -1;
        if (m.tag && put(ls, entry, "tag", h5ark_value_str(m.tag))) return -1;
        if (li.dtype[0] && put(ls, entry, "dtype", h5ark_value_str(li.dtype))) return -1;
        if (li.rows >= 0 && put(ls, entry, "shape", shape1(li.rows))) return -1;
        if (li.note && put(ls, entry, "note", text_cstr(li.note))) return -1;
        if (li.legacy && put(ls, entry, "legacy", h5ark_value_str(li.legacy))) return -1;
        /* inferred: an objtype no ObjType gave */
        return f.has_objtype || !objtype[0] ? 0
                                            : put(ls, entry, "inferred", h5ark_value_bool(true));
    }
    if (facts->has_objtype) return objtype_from_attr(ls, facts, entry);
    if (f.is_group) return 0;
    return put(ls, entry, "note",
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
        return h5_fail(ls, "cannot read the members of '%s'", path[0] ? path : "/");
    hsize_t idx = 0;
    *used = H5_INDEX_CRT_ORDER;
    if (!tracked || H5Literate(gid, H5_INDEX_CRT_ORDER, H5_ITER_NATIVE, &idx, link_cb, l) < 0) {
        if (l->oom) return oom(ls);
        H5Eclear2(H5E_DEFAULT);
        link_list_free(l);
        l->over = false;
        idx = 0;
        *used = H5_INDEX_NAME;
        if (H5Literate(gid, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, link_cb, l) < 0) {
            if (l->oom) return oom(ls);
            return h5_fail(ls, "cannot list the members of '%s'", path[0] ? path : "/");
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
    if (!e || h5ark_value_set(e, "name", text_cstr(name)) ||
        h5ark_value_set(e, "path", text_cstr(path)) ||
        h5ark_value_set(e, "kind", h5ark_value_str(kind))) {
        h5ark_value_destroy(&e);
        oom(ls);
    }
    return e;
}

/* Entries always carry every key of the contract, nil where nothing applies. */
static int finish_entry(lister *ls, h5ark_value *e) {
    static const char *keys[] = {"objtype", "dtype", "shape"};
    for (size_t i = 0; i < 3; i++)
        if (!h5ark_value_get(e, keys[i]) && put(ls, e, keys[i], h5ark_value_nil())) return -1;
    if (!h5ark_value_get(e, "attrs") && put(ls, e, "attrs", h5ark_value_map())) return -1;
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
    return push(ls, ls->entries, e);
}

/* A soft, external or user-defined link: described, never followed. */
static int list_link(lister *ls, hid_t gid, H5_index_t idx_type, const link_rec *r,
                     const char *path) {
    h5ark_value *e = new_entry(ls, r->name, path, "link");
    if (!e) return -1;
    const char *lt = r->type == H5L_TYPE_SOFT       ? "soft"
                     : r->type == H5L_TYPE_EXTERNAL ? "external"
                                                    : "user-defined";
    int rc = put(ls, e, "link_type", h5ark_value_str(lt));
    char *val = NULL;
    if (!rc && (r->type == H5L_TYPE_SOFT || r->type == H5L_TYPE_EXTERNAL) && r->val_size > 0 &&
        r->val_size <= LINK_VALUE_MAX && (val = malloc(r->val_size + 1))) {
        if (H5Lget_val_by_idx(gid, ".", idx_type, H5_ITER_NATIVE, r->pos, val, r->val_size,
                              H5P_DEFAULT) < 0) {
            H5Eclear2(H5E_DEFAULT);
            rc = put(ls, e, "note", h5ark_value_str("the link's value is unreadable"));
        } else if (r->type == H5L_TYPE_SOFT) {
            rc = put(ls, e, "target", text_value(val, strnlen(val, r->val_size)));
        } else {
            const char *file = NULL, *obj = NULL;
            unsigned flags;
            if (H5Lunpack_elink_val(val, r->val_size, &flags, &file, &obj) < 0 || !file || !obj) {
                H5Eclear2(H5E_DEFAULT);
                rc = put(ls, e, "note", h5ark_value_str("the external link is malformed"));
            } else {
                /* the unpacked strings lie inside val, which is r->val_size bytes */
                size_t fmax = r->val_size - (size_t)(file - val);
                size_t omax = r->val_size - (size_t)(obj - val);
                rc = put(ls, e, "file", text_value(file, strnlen(file, fmax)));
                if (!rc) rc = put(ls, e, "target", text_value(obj, strnlen(obj, omax)));
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
        if (put(ls, e, "link_type", h5ark_value_str("hard")) ||
            put(ls, e, "target", text_cstr(first))) {
            h5ark_value_destroy(&e);
            return -1;
        }
        return add_entry(ls, e);
    }
    hid_t oid = H5Oopen_by_addr(ls->fid, r->addr);
    if (oid < 0) return h5_fail(ls, "cannot open '%s'", path);
    int rc = -1;
    H5O_info_t oi;
    if (H5Oget_info2(oid, &oi, H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS) < 0) {
        h5_fail(ls, "cannot read the object header of '%s'", path);
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
    if (read_attrs(ls, oid, oi.type, path, oi.num_attrs, e, &facts)) goto fail_entry;
    if (oi.type == H5O_TYPE_DATASET) {
        if (describe_dataset(ls, oid, path, &facts, e)) goto fail_entry;
    } else if (oi.type == H5O_TYPE_GROUP && depth == 0 && !facts.has_objtype &&
               strcmp(r->name, LEGACY_METADATA_GROUP) == 0) {
        if (put(ls, e, "legacy",
                h5ark_value_str("Arkouda v1 file metadata (file_version, arkouda_version); "
                                "not a data object")))
            goto fail_entry;
    } else if (oi.type == H5O_TYPE_NAMED_DATATYPE) {
        char tname[32];
        h5u_type_name(oid, tname, sizeof tname);
        if (put(ls, e, "dtype", h5ark_value_str(tname))) goto fail_entry;
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
            rc = oom(ls);
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
    captured.set = false;
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
    if (read_attrs(ls, root, H5O_TYPE_GROUP, "/", oi->num_attrs, e, &facts)) {
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
        h5_fail(&ls, "cannot open the root group");
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
