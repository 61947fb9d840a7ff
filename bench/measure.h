/* What the in-process measures of bench/ share, and tests/unit/test_owners.c with them: a
 * monotonic clock, an order for qsort, the bytes this process has written. */
#ifndef H5ARK_BENCH_MEASURE_H
#define H5ARK_BENCH_MEASURE_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Doubles in ascending order, for qsort. */
static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Bytes this process has written with write(2) and its kin (/proc/self/io's wchar). */
static inline uint64_t written(void) {
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    uint64_t n = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "wchar: %" SCNu64, &n) == 1) break;
    if (f) fclose(f);
    return n;
}

#endif
