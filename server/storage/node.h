/* The read tree: what readhdf found of each requested object across the files, before any
 * data is read. A leaf's sources say which elements of the concatenation come from which
 * dataset of which file; a composite is a node with one kid per component. The file
 * probes build it, send it to the daemon (read_probe.c) and the families turn it into
 * objects. Below the schema families; above only the HDF5 helpers. */
#ifndef H5ARK_STORAGE_NODE_H
#define H5ARK_STORAGE_NODE_H

#include "h5ark_wire.h"
#include "hdf5_util.h"
#include "objects/object.h"

#include <stdbool.h>
#include <stdint.h>

/* One file's share of a component (pdarray data, strings bytes or strings segments). */
typedef struct {
    int file;           /* index into the request's file list (what tag_data reports) */
    const char *path;   /* absolute; owned by the caller of storage_read */
    char *dset;         /* path of the dataset inside the file */
    uint64_t start;     /* index of its first element in the concatenation */
    uint64_t first;     /* index in the dataset of its first element (a ranged read skips some) */
    h5u_dset_info info; /* info.count: how many of the dataset's elements it holds */
    int64_t rebase; /* added to every element after reading (segments: the file's value offset) */
} read_src;

/* A component concatenated over files, read into memory as `dtype`. */
typedef struct {
    read_src *src;
    size_t n, cap;
    uint64_t total;
    h5ark_dtype dtype;
} read_part;

/* Append a file's share (count elements), taking ownership of dset. */
int read_part_add(read_part *part, int file, const char *path, char *dset,
                  const h5u_dset_info *info, int64_t rebase, h5ark_error *err);
void read_part_clear(read_part *part);
/* The bytes `count` elements of src take in its file: the measure of a read's progress
 * (one byte an element for types of no fixed size). */
static inline uint64_t read_src_bytes(const read_src *src, uint64_t count) {
    size_t size = h5ark_dtype_size(src->info.dtype);
    return count * (size ? size : 1);
}
/* Read elements [lo, hi) of the concatenation into dest: pread for contiguous data whose
 * bytes are already what memory holds, HDF5 for the rest. Runs on any thread. */
int read_part_range(const read_part *part, uint64_t lo, uint64_t hi, void *dest, h5ark_error *err);
/* Keep only elements [lo, hi) of the concatenation (lo <= hi <= total), which become
 * [0, hi - lo). Sources wholly outside stay, holding nothing, so that what the files say
 * of the type is the same whatever the range. */
void read_part_slice(read_part *part, uint64_t lo, uint64_t hi);
/* Add `by` to every source's rebase (offsets into a part that was sliced). */
void read_part_rebase(read_part *part, int64_t by);
/* Element i (< total) as int64, rebased: an offset read to find where rows lie. */
int read_part_int64_at(const read_part *part, uint64_t i, int64_t *out, h5ark_error *err);
/* Which source holds element i (i < total). */
size_t read_part_find(const read_part *part, uint64_t i);
/* The file index of each element in [lo, hi) of the concatenation. */
void read_part_tags(const read_part *part, uint64_t lo, uint64_t hi, int64_t *dest);

/* Which family of the schema table (schema.h) an object is: its row in the table. */
typedef enum {
    KIND_NONE,
    KIND_PDARRAY,
    KIND_STRINGS,
    KIND_ARRAYVIEW,
    KIND_BIGINT,
    KIND_SEGARRAY,
    KIND_CATEGORICAL,
    KIND_GROUPBY,
    KIND_DATAFRAME,
    KIND_INDEX,
    KIND_MULTIINDEX,
    KIND_H5STRINGS,     /* a plain HDF5 string dataset */
    KIND_EXETERA_DF,    /* an ExeTera dataframe: a group of field groups */
    KIND_EXETERA_FIELD, /* an ExeTera field: a group with a `fieldtype` attribute */
    KIND_AWKWARD,       /* an awkward 2 group: `form` and `length` attributes, one dataset a
                           buffer (its node keeps the form in `fieldtype`, the length in
                           shape[0]) */
    KIND_AWKWARD0,      /* an awkward0 group: `schema.json` and byte blobs */
    KIND_COUNT
} read_kind;

/* One dataset requested from every file, as the files describe it. */

