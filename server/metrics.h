/* What the daemon counts, the Prometheus endpoint that shows it (--metrics-endpoint) and
 * the per-request log lines (docs/OPERATIONS.md). The request path adds to a few relaxed
 * atomics and takes no lock; a scrape reads them all, and the gauges (memory, objects)
 * from where they are kept. Any module may count its events here: this header needs
 * nothing above it. */
#ifndef H5ARK_METRICS_H
#define H5ARK_METRICS_H

#include "h5ark_wire.h"

#include <stdint.h>

struct request;
struct reply;

/* Serve GET /metrics on `address` ("[HOST:]PORT", the host defaulting to 127.0.0.1), and
 * count from now on. NULL: no endpoint, nothing counted (the request log lines still
 * are written at info). io_error when the address cannot be bound. */
int metrics_start(const char *address, h5ark_error *err);
void metrics_stop(void);
/* The address served, "HOST:PORT" (the port chosen when 0 was asked for), or NULL. */
const char *metrics_address(void);

uint64_t metrics_clock(void); /* monotonic nanoseconds, for a request's arrival */

/* A request is answered (entry_answered, entry.h, calls this for every door): `outcome` is
 * H5ARK_OK or the error code of its reply `out`; `user` the user who sent it (NULL: none
 * known, or users off).
 * Counted by command and outcome with its latency (from req->arrived_ns) and bytes, and
 * at --log-level info written as one log line. */
void metrics_request_done(const struct request *req, const char *user, h5ark_code outcome,
                          const struct reply *out);

/* h5ark_user_requests_total: the label slot of a user name (asked once per user: the first
 * METRICS_USERS names each have their own, every later one shares "other"), and a request
 * of that slot's user (-1: none). */
#define METRICS_USERS 100
int metrics_user_slot(const char *user);
void metrics_user_request(int slot);

void metrics_files_read(uint64_t n);    /* files whose objects a readhdf read */
void metrics_files_written(uint64_t n); /* files replaced or swapped in by a write */
void metrics_probe_restarted(void);     /* a file probe died or hung and was replaced */

#endif
