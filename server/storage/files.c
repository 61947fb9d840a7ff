/* File names and path confinement (see files.h). */
#include "files.h"

#include "acl.h"
#include "config.h"
#include "io.h"
#include "sysio.h"
#include "temp_names.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
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

/* Lexical checks and normalisation of `rel` (shown in errors as `shown`): no control
 * characters, relative, and `.`/`..` components folded without ever climbing above the
 * data directory. "" is the data directory itself. */
static int normalise_any(const char *rel, const char *shown, char *out, size_t outlen,
                         h5ark_error *err) {
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' contains a control character",
                              shown);
    if (rel[0] == '/')
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "path '%s' is absolute; paths are relative to the data directory", shown);
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
                return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leaves the data directory",
                                  shown);
            len = marks[--depth];
        } else {
            if (len + n + 2 > outlen || depth >= (int)(sizeof marks / sizeof marks[0]))
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", shown);
            marks[depth++] = len;
            if (len) out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p += n;
        if (*p == '/') p++;
    }
    out[len] = '\0';
    return 0;
}

/* The client's path relative to the data directory: as given when users are off; with
 * users, a relative one inside the caller's home and one starting with '/' from the
 * data directory. The daemon's own files (ACLs, the owners' record) are no client's. */
static int map_path(const file_access *fa, const char *given, char *out, size_t outlen,
                    h5ark_error *err) {
    char joined[PATH_MAX];
    const char *rel = given;
    if (file_access_on(fa)) {
        int n = given[0] == '/' ? snprintf(joined, sizeof joined, "%s", given + strspn(given, "/"))
                                : snprintf(joined, sizeof joined, "home/%s/%s", fa->user, given);
        if (n < 0 || n >= (int)sizeof joined)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", given);
        rel = joined;
    }
    if (normalise_any(rel, given, out, outlen, err)) return -1;
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    if (strcmp(base, ACL_FILE) == 0 || strcmp(out, FILES_OWNERS) == 0)
        return h5ark_fail(err, H5ARK_FORBIDDEN, "'%s' is the daemon's own file, not data", given);
    return 0;
}

static int normalise(const file_access *fa, const char *given, char *out, size_t outlen,
                     h5ark_error *err) {
    if (!*given) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the path is empty");
    if (map_path(fa, given, out, outlen, err)) return -1;
    if (!out[0]) return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' names no file", given);
    return 0;
}

static int join(const char *rel, char out[PATH_MAX], h5ark_error *err) {
    if (snprintf(out, PATH_MAX, "%s/%s", config.data_dir, rel) >= PATH_MAX)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", rel);
    return 0;
}

/* Create the directories leading to abs (which is inside the data directory), checking
 * that none of them is a link out of it. */
static int make_parents(char *abs, const char *given, h5ark_error *err) {
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
            return h5ark_fail(err, H5ARK_IO_ERROR, "cannot create the directory for '%s': %s",
                              given, strerror(e));
        if (!ok)
            return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leaves the data directory", given);
    }
    return 0;
}

/* The folder of `rel` (relative to the data directory), "" for its root. */
static void folder_of(const char *rel, char out[PATH_MAX]) {
    const char *slash = strrchr(rel, '/');
    snprintf(out, PATH_MAX, "%.*s", slash ? (int)(slash - rel) : 0, rel);
}

/* The daemon's own files, whatever name led to them. */
static bool own_file(const char *rel) {
    const char *base = strrchr(rel, '/');
    return strcmp(base ? base + 1 : rel, ACL_FILE) == 0 || strcmp(rel, FILES_OWNERS) == 0;
}

static int check_folder(const file_access *fa, const char *dir, file_perm p, const char *given,
                        h5ark_error *err) {
    int ok = acl_allows(fa, dir, p, err);
    if (ok < 0) return -1;
    if (!ok)
        return h5ark_fail(err, H5ARK_FORBIDDEN, "no %s permission on '%s'", acl_perm_names[p],
                          given);
    return 0;
}

/* PERM_WRITE as what it is for the file at abs: create when new, update when there. */
static file_perm write_perm(file_perm p, const char *abs) {
    struct stat st;
    if (p != PERM_WRITE) return p;
    return lstat(abs, &st) == 0 ? PERM_UPDATE : PERM_CREATE;
}

