/* strings construction and checks (see strings.h). */
#include "strings.h"

#include "locales.h"
#include "progress.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

uint64_t strings_offset(const object *s, uint64_t i) {
    if (i >= s->size) return s->values->size;
    const darray *seg = s->segments;
    const shard *sh = &seg->shards[darray_shard_of(seg, i)];
    return ((const int64_t *)sh->data)[i - sh->start];
}

char *strings_dup(const object *s, uint64_t i) {
    uint64_t a = strings_offset(s, i), b = strings_offset(s, i + 1);
    char *out = malloc(b - a + 1);
    if (!out) return NULL;
    for (uint64_t k = a; k < b; k++) {
        const shard *sh = &s->values->shards[darray_shard_of(s->values, k)];
        out[k - a] = ((const char *)sh->data)[k - sh->start];
    }
    out[b - a] = '\0';
    return out;
}

uint64_t strings_check_shard(const object *s, int locale) {
    const shard *seg = &s->segments->shards[locale];
    const shard *val = &s->values->shards[locale];
    const int64_t *off = seg->data;
    const char *bytes = val->data;
    uint64_t end = val->start + val->count;
    for (uint64_t i = 0; i < seg->count; i++) {
        uint64_t from = (uint64_t)off[i];
        uint64_t to = i + 1 < seg->count ? (uint64_t)off[i + 1] : end;
        /* from..to must lie in this shard's bytes and hold at least the NUL */
        if (off[i] < 0 || from < val->start || to > end || to <= from ||
            (i == 0 && from != val->start))
            return seg->start + i;
        const char *str = bytes + (from - val->start);
        size_t len = (size_t)(to - from) - 1;
        if (str[len] != '\0' || memchr(str, '\0', len)) return seg->start + i;
    }
    return UINT64_MAX;
}

typedef struct {
    object *obj;
    const h5ark_payload *payload;
    const h5ark_buffer *segments, *values;
    _Atomic uint64_t first_bad;
    atomic_int failed;
} copy_job;

static void copy_shard(int locale, void *ctx) {
    copy_job *job = ctx;
    shard *seg = &job->obj->segments->shards[locale];
    shard *val = &job->obj->values->shards[locale];
    if (h5ark_payload_copy(job->payload, job->segments->offset + seg->start * 8, seg->data,
                           seg->count * 8) ||
        h5ark_payload_copy(job->payload, job->values->offset + val->start, val->data, val->count)) {
        atomic_store(&job->failed, 1);
        return;
    }
    progress_add(progress_here(), seg->count * 8 + val->count);
    locales_note_first(&job->first_bad, strings_check_shard(job->obj, locale));
}

object *strings_from_payload(uint64_t n, const h5ark_payload *payload, const h5ark_buffer *segments,
                             const h5ark_buffer *values, h5ark_error *err) {
    if (n > OBJECT_MAX_ELEMENTS || segments->nbytes != n * 8) {
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "buffer 'segments' has %llu bytes but %llu strings need %llu (int64 each)",
                   (unsigned long long)segments->nbytes, (unsigned long long)n,
                   (unsigned long long)(n * 8));
        return NULL;
    }
    if (n == 0 && values->nbytes != 0) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "no strings, but buffer 'values' is not empty");
        return NULL;
    }
    /* Each locale's byte range starts at the offset of its first string: read those. */
    int L = locales_count();
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    if (!counts) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    uint64_t prev = 0;
    for (int b = 0; b < L; b++) {
        uint64_t first = locales_block_start(n, L, b + 1);
        int64_t off = (int64_t)values->nbytes;
        if (first < n) h5ark_payload_copy(payload, segments->offset + first * 8, &off, 8);
        if (off < (int64_t)prev || (uint64_t)off > values->nbytes) {
            free(counts);
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "segments[%llu] = %lld is out of order or past the %llu bytes of 'values'",
                       (unsigned long long)first, (long long)off,
                       (unsigned long long)values->nbytes);
            return NULL;
        }
        counts[b] = (uint64_t)off - prev;
        prev = (uint64_t)off;
    }
    object *obj = object_new_strings(n, counts, err);
    free(counts);
    if (!obj) return NULL;
    copy_job job = {.obj = obj, .payload = payload, .segments = segments, .values = values};
    atomic_init(&job.first_bad, UINT64_MAX);
    locales_run(copy_shard, &job);
    uint64_t bad = atomic_load(&job.first_bad);
    if (atomic_load(&job.failed) || bad != UINT64_MAX) {
        object_release(obj);
        if (bad != UINT64_MAX)
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "string %llu is malformed: segments must start at 0 and increase, and "
                       "each string must end in exactly one NUL byte",
                       (unsigned long long)bad);
        else
            h5ark_fail(err, H5ARK_BAD_REQUEST, "the payload is shorter than its buffers declare");
        return NULL;
    }
    return obj;
}
