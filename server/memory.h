/* What the daemon keeps of the memory it frees, and when it gives it back.
 *
 * While requests come, freed memory is kept for the next ones: shard memory in the shard
 * cache (shardcache.h), everything else (receive buffers above all) in malloc's heap, so
 * that new arrays and requests find their pages already touched. Once the daemon has been
 * idle for --idle-release seconds, and at every `clear`, all of it goes back to the
 * kernel, and the resident size returns to about what it was at start (docs/DESIGN.md,
 * "Memory"). */
#ifndef H5ARK_MEMORY_H
#define H5ARK_MEMORY_H

#include <stdint.h>

/* Set malloc's policy. Call once, before the process starts any thread. */
void memory_tune(void);
/* Give back what is free: the shard cache, HDF5's free lists, malloc's free pages. Safe
 * from any thread beside running requests, which then only find the cache empty. */
void memory_give_back(void);

/* The housekeeping thread: it sleeps until memory_give_back_soon asks it to give memory back, so
 * that the router's thread never waits for one. */
int memory_housekeeper_start(void);
void memory_housekeeper_stop(void);
void memory_give_back_soon(void);

/* The process's resident memory in bytes (VmRSS), or 0 if it cannot be read. */
uint64_t memory_resident(void);

#endif
