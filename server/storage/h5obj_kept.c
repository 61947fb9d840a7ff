/* Read handles of the endpoint's files kept open between requests (h5obj_int.h). Opening a
 * file with HDF5 costs a request about 60 us (the library sets up its metadata cache), and
 * finding an object by its id walked every hard link of the file; a kept handle pays both
 * once per state of the file.
 *
 * A handle stands for the file as it was when opened: its device, inode, size and times.
 * Every request looks at the file anew (its own descriptor, fstat) and uses a handle only
 * when the file is still that; a file changed or replaced since gets a new handle and the
 * old one is closed once its last request is done. (Files are replaced by a rename, which
 * gives them another inode, or changed in place by a writer that updates their times;
 * kernels with fine-grained timestamps give a change right after a look a time of its own.)
 *
 * HDF5's own locking is off for these handles, so that a file is not locked between
 * requests (h5py may open it for writing then, shared/HSDS_API.md §11); instead each
 * request holds a shared flock on a descriptor of its own while it reads, as HDF5 would:
 * no writer that locks (h5py, HDF5) opens the file for writing meanwhile, and the daemon's
 * levelling of an old file under a twin (twin.c) leaves it alone. */
#include "storage/h5obj_int.h"

#include "storage/hdf5_util.h"
#include "storage/vfd.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KEPT_MAX          16         /* files kept open at once */
#define KEPT_OBJECTS      32         /* objects kept open in each (the last opened) */
#define KEPT_IDLE_SECONDS 10         /* a file not asked for this long is closed */
#define INDEX_MAX_LINKS   (1u << 20) /* a file with more hard links is walked per request */

typedef struct {
    haddr_t addr;
    size_t seq; /* the order H5Lvisit met it in */
    char *name;
} link_at;

struct h5obj_kept {
    char abs[PATH_MAX];
    struct stat st; /* the file as it was opened */
    hid_t fid;
    haddr_t root;
    int users;       /* requests using it now */
    bool gone;       /* out of the table: closed when its last request is done */
    uint64_t used;   /* when last used, for evicting the oldest */
    time_t last_use; /* CLOCK_MONOTONIC seconds */
    pthread_mutex_t index_lock;
    int indexed; /* 0: not yet, 1: links sorted by address, -1: too many to index */
    link_at *links;
    size_t nlinks, cap;
    struct {
        haddr_t addr;
        hid_t obj;
    } objects[KEPT_OBJECTS]; /* under index_lock; a ring */
    int nobjects, next_object;
};

static h5obj_kept *table[KEPT_MAX];
static uint64_t uses;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void destroy(h5obj_kept *k) {
    if (!k) return;
    for (int i = 0; i < k->nobjects; i++)
        H5Oclose(k->objects[i].obj);
    H5Fclose(k->fid);
    H5Eclear2(H5E_DEFAULT);
    for (size_t i = 0; i < k->nlinks; i++)
        free(k->links[i].name);
    free(k->links);
    pthread_mutex_destroy(&k->index_lock);
    free(k);
}

/* Take table[i] out; it is returned when nobody uses it, to be destroyed out of the lock. */
static h5obj_kept *take_out(int i) {
    h5obj_kept *k = table[i];
    table[i] = NULL;
    k->gone = true;
    return k->users == 0 ? k : NULL;
}

/* Open the file at abs with HDF5 as st says it is, and keep it (users 1); NULL when it
 * cannot be opened or is not that file any more. */
