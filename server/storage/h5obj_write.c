/* The HSDS API's changes to files (HSDS_API.md §6-9, §11): each request atomic and durable
 * on its own. A change inside a file is made to its twin (twin.h), which keeps every object's
 * address, hence its id, and is swapped in whole; a new file is written beside its name and
 * linked in; changes to a file are serialised with its every writer (twin_changes_lock). Anonymous
 * objects wait in the root's /.h5ark-unlinked until they are linked. */
#include "storage/h5obj_int.h"

#include "storage/files.h"
#include "storage/temp_names.h"
#include "storage/hdf5_util.h"
#include "storage/owners.h"
#include "storage/twin.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK_BASE (16 * 1024) /* h5py's chunk guess */
#define CHUNK_MIN  (8 * 1024)
#define CHUNK_MAX  (1024 * 1024)
#define NEW_NAME   "h5ark-new"

static int oom(h5ark_error *err) {
    return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

/* ---- a file being changed ------------------------------------------------------------ */

typedef struct {
    h5obj_file f;
    twin_change tc;
    bool twinned;
    const file_access *fa; /* whose quota.disk the changed file must fit */
} wfile;

static int wopen(const h5obj_args *a, wfile *w, h5ark_error *err) {
    const char *domain = a->domain;
    w->twinned = false;
    w->fa = a->fa;
    if (h5obj_locate(a, PERM_UPDATE, &w->f, err)) return -1;
    if (h5u_is_hdf5(w->f.abs) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "domain '%s' is not an HDF5 file", domain);
    }
    if (twin_begin(&w->tc, w->f.abs, domain, err)) return -1;
    w->twinned = true;
    h5u_io_clear();
    w->f.fid = H5Fopen(w->tc.twin, H5F_ACC_RDWR, h5u_fapl());
    if (w->f.fid < 0) {
        h5u_fail(err, H5ARK_BAD_REQUEST, "cannot open '%s' to change it", domain);
        h5u_io_blame(H5I_INVALID_HID, err);
        twin_abort(&w->tc);
        w->twinned = false;
        return -1;
    }
    return 0;
}

/* Put the change in place (commit) or throw it away; a write the driver saw fail fails it. */
static int wclose(wfile *w, bool commit, h5ark_error *err) {
    int rc = 0;
    if (w->f.fid >= 0 && commit) {
        h5ark_error seen = {.code = H5ARK_INTERNAL};
        snprintf(seen.message, sizeof seen.message, "cannot write '%.900s'", w->f.domain);
        h5u_io_blame(w->f.fid, &seen);
        if (seen.code != H5ARK_INTERNAL) {
            *err = seen;
            rc = -1;
            commit = false;
        }
    }
    if (w->f.fid >= 0 && h5u_close_written(w->f.fid) && commit) {
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write '%s'", w->f.domain);
        commit = false;
    }
    w->f.fid = H5I_INVALID_HID;
    if (!w->twinned) return rc;
    w->twinned = false;
    struct stat st; /* the changed file fits quota.disk, or the old one stays */
    if (commit &&
        (stat(w->tc.twin, &st) != 0 || owners_room(w->fa, w->f.abs, (uint64_t)st.st_size, err)))
        rc = -1, commit = false;
    if (!commit) {
        twin_abort(&w->tc);
        return rc ? rc : -1;
    }
    return twin_commit(&w->tc, err);
}

static json_t *parse_body(const h5obj_args *a, bool required, h5ark_error *err) {
    if (!a->body || a->body_len == 0) {
        if (required) h5ark_fail(err, H5ARK_BAD_REQUEST, "the request needs a JSON body");
        return required ? NULL : json_object();
    }
    json_error_t je;
    json_t *j = json_loadb(a->body, a->body_len, JSON_ALLOW_NUL, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        h5ark_fail(err, H5ARK_BAD_REQUEST, "the body is not a JSON object (%s)",
                   j ? "another value" : je.text);
        return NULL;
    }
    return j;
}

