/* The HSDS-compatible endpoint (see hsds.h): HTTP, credentials, CORS, routes, answers. */
#include "front/hsds.h"

#include "access.h"
#include "config.h"
#include "entry.h"
#include "front/http.h"
#include "front/http_reply.h"
#include "front/hsds_json.h"
#include "metrics.h"
#include "h5ark_version.h"
#include "log.h"
#include "storage/h5obj.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HSDS_API_LEVEL "0.9.4" /* the HSDS API spoken (h5pyd checks "0.9" or later) */
#define NAME_MAX_BYTES 1024
#define CRED_MAX       1024

static http_server *server;
static double started;

/* ---- answers ----------------------------------------------------------------------- */

static int status_of(h5ark_code code) {
    switch (code) {
    case H5ARK_BAD_REQUEST:
    case H5ARK_TYPE_ERROR:
    case H5ARK_SCHEMA_ERROR: return 400;
    case H5ARK_UNAUTHORIZED: return 401;
    case H5ARK_FORBIDDEN: return 403;
    case H5ARK_NOT_FOUND: return 404;
    case H5ARK_ALREADY_EXISTS: return 409;
    case H5ARK_RESOURCE_LIMIT: return 413;
    case H5ARK_BUSY: return 503;
    default: return 500;
    }
}

static void answer_json(http_response *out, int status, const h5ark_value *v) {
    size_t len = 0;
    char *text = hsds_json_text(v, &len);
    if (text) http_reply_body(out, status, "application/json", text, len);
}

static void answer_error(http_response *out, int status, const char *message) {
    h5ark_value *m = h5ark_value_map();
    h5ark_value_set(m, "message", h5ark_value_str(message));
    size_t len = 0;
    char *text = m ? hsds_json_text(m, &len) : NULL;
    h5ark_value_destroy(&m);
    /* small, and not counted against --max-memory: an error must get out */
    out->status = status;
    out->content_type = "application/json";
    out->body = text;
    out->len = text ? len : 0;
    if (status == 401) http_add_header(out, "WWW-Authenticate", "Basic realm=\"h5ark\"");
}

static void answer_err(http_response *out, const h5ark_error *err) {
    answer_error(out, status_of(err->code), err->message);
}

/* ---- credentials ------------------------------------------------------------------- */

typedef struct {
    char user[CRED_MAX];  /* the Basic user name, else "" */
    char token[CRED_MAX]; /* the token given, else "" */
    bool given;
} credentials;

/* `Authorization: Basic base64(USER:TOKEN)` or `Bearer TOKEN`, else the api_key argument. */
static void read_credentials(const http_request *req, credentials *c) {
    *c = (credentials){0};
    const char *auth = http_header(req, "Authorization");
    char plain[CRED_MAX];
    if (auth && strncasecmp(auth, "Basic ", 6) == 0 &&
        hsds_base64_decode(auth + 6, plain, sizeof plain) > 0 && strchr(plain, ':')) {
        char *colon = strchr(plain, ':');
        *colon = '\0';
        snprintf(c->user, sizeof c->user, "%s", plain);
        snprintf(c->token, sizeof c->token, "%s", colon + 1);
        c->given = true;
        return;
    }
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0) {
        snprintf(c->token, sizeof c->token, "%s", auth + 7);
        c->given = true;
        return;
    }
    const char *key = http_query(req, "api_key");
    if (key) {
        snprintf(c->token, sizeof c->token, "%s", key);
        c->given = true;
    }
}

/* ---- routes ------------------------------------------------------------------------ */

