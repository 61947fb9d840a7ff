/* Who created which file through the daemon (SERVICE.md §4), for quota.disk.
 *
 * One small record, FILES_OWNERS at the data directory's root: a journal of changes, a
 * line each, "USER\tPATH[\tPATH...]\n" (the files of one change, PATH relative to the data
 * directory; "" for USER: no one's any more). Neither a name nor a path holds a tab or a
 * newline, as names and paths hold no control character. A later line naming a path
 * overrides the earlier ones. A change appends its line and fsyncs it, so it costs the
 * change, not the files recorded; a line cut short by a crash or a failed write is a torn
 * tail, which no reader takes and the next change cuts off: the record is the old one or
 * the new. Past twice as many paths named as files owned, the journal is compacted (one
 * line an owned file still there, written to a temporary, fsynced and renamed over it). A
 * record rather than an extended attribute: writes replace files by renaming a copy over
 * them, which would drop an attribute, and a record works on every file system. Files
 * present at start, or written while users are off, have no owner and count for no one;
 * an entry whose file is gone counts nothing and is dropped at the next compaction. */
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
/* The journal's text parsed: each(user, its length, path, its length, ctx) for every path
 * of its whole lines in order (user "" : no one's); a nonzero answer stops it. Answers the
 * bytes of the whole lines read (what follows is a torn tail, or where it stopped). */
typedef int (*owners_each)(const char *user, size_t ulen, const char *path, size_t plen, void *ctx);
size_t owners_parse(const char *text, size_t len, owners_each each, void *ctx);
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
