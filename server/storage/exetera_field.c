/* A field of an ExeTera dataframe, written as ExeTera writes it (exetera_field.h,
 * exetera_write.c). */
#include "exetera_field.h"

#include "config.h"
#include "layout.h"
#include "progress.h"
#include "sysio.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what a field is ---------------------------------------------------------------- */

int exetera_spec_parse(const char *s, field_spec *out, h5ark_error *err) {
    *out = (field_spec){0};
    char shown[64];
    size_t k = 0;
    for (const char *p = s; *p && k < 40; p++)
        shown[k++] = (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f ? *p : '?';
    shown[k] = '\0';
    out->kind = strlen(s) < sizeof out->text ? exetera_parse_fieldtype(s, &out->dtype) : FT_BAD;
    if (out->kind == FT_BAD)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "fieldtype '%s%s' is not one h5ark writes (indexedstring, "
                          "fixedstring,<n>, numeric,<dtype>, categorical,<int dtype>, timestamp)",
                          shown, strlen(s) > 40 ? "..." : "");
    if (out->kind == FT_FIXED) out->strlen = strtoull(s + 12, NULL, 10);
    snprintf(out->text, sizeof out->text, "%s", s);
    return 0;
}

static bool is_datetime(const object *obj) {
    return obj->tag && strcmp(obj->tag, OBJECT_TAG_DATETIME) == 0;
}

/* The smallest signed integer type holding codes 0..n. */
static h5ark_dtype code_dtype(uint64_t n) {
    return n <= INT8_MAX ? H5ARK_INT8 : n <= INT16_MAX ? H5ARK_INT16 : H5ARK_INT32;
}

/* The field an object makes, by itself. */
int exetera_spec_of(const object *obj, const char *name, field_spec *out, h5ark_error *err) {
    if (obj->objtype == H5ARK_STRINGS) return exetera_spec_parse("indexedstring", out, err);
    if (obj->objtype == H5ARK_CATEGORICAL) {
        object *cats = object_component_get(obj, "categories");
        char t[48];
        snprintf(t, sizeof t, "categorical,%s",
                 h5ark_dtype_name(code_dtype(cats ? cats->size : 0)));
        return exetera_spec_parse(t, out, err);
    }
    if (obj->objtype == H5ARK_PDARRAY && obj->ndim == 1 && obj->dtype != H5ARK_BIGINT &&
        obj->dtype != H5ARK_STRING) {
        if (is_datetime(obj)) return exetera_spec_parse("timestamp", out, err);
        char t[48];
        snprintf(t, sizeof t, "numeric,%s", h5ark_dtype_name(obj->dtype));
        return exetera_spec_parse(t, out, err);
    }
    return h5ark_fail(err, H5ARK_TYPE_ERROR,
                      "'%s' cannot be an ExeTera field: only a 1-D pdarray, strings or a "
                      "categorical can",
                      name);
}

/* Whether obj can be written as a field of spec; type_error saying why not. */
int exetera_spec_fits(const object *obj, const char *name, const field_spec *s, h5ark_error *err) {
    bool ok = false;
    switch (s->kind) {
    case FT_INDEXED:
    case FT_FIXED: ok = obj->objtype == H5ARK_STRINGS; break;
    case FT_CATEGORICAL: ok = obj->objtype == H5ARK_CATEGORICAL; break;
    case FT_NUMERIC:
        ok = obj->objtype == H5ARK_PDARRAY && obj->ndim == 1 && obj->dtype == s->dtype;
        break;
    case FT_TIMESTAMP:
        ok = obj->objtype == H5ARK_PDARRAY && obj->ndim == 1 &&
             (obj->dtype == H5ARK_FLOAT64 || (obj->dtype == H5ARK_INT64 && is_datetime(obj)));
        break;
    default: break;
    }
    if (!ok)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "'%s' (%s %s) cannot be written as an ExeTera field of fieldtype '%s'%s",
                          name, h5ark_objtype_name(obj->objtype), h5ark_dtype_name(obj->dtype),
                          s->text,
                          s->kind == FT_TIMESTAMP
                              ? " (a timestamp is float64 seconds or a datetime64[ns] pdarray)"
                              : "");
    return 0;
}

