/* What the daemon counts, the Prometheus endpoint that shows it (--metrics-endpoint) and
 * the per-request log lines (docs/OPERATIONS.md). The request path adds to a few relaxed
 * atomics and takes no lock; a scrape reads them all, and the gauges (memory, objects)
 * from where they are kept. Any module may count its events here: this header needs
 * nothing above it. */
#ifndef H5ARK_METRICS_H
#define H5ARK_METRICS_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdint.h>

/* Serve GET /metrics on `address` ("[HOST:]PORT", the host defaulting to 127.0.0.1), and
 * count from now on. NULL: no endpoint, nothing counted (the request log lines still
 * are written at info). `names` (up to a NULL) are what requests are counted under: the
 * command table's and the HTTP doors' routes, given by the daemon's start, as this low
 * unit knows no door; at most METRICS_NAMES of them, and a request of any other name
 * counts as "other". io_error when the address cannot be bound. */
#define METRICS_NAMES 254
int metrics_start(const char *address, const char *const *names, h5ark_error *err);
void metrics_stop(void);
/* The address served, "HOST:PORT" (the port chosen when 0 was asked for), or NULL. */
const char *metrics_address(void);

uint64_t metrics_clock(void); /* monotonic nanoseconds, for a request's arrival */

/* An answered request, as it is counted and logged. */
typedef struct {
    const h5ark_value *header; /* its decoded header (its cmd and id), or NULL */
    uint64_t arrived_ns;       /* metrics_clock() at its arrival; 0: not known */
    uint64_t bytes_in;         /* its header and payload as received */
    uint64_t bytes_out;        /* its reply's header and payload */
    const char *user;          /* who sent it; NULL: none known, or users off */
    h5ark_code outcome;        /* H5ARK_OK or the error code of its reply */
} metrics_answer;

/* A request is answered (entry_answered, entry.h, calls this for every door): counted by
 * command and outcome with its latency and bytes, and at --log-level info written as one
 * log line. */
void metrics_request_done(const metrics_answer *a);

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