int files_check(const file_access *fa, const char *abs, file_perm perm, const char *given,
                h5ark_error *err) {
    const char *rel = files_display(abs);
    if (own_file(rel))
        return h5ark_fail(err, H5ARK_FORBIDDEN, "'%s' is the daemon's own file, not data", given);
    if (!file_access_on(fa)) return 0;
    char dir[PATH_MAX];
    folder_of(rel, dir);
    return check_folder(fa, dir, write_perm(perm, abs), given, err);
}

/* files_resolve of `norm`, the client's path `given` made relative to the data directory. */
static int resolve_mapped(const file_access *fa, file_perm perm, const char *norm,
                          const char *given, bool create_dirs, char out[PATH_MAX],
                          h5ark_error *err) {
    char abs[PATH_MAX], real[PATH_MAX];
    if (join(norm, abs, err)) return -1;
    /* the right is judged where the name leads before anything is made, and again where
     * it really is once resolved (a link inside the data directory) */
    if (files_check(fa, abs, perm, given, err)) return -1;
    if (create_dirs && make_parents(abs, given, err)) return -1;
    /* the parent must exist and resolve inside; so must the file, if it exists */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", abs);
    *strrchr(parent, '/') = '\0';
    if (!realpath(parent, real)) {
        if (errno == ENOENT || errno == ENOTDIR)
            return h5ark_fail(err, H5ARK_NOT_FOUND, "the directory of '%s' does not exist", given);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot resolve '%s': %s", given, strerror(errno));
    }
    if (!inside_data_dir(real))
        return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leads out of the data directory", given);
    struct stat st;
    bool there = sysio.lstat(abs, &st) == 0;
    /* not knowing is not "missing": a write would take it for a new file */
    if (!there && errno != ENOENT)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot look at '%s': %s", given, strerror(errno));
    if (there && !S_ISLNK(st.st_mode)) {
        /* the last component is no link: it resolves to itself in its resolved directory */
        size_t n = strlen(real);
        if (snprintf(real + n, PATH_MAX - n, "/%s", strrchr(abs, '/') + 1) >= (int)(PATH_MAX - n))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", given);
    }
    if (there) {
        if (S_ISLNK(st.st_mode) && !realpath(abs, real)) {
            /* a dangling link: nothing inside to read, and writing through it is refused */
            return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' is a link that leads nowhere",
                              given);
        }
        if (!inside_data_dir(real))
            return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leads out of the data directory",
                              given);
        if (S_ISDIR(st.st_mode) ||
            (S_ISLNK(st.st_mode) && stat(abs, &st) == 0 && S_ISDIR(st.st_mode)))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is a directory, not a file",
                              given);
        /* use the resolved path: what is checked is what is opened */
        snprintf(out, PATH_MAX, "%s", real);
    } else if (snprintf(out, PATH_MAX, "%s/%s", real, strrchr(abs, '/') + 1) >= PATH_MAX)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", given);
    return strcmp(out, abs) != 0 ? files_check(fa, out, perm, given, err) : 0;
}

int files_resolve(const file_access *fa, file_perm perm, const char *given, bool create_dirs,
                  char out[PATH_MAX], h5ark_error *err) {
    char norm[PATH_MAX];
    if (normalise(fa, given, norm, sizeof norm, err)) return -1;
    return resolve_mapped(fa, perm, norm, given, create_dirs, out, err);
}

