/* The HTTP gateway: h5grove's API over the data directory (see gateway.h). */
#include "front/gateway.h"

#include "config.h"
#include "dispatch.h"
#include "h5ark_value.h"
#include "front/http.h"
#include "log.h"
#include "objects/object.h"
#include "objects/strings.h"
#include "dist/ranks.h"
#include "dist/ranks_serve.h"
#include "registry.h"
#include "storage/files.h"
#include "storage/sandbox.h"
#include "storage/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The most bytes of values one /data/ request reads from a file: larger arrays are asked
 * for in slices (h5web asks with `selection`), never read whole. */
#define DATA_MAX_BYTES (64u << 20)
/* The most strings (and numbers sent as JSON) one /data/ answer holds. */
#define DATA_MAX_JSON_ELEMS (4u << 20)
#define SELECTION_MAX_LEN   1024
#define LINK_MAX_HOPS       16
#define FILES_MAX           10000 /* /files/ lists at most this many */
#define FILES_MAX_DEPTH     16
#define STATIC_MAX_BYTES    (64u << 20)
#define TREE_CACHE          4 /* files whose listing is kept */

static http_server *server;
static char web_dir[PATH_MAX]; /* empty: no viewer page */

/* ---- replies ------------------------------------------------------------------------- */

static int status_of(h5ark_code code) {
    switch (code) {
    case H5ARK_BAD_REQUEST: return 400;
    case H5ARK_UNAUTHORIZED: return 401;
    case H5ARK_FORBIDDEN: return 403;
    case H5ARK_NOT_FOUND: return 404;
    case H5ARK_RESOURCE_LIMIT: return 413;
    case H5ARK_TYPE_ERROR:
    case H5ARK_SCHEMA_ERROR: return 422;
    case H5ARK_UNKNOWN_COMMAND: return 501; /* not at several ranks yet */
    case H5ARK_BUSY: return 503;
    default: return 500;
    }
}

/* A JSON string from bytes a file or a client supplied: ill-formed UTF-8 becomes '?' (as
 * in every reply of the daemon) so that the JSON stays valid. */
static json_t *jstr(const char *s, size_t n) {
    h5ark_value *v = h5ark_value_strn(s, n);
    json_t *j = v ? json_stringn(v->as.s.ptr, v->as.s.len) : NULL;
    h5ark_value_destroy(&v);
    return j;
}

/* h5grove's error body: {"message": "..."}, with the status the error code maps to. Small:
 * the one body not counted against --max-memory. */
static void reply_error(http_response *out, const h5ark_error *err) {
    json_t *j = json_object();
    if (j) json_object_set_new(j, "message", jstr(err->message, strlen(err->message)));
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    out->status = status_of(err->code);
    out->content_type = "application/json";
    out->body = text;
    out->len = text ? strlen(text) : 0;
}

/* The answer's body, whose `held` bytes are already counted against --max-memory; they stay
 * counted until the body is sent (http.h). Several connections are answered at once: the
 * answers waiting to go out are memory like any other. */
static void set_held_body(http_response *out, int status, const char *type, char *body, size_t len,
                          uint64_t held) {
    out->status = status;
    out->content_type = type;
    out->body = body;
    out->len = len;
    out->release = registry_unreserve;
    out->held = held;
}

/* The same, counting the body now: resource_limit (413) when it would pass the limit. */
static void set_body(http_response *out, int status, const char *type, char *body, size_t len) {
    h5ark_error err = {0};
    if (registry_reserve(len, &err)) {
        free(body);
        reply_error(out, &err);
        return;
    }
    set_held_body(out, status, type, body, len, len);
}

/* Takes j. */
static void reply_json(http_response *out, json_t *j) {
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (text) set_body(out, 200, "application/json", text, strlen(text));
}

/* ---- the file's tree, as lshdf lists it ------------------------------------------------ */

static const char *entry_str(const h5ark_value *e, const char *key) {
    const h5ark_value *v = h5ark_value_get(e, key);
    return v && v->kind == H5ARK_STR ? v->as.s.ptr : NULL;
}

static bool str_is(const char *s, const char *want) {
    return s && strcmp(s, want) == 0;
}

/* A file's listing (lshdf's entries) with an index by path. Kept for the next requests
 * while the file stays the same: h5web asks /meta/, /attr/ and /data/ of one file in turn,
 * and listing a large file costs more than answering. */
typedef struct {
    h5ark_value *entries;
    const h5ark_value **sorted; /* by path */
    size_t n;
    char abs[PATH_MAX];
    struct stat st; /* the file when listed: device, inode, size and times tell a change */
    unsigned refs;  /* the cache's and each request's */
    uint64_t used;
} tree;

static const char *path_of(const h5ark_value *e) {
    const char *p = entry_str(e, "path");
    return p ? p : "";
}

static int by_path(const void *a, const void *b) {
    return strcmp(path_of(*(const h5ark_value *const *)a), path_of(*(const h5ark_value *const *)b));
}

static int find_path(const void *key, const void *e) {
    return strcmp(key, path_of(*(const h5ark_value *const *)e));
}

static const h5ark_value *find_entry(const tree *tr, const char *path) {
    const h5ark_value **e = bsearch(path, tr->sorted, tr->n, sizeof *tr->sorted, find_path);
    return e ? *e : NULL;
}

/* An h5ark object that a group (or an ExeTera field) holds in parts, shown as the one
 * dataset it reads as: Strings as strings, a Categorical as its labels, an ExeTera field
 * as its values. Other composites (DataFrame, SegArray, GroupBy, Index ...) stay groups
 * whose children are their components, each shown as what it is. */
static bool collapsed(const h5ark_value *e) {
    const char *kind = entry_str(e, "kind"), *objtype = entry_str(e, "objtype");
    if (str_is(kind, "field")) return objtype != NULL;
    return str_is(kind, "group") && (str_is(objtype, "strings") || str_is(objtype, "categorical"));
}

static bool shown_as_dataset(const h5ark_value *e) {
    return str_is(entry_str(e, "kind"), "dataset") || collapsed(e);
}

/* What the storage layer reads of a dataset shown: rows of values. */
static bool readable(const h5ark_value *e) {
    const char *objtype = entry_str(e, "objtype");
    return shown_as_dataset(e) && (str_is(objtype, "pdarray") || str_is(objtype, "arrayview") ||
                                   str_is(objtype, "strings") || str_is(objtype, "categorical"));
}

static bool is_string_valued(const h5ark_value *e) {
    const char *objtype = entry_str(e, "objtype"), *dtype = entry_str(e, "dtype");
    return str_is(objtype, "strings") || str_is(objtype, "categorical") || str_is(dtype, "str") ||
           str_is(dtype, "string");
}

/* The parts of a collapsed object are no entities of their own. */
static bool hidden(const tree *tr, const char *path) {
    char prefix[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof prefix) return true;
    memcpy(prefix, path, n + 1);
    for (char *slash = strrchr(prefix, '/'); slash && slash != prefix;
         slash = strrchr(prefix, '/')) {
        *slash = '\0';
        const h5ark_value *e = find_entry(tr, prefix);
        if (e && collapsed(e)) return true;
    }
    return false;
}

static bool is_child(const char *path, const char *parent) {
    size_t n = strcmp(parent, "/") == 0 ? 0 : strlen(parent);
    return strncmp(path, parent, n) == 0 && path[n] == '/' && path[n + 1] &&
           !strchr(path + n + 1, '/');
}

