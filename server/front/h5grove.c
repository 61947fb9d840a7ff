/* h5grove's routes over a file's tree: /meta/, /attr/, /paths/ (see h5grove.h). */
#include "front/h5grove.h"

#include "access.h"
#include "storage/files.h"
#include "storage/sandbox.h"
#include "storage/storage.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LINK_MAX_HOPS 16
#define TREE_CACHE    4 /* files whose listing is kept */

/* ---- the file's tree, as lshdf lists it ------------------------------------------------ */

const char *listed_str(const h5ark_value *e, const char *key) {
    const h5ark_value *v = h5ark_value_get(e, key);
    return v && v->kind == H5ARK_STR ? v->as.s.ptr : NULL;
}

/* A file's listing (lshdf's entries) with an index by path. Kept for the next requests
 * while the file stays the same: h5web asks /meta/, /attr/ and /data/ of one file in turn,
 * and listing a large file costs more than answering. */
struct tree {
    h5ark_value *entries;
    const h5ark_value **sorted; /* by path */
    size_t n;
    char abs[PATH_MAX];
    struct stat st; /* the file when listed: device, inode, size and times tell a change */
    unsigned refs;  /* the cache's and each request's */
    uint64_t used;
};

static const char *path_of(const h5ark_value *e) {
    const char *p = listed_str(e, "path");
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
    const char *kind = listed_str(e, "kind"), *objtype = listed_str(e, "objtype");
    if (str_is(kind, "field")) return objtype != NULL;
    return str_is(kind, "group") && (str_is(objtype, "strings") || str_is(objtype, "categorical"));
}

bool h5grove_shown_as_dataset(const h5ark_value *e) {
    return str_is(listed_str(e, "kind"), "dataset") || collapsed(e);
}

/* What the storage layer reads of a dataset shown: rows of values. */
bool h5grove_readable(const h5ark_value *e) {
    const char *objtype = listed_str(e, "objtype");
    return h5grove_shown_as_dataset(e) &&
           (str_is(objtype, "pdarray") || str_is(objtype, "arrayview") ||
            str_is(objtype, "strings") || str_is(objtype, "categorical"));
}

