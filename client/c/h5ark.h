/* libh5ark: the C client of the h5ark daemon. One client owns one ZeroMQ DEALER socket and
 * runs one request at a time; use one client per thread. Every fallible function returns 0 on
 * success and -1 on failure with `err` (may be NULL) filled with a code and a message.
 *
 *     h5ark_error err;
 *     h5ark_client_t *c = h5ark_client_new("tcp://127.0.0.1:5555", NULL, &err);
 *     int64_t v[3] = {1, 2, 3};
 *     h5ark_client_put_array(c, H5ARK_INT64, 3, v, "v", NULL, &err);
 *     h5ark_client_destroy(&c);
 */
#ifndef H5ARK_H
#define H5ARK_H

#include "h5ark_frames.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define H5ARK_DEFAULT_ENDPOINT           "tcp://127.0.0.1:5555"
#define H5ARK_DEFAULT_TIMEOUT_MS         60000
#define H5ARK_DEFAULT_CONNECT_TIMEOUT_MS 2000
/* `stop` of a get: the end of the object. `size` of a create: derived from the fill. */
#define H5ARK_END       UINT64_MAX
#define H5ARK_SIZE_AUTO UINT64_MAX

typedef struct _h5ark_client_t h5ark_client_t;
typedef struct _h5ark_reply_t h5ark_reply_t;

/* One named input buffer of a request: `nbytes` bytes at `data`. */
typedef struct {
    const char *name;
    const void *data;
    uint64_t nbytes;
} h5ark_buffer_in;

/* ---- the client ---------------------------------------------------------------------- */

/* Connect to `endpoint` (NULL = H5ARK_DEFAULT_ENDPOINT). `token` (NULL = none) is sent with
 * every request. Connecting is lazy: the first request first pings, and an absent daemon
 * shows up as io_error after the connect timeout (see h5ark_client_set_connect_timeout). */
h5ark_client_t *h5ark_client_new(const char *endpoint, const char *token, h5ark_error *err);
/* Encrypt with ZeroMQ CURVE from now on: `server_public_key` is the daemon's public key
 * (the 40-character Z85 text of the .pub file `h5arkd --curve-keygen` writes). The client
 * makes a key pair of its own. */
int h5ark_client_set_curve(h5ark_client_t *self, const char *server_public_key, h5ark_error *err);
void h5ark_client_destroy(h5ark_client_t **self_p);
/* How long a request waits for its reply; < 0 waits forever. Default 60 s. */
void h5ark_client_set_timeout(h5ark_client_t *self, int timeout_ms);
int h5ark_client_timeout(const h5ark_client_t *self);
/* How long the first contact waits. Until the daemon has answered once (again after a
 * request failed without a reply), a request is preceded by a `ping` that waits at most
 * this long (and no longer than the timeout), so that a daemon that is not there is
 * reported at once; requests themselves then wait their whole timeout. < 0: no ping, an
 * absent daemon shows up at the request's timeout. Default 2 s. */
void h5ark_client_set_connect_timeout(h5ark_client_t *self, int timeout_ms);
int h5ark_client_connect_timeout(const h5ark_client_t *self);
const char *h5ark_client_endpoint(const h5ark_client_t *self);
/* The `warnings` of the last reply (an array of str, or NULL): valid until the next request. */
const h5ark_value *h5ark_client_warnings(const h5ark_client_t *self);
/* The routing identity of the client's socket: the `client` the daemon's `status` gives
 * for its requests. A new socket (after a request failed without a reply, or
 * h5ark_client_set_curve) gets a new one. */
const char *h5ark_client_identity(const h5ark_client_t *self);

/* Send one request and wait for its reply. `args` (a map or NULL) is taken, also on failure.
 * The `nbufs` buffers are sent as payload frames without copying; the call returns only once
 * ZeroMQ has let go of them, so the caller may free them as soon as it returns.
 * `*reply` receives every reply that arrives, ok or not (destroy it in both cases); it is
 * NULL when none arrived. A reply with ok:false returns -1 with err set from its `error`;
 * no reply within the timeout (or nothing answering the first contact) returns -1 with
 * io_error. `reply` may be NULL. */
