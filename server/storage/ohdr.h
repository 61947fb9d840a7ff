/* A plain numeric dataset's metadata read straight from its object header bytes (the HDF5
 * file format's version 1 and 2 object headers), for pack's probe of sample files: opening
 * a dataset through the library costs far more than the few messages pack needs. Only a
 * shortcut: it answers only for the datasets it understands entirely (a simple dataspace, a
 * standard integer or IEEE float type, contiguous or compact storage, no filters, no
 * external files, nothing shared) and says "ask the library" for everything else, so that
 * what a file holds is never decided here. Every read is bounded by the file's size and the
 * walk over continuation chunks is bounded, so damaged headers cannot make it loop. */
#ifndef H5ARK_STORAGE_OHDR_H
#define H5ARK_STORAGE_OHDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OHDR_MAX_RANK 32 /* HDF5's H5S_MAX_RANK */

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
    bool compact;    /* the data is in the header (else contiguous) */
    bool allocated;  /* contiguous storage that has its place in the file */
    uint64_t offset; /* with allocated: where its count * size bytes start, absolute */
} ohdr_dataset;

/* The dataset whose object header is at file address addr (relative to f->base): 0 with
 * *out when it is one this reader understands entirely, -1 otherwise (anything else, or
 * damaged: the caller asks the library, which says what is wrong). */
int ohdr_read_dataset(const ohdr_file *f, uint64_t addr, ohdr_dataset *out);

/* Jenkins' lookup3 hash as HDF5 checksums its metadata (initval 0). */
uint32_t ohdr_checksum(const unsigned char *p, size_t n);

#endif
