/* ExeTera's dataframes on disk (docs/FORMAT.md, "ExeTera dataframes"): a dataframe is a
 * group with no ObjType whose children are field groups; a field is a group with a string
 * attribute `fieldtype` holding its datasets:
 *   indexedstring          `index` (n + 1 int64 offsets from 0) and `values` (any bytes)
 *   fixedstring,<n>        `values`: S<n>, NUL-padded (trailing NULs are padding, others data)
 *   numeric,<dtype>        `values` of that dtype (h5py's bool enum for bool)
 *   categorical,<dtype>    `values` (codes), `key_values` (int8) and `key_names` (strings)
 *   timestamp              `values`: float64 seconds since the epoch
 * Each dataset may carry `completed`, an enum {FALSE, TRUE} attribute set when a write
 * finishes. Read-only here: a field reads as Strings, a pdarray or a Categorical carrying
 * `fieldtype` and `completed` in its descriptor; a dataframe as a DataFrame of its fields
 * in name order. */
#include "families.h"

#include "files.h"
#include "hdf5_util.h"
#include "layout.h"
#include "locales.h"
#include "objects/categorical.h"
#include "objects/pdarray.h"
#include "objects/strings.h"
#include "dist/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATTR_FIELDTYPE "fieldtype"
#define ATTR_COMPLETED "completed"

typedef exetera_fieldtype fieldtype;

exetera_fieldtype exetera_parse_fieldtype(const char *s, h5ark_dtype *dtype) {
    if (strcmp(s, "indexedstring") == 0) return FT_INDEXED;
    if (strcmp(s, "timestamp") == 0) return FT_TIMESTAMP;
    if (strncmp(s, "fixedstring,", 12) == 0) {
        const char *p = s + 12;
        char *end;
        if (*p < '1' || *p > '9') return FT_BAD;
        unsigned long long n = strtoull(p, &end, 10);
        return *end == '\0' && n <= (1u << 20) ? FT_FIXED : FT_BAD;
    }
    bool numeric = strncmp(s, "numeric,", 8) == 0;
    if (!numeric && strncmp(s, "categorical,", 12) != 0) return FT_BAD;
    const char *name = s + (numeric ? 8 : 12);
    static const char *const numeric_types[] = {"bool",   "int8",    "int16",  "int32",
                                                "int64",  "uint8",   "uint16", "uint32",
                                                "uint64", "float32", "float64"};
    size_t last = numeric ? sizeof numeric_types / sizeof numeric_types[0] : 9;
    for (size_t i = numeric ? 0 : 1; i < last; i++)
        if (strcmp(name, numeric_types[i]) == 0)
            return h5ark_dtype_from_name(name, dtype) ? (numeric ? FT_NUMERIC : FT_CATEGORICAL)
                                                      : FT_BAD;
    return FT_BAD;
}

