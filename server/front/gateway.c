/* The HTTP gateway (see gateway.h): /files/, the viewer page, and the routing of every
 * request through the entry (entry.h) to h5grove's routes (h5grove.h). */
#include "front/gateway.h"

#include "access.h"
#include "config.h"
#include "entry.h"
#include "front/h5grove.h"
#include "front/http.h"
#include "front/http_reply.h"
#include "log.h"
#include "metrics.h"
#include "storage/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILES_MAX        10000 /* /files/ lists at most this many */
#define FILES_MAX_DEPTH  16
#define STATIC_MAX_BYTES (64u << 20)

static http_server *server;
static char web_dir[PATH_MAX]; /* empty: no viewer page */

/* ---- /files/: the data directory ---------------------------------------------------- */

static int by_str(const void *a, const void *b) {
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* Regular files below dir (rel: their path from the data directory) that fa may read,
 * named as fa gives them, depth first; hidden names (temporaries, twins, ACLs) and
 * symbolic links are left out. */
static void walk(const file_access *fa, const char *dir, const char *rel, int depth, json_t *list) {
    h5ark_error ignore;
    bool readable = acl_allows(fa, rel, PERM_READ, &ignore) > 0;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) && json_array_size(list) < FILES_MAX) {
        if (de->d_name[0] == '.') continue;
        char path[PATH_MAX], sub[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path ||
            snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >=
                (int)sizeof sub)
            continue;
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        char shown[PATH_MAX];
        if (S_ISDIR(st.st_mode) && depth < FILES_MAX_DEPTH)
            walk(fa, path, sub, depth + 1, list);
        else if (S_ISREG(st.st_mode) && readable) {
            files_shown(fa, path, shown, sizeof shown);
            json_array_append_new(list, http_json_str(shown, strlen(shown)));
        }
    }
    closedir(d);
}

static void files(const file_access *fa, http_response *out) {
    json_t *list = json_array();
    if (list) walk(fa, config.data_dir, "", 0, list);
    size_t n = list ? json_array_size(list) : 0;
    json_t **items = n ? malloc(n * sizeof *items) : NULL;
    if (items) {
        for (size_t i = 0; i < n; i++)
            items[i] = json_incref(json_array_get(list, i));
        qsort(items, n, sizeof *items, by_str);
        json_array_clear(list);
        for (size_t i = 0; i < n; i++)
            json_array_append_new(list, items[i]);
        free(items);
    }
    http_reply_json(out, list);
}

/* ---- the viewer page ---------------------------------------------------------------- */

static const char no_viewer[] =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>h5ark</title></head><body>"
    "<h1>h5ark</h1><p>This h5arkd was built without its viewer page: npm was not found when it "
    "was built, or could not fetch the page's packages (the build said why). Install Node.js "
    "and npm or make npm's registry reachable, build again (<code>cmake --build</code> builds "
    "the page from <code>web/</code>), or give <code>--web-dir</code> the directory of a "
    "built page.</p><p>The h5grove API is served all the same: <code>/files/</code>, "
    "<code>/meta/?file=F&amp;path=P</code>, <code>/attr/</code>, <code>/data/</code> "
    "(docs/OPERATIONS.md).</p></body></html>\n";

static const char *content_type(const char *path) {
    static const char *const types[][2] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".woff2", "font/woff2"},
        {".woff", "font/woff"},
        {".wasm", "application/wasm"},
        {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i][0]) == 0) return types[i][1];
    return "application/octet-stream";
}

