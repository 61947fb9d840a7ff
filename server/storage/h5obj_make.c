/* What clients send to create objects: types, shapes and values in HSDS's JSON, made into
 * the HDF5 types h5py makes for the same numpy dtypes and into element bytes. */
#include "storage/h5obj_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAKE_MAX_DEPTH 16

static hid_t fail_type(h5ark_error *err, const char *what) {
    h5ark_fail(err, H5ARK_BAD_REQUEST, "type: %s", what);
    return H5I_INVALID_HID;
}

/* "H5T_STD_I32LE", "H5T_IEEE_F64BE" ... */
static hid_t base_type(const char *s, h5ark_error *err) {
    static const struct {
        const char *name;
        hid_t *id;
    } std[] = {
        {"H5T_STD_I8LE", &H5T_STD_I8LE_g},     {"H5T_STD_I8BE", &H5T_STD_I8BE_g},
        {"H5T_STD_U8LE", &H5T_STD_U8LE_g},     {"H5T_STD_U8BE", &H5T_STD_U8BE_g},
        {"H5T_STD_I16LE", &H5T_STD_I16LE_g},   {"H5T_STD_I16BE", &H5T_STD_I16BE_g},
        {"H5T_STD_U16LE", &H5T_STD_U16LE_g},   {"H5T_STD_U16BE", &H5T_STD_U16BE_g},
        {"H5T_STD_I32LE", &H5T_STD_I32LE_g},   {"H5T_STD_I32BE", &H5T_STD_I32BE_g},
        {"H5T_STD_U32LE", &H5T_STD_U32LE_g},   {"H5T_STD_U32BE", &H5T_STD_U32BE_g},
        {"H5T_STD_I64LE", &H5T_STD_I64LE_g},   {"H5T_STD_I64BE", &H5T_STD_I64BE_g},
        {"H5T_STD_U64LE", &H5T_STD_U64LE_g},   {"H5T_STD_U64BE", &H5T_STD_U64BE_g},
        {"H5T_IEEE_F32LE", &H5T_IEEE_F32LE_g}, {"H5T_IEEE_F32BE", &H5T_IEEE_F32BE_g},
        {"H5T_IEEE_F64LE", &H5T_IEEE_F64LE_g}, {"H5T_IEEE_F64BE", &H5T_IEEE_F64BE_g},
    };
    H5open();
    for (size_t i = 0; i < sizeof std / sizeof std[0]; i++)
        if (strcmp(s, std[i].name) == 0) return H5Tcopy(*std[i].id);
    /* without its order ("H5T_STD_I32", h5pyd's sequence bases): the machine's, as HSDS
     * reads it with numpy */
    size_t n = strlen(s);
    if (n > 2 && n < 32 && strcmp(s + n - 2, "LE") != 0 && strcmp(s + n - 2, "BE") != 0) {
        char le[40];
        snprintf(le, sizeof le, "%sLE", s);
        return base_type(le, err);
    }
    if (strcmp(s, "H5T_IEEE_F16LE") == 0 || strcmp(s, "H5T_IEEE_F16BE") == 0) {
        /* as h5py makes float16 */
        hid_t t = H5Tcopy(H5T_IEEE_F32LE);
        if (t >= 0 && (H5Tset_fields(t, 15, 10, 5, 0, 10) < 0 || H5Tset_size(t, 2) < 0 ||
                       H5Tset_ebias(t, 15) < 0 ||
                       H5Tset_order(t, s[14] == 'B' ? H5T_ORDER_BE : H5T_ORDER_LE) < 0)) {
            H5Tclose(t);
            t = H5I_INVALID_HID;
        }
        return t;
    }
    h5ark_fail(err, H5ARK_BAD_REQUEST, "type: '%.60s' is not a type h5ark makes", s);
    return H5I_INVALID_HID;
}

static hid_t make_type(const json_t *j, int depth, h5ark_error *err);

