/* The HSDS API's domains, their files and objects: resolving and opening them, ids, and
 * the reads of a domain, a group, a dataset or a type (see h5obj.h). The files of the other
 * operations build on these; h5obj_run.c hands each operation to its file. */
#include "storage/h5obj_int.h"

#include "config.h"
#include "h5ark_version.h"
#include "storage/files.h"
#include "storage/hdf5_util.h"
#include "storage/owners.h"
#include "storage/probe.h"
#include "storage/sandbox.h"
#include "storage/sha256.h"
#include "storage/twin.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FOLLOW_MAX_GROUPS 100000 /* groups one follow_links answer lists */

static int set(h5ark_value *m, const char *key, h5ark_value *v) {
    return v ? h5ark_value_set(m, key, v) : -1;
}

static int oom(h5ark_error *err) {
    return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

/* ---- domains --------------------------------------------------------------------------- */

int h5obj_check_domain(const char *d, h5ark_error *err) {
    if (!d || d[0] != '/')
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the domain '%s' does not start with '/'",
                          d ? d : "");
    if (strlen(d) >= PATH_MAX - 64)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the domain is too long");
    for (const unsigned char *p = (const unsigned char *)d; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return h5ark_fail(err, H5ARK_FORBIDDEN, "the domain holds a control character");
    for (const char *c = d + 1; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return h5ark_fail(err, H5ARK_FORBIDDEN,
                              "the domain '%s' has an empty, '.' or '..' component", d);
        if (c[0] == '.') return h5ark_fail(err, H5ARK_NOT_FOUND, "domain '%s' not found", d);
        c += n;
        if (*c == '/') c++;
    }
    return 0;
}

/* A file's times: its birth time where the file system keeps one, never after its
 * modification. */
static void times_from(const struct statx *sx, double *created, double *modified) {
    *modified = (double)sx->stx_mtime.tv_sec + sx->stx_mtime.tv_nsec * 1e-9;
    *created = *modified;
    double born = (double)sx->stx_btime.tv_sec + sx->stx_btime.tv_nsec * 1e-9;
    if ((sx->stx_mask & STATX_BTIME) && born < *created) *created = born;
}

void h5obj_times_of(const char *abs, const struct stat *st, double *created, double *modified) {
    struct statx sx;
    if (statx(AT_FDCWD, abs, 0, STATX_BASIC_STATS | STATX_BTIME, &sx) == 0) {
        times_from(&sx, created, modified);
        return;
    }
    *modified = (double)st->st_mtim.tv_sec + st->st_mtim.tv_nsec * 1e-9;
    *created = *modified;
}

/* A folder: a directory inside the data directory. 1 when the domain names one, 0 when it
 * names no directory, -1 with err. */
static int folder_of(const char *domain, char abs[PATH_MAX], struct stat *st, h5ark_error *err) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s%s", config.data_dir, domain) >= (int)sizeof path)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the domain is too long");
    bool slash = domain[strlen(domain) - 1] == '/';
    if (stat(path, st) != 0 || !S_ISDIR(st->st_mode)) {
        if (slash) return h5ark_fail(err, H5ARK_NOT_FOUND, "folder '%s' not found", domain);
        return 0;
    }
    size_t n = strlen(config.data_dir);
    if (!realpath(path, abs) || strncmp(abs, config.data_dir, n) != 0 ||
        (abs[n] != '\0' && abs[n] != '/'))
        return h5ark_fail(err, H5ARK_FORBIDDEN, "the domain '%s' leads out of the data directory",
                          domain);
    return 1;
}

static h5ark_value *limits(void) {
    h5ark_value *m = h5ark_value_map();
    if (m && (set(m, "min_chunk_size", h5ark_value_uint(1u << 20)) ||
              set(m, "max_chunk_size", h5ark_value_uint(4u << 20)) ||
              set(m, "max_request_size", h5ark_value_uint(H5OBJ_MAX_REQUEST))))
        h5ark_value_destroy(&m);
    return m;
}

