/* Strings on disk (docs/FORMAT.md): group `/<name>` (ObjType=2) holding `values`
 * (uint8: every string's bytes and one NUL) and `segments` (int64 start offsets, starting
 * at 0 in each file), both with ObjType=1. Readers also take files without `segments`
 * (offsets come from the NULs) and files without any attributes. */
#include "families.h"

#include "files.h"

#include "locales.h"
#include "dist/ranks.h"
#include "objects/strings.h"
#include "sysio.h"
#include "layout.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where string i starts. The segments of another rank's shard are not here, but a file's
 * rows start a shard (or are all of them), and each values shard starts at the offset of
 * its shard's first string: the metadata says it. */
static int row_offset(const object *obj, uint64_t i, const write_plan *plan, uint64_t *out,
                      h5ark_error *err) {
    const darray *seg = obj->segments;
    int b = i < obj->size ? darray_shard_of(seg, i) : 0;
    if (i >= obj->size || locales_is_local(b)) {
        *out = strings_offset(obj, i);
        return 0;
    }
    if (seg->shards[b].start == i) {
        *out = obj->values->shards[b].start;
        return 0;
    }
    /* inside a shard: this rank's, or fetched from the rank holding it (write.c) */
    int64_t v;
    if (plan_int64_at(plan, seg, i, &v, err)) return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Rows [lo, hi) of obj as the Strings group `name`, its segments when `segments`. */
static int write_rows(hid_t loc, int file_index, const char *name, const object *obj, uint64_t lo,
                      uint64_t hi, bool segments, write_plan *plan, h5ark_error *err) {
    if (obj->objtype != H5ARK_STRINGS)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' is a %s, not strings", name,
                          h5ark_objtype_name(obj->objtype));
    hid_t group = write_group(loc, name, OBJTYPE_STRINGS, err);
    if (group < 0) return -1;
    uint64_t blo, bhi;
    if (row_offset(obj, lo, plan, &blo, err) || row_offset(obj, hi, plan, &bhi, err)) {
        H5Gclose(group);
        return h5ark_fail_context(err, "Strings '%s'", name);
    }
    int rc = write_darray_range(group, file_index, CHILD_VALUES, obj->values, blo, bhi,
                                OBJTYPE_PDARRAY, false, 0, plan, err);
    /* a file's offsets restart at 0 */
    if (rc == 0 && segments)
        rc = write_darray_range(group, file_index, CHILD_SEGMENTS, obj->segments, lo, hi,
                                OBJTYPE_PDARRAY, false, (int64_t)blo, plan, err);
    if (H5Gclose(group) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close group '%s'", name);
    return rc ? h5ark_fail_context(err, "Strings '%s'", name) : 0;
}

int strings_write_rows(hid_t loc, int file_index, const char *name, const object *obj, uint64_t lo,
                       uint64_t hi, write_plan *plan, h5ark_error *err) {
    return write_rows(loc, file_index, name, obj, lo, hi, true, plan, err);
}

typedef struct {
    const object *obj;
    _Atomic uint64_t first; /* the first string holding a NUL */
} nul_scan;

static void scan_shard(int b, void *arg) {
    nul_scan *j = arg;
    const shard *seg = &j->obj->segments->shards[b], *val = &j->obj->values->shards[b];
    const int64_t *off = seg->data;
    const char *bytes = val->data;
    for (uint64_t i = 0; i < seg->count; i++) {
        uint64_t from = (uint64_t)off[i] - val->start;
        uint64_t to = i + 1 < seg->count ? (uint64_t)off[i + 1] - val->start : val->count;
        if (to - from > 1 && memchr(bytes + from, '\0', to - from - 1)) {
            locales_note_first(&j->first, seg->start + i);
            return;
        }
    }
}

int strings_check_without_segments(const object *obj, const char *name, h5ark_error *err) {
    nul_scan j = {.obj = obj};
    atomic_init(&j.first, UINT64_MAX);
    locales_run(scan_shard, &j);
    uint64_t first = atomic_load(&j.first);
    if (ranks_allreduce_u64(&first, 1, RANKS_MIN, err)) return -1;
    if (first == UINT64_MAX) return 0;
    return h5ark_fail(err, H5ARK_BAD_REQUEST,
                      "tohdf: '%s' cannot be written without 'segments': string %llu holds a "
                      "NUL byte, and without offsets each NUL ends a string; write it with "
                      "segments",
                      name, (unsigned long long)first);
}

static int strings_write(hid_t file, int file_index, const char *name, const object *obj, int part,
                         write_plan *plan, h5ark_error *err) {
    uint64_t lo, hi;
    object_part_rows(obj, part, &lo, &hi);
    return write_rows(file, file_index, name, obj, lo, hi, !plan->strings_without_segments, plan,
                      err);
}

/* What can be told of a file's strings from three elements, so that allow_errors can skip
 * a broken file before any data moves: the first offset is 0, the last lies inside
 * `values`, and `values` ends in a NUL. The rest is checked as the data is read. */
static int check_ends(hid_t file, const char *name, const char *vpath, const h5u_dset_info *v,
                      const char *spath, const h5u_dset_info *s, h5ark_error *err) {
    int64_t first = 0, last = 0;
    uint8_t end = 0;
    if (h5u_read_elems(file, spath, 0, 1, H5ARK_INT64, &first, err) ||
        h5u_read_elems(file, spath, s->count - 1, 1, H5ARK_INT64, &last, err) ||
        h5u_read_elems(file, vpath, v->count - 1, 1, H5ARK_UINT8, &end, err))
        return h5ark_fail_context(err, "reading Strings '%s'", name);
    if (first != 0 || last < 0 || (uint64_t)last >= v->count || end != 0)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "Strings '%s' is malformed: its offsets must start at 0 and stay "
                          "within its %llu bytes (first %lld, last %lld), and its bytes must "
                          "end in a NUL",
                          name, (unsigned long long)v->count, (long long)first, (long long)last);
    return 0;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    read_dataset *ds = &n->ds;
    hid_t file = pc->file;
    uint64_t file_size = pc->size;
    bool calc_offsets = pc->calc_offsets;
    char vpath[1100], spath[1100], what[1200];
    snprintf(vpath, sizeof vpath, "%s/%s", ds->name, CHILD_VALUES);
    snprintf(spath, sizeof spath, "%s/%s", ds->name, CHILD_SEGMENTS);
    ds->values.dtype = H5ARK_UINT8;
    ds->segments.dtype = H5ARK_INT64;
    h5u_dset_info v, s = {0};
    snprintf(what, sizeof what, "Strings bytes '%s'", vpath);
    if (h5u_inspect(file, vpath, file_size, what, &v, err)) return -1;
    if (!v.is_integer || v.enum_bool || h5ark_dtype_size(v.dtype) != 1)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s are %s, not 1-byte integers", what,
                          h5ark_dtype_name(v.dtype));
    v.dtype = H5ARK_UINT8;
    v.exact = true; /* bytes are bytes, whatever the sign or order */
    bool has_segments = !calc_offsets && h5u_link_exists(file, spath) == 1;
    if (has_segments) {
        snprintf(what, sizeof what, "Strings offsets '%s'", spath);
        if (h5u_inspect(file, spath, file_size, what, &s, err)) return -1;
        if (!s.is_integer || s.enum_bool)
            return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s are %s, not integers", what,
                              h5ark_dtype_name(s.dtype));
    }
    if (v.count == 0) {
        if (s.count > 0)
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                              "Strings '%s' has %llu offsets but no bytes in 'values'", ds->name,
                              (unsigned long long)s.count);
        return 0;
    }
    if (has_segments && s.count == 0)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "Strings '%s' has %llu bytes in 'values' but no offsets in 'segments'",
                          ds->name, (unsigned long long)v.count);
    if (!has_segments) ds->no_segments = true;
    if (has_segments && check_ends(file, ds->name, vpath, &v, spath, &s, err)) return -1;
    int64_t value_offset = (int64_t)ds->values.total;
    char *vcopy = strdup(vpath), *scopy = has_segments ? strdup(spath) : NULL;
    if (!vcopy || (has_segments && !scopy)) {
        free(vcopy);
        free(scopy);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (read_part_add(&ds->values, pc->index, pc->path, vcopy, &v, 0, err)) {
        free(scopy);
        return -1;
    }
    if (has_segments &&
        read_part_add(&ds->segments, pc->index, pc->path, scopy, &s, value_offset, err))
        return -1;
    return 0;
}

