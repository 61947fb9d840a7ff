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
    for (size_t i = 0; i < st.warnings.n; i++)
        if (h5ark_value_push(warnings, h5ark_value_str(st.warnings.v[i]))) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
    if (st.nerrors == npaths) {
        h5ark_fail(err, last->code, "none of the %zu files could be read; '%s': %s", npaths,
                   files_display(paths[last->index]), last->message);
        goto out;
    }
    for (size_t i = 0; opts->ranged && i < st.names.n; i++)
        if (schema_slice(&st.nodes[i], opts->start, opts->stop, err)) goto out;
    out = sysio.calloc(st.names.n ? st.names.n : 1, sizeof *out);
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
        int r = schema_build(ds, opts->strict_types, opts->tag_data, &it->obj, &it->file_tag, err);
        if (r) {
            built++; /* its name is freed with the rest */
            goto out;
        }
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