static void make_id(const h5obj_file *f, char kind, haddr_t addr, char out[H5OBJ_ID_LEN + 1]) {
    char a[17];
    snprintf(a, sizeof a, "%016llx", (unsigned long long)addr);
    snprintf(out, H5OBJ_ID_LEN + 1, "%c-%s-%.4s-%.6s-%.6s", kind, f->prefix, a, a + 4, a + 10);
}

h5ark_value *h5obj_id_value(const h5obj_file *f, char kind, haddr_t addr) {
    char id[H5OBJ_ID_LEN + 1];
    make_id(f, kind, addr, id);
    return h5ark_value_str(id);
}

int h5obj_resolve(const h5obj_args *a, file_perm perm, bool create_dirs, char abs[PATH_MAX],
                  h5ark_error *err) {
    const char *given = file_access_on(a->fa) ? a->domain : a->domain + 1;
    return files_resolve(a->fa, perm, given, create_dirs, abs, err);
}

int h5obj_locate(const h5obj_args *a, file_perm perm, h5obj_file *f, h5ark_error *err) {
    const char *domain = a->domain;
    *f = (h5obj_file){.domain = domain, .fid = H5I_INVALID_HID, .lock_fd = -1};
    if (h5obj_check_domain(domain, err)) return -1;
    struct stat st;
    int folder = folder_of(domain, f->abs, &st, err);
    if (folder < 0) return -1;
    if (folder) return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is a folder, not a domain", domain);
    if (h5obj_resolve(a, perm, false, f->abs, err)) return -1;
    struct statx sx; /* its times at once, the birth time too */
    if (statx(AT_FDCWD, f->abs, 0, STATX_BASIC_STATS | STATX_BTIME, &sx) != 0)
        return h5ark_fail(err, errno == ENOENT ? H5ARK_NOT_FOUND : H5ARK_IO_ERROR, "domain '%s' %s",
                          domain, errno == ENOENT ? "not found" : strerror(errno));
    uint8_t h[32];
    sha256(domain, strlen(domain), h);
    snprintf(f->prefix, sizeof f->prefix, "%02x%02x%02x%02x-%02x%02x%02x%02x", h[0], h[1], h[2],
             h[3], h[4], h[5], h[6], h[7]);
    times_from(&sx, &f->created, &f->modified);
    /* a file that is not HDF5 is refused when opened (read_probe_open, HDF5's own check) */
    if (sandbox_check_file(f->abs, err)) {
        err->code = H5ARK_BAD_REQUEST;
        return h5ark_fail_context(err, "domain '%s'", domain);
    }
    return 0;
}

int h5obj_open_file(const h5obj_args *a, h5obj_file *f, h5ark_error *err) {
    const char *domain = a->domain;
    if (h5obj_locate(a, PERM_READ, f, err)) return -1;
    if (h5obj_kept_open(f) == 0) return 0;
    uint64_t size;
    if (read_probe_open(f->abs, &f->fid, &size, err)) {
        f->fid = H5I_INVALID_HID;
        if (err->code == H5ARK_SCHEMA_ERROR) err->code = H5ARK_BAD_REQUEST;
        return h5ark_fail_context(err, "domain '%s'", domain);
    }
    return 0;
}

void h5obj_close_file(h5obj_file *f) {
    if (f->kept) h5obj_kept_close(f);
    if (f->fid >= 0) H5Fclose(f->fid);
    f->fid = H5I_INVALID_HID;
}

int h5obj_times(h5ark_value *m, const h5obj_file *f) {
    return set(m, "created", h5ark_value_float(f->created)) ||
           set(m, "lastModified", h5ark_value_float(f->modified));
}

static haddr_t addr_of(hid_t obj) {
    H5O_info_t oi;
    return H5Oget_info2(obj, &oi, H5O_INFO_BASIC) < 0 ? HADDR_UNDEF : oi.addr;
}

static haddr_t root_of(const h5obj_file *f) {
    return f->kept ? h5obj_kept_root(f) : addr_of(f->fid);
}

/* ---- counts of a file (verbose=1) ---- */

typedef struct {
    uint64_t groups, datasets, datatypes, allocated, chunks;
} file_counts;

