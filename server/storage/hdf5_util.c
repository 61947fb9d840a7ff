/* HDF5 helpers for the storage layer (see hdf5_util.h). */
#include "hdf5_util.h"

#include "io.h"
#include "layout.h"
#include "ohdr.h"
#include "shuffle.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* External links as this process knows them: their values can be read, listed and
 * copied, but following one always fails. */
static hid_t refuse_to_follow(const char *name, hid_t group, const void *value, size_t size,
                              hid_t lapl, hid_t dxpl) {
    (void)name, (void)group, (void)value, (void)size, (void)lapl, (void)dxpl;
    return H5I_INVALID_HID;
}

static ssize_t external_value(const char *name, const void *value, size_t size, void *buf,
                              size_t buf_size) {
    (void)name;
    if (buf) memcpy(buf, value, size < buf_size ? size : buf_size);
    return (ssize_t)size;
}

static const H5L_class_t external_never_followed = {
    .version = H5L_LINK_CLASS_T_VERS,
    .id = H5L_TYPE_EXTERNAL,
    .comment = "external link, never followed",
    .trav_func = refuse_to_follow,
    .query_func = external_value,
};

int h5u_init(void) {
    if (H5open() < 0) return -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* A file names its filters; never let that make the library load a shared object. */
    H5PLset_loading_state(0);
    if (h5u_vfd_init() < 0) return -1;
    /* Nor let a link take it into another file, however the link is reached (a soft link
     * can lead to an external one): the library's class for external links is replaced by
     * one that cannot be followed. */
    return H5Lregister(&external_never_followed) < 0 ? -1 : 0;
}

static _Thread_local bool quiet;

void h5u_quiet(void) {
    if (quiet) return;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    quiet = true;
}

typedef struct {
    char outer[256];
    char inner[256];
    int count;
    bool locked;   /* another process holds the file's lock */
    bool os_error; /* the operating system refused a read or write */
} walk_ctx;

/* Walking down: the first entry is the API call that failed, the last the reason deep
 * down in the file; HDF5 writes the errno of a failed system call into the text. */
static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data) {
    walk_ctx *w = data;
    const char *desc = e->desc && *e->desc ? e->desc : e->func_name ? e->func_name : "error";
    if (n == 0) snprintf(w->outer, sizeof w->outer, "%s", desc);
    if (e->min_num == H5E_CANTLOCKFILE)
        w->locked = true;
    else if (e->desc && strstr(e->desc, "errno = "))
        w->os_error = true;
    snprintf(w->inner, sizeof w->inner, "%s", desc);
    w->count++;
    return 0;
}

h5ark_code h5u_reason(char *buf, size_t len, h5ark_code otherwise) {
    walk_ctx w = {.count = 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, &w);
    H5Eclear2(H5E_DEFAULT);
    if (w.count == 0)
        snprintf(buf, len, "the HDF5 library gave no reason");
    else if (w.count == 1 || strcmp(w.outer, w.inner) == 0)
        snprintf(buf, len, "%s", w.outer);
    else
        snprintf(buf, len, "%s (%s)", w.outer, w.inner);
    return w.locked ? H5ARK_BUSY : w.os_error ? H5ARK_IO_ERROR : otherwise;
}

int h5u_fail(h5ark_error *err, h5ark_code code, const char *fmt, ...) {
    char why[520];
    code = h5u_reason(why, sizeof why, code);
    /* what the driver saw fail outranks what HDF5 made of it */
    int io = h5u_io_errno();
    h5u_io_clear();
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->code = code;
    if (io == ENOMEM) {
        err->code = H5ARK_RESOURCE_LIMIT;
        snprintf(why, sizeof why, "out of memory");
    } else if (io) {
        err->code = H5ARK_IO_ERROR;
        snprintf(why, sizeof why, "%s", strerror(io));
    }
    size_t used = strlen(err->message);
    if (used + 3 < sizeof err->message)
        snprintf(err->message + used, sizeof err->message - used, ": %s", why);
    return -1;
}

htri_t h5u_is_hdf5(const char *path) {
#if H5_VERSION_GE(1, 12, 0)
    return H5Fis_accessible(path, H5P_DEFAULT);
#else
    return H5Fis_hdf5(path);
#endif
}

