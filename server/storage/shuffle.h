/* HDF5's shuffle filter, both ways: byte j of element i of a chunk of n elements is stored at
 * j * n + i, so that the like bytes of neighbouring elements sit together, which deflate
 * packs better. chunk.c shuffles the chunks it writes; the readers of chunks put them back. */
#ifndef H5ARK_STORAGE_SHUFFLE_H
#define H5ARK_STORAGE_SHUFFLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* n elements of isz bytes from in, shuffled into out. */
void shuffle_apply(const unsigned char *in, unsigned char *out, uint64_t n, size_t isz);
/* The elements [lo, hi) of a chunk of n held in `in`, into out: shuffled bytes put back
 * (copied as they are when not `shuffled`). */
void shuffle_undo(const unsigned char *in, uint64_t n, size_t isz, uint64_t lo, uint64_t hi,
                  bool shuffled, unsigned char *out);

#endif
