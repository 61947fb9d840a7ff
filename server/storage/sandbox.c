/* The probe process that walks untrusted HDF5 files first (see sandbox.h). */
#include "sandbox.h"

#include "config.h"
#include "log.h"
#include "layout.h"
#include "metrics.h"
#include "probe.h"
#include "sysio.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <fcntl.h>
#include <poll.h>
#include <hdf5.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CACHE_SLOTS      4096
#define PROBE_TIMEOUT_MS 60000 /* per file: a file that sends the library into a loop */
#define MAX_PROBES       8
#define MEMO_SLOTS       1024
#define MEMO_WAYS        4           /* the slots a file's answer may take, from its own */
#define MEMO_MAX_BYTES   (64u << 20) /* what the remembered answers may hold in all */

typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    bool used, crashed;
} verdict;

/* One probe process, owned by the thread that acquired it. */
typedef struct {
    pid_t pid;
    int to, from; /* pipe ends: its stdin, its stdout */
    char buf[8192];
    size_t lo, hi; /* unread bytes of its answer in buf */
    /* shared with it: the file of the request it is probing now, to know which one
     * killed it (a store costs nothing; a message per file would wake the daemon) */
    _Atomic int64_t *progress;
    bool busy;
} probe;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t freed = PTHREAD_COND_INITIALIZER;
static probe pool[MAX_PROBES];
static int npool;
static bool enabled;
static verdict cache[CACHE_SLOTS];
/* pack's probe answers by file version and request: packing the same files again (another
 * experiment schema, or the next run) reads them without probing them again */
typedef struct {
    verdict version;
    char *request; /* the fields and the groups asked for, NUL-separated */
    size_t rlen, bytes;
    sample_probe found;
} sample_memo;
static sample_memo memo[MEMO_SLOTS];
static size_t memo_bytes;
static _Atomic int64_t *my_progress; /* in a probe: where to say which file it is at */
static sandbox_work work;

void sandbox_set_work(const sandbox_work *w) {
    work = *w;
}

#define PROGRESS_FD 3
#define FAULTS_FD   4 /* the shared fault counters, with H5ARK_FAULTS=1 */

static size_t slot_of(const struct stat *st) {
    uint64_t h = (uint64_t)st->st_dev * 0x9e3779b97f4a7c15ULL ^ (uint64_t)st->st_ino;
    h ^= (uint64_t)st->st_size * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)st->st_mtim.tv_nsec;
    return (size_t)(h % CACHE_SLOTS);
}

static bool same_version(const verdict *v, const struct stat *st) {
    return v->used && v->dev == st->st_dev && v->ino == st->st_ino && v->size == st->st_size &&
           v->mtime.tv_sec == st->st_mtim.tv_sec && v->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static void probe_stop(probe *p) {
    if (p->to >= 0) close(p->to);
    if (p->from >= 0) close(p->from);
    p->to = p->from = -1;
    p->lo = p->hi = 0;
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
    p->pid = -1;
    if (p->progress) munmap((void *)p->progress, sizeof *p->progress);
    p->progress = NULL;
}

/* Bytes of the probe's answer: from buf, else from the pipe within the timeout. */
static int probe_fill(probe *p) {
    if (p->lo < p->hi) return 0;
    struct pollfd pfd = {.fd = p->from, .events = POLLIN};
    int r;
    while ((r = poll(&pfd, 1, PROBE_TIMEOUT_MS)) < 0 && errno == EINTR) {}
    if (r != 1) return -1;
    ssize_t n;
    while ((n = read(p->from, p->buf, sizeof p->buf)) < 0 && errno == EINTR) {}
    if (n <= 0) return -1;
    p->lo = 0;
    p->hi = (size_t)n;
    return 0;
}

static int probe_line(probe *p, char *out, size_t max) {
    size_t n = 0;
    for (;;) {
        if (probe_fill(p)) return -1;
        char c = p->buf[p->lo++];
        if (c == '\n') break;
        if (n + 1 >= max) return -1;
        out[n++] = c;
    }
    out[n] = '\0';
    return 0;
}

static int probe_bytes(probe *p, char *out, size_t n) {
    while (n) {
        if (probe_fill(p)) return -1;
        size_t k = p->hi - p->lo < n ? p->hi - p->lo : n;
        memcpy(out, p->buf + p->lo, k);
        p->lo += k, out += k, n -= k;
    }
    return 0;
}

static int write_all(int fd, const char *data, size_t n) {
    while (n) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        data += w, n -= (size_t)w;
    }
    return 0;
}

