/* pack: LBANN's HDF5 data reader done once, in parallel (docs/LBANN.md). The schemas and
 * transforms are lbann/'s; the sample files are probed in the file probe processes and
 * their data read where the probes found it, as readhdf does. */
#include "commands.h"

#include "lbann/lbann.h"
#include "locales.h"
#include "objects/arrayview.h"
#include "dist/ranks.h"
#include "registry.h"
#include "storage/files.h"
#include "storage/io.h"
#include "storage/probe.h"
#include "storage/sandbox.h"
#include "storage/twin.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAMPLE_LIST_MAX_BYTES (64u << 20)

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

static void samples_free(sample_set *s) {
    for (size_t f = 0; s->probes && f < s->nfiles; f++)
        sample_probe_clear(&s->probes[f]);
    free(s->probes);
    free(s->file_err);
    free(s->fstart);
    files_list_free(s->files, s->nfiles);
    for (size_t i = 0; i < s->n; i++)
        free(s->ids[i]);
    free(s->ids);
    free(s->file_of);
    *s = (sample_set){0};
}

/* Adopt abs (a malloc'd absolute path) as the next file. */
static int add_file(sample_set *s, char *abs, h5ark_error *err) {
    if (s->nfiles == s->fcap) {
        size_t cap = s->fcap ? 2 * s->fcap : 16;
        char **v = realloc(s->files, cap * sizeof *v);
        if (!v) {
            free(abs);
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        }
        s->files = v;
        s->fcap = cap;
    }
    s->files[s->nfiles++] = abs;
    return 0;
}

static int add_sample(sample_set *s, size_t file, const char *id, h5ark_error *err) {
    while (*id == '/')
        id++;
    if (!*id || strstr(id, "//"))
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "sample id '%s' in '%s' is not a group path", id,
                          files_display(s->files[file]));
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        char **v = realloc(s->ids, cap * sizeof *v);
        if (v) s->ids = v;
        size_t *f = v ? realloc(s->file_of, cap * sizeof *f) : NULL;
        if (!f) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        s->file_of = f;
        s->cap = cap;
    }
    if (!(s->ids[s->n] = strdup(id))) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    s->file_of[s->n++] = file;
    return 0;
}

/* The top-level groups of a file, by name (the probe lists them: the daemon never walks an
 * untrusted file itself). */
static int top_groups(const char *abs, sample_probe *names, h5ark_error *err) {
    if (sandbox_probe_samples(abs, NULL, 0, NULL, 0, names, err))
        return h5ark_fail_context(err, "cannot list the samples of '%s'", files_display(abs));
    return 0;
}

/* The files whose probes rank r runs: a block of them, [*lo, *hi) (at one rank, all). */
static void rank_files(const sample_set *s, int r, size_t *lo, size_t *hi) {
    *lo = (size_t)locales_block_start(s->nfiles, ranks_count(), r);
    *hi = (size_t)locales_block_start(s->nfiles, ranks_count(), r + 1);
}

/* Room for the probes' answers, a file each, and each file's first sample when not given
 * (a file's samples are a run; listing, none are known yet). */
static int answers_alloc(sample_set *s, h5ark_error *err) {
    size_t m = s->nfiles ? s->nfiles : 1;
    s->probes = calloc(m, sizeof *s->probes);
    s->file_err = calloc(m, sizeof *s->file_err);
    if (!s->fstart && (s->fstart = calloc(m, sizeof *s->fstart)))
        for (size_t f = 0, i = 0; f < s->nfiles; f++) {
            while (i < s->n && s->file_of[i] < f)
                i++;
            s->fstart[f] = i;
        }
    if (!s->probes || !s->file_err || !s->fstart)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
    return 0;
}

/* Each of this rank's locales probes its part of the rank's block of the files, each file
 * in one request: the probes' round trips overlap, and the locales then only read. With
 * `listing` a file's samples are its top-level groups, found by the same request. */
typedef struct {
    sample_set *s;
    const char **fields;
    size_t nfields;
    bool listing;
    size_t lo, hi; /* this rank's files */
} probe_job;

static void probe_locale(int locale, void *ctx) {
    probe_job *j = ctx;
    sample_set *s = j->s;
    int parts = locales_local_count(), part = locale - locales_local_first();
    uint64_t lo = j->lo + locales_block_start(j->hi - j->lo, parts, part);
    uint64_t hi = j->lo + locales_block_start(j->hi - j->lo, parts, part + 1);
    for (uint64_t f = lo; f < hi; f++) {
        size_t first = j->listing ? 0 : s->fstart[f];
        size_t count = j->listing ? 0 : (f + 1 < s->nfiles ? s->fstart[f + 1] : s->n) - first;
        if (!j->listing && count == 0) continue;
        h5ark_error *e = &s->file_err[f];
        if (sandbox_probe_samples(s->files[f], j->listing ? NULL : (const char **)s->ids + first,
                                  count, j->fields, j->nfields, &s->probes[f], e))
            h5ark_fail_context(e, "samples of '%s'", files_display(s->files[f]));
    }
}

