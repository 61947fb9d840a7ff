/* pack's reading: each locale reads the fields of the samples whose rows touch its shards,
 * where the probes found them, transforms them as the schema says and places its part of
 * each row; every file was probed and every sample checked before (pack.h). */
#include "commands/pack.h"

#include "dist/ranks.h"
#include "locales.h"
#include "storage/files.h"
#include "storage/io.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void note_error(pack_job *j, uint64_t key, const h5ark_error *e) {
    pthread_mutex_lock(&j->lock);
    if (key < j->err_key) {
        j->err_key = key;
        j->err = *e;
    }
    pthread_mutex_unlock(&j->lock);
}

/* Read one field of sample i where the probe found it, as stored. fd: the sample's file,
 * open; cb: the locale's memory for chunks. */
static int read_field(const sample_set *s, size_t i, const lbann_fields *fields, size_t k,
                      const sample_field *sf, int fd, void *raw, sample_chunk_buffers *cb,
                      h5ark_error *err) {
    const char *file = s->files[s->file_of[i]];
    size_t itemsize = h5ark_dtype_size(sf->dtype);
    if (sf->chunked && sf->exact) {
        const sample_chunk_table *t = &s->probes[s->file_of[i]].chunks;
        if (sample_chunks_read(fd, t->v, t->n, sf->offset, itemsize, sf->count, raw, cb, err) == 0)
            return 0;
        return h5ark_fail_context(err, "sample '%s' of '%s', field '%s'", s->ids[i],
                                  files_display(file), fields->v[k].path);
    }
    if (sf->contiguous && sf->exact) {
        uint64_t n = sf->count * itemsize;
        int small = io_window_read(cb->window, sf->offset, raw, n);
        if (small == 0 || (small > 0 && io_pread_full(fd, raw, n, sf->offset) == 0)) return 0;
        return h5ark_fail(err, H5ARK_IO_ERROR,
                          "sample '%s' of '%s', field '%s': cannot read it: %s", s->ids[i],
                          files_display(file), fields->v[k].path,
                          errno == ENODATA ? "the file ends early" : strerror(errno));
    }
    /* stored in a way the probe does not read, or of a foreign byte order: HDF5 reads it,
     * from where the probe found it to be */
    char dset[2 * PATH_MAX];
    snprintf(dset, sizeof dset, "%s/%s", s->ids[i], fields->v[k].path);
    read_src src = {
        .file = 0,
        .path = file,
        .dset = dset,
        .info = {.count = sf->count, .dtype = sf->dtype, .exact = sf->exact, .contiguous = false}};
    read_part part = {.src = &src, .n = 1, .cap = 1, .total = sf->count, .dtype = sf->dtype};
    if (read_part_range(&part, 0, sf->count, raw, err) == 0) return 0;
    return h5ark_fail_context(err, "sample '%s', field '%s'", s->ids[i], fields->v[k].path);
}

/* The samples whose rows touch this locale's shard of any group: [*lo, *hi). A locale
 * fills its own shards only (at several ranks the others may be another rank's), so a row
 * that straddles two shards is read by both locales, each placing its own part. */
static void locale_samples(const pack_job *j, int locale, uint64_t *lo, uint64_t *hi) {
    *lo = UINT64_MAX;
    *hi = 0;
    for (size_t g = 0; g < j->groups->n; g++) {
        const shard *sh = &j->arrays[g]->values->shards[locale];
        uint64_t w = j->width[g];
        if (!w || !sh->count) continue;
        uint64_t a = sh->start / w, b = (sh->start + sh->count - 1) / w + 1;
        if (a < *lo) *lo = a;
        if (b > *hi) *hi = b;
    }
}

