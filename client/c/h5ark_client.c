/* libh5ark: the client socket, the request/reply exchange and the reply accessors. The typed
 * helpers for each command are in h5ark_commands.c. */
#include "h5ark.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Payloads up to this size are copied into one frame: for them a copy costs less than
 * waiting for ZeroMQ to hand zero-copy frames back. */
#define COPY_LIMIT (64u * 1024u)
/* After a reply, ZeroMQ's I/O thread lets go of the last zero-copy frame on its next write
 * event, which follows at once; this only bounds the wait before forcing it. */
#define RELEASE_GRACE_MS 5000

struct _h5ark_client_t {
    void *ctx;
    void *sock; /* NULL until the first request, and after a reset */
    char *endpoint;
    char *token;
    int timeout_ms;
    int connect_timeout_ms;
    bool answered; /* the socket has had a reply: it reaches a daemon */
    uint64_t next_id;
    h5ark_value *warnings;
    /* CURVE: the server's public key and this client's own key pair (Z85); empty: plain */
    char server_key[41], public_key[41], secret_key[41];
    /* the socket's routing identity, by which the daemon's `status` tells our requests */
    char identity[24];
};

struct _h5ark_reply_t {
    h5ark_value *header;
    h5ark_buffer_list buffers;
    h5ark_payload payload;
};

/* ---- the client ---------------------------------------------------------------------- */

static int open_socket(h5ark_client_t *self, h5ark_error *err);
static void reset_socket(h5ark_client_t *self);

h5ark_client_t *h5ark_client_new(const char *endpoint, const char *token, h5ark_error *err) {
    if (!endpoint) endpoint = H5ARK_DEFAULT_ENDPOINT;
    h5ark_client_t *self = calloc(1, sizeof *self);
    if (!self) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    self->timeout_ms = H5ARK_DEFAULT_TIMEOUT_MS;
    self->connect_timeout_ms = H5ARK_DEFAULT_CONNECT_TIMEOUT_MS;
    self->next_id = 1;
    self->endpoint = strdup(endpoint);
    self->token = token ? strdup(token) : NULL;
    self->ctx = zmq_ctx_new();
    if (!self->endpoint || (token && !self->token) || !self->ctx) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "cannot set up a ZeroMQ context: %s",
                   zmq_strerror(errno));
        h5ark_client_destroy(&self);
        return NULL;
    }
    /* connect now so a malformed endpoint is reported here rather than on the first request */
    if (open_socket(self, err)) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "cannot connect to '%s': %s", endpoint,
                   zmq_strerror(errno));
        h5ark_client_destroy(&self);
        return NULL;
    }
    return self;
}

int h5ark_client_set_curve(h5ark_client_t *self, const char *server_public_key, h5ark_error *err) {
    uint8_t raw[32];
    if (!server_public_key || strlen(server_public_key) != 40 ||
        !zmq_z85_decode(raw, server_public_key))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "the server's public key must be a 40-character Z85 CURVE key");
    if (zmq_curve_keypair(self->public_key, self->secret_key) != 0)
        return h5ark_fail(err, H5ARK_INTERNAL, "this libzmq cannot make CURVE keys: %s",
                          zmq_strerror(errno));
    memcpy(self->server_key, server_public_key, 41);
    reset_socket(self); /* the next request connects encrypted */
    return open_socket(self, err);
}

void h5ark_client_destroy(h5ark_client_t **self_p) {
    if (!self_p || !*self_p) return;
    h5ark_client_t *self = *self_p;
    if (self->sock) zmq_close(self->sock);
    if (self->ctx) zmq_ctx_term(self->ctx);
    h5ark_value_destroy(&self->warnings);
    free(self->endpoint);
    if (self->token) {
        memset(self->token, 0, strlen(self->token));
        free(self->token);
    }
    free(self);
    *self_p = NULL;
}

void h5ark_client_set_timeout(h5ark_client_t *self, int timeout_ms) {
    self->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
    if (self->sock) zmq_setsockopt(self->sock, ZMQ_SNDTIMEO, &self->timeout_ms, sizeof(int));
}

