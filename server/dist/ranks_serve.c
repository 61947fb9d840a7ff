/* The control plane between ranks (see ranks_serve.h).
 *
 * Rank 0 binds a ROUTER on every interface (an ephemeral port) and each other rank
 * connects a DEALER named "r<rank>" to the address of rank 0 on a subnet it shares
 * (H5ARK_RANK0_ADDRESS overrides). Messages, first frame a type byte:
 *   rank 0 -> rank r:  'R' {seq, shared} request-header   'H' heartbeat   'S' stop
 *                      'X' reason (the job is broken: rank 0 ends it)
 *   rank r -> rank 0:  'Y' ready   'H' heartbeat   'B' stopped
 *                      'K' reason (this rank broke: a transfer it could not start or take
 *                      part in, so the other ranks would wait for it forever)
 * On rank 0 a control thread owns the ROUTER; handler threads hand it requests to forward
 * through an inproc PUSH. On the other ranks the main thread owns the DEALER and a pool of
 * worker threads runs the forwarded requests.
 *
 * A request that runs on every rank and changes anything runs alone, on every rank; those
 * that only read (`shared`: a get, the gateway's reads) run together. Otherwise two
 * requests at once could see a name in different states on different ranks (one rank
 * finding a name another request has already deleted there) and take different
 * collective steps, which waits forever. Rank 0 admits requests in arrival order
 * (`every_enter`); the other ranks start forwarded ones in the order they come, a
 * changing one once all before it have ended, the next once it has. */
#include "dist/ranks_serve.h"

#include "config.h"
#include "log.h"
#include "memory.h"
#include "dist/ranks.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define FORWARD_ENDPOINT "inproc://h5ark-ranks-forward"
#define MONITOR_ENDPOINT "inproc://h5ark-ranks-monitor"
#define MAX_IFACES       16
#define HEARTBEAT_MS     1000

typedef struct {
    uint32_t addr[MAX_IFACES], mask[MAX_IFACES]; /* IPv4, network order */
    int n;
} ifaces;

typedef struct {
    int port;
    char server_key[41]; /* Z85 public key of rank 0's ROUTER; empty: no CURVE */
} rank0_info;

static void *zctx;
static ranks_forwarded_fn run_forwarded; /* ranks_serve_start's `run` */
static int timeout_ms = 10000;           /* H5ARK_RANK_TIMEOUT, seconds */
static atomic_uint_fast64_t next_seq;

/* rank 0 */
static void *forward_push; /* handler threads -> control thread, under forward_lock */
static pthread_mutex_t forward_lock = PTHREAD_MUTEX_INITIALIZER;
/* Who runs on every rank now, from numbering to the ranks' agreement on the outcome: readers
 * together or one writer. Turns go by ticket, in arrival order, so a writer is not passed
 * over by the readers that come after it. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t turn;
    uint64_t next_ticket, admitted;
    int readers;
    bool writer;
} every = {.lock = PTHREAD_MUTEX_INITIALIZER, .turn = PTHREAD_COND_INITIALIZER};
static _Thread_local bool call_shared; /* this thread's call is a reader */
static void *control_router;
static pthread_t control_thread;
static bool control_running;
static atomic_bool stop_workers;
/* Rank 0's calls forwarded and not ended: the HTTP gateway's reads may still run after the
 * router has stopped, so stopping waits for them and refuses new ones. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t done;
    unsigned running;
    bool closed;
} calls = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* ranks > 0 */
static void *worker_dealer;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void local_ifaces(ifaces *out) {
    memset(out, 0, sizeof *out);
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) != 0) return;
    for (struct ifaddrs *i = all; i && out->n < MAX_IFACES; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask) continue;
        out->addr[out->n] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        out->mask[out->n] = ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
        out->n++;
    }
    freeifaddrs(all);
}

static bool is_loopback(uint32_t a) {
    return (ntohl(a) >> 24) == 127;
}

/* The address of rank 0 this rank reaches: one on a subnet of this rank's own interfaces,
 * else loopback on the same host, else rank 0's first outside address. */
