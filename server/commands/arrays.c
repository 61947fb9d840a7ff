/* Commands that make and read arrays: create put get. */
#include "commands.h"

#include "locales.h"
#include "objects/awkward.h"
#include "objects/bigint.h"
#include "objects/pdarray.h"
#include "objects/strings.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "progress.h"
#include "registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int command_publish(command_ctx *ctx, object *obj, h5ark_error *err) {
    int rc = registry_publish(obj, arg_str(ctx, "name", NULL), err);
    int all = ranks_agree(rc, err); /* published on every rank or on none */
    if (all != 0 && rc == 0) registry_unpublish(obj);
    if (all == 0) all = reply_set(ctx, "object", object_describe(obj), err);
    object_release(obj);
    return all;
}

int command_replace(command_ctx *ctx, object *obj, const char *name, h5ark_error *err) {
    int mine = registry_replace(obj, name, err);
    int rc = ranks_agree(mine, err); /* replaced on every rank or on none */
    if (rc && mine == 0) registry_unpublish(obj);
    if (rc == 0) rc = reply_set(ctx, "object", object_describe(obj), err);
    return rc;
}

int command_publish_all(command_ctx *ctx, object **objs, const char *const *keys, size_t n,
                        const char *first_name, h5ark_error *err) {
    size_t published = 0;
    int rc = 0;
    for (; rc == 0 && published < n; published++)
        if (registry_publish(objs[published], published ? NULL : first_name, err)) rc = -1;
    if (rc) published--; /* the one that failed is not published */
    if ((rc = ranks_agree(rc, err))) {
        for (size_t i = 0; i < published; i++)
            registry_unpublish(objs[i]);
        return -1;
    }
    for (size_t i = 0; rc == 0 && keys && i < n; i++)
        rc = reply_set(ctx, keys[i], object_describe(objs[i]), err);
    return rc;
}

static int parse_dtype(command_ctx *ctx, const char *cmd, const char *def, h5ark_dtype *out,
                       h5ark_error *err) {
    const char *name = arg_str(ctx, "dtype", def);
    if (!name) return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: missing argument 'dtype'", cmd);
    if (!h5ark_dtype_from_name(name, out))
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "%s: unknown dtype '%s' (int8 int16 int32 int64 uint8 uint16 uint32 "
                          "uint64 float32 float64 bool str bigint)",
                          cmd, name);
    return 0;
}

int command_tag_arg(command_ctx *ctx, const char *cmd, h5ark_objtype objtype, h5ark_dtype dtype,
                    const char **out, h5ark_error *err) {
    static const char *const tags[] = {OBJECT_TAG_DATETIME, OBJECT_TAG_TIMEDELTA, OBJECT_TAG_IPV4};
    const char *name = arg_str(ctx, "tag", NULL);
    *out = NULL;
    if (!name) return 0;
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (strcmp(name, tags[i]) == 0) *out = tags[i];
    if (!*out)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "%s: unknown 'tag' '%s' (datetime64[ns] timedelta64[ns] ipv4)", cmd,
                          name);
    bool ok = objtype == H5ARK_PDARRAY &&
              (dtype == H5ARK_INT64 || (*out == tags[2] && dtype == H5ARK_UINT64));
    if (!ok)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s: 'tag' %s needs a pdarray of dtype %s, not %s",
                          cmd, name, *out == tags[2] ? "uint64 or int64" : "int64",
                          objtype == H5ARK_PDARRAY ? h5ark_dtype_name(dtype) : "strings");
    return 0;
}

