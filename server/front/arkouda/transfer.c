/* Transfer commands of the Arkouda dialect (protocol/PROTOCOL.md, "The Arkouda endpoint"): uploads
 * `array<T,1>` and `arraySegString<uint8>` (a JSON frame ending BINARY_PAYLOAD, then the
 * raw bytes) and downloads `tondarray<T,1>` and `segStr-tondarray` (one raw frame in the
 * host's byte order; errors as a raw "Error: ..." frame, see endpoint.c). The bytes go
 * through the native `put` and `get`. */
#include "front/arkouda/commands.h"
#include "locales.h"
#include "registry.h"
#include "shardcache.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* shape: a JSON list of strings (["5"]) as `array` sends it, or one number ("5"). */
static h5ark_value *shape_value(ak_ctx *ctx, h5ark_error *err) {
    const char *text;
    if (ak_arg_str(ctx->in, "shape", &text, err)) return NULL;
    h5ark_value *shape = h5ark_value_array();
    if (!shape) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    uint64_t n;
    if (text[0] != '[') {
        if (!ak_parse_uint(text, &n)) goto bad;
        h5ark_value_push(shape, h5ark_value_uint(n));
        return shape;
    }
    json_t *list = ak_arg_list(ctx->in, "shape", err);
    if (!list) {
        h5ark_value_destroy(&shape);
        return NULL;
    }
    size_t i;
    json_t *item;
    bool ok = json_array_size(list) == 1; /* the registration config offers nd [1] */
    json_array_foreach(list, i, item) {
        ok &= ak_parse_uint(json_string_value(item), &n);
        if (ok) h5ark_value_push(shape, h5ark_value_uint(n));
    }
    json_decref(list);
    if (ok) return shape;
bad:
    h5ark_value_destroy(&shape);
    h5ark_fail(err, H5ARK_BAD_REQUEST,
               "argument 'shape' must be one non-negative integer (1-dimensional arrays)");
    return NULL;
}

static h5ark_value *buffer_list(const char *name, uint64_t nbytes, const char *name2,
                                uint64_t nbytes2) {
    h5ark_value *list = h5ark_value_array();
    for (int i = 0; list && i < (name2 ? 2 : 1); i++) {
        h5ark_value *b = h5ark_value_map();
        h5ark_value_set(b, "name", h5ark_value_str(i ? name2 : name));
        h5ark_value_set(b, "nbytes", h5ark_value_uint(i ? nbytes2 : nbytes));
        if (h5ark_value_len(b) != 2 || h5ark_value_push(list, b)) {
            h5ark_value_destroy(&b);
            h5ark_value_destroy(&list);
        }
    }
    return list;
}

/* Run native `put` with these args and buffers over `req`'s payload; reply `created`. */
static int put_created(ak_ctx *ctx, const request *req, h5ark_value *args, h5ark_value *buffers,
                       h5ark_error *err) {
    dispatch_result res;
    int rc = args && buffers ? dispatch_call(req, "put", args, buffers, &res, err)
                             : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value_destroy(&args);
    h5ark_value_destroy(&buffers);
    if (rc) return -1;
    return ak_reply_made(ctx, &res, "put", err);
}

/* array<T,1> {dtype, shape, seg_string}: the elements, raw. */
static int cmd_array(ak_ctx *ctx, h5ark_error *err) {
    const ak_request *in = ctx->in;
    h5ark_dtype dtype;
    const char *given = ak_arg(in, "dtype");
    if (in->nparams != 2 || strcmp(in->params[1], "1") != 0 ||
        !h5ark_dtype_from_name(in->params[0], &dtype) || dtype == H5ARK_STRING ||
        dtype == H5ARK_BIGINT)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "%s: array takes <dtype,1> of a numeric or bool dtype", in->cmd);
    if (given && strcmp(given, in->params[0]) != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'dtype' %.40s differs from %s", given,
                          in->cmd);
    bool seg_string = false;
    if (ak_arg(in, "seg_string") && ak_arg_bool(in, "seg_string", &seg_string, err)) return -1;
    if (seg_string)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "strings are sent with arraySegString");
    h5ark_value *shape = shape_value(ctx, err);
    if (!shape) return -1;
    h5ark_value *args = h5ark_value_map();
    if (args) {
        h5ark_value_set(args, "objtype", h5ark_value_str("pdarray"));
        h5ark_value_set(args, "dtype", h5ark_value_str(h5ark_dtype_name(dtype)));
        h5ark_value_set(args, "shape", shape);
    } else {
        h5ark_value_destroy(&shape);
    }
    return put_created(ctx, ctx->req, args, buffer_list("values", ctx->req->payload.total, NULL, 0),
                       err);
}

