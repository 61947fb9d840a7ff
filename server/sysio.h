/* The storage paths' system calls and large allocations, through one table that tests can
 * override (as SQLite's aSyscall[] does). The entries are the libc functions unless the
 * daemon was started with H5ARK_FAULTS=1 (test-only, docs/FAULTS.md): then every call is
 * counted, and the Nth call of a class can be made to fail with a chosen errno. The
 * counters live in memory shared with the file probe processes, so one count covers a
 * whole request wherever its calls run. */
#ifndef H5ARK_SYSIO_H
#define H5ARK_SYSIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct {
    int (*open)(const char *path, int flags, mode_t mode);
    int (*close)(int fd);
    ssize_t (*pread)(int fd, void *buf, size_t n, off_t offset);
    ssize_t (*pwrite)(int fd, const void *buf, size_t n, off_t offset);
    int (*fsync)(int fd);
    int (*ftruncate)(int fd, off_t size);
    int (*fstat)(int fd, struct stat *st);
    int (*stat)(const char *path, struct stat *st);
    int (*lstat)(const char *path, struct stat *st);
    int (*rename)(const char *from, const char *to);
    /* swap two names in one atomic step (renameat2's RENAME_EXCHANGE) */
    int (*exchange)(const char *a, const char *b);
    int (*unlink)(const char *path);
    int (*mkdir)(const char *path, mode_t mode);
    ssize_t (*copy_file_range)(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                               unsigned flags);
    void *(*malloc)(size_t n);
    void *(*calloc)(size_t n, size_t size);
    void *(*realloc)(void *p, size_t n);
} sysio_table;

extern sysio_table sysio;

/* The classes of calls a fault can be injected into. */
typedef enum { SYSIO_IO, SYSIO_ALLOC, SYSIO_CLASSES } sysio_class;

/* The test-only switch, in the daemon's environment (and so its probes'). */
#define SYSIO_FAULTS_ENV "H5ARK_FAULTS"

/* Turn on counting and injection (H5ARK_FAULTS=1): the daemon passes -1 and shares the
 * counters it makes; a probe process passes the descriptor it inherited. -1 on failure. */
int sysio_faults_start(int shared_fd);
/* The shared counters' descriptor, for the probe processes; -1 when faults are off. */
int sysio_faults_fd(void);
bool sysio_faults_on(void);
/* Reset the counts; with nth > 0, the nth call of class c from now fails with errno e. */
void sysio_faults_arm(sysio_class c, uint64_t nth, int e);
/* Make every pread, pwrite and fsync through the table sleep `ms` first (0: none), in the
 * daemon and its probes: long requests, for tests of what a client sees while one runs. */
void sysio_faults_delay(uint32_t ms);
/* Make the armed call (sysio_faults_arm) sleep `ms` and then run instead of failing (0:
 * it fails): a test stops the daemon at a chosen call, e.g. to kill it there. */
void sysio_faults_pause(uint32_t ms);
/* The calls of each class since the last arm; the function the armed fault failed
 * ("rename"), or NULL when it has not fired. */
const char *sysio_faults_report(uint64_t counts[SYSIO_CLASSES]);
/* Which function call k (from 1) of class c since the last arm was, for the first
 * SYSIO_TRACE_MAX calls; NULL past them. */
#define SYSIO_TRACE_MAX 4096
const char *sysio_faults_call(sysio_class c, uint64_t k);

#endif