int h5ark_client_request(h5ark_client_t *self, const char *cmd, h5ark_value *args,
                         const h5ark_buffer_in *bufs, size_t nbufs, h5ark_reply_t **reply,
                         h5ark_error *err);

/* ---- replies ------------------------------------------------------------------------- */

void h5ark_reply_destroy(h5ark_reply_t **self_p);
bool h5ark_reply_ok(const h5ark_reply_t *self);
const h5ark_value *h5ark_reply_header(const h5ark_reply_t *self);
const h5ark_value *h5ark_reply_result(const h5ark_reply_t *self);   /* map or NULL */
const h5ark_value *h5ark_reply_warnings(const h5ark_reply_t *self); /* array or NULL */
/* The reply's error code and message; H5ARK_OK and "" when it has none. */
h5ark_code h5ark_reply_error_code(const h5ark_reply_t *self);
const char *h5ark_reply_error_message(const h5ark_reply_t *self);
/* Payload buffers, in the order of the reply's `buffers`. */
size_t h5ark_reply_buffer_count(const h5ark_reply_t *self);
const char *h5ark_reply_buffer_name(const h5ark_reply_t *self, size_t index);
/* Size of the named buffer; -1 (not_found) when the reply has no such buffer. */
int h5ark_reply_buffer_size(const h5ark_reply_t *self, const char *name, uint64_t *nbytes,
                            h5ark_error *err);
/* Copy the named buffer into dst (capacity `cap` bytes, which must be enough). */
int h5ark_reply_buffer_copy(const h5ark_reply_t *self, const char *name, void *dst, uint64_t cap,
                            h5ark_error *err);
/* The named buffer in place, without copying, when it lies within one frame; NULL when it
 * spans frames (the daemon sends each shard's part as frames of its own, of at most 1 MiB)
 * or is absent. The memory lives as long as the reply. An empty buffer gives a non-NULL
 * pointer. */
const void *h5ark_reply_buffer_data(const h5ark_reply_t *self, const char *name, uint64_t *nbytes);

/* ---- typed helpers, one per command ---------------------------------------------------
 * `result` / `object` outputs are optional (NULL = not wanted); what they receive is the
 * caller's to destroy with h5ark_value_destroy. */

/* `rtt_seconds` (optional): the round-trip time. */
int h5ark_client_ping(h5ark_client_t *self, double *rtt_seconds, h5ark_error *err);
int h5ark_client_getconfig(h5ark_client_t *self, h5ark_value **config, h5ark_error *err);
/* The requests the daemon is running, oldest first (an array of maps: seq, id, cmd, client,
 * peer, started, elapsed, done, total, unit); only those of the client whose identity is
 * `client` when it is not NULL. */
int h5ark_client_status(h5ark_client_t *self, const char *client, h5ark_value **requests,
                        h5ark_error *err);
/* Descriptors (an array) of the named objects, or of all of them when count == 0. */
int h5ark_client_info(h5ark_client_t *self, const char *const *names, size_t count,
                      h5ark_value **objects, h5ark_error *err);
/* Delete the named objects: all of them, or none when one is unknown (not_found). */
int h5ark_client_delete(h5ark_client_t *self, const char *const *names, size_t count,
                        h5ark_value **deleted, h5ark_error *err);
int h5ark_client_clear(h5ark_client_t *self, uint64_t *deleted, h5ark_error *err);
/* Let `with` (users, "g:GROUP", "*") read the caller's named objects (share), or take that
 * back (!share): *grants set to {name: [subjects]} (a daemon with users). */
int h5ark_client_share(h5ark_client_t *self, const char *const *names, size_t count,
                       const char *const *with, size_t nwith, bool share, h5ark_value **grants,
                       h5ark_error *err);
/* The ACL that governs a folder (or a file's folder), a daemon with users: *result set to
 * {path, acl: [{subject, read, create, update, delete, readACL, updateACL}], from (the
 * folder whose .h5ark-acl it is; nil: the defaults), default}. Needs readACL. */
