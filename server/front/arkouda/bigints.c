/* bigint commands of the Arkouda dialect: arange of bigint, get_max_bits and set_max_bits,
 * as Arkouda's client sends them for `ak.arange(..., dtype=bigint)` and `pdarray.max_bits`,
 * and bigint_to_uint_list / big_int_creation, which move limbs. A bigint here is a composite of
 * uint64 limbs (objects/bigint.h): its values are unsigned. */
#include "front/arkouda/commands.h"
#include "front/arkouda/values.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LIMBS = 64 }; /* 4096 bits: the most big_int_creation takes */

/* A non-negative decimal integer as little-endian limbs (*k of them, at least one). */
static int parse_big(const char *text, const char *key, uint64_t *limb, size_t *k,
                     h5ark_error *err) {
    *k = 1;
    limb[0] = 0;
    const char *p = text;
    if (*p == '+') p++;
    if (*p == '-')
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "argument '%s' is negative (%.40s): bigints here are unsigned", key,
                          text);
    if (!*p) return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' is empty", key);
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' is not an integer: '%.40s'",
                              key, text);
        unsigned __int128 carry = (unsigned)(*p - '0');
        for (size_t i = 0; i < *k; i++) {
            carry += (unsigned __int128)limb[i] * 10;
            limb[i] = (uint64_t)carry;
            carry >>= 64;
        }
        if (carry && *k == MAX_LIMBS)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' has more than %d bits", key,
                              MAX_LIMBS * 64);
        if (carry) limb[(*k)++] = (uint64_t)carry;
    }
    return 0;
}

/* out[0..k) = a + i * b, all little-endian limbs of k (the caller sizes k for the result). */
static void mul_add(const uint64_t *a, const uint64_t *b, uint64_t i, uint64_t *out, size_t k) {
    unsigned __int128 carry = 0;
    for (size_t j = 0; j < k; j++) {
        carry += (unsigned __int128)b[j] * i + a[j];
        out[j] = (uint64_t)carry;
        carry >>= 64;
    }
}

/* a < b, both of k limbs */
static bool less(const uint64_t *a, const uint64_t *b, size_t k) {
    for (size_t j = k; j-- > 0;)
        if (a[j] != b[j]) return a[j] < b[j];
    return false;
}

typedef struct {
    uint64_t start[MAX_LIMBS + 2], step[MAX_LIMBS + 2];
    size_t k; /* limbs of the result */
    darray *limb[MAX_LIMBS + 2];
} arange_job;

static void arange_locale(int b, void *arg) {
    arange_job *j = arg;
    uint64_t v[MAX_LIMBS + 2];
    const shard *s = &j->limb[0]->shards[b];
    for (uint64_t r = 0; r < s->count; r++) {
        mul_add(j->start, j->step, s->start + r, v, j->k);
        for (size_t q = 0; q < j->k; q++)
            ((uint64_t *)j->limb[q]->shards[b].data)[r] = v[q];
    }
}

int ak_bigint_arange(ak_ctx *ctx, h5ark_error *err) {
    const char *t_start, *t_stop, *t_step;
    if (ak_arg_str(ctx->in, "start", &t_start, err) || ak_arg_str(ctx->in, "stop", &t_stop, err) ||
        ak_arg_str(ctx->in, "step", &t_step, err))
        return -1;
    arange_job *j = calloc(1, sizeof *j);
    uint64_t stop[MAX_LIMBS + 2] = {0}, v[MAX_LIMBS + 2];
    size_t ka = 0, kb = 0, kc = 0;
    if (!j) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = parse_big(t_start, "start", j->start, &ka, err) ||
                     parse_big(t_stop, "stop", stop, &kb, err) ||
                     parse_big(t_step, "step", j->step, &kc, err)
                 ? -1
                 : 0;
    size_t k = ka > kb ? ka : kb;
    if (kc > k) k = kc;
    k += 2; /* start + i * step for i < 2^64 fits in two limbs more */
    if (rc == 0 && kc == 1 && j->step[0] == 0)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "step must not be 0");
    /* the length: the least n with start + n * step >= stop (a binary search) */
    uint64_t lo = 0, hi = OBJECT_MAX_ELEMENTS + 1;
    while (rc == 0 && lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        mul_add(j->start, j->step, mid, v, k);
        if (less(v, stop, k))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (rc == 0 && lo > OBJECT_MAX_ELEMENTS)
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "arange of bigint: too many elements");
    uint64_t n = lo;
    /* the limbs the largest value needs (at least one), as many as Arkouda would keep */
    if (rc == 0) {
        mul_add(j->start, j->step, n ? n - 1 : 0, v, k);
        while (k > 1 && v[k - 1] == 0)
            k--;
        j->k = k;
    }
    object *big = rc == 0 ? object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, n, err) : NULL;
    if (rc == 0 && !big) rc = -1;
    if (big) big->max_bits = -1;
    for (size_t q = 0; rc == 0 && q < k; q++) {
        object *limb = object_new_pdarray(H5ARK_UINT64, n, err);
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", q);
        rc = limb && object_add_component(big, name, limb, err) == 0 ? 0 : -1;
        if (limb) j->limb[q] = limb->values;
        object_release(limb);
    }
    rc = ranks_agree(rc, err); /* every rank made it, or none */
    if (rc == 0) locales_run(arange_locale, j);
    if (rc == 0) rc = ak_reply_created(ctx, big, err);
    object_release(big);
    free(j);
    return rc;
}