static int check_name(const char *name, h5ark_error *err) {
    if (!name || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0 || strcmp(name, H5OBJ_HOLD) == 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%.100s' is not a valid name", name ? name : "");
    return 0;
}

static void sync_dir_of(const char *path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* ---- domains ------------------------------------------------------------------------ */

static bool wants_order(const json_t *cp) {
    json_t *o = json_object_get(cp, "CreateOrder");
    return json_is_true(o) || (json_is_integer(o) && json_integer_value(o) != 0);
}

static hid_t group_plist(bool order) {
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    if (gcpl >= 0 && order) {
        H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
        H5Pset_attr_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    }
    return gcpl;
}

/* The bytes an empty file made with fcpl takes, found by making it in memory. */
static uint64_t empty_file_size(hid_t fcpl) {
    hid_t fapl = H5Pcopy(h5u_fapl());
    ssize_t size = 0;
    if (fapl >= 0 && H5Pset_fapl_core(fapl, 4096, false) >= 0) {
        hid_t fid = H5Fcreate("h5ark-empty-size", H5F_ACC_TRUNC, fcpl, fapl);
        /* the image's size, not the memory the driver took for it */
        if (fid >= 0 &&
            (H5Fflush(fid, H5F_SCOPE_LOCAL) < 0 || (size = H5Fget_file_image(fid, NULL, 0)) < 0))
            size = 0;
        if (fid >= 0) H5Fclose(fid);
    }
    if (fapl >= 0) H5Pclose(fapl);
    H5Eclear2(H5E_DEFAULT);
    return (uint64_t)size;
}

/* A new empty file, written beside its name, synced and linked in (never over another). */
static int put_domain(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    json_t *body = parse_body(a, false, err);
    if (!body) return -1;
    json_t *flush = json_object_get(body, "flush");
    if (json_is_true(flush) || (json_is_integer(flush) && json_integer_value(flush))) {
        json_decref(body); /* every request is durable already */
        h5obj_file f;
        return h5obj_locate(a, PERM_READ, &f, err) ? -1 : h5obj_get_domain(a, out, err);
    }
    bool order = wants_order(json_object_get(json_object_get(body, "group"), "creationProperties"));
    json_t *folder = json_object_get(body, "folder");
    bool is_folder =
        json_is_true(folder) || (json_is_integer(folder) && json_integer_value(folder));
    json_decref(body);
    if (is_folder) return h5obj_folder_put(a, out, err);
    char abs[PATH_MAX], tmp[PATH_MAX];
    struct stat st;
    if (h5obj_check_domain(a->domain, err)) return -1;
    if (a->domain[strlen(a->domain) - 1] == '/')
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "a domain names a file, not a folder");
    if (h5obj_is_folder(a))
        return h5ark_fail(err, H5ARK_ALREADY_EXISTS, "'%s' exists, a folder", a->domain);
    if (h5obj_resolve(a, PERM_CREATE, true, abs, err)) return -1;
    if (stat(abs, &st) == 0)
        return h5ark_fail(err, H5ARK_ALREADY_EXISTS, "domain '%s' exists", a->domain);
    if (temp_name_for(abs, tmp, sizeof tmp))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the domain is too long");
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (fcpl >= 0 && order) {
        H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
        H5Pset_attr_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    }
    if (fcpl >= 0 && owners_room(a->fa, abs, empty_file_size(fcpl), err)) {
        H5Pclose(fcpl);
        return -1;
    }
    h5u_io_clear();
    hid_t fid = fcpl >= 0 ? H5Fcreate(tmp, H5F_ACC_EXCL, fcpl, h5u_fapl()) : -1;
    if (fcpl >= 0) H5Pclose(fcpl);
    int rc = fid < 0 ? h5u_fail(err, H5ARK_IO_ERROR, "cannot create '%s'", a->domain)
                     : (h5u_close_written(fid)
                            ? h5u_fail(err, H5ARK_IO_ERROR, "cannot write '%s'", a->domain)
                            : 0);
    int fd = rc == 0 ? open(tmp, O_RDONLY | O_CLOEXEC) : -1;
    if (rc == 0 && (fd < 0 || fsync(fd) != 0))
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot sync '%s': %s", a->domain, strerror(errno));
    if (fd >= 0) close(fd);
    if (rc == 0 && link(tmp, abs) != 0)
        rc = errno == EEXIST
                 ? h5ark_fail(err, H5ARK_ALREADY_EXISTS, "domain '%s' exists", a->domain)
                 : h5ark_fail(err, H5ARK_IO_ERROR, "cannot create '%s': %s", a->domain,
                              strerror(errno));
    unlink(tmp);
    if (rc) return -1;
    sync_dir_of(abs);
    /* its creator's from now on (quota.disk counts it); unrecorded, it is not made */
    const char *made[] = {abs};
    if (owners_created(a->fa ? a->fa->user : NULL, made, 1, err)) {
        unlink(abs);
        sync_dir_of(abs);
        return -1;
    }
    out->created = true;
    return h5obj_get_domain(a, out, err);
}

static int delete_domain(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    char abs[PATH_MAX];
    struct stat st;
    if (h5obj_check_domain(a->domain, err)) return -1;
    if (h5obj_is_folder(a)) return h5obj_folder_delete(a, out, err);
    if (h5obj_resolve(a, PERM_DELETE, false, abs, err)) return -1;
    if (stat(abs, &st) != 0 || !S_ISREG(st.st_mode))
        return h5ark_fail(err, H5ARK_NOT_FOUND, "domain '%s' not found", a->domain);
    if (unlink(abs) != 0)
        return h5ark_fail(err, errno == ENOENT ? H5ARK_NOT_FOUND : H5ARK_IO_ERROR,
                          "cannot remove '%s': %s", a->domain, strerror(errno));
    twin_drop(abs);
    h5obj_forget(abs);
    sync_dir_of(abs);
    /* the record then names no one for it (an entry left behind counts nothing) */
    const char *gone[] = {abs};
    owners_deleted(gone, 1, &(h5ark_error){0});
    out->json = h5ark_value_map();
    return out->json ? 0 : oom(err);
}

/* ---- objects ------------------------------------------------------------------------- */

/* Link a new object: under its parent's name, or anonymously in the holding group under its
 * id (the object made as NEW_NAME there first, its address unknown until made). */
static int place_new(wfile *w, const json_t *link, hid_t *parent, const char **name,
                     h5ark_error *err) {
    if (link) {
        const char *pid = json_string_value(json_object_get(link, "id"));
        *name = json_string_value(json_object_get(link, "name"));
        if (!pid || check_name(*name, err)) {
            return err->code ? -1 : h5ark_fail(err, H5ARK_BAD_REQUEST, "link: {\"id\", \"name\"}");
        }
        if ((*parent = h5obj_open_id(&w->f, pid, H5OBJ_GROUPS, NULL, err)) < 0) return -1;
        if (H5Lexists(*parent, *name, H5P_DEFAULT) > 0)
            return h5ark_fail(err, H5ARK_ALREADY_EXISTS, "link '%s' exists", *name);
        return 0;
    }
    *name = NEW_NAME;
    htri_t there = H5Lexists(w->f.fid, H5OBJ_HOLD, H5P_DEFAULT);
    *parent = there > 0 ? H5Gopen2(w->f.fid, H5OBJ_HOLD, H5P_DEFAULT)
                        : H5Gcreate2(w->f.fid, H5OBJ_HOLD, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    return *parent < 0 ? h5u_fail(err, H5ARK_IO_ERROR, "cannot make the holding group") : 0;
}

/* An anonymous object made: renamed to its id in the holding group. */
static int name_held(wfile *w, hid_t parent, hid_t obj, h5ark_error *err) {
    h5ark_value *desc = NULL;
    if (h5obj_describe(&w->f, obj, &desc, err)) return -1;
    const char *id = h5ark_value_get(desc, "id")->as.s.ptr;
    int rc = H5Lmove(parent, NEW_NAME, parent, id, H5P_DEFAULT, H5P_DEFAULT) < 0
                 ? h5u_fail(err, H5ARK_IO_ERROR, "cannot hold the new object")
                 : 0;
    h5ark_value_destroy(&desc);
    return rc;
}

/* After a new object's creation (obj < 0 when it failed, rc saying why): the object held
 * under its id when it has no link, described into the answer, and closed with its parent,
 * their changes written ("cannot write the WHAT"). */
static int finish_new(wfile *w, const json_t *link, hid_t parent, hid_t obj, int rc,
                      const char *what, h5obj_answer *out, h5ark_error *err) {
    if (rc == 0 && !link) rc = name_held(w, parent, obj, err);
    if (rc == 0) rc = h5obj_describe(&w->f, obj, &out->json, err);
    out->created = true;
    if (obj >= 0 && h5u_close_written(obj) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write the %s", what);
    if (parent >= 0 && h5u_close_written(parent) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write the %s", what);
    return rc;
}

static int post_group(wfile *w, const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    json_t *body = parse_body(a, false, err);
    if (!body) return -1;
    const json_t *link = json_object_get(body, "link");
    hid_t parent = -1, g = -1,
          gcpl = group_plist(wants_order(json_object_get(body, "creationProperties")));
    const char *name;
    int rc = place_new(w, link, &parent, &name, err);
    if (rc == 0 && (g = H5Gcreate2(parent, name, H5P_DEFAULT, gcpl, H5P_DEFAULT)) < 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot create the group");
    rc = finish_new(w, link, parent, g, rc, "group", out, err);
    if (gcpl >= 0) H5Pclose(gcpl);
    json_decref(body);
    return rc;
}

/* h5py's guess of a chunk shape for a dataset that can grow or is filtered. */
static void guess_chunk(int rank, const hsize_t *dims, size_t typesize, hsize_t *chunk) {
    double c[H5S_MAX_RANK], n = 1;
    for (int i = 0; i < rank; i++) {
        c[i] = dims[i] ? (double)dims[i] : 1024;
        n *= c[i];
    }
    double target = CHUNK_BASE * pow(2, log10(n * (double)typesize / (1024.0 * 1024)));
    target = target > CHUNK_MAX ? CHUNK_MAX : target < CHUNK_MIN ? CHUNK_MIN : target;
    for (int idx = 0;; idx++) {
        double bytes = (double)typesize;
        for (int i = 0; i < rank; i++)
            bytes *= c[i];
        if ((bytes < target || fabs(bytes - target) / target < 0.5) && bytes < CHUNK_MAX) break;
        if (bytes <= (double)typesize) break;
        c[idx % rank] = ceil(c[idx % rank] / 2.0);
    }
    for (int i = 0; i < rank; i++)
        chunk[i] = (hsize_t)c[i];
}

/* The dataset's creation properties from its creationProperties and shape; maxdims given
 * (even as the shape) makes it chunked, as h5py and HSDS make it. */
static hid_t dataset_plist(const json_t *cp, hid_t type, int rank, const hsize_t *dims,
                           const hsize_t *max, bool maxdims, bool null, h5ark_error *err) {
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl < 0) return h5u_fail(err, H5ARK_INTERNAL, "cannot make a property list"), -1;
    const json_t *layout = json_object_get(cp, "layout"), *filters = json_object_get(cp, "filters");
    const json_t *cdims = json_object_get(layout, "dims");
    bool grows = false;
    for (int i = 0; i < rank; i++)
        grows |= max[i] != dims[i];
    int rc = 0;
    hsize_t chunk[H5S_MAX_RANK];
    bool chunked =
        json_array_size(cdims) || json_array_size(filters) || grows || (maxdims && rank > 0);
    if (chunked && (null || rank == 0))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "a scalar or null dataset is not chunked");
    else if (json_array_size(cdims)) {
        if ((int)json_array_size(cdims) != rank)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "layout: chunk dims of another rank");
        for (int i = 0; rc == 0 && i < rank; i++) {
            json_int_t c = json_integer_value(json_array_get(cdims, (size_t)i));
            if (c < 1)
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "layout: chunk axes are at least 1");
            else if (max[i] != H5S_UNLIMITED && (hsize_t)c > max[i])
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                                "layout: chunk axis %d is larger than the dataset can be", i);
            chunk[i] = (hsize_t)c;
        }
    } else if (chunked) {
        /* the whole extent when it cannot grow and is small, as HSDS does; else h5py's guess */
        size_t size = H5Tget_size(type);
        uint64_t bytes = size;
        for (int i = 0; i < rank; i++) {
            bytes *= dims[i];
            chunk[i] = dims[i] ? dims[i] : 1;
        }
        if (grows || bytes > CHUNK_MAX) guess_chunk(rank, dims, size, chunk);
    }
    if (rc == 0 && chunked && H5Pset_chunk(dcpl, rank, chunk) < 0)
        rc = h5u_fail(err, H5ARK_BAD_REQUEST, "layout: cannot chunk so");
    for (size_t i = 0; rc == 0 && i < json_array_size(filters); i++) {
        const json_t *f = json_array_get(filters, i);
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *cls = json_string_value(json_object_get(f, "class"));
        json_int_t id = json_integer_value(json_object_get(f, "id"));
        if (json_is_string(f)) name = json_string_value(f);
        bool gzip = id == 1 || (name && (!strcmp(name, "gzip") || !strcmp(name, "deflate"))) ||
                    (cls && !strcmp(cls, "H5Z_FILTER_DEFLATE"));
        bool shuffle = id == 2 || (name && !strcmp(name, "shuffle")) ||
                       (cls && !strcmp(cls, "H5Z_FILTER_SHUFFLE"));
        bool fletcher = id == 3 || (name && !strcmp(name, "fletcher32")) ||
                        (cls && !strcmp(cls, "H5Z_FILTER_FLETCHER32"));
        json_t *level = json_object_get(f, "level");
        if (gzip)
            rc = H5Pset_deflate(dcpl,
                                json_is_integer(level) ? (unsigned)json_integer_value(level) : 4);
        else if (shuffle)
            rc = H5Pset_shuffle(dcpl);
        else if (fletcher)
            rc = H5Pset_fletcher32(dcpl);
        else
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "filter '%.40s' is not one h5ark applies",
                            name  ? name
                            : cls ? cls
                                  : "?");
        if (rc < 0 && !err->code) rc = h5u_fail(err, H5ARK_BAD_REQUEST, "cannot apply a filter");
    }
    const json_t *fill = json_object_get(cp, "fillValue");
    if (rc == 0 && fill && !json_is_null(fill)) {
        bool vlen;
        hid_t wire = h5obj_wire_type(type, &vlen, err);
        void *buf = wire >= 0 ? calloc(1, H5Tget_size(wire)) : NULL;
        if (vlen)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "a fill value of variable-length strings");
        else if (!buf || h5obj_values_from_json(wire, fill, buf, NULL, 0, err) ||
                 H5Pset_fill_value(dcpl, wire, buf) < 0)
            rc = err->code ? -1 : h5u_fail(err, H5ARK_BAD_REQUEST, "cannot set the fill value");
        free(buf);
        if (wire >= 0) H5Tclose(wire);
    }
    const char *ft = json_string_value(json_object_get(cp, "fillTime"));
    if (rc == 0 && ft) { /* h5pyd asks ALLOC for chunked datasets */
        H5D_fill_time_t when = !strcmp(ft, "H5D_FILL_TIME_ALLOC")   ? H5D_FILL_TIME_ALLOC
                               : !strcmp(ft, "H5D_FILL_TIME_NEVER") ? H5D_FILL_TIME_NEVER
                               : !strcmp(ft, "H5D_FILL_TIME_IFSET") ? H5D_FILL_TIME_IFSET
                                                                    : H5D_FILL_TIME_ERROR;
        if (when == H5D_FILL_TIME_ERROR || H5Pset_fill_time(dcpl, when) < 0)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "fillTime: '%.40s' is not one", ft);
    }
    if (rc == 0 && wants_order(cp))
        H5Pset_attr_creation_order(dcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    if (rc) {
        H5Pclose(dcpl);
        return -1;
    }
    return dcpl;
}