int h5ark_client_getacl(h5ark_client_t *self, const char *path, h5ark_value **result,
                        h5ark_error *err);
/* Replace a folder's ACL with `acl` (an array of entries as above; a permission left out is
 * false), atomically: *written set to the ACL as written. Needs updateACL. */
int h5ark_client_setacl(h5ark_client_t *self, const char *path, const h5ark_value *acl,
                        h5ark_value **written, h5ark_error *err);
int h5ark_client_shutdown(h5ark_client_t *self, h5ark_error *err);
/* Who the token names (a daemon with users): user, role, groups, quotas, usage. */
int h5ark_client_whoami(h5ark_client_t *self, h5ark_value **me, h5ark_error *err);
/* Have the daemon read its token file again (an admin's): tokens, users, groups in force. */
int h5ark_client_reload(h5ark_client_t *self, h5ark_value **result, h5ark_error *err);

/* A number argument: absent, or a bool, integer or float as the daemon should read it. */
typedef struct {
    enum {
        H5ARK_NUM_NONE = 0,
        H5ARK_NUM_BOOL,
        H5ARK_NUM_INT,
        H5ARK_NUM_UINT,
        H5ARK_NUM_FLOAT
    } kind;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double f;
    } as;
} h5ark_number;

static inline h5ark_number h5ark_num_int(int64_t i) {
    h5ark_number n = {.kind = H5ARK_NUM_INT, .as.i = i};
    return n;
}
static inline h5ark_number h5ark_num_uint(uint64_t u) {
    h5ark_number n = {.kind = H5ARK_NUM_UINT, .as.u = u};
    return n;
}
static inline h5ark_number h5ark_num_float(double f) {
    h5ark_number n = {.kind = H5ARK_NUM_FLOAT, .as.f = f};
    return n;
}
/* Read "12", "-3", "0x1f", "2.5", "nan", "inf", "true", "false"; false if it is none. */
bool h5ark_number_parse(const char *text, h5ark_number *out);

/* How `create` fills the array; a zeroed struct (or NULL) means zeros. */
typedef struct {
    const char *fill;   /* empty zeros ones full arange linspace uniform randint; NULL = zeros */
    h5ark_number value; /* full */
    h5ark_number start, stop; /* arange, linspace */
    h5ark_number step;        /* arange */
    h5ark_number low, high;   /* uniform, randint */
    bool has_seed;
    uint64_t seed; /* uniform, randint */
} h5ark_fill;

/* A new pdarray of `size` elements (H5ARK_SIZE_AUTO: from an arange's range). `name`: NULL
 * lets the daemon choose one. */
int h5ark_client_create(h5ark_client_t *self, h5ark_dtype dtype, uint64_t size,
                        const h5ark_fill *fill, const char *name, h5ark_value **object,
                        h5ark_error *err);
/* A pdarray from `size` elements of `dtype` at `data` (little-endian, bool one byte each). */
int h5ark_client_put_array(h5ark_client_t *self, h5ark_dtype dtype, uint64_t size, const void *data,
                           const char *name, h5ark_value **object, h5ark_error *err);
/* A strings object from `count` NUL-terminated UTF-8 strings (each ends at its first NUL:
 * for strings holding NULs use the packed form below). */
int h5ark_client_put_strings(h5ark_client_t *self, uint64_t count, const char *const *strs,
                             const char *name, h5ark_value **object, h5ark_error *err);
/* The same from the wire layout: `segments` (start offsets) into `values`, where every string
 * is followed by one NUL. A string may hold NULs: it ends a byte before the next offset (the
 * last a byte before values_nbytes). Sent without copying. */
int h5ark_client_put_strings_packed(h5ark_client_t *self, uint64_t count, const int64_t *segments,
                                    const char *values, uint64_t values_nbytes, const char *name,
                                    h5ark_value **object, h5ark_error *err);
/* Strings from `values_nbytes` bytes in which each string is followed by a NUL and holds
 * none: no offsets are sent, the daemon finds where each string starts. */
