/* Ranks: the job this thread belongs to, its health, the calls, and the collectives of a
 * call (see ranks.h), written once over a transport (transport.h): MPI between the
 * processes of mpirun, or memory between ranks that are threads of one test program.
 *
 * A wait tests its batch's operations, then sleeps a little longer each time nothing
 * completed, and gives up when the job is broken or (H5ARK_RANK_WAIT) waited too long. */
#include "dist/ranks.h"
#include "dist/transport.h"

#include "log.h"
#include "sysio.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ranks_job process = {.count = 1, .tag_ub = 32767, .lock = PTHREAD_MUTEX_INITIALIZER};
static int process_self;
static _Thread_local ranks_job *thread_job; /* a job of ranks as threads, else NULL */
static _Thread_local int thread_self;

static _Thread_local uint64_t call_seq;
static _Thread_local unsigned call_names; /* names made in this call */

ranks_job *ranks_process_job(void) {
    return &process;
}
void ranks_process_self(int rank) {
    process_self = rank;
}
ranks_job *ranks_job_here(void) {
    return thread_job ? thread_job : &process;
}
ranks_thread_place ranks_threads_here(void) {
    return (ranks_thread_place){thread_job, thread_self};
}
void ranks_threads_adopt(ranks_thread_place p) {
    thread_job = p.job;
    thread_self = p.job ? p.rank : 0;
}

int ranks_count(void) {
    return ranks_job_here()->count;
}
int ranks_self(void) {
    return thread_job ? thread_self : process_self;
}
int ranks_not_yet(h5ark_error *err, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return h5ark_fail(err, H5ARK_UNKNOWN_COMMAND,
                      "not available on several ranks yet: %s (this daemon runs as %d ranks)", what,
                      ranks_count());
}

/* ---- job health ---- */

static void job_vbreak(ranks_job *job, const char *fmt, va_list ap) {
    pthread_mutex_lock(&job->lock);
    if (!job->broken) {
        vsnprintf(job->why, sizeof job->why, fmt, ap);
        job->broken = true;
        log_error("%s", job->why);
    }
    pthread_mutex_unlock(&job->lock);
}

void ranks_job_break(ranks_job *job, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    job_vbreak(job, fmt, ap);
    va_end(ap);
}

void ranks_set_broken(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    job_vbreak(ranks_job_here(), fmt, ap);
    va_end(ap);
}

bool ranks_is_broken(char *why, size_t n) {
    ranks_job *job = ranks_job_here();
    if (!job->broken) return false;
    if (why && n) {
        pthread_mutex_lock(&job->lock);
        snprintf(why, n, "%s", job->why);
        pthread_mutex_unlock(&job->lock);
    }
    return true;
}

/* ---- calls ---- */

void ranks_call_enter(uint64_t seq) {
    call_seq = seq;
    call_names = 0;
}
void ranks_call_leave(void) {
    call_seq = 0;
}
uint64_t ranks_call_seq(void) {
    return call_seq;
}

/* The ranks a collective runs on: the job's within a call, this rank alone outside one. */
typedef struct {
    ranks_job *job;
    int count, self;
} group;

static group call_group(void) {
    ranks_job *job = ranks_job_here();
    if (call_seq == 0 || job->count == 1) return (group){job, 1, 0};
    return (group){job, job->count, ranks_self()};
}

/* ---- batches and their wait ---- */

static void batch_init(transport_batch *b, const group *g) {
    /* tag 0 is left for startup; a request's tag repeats only after tag_ub requests */
    *b = (transport_batch){.t = g->job->t,
                           .tag = 1 + (int)(call_seq % (uint64_t)(g->job->tag_ub - 1))};
}

void *transport_slot(transport_batch *b) {
    size_t size = b->t->op_size;
    if (!b->ops) b->ops = b->few, b->cap = (int)(sizeof b->few / size);
    if (b->n == b->cap) {
        int cap = b->cap * 2;
        unsigned char *ops = b->ops == b->few ? sysio.malloc((size_t)cap * size)
                                              : sysio.realloc(b->ops, (size_t)cap * size);
        if (!ops) {
            b->failed = true;
            return NULL;
        }
        if (b->ops == b->few) memcpy(ops, b->few, (size_t)b->n * size);
        b->ops = ops;
        b->cap = cap;
    }
    return b->ops + (size_t)b->n++ * size;
}

