/* tohdf: resolve every file and check every rule first; then build each file as a temporary
 * beside its final name (a new file, or for append a copy of the existing one) with HDF5
 * creating the groups, attributes and datasets, the datasets' space allocated at once so
 * their offsets are known; close HDF5, let every locale pwrite its own shards at those
 * offsets in parallel; and only when all of that succeeded rename the temporaries over the
 * final names. A failure at any point before the renames leaves every old file whole. */
#include "storage.h"

#include "config.h"
#include "files.h"
#include "io.h"
#include "locales.h"
#include "schema.h"
#include "storage_internal.h"

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

/* ---- shared helpers (declared in storage_internal.h) --------------------------------- */

int write_plan_add(write_plan *plan, const write_region *r, h5ark_error *err) {
    if (plan->n == plan->cap) {
        size_t cap = plan->cap ? plan->cap * 2 : 16;
        write_region *v = realloc(plan->v, cap * sizeof *v);
        if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        plan->v = v;
        plan->cap = cap;
    }
    plan->v[plan->n++] = *r;
    return 0;
}

int write_darray_dataset(hid_t loc, int file_index, const char *name, const darray *a, bool is_bool,
                         int part, const darray *rebase_by, write_plan *plan, h5ark_error *err) {
    uint64_t n = part < 0 ? a->size : a->shards[part].count;
    uint64_t offset = 0;
    hid_t dset = h5u_create_dataset(loc, name, a->dtype, n, &offset, err);
    if (dset < 0) return -1;
    int rc = h5u_write_object_attrs(dset, OBJTYPE_PDARRAY, is_bool, err);
    if (H5Dclose(dset) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close dataset '%s'", name);
    if (rc) return -1;
    for (int b = 0; b < a->nshards; b++) {
        const shard *s = &a->shards[b];
        if ((part >= 0 && b != part) || s->count == 0) continue;
        write_region r = {
            .file = file_index,
            .locale = b,
            .data = s->data,
            .nbytes = s->count * a->itemsize,
            .offset = offset + (part < 0 ? s->start * a->itemsize : 0),
            .rebase = rebase_by ? (int64_t)rebase_by->shards[b].start : 0,
        };
        if (write_plan_add(plan, &r, err)) return -1;
    }
    return 0;
}

int locale_errors_init(locale_errors *le, h5ark_error *err) {
    le->errs = calloc((size_t)locales_count(), sizeof *le->errs);
    return le->errs ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

void locale_errors_free(locale_errors *le) {
    free(le->errs);
    le->errs = NULL;
}

void locale_errors_set(locale_errors *le, int locale) {
    /* each locale writes only its own slot; locales_run's wait orders it before the read */
    if (le->errs[locale].code == H5ARK_OK) le->errs[locale].code = H5ARK_INTERNAL;
}

int locale_errors_take(locale_errors *le, h5ark_error *err) {
    for (int b = 0; b < locales_count(); b++)
        if (le->errs[b].code != H5ARK_OK) {
            *err = le->errs[b];
            return -1;
        }
    return 0;
}

/* ---- the files of a request -------------------------------------------------------- */

typedef struct {
    char rel[PATH_MAX];   /* as the client names it */
    char final[PATH_MAX]; /* resolved */
    char tmp[PATH_MAX];
    bool dir_missing; /* its directory is created only once everything is checked */
    bool exists;
    bool tmp_made;
} out_file;

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

static size_t glob_escape(const char *in, size_t n, char *out, size_t outlen) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 2 < outlen; i++) {
        if (strchr("*?[]\\", in[i])) out[k++] = '\\';
        out[k++] = in[i];
    }
    out[k] = '\0';
    return k;
}

