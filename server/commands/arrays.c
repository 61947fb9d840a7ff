/* Commands that make and read arrays: create put get. */
#include "commands.h"

#include "locales.h"
#include "objects/awkward.h"
#include "objects/bigint.h"
#include "objects/pdarray.h"
#include "objects/strings.h"
#include "dist/ranks.h"
#include "progress.h"
#include "registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Publish a freshly built object under args.name (or a generated name) and describe it.
 * With several ranks, published on every rank or on none. */
static int publish_and_describe(command_ctx *ctx, object *obj, h5ark_error *err) {
    int rc = registry_publish(obj, arg_str(ctx, "name", NULL), err);
    if (ranks_call_seq()) {
        int all = ranks_agree(rc, err);
        if (all != 0 && rc == 0) registry_remove(obj->name, NULL);
        rc = all;
    }
    if (rc == 0) rc = reply_set(ctx, "object", object_describe(obj), err);
    object_release(obj);
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

/* The optional `tag` for a pdarray of `dtype`: one of the OBJECT_TAG_* strings or NULL. */
static int parse_tag(command_ctx *ctx, const char *cmd, h5ark_objtype objtype, h5ark_dtype dtype,
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
    if (parse_tag(ctx, "create", H5ARK_PDARRAY, dtype, &tag, err)) return -1;
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
    return publish_and_describe(ctx, obj, err);
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
    if (ranks_count() > 1) rc = ranks_agree(rc, err);
    if (rc) {
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
    return publish_and_describe(ctx, obj, err);
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
    if (!given) return h5ark_fail(err, H5ARK_BAD_REQUEST, "put: missing argument 'shape'");
    object *obj;
    h5ark_dtype dtype;
    const char *tag;
    if (parse_dtype(ctx, "put", objtype == H5ARK_STRINGS ? "str" : NULL, &dtype, err) ||
        parse_tag(ctx, "put", objtype, dtype, &tag, err))
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
    return publish_and_describe(ctx, obj, err);
}

/* The part [lo, hi) of elements [from, to) that shard sh holds; false when none. */
static bool shard_part(const shard *sh, uint64_t from, uint64_t to, uint64_t *lo, uint64_t *hi) {
    *lo = from > sh->start ? from : sh->start;
    *hi = to < sh->start + sh->count ? to : sh->start + sh->count;
    return *lo < *hi;
}

/* Reply spans for elements [from, to) of a darray, straight from shard memory. */
static int add_spans(command_ctx *ctx, const darray *a, uint64_t from, uint64_t to,
                     h5ark_error *err) {
    for (int b = 0; b < a->nshards && from < to; b++) {
        const shard *sh = &a->shards[b];
        uint64_t lo, hi;
        if (!shard_part(sh, from, to, &lo, &hi)) continue;
        if (reply_buffer_span(ctx, (const char *)sh->data + (lo - sh->start) * a->itemsize,
                              (hi - lo) * a->itemsize, err))
            return -1;
    }
    return 0;
}

/* Elements [from, to) of a darray over the ranks: each rank's bytes of them in counts
 * (zeroed by the caller), and this rank's own parts, in shard order, in mine (nshards room). */
static void range_parts(const darray *a, uint64_t from, uint64_t to, uint64_t *counts,
                        h5ark_span *mine, size_t *nmine) {
    *nmine = 0;
    for (int b = 0; b < a->nshards; b++) {
        const shard *sh = &a->shards[b];
        uint64_t lo, hi;
        if (!shard_part(sh, from, to, &lo, &hi)) continue;
        counts[locales_rank_of(b)] += (hi - lo) * a->itemsize;
        if (locales_is_local(b))
            mine[(*nmine)++] = (h5ark_span){(const char *)sh->data + (lo - sh->start) * a->itemsize,
                                            (hi - lo) * a->itemsize};
    }
}

/* Rank 0: a new object *hold whose scratch memory (reserved against --max-memory) takes
 * `bytes` gathered from the other ranks. */
static int hold_scratch(const darray *a, uint64_t bytes, object **hold, h5ark_error *err) {
    *hold = object_new_composite(H5ARK_PDARRAY, a->dtype, 0, err);
    if (!*hold || registry_reserve(bytes, err)) return -1;
    (*hold)->scratch_reserved = bytes;
    if (!((*hold)->scratch = malloc(bytes ? bytes : 1)))
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank 0: out of memory gathering %llu bytes",
                          (unsigned long long)bytes);
    return 0;
}

/* With several ranks: elements [from, to) of a darray, as reply spans on rank 0. Each rank sends
 * rank 0 its shards' part and rank 0 keeps what arrives, in shard order, in the scratch memory
 * of an object the reply holds until it is sent: a reply is one ZeroMQ message, delivered
 * whole, so every part must be on rank 0 before any leaves (docs/DESIGN.md, "get at
 * R > 1"). */
static int add_spans_ranks(command_ctx *ctx, const darray *a, uint64_t from, uint64_t to,
                           h5ark_error *err) {
    int R = ranks_count(), L = a->nshards, rc = 0;
    uint64_t *counts = calloc((size_t)R, sizeof *counts);
    h5ark_span *mine = calloc((size_t)L, sizeof *mine);
    size_t nmine = 0;
    if (!counts || !mine) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) {
        range_parts(a, from, to, counts, mine, &nmine);
        counts[0] = 0; /* rank 0 replies from its own shards */
        if (ranks_self() == 0) nmine = 0;
    }
    uint64_t remote = 0;
    for (int r = 1; counts && r < R; r++)
        remote += counts[r];
    /* rank 0 makes room for what it gathers; every rank learns whether it could */
    object *hold = NULL;
    if (rc == 0 && ranks_self() == 0 && remote) rc = hold_scratch(a, remote, &hold, err);
    rc = ranks_agree(rc, err);
    if (rc == 0 && remote)
        rc = ranks_gatherv(mine, nmine, hold ? hold->scratch : NULL, counts, err);
    if (rc == 0 && ranks_self() == 0) {
        /* rank 0's shards from their memory, the others' from what arrived, in order */
        uint64_t off = 0;
        for (int b = 0; rc == 0 && b < L && from < to; b++) {
            const shard *sh = &a->shards[b];
            uint64_t lo, hi;
            if (!shard_part(sh, from, to, &lo, &hi)) continue;
            uint64_t len = (hi - lo) * a->itemsize;
            if (locales_is_local(b)) {
                rc = reply_buffer_span(ctx, (const char *)sh->data + (lo - sh->start) * a->itemsize,
                                       len, err);
            } else {
                rc = reply_buffer_span(ctx, (const char *)hold->scratch + off, len, err);
                off += len;
            }
        }
        /* the scratch must outlive the reply: hold it as the reply holds `owner` */
        if (rc == 0 && hold) rc = reply_hold(ctx, hold, err);
    }
    object_release(hold);
    free(counts);
    free(mine);
    return rc;
}