typedef struct {
    const char *name;
    read_kind kind;
    read_part values;   /* pdarray elements, or strings bytes */
    read_part segments; /* strings: start offsets, rebased per file */
    bool no_segments;   /* some file has no 'segments' (or calc_string_offsets): derive
                           offsets from the NULs */
    bool unterminated;  /* ExeTera's indexed strings: bytes without NULs (one is added after
                           each string as it is read), offsets from each file's `index` */
    bool have_dtype;    /* first_dtype is set: the type of an all-empty pdarray */
    h5ark_dtype first_dtype;
} read_dataset;

/* An object requested from every file: a leaf (pdarray, strings, arrayview) reads its
 * read_dataset; a composite has one node per component, found in the first file that holds
 * the object and looked up by the same paths in every later file. */
typedef struct read_node read_node;
struct read_node {
    char *name; /* component name (top level: the dataset) */
    char *path; /* where it is in the file */
    read_kind kind;
    read_dataset ds; /* leaves; ds.name == path */
    read_node *kids;
    size_t nkids, cap;
    bool legacy;      /* an older client-side layout (`x_segments`, `x.codes`, ...) */
    bool legacy_bool; /* in the file being probed: a v1 bool group holding `booleans` */
    bool plain;       /* a plain N-d dataset: shape[0] sums the files' first dimensions */
    bool as_index;    /* offsets, codes, permutations: int64 whatever the file's width */
    bool as_limb;     /* bigint limbs: uint64 */
    bool component;   /* a part of another object: its absence is a schema error */
    bool optional;    /* may be absent from a file (NA_Codes, permutation): then kind
                         stays KIND_NONE unless another file has it */
    bool swap_bytes;  /* an awkward 2 group: its buffers' bytes are big-endian whatever their
                         type says (readhdf's byteorder ">"), set in the daemon before building */
    const char *tag;  /* ObjType 7-9 */
    int64_t max_bits;
    char **names; /* Index: level names from the file */
    size_t nnames;
    char *fieldtype;   /* an ExeTera field: its `fieldtype` attribute */
    uint8_t completed; /* an ExeTera field: NODE_COMPLETED_* over the files */
    unsigned ndim;
    uint64_t shape[OBJECT_MAX_DIMS];
    /* what the file being probed changed, to undo when it is skipped */
    struct {
        read_kind kind;
        size_t values_n, segments_n, nkids;
        bool no_segments, have_dtype;
        unsigned ndim;
        uint64_t shape0;
    } mark;
};

/* An ExeTera field's `completed` mark over its files: the least of them (absent < false <
 * true); UNSEEN before the first file. */
enum { NODE_COMPLETED_UNSEEN, NODE_COMPLETED_ABSENT, NODE_COMPLETED_FALSE, NODE_COMPLETED_TRUE };

typedef struct {
    hid_t file;
    int index;        /* in the request's file list */
    const char *path; /* absolute */
    uint64_t size;
    bool calc_offsets;
    const h5ark_value *ak0_whitelist; /* NULL: awkward0's default */
    h5u_names *warnings;              /* what the read goes on despite (NULL: not told) */
} probe_ctx;

/* Add a component node (its ds.name points at its path). NULL when out of memory. The
 * kids array may move: take pointers to kids only after adding them all. */
read_node *node_add_kid(read_node *n, const char *name, const char *path, h5ark_error *err);
read_node *node_kid(read_node *n, const char *name);
/* The elements a probed node of a pdarray, bigint or Strings holds over the files so far
 * (strings for Strings, a limb's for a bigint). */
uint64_t node_elements(const read_node *n);
void node_clear(read_node *n);
/* A composite whose components are its group's children (a DataFrame's columns, an ExeTera
 * dataframe's fields), taken from the first file: schema_error when this file's group has a
 * child the files before it did not, so that no column is silently left out. `what` names
 * the composite ("DataFrame"), `noun` a child ("column"). */
int node_check_children(hid_t file, const read_node *n, const char *what, const char *noun,
                        h5ark_error *err);
/* path + "/" + child, or the legacy client-side name (`x_segments`, `x.codes`). */
int node_child_path(const read_node *n, const char *child, const char *legacy_sep, char *out,
                    size_t outlen);
/* Remember what a node holds before a file is probed, and undo what that file added when it
 * is skipped. */
void node_mark(read_node *n);
void node_undo(read_node *n);

#endif
