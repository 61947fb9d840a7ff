/* The command families. Each file in commands/ defines one table, ending with an entry
 * whose name is NULL; dispatch.c looks commands up across all of them. */
#ifndef H5ARK_COMMANDS_H
#define H5ARK_COMMANDS_H

#include "command.h"

extern const command_def admin_commands[];     /* ping getconfig info delete clear shutdown */
extern const command_def array_commands[];     /* create put get */
extern const command_def hdf_commands[];       /* tohdf readhdf lshdf repack writepart complete */
extern const command_def composite_commands[]; /* segarray dataframe index reshape tag unpack */
extern const command_def groupby_commands[];   /* groupby aggregate categorical */
extern const command_def lbann_commands[];     /* pack */
extern const command_def compute_commands[];   /* binop cast fill reduce cumsum limitbits */
extern const command_def select_commands[];    /* take slice assign concatenate unique ... */
extern const command_def file_commands[];      /* glob filetype fileformat rmhdf */
extern const command_def strings_commands[];   /* compare split random_strings */
extern const command_def h5obj_commands[];     /* h5domain h5get h5links ... h5value */
extern const command_def bigint_commands[];    /* bigint_arange bigint_limbs bigint_from_limbs */
extern const command_def acl_commands[];       /* getacl setacl */
extern const command_def user_commands[];      /* whoami reload */

/* Publish a freshly built object under args.name (or a generated name) and describe it in
 * the reply's `object`; published on every rank or on none. Takes obj's reference. */
int command_publish(command_ctx *ctx, object *obj, h5ark_error *err);
/* Publish obj under `name` in place of the object of that name, on every rank or on none,
 * and describe it in the reply's `object`; the caller keeps its reference. */
int command_replace(command_ctx *ctx, object *obj, const char *name, h5ark_error *err);
/* Publish objs[0..n) on every rank or on none (the first under first_name when not NULL,
 * fresh names else) and reply each descriptor under keys[i] (keys NULL: none replied); the
 * caller keeps its references. */
int command_publish_all(command_ctx *ctx, object **objs, const char *const *keys, size_t n,
                        const char *first_name, h5ark_error *err);

/* The optional argument `tag` for a pdarray of `dtype` (objtype given): one of the
 * OBJECT_TAG_* strings in *out, or NULL when absent; bad_request for an unknown tag,
 * type_error for one the objtype or dtype cannot take, naming cmd. */
int command_tag_arg(command_ctx *ctx, const char *cmd, h5ark_objtype objtype, h5ark_dtype dtype,
                    const char **out, h5ark_error *err);
/* quota.disk (SERVICE.md §4): may the caller's files grow by `need` bytes, the files
 * replaced[0..n) (absolute) given back? resource_limit naming quota.disk when not; agreed
 * by every rank of the call. Users off or no quota: yes. */
int command_disk_room(uint64_t need, const char *const *replaced, size_t nreplaced,
                      h5ark_error *err);
/* The same for a write of `need` bytes to `path` (a client path); with `replacing`, the
 * files it replaces are path and its distributed set. */
int command_disk_room_at(const char *path, uint64_t need, bool replacing, h5ark_error *err);

#endif