hid_t h5u_file_type(h5ark_dtype dtype) {
    switch (dtype) {
    case H5ARK_INT8: return H5T_STD_I8LE;
    case H5ARK_INT16: return H5T_STD_I16LE;
    case H5ARK_INT32: return H5T_STD_I32LE;
    case H5ARK_INT64: return H5T_STD_I64LE;
    case H5ARK_UINT8: return H5T_STD_U8LE;
    case H5ARK_UINT16: return H5T_STD_U16LE;
    case H5ARK_UINT32: return H5T_STD_U32LE;
    case H5ARK_UINT64: return H5T_STD_U64LE;
    case H5ARK_FLOAT32: return H5T_IEEE_F32LE;
    case H5ARK_FLOAT64: return H5T_IEEE_F64LE;
    case H5ARK_BOOLEAN: return H5T_STD_U8LE;
    case H5ARK_STRING: return H5T_STD_U8LE;
    default: return H5I_INVALID_HID;
    }
}

hid_t h5u_mem_type(h5ark_dtype dtype) {
    switch (dtype) {
    case H5ARK_INT8: return H5T_NATIVE_INT8;
    case H5ARK_INT16: return H5T_NATIVE_INT16;
    case H5ARK_INT32: return H5T_NATIVE_INT32;
    case H5ARK_INT64: return H5T_NATIVE_INT64;
    case H5ARK_UINT8: return H5T_NATIVE_UINT8;
    case H5ARK_UINT16: return H5T_NATIVE_UINT16;
    case H5ARK_UINT32: return H5T_NATIVE_UINT32;
    case H5ARK_UINT64: return H5T_NATIVE_UINT64;
    case H5ARK_FLOAT32: return H5T_NATIVE_FLOAT;
    case H5ARK_FLOAT64: return H5T_NATIVE_DOUBLE;
    case H5ARK_BOOLEAN: return H5T_NATIVE_UINT8;
    case H5ARK_STRING: return H5T_NATIVE_UINT8;
    default: return H5I_INVALID_HID;
    }
}

static int write_attr(hid_t obj, const char *name, hid_t file_type, hid_t mem_type,
                      const void *value, h5ark_error *err) {
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = space < 0 ? H5I_INVALID_HID
                           : H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
    int rc = attr >= 0 && H5Awrite(attr, mem_type, value) >= 0 ? 0 : -1;
    if (rc) h5u_fail(err, H5ARK_IO_ERROR, "cannot write attribute '%s'", name);
    if (attr >= 0) H5Aclose(attr);
    if (space >= 0) H5Sclose(space);
    return rc;
}

int h5u_write_int_attr(hid_t obj, const char *name, int64_t v, h5ark_error *err) {
    return write_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v, err);
}

int h5u_write_object_attrs(hid_t obj, int64_t objtype, bool is_bool, h5ark_error *err) {
    if (h5u_write_int_attr(obj, ATTR_OBJTYPE, objtype, err)) return -1;
    if (is_bool && h5u_write_int_attr(obj, ATTR_IS_BOOL, 1, err)) return -1;
    float version = SCHEMA_FILE_VERSION;
    if (write_attr(obj, ATTR_FILE_VERSION, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &version, err))
        return -1;
    /* a fixed-length, NUL-terminated ASCII string of strlen + 1 bytes, as Arkouda writes */
    static const char writer[] = SCHEMA_WRITER_VERSION;
    hid_t str = H5Tcopy(H5T_C_S1);
    int rc =
        str >= 0 && H5Tset_size(str, sizeof writer) >= 0 &&
                H5Tset_strpad(str, H5T_STR_NULLTERM) >= 0 && H5Tset_cset(str, H5T_CSET_ASCII) >= 0
            ? 0
            : h5u_fail(err, H5ARK_INTERNAL, "cannot make the type of '%s'", ATTR_ARKOUDA_VERSION);
    if (rc == 0) rc = write_attr(obj, ATTR_ARKOUDA_VERSION, str, str, writer, err);
    if (str >= 0) H5Tclose(str);
    return rc;
}

int h5u_read_text_attr(hid_t obj, const char *name, size_t max, char **out) {
    *out = NULL;
    if (H5Aexists(obj, name) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_STRING &&
        H5Sget_simple_extent_npoints(sp) == 1) {
        if (H5Tis_variable_str(t) > 0) {
            char *s = NULL;
            hid_t m = H5Tcopy(t);
            if (m >= 0 && H5Aread(a, m, &s) >= 0 && s && strlen(s) <= max) *out = strdup(s);
            if (s) H5free_memory(s);
            if (m >= 0) H5Tclose(m);
        } else {
            size_t size = H5Tget_size(t);
            char *buf = size && size <= max ? calloc(1, size + 1) : NULL;
            if (buf && H5Aread(a, t, buf) >= 0)
                *out = buf;
            else
                free(buf);
        }
    }
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    H5Eclear2(H5E_DEFAULT);
    return *out ? 1 : -1;
}

