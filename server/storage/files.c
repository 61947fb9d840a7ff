/* File names and path confinement (see files.h). */
#include "files.h"

#include "config.h"
#include "io.h"
#include "sysio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool inside_data_dir(const char *abs) {
    size_t n = strlen(config.data_dir);
    return strncmp(abs, config.data_dir, n) == 0 && (abs[n] == '/' || abs[n] == '\0');
}

const char *files_display(const char *abs) {
    size_t n = strlen(config.data_dir);
    if (strncmp(abs, config.data_dir, n) == 0 && abs[n] == '/') return abs + n + 1;
    return abs;
}

/* Lexical checks and normalisation: no control characters, relative, and `.`/`..`
 * components folded without ever climbing above the data directory. */
static int normalise(const char *rel, char *out, size_t outlen, h5ark_error *err) {
    if (!*rel) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the path is empty");
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' contains a control character", rel);
    if (rel[0] == '/')
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "path '%s' is absolute; paths are relative to the data directory", rel);
    size_t len = 0;
    size_t marks[PATH_MAX / 2];
    int depth = 0;
    const char *p = rel;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.')) {
            /* empty or "." component */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (depth == 0)
                return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leaves the data directory", rel);
            len = marks[--depth];
        } else {
            if (len + n + 2 > outlen || depth >= (int)(sizeof marks / sizeof marks[0]))
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", rel);
            marks[depth++] = len;
            if (len) out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p += n;
        if (*p == '/') p++;
    }
    out[len] = '\0';
    if (len == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' names no file", rel);
    return 0;
}

static int join(const char *rel, char out[PATH_MAX], h5ark_error *err) {
    if (snprintf(out, PATH_MAX, "%s/%s", config.data_dir, rel) >= PATH_MAX)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", rel);
    return 0;
}

/* Create the directories leading to abs (which is inside the data directory), checking
 * that none of them is a link out of it. */
static int make_parents(char *abs, const char *rel, h5ark_error *err) {
    size_t base = strlen(config.data_dir);
    for (char *p = abs + base + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = sysio.mkdir(abs, 0755);
        int e = errno;
        char real[PATH_MAX];
        bool ok = realpath(abs, real) && inside_data_dir(real);
        *p = '/';
        if (rc != 0 && e != EEXIST)
            return h5ark_fail(err, H5ARK_IO_ERROR, "cannot create the directory for '%s': %s", rel,
                              strerror(e));
        if (!ok)
            return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leaves the data directory", rel);
    }
    return 0;
}

int files_resolve(const char *rel, bool create_dirs, char out[PATH_MAX], h5ark_error *err) {
    char norm[PATH_MAX], abs[PATH_MAX], real[PATH_MAX];
    if (normalise(rel, norm, sizeof norm, err) || join(norm, abs, err)) return -1;
    if (create_dirs && make_parents(abs, rel, err)) return -1;
    /* the parent must exist and resolve inside; so must the file, if it exists */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", abs);
    *strrchr(parent, '/') = '\0';
    if (!realpath(parent, real)) {
        if (errno == ENOENT || errno == ENOTDIR)
            return h5ark_fail(err, H5ARK_NOT_FOUND, "the directory of '%s' does not exist", rel);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot resolve '%s': %s", rel, strerror(errno));
    }
    if (!inside_data_dir(real))
        return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leads out of the data directory", rel);
    struct stat st;
    bool there = sysio.lstat(abs, &st) == 0;
    /* not knowing is not "missing": a write would take it for a new file */
    if (!there && errno != ENOENT)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot look at '%s': %s", rel, strerror(errno));
    if (there) {
        if (!realpath(abs, real)) {
            /* a dangling link: nothing inside to read, and writing through it is refused */
            return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' is a link that leads nowhere", rel);
        }
        if (!inside_data_dir(real))
            return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leads out of the data directory",
                              rel);
        if (S_ISDIR(st.st_mode) ||
            (S_ISLNK(st.st_mode) && stat(abs, &st) == 0 && S_ISDIR(st.st_mode)))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is a directory, not a file", rel);
        /* use the resolved path: what is checked is what is opened */
        snprintf(out, PATH_MAX, "%s", real);
        return 0;
    }
    if (snprintf(out, PATH_MAX, "%s/%s", real, strrchr(abs, '/') + 1) >= PATH_MAX)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", rel);
    return 0;
}

