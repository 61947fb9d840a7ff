/* The schema table, its one detector and the dispatchers (schema.h). */
#include "schema.h"

#include "files.h"
#include "layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const schema_family *table[KIND_COUNT];
static const schema_family *order[KIND_COUNT];
static size_t nfamilies;

void schema_register(const schema_family *f) {
    if (f->kind <= KIND_NONE || f->kind >= KIND_COUNT || table[f->kind]) return;
    table[f->kind] = f;
    order[nfamilies++] = f;
}

const schema_family *schema_family_of(read_kind kind) {
    return kind > KIND_NONE && kind < KIND_COUNT ? table[kind] : NULL;
}

const char *schema_what(read_kind kind) {
    const schema_family *f = schema_family_of(kind);
    return f ? f->what : "nothing";
}

/* ---- detection ---------------------------------------------------------------------- */

int schema_facts_read(hid_t obj, const char *path, schema_facts *f, h5ark_error *err) {
    *f = (schema_facts){.obj = obj, .path = path, .objtype = -1, .rank = -1};
    H5I_type_t type = H5Iget_type(obj);
    if (type != H5I_GROUP && type != H5I_DATASET)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is neither a dataset nor a group", path);
    f->is_group = type == H5I_GROUP;
    char what[1200];
    snprintf(what, sizeof what, "'%s'", path);
    int64_t big = 0;
    int has = h5u_read_int_attr(obj, ATTR_OBJTYPE, &f->objtype, what, err);
    if (has < 0) return -1;
    f->has_objtype = has == 1;
    if (!f->has_objtype) f->objtype = -1;
    has = h5u_read_int_attr(obj, ATTR_IS_BIGINT, &big, what, err);
    if (has < 0) return -1;
    f->is_bigint = has == 1 && big == 1;
    if (f->is_group) return 0;
    hid_t space = H5Dget_space(obj), t = H5Dget_type(obj);
    if (space >= 0 && H5Sget_simple_extent_type(space) == H5S_SIMPLE)
        f->rank = H5Sget_simple_extent_ndims(space);
    if (t >= 0) {
        f->tclass = H5Tget_class(t);
        f->bool_enum = f->tclass == H5T_ENUM && h5u_is_bool_enum(t);
    } else {
        f->tclass = H5T_NO_CLASS;
    }
    if (space >= 0) H5Sclose(space);
    if (t >= 0) H5Tclose(t);
    H5Eclear2(H5E_DEFAULT);
    return 0;
}

