/* The daemon's own checkpoints (checkpoint.h): the restore at start and the timer. The
 * restore and the periodic checkpoints are requests the daemon makes to itself
 * (dispatch.h's from_daemon), so they run as a client's would: on every rank, listed in
 * `status` with their progress, logged. Above the dispatch, as main.c, which starts it. */
#include "checkpoint.h"

#include "commands/checkpoint_format.h"
#include "config.h"
#include "dispatch.h"
#include "log.h"
#include "registry.h"
#include "sysio.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool stopping, thread_running;
static pthread_t thread;
static const char *folder; /* checkpoint_dir() */

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
    char **list = checkpoint_list_complete(folder, &n);
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
        checkpoint_restoring(true, list[i]);
        h5ark_value *args = h5ark_value_map();
        h5ark_value_set(args, "id", h5ark_value_str(list[i]));
        h5ark_value *r = run_request("checkpoint_restore", args, &err);
        if (!r && (err.code == H5ARK_RESOURCE_LIMIT || err.code == H5ARK_BUSY ||
                   err.code == H5ARK_INTERNAL)) {
            /* whole, but not restorable here (too little memory): kept, and kept whole */
            log_error("cannot restore checkpoint %s: %s; it is left as it is, and no checkpoint "
                      "is removed by --checkpoint-keep until the daemon restarts",
                      path, err.message);
            checkpoint_keep_all();
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
    if (!done && !checkpoint_kept_all()) {
        log_notice("no checkpoint to restore in %s", folder);
        checkpoint_seen_now();
    }
    checkpoint_list_free(list, n);
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
    checkpoint_restoring(false, NULL);
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
        pthread_mutex_unlock(&lock);
        bool changed = checkpoint_changed();
        if (changed) periodic();
        pthread_mutex_lock(&lock);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

void checkpoint_start(void) {
    if (!(folder = checkpoint_dir())) return;
    /* what a killed checkpoint left: nothing of it is complete */
    DIR *d = opendir(folder);
    struct dirent *e;
    size_t stray = 0;
    char p[PATH_MAX];
    while (d && (e = readdir(d)))
        if (checkpoint_is_temporary(e->d_name) &&
            snprintf(p, sizeof p, "%s/%s", folder, e->d_name) < (int)sizeof p &&
            checkpoint_remove_folder(p) == 0)
            stray++;
    if (d) closedir(d);
    if (stray) log_warn("removed %zu unfinished checkpoint(s) from %s", stray, folder);
    checkpoint_restoring(true, NULL);
    if (pthread_create(&thread, NULL, checkpoint_thread, NULL) != 0) {
        log_warn("cannot start the checkpoint thread: restoring here before serving");
        checkpoint_thread(NULL);
        return;
    }
    thread_running = true;
}

void checkpoint_stop(bool write) {
    if (!folder) return;
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