/* ---- HDF5 pieces ------------------------------------------------------------------- */

/* h5py's chunk guess for a 1-D dataset of n elements (0: unlimited, guessed as 1024). */
static hsize_t guess_chunk(uint64_t n, size_t typesize) {
    double c = n ? (double)n : 1024.0;
    double target = 16384.0 * pow(2.0, log10(c * (double)typesize / 1048576.0));
    if (target > 1048576.0) target = 1048576.0;
    if (target < 8192.0) target = 8192.0;
    for (;;) {
        double bytes = c * (double)typesize;
        if ((bytes < target || fabs(bytes - target) / target < 0.5) && bytes < 1048576.0) break;
        if (c <= 1.0) break;
        c = ceil(c / 2.0);
    }
    return (hsize_t)c;
}

/* h5py's bool: an enum over int8. */
static hid_t bool_type(void) {
    hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
    int8_t f = 0, v = 1;
    if (t >= 0 && (H5Tenum_insert(t, "FALSE", &f) < 0 || H5Tenum_insert(t, "TRUE", &v) < 0)) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

static hid_t fixed_type(uint64_t n) {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, n) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0 ||
                   H5Tset_cset(t, H5T_CSET_ASCII) < 0)) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

static hid_t vlen_str_type(void) {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

static int str_attr(hid_t obj, const char *name, const char *v, h5ark_error *err) {
    hid_t t = vlen_str_type(), sp = H5Screate(H5S_SCALAR);
    hid_t a = t >= 0 && sp >= 0 ? H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int rc = a >= 0 && H5Awrite(a, t, &v) >= 0
                 ? 0
                 : h5u_fail(err, H5ARK_IO_ERROR, "cannot write the attribute '%s'", name);
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    return rc;
}

static int mark_completed(hid_t d, h5ark_error *err) {
    if (H5Aexists(d, ATTR_COMPLETED) > 0) H5Adelete(d, ATTR_COMPLETED);
    H5Eclear2(H5E_DEFAULT);
    hid_t t = bool_type(), sp = H5Screate(H5S_SCALAR);
    int8_t yes = 1;
    hid_t a =
        t >= 0 && sp >= 0 ? H5Acreate2(d, ATTR_COMPLETED, t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int rc = a >= 0 && H5Awrite(a, t, &yes) >= 0
                 ? 0
                 : h5u_fail(err, H5ARK_IO_ERROR, "cannot mark a field completed");
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    return rc;
}

/* An extendable dataset `name` of field g: opened, or created empty (chunked as h5py does
 * for a dataset made at length `n0`, 0 for one ExeTera makes empty and extends). */
static hid_t open_or_create(hid_t g, const char *name, hid_t ftype, uint64_t n0, bool *created,
                            h5ark_error *err) {
    *created = false;
    if (h5u_link_exists(g, name) > 0) {
        hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
        if (d < 0)
            return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot open the dataset '%s'", name), -1;
        hid_t sp = H5Dget_space(d);
        hsize_t dims[1], max[1];
        bool grows = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
                     H5Sget_simple_extent_dims(sp, dims, max) == 1 && max[0] == H5S_UNLIMITED;
        if (sp >= 0) H5Sclose(sp);
        if (!grows) {
            H5Dclose(d);
            H5Eclear2(H5E_DEFAULT);
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "the field's dataset '%s' cannot grow: it is not 1-D with unlimited "
                              "maxshape, as ExeTera makes them",
                              name),
                   -1;
        }
        return d;
    }
    H5Eclear2(H5E_DEFAULT);
    hsize_t zero = 0, unlimited = H5S_UNLIMITED;
    hsize_t chunk = guess_chunk(n0, H5Tis_variable_str(ftype) > 0 ? 8 : H5Tget_size(ftype));
    hid_t sp = H5Screate_simple(1, &zero, &unlimited);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = H5I_INVALID_HID;
    if (sp >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0)
        d = H5Dcreate2(g, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
    if (d < 0) return h5u_fail(err, H5ARK_IO_ERROR, "cannot create the dataset '%s'", name), -1;
    *created = true;
    return d;
}

/* Extend d by n elements and write buf (in memory type mtype) at its old end. */
static int append_rows(hid_t d, hid_t mtype, const void *buf, uint64_t n, h5ark_error *err) {
    if (n == 0) return 0;
    int64_t len = h5u_dataset_len(d);
    if (len < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "a field's dataset is not 1-D");
    hsize_t size = (hsize_t)len + n, start = (hsize_t)len, count = n;
    int rc = -1;
    hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
    if (H5Dset_extent(d, &size) >= 0 && (fs = H5Dget_space(d)) >= 0 &&
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0 &&
        (ms = H5Screate_simple(1, &count, NULL)) >= 0 &&
        H5Dwrite(d, mtype, ms, fs, H5P_DEFAULT, buf) >= 0)
        rc = 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc ? h5u_fail(err, H5ARK_IO_ERROR, "cannot write a field's rows") : 0;
}

/* ---- rows of an object, shard by shard ----------------------------------------------- */

/* A pdarray's elements (numeric, or timestamps made seconds) appended to d. */
static int put_numeric(hid_t d, const object *obj, const field_spec *s, h5ark_error *err) {
    const darray *a = obj->values;
    bool to_seconds = s->kind == FT_TIMESTAMP && obj->dtype == H5ARK_INT64;
    hid_t mtype = s->kind == FT_NUMERIC && obj->dtype == H5ARK_BOOLEAN ? bool_type()
                  : to_seconds                                         ? H5T_NATIVE_DOUBLE
                                                                       : h5u_mem_type(obj->dtype);
    int rc = 0;
    for (int b = 0; b < a->nshards && rc == 0; b++) {
        const shard *sh = &a->shards[b];
        if (!to_seconds) {
            rc = append_rows(d, mtype, sh->data, sh->count, err);
            progress_add(progress_here(), sh->count);
            continue;
        }
        double *buf = sysio.malloc(sh->count ? sh->count * sizeof *buf : 1);
        if (!buf) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
        const int64_t *ns = sh->data;
        for (uint64_t i = 0; i < sh->count; i++)
            buf[i] = (double)(ns[i] / 1000000000) + (double)(ns[i] % 1000000000) / 1e9;
        rc = append_rows(d, mtype, buf, sh->count, err);
        progress_add(progress_here(), sh->count);
        free(buf);
    }
    if (mtype != h5u_mem_type(obj->dtype) && mtype != H5T_NATIVE_DOUBLE) H5Tclose(mtype);
    return rc;
}

/* String i of a strings object's shard b: its bytes (without the NUL) and length. */
static const char *string_at(const object *obj, int b, uint64_t i, uint64_t *len) {
    const shard *seg = &obj->segments->shards[b], *val = &obj->values->shards[b];
    const int64_t *o = seg->data;
    uint64_t end = i + 1 < seg->count ? (uint64_t)o[i + 1] : val->start + val->count;
    *len = end - (uint64_t)o[i] - 1;
    return (const char *)val->data + ((uint64_t)o[i] - val->start);
}

/* Strings as indexed strings: offsets continue from `last` (the index's last entry; an
 * empty index gets its leading 0 first). */
static int put_indexed(hid_t index, hid_t values, const object *obj, h5ark_error *err) {
    int64_t len = h5u_dataset_len(index);
    if (len < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "a field's index is not 1-D");
    int64_t last = 0;
    if (len > 0) {
        hsize_t start = (hsize_t)len - 1, one = 1;
        hid_t fs = H5Dget_space(index), ms = H5Screate_simple(1, &one, NULL);
        int ok = fs >= 0 && ms >= 0 &&
                 H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &one, NULL) >= 0 &&
                 H5Dread(index, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &last) >= 0;
        if (ms >= 0) H5Sclose(ms);
        if (fs >= 0) H5Sclose(fs);
        if (!ok) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read a field's index");
    } else if (obj->size > 0) {
        if (append_rows(index, H5T_NATIVE_INT64, &last, 1, err)) return -1;
    }
    int rc = 0;
    for (int b = 0; b < obj->segments->nshards && rc == 0; b++) {
        uint64_t n = obj->segments->shards[b].count, bytes = obj->values->shards[b].count;
        if (n == 0) continue;
        int64_t *off = sysio.malloc(n * sizeof *off);
        char *buf = sysio.malloc(bytes ? bytes : 1);
        if (!off || !buf) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        } else {
            uint64_t used = 0;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t l;
                const char *p = string_at(obj, b, i, &l);
                memcpy(buf + used, p, l);
                used += l;
                off[i] = last + (int64_t)used;
            }
            last += (int64_t)used;
            rc = append_rows(values, H5T_NATIVE_UINT8, buf, used, err) ||
                 append_rows(index, H5T_NATIVE_INT64, off, n, err);
            progress_add(progress_here(), n);
        }
        free(off);
        free(buf);
    }
    return rc;
}