int h5ark_client_timeout(const h5ark_client_t *self) {
    return self->timeout_ms;
}

void h5ark_client_set_connect_timeout(h5ark_client_t *self, int timeout_ms) {
    self->connect_timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
}

int h5ark_client_connect_timeout(const h5ark_client_t *self) {
    return self->connect_timeout_ms;
}

const char *h5ark_client_endpoint(const h5ark_client_t *self) {
    return self->endpoint;
}

const h5ark_value *h5ark_client_warnings(const h5ark_client_t *self) {
    return self->warnings;
}

const char *h5ark_client_identity(const h5ark_client_t *self) {
    return self->identity;
}

/* A fresh identity for each socket: a closed socket's may still be known to the daemon's
 * ROUTER for a moment, and it would refuse a second connection under the same one. */
static void new_identity(h5ark_client_t *self) {
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16) ^
            (uint64_t)(uintptr_t)self;
    }
    snprintf(self->identity, sizeof self->identity, "c-%016llx", (unsigned long long)r);
}

static int open_socket(h5ark_client_t *self, h5ark_error *err) {
    if (self->sock) return 0;
    void *s = zmq_socket(self->ctx, ZMQ_DEALER);
    int linger = 0;
    new_identity(self);
    bool curve_failed = s && self->server_key[0] &&
                        (zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, self->server_key, 40) ||
                         zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, self->public_key, 40) ||
                         zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, self->secret_key, 40));
    /* a DEALER with no peer yet (or a handshake refused) blocks in send: bound that too */
    if (!s || curve_failed || zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_setsockopt(s, ZMQ_ROUTING_ID, self->identity, strlen(self->identity)) ||
        zmq_setsockopt(s, ZMQ_SNDTIMEO, &self->timeout_ms, sizeof self->timeout_ms) ||
        zmq_connect(s, self->endpoint) != 0) {
        int e = errno;
        if (s) zmq_close(s);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot connect to '%s': %s", self->endpoint,
                          zmq_strerror(e));
    }
    self->sock = s;
    return 0;
}

/* Drop the socket and whatever it still queues (a partly sent request, a late reply); the
 * next request opens a fresh one, so no stale reply can ever be read. */
