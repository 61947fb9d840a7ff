/* Arkouda's registry (its RegistrationMsg): register, attach, list_registry and unregister,
 * on the caller's namespace through the native register, info and unregister. A
 * registered name is a name of the caller's own, holding the same data as the array it was
 * registered from; attach of `OWNER/NAME` follows the share rules as every read does. */
#include "front/arkouda/commands.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The registry's object types this endpoint keeps: Arkouda's array entries. */
static const char *const array_types[] = {"PDARRAY", "STRINGS", "DATETIME", "TIMEDELTA", "IPV4"};

/* Arkouda's ObjType of a native descriptor, or NULL when it is none of array_types. */
static const char *objtype_of(const h5ark_value *desc) {
    const h5ark_value *t = h5ark_value_get(desc, "objtype"), *tag = h5ark_value_get(desc, "tag");
    const char *objtype = t && t->kind == H5ARK_STR ? t->as.s.ptr : "";
    const char *tagname = tag && tag->kind == H5ARK_STR ? tag->as.s.ptr : "";
    if (strcmp(objtype, "strings") == 0) return "STRINGS";
    if (strcmp(objtype, "pdarray") != 0) return NULL;
    if (strcmp(tagname, OBJECT_TAG_DATETIME) == 0) return "DATETIME";
    if (strcmp(tagname, OBJECT_TAG_TIMEDELTA) == 0) return "TIMEDELTA";
    if (strcmp(tagname, OBJECT_TAG_IPV4) == 0) return "IPV4";
    const h5ark_value *dtype = h5ark_value_get(desc, "dtype");
    return dtype && dtype->kind == H5ARK_STR && strcmp(dtype->as.s.ptr, "bigint") == 0 ? NULL
                                                                                       : "PDARRAY";
}

/* The argument `name`, and what the native info says of it: Arkouda's ObjType (NULL when
 * none of array_types) and, when `created` is not NULL and it is one, its created text. */
static int described(ak_ctx *ctx, const char **name, const char **type, char **created,
                     h5ark_error *err) {
    dispatch_result res;
    if (ak_arg_str(ctx->in, "name", name, err) || ak_describe(ctx, *name, &res, err)) return -1;
    const h5ark_value *list = h5ark_value_get(res.result, "objects");
    const h5ark_value *desc = list && h5ark_value_len(list) == 1 ? h5ark_value_at(list, 0) : NULL;
    *type = desc ? objtype_of(desc) : NULL;
    int rc = desc ? 0 : h5ark_fail(err, H5ARK_INTERNAL, "info described no object");
    if (rc == 0 && created && *type && !(*created = ak_created_of(desc, "attach", err))) rc = -1;
    dispatch_result_free(&res);
    return rc;
}

/* A native command of one name argument (and `as`, when not NULL). */
static int native_named(ak_ctx *ctx, const char *cmd, const char *name, const char *as,
                        h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (!args || h5ark_value_set(args, "name", h5ark_value_str(name)) ||
        (as && h5ark_value_set(args, "as", h5ark_value_str(as)))) {
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    dispatch_result res;
    int rc = ak_native(ctx, cmd, args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc == 0) dispatch_result_free(&res);
    return rc;
}

/* register {name, objType, array}: `array` under the caller's name `name` */
static int cmd_register(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *type, *array;
    if (ak_arg_str(ctx->in, "name", &name, err) || ak_arg_str(ctx->in, "objType", &type, err) ||
        ak_arg_str(ctx->in, "array", &array, err))
        return -1;
    const char *known = NULL;
    for (size_t i = 0; i < sizeof array_types / sizeof array_types[0]; i++)
        if (strcasecmp(type, array_types[i]) == 0) known = array_types[i];
    if (!known)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "ObjType Not Supported by Registry: %.60s (this server registers "
                          "pdarray, Strings, Datetime, Timedelta and IPv4)",
                          type);
    if (native_named(ctx, "register", array, name, err)) return -1;
    return ak_reply(ctx, err, "Registered %s", known);
}

/* attach {name}: {"objType", "create"} as Arkouda's server answers */
static int cmd_attach(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *type;
    char *created = NULL;
    if (described(ctx, &name, &type, &created, err)) return -1;
    if (!type)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "'%.300s' is not an array this server attaches (pdarray, Strings, "
                          "Datetime, Timedelta, IPv4)",
                          name);
    json_t *reply = json_pack("{s:s,s:s}", "objType", type, "create", created);
    free(created);
    return ak_reply_value(ctx, reply, err);
}

/* unregister {name}: the caller's registered name goes */
static int cmd_unregister(ak_ctx *ctx, h5ark_error *err) {
    const char *name, *type;
    if (described(ctx, &name, &type, NULL, err) || native_named(ctx, "unregister", name, NULL, err))
        return -1;
    return ak_reply(ctx, err, "Unregistered %s %s", type ? type : "PDARRAY", name);
}

/* list_registry: the caller's registered names, {"Objects", "Object_Types", "Components"}
 * each a JSON text, as Arkouda's server answers */
static int cmd_list_registry(ak_ctx *ctx, h5ark_error *err) {
    h5ark_value *args = h5ark_value_map();
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "info", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    json_t *names = json_array(), *types = json_array();
    const h5ark_value *list = h5ark_value_get(res.result, "objects");
    for (size_t i = 0; names && types && i < h5ark_value_len(list); i++) {
        const h5ark_value *d = h5ark_value_at(list, i), *reg = h5ark_value_get(d, "registered");
        const h5ark_value *n = h5ark_value_get(d, "name");
        const char *type = objtype_of(d);
        /* the caller's own: others' shared names carry their owner */
        if (!reg || !n || n->kind != H5ARK_STR || strchr(n->as.s.ptr, '/')) continue;
        json_array_append_new(names, json_string(n->as.s.ptr));
        json_array_append_new(types, json_string(type ? type : "PDARRAY"));
    }
    dispatch_result_free(&res);
    char *objects = names ? json_dumps(names, JSON_COMPACT) : NULL;
    char *objtypes = types ? json_dumps(types, JSON_COMPACT) : NULL;
    json_decref(names);
    json_decref(types);
    json_t *reply = objects && objtypes ? json_pack("{s:s,s:s,s:s}", "Objects", objects,
                                                    "Object_Types", objtypes, "Components", "[]")
                                        : NULL;
    free(objects);
    free(objtypes);
    return ak_reply_value(ctx, reply, err);
}

const ak_command ak_registry_commands[] = {
    {"register", cmd_register, 0, RANKS_ZERO},
    {"attach", cmd_attach, AK_READ_ONLY, RANKS_ZERO},
    {"unregister", cmd_unregister, 0, RANKS_ZERO},
    {"list_registry", cmd_list_registry, AK_READ_ONLY, RANKS_ZERO},
    {0},
};
