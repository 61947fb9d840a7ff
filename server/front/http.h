/* A small HTTP server for the daemon's side doors (the metrics endpoint and the HTTP
 * gateway), on libmicrohttpd: the library parses HTTP and runs a thread per connection
 * (at most HTTP_MAX_CONNECTIONS), so that a slow answer holds up only its own connection;
 * the caller only maps a request to a response, and its handler runs on several threads
 * at once. Nothing here knows what is served. */
#ifndef H5ARK_HTTP_H
#define H5ARK_HTTP_H

#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *method; /* "GET", "HEAD", "POST", ... as sent */
    const char *path;   /* the URL's path, without the query string */
    void *conn;         /* the library's connection, for http_query */
    /* The request's body, for a server started with a body limit (http_start_bodies):
     * NUL-terminated (not counted in body_len); NULL when there is none. */
    const char *body;
    size_t body_len;
    bool body_too_large; /* its Content-Length passed the limit: nothing of it was read */
} http_request;

typedef struct {
    int status;               /* 200, 404, ... */
    const char *content_type; /* static; NULL: text/plain */
    const char *allow;        /* the Allow header (for 405), static, or NULL */
    char *body;               /* malloc'd; the server frees it, NULL for none */
    size_t len;
    /* Memory the body counts against a budget of the caller's: once the body is sent (or
     * dropped) and freed, the server calls release(held). NULL: nothing held. */
    void (*release)(uint64_t held);
    uint64_t held;
    /* How the body is freed once sent or dropped (given back for reuse, say); NULL: free. */
    void (*free_body)(char *body, size_t len);
    /* A body read as it is sent (body NULL, len its size): read(arg, pos, buf, max) puts
     * the bytes from pos into buf (how many, at most max; -1 cuts the answer short), and
     * done(arg) is called once the answer was sent or dropped. */
    long (*read)(void *arg, uint64_t pos, char *buf, size_t max);
    void (*done)(void *arg);
    void *arg;
    /* Further headers (CORS, WWW-Authenticate ...): names static, values copied in. */
    struct {
        const char *name;
        char value[256];
    } extra[4];
    int nextra;
} http_response;

/* Add a header to the response (dropped past four). */
void http_add_header(http_response *out, const char *name, const char *value);

#define HTTP_MAX_CONNECTIONS 64u

/* Called on the connection's thread for each request, with out->status 500 and no body;
 * it sets the response. A HEAD request gets the headers of the GET response only. */
typedef void (*http_handler)(void *arg, const http_request *req, http_response *out);

typedef struct http_server http_server;

/* "[HOST:]PORT" into host and port: HOST may be a name, an IPv4 address or a bracketed
 * IPv6 one ("[::1]:9100"); without it, default_host. PORT is 0 to 65535 (0: any free
 * port). bad_request naming what is wrong. */
int http_parse_address(const char *address, const char *default_host, char *host, size_t hostlen,
                       char *port, size_t portlen, h5ark_error *err);

/* Listen on `address` (as http_parse_address, the host defaulting to 127.0.0.1) and serve
 * until http_stop. io_error when the address cannot be resolved or bound (in use, not an
 * address of this machine, ...). */
int http_start(const char *address, http_handler fn, void *arg, http_server **out,
               h5ark_error *err);
/* The same, reading each request's body of up to max_body bytes before the handler runs
 * (a larger one is not read: body_too_large). */
int http_start_bodies(const char *address, http_handler fn, void *arg, size_t max_body,
                      http_server **out, h5ark_error *err);
/* The address bound, "HOST:PORT" with the port chosen when 0 was asked for. */
const char *http_address(const http_server *s);
/* A query-string argument of the request, or NULL. */
const char *http_query(const http_request *req, const char *key);
/* A request header (name matched without regard to case), or NULL. */
const char *http_header(const http_request *req, const char *name);
/* Close the socket and every connection, join the thread; *s becomes NULL. */
void http_stop(http_server **s);

#endif
