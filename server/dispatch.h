/* The command table: dispatch looks a command up across the families' tables
 * (command.h: what a handler sees), decodes the native protocol's header and hands the
 * request to the entry (entry.h: the caller, the ranks, `status`, metrics), which has the
 * arguments checked against the command's declared list (unknown, missing or ill-typed
 * arguments are refused with bad_request before the handler runs) and calls the handler
 * with a command_ctx. */
#ifndef H5ARK_DISPATCH_H
#define H5ARK_DISPATCH_H

#include "command.h"
#include "h5ark_frames.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"
#include "request.h"

#include <stdbool.h>

/* True when the request can be answered on the router thread: an immediate command, or
 * a header so malformed that the answer is an error found without running anything. */
bool dispatch_is_immediate(const request *req);
/* The request has arrived (entry_accept, with its header's token); busy past the user's
 * quota.requests. */
int dispatch_accept(request *req, h5ark_error *err);
/* Handle one request completely; never fails (errors become error replies). */
void dispatch_handle(request *req, reply *out);
/* An error reply for a request that could not be handed to a handler (busy, too large). */
void dispatch_error_reply(const h5ark_value *header, h5ark_code code, const char *message,
                          reply *out);
void reply_free(reply *r);

/* One command of the table run from inside the daemon, for another front end (the
 * Arkouda dialect, arkouda/): `args` are checked against the command's list as a
 * request's are; `buffers` (NULL: none) describes req's payload. It runs as a part of the
 * request this thread is running, for the caller the entry admitted for it (entry.h:
 * entry_caller). On success `out` holds the result map, the warnings
 * and the reply's bytes (spans, kept alive by `hold` until dispatch_result_free).
 * At several ranks, called on rank 0 alone it runs as a request of its own: one that runs
 * everywhere is forwarded (its name, args and buffers) to the other ranks, as a client's
 * would be. Called by a command that every rank is running (inside its call), it runs
 * within that call on every rank, and the ranks agree on its outcome; only a command that
 * runs everywhere may be called so (internal error otherwise). */
typedef struct {
    h5ark_value *result;
    h5ark_value *warnings;
    h5ark_value *buffers; /* [{"name", "nbytes"}...]: how the spans divide */
    h5ark_span *spans;
    size_t nspans;
    h5ark_hold *hold;
} dispatch_result;
int dispatch_call(const request *req, const char *name, const h5ark_value *args,
                  const h5ark_value *buffers, dispatch_result *out, h5ark_error *err);
void dispatch_result_free(dispatch_result *r);
/* The names of the command table, i from 0 until it returns NULL. */
const char *dispatch_command_name(size_t i);
/* Ranks > 0: run a request rank 0 forwarded (header bytes as rank 0 encoded them); the
 * reply is rank 0's to send, so only its status matters here. */
void dispatch_forwarded(uint64_t seq, const void *header, size_t len);

#endif
