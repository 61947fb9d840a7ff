/* The write plan: what a tohdf will write where, built while HDF5 lays the files out and
 * carried out afterwards by the locales, each writing its own shards (pwrite at a
 * contiguous dataset's offset, or compressed chunks). Below the schema families, which
 * add their datasets to it; above only the HDF5 helpers. */
#ifndef H5ARK_STORAGE_PLAN_H
#define H5ARK_STORAGE_PLAN_H

#include "h5ark_wire.h"
#include "hdf5_util.h"
#include "objects/object.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Room for element n of a growable array of `size`-byte elements: the array (moved, maybe),
 * or NULL when out of memory (the old one is kept). */
static inline void *grow_array(void *v, size_t n, size_t *cap, size_t size) {
    if (n < *cap) return v;
    size_t c = *cap ? 2 * *cap : 16;
    void *nv = realloc(v, c * size);
    if (nv) *cap = c;
    return nv;
}

/* One shard's bytes and the place they go. The shard's own locale writes them. */
typedef struct {
    int file;         /* index into the request's files */
    int locale;       /* the locale that owns the shard */
    const void *data; /* shard memory */
    uint64_t nbytes;
    uint64_t offset; /* in the file */
    int64_t rebase;  /* int64 data: subtracted from every element on the way out */
    /* where data comes from: elements from `first` of `src` (several ranks: the rank that
     * holds the shard finds its memory from these, data is NULL elsewhere) */
    const darray *src;
    uint64_t first;
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
    /* several ranks: the chunk's elements gathered from the ranks holding them, when they
     * are not all on the rank making it (NULL otherwise: read from the shards) */
    const void *whole;
} write_chunk;

/* Several ranks: an int64 element of another rank's shard, fetched before rank 0 lays the
 * files out (a SegArray's segment at each locale's first row). */
typedef struct {
    const darray *a;
    uint64_t i;
    int64_t v;
} fetched_int64;

typedef struct {
    write_region *v;
    size_t n, cap;
    write_chunk *chunks;
    size_t nchunks, chunks_cap;
    hid_t *dsets; /* the chunked datasets, open until the locales have written them */
    size_t ndsets, dsets_cap;
    int gzip_level; /* 0: contiguous datasets; 1-9: chunked and compressed by the locales */
    int awkward0;   /* awkward objects in awkward0's layout: its AK0_COMPRESS_* policy */
    /* several ranks, awkward0's layout: objects[i]'s buffers whole on rank 0 */
    const object **ak0_objects;
    unsigned char ***ak0_whole;
    size_t nak0;
    bool dataframe_columns;       /* a DataFrame at a file's top level as one object per column */
    const fetched_int64 *fetched; /* several ranks: elements of other ranks' shards */
    size_t nfetched;
    bool strings_without_segments; /* top-level Strings: `values` alone */
} write_plan;

/* Element i of int64 darray a while laying a file out: from this rank's shard, or from the
 * elements fetched from the other ranks; -1 (err set) when it is neither. */
int plan_int64_at(const write_plan *plan, const darray *a, uint64_t i, int64_t *out,
                  h5ark_error *err);

int write_plan_add(write_plan *plan, const write_region *r, h5ark_error *err);
/* Close the plan's datasets and free it; -1 (err set, if err is not NULL) when a close
 * failed, which can mean chunks were not written out. */
int write_plan_close(write_plan *plan, h5ark_error *err);

/* Elements per chunk of an n-element dataset: about 1 MiB of them, at most n; 0 when n is
 * 0 (an empty dataset stays contiguous). A function of itemsize and n only, so the chunks
 * are the same whatever the locale count. */
uint64_t chunk_elems(size_t itemsize, uint64_t n);

struct libdeflate_compressor;
enum { CHUNK_DEFLATE_LEVELS = 13 }; /* libdeflate's levels: 0-12 */

/* A locale's working memory for chunks, grown as needed, and its compressors. */
typedef struct {
    unsigned char *raw, *shuffled, *packed, *again;
    size_t raw_cap, shuffled_cap, packed_cap, again_cap;
    struct libdeflate_compressor *deflaters[CHUNK_DEFLATE_LEVELS]; /* made when first used */
} chunk_buffers;

/* The libdeflate level chunks of `dtype` at a requested gzip level (1-9) are made with. */
int chunk_deflate_level(int gzip_level, h5ark_dtype dtype);

/* Make chunk c on the calling (locale) thread: *out points at its *len stored bytes, in
 * b's memory until b's next chunk. */
int chunk_make(const write_plan *plan, const write_chunk *c, chunk_buffers *b,
               const unsigned char **out, size_t *len, h5ark_error *err);
/* Write the stored bytes of the chunk at element `at` of the plan's dataset `dset`. */
int chunk_store(const write_plan *plan, size_t dset, uint64_t at, const void *bytes, size_t len,
                h5ark_error *err);
void chunk_buffers_free(chunk_buffers *b);
/* Elements [lo, hi) of darray `a` as dataset `name` under loc, with ObjType `objtype` (and
 * isBool): one planned region per overlapping shard, each written by its own locale; int64
 * elements are written less `rebase`. */
int write_darray_range(hid_t loc, int file_index, const char *name, const darray *a, uint64_t lo,
                       uint64_t hi, int64_t objtype, bool is_bool, int64_t rebase, write_plan *plan,
                       h5ark_error *err);
/* Float darray `a` (an even number of elements) as dataset `name` of h5py's complex numbers
 * (a compound {r, i} of two of its floats), contiguous, without attributes. */
int write_darray_pairs(hid_t loc, int file_index, const char *name, const darray *a,
                       write_plan *plan, h5ark_error *err);
/* The rows of obj that distributed file `part` holds (part < 0: all of them): the rows of
 * the darray that defines its rows (values, strings segments, SegArray segments). */
void object_part_rows(const object *obj, int part, uint64_t *lo, uint64_t *hi);
/* A group carrying Arkouda's object attributes for `objtype`; < 0 on failure. */
hid_t write_group(hid_t loc, const char *name, int64_t objtype, h5ark_error *err);
/* A small int64 dataset written at once through HDF5 (NA_Codes). */
int write_small_int64(hid_t loc, const char *name, const int64_t *v, uint64_t n, h5ark_error *err);

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