/* ExeTera's indexed strings (docs/FORMAT.md, "ExeTera dataframes"): group n->path holding
 * `index` (n + 1 offsets from 0, the last the number of bytes) and `values` (the strings'
 * bytes, any NUL among them a string's data). The concatenation keeps each file's first n offsets,
 * rebased by the bytes before it; reading adds a NUL after every string. An `index` of length 0 is
 * an empty field. */
int strings_probe_indexed(const probe_ctx *pc, read_node *n, h5ark_error *err) {
    read_dataset *ds = &n->ds;
    char vpath[1100], ipath[1100], what[1200];
    snprintf(vpath, sizeof vpath, "%s/%s", ds->name, CHILD_VALUES);
    snprintf(ipath, sizeof ipath, "%s/index", ds->name);
    ds->values.dtype = H5ARK_UINT8;
    ds->segments.dtype = H5ARK_INT64;
    ds->unterminated = true;
    h5u_dset_info v, s;
    snprintf(what, sizeof what, "ExeTera field '%s': 'values'", ds->name);
    if (h5u_inspect(pc->file, vpath, pc->size, what, &v, err)) return -1;
    if (!v.is_integer || v.enum_bool || h5ark_dtype_size(v.dtype) != 1)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s are %s, not bytes", what,
                          h5ark_dtype_name(v.dtype));
    v.dtype = H5ARK_UINT8;
    v.exact = true;
    snprintf(what, sizeof what, "ExeTera field '%s': 'index'", ds->name);
    if (h5u_inspect(pc->file, ipath, pc->size, what, &s, err)) return -1;
    if (!s.is_integer || s.enum_bool)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not integers", what,
                          h5ark_dtype_name(s.dtype));
    int64_t first = 0, last = 0;
    if (s.count > 0 && (h5u_read_elems(pc->file, ipath, 0, 1, H5ARK_INT64, &first, err) ||
                        h5u_read_elems(pc->file, ipath, s.count - 1, 1, H5ARK_INT64, &last, err)))
        return h5ark_fail_context(err, "ExeTera field '%s'", ds->name);
    if (s.count == 0 ? v.count != 0 : first != 0 || last < 0 || (uint64_t)last != v.count)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "ExeTera field '%s' is malformed: its 'index' (%llu offsets, first %lld, "
                          "last %lld) must start at 0 and end at the %llu bytes of 'values'",
                          ds->name, (unsigned long long)s.count, (long long)first, (long long)last,
                          (unsigned long long)v.count);
    if (s.count <= 1) return 0; /* no strings */
    s.count--;                  /* the last offset is where the next file's bytes begin */
    int64_t value_offset = (int64_t)ds->values.total;
    char *vcopy = strdup(vpath), *icopy = strdup(ipath);
    if (!vcopy || !icopy) {
        free(vcopy);
        free(icopy);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (v.count && read_part_add(&ds->values, pc->index, pc->path, vcopy, &v, 0, err)) {
        free(icopy);
        return -1;
    }
    if (!v.count) free(vcopy);
    return read_part_add(&ds->segments, pc->index, pc->path, icopy, &s, value_offset, err);
}

