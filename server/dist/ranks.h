/* Several ranks: one daemon made of R processes started by mpirun, each with its own locale
 * threads (docs/DESIGN.md, "Ranks"). Rank 0 serves the endpoint; every request that is
 * not answered on rank 0 alone runs on every rank (SPMD), each rank on its own shards, and
 * the command's collective points go through this layer.
 *
 * Without mpirun (or built without MPI) there is one rank and every call here is a
 * constant-time no-op or a local copy, so the daemon is exactly the one-process daemon.
 *
 * Collectives belong to the request being handled (a *call*, entered by dispatch on the
 * handler thread): each request has a number rank 0 gives it, and its messages carry a tag
 * made from that number, so requests handled at the same time on several handler threads
 * never take each other's messages. Within one call, every rank makes the same collective
 * calls in the same order, from the handler thread only (never from a locale thread).
 *
 * Outside a call (a command that runs on rank 0 alone, or a thread that is no call's
 * handler) the collectives are those of one rank: this rank alone, local copies.
 *
 * The collectives are made of messages over a transport (dist/transport.h): MPI between
 * the processes of mpirun, or memory between ranks that are threads of one process (the
 * unit tests, ranks_threads_run below), the same collective code over either.
 *
 * Waits poll the transport with short sleeps rather than block (a blocking MPI wait spins
 * a core), and give up as soon as the job is broken: a rank has died, or has not been
 * heard from within the rank timeout (ranks_serve.c). The error then says which rank. */
#ifndef H5ARK_RANKS_H
#define H5ARK_RANKS_H

#include "h5ark_frames.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- lifecycle (main.c) ---- */

/* Under mpirun (its environment says so), initialise MPI and learn the ranks and their
 * hosts; otherwise do nothing: one rank. -1 (message printed) when MPI fails. */
int ranks_init(int *argc, char ***argv);
/* Leave MPI (after ranks_serve_stop). */
void ranks_finalize(void);
/* End the whole job now, every rank, with status `code` (after a fatal error). */
void ranks_abort(int code);

int ranks_count(void);
int ranks_self(void);
/* The one refusal of work not yet made rank-aware, when ranks_count() > 1: fails err with
 * unknown_command "not available on several ranks yet: WHAT (this daemon runs as R ranks)",
 * WHAT formatted from fmt. Returns -1. */
