/* The probe process that walks untrusted HDF5 files first (see sandbox.h). */
#include "sandbox.h"

#include "config.h"
#include "log.h"
#include "schema.h"
#include "storage.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <hdf5.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CACHE_SLOTS      4096
#define PROBE_TIMEOUT_MS 60000

typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    bool used, crashed;
} verdict;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t probe_pid = -1;
static FILE *to_probe, *from_probe;
static bool enabled;
static verdict cache[CACHE_SLOTS];

static size_t slot_of(const struct stat *st) {
    uint64_t h = (uint64_t)st->st_dev * 0x9e3779b97f4a7c15ULL ^ (uint64_t)st->st_ino;
    h ^= (uint64_t)st->st_size * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)st->st_mtim.tv_nsec;
    return (size_t)(h % CACHE_SLOTS);
}

static bool same_version(const verdict *v, const struct stat *st) {
    return v->used && v->dev == st->st_dev && v->ino == st->st_ino && v->size == st->st_size &&
           v->mtime.tv_sec == st->st_mtim.tv_sec && v->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static void stop_locked(void) {
    if (to_probe) fclose(to_probe);
    if (from_probe) fclose(from_probe);
    to_probe = from_probe = NULL;
    if (probe_pid > 0) {
        kill(probe_pid, SIGKILL);
        waitpid(probe_pid, NULL, 0);
    }
    probe_pid = -1;
}

static int spawn_locked(void) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]), close(in[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    /* what the library (or a sanitizer) says while dying is not the daemon's log */
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    /* the binary by name, not /proc/self/exe, which under a tool such as valgrind is the
     * tool; the probe names files as the daemon does, relative to the data directory */
    char exe[PATH_MAX], arg[] = SANDBOX_PROBE_ARG;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        posix_spawn_file_actions_destroy(&fa);
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
    int rc = posix_spawn(&probe_pid, exe, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        probe_pid = -1;
        errno = rc;
        return -1;
    }
    to_probe = fdopen(in[1], "w");
    from_probe = fdopen(out[0], "r");
    /* a probe that cannot even start must not make every file look like a crasher */
    char hello[16];
    struct pollfd pfd = {.fd = from_probe ? fileno(from_probe) : -1, .events = POLLIN};
    if (!to_probe || !from_probe || poll(&pfd, 1, PROBE_TIMEOUT_MS) != 1 ||
        !fgets(hello, sizeof hello, from_probe) || strcmp(hello, "ready\n") != 0) {
        stop_locked();
        return -1;
    }
    return 0;
}

int sandbox_start(void) {
    if (getenv("H5ARK_NO_SANDBOX")) return 0;
    pthread_mutex_lock(&lock);
    int rc = spawn_locked();
    enabled = rc == 0;
    pthread_mutex_unlock(&lock);
    if (rc != 0)
        log_warn("cannot start the file probe: %s; files are read unisolated", strerror(errno));
    return rc;
}

void sandbox_stop(void) {
    pthread_mutex_lock(&lock);
    stop_locked();
    enabled = false;
    pthread_mutex_unlock(&lock);
}

/* Send one request line and read the reply: "<status> <length>\n" then <length> bytes
 * (malloc'd into *body). Returns the status word's first letter, or 0 when the probe died
 * or hung (it is then replaced). Called with the lock held. */
static char exchange_locked(const char *line, char **body, size_t *len) {
    *body = NULL;
    *len = 0;
    if (!to_probe && spawn_locked() != 0) return '?';
    /* a file that sends the library into a loop counts as a crash too */
    struct pollfd pfd = {.fd = fileno(from_probe), .events = POLLIN};
    char head[64];
    unsigned long n = 0;
    char status = 0;
    if (fprintf(to_probe, "%s\n", line) > 0 && fflush(to_probe) == 0 &&
        poll(&pfd, 1, PROBE_TIMEOUT_MS) == 1 && fgets(head, sizeof head, from_probe) &&
        sscanf(head, "%*s %lu", &n) == 1 && n < (1ul << 30)) {
        *body = malloc(n + 1);
        if (*body && fread(*body, 1, n, from_probe) == n) {
            (*body)[n] = '\0';
            *len = n;
            status = head[0];
        }
    }
    if (!status) {
        free(*body);
        *body = NULL;
        int wstatus = 0;
        kill(probe_pid, SIGKILL); /* no-op when it died; ends it when it hung */
        waitpid(probe_pid, &wstatus, 0);
        probe_pid = -1;
        log_warn("the HDF5 library crashed in the file probe (%s %d) on: %s",
                 WIFSIGNALED(wstatus) ? "signal" : "exit status",
                 WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus), line + 2);
        stop_locked();
        spawn_locked();
    }
    return status;
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
    bool crashed;
    if (same_version(v, &st)) {
        crashed = v->crashed;
    } else {
        char *body;
        size_t len;
        char status = exchange_locked(line, &body, &len);
        free(body);
        crashed = status == 0;
        if (status != '?')
            *v = (verdict){st.st_dev, st.st_ino, st.st_size, st.st_mtim, true, crashed};
    }
    pthread_mutex_unlock(&lock);
    return crashed ? crashed_error(err) : 0;
}

int sandbox_list(const char *abs_path, bool recursive, h5ark_value *entries, h5ark_error *err) {
    if (!enabled || strchr(abs_path, '\n')) return storage_list(abs_path, recursive, entries, err);
    char line[PATH_MAX + 8];
    snprintf(line, sizeof line, "%c %s", recursive ? 'R' : 'L', abs_path);
    char *body;
    size_t len;
    pthread_mutex_lock(&lock);
    char status = exchange_locked(line, &body, &len);
    pthread_mutex_unlock(&lock);
    if (status == '?') return storage_list(abs_path, recursive, entries, err);
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
    } else { /* "e CODE LEN": body is the message */
        h5ark_code code = (h5ark_code)(status == 'e' ? atoi(body) : H5ARK_INTERNAL);
        const char *msg = strchr(body, ' ');
        rc = h5ark_fail(err, code, "%s", msg ? msg + 1 : body);
    }
    free(body);
    return rc;
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
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return;
    attr_walk w = {.file = f};
    H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_NATIVE, touch_attrs, &w, H5O_INFO_BASIC);
    H5Fclose(f);
}

/* Probe side: "c PATH" walks the file (the answer is only that it survived), "L PATH" /
 * "R PATH" answer lshdf's entries (top level / recursive) as MessagePack. */
int sandbox_probe_main(const char *data_dir) {
    snprintf(config.data_dir, sizeof config.data_dir, "%s", data_dir);
    H5open();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    H5PLset_loading_state(0);
    printf("ready\n");
    fflush(stdout);
    char line[PATH_MAX + 8];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (strlen(line) < 3) break;
        const char *path = line + 2;
        h5ark_error err = {0};
        h5ark_value *entries = h5ark_value_array();
        int rc = storage_list(path, line[0] != 'L', entries, &err);
        char *data = NULL;
        size_t len = 0;
        if (line[0] == 'c') {
            probe_read_path(path);
            printf("ok 0\n");
        } else if (rc == 0 && h5ark_value_encode(entries, &data, &len) == 0) {
            printf("ok %zu\n", len);
            fwrite(data, 1, len, stdout);
        } else {
            if (rc == 0) h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory listing the file");
            char msg[sizeof err.message + 16];
            int n = snprintf(msg, sizeof msg, "%d %s", (int)err.code, err.message);
            printf("err %d\n", n);
            fwrite(msg, 1, (size_t)n, stdout);
        }
        fflush(stdout);
        free(data);
        h5ark_value_destroy(&entries);
    }
    return 0;
}