/* The element count from `shape` (one dimension) and/or `size`; *given = false if neither. */
static int parse_size(command_ctx *ctx, const char *cmd, uint64_t *size, bool *given,
                      h5ark_error *err) {
    const h5ark_value *shape = arg_value(ctx, "shape");
    *given = false;
    if (shape) {
        if (h5ark_value_len(shape) != 1)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "%s: 'shape' must have exactly one dimension for a pdarray or "
                              "strings, got %zu",
                              cmd, h5ark_value_len(shape));
        h5ark_value_to_uint64(h5ark_value_at(shape, 0), size);
        *given = true;
    }
    if (arg_has(ctx, "size")) {
        uint64_t s = arg_uint(ctx, "size", 0);
        if (*given && s != *size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "%s: 'size' %llu disagrees with 'shape' [%llu]", cmd,
                              (unsigned long long)s, (unsigned long long)*size);
        *size = s;
        *given = true;
    }
    if (*given && *size > OBJECT_MAX_ELEMENTS)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "%s: %llu elements is more than the limit of %llu", cmd,
                          (unsigned long long)*size, (unsigned long long)OBJECT_MAX_ELEMENTS);
    return 0;
}

static void read_number(const h5ark_value *v, double def,
                        __typeof__(((fill_spec *)0)->value) *out) {
    memset(out, 0, sizeof *out);
    out->f = def;
    out->is_int = def == floor(def) && fabs(def) < 9.2e18;
    out->negative = def < 0;
    out->i = (int64_t)def;
    out->u = def < 0 ? 0 : (uint64_t)def;
    if (!v) return;
    if (v->kind == H5ARK_BOOL) {
        out->is_int = true;
        out->u = out->i = v->as.b;
        out->f = v->as.b;
        out->negative = false;
    } else if (v->kind == H5ARK_INT) {
        out->is_int = true;
        out->negative = v->as.i < 0;
        out->i = v->as.i;
        out->u = (uint64_t)v->as.i;
        out->f = (double)v->as.i;
    } else if (v->kind == H5ARK_UINT) {
        out->is_int = true;
        out->negative = false;
        out->u = v->as.u;
        out->i = (int64_t)v->as.u;
        out->f = (double)v->as.u;
    } else {
        out->is_int = false;
        out->f = v->as.f;
        out->negative = v->as.f < 0;
    }
}

static int cmd_create(command_ctx *ctx, h5ark_error *err) {
    h5ark_dtype dtype;
    fill_spec spec = {0};
    if (parse_dtype(ctx, "create", "float64", &dtype, err)) return -1;
    if (dtype == H5ARK_STRING || dtype == H5ARK_BIGINT)
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "create makes numeric arrays; use put for %s",
                          dtype == H5ARK_STRING ? "strings" : "bigint");
    const char *tag;
    if (command_tag_arg(ctx, "create", H5ARK_PDARRAY, dtype, &tag, err)) return -1;
    const char *fill = arg_str(ctx, "fill", "zeros");
    if (pdarray_fill_from_name(fill, &spec.kind))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "create: unknown fill '%s' (empty zeros ones full arange linspace "
                          "uniform randint)",
                          fill);
    static const char *const needs[][3] = {[FILL_FULL] = {"value"},
                                           [FILL_ARANGE] = {"stop"},
                                           [FILL_LINSPACE] = {"start", "stop"},
                                           [FILL_RANDINT] = {"low", "high"}};
    for (int i = 0; i < 3 && spec.kind < sizeof needs / sizeof needs[0] && needs[spec.kind][i]; i++)
        if (!arg_has(ctx, needs[spec.kind][i]))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "create %s: missing argument '%s'", fill,
                              needs[spec.kind][i]);
    read_number(arg_value(ctx, "value"), 0, &spec.value);
    read_number(arg_value(ctx, "start"), 0, &spec.start);
    read_number(arg_value(ctx, "stop"), 0, &spec.stop);
    read_number(arg_value(ctx, "step"), 1, &spec.step);
    read_number(arg_value(ctx, "low"), 0, &spec.low);
    read_number(arg_value(ctx, "high"), spec.kind == FILL_UNIFORM ? 1.0 : 0, &spec.high);
    spec.seed = arg_has(ctx, "seed") ? arg_uint(ctx, "seed", 0)
                                     : (uint64_t)time(NULL) ^ (uint64_t)clock() << 32;
    if (spec.kind == FILL_UNIFORM && !(spec.high.f > spec.low.f))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "create uniform: high must be above low");
    if (pdarray_check_fill(&spec, dtype, err)) return -1;

    uint64_t size = 0;
    bool given;
    if (parse_size(ctx, "create", &size, &given, err)) return -1;
    if (spec.kind == FILL_ARANGE) {
        uint64_t n;
        if (pdarray_arange_size(&spec, &n, err)) return -1;
        if (given && n != size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "create arange: the range has %llu elements but size is %llu",
                              (unsigned long long)n, (unsigned long long)size);
        size = n;
    } else if (!given) {
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "create: give 'size' or 'shape'");
    }
    object *obj = object_new_pdarray(dtype, size, err);
    if (!obj) return -1;
    obj->tag = tag;
    pdarray_fill(obj, &spec);
    return command_publish(ctx, obj, err);
}

