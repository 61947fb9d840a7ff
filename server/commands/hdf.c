/* HDF5 commands: tohdf readhdf lshdf repack writepart complete. Argument checks and publishing live
 * here; the file work is the storage layer's. */
#include "commands.h"

#include "access.h"
#include "dist/ranks.h"
#include "dist/spmd.h"
#include "registry.h"
#include "storage/commit.h"
#include "storage/files.h"
#include "storage/owners.h"
#include "storage/sandbox.h"
#include "storage/storage.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* tohdf in ExeTera's format. HDF5 is serial and ExeTera's fields are written row after row,
 * so the rank the objects are gathered to (rank 0) writes the file alone. */
static int exetera_write(command_ctx *ctx, const file_access *fa, storage_item *items, size_t n,
                         storage_mode mode, h5ark_value *files, h5ark_error *err) {
    object **whole = calloc(n ? n : 1, sizeof *whole), **own = calloc(n ? n : 1, sizeof *own);
    int rc = whole && own ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = ranks_agree(rc, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        own[i] = items[i].obj;
        rc = object_gather_whole(own[i], &whole[i], err);
        if (rc == 0 && whole[i]) items[i].obj = whole[i];
    }
    if (rc == 0 && n && whole[0])
        rc = storage_exetera_write(fa, items, n, arg_str(ctx, "path", ""),
                                   arg_str(ctx, "group", "df"), mode, files, ctx->warnings, err);
    /* the caller releases the registry's objects */
    for (size_t i = 0; whole && own && i < n; i++) {
        if (own[i]) items[i].obj = own[i];
        object_whole_free(whole[i]);
    }
    free(whole);
    free(own);
    return rc;
}