static int probe_spawn(probe *p) {
    int in[2], out[2];
    p->pid = p->to = p->from = -1;
    p->lo = p->hi = 0;
    p->progress = NULL;
    int shm = memfd_create("h5ark-probe-progress", MFD_CLOEXEC);
    if (shm < 0 || ftruncate(shm, sizeof *p->progress) != 0) {
        if (shm >= 0) close(shm);
        return -1;
    }
    void *map = mmap(NULL, sizeof *p->progress, PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
    if (map == MAP_FAILED || pipe2(in, O_CLOEXEC) != 0) {
        if (map != MAP_FAILED) munmap(map, sizeof *p->progress);
        close(shm);
        return -1;
    }
    p->progress = map;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]), close(in[1]), close(shm);
        probe_stop(p);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, shm, PROGRESS_FD);
    if (sysio_faults_fd() >= 0) posix_spawn_file_actions_adddup2(&fa, sysio_faults_fd(), FAULTS_FD);
    /* what the library (or a sanitizer) says while dying is not the daemon's log */
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    /* the binary by name, not /proc/self/exe, which under a tool such as valgrind is the
     * tool; the probe names files as the daemon does, relative to the data directory */
    char exe[PATH_MAX], arg[] = SANDBOX_PROBE_ARG;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        close(in[0]), close(in[1]), close(out[0]), close(out[1]), close(shm);
        posix_spawn_file_actions_destroy(&fa);
        probe_stop(p);
        return -1;
    }
    exe[n] = '\0';
    char *argv[] = {exe, arg, config.data_dir, NULL};
    /* the daemon blocks SIGINT/SIGTERM for its signalfd; the probe gets default signals */
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    int rc = posix_spawn(&p->pid, exe, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(in[0]);
    close(out[1]);
    close(shm);
    p->to = in[1];
    p->from = out[0];
    if (rc != 0) {
        p->pid = -1;
        probe_stop(p);
        errno = rc;
        return -1;
    }
    /* a probe that cannot even start must not make every file look like a crasher */
    char hello[16];
    if (probe_line(p, hello, sizeof hello) || strcmp(hello, "ready") != 0) {
        probe_stop(p);
        return -1;
    }
    return 0;
}

int sandbox_start(void) {
    if (getenv("H5ARK_NO_SANDBOX")) return 0;
    int want = config.locales < MAX_PROBES ? config.locales : MAX_PROBES, rc = 0;
    pthread_mutex_lock(&lock);
    for (npool = 0; npool < want && rc == 0; npool++)
        rc = probe_spawn(&pool[npool]);
    if (rc) npool--;
    enabled = npool > 0;
    pthread_mutex_unlock(&lock);
    if (!enabled)
        log_warn("cannot start the file probe: %s; files are read unisolated", strerror(errno));
    return enabled ? 0 : -1;
}

void sandbox_stop(void) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < npool; i++)
        probe_stop(&pool[i]);
    npool = 0;
    enabled = false;
    for (int i = 0; i < MEMO_SLOTS; i++) {
        free(memo[i].request);
        sample_probe_clear(&memo[i].found);
        memo[i] = (sample_memo){0};
    }
    memo_bytes = 0;
    pthread_mutex_unlock(&lock);
}

/* Take up to `want` idle probes (at least one, waiting for it). */
static int acquire(probe **out, int want) {
    pthread_mutex_lock(&lock);
    int got = 0;
    for (;;) {
        for (int i = 0; i < npool && got < want; i++)
            if (!pool[i].busy) {
                pool[i].busy = true;
                out[got++] = &pool[i];
            }
        if (got || npool == 0) break;
        pthread_cond_wait(&freed, &lock);
    }
    pthread_mutex_unlock(&lock);
    return got;
}

static void release(probe **ps, int n) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n; i++)
        ps[i]->busy = false;
    pthread_cond_broadcast(&freed);
    pthread_mutex_unlock(&lock);
}

/* Send a request (a line, then `blen` bytes of body) without waiting for the answer. */
static int probe_send(probe *p, const char *line, const char *body, size_t blen) {
    if (p->pid <= 0 && probe_spawn(p) != 0) return -1;
    atomic_store(p->progress, -1);
    size_t n = strlen(line);
    char *msg = malloc(n + 1 + blen);
    if (!msg) return -1;
    memcpy(msg, line, n);
    msg[n] = '\n';
    if (blen) memcpy(msg + n + 1, body, blen);
    int rc = write_all(p->to, msg, n + 1 + blen);
    free(msg);
    return rc;
}

/* Read the answer: "<status> <length>\n" and <length> bytes (malloc'd into *body). Returns
 * the status word's first letter, or 0 when the probe died or hung (it is then replaced;
 * *progress says at which file of the request, -1 before the first). */