int files_locale_name(const char *path, int locale, char *out, size_t outlen) {
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    int n;
    if (dot && dot != path && (!slash || dot > slash) && dot[-1] != '/')
        n = snprintf(out, outlen, "%.*s_LOCALE%04d%s", (int)(dot - path), path, locale, dot);
    else
        n = snprintf(out, outlen, "%s_LOCALE%04d", path, locale);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static size_t glob_escape(const char *in, size_t n, char *out, size_t outlen) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 2 < outlen; i++) {
        if (strchr("*?[]\\", in[i])) out[k++] = '\\';
        out[k++] = in[i];
    }
    out[k] = '\0';
    return k;
}

int files_locale_glob(const char *path, char *out, size_t outlen, size_t *tail) {
    char name0[PATH_MAX];
    if (files_locale_name(path, 0, name0, sizeof name0)) return -1;
    const char *mark = NULL;
    for (const char *p = strstr(name0, "_LOCALE0000"); p; p = strstr(p + 1, "_LOCALE0000"))
        mark = p;
    if (!mark) return -1;
    static const char digits[] = "_LOCALE[0-9][0-9][0-9][0-9]";
    *tail = strlen(mark + 11);
    size_t k = glob_escape(name0, (size_t)(mark - name0), out, outlen);
    if (k + sizeof digits >= outlen) return -1;
    memcpy(out + k, digits, sizeof digits);
    k += sizeof digits - 1;
    size_t e = glob_escape(mark + 11, *tail, out + k, outlen - k);
    return e < *tail ? -1 : 0;
}

static bool has_glob(const char *s) {
    return strpbrk(s, "*?[") != NULL;
}

static int add_path(char ***paths, size_t *count, size_t *cap, const char *p, h5ark_error *err) {
    if (*count == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        char **np = sysio.realloc(*paths, c * sizeof *np);
        if (!np) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        *paths = np;
        *cap = c;
    }
    if (!((*paths)[*count] = strdup(p)))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    (*count)++;
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Orders pointers into one list by the strings, then by place: the first of equals first. */
static int cmp_str_then_place(const void *a, const void *b) {
    char *const *x = *(char *const *const *)a, *const *y = *(char *const *const *)b;
    int c = strcmp(*x, *y);
    return c ? c : (x > y) - (x < y);
}

/* Drop every path that is a repeat of an earlier one, keeping the order (n log n: a
 * glob over many thousands of files must not compare each with all before it). */
static int drop_repeats(char **paths, size_t *count, h5ark_error *err) {
    size_t n = *count;
    if (n < 2) return 0;
    char ***by_name = sysio.malloc(n * sizeof *by_name);
    if (!by_name) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < n; i++)
        by_name[i] = &paths[i];
    qsort(by_name, n, sizeof *by_name, cmp_str_then_place);
    for (size_t i = 1, first = 0; i < n; i++) {
        if (strcmp(*by_name[i], *by_name[first]) != 0) {
            first = i; /* the first place of a new name */
            continue;
        }
        free(*by_name[i]);
        *by_name[i] = NULL; /* a later place of the same name */
    }
    free(by_name);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (paths[i]) paths[kept++] = paths[i];
    *count = kept;
    return 0;
}

/* The resolved form of a match of a glob: its directory is resolved once per run of
 * matches in it; a match that is itself a link is resolved whole. 1 when it is a regular
 * file, 0 when it is to be skipped. */
typedef struct {
    char dir[PATH_MAX];  /* the directory as globbed */
    char real[PATH_MAX]; /* and resolved, or "" when it cannot be */
} dir_memo;

