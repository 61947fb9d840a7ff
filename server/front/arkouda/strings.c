/* Strings commands of the Arkouda dialect, as its Strings and Categorical code sends them:
 * randomStrings segmentedIndex segmentedBinopvv segmentedBinopvs concatenateStr
 * segmentedSplit. New strings are made through the native put (ak_strings_from_buffer) at
 * one rank, and across ranks each rank's strings are placed in the block distribution
 * (strings_place); gathers go through groupby_take. */
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"
#include "commands/elements.h"
#include "locales.h"
#include "objects/groupby.h"
#include "objects/strings.h"
#include "dist/ranks.h"
#include "registry.h"
#include "sysio.h"

#include <math.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

static object *strings_arg(ak_ctx *ctx, const char *key, h5ark_error *err) {
    return ak_object_arg(ctx, key, H5ARK_STRINGS, err);
}

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* randomStrings {size, dist uniform|lognormal, chars, arg1, arg2, seed}: uniform lengths
 * in [arg1, arg2), or lognormal ones of log-mean arg1 and log-sd arg2. */
static int cmd_random_strings(ak_ctx *ctx, h5ark_error *err) {
    uint64_t n;
    const char *dist, *chars;
    double a1, a2;
    if (ak_arg_uint(ctx->in, "size", &n, err) || ak_arg_str(ctx->in, "dist", &dist, err) ||
        ak_arg_str(ctx->in, "chars", &chars, err) || ak_arg_double(ctx->in, "arg1", &a1, err) ||
        ak_arg_double(ctx->in, "arg2", &a2, err))
        return -1;
    static const struct {
        const char *name, *set;
    } sets[] = {{"uppercase", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
                {"lowercase", "abcdefghijklmnopqrstuvwxyz"},
                {"numeric", "0123456789"},
                {"alphabetic", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"},
                {"alphanumeric", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"},
                {"printable", " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"}};
    const char *set = NULL;
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (strcmp(sets[i].name, chars) == 0) set = sets[i].set;
    if (!set) return h5ark_fail(err, H5ARK_BAD_REQUEST, "unknown chars '%.40s'", chars);
    bool uniform = strcmp(dist, "uniform") == 0;
    if (!uniform && strcmp(dist, "lognormal") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "dist must be uniform or lognormal");
    if (uniform && !(a1 >= 0 && a2 > a1 && a2 <= 1e6))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "lengths must be 0 <= arg1 < arg2 <= 1000000");
    if (!uniform && !(a2 >= 0 && a1 < 13))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "bad lognormal parameters");
    const char *seedtext = ak_arg(ctx->in, "seed");
    int64_t seed = -1;
    if (seedtext && strcmp(seedtext, "None") != 0 && !ak_parse_int(seedtext, &seed))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'seed' must be an int64");
    uint64_t state = seed >= 0 ? (uint64_t)seed * 0x9e3779b97f4a7c15u + 1
                               : (uint64_t)time(NULL) ^ (uint64_t)clock() << 20 ^ 0x5bd1e995u;
    if (!state) state = 1; /* xorshift's one fixed point */
    size_t nset = strlen(set);
    /* the bytes are counted against --max-memory as they would be as an object */
    uint64_t cap = 1 << 16, len = 0;
    if (n > OBJECT_MAX_ELEMENTS) return h5ark_fail(err, H5ARK_BAD_REQUEST, "size is too large");
    /* the least the strings can take (a NUL each, and arg1 bytes when uniform) must fit
     * --max-memory: an absurd size is refused before anything is generated */
    uint64_t least = n * (uniform ? (uint64_t)a1 + 1 : 1);
    if (registry_reserve(least, err)) return -1;
    registry_unreserve(least);
    char *bytes = malloc(cap);
    if (!bytes) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
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
        if (len + m + 1 > cap) {
            uint64_t want = (len + m + 1) * 2;
            h5ark_error limit = {0};
            if (registry_reserve(want, &limit)) {
                free(bytes);
                *err = limit;
                return -1;
            }
            registry_unreserve(want);
            char *bigger = realloc(bytes, want);
            if (!bigger) {
                free(bytes);
                return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            }
            bytes = bigger;
            cap = want;
        }
        for (uint64_t k = 0; k < m; k++)
            bytes[len++] = set[next_random(&state) % nset];
        bytes[len++] = '\0';
    }
    return ak_strings_from_buffer(ctx, bytes, len, NULL, 0, err);
}