/* The bigint array named by argument `array`. */
static int bigint_arg(ak_ctx *ctx, ak_array *a, h5ark_error *err) {
    if (ak_array_arg(ctx, "array", true, a, err)) return -1;
    if (a->dtype == H5ARK_BIGINT) return 0;
    return h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not bigint", a->name,
                      h5ark_dtype_name(a->dtype));
}

/* get_max_bits<bigint,1> {array}: its max_bits (-1: unbounded), as JSON. */
static int cmd_get_max_bits(ak_ctx *ctx, h5ark_error *err) {
    ak_array a;
    if (bigint_arg(ctx, &a, err)) return -1;
    return ak_reply(ctx, err, "%lld", (long long)a.max_bits);
}

/* set_max_bits<bigint,1> {array, max_bits}: every value cut to its low max_bits bits (-1:
 * none), as Arkouda's server does in place; here a changed copy published under the
 * array's name (limbs wholly above max_bits left out, the others shared or masked). */
static int cmd_set_max_bits(ak_ctx *ctx, h5ark_error *err) {
    int64_t bits;
    ak_array a;
    if (ak_arg_int(ctx->in, "max_bits", &bits, err)) return -1;
    if (bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    if (bigint_arg(ctx, &a, err)) return -1;
    h5ark_value *args = h5ark_value_map();
    if (args && (h5ark_value_set(args, "array", h5ark_value_str(a.name)) ||
                 h5ark_value_set(args, "max_bits", h5ark_value_int(bits))))
        h5ark_value_destroy(&args);
    if (!args) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    dispatch_result res;
    int rc = ak_native(ctx, "limitbits", args, NULL, &res, err);
    h5ark_value_destroy(&args);
    if (rc) return -1;
    dispatch_result_free(&res);
    return ak_reply(ctx, err, "Sucessfully set max_bits");
}

/* Whether a uint64 array is all zeros (each rank looks at its own shards). */
static int all_zero(const darray *a, bool *zero, h5ark_error *err) {
    uint64_t nonzero = 0;
    for (int b = 0; b < a->nshards && !nonzero; b++) {
        const uint64_t *v = a->shards[b].data;
        for (uint64_t i = 0; locales_is_local(b) && i < a->shards[b].count && !nonzero; i++)
            nonzero = v[i] != 0;
    }
    if (ranks_allreduce_u64(&nonzero, 1, RANKS_MAX, err)) return -1;
    *zero = !nonzero;
    return 0;
}

/* bigint_to_uint_list<bigint,1> {array}: the limbs as new uint64 arrays, least significant
 * first and as many as the largest value needs (at least one), as Arkouda's server gives
 * them: a JSON list of their created texts (the client reverses it and downloads each). */
static int cmd_bigint_limbs(ak_ctx *ctx, h5ark_error *err) {
    if (ctx->in->nparams && ak_check_rank(ctx, err)) return -1; /* older clients send no template */
    object *a = ak_object_arg(ctx, "array", H5ARK_PDARRAY, err);
    if (!a) return -1;
    json_t *list = json_array(), *made = json_array();
    int rc = list && made ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && a->dtype != H5ARK_BIGINT)
        rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is %s, not bigint", a->name,
                        h5ark_dtype_name(a->dtype));
    rc = ranks_agree(rc, err); /* each step on every rank or none */
    size_t k = rc == 0 ? a->ncomponents : 0;
    char limb[32];
    for (; k > 1; k--) {
        snprintf(limb, sizeof limb, "Limb_%zu", k - 1);
        object *top = object_component_get(a, limb);
        bool zero = false;
        if (top && all_zero(top->values, &zero, err)) rc = -1;
        if (!top || !zero) break;
    }
    for (size_t i = 0; rc == 0 && i < k; i++) {
        snprintf(limb, sizeof limb, "Limb_%zu", i);
        object *src = object_component_get(a, limb);
        object *out = src ? elem_masked_u64(src, UINT64_MAX, err) : NULL;
        if (!src) h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s has no %s", a->name, limb);
        int published = out ? registry_publish(out, NULL, err) : -1;
        if (out) { /* on every rank or on none */
            int all = ranks_agree(published, err);
            if (all && published == 0) registry_remove(out->name, &(h5ark_error){0});
            published = all;
        }
        char *text = published == 0 ? ak_created(out) : NULL;
        if (published == 0) json_array_append_new(made, json_string(out->name));
        if (published == 0 && !text) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        rc = text && json_array_append_new(list, json_string(text)) == 0 ? 0 : -1;
        rc = ranks_agree(rc, err);
        free(text);
        object_release(out);
    }
    char *msg = rc == 0 ? json_dumps(list, JSON_COMPACT) : NULL;
    if (rc == 0 && !msg) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc) { /* all or none */
        size_t m;
        json_t *name;
        json_array_foreach(made, m, name)
            registry_remove(json_string_value(name), &(h5ark_error){0});
    } else {
        free(ctx->msg);
        ctx->msg = msg;
    }
    json_decref(list);
    json_decref(made);
    object_release(a);
    return rc;
}

