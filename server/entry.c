/* The one entry of every request (see entry.h). */
#include "entry.h"

#include "checkpoint.h"
#include "config.h"
#include "dist/ranks_serve.h"
#include "inflight.h"
#include "metrics.h"
#include "registry.h"

#include <stdlib.h>
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
    if (c->name && c->admin_only && who->user && who->role != ROLE_ADMIN)
        return h5ark_fail(err, H5ARK_FORBIDDEN, "'%s' needs the admin role, and this token's is %s",
                          c->name, users_role_name(who->role));
    if (c->name && !c->read_only && !who->may_write)
        return h5ark_fail(err, H5ARK_UNAUTHORIZED,
                          "'%s' creates or changes objects or files, and this token may only read",
                          c->name);
    return 0;
}

/* ---- quota.requests and the per-user counter ---- */

typedef struct entry_ticket {
    users_table *table; /* in force when the request arrived */
    int token;          /* the token's index in it: matched once (-1: none matched) */
    caller_role role;
    const user *user; /* who the token names (NULL: no one, or no users) */
    bool counted;     /* in the user's requests in flight */
} entry_ticket;

static int user_busy(const user *u, h5ark_error *err) {
    return h5ark_fail(err, H5ARK_BUSY,
                      "user %s has %lld request(s) in flight, its quota.requests; try again once "
                      "one is answered",
                      u->name, (long long)u->quota.requests);
}

/* A request of u's begins: counted for the metrics, and in flight unless past its quota. */
static int user_begin(const user *u, h5ark_error *err) {
    if (!u) return 0;
    metrics_user_request(users_metrics_slot(u, metrics_user_slot));
    return users_request_begin(u) ? user_busy(u, err) : 0;
}

int entry_accept(request *req, const char *token, size_t token_len, h5ark_error *err) {
    users_table *t = users_acquire();
    if (!t) return 0;
    entry_ticket *k = calloc(1, sizeof *k);
    if (!k) {
        users_release(t); /* entry_run takes the table in force instead */
        return 0;
    }
    k->table = t;
    k->token = token ? users_match(t, token, token_len, &k->role, &k->user) : -1;
    if (k->token < 0) k->user = NULL;
    req->ticket = k;
    if (user_begin(k->user, err)) return -1;
    k->counted = k->user != NULL;
    return 0;
}

void entry_done(request *req) {
    entry_ticket *k = req->ticket;
    if (!k) return;
    if (k->counted) users_request_end(k->user);
    users_release(k->table);
    free(k);
    req->ticket = NULL;
}

/* ---- the caller forwarded to the other ranks ---- */

static h5ark_value *quotas_value(const user_quotas *q) {
    h5ark_value *m = h5ark_value_map();
    const int64_t v[] = {q->memory, q->disk, q->objects, q->requests};
    const char *const keys[] = {"memory", "disk", "objects", "requests"};
    for (int i = 0; i < 4; i++)
        if (h5ark_value_set(m, keys[i], v[i] < 0 ? h5ark_value_nil() : h5ark_value_int(v[i])))
            h5ark_value_destroy(&m);
    return m;
}

h5ark_value *entry_user_value(const user *u) {
    h5ark_value *groups = h5ark_value_array();
    for (size_t i = 0; groups && u && i < u->ngroups; i++)
        if (h5ark_value_push(groups, h5ark_value_str(u->groups[i]))) h5ark_value_destroy(&groups);
    user_quotas none = {-1, -1, -1, -1};
    h5ark_value *m = h5ark_value_map();
    if (h5ark_value_set(m, "user", u ? h5ark_value_str(u->name) : h5ark_value_nil()) ||
        h5ark_value_set(m, "groups", groups) ||
        h5ark_value_set(m, "quotas", quotas_value(u ? &u->quota : &none)))
        h5ark_value_destroy(&m);
    return m;
}

/* The caller as the other ranks take it: its role and its user (entry_user_value). */
static h5ark_value *caller_value(const caller *who) {
    h5ark_value *m = entry_user_value(who->user);
    if (h5ark_value_set(m, "role", h5ark_value_str(users_role_name(who->role))))
        h5ark_value_destroy(&m);
    return m;
}

/* ranks_serve's header: the door's, made now, or the request's own; with the caller when
 * a token file is in force (else every rank's caller is entry_forwarded, as before). */
static const h5ark_value *forward_header(void *arg, h5ark_value **made) {
    const entry_call *c = arg;
    *made = c->forward ? c->forward(c->door) : NULL;
    const h5ark_value *h = c->forward ? *made : c->req ? c->req->header : NULL;
    if (!h || c->who.token < 0) return h;
    if (!*made) *made = h5ark_value_copy(h);
    if (*made && h5ark_value_set(*made, "caller", caller_value(&c->who))) h5ark_value_destroy(made);
    return *made;
}

/* A user forwarded by rank 0, alive as long as the header it came in. */
typedef struct forwarded_user {
    user u;
    const char **groups;
} forwarded_user;

