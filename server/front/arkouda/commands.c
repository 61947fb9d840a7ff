/* The Arkouda command table lookup and the helpers every family shares (see commands.h). */
#include "front/arkouda/commands.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ak_command *const families[] = {
    ak_session_commands, ak_transfer_commands, ak_hdf_commands,     ak_compute_commands,
    ak_select_commands,  ak_group_commands,    ak_strings_commands, ak_bigint_commands,
    ak_ckpt_commands,    ak_registry_commands};

const ak_command *ak_command_find(const char *base) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const ak_command *c = families[f]; c->name; c++)
            if (strcmp(c->name, base) == 0) return c;
    return NULL;
}

ranks_mode ak_command_ranks(const ak_command *c, const ak_request *in) {
    return c->ranks_of ? c->ranks_of(in) : c->ranks;
}

int ak_reply(ak_ctx *ctx, h5ark_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(ctx->msg);
    ctx->msg = text;
    return 0;
}

int ak_reply_value(ak_ctx *ctx, json_t *value, h5ark_error *err) {
    char *text = value ? json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(value);
    if (!text) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    free(ctx->msg);
    ctx->msg = text;
    return 0;
}

int ak_object_arg(ak_ctx *ctx, const char *key, h5ark_objtype want, ak_array *out,
                  h5ark_error *err) {
    if (ak_arg_str(ctx->in, key, &out->name, err)) return -1;
    dispatch_result res;
    if (ak_describe(ctx, out->name, &res, err)) return -1;
    const h5ark_value *d = h5ark_value_at(h5ark_value_get(res.result, "objects"), 0);
    const char *ot = ak_desc_str(d, "objtype");
    if (!h5ark_dtype_from_name(ak_desc_str(d, "dtype"), &out->dtype)) out->dtype = H5ARK_STRING;
    out->size = ak_desc_uint(d, "size");
    out->max_bits = -1;
    h5ark_value_to_int64(h5ark_value_get(d, "max_bits"), &out->max_bits);
    int rc = 0;
    if (want != H5ARK_OBJTYPE_COUNT && strcmp(ot, h5ark_objtype_name(want)) != 0)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' names %s %.200s, not %s", key, ot, out->name,
                        h5ark_objtype_name(want));
    dispatch_result_free(&res);
    return rc;
}

int ak_check_rank(ak_ctx *ctx, h5ark_error *err) {
    const ak_request *in = ctx->in;
    if (in->nparams == 0 || strcmp(in->params[in->nparams - 1], "1") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s: only 1-dimensional arrays are served",
                          in->cmd);
    return 0;
}

int ak_array_arg(ak_ctx *ctx, const char *key, bool any_dtype, ak_array *out, h5ark_error *err) {
    if (ak_object_arg(ctx, key, H5ARK_PDARRAY, out, err)) return -1;
    if (!any_dtype && (out->dtype == H5ARK_BIGINT || out->dtype == H5ARK_STRING))
        return h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' must be a numeric or bool array", key);
    return 0;
}

int ak_native(ak_ctx *ctx, const char *name, const h5ark_value *args, const h5ark_value *buffers,
              dispatch_result *out, h5ark_error *err) {
    return dispatch_call(ctx->req, name, args, buffers, out, err);
}

int ak_native_created(ak_ctx *ctx, const char *name, h5ark_value *args, h5ark_error *err) {
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, name, args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    return ak_reply_made(ctx, &res, name, err);
}

char *ak_created_of(const h5ark_value *desc, const char *name, h5ark_error *err) {
    if (!*ak_desc_str(desc, "name")) {
        h5ark_fail(err, H5ARK_INTERNAL, "%s made no object", name);
        return NULL;
    }
    char *text = ak_created(desc);
    if (!text) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return text;
}

int ak_reply_made(ak_ctx *ctx, dispatch_result *res, const char *name, h5ark_error *err) {
    char *text = ak_created_of(h5ark_value_get(res->result, "object"), name, err);
    dispatch_result_free(res);
    if (!text) return -1;
    free(ctx->msg);
    ctx->msg = text;
    return 0;
}

h5ark_value *ak_str_args(const char *key, ...) {
    h5ark_value *args = h5ark_value_map();
    va_list ap;
    va_start(ap, key);
    for (const char *k = key; args && k; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        if (v && h5ark_value_set(args, k, h5ark_value_str(v))) h5ark_value_destroy(&args);
    }
    va_end(ap);
    return args;
}

h5ark_value *ak_number_value(const char *key, const char *text, h5ark_error *err) {
    int64_t i;
    uint64_t u;
    double d;
    if (ak_parse_int(text, &i)) return h5ark_value_int(i);
    if (ak_parse_uint(text, &u)) return h5ark_value_uint(u);
    if (ak_parse_double(text, &d)) {
        /* "4294967296.00000000000000000": a whole number written as a float */
        return h5ark_value_float(d);
    }
    h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' must be a number, not '%.60s'", key, text);
    return NULL;
}

int ak_describe(ak_ctx *ctx, const char *name, dispatch_result *res, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map(), *names = h5ark_value_array();
    if (!args || !names || h5ark_value_push(names, h5ark_value_str(name)) ||
        h5ark_value_set(args, "names", names)) {
        if (!args) h5ark_value_destroy(&names);
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    int rc = ak_native(ctx, "info", args, NULL, res, err);
    h5ark_value_destroy(&args);
    return rc;
}

int ak_list_objects(ak_ctx *ctx, dispatch_result *res, h5ark_error *err) {
    h5ark_value *none = h5ark_value_map();
    if (!none) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = ak_native(ctx, "info", none, NULL, res, err);
    h5ark_value_destroy(&none);
    return rc;
}

h5ark_value *ak_names_arg(ak_ctx *ctx, const char *key, h5ark_error *err) {
    json_t *list = ak_arg_list(ctx->in, key, err);
    if (!list) return NULL;
    h5ark_value *names = h5ark_value_array();
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (names && h5ark_value_push(names, h5ark_value_str(json_string_value(item))))
            h5ark_value_destroy(&names);
    }
    json_decref(list);
    if (!names) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return names;
}
