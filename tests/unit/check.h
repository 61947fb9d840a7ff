/* A minimal check harness for the unit tests: CHECK(cond) reports a failed condition with
 * file:line and carries on; check_exit() gives main's return value (non-zero on failure). */
#ifndef H5ARK_TEST_CHECK_H
#define H5ARK_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* CHECK with a printf-style note, for checks inside loops. */
#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        CHECKF(check_a_ &&check_b_ &&strcmp(check_a_, check_b_) == 0, "\"%s\" != \"%s\"",          \
               check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");                    \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        CHECKF(check_a_ == check_b_, "%lld != %lld", check_a_, check_b_);                          \
    } while (0)

static inline int check_exit(const char *name) {
    if (check_failures)
        fprintf(stderr, "%s: %d of %d checks failed\n", name, check_failures, check_count);
    else
        printf("%s: all %d checks passed\n", name, check_count);
    return check_failures ? 1 : 0;
}

#endif
