/* The objects the daemon holds. Every object is built from distributed arrays (darray):
 * one shard per locale, allocated by that locale's thread. pdarray: `values` holds the
 * elements, block-distributed. strings: `segments` (int64) holds each string's start
 * offset in the whole concatenated byte stream, block-distributed by string; `values`
 * (uint8) holds the bytes, each string followed by one NUL, sharded so that every string
 * lies whole on the locale that holds its segment. Objects are immutable once published. */
#ifndef H5ARK_OBJECT_H
#define H5ARK_OBJECT_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdatomic.h>
#include <stdint.h>

#define OBJECT_MAX_DIMS 32

typedef struct {
    void *data;     /* count * itemsize bytes; NULL when count == 0 */
    uint64_t start; /* global index of the first element */
    uint64_t count;
} shard;

typedef struct {
    h5ark_dtype dtype;
    size_t itemsize;
    uint64_t size;
    int nshards; /* = locales_count() */
    shard *shards;
    uint64_t reserved; /* bytes accounted in the registry's memory total */
} darray;

/* Allocate a darray whose shard b holds counts[b] elements (counts == NULL: block
 * distribution of `size`). Memory is reserved against --max-memory first
 * (resource_limit), then each locale allocates its own shard. Contents are undefined. */
darray *darray_new(h5ark_dtype dtype, uint64_t size, const uint64_t *counts, h5ark_error *err);
void darray_free(darray *a);
/* The shard holding global element i (a binary search over shard starts). */
int darray_shard_of(const darray *a, uint64_t i);

typedef struct object {
    atomic_int refs;
    char *name; /* set when published */
    h5ark_objtype objtype;
    h5ark_dtype dtype; /* element dtype; H5ARK_STRING for strings */
    uint64_t size;     /* elements, or strings */
    unsigned ndim;
    uint64_t shape[OBJECT_MAX_DIMS];
    darray *values;
    darray *segments; /* strings only */
} object;

/* A pdarray of `size` elements, block-distributed, contents undefined. */
object *object_new_pdarray(h5ark_dtype dtype, uint64_t size, h5ark_error *err);
/* A strings object of `nstrings` strings, block-distributed; byte_counts[b] is the number
 * of bytes (NULs included) the strings on locale b take. Contents undefined. */
object *object_new_strings(uint64_t nstrings, const uint64_t *byte_counts, h5ark_error *err);

object *object_ref(object *obj);
void object_release(object *obj); /* frees at the last reference; NULL is fine */

/* Total bytes of an object's data (what `nbytes` reports). */
uint64_t object_nbytes(const object *obj);
/* The protocol's object descriptor: name, objtype, dtype, size, shape, ndim, itemsize,
 * nbytes. NULL only when out of memory. */
h5ark_value *object_describe(const object *obj);

/* Maximum number of elements of any object; larger sizes are refused before allocating
 * (a request for 2^62 elements is an absurd size, not an allocation to try). */
#define OBJECT_MAX_ELEMENTS (UINT64_C(1) << 48)

#endif
