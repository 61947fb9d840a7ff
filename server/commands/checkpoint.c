/* The checkpoint commands and their format (checkpoint.h): `checkpoint` writes every
 * object into a new checkpoint; `checkpoint_restore` (internal: the daemon's own restore at
 * start) publishes the objects of one. The data go through tohdf's writer and readhdf's
 * reader, so the files are those any Arkouda-layout reader reads; the manifest says what
 * each object was called, whose it was and what it looked like. */
#include "commands.h"

#include "checkpoint.h"
#include "access.h"
#include "checkpoint_format.h"
#include "config.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "entry.h"
#include "h5ark_version.h"
#include "locales.h"
#include "log.h"
#include "registry.h"
#include "storage/files.h"
#include "storage/storage.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Everything but awkward arrays goes to one file per locale; awkward arrays, which are
 * written whole, to one file of their own. */
#define DATA_FILE    "data.h5"
#define AWKWARD_FILE "awkward.h5"

static bool whole_file(const object *obj) {
    return obj->objtype == H5ARK_AWKWARD;
}

/* ---- descriptors as JSON, and back ---- */

static json_t *value_json(const h5ark_value *v) {
    if (!v) return json_null();
    switch (v->kind) {
    case H5ARK_NIL: return json_null();
    case H5ARK_BOOL: return json_boolean(v->as.b);
    case H5ARK_INT: return json_integer(v->as.i);
    case H5ARK_UINT:
        return v->as.u > INT64_MAX ? json_real((double)v->as.u) : json_integer((json_int_t)v->as.u);
    case H5ARK_FLOAT: return json_real(v->as.f);
    case H5ARK_STR:
    case H5ARK_BIN: return json_stringn(v->as.s.ptr, v->as.s.len);
    case H5ARK_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; a && i < v->as.a.len; i++)
            if (json_array_append_new(a, value_json(v->as.a.items[i]))) json_decref(a), a = NULL;
        return a;
    }
    case H5ARK_MAP: {
        json_t *m = json_object();
        for (size_t i = 0; m && i < v->as.m.len; i++)
            if (json_object_set_new(m, v->as.m.keys[i], value_json(v->as.m.vals[i])))
                json_decref(m), m = NULL;
        return m;
    }
    }
    return NULL;
}

/* ---- names in the files ---- */

/* The dataset an object is written as: its own name, unless HDF5 would take it otherwise
 * (a leading '.'); then one no name of the registry's can be. */
static void dataset_name(object *const *objs, size_t i, char *out, size_t len) {
    const char *name = objs[i]->name;
    /* another owner's object may have the same name: owned ones are numbered */
    if (!objs[i]->owner && name[0] != '.' && strcmp(name, "Filename_Codes") != 0) {
        snprintf(out, len, "%s", name);
        return;
    }
    snprintf(out, len, "h5ark object %zu/", i); /* '/' is in no object's name */
    out[strlen(out) - 1] = '\0';
    for (int k = 0;; k++) { /* a registry name may be the same; then another */
        bool taken = false;
        for (size_t j = 0; j < i + 1 && !taken; j++)
            taken = strcmp(objs[j]->name, out) == 0;
        if (!taken) return;
        snprintf(out, len, "h5ark object %zu.%d", i, k);
    }
}

/* ---- owners and grants (SERVICE.md §2) ---- */

/* The one place the manifest learns an object's `owner` and `grants`. Objects have
 * neither yet: nil and []. */
static void checkpoint_owner_of(const object *obj, json_t *entry) {
    json_object_set_new(entry, "owner", obj->owner ? json_string(obj->owner) : json_null());
    h5ark_value *grants = registry_grants_of(obj);
    json_object_set_new(entry, "grants", grants ? value_json(grants) : json_array());
    h5ark_value_destroy(&grants);
}

/* And the one place they are given back: obj published under `name` as `owner`'s (NULL:
 * none) with `grants` (a JSON array of strings) — at a restore of the daemon's own
 * checkpoints, where no caller is in scope; a caller's load_checkpoint publishes in the
 * caller's namespace. */
