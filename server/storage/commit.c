/* Putting new files in place, one or a set as one (see commit.h). */
#include "commit.h"

#include "config.h"
#include "files.h"
#include "io.h"
#include "locales.h"
#include "log.h"
#include "metrics.h"
#include "rwlock.h"
#include "sysio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOURNAL_HEAD "h5ark-journal 1\n"
#define JOURNAL_MAX  (64u << 20) /* far more than the names of any set */

/* ---- flushing and renaming ----------------------------------------------------------- */

static int fsync_path(const char *path, int flags) {
    int fd = sysio.open(path, flags | O_CLOEXEC, 0);
    if (fd < 0) return -1;
    int rc = sysio.fsync(fd);
    if (sysio.close(fd) != 0 && rc == 0) rc = -1;
    return rc;
}

/* The directory of path, synced: best effort, as some filesystems refuse. */
static void sync_dir_of(const char *path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = '\0';
    fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

static void *close_in_background(void *arg) {
    close((int)(intptr_t)arg);
    return NULL;
}

/* rename(tmp, final). Freeing a large replaced file's blocks takes the filesystem a good
 * part of a second per GiB, in whichever call drops its last reference: holding it open
 * moves that out of rename and into a close after the reply. */
static int rename_over(const char *tmp, const char *final) {
    int old = open(final, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (sysio.rename(tmp, final) != 0) {
        int e = errno;
        if (old >= 0) close(old);
        errno = e;
        return -1;
    }
    if (old >= 0) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, close_in_background, (void *)(intptr_t)old) != 0) close(old);
        pthread_attr_destroy(&attr);
    }
    return 0;
}

typedef struct {
    const char *const *tmps;
    int n;
    _Atomic int failed; /* 1 + the index of a file that could not be flushed, or 0 */
    int error;
} flush_job;

static void flush_some(int locale, void *ctx) {
    flush_job *j = ctx;
    /* this rank's locales share the files out (with several ranks, rank 0 commits) */
    int self = locale < 0 ? 0 : locale - locales_local_first();
    int step = locale < 0 ? 1 : locales_local_count();
    for (int i = self; i < j->n; i += step)
        if (fsync_path(j->tmps[i], O_RDONLY) != 0) {
            int none = 0;
            if (atomic_compare_exchange_strong(&j->failed, &none, i + 1)) j->error = errno;
        }
}

/* Every temporary flushed, side by side on the locales: one slow disk wait, not n. */
static int flush_all(const char *const *tmps, const char *const *finals, int n, h5ark_error *err) {
    flush_job job = {.tmps = tmps, .n = n};
    if (n == 1)
        flush_some(-1, &job);
    else if (n > 1)
        locales_run(flush_some, &job);
    int bad = atomic_load(&job.failed);
    if (bad)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot flush the new '%s': %s",
                          files_display(finals[bad - 1]), strerror(job.error));
    return 0;
}

int commit_file(const char *tmp, const char *final, h5ark_error *err) {
    if (flush_all(&tmp, &final, 1, err)) return -1;
    if (rename_over(tmp, final) != 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot replace '%s': %s", files_display(final),
                          strerror(errno));
    metrics_files_written(1);
    sync_dir_of(final);
    return 0;
}

/* ---- the journal --------------------------------------------------------------------- */

static uint64_t fnv1a(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3u;
    return h;
}

/* A name in a journal: relative to the data directory, '%', spaces and control
 * characters as %XX, so that a line is split on spaces alone. */
static size_t put_name(char *out, const char *abs) {
    const char *rel = files_display(abs);
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
        if (*p <= ' ' || *p == '%' || *p == 0x7f)
            k += (size_t)sprintf(out + k, "%%%02X", *p);
        else
            out[k++] = (char)*p;
    }
    return k;
}

static bool is_relative(const char *abs) {
    return strcmp(files_display(abs), abs) != 0;
}

