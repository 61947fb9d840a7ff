/* Probing a file set for readhdf: open each file once, list its objects when none are
 * named, and let the schema families add each file's share to the read tree. Runs in the
 * file probe processes (sandbox.c), or in process without them. */
#include "probe.h"

#include "files.h"
#include "layout.h"
#include "sysio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int make_datasets(read_probe *st, h5ark_error *err) {
    st->nodes = sysio.calloc(st->names.n ? st->names.n : 1, sizeof *st->nodes);
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

/* Reading whole files, an object of the first file that cannot be read is left out, not the
 * file: what nothing can represent, what schema_classify refuses (as lshdf lists it, with no
 * objtype), what is malformed or needs an option the request lacks. A failed read, memory
 * or a fault of the daemon's are never taken for that. */
static bool object_only(const h5ark_error *err) {
    return (err->code == H5ARK_TYPE_ERROR || err->code == H5ARK_SCHEMA_ERROR ||
            err->code == H5ARK_FORBIDDEN || err->code == H5ARK_NOT_FOUND) &&
           h5u_io_errno() == 0;
}

/* Leave object i out of the read, saying why in a warning. */
static int skip_object(read_probe *st, size_t i, h5ark_error *err) {
    char line[sizeof err->message + 64];
    snprintf(line, sizeof line, "skipped: %s", err->message);
    if (h5u_names_push(&st->warnings, line) || h5u_names_push(&st->skipped, st->names.v[i]))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    node_clear(&st->nodes[i]);
    free(st->names.v[i]);
    memmove(&st->nodes[i], &st->nodes[i + 1], (st->names.n - i - 1) * sizeof *st->nodes);
    memmove(&st->names.v[i], &st->names.v[i + 1], (st->names.n - i - 1) * sizeof *st->names.v);
    st->names.n--;
    *err = (h5ark_error){0};
    return 0;
}

/* Reading whole files, the objects are the first file's: say which objects of a later file
 * are not read because the first lacks them. */
static int warn_unlisted(read_probe *st, hid_t file, const char *path, h5ark_error *err) {
    h5u_names here = {0};
    int rc = list_objects(file, &here, err);
    for (size_t i = 0; rc == 0 && i < here.n; i++) {
        if (has_name(&st->names, here.v[i]) || has_name(&st->skipped, here.v[i])) continue;
        char line[2400];
        snprintf(line, sizeof line,
                 "not read: '%s' in '%s', which the first file read does not hold (reading whole "
                 "files reads the first file's objects)",
                 here.v[i], files_display(path));
        if (!has_name(&st->warnings, line) && h5u_names_push(&st->warnings, line))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    h5u_names_free(&here);
    return rc;
}

int read_probe_open(const char *path, hid_t *file_out, uint64_t *size_out, h5ark_error *err) {
    /* one open of each file: what kind of failure it was is asked only after one */
    h5u_io_clear();
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, h5u_fapl());
    hsize_t size = 0;
    if (file < 0) {
        struct stat sb;
        int io = h5u_io_errno();
        h5u_io_clear();
        /* the file could not be read: that says nothing of what it holds */
        if (io == ENOMEM)
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        else if (io)
            h5ark_fail(err, H5ARK_IO_ERROR, "cannot read it: %s", strerror(io));
        else if (stat(path, &sb) != 0)
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
    *file_out = file;
    *size_out = (uint64_t)size;
    return 0;
}

/* Probe the request's file k; on failure it adds nothing to st. */
static int probe_file(const read_probe_request *rq, size_t k, read_probe *st, h5ark_error *err) {
    const char *path = rq->paths[k];
    hid_t file;
    uint64_t size;
    if (read_probe_open(path, &file, &size, err)) return -1;
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
                    .size = size,
                    .calc_offsets = rq->calc_offsets,
                    .ak0_whitelist = rq->ak0_whitelist,
                    .warnings = &st->warnings};
    size_t warned = st->warnings.n; /* what the files before said */
    if (rc == 0)
        for (size_t i = 0; i < st->names.n; i++)
            node_mark(&st->nodes[i]);
    for (size_t i = 0; rc == 0 && i < st->names.n; i++) {
        rc = schema_probe(&pc, &st->nodes[i], err);
        if (rc && listed_here && object_only(err)) rc = skip_object(st, i--, err);
    }
    if (rc == 0 && !listed_here && rq->ndatasets == 0) rc = warn_unlisted(st, file, path, err);
    if (rc) h5u_io_blame(file, err);
    if (H5Fclose(file) < 0 && rc == 0) rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close it");
    if (rc) {
        /* the file is skipped whole: undo what it added */
        if (listed_here) {
            free_datasets(st);
            h5u_names_free(&st->names);
            h5u_names_free(&st->warnings);
            h5u_names_free(&st->skipped);
        } else {
            for (size_t i = 0; st->nodes && i < st->names.n; i++)
                node_undo(&st->nodes[i]);
            while (st->warnings.n > warned)
                free(st->warnings.v[--st->warnings.n]);
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
    h5u_names_free(&p->warnings);
    h5u_names_free(&p->skipped);
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
        if (rq->progress) rq->progress(k, rq->paths[k]);
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
