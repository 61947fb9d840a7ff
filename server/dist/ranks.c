/* Ranks: MPI start and stop, and the collectives of a call (see ranks.h). Built without
 * MPI, or run without mpirun, it is the one-rank layer: collectives are local copies.
 *
 * Every collective is made of nonblocking point-to-point messages on the call's tag, not
 * of MPI's collectives: several handler threads run requests at once, and MPI's
 * collectives on one communicator must be called in the same order on every rank, which
 * concurrent requests cannot promise. A tag per request keeps each request's messages
 * apart, and MPI keeps messages between two ranks on one tag in order.
 *
 * MPI is called under one lock (MPI_THREAD_SERIALIZED is all it needs to provide), and a
 * wait tests its requests, then sleeps a little longer each time nothing completed. */
#include "dist/ranks.h"

#include "log.h"
#include "sysio.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef H5ARK_HAVE_MPI
#include <mpi.h>
#endif

#define HOST_MAX 256

static int nranks = 1, self_rank = 0;
static bool under_mpi;
static char (*hosts)[HOST_MAX];
static char library[256];

static pthread_mutex_t broken_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool broken;
static char broken_why[512];

static _Thread_local uint64_t call_seq;
static _Thread_local unsigned call_names; /* names made in this call */

int ranks_count(void) {
    return nranks;
}
int ranks_not_yet(h5ark_error *err, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return h5ark_fail(err, H5ARK_UNKNOWN_COMMAND,
                      "not available on several ranks yet: %s (this daemon runs as %d ranks)", what,
                      nranks);
}
int ranks_self(void) {
    return self_rank;
}
bool ranks_under_mpi(void) {
    return under_mpi;
}
const char *ranks_mpi_library(void) {
    return library;
}

const char *ranks_host(int rank) {
    static char local[HOST_MAX];
    if (hosts && rank >= 0 && rank < nranks) return hosts[rank];
    if (!local[0] && gethostname(local, sizeof local - 1) != 0) snprintf(local, sizeof local, "?");
    return local;
}

void ranks_set_broken(const char *fmt, ...) {
    pthread_mutex_lock(&broken_lock);
    if (!broken) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(broken_why, sizeof broken_why, fmt, ap);
        va_end(ap);
        broken = true;
        log_error("%s", broken_why);
    }
    pthread_mutex_unlock(&broken_lock);
}

bool ranks_is_broken(char *why, size_t n) {
    if (!broken) return false;
    if (why && n) {
        pthread_mutex_lock(&broken_lock);
        snprintf(why, n, "%s", broken_why);
        pthread_mutex_unlock(&broken_lock);
    }
    return true;
}

void ranks_call_enter(uint64_t seq) {
    call_seq = seq;
    call_names = 0;
}
void ranks_call_leave(void) {
    call_seq = 0;
}
uint64_t ranks_call_seq(void) {
    return call_seq;
}

/* Launched by a process manager that speaks for MPI (Open MPI's mpirun, or a PMI one). */
static bool launched_by_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

#ifndef H5ARK_HAVE_MPI

int ranks_init(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (launched_by_mpirun() && getenv("OMPI_COMM_WORLD_SIZE") &&
        strcmp(getenv("OMPI_COMM_WORLD_SIZE"), "1") != 0) {
        fprintf(stderr, "h5arkd: started by mpirun with several ranks, but built without MPI "
                        "(install libopenmpi-dev and rebuild)\n");
        return -1;
    }
    return 0;
}
void ranks_finalize(void) {}
void ranks_abort(int code) {
    exit(code);
}
int ranks_startup_bcast(void *buf, size_t n) {
    (void)buf, (void)n;
    return 0;
}
int ranks_startup_allgather(const void *in, void *out, size_t n) {
    memcpy(out, in, n);
    return 0;
}

#else

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int tag_ub = 32767;

/* Messages of more than this are sent in pieces, so that a wait sees pieces complete (and
 * keeps polling fast) during a long transfer, and no count passes MPI's int. */
