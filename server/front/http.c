/* The HTTP server on libmicrohttpd (see http.h). */
#include "front/http.h"

#include "log.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HTTP_DEFAULT_HOST "127.0.0.1"
#define HTTP_IDLE_SECONDS 10u          /* a client that stalls mid-request is cut off */
#define HTTP_READ_BLOCK   (256u << 10) /* a read body's piece: fits the caches it is sent from */

struct http_server {
    struct MHD_Daemon *daemon;
    http_handler fn;
    void *arg;
    size_t max_body; /* 0: bodies are not read */
    char address[300];
};

/* A request's body as it comes in (servers that read bodies). */
typedef struct {
    char *buf;
    size_t len, cap;
    bool too_large;
} upload_state;

static void upload_free(void *cls, struct MHD_Connection *conn, void **state,
                        enum MHD_RequestTerminationCode why) {
    (void)conn;
    (void)why;
    http_server *s = cls;
    if (s->max_body && *state) {
        upload_state *u = *state;
        free(u->buf);
        free(u);
    }
    *state = NULL;
}

/* Append a piece of the body, keeping a NUL after it; past the limit, drop it all. */
static void upload_add(upload_state *u, size_t max, const char *data, size_t n) {
    if (u->too_large) return;
    if (u->len + n > max) {
        u->too_large = true;
        free(u->buf);
        *u = (upload_state){.too_large = true};
        return;
    }
    if (u->len + n + 1 > u->cap) {
        size_t cap = u->cap ? u->cap : 4096;
        while (cap < u->len + n + 1)
            cap *= 2;
        char *b = realloc(u->buf, cap);
        if (!b) {
            free(u->buf);
            *u = (upload_state){.too_large = true};
            return;
        }
        u->buf = b;
        u->cap = cap;
    }
    memcpy(u->buf + u->len, data, n);
    u->len += n;
    u->buf[u->len] = '\0';
}

void http_add_header(http_response *out, const char *name, const char *value) {
    if (out->nextra >= (int)(sizeof out->extra / sizeof out->extra[0])) return;
    out->extra[out->nextra].name = name;
    snprintf(out->extra[out->nextra].value, sizeof out->extra[0].value, "%s", value);
    out->nextra++;
}

int http_parse_address(const char *address, const char *default_host, char *host, size_t hostlen,
                       char *port, size_t portlen, h5ark_error *err) {
    const char *h = default_host, *p = address;
    size_t hlen = strlen(default_host);
    if (address[0] == '[') {
        const char *close = strchr(address, ']');
        if (!close || close[1] != ':')
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "'%s': an IPv6 address is written [ADDRESS]:PORT", address);
        h = address + 1;
        hlen = (size_t)(close - h);
        p = close + 2;
    } else if (strrchr(address, ':')) {
        const char *colon = strrchr(address, ':');
        if (strchr(address, ':') != colon)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "'%s': an IPv6 address is written [ADDRESS]:PORT", address);
        h = address;
        hlen = (size_t)(colon - address);
        p = colon + 1;
    }
    if (hlen == 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "'%s' has no host before the port (0.0.0.0 listens on every interface)",
                          address);
    size_t plen = strlen(p);
    unsigned long value = 0;
    for (size_t i = 0; i < plen && plen <= 5; i++)
        value = p[i] >= '0' && p[i] <= '9' ? value * 10 + (unsigned long)(p[i] - '0') : 99999;
    if (plen == 0 || plen > 5 || value > 65535)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s': the port must be a number from 0 to 65535",
                          address);
    if (hlen >= hostlen || plen >= portlen)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is too long", address);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memcpy(port, p, plen + 1);
    return 0;
}

/* The library's own messages are about what clients sent (malformed requests, timeouts):
 * worth seeing when debugging, not in normal operation. */
static void library_log(void *arg, const char *fmt, va_list ap) {
    (void)arg;
    if (log_threshold < LOG_DEBUG) return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\r\n")] = '\0';
    log_debug("http: %s", line);
}

/* A body that holds memory of the caller's budget, until the library is done with it. */
typedef struct {
    char *body;
    size_t len;
    void (*free_body)(char *body, size_t len);
    void (*release)(uint64_t held);
    uint64_t held;
} held_body;

static void drop_body(const http_response *out) {
    if (out->free_body)
        out->free_body(out->body, out->len);
    else
        free(out->body);
}

static void free_held(void *arg) {
    held_body *h = arg;
    drop_body(&(http_response){.body = h->body, .len = h->len, .free_body = h->free_body});
    if (h->release) h->release(h->held);
    free(h);
}

/* A body read as it is sent (http_response's read). */
typedef struct {
    long (*read)(void *arg, uint64_t pos, char *buf, size_t max);
    void (*done)(void *arg);
    void *arg;
} read_body;

