/* pack's probe of a sample file (probe.h): every sample group's fields in one pass over the
 * file, opened once, each group opened once and its fields looked up under it. Runs in the
 * file probe processes (sandbox.c), or in process without them. */
#include "probe.h"

#include "ohdr.h"
#include "sysio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECORD_BYTES    18 /* count, offset, dtype, flags */
#define FLAG_EXACT      1u
#define FLAG_CONTIGUOUS 2u
#define FLAG_CHUNKED    4u

void sample_probe_clear(sample_probe *p) {
    h5u_names_free(&p->groups);
    free(p->facts);
    free(p->chunks.v);
    *p = (sample_probe){0};
}

int sample_probe_copy(sample_probe *dst, const sample_probe *src, size_t *bytes) {
    *dst = (sample_probe){.nfields = src->nfields,
                          .failed = src->failed,
                          .failed_field = src->failed_field,
                          .error = src->error};
    size_t nrec = src->failed * src->nfields, total = sizeof *dst + nrec * sizeof *src->facts,
           nw = src->chunks.n;
    dst->facts = malloc(nrec ? nrec * sizeof *dst->facts : 1);
    dst->chunks.v = nw ? malloc(nw * sizeof *dst->chunks.v) : NULL;
    if (!dst->facts || (nw && !dst->chunks.v)) {
        sample_probe_clear(dst);
        return -1;
    }
    if (nrec) memcpy(dst->facts, src->facts, nrec * sizeof *dst->facts);
    if (nw) memcpy(dst->chunks.v, src->chunks.v, nw * sizeof *dst->chunks.v);
    dst->chunks.n = dst->chunks.cap = nw;
    total += nw * sizeof *dst->chunks.v;
    for (size_t i = 0; i < src->groups.n; i++) {
        if (h5u_names_push(&dst->groups, src->groups.v[i])) {
            sample_probe_clear(dst);
            return -1;
        }
        total += strlen(src->groups.v[i]) + 1 + sizeof(char *);
    }
    if (bytes) *bytes = total;
    return 0;
}

/* The hard links of one small group, found in one pass over its links: a look-up by name in
 * an old-style group walks its B-tree and heap each time, a pass does so once. Only a
 * shortcut: a name not in it (any other link, a long name, a group of many links) is
 * looked up as before, which says why it fails. */
#define CHILDREN_MAX  16
#define CHILD_NAMELEN 48
typedef struct {
    size_t n;
    struct {
        char name[CHILD_NAMELEN];
        haddr_t addr;
    } v[CHILDREN_MAX];
} children;

static herr_t child_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    (void)g;
    children *c = data;
    if (c->n == CHILDREN_MAX) return 1; /* stop: the rest are looked up by name */
    size_t len = strlen(name);
    if (info->type != H5L_TYPE_HARD || len >= CHILD_NAMELEN) return 0;
    memcpy(c->v[c->n].name, name, len + 1);
    c->v[c->n++].addr = info->u.address;
    return 0;
}

static void list_children(hid_t g, children *c) {
    c->n = 0;
    hsize_t idx = 0;
    if (H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, child_cb, c) < 0) c->n = 0;
    H5Eclear2(H5E_DEFAULT);
}

/* The address of g's child `name` when it is one through a hard link (a name, not a path):
 * the pass's when it found it (c may be NULL), else the link's looked up by name;
 * HADDR_UNDEF otherwise. */
static haddr_t child_addr(hid_t g, const children *c, const char *name) {
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(c->v[i].name, name) == 0) return c->v[i].addr;
    H5L_info_t li;
    haddr_t addr = HADDR_UNDEF;
    if (!strchr(name, '/') && H5Lget_info(g, name, &li, H5P_DEFAULT) >= 0 &&
        li.type == H5L_TYPE_HARD)
        addr = li.u.address;
    H5Eclear2(H5E_DEFAULT);
    return addr;
}