/* A fieldtype fit to quote in a message: printable ASCII, at most 40 characters. */
static void quote(const char *s, char *out, size_t len) {
    size_t k = 0;
    for (; *s && k + 4 < len && k < 40; s++)
        out[k++] = (unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?';
    if (*s && k + 4 < len) out[k++] = '.', out[k++] = '.', out[k++] = '.';
    out[k] = '\0';
}

int exetera_read_str_attr(hid_t obj, const char *name, char *out, size_t len) {
    char *s;
    int rc = h5u_read_text_attr(obj, name, (1u << 20) - 1, &s);
    snprintf(out, len, "%s", rc == 1 ? s : "");
    free(s);
    return rc;
}

/* The `completed` mark of dataset `path`: ABSENT, or FALSE / TRUE from its value (an enum
 * or integer of at most 8 bytes, nonzero for TRUE). */
static uint8_t read_completed(hid_t file, const char *path) {
    uint8_t rc = NODE_COMPLETED_ABSENT;
    hid_t d = H5Oopen(file, path, H5P_DEFAULT);
    if (d < 0 || H5Aexists(d, ATTR_COMPLETED) <= 0) {
        if (d >= 0) H5Oclose(d);
        H5Eclear2(H5E_DEFAULT);
        return rc;
    }
    hid_t a = H5Aopen(d, ATTR_COMPLETED, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    unsigned char buf[8] = {0};
    if ((c == H5T_ENUM || c == H5T_INTEGER) && H5Tget_size(t) <= sizeof buf && sp >= 0 &&
        H5Sget_simple_extent_npoints(sp) == 1 && H5Aread(a, t, buf) >= 0) {
        bool any = false;
        for (size_t i = 0; i < sizeof buf; i++)
            any |= buf[i] != 0;
        rc = any ? NODE_COMPLETED_TRUE : NODE_COMPLETED_FALSE;
    }
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    H5Oclose(d);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* ---- detection ------------------------------------------------------------------------ */

static bool has_fieldtype(hid_t g) {
    bool yes = H5Aexists(g, ATTR_FIELDTYPE) > 0;
    H5Eclear2(H5E_DEFAULT);
    return yes;
}

static int detect_field(const schema_facts *f, schema_match *m) {
    (void)m;
    /* the `fieldtype` mark says what the group is, as ObjType would */
    return f->is_group && !f->has_objtype && has_fieldtype(f->obj) ? SCHEMA_BY_OBJTYPE
                                                                   : SCHEMA_NOT_MINE;
}

/* The children of a dataframe group in name order, when every one is a field group. */
static int field_names(hid_t g, h5u_names *out) {
    h5ark_error ignored = {0};
    if (h5u_link_names(g, NULL, out, "an ExeTera dataframe", &ignored) < 0) return -1;
    if (out->n == 0) return -1;
    for (size_t i = 0; i < out->n; i++) {
        H5O_info_t info;
        if (H5Oget_info_by_name(g, out->v[i], &info, H5P_DEFAULT) < 0 ||
            info.type != H5O_TYPE_GROUP) {
            H5Eclear2(H5E_DEFAULT);
            return -1;
        }
        bool yes = H5Aexists_by_name(g, out->v[i], ATTR_FIELDTYPE, H5P_DEFAULT) > 0;
        H5Eclear2(H5E_DEFAULT);
        if (!yes) return -1;
    }
    return 0;
}

/* Each child a field group: stops at the first that is not (1), or on a failure (-1). */
static herr_t is_field_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    size_t *count = data;
    H5O_info_t oi;
    if (info->type != H5L_TYPE_HARD || H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0 ||
        oi.type != H5O_TYPE_GROUP || H5Aexists_by_name(g, name, ATTR_FIELDTYPE, H5P_DEFAULT) <= 0)
        return 1;
    ++*count;
    return 0;
}

static int detect_df(const schema_facts *f, schema_match *m) {
    (void)m;
    if (!f->is_group || f->has_objtype || has_fieldtype(f->obj)) return SCHEMA_NOT_MINE;
    /* no list of names: a group of many children stops at its first that is no field */
    size_t count = 0;
    hsize_t idx = 0;
    herr_t r = H5Literate(f->obj, H5_INDEX_NAME, H5_ITER_INC, &idx, is_field_cb, &count);
    H5Eclear2(H5E_DEFAULT);
    return r == 0 && count > 0 ? SCHEMA_BY_SHAPE : SCHEMA_NOT_MINE;
}

/* ---- probing -------------------------------------------------------------------------- */

static int add_kid(read_node *n, const char *name, const char *child, bool as_index,
                   h5ark_error *err) {
    char path[1200];
    if (snprintf(path, sizeof path, "%s%s%s", n->path, child ? "/" : "", child ? child : "") >=
        (int)sizeof path)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s': name too long", n->path);
    read_node *k = node_add_kid(n, name, path, err);
    if (!k) return -1;
    k->component = true;
    k->as_index = as_index;
    return 0;
}

static int warn(const probe_ctx *pc, const read_node *n, uint8_t completed, h5ark_error *err) {
    if (!pc->warnings) return 0;
    char line[1400];
    snprintf(line, sizeof line, "ExeTera field '%s' in '%s' is not completed (%s); read as it is",
             n->path, files_display(pc->path),
             completed == NODE_COMPLETED_FALSE ? "'completed' is FALSE" : "no 'completed' mark");
    for (size_t i = 0; i < pc->warnings->n; i++)
        if (strcmp(pc->warnings->v[i], line) == 0) return 0;
    return h5u_names_push(pc->warnings, line)
               ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
               : 0;
}

/* The kind a dataset of the field must be read as. */
static int expect_kind(const read_node *n, const read_node *kid, read_kind want, h5ark_error *err) {
    if (kid->kind == want && !kid->tag && !kid->legacy) return 0;
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "ExeTera field '%s' is '%s' but '%s' is %s", n->path,
                      n->fieldtype, kid->path, schema_what(kid->kind));
}

static int probe_field(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    char ft[256], q[64];
    hid_t g = H5Gopen2(pc->file, n->path, H5P_DEFAULT);
    if (g < 0)
        return h5u_fail(err, H5ARK_SCHEMA_ERROR, "ExeTera field '%s' cannot be opened", n->path);
    int r = exetera_read_str_attr(g, ATTR_FIELDTYPE, ft, sizeof ft);
    H5Gclose(g);
    if (r <= 0)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "ExeTera field '%s': its 'fieldtype' attribute is not a string", n->path);
    quote(ft, q, sizeof q);
    h5ark_dtype dtype = H5ARK_INT64;
    fieldtype type = exetera_parse_fieldtype(ft, &dtype);
    if (type == FT_BAD)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "ExeTera field '%s' has fieldtype '%s', which h5ark does not read "
                          "(indexedstring, fixedstring,<n>, numeric,<dtype>, "
                          "categorical,<integer dtype>, timestamp)",
                          n->path, q);
    if (n->fieldtype && strcmp(n->fieldtype, ft) != 0) {
        char was[64];
        quote(n->fieldtype, was, sizeof was);
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "ExeTera field '%s' is '%s' here but '%s' in the files before", n->path,
                          q, was);
    }
    if (!n->fieldtype && !(n->fieldtype = strdup(ft)))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (n->nkids == 0) {
        int rc = 0;
        if (type == FT_INDEXED)
            rc = add_kid(n, "data", NULL, false, err);
        else if (type == FT_CATEGORICAL)
            rc = add_kid(n, "codes", CHILD_VALUES, true, err) ||
                 add_kid(n, "key_values", "key_values", true, err) ||
                 add_kid(n, "key_names", "key_names", false, err);
        else
            rc = add_kid(n, "data", CHILD_VALUES, false, err);
        if (rc) return -1;
    }
    /* completed: the mark of the dataset written last, `index` or `values` */
    char mpath[1200];
    snprintf(mpath, sizeof mpath, "%s/%s", n->path, type == FT_INDEXED ? "index" : CHILD_VALUES);
    uint8_t completed = read_completed(pc->file, mpath);
    if (n->completed == NODE_COMPLETED_UNSEEN || completed < n->completed) n->completed = completed;
    if (completed != NODE_COMPLETED_TRUE && warn(pc, n, completed, err)) return -1;
    if (type == FT_INDEXED) {
        read_node *k = &n->kids[0];
        k->kind = KIND_STRINGS;
        return strings_probe_indexed(pc, k, err);
    }
    for (size_t i = 0; i < n->nkids; i++)
        if (schema_probe(pc, &n->kids[i], err)) return -1;
    read_kind want = type == FT_FIXED ? KIND_H5STRINGS : KIND_PDARRAY;
    if (expect_kind(n, &n->kids[0], want, err)) return -1;
    read_dataset *ds = &n->kids[0].ds;
    h5ark_dtype got = ds->values.n ? ds->values.src[ds->values.n - 1].info.dtype : ds->first_dtype;
    if (type == FT_TIMESTAMP) dtype = H5ARK_FLOAT64;
    if (type == FT_CATEGORICAL) {
        if (expect_kind(n, &n->kids[1], KIND_PDARRAY, err) ||
            expect_kind(n, &n->kids[2], KIND_H5STRINGS, err))
            return -1;
        read_dataset *kv = &n->kids[1].ds;
        h5ark_dtype kt =
            kv->values.n ? kv->values.src[kv->values.n - 1].info.dtype : kv->first_dtype;
        if (h5ark_dtype_is_float(got) || got == H5ARK_BOOLEAN || h5ark_dtype_is_float(kt) ||
            kt == H5ARK_BOOLEAN)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "ExeTera field '%s' is '%s' but its codes are %s and its "
                              "'key_values' %s (both must be integers)",
                              n->path, q, h5ark_dtype_name(got), h5ark_dtype_name(kt));
        if ((ds->values.n || ds->have_dtype) && got != dtype)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "ExeTera field '%s' is '%s' but its codes are %s", n->path, q,
                              h5ark_dtype_name(got));
    } else if (type != FT_FIXED && (ds->values.n || ds->have_dtype) && got != dtype) {
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "ExeTera field '%s' is '%s' but its 'values' are %s", n->path, q,
                          h5ark_dtype_name(got));
    }
    return 0;
}