typedef struct {
    const object *a, *b; /* b NULL: compare with text */
    const char *text;
    size_t text_len;
    bool equal; /* == (else !=) */
    darray *out;
} cmp_job;

static void cmp_locale(int locale, void *arg) {
    cmp_job *j = arg;
    shard *o = &j->out->shards[locale];
    bool ranks = ranks_count() > 1; /* the operands laid out as the result (compare) */
    for (uint64_t k = 0; k < o->count; k++) {
        uint64_t i = o->start + k, la, lb = j->text_len;
        const char *sa =
            ranks ? elem_string_in_shard(j->a, locale, k, &la) : elem_string_at(j->a, i, &la);
        const char *sb = !j->b   ? j->text
                         : ranks ? elem_string_in_shard(j->b, locale, k, &lb)
                                 : elem_string_at(j->b, i, &lb);
        bool same = la == lb && memcmp(sa, sb, la) == 0;
        ((uint8_t *)o->data)[k] = same == j->equal;
    }
}

static int compare(ak_ctx *ctx, cmp_job *j, uint64_t n, h5ark_error *err) {
    const char *op;
    if (ak_arg_str(ctx->in, "op", &op, err)) return -1;
    if (strcmp(op, "==") != 0 && strcmp(op, "!=") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "strings compare with == and != only, not %.20s",
                          op);
    j->equal = op[0] == '=';
    if (!elem_block_layout(j->a->segments) || (j->b && !elem_block_layout(j->b->segments)))
        return ranks_not_yet(err, "comparing Strings that are not block distributed");
    object *out = object_new_pdarray(H5ARK_BOOLEAN, n, err);
    if (!out) return -1;
    j->out = out->values;
    locales_run(cmp_locale, j);
    int rc = ak_reply_created(ctx, out, err);
    object_release(out);
    return rc;
}

/* segmentedBinopvv {op, objType, obj, otherType, other, left, delim} */
static int cmd_binopvv(ak_ctx *ctx, h5ark_error *err) {
    object *a = strings_arg(ctx, "obj", err);
    object *b = a ? strings_arg(ctx, "other", err) : NULL;
    int rc = b ? 0 : -1;
    if (rc == 0 && a->size != b->size)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the Strings differ in size");
    cmp_job j = {.a = a, .b = b};
    if (rc == 0) rc = compare(ctx, &j, a->size, err);
    object_release(a);
    object_release(b);
    return rc;
}

/* segmentedBinopvs {op, objType, obj, otherType, other (the string)} */
static int cmd_binopvs(ak_ctx *ctx, h5ark_error *err) {
    const char *text;
    size_t text_len;
    if (ak_arg_bytes(ctx->in, "other", &text, &text_len, err)) return -1;
    object *a = strings_arg(ctx, "obj", err);
    if (!a) return -1;
    cmp_job j = {.a = a, .text = text, .text_len = text_len};
    int rc = compare(ctx, &j, a->size, err);
    object_release(a);
    return rc;
}

