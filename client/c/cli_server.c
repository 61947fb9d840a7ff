/* h5ark, the command-line tool: commands about the daemon itself (ping, config, status,
 * checkpoints, users) (see cli.h). */
#include "cli.h"

#include <inttypes.h>
#include <math.h>

int cmd_ping(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *c = connect_client(&err);
    if (!c) return fail(&err);
    double rtt;
    int rc = h5ark_client_ping(c, &rtt, &err);
    if (rc == 0) printf("pong from %s in %.3f ms\n", h5ark_client_endpoint(c), rtt * 1000);
    h5ark_client_destroy(&c);
    return rc ? fail(&err) : 0;
}

int cmd_config(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *c = connect_client(&err);
    if (!c) return fail(&err);
    h5ark_value *conf = NULL;
    int rc = h5ark_client_getconfig(c, &conf, &err);
    if (rc == 0) {
        size_t w = 0;
        for (size_t i = 0; i < h5ark_value_len(conf); i++)
            if (strlen(conf->as.m.keys[i]) > w) w = strlen(conf->as.m.keys[i]);
        printf("%-*s  %s\n", (int)w, "endpoint", h5ark_client_endpoint(c));
        for (size_t i = 0; i < h5ark_value_len(conf); i++) {
            const char *key = conf->as.m.keys[i];
            const h5ark_value *v = conf->as.m.vals[i];
            char *text = value_text(v);
            uint64_t n;
            bool bytes = false;
            static const char *const byte_keys[] = {"max_memory", "memory_used", "shard_cache",
                                                    "memory_cached", "memory_resident"};
            for (size_t k = 0; k < sizeof byte_keys / sizeof byte_keys[0]; k++)
                bytes |= strcmp(key, byte_keys[k]) == 0;
            if (bytes && h5ark_value_to_uint64(v, &n)) {
                char *human = bytes_text(n);
                printf("%-*s  %s (%s)\n", (int)w, key, text, human);
                free(human);
            } else {
                printf("%-*s  %s\n", (int)w, key, text);
            }
            free(text);
        }
    }
    h5ark_value_destroy(&conf);
    h5ark_client_destroy(&c);
    return rc ? fail(&err) : 0;
}

/* A status entry's done or total, in its unit; "-" when it reports no measure. */
static char *measure_text(const h5ark_value *entry, const char *key) {
    const h5ark_value *unit = h5ark_value_get(entry, "unit");
    uint64_t n;
    if (!unit || unit->kind != H5ARK_STR || !h5ark_value_to_uint64(h5ark_value_get(entry, key), &n))
        return value_text(NULL);
    return amount_text(n, unit->as.s.ptr);
}

int cmd_status(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *c = connect_client(&err);
    if (!c) return fail(&err);
    h5ark_value *list = NULL;
    int rc = h5ark_client_status(c, NULL, &list, &err);
    if (rc == 0 && h5ark_value_len(list) == 0) puts("no requests in flight");
    if (rc == 0 && h5ark_value_len(list) > 0) {
        static const char *const heads[] = {"SEQ",     "ID",   "CLIENT", "PEER",   "CMD",
                                            "ELAPSED", "DONE", "TOTAL",  "PERCENT"};
        table t = {.ncols = sizeof heads / sizeof *heads};
        memcpy(t.heads, heads, sizeof heads);
        for (size_t i = 0; i < h5ark_value_len(list); i++) {
            const h5ark_value *e = h5ark_value_at(list, i);
            double elapsed = 0;
            uint64_t done, total;
            h5ark_value_to_double(h5ark_value_get(e, "elapsed"), &elapsed);
            strbuf el = {0}, pct = {0};
            sb_printf(&el, "%.1f s", elapsed);
            if (h5ark_value_to_uint64(h5ark_value_get(e, "done"), &done) &&
                h5ark_value_to_uint64(h5ark_value_get(e, "total"), &total) && total)
                sb_printf(&pct, "%.0f%%", floor(100.0 * (double)done / (double)total));
            else
                sb_puts(&pct, "-");
            char *row[] = {
                field_text(e, "seq"),    field_text(e, "id"),      field_text(e, "client"),
                field_text(e, "peer"),   field_text(e, "cmd"),     sb_take(&el),
                measure_text(e, "done"), measure_text(e, "total"), sb_take(&pct)};
            table_add(&t, row);
        }
        table_print(&t);
        table_free(&t);
    }
    h5ark_value_destroy(&list);
    h5ark_client_destroy(&c);
    return rc ? fail(&err) : 0;
}

