/* A request as a door hands it over, the reply it gets, and where it runs at several
 * ranks: what every layer that handles requests shares (the doors, dispatch.h's command
 * table, entry.h, inflight.h), below all of them. */
#ifndef H5ARK_REQUEST_H
#define H5ARK_REQUEST_H

#include "h5ark_frames.h"
#include "h5ark_value.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a command runs when the daemon is several ranks (ranks.h). */
typedef enum {
    RANKS_NOT_YET = 0, /* not converted: refused at R > 1 with a clear error */
    RANKS_ZERO,        /* on rank 0 alone (reads only what rank 0 holds: metadata, files) */
    RANKS_EVERY        /* on every rank, each on its own shards (SPMD) */
} ranks_mode;

/* A request as the router hands it over. */
typedef struct request {
    h5ark_value *header; /* decoded map, or NULL when the header could not be decoded */
    const char *decode_error;
    h5ark_payload payload;
    uint64_t bytes;      /* header and payload frames as received, for metrics */
    uint64_t arrived_ns; /* metrics_clock() when the router had it whole */
    /* Ranks > 0: the request number rank 0 forwarded it under (token and payload were
     * checked on rank 0; bulk bytes come through ranks.h). 0 on rank 0. */
    uint64_t forwarded_seq;
    /* Made by the daemon itself (a checkpoint's timer, its restore at start): run with
     * every right and no token, as a forwarded one is; internal commands allowed. */
    bool from_daemon;
    /* Who sent it, for `status`: the client's routing identity, and its address when
     * ZeroMQ gives one (tcp, ipc); NULL when unknown. Owned by the router. */
    const unsigned char *identity;
    size_t identity_len;
    const char *peer;
    /* A front end whose headers are not MessagePack (arkouda/): the first frame as it
     * came, NUL-terminated, and header is NULL. Owned by the router. */
    char *text;
    size_t text_len;
    struct entry_ticket *ticket; /* entry_accept's (entry.h); NULL: none */
} request;

/* A reply ready to send: the header's bytes and the payload spans (see h5ark_frames.h). */
typedef struct reply {
    char *header;
    size_t header_len;
    h5ark_span *spans;
    size_t nspans;
    h5ark_hold *hold; /* keeps the objects behind the spans alive; NULL when none */
    bool shutdown;
    /* The reply is spans[0] alone, sent as one frame with no header (Arkouda's binary
     * replies, which its client reads as one bare frame). */
    bool one_frame;
} reply;

#endif