/* Probe this rank's block of the files of s (answers_alloc made room for the answers). */
static int probe_files(sample_set *s, const lbann_fields *fields, bool listing, h5ark_error *err) {
    const char **names = calloc(fields->n ? fields->n : 1, sizeof *names);
    if (!names) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t k = 0; k < fields->n; k++)
        names[k] = fields->v[k].path;
    probe_job j = {.s = s, .fields = names, .nfields = fields->n, .listing = listing};
    rank_files(s, ranks_self(), &j.lo, &j.hi);
    locales_run(probe_locale, &j);
    free(names);
    return 0;
}

/* Listing: every file's top-level groups, as the probes found them, are the samples. */
static int list_samples(sample_set *s, h5ark_error *err) {
    int rc = 0;
    for (size_t f = 0; f < s->nfiles; f++) {
        s->fstart[f] = s->n;
        const sample_probe *p = &s->probes[f];
        for (size_t i = 0; rc == 0 && i < p->groups.n; i++)
            rc = add_sample(s, f, p->groups.v[i], err);
    }
    return rc;
}

static int samples_from_paths(const h5ark_value *paths, sample_set *s, h5ark_error *err) {
    size_t np = h5ark_value_len(paths);
    if (np == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "pack: 'paths' is empty");
    const char **pat = calloc(np, sizeof *pat);
    if (!pat) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t i = 0; i < np; i++)
        pat[i] = h5ark_value_at(paths, i)->as.s.ptr;
    int rc = files_expand(pat, np, false, &s->files, &s->nfiles, err);
    free(pat);
    if (rc) return -1;
    s->fcap = s->nfiles;
    return 0;
}

