/* The router and the handler pool (see router.h). Constant-time commands (ping,
 * getconfig) and malformed headers are answered on the router thread: two thread hand-offs
 * would cost more than the command, and they cannot hold up anything else. */
#include "front/router.h"

#include "front/arkouda/endpoint.h"
#include "config.h"
#include "dispatch.h"
#include "entry.h"
#include "locales.h"
#include "log.h"
#include "memory.h"
#include "metrics.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define REPLY_ENDPOINT "inproc://h5ark-replies"
#define MAX_ENVELOPE   2 /* identity, and the empty delimiter REQ sockets add */

typedef struct work {
    zmq_msg_t envelope[MAX_ENVELOPE];
    int nenvelope;
    char peer[64]; /* the client's address, when ZeroMQ gives one */
    bool arkouda;  /* came on the Arkouda endpoint: its dialect, and its socket's reply */
    request req;
    struct work *next;
} work;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    work *head, *tail;
    size_t length;
    bool closed;
} queue = {.lock = PTHREAD_MUTEX_INITIALIZER, .ready = PTHREAD_COND_INITIALIZER};

static atomic_bool stop_requested;
static void *zctx;

static void work_free(work *w) {
    entry_done(&w->req);
    for (int i = 0; i < w->nenvelope; i++)
        zmq_msg_close(&w->envelope[i]);
    h5ark_value_destroy(&w->req.header);
    h5ark_payload_free(&w->req.payload);
    free(w->req.text);
    free(w);
}

static int send_envelope(void *sock, work *w) {
    for (int i = 0; i < w->nenvelope; i++) {
        zmq_msg_t copy;
        zmq_msg_init(&copy);
        zmq_msg_copy(&copy, &w->envelope[i]);
        if (zmq_msg_send(&copy, sock, ZMQ_SNDMORE) < 0) {
            zmq_msg_close(&copy);
            return -1;
        }
    }
    return 0;
}

/* Send [envelope, header, payload frames] on `sock`. On the handlers' socket a first frame
 * tells the router which endpoint the reply is for. */
static void send_reply(void *sock, work *w, reply *r, bool tagged) {
    /* the request ends for its user before its reply leaves: a client that sends its next
     * request on this reply is not refused for this one (quota.requests) */
    entry_done(&w->req);
    uint64_t payload = 0;
    for (size_t i = 0; i < r->nspans; i++)
        payload += r->spans[i].len;
    if (tagged && zmq_send(sock, w->arkouda ? "a" : "n", 1, ZMQ_SNDMORE) < 0) return;
    if (send_envelope(sock, w) != 0) return;
    if (r->one_frame) {
        if (h5ark_send_whole(sock, r->spans[0].ptr, r->spans[0].len, r->hold) != 0)
            log_error("sending a reply failed: %s", zmq_strerror(errno));
        return;
    }
    zmq_send(sock, r->header, r->header_len, payload ? ZMQ_SNDMORE : 0);
    if (payload && h5ark_send_spans(sock, r->spans, r->nspans, r->hold, false) != 0)
        log_error("sending a reply's payload failed: %s", zmq_strerror(errno));
}

static void *handler_main(void *arg) {
    (void)arg;
    void *push = zmq_socket(zctx, ZMQ_PUSH);
    zmq_connect(push, REPLY_ENDPOINT);
    for (;;) {
        pthread_mutex_lock(&queue.lock);
        while (!queue.head && !queue.closed)
            pthread_cond_wait(&queue.ready, &queue.lock);
        work *w = queue.head;
        if (w) {
            queue.head = w->next;
            if (!queue.head) queue.tail = NULL;
            queue.length--;
        }
        pthread_mutex_unlock(&queue.lock);
        if (!w) break;

        reply r;
        if (w->arkouda)
            arkouda_handle(&w->req, &r);
        else
            dispatch_handle(&w->req, &r);
        /* the request's payload is no longer needed: free it before the reply goes out */
        h5ark_payload_free(&w->req.payload);
        if (r.shutdown) atomic_store(&stop_requested, true);
        send_reply(push, w, &r, true);
        reply_free(&r);
        work_free(w);
    }
    zmq_close(push);
    return NULL;
}

