/* The locks of files by name (storage/pathlock.h): keys of two names of one file, different
 * keys held at once, one key one holder at a time, sets in any order without deadlock,
 * the table empty again after many keys, and the order check. */
#include "check.h"

#include "storage/pathlock.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

static void test_keys(void) {
    char dir[] = "/tmp/h5ark-pathlock-XXXXXX", real[PATH_MAX];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(realpath(dir, real) != NULL);
    char file[PATH_MAX + 16], link[PATH_MAX + 16], sub[PATH_MAX + 16], via[PATH_MAX + 32];
    snprintf(file, sizeof file, "%s/a.h5", dir);
    snprintf(link, sizeof link, "%s/b.h5", dir);
    snprintf(sub, sizeof sub, "%s/d", dir);
    snprintf(via, sizeof via, "%s/l/a.h5", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    CHECK(symlink("a.h5", link) == 0);
    CHECK(mkdir(sub, 0755) == 0);
    char l[PATH_MAX + 16];
    snprintf(l, sizeof l, "%s/l", dir);
    CHECK(symlink(".", l) == 0);

    char k1[PATH_MAX], k2[PATH_MAX], k3[PATH_MAX], want[PATH_MAX + 32];
    pathlock_key(file, k1);
    pathlock_key(link, k2);
    pathlock_key(via, k3);
    snprintf(want, sizeof want, "%s/a.h5", real);
    CHECK_STR(k1, want);
    CHECK_STR(k2, want); /* a link to the file: the file's key */
    CHECK_STR(k3, want); /* a folder reached through a link */
    /* not there yet: the existing part resolved, the rest as written */
    char missing[PATH_MAX + 32];
    snprintf(missing, sizeof missing, "%s/l/d/new/x.h5", dir);
    pathlock_key(missing, k1);
    snprintf(want, sizeof want, "%s/d/new/x.h5", real);
    CHECK_STR(k1, want);
    pathlock_key("/no-such-top-h5ark/x.h5", k1);
    CHECK_STR(k1, "/no-such-top-h5ark/x.h5");

    unlink(l);
    unlink(link);
    unlink(file);
    rmdir(sub);
    rmdir(dir);
}

/* ---- two threads ---- */

typedef struct {
    const char *key;
    atomic_int state; /* 0 before, 1 holding, 2 done */
    int hold_ms;
} holder;

static void *hold(void *arg) {
    holder *h = arg;
    pathlock_set s;
    const char *keys[] = {h->key};
    if (pathlock_take(&s, keys, 1) != 0) return NULL;
    atomic_store(&h->state, 1);
    sleep_ms(h->hold_ms);
    pathlock_give(&s);
    atomic_store(&h->state, 2);
    return NULL;
}

static void wait_state(holder *h, int state) {
    for (int i = 0; i < 5000 && atomic_load(&h->state) < state; i++)
        sleep_ms(1);
}

static void test_two_threads(void) {
    /* different keys: the second is taken while the first is held */
    holder a = {.key = "/data/a.h5", .hold_ms = 400}, b = {.key = "/data/b.h5", .hold_ms = 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, hold, &a);
    wait_state(&a, 1);
    pthread_create(&tb, NULL, hold, &b);
    wait_state(&b, 2);
    CHECK(atomic_load(&b.state) == 2);
    CHECK(atomic_load(&a.state) == 1); /* b got through while a still held its key */
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);

    /* one key: the second waits for the first */
    holder c = {.key = "/data/c.h5", .hold_ms = 300}, d = {.key = "/data/c.h5", .hold_ms = 0};
    pthread_t tc, td;
    pthread_create(&tc, NULL, hold, &c);
    wait_state(&c, 1);
    pthread_create(&td, NULL, hold, &d);
    sleep_ms(150);
    CHECK(atomic_load(&d.state) == 0); /* still waiting */
    CHECK(pathlock_entries() == 1);    /* one entry, holder and waiter counted on it */
    wait_state(&d, 2);
    CHECK(atomic_load(&c.state) == 2); /* ... until c gave it back */
    CHECK(atomic_load(&d.state) == 2);
    pthread_join(tc, NULL);
    pthread_join(td, NULL);
    CHECK(pathlock_entries() == 0);
}

/* ---- many threads, overlapping sets in every order ---- */

#define KEYS    64
#define THREADS 8
#define ROUNDS  3000

