/* h5ark-mpi-move: the raw MPI reference of bench/run's group `ranks`: the bytes the
 * daemon's ranks move between them, moved by MPI alone, with the same mpirun.
 *
 *   h5ark-mpi-move SCATTER_BYTES ALLTOALL_BYTES
 *
 * scatter:  rank 0 sends every other rank its block of SCATTER_BYTES (the block
 *           distribution of the daemon's arrays) and receives it back: what a put then a
 *           get of that many bytes move between ranks.
 * alltoall: every rank holds its block of ALLTOALL_BYTES and sends every rank its share of
 *           it: the exchange a groupby of that many key bytes makes.
 * Rank 0 prints the seconds of each, from a barrier to the last message. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* [start, start + count) of part `i` of `n` bytes in `parts`, as the daemon splits them */
static void block(int64_t n, int parts, int i, int64_t *start, int64_t *count) {
    *start = n * i / parts;
    *count = n * (i + 1) / parts - *start;
}

static double scatter(int64_t n, int rank, int size, char *buf) {
    MPI_Request *req = calloc((size_t)size, sizeof *req);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    int64_t s, c;
    if (rank == 0) {
        for (int pass = 0; pass < 2; pass++) { /* out, then back */
            int k = 0;
            for (int r = 1; r < size; r++) {
                block(n, size, r, &s, &c);
                if (pass == 0)
                    MPI_Isend(buf + s, (int)c, MPI_BYTE, r, 0, MPI_COMM_WORLD, &req[k++]);
                else
                    MPI_Irecv(buf + s, (int)c, MPI_BYTE, r, 1, MPI_COMM_WORLD, &req[k++]);
            }
            MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
        }
    } else {
        block(n, size, rank, &s, &c);
        MPI_Recv(buf, (int)c, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)c, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
    t = MPI_Wtime() - t;
    free(req);
    return t;
}

static double alltoall(int64_t n, int rank, int size, char *buf, char *out) {
    int *counts = calloc((size_t)size, sizeof(int)), *displs = calloc((size_t)size, sizeof(int));
    int64_t s, c;
    block(n, size, rank, &s, &c); /* this rank's block, cut in `size` shares */
    for (int r = 0; r < size; r++) {
        int64_t ss, cc;
        block(c, size, r, &ss, &cc);
        counts[r] = (int)cc;
        displs[r] = (int)ss;
    }
    int *rcounts = calloc((size_t)size, sizeof(int)), *rdispls = calloc((size_t)size, sizeof(int));
    MPI_Alltoall(counts, 1, MPI_INT, rcounts, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 1; r < size; r++)
        rdispls[r] = rdispls[r - 1] + rcounts[r - 1];
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    MPI_Alltoallv(buf, counts, displs, MPI_BYTE, out, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD); /* the last rank's last message, as rank 0 sees it */
    t = MPI_Wtime() - t;
    free(counts), free(displs), free(rcounts), free(rdispls);
    return t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: h5ark-mpi-move SCATTER_BYTES ALLTOALL_BYTES\n");
        MPI_Finalize();
        return 2;
    }
    int64_t sn = atoll(argv[1]), an = atoll(argv[2]);
    size_t most = (size_t)(sn > an ? sn : an);
    char *buf = malloc(most + 1), *out = malloc(most + 1);
    for (size_t i = 0; i < most; i++)
        buf[i] = (char)i, out[i] = 0; /* pages touched */
    double ts = scatter(sn, rank, size, buf);
    double ta = alltoall(an, rank, size, buf, out);
    if (rank == 0) printf("%.6f %.6f\n", ts, ta);
    free(buf), free(out);
    MPI_Finalize();
    return 0;
}