const char *const hsds_route_names[] = {[H5OBJ_DOMAIN] = "hsds_domain",
                                        [H5OBJ_GET] = "hsds_get",
                                        [H5OBJ_LINKS] = "hsds_links",
                                        [H5OBJ_LINK] = "hsds_link",
                                        [H5OBJ_SHAPE] = "hsds_shape",
                                        [H5OBJ_ATTRS] = "hsds_attrs",
                                        [H5OBJ_ATTR] = "hsds_attr",
                                        [H5OBJ_VALUE] = "hsds_value",
                                        [H5OBJ_PUT_DOMAIN] = "hsds_put_domain",
                                        [H5OBJ_DELETE_DOMAIN] = "hsds_delete_domain",
                                        [H5OBJ_POST_GROUP] = "hsds_post_group",
                                        [H5OBJ_PUT_LINK] = "hsds_put_link",
                                        [H5OBJ_DELETE_LINK] = "hsds_delete_link",
                                        [H5OBJ_POST_DATASET] = "hsds_post_dataset",
                                        [H5OBJ_PUT_VALUE] = "hsds_put_value",
                                        [H5OBJ_PUT_SHAPE] = "hsds_put_shape",
                                        [H5OBJ_PUT_ATTR] = "hsds_put_attr",
                                        [H5OBJ_DELETE_ATTR] = "hsds_delete_attr",
                                        [H5OBJ_ACLS] = "hsds_acls",
                                        [H5OBJ_ACL] = "hsds_acl",
                                        [H5OBJ_PUT_ACL] = "hsds_put_acl",
                                        [H5OBJ_FOLDER] = "hsds_folder",
                                        [H5OBJ_DELETE_OBJECT] = "hsds_delete_object",
                                        [H5OBJ_DELETE_OBJECT + 1] = NULL};

typedef struct {
    h5obj_args a;
    bool changes; /* creates or changes a file: the entry refuses a token that may only read */
    h5obj_answer answer;
    char parts[4][NAME_MAX_BYTES]; /* the path's, which a's id and name point into */
} hsds_call;

static int run_call(void *door, const caller *who, h5ark_error *err) {
    hsds_call *c = door;
    file_access fa = access_of(who);
    c->a.fa = &fa;
    int rc = h5obj_run(&c->a, &c->answer, err);
    c->a.fa = NULL;
    return rc;
}

static bool arg_true(const http_request *req, const char *key) {
    const char *v = http_query(req, key);
    return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "T") == 0);
}

/* The path's parts after the leading '/': at most 4 ("groups", ID, "links", NAME). */
static int split_path(const char *path, char parts[4][NAME_MAX_BYTES]) {
    int n = 0;
    const char *p = path;
    while (*p == '/')
        p++;
    while (*p) {
        size_t len = strcspn(p, "/");
        if (n == 4 || len >= NAME_MAX_BYTES) return -1;
        memcpy(parts[n], p, len);
        parts[n][len] = '\0';
        n++;
        p += len;
        if (*p == '/') p++;
    }
    return n;
}

static h5obj_coll coll_of(const char *s) {
    return strcmp(s, "groups") == 0      ? H5OBJ_GROUPS
           : strcmp(s, "datasets") == 0  ? H5OBJ_DATASETS
           : strcmp(s, "datatypes") == 0 ? H5OBJ_DATATYPES
                                         : H5OBJ_ANY;
}

/* Points of a POST .../value: binary uint64 coordinates, or JSON {"points": [...]} or
 * {"select": "[...]"}. Fills a's points (in *points, malloc'd) or select (in *select). */
static int value_body(const http_request *req, h5obj_args *a, char **points, char **select,
                      h5ark_error *err) {
    const char *type = http_header(req, "Content-Type");
    if (type && strncmp(type, "application/octet-stream", 24) == 0) {
        a->points = req->body ? req->body : "";
        a->points_len = req->body_len;
        return 0;
    }
    json_error_t je;
    json_t *j = req->body ? json_loadb(req->body, req->body_len, 0, &je) : NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "the body must be binary points or JSON {\"points\": [...]} or "
                          "{\"select\": \"[...]\"}");
    }
    json_t *sel = json_object_get(j, "select"), *pts = json_object_get(j, "points");
    int rc = 0;
    if (json_is_string(sel)) {
        *select = strdup(json_string_value(sel));
        a->select = *select;
        if (!*select) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    } else if (json_is_array(pts)) {
        size_t n = json_array_size(pts), k = 0, cap = n ? n * 8 : 8;
        unsigned char *b = malloc(cap);
        for (size_t i = 0; b && rc == 0 && i < n; i++) {
            json_t *p = json_array_get(pts, i);
            size_t m = json_is_array(p) ? json_array_size(p) : 1;
            for (size_t d = 0; rc == 0 && d < m; d++) {
                json_t *x = json_is_array(p) ? json_array_get(p, d) : p;
                if (!json_is_integer(x) || json_integer_value(x) < 0) {
                    rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                                    "points: point %zu is not made of "
                                    "non-negative integers",
                                    i);
                    break;
                }
                if (k + 8 > cap) {
                    unsigned char *nb = realloc(b, cap * 2);
                    if (!nb) break;
                    b = nb;
                    cap *= 2;
                }
                uint64_t v = (uint64_t)json_integer_value(x);
                for (int s = 0; s < 8; s++)
                    b[k++] = (unsigned char)(v >> (8 * s));
            }
        }
        *points = (char *)b;
        a->points = b ? (const void *)b : "";
        a->points_len = k;
    } else {
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the body holds neither points nor select");
    }
    json_decref(j);
    return rc;
}

