/* YAML to a value tree, on libyaml's event parser. */
#include "lbann.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YAML_MAX_BYTES (1u << 20)
#define YAML_MAX_DEPTH 64

typedef struct {
    yaml_parser_t p;
    const char *what;
    h5ark_error *err;
} reader;

static int fail_at(reader *r, const yaml_mark_t *m, const char *why) {
    return h5ark_fail(r->err, H5ARK_SCHEMA_ERROR, "%s: malformed YAML at line %zu, column %zu: %s",
                      r->what, m->line + 1, m->column + 1, why);
}

static int next(reader *r, yaml_event_t *ev) {
    if (yaml_parser_parse(&r->p, ev)) return 0;
    const char *why = r->p.problem ? r->p.problem : "cannot be parsed";
    if (r->p.context) {
        return h5ark_fail(
            r->err, H5ARK_SCHEMA_ERROR, "%s: malformed YAML at line %zu, column %zu: %s %s",
            r->what, r->p.problem_mark.line + 1, r->p.problem_mark.column + 1, why, r->p.context);
    }
    return fail_at(r, &r->p.problem_mark, why);
}

static bool is_word(const char *s, const char *const *words) {
    for (; *words; words++)
        if (strcmp(s, *words) == 0) return true;
    return false;
}

/* A plain scalar as YAML 1.1's core types read it; anything else stays a string. */
static h5ark_value *plain_scalar(const char *s) {
    static const char *const nil[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const yes[] = {"true", "True", "TRUE", NULL};
    static const char *const no[] = {"false", "False", "FALSE", NULL};
    static const char *const inf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
    static const char *const ninf[] = {"-.inf", "-.Inf", "-.INF", NULL};
    static const char *const nan[] = {".nan", ".NaN", ".NAN", NULL};
    if (is_word(s, nil)) return h5ark_value_nil();
    if (is_word(s, yes)) return h5ark_value_bool(true);
    if (is_word(s, no)) return h5ark_value_bool(false);
    if (is_word(s, inf)) return h5ark_value_float(INFINITY);
    if (is_word(s, ninf)) return h5ark_value_float(-INFINITY);
    if (is_word(s, nan)) return h5ark_value_float(NAN);
    const char *d = s + (*s == '-' || *s == '+');
    if (*d >= '0' && *d <= '9') {
        char *end;
        errno = 0;
        long long i = strtoll(s, &end, 10);
        if (*end == '\0' && errno == 0) return h5ark_value_int(i);
        bool hex = d[0] == '0' && (d[1] == 'x' || d[1] == 'X');
        errno = 0;
        double f = strtod(s, &end);
        if (!hex && *end == '\0' && errno == 0) return h5ark_value_float(f);
    } else if (*d == '.' && d[1] >= '0' && d[1] <= '9') {
        char *end;
        double f = strtod(s, &end);
        if (*end == '\0') return h5ark_value_float(f);
    }
    return h5ark_value_str(s);
}

static int node(reader *r, yaml_event_t *ev, int depth, h5ark_value **out);

static int collection(reader *r, yaml_event_t *start, int depth, h5ark_value **out) {
    bool map = start->type == YAML_MAPPING_START_EVENT;
    yaml_event_type_t end = map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
    if (depth >= YAML_MAX_DEPTH) return fail_at(r, &start->start_mark, "nested too deeply");
    h5ark_value *v = map ? h5ark_value_map() : h5ark_value_array();
    if (!v) return h5ark_fail(r->err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (;;) {
        yaml_event_t ev;
        if (next(r, &ev)) goto fail;
        if (ev.type == end) {
            yaml_event_delete(&ev);
            break;
        }
        char *key = NULL;
        if (map) {
            if (ev.type != YAML_SCALAR_EVENT) {
                fail_at(r, &ev.start_mark, "a mapping key must be a scalar");
                yaml_event_delete(&ev);
                goto fail;
            }
            key = strdup((const char *)ev.data.scalar.value);
            yaml_mark_t at = ev.start_mark;
            yaml_event_delete(&ev);
            if (!key) {
                h5ark_fail(r->err, H5ARK_RESOURCE_LIMIT, "out of memory");
                goto fail;
            }
            if (h5ark_value_get(v, key)) {
                char why[300];
                snprintf(why, sizeof why, "duplicate key '%.200s'", key);
                free(key);
                fail_at(r, &at, why);
                goto fail;
            }
            if (next(r, &ev)) {
                free(key);
                goto fail;
            }
        }
        h5ark_value *item = NULL;
        int rc = node(r, &ev, depth + 1, &item);
        if (rc == 0 && (map ? h5ark_value_set(v, key, item) : h5ark_value_push(v, item)))
            rc = h5ark_fail(r->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        free(key);
        if (rc) goto fail;
    }
    *out = v;
    return 0;
fail:
    h5ark_value_destroy(&v);
    return -1;
}

/* The node that starts with ev (consumed). */
static int node(reader *r, yaml_event_t *ev, int depth, h5ark_value **out) {
    int rc = 0;
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *s = (const char *)ev->data.scalar.value;
        bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag;
        *out = plain ? plain_scalar(s) : h5ark_value_str(s);
        if (!*out) rc = h5ark_fail(r->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        break;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: rc = collection(r, ev, depth, out); break;
    case YAML_ALIAS_EVENT: rc = fail_at(r, &ev->start_mark, "aliases are not accepted"); break;
    default: rc = fail_at(r, &ev->start_mark, "unexpected YAML event"); break;
    }
    yaml_event_delete(ev);
    return rc;
}

int lbann_yaml_parse(const char *text, size_t len, const char *what, h5ark_value **out,
                     h5ark_error *err) {
    *out = NULL;
    if (len > YAML_MAX_BYTES)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "%s: %zu bytes of YAML is more than %u", what,
                          len, YAML_MAX_BYTES);
    reader r = {.what = what, .err = err};
    if (!yaml_parser_initialize(&r.p))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    yaml_parser_set_input_string(&r.p, (const unsigned char *)text, len);
    h5ark_value *root = NULL;
    int rc = -1, docs = 0;
    for (;;) {
        yaml_event_t ev;
        if (next(&r, &ev)) goto out;
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (t == YAML_DOCUMENT_START_EVENT) {
            yaml_mark_t at = ev.start_mark;
            yaml_event_delete(&ev);
            if (++docs > 1) {
                fail_at(&r, &at, "more than one document");
                goto out;
            }
            continue;
        }
        yaml_mark_t at = ev.start_mark;
        if (node(&r, &ev, 0, &root)) goto out;
        if (root->kind == H5ARK_NIL) {
            h5ark_value_destroy(&root);
        } else if (root->kind != H5ARK_MAP) {
            fail_at(&r, &at, "the schema must be a mapping of field names");
            goto out;
        }
    }
    if (!root && !(root = h5ark_value_map())) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    *out = root;
    root = NULL;
    rc = 0;
out:
    h5ark_value_destroy(&root);
    yaml_parser_delete(&r.p);
    return rc;
}
