/* pack's pipeline (docs/LBANN.md), in the order lbann.c runs it on every rank:
 *   pack_samples.c  the samples: rank 0 resolves them (paths or a sample list) and shares
 *                   them; every rank probes its block of the files; the answers are
 *                   collected on rank 0
 *   pack_plan.c     rank 0, holding every answer, checks every sample and lays out the
 *                   rows; the plan is shared with every rank
 *   pack_read.c     each locale reads, transforms and places the parts of rows in its own
 *                   shards, and the sample ids become a Strings object
 * With one rank nothing is shared or collected: the one rank holds it all. */
#ifndef H5ARK_PACK_H
#define H5ARK_PACK_H

#include "lbann/lbann.h"
#include "objects/object.h"
#include "storage/probe.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char **files; /* absolute */
    size_t nfiles, fcap;
    char **ids; /* sample ids (group paths inside their file) */
    size_t *file_of;
    size_t n, cap;
    /* what the probes found, a file each: its samples' fields, or why it failed */
    sample_probe *probes;
    h5ark_error *file_err; /* code 0: none */
    size_t *fstart;        /* each file's first sample */
} sample_set;

typedef struct {
    h5ark_dtype dtype; /* in the file, for the first sample */
    h5ark_dtype out;   /* in the row */
    uint64_t count;
    size_t group;
    uint64_t offset; /* in the group's row, elements */
} field_plan;

typedef struct {
    const lbann_fields *fields;
    const lbann_groups *groups;
    const sample_set *samples;
    field_plan *plan;
    uint64_t *width; /* per group */
    object **arrays; /* per group, flat pdarrays [samples * width] */
    uint64_t max_count;
    pthread_mutex_t lock;
    /* the first failure in (sample, field) order: sample * nfields + field */
    uint64_t err_key;
    h5ark_error err;
} pack_job;

/* What the probe found of sample i's fields. */
static inline const sample_field *pack_facts(const sample_set *s, size_t i) {
    size_t f = s->file_of[i];
    return s->probes[f].facts + (i - s->fstart[f]) * s->probes[f].nfields;
}

/* ---- pack_samples.c ---- */

/* What rank 0 resolves the samples from: `paths` (patterns) or a sample list. */
typedef struct {
    const h5ark_value *paths;
    const char *list;
    sample_set *samples;
} pack_source;

void pack_samples_free(sample_set *s);
/* Rank 0's work (ranks_on_root): the files and, from a list, the sample ids; room for the
 * probes' answers. */
int pack_resolve(void *source, h5ark_error *err);
/* rc: rank 0's outcome of pack_resolve; every rank gets the samples, with room for the
 * answers of its probes. */
int pack_share_samples(int rc, sample_set *s, h5ark_error *err);
/* Probe this rank's block of the files (`listing`: their top-level groups are the samples). */
int pack_probe(sample_set *s, const lbann_fields *fields, bool listing, h5ark_error *err);
/* rc: this rank's outcome of pack_probe; the answers go to rank 0, which then holds every
 * file's as one rank's probes would have found them. */
int pack_collect_probes(int rc, sample_set *s, size_t nfields, bool listing, h5ark_error *err);
/* Listing: every file's top-level groups, as the probes found them, are the samples. */
int pack_list_samples(sample_set *s, h5ark_error *err);

/* The samples on the wire, inside the plan too:
 *   nfiles x {u64 first sample; path NUL}   n x {id NUL} */
typedef struct {
    unsigned char *p, *end;
} pack_buf;

static inline void pack_put_u64(pack_buf *b, uint64_t v) {
    memcpy(b->p, &v, 8);
    b->p += 8;
}
static inline void pack_put_bytes(pack_buf *b, const void *v, size_t n) {
    memcpy(b->p, v, n);
    b->p += n;
}
static inline bool pack_get_u64(pack_buf *b, uint64_t *v) {
    if (b->end - b->p < 8) return false;
    memcpy(v, b->p, 8);
    b->p += 8;
    return true;
}
uint64_t pack_samples_bytes(const sample_set *s);
void pack_put_samples(pack_buf *b, const sample_set *s);
/* nfiles and n read before; -1 with err, malformed naming `what`. */
int pack_get_samples(pack_buf *b, uint64_t nfiles, uint64_t n, sample_set *s, const char *what,
                     h5ark_error *err);
/* Room for the probes' answers, a file each, and each file's first sample when not given. */
int pack_answers_alloc(sample_set *s, h5ark_error *err);

/* ---- pack_plan.c ---- */

/* What rank 0 plans from, and into. */
typedef struct {
    const lbann_fields *fields;
    const lbann_groups *groups;
    bool listing;
    sample_set *samples;
    pack_job *job;
} pack_planning;

/* Rank 0's work (ranks_on_root), holding every probe's answer: every check, the row layout. */
int pack_plan(void *planning, h5ark_error *err);
/* rc: rank 0's outcome of pack_plan; every rank gets the plan, counted against its
 * --max-memory in *reserved for as long as the command holds it. */
int pack_share_plan(int rc, pack_planning *p, uint64_t *reserved, h5ark_error *err);

/* ---- pack_read.c ---- */

/* locales_run: each locale reads, transforms and places the parts of rows in its shards. */
void pack_read_locale(int locale, void *job);
/* The sample ids as a Strings object, each locale's shards filled by its rank. */
object *pack_ids_object(const sample_set *s, h5ark_error *err);

#endif