static herr_t count_one(hid_t obj, const char *name, const H5O_info_t *info, void *arg) {
    file_counts *c = arg;
    if (strncmp(name, H5OBJ_HOLD, strlen(H5OBJ_HOLD)) == 0) return 0;
    if (info->type == H5O_TYPE_GROUP) c->groups++;
    if (info->type == H5O_TYPE_NAMED_DATATYPE) c->datatypes++;
    if (info->type != H5O_TYPE_DATASET) return 0;
    c->datasets++;
    hid_t d = H5Dopen2(obj, name, H5P_DEFAULT);
    if (d < 0) return 0;
    c->allocated += H5Dget_storage_size(d);
    hsize_t n = 0;
    hid_t dcpl = H5Dget_create_plist(d), space = H5Dget_space(d);
    if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && space >= 0 &&
        H5Dget_num_chunks(d, space, &n) >= 0)
        c->chunks += n;
    else if (H5Dget_storage_size(d) > 0)
        c->chunks++;
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    H5Dclose(d);
    return 0;
}

static int domain_counts(h5ark_value *m, const h5obj_file *f, uint64_t size) {
    file_counts c = {0};
    if (H5Ovisit2(f->fid, H5_INDEX_NAME, H5_ITER_INC, count_one, &c, H5O_INFO_BASIC) < 0)
        H5Eclear2(H5E_DEFAULT);
    return set(m, "num_groups", h5ark_value_uint(c.groups)) ||
           set(m, "num_datasets", h5ark_value_uint(c.datasets)) ||
           set(m, "num_datatypes", h5ark_value_uint(c.datatypes)) ||
           set(m, "num_objects", h5ark_value_uint(c.groups + c.datasets + c.datatypes)) ||
           set(m, "allocated_bytes", h5ark_value_uint(c.allocated)) ||
           set(m, "metadata_bytes",
               h5ark_value_uint(size > c.allocated ? size - c.allocated : 0)) ||
           set(m, "total_size", h5ark_value_uint(size)) ||
           set(m, "num_chunks", h5ark_value_uint(c.chunks)) ||
           set(m, "md5_sum", h5ark_value_str(""));
}

const char *h5obj_owner(const h5obj_args *a, const char *abs, char *buf, size_t len) {
    if (file_access_on(a->fa) && abs && owners_of(abs, buf, len)) return buf;
    return file_access_on(a->fa) ? a->fa->user : a->owner && a->owner[0] ? a->owner : "h5ark";
}

int h5obj_get_domain(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    if (h5obj_check_domain(a->domain, err)) return -1;
    char abs[PATH_MAX];
    struct stat st;
    int folder = folder_of(a->domain, abs, &st, err);
    if (folder < 0) return -1;
    h5ark_value *m = h5ark_value_map();
    if (!m) return oom(err);
    out->json = m;
    char creator[128];
    const char *owner = h5obj_owner(a, NULL, creator, sizeof creator);
    if (folder) {
        h5obj_file dir = {0};
        h5obj_times_of(abs, &st, &dir.created, &dir.modified);
        return set(m, "class", h5ark_value_str("folder")) ||
                       set(m, "owner", h5ark_value_str(owner)) || h5obj_times(m, &dir)
                   ? oom(err)
                   : 0;
    }
    h5obj_file f;
    if (h5obj_open_file(a, &f, err)) return -1;
    owner = h5obj_owner(a, f.abs, creator, sizeof creator);
    int rc = set(m, "root", h5obj_id_value(&f, 'g', root_of(&f))) ||
             set(m, "class", h5ark_value_str("domain")) ||
             set(m, "owner", h5ark_value_str(owner)) || h5obj_times(m, &f) ||
             set(m, "limits", limits()) || set(m, "compressors", h5ark_value_array()) ||
             set(m, "version", h5ark_value_str(H5ARK_VERSION_STRING));
    if (rc == 0) rc = h5ark_value_push(h5ark_value_get(m, "compressors"), h5ark_value_str("gzip"));
    struct stat fst;
    if (rc == 0 && a->verbose)
        rc = domain_counts(m, &f, stat(f.abs, &fst) == 0 ? (uint64_t)fst.st_size : 0);
    h5obj_close_file(&f);
    return rc ? oom(err) : 0;
}

