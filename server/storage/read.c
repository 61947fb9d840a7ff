/* readhdf: probe every file's metadata with HDF5 (one file open at a time), decide each
 * dataset's kind and type across the files, then let the locales read their blocks of the
 * concatenation in parallel: pread straight into their shards where a dataset's bytes are
 * contiguous and already in memory's form, HDF5 (hyperslab reads) elsewhere. */
#include "storage.h"
#include "twin.h"

#include "files.h"
#include "io.h"
#include "locales.h"
#include "metrics.h"
#include "sandbox.h"
#include "layout.h"
#include "probe.h"
#include "progress.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "sysio.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The bytes a read will take from the files: the measure of its progress. */
static uint64_t part_bytes(const read_part *p) {
    uint64_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += read_src_bytes(&p->src[i], p->src[i].info.count);
    return n;
}

static uint64_t node_bytes(const read_node *n) {
    /* offsets found from the NULs are not read */
    uint64_t b = part_bytes(&n->ds.values) + (n->ds.no_segments ? 0 : part_bytes(&n->ds.segments));
    for (size_t i = 0; i < n->nkids; i++)
        b += node_bytes(&n->kids[i]);
    return b;
}

/* Reading whole files, an object whose data proves malformed, or that nothing can represent,
 * is left out and named in a warning, as the probes leave out what its metadata rules out;
 * a failed read or a lack of memory fails the request. */
static bool unreadable_object(const h5ark_error *err) {
    return err->code == H5ARK_TYPE_ERROR || err->code == H5ARK_SCHEMA_ERROR ||
           err->code == H5ARK_FORBIDDEN;
}

static int skip_built(storage_read_item *it, h5ark_value *warnings, h5ark_error *err) {
    char line[sizeof err->message + 16];
    snprintf(line, sizeof line, "skipped: %s", err->message);
    free(it->dataset);
    *it = (storage_read_item){0};
    *err = (h5ark_error){0};
    return h5ark_value_push(warnings, h5ark_value_str(line))
               ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
               : 0;
}

/* Rank 0 probes the files (in the sandbox) and every rank gets what it found, as the probes
 * send it, so that all build the same objects from the same read tree. */
typedef struct {
    const read_probe_request *rq;
    read_probe *st;
} probe_job;

static int probe_on_root(void *ctx, h5ark_error *err) {
    probe_job *pj = ctx;
    return sandbox_probe_read(pj->rq, pj->st, err);
}

static h5ark_value *probe_encode(void *ctx, h5ark_error *err) {
    h5ark_value *v = read_probe_encode(((probe_job *)ctx)->st);
    if (!v) spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory encoding a value");
    return v;
}

static int probe_decode(const h5ark_value *v, void *ctx, h5ark_error *err) {
    probe_job *pj = ctx;
    return read_probe_decode(v, pj->rq->paths, pj->rq->npaths, pj->st, err);
}

