/* Request checking and the command table (see dispatch.h). */
#include "dispatch.h"

#include "front/arkouda/endpoint.h"
#include "commands/checkpoint_format.h"
#include "commands/commands.h"
#include "config.h"
#include "entry.h"
#include "log.h"
#include "dist/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const command_def *const families[] = {
    admin_commands,      array_commands,   hdf_commands,     composite_commands,
    groupby_commands,    lbann_commands,   compute_commands, select_commands,
    file_commands,       strings_commands, bigint_commands,  acl_commands,
    checkpoint_commands, user_commands,    h5obj_commands,   ak_internal_commands};

static const command_def *command_find(const char *name) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const command_def *c = families[f]; c->name; c++)
            if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

static const char *arg_type_name(arg_type t) {
    switch (t) {
    case ARG_STR: return "a string";
    case ARG_BOOL: return "a boolean";
    case ARG_INT: return "an integer";
    case ARG_UINT: return "a non-negative integer";
    case ARG_NUMBER: return "a number";
    case ARG_SCALAR: return "a number or a boolean";
    case ARG_STR_ARRAY: return "an array of strings";
    case ARG_UINT_ARRAY: return "an array of non-negative integers";
    case ARG_STR_ARRAYS: return "an array of arrays of strings";
    case ARG_TEXT: return "a string";
    case ARG_ANY: return "a value";
    }
    return "?";
}

static bool arg_matches(const h5ark_value *v, arg_type t) {
    int64_t i;
    uint64_t u;
    switch (t) {
    case ARG_STR: return v->kind == H5ARK_STR && !memchr(v->as.s.ptr, '\0', v->as.s.len);
    case ARG_TEXT: return v->kind == H5ARK_STR;
    case ARG_ANY: return true;
    case ARG_BOOL: return v->kind == H5ARK_BOOL;
    case ARG_INT: return h5ark_value_to_int64(v, &i);
    case ARG_UINT: return h5ark_value_to_uint64(v, &u);
    case ARG_NUMBER: return h5ark_value_is_number(v);
    case ARG_SCALAR: return h5ark_value_is_number(v) || v->kind == H5ARK_BOOL;
    case ARG_STR_ARRAY:
    case ARG_UINT_ARRAY:
    case ARG_STR_ARRAYS:
        if (v->kind != H5ARK_ARRAY) return false;
        for (size_t k = 0; k < h5ark_value_len(v); k++)
            if (!arg_matches(h5ark_value_at(v, k), t == ARG_STR_ARRAY    ? ARG_STR
                                                   : t == ARG_STR_ARRAYS ? ARG_STR_ARRAY
                                                                         : ARG_UINT))
                return false;
        return true;
    }
    return false;
}

static int check_args(const command_def *cmd, const h5ark_value *args, h5ark_error *err) {
    for (size_t i = 0; i < args->as.m.len; i++) {
        const char *key = args->as.m.keys[i];
        const arg_spec *spec = NULL;
        for (const arg_spec *s = cmd->args; s->name; s++)
            if (strcmp(s->name, key) == 0) spec = s;
        if (!spec)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: unknown argument '%s'", cmd->name, key);
        const h5ark_value *v = args->as.m.vals[i];
        if (v->kind == H5ARK_NIL && !spec->required) continue; /* nil = absent */
        if (!arg_matches(v, spec->type))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: argument '%s' must be %s, got %s",
                              cmd->name, key, arg_type_name(spec->type),
                              v->kind == H5ARK_STR && spec->type == ARG_STR
                                  ? "a string holding a NUL byte"
                                  : h5ark_value_kind_name(v->kind));
    }
    for (const arg_spec *s = cmd->args; s->name; s++) {
        const h5ark_value *v = h5ark_value_get(args, s->name);
        if (s->required && (!v || v->kind == H5ARK_NIL))
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: missing argument '%s'", cmd->name,
                              s->name);
    }
    return 0;
}

