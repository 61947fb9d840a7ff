/* Users of a shared service (SERVICE.md §1): who a token names, their groups and quotas.
 *
 * Off unless the token file names users: then every caller's `user` is NULL and every
 * rule of users, namespaces, ACLs and quotas is skipped, as before they existed. A user
 * lives as long as the token table that named it; a request keeps the table it was
 * admitted with (a reload does not pull it away from under a running request). */
#ifndef H5ARK_USERS_H
#define H5ARK_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* What a token may do. */
typedef enum caller_role { ROLE_READ, ROLE_WRITE, ROLE_ADMIN } caller_role;

/* A user's quotas; -1: none set. */
typedef struct user_quotas {
    int64_t memory, disk, objects, requests;
} user_quotas;

typedef struct user {
    const char *name; /* [A-Za-z0-9_.-]{1,64} */
    const char *const *groups;
    size_t ngroups;
    user_quotas quota;
} user;

static inline bool user_in_group(const user *u, const char *group) {
    for (size_t i = 0; u && i < u->ngroups; i++)
        if (strcmp(u->groups[i], group) == 0) return true;
    return false;
}

#endif
