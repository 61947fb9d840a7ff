/* The strings half of the native concatenate (commands/strings_ops.c). */
#ifndef H5ARK_COMMANDS_STRINGS_OPS_H
#define H5ARK_COMMANDS_STRINGS_OPS_H

#include "objects/object.h"

/* Inside a command every rank runs: the strings parts[0..n) end to end, as a new strings
 * object (unpublished) in the block distribution; NULL on every rank when any fails. */
object *strings_concatenate(object *const *parts, size_t n, h5ark_error *err);

#endif