/* A link that the gateway resolves (h5grove's resolve_links=only_valid): a soft link, or a
 * second hard link to an object listed under its first name. External links are never
 * followed (their files may lie anywhere). */
static const char *link_target(const h5ark_value *e) {
    const char *type = entry_str(e, "link_type");
    if (!str_is(entry_str(e, "kind"), "link") || !(str_is(type, "soft") || str_is(type, "hard")))
        return NULL;
    return entry_str(e, "target");
}

/* The path with every soft or hard link along it replaced by its target: what the path
 * names. not_found when nothing does. */
static int resolve_path(const tree *tr, const char *path, char out[PATH_MAX], h5ark_error *err) {
    if (path[0] != '/' || strlen(path) >= PATH_MAX)
        return h5ark_fail(err, H5ARK_NOT_FOUND, "'%s' is not a valid path in the file", path);
    snprintf(out, PATH_MAX, "%s", path);
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
    for (int hops = 0; hops <= LINK_MAX_HOPS; hops++) {
        if (strcmp(out, "/") == 0) return 0;
        bool replaced = false;
        /* the first component (from the root) that is a link */
        for (char *p = out + 1;; p++) {
            if (*p != '/' && *p != '\0') continue;
            char keep = *p;
            *p = '\0';
            const h5ark_value *e = find_entry(tr, out);
            const char *target = e ? link_target(e) : NULL;
            *p = keep;
            if (!e) break;
            if (target) {
                char next[PATH_MAX];
                if (snprintf(next, sizeof next, "%s%s", target, p) >= (int)sizeof next) break;
                snprintf(out, PATH_MAX, "%s", next);
                replaced = true;
                break;
            }
            if (keep == '\0') return hidden(tr, out) ? -1 : 0;
        }
        if (!replaced) break;
    }
    return h5ark_fail(err, H5ARK_NOT_FOUND, "'%s' is not a valid path in the file", path);
}

/* ---- h5grove's metadata -------------------------------------------------------------- */

static json_t *int_type(size_t size, bool is_signed) {
    return json_pack("{s:i, s:i, s:i, s:i}", "class", 0, "size", (int)size, "order", 0, "sign",
                     is_signed ? 1 : 0);
}

/* The HDF5 type h5grove describes, of the values as the gateway sends them: native
 * (little-endian) numbers, h5py's bool enum, variable-length UTF-8 strings. What the daemon
 * does not read is of class -1 (a type h5web does not know). */
static json_t *type_json(const char *dtype, bool strings) {
    if (strings)
        return json_pack("{s:i, s:i, s:i, s:i, s:b}", "class", 3, "size", 16, "cset", 1, "strPad",
                         0, "vlen", 1);
    static const struct {
        const char *name;
        int cls;
        size_t size;
        bool is_signed;
    } num[] = {{"int8", 0, 1, true},    {"int16", 0, 2, true},   {"int32", 0, 4, true},
               {"int64", 0, 8, true},   {"uint8", 0, 1, false},  {"uint16", 0, 2, false},
               {"uint32", 0, 4, false}, {"uint64", 0, 8, false}, {"float32", 1, 4, true},
               {"float64", 1, 8, true}};
    for (size_t i = 0; dtype && i < sizeof num / sizeof num[0]; i++) {
        if (strcmp(dtype, num[i].name) != 0) continue;
        if (num[i].cls == 0) return int_type(num[i].size, num[i].is_signed);
        return json_pack("{s:i, s:i, s:i}", "class", 1, "size", (int)num[i].size, "order", 0);
    }
    if (str_is(dtype, "bool"))
        return json_pack("{s:i, s:i, s:{s:i, s:i}, s:o}", "class", 8, "size", 1, "members", "FALSE",
                         0, "TRUE", 1, "base", int_type(1, true));
    return json_pack("{s:i, s:i}", "class", -1, "size", 0);
}

static json_t *jvalue(const h5ark_value *v) {
    if (!v) return json_null();
    switch (v->kind) {
    case H5ARK_BOOL: return json_boolean(v->as.b);
    case H5ARK_INT: return json_integer(v->as.i);
    case H5ARK_UINT:
        return v->as.u <= INT64_MAX ? json_integer((json_int_t)v->as.u)
                                    : json_real((double)v->as.u);
    case H5ARK_FLOAT: return isfinite(v->as.f) ? json_real(v->as.f) : json_null();
    case H5ARK_STR:
    case H5ARK_BIN: return jstr(v->as.s.ptr, v->as.s.len);
    case H5ARK_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; a && i < v->as.a.len; i++)
            if (json_array_append_new(a, jvalue(v->as.a.items[i]))) {
                json_decref(a);
                a = NULL;
            }
        return a;
    }
    case H5ARK_MAP: {
        json_t *m = json_object();
        for (size_t i = 0; m && i < v->as.m.len; i++)
            if (json_object_set_new(m, v->as.m.keys[i], jvalue(v->as.m.vals[i]))) {
                json_decref(m);
                m = NULL;
            }
        return m;
    }
    default: return json_null();
    }
}

/* An attribute's type as its value (from lshdf) shows it. */
static json_t *value_type(const h5ark_value *v) {
    switch (v ? v->kind : H5ARK_NIL) {
    case H5ARK_BOOL: return type_json("bool", false);
    case H5ARK_INT: return type_json("int64", false);
    case H5ARK_UINT: return type_json(v->as.u <= INT64_MAX ? "int64" : "uint64", false);
    case H5ARK_FLOAT: return type_json("float64", false);
    default: return type_json(NULL, true);
    }
}

