/* Unit tests of the one entry (entry.h), in-process at one rank: the caller is admitted
 * (token and role) before the door's check runs and the check before the work; a known
 * caller is not asked again; the work sees its caller, and so do the parts it opens; a
 * listed request is in `status`'s table while it runs, with its progress sink, and an
 * unlisted one is not; nothing is forwarded at one rank; every refusal is its own error. */
#include "check.h"
#include "config.h"
#include "entry.h"
#include "inflight.h"
#include "progress.h"

#include <stdlib.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

typedef struct {
    int checked, ran, forwarded, nested_ran;
    int check_rc, run_rc;
    const caller *seen; /* entry_caller() inside the work */
    caller nested_seen; /* the same, inside a part the work opened */
    size_t listed;      /* in-flight requests seen from inside the work */
    const char *listed_cmd;
    bool had_sink; /* a progress sink of the request's own while it ran */
    bool open_part;
} door_state;

static int door_check(void *door, h5ark_error *err) {
    door_state *d = door;
    d->checked++;
    return d->check_rc ? h5ark_fail(err, H5ARK_BAD_REQUEST, "the door refused it") : 0;
}

static h5ark_value *door_forward(void *door) {
    ((door_state *)door)->forwarded++;
    return h5ark_value_map();
}

static int part_run(void *door, const caller *who, h5ark_error *err) {
    (void)who;
    (void)err;
    door_state *d = door;
    d->nested_ran++;
    if (entry_caller()) d->nested_seen = *entry_caller();
    return 0;
}

static int door_run(void *door, const caller *who, h5ark_error *err) {
    door_state *d = door;
    d->ran++;
    d->seen = entry_caller();
    CHECK(d->seen == who);
    h5ark_value *list = h5ark_value_array();
    if (list && inflight_list(list, NULL) == 0) {
        d->listed = h5ark_value_len(list);
        static char cmd[32];
        const h5ark_value *c = d->listed ? h5ark_value_get(h5ark_value_at(list, 0), "cmd") : NULL;
        snprintf(cmd, sizeof cmd, "%s", c && c->kind == H5ARK_STR ? c->as.s.ptr : "");
        d->listed_cmd = cmd;
    }
    h5ark_value_destroy(&list);
    d->had_sink = progress_here() != NULL;
    if (d->open_part) {
        entry_call part = {.name = "part",
                           .read_only = true,
                           .ranks = RANKS_EVERY,
                           .known = entry_caller(),
                           .forward = door_forward,
                           .run = part_run,
                           .door = d};
        if (entry_run(&part, err)) return -1;
    }
    return d->run_rc ? h5ark_fail(err, H5ARK_IO_ERROR, "the work failed") : 0;
}

static entry_call call_of(door_state *d, const char *token, bool read_only) {
    return (entry_call){.name = "change",
                        .read_only = read_only,
                        .ranks = RANKS_EVERY,
                        .token = token,
                        .token_len = token ? strlen(token) : 0,
                        .check = door_check,
                        .forward = door_forward,
                        .run = door_run,
                        .door = d};
}

/* Put the token file `text` in force. */
static void tokens(const char *text) {
    users_table *t;
    char why[256];
    CHECK(users_parse(text, strlen(text), "tokens", &t, why, sizeof why) == 0);
    users_install(t);
}

static void test_no_tokens(void) {
    users_install(NULL);
    door_state d = {0};
    entry_call c = call_of(&d, NULL, false);
    h5ark_error err = {0};
    CHECK(entry_run(&c, &err) == 0);
    CHECK(d.checked == 1 && d.ran == 1);
    CHECK(d.seen == &c.who && c.who.token == -1 && c.who.may_write);
    CHECK(entry_caller() == NULL); /* only inside the work */
    CHECK(d.forwarded == 0);       /* one rank: nothing is forwarded */
    CHECK(d.listed == 0);          /* no request given: nothing listed */
}