#define PIECE_BYTES (4u << 20)

/* A wait's deadline (H5ARK_RANK_WAIT, seconds; 0, the default: none). The heartbeats find
 * a rank that died or went silent, and a rank that gives up a transfer says so; this finds
 * a live rank that never sends what a wait expects for another reason (a step stalled, a
 * fault): the job then ends with an error naming the wait, rather than hanging. Off by
 * default because a peer's step may lawfully take long (rank 0 copying a large file's old
 * contents for an append). A wait that passes a minute is logged either way. */
static int64_t wait_limit_ns;

int ranks_init(int *argc, char ***argv) {
    if (!launched_by_mpirun()) return 0;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "h5arkd: MPI_Init_thread failed\n");
        return -1;
    }
    under_mpi = true;
    if (provided < MPI_THREAD_SERIALIZED) {
        fprintf(stderr,
                "h5arkd: this MPI library gives threads level %d; h5arkd needs "
                "MPI_THREAD_SERIALIZED or better\n",
                provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *w = getenv("H5ARK_RANK_WAIT");
    if (w && *w) {
        char *end;
        long v = strtol(w, &end, 10);
        if (*end || v < 0 || v > 86400) {
            fprintf(stderr, "h5arkd: H5ARK_RANK_WAIT must be seconds, 0 to 86400, not '%s'\n", w);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        wait_limit_ns = (int64_t)v * 1000000000;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &self_rank);
    int flag = 0, *ub = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (flag && ub) tag_ub = *ub;
    int len = 0;
    MPI_Get_library_version(library, &len);
    library[strcspn(library, "\n")] = '\0';
    char mine[HOST_MAX] = "";
    gethostname(mine, sizeof mine - 1);
    hosts = calloc((size_t)nranks, sizeof *hosts);
    if (!hosts || ranks_startup_allgather(mine, hosts, HOST_MAX) != 0) {
        fprintf(stderr, "h5arkd: cannot learn the ranks' host names\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return 0;
}

void ranks_finalize(void) {
    if (!under_mpi) return;
    MPI_Finalize();
    free(hosts);
    hosts = NULL;
}

void ranks_abort(int code) {
    if (under_mpi) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

/* Sleeps between tests: doubling from 2 us to SLEEP_SHORT_NS while a peer is late by up to
 * SHORT_WAIT_NS (most waits: a collective's peer a few steps behind), then up to
 * SLEEP_LONG_NS (a peer busy with a long step). With 1 ms from the start, a collective
 * whose peer was a little late cost up to a millisecond more, and a readhdf makes a dozen:
 * measured on this host, a 256 MiB readhdf at 2 ranks x 3 locales against one process of 6
 * locales (20 alternating runs, twice) gave 0.78 and 0.78 of its speed with 1 ms, 0.88 and
 * 0.82 with 50 us. The long cap keeps a rank that waits long near idle. */
enum { SLEEP_SHORT_NS = 50000, SLEEP_LONG_NS = 1000000, SHORT_WAIT_NS = 5000000 };

#define WAIT_LOG_NS ((int64_t)60 * 1000000000)

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Test the requests under the lock until all are done, sleeping longer each round that
 * completes none (above). */
static int wait_requests(MPI_Request *reqs, int n, const char *what, h5ark_error *err) {
    long sleep_ns = 0;
    int64_t idle_since = 0; /* when the rounds completing nothing began */
    int64_t began = mono_ns();
    bool logged = false;
    int remaining = n;
    int few[32];
    int *idx = n <= 32 ? few : malloc((size_t)n * sizeof *idx);
    if (!idx) {
        /* the transfers started cannot be given up: the peers would wait for them */
        ranks_set_broken("rank %d: out of memory while %s", self_rank, what);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    while (remaining > 0) {
        int outcount = 0;
        pthread_mutex_lock(&mpi_lock);
        int rc = MPI_Testsome(n, reqs, &outcount, idx, MPI_STATUSES_IGNORE);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != MPI_SUCCESS) {
            if (idx != few) free(idx);
            ranks_set_broken("rank %d: MPI failed while %s", self_rank, what);
            return h5ark_fail(err, H5ARK_IO_ERROR, "rank %d: MPI failed while %s", self_rank, what);
        }
        if (outcount == MPI_UNDEFINED) break; /* no active request left */
        remaining -= outcount;
        if (remaining == 0) break;
        char why[512];
        if (ranks_is_broken(why, sizeof why)) {
            if (idx != few) free(idx);
            return h5ark_fail(err, H5ARK_IO_ERROR, "%s (while %s)", why, what);
        }
        if (outcount > 0) {
            sleep_ns = 0;
            continue;
        }
        int64_t now = mono_ns();
        if (sleep_ns == 0) idle_since = now;
        if (!logged && now - began > WAIT_LOG_NS) {
            logged = true;
            log_warn("rank %d: request %llu has waited %lld s for another rank while %s", self_rank,
                     (unsigned long long)call_seq, (long long)((now - began) / 1000000000), what);
        }
        if (wait_limit_ns > 0 && now - began > wait_limit_ns) {
            /* the others may wait for this rank in turn: the job ends (ranks_serve.c) */
            ranks_set_broken("rank %d: request %llu waited %lld s (H5ARK_RANK_WAIT) for another "
                             "rank while %s",
                             self_rank, (unsigned long long)call_seq,
                             (long long)(wait_limit_ns / 1000000000), what);
            char why[512];
            ranks_is_broken(why, sizeof why);
            if (idx != few) free(idx);
            return h5ark_fail(err, H5ARK_IO_ERROR, "%s", why);
        }
        long cap = now - idle_since < SHORT_WAIT_NS ? SLEEP_SHORT_NS : SLEEP_LONG_NS;
        sleep_ns = sleep_ns == 0 ? 2000 : (sleep_ns * 2 > cap ? cap : sleep_ns * 2);
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
    }
    if (idx != few) free(idx);
    return 0;
}

static int call_tag(void) {
    /* tag 0 is left for startup; a request's tag repeats only after tag_ub requests */
    return 1 + (int)(call_seq % (uint64_t)(tag_ub - 1));
}

/* A set of nonblocking sends and receives waited for together. Its first requests and a
 * piece's first blocks live inline: a failed allocation in the middle of a transfer leaves
 * the other ranks waiting for a part that never comes (the job must then end: ranks_serve),
 * so transfers of the usual sizes allocate nothing. */
enum { INLINE_REQS = 16, INLINE_BLOCKS = 16 };
typedef struct {
    MPI_Request *reqs;
    int n, cap;
    bool failed;
    MPI_Request few[INLINE_REQS];
} batch;

static MPI_Request *batch_slot(batch *b) {
    if (!b->reqs) b->reqs = b->few, b->cap = INLINE_REQS;
    if (b->n == b->cap) {
        int cap = b->cap * 2;
        MPI_Request *r = b->reqs == b->few ? sysio.malloc((size_t)cap * sizeof *r)
                                           : sysio.realloc(b->reqs, (size_t)cap * sizeof *r);
        if (!r) {
            b->failed = true;
            return NULL;
        }
        if (b->reqs == b->few) memcpy(r, b->few, sizeof b->few);
        b->reqs = r;
        b->cap = cap;
    }
    return &b->reqs[b->n++];
}

static void batch_free(batch *b) {
    if (b->reqs != b->few) free(b->reqs);
    b->reqs = NULL;
    b->n = b->cap = 0;
    b->failed = false;
}

static void batch_recv(batch *b, int from, void *buf, uint64_t n) {
    for (uint64_t off = 0; off < n || (n == 0 && off == 0); off += PIECE_BYTES) {
        uint64_t len = n - off < PIECE_BYTES ? n - off : PIECE_BYTES;
        MPI_Request *r = batch_slot(b);
        if (!r) return;
        pthread_mutex_lock(&mpi_lock);
        if (MPI_Irecv((char *)buf + off, (int)len, MPI_BYTE, from, call_tag(), MPI_COMM_WORLD, r) !=
            MPI_SUCCESS)
            b->failed = true, b->n--;
        pthread_mutex_unlock(&mpi_lock);
        if (n == 0) break;
    }
}

/* Send the spans as one stream, cut into pieces of PIECE_BYTES as batch_recv expects
 * them; a piece that crosses spans goes as one message of an indexed type (no copy). */
static void batch_send_spans(batch *b, int to, const h5ark_span *spans, size_t nspans) {
    uint64_t total = 0;
    for (size_t i = 0; i < nspans; i++)
        total += spans[i].len;
    size_t si = 0;
    uint64_t sofs = 0; /* position inside spans[si] */
    for (uint64_t off = 0; off < total || (total == 0 && off == 0); off += PIECE_BYTES) {
        uint64_t len = total - off < PIECE_BYTES ? total - off : PIECE_BYTES;
        int nblocks = 0, cap = INLINE_BLOCKS;
        int few_lens[INLINE_BLOCKS];
        MPI_Aint few_disps[INLINE_BLOCKS];
        int *lens = few_lens;
        MPI_Aint *disps = few_disps;
        for (uint64_t left = len; left > 0;) {
            while (si < nspans && sofs == spans[si].len)
                si++, sofs = 0;
            uint64_t take = spans[si].len - sofs < left ? spans[si].len - sofs : left;
            if (nblocks == cap) {
                cap *= 2;
                int *l2 = sysio.malloc((size_t)cap * sizeof *lens);
                MPI_Aint *d2 = sysio.malloc((size_t)cap * sizeof *disps);
                if (l2) memcpy(l2, lens, (size_t)nblocks * sizeof *lens);
                if (d2) memcpy(d2, disps, (size_t)nblocks * sizeof *disps);
                if (lens != few_lens) free(lens), free(disps);
                lens = l2;
                disps = d2;
                if (!l2 || !d2) {
                    b->failed = true;
                    break;
                }
            }
            MPI_Get_address((const char *)spans[si].ptr + sofs, &disps[nblocks]);
            lens[nblocks++] = (int)take;
            sofs += take;
            left -= take;
        }
        MPI_Request *r = lens && disps && !b->failed ? batch_slot(b) : NULL;
        if (r) {
            MPI_Datatype type;
            pthread_mutex_lock(&mpi_lock);
            int rc = MPI_Type_create_hindexed(nblocks, lens, disps, MPI_BYTE, &type);
            if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&type);
            if (rc == MPI_SUCCESS)
                rc = MPI_Isend(MPI_BOTTOM, 1, type, to, call_tag(), MPI_COMM_WORLD, r);
            if (rc == MPI_SUCCESS) MPI_Type_free(&type); /* freed once the send is done */
            pthread_mutex_unlock(&mpi_lock);
            if (rc != MPI_SUCCESS) b->failed = true, b->n--;
        } else {
            b->failed = true;
        }
        if (lens != few_lens) free(lens), free(disps);
        if (total == 0) break;
    }
}

static void batch_send(batch *b, int to, const void *buf, uint64_t n) {
    h5ark_span s = {buf, n};
    batch_send_spans(b, to, &s, 1);
}

static int batch_wait(batch *b, const char *what, h5ark_error *err) {
    int rc;
    if (b->failed) {
        ranks_set_broken("rank %d: MPI could not start a transfer while %s", self_rank, what);
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "rank %d: MPI could not start a transfer while %s",
                        self_rank, what);
        /* what was started must still finish before its buffers go */
        wait_requests(b->reqs, b->n, what, NULL);
    } else {
        rc = wait_requests(b->reqs, b->n, what, err);
    }
    batch_free(b);
    return rc;
}

int ranks_startup_bcast(void *buf, size_t n) {
    if (nranks == 1) return 0;
    return MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

int ranks_startup_allgather(const void *in, void *out, size_t n) {
    if (!under_mpi) {
        memcpy(out, in, n);
        return 0;
    }
    return MPI_Allgather(in, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, MPI_COMM_WORLD) == MPI_SUCCESS
               ? 0
               : -1;
}

#endif /* H5ARK_HAVE_MPI */

/* ---- collectives: with one rank they are local; with several, messages on the call ---- */

static void combine(uint64_t *acc, const uint64_t *v, size_t n, ranks_op op) {
    for (size_t i = 0; i < n; i++)
        switch (op) {
        case RANKS_SUM: acc[i] += v[i]; break;
        case RANKS_MIN: acc[i] = v[i] < acc[i] ? v[i] : acc[i]; break;
        case RANKS_MAX: acc[i] = v[i] > acc[i] ? v[i] : acc[i]; break;
        }
}

int ranks_gatherv(const h5ark_span *spans, size_t nspans, void *recv, const uint64_t *counts,
                  h5ark_error *err) {
    if (self_rank == 0) { /* rank 0's own part: a local copy */
        char *out = recv;
        for (size_t i = 0; i < nspans; i++) {
            if (spans[i].len) memmove(out, spans[i].ptr, spans[i].len);
            out += spans[i].len;
        }
    }
    if (nranks == 1) return 0;
#ifdef H5ARK_HAVE_MPI
    batch b = {0};
    if (self_rank == 0) {
        uint64_t off = counts[0];
        for (int r = 1; r < nranks; r++) {
            batch_recv(&b, r, (char *)recv + off, counts[r]);
            off += counts[r];
        }
    } else {
        batch_send_spans(&b, 0, spans, nspans);
    }
    return batch_wait(&b, "gathering to rank 0", err);
#else
    (void)counts;
    return h5ark_fail(err, H5ARK_INTERNAL, "several ranks without MPI");
#endif
}

int ranks_bcast(int root, void *buf, uint64_t n, h5ark_error *err) {
    if (nranks == 1) return 0;
#ifdef H5ARK_HAVE_MPI
    batch b = {0};
    if (self_rank == root) {
        for (int r = 0; r < nranks; r++)
            if (r != root) batch_send(&b, r, buf, n);
    } else {
        batch_recv(&b, root, buf, n);
    }
    return batch_wait(&b, "broadcasting", err);
#else
    (void)root, (void)buf, (void)n;
    return h5ark_fail(err, H5ARK_INTERNAL, "several ranks without MPI");
#endif
}

int ranks_allreduce_u64(uint64_t *v, size_t n, ranks_op op, h5ark_error *err) {
    if (nranks == 1 || n == 0) return 0;
    uint64_t *all = self_rank == 0 ? malloc((size_t)nranks * n * sizeof *all) : NULL;
    uint64_t *counts = self_rank == 0 ? malloc((size_t)nranks * sizeof *counts) : NULL;
    if (self_rank == 0 && (!all || !counts)) {
        /* every rank must still take part: send nothing useful, report the failure */
        free(all);
        free(counts);
        ranks_set_broken("rank 0: out of memory in a reduction");
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (int r = 0; counts && r < nranks; r++)
        counts[r] = n * sizeof *v;
    h5ark_span mine = {v, n * sizeof *v};
    int rc = ranks_gatherv(&mine, 1, all, counts, err);
    if (rc == 0 && self_rank == 0) {
        memcpy(v, all, n * sizeof *v);
        for (int r = 1; r < nranks; r++)
            combine(v, all + (size_t)r * n, n, op);
    }
    free(all);
    free(counts);
    if (rc == 0) rc = ranks_bcast(0, v, n * sizeof *v, err);
    return rc;
}

int ranks_agree(int rc, h5ark_error *err) {
    if (nranks == 1) return rc;
    /* the lowest failing rank, or nranks when none failed */
    uint64_t first = rc != 0 ? (uint64_t)self_rank : (uint64_t)nranks;
    h5ark_error mine = rc != 0 && err ? *err : (h5ark_error){0};
    if (ranks_allreduce_u64(&first, 1, RANKS_MIN, err) != 0) return -1;
    if (first == (uint64_t)nranks) return 0;
    h5ark_error theirs = mine;
    if (ranks_bcast((int)first, &theirs, sizeof theirs, err) != 0) return -1;
    if (err) *err = theirs;
    if (err && err->code == H5ARK_OK) h5ark_fail(err, H5ARK_INTERNAL, "rank %d failed", (int)first);
    /* memory is per rank: say which one ran short (other errors read as with one rank) */
    if (err && err->code == H5ARK_RESOURCE_LIMIT && first != 0 &&
        strncmp(err->message, "rank ", 5) != 0) {
        char prefix[32];
        size_t np = (size_t)snprintf(prefix, sizeof prefix, "rank %d: ", (int)first);
        size_t len = strnlen(err->message, sizeof err->message - 1);
        if (len + np >= sizeof err->message) len = sizeof err->message - 1 - np;
        memmove(err->message + np, err->message, len);
        memcpy(err->message, prefix, np);
        err->message[np + len] = 0;
    }
    return -1;
}

int ranks_alltoallv(const void *send, const uint64_t *send_counts, void *recv,
                    const uint64_t *recv_counts, h5ark_error *err) {
    uint64_t soff = 0, roff = 0;
    for (int r = 0; r < self_rank; r++)
        soff += send_counts[r], roff += recv_counts[r];
    if (send_counts[self_rank] != recv_counts[self_rank])
        return h5ark_fail(err, H5ARK_INTERNAL,
                          "all to all: rank %d sends itself %llu bytes "
                          "but expects %llu",
                          self_rank, (unsigned long long)send_counts[self_rank],
                          (unsigned long long)recv_counts[self_rank]);
    if (send_counts[self_rank])
        memcpy((char *)recv + roff, (const char *)send + soff, send_counts[self_rank]);
    if (nranks == 1) return 0;
#ifdef H5ARK_HAVE_MPI
    batch b = {0};
    soff = roff = 0;
    for (int r = 0; r < nranks; r++) {
        if (r != self_rank) {
            batch_recv(&b, r, (char *)recv + roff, recv_counts[r]);
            batch_send(&b, r, (const char *)send + soff, send_counts[r]);
        }
        soff += send_counts[r];
        roff += recv_counts[r];
    }
    return batch_wait(&b, "exchanging between ranks", err);
#else
    return h5ark_fail(err, H5ARK_INTERNAL, "several ranks without MPI");
#endif
}

int ranks_barrier(h5ark_error *err) {
    uint64_t zero = 0;
    return ranks_allreduce_u64(&zero, 1, RANKS_SUM, err);
}

int ranks_send(int to, const h5ark_span *spans, size_t nspans, h5ark_error *err) {
#ifdef H5ARK_HAVE_MPI
    if (nranks > 1) {
        batch b = {0};
        batch_send_spans(&b, to, spans, nspans);
        return batch_wait(&b, "sending to a rank", err);
    }
#endif
    (void)to, (void)spans, (void)nspans;
    return h5ark_fail(err, H5ARK_INTERNAL, "ranks_send with one rank");
}

int ranks_recv(int from, void *buf, uint64_t n, h5ark_error *err) {
#ifdef H5ARK_HAVE_MPI
    if (nranks > 1) {
        batch b = {0};
        batch_recv(&b, from, buf, n);
        return batch_wait(&b, "receiving from a rank", err);
    }
#endif
    (void)from, (void)buf, (void)n;
    return h5ark_fail(err, H5ARK_INTERNAL, "ranks_recv with one rank");
}

int ranks_recv_many(int from, int n, void *const *bufs, const uint64_t *lens, h5ark_error *err) {
#ifdef H5ARK_HAVE_MPI
    if (nranks > 1) {
        batch b = {0};
        for (int i = 0; i < n; i++)
            batch_recv(&b, from, bufs[i], lens[i]);
        return batch_wait(&b, "receiving from a rank", err);
    }
#endif
    (void)from, (void)n, (void)bufs, (void)lens;
    return h5ark_fail(err, H5ARK_INTERNAL, "ranks_recv_many with one rank");
}

#ifdef H5ARK_HAVE_MPI
/* The frames of p that hold [offset, offset + n), as spans (*ns of them). */
static h5ark_span *payload_spans(const h5ark_payload *p, uint64_t offset, uint64_t n, size_t *ns) {
    h5ark_span *spans = malloc((p->count ? p->count : 1) * sizeof *spans);
    *ns = 0;
    for (size_t i = 0; spans && i < p->count && n > 0; i++) {
        uint64_t fsize = zmq_msg_size(&p->frames[i]);
        if (p->starts[i] + fsize <= offset) continue;
        uint64_t skip = offset - p->starts[i];
        uint64_t take = fsize - skip < n ? fsize - skip : n;
        spans[(*ns)++] = (h5ark_span){(const char *)zmq_msg_data(&p->frames[i]) + skip, take};
        offset += take;
        n -= take;
    }
    return spans;
}
#endif

int ranks_scatter_payload(const h5ark_payload *p, int npieces, const int *to,
                          const uint64_t *offsets, const uint64_t *lens, h5ark_error *err) {
    for (int i = 0; i < npieces; i++)
        if (offsets[i] > p->total || lens[i] > p->total - offsets[i])
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "the payload is shorter than its buffers say");
#ifdef H5ARK_HAVE_MPI
    if (nranks > 1) {
        batch b = {0};
        for (int i = 0; i < npieces; i++) {
            size_t ns;
            h5ark_span *spans = payload_spans(p, offsets[i], lens[i], &ns);
            if (!spans) {
                b.failed = true;
                break;
            }
            batch_send_spans(&b, to[i], spans, ns);
            free(spans);
        }
        return batch_wait(&b, "sending a request's bytes to the ranks", err);
    }
#endif
    (void)to;
    return npieces ? h5ark_fail(err, H5ARK_INTERNAL, "ranks_scatter_payload with one rank") : 0;
}

/* Arkouda's form, id_<7 of [0-9A-Za-z]>_<n> (registry.c), made from the call's number and
 * how many names it made before: the same on every rank, yet reading as Arkouda's do. */
void ranks_call_name(char *out, size_t n) {
    static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    uint64_t x = call_seq * 0x10000u + call_names++ + 0x9e3779b97f4a7c15u; /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
    char seven[8];
    for (int i = 0; i < 7; i++, x /= 62)
        seven[i] = alphabet[x % 62];
    seven[7] = '\0';
    snprintf(out, n, "id_%s_%llu", seven, (unsigned long long)call_seq);
}

int ranks_bcast_value(h5ark_value **v, h5ark_error *err) {
    if (nranks == 1) return 0;
    char *data = NULL;
    size_t len = 0;
    uint64_t n = 0;
    int rc = 0;
    if (self_rank == 0) {
        if (!*v || h5ark_value_encode(*v, &data, &len))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank 0: out of memory encoding a value");
        n = len;
    }
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, &n, sizeof n, err);
    if (rc == 0 && self_rank != 0 && !(data = malloc(n ? n : 1)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", self_rank);
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, data, n, err);
    if (rc == 0 && self_rank != 0) {
        const char *why = "";
        if (!(*v = h5ark_value_decode(data, n, &why)))
            rc = h5ark_fail(err, H5ARK_INTERNAL, "rank %d: rank 0's value %s", self_rank, why);
    }
    free(data);
    return ranks_agree(rc, err);
}
