/* The Arkouda front end's request handling (see endpoint.h). */
#include "front/arkouda/endpoint.h"

#include "config.h"
#include "entry.h"
#include "front/arkouda/commands.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char bound[1024] = "tcp://*";

void arkouda_set_endpoint(const char *endpoint) {
    snprintf(bound, sizeof bound, "%s", endpoint);
}

const char *arkouda_endpoint(void) {
    return bound;
}

/* A reply of one frame holding a copy of len bytes at text (the header frame alone is
 * one frame); an empty frame when out of memory, which the client reports as broken. */
static void frame_reply(const char *text, size_t len, reply *out) {
    memset(out, 0, sizeof *out);
    if ((out->header = malloc(len ? len : 1))) {
        memcpy(out->header, text, len);
        out->header_len = len;
    }
}

static void json_reply(const char *msg, const char *type, const char *user, reply *out) {
    memset(out, 0, sizeof *out);
    size_t len = 0;
    char *text = ak_reply_json(msg, type, user, &len);
    if (!text) {
        static const char oom[] = "{\"msg\":\"Error: out of memory\",\"msgType\":\"ERROR\","
                                  "\"msgFormat\":\"STRING\",\"user\":\"\"}";
        frame_reply(oom, sizeof oom - 1, out);
        return;
    }
    out->header = text;
    out->header_len = len;
}

void arkouda_error_reply(const request *req, const char *message, reply *out) {
    (void)req;
    char text[1200];
    snprintf(text, sizeof text, "Error: %s", message);
    json_reply(text, "ERROR", "", out);
}

/* The request rank 0 forwards for a command that runs on every rank: the command and its
 * arguments as an Arkouda request of their own, without the token (rank 0 checked it). */
static h5ark_value *every_header(const ak_request *in) {
    json_t *list = json_array(), *val;
    const char *key;
    json_object_foreach(in->args, key, val) {
        if (list && json_array_append_new(list, json_pack("{s:s,s:O}", "key", key, "val", val)))
            json_decref(list), list = NULL;
    }
    char *args = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    json_t *r =
        args ? json_pack("{s:s,s:s,s:s}", "cmd", in->cmd, "format", "STRING", "args", args) : NULL;
    char *text = r ? json_dumps(r, JSON_COMPACT) : NULL;
    json_decref(r);
    free(args);
    h5ark_value *h = text ? h5ark_value_map() : NULL, *a = h ? h5ark_value_map() : NULL;
    if (a && h5ark_value_set(a, "request", h5ark_value_str(text)) == 0) {
        h5ark_value_set(h, "v", h5ark_value_uint(H5ARK_PROTOCOL_VERSION));
        h5ark_value_set(h, "cmd", h5ark_value_str("arkouda_run"));
        if (h5ark_value_set(h, "args", a) != 0 || h5ark_value_len(h) != 3) h5ark_value_destroy(&h);
    } else {
        h5ark_value_destroy(&a);
        h5ark_value_destroy(&h);
    }
    free(text);
    return h;
}

/* An Arkouda request on its way through the entry (entry.h). */
typedef struct {
    const request *req;
    ak_request *in;
    const ak_command *cmd;
    ak_ctx ctx;
} ak_entry;

/* Once the caller is known: a command the dialect has, in the format it takes. */
static int ak_check(void *door, h5ark_error *err) {
    ak_entry *e = door;
    if (!e->cmd) return h5ark_fail(err, H5ARK_UNKNOWN_COMMAND, "Unrecognized command");
    if (e->in->binary != !!(e->cmd->flags & AK_BINARY_IN))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s takes format %s", e->in->base,
                          e->cmd->flags & AK_BINARY_IN ? "BINARY" : "STRING");
    if (!e->in->binary && e->req->payload.total)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "a STRING request carries no further frames");
    log_debug("arkouda request %s", e->in->cmd);
    return 0;
}

static h5ark_value *ak_forward(void *door) {
    return every_header(((ak_entry *)door)->in);
}

static int ak_run(void *door, const caller *who, h5ark_error *err) {
    (void)who; /* the dialect's commands ask nothing of the caller yet */
    ak_entry *e = door;
    return e->cmd->fn(&e->ctx, err);
}

/* arkouda_run {request} on a rank > 0: the command on this rank's shards; its reply is
 * rank 0's to give. */
static int cmd_arkouda_run(command_ctx *cctx, h5ark_error *err) {
    const char *text = arg_str(cctx, "request", "");
    ak_request in;
    request req = {0};
    h5ark_payload_init(&req.payload);
    ak_ctx ctx = {.req = &req, .in = &in};
    int rc = ak_request_parse(text, strlen(text), &in, err);
    const ak_command *cmd = rc == 0 ? ak_command_find(in.base) : NULL;
    if (rc == 0 && (!cmd || ak_command_ranks(cmd, &in) != RANKS_EVERY))
        rc = h5ark_fail(err, H5ARK_INTERNAL, "'%s' does not run on every rank", in.base);
    if (rc == 0) rc = cmd->fn(&ctx, err);
    free(ctx.msg);
    h5ark_hold_drop(ctx.hold);
    ak_request_free(&in);
    return rc;
}

