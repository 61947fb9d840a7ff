/* Commands about the daemon and its registry: ping getconfig status info delete clear
 * share unshare register unregister shutdown, and the test-only fault. */
#include "commands.h"

#include "checkpoint.h"
#include "config.h"
#include "inflight.h"
#include "locales.h"
#include "memory.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "registry.h"
#include "shardcache.h"
#include "sysio.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static h5ark_value *str_or_nil(const char *s) {
    return s ? h5ark_value_str(s) : h5ark_value_nil();
}

static int cmd_ping(command_ctx *ctx, h5ark_error *err) {
    return reply_set(ctx, "pong", h5ark_value_bool(true), err);
}

static int cmd_getconfig(command_ctx *ctx, h5ark_error *err) {
    unsigned maj, min, rel;
    char hdf5[32], zmqv[32];
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
    int zmaj, zmin, zpatch;
    zmq_version(&zmaj, &zmin, &zpatch);
    snprintf(zmqv, sizeof zmqv, "%d.%d.%d", zmaj, zmin, zpatch);
    if (reply_set(ctx, "version", h5ark_value_str(H5ARK_VERSION_STRING), err) ||
        reply_set(ctx, "protocol", h5ark_value_uint(H5ARK_PROTOCOL_VERSION), err) ||
        reply_set(ctx, "locales", h5ark_value_uint((uint64_t)locales_count()), err) ||
        reply_set(ctx, "max_memory", h5ark_value_uint(registry_memory_limit()), err) ||
        reply_set(ctx, "memory_used", h5ark_value_uint(registry_memory_used()), err) ||
        reply_set(ctx, "shard_cache", h5ark_value_uint(shardcache_limit()), err) ||
        reply_set(ctx, "memory_cached", h5ark_value_uint(shardcache_bytes()), err) ||
        reply_set(ctx, "memory_resident", h5ark_value_uint(memory_resident()), err) ||
        reply_set(ctx, "idle_release", h5ark_value_float(config.give_back_after), err) ||
        reply_set(ctx, "auth", h5ark_value_bool(config.token_file != NULL), err) ||
        reply_set(ctx, "encrypted", h5ark_value_bool(config.curve_secret[0] != '\0'), err) ||
        reply_set(ctx, "hdf5_version", h5ark_value_str(hdf5), err) ||
        reply_set(ctx, "zmq_version", h5ark_value_str(zmqv), err) ||
        reply_set(ctx, "data_dir", h5ark_value_str(config.data_dir), err) ||
        reply_set(ctx, "metrics_endpoint", str_or_nil(config.metrics_bound), err) ||
        reply_set(ctx, "http_endpoint", str_or_nil(config.http_bound), err) ||
        reply_set(ctx, "hsds_endpoint", str_or_nil(config.hsds_bound), err))
        return -1;
    /* ranks: the processes of the daemon; hosts: each rank's host name, in rank order */
    h5ark_value *hosts = spmd_hosts();
    if (!hosts) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (reply_set(ctx, "ranks", h5ark_value_uint(h5ark_value_len(hosts)), err) ||
        reply_set(ctx, "hosts", hosts, err) ||
        reply_set(ctx, "locales_per_rank", h5ark_value_uint((uint64_t)locales_local_count()), err))
        return -1;
    if (checkpoint_config(ctx->result) != 0)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory building the reply");
    return 0;
}

/* On the router thread, so it answers while every handler is busy with long work. */
static int cmd_status(command_ctx *ctx, h5ark_error *err) {
    h5ark_value *list = h5ark_value_array();
    if (!list || inflight_list(list, arg_str(ctx, "client", NULL))) {
        h5ark_value_destroy(&list);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory listing the requests");
    }
    return reply_set(ctx, "requests", list, err);
}

static int cmd_info(command_ctx *ctx, h5ark_error *err) {
    h5ark_value *list = h5ark_value_array();
    const h5ark_value *names = arg_value(ctx, "names");
    if (names) {
        for (size_t i = 0; i < h5ark_value_len(names); i++) {
            object *obj = registry_get(h5ark_value_at(names, i)->as.s.ptr, err);
            if (!obj) {
                h5ark_value_destroy(&list);
                return -1;
            }
            h5ark_value_push(list, object_describe_as(obj, h5ark_value_at(names, i)->as.s.ptr));
            object_release(obj);
        }
    } else {
        size_t n;
        object **all = registry_list(&n);
        for (size_t i = 0; i < n; i++)
            h5ark_value_push(list, object_describe(all[i]));
        registry_list_free(all, n);
    }
    return reply_set(ctx, "objects", list, err);
}