static void allow(http_response *out, const char *methods) {
    out->allow = methods;
    answer_error(out, 405, "this path does not take that method");
}

/* Map a request to an operation; 0, or -1 with the answer already set. */
static int route(const http_request *req, hsds_call *c, http_response *out) {
    char(*parts)[NAME_MAX_BYTES] = c->parts;
    int n = split_path(req->path, parts);
    const char *m = req->method;
    bool get = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0, post = strcmp(m, "POST") == 0;
    bool put = strcmp(m, "PUT") == 0, del = strcmp(m, "DELETE") == 0;
    h5obj_args *a = &c->a;
    h5obj_coll coll = n > 0 ? coll_of(parts[0]) : H5OBJ_ANY;
    const char *what = n > 2 ? parts[2] : "";
    bool links = strcmp(what, "links") == 0 && coll == H5OBJ_GROUPS;
    bool attrs = strcmp(what, "attributes") == 0;
    bool shape = n == 3 && strcmp(what, "shape") == 0 && coll == H5OBJ_DATASETS;
    bool value = n == 3 && strcmp(what, "value") == 0 && coll == H5OBJ_DATASETS;
    bool acls = n > 0 && n < 3 && strcmp(parts[0], "acls") == 0;
    bool domains = n == 1 && strcmp(parts[0], "domains") == 0;
    if (n < 0 || (n > 0 && coll == H5OBJ_ANY && !acls && !domains) ||
        (n > 2 && !links && !attrs && !shape && !value)) {
        answer_error(out, 404, "no such path");
        return -1;
    }
    const char *allowed = acls                                ? (n == 1 ? "GET" : "GET, PUT")
                          : domains                           ? "GET"
                          : n == 0                            ? "GET, PUT, DELETE"
                          : n == 1 && coll != H5OBJ_DATATYPES ? "POST"
                          : n == 2                            ? "GET, DELETE"
                          : links || attrs
                              ? (n == 4 ? "GET, PUT, DELETE" : "GET, POST, PUT, DELETE")
                          : shape ? "GET, PUT"
                          : value ? "GET, POST, PUT"
                                  : "";
    char verb[16];
    snprintf(verb, sizeof verb, "%s", m);
    if (!strstr(allowed, verb) && !(get && strstr(allowed, "GET"))) {
        allow(out, allowed[0] ? allowed : "GET");
        return -1;
    }
    c->changes = !get && !(post && (value || links || attrs)); /* POSTs that only read */
    if (domains) {
        a->op = H5OBJ_FOLDER;
    } else if (acls) {
        a->op = n == 1 ? H5OBJ_ACLS : put ? H5OBJ_PUT_ACL : H5OBJ_ACL;
        if (n == 2) a->name = parts[1];
    } else if (n == 0) {
        a->op = get ? H5OBJ_DOMAIN : put ? H5OBJ_PUT_DOMAIN : H5OBJ_DELETE_DOMAIN;
        a->verbose = arg_true(req, "verbose");
    } else if (n == 1) {
        a->op = coll == H5OBJ_GROUPS ? H5OBJ_POST_GROUP : H5OBJ_POST_DATASET;
    } else {
        a->coll = coll;
        a->id = parts[1];
        if (n == 4) a->name = parts[3];
        a->op = n == 2  ? (del ? H5OBJ_DELETE_OBJECT : H5OBJ_GET)
                : links ? (put      ? H5OBJ_PUT_LINK
                           : del    ? H5OBJ_DELETE_LINK
                           : n == 4 ? H5OBJ_LINK
                                    : H5OBJ_LINKS)
                : attrs ? (put      ? H5OBJ_PUT_ATTR
                           : del    ? H5OBJ_DELETE_ATTR
                           : n == 4 ? H5OBJ_ATTR
                                    : H5OBJ_ATTRS)
                : shape ? (put ? H5OBJ_PUT_SHAPE : H5OBJ_SHAPE)
                        : (put ? H5OBJ_PUT_VALUE : H5OBJ_VALUE);
    }
    a->getalias = arg_true(req, "getalias");
    a->verbose = arg_true(req, "verbose");
    a->include_data = arg_true(req, "IncludeData");
    a->follow_links = arg_true(req, "follow_links");
    a->create_order = arg_true(req, "CreateOrder");
    a->replace = arg_true(req, "replace");
    const char *count = http_query(req, "element_count");
    a->element_count = count && strcmp(count, "1") == 0;
    a->names = http_query(req, links ? "titles" : "attr_names");
    a->sep = http_query(req, "separator");
    a->fields = http_query(req, "fields");
    a->select = http_query(req, "select");
    a->pattern = http_query(req, "pattern");
    a->marker = http_query(req, "Marker");
    const char *limit = http_query(req, "Limit");
    a->limit = limit ? strtoll(limit, NULL, 10) : 0;
    a->body = req->body;
    a->body_len = req->body_len;
    const char *type = http_header(req, "Content-Type");
    a->body_binary = type && strncmp(type, "application/octet-stream", 24) == 0;
    return 0;
}