/* The rows of a probed field, from its read tree. */
static uint64_t node_rows(const read_node *field) {
    if (field->nkids == 0) return 0;
    const read_node *k = &field->kids[0];
    return k->kind == KIND_STRINGS ? k->ds.segments.total : k->ds.values.total;
}

static int probe_df(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    if (n->nkids == 0) {
        hid_t g = H5Gopen2(pc->file, n->path, H5P_DEFAULT);
        if (g < 0)
            return h5u_fail(err, H5ARK_SCHEMA_ERROR, "ExeTera dataframe '%s' cannot be opened",
                            n->path);
        h5u_names names = {0};
        int rc = field_names(g, &names) ? h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                                                     "ExeTera dataframe '%s': its children are "
                                                     "not all fields",
                                                     n->path)
                                        : 0;
        H5Gclose(g);
        for (size_t i = 0; i < names.n && rc == 0; i++)
            rc = add_kid(n, names.v[i], names.v[i], false, err);
        h5u_names_free(&names);
        if (rc) return -1;
    } else if (node_check_children(pc->file, n, "ExeTera dataframe", "field", err)) {
        return -1;
    }
    /* fields of one length in this file: schema_classify (whole_df) saw to it */
    for (size_t i = 0; i < n->nkids; i++)
        if (schema_probe(pc, &n->kids[i], err)) return -1;
    return 0;
}

