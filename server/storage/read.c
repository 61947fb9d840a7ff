/* readhdf: probe every file's metadata with HDF5 (one file open at a time), decide each
 * dataset's kind and type across the files, then let the locales read their blocks of the
 * concatenation in parallel: pread straight into their shards where a dataset's bytes are
 * contiguous and already in memory's form, HDF5 (hyperslab reads) elsewhere. */
#include "storage.h"

#include "files.h"
#include "io.h"
#include "locales.h"
#include "sandbox.h"
#include "schema.h"
#include "storage_internal.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- sources ----------------------------------------------------------------------- */

int read_part_add(read_part *part, int file, const char *path, char *dset,
                  const h5u_dset_info *info, int64_t rebase, h5ark_error *err) {
    if (info->count > OBJECT_MAX_ELEMENTS - part->total) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "'%s' makes more than %llu elements across the files",
                   dset, (unsigned long long)OBJECT_MAX_ELEMENTS);
        free(dset);
        return -1;
    }
    if (part->n == part->cap) {
        size_t cap = part->cap ? part->cap * 2 : 8;
        read_src *v = realloc(part->src, cap * sizeof *v);
        if (!v) {
            free(dset);
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        part->src = v;
        part->cap = cap;
    }
    part->src[part->n++] = (read_src){
        .file = file,
        .path = path,
        .dset = dset,
        .start = part->total,
        .info = *info,
        .rebase = rebase,
    };
    part->total += info->count;
    return 0;
}

static void read_part_truncate(read_part *part, size_t n) {
    while (part->n > n) {
        read_src *s = &part->src[--part->n];
        part->total -= s->info.count;
        free(s->dset);
    }
}

void read_part_clear(read_part *part) {
    read_part_truncate(part, 0);
    free(part->src);
    part->src = NULL;
    part->cap = 0;
}