static int read_text(const char *abs, char **text, size_t *len, h5ark_error *err) {
    int fd = sysio.open(abs, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return h5ark_fail(err, errno == ENOENT ? H5ARK_NOT_FOUND : H5ARK_IO_ERROR,
                          "cannot open sample list '%s': %s", files_display(abs), strerror(errno));
    struct stat sb;
    int rc = 0;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "sample list '%s' is not a regular file",
                        files_display(abs));
    else if ((uint64_t)sb.st_size > SAMPLE_LIST_MAX_BYTES)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "sample list '%s' is larger than %u bytes",
                        files_display(abs), SAMPLE_LIST_MAX_BYTES);
    else if (!(*text = malloc((size_t)sb.st_size + 1)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    else if (io_pread_full(fd, *text, (uint64_t)sb.st_size, 0)) {
        free(*text);
        *text = NULL;
        rc = h5ark_fail(err, H5ARK_IO_ERROR, "cannot read sample list '%s'", files_display(abs));
    } else {
        (*text)[sb.st_size] = '\0';
        *len = (size_t)sb.st_size;
    }
    sysio.close(fd);
    return rc;
}

static int samples_from_list(const char *rel, sample_set *s, h5ark_error *err) {
    char abs[PATH_MAX];
    if (files_resolve(rel, false, abs, err)) return -1;
    char *text = NULL;
    size_t len = 0;
    if (read_text(abs, &text, &len, err)) return -1;
    lbann_sample_list l;
    char what[PATH_MAX + 20];
    snprintf(what, sizeof what, "sample list '%s'", rel);
    int rc = lbann_sample_list_parse(text, len, what, &l, err);
    free(text);
    if (rc) return -1;
    /* the base directory is relative to the data directory; "." is the list's own folder */
    char base[PATH_MAX];
    const char *slash = strrchr(rel, '/');
    if (strcmp(l.base, ".") == 0 || strcmp(l.base, "./") == 0)
        snprintf(base, sizeof base, "%.*s", slash ? (int)(slash - rel) : 1, slash ? rel : ".");
    else
        snprintf(base, sizeof base, "%s", l.base);
    for (size_t i = 0; rc == 0 && i < l.nfiles; i++) {
        const lbann_list_file *lf = &l.files[i];
        char joined[2 * PATH_MAX], fabs[PATH_MAX];
        snprintf(joined, sizeof joined, "%s/%s", base, lf->file);
        if (files_resolve(joined, false, fabs, err)) {
            rc = h5ark_fail_context(err, "%s, file '%s'", what, lf->file);
            break;
        }
        struct stat sb;
        if (stat(fabs, &sb) != 0) {
            rc = h5ark_fail(err, errno == ENOENT ? H5ARK_NOT_FOUND : H5ARK_IO_ERROR,
                            "%s names '%s', which cannot be opened: %s", what, joined,
                            strerror(errno));
            break;
        }
        char *copy = strdup(fabs);
        if (!copy || add_file(s, copy, err)) {
            rc = copy ? -1 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
        size_t f = s->nfiles - 1;
        if (!l.exclude) {
            for (size_t k = 0; rc == 0 && k < lf->nids; k++)
                rc = add_sample(s, f, lf->ids[k], err);
            continue;
        }
        /* exclusion: every top-level group but the ones named */
        sample_probe names;
        size_t kept = 0;
        if (top_groups(fabs, &names, err)) {
            rc = -1;
            break;
        }
        for (size_t g = 0; g < names.groups.n; g++) {
            bool out = false;
            for (size_t k = 0; k < lf->nids && !out; k++)
                out = strcmp(names.groups.v[g], lf->ids[k] + (lf->ids[k][0] == '/')) == 0;
            if (!out && rc == 0) rc = add_sample(s, f, names.groups.v[g], err), kept++;
        }
        sample_probe_clear(&names);
        if (rc == 0 && kept != lf->nincluded)
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "%s: '%s' has %zu samples besides the %zu excluded, the list says "
                            "%llu",
                            what, lf->file, kept, lf->nids, (unsigned long long)lf->nincluded);
    }
    lbann_sample_list_free(&l);
    return rc;
}

/* ---- reading and packing on the locales ------------------------------------------- */

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

static void note_error(pack_job *j, uint64_t key, const h5ark_error *e) {
    pthread_mutex_lock(&j->lock);
    if (key < j->err_key) {
        j->err_key = key;
        j->err = *e;
    }
    pthread_mutex_unlock(&j->lock);
}

/* What the probe found of sample i's fields. */
static const sample_field *facts_of(const sample_set *s, size_t i) {
    size_t f = s->file_of[i];
    return s->probes[f].facts + (i - s->fstart[f]) * s->probes[f].nfields;
}

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
            const sample_field *sf = facts_of(s, i);
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
        if (io_pread_full(fd, raw, sf->count * itemsize, sf->offset) == 0) return 0;
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

/* The row layout, from the first sample: every field's size and type (the first sample
 * decides them), its group and offset in the group's row, each group's width; the checks
 * LBANN makes of them. */
static int make_plan(const sample_set *s, const lbann_fields *fields, const lbann_groups *groups,
                     pack_job *job, h5ark_error *err) {
    const sample_field *sf = facts_of(s, 0);
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

/* ---- several ranks: the samples to every rank, the probes' answers to rank 0, rank 0's
 * plan to every rank ------------------------------------------------------------------------
 * Rank 0 resolves the samples and broadcasts them: the files with each file's first sample
 * and the sample ids (for `paths`, the files alone: their probes list the samples)
 *   u64 nfiles, n   nfiles x {u64 first sample; path NUL}   n x {id NUL}
 * Every rank probes its block of the files; the answers go to rank 0, which then holds
 * what one rank's probes would have found and makes every check. Every rank then needs
 * what its locales read and place: the samples again, each sample's field facts, and the
 * row layout. One buffer, broadcast:
 *   u64 nfiles, n, nfields, ngroups
 *   nfields x {u64 count, offset, group; u8 dtype, out}   ngroups x u64 width
 *   nfiles x {u64 first sample; path NUL}   n x {id NUL}
 *   n x nfields x {u64 count, offset; u8 dtype, flags}
 *   nfiles x {u64 words; the file's chunk table (sample_chunks.h), words x u64}             */

#define PLAN_FIELD_BYTES 26
#define PLAN_FACT_BYTES  18

typedef struct {
    unsigned char *p, *end;
} plan_buf;

static void put_u64(plan_buf *b, uint64_t v) {
    memcpy(b->p, &v, 8);
    b->p += 8;
}

static void put_bytes(plan_buf *b, const void *v, size_t n) {
    memcpy(b->p, v, n);
    b->p += n;
}

static bool get_u64(plan_buf *b, uint64_t *v) {
    if (b->end - b->p < 8) return false;
    memcpy(v, b->p, 8);
    b->p += 8;
    return true;
}

/* A NUL-terminated string within the buffer, or NULL. */
static const char *get_str(plan_buf *b) {
    unsigned char *z = memchr(b->p, 0, (size_t)(b->end - b->p));
    if (!z) return NULL;
    const char *s = (const char *)b->p;
    b->p = z + 1;
    return s;
}

/* The files and the sample ids: their bytes, writing them, reading them (nfiles and n
 * read before; -1 with err, malformed naming `what`). */
static uint64_t samples_bytes(const sample_set *s) {
    uint64_t n = 0;
    for (size_t f = 0; f < s->nfiles; f++)
        n += 8 + strlen(s->files[f]) + 1;
    for (size_t i = 0; i < s->n; i++)
        n += strlen(s->ids[i]) + 1;
    return n;
}

static void put_samples(plan_buf *b, const sample_set *s) {
    for (size_t f = 0; f < s->nfiles; f++) {
        put_u64(b, s->fstart[f]);
        put_bytes(b, s->files[f], strlen(s->files[f]) + 1);
    }
    for (size_t i = 0; i < s->n; i++)
        put_bytes(b, s->ids[i], strlen(s->ids[i]) + 1);
}

static int get_samples(plan_buf *b, uint64_t nfiles, uint64_t n, sample_set *s, const char *what,
                       h5ark_error *err) {
    uint64_t len = (uint64_t)(b->end - b->p);
    if (nfiles > len || n > len) goto malformed;
    s->files = calloc(nfiles ? nfiles : 1, sizeof *s->files);
    s->fstart = calloc(nfiles ? nfiles : 1, sizeof *s->fstart);
    s->ids = calloc(n ? n : 1, sizeof *s->ids);
    s->file_of = calloc(n ? n : 1, sizeof *s->file_of);
    if (!s->files || !s->fstart || !s->ids || !s->file_of)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
    s->fcap = nfiles;
    s->cap = n;
    for (; s->nfiles < nfiles; s->nfiles++) {
        uint64_t first;
        const char *path;
        if (!get_u64(b, &first) || first > n || (s->nfiles && first < s->fstart[s->nfiles - 1]) ||
            !(path = get_str(b)))
            goto malformed;
        s->fstart[s->nfiles] = (size_t)first;
        if (!(s->files[s->nfiles] = strdup(path)))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
    }
    for (size_t f = 0, i = 0; i < n; i++) {
        const char *id = get_str(b);
        if (!id) goto malformed;
        while (f + 1 < nfiles && s->fstart[f + 1] <= i)
            f++;
        if (f >= nfiles) goto malformed;
        s->file_of[i] = f;
        if (!(s->ids[s->n++] = strdup(id)))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
    }
    return 0;
malformed:
    return h5ark_fail(err, H5ARK_INTERNAL, "rank %d: a malformed %s from rank 0", ranks_self(),
                      what);
}

/* Rank 0 resolved the samples (rc its outcome); every rank gets them, with room for the
 * answers of its probes. */
static int share_samples(int rc, sample_set *s, h5ark_error *err) {
    int self = ranks_self();
    unsigned char *buf = NULL;
    uint64_t len = 0, reserved = 0;
    if (rc == 0 && self == 0) len = 16 + samples_bytes(s);
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, &len, sizeof len, err);
    if (rc == 0) rc = registry_scratch(len, (void **)&buf, &reserved, err);
    if (rc == 0 && self == 0) {
        plan_buf b = {buf, buf + len};
        put_u64(&b, s->nfiles);
        put_u64(&b, s->n);
        put_samples(&b, s);
    }
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, buf, len, err);
    if (rc == 0 && self != 0) {
        plan_buf b = {buf, buf + len};
        uint64_t nfiles, n;
        if (!get_u64(&b, &nfiles) || !get_u64(&b, &n))
            rc = h5ark_fail(err, H5ARK_INTERNAL, "rank %d: a malformed sample set from rank 0",
                            self);
        else if ((rc = get_samples(&b, nfiles, n, s, "sample set", err)) == 0)
            rc = answers_alloc(s, err);
    }
    free(buf);
    registry_unreserve(reserved);
    return ranks_agree(rc, err);
}