int h5ark_client_put_strings_at_nuls(h5ark_client_t *self, const char *values,
                                     uint64_t values_nbytes, const char *name, h5ark_value **object,
                                     h5ark_error *err);

/* Numeric compute (protocol/PROTOCOL.md, "Numeric compute"): each makes a new pdarray and
 * returns its descriptor in *object (`name` NULL lets the daemon choose one), except
 * fill, whose result takes the array's name, and reduce. */
/* a op b elementwise, two arrays of one size (+ - * / // % ** == != < <= > >= & | ^ << >>). */
int h5ark_client_binop(h5ark_client_t *self, const char *op, const char *a, const char *b,
                       const char *name, h5ark_value **object, h5ark_error *err);
/* a op value (reverse: value op a); value_dtype ("int64", "uint64", "float64", "bool") or
 * NULL for the value's own kind. */
int h5ark_client_binop_scalar(h5ark_client_t *self, const char *op, const char *a,
                              h5ark_number value, const char *value_dtype, bool reverse,
                              const char *name, h5ark_value **object, h5ark_error *err);
int h5ark_client_cast(h5ark_client_t *self, const char *array, h5ark_dtype dtype, const char *name,
                      h5ark_value **object, h5ark_error *err);
int h5ark_client_fill(h5ark_client_t *self, const char *array, h5ark_number value,
                      h5ark_value **object, h5ark_error *err);
/* op: all any sum prod max min argmax argmin is_sorted; *result: {"value", "dtype"}. */
int h5ark_client_reduce(h5ark_client_t *self, const char *array, const char *op,
                        h5ark_value **result, h5ark_error *err);
int h5ark_client_cumsum(h5ark_client_t *self, const char *array, bool include_initial,
                        const char *name, h5ark_value **object, h5ark_error *err);

/* A bigint's values cut to their low max_bits bits (-1: unbounded), under its name. */
int h5ark_client_limitbits(h5ark_client_t *self, const char *array, int64_t max_bits,
                           h5ark_value **object, h5ark_error *err);

/* bigint_arange: range(start, stop, step) of decimal integers (non-negative, up to 4096
 * bits) as a bigint pdarray. bigint_limbs: *result {"limbs": [desc...]}, least significant
 * first. bigint_from_limbs: a bigint from `count` uint64 pdarrays, most significant
 * first, cut to max_bits (-1: unbounded). */
int h5ark_client_bigint_arange(h5ark_client_t *self, const char *start, const char *stop,
                               const char *step, const char *name, h5ark_value **object,
                               h5ark_error *err);
int h5ark_client_bigint_limbs(h5ark_client_t *self, const char *array, h5ark_value **result,
                              h5ark_error *err);
int h5ark_client_bigint_from_limbs(h5ark_client_t *self, const char *const *arrays, size_t count,
                                   int64_t max_bits, const char *name, h5ark_value **object,
                                   h5ark_error *err);
/* bigint_binop: a op b (b an array name) or a op value (reverse: value op a; value a
 * decimal integer of any sign) as integers of any size, one side a bigint (+ - * // % & | ^
 * and comparisons); bigint_full: `size` copies of the decimal `value` (NULL: 0), cut to
 * max_bits; bigint_fill: every element of a bigint `value` (decimal), under its name;
 * bigint_assign: array[index] = value (decimal), under the array's name. */
int h5ark_client_bigint_binop(h5ark_client_t *self, const char *op, const char *a, const char *b,
                              const char *value, bool reverse, const char *name,
                              h5ark_value **object, h5ark_error *err);
int h5ark_client_bigint_full(h5ark_client_t *self, uint64_t size, const char *value,
                             int64_t max_bits, const char *name, h5ark_value **object,
                             h5ark_error *err);
int h5ark_client_bigint_fill(h5ark_client_t *self, const char *array, const char *value,
                             h5ark_value **object, h5ark_error *err);
int h5ark_client_bigint_assign(h5ark_client_t *self, const char *array, const char *index,
                               const char *value, h5ark_value **object, h5ark_error *err);

