/* Keeping and giving back freed memory (see memory.h). */
#include "memory.h"

#include "log.h"
#include "shardcache.h"

#include <hdf5.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

void memory_tune(void) {
    /* One heap for every thread. malloc_trim gives back the free pages of every heap but,
     * of a thread's own heap (an arena other than the main one), never the free space at
     * its top: up to 64 MiB for each thread that once held much, a locale's or ZeroMQ's
     * I/O thread's, which no release could reach. With one heap it reaches all. Threads
     * share its lock only for blocks past their own small-block cache (tcache, up to about
     * 1 KiB): large blocks, a few per MiB of data. */
    mallopt(M_ARENA_MAX, 1);
    /* Reuse receive buffers (docs/DESIGN.md): ZeroMQ receives each large frame into a block
     * of its own from malloc in its I/O thread, and a request holds all its frames until it
     * is served. By default glibc maps such blocks afresh until the first free of a large
     * one (the threshold then rises with the blocks freed), and trims the heap as soon as
     * its free top passes 128 KiB, so each large put would fault in its receive memory
     * again. Serve blocks up to 32 MiB from the heap, a fixed threshold so larger blocks
     * (large shards) are always mapped and unmapped on free, and never trim the heap on
     * free (2 GiB is the most mallopt takes): the daemon keeps, for the next request, the
     * most it has received at once, until memory_give_back gives it back. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

void memory_give_back(void) {
    /* HDF5 keeps freed blocks of its own on free lists, which malloc cannot trim */
    H5garbage_collect();
    uint64_t cached = shardcache_empty();
    log_debug("released %llu bytes of cached shards; resident now %llu bytes",
              (unsigned long long)cached, (unsigned long long)memory_resident());
}

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool asked, stopping, running;
    pthread_t thread;
} keeper = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void *housekeeper_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&keeper.lock);
    for (;;) {
        while (!keeper.asked && !keeper.stopping)
            pthread_cond_wait(&keeper.wake, &keeper.lock);
        if (keeper.stopping) break;
        keeper.asked = false;
        pthread_mutex_unlock(&keeper.lock);
        memory_give_back();
        pthread_mutex_lock(&keeper.lock);
    }
    pthread_mutex_unlock(&keeper.lock);
    return NULL;
}

int memory_housekeeper_start(void) {
    keeper.stopping = keeper.asked = false;
    if (pthread_create(&keeper.thread, NULL, housekeeper_main, NULL) != 0) return -1;
    keeper.running = true;
    return 0;
}

void memory_housekeeper_stop(void) {
    if (!keeper.running) return;
    pthread_mutex_lock(&keeper.lock);
    keeper.stopping = true;
    pthread_cond_signal(&keeper.wake);
    pthread_mutex_unlock(&keeper.lock);
    pthread_join(keeper.thread, NULL);
    keeper.running = false;
}

void memory_give_back_soon(void) {
    if (!keeper.running) {
        memory_give_back();
        return;
    }
    pthread_mutex_lock(&keeper.lock);
    keeper.asked = true;
    pthread_cond_signal(&keeper.wake);
    pthread_mutex_unlock(&keeper.lock);
}

uint64_t memory_resident(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size, resident;
    int n = f ? fscanf(f, "%llu %llu", &size, &resident) : 0;
    if (f) fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? (uint64_t)resident * (uint64_t)page : 0;
}
