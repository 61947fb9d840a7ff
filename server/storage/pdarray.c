/* A pdarray on disk (docs/FORMAT.md): dataset `/<name>`, rank 1, contiguous, the
 * element type at its own width (bool: 1-byte unsigned plus isBool=1), with ObjType=1,
 * file_version and arkouda_version. Legacy files: no attributes (v0, v1), and v1 bools as
 * `/<name>/booleans`. */
#include "families.h"

#include "files.h"

#include "locales.h"
#include "objects/pdarray.h"
#include "layout.h"
#include "dist/ranks.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t pdarray_objtype(const object *obj) {
    if (obj->tag && strcmp(obj->tag, OBJECT_TAG_DATETIME) == 0) return OBJTYPE_DATETIME;
    if (obj->tag && strcmp(obj->tag, OBJECT_TAG_TIMEDELTA) == 0) return OBJTYPE_TIMEDELTA;
    if (obj->tag && strcmp(obj->tag, OBJECT_TAG_IPV4) == 0) return OBJTYPE_IPV4;
    return OBJTYPE_PDARRAY;
}

static int pdarray_write(hid_t file, int file_index, const char *name, const object *obj, int part,
                         write_plan *plan, h5ark_error *err) {
    uint64_t lo, hi;
    object_part_rows(obj, part, &lo, &hi);
    if (write_darray_range(file, file_index, name, obj->values, lo, hi, pdarray_objtype(obj),
                           obj->dtype == H5ARK_BOOLEAN, 0, plan, err))
        return h5ark_fail_context(err, "dataset '%s'", name);
    return 0;
}

int pdarray_probe_dataset(const probe_ctx *pc, read_dataset *ds, hid_t obj, bool legacy_group,
                          unsigned accept, h5ark_error *err) {
    hid_t file = pc->file;
    char dset[1100], what[1200];
    if (legacy_group)
        snprintf(dset, sizeof dset, "%s/%s", ds->name, LEGACY_BOOLEANS);
    else
        snprintf(dset, sizeof dset, "%s", ds->name);
    snprintf(what, sizeof what, "dataset '%s'", dset);
    if (obj < 0) {
        if (h5u_check_local(file, dset, what, err)) return -1;
        obj = H5Dopen2(file, dset, H5P_DEFAULT);
        if (obj < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s cannot be opened", what);
    }
    h5u_dset_info info = {.flat = accept & PROBE_FLAT, .pairs = accept & PROBE_PAIRS};
    int r = h5u_inspect_dataset(obj, pc->size, what, &info, err);
    bool is_bool = legacy_group || info.enum_bool;
    if (r == 0 && !is_bool && info.is_integer) {
        int64_t flag = 0;
        r = h5u_read_int_attr(obj, ATTR_IS_BOOL, &flag, what, err);
        is_bool = r == 1 && flag == 1;
    }
    H5Dclose(obj);
    if (r < 0) return -1;
    if (is_bool && !info.is_integer)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is marked as bool but holds floats", what);
    if (is_bool && info.dtype != H5ARK_BOOLEAN) {
        /* bytes of a 1-byte integer are bools as they are; wider ones need converting */
        info.exact = info.exact && h5ark_dtype_size(info.dtype) == 1;
        info.dtype = H5ARK_BOOLEAN;
    }
    if (!ds->have_dtype) {
        ds->first_dtype = info.dtype;
        ds->have_dtype = true;
    }
    if (info.count == 0) return 0; /* an empty share adds nothing, not even a type */
    char *copy = strdup(dset);
    if (!copy) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return read_part_add(&ds->values, pc->index, pc->path, copy, &info, 0, err);
}

/* Arkouda's widening: 8-byte unsigned stays uint64, other integers become int64, floats
 * float64; bool stays bool. */
static h5ark_dtype arkouda_dtype(h5ark_dtype d) {
    if (d == H5ARK_BOOLEAN || d == H5ARK_UINT64) return d;
    if (h5ark_dtype_is_float(d)) return H5ARK_FLOAT64;
    return H5ARK_INT64;
}

int pdarray_settle_dtype(read_dataset *ds, bool strict, h5ark_error *err) {
    read_part *p = &ds->values;
    if (p->n == 0) {
        p->dtype = ds->have_dtype ? ds->first_dtype : H5ARK_INT64;
        return 0;
    }
    h5ark_dtype first = p->src[0].info.dtype;
    size_t other = 0;
    for (size_t i = 1; i < p->n && !other; i++)
        if (p->src[i].info.dtype != first) other = i;
    if (!other) {
        p->dtype = first;
        return 0;
    }
    const read_src *a = &p->src[0], *b = &p->src[other];
    if (strict)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "dataset '%s' is %s in '%s' but %s in '%s' (strict_types is on; turn "
                          "it off to widen them to a common type)",
                          ds->name, h5ark_dtype_name(a->info.dtype), files_display(a->path),
                          h5ark_dtype_name(b->info.dtype), files_display(b->path));
    h5ark_dtype common = arkouda_dtype(first);
    bool all_unsigned = true;
    for (size_t i = 0; i < p->n; i++)
        all_unsigned = all_unsigned && h5ark_dtype_is_unsigned(p->src[i].info.dtype);
    for (size_t i = 1; i < p->n; i++) {
        h5ark_dtype d = arkouda_dtype(p->src[i].info.dtype);
        if (d == common) continue;
        if (all_unsigned) {
            common = H5ARK_UINT64;
            continue;
        }
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "dataset '%s' cannot be combined across files: %s in '%s' but %s in "
                          "'%s'",
                          ds->name, h5ark_dtype_name(p->src[0].info.dtype),
                          files_display(p->src[0].path), h5ark_dtype_name(p->src[i].info.dtype),
                          files_display(p->src[i].path));
    }
    p->dtype = common;
    return 0;
}