/* ---- building ------------------------------------------------------------------------- */

/* A strings object of `count` strings (small: key names, which every rank holds), spread
 * over the locales; each rank fills its own. */
static object *strings_of(char *const *v, size_t count, h5ark_error *err) {
    int L = locales_count();
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    int rc = counts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) { /* object_new_strings is made on every rank or none */
        free(counts);
        return NULL;
    }
    for (int b = 0; b < L; b++)
        for (uint64_t i = locales_block_start(count, L, b);
             i < locales_block_start(count, L, b + 1); i++)
            counts[b] += strlen(v[i]) + 1;
    object *s = object_new_strings(count, counts, err);
    free(counts);
    if (!s) return NULL;
    for (int b = 0; b < L; b++) {
        shard *ss = &s->segments->shards[b], *vs = &s->values->shards[b];
        if (!locales_is_local(b)) continue;
        uint64_t at = vs->start;
        for (uint64_t i = 0; i < ss->count; i++) {
            const char *t = v[ss->start + i];
            ((int64_t *)ss->data)[i] = (int64_t)at;
            memcpy((char *)vs->data + (at - vs->start), t, strlen(t) + 1);
            at += strlen(t) + 1;
        }
    }
    return s;
}

typedef struct {
    object *codes;         /* int64: ExeTera's codes in, category indices out */
    const int64_t *lookup; /* category of key value k + 128, or na */
    int64_t na;
} map_job;

