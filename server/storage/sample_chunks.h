/* The chunks of pack's chunked sample fields: the probe finds them in the file's chunk index
 * (ohdr.h) and lists them in its answer's chunk table; the locales then read and decode
 * them (deflate two chunks at a time, inflate_pair.h, or one with libdeflate; shuffle) on
 * their own threads, as they pread contiguous fields, without the library. A table entry,
 * in 64-bit words, for a field of rank r:
 *   r, filters (how many | first << 8 | second << 16), chunks, r dims, r chunk dims,
 *   then a chunk each: address, stored size, filter mask, place in the chunk grid    */
#ifndef H5ARK_STORAGE_SAMPLE_CHUNKS_H
#define H5ARK_STORAGE_SAMPLE_CHUNKS_H

#include "h5ark_wire.h"
#include "io.h"
#include "ohdr.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t *v;
    size_t n, cap;
} sample_chunk_table;

/* Append dataset d's entry, its chunks c (d->nchunks of them), to t: its first word's index
 * in *at. -1 when out of memory. */
int sample_chunks_add(sample_chunk_table *t, const ohdr_dataset *d, const ohdr_chunk *c,
                      uint64_t *at);

struct libdeflate_decompressor;
struct inflate_pair;

/* A locale's working memory for chunks, grown as needed; small chunks are read through
 * `window` when one is given (the caller's, aimed at the file being read). */
typedef struct {
    unsigned char *stored, *inflated, *unshuffled;
    size_t stored_cap, inflated_cap, unshuffled_cap;
    struct libdeflate_decompressor *inflater;
    struct inflate_pair *pair;
    io_window *window;
} sample_chunk_buffers;

/* The count elements of itemsize bytes of the field whose entry is words[at], read from fd
 * and decoded into dest in C order. -1 with err: a table that does not describe such a field
 * (internal), a read that fails (io_error), a chunk whose stream is damaged or does not
 * inflate to a whole chunk (schema_error). */
int sample_chunks_read(int fd, const uint64_t *words, size_t nwords, uint64_t at, size_t itemsize,
                       uint64_t count, void *dest, sample_chunk_buffers *b, h5ark_error *err);
void sample_chunk_buffers_free(sample_chunk_buffers *b);

#endif
