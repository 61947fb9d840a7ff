/* A plain numeric dataset's metadata read straight from its object header bytes (the HDF5
 * file format's version 1 and 2 object headers), for pack's probe of sample files: opening
 * a dataset through the library costs far more than the few messages pack needs. Only a
 * shortcut: it answers only for the datasets it understands entirely (a simple dataspace, a
 * standard integer or IEEE float type; contiguous or compact storage, or chunks indexed by
 * a version 1 B-tree, a single chunk or an unpaged fixed array, filtered by nothing but
 * deflate and shuffle; no external files, nothing shared) and says "ask the library" for
 * everything else, so that what a file holds is never decided here. Every read is bounded
 * by the file's size and every walk (continuation chunks, B-tree nodes) is bounded, so
 * damaged headers and indexes cannot make it loop. */
#ifndef H5ARK_STORAGE_OHDR_H
#define H5ARK_STORAGE_OHDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OHDR_MAX_RANK        32 /* HDF5's H5S_MAX_RANK */
#define OHDR_MAX_FILTERS     2
#define OHDR_CHUNK_BYTES_MAX (64u << 20) /* a chunk's bytes, at most, read without the library */
#define OHDR_CHUNKS_MAX      (1u << 16)  /* chunks a dataset, at most */

/* The largest deflate stream of a chunk of `bytes` taken as one: zlib's worst case is a few
 * bytes in a thousand over the data; anything larger is left to the library. */
static inline uint64_t ohdr_stream_max(uint64_t bytes) {
    return bytes + bytes / 64 + 1024;
}

/* The filters read without the library, as the pipeline lists them. */
enum { OHDR_FILTER_DEFLATE = 1, OHDR_FILTER_SHUFFLE = 2 };

typedef struct {
    /* n bytes at absolute file offset `offset` into buf: 0 when all of them were read */
    int (*read)(void *ctx, uint64_t offset, void *buf, size_t n);
    void *ctx;
    uint64_t eof;         /* the file's size: nothing is read past it */
    uint64_t base;        /* the superblock's place (the user block's size): addresses in
                             the file are relative to it */
    unsigned sizeof_addr; /* the superblock's sizes of offsets and lengths: 2, 4 or 8 */
    unsigned sizeof_size;
} ohdr_file;

typedef struct {
    unsigned rank;
    uint64_t dims[OHDR_MAX_RANK];
    uint64_t count; /* elements: the product of dims */
    unsigned size;  /* bytes an element: 1, 2, 4 or 8 */
    bool is_float;  /* IEEE 754 binary32/binary64, else a two's complement or unsigned integer */
    bool is_signed;
    bool big_endian;
    bool compact;    /* the data is in the header, at offset (else contiguous or chunked) */
    bool allocated;  /* contiguous or compact storage that has its place in the file */
    uint64_t offset; /* with allocated: where its count * size bytes start, absolute */
    /* chunked: every chunk of the grid in the file (none missing), found by
     * ohdr_read_chunks; the chunks' shape, how many there are, and their filters in
     * pipeline order (OHDR_FILTER_*; a shuffle's element size is the type's) */
    bool chunked;
    uint64_t chunk[OHDR_MAX_RANK];
    uint64_t nchunks;
    unsigned nfilters;
    unsigned char filters[OHDR_MAX_FILTERS];
    /* where the index is: its kind (the layout message's), its address (relative) and,
     * for a single filtered chunk, its stored size and filter mask */
    unsigned index;
    uint64_t index_addr, single_size;
    uint32_t single_mask;
} ohdr_dataset;

/* One chunk: where its stored bytes are (absolute) and how many, which filters were
 * skipped for it (bit i: filter i), and its place in the grid of chunks (row-major). */
typedef struct {
    uint64_t addr, size;
    uint32_t mask;
    uint64_t index;
} ohdr_chunk;

/* The dataset whose object header is at file address addr (relative to f->base): 0 with
 * *out when it is one this reader understands entirely, -1 otherwise (anything else, or
 * damaged: the caller asks the library, which says what is wrong). */
int ohdr_read_dataset(const ohdr_file *f, uint64_t addr, ohdr_dataset *out);

/* The chunks of chunked dataset d (as ohdr_read_dataset found it), d->nchunks of them, in
 * grid order into out: 0, or -1 when its index is not one this reader understands
 * entirely, is damaged, lacks a chunk or names one outside the file. */
int ohdr_read_chunks(const ohdr_file *f, const ohdr_dataset *d, ohdr_chunk *out);

/* Jenkins' lookup3 hash as HDF5 checksums its metadata (initval 0). */
uint32_t ohdr_checksum(const unsigned char *p, size_t n);

#endif
