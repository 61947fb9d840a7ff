/* What the storage layer's orchestration (write.c, read.c) and its per-object-type
 * schemas (pdarray.c, strings.c) share: the plan of a write (which shard's bytes go where
 * in which file) and the sources of a read (which elements of the concatenation come from
 * which dataset of which file). Internal to storage/. */
#ifndef H5ARK_STORAGE_INTERNAL_H
#define H5ARK_STORAGE_INTERNAL_H

#include "h5ark_wire.h"
#include "hdf5_util.h"
#include "files.h"
#include "objects/object.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- writing ---------------------------------------------------------------------- */

/* One shard's bytes and the place they go. The shard's own locale writes them. */
typedef struct {
    int file;         /* index into the request's files */
    int locale;       /* the locale that owns the shard */
    const void *data; /* shard memory */
    uint64_t nbytes;
    uint64_t offset; /* in the file */
    int64_t rebase;  /* int64 data: subtracted from every element on the way out */
} write_region;

/* One chunk of a compressed dataset: elements [first, first + count) of src (a chunk may
 * span shards), int64 elements less `rebase`, padded with zeros to `elems` as HDF5 pads
 * the last chunk, then shuffled, deflated and written by `locale` at element `at` of the
 * plan's open dataset `dset`. */
typedef struct {
    int file;
    int locale; /* the one owning the chunk's middle element */
    size_t dset;
    const darray *src;
    uint64_t first, count;
    uint64_t elems; /* the dataset's chunk size */
    uint64_t at;
    int64_t rebase;
} write_chunk;

typedef struct {
    write_region *v;
    size_t n, cap;
    write_chunk *chunks;
    size_t nchunks, chunks_cap;
    hid_t *dsets; /* the chunked datasets, open until the locales have written them */
    size_t ndsets, dsets_cap;
    int gzip_level; /* 0: contiguous datasets; 1-9: chunked and compressed by the locales */
} write_plan;

int write_plan_add(write_plan *plan, const write_region *r, h5ark_error *err);
/* Close the plan's datasets and free it; -1 (err set, if err is not NULL) when a close
 * failed, which can mean chunks were not written out. */
int write_plan_close(write_plan *plan, h5ark_error *err);

/* Elements per chunk of an n-element dataset: about 1 MiB of them, at most n; 0 when n is
 * 0 (an empty dataset stays contiguous). A function of itemsize and n only, so the chunks
 * are the same whatever the locale count. */
uint64_t chunk_elems(size_t itemsize, uint64_t n);

/* A locale's working memory for chunks, grown as needed. */
typedef struct {
    unsigned char *raw, *shuffled, *packed;
    size_t raw_cap, shuffled_cap, packed_cap;
} chunk_buffers;

/* Make and write chunk c on the calling (locale) thread. */
int chunk_write(const write_plan *plan, const write_chunk *c, chunk_buffers *b, h5ark_error *err);
void chunk_buffers_free(chunk_buffers *b);
/* Create object `name` in the open file `file` (index `file_index` of the request) and
 * plan its data: part < 0 writes the whole object (single file), part >= 0 only shard
 * `part` (distributed file `part`). */
int pdarray_write(hid_t file, int file_index, const char *name, const object *obj, int part,
                  write_plan *plan, h5ark_error *err);
int strings_write(hid_t file, int file_index, const char *name, const object *obj, int part,
                  write_plan *plan, h5ark_error *err);

/* ObjType of a pdarray: 1, or 7-9 for its tag. */
int64_t pdarray_objtype(const object *obj);
/* Elements [lo, hi) of darray `a` as dataset `name` under loc, with ObjType `objtype` (and
 * isBool): one planned region per overlapping shard, each written by its own locale; int64
 * elements are written less `rebase`. */
int write_darray_range(hid_t loc, int file_index, const char *name, const darray *a, uint64_t lo,
                       uint64_t hi, int64_t objtype, bool is_bool, int64_t rebase, write_plan *plan,
                       h5ark_error *err);
/* Rows [lo, hi) of a pdarray (a dataset) or strings (a group; offsets rebased to start at
 * 0): what a file holds of a SegArray's values. */
int write_rows(hid_t loc, int file_index, const char *name, const object *obj, uint64_t lo,
               uint64_t hi, write_plan *plan, h5ark_error *err);
/* The rows of obj that distributed file `part` holds (part < 0: all of them): the rows of
 * the darray that defines its rows (values, strings segments, SegArray segments). */
void object_part_rows(const object *obj, int part, uint64_t *lo, uint64_t *hi);
/* Any object type, dispatched to its schema's writer (part as in pdarray_write). */
int write_object(hid_t loc, int file_index, const char *name, const object *obj, int part,
                 write_plan *plan, h5ark_error *err);