static int read_files(char *const *paths, size_t npaths, const char *const *datasets,
                      size_t ndatasets, const storage_read_options *opts, storage_read_item **items,
                      size_t *nitems, h5ark_value *file_errors, h5ark_value *warnings,
                      h5ark_error *err) {
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
                             .calc_offsets = opts->calc_string_offsets,
                             .ak0_whitelist = opts->ak0_whitelist};
    read_probe st = {0};
    probe_job pj = {&rq, &st};
    if (spmd_root_does(0, probe_on_root, &pj, err) ||
        spmd_share_value(probe_encode, probe_decode, &pj, err)) {
        read_probe_clear(&st);
        return -1;
    }
    storage_read_item *out = NULL;
    size_t built = 0;
    int rc = -1;
    /* every failure up to the agreement below goes through it: a rank failing alone (out of
     * memory here) must not leave the others waiting in a later agreement */
    int src = 0;
    const read_file_error *last = st.nerrors ? &st.errors[st.nerrors - 1] : NULL;
    if (st.stopped) {
        h5ark_fail(err, last->code, "%s", last->message);
        h5ark_fail_context(err, "cannot read '%s'", files_display(paths[last->index]));
        src = -1;
    }
    for (size_t i = 0; src == 0 && i < st.nerrors; i++) {
        const read_file_error *e = &st.errors[i];
        char line[sizeof err->message + PATH_MAX];
        snprintf(line, sizeof line, "%s: %s", files_display(paths[e->index]), e->message);
        if (h5ark_value_push(file_errors, h5ark_value_str(line)))
            src = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (size_t i = 0; src == 0 && i < st.warnings.n; i++)
        if (h5ark_value_push(warnings, h5ark_value_str(st.warnings.v[i])))
            src = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (src == 0 && st.nerrors == npaths)
        src = h5ark_fail(err, last->code, "none of the %zu files could be read; '%s': %s", npaths,
                         files_display(paths[last->index]), last->message);
    for (size_t i = 0; opts->ranged && src == 0 && i < st.names.n; i++)
        src = schema_slice(&st.nodes[i], opts->start, opts->stop, err);
    if (src == 0 && !(out = sysio.calloc(st.names.n ? st.names.n : 1, sizeof *out)))
        src = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    /* every rank reads the row bounds from the files itself: agree on the outcome */
    src = ranks_agree(src, err);
    if (src) goto out;
    uint64_t total = 0;
    for (size_t i = 0; i < st.names.n; i++)
        total += node_bytes(&st.nodes[i]);
    progress_start(progress_here(), PROGRESS_BYTES, total);
    for (size_t i = 0; i < st.names.n; i++) {
        read_node *ds = &st.nodes[i];
        storage_read_item *it = &out[built];
        ds->swap_bytes = opts->awkward_big_endian;
        int r =
            (it->dataset = strdup(ds->name))
                ? schema_build(ds, opts->strict_types, opts->tag_data, &it->obj, &it->file_tag, err)
                : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        r = ranks_agree(r, err); /* every rank has the same err */
        if (r && ndatasets == 0 && unreadable_object(err)) {
            r = skip_built(it, warnings, err);
            if (r == 0) continue;
        }
        built++; /* its name is freed with the rest */
        if (r) goto out;
    }
    *items = out;
    *nitems = built;
    out = NULL;
    rc = 0;
    metrics_files_read(npaths - st.nerrors);
out:
    if (out) free_items(out, built);
    read_probe_clear(&st);
    return rc;
}

/* Files read while no part's change is being repeated on an old file (twin.h). */
int storage_read(char *const *paths, size_t npaths, const char *const *datasets, size_t ndatasets,
                 const storage_read_options *opts, storage_read_item **items, size_t *nitems,
                 h5ark_value *file_errors, h5ark_value *warnings, h5ark_error *err) {
    twin_readers_enter();
    int rc = read_files(paths, npaths, datasets, ndatasets, opts, items, nitems, file_errors,
                        warnings, err);
    twin_readers_leave();
    return rc;
}

int storage_read_rows(const char *abs_path, const char *dataset, uint64_t start, uint64_t stop,
                      storage_read_item **items, size_t *nitems, object **whole, h5ark_error *err) {
    storage_read_options opts = {
        .strict_types = true, .ranged = true, .start = start, .stop = stop};
    char *files[1] = {(char *)abs_path};
    *whole = NULL;
    h5ark_value *file_errors = h5ark_value_array(), *warnings = h5ark_value_array();
    int rc = file_errors && warnings ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    if (rc == 0)
        rc = storage_read(files, 1, &dataset, 1, &opts, items, nitems, file_errors, warnings, err);
    h5ark_value_destroy(&file_errors);
    h5ark_value_destroy(&warnings);
    /* every rank read the same item (or failed together): gather it to rank 0 */
    if (rc == 0 && *nitems == 1) rc = object_gather_whole((*items)[0].obj, whole, err);
    return rc;
}