static int cmd_delete(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *names = arg_value(ctx, "names");
    /* all or nothing: check every name first */
    for (size_t i = 0; i < h5ark_value_len(names); i++)
        if (registry_delete(h5ark_value_at(names, i)->as.s.ptr, true, err)) return -1;
    h5ark_value *deleted = h5ark_value_array();
    for (size_t i = 0; i < h5ark_value_len(names); i++) {
        const char *name = h5ark_value_at(names, i)->as.s.ptr;
        h5ark_error ignore;
        /* a name listed twice, or deleted meanwhile by another client, is not an error */
        if (registry_delete(name, false, &ignore) == 0)
            h5ark_value_push(deleted, h5ark_value_str(name));
    }
    return reply_set(ctx, "deleted", deleted, err);
}

/* the caller's objects; {"all": true}: everyone's (an admin's, with users on) */
static int cmd_clear(command_ctx *ctx, h5ark_error *err) {
    size_t deleted = 0;
    if (!arg_bool(ctx, "all", false))
        deleted = registry_clear();
    else if (registry_clear_all(&deleted, err))
        return -1;
    /* Nothing is left to reuse the memory for: give it back now rather than when idle.
     * (Objects a reply still sends from are freed when it has gone, and given back when
     * the daemon is next idle.) */
    memory_give_back();
    return reply_set(ctx, "deleted", h5ark_value_uint(deleted), err);
}

/* share / unshare {"names", "with"}: every name checked first, then every grant changed */
static int change_grants(command_ctx *ctx, bool share, h5ark_error *err) {
    const h5ark_value *names = arg_value(ctx, "names"), *with = arg_value(ctx, "with");
    size_t n = h5ark_value_len(with);
    const char *subjects[64];
    if (n > sizeof subjects / sizeof subjects[0])
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'with' names at most %zu subjects",
                          sizeof subjects / sizeof subjects[0]);
    for (size_t i = 0; i < n; i++)
        subjects[i] = h5ark_value_at(with, i)->as.s.ptr;
    h5ark_value *none = NULL;
    for (size_t i = 0; i < h5ark_value_len(names); i++) { /* all or nothing */
        if (registry_share(h5ark_value_at(names, i)->as.s.ptr, subjects, 0, share, &none, err))
            return -1;
        h5ark_value_destroy(&none);
    }
    h5ark_value *grants = h5ark_value_map();
    if (!grants) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < h5ark_value_len(names); i++) {
        const char *name = h5ark_value_at(names, i)->as.s.ptr;
        h5ark_value *list;
        if (registry_share(name, subjects, n, share, &list, err) ||
            h5ark_value_set(grants, name, list)) {
            h5ark_value_destroy(&grants);
            return list ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory") : -1;
        }
    }
    return reply_set(ctx, "grants", grants, err);
}

static int cmd_share(command_ctx *ctx, h5ark_error *err) {
    return change_grants(ctx, true, err);
}

static int cmd_unshare(command_ctx *ctx, h5ark_error *err) {
    return change_grants(ctx, false, err);
}

/* register {"name", "as"}: the object `name` (the caller's, or one shared with them) under a
 * second name `as` of the caller's, marked registered (Arkouda's registry) */
static int cmd_register(command_ctx *ctx, h5ark_error *err) {
    object *obj = registry_get(arg_str(ctx, "name", ""), err);
    object *twin = obj ? object_twin(obj, err) : NULL;
    object_release(obj);
    if (!twin) return ranks_agree(-1, err);
    twin->registered = true;
    const char *key = "object";
    int rc = command_publish_all(ctx, &twin, &key, 1, arg_str(ctx, "as", ""), err);
    object_release(twin);
    return rc;
}

/* unregister {"name"}: the caller's registered name goes (the object it was made from
 * stays under its own name) */
static int cmd_unregister(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "name", "");
    object *obj = registry_get(name, err);
    bool registered = obj && obj->registered;
    object_release(obj);
    if (!obj) return -1;
    if (!registered)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%.300s' is not a registered name", name);
    if (registry_remove(name, err)) return -1;
    return reply_set(ctx, "deleted", h5ark_value_str(name), err);
}

static int cmd_shutdown(command_ctx *ctx, h5ark_error *err) {
    ctx->shutdown = true;
    return reply_set(ctx, "stopping", h5ark_value_bool(true), err);
}

/* Test-only (H5ARK_FAULTS=1): report the calls since the last fault command, then arm the
 * next fault (nth > 0) or only count (docs/FAULTS.md). */