static int check_buffer_names(command_ctx *ctx, const char *const *allowed, h5ark_error *err) {
    for (size_t i = 0; i < ctx->buffers->count; i++) {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(*a, ctx->buffers->items[i].name) == 0;
        if (!ok)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "put: unexpected buffer '%s'",
                              ctx->buffers->items[i].name);
    }
    for (const char *const *a = allowed; *a; a++)
        if (!h5ark_buffer_list_find(ctx->buffers, *a))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "put: missing buffer '%s'", *a);
    return 0;
}

/* The request's payload as the buffers of an awkward array. */
typedef struct {
    const h5ark_payload *payload;
    const h5ark_buffer_list *buffers;
} payload_source;

static int read_payload(const void *ctx, size_t i, uint64_t offset, void *dst, uint64_t n) {
    const payload_source *ps = ctx;
    return h5ark_payload_copy(ps->payload, ps->buffers->items[i].offset + offset, dst, n);
}

/* put objtype awkward: form + length + the buffers by name (awkward.h checks them all). */
static int put_awkward(command_ctx *ctx, h5ark_error *err) {
    static const char *const not_here[] = {"dtype", "shape", "size", "tag", "max_bits", NULL};
    for (const char *const *a = not_here; *a; a++)
        if (arg_has(ctx, *a))
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "put: '%s' does not apply to objtype awkward (give 'form' and "
                              "'length')",
                              *a);
    if (!arg_has(ctx, "form") || !arg_has(ctx, "length"))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "put: objtype awkward needs 'form' (JSON) and 'length'");
    const char *form = arg_str(ctx, "form", "");
    size_t n = ctx->buffers->count;
    const char **names = calloc(n ? n : 1, sizeof *names);
    uint64_t *nbytes = calloc(n ? n : 1, sizeof *nbytes);
    uint64_t *offsets = calloc(n ? n : 1, sizeof *offsets);
    int rc =
        names && nbytes && offsets ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) {
        free(names);
        free(nbytes);
        free(offsets);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        names[i] = ctx->buffers->items[i].name;
        nbytes[i] = ctx->buffers->items[i].nbytes;
        offsets[i] = ctx->buffers->items[i].offset;
    }
    payload_source ps = {ctx->payload, ctx->buffers};
    /* several ranks: rank 0 alone has the payload, and sends each rank its shards */
    ak_source src = {n, names, nbytes, read_payload, &ps, true, ctx->payload, offsets};
    object *obj = awkward_build(form, strlen(form), arg_uint(ctx, "length", 0), &src, err);
    free(names);
    free(nbytes);
    free(offsets);
    if (!obj) return -1;
    return command_publish(ctx, obj, err);
}

/* put of strings given as `values` alone (strings_segments false): each NUL ends a string
 * (none holds one); `size`, when given, must be how many there are. */
