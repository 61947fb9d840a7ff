/* bigint compute of the Arkouda dialect (bigint_ops.c): compute.c's binops and create hand
 * a request whose template names bigint here. */
#ifndef H5ARK_AK_BIGINT_OPS_H
#define H5ARK_AK_BIGINT_OPS_H

#include "front/arkouda/commands.h"

/* Whether the template names bigint (any of its dtype parameters). */
bool ak_bigint_template(const ak_request *in);
/* binopvv / binopvs / binopsv with a bigint side: the native bigint_binop. */
int ak_bigint_binop(ak_ctx *ctx, h5ark_error *err);
/* create<bigint,1> {shape}: zeros, the native bigint_full. */
int ak_bigint_create(ak_ctx *ctx, h5ark_error *err);

/* set<bigint,1> {array, dtype, val}: the native bigint_fill. */
int ak_bigint_set(ak_ctx *ctx, h5ark_error *err);
/* cast<T,bigint,1> {name}: a new bigint of the values (refused to any other dtype). */
int ak_bigint_cast(ak_ctx *ctx, h5ark_error *err);
/* str / repr of a bigint array (compute.c's str hands it here). */
int ak_bigint_str(ak_ctx *ctx, const ak_array *a, int64_t thresh, h5ark_error *err);
/* A bigint element in decimal (malloc'd; NULL without memory) from its k limbs x, least
 * significant first (changed here). */
char *ak_bigint_decimal(uint64_t *x, size_t k);
/* The reply's bytes, every span end to end, into out (n bytes at most); how many. */
uint64_t ak_result_bytes(const dispatch_result *res, void *out, uint64_t n);

#endif
