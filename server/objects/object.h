/* The objects the daemon holds. Every object is built from distributed arrays (darray):
 * one shard per locale, allocated by that locale's thread. pdarray: `values` holds the
 * elements, block-distributed. strings: `segments` (int64) holds each string's start
 * offset in the whole concatenated byte stream, block-distributed by string; `values`
 * (uint8) holds the bytes, each string followed by one NUL (a string may hold NULs of its
 * own: it ends a byte before the next offset), sharded so that every string lies whole on
 * the locale that holds its segment. arrayview: a pdarray's `values` with an
 * N-d `shape`. Composites (segarray, categorical, groupby, dataframe, index, multiindex,
 * and bigint pdarrays, whose limbs are uint64 pdarrays) hold no arrays of their own: they
 * are an ordered list of named components, each an object. Objects are immutable once
 * published, so components are shared by reference, never copied. */
#ifndef H5ARK_OBJECT_H
#define H5ARK_OBJECT_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define OBJECT_MAX_DIMS 32

typedef struct {
    void *data;     /* count * itemsize bytes; NULL when count == 0 */
    uint64_t start; /* global index of the first element */
    uint64_t count;
} shard;

typedef struct {
    atomic_int refs; /* an arrayview and its pdarray share one darray */
    h5ark_dtype dtype;
    size_t itemsize;
    uint64_t size;
    int nshards; /* = locales_count() */
    shard *shards;
    uint64_t reserved; /* bytes accounted in the registry's memory total */
    /* The owner charged for it (every rank's bytes, `charged`); NULL: users off. */
    struct registry_account *account;
    uint64_t charged;
} darray;

/* Allocate a darray whose shard b holds counts[b] elements (counts == NULL: block
 * distribution of `size`). Memory is reserved against --max-memory first
 * (resource_limit), then each shard takes a cached block of its locale (shardcache.h) or
 * is allocated by its locale. Contents are undefined and may be an earlier array's bytes:
 * builders write every element. */
darray *darray_new(h5ark_dtype dtype, uint64_t size, const uint64_t *counts, h5ark_error *err);
darray *darray_ref(darray *a);
void darray_free(darray *a); /* drops one reference; at the last, shards go to the cache */
/* The shard holding global element i (a binary search over shard starts). */
int darray_shard_of(const darray *a, uint64_t i);

typedef struct object object;

typedef struct {
    char *name;
    object *obj;
} object_component;

/* Tags of int64/uint64 pdarrays that Arkouda stores with their own ObjType. */
#define OBJECT_TAG_DATETIME  "datetime64[ns]"
#define OBJECT_TAG_TIMEDELTA "timedelta64[ns]"
#define OBJECT_TAG_IPV4      "ipv4"

struct object {
    atomic_int refs;
    char *name;        /* set when published; components are named "<parent>/<component>" */
    const char *owner; /* set when published with users on (kept by the registry) */
    bool registered;   /* a name given by `register` (Arkouda's registry) */
    h5ark_objtype objtype;
    h5ark_dtype dtype; /* element dtype; H5ARK_STRING for strings */
    uint64_t size;     /* elements, strings, sub-arrays or rows */
    unsigned ndim;
    uint64_t shape[OBJECT_MAX_DIMS];
    darray *values;
    darray *segments;             /* strings only */
    object_component *components; /* composites, in order */
    size_t ncomponents;
    const char *tag;    /* pdarray: NULL or one of OBJECT_TAG_* (static strings) */
    char *na_value;     /* categorical: the text of the NA category */
    int64_t max_bits;   /* bigint: -1 when unbounded */
    h5ark_value *extra; /* further descriptor keys of the type (a map), or NULL */
    /* Bytes gathered from other ranks for a reply (rank 0), freed with the object and
     * accounted against --max-memory; NULL otherwise. */
    void *scratch;
    uint64_t scratch_reserved;
};

/* A pdarray of `size` elements, block-distributed, contents undefined. */
object *object_new_pdarray(h5ark_dtype dtype, uint64_t size, h5ark_error *err);
/* The same with shard b holding counts[b] elements (a layout of the caller's, such as an
 * awkward array's rows). */
object *object_new_pdarray_counts(h5ark_dtype dtype, uint64_t size, const uint64_t *counts,
                                  h5ark_error *err);
/* A strings object of `nstrings` strings, block-distributed; byte_counts[b] is the number
 * of bytes (NULs included) the strings on locale b take. Contents undefined. */
object *object_new_strings(uint64_t nstrings, const uint64_t *byte_counts, h5ark_error *err);

/* A composite with no components yet; add them with object_add_component. */
object *object_new_composite(h5ark_objtype objtype, h5ark_dtype dtype, uint64_t size,
                             h5ark_error *err);
/* Append component `name` (takes a new reference to child). */
int object_add_component(object *obj, const char *name, object *child, h5ark_error *err);
/* The component called `name`, or NULL (no new reference). */
object *object_component_get(const object *obj, const char *name);
/* Set a further descriptor key (takes val). */
int object_set_extra(object *obj, const char *key, h5ark_value *val, h5ark_error *err);

/* A new object sharing obj's arrays and components (no bytes copied, nothing charged):
 * the same data under a second name. NULL with err when out of memory. */
object *object_twin(const object *obj, h5ark_error *err);

object *object_ref(object *obj);
void object_release(object *obj); /* frees at the last reference; NULL is fine */

/* Total bytes of an object's data (what `nbytes` reports). */
uint64_t object_nbytes(const object *obj);
/* The protocol's object descriptor: name, objtype, dtype, size, shape, ndim, itemsize,
 * nbytes, `owner` with users on (another's object named "OWNER/NAME"), `registered`
 * when registered, and for composites `components` (name -> descriptor, in order, each
 * named "<parent>/<component>"), plus `tag`, `na_value`, `max_bits` and the extra keys
 * where set. NULL only when out of memory. */
h5ark_value *object_describe(const object *obj);
/* The same, under another name (a component reached by its path). */
h5ark_value *object_describe_as(const object *obj, const char *name);

/* Several ranks, every rank calling: a copy of obj on rank 0 (*whole; NULL elsewhere) whose
 * every shard is readable there, for code that rank 0 runs alone over a whole object (a file
 * format rank 0 writes by itself). Rank 0's own shards are shared, the other ranks' gathered
 * (reserved against rank 0's --max-memory); the metadata is obj's, so obj must outlive it.
 * Never published; free with object_whole_free. */
int object_gather_whole(const object *obj, object **whole, h5ark_error *err);
void object_whole_free(object *whole);

/* Maximum number of elements of any object; larger sizes are refused before allocating
 * (a request for 2^62 elements is an absurd size, not an allocation to try). */
#define OBJECT_MAX_ELEMENTS (UINT64_C(1) << 48)

#endif