static void map_shard(int b, void *ctx) {
    map_job *j = ctx;
    shard *sh = &j->codes->values->shards[b];
    int64_t *c = sh->data;
    for (uint64_t i = 0; i < sh->count; i++)
        c[i] = c[i] >= -128 && c[i] < 128 ? j->lookup[c[i] + 128] : j->na;
}

/* Categories: the distinct key names in the order of their first key, then the NA text;
 * codes: the category of the key whose value they are, the NA category when none is. */
static int build_categorical(read_node *n, bool strict, bool tags, object **obj, object **tag,
                             h5ark_error *err) {
    object *codes = NULL, *kv = NULL, *kn = NULL, *t = NULL, *x = NULL, *cats = NULL;
    char **names = NULL, **texts = NULL;
    int64_t *keys = NULL;
    size_t nnames = 0;
    int rc = -1;
    if (schema_build(&n->kids[0], strict, tags, &codes, &t, err) ||
        schema_build(&n->kids[1], strict, false, &kv, &x, err) ||
        schema_build(&n->kids[2], strict, false, &kn, &x, err))
        goto out;
    if (kv->size != kn->size) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "ExeTera field '%s': 'key_values' has %llu keys but 'key_names' %llu", n->path,
                   (unsigned long long)kv->size, (unsigned long long)kn->size);
        goto out;
    }
    if (kv->size > 256) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "ExeTera field '%s' has %llu keys; int8 keys are at most 256", n->path,
                   (unsigned long long)kv->size);
        goto out;
    }
    int64_t lookup[256];
    names = calloc(kv->size + 1, sizeof *names);
    keys = calloc(kv->size + 1, sizeof *keys);
    texts = calloc(kv->size + 1, sizeof *texts);
    int mrc = names && keys && texts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(mrc, err)) goto out;
    /* the keys (at most 256) on every rank, each from the rank holding it; every rank takes
     * part in every one, and then they agree */
    h5ark_error kerr = {0};
    for (uint64_t i = 0; i < kv->size; i++) {
        if (pdarray_int64_at(kv, i, &keys[i], &kerr)) mrc = -1;
        if (!(texts[i] = strings_dup(kn, i, NULL, &kerr))) mrc = -1;
    }
    if (mrc) *err = kerr;
    if (ranks_agree(mrc, err)) goto out;
    for (int i = 0; i < 256; i++)
        lookup[i] = -1;
    for (uint64_t i = 0; i < kv->size; i++) {
        int64_t k = keys[i];
        char *text = texts[i];
        texts[i] = NULL;
        size_t c = 0;
        while (c < nnames && strcmp(names[c], text) != 0)
            c++;
        if (c == nnames)
            names[nnames++] = text;
        else
            free(text);
        if (k < -128 || k > 127) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                       "ExeTera field '%s': key value %lld is outside int8", n->path, (long long)k);
            goto out;
        }
        if (lookup[k + 128] >= 0 && lookup[k + 128] != (int64_t)c) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                       "ExeTera field '%s': key value %lld names both '%s' and '%s'", n->path,
                       (long long)k, names[lookup[k + 128]], names[c]);
            goto out;
        }
        lookup[k + 128] = (int64_t)c;
    }
    /* the NA text: "N/A", or made distinct from every key name */
    char na[300] = "N/A";
    for (bool taken = true; taken;) {
        taken = false;
        for (size_t c = 0; c < nnames && !taken; c++)
            taken = strcmp(names[c], na) == 0;
        if (taken && strlen(na) + 2 < sizeof na) strcat(na, "_");
    }
    if (!(names[nnames] = strdup(na))) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    nnames++;
    for (int i = 0; i < 256; i++)
        if (lookup[i] < 0) lookup[i] = (int64_t)nnames - 1;
    map_job j = {.codes = codes, .lookup = lookup, .na = (int64_t)nnames - 1};
    locales_run(map_shard, &j);
    if (!(cats = strings_of(names, nnames, err))) goto out;
    if (!(*obj = categorical_from_codes(codes, cats, na, err))) goto out;
    *tag = t;
    t = NULL;
    rc = 0;
