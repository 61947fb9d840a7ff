/* File names for the storage layer: confinement of client paths to the data directory,
 * Arkouda's `_LOCALE####` naming, glob expansion, temporaries and copies (commit.h puts
 * them in place). Every path a client gives goes through files_resolve or files_expand
 * before anything is read or written. */
#ifndef H5ARK_FILES_H
#define H5ARK_FILES_H

#include "h5ark_wire.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* Turn a client path (relative to the data directory) into an absolute path inside it.
 * Refused with forbidden: absolute paths, `..` leaving the directory, symbolic links
 * resolving outside it, control characters. With `create_dirs`, missing parent
 * directories (inside the data directory) are created; otherwise they must exist. The file
 * itself need not exist; if it does, it must resolve inside the directory too. */
int files_resolve(const char *rel, bool create_dirs, char out[PATH_MAX], h5ark_error *err);

/* Arkouda's name of locale i's file in distributed mode: "data.h5" -> "data_LOCALE0003.h5",
 * "out" -> "out_LOCALE0003", "a.b.c" -> "a.b_LOCALE0003.c" (a last field holding '/' is no
 * extension). -1 if it does not fit in outlen. */
int files_locale_name(const char *path, int locale, char *out, size_t outlen);

/* The glob pattern matching every file of path's distributed set (path_LOCALE####ext, the
 * rest of the name escaped), and how many characters follow the four digits. -1 when it
 * does not fit. */
int files_locale_glob(const char *path, char *out, size_t outlen, size_t *tail);

/* Expand file names and glob patterns (relative to the data directory) into absolute,
 * confined paths: each pattern's matches sorted, patterns in the order given, duplicates
 * dropped. A plain name that does not exist but whose distributed set
 * (`prefix_LOCALE####ext`) does stands for that set. not_found names a pattern that matches
 * nothing, unless keep_missing: then it stays in the list as it was given (readhdf's
 * allow_errors names it among the files that could not be read). Free with
 * files_list_free. */
int files_expand(const char *const *patterns, size_t npatterns, bool keep_missing, char ***paths,
                 size_t *count, h5ark_error *err);
void files_list_free(char **paths, size_t count);

/* Bytes of the files under the data directory whose owner is `owner` (SERVICE.md §4). */
uint64_t files_disk_usage_of(const char *owner);

/* The path as the client knows it: relative to the data directory. */
const char *files_display(const char *abs);

/* A fresh temporary name in the same directory as `final` (for write-then-rename). */
int files_temp_name(const char *final, char *out, size_t outlen);
/* The twin of a file written in parts (twin.h): ".<name>.h5ark-twin" beside it. Removed
 * with the temporaries at start, as no twin is known level then. */
int files_twin_name(const char *final, char *out, size_t outlen);
/* Copy src to a new file dst (O_EXCL; copy_file_range where the kernel can), for a
 * write that extends a copy and renames it over src. io_error names the file as `shown`. */
int files_copy(const char *src, const char *dst, const char *shown, h5ark_error *err);
/* Remove the temporaries a daemon that died left in the data directory (run at start,
 * before any request and after commit_recover has completed the sets whose commit was
 * cut short); returns how many. */
size_t files_remove_stale_temps(void);

#endif
