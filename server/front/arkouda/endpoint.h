/* The Arkouda front end (`--arkouda-endpoint`): Arkouda's own wire dialect
 * (protocol/PROTOCOL.md, "The Arkouda endpoint") over the same handler threads, registry and
 * storage as the native protocol. The router reads a request's first frame into request.text and
 * its binary bytes into the payload; arkouda_handle runs it on a handler thread. */
#ifndef H5ARK_AK_ENDPOINT_H
#define H5ARK_AK_ENDPOINT_H

#include "dispatch.h"

/* The request has arrived (entry_accept, with its access_token); busy past the user's
 * quota.requests. */
int arkouda_accept(request *req, h5ark_error *err);
/* True when the request is one to answer on the router thread: a constant-time session
 * command (or a request too broken to parse, answered at once). */
bool arkouda_is_immediate(const request *req);
/* Handle one request completely; never fails (errors become Arkouda error replies). */
void arkouda_handle(request *req, reply *out);
/* The error reply for a request that could not be handed to a handler. */
void arkouda_error_reply(const request *req, const char *message, reply *out);
/* The internal native command `arkouda_run` that runs a RANKS_EVERY Arkouda command on
 * the other ranks, as rank 0 forwards it (dispatch's table). */
extern const command_def ak_internal_commands[];
/* The endpoint as bound (for `connect`'s reply and the start-up line). */
void arkouda_set_endpoint(const char *endpoint);
const char *arkouda_endpoint(void);

#endif