/* A group carrying Arkouda's object attributes for `objtype`; < 0 on failure. */
hid_t write_group(hid_t loc, const char *name, int64_t objtype, h5ark_error *err);
/* A small int64 dataset written at once through HDF5 (NA_Codes). */
int write_small_int64(hid_t loc, const char *name, const int64_t *v, uint64_t n, h5ark_error *err);

int segarray_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                   write_plan *plan, h5ark_error *err);
int categorical_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                      write_plan *plan, h5ark_error *err);
int groupby_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                  write_plan *plan, h5ark_error *err);
int index_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                write_plan *plan, h5ark_error *err);
/* A DataFrame: the snapshot group, or (columns) each column at loc's top level and the
 * index as `Index`; both record ColumnOrder (on the group, or on loc). */
int dataframe_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                    bool columns, write_plan *plan, h5ark_error *err);
int arrayview_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                    write_plan *plan, h5ark_error *err);
int bigint_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                 write_plan *plan, h5ark_error *err);
/* Check that a DataFrame's column names can be HDF5 link names. */
int dataframe_check(const object *obj, const char *dataset, h5ark_error *err);

/* ---- reading ---------------------------------------------------------------------- */

/* One file's share of a component (pdarray data, strings bytes or strings segments). */
typedef struct {
    int file;         /* index into the request's file list (what tag_data reports) */
    const char *path; /* absolute; owned by the caller of storage_read */
    char *dset;       /* path of the dataset inside the file */
    uint64_t start;   /* index of its first element in the concatenation */
    h5u_dset_info info;
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
/* Read elements [lo, hi) of the concatenation into dest: pread for contiguous data whose
 * bytes are already what memory holds, HDF5 for the rest. Runs on any thread. */
int read_part_range(const read_part *part, uint64_t lo, uint64_t hi, void *dest, h5ark_error *err);
/* Which source holds element i (i < total). */
size_t read_part_find(const read_part *part, uint64_t i);
/* The file index of each element in [lo, hi) of the concatenation. */
void read_part_tags(const read_part *part, uint64_t lo, uint64_t hi, int64_t *dest);

/* One dataset requested from every file, as the files describe it. */
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
} read_kind;

typedef struct {
    const char *name;
    read_kind kind;
    read_part values;   /* pdarray elements, or strings bytes */
    read_part segments; /* strings: start offsets, rebased per file */
    bool no_segments;   /* some file has no 'segments' (or calc_string_offsets): derive
                           offsets from the NULs */
    bool have_dtype;    /* first_dtype is set: the type of an all-empty pdarray */
    h5ark_dtype first_dtype;
} read_dataset;

/* Probe object ds->name in the open file `file` (path `path`, index `file_index` of the
 * request, `file_size` bytes) and add its share to ds; a file whose share is empty adds
 * nothing. `dset`: the dataset, when the caller has it open (it is closed here), or
 * H5I_INVALID_HID. legacy_group: a v1 bool group holding `booleans`. */
int pdarray_probe(hid_t file, int file_index, const char *path, uint64_t file_size,
                  read_dataset *ds, hid_t dset, bool legacy_group, h5ark_error *err);
int strings_probe(hid_t file, int file_index, const char *path, uint64_t file_size,
                  read_dataset *ds, bool calc_offsets, h5ark_error *err);

/* Decide the in-memory dtype of a pdarray read from several files (see read.c). */
int pdarray_settle_dtype(read_dataset *ds, bool strict, h5ark_error *err);

/* Build the objects (and with tags, the int64 file index of each element). */
int pdarray_read(const read_dataset *ds, bool tags, object **obj, object **tag, h5ark_error *err);
int strings_read(const read_dataset *ds, bool tags, object **obj, object **tag, h5ark_error *err);

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
    bool legacy;     /* an older client-side layout (`x_segments`, `x.codes`, ...) */
    bool as_index;   /* offsets, codes, permutations: int64 whatever the file's width */
    bool as_limb;    /* bigint limbs: uint64 */
    bool component;  /* a part of another object: its absence is a schema error */
    bool optional;   /* may be absent from a file (NA_Codes, permutation): then kind
                        stays KIND_NONE unless another file has it */
    const char *tag; /* ObjType 7-9 */
    int64_t max_bits;
    char **names; /* Index: level names from the file */
    size_t nnames;
    unsigned ndim;
    uint64_t shape[OBJECT_MAX_DIMS];
    /* what the file being probed changed, to undo when it is skipped */
    struct {
        read_kind kind;
        size_t values_n, segments_n, nkids;
        bool no_segments, have_dtype;
        unsigned ndim;
    } mark;
};

typedef struct {
    hid_t file;
    int index;        /* in the request's file list */
    const char *path; /* absolute */
    uint64_t size;
    bool calc_offsets;
} probe_ctx;

/* Add a component node (its ds.name points at its path). NULL when out of memory. The
 * kids array may move: take pointers to kids only after adding them all. */
read_node *node_add_kid(read_node *n, const char *name, const char *path, h5ark_error *err);
read_node *node_kid(read_node *n, const char *name);
void node_clear(read_node *n);
/* Whether a node's kids were made while probing the current file (and need probing with
 * the same layout in later files). */
