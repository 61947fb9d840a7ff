/* Composites as Arkouda's client holds them, the names of their parts (parts.c): made from
 * those names with the native constructors (tohdf, register), and a described object given
 * back in Arkouda's forms (readAllHdf, attach). */
#ifndef H5ARK_AK_PARTS_H
#define H5ARK_AK_PARTS_H

#include "front/arkouda/commands.h"

/* The objects a request made through native constructors (its parts), deleted when it is
 * done with them, or when it fails. */
typedef struct {
    ak_ctx *ctx;
    h5ark_value *made; /* array of str */
} ak_made;

/* Run native constructor `cmd` (args taken; NULL: out of memory, or err already set) and
 * give the name of the object it made, which joins m->made (malloc'd; NULL with err set). */
char *ak_make(ak_made *m, const char *cmd, h5ark_value *args, h5ark_error *err);
char *ak_dup_name(const char *name, h5ark_error *err); /* malloc'd; NULL with err set */
void ak_delete_quietly(ak_ctx *ctx, const char *name); /* the native delete; errors ignored */
void ak_unmake(ak_made *m);                            /* the objects made go */
/* The objtype of the object `name` (the native info) into out, and its size. */
int ak_objtype_of(ak_ctx *ctx, const char *name, char out[32], uint64_t *size, h5ark_error *err);
/* A Categorical from its parts (the native categorical): codes, categories, the NA code's
 * array (its category is the NA value) and the grouping (permutation, segments) when both
 * are given; NULL or "" is a part not given. */
char *ak_categorical_of(ak_made *m, const char *codes, const char *cats, const char *na,
                        const char *perm, const char *segs, h5ark_error *err);
/* A part given by name, or as a JSON object of the parts of a SegArray
 * {"segments", "values"} or a Categorical {"codes", "categories", "NA_codes", ...}: its
 * name (malloc'd), one made for it in the second case. */
char *ak_part_of(ak_made *m, json_t *spec, h5ark_error *err);
/* The names of the parts listed in argument `key` (a native array of str), NULL with err
 * set. */
h5ark_value *ak_parts_of(ak_made *m, const char *key, h5ark_error *err);
/* A constructor's args: the list of parts under `key`, with `arg` naming them natively. */
h5ark_value *ak_list_args(ak_made *m, const char *key, const char *arg, h5ark_error *err);

/* Forms: what the native info or unpack described, as Arkouda's client takes it. */
bool ak_desc_is(const h5ark_value *d, const char *objtype);
bool ak_is_leaf(const h5ark_value *d); /* a pdarray, arrayview or Strings */
/* Arkouda's ObjType name of a described object, NULL for one Arkouda cannot hold. */
const char *ak_type_name(const h5ark_value *d);
/* The form of a described object: a created text for arrays and Strings, the JSON text of
 * a map or list of its parts' forms for composites (a Categorical's _akNAcode a new
 * one-element array, joining m->made). malloc'd; NULL with err set. */
char *ak_form_of(ak_made *m, const h5ark_value *d, h5ark_error *err);
/* "<TYPE>+|+<form>", as nested parts are given. */
json_t *ak_typed_form(ak_made *m, const h5ark_value *d, h5ark_error *err);
/* The names of the leaves of a described composite join m->made. */
int ak_made_leaves(ak_made *m, const h5ark_value *d, h5ark_error *err);

#endif