/* checkpoint [--path P [--name N] [--mode M]] / load-checkpoint --path P --name N: prints
 * "ID OBJECTS objects BYTES bytes SECONDS s". */
static int checkpoint_command(int argc, char **argv, bool load) {
    enum { O_PATH = 1000, O_NAME, O_MODE };
    static const struct option opts[] = {{"path", required_argument, 0, O_PATH},
                                         {"name", required_argument, 0, O_NAME},
                                         {"mode", required_argument, 0, O_MODE},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *v[3] = {NULL, NULL, NULL};
    int status = string_options(argc, argv, opts, v);
    if (status >= 0) return status;
    const char *path = v[0], *name = v[1], *mode = v[2];
    if (argc - optind != 0) return usage_error("%s takes no NAME", current_cmd);
    if (load && (!path || !name || mode))
        return usage_error("load-checkpoint needs --path P and --name N");
    if (!path && (name || mode)) return usage_error("--name and --mode need --path");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *result = NULL;
    progress_line line;
    progress_begin(&line, cl, current_cmd);
    int rc = load ? h5ark_client_load_checkpoint(cl, path, name, &result, &err)
                  : h5ark_client_checkpoint(cl, path, name, mode, &result, &err);
    progress_done(&line, cl);
    if (rc == 0) {
        char *id = value_text(h5ark_value_get(result, "checkpoint"));
        uint64_t objects = 0, bytes = 0;
        double seconds = 0;
        h5ark_value_to_uint64(h5ark_value_get(result, "objects"), &objects);
        h5ark_value_to_uint64(h5ark_value_get(result, "bytes"), &bytes);
        h5ark_value_to_double(h5ark_value_get(result, "seconds"), &seconds);
        printf("%s %llu objects %llu bytes %.3f s\n", id ? id : "?", (unsigned long long)objects,
               (unsigned long long)bytes, seconds);
        free(id);
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_checkpoint(int argc, char **argv) {
    return checkpoint_command(argc, argv, false);
}

int cmd_load_checkpoint(int argc, char **argv) {
    return checkpoint_command(argc, argv, true);
}

int cmd_shutdown(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    int rc = h5ark_client_shutdown(cl, &err);
    if (rc == 0) printf("h5arkd at %s is stopping\n", h5ark_client_endpoint(cl));
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

int cmd_whoami(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *me = NULL;
    int rc = h5ark_client_whoami(cl, &me, &err);
    h5ark_client_destroy(&cl);
    if (rc) return fail(&err);
    static const char *const keys[] = {"user", "role", "groups"};
    for (size_t i = 0; i < 3; i++) {
        char *text = value_text(h5ark_value_get(me, keys[i]));
        printf("%-9s %s\n", keys[i], text ? text : "?");
        free(text);
    }
    /* each of usage and quota: what the user has of what they may have */
    static const char *const measures[] = {"memory", "disk", "objects", "requests"};
    const h5ark_value *usage = h5ark_value_get(me, "usage"),
                      *quotas = h5ark_value_get(me, "quotas");
    for (size_t i = 0; i < 4; i++) {
        char *used = value_text(h5ark_value_get(usage, measures[i]));
        const h5ark_value *q = h5ark_value_get(quotas, measures[i]);
        char *quota = q && q->kind != H5ARK_NIL ? value_text(q) : NULL;
        printf("%-9s %s%s%s%s\n", measures[i], used ? used : "?", quota ? " of " : " (no quota)",
               quota ? quota : "", quota && i < 2 ? " bytes" : "");
        free(used);
        free(quota);
    }
    h5ark_value_destroy(&me);
    return 0;
}

int cmd_reload(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *got = NULL;
    int rc = h5ark_client_reload(cl, &got, &err);
    h5ark_client_destroy(&cl);
    if (rc) return fail(&err);
    char *groups = value_text(h5ark_value_get(got, "groups"));
    uint64_t tokens = 0, users = 0;
    h5ark_value_to_uint64(h5ark_value_get(got, "tokens"), &tokens);
    h5ark_value_to_uint64(h5ark_value_get(got, "users"), &users);
    printf("token file read again: %" PRIu64 " token(s), %" PRIu64 " user(s), groups %s\n", tokens,
           users, groups ? groups : "?");
    free(groups);
    h5ark_value_destroy(&got);
    return 0;
}
