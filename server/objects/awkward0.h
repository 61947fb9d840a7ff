/* awkward0 schemas (awkward0/persist.py): the JSON that says how awkward0 rebuilds an array
 * from its blobs, as calls of named Python functions. h5ark never runs anything it names:
 * the schema is interpreted, and every function it names must first match the allow-list
 * the way awkward0's own reader matches it (fnmatch of each part, pairwise, over the
 * shorter of spec and pattern). A pickled Python object (`python` node) is never read. */
#ifndef H5ARK_AWKWARD0_H
#define H5ARK_AWKWARD0_H

#include "h5ark_wire.h"

#include <stddef.h>
#include <stdint.h>

/* Limits of a schema: it describes an array, it is not one. */
#define AK0_MAX_SCHEMA_BYTES (16u << 20)
#define AK0_MAX_DEPTH        256

/* One allow-list entry: a function spec pattern such as {"awkward0", "*Array"}. */
typedef struct {
    const char *const *parts;
    size_t n;
} ak0_pattern;

/* awkward0's default whitelist (persist.whitelist, 0.15.5). */
extern const ak0_pattern ak0_default_whitelist[];
extern const size_t ak0_default_whitelist_len;

/* Check every function the schema names (`call` and `function` nodes, in the order
 * awkward0's reader reaches them) against `wl` (NULL: the default). forbidden with
 * awkward0's words ("callable not in whitelist; ...") for the first that matches no
 * entry, and for a `python` node; wl == NULL means the default (an empty list allows
 * nothing); schema_error for a schema that is not awkward0's JSON
 * (no `awkward0`/`awkward` key, not JSON, too deep). */
int ak0_check_schema(const char *json, size_t len, const ak0_pattern *wl, size_t nwl,
                     h5ark_error *err);

/* The top-level call of a schema ("awkward0.JaggedArray.fromcounts"), for messages; "" when
 * there is none. */
void ak0_top_call(const char *json, size_t len, char *out, size_t size);

/* ---- interpretation: an allowed schema as an awkward 2 form and buffers ---------------- */

/* The bytes of blob `key` (as the schema's `read` names it). 0, or -1 when missing. */
typedef int (*ak0_blob_fn)(void *ctx, const char *key, const unsigned char **data, uint64_t *n);

typedef struct {
    char *form; /* awkward 2 form JSON, malloc'd */
    uint64_t length;
    size_t n; /* buffers, named "<form_key>-<attribute>" */
    char **names;
    unsigned char **data;
    uint64_t *nbytes;
    uint64_t reserved; /* of --max-memory, given back by ak0_result_free */
} ak0_result;

/* Evaluate a schema (already checked by ak0_check_schema) over its blobs: numpy.frombuffer
 * of simple, sub-array and record dtypes (either byte order), zlib, lzma and lz4.block
 * blobs, JaggedArray (fromcounts, fromoffsets, starts/stops), Table.frompairs, StringArray,
 * MaskedArray, BitMaskedArray, IndexedArray, IndexedMaskedArray, UnionArray, ChunkedArray
 * (joined); an array referenced twice is copied. What has no awkward 2 equivalent here (a
 * cycle, an object or virtual array, other calls) is type_error naming it; blobs missing,
 * shorter than the schema says or not decompressing are schema_error; what it makes counts
 * against --max-memory (registry_reserve: resource_limit). */
int ak0_interpret(const char *json, size_t len, ak0_blob_fn blob, void *ctx, ak0_result *out,
                  h5ark_error *err);
void ak0_result_free(ak0_result *r);

#endif