/* segmentedIndex {subcmd intIndex|sliceIndex|pdarrayIndex, objType, dtype, obj, key} */
static int cmd_index(ak_ctx *ctx, h5ark_error *err) {
    const char *sub, *key;
    if (ak_arg_str(ctx->in, "subcmd", &sub, err) || ak_arg_str(ctx->in, "key", &key, err))
        return -1;
    object *s = strings_arg(ctx, "obj", err);
    if (!s) return -1;
    int rc = 0;
    object *idx = NULL;
    if (strcmp(sub, "intIndex") == 0) {
        int64_t i;
        if (!ak_parse_int(key, &i)) {
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "argument 'key' must be an int64");
        } else {
            int64_t w = i < 0 ? i + (int64_t)s->size : i;
            if (w < 0 || (uint64_t)w >= s->size) {
                rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "index %lld is out of bounds for %llu",
                                (long long)i, (unsigned long long)s->size);
            } else {
                /* from the rank holding it, its length from the offsets (NULs are data) */
                uint64_t len;
                char *p = strings_dup(s, (uint64_t)w, &len, err);
                if (!p) {
                    object_release(s);
                    return -1;
                }
                json_t *str = json_stringn(p, len);
                free(p);
                char *text = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
                rc = text ? ak_reply(ctx, err, "item str %s", text)
                          : h5ark_fail(err, H5ARK_BAD_REQUEST, "string %lld is not UTF-8",
                                       (long long)i);
                free(text);
                json_decref(str);
            }
        }
        object_release(s);
        return rc;
    }
    if (strcmp(sub, "sliceIndex") == 0) {
        /* key: a JSON list [start, stop, stride] (strings or numbers) */
        json_t *list = json_loads(key, 0, NULL);
        int64_t v[3];
        bool ok = json_is_array(list) && json_array_size(list) == 3;
        for (size_t k = 0; ok && k < 3; k++) {
            json_t *e = json_array_get(list, k);
            ok = json_is_integer(e) ? (v[k] = json_integer_value(e), true)
                                    : ak_parse_int(json_string_value(e), &v[k]);
        }
        json_decref(list);
        int64_t size = (int64_t)s->size;
        uint64_t n = 0;
        if (!ok || v[2] == 0 || v[0] < -1 || v[0] > size || v[1] < -1 || v[1] > size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "'key' must be [start, stop, stride] within %lld", (long long)size);
        else if (v[2] > 0 && v[1] > v[0])
            n = (uint64_t)((v[1] - v[0] - 1) / v[2]) + 1;
        else if (v[2] < 0 && v[0] > v[1])
            n = (uint64_t)((v[0] - v[1] - 1) / -v[2]) + 1;
        if (rc == 0 && n &&
            (v[0] < 0 || v[0] >= size || v[0] + (int64_t)(n - 1) * v[2] < 0 ||
             v[0] + (int64_t)(n - 1) * v[2] >= size))
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the slice is outside the Strings");
        if (rc == 0 && (idx = object_new_pdarray(H5ARK_INT64, n, err)))
            for (int b = 0; b < idx->values->nshards; b++)
                for (uint64_t k = 0; locales_is_local(b) && k < idx->values->shards[b].count; k++)
                    ((int64_t *)idx->values->shards[b].data)[k] =
                        v[0] + (int64_t)(idx->values->shards[b].start + k) * v[2];
    } else if (strcmp(sub, "pdarrayIndex") == 0) {
        object *key_obj = registry_get(key, err);
        idx = key_obj ? elem_positions(key_obj, s->size, err) : NULL;
        object_release(key_obj);
        if (key_obj && ranks_call_seq() && ranks_agree(idx ? 0 : -1, err))
            object_release(idx), idx = NULL; /* the first bad position of all */
    } else {
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "unknown subcmd '%.40s'", sub);
    }
    if (rc == 0 && !idx) rc = -1;
    object *out = NULL;
    if (rc == 0 && !(out = groupby_take(s, idx, err))) rc = -1;
    if (rc == 0 && out) rc = ak_reply_created(ctx, out, err);
    object_release(out);
    object_release(idx);
    object_release(s);
    return rc;
}

/* Several ranks: this rank's shards of every part, in order, as runs of the result's rows,
 * placed in the block distribution over every rank's locales (strings_place). */
static int concatenate_ranks(ak_ctx *ctx, object *const *parts, size_t n, h5ark_error *err) {
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
    int rc = ranks_agree(
        runs ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", ranks_self()),
        err);
    if (rc == 0 && !(out = strings_place(at, runs, nruns, err))) rc = -1;
    free(runs);
    if (rc == 0) rc = ak_reply_created(ctx, out, err);
    object_release(out);
    return rc;
}

/* concatenateStr {objType Strings, names, mode}: the Strings end to end (interleave, which
 * Arkouda allows to reorder, is the same here). */