static hid_t make_string(const json_t *j, h5ark_error *err) {
    const json_t *len = json_object_get(j, "length");
    const char *cset = json_string_value(json_object_get(j, "charSet"));
    const char *pad = json_string_value(json_object_get(j, "strPad"));
    bool vlen = json_is_string(len) && strcmp(json_string_value(len), "H5T_VARIABLE") == 0;
    if (!vlen && (!json_is_integer(len) || json_integer_value(len) < 1))
        return fail_type(err, "a string's length is H5T_VARIABLE or a positive integer");
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return fail_type(err, "cannot make a string type");
    H5T_str_t strpad = vlen ? H5T_STR_NULLTERM : H5T_STR_NULLPAD;
    if (pad && strcmp(pad, "H5T_STR_NULLTERM") == 0) strpad = H5T_STR_NULLTERM;
    if (pad && strcmp(pad, "H5T_STR_SPACEPAD") == 0) strpad = H5T_STR_SPACEPAD;
    if (H5Tset_size(t, vlen ? H5T_VARIABLE : (size_t)json_integer_value(len)) < 0 ||
        H5Tset_cset(t, cset && strcmp(cset, "H5T_CSET_UTF8") == 0 ? H5T_CSET_UTF8
                                                                  : H5T_CSET_ASCII) < 0 ||
        H5Tset_strpad(t, strpad) < 0) {
        H5Tclose(t);
        return fail_type(err, "cannot make that string type");
    }
    return t;
}

static hid_t make_enum(const json_t *j, int depth, h5ark_error *err) {
    const json_t *mapping = json_object_get(j, "mapping");
    if (!json_is_object(mapping)) return fail_type(err, "an enum needs a mapping");
    hid_t base = make_type(json_object_get(j, "base"), depth + 1, err);
    if (base < 0) return -1;
    hid_t t = H5Tget_class(base) == H5T_INTEGER ? H5Tenum_create(base) : -1;
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)mapping, name, v) {
        long long value = json_integer_value(v);
        if (t >= 0 && (!json_is_integer(v) || H5Tenum_insert(t, name, &value) < 0)) {
            H5Tclose(t);
            t = H5I_INVALID_HID;
        }
    }
    H5Tclose(base);
    return t >= 0 ? t : fail_type(err, "an enum of integers with integer values");
}

static hid_t make_compound(const json_t *j, int depth, h5ark_error *err) {
    const json_t *fields = json_object_get(j, "fields");
    size_t n = json_array_size(fields), size = 0;
    if (!n || n > 256) return fail_type(err, "a compound needs 1 to 256 fields");
    hid_t members[256];
    size_t made = 0;
    for (; made < n; made++) {
        const json_t *f = json_array_get(fields, made);
        if (!json_is_string(json_object_get(f, "name"))) break;
        members[made] = make_type(json_object_get(f, "type"), depth + 1, err);
        if (members[made] < 0) break;
        size += H5Tget_size(members[made]);
    }
    hid_t t = made == n ? H5Tcreate(H5T_COMPOUND, size) : -1;
    for (size_t i = 0, off = 0; t >= 0 && i < n; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(fields, i), "name"));
        if (H5Tinsert(t, name, off, members[i]) < 0) {
            H5Tclose(t);
            t = H5I_INVALID_HID;
        }
        off += H5Tget_size(members[i]);
    }
    for (size_t i = 0; i < made; i++)
        H5Tclose(members[i]);
    return t >= 0 || err->code ? t : fail_type(err, "a compound's fields are {name, type}");
}

static hid_t make_array(const json_t *j, int depth, h5ark_error *err) {
    const json_t *dims = json_object_get(j, "dims");
    size_t n = json_array_size(dims);
    hsize_t d[H5S_MAX_RANK];
    if (!n || n > H5S_MAX_RANK) return fail_type(err, "an array type needs dims");
    for (size_t i = 0; i < n; i++) {
        json_int_t v = json_integer_value(json_array_get(dims, i));
        if (v < 1) return fail_type(err, "an array type's dims are positive integers");
        d[i] = (hsize_t)v;
    }
    hid_t base = make_type(json_object_get(j, "base"), depth + 1, err);
    if (base < 0) return -1;
    hid_t t = H5Tarray_create2(base, (unsigned)n, d);
    H5Tclose(base);
    return t >= 0 ? t : fail_type(err, "cannot make that array type");
}