static int resolve_match(const char *match, dir_memo *m, char real[PATH_MAX]) {
    const char *slash = strrchr(match, '/');
    size_t dlen = (size_t)(slash - match);
    if (dlen >= PATH_MAX) return 0;
    if (strncmp(m->dir, match, dlen) != 0 || m->dir[dlen] != '\0') {
        memcpy(m->dir, match, dlen);
        m->dir[dlen] = '\0';
        if (!realpath(m->dir, m->real)) m->real[0] = '\0';
    }
    struct stat st;
    if (!m->real[0] || lstat(match, &st) != 0) return 0;
    if (S_ISLNK(st.st_mode))
        return realpath(match, real) && stat(real, &st) == 0 && S_ISREG(st.st_mode);
    if (!S_ISREG(st.st_mode)) return 0;
    return snprintf(real, PATH_MAX, "%s%s", m->real, slash) < PATH_MAX;
}

/* Glob `abs_pattern` and add every regular file that resolves inside the data directory. */
static int add_matches(const char *abs_pattern, const char *shown, char ***paths, size_t *count,
                       size_t *cap, size_t *added, h5ark_error *err) {
    glob_t g;
    int rc = glob(abs_pattern, GLOB_NOSORT, NULL, &g);
    if (rc == GLOB_NOMATCH) return 0;
    if (rc != 0) return h5ark_fail(err, H5ARK_IO_ERROR, "cannot expand '%s'", shown);
    /* sorted by name, as Arkouda does; the C locale keeps _LOCALE0010 after _LOCALE0009 */
    qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, cmp_str);
    int result = 0;
    dir_memo *memo = calloc(1, sizeof *memo);
    if (!memo) result = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < g.gl_pathc && result == 0; i++) {
        char real[PATH_MAX];
        if (!resolve_match(g.gl_pathv[i], memo, real)) continue;
        if (!inside_data_dir(real)) {
            result = h5ark_fail(err, H5ARK_FORBIDDEN,
                                "'%s' matches a link out of the data directory", shown);
            break;
        }
        result = add_path(paths, count, cap, real, err);
        (*added)++;
    }
    free(memo);
    globfree(&g);
    return result;
}

int files_expand(const char *const *patterns, size_t npatterns, bool keep_missing, char ***paths,
                 size_t *count, h5ark_error *err) {
    size_t cap = 0;
    *paths = NULL;
    *count = 0;
    for (size_t i = 0; i < npatterns; i++) {
        char norm[PATH_MAX], abs[PATH_MAX];
        if (normalise(patterns[i], norm, sizeof norm, err) || join(norm, abs, err)) goto fail;
        size_t added = 0;
        if (!has_glob(norm)) {
            char resolved[PATH_MAX];
            struct stat st;
            if (files_resolve(norm, false, resolved, err) == 0) {
                if (sysio.stat(resolved, &st) == 0) {
                    if (add_path(paths, count, &cap, resolved, err)) goto fail;
                    continue;
                }
                if (errno != ENOENT) {
                    h5ark_fail(err, H5ARK_IO_ERROR, "cannot look at '%s': %s", patterns[i],
                               strerror(errno));
                    goto fail;
                }
            }
            if (err->code == H5ARK_FORBIDDEN || err->code == H5ARK_BAD_REQUEST ||
                err->code == H5ARK_IO_ERROR)
                goto fail;
            /* not there: maybe the name of a distributed set */
            char pattern[2 * PATH_MAX];
            size_t tail;
            if (files_locale_glob(abs, pattern, sizeof pattern, &tail) == 0 &&
                add_matches(pattern, patterns[i], paths, count, &cap, &added, err))
                goto fail;
            if (!added && keep_missing) {
                if (add_path(paths, count, &cap, abs, err)) goto fail;
            } else if (!added) {
                h5ark_fail(err, H5ARK_NOT_FOUND, "file '%s' does not exist", patterns[i]);
                goto fail;
            }
            continue;
        }
        if (add_matches(abs, patterns[i], paths, count, &cap, &added, err)) goto fail;
        if (!added && keep_missing) {
            if (add_path(paths, count, &cap, abs, err)) goto fail;
        } else if (!added) {
            h5ark_fail(err, H5ARK_NOT_FOUND, "no file matches '%s'", patterns[i]);
            goto fail;
        }
    }
    if (drop_repeats(*paths, count, err)) goto fail;
    return 0;
fail:
    files_list_free(*paths, *count);
    *paths = NULL;
    *count = 0;
    return -1;
}

