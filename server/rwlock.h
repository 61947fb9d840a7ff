/* A readers-writer lock that lets a waiting writer in before readers who arrive after it,
 * so that a steady stream of readers never keeps a writer waiting forever. */
#ifndef H5ARK_RWLOCK_H
#define H5ARK_RWLOCK_H

#include <pthread.h>

static inline void rwlock_init_writer_first(pthread_rwlock_t *lock) {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(lock, &attr);
    pthread_rwlockattr_destroy(&attr);
}

#endif
