/* The system-call table and its fault injection (see sysio.h). */
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int open3(const char *path, int flags, mode_t mode) {
    return open(path, flags, mode);
}

static int exchange(const char *a, const char *b) {
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

sysio_table sysio = {
    .open = open3,
    .close = close,
    .pread = pread,
    .pwrite = pwrite,
    .fsync = fsync,
    .ftruncate = ftruncate,
    .fstat = fstat,
    .stat = stat,
    .lstat = lstat,
    .rename = rename,
    .exchange = exchange,
    .unlink = unlink,
    .mkdir = mkdir,
    .copy_file_range = copy_file_range,
    .malloc = malloc,
    .calloc = calloc,
    .realloc = realloc,
};

static const char *const call_names[] = {
    "open",   "close",  "pread",  "pwrite",   "fsync",  "ftruncate", "fstat",
    "stat",   "lstat",  "rename", "exchange", "unlink", "mkdir",     "copy_file_range",
    "malloc", "calloc", "realloc"};
#define NCALLS (sizeof call_names / sizeof call_names[0])

/* Shared with the probe processes (a memfd each of them maps). */
typedef struct {
    _Atomic uint64_t count[SYSIO_CLASSES];
    _Atomic uint64_t nth[SYSIO_CLASSES]; /* 0: nothing armed */
    _Atomic int error;
    _Atomic int fired;         /* 1 + the index in call_names of the call that failed, or 0 */
    _Atomic uint32_t delay_ms; /* each pread, pwrite and fsync sleeps this long first */
    _Atomic uint32_t pause_ms; /* the armed call sleeps this long and runs, not failing */
    /* which function each call was (its index in call_names), for a test to pick calls */
    _Atomic unsigned char trace[SYSIO_CLASSES][SYSIO_TRACE_MAX];
} fault_state;

static fault_state *state;
static int state_fd = -1;
static sysio_table real;

/* Whether this call (of class c) is the one to fail; errno is set when it is. */
static bool hit(sysio_class c, const char *call) {
    uint64_t k = atomic_fetch_add(&state->count[c], 1) + 1;
    unsigned char code = 0;
    while (code < NCALLS && strcmp(call_names[code], call) != 0)
        code++;
    if (k <= SYSIO_TRACE_MAX) atomic_store(&state->trace[c][k - 1], code);
    uint64_t nth = atomic_load(&state->nth[c]);
    if (nth == 0 || k != nth) return false;
    atomic_store(&state->fired, code + 1);
    uint32_t ms = atomic_load(&state->pause_ms);
    if (ms) {
        nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
        return false;
    }
    errno = atomic_load(&state->error);
    return true;
}

static int f_open(const char *path, int flags, mode_t mode) {
    return hit(SYSIO_IO, "open") ? -1 : real.open(path, flags, mode);
}
static int f_close(int fd) {
    /* Linux releases the descriptor even when close reports an error */
    if (hit(SYSIO_IO, "close")) {
        int e = errno;
        real.close(fd);
        errno = e;
        return -1;
    }
    return real.close(fd);
}
static void slow_down(void) {
    uint32_t ms = atomic_load(&state->delay_ms);
    if (ms) nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}
static ssize_t f_pread(int fd, void *buf, size_t n, off_t offset) {
    slow_down();
    return hit(SYSIO_IO, "pread") ? -1 : real.pread(fd, buf, n, offset);
}
static ssize_t f_pwrite(int fd, const void *buf, size_t n, off_t offset) {
    slow_down();
    return hit(SYSIO_IO, "pwrite") ? -1 : real.pwrite(fd, buf, n, offset);
}
static int f_fsync(int fd) {
    slow_down();
    return hit(SYSIO_IO, "fsync") ? -1 : real.fsync(fd);
}
static int f_ftruncate(int fd, off_t size) {
    return hit(SYSIO_IO, "ftruncate") ? -1 : real.ftruncate(fd, size);
}
static int f_fstat(int fd, struct stat *st) {
    return hit(SYSIO_IO, "fstat") ? -1 : real.fstat(fd, st);
}
static int f_stat(const char *path, struct stat *st) {
    return hit(SYSIO_IO, "stat") ? -1 : real.stat(path, st);
}
static int f_lstat(const char *path, struct stat *st) {
    return hit(SYSIO_IO, "lstat") ? -1 : real.lstat(path, st);
}
static int f_rename(const char *from, const char *to) {
    return hit(SYSIO_IO, "rename") ? -1 : real.rename(from, to);
}
static int f_exchange(const char *a, const char *b) {
    return hit(SYSIO_IO, "exchange") ? -1 : real.exchange(a, b);
}
static int f_unlink(const char *path) {
    return hit(SYSIO_IO, "unlink") ? -1 : real.unlink(path);
}
static int f_mkdir(const char *path, mode_t mode) {
    return hit(SYSIO_IO, "mkdir") ? -1 : real.mkdir(path, mode);
}
static ssize_t f_copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                                 unsigned flags) {
    return hit(SYSIO_IO, "copy_file_range")
               ? -1
               : real.copy_file_range(in, in_off, out, out_off, n, flags);
}
static void *f_malloc(size_t n) {
    return hit(SYSIO_ALLOC, "malloc") ? NULL : real.malloc(n);
}
static void *f_calloc(size_t n, size_t size) {
    return hit(SYSIO_ALLOC, "calloc") ? NULL : real.calloc(n, size);
}
static void *f_realloc(void *p, size_t n) {
    return hit(SYSIO_ALLOC, "realloc") ? NULL : real.realloc(p, n);
}

