/* Types, shapes and values as the HSDS API writes them (HSDS_API.md §5, §8.2). */
#include "storage/h5obj_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TYPE_MAX_DEPTH 16 /* nesting of compounds and arrays */

static int set(h5ark_value *m, const char *key, h5ark_value *v) {
    return v ? h5ark_value_set(m, key, v) : -1;
}

static h5ark_value *number_type_json(hid_t type, H5T_class_t cls) {
    char base[32];
    size_t bits = H5Tget_size(type) * 8;
    const char *order = H5Tget_order(type) == H5T_ORDER_BE ? "BE" : "LE";
    if (cls == H5T_FLOAT)
        snprintf(base, sizeof base, "H5T_IEEE_F%zu%s", bits, order);
    else if (cls == H5T_BITFIELD)
        snprintf(base, sizeof base, "H5T_STD_B%zu%s", bits, order);
    else
        snprintf(base, sizeof base, "H5T_STD_%c%zu%s",
                 H5Tget_sign(type) == H5T_SGN_NONE ? 'U' : 'I', bits, order);
    h5ark_value *m = h5ark_value_map();
    if (m && (set(m, "class",
                  h5ark_value_str(cls == H5T_FLOAT      ? "H5T_FLOAT"
                                  : cls == H5T_BITFIELD ? "H5T_BITFIELD"
                                                        : "H5T_INTEGER")) ||
              set(m, "base", h5ark_value_str(base))))
        h5ark_value_destroy(&m);
    return m;
}

/* An integer of `size` bytes at p in the byte order given, as int64 (or uint64). */
static h5ark_value *int_value(const unsigned char *p, size_t size, bool is_signed, bool be) {
    uint64_t u = 0;
    for (size_t i = 0; i < size && i < 8; i++)
        u |= (uint64_t)p[be ? size - 1 - i : i] << (8 * i);
    if (is_signed && size < 8 && (u >> (8 * size - 1)) & 1) u |= ~UINT64_C(0) << (8 * size);
    return is_signed ? h5ark_value_int((int64_t)u) : h5ark_value_uint(u);
}

static h5ark_value *type_json(hid_t type, int depth, h5ark_error *err);

static h5ark_value *enum_json(hid_t type, int depth, h5ark_error *err) {
    hid_t super = H5Tget_super(type);
    h5ark_value *m = h5ark_value_map(), *mapping = h5ark_value_map();
    h5ark_value *base = super >= 0 ? type_json(super, depth + 1, err) : NULL;
    int n = H5Tget_nmembers(type);
    size_t size = super >= 0 ? H5Tget_size(super) : 0;
    bool is_signed = super >= 0 && H5Tget_sign(super) != H5T_SGN_NONE;
    bool be = super >= 0 && H5Tget_order(super) == H5T_ORDER_BE;
    int rc = m && mapping && base && n >= 0 && size <= 8 ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        unsigned char v[8] = {0};
        char *name = H5Tget_member_name(type, (unsigned)i);
        /* the value as stored, in the base type's own order */
        rc = name && H5Tget_member_value(type, (unsigned)i, v) >= 0
                 ? set(mapping, name, int_value(v, size, is_signed, be))
                 : -1;
        H5free_memory(name);
    }
    if (super >= 0) H5Tclose(super);
    if (rc == 0 && set(m, "class", h5ark_value_str("H5T_ENUM")) == 0 && set(m, "base", base) == 0) {
        base = NULL;
        if (set(m, "mapping", mapping) == 0) return m;
        mapping = NULL;
    }
    h5ark_value_destroy(&m);
    h5ark_value_destroy(&mapping);
    h5ark_value_destroy(&base);
    if (!err->code) h5ark_fail(err, H5ARK_TYPE_ERROR, "an enum type that cannot be described");
    return NULL;
}

