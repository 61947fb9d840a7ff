/* Arkouda's save_checkpoint and load_checkpoint: the native `checkpoint {path, name, mode}`
 * and `load_checkpoint {path, name}` (commands/checkpoint.c), so every objtype is saved,
 * in h5ark's format, in the folder `<path>/<name>` of the data directory (`path` absolute or
 * not, as Arkouda's client sends it). Each answers the checkpoint's name, as Arkouda's
 * server does. */
#include "front/arkouda/commands.h"

#include <string.h>

/* The native command `cmd` with {path, name[, mode]} from the request; reply the name. */
static int run(ak_ctx *ctx, const char *cmd, bool with_mode, h5ark_error *err) {
    const char *path, *name, *mode = NULL;
    if (ak_arg_str(ctx->in, "path", &path, err) || ak_arg_str(ctx->in, "name", &name, err) ||
        (with_mode && ak_arg_str(ctx->in, "mode", &mode, err)))
        return -1;
    char rel[PATH_MAX];
    if (ak_client_path(path, true, rel, err)) return -1;
    h5ark_value *args = h5ark_value_map();
    h5ark_value_set(args, "path", h5ark_value_str(rel));
    h5ark_value_set(args, "name", h5ark_value_str(name));
    if (mode) h5ark_value_set(args, "mode", h5ark_value_str(mode));
    if (h5ark_value_len(args) != (mode ? 3u : 2u)) {
        h5ark_value_destroy(&args);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    dispatch_result res;
    int rc = ak_native(ctx, cmd, args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    const h5ark_value *made = h5ark_value_get(res.result, "checkpoint");
    rc = made && made->kind == H5ARK_STR
             ? ak_reply(ctx, err, "%s", made->as.s.ptr)
             : h5ark_fail(err, H5ARK_INTERNAL, "%s answered no checkpoint name", cmd);
    dispatch_result_free(&res);
    return rc;
}

static int cmd_save(ak_ctx *ctx, h5ark_error *err) {
    return run(ctx, "checkpoint", true, err);
}

static int cmd_load(ak_ctx *ctx, h5ark_error *err) {
    return run(ctx, "load_checkpoint", false, err);
}

const ak_command ak_ckpt_commands[] = {
    {"save_checkpoint", cmd_save, 0, RANKS_ZERO},
    {"load_checkpoint", cmd_load, 0, RANKS_ZERO},
    {0},
};