/* Strings as fixed strings, NUL-padded, a block of rows at a time (NULs inside a string are
 * kept; a string's own trailing NULs read back as padding, the format's rule; each takes
 * `strlen` bytes however short it is, so a shard's worth could be far larger than it). */
static int put_fixed(hid_t d, const object *obj, const char *name, const field_spec *s,
                     h5ark_error *err) {
    hid_t t = fixed_type(s->strlen);
    int rc = t < 0 ? h5u_fail(err, H5ARK_IO_ERROR, "cannot make a string type") : 0;
    uint64_t block = (UINT64_C(16) << 20) / s->strlen;
    if (block == 0) block = 1;
    char *buf = rc == 0 ? sysio.malloc(block * s->strlen) : NULL;
    if (rc == 0 && !buf) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (int b = 0; b < obj->segments->nshards && rc == 0; b++) {
        uint64_t n = obj->segments->shards[b].count;
        for (uint64_t lo = 0; lo < n && rc == 0; lo += block) {
            uint64_t m = n - lo < block ? n - lo : block;
            memset(buf, 0, m * s->strlen);
            for (uint64_t i = 0; i < m && rc == 0; i++) {
                uint64_t l;
                const char *p = string_at(obj, b, lo + i, &l);
                if (l > s->strlen)
                    rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                                    "'%s': string %llu is %llu bytes, longer than fieldtype "
                                    "'%s' holds",
                                    name,
                                    (unsigned long long)(obj->segments->shards[b].start + lo + i),
                                    (unsigned long long)l, s->text);
                else
                    memcpy(buf + i * s->strlen, p, l);
            }
            if (rc == 0) rc = append_rows(d, t, buf, m, err);
            progress_add(progress_here(), m);
        }
    }
    free(buf);
    if (t >= 0) H5Tclose(t);
    return rc;
}

