/* SHA-256 (FIPS 180-4), for names derived from paths (the HSDS endpoint's object ids). */
#ifndef H5ARK_SHA256_H
#define H5ARK_SHA256_H

#include <stddef.h>
#include <stdint.h>

void sha256(const void *data, size_t len, uint8_t out[32]);

#endif
