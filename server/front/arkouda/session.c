/* Session commands of the Arkouda dialect: connect disconnect getconfig
 * getRegistrationConfig note delete clear info (protocol/PROTOCOL.md, "The Arkouda endpoint"). */
#include "front/arkouda/commands.h"
#include "front/arkouda/endpoint.h"
#include "front/arkouda/pins.h"
#include "config.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

/* The release of Arkouda's client whose dialect this is: reporting it keeps the client
 * from warning of a version mismatch. */
#define AK_CLIENT_RELEASE "2026.07.15"

static int cmd_connect(ak_ctx *ctx, h5ark_error *err) {
    return ak_reply(ctx, err, "connected to arkouda server %s", arkouda_endpoint());
}

static int cmd_disconnect(ak_ctx *ctx, h5ark_error *err) {
    return ak_reply(ctx, err, "disconnected from arkouda server %s", arkouda_endpoint());
}

static int cmd_note(ak_ctx *ctx, h5ark_error *err) {
    return ak_reply(ctx, err, "noted");
}

/* The port of a tcp endpoint ("tcp://host:port"), 0 otherwise. */
static long endpoint_port(void) {
    const char *e = arkouda_endpoint(), *colon = strrchr(e, ':');
    return strncmp(e, "tcp://", 6) == 0 && colon ? strtol(colon + 1, NULL, 10) : 0;
}

/* What the native getconfig says: every rank's locales together (numLocales, what the
 * client divides work by), the hosts the ranks run on (numNodes) and the memory limit. */
static int cmd_getconfig(ak_ctx *ctx, h5ark_error *err) {
    h5ark_value *none = h5ark_value_map();
    dispatch_result res;
    if (!none) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = ak_native(ctx, "getconfig", none, NULL, &res, err);
    h5ark_value_destroy(&none);
    if (rc) return -1;
    const h5ark_value *hosts = h5ark_value_get(res.result, "hosts");
    int nodes = 0;
    for (size_t r = 0; r < h5ark_value_len(hosts); r++) {
        bool seen = false;
        for (size_t q = 0; q < r; q++)
            seen |=
                strcmp(h5ark_value_at(hosts, q)->as.s.ptr, h5ark_value_at(hosts, r)->as.s.ptr) == 0;
        nodes += !seen;
    }
    int nlocales = (int)ak_desc_uint(res.result, "locales");
    json_int_t mem = (json_int_t)ak_desc_uint(res.result, "max_memory");
    dispatch_result_free(&res);
    unsigned maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    int zmaj, zmin, zpatch;
    zmq_version(&zmaj, &zmin, &zpatch);
    char hdf5[32], zmqv[32], host[256] = "localhost";
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
    snprintf(zmqv, sizeof zmqv, "%d.%d.%d", zmaj, zmin, zpatch);
    gethostname(host, sizeof host - 1);
    long pus = sysconf(_SC_NPROCESSORS_ONLN);
    const uint16_t probe = 1;
    json_t *locale =
        json_pack("{s:i,s:s,s:I,s:i,s:i,s:I}", "id", 0, "name", host, "numPUs", (json_int_t)pus,
                  "numColocales", 0, "maxTaskPar", nlocales, "physicalMemory", mem);
    json_t *c = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:i,s:I,s:i,s:I,s:s,s:[o],s:b,s:s,s:s,s:i,s:s,"
        "s:b,s:b}",
        "arkoudaVersion", AK_CLIENT_RELEASE, "serverImplementation", "h5ark " H5ARK_VERSION_STRING,
        "chplVersion", "none", "pythonVersion", "none", "ZMQVersion", zmqv, "HDF5Version", hdf5,
        "serverHostname", host, "ServerPort", (int)endpoint_port(), "numLocales", nlocales,
        "numNodes", nodes, "numPUs", (json_int_t)pus, "maxTaskPar", nlocales, "physicalMemory", mem,
        "distributionType", "domain(1,int(64),one)", "LocaleConfigs", locale, "authenticate",
        config.token_file != NULL, "logLevel", "INFO", "logChannel", "CONSOLE", "regexMaxCaptures",
        20, "byteorder", *(const uint8_t *)&probe ? "little" : "big", "autoShutdown", 0,
        "serverInfoNoSplash", 0);
    return ak_reply_value(ctx, c, err);
}