static json_t *attributes_json(const h5ark_value *e) {
    json_t *list = json_array();
    const h5ark_value *attrs = e ? h5ark_value_get(e, "attrs") : NULL;
    for (size_t i = 0; list && attrs && attrs->kind == H5ARK_MAP && i < attrs->as.m.len; i++) {
        const h5ark_value *v = attrs->as.m.vals[i];
        bool array = v->kind == H5ARK_ARRAY;
        const h5ark_value *first = array && v->as.a.len ? v->as.a.items[0] : NULL;
        json_t *a = json_pack("{s:o, s:o, s:o}", "name",
                              jstr(attrs->as.m.keys[i], strlen(attrs->as.m.keys[i])), "shape",
                              array ? json_pack("[I]", (json_int_t)v->as.a.len) : json_array(),
                              "type", value_type(array ? first : v));
        if (json_array_append_new(list, a)) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

/* The dataset's shape: lshdf's, or an ExeTera field's rows. */
/* The shape the object reads as: the dataset's, but for an Arkouda ArrayView, whose flat
 * dataset keeps its N-d shape in a `Shape` attribute (used when it holds as many
 * elements). */
static const h5ark_value *shape_of(const h5ark_value *e) {
    const h5ark_value *shape = h5ark_value_get(e, "shape");
    const h5ark_value *attrs = h5ark_value_get(e, "attrs");
    const h5ark_value *logical = attrs ? h5ark_value_get(attrs, "Shape") : NULL;
    if (!str_is(entry_str(e, "objtype"), "arrayview") || !shape || shape->kind != H5ARK_ARRAY ||
        !logical || logical->kind != H5ARK_ARRAY || logical->as.a.len == 0 ||
        logical->as.a.len > OBJECT_MAX_DIMS)
        return shape;
    uint64_t want = 1, have = 1, v;
    for (size_t i = 0; i < shape->as.a.len; i++)
        if (!h5ark_value_to_uint64(shape->as.a.items[i], &v) ||
            __builtin_mul_overflow(want, v, &want))
            return shape;
    for (size_t i = 0; i < logical->as.a.len; i++)
        if (!h5ark_value_to_uint64(logical->as.a.items[i], &v) ||
            __builtin_mul_overflow(have, v, &have))
            return shape;
    return have == want ? logical : shape;
}

static json_t *shape_json(const h5ark_value *e) {
    const h5ark_value *shape = shape_of(e);
    if (shape && shape->kind == H5ARK_ARRAY) return jvalue(shape);
    const h5ark_value *length = h5ark_value_get(e, "length");
    uint64_t n;
    if (length && h5ark_value_to_uint64(length, &n)) return json_pack("[I]", (json_int_t)n);
    return json_array();
}

static json_t *filters_json(const h5ark_value *e) {
    static const char *const ids[] = {NULL,   "gzip", "shuffle",    "fletcher32",
                                      "szip", "nbit", "scaleoffset"};
    const h5ark_value *filters = h5ark_value_get(e, "filters");
    if (!filters || filters->kind != H5ARK_ARRAY || filters->as.a.len == 0) return json_null();
    json_t *list = json_array();
    for (size_t i = 0; list && i < filters->as.a.len; i++) {
        const h5ark_value *f = filters->as.a.items[i];
        const char *name = f->kind == H5ARK_STR ? f->as.s.ptr : "unknown";
        int id = -1;
        for (int k = 1; k < (int)(sizeof ids / sizeof ids[0]); k++)
            if (strcmp(name, ids[k]) == 0) id = k;
        const char *number = strstr(name, "(filter ");
        if (id < 0 && number) id = atoi(number + 8);
        if (json_array_append_new(
                list, json_pack("{s:i, s:o}", "id", id, "name", jstr(name, strlen(name))))) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static json_t *entity_json(const tree *tr, const h5ark_value *e, const char *path, const char *name,
                           bool with_children, int depth);

static json_t *children_json(const tree *tr, const char *path, int depth) {
    json_t *list = json_array();
    for (size_t i = 0; list && i < tr->n; i++) {
        const h5ark_value *c = tr->sorted[i];
        const char *cpath = entry_str(c, "path");
        if (!cpath || !is_child(cpath, path)) continue;
        if (json_array_append_new(list,
                                  entity_json(tr, c, cpath, base_name(cpath), false, depth + 1))) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

/* One entity as h5grove's /meta/ describes it, under `name`; a group lists its children
 * when asked (the entity asked for, not its children's children). */
static json_t *entity_json(const tree *tr, const h5ark_value *e, const char *path, const char *name,
                           bool with_children, int depth) {
    const char *kind = e ? entry_str(e, "kind") : "group";
    const char *target = str_is(kind, "link") ? link_target(e) : NULL;
    const h5ark_value *t = target && depth < LINK_MAX_HOPS ? find_entry(tr, target) : NULL;
    if (t && !hidden(tr, target)) return entity_json(tr, t, target, name, with_children, depth + 1);
    json_t *jname = jstr(name, strlen(name));
    if (str_is(kind, "link")) {
        const char *tpath = entry_str(e, "target") ? entry_str(e, "target") : "";
        if (str_is(entry_str(e, "link_type"), "external")) {
            const char *file = entry_str(e, "file") ? entry_str(e, "file") : "";
            return json_pack("{s:o, s:s, s:o, s:o}", "name", jname, "kind", "external_link",
                             "target_file", jstr(file, strlen(file)), "target_path",
                             jstr(tpath, strlen(tpath)));
        }
        return json_pack("{s:o, s:s, s:o}", "name", jname, "kind", "soft_link", "target_path",
                         jstr(tpath, strlen(tpath)));
    }
    if (e && shown_as_dataset(e)) {
        const h5ark_value *chunks = h5ark_value_get(e, "chunks");
        return json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:o}", "name", jname, "kind", "dataset",
                         "shape", shape_json(e), "type",
                         type_json(entry_str(e, "dtype"), is_string_valued(e)), "chunks",
                         chunks ? jvalue(chunks) : json_null(), "filters", filters_json(e),
                         "attributes", attributes_json(e));
    }
    json_t *g = json_pack("{s:o, s:s, s:o}", "name", jname, "kind", "group", "attributes",
                          attributes_json(e));
    if (g && with_children && json_object_set_new(g, "children", children_json(tr, path, depth))) {
        json_decref(g);
        g = NULL;
    }
    return g;
}

/* ---- requests ------------------------------------------------------------------------ */

/* The token from `Authorization: Bearer TOKEN` or the `token` query argument; any valid
 * token will do, the gateway only reads. */
static int check_token(const http_request *req, h5ark_error *err) {
    if (config.ntokens == 0) return 0;
    const char *auth = http_header(req, "Authorization");
    const char *token = auth && strncmp(auth, "Bearer ", 7) == 0 ? auth + 7 : NULL;
    if (!token) token = http_query(req, "token");
    if (!token)
        return h5ark_fail(err, H5ARK_UNAUTHORIZED,
                          "this daemon requires a token: send 'Authorization: Bearer TOKEN' or "
                          "the query argument token=TOKEN");
    return dispatch_check_token(token, strlen(token), NULL, true, err);
}

/* The request's `file`, confined to the data directory as every client path is. */
static int request_file(const http_request *req, char abs[PATH_MAX], struct stat *st,
                        h5ark_error *err) {
    const char *file = http_query(req, "file");
    if (!file || !file[0])
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "the query argument 'file' (a path in the data directory) is missing");
    if (files_resolve(file, false, abs, err)) return -1;
    if (stat(abs, st) != 0) return h5ark_fail(err, H5ARK_NOT_FOUND, "File not found: '%s'", file);
    if (!S_ISREG(st->st_mode))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is not a file", file);
    return 0;
}

static void tree_free(tree *tr) {
    if (!tr) return;
    h5ark_value_destroy(&tr->entries);
    free(tr->sorted);
    free(tr);
}

/* The file's whole tree, listed in a file probe as lshdf lists it, with the root group and
 * the values of scalar datasets (LIST_VIEW). */
static tree *tree_list(const char *abs, const struct stat *st, h5ark_error *err) {
    tree *tr = calloc(1, sizeof *tr);
    if (tr) tr->entries = h5ark_value_array();
    if (!tr || !tr->entries) {
        tree_free(tr);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    if (sandbox_list(abs, LIST_VIEW, tr->entries, err)) {
        tree_free(tr);
        return NULL;
    }
    tr->n = h5ark_value_len(tr->entries);
    tr->sorted = malloc((tr->n ? tr->n : 1) * sizeof *tr->sorted);
    if (!tr->sorted) {
        tree_free(tr);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < tr->n; i++)
        tr->sorted[i] = h5ark_value_at(tr->entries, i);
    qsort(tr->sorted, tr->n, sizeof *tr->sorted, by_path);
    snprintf(tr->abs, sizeof tr->abs, "%s", abs);
    tr->st = *st;
    return tr;
}

static bool same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static tree *cache[TREE_CACHE];
static uint64_t cache_clock;

static void tree_release(tree *tr) {
    if (!tr) return;
    pthread_mutex_lock(&cache_lock);
    bool last = --tr->refs == 0;
    pthread_mutex_unlock(&cache_lock);
    if (last) tree_free(tr);
}

/* The file's tree: the cached one while the file is unchanged, else listed anew (and
 * cached in place of the least recently used). */
static tree *tree_get(const char *abs, const struct stat *st, h5ark_error *err) {
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < TREE_CACHE; i++) {
        tree *c = cache[i];
        if (c && strcmp(c->abs, abs) == 0 && same_file(&c->st, st)) {
            c->refs++;
            c->used = ++cache_clock;
            pthread_mutex_unlock(&cache_lock);
            return c;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    tree *tr = tree_list(abs, st, err);
    if (!tr) return NULL;
    tr->refs = 2; /* the request's and the cache's */
    pthread_mutex_lock(&cache_lock);
    /* the file's older listing, else a free slot, else the least recently used */
    int slot = -1;
    for (int i = 0; i < TREE_CACHE && slot < 0; i++)
        if (cache[i] && strcmp(cache[i]->abs, abs) == 0) slot = i;
    for (int i = 0; i < TREE_CACHE && slot < 0; i++)
        if (!cache[i]) slot = i;
    if (slot < 0) {
        slot = 0;
        for (int i = 1; i < TREE_CACHE; i++)
            if (cache[i]->used < cache[slot]->used) slot = i;
    }
    tree *old = cache[slot];
    cache[slot] = tr;
    tr->used = ++cache_clock;
    bool last = old && --old->refs == 0;
    pthread_mutex_unlock(&cache_lock);
    if (last) tree_free(old);
    return tr;
}

typedef struct {
    char abs[PATH_MAX];
    tree *tree;
    char path[PATH_MAX]; /* resolved */
    const h5ark_value *entry;
} target;

static int open_target(const http_request *req, target *t, h5ark_error *err) {
    const char *path = http_query(req, "path");
    if (!path || !path[0]) path = "/";
    struct stat st;
    if (request_file(req, t->abs, &st, err)) return -1;
    if (!(t->tree = tree_get(t->abs, &st, err))) return -1;
    if (resolve_path(t->tree, path, t->path, err))
        return h5ark_fail(err, H5ARK_NOT_FOUND, "'%s' is not a valid path in the file", path);
    t->entry = find_entry(t->tree, t->path);
    if (!t->entry) /* the listing always holds the root and every path resolved */
        return h5ark_fail(err, H5ARK_INTERNAL, "'%s' is missing from the file's listing", path);
    return 0;
}

static void meta(const http_request *req, http_response *out, h5ark_error *err) {
    target t = {0};
    if (open_target(req, &t, err)) {
        tree_release(t.tree);
        reply_error(out, err);
        return;
    }
    /* named as asked (a link by its own name), without the trailing slashes */
    char asked[PATH_MAX];
    const char *path = http_query(req, "path");
    snprintf(asked, sizeof asked, "%s", path ? path : "/");
    for (size_t n = strlen(asked); n > 1 && asked[n - 1] == '/'; n--)
        asked[n - 1] = '\0';
    reply_json(out, entity_json(t.tree, t.entry, t.path, base_name(asked), true, 0));
    tree_release(t.tree);
}

static void attr(const http_request *req, http_response *out, h5ark_error *err) {
    target t = {0};
    if (open_target(req, &t, err)) {
        tree_release(t.tree);
        reply_error(out, err);
        return;
    }
    const h5ark_value *attrs = h5ark_value_get(t.entry, "attrs");
    json_t *all = attrs ? jvalue(attrs) : json_object();
    const char *key = http_query(req, "attr_keys");
    if (all && key) { /* one name: h5grove's filter */
        json_t *one = json_object();
        json_t *v = json_object_get(all, key);
        if (one && v) json_object_set(one, key, v);
        json_decref(all);
        all = one;
    }
    reply_json(out, all);
    tree_release(t.tree);
}

static void paths(const http_request *req, http_response *out, h5ark_error *err) {
    target t = {0};
    if (open_target(req, &t, err)) {
        tree_release(t.tree);
        reply_error(out, err);
        return;
    }
    if (shown_as_dataset(t.entry) || str_is(entry_str(t.entry, "kind"), "link")) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is not a group", t.path);
        reply_error(out, err);
        tree_release(t.tree);
        return;
    }
    /* as h5grove: the group itself, then every path below it */
    json_t *list = json_pack("[s]", t.path);
    size_t n = strcmp(t.path, "/") == 0 ? 0 : strlen(t.path);
    for (size_t i = 0; list && i < t.tree->n; i++) {
        const char *p = entry_str(t.tree->sorted[i], "path");
        if (!p || strncmp(p, t.path, n) != 0 || p[n] != '/' || !p[n + 1] || hidden(t.tree, p))
            continue;
        json_array_append_new(list, jstr(p, strlen(p)));
    }
    reply_json(out, list);
    tree_release(t.tree);
}

/* ---- /data/ -------------------------------------------------------------------------- */

typedef struct {
    unsigned ndim;
    uint64_t shape[OBJECT_MAX_DIMS];
    uint64_t start[OBJECT_MAX_DIMS], step[OBJECT_MAX_DIMS], count[OBJECT_MAX_DIMS];
    bool keep[OBJECT_MAX_DIMS]; /* a slice keeps its axis; an index drops it */
} selection;

static int parse_int64(const char *s, size_t n, int64_t *out) {
    char buf[32];
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* One item of NumPy's indexing: "", ":", "I", "A:B" or "A:B:S" (S > 0), as Python clamps
 * slices and wraps negative indices. */
static int parse_item(const char *s, size_t n, unsigned d, selection *sel, h5ark_error *err) {
    int64_t size = (int64_t)sel->shape[d];
    const char *colon = memchr(s, ':', n);
    sel->keep[d] = colon != NULL || n == 0;
    if (!colon && n > 0) {
        int64_t i;
        if (parse_int64(s, n, &i))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "selection: '%.*s' is not an index", (int)n,
                              s);
        if (i < 0) i += size;
        if (i < 0 || i >= size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "selection: index %.*s is out of range for axis %u of size %" PRId64,
                              (int)n, s, d, size);
        sel->start[d] = (uint64_t)i, sel->step[d] = 1, sel->count[d] = 1;
        return 0;
    }
    int64_t v[3] = {0, size, 1};
    const char *p = s, *end = s + n;
    for (int k = 0; k < 3 && p <= end; k++) {
        const char *c = memchr(p, ':', (size_t)(end - p));
        const char *stop = c ? c : end;
        if (stop > p && parse_int64(p, (size_t)(stop - p), &v[k]))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "selection: '%.*s' is not a slice", (int)n,
                              s);
        if (k == 2 && c)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "selection: '%.*s' is not a slice", (int)n,
                              s);
        if (k < 2 && stop > p && v[k] < 0) v[k] = v[k] + size < 0 ? 0 : v[k] + size;
        if (k < 2 && v[k] > size) v[k] = size;
        p = stop + 1;
    }
    if (v[2] <= 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "selection: '%.*s': the step must be a positive number", (int)n, s);
    sel->start[d] = (uint64_t)v[0];
    sel->step[d] = (uint64_t)v[2];
    sel->count[d] = v[1] > v[0] ? (uint64_t)((v[1] - v[0] - 1) / v[2]) + 1 : 0;
    return 0;
}

static int parse_selection(const char *text, selection *sel, h5ark_error *err) {
    for (unsigned d = 0; d < sel->ndim; d++)
        sel->start[d] = 0, sel->step[d] = 1, sel->count[d] = sel->shape[d], sel->keep[d] = true;
    if (!text || !text[0]) return 0;
    if (strlen(text) > SELECTION_MAX_LEN)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "selection: longer than %d characters",
                          SELECTION_MAX_LEN);
    unsigned d = 0;
    for (const char *p = text;; d++) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (d >= sel->ndim)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "selection '%s' has more items than the dataset's %u axes", text,
                              sel->ndim);
        if (parse_item(p, n, d, sel, err)) return -1;
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

static bool next_index(const selection *sel, uint64_t *idx) {
    for (unsigned d = sel->ndim; d-- > 0;) {
        if (++idx[d] < sel->count[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* Element offset (in the rows read, which start at row `lo`) of the selection's idx. */
static uint64_t source_offset(const selection *sel, const uint64_t *idx, uint64_t lo) {
    uint64_t off = 0;
    for (unsigned d = 0; d < sel->ndim; d++) {
        uint64_t i = sel->start[d] + idx[d] * sel->step[d] - (d == 0 ? lo : 0);
        off = off * (d == 0 ? 1 : sel->shape[d]) + i;
    }
    return off;
}

static uint64_t selected_count(const selection *sel) {
    uint64_t n = 1;
    for (unsigned d = 0; d < sel->ndim; d++)
        n *= sel->count[d];
    return n;
}

static unsigned kept_dims(const selection *sel) {
    unsigned k = 0;
    for (unsigned d = 0; d < sel->ndim; d++)
        k += sel->keep[d];
    return k;
}

/* A growing text or byte buffer, its capacity counted against --max-memory (`why` says
 * why it failed to grow). */
typedef struct {
    char *p;
    size_t len, cap;
    bool failed;
    h5ark_error why;
} buf;

static void put_bytes(buf *b, const void *s, size_t n) {
    if (b->failed || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *p = NULL;
        if (registry_reserve(cap - b->cap, &b->why) == 0 && !(p = realloc(b->p, cap))) {
            registry_unreserve(cap - b->cap);
            h5ark_fail(&b->why, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_text(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_text(buf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put_bytes(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* The shortest of %.15g / %.17g (%.6g / %.9g for float32) that reads back as the value;
 * JSON has no NaN or infinity: null, as h5grove writes them. */
static void put_real(buf *b, double v, bool single) {
    if (!isfinite(v)) {
        put_bytes(b, "null", 4);
        return;
    }
    char tmp[40];
    snprintf(tmp, sizeof tmp, single ? "%.6g" : "%.15g", v);
    if (single ? (float)strtod(tmp, NULL) != (float)v : strtod(tmp, NULL) != v)
        snprintf(tmp, sizeof tmp, single ? "%.9g" : "%.17g", v);
    put_bytes(b, tmp, strlen(tmp));
}

static void put_number(buf *b, h5ark_dtype dtype, const void *p) {
    switch (dtype) {
    case H5ARK_INT8: put_text(b, "%d", *(const int8_t *)p); break;
    case H5ARK_INT16: put_text(b, "%d", *(const int16_t *)p); break;
    case H5ARK_INT32: put_text(b, "%" PRId32, *(const int32_t *)p); break;
    case H5ARK_INT64: put_text(b, "%" PRId64, *(const int64_t *)p); break;
    case H5ARK_UINT8: put_text(b, "%u", *(const uint8_t *)p); break;
    case H5ARK_UINT16: put_text(b, "%u", *(const uint16_t *)p); break;
    case H5ARK_UINT32: put_text(b, "%" PRIu32, *(const uint32_t *)p); break;
    case H5ARK_UINT64: put_text(b, "%" PRIu64, *(const uint64_t *)p); break;
    case H5ARK_FLOAT32: put_real(b, *(const float *)p, true); break;
    case H5ARK_FLOAT64: put_real(b, *(const double *)p, false); break;
    case H5ARK_BOOLEAN: put_text(b, "%s", *(const uint8_t *)p ? "true" : "false"); break;
    default: put_bytes(b, "null", 4); break;
    }
}

/* JSON of the selected elements: nested by the axes kept, or flat with `flatten`; an
 * element alone (every axis indexed) is a bare value. elem(k) writes the k-th. */
typedef void (*elem_fn)(buf *b, void *arg, uint64_t k);

static unsigned next_kept(const selection *sel, unsigned d) {
    while (d < sel->ndim && !sel->keep[d])
        d++;
    return d;
}

/* An empty selection of several axes kept, nested as NumPy's tolist() nests it: [[], []]. */
static void put_empty(buf *b, const selection *sel, unsigned d) {
    d = next_kept(sel, d);
    unsigned next = next_kept(sel, d + 1);
    put_bytes(b, "[", 1);
    for (uint64_t i = 0; next < sel->ndim && i < sel->count[d]; i++) {
        if (i) put_bytes(b, ",", 1);
        put_empty(b, sel, next);
    }
    put_bytes(b, "]", 1);
}

/* The JSON elements an answer writes, brackets of empty lists counted. */
static uint64_t json_elements(const selection *sel) {
    uint64_t total = selected_count(sel);
    if (total) return total;
    uint64_t lists = 1;
    for (unsigned d = 0; d < sel->ndim && sel->count[d]; d++)
        if (__builtin_mul_overflow(lists, sel->count[d], &lists)) return UINT64_MAX;
    return lists;
}

static void put_json_elements(buf *b, const selection *sel, bool flatten, elem_fn elem, void *arg) {
    uint64_t total = selected_count(sel);
    unsigned kept = kept_dims(sel);
    if (kept == 0) {
        elem(b, arg, 0);
        return;
    }
    if (total == 0 && !flatten && kept > 1) {
        put_empty(b, sel, 0);
        return;
    }
    if (flatten || kept == 1 || total == 0) {
        put_bytes(b, "[", 1);
        for (uint64_t k = 0; k < total; k++) {
            if (k) put_bytes(b, ",", 1);
            elem(b, arg, k);
        }
        put_bytes(b, "]", 1);
        return;
    }
    uint64_t idx[OBJECT_MAX_DIMS] = {0};
    for (uint64_t k = 0; k < total; k++) {
        if (k) put_bytes(b, ",", 1);
        for (unsigned d = sel->ndim; d-- > 0;) { /* open the axes starting here */
            if (!sel->keep[d]) continue;
            if (idx[d] != 0) break;
            put_bytes(b, "[", 1);
        }
        elem(b, arg, k);
        for (unsigned d = sel->ndim; d-- > 0;) { /* close the axes ending here */
            if (!sel->keep[d]) continue;
            if (idx[d] != sel->count[d] - 1) break;
            put_bytes(b, "]", 1);
        }
        next_index(sel, idx);
    }
}

typedef struct {
    h5ark_dtype dtype;
    size_t itemsize;
    const char *values; /* the selection's elements, contiguous */
    object *obj;        /* strings: the strings read; categorical: its labels' object */
    const object *codes;
    const selection *sel;
    uint64_t lo;
} elements;

static void number_elem(buf *b, void *arg, uint64_t k) {
    const elements *e = arg;
    put_number(b, e->dtype, e->values + k * e->itemsize);
}

/* A string of len bytes as JSON (a NUL in it as \u0000), ill-formed UTF-8 scrubbed. */
static void put_string(buf *b, const char *s, uint64_t len) {
    json_t *j = s ? jstr(s, (size_t)len) : json_null();
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text) {
        b->failed = true;
        return;
    }
    put_bytes(b, text, strlen(text));
    free(text);
}

static uint64_t row_of(const elements *e, uint64_t k) {
    return e->sel->start[0] + k * e->sel->step[0] - e->lo;
}

static void string_elem(buf *b, void *arg, uint64_t k) {
    const elements *e = arg;
    uint64_t len = 0;
    char *s = strings_dup_here(e->obj, row_of(e, k), &len);
    if (!s) b->failed = true;
    put_string(b, s, len);
    free(s);
}

/* A categorical's label: categories[code], null for a code outside them. */
static void label_elem(buf *b, void *arg, uint64_t k) {
    const elements *e = arg;
    const darray *codes = e->codes->values;
    uint64_t row = row_of(e, k);
    int s = darray_shard_of(codes, row);
    int64_t code = ((const int64_t *)codes->shards[s].data)[row - codes->shards[s].start];
    if (code < 0 || (uint64_t)code >= e->obj->size) {
        put_bytes(b, "null", 4);
        return;
    }
    uint64_t len = 0;
    char *label = strings_dup_here(e->obj, (uint64_t)code, &len);
    if (!label) b->failed = true;
    put_string(b, label, len);
    free(label);
}

/* The selected elements of a pdarray or arrayview read as rows [lo, ...), contiguous;
 * *reserved grows by the bytes counted against --max-memory. */
static char *gather(const object *obj, const selection *sel, uint64_t lo, uint64_t *reserved,
                    h5ark_error *err) {
    const darray *a = obj->values;
    uint64_t total = selected_count(sel);
    char *out;
    if (registry_scratch(total * a->itemsize, (void **)&out, reserved, err)) return NULL;
    uint64_t idx[OBJECT_MAX_DIMS] = {0};
    int s = 0;
    for (uint64_t k = 0; k < total; k++, next_index(sel, idx)) {
        uint64_t i = source_offset(sel, idx, lo);
        if (i < a->shards[s].start || i >= a->shards[s].start + a->shards[s].count)
            s = darray_shard_of(a, i);
        memcpy(out + k * a->itemsize,
               (const char *)a->shards[s].data + (i - a->shards[s].start) * a->itemsize,
               a->itemsize);
    }
    return out;
}

static const char *npy_descr(h5ark_dtype dtype) {
    switch (dtype) {
    case H5ARK_INT8: return "|i1";
    case H5ARK_INT16: return "<i2";
    case H5ARK_INT32: return "<i4";
    case H5ARK_INT64: return "<i8";
    case H5ARK_UINT8: return "|u1";
    case H5ARK_UINT16: return "<u2";
    case H5ARK_UINT32: return "<u4";
    case H5ARK_UINT64: return "<u8";
    case H5ARK_FLOAT32: return "<f4";
    case H5ARK_FLOAT64: return "<f8";
    case H5ARK_BOOLEAN: return "|b1";
    default: return NULL;
    }
}

/* NumPy's .npy format 1.0: magic, header length, a dict padded so that the data starts at
 * a multiple of 64. The shape: the axes kept, or one axis with `flatten`. */
static void put_npy_header(buf *b, h5ark_dtype dtype, const selection *sel, bool flatten) {
    char shape[OBJECT_MAX_DIMS * 24 + 8] = "(";
    size_t n = 1;
    unsigned kept = kept_dims(sel);
    if (flatten && kept > 0) {
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%" PRIu64 ",", selected_count(sel));
    } else {
        for (unsigned d = 0, k = 0; d < sel->ndim; d++)
            if (sel->keep[d])
                n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%" PRIu64, k++ ? ", " : "",
                                      sel->count[d]);
        if (kept == 1) shape[n++] = ',';
    }
    snprintf(shape + n, sizeof shape - n, ")");
    char header[sizeof shape + 128];
    int len =
        snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                 npy_descr(dtype), shape);
    size_t pad = (64 - (10 + (size_t)len + 1) % 64) % 64;
    uint16_t hlen = (uint16_t)((size_t)len + pad + 1);
    unsigned char le[2] = {(unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    put_bytes(b, "\x93NUMPY\x01\x00", 8);
    put_bytes(b, le, 2);
    put_bytes(b, header, (size_t)len);
    for (size_t i = 0; i < pad; i++)
        put_bytes(b, " ", 1);
    put_bytes(b, "\n", 1);
}

static int parse_shape(const h5ark_value *e, selection *sel, h5ark_error *err) {
    const h5ark_value *shape = shape_of(e);
    const h5ark_value *length = h5ark_value_get(e, "length");
    uint64_t n;
    if (shape && shape->kind == H5ARK_ARRAY) {
        if (shape->as.a.len == 0 || shape->as.a.len > OBJECT_MAX_DIMS)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "h5ark reads arrays of 1 to %d axes, and this dataset has %zu",
                              OBJECT_MAX_DIMS, shape->as.a.len);
        sel->ndim = (unsigned)shape->as.a.len;
        for (unsigned d = 0; d < sel->ndim; d++)
            if (!h5ark_value_to_uint64(shape->as.a.items[d], &sel->shape[d]) ||
                sel->shape[d] > OBJECT_MAX_ELEMENTS)
                return h5ark_fail(err, H5ARK_TYPE_ERROR,
                                  "the dataset's axes must be numbers of at most 2^48");
        return 0;
    }
    if (length && h5ark_value_to_uint64(length, &n)) {
        sel->ndim = 1;
        sel->shape[0] = n;
        return 0;
    }
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "the dataset has no shape h5ark reads");
}

/* Whether a request may read rows [lo, lo + rows) of `row` elements each (itemsize bytes;
 * 0 for strings: the file's average) and answer its selection: resource_limit past the
 * bytes one request may read or the elements one JSON answer may hold. */
static int check_size(const target *t, const selection *sel, uint64_t itemsize, uint64_t rows,
                      uint64_t row, bool json, h5ark_error *err) {
    uint64_t item = itemsize ? itemsize : 8, stored, elems = 1, bytes;
    const h5ark_value *sb = h5ark_value_get(t->entry, "storage_bytes");
    for (unsigned d = 0; d < sel->ndim; d++)
        elems = __builtin_mul_overflow(elems, sel->shape[d], &elems) ? UINT64_MAX : elems;
    if (!itemsize && sb && h5ark_value_to_uint64(sb, &stored) && elems) item = stored / elems + 1;
    if (__builtin_mul_overflow(rows, row, &bytes) || __builtin_mul_overflow(bytes, item, &bytes) ||
        bytes > DATA_MAX_BYTES)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "'%s': the selection reads %" PRIu64 " rows of %" PRIu64
                          " elements, more than the %u MiB one request may read: ask for a "
                          "slice (selection=START:STOP)",
                          t->path, rows, row, DATA_MAX_BYTES >> 20);
    uint64_t n = json_elements(sel);
    if ((json || !itemsize) && n > DATA_MAX_JSON_ELEMS)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "'%s': %" PRIu64 " elements are more than the %u one JSON answer may "
                          "hold: ask for a slice or format=bin",
                          t->path, n, DATA_MAX_JSON_ELEMS);
    return 0;
}

/* The header rank 0 forwards for the gateway's read at several ranks (gateway_read). */
static h5ark_value *read_header(const target *t, uint64_t lo, uint64_t hi) {
    h5ark_value *h = h5ark_value_map(), *args = h5ark_value_map();
    h5ark_value_set(h, "v", h5ark_value_uint(H5ARK_PROTOCOL_VERSION));
    h5ark_value_set(h, "cmd", h5ark_value_str("gateway_read"));
    h5ark_value_set(args, "path", h5ark_value_str(t->abs));
    h5ark_value_set(args, "dataset", h5ark_value_str(t->path + 1));
    h5ark_value_set(args, "start", h5ark_value_uint(lo));
    h5ark_value_set(args, "stop", h5ark_value_uint(hi));
    if (h5ark_value_len(args) != 4 || h5ark_value_set(h, "args", args) != 0)
        h5ark_value_destroy(&args);
    if (h5ark_value_len(h) != 3) h5ark_value_destroy(&h);
    return h;
}

/* Rows [lo, hi) of the dataset, read through the storage layer as readhdf reads them, and
 * checked to be the array the listing describes (rows of `row` elements). At several ranks
 * every rank reads its part, as a request that runs everywhere, and rank 0 gathers them
 * (*whole, which the answer is made from). */
static object *read_rows(const target *t, uint64_t lo, uint64_t hi, uint64_t row,
                         storage_read_item **items, size_t *nitems, object **whole,
                         h5ark_error *err) {
    int rc;
    if (ranks_count() > 1) {
        h5ark_value *h = read_header(t, lo, hi);
        uint64_t seq = 0;
        rc = !h ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
                : ranks_serve_begin("gateway_read", RANKS_EVERY, true, h, &seq, err);
        h5ark_value_destroy(&h);
        if (rc == 0) {
            rc = storage_read_rows(t->abs, t->path + 1, lo, hi, items, nitems, whole, err);
            ranks_serve_end(seq, &rc, err);
        }
    } else {
        rc = storage_read_rows(t->abs, t->path + 1, lo, hi, items, nitems, whole, err);
    }
    if (rc) return NULL;
    object *obj = *whole ? *whole : *nitems == 1 ? (*items)[0].obj : NULL;
    bool fits = false;
    if (obj && obj->objtype == H5ARK_CATEGORICAL)
        fits = obj->size == hi - lo && object_component_get(obj, "codes") &&
               object_component_get(obj, "categories");
    else if (obj && obj->objtype == H5ARK_STRINGS)
        fits = obj->size == hi - lo;
    else if (obj && (obj->objtype == H5ARK_PDARRAY || obj->objtype == H5ARK_ARRAYVIEW))
        fits = obj->values && obj->dtype != H5ARK_BIGINT && obj->values->size == (hi - lo) * row;
    if (!fits) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' did not read as the array it is listed as",
                   t->path);
        return NULL;
    }
    return obj;
}

static bool is_scalar(const h5ark_value *e) {
    const h5ark_value *shape = h5ark_value_get(e, "shape");
    return str_is(entry_str(e, "kind"), "dataset") && shape && shape->kind == H5ARK_ARRAY &&
           shape->as.a.len == 0;
}

/* A scalar's value as one element of dtype, native (little-endian) as the gateway sends
 * every number; false for a value or dtype it cannot be. */
static bool scalar_element(const h5ark_value *v, h5ark_dtype dt, void *out) {
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0;
    if (v->kind == H5ARK_BOOL)
        i = v->as.b, u = v->as.b, f = v->as.b;
    else if (!h5ark_value_to_double(v, &f))
        return false;
    if (v->kind != H5ARK_BOOL && !h5ark_value_to_int64(v, &i)) i = (int64_t)f;
    if (v->kind != H5ARK_BOOL && !h5ark_value_to_uint64(v, &u)) u = (uint64_t)i;
    union {
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        float f32;
        double f64;
    } e;
    switch (dt) {
    case H5ARK_INT8: e.i8 = (int8_t)i; break;
    case H5ARK_INT16: e.i16 = (int16_t)i; break;
    case H5ARK_INT32: e.i32 = (int32_t)i; break;
    case H5ARK_INT64: e.i64 = i; break;
    case H5ARK_UINT8: e.u8 = (uint8_t)u; break;
    case H5ARK_UINT16: e.u16 = (uint16_t)u; break;
    case H5ARK_UINT32: e.u32 = (uint32_t)u; break;
    case H5ARK_UINT64: e.u64 = u; break;
    case H5ARK_FLOAT32: e.f32 = (float)f; break;
    case H5ARK_FLOAT64: e.f64 = f; break;
    case H5ARK_BOOLEAN: e.u8 = f != 0; break;
    default: return false;
    }
    memcpy(out, &e, h5ark_dtype_size(dt));
    return true;
}

/* A scalar dataset: its value from the listing (LIST_VIEW), answered as h5grove answers
 * one: a bare JSON value, the element's bytes (a string's bytes as stored), or a .npy of
 * shape () (numbers only). */
static int scalar_answer(const target *t, const char *format, const char *asked, buf *b,
                         h5ark_error *err) {
    const h5ark_value *v = h5ark_value_get(t->entry, "value");
    const h5ark_value *bytes = h5ark_value_get(t->entry, "value_bytes");
    const char *why = entry_str(t->entry, "value_error"), *dtname = entry_str(t->entry, "dtype");
    uint64_t n = 0;
    if (asked && asked[0])
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is a scalar: it takes no selection",
                          t->path);
    if (bytes && h5ark_value_to_uint64(bytes, &n))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "'%s' is a string of %" PRIu64 " bytes, more than the %u MiB the "
                          "gateway reads of a scalar",
                          t->path, n, STORAGE_SCALAR_MAX_BYTES >> 20);
    if (why) return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "cannot read '%s': %s", t->path, why);
    if (v && is_string_valued(t->entry) && (v->kind == H5ARK_STR || v->kind == H5ARK_BIN)) {
        if (strcmp(format, "npy") == 0)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "'%s' holds a string: npy is for numbers (json or bin)", t->path);
        if (strcmp(format, "bin") == 0)
            put_bytes(b, v->as.s.ptr, v->as.s.len);
        else
            put_string(b, v->as.s.ptr, v->as.s.len);
        return 0;
    }
    h5ark_dtype dt;
    unsigned char elem[8];
    if (!v || !dtname || !h5ark_dtype_from_name(dtname, &dt) || !npy_descr(dt) ||
        !scalar_element(v, dt, elem))
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "'%s': a scalar of a type h5ark does not read (%s)", t->path,
                          dtname ? dtname : "unknown");
    if (strcmp(format, "json") == 0) {
        put_number(b, dt, elem);
        return 0;
    }
    selection none = {0}; /* no axes: shape () */
    if (strcmp(format, "npy") == 0) put_npy_header(b, dt, &none, false);
    put_bytes(b, elem, h5ark_dtype_size(dt));
    return 0;
}