/* Journal text for the set; NULL when out of memory. */
static char *journal_text(const char *const *tmps, const char *const *finals, int n,
                          const char *const *removes, int nremove, size_t *len) {
    size_t cap = sizeof JOURNAL_HEAD + 32;
    for (int i = 0; i < n; i++)
        cap += 3 * (strlen(tmps[i]) + strlen(finals[i])) + 16;
    for (int i = 0; i < nremove; i++)
        cap += 3 * strlen(removes[i]) + 16;
    char *t = sysio.malloc(cap);
    if (!t) return NULL;
    size_t k = (size_t)sprintf(t, "%s", JOURNAL_HEAD);
    for (int i = 0; i < n; i++) {
        k += (size_t)sprintf(t + k, "rename ");
        k += put_name(t + k, tmps[i]);
        t[k++] = ' ';
        k += put_name(t + k, finals[i]);
        t[k++] = '\n';
    }
    for (int i = 0; i < nremove; i++) {
        k += (size_t)sprintf(t + k, "remove ");
        k += put_name(t + k, removes[i]);
        t[k++] = '\n';
    }
    k += (size_t)sprintf(t + k, "end %016llx\n", (unsigned long long)fnv1a(t, k));
    *len = k;
    return t;
}

static int journal_dir(char out[PATH_MAX]) {
    int n = snprintf(out, PATH_MAX, "%s/" COMMIT_JOURNAL_DIR, config.data_dir);
    return n < 0 || n >= PATH_MAX ? -1 : 0;
}

/* Write and flush the journal; its name in `path`. On failure `path` names what may be
 * on disk (to remove), or is empty. */
static int journal_write(const char *const *tmps, const char *const *finals, int n,
                         const char *const *removes, int nremove, char path[PATH_MAX],
                         h5ark_error *err) {
    static atomic_uint counter;
    path[0] = '\0';
    for (int i = 0; i < n; i++)
        if (!is_relative(tmps[i]) || !is_relative(finals[i]))
            return h5ark_fail(err, H5ARK_IO_ERROR, "'%s' is outside the data directory", finals[i]);
    for (int i = 0; i < nremove; i++)
        if (!is_relative(removes[i]))
            return h5ark_fail(err, H5ARK_IO_ERROR, "'%s' is outside the data directory",
                              removes[i]);
    size_t len = 0;
    char *text = journal_text(tmps, finals, n, removes, nremove, &len);
    if (!text) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    char dir[PATH_MAX];
    int rc = 0;
    if (journal_dir(dir) != 0)
        rc = -1, errno = ENAMETOOLONG;
    else if (sysio.mkdir(dir, 0755) != 0 && errno != EEXIST)
        rc = -1;
    else if (snprintf(path, PATH_MAX, "%s/%d.%u", dir, (int)getpid(),
                      atomic_fetch_add(&counter, 1)) >= PATH_MAX)
        rc = -1, errno = ENAMETOOLONG;
    int fd = rc ? -1 : sysio.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) rc = -1, path[0] = '\0'; /* nothing made to remove */
    if (rc == 0 && (io_pwrite_full(fd, text, len, 0) != 0 || sysio.fsync(fd) != 0)) rc = -1;
    int e = errno;
    if (fd >= 0 && sysio.close(fd) != 0 && rc == 0) rc = -1, e = errno;
    /* the journal's name must be durable before any rename is */
    if (rc == 0 && fsync_path(dir, O_RDONLY | O_DIRECTORY) != 0 && errno != EINVAL)
        rc = -1, e = errno;
    free(text);
    if (rc)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot write the journal of '%s': %s",
                          files_display(finals[0]), strerror(e));
    return 0;
}