static void static_file(const char *url, http_response *out) {
    static const char not_found[] = "not found\n";
    const char *rel = strcmp(url, "/") == 0 ? "/index.html" : url;
    bool safe = strlen(rel) < 256 && !strstr(rel, "..") && !strstr(rel, "//");
    for (const char *p = rel; safe && *p; p++)
        safe = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
               strchr("/._-", *p);
    char path[PATH_MAX];
    int fd = -1;
    struct stat st;
    if (safe && web_dir[0] && snprintf(path, sizeof path, "%s%s", web_dir, rel) < (int)sizeof path)
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 &&
        (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > STATIC_MAX_BYTES)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        bool root = strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0;
        const char *msg = root ? no_viewer : not_found;
        char *body = malloc(strlen(msg));
        if (body) memcpy(body, msg, strlen(msg));
        if (body)
            http_reply_body(out, root ? 200 : 404,
                            root ? "text/html; charset=utf-8" : "text/plain; charset=utf-8", body,
                            strlen(msg));
        return;
    }
    char *body = malloc(st.st_size ? (size_t)st.st_size : 1);
    size_t got = 0;
    while (body && got < (size_t)st.st_size) {
        ssize_t n = read(fd, body + got, (size_t)st.st_size - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (!body || got != (size_t)st.st_size) {
        free(body);
        return; /* 500 */
    }
    http_reply_body(out, 200, content_type(rel), body, got);
}

/* ---- routing ------------------------------------------------------------------------- */

static bool route_is(const char *url, const char *name) {
    size_t n = strlen(name);
    return strncmp(url, name, n) == 0 && (url[n] == '\0' || (url[n] == '/' && url[n + 1] == '\0'));
}

typedef enum { META, ATTR, DATA, PATHS, FILES, NONE } api_route;

const char *const gateway_route_names[] = {
    [META] = "http_meta",   [ATTR] = "http_attr",   [DATA] = "http_data",
    [PATHS] = "http_paths", [FILES] = "http_files", [NONE] = NULL};

typedef struct {
    api_route api;
    const http_request *req;
    http_response *out;
} route;

/* The route's answer, errors included, is its own. */
static int route_run(void *door, const caller *who, h5ark_error *err) {
    const route *r = door;
    file_access fa = access_of(who);
    switch (r->api) {
    case META: h5grove_meta(r->req, r->out, err); break;
    case ATTR: h5grove_attr(r->req, r->out, err); break;
    case DATA: h5grove_values(r->req, r->out, err); break;
    case PATHS: h5grove_paths(r->req, r->out, err); break;
    default: files(&fa, r->out); break;
    }
    return 0;
}

static void serve(void *arg, const http_request *req, http_response *out) {
    (void)arg;
    h5ark_error err = {0};
    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        out->allow = "GET, HEAD";
        h5ark_fail(&err, H5ARK_BAD_REQUEST, "the gateway only reads: %s is not allowed",
                   req->method);
        http_reply_error(out, &err);
        out->status = 405;
        return;
    }
    const char *url = req->path;
    api_route api = route_is(url, "/meta")    ? META
                    : route_is(url, "/attr")  ? ATTR
                    : route_is(url, "/data")  ? DATA
                    : route_is(url, "/paths") ? PATHS
                    : route_is(url, "/files") ? FILES
                                              : NONE;
    if (api == NONE) {
        static_file(url, out);
        return;
    }
    /* the token from `Authorization: Bearer TOKEN` or the `token` query argument; any
     * valid token will do, the gateway only reads */
    const char *auth = http_header(req, "Authorization");
    const char *token = auth && strncmp(auth, "Bearer ", 7) == 0 ? auth + 7 : NULL;
    if (!token) token = http_query(req, "token");
    route r = {api, req, out};
    /* a request like any other: listed in `status` while it runs, and counted by its
     * route's name and outcome when answered (its answer's body as the reply's bytes) */
    h5ark_value *header = h5ark_value_map();
    if (header && h5ark_value_set(header, "cmd", h5ark_value_str(gateway_route_names[api])))
        h5ark_value_destroy(&header); /* counted as a request without a name */
    request asked = {.header = header, .arrived_ns = metrics_clock()};
    entry_call call = {.req = &asked,
                       .name = gateway_route_names[api],
                       .read_only = true,
                       .ranks = RANKS_ZERO,
                       .token = token,
                       .token_len = token ? strlen(token) : 0,
                       .token_hint =
                           "send 'Authorization: Bearer TOKEN' or the query argument token=TOKEN",
                       .run = route_run,
                       .door = &r};
    /* its caller kept with it from the start, as at every door: its log line names the user */
    if (entry_accept(&asked, token, call.token_len, &err) || entry_run(&call, &err))
        http_reply_error(out, &err);
    h5ark_code outcome = out->status < 400      ? H5ARK_OK
                         : err.code != H5ARK_OK ? err.code
                                                : H5ARK_INTERNAL;
    h5ark_span body = {out->body, out->len};
    entry_answered(&asked, outcome, &(reply){.spans = &body, .nspans = out->body ? 1 : 0});
    entry_done(&asked);
    h5ark_value_destroy(&header);
}

/* The built page: --web-dir, else `web` beside the program (the build tree), else
 * ../share/h5ark/web from it (an installed tree). */
static void find_web_dir(const char *given) {
    char exe[PATH_MAX], candidate[PATH_MAX + 32];
    web_dir[0] = '\0';
    if (given) {
        if (realpath(given, web_dir) == NULL) web_dir[0] = '\0';
        return;
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = '\0';
    const char *tries[] = {"/web", "/../share/h5ark/web"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(candidate, sizeof candidate, "%s%s/index.html", exe, tries[i]);
        if (access(candidate, R_OK) != 0) continue;
        snprintf(candidate, sizeof candidate, "%s%s", exe, tries[i]);
        if (realpath(candidate, web_dir)) return;
        web_dir[0] = '\0';
    }
}

int gateway_start(const char *address, const char *dir, h5ark_error *err) {
    if (!address) return 0;
    find_web_dir(dir);
    if (dir && !web_dir[0])
        return h5ark_fail(err, H5ARK_IO_ERROR, "--web-dir %s: %s", dir, strerror(errno));
    if (http_start(address, serve, NULL, &server, err)) return -1;
    log_info("HTTP gateway on %s, viewer page %s", http_address(server),
             web_dir[0] ? web_dir : "not built");
    return 0;
}

void gateway_stop(void) {
    http_stop(&server);
    h5grove_forget_trees();
}

const char *gateway_address(void) {
    return server ? http_address(server) : NULL;
}