static int check_header(const h5ark_value *h, const char *decode_error, bool forwarded,
                        h5ark_error *err) {
    if (!h)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the header frame %s",
                          decode_error ? decode_error : "is missing");
    if (h->kind != H5ARK_MAP)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the header must be a MessagePack map, got %s",
                          h5ark_value_kind_name(h->kind));
    static const char *const known[] = {"v", "id", "cmd", "token", "args", "buffers"};
    for (size_t i = 0; i < h->as.m.len; i++) {
        bool ok = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            ok |= strcmp(h->as.m.keys[i], known[k]) == 0;
        ok |= forwarded && strcmp(h->as.m.keys[i], "caller") == 0; /* rank 0's (entry.c) */
        if (!ok)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "unknown header field '%s'", h->as.m.keys[i]);
    }
    const h5ark_value *v = h5ark_value_get(h, "v");
    uint64_t version;
    if (!v) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the header has no protocol version 'v'");
    if (!h5ark_value_to_uint64(v, &version) || version != H5ARK_PROTOCOL_VERSION)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "unsupported protocol version: this daemon speaks v=%d",
                          H5ARK_PROTOCOL_VERSION);
    const h5ark_value *id = h5ark_value_get(h, "id");
    uint64_t u;
    if (id && !h5ark_value_to_uint64(id, &u))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "header field 'id' must be a non-negative integer");
    const h5ark_value *cmd = h5ark_value_get(h, "cmd");
    if (!cmd) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the header has no 'cmd'");
    if (cmd->kind != H5ARK_STR)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "header field 'cmd' must be a string, got %s",
                          h5ark_value_kind_name(cmd->kind));
    const h5ark_value *args = h5ark_value_get(h, "args");
    if (args && args->kind != H5ARK_MAP && args->kind != H5ARK_NIL)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "header field 'args' must be a map, got %s",
                          h5ark_value_kind_name(args->kind));
    const h5ark_value *token = h5ark_value_get(h, "token");
    if (token && token->kind != H5ARK_STR && token->kind != H5ARK_NIL)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "header field 'token' must be a string");
    return 0;
}

typedef struct {
    object **objs;
    size_t count;
} held_objects;

static void release_held(void *arg) {
    held_objects *h = arg;
    for (size_t i = 0; i < h->count; i++)
        object_release(h->objs[i]);
    free(h->objs);
    free(h);
}

static h5ark_value *reply_header(const h5ark_value *req_header, bool ok) {
    h5ark_value *h = h5ark_value_map();
    h5ark_value_set(h, "v", h5ark_value_uint(H5ARK_PROTOCOL_VERSION));
    const h5ark_value *id = h5ark_value_get(req_header, "id");
    uint64_t u;
    if (id && h5ark_value_to_uint64(id, &u)) h5ark_value_set(h, "id", h5ark_value_uint(u));
    h5ark_value_set(h, "ok", h5ark_value_bool(ok));
    return h;
}

/* The last resort when even an error reply cannot be built: a fixed MessagePack map
 * {"v":1,"ok":false,"error":{"code":"internal","message":"out of memory"}}. */
static void encode_or_fallback(h5ark_value *h, reply *out) {
    if (h && h5ark_value_encode(h, &out->header, &out->header_len) == 0) return;
    static const char fallback[] = "\x83\xa1v\x01\xa2ok\xc2\xa5"
                                   "error\x82\xa4"
                                   "code\xa8internal"
                                   "\xa7message\xad"
                                   "out of memory";
    out->header_len = sizeof fallback - 1;
    out->header = malloc(out->header_len);
    if (out->header)
        memcpy(out->header, fallback, out->header_len);
    else
        out->header_len = 0;
}

