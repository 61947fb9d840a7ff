/* Strings commands: compare (== / != of strings, with strings or one text), split (each
 * string cut at a literal pattern), random_strings, and the strings half of concatenate.
 * One path at any rank count: each rank works on its own shards, new strings are placed in
 * the block distribution by strings_place, and counts cross ranks with the rank
 * layer's collectives (which do nothing at one rank). */
#include "commands.h"
#include "strings_ops.h"

#include "elements.h"
#include "locales.h"
#include "objects/strings.h"
#include "dist/ranks.h"
#include "registry.h"
#include "sysio.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static object *strings_named(command_ctx *ctx, const char *cmd, const char *arg, h5ark_error *err) {
    object *s = registry_get(arg_str(ctx, arg, ""), err);
    if (!s) {
        h5ark_fail_context(err, "%s: argument '%s'", cmd, arg);
        return NULL;
    }
    if (s->objtype != H5ARK_STRINGS) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "%s: '%s' names %s %s, not strings", cmd, arg,
                   h5ark_objtype_name(s->objtype), s->name);
        object_release(s);
        return NULL;
    }
    return s;
}

/* Whether d's shards split its rows as o's do (a locale's rows of one are its rows of the
 * other). */
static bool same_rows(const darray *d, const darray *o) {
    for (int b = 0; b < d->nshards; b++)
        if (d->shards[b].start != o->shards[b].start || d->shards[b].count != o->shards[b].count)
            return false;
    return true;
}

/* Whether this rank holds every shard of d with rows. */
static bool all_here(const darray *d) {
    for (int b = 0; b < d->nshards; b++)
        if (d->shards[b].count && !locales_is_local(b)) return false;
    return true;
}

static uint64_t *counts_of(const darray *d) {
    uint64_t *counts = sysio.calloc((size_t)d->nshards, sizeof *counts);
    for (int b = 0; counts && b < d->nshards; b++)
        counts[b] = d->shards[b].count;
    return counts;
}

/* ---- compare ---- */

typedef struct {
    const object *a, *b; /* b NULL: compare with text */
    const char *text;
    size_t text_len;
    bool equal;   /* == (else !=) */
    bool b_along; /* b's rows lie as a's */
    darray *out;  /* laid out as a */
} cmp_job;

static void cmp_locale(int locale, void *arg) {
    cmp_job *j = arg;
    shard *o = &j->out->shards[locale];
    for (uint64_t k = 0; k < o->count; k++) {
        uint64_t la, lb = j->text_len;
        const char *sa = elem_string_in_shard(j->a, locale, k, &la);
        const char *sb = !j->b        ? j->text
                         : j->b_along ? elem_string_in_shard(j->b, locale, k, &lb)
                                      : elem_string_at(j->b, o->start + k, &lb);
        bool same = la == lb && memcmp(sa, sb, la) == 0;
        ((uint8_t *)o->data)[k] = same == j->equal;
    }
}

/* compare {strings, other | text, op, name}: a bool pdarray, where strings[i] == (or !=)
 * other[i], or the text. */
static int cmd_compare(command_ctx *ctx, h5ark_error *err) {
    const char *op = arg_str(ctx, "op", "");
    if (strcmp(op, "==") != 0 && strcmp(op, "!=") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "compare: 'op' is == or !=, not '%.20s'", op);
    bool has_other = arg_has(ctx, "other");
    if (has_other == arg_has(ctx, "text"))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "compare: give one of 'other' and 'text'");
    object *a = strings_named(ctx, "compare", "strings", err);
    object *b = a && has_other ? strings_named(ctx, "compare", "other", err) : NULL;
    int rc = a && (b || !has_other) ? 0 : -1;
    if (rc == 0 && b && a->size != b->size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "compare: the strings differ in size (%llu, %llu)",
                        (unsigned long long)a->size, (unsigned long long)b->size);
    const h5ark_value *text = arg_value(ctx, "text");
    cmp_job j = {.a = a,
                 .b = b,
                 .text = text ? text->as.s.ptr : NULL,
                 .text_len = text ? text->as.s.len : 0,
                 .equal = op[0] == '='};
    if (rc == 0 && b) {
        j.b_along = same_rows(b->segments, a->segments);
        /* else b is read by row, which needs all of it here */
        if (!j.b_along && !all_here(b->segments))
            rc = ranks_not_yet(err, "comparing strings laid out differently");
    }
    uint64_t *counts = rc == 0 ? counts_of(a->segments) : NULL;
    if (rc == 0 && !counts) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    object *out = rc == 0 ? object_new_pdarray_counts(H5ARK_BOOLEAN, a->size, counts, err) : NULL;
    if (rc == 0 && !out) rc = -1;
    if (rc == 0) {
        j.out = out->values;
        locales_run(cmp_locale, &j);
        rc = command_publish_all(ctx, &out, (const char *const[]){"object"}, 1,
                                 arg_str(ctx, "name", NULL), err);
    }
    free(counts);
    object_release(out);
    object_release(b);
    object_release(a);
    return rc;
}

