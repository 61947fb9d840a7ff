/* Permissions on files (see acl.h). */
#include "acl.h"

#include "config.h"
#include "temp_names.h"
#include "io.h"
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const acl_perm_names[PERM_COUNT] = {"read",   "create",  "update",
                                                "delete", "readACL", "updateACL"};

#define ACL_FILE_MAX (1u << 20)

/* ---- one ACL's entries ---- */

static bool good_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 64) return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* A new entry for `subject` (a user, g:GROUP or default; none twice), every right false. */
static acl_entry *add_entry(acl *a, const char *subject, h5ark_error *err) {
    if (!subject)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "ACL entry %zu has no string 'subject'", a->n),
               NULL;
    bool group = strncmp(subject, "g:", 2) == 0;
    if (strcmp(subject, "default") != 0 && !good_name(group ? subject + 2 : subject))
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "ACL subject '%.80s' is neither a user, g:GROUP nor default", subject),
               NULL;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->entries[i].subject, subject) == 0)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "ACL subject '%s' appears twice", subject),
                   NULL;
    if (a->n >= ACL_ENTRIES_MAX)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "an ACL holds at most %d entries",
                          ACL_ENTRIES_MAX),
               NULL;
    acl_entry *grown = realloc(a->entries, (a->n + 1) * sizeof *grown);
    if (!grown) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory"), NULL;
    a->entries = grown;
    acl_entry *e = &a->entries[a->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->subject, sizeof e->subject, "%s", subject);
    return e;
}

static int set_right(acl_entry *e, const char *key, int value, h5ark_error *err) {
    if (strcmp(key, "subject") == 0) return 0;
    for (int p = 0; p < PERM_COUNT; p++)
        if (strcmp(key, acl_perm_names[p]) == 0) {
            if (value < 0)
                return h5ark_fail(err, H5ARK_BAD_REQUEST, "ACL entry '%s': '%s' is not a boolean",
                                  e->subject, key);
            e->allow[p] = value;
            return 0;
        }
    return h5ark_fail(err, H5ARK_BAD_REQUEST,
                      "ACL entry '%s': unknown key '%.80s' (subject, read, create, update, delete, "
                      "readACL, updateACL)",
                      e->subject, key);
}

void acl_free(acl *a) {
    free(a->entries);
    a->entries = NULL;
    a->n = 0;
}

int acl_parse_json(const char *text, size_t len, acl *out, h5ark_error *err) {
    *out = (acl){0};
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the ACL is not JSON: %s (line %d)", jerr.text,
                          jerr.line);
    int rc = json_is_array(root)
                 ? 0
                 : h5ark_fail(err, H5ARK_BAD_REQUEST, "an ACL is an array of entries");
    size_t i;
    json_t *item;
    json_array_foreach(root, i, item) {
        if (rc) break;
        if (!json_is_object(item)) {
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "ACL entry %zu is not an object", i);
            break;
        }
        acl_entry *e = add_entry(out, json_string_value(json_object_get(item, "subject")), err);
        const char *key;
        json_t *v;
        if (!e) rc = -1;
        json_object_foreach(item, key, v) {
            if (rc) break;
            rc = set_right(e, key, json_is_boolean(v) ? json_is_true(v) : -1, err);
        }
    }
    json_decref(root);
    if (rc) acl_free(out);
    return rc;
}

int acl_from_value(const h5ark_value *v, acl *out, h5ark_error *err) {
    *out = (acl){0};
    if (!v || v->kind != H5ARK_ARRAY)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'acl' is an array of entries");
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < v->as.a.len; i++) {
        const h5ark_value *item = v->as.a.items[i];
        if (item->kind != H5ARK_MAP) {
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "ACL entry %zu is not a map", i);
            break;
        }
        const h5ark_value *s = h5ark_value_get(item, "subject");
        acl_entry *e = add_entry(out, s && s->kind == H5ARK_STR ? s->as.s.ptr : NULL, err);
        if (!e) rc = -1;
        for (size_t k = 0; rc == 0 && k < item->as.m.len; k++) {
            const h5ark_value *b = item->as.m.vals[k];
            rc = set_right(e, item->as.m.keys[k], b->kind == H5ARK_BOOL ? b->as.b : -1, err);
        }
    }
    if (rc) acl_free(out);
    return rc;
}

