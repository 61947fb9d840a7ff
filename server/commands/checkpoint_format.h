/* A checkpoint's folder as commands/checkpoint.c writes and reads it (checkpoint.h says
 * what is in it): for the daemon's side (checkpoint.c) and the Arkouda dialect's
 * save_checkpoint / load_checkpoint. */
#ifndef H5ARK_CHECKPOINT_FORMAT_H
#define H5ARK_CHECKPOINT_FORMAT_H

#include "command.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The commands (a table of dispatch.c's): checkpoint, and the restore the daemon asks itself. */
extern const command_def checkpoint_commands[];

#define CHECKPOINT_FORMAT   "h5ark-checkpoint"
#define CHECKPOINT_VERSION  1
#define CHECKPOINT_MANIFEST "manifest.json"
/* Arkouda's server metadata, beside the manifest */
#define CHECKPOINT_SERVER_META "server.md"

typedef struct {
    char id[64];
    uint64_t objects, bytes; /* bytes: of the files written, of the objects read */
    double time;             /* when it was written (Unix seconds) */
    double seconds;          /* how long it took */
    uint64_t changes;        /* registry_changes() when the objects were taken */
} checkpoint_written;

/* Every rank, within one call: every object of every owner (everyone: the daemon's own
 * checkpoints), or the caller's own objects (a checkpoint in the data directory), into the folder
 * `<parent>/<id>` (id NULL: a new one, checkpoint_new_id), written as `.tmp-<id>` and
 * renamed into place; an existing one is refused with already_exists unless `overwrite`.
 * On failure nothing of it is left. */
int checkpoint_write(const char *parent, const char *id, bool overwrite, bool everyone,
                     checkpoint_written *out, h5ark_error *err);
/* Every rank, within one call: publish every object of the checkpoint `folder` (absolute)
 * under its name, all or none; `replace`: over objects of the same names (else
 * already_exists). Differences of a descriptor read back go to `warnings`. */
int checkpoint_read(const char *folder, bool replace, checkpoint_written *out,
                    h5ark_value *warnings, h5ark_error *err);
/* The manifest of `folder`, checked: its format and version, and every file it names
 * there with its size (schema_error naming the folder otherwise). */
int checkpoint_read_manifest(const char *folder, json_t **manifest, h5ark_error *err);

#endif