static int checkpoint_publish(object *obj, const char *name, const char *owner,
                              const json_t *grants, h5ark_error *err) {
    if (registry_viewer()) return registry_publish(obj, name, err);
    size_t n = json_array_size(grants);
    const char *subjects[n ? n : 1];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (json_is_string(json_array_get(grants, i)))
            subjects[k++] = json_string_value(json_array_get(grants, i));
    return registry_restore(obj, owner, name, subjects, k, err);
}

/* ---- writing ---- */

typedef struct {
    const char *parent; /* absolute */
    const char *id;     /* NULL: a new one */
    bool overwrite;
    object **objs;
    size_t n;
    char **datasets;
    /* rank 0's */
    char name[64];
    char tmp[PATH_MAX], final[PATH_MAX];
    double time;
    uint64_t bytes; /* of the files */
} ck_write;

/* Rank 0: the temporary folder, and the checks of the folder it will become. */
static int write_begin(void *ctx, h5ark_error *err) {
    ck_write *w = ctx;
    if (w->id)
        snprintf(w->name, sizeof w->name, "%s", w->id);
    else
        checkpoint_new_id(w->parent, w->name);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    w->time = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    if (snprintf(w->final, sizeof w->final, "%s/%s", w->parent, w->name) >= PATH_MAX ||
        snprintf(w->tmp, sizeof w->tmp, "%s/.tmp-%s", w->parent, w->name) >= PATH_MAX)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "checkpoint: the folder name is too long");
    struct stat st;
    if (!w->overwrite && sysio.lstat(w->final, &st) == 0)
        return h5ark_fail(err, H5ARK_ALREADY_EXISTS,
                          "checkpoint '%s' already exists; mode overwrite replaces it",
                          files_display(w->final));
    checkpoint_remove_folder(w->tmp); /* one a killed write left */
    if (sysio.mkdir(w->tmp, 0755) != 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "checkpoint: cannot make the folder '%s': %s",
                          w->tmp, strerror(errno));
    return 0;
}

static int write_file_synced(const char *path, const char *text, size_t len, h5ark_error *err) {
    int fd = sysio.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) goto fail;
    for (size_t done = 0; done < len;) {
        ssize_t k = sysio.pwrite(fd, text + done, len - done, (off_t)done);
        if (k <= 0) {
            if (k == 0) errno = EIO;
            int e = errno;
            sysio.close(fd);
            errno = e;
            goto fail;
        }
        done += (size_t)k;
    }
    if (sysio.fsync(fd) != 0) {
        int e = errno;
        sysio.close(fd);
        errno = e;
        goto fail;
    }
    if (sysio.close(fd) != 0) goto fail;
    return 0;
fail:
    return h5ark_fail(err, H5ARK_IO_ERROR, "checkpoint: cannot write '%s': %s", path,
                      strerror(errno));
}

/* Rank 0, every data file in place: the manifest written last, then the folder renamed
 * into place and the parent flushed. */
