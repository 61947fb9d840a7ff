/* A file changed in place at the cost of the change, never torn: the twin of a file written
 * in parts (an ExeTera field streamed by writepart).
 *
 * The twin, ".<name>.h5ark-twin" beside the file, is the same file byte for byte. A change
 * is made to the twin, which is flushed and then swapped with the file in one atomic step
 * (RENAME_EXCHANGE): whoever opens the file sees it before the change or after, and a
 * daemon killed at any moment leaves it whole. The writes the change made (the file driver
 * notes them) are then repeated on the old file, which is now the twin, so that the two are
 * the same again. A change costs its own bytes twice, not a copy of the file; the first
 * change (and the first after the file changed some other way, or after a restart) copies
 * the file once. Where the filesystem cannot swap names, the change is put in place by a
 * plain rename and the twin made again next time (as costly as a copy, as safe). */
#ifndef H5ARK_TWIN_H
#define H5ARK_TWIN_H

#include "acl.h"
#include "h5ark_wire.h"
#include "pathlock.h"
#include "vfd.h"

#include <limits.h>

typedef struct {
    char final[PATH_MAX], twin[PATH_MAX];
    const char *shown; /* the name errors give */
    h5u_write_log log;
} twin_change;

/* Make the twin of `final` (which must exist) the same file as it, copying it unless that is
 * known already, and start noting this thread's writes to it: open c->twin with HDF5 next,
 * through h5u_fapl(). Callers serialise changes to one file. */
int twin_begin(twin_change *c, const char *final, const char *shown, h5ark_error *err);
/* After the HDF5 file was closed: put the change in place (flush, swap, sync the directory)
 * and bring the twin level. -1 when the change could not be put in place: the file is as
 * it was, err says why. A twin that cannot be brought level is removed, not an error. */
int twin_commit(twin_change *c, h5ark_error *err);
/* The change failed: the twin is removed; the file is untouched. */
void twin_abort(twin_change *c);
/* A file done with parts, or replaced some other way: its twin goes. */
void twin_drop(const char *final);

/* Changes to files: one at a time to each file in this process, any number at once to
 * different files. Whoever changes a file in place (twin_begin ... twin_commit: writepart,
 * the HSDS endpoint) or replaces or removes files (tohdf, repack, the HSDS endpoint's
 * domains) holds the lock of every file it changes from reading a file's old state until
 * its new one is in place, so that no change is made to a state another change is
 * replacing, and no twin is levelled while a writer of its file reads it. The names are
 * resolved (pathlock_key), so two names of one file take one lock; a request takes all its
 * locks at once (a file set's, sorted) and no other until it lets them go, and takes them
 * before every other lock of the storage layer (commit's readers', twin_readers', the
 * owners' record's). abs: absolute paths, of files that exist or not. -1 with err when
 * out of memory (nothing held). */
int twin_changes_lock(pathlock_set *held, const char *const *abs, size_t n, h5ark_error *err);
/* The lock of the file a client's path names for fa (files_absolute's mapping); a path that
 * names none locks nothing (the request fails on it before it touches a file). */
int twin_changes_lock_named(pathlock_set *held, const file_access *fa, const char *given,
                            h5ark_error *err);
void twin_changes_unlock(pathlock_set *held);

/* Readers of files in the daemon hold this, shared, while any file they opened is open:
 * repeating a change on the old file waits until nobody in the daemon can be reading it.
 * (Other processes' HDF5 readers hold a shared flock; the twin is then dropped, not
 * written.) Not to be taken twice on one thread. */
void twin_readers_enter(void);
void twin_readers_leave(void);

#endif
