/* The HSDS endpoint's JSON text and the base64 of Basic credentials (hsds.c's answers and
 * credentials; below it). */
#ifndef H5ARK_HSDS_JSON_H
#define H5ARK_HSDS_JSON_H

#include "h5ark_value.h"

#include <stddef.h>

/* v as JSON text (malloc'd, *len its length): maps as objects, NaN and infinities as the
 * bare tokens NaN, Infinity, -Infinity. NULL when out of memory. */
char *hsds_json_text(const h5ark_value *v, size_t *len);
/* Decode standard base64 into out (at most outlen - 1 bytes, NUL-terminated): its length,
 * or -1 when malformed or too long. */
long hsds_base64_decode(const char *in, char *out, size_t outlen);

#endif
