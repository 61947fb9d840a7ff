/* pack's plan: rank 0, holding every probe's answer, checks every sample against the
 * first and lays out the rows (each field's size, type, group and offset); every rank then
 * gets the plan with what its locales read (pack.h). */
#include "commands/pack.h"

#include "dist/ranks.h"
#include "dist/spmd.h"
#include "registry.h"
#include "storage/files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sample i's failure as the probe found it. */
static int sample_failure(const sample_set *s, const lbann_fields *fields, size_t i,
                          h5ark_error *err) {
    size_t f = s->file_of[i];
    const sample_probe *p = &s->probes[f];
    const char *field = fields->v[p->failed_field].path, *file = files_display(s->files[f]);
    h5ark_code code = p->error.code;
    if (code == H5ARK_NOT_FOUND)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "sample '%s' of '%s' lacks field '%s'",
                          s->ids[i], file, field);
    bool keep = code == H5ARK_IO_ERROR || code == H5ARK_RESOURCE_LIMIT || code == H5ARK_FORBIDDEN;
    return h5ark_fail(err, keep ? code : H5ARK_SCHEMA_ERROR, "sample '%s' of '%s', field '%s': %s",
                      s->ids[i], file, field, p->error.message);
}

/* The first problem of samples [0, upto) in order (a file that failed counts as at its
 * first sample, an empty one before the next), checked against the plan when given. */
static int check_samples(const sample_set *s, const lbann_fields *fields, const field_plan *plan,
                         size_t upto, h5ark_error *err) {
    for (size_t f = 0; f < s->nfiles; f++) {
        if (s->fstart[f] >= upto && upto < s->n) break;
        if (s->file_err[f].code) {
            *err = s->file_err[f];
            return -1;
        }
        size_t end = f + 1 < s->nfiles ? s->fstart[f + 1] : s->n;
        for (size_t i = s->fstart[f]; i < end && i < upto; i++) {
            if (i - s->fstart[f] >= s->probes[f].failed) return sample_failure(s, fields, i, err);
            const sample_field *sf = pack_facts(s, i);
            for (size_t k = 0; plan && k < fields->n; k++) {
                const field_plan *p = &plan[k];
                if (sf[k].count != p->count)
                    return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                                      "sample '%s', field '%s': %llu elements where the first "
                                      "sample has %llu",
                                      s->ids[i], fields->v[k].path, (unsigned long long)sf[k].count,
                                      (unsigned long long)p->count);
                if (!fields->v[k].has_coerce && sf[k].dtype != p->dtype)
                    return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                                      "sample '%s', field '%s': %s where the first sample has %s "
                                      "(a 'coerce' makes them one type)",
                                      s->ids[i], fields->v[k].path, h5ark_dtype_name(sf[k].dtype),
                                      h5ark_dtype_name(p->dtype));
            }
        }
    }
    return 0;
}

/* The row layout, from the first sample: every field's size and type (the first sample
 * decides them), its group and offset in the group's row, each group's width; the checks
 * LBANN makes of them. */
static int make_plan(const sample_set *s, const lbann_fields *fields, const lbann_groups *groups,
                     pack_job *job, h5ark_error *err) {
    const sample_field *sf = pack_facts(s, 0);
    for (size_t k = 0; k < fields->n; k++) {
        field_plan *p = &job->plan[k];
        p->count = sf[k].count;
        p->dtype = sf[k].dtype;
        if (lbann_field_check(&fields->v[k], p->count, err))
            return h5ark_fail_context(err, "sample '%s'", s->ids[0]);
        p->out = lbann_field_dtype(&fields->v[k], p->dtype);
    }
    for (size_t g = 0; g < groups->n; g++) {
        const lbann_group *gr = &groups->v[g];
        h5ark_dtype dt = job->plan[gr->members[0]].out;
        for (size_t m = 0; m < gr->n; m++) {
            field_plan *p = &job->plan[gr->members[m]];
            const char *path = fields->v[gr->members[m]].path;
            if (gr->packed && p->out != H5ARK_FLOAT32 && p->out != H5ARK_FLOAT64)
                return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                                  "pack group '%s': field '%s' is %s; packed fields must be "
                                  "float32 or float64 (coerce: float or double)",
                                  gr->name, path, h5ark_dtype_name(p->out));
            if (p->out != dt)
                return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                                  "pack group '%s' mixes dtypes: field '%s' is %s, field '%s' "
                                  "is %s",
                                  gr->name, fields->v[gr->members[0]].path, h5ark_dtype_name(dt),
                                  path, h5ark_dtype_name(p->out));
            p->group = g;
            p->offset = job->width[g];
            job->width[g] += p->count;
        }
        if (job->width[g] && s->n > OBJECT_MAX_ELEMENTS / job->width[g])
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "pack group '%s' would be too large",
                              gr->name);
    }
    return 0;
}

