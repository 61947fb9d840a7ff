/* HDF5 helpers shared by the storage layer's writers and readers: per-thread error
 * handling, the mapping between h5ark dtypes and HDF5 types, Arkouda's metadata
 * attributes, and the inspection of a dataset's type and storage. Internal to storage/. */
#ifndef H5ARK_HDF5_UTIL_H
#define H5ARK_HDF5_UTIL_H

#include "h5ark_wire.h"
#include "vfd.h"

#include <hdf5.h>
#include <stdbool.h>
#include <stdint.h>

/* The error stack and its automatic printing are per thread in the thread-safe build:
 * every thread that calls HDF5 calls this first (cheap after the first time). */
/* Set up the HDF5 library for this process: quiet, no filter plugins loaded, no link
 * followed into another file. -1 when the library fails. */
int h5u_init(void);
void h5u_quiet(void);

/* What the calling thread's HDF5 error stack says went wrong ("the failing call (the
 * reason deep down)") into buf, and the code it points to: busy when another process
 * holds the file's lock, io_error when the operating system refused a read or write, else
 * `otherwise` (a healthy file is never blamed for the disk). Clears the stack. */
h5ark_code h5u_reason(char *buf, size_t len, h5ark_code otherwise);
/* Fill err with the formatted message followed by what the HDF5 error stack says, and
 * `code` unless the stack points to another (h5u_reason), then clear the stack. Returns
 * -1. */