/* ---- objects by id ------------------------------------------------------------------- */

typedef struct {
    haddr_t addr;
    bool all;           /* every path (getalias), else the first */
    h5ark_value *paths; /* "/a/b" ... */
    char first[PATH_MAX];
} find_state;

/* A hard link to the object: the first path found, and every path unless held. */
static int found_path(void *arg, const char *name) {
    find_state *s = arg;
    bool held = strncmp(name, H5OBJ_HOLD, strlen(H5OBJ_HOLD)) == 0;
    if (!s->first[0]) snprintf(s->first, sizeof s->first, "/%s", name);
    if (!s->all) return 1;
    if (!held) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "/%s", name);
        h5ark_value_push(s->paths, h5ark_value_str(path));
    }
    return 0;
}

static herr_t find_link(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
    (void)g;
    find_state *s = arg;
    if (info->type != H5L_TYPE_HARD || info->u.address != s->addr) return 0;
    return found_path(s, name);
}

/* Open the object an id names: its kind's prefix, its domain's hash, an object header at
 * its address reached by a hard link. */
hid_t h5obj_open_id(const h5obj_file *f, const char *id, h5obj_coll coll, h5ark_value **alias,
                    h5ark_error *err) {
    static const char shape[] = "x-hhhhhhhh-hhhhhhhh-hhhh-hhhhhh-hhhhhh";
    bool ok = id && strlen(id) == H5OBJ_ID_LEN && strchr("gdt", id[0]);
    for (size_t i = 1; ok && i < H5OBJ_ID_LEN; i++)
        ok = shape[i] == '-' ? id[i] == '-'
                             : (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
    if (!ok) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "'%.60s' is not an object id", id ? id : "");
        return H5I_INVALID_HID;
    }
    char want = coll == H5OBJ_GROUPS      ? 'g'
                : coll == H5OBJ_DATASETS  ? 'd'
                : coll == H5OBJ_DATATYPES ? 't'
                                          : id[0];
    if (want != id[0]) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is not the id of a %s", id,
                   want == 'g'   ? "group"
                   : want == 'd' ? "dataset"
                                 : "datatype");
        return H5I_INVALID_HID;
    }
    if (strncmp(id + 2, f->prefix, 17) != 0) {
        h5ark_fail(err, H5ARK_NOT_FOUND, "%s: no such object in domain '%s'", id, f->domain);
        return H5I_INVALID_HID;
    }
    char hex[17];
    snprintf(hex, sizeof hex, "%.4s%.6s%.6s", id + 20, id + 25, id + 32);
    find_state s = {.addr = strtoull(hex, NULL, 16), .all = alias != NULL};
    if (alias && !(s.paths = h5ark_value_array())) {
        oom(err);
        return H5I_INVALID_HID;
    }
    hid_t obj = f->kept && !alias ? h5obj_kept_object(f, s.addr) : H5I_INVALID_HID;
    if (obj >= 0) {
        /* kept open from an earlier request */
    } else if (s.addr == root_of(f)) {
        snprintf(s.first, sizeof s.first, "/");
        if (alias) h5ark_value_push(s.paths, h5ark_value_str("/"));
    } else if (f->kept && h5obj_kept_links(f, s.addr, found_path, &s) == 0) {
        /* found by the kept file's index, without walking its links */
    } else if (H5Lvisit(f->fid, H5_INDEX_NAME, H5_ITER_INC, find_link, &s) < 0) {
        H5Eclear2(H5E_DEFAULT);
    }
    if (obj < 0 && s.first[0] && (obj = H5Oopen(f->fid, s.first, H5P_DEFAULT)) >= 0 && f->kept)
        h5obj_kept_add_object(f, s.addr, obj);
    H5I_type_t t = obj >= 0 ? H5Iget_type(obj) : H5I_BADID;
    char kind = t == H5I_GROUP ? 'g' : t == H5I_DATASET ? 'd' : t == H5I_DATATYPE ? 't' : 0;
    if (kind != id[0]) {
        if (obj >= 0) H5Oclose(obj);
        h5ark_value_destroy(&s.paths);
        H5Eclear2(H5E_DEFAULT);
        h5ark_fail(err, H5ARK_NOT_FOUND, "%s: no such object in domain '%s'", id, f->domain);
        return H5I_INVALID_HID;
    }
    if (alias) *alias = s.paths;
    return obj;
}

