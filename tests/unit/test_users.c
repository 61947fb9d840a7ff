/* Unit tests of the token file (users.h, SERVICE.md §1): old-style files as before; users,
 * groups (the union over a user's lines), roles and quotas; every refusal naming its line
 * (and key, or both lines), never a token; the table in force kept by whoever holds it;
 * quota.requests counted across tables. */
#include "check.h"
#include "config.h"
#include "entry.h"
#include "users.h"

#include <stdio.h>
#include <stdlib.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

static users_table *parse(const char *text) {
    users_table *t = NULL;
    char why[512] = "";
    if (users_parse(text, strlen(text), "tokens", &t, why, sizeof why)) {
        fprintf(stderr, "unexpected refusal: %s\n", why);
        CHECK(0);
    }
    return t;
}

/* text is refused with exactly `expected`, which names no token. */
static void refused_n(const char *text, size_t len, const char *expected) {
    users_table *t = NULL;
    char why[512] = "";
    CHECK(users_parse(text, len, "tokens", &t, why, sizeof why) == -1 && t == NULL);
    CHECK_STR(why, expected);
    CHECK(strstr(why, "SECRET") == NULL);
}

static void refused(const char *text, const char *expected) {
    refused_n(text, strlen(text), expected);
}

static void test_old_style(void) {
    users_table *t = parse("# comment\n\n  w-SECRET write\nr-SECRET read\r\nplain-SECRET\n"
                           "\t# indented comment\nlast-SECRET");
    caller_role role;
    const user *u = (const user *)1;
    CHECK(!users_named(t) && users_group_count(t) == 0);
    CHECK(users_match(t, "w-SECRET", 8, &role, &u) == 0 && role == ROLE_WRITE && u == NULL);
    CHECK(users_match(t, "r-SECRET", 8, &role, &u) == 1 && role == ROLE_READ);
    CHECK(users_match(t, "plain-SECRET", 12, &role, &u) == 2 && role == ROLE_WRITE);
    CHECK(users_match(t, "last-SECRET", 11, &role, &u) == 3);
    CHECK(users_match(t, "r-SECRE", 7, &role, &u) == -1);
    CHECK(users_match(t, "r-SECRETT", 9, &role, &u) == -1);
    CHECK(users_match(t, "", 0, &role, &u) == -1);
    users_release(t);
    /* an old file may give one token twice: the last line decides, as before */
    t = parse("dup-SECRET read\ndup-SECRET write\n");
    CHECK(users_match(t, "dup-SECRET", 10, &role, &u) == 1 && role == ROLE_WRITE);
    users_release(t);
    t = parse("a-SECRET admin\n");
    CHECK(users_match(t, "a-SECRET", 8, &role, &u) == 0 && role == ROLE_ADMIN);
    users_release(t);
}

static void test_users(void) {
    users_table *t = parse("alice-SECRET admin user=alice groups=physics,chem quota.memory=4G "
                           "quota.disk=512M quota.objects=10 quota.requests=2\n"
                           "alice2-SECRET read user=alice groups=bio,physics quota.memory=4096M "
                           "quota.disk=536870912 quota.objects=10 quota.requests=2\n"
                           "bob-SECRET user=bob groups=physics\n"
                           "carol-SECRET write user=carol\n");
    CHECK(users_named(t));
    caller_role role;
    const user *u = NULL;
    CHECK(users_match(t, "alice2-SECRET", 13, &role, &u) == 1 && role == ROLE_READ);
    CHECK(u && strcmp(u->name, "alice") == 0 && u->ngroups == 3);
    CHECK(u == users_find(t, "alice"));
    /* the union, sorted */
    CHECK_STR(u->groups[0], "bio");
    CHECK_STR(u->groups[1], "chem");
    CHECK_STR(u->groups[2], "physics");
    CHECK(user_in_group(u, "chem") && !user_in_group(u, "phys"));
    CHECK(u->quota.memory == 4LL << 30 && u->quota.disk == 512LL << 20);
    CHECK(u->quota.objects == 10 && u->quota.requests == 2);
    CHECK(users_match(t, "alice-SECRET", 12, &role, &u) == 0 && role == ROLE_ADMIN);
    CHECK(users_match(t, "bob-SECRET", 10, &role, &u) == 2 && role == ROLE_WRITE);
    CHECK(strcmp(u->name, "bob") == 0 && u->ngroups == 1);
    CHECK(u->quota.memory == -1 && u->quota.disk == -1 && u->quota.objects == -1 &&
          u->quota.requests == -1);
    CHECK(users_match(t, "carol-SECRET", 12, &role, &u) == 3 && u->ngroups == 0);
    CHECK(users_find(t, "dave") == NULL);
    CHECK(users_group_count(t) == 3);
    CHECK_STR(users_group(t, 0), "bio");
    CHECK_STR(users_group(t, 2), "physics");
    CHECK(users_group(t, 3) == NULL);
    users_release(t);
}

