/* An HDF5 file driver like the library's sec2 (POSIX pread/pwrite), whose system calls go
 * through the sysio table: HDF5's own reads and writes of the storage paths' files fail
 * the way h5ark's do when a test injects a fault, and say why (h5u_io_errno). */
#include "vfd.h"

#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define MAXADDR (((haddr_t)1 << (8 * sizeof(off_t) - 1)) - 1)
#define IO_MAX  (1u << 30)

typedef struct {
    H5FD_t pub; /* first: the library's part */
    int fd;
    haddr_t eoa, eof;
    dev_t dev;
    ino_t ino;
    /* the errno of its first failed call: the library shares one open file between the
     * threads that open it, so a thread can fail on a bad read another thread made */
    int error;
} vfd_file;

static hid_t driver = H5I_INVALID_HID;
static hid_t fapl = H5I_INVALID_HID;
static hid_t kept_driver = H5I_INVALID_HID; /* the same driver under another class */
static hid_t kept_fapl = H5I_INVALID_HID;
static _Thread_local int last_errno;
static _Thread_local bool closing;             /* in h5u_close_written */
static _Thread_local bool copying;             /* in h5u_copy_object */
static _Thread_local h5u_raw_place *deferred;  /* h5u_vfd_defer_raw */
static _Thread_local h5u_write_log *recording; /* h5u_vfd_record */
static _Thread_local io_window *window;        /* h5u_vfd_window */

void h5u_vfd_defer_raw(h5u_raw_place *place) {
    deferred = place;
}

void h5u_vfd_record(h5u_write_log *log) {
    recording = log;
}

void h5u_vfd_window(io_window *w) {
    window = w;
}

static h5u_write_log *log_of(const vfd_file *f) {
    h5u_write_log *log = recording;
    return log && log->dev == f->dev && log->ino == f->ino ? log : NULL;
}

static void note_write(h5u_write_log *log, uint64_t addr, uint64_t size) {
    if (log->n > 0) {
        uint64_t *last = log->runs[log->n - 1];
        if (addr >= last[0] && addr <= last[0] + last[1]) {
            if (addr + size > last[0] + last[1]) last[1] = addr + size - last[0];
            return;
        }
    }
    if (log->n == log->cap) {
        size_t cap = log->cap ? 2 * log->cap : 64;
        void *grown = sysio.realloc(log->runs, cap * sizeof *log->runs);
        if (!grown) {
            log->lost = true;
            return;
        }
        log->runs = grown;
        log->cap = cap;
    }
    log->runs[log->n][0] = addr;
    log->runs[log->n][1] = size;
    log->n++;
}

int h5u_io_errno(void) {
    return last_errno;
}

void h5u_io_clear(void) {
    last_errno = 0;
}

static herr_t failed(void) {
    last_errno = errno ? errno : EIO;
    return -1;
}

static herr_t failed_on(vfd_file *f) {
    failed();
    if (!f->error) f->error = last_errno;
    return -1;
}

/* A write failing while a written file or dataset closes: a close the library sees fail
 * leaves the object half torn down and its identifier behind (to crash when the library
 * shuts down), so the failure goes to the caller only (h5u_close_written), who throws the
 * file away. */
static herr_t write_failed(vfd_file *f) {
    failed_on(f);
    return closing || copying ? 0 : -1;
}

/* HDF5 1.10 crashes when a read fails in the middle of copying an object (its clean-up
 * closes a datatype it never made): while copying, a failed read gives the library
 * zeros, and the copy is failed afterwards (h5u_copy_object). */
static herr_t read_failed(vfd_file *f, void *rest, size_t n) {
    failed_on(f);
    if (!copying) return -1;
    memset(rest, 0, n);
    return 0;
}

