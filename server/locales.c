/* Locale worker threads and locales_run (see locales.h). */
#include "locales.h"

#include "progress.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct job {
    locale_fn fn;
    void *ctx;
    progress_sink *progress; /* the caller's: the job's kernels report into it */
    int pending;             /* locales that have not finished; guarded by done_lock */
    pthread_mutex_t done_lock;
    pthread_cond_t done;
} job;

typedef struct job_link {
    job *job;
    struct job_link *next;
} job_link;

typedef struct {
    pthread_t thread;
    int id;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    job_link *head, *tail;
    bool stopping;
} locale;

static locale *locales; /* this rank's threads */
static int nlocales;    /* their number */
static int first_local; /* global number of locales[0] */
static int total;       /* every rank's locales */
static _Thread_local int self = -1;

static void *locale_main(void *arg) {
    locale *l = arg;
    self = l->id;
    for (;;) {
        pthread_mutex_lock(&l->lock);
        while (!l->head && !l->stopping)
            pthread_cond_wait(&l->wake, &l->lock);
        if (!l->head) { /* stopping and nothing left */
            pthread_mutex_unlock(&l->lock);
            return NULL;
        }
        job_link *link = l->head;
        l->head = link->next;
        if (!l->head) l->tail = NULL;
        pthread_mutex_unlock(&l->lock);

        job *j = link->job;
        progress_swap(j->progress);
        j->fn(l->id, j->ctx);
        progress_swap(NULL);
        pthread_mutex_lock(&j->done_lock);
        if (--j->pending == 0) pthread_cond_signal(&j->done);
        pthread_mutex_unlock(&j->done_lock);
    }
}

int locales_start(int count, int rank, int ranks) {
    locales = calloc((size_t)count, sizeof *locales);
    if (!locales) return -1;
    first_local = rank * count;
    total = ranks * count;
    for (int i = 0; i < count; i++) {
        locale *l = &locales[i];
        l->id = first_local + i;
        pthread_mutex_init(&l->lock, NULL);
        pthread_cond_init(&l->wake, NULL);
        if (pthread_create(&l->thread, NULL, locale_main, l) != 0) {
            nlocales = i;
            locales_stop();
            return -1;
        }
    }
    nlocales = count;
    return 0;
}

void locales_stop(void) {
    for (int i = 0; i < nlocales; i++) {
        pthread_mutex_lock(&locales[i].lock);
        locales[i].stopping = true;
        pthread_cond_signal(&locales[i].wake);
        pthread_mutex_unlock(&locales[i].lock);
    }
    for (int i = 0; i < nlocales; i++) {
        pthread_join(locales[i].thread, NULL);
        pthread_mutex_destroy(&locales[i].lock);
        pthread_cond_destroy(&locales[i].wake);
    }
    free(locales);
    locales = NULL;
    nlocales = 0;
    total = 0;
}

int locales_count(void) {
    return total;
}
int locales_local_first(void) {
    return first_local;
}
int locales_local_count(void) {
    return nlocales;
}
int locales_rank_of(int locale) {
    return nlocales ? locale / nlocales : 0;
}
int locales_self(void) {
    return self;
}

void locales_run(locale_fn fn, void *ctx) {
    if (self >= 0) {
        /* A locale waiting on its own queue would deadlock: run inline, one after another. */
        for (int i = 0; i < nlocales; i++)
            fn(first_local + i, ctx);
        return;
    }
    job j = {.fn = fn, .ctx = ctx, .progress = progress_here(), .pending = nlocales};
    pthread_mutex_init(&j.done_lock, NULL);
    pthread_cond_init(&j.done, NULL);
    /* The links live on this stack frame: the job outlives its time in every queue. */
    job_link links[nlocales];
    for (int i = 0; i < nlocales; i++) {
        locale *l = &locales[i];
        links[i] = (job_link){.job = &j, .next = NULL};
        pthread_mutex_lock(&l->lock);
        if (l->tail)
            l->tail->next = &links[i];
        else
            l->head = &links[i];
        l->tail = &links[i];
        pthread_cond_signal(&l->wake);
        pthread_mutex_unlock(&l->lock);
    }
    pthread_mutex_lock(&j.done_lock);
    while (j.pending > 0)
        pthread_cond_wait(&j.done, &j.done_lock);
    pthread_mutex_unlock(&j.done_lock);
    pthread_mutex_destroy(&j.done_lock);
    pthread_cond_destroy(&j.done);
}

uint64_t locales_block_start(uint64_t n, int parts, int b) {
    unsigned __int128 x = (unsigned __int128)n * (unsigned)b;
    return (uint64_t)((x + (unsigned)parts - 1) / (unsigned)parts);
}

void locales_local_block(uint64_t n, uint64_t *lo, uint64_t *hi) {
    *lo = total ? locales_block_start(n, total, first_local) : 0;
    *hi = total ? locales_block_start(n, total, first_local + nlocales) : n;
}
