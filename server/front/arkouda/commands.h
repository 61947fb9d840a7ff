/* The Arkouda dialect's command table. Each file of arkouda/ defines one family, a table
 * ending with an entry whose name is NULL; ak_command_find looks a command's base name
 * (the part before any `<...>` template) up across all of them. To add a command, add a
 * handler and a line to its family's table. */
#ifndef H5ARK_AK_COMMANDS_H
#define H5ARK_AK_COMMANDS_H

#include "front/arkouda/codec.h"
#include "dispatch.h"

#include <limits.h>

/* One request being handled, and its reply. */
typedef struct {
    const request *req;   /* the raw request: its payload, for binary uploads */
    const ak_request *in; /* the parsed envelope and arguments */
    /* a JSON reply: the msg text (malloc'd), NORMAL or WARNING */
    char *msg;
    bool warning;
    /* a binary reply (AK_BINARY_OUT): one frame of nbytes at bytes, kept alive by hold */
    const void *bytes;
    uint64_t nbytes;
    h5ark_hold *hold;
} ak_ctx;

typedef int (*ak_fn)(ak_ctx *ctx, h5ark_error *err);

enum {
    AK_READ_ONLY = 1,  /* creates and changes nothing: allowed with a read token */
    AK_BINARY_IN = 2,  /* format BINARY, its bytes in a second frame */
    AK_BINARY_OUT = 4, /* answers one raw frame, errors as a raw "Error: ..." frame */
    /* constant time, no locale or file: answered on the router thread (as native ping) */
    AK_IMMEDIATE = 8,
};

/* Where a command runs when the daemon is several ranks (ranks_mode, as the native
 * table's `.ranks`): RANKS_ZERO on rank 0, its objects' data reached only through native
 * calls (forwarded as native requests of their own); RANKS_EVERY forwarded whole to every
 * rank, each running the handler on its own shards; RANKS_NOT_YET (left out) refused. */
typedef struct {
    const char *name;
    ak_fn fn;
    unsigned flags;
    ranks_mode ranks;
    /* where this request runs when it depends on the template (NULL: `ranks`) */
    ranks_mode (*ranks_of)(const ak_request *in);
} ak_command;

extern const ak_command ak_session_commands[];  /* connect getconfig note delete info ... */
extern const ak_command ak_transfer_commands[]; /* array tondarray arraySegString ... */
extern const ak_command ak_hdf_commands[];      /* tohdf readAllHdf lsany getfiletype ... */
extern const ak_command ak_compute_commands[];  /* arange randint cast binop reductions ... */
extern const ak_command ak_select_commands[];   /* [int] [slice] [pdarray] concatenate ... */
extern const ak_command ak_group_commands[];    /* unique gbbroadcast segmentedReduction */
extern const ak_command ak_strings_commands[];  /* randomStrings segmented* concatenateStr */
extern const ak_command ak_bigint_commands[];   /* get_max_bits set_max_bits */
extern const ak_command ak_ckpt_commands[];     /* save_checkpoint load_checkpoint */
extern const ak_command ak_registry_commands[]; /* register attach list_registry unregister */

/* The last template parameter, the rank: only 1-d arrays here (bad_request). */
int ak_check_rank(ak_ctx *ctx, h5ark_error *err);
/* What the native `info` says of the object named by argument `key`. */
typedef struct {
    const char *name; /* the argument's text */
    h5ark_dtype dtype;
    uint64_t size;
    int64_t max_bits;
} ak_array;
/* The object named by argument `key` (ak_describe), of objtype `want` (any when
 * H5ARK_OBJTYPE_COUNT): bad_request naming the argument and the objtype it has otherwise. */
int ak_object_arg(ak_ctx *ctx, const char *key, h5ark_objtype want, ak_array *out,
                  h5ark_error *err);
/* The pdarray named by argument `key`, numeric or bool unless `any_dtype` (then a bigint
 * too); Arkouda's errors for a missing argument or object, another objtype or dtype. */
int ak_array_arg(ak_ctx *ctx, const char *key, bool any_dtype, ak_array *out, h5ark_error *err);
/* arange<bigint,1> {start, stop, step}: compute.c's arange hands bigint to bigints.c. */
int ak_bigint_arange(ak_ctx *ctx, h5ark_error *err);

const ak_command *ak_command_find(const char *base);
/* Where `in`, a request of command c, runs at several ranks. */
ranks_mode ak_command_ranks(const ak_command *c, const ak_request *in);

/* Reply helpers. */
int ak_reply(ak_ctx *ctx, h5ark_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reply value (taken; NULL: out of memory) as JSON text. */
int ak_reply_value(ak_ctx *ctx, json_t *value, h5ark_error *err);
/* Run a command of the native table (dispatch_call) for this request. */
int ak_native(ak_ctx *ctx, const char *name, const h5ark_value *args, const h5ark_value *buffers,
              dispatch_result *out, h5ark_error *err);
/* Run a native command that makes one object (its result's `object`) and reply that
 * object's `created ...` text. Takes args (NULL when building them ran out of memory). */
int ak_native_created(ak_ctx *ctx, const char *name, h5ark_value *args, h5ark_error *err);
/* Reply `created ...` for the object a native command `name` made (its result `res`, freed
 * here). */
int ak_reply_made(ak_ctx *ctx, dispatch_result *res, const char *name, h5ark_error *err);
/* The native info of the object `name` (res->result's "objects" holds its one
 * descriptor). */
int ak_describe(ak_ctx *ctx, const char *name, dispatch_result *res, h5ark_error *err);
/* The native info of every object the caller sees (its own, then those shared with it):
 * res->result's "objects". */
int ak_list_objects(ak_ctx *ctx, dispatch_result *res, h5ark_error *err);
/* A list argument (JSON text of a list of names) as a native array of strings; NULL with
 * err set. */
h5ark_value *ak_names_arg(ak_ctx *ctx, const char *key, h5ark_error *err);
/* The created text of the object a native command described (desc, its descriptor);
 * malloc'd, NULL with err set (internal naming command `name` when there is none). */
char *ak_created_of(const h5ark_value *desc, const char *name, h5ark_error *err);
/* Strings from the request's payload (each string followed by a NUL, holding none: none
 * for an empty payload) through the native put; reply their created text. */
int ak_strings_put(ak_ctx *ctx, h5ark_error *err);
/* A native args map of string pairs (key, value, ...) ending at a NULL key; NULL values are
 * left out. NULL without memory. */
h5ark_value *ak_str_args(const char *key, ...) __attribute__((sentinel));
/* An Arkouda number string as a native argument: an integer kept exact (int64, or uint64
 * above it), else a float; NULL with bad_request naming `key` when it is neither. */
h5ark_value *ak_number_value(const char *key, const char *text, h5ark_error *err);
/* A client path as the native commands take it: relative ones as they are (with users:
 * in the caller's home); an absolute one by resolving its longest existing directory
 * prefix without glob characters, which must lie inside the data directory (forbidden
 * otherwise), made relative to it (with users: from '/', the data directory's root). A
 * `folder` may be the data directory itself ("", or "/" with users); a file may not. */
int ak_client_path(const char *given, bool folder, char out[PATH_MAX], h5ark_error *err);

#endif
