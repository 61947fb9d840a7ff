/* Twins of files written in parts (twin.h). */
#include "twin.h"

#include "files.h"
#include "temp_names.h"
#include "io.h"
#include "metrics.h"
#include "rwlock.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The twins known to be level with their files, by what both looked like when they were
 * made so: a file or twin that changed since (size, time or inode) is copied again. */
#define TWIN_KNOWN 32
typedef struct {
    char final[PATH_MAX];
    struct stat file, twin;
    uint64_t used; /* 0: free; else when last used, for evicting the oldest */
} known_twin;

static known_twin known[TWIN_KNOWN];
static uint64_t uses;
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t readers;
static pthread_once_t readers_once = PTHREAD_ONCE_INIT;

/* a steady stream of reads must not keep a part waiting forever */
static void readers_init(void) {
    rwlock_init_writer_first(&readers);
}

int twin_changes_lock(pathlock_set *held, const char *const *abs, size_t n, h5ark_error *err) {
    char(*keys)[PATH_MAX] = n ? sysio.malloc(n * sizeof *keys) : NULL;
    const char **ptrs = n ? sysio.malloc(n * sizeof *ptrs) : NULL;
    int rc = 0;
    if (n && (!keys || !ptrs)) {
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        *held = (pathlock_set){0};
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        pathlock_key(abs[i], keys[i]);
        ptrs[i] = keys[i];
    }
    if (rc == 0 && pathlock_take(held, ptrs, n) != 0)
        rc = errno == EDEADLK
                 ? h5ark_fail(err, H5ARK_INTERNAL, "a request took the locks of its files twice")
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(keys);
    free(ptrs);
    return rc;
}

int twin_changes_lock_named(pathlock_set *held, const file_access *fa, const char *given,
                            h5ark_error *err) {
    char abs[PATH_MAX];
    h5ark_error ignored = {0};
    const char *one[] = {abs};
    return twin_changes_lock(held, one, given && files_absolute(fa, given, abs, &ignored) == 0,
                             err);
}

void twin_changes_unlock(pathlock_set *held) {
    pathlock_give(held);
}

void twin_readers_enter(void) {
    pthread_once(&readers_once, readers_init);
    pthread_rwlock_rdlock(&readers);
}

void twin_readers_leave(void) {
    pthread_rwlock_unlock(&readers);
}

