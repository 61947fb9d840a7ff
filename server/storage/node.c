/* The read tree and its sources (node.h). */
#include "node.h"

#include "files.h"
#include "io.h"
#include "progress.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
        read_src *v = sysio.realloc(part->src, cap * sizeof *v);
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

void read_part_slice(read_part *part, uint64_t lo, uint64_t hi) {
    for (size_t i = 0; i < part->n; i++) {
        read_src *s = &part->src[i];
        uint64_t end = s->start + s->info.count;
        uint64_t a = lo > s->start ? lo : s->start, b = hi < end ? hi : end;
        if (a >= b) {
            /* nothing of it is wanted: empty, where it keeps the order of starts */
            uint64_t at = s->start < lo ? lo : s->start > hi ? hi : s->start;
            s->start = at - lo;
            s->info.count = 0;
            continue;
        }
        s->first += a - s->start;
        s->info.count = b - a;
        s->start = a - lo;
    }
    part->total = hi - lo;
}

void read_part_rebase(read_part *part, int64_t by) {
    for (size_t i = 0; i < part->n; i++)
        part->src[i].rebase += by;
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
    int fd = sysio.open(src->path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot open '%s': %s", files_display(src->path),
                          strerror(errno));
    int rc = 0;
    /* in pieces, so that the request's progress moves while a large shard comes in */
    progress_sink *progress = progress_here();
    uint64_t len = count * itemsize, from = src->info.offset + first * itemsize;
    for (uint64_t at = 0; at < len && rc == 0; at += PROGRESS_PIECE) {
        uint64_t n = len - at < PROGRESS_PIECE ? len - at : PROGRESS_PIECE;
        if (io_pread_full(fd, (char *)dest + at, n, from + at))
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot read '%s' from '%s': %s", src->dset,
                            files_display(src->path),
                            errno == ENODATA ? "the file ends early" : strerror(errno));
        else
            progress_add(progress, n);
    }
    sysio.close(fd);
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
        uint64_t first = src->first + (a - src->start), count = b - a;
        bool direct = src->info.contiguous && src->info.exact && src->info.dtype == part->dtype;
        int rc = direct ? pread_src(src, first, count, itemsize, out, err)
                        : h5u_read_chunks(src->path, src->dset, first, count, part->dtype,
                                          src->info.exact, src->info.dtype, out, err);
        if (rc) {
            if (!direct)
                h5ark_fail_context(err, "reading '%s' from '%s'", src->dset,
                                   files_display(src->path));
            return -1;
        }
        if (!direct) progress_add(progress_here(), read_src_bytes(src, count));
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

int read_part_int64_at(const read_part *part, uint64_t i, int64_t *out, h5ark_error *err) {
    read_part p = *part;
    p.dtype = H5ARK_INT64;
    return read_part_range(&p, i, i + 1, out, err);
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

uint64_t node_elements(const read_node *n) {
    if (n->kind == KIND_STRINGS) return n->ds.segments.total;
    if (n->kind == KIND_BIGINT) return n->nkids ? n->kids[0].ds.values.total : 0;
    return n->ds.values.total;
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
    free(n->fieldtype);
    n->fieldtype = NULL;
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

int node_check_children(hid_t file, const read_node *n, const char *what, const char *noun,
                        h5ark_error *err) {
    hid_t g = H5Gopen2(file, n->path, H5P_DEFAULT);
    if (g < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s '%s' cannot be opened", what, n->path);
    char label[1200];
    snprintf(label, sizeof label, "%s '%s'", what, n->path);
    h5u_names names = {0};
    int rc = h5u_link_names(g, NULL, &names, label, err);
    H5Gclose(g);
    for (size_t i = 0; i < names.n && rc == 0; i++) {
        size_t k = 0;
        while (k < n->nkids && strcmp(n->kids[k].name, names.v[i]) != 0)
            k++;
        if (k == n->nkids)
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "%s '%s' has %s '%s', which the files before it do not have (every "
                            "file must hold the same %ss)",
                            what, n->path, noun, names.v[i], noun);
    }
    h5u_names_free(&names);
    return rc;
}

int node_child_path(const read_node *n, const char *child, const char *legacy_sep, char *out,
                    size_t outlen) {
    int len = snprintf(out, outlen, "%s%s%s", n->path, n->legacy ? legacy_sep : "/", child);
    return len < 0 || (size_t)len >= outlen ? -1 : 0;
}

void node_mark(read_node *n) {
    n->mark.kind = n->kind;
    n->mark.values_n = n->ds.values.n;
    n->mark.segments_n = n->ds.segments.n;
    n->mark.nkids = n->nkids;
    n->mark.no_segments = n->ds.no_segments;
    n->mark.have_dtype = n->ds.have_dtype;
    n->mark.ndim = n->ndim;
    n->mark.shape0 = n->shape[0];
    for (size_t i = 0; i < n->nkids; i++)
        node_mark(&n->kids[i]);
}

void node_undo(read_node *n) {
    while (n->nkids > n->mark.nkids)
        node_clear(&n->kids[--n->nkids]);
    for (size_t i = 0; i < n->nkids; i++)
        node_undo(&n->kids[i]);
    n->kind = n->mark.kind;
    n->ds.no_segments = n->mark.no_segments;
    n->ds.have_dtype = n->mark.have_dtype;
    n->ndim = n->mark.ndim;
    n->shape[0] = n->mark.shape0;
    if (n->kind == KIND_NONE) n->legacy = false;
    read_part_truncate(&n->ds.values, n->mark.values_n);
    read_part_truncate(&n->ds.segments, n->mark.segments_n);
}
