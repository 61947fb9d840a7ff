/* The schema families (schema.h): each file's descriptor, registered in storage.c's table,
 * and the few functions one family lends another (an ArrayView's data is read as a
 * pdarray's, a SegArray's values are written as rows of a pdarray or Strings, a
 * DataFrame's index as an Index). */
#ifndef H5ARK_STORAGE_FAMILIES_H
#define H5ARK_STORAGE_FAMILIES_H

#include "schema.h"

extern const schema_family schema_pdarray;
extern const schema_family schema_bigint;
extern const schema_family schema_arrayview;
extern const schema_family schema_h5strings;
extern const schema_family schema_segarray;
extern const schema_family schema_strings;
extern const schema_family schema_categorical;
extern const schema_family schema_groupby;
extern const schema_family schema_dataframe;
extern const schema_family schema_index;
extern const schema_family schema_multiindex;
extern const schema_family schema_exetera_df;
extern const schema_family schema_exetera_field;
extern const schema_family schema_awkward;
extern const schema_family schema_awkward0;
/* An awkward object as awkward0 stores it: group `name` with schema.json and its blobs,
 * written at once (awkward0.c); `whole`: its buffers gathered by awkward0_gather (several
 * ranks), or NULL (its shards are all here). */
int awkward0_write(hid_t loc, const char *name, const object *obj, int policy,
                   unsigned char *const *whole, h5ark_error *err);
/* Several ranks (every rank calls it, in the same order): each of obj's buffers whole on
 * rank 0, in the order of its components (*whole: malloc'd; the other ranks' entries
 * NULL); free with awkward0_whole_free. */
int awkward0_gather(const object *obj, unsigned char ***whole, h5ark_error *err);
void awkward0_whole_free(const object *obj, unsigned char **whole);

/* ---- pdarray.c ---- */
/* ObjType of a pdarray: 1, or 7-9 for its tag. */
int64_t pdarray_objtype(const object *obj);
/* Probe a 1-D dataset (open as `dset`, closed here; or H5I_INVALID_HID to open ds->name,
 * or `<name>/booleans` for a v1 bool group) and add its share to ds; `accept` what else
 * may stand for 1-D numbers: PROBE_FLAT an N-d dataset, as its elements in C order;
 * PROBE_PAIRS h5py's complex numbers, as their floats (h5u_dset_info's pairs). */
enum { PROBE_FLAT = 1, PROBE_PAIRS = 2 };
int pdarray_probe_dataset(const probe_ctx *pc, read_dataset *ds, hid_t dset, bool legacy_group,
                          unsigned accept, h5ark_error *err);
/* Decide the in-memory dtype of a pdarray read from several files. */
int pdarray_settle_dtype(read_dataset *ds, bool strict, h5ark_error *err);
/* Read the elements into a new pdarray (and with tags, each element's file index). */
int pdarray_read(const read_dataset *ds, bool tags, object **obj, object **tag, h5ark_error *err);

/* Every element of pdarray obj (int64) within [lo, hi), and with nondecreasing each no
 * smaller than the one before: schema_error naming `what` otherwise. */
int pdarray_check_range(const object *obj, int64_t lo, int64_t hi, bool nondecreasing,
                        const char *what, h5ark_error *err);

/* ---- bigint.c ---- */
/* Rows [lo, hi) of a bigint as a bigint group (a SegArray's values). */
int bigint_write_rows(hid_t loc, int file_index, const char *name, const object *obj, uint64_t lo,
                      uint64_t hi, write_plan *plan, h5ark_error *err);

/* ---- strings.c ---- */
/* Rows [lo, hi) of a strings object as a Strings group (offsets rebased to start at 0). */
int strings_write_rows(hid_t loc, int file_index, const char *name, const object *obj, uint64_t lo,
                       uint64_t hi, write_plan *plan, h5ark_error *err);
/* Strings written without `segments` are read back by their NULs: bad_request naming the
 * first string of obj that holds a NUL (which would come back as several). At several
 * ranks every rank calls. */
int strings_check_without_segments(const object *obj, const char *name, h5ark_error *err);
/* Probe ExeTera's indexed strings (`index` of n + 1 offsets, `values` of any bytes) at
 * n->path into n's read_dataset, which then reads as Strings. */
int strings_probe_indexed(const probe_ctx *pc, read_node *n, h5ark_error *err);

/* ---- dataframe.c ---- */
/* Build a DataFrame of n's kids, one column each (every column of the same length). */
int dataframe_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                    h5ark_error *err);

/* ---- index.c ---- */
/* An Index group: obj's levels, or obj itself (a pdarray or strings) as its one level. */
int index_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                write_plan *plan, h5ark_error *err);

/* ---- exetera.c ---- */
/* What an ExeTera `fieldtype` says; dtype for numeric and categorical, and for a fixed
 * string its length after the comma. */
typedef enum {
    FT_BAD,
    FT_INDEXED,
    FT_FIXED,
    FT_NUMERIC,
    FT_CATEGORICAL,
    FT_TIMESTAMP
} exetera_fieldtype;
exetera_fieldtype exetera_parse_fieldtype(const char *s, h5ark_dtype *dtype);
/* Scalar string attribute `name` (fixed or variable length): 1 with its text (cut to len -
 * 1 bytes), 0 absent, -1 not a readable string. */
int exetera_read_str_attr(hid_t obj, const char *name, char *out, size_t len);

#endif
