/* LBANN's sample lists: a kind line, a line of counts, the base directory, a line a file. */
#include "lbann.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void lbann_sample_list_free(lbann_sample_list *l) {
    for (size_t i = 0; i < l->nfiles; i++) {
        for (size_t k = 0; k < l->files[i].nids; k++)
            free(l->files[i].ids[k]);
        free(l->files[i].ids);
        free(l->files[i].file);
    }
    free(l->files);
    free(l->base);
    *l = (lbann_sample_list){0};
}

typedef struct {
    char **tok;
    size_t n;
} tokens;

static void tokens_free(tokens *t) {
    for (size_t i = 0; i < t->n; i++)
        free(t->tok[i]);
    free(t->tok);
    *t = (tokens){0};
}

/* Split a line on blanks. */
static int split(const char *s, size_t len, tokens *t, h5ark_error *err) {
    *t = (tokens){0};
    size_t cap = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
            i++;
        if (i == len) break;
        size_t j = i;
        while (j < len && s[j] != ' ' && s[j] != '\t' && s[j] != '\r')
            j++;
        if (t->n == cap) {
            cap = cap ? 2 * cap : 8;
            char **v = realloc(t->tok, cap * sizeof *v);
            if (!v) goto oom;
            t->tok = v;
        }
        if (!(t->tok[t->n] = strndup(s + i, j - i))) goto oom;
        t->n++;
        i = j;
    }
    return 0;
oom:
    tokens_free(t);
    return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

static bool count_of(const char *s, uint64_t *out) {
    if (*s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno) return false;
    *out = v;
    return true;
}

int lbann_sample_list_parse(const char *text, size_t len, const char *what, lbann_sample_list *out,
                            h5ark_error *err) {
    *out = (lbann_sample_list){0};
    enum { KIND_INCLUSION, KIND_EXCLUSION, KIND_V2 } kind = KIND_INCLUSION;
    uint64_t want_inc = 0, want_exc = 0, want_files = 0, got_inc = 0, got_exc = 0;
    size_t cap = 0, line = 0, stage = 0;
    tokens t = {0};
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        const char *s = text + at;
        size_t n = end - at;
        at = end + 1;
        line++;
        if (memchr(s, '\0', n))
            return lbann_sample_list_free(out),
                   h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s line %zu: holds a NUL byte", what, line);
        if (split(s, n, &t, err)) goto fail;
        if (t.n == 0 || t.tok[0][0] == '#') { /* blank lines and comments */
            tokens_free(&t);
            continue;
        }
        if (stage == 0) {
            if (t.n == 1 && strcmp(t.tok[0], "CONDUIT_HDF5_INCLUSION") == 0)
                kind = KIND_INCLUSION;
            else if (t.n == 1 && strcmp(t.tok[0], "CONDUIT_HDF5_EXCLUSION") == 0)
                kind = KIND_EXCLUSION;
            else if (t.n == 1 && strcmp(t.tok[0], "MULTI-SAMPLE_INCLUSION_V2") == 0)
                kind = KIND_V2;
            else {
                h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                           "%s line %zu: not a sample list this reads (CONDUIT_HDF5_INCLUSION, "
                           "CONDUIT_HDF5_EXCLUSION or MULTI-SAMPLE_INCLUSION_V2)",
                           what, line);
                goto fail;
            }
            out->exclude = kind == KIND_EXCLUSION;
        } else if (stage == 1) {
            bool good =
                kind == KIND_V2
                    ? t.n == 2 && count_of(t.tok[0], &want_inc) && count_of(t.tok[1], &want_files)
                    : t.n == 3 && count_of(t.tok[0], &want_inc) && count_of(t.tok[1], &want_exc) &&
                          count_of(t.tok[2], &want_files);
            if (!good) {
                h5ark_fail(
                    err, H5ARK_SCHEMA_ERROR, "%s line %zu: the header must be %s", what, line,
                    kind == KIND_V2 ? "'<samples> <files>'" : "'<included> <excluded> <files>'");
                goto fail;
            }
        } else if (stage == 2) {
            if (t.n != 1) {
                h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                           "%s line %zu: the base directory must be one word", what, line);
                goto fail;
            }
            out->base = t.tok[0];
            t.tok[0] = NULL;
        } else {
            size_t fixed = kind == KIND_V2 ? 2 : 3;
            uint64_t ninc = 0, nexc = 0;
            bool good = t.n >= fixed && count_of(t.tok[1], &ninc) &&
                        (kind == KIND_V2 || count_of(t.tok[2], &nexc));
            uint64_t listed = kind == KIND_EXCLUSION ? nexc : ninc;
            if (!good || t.n - fixed != listed) {
                h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                           "%s line %zu: a file line must be '<file> <included>%s' followed by "
                           "the %s sample ids it counts",
                           what, line, kind == KIND_V2 ? "" : " <excluded>",
                           kind == KIND_EXCLUSION ? "excluded" : "included");
                goto fail;
            }
            if (out->nfiles == cap) {
                cap = cap ? 2 * cap : 16;
                lbann_list_file *v = realloc(out->files, cap * sizeof *v);
                if (!v) goto oom;
                out->files = v;
            }
            lbann_list_file *f = &out->files[out->nfiles];
            *f = (lbann_list_file){.file = t.tok[0], .nincluded = ninc};
            t.tok[0] = NULL;
            out->nfiles++;
            if (listed && !(f->ids = calloc(listed, sizeof *f->ids))) goto oom;
            for (size_t k = fixed; k < t.n; k++) {
                f->ids[f->nids++] = t.tok[k];
                t.tok[k] = NULL;
            }
            got_inc += ninc;
            got_exc += nexc;
        }
        stage++;
        tokens_free(&t);
    }
    if (stage < 3) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: ends before its %s", what,
                   stage == 0   ? "kind line"
                   : stage == 1 ? "header"
                                : "base directory");
        goto fail;
    }
    if (out->nfiles != want_files || got_inc != want_inc || got_exc != want_exc) {
        h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                   "%s: the header counts %llu samples%s in %llu files, the lines %llu%s in "
                   "%zu",
                   what, (unsigned long long)want_inc, kind == KIND_V2 ? "" : " included",
                   (unsigned long long)want_files, (unsigned long long)got_inc,
                   kind == KIND_V2 ? "" : " included", out->nfiles);
        if (got_exc != want_exc && kind != KIND_V2)
            h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                       "%s: the header counts %llu excluded samples, the lines %llu", what,
                       (unsigned long long)want_exc, (unsigned long long)got_exc);
        goto fail;
    }
    return 0;
oom:
    h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
fail:
    tokens_free(&t);
    lbann_sample_list_free(out);
    return -1;
}
