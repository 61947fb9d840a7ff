/* h5ark-hdf5-loop: the machine's own limit for reading many small HDF5 files — the HDF5 C
 * library alone, in P processes side by side (one per core, as the daemon's file probes),
 * each opening, reading and closing its share of the files. bench/run sets it beside the
 * readhdf of many small files: what h5ark does per file on top of the library is the gap.
 *
 *   h5ark-hdf5-loop PROCESSES DATASET FILE...   prints the seconds the slowest took */
#include "measure.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Read files [lo, hi) whole, as a reader that knows the dataset's name does. */
static int read_files(char **files, int lo, int hi, const char *dataset) {
    for (int i = lo; i < hi; i++) {
        hid_t f = H5Fopen(files[i], H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t d = f >= 0 ? H5Dopen2(f, dataset, H5P_DEFAULT) : H5I_INVALID_HID;
        hid_t s = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
        hssize_t n = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
        long long *buf = n >= 0 ? malloc((size_t)n * sizeof *buf + 1) : NULL;
        int ok = buf && H5Dread(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
        free(buf);
        if (s >= 0) H5Sclose(s);
        if (d >= 0) H5Dclose(d);
        if (f >= 0) H5Fclose(f);
        if (!ok) {
            fprintf(stderr, "h5ark-hdf5-loop: cannot read '%s' in '%s'\n", dataset, files[i]);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: h5ark-hdf5-loop PROCESSES DATASET FILE...\n");
        return 2;
    }
    int procs = atoi(argv[1]), nfiles = argc - 3;
    char **files = argv + 3;
    if (procs < 1) procs = 1;
    double t0 = now();
    for (int p = 0; p < procs; p++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0)
            _exit(read_files(files, nfiles * p / procs, nfiles * (p + 1) / procs, argv[2]) ? 1 : 0);
    }
    int failed = 0, status;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (failed) return 1;
    printf("%.6f\n", now() - t0);
    return 0;
}