static int post_dataset(wfile *w, const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    json_t *body = parse_body(a, true, err);
    if (!body) return -1;
    int rank;
    hsize_t dims[H5S_MAX_RANK], max[H5S_MAX_RANK];
    bool null;
    hid_t type = -1, space = -1, dcpl = -1, parent = -1, d = -1;
    const json_t *link = json_object_get(body, "link");
    const char *name;
    int rc = (type = h5obj_make_type(json_object_get(body, "type"), err)) < 0 ? -1 : 0;
    if (rc == 0)
        rc = h5obj_make_shape(json_object_get(body, "shape"), json_object_get(body, "maxdims"),
                              &rank, dims, max, &null, err);
    if (rc == 0) {
        space = null        ? H5Screate(H5S_NULL)
                : rank == 0 ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(rank, dims, max);
        const json_t *maxdims = json_object_get(body, "maxdims");
        dcpl = dataset_plist(json_object_get(body, "creationProperties"), type, rank, dims, max,
                             maxdims && !json_is_null(maxdims), null, err);
        rc = space < 0 || dcpl < 0 ? -1 : 0;
        if (rc && !err->code) h5u_fail(err, H5ARK_BAD_REQUEST, "cannot make that shape");
    }
    if (rc == 0) rc = place_new(w, link, &parent, &name, err);
    if (rc == 0 && (d = H5Dcreate2(parent, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0)
        rc = h5u_fail(err, H5ARK_BAD_REQUEST, "cannot create the dataset");
    rc = finish_new(w, link, parent, d, rc, "dataset", out, err);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    json_decref(body);
    return rc;
}

/* ---- links ---------------------------------------------------------------------------- */

/* One link NAME of g by its JSON: {"id"}, {"h5path"} or {"h5path", "h5domain"}. */
static int link_one(wfile *w, hid_t g, const char *name, const json_t *body, h5ark_error *err) {
    if (check_name(name, err)) return -1;
    const char *id = json_string_value(json_object_get(body, "id"));
    const char *path = json_string_value(json_object_get(body, "h5path"));
    const char *file = json_string_value(json_object_get(body, "h5domain"));
    int rc = 0;
    if (H5Lexists(g, name, H5P_DEFAULT) > 0)
        rc = h5ark_fail(err, H5ARK_ALREADY_EXISTS, "link '%s' exists", name);
    else if (id) {
        if (strlen(id) == H5OBJ_ID_LEN && strncmp(id + 2, w->f.prefix, 17) != 0)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%s is an object of another domain", id);
        hid_t obj = rc ? -1 : h5obj_open_id(&w->f, id, H5OBJ_ANY, NULL, err);
        if (obj < 0 || H5Lcreate_hard(obj, ".", g, name, H5P_DEFAULT, H5P_DEFAULT) < 0)
            rc = err->code ? -1 : h5u_fail(err, H5ARK_IO_ERROR, "cannot link '%s'", name);
        if (obj >= 0) H5Oclose(obj);
        char held[PATH_MAX];
        snprintf(held, sizeof held, "/%s/%s", H5OBJ_HOLD, id);
        if (rc == 0 && H5Lexists(w->f.fid, H5OBJ_HOLD, H5P_DEFAULT) > 0 &&
            H5Lexists(w->f.fid, held, H5P_DEFAULT) > 0) {
            H5G_info_t gi;
            if (H5Ldelete(w->f.fid, held, H5P_DEFAULT) < 0 ||
                (H5Gget_info_by_name(w->f.fid, H5OBJ_HOLD, &gi, H5P_DEFAULT) >= 0 &&
                 gi.nlinks == 0 && H5Ldelete(w->f.fid, H5OBJ_HOLD, H5P_DEFAULT) < 0))
                rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot release the held object");
        }
    } else if (path && file) {
        if (H5Lcreate_external(file, path, g, name, H5P_DEFAULT, H5P_DEFAULT) < 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot link '%s'", name);
    } else if (path) {
        if (H5Lcreate_soft(path, g, name, H5P_DEFAULT, H5P_DEFAULT) < 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot link '%s'", name);
    } else {
        rc =
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "link '%.100s': {\"id\"}, {\"h5path\"} or {\"h5path\", \"h5domain\"}", name);
    }
    return rc;
}

/* PUT .../links/NAME, or PUT .../links {"links": {NAME: link, ...}}: all or none (a
 * failure throws the whole change away). */
static int put_link(wfile *w, hid_t g, const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    if (a->name && check_name(a->name, err)) return -1;
    json_t *body = parse_body(a, true, err);
    if (!body) return -1;
    int rc = 0;
    if (a->name) {
        rc = link_one(w, g, a->name, body, err);
    } else {
        const json_t *all = json_object_get(body, "links");
        const char *name;
        json_t *spec;
        if (!json_is_object(all) || json_object_size(all) == 0)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the body is {\"links\": {NAME: link, ...}}");
        json_object_foreach((json_t *)all, name, spec) {
            if (rc == 0) rc = link_one(w, g, name, spec, err);
        }
    }
    json_decref(body);
    out->created = true;
    return rc;
}

/* The names of a DELETE of several (a->names, split at a->sep), each checked; a list of
 * pointers into *copy, both malloc'd. */
static int split_names(const h5obj_args *a, char **copy, char ***names, size_t *n,
                       h5ark_error *err) {
    const char *sep = a->sep && a->sep[0] ? a->sep : "/";
    size_t seplen = strlen(sep), cap = 1;
    *names = NULL;
    *n = 0;
    if (!a->names || !a->names[0])
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the names to delete are missing");
    for (const char *p = strstr(a->names, sep); p; p = strstr(p + seplen, sep))
        cap++;
    if (!(*copy = strdup(a->names)) || !(*names = calloc(cap, sizeof **names))) return oom(err);
    for (char *p = *copy;;) {
        char *next = strstr(p, sep);
        if (next) *next = '\0';
        (*names)[(*n)++] = p;
        if (check_name(p, err)) return -1;
        if (!next) return 0;
        p = next + seplen;
    }
}

/* One link or attribute (name), or several (names): all or none, one missing is
 * not_found. */
static int delete_named(hid_t obj, const h5obj_args *a, bool attrs, h5ark_error *err) {
    char *copy = NULL, **names = NULL, *one[1] = {(char *)a->name};
    size_t n = 1;
    int rc = a->name ? check_name(a->name, err) : split_names(a, &copy, &names, &n, err);
    char **list = a->name ? one : names;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *name = list[i];
        if ((attrs ? H5Aexists(obj, name) : H5Lexists(obj, name, H5P_DEFAULT)) <= 0)
            rc = h5ark_fail(err, H5ARK_NOT_FOUND, "%s '%s' not found", attrs ? "attribute" : "link",
                            name);
        else if ((attrs ? H5Adelete(obj, name) : H5Ldelete(obj, name, H5P_DEFAULT)) < 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot remove %s '%s'",
                          attrs ? "attribute" : "link", name);
    }
    free(names);
    free(copy);
    return rc;
}

/* ---- values and shapes ------------------------------------------------------------- */

/* The body's elements for n elements of `wire` (strings malloc'd, h5obj_vlen.c). */
static int body_elements(const h5obj_args *a, hid_t wire, bool vlen, uint64_t n,
                         const hsize_t *rdims, int rrank, char *buf, h5ark_error *err) {
    size_t size = H5Tget_size(wire);
    uint64_t given = a->element_count ? 1 : n;
    json_t *body = NULL, *v = NULL;
    if (!a->body_binary) {
        body = parse_body(a, true, err);
        v = body ? json_object_get(body, "value") : NULL;
        if (!v) {
            json_decref(body);
            return body ? h5ark_fail(err, H5ARK_BAD_REQUEST, "the body has no value") : -1;
        }
    } else if (!vlen && a->body_len != given * size) {
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "the body is %zu bytes; %llu elements of %zu bytes were expected",
                          a->body_len, (unsigned long long)given, size);
    }
    /* one element everywhere: read from the body for each, so every string is its own */
    uint64_t times = a->element_count && vlen ? n : 1;
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < times; i++) {
        char *at = buf + i * size;
        if (v)
            rc = h5obj_values_from_json(wire, v, at, rdims, a->element_count ? 0 : rrank, err);
        else if (vlen)
            rc = h5obj_vlen_from_binary(wire, a->body, a->body_len, given, at, err);
        else
            memcpy(at, a->body, a->body_len);
    }
    json_decref(body);
    for (uint64_t i = 1; rc == 0 && a->element_count && !vlen && i < n; i++)
        memcpy(buf + i * size, buf, size);
    return rc;
}

