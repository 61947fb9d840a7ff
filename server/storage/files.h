/* File names for the storage layer: confinement of client paths to the data directory,
 * Arkouda's `_LOCALE####` naming, glob expansion, temporaries and copies (commit.h puts
 * them in place). Every path a client gives goes through files_resolve or files_expand
 * before anything is read or written. */
#ifndef H5ARK_FILES_H
#define H5ARK_FILES_H

#include "acl.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* The daemon's record of who created which file (owners.h), at the data directory's root. */
#define FILES_OWNERS ".h5ark-owners"

/* Turn a client path into an absolute path inside the data directory, for `fa` (acl.h) to
 * do `perm` with (PERM_WRITE: create when new, update when there). Users off (fa NULL or
 * without user): the path is relative to the data directory. Users on: a relative path
 * lies in the caller's home (home/<user>/), one starting with '/' is from the data
 * directory; the right is checked where the name leads and where it resolves, refused with
 * forbidden naming the permission and the path as given. Refused with forbidden too:
 * absolute paths (users off), `..` leaving the directory, symbolic links resolving outside
 * it, control characters, the daemon's own files (ACLs, the owners' record). With
 * `create_dirs`, missing parent directories (inside the data directory) are created;
 * otherwise they must exist. The file itself need not exist; if it does, it must resolve
 * inside the directory too. */
int files_resolve(const file_access *fa, file_perm perm, const char *given, bool create_dirs,
                  char out[PATH_MAX], h5ark_error *err);
/* The same for a folder, which must exist ("" or "." the home, or the data directory's
 * root when users are off; "/" its root when they are on). */
int files_resolve_folder(const file_access *fa, file_perm perm, const char *given,
                         char out[PATH_MAX], h5ark_error *err);
/* Is the client's path a folder that exists? */
bool files_is_folder(const file_access *fa, const char *given);
/* Does the client's path name the caller's home (there or not yet)? */
bool files_names_home(const file_access *fa, const char *given);
/* May fa do perm on the file at abs (absolute, inside the data directory)? forbidden names
 * `given`. */
int files_check(const file_access *fa, const char *abs, file_perm perm, const char *given,
                h5ark_error *err);
/* The caller's home folder (absolute); -1 when users are off. */
int files_home(const file_access *fa, char out[PATH_MAX]);
/* Make the caller's home when it is not there (users off: nothing). */
int files_make_home(const file_access *fa, h5ark_error *err);
/* The file at abs named as the caller gives it: relative to the data directory (users
 * off), or relative to the home for the caller's own files and from '/' for the rest. */
void files_shown(const file_access *fa, const char *abs, char *out, size_t outlen);
/* A folder inside the data directory relative to it ("" the directory itself). */
const char *files_folder_rel(const char *abs);
/* The folders and files in abs_dir (absolute, confined) that fa may read, sorted by name,
 * each {name, path (as fa gives it), kind "folder" or "file", size (files)}, appended to
 * entries; hidden names (the daemon's own files) left out. */
int files_list_folder(const file_access *fa, const char *abs_dir, h5ark_value *entries,
                      h5ark_error *err);
/* The client's path made absolute as files_resolve makes it, without resolving links or
 * checking a right (the name to hand back to a client that wants absolute paths). */
int files_absolute(const file_access *fa, const char *given, char out[PATH_MAX], h5ark_error *err);

/* Arkouda's name of locale i's file in distributed mode: "data.h5" -> "data_LOCALE0003.h5",
 * "out" -> "out_LOCALE0003", "a.b.c" -> "a.b_LOCALE0003.c" (a last field holding '/' is no
 * extension). -1 if it does not fit in outlen. */
int files_locale_name(const char *path, int locale, char *out, size_t outlen);

/* The glob pattern matching every file of path's distributed set (path_LOCALE####ext, the
 * rest of the name escaped), and how many characters follow the four digits. -1 when it
 * does not fit. */
int files_locale_glob(const char *path, char *out, size_t outlen, size_t *tail);

/* Expand file names and glob patterns (client paths, as files_resolve) into absolute,
 * confined paths for fa to do perm with: each pattern's matches sorted, patterns in the
 * order given, duplicates dropped; a glob silently passes over the files fa may not
 * touch, a plain name fa may not is forbidden. A plain name that does not exist but whose
 * distributed set
 * (`prefix_LOCALE####ext`) does stands for that set. not_found names a pattern that matches
 * nothing, unless keep_missing: then it stays in the list as it was given (readhdf's
 * allow_errors names it among the files that could not be read). Free with
 * files_list_free. */
int files_expand(const file_access *fa, file_perm perm, const char *const *patterns,
                 size_t npatterns, bool keep_missing, char ***paths, size_t *count,
                 h5ark_error *err);
void files_list_free(char **paths, size_t count);

/* Bytes of the files under the data directory whose owner is `owner` (SERVICE.md §4):
 * those it created through the daemon (owners.h), at their size now. */
uint64_t files_disk_usage_of(const char *owner);

/* The path as the client knows it: relative to the data directory. */
const char *files_display(const char *abs);

/* Copy src to a new file dst (O_EXCL; copy_file_range where the kernel can), for a
 * write that extends a copy and renames it over src. io_error names the file as `shown`. */
int files_copy(const char *src, const char *dst, const char *shown, h5ark_error *err);
/* Remove the temporaries a daemon that died left in the data directory (run at start,
 * before any request and after commit_recover has completed the sets whose commit was
 * cut short); returns how many. */
size_t files_remove_stale_temps(void);

#endif
