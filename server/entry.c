/* The one entry of every request (see entry.h). */
#include "entry.h"

#include "config.h"
#include "dist/ranks_serve.h"
#include "inflight.h"
#include "metrics.h"
#include "registry.h"

#include <string.h>

const caller entry_forwarded = {.token = -1, .may_write = true, .role = ROLE_WRITE};

/* The caller of the request this thread runs: the parts a request opens as entry calls of
 * their own (dispatch_call, the gateway's reads) run on its thread. */
static _Thread_local const caller *current;

const caller *entry_caller(void) {
    return current;
}

/* Who the caller is, from the credentials the door decoded, in the token table t
 * (--token-file; NULL: none). */
static int identify(const entry_call *c, const users_table *t, caller *who, h5ark_error *err) {
    *who = (caller){.token = -1, .may_write = true, .role = ROLE_WRITE};
    if (!t) return 0;
    if (!c->token)
        return c->token_hint ? h5ark_fail(err, H5ARK_UNAUTHORIZED,
                                          "this daemon requires a token: %s", c->token_hint)
                             : h5ark_fail(err, H5ARK_UNAUTHORIZED, "this daemon requires a token");
    caller_role role;
    const user *u;
    int match = users_match(t, c->token, c->token_len, &role, &u);
    if (match < 0) return h5ark_fail(err, H5ARK_UNAUTHORIZED, "the token is not valid");
    *who = (caller){.token = match, .may_write = role >= ROLE_WRITE, .role = role, .user = u};
    return 0;
}

/* Whether the caller may ask for what it asks. */
static int permit(const entry_call *c, const caller *who, h5ark_error *err) {
    if (c->name && !c->read_only && !who->may_write)
        return h5ark_fail(err, H5ARK_UNAUTHORIZED,
                          "'%s' creates or changes objects or files, and this token may only read",
                          c->name);
    return 0;
}

/* ranks_serve's header: the door's, made now, or the request's own. */
static const h5ark_value *forward_header(void *arg, h5ark_value **made) {
    const entry_call *c = arg;
    *made = c->forward ? c->forward(c->door) : NULL;
    return c->forward ? *made : c->req ? c->req->header : NULL;
}

/* The request, once its caller is admitted (entry_run). */
static int admitted(entry_call *c, h5ark_error *err) {
    if (c->check && c->check(c->door, err)) return -1;
    uint64_t seq = c->forwarded_seq;
    if (ranks_serve_begin(c->ranks_name ? c->ranks_name : c->name, c->ranks, c->read_only,
                          forward_header, c, &seq, err))
        return -1;
    inflight_entry *flight = c->unlisted || !c->req ? NULL : inflight_begin(c->req, c->name);
    const caller *outer = current;
    current = &c->who;
    registry_scope names = registry_enter(c->who.user, c->who.role == ROLE_ADMIN);
    int rc = c->run(c->door, &c->who, err);
    registry_leave(names);
    current = outer;
    inflight_end(flight);
    if (ranks_serve_end(seq, &rc, err) || rc != 0) return -1;
    return 0;
}

int entry_run(entry_call *c, h5ark_error *err) {
    /* the table the request is admitted with stays until it ends, whatever a reload does */
    users_table *table = NULL;
    int rc = -1;
    if (c->known) {
        c->who = *c->known;
    } else {
        table = users_acquire();
        if (identify(c, table, &c->who, err) || permit(c, &c->who, err))
            goto out; /* before the check: a stranger learns nothing */
    }
    rc = admitted(c, err);
out:
    users_release(table);
    return rc;
}

void entry_answered(const request *req, h5ark_code outcome, const reply *out) {
    metrics_request_done(req, outcome, out);
}