static int cmd_fault(command_ctx *ctx, h5ark_error *err) {
    if (!sysio_faults_on())
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "fault injection is for tests: start the daemon with %s=1",
                          SYSIO_FAULTS_ENV);
    static const struct {
        const char *name;
        int value;
    } errnos[] = {{"EIO", EIO}, {"ENOSPC", ENOSPC}, {"ENOMEM", ENOMEM}};
    const char *cls = arg_str(ctx, "class", "io"), *ename = arg_str(ctx, "error", "EIO");
    uint64_t nth = arg_uint(ctx, "nth", 0);
    sysio_class c = strcmp(cls, "io") == 0      ? SYSIO_IO
                    : strcmp(cls, "alloc") == 0 ? SYSIO_ALLOC
                                                : SYSIO_CLASSES;
    int e = 0;
    for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
        if (strcmp(ename, errnos[i].name) == 0) e = errnos[i].value;
    if (c == SYSIO_CLASSES || !e)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "fault: class is io or alloc, error EIO, ENOSPC or ENOMEM");
    uint64_t delay = arg_uint(ctx, "delay_ms", 0), pause = arg_uint(ctx, "pause_ms", 0);
    if (delay > 10000)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "fault: delay_ms is at most 10000");
    if (pause > 60000)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "fault: pause_ms is at most 60000");
    /* several ranks: the fault is armed on `rank` only; every rank starts counting again */
    int64_t rank = arg_int(ctx, "rank", 0);
    if (spmd_check_rank(rank, "fault", err)) return -1;
    nth = spmd_on_rank(rank, nth);
    uint64_t counts[SYSIO_CLASSES];
    const char *fired = sysio_faults_report(counts);
    /* the names of the calls, before the arm forgets them */
    h5ark_value *calls[SYSIO_CLASSES] = {h5ark_value_array(), h5ark_value_array()};
    int rc = 0;
    for (int k = 0; k < SYSIO_CLASSES; k++)
        for (uint64_t i = 1; rc == 0 && calls[k] && i <= counts[k]; i++) {
            const char *name = sysio_faults_call((sysio_class)k, i);
            if (name && h5ark_value_push(calls[k], h5ark_value_str(name))) rc = -1;
        }
    sysio_faults_arm(c, nth, e);
    sysio_faults_delay((uint32_t)delay);
    sysio_faults_pause((uint32_t)pause);
    if (rc || !calls[SYSIO_IO] || !calls[SYSIO_ALLOC]) {
        h5ark_value_destroy(&calls[SYSIO_IO]);
        h5ark_value_destroy(&calls[SYSIO_ALLOC]);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    /* both handed over whatever happens (reply_set owns what it is given) */
    int r_io = reply_set(ctx, "io_calls", calls[SYSIO_IO], err);
    int r_alloc = reply_set(ctx, "alloc_calls", calls[SYSIO_ALLOC], err);
    if (r_io || r_alloc || reply_set(ctx, "io", h5ark_value_uint(counts[SYSIO_IO]), err) ||
        reply_set(ctx, "alloc", h5ark_value_uint(counts[SYSIO_ALLOC]), err) ||
        reply_set(ctx, "fired", fired ? h5ark_value_str(fired) : h5ark_value_nil(), err) ||
        reply_set(ctx, "hdf5_open",
                  h5ark_value_int((int64_t)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL)), err))
        return -1;
    return 0;
}

const command_def admin_commands[] = {
    /* .ranks: every rank holds every object's metadata, so commands that read only that (or
     * only rank 0's state) run on rank 0; commands that change objects run everywhere */
    {"ping", cmd_ping, {{0}}, .immediate = true, .read_only = true, .ranks = RANKS_ZERO},
    {"getconfig", cmd_getconfig, {{0}}, .immediate = true, .read_only = true, .ranks = RANKS_ZERO},
    {"status",
     cmd_status,
     {{"client", ARG_STR, false}, {0}},
     .immediate = true,
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"info",
     cmd_info,
     {{"names", ARG_STR_ARRAY, false}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"delete", cmd_delete, {{"names", ARG_STR_ARRAY, true}, {0}}, .ranks = RANKS_EVERY},
    {"clear", cmd_clear, {{"all", ARG_BOOL, false}, {0}}, .ranks = RANKS_EVERY},
    {"share",
     cmd_share,
     {{"names", ARG_STR_ARRAY, true}, {"with", ARG_STR_ARRAY, true}, {0}},
     .ranks = RANKS_EVERY},
    {"unshare",
     cmd_unshare,
     {{"names", ARG_STR_ARRAY, true}, {"with", ARG_STR_ARRAY, true}, {0}},
     .ranks = RANKS_EVERY},
    {"register",
     cmd_register,
     {{"name", ARG_STR, true}, {"as", ARG_STR, true}, {0}},
     .ranks = RANKS_EVERY},
    {"unregister", cmd_unregister, {{"name", ARG_STR, true}, {0}}, .ranks = RANKS_EVERY},
    /* a shared service is stopped by its admins */
    {"shutdown", cmd_shutdown, {{0}}, .admin_only = true, .ranks = RANKS_ZERO},
    {"fault",
     cmd_fault,
     {{"class", ARG_STR, false},
      {"nth", ARG_UINT, false},
      {"error", ARG_STR, false},
      {"delay_ms", ARG_UINT, false},
      {"pause_ms", ARG_UINT, false},
      {"rank", ARG_INT, false},
      {0}},
     .ranks = RANKS_EVERY},
    {0},
};
