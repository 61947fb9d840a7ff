/* The owners of files (see owners.h): a journal of changes, replayed into an index. */
#include "owners.h"

#include "config.h"
#include "files.h"
#include "temp_names.h"
#include "io.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A journal of fewer lines than this is never compacted. */
#define COMPACT_SLACK 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The journal replayed (under lock): every path it names, with its owner now (NULL: none),
 * and what is known of the file it was read from, so that it is read again only once the
 * file has changed (another process, or a change that failed half way). */
typedef struct {
    char **path, **user;
    size_t n, cap;
    size_t *slots;  /* open addressing over path: index + 1, 0 empty */
    size_t nslots;  /* a power of two, at least twice n */
    size_t live;    /* paths with an owner */
    uint64_t named; /* paths the journal's lines name, repeats included */
    uint64_t valid; /* bytes of its whole lines: where the next one goes */
    bool known, exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} owners_index;

static owners_index idx;

static void index_free(owners_index *x) {
    for (size_t i = 0; i < x->n; i++) {
        free(x->path[i]);
        free(x->user[i]);
    }
    free(x->path);
    free(x->user);
    free(x->slots);
    *x = (owners_index){0};
}

static uint64_t hash_of(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* The slot of path (len bytes): its own, or the empty one it would take. */
static size_t *slot_of(const owners_index *x, const char *path, size_t len) {
    size_t mask = x->nslots - 1, i = hash_of(path, len) & mask;
    for (;; i = (i + 1) & mask) {
        size_t k = x->slots[i];
        if (!k || (strncmp(x->path[k - 1], path, len) == 0 && x->path[k - 1][len] == '\0'))
            return &x->slots[i];
    }
}

static int grow(owners_index *x) {
    size_t cap = x->cap ? x->cap * 2 : 64, nslots = cap * 2;
    char **path = realloc(x->path, cap * sizeof *path);
    if (path) x->path = path;
    char **user = path ? realloc(x->user, cap * sizeof *user) : NULL;
    if (user) x->user = user;
    size_t *slots = user ? calloc(nslots, sizeof *slots) : NULL;
    if (!slots) return -1;
    free(x->slots);
    x->slots = slots;
    x->nslots = nslots;
    x->cap = cap;
    for (size_t i = 0; i < x->n; i++)
        *slot_of(x, x->path[i], strlen(x->path[i])) = i + 1;
    return 0;
}

/* path (len bytes) is user's from now on (NULL or "": no one's). -1: out of memory. */
static int index_set(owners_index *x, const char *user, size_t ulen, const char *path, size_t len) {
    x->named++;
    if (x->n == x->cap && grow(x)) return -1;
    size_t *slot = slot_of(x, path, len);
    char *who = user && ulen ? strndup(user, ulen) : NULL;
    if (user && ulen && !who) return -1;
    if (!*slot) {
        if (!who) return 0; /* no one's, as it was */
        char *copy = strndup(path, len);
        if (!copy) return free(who), -1;
        x->path[x->n] = copy;
        x->user[x->n] = NULL;
        *slot = ++x->n;
    }
    char **held = &x->user[*slot - 1];
    x->live += (who != NULL) - (*held != NULL);
    free(*held);
    *held = who;
    return 0;
}

static const char *owner_in(const owners_index *x, const char *path) {
    if (!x->nslots) return NULL;
    size_t k = *slot_of(x, path, strlen(path));
    return k ? x->user[k - 1] : NULL;
}

size_t owners_parse(const char *text, size_t len, owners_each each, void *ctx) {
    size_t valid = 0;
    for (size_t at = 0; at < len;) {
        const char *line = text + at, *end = memchr(line, '\n', len - at);
        if (!end) break; /* a torn tail: the change it began never happened */
        const char *tab = memchr(line, '\t', (size_t)(end - line));
        for (const char *p = tab; p && p < end;) {
            const char *next = memchr(p + 1, '\t', (size_t)(end - p - 1));
            const char *stop = next ? next : end;
            if (stop > p + 1 &&
                each(line, (size_t)(tab - line), p + 1, (size_t)(stop - p - 1), ctx))
                return valid;
            p = next;
        }
        at = valid = (size_t)(end - text) + 1;
    }
    return valid;
}

static int replay(const char *user, size_t ulen, const char *path, size_t plen, void *ctx) {
    return index_set(ctx, user, ulen, path, plen);
}

/* A path of the data directory made absolute; false when it does not fit. */
static bool in_data_dir(const char *rel, char out[PATH_MAX]) {
    int n = snprintf(out, PATH_MAX, "%s/%s", config.data_dir, rel);
    return n >= 0 && n < PATH_MAX;
}

static void record_path(char out[PATH_MAX]) {
    if (!in_data_dir(FILES_OWNERS, out)) out[0] = '\0';
}

static int read_fail(h5ark_error *err, int e) {
    return h5ark_fail(err, H5ARK_IO_ERROR, "cannot read the owners' record: %s", strerror(e));
}

/* The index as the journal on disk says (under lock): read again only when the file is
 * not the one last read or written. */
static int load(h5ark_error *err) {
    char path[PATH_MAX];
    record_path(path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno != ENOENT) return read_fail(err, errno);
    struct stat st = {0};
    if (fd >= 0 && fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return read_fail(err, e);
    }
    if (idx.known && idx.exists == (fd >= 0) &&
        (fd < 0 ||
         (st.st_dev == idx.dev && st.st_ino == idx.ino && st.st_size == idx.size &&
          st.st_mtim.tv_sec == idx.mtime.tv_sec && st.st_mtim.tv_nsec == idx.mtime.tv_nsec))) {
        if (fd >= 0) close(fd);
        return 0;
    }
    index_free(&idx);
    if (fd < 0) return idx.known = true, 0;
    size_t len = (size_t)st.st_size;
    char *text = malloc(len + 1);
    int rc = !text ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
             : len && io_pread_full(fd, text, len, 0) ? read_fail(err, errno)
                                                      : 0;
    close(fd);
    if (rc == 0 && (idx.valid = owners_parse(text, len, replay, &idx)) != len &&
        memchr(text + idx.valid, '\n', len - idx.valid))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"); /* stopped short */
    free(text);
    if (rc) return index_free(&idx), -1;
    idx.known = idx.exists = true;
    idx.dev = st.st_dev;
    idx.ino = st.st_ino;
    idx.size = st.st_size;
    idx.mtime = st.st_mtim;
    return 0;
}

static int write_fail(h5ark_error *err, const char *what) {
    return h5ark_fail(err, H5ARK_IO_ERROR, "cannot %s the owners' record: %s", what,
                      strerror(errno));
}

static int sync_data_dir(h5ark_error *err) {
    int dfd = sysio.open(config.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    int rc =
        dfd < 0 || sysio.fsync(dfd) != 0
            ? h5ark_fail(err, H5ARK_IO_ERROR, "cannot sync the data directory: %s", strerror(errno))
            : 0;
    if (dfd >= 0) sysio.close(dfd);
    return rc;
}

/* One line appended to the journal after its last whole one (a torn tail cut off first),
 * and fsynced (under lock, the index loaded). Whole or not at all: a line cut short by a
 * failure is a torn tail, which no reader takes. */
static int append(const char *line, size_t len, h5ark_error *err) {
    char path[PATH_MAX];
    record_path(path);
    bool fresh = !idx.exists;
    int fd = sysio.open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return write_fail(err, "write");
    int rc = (uint64_t)idx.size > idx.valid && sysio.ftruncate(fd, (off_t)idx.valid)
                 ? write_fail(err, "cut the torn tail of")
             : io_pwrite_full(fd, line, len, idx.valid) || sysio.fsync(fd)
                 ? write_fail(err, "write")
                 : 0;
    struct stat st;
    if (rc == 0 && fstat(fd, &st) != 0) rc = write_fail(err, "look at");
    if (rc) sysio.ftruncate(fd, (off_t)idx.valid); /* at best; a reader skips it anyway */
    if (sysio.close(fd) != 0 && rc == 0) rc = write_fail(err, "write");
    if (rc == 0 && fresh) rc = sync_data_dir(err); /* its name, too, survives a crash */
    if (rc) {
        idx.known = false; /* read it again: the line may be there or not */
        return -1;
    }
    idx.valid += len;
    idx.exists = true;
    idx.dev = st.st_dev;
    idx.ino = st.st_ino;
    idx.size = st.st_size;
    idx.mtime = st.st_mtim;
    return 0;
}

/* The journal rewritten as one line per owned file that is still there (under lock):
 * a temporary, fsynced, renamed over it, the folder fsynced, so a crash leaves the old
 * journal or the new. A failure leaves the old one, still valid, for the next change. */
static void compact(void) {
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) return;
    for (size_t i = 0; i < idx.n; i++) {
        char abs[PATH_MAX];
        struct stat st;
        if (idx.user[i] && in_data_dir(idx.path[i], abs) && lstat(abs, &st) == 0)
            fprintf(out, "%s\t%s\n", idx.user[i], idx.path[i]);
    }
    char final[PATH_MAX], tmp[PATH_MAX];
    record_path(final);
    int fd = fclose(out) == 0 && temp_name_for(final, tmp, sizeof tmp) == 0
                 ? sysio.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)
                 : -1;
    bool done = fd >= 0 && io_pwrite_full(fd, text, len, 0) == 0 && sysio.fsync(fd) == 0;
    if (fd >= 0 && sysio.close(fd) != 0) done = false;
    if (done) done = sysio.rename(tmp, final) == 0;
    if (!done && fd >= 0) unlink(tmp);
    free(text);
    h5ark_error ignore;
    if (done) sync_data_dir(&ignore);
    idx.known = false; /* read again at the next use: the index of what was written */
}