static int write_finish(void *ctx, h5ark_error *err) {
    ck_write *w = ctx;
    json_t *m = json_object(), *files = json_array(), *objects = json_array();
    int rc = m && files && objects ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    bool sets[2] = {false, false}; /* the per-locale set, the whole file */
    for (size_t i = 0; i < w->n; i++)
        sets[whole_file(w->objs[i])] = true;
    int nfiles = (sets[0] ? locales_count() : 0) + sets[1];
    w->bytes = 0;
    for (int i = 0; rc == 0 && i < nfiles; i++) {
        char rel[PATH_MAX], path[2 * PATH_MAX];
        struct stat st;
        if (sets[0] && i < locales_count())
            files_locale_name(DATA_FILE, i, rel, sizeof rel);
        else
            snprintf(rel, sizeof rel, "%s", AWKWARD_FILE);
        snprintf(path, sizeof path, "%s/%s", w->tmp, rel);
        if (sysio.stat(path, &st) != 0) {
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "checkpoint: cannot look at '%s': %s", path,
                            strerror(errno));
            break;
        }
        w->bytes += (uint64_t)st.st_size;
        json_array_append_new(
            files, json_pack("{s:s, s:I}", "name", rel, "bytes", (json_int_t)st.st_size));
    }
    uint64_t nbytes = 0;
    for (size_t i = 0; rc == 0 && i < w->n; i++) {
        h5ark_value *desc = object_describe(w->objs[i]);
        json_t *o = json_object(), *name = json_string(w->objs[i]->name);
        if (!name)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "checkpoint: the name of object %zu is not UTF-8", i);
        else if (!o || !desc)
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        if (rc == 0) {
            json_object_set_new(o, "name", name), name = NULL;
            json_object_set_new(o, "dataset", json_string(w->datasets[i]));
            json_object_set_new(o, "file",
                                json_string(whole_file(w->objs[i]) ? AWKWARD_FILE : DATA_FILE));
            checkpoint_owner_of(w->objs[i], o);
            json_object_set_new(o, "descriptor", value_json(desc));
            json_array_append(objects, o);
        }
        nbytes += object_nbytes(w->objs[i]);
        json_decref(name);
        json_decref(o);
        h5ark_value_destroy(&desc);
    }
    char *text = NULL;
    if (rc == 0) {
        json_object_set_new(m, "format", json_string(CHECKPOINT_FORMAT));
        json_object_set_new(m, "version", json_integer(CHECKPOINT_VERSION));
        json_object_set_new(m, "id", json_string(w->name));
        json_object_set_new(m, "time", json_real(w->time));
        json_object_set_new(m, "written_by",
                            json_pack("{s:s, s:i, s:i}", "h5ark", H5ARK_VERSION_STRING, "locales",
                                      locales_count(), "ranks", ranks_count()));
        json_object_set_new(m, "object_bytes", json_integer((json_int_t)nbytes));
        json_object_set(m, "files", files);
        json_object_set(m, "objects", objects);
        text = json_dumps(m, JSON_INDENT(1));
        if (!text) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    char path[PATH_MAX + 32], meta[160];
    /* Arkouda's server metadata (its CheckpointMsg's serverMetadata): who wrote it on how
     * many locales, for Arkouda's tools that look for it */
    int nmeta = snprintf(meta, sizeof meta, "{\"serverid\":\"h5ark %s\",\"numLocales\":%d}\n",
                         H5ARK_VERSION_STRING, locales_count());
    snprintf(path, sizeof path, "%s/" CHECKPOINT_SERVER_META, w->tmp);
    if (rc == 0) rc = write_file_synced(path, meta, (size_t)nmeta, err);
    snprintf(path, sizeof path, "%s/" CHECKPOINT_MANIFEST, w->tmp);
    if (rc == 0) rc = write_file_synced(path, text, strlen(text), err);
    free(text);
    json_decref(m);
    json_decref(files);
    json_decref(objects);
    if (rc == 0) rc = checkpoint_sync_folder(w->tmp, err);
    /* in place; over an old one (overwrite) in one step: the two names swapped, and the
     * old one, now under the temporary name, removed */
    struct stat st;
    bool replacing = rc == 0 && sysio.lstat(w->final, &st) == 0;
    if (rc == 0 && (replacing ? sysio.exchange(w->tmp, w->final) : sysio.rename(w->tmp, w->final)))
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "checkpoint: cannot put '%s' in place: %s",
                        files_display(w->final), strerror(errno));
    if (rc == 0 && checkpoint_sync_folder(w->parent, err) != 0) {
        /* not known to be durable: as if it had not been put in place */
        rc = -1;
        if (replacing)
            sysio.exchange(w->tmp, w->final);
        else
            sysio.rename(w->final, w->tmp);
    }
    if (rc == 0 && replacing) checkpoint_remove_folder(w->tmp);
    return rc;
}