int h5u_read_int_attr(hid_t obj, const char *name, int64_t *out, const char *what,
                      h5ark_error *err) {
    htri_t exists = H5Aexists(obj, name);
    if (exists < 0)
        return h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot look up attribute '%s'", what, name);
    if (exists == 0) return 0;
    hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t type = attr >= 0 ? H5Aget_type(attr) : H5I_INVALID_HID;
    hid_t space = attr >= 0 ? H5Aget_space(attr) : H5I_INVALID_HID;
    int rc;
    if (type < 0 || space < 0) {
        rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot open attribute '%s'", what, name);
    } else if (H5Tget_class(type) != H5T_INTEGER || H5Sget_simple_extent_npoints(space) != 1) {
        rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: attribute '%s' is not a single integer", what,
                      name);
    } else if (H5Aread(attr, H5T_NATIVE_INT64, out) < 0) {
        rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot read attribute '%s'", what, name);
    } else {
        rc = 1;
    }
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    if (attr >= 0) H5Aclose(attr);
    return rc;
}

int h5u_link_exists(hid_t loc, const char *path) {
    char prefix[1024];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof prefix) return 0;
    for (size_t i = 0; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        if (i == 0) continue;
        memcpy(prefix, path, i);
        prefix[i] = '\0';
        htri_t r = H5Lexists(loc, prefix, H5P_DEFAULT);
        /* an intermediate component that is not a group makes the lookup fail: absent; a
         * file that could not be read is not */
        if (r < 0 && h5u_io_errno()) return -1;
        if (r <= 0) {
            H5Eclear2(H5E_DEFAULT);
            return 0;
        }
    }
    return 1;
}

/* Soft links a path may pass through, as the library allows (H5L_NUM_LINKS). */
#define MAX_SOFT_LINKS 16

/* Look up every step of path under loc, following soft links to where they lead: 1 when
 * all are links inside the file, 0 when a step is missing (or is not a group) and that is
 * not an error, -1 with err: forbidden when a step leads to another file, schema_error
 * for a missing one with missing_is_error. */
static int walk_links(hid_t loc, const char *path, const char *what, bool missing_is_error,
                      int depth, h5ark_error *err) {
    char prefix[1024];
    size_t len = strlen(path);
    if (len >= sizeof prefix)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: the name is too long", what);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        memcpy(prefix, path, i);
        prefix[i] = '\0';
        H5L_info_t info;
        if (H5Lget_info(loc, prefix, &info, H5P_DEFAULT) < 0) {
            if (missing_is_error)
                return h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot look up '%s'", what, prefix);
            H5Eclear2(H5E_DEFAULT);
            return 0;
        }
        if (info.type != H5L_TYPE_HARD && info.type != H5L_TYPE_SOFT)
            return h5ark_fail(err, H5ARK_FORBIDDEN,
                              "%s: '%s' is a link to another file; h5ark reads only files "
                              "inside its data directory",
                              what, prefix);
        if (info.type != H5L_TYPE_SOFT) continue;
        /* a soft link names a path, which may pass through a link to another file: walk
         * the path it stands for, with what follows it here */
        if (depth >= MAX_SOFT_LINKS)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: '%s' passes too many soft links", what,
                              path);
        char target[1024], next[2048];
        if (info.u.val_size == 0 || info.u.val_size > sizeof target ||
            H5Lget_val(loc, prefix, target, sizeof target, H5P_DEFAULT) < 0)
            return h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot read soft link '%s'", what,
                            prefix);
        target[sizeof target - 1] = '\0';
        const char *slash = strrchr(prefix, '/');
        int parent = target[0] == '/' || !slash ? 0 : (int)(slash - prefix + 1);
        if (snprintf(next, sizeof next, "%.*s%s%s", parent, prefix, target, path + i) >=
            (int)sizeof next)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: the name is too long", what);
        return walk_links(loc, next, what, missing_is_error, depth + 1, err);
    }
    return 1;
}

int h5u_check_local(hid_t loc, const char *path, const char *what, h5ark_error *err) {
    return walk_links(loc, path, what, true, 0, err) < 0 ? -1 : 0;
}

int h5u_link_local(hid_t loc, const char *path, const char *what, h5ark_error *err) {
    return path[0] ? walk_links(loc, path, what, false, 0, err) : 0;
}