static int cmd_tohdf(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *names = arg_value(ctx, "names");
    const h5ark_value *datasets = arg_value(ctx, "datasets");
    size_t n = h5ark_value_len(names);
    if (n == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "tohdf: 'names' is empty");
    if (datasets && h5ark_value_len(datasets) != n)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: 'datasets' has %zu names but 'names' has %zu objects",
                          h5ark_value_len(datasets), n);
    const char *format = arg_str(ctx, "format", "arkouda");
    bool exetera = strcmp(format, "exetera") == 0;
    /* awkward objects are written in awkward 2's layout whatever the format says of the
     * others; naming it is allowed, awkward0's layout is not written yet */
    bool awkward0 = strcmp(format, "awkward0") == 0;
    bool awkward = awkward0 || strcmp(format, "awkward") == 0;
    if (!exetera && !awkward && strcmp(format, "arkouda") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: format must be arkouda, exetera, awkward or awkward0, not "
                          "'%.100s'",
                          format);
    int ak0_policy = 0;
    if (awkward0) { /* awkward0's own compression policies, not HDF5's */
        const char *c = arg_str(ctx, "compression", "default");
        ak0_policy = strcmp(c, "none") == 0      ? AK0_COMPRESS_NONE
                     : strcmp(c, "default") == 0 ? AK0_COMPRESS_DEFAULT
                     : strcmp(c, "all") == 0     ? AK0_COMPRESS_ALL
                                                 : 0;
        if (!ak0_policy)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "tohdf: format awkward0 takes compression default, all or none, "
                              "not '%.100s'",
                              c);
        if (arg_value(ctx, "compression_level"))
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "tohdf: compression_level does not apply to format awkward0");
    }
    if (exetera) {
        static const char *const arkouda_only[] = {"file_type", "dataframe_layout", "compression",
                                                   "compression_level"};
        for (size_t i = 0; i < sizeof arkouda_only / sizeof arkouda_only[0]; i++)
            if (arg_value(ctx, arkouda_only[i]))
                return h5ark_fail(err, H5ARK_BAD_REQUEST,
                                  "tohdf: format exetera writes one file of uncompressed fields; "
                                  "'%s' does not apply",
                                  arkouda_only[i]);
    } else if (arg_value(ctx, "group") || arg_value(ctx, "fieldtype") ||
               arg_value(ctx, "fieldtypes")) {
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: 'group', 'fieldtype' and 'fieldtypes' need format exetera");
    }
    const h5ark_value *fieldtypes = arg_value(ctx, "fieldtypes");
    if (fieldtypes && arg_value(ctx, "fieldtype"))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: give 'fieldtype' (for every object) or 'fieldtypes' (one per "
                          "name), not both");
    if (fieldtypes && h5ark_value_len(fieldtypes) != n)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: 'fieldtypes' has %zu entries for %zu names",
                          h5ark_value_len(fieldtypes), n);
    const char *mode_name = arg_str(ctx, "mode", "truncate");
    const char *type_name = arg_str(ctx, "file_type", "distribute");
    storage_mode mode;
    storage_file_type file_type;
    if (strcmp(mode_name, "truncate") == 0)
        mode = STORAGE_TRUNCATE;
    else if (strcmp(mode_name, "append") == 0)
        mode = STORAGE_APPEND;
    else if (strcmp(mode_name, "update") == 0)
        mode = STORAGE_UPDATE;
    else
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: mode must be truncate, append or update, not '%s'", mode_name);
    const char *layout = arg_str(ctx, "dataframe_layout", "group");
    file_access fa = access_here();
    storage_write_options wopts = {.access = &fa};
    if (strcmp(layout, "columns") == 0)
        wopts.dataframe_columns = true;
    else if (strcmp(layout, "group") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: dataframe_layout must be group or columns, not '%s'", layout);
    wopts.awkward0 = ak0_policy;
    /* false: top-level Strings as `values` alone (Arkouda's save_offsets False) */
    wopts.strings_without_segments = !arg_bool(ctx, "strings_segments", true);
    const char *compression = awkward0 ? "none" : arg_str(ctx, "compression", "none");
    bool gzip = strcmp(compression, "gzip") == 0;
    if (!gzip && strcmp(compression, "none") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: compression must be none or gzip, not '%s'", compression);
    if (!awkward0 && arg_value(ctx, "compression_level")) {
        int64_t level = arg_int(ctx, "compression_level", 0);
        if (!gzip)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "tohdf: compression_level needs compression gzip");
        if (level < 1 || level > 9)
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "tohdf: compression_level must be 1 to 9, not %lld",
                              (long long)level);
        wopts.gzip_level = (int)level;
    } else if (gzip) {
        wopts.gzip_level = 4; /* h5py's default */
    }
    if (strcmp(type_name, "distribute") == 0)
        file_type = STORAGE_DISTRIBUTE;
    else if (strcmp(type_name, "single") == 0)
        file_type = STORAGE_SINGLE;
    else
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: file_type must be distribute or single, not '%s'", type_name);

    storage_item *items = calloc(n, sizeof *items);
    if (!items) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = -1;
    size_t got = 0;
    for (; got < n; got++) {
        const char *name = h5ark_value_at(names, got)->as.s.ptr;
        items[got].obj = registry_get(name, err);
        if (!items[got].obj) goto out;
        items[got].dataset = datasets ? h5ark_value_at(datasets, got)->as.s.ptr : name;
        for (size_t k = 0; k < got; k++)
            if (strcmp(items[k].dataset, items[got].dataset) == 0) {
                h5ark_fail(err, H5ARK_ALREADY_EXISTS, "tohdf: dataset '%s' is named twice",
                           items[got].dataset);
                got++;
                goto out;
            }
    }
    /* an awkward array is written whole: without a file_type, objects that are all awkward
     * go to one file */
    bool all_awkward = true;
    for (size_t i = 0; i < n; i++)
        all_awkward &= items[i].obj->objtype == H5ARK_AWKWARD;
    if (all_awkward && !arg_value(ctx, "file_type")) file_type = STORAGE_SINGLE;
    if (awkward && !all_awkward) {
        h5ark_fail(err, H5ARK_BAD_REQUEST, "tohdf: format %s writes awkward objects only", format);
        goto out;
    }
    /* quota.disk before anything is written: the objects' bytes, less the caller's files
     * a truncate replaces */
    uint64_t need = 0;
    for (size_t i = 0; i < n; i++)
        need += object_nbytes(items[i].obj);
    if (command_disk_room_at(arg_str(ctx, "path", ""), need, mode == STORAGE_TRUNCATE, err))
        goto out;
    h5ark_value *files = h5ark_value_array();
    if (!files) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    if (exetera) {
        /* one fieldtype for every object, or one for each ("": the object's own) */
        const char *all = arg_str(ctx, "fieldtype", NULL);
        for (size_t i = 0; i < n; i++) {
            const char *ft = fieldtypes ? h5ark_value_at(fieldtypes, i)->as.s.ptr : all;
            items[i].fieldtype = ft && *ft ? ft : NULL;
        }
        rc = exetera_write(ctx, &fa, items, n, mode, files, err);
    } else
        rc = storage_write_ex(items, n, arg_str(ctx, "path", ""), mode, file_type, &wopts, files,
                              ctx->warnings, err);
    if (rc == 0)
        rc = reply_set(ctx, "files", files, err);
    else
        h5ark_value_destroy(&files);
