/* tohdf: resolve every file and check every rule first; then build each file as a temporary
 * beside its final name (a new file, or for append and update a copy of the existing one)
 * with HDF5 creating the groups, attributes and datasets, the datasets' space allocated at
 * once so their offsets are known; close HDF5, let every locale pwrite its own shards at
 * those offsets in parallel; and only when all of that succeeded put the temporaries in
 * place, a file set as one (commit.h). A failure at any point leaves every old file whole. */
#include "write_files.h"

#include "twin.h"

#include "commit.h"
#include "config.h"
#include "owners.h"
#include "families.h"
#include "files.h"
#include "temp_names.h"
#include "io.h"
#include "locales.h"
#include "objects/strings.h"
#include "progress.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "sandbox.h"
#include "layout.h"
#include "schema.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the direct data path writes memory as little-endian file bytes"
#endif

/* ---- the files of a request -------------------------------------------------------- */

/* The existing `prefix_LOCALE####ext` files of a distributed name. */
typedef struct {
    char **paths; /* absolute, as globbed */
    int *numbers;
    size_t n;
} locale_set;

static void locale_set_free(locale_set *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->paths[i]);
    free(s->paths);
    free(s->numbers);
    *s = (locale_set){0};
}

static int find_locale_set(const char *rel, const char *locale0, locale_set *set,
                           h5ark_error *err) {
    *set = (locale_set){0};
    char abs[PATH_MAX], pattern[2 * PATH_MAX];
    size_t tail;
    /* beside locale 0's file, resolved where the client's name leads */
    const char *slash = strrchr(locale0, '/'), *base = strrchr(rel, '/');
    if (snprintf(abs, sizeof abs, "%.*s/%s", (int)(slash - locale0), locale0,
                 base ? base + 1 : rel) >= (int)sizeof abs ||
        files_locale_glob(abs, pattern, sizeof pattern, &tail))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", rel);
    glob_t g;
    int rc = glob(pattern, 0, NULL, &g);
    if (rc == GLOB_NOMATCH) return 0;
    if (rc != 0) return h5ark_fail(err, H5ARK_IO_ERROR, "cannot list the files of '%s'", rel);
    set->paths = calloc(g.gl_pathc, sizeof *set->paths);
    set->numbers = calloc(g.gl_pathc, sizeof *set->numbers);
    if (!set->paths || !set->numbers) {
        globfree(&g);
        locale_set_free(set);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *p = g.gl_pathv[i];
        size_t len = strlen(p);
        if (len < tail + 4) continue;
        const char *digits = p + len - tail - 4;
        if (!(set->paths[set->n] = strdup(p))) {
            globfree(&g);
            locale_set_free(set);
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        set->numbers[set->n++] = atoi((char[5]){digits[0], digits[1], digits[2], digits[3], 0});
    }
    globfree(&g);
    return 0;
}

/* ---- checks before writing --------------------------------------------------------- */

/* The top-level names an item writes: its dataset, or for a DataFrame in the columns
 * layout its columns (and `Index`). */
typedef struct {
    const char **v;
    size_t n, cap;
} top_names;

static int top_names_add(top_names *t, const char *name, h5ark_error *err) {
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i], name) == 0)
            return h5ark_fail(err, H5ARK_ALREADY_EXISTS,
                              "tohdf: '%s' would be written twice by this request", name);
    const char **v = grow_array(t->v, t->n, &t->cap, sizeof *v);
    if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    t->v = v;
    t->v[t->n++] = name;
    return 0;
}

static bool shards_ok(const object *obj) {
    if (obj->values && obj->values->nshards != locales_count()) return false;
    if (obj->segments && obj->segments->nshards != locales_count()) return false;
    for (size_t i = 0; i < obj->ncomponents; i++)
        if (!shards_ok(obj->components[i].obj)) return false;
    return true;
}