static int put_value(hid_t d, const h5obj_args *a, h5ark_error *err) {
    h5obj_values v;
    int rc = h5obj_values_begin(d, a, H5OBJ_MAX_REQUEST * 2, &v, err);
    if (rc == 1) rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "a dataset of null shape holds no values");
    if (rc == 0) rc = body_elements(a, v.wire, v.vlen, v.n, v.rdims, v.rrank, v.buf, err);
    if (rc == 0 && v.n && H5Dwrite(d, v.wire, v.mspace, v.space, H5P_DEFAULT, v.buf) < 0)
        rc = h5u_fail(err, H5ARK_BAD_REQUEST, "cannot write the values");
    if (v.vlen) h5obj_vlen_free(v.wire, v.buf, v.n);
    h5obj_values_end(&v);
    return rc;
}

static int put_shape(hid_t d, const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    json_t *body = parse_body(a, true, err);
    if (!body) return -1;
    hid_t space = H5Dget_space(d), dcpl = H5Dget_create_plist(d);
    hsize_t dims[H5S_MAX_RANK], max[H5S_MAX_RANK], want[H5S_MAX_RANK];
    int rank = space >= 0 ? H5Sget_simple_extent_dims(space, dims, max) : -1;
    const json_t *shape = json_object_get(body, "shape"), *extend = json_object_get(body, "extend");
    const json_t *axis = json_object_get(body, "extend_dim");
    json_int_t by = json_integer_value(extend), on = axis ? json_integer_value(axis) : 0;
    int rc = 0;
    if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_CHUNKED)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "only a chunked dataset can be resized");
    else if (shape && extend)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the body has shape or extend, not both");
    else if (extend && (!json_is_integer(extend) || by <= 0))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "extend: a positive integer");
    else if (extend && ((axis && !json_is_integer(axis)) || on < 0 || on >= rank))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "extend_dim: an axis of the %d", rank);
    else if (extend) {
        memcpy(want, dims, sizeof *dims * (size_t)rank); /* one axis grows, the rest stay */
        want[on] += (hsize_t)by;
    } else if (json_is_integer(shape) && rank == 1)
        want[0] = (hsize_t)json_integer_value(shape);
    else if (!json_is_array(shape) || (int)json_array_size(shape) != rank)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "shape: a list of %d extents", rank);
    for (int i = 0; rc == 0 && !extend && json_is_array(shape) && i < rank; i++) {
        json_int_t v = json_integer_value(json_array_get(shape, (size_t)i));
        if (!json_is_integer(json_array_get(shape, (size_t)i)) || v < 0)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "shape: extents are integers >= 0");
        want[i] = (hsize_t)v;
    }
    for (int i = 0; rc == 0 && i < rank; i++)
        if (max[i] != H5S_UNLIMITED && want[i] > max[i])
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "shape: axis %d past its maxdims (%llu)", i,
                            (unsigned long long)max[i]);
    if (rc == 0 && H5Dset_extent(d, want) < 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot resize the dataset");
    if (rc == 0 && extend) { /* the region added, as HSDS answers it: "[a:b,:,...]" */
        char sel[32 * H5S_MAX_RANK] = "[";
        for (int i = 0; i < rank; i++) {
            size_t k = strlen(sel);
            if (i == on)
                snprintf(sel + k, sizeof sel - k, "%llu:%llu%s", (unsigned long long)dims[i],
                         (unsigned long long)want[i], i + 1 < rank ? "," : "]");
            else
                snprintf(sel + k, sizeof sel - k, ":%s", i + 1 < rank ? "," : "]");
        }
        out->json = h5ark_value_map();
        if (!out->json || h5ark_value_set(out->json, "selection", h5ark_value_str(sel)))
            rc = oom(err);
    }
    if (space >= 0) H5Sclose(space);
    if (dcpl >= 0) H5Pclose(dcpl);
    json_decref(body);
    out->created = true;
    return rc;
}