/* ---- split ---- */

/* String p[0..n) cut at the pattern (at most `max` cuts; 0: all, negative: none), the
 * pieces written to out, each followed by a NUL, and where each starts (from `at`) to
 * starts: at most n + 1 bytes and n + 1 pieces, the pattern being at least one byte. With
 * out NULL the pieces are only counted. Returns the pieces; *written the bytes. */
static uint64_t split_string(const char *p, uint64_t n, const char *pattern, size_t plen,
                             int64_t max, char *out, int64_t *starts, uint64_t at,
                             uint64_t *written) {
    const char *end = p + n;
    uint64_t pieces = 0, w = 0;
    for (int64_t splits = 0;; splits++) {
        const char *hit = (max == 0 || splits < max) && (size_t)(end - p) >= plen
                              ? memmem(p, (size_t)(end - p), pattern, plen)
                              : NULL;
        const char *stop = hit ? hit : end;
        if (out) {
            starts[pieces] = (int64_t)(at + w);
            memcpy(out + w, p, (size_t)(stop - p));
            out[w + (uint64_t)(stop - p)] = '\0';
        }
        w += (uint64_t)(stop - p) + 1;
        pieces++;
        if (!hit) break;
        p = hit + plen;
    }
    *written = w;
    return pieces;
}

typedef struct {
    const object *s;
    const char *pattern;
    size_t plen;
    int64_t max;
    object *segs;     /* NULL, or each string's first piece, laid out as s */
    char *buf;        /* this rank's pieces: a locale's where its strings' bytes would lie */
    int64_t *starts;  /* NULL: count the pieces; else where each piece starts in its locale's */
    uint64_t base;    /* the values byte of this rank's first */
    uint64_t *made;   /* per local locale: pieces, then bytes */
    uint64_t *row0;   /* per locale (all of them): its first piece's row of the whole */
    uint64_t *piece0; /* per local locale: its first piece's index in starts */
} split_job;

static void split_locale(int b, void *arg) {
    split_job *j = arg;
    int t = b - locales_local_first();
    const shard *val = &j->s->values->shards[b];
    char *out = j->starts ? j->buf + (val->start - j->base) : NULL;
    int64_t *starts = j->starts ? j->starts + j->piece0[t] : NULL;
    int64_t *first = j->segs && j->starts ? j->segs->values->shards[b].data : NULL;
    uint64_t pieces = 0, at = 0;
    for (uint64_t k = 0; k < j->s->segments->shards[b].count; k++) {
        uint64_t n, w;
        const char *p = elem_string_in_shard(j->s, b, k, &n);
        if (first) first[k] = (int64_t)(j->row0[b] + pieces);
        pieces += split_string(p, n, j->pattern, j->plen, j->max, out ? out + at : NULL,
                               starts ? starts + pieces : NULL, at, &w);
        at += w;
    }
    j->made[2 * t] = pieces;
    j->made[2 * t + 1] = at;
}

/* Each rank's locales count their pieces, the counts of every locale are summed over
 * ranks (so each locale knows its first piece's row), then each locale cuts its own
 * strings into one buffer of the rank's, and the pieces are placed in the block
 * distribution (strings_place). */
static object *split_pieces(split_job *j, h5ark_error *err) {
    const object *s = j->s;
    int T = locales_local_count(), L = s->values->nshards, first = locales_local_first();
    uint64_t reserved = 0, local = 0;
    for (int b = first; b < first + T; b++)
        local += s->values->shards[b].count;
    j->base = s->values->shards[first].start;
    j->made = sysio.calloc(2 * (size_t)T, sizeof *j->made);
    j->row0 = sysio.calloc((size_t)L + 1, sizeof *j->row0);
    j->piece0 = sysio.calloc((size_t)T, sizeof *j->piece0);
    strings_run *runs = sysio.calloc((size_t)T, sizeof *runs);
    object *out = NULL;
    int rc = j->made && j->row0 && j->piece0 && runs
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (ranks_agree(rc, err)) goto done;
    locales_run(split_locale, j); /* counted */
    uint64_t npieces = 0;
    for (int t = 0; t < T; t++) {
        j->piece0[t] = npieces;
        npieces += j->made[2 * t];
        j->row0[first + t] = j->made[2 * t];
    }
    if (ranks_allreduce_u64(j->row0, (size_t)L, RANKS_SUM, err)) goto done;
    uint64_t total = 0;
    for (int b = 0; b < L; b++) { /* each locale's pieces, then the pieces before it */
        uint64_t c = j->row0[b];
        j->row0[b] = total;
        total += c;
    }
    /* a piece takes no more bytes than its string (the pattern is at least one byte) */
    if (registry_scratch_agreed(local, (void **)&j->buf, &reserved, err) ||
        registry_scratch_agreed(npieces * 8, (void **)&j->starts, &reserved, err))
        goto done;
    locales_run(split_locale, j); /* made */
    for (int t = 0; t < T; t++)
        runs[t] = (strings_run){j->row0[first + t],
                                j->made[2 * t],
                                j->buf + (s->values->shards[first + t].start - j->base),
                                j->made[2 * t + 1],
                                j->starts + j->piece0[t],
                                0};
    out = strings_place(total, runs, (size_t)T, err);
done:
    free(j->made);
    free(j->row0);
    free(j->piece0);
    free(j->buf);
    free(j->starts);
    free(runs);
    registry_unreserve(reserved);
    return out;
}

