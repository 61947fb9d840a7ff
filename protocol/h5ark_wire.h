/* The wire vocabulary shared by the daemon and the C client: protocol version, error
 * codes, dtypes and objtypes with their names, and the error record every fallible
 * function fills. See PROTOCOL.md beside this file. */
#ifndef H5ARK_WIRE_H
#define H5ARK_WIRE_H

#include "h5ark_version.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define H5ARK_PROTOCOL_VERSION 1
/* Payload frames are about this size; see PROTOCOL.md. */
#define H5ARK_FRAME_BYTES (1u << 20)

typedef enum {
    H5ARK_OK = 0,
    H5ARK_BAD_REQUEST,
    H5ARK_UNKNOWN_COMMAND,
    H5ARK_UNAUTHORIZED,
    H5ARK_NOT_FOUND,
    H5ARK_ALREADY_EXISTS,
    H5ARK_TYPE_ERROR,
    H5ARK_SCHEMA_ERROR,
    H5ARK_IO_ERROR,
    H5ARK_FORBIDDEN,
    H5ARK_RESOURCE_LIMIT,
    H5ARK_BUSY,
    H5ARK_INTERNAL,
    H5ARK_CODE_COUNT
} h5ark_code;

typedef struct {
    h5ark_code code;
    char message[1024];
} h5ark_error;

const char *h5ark_code_name(h5ark_code code);
h5ark_code h5ark_code_from_name(const char *name); /* H5ARK_INTERNAL when unknown */

/* Fill err (if not NULL) and return -1, so callers can write `return h5ark_fail(...)`. */
int h5ark_fail(h5ark_error *err, h5ark_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefix an existing message with context ("reading x.h5: ..."); returns -1. */
int h5ark_fail_context(h5ark_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

typedef enum {
    H5ARK_INT8,
    H5ARK_INT16,
    H5ARK_INT32,
    H5ARK_INT64,
    H5ARK_UINT8,
    H5ARK_UINT16,
    H5ARK_UINT32,
    H5ARK_UINT64,
    H5ARK_FLOAT32,
    H5ARK_FLOAT64,
    H5ARK_BOOLEAN,
    H5ARK_STRING, /* "str": the dtype of strings objects */
    H5ARK_BIGINT, /* "bigint": arbitrary-width integers stored as uint64 limbs */
    H5ARK_DTYPE_COUNT
} h5ark_dtype;

const char *h5ark_dtype_name(h5ark_dtype dtype);
bool h5ark_dtype_from_name(const char *name, h5ark_dtype *out);
size_t h5ark_dtype_size(h5ark_dtype dtype); /* bytes per element; 1 for str (bytes), 8 per
                                               bigint limb */
bool h5ark_dtype_is_signed(h5ark_dtype dtype);
bool h5ark_dtype_is_unsigned(h5ark_dtype dtype); /* unsigned integers, not bool */
bool h5ark_dtype_is_float(h5ark_dtype dtype);

typedef enum {
    H5ARK_PDARRAY,
    H5ARK_STRINGS,
    H5ARK_ARRAYVIEW,
    H5ARK_SEGARRAY,
    H5ARK_CATEGORICAL,
    H5ARK_GROUPBY,
    H5ARK_DATAFRAME,
    H5ARK_INDEX,
    H5ARK_MULTIINDEX,
    H5ARK_AWKWARD, /* an awkward 2 array: form, length and buffers */
    H5ARK_OBJTYPE_COUNT
} h5ark_objtype;

const char *h5ark_objtype_name(h5ark_objtype objtype);
bool h5ark_objtype_from_name(const char *name, h5ark_objtype *out);

#endif