static hid_t make_type(const json_t *j, int depth, h5ark_error *err) {
    if (depth > MAKE_MAX_DEPTH) return fail_type(err, "nested too deep");
    if (json_is_string(j)) return base_type(json_string_value(j), err);
    const char *cls = json_string_value(json_object_get(j, "class"));
    if (!cls) return fail_type(err, "a type is a name or an object with a class");
    if (strcmp(cls, "H5T_INTEGER") == 0 || strcmp(cls, "H5T_FLOAT") == 0) {
        const char *base = json_string_value(json_object_get(j, "base"));
        if (!base) return fail_type(err, "a number type needs its base");
        hid_t t = base_type(base, err);
        if (t >= 0 && H5Tget_class(t) != (cls[4] == 'I' ? H5T_INTEGER : H5T_FLOAT)) {
            H5Tclose(t);
            return fail_type(err, "the base is not of the class given");
        }
        return t;
    }
    if (strcmp(cls, "H5T_STRING") == 0) return make_string(j, err);
    if (strcmp(cls, "H5T_ENUM") == 0) return make_enum(j, depth, err);
    if (strcmp(cls, "H5T_COMPOUND") == 0) return make_compound(j, depth, err);
    if (strcmp(cls, "H5T_ARRAY") == 0) return make_array(j, depth, err);
    if (strcmp(cls, "H5T_VLEN") == 0) { /* a sequence of numbers, h5py's vlen_dtype */
        hid_t base = make_type(json_object_get(j, "base"), depth + 1, err);
        hid_t t = base >= 0 ? H5Tvlen_create(base) : H5I_INVALID_HID;
        if (base >= 0) H5Tclose(base);
        return t >= 0 || err->code ? t : fail_type(err, "cannot make that sequence type");
    }
    h5ark_fail(err, H5ARK_BAD_REQUEST, "type: h5ark does not make %.40s types", cls);
    return H5I_INVALID_HID;
}

hid_t h5obj_make_type(const json_t *j, h5ark_error *err) {
    return make_type(j, 0, err);
}

/* ---- values ---------------------------------------------------------------------- */

static uint16_t double_to_half(double d) {
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    d = fabs(d);
    if (isnan(d)) return sign | 0x7e00;
    if (d >= 65520.0) return sign | 0x7c00;
    if (d < ldexp(1, -24)) return sign;
    int e;
    double m = frexp(d, &e);                                  /* d = m * 2^e, m in [0.5, 1) */
    if (e < -13) return sign | (uint16_t)lrint(ldexp(d, 24)); /* subnormal */
    long mant = lrint(ldexp(m, 11)) - 1024;                   /* 10 bits */
    if (mant == 1024) {
        mant = 0;
        e++;
    }
    return sign | (uint16_t)((e + 14) << 10) | (uint16_t)mant;
}

static int put_element(hid_t t, const json_t *v, unsigned char *p, h5ark_error *err) {
    H5T_class_t cls = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    switch (cls) {
    case H5T_INTEGER:
    case H5T_ENUM: {
        if (json_is_boolean(v))
            v = json_is_true(v) ? json_integer(1) : json_integer(0);
        else
            json_incref((json_t *)v);
        if (!json_is_integer(v)) {
            json_decref((json_t *)v);
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "value: an integer expected");
        }
        uint64_t u = (uint64_t)json_integer_value(v);
        json_decref((json_t *)v);
        for (size_t i = 0; i < size && i < 8; i++)
            p[i] = (unsigned char)(u >> (8 * i));
        return 0;
    }
    case H5T_FLOAT: {
        if (!json_is_number(v))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "value: a number expected");
        double d = json_number_value(v);
        if (size == 8) memcpy(p, &d, 8);
        if (size == 4) {
            float f = (float)d;
            memcpy(p, &f, 4);
        }
        if (size == 2) {
            uint16_t h = double_to_half(d);
            p[0] = (unsigned char)h;
            p[1] = (unsigned char)(h >> 8);
        }
        return 0;
    }
    case H5T_STRING: {
        if (!json_is_string(v))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "value: a string expected");
        if (H5Tis_variable_str(t) > 0) {
            char *s = strdup(json_string_value(v));
            if (!s) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            memcpy(p, &s, sizeof s);
            return 0;
        }
        size_t n = json_string_length(v);
        memcpy(p, json_string_value(v), n < size ? n : size);
        return 0;
    }
    case H5T_COMPOUND: {
        int n = H5Tget_nmembers(t);
        if (!json_is_array(v) || json_array_size(v) != (size_t)n)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "value: a compound is a list of %d", n);
        for (int i = 0; i < n; i++) {
            hid_t mt = H5Tget_member_type(t, (unsigned)i);
            int rc = put_element(mt, json_array_get(v, (size_t)i),
                                 p + H5Tget_member_offset(t, (unsigned)i), err);
            H5Tclose(mt);
            if (rc) return -1;
        }
        return 0;
    }
    case H5T_ARRAY: {
        hid_t super = H5Tget_super(t);
        hsize_t dims[H5S_MAX_RANK];
        int nd = H5Tget_array_ndims(t);
        int rc = nd > 0 && H5Tget_array_dims2(t, dims) >= 0
                     ? h5obj_values_from_json(super, v, p, dims, nd, err)
                     : h5ark_fail(err, H5ARK_BAD_REQUEST, "value: an array type without dims");
        H5Tclose(super);
        return rc;
    }
    case H5T_VLEN: {
        if (!json_is_array(v)) return h5ark_fail(err, H5ARK_BAD_REQUEST, "value: a list expected");
        hid_t super = H5Tget_super(t);
        hsize_t n = json_array_size(v);
        hvl_t s = {.len = n, .p = n && super >= 0 ? calloc(n, H5Tget_size(super)) : NULL};
        memcpy(p, &s, sizeof s); /* freed with the element, written whole or not */
        int rc = super < 0 || (n && !s.p) ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
                                          : h5obj_values_from_json(super, v, s.p, &n, 1, err);
        if (super >= 0) H5Tclose(super);
        return rc;
    }
    default: return h5ark_fail(err, H5ARK_BAD_REQUEST, "value: a type that cannot be written");
    }
}