/* The selected values of an array dataset, read through the storage layer. */
static int array_answer(const http_request *req, const target *t, const char *format, bool flatten,
                        buf *b, h5ark_error *err) {
    if (!readable(t->entry)) {
        const char *note = entry_str(t->entry, "note");
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s': %s", t->path,
                          note ? note : "not an object h5ark reads");
    }
    selection sel = {0};
    if (parse_shape(t->entry, &sel, err) ||
        parse_selection(http_query(req, "selection"), &sel, err))
        return -1;
    bool strings = is_string_valued(t->entry);
    if (strings && strcmp(format, "json") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "'%s' holds strings, which the gateway sends as json", t->path);
    uint64_t total = selected_count(&sel), row = 1;
    for (unsigned d = 1; d < sel.ndim; d++)
        row = __builtin_mul_overflow(row, sel.shape[d], &row) ? UINT64_MAX : row;
    /* rows [lo, hi) hold the selection: only those are read */
    uint64_t lo = sel.start[0], hi = sel.count[0] ? lo + (sel.count[0] - 1) * sel.step[0] + 1 : lo;
    h5ark_dtype listed = H5ARK_FLOAT64;
    const char *dtname = entry_str(t->entry, "dtype");
    if (!strings && dtname) h5ark_dtype_from_name(dtname, &listed);
    bool json = strcmp(format, "json") == 0;
    if (check_size(t, &sel, strings ? 0 : h5ark_dtype_size(listed), hi - lo, row, json, err))
        return -1;
    storage_read_item *items = NULL;
    size_t nitems = 0;
    object *whole = NULL, *obj = NULL;
    char *values = NULL;
    uint64_t reserved = 0;
    int rc = -1;
    if (total > 0 && !(obj = read_rows(t, lo, hi, row, &items, &nitems, &whole, err))) goto done;
    elements el = {.sel = &sel, .lo = lo};
    if (!obj && strings) {
        put_json_elements(b, &sel, flatten, string_elem, &el);
    } else if (strings) {
        el.obj = obj;
        if (obj->objtype == H5ARK_CATEGORICAL) {
            el.codes = object_component_get(obj, "codes");
            el.obj = object_component_get(obj, "categories");
        }
        put_json_elements(b, &sel, flatten,
                          obj->objtype == H5ARK_CATEGORICAL ? label_elem : string_elem, &el);
    } else {
        h5ark_dtype dt = obj ? obj->dtype : listed;
        el.dtype = dt;
        el.itemsize = h5ark_dtype_size(dt);
        if (obj && !(values = gather(obj, &sel, lo, &reserved, err))) goto done;
        el.values = values;
        if (json) {
            put_json_elements(b, &sel, flatten, number_elem, &el);
        } else {
            if (strcmp(format, "npy") == 0) put_npy_header(b, dt, &sel, flatten);
            if (total) put_bytes(b, values, total * el.itemsize);
        }
    }
    rc = 0;