static void test_tokens(void) {
    tokens("writer-secret write\nreader-secret read\n");
    h5ark_error err;

    door_state d = {0};
    entry_call c = call_of(&d, NULL, true);
    err = (h5ark_error){0};
    CHECK(entry_run(&c, &err) == -1 && err.code == H5ARK_UNAUTHORIZED);
    CHECK_STR(err.message, "this daemon requires a token");
    CHECK(d.checked == 0 && d.ran == 0); /* a stranger learns nothing from the check */

    c.token_hint = "send it so";
    err = (h5ark_error){0};
    CHECK(entry_run(&c, &err) == -1);
    CHECK_STR(err.message, "this daemon requires a token: send it so");

    c = call_of(&d, "reader-secreT", true);
    err = (h5ark_error){0};
    CHECK(entry_run(&c, &err) == -1 && err.code == H5ARK_UNAUTHORIZED);
    CHECK_STR(err.message, "the token is not valid");
    c = call_of(&d, "reader-secret-and-more", true);
    CHECK(entry_run(&c, &err) == -1);
    CHECK(d.checked == 0 && d.ran == 0);

    c = call_of(&d, "reader-secret", false); /* a read token asking for a change */
    err = (h5ark_error){0};
    CHECK(entry_run(&c, &err) == -1 && err.code == H5ARK_UNAUTHORIZED);
    CHECK_STR(err.message,
              "'change' creates or changes objects or files, and this token may only read");
    CHECK(d.checked == 0 && d.ran == 0);

    c = call_of(&d, "reader-secret", true);
    CHECK(entry_run(&c, &err) == 0);
    CHECK(d.ran == 1 && c.who.token == 1 && !c.who.may_write && d.seen == &c.who);

    c = call_of(&d, "writer-secret", false);
    CHECK(entry_run(&c, &err) == 0);
    CHECK(d.ran == 2 && c.who.token == 0 && c.who.may_write);

    /* known: admitted already, not asked again (no token, a change) */
    caller reader = {.token = 1, .may_write = false};
    c = call_of(&d, NULL, false);
    c.known = &reader;
    CHECK(entry_run(&c, &err) == 0);
    CHECK(d.ran == 3 && c.who.token == 1);
    c.known = &entry_forwarded;
    CHECK(entry_run(&c, &err) == 0 && c.who.may_write);

    users_install(NULL);
}

static void test_refusals_in_order(void) {
    h5ark_error err = {0};
    door_state d = {.check_rc = 1};
    entry_call c = call_of(&d, NULL, false);
    CHECK(entry_run(&c, &err) == -1 && err.code == H5ARK_BAD_REQUEST);
    CHECK_STR(err.message, "the door refused it");
    CHECK(d.checked == 1 && d.ran == 0);

    d = (door_state){.run_rc = 1};
    err = (h5ark_error){0};
    CHECK(entry_run(&c, &err) == -1 && err.code == H5ARK_IO_ERROR);
    CHECK_STR(err.message, "the work failed");
    CHECK(entry_caller() == NULL);
}

static void test_listed_and_parts(void) {
    request req = {0};
    req.header = h5ark_value_map();
    h5ark_value_set(req.header, "id", h5ark_value_uint(7));
    req.identity = (const unsigned char *)"client-1";
    req.identity_len = 8;
    h5ark_error err = {0};

    tokens("reader-secret read\n");
    door_state d = {.open_part = true, .nested_seen = {.token = -1, .may_write = true}};
    entry_call c = call_of(&d, "reader-secret", true);
    c.req = &req;
    CHECK(entry_run(&c, &err) == 0);
    CHECK(d.listed == 1);
    CHECK_STR(d.listed_cmd, "change");
    CHECK(d.had_sink);
    /* the part has the request's caller, not asked for a token again */
    CHECK(d.nested_ran == 1 && d.nested_seen.token == 0 && !d.nested_seen.may_write);
    CHECK(d.forwarded == 0);
    h5ark_value *after = h5ark_value_array();
    CHECK(inflight_list(after, NULL) == 0 && h5ark_value_len(after) == 0);
    h5ark_value_destroy(&after);

    d = (door_state){0};
    c.unlisted = true; /* answered at once on the router thread */
    CHECK(entry_run(&c, &err) == 0);
    CHECK(d.ran == 1 && d.listed == 0);
    h5ark_value_destroy(&req.header);
    users_install(NULL);
}

int main(void) {
    test_no_tokens();
    test_tokens();
    test_refusals_in_order();
    test_listed_and_parts();
    return check_exit("test_entry");
}