static h5obj_kept *keep(const char *abs, const struct stat *st) {
    hid_t fid = H5Fopen(abs, H5F_ACC_RDONLY, h5u_fapl_kept());
    struct stat now;
    int fd = fid >= 0 ? h5u_vfd_fd(fid) : -1;
    h5obj_kept *k =
        fd >= 0 && fstat(fd, &now) == 0 && same_file(&now, st) ? calloc(1, sizeof *k) : NULL;
    H5O_info_t oi;
    if (!k || H5Oget_info2(fid, &oi, H5O_INFO_BASIC) < 0) {
        free(k);
        if (fid >= 0) H5Fclose(fid);
        H5Eclear2(H5E_DEFAULT);
        h5u_io_clear();
        return NULL;
    }
    snprintf(k->abs, sizeof k->abs, "%s", abs);
    k->st = *st;
    k->fid = fid;
    k->root = oi.addr;
    k->users = 1;
    pthread_mutex_init(&k->index_lock, NULL);
    h5obj_kept *twin = NULL, *evicted = NULL;
    pthread_mutex_lock(&lock);
    int slot = -1, oldest = -1;
    for (int i = 0; i < KEPT_MAX && !twin; i++) {
        if (!table[i]) {
            if (slot < 0) slot = i;
        } else if (strcmp(table[i]->abs, abs) == 0 && same_file(&table[i]->st, st)) {
            twin = table[i]; /* another request kept it meanwhile */
            twin->users++;
        } else if (table[i]->users == 0 && (oldest < 0 || table[i]->used < table[oldest]->used)) {
            oldest = i;
        }
    }
    if (!twin && slot < 0 && oldest >= 0) {
        evicted = take_out(oldest);
        slot = oldest;
    }
    if (!twin && slot >= 0) {
        table[slot] = k;
        k->used = ++uses;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        k->last_use = now.tv_sec;
    } else if (!twin) {
        k->gone = true; /* every slot in use: it serves this request only */
    }
    pthread_mutex_unlock(&lock);
    destroy(evicted);
    if (twin) {
        destroy(k);
        return twin;
    }
    return k;
}

int h5obj_kept_open(h5obj_file *f) {
    f->kept = NULL;
    f->lock_fd = -1;
    int fd = open(f->abs, O_RDONLY | O_CLOEXEC);
    struct stat st;
    /* shared as HDF5's own lock would be: a locking writer cannot open the file meanwhile */
    if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) != 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return 1;
    }
    h5obj_kept *k = NULL, *old[KEPT_MAX];
    int nold = 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < KEPT_MAX; i++) {
        if (!table[i]) continue;
        if (strcmp(table[i]->abs, f->abs) != 0) {
            /* idle a while: a file replaced since is not held open (nor its space) for long */
            if (table[i]->users == 0 && now.tv_sec - table[i]->last_use > KEPT_IDLE_SECONDS)
                old[nold++] = take_out(i);
        } else if (same_file(&table[i]->st, &st)) {
            k = table[i];
            k->users++;
            k->used = ++uses;
            k->last_use = now.tv_sec;
        } else if ((old[nold] = take_out(i))) { /* the file changed: its old handle goes */
            nold++;
        }
    }
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < nold; i++)
        destroy(old[i]);
    if (!k) k = keep(f->abs, &st);
    if (!k) {
        close(fd);
        return 1;
    }
    f->kept = k;
    f->fid = k->fid;
    f->lock_fd = fd;
    return 0;
}

/* A request or an answer done with k. */
static void let_go(h5obj_kept *k) {
    pthread_mutex_lock(&lock);
    bool last = --k->users == 0 && k->gone;
    pthread_mutex_unlock(&lock);
    if (last) destroy(k);
}

void h5obj_kept_close(h5obj_file *f) {
    if (f->lock_fd >= 0) close(f->lock_fd); /* the flock goes with it */
    f->lock_fd = -1;
    h5obj_kept *k = f->kept;
    if (!k) return;
    f->kept = NULL;
    f->fid = H5I_INVALID_HID;
    let_go(k);
}

void h5obj_forget(const char *abs) {
    h5obj_kept *old[KEPT_MAX];
    int nold = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < KEPT_MAX; i++)
        if (table[i] && strcmp(table[i]->abs, abs) == 0 && (old[nold] = take_out(i))) nold++;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < nold; i++)
        destroy(old[i]);
}

haddr_t h5obj_kept_root(const h5obj_file *f) {
    return f->kept->root;
}

/* ---- answers read from a kept file as they are sent ---- */

typedef struct {
    h5obj_kept *k; /* NULL once the last byte was read */
    int lock_fd;
    uint64_t offset, len;
} run;

void *h5obj_kept_run(h5obj_file *f, uint64_t offset, uint64_t len) {
    run *r = malloc(sizeof *r);
    if (!r) return NULL;
    pthread_mutex_lock(&lock);
    f->kept->users++;
    pthread_mutex_unlock(&lock);
    *r = (run){f->kept, f->lock_fd, offset, len};
    f->lock_fd = -1;
    return r;
}