static int write_abandon(void *ctx, h5ark_error *err) {
    (void)err;
    checkpoint_remove_folder(((ck_write *)ctx)->tmp);
    return 0;
}

static int write_locked(const char *parent, const char *id, bool overwrite, bool everyone,
                        checkpoint_written *out, h5ark_error *err) {
    memset(out, 0, sizeof *out);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t changes = registry_changes();
    ck_write w = {.parent = parent, .id = id, .overwrite = overwrite};
    /* the objects as they are now: a reference to each, so a replacement made meanwhile is
     * in the next checkpoint, and this one has the object whole as it was */
    w.objs = registry_list_of(everyone, &w.n);
    w.datasets = calloc(w.n ? w.n : 1, sizeof *w.datasets);
    storage_item *items = calloc(w.n ? w.n : 1, sizeof *items);
    int rc = w.datasets && items ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < w.n; i++) {
        char ds[REGISTRY_MAX_NAME + 32];
        dataset_name(w.objs, i, ds, sizeof ds);
        if (!(w.datasets[i] = strdup(ds)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    /* the per-locale set's items first, then the whole file's */
    size_t nset = 0, nwhole = 0;
    for (size_t i = 0; rc == 0 && i < w.n; i++)
        if (!whole_file(w.objs[i]))
            items[nset++] = (storage_item){.obj = w.objs[i], .dataset = w.datasets[i]};
    for (size_t i = 0; rc == 0 && i < w.n; i++)
        if (whole_file(w.objs[i]))
            items[nset + nwhole++] = (storage_item){.obj = w.objs[i], .dataset = w.datasets[i]};
    rc = spmd_root_does(rc, write_begin, &w, err);
    /* every rank writes into rank 0's folder */
    if (rc == 0) rc = ranks_bcast(0, w.tmp, sizeof w.tmp, err);
    h5ark_value *files = h5ark_value_array(), *warnings = h5ark_value_array();
    storage_write_options opts = {.base_dir = w.tmp};
    if (rc == 0 && nset)
        rc = storage_write_ex(items, nset, DATA_FILE, STORAGE_TRUNCATE, STORAGE_DISTRIBUTE, &opts,
                              files, warnings, err);
    if (rc == 0 && nwhole)
        rc = storage_write_ex(items + nset, nwhole, AWKWARD_FILE, STORAGE_TRUNCATE, STORAGE_SINGLE,
                              &opts, files, warnings, err);
    rc = spmd_root_does(rc, write_finish, &w, err);
    if (rc) {
        h5ark_error ignored = {0};
        spmd_root_does(0, write_abandon, &w, &ignored);
    }
    h5ark_value_destroy(&files);
    h5ark_value_destroy(&warnings);
    if (rc == 0) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        snprintf(out->id, sizeof out->id, "%s", w.name);
        ranks_bcast(0, out->id, sizeof out->id, err);
        out->objects = w.n;
        out->bytes = w.bytes;
        ranks_bcast(0, &out->bytes, sizeof out->bytes, err);
        out->time = w.time;
        out->seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        out->changes = changes;
    }
    for (size_t i = 0; w.datasets && i < w.n; i++)
        free(w.datasets[i]);
    free(w.datasets);
    free(items);
    registry_list_free(w.objs, w.n);
    return rc;
}

/* One checkpoint at a time in this process: two would pick the same new id in the same
 * millisecond and share a temporary folder. (At several ranks a checkpoint runs alone.) */
static pthread_mutex_t writing = PTHREAD_MUTEX_INITIALIZER;

int checkpoint_write(const char *parent, const char *id, bool overwrite, bool everyone,
                     checkpoint_written *out, h5ark_error *err) {
    pthread_mutex_lock(&writing);
    int rc = write_locked(parent, id, overwrite, everyone, out, err);
    pthread_mutex_unlock(&writing);
    return rc;
}

/* ---- reading ---- */

int checkpoint_read_manifest(const char *folder, json_t **manifest, h5ark_error *err) {
    char path[PATH_MAX + 32];
    json_error_t je;
    snprintf(path, sizeof path, "%s/" CHECKPOINT_MANIFEST, folder);
    json_t *m = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    struct stat st;
    char meta[PATH_MAX + 32];
    snprintf(meta, sizeof meta, "%s/" CHECKPOINT_SERVER_META, folder);
    if (!m && sysio.stat(path, &st) != 0 && sysio.stat(meta, &st) == 0)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "checkpoint '%s' has no " CHECKPOINT_MANIFEST
                          ": it was written by Arkouda's own server, whose format (one .md "
                          "file per array) is not read here; only checkpoints written by "
                          "h5ark are",
                          folder);
    if (!m)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "checkpoint '%s': manifest: %s", folder,
                          je.text);
    const char *format = json_string_value(json_object_get(m, "format"));
    json_t *files = json_object_get(m, "files"), *objects = json_object_get(m, "objects");
    int rc = 0;
    if (!format || strcmp(format, CHECKPOINT_FORMAT) != 0 ||
        json_integer_value(json_object_get(m, "version")) != CHECKPOINT_VERSION)
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                        "checkpoint '%s': not an h5ark checkpoint of version %d", folder,
                        CHECKPOINT_VERSION);
    else if (!json_is_array(files) || !json_is_array(objects))
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                        "checkpoint '%s': the manifest has no files or "
                        "objects",
                        folder);
    /* every file there, whole */
    for (size_t i = 0; rc == 0 && i < json_array_size(files); i++) {
        json_t *f = json_array_get(files, i);
        const char *name = json_string_value(json_object_get(f, "name"));
        struct stat st;
        if (!name || strchr(name, '/') ||
            snprintf(path, sizeof path, "%s/%s", folder, name) >= PATH_MAX) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "checkpoint '%s': a bad file name", folder);
        } else if (sysio.stat(path, &st) != 0) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "checkpoint '%s': file '%s' is missing: %s",
                            folder, name, strerror(errno));
        } else if ((json_int_t)st.st_size != json_integer_value(json_object_get(f, "bytes"))) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "checkpoint '%s': file '%s' holds %lld bytes, the manifest says %lld",
                            folder, name, (long long)st.st_size,
                            (long long)json_integer_value(json_object_get(f, "bytes")));
        }
    }
    for (size_t i = 0; rc == 0 && i < json_array_size(objects); i++) {
        json_t *o = json_array_get(objects, i);
        if (!json_is_string(json_object_get(o, "name")) ||
            !json_is_string(json_object_get(o, "dataset")))
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "checkpoint '%s': object %zu has no name or dataset", folder, i);
    }
    if (rc) {
        json_decref(m);
        return -1;
    }
    *manifest = m;
    return 0;
}