static hid_t create_dataset(hid_t loc, const char *name, hid_t ftype, uint64_t n, uint64_t chunk,
                            int gzip_level, uint64_t *offset, h5ark_error *err) {
    hsize_t dims[1] = {n}, chunk_dims[1] = {chunk};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t dset = H5I_INVALID_HID;
    /* chunks are allocated as they are written; every one is, so no fill is needed */
    bool ok = space >= 0 && dcpl >= 0 && H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0;
    if (ok && chunk > 0)
        ok = H5Pset_chunk(dcpl, 1, chunk_dims) >= 0 && H5Pset_shuffle(dcpl) >= 0 &&
             H5Pset_deflate(dcpl, (unsigned)gzip_level) >= 0;
    else if (ok)
        ok = H5Pset_layout(dcpl, H5D_CONTIGUOUS) >= 0 &&
             H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0;
    if (!ok) {
        h5u_fail(err, H5ARK_INTERNAL, "cannot describe dataset '%s'", name);
        goto out;
    }
    dset = H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dset < 0) {
        h5u_fail(err, H5ARK_IO_ERROR, "cannot create dataset '%s'", name);
        goto out;
    }
    if (chunk > 0) {
        *offset = 0;
        goto out;
    }
    haddr_t addr = H5Dget_offset(dset);
    if (n > 0 && addr == HADDR_UNDEF) {
        h5u_fail(err, H5ARK_INTERNAL, "dataset '%s' has no storage after creation", name);
        H5Dclose(dset);
        dset = H5I_INVALID_HID;
        goto out;
    }
    H5Eclear2(H5E_DEFAULT);
    *offset = n > 0 ? (uint64_t)addr : 0;
out:
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return dset;
}

hid_t h5u_create_dataset(hid_t loc, const char *name, h5ark_dtype dtype, uint64_t n, uint64_t chunk,
                         int gzip_level, uint64_t *offset, h5ark_error *err) {
    return create_dataset(loc, name, h5u_file_type(dtype), n, chunk, gzip_level, offset, err);
}

hid_t h5u_create_complex_dataset(hid_t loc, const char *name, h5ark_dtype half, uint64_t n,
                                 uint64_t *offset, h5ark_error *err) {
    size_t fs = h5ark_dtype_size(half);
    hid_t t = H5Tcreate(H5T_COMPOUND, 2 * fs); /* as h5py makes complex: r then i */
    if (t < 0 || H5Tinsert(t, "r", 0, h5u_file_type(half)) < 0 ||
        H5Tinsert(t, "i", fs, h5u_file_type(half)) < 0) {
        if (t >= 0) H5Tclose(t);
        h5u_fail(err, H5ARK_INTERNAL, "cannot make the type of '%s'", name);
        return H5I_INVALID_HID;
    }
    hid_t dset = create_dataset(loc, name, t, n, 0, 0, offset, err);
    H5Tclose(t);
    return dset;
}

const char *h5u_class_name(H5T_class_t c) {
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_TIME: return "time";
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    default: return "unknown";
    }
}

bool h5u_is_bool_enum(hid_t type) {
    if (H5Tget_class(type) != H5T_ENUM) return false;
    hid_t base = H5Tget_super(type);
    bool ok = base >= 0 && H5Tget_class(base) == H5T_INTEGER && H5Tget_size(base) == 1 &&
              H5Tget_nmembers(type) == 2;
    if (base >= 0) H5Tclose(base);
    for (unsigned i = 0; ok && i < 2; i++) {
        char *name = H5Tget_member_name(type, i);
        signed char v = -1;
        ok = name && H5Tget_member_value(type, i, &v) >= 0 &&
             ((strcmp(name, "FALSE") == 0 && v == 0) || (strcmp(name, "TRUE") == 0 && v == 1));
        if (name) H5free_memory(name);
    }
    H5Eclear2(H5E_DEFAULT);
    return ok;
}

bool h5u_is_complex_pair(hid_t type, size_t *half) {
    if (H5Tget_class(type) != H5T_COMPOUND || H5Tget_nmembers(type) != 2) return false;
    size_t size = H5Tget_size(type) / 2;
    bool ok = (size == 4 || size == 8) && H5Tget_size(type) == 2 * size;
    static const char *const names[2] = {"r", "i"};
    for (unsigned i = 0; ok && i < 2; i++) {
        hid_t m = H5Tget_member_type(type, i);
        char *name = H5Tget_member_name(type, i);
        ok = m >= 0 && name && strcmp(name, names[i]) == 0 && H5Tget_class(m) == H5T_FLOAT &&
             H5Tget_size(m) == size && H5Tget_member_offset(type, i) == i * size;
        if (name) H5free_memory(name);
        if (m >= 0) H5Tclose(m);
    }
    H5Eclear2(H5E_DEFAULT);
    if (ok) *half = size;
    return ok;
}

