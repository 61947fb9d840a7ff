/* Categorical on disk (docs/FORMAT.md): group `/<name>` (ObjType=4) holding `codes`
 * (int64), `categories` (a Strings group), `NA_Codes` (int64: the index of the NA
 * category) and, when both exist, `permutation` and `segments`. Each component is written
 * as its own block-distributed array (codes index the categories of the whole set, so
 * nothing is rebased); NA_Codes' one element goes to the first file. Readers also take
 * children without attributes (Arkouda's single files) and the older top-level
 * `<name>.codes` / `<name>.categories` / `<name>._akNAcode` layout. */
#include "families.h"

#include "locales.h"
#include "objects/groupby.h"
#include "objects/pdarray.h"
#include "objects/strings.h"
#include "layout.h"
#include "dist/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Index of the category whose text is `text`, or -1. */
static int64_t find_category(const object *cats, const char *text) {
    if (!cats || cats->objtype != H5ARK_STRINGS) return -1;
    uint64_t i = groupby_find_string(cats, text);
    return i == UINT64_MAX ? -1 : (int64_t)i;
}

static int64_t na_code_of(const object *obj, const object *cats) {
    if (obj->extra)
        for (size_t i = 0; i < obj->extra->as.m.len; i++) {
            const h5ark_value *v = obj->extra->as.m.vals[i];
            if (strcmp(obj->extra->as.m.keys[i], "na_code") != 0) continue;
            if (v->kind == H5ARK_INT) return v->as.i;
            if (v->kind == H5ARK_UINT) return (int64_t)v->as.u;
        }
    return find_category(cats, obj->na_value ? obj->na_value : "N/A");
}

static int categorical_write(hid_t loc, int file_index, const char *name, const object *obj,
                             int part, write_plan *plan, h5ark_error *err) {
    const object *codes = object_component_get(obj, CHILD_CODES);
    const object *cats = object_component_get(obj, CHILD_CATEGORIES);
    const object *perm = object_component_get(obj, CHILD_PERMUTATION);
    const object *segs = object_component_get(obj, CHILD_SEGMENTS);
    if (!codes || !cats)
        return h5ark_fail(err, H5ARK_INTERNAL, "Categorical '%s' lacks codes or categories", name);
    hid_t group = write_group(loc, name, OBJTYPE_CATEGORICAL, err);
    if (group < 0) return h5ark_fail_context(err, "Categorical '%s'", name);
    int rc = schema_write(group, file_index, CHILD_CODES, codes, part, plan, err);
    if (rc == 0) rc = schema_write(group, file_index, CHILD_CATEGORIES, cats, part, plan, err);
    if (rc == 0) {
        int64_t na = na_code_of(obj, cats);
        rc = write_small_int64(group, CHILD_NA_CODES, &na, part <= 0 ? 1 : 0, err);
    }
    if (rc == 0 && perm && segs) {
        rc = schema_write(group, file_index, CHILD_PERMUTATION, perm, part, plan, err);
        if (rc == 0) rc = schema_write(group, file_index, CHILD_SEGMENTS, segs, part, plan, err);
    }
    if (H5Gclose(group) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close group '%s'", name);
    return rc ? h5ark_fail_context(err, "Categorical '%s'", name) : 0;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    static const struct {
        const char *name, *legacy;
        bool optional, as_index;
    } kids[] = {
        {CHILD_CODES, CHILD_CODES, false, true},
        {CHILD_CATEGORIES, CHILD_CATEGORIES, false, false},
        {CHILD_NA_CODES, "_akNAcode", true, true},
        {CHILD_PERMUTATION, CHILD_PERMUTATION, true, true},
        {CHILD_SEGMENTS, CHILD_SEGMENTS, true, true},
    };
    if (n->nkids == 0)
        for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++) {
            char path[1100];
            if (node_child_path(n, n->legacy ? kids[i].legacy : kids[i].name, ".", path,
                                sizeof path))
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s': name too long", n->path);
            read_node *k = node_add_kid(n, kids[i].name, path, err);
            if (!k) return -1;
            k->optional = kids[i].optional;
            k->as_index = kids[i].as_index;
        }
    for (size_t i = 0; i < n->nkids; i++)
        if (schema_probe(pc, &n->kids[i], err)) return -1;
    return 0;
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    read_node *perm = node_kid(n, CHILD_PERMUTATION), *segs = node_kid(n, CHILD_SEGMENTS);
    read_node *na = node_kid(n, CHILD_NA_CODES);
    bool grouped = perm->kind != KIND_NONE && segs->kind != KIND_NONE;
    object *codes = NULL, *cats = NULL, *nac = NULL, *p = NULL, *s = NULL, *t = NULL, *x = NULL;
    object *cat = NULL;
    *obj = *tag = NULL;
    char what[1200];
    if (schema_build(node_kid(n, CHILD_CODES), strict, tags, &codes, &t, err) ||
        schema_build(node_kid(n, CHILD_CATEGORIES), strict, false, &cats, &x, err))
        goto fail;
    if (cats->objtype != H5ARK_STRINGS || codes->objtype != H5ARK_PDARRAY) {
        h5ark_fail(err, H5ARK_TYPE_ERROR,
                   "Categorical '%s': 'categories' must be Strings and 'codes' a pdarray", n->path);
        goto fail;
    }
    snprintf(what, sizeof what, "Categorical '%s': 'codes'", n->path);
    if (pdarray_check_range(codes, 0, (int64_t)cats->size, false, what, err)) goto fail;
    int64_t na_code = -1;
    if (na->kind != KIND_NONE) {
        if (schema_build(na, strict, false, &nac, &x, err)) goto fail;
        if (nac->size > 0 && pdarray_int64_at(nac, 0, &na_code, err)) goto fail;
    }
    if (grouped) {
        if (schema_build(perm, strict, false, &p, &x, err) ||
            schema_build(segs, strict, false, &s, &x, err))
            goto fail;
        snprintf(what, sizeof what, "Categorical '%s': 'permutation'", n->path);
        if (p->size != codes->size) {
            h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has %llu elements for %llu codes", what,
                       (unsigned long long)p->size, (unsigned long long)codes->size);
            goto fail;
        }
        if (pdarray_check_range(p, 0, (int64_t)p->size, false, what, err)) goto fail;
        snprintf(what, sizeof what, "Categorical '%s': 'segments'", n->path);
        if (pdarray_check_range(s, 0, (int64_t)p->size + 1, true, what, err)) goto fail;
    }
    cat = object_new_composite(H5ARK_CATEGORICAL, H5ARK_STRING, codes->size, err);
    if (!cat) goto fail;
    if (na_code >= 0 && (uint64_t)na_code < cats->size) {
        if (!(cat->na_value = strings_dup(cats, (uint64_t)na_code, NULL, err))) goto fail;
    } else {
        cat->na_value = strdup("N/A");
        na_code = find_category(cats, "N/A");
        uint64_t u = (uint64_t)na_code; /* several ranks: searched on each rank's shards */
        if (ranks_allreduce_u64(&u, 1, RANKS_MIN, err)) goto fail;
        na_code = (int64_t)u;
        if (!cat->na_value) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto fail;
        }
    }
    if (object_add_component(cat, CHILD_CODES, codes, err) ||
        object_add_component(cat, CHILD_CATEGORIES, cats, err) ||
        (grouped && (object_add_component(cat, CHILD_PERMUTATION, p, err) ||
                     object_add_component(cat, CHILD_SEGMENTS, s, err))) ||
        object_set_extra(cat, "na_code", h5ark_value_int(na_code), err))
        goto fail;
    *obj = cat;
    *tag = t;
    cat = NULL;
    t = NULL;
