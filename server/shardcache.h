/* Freed shard memory kept for reuse. Touching fresh pages costs more than copying into
 * them (docs/DESIGN.md), and the C library hands large blocks back to the kernel when they are
 * freed, so without this every new array would pay for its pages again. Each locale keeps
 * the large blocks its shards used, and a new shard of similar size on that locale takes
 * one instead of allocating.
 *
 * Bounds: the cache holds at most shardcache_init's `limit` bytes, and never stands in
 * the way of live objects: every reservation of memory ends in registry_make_room, which
 * calls shardcache_fit so that live plus cached bytes stay within --max-memory. Cached
 * bytes are not in registry_memory_used. */
#ifndef H5ARK_SHARDCACHE_H
#define H5ARK_SHARDCACHE_H

#include <stdint.h>

/* Blocks smaller than this are left to malloc, which reuses them well by itself. */
#define SHARDCACHE_MIN_BYTES (UINT64_C(1) << 20)

void shardcache_init(uint64_t limit); /* limit 0: keep nothing */
void shardcache_shutdown(void);       /* frees every cached block */

/* A cached block of `locale` of exactly `bytes` bytes (a larger one, up to twice the size,
 * is cut down to fit), or NULL. Its contents are whatever it last held. */
void *shardcache_take(int locale, uint64_t bytes);
/* Hand over a block of `bytes` bytes (as allocated) that locale's shard used: kept if it is
 * large and fits within the limit (older blocks give way), freed otherwise. */
void shardcache_give(int locale, void *block, uint64_t bytes);
/* Scratch memory for work on `locale` (sorting, say): a cached block when one fits, else a
 * fresh one; NULL when out of memory. Hand it back with shardcache_give, same bytes. */
void *shardcache_alloc(int locale, uint64_t bytes);
/* Free cached blocks, oldest first, until at most `room` bytes are cached. */
void shardcache_fit(uint64_t room);
/* Free every cached block, then hand the heap's free pages back to the kernel
 * (malloc_trim): what an idle daemon and `clear` do (memory.h). Returns the bytes that
 * were cached. The cache stays usable; it fills again as arrays are freed. */
uint64_t shardcache_empty(void);

uint64_t shardcache_bytes(void); /* bytes cached now */
uint64_t shardcache_limit(void);

#endif