static char names[KEYS][32];
static atomic_int inside[KEYS]; /* holders of each key at this moment */
static atomic_int overlaps, failures;

static void *churn(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        const char *keys[6];
        int n = 1 + (int)(rand_r(&seed) % 6);
        for (int i = 0; i < n; i++) /* any order, repeats allowed */
            keys[i] = names[rand_r(&seed) % KEYS];
        pathlock_set s;
        if (pathlock_take(&s, keys, (size_t)n) != 0) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        bool first[6];
        for (int i = 0; i < n; i++) {
            first[i] = true;
            for (int j = 0; j < i; j++)
                first[i] = first[i] && keys[j] != keys[i];
            if (first[i] && atomic_fetch_add(&inside[(keys[i] - names[0]) / 32], 1) != 0)
                atomic_fetch_add(&overlaps, 1);
            if (!pathlock_holds(&s, keys[i])) atomic_fetch_add(&failures, 1);
        }
        for (int i = 0; i < n; i++)
            if (first[i]) atomic_fetch_sub(&inside[(keys[i] - names[0]) / 32], 1);
        pathlock_give(&s);
    }
    return NULL;
}

static void test_many(void) {
    for (int i = 0; i < KEYS; i++)
        snprintf(names[i], sizeof names[i], "/data/set_LOCALE%04d.h5", i);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL); /* a deadlock hangs here: the test's timeout fails it */
    CHECK(atomic_load(&failures) == 0);
    CHECKF(atomic_load(&overlaps) <= 0, "%d overlaps", atomic_load(&overlaps));
    CHECK(pathlock_entries() == 0);

    /* many distinct keys, a set of each: every entry freed (leaks: the sanitizer build) */
    for (int i = 0; i < 20000; i++) {
        char key[64];
        snprintf(key, sizeof key, "/data/many/%d.h5", i);
        const char *keys[] = {key};
        pathlock_set s;
        CHECK(pathlock_take(&s, keys, 1) == 0);
        pathlock_give(&s);
    }
    CHECK(pathlock_entries() == 0);
    const char *big[500];
    static char bignames[500][32];
    for (int i = 0; i < 500; i++) {
        snprintf(bignames[i], sizeof bignames[i], "/data/big/%03d.h5", 499 - i);
        big[i] = bignames[i];
    }
    pathlock_set s;
    CHECK(pathlock_take(&s, big, 500) == 0);
    CHECK(s.n == 500 && pathlock_entries() == 500);
    CHECK(pathlock_holds(&s, "/data/big/000.h5") && !pathlock_holds(&s, "/data/big/500.h5"));
    pathlock_give(&s);
    CHECK(s.n == 0 && pathlock_entries() == 0);
}

/* ---- the order check ---- */

static void *try_other(void *arg) {
    pathlock_set s;
    *(int *)arg = pathlock_try(&s, "/data/x.h5");
    if (*(int *)arg) pathlock_give(&s);
    return NULL;
}

static void test_order(void) {
    const char *one[] = {"/data/x.h5"}, *two[] = {"/data/y.h5"};
    pathlock_set s, again, tried;
    CHECK(pathlock_take(&s, one, 1) == 0);
    /* a second set while holding one could wait in a circle: refused */
    errno = 0;
    CHECK(pathlock_take(&again, two, 1) == -1 && errno == EDEADLK);
    CHECK(again.n == 0);
    /* trying never waits: a free key is taken, a held one (by this thread too) is not */
    CHECK(pathlock_try(&tried, "/data/y.h5") == 1);
    pathlock_give(&tried);
    CHECK(pathlock_try(&tried, "/data/x.h5") == 0);
    int other = -1;
    pthread_t t;
    pthread_create(&t, NULL, try_other, &other);
    pthread_join(t, NULL);
    CHECK(other == 0);
    pathlock_give(&s);
    /* given back: a set may be taken again */
    CHECK(pathlock_take(&again, two, 1) == 0);
    pathlock_give(&again);
    pthread_create(&t, NULL, try_other, &other);
    pthread_join(t, NULL);
    CHECK(other == 1);
    pathlock_set none;
    CHECK(pathlock_take(&none, one, 0) == 0 && none.n == 0);
    pathlock_give(&none);
    CHECK(pathlock_entries() == 0);
}

int main(void) {
    alarm(120); /* a deadlock fails the test rather than hanging it */
    test_keys();
    test_two_threads();
    test_many();
    test_order();
    return check_exit("test_pathlock");
}