schema_child schema_child_of(const schema_facts *f, const char *name) {
    if (!f->is_group || h5u_link_exists(f->obj, name) != 1) return SCHEMA_CHILD_NONE;
    H5O_info_t info;
    if (H5Oget_info_by_name(f->obj, name, &info, H5P_DEFAULT) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return SCHEMA_CHILD_NONE;
    }
    if (info.type == H5O_TYPE_GROUP) return SCHEMA_CHILD_GROUP;
    if (info.type != H5O_TYPE_DATASET) return SCHEMA_CHILD_NONE;
    schema_child kind = SCHEMA_CHILD_DATA;
    hid_t d = H5Dopen2(f->obj, name, H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    if (t >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == 1 &&
        H5Tget_sign(t) == H5T_SGN_NONE)
        kind = SCHEMA_CHILD_BYTES;
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    H5Eclear2(H5E_DEFAULT);
    return kind;
}

int schema_detect(const schema_facts *f, schema_match *m) {
    int best = SCHEMA_NOT_MINE;
    for (size_t i = 0; i < nfamilies; i++) {
        schema_match mine = {.kind = order[i]->kind};
        int s = order[i]->detect ? order[i]->detect(f, &mine) : SCHEMA_NOT_MINE;
        if (s > best) {
            best = s;
            *m = mine;
        }
    }
    return best > SCHEMA_NOT_MINE;
}

/* ---- classification ------------------------------------------------------------------ */

/* Parts nest a few levels (a DataFrame's Categorical column's Strings); deeper is a loop of
 * hard links or a hostile file. */
#define CLASSIFY_MAX_DEPTH 8

static void verdict(schema_verdict *v, h5ark_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void verdict(schema_verdict *v, h5ark_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->why, sizeof v->why, fmt, ap);
    va_end(ap);
    v->code = code;
}

static int classify(const schema_facts *f, schema_match *m, unsigned depth, schema_verdict *v);

int schema_classify_part(const schema_facts *f, const char *name, schema_part_sort sort,
                         unsigned depth, read_kind *kind, int64_t *rows, schema_verdict *v) {
    *kind = KIND_NONE;
    if (rows) *rows = -1;
    h5ark_error err = {0};
    int here = h5u_link_local(f->obj, name, "a part", &err);
    H5Eclear2(H5E_DEFAULT);
    if (here < 0) {
        verdict(v, err.code, "'%s': %s", name, err.message);
        return -1;
    }
    hid_t obj = here ? H5Oopen(f->obj, name, H5P_DEFAULT) : H5I_INVALID_HID;
    H5Eclear2(H5E_DEFAULT);
    if (obj < 0) {
        verdict(v, H5ARK_SCHEMA_ERROR, "no '%s'", name);
        return -1;
    }
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", f->path, name);
    schema_facts pf;
    schema_match pm = {0};
    schema_verdict pv = {0};
    int claimed = schema_facts_read(obj, path, &pf, &err) == 0 &&
                  (depth < CLASSIFY_MAX_DEPTH ? classify(&pf, &pm, depth + 1, &pv) : 0);
    H5Eclear2(H5E_DEFAULT);
    int rc = -1;
    if (depth >= CLASSIFY_MAX_DEPTH)
        verdict(v, H5ARK_SCHEMA_ERROR, "'%s' nests parts more than %d deep", name,
                CLASSIFY_MAX_DEPTH);
    else if (!claimed)
        verdict(v, H5ARK_TYPE_ERROR, "'%s' is not an object h5ark reads", name);
    else if (pv.code != H5ARK_OK)
        verdict(v, pv.code, "'%s' is %s that cannot be read: %s", name, schema_what(pm.kind),
                pv.why);
    else if (sort == SCHEMA_PART_NUMBERS && pm.kind != KIND_PDARRAY)
        verdict(v, H5ARK_TYPE_ERROR, "'%s' is %s, not a 1-D array of numbers", name,
                schema_what(pm.kind));
    else
        rc = 0;
    if (rc == 0) *kind = pm.kind;
    if (rc == 0 && rows) {
        if (pf.is_group) {
            schema_listing li;
            schema_list(pm.kind, &pf, &li);
            h5ark_value_destroy(&li.extra);
            *rows = li.rows;
        } else {
            *rows = h5u_dataset_len(obj);
        }
        H5Eclear2(H5E_DEFAULT);
    }
    H5Oclose(obj);
    return rc;
}

/* The parts of the family's table: each one present and itself readable. */
/* How many parts group g numbers prefix0, prefix1, ...: its attribute count_attr (1), or
 * without it the highest number among its children plus one (0); -1 with err when the
 * attribute cannot be read or is out of range. */
static int numbered_count(hid_t g, const char *path, const char *prefix, const char *count_attr,
                          int64_t *count, h5ark_error *err) {
    char what[1200];
    snprintf(what, sizeof what, "'%s'", path);
    *count = 0;
    int r = h5u_read_int_attr(g, count_attr, count, what, err);
    if (r == 0) {
        h5u_names l = {0};
        if (h5u_link_names(g, NULL, &l, what, err) < 0) r = -1;
        size_t plen = strlen(prefix);
        for (size_t i = 0; i < l.n; i++) {
            const char *s = l.v[i];
            if (strncmp(s, prefix, plen) != 0 || !s[plen]) continue;
            char *end;
            unsigned long long k = strtoull(s + plen, &end, 10);
            if (*end == '\0' && k < 100000 && (int64_t)k + 1 > *count) *count = (int64_t)k + 1;
        }
        h5u_names_free(&l);
    }
    if (r >= 0 && (*count < 0 || *count > 100000))
        r = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: attribute '%s' is %lld", what, count_attr,
                       (long long)*count);
    return r;
}

