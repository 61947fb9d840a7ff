/* HDF5 objects of the data directory's files, one request at a time: the operations of the
 * HSDS-compatible endpoint (front/hsds.c) and of the native commands of the same names
 * (commands/h5obj.c), with answers in the shapes of shared/HSDS_API.md. A domain is a file
 * named by its path from the data directory ("/home/a.h5"), a folder a directory ("/home/").
 * Every object has an id made of a hash of the domain and its object header's address, so
 * it stays the same as long as the file changes only through HDF5. Files are confined as
 * files_resolve confines them and probed in the sandbox before the daemon opens them. */
#ifndef H5ARK_H5OBJ_H
#define H5ARK_H5OBJ_H

#include "h5ark_value.h"
#include "storage/acl.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    H5OBJ_DOMAIN, /* the domain or folder: class, root, times, limits ... */
    H5OBJ_GET,    /* a group, dataset or datatype by id */
    H5OBJ_LINKS,  /* a group's links */
    H5OBJ_LINK,   /* one link of a group */
    H5OBJ_SHAPE,  /* a dataset's shape */
    H5OBJ_ATTRS,  /* an object's attributes (body {"attr_names"}: those, in that order) */
    H5OBJ_ATTR,   /* one attribute */
    H5OBJ_VALUE,  /* a dataset's values: a selection or points */
    H5OBJ_ACLS,   /* the entries of the ACL that governs the domain (users only) */
    H5OBJ_ACL,    /* one user's rights on the domain (name: the user) */
    H5OBJ_FOLDER, /* the domains and folders in a folder (GET /domains) */
    /* the changes, each atomic and durable */
    H5OBJ_PUT_DOMAIN,    /* create the file, or a folder (or, with flush, nothing) */
    H5OBJ_DELETE_DOMAIN, /* remove the file, or an empty folder */
    H5OBJ_POST_GROUP,    /* a new group, linked or anonymous */
    H5OBJ_PUT_LINK,      /* a hard, soft or external link (name), or several (body {"links"}) */
    H5OBJ_DELETE_LINK,   /* one link (name), or several (names) */
    H5OBJ_POST_DATASET,  /* a new dataset, linked or anonymous */
    H5OBJ_PUT_VALUE,     /* values into a selection */
    H5OBJ_PUT_SHAPE,     /* resize ({"shape"}), or grow one axis ({"extend", "extend_dim"}) */
    H5OBJ_PUT_ATTR,      /* one attribute (name) or several (body {"attributes"}) */
    H5OBJ_DELETE_ATTR,   /* one attribute (name), or several (names) */
    H5OBJ_PUT_ACL,       /* one user's entry in the ACL of the domain's folder */
    H5OBJ_DELETE_OBJECT  /* every hard link to a group, dataset or datatype */
} h5obj_op;

/* What the HSDS API calls a collection: the kind of object an id names. */
typedef enum { H5OBJ_ANY, H5OBJ_GROUPS, H5OBJ_DATASETS, H5OBJ_DATATYPES } h5obj_coll;

typedef struct {
    h5obj_op op;
    const char *domain;
    const file_access *fa; /* who asks (storage/acl.h: their rights); NULL: users off */
    h5obj_coll coll;       /* the kind the id must name (ANY: as its prefix says) */
    const char *id;        /* g-/d-/t- and 32 hex digits */
    const char *name;      /* a link's or an attribute's; ACL, PUT_ACL: the user's */
    const char *names;     /* DELETE_LINK, DELETE_ATTR without name: those, split at sep */
    const char *sep;       /* names' separator (NULL or "": "/") */
    const char *owner;     /* DOMAIN, users off: shown as the owner (NULL: "h5ark") */
    bool verbose;          /* DOMAIN, GET: the counts of the file or the dataset's storage */
    bool getalias;         /* GET: the paths to the object */
    bool include_data;     /* ATTRS: each value too */
    bool create_order;     /* LINKS, ATTRS: creation order where the group tracks it */
    bool follow_links;     /* LINKS: every group below, by id */
    const char *pattern;   /* LINKS, ATTRS, FOLDER: a shell pattern on names (NULL: all) */
    const char *marker;    /* LINKS, ATTRS, FOLDER: those after this name */
    int64_t limit;         /* LINKS, ATTRS, FOLDER: at most this many (<= 0: all) */
    /* VALUE: the selection (§8.1; NULL: all) or the points (uint64 little-endian
     * coordinates, rank per point) */
    const char *select;
    const void *points;
    size_t points_len;
    const char *fields; /* VALUE, PUT_VALUE: only these members of a compound, "a:b" */
    bool json_values;   /* VALUE: as nested lists in `value` (else bytes) */
    bool file_answer;   /* VALUE: the answer may be a range of the file (h5obj_answer) */
    uint64_t max_bytes; /* VALUE: an answer larger is resource_limit */
    /* The changes: the request's body, JSON (HSDS_API.md's), or for PUT_VALUE with
     * body_binary the elements' bytes (§8.2). */
    const char *body;
    size_t body_len;
    bool body_binary;
    bool replace;       /* PUT_ATTR: an existing one is replaced (else already_exists) */
    bool element_count; /* PUT_VALUE: the body is one element, written everywhere */
} h5obj_args;

typedef struct {
    h5ark_value *json; /* the answer's map */
    char *bytes;       /* VALUE without json_values: the elements (malloc'd) */
    size_t nbytes;
    /* VALUE with file_answer: the elements are read from the file as they are sent
     * (h5obj_run_read, nbytes of them), the file under the request's shared flock until the
     * last is read, so that no change lands on them; h5obj_run_done once sent or dropped.
     * Whoever sends them takes run; NULL otherwise. */
    void *run;
    bool created; /* a change made something new (HTTP's 201) */
} h5obj_answer;

/* The limit of a request's or an answer's bytes (GET /'s `limits`). */
#define H5OBJ_MAX_REQUEST (UINT64_C(100) << 20)
/* The least answer read from the file as it is sent (smaller ones are read at once). */
#define H5OBJ_FILE_ANSWER_MIN (UINT64_C(256) << 10)

/* Run one operation. Errors as shared/HSDS_API.md §12 lists them: bad_request (malformed
 * id, select, a file that is not HDF5), forbidden (a path out of the data directory),
 * not_found (domain, id, link, attribute), resource_limit (too large). */
int h5obj_run(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);
void h5obj_answer_free(h5obj_answer *a);
/* A block for an answer's bytes (n of them, or 1 when n is 0; NULL when out of memory),
 * and its release (bytes: at most its size; NULL: nothing): blocks are kept for reuse, so
 * that the pages of a large answer need not be faulted in afresh for the next one. */
char *h5obj_bytes_alloc(uint64_t n);
void h5obj_bytes_free(char *bytes, size_t n);
long h5obj_run_read(void *run, uint64_t pos, char *buf, size_t max);
void h5obj_run_done(void *run);

/* The file at abs (absolute) was removed: the read handle kept for it between requests is
 * closed now (once its last request is done), giving its space back, rather than when it
 * is next found idle. */
void h5obj_forget(const char *abs);

/* Check a domain as given (absolute, no `.`, `..`, empty or hidden components, no control
 * characters): bad_request or forbidden naming what is wrong. */
int h5obj_check_domain(const char *domain, h5ark_error *err);

#endif