out:
    for (size_t i = 0; i < got; i++)
        object_release(items[i].obj);
    free(items);
    return rc;
}

#define FILENAME_CODES "Filename_Codes"

/* The files a read names: rank 0 expands the patterns and every rank reads that list, so
 * that all read the same files in the same order whatever each rank's view of the
 * directory. */
typedef struct {
    const char *const *patterns;
    size_t npatterns;
    bool keep_missing;
    const file_access *fa;
} expansion;

static h5ark_value *expand(void *ctx, h5ark_error *err) {
    const expansion *x = ctx;
    char **paths = NULL;
    size_t count = 0;
    if (files_expand(x->fa, PERM_READ, x->patterns, x->npatterns, x->keep_missing, &paths, &count,
                     err))
        return NULL;
    h5ark_value *list = h5ark_value_array();
    for (size_t i = 0; list && i < count; i++)
        if (h5ark_value_push(list, h5ark_value_str(paths[i]))) h5ark_value_destroy(&list);
    files_list_free(paths, count);
    if (!list) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return list;
}

static int expand_shared(const file_access *fa, const char *const *patterns, size_t npatterns,
                         bool keep_missing, char ***paths, size_t *count, h5ark_error *err) {
    expansion x = {patterns, npatterns, keep_missing, fa};
    h5ark_value *list = NULL;
    *paths = NULL;
    *count = 0;
    if (ranks_on_root_value(expand, &x, &list, err)) return -1;
    size_t n = h5ark_value_len(list);
    int rc = (*paths = calloc(n ? n : 1, sizeof **paths)) ? 0 : -1;
    for (; rc == 0 && *count < n; ++*count)
        if (!((*paths)[*count] = strdup(h5ark_value_at(list, *count)->as.s.ptr))) rc = -1;
    h5ark_value_destroy(&list);
    if (rc) spmd_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    return ranks_agree(rc, err);
}