/* ---- categorical keys ----------------------------------------------------------------- */

typedef struct {
    char **names;
    int64_t *values;
    size_t n;
} key_list;

static void keys_free(key_list *k) {
    h5u_free_strs(k->names, k->n);
    free(k->values);
    *k = (key_list){0};
}

/* The category strings of a categorical, in order. */
static int categories_of(const object *cat, char ***out, size_t *n, h5ark_error *err) {
    const object *c = object_component_get(cat, "categories");
    *out = NULL;
    *n = 0;
    if (!c || c->objtype != H5ARK_STRINGS)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "a categorical without categories");
    char **v = calloc(c->size ? c->size : 1, sizeof *v);
    if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t k = 0;
    for (int b = 0; b < c->segments->nshards; b++)
        for (uint64_t i = 0; i < c->segments->shards[b].count; i++, k++) {
            uint64_t l;
            const char *p = string_at(c, b, i, &l);
            if (!(v[k] = strndup(p, l))) {
                h5u_free_strs(v, k);
                return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            }
        }
    *out = v;
    *n = k;
    return 0;
}

static int read_keys(hid_t g, key_list *k, h5ark_error *err) {
    *k = (key_list){0};
    hid_t dn = h5u_open_child(g, "key_names", H5O_TYPE_DATASET);
    hid_t dv = h5u_open_child(g, "key_values", H5O_TYPE_DATASET);
    int64_t nn = dn >= 0 ? h5u_dataset_len(dn) : -1, nv = dv >= 0 ? h5u_dataset_len(dv) : -1;
    int rc = 0;
    if (nn < 0 || nv != nn || nn > 1000000) {
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                        "the categorical field's key_names and key_values are missing or "
                        "differ in length");
    } else {
        hid_t t = vlen_str_type();
        k->names = calloc((size_t)nn + 1, sizeof *k->names);
        k->values = calloc((size_t)nn + 1, sizeof *k->values);
        if (t < 0 || !k->names || !k->values)
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        else if (nn > 0 &&
                 (H5Dread(dn, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, k->names) < 0 ||
                  H5Dread(dv, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, k->values) < 0))
            rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the categorical field's keys");
        else
            k->n = (size_t)nn;
        for (size_t i = 0; rc == 0 && i < k->n; i++)
            if (!k->names[i]) rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "a key name is null");
        if (t >= 0) H5Tclose(t);
        if (rc) {
            /* names read by HDF5 are the library's; move them into our own strings */
            k->n = 0;
        } else {
            for (size_t i = 0; i < k->n; i++) {
                char *own = strdup(k->names[i]);
                H5free_memory(k->names[i]);
                k->names[i] = own;
                if (!own) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            }
        }
    }
    if (dn >= 0) H5Dclose(dn);
    if (dv >= 0) H5Dclose(dv);
    H5Eclear2(H5E_DEFAULT);
    if (rc) keys_free(k);
    return rc;
}

