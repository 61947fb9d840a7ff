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

/* What outlives a token table: a user's requests in flight, counted across reloads. */
typedef struct user_state user_state;

typedef struct user {
    const char *name; /* [A-Za-z0-9_.-]{1,64} */
    const char *const *groups;
    size_t ngroups;
    user_quotas quota;
    user_state *state; /* NULL for a user forwarded to a rank > 0 (rank 0 counts) */
} user;

static inline bool user_in_group(const user *u, const char *group) {
    for (size_t i = 0; u && i < u->ngroups; i++)
        if (strcmp(u->groups[i], group) == 0) return true;
    return false;
}

/* "read", "write" or "admin"; from a name: 0, or -1 when it is none of them. */
const char *users_role_name(caller_role role);
int users_role_from_name(const char *name, caller_role *out);

/* One reading of --token-file: its tokens, each with a role and (when the file names
 * users) a user; reference counted, so a request keeps the one it was admitted with. */
typedef struct users_table users_table;

/* Parse a token file's text (len bytes, NUL bytes refused), as SERVICE.md §1 says:
 * `TOKEN [ROLE] [key=value ...]`, `#` comments and blank lines skipped. 0 and *out (one
 * reference), or -1 and `why` saying which line (and key) is wrong; `why` never holds a
 * token. `source` names the file in `why`. */
int users_parse(const char *text, size_t len, const char *source, users_table **out, char *why,
                size_t why_len);
/* Read and parse the file at path (as users_parse). */
int users_load(const char *path, users_table **out, char *why, size_t why_len);

/* The table in force: NULL when the daemon has no token file. users_acquire takes a
 * reference (users_release gives it back); users_install puts t in force for the
 * requests admitted after it and drops the table it replaces (its last reference goes
 * with the last request admitted with it). */
users_table *users_acquire(void);
void users_release(users_table *t);
void users_install(users_table *t);

/* The token given (len bytes) in t: its index, role and user (NULL: the file names no
 * users), or -1. Every token is compared in full, whatever matches, so the time taken
 * says nothing about which one did. */
int users_match(const users_table *t, const char *token, size_t len, caller_role *role,
                const user **who);
/* How many tokens and users t holds. */
size_t users_token_count(const users_table *t);
size_t users_count(const users_table *t);
/* Whether t names users (SERVICE.md: everything of users is off when not). */
bool users_named(const users_table *t);
/* The user named `name` in t, or NULL. */
const user *users_find(const users_table *t, const char *name);
/* The groups t names, sorted, each once: i < users_group_count(t). */
size_t users_group_count(const users_table *t);
const char *users_group(const users_table *t, size_t i);

/* Make shared/<group>/ under data_dir for every group t names (0), or -1 with why. */
int users_make_shared(const users_table *t, const char *data_dir, char *why, size_t why_len);
/* Read the token file at path and put it in force for the requests that come after (its
 * groups' shared folders made first); -1 with why, the table in force staying, when it
 * cannot be read, parsed or its folders made. */
int users_reload(const char *path, const char *data_dir, char *why, size_t why_len);

/* users_reload of --token-file (config.h), logged as done `by` (SIGHUP, reload). */
int users_reread(const char *by, char *why, size_t why_len);

/* u's slot in the per-user request counter, slot_of(u->name) asked once per user name
 * (metrics.h); -1 for NULL or a user with no state. */
int users_metrics_slot(const user *u, int (*slot_of)(const char *name));

/* quota.requests: count a request of u's in flight (0), or -1 when u already has its
 * quota of them in flight (nothing counted). users_request_end ends one counted. No-ops
 * for NULL or a user with no state. */
int users_request_begin(const user *u);
void users_request_end(const user *u);
/* u's requests in flight now. */
int64_t users_requests_in_flight(const user *u);

#endif
