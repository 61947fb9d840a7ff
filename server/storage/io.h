/* The parallel data path's system calls: whole-buffer pread/pwrite that retry on short
 * transfers and EINTR. Locale threads call these on their own shards. */
#ifndef H5ARK_IO_H
#define H5ARK_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* 0 on success, -1 with errno set (a read past end of file sets ENODATA). */
int io_pread_full(int fd, void *buf, uint64_t len, uint64_t offset);
int io_pwrite_full(int fd, const void *buf, uint64_t len, uint64_t offset);

/* Small reads of one file served from a window of its bytes, which a miss refills with the
 * IO_WINDOW bytes from the page the read starts in: HDF5 allocates small things close
 * together (a group's and its datasets' object headers, B-tree nodes and heaps; small raw
 * data, such as a sample's scalars, from one block), so reading them one after another
 * costs a pread or two rather than one a piece. Only for a file not written meanwhile. */
#define IO_WINDOW       (16u << 10)
#define IO_WINDOW_SMALL 4096u
typedef struct {
    int fd; /* the file's descriptor */
    uint64_t start, len;
    unsigned char bytes[IO_WINDOW];
} io_window;
/* Aim w at fd, empty. */
void io_window_reset(io_window *w, int fd);
/* n bytes at offset of w's file into buf: 0 when served from the window, 1 when the caller
 * is to read them itself (more than IO_WINDOW_SMALL, past what the file holds, or no
 * window), -1 when the refill's read failed (errno says why). */
int io_window_read(io_window *w, uint64_t offset, void *buf, size_t n);

#endif