static int check_items(const storage_item *items, size_t n, bool df_columns, top_names *names,
                       h5ark_error *err) {
    for (size_t i = 0; i < n; i++) {
        const object *obj = items[i].obj;
        const char *name = items[i].dataset;
        if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
            strcmp(name, LEGACY_METADATA_GROUP) == 0 || strlen(name) >= 1000)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "tohdf: '%s' cannot be a dataset name (empty, '/', '.', reserved "
                              "or too long)",
                              name);
        if (obj->objtype >= H5ARK_OBJTYPE_COUNT)
            return h5ark_fail(err, H5ARK_TYPE_ERROR, "tohdf: '%s' cannot be written", name);
        if (obj->objtype == H5ARK_PDARRAY && obj->dtype != H5ARK_BIGINT && obj->ndim != 1)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "tohdf: '%s' has %u dimensions; write it as an arrayview", name,
                              obj->ndim);
        if (!shards_ok(obj))
            return h5ark_fail(err, H5ARK_INTERNAL, "tohdf: '%s' is not sharded over the locales",
                              name);
        if (schema_check(obj, name, err)) return -1;
        if (obj->objtype == H5ARK_DATAFRAME && df_columns) {
            for (size_t k = 0; k < obj->ncomponents; k++)
                if (top_names_add(names, obj->components[k].name, err)) return -1;
        } else if (top_names_add(names, name, err)) {
            return -1;
        }
    }
    return 0;
}

/* In append mode the datasets must not be in the file yet; in update mode they must be. */
static int check_collisions(const out_file *f, const top_names *names, bool update,
                            h5ark_error *err) {
    if (sandbox_check_file(f->final, err))
        return h5ark_fail_context(err, "cannot %s '%s'", update ? "update" : "append to", f->rel);
    htri_t hdf5 = h5u_is_hdf5(f->final);
    if (hdf5 <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "cannot %s '%s': it is not an HDF5 file",
                          update ? "update" : "append to", f->rel);
    }
    hid_t file = H5Fopen(f->final, H5F_ACC_RDONLY, h5u_fapl());
    if (file < 0)
        return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot %s '%s': it cannot be opened",
                        update ? "update" : "append to", f->rel);
    int rc = 0;
    for (size_t i = 0; i < names->n && rc == 0; i++) {
        int there = h5u_link_exists(file, names->v[i]);
        if (there < 0)
            rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot look for '%s' in '%s'", names->v[i],
                          f->rel);
        else if (!update && there)
            rc = h5ark_fail(err, H5ARK_ALREADY_EXISTS,
                            "dataset '%s' already exists in '%s'; nothing was written", names->v[i],
                            f->rel);
        else if (update && !there)
            rc = h5ark_fail(err, H5ARK_NOT_FOUND,
                            "dataset '%s' is not in '%s', so it cannot be updated; nothing was "
                            "written",
                            names->v[i], f->rel);
    }
    H5Fclose(file);
    return rc;
}

/* ---- writing ----------------------------------------------------------------------- */

void write_remove_temp(const char *tmp) {
    if (sysio.unlink(tmp) == 0 || errno == ENOENT) return;
    sysio.unlink(tmp);
}

/* update: the objects being replaced are unlinked from the copy, as HDF5 does in place;
 * the file keeps their space (HDF5 gives back only what ends the file), so an update never
 * shrinks a file: repack does. */
static int unlink_replaced(hid_t file, const top_names *names, const char *shown,
                           h5ark_error *err) {
    for (size_t i = 0; i < names->n; i++)
        if (H5Ldelete(file, names->v[i], H5P_DEFAULT) < 0)
            return h5u_fail(err, H5ARK_IO_ERROR, "cannot unlink '%s' from a copy of '%s'",
                            names->v[i], shown);
    return 0;
}

