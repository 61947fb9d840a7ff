/* The answers the HTTP doors give (the gateway's h5grove routes, the HSDS endpoint): a
 * body counted against --max-memory until it is sent, a JSON body, and h5grove's error
 * body. Below every door that uses it: it knows HTTP responses (http.h) and the memory
 * budget (registry.h), and nothing of what is served. */
#ifndef H5ARK_HTTP_REPLY_H
#define H5ARK_HTTP_REPLY_H

#include "front/http.h"
#include "h5ark_wire.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* A JSON string from bytes a file or a client supplied: ill-formed UTF-8 becomes '?'. */
json_t *http_json_str(const char *s, size_t n);
/* h5grove's error body, {"message": "..."}, with the status the error code maps to. */
void http_reply_error(http_response *out, const h5ark_error *err);
/* A body whose `held` bytes are already counted against --max-memory (http.h). */
void http_reply_held(http_response *out, int status, const char *type, char *body, size_t len,
                     uint64_t held);
/* The same, counting it now: resource_limit (413) when it would pass the limit. */
void http_reply_body(http_response *out, int status, const char *type, char *body, size_t len);
/* A JSON body (takes j). */
void http_reply_json(http_response *out, json_t *j);

#endif
