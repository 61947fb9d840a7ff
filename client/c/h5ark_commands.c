/* libh5ark: one typed helper per daemon command, built on h5ark_client_request. */
#include "h5ark.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Arrays travel little-endian; the client hands the caller's memory to the wire as is. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libh5ark sends host memory as the little-endian wire format"
#endif

static int oom(h5ark_error *err) {
    return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

static h5ark_value *str_array(const char *const *items, size_t count) {
    h5ark_value *a = h5ark_value_array();
    for (size_t i = 0; a && i < count; i++)
        if (!items[i] || h5ark_value_push(a, h5ark_value_str(items[i])) != 0)
            h5ark_value_destroy(&a);
    return a;
}

/* Run cmd and hand back (a copy of) one key of its result, or the whole result when key is
 * NULL. `out` may be NULL. */
static int call(h5ark_client_t *self, const char *cmd, h5ark_value *args,
                const h5ark_buffer_in *bufs, size_t nbufs, const char *key, h5ark_value **out,
                h5ark_error *err) {
    if (out) *out = NULL;
    h5ark_reply_t *reply = NULL;
    if (h5ark_client_request(self, cmd, args, bufs, nbufs, &reply, err) != 0) {
        h5ark_reply_destroy(&reply);
        return -1;
    }
    int rc = 0;
    if (out) {
        const h5ark_value *result = h5ark_reply_result(reply);
        const h5ark_value *v = key ? h5ark_value_get(result, key) : result;
        if (!v) {
            rc = h5ark_fail(err, H5ARK_INTERNAL, "%s: the reply has no result%s%s", cmd,
                            key ? " key " : "", key ? key : "");
        } else if (!(*out = h5ark_value_copy(v))) {
            rc = oom(err);
        }
    }
    h5ark_reply_destroy(&reply);
    return rc;
}

int h5ark_client_ping(h5ark_client_t *self, double *rtt_seconds, h5ark_error *err) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (call(self, "ping", NULL, NULL, 0, NULL, NULL, err)) return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rtt_seconds)
        *rtt_seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    return 0;
}

int h5ark_client_getconfig(h5ark_client_t *self, h5ark_value **config, h5ark_error *err) {
    return call(self, "getconfig", NULL, NULL, 0, NULL, config, err);
}

int h5ark_client_whoami(h5ark_client_t *self, h5ark_value **me, h5ark_error *err) {
    return call(self, "whoami", NULL, NULL, 0, NULL, me, err);
}

int h5ark_client_reload(h5ark_client_t *self, h5ark_value **result, h5ark_error *err) {
    return call(self, "reload", NULL, NULL, 0, NULL, result, err);
}

int h5ark_client_status(h5ark_client_t *self, const char *client, h5ark_value **requests,
                        h5ark_error *err) {
    h5ark_value *args = NULL;
    if (client) {
        args = h5ark_value_map();
        if (h5ark_value_set(args, "client", h5ark_value_str(client)) != 0) {
            h5ark_value_destroy(&args);
            return oom(err);
        }
    }
    return call(self, "status", args, NULL, 0, "requests", requests, err);
}

int h5ark_client_info(h5ark_client_t *self, const char *const *names, size_t count,
                      h5ark_value **objects, h5ark_error *err) {
    h5ark_value *args = NULL;
    if (count) {
        args = h5ark_value_map();
        if (h5ark_value_set(args, "names", str_array(names, count)) != 0) {
            h5ark_value_destroy(&args);
            return oom(err);
        }
    }
    return call(self, "info", args, NULL, 0, "objects", objects, err);
}

int h5ark_client_delete(h5ark_client_t *self, const char *const *names, size_t count,
                        h5ark_value **deleted, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (h5ark_value_set(args, "names", str_array(names, count)) != 0) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "delete", args, NULL, 0, "deleted", deleted, err);
}

int h5ark_client_clear(h5ark_client_t *self, uint64_t *deleted, h5ark_error *err) {
    h5ark_value *n = NULL;
    if (call(self, "clear", NULL, NULL, 0, "deleted", &n, err)) return -1;
    uint64_t u = 0;
    bool ok = h5ark_value_to_uint64(n, &u);
    h5ark_value_destroy(&n);
    if (!ok) return h5ark_fail(err, H5ARK_INTERNAL, "clear: 'deleted' is not a count");
    if (deleted) *deleted = u;
    return 0;
}

int h5ark_client_share(h5ark_client_t *self, const char *const *names, size_t count,
                       const char *const *with, size_t nwith, bool share, h5ark_value **grants,
                       h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (h5ark_value_set(args, "names", str_array(names, count)) != 0 ||
        h5ark_value_set(args, "with", str_array(with, nwith)) != 0) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, share ? "share" : "unshare", args, NULL, 0, "grants", grants, err);
}

/* getacl {path} or setacl {path, acl}: the answer's `key` (NULL: all of it) into *out. */
static int acl_call(h5ark_client_t *self, const char *cmd, const char *path, const h5ark_value *acl,
                    const char *key, h5ark_value **out, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (h5ark_value_set(args, "path", h5ark_value_str(path)) != 0 ||
        (acl && h5ark_value_set(args, "acl", h5ark_value_copy(acl)) != 0)) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, cmd, args, NULL, 0, key, out, err);
}

int h5ark_client_getacl(h5ark_client_t *self, const char *path, h5ark_value **result,
                        h5ark_error *err) {
    return acl_call(self, "getacl", path, NULL, NULL, result, err);
}

