/* Unit tests of pack's reader of object headers and chunk indexes (storage/ohdr.c) on files
 * the library writes: what it reads of plain datasets, with version 1 and 2 headers and a
 * user block, and of their chunks (a version 1 B-tree, a single chunk, a fixed array;
 * deflated and shuffled), is what the library says of them; for what it does not
 * understand it declines. */
#include "check.h"
#include "config.h"
#include "storage/ohdr.h"

#include <fcntl.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

static int fd_read(void *ctx, uint64_t offset, void *buf, size_t n) {
    return pread(*(int *)ctx, buf, n, (off_t)offset) == (ssize_t)n ? 0 : -1;
}

static hid_t dataset(hid_t f, const char *name, hid_t type, int rank, const hsize_t *dims,
                     H5D_layout_t layout, bool gzip) {
    hid_t space = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[2] = {1, 1};
    if (layout == H5D_CHUNKED) H5Pset_chunk(dcpl, rank, chunk);
    if (gzip) H5Pset_shuffle(dcpl);
    if (layout == H5D_COMPACT) H5Pset_layout(dcpl, H5D_COMPACT);
    if (gzip) H5Pset_deflate(dcpl, 4);
    hid_t d = H5Dcreate2(f, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(space);
    return d;
}

/* The chunks the reader finds are the library's: where, how large, which filters skipped. */
static void same_chunks(const char *path, const char *name, const ohdr_file *of,
                        const ohdr_dataset *d) {
    ohdr_chunk c[64];
    CHECK(d->nchunks <= 64 && ohdr_read_chunks(of, d, c) == 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), ds = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t space = H5Dget_space(ds);
    hsize_t n = 0;
    CHECK(H5Dget_num_chunks(ds, space, &n) >= 0 && n == d->nchunks);
    for (hsize_t k = 0; k < n; k++) {
        hsize_t at[OHDR_MAX_RANK], size;
        unsigned mask;
        haddr_t addr;
        CHECK(H5Dget_chunk_info(ds, space, k, at, &mask, &addr, &size) >= 0);
        uint64_t index = 0;
        for (unsigned i = 0; i < d->rank; i++)
            index = index * ((d->dims[i] + d->chunk[i] - 1) / d->chunk[i]) + at[i] / d->chunk[i];
        /* the library's addresses are relative to the superblock, the reader's absolute */
        CHECKF(c[k].index == index && c[k].addr == of->base + addr && c[k].size == size &&
                   c[k].mask == mask,
               "%s chunk %llu", name, (unsigned long long)k);
    }
    H5Sclose(space);
    H5Dclose(ds);
    H5Fclose(f);
}

/* Chunked datasets of every index the reader reads and some it declines. */
static void chunk_layouts(bool latest) {
    char path[] = "/tmp/h5ark-ohdr-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (latest) H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    static const struct {
        const char *name;
        hsize_t chunk[2];
        bool shuffle, gzip, fletcher, unlimited;
        int ok; /* read here, with this many chunks; 0: declined */
    } cases[] = {
        {"edges", {2, 2}, true, true, false, false, 6},  /* 3x5 in 2x2: edge chunks */
        {"whole", {3, 5}, false, true, false, false, 1}, /* one chunk: a single-chunk index */
        {"plain", {3, 5}, false, false, false, false, 1},
        {"shuffled", {1, 5}, true, false, false, false, 3},
        {"fletcher", {1, 5}, false, true, true, false, 0},
        {"unlimited", {1, 5}, false, false, false, true, 0}, /* v4: an extensible array */
    };
    double v[15];
    for (int i = 0; i < 15; i++)
        v[i] = i * 1.5;
    hsize_t dims[2] = {3, 5}, maxdims[2] = {H5S_UNLIMITED, 5};
    haddr_t addrs[6];
    for (int k = 0; k < 6; k++) {
        hid_t space = H5Screate_simple(2, dims, cases[k].unlimited ? maxdims : NULL);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 2, cases[k].chunk);
        if (cases[k].fletcher) H5Pset_fletcher32(dcpl);
        if (cases[k].shuffle) H5Pset_shuffle(dcpl);
        if (cases[k].gzip) H5Pset_deflate(dcpl, 6);
        hid_t d =
            H5Dcreate2(f, cases[k].name, H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        H5O_info_t info;
        H5Oget_info2(d, &info, H5O_INFO_BASIC);
        addrs[k] = info.addr;
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(space);
    }
    H5Fclose(f);
    H5Pclose(fapl);
    ohdr_file of = {.read = fd_read,
                    .ctx = &fd,
                    .eof = (uint64_t)lseek(fd, 0, SEEK_END),
                    .sizeof_addr = 8,
                    .sizeof_size = 8};
    for (int k = 0; k < 6; k++) {
        ohdr_dataset d;
        int rc = ohdr_read_dataset(&of, addrs[k], &d);
        bool ok = cases[k].ok && !(cases[k].unlimited && latest);
        if (cases[k].unlimited && !latest) ok = true; /* a B-tree either way */
        CHECKF(ok ? rc == 0 : rc == -1, "%s latest %d", cases[k].name, latest);
        if (rc) continue;
        CHECK(d.chunked && d.rank == 2 && d.chunk[0] == cases[k].chunk[0]);
        CHECK(d.nchunks == (cases[k].ok ? (uint64_t)cases[k].ok : 3));
        same_chunks(path, cases[k].name, &of, &d);
        /* an index naming a chunk outside the file: declined */
        ohdr_chunk c[8];
        CHECK(ohdr_read_chunks(&of, &d, c) == 0);
        ohdr_file cut = of;
        cut.eof = c[d.nchunks - 1].addr + c[d.nchunks - 1].size - 1;
        CHECK(ohdr_read_dataset(&cut, addrs[k], &d) == -1 || ohdr_read_chunks(&cut, &d, c) == -1);
    }
    close(fd);
    unlink(path);
}

