/* pdarray construction: fills computed on the locales, and copies from request payloads. */
#ifndef H5ARK_PDARRAY_H
#define H5ARK_PDARRAY_H

#include "h5ark_frames.h"
#include "locales.h"
#include "object.h"

typedef enum {
    FILL_EMPTY,
    FILL_ZEROS,
    FILL_ONES,
    FILL_FULL,
    FILL_ARANGE,
    FILL_LINSPACE,
    FILL_UNIFORM,
    FILL_RANDINT
} fill_kind;

typedef struct {
    fill_kind kind;
    /* a number given by the client, kept exact when it is an integer */
    struct {
        bool is_int; /* i or u holds it exactly */
        bool negative;
        int64_t i;
        uint64_t u;
        double f;
    } value, start, stop, step, low, high;
    uint64_t seed;
} fill_spec;

int pdarray_fill_from_name(const char *name, fill_kind *out);
/* Number of elements an arange of `spec` produces; type_error / bad_request when the
 * range is empty-stepped or too long. */
int pdarray_arange_size(const fill_spec *spec, uint64_t *size, h5ark_error *err);
/* Check that the spec's values fit `dtype`; type_error naming the value otherwise. */
int pdarray_check_fill(const fill_spec *spec, h5ark_dtype dtype, h5ark_error *err);
/* Fill every shard of obj on its locale. */
void pdarray_fill(object *obj, const fill_spec *spec);

/* Within a call (every rank calls): copy the payload bytes of buffer `buf` into obj's
 * shards, each on its locale; the rank holding the payload copies its own shards and sends
 * every other rank its shards' bytes, straight from the frames; each rank checks its own.
 * bad_request when the size does not match or a bool byte is not 0 or 1. */
int pdarray_copy_in(object *obj, const h5ark_payload *payload, const h5ark_buffer *buf,
                    h5ark_error *err);

/* A buffer at `offset` of the payload (which rank 0 holds), laid out as `a`, into every
 * rank's shards: copy_own(locale, job) runs on the locales of the rank holding the payload
 * (which sends the others theirs from the frames), check_arrived (may be NULL) on those of
 * the others once their bytes are in. */
int darray_scatter_in(const darray *a, const h5ark_payload *payload, uint64_t offset,
                      locale_fn copy_own, locale_fn check_arrived, void *job, h5ark_error *err);

/* Within a call: the index of the first element of an int64 pdarray outside [lo, hi) (or,
 * nondecreasing, less than the one before), checked by every locale of every rank at
 * once, in *first on every rank; UINT64_MAX when none. */
int pdarray_first_outside(const object *obj, int64_t lo, int64_t hi, bool nondecreasing,
                          uint64_t *first, h5ark_error *err);
/* Within a call: element i of an int64 pdarray on every rank (from the rank that holds it). */
int pdarray_int64_at(const object *obj, uint64_t i, int64_t *out, h5ark_error *err);

#endif