out:
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    for (uint64_t i = 0; texts && kv && i < kv->size; i++)
        free(texts[i]);
    free(texts);
    free(keys);
    object_release(codes);
    object_release(kv);
    object_release(kn);
    object_release(cats);
    object_release(t);
    return rc ? h5ark_fail_context(err, "ExeTera field '%s'", n->path), -1 : 0;
}

static int build_field(read_node *n, bool strict, bool tags, object **obj, object **tag,
                       h5ark_error *err) {
    *obj = *tag = NULL;
    h5ark_dtype dtype;
    fieldtype type = n->fieldtype ? exetera_parse_fieldtype(n->fieldtype, &dtype) : FT_BAD;
    if (type == FT_BAD || n->nkids == 0)
        return h5ark_fail(err, H5ARK_INTERNAL, "ExeTera field '%s' was not probed", n->path);
    int rc = type == FT_CATEGORICAL ? build_categorical(n, strict, tags, obj, tag, err)
                                    : schema_build(&n->kids[0], strict, tags, obj, tag, err);
    if (rc) return -1;
    h5ark_value *completed = n->completed == NODE_COMPLETED_TRUE    ? h5ark_value_bool(true)
                             : n->completed == NODE_COMPLETED_FALSE ? h5ark_value_bool(false)
                                                                    : h5ark_value_nil();
    if (object_set_extra(*obj, "fieldtype", h5ark_value_str(n->fieldtype), err) ||
        object_set_extra(*obj, "completed", completed, err)) {
        object_release(*obj);
        object_release(*tag);
        *obj = *tag = NULL;
        return -1;
    }
    return 0;
}

/* Rows: an indexed string field's strings, a categorical's codes, other fields' values. */
static int slice_field(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err) {
    return n->nkids ? schema_slice(&n->kids[0], lo, hi, err) : 0;
}

/* A DataFrame of the fields, once they are known to have as many rows each (before any data
 * is read). */
static int build_df(read_node *n, bool strict, bool tags, object **obj, object **tag,
                    h5ark_error *err) {
    *obj = *tag = NULL;
    for (size_t i = 1; i < n->nkids; i++)
        if (node_rows(&n->kids[i]) != node_rows(&n->kids[0]))
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "ExeTera dataframe '%s' is not one table: field '%s' has %llu rows "
                              "but '%s' has %llu; read its fields one by one",
                              n->path, n->kids[i].name, (unsigned long long)node_rows(&n->kids[i]),
                              n->kids[0].name, (unsigned long long)node_rows(&n->kids[0]));
    return dataframe_build(n, strict, tags, obj, tag, err);
}

/* ---- listing -------------------------------------------------------------------------- */

/* The length of a field: its strings, codes or values. */
static int64_t field_rows(hid_t g, fieldtype type) {
    hid_t d = h5u_open_child(g, type == FT_INDEXED ? "index" : CHILD_VALUES, H5O_TYPE_DATASET);
    if (d < 0) return -1;
    int64_t n = h5u_dataset_len(d);
    H5Oclose(d);
    return type == FT_INDEXED && n > 0 ? n - 1 : n;
}

