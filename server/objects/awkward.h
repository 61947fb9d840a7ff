/* awkward: an awkward 2 array held as its form, its length and its buffers. The object
 * is a composite whose components are the buffers, one pdarray each, named as
 * ak.to_buffers names them ("<form_key>-<attribute>"), in the form's preorder; the
 * descriptor adds `form` (the JSON as given) and `length`.
 *
 * Layout (docs/DESIGN.md, "Awkward arrays"): the outer rows are block-distributed, and
 * every buffer reached from them through offsets, regular sizes, records and masks is
 * sharded so that the data of a locale's rows lies on that locale. Below an indirection
 * (ListArray, IndexedArray, IndexedOptionArray, UnionArray), where rows may point
 * anywhere, the content is block-distributed on its own. */
#ifndef H5ARK_AWKWARD_H
#define H5ARK_AWKWARD_H

#include "h5ark_frames.h"
#include "object.h"

/* Where the buffers come from: `count` named buffers of nbytes[i] bytes each, read with
 * read(ctx, i, offset, dst, n) (called from several locales at once). At several ranks,
 * every rank reads its own shards this way, unless `payload` says the buffers are a
 * request's payload, which rank 0 alone holds (buffer i from payload_offsets[i]): rank 0
 * then sends the other ranks their shards' bytes. */
typedef struct {
    size_t count;
    const char *const *names;
    const uint64_t *nbytes;
    int (*read)(const void *ctx, size_t i, uint64_t offset, void *dst, uint64_t n);
    const void *ctx;
    bool payload;
    const h5ark_payload *frames; /* rank 0's */
    const uint64_t *payload_offsets;
} ak_source;

/* Build an awkward object from a form, a length and its buffers. Every buffer is checked
 * against the form on the locales in parallel: exact sizes, offsets non-decreasing and
 * within their content, starts/stops, indices and tags in range, bools 0 or 1. Content
 * lengths follow ak.from_buffers (a list's content is as long as its last offset or
 * largest stop, an indexed content as its largest index + 1). A buffer the form does not
 * name, or a missing one, is bad_request, as is any check that fails, naming the node. */
object *awkward_build(const char *form, size_t form_len, uint64_t length, const ak_source *src,
                      h5ark_error *err);

/* The form JSON of an awkward object (NULL if obj is none). */
const char *awkward_form_json(const object *obj);

#endif
