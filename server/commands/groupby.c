/* Grouping commands: groupby aggregate categorical. */
#include "commands.h"

#include "objects/categorical.h"
#include "objects/groupby.h"
#include "objects/strings.h"
#include "dist/ranks.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int publish_and_describe(command_ctx *ctx, object *obj, h5ark_error *err) {
    int rc = registry_publish(obj, arg_str(ctx, "name", NULL), err);
    int all = ranks_agree(rc, err); /* published on every rank or on none */
    if (all != 0 && rc == 0) registry_unpublish(obj);
    rc = all;
    if (rc == 0) rc = reply_set(ctx, "object", object_describe(obj), err);
    object_release(obj);
    return rc;
}

/* Look up the object named by argument `arg` (prefixing not_found with the argument). */
static object *get_arg_object(const char *cmd, const char *arg, const char *name,
                              h5ark_error *err) {
    object *obj = registry_get(name, err);
    if (!obj) h5ark_fail_context(err, "%s: argument '%s'", cmd, arg);
    return obj;
}

/* The groupby of `nkeys` keys and the grouping given as `permutation`, `segments` and
 * `unique_key_idx` (as a file or another system holds it): checked, not computed, so a key
 * need not be one h5ark sorts (a bigint). */
static object *groupby_given(command_ctx *ctx, object **keys, size_t nkeys, h5ark_error *err) {
    static const char *const parts[] = {"permutation", "segments", "unique_key_idx"};
    object *given[3] = {0}, *gb = NULL;
    int rc = 0;
    for (int i = 0; rc == 0 && i < 3; i++)
        if (!(given[i] = get_arg_object("groupby", parts[i], arg_str(ctx, parts[i], ""), err)))
            rc = -1;
    if (rc == 0 && !(gb = object_new_composite(H5ARK_GROUPBY, H5ARK_INT64, given[0]->size, err)))
        rc = -1;
    for (int i = 0; rc == 0 && i < 3; i++)
        rc = object_add_component(gb, parts[i], given[i], err);
    for (size_t k = 0; rc == 0 && k < nkeys; k++) {
        char cname[32];
        snprintf(cname, sizeof cname, "KEY_%zu", k);
        if (keys[k]->size != gb->size)
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST,
                            "groupby: keys[%zu] has %llu rows but 'permutation' has %llu", k,
                            (unsigned long long)keys[k]->size, (unsigned long long)gb->size);
        else
            rc = object_add_component(gb, cname, keys[k], err);
    }
    if (rc == 0) rc = object_set_extra(gb, "ngroups", h5ark_value_uint(given[1]->size), err);
    if (rc == 0) rc = groupby_check(gb, err);
    for (int i = 0; i < 3; i++)
        object_release(given[i]);
    if (rc) object_release(gb);
    return rc ? NULL : gb;
}

static int cmd_groupby(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *names = arg_value(ctx, "keys");
    size_t nkeys = h5ark_value_len(names);
    if (nkeys == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "groupby: 'keys' names no key");
    int ngiven =
        arg_has(ctx, "permutation") + arg_has(ctx, "segments") + arg_has(ctx, "unique_key_idx");
    if (ngiven != 0 && ngiven != 3)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "groupby: give all of 'permutation', 'segments' and 'unique_key_idx', "
                          "or none");
    object **keys = calloc(nkeys, sizeof *keys);
    if (!keys) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = -1;
    for (size_t k = 0; k < nkeys; k++) {
        char what[64];
        snprintf(what, sizeof what, "keys[%zu]", k);
        keys[k] = get_arg_object("groupby", what, h5ark_value_at(names, k)->as.s.ptr, err);
        if (!keys[k]) goto out;
        bool big = keys[k]->objtype == H5ARK_PDARRAY && keys[k]->dtype == H5ARK_BIGINT;
        if (!(ngiven && big) && groupby_check_key(keys[k], "groupby", err)) goto out;
        if (keys[k]->size != keys[0]->size) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "groupby: keys[%zu] ('%s') has %llu rows but keys[0] ('%s') has %llu", k,
                       h5ark_value_at(names, k)->as.s.ptr, (unsigned long long)keys[k]->size,
                       h5ark_value_at(names, 0)->as.s.ptr, (unsigned long long)keys[0]->size);
            goto out;
        }
    }
    object *gb = ngiven ? groupby_given(ctx, keys, nkeys, err) : groupby_make(keys, nkeys, err);
    if (gb) rc = publish_and_describe(ctx, gb, err);
out:
    for (size_t k = 0; k < nkeys; k++)
        object_release(keys[k]);
    free(keys);
    return rc;
}