static int write_keys(hid_t g, const key_list *k, h5ark_error *err) {
    hid_t tn = vlen_str_type();
    bool cn, cv;
    hid_t dn = tn >= 0 ? open_or_create(g, "key_names", tn, k->n, &cn, err) : -1;
    hid_t dv = dn >= 0 ? open_or_create(g, "key_values", H5T_STD_I8LE, k->n, &cv, err) : -1;
    int8_t *v8 = calloc(k->n ? k->n : 1, 1);
    int rc = dv < 0 ? -1 : !v8 ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory") : 0;
    for (size_t i = 0; rc == 0 && i < k->n; i++)
        v8[i] = (int8_t)k->values[i];
    if (rc == 0)
        rc = append_rows(dn, tn, k->names, k->n, err) ||
             append_rows(dv, H5T_NATIVE_INT8, v8, k->n, err);
    free(v8);
    if (dv >= 0 && h5u_close_written(dv) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write the field's keys");
    if (dn >= 0 && h5u_close_written(dn) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write the field's keys");
    if (tn >= 0) H5Tclose(tn);
    return rc;
}

/* A categorical's codes as the field's values: each category maps to the key of its name,
 * a category no key has yet becoming a new key (one past the largest), and the NA category
 * to a value no key has (-1, or below the smallest key), which reads back as NA. */
static int put_categorical(hid_t g, hid_t d, const object *obj, const char *name,
                           const field_spec *s, bool new_field, h5ark_error *err) {
    char **cats = NULL;
    size_t ncats = 0, old_keys = 0;
    key_list keys = {0};
    int64_t *map = NULL;
    int rc = categories_of(obj, &cats, &ncats, err);
    if (rc == 0 && !new_field) rc = read_keys(g, &keys, err);
    old_keys = keys.n;
    if (rc == 0) {
        char **names = realloc(keys.names, (keys.n + ncats + 1) * sizeof *names);
        if (names) keys.names = names;
        int64_t *values =
            names ? realloc(keys.values, (keys.n + ncats + 1) * sizeof *values) : NULL;
        if (values) keys.values = values;
        map = calloc(ncats + 1, sizeof *map);
        if (!names || !values || !map) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    int64_t na = -1, top = -1;
    for (size_t i = 0; rc == 0 && i < keys.n; i++) {
        if (keys.values[i] <= na) na = keys.values[i] - 1;
        if (keys.values[i] > top) top = keys.values[i];
    }
    for (size_t i = 0; rc == 0 && i < ncats; i++) {
        map[i] = na;
        if (obj->na_value && strcmp(cats[i], obj->na_value) == 0) continue;
        size_t k = 0;
        while (k < keys.n && strcmp(keys.names[k], cats[i]) != 0)
            k++;
        if (k == keys.n) {
            if (top >= INT8_MAX) {
                rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                                "'%s': more than %d categories; ExeTera's key_values are int8",
                                name, INT8_MAX + 1);
                break;
            }
            if (!(keys.names[k] = strdup(cats[i]))) {
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
                break;
            }
            keys.values[k] = ++top;
            keys.n++;
        }
        map[i] = keys.values[k];
    }
    int64_t lo = s->dtype == H5ARK_INT8    ? INT8_MIN
                 : s->dtype == H5ARK_INT16 ? INT16_MIN
                 : s->dtype == H5ARK_INT32 ? INT32_MIN
                                           : INT64_MIN;
    int64_t hi = s->dtype == H5ARK_INT8    ? INT8_MAX
                 : s->dtype == H5ARK_INT16 ? INT16_MAX
                 : s->dtype == H5ARK_INT32 ? INT32_MAX
                                           : INT64_MAX;
    if (rc == 0 && (na < lo || top > hi))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s': its codes do not fit the fieldtype '%s'",
                        name, s->text);
    if (rc == 0 && (new_field || keys.n > old_keys)) {
        key_list added = {keys.names + old_keys, keys.values + old_keys, keys.n - old_keys};
        rc = write_keys(g, &added, err);
    }
    const object *codes = object_component_get(obj, "codes");
    if (rc == 0 && (!codes || codes->dtype != H5ARK_INT64))
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' has no int64 codes", name);
    for (int b = 0; rc == 0 && b < codes->values->nshards; b++) {
        const shard *sh = &codes->values->shards[b];
        if (sh->count == 0) continue;
        int64_t *out = sysio.malloc(sh->count * sizeof *out);
        if (!out) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
        const int64_t *c = sh->data;
        for (uint64_t i = 0; i < sh->count; i++)
            out[i] = c[i] >= 0 && (uint64_t)c[i] < ncats ? map[c[i]] : na;
        rc = append_rows(d, H5T_NATIVE_INT64, out, sh->count, err);
        progress_add(progress_here(), sh->count);
        free(out);
    }
    free(map);
    keys_free(&keys);
    h5u_free_strs(cats, ncats);
    return rc;
}

/* ---- one field ----------------------------------------------------------------------- */

/* The data datasets of a field of kind k, in order ("index" and "values" for indexed
 * strings). */
static size_t data_names(exetera_fieldtype k, const char *names[2]) {
    if (k == FT_INDEXED) {
        names[0] = "index";
        names[1] = "values";
        return 2;
    }
    names[0] = "values";
    return 1;
}

/* Set (done) or clear the `completed` mark of the field's data datasets; set only on those
 * that hold data, as ExeTera does. */
int exetera_set_completed(hid_t g, exetera_fieldtype k, bool done, h5ark_error *err) {
    const char *names[2];
    size_t n = data_names(k, names);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        hid_t d = h5u_open_child(g, names[i], H5O_TYPE_DATASET);
        if (d < 0) {
            H5Eclear2(H5E_DEFAULT);
            continue;
        }
        if (done && h5u_dataset_len(d) > 0)
            rc = mark_completed(d, err);
        else if (!done && H5Aexists(d, ATTR_COMPLETED) > 0 && H5Adelete(d, ATTR_COMPLETED) < 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot clear a field's completed mark");
        H5Eclear2(H5E_DEFAULT);
        H5Dclose(d);
    }
    return rc;
}

static int write_field_attrs(hid_t g, const field_spec *s, h5ark_error *err) {
    int rc = h5u_write_int_attr(g, "chunksize", EXETERA_CHUNKSIZE, err) ||
             str_attr(g, ATTR_FIELDTYPE, s->text, err) ||
             h5u_write_int_attr(g, "timestamp", EXETERA_CHUNKSIZE, err);
    if (rc == 0 && (s->kind == FT_NUMERIC || s->kind == FT_CATEGORICAL))
        rc = str_attr(g, "nformat", h5ark_dtype_name(s->dtype), err);
    if (rc == 0 && s->kind == FT_FIXED)
        rc = h5u_write_int_attr(g, "strlen", (int64_t)s->strlen, err);
    return rc;
}

/* The file type of a field's `values`. */
static hid_t values_type(const field_spec *s) {
    switch (s->kind) {
    case FT_INDEXED: return H5Tcopy(H5T_STD_U8LE);
    case FT_FIXED: return fixed_type(s->strlen);
    case FT_TIMESTAMP: return H5Tcopy(H5T_IEEE_F64LE);
    default: return s->dtype == H5ARK_BOOLEAN ? bool_type() : H5Tcopy(h5u_file_type(s->dtype));
    }
}

/* The rows a field holds now. */
int64_t exetera_field_rows(hid_t g, exetera_fieldtype k) {
    hid_t d = h5u_open_child(g, k == FT_INDEXED ? "index" : "values", H5O_TYPE_DATASET);
    int64_t n = d >= 0 ? h5u_dataset_len(d) : 0;
    if (d >= 0) H5Dclose(d);
    H5Eclear2(H5E_DEFAULT);
    return k == FT_INDEXED && n > 0 ? n - 1 : n;
}

/* The field `name` of the dataframe group df: its spec (from the file) when it exists.
 * 1 found, 0 absent, -1 error (not a field). */
int exetera_existing_field(hid_t df, const char *shown, const char *name, field_spec *s,
                           h5ark_error *err) {
    int there = h5u_link_exists(df, name);
    H5Eclear2(H5E_DEFAULT);
    if (there <= 0) return 0;
    hid_t g = h5u_open_child(df, name, H5O_TYPE_GROUP);
    char ft[64];
    int r = g >= 0 ? exetera_read_str_attr(g, ATTR_FIELDTYPE, ft, sizeof ft) : -1;
    if (g >= 0) H5Gclose(g);
    H5Eclear2(H5E_DEFAULT);
    if (r != 1)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s/%s' exists and is not an ExeTera field",
                          shown, name);
    if (exetera_spec_parse(ft, s, err)) {
        err->code = H5ARK_TYPE_ERROR;
        return h5ark_fail_context(err, "the field '%s/%s' in the file", shown, name);
    }
    return 1;
}