/* ---- reading with offsets from the files' `segments` ------------------------------- */

typedef struct {
    const read_dataset *ds;
    object *obj, *tag;
    locale_errors le;
    _Atomic uint64_t first_bad;     /* global index of the first malformed string */
    _Atomic uint64_t first_bad_end; /* first values source not ending in NUL */
    const uint64_t *raw; /* unterminated: per locale boundary, where its bytes start in the
                            files' concatenation */
} seg_job;

/* Move the bytes [a, b) of buf up by `by`, over themselves: a string moved up to make room
 * for the NULs of the strings before it. Strings are mostly short, and memmove's call then
 * costs more than their bytes: when there are 16 bytes below the string (a >= 16) and it
 * moves by 16 or more, copy 16-byte blocks from its end down. The last block reads below a
 * (bytes of the strings below, not moved yet) and writes at most 15 bytes below where the
 * string lands, at a or above: none is a byte still to be read, and every one is written
 * again when the strings below are moved. */
static inline void move_up(unsigned char *buf, uint64_t a, uint64_t b, uint64_t by) {
    unsigned char *src = buf + a, *dst = src + by;
    if (by >= 16 && a >= 16) {
        for (uint64_t k = b - a; k > 0; k = k > 16 ? k - 16 : 0) {
            unsigned char block[16];
            memcpy(block, src + k - 16, 16);
            memcpy(dst + k - 16, block, 16);
        }
    } else if (b > a) {
        memmove(dst, src, b - a);
    }
}