int files_resolve_folder(const file_access *fa, file_perm perm, const char *given,
                         char out[PATH_MAX], h5ark_error *err) {
    char abs[PATH_MAX];
    if (files_absolute(fa, given, abs, err)) return -1;
    struct stat st;
    if (!realpath(abs, out) || stat(out, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return h5ark_fail(err, H5ARK_NOT_FOUND, "folder '%s' does not exist", given);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot resolve '%s': %s", given, strerror(errno));
    }
    if (!inside_data_dir(out))
        return h5ark_fail(err, H5ARK_FORBIDDEN, "path '%s' leads out of the data directory", given);
    if (!S_ISDIR(st.st_mode))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is a file, not a folder", given);
    if (!file_access_on(fa)) return 0;
    return check_folder(fa, files_folder_rel(out), perm, given, err);
}

const char *files_folder_rel(const char *abs) {
    size_t n = strlen(config.data_dir);
    return strncmp(abs, config.data_dir, n) == 0 && abs[n] == '\0' ? "" : files_display(abs);
}

bool files_is_folder(const file_access *fa, const char *given) {
    char abs[PATH_MAX];
    h5ark_error ignore;
    struct stat st;
    return files_absolute(fa, given, abs, &ignore) == 0 && stat(abs, &st) == 0 &&
           S_ISDIR(st.st_mode);
}

int files_home(const file_access *fa, char out[PATH_MAX]) {
    if (!file_access_on(fa)) return -1;
    return snprintf(out, PATH_MAX, "%s/home/%s", config.data_dir, fa->user) >= PATH_MAX ? -1 : 0;
}

void files_shown(const file_access *fa, const char *abs, char *out, size_t outlen) {
    const char *rel = files_folder_rel(abs);
    if (!file_access_on(fa)) {
        snprintf(out, outlen, "%s", rel[0] ? rel : ".");
        return;
    }
    size_t ul = strlen(fa->user);
    bool home = strncmp(rel, "home/", 5) == 0 && strncmp(rel + 5, fa->user, ul) == 0;
    if (home && rel[5 + ul] == '/')
        snprintf(out, outlen, "%s", rel + 6 + ul);
    else if (home && rel[5 + ul] == '\0')
        snprintf(out, outlen, ".");
    else
        snprintf(out, outlen, "/%s", rel);
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
    char dir[PATH_MAX];    /* the directory as globbed */
    char real[PATH_MAX];   /* and resolved, or "" when it cannot be */
    char judged[PATH_MAX]; /* the folder (relative) whose right was last judged */
    int verdict;           /* its verdict: 1 may, 0 may not, -1 none yet */
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

/* May fa do perm on the match at real? The daemon's own files never; the matches of one
 * folder share its verdict (matches come sorted, a folder's together). */
static int match_allowed(const file_access *fa, file_perm perm, const char *real, dir_memo *m,
                         h5ark_error *err) {
    const char *rel = files_display(real);
    if (own_file(rel)) return 0;
    if (!file_access_on(fa)) return 1;
    char dir[PATH_MAX];
    folder_of(rel, dir);
    if (m->verdict < 0 || strcmp(dir, m->judged) != 0) {
        int v = acl_allows(fa, dir, write_perm(perm, real), err);
        if (v < 0) return -1;
        memcpy(m->judged, dir, sizeof dir);
        m->verdict = v;
    }
    return m->verdict;
}

/* Glob `abs_pattern` and add every regular file that resolves inside the data directory
 * and that fa may do perm on (a glob passes over the rest, as if they were not there). */
static int add_matches(const file_access *fa, file_perm perm, const char *abs_pattern,
                       const char *shown, char ***paths, size_t *count, size_t *cap, size_t *added,
                       h5ark_error *err) {
    glob_t g;
    int rc = glob(abs_pattern, GLOB_NOSORT, NULL, &g);
    if (rc == GLOB_NOMATCH) return 0;
    if (rc != 0) return h5ark_fail(err, H5ARK_IO_ERROR, "cannot expand '%s'", shown);
    /* sorted by name, as Arkouda does; the C locale keeps _LOCALE0010 after _LOCALE0009 */
    qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, cmp_str);
    int result = 0;
    dir_memo *memo = calloc(1, sizeof *memo);
    if (!memo) result = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (memo) memo->verdict = -1;
    for (size_t i = 0; i < g.gl_pathc && result == 0; i++) {
        char real[PATH_MAX];
        if (!resolve_match(g.gl_pathv[i], memo, real)) continue;
        if (!inside_data_dir(real)) {
            result = h5ark_fail(err, H5ARK_FORBIDDEN,
                                "'%s' matches a link out of the data directory", shown);
            break;
        }
        int ok = match_allowed(fa, perm, real, memo, err);
        if (ok < 0) {
            result = -1;
            break;
        }
        if (!ok) continue;
        result = add_path(paths, count, cap, real, err);
        (*added)++;
    }
    free(memo);
    globfree(&g);
    return result;
}

int files_expand(const file_access *fa, file_perm perm, const char *const *patterns,
                 size_t npatterns, bool keep_missing, char ***paths, size_t *count,
                 h5ark_error *err) {
    size_t cap = 0;
    *paths = NULL;
    *count = 0;
    for (size_t i = 0; i < npatterns; i++) {
        char norm[PATH_MAX], abs[PATH_MAX];
        if (normalise(fa, patterns[i], norm, sizeof norm, err) || join(norm, abs, err)) goto fail;
        size_t added = 0;
        if (!has_glob(norm)) {
            char resolved[PATH_MAX];
            struct stat st;
            if (resolve_mapped(fa, perm, norm, patterns[i], false, resolved, err) == 0) {
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
                add_matches(fa, perm, pattern, patterns[i], paths, count, &cap, &added, err))
                goto fail;
            if (!added && keep_missing) {
                if (add_path(paths, count, &cap, abs, err)) goto fail;
            } else if (!added) {
                h5ark_fail(err, H5ARK_NOT_FOUND, "file '%s' does not exist", patterns[i]);
                goto fail;
            }
            continue;
        }
        if (add_matches(fa, perm, abs, patterns[i], paths, count, &cap, &added, err)) goto fail;
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
        else if (S_ISREG(st.st_mode) && temp_name_is_left_over(e->d_name) && unlink(path) == 0)
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

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One entry of a folder's listing, when fa may read it: 1 added, 0 passed over. */
static int list_entry(const file_access *fa, const char *abs, const char *name,
                      h5ark_value *entries, h5ark_error *err) {
    char real[PATH_MAX], shown[PATH_MAX];
    struct stat st;
    if (!realpath(abs, real) || !inside_data_dir(real) || stat(real, &st) != 0) return 0;
    bool folder = S_ISDIR(st.st_mode);
    if (!folder && !S_ISREG(st.st_mode)) return 0;
    h5ark_error refused;
    int ok = folder ? acl_allows(fa, files_folder_rel(real), PERM_READ, &refused)
                    : files_check(fa, real, PERM_READ, name, &refused) == 0;
    if (ok <= 0) return 0;
    files_shown(fa, abs, shown, sizeof shown);
    h5ark_value *e = h5ark_value_map();
    int rc = h5ark_value_set(e, "name", h5ark_value_str(name));
    if (rc == 0) rc = h5ark_value_set(e, "path", h5ark_value_str(shown));
    if (rc == 0) rc = h5ark_value_set(e, "kind", h5ark_value_str(folder ? "folder" : "file"));
    if (rc == 0 && !folder) rc = h5ark_value_set(e, "size", h5ark_value_uint((uint64_t)st.st_size));
    if (rc || h5ark_value_push(entries, e)) {
        if (rc) h5ark_value_destroy(&e);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    return 1;
}

int files_list_folder(const file_access *fa, const char *abs_dir, h5ark_value *entries,
                      h5ark_error *err) {
    DIR *d = opendir(abs_dir);
    if (!d) return h5ark_fail(err, H5ARK_IO_ERROR, "cannot list the folder: %s", strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    /* hidden names are the daemon's (temporaries, twins, ACLs, the owners' record) */
    while (rc == 0 && (e = readdir(d)))
        if (e->d_name[0] != '.') rc = add_path(&names, &n, &cap, e->d_name, err);
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char abs[PATH_MAX];
        if (snprintf(abs, sizeof abs, "%s/%s", abs_dir, names[i]) >= (int)sizeof abs) continue;
        rc = list_entry(fa, abs, names[i], entries, err) < 0 ? -1 : 0;
    }
    files_list_free(names, n);
    return rc;
}

int files_absolute(const file_access *fa, const char *given, char out[PATH_MAX], h5ark_error *err) {
    char norm[PATH_MAX];
    if (map_path(fa, given, norm, sizeof norm, err)) return -1;
    if (snprintf(out, PATH_MAX, "%s%s%s", config.data_dir, norm[0] ? "/" : "", norm) >= PATH_MAX)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", given);
    return 0;
}

int files_make_home(const file_access *fa, h5ark_error *err) {
    char home[PATH_MAX];
    struct stat st;
    if (files_home(fa, home) || stat(home, &st) == 0) return 0;
    char *slash = strrchr(home, '/');
    *slash = '\0';
    int rc = sysio.mkdir(home, 0755);
    *slash = '/';
    if ((rc == 0 || errno == EEXIST) && (sysio.mkdir(home, 0755) == 0 || errno == EEXIST)) return 0;
    return h5ark_fail(err, H5ARK_IO_ERROR, "cannot make the home of '%s': %s", fa->user,
                      strerror(errno));
}

bool files_names_home(const file_access *fa, const char *given) {
    char norm[PATH_MAX], home[PATH_MAX];
    h5ark_error ignore;
    if (!file_access_on(fa) || map_path(fa, given, norm, sizeof norm, &ignore)) return false;
    snprintf(home, sizeof home, "home/%s", fa->user);
    return strcmp(norm, home) == 0;
}