/* Elements [start, stop) of an object, as the daemon sent them. */
typedef struct {
    h5ark_value *object; /* the descriptor */
    h5ark_objtype objtype;
    h5ark_dtype dtype;
    uint64_t start, stop, count; /* count = stop - start */
    void *values;                /* pdarray: count * itemsize bytes; strings: the bytes */
    uint64_t values_nbytes;
    int64_t *segments; /* strings: where each string starts in values, first one at 0 */
} h5ark_data;

/* Fetch into freshly allocated memory; free it with h5ark_data_free. stop = H5ARK_END for
 * the end. pdarray and strings objects. */
int h5ark_client_get(h5ark_client_t *self, const char *name, uint64_t start, uint64_t stop,
                     h5ark_data *out, h5ark_error *err);
void h5ark_data_free(h5ark_data *data);
/* String i of a strings h5ark_data (followed by a NUL; `len`, from the offsets, excludes it
 * and counts any NUL the string holds). */
const char *h5ark_data_string(const h5ark_data *data, uint64_t i, size_t *len);
/* Fetch the elements of a pdarray into the caller's memory (`cap` bytes). `nbytes`
 * (optional) receives the bytes written, `object` (optional) the descriptor. */
int h5ark_client_get_into(h5ark_client_t *self, const char *name, uint64_t start, uint64_t stop,
                          void *dst, uint64_t cap, uint64_t *nbytes, h5ark_value **object,
                          h5ark_error *err);

/* Write objects to HDF5. `datasets`: NULL (the object names) or `count` names. `mode`:
 * NULL, "truncate", "append" or "update"; `file_type`: NULL, "distribute" or "single". The result
 * map holds `files`; overwritten files are in h5ark_client_warnings. */
int h5ark_client_tohdf(h5ark_client_t *self, const char *const *names, size_t count,
                       const char *const *datasets, const char *path, const char *mode,
                       const char *file_type, h5ark_value **result, h5ark_error *err);

/* The same with every option tohdf takes; a NULL or 0 field is left to the daemon. */
typedef struct {
    const char *mode;             /* "truncate", "append" or "update" */
    const char *file_type;        /* "distribute" or "single" */
    const char *compression;      /* "none" (contiguous datasets) or "gzip" (chunked, shuffled) */
    int compression_level;        /* 1-9, with gzip */
    const char *format;           /* "arkouda" or "exetera" (an ExeTera dataframe's fields) */
    const char *group;            /* exetera: the dataframe group ("df") */
    const char *fieldtype;        /* exetera: the fields' fieldtype (each object's own) */
    int strings_without_segments; /* nonzero: Strings as their bytes alone (no offsets) */
} h5ark_tohdf_opts;
int h5ark_client_tohdf_opts(h5ark_client_t *self, const char *const *names, size_t count,
                            const char *const *datasets, const char *path,
                            const h5ark_tohdf_opts *opts, h5ark_value **result, h5ark_error *err);

/* ExeTera fields in parts: append object `name`'s rows to `field` ("<dataframe>/<field>")
 * of the file `path` (created with the dataframe and the field when missing; `fieldtype`
 * NULL: the object's own), leaving the field not completed; then mark it completed. The
 * result map holds `field` and `rows` (the field's rows now). */
int h5ark_client_writepart(h5ark_client_t *self, const char *path, const char *field,
                           const char *name, const char *fieldtype, h5ark_value **result,
                           h5ark_error *err);
int h5ark_client_complete(h5ark_client_t *self, const char *path, const char *field,
                          h5ark_value **result, h5ark_error *err);

/* Checkpoints: every object written as a new checkpoint in the daemon's --checkpoint-dir
 * (path NULL), or into the folder `path/name` of the data directory (name NULL: a new one;
 * mode NULL or "error" refuses one that exists, "overwrite" replaces it); load one of those
 * back, over objects of the same names. The result map holds `checkpoint` (its id or
 * name), `objects`, `bytes` and `seconds`. */
