/* The ZeroMQ front end and the handler threads. The router thread is the only one that
 * touches the ROUTER socket: it reads requests, queues them for the handler threads, and
 * forwards their replies (which arrive over an inproc socket) to the clients. */
#ifndef H5ARK_ROUTER_H
#define H5ARK_ROUTER_H

#include "h5ark_wire.h"

/* Bind, serve until SIGINT/SIGTERM or `shutdown`, finish in-flight requests, return.
 * Returns 0 on a clean stop, -1 (with err) when the endpoint cannot be bound. */
int router_run(void *zmq_context, h5ark_error *err);

#endif
