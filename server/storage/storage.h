/* The HDF5 storage layer: what the hdf commands call. Files follow Arkouda's schema
 * (docs/FORMAT.md); paths given here are already resolved by files.c. */
#ifndef H5ARK_STORAGE_H
#define H5ARK_STORAGE_H

#include "h5ark_value.h"
#include "acl.h"
#include "objects/object.h"
#include "sandbox.h"

#include <stdbool.h>

/* Set up the HDF5 library for this process, before any file is touched: quiet, no filter
 * plugins loaded, no link followed into another file. -1 when the library fails. */
int storage_init(void);

/* update: replace datasets that exist, keeping everything else in the files */
typedef enum { STORAGE_TRUNCATE, STORAGE_APPEND, STORAGE_UPDATE } storage_mode;
typedef enum { STORAGE_DISTRIBUTE, STORAGE_SINGLE } storage_file_type;

typedef struct {
    object *obj;
    const char *dataset;
    const char *fieldtype; /* format exetera: the field's fieldtype, or NULL: the object's own */
} storage_item;

/* tohdf: write every item to the file(s) named by `path` (relative to the data directory;
 * distributed mode adds `_LOCALE####`). Every name, collision and mode rule is checked
 * before anything is written. Appends the relative names of the files written to
 * `files`, and to `warnings` one message per existing file overwritten. */
int storage_write(const storage_item *items, size_t nitems, const char *path, storage_mode mode,
                  storage_file_type file_type, h5ark_value *files, h5ark_value *warnings,
                  h5ark_error *err);

typedef struct {
    /* DataFrames as one top-level object per column (and `Index`), not a snapshot group */
    bool dataframe_columns;
    /* 0: contiguous datasets; 1-9: every non-empty data array chunked, shuffled and
     * deflated at this level (h5py's shuffle=True, compression="gzip") */
    int gzip_level;
    /* awkward objects in awkward0's layout (tohdf format awkward0): an AK0_COMPRESS_*
     * policy; 0: awkward 2's layout */
    int awkward0;
    /* top-level Strings without their `segments` dataset (Arkouda's save_offsets False):
     * readers count the strings by their NULs */
    bool strings_without_segments;
    /* who writes (files.h): their home, their rights; NULL: users off */
    const file_access *access;
    /* A new, empty folder of the daemon's own (a checkpoint's, absolute): `path` is a file
     * name in it rather than a client's path in the data directory, and each file is put
     * in place by itself (the folder's rename is what commits the write). NULL: off. */
    const char *base_dir;
} storage_write_options;

/* awkward0's compression policies: none, its default (zlib for integer and bool blobs of
 * 8192 bytes or more), all (zlib for every blob) */
enum { AK0_COMPRESS_NONE = 1, AK0_COMPRESS_DEFAULT = 2, AK0_COMPRESS_ALL = 3 };

/* storage_write with further options (NULL: the defaults). */
int storage_write_ex(const storage_item *items, size_t nitems, const char *path, storage_mode mode,
                     storage_file_type file_type, const storage_write_options *opts,
                     h5ark_value *files, h5ark_value *warnings, h5ark_error *err);

/* tohdf format "exetera": write every item (a DataFrame: each of its columns) as a field of
 * the ExeTera dataframe `group` of the one file `path`, of the item's fieldtype (a
 * DataFrame's: each column's), completed. truncate: a new file; append: fields added
 * (already_exists when there); update: the fields, which must exist, replaced. The file is changed
 * through a copy renamed over it. Appends the file's relative name to `files`. */
int storage_exetera_write(const file_access *fa, const storage_item *items, size_t nitems,
                          const char *path, const char *group, storage_mode mode,
                          h5ark_value *files, h5ark_value *warnings, h5ark_error *err);
/* writepart: append obj's rows to the ExeTera field `field` ("<dataframe>/<name>") of the
 * file `path`, creating the file, the dataframe and the field when missing, and leave the
 * field not completed. *rows: the field's rows after. Crash-safe: the file is either as
 * before or holds the part. */