/* Unterminated strings: the shard holds locale b's bytes as the files have them, followed
 * by room for one NUL per string, and its offsets as the files have them. Check the
 * offsets (from `lo`, nondecreasing, within the bytes up to `hi`), then move each string up
 * to make room for its NUL, from the last one down, and make the offsets the object's (a
 * NUL among the files' bytes is a string's data: the offsets say where each ends). Returns
 * the index of the first bad string in the shard, or UINT64_MAX. */
static uint64_t add_nuls(unsigned char *bytes, int64_t *seg, uint64_t count, uint64_t first_string,
                         uint64_t lo, uint64_t hi) {
    for (uint64_t i = 0; i < count; i++) {
        uint64_t end = i + 1 < count ? (uint64_t)seg[i + 1] : hi;
        if (seg[i] < 0 || (uint64_t)seg[i] < (i ? (uint64_t)seg[i - 1] : lo) ||
            end < (uint64_t)seg[i] || end > hi || (i == 0 && (uint64_t)seg[0] != lo))
            return i;
    }
    uint64_t next = hi; /* where the string after i starts in the files' bytes */
    for (uint64_t i = count; i-- > 0;) {
        uint64_t a = (uint64_t)seg[i] - lo, b = next - lo;
        next = (uint64_t)seg[i];
        move_up(bytes, a, b, i);
        bytes[b + i] = 0;
        seg[i] = (int64_t)(a + i + lo + first_string);
    }
    return UINT64_MAX;
}

static void seg_read_shard(int b, void *ctx) {
    seg_job *job = ctx;
    const read_dataset *ds = job->ds;
    const shard *vs = &job->obj->values->shards[b];
    const shard *ss = &job->obj->segments->shards[b];
    h5ark_error *err = &job->le.errs[b];
    /* unterminated: the files' bytes of this locale's strings, one NUL fewer per string */
    uint64_t vlo = job->raw ? job->raw[b] : vs->start;
    uint64_t vhi = job->raw ? job->raw[b + 1] : vs->start + vs->count;
    if ((vhi > vlo && read_part_range(&ds->values, vlo, vhi, vs->data, err)) ||
        (ss->count &&
         read_part_range(&ds->segments, ss->start, ss->start + ss->count, ss->data, err))) {
        locale_errors_set(&job->le, b);
        return;
    }
    /* Each file's offsets start at 0 and its bytes end in NUL: otherwise a string would
     * run from one file into the next. */
    if (ss->count) {
        const int64_t *seg = ss->data;
        for (size_t i = read_part_find(&ds->segments, ss->start); i < ds->segments.n; i++) {
            const read_src *src = &ds->segments.src[i];
            if (src->start >= ss->start + ss->count) break;
            /* (a ranged read may start inside a file: only a file's first offset is known) */
            if (src->first == 0 && src->info.count && src->start >= ss->start &&
                seg[src->start - ss->start] != src->rebase)
                locales_note_first(&job->first_bad, src->start);
        }
    }
    if (job->raw) {
        /* the strings add_nuls makes are well formed: no need to check them again */
        uint64_t bad = add_nuls(vs->data, ss->data, ss->count, ss->start, vlo, vhi);
        if (bad != UINT64_MAX) locales_note_first(&job->first_bad, ss->start + bad);
        if (job->tag && ss->count)
            read_part_tags(&ds->segments, ss->start, ss->start + ss->count,
                           job->tag->values->shards[b].data);
        return;
    } else if (vs->count) {
        const unsigned char *bytes = vs->data;
        for (size_t i = read_part_find(&ds->values, vs->start); i < ds->values.n; i++) {
            const read_src *src = &ds->values.src[i];
            if (!src->info.count) continue;
            uint64_t last = src->start + src->info.count - 1;
            if (last >= vs->start + vs->count) break;
            if (last >= vs->start && bytes[last - vs->start] != 0)
                locales_note_first(&job->first_bad_end, i);
        }
    }
    locales_note_first(&job->first_bad, strings_check_shard(job->obj, b));
    if (job->tag && ss->count)
        read_part_tags(&ds->segments, ss->start, ss->start + ss->count,
                       job->tag->values->shards[b].data);
}