int ak_strings_put(ak_ctx *ctx, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "objtype", h5ark_value_str("strings")) ||
                 h5ark_value_set(args, "strings_segments", h5ark_value_bool(false))))
        h5ark_value_destroy(&args);
    return put_created(ctx, ctx->req, args, buffer_list("values", ctx->req->payload.total, NULL, 0),
                       err);
}

/* arraySegString<uint8> {size}: the strings' bytes, each followed by a NUL. No offsets come:
 * as at Arkouda's server, each NUL ends a string (the native put of `values` alone). */
static int cmd_array_strings(ak_ctx *ctx, h5ark_error *err) {
    const h5ark_payload *p = &ctx->req->payload;
    uint64_t size;
    if (ak_arg_uint(ctx->in, "size", &size, err)) return -1;
    if (size != p->total)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'size' is %llu but %llu bytes came",
                          (unsigned long long)size, (unsigned long long)p->total);
    return ak_strings_put(ctx, err);
}

typedef struct {
    void *mem;
    uint64_t reserved;
} owned_bytes;

/* Gathered replies are kept, when freed, in the shard cache under a locale of their own (no
 * shard takes one): the next download of a similar size reuses pages already faulted in,
 * where fresh ones cost the kernel a page fault and a zeroed page each (most of the time a
 * one-frame download took). The cache gives them back when live objects need the room. */
#define GATHER_LOCALE (-1)

static void free_owned(void *arg) {
    owned_bytes *o = arg;
    registry_unreserve(o->reserved);
    shardcache_give(GATHER_LOCALE, o->mem, o->reserved);
    free(o);
}

/* Memory for a gathered reply: a cached one, or fresh and mapped with huge pages where the
 * kernel gives them (THP "madvise"), since the copy into it faults in every page of what
 * may be a GiB. */