int pack_plan(void *planning, h5ark_error *err) {
    const pack_planning *p = planning;
    const lbann_fields *fields = p->fields;
    sample_set *samples = p->samples;
    bool listing = p->listing;
    if ((listing && pack_list_samples(samples, err)) ||
        check_samples(samples, fields, NULL, 1, err))
        return -1;
    if (samples->n == 0)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "pack: the %s name no samples",
                          listing ? "files" : "sample list");
    /* every sample against the first, before anything is made or read */
    if (make_plan(samples, fields, p->groups, p->job, err) ||
        check_samples(samples, fields, p->job->plan, samples->n, err))
        return -1;
    return 0;
}

/* ---- the plan to every rank -----------------------------------------------------------
 * Every rank needs what its locales read and place: the samples again (pack_samples.c's
 * own wire form), each sample's field facts, and the row layout. One buffer, broadcast:
 *   u64 nfiles, n, nfields, ngroups
 *   nfields x {u64 count, offset, group; u8 dtype, out}   ngroups x u64 width
 *   nfiles x {u64 first sample; path NUL}   n x {id NUL}
 *   n x nfields x {u64 count, offset; u8 dtype, flags}
 *   nfiles x {u64 words; the file's chunk table (sample_chunks.h), words x u64}             */

#define PLAN_FIELD_BYTES 26
#define PLAN_FACT_BYTES  18

/* The plan's bytes (as plan_encode makes them). */
static uint64_t plan_bytes(const sample_set *s, size_t nfields, size_t ngroups) {
    uint64_t chunks = 0;
    for (size_t f = 0; f < s->nfiles; f++)
        chunks += 8 + 8 * (uint64_t)s->probes[f].chunks.n;
    return 32 + nfields * PLAN_FIELD_BYTES + ngroups * 8 + s->n * nfields * PLAN_FACT_BYTES +
           pack_samples_bytes(s) + chunks;
}

static void plan_encode(const sample_set *s, const pack_job *job, size_t nfields, size_t ngroups,
                        unsigned char *out, uint64_t len) {
    pack_buf b = {out, out + len};
    pack_put_u64(&b, s->nfiles);
    pack_put_u64(&b, s->n);
    pack_put_u64(&b, nfields);
    pack_put_u64(&b, ngroups);
    for (size_t k = 0; k < nfields; k++) {
        const field_plan *p = &job->plan[k];
        pack_put_u64(&b, p->count);
        pack_put_u64(&b, p->offset);
        pack_put_u64(&b, p->group);
        unsigned char t[2] = {(unsigned char)p->dtype, (unsigned char)p->out};
        pack_put_bytes(&b, t, 2);
    }
    for (size_t g = 0; g < ngroups; g++)
        pack_put_u64(&b, job->width[g]);
    pack_put_samples(&b, s);
    for (size_t i = 0; i < s->n; i++) {
        const sample_field *sf = pack_facts(s, i);
        for (size_t k = 0; k < nfields; k++) {
            pack_put_u64(&b, sf[k].count);
            pack_put_u64(&b, sf[k].offset);
            unsigned char t[2] = {(unsigned char)sf[k].dtype,
                                  (unsigned char)((sf[k].exact ? 1 : 0) |
                                                  (sf[k].contiguous ? 2 : 0) |
                                                  (sf[k].chunked ? 4 : 0))};
            pack_put_bytes(&b, t, 2);
        }
    }
    for (size_t f = 0; f < s->nfiles; f++) {
        const sample_chunk_table *t = &s->probes[f].chunks;
        pack_put_u64(&b, t->n);
        if (t->n) pack_put_bytes(&b, t->v, t->n * 8);
    }
}

/* Rank 0's plan into this rank's (empty) sample set and job (its arrays of nfields and
 * ngroups entries allocated). The facts go in as one probe answer a file, as rank 0 holds
 * them. */