static h5ark_value *string_json(hid_t type) {
    H5T_str_t pad = H5Tget_strpad(type);
    bool vlen = H5Tis_variable_str(type) > 0;
    h5ark_value *m = h5ark_value_map();
    if (m && (set(m, "class", h5ark_value_str("H5T_STRING")) ||
              set(m, "charSet",
                  h5ark_value_str(H5Tget_cset(type) == H5T_CSET_UTF8 ? "H5T_CSET_UTF8"
                                                                     : "H5T_CSET_ASCII")) ||
              set(m, "length",
                  vlen ? h5ark_value_str("H5T_VARIABLE") : h5ark_value_uint(H5Tget_size(type))) ||
              set(m, "strPad",
                  h5ark_value_str(pad == H5T_STR_NULLPAD    ? "H5T_STR_NULLPAD"
                                  : pad == H5T_STR_SPACEPAD ? "H5T_STR_SPACEPAD"
                                                            : "H5T_STR_NULLTERM"))))
        h5ark_value_destroy(&m);
    return m;
}

static h5ark_value *compound_json(hid_t type, int depth, h5ark_error *err) {
    int n = H5Tget_nmembers(type);
    h5ark_value *m = h5ark_value_map(), *fields = h5ark_value_array();
    int rc = m && fields && n >= 0 ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        char *name = H5Tget_member_name(type, (unsigned)i);
        hid_t mt = H5Tget_member_type(type, (unsigned)i);
        h5ark_value *f = h5ark_value_map();
        h5ark_value *t = mt >= 0 ? type_json(mt, depth + 1, err) : NULL;
        rc = name && f && t && set(f, "name", h5ark_value_str(name)) == 0 ? 0 : -1;
        if (rc == 0) {
            rc = h5ark_value_set(f, "type", t);
            t = NULL;
        }
        if (rc == 0) {
            rc = h5ark_value_push(fields, f);
            f = NULL;
        }
        h5ark_value_destroy(&f);
        h5ark_value_destroy(&t);
        H5free_memory(name);
        if (mt >= 0) H5Tclose(mt);
    }
    if (rc == 0 && set(m, "class", h5ark_value_str("H5T_COMPOUND")) == 0 &&
        h5ark_value_set(m, "fields", fields) == 0)
        return m;
    h5ark_value_destroy(&m);
    return NULL;
}

static h5ark_value *array_json(hid_t type, H5T_class_t cls, int depth, h5ark_error *err) {
    hid_t super = H5Tget_super(type);
    h5ark_value *base = super >= 0 ? type_json(super, depth + 1, err) : NULL;
    if (super >= 0) H5Tclose(super);
    h5ark_value *m = h5ark_value_map();
    int rc = base && m ? 0 : -1;
    if (rc == 0) rc = set(m, "class", h5ark_value_str(cls == H5T_ARRAY ? "H5T_ARRAY" : "H5T_VLEN"));
    if (rc == 0 && cls == H5T_ARRAY) {
        hsize_t dims[H5S_MAX_RANK];
        int nd = H5Tget_array_ndims(type);
        h5ark_value *d = h5ark_value_array();
        rc = d && nd >= 0 && nd <= H5S_MAX_RANK && H5Tget_array_dims2(type, dims) >= 0 ? 0 : -1;
        for (int i = 0; rc == 0 && i < nd; i++)
            rc = h5ark_value_push(d, h5ark_value_uint(dims[i]));
        if (rc == 0)
            rc = h5ark_value_set(m, "dims", d);
        else
            h5ark_value_destroy(&d);
    }
    if (rc == 0) {
        rc = h5ark_value_set(m, "base", base);
        base = NULL;
    }
    h5ark_value_destroy(&base);
    if (rc) h5ark_value_destroy(&m);
    return m;
}

static h5ark_value *type_json(hid_t type, int depth, h5ark_error *err) {
    if (depth > TYPE_MAX_DEPTH) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "a type nested more than %d deep", TYPE_MAX_DEPTH);
        return NULL;
    }
    H5T_class_t cls = H5Tget_class(type);
    h5ark_value *m = NULL;
    switch (cls) {
    case H5T_INTEGER:
    case H5T_FLOAT:
    case H5T_BITFIELD: m = number_type_json(type, cls); break;
    case H5T_ENUM: return enum_json(type, depth, err);
    case H5T_STRING: m = string_json(type); break;
    case H5T_COMPOUND: m = compound_json(type, depth, err); break;
    case H5T_ARRAY:
    case H5T_VLEN: m = array_json(type, cls, depth, err); break;
    case H5T_OPAQUE:
        m = h5ark_value_map();
        if (m && (set(m, "class", h5ark_value_str("H5T_OPAQUE")) ||
                  set(m, "size", h5ark_value_uint(H5Tget_size(type)))))
            h5ark_value_destroy(&m);
        break;
    case H5T_REFERENCE:
        m = h5ark_value_map();
        if (m &&
            (set(m, "class", h5ark_value_str("H5T_REFERENCE")) ||
             set(m, "base",
                 h5ark_value_str(H5Tequal(type, H5T_STD_REF_DSETREG) > 0 ? "H5T_STD_REF_DSETREG"
                                                                         : "H5T_STD_REF_OBJ"))))
            h5ark_value_destroy(&m);
        break;
    default:
        h5ark_fail(err, H5ARK_TYPE_ERROR, "an HDF5 type of class %d has no description", cls);
        return NULL;
    }
    if (!m && !err->code) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return m;
}

