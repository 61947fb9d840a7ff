/* What a command handler sees: the command table's entries (each family in commands/
 * defines one table), the request's arguments, checked against the command's declared
 * list before the handler runs, and the reply it builds. Below the dispatcher (dispatch.h),
 * which looks commands up across the tables and runs them. */
#ifndef H5ARK_COMMAND_H
#define H5ARK_COMMAND_H

#include "h5ark_frames.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"
#include "objects/object.h"
#include "request.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    ARG_STR,        /* string */
    ARG_BOOL,       /* true/false */
    ARG_INT,        /* integer fitting int64 */
    ARG_UINT,       /* non-negative integer */
    ARG_NUMBER,     /* integer or float */
    ARG_SCALAR,     /* integer, float or boolean */
    ARG_STR_ARRAY,  /* array of strings */
    ARG_UINT_ARRAY, /* array of non-negative integers */
    ARG_STR_ARRAYS, /* array of arrays of strings (awkward0 whitelist specs) */
    ARG_TEXT,       /* string, NUL bytes allowed (data, not a name) */
    ARG_ANY         /* any value: the handler checks it (setacl's entries) */
} arg_type;

typedef struct {
    const char *name;
    arg_type type;
    bool required;
} arg_spec;

typedef struct command_ctx command_ctx;
typedef int (*command_fn)(command_ctx *ctx, h5ark_error *err);

#define COMMAND_MAX_ARGS 16

typedef struct {
    const char *name;
    command_fn fn;
    arg_spec args[COMMAND_MAX_ARGS]; /* ends at the first entry with a NULL name */
    /* Answered on the router thread itself: only for commands that take constant time and
     * never wait on locales or files, where the hand-off to a handler thread would cost
     * more than the command. */
    bool immediate;
    /* Creates and changes nothing (no object, no file): allowed with a read token. */
    bool read_only;
    /* With users (the token file names them, users.h): only for the admin role. */
    bool admin_only;
    ranks_mode ranks;
    /* No client command: only run as forwarded by rank 0 for a front end's own collective
     * call (the HTTP gateway's reads); a client asking for it gets unknown_command. */
    bool internal;
} command_def;

/* One request being handled, and the reply it builds. */
struct command_ctx {
    const h5ark_value *args;          /* a map; every entry checked against the spec */
    const h5ark_buffer_list *buffers; /* the request's `buffers` */
    const h5ark_payload *payload;     /* the request's payload bytes */
    h5ark_value *result;              /* the reply's `result` map, filled by the handler */
    h5ark_value *warnings;            /* array of str */
    bool shutdown;                    /* set by `shutdown`: stop after this reply */
    /* reply buffers: names + sizes go in the header, bytes are sent zero-copy */
    h5ark_value *reply_buffers;
    h5ark_span *spans;
    size_t nspans, spans_cap;
    object **held; /* objects the spans point into, released after sending */
    size_t nheld, held_cap;
};

/* Typed argument reads. The spec has been checked, so these only return the default when
 * the argument is absent. */
bool arg_has(const command_ctx *ctx, const char *name);
const char *arg_str(const command_ctx *ctx, const char *name, const char *def);
bool arg_bool(const command_ctx *ctx, const char *name, bool def);
int64_t arg_int(const command_ctx *ctx, const char *name, int64_t def);
uint64_t arg_uint(const command_ctx *ctx, const char *name, uint64_t def);
double arg_number(const command_ctx *ctx, const char *name, double def);
const h5ark_value *arg_value(const command_ctx *ctx, const char *name);

/* Reply helpers. */
int reply_set(command_ctx *ctx, const char *key, h5ark_value *val, h5ark_error *err);
int reply_warn(command_ctx *ctx, h5ark_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add a logical reply buffer made of pieces of memory inside `owner` (which is held until
 * ZeroMQ has sent them). Call reply_buffer_begin, then reply_buffer_span for each piece. */
int reply_buffer_begin(command_ctx *ctx, const char *name, uint64_t nbytes, object *owner,
                       h5ark_error *err);
int reply_buffer_span(command_ctx *ctx, const void *ptr, uint64_t len, h5ark_error *err);
/* Keep `owner` alive until the reply has been sent (spans point into it). */
int reply_hold(command_ctx *ctx, object *owner, h5ark_error *err);

#endif
