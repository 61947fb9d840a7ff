/* The object registry (see registry.h): a chained hash table of published objects. */
#include "registry.h"

#include "dist/ranks.h"
#include "shardcache.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    object *obj;
    struct entry *next;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry **buckets;
static size_t nbuckets, nobjects;
static atomic_uint_fast64_t memory_used;
static atomic_uint_fast64_t changes; /* publishes and removals: has anything changed */
static uint64_t memory_limit;

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void registry_init(uint64_t max_memory) {
    memory_limit = max_memory;
    nbuckets = 1024;
    buckets = calloc(nbuckets, sizeof *buckets);
}

void registry_shutdown(void) {
    registry_clear();
    free(buckets);
    buckets = NULL;
}

int registry_reserve_only(uint64_t bytes, h5ark_error *err) {
    uint64_t used = atomic_load(&memory_used);
    do {
        if (bytes > memory_limit || used > memory_limit - bytes)
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                              "needs %llu bytes but only %llu of the daemon's --max-memory "
                              "%llu are free",
                              (unsigned long long)bytes,
                              (unsigned long long)(used < memory_limit ? memory_limit - used : 0),
                              (unsigned long long)memory_limit);
    } while (!atomic_compare_exchange_weak(&memory_used, &used, used + bytes));
    return 0;
}

void registry_make_room(void) {
    uint64_t used = atomic_load(&memory_used);
    shardcache_fit(used < memory_limit ? memory_limit - used : 0);
}

int registry_reserve(uint64_t bytes, h5ark_error *err) {
    if (registry_reserve_only(bytes, err)) return -1;
    registry_make_room();
    return 0;
}

void registry_unreserve(uint64_t bytes) {
    atomic_fetch_sub(&memory_used, bytes);
}
int registry_scratch(uint64_t bytes, void **p, uint64_t *reserved, h5ark_error *err) {
    *p = NULL;
    if (registry_reserve(bytes, err)) return -1;
    if (!(*p = malloc(bytes ? bytes : 1))) {
        registry_unreserve(bytes);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory allocating %llu bytes",
                          (unsigned long long)bytes);
    }
    *reserved += bytes;
    return 0;
}

int registry_scratch_agreed(uint64_t bytes, void **p, uint64_t *reserved, h5ark_error *err) {
    return ranks_agree(registry_scratch(bytes, p, reserved, err), err);
}

uint64_t registry_memory_used(void) {
    return atomic_load(&memory_used);
}
uint64_t registry_memory_limit(void) {
    return memory_limit;
}

void registry_usage_of(const char *owner, uint64_t *memory, uint64_t *objects) {
    (void)owner; /* objects have no owners yet */
    *memory = 0;
    *objects = 0;
}

uint64_t registry_changes(void) {
    return atomic_load(&changes);
}

size_t registry_count(void) {
    pthread_mutex_lock(&lock);
    size_t n = nobjects;
    pthread_mutex_unlock(&lock);
    return n;
}

int registry_check_name(const char *name, h5ark_error *err) {
    size_t n = strlen(name);
    if (n == 0 || n >= REGISTRY_MAX_NAME)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "object names must be 1 to %d bytes long",
                          REGISTRY_MAX_NAME - 1);
    for (const char *p = name; *p; p++)
        if (iscntrl((unsigned char)*p) || *p == '/')
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "object name '%s' contains '/' or a control character", name);
    return 0;
}

static entry **find(const char *name) {
    entry **e = &buckets[hash(name) % nbuckets];
    while (*e && strcmp((*e)->obj->name, name) != 0)
        e = &(*e)->next;
    return e;
}

static void grow(void) {
    size_t n = nbuckets * 2;
    entry **nb = calloc(n, sizeof *nb);
    if (!nb) return; /* keep the old table: longer chains, still correct */
    for (size_t i = 0; i < nbuckets; i++)
        for (entry *e = buckets[i], *next; e; e = next) {
            next = e->next;
            size_t h = hash(e->obj->name) % n;
            e->next = nb[h];
            nb[h] = e;
        }
    free(buckets);
    buckets = nb;
    nbuckets = n;
}