static int cmd_readhdf(command_ctx *ctx, h5ark_error *err) {
    const h5ark_value *paths = arg_value(ctx, "paths");
    const h5ark_value *datasets = arg_value(ctx, "datasets");
    size_t npaths = h5ark_value_len(paths), ndatasets = h5ark_value_len(datasets);
    if (npaths == 0) return h5ark_fail(err, H5ARK_BAD_REQUEST, "readhdf: 'paths' is empty");
    const char *order = arg_str(ctx, "byteorder", "<");
    if (strcmp(order, "<") != 0 && strcmp(order, ">") != 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "readhdf: 'byteorder' is \"%s\"; it is \"<\" (little-endian, the "
                          "default) or \">\" (big-endian awkward 2 buffers)",
                          order);
    const char **patterns = calloc(npaths, sizeof *patterns);
    const char **names = calloc(ndatasets ? ndatasets : 1, sizeof *names);
    char **files = NULL;
    size_t nfiles = 0, nitems = 0;
    storage_read_item *items = NULL;
    int rc = -1;
    bool locked = false;
    if (!patterns || !names) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < npaths; i++)
        patterns[i] = h5ark_value_at(paths, i)->as.s.ptr;
    for (size_t i = 0; i < ndatasets; i++)
        names[i] = h5ark_value_at(datasets, i)->as.s.ptr;
    bool allow_errors = arg_bool(ctx, "allow_errors", false);
    /* a file set is read as one write left it: no commit between the names and the bytes */
    commit_readers_enter();
    locked = true;
    file_access fa = access_here();
    if (expand_shared(&fa, patterns, npaths, allow_errors, &files, &nfiles, err)) goto out;
    storage_read_options opts = {
        .strict_types = arg_bool(ctx, "strict_types", true),
        .allow_errors = allow_errors,
        .calc_string_offsets = arg_bool(ctx, "calc_string_offsets", false),
        .tag_data = arg_bool(ctx, "tag_data", false),
        .ranged = arg_value(ctx, "start") || arg_value(ctx, "stop"),
        .start = arg_uint(ctx, "start", 0),
        .stop = arg_uint(ctx, "stop", UINT64_MAX),
        .ak0_whitelist = arg_value(ctx, "whitelist"),
        .awkward_big_endian = strcmp(order, ">") == 0,
    };
    h5ark_value *file_errors = h5ark_value_array();
    h5ark_value *objects = h5ark_value_map();
    h5ark_value *file_list = h5ark_value_array();
    if (!file_errors || !objects || !file_list) {
        h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        goto out_values;
    }
    for (size_t i = 0; i < nfiles; i++) {
        char shown[PATH_MAX];
        files_shown(&fa, files[i], shown, sizeof shown);
        h5ark_value_push(file_list, h5ark_value_str(shown));
    }
    int read_rc = storage_read(files, nfiles, ndatasets ? names : NULL, ndatasets, &opts, &items,
                               &nitems, file_errors, ctx->warnings, err);
    commit_readers_leave();
    locked = false;
    if (read_rc) goto out_values;
    /* tag_data: as Arkouda, one int64 array `Filename_Codes` of each row's file index (the
     * first object's rows; the objects of one read share their files) */
    object *codes = NULL;
    for (size_t i = 0; i < nitems; i++) {
        if (strcmp(items[i].dataset, FILENAME_CODES) == 0) {
            h5ark_fail(err, H5ARK_BAD_REQUEST,
                       "readhdf: a dataset is named '%s', which tag_data adds; read it without "
                       "tag_data",
                       FILENAME_CODES);
            goto out_values;
        }
        if (!codes) codes = items[i].file_tag;
    }
    /* publish all or nothing: a failure part-way unpublishes what went before */
    size_t published = 0;
    for (; published < nitems; published++) {
        storage_read_item *it = &items[published];
        if (registry_publish(it->obj, NULL, err)) break;
        h5ark_value_set(objects, it->dataset, object_describe(it->obj));
    }
    if (published == nitems && codes) {
        if (registry_publish(codes, NULL, err) == 0)
            h5ark_value_set(objects, FILENAME_CODES, object_describe(codes));
        else
            published--, registry_remove(items[published].obj->name, &(h5ark_error){0});
    }
    /* several ranks: published on every rank or on none */
    bool ok = published == nitems;
    if (ranks_agree(ok ? 0 : -1, err) != 0 && ok) {
        if (codes) registry_remove(codes->name, &(h5ark_error){0});
        for (size_t i = 0; i < nitems; i++)
            registry_remove(items[i].obj->name, &(h5ark_error){0});
        goto out_values;
    }
    if (published < nitems) {
        for (size_t i = 0; i < published; i++) {
            h5ark_error ignore;
            registry_remove(items[i].obj->name, &ignore);
        }
        goto out_values;
    }
    rc = reply_set(ctx, "objects", objects, err);
    objects = NULL;
    if (rc == 0) rc = reply_set(ctx, "file_errors", file_errors, err);
    file_errors = NULL;
    if (rc == 0) rc = reply_set(ctx, "files", file_list, err);
    file_list = NULL;
