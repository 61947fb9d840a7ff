/* Elements of a dataset into memory (hdf5_util.h): h5u_read_elems through HDF5, and
 * h5u_read_chunks / h5u_read_slab, which find the stored chunks and read them without
 * HDF5's lock where the layout allows. */
#include "hdf5_util.h"

#include "io.h"
#include "layout.h"
#include "ohdr.h"
#include "shuffle.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int h5u_read_elems(hid_t loc, const char *dset_path, uint64_t first, uint64_t count,
                   h5ark_dtype dtype, void *dest, h5ark_error *err) {
    int rc = -1;
    hid_t dset = H5I_INVALID_HID, ftype = H5I_INVALID_HID, mtype = H5I_INVALID_HID;
    hid_t fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    void *rows = NULL;
    dset = H5Dopen2(loc, dset_path, H5P_DEFAULT);
    ftype = dset >= 0 ? H5Dget_type(dset) : H5I_INVALID_HID;
    if (ftype < 0) {
        h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot open the dataset");
        goto out;
    }
    /* h5py's bools are an enum that HDF5 will not convert to an integer: read it as itself */
    size_t half = 0;
    if (dtype == H5ARK_BOOLEAN && H5Tget_class(ftype) == H5T_ENUM) {
        mtype = H5Tget_native_type(ftype, H5T_DIR_ASCEND);
    } else if (h5ark_dtype_is_float(dtype) && h5u_is_complex_pair(ftype, &half)) {
        /* h5py's complex, counted in floats: its pairs as two floats of dtype each */
        size_t fs = h5ark_dtype_size(dtype);
        mtype = H5Tcreate(H5T_COMPOUND, 2 * fs);
        if (mtype >= 0 && (H5Tinsert(mtype, "r", 0, h5u_mem_type(dtype)) < 0 ||
                           H5Tinsert(mtype, "i", fs, h5u_mem_type(dtype)) < 0)) {
            H5Tclose(mtype);
            mtype = H5I_INVALID_HID;
        }
    } else {
        mtype = H5Tcopy(h5u_mem_type(dtype));
    }
    uint64_t pair = half ? 2 : 1;
    fspace = H5Dget_space(dset);
    int rank = fspace >= 0 ? H5Sget_simple_extent_ndims(fspace) : -1;
    hsize_t dims[H5S_MAX_RANK], start[H5S_MAX_RANK] = {0}, cnt[H5S_MAX_RANK];
    if (rank < 1 || H5Sget_simple_extent_dims(fspace, dims, NULL) < 0) {
        h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the dataset's shape");
        goto out;
    }
    /* an N-d dataset's elements [first, first + count) in C order: the whole rows that hold
     * them, then the part wanted */
    uint64_t inner = pair; /* a complex pair's two floats are its innermost dimension */
    for (int i = 1; i < rank; i++) {
        inner *= dims[i];
        cnt[i] = dims[i];
    }
    bool rows_of = rank > 1 || pair > 1;
    uint64_t row0 = inner ? first / inner : 0, skip = first - row0 * inner;
    start[0] = rows_of ? row0 : first;
    cnt[0] = rows_of ? (inner ? (first + count + inner - 1) / inner - row0 : 0) : count;
    hsize_t total = rows_of ? cnt[0] * inner : count;
    size_t msize = mtype >= 0 ? H5Tget_size(mtype) / pair : 0;
    if (rows_of && (total != count || skip)) {
        rows = msize && total <= SIZE_MAX / msize ? sysio.malloc(total * msize) : NULL;
        if (!rows) {
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
    }
    hsize_t melems = total / pair;
    mspace = H5Screate_simple(1, &melems, NULL);
    if (mtype < 0 || mspace < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0) {
        h5u_fail(err, H5ARK_INTERNAL, "cannot select elements %llu..%llu",
                 (unsigned long long)first, (unsigned long long)(first + count));
        goto out;
    }
    if (H5Dread(dset, mtype, mspace, fspace, H5P_DEFAULT, rows ? rows : dest) < 0) {
        h5u_fail(err, H5ARK_IO_ERROR, "cannot read elements %llu..%llu", (unsigned long long)first,
                 (unsigned long long)(first + count));
        goto out;
    }
    if (rows) memcpy(dest, (char *)rows + skip * msize, count * msize);
    rc = 0;
out:
    free(rows);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    if (mtype >= 0) H5Tclose(mtype);
    if (ftype >= 0) H5Tclose(ftype);
    if (dset >= 0) H5Dclose(dset);
    return rc;
}

/* A run of bytes in a file: the next elements of a read, in order. */
typedef struct {
    uint64_t offset, nbytes;
} h5u_run;

/* The stored chunks holding elements [first, first + count) of chunked dataset d, found a
 * chunk at a time by H5Dread_chunk with the driver reading no raw data (h5u_vfd_defer_raw),
 * so that the calling thread then reads them without HDF5 and its lock, in parallel with
 * other threads and without the copy H5Dread makes through its chunk cache. Unfiltered
 * (`filtered` false): every chunk must be stored as its elements, chunk * itemsize bytes;
 * filtered: every filter applied (mask 0) and the stored size at most ohdr_stream_max of it.
 * 1 with *places (malloc'd, one a chunk, in order) and *chunk_elems; 0 when the dataset is
 * not in that form (another element size, a chunk not allocated or of another size, a user
 * block, a chunk over 64 MiB): then HDF5 reads it; -1 out of memory. The filters themselves
 * are the caller's to check. */
typedef struct {
    uint64_t at;         /* the chunk's first element */
    uint64_t addr, size; /* its stored bytes in the file */
} h5u_chunk_place;

static int chunk_places(hid_t f, hid_t d, uint64_t first, uint64_t count, size_t itemsize,
                        bool filtered, h5u_chunk_place **places, size_t *nplaces,
                        uint64_t *chunk_elems, h5ark_error *err) {
    int rc = 0;
    h5u_chunk_place *v = NULL;
    hid_t fcpl = H5Fget_create_plist(f);
    hid_t dcpl = H5Dget_create_plist(d);
    hid_t type = H5Dget_type(d);
    hsize_t chunk = 0, userblock = 1, fsize = 0;
    if (fcpl < 0 || H5Pget_userblock(fcpl, &userblock) < 0 || userblock != 0 ||
        H5Fget_filesize(f, &fsize) < 0 || dcpl < 0 || H5Pget_layout(dcpl) != H5D_CHUNKED ||
        H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0 || type < 0 ||
        H5Tget_size(type) != itemsize || count == 0 || chunk > (UINT64_C(64) << 20) / itemsize)
        goto out;
    uint64_t c0 = first / chunk, c1 = (first + count - 1) / chunk, cbytes = chunk * itemsize;
    if (!(v = sysio.malloc((size_t)(c1 - c0 + 1) * sizeof *v))) {
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    size_t n = 0;
    for (uint64_t c = c0; c <= c1; c++) {
        hsize_t at = c * chunk, size = 0;
        uint32_t mask = 0;
        h5u_raw_place place = {0};
        unsigned char none;
        /* the size the chunk index gives, which is what H5Dread_chunk reads */
        if (H5Dget_chunk_storage_size(d, &at, &size) < 0) goto out;
        if (filtered ? size == 0 || size > ohdr_stream_max(cbytes) : size != cbytes) goto out;
        h5u_vfd_defer_raw(&place);
        herr_t r = H5Dread_chunk(d, H5P_DEFAULT, &at, &mask, &none);
        h5u_vfd_defer_raw(NULL);
        if (r < 0 || mask != 0 || place.reads != 1 || place.size != size || place.addr > fsize ||
            size > fsize - place.addr)
            goto out;
        v[n++] = (h5u_chunk_place){.at = at, .addr = place.addr, .size = size};
    }
    *places = v;
    *nplaces = n;
    *chunk_elems = chunk;
    v = NULL;
    rc = 1;
out:
    free(v);
    if (type >= 0) H5Tclose(type);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (fcpl >= 0) H5Pclose(fcpl);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* The filters of d: how many, or -1. */
static int filter_count(hid_t d) {
    hid_t dcpl = H5Dget_create_plist(d);
    int n = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1;
    if (dcpl >= 0) H5Pclose(dcpl);
    return n;
}

/* Where elements [first, first + count) of d lie when its chunks are stored unfiltered: 1
 * with *runs (malloc'd; adjacent whole chunks joined) to be pread as they are, 0 when they
 * are not (then H5Dread), -1 out of memory (chunk_places). */
static int raw_chunk_runs(hid_t f, hid_t d, uint64_t first, uint64_t count, size_t itemsize,
                          h5u_run **runs, size_t *nruns, h5ark_error *err) {
    if (filter_count(d) != 0) return 0;
    h5u_chunk_place *pl = NULL;
    size_t np = 0;
    uint64_t chunk = 0;
    int rc = chunk_places(f, d, first, count, itemsize, false, &pl, &np, &chunk, err);
    if (rc != 1) return rc;
    h5u_run *v = pl ? sysio.malloc(np * sizeof *v) : NULL;
    if (!v) {
        free(pl);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; i < np; i++) {
        uint64_t lo = i == 0 ? (first - pl[i].at) * itemsize : 0;
        uint64_t hi = i == np - 1 ? (first + count - pl[i].at) * itemsize : pl[i].size;
        if (n && v[n - 1].offset + v[n - 1].nbytes == pl[i].addr + lo)
            v[n - 1].nbytes += hi - lo;
        else
            v[n++] = (h5u_run){pl[i].addr + lo, hi - lo};
    }
    free(pl);
    *runs = v;
    *nruns = n;
    return 1;
}

static int pread_runs(const char *file, const h5u_run *runs, size_t n, void *dest,
                      h5ark_error *err) {
    int fd = sysio.open(file, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return h5ark_fail(err, H5ARK_IO_ERROR, "cannot open the file: %s", strerror(errno));
    int rc = 0;
    char *out = dest;
    for (size_t i = 0; i < n && rc == 0; out += runs[i].nbytes, i++)
        if (io_pread_full(fd, out, runs[i].nbytes, runs[i].offset))
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot read its chunks: %s",
                            errno == ENODATA ? "the file ends early" : strerror(errno));
    sysio.close(fd);
    return rc;
}

/* A deflated chunk, to be inflated without HDF5: where its zlib stream lies in the file, and
 * which of its elements are wanted. */
typedef struct {
    uint64_t addr, size;
    uint64_t lo, hi;
} h5u_zchunk;

/* Where the deflated chunks holding elements [first, first + count) of d lie (chunk_places):
 * 1 with *zs (malloc'd), the chunk's elements and whether they
 * are shuffled, to be read and inflated by the calling thread, in parallel with the others,
 * with libdeflate (faster than zlib, which HDF5 inflates with under its lock); 0 when the
 * data is not in that form: filters other than deflate or shuffle then deflate, a shuffle of
 * another element size, a chunk with a filter skipped, not allocated, or larger than a
 * stream of it can be: then HDF5 reads it. -1 out of memory. */
static int deflated_chunks(hid_t f, hid_t d, uint64_t first, uint64_t count, size_t itemsize,
                           h5u_zchunk **zs, size_t *nz, uint64_t *chunk_elems, bool *shuffled,
                           h5ark_error *err) {
    hid_t dcpl = H5Dget_create_plist(d);
    int nfilters = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1;
    bool ok = nfilters >= 1 && nfilters <= 2;
    for (int i = 0; ok && i < nfilters; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        H5Z_filter_t want = i == nfilters - 1 ? H5Z_FILTER_DEFLATE : H5Z_FILTER_SHUFFLE;
        if (H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL) != want) ok = false;
        /* the shuffle's element size is recorded when the dataset is made */
        else if (want == H5Z_FILTER_SHUFFLE && (ncd < 1 || cd[0] != itemsize))
            ok = false;
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    H5Eclear2(H5E_DEFAULT);
    if (!ok) return 0;
    h5u_chunk_place *pl = NULL;
    size_t np = 0;
    uint64_t chunk = 0;
    int rc = chunk_places(f, d, first, count, itemsize, true, &pl, &np, &chunk, err);
    if (rc != 1) return rc;
    h5u_zchunk *v = pl ? sysio.malloc(np * sizeof *v) : NULL;
    if (!v) {
        free(pl);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (size_t i = 0; i < np; i++)
        v[i] = (h5u_zchunk){
            .addr = pl[i].addr,
            .size = pl[i].size,
            .lo = i == 0 ? first - pl[i].at : 0,
            .hi = i == np - 1 ? first + count - pl[i].at : chunk,
        };
    free(pl);
    *zs = v;
    *nz = np;
    *chunk_elems = chunk;
    *shuffled = nfilters == 2;
    return 1;
}

/* Read and inflate the chunks, their wanted elements in order into dest: 0 done, -1 an I/O
 * error, out of memory, or a stream that is not a whole chunk's (err set). HDF5 would fail a
 * damaged stream too, but one that inflates to less than a chunk it reads as a chunk of
 * whatever its buffer held beyond: refused here. */
static int inflate_chunks(const char *file, const h5u_zchunk *zs, size_t nz, uint64_t chunk,
                          size_t isz, bool shuffled, unsigned char *dest, h5ark_error *err) {
    uint64_t cbytes = chunk * isz, most = 0;
    for (size_t i = 0; i < nz; i++)
        if (zs[i].size > most) most = zs[i].size;
    unsigned char *in = sysio.malloc((size_t)most), *buf = sysio.malloc((size_t)cbytes);
    struct libdeflate_decompressor *dec = libdeflate_alloc_decompressor();
    int fd = in && buf && dec ? sysio.open(file, O_RDONLY | O_CLOEXEC, 0) : -1;
    int rc = 0;
    if (!in || !buf || !dec)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory to inflate chunks");
    else if (fd < 0)
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot open the file: %s", strerror(errno));
    for (size_t i = 0; i < nz && rc == 0; i++) {
        const h5u_zchunk *z = &zs[i];
        if (io_pread_full(fd, in, z->size, z->addr)) {
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot read its chunks: %s",
                            errno == ENODATA ? "the file ends early" : strerror(errno));
            break;
        }
        /* NULL for the size out: anything but exactly a whole chunk is not a success */
        enum libdeflate_result r = libdeflate_zlib_decompress(dec, in, z->size, buf, cbytes, NULL);
        if (r != LIBDEFLATE_SUCCESS) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "the chunk at byte %llu of the file is damaged: %s",
                            (unsigned long long)z->addr,
                            r == LIBDEFLATE_BAD_DATA ? "not a valid deflate stream"
                                                     : "it does not inflate to a whole chunk");
            break;
        }
        shuffle_undo(buf, chunk, isz, z->lo, z->hi, shuffled, dest);
        dest += (z->hi - z->lo) * isz;
    }
    if (fd >= 0) sysio.close(fd);
    if (dec) libdeflate_free_decompressor(dec);
    free(buf);
    free(in);
    return rc;
}

/* Integers of `from` (at most 4 bytes) held in the last count * size(from) bytes of dest,
 * made int64 in place, from the first: element i's bytes lie at or after where it goes, and
 * it is read before it is written. memcpy keeps the compiler from reordering the two. */
#define WIDEN(T)                                                                                   \
    for (uint64_t i = 0; i < count; i++) {                                                         \
        T v;                                                                                       \
        memcpy(&v, raw + i * sizeof v, sizeof v);                                                  \
        out[i] = v;                                                                                \
    }

static void widen_in_place(void *dest, uint64_t count, h5ark_dtype from) {
    int64_t *out = dest;
    const unsigned char *raw = (const unsigned char *)dest + count * (8 - h5ark_dtype_size(from));
    switch (from) {
    case H5ARK_INT8: WIDEN(int8_t) break;
    case H5ARK_UINT8: WIDEN(uint8_t) break;
    case H5ARK_INT16: WIDEN(int16_t) break;
    case H5ARK_UINT16: WIDEN(uint16_t) break;
    case H5ARK_INT32: WIDEN(int32_t) break;
    default: WIDEN(uint32_t) break;
    }
}

#undef WIDEN

static bool widens(h5ark_dtype from, h5ark_dtype to) {
    return to == H5ARK_INT64 &&
           (from == H5ARK_INT8 || from == H5ARK_UINT8 || from == H5ARK_INT16 ||
            from == H5ARK_UINT16 || from == H5ARK_INT32 || from == H5ARK_UINT32);
}

int h5u_read_chunks(const char *file, const char *dset_path, uint64_t first, uint64_t count,
                    h5ark_dtype dtype, bool exact, h5ark_dtype file_dtype, void *dest,
                    h5ark_error *err) {
    h5u_quiet();
    h5u_io_clear();
    hid_t file_id = H5Fopen(file, H5F_ACC_RDONLY, h5u_fapl());
    if (file_id < 0) return h5u_fail(err, H5ARK_IO_ERROR, "cannot open the file");
    int rc = 0, zrc = 0;
    h5u_run *runs = NULL;
    size_t nruns = 0;
    h5u_zchunk *zs = NULL;
    size_t nz = 0;
    uint64_t chunk = 0;
    bool shuffled = false;
    size_t size = h5ark_dtype_size(file_dtype);
    if (exact && (file_dtype == dtype || widens(file_dtype, dtype))) {
        hid_t d = H5Dopen2(file_id, dset_path, H5P_DEFAULT);
        rc = d >= 0 ? raw_chunk_runs(file_id, d, first, count, size, &runs, &nruns, err) : 0;
        if (d >= 0 && rc == 0)
            zrc = deflated_chunks(file_id, d, first, count, size, &zs, &nz, &chunk, &shuffled, err);
        if (zrc < 0) rc = -1;
        if (d >= 0) H5Dclose(d);
        H5Eclear2(H5E_DEFAULT);
    }
    if (rc == 0 && zrc == 0) {
        rc = h5u_read_elems(file_id, dset_path, first, count, dtype, dest, err);
        if (rc) h5u_io_blame(file_id, err);
    }
    if (H5Fclose(file_id) < 0 && rc >= 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close the file");
    /* narrower integers are read into the end of dest, then widened */
    char *tail = (char *)dest + count * (h5ark_dtype_size(dtype) - size);
    bool direct = rc > 0 || (rc == 0 && zrc > 0);
    if (rc > 0) {
        rc = pread_runs(file, runs, nruns, tail, err);
    } else if (direct) {
        rc = inflate_chunks(file, zs, nz, chunk, size, shuffled, (unsigned char *)tail, err);
    }
    if (direct && rc == 0 && file_dtype != dtype) widen_in_place(dest, count, file_dtype);
    free(runs);
    free(zs);
    return rc < 0 ? -1 : 0;
}

int h5u_read_slab(const char *file, const char *dset_path, uint64_t first, uint64_t count,
                  h5ark_dtype dtype, void *dest, h5ark_error *err) {
    h5u_quiet();
    h5u_io_clear();
    hid_t file_id = H5Fopen(file, H5F_ACC_RDONLY, h5u_fapl());
    if (file_id < 0) return h5u_fail(err, H5ARK_IO_ERROR, "cannot open the file");
    int rc = h5u_read_elems(file_id, dset_path, first, count, dtype, dest, err);
    if (rc) h5u_io_blame(file_id, err);
    if (H5Fclose(file_id) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close the file");
    return rc;
}
