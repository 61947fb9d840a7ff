/* awkward 2 forms (see awkward_form.h). */
#include "awkward_form.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[AK_CLASS_COUNT] = {
    "NumpyArray",     "ListOffsetArray", "ListArray",          "RegularArray",
    "RecordArray",    "IndexedArray",    "IndexedOptionArray", "ByteMaskedArray",
    "BitMaskedArray", "UnmaskedArray",   "UnionArray",         "EmptyArray"};

const char *ak_class_name(ak_class cls) {
    return (unsigned)cls < AK_CLASS_COUNT ? class_names[cls] : "?";
}

static const char *const index_names[] = {"i8", "u8", "i32", "u32", "i64"};

const char *ak_index_name(ak_index t) {
    return index_names[t];
}

size_t ak_index_size(ak_index t) {
    static const size_t sizes[] = {1, 1, 4, 4, 8};
    return sizes[t];
}

static const char *const role_names[] = {"data",  "offsets", "starts", "stops",
                                         "index", "tags",    "mask"};

const char *ak_role_name(ak_buffer_role role) {
    return role_names[role];
}

static h5ark_dtype index_dtype(ak_index t) {
    static const h5ark_dtype d[] = {H5ARK_INT8, H5ARK_UINT8, H5ARK_INT32, H5ARK_UINT32,
                                    H5ARK_INT64};
    return d[t];
}

size_t ak_node_buffers(const ak_node *n, ak_buffer_role roles[3]) {
    switch (n->cls) {
    case AK_NUMPY: roles[0] = AK_BUF_DATA; return 1;
    case AK_LISTOFFSET: roles[0] = AK_BUF_OFFSETS; return 1;
    case AK_LIST:
        roles[0] = AK_BUF_STARTS;
        roles[1] = AK_BUF_STOPS;
        return 2;
    case AK_INDEXED:
    case AK_INDEXEDOPTION: roles[0] = AK_BUF_INDEX; return 1;
    case AK_BYTEMASKED:
    case AK_BITMASKED: roles[0] = AK_BUF_MASK; return 1;
    case AK_UNION:
        roles[0] = AK_BUF_TAGS;
        roles[1] = AK_BUF_INDEX;
        return 2;
    default: return 0;
    }
}

h5ark_dtype ak_buffer_dtype(const ak_node *n, ak_buffer_role role) {
    switch (role) {
    case AK_BUF_DATA: return n->dtype;
    case AK_BUF_TAGS: return H5ARK_INT8;
    case AK_BUF_MASK: return n->cls == AK_BITMASKED ? H5ARK_UINT8 : H5ARK_INT8;
    default: return index_dtype(n->index_type);
    }
}

void ak_buffer_name(const ak_node *n, ak_buffer_role role, char *out, size_t size) {
    snprintf(out, size, "%s-%s", n->form_key ? n->form_key : "", role_names[role]);
}

void ak_node_label(const ak_node *n, char *out, size_t size) {
    if (n->form_key)
        snprintf(out, size, "%s '%s'", class_names[n->cls], n->form_key);
    else
        snprintf(out, size, "%s (node %d)", class_names[n->cls], n->id);
}

/* ---- parsing ---------------------------------------------------------------------------- */

typedef struct {
    ak_form *form;
    h5ark_error *err;
} parser;

static void node_free(ak_node *n) {
    if (!n) return;
    for (size_t i = 0; i < n->ncontents; i++) {
        node_free(n->contents[i]);
        if (n->fields) free(n->fields[i]);
    }
    free(n->contents);
    free(n->fields);
    free(n->form_key);
    free(n->array_param);
    free(n);
}

void ak_form_free(ak_form *form) {
    if (!form) return;
    node_free(form->root);
    free(form->json);
    free(form);
}