bool h5obj_tracks_order(hid_t g) {
    hid_t gcpl = H5Gget_create_plist(g);
    unsigned flags = 0;
    if (gcpl >= 0) {
        H5Pget_link_creation_order(gcpl, &flags);
        H5Pclose(gcpl);
    }
    return (flags & H5P_CRT_ORDER_TRACKED) && (flags & H5P_CRT_ORDER_INDEXED);
}

static unsigned attr_count(hid_t obj) {
    H5O_info_t oi;
    return H5Oget_info2(obj, &oi, H5O_INFO_NUM_ATTRS) < 0 ? 0 : (unsigned)oi.num_attrs;
}

static int common(h5ark_value *m, const h5obj_file *f, const char *id, hid_t obj) {
    return set(m, "id", h5ark_value_str(id)) ||
           set(m, "root", h5obj_id_value(f, 'g', root_of(f))) ||
           set(m, "domain", h5ark_value_str(f->domain)) || h5obj_times(m, f) ||
           set(m, "attributeCount", h5ark_value_uint(attr_count(obj)));
}

static int group_json(h5ark_value *m, const h5obj_file *f, const char *id, hid_t g) {
    H5G_info_t gi;
    uint64_t links = H5Gget_info(g, &gi) < 0 ? 0 : gi.nlinks;
    if (addr_of(g) == root_of(f) && H5Lexists(g, H5OBJ_HOLD, H5P_DEFAULT) > 0) links--;
    h5ark_value *cp = h5ark_value_map();
    if (cp && h5obj_tracks_order(g) && set(cp, "CreateOrder", h5ark_value_int(1))) return -1;
    return common(m, f, id, g) || set(m, "linkCount", h5ark_value_uint(links)) ||
           set(m, "creationProperties", cp);
}

/* A dataset's creation properties (HSDS_API.md §5), and its layout. */
static int dataset_props(hid_t d, h5ark_value **props, h5ark_value **layout, h5ark_error *err);

static int dataset_json(h5ark_value *m, const h5obj_file *f, const char *id, hid_t d, bool verbose,
                        h5ark_error *err) {
    hid_t type = H5Dget_type(d), space = H5Dget_space(d);
    h5ark_value *t = type >= 0 ? h5obj_type_json(type, err) : NULL;
    h5ark_value *s = t && space >= 0 ? h5obj_shape_json(space, err) : NULL;
    h5ark_value *props = NULL, *layout = NULL;
    int rc = s ? dataset_props(d, &props, &layout, err) : -1;
    if (rc == 0) {
        rc = common(m, f, id, d) || set(m, "type", t) || set(m, "shape", s) ||
             set(m, "layout", layout) || set(m, "creationProperties", props);
        t = s = layout = props = NULL;
    }
    if (rc == 0 && verbose) {
        hsize_t n = 0;
        hid_t dcpl = H5Dget_create_plist(d);
        bool chunked = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED;
        if (dcpl >= 0) H5Pclose(dcpl);
        hsize_t bytes = H5Dget_storage_size(d);
        if (chunked && H5Dget_num_chunks(d, space, &n) < 0) n = 0;
        if (!chunked) n = bytes > 0;
        rc = set(m, "num_chunks", h5ark_value_uint(n)) ||
             set(m, "allocated_size", h5ark_value_uint(bytes));
    }
    h5ark_value_destroy(&t);
    h5ark_value_destroy(&s);
    h5ark_value_destroy(&props);
    h5ark_value_destroy(&layout);
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    if (rc && !err->code) oom(err);
    return rc;
}