static int build_file(out_file *f, int index, storage_mode mode, bool distributed,
                      const storage_item *items, size_t nitems, const top_names *names,
                      write_plan *plan, h5ark_error *err) {
    if (temp_name_for(f->final, f->tmp, sizeof f->tmp))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", f->rel);
    hid_t file;
    if ((mode == STORAGE_APPEND || mode == STORAGE_UPDATE) && f->exists) {
        /* the whole file copied, changed, and renamed over it: old or new, never torn */
        f->tmp_made = true;
        if (files_copy(f->final, f->tmp, f->rel, err)) return -1;
        file = H5Fopen(f->tmp, H5F_ACC_RDWR, h5u_fapl());
        if (file < 0)
            return h5u_fail(err, H5ARK_IO_ERROR, "cannot open a copy of '%s' to %s it", f->rel,
                            mode == STORAGE_UPDATE ? "update" : "append to");
        if (mode == STORAGE_UPDATE && unlink_replaced(file, names, f->rel, err)) {
            h5u_close_written(file);
            return h5ark_fail_context(err, "'%s'", f->rel);
        }
    } else {
        /* before the create: a create failing part way can leave the file behind */
        f->tmp_made = true;
        file = H5Fcreate(f->tmp, H5F_ACC_EXCL, H5P_DEFAULT, h5u_fapl());
        if (file < 0)
            return h5u_fail(err, H5ARK_IO_ERROR, "cannot create a file beside '%s'", f->rel);
        h5u_io_clear(); /* the library tries an open first: a failure it got past */
        if (h5u_write_int_attr(file, ATTR_FILE_FORMAT,
                               distributed ? FILE_FORMAT_DISTRIBUTE : FILE_FORMAT_SINGLE, err)) {
            h5u_close_written(file);
            return h5ark_fail_context(err, "'%s'", f->rel);
        }
    }
    int rc = 0;
    for (size_t i = 0; i < nitems && rc == 0; i++) {
        const object *obj = items[i].obj;
        int part = distributed ? index : -1;
        rc = schema_write(file, index, items[i].dataset, obj, part, plan, err);
    }
    if (rc == 0 && plan->gzip_level > 0) {
        f->h5 = file;
        return 0;
    }
    if (h5u_close_written(file) && rc == 0) rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close it");
    return rc ? h5ark_fail_context(err, "writing '%s'", f->rel) : 0;
}

/* The files about to be replaced are read no more by this write: their cached pages go
 * back to the kernel now, so that the new bytes are cached in memory the kernel already
 * holds rather than in fresh pages (which cost more to fault in than to copy into). */