static int cmd_registration(ak_ctx *ctx, h5ark_error *err) {
    json_t *c = json_pack("{s:{s:{s:[i],s:[s,s,s,s]},s:{s:[s,s,s,s]},s:{s:[s,s,s,s]}}}",
                          "parameter_classes", "array", "nd", 1, "dtype", "int", "uint", "real",
                          "bool", "binop", "dtype", "int", "uint", "real", "bool", "scalar",
                          "dtype", "int", "uint", "real", "bool");
    return ak_reply_value(ctx, c, err);
}

/* The native delete of `names` (taken; none: nothing to do). */
static int delete_names(ak_ctx *ctx, h5ark_value *names, h5ark_error *err) {
    if (names && h5ark_value_len(names) == 0) {
        h5ark_value_destroy(&names);
        return 0;
    }
    h5ark_value *args = h5ark_value_map();
    if (!names || !args || h5ark_value_set(args, "names", names) != 0) {
        if (!args) h5ark_value_destroy(&names);
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    dispatch_result res;
    int rc = ak_native(ctx, "delete", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc == 0) dispatch_result_free(&res);
    return rc;
}

/* Whether the caller's registered name `reg` stands (the native info). */
static bool registered(ak_ctx *ctx, const char *reg) {
    dispatch_result res;
    if (ak_describe(ctx, reg, &res, &(h5ark_error){0})) return false;
    bool yes = h5ark_value_get(h5ark_value_at(h5ark_value_get(res.result, "objects"), 0),
                               "registered") != NULL;
    dispatch_result_free(&res);
    return yes;
}

/* Whether a registered name of the caller's that stands keeps `name` (pins.h); one that no
 * longer does (deleted through another door) keeps nothing any more. */
static bool kept(ak_ctx *ctx, const char *name) {
    json_t *holders = ak_pins_holders(name), *reg;
    size_t i;
    bool yes = false;
    json_array_foreach(holders, i, reg) {
        if (yes) break;
        yes = registered(ctx, json_string_value(reg));
        if (!yes) ak_pins_drop(json_string_value(reg));
    }
    json_decref(holders);
    return yes;
}

/* through the native delete, which runs on every rank; as Arkouda's, a registered name or
 * a part one keeps is not deleted (the client's objects send delete when they go) */
static int cmd_delete(ak_ctx *ctx, h5ark_error *err) {
    const char *name;
    dispatch_result res;
    if (ak_arg_str(ctx->in, "name", &name, err) || ak_describe(ctx, name, &res, err)) return -1;
    const h5ark_value *d = h5ark_value_at(h5ark_value_get(res.result, "objects"), 0);
    bool own = !strchr(name, '/'), reg = own && h5ark_value_get(d, "registered");
    dispatch_result_free(&res);
    if (reg || (own && kept(ctx, name)))
        return ak_reply(ctx, err, "registered symbol, %s, not deleted", name);
    h5ark_value *names = h5ark_value_array();
    if (names && h5ark_value_push(names, h5ark_value_str(name)) != 0) h5ark_value_destroy(&names);
    if (delete_names(ctx, names, err)) return -1;
    return ak_reply(ctx, err, "deleted %s", name);
}

/* clear: the caller's objects go but registered names and the parts they keep, as
 * Arkouda's clear (its SymTab.clear keeps registered entries); others' objects shared with
 * the caller stay. A name another request deletes meanwhile is no error. */
static int cmd_clear(ak_ctx *ctx, h5ark_error *err) {
    for (int attempt = 0;; attempt++) {
        dispatch_result res;
        if (ak_list_objects(ctx, &res, err)) return -1;
        const h5ark_value *objs = h5ark_value_get(res.result, "objects");
        h5ark_value *names = h5ark_value_array();
        for (size_t i = 0; names && i < h5ark_value_len(objs); i++) {
            const h5ark_value *d = h5ark_value_at(objs, i);
            const char *name = ak_desc_str(d, "name");
            if (h5ark_value_get(d, "registered") || !*name || strchr(name, '/') || kept(ctx, name))
                continue;
            if (h5ark_value_push(names, h5ark_value_str(name))) h5ark_value_destroy(&names);
        }
        dispatch_result_free(&res);
        if (delete_names(ctx, names, err) == 0) return ak_reply(ctx, err, "success");
        /* not_found: one went meanwhile; the rest, listed again */
        if (err->code != H5ARK_NOT_FOUND || attempt == 3) return -1;
        *err = (h5ark_error){0};
    }
}

/* Arkouda's entry for an object the native info described. */
static json_t *describe(const h5ark_value *d) {
    uint64_t dims[OBJECT_MAX_DIMS];
    unsigned ndim = ak_desc_shape(d, dims);
    json_t *shape = json_array();
    for (unsigned k = 0; k < ndim; k++)
        json_array_append_new(shape, json_integer((json_int_t)dims[k]));
    bool strings = strcmp(ak_desc_str(d, "objtype"), "strings") == 0;
    h5ark_dtype dtype = H5ARK_INT64;
    h5ark_dtype_from_name(ak_desc_str(d, "dtype"), &dtype);
    return json_pack("{s:s,s:s,s:I,s:i,s:o,s:i,s:b}", "name", ak_desc_str(d, "name"), "dtype",
                     strings ? "str" : ak_dtype_name(dtype), "size",
                     (json_int_t)ak_desc_uint(d, "size"), "ndim", (int)ndim, "shape", shape,
                     "itemsize", strings ? 1 : (int)ak_itemsize(dtype), "registered",
                     h5ark_value_get(d, "registered") != NULL);
}

/* names: "__AllSymbols__", "__RegisteredSymbols__" (the caller's registered names), a
 * name, or a JSON list of names: the native info. */
static int cmd_info(ak_ctx *ctx, h5ark_error *err) {
    const char *names;
    if (ak_arg_str(ctx->in, "names", &names, err)) return -1;
    json_t *list = json_array();
    if (!list) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    bool registered = strcmp(names, "__RegisteredSymbols__") == 0;
    h5ark_value *args = h5ark_value_map(), *given = NULL;
    if (args && !registered && strcmp(names, "__AllSymbols__") != 0) {
        given = names[0] == '[' ? ak_names_arg(ctx, "names", err) : h5ark_value_array();
        if (given && names[0] != '[' && h5ark_value_push(given, h5ark_value_str(names)))
            h5ark_value_destroy(&given);
        if (!given || h5ark_value_set(args, "names", given)) h5ark_value_destroy(&args);
    }
    dispatch_result res;
    int rc = !args ? (err->code ? -1 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"))
                   : ak_native(ctx, "info", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) {
        json_decref(list);
        return -1;
    }
    const h5ark_value *objs = h5ark_value_get(res.result, "objects");
    for (size_t i = 0; i < h5ark_value_len(objs); i++) {
        const h5ark_value *d = h5ark_value_at(objs, i);
        if (!registered || h5ark_value_get(d, "registered"))
            json_array_append_new(list, describe(d));
    }
    dispatch_result_free(&res);
    return ak_reply_value(ctx, list, err);
}

const ak_command ak_session_commands[] = {
    {"connect", cmd_connect, AK_READ_ONLY | AK_IMMEDIATE, RANKS_ZERO},
    {"disconnect", cmd_disconnect, AK_READ_ONLY | AK_IMMEDIATE, RANKS_ZERO},
    {"getconfig", cmd_getconfig, AK_READ_ONLY | AK_IMMEDIATE, RANKS_ZERO},
    {"getRegistrationConfig", cmd_registration, AK_READ_ONLY | AK_IMMEDIATE, RANKS_ZERO},
    {"note", cmd_note, AK_READ_ONLY | AK_IMMEDIATE, RANKS_ZERO},
    {"delete", cmd_delete, 0, RANKS_ZERO},
    {"clear", cmd_clear, 0, RANKS_ZERO},
    {"info", cmd_info, AK_READ_ONLY, RANKS_ZERO},
    {0},
};