int registry_publish(object *obj, const char *name, h5ark_error *err) {
    char generated[48];
    if (name && registry_check_name(name, err)) return -1;
    pthread_mutex_lock(&lock);
    if (!name) {
        /* generated names start with "id_", which client names may also use: skip taken ones
         * (the layer makes them the same on every rank of a call) */
        do
            ranks_call_name(generated, sizeof generated);
        while (*find(generated));
        name = generated;
    }
    entry **slot = find(name);
    if (*slot) {
        pthread_mutex_unlock(&lock);
        return h5ark_fail(err, H5ARK_ALREADY_EXISTS, "an object named '%s' already exists", name);
    }
    entry *e = malloc(sizeof *e);
    char *copy = strdup(name);
    if (!e || !copy) {
        pthread_mutex_unlock(&lock);
        free(e);
        free(copy);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    free(obj->name);
    obj->name = copy;
    e->obj = object_ref(obj);
    e->next = NULL;
    *slot = e;
    if (++nobjects > nbuckets) grow();
    atomic_fetch_add(&changes, 1);
    pthread_mutex_unlock(&lock);
    return 0;
}

object *registry_get(const char *name, h5ark_error *err) {
    /* "parent/component/..." reaches inside composites (published names have no '/') */
    char top[REGISTRY_MAX_NAME];
    const char *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name);
    if (n >= sizeof top) {
        h5ark_fail(err, H5ARK_NOT_FOUND, "no object named '%.300s'", name);
        return NULL;
    }
    memcpy(top, name, n);
    top[n] = '\0';
    pthread_mutex_lock(&lock);
    entry *e = *find(top);
    object *obj = e ? object_ref(e->obj) : NULL;
    pthread_mutex_unlock(&lock);
    while (obj && slash) {
        const char *part = slash + 1;
        slash = strchr(part, '/');
        size_t len = slash ? (size_t)(slash - part) : strlen(part);
        object *child = NULL;
        for (size_t i = 0; i < obj->ncomponents; i++)
            if (strlen(obj->components[i].name) == len &&
                memcmp(obj->components[i].name, part, len) == 0)
                child = object_ref(obj->components[i].obj);
        object_release(obj);
        obj = child;
    }
    if (!obj) h5ark_fail(err, H5ARK_NOT_FOUND, "no object named '%.300s'", name);
    return obj;
}

int registry_remove(const char *name, h5ark_error *err) {
    pthread_mutex_lock(&lock);
    entry **slot = find(name);
    entry *e = *slot;
    if (e) {
        *slot = e->next;
        nobjects--;
        atomic_fetch_add(&changes, 1);
    }
    pthread_mutex_unlock(&lock);
    if (!e) return h5ark_fail(err, H5ARK_NOT_FOUND, "no object named '%s'", name);
    object_release(e->obj);
    free(e);
    return 0;
}

size_t registry_clear(void) {
    pthread_mutex_lock(&lock);
    entry *all = NULL;
    for (size_t i = 0; i < nbuckets; i++)
        for (entry *e = buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = all;
            all = e;
        }
    if (buckets) memset(buckets, 0, nbuckets * sizeof *buckets);
    size_t n = nobjects;
    nobjects = 0;
    atomic_fetch_add(&changes, 1);
    pthread_mutex_unlock(&lock);
    for (entry *e = all, *next; e; e = next) {
        next = e->next;
        object_release(e->obj);
        free(e);
    }
    return n;
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(object *const *)a)->name, (*(object *const *)b)->name);
}

object **registry_list(size_t *count) {
    pthread_mutex_lock(&lock);
    object **list = malloc((nobjects ? nobjects : 1) * sizeof *list);
    size_t n = 0;
    if (list)
        for (size_t i = 0; i < nbuckets; i++)
            for (entry *e = buckets[i]; e; e = e->next)
                list[n++] = object_ref(e->obj);
    pthread_mutex_unlock(&lock);
    if (list) qsort(list, n, sizeof *list, by_name);
    *count = n;
    return list;
}

void registry_list_free(object **list, size_t count) {
    for (size_t i = 0; i < count; i++)
        object_release(list[i]);
    free(list);
}