/* A NumpyArray primitive: its storage dtype and elements per item. */
static bool parse_primitive(const char *p, ak_node *n) {
    static const struct {
        const char *name;
        h5ark_dtype dtype;
        unsigned per_item;
    } prims[] = {
        {"bool", H5ARK_BOOLEAN, 1},      {"int8", H5ARK_INT8, 1},
        {"uint8", H5ARK_UINT8, 1},       {"int16", H5ARK_INT16, 1},
        {"uint16", H5ARK_UINT16, 1},     {"int32", H5ARK_INT32, 1},
        {"uint32", H5ARK_UINT32, 1},     {"int64", H5ARK_INT64, 1},
        {"uint64", H5ARK_UINT64, 1},     {"float16", H5ARK_UINT16, 1}, /* kept as bits */
        {"float32", H5ARK_FLOAT32, 1},   {"float64", H5ARK_FLOAT64, 1},
        {"complex64", H5ARK_FLOAT32, 2}, {"complex128", H5ARK_FLOAT64, 2},
    };
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (strcmp(p, prims[i].name) == 0) {
            n->dtype = prims[i].dtype;
            n->per_item = prims[i].per_item;
            return true;
        }
    /* datetime64 / timedelta64, optionally with a unit such as [ns] or [10s] */
    static const char *const units[] = {"Y",  "M",  "W",  "D",  "h",  "m", "s",
                                        "ms", "us", "ns", "ps", "fs", "as"};
    for (int k = 0; k < 2; k++) {
        const char *base = k ? "timedelta64" : "datetime64";
        size_t bl = strlen(base);
        if (strncmp(p, base, bl) != 0) continue;
        const char *rest = p + bl;
        if (*rest) {
            if (*rest++ != '[') return false;
            while (*rest >= '0' && *rest <= '9')
                rest++;
            const char *close = strchr(rest, ']');
            if (!close || close[1]) return false;
            bool ok = false;
            for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
                ok |= strlen(units[u]) == (size_t)(close - rest) &&
                      strncmp(units[u], rest, (size_t)(close - rest)) == 0;
            if (!ok) return false;
        }
        n->dtype = H5ARK_INT64;
        n->per_item = 1;
        return true;
    }
    return false;
}

static int fail(parser *ps, const ak_node *n, const char *fmt, const char *what) {
    char label[AK_MAX_KEY_BYTES + 64];
    ak_node_label(n, label, sizeof label);
    char msg[600];
    snprintf(msg, sizeof msg, fmt, what);
    return h5ark_fail(ps->err, H5ARK_BAD_REQUEST, "awkward form: %s: %s", label, msg);
}

/* An index-type key ("offsets": "i64"): allowed types given as a mask over ak_index. */
static int parse_index(parser *ps, ak_node *n, json_t *obj, const char *key, unsigned allowed,
                       ak_index def, ak_index *out) {
    json_t *v = json_object_get(obj, key);
    if (!v) { /* legacy class names carry it in the name; the default is awkward's */
        *out = def;
        return 0;
    }
    if (!json_is_string(v)) return fail(ps, n, "'%s' must be a string such as \"i64\"", key);
    for (int t = 0; t <= AK_I64; t++)
        if ((allowed >> t & 1) && strcmp(json_string_value(v), index_names[t]) == 0) {
            *out = (ak_index)t;
            return 0;
        }
    char what[160];
    snprintf(what, sizeof what, "'%s' \"%.60s\" is not an index type allowed here", key,
             json_string_value(v));
    return fail(ps, n, "%s", what);
}

#define MASK(t)       (1u << (t))
#define OFFSETS_TYPES (MASK(AK_I32) | MASK(AK_U32) | MASK(AK_I64))

static ak_node *parse_node(parser *ps, json_t *j, int depth);

static int parse_content(parser *ps, ak_node *n, json_t *obj, int depth) {
    json_t *c = json_object_get(obj, "content");
    if (!c) return fail(ps, n, "%s", "missing 'content'");
    n->contents = calloc(1, sizeof *n->contents);
    if (!n->contents) return h5ark_fail(ps->err, H5ARK_RESOURCE_LIMIT, "out of memory");
    n->ncontents = 1;
    n->contents[0] = parse_node(ps, c, depth + 1);
    return n->contents[0] ? 0 : -1;
}