size_t read_part_find(const read_part *part, uint64_t i) {
    size_t lo = 0, hi = part->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (part->src[mid].start <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int pread_src(const read_src *src, uint64_t first, uint64_t count, size_t itemsize,
                     void *dest, h5ark_error *err) {
    int fd = open(src->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot open '%s': %s", files_display(src->path),
                          strerror(errno));
    int rc = 0;
    if (io_pread_full(fd, dest, count * itemsize, src->info.offset + first * itemsize))
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot read '%s' from '%s': %s", src->dset,
                        files_display(src->path),
                        errno == EIO ? "the file ends early" : strerror(errno));
    close(fd);
    return rc;
}

int read_part_range(const read_part *part, uint64_t lo, uint64_t hi, void *dest, h5ark_error *err) {
    size_t itemsize = h5ark_dtype_size(part->dtype);
    if (lo >= hi || part->n == 0) return 0;
    for (size_t i = read_part_find(part, lo); i < part->n; i++) {
        const read_src *src = &part->src[i];
        if (src->start >= hi) break;
        uint64_t a = lo > src->start ? lo : src->start;
        uint64_t b = src->start + src->info.count < hi ? src->start + src->info.count : hi;
        if (a >= b) continue;
        void *out = (char *)dest + (a - lo) * itemsize;
        uint64_t first = a - src->start, count = b - a;
        bool direct = src->info.contiguous && src->info.exact && src->info.dtype == part->dtype;
        if (direct ? pread_src(src, first, count, itemsize, out, err)
                   : h5u_read_slab(src->path, src->dset, first, count, part->dtype, out, err)) {
            if (!direct)
                h5ark_fail_context(err, "reading '%s' from '%s'", src->dset,
                                   files_display(src->path));
            return -1;
        }
        if (src->rebase) {
            int64_t *v = out;
            for (uint64_t k = 0; k < count; k++)
                v[k] += src->rebase;
        }
        if (part->dtype == H5ARK_BOOLEAN) {
            /* a bool is 0 or 1 in memory, whatever byte the file used for true */
            unsigned char *v = out;
            for (uint64_t k = 0; k < count; k++)
                v[k] = v[k] != 0;
        }
    }
    return 0;
}

void read_part_tags(const read_part *part, uint64_t lo, uint64_t hi, int64_t *dest) {
    if (lo >= hi || part->n == 0) return;
    for (size_t i = read_part_find(part, lo); i < part->n; i++) {
        const read_src *src = &part->src[i];
        if (src->start >= hi) break;
        uint64_t a = lo > src->start ? lo : src->start;
        uint64_t b = src->start + src->info.count < hi ? src->start + src->info.count : hi;
        for (uint64_t k = a; k < b; k++)
            dest[k - lo] = src->file;
    }
}

/* ---- probing ----------------------------------------------------------------------- */

/* ---- the tree of objects and components ------------------------------------------- */

read_node *node_add_kid(read_node *n, const char *name, const char *path, h5ark_error *err) {
    if (n->nkids == n->cap) {
        size_t cap = n->cap ? 2 * n->cap : 4;
        read_node *v = realloc(n->kids, cap * sizeof *v);
        if (!v) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            return NULL;
        }
        n->kids = v;
        n->cap = cap;
        for (size_t i = 0; i < n->nkids; i++)
            n->kids[i].ds.name = n->kids[i].path;
    }
    read_node *k = &n->kids[n->nkids];
    *k = (read_node){.max_bits = -1};
    k->name = strdup(name);
    k->path = strdup(path);
    if (!k->name || !k->path) {
        free(k->name);
        free(k->path);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    k->ds.name = k->path;
    k->component = true;
    n->nkids++;
    return k;
}

read_node *node_kid(read_node *n, const char *name) {
    for (size_t i = 0; i < n->nkids; i++)
        if (strcmp(n->kids[i].name, name) == 0) return &n->kids[i];
    return NULL;
}

static void node_clear_data(read_node *n) {
    h5u_free_strs(n->names, n->nnames);
    n->names = NULL;
    n->nnames = 0;
    read_part_clear(&n->ds.values);
    read_part_clear(&n->ds.segments);
    for (size_t i = 0; i < n->nkids; i++)
        node_clear(&n->kids[i]);
    free(n->kids);
    n->kids = NULL;
    n->nkids = n->cap = 0;
}

void node_clear(read_node *n) {
    node_clear_data(n);
    free(n->name);
    free(n->path);
    n->name = n->path = NULL;
}

int node_child_path(const read_node *n, const char *child, const char *legacy_sep, char *out,
                    size_t outlen) {
    int len = snprintf(out, outlen, "%s%s%s", n->path, n->legacy ? legacy_sep : "/", child);
    return len < 0 || (size_t)len >= outlen ? -1 : 0;
}

static void node_mark(read_node *n) {
    n->mark.kind = n->kind;
    n->mark.values_n = n->ds.values.n;
    n->mark.segments_n = n->ds.segments.n;
    n->mark.nkids = n->nkids;
    n->mark.no_segments = n->ds.no_segments;
    n->mark.have_dtype = n->ds.have_dtype;
    n->mark.ndim = n->ndim;
    for (size_t i = 0; i < n->nkids; i++)
        node_mark(&n->kids[i]);
}

static void node_undo(read_node *n) {
    while (n->nkids > n->mark.nkids)
        node_clear(&n->kids[--n->nkids]);
    for (size_t i = 0; i < n->nkids; i++)
        node_undo(&n->kids[i]);
    n->kind = n->mark.kind;
    n->ds.no_segments = n->mark.no_segments;
    n->ds.have_dtype = n->mark.have_dtype;
    n->ndim = n->mark.ndim;
    if (n->kind == KIND_NONE) n->legacy = false;
    read_part_truncate(&n->ds.values, n->mark.values_n);
    read_part_truncate(&n->ds.segments, n->mark.segments_n);
}

static const char *kind_name(read_kind k) {
    static const char *const names[] = {
        [KIND_NONE] = "nothing",
        [KIND_PDARRAY] = "a pdarray",
        [KIND_STRINGS] = "Strings",
        [KIND_ARRAYVIEW] = "an ArrayView",
        [KIND_BIGINT] = "a bigint",
        [KIND_SEGARRAY] = "a SegArray",
        [KIND_CATEGORICAL] = "a Categorical",
        [KIND_GROUPBY] = "a GroupBy",
        [KIND_DATAFRAME] = "a DataFrame",
        [KIND_INDEX] = "an Index",
        [KIND_MULTIINDEX] = "a MultiIndex",
    };
    return names[k];
}

static int exists_with(hid_t file, const char *path, const char *sep, const char *child) {
    char p[1200];
    if (snprintf(p, sizeof p, "%s%s%s", path, sep, child) >= (int)sizeof p) return 0;
    return h5u_link_exists(file, p) == 1;
}

/* What kind of object is at path (a link that exists, inside the file), open as `obj` or
 * not yet (H5I_INVALID_HID). A dataset is left open in *dset for the caller, who closes
 * it, also on failure. */
static int detect_kind(const probe_ctx *pc, read_node *n, hid_t obj, read_kind *kind,
                       bool *legacy_bool, hid_t *dset, h5ark_error *err) {
    *legacy_bool = false;
    *dset = H5I_INVALID_HID;
    if (obj < 0) obj = H5Oopen(pc->file, n->path, H5P_DEFAULT); /* again, to say why not */
    if (obj < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be opened", n->path);
    H5I_type_t type = H5Iget_type(obj);
    char what[1200];
    snprintf(what, sizeof what, "'%s'", n->path);
    int64_t objtype = -1, bigint = 0;
    int has_type = h5u_read_int_attr(obj, ATTR_OBJTYPE, &objtype, what, err);
    int has_big = has_type < 0 ? -1 : h5u_read_int_attr(obj, ATTR_IS_BIGINT, &bigint, what, err);
    if (type == H5I_DATASET)
        *dset = obj; /* opened once: the probe of its kind goes on with it */
    else
        H5Oclose(obj);
    if (has_type < 0 || has_big < 0) return -1;
    *kind = KIND_NONE;
    if (type == H5I_DATASET) {
        if (has_type == 0 || objtype == OBJTYPE_PDARRAY)
            *kind = KIND_PDARRAY;
        else if (objtype == OBJTYPE_DATETIME || objtype == OBJTYPE_TIMEDELTA ||
                 objtype == OBJTYPE_IPV4) {
            *kind = KIND_PDARRAY;
            n->tag = objtype == OBJTYPE_DATETIME    ? OBJECT_TAG_DATETIME
                     : objtype == OBJTYPE_TIMEDELTA ? OBJECT_TAG_TIMEDELTA
                                                    : OBJECT_TAG_IPV4;
        } else if (objtype == OBJTYPE_ARRAYVIEW)
            *kind = KIND_ARRAYVIEW;
    } else if (type == H5I_GROUP) {
        hid_t f = pc->file;
        const char *p = n->path;
        if (has_big == 1 && bigint == 1)
            *kind = KIND_BIGINT;
        else if (has_type == 1)
            switch (objtype) {
            case OBJTYPE_STRINGS: *kind = KIND_STRINGS; break;
            case OBJTYPE_SEGARRAY: *kind = KIND_SEGARRAY; break;
            case OBJTYPE_CATEGORICAL: *kind = KIND_CATEGORICAL; break;
            case OBJTYPE_GROUPBY: *kind = KIND_GROUPBY; break;
            case OBJTYPE_DATAFRAME: *kind = KIND_DATAFRAME; break;
            case OBJTYPE_INDEX: *kind = KIND_INDEX; break;
            case OBJTYPE_MULTIINDEX: *kind = KIND_MULTIINDEX; break;
            case OBJTYPE_PDARRAY:
                if (exists_with(f, p, "/", LEGACY_BOOLEANS)) {
                    *kind = KIND_PDARRAY;
                    *legacy_bool = true;
                } else if (exists_with(f, p, "/", PREFIX_LIMB "0"))
                    *kind = KIND_BIGINT;
                break;
            default: break;
            }
        else if (exists_with(f, p, "/", CHILD_VALUES)) /* Arkouda's omissions: Strings */
            *kind = KIND_STRINGS;
        else if (exists_with(f, p, "/", LEGACY_BOOLEANS)) {
            *kind = KIND_PDARRAY;
            *legacy_bool = true;
        } else if (exists_with(f, p, "/", CHILD_CODES) && exists_with(f, p, "/", CHILD_CATEGORIES))
            *kind = KIND_CATEGORICAL;
        else if (exists_with(f, p, "/", PREFIX_KEY "0") &&
                 exists_with(f, p, "/", CHILD_PERMUTATION))
            *kind = KIND_GROUPBY;
        else if (exists_with(f, p, "/", PREFIX_IDX "0"))
            *kind = exists_with(f, p, "/", PREFIX_IDX "1") ? KIND_MULTIINDEX : KIND_INDEX;
        else if (exists_with(f, p, "/", PREFIX_LIMB "0"))
            *kind = KIND_BIGINT;
        else if (has_type == 0)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "group '%s' is not an object h5ark reads: it has no ObjType and "
                              "none of the children that would tell its type",
                              n->path);
    } else {
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is neither a dataset nor a group", n->path);
    }
    if (*kind == KIND_NONE) {
        static const char *const names[] = {
            "an ArrayView", "a pdarray",   "Strings",    "a SegArray",  "a Categorical",
            "a GroupBy",    "a DataFrame", "a Datetime", "a Timedelta", "an IPv4",
            "a BitVector",  "a Series",    "an Index",   "a MultiIndex"};
        const char *name = objtype >= 0 && objtype < (int64_t)(sizeof names / sizeof names[0])
                               ? names[objtype]
                               : "an unknown object";
        return h5ark_fail(
            err, H5ARK_TYPE_ERROR, "'%s' is %s (ObjType %lld%s), which readhdf cannot read as such",
            n->path, name, (long long)objtype, type == H5I_GROUP ? " on a group" : " on a dataset");
    }
    return 0;
}

int probe_node(const probe_ctx *pc, read_node *n, h5ark_error *err) {
    read_kind kind;
    bool legacy_bool = false;
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
        if (detect_kind(pc, n, obj, &kind, &legacy_bool, &dset, err)) {
            if (dset >= 0) H5Oclose(dset);
            return -1;
        }
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
                          kind_name(kind), kind_name(n->kind),
                          before->n ? files_display(before->src[before->n - 1].path)
                                    : "the files before");
    }
    n->kind = kind;
    /* only a pdarray or an ArrayView is a dataset; they take it over */
    if (dset >= 0 && kind != KIND_PDARRAY && kind != KIND_ARRAYVIEW) {
        H5Oclose(dset);
        dset = H5I_INVALID_HID;
    }
    switch (kind) {
    case KIND_PDARRAY:
        return pdarray_probe(pc->file, pc->index, pc->path, pc->size, &n->ds, dset, legacy_bool,
                             err);
    case KIND_STRINGS:
        return strings_probe(pc->file, pc->index, pc->path, pc->size, &n->ds, pc->calc_offsets,
                             err);
    case KIND_ARRAYVIEW: return arrayview_probe(pc, n, dset, err);
    case KIND_BIGINT: return bigint_probe(pc, n, err);
    case KIND_SEGARRAY: return segarray_probe(pc, n, err);
    case KIND_CATEGORICAL: return categorical_probe(pc, n, err);
    case KIND_GROUPBY: return groupby_probe(pc, n, err);
    case KIND_DATAFRAME: return dataframe_probe(pc, n, err);
    case KIND_INDEX:
    case KIND_MULTIINDEX: return index_probe(pc, n, err);
    default: return h5ark_fail(err, H5ARK_INTERNAL, "'%s': unknown kind", n->path);
    }
}