static int filter_json(hid_t dcpl, unsigned i, h5ark_value *list) {
    unsigned flags, cd[8];
    size_t ncd = 8;
    char name[64] = "";
    H5Z_filter_t id = H5Pget_filter2(dcpl, i, &flags, &ncd, cd, sizeof name, name, NULL);
    const char *cls = id == H5Z_FILTER_DEFLATE       ? "H5Z_FILTER_DEFLATE"
                      : id == H5Z_FILTER_SHUFFLE     ? "H5Z_FILTER_SHUFFLE"
                      : id == H5Z_FILTER_FLETCHER32  ? "H5Z_FILTER_FLETCHER32"
                      : id == H5Z_FILTER_SZIP        ? "H5Z_FILTER_SZIP"
                      : id == H5Z_FILTER_NBIT        ? "H5Z_FILTER_NBIT"
                      : id == H5Z_FILTER_SCALEOFFSET ? "H5Z_FILTER_SCALEOFFSET"
                                                     : "H5Z_FILTER_USER";
    const char *shown = id == H5Z_FILTER_DEFLATE       ? "gzip"
                        : id == H5Z_FILTER_SHUFFLE     ? "shuffle"
                        : id == H5Z_FILTER_FLETCHER32  ? "fletcher32"
                        : id == H5Z_FILTER_SCALEOFFSET ? "scaleoffset"
                                                       : name;
    h5ark_value *m = h5ark_value_map();
    if (!m || set(m, "class", h5ark_value_str(cls)) || set(m, "id", h5ark_value_int(id)) ||
        set(m, "name", h5ark_value_str(shown)) ||
        (id == H5Z_FILTER_DEFLATE && ncd > 0 && set(m, "level", h5ark_value_uint(cd[0])))) {
        h5ark_value_destroy(&m);
        return -1;
    }
    return h5ark_value_push(list, m);
}