static char probe_receive(probe *p, const char *what, char **body, size_t *len, long *progress) {
    *body = NULL;
    *len = 0;
    char head[64];
    unsigned long n = 0;
    char status = 0;
    if (probe_line(p, head, sizeof head) == 0 && sscanf(head, "%*s %lu", &n) == 1 &&
        n < (1ul << 30)) {
        *body = malloc(n + 1);
        if (*body && probe_bytes(p, *body, n) == 0) {
            (*body)[n] = '\0';
            *len = n;
            status = head[0];
        }
    }
    if (!status) {
        if (progress) *progress = p->progress ? atomic_load(p->progress) : -1;
        free(*body);
        *body = NULL;
        int wstatus = 0;
        if (p->pid > 0) {
            kill(p->pid, SIGKILL); /* no-op when it died; ends it when it hung */
            waitpid(p->pid, &wstatus, 0);
        }
        p->pid = -1;
        log_warn("the HDF5 library crashed in the file probe (%s %d) on: %s",
                 WIFSIGNALED(wstatus) ? "signal" : "exit status",
                 WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus), what);
        probe_stop(p);
        metrics_probe_restarted();
        if (probe_spawn(p) != 0) log_warn("cannot restart the file probe: %s", strerror(errno));
    }
    return status;
}

/* One request on one acquired probe; '?' when no probe can be started. */
static char probe_exchange(probe *p, const char *line, const char *what, char **body, size_t *len) {
    *body = NULL;
    *len = 0;
    if (probe_send(p, line, NULL, 0)) { /* it died since its last request */
        probe_stop(p);
        metrics_probe_restarted();
        if (probe_send(p, line, NULL, 0)) return '?';
    }
    return probe_receive(p, what, body, len, NULL);
}

static int crashed_error(h5ark_error *err) {
    return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                      "the file is damaged in a way that makes the HDF5 library crash; it was "
                      "refused without being read");
}