static int inspect_type(hid_t type, const char *what, h5u_dset_info *info, h5ark_error *err) {
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    info->is_integer = false;
    info->enum_bool = false;
    if (cls == H5T_INTEGER) {
        bool sign = H5Tget_sign(type) == H5T_SGN_2;
        switch (size) {
        case 1: info->dtype = sign ? H5ARK_INT8 : H5ARK_UINT8; break;
        case 2: info->dtype = sign ? H5ARK_INT16 : H5ARK_UINT16; break;
        case 4: info->dtype = sign ? H5ARK_INT32 : H5ARK_UINT32; break;
        case 8: info->dtype = sign ? H5ARK_INT64 : H5ARK_UINT64; break;
        default:
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "%s holds %zu-byte integers, which h5ark "
                              "does not read",
                              what, size);
        }
        info->is_integer = true;
    } else if (cls == H5T_FLOAT) {
        /* any other float width widens to float64, as Arkouda reads it */
        info->dtype = size == 4 ? H5ARK_FLOAT32 : H5ARK_FLOAT64;
    } else if (cls == H5T_ENUM && h5u_is_bool_enum(type)) {
        info->dtype = H5ARK_BOOLEAN;
        info->is_integer = true;
        info->enum_bool = true;
        info->exact = true;
        return 0;
    } else if (cls == H5T_COMPOUND && info->pairs && h5u_is_complex_pair(type, &size)) {
        info->dtype = size == 4 ? H5ARK_FLOAT32 : H5ARK_FLOAT64;
        info->exact = false;
        return 0;
    } else if (cls == H5T_STRING) {
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "%s holds HDF5 strings; h5ark reads strings in Arkouda's layout (a "
                          "group with 'values' and 'segments')",
                          what);
    } else {
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "%s holds %s values; h5ark reads integers, floats and bools", what,
                          h5u_class_name(cls));
    }
    htri_t eq = H5Tequal(type, h5u_file_type(info->dtype));
    info->exact = eq > 0;
    return 0;
}

int h5u_inspect_dataset(hid_t dset, uint64_t file_size, const char *what, h5u_dset_info *info,
                        h5ark_error *err) {
    bool flat = info->flat, pairs = info->pairs;
    memset(info, 0, sizeof *info);
    info->flat = flat;
    info->pairs = pairs;
    hid_t type = H5Dget_type(dset);
    hid_t space = H5Dget_space(dset);
    hid_t dcpl = H5I_INVALID_HID;
    int rc = -1;
    if (type < 0 || space < 0) {
        h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s cannot be inspected", what);
        goto out;
    }
    H5S_class_t sc = H5Sget_simple_extent_type(space);
    int rank = sc == H5S_SIMPLE ? H5Sget_simple_extent_ndims(space) : 0;
    if (sc != H5S_SIMPLE || (rank != 1 && !(info->flat && rank > 1 && rank <= H5S_MAX_RANK))) {
        if (sc == H5S_SIMPLE)
            h5ark_fail(err, H5ARK_TYPE_ERROR, "%s has %d dimensions; h5ark reads 1-D arrays", what,
                       rank);
        else
            h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is a %s, not a 1-D array", what,
                       sc == H5S_SCALAR ? "scalar" : "dataset without data");
        goto out;
    }
    hsize_t dims[H5S_MAX_RANK];
    if (H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot read its shape", what);
        goto out;
    }
    info->count = dims[0];
    info->rank = (unsigned)rank;
    for (int i = 0; i < rank; i++) {
        info->dims[i] = dims[i];
        if (i > 0 && dims[i] && info->count > UINT64_MAX / dims[i]) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: its shape is an impossible size", what);
            goto out;
        }
        if (i > 0) info->count *= dims[i];
    }
    if (inspect_type(type, what, info, err)) goto out;
    size_t size = H5Tget_size(type);
    if (H5Tget_class(type) == H5T_COMPOUND) { /* a complex pair: counted in floats */
        if (info->count > UINT64_MAX / 2) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: its shape is an impossible size", what);
            goto out;
        }
        info->count *= 2;
        size /= 2;
    }
    if (size == 0 || info->count > UINT64_MAX / size) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: %llu elements is an impossible size", what,
                   (unsigned long long)info->count);
        goto out;
    }
    /* Only contiguous storage in this file has an offset (the library gives none for
     * chunked, compact, external or virtual storage), and it has no filters: then the
     * creation properties, costly to copy, need not be asked. H5Dget_offset alone is not
     * enough: with a user block, unallocated storage comes back as HADDR_UNDEF plus the
     * block's size. */
    H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
    haddr_t addr = H5Dget_space_status(dset, &status) >= 0 && status == H5D_SPACE_STATUS_ALLOCATED
                       ? H5Dget_offset(dset)
                       : HADDR_UNDEF;
    if (addr == HADDR_UNDEF) {
        dcpl = H5Dget_create_plist(dset);
        if (dcpl < 0) {
            h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s cannot be inspected", what);
            goto out;
        }
        /* raw data kept in other files (external storage, virtual datasets) could be
         * anywhere */
        if (H5Pget_external_count(dcpl) != 0 || H5Pget_layout(dcpl) == H5D_VIRTUAL) {
            h5ark_fail(err, H5ARK_FORBIDDEN,
                       "%s keeps its data in other files; h5ark reads only files inside its "
                       "data directory",
                       what);
            goto out;
        }
    }
    if (addr != HADDR_UNDEF) {
        uint64_t nbytes = info->count * size;
        if ((uint64_t)addr > file_size || nbytes > file_size - (uint64_t)addr) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                       "%s: its data lies past the end of the file (is the file truncated?)", what);
            goto out;
        }
        info->contiguous = true;
        info->offset = (uint64_t)addr;
    }
    H5Eclear2(H5E_DEFAULT); /* H5Dget_offset reports unallocated storage as an error */
    rc = 0;
