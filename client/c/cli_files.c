/* h5ark, the command-line tool: commands on files (save, pack, load, ACLs, parts) (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>

/* Collects repeated --dataset options. */
typedef struct {
    const char **items;
    size_t count;
} str_list;

static void str_list_add(str_list *l, const char *s) {
    const char **items = realloc(l->items, (l->count + 1) * sizeof *items);
    if (!items) {
        fputs("h5ark: resource_limit: out of memory\n", stderr);
        exit(EXIT_FAILURE);
    }
    l->items = items;
    l->items[l->count++] = s;
}

int cmd_save(int argc, char **argv) {
    enum { O_PATH = 1000, O_DATASET, O_MODE, O_FILE_TYPE, O_COMPRESSION, O_LEVEL };
    static const struct option opts[] = {{"path", required_argument, 0, O_PATH},
                                         {"dataset", required_argument, 0, O_DATASET},
                                         {"mode", required_argument, 0, O_MODE},
                                         {"file-type", required_argument, 0, O_FILE_TYPE},
                                         {"compression", required_argument, 0, O_COMPRESSION},
                                         {"level", required_argument, 0, O_LEVEL},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *path = NULL, *mode = NULL, *file_type = NULL, *compression = NULL, *level = NULL;
    str_list datasets = {0};
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) goto out;
        if (c == O_PATH) path = optarg;
        if (c == O_DATASET) str_list_add(&datasets, optarg);
        if (c == O_MODE) mode = optarg;
        if (c == O_FILE_TYPE) file_type = optarg;
        if (c == O_COMPRESSION) compression = optarg;
        if (c == O_LEVEL) level = optarg;
    }
    size_t n = (size_t)(argc - optind);
    if (n == 0)
        status = usage_error("save takes one or more object NAMEs");
    else if (!path)
        status = usage_error("save needs --path P");
    else if (datasets.count && datasets.count != n)
        status =
            usage_error("give one --dataset per NAME (%zu names, %zu datasets)", n, datasets.count);
    else if (mode && strcmp(mode, "truncate") != 0 && strcmp(mode, "append") != 0 &&
             strcmp(mode, "update") != 0)
        status = usage_error("--mode is truncate, append or update, not '%s'", mode);
    else if (file_type && strcmp(file_type, "distribute") != 0 && strcmp(file_type, "single") != 0)
        status = usage_error("--file-type is distribute or single, not '%s'", file_type);
    else if (compression && strcmp(compression, "none") != 0 && strcmp(compression, "gzip") != 0)
        status = usage_error("--compression is none or gzip, not '%s'", compression);
    else if (level && (strlen(level) != 1 || level[0] < '1' || level[0] > '9'))
        status = usage_error("--level is 1 to 9, not '%s'", level);
    else if (level && (!compression || strcmp(compression, "gzip") != 0))
        status = usage_error("--level needs --compression gzip");
    if (status >= 0) goto out;

    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) {
        status = fail(&err);
        goto out;
    }
    h5ark_value *result = NULL;
    h5ark_tohdf_opts topts = {.mode = mode,
                              .file_type = file_type,
                              .compression = compression,
                              .compression_level = level ? level[0] - '0' : 0};
    progress_line line;
    progress_begin(&line, cl, "save");
    int rc = h5ark_client_tohdf_opts(cl, (const char *const *)argv + optind, n,
                                     datasets.count ? datasets.items : NULL, path, &topts, &result,
                                     &err);
    progress_done(&line, cl);
    if (rc == 0) {
        const h5ark_value *files = h5ark_value_get(result, "files");
        for (size_t i = 0; i < h5ark_value_len(files); i++) {
            char *f = value_text(h5ark_value_at(files, i));
            printf("wrote %s\n", f);
            free(f);
        }
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    status = rc ? fail(&err) : 0;
out:
    free(datasets.items);
    return status;
}