static int cmd_aggregate(command_ctx *ctx, h5ark_error *err) {
    agg_op op;
    const char *opname = arg_str(ctx, "op", "");
    if (groupby_op_from_name(opname, &op))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "aggregate: unknown op '%s' (count sum min max mean first nunique)",
                          opname);
    object *gb = get_arg_object("aggregate", "groupby", arg_str(ctx, "groupby", ""), err);
    if (!gb) return -1;
    object *values = NULL, *result = NULL;
    h5ark_value *keys = NULL;
    int rc = -1;
    if (gb->objtype != H5ARK_GROUPBY) {
        h5ark_fail(err, H5ARK_TYPE_ERROR, "aggregate: 'groupby' ('%s') is a %s, not a groupby",
                   arg_str(ctx, "groupby", ""), h5ark_objtype_name(gb->objtype));
        goto out;
    }
    if (arg_has(ctx, "values") &&
        !(values = get_arg_object("aggregate", "values", arg_str(ctx, "values", ""), err)))
        goto out;
    if (groupby_check_values(op, values, err)) goto out;
    if (values && values->size != gb->size) {
        h5ark_fail(err, H5ARK_BAD_REQUEST,
                   "aggregate: 'values' ('%s') has %llu elements but the groupby has %llu rows",
                   arg_str(ctx, "values", ""), (unsigned long long)values->size,
                   (unsigned long long)gb->size);
        goto out;
    }
    if (groupby_check(gb, err)) goto out;
    /* the keys of each group, one object per key */
    const object *uik = object_component_get(gb, "unique_key_idx");
    if (!(keys = h5ark_value_array())) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    for (size_t k = 0;; k++) {
        char cname[32];
        snprintf(cname, sizeof cname, "KEY_%zu", k);
        const object *key = object_component_get(gb, cname);
        if (!key) break;
        if (groupby_check_key(key, "aggregate", err)) goto out;
        if (key->size != gb->size) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "aggregate: groupby '%s': %s has %llu rows, not %llu",
                       arg_str(ctx, "groupby", ""), cname, (unsigned long long)key->size,
                       (unsigned long long)gb->size);
            goto out;
        }
        object *u = groupby_take(key, uik, err);
        if (!u) goto out;
        int bad = registry_publish(u, NULL, err) || h5ark_value_push(keys, object_describe(u));
        object_release(u);
        if (bad) {
            if (err->code == H5ARK_OK) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
            goto out;
        }
    }
    result = groupby_aggregate(gb, op, values, err);
    int prc = result ? registry_publish(result, arg_str(ctx, "name", NULL), err) : -1;
    int all = ranks_agree(prc, err); /* published on every rank or on none */
    if (all != 0 && prc == 0) registry_unpublish(result);
    prc = all;
    if (prc) goto out;
    if (reply_set(ctx, "keys", keys, err)) {
        keys = NULL;
        goto out;
    }
    keys = NULL;
    rc = reply_set(ctx, "values", object_describe(result), err);
out:
    if (rc && keys) { /* unpublish the key objects made for a reply that fails */
        h5ark_error ignored;
        for (size_t i = 0; i < h5ark_value_len(keys); i++) {
            const h5ark_value *name = h5ark_value_get(h5ark_value_at(keys, i), "name");
            if (name) registry_remove(name->as.s.ptr, &ignored);
        }
    }
    h5ark_value_destroy(&keys);
    object_release(result);
    object_release(values);
    object_release(gb);
    return rc;
}

/* A categorical of codes and categories; the NA value is the category at `na_code` when
 * given, and `permutation` and `segments` (the grouping of the codes, as a file or another
 * system keeps it) are kept as components when given. */
static object *categorical_of_codes(command_ctx *ctx, object *codes, object *cats,
                                    const char *na_value, h5ark_error *err) {
    char *na_text = NULL;
    if (arg_has(ctx, "na_code")) {
        int64_t na = arg_int(ctx, "na_code", -1);
        if (na < 0 || (uint64_t)na >= cats->size) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "categorical: 'na_code' %lld is not a category index in [0, %llu)",
                       (long long)na, (unsigned long long)cats->size);
            return NULL;
        }
        if (!(na_text = strings_dup(cats, (uint64_t)na, NULL, err))) return NULL;
        na_value = na_text;
    }
    object *cat = categorical_from_codes(codes, cats, na_value, err);
    free(na_text);
    if (!cat || !arg_has(ctx, "permutation")) return cat;
    static const char *const parts[] = {"permutation", "segments"};
    for (int i = 0; i < 2; i++) {
        object *part = get_arg_object("categorical", parts[i], arg_str(ctx, parts[i], ""), err);
        int rc = !part ? -1
                 : part->objtype != H5ARK_PDARRAY || part->dtype != H5ARK_INT64
                     ? h5ark_fail(err, H5ARK_TYPE_ERROR,
                                  "categorical: '%s' must be an int64 pdarray", parts[i])
                 : i == 0 && part->size != codes->size
                     ? h5ark_fail(err, H5ARK_BAD_REQUEST,
                                  "categorical: 'permutation' has %llu elements, the codes %llu",
                                  (unsigned long long)part->size, (unsigned long long)codes->size)
                     : object_add_component(cat, parts[i], part, err);
        object_release(part);
        if (rc) {
            object_release(cat);
            return NULL;
        }
    }
    return cat;
}