typedef struct {
    const read_dataset *ds;
    object *obj, *tag;
    locale_errors le;
} read_job;

static void read_shard(int locale, void *ctx) {
    read_job *job = ctx;
    const shard *s = &job->obj->values->shards[locale];
    if (s->count == 0) return;
    if (read_part_range(&job->ds->values, s->start, s->start + s->count, s->data,
                        &job->le.errs[locale])) {
        locale_errors_set(&job->le, locale);
        return;
    }
    if (job->tag)
        read_part_tags(&job->ds->values, s->start, s->start + s->count,
                       job->tag->values->shards[locale].data);
}

int pdarray_read(const read_dataset *ds, bool tags, object **obj, object **tag, h5ark_error *err) {
    *obj = *tag = NULL;
    read_job job = {.ds = ds};
    job.obj = object_new_pdarray(ds->values.dtype, ds->values.total, err);
    if (!job.obj) return h5ark_fail_context(err, "reading dataset '%s'", ds->name);
    if (tags && !(job.tag = object_new_pdarray(H5ARK_INT64, ds->values.total, err))) {
        object_release(job.obj);
        return h5ark_fail_context(err, "tagging dataset '%s'", ds->name);
    }
    if (locale_errors_init(&job.le, err)) goto fail;
    locales_run(read_shard, &job);
    int rc = locale_errors_take(&job.le, err);
    locale_errors_free(&job.le);
    rc = ranks_agree(rc, err); /* each rank read its own shards */
    if (rc) goto fail;
    *obj = job.obj;
    *tag = job.tag;
    return 0;
fail:
    object_release(job.obj);
    object_release(job.tag);
    return -1;
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    if (pdarray_settle_dtype(&n->ds, strict && !n->as_index && !n->as_limb, err)) return -1;
    if (n->as_index || n->as_limb) {
        /* offsets and limbs are read as int64/uint64 whatever integer width the file has */
        for (size_t i = 0; i < n->ds.values.n; i++)
            if (!n->ds.values.src[i].info.is_integer ||
                n->ds.values.src[i].info.dtype == H5ARK_BOOLEAN)
                return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' in '%s' must hold integers", n->path,
                                  files_display(n->ds.values.src[i].path));
        n->ds.values.dtype = n->as_index ? H5ARK_INT64 : H5ARK_UINT64;
    }
    if (pdarray_read(&n->ds, tags, obj, tag, err)) return -1;
    if (n->tag) {
        if ((*obj)->dtype != H5ARK_INT64 && (*obj)->dtype != H5ARK_UINT64) {
            object_release(*obj);
            object_release(*tag);
            *obj = *tag = NULL;
            return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is marked %s but holds %s", n->path,
                              n->tag, h5ark_dtype_name(n->ds.values.dtype));
        }
        (*obj)->tag = n->tag;
    }
    return 0;
}

