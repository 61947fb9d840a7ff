/* Plain HDF5 strings (docs/FORMAT.md, "Plain HDF5"): a 1-D dataset of HDF5 strings with no
 * ObjType, as h5py writes a list of str or bytes — fixed length (padding removed) or
 * variable length, ASCII or UTF-8. Read into a Strings object; h5ark never writes this
 * layout (it writes Arkouda's Strings group). The strings cannot be pread: HDF5 converts
 * them, a slab per file, on the handler thread. With several ranks each rank converts the
 * rows of its own locales, and an allreduce of the byte counts lays the object out. */
#include "families.h"

#include "files.h"
#include "locales.h"
#include "progress.h"
#include "dist/ranks.h"
#include "sysio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    return !f->is_group && !f->has_objtype && f->rank == 1 && f->tclass == H5T_STRING
               ? SCHEMA_BY_SHAPE
               : SCHEMA_NOT_MINE;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    hid_t space = H5Dget_space(dset);
    hsize_t dims[1] = {0};
    int rc =
        space >= 0 && H5Sget_simple_extent_dims(space, dims, NULL) == 1
            ? 0
            : h5u_fail(err, H5ARK_SCHEMA_ERROR, "dataset '%s': cannot read its shape", n->path);
    if (space >= 0) H5Sclose(space);
    H5Dclose(dset);
    if (rc || dims[0] == 0) return rc; /* an empty share adds nothing */
    h5u_dset_info info = {.count = dims[0], .dtype = H5ARK_UINT8};
    char *copy = strdup(n->path);
    if (!copy) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return read_part_add(&n->ds.values, pc->index, pc->path, copy, &info, 0, err);
}

/* The strings of the concatenation, gathered on this thread: bytes (each string and a
 * NUL) and each string's start. */
typedef struct {
    char *bytes;
    uint64_t nbytes, cap;
    uint64_t *starts;
    uint64_t n;
} gathered;

static int append(gathered *g, const char *s, size_t len, h5ark_error *err) {
    if (g->nbytes + len + 1 > g->cap) {
        uint64_t cap = g->cap ? g->cap : 4096;
        while (cap < g->nbytes + len + 1)
            cap *= 2;
        char *b = realloc(g->bytes, cap);
        if (!b) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        g->bytes = b;
        g->cap = cap;
    }
    g->starts[g->n++] = g->nbytes;
    memcpy(g->bytes + g->nbytes, s, len);
    g->bytes[g->nbytes + len] = '\0';
    g->nbytes += len + 1;
    return 0;
}

/* The length of a fixed-length HDF5 string of `size` bytes, by its padding (the format's
 * rule): NULLTERM ends at the first NUL; NULLPAD's trailing NULs and SPACEPAD's trailing
 * spaces are padding, and a NUL before other bytes is the string's data. */
static size_t fixed_len(const char *s, size_t size, H5T_str_t pad) {
    if (pad == H5T_STR_NULLTERM) return strnlen(s, size);
    char fill = pad == H5T_STR_SPACEPAD ? ' ' : '\0';
    while (size > 0 && s[size - 1] == fill)
        size--;
    return size;
}

/* Strings [first, first + count) of one file's dataset. Variable-length ones are C strings
 * (HDF5 ends each at its NUL); fixed-length ones lose only their padding (fixed_len). */
static int gather_src(const read_src *src, uint64_t first, uint64_t count, gathered *g,
                      h5ark_error *err) {
    int rc = -1;
    hid_t file = H5Fopen(src->path, H5F_ACC_RDONLY, h5u_fapl());
    hid_t dset = file >= 0 ? H5Dopen2(file, src->dset, H5P_DEFAULT) : H5I_INVALID_HID;
    hid_t ftype = dset >= 0 ? H5Dget_type(dset) : H5I_INVALID_HID;
    hid_t mtype = H5I_INVALID_HID, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    void *buf = NULL;
    if (ftype < 0) {
        h5u_fail(err, H5ARK_IO_ERROR, "cannot open '%s'", src->dset);
        goto out;
    }
    bool vlen = H5Tis_variable_str(ftype) > 0;
    size_t size = vlen ? sizeof(char *) : H5Tget_size(ftype);
    H5T_str_t pad = H5Tget_strpad(ftype);
    mtype = H5Tcopy(ftype);
    hsize_t start[1] = {first}, cnt[1] = {count};
    fspace = H5Dget_space(dset);
    mspace = H5Screate_simple(1, cnt, NULL);
    buf = size && count <= UINT64_MAX / size ? sysio.malloc(count * size) : NULL;
    if (!buf) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    if (mtype < 0 || fspace < 0 || mspace < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ||
        H5Dread(dset, mtype, mspace, fspace, H5P_DEFAULT, buf) < 0) {
        h5u_fail(err, H5ARK_IO_ERROR, "cannot read strings %llu..%llu of '%s'",
                 (unsigned long long)first, (unsigned long long)(first + count), src->dset);
        goto out;
    }
    rc = 0;
    progress_add(progress_here(), read_src_bytes(src, count));
    for (uint64_t i = 0; i < count && rc == 0; i++) {
        const char *s = vlen ? ((char **)buf)[i] : (const char *)buf + i * size;
        size_t len = vlen ? (s ? strlen(s) : 0) : fixed_len(s, size, pad);
        rc = append(g, s ? s : "", len, err);
    }
    if (vlen) H5Dvlen_reclaim(mtype, mspace, H5P_DEFAULT, buf);
out:
    if (rc) h5u_io_blame(file, err);
    free(buf);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    if (mtype >= 0) H5Tclose(mtype);
    if (ftype >= 0) H5Tclose(ftype);
    if (dset >= 0) H5Dclose(dset);
    if (file >= 0) H5Fclose(file);
    H5Eclear2(H5E_DEFAULT);
    return rc ? h5ark_fail_context(err, "reading '%s'", files_display(src->path)) : 0;
}

