/* Values of datasets and attributes: selections (HSDS_API.md §8.1), points, and the
 * answers in bytes or JSON (§8.2). */
#include "storage/h5obj_int.h"

#include "shardcache.h"
#include "storage/hdf5_util.h"
#include "storage/io.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SELECT_MAX_LIST (UINT64_C(1) << 24) /* coordinates in one list */

typedef struct {
    bool list;
    hsize_t start, step, count; /* a slice */
    hsize_t *coords;            /* a list of count coordinates */
} axis_sel;

static void free_axes(axis_sel *ax, int rank) {
    for (int i = 0; i < rank; i++)
        free(ax[i].coords);
}

/* A number of the selection at *p: digits only (a sign is refused as out of range). */
static int number(const char **p, hsize_t *out, h5ark_error *err) {
    const char *s = *p;
    if (*s == '-')
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: negative numbers are not allowed");
    if (!isdigit((unsigned char)*s))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: a number expected at '%.20s'", s);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: '%.20s' is too large", s);
    *out = v;
    *p = end;
    return 0;
}

static int parse_list(const char **p, hsize_t dim, int axis, axis_sel *a, h5ark_error *err) {
    size_t cap = 16;
    a->list = true;
    a->coords = malloc(cap * sizeof *a->coords);
    if (!a->coords) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    (*p)++; /* '[' */
    while (**p != ']') {
        if (a->count == cap) {
            hsize_t *c = cap * 2 <= SELECT_MAX_LIST ? realloc(a->coords, cap * 2 * sizeof *c) : 0;
            if (!c)
                return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "select: axis %d's list is too long",
                                  axis);
            a->coords = c;
            cap *= 2;
        }
        hsize_t v;
        if (number(p, &v, err)) return -1;
        if (v >= dim)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "select: coordinate %llu is out of range on axis %d (extent %llu)",
                              (unsigned long long)v, axis, (unsigned long long)dim);
        a->coords[a->count++] = v;
        if (**p == ',')
            (*p)++;
        else if (**p != ']')
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: axis %d's list is malformed", axis);
    }
    (*p)++;
    if (a->count == 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: axis %d's list is empty", axis);
    return 0;
}

static int parse_item(const char **p, hsize_t dim, int axis, axis_sel *a, h5ark_error *err) {
    if (**p == '[') return parse_list(p, dim, axis, a, err);
    hsize_t start = 0, stop = dim, step = 1;
    bool colon = false;
    if (**p != ':' && number(p, &start, err)) return -1;
    if (**p == ':') {
        colon = true;
        (*p)++;
        if (**p != ':' && **p != ',' && **p != ']' && number(p, &stop, err)) return -1;
        if (**p == ':') {
            (*p)++;
            if (number(p, &step, err)) return -1;
        }
    } else {
        stop = start + 1;
    }
    if (step < 1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: a step must be at least 1");
    if (stop < start)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: axis %d stops before it starts", axis);
    if (stop > dim || (!colon && start >= dim))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "select: axis %d's range passes its extent (%llu)", axis,
                          (unsigned long long)dim);
    a->start = start;
    a->step = step;
    a->count = (stop - start + step - 1) / step;
    return 0;
}

/* The `select` parameter over a dataspace of `rank` dims. */
static int parse_select(const char *s, int rank, const hsize_t *dims, axis_sel *ax,
                        h5ark_error *err) {
    memset(ax, 0, sizeof *ax * (size_t)(rank ? rank : 1));
    const char *p = s;
    while (*p == ' ')
        p++;
    if (*p != '[') return h5ark_fail(err, H5ARK_BAD_REQUEST, "select must be written [...]");
    p++;
    if (rank == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "a scalar dataset takes no selection");
    for (int i = 0; i < rank; i++) {
        if (parse_item(&p, dims[i], i, &ax[i], err)) return -1;
        if (*p == (i + 1 < rank ? ',' : ']')) {
            p++;
            continue;
        }
        if (*p == ',' || *p == ']')
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "select: the selection's rank is not the dataset's (%d)", rank);
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: malformed at '%.20s'", p);
    }
    if (*p) return h5ark_fail(err, H5ARK_BAD_REQUEST, "select: text after the closing ']'");
    return 0;
}

