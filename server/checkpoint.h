/* Checkpoints: every object written to --checkpoint-dir and restored at the next start
 * (SERVICE.md §5, docs/DESIGN.md "Checkpoints").
 *
 * A checkpoint is a folder `<dir>/<id>` (ids sort by time): per-locale HDF5 files in
 * Arkouda's layout (data_LOCALE####.h5, written by tohdf's writer) and manifest.json, which
 * names every object, its dataset, owner, grants and descriptor, and every file with its
 * size. It is written as `<dir>/.tmp-<id>`, every file fsynced, the manifest last, then
 * renamed into place and the parent fsynced: a folder without the `.tmp-` prefix is
 * complete. This file holds the daemon's side (the folder, the restore at start, the
 * timer, the state getconfig reports); commands/checkpoint.c the commands and the format. */
#ifndef H5ARK_CHECKPOINT_H
#define H5ARK_CHECKPOINT_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* main.c, once the options are read: --checkpoint-dir made with its parents and checked
 * writable (the message names it), and on rank 0 the temporaries of a checkpoint a killed
 * daemon left removed. 0 when off. */
int checkpoint_configure(void);
/* Rank 0, once the ranks serve: the restore of the newest complete checkpoint begins on a
 * thread of its own (requests get `busy` until it ends), then the periodic checkpoints. */
void checkpoint_start(void);
/* Rank 0, when the router has stopped: the restore and the timer end; with `write`
 * and --checkpoint-on-exit, one last checkpoint first. */
void checkpoint_stop(bool write);

/* busy (0 when not) for a request named `name` while the restore runs: all but ping,
 * getconfig and status. */
int checkpoint_refuses(const char *name, h5ark_error *err);
/* getconfig's keys: `restoring` and `checkpoint` ({id, time, objects} of the newest
 * complete checkpoint restored or written, or nil). Each 0 or -1 when out of memory. */
int checkpoint_config(h5ark_value *result);

/* ---- for commands/checkpoint.c ---- */

/* The folder (absolute), or NULL when --checkpoint-dir is off. */
const char *checkpoint_dir(void);
/* A new id, later than every one in `dir`: "YYYYMMDDTHHMMSS.mmmZ". */
void checkpoint_new_id(const char *dir, char id[32]);
/* A checkpoint was written or restored: remember it for getconfig. */
void checkpoint_note(const char *id, double time, uint64_t objects, uint64_t changes);
/* Keep the newest `keep` complete checkpoints of dir; remove the rest. */
void checkpoint_prune(const char *dir, int keep);
/* A killed checkpoint's temporary folder (".tmp-..."). */
bool checkpoint_is_temporary(const char *name);
/* The complete checkpoints of dir, newest first (free with checkpoint_list_free). */
char **checkpoint_list_complete(const char *dir, size_t *count);
void checkpoint_list_free(char **list, size_t n);

/* ---- for checkpoint_service.c, the restore and the timer ---- */

/* A restore of checkpoint `id` (NULL: not known yet) runs (on) or has ended. */
void checkpoint_restoring(bool on, const char *id);
/* A whole checkpoint could not be restored here: none is pruned until the next start. */
void checkpoint_keep_all(void);
bool checkpoint_kept_all(void);
/* Objects changed since the last checkpoint written or restored (or checkpoint_seen_now). */
bool checkpoint_changed(void);
void checkpoint_seen_now(void);

/* Remove a folder of files (a checkpoint, a temporary, one being replaced). */
int checkpoint_remove_folder(const char *path);
/* fsync a folder (after a rename in it). */
int checkpoint_sync_folder(const char *path, h5ark_error *err);

#endif