out_values:
    h5ark_value_destroy(&file_errors);
    h5ark_value_destroy(&objects);
    h5ark_value_destroy(&file_list);
out:
    if (locked) commit_readers_leave();
    storage_read_items_free(items, nitems);
    files_list_free(files, nfiles);
    free(patterns);
    free(names);
    return rc;
}

/* The HTTP gateway's read at several ranks, on a rank > 0: the rows rank 0 reads, this rank's
 * part of them read and sent to rank 0 (storage_read_rows), nothing kept. The path is
 * rank 0's, already resolved in the data directory. */
static int cmd_gateway_read(command_ctx *ctx, h5ark_error *err) {
    storage_read_item *items = NULL;
    size_t nitems = 0;
    object *whole = NULL;
    int rc = storage_read_rows(arg_str(ctx, "path", ""), arg_str(ctx, "dataset", ""),
                               arg_uint(ctx, "start", 0), arg_uint(ctx, "stop", 0), &items, &nitems,
                               &whole, err);
    object_whole_free(whole);
    storage_read_items_free(items, nitems);
    return rc;
}

/* lshdf {path, recursive}: a file's objects, or with users a folder's folders and files
 * (those the caller may read). */
static int cmd_lshdf(command_ctx *ctx, h5ark_error *err) {
    char abs[PATH_MAX];
    const char *given = arg_str(ctx, "path", "");
    file_access fa = access_here();
    h5ark_value *entries = h5ark_value_array();
    if (!entries) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    /* folders are listed when users are on (before them, a folder was refused) */
    if (file_access_on(&fa) && (files_is_folder(&fa, given) || files_names_home(&fa, given))) {
        int rc = files_is_folder(&fa, given) ? 0 : 1; /* a home not made yet: empty */
        if (rc == 0) rc = files_resolve_folder(&fa, PERM_READ, given, abs, err);
        if (rc == 0) rc = files_list_folder(&fa, abs, entries, err);
        if (rc < 0) {
            h5ark_value_destroy(&entries);
            return -1;
        }
        return reply_set(ctx, "entries", entries, err);
    }
    if (files_resolve(&fa, PERM_READ, given, false, abs, err)) {
        h5ark_value_destroy(&entries);
        return -1;
    }
    if (sandbox_list(abs, arg_bool(ctx, "recursive", false) ? LIST_TREE : LIST_TOP, entries, err)) {
        h5ark_value_destroy(&entries);
        return -1;
    }
    return reply_set(ctx, "entries", entries, err);
}

static int cmd_repack(command_ctx *ctx, h5ark_error *err) {
    const char *pattern = arg_str(ctx, "path", "");
    char **files = NULL;
    size_t nfiles = 0;
    file_access fa = access_here();
    if (files_expand(&fa, PERM_UPDATE, &pattern, 1, false, &files, &nfiles, err)) return -1;
    /* a repacked file takes the place of the old: the caller's own give their bytes back */
    const char *const *abs = (const char *const *)files;
    uint64_t own = owners_bytes_among(fa.user, abs, nfiles);
    h5ark_value *list = h5ark_value_array();
    uint64_t before = 0, after = 0;
    int rc = command_disk_room(own, abs, nfiles, err);
    if (rc == 0)
        rc = list ? storage_repack(&fa, files, nfiles, list, &before, &after, err)
                  : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    files_list_free(files, nfiles);
    if (rc) {
        h5ark_value_destroy(&list);
        return -1;
    }
    rc = reply_set(ctx, "files", list, err);
    if (rc == 0) rc = reply_set(ctx, "bytes_before", h5ark_value_uint(before), err);
    if (rc == 0) rc = reply_set(ctx, "bytes_after", h5ark_value_uint(after), err);
    return rc;
}