int probe_numbered_kids(const probe_ctx *pc, read_node *n, const char *prefix,
                        const char *count_attr, h5ark_error *err) {
    size_t first = 0; /* kids before the numbered ones (GroupBy's three) */
    while (first < n->nkids && strncmp(n->kids[first].name, prefix, strlen(prefix)) != 0)
        first++;
    if (first == n->nkids) {
        hid_t g = H5Gopen2(pc->file, n->path, H5P_DEFAULT);
        if (g < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be opened", n->path);
        char what[1200];
        snprintf(what, sizeof what, "'%s'", n->path);
        int64_t count = 0;
        int r = h5u_read_int_attr(g, count_attr, &count, what, err);
        uint64_t found = 0;
        if (r == 0) {
            /* no count: the highest number among the children named prefix<number> */
            h5u_names l = {0};
            if (h5u_link_names(g, NULL, &l, what, err) < 0) r = -1;
            size_t plen = strlen(prefix);
            for (size_t i = 0; i < l.n; i++) {
                const char *s = l.v[i];
                if (strncmp(s, prefix, plen) != 0 || !s[plen]) continue;
                char *end;
                unsigned long long k = strtoull(s + plen, &end, 10);
                if (*end == '\0' && k < 100000 && k + 1 > found) found = k + 1;
            }
            h5u_names_free(&l);
            count = (int64_t)found;
        }
        H5Gclose(g);
        if (r < 0) return -1;
        if (count < 0 || count > 100000)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: attribute '%s' is %lld", what,
                              count_attr, (long long)count);
        for (int64_t i = 0; i < count; i++) {
            char name[64], path[1200];
            snprintf(name, sizeof name, "%s%lld", prefix, (long long)i);
            if (snprintf(path, sizeof path, "%s/%s", n->path, name) >= (int)sizeof path)
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s': name too long", n->path);
            if (!node_add_kid(n, name, path, err)) return -1;
        }
    }
    for (size_t i = first; i < n->nkids; i++)
        if (probe_node(pc, &n->kids[i], err)) return -1;
    return 0;
}