static void reset_socket(h5ark_client_t *self) {
    if (self->sock) zmq_close(self->sock);
    self->sock = NULL;
    self->answered = false;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- zero-copy sending --------------------------------------------------------------- */

/* Signalled when ZeroMQ has let go of every zero-copy frame of a request. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool released;
} release_wait;

static void release_wait_init(release_wait *w) {
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &attr);
    pthread_condattr_destroy(&attr);
    w->released = false;
}

static void release_wait_destroy(release_wait *w) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

static void on_release(void *arg) {
    release_wait *w = arg;
    pthread_mutex_lock(&w->mu);
    w->released = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Wait up to timeout_ms (< 0: forever); true once released. */
static bool release_wait_for(release_wait *w, int timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (timeout_ms >= 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&w->mu);
    while (!w->released) {
        int rc = timeout_ms < 0 ? pthread_cond_wait(&w->cv, &w->mu)
                                : pthread_cond_timedwait(&w->cv, &w->mu, &until);
        if (rc == ETIMEDOUT) break;
    }
    bool done = w->released;
    pthread_mutex_unlock(&w->mu);
    return done;
}

/* Large input buffers go out as zero-copy frames that point into the caller's memory, so a
 * 1 GiB put costs no copy on this side. The caller's memory must outlive those frames:
 * the request does not return before the hold's release has run. When ZeroMQ keeps them
 * (no peer, a timeout, a failed send), closing the socket makes it drop them, after which
 * the release is certain. */
static void settle_frames(h5ark_client_t *self, h5ark_hold *hold, release_wait *w) {
    if (!hold) return;
    h5ark_hold_drop(hold); /* the sender's own reference */
    if (!release_wait_for(w, self->sock ? RELEASE_GRACE_MS : -1)) {
        reset_socket(self);
        release_wait_for(w, -1);
    }
    release_wait_destroy(w);
}

/* ---- replies ------------------------------------------------------------------------- */

void h5ark_reply_destroy(h5ark_reply_t **self_p) {
    if (!self_p || !*self_p) return;
    h5ark_reply_t *self = *self_p;
    h5ark_value_destroy(&self->header);
    h5ark_buffer_list_free(&self->buffers);
    h5ark_payload_free(&self->payload);
    free(self);
    *self_p = NULL;
}

bool h5ark_reply_ok(const h5ark_reply_t *self) {
    const h5ark_value *ok = h5ark_value_get(self->header, "ok");
    return ok && ok->kind == H5ARK_BOOL && ok->as.b;
}

const h5ark_value *h5ark_reply_header(const h5ark_reply_t *self) {
    return self->header;
}

const h5ark_value *h5ark_reply_result(const h5ark_reply_t *self) {
    const h5ark_value *r = h5ark_value_get(self->header, "result");
    return r && r->kind == H5ARK_MAP ? r : NULL;
}

const h5ark_value *h5ark_reply_warnings(const h5ark_reply_t *self) {
    const h5ark_value *w = h5ark_value_get(self->header, "warnings");
    return w && w->kind == H5ARK_ARRAY ? w : NULL;
}

h5ark_code h5ark_reply_error_code(const h5ark_reply_t *self) {
    const h5ark_value *code = h5ark_value_get(h5ark_value_get(self->header, "error"), "code");
    if (code && code->kind == H5ARK_STR) return h5ark_code_from_name(code->as.s.ptr);
    return h5ark_reply_ok(self) ? H5ARK_OK : H5ARK_INTERNAL;
}

const char *h5ark_reply_error_message(const h5ark_reply_t *self) {
    const h5ark_value *m = h5ark_value_get(h5ark_value_get(self->header, "error"), "message");
    return m && m->kind == H5ARK_STR ? m->as.s.ptr : "";
}

size_t h5ark_reply_buffer_count(const h5ark_reply_t *self) {
    return self->buffers.count;
}

const char *h5ark_reply_buffer_name(const h5ark_reply_t *self, size_t index) {
    return index < self->buffers.count ? self->buffers.items[index].name : NULL;
}

static const h5ark_buffer *find_buffer(const h5ark_reply_t *self, const char *name,
                                       h5ark_error *err) {
    const h5ark_buffer *b = h5ark_buffer_list_find(&self->buffers, name);
    if (!b) h5ark_fail(err, H5ARK_NOT_FOUND, "the reply has no buffer '%s'", name);
    return b;
}

int h5ark_reply_buffer_size(const h5ark_reply_t *self, const char *name, uint64_t *nbytes,
                            h5ark_error *err) {
    const h5ark_buffer *b = find_buffer(self, name, err);
    if (!b) return -1;
    *nbytes = b->nbytes;
    return 0;
}

int h5ark_reply_buffer_copy(const h5ark_reply_t *self, const char *name, void *dst, uint64_t cap,
                            h5ark_error *err) {
    const h5ark_buffer *b = find_buffer(self, name, err);
    if (!b) return -1;
    if (b->nbytes > cap)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "reply buffer '%s' has %llu bytes, more than the %llu given for it", name,
                          (unsigned long long)b->nbytes, (unsigned long long)cap);
    if (h5ark_payload_copy(&self->payload, b->offset, dst, b->nbytes) != 0)
        return h5ark_fail(err, H5ARK_INTERNAL, "reply buffer '%s' lies outside the payload", name);
    return 0;
}