/* Text from a file: a str when valid UTF-8, else bytes. */
static h5ark_value *text(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80             ? 0
                : (*p & 0xe0) == 0xc0 ? 1
                : (*p & 0xf0) == 0xe0 ? 2
                : (*p & 0xf8) == 0xf0 ? 3
                                      : -1;
        if (n < 0 || (n == 1 && *p < 0xc2)) return h5ark_value_bin(s, strlen(s));
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xc0) != 0x80) return h5ark_value_bin(s, strlen(s));
    }
    return h5ark_value_str(s);
}

static void list_field(const schema_facts *f, schema_listing *out) {
    char ft[256];
    h5ark_dtype dtype = H5ARK_INT64;
    int r = exetera_read_str_attr(f->obj, ATTR_FIELDTYPE, ft, sizeof ft);
    fieldtype type = r == 1 ? exetera_parse_fieldtype(ft, &dtype) : FT_BAD;
    out->kind = "field";
    out->extra = h5ark_value_map();
    if (!out->extra) return;
    char q[64];
    quote(ft, q, sizeof q);
    int64_t rows = type == FT_BAD ? -1 : field_rows(f->obj, type);
    char mpath[16];
    snprintf(mpath, sizeof mpath, "%s", type == FT_INDEXED ? "index" : CHILD_VALUES);
    uint8_t c = read_completed(f->obj, mpath);
    int bad = h5ark_value_set(out->extra, "fieldtype", r == 1 ? text(ft) : h5ark_value_nil()) ||
              h5ark_value_set(out->extra, "length",
                              rows >= 0 ? h5ark_value_int(rows) : h5ark_value_nil()) ||
              h5ark_value_set(out->extra, "completed",
                              c == NODE_COMPLETED_TRUE    ? h5ark_value_bool(true)
                              : c == NODE_COMPLETED_FALSE ? h5ark_value_bool(false)
                                                          : h5ark_value_nil());
    if (bad) h5ark_value_destroy(&out->extra);
    out->rows = rows;
    switch (type) {
    case FT_BAD: break; /* whole_field says why it does not read */
    case FT_INDEXED:
    case FT_FIXED:
        out->objtype = "strings";
        snprintf(out->dtype, sizeof out->dtype, "str");
        break;
    case FT_CATEGORICAL:
        out->objtype = "categorical";
        snprintf(out->dtype, sizeof out->dtype, "str");
        break;
    case FT_TIMESTAMP:
        dtype = H5ARK_FLOAT64;
        /* fall through */
    case FT_NUMERIC:
        out->objtype = "pdarray";
        snprintf(out->dtype, sizeof out->dtype, "%s", h5ark_dtype_name(dtype));
        break;
    }
}

/* The rows of a field group and its fieldtype (FT_BAD when not one h5ark reads). */
static int64_t field_group_rows(hid_t g, char *ft, size_t len, fieldtype *type) {
    h5ark_dtype dtype;
    int r = exetera_read_str_attr(g, ATTR_FIELDTYPE, ft, len);
    *type = r == 1 ? exetera_parse_fieldtype(ft, &dtype) : FT_BAD;
    return *type == FT_BAD ? -1 : field_rows(g, *type);
}

/* Rows: its first field's (whole_df sees that they all have as many). */
static void list_df(const schema_facts *f, schema_listing *out) {
    h5u_names names = {0};
    if (field_names(f->obj, &names) == 0) {
        hid_t g = H5Gopen2(f->obj, names.v[0], H5P_DEFAULT);
        char ft[256];
        fieldtype type;
        if (g >= 0) out->rows = field_group_rows(g, ft, sizeof ft, &type);
        if (g >= 0) H5Gclose(g);
        H5Eclear2(H5E_DEFAULT);
    }
    h5u_names_free(&names);
}

/* ---- classification -------------------------------------------------------------------- */

