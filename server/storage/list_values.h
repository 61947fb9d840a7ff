/* lshdf's listing (list.c), in two files: list.c walks the file and names what it finds;
 * list_values.c reads what an entry shows of types, attributes and scalar values, and holds
 * the helpers both use to report a failure. The file is untrusted (list.c). */
#ifndef H5ARK_STORAGE_LIST_VALUES_H
#define H5ARK_STORAGE_LIST_VALUES_H

#include "storage.h"

#include <hdf5.h>

#include <stdbool.h>
#include <stdint.h>

/* Attributes larger than this are described, not read. */
#define ATTR_MAX_ELEMS 64
#define ATTR_MAX_BYTES 65536
#define ATTR_MAX_COUNT 256
/* Longest text put in a reply for one name, path or string value. */
#define TEXT_MAX       4096
#define LINK_VALUE_MAX 65536

/* A name no file uses: looking it up makes HDF5 decode every attribute (or link) message
 * of an object header one by one, failing cleanly on a damaged one. Listing them instead
 * first builds a table whose error path in HDF5 1.10 frees uninitialised entries (a crash),
 * so the lookup runs first as a probe. */
#define PROBE_NAME "\x7fh5ark-probe\x7f"

typedef struct {
    haddr_t addr;
    char *path; /* where the object was first seen */
} seen_slot;

typedef struct {
    const char *file; /* as the client named it, for messages */
    hid_t fid;
    list_mode mode;
    h5ark_value *entries;
    size_t nentries;
    seen_slot *seen; /* open addressing on object address */
    size_t seen_cap, seen_len;
    h5ark_error *err;
} lister;

/* What an object's attributes say of its objtype. */
typedef struct {
    bool has_objtype, objtype_int;
    int64_t objtype;
    bool is_bool;
    bool is_bigint;
} attr_facts;

/* HDF5's reason for the failure now on the stack, kept for lister_fail and the reply
 * (cleanup calls between the failure and its report clear the stack). */
void lister_capture(void);
void lister_capture_clear(void);
/* A reply string from bytes a file supplied: ill-formed UTF-8 as \xNN, long text cut. */
h5ark_value *lister_text(const char *s, size_t n);
h5ark_value *lister_cstr(const char *s);
/* resource_limit "out of memory listing FILE"; -1. */
int lister_oom(lister *ls);
/* schema_error naming the file and what was being done, with HDF5's reason; -1. */
int lister_fail(lister *ls, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* h5ark_value_set / _push, out of memory as lister_oom. */
int lister_put(lister *ls, h5ark_value *map, const char *key, h5ark_value *val);
int lister_push(lister *ls, h5ark_value *array, h5ark_value *item);

/* A sentence on types the dtype name says too little about ("" when none). */
void list_type_detail(hid_t type, char *buf, size_t len);
bool list_type_is_numeric(hid_t type);
/* The `attrs` map of an object into entry (in creation order when tracked, else by name),
 * and what they say of its objtype into facts. */
int list_read_attrs(lister *ls, hid_t obj, H5O_type_t type, const char *path, hsize_t nattrs,
                    h5ark_value *entry, attr_facts *facts);
/* The value of a scalar dataset into entry (LIST_VIEW); an unreadable one as value_error. */
int list_scalar_value(lister *ls, hid_t did, hid_t type, bool is_bool, h5ark_value *entry);

#endif
