/* Putting new files in place: one temporary renamed over its final name, or a file set (a
 * distributed tohdf's `_LOCALE` files) put in place as one, old or new as a whole.
 *
 * A set is committed with a journal, as SQLite commits a transaction over several files
 * with its super-journal: every temporary is flushed, then a journal listing the renames
 * (and the files of an earlier, larger set to remove) is written and flushed into the
 * data directory's `.h5ark-journal/`. Its being there, whole, is the commit point. The
 * renames follow, the directory is flushed and the journal removed. A failure before the
 * commit point removes the temporaries: every old file is as it was. After it, the write
 * is completed; a daemon that died meanwhile completes it at its next start
 * (commit_recover), before any request is served. */
#ifndef H5ARK_COMMIT_H
#define H5ARK_COMMIT_H

#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>

/* The journals' directory, inside the data directory. */
#define COMMIT_JOURNAL_DIR ".h5ark-journal"

/* fsync tmp, rename it over final, fsync the directory: after this returns 0 the new file
 * is in place and durable; on failure the old file (if any) is untouched and tmp is left
 * for the caller to remove. Takes no lock: for callers that hold twin_readers (twin.h). */
int commit_file(const char *tmp, const char *final, h5ark_error *err);

/* Put n temporaries in place over their finals (all in one directory) and remove the
 * files in `removes`, as one: on return every temporary is gone, renamed or removed.
 * -1 with err: nothing changed (every final as it was), unless the message says the
 * write was committed and is completed at the next start (a rename failing twice after
 * the commit point). Readers of sets (commit_readers_enter) never see it half done; the
 * caller must not hold twin_readers (the lock order is this one, then twin's). */
int commit_set(const char *const *tmps, const char *const *finals, int n,
               const char *const *removes, int nremove, h5ark_error *err);

/* Readers that must see every file of a set from one write hold this, shared, from
 * expanding the names until the last byte is read. Not to be taken twice on one thread;
 * taken before twin_readers. */
void commit_readers_enter(void);
void commit_readers_leave(void);

/* At start, before any request and before the stale temporaries are removed: complete the
 * commits a daemon that stopped left half done, and drop journals that never reached the
 * commit point. Logs what it did. -1 (err says which set) when a set cannot be completed:
 * the daemon must not serve it mixed. */
int commit_recover(h5ark_error *err);

#endif
