/* The daemon's side of checkpoints (checkpoint.h): the folder, its listing and pruning,
 * whether a restore runs, and the last checkpoint getconfig reports. The restore and the
 * timer, which make requests, are checkpoint_service.c's, above the dispatch. */
#include "checkpoint.h"

#include "config.h"
#include "log.h"
#include "registry.h"
#include "sysio.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char folder[PATH_MAX]; /* --checkpoint-dir, absolute; "" when off */
static atomic_bool restoring;
static char restoring_id[64];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool known;
    char id[64];
    double time;
    uint64_t objects;
} last;
/* registry_changes() when the objects were last checkpointed or restored */
static uint64_t seen_changes;
/* A whole checkpoint could not be restored: none is removed until the next start. */
static bool keep_all;

const char *checkpoint_dir(void) {
    return folder[0] ? folder : NULL;
}

/* ---- the folder ---- */

static int make_dirs(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int remove_once(const char *path) {
    DIR *d = opendir(path);
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    char p[PATH_MAX];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            snprintf(p, sizeof p, "%s/%s", path, e->d_name) < (int)sizeof p)
            sysio.unlink(p);
    closedir(d);
    return rmdir(path);
}

/* One more try when a call fails (a transient error), as write_remove_temp does. */
int checkpoint_remove_folder(const char *path) {
    return remove_once(path) == 0 ? 0 : remove_once(path);
}

int checkpoint_sync_folder(const char *path, h5ark_error *err) {
    int fd = sysio.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0 || sysio.fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) sysio.close(fd);
        return h5ark_fail(err, H5ARK_IO_ERROR, "checkpoint: cannot flush the folder '%s': %s", path,
                          strerror(e));
    }
    sysio.close(fd);
    return 0;
}

bool checkpoint_is_temporary(const char *name) {
    return strncmp(name, ".tmp-", 5) == 0;
}

static bool is_complete(const char *dir, const char *name) {
    size_t n = strlen(name);
    if (name[0] == '.' || (n > 8 && strcmp(name + n - 8, ".damaged") == 0)) return false;
    char p[PATH_MAX];
    struct stat st;
    return snprintf(p, sizeof p, "%s/%s", dir, name) < (int)sizeof p && stat(p, &st) == 0 &&
           S_ISDIR(st.st_mode);
}

static int newest_first(const void *a, const void *b) {
    return strcmp(*(char *const *)b, *(char *const *)a);
}

/* The complete checkpoints of dir, newest first (free each and the array). */
char **checkpoint_list_complete(const char *dir, size_t *count) {
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **list = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_complete(dir, e->d_name)) continue;
        if (*count == cap) {
            char **grown = realloc(list, (cap = cap ? 2 * cap : 8) * sizeof *list);
            if (!grown) break;
            list = grown;
        }
        if (!(list[*count] = strdup(e->d_name))) break;
        ++*count;
    }
    closedir(d);
    if (*count) qsort(list, *count, sizeof *list, newest_first);
    return list;
}

void checkpoint_list_free(char **list, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

/* A name checkpoint_new_id made ("YYYYMMDDTHHMMSS.mmmZ", maybe with a suffix after): other
 * names in a folder of Arkouda's checkpoints are the client's. */
static bool is_id(const char *name) {
    static const char shape[] = "ddddddddTdddddd.dddZ";
    for (size_t i = 0; i < sizeof shape - 1; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)name[i]) : name[i] != shape[i]) return false;
    return true;
}

void checkpoint_new_id(const char *dir, char id[32]) {
    /* later than every name there, damaged ones included, whatever the clock did */
    char newest[256] = "";
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (is_id(e->d_name) && strcmp(e->d_name, newest) > 0)
            snprintf(newest, sizeof newest, "%s", e->d_name);
    if (d) closedir(d);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    do {
        time_t s = (time_t)(ms / 1000);
        struct tm tm;
        gmtime_r(&s, &tm);
        char when[24];
        strftime(when, sizeof when, "%Y%m%dT%H%M%S", &tm);
        snprintf(id, 32, "%s.%03dZ", when, (int)(ms % 1000));
        ms++;
    } while (strcmp(id, newest) <= 0);
}