static int cmd_concatenate(ak_ctx *ctx, h5ark_error *err) {
    json_t *names = ak_arg_list(ctx->in, "names", err);
    if (!names) return -1;
    size_t n = json_array_size(names);
    object **parts = sysio.calloc(n ? n : 1, sizeof *parts);
    int rc = parts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    uint64_t total = 0;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        parts[k] = registry_get(json_string_value(json_array_get(names, k)), err);
        if (!parts[k])
            rc = -1;
        else if (parts[k]->objtype != H5ARK_STRINGS)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is not Strings", parts[k]->name);
        else
            total += parts[k]->values->size;
    }
    if (ranks_count() > 1) {
        /* a rank failing alone so far (out of memory) must not leave the others in the
         * collectives of the placing */
        if ((rc = ranks_agree(rc, err)) == 0) rc = concatenate_ranks(ctx, parts, n, err);
    } else {
        uint64_t count = 0;
        for (size_t k = 0; rc == 0 && k < n; k++)
            count += parts[k]->size;
        char *bytes = rc == 0 ? malloc(total ? total : 1) : NULL;
        int64_t *offs = rc == 0 ? malloc(count ? count * 8 : 1) : NULL;
        if (rc == 0 && (!bytes || !offs))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        /* the bytes end to end, and each part's offsets moved by the bytes before it */
        uint64_t at = 0, i = 0;
        for (size_t k = 0; rc == 0 && k < n; k++) {
            const darray *segs = parts[k]->segments, *vals = parts[k]->values;
            for (int b = 0; b < segs->nshards; b++)
                for (uint64_t q = 0; q < segs->shards[b].count; q++)
                    offs[i++] = (int64_t)at + ((const int64_t *)segs->shards[b].data)[q];
            for (int b = 0; b < vals->nshards; b++) {
                const shard *s = &vals->shards[b];
                if (s->count) memcpy(bytes + at, s->data, s->count); /* (empty: no data) */
                at += s->count;
            }
        }
        if (rc == 0) {
            rc = ak_strings_from_buffer(ctx, bytes, total, offs, count, err);
            bytes = NULL;
            offs = NULL;
        }
        free(bytes);
        free(offs);
    }
    for (size_t k = 0; parts && k < n; k++)
        object_release(parts[k]);
    free(parts);
    json_decref(names);
    return rc;
}

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
    object *segs;     /* NULL, or each string's first piece (counted within its locale here) */
    char *buf;        /* this rank's pieces: a locale's where its strings' bytes would lie */
    int64_t *starts;  /* NULL: count the pieces; else where each piece starts in its locale's */
    uint64_t base;    /* the values byte of this rank's first */
    uint64_t *made;   /* per local locale: pieces, then bytes */
    uint64_t *row0;   /* per local locale: its first piece's row of the whole */
    uint64_t *piece0; /* per local locale: its first piece's index in starts */
} split_job;

static void split_locale(int b, void *arg) {
    split_job *j = arg;
    int t = b - locales_local_first();
    const shard *val = &j->s->values->shards[b];
    char *out = j->starts ? j->buf + (val->start - j->base) : NULL;
    int64_t *starts = j->starts ? j->starts + j->piece0[t] : NULL;
    int64_t *first = j->segs ? j->segs->values->shards[b].data : NULL;
    uint64_t pieces = 0, at = 0;
    for (uint64_t k = 0; k < j->s->segments->shards[b].count; k++) {
        uint64_t n, w;
        const char *p = elem_string_in_shard(j->s, b, k, &n);
        if (first) first[k] = (int64_t)pieces;
        pieces += split_string(p, n, j->pattern, j->plen, j->max, out ? out + at : NULL,
                               starts ? starts + pieces : NULL, at, &w);
        at += w;
    }
    j->made[2 * t] = pieces;
    j->made[2 * t + 1] = at;
}

static void split_rebase(int b, void *arg) {
    split_job *j = arg;
    const shard *sh = &j->segs->values->shards[b];
    uint64_t add = j->row0[b - locales_local_first()];
    for (uint64_t k = 0; k < sh->count; k++)
        ((int64_t *)sh->data)[k] += (int64_t)add;
}