h5ark_value *acl_to_value(const acl *a) {
    h5ark_value *list = h5ark_value_array();
    for (size_t i = 0; list && i < a->n; i++) {
        h5ark_value *m = h5ark_value_map();
        int rc = h5ark_value_set(m, "subject", h5ark_value_str(a->entries[i].subject));
        for (int p = 0; rc == 0 && p < PERM_COUNT; p++)
            rc = h5ark_value_set(m, acl_perm_names[p], h5ark_value_bool(a->entries[i].allow[p]));
        if (rc || h5ark_value_push(list, m)) {
            if (rc) h5ark_value_destroy(&m);
            h5ark_value_destroy(&list);
        }
    }
    return list;
}

static char *acl_to_json(const acl *a) {
    json_t *list = json_array();
    for (size_t i = 0; list && i < a->n; i++) {
        json_t *o = json_object();
        if (!o || json_array_append_new(list, o)) {
            json_decref(list);
            return NULL;
        }
        json_object_set_new(o, "subject", json_string(a->entries[i].subject));
        for (int p = 0; p < PERM_COUNT; p++)
            json_object_set_new(o, acl_perm_names[p], json_boolean(a->entries[i].allow[p]));
    }
    char *text = list ? json_dumps(list, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(list);
    return text;
}

/* ---- where a folder's ACL comes from ---- */

/* The defaults of where `dir` lies: home/<user>/ all six for its user; shared/<group>/
 * read, create, update, delete for its members and readACL for all; elsewhere read for
 * all (the rest is for admins). */
static int default_acl(const char *dir, acl *out, h5ark_error *err) {
    *out = (acl){0};
    char top[16], name[ACL_SUBJECT_MAX];
    const char *slash = strchr(dir, '/');
    size_t tl = slash ? (size_t)(slash - dir) : strlen(dir);
    size_t nl = slash ? strcspn(slash + 1, "/") : 0;
    if (tl < sizeof top && nl > 0 && nl <= 64) {
        memcpy(top, dir, tl);
        top[tl] = '\0';
        bool home = strcmp(top, "home") == 0, shared = strcmp(top, "shared") == 0;
        snprintf(name, sizeof name, "%s%.*s", shared ? "g:" : "", (int)nl, slash + 1);
        if (home || shared) {
            acl_entry *e = add_entry(out, name, err);
            if (!e) {
                acl_free(out);
                /* a folder no user or group could have: nobody but admins */
                return err->code == H5ARK_RESOURCE_LIMIT ? -1 : 0;
            }
            /* readACL "for all" includes the members, whose entry decides for them */
            for (int p = 0; p < PERM_COUNT; p++)
                e->allow[p] = home || p <= PERM_DELETE || p == PERM_READ_ACL;
            acl_entry *all = shared ? add_entry(out, "default", err) : NULL; /* moves e */
            if (shared && !all) return acl_free(out), -1;
            if (all) all->allow[PERM_READ_ACL] = true;
            return 0;
        }
    }
    acl_entry *e = add_entry(out, "default", err);
    if (!e) return -1;
    e->allow[PERM_READ] = true;
    return 0;
}

/* The ACL file of `dir`: 1 and out filled when there is one, 0 when not, -1 when it cannot
 * be read or parsed (the folder's files are then refused to all but admins). */
static int read_acl_file(const char *dir, acl *out, h5ark_error *err) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s%s%s/" ACL_FILE, config.data_dir, dir[0] ? "/" : "", dir) >=
        (int)sizeof path)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return 0;
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot read the ACL of '%s': %s", dir,
                          strerror(errno));
    }
    char *text = malloc(ACL_FILE_MAX);
    ssize_t n = text ? read(fd, text, ACL_FILE_MAX) : -1;
    close(fd);
    int rc = n < 0 ? h5ark_fail(err, H5ARK_IO_ERROR, "cannot read the ACL of '%s'", dir)
                   : acl_parse_json(text, (size_t)n, out, err);
    free(text);
    if (rc) return h5ark_fail_context(err, "the ACL of '/%s'", dir);
    return 1;
}