static int cmd_categorical(command_ctx *ctx, h5ark_error *err) {
    const char *na_value = arg_str(ctx, "na_value", "N/A");
    bool keep_groups = arg_bool(ctx, "keep_groups", false);
    bool has_values = arg_has(ctx, "values"), has_codes = arg_has(ctx, "codes"),
         has_cats = arg_has(ctx, "categories");
    if (has_values && (has_codes || has_cats))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "categorical: give either 'values' or 'codes' and 'categories', not "
                          "both");
    if (!has_values && !(has_codes && has_cats))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "categorical: missing argument '%s'",
                          has_codes  ? "categories"
                          : has_cats ? "codes"
                                     : "values");
    if (keep_groups && !has_values)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "categorical: 'keep_groups' applies only when building from 'values'");
    bool has_perm = arg_has(ctx, "permutation"), has_segs = arg_has(ctx, "segments");
    if ((has_perm || has_segs || arg_has(ctx, "na_code")) && has_values)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "categorical: '%s' applies only when building from 'codes'",
                          has_perm   ? "permutation"
                          : has_segs ? "segments"
                                     : "na_code");
    if (has_perm != has_segs)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "categorical: give 'permutation' and 'segments' together");
    if (arg_has(ctx, "na_code") && arg_has(ctx, "na_value"))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "categorical: give 'na_code' or 'na_value', not both");
    object *cat = NULL;
    if (has_values) {
        const char *name = arg_str(ctx, "values", "");
        object *values = get_arg_object("categorical", "values", name, err);
        if (!values) return -1;
        if (values->objtype != H5ARK_STRINGS)
            h5ark_fail(err, H5ARK_TYPE_ERROR,
                       "categorical: 'values' ('%s') must be strings, not a %s", name,
                       h5ark_objtype_name(values->objtype));
        else
            cat = categorical_from_values(values, na_value, keep_groups, err);
        object_release(values);
    } else {
        const char *cname = arg_str(ctx, "codes", ""), *kname = arg_str(ctx, "categories", "");
        object *codes = get_arg_object("categorical", "codes", cname, err);
        object *cats = codes ? get_arg_object("categorical", "categories", kname, err) : NULL;
        if (cats) {
            if (codes->objtype != H5ARK_PDARRAY || codes->dtype != H5ARK_INT64)
                h5ark_fail(err, H5ARK_TYPE_ERROR,
                           "categorical: 'codes' ('%s') must be an int64 pdarray, not a %s of "
                           "dtype %s",
                           cname, h5ark_objtype_name(codes->objtype),
                           h5ark_dtype_name(codes->dtype));
            else if (cats->objtype != H5ARK_STRINGS)
                h5ark_fail(err, H5ARK_TYPE_ERROR,
                           "categorical: 'categories' ('%s') must be strings, not a %s", kname,
                           h5ark_objtype_name(cats->objtype));
            else
                cat = categorical_of_codes(ctx, codes, cats, na_value, err);
        }
        object_release(codes);
        object_release(cats);
    }
    return cat ? publish_and_describe(ctx, cat, err) : -1;
}

const command_def groupby_commands[] = {
    {"groupby",
     cmd_groupby,
     {{"keys", ARG_STR_ARRAY, true},
      {"permutation", ARG_STR, false},
      {"segments", ARG_STR, false},
      {"unique_key_idx", ARG_STR, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"aggregate",
     cmd_aggregate,
     {{"groupby", ARG_STR, true},
      {"op", ARG_STR, true},
      {"values", ARG_STR, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"categorical",
     cmd_categorical,
     {{"values", ARG_STR, false},
      {"codes", ARG_STR, false},
      {"categories", ARG_STR, false},
      {"na_value", ARG_STR, false},
      {"keep_groups", ARG_BOOL, false},
      {"na_code", ARG_INT, false},
      {"permutation", ARG_STR, false},
      {"segments", ARG_STR, false},
      {"name", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    {0},
};
