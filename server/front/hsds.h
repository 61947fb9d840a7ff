/* The HSDS-compatible endpoint (--hsds-endpoint): the REST API of the HDF Group's HSDS that
 * h5pyd and h5web's HSDS provider speak, over the files of the data directory
 * (shared/HSDS_API.md; protocol/PROTOCOL.md, "HSDS endpoint"). This door only speaks HTTP:
 * every request goes through the entry (entry.h) and the work is storage/h5obj.h's. */
#ifndef H5ARK_HSDS_H
#define H5ARK_HSDS_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stddef.h>

/* Serve on `address` ("[HOST:]PORT"); NULL: no endpoint. */
int hsds_start(const char *address, h5ark_error *err);
void hsds_stop(void);
/* "HOST:PORT" bound, or NULL when the endpoint is off. */
const char *hsds_address(void);

/* The names its requests are listed under in `status` and counted under in the metrics,
 * as a command's are: "hsds_" and the operation (h5obj.h), "hsds_domain" ...
 * "hsds_delete_attr"; NULL after the last. */
extern const char *const hsds_route_names[];

#endif
