/* The process's ranks: MPI start and stop, and the MPI transport (transport.h). Built
 * without MPI, or run without mpirun, the process is one rank and no transport is needed.
 *
 * The collectives are made of nonblocking point-to-point messages on the call's tag, not
 * of MPI's collectives: several handler threads run requests at once, and MPI's
 * collectives on one communicator must be called in the same order on every rank, which
 * concurrent requests cannot promise. A tag per request keeps each request's messages
 * apart, and MPI keeps messages between two ranks on one tag in order.
 *
 * MPI is called under one lock (MPI_THREAD_SERIALIZED is all it needs to provide). */
#include "dist/ranks.h"
#include "dist/transport.h"

#include "sysio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef H5ARK_HAVE_MPI
#include <mpi.h>
#endif

#define HOST_MAX 256

static bool under_mpi;
static char (*hosts)[HOST_MAX];
static char library[256];

bool ranks_under_mpi(void) {
    return under_mpi;
}
const char *ranks_mpi_library(void) {
    return library;
}

const char *ranks_host(int rank) {
    static char local[HOST_MAX];
    if (hosts && rank >= 0 && rank < ranks_process_job()->count) return hosts[rank];
    if (!local[0] && gethostname(local, sizeof local - 1) != 0) snprintf(local, sizeof local, "?");
    return local;
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

/* Messages of more than this are sent in pieces, so that a wait sees pieces complete (and
 * keeps polling fast) during a long transfer, and no count passes MPI's int. */
#define PIECE_BYTES (4u << 20)

static const transport transport_mpi;

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
    ranks_job *job = ranks_process_job();
    /* A wait's deadline (H5ARK_RANK_WAIT, seconds; 0, the default: none). The heartbeats
     * find a rank that died or went silent, and a rank that gives up a transfer says so;
     * this finds a live rank that never sends what a wait expects for another reason (a
     * step stalled, a fault): the job then ends with an error naming the wait, rather than
     * hanging. Off by default because a peer's step may lawfully take long (rank 0 copying
     * a large file's old contents for an append). */
    const char *w = getenv("H5ARK_RANK_WAIT");
    if (w && *w) {
        char *end;
        long v = strtol(w, &end, 10);
        if (*end || v < 0 || v > 86400) {
            fprintf(stderr, "h5arkd: H5ARK_RANK_WAIT must be seconds, 0 to 86400, not '%s'\n", w);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        job->wait_limit_ns = (int64_t)v * 1000000000;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int count = 1, self = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &count);
    MPI_Comm_rank(MPI_COMM_WORLD, &self);
    job->count = count;
    job->t = &transport_mpi;
    ranks_process_self(self);
    int flag = 0, *ub = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (flag && ub) job->tag_ub = *ub;
    int len = 0;
    MPI_Get_library_version(library, &len);
    library[strcspn(library, "\n")] = '\0';
    char mine[HOST_MAX] = "";
    gethostname(mine, sizeof mine - 1);
    hosts = calloc((size_t)count, sizeof *hosts);
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

int ranks_startup_bcast(void *buf, size_t n) {
    if (ranks_process_job()->count == 1) return 0;
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

/* ---- the transport: a batch's operations are MPI requests ---- */

enum { INLINE_BLOCKS = 16, TEST_CHUNK = 64 };

static void mpi_recv(transport_batch *b, int from, void *buf, uint64_t n) {
    for (uint64_t off = 0; off < n || (n == 0 && off == 0); off += PIECE_BYTES) {
        uint64_t len = n - off < PIECE_BYTES ? n - off : PIECE_BYTES;
        MPI_Request *r = transport_slot(b);
        if (!r) return;
        pthread_mutex_lock(&mpi_lock);
        if (MPI_Irecv((char *)buf + off, (int)len, MPI_BYTE, from, b->tag, MPI_COMM_WORLD, r) !=
            MPI_SUCCESS)
            b->failed = true, b->n--;
        pthread_mutex_unlock(&mpi_lock);
        if (n == 0) break;
    }
}

/* Send the spans as one stream, cut into pieces of PIECE_BYTES as mpi_recv expects them;
 * a piece that crosses spans goes as one message of an indexed type (no copy). */
static void mpi_send(transport_batch *b, int to, const h5ark_span *spans, size_t nspans) {
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
        MPI_Request *r = lens && disps && !b->failed ? transport_slot(b) : NULL;
        if (r) {
            MPI_Datatype type;
            pthread_mutex_lock(&mpi_lock);
            int rc = MPI_Type_create_hindexed(nblocks, lens, disps, MPI_BYTE, &type);
            if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&type);
            if (rc == MPI_SUCCESS)
                rc = MPI_Isend(MPI_BOTTOM, 1, type, to, b->tag, MPI_COMM_WORLD, r);
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

/* MPI_Testsome over the requests, TEST_CHUNK at a time (no index array to allocate). */
static int mpi_test(transport_batch *b, int *done, char *why, size_t nwhy) {
    MPI_Request *reqs = (MPI_Request *)b->ops;
    int idx[TEST_CHUNK], rc = MPI_SUCCESS;
    *done = 0;
    pthread_mutex_lock(&mpi_lock);
    for (int off = 0; off < b->n && rc == MPI_SUCCESS; off += TEST_CHUNK) {
        int outcount = 0, n = b->n - off < TEST_CHUNK ? b->n - off : TEST_CHUNK;
        rc = MPI_Testsome(n, reqs + off, &outcount, idx, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS && outcount != MPI_UNDEFINED) *done += outcount;
    }
    pthread_mutex_unlock(&mpi_lock);
    if (rc == MPI_SUCCESS) return 0;
    snprintf(why, nwhy, "MPI failed");
    return -1;
}

static const transport transport_mpi = {.name = "MPI",
                                        .op_size = sizeof(MPI_Request),
                                        .recv = mpi_recv,
                                        .send = mpi_send,
                                        .test = mpi_test};

#endif /* H5ARK_HAVE_MPI */