/* Its fieldtype one h5ark reads, and the datasets that fieldtype needs. */
static void whole_field(const schema_facts *f, unsigned depth, schema_verdict *v) {
    char ft[256], q[64];
    h5ark_dtype dtype;
    int r = exetera_read_str_attr(f->obj, ATTR_FIELDTYPE, ft, sizeof ft);
    fieldtype type = r == 1 ? exetera_parse_fieldtype(ft, &dtype) : FT_BAD;
    quote(ft, q, sizeof q);
    if (type == FT_BAD) {
        v->code = H5ARK_TYPE_ERROR;
        if (r != 1)
            snprintf(v->why, sizeof v->why, "its 'fieldtype' attribute is not a string");
        else
            snprintf(v->why, sizeof v->why,
                     "its fieldtype '%s' is not one h5ark reads (indexedstring, fixedstring,<n>, "
                     "numeric,<dtype>, categorical,<integer dtype>, timestamp)",
                     q);
        return;
    }
    static const struct {
        fieldtype type;
        const char *name;
        read_kind kind; /* KIND_PDARRAY: 1-D numbers */
    } need[] = {
        {FT_INDEXED, "index", KIND_PDARRAY},          {FT_INDEXED, CHILD_VALUES, KIND_PDARRAY},
        {FT_FIXED, CHILD_VALUES, KIND_H5STRINGS},     {FT_NUMERIC, CHILD_VALUES, KIND_PDARRAY},
        {FT_TIMESTAMP, CHILD_VALUES, KIND_PDARRAY},   {FT_CATEGORICAL, CHILD_VALUES, KIND_PDARRAY},
        {FT_CATEGORICAL, "key_values", KIND_PDARRAY}, {FT_CATEGORICAL, "key_names", KIND_H5STRINGS},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0] && v->code == H5ARK_OK; i++) {
        if (need[i].type != type) continue;
        read_kind kind;
        bool numbers = need[i].kind == KIND_PDARRAY;
        if (schema_classify_part(f, need[i].name,
                                 numbers ? SCHEMA_PART_NUMBERS : SCHEMA_PART_OBJECT, depth, &kind,
                                 NULL, v) == 0 &&
            kind != need[i].kind) {
            v->code = H5ARK_TYPE_ERROR;
            snprintf(v->why, sizeof v->why, "it is '%s' but '%s' is %s", q, need[i].name,
                     schema_what(kind));
        }
    }
}

/* Every field readable, and all of one length: ExeTera lets them differ, and such a group is
 * no table (type_error: its fields read one by one). */
static void whole_df(const schema_facts *f, unsigned depth, schema_verdict *v) {
    h5u_names names = {0};
    if (field_names(f->obj, &names)) {
        v->code = H5ARK_SCHEMA_ERROR;
        snprintf(v->why, sizeof v->why, "its children are not all fields");
    }
    int64_t first = -1;
    for (size_t i = 0; i < names.n && v->code == H5ARK_OK; i++) {
        read_kind kind;
        int64_t rows;
        if (schema_classify_part(f, names.v[i], SCHEMA_PART_OBJECT, depth, &kind, &rows, v)) break;
        if (i == 0) first = rows;
        if (rows != first) {
            v->code = H5ARK_TYPE_ERROR;
            snprintf(v->why, sizeof v->why,
                     "its fields differ in length ('%s': %lld rows, '%s': %lld); read them one "
                     "by one",
                     names.v[0], (long long)first, names.v[i], (long long)rows);
        }
    }
    h5u_names_free(&names);
}

const schema_family schema_exetera_field = {
    .kind = KIND_EXETERA_FIELD,
    .what = "an ExeTera field",
    .objtype = "field",
    .detect = detect_field,
    .probe = probe_field,
    .build = build_field,
    .slice = slice_field,
    .list = list_field,
    .whole = whole_field,
};

const schema_family schema_exetera_df = {
    .kind = KIND_EXETERA_DF,
    .what = "an ExeTera dataframe",
    .objtype = "dataframe",
    .detect = detect_df,
    .probe = probe_df,
    .build = build_df,
    .slice = schema_slice_kids,
    .list = list_df,
    .whole = whole_df,
};
