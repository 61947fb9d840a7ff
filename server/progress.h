/* How far a request has got: a sink of two counters (done, total) and a unit, which the
 * code doing the work adds into without a lock. The request's handler thread has the sink of
 * its request (inflight.c sets it); locales_run hands it to the locale threads for the jobs
 * of that request, so a kernel reaches it with progress_here() and no new parameter. Below
 * everything: storage and objects may use it, it calls nothing of h5ark's.
 *
 * One update per chunk, shard, file or piece of a large transfer, never per element. */
#ifndef H5ARK_PROGRESS_H
#define H5ARK_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

typedef enum { PROGRESS_NONE, PROGRESS_BYTES, PROGRESS_ROWS, PROGRESS_FILES } progress_unit;

typedef struct {
    _Atomic uint64_t done;
    _Atomic uint64_t total;
    _Atomic int unit; /* a progress_unit; PROGRESS_NONE: nothing measured (yet) */
} progress_sink;

/* Large transfers (a shard's pread or pwrite, a payload copy) go in pieces of this size, so
 * that their progress moves while they run; a system call per 16 MiB costs nothing. */
#define PROGRESS_PIECE ((uint64_t)16 << 20)

/* The sink of the request this thread works for, or NULL. */
progress_sink *progress_here(void);
/* Make s this thread's sink; returns the one it had. */
progress_sink *progress_swap(progress_sink *s);

/* The measure of the work from here on: done restarts at 0. The unit is stored last, so
 * that a reader that sees it sees the total too. */
static inline void progress_start(progress_sink *s, progress_unit unit, uint64_t total) {
    if (!s) return;
    atomic_store_explicit(&s->done, 0, memory_order_relaxed);
    atomic_store_explicit(&s->total, total, memory_order_relaxed);
    atomic_store_explicit(&s->unit, (int)unit, memory_order_release);
}

static inline void progress_add(progress_sink *s, uint64_t n) {
    if (s && n) atomic_fetch_add_explicit(&s->done, n, memory_order_relaxed);
}

#endif
