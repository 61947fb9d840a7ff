/* Commands about the daemon and its registry: ping getconfig status info delete clear
 * shutdown, and the test-only fault. */
#include "commands.h"

#include "config.h"
#include "inflight.h"
#include "locales.h"
#include "memory.h"
#include "front/gateway.h"
#include "front/hsds.h"
#include "metrics.h"
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
        reply_set(ctx, "auth", h5ark_value_bool(config.ntokens > 0), err) ||
        reply_set(ctx, "encrypted", h5ark_value_bool(config.curve_secret[0] != '\0'), err) ||
        reply_set(ctx, "hdf5_version", h5ark_value_str(hdf5), err) ||
        reply_set(ctx, "zmq_version", h5ark_value_str(zmqv), err) ||
        reply_set(ctx, "data_dir", h5ark_value_str(config.data_dir), err) ||
        reply_set(ctx, "metrics_endpoint",
                  metrics_address() ? h5ark_value_str(metrics_address()) : h5ark_value_nil(),
                  err) ||
        reply_set(ctx, "http_endpoint",
                  gateway_address() ? h5ark_value_str(gateway_address()) : h5ark_value_nil(),
                  err) ||
        reply_set(ctx, "hsds_endpoint",
                  hsds_address() ? h5ark_value_str(hsds_address()) : h5ark_value_nil(), err))
        return -1;
    /* ranks: the processes of the daemon; hosts: each rank's host name, in rank order */
    h5ark_value *hosts = spmd_hosts();
    if (!hosts) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (reply_set(ctx, "ranks", h5ark_value_uint(h5ark_value_len(hosts)), err) ||
        reply_set(ctx, "hosts", hosts, err) ||
        reply_set(ctx, "locales_per_rank", h5ark_value_uint((uint64_t)locales_local_count()), err))
        return -1;
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
    for (size_t i = 0; i < h5ark_value_len(names); i++) {
        object *obj = registry_get(h5ark_value_at(names, i)->as.s.ptr, err);
        if (!obj) return -1;
        object_release(obj);
    }
    h5ark_value *deleted = h5ark_value_array();
    for (size_t i = 0; i < h5ark_value_len(names); i++) {
        const char *name = h5ark_value_at(names, i)->as.s.ptr;
        h5ark_error ignore;
        /* a name listed twice, or deleted meanwhile by another client, is not an error */
        if (registry_remove(name, &ignore) == 0) h5ark_value_push(deleted, h5ark_value_str(name));
    }
    return reply_set(ctx, "deleted", deleted, err);
}

static int cmd_clear(command_ctx *ctx, h5ark_error *err) {
    size_t deleted = registry_clear();
    /* Nothing is left to reuse the memory for: give it back now rather than when idle.
     * (Objects a reply still sends from are freed when it has gone, and given back when
     * the daemon is next idle.) */
    memory_give_back();
    return reply_set(ctx, "deleted", h5ark_value_uint(deleted), err);
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
    {"clear", cmd_clear, {{0}}, .ranks = RANKS_EVERY},
    {"shutdown", cmd_shutdown, {{0}}, .ranks = RANKS_ZERO},
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