/* The flock goes as soon as every byte is in the server's hands: the client, which has the
 * last byte only after this, may then open the file for writing at once. */
static void run_end(run *r) {
    if (!r->k) return;
    close(r->lock_fd);
    let_go(r->k);
    r->k = NULL;
}

long h5obj_run_read(void *arg, uint64_t pos, char *buf, size_t max) {
    run *r = arg;
    if (!r->k || pos >= r->len) return -1;
    if (max > r->len - pos) max = (size_t)(r->len - pos);
    ssize_t n = pread(r->lock_fd, buf, max, (off_t)(r->offset + pos));
    if (n <= 0 || pos + (uint64_t)n == r->len) run_end(r); /* all read, or cut short */
    return n > 0 ? (long)n : -1;
}

void h5obj_run_done(void *arg) {
    run_end(arg);
    free(arg);
}

/* ---- the index of hard links by address ---- */

static herr_t index_one(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
    (void)g;
    h5obj_kept *k = arg;
    if (info->type != H5L_TYPE_HARD) return 0;
    if (k->nlinks == INDEX_MAX_LINKS) return -1;
    if (k->nlinks == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        link_at *l = realloc(k->links, cap * sizeof *l);
        if (!l) return -1;
        k->links = l;
        k->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return -1;
    k->links[k->nlinks] = (link_at){info->u.address, k->nlinks, copy};
    k->nlinks++;
    return 0;
}

static int by_address(const void *a, const void *b) {
    const link_at *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Under the kept file's index_lock: every hard link, once, by address. */
static void build_index(h5obj_kept *k) {
    if (H5Lvisit(k->fid, H5_INDEX_NAME, H5_ITER_INC, index_one, k) < 0) {
        H5Eclear2(H5E_DEFAULT);
        for (size_t i = 0; i < k->nlinks; i++)
            free(k->links[i].name);
        free(k->links);
        k->links = NULL;
        k->nlinks = k->cap = 0;
        k->indexed = -1;
        return;
    }
    qsort(k->links, k->nlinks, sizeof *k->links, by_address);
    k->indexed = 1;
}

int h5obj_kept_links(const h5obj_file *f, haddr_t addr, int (*fn)(void *arg, const char *name),
                     void *arg) {
    h5obj_kept *k = f->kept;
    pthread_mutex_lock(&k->index_lock);
    if (k->indexed == 0) build_index(k);
    int indexed = k->indexed;
    pthread_mutex_unlock(&k->index_lock);
    if (indexed < 0) return -1;
    size_t lo = 0, hi = k->nlinks; /* the first link at addr or after */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->links[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < k->nlinks && k->links[i].addr == addr; i++)
        if (fn(arg, k->links[i].name)) break;
    return 0;
}

/* ---- objects kept open ---- */

hid_t h5obj_kept_object(const h5obj_file *f, haddr_t addr) {
    h5obj_kept *k = f->kept;
    hid_t obj = H5I_INVALID_HID;
    pthread_mutex_lock(&k->index_lock);
    for (int i = 0; i < k->nobjects && obj < 0; i++)
        if (k->objects[i].addr == addr && H5Iinc_ref(k->objects[i].obj) >= 0)
            obj = k->objects[i].obj;
    pthread_mutex_unlock(&k->index_lock);
    return obj;
}

void h5obj_kept_add_object(const h5obj_file *f, haddr_t addr, hid_t obj) {
    h5obj_kept *k = f->kept;
    bool known = false;
    hid_t old = H5I_INVALID_HID;
    pthread_mutex_lock(&k->index_lock);
    for (int i = 0; i < k->nobjects && !known; i++)
        known = k->objects[i].addr == addr; /* another request kept it meanwhile */
    if (!known && H5Iinc_ref(obj) >= 0) {
        int slot = k->next_object;
        if (k->nobjects < KEPT_OBJECTS)
            k->nobjects++;
        else
            old = k->objects[slot].obj;
        k->next_object = (slot + 1) % KEPT_OBJECTS;
        k->objects[slot].addr = addr;
        k->objects[slot].obj = obj;
    }
    pthread_mutex_unlock(&k->index_lock);
    if (old >= 0) H5Oclose(old);
}