/* Whether the object read back looks as the manifest says it did (every key of its
 * descriptor); the text of the first difference when not. */
static bool same_descriptor(const object *obj, const json_t *want) {
    h5ark_value *desc = object_describe(obj);
    json_t *got = value_json(desc);
    h5ark_value_destroy(&desc);
    bool same = got && json_equal(got, want);
    json_decref(got);
    return same;
}

/* The objects of one file set of the manifest (`set`: DATA_FILE, the per-locale files,
 * or AWKWARD_FILE), read into objs at their places in the manifest. */
static int read_set(const char *folder, json_t *m, const char *set, object **objs,
                    h5ark_value *warnings, h5ark_error *err) {
    json_t *files = json_object_get(m, "files"), *objects = json_object_get(m, "objects");
    size_t nfiles = json_array_size(files), n = json_array_size(objects);
    bool per_locale = strcmp(set, DATA_FILE) == 0;
    char **paths = calloc(nfiles ? nfiles : 1, sizeof *paths);
    const char **datasets = calloc(n ? n : 1, sizeof *datasets);
    size_t *where = calloc(n ? n : 1, sizeof *where);
    size_t npaths = 0, nds = 0;
    int rc =
        paths && datasets && where ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; rc == 0 && i < nfiles; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(files, i), "name"));
        if ((strcmp(name, AWKWARD_FILE) == 0) == per_locale) continue;
        if (!(paths[npaths] = malloc(strlen(folder) + strlen(name) + 2)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        else
            sprintf(paths[npaths++], "%s/%s", folder, name);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_t *o = json_array_get(objects, i);
        const char *file = json_string_value(json_object_get(o, "file"));
        if (strcmp(file ? file : DATA_FILE, set) != 0) continue;
        where[nds] = i;
        datasets[nds++] = json_string_value(json_object_get(o, "dataset"));
    }
    storage_read_item *items = NULL;
    size_t nitems = 0;
    storage_read_options opts = {.strict_types = true};
    h5ark_value *file_errors = h5ark_value_array();
    if (rc == 0 && nds && !npaths)
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "checkpoint '%s': no file holds %s", folder, set);
    if (rc == 0 && nds)
        rc = storage_read(paths, npaths, datasets, nds, &opts, &items, &nitems, file_errors,
                          warnings, err);
    h5ark_value_destroy(&file_errors);
    if (rc == 0 && nitems != nds)
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "checkpoint '%s': %zu objects read of %zu", folder,
                        nitems, nds);
    for (size_t i = 0; rc == 0 && i < nitems; i++)
        objs[where[i]] = object_ref(items[i].obj);
    storage_read_items_free(items, nitems);
    for (size_t i = 0; i < npaths; i++)
        free(paths[i]);
    free(paths);
    free(datasets);
    free(where);
    return rc;
}