static int plan_decode(unsigned char *buf, uint64_t len, size_t nfields, size_t ngroups,
                       sample_set *s, pack_job *job, h5ark_error *err) {
    pack_buf b = {buf, buf + len};
    uint64_t nfiles, n, nf, ng;
    if (!pack_get_u64(&b, &nfiles) || !pack_get_u64(&b, &n) || !pack_get_u64(&b, &nf) ||
        !pack_get_u64(&b, &ng) || nf != nfields || ng != ngroups)
        goto malformed;
    for (size_t k = 0; k < nfields; k++) {
        field_plan *p = &job->plan[k];
        uint64_t group;
        if (!pack_get_u64(&b, &p->count) || !pack_get_u64(&b, &p->offset) ||
            !pack_get_u64(&b, &group) || group >= ngroups || b.end - b.p < 2 ||
            b.p[0] >= H5ARK_DTYPE_COUNT || b.p[1] >= H5ARK_DTYPE_COUNT)
            goto malformed;
        p->group = (size_t)group;
        p->dtype = (h5ark_dtype)b.p[0];
        p->out = (h5ark_dtype)b.p[1];
        b.p += 2;
    }
    for (size_t g = 0; g < ngroups; g++)
        if (!pack_get_u64(&b, &job->width[g])) goto malformed;
    if (pack_get_samples(&b, nfiles, n, s, "pack plan", err) || pack_answers_alloc(s, err))
        return -1;
    if ((uint64_t)(b.end - b.p) < n * nfields * PLAN_FACT_BYTES) goto malformed;
    for (size_t f = 0; f < nfiles; f++) {
        size_t count = (f + 1 < nfiles ? s->fstart[f + 1] : n) - s->fstart[f];
        size_t nrec = count * nfields;
        sample_probe *p = &s->probes[f];
        p->nfields = nfields;
        p->failed = count;
        if (!(p->facts = calloc(nrec ? nrec : 1, sizeof *p->facts)))
            return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        for (size_t r = 0; r < nrec; r++) {
            sample_field *sf = &p->facts[r];
            pack_get_u64(&b, &sf->count);
            pack_get_u64(&b, &sf->offset);
            if (b.p[0] >= H5ARK_DTYPE_COUNT) goto malformed;
            sf->dtype = (h5ark_dtype)b.p[0];
            sf->exact = b.p[1] & 1;
            sf->contiguous = b.p[1] & 2;
            sf->chunked = b.p[1] & 4;
            b.p += 2;
        }
    }
    for (size_t f = 0; f < nfiles; f++) {
        sample_chunk_table *t = &s->probes[f].chunks;
        uint64_t words;
        if (!pack_get_u64(&b, &words) || words > (uint64_t)(b.end - b.p) / 8) goto malformed;
        if (words && !(t->v = malloc((size_t)words * 8)))
            return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        if (words) memcpy(t->v, b.p, (size_t)words * 8);
        t->n = t->cap = (size_t)words;
        b.p += words * 8;
    }
    if (b.p != b.end) goto malformed;
    return 0;
malformed:
    return spmd_fail(err, H5ARK_INTERNAL, "a malformed pack plan from rank 0");
}

/* The plan's memory, counted against --max-memory for as long as the command holds it:
 * its bytes on the wire (the buffer, then the sample set decoded from it). */
static int count_plan(uint64_t bytes, uint64_t nsamples, void **buf, uint64_t *reserved,
                      h5ark_error *err) {
    int rc = buf ? registry_scratch(bytes, buf, reserved, err) : registry_reserve(bytes, err);
    if (rc)
        return h5ark_fail_context(err, "pack: the plan of %llu samples",
                                  (unsigned long long)nsamples);
    if (!buf) *reserved += bytes;
    return 0;
}

typedef struct {
    pack_planning *p;
    uint64_t reserved; /* the bytes on the wire */
} plan_wire;

static int plan_room(void *ctx, uint64_t len, void **buf, h5ark_error *err) {
    plan_wire *w = ctx;
    return count_plan(len, w->p->samples->n, buf, &w->reserved, err);
}

static int plan_wire_encode(void *ctx, void **buf, uint64_t *len, h5ark_error *err) {
    plan_wire *w = ctx;
    const pack_planning *p = w->p;
    *len = plan_bytes(p->samples, p->fields->n, p->groups->n);
    if (plan_room(ctx, *len, buf, err)) return -1;
    plan_encode(p->samples, p->job, p->fields->n, p->groups->n, *buf, *len);
    return 0;
}

static int plan_wire_decode(void *ctx, int from, const void *buf, uint64_t len, h5ark_error *err) {
    plan_wire *w = ctx;
    pack_planning *p = w->p;
    (void)from;
    pack_samples_free(p->samples); /* its own resolution and probes: the plan has all */
    return plan_decode((unsigned char *)buf, len, p->fields->n, p->groups->n, p->samples, p->job,
                       err);
}

int pack_share_plan(int rc, pack_planning *p, uint64_t *reserved, h5ark_error *err) {
    static const spmd_codec codec = {plan_wire_encode, plan_room, plan_wire_decode};
    plan_wire w = {p, 0};
    rc = spmd_share(rc, &codec, &w, err);
    registry_unreserve(w.reserved);
    /* every rank now holds the plan, as many bytes as it took on the wire */
    if (rc == 0)
        rc = ranks_agree(count_plan(plan_bytes(p->samples, p->fields->n, p->groups->n),
                                    p->samples->n, NULL, reserved, err),
                         err);
    return rc;
}