static void check_parts(const schema_facts *f, const schema_part *parts, unsigned depth,
                        schema_verdict *v) {
    read_kind kind;
    for (const schema_part *p = parts; p->name && v->code == H5ARK_OK; p++) {
        if (!p->count_attr) {
            if (!p->optional || h5u_link_exists(f->obj, p->name) == 1)
                schema_classify_part(f, p->name, p->sort, depth, &kind, NULL, v);
            H5Eclear2(H5E_DEFAULT);
            continue;
        }
        h5ark_error err = {0};
        int64_t count = 0;
        int r = numbered_count(f->obj, f->path, p->name, p->count_attr, &count, &err);
        H5Eclear2(H5E_DEFAULT);
        if (r < 0)
            verdict(v, err.code, "%.600s", err.message);
        else if (r == 1 && count == 0)
            verdict(v, H5ARK_SCHEMA_ERROR, "its '%s' is 0", p->count_attr);
        /* at least one: none counted is a first part missing */
        for (int64_t i = 0; v->code == H5ARK_OK && i < (count ? count : 1); i++) {
            char name[64];
            snprintf(name, sizeof name, "%s%lld", p->name, (long long)i);
            schema_classify_part(f, name, p->sort, depth, &kind, NULL, v);
        }
    }
}

static int classify(const schema_facts *f, schema_match *m, unsigned depth, schema_verdict *v) {
    v->code = H5ARK_OK;
    v->why[0] = '\0';
    if (!schema_detect(f, m)) return 0;
    const schema_family *fam = schema_family_of(m->kind);
    if (f->is_group && fam->parts && !m->legacy_bool) check_parts(f, fam->parts, depth, v);
    if (v->code == H5ARK_OK && fam->whole) fam->whole(f, depth, v);
    H5Eclear2(H5E_DEFAULT);
    return 1;
}

int schema_classify(const schema_facts *f, schema_match *m, schema_verdict *v) {
    return classify(f, m, 0, v);
}

void schema_verdict_numbers(const schema_facts *f, int lo, int hi, schema_verdict *v) {
    bool numeric = f->tclass == H5T_INTEGER || f->tclass == H5T_FLOAT || f->bool_enum;
    if (f->rank < 0)
        verdict(v, H5ARK_TYPE_ERROR, "it is a scalar or holds no data");
    else if (f->rank < lo || f->rank > hi)
        verdict(v, H5ARK_TYPE_ERROR, "it has %d dimensions (%d to %d)", f->rank, lo, hi);
    else if (!numeric)
        verdict(v, H5ARK_TYPE_ERROR, "it holds %s values, not integers, floats or bools",
                h5u_class_name(f->tclass));
}

void schema_verdict_note(read_kind kind, const schema_verdict *v, char *out, size_t len) {
    snprintf(out, len, "%s h5ark cannot read: %s", schema_what(kind), v->why);
}

int schema_unclaimed(const schema_facts *f, h5ark_error *err) {
    static const char *const names[] = {"an ArrayView",  "a pdarray",   "Strings",     "a SegArray",
                                        "a Categorical", "a GroupBy",   "a DataFrame", "a Datetime",
                                        "a Timedelta",   "an IPv4",     "a BitVector", "a Series",
                                        "an Index",      "a MultiIndex"};
    if (f->has_objtype) {
        const char *name = f->objtype >= 0 && f->objtype < (int64_t)(sizeof names / sizeof names[0])
                               ? names[f->objtype]
                               : "an unknown object";
        return h5ark_fail(
            err, H5ARK_TYPE_ERROR, "'%s' is %s (ObjType %lld%s), which readhdf cannot read as such",
            f->path, name, (long long)f->objtype, f->is_group ? " on a group" : " on a dataset");
    }
    if (f->is_group)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "group '%s' is not an object h5ark reads: it has no ObjType and none "
                          "of the children that would tell its type",
                          f->path);
    if (f->rank < 0)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "dataset '%s' is a scalar or holds no data; h5ark reads arrays", f->path);
    return h5ark_fail(err, H5ARK_TYPE_ERROR,
                      "dataset '%s' holds %s values, which h5ark cannot represent (it reads "
                      "integers, floats, bools and strings)",
                      f->path, h5u_class_name(f->tclass));
}

/* ---- probing ------------------------------------------------------------------------ */

static int exists_with(hid_t file, const char *path, const char *sep, const char *child) {
    char p[1200];
    if (snprintf(p, sizeof p, "%s%s%s", path, sep, child) >= (int)sizeof p) return 0;
    return h5u_link_exists(file, p) == 1;
}

/* What family the object at path is (a link that exists, inside the file), open as `obj`
 * (closed here, but a dataset is handed on in *dset for its family's probe). */