/* One rank's answers for its block of the files [lo, hi): per file [0, the probe's answer]
 * or, for a file that could not be probed, [error code, message]. */
static h5ark_value *answers_value(const sample_set *s, size_t lo, size_t hi) {
    h5ark_value *a = h5ark_value_array();
    for (size_t f = lo; a && f < hi; f++) {
        const h5ark_error *fe = &s->file_err[f];
        h5ark_value *e = h5ark_value_array();
        if (h5ark_value_push(e, h5ark_value_uint((uint64_t)fe->code)) ||
            h5ark_value_push(e, fe->code ? h5ark_value_str(fe->message)
                                         : sample_probe_encode(&s->probes[f])) ||
            h5ark_value_push(a, e))
            h5ark_value_destroy(&a);
    }
    return a;
}

/* Rank r's answers (rank 0, from their bytes) into s, as if its own probes had found them. */
static int answers_take(sample_set *s, size_t nfields, bool listing, int r, const void *data,
                        uint64_t len, h5ark_error *err) {
    size_t lo, hi;
    rank_files(s, r, &lo, &hi);
    const char *why = "";
    h5ark_value *v = h5ark_value_decode(data, (size_t)len, &why);
    int rc = 0;
    if (!v || v->kind != H5ARK_ARRAY || h5ark_value_len(v) != hi - lo) rc = -1;
    for (size_t f = lo; rc == 0 && f < hi; f++) {
        const h5ark_value *e = h5ark_value_at(v, f - lo), *x;
        uint64_t code;
        size_t count = (f + 1 < s->nfiles ? s->fstart[f + 1] : s->n) - s->fstart[f];
        if (e->kind != H5ARK_ARRAY || h5ark_value_len(e) != 2 ||
            !h5ark_value_to_uint64(h5ark_value_at(e, 0), &code) || code >= H5ARK_CODE_COUNT) {
            rc = -1;
            break;
        }
        x = h5ark_value_at(e, 1);
        if (code != 0 && x->kind == H5ARK_STR) {
            s->file_err[f].code = (h5ark_code)code;
            snprintf(s->file_err[f].message, sizeof s->file_err[f].message, "%.*s",
                     (int)x->as.s.len, x->as.s.ptr);
        } else if (code != 0 || sample_probe_decode(x, nfields, &s->probes[f], err) ||
                   (!listing && s->probes[f].groups.n != count)) {
            rc = -1;
        }
    }
    h5ark_value_destroy(&v);
    if (rc)
        return h5ark_fail(err, H5ARK_INTERNAL, "rank 0: malformed probe answers from rank %d", r);
    return 0;
}

