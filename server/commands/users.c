/* Commands about the caller and the token file (SERVICE.md §1): whoami, reload. */
#include "commands.h"

#include "entry.h"
#include "registry.h"
#include "storage/files.h"

#include <stdio.h>

/* What the caller holds: {memory, disk, objects, requests}. Without users everyone is the
 * same caller: the daemon's objects, and no owner of files or count of requests (nil). */
static h5ark_value *usage_value(const user *u) {
    uint64_t memory = registry_memory_used(), objects = registry_count();
    if (u) registry_usage_of(u->name, &memory, &objects);
    h5ark_value *m = h5ark_value_map();
    if (h5ark_value_set(m, "memory", h5ark_value_uint(memory)) ||
        h5ark_value_set(m, "disk",
                        u ? h5ark_value_uint(files_disk_usage_of(u->name)) : h5ark_value_nil()) ||
        h5ark_value_set(m, "objects", h5ark_value_uint(objects)) ||
        h5ark_value_set(m, "requests",
                        u ? h5ark_value_int(users_requests_in_flight(u)) : h5ark_value_nil()))
        h5ark_value_destroy(&m);
    return m;
}

static int cmd_whoami(command_ctx *ctx, h5ark_error *err) {
    const caller *who = entry_caller();
    const user *u = who ? who->user : NULL;
    h5ark_value *record = entry_user_value(u), *usage = usage_value(u);
    int rc = -1;
    if (record && usage) {
        rc = 0;
        for (size_t i = 0; rc == 0 && i < h5ark_value_len(record); i++) {
            rc = reply_set(ctx, record->as.m.keys[i], record->as.m.vals[i], err);
            record->as.m.vals[i] = NULL; /* handed over */
        }
        const char *role = users_role_name(who ? who->role : ROLE_WRITE);
        if (rc == 0) rc = reply_set(ctx, "role", h5ark_value_str(role), err);
        if (rc == 0) rc = reply_set(ctx, "usage", usage, err);
        usage = NULL;
    } else {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    h5ark_value_destroy(&record);
    h5ark_value_destroy(&usage);
    return rc;
}

static int cmd_reload(command_ctx *ctx, h5ark_error *err) {
    char why[1024];
    if (users_reread("reload", why, sizeof why))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s", why);
    users_table *t = users_acquire();
    h5ark_value *groups = h5ark_value_array();
    for (size_t i = 0; groups && i < users_group_count(t); i++)
        if (h5ark_value_push(groups, h5ark_value_str(users_group(t, i))))
            h5ark_value_destroy(&groups);
    size_t tokens = users_token_count(t), users = users_count(t);
    users_release(t);
    if (!groups) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return reply_set(ctx, "groups", groups, err) ||
                   reply_set(ctx, "tokens", h5ark_value_uint(tokens), err) ||
                   reply_set(ctx, "users", h5ark_value_uint(users), err)
               ? -1
               : 0;
}

const command_def user_commands[] = {
    /* rank 0 keeps the token table; the other ranks get each request's caller with it */
    {"whoami", cmd_whoami, {{0}}, .read_only = true, .ranks = RANKS_ZERO},
    {"reload", cmd_reload, {{0}}, .admin_only = true, .ranks = RANKS_ZERO},
    {0},
};
