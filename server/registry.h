/* Named objects and the memory they take. Publishing and lookup are guarded by one lock;
 * a reader holds a reference, never the lock, while it works. */
#ifndef H5ARK_REGISTRY_H
#define H5ARK_REGISTRY_H

#include "objects/object.h"

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
/* Bytes and objects held under one owner's names (SERVICE.md §2, §4). */
void registry_usage_of(const char *owner, uint64_t *memory, uint64_t *objects);

/* Check a client-chosen name: 1..255 printable characters, no '/'. */
int registry_check_name(const char *name, h5ark_error *err);
/* Publish obj under `name` (NULL: a fresh unique name). Takes a reference of its own;
 * already_exists if the name is taken. */
int registry_publish(object *obj, const char *name, h5ark_error *err);
/* A new reference to the object named `name`, or NULL with not_found. */
object *registry_get(const char *name, h5ark_error *err);
/* Unpublish; the memory goes when the last reference does. not_found if absent. */
int registry_remove(const char *name, h5ark_error *err);
size_t registry_clear(void);
/* New references to every published object, sorted by name; *count set. Free the array
 * with registry_list_free. */
object **registry_list(size_t *count);
void registry_list_free(object **list, size_t count);

#endif
