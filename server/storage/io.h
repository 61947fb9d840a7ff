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

#endif