int sandbox_check_file(const char *abs_path, h5ark_error *err) {
    struct stat st;
    if (!enabled || stat(abs_path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (strchr(abs_path, '\n')) return 0; /* confined paths never hold one */
    char line[PATH_MAX + 8];
    snprintf(line, sizeof line, "c %s", abs_path);
    pthread_mutex_lock(&lock);
    verdict *v = &cache[slot_of(&st)];
    bool known = same_version(v, &st), crashed = known && v->crashed;
    pthread_mutex_unlock(&lock);
    if (!known) {
        probe *p;
        if (!acquire(&p, 1)) return 0;
        char *body;
        size_t len;
        char status = probe_exchange(p, line, abs_path, &body, &len);
        release(&p, 1);
        free(body);
        crashed = status == 0;
        if (status != '?') {
            pthread_mutex_lock(&lock);
            *v = (verdict){st.st_dev, st.st_ino, st.st_size, st.st_mtim, true, crashed};
            pthread_mutex_unlock(&lock);
        }
    }
    return crashed ? crashed_error(err) : 0;
}

/* A probe's error answer "CODE message" as an error. */
static int answer_error(char status, const char *body, h5ark_error *err) {
    h5ark_code code = (h5ark_code)(status == 'e' ? atoi(body) : H5ARK_INTERNAL);
    if (code <= 0 || code >= H5ARK_CODE_COUNT) code = H5ARK_INTERNAL;
    const char *msg = strchr(body, ' ');
    return h5ark_fail(err, code, "%s", msg ? msg + 1 : body);
}

/* The request letter of each listing mode (the probe's main loop reads it back). */
static const char list_letters[] = {[LIST_TOP] = 'L', [LIST_TREE] = 'R', [LIST_VIEW] = 'V'};

int sandbox_list(const char *abs_path, list_mode mode, h5ark_value *entries, h5ark_error *err) {
    probe *p;
    if (!enabled || strchr(abs_path, '\n') || !acquire(&p, 1))
        return work.list(abs_path, mode, entries, err);
    char line[PATH_MAX + 8];
    snprintf(line, sizeof line, "%c %s", list_letters[mode], abs_path);
    char *body;
    size_t len;
    char status = probe_exchange(p, line, abs_path, &body, &len);
    release(&p, 1);
    if (status == '?') return work.list(abs_path, mode, entries, err);
    int rc = -1;
    if (status == 0) {
        rc = crashed_error(err);
    } else if (status == 'o') {
        const char *why;
        h5ark_value *list = h5ark_value_decode(body, len, &why);
        for (size_t i = 0; list && i < h5ark_value_len(list); i++)
            h5ark_value_push(entries, h5ark_value_copy(h5ark_value_at(list, i)));
        rc = list ? 0 : h5ark_fail(err, H5ARK_INTERNAL, "the file probe's answer %s", why);
        h5ark_value_destroy(&list);
    } else {
        rc = answer_error(status, body, err);
    }
    free(body);
    return rc;
}

/* ---- readhdf's probing ------------------------------------------------------------- */

/* Send the probing of paths[i] (request indices index[i]) to p. */
static int send_probe(probe *p, const read_probe_request *rq, char *const *paths, const int *index,
                      size_t n) {
    read_probe_request sub = *rq;
    sub.paths = paths;
    sub.index = index;
    sub.npaths = n;
    h5ark_value *v = read_probe_request_encode(&sub);
    char *data = NULL, line[32];
    size_t len = 0;
    int rc = v && h5ark_value_encode(v, &data, &len) == 0 ? 0 : -1;
    h5ark_value_destroy(&v);
    snprintf(line, sizeof line, "P %zu", len);
    if (rc == 0 && probe_send(p, line, data, len)) {
        probe_stop(p); /* it died since its last request: a new one gets this one */
        metrics_probe_restarted();
        rc = probe_send(p, line, data, len);
    }
    free(data);
    return rc;
}

/* The probe's answer to send_probe: 0 with *out, 1 when it crashed (*progress: at which of
 * the files sent), -1 with err. */
static int receive_probe(probe *p, const read_probe_request *rq, read_probe *out, long *progress,
                         h5ark_error *err) {
    char *body;
    size_t len;
    char status = probe_receive(p, "a readhdf", &body, &len, progress);
    int rc = 1;
    if (status == 'o') {
        const char *why;
        h5ark_value *v = h5ark_value_decode(body, len, &why);
        rc = v ? read_probe_decode(v, rq->paths, rq->npaths, out, err)
               : h5ark_fail(err, H5ARK_INTERNAL, "the file probe's answer %s", why);
        h5ark_value_destroy(&v);
    } else if (status) {
        rc = answer_error(status, body, err);
    }
    free(body);
    return rc;
}

/* Slices of the file list on several probes at once, joined in order: 0, 1 when a slice
 * failed or the slices disagree (probe the whole list in one sequence instead), -1. */
static int probe_slices(const read_probe_request *rq, probe **ps, int n, read_probe *out,
                        h5ark_error *err) {
    int *index = malloc(rq->npaths * sizeof *index);
    read_probe *parts = calloc((size_t)n, sizeof *parts);
    int rc = index && parts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; index && i < rq->npaths; i++)
        index[i] = (int)i;
    bool sent[MAX_PROBES] = {false};
    for (int k = 0; rc == 0 && k < n; k++) {
        size_t lo = rq->npaths * (size_t)k / (size_t)n,
               hi = rq->npaths * (size_t)(k + 1) / (size_t)n;
        sent[k] = send_probe(ps[k], rq, rq->paths + lo, index + lo, hi - lo) == 0;
        if (!sent[k]) rc = 1;
    }
    /* every probe sent a request answers it before it can take another */
    for (int k = 0; k < n; k++) {
        if (!sent[k]) continue;
        long progress;
        h5ark_error perr = {0};
        int r = receive_probe(ps[k], rq, &parts[k], &progress, &perr);
        if (r && rc == 0) {
            rc = r;
            if (r < 0) *err = perr;
        }
    }
    for (int k = 1; rc == 0 && k < n; k++)
        rc = read_probe_merge(&parts[0], &parts[k], err);
    if (rc == 0) {
        *out = parts[0];
        parts[0] = (read_probe){0};
    }
    for (int k = 0; parts && k < n; k++)
        read_probe_clear(&parts[k]);
    free(parts);
    free(index);
    return rc;
}

static int by_index(const void *a, const void *b) {
    const read_file_error *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* The whole list in one sequence on one probe. A file that crashes the probe is a failed
 * file: with allow_errors the rest is probed again without it. */
static int probe_sequence(const read_probe_request *rq, probe *p, read_probe *out,
                          h5ark_error *err) {
    char **paths = malloc(rq->npaths * sizeof *paths);
    int *index = malloc(rq->npaths * sizeof *index);
    read_probe crashes = {0};
    if (!paths || !index) {
        free(paths);
        free(index);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    size_t n = rq->npaths;
    for (size_t i = 0; i < n; i++) {
        paths[i] = rq->paths[i];
        index[i] = (int)i;
    }
    int rc;
    for (;;) {
        long at = -1;
        rc = send_probe(p, rq, paths, index, n);
        if (rc) {
            /* no probe can be started: probe in process, unisolated */
            read_probe_request sub = *rq;
            sub.paths = paths, sub.index = index, sub.npaths = n;
            rc = work.probe_files(&sub, out, err);
            break;
        }
        rc = receive_probe(p, rq, out, &at, err);
        if (rc <= 0) break;
        h5ark_error cerr = {0};
        crashed_error(&cerr);
        if (at < 0 || (size_t)at >= n) {
            rc = h5ark_fail(err, H5ARK_INTERNAL, "the file probe died before reading a file");
            break;
        }
        if (read_probe_add_error(&crashes, index[at], cerr.code, cerr.message, err)) {
            rc = -1;
            break;
        }
        if (!rq->allow_errors || n == 1) {
            *out = (read_probe){.stopped = !rq->allow_errors};
            rc = 0;
            break;
        }
        memmove(paths + at, paths + at + 1, (n - (size_t)at - 1) * sizeof *paths);
        memmove(index + at, index + at + 1, (n - (size_t)at - 1) * sizeof *index);
        n--;
    }
    for (size_t i = 0; rc == 0 && i < crashes.nerrors; i++) {
        const read_file_error *e = &crashes.errors[i];
        rc = read_probe_add_error(out, e->index, e->code, e->message, err);
    }
    if (rc == 0 && !out->stopped && out->nerrors > 1)
        qsort(out->errors, out->nerrors, sizeof *out->errors, by_index);
    if (rc) read_probe_clear(out);
    read_probe_clear(&crashes);
    free(paths);
    free(index);
    return rc;
}

int sandbox_probe_read(const read_probe_request *rq, read_probe *out, h5ark_error *err) {
    *out = (read_probe){0};
    probe *ps[MAX_PROBES];
    int got = enabled ? acquire(ps, rq->npaths < 2
                                        ? 1
                                        : (int)(rq->npaths < MAX_PROBES ? rq->npaths : MAX_PROBES))
                      : 0;
    if (got == 0) return work.probe_files(rq, out, err);
    int rc = 1;
    if (got > 1) {
        rc = probe_slices(rq, ps, got, out, err);
        release(ps + 1, got - 1);
    }
    if (rc > 0) rc = probe_sequence(rq, ps[0], out, err);
    release(ps, 1);
    return rc;
}

/* ---- pack's probe of sample files ------------------------------------------------------ */

/* The request as one string: the fields, then the groups ("\1" alone when listing). */
static char *request_key(const char *const *groups, size_t ngroups, const char *const *fields,
                         size_t nfields, size_t *len) {
    size_t n = 2;
    for (size_t i = 0; i < nfields; i++)
        n += strlen(fields[i]) + 1;
    for (size_t i = 0; groups && i < ngroups; i++)
        n += strlen(groups[i]) + 1;
    char *k = malloc(n), *p = k;
    if (!k) return NULL;
    for (size_t i = 0; i < nfields; i++)
        p = stpcpy(p, fields[i]) + 1;
    *p++ = '\2'; /* no name holds it: fields end here */
    if (!groups) *p++ = '\1';
    for (size_t i = 0; groups && i < ngroups; i++)
        p = stpcpy(p, groups[i]) + 1;
    *len = (size_t)(p - k);
    return k;
}

/* A file's first slot: by device and inode only, so that a file's newer version takes its
 * older one's place. */
static size_t memo_slot(const struct stat *st) {
    uint64_t h = (uint64_t)st->st_dev * 0x9e3779b97f4a7c15ULL ^ (uint64_t)st->st_ino;
    h ^= h >> 29;
    return (size_t)(h * 0xbf58476d1ce4e5b9ULL >> 40) % MEMO_SLOTS;
}

/* A remembered answer to the same request about the same version of the file: 1 (in *out),
 * or 0. */
static int memo_get(const struct stat *st, const char *key, size_t len, sample_probe *out) {
    pthread_mutex_lock(&lock);
    int hit = 0;
    for (size_t w = 0; w < MEMO_WAYS && !hit; w++) {
        const sample_memo *m = &memo[(memo_slot(st) + w) % MEMO_SLOTS];
        hit = same_version(&m->version, st) && m->rlen == len &&
              memcmp(m->request, key, len) == 0 && sample_probe_copy(out, &m->found, NULL) == 0;
    }
    pthread_mutex_unlock(&lock);
    return hit;
}

/* Remember an answer (taking key), the slot's older one forgotten. */
static void memo_put(const struct stat *st, char *key, size_t len, const sample_probe *found) {
    sample_probe copy;
    size_t bytes;
    if (sample_probe_copy(&copy, found, &bytes)) {
        free(key);
        return;
    }
    pthread_mutex_lock(&lock);
    /* the slot of the same file (another version or request), else a free one, else the
     * file's own */
    sample_memo *m = NULL;
    for (size_t w = 0; w < MEMO_WAYS && !m; w++) {
        sample_memo *c = &memo[(memo_slot(st) + w) % MEMO_SLOTS];
        if (c->request && c->version.dev == st->st_dev && c->version.ino == st->st_ino) m = c;
    }
    for (size_t w = 0; w < MEMO_WAYS && !m; w++) {
        sample_memo *c = &memo[(memo_slot(st) + w) % MEMO_SLOTS];
        if (!c->request) m = c;
    }
    if (!m) m = &memo[memo_slot(st)];
    if (m->request) {
        memo_bytes -= m->bytes;
        free(m->request);
        sample_probe_clear(&m->found);
        *m = (sample_memo){0};
    }
    if (memo_bytes + bytes + len <= MEMO_MAX_BYTES) {
        *m = (sample_memo){
            .version = {st->st_dev, st->st_ino, st->st_size, st->st_mtim, true, false},
            .request = key,
            .rlen = len,
            .bytes = bytes + len,
            .found = copy};
        memo_bytes += m->bytes;
        key = NULL;
        copy = (sample_probe){0};
    }
    pthread_mutex_unlock(&lock);
    free(key);
    sample_probe_clear(&copy);
}

static h5ark_value *names_value(const char *const *v, size_t n) {
    h5ark_value *a = h5ark_value_array();
    for (size_t i = 0; a && i < n; i++)
        if (h5ark_value_push(a, h5ark_value_bin(v[i], strlen(v[i])))) h5ark_value_destroy(&a);
    return a;
}

static int probe_samples_now(const char *abs_path, const char *const *groups, size_t ngroups,
                             const char *const *fields, size_t nfields, sample_probe *out,
                             h5ark_error *err) {
    *out = (sample_probe){0};
    probe *p;
    if (!enabled || !acquire(&p, 1))
        return work.probe_samples(abs_path, groups, ngroups, fields, nfields, out, err);
    h5ark_value *rq = h5ark_value_map();
    char *data = NULL, line[32];
    size_t len = 0;
    int rc = rq && !h5ark_value_set(rq, "path", h5ark_value_bin(abs_path, strlen(abs_path))) &&
                     !h5ark_value_set(rq, "groups",
                                      groups ? names_value(groups, ngroups) : h5ark_value_nil()) &&
                     !h5ark_value_set(rq, "fields", names_value(fields, nfields)) &&
                     h5ark_value_encode(rq, &data, &len) == 0
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value_destroy(&rq);
    snprintf(line, sizeof line, "S %zu", len);
    char status = '?';
    char *body = NULL;
    size_t blen = 0;
    if (rc == 0 && probe_send(p, line, data, len)) {
        probe_stop(p); /* it died since its last request: a new one gets this one */
        metrics_probe_restarted();
        if (probe_send(p, line, data, len))
            status = '?';
        else
            status = probe_receive(p, abs_path, &body, &blen, NULL);
    } else if (rc == 0) {
        status = probe_receive(p, abs_path, &body, &blen, NULL);
    }
    free(data);
    release(&p, 1);
    if (rc) return -1;
    if (status == '?') /* no probe can be started: in process, unisolated */
        return work.probe_samples(abs_path, groups, ngroups, fields, nfields, out, err);
    if (status == 0) {
        rc = crashed_error(err);
    } else if (status == 'o') {
        const char *why;
        h5ark_value *v = h5ark_value_decode(body, blen, &why);
        rc = v ? sample_probe_decode(v, nfields, out, err)
               : h5ark_fail(err, H5ARK_INTERNAL, "the file probe's answer %s", why);
        h5ark_value_destroy(&v);
    } else {
        rc = answer_error(status, body, err);
    }
    free(body);
    return rc;
}

int sandbox_probe_samples(const char *abs_path, const char *const *groups, size_t ngroups,
                          const char *const *fields, size_t nfields, sample_probe *out,
                          h5ark_error *err) {
    /* the version is taken before the probe: a file that changes while it is probed is
     * another version the next time */
    struct stat st;
    size_t len = 0;
    char *key = stat(abs_path, &st) == 0 && S_ISREG(st.st_mode)
                    ? request_key(groups, ngroups, fields, nfields, &len)
                    : NULL;
    if (key && memo_get(&st, key, len, out)) {
        free(key);
        return 0;
    }
    int rc = probe_samples_now(abs_path, groups, ngroups, fields, nfields, out, err);
    /* only answers that found every sample whole are kept */
    if (rc == 0 && key && out->failed == out->groups.n)
        memo_put(&st, key, len, out);
    else
        free(key);
    return rc;
}

/* Fault injection for the tests: a crash like the library's, on the files named. */
static void crash_if_named(const char *path) {
    const char *fault = getenv(SANDBOX_FAULT_ENV);
    if (fault && *fault && strstr(path, fault)) raise(SIGSEGV);
}

static void probe_progress(size_t k, const char *path) {
    if (!my_progress) return;
    atomic_store(my_progress, (int64_t)k);
    crash_if_named(path);
}

/* The attribute look-ups a read makes (by name, unlike lshdf's iteration: the library
 * decodes attribute messages differently on that path), on every object of the file. */
static const char *const schema_attrs[] = {
    ATTR_FILE_FORMAT, ATTR_OBJTYPE,  ATTR_IS_BOOL, ATTR_FILE_VERSION, ATTR_ARKOUDA_VERSION,
    ATTR_NUM_KEYS,    ATTR_NUM_COLS, ATTR_NUM_IDX, ATTR_IS_BIGINT,    ATTR_MAX_BITS,
    ATTR_NUM_LIMBS,   ATTR_RANK,     ATTR_SHAPE,   ATTR_COLUMN_ORDER, ATTR_NAMES};

typedef struct {
    hid_t file;
    size_t visited;
} attr_walk;

static herr_t touch_attrs(hid_t root, const char *name, const H5O_info_t *info, void *arg) {
    (void)root, (void)info;
    attr_walk *w = arg;
    if (++w->visited > 100000) return 1;
    for (size_t i = 0; i < sizeof schema_attrs / sizeof schema_attrs[0]; i++) {
        if (H5Aexists_by_name(w->file, name, schema_attrs[i], H5P_DEFAULT) <= 0) continue;
        hid_t a = H5Aopen_by_name(w->file, name, schema_attrs[i], H5P_DEFAULT, H5P_DEFAULT);
        if (a < 0) continue;
        hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
        hsize_t bytes = H5Aget_storage_size(a);
        if (t >= 0 && bytes <= 65536 && H5Tget_class(t) != H5T_VLEN && !H5Tis_variable_str(t)) {
            void *buf = malloc(bytes + 16);
            if (buf) H5Aread(a, t, buf);
            free(buf);
        }
        if (t >= 0) H5Tclose(t);
        if (sp >= 0) H5Sclose(sp);
        H5Aclose(a);
    }
    return 0;
}

static void probe_read_path(const char *path) {
    crash_if_named(path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, h5u_fapl());
    if (f < 0) return;
    attr_walk w = {.file = f};
    H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_NATIVE, touch_attrs, &w, H5O_INFO_BASIC);
    H5Fclose(f);
}

/* A request's LENGTH bytes from stdin, decoded (*v NULL when they do not decode: each
 * request's own checks say so). */
static int read_request(size_t len, h5ark_value **v, h5ark_error *err) {
    char *body = len < (1u << 30) ? malloc(len + 1) : NULL;
    if (!body || fread(body, 1, len, stdin) != len) {
        free(body);
        return h5ark_fail(err, H5ARK_INTERNAL, "cannot read the request");
    }
    const char *why;
    *v = h5ark_value_decode(body, len, &why);
    free(body);
    return 0;
}

/* "P LENGTH": read the request, probe its files, answer what they hold. */
static int probe_for_read(size_t len, h5ark_value **answer, h5ark_error *err) {
    h5ark_value *v;
    if (read_request(len, &v, err)) return -1;
    const h5ark_value *pv = h5ark_value_get(v, "paths"), *iv = h5ark_value_get(v, "index"),
                      *dv = h5ark_value_get(v, "datasets"),
                      *av = h5ark_value_get(v, "allow_errors"),
                      *cv = h5ark_value_get(v, "calc_offsets"),
                      *wv = h5ark_value_get(v, "whitelist");
    size_t n = h5ark_value_len(pv), nd = h5ark_value_len(dv);
    char **paths = calloc(n + 1, sizeof *paths);
    int *index = calloc(n + 1, sizeof *index);
    const char **datasets = calloc(nd + 1, sizeof *datasets);
    int rc =
        v && pv && iv && dv && av && cv && h5ark_value_len(iv) == n && paths && index && datasets
            ? 0
            : h5ark_fail(err, H5ARK_INTERNAL, "a malformed request");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const h5ark_value *p = h5ark_value_at(pv, i);
        int64_t k = 0;
        if (p->kind != H5ARK_BIN || !h5ark_value_to_int64(h5ark_value_at(iv, i), &k) || k < 0 ||
            k > INT_MAX)
            rc = h5ark_fail(err, H5ARK_INTERNAL, "a malformed request");
        paths[i] = p->as.s.ptr;
        index[i] = (int)k;
    }
    for (size_t i = 0; rc == 0 && i < nd; i++) {
        const h5ark_value *d = h5ark_value_at(dv, i);
        if (d->kind != H5ARK_BIN) rc = h5ark_fail(err, H5ARK_INTERNAL, "a malformed request");
        datasets[i] = d->as.s.ptr;
    }
    if (rc == 0) {
        read_probe_request rq = {.progress = probe_progress,
                                 .paths = paths,
                                 .index = index,
                                 .npaths = n,
                                 .datasets = datasets,
                                 .ndatasets = nd,
                                 .allow_errors = av->kind == H5ARK_BOOL && av->as.b,
                                 .calc_offsets = cv->kind == H5ARK_BOOL && cv->as.b,
                                 .ak0_whitelist = wv && wv->kind == H5ARK_ARRAY ? wv : NULL};
        read_probe found;
        rc = work.probe_files(&rq, &found, err);
        if (rc == 0) {
            *answer = read_probe_encode(&found);
            read_probe_clear(&found);
            if (!*answer) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
    }
    free(paths);
    free(index);
    free(datasets);
    h5ark_value_destroy(&v);
    return rc;
}

/* "S LENGTH": a sample file for pack. */
static int probe_for_samples(size_t len, h5ark_value **answer, h5ark_error *err) {
    h5ark_value *v;
    if (read_request(len, &v, err)) return -1;
    const h5ark_value *pv = h5ark_value_get(v, "path"), *gv = h5ark_value_get(v, "groups"),
                      *fv = h5ark_value_get(v, "fields");
    bool listing = gv && gv->kind == H5ARK_NIL;
    size_t ng = listing ? 0 : h5ark_value_len(gv), nf = h5ark_value_len(fv);
    const char **groups = calloc(ng + 1, sizeof *groups), **fields = calloc(nf + 1, sizeof *fields);
    int rc = v && pv && pv->kind == H5ARK_BIN && gv && (listing || gv->kind == H5ARK_ARRAY) && fv &&
                     fv->kind == H5ARK_ARRAY && groups && fields
                 ? 0
                 : h5ark_fail(err, H5ARK_INTERNAL, "a malformed request");
    for (size_t i = 0; rc == 0 && i < ng + nf; i++) {
        const h5ark_value *s = h5ark_value_at(i < ng ? gv : fv, i < ng ? i : i - ng);
        if (s->kind != H5ARK_BIN) rc = h5ark_fail(err, H5ARK_INTERNAL, "a malformed request");
        if (i < ng)
            groups[i] = s->as.s.ptr;
        else
            fields[i - ng] = s->as.s.ptr;
    }
    if (rc == 0) {
        probe_progress(0, pv->as.s.ptr);
        sample_probe found;
        rc = work.probe_samples(pv->as.s.ptr, listing ? NULL : groups, ng, fields, nf, &found, err);
        if (rc == 0) {
            *answer = sample_probe_encode(&found);
            sample_probe_clear(&found);
            if (!*answer) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
    }
    free(groups);
    free(fields);
    h5ark_value_destroy(&v);
    return rc;
}

/* Probe side: "c PATH" walks the file (the answer is only that it survived), "L PATH" /
 * "R PATH" / "V PATH" answer lshdf's entries (top level / recursive / as the gateway shows
 * them) as MessagePack, "P LENGTH" and
 * a MessagePack request probes files for readhdf, "S LENGTH" and one a sample file for pack. */
int sandbox_probe_main(const char *data_dir) {
    /* Each file opened makes the library allocate its metadata cache's index (half a MiB)
     * and free it on close; glibc would map and unmap it every time, the pages faulted in
     * afresh, and trim the heap after each request. Serve such blocks from the heap and
     * keep up to 64 MiB of free heap for the next file. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    snprintf(config.data_dir, sizeof config.data_dir, "%s", data_dir);
    void *map = mmap(NULL, sizeof *my_progress, PROT_READ | PROT_WRITE, MAP_SHARED, PROGRESS_FD, 0);
    if (map != MAP_FAILED) my_progress = map;
    const char *faults = getenv(SYSIO_FAULTS_ENV);
    if (faults && strcmp(faults, "1") == 0 && sysio_faults_start(FAULTS_FD) != 0) return 1;
    printf("ready\n");
    fflush(stdout);
    char line[PATH_MAX + 8];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (strlen(line) < 3) break;
        const char *path = line + 2;
        h5ark_error err = {0};
        h5ark_value *answer = NULL;
        int rc = 0;
        if (line[0] == 'c') {
            probe_read_path(path);
        } else if (line[0] == 'P') {
            rc = probe_for_read(strtoul(path, NULL, 10), &answer, &err);
        } else if (line[0] == 'S') {
            rc = probe_for_samples(strtoul(path, NULL, 10), &answer, &err);
        } else {
            list_mode mode = line[0] == 'V' ? LIST_VIEW : line[0] == 'R' ? LIST_TREE : LIST_TOP;
            answer = h5ark_value_array();
            rc = answer ? work.list(path, mode, answer, &err)
                        : h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        char *data = NULL;
        size_t len = 0;
        if (rc == 0 && answer && h5ark_value_encode(answer, &data, &len) != 0)
            rc = h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory encoding the answer");
        if (rc == 0) {
            printf("ok %zu\n", len);
            if (len) fwrite(data, 1, len, stdout);
        } else {
            char msg[sizeof err.message + 16];
            int n = snprintf(msg, sizeof msg, "%d %s", (int)err.code, err.message);
            printf("err %d\n", n);
            fwrite(msg, 1, (size_t)n, stdout);
        }
        fflush(stdout);
        free(data);
        h5ark_value_destroy(&answer);
    }
    return 0;
}
