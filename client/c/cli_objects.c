/* h5ark, the command-line tool: commands on the daemon's objects (see cli.h). */
#include "cli.h"

#include <inttypes.h>

int cmd_ls(int argc, char **argv) {
    static const struct option opts[] = {
        {"recursive", no_argument, 0, 'r'}, {"help", no_argument, 0, 'h'}, {0}};
    bool recursive = false;
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (c == 'r') recursive = true;
    }
    if (argc - optind != 1) return usage_error("ls takes one FILE");
    const char *path = argv[optind];
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *result = NULL;
    int rc = h5ark_client_lshdf(cl, path, recursive, &result, &err);
    if (rc == 0) {
        const h5ark_value *entries = h5ark_value_get(result, "entries");
        /* ExeTera fields (one entry each) add what ExeTera says of them */
        bool fields = false;
        for (size_t i = 0; i < h5ark_value_len(entries) && !fields; i++) {
            const h5ark_value *k = h5ark_value_get(h5ark_value_at(entries, i), "kind");
            fields = k && k->kind == H5ARK_STR && strcmp(k->as.s.ptr, "field") == 0;
        }
        table t = {.ncols = fields ? 8 : 5,
                   .heads = {"NAME", "KIND", "OBJTYPE", "DTYPE", "SHAPE", "FIELDTYPE", "LENGTH",
                             "COMPLETED"}};
        for (size_t i = 0; i < h5ark_value_len(entries); i++) {
            const h5ark_value *e = h5ark_value_at(entries, i);
            const h5ark_value *p = h5ark_value_get(e, recursive ? "path" : "name");
            if (!p) p = h5ark_value_get(e, "name");
            char *row[8] = {value_text(p), field_text(e, "kind"), field_text(e, "objtype"),
                            field_text(e, "dtype"), field_text(e, "shape")};
            if (fields) {
                row[5] = field_text(e, "fieldtype");
                row[6] = field_text(e, "length");
                row[7] = field_text(e, "completed");
            }
            table_add(&t, row);
        }
        if (t.rows)
            table_print(&t);
        else
            printf("%s holds no groups or datasets\n", path);
        table_free(&t);
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_info(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *objects = NULL;
    int rc = h5ark_client_info(cl, (const char *const *)argv + optind, (size_t)(argc - optind),
                               &objects, &err);
    if (rc == 0) {
        table t;
        objects_table_init(&t, false);
        for (size_t i = 0; i < h5ark_value_len(objects); i++)
            objects_table_add(&t, NULL, h5ark_value_at(objects, i));
        if (t.rows)
            table_print(&t);
        else
            puts("no objects");
        table_free(&t);
    }
    h5ark_value_destroy(&objects);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_create(int argc, char **argv) {
    enum {
        O_DTYPE = 1000,
        O_SIZE,
        O_FILL,
        O_VALUE,
        O_START,
        O_STOP,
        O_STEP,
        O_LOW,
        O_HIGH,
        O_SEED
    };
    static const struct option opts[] = {{"dtype", required_argument, 0, O_DTYPE},
                                         {"size", required_argument, 0, O_SIZE},
                                         {"fill", required_argument, 0, O_FILL},
                                         {"value", required_argument, 0, O_VALUE},
                                         {"start", required_argument, 0, O_START},
                                         {"stop", required_argument, 0, O_STOP},
                                         {"step", required_argument, 0, O_STEP},
                                         {"low", required_argument, 0, O_LOW},
                                         {"high", required_argument, 0, O_HIGH},
                                         {"seed", required_argument, 0, O_SEED},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    h5ark_dtype dtype = H5ARK_FLOAT64;
    uint64_t size = H5ARK_SIZE_AUTO;
    h5ark_fill fill = {0};
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        int bad = 0;
        switch (c) {
        case O_DTYPE:
            if (!h5ark_dtype_from_name(optarg, &dtype) || dtype == H5ARK_STRING)
                return usage_error("--dtype is one of int8 int16 int32 int64 uint8 uint16 uint32 "
                                   "uint64 float32 float64 bool, not '%s'",
                                   optarg);
            break;
        case O_SIZE: bad = need_uint("--size", optarg, &size); break;
        case O_FILL: fill.fill = optarg; break;
        case O_VALUE: bad = need_number("--value", optarg, &fill.value); break;
        case O_START: bad = need_number("--start", optarg, &fill.start); break;
        case O_STOP: bad = need_number("--stop", optarg, &fill.stop); break;
        case O_STEP: bad = need_number("--step", optarg, &fill.step); break;
        case O_LOW: bad = need_number("--low", optarg, &fill.low); break;
        case O_HIGH: bad = need_number("--high", optarg, &fill.high); break;
        case O_SEED:
            bad = need_uint("--seed", optarg, &fill.seed);
            fill.has_seed = true;
            break;
        }
        if (bad) return bad;
    }
    if (argc - optind != 1) return usage_error("create takes one NAME");
    static const char *const fills[] = {"empty",  "zeros",    "ones",    "full",
                                        "arange", "linspace", "uniform", "randint"};
    bool known = !fill.fill;
    for (size_t i = 0; !known && i < sizeof fills / sizeof *fills; i++)
        known = strcmp(fill.fill, fills[i]) == 0;
    if (!known)
        return usage_error("--fill is one of empty zeros ones full arange linspace uniform "
                           "randint, not '%s'",
                           fill.fill);
    if (size == H5ARK_SIZE_AUTO && !(fill.fill && strcmp(fill.fill, "arange") == 0))
        return usage_error("create needs --size N (only --fill arange can do without)");
    if (fill.fill && strcmp(fill.fill, "full") == 0 && fill.value.kind == H5ARK_NUM_NONE)
        return usage_error("--fill full needs --value V");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *obj = NULL;
    progress_line line;
    progress_begin(&line, cl, "create");
    int rc = h5ark_client_create(cl, dtype, size, &fill, argv[optind], &obj, &err);
    progress_end(&line);
    if (rc == 0) {
        table t;
        objects_table_init(&t, false);
        objects_table_add(&t, NULL, obj);
        table_print(&t);
        table_free(&t);
    }
    h5ark_value_destroy(&obj);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_get(int argc, char **argv) {
    enum { O_START = 1000, O_STOP, O_MAX };
    static const struct option opts[] = {{"start", required_argument, 0, O_START},
                                         {"stop", required_argument, 0, O_STOP},
                                         {"max", required_argument, 0, O_MAX},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    uint64_t start = 0, stop = H5ARK_END, max = 100;
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        int bad = 0;
        if (c == O_START) bad = need_uint("--start", optarg, &start);
        if (c == O_STOP) {
            bad = need_uint("--stop", optarg, &stop);
            if (!bad && stop == H5ARK_END) bad = usage_error("--stop is too large");
        }
        if (c == O_MAX) bad = need_uint("--max", optarg, &max);
        if (bad) return bad;
    }
    if (argc - optind != 1) return usage_error("get takes one NAME");
    const char *name = argv[optind];
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    /* learn the size first so that --max bounds what is fetched, not only what is printed */
    h5ark_value *objects = NULL;
    int rc = h5ark_client_info(cl, &name, 1, &objects, &err);
    uint64_t size = 0, end = stop, more = 0;
    if (rc == 0) {
        h5ark_value_to_uint64(h5ark_value_get(h5ark_value_at(objects, 0), "size"), &size);
        if (end == H5ARK_END) end = size;
        if (start <= end && end <= size && max && end - start > max) {
            more = end - start - max;
            end = start + max;
        }
    }
    h5ark_value_destroy(&objects);
    h5ark_data d = {0};
    if (rc == 0) rc = h5ark_client_get(cl, name, start, end, &d, &err);
    if (rc == 0) {
        strbuf b = {0};
        for (uint64_t i = 0; i < d.count; i++) {
            print_element(&b, &d, i);
            puts(b.p);
        }
        free(b.p);
        if (more)
            printf("... %" PRIu64 " more (of %" PRIu64 "; use --max 0 to print all)\n", more, size);
    }
    h5ark_data_free(&d);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_delete(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    if (argc - optind < 1) return usage_error("delete takes one or more NAMEs");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *deleted = NULL;
    int rc = h5ark_client_delete(cl, (const char *const *)argv + optind, (size_t)(argc - optind),
                                 &deleted, &err);
    for (size_t i = 0; rc == 0 && i < h5ark_value_len(deleted); i++) {
        char *s = value_text(h5ark_value_at(deleted, i));
        printf("deleted %s\n", s);
        free(s);
    }
    h5ark_value_destroy(&deleted);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

/* Each part an unpacked descriptor names, as "PATH NAME" (PATH: the components down to it). */
static void print_parts(const h5ark_value *desc, const char *path) {
    const h5ark_value *comps = h5ark_value_get(desc, "components");
    const h5ark_value *objtype = h5ark_value_get(desc, "objtype");
    bool leaf =
        objtype && objtype->kind == H5ARK_STR &&
        (strcmp(objtype->as.s.ptr, "pdarray") == 0 || strcmp(objtype->as.s.ptr, "arrayview") == 0 ||
         strcmp(objtype->as.s.ptr, "strings") == 0);
    if (leaf || !comps) {
        char *name = value_text(h5ark_value_get(desc, "name"));
        printf("%s %s\n", path, name ? name : "?");
        free(name);
        return;
    }
    for (size_t i = 0; i < comps->as.m.len; i++) {
        char sub[1024];
        snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "/" : "", comps->as.m.keys[i]);
        print_parts(comps->as.m.vals[i], sub);
    }
}

int cmd_unpack(int argc, char **argv) {
    static const struct option opts[] = {
        {"keep", no_argument, 0, 'k'}, {"help", no_argument, 0, 'h'}, {0}};
    int status = -1, c;
    bool keep = false;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (c == 'k') keep = true;
    }
    if (argc - optind != 1) return usage_error("unpack takes one NAME");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *desc = NULL;
    int rc = h5ark_client_unpack(cl, argv[optind], keep, &desc, &err);
    if (rc == 0) print_parts(desc, "");
    h5ark_value_destroy(&desc);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

/* share / unshare NAME... --with SUBJECT...: prints "NAME SUBJECT,..." (the grants after) */
static int share_command(int argc, char **argv, bool share) {
    enum { O_WITH = 1000 };
    static const struct option opts[] = {
        {"with", required_argument, 0, O_WITH}, {"help", no_argument, 0, 'h'}, {0}};
    const char *with[64];
    size_t nwith = 0;
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (nwith == sizeof with / sizeof with[0]) return usage_error("at most 64 --with");
        with[nwith++] = optarg;
    }
    if (argc - optind < 1 || nwith == 0)
        return usage_error("%s takes one or more NAMEs and one or more --with", current_cmd);
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *grants = NULL;
    int rc = h5ark_client_share(cl, (const char *const *)argv + optind, (size_t)(argc - optind),
                                with, nwith, share, &grants, &err);
    for (size_t i = 0; rc == 0 && grants && i < grants->as.m.len; i++) {
        printf("%s", grants->as.m.keys[i]);
        const h5ark_value *list = grants->as.m.vals[i];
        for (size_t k = 0; k < h5ark_value_len(list); k++) {
            char *s = value_text(h5ark_value_at(list, k));
            printf("%s%s", k ? "," : " ", s ? s : "?");
            free(s);
        }
        printf("\n");
    }
    h5ark_value_destroy(&grants);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_share(int argc, char **argv) {
    return share_command(argc, argv, true);
}

int cmd_unshare(int argc, char **argv) {
    return share_command(argc, argv, false);
}
