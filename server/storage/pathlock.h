/* Locks of files by name: changes to different files go on at once, changes to one file one
 * after another (twin.h's twin_changes_lock is the storage layer's use of them).
 *
 * A key is a file's canonical path (pathlock_key). The table holds an entry for each key
 * somebody holds or waits for, with the number of them, and frees it when the last one
 * leaves: it is as large as the files being changed at this moment, never more.
 *
 * Order: a thread takes every key it needs in one pathlock_take, which waits for them one
 * at a time in sorted order, so two threads that want overlapping sets never each hold what
 * the other waits for. While it holds a set it takes no other (refused with EDEADLK, the
 * check that keeps the order); pathlock_try, which never waits, may take one more. */
#ifndef H5ARK_PATHLOCK_H
#define H5ARK_PATHLOCK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct pathlock_entry pathlock_entry;

typedef struct {
    pathlock_entry **held;
    size_t n;
    bool ordered; /* taken by pathlock_take (it counts on the thread), not pathlock_try */
} pathlock_set;

/* The key of the file at abs (absolute): the longest part of it that exists resolved
 * (realpath), the rest as written, so that two names of one file through symbolic links
 * give one key whether the file exists yet or not. */
void pathlock_key(const char *abs, char out[PATH_MAX]);

/* Take the locks of keys[0..n) (a key given twice is taken once), waiting for each in
 * sorted order. 0, s holding them; -1 with errno, s holding nothing: ENOMEM, or EDEADLK
 * when this thread holds a set from pathlock_take already. */
int pathlock_take(pathlock_set *s, const char *const *keys, size_t n);
/* Take the lock of one key if nobody holds it, without waiting: 1 (s holds it), 0 (held
 * by somebody, this thread included, or out of memory: s holds nothing). */
int pathlock_try(pathlock_set *s, const char *key);
/* Give back every lock s holds (nothing when it holds none). */
void pathlock_give(pathlock_set *s);
/* Whether s holds the lock of key. */
bool pathlock_holds(const pathlock_set *s, const char *key);
/* The table's entries: keys held or waited for (0 once every set is given back). */
size_t pathlock_entries(void);

#endif
