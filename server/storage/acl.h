/* Permissions on files (SERVICE.md §3): HSDS's six, per subject, held by a folder's
 * `.h5ark-acl` for it and everything below down to the next folder with its own, or
 * given by the defaults of where the folder lies (home/<user>/, shared/<group>/, the
 * rest). The commands layer builds a file_access from the request's caller and hands it
 * to files.h, which asks here; nothing here knows of requests or tokens. */
#ifndef H5ARK_ACL_H
#define H5ARK_ACL_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Who asks for a file. user NULL: users are off, and every rule here is skipped. */
typedef struct file_access {
    const char *user;
    const char *const *groups;
    size_t ngroups;
    bool admin; /* the admin role: every permission everywhere */
    /* The user's quota.disk (SERVICE.md §4), -1: none; for the writers that check it
     * themselves (storage/owners.h: owners_room). */
    int64_t disk_quota;
} file_access;

typedef enum file_perm {
    PERM_READ,
    PERM_CREATE, /* new files and folders */
    PERM_UPDATE, /* truncate, append, update, writepart, repack */
    PERM_DELETE,
    PERM_READ_ACL,
    PERM_UPDATE_ACL,
    PERM_COUNT,
    PERM_WRITE = PERM_COUNT /* files.h: create when the file is new, update when it is there */
} file_perm;

extern const char *const acl_perm_names[PERM_COUNT]; /* "read", ..., "updateACL" */

#define ACL_FILE        ".h5ark-acl"
#define ACL_SUBJECT_MAX 68 /* "g:" and a name of up to 64 */
#define ACL_ENTRIES_MAX 1024

typedef struct acl_entry {
    char subject[ACL_SUBJECT_MAX]; /* a user, g:GROUP or default */
    bool allow[PERM_COUNT];
} acl_entry;

typedef struct acl {
    acl_entry *entries;
    size_t n;
} acl;

static inline bool file_access_on(const file_access *fa) {
    return fa && fa->user;
}

/* An ACL from the JSON of a `.h5ark-acl` (an array of {"subject", "read": bool, ...};
 * a permission left out is false). bad_request says what is wrong. */
int acl_parse_json(const char *text, size_t len, acl *out, h5ark_error *err);
/* The same from setacl's argument (an array of maps). */
int acl_from_value(const h5ark_value *v, acl *out, h5ark_error *err);
/* As getacl answers it: [{"subject", "read", ...}] with every permission. */
h5ark_value *acl_to_value(const acl *a);
void acl_free(acl *a);

/* The ACL that governs the folder `dir` (relative to the data directory, "" its root):
 * the nearest `.h5ark-acl` at or above it, whose folder goes to `from` ("" the root), or
 * with *is_default the defaults of where `dir` lies (`from` is then `dir`). A file that
 * cannot be read or parsed is an error naming its folder. */
int acl_of_folder(const char *dir, acl *out, char *from, size_t fromlen, bool *is_default,
                  h5ark_error *err);

/* May fa do p in the folder `dir` (relative to the data directory)? Users off or admin:
 * always. 1 yes, 0 no, -1 with err when the ACL cannot be read. */
int acl_allows(const file_access *fa, const char *dir, file_perm p, h5ark_error *err);

/* Replace the ACL of folder `abs_dir` atomically: a temporary beside it written and
 * fsynced, renamed over `.h5ark-acl`, the folder fsynced; through sysio. */
int acl_write(const char *abs_dir, const acl *a, const char *shown, h5ark_error *err);

#endif
