/* Unit tests of the shard cache, alone and under darrays: blocks come back to the locale
 * that gave them, of similar size only (cut down when larger), oldest first out when the
 * cache is full or live objects need the room, small blocks never kept; darrays reuse
 * their shards' memory and the memory accounting ignores what is cached; shardcache_release
 * empties the cache and the process's resident size falls back to what it was. */
#include "check.h"
#include "config.h"
#include "locales.h"
#include "memory.h"
#include "objects/object.h"
#include "registry.h"
#include "shardcache.h"

#include <stdlib.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

#define MiB (UINT64_C(1) << 20)

static void *block(uint64_t bytes) {
    char *p = malloc(bytes);
    if (p) memset(p, 0x5a, bytes); /* touched, as a shard's memory is */
    return p;
}

static void test_take_and_give(void) {
    shardcache_init(16 * MiB);
    void *a = block(2 * MiB), *b = block(3 * MiB);
    shardcache_give(0, a, 2 * MiB);
    shardcache_give(1, b, 3 * MiB);
    CHECK_INT(shardcache_bytes(), 5 * MiB);
    CHECK(shardcache_take(0, 5 * MiB) == NULL); /* too small */
    CHECK(shardcache_take(0, MiB / 2) == NULL); /* below the cached size range */
    void *b2 = shardcache_take(1, 2 * MiB + 1); /* b, cut down: not locale 0's a */
    CHECK(b2 != NULL && b2 != a);
    CHECK(shardcache_take(0, 2 * MiB) == a); /* exact */
    CHECK_INT(shardcache_bytes(), 0);
    free(a);
    free(b2);

    /* a larger block, up to twice the size, is cut down; more than twice is not taken */
    void *c = block(4 * MiB);
    shardcache_give(0, c, 4 * MiB);
    CHECK(shardcache_take(0, MiB + MiB / 2) == NULL);
    void *d = shardcache_take(0, 3 * MiB);
    CHECK(d != NULL);
    CHECK_INT(shardcache_bytes(), 0);
    shardcache_give(0, d, 3 * MiB);
    CHECK_INT(shardcache_bytes(), 3 * MiB);
    shardcache_fit(0);
    CHECK_INT(shardcache_bytes(), 0);

    /* best fit among several */
    void *big = block(6 * MiB), *mid = block(4 * MiB);
    shardcache_give(0, big, 6 * MiB);
    shardcache_give(0, mid, 4 * MiB);
    CHECK(shardcache_take(0, 4 * MiB) == mid);
    void *cut = shardcache_take(0, 4 * MiB); /* big, cut down */
    CHECK(cut != NULL);
    CHECK_INT(shardcache_bytes(), 0);
    shardcache_shutdown();
    free(mid);
    free(cut);
}

static void test_bounds(void) {
    shardcache_init(8 * MiB);
    /* small blocks and blocks over the limit are freed, not kept */
    shardcache_give(0, block(MiB / 2), MiB / 2);
    shardcache_give(0, block(9 * MiB), 9 * MiB);
    CHECK_INT(shardcache_bytes(), 0);
    shardcache_give(0, NULL, 0);
    /* the oldest give way to new blocks when the cache is full */
    void *a = block(3 * MiB), *b = block(3 * MiB), *c = block(3 * MiB);
    shardcache_give(0, a, 3 * MiB);
    shardcache_give(0, b, 3 * MiB);
    shardcache_give(0, c, 3 * MiB);
    CHECK_INT(shardcache_bytes(), 6 * MiB);
    void *x = shardcache_take(0, 3 * MiB), *y = shardcache_take(0, 3 * MiB);
    CHECK((x == b && y == c) || (x == c && y == b)); /* a was freed */
    CHECK(shardcache_take(0, 3 * MiB) == NULL);
    shardcache_give(0, x, 3 * MiB);
    shardcache_give(0, y, 3 * MiB);
    shardcache_fit(4 * MiB); /* oldest first */
    CHECK_INT(shardcache_bytes(), 3 * MiB);
    CHECK(shardcache_take(0, 3 * MiB) == y);
    free(y);
    shardcache_shutdown();

    shardcache_init(0); /* no cache at all */
    shardcache_give(0, block(2 * MiB), 2 * MiB);
    CHECK_INT(shardcache_bytes(), 0);
}