static void drop_cached_pages(const out_file *of, int nfiles) {
    for (int i = 0; i < nfiles; i++) {
        if (!of[i].exists) continue;
        int fd = open(of[i].final, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0) continue;
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

/* Close the files kept open for their chunks, after the plan's datasets. */
static int close_files(out_file *of, int nfiles, h5ark_error *err) {
    int rc = 0;
    for (int i = 0; i < nfiles; i++) {
        if (of[i].h5 < 0) continue;
        if (h5u_close_written(of[i].h5) && rc == 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot finish writing '%s'", of[i].rel);
        of[i].h5 = H5I_INVALID_HID;
    }
    return rc;
}

/* A region's bytes, in pieces so that the request's progress moves while a large shard
 * goes out. */
static int write_region_data(int fd, const write_region *r, progress_sink *progress) {
    if (!r->rebase) {
        for (uint64_t at = 0; at < r->nbytes; at += PROGRESS_PIECE) {
            uint64_t n = r->nbytes - at < PROGRESS_PIECE ? r->nbytes - at : PROGRESS_PIECE;
            if (io_pwrite_full(fd, (const char *)r->data + at, n, r->offset + at)) return -1;
            progress_add(progress, n);
        }
        return 0;
    }
    /* offsets restarted at 0 for a file of their own: converted a block at a time */
    enum { BLOCK = 8192 };
    int64_t buf[BLOCK];
    const int64_t *in = r->data;
    uint64_t n = r->nbytes / 8, unreported = 0;
    for (uint64_t i = 0; i < n; i += BLOCK) {
        uint64_t m = n - i < BLOCK ? n - i : BLOCK;
        for (uint64_t k = 0; k < m; k++)
            buf[k] = in[i + k] - r->rebase;
        if (io_pwrite_full(fd, buf, m * 8, r->offset + i * 8)) return -1;
        if ((unreported += m * 8) >= PROGRESS_PIECE) {
            progress_add(progress, unreported);
            unreported = 0;
        }
    }
    progress_add(progress, unreported);
    return 0;
}

static void pwrite_shards(int locale, write_job *job) {
    h5ark_error *err = &job->le.errs[locale];
    progress_sink *progress = progress_here();
    int fd = -1, fd_file = -1;
    for (size_t i = 0; i < job->plan->n; i++) {
        const write_region *r = &job->plan->v[i];
        if (r->locale != locale) continue;
        const out_file *f = &job->files[r->file];
        if (fd_file != r->file) {
            if (fd >= 0 && (sysio.fsync(fd) != 0) + (sysio.close(fd) != 0)) {
                h5ark_fail(err, H5ARK_IO_ERROR, "cannot write '%s': %s", job->files[fd_file].rel,
                           strerror(errno));
                locale_errors_set(&job->le, locale);
                return;
            }
            fd = sysio.open(f->tmp, O_WRONLY | O_CLOEXEC, 0);
            fd_file = r->file;
            if (fd < 0) {
                h5ark_fail(err, H5ARK_IO_ERROR, "cannot open the new '%s': %s", f->rel,
                           strerror(errno));
                locale_errors_set(&job->le, locale);
                return;
            }
        }
        if (write_region_data(fd, r, progress)) {
            h5ark_fail(err, H5ARK_IO_ERROR, "cannot write '%s': %s", f->rel, strerror(errno));
            locale_errors_set(&job->le, locale);
            break;
        }
    }
    /* Flush here, where the locales run in parallel; the fsync commit_set does later
     * then finds little left to write. */
    if (fd >= 0 && err->code == H5ARK_OK && sysio.fsync(fd) != 0) {
        h5ark_fail(err, H5ARK_IO_ERROR, "cannot flush '%s': %s", job->files[fd_file].rel,
                   strerror(errno));
        locale_errors_set(&job->le, locale);
    }
    if (fd >= 0 && sysio.close(fd) != 0 && err->code == H5ARK_OK) {
        h5ark_fail(err, H5ARK_IO_ERROR, "cannot write '%s': %s", job->files[fd_file].rel,
                   strerror(errno));
        locale_errors_set(&job->le, locale);
    }
}

static void write_locale(int locale, void *ctx) {
    pwrite_shards(locale, ctx);
}

/* The bytes the locales will write: the measure of a tohdf's progress. */
static uint64_t plan_bytes(const write_plan *plan) {
    uint64_t n = 0;
    for (size_t i = 0; i < plan->n; i++)
        n += plan->v[i].nbytes;
    for (size_t i = 0; i < plan->nchunks; i++)
        n += plan->chunks[i].count * plan->chunks[i].src->itemsize;
    return n;
}
int write_list_add(h5ark_value *list, const char *fmt, const char *arg, h5ark_error *err) {
    char msg[2 * PATH_MAX];
    snprintf(msg, sizeof msg, fmt, arg);
    if (h5ark_value_push(list, h5ark_value_str(msg)))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return 0;
}

/* awkward0's layout: every item's buffers whole on rank 0 (awkward0_gather). */
typedef struct {
    const object **objects;
    unsigned char ***whole;
    size_t n;
} ak0_gathered;

static void ak0_gathered_free(ak0_gathered *g) {
    for (size_t i = 0; i < g->n; i++)
        awkward0_whole_free(g->objects[i], g->whole[i]);
    free(g->objects);
    free(g->whole);
    *g = (ak0_gathered){0};
}

static int ak0_gather_items(const storage_item *items, size_t nitems, ak0_gathered *g,
                            h5ark_error *err) {
    g->objects = calloc(nitems ? nitems : 1, sizeof *g->objects);
    g->whole = calloc(nitems ? nitems : 1, sizeof *g->whole);
    int rc = g->objects && g->whole ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    for (size_t i = 0; rc == 0 && i < nitems; i++) {
        if (items[i].obj->objtype != H5ARK_AWKWARD) continue; /* alike on every rank */
        rc = awkward0_gather(items[i].obj, &g->whole[g->n], err);
        if (rc == 0) g->objects[g->n++] = items[i].obj;
    }
    if (rc) ak0_gathered_free(g);
    return rc;
}

/* A write as it runs on every rank; the files are resolved and laid out on rank 0. */
typedef struct {
    const storage_item *items;
    size_t nitems;
    const char *path;
    storage_mode mode;
    bool distributed;
    const char *base_dir; /* storage_write_options.base_dir */
    const top_names *names;
    out_file *of;
    int nfiles;
    locale_set existing;
    write_plan *plan;
    h5ark_value *files, *warnings;
    const file_access *fa;
    const pathlock_set *held; /* the locks of the files (lock_files) */
} write_state;

/* Rank 0: every file resolved inside the data directory, the write mode's rules checked
 * before anything is written, then every file built beside its final name. */
static int lay_out(void *ctx, h5ark_error *err) {
    write_state *ws = ctx;
    out_file *of = ws->of;
    int nfiles = ws->nfiles;
    bool append = ws->mode == STORAGE_APPEND, update = ws->mode == STORAGE_UPDATE;
    /* 1. names */
    for (int i = 0; i < nfiles; i++) {
        out_file *f = &of[i];
        if (ws->distributed ? files_locale_name(ws->path, i, f->rel, sizeof f->rel)
                            : snprintf(f->rel, sizeof f->rel, "%s", ws->path) >= (int)sizeof f->rel)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", ws->path);
        if (ws->base_dir) { /* a fresh folder: nothing to resolve, nothing there yet */
            if (snprintf(f->final, sizeof f->final, "%s/%s", ws->base_dir, f->rel) >=
                (int)sizeof f->final)
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", ws->base_dir);
            continue;
        }
        if (files_resolve(ws->fa, PERM_WRITE, f->rel, false, f->final, err)) {
            if (err->code != H5ARK_NOT_FOUND) return -1;
            f->dir_missing = true;
            continue;
        }
        struct stat st;
        f->exists = sysio.lstat(f->final, &st) == 0;
        /* not knowing is not "missing": an append would drop the old contents */
        if (!f->exists && errno != ENOENT)
            return h5ark_fail(err, H5ARK_IO_ERROR, "cannot look at '%s': %s", f->rel,
                              strerror(errno));
    }
    if (ws->distributed && !ws->base_dir && !of[0].dir_missing &&
        find_locale_set(ws->path, of[0].final, &ws->existing, err))
        return -1;

    /* 2. the write mode's rules */
    if (update)
        for (int i = 0; i < nfiles; i++)
            if (!of[i].exists)
                return h5ark_fail(
                    err, H5ARK_NOT_FOUND,
                    "cannot update '%s': the file does not exist; nothing was written", of[i].rel);
    if ((append || update) && ws->distributed && ws->existing.n > 0) {
        bool match = ws->existing.n == (size_t)nfiles;
        for (int i = 0; i < nfiles; i++)
            match = match && of[i].exists;
        if (!match)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "cannot %s '%s': %zu _LOCALE files of it exist, but this daemon "
                              "writes %d (one per locale); nothing was written",
                              update ? "update" : "append to", ws->path, ws->existing.n, nfiles);
    }
    if (append || update)
        for (int i = 0; i < nfiles; i++)
            if (of[i].exists && check_collisions(&of[i], ws->names, update, err)) return -1;

    /* 3. every file built beside its final name (the locales write the data after) */
    for (int i = 0; i < nfiles; i++) {
        out_file *f = &of[i];
        if (f->dir_missing && files_resolve(ws->fa, PERM_WRITE, f->rel, true, f->final, err))
            return -1;
        if (build_file(f, i, ws->mode, ws->distributed, ws->items, ws->nitems, ws->names, ws->plan,
                       err))
            return -1;
    }
    return 0;
}

/* Whether the write holds the lock of the file at abs. */
static bool locked(const write_state *ws, const char *abs) {
    char key[PATH_MAX];
    pathlock_key(abs, key);
    return pathlock_holds(ws->held, key);
}

/* Rank 0, once every rank has written its part: the files closed and put in place, as one;
 * with them go the files of an earlier write with more locales, which would otherwise be
 * read back as part of this set: those locked with the set (lock_files), as one made since
 * is a write that came after this one. */
static int put_in_place(void *ctx, h5ark_error *err) {
    write_state *ws = ctx;
    out_file *of = ws->of;
    int nfiles = ws->nfiles;
    if (write_plan_close(ws->plan, err) || close_files(of, nfiles, err)) return -1;
    const char *tmps[nfiles], *finals[nfiles], *extra[ws->existing.n + 1];
    int nextra = 0;
    for (int i = 0; i < nfiles; i++) {
        tmps[i] = of[i].tmp;
        finals[i] = of[i].final;
        of[i].tmp_made = false; /* the commit renames or removes every one */
    }
    if (ws->distributed && ws->mode == STORAGE_TRUNCATE)
        for (size_t i = 0; i < ws->existing.n; i++)
            if (ws->existing.numbers[i] >= nfiles && locked(ws, ws->existing.paths[i]))
                extra[nextra++] = ws->existing.paths[i];
    int rc = 0;
    if (ws->base_dir) {
        for (int i = 0; i < nfiles && rc == 0; i++)
            rc = commit_file(tmps[i], finals[i], err);
        for (int i = 0; i < nfiles && rc; i++)
            write_remove_temp(tmps[i]); /* a renamed one is gone already */
    } else {
        rc = commit_set(tmps, finals, nfiles, extra, nextra, err);
        /* the files this write made are its writer's (owners.h) */
        const char *made[nfiles];
        int nmade = 0;
        for (int i = 0; i < nfiles; i++)
            if (!of[i].exists) made[nmade++] = of[i].final;
        if (rc == 0 && file_access_on(ws->fa))
            rc = owners_created(ws->fa->user, made, (size_t)nmade, err);
    }
    for (int i = 0; i < nfiles && rc == 0; i++) {
        char shown[PATH_MAX];
        files_shown(ws->fa, of[i].final, shown, sizeof shown);
        rc = write_list_add(ws->files, "%s", shown, err);
        if (rc == 0 && ws->mode == STORAGE_TRUNCATE && of[i].exists)
            rc = write_list_add(ws->warnings, "overwrote the existing file '%s'", of[i].rel, err);
    }
    for (int i = 0; i < nextra && rc == 0; i++)
        rc = write_list_add(ws->warnings,
                            "removed '%s', left by an earlier write with more locales, so that "
                            "it is not read back as part of this file set",
                            files_display(extra[i]), err);
    return rc;
}

static int write_files(const storage_item *items, size_t nitems, const char *path,
                       storage_mode mode, storage_file_type file_type,
                       const storage_write_options *opts, const pathlock_set *held,
                       h5ark_value *files, h5ark_value *warnings, h5ark_error *err) {
    h5u_quiet();
    h5u_io_clear();
    bool distributed = file_type == STORAGE_DISTRIBUTE;
    bool df_columns = opts && opts->dataframe_columns;
    int nfiles = distributed ? locales_count() : 1;
    top_names names = {0};
    /* these checks read metadata only, alike on every rank */
    int rc = check_items(items, nitems, df_columns, &names, err);
    for (size_t i = 0; rc == 0 && opts && opts->strings_without_segments && i < nitems; i++)
        if (items[i].obj->objtype == H5ARK_STRINGS)
            rc = strings_check_without_segments(items[i].obj, items[i].dataset, err);
    write_plan fetched = {0}; /* what rank 0 lays out from other ranks' shards */
    if (rc == 0 && distributed) rc = write_fetch_layout(items, nitems, &fetched, err);
    /* awkward0's blobs are each made whole from a buffer: rank 0 gathers them first */
    ak0_gathered ak0 = {0};
    if (rc == 0 && opts && opts->awkward0) rc = ak0_gather_items(items, nitems, &ak0, err);
    if (rc) {
        free(names.v);
        free((void *)fetched.fetched);
        return -1;
    }
    out_file *of = sysio.calloc((size_t)nfiles, sizeof *of);
    write_plan plan = {.gzip_level = opts ? opts->gzip_level : 0,
                       .dataframe_columns = df_columns,
                       .awkward0 = opts ? opts->awkward0 : 0,
                       .ak0_objects = ak0.objects,
                       .ak0_whole = ak0.whole,
                       .nak0 = ak0.n,
                       .fetched = fetched.fetched,
                       .nfetched = fetched.nfetched,
                       .strings_without_segments = opts && opts->strings_without_segments};
    write_job job = {.plan = &plan, .files = of};
    write_state ws = {.items = items,
                      .nitems = nitems,
                      .path = path,
                      .mode = mode,
                      .distributed = distributed,
                      .base_dir = opts ? opts->base_dir : NULL,
                      .names = &names,
                      .of = of,
                      .nfiles = nfiles,
                      .plan = &plan,
                      .files = files,
                      .warnings = warnings,
                      .fa = opts ? opts->access : NULL,
                      .held = held};
    rc = of ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (int i = 0; of && i < nfiles; i++)
        of[i].h5 = H5I_INVALID_HID;
    /* rank 0 lays the files out; every rank then writes its own shards into them */
    rc = spmd_root_does(rc, lay_out, &ws, err);
    if (rc == 0) rc = write_share_plan(items, nitems, of, nfiles, &plan, err);
    if (rc) goto out;
    int wrc = locale_errors_init(&job.le, err);
    if (mode == STORAGE_TRUNCATE) drop_cached_pages(of, nfiles);
    progress_start(progress_here(), PROGRESS_BYTES, plan_bytes(&plan));
    rc = write_compressed_chunks(&job, &plan, wrc, err);
    if (rc) goto out;
    locales_run(write_locale, &job);
    wrc = spmd_name_rank(locale_errors_take(&job.le, err), err);
    /* every rank has written its part, or none of the files is put in place */
    rc = ranks_agree(wrc, err);
    if (rc == 0) rc = spmd_root_does(0, put_in_place, &ws, err);
out:
    ak0_gathered_free(&ak0);
    write_plan_close(&plan, NULL);
    if (of) close_files(of, nfiles, NULL);
    for (int i = 0; of && i < nfiles; i++)
        if (of[i].tmp_made) write_remove_temp(of[i].tmp);
    locale_errors_free(&job.le);
    locale_set_free(&ws.existing);
    free(of);
    free(names.v);
    free((void *)fetched.fetched);
    return rc;
}

int storage_write(const storage_item *items, size_t nitems, const char *path, storage_mode mode,
                  storage_file_type file_type, h5ark_value *files, h5ark_value *warnings,
                  h5ark_error *err) {
    return storage_write_ex(items, nitems, path, mode, file_type, NULL, files, warnings, err);
}

/* The locks of every file the write may replace or remove (twin.h), on every rank: its
 * files, named as lay_out resolves them, and of a distributed name the files of an earlier,
 * larger set beside them. A name that maps to no file locks nothing: lay_out refuses it. */
static int lock_files(const char *path, bool distributed, const storage_write_options *opts,
                      pathlock_set *held, h5ark_error *err) {
    int nfiles = distributed ? locales_count() : 1, n = 0;
    const char *base_dir = opts ? opts->base_dir : NULL;
    h5ark_error ignored = {0};
    char(*abs)[PATH_MAX] = sysio.calloc((size_t)nfiles, sizeof *abs);
    if (!abs) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (int i = 0; i < nfiles; i++) {
        char rel[PATH_MAX];
        if (distributed ? files_locale_name(path, i, rel, sizeof rel)
                        : snprintf(rel, sizeof rel, "%s", path) >= (int)sizeof rel)
            continue;
        if (base_dir ? snprintf(abs[n], PATH_MAX, "%s/%s", base_dir, rel) < PATH_MAX
                     : files_absolute(opts ? opts->access : NULL, rel, abs[n], &ignored) == 0)
            n++;
    }
    locale_set earlier = {0};
    if (distributed && !base_dir && n == nfiles) find_locale_set(path, abs[0], &earlier, &ignored);
    const char **names = sysio.calloc((size_t)n + earlier.n + 1, sizeof *names);
    int rc = names ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (int i = 0; names && i < n; i++)
        names[i] = abs[i];
    for (size_t i = 0; names && i < earlier.n; i++)
        names[n + i] = earlier.paths[i];
    if (rc == 0) rc = twin_changes_lock(held, names, (size_t)n + earlier.n, err);
    free(names);
    locale_set_free(&earlier);
    free(abs);
    return rc;
}

/* The files locked from laying them out until they are in place: the files read are the
 * ones changed, so no twin is levelled under a read and no twin_readers is needed. Every
 * rank has its locks or none goes on (one failing alone would leave the others waiting). */
int storage_write_ex(const storage_item *items, size_t nitems, const char *path, storage_mode mode,
                     storage_file_type file_type, const storage_write_options *opts,
                     h5ark_value *files, h5ark_value *warnings, h5ark_error *err) {
    pathlock_set held = {0};
    int rc = ranks_agree(lock_files(path, file_type == STORAGE_DISTRIBUTE, opts, &held, err), err);
    if (rc == 0)
        rc = write_files(items, nitems, path, mode, file_type, opts, &held, files, warnings, err);
    twin_changes_unlock(&held);
    return rc;
}
