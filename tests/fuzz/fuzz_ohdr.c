/* libFuzzer target: pack's reader of object headers and chunk indexes (storage/ohdr.c)
 * on untrusted bytes. The input is 8 bytes of settings (sizes of offsets and lengths, the
 * base address, the header's address) and the file's bytes; whatever it answers must
 * lie inside them. */
#include "storage/ohdr.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    size_t n;
} image;

static int image_read(void *ctx, uint64_t offset, void *buf, size_t n) {
    const image *im = ctx;
    if (offset > im->n || n > im->n - offset) __builtin_trap(); /* a read past its bounds */
    memcpy(buf, im->p + offset, n);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8) return 0;
    static const unsigned widths[4] = {2, 4, 8, 8};
    image im = {data + 8, size - 8};
    ohdr_file f = {.read = image_read,
                   .ctx = &im,
                   .eof = im.n,
                   .base = ((uint64_t)data[1] | (uint64_t)data[2] << 8) % (im.n + 1),
                   .sizeof_addr = widths[data[0] & 3],
                   .sizeof_size = widths[data[0] >> 2 & 3]};
    uint64_t addr = (uint64_t)data[3] | (uint64_t)data[4] << 8 | (uint64_t)data[5] << 16;
    ohdr_dataset d;
    if (ohdr_read_dataset(&f, addr, &d) == 0) {
        uint64_t count = 1;
        if (d.rank < 1 || d.rank > OHDR_MAX_RANK) __builtin_trap();
        if (d.size != 1 && d.size != 2 && d.size != 4 && d.size != 8) __builtin_trap();
        for (unsigned i = 0; i < d.rank; i++)
            count *= d.dims[i];
        if (count != d.count || (d.compact && !d.allocated) || (d.chunked && d.allocated))
            __builtin_trap();
        if (d.allocated &&
            (d.offset < f.base || d.offset > im.n || d.count * d.size > im.n - d.offset))
            __builtin_trap();
        ohdr_chunk *c = d.chunked ? malloc(d.nchunks * sizeof *c) : NULL;
        if (c && ohdr_read_chunks(&f, &d, c) == 0)
            for (uint64_t k = 0; k < d.nchunks; k++)
                if (c[k].index != k || c[k].addr < f.base || c[k].addr > im.n ||
                    c[k].size > im.n - c[k].addr)
                    __builtin_trap();
        free(c);
    }
    return 0;
}