void pack_read_locale(int locale, void *ctx) {
    pack_job *j = ctx;
    const sample_set *s = j->samples;
    const lbann_fields *f = j->fields;
    uint64_t lo, hi;
    locale_samples(j, locale, &lo, &hi);
    if (lo >= hi) return;
    size_t bytes = (size_t)(j->max_count ? j->max_count : 1) * 8;
    void *raw = malloc(bytes), *tmp = malloc(bytes), *row = malloc(bytes);
    io_window *window = malloc(sizeof *window); /* the sample files' small fields */
    h5ark_error err = {0};
    sample_chunk_buffers cb = {.window = window};
    int fd = -1;
    size_t open_file = SIZE_MAX;
    uint64_t i = lo;
    if (!raw || !tmp || !row || !window) {
        h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
        note_error(j, lo * f->n, &err);
        i = hi;
    }
    bool failed = false;
    for (; i < hi && !failed; i++) {
        pthread_mutex_lock(&j->lock);
        bool stop = j->err_key < i * f->n; /* an earlier sample failed already */
        pthread_mutex_unlock(&j->lock);
        if (stop) break;
        const sample_field *sf = pack_facts(s, i);
        for (size_t k = 0; k < f->n; k++) {
            const field_plan *p = &j->plan[k];
            darray *a = j->arrays[p->group]->values;
            shard *sh = &a->shards[locale];
            uint64_t at = i * j->width[p->group] + p->offset, end = at + sf[k].count;
            uint64_t from = at > sh->start ? at : sh->start;
            uint64_t to = end < sh->start + sh->count ? end : sh->start + sh->count;
            if (from >= to) continue;         /* none of this field is here */
            if (s->file_of[i] != open_file) { /* one open a file: its samples are a run */
                if (fd >= 0) sysio.close(fd);
                open_file = s->file_of[i];
                fd = sysio.open(s->files[open_file], O_RDONLY | O_CLOEXEC, 0);
                if (fd < 0) {
                    h5ark_fail(&err, H5ARK_IO_ERROR, "cannot open '%s': %s",
                               files_display(s->files[open_file]), strerror(errno));
                    note_error(j, i * f->n + k, &err);
                    failed = true;
                    break;
                }
                io_window_reset(window, fd);
            }
            if (read_field(s, i, f, k, &sf[k], fd, raw, &cb, &err)) {
                note_error(j, i * f->n + k, &err);
                failed = true;
                break;
            }
            /* straight into the shard when the field lies in it whole (all but a few) */
            bool whole = from == at && to == end;
            char *dst = (char *)sh->data + (from - sh->start) * a->itemsize;
            lbann_field_transform(&f->v[k], raw, sf[k].dtype, sf[k].count, whole ? dst : row, tmp);
            if (!whole)
                memcpy(dst, (char *)row + (from - at) * a->itemsize, (to - from) * a->itemsize);
        }
    }
    if (fd >= 0) sysio.close(fd);
    sample_chunk_buffers_free(&cb);
    free(raw);
    free(tmp);
    free(row);
    free(window);
}

object *pack_ids_object(const sample_set *s, h5ark_error *err) {
    int L = locales_count();
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    if (!counts) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return ranks_agree(-1, err), NULL;
    }
    for (int b = 0; b < L; b++)
        for (uint64_t i = locales_block_start(s->n, L, b); i < locales_block_start(s->n, L, b + 1);
             i++)
            counts[b] += strlen(s->ids[i]) + 1;
    object *o = object_new_strings(s->n, counts, err);
    free(counts);
    if (!o) return NULL;
    for (int b = 0; b < L; b++) {
        if (!locales_is_local(b)) continue;
        const shard *seg = &o->segments->shards[b], *val = &o->values->shards[b];
        uint64_t off = val->start; /* a byte shard starts at its first string */
        for (uint64_t i = seg->start; i < seg->start + seg->count; i++) {
            size_t len = strlen(s->ids[i]) + 1;
            ((int64_t *)seg->data)[i - seg->start] = (int64_t)off;
            memcpy((char *)val->data + (off - val->start), s->ids[i], len);
            off += len;
        }
    }
    return o;
}
