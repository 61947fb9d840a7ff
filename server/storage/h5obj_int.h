/* What the h5obj*.c files share (internal to storage/). */
#ifndef H5ARK_H5OBJ_INT_H
#define H5ARK_H5OBJ_INT_H

#include "storage/h5obj.h"

#include <hdf5.h>
#include <jansson.h>
#include <limits.h>
#include <sys/stat.h>

#define H5OBJ_ID_LEN 38
#define H5OBJ_HOLD   ".h5ark-unlinked" /* the root's group of objects not linked yet */

typedef struct h5obj_kept h5obj_kept;

/* A domain opened for reading. */
typedef struct {
    const char *domain;
    char abs[PATH_MAX];
    char prefix[18]; /* the hash of the domain, "xxxxxxxx-xxxxxxxx" */
    double created, modified;
    hid_t fid;
    h5obj_kept *kept; /* fid's handle, kept open between requests (h5obj_kept.c), or NULL */
    int lock_fd;      /* with kept: this request's descriptor of the file, under a shared
                         flock until closed (-1: none) */
} h5obj_file;

/* ---- read handles kept between requests (h5obj_kept.c) ---- */

/* Open f->abs for a read from a handle kept open, as the file is now: 0 with f->fid,
 * f->kept and f->lock_fd set; 1 when none can be used (the caller opens the file itself).
 * h5obj_kept_close after either. */
int h5obj_kept_open(h5obj_file *f);
void h5obj_kept_close(h5obj_file *f);
/* The root group's address of a kept file. */
haddr_t h5obj_kept_root(const h5obj_file *f);
/* The names of the hard links to addr in the kept file, in the order H5Lvisit meets them,
 * each given to fn until it answers non-zero: 0, or -1 when the file has no index (too
 * many links: the caller walks them). */
int h5obj_kept_links(const h5obj_file *f, haddr_t addr, int (*fn)(void *arg, const char *name),
                     void *arg);
/* The object at addr of a kept file, kept open from an earlier request (a reference of the
 * caller's, to close), else H5I_INVALID_HID; and an object opened to be kept so. */
hid_t h5obj_kept_object(const h5obj_file *f, haddr_t addr);
/* An answer of len bytes of the kept file from offset, read as they are sent (h5obj_run_read):
 * it takes the request's flock (f->lock_fd) and holds it until its last byte is read. NULL
 * when out of memory. */
void *h5obj_kept_run(h5obj_file *f, uint64_t offset, uint64_t len);
void h5obj_kept_add_object(const h5obj_file *f, haddr_t addr, hid_t obj);

/* ---- domains, their files and objects (h5obj.c) ---- */

/* Check and resolve a domain's file (not_found, bad_request for what is not HDF5, or a file
 * the sandbox's probe died on), and fill f but its fid. */
int h5obj_locate(const h5obj_args *a, file_perm perm, h5obj_file *f, h5ark_error *err);
/* The domain's file (absolute) when the caller may do `perm` on it: with users on a domain
 * resolves from the data directory's root ("/home/alice/a.h5"), as SERVICE.md's paths that
 * start with '/'; off, relative to it. */
int h5obj_resolve(const h5obj_args *a, file_perm perm, bool create_dirs, char abs[PATH_MAX],
                  h5ark_error *err);
/* The object an id names in f (of the collection's kind; ANY: the prefix's); alias: the
 * paths to it, when not NULL. */
hid_t h5obj_open_id(const h5obj_file *f, const char *id, h5obj_coll coll, h5ark_value **alias,
                    h5ark_error *err);
/* Open a domain's file for reading, after the sandbox has walked it; close it. */
int h5obj_open_file(const h5obj_args *a, h5obj_file *f, h5ark_error *err);
void h5obj_close_file(h5obj_file *f);
/* GET of an object opened by id: a group's, a dataset's or a committed type's JSON, with
 * *alias (taken, set NULL) for a group or a dataset. */
int h5obj_get(const h5obj_file *f, hid_t obj, const h5obj_args *a, h5ark_value **alias,
              h5obj_answer *out, h5ark_error *err);
/* SHAPE of a dataset opened by id. */
int h5obj_shape(const h5obj_file *f, hid_t dset, h5obj_answer *out, h5ark_error *err);
/* Whether a group tracks the creation order of its links (and can be listed by it). */
bool h5obj_tracks_order(hid_t g);
/* GET's answer of a group or a dataset. */
int h5obj_describe(const h5obj_file *f, hid_t obj, h5ark_value **out, h5ark_error *err);
int h5obj_get_domain(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);
/* A file's or a folder's times (created: its birth where the file system keeps one). */
void h5obj_times_of(const char *abs, const struct stat *st, double *created, double *modified);
/* Who a domain's owner is shown to be: with users the file's creator (owners.h; abs NULL or
 * unrecorded: the caller), without them the name the caller gave, else "h5ark". */
const char *h5obj_owner(const h5obj_args *a, const char *abs, char *buf, size_t len);

/* ---- folders (h5obj_folder.c), the changes, ACLs; one operation (h5obj_run.c) ---- */

