/* The in-flight table (see inflight.h). */
#include "inflight.h"

#include "progress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A client's routing identity as text: itself when printable ASCII, else 0x and its hex.
 * ZeroMQ identities are at most 255 bytes. */
#define CLIENT_TEXT (2 + 2 * 255 + 1)

struct inflight_entry {
    _Atomic bool busy;    /* claimed by a handler thread */
    pthread_mutex_t lock; /* the fields below, against a status reading them half written */
    bool listed;
    uint64_t seq; /* the daemon's number for the request: the order they started in */
    bool has_id;
    uint64_t id;
    char cmd[32];
    char client[CLIENT_TEXT];
    char peer[64];
    double started;        /* Unix time */
    struct timespec since; /* CLOCK_MONOTONIC, for the elapsed time */
    progress_sink progress;
    progress_sink *outer; /* the thread's sink before the request, put back after */
};

static inflight_entry table[INFLIGHT_MAX];
static _Atomic uint64_t next_seq = 1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_table(void) {
    for (size_t i = 0; i < INFLIGHT_MAX; i++)
        pthread_mutex_init(&table[i].lock, NULL);
}

static void client_text(const request *req, char *out) {
    const unsigned char *p = req->identity;
    size_t n = req->identity_len < 255 ? req->identity_len : 255;
    bool printable = n > 0;
    for (size_t i = 0; i < n && printable; i++)
        printable = p[i] > 0x20 && p[i] < 0x7f;
    if (printable) {
        memcpy(out, p, n);
        out[n] = '\0';
        return;
    }
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    if (n) *o++ = '0', *o++ = 'x';
    for (size_t i = 0; i < n; i++) {
        *o++ = hex[p[i] >> 4];
        *o++ = hex[p[i] & 15];
    }
    *o = '\0';
}

inflight_entry *inflight_begin(const request *req, const char *cmd) {
    pthread_once(&once, init_table);
    inflight_entry *e = NULL;
    for (size_t i = 0; i < INFLIGHT_MAX && !e; i++) {
        bool expected = false;
        if (!atomic_load_explicit(&table[i].busy, memory_order_relaxed) &&
            atomic_compare_exchange_strong(&table[i].busy, &expected, true))
            e = &table[i];
    }
    if (!e) return NULL;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    pthread_mutex_lock(&e->lock);
    e->seq = atomic_fetch_add(&next_seq, 1);
    const h5ark_value *id = h5ark_value_get(req->header, "id");
    e->has_id = id && h5ark_value_to_uint64(id, &e->id);
    snprintf(e->cmd, sizeof e->cmd, "%s", cmd);
    client_text(req, e->client);
    snprintf(e->peer, sizeof e->peer, "%s", req->peer ? req->peer : "");
    e->started = (double)wall.tv_sec + (double)wall.tv_nsec / 1e9;
    clock_gettime(CLOCK_MONOTONIC, &e->since);
    progress_start(&e->progress, PROGRESS_NONE, 0);
    e->listed = true;
    pthread_mutex_unlock(&e->lock);
    e->outer = progress_swap(&e->progress);
    return e;
}

void inflight_end(inflight_entry *e) {
    if (!e) return;
    progress_swap(e->outer);
    pthread_mutex_lock(&e->lock);
    e->listed = false;
    pthread_mutex_unlock(&e->lock);
    atomic_store(&e->busy, false);
}

static const char *unit_name(int unit) {
    switch (unit) {
    case PROGRESS_BYTES: return "bytes";
    case PROGRESS_ROWS: return "rows";
    case PROGRESS_FILES: return "files";
    default: return NULL;
    }
}

/* One entry as a status map; NULL when out of memory. */
static h5ark_value *describe(const inflight_entry *e, const struct timespec *now) {
    h5ark_value *m = h5ark_value_map();
    int unit = atomic_load_explicit(&e->progress.unit, memory_order_acquire);
    uint64_t total = atomic_load_explicit(&e->progress.total, memory_order_relaxed);
    uint64_t done = atomic_load_explicit(&e->progress.done, memory_order_relaxed);
    /* a measure that undercounts its work must not report more than all of it */
    if (done > total) done = total;
    const char *uname = unit_name(unit);
    double elapsed =
        (double)(now->tv_sec - e->since.tv_sec) + (double)(now->tv_nsec - e->since.tv_nsec) / 1e9;
    int rc = h5ark_value_set(m, "seq", h5ark_value_uint(e->seq));
    rc |= h5ark_value_set(m, "id", e->has_id ? h5ark_value_uint(e->id) : h5ark_value_nil());
    rc |= h5ark_value_set(m, "cmd", h5ark_value_str(e->cmd));
    rc |= h5ark_value_set(m, "client", h5ark_value_str(e->client));
    rc |= h5ark_value_set(m, "peer", e->peer[0] ? h5ark_value_str(e->peer) : h5ark_value_nil());
    rc |= h5ark_value_set(m, "started", h5ark_value_float(e->started));
    rc |= h5ark_value_set(m, "elapsed", h5ark_value_float(elapsed > 0 ? elapsed : 0));
    rc |= h5ark_value_set(m, "done", uname ? h5ark_value_uint(done) : h5ark_value_nil());
    rc |= h5ark_value_set(m, "total", uname ? h5ark_value_uint(total) : h5ark_value_nil());
    rc |= h5ark_value_set(m, "unit", uname ? h5ark_value_str(uname) : h5ark_value_nil());
    if (rc) h5ark_value_destroy(&m);
    return m;
}

typedef struct {
    uint64_t seq;
    h5ark_value *desc;
} found_entry;

static int by_seq(const void *a, const void *b) {
    uint64_t x = ((const found_entry *)a)->seq, y = ((const found_entry *)b)->seq;
    return (x > y) - (x < y);
}

int inflight_list(h5ark_value *list, const char *client) {
    pthread_once(&once, init_table);
    found_entry found[INFLIGHT_MAX];
    size_t n = 0;
    int rc = 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (size_t i = 0; i < INFLIGHT_MAX && rc == 0; i++) {
        inflight_entry *e = &table[i];
        if (!atomic_load(&e->busy)) continue;
        pthread_mutex_lock(&e->lock);
        if (e->listed && (!client || strcmp(client, e->client) == 0)) {
            found[n] = (found_entry){e->seq, describe(e, &now)};
            if (found[n].desc)
                n++;
            else
                rc = -1;
        }
        pthread_mutex_unlock(&e->lock);
    }
    /* entries are reused in any order: list the requests in the order they started */
    qsort(found, n, sizeof *found, by_seq);
    for (size_t i = 0; i < n; i++)
        if (rc == 0)
            rc = h5ark_value_push(list, found[i].desc);
        else
            h5ark_value_destroy(&found[i].desc);
    return rc;
}
