/* The awkward0 schema interpreter's values and helpers, shared by its files, from the
 * bottom: awkward0_values.c (values and their memory), awkward0_build.c (the arrays a call
 * makes from its evaluated arguments: numpy buffers, decompressed blobs, lists, unions,
 * joined chunks) and awkward0.c (evaluation, the calls by name), each calling only those
 * below it. Not for use outside them; the interface is awkward0.h. */
#ifndef H5ARK_AWKWARD0_INTERP_H
#define H5ARK_AWKWARD0_INTERP_H

#include "awkward0.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* zlib output is bounded: a blob is a part of one array. */
#define AK0_MAX_BLOB (UINT64_C(1) << 32)

typedef enum { V_JSON, V_DTYPE, V_BYTES, V_ARRAY, V_LIST } vkind;

typedef struct val val;
struct val {
    vkind kind;
    json_t *json; /* V_JSON: borrowed from the schema */
    /* V_DTYPE */
    char prim[32];
    size_t itemsize;
    bool swap, is_int, is_bool;
    uint64_t inner;
    json_t *shape; /* inner shape (a new array) */
    val **fields;  /* a record dtype's fields, packed in order (names in fnames) */
    const char **fnames;
    size_t nfields;
    /* V_BYTES (borrowed from a blob or from ctx->blocks) */
    const unsigned char *bytes;
    uint64_t nbytes;
    /* V_ARRAY: a form node (owned until given to a parent), its length, and for a
     * NumpyArray the buffer holding its data */
    json_t *form;
    uint64_t length;
    int buf;
    val *dt; /* a NumpyArray's dtype */
    /* V_LIST */
    val **items;
    size_t nitems;
    bool used;     /* an array given to a parent: a second use gets a copy (clone) */
    json_t *given; /* its form as it was given, for those copies */
};

typedef struct {
    ak0_blob_fn blob;
    void *bctx;
    h5ark_error *err;
    void **allocs; /* everything to free at the end */
    size_t nallocs, capallocs;
    val **vals; /* every value, whose forms not given to a parent are freed at the end */
    size_t nvals, capvals;
    struct {
        char name[40];
        unsigned char *data;
        uint64_t nbytes;
        bool out; /* false: turned into another buffer, kept for a shared array's copy */
    } * bufs;
    size_t nbufs, capbufs;
    struct {
        json_int_t id;
        val *v; /* NULL: being evaluated */
    } * memo;
    size_t nmemo, capmemo;
    int next_key;
    json_t *owned;     /* JSON made along the way (shapes), freed at the end */
    uint64_t reserved; /* bytes made, accounted against --max-memory */
    bool limited;      /* a reservation was refused (the error says so) */
} interp;

/* The schema's JSON, checked to be an awkward0 schema (awkward0_allow.c). */
json_t *ak0_load(const char *json, size_t len, h5ark_error *err);

/* ---- awkward0_values.c: values and their memory ---- */

/* Count n bytes the schema makes against --max-memory. */
int ak0_reserve(interp *c, uint64_t n);
/* p (malloc'd), freed at the end; NULL when p is, or out of memory (p freed). */
void *ak0_keep(interp *c, void *p);
val *ak0_new_val(interp *c, vkind kind);
int ak0_oom(interp *c);
/* type_error: `what` has no awkward 2 equivalent h5ark reads. */
int ak0_not_read(interp *c, const char *what);
/* A new buffer "<key>-<attr>" taking `data` (malloc'd); its index, or -1. */
int ak0_add_buf(interp *c, const char *key, const char *attr, unsigned char *data, uint64_t nbytes);
/* Not in the result; its bytes stay until the end, as a shared array's copy may need them. */
void ak0_drop_buf(interp *c, int i);
/* A fresh form key, "node<N>". */
void ak0_next_key(interp *c, char *out, size_t size);
/* numpy dtype text: "int64", "<i8", ">u2", "bool", "|u1", "float32", ... */
bool ak0_parse_dtype(const char *s, val *d);
/* An array for a parent: every use after the first gets a copy of its own. */
val *ak0_take(interp *c, val *v);
/* v when it is of `kind`, else type_error naming `what`; NULL when v is. */
val *ak0_want(interp *c, val *v, vkind kind, const char *what);
/* The integers of a 1-D integer (or bool) NumpyArray, as int64 (malloc'd). */
int64_t *ak0_ints_of(interp *c, val *a, const char *what);
/* A new array value of form `form` (taken) and `length`. */
val *ak0_array_val(interp *c, json_t *form, uint64_t length);
/* A form node of class `cls` with form_key `key`. */
json_t *ak0_form_node(const char *cls, const char *key);
/* j's integer, or def when j is not one. */
int64_t ak0_json_int_or(json_t *j, int64_t def);

/* ---- awkward0_build.c: the arrays of the calls ---- */

/* int64 values as a new buffer "<key>-<attr>" (v taken). */
int ak0_int64_buf(interp *c, const char *key, const char *attr, int64_t *v, uint64_t n);
/* numpy.frombuffer / awkward0.util.frombuffer of bytes b, dtype d and count n (JSON) */
val *ak0_frombuffer(interp *c, val *b, val *d, json_t *n);
/* zlib.decompress of bytes b */
val *ak0_inflate(interp *c, val *b);
/* lzma.decompress: .xz or .lzma, as Python's FORMAT_AUTO takes them */
val *ak0_unxz(interp *c, val *b);
/* lz4.block.decompress: the size (4 bytes, little-endian) then one LZ4 block */
val *ak0_unlz4(interp *c, val *b);
/* A ListOffsetArray of content from counts (or offsets, given) with the form's parameters. */
val *ak0_list_offsets(interp *c, val *counts, val *content, json_t *params, json_t *content_params,
                      bool given);
/* A UnionArray of the arrays in cs with the tags and index the caller made (taken over:
 * freed on failure); rc is the caller's outcome so far. */
val *ak0_union_val(interp *c, int rc, val *t, val *x, val *cs, int8_t *tags, int64_t *xv);
/* ChunkedArray: its chunks (a list) joined into one array; counts (JSON, NULL: none) are
 * checked against them; depth: the call's, for the joined forms' nesting. */
val *ak0_chunked(interp *c, val *cs, json_t *counts, int depth);

#endif