/* ---- building the objects ----------------------------------------------------------- */

typedef struct {
    const object *obj;
    int64_t lo, hi;
    bool nondecreasing;
    _Atomic uint64_t first_bad;
} range_job;

static void range_check_shard(int b, void *ctx) {
    range_job *job = ctx;
    const shard *s = &job->obj->values->shards[b];
    const int64_t *v = s->data;
    for (uint64_t i = 0; i < s->count; i++) {
        bool bad = v[i] < job->lo || v[i] >= job->hi;
        if (!bad && job->nondecreasing) {
            if (i > 0)
                bad = v[i] < v[i - 1];
            else if (s->start > 0) {
                const darray *a = job->obj->values;
                const shard *p = &a->shards[darray_shard_of(a, s->start - 1)];
                bad = v[0] < ((const int64_t *)p->data)[s->start - 1 - p->start];
            }
        }
        if (bad) {
            uint64_t g = s->start + i, cur = atomic_load(&job->first_bad);
            while (g < cur && !atomic_compare_exchange_weak(&job->first_bad, &cur, g)) {}
            return;
        }
    }
}

int check_int64_range(const object *obj, int64_t lo, int64_t hi, bool nondecreasing,
                      const char *what, h5ark_error *err) {
    if (obj->objtype != H5ARK_PDARRAY || obj->dtype != H5ARK_INT64)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s must be an int64 array", what);
    range_job job = {.obj = obj, .lo = lo, .hi = hi, .nondecreasing = nondecreasing};
    atomic_init(&job.first_bad, UINT64_MAX);
    locales_run(range_check_shard, &job);
    uint64_t bad = atomic_load(&job.first_bad);
    if (bad == UINT64_MAX) return 0;
    return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                      "%s is malformed at element %llu: every element must lie in [%lld, %lld)%s",
                      what, (unsigned long long)bad, (long long)lo, (long long)hi,
                      nondecreasing ? " and none be less than the one before" : "");
}