static ssize_t read_more(void *cls, uint64_t pos, char *buf, size_t max) {
    read_body *b = cls;
    long n = b->read(b->arg, pos, buf, max);
    return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void read_done(void *cls) {
    read_body *b = cls;
    b->done(b->arg);
    free(b);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state) {
    (void)version;
    (void)upload;
    http_server *s = cls;
    http_request req = {method, url, conn, NULL, 0, false};
    if (s->max_body) {
        upload_state *u = *state;
        if (!u) { /* the first call: headers only */
            if (!(u = calloc(1, sizeof *u))) return MHD_NO;
            *state = u;
            const char *length =
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
            if (!length || strtoull(length, NULL, 10) <= s->max_body) return MHD_YES;
            u->too_large = true; /* answered now, the body left unread */
        } else if (*upload_size) {
            upload_add(u, s->max_body, upload, *upload_size);
            *upload_size = 0;
            return MHD_YES;
        }
        if (u->cap == SIZE_MAX) return MHD_YES; /* answered already */
        req.body = u->buf;
        req.body_len = u->len;
        req.body_too_large = u->too_large;
        u->cap = SIZE_MAX; /* the buffer is the handler's now: nothing more is added */
    } else {
        if (*state) { /* answered on the first call: the body, if any, is ignored */
            *upload_size = 0;
            return MHD_YES;
        }
        *state = s;
    }
    http_response out = {.status = 500};
    s->fn(s->arg, &req, &out);
    if (out.release && !out.body) {
        out.release(out.held);
        out.release = NULL;
    }
    struct MHD_Response *r = NULL;
    held_body *h = NULL;
    if (out.read) {
        read_body *b = malloc(sizeof *b);
        if (b) {
            *b = (read_body){out.read, out.done, out.arg};
            r = MHD_create_response_from_callback(out.len, HTTP_READ_BLOCK, read_more, b,
                                                  read_done);
        }
        if (!r) {
            free(b);
            out.done(out.arg);
            return MHD_NO;
        }
    } else if (!out.body) {
        r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    } else if (!out.release && !out.free_body) {
        r = MHD_create_response_from_buffer(out.len, out.body, MHD_RESPMEM_MUST_FREE);
    } else if ((h = malloc(sizeof *h))) {
        *h = (held_body){out.body, out.len, out.free_body, out.release, out.held};
        r = MHD_create_response_from_buffer_with_free_callback_cls(out.len, out.body, free_held, h);
    }
    if (!r) { /* out of memory: the library closes the connection */
        drop_body(&out);
        if (out.release) out.release(out.held);
        free(h);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            out.content_type ? out.content_type : "text/plain; charset=utf-8");
    if (out.allow) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, out.allow);
    for (int i = 0; i < out.nextra; i++)
        MHD_add_response_header(r, out.extra[i].name, out.extra[i].value);
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)out.status, r);
    MHD_destroy_response(r);
    return rc;
}

static void describe_bound(int fd, char *out, size_t outlen) {
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
        getnameinfo((struct sockaddr *)&sa, len, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, outlen, "?");
        return;
    }
    snprintf(out, outlen, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

int http_start(const char *address, http_handler fn, void *arg, http_server **out,
               h5ark_error *err) {
    return http_start_bodies(address, fn, arg, 0, out, err);
}

int http_start_bodies(const char *address, http_handler fn, void *arg, size_t max_body,
                      http_server **out, h5ark_error *err) {
    *out = NULL;
    char host[256], port[8];
    if (http_parse_address(address, HTTP_DEFAULT_HOST, host, sizeof host, port, sizeof port, err))
        return -1;
    char shown[300]; /* what was asked for, the default host filled in */
    snprintf(shown, sizeof shown, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *found;
    int gai = getaddrinfo(host, port, &hints, &found);
    if (gai != 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot listen on %s: %s", shown,
                          gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
    /* The socket is made here rather than by the library, to report why a bind failed; and
     * close-on-exec, so that the file probes the daemon starts do not hold the port. */
    int fd = -1, e = 0, family = AF_INET;
    for (struct addrinfo *a = found; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        int on = 1;
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
                        bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0)) {
            e = errno;
            close(fd);
            fd = -1;
        } else if (fd < 0) {
            e = errno;
        }
        family = a->ai_family;
    }
    freeaddrinfo(found);
    if (fd < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot listen on %s: %s", shown, strerror(e));

    http_server *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    s->fn = fn;
    s->arg = arg;
    s->max_body = max_body;
    describe_bound(fd, s->address, sizeof s->address);
    /* poll() where the system has it: the daemon's descriptors may pass select()'s 1024 */
    unsigned flags =
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER,
                                 library_log, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_LIMIT, HTTP_MAX_CONNECTIONS,
                                 MHD_OPTION_CONNECTION_TIMEOUT, HTTP_IDLE_SECONDS,
                                 MHD_OPTION_NOTIFY_COMPLETED, upload_free, s, MHD_OPTION_END);
    if (!s->daemon) {
        close(fd);
        free(s);
        return h5ark_fail(err, H5ARK_INTERNAL, "cannot start the HTTP server on %s", shown);
    }
    *out = s;
    return 0;
}

const char *http_address(const http_server *s) {
    return s->address;
}

const char *http_query(const http_request *req, const char *key) {
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_header(const http_request *req, const char *name) {
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

void http_stop(http_server **s) {
    if (!*s) return;
    MHD_stop_daemon((*s)->daemon); /* closes the listening socket too */
    free(*s);
    *s = NULL;
}