/* Sleeps between tests: doubling from 2 us to SLEEP_SHORT_NS while a peer is late by up to
 * SHORT_WAIT_NS (most waits: a collective's peer a few steps behind), then up to
 * SLEEP_LONG_NS (a peer busy with a long step). With 1 ms from the start, a collective
 * whose peer was a little late cost up to a millisecond more, and a readhdf makes a dozen:
 * measured on this host, a 256 MiB readhdf at 2 ranks x 3 locales against one process of 6
 * locales (20 alternating runs, twice) gave 0.78 and 0.78 of its speed with 1 ms, 0.88 and
 * 0.82 with 50 us. The long cap keeps a rank that waits long near idle. */
enum { SLEEP_SHORT_NS = 50000, SLEEP_LONG_NS = 1000000, SHORT_WAIT_NS = 5000000 };

#define WAIT_LOG_NS ((int64_t)60 * 1000000000)

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Test the operations until all are done, sleeping longer each round that completes none
 * (above); a wait that passes a minute is logged. */
static int wait_ops(transport_batch *b, const char *what, h5ark_error *err) {
    ranks_job *job = ranks_job_here();
    int self = ranks_self();
    long sleep_ns = 0;
    int64_t idle_since = 0; /* when the rounds completing nothing began */
    int64_t began = mono_ns();
    bool logged = false;
    char why[512];
    for (int remaining = b->n; remaining > 0;) {
        int done = 0;
        if (b->t->test(b, &done, why, sizeof why) != 0) {
            if (ranks_is_broken(why, sizeof why)) /* the cause, rather than what followed */
                return h5ark_fail(err, H5ARK_IO_ERROR, "%s (while %s)", why, what);
            ranks_job_break(job, "rank %d: %s while %s", self, why, what);
            return h5ark_fail(err, H5ARK_IO_ERROR, "rank %d: %s while %s", self, why, what);
        }
        remaining -= done;
        if (remaining <= 0) break;
        if (ranks_is_broken(why, sizeof why))
            return h5ark_fail(err, H5ARK_IO_ERROR, "%s (while %s)", why, what);
        if (done > 0) {
            sleep_ns = 0;
            continue;
        }
        int64_t now = mono_ns();
        if (sleep_ns == 0) idle_since = now;
        if (!logged && now - began > WAIT_LOG_NS) {
            logged = true;
            log_warn("rank %d: request %llu has waited %lld s for another rank while %s", self,
                     (unsigned long long)call_seq, (long long)((now - began) / 1000000000), what);
        }
        if (job->wait_limit_ns > 0 && now - began > job->wait_limit_ns) {
            /* the others may wait for this rank in turn: the job ends (ranks_serve.c) */
            ranks_job_break(job,
                            "rank %d: request %llu waited %lld s (H5ARK_RANK_WAIT) for another "
                            "rank while %s",
                            self, (unsigned long long)call_seq,
                            (long long)(job->wait_limit_ns / 1000000000), what);
            ranks_is_broken(why, sizeof why);
            return h5ark_fail(err, H5ARK_IO_ERROR, "%s", why);
        }
        long cap = now - idle_since < SHORT_WAIT_NS ? SLEEP_SHORT_NS : SLEEP_LONG_NS;
        sleep_ns = sleep_ns == 0 ? 2000 : (sleep_ns * 2 > cap ? cap : sleep_ns * 2);
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int batch_wait(transport_batch *b, const char *what, h5ark_error *err) {
    int rc;
    if (b->failed) {
        int self = ranks_self();
        ranks_set_broken("rank %d: %s could not start a transfer while %s", self, b->t->name, what);
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "rank %d: %s could not start a transfer while %s",
                        self, b->t->name, what);
        /* what was started must still finish before its buffers go */
        wait_ops(b, what, NULL);
    } else {
        rc = wait_ops(b, what, err);
    }
    if (b->ops != b->few) free(b->ops);
    b->ops = NULL;
    return rc;
}

static void batch_send(transport_batch *b, int to, const void *buf, uint64_t n) {
    h5ark_span s = {buf, n};
    b->t->send(b, to, &s, 1);
}

/* ---- collectives: with one rank they are local; with several, messages on the call ---- */

static void combine(uint64_t *acc, const uint64_t *v, size_t n, ranks_op op) {
    for (size_t i = 0; i < n; i++)
        switch (op) {
        case RANKS_SUM: acc[i] += v[i]; break;
        case RANKS_MIN: acc[i] = v[i] < acc[i] ? v[i] : acc[i]; break;
        case RANKS_MAX: acc[i] = v[i] > acc[i] ? v[i] : acc[i]; break;
        }
}

int ranks_gatherv(const h5ark_span *spans, size_t nspans, void *recv, const uint64_t *counts,
                  h5ark_error *err) {
    group g = call_group();
    if (g.self == 0) { /* rank 0's own part: a local copy */
        char *out = recv;
        for (size_t i = 0; i < nspans; i++) {
            if (spans[i].len) memmove(out, spans[i].ptr, spans[i].len);
            out += spans[i].len;
        }
    }
    if (g.count == 1) return 0;
    transport_batch b;
    batch_init(&b, &g);
    if (g.self == 0) {
        uint64_t off = counts[0];
        for (int r = 1; r < g.count; r++) {
            b.t->recv(&b, r, (char *)recv + off, counts[r]);
            off += counts[r];
        }
    } else {
        b.t->send(&b, 0, spans, nspans);
    }
    return batch_wait(&b, "gathering to rank 0", err);
}

int ranks_bcast(int root, void *buf, uint64_t n, h5ark_error *err) {
    group g = call_group();
    if (g.count == 1) return 0;
    transport_batch b;
    batch_init(&b, &g);
    if (g.self == root) {
        for (int r = 0; r < g.count; r++)
            if (r != root) batch_send(&b, r, buf, n);
    } else {
        b.t->recv(&b, root, buf, n);
    }
    return batch_wait(&b, "broadcasting", err);
}

int ranks_allreduce_u64(uint64_t *v, size_t n, ranks_op op, h5ark_error *err) {
    group g = call_group();
    if (g.count == 1 || n == 0) return 0;
    uint64_t *all = g.self == 0 ? malloc((size_t)g.count * n * sizeof *all) : NULL;
    uint64_t *counts = g.self == 0 ? calloc((size_t)g.count, sizeof *counts) : NULL;
    if (g.self == 0 && (!all || !counts)) {
        /* every rank must still take part: send nothing useful, report the failure */
        free(all);
        free(counts);
        ranks_set_broken("rank 0: out of memory in a reduction");
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (int r = 0; counts && r < g.count; r++)
        counts[r] = n * sizeof *v;
    h5ark_span mine = {v, n * sizeof *v};
    int rc = ranks_gatherv(&mine, 1, all, counts, err);
    if (rc == 0 && g.self == 0) {
        memcpy(v, all, n * sizeof *v);
        for (int r = 1; r < g.count; r++)
            combine(v, all + (size_t)r * n, n, op);
    }
    free(all);
    free(counts);
    if (rc == 0) rc = ranks_bcast(0, v, n * sizeof *v, err);
    return rc;
}

int ranks_agree(int rc, h5ark_error *err) {
    group g = call_group();
    if (g.count == 1) return rc;
    /* the lowest failing rank, or g.count when none failed */
    uint64_t first = rc != 0 ? (uint64_t)g.self : (uint64_t)g.count;
    h5ark_error mine = rc != 0 && err ? *err : (h5ark_error){0};
    if (ranks_allreduce_u64(&first, 1, RANKS_MIN, err) != 0) return -1;
    if (first == (uint64_t)g.count) return 0;
    h5ark_error theirs = mine;
    if (ranks_bcast((int)first, &theirs, sizeof theirs, err) != 0) return -1;
    if (err) *err = theirs;
    if (err && err->code == H5ARK_OK) h5ark_fail(err, H5ARK_INTERNAL, "rank %d failed", (int)first);
    /* memory is per rank: say which one ran short (other errors read as with one rank) */
    if (err && err->code == H5ARK_RESOURCE_LIMIT && first != 0 &&
        strncmp(err->message, "rank ", 5) != 0) {
        char prefix[32];
        size_t np = (size_t)snprintf(prefix, sizeof prefix, "rank %d: ", (int)first);
        size_t len = strnlen(err->message, sizeof err->message - 1);
        if (len + np >= sizeof err->message) len = sizeof err->message - 1 - np;
        memmove(err->message + np, err->message, len);
        memcpy(err->message, prefix, np);
        err->message[np + len] = 0;
    }
    return -1;
}

int ranks_alltoallv(const void *send, const uint64_t *send_counts, void *recv,
                    const uint64_t *recv_counts, h5ark_error *err) {
    group g = call_group();
    uint64_t soff = 0, roff = 0;
    for (int r = 0; r < g.self; r++)
        soff += send_counts[r], roff += recv_counts[r];
    if (send_counts[g.self] != recv_counts[g.self])
        return h5ark_fail(err, H5ARK_INTERNAL,
                          "all to all: rank %d sends itself %llu bytes "
                          "but expects %llu",
                          g.self, (unsigned long long)send_counts[g.self],
                          (unsigned long long)recv_counts[g.self]);
    if (send_counts[g.self])
        memcpy((char *)recv + roff, (const char *)send + soff, send_counts[g.self]);
    if (g.count == 1) return 0;
    transport_batch b;
    batch_init(&b, &g);
    soff = roff = 0;
    for (int r = 0; r < g.count; r++) {
        if (r != g.self) {
            b.t->recv(&b, r, (char *)recv + roff, recv_counts[r]);
            batch_send(&b, r, (const char *)send + soff, send_counts[r]);
        }
        soff += send_counts[r];
        roff += recv_counts[r];
    }
    return batch_wait(&b, "exchanging between ranks", err);
}

int ranks_barrier(h5ark_error *err) {
    uint64_t zero = 0;
    return ranks_allreduce_u64(&zero, 1, RANKS_SUM, err);
}

int ranks_send(int to, const h5ark_span *spans, size_t nspans, h5ark_error *err) {
    group g = call_group();
    if (g.count == 1) return h5ark_fail(err, H5ARK_INTERNAL, "ranks_send with one rank");
    transport_batch b;
    batch_init(&b, &g);
    b.t->send(&b, to, spans, nspans);
    return batch_wait(&b, "sending to a rank", err);
}

int ranks_recv(int from, void *buf, uint64_t n, h5ark_error *err) {
    return ranks_recv_many(from, 1, &buf, &n, err);
}

int ranks_recv_many(int from, int n, void *const *bufs, const uint64_t *lens, h5ark_error *err) {
    group g = call_group();
    if (g.count == 1) return h5ark_fail(err, H5ARK_INTERNAL, "ranks_recv with one rank");
    transport_batch b;
    batch_init(&b, &g);
    for (int i = 0; i < n; i++)
        b.t->recv(&b, from, bufs[i], lens[i]);
    return batch_wait(&b, "receiving from a rank", err);
}

/* The frames of p that hold [offset, offset + n), as spans (*ns of them). */
static h5ark_span *payload_spans(const h5ark_payload *p, uint64_t offset, uint64_t n, size_t *ns) {
    h5ark_span *spans = malloc((p->count ? p->count : 1) * sizeof *spans);
    *ns = 0;
    for (size_t i = 0; spans && i < p->count && n > 0; i++) {
        uint64_t fsize = zmq_msg_size(&p->frames[i]);
        if (p->starts[i] + fsize <= offset) continue;
        uint64_t skip = offset - p->starts[i];
        uint64_t take = fsize - skip < n ? fsize - skip : n;
        spans[(*ns)++] = (h5ark_span){(const char *)zmq_msg_data(&p->frames[i]) + skip, take};
        offset += take;
        n -= take;
    }
    return spans;
}

int ranks_scatter_payload(const h5ark_payload *p, int npieces, const int *to,
                          const uint64_t *offsets, const uint64_t *lens, h5ark_error *err) {
    for (int i = 0; i < npieces; i++)
        if (offsets[i] > p->total || lens[i] > p->total - offsets[i])
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "the payload is shorter than its buffers say");
    group g = call_group();
    if (g.count == 1)
        return npieces ? h5ark_fail(err, H5ARK_INTERNAL, "ranks_scatter_payload with one rank") : 0;
    transport_batch b;
    batch_init(&b, &g);
    for (int i = 0; i < npieces; i++) {
        size_t ns;
        h5ark_span *spans = payload_spans(p, offsets[i], lens[i], &ns);
        if (!spans) {
            b.failed = true;
            break;
        }
        b.t->send(&b, to[i], spans, ns);
        free(spans);
    }
    return batch_wait(&b, "sending a request's bytes to the ranks", err);
}

int ranks_bcast_value(h5ark_value **v, h5ark_error *err) {
    group g = call_group();
    if (g.count == 1) return 0;
    char *data = NULL;
    size_t len = 0;
    uint64_t n = 0;
    int rc = 0;
    if (g.self == 0) {
        if (!*v || h5ark_value_encode(*v, &data, &len))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank 0: out of memory encoding a value");
        n = len;
    }
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, &n, sizeof n, err);
    if (rc == 0 && g.self != 0 && !(data = malloc(n ? n : 1)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", g.self);
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, data, n, err);
    if (rc == 0 && g.self != 0) {
        const char *why = "";
        if (!(*v = h5ark_value_decode(data, n, &why)))
            rc = h5ark_fail(err, H5ARK_INTERNAL, "rank %d: rank 0's value %s", g.self, why);
    }
    free(data);
    return ranks_agree(rc, err);
}

/* Arkouda's form of a name, id_<7 of [0-9A-Za-z]>_<n>, so that objects made through either
 * endpoint read the same to Arkouda's client (which parses it). */
void ranks_call_name(char *out, size_t n) {
    static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    static atomic_uint_fast64_t seed, made;
    uint64_t number, x;
    if (call_seq) { /* from the call's number and the names it made before */
        number = call_seq;
        x = call_seq * 0x10000u + call_names++;
    } else { /* random, numbered in order */
        uint_fast64_t s = atomic_load(&seed), none = 0;
        if (!s) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            s = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ 1u;
            if (!atomic_compare_exchange_strong(&seed, &none, s)) s = none;
        }
        number = atomic_fetch_add(&made, 1) + 1;
        x = s ^ (number * 0x2545f4914f6cdd1du);
    }
    x += 0x9e3779b97f4a7c15u; /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
    char seven[8];
    for (int i = 0; i < 7; i++, x /= 62)
        seven[i] = alphabet[x % 62];
    seven[7] = '\0';
    snprintf(out, n, "id_%s_%llu", seven, (unsigned long long)number);
}