int checkpoint_read(const char *folder, bool replace, checkpoint_written *out,
                    h5ark_value *warnings, h5ark_error *err) {
    memset(out, 0, sizeof *out);
    json_t *m = NULL;
    /* every rank reads the manifest: each holds the objects' metadata */
    if (ranks_agree(checkpoint_read_manifest(folder, &m, err), err)) {
        json_decref(m);
        return -1;
    }
    json_t *objects = json_object_get(m, "objects");
    size_t n = json_array_size(objects);
    object **objs = calloc(n ? n : 1, sizeof *objs);
    int rc = objs ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) rc = read_set(folder, m, DATA_FILE, objs, warnings, err);
    if (rc == 0) rc = read_set(folder, m, AWKWARD_FILE, objs, warnings, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!objs[i])
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "checkpoint '%s': object %zu is in no file",
                            folder, i);
    /* published on every rank or none; with `replace`, over objects of the same names,
     * which come back if it fails */
    object **old = calloc(n ? n : 1, sizeof *old);
    if (rc == 0 && !old) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t published = 0, taken = 0;
    for (; rc == 0 && published < n; published++) {
        json_t *o = json_array_get(objects, published);
        const char *name = json_string_value(json_object_get(o, "name"));
        if (replace) {
            old[taken] = registry_get(name, &(h5ark_error){0});
            if (old[taken]) registry_remove(name, &(h5ark_error){0});
            taken++;
        }
        if (checkpoint_publish(objs[published], name,
                               json_string_value(json_object_get(o, "owner")),
                               json_object_get(o, "grants"), err)) {
            if (objs[published]->name && strcmp(objs[published]->name, name) == 0)
                registry_remove(name, &(h5ark_error){0});
            rc = -1;
            break;
        }
        out->bytes += object_nbytes(objs[published]);
        if (!same_descriptor(objs[published], json_object_get(o, "descriptor"))) {
            log_warn("checkpoint %s: object '%s' reads back with another descriptor", folder, name);
            h5ark_value_push(warnings, h5ark_value_str("an object reads back with another "
                                                       "descriptor: see the log"));
        }
    }
    rc = ranks_agree(rc, err);
    for (size_t i = 0; rc && i < taken; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(objects, i), "name"));
        if (i < published) registry_remove(name, &(h5ark_error){0});
        if (old[i]) registry_publish(old[i], name, &(h5ark_error){0});
    }
    for (size_t i = taken; rc && i < published; i++)
        registry_remove(json_string_value(json_object_get(json_array_get(objects, i), "name")),
                        &(h5ark_error){0});
    for (size_t i = 0; old && i < taken; i++)
        object_release(old[i]);
    free(old);
    if (rc == 0) {
        snprintf(out->id, sizeof out->id, "%s", json_string_value(json_object_get(m, "id")) ?: "");
        out->objects = n;
        out->time = json_number_value(json_object_get(m, "time"));
    }
    for (size_t i = 0; objs && i < n; i++)
        object_release(objs[i]);
    free(objs);
    json_decref(m);
    return rc;
}