bool h5grove_string_valued(const h5ark_value *e) {
    const char *objtype = listed_str(e, "objtype"), *dtype = listed_str(e, "dtype");
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
    const char *type = listed_str(e, "link_type");
    if (!str_is(listed_str(e, "kind"), "link") || !(str_is(type, "soft") || str_is(type, "hard")))
        return NULL;
    return listed_str(e, "target");
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
    case H5ARK_BIN: return http_json_str(v->as.s.ptr, v->as.s.len);
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
        json_t *a =
            json_pack("{s:o, s:o, s:o}", "name",
                      http_json_str(attrs->as.m.keys[i], strlen(attrs->as.m.keys[i])), "shape",
                      array ? json_pack("[I]", (json_int_t)v->as.a.len) : json_array(), "type",
                      value_type(array ? first : v));
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
const h5ark_value *h5grove_shape(const h5ark_value *e) {
    const h5ark_value *shape = h5ark_value_get(e, "shape");
    const h5ark_value *attrs = h5ark_value_get(e, "attrs");
    const h5ark_value *logical = attrs ? h5ark_value_get(attrs, "Shape") : NULL;
    if (!str_is(listed_str(e, "objtype"), "arrayview") || !shape || shape->kind != H5ARK_ARRAY ||
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
    const h5ark_value *shape = h5grove_shape(e);
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
        if (json_array_append_new(list, json_pack("{s:i, s:o}", "id", id, "name",
                                                  http_json_str(name, strlen(name))))) {
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
        const char *cpath = listed_str(c, "path");
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
    const char *kind = e ? listed_str(e, "kind") : "group";
    const char *target = str_is(kind, "link") ? link_target(e) : NULL;
    const h5ark_value *t = target && depth < LINK_MAX_HOPS ? find_entry(tr, target) : NULL;
    if (t && !hidden(tr, target)) return entity_json(tr, t, target, name, with_children, depth + 1);
    json_t *jname = http_json_str(name, strlen(name));
    if (str_is(kind, "link")) {
        const char *tpath = listed_str(e, "target") ? listed_str(e, "target") : "";
        if (str_is(listed_str(e, "link_type"), "external")) {
            const char *file = listed_str(e, "file") ? listed_str(e, "file") : "";
            return json_pack("{s:o, s:s, s:o, s:o}", "name", jname, "kind", "external_link",
                             "target_file", http_json_str(file, strlen(file)), "target_path",
                             http_json_str(tpath, strlen(tpath)));
        }
        return json_pack("{s:o, s:s, s:o}", "name", jname, "kind", "soft_link", "target_path",
                         http_json_str(tpath, strlen(tpath)));
    }
    if (e && h5grove_shown_as_dataset(e)) {
        const h5ark_value *chunks = h5ark_value_get(e, "chunks");
        return json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:o}", "name", jname, "kind", "dataset",
                         "shape", shape_json(e), "type",
                         type_json(listed_str(e, "dtype"), h5grove_string_valued(e)), "chunks",
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

/* The request's `file`, confined to the data directory and checked for the token's user
 * as every client path is. */
static int request_file(const http_request *req, char abs[PATH_MAX], struct stat *st,
                        h5ark_error *err) {
    const char *file = http_query(req, "file");
    if (!file || !file[0])
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "the query argument 'file' (a path in the data directory) is missing");
    file_access fa = access_here();
    if (files_resolve(&fa, PERM_READ, file, false, abs, err)) return -1;
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

void h5grove_tree_release(tree *tr) {
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

int h5grove_open(const http_request *req, target *t, h5ark_error *err) {
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

void h5grove_meta(const http_request *req, http_response *out, h5ark_error *err) {
    target t = {0};
    if (h5grove_open(req, &t, err)) {
        h5grove_tree_release(t.tree);
        http_reply_error(out, err);
        return;
    }
    /* named as asked (a link by its own name), without the trailing slashes */
    char asked[PATH_MAX];
    const char *path = http_query(req, "path");
    snprintf(asked, sizeof asked, "%s", path ? path : "/");
    for (size_t n = strlen(asked); n > 1 && asked[n - 1] == '/'; n--)
        asked[n - 1] = '\0';
    http_reply_json(out, entity_json(t.tree, t.entry, t.path, base_name(asked), true, 0));
    h5grove_tree_release(t.tree);
}

void h5grove_attr(const http_request *req, http_response *out, h5ark_error *err) {
    target t = {0};
    if (h5grove_open(req, &t, err)) {
        h5grove_tree_release(t.tree);
        http_reply_error(out, err);
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
    http_reply_json(out, all);
    h5grove_tree_release(t.tree);
}

void h5grove_paths(const http_request *req, http_response *out, h5ark_error *err) {
    target t = {0};
    if (h5grove_open(req, &t, err)) {
        h5grove_tree_release(t.tree);
        http_reply_error(out, err);
        return;
    }
    if (h5grove_shown_as_dataset(t.entry) || str_is(listed_str(t.entry, "kind"), "link")) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is not a group", t.path);
        http_reply_error(out, err);
        h5grove_tree_release(t.tree);
        return;
    }
    /* as h5grove: the group itself, then every path below it */
    json_t *list = json_pack("[s]", t.path);
    size_t n = strcmp(t.path, "/") == 0 ? 0 : strlen(t.path);
    for (size_t i = 0; list && i < t.tree->n; i++) {
        const char *p = listed_str(t.tree->sorted[i], "path");
        if (!p || strncmp(p, t.path, n) != 0 || p[n] != '/' || !p[n + 1] || hidden(t.tree, p))
            continue;
        json_array_append_new(list, http_json_str(p, strlen(p)));
    }
    http_reply_json(out, list);
    h5grove_tree_release(t.tree);
}

void h5grove_forget_trees(void) {
    for (int i = 0; i < TREE_CACHE; i++) {
        h5grove_tree_release(cache[i]);
        cache[i] = NULL;
    }
}
