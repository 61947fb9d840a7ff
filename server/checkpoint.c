/* The daemon's side of checkpoints (checkpoint.h): the folder, the restore at start, the
 * timer and the last checkpoint getconfig reports. The restore and the periodic
 * checkpoints are requests the daemon makes to itself (dispatch.h's from_daemon), so they
 * run as a client's would: on every rank, listed in `status` with their progress, logged. */
#include "checkpoint.h"

#include "commands/checkpoint_format.h"
#include "config.h"
#include "dispatch.h"
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
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool stopping, thread_running;
static pthread_t thread;
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

static bool is_temporary(const char *name) {
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
static char **list_complete(const char *dir, size_t *count) {
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

static void list_free(char **list, size_t n) {
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
    char **list = list_complete(dir, &n);
    char p[PATH_MAX];
    for (size_t i = (size_t)keep; i < n; i++)
        if (snprintf(p, sizeof p, "%s/%s", dir, list[i]) < (int)sizeof p &&
            checkpoint_remove_folder(p) != 0)
            log_warn("cannot remove the old checkpoint %s: %s", p, strerror(errno));
    list_free(list, n);
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

/* ---- the daemon's own requests ---- */

/* Run `cmd` with args (taken) as a request of the daemon's; its result (NULL on error). */
static h5ark_value *run_request(const char *cmd, h5ark_value *args, h5ark_error *err) {
    h5ark_value *h = h5ark_value_map();
    h5ark_value_set(h, "v", h5ark_value_uint(H5ARK_PROTOCOL_VERSION));
    h5ark_value_set(h, "cmd", h5ark_value_str(cmd));
    if (h5ark_value_set(h, "args", args ? args : h5ark_value_map()) != 0 ||
        h5ark_value_len(h) != 3) {
        h5ark_value_destroy(&h);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    request req = {.header = h, .from_daemon = true, .peer = "h5arkd"};
    h5ark_payload_init(&req.payload);
    reply out;
    dispatch_handle(&req, &out);
    const char *why = NULL;
    h5ark_value *r = h5ark_value_decode(out.header, out.header_len, &why), *result = NULL;
    const h5ark_value *ok = h5ark_value_get(r, "ok");
    if (ok && ok->kind == H5ARK_BOOL && ok->as.b) {
        result = h5ark_value_copy(h5ark_value_get(r, "result"));
    } else {
        const h5ark_value *e = h5ark_value_get(r, "error");
        const h5ark_value *code = h5ark_value_get(e, "code"), *msg = h5ark_value_get(e, "message");
        h5ark_code c = H5ARK_INTERNAL;
        if (code && code->kind == H5ARK_STR) c = h5ark_code_from_name(code->as.s.ptr);
        h5ark_fail(err, c, "%s", msg && msg->kind == H5ARK_STR ? msg->as.s.ptr : "failed");
    }
    h5ark_value_destroy(&r);
    reply_free(&out);
    h5ark_value_destroy(&h);
    return result;
}

static uint64_t result_uint(const h5ark_value *r, const char *key) {
    uint64_t u = 0;
    h5ark_value_to_uint64(h5ark_value_get(r, key), &u);
    return u;
}

static double result_float(const h5ark_value *r, const char *key) {
    double d = 0;
    h5ark_value_to_double(h5ark_value_get(r, key), &d);
    return d;
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

/* A checkpoint that cannot be restored: renamed aside, never counted again. */
static void set_aside(const char *id, const char *why) {
    char from[PATH_MAX], to[PATH_MAX + 16];
    if (snprintf(from, sizeof from, "%s/%s", folder, id) >= (int)sizeof from) return;
    snprintf(to, sizeof to, "%s.damaged", from);
    log_warn("checkpoint %s is damaged and is not restored (%s): renamed %s.damaged; "
             "restoring the one before",
             from, why, id);
    if (sysio.rename(from, to) != 0)
        log_warn("cannot rename %s to %s: %s", from, to, strerror(errno));
}

static void restore(void) {
    size_t n;
    char **list = list_complete(folder, &n);
    bool done = false;
    for (size_t i = 0; i < n && !done; i++) {
        char path[PATH_MAX];
        h5ark_error err = {0};
        json_t *m = NULL;
        if (snprintf(path, sizeof path, "%s/%s", folder, list[i]) >= (int)sizeof path) continue;
        if (checkpoint_read_manifest(path, &m, &err) != 0) {
            set_aside(list[i], err.message);
            continue;
        }
        json_decref(m);
        pthread_mutex_lock(&lock);
        snprintf(restoring_id, sizeof restoring_id, "%s", list[i]);
        pthread_mutex_unlock(&lock);
        h5ark_value *args = h5ark_value_map();
        h5ark_value_set(args, "id", h5ark_value_str(list[i]));
        h5ark_value *r = run_request("checkpoint_restore", args, &err);
        if (!r && (err.code == H5ARK_RESOURCE_LIMIT || err.code == H5ARK_BUSY ||
                   err.code == H5ARK_INTERNAL)) {
            /* whole, but not restorable here (too little memory): kept, and kept whole */
            log_error("cannot restore checkpoint %s: %s; it is left as it is, and no checkpoint "
                      "is removed by --checkpoint-keep until the daemon restarts",
                      path, err.message);
            pthread_mutex_lock(&lock);
            keep_all = true;
            seen_changes = registry_changes();
            pthread_mutex_unlock(&lock);
            break;
        }
        if (!r) {
            set_aside(list[i], err.message);
            continue;
        }
        uint64_t objects = result_uint(r, "objects");
        /* the time it was written, from its manifest */
        double written = 0;
        if (checkpoint_read_manifest(path, &m, &err) == 0) {
            written = json_number_value(json_object_get(m, "time"));
            json_decref(m);
        }
        checkpoint_note(list[i], written, objects, registry_changes());
        log_notice("restored checkpoint %s: %llu objects, %llu bytes in %.3f s", path,
                   (unsigned long long)objects, (unsigned long long)result_uint(r, "bytes"),
                   result_float(r, "seconds"));
        h5ark_value_destroy(&r);
        done = true;
    }
    if (!done && !keep_all) {
        log_notice("no checkpoint to restore in %s", folder);
        pthread_mutex_lock(&lock);
        seen_changes = registry_changes();
        pthread_mutex_unlock(&lock);
    }
    list_free(list, n);
}

static void periodic(void) {
    h5ark_error err = {0};
    h5ark_value *r = run_request("checkpoint", NULL, &err);
    if (!r) log_warn("periodic checkpoint failed: %s", err.message);
    h5ark_value_destroy(&r);
}

/* Tests only (with H5ARK_FAULTS=1): every pread, pwrite and fsync of the restore sleeps
 * this many milliseconds, so that a test sees the daemon while a restore runs. */
#define RESTORE_DELAY_ENV "H5ARK_FAULTS_RESTORE_DELAY_MS"

static void *checkpoint_thread(void *arg) {
    (void)arg;
    const char *slow = sysio_faults_on() ? getenv(RESTORE_DELAY_ENV) : NULL;
    if (slow) sysio_faults_delay((uint32_t)atoi(slow));
    restore();
    if (slow) sysio_faults_delay(0);
    atomic_store(&restoring, false);
    if (config.checkpoint_interval <= 0) return NULL;
    pthread_mutex_lock(&lock);
    while (!stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double s = config.checkpoint_interval;
        until.tv_sec += (time_t)s;
        until.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        while (!stopping && pthread_cond_timedwait(&wake, &lock, &until) != ETIMEDOUT) {}
        if (stopping) break;
        bool changed = registry_changes() != seen_changes;
        pthread_mutex_unlock(&lock);
        if (changed) periodic();
        pthread_mutex_lock(&lock);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

void checkpoint_start(void) {
    if (!folder[0]) return;
    /* what a killed checkpoint left: nothing of it is complete */
    DIR *d = opendir(folder);
    struct dirent *e;
    size_t stray = 0;
    char p[PATH_MAX];
    while (d && (e = readdir(d)))
        if (is_temporary(e->d_name) &&
            snprintf(p, sizeof p, "%s/%s", folder, e->d_name) < (int)sizeof p &&
            checkpoint_remove_folder(p) == 0)
            stray++;
    if (d) closedir(d);
    if (stray) log_warn("removed %zu unfinished checkpoint(s) from %s", stray, folder);
    atomic_store(&restoring, true);
    if (pthread_create(&thread, NULL, checkpoint_thread, NULL) != 0) {
        log_warn("cannot start the checkpoint thread: restoring here before serving");
        checkpoint_thread(NULL);
        return;
    }
    thread_running = true;
}

void checkpoint_stop(bool write) {
    if (!folder[0]) return;
    pthread_mutex_lock(&lock);
    stopping = true;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    if (thread_running) pthread_join(thread, NULL);
    thread_running = false;
    if (!write || !config.checkpoint_on_exit) return;
    h5ark_error err = {0};
    h5ark_value *r = run_request("checkpoint", NULL, &err);
    if (!r) log_warn("the checkpoint at exit failed: %s", err.message);
    h5ark_value_destroy(&r);
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
