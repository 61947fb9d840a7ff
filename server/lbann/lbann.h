/* LBANN sample packing (docs/LBANN.md): the two YAML schemas LBANN's HDF5 data reader
 * takes, merged by its rules into the fields to read; the per-field transforms (coerce,
 * normalize, channels-last to channels-first); LBANN's sample lists. Pure functions on
 * memory: the `pack` command (commands/lbann.c) reads the files through the storage layer. */
#ifndef H5ARK_LBANN_H
#define H5ARK_LBANN_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* YAML text (at most 1 MiB, 64 levels) as a value: mappings as maps in document order,
 * sequences as arrays, plain scalars as int, float, bool or nil where they read as one,
 * quoted scalars as strings. An empty document is an empty map. Malformed YAML, aliases,
 * duplicate keys or a top level that is not a mapping: schema_error naming `what` with
 * line and column. */
int lbann_yaml_parse(const char *text, size_t len, const char *what, h5ark_value **out,
                     h5ark_error *err);

enum {
    LBANN_LAYOUT_NONE,
    LBANN_LAYOUT_HWC,
    LBANN_LAYOUT_DHWC,
    LBANN_LAYOUT_CHW,
    LBANN_LAYOUT_CDHW
};

/* One selected field, its metadata merged. */
typedef struct {
    char *path;        /* inside a sample: "outputs/images/img_1" */
    h5ark_value *meta; /* the merged metadata (a map) */
    char *pack;        /* NULL: a field of its own */
    double ordering;
    bool has_coerce;
    h5ark_dtype coerce;
    uint64_t channels;    /* 0: not set */
    double *scale, *bias; /* NULL: not set */
    size_t nscale, nbias;
    int layout, transpose; /* LBANN_LAYOUT_* */
    uint64_t dims[32];
    size_t ndims;
} lbann_field;

typedef struct {
    lbann_field *v;
    size_t n;
} lbann_fields;

/* The fields an experiment selects: every experiment-schema leaf names a data-schema node,
 * whose leaves it selects, its metadata over theirs. Metadata trickles down in both
 * schemas first (a node inherits each key it does not set). exp NULL: every data-schema
 * leaf. Unknown metadata keys are kept and named in `warnings`; everything LBANN rejects
 * (pack without ordering, an unknown coerce, bad channels, scale, dims or layout) is
 * schema_error naming the field. */
int lbann_fields_make(const h5ark_value *data, const h5ark_value *exp, lbann_fields *out,
                      h5ark_value *warnings, h5ark_error *err);
void lbann_fields_free(lbann_fields *f);

/* A pack group (or a field of its own): its members in packing order. */
typedef struct {
    char *name;
    size_t *members; /* indexes into lbann_fields, ascending ordering, ties in schema order */
    size_t n;
    bool packed; /* a `pack` group, not a lone field */
} lbann_group;

typedef struct {
    lbann_group *v;
    size_t n;
} lbann_groups;

/* Groups in order of their first field; schema_error when a field's path is also a group
 * name. */
int lbann_groups_make(const lbann_fields *f, lbann_groups *out, h5ark_error *err);
void lbann_groups_free(lbann_groups *g);

/* The dtype a field has after coerce, read from a file type `file`. */
static inline h5ark_dtype lbann_field_dtype(const lbann_field *f, h5ark_dtype file) {
    return f->has_coerce ? f->coerce : file;
}
/* Check a field's element count against its channels and dims (schema_error naming the
 * field; the caller adds the sample). */
int lbann_field_check(const lbann_field *f, uint64_t count, h5ark_error *err);
/* The field as it is in a row: coerce, normalize, repack. src holds `count` elements of
 * `src_dtype`; dst receives `count` elements of lbann_field_dtype(f, src_dtype); tmp is
 * scratch of count * 8 bytes (used when repacking). */
void lbann_field_transform(const lbann_field *f, const void *src, h5ark_dtype src_dtype,
                           uint64_t count, void *dst, void *tmp);
/* The dims reported for a field of `count` elements after its transforms. */
size_t lbann_field_dims(const lbann_field *f, uint64_t count, uint64_t *dims);

/* An LBANN sample list: CONDUIT_HDF5_INCLUSION, CONDUIT_HDF5_EXCLUSION or
 * MULTI-SAMPLE_INCLUSION_V2. */
typedef struct {
    char *file; /* as written, joined to base by the caller */
    char **ids; /* included ids, or with `exclude` the excluded ones */
    size_t nids;
    uint64_t nincluded; /* what the line says it includes */
} lbann_list_file;

typedef struct {
    char *base;
    bool exclude;
    lbann_list_file *files;
    size_t nfiles;
} lbann_sample_list;

/* Parse a sample list's text; schema_error naming `what` and the line for anything that
 * does not follow the format (counts that disagree with the header or a line). */
int lbann_sample_list_parse(const char *text, size_t len, const char *what, lbann_sample_list *out,
                            h5ark_error *err);
void lbann_sample_list_free(lbann_sample_list *l);

#endif