static int fail_at_string(const read_dataset *ds, uint64_t k, h5ark_error *err) {
    const read_src *src = &ds->segments.src[read_part_find(&ds->segments, k)];
    if (ds->unterminated)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "ExeTera field '%s' in '%s' is malformed at string %llu: its 'index' "
                          "must start at 0 and never decrease, within 'values'",
                          ds->name, files_display(src->path), (unsigned long long)(k - src->start));
    return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                      "Strings '%s' in '%s' is malformed at string %llu: 'segments' must start "
                      "at 0 and increase within 'values', and every string must be followed "
                      "by a NUL byte",
                      ds->name, files_display(src->path), (unsigned long long)(k - src->start));
}

static int read_with_segments(const read_dataset *ds, bool tags, object **obj, object **tag,
                              h5ark_error *err) {
    int L = locales_count();
    uint64_t n = ds->segments.total, total = ds->values.total;
    uint64_t *off = calloc((size_t)L + 1, sizeof *off);
    if (!off) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    /* where each locale's strings start: one offset per locale boundary (with several
     * ranks every rank reads them from the files and they agree on the outcome) */
    off[L] = total;
    int brc = 0;
    for (int b = 1; b < L && brc == 0; b++) {
        uint64_t g = locales_block_start(n, L, b);
        if (g >= n) {
            off[b] = total;
            continue;
        }
        int64_t v = 0;
        if (read_part_range(&ds->segments, g, g + 1, &v, err))
            brc = h5ark_fail_context(err, "Strings '%s'", ds->name);
        else if (v < (int64_t)off[b - 1] || (uint64_t)v > total)
            brc = fail_at_string(ds, g, err);
        else
            off[b] = (uint64_t)v;
    }
    brc = ranks_agree(brc, err);
    if (brc) {
        free(off);
        return -1;
    }
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    if (!counts) {
        free(off);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    /* unterminated: one NUL more per string than the files hold */
    for (int b = 0; b < L; b++)
        counts[b] =
            off[b + 1] - off[b] +
            (ds->unterminated ? locales_block_start(n, L, b + 1) - locales_block_start(n, L, b)
                              : 0);
    seg_job job = {.ds = ds, .raw = ds->unterminated ? off : NULL};
    atomic_init(&job.first_bad, UINT64_MAX);
    atomic_init(&job.first_bad_end, UINT64_MAX);
    job.obj = object_new_strings(n, counts, err);
    free(counts);
    if (!job.obj) {
        h5ark_fail_context(err, "reading Strings '%s'", ds->name);
        goto fail;
    }
    if (tags && !(job.tag = object_new_pdarray(H5ARK_INT64, n, err))) {
        h5ark_fail_context(err, "tagging Strings '%s'", ds->name);
        goto fail;
    }
    if (locale_errors_init(&job.le, err)) goto fail;
    locales_run(seg_read_shard, &job);
    int rc = locale_errors_take(&job.le, err);
    locale_errors_free(&job.le);
    free(off);
    off = NULL;
    { /* each rank checked its own shards: the first bad of all */
        uint64_t v[2] = {atomic_load(&job.first_bad_end), atomic_load(&job.first_bad)};
        if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_allreduce_u64(v, 2, RANKS_MIN, err);
        atomic_store(&job.first_bad_end, v[0]);
        atomic_store(&job.first_bad, v[1]);
    }
    if (rc) goto fail;
    uint64_t bad_end = atomic_load(&job.first_bad_end);
    if (bad_end != UINT64_MAX) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "Strings '%s' in '%s' is malformed: 'values' does not end in a NUL byte",
                   ds->name, files_display(ds->values.src[bad_end].path));
        goto fail;
    }
    uint64_t bad = atomic_load(&job.first_bad);
    if (bad != UINT64_MAX) {
        fail_at_string(ds, bad, err);
        goto fail;
    }
    *obj = job.obj;
    *tag = job.tag;
    return 0;
fail:
    free(off);
    object_release(job.obj);
    object_release(job.tag);
    return -1;
}

/* ---- reading with offsets found from the NULs ---------------------------------------- */

/* The bytes are first read block-distributed by byte (the string boundaries are not known
 * yet), then the NULs counted, then each locale's strings copied whole into the result. */
