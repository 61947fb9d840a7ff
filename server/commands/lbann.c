/* pack: LBANN's HDF5 data reader done once, in parallel (docs/LBANN.md). Here the command:
 * its arguments, its schemas (lbann/'s), the run of its pipeline (pack.h) on every rank, and
 * what it publishes and replies. */
#include "commands.h"

#include "commands/pack.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "locales.h"
#include "objects/arrayview.h"
#include "registry.h"
#include "storage/twin.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int prefixed_name(const char *prefix, const char *what, char *out, size_t cap,
                         h5ark_error *err) {
    int n = snprintf(out, cap, "%s%s", prefix, what);
    if (n < 0 || (size_t)n >= cap) return h5ark_fail(err, H5ARK_BAD_REQUEST, "pack: name too long");
    for (char *p = out; *p; p++)
        if (*p == '/') *p = '.'; /* object names hold no '/' */
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

/* Every rank parses the schemas (they are in the request each rank has, and fields and
 * transforms are a function of them alone); rank 0 resolves the samples, every rank's
 * probes answer for its block of the files, rank 0 checks them all and shares the plan;
 * each rank's locales read and place the parts of rows in their own shards, from the files
 * in the shared data directory. */
static int cmd_pack(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *paths = arg_value(ctx, "paths");
    const char *list = arg_str(ctx, "sample_list", NULL);
    if (!paths == !list)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "pack: give the samples as 'paths' or as 'sample_list' (one of them)");
    const char *prefix = arg_str(ctx, "name", NULL);
    const h5ark_value *ds_arg = arg_value(ctx, "data_schema");
    const h5ark_value *es_arg = arg_value(ctx, "experiment_schema");
    bool listing = paths != NULL;
    uint64_t plan_reserved = 0; /* the plan, counted against --max-memory */
    h5ark_value *data = NULL, *exp = NULL;
    lbann_fields fields = {0};
    lbann_groups groups = {0};
    sample_set samples = {0};
    pack_job job = {0};
    object *ids = NULL, **views = NULL;
    pack_source source = {paths, list, &samples};
    pack_planning planning = {&fields, &groups, listing, &samples, &job};
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
    if (pack_share_samples(ranks_on_root(pack_resolve, &source, err), &samples, err) ||
        pack_collect_probes(pack_probe(&samples, &fields, listing, err), &samples, fields.n,
                            listing, err) ||
        pack_share_plan(ranks_on_root(pack_plan, &planning, err), &planning, &plan_reserved, err))
        goto out;
    for (size_t k = 0; k < fields.n; k++)
        if (job.plan[k].count > job.max_count) job.max_count = job.plan[k].count;
    /* every rank makes the objects (agreeing on the memory), then fills its own shards */
    for (size_t g = 0; g < groups.n; g++)
        if (!(job.arrays[g] = object_new_pdarray(job.plan[groups.v[g].members[0]].out,
                                                 samples.n * job.width[g], err)))
            goto out;
    if (!(ids = pack_ids_object(&samples, err))) goto out;
    job.fields = &fields;
    job.groups = &groups;
    job.samples = &samples;
    job.err_key = UINT64_MAX;
    pthread_mutex_init(&job.lock, NULL);
    locales_run(pack_read_locale, &job);
    pthread_mutex_destroy(&job.lock);
    twin_readers_leave();
    entered = false;
    /* the first failure of all in (sample, field) order, as one rank finds it */
    uint64_t first = job.err_key;
    if (ranks_allreduce_u64(&first, 1, RANKS_MIN, err)) goto out;
    if (first != UINT64_MAX) {
        if (job.err_key == first) *err = job.err;
        ranks_agree(job.err_key == first ? -1 : 0, err);
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
    pack_samples_free(&samples);
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
