/* What a command handler sees (see command.h): its arguments, and the reply it builds. */
#include "command.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

bool arg_has(const command_ctx *ctx, const char *name) {
    const h5ark_value *v = h5ark_value_get(ctx->args, name);
    return v && v->kind != H5ARK_NIL;
}

const h5ark_value *arg_value(const command_ctx *ctx, const char *name) {
    const h5ark_value *v = h5ark_value_get(ctx->args, name);
    return v && v->kind != H5ARK_NIL ? v : NULL;
}

const char *arg_str(const command_ctx *ctx, const char *name, const char *def) {
    const h5ark_value *v = arg_value(ctx, name);
    return v && v->kind == H5ARK_STR ? v->as.s.ptr : def;
}

bool arg_bool(const command_ctx *ctx, const char *name, bool def) {
    const h5ark_value *v = arg_value(ctx, name);
    return v && v->kind == H5ARK_BOOL ? v->as.b : def;
}

int64_t arg_int(const command_ctx *ctx, const char *name, int64_t def) {
    int64_t i;
    return h5ark_value_to_int64(arg_value(ctx, name), &i) ? i : def;
}

uint64_t arg_uint(const command_ctx *ctx, const char *name, uint64_t def) {
    uint64_t u;
    return h5ark_value_to_uint64(arg_value(ctx, name), &u) ? u : def;
}

double arg_number(const command_ctx *ctx, const char *name, double def) {
    double d;
    return h5ark_value_to_double(arg_value(ctx, name), &d) ? d : def;
}

int reply_set(command_ctx *ctx, const char *key, h5ark_value *val, h5ark_error *err) {
    if (h5ark_value_set(ctx->result, key, val) != 0)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory building the reply");
    return 0;
}

int reply_warn(command_ctx *ctx, h5ark_error *err, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (h5ark_value_push(ctx->warnings, h5ark_value_str(msg)) != 0)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory building the reply");
    return 0;
}

int reply_buffer_begin(command_ctx *ctx, const char *name, uint64_t nbytes, object *owner,
                       h5ark_error *err) {
    h5ark_value *b = h5ark_value_map();
    h5ark_value_set(b, "name", h5ark_value_str(name));
    h5ark_value_set(b, "nbytes", h5ark_value_uint(nbytes));
    if (h5ark_value_len(b) != 2 || h5ark_value_push(ctx->reply_buffers, b) != 0) {
        if (h5ark_value_len(b) != 2) h5ark_value_destroy(&b);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory building the reply");
    }
    return reply_hold(ctx, owner, err);
}

int reply_hold(command_ctx *ctx, object *owner, h5ark_error *err) {
    if (!owner) return 0;
    for (size_t i = 0; i < ctx->nheld; i++)
        if (ctx->held[i] == owner) return 0;
    if (ctx->nheld == ctx->held_cap) {
        size_t cap = ctx->held_cap ? ctx->held_cap * 2 : 4;
        object **held = realloc(ctx->held, cap * sizeof *held);
        if (!held) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        ctx->held = held;
        ctx->held_cap = cap;
    }
    ctx->held[ctx->nheld++] = object_ref(owner);
    return 0;
}

int reply_buffer_span(command_ctx *ctx, const void *ptr, uint64_t len, h5ark_error *err) {
    if (len == 0) return 0;
    if (ctx->nspans == ctx->spans_cap) {
        size_t cap = ctx->spans_cap ? ctx->spans_cap * 2 : 8;
        h5ark_span *spans = realloc(ctx->spans, cap * sizeof *spans);
        if (!spans) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        ctx->spans = spans;
        ctx->spans_cap = cap;
    }
    ctx->spans[ctx->nspans++] = (h5ark_span){ptr, len};
    return 0;
}