/* ---- SPMD helpers over the collectives ---- */

int ranks_allgather(const void *mine, void *all, uint64_t n, h5ark_error *err) {
    group g = call_group();
    char *at = (char *)all + (uint64_t)g.self * n;
    if (n && at != mine) memmove(at, mine, n);
    if (g.count == 1) return 0;
    transport_batch b;
    batch_init(&b, &g);
    for (int r = 0; r < g.count; r++)
        if (r != g.self) {
            b.t->recv(&b, r, (char *)all + (uint64_t)r * n, n);
            batch_send(&b, r, at, n);
        }
    return batch_wait(&b, "gathering from every rank", err);
}

int ranks_exscan_u64(uint64_t mine, uint64_t *before, uint64_t *total, h5ark_error *err) {
    group g = call_group();
    uint64_t few[64], *all = g.count <= 64 ? few : malloc((size_t)g.count * sizeof *all);
    if (!all) { /* the others wait for this rank's value: the job ends */
        ranks_set_broken("rank %d: out of memory in a scan", g.self);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    int rc = ranks_allgather(&mine, all, sizeof mine, err);
    uint64_t b = 0, t = 0;
    for (int r = 0; rc == 0 && r < g.count; r++) {
        if (r < g.self) b += all[r];
        t += all[r];
    }
    if (all != few) free(all);
    if (rc == 0 && before) *before = b;
    if (rc == 0 && total) *total = t;
    return rc;
}

int ranks_on_root(int (*fn)(void *ctx, h5ark_error *err), void *ctx, h5ark_error *err) {
    int rc = call_group().self == 0 ? fn(ctx, err) : 0;
    return ranks_agree(rc, err);
}

int ranks_on_root_value(h5ark_value *(*make)(void *ctx, h5ark_error *err), void *ctx,
                        h5ark_value **out, h5ark_error *err) {
    h5ark_value *v = NULL;
    int rc = call_group().self == 0 && !(v = make(ctx, err)) ? -1 : 0;
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast_value(&v, err);
    if (rc) h5ark_value_destroy(&v);
    *out = v;
    return rc;
}
