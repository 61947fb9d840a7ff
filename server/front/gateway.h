/* The HTTP gateway (--http-endpoint): h5grove's API (/meta/, /attr/, /data/, /paths/) over
 * the files of the data directory, read-only, for h5web and other h5grove clients; the
 * file list (/files/) and the viewer page (static files) beside it. Files are confined and
 * read exactly as lshdf and readhdf read them: metadata from the file probes, values
 * through the storage layer, a slice at a time. protocol/PROTOCOL.md ("HTTP gateway")
 * describes the API. */
#ifndef H5ARK_GATEWAY_H
#define H5ARK_GATEWAY_H

#include "h5ark_wire.h"

/* Serve on `address` ("[HOST:]PORT"); NULL: no gateway. `web_dir`: the built viewer page
 * (index.html and its assets), or NULL: `/` then says how to get it. */
int gateway_start(const char *address, const char *web_dir, h5ark_error *err);
void gateway_stop(void);
/* "HOST:PORT" bound, or NULL when the gateway is off. */
const char *gateway_address(void);

/* The names the API's requests are listed under in `status` and counted under in the
 * metrics, as a command's are: "http_meta", "http_attr", "http_data", "http_paths",
 * "http_files"; NULL after the last. */
extern const char *const gateway_route_names[];

#endif