/* A schema file of this machine, whole (the daemon takes at most 1 MiB of YAML). */
static char *read_local(const char *path, h5ark_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        h5ark_fail(err, H5ARK_IO_ERROR, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = (1u << 20) + 2, n = 0;
    char *buf = malloc(cap);
    if (buf) n = fread(buf, 1, cap - 1, f);
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad || n >= cap - 1) {
        if (buf && !bad)
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "%s is larger than 1 MiB", path);
        else
            h5ark_fail(err, H5ARK_IO_ERROR, "cannot read %s", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

int cmd_pack(int argc, char **argv) {
    enum { O_DATA = 1000, O_EXPERIMENT, O_LIST, O_NAME };
    static const struct option opts[] = {{"data-schema", required_argument, 0, O_DATA},
                                         {"experiment-schema", required_argument, 0, O_EXPERIMENT},
                                         {"sample-list", required_argument, 0, O_LIST},
                                         {"name", required_argument, 0, O_NAME},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *data_path = NULL, *exp_path = NULL, *list = NULL, *name = NULL;
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (c == O_DATA) data_path = optarg;
        if (c == O_EXPERIMENT) exp_path = optarg;
        if (c == O_LIST) list = optarg;
        if (c == O_NAME) name = optarg;
    }
    size_t n = (size_t)(argc - optind);
    if (!data_path) return usage_error("pack takes --data-schema FILE");
    if ((n == 0) == !list)
        return usage_error("pack takes PATHs (file names or glob patterns) or --sample-list, "
                           "one of them");
    h5ark_error err;
    char *data = read_local(data_path, &err), *exp = NULL;
    if (!data || (exp_path && !(exp = read_local(exp_path, &err)))) {
        free(data);
        return fail(&err);
    }
    h5ark_client_t *cl = connect_client(&err);
    h5ark_value *result = NULL;
    int rc = cl ? h5ark_client_pack(cl, data, exp, (const char *const *)argv + optind, n, list,
                                    name, &result, &err)
                : -1;
    free(data);
    free(exp);
    if (cl) print_warnings(h5ark_client_warnings(cl));
    if (rc == 0) {
        char *samples = field_text(result, "samples");
        char *ids = field_text(h5ark_value_get(result, "sample_ids"), "name");
        printf("%s samples, their ids in %s\n", samples, ids);
        free(samples);
        free(ids);
        const h5ark_value *groups = h5ark_value_get(result, "groups");
        table t;
        objects_table_init(&t, true);
        t.heads[0] = "GROUP";
        for (size_t i = 0; groups && groups->kind == H5ARK_MAP && i < groups->as.m.len; i++)
            objects_table_add(&t, groups->as.m.keys[i], groups->as.m.vals[i]);
        table_print(&t);
        table_free(&t);
        putchar('\n');
        const h5ark_value *fields = h5ark_value_get(result, "fields");
        table f = {.ncols = 6, .heads = {"FIELD", "GROUP", "OFFSET", "LENGTH", "DIMS", "DTYPE"}};
        for (size_t i = 0; fields && fields->kind == H5ARK_MAP && i < fields->as.m.len; i++) {
            const h5ark_value *e = fields->as.m.vals[i];
            char *row[6] = {strdup(fields->as.m.keys[i]), field_text(e, "group"),
                            field_text(e, "offset"),      field_text(e, "length"),
                            field_text(e, "dims"),        field_text(e, "dtype")};
            table_add(&f, row);
        }
        table_print(&f);
        table_free(&f);
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_load(int argc, char **argv) {
    enum { O_DATASET = 1000, O_START, O_STOP };
    static const struct option opts[] = {{"dataset", required_argument, 0, O_DATASET},
                                         {"start", required_argument, 0, O_START},
                                         {"stop", required_argument, 0, O_STOP},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    str_list datasets = {0};
    h5ark_readhdf_opts ropts = {.strict_types = true, .stop = UINT64_MAX};
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) goto out;
        if (c == O_DATASET) str_list_add(&datasets, optarg);
        int bad = c == O_START  ? need_uint("--start", optarg, &ropts.start)
                  : c == O_STOP ? need_uint("--stop", optarg, &ropts.stop)
                                : 0;
        if (bad) {
            status = bad;
            goto out;
        }
        if (c == O_START || c == O_STOP) ropts.range = true;
    }
    size_t n = (size_t)(argc - optind);
    if (n == 0) {
        status = usage_error("load takes one or more PATHs (file names or glob patterns)");
        goto out;
    }
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) {
        status = fail(&err);
        goto out;
    }
    h5ark_value *result = NULL;
    progress_line line;
    progress_begin(&line, cl, "load");
    int rc = h5ark_client_readhdf(cl, (const char *const *)argv + optind, n, datasets.items,
                                  datasets.count, &ropts, &result, &err);
    progress_done(&line, cl);
    if (rc == 0) {
        const h5ark_value *errors = h5ark_value_get(result, "file_errors");
        for (size_t i = 0; i < h5ark_value_len(errors); i++) {
            char *e = value_text(h5ark_value_at(errors, i));
            fprintf(stderr, "h5ark: warning: %s\n", e);
            free(e);
        }
        const h5ark_value *objects = h5ark_value_get(result, "objects");
        table t;
        objects_table_init(&t, true);
        for (size_t i = 0; objects && objects->kind == H5ARK_MAP && i < objects->as.m.len; i++)
            objects_table_add(&t, objects->as.m.keys[i], objects->as.m.vals[i]);
        if (t.rows)
            table_print(&t);
        else
            puts("no objects loaded");
        table_free(&t);
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    status = rc ? fail(&err) : 0;
out:
    free(datasets.items);
    return status;
}

/* A JSON value as the wire's (--acl); NULL when out of memory. */
static h5ark_value *json_to_value(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        h5ark_value *m = h5ark_value_map();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            if (m && h5ark_value_set(m, k, json_to_value(v))) h5ark_value_destroy(&m);
        }
        return m;
    }
    case JSON_ARRAY: {
        h5ark_value *a = h5ark_value_array();
        for (size_t i = 0; a && i < json_array_size(j); i++)
            if (h5ark_value_push(a, json_to_value(json_array_get(j, i)))) h5ark_value_destroy(&a);
        return a;
    }
    case JSON_STRING: return h5ark_value_strn(json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return h5ark_value_int(json_integer_value(j));
    case JSON_REAL: return h5ark_value_float(json_real_value(j));
    case JSON_TRUE: return h5ark_value_bool(true);
    case JSON_FALSE: return h5ark_value_bool(false);
    default: return h5ark_value_nil();
    }
}

/* One line per entry: SUBJECT and the permissions it grants, comma-separated (- none). */
static void print_acl(const h5ark_value *acl) {
    static const char *const perms[] = {"read",   "create",  "update",
                                        "delete", "readACL", "updateACL"};
    for (size_t i = 0; i < h5ark_value_len(acl); i++) {
        const h5ark_value *e = h5ark_value_at(acl, i), *subject = h5ark_value_get(e, "subject");
        printf("%-16s ", subject && subject->kind == H5ARK_STR ? subject->as.s.ptr : "?");
        int n = 0;
        for (size_t k = 0; k < sizeof perms / sizeof *perms; k++) {
            const h5ark_value *v = h5ark_value_get(e, perms[k]);
            if (v && v->kind == H5ARK_BOOL && v->as.b) printf("%s%s", n++ ? "," : "", perms[k]);
        }
        printf("%s\n", n ? "" : "-");
    }
}

/* getacl PATH: "from FOLDER" (or "from (defaults)"), then the entries. */
int cmd_getacl(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    if (argc - optind != 1) return usage_error("getacl takes one PATH");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *res = NULL;
    int rc = h5ark_client_getacl(cl, argv[optind], &res, &err);
    h5ark_client_destroy(&cl);
    if (rc) return fail(&err);
    const h5ark_value *from = h5ark_value_get(res, "from");
    printf("%-16s %s\n", "from",
           from && from->kind == H5ARK_STR ? from->as.s.ptr : "(the defaults)");
    print_acl(h5ark_value_get(res, "acl"));
    h5ark_value_destroy(&res);
    return 0;
}

/* setacl PATH --acl JSON: prints the ACL as written, as getacl does. */
int cmd_setacl(int argc, char **argv) {
    static const struct option opts[] = {
        {"acl", required_argument, 0, 1000}, {"help", no_argument, 0, 'h'}, {0}};
    const char *text = NULL;
    int status = string_options(argc, argv, opts, &text);
    if (status >= 0) return status;
    if (argc - optind != 1 || !text) return usage_error("setacl takes one PATH and --acl JSON");
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j) return usage_error("--acl is not JSON: %s (column %d)", jerr.text, jerr.column);
    if (!json_is_array(j)) {
        json_decref(j);
        return usage_error("--acl is a JSON array of entries, [{\"subject\": ..., ...}]");
    }
    h5ark_value *acl = json_to_value(j), *written = NULL;
    json_decref(j);
    h5ark_error err;
    h5ark_client_t *cl = acl ? connect_client(&err) : NULL;
    if (!acl) h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = cl ? h5ark_client_setacl(cl, argv[optind], acl, &written, &err) : -1;
    h5ark_client_destroy(&cl);
    h5ark_value_destroy(&acl);
    if (rc) return fail(&err);
    print_acl(written);
    h5ark_value_destroy(&written);
    return 0;
}