int h5ark_client_setacl(h5ark_client_t *self, const char *path, const h5ark_value *acl,
                        h5ark_value **written, h5ark_error *err) {
    if (!acl) return h5ark_fail(err, H5ARK_BAD_REQUEST, "setacl: no ACL given");
    return acl_call(self, "setacl", path, acl, "acl", written, err);
}

int h5ark_client_shutdown(h5ark_client_t *self, h5ark_error *err) {
    return call(self, "shutdown", NULL, NULL, 0, NULL, NULL, err);
}

/* ---- numbers ------------------------------------------------------------------------- */

bool h5ark_number_parse(const char *text, h5ark_number *out) {
    memset(out, 0, sizeof *out);
    if (!text || !*text) return false;
    if (strcasecmp(text, "true") == 0 || strcasecmp(text, "false") == 0) {
        out->kind = H5ARK_NUM_BOOL;
        out->as.b = (text[0] == 't' || text[0] == 'T');
        return true;
    }
    const char *digits = text[0] == '-' || text[0] == '+' ? text + 1 : text;
    int base = (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) ? 16 : 10;
    char *end;
    if (digits[0] >= '0' && digits[0] <= '9') {
        errno = 0;
        if (text[0] == '-') {
            long long v = strtoll(text, &end, base);
            if (!*end && errno == 0) {
                out->kind = H5ARK_NUM_INT;
                out->as.i = v;
                return true;
            }
        } else {
            unsigned long long v = strtoull(text, &end, base);
            if (!*end && errno == 0) {
                out->kind = H5ARK_NUM_UINT;
                out->as.u = v;
                return true;
            }
        }
        if (!*end && errno == ERANGE) return false; /* an integer too large for 64 bits */
    }
    errno = 0;
    double f = strtod(text, &end);
    if (*end || end == text) return false;
    out->kind = H5ARK_NUM_FLOAT;
    out->as.f = f;
    return true;
}

static h5ark_value *number_value(const h5ark_number *n) {
    switch (n->kind) {
    case H5ARK_NUM_BOOL: return h5ark_value_bool(n->as.b);
    case H5ARK_NUM_INT: return h5ark_value_int(n->as.i);
    case H5ARK_NUM_UINT: return h5ark_value_uint(n->as.u);
    case H5ARK_NUM_FLOAT: return h5ark_value_float(n->as.f);
    default: return NULL;
    }
}

static int set_number(h5ark_value *args, const char *key, const h5ark_number *n) {
    if (n->kind == H5ARK_NUM_NONE) return 0;
    return h5ark_value_set(args, key, number_value(n));
}

/* ---- arrays -------------------------------------------------------------------------- */

int h5ark_client_create(h5ark_client_t *self, h5ark_dtype dtype, uint64_t size,
                        const h5ark_fill *fill, const char *name, h5ark_value **object,
                        h5ark_error *err) {
    static const h5ark_fill zeros = {0};
    if (!fill) fill = &zeros;
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "dtype", h5ark_value_str(h5ark_dtype_name(dtype)));
    if (size != H5ARK_SIZE_AUTO) rc |= h5ark_value_set(args, "size", h5ark_value_uint(size));
    if (fill->fill) rc |= h5ark_value_set(args, "fill", h5ark_value_str(fill->fill));
    rc |= set_number(args, "value", &fill->value);
    rc |= set_number(args, "start", &fill->start);
    rc |= set_number(args, "stop", &fill->stop);
    rc |= set_number(args, "step", &fill->step);
    rc |= set_number(args, "low", &fill->low);
    rc |= set_number(args, "high", &fill->high);
    if (fill->has_seed) rc |= h5ark_value_set(args, "seed", h5ark_value_uint(fill->seed));
    if (name) rc |= h5ark_value_set(args, "name", h5ark_value_str(name));
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "create", args, NULL, 0, "object", object, err);
}

/* ---- numeric compute ----------------------------------------------------------------- */

/* args {k1: v1, k2: v2} of strings (a NULL value is left out); NULL without memory. */
static h5ark_value *str_args(const char *k1, const char *v1, const char *k2, const char *v2) {
    h5ark_value *args = h5ark_value_map();
    int rc = v1 ? h5ark_value_set(args, k1, h5ark_value_str(v1)) : 0;
    if (v2) rc |= h5ark_value_set(args, k2, h5ark_value_str(v2));
    if (rc) h5ark_value_destroy(&args);
    return args;
}

/* Run `cmd` on args (taken; NULL: out of memory) whose `name` is the optional `name`. */
static int call_named(h5ark_client_t *self, const char *cmd, h5ark_value *args, const char *name,
                      const char *key, h5ark_value **out, h5ark_error *err) {
    if (args && name && h5ark_value_set(args, "name", h5ark_value_str(name)))
        h5ark_value_destroy(&args);
    if (!args) return oom(err);
    return call(self, cmd, args, NULL, 0, key, out, err);
}

int h5ark_client_binop(h5ark_client_t *self, const char *op, const char *a, const char *b,
                       const char *name, h5ark_value **object, h5ark_error *err) {
    h5ark_value *args = str_args("op", op, "a", a);
    if (args && h5ark_value_set(args, "b", h5ark_value_str(b))) h5ark_value_destroy(&args);
    return call_named(self, "binop", args, name, "object", object, err);
}

