/* The locale worker threads. Each locale owns one shard of every array; work on a shard
 * runs on its locale's thread. locales_run is the one fan-out primitive: it runs a function
 * on every locale at once and waits for all of them. Many handler threads may call it
 * concurrently; each locale runs the jobs it is given in order.
 *
 * With several ranks (ranks.h) a locale is a (rank, thread) pair: locale numbers are global,
 * rank r's threads are locales r*T .. r*T+T-1, locales_count() is all of them (R*T), and
 * locales_run runs fn on this rank's locales only, with their global numbers. A shard's
 * memory exists on its locale's rank alone. With one rank nothing of this shows. */
#ifndef H5ARK_LOCALES_H
#define H5ARK_LOCALES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef void (*locale_fn)(int locale, void *ctx);

/* Start `count` threads on this process, rank `rank` of `ranks` (the same count on every
 * rank; main.c passes the layer's, ranks.h; one process is rank 0 of 1). */
int locales_start(int count, int rank, int ranks);
void locales_stop(void);
int locales_count(void); /* every rank's locales together */
/* This rank's locales: [locales_local_first(), + locales_local_count()). */
int locales_local_first(void);
int locales_local_count(void);
static inline bool locales_is_local(int locale) {
    return locale >= locales_local_first() &&
           locale < locales_local_first() + locales_local_count();
}
/* The rank whose threads run `locale`. */
int locales_rank_of(int locale);
/* Run fn(locale, ctx) on every locale's thread, return when all have finished. The
 * caller's progress sink (progress.h) is each locale thread's while it runs fn. */
void locales_run(locale_fn fn, void *ctx);
/* The locale whose thread calls this, or -1 on any other thread. */
int locales_self(void);

/* Block distribution of n elements over `parts`: part b holds
 * [ceil(n*b/parts), ceil(n*(b+1)/parts)), as Arkouda distributes arrays. */
uint64_t locales_block_start(uint64_t n, int parts, int b);
/* This rank's part of n items distributed by blocks over every rank's locales:
 * [*lo, *hi), its locales' blocks together (all of them with one rank). */
void locales_local_block(uint64_t n, uint64_t *lo, uint64_t *hi);

/* Parallel checks report the first bad index whichever locale finds it: each locale notes
 * what it found into one atomic that starts at UINT64_MAX, and the lowest stays. */
static inline void locales_note_first(_Atomic uint64_t *first, uint64_t i) {
    uint64_t cur = atomic_load(first);
    while (i < cur && !atomic_compare_exchange_weak(first, &cur, i)) {}
}

#endif
