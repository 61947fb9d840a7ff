/* awkward 2 forms: the JSON that describes an awkward array's node tree (its classes,
 * primitives and buffer names), parsed into a tree the daemon checks buffers against.
 * Parsing never trusts the text: unknown classes and primitives, wrong key types, and
 * trees past the limits below are bad_request errors naming the node. */
#ifndef H5ARK_AWKWARD_FORM_H
#define H5ARK_AWKWARD_FORM_H

#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits: a form is a description, not data; real ones are far below these. */
#define AK_MAX_FORM_BYTES (1u << 20)
#define AK_MAX_DEPTH      64
#define AK_MAX_NODES      4096
#define AK_MAX_BUFFERS    8192
#define AK_MAX_KEY_BYTES  256

typedef enum {
    AK_NUMPY,
    AK_LISTOFFSET,
    AK_LIST,
    AK_REGULAR,
    AK_RECORD,
    AK_INDEXED,
    AK_INDEXEDOPTION,
    AK_BYTEMASKED,
    AK_BITMASKED,
    AK_UNMASKED,
    AK_UNION,
    AK_EMPTY,
    AK_CLASS_COUNT
} ak_class;

/* The integer types of offsets, starts, stops, index, tags and masks. */
typedef enum { AK_I8, AK_U8, AK_I32, AK_U32, AK_I64 } ak_index;

/* What one buffer of a node is called and holds. */
typedef enum {
    AK_BUF_DATA,
    AK_BUF_OFFSETS,
    AK_BUF_STARTS,
    AK_BUF_STOPS,
    AK_BUF_INDEX,
    AK_BUF_TAGS,
    AK_BUF_MASK
} ak_buffer_role;

typedef struct ak_node ak_node;
struct ak_node {
    ak_class cls;
    char *form_key; /* NULL only for nodes without buffers */
    int id;         /* preorder number, for messages when there is no form_key */
    /* NumpyArray: each item is `per_item` elements of `dtype` (complex: 2 floats,
     * datetime: one int64), times `inner` (the product of inner_shape). */
    char primitive[32];
    h5ark_dtype dtype;
    unsigned per_item;
    uint64_t inner;
    unsigned inner_ndim;
    uint64_t inner_shape[32];
    ak_index index_type; /* offsets / starts+stops / index (Union: index; tags are i8) */
    uint64_t size;       /* RegularArray */
    bool valid_when, lsb_order;
    char *array_param; /* parameters.__array__ when given (string, bytestring, char, ...) */
    ak_node **contents;
    size_t ncontents;
    char **fields; /* RecordArray: ncontents names, or NULL for a tuple */
};

typedef struct {
    ak_node *root;
    size_t nnodes, nbuffers;
    char *json; /* the form as given (NUL-terminated), kept for get, tohdf and lshdf */
} ak_form;

const char *ak_class_name(ak_class cls);
const char *ak_index_name(ak_index t);
size_t ak_index_size(ak_index t);
const char *ak_role_name(ak_buffer_role role);

/* Parse a form. bad_request naming what is wrong; NULL on failure. */
ak_form *ak_form_parse(const char *json, size_t len, h5ark_error *err);
void ak_form_free(ak_form *form);

/* A node's buffers in awkward's order: roles[0..n). */
size_t ak_node_buffers(const ak_node *n, ak_buffer_role roles[3]);
/* The element dtype and elements per node row of a buffer ("per row": the offsets' one
 * extra element is not counted). */
h5ark_dtype ak_buffer_dtype(const ak_node *n, ak_buffer_role role);
/* "<form_key>-<role>", written into out. */
void ak_buffer_name(const ak_node *n, ak_buffer_role role, char *out, size_t size);
/* How a message names a node: its form_key, else its class and preorder number. */
void ak_node_label(const ak_node *n, char *out, size_t size);

#endif
