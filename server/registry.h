/* Named objects and the memory they take. Publishing and lookup are guarded by one lock;
 * a reader holds a reference, never the lock, while it works. */
#ifndef H5ARK_REGISTRY_H
#define H5ARK_REGISTRY_H

#include "objects/object.h"
#include "users.h"

#include <stdbool.h>
#include <stddef.h>

#define REGISTRY_MAX_NAME 256

void registry_init(uint64_t max_memory);
void registry_shutdown(void); /* releases every object */

/* Account `bytes` against --max-memory before allocating them (resource_limit if the
 * total would pass it), and shrink the shard cache so that the memory can be had.
 * Released by registry_unreserve when the memory is freed. Cached shard memory
 * (shardcache.h) is not counted: the total is what live objects and work take. */
int registry_reserve(uint64_t bytes, h5ark_error *err);
/* The two halves of registry_reserve, for darray_new: it takes the cached blocks it can
 * reuse between them, so making room does not throw away the memory it is about to use. */
int registry_reserve_only(uint64_t bytes, h5ark_error *err);
void registry_make_room(void); /* shrink the cache to what live objects leave free */
void registry_unreserve(uint64_t bytes);
/* Scratch memory of a command, counted as above: reserve `bytes`, then allocate them into
 * *p (NULL on failure; resource_limit past --max-memory or out of memory). *reserved grows
 * by what stays reserved: registry_unreserve it once the buffers are freed. */
int registry_scratch(uint64_t bytes, void **p, uint64_t *reserved, h5ark_error *err);
/* The same within a call that every rank makes: each rank takes its own, then the ranks
 * agree (every rank has its scratch, or all fail with the lowest failing rank's error). */
int registry_scratch_agreed(uint64_t bytes, void **p, uint64_t *reserved, h5ark_error *err);
uint64_t registry_memory_used(void);
uint64_t registry_memory_limit(void);
size_t registry_count(void); /* objects published under a name */
/* How many times a name was published or removed: unchanged means nothing changed. */
uint64_t registry_changes(void);
/* Bytes and objects held under one owner's names (SERVICE.md §2, §4): the bytes of the
 * arrays made by the owner's requests that are still alive (every rank's together, so every
 * rank counts the same), and the objects published under the owner's names. */
void registry_usage_of(const char *owner, uint64_t *memory, uint64_t *objects);

/* Namespaces (SERVICE.md §2). A request's names are resolved for its caller: the entry
 * enters the caller's scope on the request's thread before the work and leaves it after
 * (user NULL: users off, one namespace, everything as before). Within a user's scope a
 * bare name `x` is the caller's own, `OWNER/NAME` another's, readable when shared with the
 * caller (the user, `g:GROUP` of the user's, or `*`) or when the caller is an admin;
 * objects published get the caller as owner. */
typedef struct registry_scope {
    const user *who;
    bool admin;
    /* The token table the request was admitted with, where another user's quotas are found
     * (an admin publishing over their name); NULL where none is held (a rank > 0: rank 0's
     * decision is agreed on after publishing). */
    const users_table *users;
    struct registry_undo *undo; /* objects this scope replaced, until it is left */
} registry_scope;
/* Answers the scope it replaced; the new one keeps its token table. */
registry_scope registry_enter(const user *who, bool admin);
/* The token table of this scope (NULL: keep the one it has). */
void registry_enter_users(const users_table *t);
/* Leave the scope: the objects it replaced are released, and the previous scope is back. */
void registry_leave(registry_scope previous);
/* The user whose scope this thread is in; NULL: none (users off). */
const char *registry_viewer(void);
/* obj's name as this thread's caller gives it: its own name, or "OWNER/NAME" for
 * another's (written into buf, of at least REGISTRY_MAX_NAME * 2 bytes). */
const char *registry_name_for(const object *obj, char *buf);

/* An owner's account of memory (darray.h's arrays charge it). NULL: users off. */
typedef struct registry_account registry_account;
/* Charge `bytes` to the caller's account before allocating them: resource_limit naming
 * quota.memory (usage, need, quota) or quota.objects when the caller would pass either.
 * *to: the account charged (NULL when users are off), for registry_uncharge. */
int registry_charge(uint64_t bytes, registry_account **to, h5ark_error *err);
void registry_uncharge(registry_account *account, uint64_t bytes);

/* Grant (share) or take back (!share) read access to the caller's object `name` for
 * `subjects` (user names, "g:GROUP", "*"); *grants set to the name's grants afterwards
 * (a new array of strings). Only the owner or an admin; a grant is on the name, so it
 * holds for a later object of the same name. */
int registry_share(const char *name, const char *const *subjects, size_t n, bool share,
                   h5ark_value **grants, h5ark_error *err);

/* For checkpoints (SERVICE.md §5): the subjects obj's name is shared with (a new array,
 * empty when none; NULL when out of memory), and obj published again under `owner` (NULL:
 * none) and `name` with those grants, whoever calls. */
h5ark_value *registry_grants_of(const object *obj);
int registry_restore(object *obj, const char *owner, const char *name, const char *const *grants,
                     size_t ngrants, h5ark_error *err);

/* Check a client-chosen name: 1..255 printable characters, no '/'. */
int registry_check_name(const char *name, h5ark_error *err);
/* Publish obj under `name` (NULL: a fresh unique name) in the caller's namespace (a name
 * `OWNER/NAME` only when OWNER is the caller). Takes a reference of its own; already_exists
 * if the name is taken, resource_limit past quota.objects. An admin's `OWNER/NAME` of
 * another user replaces OWNER's existing NAME (as registry_replace; never creates one):
 * owned by OWNER, its arrays charged to OWNER (checked against OWNER's quota.memory). */
int registry_publish(object *obj, const char *name, h5ark_error *err);
/* The same, where a name taken is replaced in one step: a reader sees the old object or
 * the new, never none, and a failure leaves the old one. The old object is kept until the
 * scope is left, so registry_unpublish can put it back. */
int registry_replace(object *obj, const char *name, h5ark_error *err);
/* Undo a publish of obj that the other ranks did not agree to: its name goes, or holds the
 * object it replaced again. Nothing when obj is no longer published there. */
void registry_unpublish(object *obj);
/* A new reference to the object named `name`, or NULL with not_found. */
object *registry_get(const char *name, h5ark_error *err);
/* Unpublish the caller's own object; the memory goes when the last reference does.
 * not_found if absent; another's: forbidden if the caller may read it, else not_found. */
int registry_remove(const char *name, h5ark_error *err);
/* The same, where an admin may also remove another's object (the `delete` command);
 * check_only: only whether it would. */
int registry_delete(const char *name, bool check_only, h5ark_error *err);
size_t registry_clear(void); /* the caller's objects (users off: every object) */
/* Every namespace's objects: forbidden unless users are off or the caller is an admin. */
int registry_clear_all(size_t *deleted, h5ark_error *err);
/* New references to every object the caller may read (users off: every published object):
 * the caller's own sorted by name, then others' by owner and name; *count set. Free the
 * array with registry_list_free. */
object **registry_list(size_t *count);
/* For checkpoints: every object of every owner (everyone), or the caller's own (users off:
 * every object); free with registry_list_free. */
object **registry_list_of(bool everyone, size_t *count);
void registry_list_free(object **list, size_t count);

#endif