void checkpoint_prune(const char *dir, int keep) {
    pthread_mutex_lock(&lock);
    bool hold = keep_all && strcmp(dir, folder) == 0;
    pthread_mutex_unlock(&lock);
    if (hold) return;
    size_t n;
    char **list = checkpoint_list_complete(dir, &n);
    char p[PATH_MAX];
    for (size_t i = (size_t)keep; i < n; i++)
        if (snprintf(p, sizeof p, "%s/%s", dir, list[i]) < (int)sizeof p &&
            checkpoint_remove_folder(p) != 0)
            log_warn("cannot remove the old checkpoint %s: %s", p, strerror(errno));
    checkpoint_list_free(list, n);
}

int checkpoint_configure(void) {
    if (!config.checkpoint_dir) return 0;
    if (make_dirs(config.checkpoint_dir) != 0 || !realpath(config.checkpoint_dir, folder)) {
        fprintf(stderr, "h5arkd: cannot make the checkpoint folder %s: %s\n", config.checkpoint_dir,
                strerror(errno));
        folder[0] = '\0';
        return -1;
    }
    if (access(folder, W_OK | X_OK) != 0) {
        fprintf(stderr, "h5arkd: cannot write to the checkpoint folder %s: %s\n", folder,
                strerror(errno));
        folder[0] = '\0';
        return -1;
    }
    config.checkpoint_dir = folder;
    return 0;
}

void checkpoint_note(const char *id, double time, uint64_t objects, uint64_t changes) {
    pthread_mutex_lock(&lock);
    last.known = true;
    snprintf(last.id, sizeof last.id, "%s", id);
    last.time = time;
    last.objects = objects;
    seen_changes = changes;
    pthread_mutex_unlock(&lock);
}

/* ---- for the service (checkpoint_service.c) ---- */

void checkpoint_restoring(bool on, const char *id) {
    pthread_mutex_lock(&lock);
    snprintf(restoring_id, sizeof restoring_id, "%s", id ? id : "");
    pthread_mutex_unlock(&lock);
    atomic_store(&restoring, on);
}

void checkpoint_keep_all(void) {
    pthread_mutex_lock(&lock);
    keep_all = true;
    seen_changes = registry_changes();
    pthread_mutex_unlock(&lock);
}

bool checkpoint_kept_all(void) {
    pthread_mutex_lock(&lock);
    bool k = keep_all;
    pthread_mutex_unlock(&lock);
    return k;
}

void checkpoint_seen_now(void) {
    pthread_mutex_lock(&lock);
    seen_changes = registry_changes();
    pthread_mutex_unlock(&lock);
}

bool checkpoint_changed(void) {
    pthread_mutex_lock(&lock);
    bool changed = registry_changes() != seen_changes;
    pthread_mutex_unlock(&lock);
    return changed;
}

/* ---- what requests see ---- */

int checkpoint_refuses(const char *name, h5ark_error *err) {
    if (!atomic_load(&restoring) || !name) return 0;
    if (strcmp(name, "ping") == 0 || strcmp(name, "getconfig") == 0 || strcmp(name, "status") == 0)
        return 0;
    char id[sizeof restoring_id];
    pthread_mutex_lock(&lock);
    snprintf(id, sizeof id, "%s", restoring_id[0] ? restoring_id : "(starting)");
    pthread_mutex_unlock(&lock);
    return h5ark_fail(err, H5ARK_BUSY,
                      "a restore of checkpoint %s is running: ask again once getconfig says "
                      "restoring false (status shows how far it is)",
                      id);
}

int checkpoint_config(h5ark_value *result) {
    h5ark_value *c = h5ark_value_nil();
    pthread_mutex_lock(&lock);
    if (last.known) {
        h5ark_value_destroy(&c);
        c = h5ark_value_map();
        h5ark_value_set(c, "id", h5ark_value_str(last.id));
        h5ark_value_set(c, "time", h5ark_value_float(last.time));
        h5ark_value_set(c, "objects", h5ark_value_uint(last.objects));
    }
    pthread_mutex_unlock(&lock);
    if (h5ark_value_set(result, "checkpoint", c) != 0) return -1;
    if (h5ark_value_set(result, "restoring", h5ark_value_bool(atomic_load(&restoring))) != 0)
        return -1;
    return h5ark_value_set(result, "checkpoint_dir",
                           folder[0] ? h5ark_value_str(folder) : h5ark_value_nil());
}