const void *h5ark_reply_buffer_data(const h5ark_reply_t *self, const char *name, uint64_t *nbytes) {
    const h5ark_buffer *b = h5ark_buffer_list_find(&self->buffers, name);
    if (!b) return NULL;
    if (nbytes) *nbytes = b->nbytes;
    if (b->nbytes == 0) return "";
    const h5ark_payload *p = &self->payload;
    size_t lo = 0, hi = p->count;
    while (hi - lo > 1) { /* the last frame starting at or before the buffer */
        size_t mid = lo + (hi - lo) / 2;
        if (p->starts[mid] <= b->offset)
            lo = mid;
        else
            hi = mid;
    }
    /* skip empty frames that share a start with the one holding the bytes */
    while (lo < p->count && zmq_msg_size(&p->frames[lo]) == 0)
        lo++;
    if (lo >= p->count || p->starts[lo] > b->offset) return NULL;
    uint64_t fsize = zmq_msg_size(&p->frames[lo]);
    uint64_t skip = b->offset - p->starts[lo];
    if (skip + b->nbytes > fsize) return NULL;
    return (const char *)zmq_msg_data(&p->frames[lo]) + skip;
}

/* ---- one exchange -------------------------------------------------------------------- */

static h5ark_value *build_header(h5ark_client_t *self, uint64_t id, const char *cmd,
                                 h5ark_value *args, const h5ark_buffer_in *bufs, size_t nbufs) {
    h5ark_value *h = h5ark_value_map();
    int rc = h5ark_value_set(h, "v", h5ark_value_uint(H5ARK_PROTOCOL_VERSION));
    rc |= h5ark_value_set(h, "id", h5ark_value_uint(id));
    rc |= h5ark_value_set(h, "cmd", h5ark_value_str(cmd));
    if (self->token) rc |= h5ark_value_set(h, "token", h5ark_value_str(self->token));
    if (args) rc |= h5ark_value_set(h, "args", args);
    if (nbufs) {
        h5ark_value *list = h5ark_value_array();
        for (size_t i = 0; i < nbufs; i++) {
            h5ark_value *b = h5ark_value_map();
            rc |= h5ark_value_set(b, "name", h5ark_value_str(bufs[i].name));
            rc |= h5ark_value_set(b, "nbytes", h5ark_value_uint(bufs[i].nbytes));
            rc |= h5ark_value_push(list, b);
        }
        rc |= h5ark_value_set(h, "buffers", list);
    }
    if (rc || !h) {
        h5ark_value_destroy(&h);
        return NULL;
    }
    return h;
}

/* Send the payload of a request. Small payloads are copied into one frame; large ones go
 * out zero-copy under *hold (set only then). */
static int send_payload(h5ark_client_t *self, const h5ark_buffer_in *bufs, size_t nbufs,
                        uint64_t total, h5ark_hold **hold, release_wait *w) {
    *hold = NULL;
    if (total <= COPY_LIMIT) {
        zmq_msg_t msg;
        if (zmq_msg_init_size(&msg, (size_t)total) != 0) return -1;
        char *p = zmq_msg_data(&msg);
        for (size_t i = 0; i < nbufs; i++) {
            if (bufs[i].nbytes) memcpy(p, bufs[i].data, bufs[i].nbytes);
            p += bufs[i].nbytes;
        }
        if (zmq_msg_send(&msg, self->sock, 0) < 0) {
            zmq_msg_close(&msg);
            return -1;
        }
        return 0;
    }
    h5ark_span *spans = malloc(nbufs * sizeof *spans);
    if (!spans) return -1;
    for (size_t i = 0; i < nbufs; i++)
        spans[i] = (h5ark_span){bufs[i].data, bufs[i].nbytes};
    release_wait_init(w);
    *hold = h5ark_hold_new(on_release, w);
    if (!*hold) {
        release_wait_destroy(w);
        free(spans);
        return -1;
    }
    int rc = h5ark_send_spans(self->sock, spans, nbufs, *hold, false);
    free(spans);
    return rc;
}