static int detect_node(const probe_ctx *pc, read_node *n, hid_t obj, read_kind *kind, hid_t *dset,
                       h5ark_error *err) {
    *dset = H5I_INVALID_HID;
    if (obj < 0) obj = H5Oopen(pc->file, n->path, H5P_DEFAULT); /* again, to say why not */
    if (obj < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be opened", n->path);
    schema_facts f;
    schema_match m = {0};
    schema_verdict v = {0};
    int rc = schema_facts_read(obj, n->path, &f, err);
    /* the object is classified whole, parts and all: its components need only be detected */
    bool claimed = rc == 0 && (n->component ? schema_detect(&f, &m) : schema_classify(&f, &m, &v));
    if (rc == 0 && !claimed) rc = schema_unclaimed(&f, err);
    if (rc == 0 && v.code != H5ARK_OK) {
        char note[sizeof v.why + 100];
        schema_verdict_note(m.kind, &v, note, sizeof note);
        rc = h5ark_fail(err, v.code, "'%s' is %s", n->path, note);
    }
    if (rc == 0 && !f.is_group)
        *dset = obj; /* opened once: its family's probe goes on with it */
    else
        H5Oclose(obj);
    if (rc) return -1;
    *kind = m.kind;
    n->legacy_bool = m.legacy_bool;
    if (m.tag) n->tag = m.tag;
    return 0;
}

int schema_probe(const probe_ctx *pc, read_node *n, h5ark_error *err) {
    read_kind kind = KIND_NONE;
    hid_t dset = H5I_INVALID_HID;
    /* The common case in one traversal of the path: no link can lead out of the file
     * (storage_init), so an object opened is inside it. The slower walk of every step
     * only when it cannot be opened, to say why. */
    hid_t obj = H5Oopen(pc->file, n->path, H5P_DEFAULT);
    if (obj < 0) H5Eclear2(H5E_DEFAULT);
    int here = obj >= 0 ? 1 : h5u_link_local(pc->file, n->path, "the dataset", err);
    if (here < 0) return -1;
    if (here) {
        if (n->legacy) {
            if (obj >= 0) H5Oclose(obj);
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "'%s' is an object here but an older split layout before", n->path);
        }
        if (detect_node(pc, n, obj, &kind, &dset, err)) return -1;
    } else if (exists_with(pc->file, n->path, "_", CHILD_SEGMENTS) &&
               exists_with(pc->file, n->path, "_", CHILD_VALUES)) {
        kind = KIND_SEGARRAY; /* the older client-side SegArray */
        n->legacy = true;
    } else if (exists_with(pc->file, n->path, ".", CHILD_CODES) &&
               exists_with(pc->file, n->path, ".", CHILD_CATEGORIES)) {
        kind = KIND_CATEGORICAL; /* the older client-side Categorical */
        n->legacy = true;
    } else if (n->optional) {
        return 0;
    } else if (n->component) {
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "'%s' is missing from the file", n->path);
    } else {
        return h5ark_fail(err, H5ARK_NOT_FOUND, "dataset '%s' is not in the file", n->path);
    }
    if (n->kind != KIND_NONE && n->kind != kind) {
        if (dset >= 0) H5Oclose(dset);
        const read_part *before = &n->ds.values;
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is %s here but %s in '%s'", n->path,
                          schema_what(kind), schema_what(n->kind),
                          before->n ? files_display(before->src[before->n - 1].path)
                                    : "the files before");
    }
    const schema_family *fam = schema_family_of(kind);
    if (!fam) {
        if (dset >= 0) H5Oclose(dset);
        return h5ark_fail(err, H5ARK_INTERNAL, "'%s': no family reads it", n->path);
    }
    n->kind = kind;
    return fam->probe(pc, n, dset, err);
}

