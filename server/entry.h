/* The one entry of every request, whatever door it came in by.
 *
 * A door (front/router.c's native protocol, front/arkouda/'s dialect, front/gateway.c's
 * HTTP API) only speaks its wire format: it decodes a request, fills an entry_call and
 * calls entry_run, then encodes the reply and hands it to entry_answered. The entry does,
 * in this order, what every request needs:
 *   1. who the caller is (today the token and its role, read or write) and whether they
 *      may ask for what they ask;
 *   2. the door's own checks of what it decoded (call->check), only once the caller is
 *      known, so that a stranger learns nothing, not even which commands exist;
 *   3. opening the request on every rank (at several ranks: waiting its turn, forwarding
 *      call->forward's header to the other ranks when it runs on all of them), and
 *      listing it in flight for `status`, with the progress its work reports;
 *   4. the work (call->run), told who the caller is;
 *   5. unlisting it, and every rank agreeing on its outcome (the lowest failing rank's
 *      error wins);
 * and entry_answered counts the answered request in the metrics and writes its log line.
 *
 * A new door (an HSDS endpoint, say) does the same and nothing more:
 *
 *     hsds_state s = {...decoded from the HTTP request...};
 *     entry_call c = {.req = &req,             // listed in `status`, counted; NULL: neither
 *                     .name = "lshdf",         // what it asks, for errors and `status`
 *                     .read_only = true,       // a read token may ask it
 *                     .ranks = RANKS_ZERO,     // where it runs at several ranks
 *                     .token = bearer, .token_len = strlen(bearer),
 *                     .run = hsds_list, .door = &s};
 *     int rc = entry_run(&c, &err);
 *     ...encode s's answer, or err, as HSDS's JSON into `out`...
 *     entry_answered(&req, rc ? err.code : H5ARK_OK, &out);
 *
 * Users (users.h) are in `caller` and in entry.c's admission: every door has them
 * without a change. A door that queues requests before they run (the router) calls
 * entry_accept when one arrives and entry_done once it is answered, so that a user's
 * requests count as in flight from their arrival (quota.requests) and the request keeps
 * the token table in force when it arrived. */
#ifndef H5ARK_ENTRY_H
#define H5ARK_ENTRY_H

#include "request.h"
#include "users.h"

#include <stdbool.h>
#include <stddef.h>

/* Who sent a request and what they may do. */
typedef struct caller {
    int token;      /* which of --token-file's tokens it gave; -1: none was asked for */
    bool may_write; /* may create and change objects and files (else only read) */
    caller_role role;
    /* who the token names; NULL: the token file names no users. It lives as long as the
     * request (the token table it was admitted with). */
    const user *user;
} caller;

/* Every right: a request rank 0 forwarded (rank 0 admitted its caller). The entry then
 * takes the caller rank 0 forwarded with the request's header (its role and user). */
extern const caller entry_forwarded;

typedef struct entry_call {
    /* The request as it came: listed in `status` while it runs (its id, client, peer), and
     * the header forwarded when `forward` is NULL. NULL: a door that lists nothing (the
     * gateway). */
    const request *req;
    /* What is asked, as errors and `status` name it: a command; NULL when the door knows
     * no such thing (its check then refuses it, once the caller is known). */
    const char *name;
    /* How errors about ranks name it (NULL: as `name`). */
    const char *ranks_name;
    bool read_only;   /* creates and changes nothing: a caller that may only read may ask */
    bool admin_only;  /* with users (users.h), only a caller with the admin role may ask */
    ranks_mode ranks; /* where it runs at several ranks (request.h) */
    bool unlisted;    /* answered at once on the router thread: no in-flight entry */

    /* The caller's credentials as given (NULL: none), and how this door's clients give
     * one, added to the error when a token is needed and none came (NULL: nothing). */
    const char *token;
    size_t token_len;
    const char *token_hint;
    /* The caller when already known: rank 0 admitted it (entry_forwarded), or this is a
     * part of a request that entry_run admitted (entry_caller()). Neither identified nor
     * checked again: it was admitted for the whole request. */
    const caller *known;
    uint64_t forwarded_seq; /* ranks > 0: rank 0's number for the request */

    /* The door's steps. check (NULL: none) refuses what it decoded wrongly; forward
     * (NULL: req->header) makes the header the other ranks run, only when one is sent;
     * run does the work. */
    int (*check)(void *door, h5ark_error *err);
    h5ark_value *(*forward)(void *door);
    int (*run)(void *door, const caller *who, h5ark_error *err);
    void *door;

    caller who; /* filled by entry_run: who the caller is */
} entry_call;

/* Everything a request needs but its wire format (above). 0, or -1 with err; err comes
 * from the admission, the check, the ranks or the run, whichever refused first. */
int entry_run(entry_call *call, h5ark_error *err);

/* A request has arrived at a door that queues it (before entry_run): the token table in
 * force is kept for it and its user's requests in flight count it, until entry_done. -1
 * with `busy` when the user has quota.requests in flight already (entry_done is still
 * called). A token that is not valid counts for no one (entry_run refuses it). */
int entry_accept(request *req, const char *token, size_t token_len, h5ark_error *err);
void entry_done(request *req);

/* A user's record as `whoami` and the other ranks see it: {"user", "groups", "quotas":
 * {"memory", "disk", "objects", "requests"}}, nil where unset (and for NULL: users off);
 * NULL when out of memory. */
h5ark_value *entry_user_value(const user *u);

/* The caller of the request this thread is running (inside call->run); NULL outside one. */
const caller *entry_caller(void);

/* The request has been answered with `out` (outcome: H5ARK_OK or the error code it
 * carries): counted by command and outcome with its latency and bytes, and at
 * --log-level info written as one line (docs/OPERATIONS.md). */
void entry_answered(const request *req, h5ark_code outcome, const reply *out);

#endif