/* Open g's child `name` when it is one through a hard link, by its address; -1 otherwise. */
static hid_t open_child(hid_t g, const children *c, const char *name) {
    haddr_t addr = child_addr(g, c, name);
    if (addr == HADDR_UNDEF) return -1;
    hid_t o = H5Oopen_by_addr(g, addr);
    H5Eclear2(H5E_DEFAULT);
    return o;
}

/* ---- field metadata from the object headers themselves (ohdr.h) ----
 * Opening a dataset through the library (and closing it) is most of a probe's time: for
 * the plain datasets it understands, the header reader gives the same facts from a read or
 * two of the header's bytes. Any other dataset, or a damaged one, takes the library's path,
 * which decides and says what is wrong. */

/* Set (to 1) in the probe's environment: every field through the library (tests compare
 * the two; a diagnostic). */
#define FALLBACK_ENV "H5ARK_PROBE_FALLBACK"

typedef struct {
    int fd; /* the library's descriptor of the file (h5u_vfd_fd): the very file it opened */
    io_window *window; /* the file's small reads, the library's and these (vfd.h) */
    ohdr_file f;
    sample_chunk_table *chunks; /* the answer's, where chunked fields' chunks go */
} headers;

static int fd_read(void *ctx, uint64_t offset, void *buf, size_t n) {
    const headers *h = ctx;
    int served = io_window_read(h->window, offset, buf, n);
    if (served <= 0) return served;
    size_t done = 0;
    while (done < n) {
        ssize_t r = sysio.pread(h->fd, (char *)buf + done, n - done, (off_t)(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        done += (size_t)r;
    }
    return 0;
}

/* Ready h to read file's headers: false when the library's path is to be taken. */
static bool headers_open(hid_t file, uint64_t size, sample_chunk_table *chunks, io_window *window,
                         headers *h) {
    const char *off = getenv(FALLBACK_ENV);
    h->fd = -1;
    h->window = window;
    if (off && strcmp(off, "1") == 0) return false;
    hid_t fcpl = H5Fget_create_plist(file);
    size_t so = 0, sl = 0;
    hsize_t ub = 0;
    bool ok = fcpl >= 0 && H5Pget_sizes(fcpl, &so, &sl) >= 0 && H5Pget_userblock(fcpl, &ub) >= 0;
    if (fcpl >= 0) H5Pclose(fcpl);
    H5Eclear2(H5E_DEFAULT);
    if (!ok) return false;
    h->fd = h5u_vfd_fd(file);
    if (h->fd < 0) return false;
    h->chunks = chunks;
    h->f = (ohdr_file){.read = fd_read,
                       .ctx = h,
                       .eof = size,
                       .base = ub,
                       .sizeof_addr = (unsigned)so,
                       .sizeof_size = (unsigned)sl};
    return true;
}

/* A chunked field's chunks into the answer's table (its entry's index in *at): false when
 * the library is to read it (another byte order, an index not read here, damaged). */
static bool chunks_from_index(const headers *h, const ohdr_dataset *d, uint64_t *at) {
    if (d->big_endian) return false;
    ohdr_chunk one, *c = d->nchunks == 1 ? &one : malloc(d->nchunks * sizeof *c);
    bool ok =
        c && ohdr_read_chunks(&h->f, d, c) == 0 && sample_chunks_add(h->chunks, d, c, at) == 0;
    if (c != &one) free(c);
    return ok;
}

/* A field's facts from its header: false when the library is to be asked. */
static bool field_from_header(const headers *h, haddr_t addr, sample_field *out) {
    ohdr_dataset d;
    uint64_t entry = 0;
    if (!h || h->fd < 0 || addr == HADDR_UNDEF || ohdr_read_dataset(&h->f, addr, &d) ||
        (d.chunked && !chunks_from_index(h, &d, &entry)))
        return false;
    static const h5ark_dtype ints[2][9] = {
        {[1] = H5ARK_UINT8, [2] = H5ARK_UINT16, [4] = H5ARK_UINT32, [8] = H5ARK_UINT64},
        {[1] = H5ARK_INT8, [2] = H5ARK_INT16, [4] = H5ARK_INT32, [8] = H5ARK_INT64}};
    *out = (sample_field){.count = d.count,
                          .offset = d.chunked     ? entry
                                    : d.allocated ? d.offset
                                                  : 0,
                          .dtype = d.is_float ? (d.size == 4 ? H5ARK_FLOAT32 : H5ARK_FLOAT64)
                                              : ints[d.is_signed][d.size],
                          .exact = !d.big_endian,
                          .contiguous = d.allocated,
                          .chunked = d.chunked};
    return true;
}

/* The group at addr (a hard link's), -1 when it is not one. */
static hid_t addr_group(hid_t loc, haddr_t addr) {
    hid_t o = addr == HADDR_UNDEF ? -1 : H5Oopen_by_addr(loc, addr);
    H5Eclear2(H5E_DEFAULT);
    if (o >= 0 && H5Iget_type(o) != H5I_GROUP) {
        H5Oclose(o);
        o = -1;
    }
    return o;
}

/* A field's dataset under an open sample group: its own groups opened once a sample
 * (`parents`, one per field, shared by fields under the same one), the dataset by its
 * address; anything else (a soft link, a missing step) by the general lookup, which checks
 * every step is inside the file. -1 with err; 0 with *d. */
static int open_field(hid_t g, const children *c, const char *field, const char *what, hid_t *d,
                      h5ark_error *err) {
    *d = open_child(g, c, field);
    if (*d >= 0) {
        if (H5Iget_type(*d) == H5I_DATASET) return 0;
        H5Oclose(*d);
        *d = -1;
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s is not a dataset", what);
    }
    int r = h5u_link_local(g, field, what, err);
    if (r < 0) return -1;
    if (r == 0) return h5ark_fail(err, H5ARK_NOT_FOUND, "%s does not exist", what);
    *d = H5Dopen2(g, field, H5P_DEFAULT);
    if (*d < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s is not a dataset", what);
    return 0;
}

/* One field under an open sample group (loc: its parent group, open, when the field has
 * one; `leaf` its last component). */
static int probe_field(hid_t loc, const children *c, const headers *h, const char *leaf,
                       const char *group, const char *field, uint64_t size, sample_field *out,
                       h5ark_error *err) {
    if (field_from_header(h, child_addr(loc, c, leaf), out)) return 0;
    char what[2100];
    snprintf(what, sizeof what, "'%s/%s'", group, field);
    hid_t d;
    if (open_field(loc, c, leaf, what, &d, err)) return -1;
    h5u_dset_info info = {.flat = true}; /* an image is its C-order elements */
    int rc = h5u_inspect_dataset(d, size, what, &info, err);
    H5Oclose(d);
    if (rc) return -1;
    *out = (sample_field){.count = info.count,
                          .offset = info.offset,
                          .dtype = info.dtype,
                          .exact = info.exact,
                          .contiguous = info.contiguous};
    return 0;
}

/* Open child `name` of g when it is a group reached through a hard link, -1 otherwise. */
static hid_t open_hard_group(hid_t g, const children *c, const char *name) {
    hid_t o = open_child(g, c, name);
    if (o >= 0 && H5Iget_type(o) != H5I_GROUP) {
        H5Oclose(o);
        o = -1;
    }
    return o;
}

/* A named sample group (a path; soft links inside the file are followed as for a field),
 * or -1 with err: not_found when it is absent. */
static hid_t open_group(hid_t file, const char *name, h5ark_error *err) {
    hid_t g = open_hard_group(file, NULL, name);
    if (g >= 0) return g;
    char what[1100];
    snprintf(what, sizeof what, "sample '%s'", name);
    int r = h5u_link_local(file, name, what, err);
    if (r < 0) return -1;
    if (r == 0) return h5ark_fail(err, H5ARK_NOT_FOUND, "%s does not exist", what);
    g = H5Gopen2(file, name, H5P_DEFAULT);
    if (g < 0) h5u_fail(err, H5ARK_SCHEMA_ERROR, "%s is not a group", what);
    return g;
}

/* A pass over a small group's links costs a little less than two look-ups by name in it. */
#define PASS_FROM 2

/* The length of field f's parent path with its '/', 0 when it has none. */
static size_t parent_len(const char *f) {
    const char *slash = strrchr(f, '/');
    return slash ? (size_t)(slash - f) + 1 : 0;
}

/* How many look-ups fields make in one group: with plen 0 the sample's own (a field there,
 * or the first of a run under one parent), else those of the run under the parent
 * fields[0][0, plen). */
static size_t lookups(const char *const *fields, size_t nfields, size_t plen) {
    size_t n = 0;
    for (size_t k = 0; k < nfields; k++) {
        size_t len = parent_len(fields[k]);
        if (plen) {
            if (len != plen || strncmp(fields[k], fields[0], plen) != 0) break;
            n++;
        } else if (len == 0 || k == 0 || parent_len(fields[k - 1]) != len ||
                   strncmp(fields[k - 1], fields[k], len) != 0) {
            n++;
        }
    }
    return n;
}

/* The fields of one open sample group, their parent groups opened once each. k: how many
 * were probed before one failed (nfields when none did). */
static size_t probe_fields(hid_t g, const headers *h, const char *name, const char *const *fields,
                           size_t nfields, uint64_t size, sample_field *out, h5ark_error *err) {
    hid_t parent = -1;
    size_t plen = 0; /* fields[k][0, plen) is the parent's path, with its '/' */
    const char *pname = NULL;
    size_t k = 0;
    children top = {0}, sub = {0}; /* g's links, parent's: listed when it saves look-ups */
    if (lookups(fields, nfields, 0) >= PASS_FROM) list_children(g, &top);
    for (; k < nfields; k++) {
        const char *f = fields[k], *slash = strrchr(f, '/');
        hid_t loc = g;
        const char *leaf = f;
        if (slash) {
            size_t len = (size_t)(slash - f) + 1;
            if (!pname || len != plen || strncmp(f, pname, len) != 0) {
                if (parent >= 0) H5Oclose(parent);
                char path[1024];
                snprintf(path, sizeof path, "%.*s", (int)(len - 1), f);
                parent = strchr(path, '/') ? -1 : open_hard_group(g, &top, path);
                sub.n = 0;
                if (parent >= 0 && lookups(fields + k, nfields - k, len) >= PASS_FROM)
                    list_children(parent, &sub);
                pname = f;
                plen = len;
            }
            if (parent >= 0) {
                loc = parent;
                leaf = slash + 1;
            }
        }
        if (probe_field(loc, loc == g ? &top : &sub, h, leaf, name, f, size, &out[k], err)) break;
    }
    if (parent >= 0) H5Oclose(parent);
    return k;
}

int sample_probe_file(const char *path, const char *const *groups, size_t ngroups,
                      const char *const *fields, size_t nfields, sample_probe *out,
                      h5ark_error *err) {
    h5u_quiet();
    *out = (sample_probe){.nfields = nfields};
    hid_t file;
    uint64_t size;
    if (read_probe_open(path, &file, &size, err)) return -1;
    int rc = 0;
    headers h;
    io_window *window = malloc(sizeof *window);
    if (window) {
        io_window_reset(window, h5u_vfd_fd(file));
        h5u_vfd_window(window->fd >= 0 ? window : NULL);
    }
    bool fast = nfields && headers_open(file, size, &out->chunks, window, &h);
    hid_t *listed = NULL; /* the groups found listing, kept open for their fields */
    if (!groups) {
        h5u_names all = {0};
        haddr_t *addrs = NULL; /* one pass over the links: no look-up of each by name */
        rc = h5u_link_addrs(file, NULL, &all, &addrs, "its samples", err);
        listed = rc == 0 ? calloc(all.n ? all.n : 1, sizeof *listed) : NULL;
        if (rc == 0 && !listed) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        for (size_t i = 0; rc == 0 && i < all.n; i++) {
            /* groups only, through hard links (lshdf's "group"): in name order */
            hid_t g = addr_group(file, addrs[i]);
            if (g < 0) continue;
            if (h5u_names_push(&out->groups, all.v[i])) {
                H5Oclose(g);
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
                break;
            }
            listed[out->groups.n - 1] = g;
        }
        h5u_names_free(&all);
        free(addrs);
    } else {
        for (size_t i = 0; rc == 0 && i < ngroups; i++)
            if (h5u_names_push(&out->groups, groups[i]))
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    size_t n = out->groups.n;
    out->failed = n;
    if (rc == 0 && nfields) {
        size_t nrec = n * nfields;
        out->facts = sysio.calloc(nrec ? nrec : 1, sizeof *out->facts);
        if (!out->facts) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (size_t i = 0; rc == 0 && nfields && i < n && out->failed == n; i++) {
        const char *name = out->groups.v[i];
        h5ark_error ferr = {0};
        hid_t g = listed ? listed[i] : open_group(file, name, &ferr);
        size_t k = g >= 0 ? probe_fields(g, fast ? &h : NULL, name, fields, nfields, size,
                                         &out->facts[i * nfields], &ferr)
                          : 0;
        if (g < 0 || k < nfields) {
            h5u_io_blame(file, &ferr);
            if (ferr.code == H5ARK_RESOURCE_LIMIT && strcmp(ferr.message, "out of memory") == 0) {
                *err = ferr;
                rc = -1;
            }
            out->failed = i;
            out->failed_field = g < 0 ? 0 : k;
            out->error = ferr;
        }
        if (g >= 0) H5Oclose(g);
        if (listed) listed[i] = -1;
    }
    for (size_t i = 0; listed && i < n; i++)
        if (listed[i] >= 0) H5Oclose(listed[i]);
    free(listed);
    H5Eclear2(H5E_DEFAULT);
    h5u_vfd_window(NULL);
    free(window);
    if (H5Fclose(file) < 0 && rc == 0) rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close it");
    if (rc) sample_probe_clear(out);
    return rc;
}

h5ark_value *sample_probe_encode(const sample_probe *p) {
    h5ark_value *v = h5ark_value_map(), *names = h5ark_value_array();
    size_t nrec = p->failed * p->nfields;
    unsigned char *rec = malloc(nrec ? nrec * RECORD_BYTES : 1);
    int rc = v && names && rec ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < p->groups.n; i++)
        rc = h5ark_value_push(names, h5ark_value_bin(p->groups.v[i], strlen(p->groups.v[i])));
    for (size_t i = 0; rec && i < nrec; i++) {
        const sample_field *f = &p->facts[i];
        unsigned char *r = rec + i * RECORD_BYTES;
        memcpy(r, &f->count, 8);
        memcpy(r + 8, &f->offset, 8);
        r[16] = (unsigned char)f->dtype;
        r[17] =
            (unsigned char)((f->exact ? FLAG_EXACT : 0) | (f->contiguous ? FLAG_CONTIGUOUS : 0) |
                            (f->chunked ? FLAG_CHUNKED : 0));
    }
    if (rc == 0 && (h5ark_value_set(v, "groups", names) ||
                    h5ark_value_set(v, "facts", h5ark_value_bin(rec, nrec * RECORD_BYTES)) ||
                    h5ark_value_set(v, "chunks",
                                    h5ark_value_bin(p->chunks.v, p->chunks.n * sizeof(uint64_t))) ||
                    h5ark_value_set(v, "failed", h5ark_value_uint(p->failed)) ||
                    h5ark_value_set(v, "field", h5ark_value_uint(p->failed_field)) ||
                    h5ark_value_set(v, "code", h5ark_value_uint((uint64_t)p->error.code)) ||
                    h5ark_value_set(v, "message", h5ark_value_str(p->error.message))))
        rc = -1;
    else if (rc)
        h5ark_value_destroy(&names);
    free(rec);
    if (rc) h5ark_value_destroy(&v);
    return v;
}

int sample_probe_decode(const h5ark_value *v, size_t nfields, sample_probe *p, h5ark_error *err) {
    *p = (sample_probe){.nfields = nfields};
    const h5ark_value *names = h5ark_value_get(v, "groups"), *facts = h5ark_value_get(v, "facts"),
                      *msg = h5ark_value_get(v, "message"), *chunks = h5ark_value_get(v, "chunks");
    uint64_t failed, field, code;
    if (!names || names->kind != H5ARK_ARRAY || !facts || facts->kind != H5ARK_BIN || !msg ||
        msg->kind != H5ARK_STR || !chunks || chunks->kind != H5ARK_BIN ||
        chunks->as.s.len % sizeof(uint64_t) ||
        !h5ark_value_to_uint64(h5ark_value_get(v, "failed"), &failed) ||
        !h5ark_value_to_uint64(h5ark_value_get(v, "field"), &field) ||
        !h5ark_value_to_uint64(h5ark_value_get(v, "code"), &code) ||
        failed > h5ark_value_len(names) || code >= H5ARK_CODE_COUNT ||
        facts->as.s.len != failed * nfields * RECORD_BYTES ||
        (failed < h5ark_value_len(names) && (field >= nfields || code == 0)))
        return h5ark_fail(err, H5ARK_INTERNAL, "a malformed answer from the file probe");
    for (size_t i = 0; i < h5ark_value_len(names); i++) {
        const h5ark_value *s = h5ark_value_at(names, i);
        if (s->kind != H5ARK_BIN || memchr(s->as.s.ptr, 0, s->as.s.len)) {
            sample_probe_clear(p);
            return h5ark_fail(err, H5ARK_INTERNAL, "a malformed answer from the file probe");
        }
        if (h5u_names_push(&p->groups, s->as.s.ptr)) {
            sample_probe_clear(p);
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
    }
    size_t nrec = (size_t)failed * nfields, nw = chunks->as.s.len / sizeof(uint64_t);
    p->facts = malloc(nrec ? nrec * sizeof *p->facts : 1);
    p->chunks.v = nw ? malloc(nw * sizeof *p->chunks.v) : NULL;
    if (!p->facts || (nw && !p->chunks.v)) {
        sample_probe_clear(p);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (nw) memcpy(p->chunks.v, chunks->as.s.ptr, nw * sizeof *p->chunks.v);
    p->chunks.n = p->chunks.cap = nw;
    const unsigned char *rec = (const unsigned char *)facts->as.s.ptr;
    for (size_t i = 0; i < nrec; i++, rec += RECORD_BYTES) {
        sample_field *f = &p->facts[i];
        memcpy(&f->count, rec, 8);
        memcpy(&f->offset, rec + 8, 8);
        if (rec[16] >= H5ARK_DTYPE_COUNT) {
            sample_probe_clear(p);
            return h5ark_fail(err, H5ARK_INTERNAL, "a malformed answer from the file probe");
        }
        f->dtype = (h5ark_dtype)rec[16];
        f->exact = rec[17] & FLAG_EXACT;
        f->contiguous = rec[17] & FLAG_CONTIGUOUS;
        f->chunked = rec[17] & FLAG_CHUNKED;
        if (f->chunked && f->offset >= nw) { /* the entry itself is checked where it is read */
            sample_probe_clear(p);
            return h5ark_fail(err, H5ARK_INTERNAL, "a malformed answer from the file probe");
        }
    }
    p->failed = (size_t)failed;
    p->failed_field = (size_t)field;
    p->error.code = (h5ark_code)code;
    snprintf(p->error.message, sizeof p->error.message, "%s", msg->as.s.ptr);
    return 0;
}
