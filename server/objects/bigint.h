/* bigint pdarrays: arbitrary-width integers stored as limbs. An object of objtype pdarray
 * and dtype bigint whose components `Limb_0` ... `Limb_{k-1}` are uint64 pdarrays, least
 * significant limb first, all of the array's length. `max_bits` (-1: unbounded) bounds
 * every value. */
#ifndef H5ARK_BIGINT_H
#define H5ARK_BIGINT_H

#include "h5ark_frames.h"
#include "object.h"

/* Build a bigint array of n elements from a request's buffers, which must be exactly
 * `Limb_0` ... `Limb_{k-1}` (k >= 1, any order), each n uint64 values (bad_request naming
 * the buffer otherwise). max_bits must be >= -1 (bad_request); when >= 0 every value must
 * fit in max_bits bits, checked on the locales in parallel (type_error naming the first
 * element that does not). */
object *bigint_from_payload(uint64_t n, int64_t max_bits, const h5ark_payload *payload,
                            const h5ark_buffer_list *buffers, h5ark_error *err);

#endif