static int put_strings_at_nuls(command_ctx *ctx, uint64_t size, bool given, h5ark_error *err) {
    static const char *const names[] = {"values", NULL};
    if (check_buffer_names(ctx, names, err)) return -1;
    uint64_t n = 0;
    object *obj =
        strings_from_nuls(ctx->payload, h5ark_buffer_list_find(ctx->buffers, "values"), &n, err);
    if (obj && given && n != size) {
        object_release(obj);
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "put: 'values' holds %llu strings (NULs), not the %llu given",
                          (unsigned long long)n, (unsigned long long)size);
    }
    return obj ? command_publish(ctx, obj, err) : -1;
}

static int cmd_put(command_ctx *ctx, h5ark_error *err) {
    h5ark_objtype objtype;
    const char *type = arg_str(ctx, "objtype", "pdarray");
    if (h5ark_objtype_from_name(type, &objtype) && objtype == H5ARK_AWKWARD)
        return put_awkward(ctx, err);
    if (!h5ark_objtype_from_name(type, &objtype) ||
        (objtype != H5ARK_PDARRAY && objtype != H5ARK_STRINGS))
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "put: objtype must be pdarray, strings or awkward, not '%s'", type);
    uint64_t size;
    bool given;
    if (parse_size(ctx, "put", &size, &given, err)) return -1;
    /* strings_segments false: Strings as `values` alone, as tohdf writes them so */
    bool at_nuls = !arg_bool(ctx, "strings_segments", true);
    if (arg_has(ctx, "strings_segments") && objtype != H5ARK_STRINGS)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "put: 'strings_segments' applies to strings only");
    if (!given && !at_nuls)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "put: missing argument 'shape'");
    object *obj;
    h5ark_dtype dtype;
    const char *tag;
    if (parse_dtype(ctx, "put", objtype == H5ARK_STRINGS ? "str" : NULL, &dtype, err) ||
        command_tag_arg(ctx, "put", objtype, dtype, &tag, err))
        return -1;
    if (arg_has(ctx, "max_bits") && dtype != H5ARK_BIGINT)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "put: 'max_bits' applies to dtype bigint only");
    /* the payload's bytes, as the locales copy them into the shards */
    progress_start(progress_here(), PROGRESS_BYTES, ctx->payload->total);
    if (objtype == H5ARK_STRINGS) {
        if (dtype != H5ARK_STRING)
            return h5ark_fail(err, H5ARK_TYPE_ERROR, "put: strings have dtype str, not %s",
                              h5ark_dtype_name(dtype));
        static const char *const names[] = {"segments", "values", NULL};
        if (at_nuls) return put_strings_at_nuls(ctx, size, given, err);
        if (check_buffer_names(ctx, names, err)) return -1;
        obj = strings_from_payload(size, ctx->payload,
                                   h5ark_buffer_list_find(ctx->buffers, "segments"),
                                   h5ark_buffer_list_find(ctx->buffers, "values"), err);
        if (!obj) return -1;
    } else if (dtype == H5ARK_BIGINT) {
        obj = bigint_from_payload(size, arg_int(ctx, "max_bits", -1), ctx->payload, ctx->buffers,
                                  err);
        if (!obj) return -1;
    } else {
        if (dtype == H5ARK_STRING)
            return h5ark_fail(err, H5ARK_TYPE_ERROR, "put: dtype str needs objtype strings");
        static const char *const names[] = {"values", NULL};
        if (check_buffer_names(ctx, names, err)) return -1;
        const h5ark_buffer *buf = h5ark_buffer_list_find(ctx->buffers, "values");
        if (buf->nbytes != size * h5ark_dtype_size(dtype))
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "put: buffer 'values' has %llu bytes but %llu %s elements need %llu",
                              (unsigned long long)buf->nbytes, (unsigned long long)size,
                              h5ark_dtype_name(dtype),
                              (unsigned long long)(size * h5ark_dtype_size(dtype)));
        obj = object_new_pdarray(dtype, size, err);
        if (!obj) return -1;
        if (pdarray_copy_in(obj, ctx->payload, buf, err)) {
            object_release(obj);
            return -1;
        }
        obj->tag = tag;
    }
    return command_publish(ctx, obj, err);
}

