/* Whole-buffer pread/pwrite (see io.h). */
#include "io.h"

#include "sysio.h"

#include <errno.h>
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
