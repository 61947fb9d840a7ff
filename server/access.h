/* What a request's caller may do with files (storage/acl.h), from who the entry says the
 * caller is (entry.h). Users off (no user): a file_access without user, every rule of
 * homes and ACLs skipped. */
#ifndef H5ARK_ACCESS_H
#define H5ARK_ACCESS_H

#include "entry.h"
#include "storage/acl.h"

static inline file_access access_of(const caller *who) {
    if (!who || !who->user) return (file_access){0};
    return (file_access){.user = who->user->name,
                         .groups = who->user->groups,
                         .ngroups = who->user->ngroups,
                         .admin = who->role == ROLE_ADMIN,
                         .disk_quota = who->user->quota.disk};
}

/* The caller of the request this thread runs. */
static inline file_access access_here(void) {
    return access_of(entry_caller());
}

#endif