/* A change: `user` (NULL: no one) owns the n files, in one line of the journal. */
static int change(const char *user, const char *const *abs, size_t n, h5ark_error *err) {
    char *line = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&line, &len);
    if (!out) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    fputs(user ? user : "", out);
    for (size_t k = 0; k < n; k++)
        fprintf(out, "\t%s", files_display(abs[k]));
    fputc('\n', out);
    int rc = fclose(out) == 0 ? append(line, len, err)
                              : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(line);
    for (size_t k = 0; rc == 0 && k < n; k++) {
        const char *rel = files_display(abs[k]);
        if (index_set(&idx, user, user ? strlen(user) : 0, rel, strlen(rel))) {
            idx.known = false; /* the journal holds the change; read it again next time */
            return 0;
        }
    }
    if (rc == 0 && idx.named > 2 * (uint64_t)idx.live && idx.named > COMPACT_SLACK) compact();
    return rc;
}

int owners_created(const char *user, const char *const *abs, size_t n, h5ark_error *err) {
    if (!user || n == 0) return 0;
    pthread_mutex_lock(&lock);
    int rc = load(err) ? -1 : change(user, abs, n, err);
    pthread_mutex_unlock(&lock);
    return rc;
}

int owners_deleted(const char *const *abs, size_t n, h5ark_error *err) {
    if (n == 0) return 0;
    pthread_mutex_lock(&lock);
    int rc = load(err);
    const char **owned = rc == 0 ? malloc(n * sizeof *owned) : NULL;
    if (rc == 0 && !owned) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t k = 0; /* files no one owns change nothing */
    for (size_t i = 0; owned && i < n; i++)
        if (owner_in(&idx, files_display(abs[i]))) owned[k++] = abs[i];
    if (rc == 0 && k) rc = change(NULL, owned, k, err);
    free(owned);
    pthread_mutex_unlock(&lock);
    return rc;
}