/* ---- attributes ---------------------------------------------------------------------- */

static int put_one_attr(hid_t obj, const char *name, const json_t *spec, bool replace,
                        h5ark_error *err) {
    if (check_name(name, err)) return -1;
    htri_t there = H5Aexists(obj, name);
    if (there > 0 && !replace)
        return h5ark_fail(err, H5ARK_ALREADY_EXISTS, "attribute '%s' exists", name);
    int rank = 0; /* a type refused leaves no shape to read */
    hsize_t dims[H5S_MAX_RANK], max[H5S_MAX_RANK];
    bool null = false, vlen = false;
    hid_t type = h5obj_make_type(json_object_get(spec, "type"), err), space = -1, attr = -1;
    hid_t wire = -1;
    char *buf = NULL;
    uint64_t n = 1;
    int rc = type < 0 ? -1
                      : h5obj_make_shape(json_object_get(spec, "shape"), NULL, &rank, dims, max,
                                         &null, err);
    if (rc == 0 && !json_object_get(spec, "shape")) { /* the value's own shape: a scalar */
        rank = 0;
    }
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    const json_t *value = json_object_get(spec, "value");
    if (rc == 0 && !null && value && !json_is_null(value)) {
        wire = h5obj_wire_type(type, &vlen, err);
        buf = wire >= 0 ? calloc(n ? n : 1, H5Tget_size(wire)) : NULL;
        rc = !buf ? (err->code ? -1 : oom(err))
                  : h5obj_values_from_json(wire, value, buf, dims, rank, err);
    }
    if (rc == 0 && there > 0 && H5Adelete(obj, name) < 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot replace attribute '%s'", name);
    if (rc == 0) {
        space = null        ? H5Screate(H5S_NULL)
                : rank == 0 ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(rank, dims, NULL);
        attr = space >= 0 ? H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT) : -1;
        if (attr < 0) rc = h5u_fail(err, H5ARK_BAD_REQUEST, "cannot create attribute '%s'", name);
    }
    if (rc == 0 && buf && n && H5Awrite(attr, wire, buf) < 0)
        rc = h5u_fail(err, H5ARK_BAD_REQUEST, "cannot write attribute '%s'", name);
    if (vlen) h5obj_vlen_free(wire, buf, n);
    free(buf);
    if (attr >= 0) H5Aclose(attr);
    if (space >= 0) H5Sclose(space);
    if (wire >= 0) H5Tclose(wire);
    if (type >= 0) H5Tclose(type);
    return rc;
}