int h5u_fail(h5ark_error *err, h5ark_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether path holds an HDF5 file: > 0 yes, 0 no, < 0 it cannot be told. */
htri_t h5u_is_hdf5(const char *path);
/* h5py's bool: an enum of 1-byte integers FALSE = 0, TRUE = 1. */
bool h5u_is_bool_enum(hid_t type);
/* "compound", "string", ...: an HDF5 type class in words. */
const char *h5u_class_name(H5T_class_t c);

/* The little-endian file type h5ark writes for a dtype (bool: 1-byte unsigned). */
hid_t h5u_file_type(h5ark_dtype dtype);
/* The native memory type for a dtype. */
hid_t h5u_mem_type(h5ark_dtype dtype);

/* Scalar int64 attribute `name` = v on obj. */
int h5u_write_int_attr(hid_t obj, const char *name, int64_t v, h5ark_error *err);
/* Arkouda's object attributes in their order: ObjType, [isBool], file_version,
 * arkouda_version. */
int h5u_write_object_attrs(hid_t obj, int64_t objtype, bool is_bool, h5ark_error *err);

/* Read a scalar string attribute (fixed or variable length) of at most max bytes: 1 with
 * *out malloc'd and NUL-terminated, 0 when absent, -1 when present but not such a string.
 * HDF5's error stack is left clear. */
int h5u_read_text_attr(hid_t obj, const char *name, size_t max, char **out);
/* Read a scalar integer attribute. 1 with *out set, 0 when absent, -1 when present but
 * not a scalar integer (err filled, naming `what`). */
int h5u_read_int_attr(hid_t obj, const char *name, int64_t *out, const char *what,
                      h5ark_error *err);

/* 1-D attributes: int64 (Shape) and fixed-length ASCII strings (ColumnOrder). */
int h5u_write_int_array_attr(hid_t obj, const char *name, const int64_t *v, size_t n,
                             h5ark_error *err);
int h5u_write_str_array_attr(hid_t obj, const char *name, const char *const *v, size_t n,
                             h5ark_error *err);
/* Read them back: 1 with the values, 0 when absent, -1 when malformed (err names `what`).
 * At most `max` integers; strings are malloc'd (free with h5u_free_strs). */
int h5u_read_int_array_attr(hid_t obj, const char *name, int64_t *out, size_t max, size_t *n,
                            const char *what, h5ark_error *err);
int h5u_read_str_array_attr(hid_t obj, const char *name, char ***out, size_t *n, const char *what,
                            h5ark_error *err);
void h5u_free_strs(char **v, size_t n);

/* A growable list of names. */
typedef struct {
    char **v;
    size_t n, cap;
} h5u_names;

int h5u_names_push(h5u_names *l, const char *name); /* -1 when out of memory */
void h5u_names_free(h5u_names *l);
/* Append the names of group g's links in name order, leaving out `skip` (may be NULL);
 * at most 100,000. -1 with err (resource_limit or schema_error, naming `what`). */
int h5u_link_names(hid_t g, const char *skip, h5u_names *out, const char *what, h5ark_error *err);
/* h5u_link_names, with each link's address in *addrs (malloc'd, in step with out's names):
 * a hard link's object, HADDR_UNDEF for any other link. */
int h5u_link_addrs(hid_t g, const char *skip, h5u_names *out, haddr_t **addrs, const char *what,
                   h5ark_error *err);

/* Whether `path` (components separated by '/') names a link under loc: 1, 0, or -1. */
int h5u_link_exists(hid_t loc, const char *path);

/* forbidden when a link on `path` leads to another file (external or user-defined);
 * schema_error when a step cannot be looked up. */
int h5u_check_local(hid_t loc, const char *path, const char *what, h5ark_error *err);
/* The same in one walk with the question whether `path` is there: 1 when every step is a
 * link inside the file, 0 when one is missing (or is not a group), -1 with err when one
 * leads to another file. */
int h5u_link_local(hid_t loc, const char *path, const char *what, h5ark_error *err);

/* A rank-1 dataset of n elements; nothing is written into it. chunk == 0: contiguous, its
 * space allocated at creation so that *offset (its bytes' place in the file) is known now.
 * chunk > 0 (at most n): chunks of that many elements through the shuffle and deflate
 * filters at gzip_level (1-9), as h5py's shuffle=True, compression="gzip" makes them;
 * *offset is 0 and the chunks are written later (H5Dwrite_chunk). */
hid_t h5u_create_dataset(hid_t loc, const char *name, h5ark_dtype dtype, uint64_t n, uint64_t chunk,
                         int gzip_level, uint64_t *offset, h5ark_error *err);

/* A contiguous rank-1 dataset of n of h5py's complex numbers of float dtype `half`
 * (float32: complex64), its space allocated now (*offset), as h5u_create_dataset. */
hid_t h5u_create_complex_dataset(hid_t loc, const char *name, h5ark_dtype half, uint64_t n,
                                 uint64_t *offset, h5ark_error *err);

/* What a reader needs to know about one rank-1 dataset. */
typedef struct {
    uint64_t count;
    h5ark_dtype dtype; /* what its file type holds, before Arkouda's widening */
    bool is_integer;   /* integer class (or h5py's bool enum) */
    bool enum_bool;    /* h5py's bool: enum {FALSE=0, TRUE=1} over a 1-byte integer */
    bool exact;        /* its file type is h5u_file_type(dtype): bytes are usable as is */
    bool contiguous;   /* contiguous and allocated, no external storage: direct I/O */
    uint64_t offset;   /* with contiguous */
    bool flat;         /* in: accept an N-d dataset as its C-order elements */
    bool pairs;        /* in: accept h5py's complex numbers (a compound {r, i} of two floats
                          of one width) as their floats, two an element: count is of floats,
                          and exact is false (HDF5 converts them) */
    unsigned rank;     /* out: its dimensions */
    uint64_t dims[H5S_MAX_RANK];
} h5u_dset_info;

/* Inspect dataset `path` under loc (named `what` in messages): a 1-D dataset of integers
 * or floats. type_error for any other type or rank; schema_error when its storage lies
 * past the end of the file (`file_size`); forbidden when its data is in other files or a
 * link on its path leads to another file. */
int h5u_inspect(hid_t loc, const char *path, uint64_t file_size, const char *what,
                h5u_dset_info *info, h5ark_error *err);
/* The same for a dataset already open (and found local); it stays open. */
int h5u_inspect_dataset(hid_t dset, uint64_t file_size, const char *what, h5u_dset_info *info,
                        h5ark_error *err);

/* Whether `type` is h5py's complex: a compound of exactly two floats of one width named
 * r and i, packed; *half: that width. */
bool h5u_is_complex_pair(hid_t type, size_t *half);

/* Read elements [first, first + count) of rank-1 dataset `dset` in `file` into dest as
 * `dtype`, opening the file once. When the file holds `file_dtype` `exact`ly (its type is
 * file_dtype's) and the dataset is chunked without filters, or deflated (after a shuffle or
 * not), HDF5 only finds where its chunks lie (under its lock) and they are read with pread
 * and inflated with libdeflate (in parallel with other threads, without the copy H5Dread
 * makes through its chunk cache), and integers of up to 4 bytes read as int64 are widened
 * in place; otherwise as h5u_read_slab. A deflated chunk that does not inflate to a whole
 * chunk is schema_error. */
int h5u_read_chunks(const char *file, const char *dset, uint64_t first, uint64_t count,
                    h5ark_dtype dtype, bool exact, h5ark_dtype file_dtype, void *dest,
                    h5ark_error *err);

/* Read elements [first, first+count) of dataset `dset` in file `file` into dest as
 * `dtype` (HDF5 converts). For chunked, filtered, unallocated or foreign-typed data. */
int h5u_read_slab(const char *file, const char *dset, uint64_t first, uint64_t count,
                  h5ark_dtype dtype, void *dest, h5ark_error *err);
/* The same from a file already open (loc). */
int h5u_read_elems(hid_t loc, const char *dset, uint64_t first, uint64_t count, h5ark_dtype dtype,
                   void *dest, h5ark_error *err);

/* ---- what lshdf shows of an object (read-only, never through another file) ---------- */

/* numpy-style name of an element type ("int32", "bool"); for what Arkouda cannot hold, the
 * type class ("compound", "vlen", ...). */
void h5u_type_name(hid_t type, char *buf, size_t len);
/* Child `name` of group gid, opened, if it is a hard link to an object of type want;
 * -1 when absent or of another kind. */
hid_t h5u_open_child(hid_t gid, const char *name, H5O_type_t want);
/* Length of a rank-1 dataset, -1 otherwise. */
int64_t h5u_dataset_len(hid_t did);
/* The NULs of a byte dataset (see hdf5_util.c); -1 when not counted. */
int64_t h5u_count_nuls(hid_t did, uint64_t max_bytes);

#endif