int pdarray_check_range(const object *obj, int64_t lo, int64_t hi, bool nondecreasing,
                        const char *what, h5ark_error *err) {
    if (obj->objtype != H5ARK_PDARRAY || obj->dtype != H5ARK_INT64)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s must be an int64 array", what);
    uint64_t bad;
    if (pdarray_first_outside(obj, lo, hi, nondecreasing, &bad, err)) return -1;
    if (bad == UINT64_MAX) return 0;
    return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                      "%s is malformed at element %llu: every element must lie in [%lld, %lld)%s",
                      what, (unsigned long long)bad, (long long)lo, (long long)hi,
                      nondecreasing ? " and none be less than the one before" : "");
}

static int detect(const schema_facts *f, schema_match *m) {
    if (!f->is_group) {
        if (!f->has_objtype) {
            /* a plain 1-D numeric dataset (h5py's, Arkouda's v0) */
            bool numeric = f->tclass == H5T_INTEGER || f->tclass == H5T_FLOAT || f->bool_enum;
            return f->rank == 1 && numeric ? SCHEMA_BY_SHAPE : SCHEMA_NOT_MINE;
        }
        switch (f->objtype) {
        case OBJTYPE_PDARRAY: return SCHEMA_BY_OBJTYPE;
        case OBJTYPE_DATETIME: m->tag = OBJECT_TAG_DATETIME; return SCHEMA_BY_OBJTYPE;
        case OBJTYPE_TIMEDELTA: m->tag = OBJECT_TAG_TIMEDELTA; return SCHEMA_BY_OBJTYPE;
        case OBJTYPE_IPV4: m->tag = OBJECT_TAG_IPV4; return SCHEMA_BY_OBJTYPE;
        default: return SCHEMA_NOT_MINE;
        }
    }
    /* Arkouda v1's bools: a group holding `booleans` */
    if (schema_child_of(f, LEGACY_BOOLEANS) == SCHEMA_CHILD_NONE) return SCHEMA_NOT_MINE;
    m->legacy_bool = true;
    if (!f->has_objtype) return SCHEMA_BY_SHAPE;
    return f->objtype == OBJTYPE_PDARRAY ? SCHEMA_BY_OBJTYPE : SCHEMA_NOT_MINE;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    return pdarray_probe_dataset(pc, &n->ds, dset, n->legacy_bool, 0, err);
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_PDARRAY && obj->dtype != H5ARK_BIGINT;
}

/* A dataset of numbers in one dimension, whatever its ObjType says. */
static void whole(const schema_facts *f, unsigned depth, schema_verdict *v) {
    (void)depth;
    if (!f->is_group) schema_verdict_numbers(f, 1, 1, v);
}

/* The groups it claims are Arkouda v1's bools. */
static void list(const schema_facts *f, schema_listing *out) {
    snprintf(out->dtype, sizeof out->dtype, "bool");
    out->rows = schema_child_rows(f, LEGACY_BOOLEANS);
    out->legacy = "Arkouda v1 bool array stored as 'booleans'";
}

const schema_family schema_pdarray = {
    .kind = KIND_PDARRAY,
    .what = "a pdarray",
    .objtype = "pdarray",
    .detect = detect,
    .probe = probe,
    .build = build,
    .slice = schema_slice_elements,
    .list = list,
    .writes = writes,
    .write = pdarray_write,
    .whole = whole,
};