int h5ark_client_binop_scalar(h5ark_client_t *self, const char *op, const char *a,
                              h5ark_number value, const char *value_dtype, bool reverse,
                              const char *name, h5ark_value **object, h5ark_error *err) {
    h5ark_value *args = str_args("op", op, "value_dtype", value_dtype);
    int rc = args ? h5ark_value_set(args, "a", h5ark_value_str(a)) : -1;
    rc |= args ? set_number(args, "value", &value) : -1;
    if (reverse && rc == 0) rc = h5ark_value_set(args, "reverse", h5ark_value_bool(true));
    if (rc) h5ark_value_destroy(&args);
    return call_named(self, "binop", args, name, "object", object, err);
}

int h5ark_client_cast(h5ark_client_t *self, const char *array, h5ark_dtype dtype, const char *name,
                      h5ark_value **object, h5ark_error *err) {
    return call_named(self, "cast", str_args("array", array, "dtype", h5ark_dtype_name(dtype)),
                      name, "object", object, err);
}

int h5ark_client_fill(h5ark_client_t *self, const char *array, h5ark_number value,
                      h5ark_value **object, h5ark_error *err) {
    h5ark_value *args = str_args("array", array, NULL, NULL);
    if (args && set_number(args, "value", &value)) h5ark_value_destroy(&args);
    return call_named(self, "fill", args, NULL, "object", object, err);
}

int h5ark_client_reduce(h5ark_client_t *self, const char *array, const char *op,
                        h5ark_value **result, h5ark_error *err) {
    return call_named(self, "reduce", str_args("array", array, "op", op), NULL, NULL, result, err);
}

int h5ark_client_cumsum(h5ark_client_t *self, const char *array, bool include_initial,
                        const char *name, h5ark_value **object, h5ark_error *err) {
    h5ark_value *args = str_args("array", array, NULL, NULL);
    if (args && h5ark_value_set(args, "include_initial", h5ark_value_bool(include_initial)))
        h5ark_value_destroy(&args);
    return call_named(self, "cumsum", args, name, "object", object, err);
}

int h5ark_client_limitbits(h5ark_client_t *self, const char *array, int64_t max_bits,
                           h5ark_value **object, h5ark_error *err) {
    h5ark_value *args = str_args("array", array, NULL, NULL);
    if (args && h5ark_value_set(args, "max_bits", h5ark_value_int(max_bits)))
        h5ark_value_destroy(&args);
    return call_named(self, "limitbits", args, NULL, "object", object, err);
}

static h5ark_value *put_args(const char *objtype, h5ark_dtype dtype, uint64_t size,
                             const char *name) {
    h5ark_value *args = h5ark_value_map();
    h5ark_value *shape = h5ark_value_array();
    int rc = h5ark_value_push(shape, h5ark_value_uint(size));
    rc |= h5ark_value_set(args, "objtype", h5ark_value_str(objtype));
    rc |= h5ark_value_set(args, "dtype", h5ark_value_str(h5ark_dtype_name(dtype)));
    rc |= h5ark_value_set(args, "shape", shape);
    if (name) rc |= h5ark_value_set(args, "name", h5ark_value_str(name));
    if (rc) h5ark_value_destroy(&args);
    return args;
}

int h5ark_client_put_array(h5ark_client_t *self, h5ark_dtype dtype, uint64_t size, const void *data,
                           const char *name, h5ark_value **object, h5ark_error *err) {
    if (dtype == H5ARK_STRING || (unsigned)dtype >= H5ARK_DTYPE_COUNT)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "put_array takes a numeric or bool dtype; use put_strings for str");
    size_t item = h5ark_dtype_size(dtype);
    if (size > UINT64_MAX / item)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "put: %llu elements overflow 64 bits",
                          (unsigned long long)size);
    h5ark_value *args = put_args("pdarray", dtype, size, name);
    if (!args) return oom(err);
    h5ark_buffer_in buf = {"values", data, size * item};
    return call(self, "put", args, &buf, 1, "object", object, err);
}

int h5ark_client_put_strings_packed(h5ark_client_t *self, uint64_t count, const int64_t *segments,
                                    const char *values, uint64_t values_nbytes, const char *name,
                                    h5ark_value **object, h5ark_error *err) {
    if (count > UINT64_MAX / 8)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "put: %llu strings overflow 64 bits",
                          (unsigned long long)count);
    h5ark_value *args = put_args("strings", H5ARK_STRING, count, name);
    if (!args) return oom(err);
    h5ark_buffer_in bufs[2] = {{"segments", segments, count * 8},
                               {"values", values, values_nbytes}};
    return call(self, "put", args, bufs, 2, "object", object, err);
}

int h5ark_client_put_strings_at_nuls(h5ark_client_t *self, const char *values,
                                     uint64_t values_nbytes, const char *name, h5ark_value **object,
                                     h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "objtype", h5ark_value_str("strings")) ||
                 h5ark_value_set(args, "strings_segments", h5ark_value_bool(false)) ||
                 (name && h5ark_value_set(args, "name", h5ark_value_str(name)))))
        h5ark_value_destroy(&args);
    if (!args) return oom(err);
    h5ark_buffer_in bufs[1] = {{"values", values, values_nbytes}};
    return call(self, "put", args, bufs, 1, "object", object, err);
}

