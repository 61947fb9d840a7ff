/* Two zlib streams inflated at once, in one loop. Decoding a Huffman-coded stream is a chain
 * of dependent steps (each code's length says where the next code starts: a table load, a
 * shift, the next load), so one stream leaves most of the core idle; two independent streams
 * interleaved keep it busy. pack's deflated chunks are such streams: a field of 8 chunks is 4
 * pairs. Only what it is sure of is a success: both streams whole, valid, each inflating to
 * exactly its output's size with its Adler-32 matching; anything else (damage, a stream that
 * ends early or is too long, a preset dictionary) is a failure, for which the caller inflates
 * each stream alone with the general decoder, which then words the error. */
#ifndef H5ARK_STORAGE_INFLATE_PAIR_H
#define H5ARK_STORAGE_INFLATE_PAIR_H

#include <stddef.h>

/* Its decode tables, about 21 KiB: one a thread, reused from pair to pair. */
typedef struct inflate_pair inflate_pair;
inflate_pair *inflate_pair_new(void);
void inflate_pair_free(inflate_pair *p);

/* in[i], in_size[i] bytes, a zlib stream, into out[i], exactly out_size[i] bytes. 0 when both
 * did, -1 otherwise (out[0] and out[1] then hold anything). */
int inflate_pair_run(inflate_pair *p, const unsigned char *const in[2], const size_t in_size[2],
                     unsigned char *const out[2], const size_t out_size[2]);

#endif