static void one_file(bool latest, hsize_t userblock) {
    char path[] = "/tmp/h5ark-ohdr-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (latest) H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    if (userblock) H5Pset_userblock(fcpl, userblock);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    CHECK(f >= 0);
    hsize_t dims[2] = {3, 5}, one = 4;
    static const struct {
        const char *name;
        bool is_float, is_signed, big;
        unsigned size;
    } types[] = {{"i1", false, true, false, 1}, {"u2be", false, false, true, 2},
                 {"i4", false, true, false, 4}, {"u8", false, false, false, 8},
                 {"f4be", true, true, true, 4}, {"f8", true, true, false, 8}};
    hid_t tids[] = {H5T_STD_I8LE,  H5T_STD_U16BE,  H5T_STD_I32LE,
                    H5T_STD_U64LE, H5T_IEEE_F32BE, H5T_IEEE_F64LE};
    haddr_t contig[6], compact, chunked, gzip, unwritten, bits;
    double zeros[15] = {0};
    for (int i = 0; i < 6; i++) {
        hid_t d = dataset(f, types[i].name, tids[i], 2, dims, H5D_CONTIGUOUS, false);
        H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros);
        H5O_info_t info;
        H5Oget_info2(d, &info, H5O_INFO_BASIC);
        contig[i] = info.addr;
        H5Dclose(d);
    }
    struct {
        const char *name;
        hid_t type;
        H5D_layout_t layout;
        bool gzip, write;
        haddr_t *addr;
    } others[] = {{"compact", H5T_STD_I32LE, H5D_COMPACT, false, true, &compact},
                  {"chunked", H5T_STD_I32LE, H5D_CHUNKED, false, true, &chunked},
                  {"gzip", H5T_STD_I32LE, H5D_CHUNKED, true, true, &gzip},
                  {"unwritten", H5T_STD_I32LE, H5D_CONTIGUOUS, false, false, &unwritten},
                  {"bits", H5T_NATIVE_B16, H5D_CONTIGUOUS, false, false, &bits}};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        hid_t d =
            dataset(f, others[i].name, others[i].type, 1, &one, others[i].layout, others[i].gzip);
        if (others[i].write) H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros);
        H5O_info_t info;
        H5Oget_info2(d, &info, H5O_INFO_BASIC);
        *others[i].addr = info.addr;
        H5Dclose(d);
    }
    H5Fclose(f);
    H5Pclose(fapl);
    H5Pclose(fcpl);

    /* the library's own answers, to check against */
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t cp = H5Fget_create_plist(f);
    size_t so, sl;
    H5Pget_sizes(cp, &so, &sl);
    H5Pclose(cp);
    haddr_t offsets[6];
    for (int i = 0; i < 6; i++) {
        hid_t d = H5Dopen2(f, types[i].name, H5P_DEFAULT);
        offsets[i] = H5Dget_offset(d);
        H5Dclose(d);
    }
    H5Fclose(f);
    uint64_t eof = (uint64_t)lseek(fd, 0, SEEK_END);
    ohdr_file of = {.read = fd_read,
                    .ctx = &fd,
                    .eof = eof,
                    .base = userblock,
                    .sizeof_addr = (unsigned)so,
                    .sizeof_size = (unsigned)sl};
    ohdr_dataset d;
    for (int i = 0; i < 6; i++) {
        CHECKF(ohdr_read_dataset(&of, contig[i], &d) == 0, "%s latest %d", types[i].name, latest);
        CHECK(d.rank == 2 && d.dims[0] == 3 && d.dims[1] == 5 && d.count == 15);
        CHECK(d.is_float == types[i].is_float && d.is_signed == types[i].is_signed);
        CHECK(d.big_endian == types[i].big && d.size == types[i].size);
        CHECK(!d.compact && d.allocated && d.offset == offsets[i]);
    }
    CHECK(ohdr_read_dataset(&of, compact, &d) == 0 && d.compact && d.count == 4 && d.size == 4);
    CHECK(ohdr_read_dataset(&of, unwritten, &d) == 0 && !d.compact && !d.allocated);
    for (int k = 0; k < 2; k++) { /* 4 chunks of 1: a B-tree (earliest), a fixed array */
        CHECK(ohdr_read_dataset(&of, k ? gzip : chunked, &d) == 0 && d.chunked && d.nchunks == 4);
        CHECK(d.nfilters == (k ? 2u : 0u) && d.chunk[0] == 1 && d.index == (latest ? 3u : 0u));
        CHECK(!k || (d.filters[0] == OHDR_FILTER_SHUFFLE && d.filters[1] == OHDR_FILTER_DEFLATE));
        same_chunks(path, k ? "gzip" : "chunked", &of, &d);
    }
    CHECK(ohdr_read_dataset(&of, bits, &d) == -1);
    /* a file cut just past the header: its data lies outside it */
    of.eof = contig[0] + userblock + 64;
    CHECK(ohdr_read_dataset(&of, contig[0], &d) == -1);
    of.eof = eof;
    /* damaged: one byte of a version 2 header changed fails its checksum */
    if (latest) {
        unsigned char b;
        off_t at = (off_t)(userblock + contig[2] + 12);
        CHECK(pread(fd, &b, 1, at) == 1);
        b ^= 0x40;
        CHECK(pwrite(fd, &b, 1, at) == 1);
        CHECK(ohdr_read_dataset(&of, contig[2], &d) == -1);
    }
    close(fd);
    unlink(path);
}

