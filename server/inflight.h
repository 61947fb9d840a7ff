/* The requests in flight: one entry per request a handler thread is running, for the
 * `status` command. Entries are claimed with an atomic and filled under a lock of their own
 * that only begin, end and status take; the work itself reports through the entry's
 * progress sink (progress.h), which needs no lock. Requests answered on the router thread
 * (ping, getconfig, status itself) take no entry: they end before anyone could see them. */
#ifndef H5ARK_INFLIGHT_H
#define H5ARK_INFLIGHT_H

#include "request.h"

/* At most one request per handler thread runs at once, and --handlers is at most this. */
#define INFLIGHT_MAX 256

typedef struct inflight_entry inflight_entry;

/* List the request (its header, and the client it came from) as running `cmd`, and make
 * its progress sink this thread's until inflight_end. NULL when no entry is free: the
 * request then runs unlisted. */
inflight_entry *inflight_begin(const request *req, const char *cmd);
/* The request has finished (e may be NULL). */
void inflight_end(inflight_entry *e);

/* Append to `list` one map per request in flight, oldest first: seq, id, cmd, client,
 * peer, started, elapsed, done, total, unit (PROTOCOL.md, `status`); with `client`, only
 * that client's. -1 when out of memory. */
int inflight_list(h5ark_value *list, const char *client);

#endif