static int cmd_writepart(command_ctx *ctx, h5ark_error *err) {
    const char *name = arg_str(ctx, "name", "");
    object *obj = registry_get(name, err);
    if (!obj) return -1;
    int64_t rows = 0;
    const char *path = arg_str(ctx, "path", ""), *field = arg_str(ctx, "field", "");
    /* the rank the object is gathered to (rank 0) writes the part alone */
    object *whole = NULL;
    file_access fa = access_here();
    int rc = command_disk_room_at(path, object_nbytes(obj), false, err);
    if (rc == 0) rc = object_gather_whole(obj, &whole, err);
    if (rc == 0 && whole)
        rc = storage_exetera_part(&fa, path, field, whole, name, arg_str(ctx, "fieldtype", NULL),
                                  &rows, err);
    object_whole_free(whole);
    object_release(obj);
    if (rc == 0) rc = reply_set(ctx, "field", h5ark_value_str(field), err);
    if (rc == 0) rc = reply_set(ctx, "rows", h5ark_value_int(rows), err);
    return rc;
}

static int cmd_complete(command_ctx *ctx, h5ark_error *err) {
    int64_t rows = 0;
    const char *field = arg_str(ctx, "field", "");
    file_access fa = access_here();
    int rc = storage_exetera_complete(&fa, arg_str(ctx, "path", ""), field, &rows, err);
    if (rc == 0) rc = reply_set(ctx, "field", h5ark_value_str(field), err);
    if (rc == 0) rc = reply_set(ctx, "rows", h5ark_value_int(rows), err);
    return rc;
}

const command_def hdf_commands[] = {
    {"tohdf",
     cmd_tohdf,
     {{"names", ARG_STR_ARRAY, true},
      {"datasets", ARG_STR_ARRAY, false},
      {"path", ARG_STR, true},
      {"mode", ARG_STR, false},
      {"file_type", ARG_STR, false},
      {"dataframe_layout", ARG_STR, false},
      {"compression", ARG_STR, false},
      {"compression_level", ARG_INT, false},
      {"format", ARG_STR, false},
      {"group", ARG_STR, false},
      {"fieldtype", ARG_STR, false},
      {"fieldtypes", ARG_STR_ARRAY, false},
      {"strings_segments", ARG_BOOL, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"readhdf",
     cmd_readhdf,
     {{"paths", ARG_STR_ARRAY, true},
      {"datasets", ARG_STR_ARRAY, false},
      {"strict_types", ARG_BOOL, false},
      {"allow_errors", ARG_BOOL, false},
      {"calc_string_offsets", ARG_BOOL, false},
      {"whitelist", ARG_STR_ARRAYS, false},
      {"byteorder", ARG_STR, false},
      {"tag_data", ARG_BOOL, false},
      {"start", ARG_UINT, false},
      {"stop", ARG_UINT, false},
      {0}},
     .ranks = RANKS_EVERY},
    {"gateway_read",
     cmd_gateway_read,
     {{"path", ARG_STR, true},
      {"dataset", ARG_STR, true},
      {"start", ARG_UINT, true},
      {"stop", ARG_UINT, true},
      {0}},
     .read_only = true,
     .ranks = RANKS_EVERY,
     .internal = true},
    /* lshdf reads a file in a probe and no object: rank 0 alone */
    {"lshdf",
     cmd_lshdf,
     {{"path", ARG_STR, true}, {"recursive", ARG_BOOL, false}, {0}},
     .read_only = true,
     .ranks = RANKS_ZERO},
    /* repack rewrites files and touches no object: rank 0 alone, with its HDF5 */
    {"repack", cmd_repack, {{"path", ARG_STR, true}, {0}}, .ranks = RANKS_ZERO},
    {"writepart",
     cmd_writepart,
     {{"path", ARG_STR, true},
      {"field", ARG_STR, true},
      {"name", ARG_STR, true},
      {"fieldtype", ARG_STR, false},
      {0}},
     .ranks = RANKS_EVERY},
    /* complete marks a field in a file and touches no object: rank 0 alone */
    {"complete",
     cmd_complete,
     {{"path", ARG_STR, true}, {"field", ARG_STR, true}, {0}},
     .ranks = RANKS_ZERO},
    {0},
};
