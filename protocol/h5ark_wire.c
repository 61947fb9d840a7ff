/* Names of the protocol's error codes, dtypes and objtypes, and the error record. */
#include "h5ark_wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const code_names[H5ARK_CODE_COUNT] = {
    "ok",        "bad_request",    "unknown_command", "unauthorized",
    "not_found", "already_exists", "type_error",      "schema_error",
    "io_error",  "forbidden",      "resource_limit",  "busy",
    "internal"};

const char *h5ark_code_name(h5ark_code code) {
    return (unsigned)code < H5ARK_CODE_COUNT ? code_names[code] : "internal";
}

h5ark_code h5ark_code_from_name(const char *name) {
    for (int i = 0; i < H5ARK_CODE_COUNT; i++)
        if (strcmp(code_names[i], name) == 0) return (h5ark_code)i;
    return H5ARK_INTERNAL;
}

int h5ark_fail(h5ark_error *err, h5ark_code code, const char *fmt, ...) {
    if (!err) return -1;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

int h5ark_fail_context(h5ark_error *err, const char *fmt, ...) {
    if (!err) return -1;
    char prefix[512], old[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    /* the result is cut at the message size, which is what a log line wants */
    size_t n = strlen(prefix);
    if (n > sizeof err->message - 3) n = sizeof err->message - 3;
    memcpy(err->message, prefix, n);
    memcpy(err->message + n, ": ", 2);
    size_t rest = sizeof err->message - n - 3;
    size_t m = strnlen(old, rest);
    memcpy(err->message + n + 2, old, m);
    err->message[n + 2 + m] = '\0';
    return -1;
}

static const struct {
    const char *name;
    size_t size;
} dtypes[H5ARK_DTYPE_COUNT] = {
    {"int8", 1},   {"int16", 2},  {"int32", 4},  {"int64", 8},   {"uint8", 1},
    {"uint16", 2}, {"uint32", 4}, {"uint64", 8}, {"float32", 4}, {"float64", 8},
    {"bool", 1},   {"str", 1},    {"bigint", 8},
};

const char *h5ark_dtype_name(h5ark_dtype dtype) {
    return (unsigned)dtype < H5ARK_DTYPE_COUNT ? dtypes[dtype].name : "unknown";
}

bool h5ark_dtype_from_name(const char *name, h5ark_dtype *out) {
    for (int i = 0; i < H5ARK_DTYPE_COUNT; i++)
        if (strcmp(dtypes[i].name, name) == 0) {
            *out = (h5ark_dtype)i;
            return true;
        }
    return false;
}

size_t h5ark_dtype_size(h5ark_dtype dtype) {
    return (unsigned)dtype < H5ARK_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

bool h5ark_dtype_is_signed(h5ark_dtype d) {
    return d >= H5ARK_INT8 && d <= H5ARK_INT64;
}
bool h5ark_dtype_is_unsigned(h5ark_dtype d) {
    return d >= H5ARK_UINT8 && d <= H5ARK_UINT64;
}
bool h5ark_dtype_is_float(h5ark_dtype d) {
    return d == H5ARK_FLOAT32 || d == H5ARK_FLOAT64;
}

static const char *const objtype_names[H5ARK_OBJTYPE_COUNT] = {
    "pdarray", "strings",   "arrayview", "segarray",   "categorical",
    "groupby", "dataframe", "index",     "multiindex", "awkward"};

const char *h5ark_objtype_name(h5ark_objtype t) {
    return (unsigned)t < H5ARK_OBJTYPE_COUNT ? objtype_names[t] : "unknown";
}

bool h5ark_objtype_from_name(const char *name, h5ark_objtype *out) {
    for (int i = 0; i < H5ARK_OBJTYPE_COUNT; i++)
        if (strcmp(objtype_names[i], name) == 0) {
            *out = (h5ark_objtype)i;
            return true;
        }
    return false;
}
