/* The cache of freed shard memory (see shardcache.h). One list, oldest block first, under
 * one lock: it holds few blocks (each at least SHARDCACHE_MIN_BYTES), and a take or give
 * happens once per shard, not per element. */
#include "shardcache.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

/* Kept in the first bytes of the cached block itself, so caching never allocates. */
typedef struct node {
    struct node *prev, *next;
    uint64_t bytes;
    int locale;
} node;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static node *oldest, *newest;
static uint64_t cached, limit;

void shardcache_init(uint64_t max_bytes) {
    limit = max_bytes;
}

static void unlink_node(node *n) {
    if (n->prev)
        n->prev->next = n->next;
    else
        oldest = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        newest = n->prev;
    cached -= n->bytes;
}

/* Unlink the oldest blocks until at most `room` bytes stay; returns them chained by next,
 * to be freed outside the lock (returning a large block to the kernel takes a while). */
static node *evict_locked(uint64_t room) {
    node *victims = NULL;
    while (cached > room && oldest) {
        node *n = oldest;
        unlink_node(n);
        n->next = victims;
        victims = n;
    }
    return victims;
}

static void free_chain(node *n) {
    while (n) {
        node *next = n->next;
        free(n);
        n = next;
    }
}

void shardcache_shutdown(void) {
    pthread_mutex_lock(&lock);
    node *all = evict_locked(0);
    pthread_mutex_unlock(&lock);
    free_chain(all);
}

void *shardcache_take(int locale, uint64_t bytes) {
    if (bytes < SHARDCACHE_MIN_BYTES) return NULL;
    pthread_mutex_lock(&lock);
    node *best = NULL;
    for (node *n = newest; n; n = n->prev)
        if (n->locale == locale && n->bytes >= bytes && n->bytes / 2 <= bytes &&
            (!best || n->bytes < best->bytes))
            best = n;
    if (best) unlink_node(best);
    pthread_mutex_unlock(&lock);
    if (!best || best->bytes == bytes) return best;
    /* Shrinking keeps the pages it keeps (mremap for large blocks) and returns the rest,
     * so the shard's accounted bytes are what it holds. */
    void *p = realloc(best, bytes);
    if (!p) free(best);
    return p;
}

void *shardcache_alloc(int locale, uint64_t bytes) {
    void *p = shardcache_take(locale, bytes);
    return p ? p : malloc(bytes ? bytes : 1);
}

void shardcache_give(int locale, void *block, uint64_t bytes) {
    if (!block) return;
    if (bytes < SHARDCACHE_MIN_BYTES || bytes > limit) {
        free(block);
        return;
    }
    node *n = block;
    pthread_mutex_lock(&lock);
    node *victims = evict_locked(limit - bytes);
    *n = (node){.prev = newest, .next = NULL, .bytes = bytes, .locale = locale};
    if (newest)
        newest->next = n;
    else
        oldest = n;
    newest = n;
    cached += bytes;
    pthread_mutex_unlock(&lock);
    free_chain(victims);
}

void shardcache_fit(uint64_t room) {
    pthread_mutex_lock(&lock);
    node *victims = evict_locked(room);
    pthread_mutex_unlock(&lock);
    free_chain(victims);
}

uint64_t shardcache_empty(void) {
    pthread_mutex_lock(&lock);
    uint64_t had = cached;
    node *all = evict_locked(0);
    pthread_mutex_unlock(&lock);
    free_chain(all);
    /* Blocks under the mmap threshold, and every other freed chunk, go back to malloc's
     * heap, which keeps their pages: trimming gives them to the kernel. */
    malloc_trim(0);
    return had;
}

uint64_t shardcache_bytes(void) {
    pthread_mutex_lock(&lock);
    uint64_t n = cached;
    pthread_mutex_unlock(&lock);
    return n;
}

uint64_t shardcache_limit(void) {
    return limit;
}