static void rank0_address(const ifaces *all, char *out, size_t n) {
    const char *env = getenv("H5ARK_RANK0_ADDRESS");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return;
    }
    const ifaces *zero = &all[0], *mine = &all[ranks_self()];
    for (int i = 0; i < mine->n; i++) {
        if (is_loopback(mine->addr[i])) continue;
        for (int k = 0; k < zero->n; k++)
            if (!is_loopback(zero->addr[k]) &&
                (zero->addr[k] & mine->mask[i]) == (mine->addr[i] & mine->mask[i])) {
                inet_ntop(AF_INET, &zero->addr[k], out, (socklen_t)n);
                return;
            }
    }
    bool outside = false;
    for (int k = 0; k < zero->n; k++)
        if (!is_loopback(zero->addr[k]) && !outside) {
            inet_ntop(AF_INET, &zero->addr[k], out, (socklen_t)n);
            outside = true;
        }
    if (!outside || strcmp(ranks_host(0), ranks_host(ranks_self())) == 0)
        snprintf(out, n, "127.0.0.1");
}

static int send_type(void *sock, char type, int flags) {
    return zmq_send(sock, &type, 1, flags) == 1 ? 0 : -1;
}

/* Rank 0: send one frame list to worker r; -1 with EHOSTUNREACH when it is gone. */
static int send_to(int r, char type, zmq_msg_t *rest, int nrest) {
    char id[16];
    int n = snprintf(id, sizeof id, "r%d", r);
    if (zmq_send(control_router, id, (size_t)n, ZMQ_SNDMORE) < 0) return -1;
    if (send_type(control_router, type, nrest ? ZMQ_SNDMORE : 0) < 0) return -1;
    for (int i = 0; i < nrest; i++) {
        zmq_msg_t copy;
        zmq_msg_init(&copy);
        zmq_msg_copy(&copy, &rest[i]); /* shares the bytes, no copy */
        if (zmq_msg_send(&copy, control_router, i + 1 < nrest ? ZMQ_SNDMORE : 0) < 0) {
            zmq_msg_close(&copy);
            return -1;
        }
    }
    return 0;
}

/* Rank 0: the daemon stops when the job breaks (the router reads SIGTERM from its signalfd,
 * finishes what is in flight, whose waits fail at once, and main exits with an error). */
static atomic_bool term_sent;

static void stop_rank0(void) {
    if (!atomic_exchange(&term_sent, true)) kill(getpid(), SIGTERM);
}

static void break_job(int rank, const char *what) {
    char why[512];
    if (!ranks_is_broken(why, sizeof why)) {
        ranks_set_broken("rank %d (host %s) %s: the job cannot go on, stopping", rank,
                         ranks_host(rank), what);
        stop_rank0();
    }
}

/* Read every frame of the message in flight, keep at most `max` of them. */
static int recv_frames(void *sock, zmq_msg_t *frames, int max) {
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            break;
        }
        more = zmq_msg_more(&m);
        if (n < max) {
            zmq_msg_init(&frames[n]);
            zmq_msg_move(&frames[n++], &m);
        }
        zmq_msg_close(&m);
    }
    return n;
}

static void close_frames(zmq_msg_t *frames, int n) {
    for (int i = 0; i < n; i++)
        zmq_msg_close(&frames[i]);
}

/* A monitor event: true when a connection closed. */
static bool monitor_disconnected(void *mon) {
    zmq_msg_t f[2];
    int n = recv_frames(mon, f, 2);
    bool gone = false;
    if (n >= 1 && zmq_msg_size(&f[0]) >= 2) {
        uint16_t event;
        memcpy(&event, zmq_msg_data(&f[0]), 2);
        gone = event == ZMQ_EVENT_DISCONNECTED;
    }
    close_frames(f, n);
    return gone;
}