/* With several ranks: elements [from, to) of a darray gathered on rank 0, back to back, in
 * the scratch memory of a new object *hold (NULL on the other ranks). */
static int gather_range(const darray *a, uint64_t from, uint64_t to, object **hold,
                        h5ark_error *err) {
    int R = ranks_count(), L = a->nshards, rc = 0;
    uint64_t *counts = calloc((size_t)R, sizeof *counts), total = (to - from) * a->itemsize;
    h5ark_span *mine = calloc((size_t)L, sizeof *mine);
    size_t nmine = 0;
    *hold = NULL;
    if (!counts || !mine) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) range_parts(a, from, to, counts, mine, &nmine);
    if (rc == 0 && ranks_self() == 0) rc = hold_scratch(a, total, hold, err);
    rc = ranks_agree(rc, err);
    if (rc == 0 && total)
        rc = ranks_gatherv(mine, nmine, *hold ? (*hold)->scratch : NULL, counts, err);
    if (rc != 0) {
        object_release(*hold);
        *hold = NULL;
    }
    free(counts);
    free(mine);
    return rc;
}

/* With several ranks: the byte offsets where strings i[0] and i[1] start, each from the rank
 * that holds it. */
static int strings_offsets_ranks(const object *s, const uint64_t i[2], uint64_t out[2],
                                 h5ark_error *err) {
    for (int k = 0; k < 2; k++)
        out[k] = i[k] >= s->size                                        ? s->values->size
                 : locales_is_local(darray_shard_of(s->segments, i[k])) ? strings_offset(s, i[k])
                                                                        : 0;
    return ranks_allreduce_u64(out, 2, RANKS_MAX, err);
}

/* With several ranks: strings [from, to) as reply buffers, gathered on rank 0 (the segments
 * rebased there to the first string sent). */
static int add_strings_ranks(command_ctx *ctx, object *obj, const char *name, const char *vname,
                             uint64_t from, uint64_t to, h5ark_error *err) {
    uint64_t idx[2] = {from, to}, b[2];
    object *hold = NULL;
    if (strings_offsets_ranks(obj, idx, b, err) ||
        gather_range(obj->segments, from, to, &hold, err))
        return -1;
    int rc = 0;
    if (hold) {
        int64_t *off = hold->scratch;
        for (uint64_t i = 0; i < to - from; i++)
            off[i] -= (int64_t)b[0];
    }
    rc = reply_buffer_begin(ctx, name, (to - from) * 8, hold, err);
    if (rc == 0 && hold) rc = reply_buffer_span(ctx, hold->scratch, (to - from) * 8, err);
    if (rc == 0) rc = reply_buffer_begin(ctx, vname, b[1] - b[0], obj, err);
    /* every rank reaches the values' gather: the failures above are rank 0's, local */
    int rc2 = add_spans_ranks(ctx, obj->values, b[0], b[1], err);
    object_release(hold);
    return rc ? rc : rc2;
}