/* ---- the commands ---- */

static int reply_written(command_ctx *ctx, const checkpoint_written *w, h5ark_error *err) {
    return reply_set(ctx, "checkpoint", h5ark_value_str(w->id), err) ||
                   reply_set(ctx, "objects", h5ark_value_uint(w->objects), err) ||
                   reply_set(ctx, "bytes", h5ark_value_uint(w->bytes), err) ||
                   reply_set(ctx, "seconds", h5ark_value_float(w->seconds), err)
               ? -1
               : 0;
}

/* Rank 0: the checkpoints past --checkpoint-keep removed. */
static int prune(void *dir, h5ark_error *err) {
    (void)err;
    checkpoint_prune(dir, config.checkpoint_keep);
    return 0;
}

/* A checkpoint folder `<path>/<name>` in the data directory (Arkouda's save_checkpoint and
 * load_checkpoint), resolved on rank 0: its parent, absolute, made when `make`. */
typedef struct {
    const char *path, *name;
    bool make;
    char parent[PATH_MAX], folder[PATH_MAX];
} ck_place;

static int resolve_place(void *ctx, h5ark_error *err) {
    ck_place *p = ctx;
    char rel[PATH_MAX], abs[PATH_MAX];
    /* a name of one component, not hidden: the daemon's own temporaries start with '.' */
    if (p->name[0] == '.' || strchr(p->name, '/') || strlen(p->name) >= 64)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "checkpoint: the name '%.100s' must be one folder name, not starting "
                          "with '.', of under 64 bytes",
                          p->name);
    /* the folder `path` (made when `make`), confined, through a name never made in it */
    static const char probe[] = "/.h5ark-checkpoint";
    if (snprintf(rel, sizeof rel, "%s%s", *p->path ? p->path : ".", probe) >= (int)sizeof rel)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "checkpoint: the path is too long");
    file_access fa = access_here();
    if (files_resolve(&fa, p->make ? PERM_WRITE : PERM_READ, rel, p->make, abs, err)) {
        if (err->code == H5ARK_NOT_FOUND)
            h5ark_fail(err, H5ARK_NOT_FOUND, "no checkpoint '%.300s/%.64s'", p->path, p->name);
        /* a refusal names the folder as the client gave it, not the name probed in it */
        char *at = strstr(err->message, probe), *after = at ? at + sizeof probe - 1 : NULL;
        if (at) memmove(at, after, strlen(after) + 1);
        return -1;
    }
    *strrchr(abs, '/') = '\0';
    snprintf(p->parent, sizeof p->parent, "%s", abs);
    if (snprintf(p->folder, sizeof p->folder, "%s/%s", abs, p->name) >= (int)sizeof p->folder)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "checkpoint: the path is too long");
    struct stat st;
    if (*p->name && sysio.lstat(p->folder, &st) == 0 && !S_ISDIR(st.st_mode))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%.300s/%.64s' is not a checkpoint folder",
                          p->path, p->name);
    if (!p->make && sysio.lstat(p->folder, &st) != 0)
        return h5ark_fail(err, H5ARK_NOT_FOUND, "no checkpoint '%.300s/%.64s'", p->path, p->name);
    return 0;
}