void dispatch_error_reply(const h5ark_value *header, h5ark_code code, const char *message,
                          reply *out) {
    memset(out, 0, sizeof *out);
    h5ark_value *h = reply_header(header, false);
    h5ark_value *e = h5ark_value_map();
    h5ark_value_set(e, "code", h5ark_value_str(h5ark_code_name(code)));
    h5ark_value_set(e, "message", h5ark_value_str(message));
    if (h5ark_value_len(e) != 2 || h5ark_value_set(h, "error", e) != 0) h5ark_value_destroy(&h);
    encode_or_fallback(h, out);
    h5ark_value_destroy(&h);
}

/* A hold releasing the objects the spans point into, taken from ctx; NULL when out of
 * memory (ctx keeps them then). */
static h5ark_hold *take_hold(command_ctx *ctx) {
    held_objects *held = malloc(sizeof *held);
    h5ark_hold *hold = NULL;
    if (held) {
        *held = (held_objects){ctx->held, ctx->nheld};
        hold = h5ark_hold_new(release_held, held);
    }
    if (!hold) {
        free(held);
        return NULL;
    }
    ctx->held = NULL;
    ctx->nheld = 0;
    return hold;
}

static void ctx_free(command_ctx *ctx) {
    for (size_t i = 0; i < ctx->nheld; i++)
        object_release(ctx->held[i]);
    free(ctx->held);
    free(ctx->spans);
    h5ark_value_destroy(&ctx->result);
    h5ark_value_destroy(&ctx->warnings);
    h5ark_value_destroy(&ctx->reply_buffers);
}

/* A native request on its way through the entry (entry.h): the command, the context its
 * handler sees, and for dispatch_call what the forwarded header holds. */
typedef struct {
    const request *req;
    const command_def *cmd;
    const char *name; /* as asked */
    command_ctx ctx;
    h5ark_buffer_list buffers;
    const h5ark_value *buffer_list; /* the buffers the payload holds (NULL: none named) */
    bool part;                      /* dispatch_call's: a part of the request */
} native_request;

static void native_free(native_request *n) {
    ctx_free(&n->ctx);
    h5ark_buffer_list_free(&n->buffers);
}

static int ctx_start(command_ctx *ctx, h5ark_error *err) {
    ctx->result = h5ark_value_map();
    ctx->warnings = h5ark_value_array();
    ctx->reply_buffers = h5ark_value_array();
    if (!ctx->result || !ctx->warnings || !ctx->reply_buffers)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return 0;
}

/* A client's request, once its caller is known: a command it may know of, its arguments
 * as its list declares them, and as many payload bytes as its buffers say (the payload
 * came to rank 0: a forwarded request's is scattered; a part of a request that names no
 * buffers uses none of it). */
static int native_check(void *door, h5ark_error *err) {
    native_request *n = door;
    const request *req = n->req;
    if (!n->cmd) return h5ark_fail(err, H5ARK_UNKNOWN_COMMAND, "unknown command '%s'", n->name);
    if (check_args(n->cmd, n->ctx.args, err)) return -1;
    if (h5ark_buffer_list_parse(n->buffer_list, &n->buffers, err)) return -1;
    if (n->buffers.total != req->payload.total && !req->forwarded_seq &&
        (n->buffer_list || !n->part))
        return h5ark_fail(
            err, H5ARK_BAD_REQUEST,
            "the header's buffers add up to %llu bytes but %llu payload bytes arrived",
            (unsigned long long)n->buffers.total, (unsigned long long)req->payload.total);
    n->ctx.buffers = &n->buffers;
    n->ctx.payload = &req->payload;
    if (ctx_start(&n->ctx, err)) return -1;
    log_debug("request %s", n->name);
    return 0;
}

static int native_run(void *door, const caller *who, h5ark_error *err) {
    (void)who; /* the handlers ask nothing of the caller yet */
    native_request *n = door;
    return n->cmd->fn(&n->ctx, err);
}

