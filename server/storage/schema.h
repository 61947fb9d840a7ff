/* The schema table: every on-disk layout h5ark reads or writes is one family — a
 * descriptor of functions in one file of its own (pdarray.c, strings.c, ...) — and every
 * family is one row of one table, registered at start (storage.c). Everything that must
 * know what an HDF5 object is asks the one detector here (schema_detect): readhdf's
 * probes, lshdf, and the writers that look at existing files. Composites reach their
 * components through the dispatchers here; the few functions one family lends another
 * (ArrayView probes as a pdarray, SegArray writes Strings rows, DataFrame writes an Index)
 * are declared in families.h, never reached by including another family's file.
 *
 * Layers, from the bottom: HDF5 helpers, files, io (toolkits); node.h (the read tree) and
 * plan.h (the write plan); this table; the families; then the orchestrators (probe.c,
 * read.c, write.c, list.c, sandbox.c). Calls only go down.
 *
 * Adding a family: a new kind in node.h's read_kind, a file defining its schema_family,
 * and its row in storage.c's table. See docs/STORAGE.md, "Adding a family". */
#ifndef H5ARK_STORAGE_SCHEMA_H
#define H5ARK_STORAGE_SCHEMA_H

#include "node.h"
#include "plan.h"

#include <stdbool.h>
#include <stdint.h>

/* What the detector knows of one HDF5 object when it asks each family whether it is theirs. */
typedef struct {
    hid_t obj;        /* open */
    const char *path; /* for messages */
    bool is_group;    /* else a dataset */
    bool has_objtype; /* an integer ObjType attribute */
    int64_t objtype;
    bool is_bigint; /* isBigInt = 1 */
    /* datasets only */
    int rank; /* -1: no simple dataspace (scalar or null) */
    H5T_class_t tclass;
    bool bool_enum; /* h5py's bool */
} schema_facts;

/* How strongly a family claims an object; the strongest claim wins, ties go to the family
 * registered first. */
enum {
    SCHEMA_NOT_MINE = 0,
    SCHEMA_BY_SHAPE = 1,   /* no ObjType: by its children, or a plain dataset's type */
    SCHEMA_BY_OBJTYPE = 2, /* its ObjType says so */
    SCHEMA_BY_MARK = 3,    /* an attribute that overrides ObjType (isBigInt) */
};

typedef struct {
    read_kind kind;   /* the family's own unless its detect says otherwise */
    const char *tag;  /* a pdarray's datetime/timedelta/ipv4 tag */
    bool legacy_bool; /* a v1 bool group holding `booleans` */
} schema_match;

/* What lshdf shows of a group a family claims, as far as the group says it. */
typedef struct {
    char dtype[32];     /* "" when unknown */
    int64_t rows;       /* -1 when unknown */
    const char *note;   /* why rows are missing */
    const char *legacy; /* an older layout, in words */
    /* what a family says beyond the above (an ExeTera field): */
    const char *objtype; /* instead of the family's own; "" for none */
    const char *kind;    /* the entry's kind instead of "group"; the entry is then the whole
                            object, and lshdf does not list what it holds */
    h5ark_value *extra;  /* further keys of the entry (a map, the caller's to free) */
} schema_listing;

/* Why a claimed object cannot be read (schema_classify): a part missing or malformed
 * (schema_error), or nothing h5ark holds can represent it (type_error). */
typedef struct {
    h5ark_code code; /* H5ARK_OK: it reads */
    char why[700];   /* the reason, in words that follow "cannot be read: " */
} schema_verdict;

/* A part a group must hold to be read, checked by schema_classify before anything else. */
typedef enum {
    SCHEMA_PART_NUMBERS = 1, /* a 1-D numeric dataset (offsets, codes, a permutation) */
    SCHEMA_PART_OBJECT,      /* any object h5ark reads, itself whole */
} schema_part_sort;

typedef struct {
    const char *name;       /* a child; with count_attr, the prefix of children numbered from 0 */
    const char *count_attr; /* numbered parts: how many (the attribute, else the highest number
                               found, and at least one) */
    schema_part_sort sort;
    bool optional; /* may be absent; when present, it must be of its sort */
} schema_part;