static int build_pdarray(read_node *n, bool strict, bool tags, object **obj, object **tag,
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

int build_node(read_node *n, bool strict, bool tags, object **obj, object **tag, h5ark_error *err) {
    *obj = *tag = NULL;
    switch (n->kind) {
    case KIND_PDARRAY:
    case KIND_NONE: return build_pdarray(n, strict, tags, obj, tag, err);
    case KIND_STRINGS: return strings_read(&n->ds, tags, obj, tag, err);
    case KIND_ARRAYVIEW: return arrayview_build(n, strict, tags, obj, tag, err);
    case KIND_BIGINT: return bigint_build(n, strict, tags, obj, tag, err);
    case KIND_SEGARRAY: return segarray_build(n, strict, tags, obj, tag, err);
    case KIND_CATEGORICAL: return categorical_build(n, strict, tags, obj, tag, err);
    case KIND_GROUPBY: return groupby_build(n, strict, tags, obj, tag, err);
    case KIND_DATAFRAME: return dataframe_build(n, strict, tags, obj, tag, err);
    case KIND_INDEX:
    case KIND_MULTIINDEX: return index_build(n, strict, tags, obj, tag, err);
    }
    return h5ark_fail(err, H5ARK_INTERNAL, "'%s': unknown kind", n->path);
}

int build_composite(read_node *n, h5ark_objtype objtype, h5ark_dtype dtype, bool strict, bool tags,
                    size_t tag_kid, object **obj, object **tag, h5ark_error *err) {
    *obj = *tag = NULL;
    object *c = object_new_composite(objtype, dtype, 0, err);
    if (!c) return -1;
    for (size_t i = 0; i < n->nkids; i++) {
        object *k = NULL, *t = NULL;
        if (build_node(&n->kids[i], strict, tags && i == tag_kid, &k, &t, err)) goto fail;
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

/* ---- the files ---------------------------------------------------------------------- */

static int make_datasets(read_probe *st, h5ark_error *err) {
    st->nodes = calloc(st->names.n ? st->names.n : 1, sizeof *st->nodes);
    if (!st->nodes) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < st->names.n; i++) {
        read_node *n = &st->nodes[i];
        n->max_bits = -1;
        n->path = strdup(st->names.v[i]);
        n->name = strdup(st->names.v[i]);
        if (!n->path || !n->name) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        n->ds.name = n->path;
    }
    return 0;
}

static void free_datasets(read_probe *st) {
    if (!st->nodes) return;
    for (size_t i = 0; i < st->names.n; i++)
        node_clear(&st->nodes[i]);
    free(st->nodes);
    st->nodes = NULL;
}

static bool has_name(const h5u_names *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] && strcmp(l->v[i], name) == 0) return true;
    return false;
}