static void test_refusals(void) {
    refused("", "token file tokens: holds no token");
    refused("# only\n\n", "token file tokens: holds no token");
    refused("a-SECRET superuser\n",
            "token file tokens line 1: expected 'TOKEN [read|write|admin] [key=value ...]': the "
            "role must be read, write or admin");
    refused("a-SECRET read b-SECRET\n",
            "token file tokens line 1: expected key=value after the token and its role");
    refused("a-SECRET\nb-SECRET read color=blue\n",
            "token file tokens line 2, key color: unknown key (user, groups, quota.memory, "
            "quota.disk, quota.objects or quota.requests)");
    refused("a-SECRET x/SECRET=1\n",
            "token file tokens line 1: unknown key (user, groups, quota.memory, quota.disk, "
            "quota.objects or quota.requests)");
    refused("a-SECRET user=\n", "token file tokens line 1, key user: has no value");
    refused("a-SECRET user=a user=b\n", "token file tokens line 1, key user: given twice");
    refused("a-SECRET user=al/ice\n",
            "token file tokens line 1, key user: a name is 1 to 64 of A-Z a-z 0-9 _ . - (not . "
            "or ..)");
    refused("a-SECRET user=..\n",
            "token file tokens line 1, key user: a name is 1 to 64 of A-Z a-z 0-9 _ . - (not . "
            "or ..)");
    char longname[100];
    snprintf(longname, sizeof longname, "a-SECRET user=%065d\n", 0);
    refused(longname,
            "token file tokens line 1, key user: a name is 1 to 64 of A-Z a-z 0-9 _ . - (not . "
            "or ..)");
    snprintf(longname, sizeof longname, "a-SECRET user=%064d\n", 0);
    users_release(parse(longname));
    refused("a-SECRET user=a groups=x,,y\n",
            "token file tokens line 1, key groups: a name is 1 to 64 of A-Z a-z 0-9 _ . - (not . "
            "or ..), separated by commas");
    refused("a-SECRET user=a groups=x,\n",
            "token file tokens line 1, key groups: a name is 1 to 64 of A-Z a-z 0-9 _ . - (not . "
            "or ..), separated by commas");
    refused("a-SECRET user=a quota.memory=4X\n",
            "token file tokens line 1, key quota.memory: not a size (bytes, or a number with K, "
            "M, G or T, e.g. 4G)");
    refused("a-SECRET user=a quota.disk=-1\n",
            "token file tokens line 1, key quota.disk: not a size (bytes, or a number with K, M, "
            "G or T, e.g. 4G)");
    refused("a-SECRET user=a quota.memory=16777216T\n",
            "token file tokens line 1, key quota.memory: not a size (bytes, or a number with K, "
            "M, G or T, e.g. 4G)");
    refused("a-SECRET user=a quota.objects=1.5\n",
            "token file tokens line 1, key quota.objects: not a whole number");
    refused("a-SECRET user=a quota.requests=0\n",
            "token file tokens line 1, key quota.requests: must be at least 1 (0 would refuse "
            "every request)");
    refused("a-SECRET groups=x\n",
            "token file tokens line 1, key groups: groups and quotas belong to a user: give "
            "user= on the line");
    refused("a-SECRET quota.objects=3\n",
            "token file tokens line 1, key quota.objects: groups and quotas belong to a user: "
            "give user= on the line");
    /* once a line names a user, every line must: the line without is named */
    refused("a-SECRET user=a\n#\nb-SECRET read\n",
            "token file tokens line 3: names no user while line 1 does: once a line has user=, "
            "every line must");
    refused("a-SECRET read\nb-SECRET user=b\n",
            "token file tokens line 1: names no user while line 2 does: once a line has user=, "
            "every line must");
    refused("a-SECRET user=a quota.memory=1G\nb-SECRET user=b\nc-SECRET user=a quota.memory=2G\n",
            "token file tokens lines 1 and 3 give user a different quotas (quota.memory): every "
            "line of a user gives the same quotas");
    refused("a-SECRET user=a quota.objects=5\nc-SECRET read user=a\n",
            "token file tokens lines 1 and 2 give user a different quotas (quota.objects): every "
            "line of a user gives the same quotas");
    refused("a-SECRET user=a\nb-SECRET user=b\na-SECRET user=c\n",
            "token file tokens lines 1 and 3 hold the same token: a token names one user");
    refused_n("a-SECRET user=a\nb-SECRET\0 user=b\n", 32,
              "token file tokens line 2: holds a NUL byte");
}