int storage_exetera_part(const file_access *fa, const char *path, const char *field,
                         const object *obj, const char *label, const char *fieldtype, int64_t *rows,
                         h5ark_error *err);
/* complete: mark the ExeTera field completed (not_found when it is missing). */
int storage_exetera_complete(const file_access *fa, const char *path, const char *field,
                             int64_t *rows, h5ark_error *err);
/* repack: rewrite each file (absolute, confined) into a fresh one with every object and
 * root attribute copied, and replace it atomically. Appends the files' names (as fa
 * gives them) to `files`; *before / *after are their total sizes. */
int storage_repack(const file_access *fa, char *const *paths, size_t npaths, h5ark_value *files,
                   uint64_t *before, uint64_t *after, h5ark_error *err);

typedef struct {
    bool strict_types;
    bool allow_errors;
    bool calc_string_offsets;
    bool tag_data;
    /* rows [start, stop) of every object (of the concatenation of the files); stop ==
     * UINT64_MAX: through the last row. Only the bytes of those rows are read. */
    bool ranged;
    uint64_t start, stop;
    /* awkward0 schemas: the allow-list that replaces the default (an array of arrays of
     * strings), or NULL */
    const h5ark_value *ak0_whitelist;
    /* awkward 2 groups: the buffers are big-endian whatever their HDF5 type says (as
     * ak.from_buffers' byteorder=">") */
    bool awkward_big_endian;
} storage_read_options;

typedef struct {
    char *dataset;
    object *obj;      /* a new reference; not yet published */
    object *file_tag; /* with tag_data: int64 file index of each element, else NULL */
} storage_read_item;

/* readhdf: read `datasets` (NULL/0: every top-level object of the first readable file)
 * from `paths` (absolute, confined, in order), concatenating across files and
 * redistributing over the locales. With allow_errors, unreadable files are skipped and
 * described in `file_errors` (strings). Reading whole files, what no object can represent
 * is skipped and named in `warnings` (strings). Returns items in the order of `datasets`. */
int storage_read(char *const *paths, size_t npaths, const char *const *datasets, size_t ndatasets,
                 const storage_read_options *opts, storage_read_item **items, size_t *nitems,
                 h5ark_value *file_errors, h5ark_value *warnings, h5ark_error *err);
void storage_read_items_free(storage_read_item *items, size_t nitems);

/* Rows [start, stop) of one dataset of the file at `abs_path`, read as a strict-typed
 * ranged readhdf reads them into *items (never published). At several ranks every rank
 * calls it in the same call, and rank 0 also gets *whole, the object with every shard
 * readable there (object_gather_whole; NULL elsewhere and at one rank, free it with
 * object_whole_free before the items): for a reader that rank 0 runs alone (the HTTP
 * gateway). */
int storage_read_rows(const char *abs_path, const char *dataset, uint64_t start, uint64_t stop,
                      storage_read_item **items, size_t *nitems, object **whole, h5ark_error *err);

/* lshdf: append one entry per group/dataset of the file at `abs_path` (top level, or the
 * whole tree) to `entries`: {name, path, kind, objtype, dtype, shape, attrs}. LIST_VIEW
 * (the HTTP gateway's) also lists the root group first, and gives each scalar dataset of
 * numbers, bools or strings its `value`: a number, a bool, or a string's bytes (bin) up to
 * STORAGE_SCALAR_MAX_BYTES, past which `value_bytes` says how many there are instead. */
#define STORAGE_SCALAR_MAX_BYTES (1u << 20)
int storage_list(const char *abs_path, list_mode mode, h5ark_value *entries, h5ark_error *err);

/* The root attribute File_Format (0 single, 1 distributed) of the file at `abs_path`, read
 * after the checks storage_list makes: 1 when read, 0 when the file has none, -1 on error. */
int storage_file_format(const char *abs_path, int64_t *format, h5ark_error *err);

#endif