/* The selection as points in numpy's order of advanced indexing: the lists pair up
 * element by element; their axis goes where they stand when they are adjacent, else
 * first. Fills the result's dims. */
static int list_points(const axis_sel *ax, int rank, hsize_t **points, size_t *npoints,
                       hsize_t *rdims, int *rrank, h5ark_error *err) {
    int first = -1, last = -1, nlists = 0;
    hsize_t len = 0;
    for (int i = 0; i < rank; i++) {
        if (!ax[i].list) continue;
        if (nlists && ax[i].count != len)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "select: coordinate lists of different lengths (%llu, %llu)",
                              (unsigned long long)len, (unsigned long long)ax[i].count);
        len = ax[i].count;
        if (first < 0) first = i;
        last = i;
        nlists++;
    }
    bool adjacent = last - first + 1 == nlists;
    /* result axes: -1 stands for the lists' */
    int order[H5S_MAX_RANK], n = 0;
    if (!adjacent) order[n++] = -1;
    for (int i = 0; i < rank; i++) {
        if (ax[i].list) {
            if (adjacent && i == first) order[n++] = -1;
        } else {
            order[n++] = i;
        }
    }
    uint64_t total = 1;
    for (int k = 0; k < n; k++) {
        rdims[k] = order[k] < 0 ? len : ax[order[k]].count;
        total *= rdims[k];
        if (total > (UINT64_C(1) << 32))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "select: too many points");
    }
    *rrank = n;
    hsize_t *pts = malloc((total ? total : 1) * (size_t)rank * sizeof *pts);
    if (!pts) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    hsize_t idx[H5S_MAX_RANK] = {0};
    for (uint64_t e = 0; e < total; e++) {
        hsize_t *c = pts + e * (size_t)rank;
        for (int k = 0; k < n; k++) {
            if (order[k] < 0) {
                for (int i = 0; i < rank; i++)
                    if (ax[i].list) c[i] = ax[i].coords[idx[k]];
            } else {
                const axis_sel *a = &ax[order[k]];
                c[order[k]] = a->start + idx[k] * a->step;
            }
        }
        for (int k = n - 1; k >= 0; k--) { /* next index in C order */
            if (++idx[k] < rdims[k]) break;
            idx[k] = 0;
        }
    }
    *points = pts;
    *npoints = (size_t)total;
    return 0;
}