int h5ark_client_put_strings(h5ark_client_t *self, uint64_t count, const char *const *strs,
                             const char *name, h5ark_value **object, h5ark_error *err) {
    uint64_t total = 0;
    for (uint64_t i = 0; i < count; i++) {
        if (!strs[i])
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "put: string %llu is NULL",
                              (unsigned long long)i);
        total += strlen(strs[i]) + 1;
    }
    int64_t *segments = malloc(count ? count * sizeof *segments : 1);
    char *values = malloc(total ? total : 1);
    if (!segments || !values) {
        free(segments);
        free(values);
        return oom(err);
    }
    uint64_t at = 0;
    for (uint64_t i = 0; i < count; i++) {
        size_t n = strlen(strs[i]) + 1;
        segments[i] = (int64_t)at;
        memcpy(values + at, strs[i], n);
        at += n;
    }
    int rc =
        h5ark_client_put_strings_packed(self, count, segments, values, total, name, object, err);
    free(segments);
    free(values);
    return rc;
}

static h5ark_value *get_args(const char *name, uint64_t start, uint64_t stop) {
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "name", h5ark_value_str(name ? name : ""));
    if (start) rc |= h5ark_value_set(args, "start", h5ark_value_uint(start));
    if (stop != H5ARK_END) rc |= h5ark_value_set(args, "stop", h5ark_value_uint(stop));
    if (rc) h5ark_value_destroy(&args);
    return args;
}

/* Read the descriptor and range of a get reply. */
static int read_get_result(const h5ark_reply_t *reply, h5ark_data *d, h5ark_error *err) {
    const h5ark_value *result = h5ark_reply_result(reply);
    const h5ark_value *obj = h5ark_value_get(result, "object");
    const h5ark_value *objtype = h5ark_value_get(obj, "objtype");
    const h5ark_value *dtype = h5ark_value_get(obj, "dtype");
    if (!objtype || objtype->kind != H5ARK_STR || !dtype || dtype->kind != H5ARK_STR ||
        !h5ark_objtype_from_name(objtype->as.s.ptr, &d->objtype) ||
        !h5ark_dtype_from_name(dtype->as.s.ptr, &d->dtype))
        return h5ark_fail(err, H5ARK_INTERNAL, "get: the reply describes no known object");
    uint64_t size = 0;
    h5ark_value_to_uint64(h5ark_value_get(obj, "size"), &size);
    d->start = 0;
    d->stop = size;
    const h5ark_value *v;
    if ((v = h5ark_value_get(result, "start"))) h5ark_value_to_uint64(v, &d->start);
    if ((v = h5ark_value_get(result, "stop"))) h5ark_value_to_uint64(v, &d->stop);
    if (d->stop < d->start) return h5ark_fail(err, H5ARK_INTERNAL, "get: reply range is reversed");
    d->count = d->stop - d->start;
    if (!(d->object = h5ark_value_copy(obj))) return oom(err);
    return 0;
}

/* Copy a reply buffer into fresh memory (one spare byte so that empty buffers allocate). */
static void *take_buffer(const h5ark_reply_t *reply, const char *name, uint64_t want, uint64_t *got,
                         h5ark_error *err) {
    uint64_t n;
    if (h5ark_reply_buffer_size(reply, name, &n, err)) return NULL;
    if (want != UINT64_MAX && n != want) {
        h5ark_fail(err, H5ARK_INTERNAL, "get: reply buffer '%s' has %llu bytes, expected %llu",
                   name, (unsigned long long)n, (unsigned long long)want);
        return NULL;
    }
    if (n >= SIZE_MAX) {
        oom(err);
        return NULL;
    }
    void *p = malloc((size_t)n + 1);
    if (!p) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "get: cannot allocate %llu bytes",
                   (unsigned long long)n);
        return NULL;
    }
    if (h5ark_reply_buffer_copy(reply, name, p, n, err)) {
        free(p);
        return NULL;
    }
    ((char *)p)[n] = '\0';
    if (got) *got = n;
    return p;
}

/* Every string must start inside values, in order, and end with its NUL. */
static int check_strings(const h5ark_data *d, h5ark_error *err) {
    const char *v = d->values;
    for (uint64_t i = 0; i < d->count; i++) {
        uint64_t s = (uint64_t)d->segments[i];
        uint64_t e = i + 1 < d->count ? (uint64_t)d->segments[i + 1] : d->values_nbytes;
        if (d->segments[i] < 0 || (i == 0 && s != 0) || e <= s || e > d->values_nbytes ||
            v[e - 1] != '\0')
            return h5ark_fail(err, H5ARK_INTERNAL,
                              "get: string %llu of the reply is not a NUL-terminated slice of "
                              "the values",
                              (unsigned long long)(d->start + i));
    }
    if (d->count == 0 && d->values_nbytes != 0)
        return h5ark_fail(err, H5ARK_INTERNAL, "get: no strings but %llu value bytes",
                          (unsigned long long)d->values_nbytes);
    return 0;
}

