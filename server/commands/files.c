/* Commands on files as files: glob filetype fileformat rmhdf. Paths are the caller's
 * (relative to the data directory, or with users to the caller's home) and confined and
 * checked as every path is (storage/files.h); each runs on rank 0, which sees the files
 * as every rank does. */
#include "commands.h"

#include "access.h"
#include "storage/files.h"
#include "storage/h5obj.h"
#include "storage/owners.h"
#include "storage/storage.h"
#include "storage/twin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* glob {paths}: the files the names and patterns stand for, in order (each pattern's
 * matches sorted; a distributed name its set), as the caller names them; only those the
 * caller may read. not_found names a pattern that matches nothing. */
static int cmd_glob(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *paths = arg_value(ctx, "paths");
    size_t n = h5ark_value_len(paths);
    if (n == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "glob: 'paths' names nothing");
    const char **patterns = calloc(n, sizeof *patterns);
    if (!patterns) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < n; i++)
        patterns[i] = h5ark_value_at(paths, i)->as.s.ptr;
    char **files = NULL;
    size_t count = 0;
    file_access fa = access_here();
    int rc = files_expand(&fa, PERM_READ, patterns, n, false, &files, &count, err);
    free(patterns);
    if (rc) return -1;
    h5ark_value *list = h5ark_value_array();
    for (size_t i = 0; list && i < count; i++) {
        char shown[PATH_MAX];
        files_shown(&fa, files[i], shown, sizeof shown);
        if (h5ark_value_push(list, h5ark_value_str(shown))) h5ark_value_destroy(&list);
    }
    files_list_free(files, count);
    if (!list) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return reply_set(ctx, "files", list, err);
}

/* The first file `path` stands for that the caller may read (absolute, confined), into
 * out, and its name as the caller gives it into shown. */
static int first_file(command_ctx *ctx, char out[PATH_MAX], char shown[PATH_MAX],
                      h5ark_error *err) {
    const char *pattern = arg_str(ctx, "path", "");
    char **files = NULL;
    size_t n = 0;
    file_access fa = access_here();
    if (files_expand(&fa, PERM_READ, &pattern, 1, false, &files, &n, err)) return -1;
    strcpy(out, files[0]); /* files_expand's paths fit PATH_MAX */
    files_shown(&fa, out, shown, PATH_MAX);
    files_list_free(files, n);
    return 0;
}

/* Does the file start with HDF5's signature (at 0, or after a user block of 512 << k)? */
static bool is_hdf5(const char *path) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    bool found = false;
    unsigned char buf[8];
    for (off_t at = 0; !found && at <= (off_t)1 << 30; at = at ? at * 2 : 512) {
        if (pread(fd, buf, 8, at) != 8) break;
        found = memcmp(buf, sig, 8) == 0;
    }
    close(fd);
    return found;
}

static bool is_parquet(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char buf[4];
    bool yes = fd >= 0 && pread(fd, buf, 4, 0) == 4 && memcmp(buf, "PAR1", 4) == 0;
    if (fd >= 0) close(fd);
    return yes;
}

/* filetype {path}: {file, type "hdf5" | "parquet"} of the first file the path stands for,
 * from its signature; bad_request when it is neither. */
static int cmd_filetype(command_ctx *ctx, h5ark_error *err) {
    char file[PATH_MAX], shown[PATH_MAX];
    if (first_file(ctx, file, shown, err)) return -1;
    const char *type = is_hdf5(file) ? "hdf5" : is_parquet(file) ? "parquet" : NULL;
    if (!type)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%.300s is neither HDF5 nor Parquet", shown);
    if (reply_set(ctx, "file", h5ark_value_str(shown), err)) return -1;
    return reply_set(ctx, "type", h5ark_value_str(type), err);
}

/* fileformat {path}: {file, file_format "single" | "distribute", attribute} of the first
 * HDF5 file the path stands for: its root attribute File_Format (0 single, else
 * distribute), which Arkouda's writer puts in every file it creates (attribute true); a
 * file without it is told by its name, a `_LOCALE####` one being part of a set. */
static int cmd_fileformat(command_ctx *ctx, h5ark_error *err) {
    char file[PATH_MAX], shown[PATH_MAX];
    if (first_file(ctx, file, shown, err)) return -1;
    int64_t format = -1;
    int has = storage_file_format(file, &format, err);
    if (has < 0) return -1;
    const char *base = strrchr(file, '/');
    const char *mark = strstr(base ? base : file, "_LOCALE");
    bool distributed = has == 1 ? format != 0 : mark && strspn(mark + 7, "0123456789") == 4;
    if (reply_set(ctx, "file", h5ark_value_str(shown), err) ||
        reply_set(ctx, "file_format", h5ark_value_str(distributed ? "distribute" : "single"), err))
        return -1;
    return reply_set(ctx, "attribute", h5ark_value_bool(has == 1), err);
}

/* rmhdf {path}: remove the regular files `path` and its distributed set
 * (path_LOCALE####ext) that the caller may delete; {"deleted": [files]}; their owners
 * forget them. Nothing there is no error. */
static int cmd_rmhdf(command_ctx *ctx, h5ark_error *err) {
    const char *path = arg_str(ctx, "path", "");
    char pattern[PATH_MAX];
    size_t tail;
    if (files_locale_glob(path, pattern, sizeof pattern, &tail))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "rmhdf: the path is too long");
    const char *patterns[] = {pattern, path};
    char **files = NULL;
    size_t n = 0;
    file_access fa = access_here();
    if (files_expand(&fa, PERM_DELETE, patterns, 2, true, &files, &n, err)) return -1;
    /* not while another request changes one of them; their twins go with them */
    pathlock_set held;
    if (twin_changes_lock(&held, (const char *const *)files, n, err)) {
        files_list_free(files, n);
        return -1;
    }
    h5ark_value *deleted = h5ark_value_array();
    int rc = deleted ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t gone = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct stat st;
        char shown[PATH_MAX];
        if (lstat(files[i], &st) != 0 || !S_ISREG(st.st_mode)) continue; /* kept as given */
        files_shown(&fa, files[i], shown, sizeof shown);
        if (unlink(files[i]) != 0 && errno != ENOENT) {
            rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot delete %s: %s", shown, strerror(errno));
            break;
        }
        twin_drop(files[i]);    /* a change's copy of a file that is gone */
        h5obj_forget(files[i]); /* and the HSDS endpoint's handle, holding its space */
        if (h5ark_value_push(deleted, h5ark_value_str(shown)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        else { /* the deleted ones first, for their owners */
            char *t = files[gone];
            files[gone++] = files[i];
            files[i] = t;
        }
    }
    /* what is gone counts for no one any more, even when a later file failed */
    h5ark_error ignore;
    if (owners_deleted((const char *const *)files, gone, rc ? &ignore : err) && rc == 0) rc = -1;
    twin_changes_unlock(&held);
    files_list_free(files, n);
    if (rc) {
        h5ark_value_destroy(&deleted);
        return -1;
    }
    return reply_set(ctx, "deleted", deleted, err);
}

const command_def file_commands[] = {
    {"glob",
     cmd_glob,
     {{"paths", ARG_STR_ARRAY, true}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"filetype",
     cmd_filetype,
     {{"path", ARG_STR, true}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"fileformat",
     cmd_fileformat,
     {{"path", ARG_STR, true}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"rmhdf", cmd_rmhdf, {{"path", ARG_STR, true}, {0}}, .ranks = RANKS_ZERO},
    {0},
};