fail:
    object_release(cat);
    object_release(codes);
    object_release(cats);
    object_release(nac);
    object_release(p);
    object_release(s);
    object_release(t);
    return *obj ? 0 : -1;
}

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    if (!f->is_group) return SCHEMA_NOT_MINE;
    if (f->has_objtype)
        return f->objtype == OBJTYPE_CATEGORICAL ? SCHEMA_BY_OBJTYPE : SCHEMA_NOT_MINE;
    return schema_child_of(f, CHILD_CODES) != SCHEMA_CHILD_NONE &&
                   schema_child_of(f, CHILD_CATEGORIES) != SCHEMA_CHILD_NONE
               ? SCHEMA_BY_SHAPE
               : SCHEMA_NOT_MINE;
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_CATEGORICAL;
}

/* Rows are codes; the categories and NA code stay whole. A stored grouping (permutation,
 * segments) describes every row, so a range leaves it out. */
static int slice(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err) {
    node_kid(n, CHILD_PERMUTATION)->kind = KIND_NONE;
    node_kid(n, CHILD_SEGMENTS)->kind = KIND_NONE;
    return schema_slice(node_kid(n, CHILD_CODES), lo, hi, err);
}

static void list(const schema_facts *f, schema_listing *out) {
    snprintf(out->dtype, sizeof out->dtype, "str");
    out->rows = schema_child_rows(f, CHILD_CODES);
}

static const schema_part parts[] = {
    {CHILD_CODES, NULL, SCHEMA_PART_NUMBERS},
    {CHILD_CATEGORIES, NULL, SCHEMA_PART_OBJECT},
    {CHILD_NA_CODES, NULL, SCHEMA_PART_NUMBERS, true},
    {CHILD_PERMUTATION, NULL, SCHEMA_PART_NUMBERS, true},
    {CHILD_SEGMENTS, NULL, SCHEMA_PART_NUMBERS, true},
    {NULL, NULL, 0},
};

const schema_family schema_categorical = {
    .kind = KIND_CATEGORICAL,
    .what = "a Categorical",
    .objtype = "categorical",
    .detect = detect,
    .probe = probe,
    .build = build,
    .slice = slice,
    .list = list,
    .writes = writes,
    .write = categorical_write,
    .parts = parts,
};
