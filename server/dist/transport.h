/* The messages under the collectives (private to dist/). A collective posts its sends and
 * receives on a batch, under the call's tag, and waits for them together (ranks.c: the
 * wait, with the job's health and time rules). Two transports carry them:
 *   - MPI between the processes of an mpirun job (transport_mpi.c);
 *   - memory between ranks that are threads of one process (transport_mem.c), so that the
 *     unit tests run the very collectives the daemon runs under mpirun.
 * Both keep the messages from one rank to another on one tag in the order they were sent,
 * and match a rank's receives from one peer on one tag in the order they were posted. */
#ifndef H5ARK_DIST_TRANSPORT_H
#define H5ARK_DIST_TRANSPORT_H

#include "h5ark_frames.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct transport transport;

/* Room for the operations of the usual transfers inline: a failed allocation in the middle
 * of a transfer leaves the other ranks waiting for a part that never comes (the job must
 * then end), so those allocate nothing. */
enum { TRANSPORT_INLINE_BYTES = 512 };

/* Operations posted together and waited for together. */
typedef struct {
    const transport *t;
    int tag;            /* the call's */
    int n, cap;         /* operations posted, room for */
    bool failed;        /* one could not be posted */
    unsigned char *ops; /* n operations of t->op_size bytes each */
    alignas(max_align_t) unsigned char few[TRANSPORT_INLINE_BYTES];
} transport_batch;

struct transport {
    const char *name; /* in errors: "MPI failed while ..." */
    size_t op_size;   /* bytes of one posted operation */
    /* Post a receive of exactly n bytes from rank `from` (a failure sets b->failed). */
    void (*recv)(transport_batch *b, int from, void *buf, uint64_t n);
    /* Post a send of the spans, read as one stream, to rank `to`. */
    void (*send)(transport_batch *b, int to, const h5ark_span *spans, size_t nspans);
    /* Test the posted operations: *done is how many completed since the last test. -1 when
     * the transport failed, with the reason in why. */
    int (*test)(transport_batch *b, int *done, char *why, size_t nwhy);
};

/* Room for one more operation in b, NULL (and b->failed) when there is none. */
void *transport_slot(transport_batch *b);

/* A job: its ranks, the transport between them and its health. The process's own (one
 * rank, or the ranks of mpirun), or one per run of ranks as threads. */
typedef struct ranks_job {
    int count;
    const transport *t; /* NULL with one rank */
    int tag_ub;         /* the largest tag */
    int64_t wait_limit_ns;
    pthread_mutex_t lock; /* why */
    atomic_bool broken;
    char why[512];
    void *mem; /* transport_mem's queues */
} ranks_job;

/* The process's job, and its rank in it (transport_mpi.c sets them at start). */
ranks_job *ranks_process_job(void);
void ranks_process_self(int rank);
/* Mark `job` broken (first reason wins): its waits fail from now on with the reason. */
void ranks_job_break(ranks_job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The calling thread's job. */
ranks_job *ranks_job_here(void);

extern const transport transport_mem;

#endif
