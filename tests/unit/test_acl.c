/* The permissions of folders (storage/acl.h) and how client paths meet them
 * (storage/files.h): the defaults of homes, shared folders and the rest; the order of
 * evaluation (admin, the user's entry, the union of its groups', default, refused); ACL
 * files below and above; the parser's refusals; names as the caller gives them. */
#include "check.h"
#include "config.h"
#include "storage/acl.h"
#include "storage/files.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

static const char *const physics[] = {"physics"};
static const char *const both[] = {"physics", "bio"};
static const file_access alice = {"alice", physics, 1, false};
static const file_access bob = {"bob", both, 2, false};
static const file_access carol = {"carol", both + 1, 1, false};
static const file_access root = {"root", NULL, 0, true};

static int allows(const file_access *fa, const char *dir, file_perm p) {
    h5ark_error err = {0};
    return acl_allows(fa, dir, p, &err);
}

static void put_acl(const char *dir, const char *json) {
    acl a;
    h5ark_error err = {0};
    char abs[PATH_MAX + 64];
    snprintf(abs, sizeof abs, "%s/%s", config.data_dir, dir);
    CHECK(acl_parse_json(json, strlen(json), &a, &err) == 0);
    CHECK(acl_write(abs, &a, dir, &err) == 0);
    acl_free(&a);
}

static void test_defaults(void) {
    for (int p = 0; p < PERM_COUNT; p++) {
        CHECK(allows(&alice, "home/alice", p) == 1);
        CHECK(allows(&alice, "home/alice/deep/er", p) == 1);
        CHECK(allows(&bob, "home/alice", p) == 0);
        CHECK(allows(&root, "home/alice", p) == 1);
        /* members: read, create, update, delete, and readACL as everyone */
        CHECK(allows(&alice, "shared/physics", p) == (p <= PERM_DELETE || p == PERM_READ_ACL));
        CHECK(allows(&carol, "shared/physics", p) == (p == PERM_READ_ACL));
        CHECK(allows(&alice, "", p) == (p == PERM_READ));
        CHECK(allows(&alice, "elsewhere/x", p) == (p == PERM_READ));
        CHECK(allows(&alice, "home", p) == (p == PERM_READ));
    }
    /* users off: everything, as before users */
    CHECK(allows(&(file_access){0}, "home/alice", PERM_DELETE) == 1);
}

static void test_evaluation_order(void) {
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/home/alice/pub/deeper'", config.data_dir);
    CHECK(system(cmd) == 0);
    put_acl("home/alice/pub", "[{\"subject\": \"bob\", \"read\": true},"
                              " {\"subject\": \"g:bio\", \"read\": true, \"create\": true},"
                              " {\"subject\": \"g:physics\", \"update\": true},"
                              " {\"subject\": \"default\", \"readACL\": true}]");
    /* bob's own entry decides, though both his groups would give more */
    CHECK(allows(&bob, "home/alice/pub", PERM_READ) == 1);
    CHECK(allows(&bob, "home/alice/pub", PERM_CREATE) == 0);
    CHECK(allows(&bob, "home/alice/pub/deeper", PERM_UPDATE) == 0);
    /* carol has no entry: her groups' union decides, default is not reached */
    CHECK(allows(&carol, "home/alice/pub/deeper", PERM_CREATE) == 1);
    CHECK(allows(&carol, "home/alice/pub", PERM_READ_ACL) == 0);
    /* alice is in physics alone: update, and no more (her home's defaults are replaced) */
    CHECK(allows(&alice, "home/alice/pub", PERM_UPDATE) == 1);
    CHECK(allows(&alice, "home/alice/pub", PERM_READ) == 0);
    CHECK(allows(&alice, "home/alice", PERM_READ) == 1);
    /* nobody of a group named: default */
    const file_access dave = {"dave", NULL, 0, false};
    CHECK(allows(&dave, "home/alice/pub", PERM_READ_ACL) == 1);
    CHECK(allows(&dave, "home/alice/pub", PERM_READ) == 0);
    CHECK(allows(&root, "home/alice/pub", PERM_UPDATE_ACL) == 1);
    /* a nearer ACL replaces the farther one */
    put_acl("home/alice/pub/deeper", "[{\"subject\": \"dave\", \"read\": true}]");
    CHECK(allows(&dave, "home/alice/pub/deeper", PERM_READ) == 1);
    CHECK(allows(&carol, "home/alice/pub/deeper", PERM_CREATE) == 0);
    acl a;
    char from[PATH_MAX];
    bool dflt;
    h5ark_error err = {0};
    CHECK(acl_of_folder("home/alice/pub/deeper/x", &a, from, sizeof from, &dflt, &err) == 0);
    CHECK(!dflt && strcmp(from, "home/alice/pub/deeper") == 0 && a.n == 1);
    acl_free(&a);
}