static void cors(const http_request *req, http_response *out) {
    const char *origin = http_header(req, "Origin");
    http_add_header(out, "Access-Control-Allow-Origin", origin ? origin : "*");
}

static void about(const credentials *cred, http_response *out) {
    h5ark_value *m = h5ark_value_map();
    h5ark_value_set(m, "name", h5ark_value_str("h5ark"));
    h5ark_value_set(m, "about",
                    h5ark_value_str("h5ark: the data directory's HDF5 files over "
                                    "HSDS's REST API"));
    h5ark_value_set(m, "greeting", h5ark_value_str("Welcome to h5ark"));
    h5ark_value_set(m, "state", h5ark_value_str("READY"));
    h5ark_value_set(m, "hsds_version", h5ark_value_str(HSDS_API_LEVEL));
    h5ark_value_set(m, "h5ark_version", h5ark_value_str(H5ARK_VERSION_STRING));
    h5ark_value_set(m, "node_count", h5ark_value_int(1));
    h5ark_value_set(m, "isadmin", h5ark_value_bool(false));
    h5ark_value_set(m, "username", h5ark_value_str(cred->user[0] ? cred->user : "anonymous"));
    h5ark_value_set(m, "start_time", h5ark_value_float(started));
    if (m) answer_json(out, 200, m);
    h5ark_value_destroy(&m);
}

static void info(http_response *out) {
    h5ark_value *m = h5ark_value_map(), *node = h5ark_value_map();
    h5ark_value_set(node, "type", h5ark_value_str("sn"));
    h5ark_value_set(node, "state", h5ark_value_str("READY"));
    h5ark_value_set(m, "state", h5ark_value_str("READY"));
    h5ark_value_set(m, "node", node);
    h5ark_value_set(m, "start_time", h5ark_value_float(started));
    if (m) answer_json(out, 200, m);
    h5ark_value_destroy(&m);
}

