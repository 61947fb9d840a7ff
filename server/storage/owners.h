/* Who created which file through the daemon (SERVICE.md §4), for quota.disk.
 *
 * One small record, FILES_OWNERS at the data directory's root: a line "USER\tPATH" a file
 * (PATH relative to the data directory; neither holds a tab or a newline, as names and
 * paths hold no control character). It is replaced whole at each change (a temporary,
 * fsync, rename, fsync of the folder), so a crash leaves the old record or the new. A
 * record rather than an extended attribute: writes replace files by renaming a copy over
 * them, which would drop an attribute, and a record works on every file system. Files
 * present at start, or written while users are off, have no owner and count for no one;
 * an entry whose file is gone counts nothing and is dropped at the next change. */
#ifndef H5ARK_OWNERS_H
#define H5ARK_OWNERS_H

#include "h5ark_wire.h"
#include "storage/acl.h"

#include <stddef.h>
#include <stdint.h>

/* `user` created the files abs[0..n) (absolute, inside the data directory): they are its
 * from now on (an earlier entry of the same path belonged to a file since gone). */
int owners_created(const char *user, const char *const *abs, size_t n, h5ark_error *err);
/* The files abs[0..n) were deleted. */
int owners_deleted(const char *const *abs, size_t n, h5ark_error *err);
/* Who created the file abs (absolute): its name in user (at most len - 1 bytes), 1; 0 (user
 * "") when the record names no one or cannot be read. */
int owners_of(const char *abs, char *user, size_t len);
/* Bytes of those of abs[0..n) whose owner is `user`. */
uint64_t owners_bytes_among(const char *user, const char *const *abs, size_t n);

/* quota.disk (SERVICE.md §4): 0 when `user`'s files, holding `usage` bytes of which
 * `given_back` are replaced, may take `need` more under `quota` (-1: none); else
 * resource_limit naming the key, the usage, the need and the quota. */
int owners_quota_check(const char *user, int64_t quota, uint64_t usage, uint64_t need,
                       uint64_t given_back, h5ark_error *err);
/* The file at abs (absolute) about to hold `size` bytes, put in place by fa's user: checked
 * against fa->disk_quota when the file is new or already the user's (another's file counts
 * for its owner, no one's for no one). Users off: 0. */
int owners_room(const file_access *fa, const char *abs, uint64_t size, h5ark_error *err);

#endif
