/* tohdf's files (write.c) and the steps it leaves to files of their own: sharing rank 0's
 * layout with every rank (write_share.c) and the compressed chunks, which only rank 0's
 * HDF5 may add to a file (write_chunks.c). repack.c copies files with the same helpers. */
#ifndef H5ARK_STORAGE_WRITE_FILES_H
#define H5ARK_STORAGE_WRITE_FILES_H

#include "storage.h"

#include "locales.h"
#include "plan.h"

#include <limits.h>
#include <stdbool.h>

/* A file of a request: names and resolved on rank 0, the temporary (and the name it is shown
 * by) on every rank once the layout is shared. */
typedef struct {
    char rel[PATH_MAX];   /* as the client names it */
    char final[PATH_MAX]; /* resolved */
    char tmp[PATH_MAX];
    bool dir_missing; /* its directory is created only once everything is checked */
    bool exists;
    bool tmp_made;
    hid_t h5; /* kept open while the chunks are added (rank 0), else H5I_INVALID_HID */
} out_file;

typedef struct {
    const write_plan *plan;
    const out_file *files;
    locale_errors le;
} write_job;

/* A temporary of a failed write: one more try when removing it fails (a transient error),
 * and what still fails is left to the next start's sweep. */
void write_remove_temp(const char *tmp);
/* Push fmt (with arg) as a string onto list. */
int write_list_add(h5ark_value *list, const char *fmt, const char *arg, h5ark_error *err);

/* Rank 0 laid the files out (of, nfiles alike on every rank): every other rank gets the
 * temporaries (and the names they are shown by) and the planned regions of its own locales,
 * and every chunk. Every rank calls it; with one rank, nothing. */
int write_share_plan(const storage_item *items, size_t nitems, out_file *of, int nfiles,
                     write_plan *plan, h5ark_error *err);
/* Per-locale files: the elements of other ranks' shards rank 0's layout reads
 * (plan_int64_at), fetched before it into plan->fetched. Every rank calls it. */
int write_fetch_layout(const storage_item *items, size_t nitems, write_plan *plan,
                       h5ark_error *err);
/* The compressed chunks of a write (after write_share_plan), made by the locales of the rank
 * owning each and added to the file by rank 0. rc: this rank's status so far; every rank
 * gets the same outcome. */
int write_compressed_chunks(write_job *job, write_plan *plan, int rc, h5ark_error *err);

#endif