typedef struct schema_family {
    read_kind kind;
    const char *what;    /* in messages: "a SegArray" */
    const char *objtype; /* the protocol's objtype name, as lshdf reports it */
    /* How strongly this family claims the object (SCHEMA_*), filling m. */
    int (*detect)(const schema_facts *f, schema_match *m);
    /* Add the share of file pc to node n (dset: the dataset, open, for dataset families; the
     * probe closes it). */
    int (*probe)(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err);
    /* Read the data and build the object (and with tags, each row's file index). */
    int (*build)(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err);
    /* Whether it writes this object, and the writer (part < 0: the whole object in a single
     * file; part >= 0: distributed file `part`'s rows). NULL: a read-only family. */
    bool (*writes)(const object *obj);
    int (*write)(hid_t loc, int file_index, const char *name, const object *obj, int part,
                 write_plan *plan, h5ark_error *err);
    /* Optional: what must hold of obj before anything is written (bad_request otherwise). */
    int (*check)(const object *obj, const char *dataset, h5ark_error *err);
    /* A ranged read: keep only rows [lo, hi) of the object (hi == SCHEMA_TO_END: through its
     * last row), reading at most a few elements to find where they lie. bad_request when
     * the rows are not there. NULL: rows do not apply to the family. */
    int (*slice)(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err);
    /* Optional: dtype and rows of a group it claims, for lshdf (datasets describe
     * themselves). Reads at most the lengths of its children. */
    void (*list)(const schema_facts *f, schema_listing *out);
    /* Optional: the parts a group it claims must hold, ended by {NULL}. */
    const schema_part *parts;
    /* Optional: what else must hold of an object it claims, after its parts, from metadata
     * alone (a field's type, columns of one length); fills v when it does not. `depth`
     * passes on to schema_classify_part. */
    void (*whole)(const schema_facts *f, unsigned depth, schema_verdict *v);
} schema_family;

#define SCHEMA_TO_END UINT64_MAX

/* Register a family (at start, before any file is touched; order is priority). */
void schema_register(const schema_family *f);
const schema_family *schema_family_of(read_kind kind);
/* "a SegArray", "nothing" */
const char *schema_what(read_kind kind);

/* The facts of obj (open), read from its attributes, type and shape. */
int schema_facts_read(hid_t obj, const char *path, schema_facts *f, h5ark_error *err);
/* Which family the object is: 1 with m filled, 0 when no family claims it. */
int schema_detect(const schema_facts *f, schema_match *m);
/* The one classification lshdf and readhdf share: which family the object is (0: none
 * claims it) and, when one does, whether it can be read as that (v->code H5ARK_OK) or
 * not and why — its parts present and themselves readable, and its family's `whole`. Reads
 * metadata only: attributes, link names, shapes. */
int schema_classify(const schema_facts *f, schema_match *m, schema_verdict *v);
/* Part `name` of group f, classified in turn (depth: how deep in parts, bounded): 0 with
 * its kind and (rows not NULL) its rows (-1 when the group does not say), or -1 with v saying
 * what is wrong. */
int schema_classify_part(const schema_facts *f, const char *name, schema_part_sort sort,
                         unsigned depth, read_kind *kind, int64_t *rows, schema_verdict *v);
/* A dataset's verdict when it must hold numbers in lo to hi dimensions. */
void schema_verdict_numbers(const schema_facts *f, int lo, int hi, schema_verdict *v);
/* "a GroupBy h5ark cannot read: no 'segments'": lshdf's note; readhdf's error adds the name. */
void schema_verdict_note(read_kind kind, const schema_verdict *v, char *out, size_t len);
/* Why no family claimed it: type_error naming the object and what it is. */
int schema_unclaimed(const schema_facts *f, h5ark_error *err);

/* Whether a child link `name` exists under the object, and what it is. */
typedef enum {
    SCHEMA_CHILD_NONE,
    SCHEMA_CHILD_GROUP,
    SCHEMA_CHILD_BYTES,
    SCHEMA_CHILD_DATA
} schema_child;
schema_child schema_child_of(const schema_facts *f, const char *name);

/* Probe node n in file pc: detect it (or the older split layouts at top level), check it
 * agrees with the files before, and hand it to its family. */
int schema_probe(const probe_ctx *pc, read_node *n, h5ark_error *err);
/* Build node n through its family. */
int schema_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err);
/* Write any object through the family that writes it. */
int schema_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                 write_plan *plan, h5ark_error *err);

/* What lshdf shows of a claimed group (out->rows = -1 and no dtype when the family says
 * nothing). */
void schema_list(read_kind kind, const schema_facts *f, schema_listing *out);
/* The rows of a group: the length of its rank-1 child `name` (-1 when not there). */
int64_t schema_child_rows(const schema_facts *f, const char *name);

/* Rows [lo, hi) of node n, through its family (bad_request when the family has no rows). */
int schema_slice(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err);
/* Rows that are the elements of n's values (pdarray, HDF5 strings). */
int schema_slice_elements(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err);
/* The same rows of every kid present (composites whose components all have the rows). */
int schema_slice_kids(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err);
/* Check rows [*lo, *hi) against an object of `rows` rows (resolving SCHEMA_TO_END). */
int schema_rows(const read_node *n, uint64_t rows, uint64_t lo, uint64_t *hi, h5ark_error *err);

/* The writing family's checks of obj, before anything is written. */
int schema_check(const object *obj, const char *dataset, h5ark_error *err);

/* Children named prefix<number> under n, sorted numerically (count from `count_attr` when
 * the group has it), added after the kids n has and probed. */
int schema_probe_numbered_kids(const probe_ctx *pc, read_node *n, const char *prefix,
                               const char *count_attr, h5ark_error *err);
/* Build every kid in order as a component of a new composite (tags from kid `tag_kid`). */
int schema_build_composite(read_node *n, h5ark_objtype objtype, h5ark_dtype dtype, bool strict,
                           bool tags, size_t tag_kid, object **obj, object **tag, h5ark_error *err);

#endif
