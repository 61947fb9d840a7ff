/* Locks of files by name (pathlock.h). */
#include "pathlock.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pathlock_entry {
    pathlock_entry *next; /* in its bucket */
    uint64_t hash;
    size_t users;          /* holding or waiting: the entry goes when none is left */
    pthread_mutex_t owned; /* held by whoever holds the key */
    char key[];
};

#define BUCKETS 256

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pathlock_entry *buckets[BUCKETS];
static size_t entries;

/* sets from pathlock_take held by this thread (0 or 1) */
static _Thread_local int ordered_sets;

static uint64_t hash_of(const char *s) {
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

void pathlock_key(const char *abs, char out[PATH_MAX]) {
    char head[PATH_MAX], real[PATH_MAX];
    if (snprintf(head, sizeof head, "%s", abs) >= (int)sizeof head) {
        snprintf(out, PATH_MAX, "%s", abs);
        return;
    }
    for (size_t len = strlen(head);;) {
        if (realpath(head, real) &&
            snprintf(out, PATH_MAX, "%s%s", strcmp(real, "/") == 0 ? "" : real, abs + len) <
                PATH_MAX)
            return;
        char *slash = strrchr(head, '/');
        if (!slash || slash == head) break;
        *slash = '\0';
        len = (size_t)(slash - head);
    }
    snprintf(out, PATH_MAX, "%s", abs); /* nothing of it resolves: as written */
}

/* The entry of key, made when there is none, with one more user. NULL: out of memory. */
static pathlock_entry *enter(const char *key) {
    uint64_t h = hash_of(key);
    pthread_mutex_lock(&table_lock);
    pathlock_entry *e = buckets[h % BUCKETS];
    while (e && (e->hash != h || strcmp(e->key, key) != 0))
        e = e->next;
    if (!e) {
        size_t len = strlen(key);
        e = malloc(sizeof *e + len + 1);
        if (e) {
            memcpy(e->key, key, len + 1);
            e->hash = h;
            e->users = 0;
            pthread_mutex_init(&e->owned, NULL);
            e->next = buckets[h % BUCKETS];
            buckets[h % BUCKETS] = e;
            entries++;
        }
    }
    if (e) e->users++;
    pthread_mutex_unlock(&table_lock);
    return e;
}

/* One user fewer; the last one frees the entry. */
static void leave(pathlock_entry *e) {
    pthread_mutex_lock(&table_lock);
    if (--e->users == 0) {
        pathlock_entry **p = &buckets[e->hash % BUCKETS];
        while (*p != e)
            p = &(*p)->next;
        *p = e->next;
        entries--;
        pthread_mutex_destroy(&e->owned);
        free(e);
    }
    pthread_mutex_unlock(&table_lock);
}

static int by_key(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int pathlock_take(pathlock_set *s, const char *const *keys, size_t n) {
    *s = (pathlock_set){0};
    if (ordered_sets > 0) {
        errno = EDEADLK;
        return -1;
    }
    if (n == 0) return 0;
    const char **sorted = malloc(n * sizeof *sorted);
    s->held = malloc(n * sizeof *s->held);
    if (!sorted || !s->held) {
        free(sorted);
        free(s->held);
        s->held = NULL;
        errno = ENOMEM;
        return -1;
    }
    memcpy(sorted, keys, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_key);
    s->ordered = true;
    ordered_sets++;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0) continue;
        pathlock_entry *e = enter(sorted[i]);
        if (!e) {
            free(sorted);
            pathlock_give(s);
            errno = ENOMEM;
            return -1;
        }
        pthread_mutex_lock(&e->owned);
        s->held[s->n++] = e;
    }
    free(sorted);
    return 0;
}

int pathlock_try(pathlock_set *s, const char *key) {
    *s = (pathlock_set){0};
    pathlock_entry *e = enter(key);
    if (!e) return 0;
    if (pthread_mutex_trylock(&e->owned) != 0) {
        leave(e);
        return 0;
    }
    if (!(s->held = malloc(sizeof *s->held))) {
        pthread_mutex_unlock(&e->owned);
        leave(e);
        return 0;
    }
    s->held[s->n++] = e;
    return 1;
}

void pathlock_give(pathlock_set *s) {
    for (size_t i = s->n; i-- > 0;) {
        pthread_mutex_unlock(&s->held[i]->owned);
        leave(s->held[i]);
    }
    if (s->ordered) ordered_sets--;
    free(s->held);
    *s = (pathlock_set){0};
}

bool pathlock_holds(const pathlock_set *s, const char *key) {
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->held[i]->key, key) == 0) return true;
    return false;
}

size_t pathlock_entries(void) {
    pthread_mutex_lock(&table_lock);
    size_t n = entries;
    pthread_mutex_unlock(&table_lock);
    return n;
}