const command_def ak_internal_commands[] = {
    {"arkouda_run",
     cmd_arkouda_run,
     {{"request", ARG_STR, true}, {0}},
     .ranks = RANKS_EVERY,
     .internal = true},
    {0},
};

int arkouda_accept(request *req, h5ark_error *err) {
    if (!config.token_file || !req->text) return 0;
    ak_request in;
    h5ark_error ignored = {0}; /* a malformed request is refused once it runs */
    bool parsed = ak_request_parse(req->text, req->text_len, &in, &ignored) == 0;
    int rc = entry_accept(req, parsed ? in.token : NULL, parsed ? in.token_len : 0, err);
    ak_request_free(&in);
    return rc;
}

bool arkouda_is_immediate(const request *req) {
    if (!req->text || req->payload.total) return !req->text;
    ak_request in;
    h5ark_error err = {0};
    bool now = ak_request_parse(req->text, req->text_len, &in, &err) != 0;
    if (!now) {
        const ak_command *cmd = ak_command_find(in.base);
        now = cmd && (cmd->flags & AK_IMMEDIATE);
    }
    ak_request_free(&in);
    return now;
}

void arkouda_handle(request *req, reply *out) {
    h5ark_error err = {0};
    ak_request in = {0};
    ak_entry e = {.req = req, .in = &in, .ctx = {.req = req, .in = &in}};
    ak_ctx *ctx = &e.ctx;
    h5ark_code outcome = H5ARK_OK;
    if (!req->text) {
        if (req->decode_error)
            h5ark_fail(&err, H5ARK_BAD_REQUEST, "the request frame %s", req->decode_error);
        else
            h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory reading the request");
        goto fail;
    }
    if (ak_request_parse(req->text, req->text_len, &in, &err)) goto fail;
    e.cmd = ak_command_find(in.base);
    /* a command that runs everywhere goes to the other ranks as arkouda_run (every_header);
     * Arkouda's requests are not listed in `status` (the native commands they call are) */
    entry_call call = {.req = req,
                       .name = in.cmd,
                       .ranks_name = in.base,
                       .read_only = e.cmd && (e.cmd->flags & AK_READ_ONLY),
                       .ranks = e.cmd ? ak_command_ranks(e.cmd, &in) : RANKS_ZERO,
                       .unlisted = true,
                       .token = in.token,
                       .token_len = in.token_len,
                       .check = ak_check,
                       .forward = ak_forward,
                       .run = ak_run,
                       .door = &e};
    if (entry_run(&call, &err)) {
        if (e.cmd || err.code != H5ARK_UNKNOWN_COMMAND) goto fail;
        char text[600];
        snprintf(text, sizeof text, "Unrecognized command: %.500s", in.cmd);
        json_reply(text, "ERROR", in.user, out);
        outcome = H5ARK_UNKNOWN_COMMAND;
        goto done;
    }
    if (e.cmd->flags & AK_BINARY_OUT) {
        memset(out, 0, sizeof *out);
        out->spans = malloc(sizeof *out->spans);
        if (!out->spans) {
            h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto fail;
        }
        out->spans[0] = (h5ark_span){ctx->bytes, ctx->nbytes};
        out->nspans = 1;
        out->one_frame = true;
        out->hold = ctx->hold;
        ctx->hold = NULL;
    } else {
        json_reply(ctx->msg ? ctx->msg : "", ctx->warning ? "WARNING" : "NORMAL", in.user, out);
    }
    goto done;

fail:
    if (err.code == H5ARK_OK) h5ark_fail(&err, H5ARK_INTERNAL, "command failed without a reason");
    outcome = err.code;
    log_debug("arkouda request failed: %s", err.message);
    if (e.cmd && (e.cmd->flags & AK_BINARY_OUT)) {
        /* the client reads binary replies as one bare frame and knows only this error */
        char text[1200];
        int n = snprintf(text, sizeof text, "Error: %s", err.message);
        frame_reply(text, n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1, out);
    } else {
        char text[1400];
        snprintf(text, sizeof text, "Error executing command %.200s: %s",
                 in.cmd ? in.cmd : "(none)", err.message);
        json_reply(text, "ERROR", in.user, out);
    }
done:
    entry_answered(req, outcome, out);
    free(ctx->msg);
    h5ark_hold_drop(ctx->hold);
    ak_request_free(&in);
}