/* split {strings, pattern, max, segments, name}: each string cut at the literal pattern (at
 * most `max` cuts; 0: all), the pieces as new strings and, with segments, the row of each
 * string's first piece (an int64 pdarray). */
static int cmd_split(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *pat = arg_value(ctx, "pattern");
    if (!pat->as.s.len) return h5ark_fail(err, H5ARK_BAD_REQUEST, "split: the pattern is empty");
    object *s = strings_named(ctx, "split", "strings", err);
    if (!s) return -1;
    bool segs_too = arg_bool(ctx, "segments", false);
    uint64_t *counts = counts_of(s->segments);
    int rc = ranks_agree(counts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err);
    object *made[2] = {0};
    if (rc == 0 && segs_too &&
        !(made[1] = object_new_pdarray_counts(H5ARK_INT64, s->size, counts, err)))
        rc = -1;
    split_job j = {.s = s,
                   .pattern = pat->as.s.ptr,
                   .plen = pat->as.s.len,
                   .max = arg_int(ctx, "max", 0),
                   .segs = made[1]};
    if (rc == 0 && !(made[0] = split_pieces(&j, err))) rc = -1;
    if (rc == 0)
        rc = command_publish_all(ctx, made, (const char *const[]){"object", "segments"},
                                 segs_too ? 2 : 1, arg_str(ctx, "name", NULL), err);
    free(counts);
    object_release(made[0]);
    object_release(made[1]);
    object_release(s);
    return rc;
}

/* ---- concatenate ---- */

object *strings_concatenate(object *const *parts, size_t n, h5ark_error *err) {
    int first = locales_local_first(), T = locales_local_count();
    strings_run *runs = sysio.calloc(n * (size_t)T + 1, sizeof *runs);
    size_t nruns = 0;
    uint64_t at = 0;
    for (size_t k = 0; runs && k < n; at += parts[k++]->size)
        for (int b = first; b < first + T; b++) {
            const shard *seg = &parts[k]->segments->shards[b], *val = &parts[k]->values->shards[b];
            runs[nruns++] = (strings_run){at + seg->start, seg->count, val->data,
                                          val->count,      seg->data,  (int64_t)val->start};
        }
    object *out = NULL;
    if (ranks_agree(runs ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), err) == 0)
        out = strings_place(at, runs, nruns, err);
    free(runs);
    return out;
}

