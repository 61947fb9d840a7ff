/* h5ark-owners-record: what recording the owners of N files costs when each is made by a
 * write of its own (storage/owners.h: one owners_created a file), in process, against the
 * least a durable record of a change can cost: the same N lines appended to a plain file
 * with an fsync each (the reference). Runs alternate between the two, each in a fresh
 * data directory on the same file system; milliseconds for N files, median (min, max),
 * the ratio to the reference, and the bytes written (/proc/self/io's wchar).
 *
 *   build/bench/h5ark-owners-record [runs] [files] [folder]
 */
#include "config.h"
#include "measure.h"
#include "storage/files.h"
#include "storage/owners.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

config_t config; /* the daemon's is defined in main.c */

static void report(const char *what, double *ms, int runs, double ref, uint64_t bytes) {
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    printf("%-34s %9.1f ms (%.1f, %.1f)  x%.2f of the reference  %" PRIu64 " bytes written\n", what,
           ms[runs / 2], ms[0], ms[runs - 1], ms[runs / 2] / ref, bytes);
}

/* A fresh data directory under base with n empty files in home/bench/; their paths. */
static char **fresh(const char *base, int run, int n) {
    char cmd[2 * PATH_MAX];
    if (snprintf(config.data_dir, sizeof config.data_dir, "%s/run%d", base, run) >= PATH_MAX ||
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s/home/bench'", config.data_dir,
                 config.data_dir) >= (int)sizeof cmd ||
        system(cmd) != 0)
        exit(1);
    char **abs = calloc((size_t)n, sizeof *abs);
    for (int i = 0; abs && i < n; i++) {
        abs[i] = malloc(PATH_MAX);
        if (!abs[i] ||
            snprintf(abs[i], PATH_MAX, "%s/home/bench/f%06d.h5", config.data_dir, i) >= PATH_MAX)
            exit(1);
        int fd = open(abs[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) exit(1);
        close(fd);
    }
    return abs;
}

static void drop(char **abs, int n) {
    for (int i = 0; i < n; i++)
        free(abs[i]);
    free(abs);
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 5, n = argc > 2 ? atoi(argv[2]) : 2000;
    const char *folder = argc > 3 ? argv[3] : "/tmp";
    char base[PATH_MAX];
    if (runs < 1 || n < 1 ||
        snprintf(base, sizeof base, "%s/h5ark-owners-bench.%d", folder, (int)getpid()) >=
            PATH_MAX) {
        fprintf(stderr, "usage: h5ark-owners-record [runs] [files] [folder]\n");
        return 2;
    }
    double *rec = calloc((size_t)runs, sizeof *rec), *ref = calloc((size_t)runs, sizeof *ref);
    uint64_t rec_bytes = 0, ref_bytes = 0;
    for (int r = 0; r < runs; r++) {
        char **abs = fresh(base, r, n);
        uint64_t w = written();
        double t = now();
        for (int i = 0; i < n; i++) {
            h5ark_error err;
            const char *one[] = {abs[i]};
            if (owners_created("bench", one, 1, &err)) {
                fprintf(stderr, "owners_created: %s\n", err.message);
                return 1;
            }
        }
        rec[r] = (now() - t) * 1e3;
        rec_bytes = written() - w;
        if (files_disk_usage_of("bench") != 0) return 1; /* the files are empty */
        /* the reference: each line appended and fsynced by itself */
        char plain[PATH_MAX + 16];
        snprintf(plain, sizeof plain, "%s/plain", config.data_dir);
        w = written();
        t = now();
        for (int i = 0; i < n; i++) {
            char line[PATH_MAX + 16];
            int len = snprintf(line, sizeof line, "bench\t%s\n", files_display(abs[i]));
            int fd = open(plain, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (fd < 0 || write(fd, line, (size_t)len) != len || fsync(fd) != 0) return 1;
            close(fd);
        }
        ref[r] = (now() - t) * 1e3;
        ref_bytes = written() - w;
        drop(abs, n);
    }
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) return 1;
    double refs[runs];
    memcpy(refs, ref, sizeof refs);
    qsort(refs, (size_t)runs, sizeof *refs, cmp_double);
    printf("owners of %d files, one write each, %d runs in %s:\n", n, runs, folder);
    report("appends with an fsync (reference)", ref, runs, refs[runs / 2], ref_bytes);
    report("owners_created", rec, runs, refs[runs / 2], rec_bytes);
    free(rec);
    free(ref);
    return 0;
}