/* Receive one whole multipart message into header bytes + payload. */
static int recv_message(void *sock, zmq_msg_t *head, h5ark_payload *payload) {
    zmq_msg_init(head);
    if (zmq_msg_recv(head, sock, 0) < 0) {
        zmq_msg_close(head);
        return -1;
    }
    int more = zmq_msg_more(head);
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, 0) < 0) {
            zmq_msg_close(&part);
            zmq_msg_close(head);
            return -1;
        }
        more = zmq_msg_more(&part);
        if (h5ark_payload_append(payload, &part) != 0) {
            zmq_msg_close(&part);
            zmq_msg_close(head);
            errno = ENOMEM;
            return -1;
        }
    }
    return 0;
}

/* Wait up to wait_ms (< 0: forever) for the reply to `id`; replies to other ids (none
 * expected) are dropped. */
static int await_reply(h5ark_client_t *self, uint64_t id, int wait_ms, h5ark_reply_t *r,
                       h5ark_error *err) {
    int64_t deadline = wait_ms < 0 ? -1 : now_ms() + wait_ms;
    for (;;) {
        long wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            wait = left > 0 ? (long)left : 0;
        }
        zmq_pollitem_t item = {self->sock, 0, ZMQ_POLLIN, 0};
        int n = zmq_poll(&item, 1, wait);
        if (n < 0) {
            if (errno == EINTR) continue;
            return h5ark_fail(err, H5ARK_IO_ERROR, "waiting for the reply from %s: %s",
                              self->endpoint, zmq_strerror(errno));
        }
        if (n == 0 && !self->answered)
            return h5ark_fail(err, H5ARK_IO_ERROR,
                              "nothing answered at %s within %.3g s: is h5arkd running there%s?",
                              self->endpoint, wait_ms / 1000.0,
                              self->server_key[0] ? ", and is the server key its own" : "");
        if (n == 0)
            return h5ark_fail(err, H5ARK_IO_ERROR,
                              "no reply from %s within %.3g s (is h5arkd running there?)",
                              self->endpoint, wait_ms / 1000.0);
        zmq_msg_t head;
        h5ark_payload_free(&r->payload);
        h5ark_payload_init(&r->payload);
        if (recv_message(self->sock, &head, &r->payload) != 0) {
            if (errno == EINTR) continue;
            return h5ark_fail(err, H5ARK_IO_ERROR, "receiving the reply from %s: %s",
                              self->endpoint, zmq_strerror(errno));
        }
        self->answered = true;
        const char *why = NULL;
        h5ark_value *h = h5ark_value_decode(zmq_msg_data(&head), zmq_msg_size(&head), &why);
        zmq_msg_close(&head);
        if (!h || h->kind != H5ARK_MAP) {
            h5ark_value_destroy(&h);
            return h5ark_fail(err, H5ARK_INTERNAL, "the reply header from %s %s", self->endpoint,
                              why ? why : "is not a map");
        }
        /* a reply without id is the daemon saying it could not read ours: it is for us */
        const h5ark_value *rid = h5ark_value_get(h, "id");
        uint64_t got;
        if (rid && (!h5ark_value_to_uint64(rid, &got) || got != id)) {
            h5ark_value_destroy(&h);
            continue;
        }
        r->header = h;
        return 0;
    }
}

/* Before a socket has had a reply, a ping bounded by the connect timeout checks that a
 * daemon answers: a long request to an absent one would otherwise wait out its whole
 * timeout. Any reply will do, an error included (the request then gets its own). */
static int make_contact(h5ark_client_t *self, h5ark_error *err) {
    h5ark_error perr;
    if (h5ark_client_request(self, "ping", NULL, NULL, 0, NULL, &perr) == 0 || self->answered)
        return 0;
    if (err) *err = perr;
    return -1;
}

