/* Arkouda's envelope and replies (protocol/PROTOCOL.md, "The Arkouda endpoint"): a request is one
 * JSON object {user, token, cmd, format, args, size} whose `args` is a JSON string holding
 * a list of JSON strings, each {"key", "dtype", "val"} with `val` always a string (the
 * `dtype` fields are untidy and ignored). A binary request ends its JSON with the literal
 * BINARY_PAYLOAD and carries its bytes in the next frame. A reply is {msg, msgType,
 * msgFormat, user}. Also the `created ...` text by which the client learns of objects. */
#ifndef H5ARK_AK_CODEC_H
#define H5ARK_AK_CODEC_H

#include "h5ark_wire.h"
#include "objects/object.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define AK_MAX_PARAMS 4
#define AK_MAX_ARGS   64 /* far more than any command takes */

typedef struct {
    char *cmd;  /* as sent, e.g. "arange<int64,1>" */
    char *base; /* the name before any template, e.g. "arange" */
    char params[AK_MAX_PARAMS][32];
    int nparams; /* template parameters, e.g. "int64", "1" */
    char *user;  /* "" when the request had none */
    char *token; /* NULL when the request had none (or an empty one) */
    size_t token_len;
    bool binary;  /* format BINARY */
    json_t *args; /* key -> val (a JSON string) */
} ak_request;

/* Parse one request frame; bad_request naming what is wrong. `user` is set as soon as it
 * is known, so that even a failed parse can be answered to it. */
int ak_request_parse(const char *text, size_t len, ak_request *out, h5ark_error *err);
void ak_request_free(ak_request *r);

/* Typed reads of argument `key`; all fail with bad_request naming the argument when it is
 * missing or not of the type. */
const char *ak_arg(const ak_request *r, const char *key); /* NULL when absent */
int ak_arg_str(const ak_request *r, const char *key, const char **out, h5ark_error *err);
/* A string argument that is data (it may hold NULs): its bytes and length. */
int ak_arg_bytes(const ak_request *r, const char *key, const char **out, size_t *len,
                 h5ark_error *err);
int ak_arg_int(const ak_request *r, const char *key, int64_t *out, h5ark_error *err);
int ak_arg_uint(const ak_request *r, const char *key, uint64_t *out, h5ark_error *err);
int ak_arg_double(const ak_request *r, const char *key, double *out, h5ark_error *err);
int ak_arg_bool(const ak_request *r, const char *key, bool *out, h5ark_error *err);
/* A list argument (JSON text of a list of strings): a new reference, or NULL. */
json_t *ak_arg_list(const ak_request *r, const char *key, h5ark_error *err);

/* Strict number parsing of a whole string. */
bool ak_parse_int(const char *s, int64_t *out);
bool ak_parse_uint(const char *s, uint64_t *out);
bool ak_parse_double(const char *s, double *out);

/* A reply frame: malloc'd JSON text, *len set; NULL when out of memory. */
char *ak_reply_json(const char *msg, const char *msg_type, const char *user, size_t *len);

/* Arkouda's name for a dtype ("int64", "float64", "bool", "str", ...). */
const char *ak_dtype_name(h5ark_dtype dtype);
/* "created <name> <dtype> <size> <ndim> [<shape>] <itemsize>", for strings followed by
 * "+created bytes.size <n>". malloc'd; NULL when out of memory. */
char *ak_created(const object *obj);
char *ak_created_as(const object *obj, const char *name); /* under the name the client gave */
/* The item size Arkouda's server gives an array of obj's dtype (a bigint's: 16). */
size_t ak_itemsize(const object *obj);

#endif