int h5ark_client_get(h5ark_client_t *self, const char *name, uint64_t start, uint64_t stop,
                     h5ark_data *out, h5ark_error *err) {
    memset(out, 0, sizeof *out);
    h5ark_value *args = get_args(name, start, stop);
    if (!args) return oom(err);
    h5ark_reply_t *reply = NULL;
    if (h5ark_client_request(self, "get", args, NULL, 0, &reply, err) != 0) {
        h5ark_reply_destroy(&reply);
        return -1;
    }
    int rc = read_get_result(reply, out, err);
    if (rc == 0 && out->objtype == H5ARK_PDARRAY) {
        uint64_t item = h5ark_dtype_size(out->dtype);
        out->values = take_buffer(reply, "values", out->count * item, &out->values_nbytes, err);
        rc = out->values ? 0 : -1;
    } else if (rc == 0 && out->objtype == H5ARK_STRINGS) {
        out->segments = take_buffer(reply, "segments", out->count * 8, NULL, err);
        out->values = out->segments
                          ? take_buffer(reply, "values", UINT64_MAX, &out->values_nbytes, err)
                          : NULL;
        rc = out->values ? check_strings(out, err) : -1;
    } else if (rc == 0) {
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "get: objtype %s is not supported by this client",
                        h5ark_objtype_name(out->objtype));
    }
    h5ark_reply_destroy(&reply);
    if (rc) h5ark_data_free(out);
    return rc;
}

void h5ark_data_free(h5ark_data *data) {
    if (!data) return;
    h5ark_value_destroy(&data->object);
    free(data->values);
    free(data->segments);
    memset(data, 0, sizeof *data);
}

const char *h5ark_data_string(const h5ark_data *d, uint64_t i, size_t *len) {
    if (d->objtype != H5ARK_STRINGS || i >= d->count) return NULL;
    uint64_t s = (uint64_t)d->segments[i];
    uint64_t e = i + 1 < d->count ? (uint64_t)d->segments[i + 1] : d->values_nbytes;
    if (len) *len = (size_t)(e - s - 1);
    return (const char *)d->values + s;
}

int h5ark_client_get_into(h5ark_client_t *self, const char *name, uint64_t start, uint64_t stop,
                          void *dst, uint64_t cap, uint64_t *nbytes, h5ark_value **object,
                          h5ark_error *err) {
    if (object) *object = NULL;
    h5ark_value *args = get_args(name, start, stop);
    if (!args) return oom(err);
    h5ark_reply_t *reply = NULL;
    if (h5ark_client_request(self, "get", args, NULL, 0, &reply, err) != 0) {
        h5ark_reply_destroy(&reply);
        return -1;
    }
    h5ark_data d = {0};
    int rc = read_get_result(reply, &d, err);
    if (rc == 0 && d.objtype != H5ARK_PDARRAY)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                        "get: '%s' is a %s; fetching into caller memory takes a pdarray", name,
                        h5ark_objtype_name(d.objtype));
    uint64_t n = 0;
    if (rc == 0) rc = h5ark_reply_buffer_size(reply, "values", &n, err);
    if (rc == 0 && n != d.count * h5ark_dtype_size(d.dtype))
        rc = h5ark_fail(err, H5ARK_INTERNAL, "get: reply buffer 'values' has %llu bytes",
                        (unsigned long long)n);
    if (rc == 0) rc = h5ark_reply_buffer_copy(reply, "values", dst, cap, err);
    if (rc == 0) {
        if (nbytes) *nbytes = n;
        if (object) {
            *object = d.object;
            d.object = NULL;
        }
    }
    h5ark_data_free(&d);
    h5ark_reply_destroy(&reply);
    return rc;
}

/* ---- HDF5 ---------------------------------------------------------------------------- */

int h5ark_client_tohdf_opts(h5ark_client_t *self, const char *const *names, size_t count,
                            const char *const *datasets, const char *path,
                            const h5ark_tohdf_opts *opts, h5ark_value **result, h5ark_error *err) {
    static const h5ark_tohdf_opts none = {0};
    if (!opts) opts = &none;
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "names", str_array(names, count));
    if (datasets) rc |= h5ark_value_set(args, "datasets", str_array(datasets, count));
    rc |= h5ark_value_set(args, "path", h5ark_value_str(path ? path : ""));
    if (opts->mode) rc |= h5ark_value_set(args, "mode", h5ark_value_str(opts->mode));
    if (opts->file_type) rc |= h5ark_value_set(args, "file_type", h5ark_value_str(opts->file_type));
    if (opts->compression)
        rc |= h5ark_value_set(args, "compression", h5ark_value_str(opts->compression));
    if (opts->compression_level)
        rc |= h5ark_value_set(args, "compression_level", h5ark_value_int(opts->compression_level));
    if (opts->format) rc |= h5ark_value_set(args, "format", h5ark_value_str(opts->format));
    if (opts->group) rc |= h5ark_value_set(args, "group", h5ark_value_str(opts->group));
    if (opts->fieldtype) rc |= h5ark_value_set(args, "fieldtype", h5ark_value_str(opts->fieldtype));
    if (opts->strings_without_segments)
        rc |= h5ark_value_set(args, "strings_segments", h5ark_value_bool(false));
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "tohdf", args, NULL, 0, NULL, result, err);
}

int h5ark_client_tohdf(h5ark_client_t *self, const char *const *names, size_t count,
                       const char *const *datasets, const char *path, const char *mode,
                       const char *file_type, h5ark_value **result, h5ark_error *err) {
    h5ark_tohdf_opts opts = {.mode = mode, .file_type = file_type};
    return h5ark_client_tohdf_opts(self, names, count, datasets, path, &opts, result, err);
}