/* Unlink, with one more try for a transient error. */
static int unlink_retry(const char *path) {
    if (sysio.unlink(path) == 0 || errno == ENOENT) return 0;
    return sysio.unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Before the commit point: the journal goes first, then the temporaries, the last first
 * (a journal that could not be removed is completed at the next start only if its last
 * temporary is still there: see commit_recover). */
static void roll_back(const char *journal, const char *const *tmps, int n) {
    if (journal[0]) unlink_retry(journal);
    for (int i = n - 1; i >= 0; i--)
        unlink_retry(tmps[i]);
}

/* ---- readers and commits ------------------------------------------------------------- */

static pthread_rwlock_t sets;
static pthread_once_t sets_once = PTHREAD_ONCE_INIT;

/* a commit is short; readers arriving behind it wait for it rather than starve it */
static void sets_init(void) {
    rwlock_init_writer_first(&sets);
}

void commit_readers_enter(void) {
    pthread_once(&sets_once, sets_init);
    pthread_rwlock_rdlock(&sets);
}

void commit_readers_leave(void) {
    pthread_rwlock_unlock(&sets);
}

/* After the commit point every step is done, each tried once more if it fails. The last
 * temporary goes last: while it is there, the journal is still to be completed. */
static int put_in_place(const char *const *tmps, const char *const *finals, int n,
                        const char *const *removes, int nremove, int *done) {
    for (int i = 0; i < n - 1; i++, ++*done)
        if (rename_over(tmps[i], finals[i]) != 0 && rename_over(tmps[i], finals[i]) != 0) return i;
    for (int i = 0; i < nremove; i++)
        if (unlink_retry(removes[i]) != 0) return n - 1;
    if (rename_over(tmps[n - 1], finals[n - 1]) != 0 &&
        rename_over(tmps[n - 1], finals[n - 1]) != 0)
        return n - 1;
    ++*done;
    return -1;
}

int commit_set(const char *const *tmps, const char *const *finals, int n,
               const char *const *removes, int nremove, h5ark_error *err) {
    if (n < 1) return 0;
    bool journal = n > 1 || nremove > 0; /* one rename alone is atomic */
    char path[PATH_MAX] = "";
    if (flush_all(tmps, finals, n, err) ||
        (journal && journal_write(tmps, finals, n, removes, nremove, path, err))) {
        roll_back(path, tmps, n);
        return -1;
    }
    /* committed: the journal is whole on disk */
    pthread_once(&sets_once, sets_init);
    pthread_rwlock_wrlock(&sets);
    int done = 0, bad = -1;
    if (journal)
        bad = put_in_place(tmps, finals, n, removes, nremove, &done);
    else if (rename_over(tmps[0], finals[0]) != 0)
        bad = 0;
    else
        done = 1;
    int e = errno;
    pthread_rwlock_unlock(&sets);
    metrics_files_written((uint64_t)done);
    /* the renames durable before the journal goes */
    if (done) sync_dir_of(finals[0]);
    if (bad >= 0 && !journal) {
        unlink_retry(tmps[0]);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot replace '%s': %s", files_display(finals[0]),
                          strerror(e));
    }
    if (bad >= 0)
        return h5ark_fail(err, H5ARK_IO_ERROR,
                          "cannot replace '%s': %s; the write is committed (journal '%s'): %d "
                          "of the %d files are in place, the rest are put in place when the "
                          "daemon next starts",
                          files_display(finals[bad]), strerror(e), files_display(path), done, n);
    if (journal) unlink_retry(path); /* one left over is harmless: its temporaries are gone */
    return 0;
}

/* ---- at start ------------------------------------------------------------------------ */

typedef struct {
    char **from, **to; /* renames, absolute */
    int n;
    char **removes;
    int nremove;
} journal_entries;

static void entries_free(journal_entries *j) {
    for (int i = 0; i < j->n; i++) {
        free(j->from[i]);
        free(j->to[i]);
    }
    for (int i = 0; i < j->nremove; i++)
        free(j->removes[i]);
    free(j->from);
    free(j->to);
    free(j->removes);
    *j = (journal_entries){0};
}

/* A journal name back to an absolute path; NULL when malformed or leaving the directory. */
static char *take_name(const char *p, size_t n) {
    char rel[PATH_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k + 1 >= sizeof rel) return NULL;
        if (p[i] != '%') {
            rel[k++] = p[i];
            continue;
        }
        char hex[3] = {i + 2 < n ? p[i + 1] : 0, i + 2 < n ? p[i + 2] : 0, 0}, *end;
        long v = strtol(hex, &end, 16);
        if (end != hex + 2 || v <= 0) return NULL;
        rel[k++] = (char)v;
        i += 2;
    }
    rel[k] = '\0';
    if (k == 0 || rel[0] == '/' || strstr(rel, "../") || strcmp(rel, "..") == 0 ||
        (k >= 3 && strcmp(rel + k - 3, "/..") == 0))
        return NULL;
    char *abs = malloc(strlen(config.data_dir) + k + 2);
    if (abs) sprintf(abs, "%s/%s", config.data_dir, rel);
    return abs;
}

static int add_entry(char ***v, int *n, char *s) {
    char **g = realloc(*v, (size_t)(*n + 1) * sizeof *g);
    if (!g || !s) {
        if (g) *v = g;
        free(s);
        return -1;
    }
    *v = g;
    g[(*n)++] = s;
    return 0;
}