/* FOLDER: the domains and folders in a folder, as GET /domains lists them. */
int h5obj_folder_list(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);
/* PUT / {"folder": 1}: a new folder (parents made); DELETE / of a folder: it, when empty. */
int h5obj_folder_put(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);
int h5obj_folder_delete(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);
/* Does the domain name a folder (ends with '/', or is a directory)? */
bool h5obj_is_folder(const h5obj_args *a);
/* The changes (h5obj_write.c). */
int h5obj_write(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);
/* ACLS and ACL; PUT_ACL (h5obj_acl.c). */
int h5obj_acl_read(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);
int h5obj_acl_write(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);
/* The selection of a (select or points) on space; the answer's dims and element count. */
int h5obj_select(hid_t space, const h5obj_args *a, hsize_t *rdims, int *rrank, uint64_t *nelem,
                 h5ark_error *err);

/* An object's id, as a string value; the file's times in m. */
h5ark_value *h5obj_id_value(const h5obj_file *f, char kind, haddr_t addr);
int h5obj_times(h5ark_value *m, const h5obj_file *f);

/* ---- links and attributes (h5obj_links.c) ---- */

int h5obj_links(const h5obj_file *f, hid_t g, const h5obj_args *a, h5obj_answer *out,
                h5ark_error *err);
int h5obj_link(const h5obj_file *f, hid_t g, const h5obj_args *a, h5obj_answer *out,
               h5ark_error *err);
int h5obj_attrs(const h5obj_file *f, hid_t obj, const h5obj_args *a, h5obj_answer *out,
                h5ark_error *err);
int h5obj_attr(const h5obj_file *f, hid_t obj, const h5obj_args *a, h5obj_answer *out,
               h5ark_error *err);

/* ---- types and values (h5obj_type.c) ---- */

/* The type's JSON (HSDS_API.md §5); type_error naming a type that has none. */
h5ark_value *h5obj_type_json(hid_t type, h5ark_error *err);
/* The shape's JSON of a dataspace ({"class": "H5S_SIMPLE", "dims", "maxdims"} ...). */
h5ark_value *h5obj_shape_json(hid_t space, h5ark_error *err);

/* The memory type values are read as: the file type's little-endian form, compounds packed,
 * variable-length strings as char * (*vlen set when there is one anywhere in it: binary
 * answers then carry a 4-byte length before each string's bytes, h5obj_vlen.c). type_error
 * for what cannot be read. */
hid_t h5obj_wire_type(hid_t type, bool *vlen, h5ark_error *err);
/* n elements read as `wire` at buf into nested lists by dims (rank 0: one value alone). */
h5ark_value *h5obj_values_json(hid_t wire, const char *buf, size_t n, const hsize_t *dims, int rank,
                               h5ark_error *err);

/* ---- elements with variable-length strings (h5obj_vlen.c) ---- */

/* The binary form of n elements of `wire` at buf (each string a 4-byte length, then its
 * bytes; the rest as it is): malloc'd into *out; resource_limit past max bytes. */
int h5obj_vlen_binary(hid_t wire, const char *buf, uint64_t n, uint64_t max, char **out,
                      size_t *len, h5ark_error *err);
/* n elements of `wire` from their binary form (strings malloc'd): bad_request when the body
 * ends early or holds more. */
int h5obj_vlen_from_binary(hid_t wire, const void *body, size_t len, uint64_t n, char *buf,
                           h5ark_error *err);
/* Free the strings of n elements a client sent (NULL ones are skipped). */
void h5obj_vlen_free(hid_t wire, char *buf, uint64_t n);
/* A compound of the members of `wire` named in fields ("a:b"), packed in that order:
 * bad_request naming one that is not there, or a type that is not a compound. */
hid_t h5obj_wire_fields(hid_t wire, const char *fields, h5ark_error *err);

/* ---- what clients send (h5obj_make.c) ---- */

/* The HDF5 type a type's JSON stands for, as h5py makes it for the same dtype; bad_request
 * naming what cannot be made. */
hid_t h5obj_make_type(const json_t *j, h5ark_error *err);
/* Nested lists by dims (rank 0: one element) into buf, elements of `wire` (h5obj_wire_type;
 * variable-length strings strdup'd). bad_request when the value does not fit. */
int h5obj_values_from_json(hid_t wire, const json_t *v, void *buf, const hsize_t *dims, int rank,
                           h5ark_error *err);
/* A shape's JSON ([dims], [] or "H5S_NULL") and maxdims (0: unlimited; NULL: as dims). */
int h5obj_make_shape(const json_t *shape, const json_t *maxdims, int *rank, hsize_t *dims,
                     hsize_t *max, bool *null, h5ark_error *err);

/* ---- values (h5obj_value.c) ---- */

/* A dataset's values to read or write: its type and space, the selection of a (select or
 * points), the memory type, space and buffer for it. h5obj_values_begin: 0, 1 when the
 * dataset's shape is null (nothing to read or write), -1 with err (bad selection, over
 * max_bytes); h5obj_values_end after either. */
typedef struct {
    hid_t ftype, space, wire, mspace;
    H5S_class_t cls;
    bool vlen;
    hsize_t rdims[H5S_MAX_RANK];
    int rrank;
    uint64_t n;
    char *buf;
} h5obj_values;
int h5obj_values_begin(hid_t dset, const h5obj_args *a, uint64_t max_bytes, h5obj_values *v,
                       h5ark_error *err);
void h5obj_values_end(h5obj_values *v);
/* A dataset's selected values into out (json or bytes). */
int h5obj_read_value(h5obj_file *f, hid_t dset, const h5obj_args *a, h5obj_answer *out,
                     h5ark_error *err);
/* An attribute's value as JSON, by its shape. */
h5ark_value *h5obj_attr_value(hid_t attr, h5ark_error *err);

#endif