int probe_node(const probe_ctx *pc, read_node *n, h5ark_error *err);
int build_node(read_node *n, bool strict, bool tags, object **obj, object **tag, h5ark_error *err);
/* path + "/" + child, or the legacy client-side name (`x_segments`, `x.codes`). */
int node_child_path(const read_node *n, const char *child, const char *legacy_sep, char *out,
                    size_t outlen);
/* Every element of pdarray obj (int64) within [lo, hi), and with nondecreasing each no
 * smaller than the one before: schema_error naming `what` otherwise. */
int check_int64_range(const object *obj, int64_t lo, int64_t hi, bool nondecreasing,
                      const char *what, h5ark_error *err);
/* Children named prefix<number> under loc, sorted numerically; count from `count_attr`
 * when the group has it. */
int probe_numbered_kids(const probe_ctx *pc, read_node *n, const char *prefix,
                        const char *count_attr, h5ark_error *err);

int segarray_probe(const probe_ctx *pc, read_node *n, h5ark_error *err);
int segarray_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                   h5ark_error *err);
int categorical_probe(const probe_ctx *pc, read_node *n, h5ark_error *err);
int categorical_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                      h5ark_error *err);
int groupby_probe(const probe_ctx *pc, read_node *n, h5ark_error *err);
int groupby_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                  h5ark_error *err);
int index_probe(const probe_ctx *pc, read_node *n, h5ark_error *err);
int index_build(read_node *n, bool strict, bool tags, object **obj, object **tag, h5ark_error *err);
int dataframe_probe(const probe_ctx *pc, read_node *n, h5ark_error *err);
int dataframe_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                    h5ark_error *err);
/* dset: the ArrayView's dataset, open (it is closed here) */
int arrayview_probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err);
int arrayview_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                    h5ark_error *err);
int bigint_probe(const probe_ctx *pc, read_node *n, h5ark_error *err);
int bigint_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err);

/* Build every kid in order as a component of a new composite (tags from kid `tag_kid`). */
int build_composite(read_node *n, h5ark_objtype objtype, h5ark_dtype dtype, bool strict, bool tags,
                    size_t tag_kid, object **obj, object **tag, h5ark_error *err);

/* ---- probing many files ------------------------------------------------------------- */

/* Probing opens the files with HDF5 and decodes their metadata, the part of the library
 * that damaged files can crash, so it runs in the file probe processes (sandbox.c), several
 * at once over slices of the file list; the daemon gets back what they found and only moves
 * the data. Without probes it runs in process. */
typedef struct read_probe_request {
    char *const *paths; /* absolute */
    const int *index;   /* each path's index in the request's file list (NULL: 0, 1, ...) */
    size_t npaths;
    const char *const *datasets; /* NULL/0: every top-level object of the first readable file */
    size_t ndatasets;
    bool allow_errors;
    bool calc_offsets;
} read_probe_request;

typedef struct {
    int index; /* in the request's file list */
    h5ark_code code;
    char *message;
} read_file_error;

typedef struct read_probe {
    h5u_names names;  /* the objects */
    read_node *nodes; /* one per name */
    read_file_error *errors;
    size_t nerrors, errcap;
    bool stopped; /* a file failed without allow_errors: the last error says which */
} read_probe;

/* Probe the files in order; -1 only when out of memory (file failures are in out->errors). */
int read_probe_files(const read_probe_request *rq, read_probe *out, h5ark_error *err);
int read_probe_add_error(read_probe *p, int index, h5ark_code code, const char *message,
                         h5ark_error *err);
void read_probe_clear(read_probe *p);
/* As MessagePack, between the probe and the daemon. Decoding checks every file index
 * against npaths and points each source at paths[index]. */
h5ark_value *read_probe_encode(const read_probe *p);
int read_probe_decode(const h5ark_value *v, char *const *paths, size_t npaths, read_probe *p,
                      h5ark_error *err);
h5ark_value *read_probe_request_encode(const read_probe_request *rq);
/* Append what b found in the files after a's to a (b is emptied): 0, or 1 when b's files
 * describe the objects differently from a's (then probe all files in one sequence, which
 * decides as a single reader would). */
int read_probe_merge(read_probe *a, read_probe *b, h5ark_error *err);

/* ---- shared by both ---------------------------------------------------------------- */

/* Each locale's error slot; after locales_run the lowest failing locale's error is the
 * one reported, so messages do not depend on thread timing. */
typedef struct {
    h5ark_error *errs; /* one per locale */
} locale_errors;

int locale_errors_init(locale_errors *le, h5ark_error *err);
void locale_errors_free(locale_errors *le);
/* Copy the first failure into err; -1 if there was one. */
int locale_errors_take(locale_errors *le, h5ark_error *err);
void locale_errors_set(locale_errors *le, int locale);

#endif