typedef struct {
    const object *src;
    object *dst;
    uint64_t from, base;
} rebase_job;

/* dst[i] = segments[from + i] - base: a slice's offsets relative to its first string. */
static void rebase_shard(int locale, void *ctx) {
    rebase_job *job = ctx;
    shard *sh = &job->dst->values->shards[locale];
    int64_t *out = sh->data;
    for (uint64_t i = 0; i < sh->count; i++)
        out[i] = (int64_t)(strings_offset(job->src, job->from + sh->start + i) - job->base);
}

/* Reply buffers of elements [from, to) of obj, named "<prefix><buffer>": `values` for
 * arrays, `segments` + `values` for strings, `Limb_i` for bigint, and each component's
 * buffers under "<prefix><component>/" for composites (whole objects only). */
static int add_object_buffers(command_ctx *ctx, object *obj, const char *prefix, uint64_t from,
                              uint64_t to, h5ark_error *err) {
    char name[1024];
    if (obj->values && obj->objtype != H5ARK_STRINGS) { /* pdarray, arrayview */
        snprintf(name, sizeof name, "%svalues", prefix);
        if (reply_buffer_begin(ctx, name, (to - from) * obj->values->itemsize, obj, err)) return -1;
        if (ranks_count() > 1) return add_spans_ranks(ctx, obj->values, from, to, err);
        return add_spans(ctx, obj->values, from, to, err);
    }
    if (obj->objtype == H5ARK_AWKWARD) { /* the buffers under their own names, as put takes */
        if (from != 0 || to != obj->size)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "get: an awkward array is sent whole (no 'start'/'stop')");
        for (size_t i = 0; i < obj->ncomponents; i++) {
            const darray *a = obj->components[i].obj->values;
            snprintf(name, sizeof name, "%s%s", prefix, obj->components[i].name);
            if (reply_buffer_begin(ctx, name, a->size * a->itemsize, obj, err) ||
                (ranks_count() > 1 ? add_spans_ranks(ctx, a, 0, a->size, err)
                                   : add_spans(ctx, a, 0, a->size, err)))
                return -1;
        }
        return 0;
    }
    if (ranks_count() > 1 && obj->objtype == H5ARK_STRINGS) {
        char vname[1024];
        snprintf(name, sizeof name, "%ssegments", prefix);
        snprintf(vname, sizeof vname, "%svalues", prefix);
        return add_strings_ranks(ctx, obj, name, vname, from, to, err);
    }
    /* several ranks: a composite's components go through the paths above */
    if (obj->objtype == H5ARK_STRINGS) {
        uint64_t b0 = strings_offset(obj, from), b1 = strings_offset(obj, to);
        object *seg = obj;
        if (from != 0) { /* offsets must be relative to the first string sent */
            seg = object_new_pdarray(H5ARK_INT64, to - from, err);
            if (!seg) return -1;
            rebase_job job = {obj, seg, from, b0};
            locales_run(rebase_shard, &job);
        }
        const darray *segments = seg == obj ? obj->segments : seg->values;
        uint64_t s0 = seg == obj ? from : 0, s1 = seg == obj ? to : to - from;
        char vname[1024];
        snprintf(name, sizeof name, "%ssegments", prefix);
        snprintf(vname, sizeof vname, "%svalues", prefix);
        int rc = reply_buffer_begin(ctx, name, (to - from) * 8, seg, err) ||
                 add_spans(ctx, segments, s0, s1, err) ||
                 reply_buffer_begin(ctx, vname, b1 - b0, obj, err) ||
                 add_spans(ctx, obj->values, b0, b1, err);
        if (seg != obj) object_release(seg);
        return rc ? -1 : 0;
    }
    if (obj->dtype == H5ARK_BIGINT) { /* limbs are the array's own buffers */
        for (size_t i = 0; i < obj->ncomponents; i++) {
            object *limb = obj->components[i].obj;
            snprintf(name, sizeof name, "%s%s", prefix, obj->components[i].name);
            if (reply_buffer_begin(ctx, name, (to - from) * 8, limb, err) ||
                (ranks_count() > 1 ? add_spans_ranks(ctx, limb->values, from, to, err)
                                   : add_spans(ctx, limb->values, from, to, err)))
                return -1;
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

/* Each piece of the runs of `rows` in order: a run's part within one shard (its shard *b
 * and elements [*lo, *hi)); false after the last. Start from {rows, n}. */
typedef struct {
    const h5ark_value *rows;
    size_t n, i;
    uint64_t from, to;
    int b; /* the next shard to look at in the current run; nshards: take the next run */
    bool started;
} run_pieces;

static bool next_piece(run_pieces *p, const darray *a, uint64_t width, int *b, uint64_t *lo,
                       uint64_t *hi) {
    for (;;) {
        if (!p->started || p->b >= a->nshards) {
            if (p->i >= p->n) return false;
            uint64_t first, len = next_run(p->rows, p->n, &p->i, &first);
            p->from = first * width, p->to = (first + len) * width;
            p->b = 0, p->started = true;
        }
        while (p->b < a->nshards) {
            int at = p->b++;
            if (shard_part(&a->shards[at], p->from, p->to, lo, hi)) {
                *b = at;
                return true;
            }
        }
    }
}

/* With several ranks: the rows' elements (runs of `width` elements) as reply spans on rank 0,
 * in the order given. Every rank sends rank 0 its pieces of the runs, in that order, as one
 * stream; rank 0 takes its own pieces from shard memory and each other rank's from where its
 * stream arrived, so the reply is the one R = 1 gives. */
static int add_rows_ranks(command_ctx *ctx, const darray *a, const h5ark_value *rows, size_t n,
                          uint64_t width, h5ark_error *err) {
    int R = ranks_count(), rc = 0;
    bool zero = ranks_self() == 0;
    uint64_t *counts = calloc((size_t)R, sizeof *counts);
    uint64_t *cursor = calloc((size_t)R, sizeof *cursor);
    h5ark_span *mine = NULL;
    size_t nmine = 0, room = 0;
    if (!counts || !cursor) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    /* each piece: a run's part within one shard; rank 0 sends none (it replies from its own) */
    run_pieces pieces = {rows, n};
    int b;
    uint64_t lo, hi;
    while (rc == 0 && next_piece(&pieces, a, width, &b, &lo, &hi)) {
        const shard *sh = &a->shards[b];
        int r = locales_rank_of(b);
        if (r == 0) continue;
        counts[r] += (hi - lo) * a->itemsize;
        if (!locales_is_local(b)) continue;
        if (nmine == room) {
            room = room ? 2 * room : 64;
            h5ark_span *more = realloc(mine, room * sizeof *mine);
            if (!more) {
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
                break;
            }
            mine = more;
        }
        mine[nmine++] = (h5ark_span){(const char *)sh->data + (lo - sh->start) * a->itemsize,
                                     (hi - lo) * a->itemsize};
    }
    uint64_t remote = 0;
    for (int r = 1; counts && r < R; r++) {
        cursor[r] = remote; /* where rank r's stream starts in the scratch */
        remote += counts[r];
    }
    object *hold = NULL;
    if (rc == 0 && zero && remote) rc = hold_scratch(a, remote, &hold, err);
    rc = ranks_agree(rc, err);
    if (rc == 0 && remote)
        rc = ranks_gatherv(mine, nmine, hold ? hold->scratch : NULL, counts, err);
    pieces = (run_pieces){rows, n};
    while (rc == 0 && zero && next_piece(&pieces, a, width, &b, &lo, &hi)) {
        const shard *sh = &a->shards[b];
        uint64_t bytes = (hi - lo) * a->itemsize;
        int r = locales_rank_of(b);
        if (r == 0) {
            rc = reply_buffer_span(ctx, (const char *)sh->data + (lo - sh->start) * a->itemsize,
                                   bytes, err);
        } else {
            rc = reply_buffer_span(ctx, (const char *)hold->scratch + cursor[r], bytes, err);
            cursor[r] += bytes;
        }
    }
    /* the scratch must outlive the reply */
    if (rc == 0 && hold) rc = reply_hold(ctx, hold, err);
    object_release(hold);
    free(counts);
    free(cursor);
    free(mine);
    return rc;
}

/* get with `rows`: those rows of a pdarray (elements) or an arrayview (first-axis rows), in
 * the order given, sent straight from the shards (a run of consecutive rows is one span). */
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
    if (reply_set(ctx, "object", object_describe_as(obj, name), err) ||
        reply_set(ctx, "rows", h5ark_value_uint(n), err) ||
        reply_buffer_begin(ctx, "values", n * width * obj->values->itemsize, obj, err))
        return -1;
    if (ranks_count() > 1) return add_rows_ranks(ctx, obj->values, rows, n, width, err);
    for (size_t i = 0; i < n;) {
        uint64_t first, len = next_run(rows, n, &i, &first);
        if (add_spans(ctx, obj->values, first * width, (first + len) * width, err)) return -1;
    }
    return 0;
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