h5ark_value *h5obj_type_json(hid_t type, h5ark_error *err) {
    return type_json(type, 0, err);
}

h5ark_value *h5obj_shape_json(hid_t space, h5ark_error *err) {
    H5S_class_t cls = H5Sget_simple_extent_type(space);
    h5ark_value *m = h5ark_value_map();
    int rc = m ? 0 : -1;
    if (rc == 0 && cls == H5S_SIMPLE) {
        hsize_t dims[H5S_MAX_RANK], maxdims[H5S_MAX_RANK];
        int rank = H5Sget_simple_extent_dims(space, dims, maxdims);
        h5ark_value *d = h5ark_value_array(), *md = h5ark_value_array();
        bool grows = false;
        rc = d && md && rank >= 0 ? 0 : -1;
        for (int i = 0; rc == 0 && i < rank; i++) {
            grows |= maxdims[i] != dims[i];
            rc = h5ark_value_push(d, h5ark_value_uint(dims[i]));
            if (rc == 0)
                rc = h5ark_value_push(
                    md, h5ark_value_uint(maxdims[i] == H5S_UNLIMITED ? 0 : maxdims[i]));
        }
        if (rc == 0) rc = set(m, "class", h5ark_value_str("H5S_SIMPLE"));
        if (rc == 0) {
            rc = h5ark_value_set(m, "dims", d);
            d = NULL;
        }
        if (rc == 0 && grows) {
            rc = h5ark_value_set(m, "maxdims", md);
            md = NULL;
        }
        h5ark_value_destroy(&d);
        h5ark_value_destroy(&md);
    } else if (rc == 0) {
        rc = set(m, "class", h5ark_value_str(cls == H5S_SCALAR ? "H5S_SCALAR" : "H5S_NULL"));
    }
    if (rc) {
        h5ark_value_destroy(&m);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    return m;
}

/* ---- the types values are read as --------------------------------------------------- */

/* An enum over the little-endian form of its base, the same names and values. */
static hid_t wire_enum(hid_t type) {
    if (H5Tget_order(type) != H5T_ORDER_BE) return H5Tcopy(type);
    hid_t super = H5Tget_super(type), base = super >= 0 ? H5Tcopy(super) : -1;
    hid_t t = base >= 0 && H5Tset_order(base, H5T_ORDER_LE) >= 0 ? H5Tenum_create(base) : -1;
    size_t size = base >= 0 ? H5Tget_size(base) : 0;
    int n = H5Tget_nmembers(type);
    for (int i = 0; t >= 0 && i < n && size <= 8; i++) {
        unsigned char be[8], le[8];
        char *name = H5Tget_member_name(type, (unsigned)i);
        if (!name || H5Tget_member_value(type, (unsigned)i, be) < 0) {
            H5Tclose(t);
            t = -1;
        } else {
            for (size_t k = 0; k < size; k++)
                le[k] = be[size - 1 - k];
            if (H5Tenum_insert(t, name, le) < 0) {
                H5Tclose(t);
                t = -1;
            }
        }
        H5free_memory(name);
    }
    if (base >= 0) H5Tclose(base);
    if (super >= 0) H5Tclose(super);
    return t;
}

static hid_t wire_type(hid_t type, int depth, bool *vlen, h5ark_error *err) {
    if (depth > TYPE_MAX_DEPTH) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "a type nested more than %d deep", TYPE_MAX_DEPTH);
        return H5I_INVALID_HID;
    }
    H5T_class_t cls = H5Tget_class(type);
    hid_t t = H5I_INVALID_HID;
    switch (cls) {
    case H5T_INTEGER:
    case H5T_FLOAT:
    case H5T_BITFIELD:
        t = H5Tcopy(type);
        if (t >= 0 && H5Tset_order(t, H5T_ORDER_LE) < 0) {
            H5Tclose(t);
            t = H5I_INVALID_HID;
        }
        break;
    case H5T_ENUM: t = wire_enum(type); break;
    case H5T_OPAQUE: t = H5Tcopy(type); break;
    case H5T_STRING:
        if (H5Tis_variable_str(type) > 0) {
            *vlen = true; /* the elements have variable parts (h5obj_vlen.c) */
            t = H5Tcopy(H5T_C_S1);
            if (t >= 0 &&
                (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5Tget_cset(type)) < 0)) {
                H5Tclose(t);
                t = H5I_INVALID_HID;
            }
        } else {
            t = H5Tcopy(type);
        }
        break;
    case H5T_ARRAY: {
        hsize_t dims[H5S_MAX_RANK];
        int nd = H5Tget_array_ndims(type);
        hid_t super = H5Tget_super(type);
        hid_t base = super >= 0 ? wire_type(super, depth + 1, vlen, err) : -1;
        if (super >= 0) H5Tclose(super);
        if (base >= 0 && nd > 0 && nd <= H5S_MAX_RANK && H5Tget_array_dims2(type, dims) >= 0)
            t = H5Tarray_create2(base, (unsigned)nd, dims);
        if (base >= 0) H5Tclose(base);
        break;
    }
    case H5T_VLEN: { /* a sequence of a fixed-size base, as hvl_t */
        hid_t super = H5Tget_super(type);
        bool inner = false;
        hid_t base = super >= 0 ? wire_type(super, depth + 1, &inner, err) : -1;
        if (super >= 0) H5Tclose(super);
        if (base >= 0 && inner)
            h5ark_fail(err, H5ARK_TYPE_ERROR,
                       "values of sequences of variable-length elements are not served");
        else if (base >= 0)
            t = H5Tvlen_create(base);
        if (base >= 0) H5Tclose(base);
        *vlen = true;
        break;
    }
    case H5T_COMPOUND: {
        int n = H5Tget_nmembers(type);
        hid_t members[256];
        size_t size = 0;
        int made = 0;
        if (n > 256) {
            h5ark_fail(err, H5ARK_TYPE_ERROR, "a compound of %d members (at most 256 served)", n);
            return H5I_INVALID_HID;
        }
        for (; made < n; made++) {
            hid_t mt = H5Tget_member_type(type, (unsigned)made);
            members[made] = mt >= 0 ? wire_type(mt, depth + 1, vlen, err) : -1;
            if (mt >= 0) H5Tclose(mt);
            if (members[made] < 0) break;
            size += H5Tget_size(members[made]);
        }
        if (made == n && n > 0) t = H5Tcreate(H5T_COMPOUND, size);
        size_t off = 0;
        for (int i = 0; t >= 0 && i < n; i++) {
            char *name = H5Tget_member_name(type, (unsigned)i);
            if (!name || H5Tinsert(t, name, off, members[i]) < 0) {
                H5Tclose(t);
                t = H5I_INVALID_HID;
            }
            H5free_memory(name);
            off += H5Tget_size(members[i]);
        }
        for (int i = 0; i < made; i++)
            H5Tclose(members[i]);
        break;
    }
    default:
        if (!err->code)
            h5ark_fail(err, H5ARK_TYPE_ERROR, "values of an HDF5 %s type are not served",
                       "reference or other");
        return H5I_INVALID_HID;
    }
    if (t < 0 && !err->code) h5ark_fail(err, H5ARK_TYPE_ERROR, "a type that cannot be read");
    return t;
}