typedef struct {
    const read_dataset *ds;
    darray *bytes;   /* block-distributed by byte */
    uint64_t *nuls;  /* per locale, then prefix sums */
    uint64_t *first; /* per locale boundary b: index of its first string */
    uint64_t *off;   /* per locale boundary b: byte offset of its first string */
    object *obj, *tag;
    locale_errors le;
    _Atomic uint64_t first_bad_end;
    int L;
} nul_job;

static void nul_read_count(int b, void *ctx) {
    nul_job *job = ctx;
    const read_dataset *ds = job->ds;
    const shard *s = &job->bytes->shards[b];
    job->nuls[b] = 0;
    if (s->count == 0) return;
    if (read_part_range(&ds->values, s->start, s->start + s->count, s->data, &job->le.errs[b])) {
        locale_errors_set(&job->le, b);
        return;
    }
    const unsigned char *p = s->data;
    uint64_t count = 0;
    for (uint64_t i = 0; i < s->count; i++)
        count += p[i] == 0;
    job->nuls[b] = count;
    for (size_t i = read_part_find(&ds->values, s->start); i < ds->values.n; i++) {
        const read_src *src = &ds->values.src[i];
        if (!src->info.count) continue;
        uint64_t last = src->start + src->info.count - 1;
        if (last >= s->start + s->count) break;
        if (last >= s->start && p[last - s->start] != 0) locales_note_first(&job->first_bad_end, i);
    }
}

/* Locale b finds the byte offsets of the boundary strings whose preceding NUL it holds. */
static void nul_find_boundaries(int b, void *ctx) {
    nul_job *job = ctx;
    const shard *s = &job->bytes->shards[b];
    uint64_t before = job->nuls[b], here = job->nuls[b + 1] - before;
    const unsigned char *p = s->data;
    uint64_t i = 0, seen = 0, found = 0;
    for (int k = 1; k < job->L; k++) {
        uint64_t g = job->first[k];
        if (g == 0 || g - 1 < before || g - 1 >= before + here) continue;
        uint64_t want = g - 1 - before; /* the want-th NUL of this shard ends string g-1 */
        /* boundaries repeat when there are fewer strings than locales */
        while (seen <= want && i < s->count)
            if (p[i++] == 0 && seen++ == want) found = s->start + i;
        job->off[k] = found;
    }
}

static void nul_fill(int b, void *ctx) {
    nul_job *job = ctx;
    const shard *vs = &job->obj->values->shards[b];
    const shard *ss = &job->obj->segments->shards[b];
    /* copy bytes [vs->start, vs->start + vs->count) out of the by-byte shards; where some
     * of those are another rank's, read the bytes from the files again */
    uint64_t pos = vs->start, end = vs->start + vs->count;
    unsigned char *out = vs->data;
    bool here = true;
    for (int k = pos < end ? darray_shard_of(job->bytes, pos) : job->bytes->nshards;
         k < job->bytes->nshards && job->bytes->shards[k].start < end; k++)
        here = here && (job->bytes->shards[k].count == 0 || locales_is_local(k));
    if (!here) {
        if (read_part_range(&job->ds->values, pos, end, out, &job->le.errs[b])) {
            locale_errors_set(&job->le, b);
            return;
        }
        pos = end;
    }
    while (pos < end) {
        const shard *src = &job->bytes->shards[darray_shard_of(job->bytes, pos)];
        uint64_t n = src->start + src->count - pos;
        if (n > end - pos) n = end - pos;
        memcpy(out + (pos - vs->start), (const unsigned char *)src->data + (pos - src->start), n);
        pos += n;
    }
    int64_t *seg = ss->data;
    uint64_t k = 0;
    if (ss->count) seg[k++] = (int64_t)vs->start;
    for (uint64_t i = 0; i + 1 < vs->count && k < ss->count; i++)
        if (out[i] == 0) seg[k++] = (int64_t)(vs->start + i + 1);
    if (job->tag && ss->count) {
        int64_t *tags = job->tag->values->shards[b].data;
        size_t j = read_part_find(&job->ds->values, (uint64_t)seg[0]);
        for (uint64_t i = 0; i < ss->count; i++) {
            while (j + 1 < job->ds->values.n &&
                   job->ds->values.src[j + 1].start <= (uint64_t)seg[i])
                j++;
            tags[i] = job->ds->values.src[j].file;
        }
    }
}

