/* Counters, the Prometheus text endpoint and the request log lines (see metrics.h). */
#include "metrics.h"

#include "config.h"
#include "h5ark_version.h"
#include "front/http.h"
#include "locales.h"
#include "log.h"
#include "dist/ranks.h"
#include "registry.h"
#include "shardcache.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Upper bounds of the latency buckets, from a ping on the router thread (about 10 us) to
 * the longest readhdf and tohdf. The label text is written once here so that every scrape
 * prints the same `le` values. */
static const struct {
    uint64_t ns;
    const char *le;
} bounds[] = {
    {10000, "0.00001"},  {25000, "0.000025"},   {50000, "0.00005"},  {100000, "0.0001"},
    {250000, "0.00025"}, {500000, "0.0005"},    {1000000, "0.001"},  {2500000, "0.0025"},
    {5000000, "0.005"},  {10000000, "0.01"},    {25000000, "0.025"}, {50000000, "0.05"},
    {100000000, "0.1"},  {250000000, "0.25"},   {500000000, "0.5"},  {1000000000, "1"},
    {2500000000, "2.5"}, {5000000000, "5"},     {10000000000, "10"}, {30000000000, "30"},
    {60000000000, "60"}, {120000000000, "120"},
};
#define NBOUNDS (sizeof bounds / sizeof bounds[0])

/* One command's counters, on cache lines of its own: the router thread and the handler
 * threads count different commands at once. */
typedef struct {
    _Alignas(64) _Atomic uint64_t outcomes[H5ARK_CODE_COUNT];
    _Atomic uint64_t buckets[NBOUNDS + 1]; /* not cumulative; the last is above every bound */
    _Atomic uint64_t sum_ns, bytes_in, bytes_out;
} slot_counters;

/* Slots: the names metrics_start was given (the command table and the HTTP doors' routes)
 * in name order, then a name not among them, then no readable name. Only those names
 * become labels, so clients cannot add series. */
#define MAX_SLOTS (METRICS_NAMES + 2)
static const char *slot_names[MAX_SLOTS];
static size_t ncommands, nslots;
static slot_counters slots[MAX_SLOTS];
static _Atomic uint64_t files_read, files_written, probe_restarts;
static bool counting;
static http_server *server;
static time_t started;

uint64_t metrics_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void slots_init(const char *const *names) {
    if (nslots) return;
    for (size_t i = 0; names && names[i] && ncommands < METRICS_NAMES; i++)
        slot_names[ncommands++] = names[i];
    qsort(slot_names, ncommands, sizeof *slot_names, by_name);
    slot_names[ncommands] = "other";
    slot_names[ncommands + 1] = "none";
    nslots = ncommands + 2;
}

static size_t slot_of(const char *cmd) {
    if (!cmd) return ncommands + 1;
    size_t lo = 0, hi = ncommands;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(cmd, slot_names[mid]);
        if (c == 0) return mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return ncommands;
}

/* A logfmt value: bare when it is made of safe characters, else quoted with \" \\ and
 * \xNN for control and non-ASCII bytes (so a line stays one line of ASCII). At most 64
 * bytes of the value are shown. */
static void logfmt_value(const char *s, size_t len, char *out, size_t outlen) {
    bool bare = len > 0;
    for (size_t i = 0; i < len && bare; i++) {
        unsigned char c = (unsigned char)s[i];
        bare = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("_.:/+-", c));
    }
    if (len > 64) len = 64, bare = false;
    size_t n = 0;
    if (!bare) out[n++] = '"';
    for (size_t i = 0; i < len && n + 6 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(out + n, outlen - n, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            n += (size_t)snprintf(out + n, outlen - n, "\\x%02x", c);
        else
            out[n++] = (char)c;
    }
    if (!bare) out[n++] = '"';
    out[n] = '\0';
}

/* Per-user request counts: names given slots in order, then "other"; a slot's name is
 * written before the count of slots that shows it. */
static char user_names[METRICS_USERS][65];
static _Atomic uint64_t user_requests[METRICS_USERS + 1];
static atomic_int nusers;
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;

int metrics_user_slot(const char *user) {
    pthread_mutex_lock(&users_lock);
    int n = atomic_load(&nusers), slot = 0;
    while (slot < n && strcmp(user_names[slot], user) != 0)
        slot++;
    if (slot == n && n < METRICS_USERS) {
        snprintf(user_names[n], sizeof user_names[n], "%s", user);
        atomic_store(&nusers, n + 1);
    }
    pthread_mutex_unlock(&users_lock);
    return slot; /* METRICS_USERS: "other" */
}

void metrics_user_request(int slot) {
    if (slot >= 0 && slot <= METRICS_USERS)
        atomic_fetch_add_explicit(&user_requests[slot], 1, memory_order_relaxed);
}

