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

typedef struct {
    write_region *v;
    size_t n, cap;
} write_plan;

int write_plan_add(write_plan *plan, const write_region *r, h5ark_error *err);
/* Create dataset `name` under `loc` for darray `a` (part < 0: all of it; part >= 0: only
 * shard `part`) with a pdarray's attributes, and plan the locales' writes of its bytes.
 * With `rebase_by`, each shard's int64 elements are written less rebase_by's shard start
 * (per-file string offsets restart at 0). */
int write_darray_dataset(hid_t loc, int file_index, const char *name, const darray *a, bool is_bool,
                         int part, const darray *rebase_by, write_plan *plan, h5ark_error *err);

/* Create object `name` in the open file `file` (index `file_index` of the request) and
 * plan its data: part < 0 writes the whole object (single file), part >= 0 only shard
 * `part` (distributed file `part`). */
int pdarray_write(hid_t file, int file_index, const char *name, const object *obj, int part,
                  write_plan *plan, h5ark_error *err);
int strings_write(hid_t file, int file_index, const char *name, const object *obj, int part,
                  write_plan *plan, h5ark_error *err);

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
typedef enum { KIND_NONE, KIND_PDARRAY, KIND_STRINGS } read_kind;

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
 * nothing. legacy_group: a v1 bool group holding `booleans`. */
int pdarray_probe(hid_t file, int file_index, const char *path, uint64_t file_size,
                  read_dataset *ds, bool legacy_group, h5ark_error *err);
int strings_probe(hid_t file, int file_index, const char *path, uint64_t file_size,
                  read_dataset *ds, bool calc_offsets, h5ark_error *err);

/* Decide the in-memory dtype of a pdarray read from several files (see read.c). */
int pdarray_settle_dtype(read_dataset *ds, bool strict, h5ark_error *err);

/* Build the objects (and with tags, the int64 file index of each element). */
int pdarray_read(const read_dataset *ds, bool tags, object **obj, object **tag, h5ark_error *err);
int strings_read(const read_dataset *ds, bool tags, object **obj, object **tag, h5ark_error *err);

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