static int find_locale_set(const char *rel, locale_set *set, h5ark_error *err) {
    *set = (locale_set){0};
    char name0[PATH_MAX];
    if (files_locale_name(rel, 0, name0, sizeof name0))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", rel);
    const char *mark = NULL;
    for (const char *p = strstr(name0, "_LOCALE0000"); p; p = strstr(p + 1, "_LOCALE0000"))
        mark = p;
    if (!mark) return 0;
    char pattern[3 * PATH_MAX], *w = pattern;
    size_t room = sizeof pattern;
    int n = snprintf(w, room, "%s/", config.data_dir);
    w += n, room -= (size_t)n;
    size_t k = glob_escape(name0, (size_t)(mark - name0), w, room);
    w += k, room -= k;
    n = snprintf(w, room, "_LOCALE[0-9][0-9][0-9][0-9]");
    w += n, room -= (size_t)n;
    glob_escape(mark + 11, strlen(mark + 11), w, room);
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
    size_t tail = strlen(mark + 11);
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

static int check_items(const storage_item *items, size_t n, h5ark_error *err) {
    for (size_t i = 0; i < n; i++) {
        const object *obj = items[i].obj;
        const char *name = items[i].dataset;
        if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
            strcmp(name, LEGACY_METADATA_GROUP) == 0 || strlen(name) >= 1000)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "tohdf: '%s' cannot be a dataset name (empty, '/', '.', reserved "
                              "or too long)",
                              name);
        if (obj->objtype != H5ARK_PDARRAY && obj->objtype != H5ARK_STRINGS)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "tohdf: '%s' is a %s; tohdf writes pdarrays and strings", name,
                              h5ark_objtype_name(obj->objtype));
        if (obj->objtype == H5ARK_PDARRAY && obj->ndim != 1)
            return h5ark_fail(err, H5ARK_TYPE_ERROR,
                              "tohdf: '%s' has %u dimensions; tohdf writes 1-D pdarrays", name,
                              obj->ndim);
        if (obj->values->nshards != locales_count() ||
            (obj->segments && obj->segments->nshards != locales_count()))
            return h5ark_fail(err, H5ARK_INTERNAL, "tohdf: '%s' is not sharded over the locales",
                              name);
    }
    return 0;
}

/* In append mode, the datasets must not be in the file yet. */
static int check_collisions(const out_file *f, const storage_item *items, size_t n,
                            h5ark_error *err) {
    htri_t hdf5 = h5u_is_hdf5(f->final);
    if (hdf5 <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "cannot append to '%s': it is not an HDF5 file",
                          f->rel);
    }
    hid_t file = H5Fopen(f->final, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0)
        return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot append to '%s': it cannot be opened",
                        f->rel);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (h5u_link_exists(file, items[i].dataset) == 1)
            rc = h5ark_fail(err, H5ARK_ALREADY_EXISTS,
                            "dataset '%s' already exists in '%s'; nothing was written",
                            items[i].dataset, f->rel);
    H5Fclose(file);
    return rc;
}

/* ---- writing ----------------------------------------------------------------------- */

/* Copy src to a new file dst (for append: the copy is extended, then renamed over src). */
static int copy_file(const char *src, const char *dst, const char *shown, h5ark_error *err) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot open '%s': %s", shown, strerror(errno));
    struct stat st;
    if (fstat(in, &st) != 0) {
        close(in);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot stat '%s': %s", shown, strerror(errno));
    }
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777);
    if (out < 0) {
        close(in);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot create a copy of '%s': %s", shown,
                          strerror(errno));
    }
    int rc = 0;
    off_t left = st.st_size;
    bool plain = false;
    while (left > 0 && !plain) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == ENOSYS || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP))
            plain = true;
        else if (n <= 0) {
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot copy '%s': %s", shown,
                            n < 0 ? strerror(errno) : "it shrank while being copied");
            break;
        } else
            left -= n;
    }
    if (plain && rc == 0) {
        static const size_t chunk = 1u << 20;
        char *buf = malloc(chunk);
        off_t pos = st.st_size - left;
        if (!buf) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        while (rc == 0 && left > 0) {
            size_t n = (size_t)(left < (off_t)chunk ? left : (off_t)chunk);
            if (io_pread_full(in, buf, n, (uint64_t)pos) ||
                io_pwrite_full(out, buf, n, (uint64_t)pos))
                rc =
                    h5ark_fail(err, H5ARK_IO_ERROR, "cannot copy '%s': %s", shown, strerror(errno));
            pos += (off_t)n;
            left -= (off_t)n;
        }
        free(buf);
    }
    close(in);
    if (close(out) != 0 && rc == 0)
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot copy '%s': %s", shown, strerror(errno));
    return rc;
}