int h5ark_client_writepart(h5ark_client_t *self, const char *path, const char *field,
                           const char *name, const char *fieldtype, h5ark_value **result,
                           h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "path", h5ark_value_str(path ? path : ""));
    rc |= h5ark_value_set(args, "field", h5ark_value_str(field ? field : ""));
    rc |= h5ark_value_set(args, "name", h5ark_value_str(name ? name : ""));
    if (fieldtype) rc |= h5ark_value_set(args, "fieldtype", h5ark_value_str(fieldtype));
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "writepart", args, NULL, 0, NULL, result, err);
}

int h5ark_client_complete(h5ark_client_t *self, const char *path, const char *field,
                          h5ark_value **result, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "path", h5ark_value_str(path ? path : ""));
    rc |= h5ark_value_set(args, "field", h5ark_value_str(field ? field : ""));
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "complete", args, NULL, 0, NULL, result, err);
}

int h5ark_client_checkpoint(h5ark_client_t *self, const char *path, const char *name,
                            const char *mode, h5ark_value **result, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    int rc = args ? 0 : -1;
    if (path) rc |= h5ark_value_set(args, "path", h5ark_value_str(path));
    if (name) rc |= h5ark_value_set(args, "name", h5ark_value_str(name));
    if (mode) rc |= h5ark_value_set(args, "mode", h5ark_value_str(mode));
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "checkpoint", args, NULL, 0, NULL, result, err);
}

int h5ark_client_load_checkpoint(h5ark_client_t *self, const char *path, const char *name,
                                 h5ark_value **result, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "path", h5ark_value_str(path ? path : ""));
    rc |= h5ark_value_set(args, "name", h5ark_value_str(name ? name : ""));
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "load_checkpoint", args, NULL, 0, NULL, result, err);
}

int h5ark_client_readhdf(h5ark_client_t *self, const char *const *paths, size_t npaths,
                         const char *const *datasets, size_t ndatasets,
                         const h5ark_readhdf_opts *opts, h5ark_value **result, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "paths", str_array(paths, npaths));
    if (datasets && ndatasets)
        rc |= h5ark_value_set(args, "datasets", str_array(datasets, ndatasets));
    if (opts) {
        rc |= h5ark_value_set(args, "strict_types", h5ark_value_bool(opts->strict_types));
        rc |= h5ark_value_set(args, "allow_errors", h5ark_value_bool(opts->allow_errors));
        rc |= h5ark_value_set(args, "calc_string_offsets",
                              h5ark_value_bool(opts->calc_string_offsets));
        rc |= h5ark_value_set(args, "tag_data", h5ark_value_bool(opts->tag_data));
        if (opts->range) rc |= h5ark_value_set(args, "start", h5ark_value_uint(opts->start));
        if (opts->range && opts->stop != UINT64_MAX)
            rc |= h5ark_value_set(args, "stop", h5ark_value_uint(opts->stop));
    }
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "readhdf", args, NULL, 0, NULL, result, err);
}

int h5ark_client_lshdf(h5ark_client_t *self, const char *path, bool recursive, h5ark_value **result,
                       h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "path", h5ark_value_str(path ? path : ""));
    if (recursive) rc |= h5ark_value_set(args, "recursive", h5ark_value_bool(true));
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "lshdf", args, NULL, 0, NULL, result, err);
}

int h5ark_client_pack(h5ark_client_t *self, const char *data_schema, const char *experiment_schema,
                      const char *const *paths, size_t npaths, const char *sample_list,
                      const char *name, h5ark_value **result, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    int rc = h5ark_value_set(args, "data_schema", h5ark_value_str(data_schema ? data_schema : ""));
    if (experiment_schema)
        rc |= h5ark_value_set(args, "experiment_schema", h5ark_value_str(experiment_schema));
    if (sample_list) {
        rc |= h5ark_value_set(args, "sample_list", h5ark_value_str(sample_list));
    } else {
        h5ark_value *list = h5ark_value_array();
        for (size_t i = 0; list && i < npaths; i++)
            rc |= h5ark_value_push(list, h5ark_value_str(paths[i]));
        rc |= list ? h5ark_value_set(args, "paths", list) : -1;
    }
    if (name) rc |= h5ark_value_set(args, "name", h5ark_value_str(name));
    if (rc) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "pack", args, NULL, 0, NULL, result, err);
}

/* ---- selection and segments ------------------------------------------------------------ */

/* args {key: value...} from pairs of (key, NUL-terminated string or NULL: left out), then
 * the object's name; NULL when out of memory. */
static h5ark_value *name_args(const char *const *pairs, size_t npairs, const char *name) {
    h5ark_value *args = h5ark_value_map();
    int rc = args ? 0 : -1;
    for (size_t i = 0; i + 1 < npairs; i += 2)
        if (pairs[i + 1]) rc |= h5ark_value_set(args, pairs[i], h5ark_value_str(pairs[i + 1]));
    if (name) rc |= h5ark_value_set(args, "name", h5ark_value_str(name));
    if (rc) h5ark_value_destroy(&args);
    return args;
}

int h5ark_client_take(h5ark_client_t *self, const char *array, const char *index, const char *name,
                      h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"array", array, "index", index};
    h5ark_value *args = name_args(pairs, 4, name);
    if (!args) return oom(err);
    return call(self, "take", args, NULL, 0, "object", object, err);
}