static int read_from_nuls(const read_dataset *ds, bool tags, object **obj, object **tag,
                          h5ark_error *err) {
    int L = locales_count();
    nul_job job = {.ds = ds, .L = L};
    atomic_init(&job.first_bad_end, UINT64_MAX);
    int rc = -1;
    job.nuls = calloc((size_t)L + 1, sizeof *job.nuls);
    job.first = calloc((size_t)L + 1, sizeof *job.first);
    job.off = calloc((size_t)L + 1, sizeof *job.off);
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    if (!job.nuls || !job.first || !job.off || !counts) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    if (locale_errors_init(&job.le, err)) goto out;
    job.bytes = darray_new(H5ARK_UINT8, ds->values.total, NULL, err);
    if (!job.bytes) {
        h5ark_fail_context(err, "reading Strings '%s'", ds->name);
        goto out;
    }
    locales_run(nul_read_count, &job);
    int lrc = locale_errors_take(&job.le, err);
    { /* every rank counted its own shards' NULs: share the counts */
        uint64_t bad = atomic_load(&job.first_bad_end);
        if ((lrc = ranks_agree(lrc, err)) == 0 &&
            (lrc = ranks_allreduce_u64(&bad, 1, RANKS_MIN, err)) == 0)
            lrc = ranks_allreduce_u64(job.nuls, (size_t)L, RANKS_SUM, err);
        atomic_store(&job.first_bad_end, bad);
    }
    if (lrc) goto out;
    uint64_t bad_end = atomic_load(&job.first_bad_end);
    if (bad_end != UINT64_MAX) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "Strings '%s' in '%s' is malformed: 'values' does not end in a NUL byte",
                   ds->name, files_display(ds->values.src[bad_end].path));
        goto out;
    }
    /* nuls becomes prefix sums: nuls[b] = NULs before locale b's bytes */
    uint64_t n = 0;
    for (int b = 0; b <= L; b++) {
        uint64_t c = b < L ? job.nuls[b] : 0;
        job.nuls[b] = n;
        n += c;
    }
    for (int b = 0; b <= L; b++)
        job.first[b] = locales_block_start(n, L, b);
    job.off[L] = ds->values.total;
    locales_run(nul_find_boundaries, &job);
    /* each boundary was found by the one locale holding its NUL, maybe on another rank */
    if (ranks_allreduce_u64(job.off, (size_t)L, RANKS_MAX, err)) goto out;
    for (int b = 0; b < L; b++)
        counts[b] = job.off[b + 1] - job.off[b];
    job.obj = object_new_strings(n, counts, err);
    if (!job.obj) {
        h5ark_fail_context(err, "reading Strings '%s'", ds->name);
        goto out;
    }
    if (tags && !(job.tag = object_new_pdarray(H5ARK_INT64, n, err))) {
        h5ark_fail_context(err, "tagging Strings '%s'", ds->name);
        goto out;
    }
    locales_run(nul_fill, &job);
    if (ranks_agree(locale_errors_take(&job.le, err), err)) goto out;
    *obj = job.obj;
    *tag = job.tag;
    job.obj = job.tag = NULL;
    rc = 0;
out:
    object_release(job.obj);
    object_release(job.tag);
    darray_free(job.bytes);
    locale_errors_free(&job.le);
    free(job.nuls);
    free(job.first);
    free(job.off);
    free(counts);
    return rc;
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    (void)strict;
    const read_dataset *ds = &n->ds;
    *obj = *tag = NULL;
    if (ds->no_segments) return read_from_nuls(ds, tags, obj, tag, err);
    return read_with_segments(ds, tags, obj, tag, err);
}

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    if (!f->is_group) return SCHEMA_NOT_MINE;
    if (f->has_objtype) return f->objtype == OBJTYPE_STRINGS ? SCHEMA_BY_OBJTYPE : SCHEMA_NOT_MINE;
    /* Arkouda leaves some Strings unmarked: a child dataset `values` of bytes says Strings
     * (other systems' groups hold `values` of numbers) */
    return schema_child_of(f, CHILD_VALUES) == SCHEMA_CHILD_BYTES ? SCHEMA_BY_SHAPE
                                                                  : SCHEMA_NOT_MINE;
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_STRINGS;
}

/* ---- ranged reads --------------------------------------------------------------------- */

/* Without offsets, where string k starts is found by counting NULs from the first byte:
 * the bytes of strings [lo, hi) are [*p, *q); hi == SCHEMA_TO_END counts them all. */
