/* Payload frames: sending buffers as ~1 MiB zero-copy ZeroMQ frames, and reading the
 * logical buffers back out of however the sender split them. Shared by daemon and client. */
#ifndef H5ARK_FRAMES_H
#define H5ARK_FRAMES_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdatomic.h>
#include <zmq.h>

/* One logical buffer as listed in a header's `buffers`. */
typedef struct {
    char *name;
    uint64_t nbytes;
    uint64_t offset; /* where it starts in the concatenated payload */
} h5ark_buffer;

typedef struct {
    h5ark_buffer *items;
    size_t count;
    uint64_t total;
} h5ark_buffer_list;

/* Parse a header's `buffers` array (NULL = none). bad_request on any ill-formed entry. */
int h5ark_buffer_list_parse(const h5ark_value *buffers, h5ark_buffer_list *out, h5ark_error *err);
void h5ark_buffer_list_free(h5ark_buffer_list *list);
const h5ark_buffer *h5ark_buffer_list_find(const h5ark_buffer_list *list, const char *name);

/* The payload frames of a received message, read as one byte stream. */
typedef struct {
    zmq_msg_t *frames;
    uint64_t *starts; /* byte offset of each frame in the stream */
    size_t count, cap;
    uint64_t total;
} h5ark_payload;

void h5ark_payload_init(h5ark_payload *p);
/* Takes ownership of msg's content (msg is left empty). */
int h5ark_payload_append(h5ark_payload *p, zmq_msg_t *msg);
void h5ark_payload_free(h5ark_payload *p);
/* Copy n bytes starting at stream offset `offset`; safe from several threads at once. */
int h5ark_payload_copy(const h5ark_payload *p, uint64_t offset, void *dst, uint64_t n);

/* Keeps memory alive while ZeroMQ still holds zero-copy frames pointing into it: each
 * frame holds one reference, the sender one more; `release(arg)` runs after the last. */
typedef struct h5ark_hold {
    atomic_size_t refs;
    void (*release)(void *arg);
    void *arg;
} h5ark_hold;

h5ark_hold *h5ark_hold_new(void (*release)(void *arg), void *arg);
void h5ark_hold_drop(h5ark_hold *hold);

/* A piece of memory to send; spans are sent back to back, split into frames of at most
 * H5ARK_FRAME_BYTES. */
typedef struct {
    const void *ptr;
    uint64_t len;
} h5ark_span;

/* Send the spans as frames without copying (each frame references `hold`, which must stay
 * referenced by the caller until this returns). `more` = another frame follows the last. */
int h5ark_send_spans(void *socket, const h5ark_span *spans, size_t count, h5ark_hold *hold,
                     bool more);
/* Send len bytes at ptr as one frame without copying, however long (for peers that read
 * exactly one frame); hold as for h5ark_send_spans. */
int h5ark_send_whole(void *socket, const void *ptr, uint64_t len, h5ark_hold *hold);

#endif