int h5ark_client_slice(h5ark_client_t *self, const char *array, int64_t start, int64_t stop,
                       int64_t step, const char *name, h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"array", array};
    h5ark_value *args = name_args(pairs, 2, name);
    if (!args || h5ark_value_set(args, "start", h5ark_value_int(start)) ||
        h5ark_value_set(args, "stop", h5ark_value_int(stop)) ||
        h5ark_value_set(args, "step", h5ark_value_int(step))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "slice", args, NULL, 0, "object", object, err);
}

int h5ark_client_assign(h5ark_client_t *self, const char *array, const char *index,
                        const char *values, h5ark_number value, h5ark_value **object,
                        h5ark_error *err) {
    const char *pairs[] = {"array", array, "index", index, "values", values};
    h5ark_value *args = name_args(pairs, 6, NULL);
    if (!args || (!values && set_number(args, "value", &value))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "assign", args, NULL, 0, "object", object, err);
}

int h5ark_client_concatenate(h5ark_client_t *self, const char *const *names, size_t count,
                             const char *name, h5ark_value **object, h5ark_error *err) {
    h5ark_value *args = name_args(NULL, 0, name);
    if (!args || h5ark_value_set(args, "names", str_array(names, count))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "concatenate", args, NULL, 0, "object", object, err);
}

int h5ark_client_tag(h5ark_client_t *self, const char *array, const char *tag, const char *name,
                     h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"array", array, "tag", tag};
    h5ark_value *args = name_args(pairs, 4, name);
    if (!args) return oom(err);
    return call(self, "tag", args, NULL, 0, "object", object, err);
}

int h5ark_client_unpack(h5ark_client_t *self, const char *composite, bool keep,
                        h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"name", composite};
    h5ark_value *args = name_args(pairs, 2, NULL);
    if (args && keep && h5ark_value_set(args, "keep", h5ark_value_bool(true)))
        h5ark_value_destroy(&args);
    if (!args) return oom(err);
    return call(self, "unpack", args, NULL, 0, "object", object, err);
}

int h5ark_client_categorical_codes(h5ark_client_t *self, const char *codes, const char *categories,
                                   int64_t na_code, const char *permutation, const char *segments,
                                   const char *name, h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"codes",       codes,       "categories", categories,
                           "permutation", permutation, "segments",   segments};
    h5ark_value *args = name_args(pairs, 8, name);
    if (args && na_code >= 0 && h5ark_value_set(args, "na_code", h5ark_value_int(na_code)))
        h5ark_value_destroy(&args);
    if (!args) return oom(err);
    return call(self, "categorical", args, NULL, 0, "object", object, err);
}

int h5ark_client_groupby(h5ark_client_t *self, const char *const *keys, size_t count,
                         const char *permutation, const char *segments, const char *unique_key_idx,
                         const char *name, h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"permutation", permutation,      "segments",
                           segments,      "unique_key_idx", unique_key_idx};
    h5ark_value *args = name_args(pairs, 6, name);
    if (!args || h5ark_value_set(args, "keys", str_array(keys, count))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "groupby", args, NULL, 0, "object", object, err);
}

int h5ark_client_bigint_arange(h5ark_client_t *self, const char *start, const char *stop,
                               const char *step, const char *name, h5ark_value **object,
                               h5ark_error *err) {
    h5ark_value *args = str_args("start", start, "stop", stop);
    if (args && step && h5ark_value_set(args, "step", h5ark_value_str(step)))
        h5ark_value_destroy(&args);
    return call_named(self, "bigint_arange", args, name, "object", object, err);
}

int h5ark_client_bigint_limbs(h5ark_client_t *self, const char *array, h5ark_value **result,
                              h5ark_error *err) {
    return call_named(self, "bigint_limbs", str_args("array", array, NULL, NULL), NULL, NULL,
                      result, err);
}

int h5ark_client_bigint_from_limbs(h5ark_client_t *self, const char *const *arrays, size_t count,
                                   int64_t max_bits, const char *name, h5ark_value **object,
                                   h5ark_error *err) {
    h5ark_value *args = name_args(NULL, 0, name);
    if (!args || h5ark_value_set(args, "arrays", str_array(arrays, count)) ||
        h5ark_value_set(args, "max_bits", h5ark_value_int(max_bits))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "bigint_from_limbs", args, NULL, 0, "object", object, err);
}

int h5ark_client_bigint_binop(h5ark_client_t *self, const char *op, const char *a, const char *b,
                              const char *value, bool reverse, const char *name,
                              h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"op", op, "a", a, "b", b, "value", value};
    h5ark_value *args = name_args(pairs, 8, name);
    if (args && value && h5ark_value_set(args, "reverse", h5ark_value_bool(reverse)))
        h5ark_value_destroy(&args);
    if (!args) return oom(err);
    return call(self, "bigint_binop", args, NULL, 0, "object", object, err);
}

int h5ark_client_bigint_full(h5ark_client_t *self, uint64_t size, const char *value,
                             int64_t max_bits, const char *name, h5ark_value **object,
                             h5ark_error *err) {
    const char *pairs[] = {"value", value};
    h5ark_value *args = name_args(pairs, 2, name);
    if (args && (h5ark_value_set(args, "size", h5ark_value_uint(size)) ||
                 h5ark_value_set(args, "max_bits", h5ark_value_int(max_bits))))
        h5ark_value_destroy(&args);
    if (!args) return oom(err);
    return call(self, "bigint_full", args, NULL, 0, "object", object, err);
}