void metrics_request_done(const metrics_answer *a) {
    bool logging = log_threshold >= LOG_INFO;
    if (!counting && !logging) return;
    uint64_t now = metrics_clock();
    uint64_t ns = a->arrived_ns && now > a->arrived_ns ? now - a->arrived_ns : 0;
    const h5ark_value *h = a->header && a->header->kind == H5ARK_MAP ? a->header : NULL;
    const h5ark_value *cmd = h ? h5ark_value_get(h, "cmd") : NULL;
    if (cmd && cmd->kind != H5ARK_STR) cmd = NULL;
    h5ark_code outcome = (unsigned)a->outcome < H5ARK_CODE_COUNT ? a->outcome : H5ARK_INTERNAL;
    uint64_t bytes_out = a->bytes_out;
    const char *user = a->user;

    if (counting) {
        slot_counters *c = &slots[slot_of(cmd ? cmd->as.s.ptr : NULL)];
        size_t b = 0;
        while (b < NBOUNDS && ns > bounds[b].ns)
            b++;
        atomic_fetch_add_explicit(&c->outcomes[outcome], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->buckets[b], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->sum_ns, ns, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->bytes_in, a->bytes_in, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->bytes_out, bytes_out, memory_order_relaxed);
    }
    if (logging) {
        char name[300] = "-", id[24] = "-";
        if (cmd) logfmt_value(cmd->as.s.ptr, cmd->as.s.len, name, sizeof name);
        uint64_t u;
        if (h && h5ark_value_to_uint64(h5ark_value_get(h, "id"), &u))
            snprintf(id, sizeof id, "%llu", (unsigned long long)u);
        /* user names are [A-Za-z0-9_.-]: a bare logfmt value */
        log_info("event=request cmd=%s id=%s ms=%.3f bytes_in=%llu bytes_out=%llu outcome=%s%s%s",
                 name, id, (double)ns / 1e6, (unsigned long long)a->bytes_in,
                 (unsigned long long)bytes_out, h5ark_code_name(outcome), user ? " user=" : "",
                 user ? user : "");
    }
}

void metrics_files_read(uint64_t n) {
    atomic_fetch_add_explicit(&files_read, n, memory_order_relaxed);
}
void metrics_files_written(uint64_t n) {
    atomic_fetch_add_explicit(&files_written, n, memory_order_relaxed);
}
void metrics_probe_restarted(void) {
    atomic_fetch_add_explicit(&probe_restarts, 1, memory_order_relaxed);
}

/* ---- the exposition (Prometheus text format 0.0.4) ---- */

typedef struct {
    char *p;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    for (int pass = 0; pass < 2 && !t->failed; pass++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
        } else if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        } else {
            size_t cap = (t->cap ? t->cap : 8192) * 2 + (size_t)n;
            char *p = realloc(t->p, cap);
            if (!p) t->failed = true;
            t->p = p ? p : t->p;
            t->cap = p ? cap : t->cap;
        }
    }
}