/* Several ranks: each rank's locales split their own strings into one buffer; the pieces'
 * rows are numbered across ranks (an allreduce of each rank's count) and placed in the
 * block distribution (strings_place); the first pieces' indexes stay with their
 * strings' rows. *made: the pieces, published. */
static int split_ranks(ak_ctx *ctx, split_job *j, object **made, h5ark_error *err) {
    const object *s = j->s;
    int R = ranks_count(), me = ranks_self(), T = locales_local_count();
    int first = locales_local_first();
    uint64_t reserved = 0, local = 0, *counts = sysio.calloc((size_t)R, sizeof *counts);
    for (int b = first; b < first + T; b++)
        local += s->values->shards[b].count;
    j->base = s->values->shards[first].start;
    j->made = sysio.calloc(2 * (size_t)T, sizeof *j->made);
    j->row0 = sysio.calloc((size_t)T, sizeof *j->row0);
    j->piece0 = sysio.calloc((size_t)T, sizeof *j->piece0);
    strings_run *runs = sysio.calloc((size_t)T, sizeof *runs);
    object *out = NULL;
    int rc = counts && j->made && j->row0 && j->piece0 && runs
                 ? 0
                 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "rank %d: out of memory", me);
    if (ranks_agree(rc, err)) goto fail;
    /* the pieces counted, then made with their starts (a piece's NULs are its data) */
    locales_run(split_locale, j);
    uint64_t npieces = 0;
    for (int t = 0; t < T; t++) {
        j->piece0[t] = npieces;
        npieces += j->made[2 * t];
    }
    /* a piece takes no more bytes than its string (the pattern is at least one byte) */
    if (registry_scratch_ranks(local, (void **)&j->buf, &reserved, err) ||
        registry_scratch_ranks(npieces * 8, (void **)&j->starts, &reserved, err))
        goto fail;
    locales_run(split_locale, j);
    for (int t = 0; t < T; t++)
        counts[me] += j->made[2 * t];
    if (ranks_allreduce_u64(counts, (size_t)R, RANKS_SUM, err)) goto fail;
    uint64_t total = 0, row = 0;
    for (int q = 0; q < R; q++) {
        if (q < me) row += counts[q];
        total += counts[q];
    }
    for (int t = 0; t < T; t++) {
        j->row0[t] = row;
        runs[t] = (strings_run){row,
                                j->made[2 * t],
                                j->buf + (s->values->shards[first + t].start - j->base),
                                j->made[2 * t + 1],
                                j->starts + j->piece0[t],
                                0};
        row += j->made[2 * t];
    }
    if (j->segs) locales_run(split_rebase, j);
    if (!(out = strings_place(total, runs, (size_t)T, err))) goto fail;
    free(j->buf); /* given back before the pieces are published */
    free(j->starts);
    j->buf = NULL;
    j->starts = NULL;
    rc = ak_reply_created(ctx, out, err);
    goto done;
fail:
    rc = -1;
done:
    free(counts);
    free(j->made);
    free(j->row0);
    free(j->piece0);
    free(j->buf);
    free(j->starts);
    free(runs);
    registry_unreserve(reserved);
    if (rc == 0)
        *made = out;
    else
        object_release(out);
    return rc;
}

/* One rank: the pieces one string after another into a growing buffer, made Strings through
 * the native put. */
static int split_one_rank(ak_ctx *ctx, split_job *j, h5ark_error *err) {
    const object *s = j->s;
    uint64_t len = 0, cap = 1 << 16, pieces = 0, pcap = 1 << 12;
    char *buf = malloc(cap);
    int64_t *starts = malloc(pcap * sizeof *starts);
    int rc = buf && starts ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    for (uint64_t i = 0; rc == 0 && i < s->size; i++) {
        uint64_t n, w;
        const char *p = elem_string_at(s, i, &n);
        if (j->segs) *(int64_t *)elem_at(j->segs->values, i) = (int64_t)pieces;
        if (len + n + 1 > cap) {
            uint64_t want = (len + n + 1) * 2;
            char *bigger = realloc(buf, want);
            if (!bigger) {
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
                break;
            }
            buf = bigger;
            cap = want;
        }
        if (pieces + n + 1 > pcap) {
            uint64_t want = (pieces + n + 1) * 2;
            int64_t *bigger = realloc(starts, want * sizeof *starts);
            if (!bigger) {
                rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
                break;
            }
            starts = bigger;
            pcap = want;
        }
        pieces +=
            split_string(p, n, j->pattern, j->plen, j->max, buf + len, starts + pieces, len, &w);
        len += w;
    }
    if (rc == 0) {
        rc = ak_strings_from_buffer(ctx, buf, len, starts, pieces, err);
        buf = NULL;
        starts = NULL;
    }
    free(buf);
    free(starts);
    return rc;
}