static H5FD_t *vfd_open(const char *name, unsigned flags, hid_t fapl_id, haddr_t maxaddr) {
    (void)fapl_id;
    if (!name || !*name || maxaddr == 0 || maxaddr == HADDR_UNDEF || maxaddr > MAXADDR) {
        errno = EINVAL;
        failed();
        return NULL;
    }
    int o = (flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY;
    if (flags & H5F_ACC_TRUNC) o |= O_TRUNC;
    if (flags & H5F_ACC_CREAT) o |= O_CREAT;
    if (flags & H5F_ACC_EXCL) o |= O_EXCL;
    vfd_file *f = sysio.calloc(1, sizeof *f);
    if (!f) {
        failed();
        return NULL;
    }
    struct stat st;
    f->fd = sysio.open(name, o | O_CLOEXEC, 0666);
    if (f->fd < 0 || sysio.fstat(f->fd, &st) != 0) {
        int e = errno;
        if (f->fd >= 0) close(f->fd);
        free(f);
        /* the library tries an open first to see whether a file it creates exists */
        if (e != ENOENT) {
            errno = e;
            failed();
        }
        return NULL;
    }
    f->eof = (haddr_t)st.st_size;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    return &f->pub;
}

/* The descriptor is gone even when close fails, and a close the library sees fail leaves
 * its file half torn down (to crash when it shuts down): the failure is kept for the
 * caller to ask (h5u_io_errno) and the library told it went well. */
static herr_t vfd_close(H5FD_t *file) {
    vfd_file *f = (vfd_file *)file;
    if (sysio.close(f->fd) != 0) failed_on(f);
    free(f);
    return 0;
}

static int vfd_cmp(const H5FD_t *a, const H5FD_t *b) {
    const vfd_file *x = (const vfd_file *)a, *y = (const vfd_file *)b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return 0;
}

static herr_t vfd_query(const H5FD_t *file, unsigned long *flags) {
    (void)file;
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
             H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_POSIX_COMPAT_HANDLE |
             H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
    return 0;
}

static haddr_t vfd_get_eoa(const H5FD_t *file, H5FD_mem_t type) {
    (void)type;
    return ((const vfd_file *)file)->eoa;
}

static herr_t vfd_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
    (void)type;
    ((vfd_file *)file)->eoa = addr;
    return 0;
}

static haddr_t vfd_get_eof(const H5FD_t *file, H5FD_mem_t type) {
    (void)type;
    return ((const vfd_file *)file)->eof;
}

static herr_t vfd_get_handle(H5FD_t *file, hid_t fapl_id, void **handle) {
    (void)fapl_id;
    *handle = &((vfd_file *)file)->fd;
    return 0;
}

static herr_t vfd_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                       void *buf) {
    (void)dxpl;
    vfd_file *f = (vfd_file *)file;
    if (addr == HADDR_UNDEF || addr > MAXADDR || size > MAXADDR - addr) {
        errno = EINVAL;
        return failed_on(f);
    }
    if (deferred && type == H5FD_MEM_DRAW) {
        if (deferred->reads++ == 0) {
            deferred->addr = addr;
            deferred->size = size;
        }
        return 0;
    }
    if (window && window->fd == f->fd) {
        int served = io_window_read(window, addr, buf, size);
        if (served == 0) return 0;
        if (served < 0) return read_failed(f, buf, size);
    }
    char *p = buf;
    while (size > 0) {
        ssize_t got = sysio.pread(f->fd, p, size > IO_MAX ? IO_MAX : size, (off_t)addr);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return read_failed(f, p, size);
        if (got == 0) { /* past the end of the file: zeros, as the library expects */
            memset(p, 0, size);
            break;
        }
        p += got, addr += (haddr_t)got, size -= (size_t)got;
    }
    return 0;
}

static herr_t vfd_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                        const void *buf) {
    (void)type, (void)dxpl;
    vfd_file *f = (vfd_file *)file;
    if (addr == HADDR_UNDEF || addr > MAXADDR || size > MAXADDR - addr || addr + size > f->eoa) {
        errno = EINVAL;
        return write_failed(f);
    }
    h5u_write_log *log = log_of(f);
    if (window && window->fd == f->fd) window->len = 0;
    if (log) note_write(log, addr, size); /* before: a write that fails may still change bytes */
    const char *p = buf;
    while (size > 0) {
        ssize_t put = sysio.pwrite(f->fd, p, size > IO_MAX ? IO_MAX : size, (off_t)addr);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return write_failed(f);
        p += put, addr += (haddr_t)put, size -= (size_t)put;
    }
    if (addr > f->eof) f->eof = addr;
    return 0;
}

static herr_t vfd_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing) {
    (void)dxpl, (void)closing;
    vfd_file *f = (vfd_file *)file;
    if (f->eoa == f->eof) return 0;
    h5u_write_log *log = log_of(f);
    if (log && f->eoa < log->low) log->low = f->eoa;
    if (sysio.ftruncate(f->fd, (off_t)f->eoa) != 0) return write_failed(f);
    f->eof = f->eoa;
    return 0;
}

static herr_t vfd_lock(H5FD_t *file, hbool_t rw) {
    vfd_file *f = (vfd_file *)file;
    int op = (rw ? LOCK_EX : LOCK_SH) | LOCK_NB;
    if (flock(f->fd, op) != 0 && errno != ENOSYS) return failed_on(f);
    return 0;
}