/* 0 with the entries of a whole journal; -1 when it is not one (torn, or not ours). */
static int journal_parse(char *text, size_t len, journal_entries *j) {
    *j = (journal_entries){0};
    size_t head = strlen(JOURNAL_HEAD);
    char *end = len >= head + 21 ? text + len - 21 : NULL;
    if (!end || memcmp(text, JOURNAL_HEAD, head) != 0 || memcmp(end, "end ", 4) != 0 ||
        text[len - 1] != '\n')
        return -1;
    char sum[17];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)fnv1a(text, (size_t)(end - text)));
    if (memcmp(end + 4, sum, 16) != 0) return -1;
    *end = '\0';
    for (char *line = text + head, *next; *line; line = next) {
        char *nl = strchr(line, '\n');
        if (!nl) break;
        *nl = '\0';
        next = nl + 1;
        char *sp = strchr(line, ' ');
        char *sp2 = sp ? strchr(sp + 1, ' ') : NULL;
        int rc = -1;
        if (sp && strncmp(line, "rename ", 7) == 0 && sp2) {
            int n = j->n;
            rc = add_entry(&j->from, &n, take_name(sp + 1, (size_t)(sp2 - sp - 1)));
            if (rc == 0 && add_entry(&j->to, &j->n, take_name(sp2 + 1, strlen(sp2 + 1))))
                rc = -1, free(j->from[n - 1]);
        } else if (sp && strncmp(line, "remove ", 7) == 0 && !sp2) {
            rc = add_entry(&j->removes, &j->nremove, take_name(sp + 1, strlen(sp + 1)));
        }
        if (rc) {
            entries_free(j);
            return -1;
        }
    }
    return j->n > 0 ? 0 : -1;
}

static char *read_journal(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    char *text = NULL;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= JOURNAL_MAX &&
        (text = malloc((size_t)st.st_size + 1)) &&
        io_pread_full(fd, text, (uint64_t)st.st_size, 0) == 0) {
        text[st.st_size] = '\0';
        *len = (size_t)st.st_size;
    } else if (text) {
        free(text);
        text = NULL;
    }
    if (fd >= 0) close(fd);
    return text;
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Complete one journal's commit: its last temporary still there means the commit point was
 * passed and not every rename was made (nor was it rolled back, which removes the last
 * temporary first). */
static int recover_one(const char *path, h5ark_error *err) {
    const char *shown = files_display(path);
    size_t len = 0;
    char *text = read_journal(path, &len);
    journal_entries j;
    if (!text || journal_parse(text, len, &j) != 0) {
        free(text);
        log_warn("dropped the journal '%s' of a write of a file set that stopped before its "
                 "commit point: the files it was to replace are as they were",
                 shown);
        unlink(path);
        return 0;
    }
    free(text);
    int n = j.n, put = 0, rc = 0;
    if (exists(j.from[n - 1])) {
        /* as put_in_place does it: the last rename after the removals */
        for (int i = 0; i < n && rc == 0; i++) {
            for (int r = 0; i == n - 1 && r < j.nremove && rc == 0; r++)
                if (unlink(j.removes[r]) != 0 && errno != ENOENT)
                    rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot remove '%s': %s",
                                    files_display(j.removes[r]), strerror(errno));
            if (rc || !exists(j.from[i])) continue;
            put++;
            if (rename(j.from[i], j.to[i]) != 0)
                rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot rename '%s' over '%s': %s",
                                files_display(j.from[i]), files_display(j.to[i]), strerror(errno));
        }
        if (rc == 0) {
            sync_dir_of(j.to[0]);
            log_warn("completed the write of a file set ('%s' .. '%s', %d files) that a "
                     "daemon stopping mid-commit left half done: %d of them were put in place "
                     "now (journal '%s')",
                     files_display(j.to[0]), files_display(j.to[n - 1]), n, put, shown);
        } else {
            h5ark_fail_context(err,
                               "cannot complete the write of the file set '%s' that a daemon "
                               "stopping mid-commit left half done (journal '%s'); it is not "
                               "served half written: fix the cause and start again",
                               files_display(j.to[0]), shown);
        }
    } else {
        log_info("journal '%s': its write had completed", shown);
    }
    entries_free(&j);
    if (rc == 0) unlink(path);
    return rc;
}

int commit_recover(h5ark_error *err) {
    char dir[PATH_MAX];
    DIR *d = journal_dir(dir) == 0 ? opendir(dir) : NULL;
    if (!d) return 0;
    /* every set that can be completed is, whichever cannot; err names the first of those */
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[PATH_MAX];
        h5ark_error one = {0};
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        if (recover_one(path, &one) != 0 && rc++ == 0) *err = one;
    }
    closedir(d);
    fsync_path(dir, O_RDONLY | O_DIRECTORY);
    return rc ? -1 : 0;
}
