/* The h5grove API the HTTP gateway serves (front/gateway.c routes to it): the routes over
 * a file's tree in h5grove.c (/meta/, /attr/, /paths/, with the listing kept while the file
 * is unchanged) and the values of a dataset in h5grove_data.c (/data/: selections and the
 * json, bin and npy encodings). Each route writes its answer, errors included, into `out`. */
#ifndef H5ARK_H5GROVE_H
#define H5ARK_H5GROVE_H

#include "front/http.h"
#include "front/http_reply.h"
#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- a file's tree, as lshdf lists it (h5grove.c) ---- */

typedef struct tree tree;

/* What a request's `file` and `path` name: the file, its listing (held until
 * h5grove_tree_release), the path with its links resolved, and the listing's entry. */
typedef struct {
    char abs[PATH_MAX];
    tree *tree;
    char path[PATH_MAX]; /* resolved */
    const h5ark_value *entry;
} target;

int h5grove_open(const http_request *req, target *t, h5ark_error *err);
void h5grove_tree_release(tree *tr); /* NULL: nothing */
/* Drop the listings kept for the next requests (at the gateway's stop). */
void h5grove_forget_trees(void);

static inline bool str_is(const char *s, const char *want) {
    return s && strcmp(s, want) == 0;
}
/* The string at `key` of a listed entry, or NULL. */
const char *listed_str(const h5ark_value *e, const char *key);
bool h5grove_shown_as_dataset(const h5ark_value *e);
bool h5grove_readable(const h5ark_value *e); /* rows of values the storage layer reads */
bool h5grove_string_valued(const h5ark_value *e);
const h5ark_value *h5grove_shape(const h5ark_value *e); /* NULL: none listed */

/* ---- the routes ---- */

void h5grove_meta(const http_request *req, http_response *out, h5ark_error *err);
void h5grove_attr(const http_request *req, http_response *out, h5ark_error *err);
void h5grove_paths(const http_request *req, http_response *out, h5ark_error *err);
/* /data/: a dataset's values, or a selection of them, as json, bin or npy. */
void h5grove_values(const http_request *req, http_response *out, h5ark_error *err);

#endif