static int place_of(command_ctx *ctx, bool make, ck_place *p, h5ark_error *err) {
    *p = (ck_place){
        .path = arg_str(ctx, "path", ""), .name = arg_str(ctx, "name", ""), .make = make};
    int rc = spmd_root_does(0, resolve_place, p, err);
    if (rc == 0) rc = ranks_bcast(0, p->parent, sizeof p->parent, err);
    if (rc == 0) rc = ranks_bcast(0, p->folder, sizeof p->folder, err);
    return rc;
}

static int cmd_checkpoint(command_ctx *ctx, h5ark_error *err) {
    checkpoint_written w;
    if (arg_has(ctx, "path")) { /* a folder of the caller's, not --checkpoint-dir */
        const char *mode = arg_str(ctx, "mode", "error");
        if (strcmp(mode, "error") != 0 && strcmp(mode, "overwrite") != 0)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "checkpoint: mode is error or overwrite, not '%.100s'", mode);
        ck_place p;
        if (place_of(ctx, true, &p, err) ||
            checkpoint_write(p.parent, *p.name ? p.name : NULL, strcmp(mode, "overwrite") == 0,
                             false, &w, err))
            return -1;
        return reply_written(ctx, &w, err);
    }
    if (arg_has(ctx, "name") || arg_has(ctx, "mode"))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "checkpoint: 'name' and 'mode' need 'path'");
    const caller *who = entry_caller();
    if (who && who->user && who->role != ROLE_ADMIN)
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "'checkpoint' of every user's objects needs the admin role (give "
                          "'path' for a checkpoint of one's own)");
    const char *dir = checkpoint_dir();
    if (!dir)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "checkpoint: this daemon has no --checkpoint-dir to write them to "
                          "(give 'path' for a folder in the data directory)");
    if (checkpoint_write(dir, NULL, false, true, &w, err)) return -1;
    checkpoint_note(w.id, w.time, w.objects, w.changes);
    spmd_root_does(0, prune, (void *)dir, &(h5ark_error){0});
    log_notice("checkpoint %s: %llu objects, %llu bytes in %.3f s", w.id,
               (unsigned long long)w.objects, (unsigned long long)w.bytes, w.seconds);
    return reply_written(ctx, &w, err);
}

static double seconds_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* load_checkpoint {path, name}: the objects of `<path>/<name>`, over those of the same
 * names. */
static int cmd_load_checkpoint(command_ctx *ctx, h5ark_error *err) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_place p;
    checkpoint_written w;
    if (!*arg_str(ctx, "name", ""))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "load_checkpoint: 'name' is empty");
    if (place_of(ctx, false, &p, err) || checkpoint_read(p.folder, true, &w, ctx->warnings, err))
        return -1;
    w.seconds = seconds_since(&t0);
    return reply_written(ctx, &w, err);
}

static int cmd_checkpoint_restore(command_ctx *ctx, h5ark_error *err) {
    const char *dir = checkpoint_dir();
    const char *id = arg_str(ctx, "id", "");
    char folder[PATH_MAX];
    if (!dir || !*id || strchr(id, '/') ||
        snprintf(folder, sizeof folder, "%s/%s", dir, id) >= PATH_MAX)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "checkpoint_restore: no such checkpoint");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    checkpoint_written w;
    if (checkpoint_read(folder, false, &w, ctx->warnings, err)) return -1;
    w.seconds = seconds_since(&t0);
    return reply_written(ctx, &w, err);
}

const command_def checkpoint_commands[] = {
    {"checkpoint",
     cmd_checkpoint,
     {{"path", ARG_STR, false}, {"name", ARG_STR, false}, {"mode", ARG_STR, false}, {0}},
     .ranks = RANKS_EVERY},
    {"load_checkpoint",
     cmd_load_checkpoint,
     {{"path", ARG_STR, true}, {"name", ARG_STR, true}, {0}},
     .ranks = RANKS_EVERY},
    {"checkpoint_restore",
     cmd_checkpoint_restore,
     {{"id", ARG_STR, true}, {0}},
     .ranks = RANKS_EVERY,
     .internal = true},
    {0},
};