/* The file space's selection and the memory shape of the answer. */
int h5obj_select(hid_t space, const h5obj_args *a, hsize_t *rdims, int *rrank, uint64_t *nelem,
                 h5ark_error *err) {
    hsize_t dims[H5S_MAX_RANK];
    int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0 || H5Sget_simple_extent_dims(space, dims, NULL) < 0)
        return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the dataset's shape");
    hsize_t *points = NULL;
    size_t npoints = 0;
    int rc = 0;
    if (a->points) {
        size_t per = (size_t)(rank ? rank : 1) * 8;
        if (rank == 0 || a->points_len % per)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "points: %zu bytes are not a whole number of %d-d uint64 points",
                              a->points_len, rank);
        npoints = a->points_len / per;
        points = malloc((npoints ? npoints : 1) * (size_t)rank * sizeof *points);
        if (!points) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        const unsigned char *b = a->points;
        for (size_t i = 0; rc == 0 && i < npoints * (size_t)rank; i++) {
            uint64_t v = 0;
            for (int k = 0; k < 8; k++)
                v |= (uint64_t)b[i * 8 + (size_t)k] << (8 * k);
            points[i] = v;
            if (v >= dims[i % (size_t)rank])
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                                "points: point %zu is out of range on axis %d", i / (size_t)rank,
                                (int)(i % (size_t)rank));
        }
        rdims[0] = npoints;
        *rrank = 1;
    } else if (!a->select || !a->select[0]) {
        *rrank = rank;
        memcpy(rdims, dims, sizeof *dims * (size_t)rank);
        *nelem = (uint64_t)H5Sget_simple_extent_npoints(space);
        return H5Sselect_all(space) < 0 ? h5u_fail(err, H5ARK_INTERNAL, "cannot select") : 0;
    } else {
        axis_sel ax[H5S_MAX_RANK];
        bool lists = false;
        if (parse_select(a->select, rank, dims, ax, err)) {
            free_axes(ax, rank);
            return -1;
        }
        for (int i = 0; i < rank; i++)
            lists |= ax[i].list;
        if (lists) {
            rc = list_points(ax, rank, &points, &npoints, rdims, rrank, err);
        } else {
            hsize_t start[H5S_MAX_RANK], step[H5S_MAX_RANK];
            uint64_t total = 1;
            for (int i = 0; i < rank; i++) {
                start[i] = ax[i].start;
                step[i] = ax[i].step;
                rdims[i] = ax[i].count;
                total *= ax[i].count;
            }
            *rrank = rank;
            *nelem = total;
            if (total == 0)
                rc = H5Sselect_none(space);
            else
                rc = H5Sselect_hyperslab(space, H5S_SELECT_SET, start, step, rdims, NULL);
            if (rc < 0) rc = h5u_fail(err, H5ARK_INTERNAL, "cannot select");
        }
        free_axes(ax, rank);
        if (rc || !lists) return rc;
    }
    if (rc == 0) {
        *nelem = npoints;
        rc = npoints ? H5Sselect_elements(space, H5S_SELECT_SET, npoints, points)
                     : H5Sselect_none(space);
        if (rc < 0) rc = h5u_fail(err, H5ARK_INTERNAL, "cannot select the points");
    }
    free(points);
    return rc;
}

/* h5obj_values_begin up to its buffer and memory space. */
static int values_select(hid_t dset, const h5obj_args *a, uint64_t max_bytes, h5obj_values *v,
                         h5ark_error *err) {
    *v = (h5obj_values){
        .ftype = H5Dget_type(dset), .space = H5Dget_space(dset), .wire = -1, .mspace = -1};
    if (v->ftype < 0 || v->space < 0)
        return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the dataset's type or shape");
    v->cls = H5Sget_simple_extent_type(v->space);
    if (v->cls == H5S_NULL) return 1;
    if (v->cls == H5S_SCALAR && ((a->select && a->select[0]) || a->points))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "a scalar dataset takes no selection");
    if (v->cls == H5S_SCALAR)
        v->n = 1;
    else if (h5obj_select(v->space, a, v->rdims, &v->rrank, &v->n, err))
        return -1;
    if ((v->wire = h5obj_wire_type(v->ftype, &v->vlen, err)) < 0) return -1;
    if (a->fields && a->fields[0]) { /* only these members of a compound */
        hid_t sub = h5obj_wire_fields(v->wire, a->fields, err);
        if (sub < 0) return -1;
        H5Tclose(v->wire);
        v->wire = sub; /* vlen stays as the whole type's: a buffer reclaimed whole */
    }
    size_t size = H5Tget_size(v->wire);
    if (!v->vlen && v->n * size > max_bytes)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "%llu bytes of values, over max_request_size (%llu)",
                          (unsigned long long)(v->n * size), (unsigned long long)max_bytes);
    return 0;
}

static int values_buffer(h5obj_values *v, h5ark_error *err) {
    size_t size = H5Tget_size(v->wire);
    /* every byte is read or written (pointers too), but a vlen buffer is reclaimed whole;
     * fixed-size elements in a block used before, whose pages need no faulting in */
    v->buf = v->vlen ? calloc(v->n ? v->n : 1, size) : h5obj_bytes_alloc(v->n * size);
    if (!v->buf) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    hsize_t m = v->n;
    v->mspace = v->cls == H5S_SCALAR ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &m, NULL);
    return v->mspace < 0 ? h5u_fail(err, H5ARK_INTERNAL, "cannot make a dataspace") : 0;
}