static void *control_main(void *arg) {
    (void)arg;
    int nranks = ranks_count();
    int64_t *heard = calloc((size_t)nranks, sizeof *heard);
    bool *stopped = calloc((size_t)nranks, sizeof *stopped);
    void *pull = zmq_socket(zctx, ZMQ_PULL);
    void *mon = zmq_socket(zctx, ZMQ_PAIR);
    int hwm = 0;
    zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_bind(pull, FORWARD_ENDPOINT);
    zmq_connect(mon, MONITOR_ENDPOINT);
    int64_t t = now_ms(), last_beat = t, stop_sent = 0;
    for (int r = 0; heard && r < nranks; r++)
        heard[r] = t;
    for (;;) {
        zmq_pollitem_t items[3] = {
            {pull, 0, ZMQ_POLLIN, 0}, {control_router, 0, ZMQ_POLLIN, 0}, {mon, 0, ZMQ_POLLIN, 0}};
        zmq_poll(items, 3, 250);
        t = now_ms();
        if (items[0].revents & ZMQ_POLLIN) {
            zmq_msg_t f[2];
            int n = recv_frames(pull, f, 2);
            for (int r = 1; n == 2 && r < nranks; r++)
                if (send_to(r, 'R', f, 2) != 0) break_job(r, "cannot be reached");
            close_frames(f, n);
        }
        if (items[1].revents & ZMQ_POLLIN) {
            zmq_msg_t f[3];
            int n = recv_frames(control_router, f, 3);
            int r = -1;
            if (n >= 2 && zmq_msg_size(&f[0]) > 1 && *(char *)zmq_msg_data(&f[0]) == 'r')
                r = atoi((const char *)zmq_msg_data(&f[0]) + 1); /* "r<rank>", no NUL: digits */
            if (r > 0 && r < nranks) {
                heard[r] = t;
                char type = zmq_msg_size(&f[1]) == 1 ? *(char *)zmq_msg_data(&f[1]) : 0;
                if (type == 'B') stopped[r] = true;
                if (type == 'K') {
                    char what[400];
                    snprintf(what, sizeof what, "failed (%.*s)",
                             n >= 3 ? (int)zmq_msg_size(&f[2]) : 0,
                             n >= 3 ? (const char *)zmq_msg_data(&f[2]) : "");
                    break_job(r, what);
                }
            }
            close_frames(f, n);
        }
        if (items[2].revents & ZMQ_POLLIN && monitor_disconnected(mon)) {
            /* which one? a send to a peer whose connection is gone fails at once; after
             * the stop, a rank that closes has stopped */
            for (int r = 1; r < nranks; r++)
                if (!stopped[r] && send_to(r, 'H', NULL, 0) != 0) {
                    if (stop_sent)
                        stopped[r] = true;
                    else
                        break_job(r, "has gone: its connection closed (the process died or "
                                     "its host went away)");
                }
        }
        /* broken here, on rank 0 (a transfer it could not take part in): stop as above */
        if (!stop_sent && ranks_is_broken(NULL, 0)) stop_rank0();
        if (t - last_beat >= HEARTBEAT_MS && !stop_sent) {
            last_beat = t;
            for (int r = 1; r < nranks; r++) {
                if (stopped[r]) continue;
                if (send_to(r, 'H', NULL, 0) != 0)
                    break_job(r, "has gone: its connection closed (the process died or its "
                                 "host went away)");
                else if (t - heard[r] > timeout_ms)
                    break_job(r, "has not been heard from within the rank timeout "
                                 "(H5ARK_RANK_TIMEOUT): a network partition or a stalled host");
            }
        }
        if (atomic_load(&stop_workers)) {
            char why[512];
            if (ranks_is_broken(why, sizeof why)) {
                /* tell the others why, so that they do not report rank 0's leaving as the
                 * fault; rank 0 then ends the job (main.c) */
                zmq_msg_t reason;
                zmq_msg_init_size(&reason, strlen(why));
                memcpy(zmq_msg_data(&reason), why, strlen(why));
                for (int r = 1; r < nranks; r++)
                    if (!stopped[r]) send_to(r, 'X', &reason, 1);
                zmq_msg_close(&reason);
                int linger = 1000;
                zmq_setsockopt(control_router, ZMQ_LINGER, &linger, sizeof linger);
                break;
            }
            if (!stop_sent) {
                stop_sent = t;
                for (int r = 1; r < nranks; r++)
                    if (send_to(r, 'S', NULL, 0) != 0) stopped[r] = true;
            }
            bool all = true;
            for (int r = 1; r < nranks; r++)
                all &= stopped[r];
            if (all || t - stop_sent > timeout_ms + 30000) {
                if (!all) log_warn("not every rank said it stopped; leaving anyway");
                break;
            }
        }
    }
    zmq_close(pull);
    zmq_close(mon);
    free(heard);
    free(stopped);
    return NULL;
}