static int find_by_nuls(read_node *n, uint64_t lo, uint64_t *hi, uint64_t *p, uint64_t *q,
                        h5ark_error *err) {
    const read_part *v = &n->ds.values;
    enum { STEP = 1 << 20 };
    unsigned char *buf = sysio.malloc(STEP);
    if (!buf) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t nuls = 0;
    *p = lo == 0 ? 0 : UINT64_MAX;
    *q = *hi == 0 ? 0 : UINT64_MAX;
    for (uint64_t at = 0; at < v->total && (*q == UINT64_MAX || *p == UINT64_MAX); at += STEP) {
        uint64_t len = v->total - at < STEP ? v->total - at : STEP;
        if (read_part_range(v, at, at + len, buf, err)) {
            free(buf);
            return h5ark_fail_context(err, "Strings '%s'", n->path);
        }
        for (uint64_t i = 0; i < len; i++) {
            if (buf[i]) continue;
            nuls++;
            if (nuls == lo) *p = at + i + 1;
            if (nuls == *hi) *q = at + i + 1;
        }
    }
    free(buf);
    uint64_t end = *hi;
    if (*hi == SCHEMA_TO_END) {
        *q = v->total;
        if (*p == UINT64_MAX && lo <= nuls) *p = v->total;
    }
    if (schema_rows(n, nuls, lo, &end, err)) return -1;
    *hi = end;
    return 0;
}

/* Rows are strings: their offsets, and the bytes from the first one's start to the next
 * string's (or the end), offsets moved down by where those bytes start. */
static int slice(read_node *n, uint64_t lo, uint64_t hi, h5ark_error *err) {
    read_dataset *ds = &n->ds;
    uint64_t p = 0, q = 0;
    if (ds->no_segments) {
        if (find_by_nuls(n, lo, &hi, &p, &q, err)) return -1;
        read_part_slice(&ds->values, p, q);
        return 0;
    }
    if (schema_rows(n, ds->segments.total, lo, &hi, err)) return -1;
    int64_t at[2] = {0, 0};
    uint64_t rows[2] = {lo, hi};
    for (int i = 0; i < 2; i++) {
        if (rows[i] == ds->segments.total) {
            at[i] = (int64_t)ds->values.total;
        } else if (read_part_int64_at(&ds->segments, rows[i], &at[i], err)) {
            return h5ark_fail_context(err, "Strings '%s'", n->path);
        }
    }
    if (at[0] < 0 || at[1] < at[0] || (uint64_t)at[1] > ds->values.total)
        return fail_at_string(ds, lo, err);
    p = (uint64_t)at[0];
    q = (uint64_t)at[1];
    read_part_slice(&ds->segments, lo, hi);
    read_part_rebase(&ds->segments, -(int64_t)p);
    read_part_slice(&ds->values, p, q);
    return 0;
}

/* Counting the NULs of a Strings group without `segments` for lshdf reads its bytes: at
 * most this many. */
#define LIST_NUL_COUNT_MAX ((uint64_t)64 << 20)

static void list(const schema_facts *f, schema_listing *out) {
    snprintf(out->dtype, sizeof out->dtype, "str");
    hid_t seg = h5u_open_child(f->obj, CHILD_SEGMENTS, H5O_TYPE_DATASET);
    if (seg >= 0) {
        out->rows = h5u_dataset_len(seg);
        H5Oclose(seg);
        return;
    }
    hid_t vals = h5u_open_child(f->obj, CHILD_VALUES, H5O_TYPE_DATASET);
    if (vals < 0) return;
    out->rows = h5u_count_nuls(vals, LIST_NUL_COUNT_MAX);
    H5Oclose(vals);
    if (out->rows < 0)
        out->note = "no 'segments', and 'values' is too large or unreadable to count its strings";
}

/* `segments` may be missing: the strings are then counted by their NULs */
static const schema_part parts[] = {
    {CHILD_VALUES, NULL, SCHEMA_PART_NUMBERS},
    {NULL, NULL, 0},
};

const schema_family schema_strings = {
    .kind = KIND_STRINGS,
    .what = "Strings",
    .objtype = "strings",
    .detect = detect,
    .probe = probe,
    .build = build,
    .slice = slice,
    .list = list,
    .writes = writes,
    .write = strings_write,
    .parts = parts,
};