static void serve(void *arg, const http_request *req, http_response *out) {
    (void)arg;
    cors(req, out);
    if (strcmp(req->method, "OPTIONS") == 0) {
        out->status = 204;
        http_add_header(out, "Access-Control-Allow-Methods", "GET, PUT, POST, DELETE");
        http_add_header(out, "Access-Control-Allow-Headers", "Authorization, Accept, Content-Type");
        return;
    }
    if (req->body_too_large) {
        answer_error(out, 413, "the request's body is over max_request_size");
        return;
    }
    credentials cred;
    read_credentials(req, &cred);
    if (strcmp(req->path, "/about") == 0 || strcmp(req->path, "/info") == 0) {
        if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
            allow(out, "GET");
        else if (req->path[1] == 'a')
            about(&cred, out);
        else
            info(out);
        return;
    }
    hsds_call c = {.a = {.max_bytes = H5OBJ_MAX_REQUEST}};
    if (route(req, &c, out)) return;
    char *points = NULL, *select = NULL;
    h5ark_error err = {0};
    c.a.domain = http_query(req, "domain");
    if (!c.a.domain) c.a.domain = http_query(req, "host");
    if (!c.a.domain && c.a.op == H5OBJ_FOLDER) c.a.domain = "/"; /* the top-level folder */
    c.a.owner = cred.user[0] ? cred.user : NULL;
    if (!c.a.domain) {
        h5ark_fail(&err, H5ARK_BAD_REQUEST, "the query parameter domain is missing");
    } else if (c.a.op == H5OBJ_VALUE) {
        const char *accept = http_header(req, "Accept");
        c.a.json_values = !accept || !strstr(accept, "application/octet-stream");
        c.a.file_answer = true; /* large runs of a file are sent from it */
        if (strcmp(req->method, "POST") == 0) value_body(req, &c.a, &points, &select, &err);
        if (strcmp(req->method, "PUT") == 0) c.a.max_bytes = H5OBJ_MAX_REQUEST;
    }
    /* a request like any other: listed in `status` while it runs, counted by its route's
     * name and outcome, and logged with its user, once answered */
    const char *name = hsds_route_names[c.a.op];
    h5ark_value *header = h5ark_value_map();
    if (header && h5ark_value_set(header, "cmd", h5ark_value_str(name)))
        h5ark_value_destroy(&header); /* counted as a request without a name */
    request asked = {.header = header, .arrived_ns = metrics_clock()};
    const char *token = cred.given ? cred.token : NULL;
    size_t token_len = token ? strlen(token) : 0;
    entry_call call = {.req = &asked,
                       .name = name,
                       .ranks_name = "hsds",
                       .read_only = !c.changes,
                       .ranks = RANKS_ZERO,
                       .token = token,
                       .token_len = token_len,
                       .token_hint = "send 'Authorization: Basic base64(USER:TOKEN)' or "
                                     "'Authorization: Bearer TOKEN'",
                       .run = run_call,
                       .door = &c};
    if (err.code || entry_accept(&asked, token, token_len, &err) || entry_run(&call, &err)) {
        /* a valid token refused (a read token changing a file) is HSDS's 403, not 401 */
        if (err.code == H5ARK_UNAUTHORIZED && call.who.token >= 0) err.code = H5ARK_FORBIDDEN;
        answer_err(out, &err);
    } else if (c.answer.json) {
        answer_json(out, c.answer.created ? 201 : 200, c.answer.json);
    } else if (c.answer.run) {
        out->status = 200;
        out->content_type = "application/octet-stream";
        out->len = c.answer.nbytes;
        out->read = h5obj_run_read; /* read from the file as it is sent */
        out->done = h5obj_run_done;
        out->arg = c.answer.run;
        c.answer.run = NULL;
    } else {
        http_reply_body(out, 200, "application/octet-stream", c.answer.bytes, c.answer.nbytes);
        if (out->body == c.answer.bytes) out->free_body = h5obj_bytes_free; /* kept for reuse */
        c.answer.bytes = NULL;
    }
    h5ark_code outcome = out->status < 400      ? H5ARK_OK
                         : err.code != H5ARK_OK ? err.code
                                                : H5ARK_INTERNAL;
    h5ark_span sent = {out->body, out->len};
    entry_answered(&asked, outcome,
                   &(reply){.spans = &sent, .nspans = out->body || out->read ? 1 : 0});
    entry_done(&asked);
    h5ark_value_destroy(&header);
    h5obj_answer_free(&c.answer);
    free(points);
    free(select);
}

int hsds_start(const char *address, h5ark_error *err) {
    if (!address) return 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    started = (double)now.tv_sec + now.tv_nsec * 1e-9;
    if (http_start_bodies(address, serve, NULL, H5OBJ_MAX_REQUEST, &server, err)) return -1;
    log_info("HSDS endpoint on %s", http_address(server));
    return 0;
}

void hsds_stop(void) {
    http_stop(&server);
}

const char *hsds_address(void) {
    return server ? http_address(server) : NULL;
}