int h5obj_values_begin(hid_t dset, const h5obj_args *a, uint64_t max_bytes, h5obj_values *v,
                       h5ark_error *err) {
    int rc = values_select(dset, a, max_bytes, v, err);
    return rc ? rc : values_buffer(v, err);
}

/* Where the selected values lie in the file as one run of the answer's bytes: a contiguous
 * dataset stored in the wire type (no conversion, no filters, no external storage), and a
 * selection of whole trailing rows (a block of C order). 1 with the run, else 0. */
static int file_run(hid_t dset, const h5obj_values *v, uint64_t *offset, uint64_t *len) {
    int rank = H5Sget_simple_extent_ndims(v->space);
    hsize_t dims[H5S_MAX_RANK], start[H5S_MAX_RANK] = {0}, n[H5S_MAX_RANK];
    hsize_t stride[H5S_MAX_RANK], count[H5S_MAX_RANK], block[H5S_MAX_RANK];
    if (v->vlen || v->n == 0 || v->cls != H5S_SIMPLE || rank <= 0 ||
        H5Sget_simple_extent_dims(v->space, dims, NULL) < 0 || H5Tequal(v->ftype, v->wire) <= 0)
        return 0;
    H5S_sel_type sel = H5Sget_select_type(v->space);
    if (sel == H5S_SEL_ALL) {
        memcpy(n, dims, sizeof *dims * (size_t)rank);
    } else if (sel == H5S_SEL_HYPERSLABS && H5Sis_regular_hyperslab(v->space) > 0 &&
               H5Sget_regular_hyperslab(v->space, start, stride, count, block) >= 0) {
        for (int i = 0; i < rank; i++) {
            if (count[i] > 1 && stride[i] != block[i]) return 0; /* gaps on this axis */
            n[i] = count[i] * block[i];
        }
    } else {
        return 0;
    }
    int k = rank - 1; /* the partial axis: those after it whole, those before it one index */
    while (k > 0 && start[k] == 0 && n[k] == dims[k])
        k--;
    for (int i = 0; i < k; i++)
        if (n[i] != 1) return 0;
    /* defined for contiguous storage only, allocated and in the file itself (not external;
     * filters are for chunks) */
    haddr_t base = H5Dget_offset(dset);
    H5Eclear2(H5E_DEFAULT);
    if (base == HADDR_UNDEF) return 0;
    uint64_t first = 0; /* the run's first element, in C order */
    for (int i = 0; i < rank; i++)
        first = first * dims[i] + start[i];
    size_t size = H5Tget_size(v->wire);
    *offset = base + first * size;
    *len = v->n * size;
    return 1;
}

/* A selection read straight from the file's bytes (h5obj_file's lock_fd: the file as the
 * request found it, under its shared flock), without the library: large runs piece by
 * piece as they are sent (no block of their size in memory), small ones with one pread.
 * 1 when so answered, 0 when the library must read it, -1 with err. */
static int read_run(h5obj_file *f, hid_t dset, const h5obj_values *v, const h5obj_args *a,
                    h5obj_answer *out, h5ark_error *err) {
    uint64_t offset, len;
    struct stat st;
    if (f->lock_fd < 0 || a->json_values || !file_run(dset, v, &offset, &len) ||
        fstat(f->lock_fd, &st) != 0 || offset + len > (uint64_t)st.st_size)
        return 0;
    if (a->file_answer && len >= H5OBJ_FILE_ANSWER_MIN &&
        (out->run = h5obj_kept_run(f, offset, len))) {
        out->nbytes = len; /* read as sent, under the request's flock until the last byte */
        return 1;
    }
    char *bytes = h5obj_bytes_alloc(len);
    if (!bytes) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (io_pread_full(f->lock_fd, bytes, len, offset)) {
        h5obj_bytes_free(bytes, len);
        return 0; /* the library reads it, and says what failed */
    }
    out->bytes = bytes;
    out->nbytes = len;
    return 1;
}