out:
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    return rc;
}

int h5u_inspect(hid_t loc, const char *path, uint64_t file_size, const char *what,
                h5u_dset_info *info, h5ark_error *err) {
    memset(info, 0, sizeof *info);
    if (h5u_check_local(loc, path, what, err)) return -1;
    hid_t dset = H5Dopen2(loc, path, H5P_DEFAULT);
    if (dset < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s cannot be opened", what);
    int rc = h5u_inspect_dataset(dset, file_size, what, info, err);
    H5Dclose(dset);
    return rc;
}

/* ---- 1-D attributes ------------------------------------------------------------------- */

static int write_array_attr(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, size_t n,
                            const void *value, h5ark_error *err) {
    hsize_t dims[1] = {n};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t attr = space < 0 ? H5I_INVALID_HID
                           : H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
    int rc = attr >= 0 && (n == 0 || H5Awrite(attr, mem_type, value) >= 0) ? 0 : -1;
    if (rc) h5u_fail(err, H5ARK_IO_ERROR, "cannot write attribute '%s'", name);
    if (attr >= 0) H5Aclose(attr);
    if (space >= 0) H5Sclose(space);
    return rc;
}

int h5u_write_int_array_attr(hid_t obj, const char *name, const int64_t *v, size_t n,
                             h5ark_error *err) {
    return write_array_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, n, v, err);
}

int h5u_write_str_array_attr(hid_t obj, const char *name, const char *const *v, size_t n,
                             h5ark_error *err) {
    size_t width = 1;
    for (size_t i = 0; i < n; i++)
        if (strlen(v[i]) + 1 > width) width = strlen(v[i]) + 1;
    if (n > 0 && width > SIZE_MAX / n)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "attribute '%s' is too large", name);
    char *buf = calloc(n ? n : 1, width);
    if (!buf) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < n; i++)
        memcpy(buf + i * width, v[i], strlen(v[i]));
    hid_t str = H5Tcopy(H5T_C_S1);
    int rc = str >= 0 && H5Tset_size(str, width) >= 0 &&
                     H5Tset_strpad(str, H5T_STR_NULLTERM) >= 0 &&
                     H5Tset_cset(str, H5T_CSET_ASCII) >= 0
                 ? 0
                 : h5u_fail(err, H5ARK_INTERNAL, "cannot make the type of '%s'", name);
    if (rc == 0) rc = write_array_attr(obj, name, str, str, n, buf, err);
    if (str >= 0) H5Tclose(str);
    free(buf);
    return rc;
}

/* Open a 1-D (or scalar) attribute: its type, and its element count (at most max). */
static int open_array_attr(hid_t obj, const char *name, size_t max, const char *what, hid_t *attr,
                           hid_t *type, size_t *n, h5ark_error *err) {
    htri_t exists = H5Aexists(obj, name);
    if (exists < 0)
        return h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot look up attribute '%s'", what, name);
    if (exists == 0) return 0;
    *attr = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t space = *attr >= 0 ? H5Aget_space(*attr) : H5I_INVALID_HID;
    *type = *attr >= 0 ? H5Aget_type(*attr) : H5I_INVALID_HID;
    hssize_t np = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (space >= 0) H5Sclose(space);
    if (*type < 0 || np < 0 || rank > 1 || (size_t)np > max) {
        int rc =
            *type < 0 || np < 0
                ? h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot open attribute '%s'", what, name)
                : h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                             "%s: attribute '%s' is not a 1-D array of at most %zu elements", what,
                             name, max);
        if (*type >= 0) H5Tclose(*type);
        if (*attr >= 0) H5Aclose(*attr);
        return rc;
    }
    *n = (size_t)np;
    return 1;
}