/* writepart NAME / complete: a field of an ExeTera dataframe in parts; prints
 * "FIELD ROWS" (the field's rows after the request). */
static int field_command(int argc, char **argv, bool part) {
    enum { O_PATH = 1000, O_FIELD, O_FIELDTYPE };
    static const struct option opts[] = {{"path", required_argument, 0, O_PATH},
                                         {"field", required_argument, 0, O_FIELD},
                                         {"fieldtype", required_argument, 0, O_FIELDTYPE},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *v[3] = {NULL, NULL, NULL};
    int status = string_options(argc, argv, opts, v);
    if (status >= 0) return status;
    const char *path = v[0], *field = v[1], *fieldtype = v[2];
    int names = argc - optind;
    if (part && names != 1) return usage_error("writepart takes one object NAME");
    if (!part && names != 0) return usage_error("complete takes no NAME");
    if (!part && fieldtype) return usage_error("--fieldtype is for writepart");
    if (!path || !field) return usage_error("%s needs --path P and --field DF/F", current_cmd);
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *result = NULL;
    progress_line line;
    progress_begin(&line, cl, current_cmd);
    int rc = part ? h5ark_client_writepart(cl, path, field, argv[optind], fieldtype, &result, &err)
                  : h5ark_client_complete(cl, path, field, &result, &err);
    progress_done(&line, cl);
    int64_t rows = 0;
    if (rc == 0 && h5ark_value_to_int64(h5ark_value_get(result, "rows"), &rows))
        printf("%s %lld%s\n", field, (long long)rows, part ? "" : " completed");
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_writepart(int argc, char **argv) {
    return field_command(argc, argv, true);
}

int cmd_complete(int argc, char **argv) {
    return field_command(argc, argv, false);
}