/* segmentedSplit {parent_name, objtype Matcher, max, return_segs, pattern}: each string
 * split at the pattern (at most `max` splits; 0: all), the pieces as new Strings and,
 * with return_segs, the index of each string's first piece. Literal patterns only:
 * regular expressions are refused. */
static int cmd_split(ak_ctx *ctx, h5ark_error *err) {
    const char *pattern;
    int64_t max = 0;
    bool segs_too = false;
    if (ak_arg_str(ctx->in, "pattern", &pattern, err) ||
        (ak_arg(ctx->in, "max") && ak_arg_int(ctx->in, "max", &max, err)) ||
        (ak_arg(ctx->in, "return_segs") && ak_arg_bool(ctx->in, "return_segs", &segs_too, err)))
        return -1;
    size_t plen = strlen(pattern);
    if (plen == 0 || pattern[strcspn(pattern, "\\.^$|?*+()[]{}")] != '\0')
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "only literal split patterns are served, not regular expressions "
                          "('%.60s')",
                          pattern);
    object *s = strings_arg(ctx, "parent_name", err);
    if (!s) return -1;
    bool ranks = ranks_count() > 1;
    int rc = 0;
    /* the first pieces' indexes are laid out as the strings' rows */
    if (ranks && segs_too && !elem_block_layout(s->segments))
        rc = ranks_not_yet(err, "splitting Strings that are not block distributed");
    object *segs = rc == 0 && segs_too ? object_new_pdarray(H5ARK_INT64, s->size, err) : NULL;
    if (rc == 0 && segs_too && !segs) rc = -1;
    split_job j = {.s = s, .pattern = pattern, .plen = plen, .max = max, .segs = segs};
    object *pieces = NULL;
    if (rc == 0) rc = ranks ? split_ranks(ctx, &j, &pieces, err) : split_one_rank(ctx, &j, err);
    /* at several ranks every rank has published the pieces, or none goes on (a reply's text
     * is made by each rank alone) */
    if (ranks && ranks_agree(rc, err) && rc == 0) {
        registry_remove(pieces->name, &(h5ark_error){0});
        rc = -1;
    }
    if (rc == 0 && segs_too) {
        char *made = ctx->msg, *both = NULL;
        ctx->msg = NULL;
        rc = ak_reply_created(ctx, segs, err);
        if (rc == 0 && asprintf(&both, "%s+%s", made, ctx->msg) < 0)
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        free(made);
        if (rc == 0) {
            free(ctx->msg);
            ctx->msg = both;
        }
        /* at several ranks nothing stays published when the indexes could not be */
        if (ranks && ranks_agree(rc, err)) {
            registry_remove(pieces->name, &(h5ark_error){0});
            if (segs->name) registry_remove(segs->name, &(h5ark_error){0});
            rc = -1;
        }
    }
    object_release(pieces);
    object_release(segs);
    object_release(s);
    return rc;
}

const ak_command ak_strings_commands[] = {
    {"segmentedSplit", cmd_split, 0, RANKS_EVERY},
    {"randomStrings", cmd_random_strings, 0, RANKS_ZERO},
    {"segmentedBinopvv", cmd_binopvv, 0, RANKS_EVERY},
    {"segmentedBinopvs", cmd_binopvs, 0, RANKS_EVERY},
    {"segmentedIndex", cmd_index, 0, RANKS_EVERY},
    {"concatenateStr", cmd_concatenate, 0, RANKS_EVERY},
    {0},
};