/* big_int_creation<bigint,1> {num_arrays, shape, arrays, max_bits}: a bigint from uint64
 * arrays of one length given most significant first (the client's bigint_from_uint_arrays
 * and ak.array of Python ints), each copied into a limb, the values cut to max_bits (-1:
 * unbounded) as Arkouda's server cuts them. */
static int cmd_bigint_create(ak_ctx *ctx, h5ark_error *err) {
    int64_t max_bits = -1;
    if ((ctx->in->nparams && ak_check_rank(ctx, err)) ||
        (ak_arg(ctx->in, "max_bits") && ak_arg_int(ctx->in, "max_bits", &max_bits, err)))
        return -1;
    if (max_bits < -1) return h5ark_fail(err, H5ARK_BAD_REQUEST, "max_bits must be -1 or more");
    json_t *names = ak_arg_list(ctx->in, "arrays", err);
    if (!names) return -1;
    size_t k = json_array_size(names);
    object **parts = k && k <= 4096 ? calloc(k, sizeof *parts) : NULL;
    int rc = parts            ? 0
             : k && k <= 4096 ? h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory")
                              : h5ark_fail(err, H5ARK_BAD_REQUEST,
                                           "argument 'arrays' must name 1 to 4096 arrays");
    for (size_t i = 0; rc == 0 && i < k; i++) {
        const char *name = json_string_value(json_array_get(names, i));
        if (!name || !(parts[i] = registry_get(name, err)))
            rc = name ? -1 : h5ark_fail(err, H5ARK_BAD_REQUEST, "'arrays' must list names");
        else if (parts[i]->objtype != H5ARK_PDARRAY || parts[i]->dtype != H5ARK_UINT64)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR, "%s is not a uint64 pdarray", name);
        else if (parts[i]->size != parts[0]->size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%s has %llu elements, %s %llu", name,
                            (unsigned long long)parts[i]->size, parts[0]->name,
                            (unsigned long long)parts[0]->size);
    }
    /* every failure of one rank alone (out of memory) goes through an agreement before the
     * next collective: making `big`, and each limb */
    rc = ranks_agree(rc, err);
    object *big =
        rc == 0 ? object_new_composite(H5ARK_PDARRAY, H5ARK_BIGINT, parts[0]->size, err) : NULL;
    if (rc == 0 && !big) rc = -1;
    if (big) big->max_bits = max_bits;
    /* limb j from the j-th array from the end; limbs wholly above max_bits are left out */
    for (size_t j = 0; rc == 0 && j < k && (j == 0 || max_bits < 0 || (int64_t)j * 64 < max_bits);
         j++) {
        int64_t keep = max_bits < 0 ? 64 : max_bits - (int64_t)j * 64;
        uint64_t mask = keep >= 64 ? UINT64_MAX : (UINT64_C(1) << keep) - 1;
        object *limb = elem_masked_u64(parts[k - 1 - j], mask, err);
        char name[32];
        snprintf(name, sizeof name, "Limb_%zu", j);
        rc = limb && object_add_component(big, name, limb, err) == 0 ? 0 : -1;
        rc = ranks_agree(rc, err);
        object_release(limb);
    }
    if (rc == 0) rc = ak_reply_created(ctx, big, err);
    object_release(big);
    for (size_t i = 0; parts && i < k; i++)
        object_release(parts[i]);
    free(parts);
    json_decref(names);
    return rc;
}

const ak_command ak_bigint_commands[] = {
    {"get_max_bits", cmd_get_max_bits, AK_READ_ONLY, RANKS_ZERO},
    {"set_max_bits", cmd_set_max_bits, 0, RANKS_ZERO},
    {"bigint_to_uint_list", cmd_bigint_limbs, 0, RANKS_EVERY},
    {"big_int_creation", cmd_bigint_create, 0, RANKS_EVERY},
    {0},
};
