/* The HSDS endpoint's operations as native commands (storage/h5obj.h): h5domain, h5domains,
 * h5get, h5links, h5link, h5shape, h5attrs, h5attr, h5value and the changes. Answers are the
 * HSDS JSON shapes as result maps; h5value's bytes come as the binary `value`. */
#include "commands/commands.h"
#include "access.h"
#include "entry.h"
#include "storage/h5obj.h"

#include <stdlib.h>
#include <string.h>

static h5obj_coll coll_arg(command_ctx *ctx) {
    const char *c = arg_str(ctx, "collection", "");
    return c[0] == 'g'   ? H5OBJ_GROUPS
           : c[0] == 'd' ? H5OBJ_DATASETS
           : c[0] == 't' ? H5OBJ_DATATYPES
                         : H5OBJ_ANY;
}

static int run_op(command_ctx *ctx, h5obj_op op, h5ark_error *err) {
    const caller *who = entry_caller();
    h5obj_args a = {
        .op = op,
        .domain = arg_str(ctx, "domain", ""),
        .coll = coll_arg(ctx),
        .id = arg_str(ctx, "id", NULL),
        .name = arg_str(ctx, "name", NULL),
        .names = arg_str(ctx, "names", NULL),
        .sep = arg_str(ctx, "separator", NULL),
        .fields = arg_str(ctx, "fields", NULL),
        .owner = who && who->user ? who->user->name : NULL,
        .verbose = arg_bool(ctx, "verbose", false),
        .getalias = arg_bool(ctx, "getalias", false),
        .include_data = arg_bool(ctx, "include_data", false),
        .create_order = arg_bool(ctx, "create_order", false),
        .follow_links = arg_bool(ctx, "follow_links", false),
        .pattern = arg_str(ctx, "pattern", NULL),
        .marker = arg_str(ctx, "marker", NULL),
        .limit = arg_int(ctx, "limit", 0),
        .select = arg_str(ctx, "select", NULL),
        .json_values = arg_bool(ctx, "json", false),
        .max_bytes = H5OBJ_MAX_REQUEST,
        .body = arg_str(ctx, "body", NULL),
        .replace = arg_bool(ctx, "replace", false),
        .element_count = arg_bool(ctx, "element_count", false),
    };
    a.body_len = a.body ? strlen(a.body) : 0;
    /* points: rank coordinates a point, flat, as uint64 little-endian */
    const h5ark_value *pts = arg_value(ctx, "points");
    size_t n = pts ? h5ark_value_len(pts) : 0;
    unsigned char *points = pts ? malloc(n ? n * 8 : 1) : NULL;
    if (pts && !points) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        h5ark_value_to_uint64(h5ark_value_at(pts, i), &v);
        for (int s = 0; s < 8; s++)
            points[i * 8 + (size_t)s] = (unsigned char)(v >> (8 * s));
    }
    a.points = points;
    a.points_len = n * 8;
    file_access fa = access_here();
    a.fa = &fa;
    h5obj_answer out;
    int rc = h5obj_run(&a, &out, err);
    free(points);
    if (rc) return -1;
    for (size_t i = 0; rc == 0 && out.json && i < h5ark_value_len(out.json); i++)
        rc = reply_set(ctx, out.json->as.m.keys[i], h5ark_value_copy(out.json->as.m.vals[i]), err);
    if (rc == 0 && op == H5OBJ_VALUE && !a.json_values)
        rc = reply_set(ctx, "value", h5ark_value_bin(out.bytes ? out.bytes : "", out.nbytes), err);
    h5obj_answer_free(&out);
    return rc;
}

#define OP_COMMAND(fn, op)                                                                         \
    static int fn(command_ctx *ctx, h5ark_error *err) {                                            \
        return run_op(ctx, op, err);                                                               \
    }
OP_COMMAND(cmd_h5domain, H5OBJ_DOMAIN)
OP_COMMAND(cmd_h5get, H5OBJ_GET)
OP_COMMAND(cmd_h5links, H5OBJ_LINKS)
OP_COMMAND(cmd_h5link, H5OBJ_LINK)
OP_COMMAND(cmd_h5shape, H5OBJ_SHAPE)
OP_COMMAND(cmd_h5attrs, H5OBJ_ATTRS)
OP_COMMAND(cmd_h5attr, H5OBJ_ATTR)
OP_COMMAND(cmd_h5value, H5OBJ_VALUE)
OP_COMMAND(cmd_h5put_domain, H5OBJ_PUT_DOMAIN)
OP_COMMAND(cmd_h5delete_domain, H5OBJ_DELETE_DOMAIN)
OP_COMMAND(cmd_h5post_group, H5OBJ_POST_GROUP)
OP_COMMAND(cmd_h5put_link, H5OBJ_PUT_LINK)
OP_COMMAND(cmd_h5delete_link, H5OBJ_DELETE_LINK)
OP_COMMAND(cmd_h5post_dataset, H5OBJ_POST_DATASET)
OP_COMMAND(cmd_h5put_value, H5OBJ_PUT_VALUE)
OP_COMMAND(cmd_h5put_shape, H5OBJ_PUT_SHAPE)
OP_COMMAND(cmd_h5put_attr, H5OBJ_PUT_ATTR)
OP_COMMAND(cmd_h5delete_attr, H5OBJ_DELETE_ATTR)
OP_COMMAND(cmd_h5domains, H5OBJ_FOLDER)
OP_COMMAND(cmd_h5delete_object, H5OBJ_DELETE_OBJECT)

