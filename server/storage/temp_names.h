/* The names of the files a write makes beside the one it replaces: a temporary, renamed
 * over the file when complete, and a twin (twin.h). Below every writer and files.h, which
 * removes those an earlier daemon left (files_remove_stale_temps). */
#ifndef H5ARK_TEMP_NAMES_H
#define H5ARK_TEMP_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* A fresh temporary name in the same directory as `final` (for write-then-rename):
 * ".<name>.h5ark-tmp.<pid>.<n>". -1 when it does not fit in outlen. */
int temp_name_for(const char *final, char *out, size_t outlen);
/* The twin of a file written in parts (twin.h): ".<name>.h5ark-twin" beside it. Removed
 * with the temporaries at start, as no twin is known level then. */
int twin_name_for(const char *final, char *out, size_t outlen);
/* A directory entry's name is a temporary's or a twin's: one left in the data directory
 * was being written when an earlier daemon died. */
bool temp_name_is_left_over(const char *name);

#endif