/* Each rank probed its block of the files (rc its outcome); their answers go to rank 0,
 * which then holds every file's as one rank's probes would have found them. */
static int gather_answers(int rc, sample_set *s, size_t nfields, bool listing, h5ark_error *err) {
    int R = ranks_count(), self = ranks_self();
    char *data = NULL;
    size_t len = 0;
    uint64_t *counts = calloc((size_t)R, sizeof *counts), total = 0, reserved = 0;
    void *recv = NULL;
    if (rc == 0 && !counts) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && self != 0) { /* rank 0's answers are in place already */
        size_t lo, hi;
        rank_files(s, self, &lo, &hi);
        h5ark_value *a = answers_value(s, lo, hi);
        if (!a || h5ark_value_encode(a, &data, &len))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        h5ark_value_destroy(&a);
    }
    if ((rc = ranks_agree(rc, err)) == 0) {
        counts[self] = len;
        rc = ranks_allreduce_u64(counts, (size_t)R, RANKS_SUM, err);
    }
    for (int r = 0; rc == 0 && r < R; r++)
        total += counts[r];
    if (rc == 0 && self == 0) rc = registry_scratch(total, &recv, &reserved, err);
    if ((rc = ranks_agree(rc, err)) == 0) {
        h5ark_span span = {data, len};
        rc = ranks_gatherv(&span, 1, recv, counts, err);
    }
    uint64_t off = counts ? counts[0] : 0;
    for (int r = 1; rc == 0 && self == 0 && r < R; off += counts[r++])
        rc = answers_take(s, nfields, listing, r, (char *)recv + off, counts[r], err);
    free(recv);
    registry_unreserve(reserved);
    free(data);
    free(counts);
    return ranks_agree(rc, err);
}

/* The plan's bytes (as plan_encode makes them). */
static uint64_t plan_bytes(const sample_set *s, size_t nfields, size_t ngroups) {
    uint64_t chunks = 0;
    for (size_t f = 0; f < s->nfiles; f++)
        chunks += 8 + 8 * (uint64_t)s->probes[f].chunks.n;
    return 32 + nfields * PLAN_FIELD_BYTES + ngroups * 8 + s->n * nfields * PLAN_FACT_BYTES +
           samples_bytes(s) + chunks;
}

static void plan_encode(const sample_set *s, const pack_job *job, size_t nfields, size_t ngroups,
                        unsigned char *out, uint64_t len) {
    plan_buf b = {out, out + len};
    put_u64(&b, s->nfiles);
    put_u64(&b, s->n);
    put_u64(&b, nfields);
    put_u64(&b, ngroups);
    for (size_t k = 0; k < nfields; k++) {
        const field_plan *p = &job->plan[k];
        put_u64(&b, p->count);
        put_u64(&b, p->offset);
        put_u64(&b, p->group);
        unsigned char t[2] = {(unsigned char)p->dtype, (unsigned char)p->out};
        put_bytes(&b, t, 2);
    }
    for (size_t g = 0; g < ngroups; g++)
        put_u64(&b, job->width[g]);
    put_samples(&b, s);
    for (size_t i = 0; i < s->n; i++) {
        const sample_field *sf = facts_of(s, i);
        for (size_t k = 0; k < nfields; k++) {
            put_u64(&b, sf[k].count);
            put_u64(&b, sf[k].offset);
            unsigned char t[2] = {(unsigned char)sf[k].dtype,
                                  (unsigned char)((sf[k].exact ? 1 : 0) |
                                                  (sf[k].contiguous ? 2 : 0) |
                                                  (sf[k].chunked ? 4 : 0))};
            put_bytes(&b, t, 2);
        }
    }
    for (size_t f = 0; f < s->nfiles; f++) {
        const sample_chunk_table *t = &s->probes[f].chunks;
        put_u64(&b, t->n);
        if (t->n) put_bytes(&b, t->v, t->n * 8);
    }
}

/* Rank 0's plan into this rank's (empty) sample set and job (its arrays of nfields and
 * ngroups entries allocated). The facts go in as one probe answer a file, as rank 0 holds
 * them. */
