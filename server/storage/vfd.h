/* h5ark's HDF5 file driver (vfd.c): HDF5's file I/O through the sysio table, and what it
 * saw fail, for the storage layer to report (hdf5_util.h's h5u_fail uses it). */
#ifndef H5ARK_VFD_H
#define H5ARK_VFD_H

#include "h5ark_wire.h"
#include "io.h"

#include <hdf5.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The file-access property list every storage path opens and creates files with: h5ark's
 * file driver (vfd.c), whose system calls go through the sysio table. */
hid_t h5u_fapl(void);
/* The same driver for read handles kept open between requests: HDF5's file locking off (the
 * keeper takes its own flock while it reads), and a class of its own, so that the library
 * never hands such a handle to an open of the same file for writing. */
hid_t h5u_fapl_kept(void);
int h5u_vfd_init(void);
/* Where raw data would have been read. While one is set on a thread (NULL: none), the file
 * driver reads no raw data on that thread: it counts the reads and keeps the first's place,
 * so that a caller can learn where a chunk lies under HDF5's lock and read it without. */
typedef struct {
    uint64_t addr, size;
    unsigned reads;
} h5u_raw_place;
void h5u_vfd_defer_raw(h5u_raw_place *place);
/* Where a file was written, for a caller that repeats those writes on a copy of it
 * (twin.c). While one is set on a thread (NULL: none), the driver notes each write that
 * thread makes to the file (dev, ino) as a run of bytes, and the least size the file had. */
typedef struct {
    dev_t dev;
    ino_t ino;
    uint64_t (*runs)[2]; /* {offset, length}, a write after the one before it merged */
    size_t n, cap;
    uint64_t low;
    bool lost; /* a run could not be noted (out of memory): the log is no use */
} h5u_write_log;
void h5u_vfd_record(h5u_write_log *log);
/* The descriptor of a file opened through h5u_fapl (-1 otherwise), for reads of its bytes
 * beside the library's (pread: no shared position); it is the library's, never closed by
 * the caller. */
int h5u_vfd_fd(hid_t file);
/* While a window (io.h) is set on a thread (NULL: none), the driver's small reads of the
 * window's file come from it, and a write to that file empties it: for a probe's pass over
 * a file's metadata, which then costs a pread or two a group rather than one a piece. */
void h5u_vfd_window(io_window *w);
/* The errno of this thread's last failed call in the file driver (0: none since the last
 * h5u_io_clear). h5u_fail turns a failure the driver saw into io_error (resource_limit for
 * ENOMEM), whatever code the caller chose: a file that could not be read is not to be
 * blamed for what it holds. */
int h5u_io_errno(void);
void h5u_io_clear(void);
/* The same for an error made some other way while file (open, or H5I_INVALID_HID) was
 * being read or written: when this thread's driver calls or the file's own saw an I/O
 * error, err becomes io_error (resource_limit for ENOMEM), saying why. */
void h5u_io_blame(hid_t file, h5ark_error *err);
/* Close a file, dataset or group that was written: -1 when the close or a write it made
 * failed (h5u_fail then says why), and the identifier is gone either way. */
int h5u_close_written(hid_t id);
/* H5Ocopy of `name` from src to dst: -1 when it or a read or write it made failed (the
 * object in dst is then not to be trusted: throw dst away). */
int h5u_copy_object(hid_t src, const char *name, hid_t dst);

#endif