/* Nested lists by dims, in C order, into buf. */
static int flatten(hid_t t, const json_t *v, unsigned char *buf, size_t size, const hsize_t *dims,
                   int rank, size_t *k, h5ark_error *err) {
    if (rank == 0) {
        if (put_element(t, v, buf + *k * size, err)) return -1;
        (*k)++;
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) != dims[0])
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "value: a list of %llu expected where the shape has that extent",
                          (unsigned long long)dims[0]);
    for (size_t i = 0; i < dims[0]; i++)
        if (flatten(t, json_array_get(v, i), buf, size, dims + 1, rank - 1, k, err)) return -1;
    return 0;
}

int h5obj_values_from_json(hid_t wire, const json_t *v, void *buf, const hsize_t *dims, int rank,
                           h5ark_error *err) {
    size_t k = 0;
    return flatten(wire, v, buf, H5Tget_size(wire), dims, rank, &k, err);
}

/* ---- shapes ---------------------------------------------------------------------- */

int h5obj_make_shape(const json_t *shape, const json_t *maxdims, int *rank, hsize_t *dims,
                     hsize_t *max, bool *null, h5ark_error *err) {
    *null = false;
    *rank = 0;
    if (json_is_string(shape) && strcmp(json_string_value(shape), "H5S_NULL") == 0) {
        *null = true;
        return 0;
    }
    if (json_is_integer(shape)) {
        *rank = 1;
        dims[0] = (hsize_t)json_integer_value(shape);
        max[0] = dims[0];
        if (json_integer_value(shape) < 0)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "shape: negative extent");
    } else if (json_is_array(shape) && json_array_size(shape) <= H5S_MAX_RANK) {
        *rank = (int)json_array_size(shape);
        for (int i = 0; i < *rank; i++) {
            const json_t *d = json_array_get(shape, (size_t)i);
            if (!json_is_integer(d) || json_integer_value(d) < 0)
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "shape: extents are integers >= 0");
            dims[i] = max[i] = (hsize_t)json_integer_value(d);
        }
    } else if (shape) {
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "shape: a list of extents, [] or H5S_NULL");
    }
    if (maxdims && !json_is_null(maxdims)) {
        if (json_is_integer(maxdims) && *rank == 1) {
            json_int_t m = json_integer_value(maxdims);
            max[0] = m == 0 ? H5S_UNLIMITED : (hsize_t)m;
        } else if (json_is_array(maxdims) && json_array_size(maxdims) == (size_t)*rank) {
            for (int i = 0; i < *rank; i++) {
                const json_t *m = json_array_get(maxdims, (size_t)i);
                if (!json_is_integer(m) || json_integer_value(m) < 0)
                    return h5ark_fail(err, H5ARK_BAD_REQUEST, "maxdims: integers, 0: unlimited");
                max[i] =
                    json_integer_value(m) == 0 ? H5S_UNLIMITED : (hsize_t)json_integer_value(m);
            }
        } else {
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "maxdims: one per axis of the shape");
        }
        for (int i = 0; i < *rank; i++)
            if (max[i] < dims[i])
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "maxdims: axis %d is below the shape", i);
    }
    return 0;
}