int h5ark_client_bigint_fill(h5ark_client_t *self, const char *array, const char *value,
                             h5ark_value **object, h5ark_error *err) {
    return call_named(self, "bigint_fill", str_args("array", array, "value", value), NULL, "object",
                      object, err);
}

int h5ark_client_bigint_assign(h5ark_client_t *self, const char *array, const char *index,
                               const char *value, h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"array", array, "index", index, "value", value};
    h5ark_value *args = name_args(pairs, 6, NULL);
    if (!args) return oom(err);
    return call(self, "bigint_assign", args, NULL, 0, "object", object, err);
}

int h5ark_client_compare(h5ark_client_t *self, const char *strings, const char *op,
                         const char *other, const char *text, size_t text_len, h5ark_value **object,
                         h5ark_error *err) {
    h5ark_value *args = str_args("strings", strings, "op", op);
    int rc = args ? 0 : -1;
    if (rc == 0 && other) rc = h5ark_value_set(args, "other", h5ark_value_str(other));
    if (rc == 0 && !other) rc = h5ark_value_set(args, "text", h5ark_value_strn(text, text_len));
    if (rc) h5ark_value_destroy(&args);
    return call_named(self, "compare", args, NULL, "object", object, err);
}

int h5ark_client_split(h5ark_client_t *self, const char *strings, const char *pattern, int64_t max,
                       bool segments, const char *name, h5ark_value **result, h5ark_error *err) {
    h5ark_value *args = str_args("strings", strings, "pattern", pattern);
    if (args && (h5ark_value_set(args, "max", h5ark_value_int(max)) ||
                 h5ark_value_set(args, "segments", h5ark_value_bool(segments))))
        h5ark_value_destroy(&args);
    return call_named(self, "split", args, name, NULL, result, err);
}

int h5ark_client_random_strings(h5ark_client_t *self, uint64_t size, const char *chars,
                                const char *dist, double arg1, double arg2, int64_t seed,
                                const char *name, h5ark_value **object, h5ark_error *err) {
    h5ark_value *args = str_args("chars", chars, "dist", dist);
    if (args && (h5ark_value_set(args, "size", h5ark_value_uint(size)) ||
                 h5ark_value_set(args, "arg1", h5ark_value_float(arg1)) ||
                 h5ark_value_set(args, "arg2", h5ark_value_float(arg2)) ||
                 (seed >= 0 && h5ark_value_set(args, "seed", h5ark_value_int(seed)))))
        h5ark_value_destroy(&args);
    return call_named(self, "random_strings", args, name, "object", object, err);
}

int h5ark_client_unique(h5ark_client_t *self, const char *const *keys, size_t count, bool groups,
                        const char *order, h5ark_value **result, h5ark_error *err) {
    const char *pairs[] = {"order", order};
    h5ark_value *args = name_args(pairs, 2, NULL);
    if (!args || h5ark_value_set(args, "keys", str_array(keys, count)) ||
        h5ark_value_set(args, "groups", h5ark_value_bool(groups))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "unique", args, NULL, 0, NULL, result, err);
}

int h5ark_client_broadcast(h5ark_client_t *self, const char *segments, const char *values,
                           uint64_t size, const char *permutation, const char *name,
                           h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"segments", segments, "values", values, "permutation", permutation};
    h5ark_value *args = name_args(pairs, 6, name);
    if (!args || h5ark_value_set(args, "size", h5ark_value_uint(size))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "broadcast", args, NULL, 0, "object", object, err);
}

int h5ark_client_segmented_reduce(h5ark_client_t *self, const char *values, const char *segments,
                                  const char *op, bool skip_nan, const char *name,
                                  h5ark_value **object, h5ark_error *err) {
    const char *pairs[] = {"values", values, "segments", segments, "op", op};
    h5ark_value *args = name_args(pairs, 6, name);
    if (!args || h5ark_value_set(args, "skip_nan", h5ark_value_bool(skip_nan))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "segmented_reduce", args, NULL, 0, "object", object, err);
}

/* ---- files as files ---------------------------------------------------------------------- */

int h5ark_client_glob(h5ark_client_t *self, const char *const *paths, size_t count,
                      h5ark_value **files, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (!args || h5ark_value_set(args, "paths", str_array(paths, count))) {
        h5ark_value_destroy(&args);
        return oom(err);
    }
    return call(self, "glob", args, NULL, 0, "files", files, err);
}

/* A command taking one `path`, handing back `key` of its result (NULL: all of it). */
static int path_call(h5ark_client_t *self, const char *cmd, const char *path, const char *key,
                     h5ark_value **out, h5ark_error *err) {
    const char *pairs[] = {"path", path};
    h5ark_value *args = name_args(pairs, 2, NULL);
    if (!args) return oom(err);
    return call(self, cmd, args, NULL, 0, key, out, err);
}

int h5ark_client_filetype(h5ark_client_t *self, const char *path, h5ark_value **result,
                          h5ark_error *err) {
    return path_call(self, "filetype", path, NULL, result, err);
}

int h5ark_client_fileformat(h5ark_client_t *self, const char *path, h5ark_value **result,
                            h5ark_error *err) {
    return path_call(self, "fileformat", path, NULL, result, err);
}

int h5ark_client_rmhdf(h5ark_client_t *self, const char *path, h5ark_value **deleted,
                       h5ark_error *err) {
    return path_call(self, "rmhdf", path, "deleted", deleted, err);
}