int acl_of_folder(const char *dir, acl *out, char *from, size_t fromlen, bool *is_default,
                  h5ark_error *err) {
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s", dir);
    for (;;) {
        int got = read_acl_file(d, out, err);
        if (got < 0) return -1;
        if (got) {
            snprintf(from, fromlen, "%s", d);
            *is_default = false;
            return 0;
        }
        if (!d[0]) break;
        char *slash = strrchr(d, '/');
        if (slash)
            *slash = '\0';
        else
            d[0] = '\0';
    }
    snprintf(from, fromlen, "%s", dir);
    *is_default = true;
    return default_acl(dir, out, err);
}

/* admin → the user's own entry → the union of the user's groups' entries → default →
 * refused. */
static bool decide(const acl *a, const file_access *fa, file_perm p) {
    if (fa->admin) return true;
    const acl_entry *fallback = NULL;
    bool grouped = false, any = false;
    for (size_t i = 0; i < a->n; i++) {
        const acl_entry *e = &a->entries[i];
        if (strcmp(e->subject, fa->user) == 0) return e->allow[p];
        if (strcmp(e->subject, "default") == 0) fallback = e;
        if (strncmp(e->subject, "g:", 2) != 0) continue;
        for (size_t g = 0; g < fa->ngroups; g++)
            if (strcmp(e->subject + 2, fa->groups[g]) == 0) {
                grouped = true;
                any = any || e->allow[p];
            }
    }
    if (grouped) return any;
    return fallback && fallback->allow[p];
}

int acl_allows(const file_access *fa, const char *dir, file_perm p, h5ark_error *err) {
    if (!file_access_on(fa) || fa->admin) return 1;
    acl a;
    char from[PATH_MAX];
    bool dflt;
    if (acl_of_folder(dir, &a, from, sizeof from, &dflt, err)) return -1;
    bool yes = decide(&a, fa, p);
    acl_free(&a);
    return yes;
}

/* ---- setacl ---- */

int acl_write(const char *abs_dir, const acl *a, const char *shown, h5ark_error *err) {
    char final[PATH_MAX], tmp[PATH_MAX];
    if (snprintf(final, sizeof final, "%s/" ACL_FILE, abs_dir) >= (int)sizeof final ||
        temp_name_for(final, tmp, sizeof tmp))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", shown);
    char *text = acl_to_json(a);
    if (!text) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps's NUL: a file ends with a newline */
    int fd = sysio.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int rc = fd < 0 || io_pwrite_full(fd, text, len + 1, 0) || sysio.fsync(fd) ? -1 : 0;
    int e = errno;
    free(text);
    if (fd >= 0 && sysio.close(fd) != 0 && rc == 0) rc = -1, e = errno;
    if (rc == 0 && sysio.rename(tmp, final) != 0) rc = -1, e = errno;
    if (rc) {
        unlink(tmp);
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot write the ACL of '%s': %s", shown,
                          strerror(e));
    }
    /* the rename is durable once the folder is */
    int dfd = sysio.open(abs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dfd < 0 || sysio.fsync(dfd) != 0) rc = -1, e = errno;
    if (dfd >= 0) sysio.close(dfd);
    if (rc)
        return h5ark_fail(err, H5ARK_IO_ERROR,
                          "the ACL of '%s' was replaced but its folder cannot be synced: %s", shown,
                          strerror(e));
    return 0;
}