static bool ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a > b && strcmp(s + a - b, tail) == 0;
}

/* The top-level objects of a file, in ColumnOrder (the columns layout of a DataFrame) and
 * then link order, the parts of the older split layouts folded into one name each. */
static int list_objects(hid_t file, h5u_names *out, h5ark_error *err) {
    h5u_names all = {0};
    /* v1 files' metadata group is not an object */
    int rc = h5u_link_names(file, LEGACY_METADATA_GROUP, &all, "its objects", err);
    /* `x_segments` + `x_values` is SegArray x; `x.codes` + `x.categories` (+ `x._akNAcode`,
       `x.permutation`, `x.segments`) is Categorical x */
    for (size_t i = 0; i < all.n && rc == 0; i++) {
        char *s = all.v[i];
        if (!s) continue;
        char base[1100], other[1200];
        const char *parts[5] = {NULL};
        if (ends_with(s, "_" CHILD_SEGMENTS) && strlen(s) < sizeof base) {
            snprintf(base, sizeof base, "%.*s", (int)(strlen(s) - 9), s);
            snprintf(other, sizeof other, "%s_" CHILD_VALUES, base);
            if (!has_name(&all, other) || has_name(&all, base)) continue;
            parts[0] = "_" CHILD_SEGMENTS, parts[1] = "_" CHILD_VALUES;
        } else if (ends_with(s, "." CHILD_CODES) && strlen(s) < sizeof base) {
            snprintf(base, sizeof base, "%.*s", (int)(strlen(s) - 6), s);
            snprintf(other, sizeof other, "%s." CHILD_CATEGORIES, base);
            if (!has_name(&all, other) || has_name(&all, base)) continue;
            parts[0] = "." CHILD_CODES, parts[1] = "." CHILD_CATEGORIES;
            parts[2] = LEGACY_NA_CODE, parts[3] = "." CHILD_PERMUTATION;
            parts[4] = "." CHILD_SEGMENTS;
        } else {
            continue;
        }
        char *b = strdup(base);
        if (!b) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
        for (size_t k = 0; k < all.n; k++)
            for (size_t p = 0; p < 5 && parts[p] && all.v[k]; p++) {
                snprintf(other, sizeof other, "%s%s", base, parts[p]);
                if (strcmp(all.v[k], other) == 0) {
                    free(all.v[k]);
                    all.v[k] = NULL;
                }
            }
        all.v[i] = b;
    }
    char **order = NULL;
    size_t norder = 0;
    if (rc == 0 && h5u_read_str_array_attr(file, ATTR_COLUMN_ORDER, &order, &norder,
                                           "the file's root", err) < 0)
        rc = -1;
    for (size_t pass = 0; pass < 2 && rc == 0; pass++)
        for (size_t i = 0; i < (pass ? all.n : norder) && rc == 0; i++) {
            const char *name = pass ? all.v[i] : order[i];
            if (!name || has_name(out, name) || (!pass && !has_name(&all, name))) continue;
            if (h5u_names_push(out, name))
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
    h5u_free_strs(order, norder);
    for (size_t i = 0; i < all.n; i++)
        free(all.v[i]);
    free(all.v);
    return rc;
}

/* Probe the request's file k; on failure it adds nothing to st. */
static int probe_file(const read_probe_request *rq, size_t k, read_probe *st, h5ark_error *err) {
    const char *path = rq->paths[k];
    /* one open of each file: what kind of failure it was is asked only after one */
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hsize_t size = 0;
    if (file < 0) {
        struct stat sb;
        if (stat(path, &sb) != 0)
            h5ark_fail(err, errno == ENOENT ? H5ARK_NOT_FOUND : H5ARK_IO_ERROR, "%s",
                       strerror(errno));
        else if (h5u_is_hdf5(path) == 0)
            h5ark_fail(err, H5ARK_SCHEMA_ERROR, "not an HDF5 file");
        else
            h5ark_fail(err, H5ARK_SCHEMA_ERROR, "not a readable HDF5 file");
        H5Eclear2(H5E_DEFAULT);
        return -1;
    }
    /* the size the library found when it opened the file: where every dataset must end */
    if (H5Fget_filesize(file, &size) < 0) {
        h5u_fail(err, H5ARK_IO_ERROR, "cannot tell its size");
        H5Fclose(file);
        return -1;
    }
    int rc = 0;
    bool listed_here = false;
    if (!st->nodes) {
        /* no datasets asked for: every top-level object of the first readable file */
        rc = list_objects(file, &st->names, err);
        listed_here = true;
        if (rc == 0) rc = make_datasets(st, err);
    }
    probe_ctx pc = {.file = file,
                    .index = rq->index ? rq->index[k] : (int)k,
                    .path = path,
                    .size = (uint64_t)size,
                    .calc_offsets = rq->calc_offsets};
    if (rc == 0)
        for (size_t i = 0; i < st->names.n; i++)
            node_mark(&st->nodes[i]);
    for (size_t i = 0; rc == 0 && i < st->names.n; i++)
        rc = probe_node(&pc, &st->nodes[i], err);
    if (H5Fclose(file) < 0 && rc == 0) rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close it");
    if (rc) {
        /* the file is skipped whole: undo what it added */
        if (listed_here) {
            free_datasets(st);
            h5u_names_free(&st->names);
        } else {
            for (size_t i = 0; st->nodes && i < st->names.n; i++)
                node_undo(&st->nodes[i]);
        }
    }
    return rc;
}

int read_probe_add_error(read_probe *p, int index, h5ark_code code, const char *message,
                         h5ark_error *err) {
    if (p->nerrors == p->errcap) {
        size_t cap = p->errcap ? 2 * p->errcap : 8;
        read_file_error *v = realloc(p->errors, cap * sizeof *v);
        if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        p->errors = v;
        p->errcap = cap;
    }
    char *m = strdup(message);
    if (!m) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    p->errors[p->nerrors++] = (read_file_error){index, code, m};
    return 0;
}

void read_probe_clear(read_probe *p) {
    free_datasets(p);
    h5u_names_free(&p->names);
    for (size_t i = 0; i < p->nerrors; i++)
        free(p->errors[i].message);
    free(p->errors);
    *p = (read_probe){0};
}

int read_probe_files(const read_probe_request *rq, read_probe *out, h5ark_error *err) {
    h5u_quiet();
    *out = (read_probe){0};
    for (size_t i = 0; i < rq->ndatasets; i++)
        if (h5u_names_push(&out->names, rq->datasets[i])) {
            read_probe_clear(out);
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
    if (rq->ndatasets && make_datasets(out, err)) {
        read_probe_clear(out);
        return -1;
    }
    for (size_t k = 0; k < rq->npaths; k++) {
        sandbox_probe_progress(k, rq->paths[k]);
        h5ark_error ferr = {0};
        if (probe_file(rq, k, out, &ferr) == 0) continue;
        if (ferr.code == H5ARK_RESOURCE_LIMIT && strcmp(ferr.message, "out of memory") == 0) {
            read_probe_clear(out);
            *err = ferr;
            return -1;
        }
        if (read_probe_add_error(out, rq->index ? rq->index[k] : (int)k, ferr.code, ferr.message,
                                 err)) {
            read_probe_clear(out);
            return -1;
        }
        if (!rq->allow_errors) {
            out->stopped = true;
            break;
        }
    }
    return 0;
}

/* ---- the request ------------------------------------------------------------------- */

static int check_names(const char *const *datasets, size_t n, h5ark_error *err) {
    for (size_t i = 0; i < n; i++) {
        if (!datasets[i][0] || datasets[i][0] == '/' || strlen(datasets[i]) >= 1000)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "readhdf: '%s' is not a dataset name (empty, absolute or too long)",
                              datasets[i]);
        for (size_t k = 0; k < i; k++)
            if (strcmp(datasets[k], datasets[i]) == 0)
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "readhdf: dataset '%s' is named twice",
                                  datasets[i]);
    }
    return 0;
}