static int start_rank0(const ifaces *all, h5ark_error *err) {
    (void)all;
    rank0_info info = {0};
    control_router = zmq_socket(zctx, ZMQ_ROUTER);
    int on = 1, hwm = 0, linger = 0;
    zmq_setsockopt(control_router, ZMQ_ROUTER_MANDATORY, &on, sizeof on);
    zmq_setsockopt(control_router, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(control_router, ZMQ_LINGER, &linger, sizeof linger);
    char secret[41];
    if (zmq_has("curve") && zmq_curve_keypair(info.server_key, secret) == 0) {
        zmq_setsockopt(control_router, ZMQ_CURVE_SERVER, &on, sizeof on);
        zmq_setsockopt(control_router, ZMQ_CURVE_SECRETKEY, secret, 40);
    } else {
        info.server_key[0] = '\0';
        log_warn("this libzmq has no CURVE: the ranks' control connections are not encrypted");
    }
    zmq_socket_monitor(control_router, MONITOR_ENDPOINT, ZMQ_EVENT_DISCONNECTED);
    int rc = zmq_bind(control_router, "tcp://*:0");
    char ep[256];
    size_t len = sizeof ep;
    if (rc == 0 && zmq_getsockopt(control_router, ZMQ_LAST_ENDPOINT, ep, &len) == 0) {
        const char *colon = strrchr(ep, ':');
        info.port = colon ? atoi(colon + 1) : 0;
    }
    if (info.port <= 0) info.port = -1; /* tells the others to give up */
    if (ranks_startup_bcast(&info, sizeof info) != 0 || info.port < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "rank 0 cannot listen for the other ranks: %s",
                          zmq_strerror(errno));
    /* wait for every rank's hello before serving */
    int nranks = ranks_count(), ready = 0;
    bool *seen = calloc((size_t)nranks, sizeof *seen);
    int64_t deadline = now_ms() + timeout_ms + 20000;
    while (seen && ready < nranks - 1 && now_ms() < deadline) {
        zmq_pollitem_t item = {control_router, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 200) <= 0) continue;
        zmq_msg_t f[2];
        int n = recv_frames(control_router, f, 2);
        if (n == 2 && zmq_msg_size(&f[0]) > 1) {
            int r = atoi((const char *)zmq_msg_data(&f[0]) + 1);
            if (r > 0 && r < nranks && !seen[r]) seen[r] = true, ready++;
        }
        close_frames(f, n);
    }
    free(seen);
    if (ready < nranks - 1)
        return h5ark_fail(err, H5ARK_IO_ERROR,
                          "only %d of the %d other ranks connected to rank 0 within %d s: check "
                          "that they reach rank 0's address (H5ARK_RANK0_ADDRESS)",
                          ready, nranks - 1, (timeout_ms + 20000) / 1000);
    forward_push = zmq_socket(zctx, ZMQ_PUSH);
    zmq_setsockopt(forward_push, ZMQ_SNDHWM, &hwm, sizeof hwm);
    /* bind the PULL first: the control thread does, so connect after it starts */
    if (pthread_create(&control_thread, NULL, control_main, NULL) != 0)
        return h5ark_fail(err, H5ARK_INTERNAL, "cannot start the ranks' control thread");
    control_running = true;
    while (zmq_connect(forward_push, FORWARD_ENDPOINT) != 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int start_worker(const ifaces *all, h5ark_error *err) {
    rank0_info info;
    if (ranks_startup_bcast(&info, sizeof info) != 0 || info.port < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "rank 0 could not listen for the other ranks");
    char addr[64], ep[128], id[16];
    rank0_address(all, addr, sizeof addr);
    snprintf(ep, sizeof ep, "tcp://%s:%d", addr, info.port);
    worker_dealer = zmq_socket(zctx, ZMQ_DEALER);
    int n = snprintf(id, sizeof id, "r%d", ranks_self()), linger = 0, hwm = 0;
    zmq_setsockopt(worker_dealer, ZMQ_ROUTING_ID, id, (size_t)n);
    zmq_setsockopt(worker_dealer, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(worker_dealer, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (info.server_key[0]) {
        char pub[41], sec[41];
        zmq_curve_keypair(pub, sec);
        zmq_setsockopt(worker_dealer, ZMQ_CURVE_SERVERKEY, info.server_key, 40);
        zmq_setsockopt(worker_dealer, ZMQ_CURVE_PUBLICKEY, pub, 40);
        zmq_setsockopt(worker_dealer, ZMQ_CURVE_SECRETKEY, sec, 40);
    }
    zmq_socket_monitor(worker_dealer, MONITOR_ENDPOINT, ZMQ_EVENT_DISCONNECTED);
    if (zmq_connect(worker_dealer, ep) != 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "rank %d cannot connect to rank 0 at %s: %s",
                          ranks_self(), ep, zmq_strerror(errno));
    log_debug("rank %d: connected to rank 0 at %s", ranks_self(), ep);
    send_type(worker_dealer, 'Y', 0);
    return 0;
}

int ranks_serve_start(void *zmq_context, ranks_forwarded_fn run, h5ark_error *err) {
    zctx = zmq_context;
    run_forwarded = run;
    const char *t = getenv("H5ARK_RANK_TIMEOUT");
    if (t && atoi(t) > 0) timeout_ms = atoi(t) * 1000;
    if (ranks_count() == 1) return 0;
    ifaces mine, *all = calloc((size_t)ranks_count(), sizeof *all);
    local_ifaces(&mine);
    if (!all || ranks_startup_allgather(&mine, all, sizeof mine) != 0) {
        free(all);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot exchange the ranks' addresses");
    }
    int rc = ranks_self() == 0 ? start_rank0(all, err) : start_worker(all, err);
    free(all);
    return rc;
}

void ranks_serve_stop(void) {
    if (!control_running) return;
    pthread_mutex_lock(&calls.lock);
    calls.closed = true;
    while (calls.running)
        pthread_cond_wait(&calls.done, &calls.lock);
    pthread_mutex_unlock(&calls.lock);
    atomic_store(&stop_workers, true);
    pthread_join(control_thread, NULL);
    control_running = false;
    zmq_close(forward_push);
    zmq_close(control_router);
}

/* ---- ranks > 0: the forwarded requests ---- */

typedef struct fwd {
    uint64_t seq;
    bool shared;
    zmq_msg_t header;
    struct fwd *next;
} fwd;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    fwd *head, *tail;
    bool closed;
    int running;
    bool writer_running;
    int64_t idle_since; /* now_ms() when the last request finished with none waiting */
    bool ran_since_give_back;
} wq = {.lock = PTHREAD_MUTEX_INITIALIZER, .ready = PTHREAD_COND_INITIALIZER};

/* The head may start: a reader while no writer runs, a writer once nothing runs. */
static bool head_may_start(void) {
    return wq.head && !wq.writer_running && (wq.head->shared || wq.running == 0);
}

static void *worker_handler(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&wq.lock);
        while (!head_may_start() && !wq.closed)
            pthread_cond_wait(&wq.ready, &wq.lock);
        fwd *f = head_may_start() || wq.closed ? wq.head : NULL;
        if (f && !(wq.head = f->next)) wq.tail = NULL;
        if (f) {
            wq.running++;
            if (!f->shared) wq.writer_running = true;
        }
        pthread_mutex_unlock(&wq.lock);
        if (!f) return NULL;
        run_forwarded(f->seq, zmq_msg_data(&f->header), zmq_msg_size(&f->header));
        bool shared = f->shared;
        zmq_msg_close(&f->header);
        free(f);
        pthread_mutex_lock(&wq.lock);
        if (!shared) wq.writer_running = false;
        if (--wq.running == 0 && !wq.head) {
            wq.idle_since = now_ms();
            wq.ran_since_give_back = true;
        }
        pthread_cond_broadcast(&wq.ready);
        pthread_mutex_unlock(&wq.lock);
    }
}

int ranks_worker_run(h5ark_error *err) {
    void *mon = zmq_socket(zctx, ZMQ_PAIR);
    zmq_connect(mon, MONITOR_ENDPOINT);
    int nthreads = config.handlers, started = 0;
    pthread_t *threads = calloc((size_t)nthreads, sizeof *threads);
    for (int i = 0; threads && i < nthreads; i++)
        if (pthread_create(&threads[started], NULL, worker_handler, NULL) == 0) started++;
    int64_t heard = now_ms(), last_beat = heard;
    bool stopping = false, rank0_ends_job = false;
    int rc = 0;
    while (!stopping) {
        zmq_pollitem_t items[2] = {{worker_dealer, 0, ZMQ_POLLIN, 0}, {mon, 0, ZMQ_POLLIN, 0}};
        zmq_poll(items, 2, 250);
        int64_t t = now_ms();
        if (items[0].revents & ZMQ_POLLIN) {
            zmq_msg_t f[3];
            int n = recv_frames(worker_dealer, f, 3);
            heard = t;
            char type = n >= 1 && zmq_msg_size(&f[0]) == 1 ? *(char *)zmq_msg_data(&f[0]) : 0;
            if (type == 'R' && n == 3 && zmq_msg_size(&f[1]) == sizeof(uint64_t) + 1) {
                fwd *w = calloc(1, sizeof *w);
                if (w) {
                    memcpy(&w->seq, zmq_msg_data(&f[1]), sizeof w->seq);
                    w->shared = ((const char *)zmq_msg_data(&f[1]))[sizeof w->seq] != 0;
                    zmq_msg_init(&w->header);
                    zmq_msg_move(&w->header, &f[2]);
                    pthread_mutex_lock(&wq.lock);
                    if (wq.tail)
                        wq.tail->next = w;
                    else
                        wq.head = w;
                    wq.tail = w;
                    pthread_cond_signal(&wq.ready);
                    pthread_mutex_unlock(&wq.lock);
                } else {
                    ranks_set_broken("rank %d: out of memory queueing a request", ranks_self());
                    rc = -1;
                    stopping = true;
                }
            } else if (type == 'S') {
                stopping = true;
            } else if (type == 'X') {
                ranks_set_broken("stopping, as rank 0 does: %.*s",
                                 n >= 2 ? (int)zmq_msg_size(&f[1]) : 0,
                                 n >= 2 ? (const char *)zmq_msg_data(&f[1]) : "");
                rank0_ends_job = true;
                rc = -1;
                stopping = true;
            }
            close_frames(f, n);
        }
        if (items[1].revents & ZMQ_POLLIN && monitor_disconnected(mon)) {
            ranks_set_broken("rank 0 (host %s) has gone: its connection closed", ranks_host(0));
            rc = -1;
            break;
        }
        /* broken here (not told by rank 0): the other ranks may be waiting for this one in a
         * transfer it gave up, and would wait forever; rank 0 ends the job with the reason */
        char why[512];
        if (!rank0_ends_job && ranks_is_broken(why, sizeof why)) {
            zmq_msg_t reason;
            zmq_msg_init_size(&reason, strlen(why));
            memcpy(zmq_msg_data(&reason), why, strlen(why));
            int linger = 2000;
            zmq_setsockopt(worker_dealer, ZMQ_LINGER, &linger, sizeof linger);
            if (send_type(worker_dealer, 'K', ZMQ_SNDMORE) == 0)
                zmq_msg_send(&reason, worker_dealer, 0);
            zmq_msg_close(&reason);
            rank0_ends_job = true;
            rc = -1;
            break;
        }
        if (t - last_beat >= HEARTBEAT_MS) {
            last_beat = t;
            send_type(worker_dealer, 'H', ZMQ_DONTWAIT);
        }
        /* the idle release, as rank 0's router does it (memory.h): checked at the poll's
         * pace, so it comes up to 250 ms late */
        pthread_mutex_lock(&wq.lock);
        bool release = config.give_back_after > 0 && wq.ran_since_give_back && !wq.head &&
                       wq.running == 0 &&
                       t - wq.idle_since >= (int64_t)(config.give_back_after * 1000);
        if (release) wq.ran_since_give_back = false;
        pthread_mutex_unlock(&wq.lock);
        if (release) memory_give_back_soon();
        if (t - heard > timeout_ms) {
            ranks_set_broken("rank 0 (host %s) has not been heard from within the rank timeout "
                             "(H5ARK_RANK_TIMEOUT)",
                             ranks_host(0));
            rc = -1;
            break;
        }
    }
    /* finish what is queued and running (a broken job makes their waits fail at once) */
    pthread_mutex_lock(&wq.lock);
    wq.closed = true;
    pthread_cond_broadcast(&wq.ready);
    pthread_mutex_unlock(&wq.lock);
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    if (rc == 0) {
        int linger = 2000; /* let the goodbye leave before the socket closes */
        zmq_setsockopt(worker_dealer, ZMQ_LINGER, &linger, sizeof linger);
        send_type(worker_dealer, 'B', 0);
    }
    zmq_close(mon);
    zmq_close(worker_dealer);
    if (rank0_ends_job) {
        /* rank 0 ends the job with its own error: leave it the time to, so mpirun reports
         * the cause rather than this rank's echo of it */
        struct timespec ts = {5, 0};
        nanosleep(&ts, NULL);
    }
    if (rc) {
        char why[512];
        ranks_is_broken(why, sizeof why);
        h5ark_fail(err, H5ARK_IO_ERROR, "%s", why);
    }
    return rc;
}

/* ---- the entry's hooks ---- */

static void call_done(void) {
    pthread_mutex_lock(&calls.lock);
    if (--calls.running == 0) pthread_cond_broadcast(&calls.done);
    pthread_mutex_unlock(&calls.lock);
}

/* Rank 0: the header as the other ranks need it (without the token: they do not check it). */
static int forward(uint64_t seq, bool shared, const h5ark_value *header, h5ark_error *err) {
    h5ark_value *copy = h5ark_value_map();
    for (size_t i = 0; copy && i < header->as.m.len; i++)
        if (strcmp(header->as.m.keys[i], "token") != 0 &&
            h5ark_value_set(copy, header->as.m.keys[i], h5ark_value_copy(header->as.m.vals[i])) !=
                0)
            h5ark_value_destroy(&copy);
    char *bytes = NULL;
    size_t len = 0;
    int rc = copy ? h5ark_value_encode(copy, &bytes, &len) : -1;
    h5ark_value_destroy(&copy);
    if (rc != 0) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    char id[sizeof seq + 1];
    memcpy(id, &seq, sizeof seq);
    id[sizeof seq] = shared;
    pthread_mutex_lock(&forward_lock);
    rc = zmq_send(forward_push, id, sizeof id, ZMQ_SNDMORE) < 0 ||
                 zmq_send(forward_push, bytes, len, 0) < 0
             ? -1
             : 0;
    pthread_mutex_unlock(&forward_lock);
    free(bytes);
    if (rc) return h5ark_fail(err, H5ARK_INTERNAL, "cannot forward the request to the ranks");
    return 0;
}

static void every_enter(bool shared) {
    pthread_mutex_lock(&every.lock);
    uint64_t ticket = every.next_ticket++;
    while (ticket != every.admitted || every.writer || (!shared && every.readers > 0))
        pthread_cond_wait(&every.turn, &every.lock);
    every.admitted++;
    if (shared)
        every.readers++;
    else
        every.writer = true;
    pthread_cond_broadcast(&every.turn); /* the next ticket may be a reader too */
    pthread_mutex_unlock(&every.lock);
    call_shared = shared;
}

static void every_leave(void) {
    pthread_mutex_lock(&every.lock);
    if (call_shared)
        every.readers--;
    else
        every.writer = false;
    pthread_cond_broadcast(&every.turn);
    pthread_mutex_unlock(&every.lock);
}

int ranks_serve_begin(const char *name, ranks_mode mode, bool shared, ranks_header_fn header,
                      void *arg, uint64_t *seq, h5ark_error *err) {
    if (ranks_count() == 1) return 0;
    char why[512];
    if (ranks_is_broken(why, sizeof why)) return h5ark_fail(err, H5ARK_IO_ERROR, "%s", why);
    if (ranks_call_seq() != 0) { /* a part of the call every rank runs */
        *seq = 0;
        return mode == RANKS_EVERY ? 0
                                   : h5ark_fail(err, H5ARK_INTERNAL,
                                                "'%s' called inside a call of every rank", name);
    }
    if (mode == RANKS_NOT_YET) return ranks_not_yet(err, "%s", name);
    if (mode == RANKS_ZERO) {
        *seq = 0;
        return 0;
    }
    if (*seq == 0) { /* rank 0: number it and send it to the others */
        every_enter(shared);
        pthread_mutex_lock(&calls.lock);
        bool closed = calls.closed;
        if (!closed) calls.running++;
        pthread_mutex_unlock(&calls.lock);
        if (closed) {
            every_leave();
            return h5ark_fail(err, H5ARK_IO_ERROR, "the daemon is stopping");
        }
        *seq = atomic_fetch_add(&next_seq, 1) + 1;
        h5ark_value *made = NULL;
        const h5ark_value *h = header(arg, &made);
        int sent = h ? forward(*seq, shared, h, err)
                     : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        h5ark_value_destroy(&made);
        if (sent) {
            *seq = 0;
            call_done();
            every_leave();
            return -1;
        }
    }
    ranks_call_enter(*seq);
    return 0;
}

int ranks_serve_end(uint64_t seq, int *rc, h5ark_error *err) {
    if (seq == 0) return 0;
    *rc = ranks_agree(*rc, err);
    ranks_call_leave();
    if (ranks_self() == 0) {
        call_done();
        every_leave();
    }
    return 0;
}
