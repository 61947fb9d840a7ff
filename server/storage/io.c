/* Whole-buffer pread/pwrite (see io.h). */
#include "io.h"

#include "sysio.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Linux moves at most 0x7ffff000 bytes per call; stay under it. */
#define IO_MAX_CALL (1u << 30)

int io_pread_full(int fd, void *buf, uint64_t len, uint64_t offset) {
    char *p = buf;
    while (len > 0) {
        size_t n = len > IO_MAX_CALL ? IO_MAX_CALL : (size_t)len;
        ssize_t got = sysio.pread(fd, p, n, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -1;
        if (got == 0) {
            errno = ENODATA;
            return -1;
        }
        p += got;
        len -= (uint64_t)got;
        offset += (uint64_t)got;
    }
    return 0;
}

int io_pwrite_full(int fd, const void *buf, uint64_t len, uint64_t offset) {
    const char *p = buf;
    while (len > 0) {
        size_t n = len > IO_MAX_CALL ? IO_MAX_CALL : (size_t)len;
        ssize_t put = sysio.pwrite(fd, p, n, (off_t)offset);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) return -1;
        p += put;
        len -= (uint64_t)put;
        offset += (uint64_t)put;
    }
    return 0;
}

void io_window_reset(io_window *w, int fd) {
    w->fd = fd;
    w->start = w->len = 0;
}

int io_window_read(io_window *w, uint64_t offset, void *buf, size_t n) {
    if (!w || w->fd < 0 || n > IO_WINDOW_SMALL || offset > (uint64_t)INT64_MAX - IO_WINDOW)
        return 1;
    if (offset < w->start || offset + n > w->start + w->len) {
        uint64_t start = offset & ~(uint64_t)4095;
        ssize_t got;
        w->len = 0;
        do
            got = sysio.pread(w->fd, w->bytes, IO_WINDOW, (off_t)start);
        while (got < 0 && errno == EINTR);
        if (got < 0) return -1;
        w->start = start;
        w->len = (uint64_t)got;
        if (offset + n > start + w->len) return 1; /* the file ends before: the caller's case */
    }
    memcpy(buf, w->bytes + (offset - w->start), n);
    return 0;
}