static bool enqueue(work *w) {
    pthread_mutex_lock(&queue.lock);
    bool ok = queue.length < config.max_queue;
    if (ok) {
        if (queue.tail)
            queue.tail->next = w;
        else
            queue.head = w;
        queue.tail = w;
        queue.length++;
        pthread_cond_signal(&queue.ready);
    }
    pthread_mutex_unlock(&queue.lock);
    return ok;
}

static void reply_now(void *router, work *w, h5ark_code code, const char *message) {
    reply r;
    if (w->arkouda)
        arkouda_error_reply(&w->req, message, &r);
    else
        dispatch_error_reply(w->req.header && w->req.header->kind == H5ARK_MAP ? w->req.header
                                                                               : NULL,
                             code, message, &r);
    entry_answered(&w->req, code, &r);
    send_reply(router, w, &r, false);
    reply_free(&r);
}

/* Read one whole multipart message from the ROUTER socket into a work item. Returns NULL
 * (after draining) when the message is unusable: no frames beyond an identity. */
static work *receive_request(void *router, bool arkouda, bool *answered) {
    *answered = false;
    work *w = calloc(1, sizeof *w);
    if (w) w->arkouda = arkouda;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    int more = 1, index = 0;
    bool have_header = false, too_large = false;
    uint64_t received = 0, envelope = 0;
    if (w) h5ark_payload_init(&w->req.payload);
    while (more) {
        if (zmq_msg_recv(&msg, router, 0) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        more = zmq_msg_more(&msg);
        received += zmq_msg_size(&msg);
        if (!w) continue; /* out of memory: drain and drop */
        if (index == 0 || (index == 1 && zmq_msg_size(&msg) == 0)) {
            /* identity, then the empty delimiter of a REQ socket */
            envelope += zmq_msg_size(&msg);
            zmq_msg_init(&w->envelope[w->nenvelope]);
            zmq_msg_move(&w->envelope[w->nenvelope++], &msg);
        } else if (!have_header) {
            have_header = true;
            /* frames from the wire carry the connection's metadata; the identity does not */
            const char *peer = zmq_msg_gets(&msg, "Peer-Address");
            if (peer) snprintf(w->peer, sizeof w->peer, "%s", peer);
            if (arkouda) {
                w->req.text_len = zmq_msg_size(&msg);
                if (w->req.text_len > config.max_message) {
                    too_large = true;
                } else if ((w->req.text = malloc(w->req.text_len + 1))) {
                    memcpy(w->req.text, zmq_msg_data(&msg), w->req.text_len);
                    w->req.text[w->req.text_len] = '\0';
                }
            } else {
                w->req.header = h5ark_value_decode(zmq_msg_data(&msg), zmq_msg_size(&msg),
                                                   &w->req.decode_error);
            }
        } else if (received > config.max_message) {
            too_large = true; /* keep draining, drop the bytes */
        } else if (h5ark_payload_append(&w->req.payload, &msg) != 0) {
            too_large = true;
        }
        index++;
    }
    zmq_msg_close(&msg);
    if (!w) return NULL;
    w->req.bytes = received - envelope;
    w->req.arrived_ns = metrics_clock();
    if (too_large) {
        char text[256];
        snprintf(text, sizeof text,
                 "the request is larger than the daemon's maximum message size of %llu bytes",
                 (unsigned long long)config.max_message);
        reply_now(router, w, H5ARK_RESOURCE_LIMIT, text);
        work_free(w);
        *answered = true;
        return NULL;
    }
    if (!have_header) w->req.decode_error = "is missing: the message had no frames";
    if (w->nenvelope > 0) {
        w->req.identity = zmq_msg_data(&w->envelope[0]);
        w->req.identity_len = zmq_msg_size(&w->envelope[0]);
        w->req.peer = w->peer[0] ? w->peer : NULL;
    }
    return w;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void forward_reply(void *pull, void *router, void *arkouda) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    int more = 1;
    /* the first frame names the endpoint */
    while (zmq_msg_recv(&msg, pull, 0) < 0 && errno == EINTR) {}
    if (zmq_msg_size(&msg) == 1 && *(const char *)zmq_msg_data(&msg) == 'a' && arkouda)
        router = arkouda;
    more = zmq_msg_more(&msg);
    while (more) {
        if (zmq_msg_recv(&msg, pull, 0) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        more = zmq_msg_more(&msg);
        /* a client that has gone away: ROUTER drops the message, which is what we want */
        zmq_msg_send(&msg, router, more ? ZMQ_SNDMORE : 0);
    }
    zmq_msg_close(&msg);
}

int router_run(void *zmq_context, h5ark_error *err) {
    zctx = zmq_context;
    void *router = zmq_socket(zctx, ZMQ_ROUTER);
    void *pull = zmq_socket(zctx, ZMQ_PULL);
    int linger = 2000, hwm = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(router, ZMQ_SNDHWM, &hwm, sizeof hwm); /* replies are never dropped */
    zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (zmq_bind(pull, REPLY_ENDPOINT) != 0) {
        zmq_close(router);
        zmq_close(pull);
        return h5ark_fail(err, H5ARK_INTERNAL, "cannot bind %s: %s", REPLY_ENDPOINT,
                          zmq_strerror(errno));
    }
    if (config.curve_secret[0]) {
        int on = 1;
        if (zmq_setsockopt(router, ZMQ_CURVE_SERVER, &on, sizeof on) != 0 ||
            zmq_setsockopt(router, ZMQ_CURVE_SECRETKEY, config.curve_secret, 40) != 0) {
            zmq_close(router);
            zmq_close(pull);
            return h5ark_fail(err, H5ARK_INTERNAL, "cannot enable CURVE: %s", zmq_strerror(errno));
        }
    }
    if (zmq_bind(router, config.endpoint) != 0) {
        int e = errno;
        zmq_close(router);
        zmq_close(pull);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot listen on %s: %s", config.endpoint,
                          zmq_strerror(e));
    }
    /* Arkouda's dialect on a socket of its own (its clients are REQ sockets, which a ROUTER
     * serves as it does ours); no CURVE: Arkouda's client has none */
    void *arkouda = NULL;
    if (config.arkouda_endpoint[0]) {
        arkouda = zmq_socket(zctx, ZMQ_ROUTER);
        zmq_setsockopt(arkouda, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(arkouda, ZMQ_SNDHWM, &hwm, sizeof hwm);
        if (zmq_bind(arkouda, config.arkouda_endpoint) != 0) {
            int e = errno;
            zmq_close(arkouda);
            zmq_close(router);
            zmq_close(pull);
            return h5ark_fail(err, H5ARK_IO_ERROR, "cannot listen on %s: %s",
                              config.arkouda_endpoint, zmq_strerror(e));
        }
        char where[1024];
        size_t where_len = sizeof where;
        if (zmq_getsockopt(arkouda, ZMQ_LAST_ENDPOINT, where, &where_len) != 0)
            snprintf(where, sizeof where, "%s", config.arkouda_endpoint);
        arkouda_set_endpoint(where);
        if (config.curve_secret[0])
            log_warn("the Arkouda endpoint %s is not encrypted: Arkouda's client has no CURVE",
                     where);
    }

    char bound[1024];
    size_t bound_len = sizeof bound;
    if (zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, bound, &bound_len) != 0)
        snprintf(bound, sizeof bound, "%s", config.endpoint);
    const char *metrics = metrics_address();
    printf("h5arkd %s listening on %s with %d locale%s, data directory %s, max memory %llu "
           "bytes%s%s%s%s%s%s%s\n",
           H5ARK_VERSION_STRING, bound, locales_count(), locales_count() == 1 ? "" : "s",
           config.data_dir, (unsigned long long)config.max_memory,
           config.token_file ? ", token required" : "",
           config.curve_secret[0] ? ", CURVE encryption" : "",
           metrics ? ", metrics at http://" : "", metrics ? metrics : "", metrics ? "/metrics" : "",
           arkouda ? ", Arkouda clients at " : "", arkouda ? arkouda_endpoint() : "");
    fflush(stdout);

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    int sigfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);

    pthread_t *handlers = calloc((size_t)config.handlers, sizeof *handlers);
    int nhandlers = 0;
    for (int i = 0; handlers && i < config.handlers; i++)
        if (pthread_create(&handlers[i], NULL, handler_main, NULL) == 0) nhandlers++;

    uint64_t in_flight = 0;
    bool accepting = true;
    /* The idle timer: once no request has been in flight for idle_ms, and one has run since
     * the last release, the housekeeper gives freed memory back. ping and getconfig do not
     * count, so a monitor polling them does not keep the memory held. */
    const uint64_t idle_ms = (uint64_t)(config.give_back_after * 1000 + 0.5);
    uint64_t idle_since = now_ms();
    bool ran_since_give_back = false;
    while (accepting || in_flight > 0) {
        long timeout = -1;
        if (idle_ms && ran_since_give_back && in_flight == 0) {
            uint64_t now = now_ms(), due = idle_since + idle_ms;
            if (now >= due) {
                memory_give_back_soon();
                ran_since_give_back = false;
            } else {
                timeout = (long)(due - now);
            }
        }
        zmq_pollitem_t items[4] = {
            {pull, 0, ZMQ_POLLIN, 0},
            {NULL, sigfd, ZMQ_POLLIN, 0},
            {router, 0, ZMQ_POLLIN, 0},
            {arkouda, 0, ZMQ_POLLIN, 0},
        };
        int n = zmq_poll(items, accepting ? (arkouda ? 4 : 3) : 2, timeout);
        if (n < 0) {
            if (errno == EINTR) continue;
            log_error("poll failed: %s", zmq_strerror(errno));
            break;
        }
        if (items[0].revents & ZMQ_POLLIN) {
            forward_reply(pull, router, arkouda);
            if (--in_flight == 0) idle_since = now_ms();
        }
        if (items[1].revents & ZMQ_POLLIN) {
            struct signalfd_siginfo si;
            while (read(sigfd, &si, sizeof si) == sizeof si) {
                char why[1024];
                if (si.ssi_signo == SIGHUP) {
                    users_reread("SIGHUP", why, sizeof why); /* it logs what it did */
                    continue;
                }
                log_notice("signal %u: stopping after %llu request(s) in flight", si.ssi_signo,
                           (unsigned long long)in_flight);
                accepting = false;
            }
        }
        if (atomic_load(&stop_requested) && accepting) {
            log_notice("shutdown requested: stopping after %llu request(s) in flight",
                       (unsigned long long)in_flight);
            accepting = false;
        }
        for (int k = 2; k < 4 && accepting; k++) {
            if (!(items[k].revents & ZMQ_POLLIN)) continue;
            void *sock = items[k].socket;
            bool answered;
            work *w = receive_request(sock, k == 3, &answered);
            if (!w) continue;
            /* in flight for its user from now on, queued included (quota.requests) */
            h5ark_error refused = {0};
            if ((k == 3 ? arkouda_accept(&w->req, &refused) : dispatch_accept(&w->req, &refused))) {
                reply_now(sock, w, refused.code, refused.message);
                work_free(w);
            } else if (k == 2 ? dispatch_is_immediate(&w->req) : arkouda_is_immediate(&w->req)) {
                reply r;
                if (k == 3)
                    arkouda_handle(&w->req, &r);
                else
                    dispatch_handle(&w->req, &r);
                if (r.shutdown) atomic_store(&stop_requested, true);
                send_reply(sock, w, &r, false);
                reply_free(&r);
                work_free(w);
            } else if (nhandlers == 0) {
                reply_now(sock, w, H5ARK_INTERNAL, "no handler threads are running");
                work_free(w);
            } else if (!enqueue(w)) {
                reply_now(sock, w, H5ARK_BUSY,
                          "the daemon has too many requests waiting; try again shortly");
                work_free(w);
            } else {
                in_flight++;
                ran_since_give_back = true;
            }
        }
    }

    pthread_mutex_lock(&queue.lock);
    queue.closed = true;
    pthread_cond_broadcast(&queue.ready);
    pthread_mutex_unlock(&queue.lock);
    for (int i = 0; i < nhandlers; i++)
        pthread_join(handlers[i], NULL);
    free(handlers);
    if (sigfd >= 0) close(sigfd);
    zmq_close(pull);
    zmq_close(router);
    if (arkouda) zmq_close(arkouda);
    return 0;
}