typedef struct {
    const gathered *g;
    object *obj, *tag;
    const read_part *part;
    uint64_t first, base; /* this rank's first string and the byte offset of its first */
} fill_job;

static void fill_shard(int b, void *ctx) {
    fill_job *j = ctx;
    const shard *seg = &j->obj->segments->shards[b], *val = &j->obj->values->shards[b];
    int64_t *starts = seg->data;
    for (uint64_t i = 0; i < seg->count; i++)
        starts[i] = (int64_t)(j->base + j->g->starts[seg->start - j->first + i]);
    if (val->count) memcpy(val->data, j->g->bytes + (val->start - j->base), val->count);
    if (j->tag) {
        const shard *t = &j->tag->values->shards[b];
        read_part_tags(j->part, t->start, t->start + t->count, t->data);
    }
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    (void)strict;
    *obj = *tag = NULL;
    const read_part *part = &n->ds.values;
    gathered g = {0};
    int L = locales_count(), first = locales_local_first(), nlocal = locales_local_count();
    uint64_t total = 0;
    for (size_t i = 0; i < part->n; i++)
        total += part->src[i].info.count;
    /* this rank's strings: those of its locales (all of them with one rank) */
    uint64_t lo = locales_block_start(total, L, first);
    uint64_t hi = locales_block_start(total, L, first + nlocal);
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    g.starts = malloc((hi > lo ? hi - lo : 1) * sizeof *g.starts);
    int rc = counts && g.starts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t at = 0; /* the first string of source i in the concatenation */
    for (size_t i = 0; i < part->n && rc == 0; i++) {
        const read_src *src = &part->src[i];
        uint64_t c = src->info.count;
        uint64_t a = at > lo ? at : lo, z = at + c < hi ? at + c : hi;
        if (a < z) rc = gather_src(src, src->first + (a - at), z - a, &g, err);
        at += c;
    }
    /* the lowest failing rank's error: that of the first failing string, as with one rank */
    rc = ranks_agree(rc, err);
    for (int b = first; b < first + nlocal && rc == 0; b++) {
        uint64_t blo = locales_block_start(total, L, b) - lo;
        uint64_t bhi = locales_block_start(total, L, b + 1) - lo;
        counts[b] = (bhi < g.n ? g.starts[bhi] : g.nbytes) - (blo < g.n ? g.starts[blo] : g.nbytes);
    }
    if (rc == 0) rc = ranks_allreduce_u64(counts, (size_t)L, RANKS_SUM, err);
    uint64_t base = 0;
    for (int b = 0; b < first && rc == 0; b++)
        base += counts[b];
    if (rc == 0 && !(*obj = object_new_strings(total, counts, err))) rc = -1;
    if (rc == 0 && tags && !(*tag = object_new_pdarray(H5ARK_INT64, total, err))) rc = -1;
    if (rc == 0) {
        fill_job j = {.g = &g, .obj = *obj, .tag = *tag, .part = part, .first = lo, .base = base};
        locales_run(fill_shard, &j);
    }
    if (rc) {
        object_release(*obj);
        object_release(*tag);
        *obj = *tag = NULL;
    }
    free(counts);
    free(g.starts);
    free(g.bytes);
    return rc;
}

const schema_family schema_h5strings = {
    .kind = KIND_H5STRINGS,
    .what = "HDF5 strings",
    .objtype = "strings",
    .detect = detect,
    .probe = probe,
    .build = build,
    .slice = schema_slice_elements,
};