static void test_parser(void) {
    static const char *const bad[] = {
        "",
        "{}",
        "[1]",
        "[{\"read\": true}]",
        "[{\"subject\": 3}]",
        "[{\"subject\": \"a\", \"read\": 1}]",
        "[{\"subject\": \"a\", \"write\": true}]",
        "[{\"subject\": \"a\"}, {\"subject\": \"a\"}]",
        "[{\"subject\": \"g:\"}]",
        "[{\"subject\": \"a b\"}]",
        "[{\"subject\": \"a\", \"subject\": \"b\"}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        acl a;
        h5ark_error err = {0};
        CHECKF(acl_parse_json(bad[i], strlen(bad[i]), &a, &err) == -1, "%s", bad[i]);
        CHECKF(err.code == H5ARK_BAD_REQUEST && err.message[0], "%s", bad[i]);
    }
    acl a;
    h5ark_error err = {0};
    const char *ok =
        "[{\"subject\": \"g:x.y-z_1\", \"updateACL\": true}, {\"subject\": \"default\"}]";
    CHECK(acl_parse_json(ok, strlen(ok), &a, &err) == 0 && a.n == 2);
    CHECK(a.entries[0].allow[PERM_UPDATE_ACL] && !a.entries[0].allow[PERM_READ]);
    acl_free(&a);
}

static void test_names(void) {
    char out[PATH_MAX], abs[PATH_MAX + 64];
    h5ark_error err = {0};
    snprintf(abs, sizeof abs, "%s/home/alice/run/x.h5", config.data_dir);
    files_shown(&alice, abs, out, sizeof out);
    CHECK(strcmp(out, "run/x.h5") == 0);
    files_shown(&bob, abs, out, sizeof out);
    CHECK(strcmp(out, "/home/alice/run/x.h5") == 0);
    files_shown(NULL, abs, out, sizeof out);
    CHECK(strcmp(out, "home/alice/run/x.h5") == 0);
    CHECK(files_absolute(&alice, "run/x.h5", out, &err) == 0 && strcmp(out, abs) == 0);
    CHECK(files_absolute(&bob, "/home/alice/run/x.h5", out, &err) == 0 && strcmp(out, abs) == 0);
    CHECK(files_absolute(&alice, "../../../x", out, &err) == -1 && err.code == H5ARK_FORBIDDEN);
    CHECK(files_absolute(NULL, "/x", out, &err) == -1 && err.code == H5ARK_FORBIDDEN);
    CHECK(files_absolute(&alice, "a/.h5ark-acl", out, &err) == -1 && err.code == H5ARK_FORBIDDEN);
    /* a refusal names the permission and the path as given */
    CHECK(files_resolve(&bob, PERM_READ, "/home/alice/pub/../x.h5", false, out, &err) == -1);
    CHECK(err.code == H5ARK_FORBIDDEN &&
          strcmp(err.message, "no read permission on '/home/alice/pub/../x.h5'") == 0);
}

int main(void) {
    char tmpl[] = "/tmp/h5ark-test-acl-XXXXXX";
    if (!mkdtemp(tmpl) || !realpath(tmpl, config.data_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_defaults();
    test_evaluation_order();
    test_parser();
    test_names();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", config.data_dir);
    if (check_failures == 0 && system(cmd) != 0) return 1;
    return check_exit("test_acl");
}