done:
    free(values);
    registry_unreserve(reserved);
    object_whole_free(whole);
    storage_read_items_free(items, nitems);
    return rc;
}

static void data(const http_request *req, http_response *out, h5ark_error *err) {
    target t = {0};
    buf b = {0};
    const char *format = http_query(req, "format"), *dtype = http_query(req, "dtype");
    const char *flat = http_query(req, "flatten");
    bool flatten =
        flat && (strcmp(flat, "true") == 0 || strcmp(flat, "True") == 0 || strcmp(flat, "1") == 0);
    if (!format) format = "json";
    if (strcmp(format, "json") != 0 && strcmp(format, "bin") != 0 && strcmp(format, "npy") != 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "format '%s': the gateway writes json, bin or npy",
                   format);
        goto fail;
    }
    /* every type the daemon reads is one h5grove's "safe" conversion keeps */
    if (dtype && strcmp(dtype, "origin") != 0 && strcmp(dtype, "safe") != 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "dtype '%s': origin or safe", dtype);
        goto fail;
    }
    if (open_target(req, &t, err)) goto fail;
    if (!shown_as_dataset(t.entry)) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is not a dataset", t.path);
        goto fail;
    }
    if (is_scalar(t.entry) ? scalar_answer(&t, format, http_query(req, "selection"), &b, err)
                           : array_answer(req, &t, format, flatten, &b, err))
        goto fail;
    if (b.failed) {
        if (b.why.code)
            *err = b.why;
        else
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto fail;
    }
    /* (an empty answer has no buffer: an empty body) */
    set_held_body(out, 200,
                  strcmp(format, "json") == 0 ? "application/json" : "application/octet-stream",
                  b.p, b.len, b.cap);
    b.p = NULL;
    b.cap = 0;
    goto done;