/* ---- random_strings ---- */

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static const struct {
    const char *name, *set;
} char_sets[] = {{"uppercase", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
                 {"lowercase", "abcdefghijklmnopqrstuvwxyz"},
                 {"numeric", "0123456789"},
                 {"alphabetic", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"},
                 {"alphanumeric", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"},
                 {"printable", " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"}};

/* This rank's strings, rows [lo, hi) of the n the stream gives: every rank draws the whole
 * stream (so the strings are those of the seed at any rank count) and keeps its own rows.
 * The bytes are counted against --max-memory as they grow. */
typedef struct {
    char *bytes;
    int64_t *offs;
    uint64_t len, cap;
} random_rows;

static int grow(random_rows *r, uint64_t need, h5ark_error *err) {
    if (need <= r->cap) return 0;
    uint64_t want = need * 2;
    h5ark_error limit = {0};
    if (registry_reserve(want, &limit)) {
        *err = limit;
        return -1;
    }
    registry_unreserve(want);
    char *bigger = realloc(r->bytes, want);
    if (!bigger) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    r->bytes = bigger;
    r->cap = want;
    return 0;
}

/* random_strings {size, dist uniform|lognormal, chars, arg1, arg2, seed, name}: uniform
 * lengths in [arg1, arg2), or lognormal ones of log-mean arg1 and log-sd arg2, of
 * characters drawn from the named set; no seed (or a negative one): one from the clock. */
static int cmd_random_strings(command_ctx *ctx, h5ark_error *err) {
    uint64_t n = arg_uint(ctx, "size", 0);
    const char *dist = arg_str(ctx, "dist", ""), *chars = arg_str(ctx, "chars", "");
    double a1 = arg_number(ctx, "arg1", 0), a2 = arg_number(ctx, "arg2", 0);
    const char *set = NULL;
    for (size_t i = 0; i < sizeof char_sets / sizeof char_sets[0]; i++)
        if (strcmp(char_sets[i].name, chars) == 0) set = char_sets[i].set;
    if (!set) return h5ark_fail(err, H5ARK_BAD_REQUEST, "unknown chars '%.40s'", chars);
    bool uniform = strcmp(dist, "uniform") == 0;
    if (!uniform && strcmp(dist, "lognormal") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "dist must be uniform or lognormal");
    if (uniform && !(a1 >= 0 && a2 > a1 && a2 <= 1e6))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "lengths must be 0 <= arg1 < arg2 <= 1000000");
    if (!uniform && !(a2 >= 0 && a1 < 13))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "bad lognormal parameters");
    if (n > OBJECT_MAX_ELEMENTS) return h5ark_fail(err, H5ARK_BAD_REQUEST, "size is too large");
    int64_t seed = arg_int(ctx, "seed", -1);
    uint64_t state = seed >= 0 ? (uint64_t)seed * 0x9e3779b97f4a7c15u + 1
                               : (uint64_t)time(NULL) ^ (uint64_t)clock() << 20 ^ 0x5bd1e995u;
    if (!state) state = 1; /* xorshift's one fixed point */
    /* the least the strings can take (a NUL each, and arg1 bytes when uniform) must fit
     * --max-memory: an absurd size is refused before anything is drawn */
    uint64_t least = n * (uniform ? (uint64_t)a1 + 1 : 1);
    int rc = registry_reserve(least, err);
    if (rc == 0) registry_unreserve(least);
    /* one stream for every rank: rank 0's clock when no seed is given */
    if (ranks_agree(rc, err) || ranks_bcast(0, &state, sizeof state, err)) return -1;
    int L = locales_count(), first = locales_local_first();
    uint64_t lo = locales_block_start(n, L, first);
    uint64_t hi = locales_block_start(n, L, first + locales_local_count());
    random_rows r = {.offs = malloc((hi - lo ? hi - lo : 1) * sizeof *r.offs)};
    size_t nset = strlen(set);
    rc = r.offs ? grow(&r, 1 << 16, err) : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (uint64_t i = 0; rc == 0 && i < hi; i++) {
        double l;
        if (uniform) {
            l = floor(a1 + (double)(next_random(&state) >> 11) / 9007199254740992.0 * (a2 - a1));
        } else {
            double u1 = ((double)(next_random(&state) >> 11) + 1) / 9007199254740993.0;
            double u2 = (double)(next_random(&state) >> 11) / 9007199254740992.0;
            l = floor(exp(a1 + a2 * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2)));
            if (l > 1e6) l = 1e6;
        }
        uint64_t m = (uint64_t)l;
        if (i < lo) { /* another rank's: drawn, not kept */
            for (uint64_t k = 0; k < m; k++)
                next_random(&state);
            continue;
        }
        if ((rc = grow(&r, r.len + m + 1, err))) break;
        r.offs[i - lo] = (int64_t)r.len;
        for (uint64_t k = 0; k < m; k++)
            r.bytes[r.len++] = set[next_random(&state) % nset];
        r.bytes[r.len++] = '\0';
    }
    object *out = NULL;
    if (ranks_agree(rc, err) == 0) {
        strings_run run = {lo, hi - lo, r.bytes, r.len, r.offs, 0};
        out = strings_from_block(n, &run, 1, err);
    }
    free(r.bytes);
    free(r.offs);
    rc = out ? command_publish_all(ctx, &out, (const char *const[]){"object"}, 1,
                                   arg_str(ctx, "name", NULL), err)
             : -1;
    object_release(out);
    return rc;
}

const command_def strings_commands[] = {
    {"compare",
     cmd_compare,
     {{"strings", ARG_STR, true},
      {"op", ARG_STR, true},
      {"other", ARG_STR, false},
      {"text", ARG_TEXT, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"split",
     cmd_split,
     {{"strings", ARG_STR, true},
      {"pattern", ARG_TEXT, true},
      {"max", ARG_INT, false},
      {"segments", ARG_BOOL, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"random_strings",
     cmd_random_strings,
     {{"size", ARG_UINT, true},
      {"dist", ARG_STR, true},
      {"chars", ARG_STR, true},
      {"arg1", ARG_NUMBER, true},
      {"arg2", ARG_NUMBER, true},
      {"seed", ARG_INT, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {0},
};