/* Reserving for live objects shrinks the cache: live + cached stays within the limit. */
static void test_registry_makes_room(void) {
    registry_init(32 * MiB);
    shardcache_init(32 * MiB);
    h5ark_error err = {0};
    darray *a = darray_new(H5ARK_INT64, 3 * MiB, NULL, &err); /* 24 MiB, 8 per locale */
    CHECK(a != NULL);
    if (!a) return;
    void *first[3];
    for (int b = 0; b < 3; b++)
        first[b] = a->shards[b].data;
    darray_free(a);
    CHECK_INT(registry_memory_used(), 0);
    CHECK_INT(shardcache_bytes(), 24 * MiB);

    /* same size: every shard gets its own locale's memory back, though live and cached
     * bytes together would pass the limit if the cache made room first */
    darray *again = darray_new(H5ARK_UINT64, 3 * MiB, NULL, &err);
    CHECK(again != NULL);
    for (int b = 0; again && b < 3; b++)
        CHECKF(again->shards[b].data == first[b], "shard %d", b);
    CHECK_INT(shardcache_bytes(), 0);
    CHECK_INT(registry_memory_used(), 24 * MiB);
    darray_free(again);

    /* 16 MiB of new data fit beside 16 MiB of cache: one 8 MiB block goes */
    CHECK(registry_reserve(16 * MiB, &err) == 0);
    CHECK_INT(shardcache_bytes(), 16 * MiB);
    /* a reservation that fits only without the cache empties it, and succeeds */
    CHECK(registry_reserve(16 * MiB, &err) == 0);
    CHECK_INT(shardcache_bytes(), 0);
    /* one that does not fit at all fails as before */
    CHECK(registry_reserve(1, &err) != 0);
    CHECK_INT(err.code, H5ARK_RESOURCE_LIMIT);
    registry_unreserve(32 * MiB);

    /* a failed reservation leaves the cache alone */
    darray *c = darray_new(H5ARK_UINT8, 6 * MiB, NULL, &err);
    CHECK(c != NULL);
    darray_free(c);
    CHECK_INT(shardcache_bytes(), 6 * MiB);
    CHECK(darray_new(H5ARK_UINT8, 33 * MiB, NULL, &err) == NULL);
    CHECK_INT(shardcache_bytes(), 6 * MiB);
    CHECK_INT(registry_memory_used(), 0);
    shardcache_shutdown();
    registry_shutdown();
}

/* Blocks each locale allocates, touches and hands to the cache: heap chunks of several
 * sizes and one over the mmap threshold (32 MiB), as shards leave them. */
static const uint64_t released_sizes[] = {2 * MiB,  3 * MiB,  5 * MiB, 8 * MiB,
                                          12 * MiB, 20 * MiB, 40 * MiB};
#define RELEASED_PER_LOCALE (90 * MiB)

static void fill_cache(int locale, void *ctx) {
    (void)ctx;
    for (size_t i = 0; i < sizeof released_sizes / sizeof *released_sizes; i++)
        shardcache_give(locale, block(released_sizes[i]), released_sizes[i]);
}

/* Under AddressSanitizer or valgrind another allocator serves malloc, which keeps freed
 * memory its own way: only the cache's books can be checked there. */
static bool resident_measurable(void) {
#if defined(__SANITIZE_ADDRESS__)
    return false;
#else
    const char *preload = getenv("LD_PRELOAD");
    return !(preload && strstr(preload, "vgpreload"));
#endif
}

static void test_release(void) {
    shardcache_init(512 * MiB);
    uint64_t before = memory_resident();
    CHECK(before > 0);
    locales_run(fill_cache, NULL);
    uint64_t total = RELEASED_PER_LOCALE * (uint64_t)locales_count();
    CHECK_INT(shardcache_bytes(), total);
    uint64_t full = memory_resident();
    CHECK_INT(shardcache_release(), total);
    CHECK_INT(shardcache_bytes(), 0);
    uint64_t after = memory_resident();
    if (resident_measurable()) {
        CHECKF(full >= before + total - 16 * MiB, "resident %llu MiB before, %llu MiB full",
               (unsigned long long)(before / MiB), (unsigned long long)(full / MiB));
        /* every locale thread's freed memory went back, the top of the heap included */
        CHECKF(after <= before + 16 * MiB, "resident %llu MiB before, %llu MiB released",
               (unsigned long long)(before / MiB), (unsigned long long)(after / MiB));
    }
    CHECK_INT(shardcache_release(), 0); /* nothing left */

    /* the cache works on as before */
    void *a = block(4 * MiB);
    shardcache_give(1, a, 4 * MiB);
    CHECK(shardcache_take(1, 4 * MiB) == a);
    free(a);
    shardcache_shutdown();
}

int main(void) {
    memory_tune(); /* the daemon's malloc policy, set before any thread as main.c does */
    test_take_and_give();
    test_bounds();
    if (locales_start(3, 0, 1) != 0) return 1;
    test_registry_makes_room();
    test_release();
    locales_stop();
    return check_exit("test_shardcache");
}
