/* Arkouda's envelope and replies (see codec.h). */
#include "codec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BINARY_MARK "BINARY_PAYLOAD"

static char *dup_str(const char *s) {
    return strdup(s ? s : "");
}

/* "name<p1,p2>" -> base "name" and its parameters. */
static int split_template(ak_request *r, h5ark_error *err) {
    const char *lt = strchr(r->cmd, '<');
    size_t n = lt ? (size_t)(lt - r->cmd) : strlen(r->cmd);
    r->base = strndup(r->cmd, n);
    if (!r->base) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (!lt) return 0;
    const char *p = lt + 1, *end = strrchr(r->cmd, '>');
    if (!end || end < p || end[1] != '\0')
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "command '%.100s' has an unclosed template",
                          r->cmd);
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        size_t len = (size_t)(stop - p);
        if (r->nparams == AK_MAX_PARAMS || len == 0 || len >= sizeof r->params[0])
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "command '%.100s' has a bad template",
                              r->cmd);
        memcpy(r->params[r->nparams], p, len);
        r->params[r->nparams++][len] = '\0';
        p = comma ? comma + 1 : end;
    }
    return 0;
}

static bool holds_nul(const json_t *s) {
    return json_is_string(s) && strlen(json_string_value(s)) != json_string_length(s);
}

/* The parameters whose value is string data, which may hold any byte: segmentedBinopvs's
 * `other`, the string the Strings are compared with. Every other value is a name, number
 * or keyword, and a NUL in it is refused. */
static bool bytes_key(const char *key) {
    return strcmp(key, "other") == 0;
}

/* args: "" (connect, disconnect) or a JSON list of JSON strings of {key, dtype, val}. */
static int parse_args(ak_request *r, const char *text, h5ark_error *err) {
    r->args = json_object();
    if (!r->args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (!*text) return 0;
    json_error_t jerr;
    /* (a parameter may be an object here, as rank 0 forwards them: its NULs are allowed
     * as they are in a parameter given as text, and checked below alike) */
    json_t *list = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!list || !json_is_array(list)) {
        json_decref(list);
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'args' is not a JSON list: %s",
                          list ? "another type" : jerr.text);
    }
    int rc = 0;
    if (json_array_size(list) > AK_MAX_ARGS)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'args' has %zu parameters, more than %d",
                        json_array_size(list), AK_MAX_ARGS);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (rc) break;
        json_t *param = json_is_string(item)
                            ? json_loads(json_string_value(item), JSON_ALLOW_NUL, &jerr)
                            : json_incref(item);
        json_t *key = json_object_get(param, "key"), *val = json_object_get(param, "val");
        if (!json_is_object(param) || !json_is_string(key))
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "parameter %zu of 'args' is not an object with a string 'key'", i);
        else if (!json_is_string(val))
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "parameter '%.100s' has no string 'val'",
                            json_string_value(key));
        else if (holds_nul(val) && !bytes_key(json_string_value(key)))
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "parameter '%.100s' holds a NUL byte, which only a string compared "
                            "with Strings may",
                            json_string_value(key));
        else if (json_object_get(r->args, json_string_value(key)))
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "parameter '%.100s' is given twice",
                            json_string_value(key));
        else if (json_object_set(r->args, json_string_value(key), val))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        json_decref(param);
    }
    json_decref(list);
    return rc;
}

int ak_request_parse(const char *text, size_t len, ak_request *out, h5ark_error *err) {
    memset(out, 0, sizeof *out);
    size_t mark = strlen(BINARY_MARK);
    bool marked = len >= mark && memcmp(text + len - mark, BINARY_MARK, mark) == 0;
    if (marked) len -= mark;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    int rc = 0;
    if (!root || !json_is_object(root)) {
        out->user = dup_str("");
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the request is not a JSON object: %s",
                        root ? "another type" : jerr.text);
        goto out;
    }
    json_t *user = json_object_get(root, "user"), *token = json_object_get(root, "token");
    json_t *cmd = json_object_get(root, "cmd"), *format = json_object_get(root, "format");
    json_t *args = json_object_get(root, "args");
    out->user = dup_str(json_is_string(user) ? json_string_value(user) : "");
    if (!out->user) {
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    if (user && !json_is_string(user)) {
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'user' must be a string");
        goto out;
    }
    if (!json_is_string(cmd) || !*json_string_value(cmd)) {
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the request has no 'cmd' string");
        goto out;
    }
    if (token && !json_is_string(token) && !json_is_null(token)) {
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'token' must be a string");
        goto out;
    }
    if (format && !json_is_string(format)) {
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'format' must be a string");
        goto out;
    }
    if (args && !json_is_string(args)) {
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'args' must be a string of JSON text");
        goto out;
    }
    out->binary = format && strcmp(json_string_value(format), "BINARY") == 0;
    if (out->binary != marked) {
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                        out->binary ? "a BINARY request must end with " BINARY_MARK
                                    : BINARY_MARK " needs format BINARY");
        goto out;
    }
    out->cmd = dup_str(json_string_value(cmd));
    if (json_is_string(token) && json_string_length(token) > 0) {
        out->token_len = json_string_length(token);
        out->token = malloc(out->token_len + 1);
        if (out->token) memcpy(out->token, json_string_value(token), out->token_len + 1);
    }
    if (!out->cmd || (json_is_string(token) && json_string_length(token) > 0 && !out->token)) {
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    rc = split_template(out, err);
    if (rc == 0) rc = parse_args(out, args ? json_string_value(args) : "", err);
out:
    json_decref(root);
    return rc;
}

