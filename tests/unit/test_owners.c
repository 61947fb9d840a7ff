/* Unit tests of the owners' record (storage/owners.h): a change appends what it changes
 * and no more (the bytes the process writes are counted: N files recorded one by one write
 * O(N) bytes, not O(N^2)); a torn tail is skipped and cut off; compaction past twice the
 * files owned; a record of the earlier form (a line a file) read as before; the parser on
 * odd text. */
#include "../../bench/measure.h"
#include "check.h"
#include "config.h"
#include "storage/files.h"
#include "storage/owners.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

#define N 2000

static char record[PATH_MAX];

static void make_file(const char *rel, size_t bytes, char abs[PATH_MAX]) {
    CHECK(snprintf(abs, PATH_MAX, "%s/%s", config.data_dir, rel) < PATH_MAX);
    FILE *f = fopen(abs, "w");
    CHECK(f != NULL);
    for (size_t i = 0; f && i < bytes; i++)
        fputc('x', f);
    if (f) fclose(f);
}

static off_t record_size(void) {
    struct stat st;
    return stat(record, &st) == 0 ? st.st_size : -1;
}

static void append_raw(const char *text) {
    FILE *f = fopen(record, "a");
    CHECK(f != NULL);
    if (f) fputs(text, f), fclose(f);
}

static void test_a_change_costs_the_change(void) {
    h5ark_error err;
    static char abs[N][PATH_MAX];
    for (int i = 0; i < N; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "home/alice/f%04d.h5", i);
        make_file(rel, 10, abs[i]);
    }
    uint64_t before = written();
    for (int i = 0; i < N; i++) {
        const char *one[] = {abs[i]};
        CHECK(owners_created("alice", one, 1, &err) == 0);
    }
    uint64_t bytes = written() - before;
    off_t size = record_size();
    /* "alice\thome/alice/f0000.h5\n": 26 bytes a file, each written once */
    CHECKF(size == (off_t)N * 26, "%lld", (long long)size);
    CHECKF(bytes == (uint64_t)N * 26, "%" PRIu64 " bytes written for %d files", bytes, N);
    printf("owners: %d files recorded one by one wrote %" PRIu64 " bytes (a whole record "
           "rewritten each time would write %" PRIu64 ")\n",
           N, bytes, (uint64_t)26 * N * (N + 1) / 2);
    CHECK(files_disk_usage_of("alice") == (uint64_t)N * 10);
    char who[65];
    CHECK(owners_of(abs[7], who, sizeof who) == 1);
    CHECK_STR(who, "alice");

    /* another user takes a path over; deleting gives the bytes back */
    const char *one[] = {abs[0]};
    CHECK(owners_created("bob", one, 1, &err) == 0);
    CHECK(files_disk_usage_of("alice") == (uint64_t)(N - 1) * 10);
    CHECK(files_disk_usage_of("bob") == 10);
    CHECK(owners_deleted(one, 1, &err) == 0);
    CHECK(owners_of(abs[0], who, sizeof who) == 0);
    CHECK(files_disk_usage_of("bob") == 0);
    const char *none[] = {"/nowhere/at/all"};
    off_t held = record_size();
    CHECK(owners_deleted(none, 1, &err) == 0 && record_size() == held); /* nothing to note */
}

static void test_compaction(void) {
    h5ark_error err;
    /* deleting almost all: past twice the files owned, the journal is rewritten whole */
    const char *gone[N];
    static char abs[N][PATH_MAX];
    for (int i = 0; i < N; i++) {
        CHECK(snprintf(abs[i], PATH_MAX, "%s/home/alice/f%04d.h5", config.data_dir, i) < PATH_MAX);
        gone[i] = abs[i];
    }
    for (int i = 1; i < N - 10; i += 100)
        CHECK(owners_deleted(gone + i, 100 < N - 10 - i ? 100 : (size_t)(N - 10 - i), &err) == 0);
    off_t size = record_size(); /* 10 files owned, fewer than 64 + 2 * 10 lines named */
    CHECKF(size > 0 && size < (64 + 2 * 10) * 27 + 100 * 27, "%lld", (long long)size);
    CHECK(files_disk_usage_of("alice") == 100);
    char who[65];
    CHECK(owners_of(abs[N - 5], who, sizeof who) == 1 && owners_of(abs[5], who, 1) == 0);
    /* a file gone behind the daemon's back counts nothing */
    unlink(abs[N - 1]);
    CHECK(files_disk_usage_of("alice") == 90);
}

static void test_torn_tail_and_the_earlier_form(void) {
    h5ark_error err;
    char a[PATH_MAX], b[PATH_MAX], who[65];
    unlink(record);
    make_file("home/carol/a.h5", 5, a);
    make_file("home/carol/b.h5", 7, b);
    append_raw("carol\thome/carol/a.h5\n");               /* the earlier form */
    append_raw("dave\thome/carol/b.h5\tmore/b.h5\nerin"); /* a change, then a torn tail */
    CHECK(owners_of(b, who, sizeof who) == 1);
    CHECK_STR(who, "dave");
    CHECK(files_disk_usage_of("carol") == 5);
    CHECK(files_disk_usage_of("erin") == 0);
    const char *one[] = {b};
    CHECK(owners_created("carol", one, 1, &err) == 0); /* the tail is cut off first */
    FILE *f = fopen(record, "r");
    char text[256] = {0};
    CHECK(f && fread(text, 1, sizeof text - 1, f) > 0);
    if (f) fclose(f);
    CHECK_STR(text, "carol\thome/carol/a.h5\ndave\thome/carol/b.h5\tmore/b.h5\n"
                    "carol\thome/carol/b.h5\n");
    CHECK(files_disk_usage_of("carol") == 12);
    /* a record changed by another process is read again */
    append_raw("\thome/carol/a.h5\n");
    CHECK(files_disk_usage_of("carol") == 7);
}

static int count(const char *user, size_t ulen, const char *path, size_t plen, void *ctx) {
    (void)user, (void)ulen, (void)path, (void)plen;
    ++*(int *)ctx;
    return 0;
}

static void test_parser(void) {
    int n = 0;
    const char *t = "no tab\n\t\n\tx\n\t\tx\t\ny\n";
    CHECK(owners_parse(t, strlen(t), count, &n) == strlen(t) && n == 2);
    n = 0;
    CHECK(owners_parse("u\tp", 3, count, &n) == 0 && n == 0);
    CHECK(owners_parse("", 0, count, &n) == 0);
}

int main(void) {
    char tmpl[] = "/tmp/h5ark-owners-XXXXXX";
    if (!mkdtemp(tmpl) || !realpath(tmpl, config.data_dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[2 * PATH_MAX + 64];
    CHECK(snprintf(cmd, sizeof cmd, "mkdir -p '%s/home/alice' '%s/home/carol'", config.data_dir,
                   config.data_dir) < (int)sizeof cmd);
    CHECK(system(cmd) == 0);
    CHECK(snprintf(record, sizeof record, "%s/.h5ark-owners", config.data_dir) < PATH_MAX);
    test_a_change_costs_the_change();
    test_compaction();
    test_torn_tail_and_the_earlier_form();
    test_parser();
    CHECK(snprintf(cmd, sizeof cmd, "rm -rf '%s'", config.data_dir) < (int)sizeof cmd);
    CHECK(system(cmd) == 0);
    return check_exit("test_owners");
}