int owners_of(const char *abs, char *user, size_t len) {
    h5ark_error ignore;
    if (len) user[0] = '\0';
    pthread_mutex_lock(&lock);
    const char *who = load(&ignore) == 0 ? owner_in(&idx, files_display(abs)) : NULL;
    int found = who && snprintf(user, len, "%s", who) >= 0;
    pthread_mutex_unlock(&lock);
    return found;
}

static uint64_t size_of(const char *rel) {
    char path[PATH_MAX];
    struct stat st;
    return in_data_dir(rel, path) && lstat(path, &st) == 0 && S_ISREG(st.st_mode)
               ? (uint64_t)st.st_size
               : 0;
}

/* Bytes of the files `user` owns, among `abs` (NULL: all). */
static uint64_t owned_bytes(const char *user, const char *const *abs, size_t n) {
    h5ark_error ignore;
    uint64_t total = 0;
    pthread_mutex_lock(&lock);
    if (load(&ignore) == 0) {
        for (size_t k = 0; abs && k < n; k++) {
            const char *rel = files_display(abs[k]), *who = owner_in(&idx, rel);
            bool again = false; /* a file named twice counts once */
            for (size_t j = 0; j < k && !again; j++)
                again = strcmp(files_display(abs[j]), rel) == 0;
            if (who && strcmp(who, user) == 0 && !again) total += size_of(rel);
        }
        for (size_t i = 0; !abs && i < idx.n; i++)
            if (idx.user[i] && strcmp(idx.user[i], user) == 0) total += size_of(idx.path[i]);
    }
    pthread_mutex_unlock(&lock);
    return total;
}

uint64_t owners_bytes_among(const char *user, const char *const *abs, size_t n) {
    return user && n ? owned_bytes(user, abs, n) : 0;
}

uint64_t files_disk_usage_of(const char *owner) {
    return owner ? owned_bytes(owner, NULL, 0) : 0;
}

int owners_quota_check(const char *user, int64_t quota, uint64_t usage, uint64_t need,
                       uint64_t given_back, h5ark_error *err) {
    if (quota < 0) return 0;
    uint64_t after = usage - (given_back < usage ? given_back : usage);
    if (need <= (uint64_t)quota && after <= (uint64_t)quota - need) return 0;
    return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                      "quota.disk: %s's files hold %" PRIu64 " bytes; this write needs %" PRIu64
                      " more (%" PRIu64 " replaced) and the quota is %" PRId64
                      " bytes; nothing was written",
                      user, usage, need, given_back, quota);
}

int owners_room(const file_access *fa, const char *abs, uint64_t size, h5ark_error *err) {
    if (!file_access_on(fa) || fa->disk_quota < 0) return 0;
    struct stat st;
    bool fresh = lstat(abs, &st) != 0;
    uint64_t mine = fresh ? 0 : owners_bytes_among(fa->user, &abs, 1);
    char owner[128];
    if (!fresh && !mine && !(owners_of(abs, owner, sizeof owner) && strcmp(owner, fa->user) == 0))
        return 0; /* another's, or no one's: the user's usage does not move */
    return owners_quota_check(fa->user, fa->disk_quota, files_disk_usage_of(fa->user), size, mine,
                              err);
}