static void free_items(storage_read_item *items, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(items[i].dataset);
        object_release(items[i].obj);
        object_release(items[i].file_tag);
    }
    free(items);
}

void storage_read_items_free(storage_read_item *items, size_t nitems) {
    if (items) free_items(items, nitems);
}

int storage_read(char *const *paths, size_t npaths, const char *const *datasets, size_t ndatasets,
                 const storage_read_options *opts, storage_read_item **items, size_t *nitems,
                 h5ark_value *file_errors, h5ark_error *err) {
    h5u_quiet();
    *items = NULL;
    *nitems = 0;
    if (!datasets) ndatasets = 0;
    if (check_names(datasets, ndatasets, err)) return -1;
    if (npaths == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "readhdf: no files to read");
    if (npaths > INT_MAX) return h5ark_fail(err, H5ARK_BAD_REQUEST, "readhdf: too many files");
    read_probe_request rq = {.paths = paths,
                             .npaths = npaths,
                             .datasets = datasets,
                             .ndatasets = ndatasets,
                             .allow_errors = opts->allow_errors,
                             .calc_offsets = opts->calc_string_offsets};
    read_probe st;
    if (sandbox_probe_read(&rq, &st, err)) return -1;
    storage_read_item *out = NULL;
    size_t built = 0;
    int rc = -1;
    const read_file_error *last = st.nerrors ? &st.errors[st.nerrors - 1] : NULL;
    if (st.stopped) {
        h5ark_fail(err, last->code, "%s", last->message);
        h5ark_fail_context(err, "cannot read '%s'", files_display(paths[last->index]));
        goto out;
    }
    for (size_t i = 0; i < st.nerrors; i++) {
        const read_file_error *e = &st.errors[i];
        char line[sizeof err->message + PATH_MAX];
        snprintf(line, sizeof line, "%s: %s", files_display(paths[e->index]), e->message);
        if (h5ark_value_push(file_errors, h5ark_value_str(line))) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
    }
    if (st.nerrors == npaths) {
        h5ark_fail(err, last->code, "none of the %zu files could be read; '%s': %s", npaths,
                   files_display(paths[last->index]), last->message);
        goto out;
    }
    out = calloc(st.names.n ? st.names.n : 1, sizeof *out);
    if (!out) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    for (; built < st.names.n; built++) {
        read_node *ds = &st.nodes[built];
        storage_read_item *it = &out[built];
        if (!(it->dataset = strdup(ds->name))) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
        int r = build_node(ds, opts->strict_types, opts->tag_data, &it->obj, &it->file_tag, err);
        if (r) {
            built++; /* its name is freed with the rest */
            goto out;
        }
    }
    *items = out;
    *nitems = built;
    out = NULL;
    rc = 0;
out:
    if (out) free_items(out, built);
    read_probe_clear(&st);
    return rc;
}