int h5ark_client_checkpoint(h5ark_client_t *self, const char *path, const char *name,
                            const char *mode, h5ark_value **result, h5ark_error *err);
int h5ark_client_load_checkpoint(h5ark_client_t *self, const char *path, const char *name,
                                 h5ark_value **result, h5ark_error *err);

typedef struct {
    bool strict_types, allow_errors, calc_string_offsets, tag_data;
    /* with range: only rows [start, stop) of the files' concatenation (stop = UINT64_MAX:
     * through the last row) */
    bool range;
    uint64_t start, stop;
} h5ark_readhdf_opts;

/* Read objects from HDF5 files (names or globs). `datasets`: NULL or `ndatasets` names (0 =
 * all). `opts`: NULL for the daemon's defaults. The result map holds `objects` and
 * `file_errors`. */
int h5ark_client_readhdf(h5ark_client_t *self, const char *const *paths, size_t npaths,
                         const char *const *datasets, size_t ndatasets,
                         const h5ark_readhdf_opts *opts, h5ark_value **result, h5ark_error *err);
/* List an HDF5 file; the result map holds `entries`. */
int h5ark_client_lshdf(h5ark_client_t *self, const char *path, bool recursive, h5ark_value **result,
                       h5ark_error *err);
/* LBANN sample packing (pack): the data schema and the experiment schema (YAML text; NULL:
 * none), the samples as `npaths` file names or globs or as an LBANN `sample_list` (NULL: the
 * paths), `name` a prefix for the objects' names (NULL: the daemon's names). The result map
 * holds `samples`, `sample_ids`, `groups` and `fields`. */
int h5ark_client_pack(h5ark_client_t *self, const char *data_schema, const char *experiment_schema,
                      const char *const *paths, size_t npaths, const char *sample_list,
                      const char *name, h5ark_value **result, h5ark_error *err);

/* ---- selection and segments (protocol/PROTOCOL.md, "Selection and segments") ----------
 * Each makes a new object (named `name`, NULL: the daemon's name) and hands back its
 * descriptor in *object (NULL: not wanted); arguments are object names. */

/* The rows of `array` at the positions of the integer pdarray `index` (negative ones from
 * the end), or where the bool pdarray `index` is true. */
int h5ark_client_take(h5ark_client_t *self, const char *array, const char *index, const char *name,
                      h5ark_value **object, h5ark_error *err);
/* The rows range(start, stop, step) of `array` (start and stop in [-1, size]). */
int h5ark_client_slice(h5ark_client_t *self, const char *array, int64_t start, int64_t stop,
                       int64_t step, const char *name, h5ark_value **object, h5ark_error *err);
/* array[index] = values (a pdarray name), or, values NULL, the one scalar `value`; the
 * changed array replaces `array` under its name (*object: its descriptor). */
int h5ark_client_assign(h5ark_client_t *self, const char *array, const char *index,
                        const char *values, h5ark_number value, h5ark_value **object,
                        h5ark_error *err);
/* `count` pdarrays of one dtype, or strings, end to end. */
int h5ark_client_concatenate(h5ark_client_t *self, const char *const *names, size_t count,
                             const char *name, h5ark_value **object, h5ark_error *err);

/* Strings compute. compare: where strings[i] == (op "==") or != (op "!=") the strings
 * `other`'s, or, other NULL, the text[0..text_len) (NULs allowed); a bool pdarray. */
int h5ark_client_compare(h5ark_client_t *self, const char *strings, const char *op,
                         const char *other, const char *text, size_t text_len, h5ark_value **object,
                         h5ark_error *err);
/* Each string cut at the literal pattern (at most max cuts; 0: all): *result maps `object`
 * (the pieces) and, with `segments`, `segments` (each string's first piece) to
 * descriptors. */
int h5ark_client_split(h5ark_client_t *self, const char *strings, const char *pattern, int64_t max,
                       bool segments, const char *name, h5ark_value **result, h5ark_error *err);
/* `size` random strings of the character set `chars` (uppercase lowercase numeric
 * alphabetic alphanumeric printable), dist "uniform" (lengths in [arg1, arg2)) or
 * "lognormal" (log-mean arg1, log-sd arg2); seed < 0: none. */