#define DOMAIN_ARG                                                                                 \
    { "domain", ARG_STR, true }
#define ID_ARGS                                                                                    \
    {"id", ARG_STR, true}, {                                                                       \
        "collection", ARG_STR, false                                                               \
    }
#define LIST_ARGS                                                                                  \
    {"create_order", ARG_BOOL, false}, {"pattern", ARG_STR, false}, {"marker", ARG_STR, false}, {  \
        "limit", ARG_INT, false                                                                    \
    }

#define BODY_ARG                                                                                   \
    { "body", ARG_TEXT, false }
/* several links or attributes: names joined by separator (default "/") */
#define NAMES_ARGS                                                                                 \
    {"name", ARG_STR, false}, {"names", ARG_STR, false}, {                                         \
        "separator", ARG_STR, false                                                                \
    }

/* On rank 0, where the files are opened; the first nine only read. */
const command_def h5obj_commands[] = {
    {"h5domain",
     cmd_h5domain,
     {DOMAIN_ARG, {"verbose", ARG_BOOL, false}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"h5domains",
     cmd_h5domains,
     {DOMAIN_ARG,
      {"pattern", ARG_STR, false},
      {"marker", ARG_STR, false},
      {"limit", ARG_INT, false},
      {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"h5get",
     cmd_h5get,
     {DOMAIN_ARG, ID_ARGS, {"getalias", ARG_BOOL, false}, {"verbose", ARG_BOOL, false}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"h5links",
     cmd_h5links,
     {DOMAIN_ARG, ID_ARGS, LIST_ARGS, {"follow_links", ARG_BOOL, false}, BODY_ARG, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"h5link",
     cmd_h5link,
     {DOMAIN_ARG, ID_ARGS, {"name", ARG_STR, true}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"h5shape", cmd_h5shape, {DOMAIN_ARG, ID_ARGS, {0}}, .read_only = true, .ranks = RANKS_ZERO},
    {"h5attrs",
     cmd_h5attrs,
     {DOMAIN_ARG, ID_ARGS, LIST_ARGS, {"include_data", ARG_BOOL, false}, BODY_ARG, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"h5attr",
     cmd_h5attr,
     {DOMAIN_ARG, ID_ARGS, {"name", ARG_STR, true}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"h5value",
     cmd_h5value,
     {DOMAIN_ARG,
      ID_ARGS,
      {"select", ARG_STR, false},
      {"points", ARG_UINT_ARRAY, false},
      {"json", ARG_BOOL, false},
      {"fields", ARG_STR, false},
      {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    {"h5put_domain", cmd_h5put_domain, {DOMAIN_ARG, BODY_ARG, {0}}, .ranks = RANKS_ZERO},
    {"h5delete_domain", cmd_h5delete_domain, {DOMAIN_ARG, {0}}, .ranks = RANKS_ZERO},
    {"h5post_group", cmd_h5post_group, {DOMAIN_ARG, BODY_ARG, {0}}, .ranks = RANKS_ZERO},
    {"h5post_dataset", cmd_h5post_dataset, {DOMAIN_ARG, BODY_ARG, {0}}, .ranks = RANKS_ZERO},
    {"h5put_link",
     cmd_h5put_link,
     {DOMAIN_ARG, ID_ARGS, {"name", ARG_STR, false}, BODY_ARG, {0}},
     .ranks = RANKS_ZERO},
    {"h5delete_link",
     cmd_h5delete_link,
     {DOMAIN_ARG, ID_ARGS, NAMES_ARGS, {0}},
     .ranks = RANKS_ZERO},
    {"h5put_value",
     cmd_h5put_value,
     {DOMAIN_ARG,
      ID_ARGS,
      {"select", ARG_STR, false},
      {"element_count", ARG_BOOL, false},
      {"fields", ARG_STR, false},
      BODY_ARG,
      {0}},
     .ranks = RANKS_ZERO},
    {"h5put_shape", cmd_h5put_shape, {DOMAIN_ARG, ID_ARGS, BODY_ARG, {0}}, .ranks = RANKS_ZERO},
    {"h5put_attr",
     cmd_h5put_attr,
     {DOMAIN_ARG, ID_ARGS, {"name", ARG_STR, false}, {"replace", ARG_BOOL, false}, BODY_ARG, {0}},
     .ranks = RANKS_ZERO},
    {"h5delete_attr",
     cmd_h5delete_attr,
     {DOMAIN_ARG, ID_ARGS, NAMES_ARGS, {0}},
     .ranks = RANKS_ZERO},
    {"h5delete_object", cmd_h5delete_object, {DOMAIN_ARG, ID_ARGS, {0}}, .ranks = RANKS_ZERO},
    {0}};