static herr_t vfd_unlock(H5FD_t *file) {
    vfd_file *f = (vfd_file *)file;
    if (flock(f->fd, LOCK_UN) != 0 && errno != ENOSYS) return failed_on(f);
    return 0;
}

static const H5FD_class_t vfd_class = {
    .name = "h5ark-sysio",
    .maxaddr = MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .open = vfd_open,
    .close = vfd_close,
    .cmp = vfd_cmp,
    .query = vfd_query,
    .get_eoa = vfd_get_eoa,
    .set_eoa = vfd_set_eoa,
    .get_eof = vfd_get_eof,
    .get_handle = vfd_get_handle,
    .read = vfd_read,
    .write = vfd_write,
    .truncate = vfd_truncate,
    .lock = vfd_lock,
    .unlock = vfd_unlock,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

int h5u_vfd_init(void) {
    driver = H5FDregister(&vfd_class);
    if (driver < 0) return -1;
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0 || H5Pset_driver(fapl, driver, NULL) < 0) return -1;
    /* no 2 KiB blocks shared by small datasets: each gets its own bytes, so a file's size
     * follows what it holds (a repacked file of fewer rows is smaller, as Arkouda's tests
     * of update_hdf assert) */
    if (H5Pset_small_data_block_size(fapl, 0) < 0) return -1;
    /* HDF5 shares one open file among the opens of one class: a read handle kept open
     * between requests must not become the handle a change of that file is given */
    static H5FD_class_t kept_class;
    kept_class = vfd_class;
    kept_class.name = "h5ark-sysio-kept";
    kept_driver = H5FDregister(&kept_class);
    kept_fapl = kept_driver >= 0 ? H5Pcopy(fapl) : H5I_INVALID_HID;
    if (kept_fapl < 0 || H5Pset_driver(kept_fapl, kept_driver, NULL) < 0 ||
        H5Pset_file_locking(kept_fapl, 0, 1) < 0)
        return -1;
    return 0;
}

hid_t h5u_fapl(void) {
    return fapl;
}

hid_t h5u_fapl_kept(void) {
    return kept_fapl;
}

int h5u_copy_object(hid_t src, const char *name, hid_t dst) {
    last_errno = 0;
    copying = true;
    herr_t r = H5Ocopy(src, name, dst, name, H5P_DEFAULT, H5P_DEFAULT);
    copying = false;
    return r < 0 || last_errno ? -1 : 0;
}

int h5u_close_written(hid_t id) {
    H5I_type_t type = H5Iget_type(id);
    last_errno = 0; /* what failed before was reported by the call it failed in */
    closing = true;
    herr_t r = type == H5I_FILE      ? H5Fclose(id)
               : type == H5I_DATASET ? H5Dclose(id)
               : type == H5I_GROUP   ? H5Gclose(id)
                                     : H5Idec_ref(id);
    closing = false;
    return r < 0 || last_errno ? -1 : 0;
}

/* The driver's own record of a file opened through h5u_fapl or h5u_fapl_kept, NULL for any
 * other. */
static const vfd_file *our_file(hid_t file) {
    hid_t access = H5Fget_access_plist(file);
    hid_t d = access >= 0 ? H5Pget_driver(access) : H5I_INVALID_HID;
    bool ours = d >= 0 && (d == driver || d == kept_driver);
    if (access >= 0) H5Pclose(access);
    int *fd = NULL;
    if (!ours || H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&fd) < 0 || !fd) {
        H5Eclear2(H5E_DEFAULT);
        return NULL;
    }
    return (const vfd_file *)((const char *)fd - offsetof(vfd_file, fd));
}

int h5u_vfd_fd(hid_t file) {
    const vfd_file *f = our_file(file);
    return f ? f->fd : -1;
}

/* The first failed call of an open file (0: none, or not opened through h5u_fapl). */
static int file_error(hid_t file) {
    const vfd_file *f = our_file(file);
    return f ? f->error : 0;
}

void h5u_io_blame(hid_t file, h5ark_error *err) {
    if (!err || err->code == H5ARK_OK || err->code == H5ARK_IO_ERROR ||
        err->code == H5ARK_RESOURCE_LIMIT)
        return;
    int e = h5u_io_errno();
    if (!e && file >= 0) e = file_error(file);
    if (!e) return;
    h5u_io_clear();
    err->code = e == ENOMEM ? H5ARK_RESOURCE_LIMIT : H5ARK_IO_ERROR;
    const char *why = e == ENOMEM ? "out of memory" : strerror(e);
    size_t used = strlen(err->message);
    if (!strstr(err->message, why) && used + 3 < sizeof err->message)
        snprintf(err->message + used, sizeof err->message - used, ": %s", why);
}
