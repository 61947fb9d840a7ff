/* The owners of files (see owners.h). */
#include "owners.h"

#include "config.h"
#include "files.h"
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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    char *text; /* the record's lines, each "USER\tPATH" made two strings */
    char **user, **path;
    size_t n;
} record;

static void record_free(record *r) {
    free(r->text);
    free(r->user);
    free(r->path);
    *r = (record){0};
}

/* A path of the data directory made absolute; false when it does not fit. */
static bool in_data_dir(const char *rel, char out[PATH_MAX]) {
    int n = snprintf(out, PATH_MAX, "%s/%s", config.data_dir, rel);
    return n >= 0 && n < PATH_MAX;
}

static void record_path(char out[PATH_MAX]) {
    if (!in_data_dir(FILES_OWNERS, out)) out[0] = '\0';
}

/* The record as it is on disk (empty when there is none; a line without a tab is
 * skipped). */
static int record_read(record *r, h5ark_error *err) {
    *r = (record){0};
    char path[PATH_MAX];
    record_path(path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? 0
                               : h5ark_fail(err, H5ARK_IO_ERROR,
                                            "cannot read the owners' record: %s", strerror(errno));
    struct stat st;
    size_t len = fstat(fd, &st) == 0 ? (size_t)st.st_size : 0;
    r->text = malloc(len + 1);
    size_t lines = 0;
    int rc = r->text && (len == 0 || io_pread_full(fd, r->text, len, 0) == 0)
                 ? 0
                 : h5ark_fail(err, H5ARK_IO_ERROR, "cannot read the owners' record");
    close(fd);
    if (rc) return record_free(r), -1;
    r->text[len] = '\0';
    for (size_t i = 0; i < len; i++)
        lines += r->text[i] == '\n';
    r->user = calloc(lines + 1, sizeof *r->user);
    r->path = calloc(lines + 1, sizeof *r->path);
    if (!r->user || !r->path) {
        record_free(r);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (char *line = r->text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *tab = strchr(line, '\t');
        if (!tab || r->n > lines) continue;
        *tab = '\0';
        r->user[r->n] = line;
        r->path[r->n++] = tab + 1;
    }
    return 0;
}

static bool exists(const char *rel) {
    char abs[PATH_MAX];
    struct stat st;
    return in_data_dir(rel, abs) && lstat(abs, &st) == 0;
}

/* The record with `add` (NULL: nothing) owning the n paths, or with them dropped, and
 * every entry whose file is gone dropped, written in place as one. */
static int record_change(const char *add, const char *const *abs, size_t n, h5ark_error *err) {
    record r;
    if (record_read(&r, err)) return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    int rc = out ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < r.n; i++) {
        bool named = false;
        for (size_t k = 0; k < n && !named; k++)
            named = strcmp(files_display(abs[k]), r.path[i]) == 0;
        if (!named && exists(r.path[i])) fprintf(out, "%s\t%s\n", r.user[i], r.path[i]);
    }
    for (size_t k = 0; rc == 0 && add && k < n; k++)
        fprintf(out, "%s\t%s\n", add, files_display(abs[k]));
    if (out && fclose(out) != 0 && rc == 0)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    record_free(&r);
    char final[PATH_MAX], tmp[PATH_MAX];
    record_path(final);
    if (rc == 0 && files_temp_name(final, tmp, sizeof tmp))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the data directory's path is too long");
    int fd = rc == 0 ? sysio.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
    if (rc == 0 && (fd < 0 || io_pwrite_full(fd, text, len, 0) || sysio.fsync(fd)))
        rc =
            h5ark_fail(err, H5ARK_IO_ERROR, "cannot write the owners' record: %s", strerror(errno));
    if (fd >= 0 && sysio.close(fd) != 0 && rc == 0)
        rc =
            h5ark_fail(err, H5ARK_IO_ERROR, "cannot write the owners' record: %s", strerror(errno));
    if (rc == 0 && sysio.rename(tmp, final) != 0)
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot replace the owners' record: %s",
                        strerror(errno));
    if (rc && fd >= 0) unlink(tmp);
    free(text);
    if (rc == 0) {
        int dfd = sysio.open(config.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (dfd < 0 || sysio.fsync(dfd) != 0)
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot sync the data directory: %s",
                            strerror(errno));
        if (dfd >= 0) sysio.close(dfd);
    }
    return rc;
}

int owners_created(const char *user, const char *const *abs, size_t n, h5ark_error *err) {
    if (!user || n == 0) return 0;
    pthread_mutex_lock(&lock);
    int rc = record_change(user, abs, n, err);
    pthread_mutex_unlock(&lock);
    return rc;
}

int owners_deleted(const char *const *abs, size_t n, h5ark_error *err) {
    if (n == 0) return 0;
    pthread_mutex_lock(&lock);
    record r;
    int rc = record_read(&r, err);
    bool any = false; /* files no one owns change nothing */
    for (size_t i = 0; rc == 0 && i < r.n && !any; i++)
        for (size_t k = 0; k < n && !any; k++)
            any = strcmp(files_display(abs[k]), r.path[i]) == 0;
    record_free(&r);
    if (rc == 0 && any) rc = record_change(NULL, abs, n, err);
    pthread_mutex_unlock(&lock);
    return rc;
}

int owners_of(const char *abs, char *user, size_t len) {
    record r;
    h5ark_error ignore;
    pthread_mutex_lock(&lock);
    int rc = record_read(&r, &ignore);
    pthread_mutex_unlock(&lock);
    if (len) user[0] = '\0';
    if (rc) return 0;
    int found = 0;
    for (size_t i = 0; i < r.n && !found; i++)
        if (strcmp(files_display(abs), r.path[i]) == 0)
            found = snprintf(user, len, "%s", r.user[i]) >= 0;
    record_free(&r);
    return found;
}

/* Bytes of the files `user` owns, among `abs` (NULL: all). */
static uint64_t owned_bytes(const char *user, const char *const *abs, size_t n) {
    record r;
    h5ark_error ignore;
    pthread_mutex_lock(&lock);
    int rc = record_read(&r, &ignore);
    pthread_mutex_unlock(&lock);
    if (rc) return 0;
    uint64_t total = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (strcmp(r.user[i], user) != 0) continue;
        bool named = !abs;
        for (size_t k = 0; abs && k < n && !named; k++)
            named = strcmp(files_display(abs[k]), r.path[i]) == 0;
        char path[PATH_MAX];
        struct stat st;
        if (named && in_data_dir(r.path[i], path) && lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            total += (uint64_t)st.st_size;
    }
    record_free(&r);
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