/* The part [lo, hi) of elements [from, to) that shard sh holds; false when none. */
static bool shard_part(const shard *sh, uint64_t from, uint64_t to, uint64_t *lo, uint64_t *hi) {
    *lo = from > sh->start ? from : sh->start;
    *hi = to < sh->start + sh->count ? to : sh->start + sh->count;
    return *lo < *hi;
}

/* The pieces of a reply buffer, in order, each within one shard and held by its rank. */
typedef struct {
    spmd_piece *v;
    size_t n, cap;
} piece_list;

/* Elements [lo, hi) of shard b of a, as the next piece (readable where b is local). */
static int add_piece(piece_list *ps, const darray *a, int b, uint64_t lo, uint64_t hi,
                     h5ark_error *err) {
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? 2 * ps->cap : (size_t)a->nshards + 1;
        spmd_piece *v = realloc(ps->v, cap * sizeof *v);
        if (!v) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        ps->v = v;
        ps->cap = cap;
    }
    const shard *sh = &a->shards[b];
    ps->v[ps->n++] = (spmd_piece){
        locales_rank_of(b),
        locales_is_local(b) ? (const char *)sh->data + (lo - sh->start) * a->itemsize : NULL,
        (hi - lo) * a->itemsize};
    return 0;
}

/* Elements [from, to) of a darray as pieces, a shard's part each. */
static int range_pieces(piece_list *ps, const darray *a, uint64_t from, uint64_t to,
                        h5ark_error *err) {
    for (int b = 0; b < a->nshards && from < to; b++) {
        uint64_t lo, hi;
        if (shard_part(&a->shards[b], from, to, &lo, &hi) && add_piece(ps, a, b, lo, hi, err))
            return -1;
    }
    return 0;
}

/* A new object *hold whose scratch memory (reserved against --max-memory) takes `bytes`,
 * for pieces a reply sends that no shard holds. */
static int hold_scratch(const darray *a, uint64_t bytes, object **hold, h5ark_error *err) {
    *hold = object_new_composite(H5ARK_PDARRAY, a->dtype, 0, err);
    if (!*hold || registry_reserve(bytes, err)) return -1;
    (*hold)->scratch_reserved = bytes;
    if (!((*hold)->scratch = malloc(bytes ? bytes : 1)))
        return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory gathering %llu bytes",
                         (unsigned long long)bytes);
    return 0;
}

/* The pieces as reply spans on rank 0, in order: its own straight from shard memory, the
 * other ranks' gathered into the scratch memory of an object the reply holds until it is
 * sent (a reply is one ZeroMQ message, delivered whole, so every piece must be on rank 0
 * before any leaves: docs/DESIGN.md, "get at R > 1"). rc: this rank's outcome so far; every
 * rank comes here whatever it is. Frees the pieces. */