static int mem_read(void *ctx, uint64_t offset, void *buf, size_t n) {
    const unsigned char *const *im = ctx; /* {start, end} */
    if (offset > (uint64_t)(im[1] - im[0]) || n > (size_t)(im[1] - im[0]) - offset) return -1;
    memcpy(buf, im[0] + offset, n);
    return 0;
}

/* A version 1 filter pipeline message shorter than its own fixed fields (found by
 * fuzz_ohdr): declined, with nothing read outside the message. */
static void short_filter_message(void) {
    static const unsigned char header[] = {
        0x01, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x85, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x06, 0x00, 0x01, 0xff, 0xff, 0xff, 0x01, 0x02, 0x02,
        0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x00, 0x00, 0xfe, 0xff, 0xff, 0xb3, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    const unsigned char *im[2] = {header, header + sizeof header};
    ohdr_file f = {.read = mem_read,
                   .ctx = im,
                   .eof = sizeof header,
                   .base = 0,
                   .sizeof_addr = 4,
                   .sizeof_size = 2};
    ohdr_dataset d;
    CHECK(ohdr_read_dataset(&f, 0, &d) == -1);
}

int main(void) {
    /* lookup3's own test vector */
    CHECK(ohdr_checksum((const unsigned char *)"Four score and seven years ago", 30) ==
          0x17770551u);
    CHECK(ohdr_checksum((const unsigned char *)"", 0) == 0xdeadbeefu);
    for (int latest = 0; latest < 2; latest++) {
        one_file(latest, 0);
        one_file(latest, 512);
        chunk_layouts(latest);
    }
    short_filter_message();
    return check_exit("test_ohdr");
}
