/* Serving as several ranks: the control plane between rank 0 and the other ranks.
 *
 * Rank 0's router receives every request. A command that runs on every rank is forwarded
 * (its header, under a request number) to the other ranks over a ZeroMQ connection each
 * (CURVE-encrypted, key handed over MPI at start), and each rank runs it on a handler
 * thread of its own. Between requests the other ranks sleep in zmq_poll, which costs no
 * CPU, where an MPI receive would spin or poll. The same connections carry heartbeats both
 * ways: a rank whose connection closes (it died) or that is silent for the rank timeout
 * (a network partition, a stalled host) breaks the job, with an error naming it, and the
 * daemon stops. Bulk bytes and collectives go over MPI (ranks.h). */
#ifndef H5ARK_RANKS_SERVE_H
#define H5ARK_RANKS_SERVE_H

#include "request.h"

/* How a rank > 0 runs a request rank 0 forwarded: its number and its header's bytes (the
 * dispatch's dispatch_forwarded, handed in at start so that this layer never calls up). */
typedef void (*ranks_forwarded_fn)(uint64_t seq, const void *header, size_t len);

/* With several ranks: connect the ranks' control plane (every rank calls it at start).
 * Rank 0 then serves with router_run, the others with ranks_worker_run, which runs each
 * forwarded request with `run`. 0 with one rank. */
int ranks_serve_start(void *zmq_context, ranks_forwarded_fn run, h5ark_error *err);
/* Ranks > 0: run forwarded requests until rank 0 says stop (0) or the job breaks (-1). */
int ranks_worker_run(h5ark_error *err);
/* Rank 0, after the router has stopped: stop the other ranks and wait for them. */
void ranks_serve_stop(void);

/* The header rank 0 forwards to the other ranks, asked for only when one is forwarded:
 * NULL when out of memory; *made is set to what is destroyed once it is sent (NULL: the
 * header is the caller's). */
typedef const h5ark_value *(*ranks_header_fn)(void *arg, h5ark_value **made);

/* entry.c: before a request runs. With several ranks, refuse one not converted yet
 * (naming it `name`); on rank 0, wait for its turn (`shared`: it only reads, and may run
 * beside others that only read; otherwise alone), forward one that runs everywhere
 * (header(arg)) and number it (*seq); then enter its call. *seq is the forwarded number
 * on ranks > 0, 0 on rank 0. A part of a request called inside the call every rank runs
 * for it (dispatch_call) runs within that call, *seq 0: nothing to end, the caller agrees
 * on its outcome; only one that runs everywhere may be called so (internal otherwise). */
int ranks_serve_begin(const char *name, ranks_mode mode, bool shared, ranks_header_fn header,
                      void *arg, uint64_t *seq, h5ark_error *err);
/* entry.c: after it ran (status *rc, err): every rank agrees on the outcome (the lowest
 * failing rank's error wins), and the call is left. */
int ranks_serve_end(uint64_t seq, int *rc, h5ark_error *err);

#endif