static int reply_pieces(command_ctx *ctx, const darray *a, piece_list *ps, int rc,
                        h5ark_error *err) {
    object *hold = NULL;
    uint64_t bytes = spmd_pieces_recv_bytes(ps->v, ps->n);
    if (rc == 0 && bytes) rc = hold_scratch(a, bytes, &hold, err);
    size_t n = ps->n;
    rc = spmd_pieces_gather(rc, ps->v, &n, hold ? hold->scratch : NULL, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = reply_buffer_span(ctx, ps->v[i].ptr, ps->v[i].len, err);
    if (rc == 0 && hold) rc = reply_hold(ctx, hold, err);
    object_release(hold);
    free(ps->v);
    *ps = (piece_list){0};
    return rc;
}

/* Reply spans for elements [from, to) of a darray (rc as reply_pieces). */
static int add_range(command_ctx *ctx, const darray *a, uint64_t from, uint64_t to, int rc,
                     h5ark_error *err) {
    piece_list ps = {0};
    if (rc == 0) rc = range_pieces(&ps, a, from, to, err);
    return reply_pieces(ctx, a, &ps, rc, err);
}

/* The byte offsets where strings i[0] and i[1] start, each from the rank that holds it. */
static int strings_offsets(const object *s, const uint64_t i[2], uint64_t out[2],
                           h5ark_error *err) {
    for (int k = 0; k < 2; k++)
        out[k] = i[k] >= s->size                                        ? s->values->size
                 : locales_is_local(darray_shard_of(s->segments, i[k])) ? strings_offset(s, i[k])
                                                                        : 0;
    return ranks_allreduce_u64(out, 2, RANKS_MAX, err);
}

/* This rank's pieces of a slice's offsets [from, to) (range_pieces', a shard's part each),
 * rebased to its first string: each locale copies its shard's part less `base` into the
 * scratch of *hold, where the piece then points. */
typedef struct {
    const darray *segments;
    piece_list *ps;
    uint64_t from, to, base;
    size_t *piece; /* per shard: its piece, or SIZE_MAX */
    uint64_t *at;  /* per shard: where its part goes in out, in elements */
    int64_t *out;  /* this rank's parts, back to back */
} rebase_job;

static void rebase_shard(int locale, void *ctx) {
    rebase_job *job = ctx;
    size_t k = job->piece[locale];
    if (k == SIZE_MAX) return;
    const int64_t *in = job->ps->v[k].ptr;
    int64_t *out = job->out + job->at[locale];
    for (uint64_t i = 0; i < job->ps->v[k].len / 8; i++)
        out[i] = in[i] - (int64_t)job->base;
    job->ps->v[k].ptr = out;
}

static int rebase_pieces(const darray *segments, uint64_t from, uint64_t to, uint64_t base,
                         piece_list *ps, object **hold, h5ark_error *err) {
    int L = segments->nshards;
    rebase_job job = {segments,
                      ps,
                      from,
                      to,
                      base,
                      malloc((size_t)L * sizeof *job.piece),
                      calloc((size_t)L, sizeof *job.at)};
    uint64_t elems = 0;
    int rc = job.piece && job.at ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (int b = 0, k = 0; rc == 0 && b < L; b++) {
        uint64_t lo, hi;
        job.piece[b] = SIZE_MAX;
        if (!shard_part(&segments->shards[b], from, to, &lo, &hi)) continue;
        if (locales_is_local(b)) {
            job.piece[b] = (size_t)k;
            job.at[b] = elems;
            elems += hi - lo;
        }
        k++;
    }
    if (rc == 0) rc = hold_scratch(segments, elems * 8, hold, err);
    if (rc == 0) {
        job.out = (*hold)->scratch;
        locales_run(rebase_shard, &job);
    }
    free(job.piece);
    free(job.at);
    return rc;
}

/* Strings [from, to) as reply buffers `name` (offsets, relative to the first string sent)
 * and `vname` (bytes). rc as reply_pieces. */
static int add_strings(command_ctx *ctx, object *obj, const char *name, const char *vname,
                       uint64_t from, uint64_t to, int rc, h5ark_error *err) {
    uint64_t idx[2] = {from, to}, b[2] = {0, 0};
    piece_list ps = {0};
    object *rebased = NULL;
    /* a collective: every rank takes part whatever its outcome so far */
    if (strings_offsets(obj, idx, b, rc ? &(h5ark_error){0} : err) && rc == 0) rc = -1;
    if (rc == 0) rc = range_pieces(&ps, obj->segments, from, to, err);
    if (rc == 0 && b[0] != 0) rc = rebase_pieces(obj->segments, from, to, b[0], &ps, &rebased, err);
    if (rc == 0) rc = reply_buffer_begin(ctx, name, (to - from) * 8, rebased ? rebased : obj, err);
    rc = reply_pieces(ctx, obj->segments, &ps, rc, err);
    object_release(rebased);
    if (rc == 0) rc = reply_buffer_begin(ctx, vname, b[1] - b[0], obj, err);
    return add_range(ctx, obj->values, b[0], b[1], rc, err);
}

/* Reply buffers of elements [from, to) of obj, named "<prefix><buffer>": `values` for
 * arrays, `segments` + `values` for strings, `Limb_i` for bigint, and each component's
 * buffers under "<prefix><component>/" for composites (whole objects only). */
static int add_object_buffers(command_ctx *ctx, object *obj, const char *prefix, uint64_t from,
                              uint64_t to, h5ark_error *err) {
    char name[1024];
    if (obj->values && obj->objtype != H5ARK_STRINGS) { /* pdarray, arrayview */
        snprintf(name, sizeof name, "%svalues", prefix);
        int rc = reply_buffer_begin(ctx, name, (to - from) * obj->values->itemsize, obj, err);
        return add_range(ctx, obj->values, from, to, rc, err);
    }
    if (obj->objtype == H5ARK_AWKWARD) { /* the buffers under their own names, as put takes */
        if (from != 0 || to != obj->size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "get: an awkward array is sent whole (no 'start'/'stop')");
        for (size_t i = 0; i < obj->ncomponents; i++) {
            const darray *a = obj->components[i].obj->values;
            snprintf(name, sizeof name, "%s%s", prefix, obj->components[i].name);
            int rc = reply_buffer_begin(ctx, name, a->size * a->itemsize, obj, err);
            if (add_range(ctx, a, 0, a->size, rc, err)) return -1;
        }
        return 0;
    }
    if (obj->objtype == H5ARK_STRINGS) {
        char vname[1024];
        snprintf(name, sizeof name, "%ssegments", prefix);
        snprintf(vname, sizeof vname, "%svalues", prefix);
        return add_strings(ctx, obj, name, vname, from, to, 0, err);
    }
    if (obj->dtype == H5ARK_BIGINT) { /* limbs are the array's own buffers */
        for (size_t i = 0; i < obj->ncomponents; i++) {
            object *limb = obj->components[i].obj;
            snprintf(name, sizeof name, "%s%s", prefix, obj->components[i].name);
            int rc = reply_buffer_begin(ctx, name, (to - from) * 8, limb, err);
            if (add_range(ctx, limb->values, from, to, rc, err)) return -1;
        }
        return 0;
    }
    if (from != 0 || to != obj->size)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "get: element ranges apply to pdarray, strings and arrayview, not "
                          "to a %s",
                          h5ark_objtype_name(obj->objtype));
    for (size_t i = 0; i < obj->ncomponents; i++) {
        object *c = obj->components[i].obj;
        snprintf(name, sizeof name, "%s%s/", prefix, obj->components[i].name);
        if (add_object_buffers(ctx, c, name, 0, c->size, err)) return -1;
    }
    return 0;
}