static int plan_decode(unsigned char *buf, uint64_t len, size_t nfields, size_t ngroups,
                       sample_set *s, pack_job *job, h5ark_error *err) {
    plan_buf b = {buf, buf + len};
    uint64_t nfiles, n, nf, ng;
    if (!get_u64(&b, &nfiles) || !get_u64(&b, &n) || !get_u64(&b, &nf) || !get_u64(&b, &ng) ||
        nf != nfields || ng != ngroups)
        goto malformed;
    for (size_t k = 0; k < nfields; k++) {
        field_plan *p = &job->plan[k];
        uint64_t group;
        if (!get_u64(&b, &p->count) || !get_u64(&b, &p->offset) || !get_u64(&b, &group) ||
            group >= ngroups || b.end - b.p < 2 || b.p[0] >= H5ARK_DTYPE_COUNT ||
            b.p[1] >= H5ARK_DTYPE_COUNT)
            goto malformed;
        p->group = (size_t)group;
        p->dtype = (h5ark_dtype)b.p[0];
        p->out = (h5ark_dtype)b.p[1];
        b.p += 2;
    }
    for (size_t g = 0; g < ngroups; g++)
        if (!get_u64(&b, &job->width[g])) goto malformed;
    if (get_samples(&b, nfiles, n, s, "pack plan", err) || answers_alloc(s, err)) return -1;
    if ((uint64_t)(b.end - b.p) < n * nfields * PLAN_FACT_BYTES) goto malformed;
    for (size_t f = 0; f < nfiles; f++) {
        size_t count = (f + 1 < nfiles ? s->fstart[f + 1] : n) - s->fstart[f];
        size_t nrec = count * nfields;
        sample_probe *p = &s->probes[f];
        p->nfields = nfields;
        p->failed = count;
        if (!(p->facts = calloc(nrec ? nrec : 1, sizeof *p->facts)))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
        for (size_t r = 0; r < nrec; r++) {
            sample_field *sf = &p->facts[r];
            get_u64(&b, &sf->count);
            get_u64(&b, &sf->offset);
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
        if (!get_u64(&b, &words) || words > (uint64_t)(b.end - b.p) / 8) goto malformed;
        if (words && !(t->v = malloc((size_t)words * 8)))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self());
        if (words) memcpy(t->v, b.p, (size_t)words * 8);
        t->n = t->cap = (size_t)words;
        b.p += words * 8;
    }
    if (b.p != b.end) goto malformed;
    return 0;
malformed:
    return h5ark_fail(err, H5ARK_INTERNAL, "rank %d: a malformed pack plan from rank 0",
                      ranks_self());
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

/* Several ranks: rank 0 planned (rc its outcome); every rank gets the plan, counted
 * against its --max-memory in *reserved. */
static int share_plan(int rc, sample_set *s, pack_job *job, size_t nfields, size_t ngroups,
                      uint64_t *reserved, h5ark_error *err) {
    unsigned char *buf = NULL;
    uint64_t head[2] = {0, 0}; /* the plan's bytes and samples */
    if (rc == 0 && ranks_self() == 0) {
        head[0] = plan_bytes(s, nfields, ngroups);
        head[1] = s->n;
    }
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, head, sizeof head, err);
    if (rc == 0) rc = count_plan(head[0], head[1], (void **)&buf, reserved, err);
    if (rc == 0 && ranks_self() == 0) plan_encode(s, job, nfields, ngroups, buf, head[0]);
    if ((rc = ranks_agree(rc, err)) == 0) rc = ranks_bcast(0, buf, head[0], err);
    if (rc == 0 && ranks_self() != 0) {
        samples_free(s); /* its own resolution and probes: the plan has all */
        rc = plan_decode(buf, head[0], nfields, ngroups, s, job, err);
    }
    free(buf);
    return ranks_agree(rc, err);
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

/* Each locale reads, transforms and places the parts of rows that lie in its shards; every
 * file was probed and every sample checked before. */
static void pack_locale(int locale, void *ctx) {
    pack_job *j = ctx;
    const sample_set *s = j->samples;
    const lbann_fields *f = j->fields;
    uint64_t lo, hi;
    locale_samples(j, locale, &lo, &hi);
    if (lo >= hi) return;
    size_t bytes = (size_t)(j->max_count ? j->max_count : 1) * 8;
    void *raw = malloc(bytes), *tmp = malloc(bytes), *row = malloc(bytes);
    h5ark_error err = {0};
    sample_chunk_buffers cb = {0};
    int fd = -1;
    size_t open_file = SIZE_MAX;
    uint64_t i = lo;
    if (!raw || !tmp || !row) {
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
        const sample_field *sf = facts_of(s, i);
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
}

/* The sample ids as a Strings object, each locale's shards filled by its rank. */
static object *ids_object(const sample_set *s, h5ark_error *err) {
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

static int prefixed_name(const char *prefix, const char *what, char *out, size_t cap,
                         h5ark_error *err) {
    int n = snprintf(out, cap, "%s%s", prefix, what);
    if (n < 0 || (size_t)n >= cap) return h5ark_fail(err, H5ARK_BAD_REQUEST, "pack: name too long");
    for (char *p = out; *p; p++)
        if (*p == '/') *p = '.'; /* object names hold no '/' */
    return 0;
}

/* Rank 0 (or the one rank): the files and, from a list, the sample ids; room for the
 * probes' answers. */
static int resolve_samples(const h5ark_value *paths, const char *list, sample_set *samples,
                           h5ark_error *err) {
    if (paths ? samples_from_paths(paths, samples, err) : samples_from_list(list, samples, err))
        return -1;
    return answers_alloc(samples, err);
}

/* Rank 0 (or the one rank), holding every probe's answer: every check, the row layout. */
static int plan_samples(const lbann_fields *fields, const lbann_groups *groups, bool listing,
                        sample_set *samples, pack_job *job, h5ark_error *err) {
    if ((listing && list_samples(samples, err)) || check_samples(samples, fields, NULL, 1, err))
        return -1;
    if (samples->n == 0)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "pack: the %s name no samples",
                          listing ? "files" : "sample list");
    /* every sample against the first, before anything is made or read */
    if (make_plan(samples, fields, groups, job, err) ||
        check_samples(samples, fields, job->plan, samples->n, err))
        return -1;
    return 0;
}

/* Publish the ids and the groups' views (all or none; with several ranks, on every rank or
 * on none). */
static int publish(const char *prefix, object *ids, object **views, const lbann_groups *groups,
                   h5ark_error *err) {
    size_t published = 0;
    bool ids_in = false;
    char nm[512];
    int rc = prefix ? prefixed_name(prefix, "sample_ids", nm, sizeof nm, err) : 0;
    if (rc == 0 && (rc = registry_publish(ids, prefix ? nm : NULL, err)) == 0) ids_in = true;
    for (; rc == 0 && published < groups->n; published++)
        if ((prefix &&
             (rc = prefixed_name(prefix, groups->v[published].name, nm, sizeof nm, err))) ||
            (rc = registry_publish(views[published], prefix ? nm : NULL, err)))
            break;
    if ((rc = ranks_agree(rc, err)) != 0) {
        for (size_t g = 0; g < published; g++)
            registry_remove(views[g]->name, &(h5ark_error){0});
        if (ids_in) registry_remove(ids->name, &(h5ark_error){0});
    }
    return rc;
}

static int reply_pack(command_ctx *ctx, const lbann_fields *fields, const lbann_groups *groups,
                      const pack_job *job, uint64_t nsamples, object *ids, object **views,
                      h5ark_error *err) {
    int rc = 0;
    h5ark_value *gmap = h5ark_value_map(), *fmap = h5ark_value_map();
    for (size_t g = 0; gmap && g < groups->n; g++)
        h5ark_value_set(gmap, groups->v[g].name, object_describe(views[g]));
    for (size_t k = 0; fmap && k < fields->n; k++) {
        const field_plan *p = &job->plan[k];
        h5ark_value *e = h5ark_value_map(), *dims = h5ark_value_array();
        uint64_t d[34];
        size_t nd = lbann_field_dims(&fields->v[k], p->count, d);
        for (size_t i = 0; dims && i < nd; i++)
            h5ark_value_push(dims, h5ark_value_uint(d[i]));
        if (!e || !dims || h5ark_value_set(e, "group", h5ark_value_str(groups->v[p->group].name)) ||
            h5ark_value_set(e, "offset", h5ark_value_uint(p->offset)) ||
            h5ark_value_set(e, "length", h5ark_value_uint(p->count)) ||
            h5ark_value_set(e, "dims", dims) ||
            h5ark_value_set(e, "dtype", h5ark_value_str(h5ark_dtype_name(p->out))) ||
            h5ark_value_set(fmap, fields->v[k].path, e)) {
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            break;
        }
    }
    if (rc == 0 && (!gmap || !fmap)) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && (reply_set(ctx, "samples", h5ark_value_uint(nsamples), err) ||
                    reply_set(ctx, "sample_ids", object_describe(ids), err) ||
                    reply_set(ctx, "groups", gmap, err) || reply_set(ctx, "fields", fmap, err)))
        rc = -1;
    else
        gmap = fmap = NULL;
    h5ark_value_destroy(&gmap);
    h5ark_value_destroy(&fmap);
    return rc;
}

/* At several ranks: every rank parses the schemas (they are in the request each rank has,
 * and fields and transforms are a function of them alone); rank 0 resolves the samples,
 * every rank's probes answer for its block of the files, rank 0 checks them all and
 * broadcasts the plan; each rank's locales read and place
 * the parts of rows in their own shards, from the files in the shared data directory. */
static int cmd_pack(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *paths = arg_value(ctx, "paths");
    const char *list = arg_str(ctx, "sample_list", NULL);
    if (!paths == !list)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "pack: give the samples as 'paths' or as 'sample_list' (one of them)");
    const char *prefix = arg_str(ctx, "name", NULL);
    const h5ark_value *ds_arg = arg_value(ctx, "data_schema");
    const h5ark_value *es_arg = arg_value(ctx, "experiment_schema");
    bool several = ranks_count() > 1, listing = paths != NULL;
    uint64_t plan_reserved = 0; /* the plan, counted against --max-memory */
    h5ark_value *data = NULL, *exp = NULL;
    lbann_fields fields = {0};
    lbann_groups groups = {0};
    sample_set samples = {0};
    pack_job job = {0};
    object *ids = NULL, **views = NULL;
    int rc = -1;
    bool entered = false;
    int prc = lbann_yaml_parse(ds_arg->as.s.ptr, ds_arg->as.s.len, "data_schema", &data, err);
    if (prc == 0 && es_arg)
        prc = lbann_yaml_parse(es_arg->as.s.ptr, es_arg->as.s.len, "experiment_schema", &exp, err);
    if (prc == 0)
        prc = lbann_fields_make(data, exp, &fields, ctx->warnings, err) ||
                      lbann_groups_make(&fields, &groups, err)
                  ? -1
                  : 0;
    if (prc == 0) {
        job.plan = calloc(fields.n ? fields.n : 1, sizeof *job.plan);
        job.width = calloc(groups.n ? groups.n : 1, sizeof *job.width);
        job.arrays = calloc(groups.n ? groups.n : 1, sizeof *job.arrays);
        views = calloc(groups.n ? groups.n : 1, sizeof *views);
        if (!job.plan || !job.width || !job.arrays || !views)
            prc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (ranks_agree(prc, err)) goto out;
    twin_readers_enter();
    entered = true;
    /* rank 0 resolves the samples; every rank probes its block of the files; rank 0, with
     * every answer, checks and plans */
    prc = ranks_self() == 0 ? resolve_samples(paths, list, &samples, err) : 0;
    if (several ? share_samples(prc, &samples, err) : prc) goto out;
    prc = probe_files(&samples, &fields, listing, err);
    if (several ? gather_answers(prc, &samples, fields.n, listing, err) : prc) goto out;
    prc = ranks_self() == 0 ? plan_samples(&fields, &groups, listing, &samples, &job, err) : 0;
    if (several ? share_plan(prc, &samples, &job, fields.n, groups.n, &plan_reserved, err)
                : prc || count_plan(plan_bytes(&samples, fields.n, groups.n), samples.n, NULL,
                                    &plan_reserved, err))
        goto out;
    for (size_t k = 0; k < fields.n; k++)
        if (job.plan[k].count > job.max_count) job.max_count = job.plan[k].count;
    /* every rank makes the objects (agreeing on the memory), then fills its own shards */
    for (size_t g = 0; g < groups.n; g++)
        if (!(job.arrays[g] = object_new_pdarray(job.plan[groups.v[g].members[0]].out,
                                                 samples.n * job.width[g], err)))
            goto out;
    if (!(ids = ids_object(&samples, err))) goto out;
    job.fields = &fields;
    job.groups = &groups;
    job.samples = &samples;
    job.err_key = UINT64_MAX;
    pthread_mutex_init(&job.lock, NULL);
    locales_run(pack_locale, &job);
    pthread_mutex_destroy(&job.lock);
    twin_readers_leave();
    entered = false;
    /* the first failure of all in (sample, field) order, as one rank finds it */
    uint64_t first = job.err_key;
    if (several && ranks_allreduce_u64(&first, 1, RANKS_MIN, err)) goto out;
    if (first != UINT64_MAX) {
        if (job.err_key == first) *err = job.err;
        if (several) ranks_agree(job.err_key == first ? -1 : 0, err);
        goto out;
    }
    /* the 2-D results */
    int vrc = 0;
    for (size_t g = 0; g < groups.n && vrc == 0; g++) {
        uint64_t shape[2] = {samples.n, job.width[g]};
        if (!(views[g] = arrayview_reshape(job.arrays[g], groups.v[g].name, shape, 2, err)))
            vrc = -1;
    }
    if (ranks_agree(vrc, err) || publish(prefix, ids, views, &groups, err)) goto out;
    /* the objects stay only with a reply that names them */
    rc = ranks_agree(reply_pack(ctx, &fields, &groups, &job, samples.n, ids, views, err), err);
    if (rc) {
        for (size_t g = 0; g < groups.n; g++)
            registry_remove(views[g]->name, &(h5ark_error){0});
        registry_remove(ids->name, &(h5ark_error){0});
    }
out:
    if (entered) twin_readers_leave();
    for (size_t g = 0; views && g < groups.n; g++)
        object_release(views[g]);
    free(views);
    for (size_t g = 0; job.arrays && g < groups.n; g++)
        object_release(job.arrays[g]);
    object_release(ids);
    free(job.arrays);
    free(job.width);
    free(job.plan);
    samples_free(&samples);
    registry_unreserve(plan_reserved);
    lbann_groups_free(&groups);
    lbann_fields_free(&fields);
    h5ark_value_destroy(&data);
    h5ark_value_destroy(&exp);
    return rc;
}

const command_def lbann_commands[] = {
    {"pack",
     cmd_pack,
     {{"data_schema", ARG_STR, true},
      {"experiment_schema", ARG_STR, false},
      {"paths", ARG_STR_ARRAY, false},
      {"sample_list", ARG_STR, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {0},
};
