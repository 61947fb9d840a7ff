/* The answers the HTTP doors give (see http_reply.h). */
#include "front/http_reply.h"

#include "h5ark_value.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

static int status_of(h5ark_code code) {
    switch (code) {
    case H5ARK_BAD_REQUEST: return 400;
    case H5ARK_UNAUTHORIZED: return 401;
    case H5ARK_FORBIDDEN: return 403;
    case H5ARK_NOT_FOUND: return 404;
    case H5ARK_RESOURCE_LIMIT: return 413;
    case H5ARK_TYPE_ERROR:
    case H5ARK_SCHEMA_ERROR: return 422;
    case H5ARK_UNKNOWN_COMMAND: return 501; /* not at several ranks yet */
    case H5ARK_BUSY: return 503;
    default: return 500;
    }
}

/* A JSON string from bytes a file or a client supplied: ill-formed UTF-8 becomes '?' (as
 * in every reply of the daemon) so that the JSON stays valid. */
json_t *http_json_str(const char *s, size_t n) {
    h5ark_value *v = h5ark_value_strn(s, n);
    json_t *j = v ? json_stringn(v->as.s.ptr, v->as.s.len) : NULL;
    h5ark_value_destroy(&v);
    return j;
}

/* h5grove's error body: {"message": "..."}, with the status the error code maps to. Small:
 * the one body not counted against --max-memory. */
void http_reply_error(http_response *out, const h5ark_error *err) {
    json_t *j = json_object();
    if (j) json_object_set_new(j, "message", http_json_str(err->message, strlen(err->message)));
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    out->status = status_of(err->code);
    out->content_type = "application/json";
    out->body = text;
    out->len = text ? strlen(text) : 0;
}

/* The answer's body, whose `held` bytes are already counted against --max-memory; they stay
 * counted until the body is sent (http.h). Several connections are answered at once: the
 * answers waiting to go out are memory like any other. */
void http_reply_held(http_response *out, int status, const char *type, char *body, size_t len,
                     uint64_t held) {
    out->status = status;
    out->content_type = type;
    out->body = body;
    out->len = len;
    out->release = registry_unreserve;
    out->held = held;
}

/* The same, counting the body now: resource_limit (413) when it would pass the limit. */
void http_reply_body(http_response *out, int status, const char *type, char *body, size_t len) {
    h5ark_error err = {0};
    if (registry_reserve(len, &err)) {
        free(body);
        http_reply_error(out, &err);
        return;
    }
    http_reply_held(out, status, type, body, len, len);
}

/* Takes j. */
void http_reply_json(http_response *out, json_t *j) {
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (text) http_reply_body(out, 200, "application/json", text, strlen(text));
}