int ranks_not_yet(h5ark_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool ranks_under_mpi(void);          /* started by mpirun (even with one rank) */
const char *ranks_host(int rank);    /* host name of `rank` */
const char *ranks_mpi_library(void); /* "Open MPI v4.1.4, ..." or "" */

/* Startup only, before serving: rank 0's bytes to every rank (plain MPI, no call). */
int ranks_startup_bcast(void *buf, size_t n);
/* Startup only: gather n bytes from every rank to every rank (out: ranks_count() * n). */
int ranks_startup_allgather(const void *in, void *out, size_t n);

/* ---- job health ---- */

/* Mark the job broken (first reason wins): every wait fails from now on with the reason. */
void ranks_set_broken(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether the job is broken; the reason copied into why (may be NULL). */
bool ranks_is_broken(char *why, size_t n);

/* ---- calls ---- */

/* Enter the call of request number `seq` on this thread (dispatch does this). */
void ranks_call_enter(uint64_t seq);
void ranks_call_leave(void);
/* The current call's request number, 0 outside a call. */
uint64_t ranks_call_seq(void);

/* ---- collectives on the current call (io_error when the job is broken) ---- */

typedef enum { RANKS_SUM, RANKS_MIN, RANKS_MAX } ranks_op;

/* v[0..n) combined element by element over all ranks; the result on every rank. */
int ranks_allreduce_u64(uint64_t *v, size_t n, ranks_op op, h5ark_error *err);
/* Every rank gives its status (rc, and err when rc != 0); all return -1 when any rank
 * failed, with err set to the error of the lowest failing rank, else 0. Put one before
 * any step a rank must not take alone (publishing, writing). */
int ranks_agree(int rc, h5ark_error *err);
/* n bytes from `root` to every rank (buf holds them on root, receives them elsewhere). */
int ranks_bcast(int root, void *buf, uint64_t n, h5ark_error *err);
/* Every rank sends the spans (read as one stream); rank 0 receives counts[r] bytes from
 * each rank r into recv, back to back in rank order, its own included (counts and recv are
 * read on rank 0 only). */
int ranks_gatherv(const h5ark_span *spans, size_t nspans, void *recv, const uint64_t *counts,
                  h5ark_error *err);
/* All to all: send_counts[r] bytes of `send` (back to back in rank order) go to rank r,
 * recv_counts[r] bytes arrive from rank r into `recv` (back to back in rank order). */
int ranks_alltoallv(const void *send, const uint64_t *send_counts, void *recv,
                    const uint64_t *recv_counts, h5ark_error *err);
int ranks_barrier(h5ark_error *err);
/* Point to point within the call: the spans, read as one stream, go to rank `to`, which
 * receives the stream's total bytes with ranks_recv. Messages between two ranks arrive
 * in the order they were sent. */
int ranks_send(int to, const h5ark_span *spans, size_t nspans, h5ark_error *err);
int ranks_recv(int from, void *buf, uint64_t n, h5ark_error *err);
/* Receive n messages from `from` in order, message i (lens[i] bytes) into bufs[i]. */
int ranks_recv_many(int from, int n, void *const *bufs, const uint64_t *lens, h5ark_error *err);
/* Pieces of a request's payload to other ranks at once, straight from its frames: piece i,
 * bytes [offsets[i], offsets[i] + lens[i]), goes to rank to[i] as one message; a rank
 * receives its pieces in order (ranks_recv_many). */
int ranks_scatter_payload(const h5ark_payload *p, int npieces, const int *to,
                          const uint64_t *offsets, const uint64_t *lens, h5ark_error *err);
/* Rank 0's value *v to every rank, as MessagePack: on the other ranks *v is set to a new
 * value (theirs was NULL). With one rank, nothing. */
int ranks_bcast_value(h5ark_value **v, h5ark_error *err);
/* A name for an object published without one, in Arkouda's form id_<7 of [0-9A-Za-z]>_<n>:
 * within a call, made from the call's number (the same on every rank whatever order their
 * handlers publish in); outside one, random and numbered in order. */
void ranks_call_name(char *out, size_t n);

/* ---- SPMD helpers over the collectives (also nothing extra at one rank) ---- */

/* Every rank's n bytes `mine` to every rank: rank r's at all + r * n (mine may be there). */
int ranks_allgather(const void *mine, void *all, uint64_t n, h5ark_error *err);
/* Exclusive scan: *before = the sum of `mine` over the ranks below this one, *total = over
 * all (either may be NULL). Where a rank's part of a concatenation starts, and its size. */
int ranks_exscan_u64(uint64_t mine, uint64_t *before, uint64_t *total, h5ark_error *err);
/* Run fn on rank 0 alone (it holds the request, its payload and the files), and agree on
 * its outcome: every rank returns its status, with its error when it failed. */
int ranks_on_root(int (*fn)(void *ctx, h5ark_error *err), void *ctx, h5ark_error *err);
/* Rank 0 makes a value (make: NULL with err when it fails), and every rank gets it in
 * *out (rank 0 its own, the others a copy; NULL and rank 0's error when it failed). */
int ranks_on_root_value(h5ark_value *(*make)(void *ctx, h5ark_error *err), void *ctx,
                        h5ark_value **out, h5ark_error *err);

/* ---- ranks as threads of one process (the unit tests) ---- */

/* Run fn(rank, ctx) for rank 0 .. count-1, each on a thread of its own, as the ranks of a
 * job of its own whose messages go through memory: on those threads ranks_count(),
 * ranks_self() and the job's health answer for that job, and the collectives are the ones
 * the daemon runs under mpirun (a thread still enters a call to use them). A wait for a
 * rank whose fn has returned without sending, for a message of another length, or of more
 * than wait_seconds (0: no limit), breaks the job. Returns how many messages were sent and
 * never received (0 when all were), or -1 when the threads could not start. */
int ranks_threads_run(int count, int wait_seconds, void (*fn)(int rank, void *ctx), void *ctx);
/* Where this thread runs, to run another thread as the same rank of the same job (as a
 * rank's several handler threads do). */
typedef struct {
    struct ranks_job *job;
    int rank;
} ranks_thread_place;
ranks_thread_place ranks_threads_here(void);
void ranks_threads_adopt(ranks_thread_place p);

#endif
