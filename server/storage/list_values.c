/* What an lshdf entry shows of types, attributes and scalar values (list_values.h). */
#include "list_values.h"

#include "layout.h"
#include "schema.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- HDF5 error stack -> message ------------------------------------------------------ */

/* The reason for a failure, kept when cleanup calls (which clear the stack on success) must
 * run between the failing call and the report. */
static _Thread_local struct {
    bool set;
    h5ark_code code;
    char why[600];
} captured;

void lister_capture_clear(void) {
    captured.set = false;
}

void lister_capture(void) {
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
h5ark_value *lister_text(const char *s, size_t n) {
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

h5ark_value *lister_cstr(const char *s) {
    return lister_text(s, strlen(s));
}

int lister_oom(lister *ls) {
    return h5ark_fail(ls->err, H5ARK_RESOURCE_LIMIT, "out of memory listing '%s'", ls->file);
}

/* schema_error naming the file and what was being done, with HDF5's reason. */
int lister_fail(lister *ls, const char *fmt, ...) {
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

/* Map helpers that turn an out-of-memory failure into the lister's error. */
int lister_put(lister *ls, h5ark_value *map, const char *key, h5ark_value *val) {
    return h5ark_value_set(map, key, val) ? lister_oom(ls) : 0;
}

int lister_push(lister *ls, h5ark_value *array, h5ark_value *item) {
    return h5ark_value_push(array, item) ? lister_oom(ls) : 0;
}

/* ---- types ----------------------------------------------------------------------------- */

/* The name of the type a sequence or array type is of ("unknown" where unreadable). */
static void base_type_name(hid_t type, char *buf, size_t len) {
    hid_t base = H5Tget_super(type);
    snprintf(buf, len, "unknown");
    if (base >= 0) {
        h5u_type_name(base, buf, len);
        H5Tclose(base);
    }
}

/* A sentence on types the dtype name says too little about. */
void list_type_detail(hid_t type, char *buf, size_t len) {
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
        char b[32];
        base_type_name(type, b, sizeof b);
        snprintf(buf, len, "variable-length sequence of %s", b);
        break;
    }
    case H5T_ARRAY: {
        char b[32];
        base_type_name(type, b, sizeof b);
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

bool list_type_is_numeric(hid_t type) {
    H5T_class_t c = H5Tget_class(type);
    return c == H5T_INTEGER || c == H5T_FLOAT || h5u_is_bool_enum(type);
}

/* ---- attributes ------------------------------------------------------------------------ */

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
    return lister_text(p, n);
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
        if (r < 0) lister_capture();
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
                lister_capture();
                H5Tclose(mem);
                return -1;
            }
            for (size_t i = 0; i < n; i++)
                vals[i] = ptrs[i] ? lister_text(ptrs[i], strnlen(ptrs[i], TEXT_MAX + 1))
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
                lister_capture();
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
    if (aid < 0) return lister_fail(ls, "cannot open attribute '%s' of '%s'", aname, objpath);
    hid_t ftype = H5Aget_type(aid);
    hid_t space = H5Aget_space(aid);
    int rc = -1;
    if (ftype < 0 || space < 0) {
        lister_fail(ls, "cannot read the type of attribute '%s' of '%s'", aname, objpath);
        goto done;
    }
    H5S_class_t sclass = H5Sget_simple_extent_type(space);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[H5S_MAX_RANK];
    if (sclass == H5S_NO_CLASS || rank < 0 || rank > H5S_MAX_RANK ||
        H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        lister_fail(ls, "cannot read the shape of attribute '%s' of '%s'", aname, objpath);
        goto done;
    }
    if (sclass == H5S_NULL) {
        *out = h5ark_value_nil();
        rc = *out ? 0 : lister_oom(ls);
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
        rc = *out ? 0 : lister_oom(ls);
        goto done;
    }
    h5ark_value *vals[ATTR_MAX_ELEMS] = {0};
    bool no_mem;
    int got = read_attr_elems((source){aid, false}, ftype, (size_t)n, vals, &no_mem);
    if (got < 0) {
        lister_fail(ls, "cannot read attribute '%s' of '%s'", aname, objpath);
        goto done;
    }
    if (no_mem) {
        for (hsize_t i = 0; i < n; i++)
            h5ark_value_destroy(&vals[i]);
        lister_oom(ls);
        goto done;
    }
    if (got == 0) {
        char detail[128];
        list_type_detail(ftype, detail, sizeof detail);
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
        lister_oom(ls);
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

/* attrs map of an object, in creation order when tracked, else by name. */
int list_read_attrs(lister *ls, hid_t obj, H5O_type_t type, const char *path, hsize_t nattrs,
                    h5ark_value *entry, attr_facts *facts) {
    h5ark_value *attrs = h5ark_value_map();
    if (!attrs) return lister_oom(ls);
    name_list names = {0};
    if (nattrs > 0) {
        /* Native order, sorted here: iterating in any other order makes HDF5 1.10 build a
         * table whose error path frees uninitialised pointers on a damaged file. */
        hsize_t idx = 0;
        bool tracked = attr_order_tracked(obj, type);
        if (H5Aexists(obj, PROBE_NAME) < 0) {
            h5ark_value_destroy(&attrs);
            return lister_fail(ls, "cannot read the attributes of '%s'", path);
        }
        if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, attr_name_cb, &names) < 0 &&
            !names.oom) {
            name_list_free(&names);
            h5ark_value_destroy(&attrs);
            return lister_fail(ls, "cannot list the attributes of '%s'", path);
        }
        if (names.oom) {
            name_list_free(&names);
            h5ark_value_destroy(&attrs);
            return lister_oom(ls);
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
            h5ark_value *key = lister_cstr(names.items[i].name);
            rc = key ? lister_put(ls, attrs, key->as.s.ptr, v)
                     : (h5ark_value_destroy(&v), lister_oom(ls));
            h5ark_value_destroy(&key);
        }
    }
    name_list_free(&names);
    if (rc == 0 && nattrs > ATTR_MAX_COUNT)
        rc = lister_put(ls, entry, "attrs_omitted", h5ark_value_uint(nattrs - ATTR_MAX_COUNT));
    if (rc) {
        h5ark_value_destroy(&attrs);
        return -1;
    }
    return lister_put(ls, entry, "attrs", attrs);
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
    if (*failed) lister_capture();
    if (mem >= 0) H5Tclose(mem);
    return v;
}

/* The value of a scalar dataset, for the gateway (LIST_VIEW): numbers and bools read as
 * an attribute's are, a string's bytes (or, past STORAGE_SCALAR_MAX_BYTES, their count);
 * other types get none. A value that cannot be read is `value_error`, not a failed
 * listing: the rest of the file is still shown. */
int list_scalar_value(lister *ls, hid_t did, hid_t type, bool is_bool, h5ark_value *entry) {
    h5ark_value *v = NULL;
    uint64_t bytes = 0;
    bool failed = false, no_mem = false;
    if (H5Tget_class(type) == H5T_STRING) {
        v = scalar_string(did, type, &bytes, &failed);
        no_mem = !failed && !v && bytes <= STORAGE_SCALAR_MAX_BYTES;
        if (!failed && !v && !no_mem)
            return lister_put(ls, entry, "value_bytes", h5ark_value_uint(bytes));
    } else {
        int got = read_attr_elems((source){did, true}, type, 1, &v, &no_mem);
        failed = got < 0;
        if (got == 0 && !no_mem) return 0;
    }
    if (failed) {
        h5ark_value_destroy(&v);
        if (!captured.set) lister_capture();
        captured.set = false;
        return lister_put(ls, entry, "value_error", lister_cstr(captured.why));
    }
    if (no_mem || !v) {
        h5ark_value_destroy(&v);
        return lister_oom(ls);
    }
    int64_t i;
    if (is_bool && h5ark_value_to_int64(v, &i)) { /* an Arkouda bool: integers marked isBool */
        h5ark_value_destroy(&v);
        v = h5ark_value_bool(i != 0);
    }
    return lister_put(ls, entry, "value", v);
}