void ak_request_free(ak_request *r) {
    free(r->cmd);
    free(r->base);
    free(r->user);
    free(r->token);
    json_decref(r->args);
    memset(r, 0, sizeof *r);
}

const char *ak_arg(const ak_request *r, const char *key) {
    return json_string_value(json_object_get(r->args, key));
}

int ak_arg_str(const ak_request *r, const char *key, const char **out, h5ark_error *err) {
    *out = ak_arg(r, key);
    if (!*out) return h5ark_fail(err, H5ARK_BAD_REQUEST, "missing argument '%s'", key);
    if (holds_nul(json_object_get(r->args, key)))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' holds a NUL byte", key);
    return 0;
}

int ak_arg_bytes(const ak_request *r, const char *key, const char **out, size_t *len,
                 h5ark_error *err) {
    const json_t *v = json_object_get(r->args, key);
    if (!json_is_string(v)) return h5ark_fail(err, H5ARK_BAD_REQUEST, "missing argument '%s'", key);
    *out = json_string_value(v);
    *len = json_string_length(v);
    return 0;
}

bool ak_parse_int(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

bool ak_parse_uint(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

bool ak_parse_double(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || (errno && isinf(v))) return false;
    *out = v;
    return true;
}

int ak_arg_int(const ak_request *r, const char *key, int64_t *out, h5ark_error *err) {
    const char *s;
    if (ak_arg_str(r, key, &s, err)) return -1;
    if (!ak_parse_int(s, out))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' must be an int64, not '%.60s'",
                          key, s);
    return 0;
}

int ak_arg_uint(const ak_request *r, const char *key, uint64_t *out, h5ark_error *err) {
    const char *s;
    if (ak_arg_str(r, key, &s, err)) return -1;
    if (!ak_parse_uint(s, out))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "argument '%s' must be a non-negative integer, not '%.60s'", key, s);
    return 0;
}

int ak_arg_double(const ak_request *r, const char *key, double *out, h5ark_error *err) {
    const char *s;
    if (ak_arg_str(r, key, &s, err)) return -1;
    if (!ak_parse_double(s, out))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' must be a number, not '%.60s'",
                          key, s);
    return 0;
}

int ak_arg_bool(const ak_request *r, const char *key, bool *out, h5ark_error *err) {
    const char *s;
    if (ak_arg_str(r, key, &s, err)) return -1;
    if (strcmp(s, "True") == 0 || strcmp(s, "true") == 0)
        *out = true;
    else if (strcmp(s, "False") == 0 || strcmp(s, "false") == 0)
        *out = false;
    else
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "argument '%s' must be True or False, not '%.60s'", key, s);
    return 0;
}

json_t *ak_arg_list(const ak_request *r, const char *key, h5ark_error *err) {
    const char *s;
    if (ak_arg_str(r, key, &s, err)) return NULL;
    json_t *list = json_loads(s, 0, NULL);
    bool ok = json_is_array(list);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) ok &= json_is_string(item);
    if (!ok) {
        json_decref(list);
        h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' must be a JSON list of strings", key);
        return NULL;
    }
    return list;
}

char *ak_reply_json(const char *msg, const char *msg_type, const char *user, size_t *len) {
    json_t *o = json_object();
    json_object_set_new(o, "msg", json_string(msg));
    json_object_set_new(o, "msgType", json_string(msg_type));
    json_object_set_new(o, "msgFormat", json_string("STRING"));
    json_object_set_new(o, "user", json_string(user ? user : ""));
    char *text =
        json_object_size(o) == 4 ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (text) *len = strlen(text);
    return text;
}

const char *ak_dtype_name(h5ark_dtype dtype) {
    return h5ark_dtype_name(dtype);
}

size_t ak_itemsize(const object *obj) {
    return obj->dtype == H5ARK_BIGINT ? 16 : h5ark_dtype_size(obj->dtype);
}

char *ak_created(const object *obj) {
    return ak_created_as(obj, obj->name);
}

char *ak_created_as(const object *obj, const char *name) {
    char shape[OBJECT_MAX_DIMS * 21 + 3] = "[";
    size_t at = 1;
    unsigned ndim = obj->ndim ? obj->ndim : 1;
    for (unsigned d = 0; d < ndim; d++)
        at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%llu", d ? "," : "",
                               (unsigned long long)(obj->ndim ? obj->shape[d] : obj->size));
    snprintf(shape + at, sizeof shape - at, "]");
    char *text = NULL;
    int n;
    if (obj->objtype == H5ARK_STRINGS)
        n = asprintf(&text, "created %s str %llu 1 [%llu] 1+created bytes.size %llu", name,
                     (unsigned long long)obj->size, (unsigned long long)obj->size,
                     (unsigned long long)(obj->values ? obj->values->size : 0));
    else
        n = asprintf(&text, "created %s %s %llu %u %s %zu", name, ak_dtype_name(obj->dtype),
                     (unsigned long long)obj->size, ndim, shape, ak_itemsize(obj));
    return n < 0 ? NULL : text;
}
