/* Payload frames (see h5ark_frames.h). */
#include "h5ark_frames.h"

#include <stdlib.h>
#include <string.h>

int h5ark_buffer_list_parse(const h5ark_value *buffers, h5ark_buffer_list *out, h5ark_error *err) {
    memset(out, 0, sizeof *out);
    if (!buffers || buffers->kind == H5ARK_NIL) return 0;
    if (buffers->kind != H5ARK_ARRAY)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "header field 'buffers' must be an array, got %s",
                          h5ark_value_kind_name(buffers->kind));
    size_t n = h5ark_value_len(buffers);
    out->items = calloc(n ? n : 1, sizeof *out->items);
    if (!out->items) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const h5ark_value *b = h5ark_value_at(buffers, i);
        const h5ark_value *name = h5ark_value_get(b, "name");
        const h5ark_value *nbytes = h5ark_value_get(b, "nbytes");
        uint64_t nb;
        if (!b || b->kind != H5ARK_MAP || !name || name->kind != H5ARK_STR || !nbytes ||
            !h5ark_value_to_uint64(nbytes, &nb) || h5ark_value_len(b) != 2) {
            h5ark_buffer_list_free(out);
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "header field 'buffers[%zu]' must be a map "
                              "{\"name\": str, \"nbytes\": uint} and nothing else",
                              i);
        }
        if (nb > UINT64_MAX - out->total) {
            h5ark_buffer_list_free(out);
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "buffer sizes overflow 64 bits");
        }
        out->items[i].name = strdup(name->as.s.ptr);
        if (!out->items[i].name) {
            h5ark_buffer_list_free(out);
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        out->items[i].nbytes = nb;
        out->items[i].offset = out->total;
        out->total += nb;
        out->count = i + 1;
    }
    return 0;
}

void h5ark_buffer_list_free(h5ark_buffer_list *list) {
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i].name);
    free(list->items);
    memset(list, 0, sizeof *list);
}

const h5ark_buffer *h5ark_buffer_list_find(const h5ark_buffer_list *list, const char *name) {
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0) return &list->items[i];
    return NULL;
}

void h5ark_payload_init(h5ark_payload *p) {
    memset(p, 0, sizeof *p);
}

int h5ark_payload_append(h5ark_payload *p, zmq_msg_t *msg) {
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        zmq_msg_t *frames = realloc(p->frames, cap * sizeof *frames);
        if (!frames) return -1;
        p->frames = frames;
        uint64_t *starts = realloc(p->starts, cap * sizeof *starts);
        if (!starts) return -1;
        p->starts = starts;
        p->cap = cap;
    }
    zmq_msg_init(&p->frames[p->count]);
    zmq_msg_move(&p->frames[p->count], msg);
    p->starts[p->count] = p->total;
    p->total += zmq_msg_size(&p->frames[p->count]);
    p->count++;
    return 0;
}

void h5ark_payload_free(h5ark_payload *p) {
    for (size_t i = 0; i < p->count; i++)
        zmq_msg_close(&p->frames[i]);
    free(p->frames);
    free(p->starts);
    memset(p, 0, sizeof *p);
}

int h5ark_payload_copy(const h5ark_payload *p, uint64_t offset, void *dst, uint64_t n) {
    if (offset > p->total || n > p->total - offset) return -1;
    if (n == 0) return 0;
    /* binary search for the frame holding `offset` */
    size_t lo = 0, hi = p->count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->starts[mid] <= offset)
            lo = mid;
        else
            hi = mid;
    }
    char *out = dst;
    for (size_t i = lo; n > 0 && i < p->count; i++) {
        uint64_t fsize = zmq_msg_size((zmq_msg_t *)&p->frames[i]);
        uint64_t skip = offset > p->starts[i] ? offset - p->starts[i] : 0;
        if (skip >= fsize) continue;
        uint64_t take = fsize - skip < n ? fsize - skip : n;
        memcpy(out, (const char *)zmq_msg_data((zmq_msg_t *)&p->frames[i]) + skip, take);
        out += take;
        n -= take;
    }
    return n == 0 ? 0 : -1;
}

h5ark_hold *h5ark_hold_new(void (*release)(void *arg), void *arg) {
    h5ark_hold *h = malloc(sizeof *h);
    if (!h) return NULL;
    atomic_init(&h->refs, 1);
    h->release = release;
    h->arg = arg;
    return h;
}

void h5ark_hold_drop(h5ark_hold *hold) {
    if (!hold) return;
    if (atomic_fetch_sub(&hold->refs, 1) == 1) {
        if (hold->release) hold->release(hold->arg);
        free(hold);
    }
}

static void frame_free(void *data, void *hint) {
    (void)data;
    h5ark_hold_drop(hint);
}

int h5ark_send_spans(void *socket, const h5ark_span *spans, size_t count, h5ark_hold *hold,
                     bool more) {
    /* find the last non-empty frame so its flags can drop ZMQ_SNDMORE */
    size_t last = count;
    for (size_t i = count; i > 0; i--)
        if (spans[i - 1].len) {
            last = i - 1;
            break;
        }
    for (size_t i = 0; i < count; i++) {
        const char *p = spans[i].ptr;
        uint64_t left = spans[i].len;
        while (left > 0) {
            size_t n = left > H5ARK_FRAME_BYTES ? H5ARK_FRAME_BYTES : (size_t)left;
            bool final = (i == last && n == left);
            zmq_msg_t msg;
            atomic_fetch_add(&hold->refs, 1);
            if (zmq_msg_init_data(&msg, (void *)p, n, frame_free, hold) != 0) {
                atomic_fetch_sub(&hold->refs, 1);
                return -1;
            }
            if (zmq_msg_send(&msg, socket, (final && !more) ? 0 : ZMQ_SNDMORE) < 0) {
                zmq_msg_close(&msg);
                return -1;
            }
            p += n;
            left -= n;
        }
    }
    return 0;
}

int h5ark_send_whole(void *socket, const void *ptr, uint64_t len, h5ark_hold *hold) {
    /* ZeroMQ never calls the free function of an empty message */
    if (len == 0) return zmq_send(socket, "", 0, 0) < 0 ? -1 : 0;
    zmq_msg_t msg;
    atomic_fetch_add(&hold->refs, 1);
    if (zmq_msg_init_data(&msg, (void *)ptr, (size_t)len, frame_free, hold) != 0) {
        atomic_fetch_sub(&hold->refs, 1);
        return -1;
    }
    if (zmq_msg_send(&msg, socket, 0) < 0) {
        zmq_msg_close(&msg);
        return -1;
    }
    return 0;
}
