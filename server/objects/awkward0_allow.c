/* awkward0 schemas: the allow-list check (see awkward0.h). */
#include "awkward0_interp.h"

#include <fnmatch.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P(...)                                                                                     \
    {                                                                                              \
        (const char *const[]){__VA_ARGS__},                                                        \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)                      \
    }

const ak0_pattern ak0_default_whitelist[] = {
    P("numpy", "frombuffer"),
    P("zlib", "decompress"),
    P("lzma", "decompress"),
    P("backports.lzma", "decompress"),
    P("lz4.block", "decompress"),
    P("awkward0", "*Array"),
    P("awkward0", "Table"),
    P("awkward0", "numpy", "frombuffer"),
    P("awkward0.util", "frombuffer"),
    P("awkward0.persist"),
    P("awkward0.arrow", "_ParquetFile", "fromjson"),
    P("awkward", "*Array"),
    P("awkward", "Table"),
    P("awkward", "numpy", "frombuffer"),
    P("awkward.util", "frombuffer"),
    P("awkward.persist"),
    P("awkward.arrow", "_ParquetFile", "fromjson"),
    P("uproot3_methods.classes.*"),
    P("uproot3_methods.profiles.*"),
    P("uproot_methods.classes.*"),
    P("uproot_methods.profiles.*"),
    P("uproot.tree", "_LazyFiles"),
    P("uproot.tree", "_LazyTree"),
    P("uproot.tree", "_LazyBranch"),
};
const size_t ak0_default_whitelist_len =
    sizeof ak0_default_whitelist / sizeof ak0_default_whitelist[0];

typedef struct {
    const ak0_pattern *wl;
    size_t nwl;
    h5ark_error *err;
} walker;

/* awkward0's spec2function: an entry matches when every pair of (spec part, pattern
 * part) matches, over the shorter of the two (fnmatchcase: no special case for '/'). */
static bool allowed(const walker *w, json_t *spec) {
    size_t n = json_array_size(spec);
    for (size_t e = 0; e < w->nwl; e++) {
        bool ok = true;
        for (size_t i = 0; ok && i < n && i < w->wl[e].n; i++)
            ok = fnmatch(w->wl[e].parts[i], json_string_value(json_array_get(spec, i)), 0) == 0;
        if (ok) return true;
    }
    return false;
}

/* The spec as Python's repr writes a list of str: ['tests.test_persist', 'FloatPoint']. */
static void spec_repr(json_t *spec, char *out, size_t size) {
    size_t pos = 0;
    pos += (size_t)snprintf(out + pos, size - pos, "[");
    for (size_t i = 0; i < json_array_size(spec) && pos < size; i++)
        pos += (size_t)snprintf(out + pos, size - pos, "%s'%s'", i ? ", " : "",
                                json_string_value(json_array_get(spec, i)));
    if (pos < size) snprintf(out + pos, size - pos, "]");
}

static int check_spec(walker *w, json_t *spec) {
    bool strings = json_is_array(spec) && json_array_size(spec) > 0;
    for (size_t i = 0; strings && i < json_array_size(spec); i++)
        strings = json_is_string(json_array_get(spec, i));
    if (!strings)
        return h5ark_fail(w->err, H5ARK_SCHEMA_ERROR,
                          "awkward0 schema: a function is named by an array of strings");
    if (allowed(w, spec)) return 0;
    char repr[600];
    spec_repr(spec, repr, sizeof repr);
    return h5ark_fail(w->err, H5ARK_FORBIDDEN,
                      "callable not in whitelist; add it by passing a whitelist argument:\n\n"
                      "    whitelist = awkward0.persist.whitelist + [%s]",
                      repr);
}

static int walk(walker *w, json_t *node, int depth) {
    if (depth > AK0_MAX_DEPTH)
        return h5ark_fail(w->err, H5ARK_SCHEMA_ERROR,
                          "awkward0 schema: nested deeper than %d levels", AK0_MAX_DEPTH);
    if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v) {
            if (walk(w, v, depth + 1)) return -1;
        }
        return 0;
    }
    if (!json_is_object(node)) return 0;
    /* data, not schema: what they hold is never called */
    if (json_object_get(node, "json") || json_object_get(node, "dtype") ||
        json_object_get(node, "read") || json_object_get(node, "ref"))
        return 0;
    if (json_object_get(node, "python"))
        return h5ark_fail(w->err, H5ARK_FORBIDDEN,
                          "awkward0 schema: a pickled Python object ('python' node) is never "
                          "read");
    json_t *call = json_object_get(node, "call");
    if (call && check_spec(w, call)) return -1;
    json_t *fn = json_object_get(node, "function");
    if (fn && check_spec(w, fn)) return -1;
    /* then what the call takes, in awkward0's order: args, kwargs, and the containers */
    static const char *const keys[] = {"args", "kwargs", "list", "tuple", "dict", "pairs"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(node, keys[k]);
        if (!v) continue;
        if (json_is_object(v)) {
            const char *key;
            json_t *x;
            json_object_foreach(v, key, x) {
                if (walk(w, x, depth + 1)) return -1;
            }
        } else if (walk(w, v, depth + 1)) {
            return -1;
        }
    }
    return 0;
}

json_t *ak0_load(const char *json, size_t len, h5ark_error *err) {
    if (len > AK0_MAX_SCHEMA_BYTES) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 schema: %zu bytes is more than %u", len,
                   AK0_MAX_SCHEMA_BYTES);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    if (!root) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 schema: not JSON: %s", jerr.text);
        return NULL;
    }
    if (!json_is_object(root) ||
        (!json_object_get(root, "awkward0") && !json_object_get(root, "awkward")) ||
        !json_object_get(root, "schema")) {
        json_decref(root);
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "awkward0 schema: not an awkward0 schema (no 'awkward0' and 'schema' keys)");
        return NULL;
    }
    return root;
}

int ak0_check_schema(const char *json, size_t len, const ak0_pattern *wl, size_t nwl,
                     h5ark_error *err) {
    json_t *root = ak0_load(json, len, err);
    if (!root) return -1;
    walker w = {wl ? wl : ak0_default_whitelist, wl ? nwl : ak0_default_whitelist_len, err};
    int rc = walk(&w, json_object_get(root, "schema"), 1);
    json_decref(root);
    return rc;
}

void ak0_top_call(const char *json, size_t len, char *out, size_t size) {
    h5ark_error ignored;
    out[0] = '\0';
    json_t *root = ak0_load(json, len, &ignored);
    json_t *call = root ? json_object_get(json_object_get(root, "schema"), "call") : NULL;
    size_t pos = 0;
    for (size_t i = 0; json_is_array(call) && i < json_array_size(call) && pos < size; i++)
        if (json_is_string(json_array_get(call, i)))
            pos += (size_t)snprintf(out + pos, size - pos, "%s%s", i ? "." : "",
                                    json_string_value(json_array_get(call, i)));
    json_decref(root);
}