static void test_in_force(void) {
    CHECK(users_acquire() == NULL);
    users_table *t = parse("a-SECRET user=alice quota.requests=2\n");
    users_install(t);
    users_table *held = users_acquire();
    CHECK(held == t);
    const user *alice = users_find(held, "alice");
    /* quota.requests: two in flight, then no more */
    CHECK(users_request_begin(alice) == 0 && users_request_begin(alice) == 0);
    CHECK(users_request_begin(alice) == -1 && users_requests_in_flight(alice) == 2);
    /* a reload: the old table stays with who holds it; counts carry over by name */
    users_install(parse("b-SECRET user=alice quota.requests=3\n"));
    CHECK(strcmp(alice->name, "alice") == 0); /* still there: held */
    users_table *now = users_acquire();
    const user *alice2 = users_find(now, "alice");
    CHECK(alice2 != alice && users_requests_in_flight(alice2) == 2);
    CHECK(users_request_begin(alice2) == 0 && users_request_begin(alice2) == -1);
    users_request_end(alice2);
    users_request_end(alice);
    users_request_end(alice);
    CHECK(users_requests_in_flight(alice2) == 0);
    users_release(held);
    users_release(now);
    users_install(NULL);
    CHECK(users_acquire() == NULL);
    CHECK(users_request_begin(NULL) == 0);
}

static int who_run(void *door, const caller *who, h5ark_error *err) {
    (void)err;
    *(caller *)door = *who;
    return 0;
}

/* The entry sets the caller's role and user from the table in force. */
static void test_entry_caller(void) {
    users_install(parse("a-SECRET admin user=alice groups=g\nr-SECRET read user=bob\n"));
    caller seen = {0};
    entry_call c = {.name = "x",
                    .read_only = true,
                    .ranks = RANKS_ZERO,
                    .token = "a-SECRET",
                    .token_len = 8,
                    .run = who_run,
                    .door = &seen};
    h5ark_error err = {0};
    CHECK(entry_run(&c, &err) == 0);
    CHECK(seen.role == ROLE_ADMIN && seen.may_write && seen.user);
    CHECK(strcmp(seen.user->name, "alice") == 0 && user_in_group(seen.user, "g"));
    c.token = "r-SECRET";
    CHECK(entry_run(&c, &err) == 0);
    CHECK(seen.role == ROLE_READ && !seen.may_write && strcmp(seen.user->name, "bob") == 0);
    users_install(NULL);
    c.token = NULL;
    CHECK(entry_run(&c, &err) == 0 && seen.user == NULL && seen.role == ROLE_WRITE);
}

/* What the work saw of its user (which lives as long as the request). */
typedef struct seen_user {
    caller who;
    char name[65];
    size_t ngroups;
    bool in_g2, in_g3, has_state;
    user_quotas quota;
} seen_user;

static int user_run(void *door, const caller *who, h5ark_error *err) {
    (void)err;
    seen_user *s = door;
    *s = (seen_user){.who = *who};
    if (!who->user) return 0;
    snprintf(s->name, sizeof s->name, "%s", who->user->name);
    s->ngroups = who->user->ngroups;
    s->in_g2 = user_in_group(who->user, "g2");
    s->in_g3 = user_in_group(who->user, "g3");
    s->has_state = who->user->state != NULL;
    s->quota = who->user->quota;
    return 0;
}

/* A rank > 0: the caller rank 0 forwarded with the request's header (its role and user),
 * or every right when the header has none (no token file). */
static void test_forwarded_caller(void) {
    users_table *t = parse("a-SECRET read user=alice groups=g1,g2 quota.memory=2K\n");
    h5ark_value *who = entry_user_value(users_find(t, "alice"));
    h5ark_value_set(who, "role", h5ark_value_str("read"));
    request req = {.forwarded_seq = 5, .header = h5ark_value_map()};
    seen_user seen;
    entry_call c = {.req = &req,
                    .name = "x",
                    .read_only = true,
                    .ranks = RANKS_ZERO,
                    .known = &entry_forwarded,
                    .run = user_run,
                    .door = &seen};
    h5ark_error err = {0};
    CHECK(entry_run(&c, &err) == 0);
    CHECK(seen.who.role == ROLE_WRITE && seen.who.may_write && seen.who.user == NULL);
    h5ark_value_set(req.header, "caller", who);
    CHECK(entry_run(&c, &err) == 0);
    CHECK(seen.who.role == ROLE_READ && !seen.who.may_write && seen.who.user && !seen.has_state);
    CHECK_STR(seen.name, "alice");
    CHECK(seen.ngroups == 2 && seen.in_g2 && !seen.in_g3);
    CHECK(seen.quota.memory == 2048 && seen.quota.requests == -1 && seen.quota.disk == -1);
    users_release(t);
    /* a malformed one is refused, not guessed at */
    h5ark_value *bad = h5ark_value_map();
    h5ark_value_set(bad, "role", h5ark_value_str("king"));
    h5ark_value_set(req.header, "caller", bad);
    err = (h5ark_error){0};
    CHECK(entry_run(&c, &err) == -1 && err.code == H5ARK_INTERNAL);
    CHECK_STR(err.message, "the caller rank 0 forwarded is malformed");
    h5ark_value_destroy(&req.header);
}

int main(void) {
    test_old_style();
    test_users();
    test_refusals();
    test_in_force();
    test_entry_caller();
    test_forwarded_caller();
    return check_exit("test_users");
}