static int build_file(out_file *f, int index, bool append, bool distributed,
                      const storage_item *items, size_t nitems, write_plan *plan,
                      h5ark_error *err) {
    if (files_temp_name(f->final, f->tmp, sizeof f->tmp))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", f->rel);
    hid_t file;
    if (append && f->exists) {
        f->tmp_made = true;
        if (copy_file(f->final, f->tmp, f->rel, err)) return -1;
        file = H5Fopen(f->tmp, H5F_ACC_RDWR, H5P_DEFAULT);
        if (file < 0)
            return h5u_fail(err, H5ARK_IO_ERROR, "cannot open a copy of '%s' to append to it",
                            f->rel);
    } else {
        file = H5Fcreate(f->tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
        if (file < 0)
            return h5u_fail(err, H5ARK_IO_ERROR, "cannot create a file beside '%s'", f->rel);
        f->tmp_made = true;
        if (h5u_write_int_attr(file, ATTR_FILE_FORMAT,
                               distributed ? FILE_FORMAT_DISTRIBUTE : FILE_FORMAT_SINGLE, err)) {
            H5Fclose(file);
            return h5ark_fail_context(err, "'%s'", f->rel);
        }
    }
    int rc = 0;
    for (size_t i = 0; i < nitems && rc == 0; i++) {
        const object *obj = items[i].obj;
        int part = distributed ? index : -1;
        if (obj->objtype == H5ARK_STRINGS)
            rc = strings_write(file, index, items[i].dataset, obj, part, plan, err);
        else
            rc = pdarray_write(file, index, items[i].dataset, obj, part, plan, err);
    }
    if (H5Fclose(file) < 0 && rc == 0) rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close it");
    return rc ? h5ark_fail_context(err, "writing '%s'", f->rel) : 0;
}

typedef struct {
    const write_plan *plan;
    const out_file *files;
    locale_errors le;
} pwrite_job;

static int write_region_data(int fd, const write_region *r, h5ark_error *err) {
    if (!r->rebase) return io_pwrite_full(fd, r->data, r->nbytes, r->offset);
    /* offsets restarted at 0 for a file of their own: converted a block at a time */
    enum { BLOCK = 8192 };
    int64_t buf[BLOCK];
    const int64_t *in = r->data;
    uint64_t n = r->nbytes / 8;
    for (uint64_t i = 0; i < n; i += BLOCK) {
        uint64_t m = n - i < BLOCK ? n - i : BLOCK;
        for (uint64_t k = 0; k < m; k++)
            buf[k] = in[i + k] - r->rebase;
        if (io_pwrite_full(fd, buf, m * 8, r->offset + i * 8)) return -1;
    }
    (void)err;
    return 0;
}

static void pwrite_shards(int locale, void *ctx) {
    pwrite_job *job = ctx;
    h5ark_error *err = &job->le.errs[locale];
    int fd = -1, fd_file = -1;
    for (size_t i = 0; i < job->plan->n; i++) {
        const write_region *r = &job->plan->v[i];
        if (r->locale != locale) continue;
        const out_file *f = &job->files[r->file];
        if (fd_file != r->file) {
            if (fd >= 0 && (fsync(fd) != 0) + (close(fd) != 0)) {
                h5ark_fail(err, H5ARK_IO_ERROR, "cannot write '%s': %s", job->files[fd_file].rel,
                           strerror(errno));
                locale_errors_set(&job->le, locale);
                return;
            }
            fd = open(f->tmp, O_WRONLY | O_CLOEXEC);
            fd_file = r->file;
            if (fd < 0) {
                h5ark_fail(err, H5ARK_IO_ERROR, "cannot open the new '%s': %s", f->rel,
                           strerror(errno));
                locale_errors_set(&job->le, locale);
                return;
            }
        }
        if (write_region_data(fd, r, err)) {
            h5ark_fail(err, H5ARK_IO_ERROR, "cannot write '%s': %s", f->rel, strerror(errno));
            locale_errors_set(&job->le, locale);
            break;
        }
    }
    /* Flush here, where the locales run in parallel; the fsync files_replace does later
     * then finds little left to write. */
    if (fd >= 0 && err->code == H5ARK_OK && fsync(fd) != 0) {
        h5ark_fail(err, H5ARK_IO_ERROR, "cannot flush '%s': %s", job->files[fd_file].rel,
                   strerror(errno));
        locale_errors_set(&job->le, locale);
    }
    if (fd >= 0 && close(fd) != 0 && err->code == H5ARK_OK) {
        h5ark_fail(err, H5ARK_IO_ERROR, "cannot write '%s': %s", job->files[fd_file].rel,
                   strerror(errno));
        locale_errors_set(&job->le, locale);
    }
}

static int add_str(h5ark_value *list, const char *fmt, const char *arg, h5ark_error *err) {
    char msg[2 * PATH_MAX];
    snprintf(msg, sizeof msg, fmt, arg);
    if (h5ark_value_push(list, h5ark_value_str(msg)))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return 0;
}

int storage_write(const storage_item *items, size_t nitems, const char *path, storage_mode mode,
                  storage_file_type file_type, h5ark_value *files, h5ark_value *warnings,
                  h5ark_error *err) {
    h5u_quiet();
    bool distributed = file_type == STORAGE_DISTRIBUTE;
    bool append = mode == STORAGE_APPEND;
    int nfiles = distributed ? locales_count() : 1;
    if (check_items(items, nitems, err)) return -1;
    out_file *of = calloc((size_t)nfiles, sizeof *of);
    locale_set existing = {0};
    write_plan plan = {0};
    pwrite_job job = {.plan = &plan, .files = of};
    int rc = -1;
    if (!of) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");

    /* 1. names: every file resolved inside the data directory */
    for (int i = 0; i < nfiles; i++) {
        out_file *f = &of[i];
        if (distributed ? files_locale_name(path, i, f->rel, sizeof f->rel)
                        : snprintf(f->rel, sizeof f->rel, "%s", path) >= (int)sizeof f->rel) {
            h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", path);
            goto out;
        }
        if (files_resolve(f->rel, false, f->final, err)) {
            if (err->code != H5ARK_NOT_FOUND) goto out;
            f->dir_missing = true;
            continue;
        }
        struct stat st;
        f->exists = lstat(f->final, &st) == 0;
    }
    if (distributed && !of[0].dir_missing && find_locale_set(path, &existing, err)) goto out;

    /* 2. the write mode's rules, before anything is written */
    if (append && distributed && existing.n > 0) {
        bool match = existing.n == (size_t)nfiles;
        for (int i = 0; i < nfiles; i++)
            match = match && of[i].exists;
        if (!match) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "cannot append to '%s': %zu _LOCALE files of it exist, but this daemon "
                       "writes %d (one per locale); nothing was written",
                       path, existing.n, nfiles);
            goto out;
        }
    }
    if (append)
        for (int i = 0; i < nfiles; i++)
            if (of[i].exists && check_collisions(&of[i], items, nitems, err)) goto out;

    /* 3. build every file beside its final name, then the locales write the data */
    for (int i = 0; i < nfiles; i++) {
        out_file *f = &of[i];
        if (f->dir_missing && files_resolve(f->rel, true, f->final, err)) goto out;
        if (build_file(f, i, append, distributed, items, nitems, &plan, err)) goto out;
    }
    if (locale_errors_init(&job.le, err)) goto out;
    locales_run(pwrite_shards, &job);
    if (locale_errors_take(&job.le, err)) goto out;

    /* 4. put them in place */
    for (int i = 0; i < nfiles; i++) {
        if (files_replace(of[i].tmp, of[i].final, err)) {
            if (i > 0)
                h5ark_fail_context(err, "%d of the %d files were already replaced", i, nfiles);
            goto out;
        }
        of[i].tmp_made = false;
    }
    rc = 0;
    for (int i = 0; i < nfiles && rc == 0; i++) {
        rc = add_str(files, "%s", files_display(of[i].final), err);
        if (rc == 0 && !append && of[i].exists)
            rc = add_str(warnings, "overwrote the existing file '%s'", of[i].rel, err);
    }
    /* a larger earlier run's files would otherwise be read back as part of this set */
    if (distributed && !append)
        for (size_t i = 0; i < existing.n && rc == 0; i++) {
            if (existing.numbers[i] < nfiles) continue;
            const char *shown = files_display(existing.paths[i]);
            if (unlink(existing.paths[i]) == 0)
                rc = add_str(warnings,
                             "removed '%s', left by an earlier write with more locales, so "
                             "that it is not read back as part of this file set",
                             shown, err);
            else
                rc = add_str(warnings,
                             "could not remove '%s', left by an earlier write with more "
                             "locales: reading the whole set back will include it",
                             shown, err);
        }
out:
    for (int i = 0; i < nfiles; i++)
        if (of[i].tmp_made) unlink(of[i].tmp);
    locale_errors_free(&job.le);
    free(plan.v);
    locale_set_free(&existing);
    free(of);
    return rc;
}