int sysio_faults_start(int shared_fd) {
    if (state) return 0;
    int fd = shared_fd;
    if (fd < 0) {
        int made = memfd_create("h5ark-faults", MFD_CLOEXEC); /* the probes get it by dup2 */
        /* far from the low numbers the probes' descriptors are moved to at their spawn */
        fd = made >= 0 ? fcntl(made, F_DUPFD_CLOEXEC, 64) : -1;
        if (made >= 0) close(made);
        if (fd < 0 || ftruncate(fd, sizeof *state) != 0) {
            if (fd >= 0) close(fd);
            return -1;
        }
    }
    void *map = mmap(NULL, sizeof *state, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return -1;
    state = map;
    state_fd = fd;
    real = sysio;
    sysio = (sysio_table){
        .open = f_open,
        .close = f_close,
        .pread = f_pread,
        .pwrite = f_pwrite,
        .fsync = f_fsync,
        .ftruncate = f_ftruncate,
        .fstat = f_fstat,
        .stat = f_stat,
        .lstat = f_lstat,
        .rename = f_rename,
        .exchange = f_exchange,
        .unlink = f_unlink,
        .mkdir = f_mkdir,
        .copy_file_range = f_copy_file_range,
        .malloc = f_malloc,
        .calloc = f_calloc,
        .realloc = f_realloc,
    };
    return 0;
}

int sysio_faults_fd(void) {
    return state_fd;
}

bool sysio_faults_on(void) {
    return state != NULL;
}

void sysio_faults_arm(sysio_class c, uint64_t nth, int e) {
    if (!state) return;
    for (int i = 0; i < SYSIO_CLASSES; i++) {
        atomic_store(&state->nth[i], 0);
        atomic_store(&state->count[i], 0);
    }
    atomic_store(&state->fired, 0);
    atomic_store(&state->error, e);
    if (nth > 0 && c < SYSIO_CLASSES) atomic_store(&state->nth[c], nth);
}

void sysio_faults_delay(uint32_t ms) {
    if (state) atomic_store(&state->delay_ms, ms);
}

void sysio_faults_pause(uint32_t ms) {
    if (state) atomic_store(&state->pause_ms, ms);
}

const char *sysio_faults_report(uint64_t counts[SYSIO_CLASSES]) {
    for (int i = 0; i < SYSIO_CLASSES; i++)
        counts[i] = state ? atomic_load(&state->count[i]) : 0;
    int fired = state ? atomic_load(&state->fired) : 0;
    return fired > 0 && fired <= (int)NCALLS ? call_names[fired - 1] : NULL;
}

const char *sysio_faults_call(sysio_class c, uint64_t k) {
    if (!state || c >= SYSIO_CLASSES || k < 1 || k > SYSIO_TRACE_MAX ||
        k > atomic_load(&state->count[c]))
        return NULL;
    unsigned char code = atomic_load(&state->trace[c][k - 1]);
    return code < NCALLS ? call_names[code] : NULL;
}