static void *gather_memory(uint64_t n) {
    void *p = shardcache_alloc(GATHER_LOCALE, n);
#ifdef MADV_HUGEPAGE
    uintptr_t page = 4096, lo = ((uintptr_t)p + page - 1) & ~(page - 1),
              hi = ((uintptr_t)p + n) & ~(page - 1);
    if (p && n >= (2u << 20) && hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#endif
    return p;
}

typedef struct {
    char *dst;
    const char *src;
    uint64_t len;
} gather_piece;

typedef struct {
    gather_piece *pieces;
    size_t count;
} gather_job;

/* This rank's locale l copies pieces l, l + T, ... (T: its locales): a pdarray's spans are
 * its shards, one a locale (at several ranks the other ranks' parts are one more). */
static void gather_locale(int locale, void *arg) {
    gather_job *g = arg;
    size_t T = (size_t)locales_local_count();
    for (size_t i = (size_t)(locale - locales_local_first()); i < g->count; i += T)
        memcpy(g->pieces[i].dst, g->pieces[i].src, g->pieces[i].len);
}

/* Reply bytes [from, from + n) of a native reply's spans as one frame: the span itself when
 * they lie in one (no copy), else gathered into memory counted against --max-memory. */
static int reply_range(ak_ctx *ctx, dispatch_result *res, uint64_t from, uint64_t n,
                       h5ark_error *err) {
    ctx->nbytes = n;
    ctx->bytes = "";
    if (n == 0) return 0;
    size_t i = 0;
    uint64_t at = 0;
    while (i < res->nspans && at + res->spans[i].len <= from)
        at += res->spans[i++].len;
    if (i == res->nspans)
        return h5ark_fail(err, H5ARK_INTERNAL, "the reply is shorter than its buffers");
    if (from - at + n <= res->spans[i].len) {
        ctx->bytes = (const char *)res->spans[i].ptr + (from - at);
        ctx->hold = res->hold;
        res->hold = NULL;
        return 0;
    }
    owned_bytes *o = calloc(1, sizeof *o);
    if (!o) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (registry_reserve(n, err)) {
        free(o);
        return -1;
    }
    o->reserved = n;
    o->mem = gather_memory(n);
    ctx->hold = o->mem ? h5ark_hold_new(free_owned, o) : NULL;
    if (!ctx->hold) {
        free(o->mem);
        registry_unreserve(n);
        free(o);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    /* the pieces, then copied on the locales at once (a GiB is a tenth of a second of one
     * core's memcpy) */
    gather_job g = {.pieces = calloc(res->nspans - i, sizeof *g.pieces)};
    if (!g.pieces) {
        h5ark_hold_drop(ctx->hold);
        ctx->hold = NULL;
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    uint64_t done = 0;
    for (; i < res->nspans && done < n; i++) {
        uint64_t skip = from + done > at ? from + done - at : 0;
        uint64_t take = res->spans[i].len - skip;
        if (take > n - done) take = n - done;
        g.pieces[g.count++] =
            (gather_piece){(char *)o->mem + done, (const char *)res->spans[i].ptr + skip, take};
        done += take;
        at += res->spans[i].len;
    }
    locales_run(gather_locale, &g);
    free(g.pieces);
    ctx->bytes = o->mem;
    return 0;
}

/* Native `get` of the object named by argument `key`. */
static int get_object(ak_ctx *ctx, const char *key, dispatch_result *res, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (!args || h5ark_value_set(args, "name", h5ark_value_str(ak_arg(ctx->in, key)))) {
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    int rc = ak_native(ctx, "get", args, NULL, res, err);
    h5ark_value_destroy(&args);
    return rc;
}

static uint64_t buffer_bytes(const dispatch_result *res, size_t i) {
    uint64_t n = 0;
    h5ark_value_to_uint64(h5ark_value_get(h5ark_value_at(res->buffers, i), "nbytes"), &n);
    return n;
}

/* tondarray<T,1> {array} */
static int cmd_tondarray(ak_ctx *ctx, h5ark_error *err) {
    const ak_request *in = ctx->in;
    h5ark_dtype dtype;
    if (in->nparams != 2 || !h5ark_dtype_from_name(in->params[0], &dtype))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: tondarray takes <dtype,1>", in->cmd);
    ak_array a;
    if (ak_object_arg(ctx, "array", H5ARK_PDARRAY, &a, err)) return -1;
    bool same = a.dtype == dtype;
    if (dtype == H5ARK_BIGINT) /* Arkouda's client fetches a bigint's limbs one by one */
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "a bigint is downloaded as its limbs: bigint_to_uint_list, then "
                          "tondarray<uint64,1> of each");
    if (!same)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%.100s is not of dtype %s", ak_arg(in, "array"),
                          in->params[0]);
    dispatch_result res;
    if (get_object(ctx, "array", &res, err)) return -1;
    int rc = reply_range(ctx, &res, 0, buffer_bytes(&res, 0), err);
    dispatch_result_free(&res);
    return rc;
}

/* segStr-tondarray {obj, comp: offsets or values} */
static int cmd_strings_tondarray(ak_ctx *ctx, h5ark_error *err) {
    const char *comp;
    if (ak_arg_str(ctx->in, "comp", &comp, err)) return -1;
    bool offsets = strcmp(comp, "offsets") == 0;
    if (!offsets && strcmp(comp, "values") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'comp' must be offsets or values");
    dispatch_result res;
    ak_array a;
    if (ak_object_arg(ctx, "obj", H5ARK_STRINGS, &a, err) || get_object(ctx, "obj", &res, err))
        return -1;
    uint64_t nseg = buffer_bytes(&res, 0);
    int rc = offsets ? reply_range(ctx, &res, 0, nseg, err)
                     : reply_range(ctx, &res, nseg, buffer_bytes(&res, 1), err);
    dispatch_result_free(&res);
    return rc;
}

const ak_command ak_transfer_commands[] = {
    {"array", cmd_array, AK_BINARY_IN, RANKS_ZERO},
    {"arraySegString", cmd_array_strings, AK_BINARY_IN, RANKS_ZERO},
    {"tondarray", cmd_tondarray, AK_READ_ONLY | AK_BINARY_OUT, RANKS_ZERO},
    {"segStr-tondarray", cmd_strings_tondarray, AK_READ_ONLY | AK_BINARY_OUT, RANKS_ZERO},
    {0},
};