/* The header of a native call: {v, cmd, args, buffers}, no token (rank 0 admitted it). */
static h5ark_value *call_header(void *door) {
    const native_request *n = door;
    h5ark_value *h = h5ark_value_map();
    size_t want = n->buffer_list ? 4 : 3;
    h5ark_value_set(h, "v", h5ark_value_uint(H5ARK_PROTOCOL_VERSION));
    h5ark_value_set(h, "cmd", h5ark_value_str(n->name));
    h5ark_value_set(h, "args", h5ark_value_copy(n->ctx.args));
    if (n->buffer_list) h5ark_value_set(h, "buffers", h5ark_value_copy(n->buffer_list));
    if (h5ark_value_len(h) != want) h5ark_value_destroy(&h);
    return h;
}

int dispatch_call(const request *req, const char *name, const h5ark_value *args,
                  const h5ark_value *buffers, dispatch_result *out, h5ark_error *err) {
    memset(out, 0, sizeof *out);
    const command_def *cmd = command_find(name);
    native_request n = {.req = req,
                        .cmd = cmd,
                        .name = name,
                        .ctx.args = args,
                        .buffer_list = buffers,
                        .part = true};
    command_ctx *ctx = &n.ctx;
    int rc;
    if (!cmd || cmd->internal) {
        rc = h5ark_fail(err, H5ARK_INTERNAL, "no command '%s'", name);
    } else {
        /* for the caller admitted for the request; one that runs everywhere, called on rank
         * 0 alone, is forwarded with call_header, and called inside a call every rank runs
         * it runs within that call (ranks_serve.h) */
        entry_call call = {.req = req,
                           .name = cmd->name,
                           .read_only = cmd->read_only,
                           .admin_only = cmd->admin_only,
                           .ranks = cmd->ranks,
                           .unlisted = cmd->immediate,
                           .known = entry_caller(),
                           .check = native_check,
                           .forward = call_header,
                           .run = native_run,
                           .door = &n};
        rc = entry_run(&call, err);
        if (rc == 0 && ctx->nheld && !(out->hold = take_hold(ctx)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    /* within a call, the ranks agree on its whole outcome as after a request of its own
     * (outside one this is the outcome as it is) */
    if ((rc = ranks_agree(rc, err)) == 0) {
        out->result = ctx->result;
        out->warnings = ctx->warnings;
        out->buffers = ctx->reply_buffers;
        out->spans = ctx->spans;
        out->nspans = ctx->nspans;
        ctx->result = ctx->warnings = ctx->reply_buffers = NULL;
        ctx->spans = NULL;
    } else {
        h5ark_hold_drop(out->hold);
        out->hold = NULL;
    }
    native_free(&n);
    return rc;
}

void dispatch_result_free(dispatch_result *r) {
    h5ark_value_destroy(&r->result);
    h5ark_value_destroy(&r->warnings);
    h5ark_value_destroy(&r->buffers);
    free(r->spans);
    h5ark_hold_drop(r->hold);
    memset(r, 0, sizeof *r);
}

bool dispatch_is_immediate(const request *req) {
    const h5ark_value *h = req->header;
    if (!h || h->kind != H5ARK_MAP) return true;
    const h5ark_value *cmd = h5ark_value_get(h, "cmd");
    if (!cmd || cmd->kind != H5ARK_STR) return true;
    const command_def *def = command_find(cmd->as.s.ptr);
    return !def || (def->immediate && req->payload.total == 0);
}

int dispatch_accept(request *req, h5ark_error *err) {
    if (!config.token_file) return 0;
    const h5ark_value *token = h5ark_value_get(req->header, "token");
    bool given = token && token->kind == H5ARK_STR;
    return entry_accept(req, given ? token->as.s.ptr : NULL, given ? token->as.s.len : 0, err);
}

void dispatch_handle(request *req, reply *out) {
    memset(out, 0, sizeof *out);
    h5ark_error err = {0};
    native_request n = {.req = req};
    h5ark_value *empty_args = NULL;
    const h5ark_value *h = req->header;
    h5ark_code outcome = H5ARK_OK;

    if (check_header(h, req->decode_error, req->forwarded_seq != 0, &err)) goto fail;
    n.name = h5ark_value_get(h, "cmd")->as.s.ptr;
    n.cmd = command_find(n.name);
    if (n.cmd && n.cmd->internal && !req->forwarded_seq && !req->from_daemon) n.cmd = NULL;
    n.ctx.args = h5ark_value_get(h, "args");
    n.buffer_list = h5ark_value_get(h, "buffers");
    if (!n.ctx.args || n.ctx.args->kind == H5ARK_NIL) n.ctx.args = empty_args = h5ark_value_map();
    if (!n.ctx.args) {
        h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto fail;
    }
    const h5ark_value *token = h5ark_value_get(h, "token");
    bool given = token && token->kind == H5ARK_STR;
    entry_call call = {.req = req,
                       .name = n.cmd ? n.cmd->name : NULL,
                       .read_only = n.cmd && n.cmd->read_only,
                       .admin_only = n.cmd && n.cmd->admin_only,
                       .ranks = n.cmd ? n.cmd->ranks : RANKS_ZERO,
                       .unlisted = n.cmd && n.cmd->immediate,
                       .token = given ? token->as.s.ptr : NULL,
                       .token_len = given ? token->as.s.len : 0,
                       .known = req->forwarded_seq || req->from_daemon ? &entry_forwarded : NULL,
                       .forwarded_seq = req->forwarded_seq,
                       .check = native_check,
                       .run = native_run,
                       .door = &n};
    if (entry_run(&call, &err)) goto fail;

    command_ctx *ctx = &n.ctx;
    h5ark_value *rh = reply_header(h, true);
    if (h5ark_value_set(rh, "result", ctx->result) == 0) ctx->result = NULL;
    if (h5ark_value_len(ctx->warnings)) {
        h5ark_value_set(rh, "warnings", ctx->warnings);
        ctx->warnings = NULL;
    }
    if (h5ark_value_len(ctx->reply_buffers)) {
        h5ark_value_set(rh, "buffers", ctx->reply_buffers);
        ctx->reply_buffers = NULL;
    }
    encode_or_fallback(rh, out);
    h5ark_value_destroy(&rh);
    out->spans = ctx->spans;
    out->nspans = ctx->nspans;
    ctx->spans = NULL;
    if (ctx->nheld && !(out->hold = take_hold(ctx))) {
        /* cannot keep the memory alive: do not send the spans */
        free(out->spans);
        free(out->header);
        h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto fail;
    }
    out->shutdown = ctx->shutdown;
    goto done;

fail:
    if (err.code == H5ARK_OK) h5ark_fail(&err, H5ARK_INTERNAL, "command failed without a reason");
    log_debug("request failed: %s: %s", h5ark_code_name(err.code), err.message);
    dispatch_error_reply(h && h->kind == H5ARK_MAP ? h : NULL, err.code, err.message, out);
    outcome = err.code;
done:
    entry_answered(req, outcome, out);
    native_free(&n);
    h5ark_value_destroy(&empty_args);
}

const char *dispatch_command_name(size_t i) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const command_def *c = families[f]; c->name; c++)
            if (!c->internal && i-- == 0) return c->name;
    return NULL;
}

void dispatch_forwarded(uint64_t seq, const void *header, size_t len) {
    request req = {.forwarded_seq = seq};
    h5ark_payload_init(&req.payload);
    req.header = h5ark_value_decode(header, len, &req.decode_error);
    reply r;
    dispatch_handle(&req, &r);
    reply_free(&r);
    h5ark_value_destroy(&req.header);
}

void reply_free(reply *r) {
    free(r->header);
    free(r->spans);
    h5ark_hold_drop(r->hold);
    memset(r, 0, sizeof *r);
}