/* The run of consecutive rows at entry *i of `rows` (n entries): its first row and its length;
 * *i moves past it. */
static uint64_t next_run(const h5ark_value *rows, size_t n, size_t *i, uint64_t *first) {
    uint64_t next;
    *first = 0;
    h5ark_value_to_uint64(h5ark_value_at(rows, *i), first);
    size_t j = *i + 1;
    while (j < n && h5ark_value_to_uint64(h5ark_value_at(rows, j), &next) &&
           next == *first + (j - *i))
        j++;
    uint64_t len = j - *i;
    *i = j;
    return len;
}

/* get with `rows`: those rows of a pdarray (elements) or an arrayview (first-axis rows), in
 * the order given, sent straight from the shards (a run of consecutive rows is one piece a
 * shard it crosses). */
static int get_rows(command_ctx *ctx, object *obj, const char *name, uint64_t width, uint64_t nrows,
                    h5ark_error *err) {
    const h5ark_value *rows = arg_value(ctx, "rows");
    if ((obj->objtype != H5ARK_PDARRAY && obj->objtype != H5ARK_ARRAYVIEW) ||
        obj->dtype == H5ARK_BIGINT || !obj->values)
        return h5ark_fail(err, H5ARK_TYPE_ERROR,
                          "get: 'rows' selects rows of a pdarray or an arrayview, not of a %s",
                          h5ark_objtype_name(obj->objtype));
    if (arg_value(ctx, "start") || arg_value(ctx, "stop"))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "get: give 'rows' or 'start'/'stop', not both");
    size_t n = h5ark_value_len(rows);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = 0;
        h5ark_value_to_uint64(h5ark_value_at(rows, i), &r);
        if (r >= nrows)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "get: row %llu (entry %zu of 'rows') is out of range for the %llu "
                              "rows of '%s'",
                              (unsigned long long)r, i, (unsigned long long)nrows, name);
    }
    const darray *a = obj->values;
    int rc = 0;
    if (reply_set(ctx, "object", object_describe_as(obj, name), err) ||
        reply_set(ctx, "rows", h5ark_value_uint(n), err) ||
        reply_buffer_begin(ctx, "values", n * width * a->itemsize, obj, err))
        rc = -1;
    piece_list ps = {0};
    for (size_t i = 0; rc == 0 && i < n;) {
        uint64_t first, len = next_run(rows, n, &i, &first);
        rc = range_pieces(&ps, a, first * width, (first + len) * width, err);
    }
    return reply_pieces(ctx, a, &ps, rc, err);
}