int h5ark_client_request(h5ark_client_t *self, const char *cmd, h5ark_value *args,
                         const h5ark_buffer_in *bufs, size_t nbufs, h5ark_reply_t **reply,
                         h5ark_error *err) {
    if (reply) *reply = NULL;
    h5ark_value_destroy(&self->warnings);
    if (args && args->kind != H5ARK_MAP) {
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: args must be a map", cmd);
    }
    uint64_t total = 0;
    for (size_t i = 0; i < nbufs; i++) {
        if (!bufs[i].name || (bufs[i].nbytes && !bufs[i].data)) {
            h5ark_value_destroy(&args);
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: input buffer %zu has no name or data",
                              cmd, i);
        }
        total += bufs[i].nbytes;
    }
    int wait_ms = self->timeout_ms;
    if (!self->answered && self->connect_timeout_ms >= 0) {
        if (strcmp(cmd, "ping") != 0) {
            if (make_contact(self, err)) {
                h5ark_value_destroy(&args);
                return -1;
            }
        } else if (wait_ms < 0 || self->connect_timeout_ms < wait_ms) {
            wait_ms = self->connect_timeout_ms; /* this ping is the first contact */
        }
    }
    uint64_t id = self->next_id++;
    h5ark_value *header = build_header(self, id, cmd, args, bufs, nbufs);
    char *data = NULL;
    size_t len = 0;
    if (!header || h5ark_value_encode(header, &data, &len) != 0) {
        h5ark_value_destroy(&header);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "%s: out of memory building the request", cmd);
    }
    h5ark_value_destroy(&header);
    if (open_socket(self, err)) {
        free(data);
        return -1;
    }

    h5ark_reply_t *r = calloc(1, sizeof *r);
    if (!r) {
        free(data);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    h5ark_payload_init(&r->payload);
    h5ark_hold *hold = NULL;
    release_wait w;
    int rc = zmq_send(self->sock, data, len, total ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
    free(data);
    if (rc == 0 && total) rc = send_payload(self, bufs, nbufs, total, &hold, &w);
    if (rc != 0) {
        if (errno == EAGAIN)
            h5ark_fail(err, H5ARK_IO_ERROR,
                       "%s: no connection to %s within %g s (is h5arkd running there, and does "
                       "it need --server-key?)",
                       cmd, self->endpoint, self->timeout_ms / 1000.0);
        else
            h5ark_fail(err, H5ARK_IO_ERROR, "%s: sending to %s: %s", cmd, self->endpoint,
                       zmq_strerror(errno));
        reset_socket(self); /* a partly sent message must not stay queued */
        settle_frames(self, hold, &w);
        h5ark_reply_destroy(&r);
        return -1;
    }
    rc = await_reply(self, id, wait_ms, r, err);
    /* nothing answering is about the endpoint, not this command */
    if (rc != 0 && self->answered) h5ark_fail_context(err, "%s", cmd);
    if (rc != 0) reset_socket(self);
    settle_frames(self, hold, &w);
    if (rc != 0) {
        h5ark_reply_destroy(&r);
        return -1;
    }

    h5ark_error perr;
    if (h5ark_buffer_list_parse(h5ark_value_get(r->header, "buffers"), &r->buffers, &perr) != 0) {
        h5ark_fail(err, H5ARK_INTERNAL, "%s: malformed reply: %s", cmd, perr.message);
        h5ark_reply_destroy(&r);
        return -1;
    }
    if (r->buffers.total != r->payload.total) {
        h5ark_fail(err, H5ARK_INTERNAL,
                   "%s: the reply lists %llu buffer bytes but %llu payload bytes arrived", cmd,
                   (unsigned long long)r->buffers.total, (unsigned long long)r->payload.total);
        h5ark_reply_destroy(&r);
        return -1;
    }
    const h5ark_value *warnings = h5ark_reply_warnings(r);
    if (warnings) self->warnings = h5ark_value_copy(warnings);
    rc = 0;
    if (!h5ark_reply_ok(r)) {
        const char *msg = h5ark_reply_error_message(r);
        h5ark_code code = h5ark_reply_error_code(r);
        h5ark_fail(err, code == H5ARK_OK ? H5ARK_INTERNAL : code, "%s",
                   *msg ? msg : "the request failed without a message");
        rc = -1;
    }
    if (reply)
        *reply = r;
    else
        h5ark_reply_destroy(&r);
    return rc;
}