static bool quota_of(const h5ark_value *q, const char *key, int64_t *out) {
    const h5ark_value *v = h5ark_value_get(q, key);
    *out = -1;
    return !v || v->kind == H5ARK_NIL || (h5ark_value_to_int64(v, out) && *out >= 0);
}

/* The caller rank 0 forwarded in the header (forward_header), or entry_forwarded when the
 * header has none. */
static int forwarded_caller(entry_call *c, forwarded_user *f, h5ark_error *err) {
    c->who = entry_forwarded;
    const h5ark_value *m = c->req ? h5ark_value_get(c->req->header, "caller") : NULL;
    if (!m) return 0;
    const h5ark_value *role = h5ark_value_get(m, "role"), *name = h5ark_value_get(m, "user");
    const h5ark_value *groups = h5ark_value_get(m, "groups"), *q = h5ark_value_get(m, "quotas");
    caller_role r;
    bool ok = role && role->kind == H5ARK_STR && users_role_from_name(role->as.s.ptr, &r) == 0 &&
              groups && groups->kind == H5ARK_ARRAY && q && q->kind == H5ARK_MAP &&
              quota_of(q, "memory", &f->u.quota.memory) && quota_of(q, "disk", &f->u.quota.disk) &&
              quota_of(q, "objects", &f->u.quota.objects) &&
              quota_of(q, "requests", &f->u.quota.requests) && name &&
              (name->kind == H5ARK_NIL || name->kind == H5ARK_STR);
    size_t n = ok ? h5ark_value_len(groups) : 0;
    if (ok && n && !(f->groups = calloc(n, sizeof *f->groups)))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; ok && i < n; i++) {
        const h5ark_value *g = h5ark_value_at(groups, i);
        ok = g->kind == H5ARK_STR;
        f->groups[i] = ok ? g->as.s.ptr : NULL;
    }
    if (!ok) return h5ark_fail(err, H5ARK_INTERNAL, "the caller rank 0 forwarded is malformed");
    f->u.name = name->kind == H5ARK_STR ? name->as.s.ptr : NULL;
    f->u.groups = f->groups;
    f->u.ngroups = n;
    c->who.role = r;
    c->who.may_write = r >= ROLE_WRITE;
    c->who.user = f->u.name ? &f->u : NULL;
    return 0;
}

/* The request, once its caller is admitted (entry_run). */
static int admitted(entry_call *c, const users_table *users, h5ark_error *err) {
    if (c->check && c->check(c->door, err)) return -1;
    /* while a restore runs, only what says how it goes (its own parts are known) */
    if (!c->known && checkpoint_refuses(c->name, err)) return -1;
    uint64_t seq = c->forwarded_seq;
    if (ranks_serve_begin(c->ranks_name ? c->ranks_name : c->name, c->ranks, c->read_only,
                          forward_header, c, &seq, err))
        return -1;
    inflight_entry *flight = c->unlisted || !c->req ? NULL : inflight_begin(c->req, c->name);
    const caller *outer = current;
    current = &c->who;
    registry_scope names = registry_enter(c->who.user, c->who.role == ROLE_ADMIN);
    registry_enter_users(users);
    int rc = c->run(c->door, &c->who, err);
    registry_leave(names);
    current = outer;
    inflight_end(flight);
    if (ranks_serve_end(seq, &rc, err) || rc != 0) return -1;
    return 0;
}

int entry_run(entry_call *c, h5ark_error *err) {
    /* the table the request is admitted with stays until it ends, whatever a reload does:
     * the one it arrived with (entry_accept), else the one in force now */
    const entry_ticket *k = c->req ? c->req->ticket : NULL;
    users_table *table = NULL;
    forwarded_user fu = {0};
    bool counted = false;
    int rc = -1;
    if (c->known == &entry_forwarded) {
        if (forwarded_caller(c, &fu, err)) goto out;
    } else if (c->known) {
        c->who = *c->known;
    } else if (k && k->token >= 0 && c->token) {
        /* matched on arrival (entry_accept), from the same request's token */
        c->who = (caller){.token = k->token,
                          .may_write = k->role >= ROLE_WRITE,
                          .role = k->role,
                          .user = k->user};
        if (permit(c, &c->who, err)) goto out;
    } else {
        if (!k) table = users_acquire();
        if (identify(c, k ? k->table : table, &c->who, err) || permit(c, &c->who, err))
            goto out; /* before the check: a stranger learns nothing */
        if (!k && user_begin(c->who.user, err)) goto out;
        counted = !k && c->who.user;
    }
    rc = admitted(c, k ? k->table : table, err);
out:
    if (counted) users_request_end(c->who.user);
    users_release(table);
    free(fu.groups);
    return rc;
}

void entry_answered(const request *req, h5ark_code outcome, const reply *out) {
    const entry_ticket *k = req->ticket;
    metrics_answer a = {.header = req->header,
                        .arrived_ns = req->arrived_ns,
                        .bytes_in = req->bytes,
                        .bytes_out = out->header_len,
                        .user = k && k->user ? k->user->name : NULL,
                        .outcome = outcome};
    for (size_t i = 0; i < out->nspans; i++)
        a.bytes_out += out->spans[i].len;
    metrics_request_done(&a);
}