static int put_attrs(hid_t obj, const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    json_t *body = parse_body(a, true, err);
    if (!body) return -1;
    int rc = 0;
    out->created = true;
    if (a->name) {
        rc = put_one_attr(obj, a->name, body, a->replace, err);
    } else {
        const json_t *all = json_object_get(body, "attributes");
        const char *name;
        json_t *spec;
        if (!json_is_object(all))
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the body is {\"attributes\": {NAME: ...}}");
        json_object_foreach((json_t *)all, name, spec) {
            if (rc == 0) rc = put_one_attr(obj, name, spec, a->replace, err);
        }
    }
    json_decref(body);
    return rc;
}

/* ---- objects deleted ---------------------------------------------------------------- */

typedef struct {
    haddr_t addr;
    char **paths; /* every hard link to addr, "/g/name" */
    size_t n, cap;
    bool failed;
} links_to;

static herr_t link_to(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
    (void)g;
    links_to *s = arg;
    if (info->type != H5L_TYPE_HARD || info->u.address != s->addr) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        char **p = realloc(s->paths, cap * sizeof *p);
        if (!p) return s->failed = true, -1;
        s->paths = p;
        s->cap = cap;
    }
    size_t len = strlen(name) + 2;
    if (!(s->paths[s->n] = malloc(len))) return s->failed = true, -1;
    snprintf(s->paths[s->n++], len, "/%s", name);
    return 0;
}