static int cmd_get(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "name", "");
    object *obj = registry_get(name, err);
    if (!obj) return -1;
    int rc = -1;
    /* an arrayview's ranges and rows are along its first axis */
    bool view = obj->objtype == H5ARK_ARRAYVIEW && obj->ndim > 1;
    uint64_t width = 1;
    for (unsigned i = 1; view && i < obj->ndim; i++)
        width *= obj->shape[i];
    uint64_t nrows = view ? obj->shape[0] : obj->size;
    if (arg_value(ctx, "rows")) {
        rc = get_rows(ctx, obj, name, width, nrows, err);
        goto out;
    }
    uint64_t from = arg_uint(ctx, "start", 0), to = arg_uint(ctx, "stop", nrows);
    if (from > to || to > nrows) {
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "get: range [%llu, %llu) is not within the %llu %s of '%s'",
                   (unsigned long long)from, (unsigned long long)to, (unsigned long long)nrows,
                   view ? "rows" : "elements", name);
        goto out;
    }
    if (reply_set(ctx, "object", object_describe_as(obj, name), err) ||
        reply_set(ctx, "start", h5ark_value_uint(from), err) ||
        reply_set(ctx, "stop", h5ark_value_uint(to), err))
        goto out;
    rc = add_object_buffers(ctx, obj, "", from * width, to * width, err);
out:
    object_release(obj);
    return rc ? -1 : 0;
}

const command_def array_commands[] = {
    {"create",
     cmd_create,
     {{"dtype", ARG_STR, false},
      {"shape", ARG_UINT_ARRAY, false},
      {"size", ARG_UINT, false},
      {"fill", ARG_STR, false},
      {"value", ARG_SCALAR, false},
      {"start", ARG_NUMBER, false},
      {"stop", ARG_NUMBER, false},
      {"step", ARG_NUMBER, false},
      {"low", ARG_NUMBER, false},
      {"high", ARG_NUMBER, false},
      {"seed", ARG_UINT, false},
      {"tag", ARG_STR, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"put",
     cmd_put,
     {{"objtype", ARG_STR, false},
      {"dtype", ARG_STR, false},
      {"shape", ARG_UINT_ARRAY, false},
      {"size", ARG_UINT, false},
      {"max_bits", ARG_INT, false},
      {"tag", ARG_STR, false},
      {"strings_segments", ARG_BOOL, false},
      {"name", ARG_STR, false},
      {"form", ARG_STR, false},
      {"length", ARG_UINT, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"get",
     cmd_get,
     {{"name", ARG_STR, true},
      {"start", ARG_UINT, false},
      {"stop", ARG_UINT, false},
      {"rows", ARG_UINT_ARRAY, false},
      {0}},
     .read_only = true,
     .ranks = RANKS_EVERY},
    {0},
};