hid_t h5obj_wire_type(hid_t type, bool *vlen, h5ark_error *err) {
    *vlen = false;
    return wire_type(type, 0, vlen, err);
}

/* ---- values as JSON ---------------------------------------------------------------- */

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

static h5ark_value *element_json(hid_t t, const unsigned char *p, int depth) {
    H5T_class_t cls = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    switch (cls) {
    case H5T_INTEGER:
    case H5T_BITFIELD: return int_value(p, size, H5Tget_sign(t) != H5T_SGN_NONE, false);
    case H5T_ENUM: {
        hid_t super = H5Tget_super(t);
        h5ark_value *v =
            int_value(p, size, super >= 0 && H5Tget_sign(super) != H5T_SGN_NONE, false);
        if (super >= 0) H5Tclose(super);
        return v;
    }
    case H5T_FLOAT: {
        if (size == 8) {
            double d;
            memcpy(&d, p, 8);
            return h5ark_value_float(d);
        }
        if (size == 4) {
            float f;
            memcpy(&f, p, 4);
            return h5ark_value_float(f);
        }
        if (size == 2) return h5ark_value_float(half_to_double((uint16_t)(p[0] | p[1] << 8)));
        return h5ark_value_nil();
    }
    case H5T_STRING: {
        if (H5Tis_variable_str(t) > 0) {
            const char *s;
            memcpy(&s, p, sizeof s);
            return h5ark_value_str(s ? s : "");
        }
        size_t n = strnlen((const char *)p, size);
        if (H5Tget_strpad(t) == H5T_STR_SPACEPAD)
            while (n && p[n - 1] == ' ')
                n--;
        return h5ark_value_strn((const char *)p, n);
    }
    case H5T_COMPOUND: {
        h5ark_value *list = h5ark_value_array();
        int n = H5Tget_nmembers(t);
        for (int i = 0; list && i < n; i++) {
            hid_t mt = H5Tget_member_type(t, (unsigned)i);
            size_t off = H5Tget_member_offset(t, (unsigned)i);
            h5ark_value *v = mt >= 0 ? element_json(mt, p + off, depth + 1) : NULL;
            if (mt >= 0) H5Tclose(mt);
            if (!v || h5ark_value_push(list, v)) h5ark_value_destroy(&list);
        }
        return list;
    }
    case H5T_VLEN: {
        hvl_t s;
        memcpy(&s, p, sizeof s);
        hid_t super = H5Tget_super(t);
        hsize_t len = s.len;
        h5ark_error e = {0};
        h5ark_value *v =
            super >= 0 ? len ? h5obj_values_json(super, s.p, len, &len, 1, &e) : h5ark_value_array()
                       : NULL;
        if (super >= 0) H5Tclose(super);
        return v;
    }
    case H5T_ARRAY: {
        hsize_t dims[H5S_MAX_RANK];
        int nd = H5Tget_array_ndims(t);
        hid_t super = H5Tget_super(t);
        if (super < 0 || nd < 1 || H5Tget_array_dims2(t, dims) < 0) {
            if (super >= 0) H5Tclose(super);
            return NULL;
        }
        size_t n = 1;
        for (int i = 0; i < nd; i++)
            n *= dims[i];
        h5ark_error e = {0};
        h5ark_value *v = h5obj_values_json(super, (const char *)p, n, dims, nd, &e);
        H5Tclose(super);
        return v;
    }
    default: {
        h5ark_value *list = h5ark_value_array();
        for (size_t i = 0; list && i < size; i++)
            if (h5ark_value_push(list, h5ark_value_uint(p[i]))) h5ark_value_destroy(&list);
        return list;
    }
    }
}

static h5ark_value *nest(hid_t t, size_t size, const char **p, const hsize_t *dims, int rank) {
    if (rank == 0) {
        h5ark_value *v = element_json(t, (const unsigned char *)*p, 0);
        *p += size;
        return v;
    }
    h5ark_value *list = h5ark_value_array();
    for (hsize_t i = 0; list && i < dims[0]; i++) {
        h5ark_value *v = nest(t, size, p, dims + 1, rank - 1);
        if (!v || h5ark_value_push(list, v)) h5ark_value_destroy(&list);
    }
    return list;
}

h5ark_value *h5obj_values_json(hid_t wire, const char *buf, size_t n, const hsize_t *dims, int rank,
                               h5ark_error *err) {
    (void)n;
    const char *p = buf;
    h5ark_value *v = nest(wire, H5Tget_size(wire), &p, dims, rank);
    if (!v) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return v;
}