int h5u_read_int_array_attr(hid_t obj, const char *name, int64_t *out, size_t max, size_t *n,
                            const char *what, h5ark_error *err) {
    hid_t attr = H5I_INVALID_HID, type = H5I_INVALID_HID;
    int r = open_array_attr(obj, name, max, what, &attr, &type, n, err);
    if (r <= 0) return r;
    if (H5Tget_class(type) != H5T_INTEGER)
        r = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: attribute '%s' does not hold integers", what,
                       name);
    else if (*n > 0 && H5Aread(attr, H5T_NATIVE_INT64, out) < 0)
        r = h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot read attribute '%s'", what, name);
    H5Tclose(type);
    H5Aclose(attr);
    return r;
}

void h5u_free_strs(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

int h5u_read_str_array_attr(hid_t obj, const char *name, char ***out, size_t *n, const char *what,
                            h5ark_error *err) {
    *out = NULL;
    hid_t attr = H5I_INVALID_HID, type = H5I_INVALID_HID;
    int r = open_array_attr(obj, name, 1u << 20, what, &attr, &type, n, err);
    if (r <= 0) return r;
    size_t width = H5Tget_size(type);
    char *buf = NULL;
    hid_t mem = H5I_INVALID_HID;
    if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) != 0 || width == 0 ||
        width > 65536) {
        r = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                       "%s: attribute '%s' is not an array of fixed-length strings", what, name);
        goto out;
    }
    buf = calloc(*n ? *n : 1, width);
    *out = calloc(*n ? *n : 1, sizeof **out);
    mem = H5Tcopy(type);
    if (!buf || !*out || mem < 0) {
        r = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    if (*n > 0 && H5Aread(attr, mem, buf) < 0) {
        r = h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s: cannot read attribute '%s'", what, name);
        goto out;
    }
    for (size_t i = 0; i < *n; i++) {
        const char *p = buf + i * width;
        size_t len = strnlen(p, width);
        if (!((*out)[i] = strndup(p, len))) {
            r = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
    }
out:
    if (r < 0) {
        h5u_free_strs(*out, *n);
        *out = NULL;
    }
    free(buf);
    if (mem >= 0) H5Tclose(mem);
    H5Tclose(type);
    H5Aclose(attr);
    return r;
}

int h5u_names_push(h5u_names *l, const char *name) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(name))) return -1;
    l->n++;
    return 0;
}

void h5u_names_free(h5u_names *l) {
    h5u_free_strs(l->v, l->n);
    *l = (h5u_names){0};
}

typedef struct {
    h5u_names *out;
    const char *skip;
    haddr_t **addrs; /* when wanted: in step with out */
    size_t cap;
    bool oom, too_many;
} link_walk;

static herr_t link_name_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    (void)g;
    link_walk *w = data;
    if (w->skip && strcmp(name, w->skip) == 0) return 0;
    if (w->out->n >= 100000) {
        w->too_many = true;
        return -1;
    }
    if (w->addrs && w->out->n >= w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        haddr_t *a = realloc(*w->addrs, cap * sizeof *a);
        if (!a) {
            w->oom = true;
            return -1;
        }
        *w->addrs = a;
        w->cap = cap;
    }
    if (h5u_names_push(w->out, name)) {
        w->oom = true;
        return -1;
    }
    if (w->addrs)
        (*w->addrs)[w->out->n - 1] = info->type == H5L_TYPE_HARD ? info->u.address : HADDR_UNDEF;
    return 0;
}

int h5u_link_names(hid_t g, const char *skip, h5u_names *out, const char *what, h5ark_error *err) {
    return h5u_link_addrs(g, skip, out, NULL, what, err);
}

int h5u_link_addrs(hid_t g, const char *skip, h5u_names *out, haddr_t **addrs, const char *what,
                   h5ark_error *err) {
    link_walk w = {.out = out, .skip = skip, .addrs = addrs};
    hsize_t idx = 0;
    if (addrs) *addrs = NULL;
    if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, link_name_cb, &w) >= 0) return 0;
    if (w.oom) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory listing %s", what);
    if (w.too_many)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "%s has more than 100000 children", what);
    return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot list %s", what);
}

/* ---- what lshdf shows ---------------------------------------------------------------- */