static int dataset_props(hid_t d, h5ark_value **props, h5ark_value **layout, h5ark_error *err) {
    hid_t dcpl = H5Dget_create_plist(d);
    if (dcpl < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the dataset's properties");
    h5ark_value *p = h5ark_value_map(), *l = h5ark_value_map(), *l2 = h5ark_value_map();
    H5D_layout_t lay = H5Pget_layout(dcpl);
    int rc = p && l && l2 ? 0 : -1;
    const char *cls = lay == H5D_CHUNKED   ? "H5D_CHUNKED"
                      : lay == H5D_COMPACT ? "H5D_COMPACT"
                                           : "H5D_CONTIGUOUS";
    rc = rc || set(l, "class", h5ark_value_str(cls)) || set(l2, "class", h5ark_value_str(cls));
    if (rc == 0 && lay == H5D_CHUNKED) {
        hsize_t dims[H5S_MAX_RANK];
        int nd = H5Pget_chunk(dcpl, H5S_MAX_RANK, dims);
        h5ark_value *a = h5ark_value_array(), *b = h5ark_value_array();
        for (int i = 0; a && b && i < nd; i++)
            if (h5ark_value_push(a, h5ark_value_uint(dims[i])) ||
                h5ark_value_push(b, h5ark_value_uint(dims[i])))
                rc = -1;
        rc = rc || set(l, "dims", a) || set(l2, "dims", b);
    }
    int nf = H5Pget_nfilters(dcpl);
    h5ark_value *filters = h5ark_value_array();
    for (int i = 0; rc == 0 && filters && i < nf; i++)
        rc = filter_json(dcpl, (unsigned)i, filters);
    rc = rc || set(p, "layout", l2) || set(p, "filters", filters);
    H5D_fill_value_t fv;
    if (rc == 0 && H5Pfill_value_defined(dcpl, &fv) >= 0 && fv == H5D_FILL_VALUE_USER_DEFINED) {
        hid_t type = H5Dget_type(d);
        bool vlen = false;
        h5ark_error e = {0};
        hid_t wire = type >= 0 ? h5obj_wire_type(type, &vlen, &e) : -1;
        size_t size = wire >= 0 ? H5Tget_size(wire) : 0;
        char *buf = size && !vlen ? calloc(1, size) : NULL;
        if (buf && H5Pget_fill_value(dcpl, wire, buf) >= 0)
            rc = set(p, "fillValue", h5obj_values_json(wire, buf, 1, NULL, 0, &e));
        free(buf);
        if (wire >= 0) H5Tclose(wire);
        if (type >= 0) H5Tclose(type);
        H5Eclear2(H5E_DEFAULT);
    }
    H5D_fill_time_t ft;
    if (rc == 0 && H5Pget_fill_time(dcpl, &ft) >= 0)
        rc = set(p, "fillTime",
                 h5ark_value_str(ft == H5D_FILL_TIME_ALLOC   ? "H5D_FILL_TIME_ALLOC"
                                 : ft == H5D_FILL_TIME_NEVER ? "H5D_FILL_TIME_NEVER"
                                                             : "H5D_FILL_TIME_IFSET"));
    unsigned crt = 0;
    hid_t ocpl = dcpl; /* a dataset's creation list is also its object's */
    if (rc == 0 && H5Pget_attr_creation_order(ocpl, &crt) >= 0 && (crt & H5P_CRT_ORDER_TRACKED))
        rc = set(p, "CreateOrder", h5ark_value_int(1));
    H5Pclose(dcpl);
    if (rc) {
        h5ark_value_destroy(&p);
        h5ark_value_destroy(&l);
        return oom(err);
    }
    *props = p;
    *layout = l;
    return 0;
}

int h5obj_describe(const h5obj_file *f, hid_t obj, h5ark_value **out, h5ark_error *err) {
    H5I_type_t t = H5Iget_type(obj);
    char id[H5OBJ_ID_LEN + 1];
    make_id(f, t == H5I_GROUP ? 'g' : t == H5I_DATASET ? 'd' : 't', addr_of(obj), id);
    if (!(*out = h5ark_value_map())) return oom(err);
    int rc = t == H5I_GROUP     ? (group_json(*out, f, id, obj) ? oom(err) : 0)
             : t == H5I_DATASET ? dataset_json(*out, f, id, obj, false, err)
                                : h5ark_fail(err, H5ARK_BAD_REQUEST, "not a group or a dataset");
    if (rc) h5ark_value_destroy(out);
    return rc;
}

/* ---- the reads of one object ------------------------------------------------------- */

int h5obj_get(const h5obj_file *f, hid_t obj, const h5obj_args *a, h5ark_value **alias,
              h5obj_answer *out, h5ark_error *err) {
    H5I_type_t kind = H5Iget_type(obj);
    int rc = 0;
    if (!(out->json = h5ark_value_map())) {
        rc = oom(err);
    } else if (kind == H5I_GROUP) {
        rc = group_json(out->json, f, a->id, obj);
        if (rc == 0 && *alias) {
            rc = h5ark_value_set(out->json, "alias", *alias);
            *alias = NULL;
        }
        if (rc) oom(err);
    } else if (kind == H5I_DATASET) {
        rc = dataset_json(out->json, f, a->id, obj, a->verbose, err);
        if (rc == 0 && *alias) {
            rc = h5ark_value_set(out->json, "alias", *alias) ? oom(err) : 0;
            *alias = NULL;
        }
    } else {
        h5ark_value *tj = h5obj_type_json(obj, err);
        rc = !tj || common(out->json, f, a->id, obj) || set(out->json, "type", tj) ? -1 : 0;
        if (rc && !err->code) oom(err);
    }
    return rc;
}

int h5obj_shape(const h5obj_file *f, hid_t dset, h5obj_answer *out, h5ark_error *err) {
    hid_t space = H5Dget_space(dset);
    h5ark_value *s = space >= 0 ? h5obj_shape_json(space, err) : NULL;
    if (space >= 0) H5Sclose(space);
    out->json = h5ark_value_map();
    int rc = !s || !out->json || set(out->json, "shape", s) || h5obj_times(out->json, f) ? -1 : 0;
    if (rc && !err->code) oom(err);
    return rc;
}

void h5obj_answer_free(h5obj_answer *a) {
    h5ark_value_destroy(&a->json);
    if (a->run) h5obj_run_done(a->run);
    h5obj_bytes_free(a->bytes, a->nbytes);
    *a = (h5obj_answer){0};
}