static bool same_state(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The entry of final (NULL: none); under known_lock. */
static known_twin *find(const char *final) {
    for (int i = 0; i < TWIN_KNOWN; i++)
        if (known[i].used && strcmp(known[i].final, final) == 0) return &known[i];
    return NULL;
}

static void forget(const char *final) {
    pthread_mutex_lock(&known_lock);
    known_twin *k = find(final);
    if (k) k->used = 0;
    pthread_mutex_unlock(&known_lock);
}

/* An evicted twin goes unless its file is being changed right now (its twin may be in use:
 * the change remembers it again, or drops it); never waits, for the caller holds its own
 * file's lock (twin_changes_lock's order). A twin left is copied afresh at its next
 * change, or removed at the next start. */
static void drop_unless_changing(const char *final) {
    char key[PATH_MAX];
    pathlock_set held;
    pathlock_key(final, key);
    if (!pathlock_try(&held, key)) return;
    pthread_mutex_lock(&known_lock);
    bool again = find(final) != NULL; /* its change since remembered it anew */
    pthread_mutex_unlock(&known_lock);
    if (!again) twin_drop(final);
    pathlock_give(&held);
}

/* Note that final and its twin are level, as they look now. */
static void remember(const char *final, const char *twin) {
    struct stat f, t;
    if (sysio.stat(final, &f) != 0 || sysio.stat(twin, &t) != 0) {
        forget(final);
        return;
    }
    char evicted[PATH_MAX] = "";
    pthread_mutex_lock(&known_lock);
    known_twin *k = find(final);
    for (int i = 0; !k && i < TWIN_KNOWN; i++)
        if (!known[i].used) k = &known[i];
    if (!k) { /* the least recently used goes, and its twin with it */
        k = &known[0];
        for (int i = 1; i < TWIN_KNOWN; i++)
            if (known[i].used < k->used) k = &known[i];
        snprintf(evicted, sizeof evicted, "%s", k->final);
    }
    snprintf(k->final, sizeof k->final, "%s", final);
    k->file = f;
    k->twin = t;
    k->used = ++uses;
    pthread_mutex_unlock(&known_lock);
    if (evicted[0]) drop_unless_changing(evicted);
}

static bool level(const char *final, const char *twin) {
    struct stat f, t;
    if (sysio.stat(final, &f) != 0 || sysio.stat(twin, &t) != 0) return false;
    pthread_mutex_lock(&known_lock);
    known_twin *k = find(final);
    bool ok = k && same_state(&k->file, &f) && same_state(&k->twin, &t);
    if (ok) k->used = ++uses;
    pthread_mutex_unlock(&known_lock);
    return ok;
}

void twin_drop(const char *final) {
    char twin[PATH_MAX];
    forget(final);
    if (twin_name_for(final, twin, sizeof twin) == 0) sysio.unlink(twin);
}

int twin_begin(twin_change *c, const char *final, const char *shown, h5ark_error *err) {
    memset(&c->log, 0, sizeof c->log);
    c->shown = shown;
    snprintf(c->final, sizeof c->final, "%s", final);
    if (twin_name_for(final, c->twin, sizeof c->twin))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", shown);
    if (!level(final, c->twin)) {
        forget(final);
        if (sysio.unlink(c->twin) != 0 && errno != ENOENT)
            return h5ark_fail(err, H5ARK_IO_ERROR, "cannot remove the old twin of '%s': %s", shown,
                              strerror(errno));
        if (files_copy(final, c->twin, shown, err)) {
            sysio.unlink(c->twin);
            return -1;
        }
    }
    struct stat st;
    if (sysio.stat(c->twin, &st) != 0) {
        h5ark_fail(err, H5ARK_IO_ERROR, "cannot look at the twin of '%s': %s", shown,
                   strerror(errno));
        twin_abort(c);
        return -1;
    }
    c->log.dev = st.st_dev;
    c->log.ino = st.st_ino;
    c->log.low = (uint64_t)st.st_size;
    h5u_vfd_record(&c->log);
    return 0;
}

void twin_abort(twin_change *c) {
    h5u_vfd_record(NULL);
    free(c->log.runs);
    c->log.runs = NULL;
    twin_drop(c->final);
}

static int fsync_at(const char *path, int flags) {
    int fd = sysio.open(path, flags | O_CLOEXEC, 0);
    if (fd < 0) return -1;
    int rc = sysio.fsync(fd);
    int e = errno;
    if (sysio.close(fd) != 0 && rc == 0) return -1;
    errno = e;
    return rc;
}

static int by_offset(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Copy bytes [off, off + len) of one open file into the same place of another. */
static int copy_run(int from, int to, uint64_t off, uint64_t len) {
    off_t in = (off_t)off, out = (off_t)off;
    while (len > 0) {
        ssize_t n = sysio.copy_file_range(from, &in, to, &out, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len -= (uint64_t)n;
    }
    if (len == 0) return 0;
    /* where the kernel cannot copy between these files, through memory */
    char buf[1 << 16];
    while (len > 0) {
        size_t m = len < sizeof buf ? (size_t)len : sizeof buf;
        if (io_pread_full(from, buf, m, (uint64_t)in) || io_pwrite_full(to, buf, m, (uint64_t)in))
            return -1;
        in += (off_t)m;
        len -= m;
    }
    return 0;
}

/* Repeat the change on the old file (now the twin): its size cut to the least the new file
 * had while it was written, every run written copied from the new file, its size set. The
 * bytes in between are the same in both, or zeros in both. 0 when they are level. */
static int bring_level(twin_change *c) {
    h5u_write_log *log = &c->log;
    if (log->lost) return -1;
    int twin = sysio.open(c->twin, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
    if (twin < 0) return -1;
    /* another process reading the old file (HDF5 holds a shared lock while it is open)
     * must not see it change under it: it keeps the old file, and the twin is made anew */
    if (flock(twin, LOCK_EX | LOCK_NB) != 0) {
        sysio.close(twin);
        return -1;
    }
    int file = sysio.open(c->final, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    struct stat st;
    int rc = file >= 0 && sysio.fstat(file, &st) == 0 ? 0 : -1;
    uint64_t size = rc == 0 ? (uint64_t)st.st_size : 0;
    if (rc == 0 && sysio.ftruncate(twin, (off_t)(log->low < size ? log->low : size)) != 0) rc = -1;
    qsort(log->runs, log->n, sizeof *log->runs, by_offset);
    for (size_t i = 0; i < log->n && rc == 0; i++) {
        uint64_t off = log->runs[i][0], end = off + log->runs[i][1];
        while (i + 1 < log->n && log->runs[i + 1][0] <= end) { /* overlapping runs once */
            i++;
            if (log->runs[i][0] + log->runs[i][1] > end) end = log->runs[i][0] + log->runs[i][1];
        }
        if (end > size) end = size;
        if (off < end) rc = copy_run(file, twin, off, end - off);
    }
    if (rc == 0 && sysio.ftruncate(twin, (off_t)size) != 0) rc = -1;
    if (file >= 0) sysio.close(file);
    flock(twin, LOCK_UN);
    if (sysio.close(twin) != 0) rc = -1;
    return rc;
}

int twin_commit(twin_change *c, h5ark_error *err) {
    h5u_vfd_record(NULL);
    int rc = 0;
    if (fsync_at(c->twin, O_RDONLY) != 0) {
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot flush the new '%s': %s", c->shown,
                        strerror(errno));
        twin_abort(c);
        return rc;
    }
    pthread_once(&readers_once, readers_init);
    pthread_rwlock_wrlock(&readers);
    bool swapped = sysio.exchange(c->twin, c->final) == 0;
    if (!swapped && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
        /* a filesystem that cannot swap names: the change goes in place as a copy would */
        if (sysio.rename(c->twin, c->final) != 0)
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot replace '%s': %s", c->shown,
                            strerror(errno));
    } else if (!swapped) {
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot replace '%s': %s", c->shown, strerror(errno));
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", c->final);
    *strrchr(dir, '/') = '\0';
    /* the swap must be on disk before the old file changes: else a crash of the machine
     * could leave the half-levelled old file under the file's name (EINVAL: a file system
     * that cannot sync a directory, as commit_file allows) */
    bool durable = rc == 0 && (fsync_at(dir, O_RDONLY | O_DIRECTORY) == 0 || errno == EINVAL);
    if (rc == 0) metrics_files_written(1);
    bool kept = swapped && durable && bring_level(c) == 0;
    pthread_rwlock_unlock(&readers);
    free(c->log.runs);
    c->log.runs = NULL;
    if (kept)
        remember(c->final, c->twin);
    else
        twin_drop(c->final);
    return rc;
}