/* DELETE /groups/ID (datasets, datatypes): every hard link to it removed, the holding
 * group's too (left empty, it goes); HDF5 then frees what no link reaches. */
static int delete_object(wfile *w, hid_t obj, h5ark_error *err) {
    H5O_info_t oi, root;
    if (H5Oget_info2(obj, &oi, H5O_INFO_BASIC) < 0 ||
        H5Oget_info2(w->f.fid, &root, H5O_INFO_BASIC) < 0)
        return h5u_fail(err, H5ARK_IO_ERROR, "cannot read the object");
    if (oi.addr == root.addr)
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "the root group cannot be deleted: delete the domain");
    links_to s = {.addr = oi.addr};
    int rc = H5Lvisit(w->f.fid, H5_INDEX_NAME, H5_ITER_INC, link_to, &s) < 0 || s.failed
                 ? (s.failed ? oom(err) : h5u_fail(err, H5ARK_IO_ERROR, "cannot find its links"))
                 : 0;
    /* the deepest first: a link inside a group the object is (a cycle) goes before the group */
    for (size_t i = s.n; i-- > 0;) {
        if (rc == 0 && H5Ldelete(w->f.fid, s.paths[i], H5P_DEFAULT) < 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot remove the link '%s'", s.paths[i]);
        free(s.paths[i]);
    }
    free(s.paths);
    H5G_info_t gi;
    if (rc == 0 && H5Lexists(w->f.fid, H5OBJ_HOLD, H5P_DEFAULT) > 0 &&
        H5Gget_info_by_name(w->f.fid, H5OBJ_HOLD, &gi, H5P_DEFAULT) >= 0 && gi.nlinks == 0 &&
        H5Ldelete(w->f.fid, H5OBJ_HOLD, H5P_DEFAULT) < 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot remove the holding group");
    return rc;
}

/* ---- one change --------------------------------------------------------------------- */

static int change_file(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    wfile w;
    if (wopen(a, &w, err)) return -1;
    int rc = 0;
    hid_t obj = -1;
    if (a->op == H5OBJ_POST_GROUP) {
        rc = post_group(&w, a, out, err);
    } else if (a->op == H5OBJ_POST_DATASET) {
        rc = post_dataset(&w, a, out, err);
    } else if ((obj = h5obj_open_id(&w.f, a->id, a->coll, NULL, err)) < 0) {
        rc = -1;
    } else {
        H5I_type_t t = H5Iget_type(obj);
        bool group = t == H5I_GROUP, dataset = t == H5I_DATASET;
        switch (a->op) {
        case H5OBJ_PUT_LINK:
        case H5OBJ_DELETE_LINK:
            if (!group)
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%s is not a group", a->id);
            else if (a->op == H5OBJ_PUT_LINK)
                rc = put_link(&w, obj, a, out, err);
            else
                rc = delete_named(obj, a, false, err);
            break;
        case H5OBJ_PUT_VALUE:
        case H5OBJ_PUT_SHAPE:
            if (!dataset)
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%s is not a dataset", a->id);
            else if (a->op == H5OBJ_PUT_VALUE)
                rc = put_value(obj, a, err);
            else
                rc = put_shape(obj, a, out, err);
            break;
        case H5OBJ_PUT_ATTR: rc = put_attrs(obj, a, out, err); break;
        case H5OBJ_DELETE_ATTR: rc = delete_named(obj, a, true, err); break;
        case H5OBJ_DELETE_OBJECT: rc = delete_object(&w, obj, err); break;
        default: rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "unknown change"); break;
        }
    }
    /* closing a dataset writes its cached chunks: a failure there fails the change */
    if (obj >= 0 && h5u_close_written(obj) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write '%s'", a->domain);
    H5Eclear2(H5E_DEFAULT);
    if (rc) h5u_io_blame(w.f.fid, err); /* a file that could not be read is not to blame */
    if (wclose(&w, rc == 0, err)) rc = -1;
    if (rc == 0 && !out->json && !(out->json = h5ark_value_map())) rc = oom(err);
    return rc;
}

int h5obj_write(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    pathlock_set held; /* the domain's file: serialised with its other writers (twin.h) */
    const char *given =
        a->domain && a->domain[0] == '/' && !file_access_on(a->fa) ? a->domain + 1 : a->domain;
    if (twin_changes_lock_named(&held, a->fa, given, err)) return -1;
    int rc = a->op == H5OBJ_PUT_DOMAIN      ? put_domain(a, out, err)
             : a->op == H5OBJ_DELETE_DOMAIN ? delete_domain(a, out, err)
                                            : change_file(a, out, err);
    twin_changes_unlock(&held);
    return rc;
}
