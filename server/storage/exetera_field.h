/* An ExeTera field written from an object (exetera_write.c writes the files and answers
 * the requests; exetera_field.c writes a field's group and datasets, row by row). */
#ifndef H5ARK_STORAGE_EXETERA_FIELD_H
#define H5ARK_STORAGE_EXETERA_FIELD_H

#include "families.h"

#include <hdf5.h>

#include <stdbool.h>
#include <stdint.h>

#define ATTR_FIELDTYPE "fieldtype"
#define ATTR_COMPLETED "completed"
/* ExeTera's default chunksize, which it also writes as the field's `timestamp` */
#define EXETERA_CHUNKSIZE 1048576

/* What a field is. */
typedef struct {
    exetera_fieldtype kind;
    h5ark_dtype dtype; /* numeric and categorical: of `values` */
    uint64_t strlen;   /* fixed strings */
    char text[48];     /* the fieldtype attribute */
} field_spec;

/* A fieldtype attribute's text as a spec; bad_request when ExeTera has no such field. */
int exetera_spec_parse(const char *s, field_spec *out, h5ark_error *err);
/* The field an object makes, by itself. */
int exetera_spec_of(const object *obj, const char *name, field_spec *out, h5ark_error *err);
/* Whether obj can be written as a field of spec; type_error saying why not. */
int exetera_spec_fits(const object *obj, const char *name, const field_spec *s, h5ark_error *err);
/* Set (done) or clear the `completed` mark of the field's data datasets; set only on those
 * that hold data, as ExeTera does. */
int exetera_set_completed(hid_t g, exetera_fieldtype k, bool done, h5ark_error *err);
/* The field `name` of the dataframe group df: its spec (from the file) when it exists.
 * 1 found, 0 absent, -1 error (not a field). */
int exetera_existing_field(hid_t df, const char *shown, const char *name, field_spec *s,
                           h5ark_error *err);
/* Write obj's rows into field `name` of df: a new field (new_field), or appended to an
 * existing one of spec s. complete: mark it completed after, else clear the mark. */
int exetera_write_field(hid_t df, const char *name, const object *obj, const field_spec *s,
                        bool new_field, bool complete, int64_t *rows, h5ark_error *err);
/* The rows of field g of kind k, as its data datasets hold them. */
int64_t exetera_field_rows(hid_t g, exetera_fieldtype k);

#endif