int schema_probe_numbered_kids(const probe_ctx *pc, read_node *n, const char *prefix,
                               const char *count_attr, h5ark_error *err) {
    size_t first = 0; /* kids before the numbered ones (GroupBy's three) */
    while (first < n->nkids && strncmp(n->kids[first].name, prefix, strlen(prefix)) != 0)
        first++;
    if (first == n->nkids) {
        hid_t g = H5Gopen2(pc->file, n->path, H5P_DEFAULT);
        if (g < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be opened", n->path);
        int64_t count = 0;
        int r = numbered_count(g, n->path, prefix, count_attr, &count, err);
        H5Gclose(g);
        if (r < 0) return -1;
        for (int64_t i = 0; i < count; i++) {
            char name[64], path[1200];
            snprintf(name, sizeof name, "%s%lld", prefix, (long long)i);
            if (snprintf(path, sizeof path, "%s/%s", n->path, name) >= (int)sizeof path)
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s': name too long", n->path);
            if (!node_add_kid(n, name, path, err)) return -1;
        }
    }
    for (size_t i = first; i < n->nkids; i++)
        if (schema_probe(pc, &n->kids[i], err)) return -1;
    return 0;
}

/* ---- building and writing ------------------------------------------------------------- */

int schema_build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    *obj = *tag = NULL;
    /* a node no file had (an optional component) builds as an empty pdarray */
    const schema_family *f = schema_family_of(n->kind == KIND_NONE ? KIND_PDARRAY : n->kind);
    if (!f) return h5ark_fail(err, H5ARK_INTERNAL, "'%s': no family reads it", n->path);
    return f->build(n, strict, tags, obj, tag, err);
}

int schema_build_composite(read_node *n, h5ark_objtype objtype, h5ark_dtype dtype, bool strict,
                           bool tags, size_t tag_kid, object **obj, object **tag,
                           h5ark_error *err) {
    *obj = *tag = NULL;
    object *c = object_new_composite(objtype, dtype, 0, err);
    if (!c) return -1;
    for (size_t i = 0; i < n->nkids; i++) {
        object *k = NULL, *t = NULL;
        if (schema_build(&n->kids[i], strict, tags && i == tag_kid, &k, &t, err)) goto fail;
        int rc = object_add_component(c, n->kids[i].name, k, err);
        object_release(k);
        if (t) *tag = t;
        if (rc) goto fail;
    }
    *obj = c;
    return 0;
fail:
    object_release(c);
    object_release(*tag);
    *tag = NULL;
    return -1;
}

int schema_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                 write_plan *plan, h5ark_error *err) {
    for (size_t i = 0; i < nfamilies; i++)
        if (order[i]->writes && order[i]->writes(obj))
            return order[i]->write(loc, file_index, name, obj, part, plan, err);
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is a %s, which tohdf cannot write", name,
                      h5ark_objtype_name(obj->objtype));
}

int schema_check(const object *obj, const char *dataset, h5ark_error *err) {
    for (size_t i = 0; i < nfamilies; i++)
        if (order[i]->writes && order[i]->writes(obj))
            return order[i]->check ? order[i]->check(obj, dataset, err) : 0;
    return 0;
}

/* ---- ranged reads ------------------------------------------------------------------- */

int schema_rows(const read_node *n, uint64_t rows, uint64_t lo, uint64_t *hi, h5ark_error *err) {
    if (*hi == SCHEMA_TO_END) *hi = rows;
    if (lo > *hi || *hi > rows)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "readhdf: rows %llu..%llu are not in %s '%s', which has %llu rows",
                          (unsigned long long)lo, (unsigned long long)*hi, schema_what(n->kind),
                          n->path, (unsigned long long)rows);
    return 0;
}

int schema_slice(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err) {
    const schema_family *f = schema_family_of(n->kind);
    if (!f || !f->slice)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "readhdf: start/stop select rows, and %s '%s' has none",
                          schema_what(n->kind), n->path);
    return f->slice(n, lo, hi, err);
}

int schema_slice_elements(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err) {
    if (schema_rows(n, n->ds.values.total, lo, &hi, err)) return -1;
    read_part_slice(&n->ds.values, lo, hi);
    return 0;
}

int schema_slice_kids(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err) {
    for (size_t i = 0; i < n->nkids; i++)
        if (n->kids[i].kind != KIND_NONE && schema_slice(&n->kids[i], lo, hi, err)) return -1;
    return 0;
}

/* ---- listing -------------------------------------------------------------------------- */

void schema_list(read_kind kind, const schema_facts *f, schema_listing *out) {
    *out = (schema_listing){.rows = -1};
    const schema_family *fam = schema_family_of(kind);
    if (fam && fam->list && f->is_group) fam->list(f, out);
}

int64_t schema_child_rows(const schema_facts *f, const char *name) {
    hid_t d = h5u_open_child(f->obj, name, H5O_TYPE_DATASET);
    if (d < 0) return -1;
    int64_t n = h5u_dataset_len(d);
    H5Oclose(d);
    return n;
}