void files_list_free(char **paths, size_t count) {
    for (size_t i = 0; i < count; i++)
        free(paths[i]);
    free(paths);
}

int files_temp_name(const char *final, char *out, size_t outlen) {
    static atomic_uint counter;
    const char *slash = strrchr(final, '/');
    int n = snprintf(out, outlen, "%.*s.%s.h5ark-tmp.%d.%u", (int)(slash - final + 1), final,
                     slash + 1, (int)getpid(), atomic_fetch_add(&counter, 1));
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

#define TWIN_SUFFIX ".h5ark-twin"

int files_twin_name(const char *final, char *out, size_t outlen) {
    const char *slash = strrchr(final, '/');
    int n =
        snprintf(out, outlen, "%.*s.%s" TWIN_SUFFIX, (int)(slash - final + 1), final, slash + 1);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Temporaries are named ".<name>.h5ark-tmp.<pid>.<n>": anything of that form left in the
 * data directory was being written when an earlier daemon died. So were twins. */
static bool is_stale_temp(const char *name) {
    size_t len = strlen(name), tl = strlen(TWIN_SUFFIX);
    if (name[0] == '.' && len > tl + 1 && strcmp(name + len - tl, TWIN_SUFFIX) == 0) return true;
    const char *mark = strstr(name, ".h5ark-tmp.");
    if (name[0] != '.' || !mark) return false;
    const char *p = mark + strlen(".h5ark-tmp.");
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p || *end != '.' || pid <= 0) return false;
    strtoul(end + 1, &end, 10);
    return *end == '\0';
}

static size_t remove_temps_in(const char *dir, int depth) {
    size_t removed = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode) && depth < 32)
            removed += remove_temps_in(path, depth + 1);
        else if (S_ISREG(st.st_mode) && is_stale_temp(e->d_name) && unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

size_t files_remove_stale_temps(void) {
    return remove_temps_in(config.data_dir, 0);
}

int files_copy(const char *src, const char *dst, const char *shown, h5ark_error *err) {
    int in = sysio.open(src, O_RDONLY | O_CLOEXEC, 0);
    if (in < 0)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot open '%s': %s", shown, strerror(errno));
    struct stat st;
    if (sysio.fstat(in, &st) != 0) {
        sysio.close(in);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot stat '%s': %s", shown, strerror(errno));
    }
    int out = sysio.open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777);
    if (out < 0) {
        sysio.close(in);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot create a copy of '%s': %s", shown,
                          strerror(errno));
    }
    int rc = 0;
    off_t left = st.st_size;
    bool plain = false;
    while (left > 0 && !plain) {
        ssize_t n = sysio.copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == ENOSYS || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP))
            plain = true;
        else if (n <= 0) {
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot copy '%s': %s", shown,
                            n < 0 ? strerror(errno) : "it shrank while being copied");
            break;
        } else
            left -= n;
    }
    if (plain && rc == 0) {
        static const size_t chunk = 1u << 20;
        char *buf = sysio.malloc(chunk);
        off_t pos = st.st_size - left;
        if (!buf) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        while (rc == 0 && left > 0) {
            size_t n = (size_t)(left < (off_t)chunk ? left : (off_t)chunk);
            if (io_pread_full(in, buf, n, (uint64_t)pos) ||
                io_pwrite_full(out, buf, n, (uint64_t)pos))
                rc =
                    h5ark_fail(err, H5ARK_IO_ERROR, "cannot copy '%s': %s", shown, strerror(errno));
            pos += (off_t)n;
            left -= (off_t)n;
        }
        free(buf);
    }
    sysio.close(in);
    if (sysio.close(out) != 0 && rc == 0)
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot copy '%s': %s", shown, strerror(errno));
    return rc;
}

uint64_t files_disk_usage_of(const char *owner) {
    (void)owner; /* files have no owners yet */
    return 0;
}