static void family(text *t, const char *name, const char *type, const char *help) {
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static uint64_t load(_Atomic uint64_t *v) {
    return atomic_load_explicit(v, memory_order_relaxed);
}

static void gauge(text *t, const char *name, const char *help, uint64_t value) {
    family(t, name, "gauge", help);
    put(t, "%s %llu\n", name, (unsigned long long)value);
}

static void counter(text *t, const char *name, const char *help, uint64_t value) {
    family(t, name, "counter", help);
    put(t, "%s %llu\n", name, (unsigned long long)value);
}

static bool slot_used(size_t s) {
    for (size_t k = 0; k < H5ARK_CODE_COUNT; k++)
        if (load(&slots[s].outcomes[k])) return true;
    return false;
}

static void exposition(text *t) {
    family(t, "h5ark_build_info", "gauge", "The daemon's version, as a label; the value is 1.");
    put(t, "h5ark_build_info{version=\"%s\"} 1\n", H5ARK_VERSION_STRING);
    gauge(t, "h5ark_start_time_seconds", "When the daemon started, in seconds since the epoch.",
          (uint64_t)started);
    gauge(t, "h5ark_ranks", "Processes serving this daemon's objects.", (uint64_t)ranks_count());
    gauge(t, "h5ark_locales",
          "Locale threads of all ranks together, over which arrays are sharded.",
          (uint64_t)locales_count());

    family(t, "h5ark_requests_total", "counter",
           "Requests answered, by command and outcome (ok or the reply's error code).");
    for (size_t s = 0; s < nslots; s++)
        for (size_t k = 0; k < H5ARK_CODE_COUNT; k++) {
            uint64_t n = load(&slots[s].outcomes[k]);
            if (n)
                put(t, "h5ark_requests_total{cmd=\"%s\",outcome=\"%s\"} %llu\n", slot_names[s],
                    h5ark_code_name((h5ark_code)k), (unsigned long long)n);
        }

    family(t, "h5ark_request_duration_seconds", "histogram",
           "Time from a request's arrival to its reply being ready to send, by command.");
    for (size_t s = 0; s < nslots; s++) {
        if (!slot_used(s)) continue;
        /* the count is the buckets' total, so that it always equals the +Inf bucket */
        uint64_t cumulative = 0;
        for (size_t b = 0; b <= NBOUNDS; b++) {
            cumulative += load(&slots[s].buckets[b]);
            put(t, "h5ark_request_duration_seconds_bucket{cmd=\"%s\",le=\"%s\"} %llu\n",
                slot_names[s], b < NBOUNDS ? bounds[b].le : "+Inf", (unsigned long long)cumulative);
        }
        uint64_t sum = load(&slots[s].sum_ns);
        put(t, "h5ark_request_duration_seconds_sum{cmd=\"%s\"} %llu.%09llu\n", slot_names[s],
            (unsigned long long)(sum / 1000000000u), (unsigned long long)(sum % 1000000000u));
        put(t, "h5ark_request_duration_seconds_count{cmd=\"%s\"} %llu\n", slot_names[s],
            (unsigned long long)cumulative);
    }

    static const struct {
        const char *name, *help;
        size_t offset;
    } bytes[] = {
        {"h5ark_request_bytes_total",
         "Bytes received in requests (header and payload), by command.",
         offsetof(slot_counters, bytes_in)},
        {"h5ark_reply_bytes_total", "Bytes sent in replies (header and payload), by command.",
         offsetof(slot_counters, bytes_out)},
    };
    for (size_t i = 0; i < 2; i++) {
        family(t, bytes[i].name, "counter", bytes[i].help);
        for (size_t s = 0; s < nslots; s++)
            if (slot_used(s))
                put(t, "%s{cmd=\"%s\"} %llu\n", bytes[i].name, slot_names[s],
                    (unsigned long long)load(
                        (_Atomic uint64_t *)((char *)&slots[s] + bytes[i].offset)));
    }

    family(t, "h5ark_user_requests_total", "counter",
           "Requests by user (the first 100 user names; every later one as \"other\").");
    int users = atomic_load(&nusers);
    for (int u = 0; u <= users; u++) {
        uint64_t n = load(&user_requests[u < users ? u : METRICS_USERS]);
        if (n)
            put(t, "h5ark_user_requests_total{user=\"%s\"} %llu\n",
                u < users ? user_names[u] : "other", (unsigned long long)n);
    }

    gauge(t, "h5ark_memory_used_bytes",
          "Memory of live objects and work in progress, counted against --max-memory.",
          registry_memory_used());
    gauge(t, "h5ark_memory_cached_bytes",
          "Freed array memory kept for new arrays (the shard cache); not in memory_used.",
          shardcache_bytes());
    gauge(t, "h5ark_memory_limit_bytes", "The memory allowed for objects (--max-memory).",
          registry_memory_limit());
    gauge(t, "h5ark_shard_cache_limit_bytes", "The most the shard cache may keep (--shard-cache).",
          shardcache_limit());
    gauge(t, "h5ark_objects", "Objects published under a name (a composite counts once).",
          (uint64_t)registry_count());
    counter(t, "h5ark_files_read_total", "Files whose objects a readhdf read.", load(&files_read));
    counter(t, "h5ark_files_written_total",
            "Files written: each file a tohdf, repack, writepart or complete put in place.",
            load(&files_written));
    counter(t, "h5ark_probe_restarts_total",
            "File probe processes replaced after dying or hanging on a file.",
            load(&probe_restarts));
}

static void serve(void *arg, const http_request *req, http_response *out) {
    (void)arg;
    static const char not_found[] = "not found: this endpoint serves GET /metrics\n";
    static const char not_allowed[] = "method not allowed: /metrics takes GET (or HEAD)\n";
    const char *msg = NULL;
    if (strcmp(req->path, "/metrics") != 0) {
        out->status = 404;
        msg = not_found;
    } else if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        out->status = 405;
        out->allow = "GET, HEAD";
        msg = not_allowed;
    }
    if (msg) {
        out->len = strlen(msg);
        out->body = malloc(out->len);
        if (out->body) memcpy(out->body, msg, out->len);
        return;
    }
    text t = {0};
    exposition(&t);
    if (t.failed) {
        free(t.p);
        return; /* 500 */
    }
    out->status = 200;
    out->content_type = "text/plain; version=0.0.4; charset=utf-8";
    out->body = t.p;
    out->len = t.len;
}

int metrics_start(const char *address, const char *const *names, h5ark_error *err) {
    slots_init(names);
    started = time(NULL);
    if (!address) return 0;
    if (http_start(address, serve, NULL, &server, err)) return -1;
    counting = true;
    return 0;
}

void metrics_stop(void) {
    http_stop(&server);
    counting = false;
}

const char *metrics_address(void) {
    return server ? http_address(server) : NULL;
}