/* Write obj's rows into field `name` of df: a new field (new_field), or appended to an
 * existing one of spec s. complete: mark it completed after, else clear the mark. */
int exetera_write_field(hid_t df, const char *name, const object *obj, const field_spec *s,
                        bool new_field, bool complete, int64_t *rows, h5ark_error *err) {
    hid_t g = new_field ? H5Gcreate2(df, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                        : h5u_open_child(df, name, H5O_TYPE_GROUP);
    if (g < 0)
        return h5u_fail(err, H5ARK_IO_ERROR, "cannot %s the field", new_field ? "create" : "open");
    int rc = new_field ? write_field_attrs(g, s, err) : 0;
    hid_t vt = rc == 0 ? values_type(s) : H5I_INVALID_HID;
    hid_t d = H5I_INVALID_HID, index = H5I_INVALID_HID;
    bool created;
    if (rc == 0 && vt < 0) rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot make the field's type");
    if (rc == 0 && s->kind == FT_INDEXED) {
        index = open_or_create(g, "index", H5T_STD_I64LE, 0, &created, err);
        if (index < 0) rc = -1;
    }
    if (rc == 0 && (d = open_or_create(g, "values", vt, 0, &created, err)) < 0) rc = -1;
    if (rc == 0 && !new_field) rc = exetera_set_completed(g, s->kind, false, err);
    if (rc == 0) {
        switch (s->kind) {
        case FT_INDEXED: rc = put_indexed(index, d, obj, err); break;
        case FT_FIXED: rc = put_fixed(d, obj, name, s, err); break;
        case FT_CATEGORICAL: rc = put_categorical(g, d, obj, name, s, new_field, err); break;
        default: rc = put_numeric(d, obj, s, err); break;
        }
    }
    /* a dataset's chunks reach the file when it closes */
    if (d >= 0 && h5u_close_written(d) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write the field's values");
    if (index >= 0 && h5u_close_written(index) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write the field's index");
    if (vt >= 0) H5Tclose(vt);
    if (rc == 0 && complete) rc = exetera_set_completed(g, s->kind, true, err);
    if (rc == 0 && rows) *rows = exetera_field_rows(g, s->kind);
    if (h5u_close_written(g) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write the field");
    return rc;
}
