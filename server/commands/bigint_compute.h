/* bigint compute: bigint_binop, bigint_full, bigint_fill and bigint_assign (bigint_compute.c),
 * listed in bigint_ops.c's table with the other bigint commands. */
#ifndef H5ARK_BIGINT_COMPUTE_H
#define H5ARK_BIGINT_COMPUTE_H

#include "dispatch.h"

int bigint_cmd_binop(command_ctx *ctx, h5ark_error *err);
int bigint_cmd_full(command_ctx *ctx, h5ark_error *err);
int bigint_cmd_fill(command_ctx *ctx, h5ark_error *err);
int bigint_cmd_assign(command_ctx *ctx, h5ark_error *err);

#endif