static int parse_contents(parser *ps, ak_node *n, json_t *contents, json_t *fields, int depth) {
    size_t count = json_is_array(contents) ? json_array_size(contents) : json_object_size(contents);
    if (count > AK_MAX_NODES)
        return h5ark_fail(ps->err, H5ARK_BAD_REQUEST, "awkward form: more than %d nodes",
                          AK_MAX_NODES);
    n->contents = calloc(count ? count : 1, sizeof *n->contents);
    if (fields || json_is_object(contents))
        n->fields = calloc(count ? count : 1, sizeof *n->fields);
    if (!n->contents || ((fields || json_is_object(contents)) && !n->fields))
        return h5ark_fail(ps->err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (json_is_array(contents)) {
        for (size_t i = 0; i < count; i++) {
            if (n->fields) {
                json_t *f = json_array_get(fields, i);
                if (!json_is_string(f)) return fail(ps, n, "%s", "'fields' must hold strings");
                if (!(n->fields[i] = strdup(json_string_value(f))))
                    return h5ark_fail(ps->err, H5ARK_RESOURCE_LIMIT, "out of memory");
            }
            n->ncontents = i + 1;
            if (!(n->contents[i] = parse_node(ps, json_array_get(contents, i), depth + 1)))
                return -1;
        }
        return 0;
    }
    /* older forms: a RecordArray's contents as a map from field name to content */
    const char *key;
    json_t *v;
    size_t i = 0;
    json_object_foreach(contents, key, v) {
        if (!(n->fields[i] = strdup(key)))
            return h5ark_fail(ps->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        n->ncontents = i + 1;
        if (!(n->contents[i] = parse_node(ps, v, depth + 1))) return -1;
        i++;
    }
    return 0;
}

/* Class names as awkward writes them, with the legacy suffixed ones (ListOffsetArray64,
 * IndexedOptionArray32, UnionArray8_64, ...) that also fix the index type. */
static bool parse_class(const char *name, ak_class *cls, ak_index *legacy, bool *has_legacy) {
    *has_legacy = false;
    for (int c = 0; c < AK_CLASS_COUNT; c++) {
        size_t len = strlen(class_names[c]);
        if (strncmp(name, class_names[c], len) != 0) continue;
        const char *suf = name + len;
        if (c == AK_UNION && strncmp(suf, "8_", 2) == 0) suf += 2;
        static const struct {
            const char *s;
            ak_index t;
        } sufs[] = {{"32", AK_I32}, {"U32", AK_U32}, {"64", AK_I64}, {"8", AK_I8}, {"U8", AK_U8}};
        if (*suf == '\0') {
            *cls = (ak_class)c;
            return true;
        }
        for (size_t k = 0; k < sizeof sufs / sizeof sufs[0]; k++)
            if (strcmp(suf, sufs[k].s) == 0) {
                *cls = (ak_class)c;
                *legacy = sufs[k].t;
                *has_legacy = true;
                return true;
            }
    }
    return false;
}

static ak_node *parse_node(parser *ps, json_t *j, int depth) {
    ak_node *n = calloc(1, sizeof *n);
    if (!n) {
        h5ark_fail(ps->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    n->id = (int)ps->form->nnodes++;
    n->per_item = 1;
    n->inner = 1;
    if (depth > AK_MAX_DEPTH) {
        h5ark_fail(ps->err, H5ARK_BAD_REQUEST, "awkward form: nested deeper than %d levels",
                   AK_MAX_DEPTH);
        goto bad;
    }
    if (ps->form->nnodes > AK_MAX_NODES) {
        h5ark_fail(ps->err, H5ARK_BAD_REQUEST, "awkward form: more than %d nodes", AK_MAX_NODES);
        goto bad;
    }
    if (json_is_string(j)) { /* shorthand: a primitive stands for a NumpyArray */
        n->cls = AK_NUMPY;
        snprintf(n->primitive, sizeof n->primitive, "%s", json_string_value(j));
        if (strlen(json_string_value(j)) >= sizeof n->primitive ||
            !parse_primitive(n->primitive, n)) {
            fail(ps, n, "unknown primitive '%s'", n->primitive);
            goto bad;
        }
        fail(ps, n, "%s", "has no form_key, so its buffer has no name");
        goto bad;
    }
    if (!json_is_object(j)) {
        fail(ps, n, "%s", "a node must be a JSON object");
        goto bad;
    }
    json_t *cls = json_object_get(j, "class");
    ak_index legacy = AK_I64;
    bool has_legacy;
    if (!json_is_string(cls)) {
        fail(ps, n, "%s", "missing 'class' (a string)");
        goto bad;
    }
    if (!parse_class(json_string_value(cls), &n->cls, &legacy, &has_legacy)) {
        char what[200];
        snprintf(what, sizeof what, "unknown class '%.100s'", json_string_value(cls));
        h5ark_fail(ps->err, H5ARK_BAD_REQUEST, "awkward form: node %d: %s", n->id, what);
        goto bad;
    }
    json_t *key = json_object_get(j, "form_key");
    if (key && !json_is_null(key)) {
        if (!json_is_string(key)) {
            fail(ps, n, "%s", "'form_key' must be a string or null");
            goto bad;
        }
        const char *k = json_string_value(key);
        if (strlen(k) == 0 || strlen(k) > AK_MAX_KEY_BYTES || strchr(k, '/')) {
            fail(ps, n, "%s", "'form_key' must be 1 to 256 bytes without '/'");
            goto bad;
        }
        if (!(n->form_key = strdup(k))) goto oom;
    }
    json_t *params = json_object_get(j, "parameters");
    if (params && !json_is_null(params)) {
        if (!json_is_object(params)) {
            fail(ps, n, "%s", "'parameters' must be a JSON object");
            goto bad;
        }
        json_t *arr = json_object_get(params, "__array__");
        if (arr && !json_is_string(arr)) {
            fail(ps, n, "%s", "parameter '__array__' must be a string");
            goto bad;
        }
        if (arr && !(n->array_param = strdup(json_string_value(arr)))) goto oom;
    }
    switch (n->cls) {
    case AK_NUMPY: {
        json_t *p = json_object_get(j, "primitive");
        if (!json_is_string(p)) {
            fail(ps, n, "%s", "missing 'primitive' (a string)");
            goto bad;
        }
        snprintf(n->primitive, sizeof n->primitive, "%s", json_string_value(p));
        if (strlen(json_string_value(p)) >= sizeof n->primitive ||
            !parse_primitive(n->primitive, n)) {
            fail(ps, n, "unknown primitive '%s'", n->primitive);
            goto bad;
        }
        json_t *shape = json_object_get(j, "inner_shape");
        if (shape && !json_is_null(shape)) {
            if (!json_is_array(shape) || json_array_size(shape) > 32) {
                fail(ps, n, "%s", "'inner_shape' must be an array of at most 32 sizes");
                goto bad;
            }
            n->inner_ndim = (unsigned)json_array_size(shape);
            for (size_t d = 0; d < n->inner_ndim; d++) {
                json_t *s = json_array_get(shape, d);
                if (!json_is_integer(s) || json_integer_value(s) < 0 ||
                    json_integer_value(s) > (INT64_C(1) << 48)) {
                    fail(ps, n, "%s", "'inner_shape' sizes must be integers from 0 to 2^48");
                    goto bad;
                }
                n->inner_shape[d] = (uint64_t)json_integer_value(s);
                n->inner *= n->inner_shape[d];
                if (n->inner > (UINT64_C(1) << 48)) {
                    fail(ps, n, "%s", "'inner_shape' has more than 2^48 elements per item");
                    goto bad;
                }
            }
        }
        break;
    }
    case AK_EMPTY: break;
    case AK_LISTOFFSET:
        if (parse_index(ps, n, j, "offsets", OFFSETS_TYPES, legacy, &n->index_type) ||
            parse_content(ps, n, j, depth))
            goto bad;
        break;
    case AK_LIST: {
        ak_index stops;
        if (parse_index(ps, n, j, "starts", OFFSETS_TYPES, legacy, &n->index_type) ||
            parse_index(ps, n, j, "stops", OFFSETS_TYPES, n->index_type, &stops))
            goto bad;
        if (stops != n->index_type) {
            fail(ps, n, "%s", "'starts' and 'stops' must have the same type");
            goto bad;
        }
        if (parse_content(ps, n, j, depth)) goto bad;
        break;
    }
    case AK_REGULAR: {
        json_t *s = json_object_get(j, "size");
        if (!json_is_integer(s) || json_integer_value(s) < 0 ||
            json_integer_value(s) > (INT64_C(1) << 48)) {
            fail(ps, n, "%s", "'size' must be an integer from 0 to 2^48");
            goto bad;
        }
        n->size = (uint64_t)json_integer_value(s);
        if (parse_content(ps, n, j, depth)) goto bad;
        break;
    }
    case AK_INDEXED:
        if (parse_index(ps, n, j, "index", OFFSETS_TYPES, legacy, &n->index_type) ||
            parse_content(ps, n, j, depth))
            goto bad;
        break;
    case AK_INDEXEDOPTION:
        if (parse_index(ps, n, j, "index", MASK(AK_I32) | MASK(AK_I64), legacy, &n->index_type) ||
            parse_content(ps, n, j, depth))
            goto bad;
        break;
    case AK_BYTEMASKED:
    case AK_BITMASKED: {
        ak_index m;
        bool bit = n->cls == AK_BITMASKED;
        if (parse_index(ps, n, j, "mask", MASK(bit ? AK_U8 : AK_I8), bit ? AK_U8 : AK_I8, &m))
            goto bad;
        json_t *vw = json_object_get(j, "valid_when");
        if (!json_is_boolean(vw)) {
            fail(ps, n, "%s", "missing 'valid_when' (true or false)");
            goto bad;
        }
        n->valid_when = json_is_true(vw);
        if (bit) {
            json_t *lsb = json_object_get(j, "lsb_order");
            if (!json_is_boolean(lsb)) {
                fail(ps, n, "%s", "missing 'lsb_order' (true or false)");
                goto bad;
            }
            n->lsb_order = json_is_true(lsb);
        }
        if (parse_content(ps, n, j, depth)) goto bad;
        break;
    }
    case AK_UNMASKED:
        if (parse_content(ps, n, j, depth)) goto bad;
        break;
    case AK_UNION: {
        ak_index tags;
        if (parse_index(ps, n, j, "tags", MASK(AK_I8), AK_I8, &tags) ||
            parse_index(ps, n, j, "index", OFFSETS_TYPES, legacy, &n->index_type))
            goto bad;
        json_t *c = json_object_get(j, "contents");
        if (!json_is_array(c) || json_array_size(c) < 1 || json_array_size(c) > 127) {
            fail(ps, n, "%s", "'contents' must be an array of 1 to 127 nodes");
            goto bad;
        }
        if (parse_contents(ps, n, c, NULL, depth)) goto bad;
        break;
    }
    case AK_RECORD: {
        json_t *c = json_object_get(j, "contents");
        json_t *f = json_object_get(j, "fields");
        if (json_is_null(f)) f = NULL;
        if (!json_is_array(c) && !json_is_object(c)) {
            fail(ps, n, "%s", "'contents' must be an array of nodes");
            goto bad;
        }
        if (f &&
            (!json_is_array(f) || !json_is_array(c) || json_array_size(f) != json_array_size(c))) {
            fail(ps, n, "%s", "'fields' must be null or an array as long as 'contents'");
            goto bad;
        }
        if (parse_contents(ps, n, c, f, depth)) goto bad;
        break;
    }
    default: break;
    }
    ak_buffer_role roles[3];
    size_t nb = ak_node_buffers(n, roles);
    if (nb && !n->form_key) {
        fail(ps, n, "%s", "has no form_key, so its buffers have no names");
        goto bad;
    }
    ps->form->nbuffers += nb;
    if (ps->form->nbuffers > AK_MAX_BUFFERS) {
        h5ark_fail(ps->err, H5ARK_BAD_REQUEST, "awkward form: more than %d buffers",
                   AK_MAX_BUFFERS);
        goto bad;
    }
    /* strings: a list of uint8 characters, as awkward itself insists */
    if (n->array_param &&
        (strcmp(n->array_param, "string") == 0 || strcmp(n->array_param, "bytestring") == 0)) {
        bool list = n->cls == AK_LISTOFFSET || n->cls == AK_LIST || n->cls == AK_REGULAR;
        const ak_node *c = list ? n->contents[0] : NULL;
        if (!c || c->cls != AK_NUMPY || c->dtype != H5ARK_UINT8 || c->inner_ndim ||
            strcmp(c->primitive, "uint8") != 0) {
            fail(ps, n, "__array__ \"%s\" needs a list of uint8 characters", n->array_param);
            goto bad;
        }
    }
    return n;
oom:
    h5ark_fail(ps->err, H5ARK_RESOURCE_LIMIT, "out of memory");
bad:
    node_free(n);
    return NULL;
}

/* Two buffers of one name would make one of them unreachable. */
static int check_keys(const ak_node *n, const ak_node **seen, size_t *nseen, h5ark_error *err) {
    if (n->form_key) {
        ak_buffer_role r1[3], r2[3];
        size_t c1 = ak_node_buffers(n, r1);
        for (size_t i = 0; i < *nseen; i++) {
            if (strcmp(seen[i]->form_key, n->form_key) != 0) continue;
            size_t c2 = ak_node_buffers(seen[i], r2);
            for (size_t a = 0; a < c1; a++)
                for (size_t b = 0; b < c2; b++)
                    if (r1[a] == r2[b])
                        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                                          "awkward form: two nodes have form_key '%s', so "
                                          "buffer '%s-%s' would name both",
                                          n->form_key, n->form_key, role_names[r1[a]]);
        }
        seen[(*nseen)++] = n;
    }
    for (size_t i = 0; i < n->ncontents; i++)
        if (check_keys(n->contents[i], seen, nseen, err)) return -1;
    return 0;
}

ak_form *ak_form_parse(const char *json, size_t len, h5ark_error *err) {
    if (len > AK_MAX_FORM_BYTES) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "awkward form: %zu bytes is more than the limit of %u",
                   len, AK_MAX_FORM_BYTES);
        return NULL;
    }
    ak_form *form = calloc(1, sizeof *form);
    if (!form || !(form->json = malloc(len + 1))) {
        free(form);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    memcpy(form->json, json, len);
    form->json[len] = '\0';
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!root) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "awkward form: not JSON: %s (at character %d)",
                   jerr.text, jerr.position);
        ak_form_free(form);
        return NULL;
    }
    parser ps = {form, err};
    form->root = parse_node(&ps, root, 1);
    json_decref(root);
    if (form->root) {
        const ak_node **seen = calloc(form->nnodes, sizeof *seen);
        size_t nseen = 0;
        int rc = seen ? check_keys(form->root, seen, &nseen, err)
                      : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        free(seen);
        if (rc == 0) return form;
    }
    ak_form_free(form);
    return NULL;
}