/* numpy-style name of an element type; descriptive names for what Arkouda cannot hold. */
void h5u_type_name(hid_t type, char *buf, size_t len) {
    size_t size = H5Tget_size(type);
    switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
        bool sign = H5Tget_sign(type) != H5T_SGN_NONE;
        snprintf(buf, len, "%sint%zu", sign ? "" : "u", size * 8);
        return;
    }
    case H5T_FLOAT: snprintf(buf, len, "float%zu", size * 8); return;
    case H5T_ENUM: snprintf(buf, len, "%s", h5u_is_bool_enum(type) ? "bool" : "enum"); return;
    case H5T_STRING: snprintf(buf, len, "string"); return;
    case H5T_COMPOUND: snprintf(buf, len, "compound"); return;
    case H5T_VLEN: snprintf(buf, len, "vlen"); return;
    case H5T_REFERENCE: snprintf(buf, len, "reference"); return;
    case H5T_OPAQUE: snprintf(buf, len, "opaque"); return;
    case H5T_BITFIELD: snprintf(buf, len, "bitfield"); return;
    case H5T_ARRAY: snprintf(buf, len, "array"); return;
    case H5T_TIME: snprintf(buf, len, "time"); return;
    default:
        H5Eclear2(H5E_DEFAULT);
        snprintf(buf, len, "unknown");
        return;
    }
}

/* Open the child `name` of group gid if it is a hard link to an object of type want
 * (never through soft or external links); -1 when absent or of another kind. */
hid_t h5u_open_child(hid_t gid, const char *name, H5O_type_t want) {
    hid_t oid = -1;
    H5L_info_t li;
    if (H5Lexists(gid, name, H5P_DEFAULT) > 0 && H5Lget_info(gid, name, &li, H5P_DEFAULT) >= 0 &&
        li.type == H5L_TYPE_HARD) {
        oid = H5Oopen_by_addr(gid, li.u.address);
        H5O_info_t oi;
        if (oid >= 0 && (H5Oget_info2(oid, &oi, H5O_INFO_BASIC) < 0 || oi.type != want)) {
            H5Oclose(oid);
            oid = -1;
        }
    }
    H5Eclear2(H5E_DEFAULT);
    return oid;
}

/* Length of a rank-1 dataset, -1 otherwise. */
int64_t h5u_dataset_len(hid_t did) {
    hid_t space = H5Dget_space(did);
    int64_t n = -1;
    hsize_t dims[1];
    if (space >= 0 && H5Sget_simple_extent_type(space) == H5S_SIMPLE &&
        H5Sget_simple_extent_ndims(space) == 1 && H5Sget_simple_extent_dims(space, dims, NULL) == 1)
        n = (int64_t)dims[0];
    if (space >= 0) H5Sclose(space);
    H5Eclear2(H5E_DEFAULT);
    return n;
}

/* Only built-in filters: reading through anything else would load plugins. */
static bool filters_builtin(hid_t dcpl) {
    int n = H5Pget_nfilters(dcpl);
    if (n < 0) return false;
    for (int i = 0; i < n; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        H5Z_filter_t f = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL);
        if (f != H5Z_FILTER_DEFLATE && f != H5Z_FILTER_SHUFFLE && f != H5Z_FILTER_FLETCHER32)
            return false;
    }
    return true;
}

/* The NULs of a byte dataset (Strings without `segments` count their strings so, as
 * Arkouda does); -1 when it has more than max_bytes, is unreadable, or needs a filter
 * that is not built in. */
int64_t h5u_count_nuls(hid_t did, uint64_t max_bytes) {
    int64_t len = h5u_dataset_len(did);
    if (len < 0 || (uint64_t)len > max_bytes) return -1;
    hid_t dcpl = H5Dget_create_plist(did);
    bool ok = dcpl >= 0 && filters_builtin(dcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (!ok) {
        H5Eclear2(H5E_DEFAULT);
        return -1;
    }
    const hsize_t most = (hsize_t)4 << 20; /* read at a time */
    hsize_t step = (hsize_t)len < most ? (hsize_t)len : most;
    unsigned char *buf = malloc(step ? step : 1);
    hid_t fspace = H5Dget_space(did);
    hid_t mspace = H5Screate_simple(1, &step, NULL);
    int64_t count = buf && fspace >= 0 && mspace >= 0 ? 0 : -1;
    for (hsize_t at = 0; count >= 0 && at < (hsize_t)len; at += step) {
        hsize_t n = (hsize_t)len - at < step ? (hsize_t)len - at : step;
        hsize_t zero = 0;
        if (H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &at, NULL, &n, NULL) < 0 ||
            H5Sselect_hyperslab(mspace, H5S_SELECT_SET, &zero, NULL, &n, NULL) < 0 ||
            H5Dread(did, H5T_NATIVE_UCHAR, mspace, fspace, H5P_DEFAULT, buf) < 0) {
            count = -1;
            break;
        }
        for (hsize_t i = 0; i < n; i++)
            count += buf[i] == 0;
    }
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    free(buf);
    H5Eclear2(H5E_DEFAULT);
    return count;
}
