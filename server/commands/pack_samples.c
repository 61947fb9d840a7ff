/* pack's samples: rank 0 resolves them from `paths` or a sample list and shares them with
 * every rank; each rank's locales probe its block of the files; the answers are collected
 * on rank 0 (pack.h). The sample files are probed in the file probe processes: the daemon
 * never walks an untrusted file itself. */
#include "commands/pack.h"

#include "access.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "locales.h"
#include "registry.h"
#include "storage/files.h"
#include "storage/io.h"
#include "storage/sandbox.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAMPLE_LIST_MAX_BYTES (64u << 20)

void pack_samples_free(sample_set *s) {
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

/* (a file's samples are a run; listing, none are known yet) */
int pack_answers_alloc(sample_set *s, h5ark_error *err) {
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
        return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
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
    uint64_t lo, hi; /* this rank's files */
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

int pack_probe(sample_set *s, const lbann_fields *fields, bool listing, h5ark_error *err) {
    const char **names = calloc(fields->n ? fields->n : 1, sizeof *names);
    if (!names) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (size_t k = 0; k < fields->n; k++)
        names[k] = fields->v[k].path;
    probe_job j = {.s = s, .fields = names, .nfields = fields->n, .listing = listing};
    spmd_block(s->nfiles, &j.lo, &j.hi);
    locales_run(probe_locale, &j);
    free(names);
    return 0;
}

int pack_list_samples(sample_set *s, h5ark_error *err) {
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
    file_access fa = access_here();
    int rc = files_expand(&fa, PERM_READ, pat, np, false, &s->files, &s->nfiles, err);
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
    file_access fa = access_here();
    if (files_resolve(&fa, PERM_READ, rel, false, abs, err)) return -1;
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
        if (files_resolve(&fa, PERM_READ, joined, false, fabs, err)) {
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

/* A NUL-terminated string within the buffer, or NULL. */
static const char *get_str(pack_buf *b) {
    unsigned char *z = memchr(b->p, 0, (size_t)(b->end - b->p));
    if (!z) return NULL;
    const char *s = (const char *)b->p;
    b->p = z + 1;
    return s;
}

uint64_t pack_samples_bytes(const sample_set *s) {
    uint64_t n = 0;
    for (size_t f = 0; f < s->nfiles; f++)
        n += 8 + strlen(s->files[f]) + 1;
    for (size_t i = 0; i < s->n; i++)
        n += strlen(s->ids[i]) + 1;
    return n;
}

void pack_put_samples(pack_buf *b, const sample_set *s) {
    for (size_t f = 0; f < s->nfiles; f++) {
        pack_put_u64(b, s->fstart[f]);
        pack_put_bytes(b, s->files[f], strlen(s->files[f]) + 1);
    }
    for (size_t i = 0; i < s->n; i++)
        pack_put_bytes(b, s->ids[i], strlen(s->ids[i]) + 1);
}

int pack_get_samples(pack_buf *b, uint64_t nfiles, uint64_t n, sample_set *s, const char *what,
                     h5ark_error *err) {
    uint64_t len = (uint64_t)(b->end - b->p);
    if (nfiles > len || n > len) goto malformed;
    s->files = calloc(nfiles ? nfiles : 1, sizeof *s->files);
    s->fstart = calloc(nfiles ? nfiles : 1, sizeof *s->fstart);
    s->ids = calloc(n ? n : 1, sizeof *s->ids);
    s->file_of = calloc(n ? n : 1, sizeof *s->file_of);
    if (!s->files || !s->fstart || !s->ids || !s->file_of)
        return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    s->fcap = nfiles;
    s->cap = n;
    for (; s->nfiles < nfiles; s->nfiles++) {
        uint64_t first;
        const char *path;
        if (!pack_get_u64(b, &first) || first > n ||
            (s->nfiles && first < s->fstart[s->nfiles - 1]) || !(path = get_str(b)))
            goto malformed;
        s->fstart[s->nfiles] = (size_t)first;
        if (!(s->files[s->nfiles] = strdup(path)))
            return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    for (size_t f = 0, i = 0; i < n; i++) {
        const char *id = get_str(b);
        if (!id) goto malformed;
        while (f + 1 < nfiles && s->fstart[f + 1] <= i)
            f++;
        if (f >= nfiles) goto malformed;
        s->file_of[i] = f;
        if (!(s->ids[s->n++] = strdup(id)))
            return spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    return 0;
malformed:
    return spmd_fail(err, H5ARK_INTERNAL, "a malformed %s from rank 0", what);
}

/* ---- sharing the samples, collecting the answers ---- */

typedef struct {
    sample_set *s;
    uint64_t reserved; /* the bytes on the wire, counted against --max-memory */
} samples_wire;

static int samples_room(void *ctx, uint64_t len, void **buf, h5ark_error *err) {
    samples_wire *w = ctx;
    return registry_scratch(len, buf, &w->reserved, err);
}

/* u64 nfiles, n, then the samples */
static int samples_encode(void *ctx, void **buf, uint64_t *len, h5ark_error *err) {
    samples_wire *w = ctx;
    *len = 16 + pack_samples_bytes(w->s);
    if (samples_room(ctx, *len, buf, err)) return -1;
    pack_buf b = {*buf, (unsigned char *)*buf + *len};
    pack_put_u64(&b, w->s->nfiles);
    pack_put_u64(&b, w->s->n);
    pack_put_samples(&b, w->s);
    return 0;
}

static int samples_decode(void *ctx, int from, const void *buf, uint64_t len, h5ark_error *err) {
    samples_wire *w = ctx;
    pack_buf b = {(unsigned char *)buf, (unsigned char *)buf + len};
    uint64_t nfiles, n;
    (void)from;
    if (!pack_get_u64(&b, &nfiles) || !pack_get_u64(&b, &n))
        return spmd_fail(err, H5ARK_INTERNAL, "a malformed sample set from rank 0");
    if (pack_get_samples(&b, nfiles, n, w->s, "sample set", err)) return -1;
    return pack_answers_alloc(w->s, err);
}

int pack_share_samples(int rc, sample_set *s, h5ark_error *err) {
    static const spmd_codec codec = {samples_encode, samples_room, samples_decode};
    samples_wire w = {s, 0};
    rc = spmd_share(rc, &codec, &w, err);
    registry_unreserve(w.reserved);
    return rc;
}

/* The answers on the wire: a rank's for its block of the files, per file [0, the probe's
 * answer] or, for a file that could not be probed, [error code, message]. */
typedef struct {
    sample_set *s;
    size_t nfields;
    bool listing;
    uint64_t reserved;
} answers_wire;

static int answers_encode(void *ctx, void **buf, uint64_t *len, h5ark_error *err) {
    const answers_wire *w = ctx;
    const sample_set *s = w->s;
    uint64_t lo, hi;
    spmd_block(s->nfiles, &lo, &hi);
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
    size_t n = 0;
    int rc = a && h5ark_value_encode(a, (char **)buf, &n) == 0
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    *len = n;
    h5ark_value_destroy(&a);
    return rc;
}

static int answers_room(void *ctx, uint64_t len, void **buf, h5ark_error *err) {
    answers_wire *w = ctx;
    return registry_scratch(len, buf, &w->reserved, err);
}

/* Rank r's answers into s, as if rank 0's own probes had found them. */
static int answers_decode(void *ctx, int r, const void *data, uint64_t len, h5ark_error *err) {
    answers_wire *w = ctx;
    sample_set *s = w->s;
    uint64_t lo, hi;
    spmd_block_of(s->nfiles, r, &lo, &hi);
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
        } else if (code != 0 || sample_probe_decode(x, w->nfields, &s->probes[f], err) ||
                   (!w->listing && s->probes[f].groups.n != count)) {
            rc = -1;
        }
    }
    h5ark_value_destroy(&v);
    if (rc)
        return h5ark_fail(err, H5ARK_INTERNAL, "rank 0: malformed probe answers from rank %d", r);
    return 0;
}

int pack_collect_probes(int rc, sample_set *s, size_t nfields, bool listing, h5ark_error *err) {
    static const spmd_codec codec = {answers_encode, answers_room, answers_decode};
    answers_wire w = {s, nfields, listing, 0};
    rc = spmd_collect(rc, &codec, &w, err);
    registry_unreserve(w.reserved);
    return rc;
}

int pack_resolve(void *source, h5ark_error *err) {
    const pack_source *src = source;
    if (src->paths ? samples_from_paths(src->paths, src->samples, err)
                   : samples_from_list(src->list, src->samples, err))
        return -1;
    return pack_answers_alloc(src->samples, err);
}
