/* tohdf: resolve every file and check every rule first; then build each file as a temporary
 * beside its final name (a new file, or for append and update a copy of the existing one)
 * with HDF5 creating the groups, attributes and datasets, the datasets' space allocated at
 * once so their offsets are known; close HDF5, let every locale pwrite its own shards at
 * those offsets in parallel; and only when all of that succeeded put the temporaries in
 * place, a file set as one (commit.h). A failure at any point leaves every old file whole. */
#include "storage.h"
#include "twin.h"

#include "commit.h"
#include "config.h"
#include "families.h"
#include "files.h"
#include "io.h"
#include "locales.h"
#include "objects/strings.h"
#include "progress.h"
#include "dist/ranks.h"
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

typedef struct {
    char rel[PATH_MAX];   /* as the client names it */
    char final[PATH_MAX]; /* resolved */
    char tmp[PATH_MAX];
    bool dir_missing; /* its directory is created only once everything is checked */
    bool exists;
    bool tmp_made;
    hid_t h5; /* kept open while the locales write its chunks, else H5I_INVALID_HID */
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

static int find_locale_set(const char *rel, locale_set *set, h5ark_error *err) {
    *set = (locale_set){0};
    char abs[PATH_MAX], pattern[2 * PATH_MAX];
    size_t tail;
    if (snprintf(abs, sizeof abs, "%s/%s", config.data_dir, rel) >= (int)sizeof abs ||
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

/* ---- copying a file's objects (repack) ---------------------------------------- */

static herr_t external_cb(hid_t obj, const char *name, const H5O_info_t *info, void *data) {
    if (info->type != H5O_TYPE_DATASET) return 0;
    hid_t d = H5Dopen2(obj, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t dcpl = H5Dget_create_plist(d);
    int next = dcpl >= 0 ? H5Pget_external_count(dcpl) : -1;
    H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    if (dcpl >= 0) H5Pclose(dcpl);
    H5Dclose(d);
    if (next != 0 || layout == H5D_VIRTUAL) {
        snprintf(data, 1024, "%s", name);
        return 1;
    }
    return 0;
}

/* Copying reads every dataset: refuse data stored in other files. */
static int check_no_external(hid_t file, const char *shown, h5ark_error *err) {
    char found[1024] = "";
    herr_t r = H5Ovisit(file, H5_INDEX_NAME, H5_ITER_INC, external_cb, found);
    if (r > 0)
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "'%s': dataset '%s' keeps its data in other files (external or "
                          "virtual storage); h5ark does not copy it",
                          shown, found);
    if (r < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be walked", shown);
    return 0;
}

typedef struct {
    hid_t dst;
    h5ark_error *err;
    int rc;
} copy_job;

static herr_t copy_attr_cb(hid_t src, const char *name, const H5A_info_t *info, void *data) {
    (void)info;
    copy_job *job = data;
    hid_t a = H5Aopen(src, name, H5P_DEFAULT);
    hid_t type = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t space = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    size_t size = type >= 0 ? H5Tget_size(type) : 0;
    void *buf = n >= 0 && size > 0 ? calloc((size_t)n + 1, size) : NULL;
    hid_t out = H5I_INVALID_HID;
    bool vlen = type >= 0 && (H5Tdetect_class(type, H5T_VLEN) > 0 || H5Tis_variable_str(type) > 0);
    bool read = buf && H5Aread(a, type, buf) >= 0;
    if (!read || (out = H5Acreate2(job->dst, name, type, space, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
        H5Awrite(out, type, buf) < 0)
        job->rc = h5u_fail(job->err, H5ARK_IO_ERROR, "cannot copy the root attribute '%s'", name);
    if (read && vlen) H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf);
    free(buf);
    if (out >= 0) H5Aclose(out);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    if (a >= 0) H5Aclose(a);
    return job->rc ? -1 : 0;
}

static herr_t copy_link_cb(hid_t src, const char *name, const H5L_info_t *info, void *data) {
    copy_job *job = data;
    herr_t r = 0;
    if (info->type == H5L_TYPE_HARD) {
        r = h5u_copy_object(src, name, job->dst);
    } else if (info->type == H5L_TYPE_SOFT || info->type == H5L_TYPE_EXTERNAL) {
        size_t len = info->u.val_size;
        char *val = len < (1u << 20) ? malloc(len + 1) : NULL;
        r = val && H5Lget_val(src, name, val, len + 1, H5P_DEFAULT) >= 0 ? 0 : -1;
        if (r == 0 && info->type == H5L_TYPE_SOFT) {
            val[len] = '\0';
            r = H5Lcreate_soft(val, job->dst, name, H5P_DEFAULT, H5P_DEFAULT);
        } else if (r == 0) {
            const char *file = NULL, *obj = NULL;
            unsigned flags;
            r = H5Lunpack_elink_val(val, len, &flags, &file, &obj);
            if (r >= 0) r = H5Lcreate_external(file, obj, job->dst, name, H5P_DEFAULT, H5P_DEFAULT);
        }
        free(val);
    }
    if (r < 0) {
        job->rc = h5u_fail(job->err, H5ARK_IO_ERROR, "cannot copy '%s'", name);
        return -1;
    }
    return 0;
}

/* Copy every root attribute and top-level link of src into the new file dst. */
static int copy_contents(hid_t src, hid_t dst, const char *shown, h5ark_error *err) {
    if (check_no_external(src, shown, err)) return -1;
    copy_job job = {.dst = dst, .err = err};
    hsize_t idx = 0;
    if (H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, copy_attr_cb, &job) < 0 &&
        job.rc == 0)
        job.rc =
            h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the root attributes of '%s'", shown);
    idx = 0;
    if (job.rc == 0 && H5Literate(src, H5_INDEX_NAME, H5_ITER_INC, &idx, copy_link_cb, &job) < 0 &&
        job.rc == 0)
        job.rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot list the objects of '%s'", shown);
    return job.rc ? h5ark_fail_context(err, "copying '%s'", shown) : 0;
}

/* ---- writing ----------------------------------------------------------------------- */

/* A temporary of a failed write: one more try when removing it fails (a transient error),
 * and what still fails is left to the next start's sweep. */
static void remove_temp(const char *tmp) {
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
    if (files_temp_name(f->final, f->tmp, sizeof f->tmp))
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

typedef struct {
    const write_plan *plan;
    const out_file *files;
    locale_errors le;
    bool chunks_apart; /* several ranks: the chunks are written by write_chunks_ranks */
} write_job;

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

/* A locale's chunks: made here, in parallel; only their writes take HDF5's lock. */
static void write_chunks(int locale, write_job *job) {
    h5ark_error *err = &job->le.errs[locale];
    progress_sink *progress = progress_here();
    chunk_buffers b = {0};
    for (size_t i = 0; i < job->plan->nchunks; i++) {
        const write_chunk *c = &job->plan->chunks[i];
        if (c->locale != locale) continue;
        if (chunk_write(job->plan, c, &b, err)) {
            h5ark_fail_context(err, "cannot write '%s'", job->files[c->file].rel);
            locale_errors_set(&job->le, locale);
            break;
        }
        progress_add(progress, c->count * c->src->itemsize);
    }
    chunk_buffers_free(&b);
}

static void write_locale(int locale, void *ctx) {
    write_job *job = ctx;
    if (!job->chunks_apart) write_chunks(locale, job);
    if (job->le.errs[locale].code == H5ARK_OK) pwrite_shards(locale, job);
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

/* ---- several ranks ------------------------------------------------------------------ */

/* Every darray of the items, in an order every rank sees alike (every rank holds the same
 * metadata): a planned region's source travels as its number in this list. */
typedef struct {
    const darray **v;
    size_t n, cap;
} darray_list;

static int list_darrays(const object *obj, darray_list *l) {
    const darray *mine[2] = {obj->values, obj->segments};
    for (int k = 0; k < 2; k++) {
        if (!mine[k]) continue;
        const darray **v = grow_array(l->v, l->n, &l->cap, sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->v[l->n++] = mine[k];
    }
    for (size_t i = 0; i < obj->ncomponents; i++)
        if (list_darrays(obj->components[i].obj, l)) return -1;
    return 0;
}

typedef struct {
    uint64_t file, locale, src, first, nbytes, offset;
    int64_t rebase;
} region_wire;

typedef struct {
    uint64_t file, locale, dset, src, first, count, elems, at;
    int64_t rebase;
} chunk_wire;

static size_t darray_number(const darray_list *dl, const darray *a) {
    size_t k = 0;
    while (k < dl->n && dl->v[k] != a)
        k++;
    return k;
}

static h5ark_value *encode_plan(const out_file *of, int nfiles, const write_plan *plan,
                                const darray_list *dl) {
    h5ark_value *v = h5ark_value_map(), *tmp = h5ark_value_array(), *rel = h5ark_value_array();
    region_wire *w = sysio.calloc(plan->n ? plan->n : 1, sizeof *w);
    chunk_wire *cw = sysio.calloc(plan->nchunks ? plan->nchunks : 1, sizeof *cw);
    bool ok = v && tmp && rel && w && cw;
    for (int i = 0; ok && i < nfiles; i++)
        ok = h5ark_value_push(tmp, h5ark_value_str(of[i].tmp)) == 0 &&
             h5ark_value_push(rel, h5ark_value_str(of[i].rel)) == 0;
    for (size_t i = 0; ok && i < plan->n; i++) {
        const write_region *r = &plan->v[i];
        size_t k = darray_number(dl, r->src);
        ok = k < dl->n;
        w[i] = (region_wire){(uint64_t)r->file, (uint64_t)r->locale, k,        r->first,
                             r->nbytes,         r->offset,           r->rebase};
    }
    if (ok) ok = h5ark_value_set(v, "tmp", tmp) == 0, tmp = NULL;
    if (ok) ok = h5ark_value_set(v, "rel", rel) == 0, rel = NULL;
    for (size_t i = 0; ok && i < plan->nchunks; i++) {
        const write_chunk *c = &plan->chunks[i];
        size_t k = darray_number(dl, c->src);
        ok = k < dl->n;
        cw[i] = (chunk_wire){
            (uint64_t)c->file, (uint64_t)c->locale, c->dset, k, c->first, c->count, c->elems, c->at,
            c->rebase};
    }
    if (ok) ok = h5ark_value_set(v, "regions", h5ark_value_bin(w, plan->n * sizeof *w)) == 0;
    if (ok) ok = h5ark_value_set(v, "chunks", h5ark_value_bin(cw, plan->nchunks * sizeof *cw)) == 0;
    free(w);
    free(cw);
    h5ark_value_destroy(&tmp);
    h5ark_value_destroy(&rel);
    if (!ok) h5ark_value_destroy(&v);
    return v;
}

static int decode_plan(const h5ark_value *v, const darray_list *dl, out_file **ofp, int *nfiles,
                       write_plan *plan, h5ark_error *err) {
    const h5ark_value *tmp = h5ark_value_get(v, "tmp"), *rel = h5ark_value_get(v, "rel");
    const h5ark_value *regions = h5ark_value_get(v, "regions");
    size_t n = h5ark_value_len(tmp);
    out_file *of = sysio.calloc(n ? n : 1, sizeof *of);
    if (!of) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    *ofp = of;
    *nfiles = (int)n;
    for (size_t i = 0; i < n; i++) {
        snprintf(of[i].tmp, sizeof of[i].tmp, "%s", h5ark_value_at(tmp, i)->as.s.ptr);
        snprintf(of[i].rel, sizeof of[i].rel, "%s", h5ark_value_at(rel, i)->as.s.ptr);
        of[i].h5 = H5I_INVALID_HID;
    }
    const region_wire *w = (const region_wire *)regions->as.s.ptr;
    size_t nw = regions->as.s.len / sizeof *w;
    for (size_t i = 0; i < nw; i++) {
        region_wire r;
        memcpy(&r, &w[i], sizeof r); /* the bytes need not be aligned */
        if (r.src >= dl->n || r.file >= n || r.locale >= (uint64_t)locales_count())
            return h5ark_fail(err, H5ARK_INTERNAL, "rank %d: a region of rank 0's plan is unknown",
                              ranks_self());
        if (!locales_is_local((int)r.locale)) continue;
        const darray *a = dl->v[r.src];
        const shard *sh = &a->shards[r.locale];
        write_region out = {.file = (int)r.file,
                            .locale = (int)r.locale,
                            .data = (const char *)sh->data + (r.first - sh->start) * a->itemsize,
                            .nbytes = r.nbytes,
                            .offset = r.offset,
                            .rebase = r.rebase,
                            .src = a,
                            .first = r.first};
        if (write_plan_add(plan, &out, err)) return -1;
    }
    /* every chunk, not only this rank's: each rank works out the same exchanges from them */
    const h5ark_value *chunks = h5ark_value_get(v, "chunks");
    const chunk_wire *cw = (const chunk_wire *)chunks->as.s.ptr;
    size_t nc = chunks->as.s.len / sizeof *cw;
    for (size_t i = 0; i < nc; i++) {
        chunk_wire c;
        memcpy(&c, &cw[i], sizeof c);
        if (c.src >= dl->n || c.file >= n || c.locale >= (uint64_t)locales_count())
            return h5ark_fail(err, H5ARK_INTERNAL, "rank %d: a chunk of rank 0's plan is unknown",
                              ranks_self());
        write_chunk *g = grow_array(plan->chunks, plan->nchunks, &plan->chunks_cap, sizeof *g);
        if (!g)
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
        plan->chunks = g;
        plan->chunks[plan->nchunks++] = (write_chunk){.file = (int)c.file,
                                                      .locale = (int)c.locale,
                                                      .dset = c.dset,
                                                      .src = dl->v[c.src],
                                                      .first = c.first,
                                                      .count = c.count,
                                                      .elems = c.elems,
                                                      .at = c.at,
                                                      .rebase = c.rebase};
    }
    return 0;
}

/* Rank 0 laid the files out: it sends the temporaries (and the names they are shown by)
 * and the planned regions; every other rank keeps the regions of its own locales. */
static int share_plan(const storage_item *items, size_t nitems, out_file **of, int *nfiles,
                      write_plan *plan, h5ark_error *err) {
    darray_list dl = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nitems; i++)
        if (list_darrays(items[i].obj, &dl))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
    h5ark_value *v = ranks_self() == 0 && rc == 0 ? encode_plan(*of, *nfiles, plan, &dl) : NULL;
    int brc = ranks_bcast_value(&v, err);
    if (rc == 0) rc = brc;
    if (rc == 0 && ranks_self() != 0) rc = decode_plan(v, &dl, of, nfiles, plan, err);
    h5ark_value_destroy(&v);
    free(dl.v);
    return ranks_agree(rc, err);
}

/* ---- compressed chunks on several ranks ---------------------------------------------- */

/* Serial HDF5 cannot have several processes add chunks to one file (each chunk's place is
 * allocated in the file's metadata, held in the memory of the process writing it), so at
 * R > 1 the rank owning a chunk (the owner of its middle element, as with one rank) makes
 * it on its locales, in parallel with the other ranks, and sends the stored bytes to rank
 * 0, whose file is open; rank 0 writes them with H5Dwrite_chunk as its own locales do.
 * Cost over one rank: the compressed bytes of ranks > 0 cross to rank 0, and the elements
 * of a chunk lying on another rank than its owner's (at most a chunk per rank boundary of
 * each dataset) cross first. Memory: ROUND_BYTES of a rank's chunks are made at a time,
 * and rank 0 holds one rank's made chunks of a round at a time. */
enum { ROUND_BYTES = 64u << 20 };

static uint64_t chunk_bytes(const write_chunk *c) {
    return c->count * c->src->itemsize;
}

/* Calls back for each shard of c's elements on another rank than c's owner: its rank and
 * the overlap [lo, hi) of elements. */
typedef void (*span_fn)(const write_chunk *c, int owner, int rank, int b, uint64_t lo, uint64_t hi,
                        void *ctx);

static void foreign_spans(const write_chunk *c, span_fn fn, void *ctx) {
    const darray *a = c->src;
    int owner = locales_rank_of(c->locale);
    uint64_t end = c->first + c->count;
    for (int b = c->count ? darray_shard_of(a, c->first) : a->nshards; b < a->nshards; b++) {
        const shard *s = &a->shards[b];
        if (s->start >= end) break;
        uint64_t lo = s->start > c->first ? s->start : c->first;
        uint64_t hi = s->start + s->count < end ? s->start + s->count : end;
        if (lo < hi && locales_rank_of(b) != owner)
            fn(c, owner, locales_rank_of(b), b, lo, hi, ctx);
    }
}

typedef struct {
    uint64_t *send, *recv; /* bytes per rank, then (second pass) positions */
    char *sendbuf;
    bool *straddles; /* per chunk */
    size_t chunk;
} edge_pass;

static void count_edge(const write_chunk *c, int owner, int rank, int b, uint64_t lo, uint64_t hi,
                       void *ctx) {
    (void)b;
    edge_pass *e = ctx;
    uint64_t n = (hi - lo) * c->src->itemsize;
    if (rank == ranks_self()) e->send[owner] += n;
    if (owner == ranks_self()) e->recv[rank] += n, e->straddles[e->chunk] = true;
}

static void pack_edge(const write_chunk *c, int owner, int rank, int b, uint64_t lo, uint64_t hi,
                      void *ctx) {
    edge_pass *e = ctx;
    if (rank != ranks_self()) return;
    const shard *s = &c->src->shards[b];
    size_t isz = c->src->itemsize;
    memcpy(e->sendbuf + e->send[owner], (const char *)s->data + (lo - s->start) * isz,
           (hi - lo) * isz);
    e->send[owner] += (hi - lo) * isz;
}

/* Each of this rank's chunks with elements on other ranks gets them all in c->whole (one
 * all-to-all of those elements); *wholes lists the memory to free. */
static int gather_edges(write_plan *plan, void ***wholes, h5ark_error *err) {
    int R = ranks_count(), self = ranks_self();
    /* per rank: bytes to send, to receive, the send and receive positions, the send counts */
    uint64_t *t = sysio.calloc((size_t)R * 5, sizeof *t);
    edge_pass e = {.straddles = sysio.calloc(plan->nchunks + 1, sizeof *e.straddles)};
    char *recvbuf = NULL;
    *wholes = sysio.calloc(plan->nchunks + 1, sizeof **wholes);
    int rc = 0;
    if (!t || !e.straddles || !*wholes)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", self);
    uint64_t *soff = t ? t + 2 * R : NULL, *roff = t ? t + 3 * R : NULL;
    uint64_t *counts = t ? t + 4 * R : NULL;
    if (rc == 0) {
        e.send = t;
        e.recv = t + R;
        for (e.chunk = 0; e.chunk < plan->nchunks; e.chunk++)
            foreign_spans(&plan->chunks[e.chunk], count_edge, &e);
        uint64_t st = 0, rt = 0;
        for (int r = 0; r < R; r++)
            soff[r] = st, roff[r] = rt, st += e.send[r], rt += e.recv[r];
        e.sendbuf = sysio.malloc(st ? st : 1);
        recvbuf = sysio.malloc(rt ? rt : 1);
        if (!e.sendbuf || !recvbuf)
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", self);
    }
    /* the memory is there on every rank before anything moves */
    rc = ranks_agree(rc, err);
    if (rc == 0) {
        memcpy(counts, e.send, (size_t)R * sizeof *counts);
        memcpy(e.send, soff, (size_t)R * sizeof *e.send); /* now positions */
        for (size_t i = 0; i < plan->nchunks; i++)
            foreign_spans(&plan->chunks[i], pack_edge, &e);
        rc = ranks_alltoallv(e.sendbuf, counts, recvbuf, e.recv, err);
    }
    /* the owners put their chunks together: their own shards, then what came, in plan order */
    for (size_t i = 0; rc == 0 && i < plan->nchunks; i++) {
        write_chunk *c = &plan->chunks[i];
        if (!e.straddles[i]) continue;
        const darray *a = c->src;
        size_t isz = a->itemsize;
        char *w = sysio.malloc(chunk_bytes(c) ? chunk_bytes(c) : 1);
        if (!w) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", self);
            break;
        }
        (*wholes)[i] = w;
        uint64_t end = c->first + c->count;
        for (int b = darray_shard_of(a, c->first); b < a->nshards; b++) {
            const shard *s = &a->shards[b];
            if (s->start >= end) break;
            uint64_t lo = s->start > c->first ? s->start : c->first;
            uint64_t hi = s->start + s->count < end ? s->start + s->count : end;
            if (lo >= hi) continue;
            int r = locales_rank_of(b);
            char *to = w + (lo - c->first) * isz;
            if (r == self) {
                memcpy(to, (const char *)s->data + (lo - s->start) * isz, (hi - lo) * isz);
            } else {
                memcpy(to, recvbuf + roff[r], (hi - lo) * isz);
                roff[r] += (hi - lo) * isz;
            }
        }
        c->whole = w;
    }
    free(t);
    free(e.straddles);
    free(e.sendbuf);
    free(recvbuf);
    return ranks_agree(rc, err);
}

typedef struct {
    write_job *job;
    locale_errors le;
    const uint32_t *round; /* per chunk */
    uint32_t k;
    unsigned char **made; /* ranks > 0: per chunk, its stored bytes (sizes in len) */
    uint64_t *len;
} round_job;

static void make_round(int locale, void *ctx) {
    round_job *rj = ctx;
    write_job *job = rj->job;
    h5ark_error *err = &rj->le.errs[locale];
    chunk_buffers b = {0};
    for (size_t i = 0; i < job->plan->nchunks; i++) {
        const write_chunk *c = &job->plan->chunks[i];
        if (c->locale != locale || rj->round[i] != rj->k) continue;
        const unsigned char *out;
        size_t len;
        int rc = chunk_make(job->plan, c, &b, &out, &len, err);
        if (rc == 0 && ranks_self() == 0) {
            rc = chunk_store(job->plan, c->dset, c->at, out, len, err);
        } else if (rc == 0) {
            if (!(rj->made[i] = sysio.malloc(len)))
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for a chunk");
            else
                memcpy(rj->made[i], out, len), rj->len[i] = len;
        }
        if (rc) {
            h5ark_fail_context(err, "cannot write '%s'", job->files[c->file].rel);
            locale_errors_set(&rj->le, locale);
            break;
        }
        progress_add(progress_here(), chunk_bytes(c));
    }
    chunk_buffers_free(&b);
}

/* Round k: every rank makes its chunks of the round, rank 0 writing its own; the other
 * ranks' go to rank 0, which writes them. */
static int write_round(round_job *rj, h5ark_error *err) {
    write_job *job = rj->job;
    const write_plan *plan = job->plan;
    int R = ranks_count(), self = ranks_self();
    int rc = locale_errors_init(&rj->le, err);
    if (rc == 0) {
        locales_run(make_round, rj);
        rc = locale_errors_take(&rj->le, err);
    }
    locale_errors_free(&rj->le);
    /* how many chunks each rank made (metadata), this rank's sizes, rank 0's room for all */
    uint64_t *counts = sysio.calloc((size_t)R, sizeof *counts);
    uint64_t *mine = sysio.calloc(plan->nchunks + 1, sizeof *mine), nmine = 0, nsizes = 0;
    uint64_t *sizes = NULL;
    unsigned char *buf = NULL;
    if ((!counts || !mine) && rc == 0)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", self);
    for (size_t i = 0; counts && mine && i < plan->nchunks; i++) {
        if (rj->round[i] != rj->k) continue;
        int owner = locales_rank_of(plan->chunks[i].locale);
        if (owner != 0) counts[owner] += 8, nsizes++;
        if (owner == self && self != 0) mine[nmine++] = rj->len[i];
    }
    if (self == 0 && rc == 0 && !(sizes = sysio.malloc((nsizes + 1) * 8)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_span *spans = self != 0 ? sysio.calloc(nmine + 1, sizeof *spans) : NULL;
    if (self != 0 && rc == 0 && !spans) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    /* every rank made its chunks and has its memory before anything moves */
    rc = ranks_agree(rc, err);
    if (rc == 0) {
        h5ark_span span = {mine, nmine * 8};
        rc = ranks_gatherv(&span, 1, sizes, counts, err);
    }
    if (rc == 0 && self == 0) { /* room for the largest rank's chunks */
        uint64_t most = 0, at = 0;
        for (int r = 1; r < R; r++) {
            uint64_t total = 0;
            for (uint64_t j = 0; j < counts[r] / 8; j++)
                total += sizes[at + j];
            at += counts[r] / 8;
            most = total > most ? total : most;
        }
        if (!(buf = sysio.malloc(most ? most : 1)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory for %llu bytes of chunks",
                            (unsigned long long)most);
    }
    rc = ranks_agree(rc, err);
    if (rc == 0 && self != 0 && nmine > 0) {
        size_t n = 0;
        for (size_t i = 0; i < plan->nchunks; i++)
            if (rj->round[i] == rj->k && locales_rank_of(plan->chunks[i].locale) == self)
                spans[n++] = (h5ark_span){rj->made[i], rj->len[i]};
        rc = ranks_send(0, spans, n, err);
    } else if (rc == 0 && self == 0) {
        /* a rank at a time; a failed write still takes the bytes the other ranks send */
        uint64_t at = 0;
        int wrc = 0;
        for (int r = 1; r < R && rc == 0; r++) {
            uint64_t n = counts[r] / 8, total = 0;
            for (uint64_t j = 0; j < n; j++)
                total += sizes[at + j];
            if (n > 0) rc = ranks_recv(r, buf, total, err);
            uint64_t off = 0, j = at;
            for (size_t i = 0; rc == 0 && wrc == 0 && i < plan->nchunks; i++) {
                const write_chunk *c = &plan->chunks[i];
                if (rj->round[i] != rj->k || locales_rank_of(c->locale) != r) continue;
                wrc = chunk_store(plan, c->dset, c->at, buf + off, sizes[j], err);
                if (wrc) h5ark_fail_context(err, "cannot write '%s'", job->files[c->file].rel);
                off += sizes[j++];
            }
            at += n;
        }
        if (rc == 0) rc = wrc;
    }
    for (size_t i = 0; i < plan->nchunks; i++) {
        free(rj->made[i]);
        rj->made[i] = NULL;
    }
    free(buf);
    free(sizes);
    free(spans);
    free(mine);
    free(counts);
    return ranks_agree(rc, err);
}

/* The compressed chunks of a write at R > 1: every rank calls it after share_plan, with its
 * status so far (rc), and every rank gets the same outcome. */
static int write_chunks_ranks(write_job *job, write_plan *plan, int rc, h5ark_error *err) {
    void **wholes = NULL;
    uint32_t *round = sysio.calloc(plan->nchunks + 1, sizeof *round);
    unsigned char **made = sysio.calloc(plan->nchunks + 1, sizeof *made);
    uint64_t *len = sysio.calloc(plan->nchunks + 1, sizeof *len);
    uint64_t *acc = sysio.calloc((size_t)ranks_count(), sizeof *acc);
    if (rc == 0 && !(round && made && len && acc))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
    rc = ranks_agree(rc, err);
    if (rc == 0 && plan->nchunks > 0) rc = gather_edges(plan, &wholes, err);
    /* rounds of ROUND_BYTES per rank, alike on every rank (all hold the whole plan) */
    uint32_t nrounds = 0;
    for (size_t i = 0; rc == 0 && i < plan->nchunks; i++) {
        int owner = locales_rank_of(plan->chunks[i].locale);
        round[i] = (uint32_t)(acc[owner] / ROUND_BYTES);
        acc[owner] += chunk_bytes(&plan->chunks[i]);
        nrounds = round[i] + 1 > nrounds ? round[i] + 1 : nrounds;
    }
    round_job rj = {.job = job, .round = round, .made = made, .len = len};
    for (rj.k = 0; rc == 0 && rj.k < nrounds; rj.k++)
        rc = write_round(&rj, err);
    for (size_t i = 0; wholes && i < plan->nchunks; i++) {
        free(wholes[i]);
        plan->chunks[i].whole = NULL;
    }
    free(wholes);
    free(round);
    free(made);
    free(len);
    free(acc);
    return rc;
}

/* A rank other than 0: wait for rank 0's layout, then write this rank's shards into the
 * temporaries; rank 0 renames them once every rank has written. */
static int write_files_rank(const storage_item *items, size_t nitems,
                            const storage_write_options *opts, h5ark_error *err) {
    if (ranks_agree(0, err)) return -1; /* rank 0's checks and layout */
    out_file *of = NULL;
    int nfiles = 0;
    write_plan plan = {.gzip_level = opts ? opts->gzip_level : 0};
    write_job job = {.plan = &plan, .chunks_apart = true};
    int rc = share_plan(items, nitems, &of, &nfiles, &plan, err);
    if (rc == 0) {
        job.files = of;
        int wrc = locale_errors_init(&job.le, err);
        wrc = write_chunks_ranks(&job, &plan, wrc, err);
        if (wrc == 0) {
            locales_run(write_locale, &job);
            wrc = locale_errors_take(&job.le, err);
            if (wrc) h5ark_fail_context(err, "rank %d", ranks_self());
            rc = ranks_agree(wrc, err);
        } else {
            rc = -1;
        }
    }
    locale_errors_free(&job.le);
    write_plan_close(&plan, NULL);
    free(of);
    return rc;
}

/* Whether several ranks write obj: rank 0 lays the files out from metadata, which every
 * rank holds, and from the few elements that say where a SegArray's per-locale files
 * start, fetched first (fetch_layout). Every kind in Arkouda's format is written. */

typedef struct {
    fetched_int64 *v;
    size_t n, cap;
} fetched_list;

static int fetch_add(fetched_list *l, const darray *a, uint64_t i) {
    for (size_t k = 0; k < l->n; k++)
        if (l->v[k].a == a && l->v[k].i == i) return 0;
    fetched_int64 *v = grow_array(l->v, l->n, &l->cap, sizeof *v);
    if (!v) return -1;
    l->v = v;
    const shard *s = &a->shards[darray_shard_of(a, i)];
    l->v[l->n++] = (fetched_int64){
        .a = a, .i = i, .v = s->data ? ((const int64_t *)s->data)[i - s->start] : 0};
    return 0;
}

/* Pass 0: every SegArray's segment at each locale's first row. Pass 1 (after pass 0's
 * values are known): for a SegArray of Strings, the Strings' byte offset at each of those
 * segments, which is where a file's bytes start. */
static int list_layout(const object *obj, int pass, const fetched_list *known, fetched_list *l) {
    const object *seg =
        obj->objtype == H5ARK_SEGARRAY ? object_component_get(obj, CHILD_SEGMENTS) : NULL;
    const object *vals = seg ? object_component_get(obj, CHILD_VALUES) : NULL;
    const darray *a = seg ? seg->values : NULL;
    for (int b = 0; a && b < a->nshards; b++) {
        uint64_t row = a->shards[b].start;
        if (row == 0 || row >= a->size) continue; /* 0, or no row */
        if (pass == 0 && fetch_add(l, a, row)) return -1;
        if (pass == 1 && vals && vals->objtype == H5ARK_STRINGS) {
            for (size_t k = 0; k < known->n; k++)
                if (known->v[k].a == a && known->v[k].i == row && known->v[k].v > 0 &&
                    (uint64_t)known->v[k].v < vals->size &&
                    fetch_add(l, vals->segments, (uint64_t)known->v[k].v))
                    return -1;
        }
    }
    for (size_t i = 0; i < obj->ncomponents; i++)
        if (list_layout(obj->components[i].obj, pass, known, l)) return -1;
    return 0;
}

/* One pass: list the elements, then each comes from the rank holding it (an allreduce:
 * the others give 0). Every rank calls it. */
static int fetch_pass(const storage_item *items, size_t nitems, int pass, const fetched_list *known,
                      fetched_list *l, h5ark_error *err) {
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nitems; i++)
        if (list_layout(items[i].obj, pass, known, l))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t *v = rc == 0 ? sysio.calloc(l->n + 1, sizeof *v) : NULL;
    if (rc == 0 && !v) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    if (rc == 0 && l->n > 0) {
        for (size_t i = 0; i < l->n; i++)
            v[i] = (uint64_t)l->v[i].v;
        rc = ranks_allreduce_u64(v, l->n, RANKS_SUM, err);
        for (size_t i = 0; rc == 0 && i < l->n; i++)
            l->v[i].v = (int64_t)v[i];
    }
    free(v);
    return rc;
}

/* Several ranks, per-locale files: the elements of other ranks' shards rank 0's layout
 * reads (plan_int64_at), fetched before it; every rank calls it. */
static int fetch_layout(const storage_item *items, size_t nitems, write_plan *plan,
                        h5ark_error *err) {
    fetched_list seg = {0}, off = {0};
    int rc = fetch_pass(items, nitems, 0, NULL, &seg, err);
    if (rc == 0) rc = fetch_pass(items, nitems, 1, &seg, &off, err);
    fetched_int64 *all = NULL;
    if (rc == 0 && !(all = sysio.calloc(seg.n + off.n + 1, sizeof *all)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) {
        if (seg.n) memcpy(all, seg.v, seg.n * sizeof *all);
        if (off.n) memcpy(all + seg.n, off.v, off.n * sizeof *all);
    }
    free(seg.v);
    free(off.v);
    /* the memory is local: whether every rank has it is agreed, as rank 0 alone uses it */
    rc = ranks_agree(rc, err);
    if (rc) {
        free(all);
        return -1;
    }
    plan->fetched = all;
    plan->nfetched = seg.n + off.n;
    return 0;
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
    return storage_write_ex(items, nitems, path, mode, file_type, NULL, files, warnings, err);
}

/* Several ranks writing awkward0's layout: every item's buffers whole on rank 0. */
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

static int write_files(const storage_item *items, size_t nitems, const char *path,
                       storage_mode mode, storage_file_type file_type,
                       const storage_write_options *opts, h5ark_value *files, h5ark_value *warnings,
                       h5ark_error *err) {
    h5u_quiet();
    h5u_io_clear();
    bool distributed = file_type == STORAGE_DISTRIBUTE;
    bool append = mode == STORAGE_APPEND, update = mode == STORAGE_UPDATE;
    bool df_columns = opts && opts->dataframe_columns;
    int nfiles = distributed ? locales_count() : 1;
    top_names names = {0};
    /* several ranks: these checks read metadata only, alike on every rank */
    bool ranks = ranks_call_seq() != 0;
    if (check_items(items, nitems, df_columns, &names, err)) {
        free(names.v);
        return -1;
    }
    for (size_t i = 0; opts && opts->strings_without_segments && i < nitems; i++)
        if (items[i].obj->objtype == H5ARK_STRINGS &&
            strings_check_without_segments(items[i].obj, items[i].dataset, err)) {
            free(names.v);
            return -1;
        }
    write_plan fetched = {0}; /* what rank 0 lays out from other ranks' shards */
    if (ranks && distributed && fetch_layout(items, nitems, &fetched, err)) {
        free(names.v);
        return -1;
    }
    /* awkward0's blobs are each made whole from a buffer: rank 0 gathers them first */
    ak0_gathered ak0 = {0};
    if (ranks && opts && opts->awkward0 && ak0_gather_items(items, nitems, &ak0, err)) {
        free(names.v);
        return -1;
    }
    if (ranks && ranks_self() != 0) {
        ak0_gathered_free(&ak0);
        free(names.v);
        free((void *)fetched.fetched);
        return write_files_rank(items, nitems, opts, err);
    }
    bool layout_pending = ranks; /* the other ranks wait to hear how the layout went */
    out_file *of = sysio.calloc((size_t)nfiles, sizeof *of);
    locale_set existing = {0};
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
    int rc = -1;
    if (!of) {
        ak0_gathered_free(&ak0);
        free(names.v);
        free((void *)fetched.fetched);
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return ranks ? ranks_agree(-1, err) : -1;
    }
    for (int i = 0; i < nfiles; i++)
        of[i].h5 = H5I_INVALID_HID;

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
        f->exists = sysio.lstat(f->final, &st) == 0;
        /* not knowing is not "missing": an append would drop the old contents */
        if (!f->exists && errno != ENOENT) {
            h5ark_fail(err, H5ARK_IO_ERROR, "cannot look at '%s': %s", f->rel, strerror(errno));
            goto out;
        }
    }
    if (distributed && !of[0].dir_missing && find_locale_set(path, &existing, err)) goto out;

    /* 2. the write mode's rules, before anything is written */
    if (update)
        for (int i = 0; i < nfiles; i++)
            if (!of[i].exists) {
                h5ark_fail(err, H5ARK_NOT_FOUND,
                           "cannot update '%s': the file does not exist; nothing was written",
                           of[i].rel);
                goto out;
            }
    if ((append || update) && distributed && existing.n > 0) {
        bool match = existing.n == (size_t)nfiles;
        for (int i = 0; i < nfiles; i++)
            match = match && of[i].exists;
        if (!match) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "cannot %s '%s': %zu _LOCALE files of it exist, but this daemon "
                       "writes %d (one per locale); nothing was written",
                       update ? "update" : "append to", path, existing.n, nfiles);
            goto out;
        }
    }
    if (append || update)
        for (int i = 0; i < nfiles; i++)
            if (of[i].exists && check_collisions(&of[i], &names, update, err)) goto out;

    /* 3. build every file beside its final name, then the locales write the data */
    for (int i = 0; i < nfiles; i++) {
        out_file *f = &of[i];
        if (f->dir_missing && files_resolve(f->rel, true, f->final, err)) goto out;
        if (build_file(f, i, mode, distributed, items, nitems, &names, &plan, err)) goto out;
    }
    /* several ranks: each writes its own shards into the files laid out here */
    if (ranks) {
        layout_pending = false;
        if (ranks_agree(0, err) || share_plan(items, nitems, &of, &nfiles, &plan, err)) goto out;
    }
    int wrc = locale_errors_init(&job.le, err);
    if (mode == STORAGE_TRUNCATE) drop_cached_pages(of, nfiles);
    progress_start(progress_here(), PROGRESS_BYTES, plan_bytes(&plan));
    if (ranks) {
        job.chunks_apart = true;
        if (write_chunks_ranks(&job, &plan, wrc, err)) goto out;
    }
    if (wrc == 0) {
        locales_run(write_locale, &job);
        wrc = locale_errors_take(&job.le, err);
    }
    /* every rank has written its part, or none of the files is put in place */
    if (ranks) wrc = ranks_agree(wrc, err);
    if (wrc) goto out;
    if (write_plan_close(&plan, err) || close_files(of, nfiles, err)) goto out;

    /* 4. put them in place, as one; with them go the files of an earlier write with more
     * locales, which would otherwise be read back as part of this set. The commit takes the
     * readers' lock of file sets, which comes before twin's: twin's is let go meanwhile
     * (nothing is open now). */
    {
        const char *tmps[nfiles], *finals[nfiles], *extra[existing.n + 1];
        int nextra = 0;
        for (int i = 0; i < nfiles; i++) {
            tmps[i] = of[i].tmp;
            finals[i] = of[i].final;
            of[i].tmp_made = false; /* the commit renames or removes every one */
        }
        if (distributed && mode == STORAGE_TRUNCATE)
            for (size_t i = 0; i < existing.n; i++)
                if (existing.numbers[i] >= nfiles) extra[nextra++] = existing.paths[i];
        twin_readers_leave();
        int crc = commit_set(tmps, finals, nfiles, extra, nextra, err);
        twin_readers_enter();
        if (crc) goto out;
        rc = 0;
        for (int i = 0; i < nfiles && rc == 0; i++) {
            rc = add_str(files, "%s", files_display(of[i].final), err);
            if (rc == 0 && mode == STORAGE_TRUNCATE && of[i].exists)
                rc = add_str(warnings, "overwrote the existing file '%s'", of[i].rel, err);
        }
        for (int i = 0; i < nextra && rc == 0; i++)
            rc = add_str(warnings,
                         "removed '%s', left by an earlier write with more locales, so that it "
                         "is not read back as part of this file set",
                         files_display(extra[i]), err);
    }
out:
    if (layout_pending) ranks_agree(-1, err); /* the lowest failing rank: this one */
    ak0_gathered_free(&ak0);
    write_plan_close(&plan, NULL);
    close_files(of, nfiles, NULL);
    for (int i = 0; i < nfiles; i++)
        if (of[i].tmp_made) remove_temp(of[i].tmp);
    locale_errors_free(&job.le);
    locale_set_free(&existing);
    free(of);
    free(names.v);
    free((void *)fetched.fetched);
    return rc;
}

static int repack_files(char *const *paths, size_t npaths, h5ark_value *files, uint64_t *before,
                        uint64_t *after, h5ark_error *err) {
    h5u_quiet();
    *before = *after = 0;
    progress_sink *progress = progress_here();
    progress_start(progress, PROGRESS_FILES, npaths);
    for (size_t i = 0; i < npaths; i++) {
        const char *shown = files_display(paths[i]);
        struct stat st;
        if (stat(paths[i], &st) != 0)
            return h5ark_fail(err, errno == ENOENT ? H5ARK_NOT_FOUND : H5ARK_IO_ERROR,
                              "repack: '%s': %s", shown, strerror(errno));
        if (!S_ISREG(st.st_mode))
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "repack: '%s' is not a file", shown);
        if (sandbox_check_file(paths[i], err))
            return h5ark_fail_context(err, "repack: '%s'", shown);
        htri_t hdf5 = h5u_is_hdf5(paths[i]);
        if (hdf5 <= 0) {
            H5Eclear2(H5E_DEFAULT);
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "repack: '%s' is not an HDF5 file", shown);
        }
        char tmp[PATH_MAX];
        if (files_temp_name(paths[i], tmp, sizeof tmp))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "repack: '%s': path too long", shown);
        hid_t src = H5Fopen(paths[i], H5F_ACC_RDONLY, h5u_fapl());
        if (src < 0)
            return h5u_fail(err, H5ARK_SCHEMA_ERROR, "repack: '%s' cannot be opened", shown);
        hid_t dst = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, h5u_fapl());
        int rc = dst < 0 ? h5u_fail(err, H5ARK_IO_ERROR, "repack: cannot create a file beside '%s'",
                                    shown)
                         : copy_contents(src, dst, shown, err);
        H5Fclose(src);
        if (dst >= 0 && h5u_close_written(dst) && rc == 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "repack: cannot write the new '%s'", shown);
        if (rc == 0) rc = commit_file(tmp, paths[i], err);
        if (rc) {
            remove_temp(tmp);
            return -1;
        }
        struct stat st2;
        *before += (uint64_t)st.st_size;
        *after += stat(paths[i], &st2) == 0 ? (uint64_t)st2.st_size : 0;
        if (add_str(files, "%s", shown, err)) return -1;
        progress_add(progress, 1);
    }
    return 0;
}

/* Files read while no part's change is being repeated on an old file (twin.h). */
int storage_write_ex(const storage_item *items, size_t nitems, const char *path, storage_mode mode,
                     storage_file_type file_type, const storage_write_options *opts,
                     h5ark_value *files, h5ark_value *warnings, h5ark_error *err) {
    twin_readers_enter();
    int rc = write_files(items, nitems, path, mode, file_type, opts, files, warnings, err);
    twin_readers_leave();
    return rc;
}

/* Files read while no part's change is being repeated on an old file (twin.h). */
int storage_repack(char *const *paths, size_t npaths, h5ark_value *files, uint64_t *before,
                   uint64_t *after, h5ark_error *err) {
    twin_readers_enter();
    int rc = repack_files(paths, npaths, files, before, after, err);
    twin_readers_leave();
    return rc;
}