fail:
    reply_error(out, err);
done:
    free(b.p);
    registry_unreserve(b.cap);
    tree_release(t.tree);
}

/* ---- /files/: the data directory ---------------------------------------------------- */

static int by_str(const void *a, const void *b) {
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* Regular files below dir (rel: their path from the data directory), depth first; hidden
 * names (temporaries, twins) and symbolic links are left out. */
static void walk(const char *dir, const char *rel, int depth, json_t *list) {
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
        if (S_ISDIR(st.st_mode) && depth < FILES_MAX_DEPTH)
            walk(path, sub, depth + 1, list);
        else if (S_ISREG(st.st_mode))
            json_array_append_new(list, jstr(sub, strlen(sub)));
    }
    closedir(d);
}

static void files(http_response *out) {
    json_t *list = json_array();
    if (list) walk(config.data_dir, "", 0, list);
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
    reply_json(out, list);
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
            set_body(out, root ? 200 : 404,
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
    set_body(out, 200, content_type(rel), body, got);
}

/* ---- routing ------------------------------------------------------------------------- */

static bool route_is(const char *url, const char *name) {
    size_t n = strlen(name);
    return strncmp(url, name, n) == 0 && (url[n] == '\0' || (url[n] == '/' && url[n + 1] == '\0'));
}

static void serve(void *arg, const http_request *req, http_response *out) {
    (void)arg;
    h5ark_error err = {0};
    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        out->allow = "GET, HEAD";
        h5ark_fail(&err, H5ARK_BAD_REQUEST, "the gateway only reads: %s is not allowed",
                   req->method);
        reply_error(out, &err);
        out->status = 405;
        return;
    }
    const char *url = req->path;
    enum { NONE, META, ATTR, DATA, PATHS, FILES } api = NONE;
    api = route_is(url, "/meta")    ? META
          : route_is(url, "/attr")  ? ATTR
          : route_is(url, "/data")  ? DATA
          : route_is(url, "/paths") ? PATHS
          : route_is(url, "/files") ? FILES
                                    : NONE;
    if (api == NONE) {
        static_file(url, out);
        return;
    }
    if (check_token(req, &err)) {
        reply_error(out, &err);
        return;
    }
    switch (api) {
    case META: meta(req, out, &err); break;
    case ATTR: attr(req, out, &err); break;
    case DATA: data(req, out, &err); break;
    case PATHS: paths(req, out, &err); break;
    default: files(out); break;
    }
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
    for (int i = 0; i < TREE_CACHE; i++) {
        tree_release(cache[i]);
        cache[i] = NULL;
    }
}

const char *gateway_address(void) {
    return server ? http_address(server) : NULL;
}