int h5ark_client_random_strings(h5ark_client_t *self, uint64_t size, const char *chars,
                                const char *dist, double arg1, double arg2, int64_t seed,
                                const char *name, h5ark_value **object, h5ark_error *err);
/* The grouping of `count` keys: *result maps `unique_key_idx` (and with `groups`,
 * `permutation` and `segments`) to descriptors. order: NULL ("bytes") or "arkouda". */
int h5ark_client_unique(h5ark_client_t *self, const char *const *keys, size_t count, bool groups,
                        const char *order, h5ark_value **result, h5ark_error *err);
/* Each group's value over the `size` rows of its segment; `permutation` NULL: group order. */
int h5ark_client_broadcast(h5ark_client_t *self, const char *segments, const char *values,
                           uint64_t size, const char *permutation, const char *name,
                           h5ark_value **object, h5ark_error *err);
/* One value per segment of `values`: op count sum min max mean nunique any all. */
int h5ark_client_segmented_reduce(h5ark_client_t *self, const char *values, const char *segments,
                                  const char *op, bool skip_nan, const char *name,
                                  h5ark_value **object, h5ark_error *err);

/* ---- objects from named parts (protocol/PROTOCOL.md, "Composite objects") --------------
 * Each makes a new object (named `name`, NULL: the daemon's name) and hands back its
 * descriptor in *object (NULL: not wanted). */

/* The int64 (or, for "ipv4", uint64) pdarray `array` tagged "datetime64[ns]",
 * "timedelta64[ns]" or "ipv4", the data shared. */
int h5ark_client_tag(h5ark_client_t *self, const char *array, const char *tag, const char *name,
                     h5ark_value **object, h5ark_error *err);
/* Every array and Strings inside `composite` published under a name of its own (one
 * published already keeps its name); *object: the composite's descriptor, each of those
 * parts described under its name. The composite is deleted unless `keep`. */
int h5ark_client_unpack(h5ark_client_t *self, const char *composite, bool keep,
                        h5ark_value **object, h5ark_error *err);
/* A Categorical of int64 `codes` and Strings `categories`; na_code >= 0: the category that is
 * the NA value (< 0: "N/A", appended when absent); `permutation` and `segments` (both or
 * NULL): its grouping, kept. */
int h5ark_client_categorical_codes(h5ark_client_t *self, const char *codes, const char *categories,
                                   int64_t na_code, const char *permutation, const char *segments,
                                   const char *name, h5ark_value **object, h5ark_error *err);
/* A GroupBy of `count` keys: computed, or, with `permutation`, `segments` and
 * `unique_key_idx` (all three, or all NULL), that grouping, checked. */
int h5ark_client_groupby(h5ark_client_t *self, const char *const *keys, size_t count,
                         const char *permutation, const char *segments, const char *unique_key_idx,
                         const char *name, h5ark_value **object, h5ark_error *err);

/* ---- files as files (protocol/PROTOCOL.md, "Files as files") ----------------------------
 * `path`: relative to the data directory, a name, a glob or a distributed name. */

/* The files `count` names and patterns stand for: *files an array of str. */
int h5ark_client_glob(h5ark_client_t *self, const char *const *paths, size_t count,
                      h5ark_value **files, h5ark_error *err);
/* The result map {file, type "hdf5"|"parquet"} (filetype) or {file, file_format
 * "single"|"distribute", attribute} (fileformat) of the first file `path` stands for. */
int h5ark_client_filetype(h5ark_client_t *self, const char *path, h5ark_value **result,
                          h5ark_error *err);
int h5ark_client_fileformat(h5ark_client_t *self, const char *path, h5ark_value **result,
                            h5ark_error *err);
/* Remove the file `path` and its distributed set; *deleted (NULL: not wanted) the files. */
int h5ark_client_rmhdf(h5ark_client_t *self, const char *path, h5ark_value **deleted,
                       h5ark_error *err);

#endif