void h5obj_values_end(h5obj_values *v) {
    if (v->vlen)
        free(v->buf);
    else if (v->buf)
        h5obj_bytes_free(v->buf, v->n * H5Tget_size(v->wire));
    if (v->mspace >= 0) H5Sclose(v->mspace);
    if (v->wire >= 0) H5Tclose(v->wire);
    if (v->space >= 0) H5Sclose(v->space);
    if (v->ftype >= 0) H5Tclose(v->ftype);
}

int h5obj_read_value(h5obj_file *f, hid_t dset, const h5obj_args *a, h5obj_answer *out,
                     h5ark_error *err) {
    h5obj_values v;
    int rc = values_select(dset, a, a->max_bytes, &v, err);
    int direct = rc == 0 ? read_run(f, dset, &v, a, out, err) : 0;
    if (direct) {
        h5obj_values_end(&v);
        return direct < 0 ? -1 : 0;
    }
    if (rc == 0) rc = values_buffer(&v, err);
    if (rc == 1) { /* a null shape: nothing to read */
        out->json = h5ark_value_map();
        if (a->json_values) h5ark_value_set(out->json, "value", h5ark_value_nil());
        rc = out->json ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    } else if (rc == 0 && v.n && H5Dread(dset, v.wire, v.mspace, v.space, H5P_DEFAULT, v.buf) < 0) {
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot read the values");
        h5u_io_blame(f->fid, err);
    } else if (rc == 0) {
        if (a->json_values) {
            h5ark_value *j = h5obj_values_json(v.wire, v.buf, v.n, v.rdims, v.rrank, err);
            out->json = h5ark_value_map();
            if (!j || !out->json || h5ark_value_set(out->json, "value", j))
                rc = err->code ? -1 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        } else if (v.vlen) {
            rc =
                h5obj_vlen_binary(v.wire, v.buf, v.n, a->max_bytes, &out->bytes, &out->nbytes, err);
        } else {
            out->bytes = v.buf;
            out->nbytes = v.n * H5Tget_size(v.wire);
            v.buf = NULL;
        }
        if (v.vlen && v.n) H5Dvlen_reclaim(v.wire, v.mspace, H5P_DEFAULT, v.buf);
    }
    h5obj_values_end(&v);
    return rc;
}

/* Large answers' blocks come from and go back to the shard cache (shardcache.h), under a
 * locale of their own: a slab read after another finds its pages touched already. */
#define ANSWER_LOCALE (-1)

char *h5obj_bytes_alloc(uint64_t n) {
    return shardcache_alloc(ANSWER_LOCALE, n);
}

void h5obj_bytes_free(char *bytes, size_t n) {
    shardcache_give(ANSWER_LOCALE, bytes, n);
}

h5ark_value *h5obj_attr_value(hid_t attr, h5ark_error *err) {
    hid_t ftype = H5Aget_type(attr), space = H5Aget_space(attr), wire = -1;
    h5ark_value *v = NULL;
    char *buf = NULL;
    bool vlen = false;
    hsize_t dims[H5S_MAX_RANK];
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (ftype < 0 || rank < 0 || n < 0 || H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the attribute's type or shape");
        goto done;
    }
    if (H5Sget_simple_extent_type(space) == H5S_NULL) {
        v = h5ark_value_nil();
        goto done;
    }
    if ((wire = h5obj_wire_type(ftype, &vlen, err)) < 0) goto done;
    size_t size = H5Tget_size(wire);
    if ((uint64_t)n * size > H5OBJ_MAX_REQUEST) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "the attribute's value is too large to answer");
        goto done;
    }
    buf = calloc(n ? (size_t)n : 1, size);
    if (!buf) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto done;
    }
    if (n && H5Aread(attr, wire, buf) < 0) {
        h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the attribute's value");
        goto done;
    }
    v = h5obj_values_json(wire, buf, (size_t)n, dims, rank, err);
    if (vlen && n) H5Dvlen_reclaim(wire, space, H5P_DEFAULT, buf);
done:
    free(buf);
    if (wire >= 0) H5Tclose(wire);
    if (space >= 0) H5Sclose(space);
    if (ftype >= 0) H5Tclose(ftype);
    return v;
}
