/* Folders of the HSDS API (HSDS_API.md §3, §6): the directories of the data directory,
 * listed by GET /domains, made by PUT / {"folder": 1}, removed by DELETE / when empty. */
#include "storage/h5obj_int.h"

#include "storage/files.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int set(h5ark_value *m, const char *key, h5ark_value *v) {
    return v ? h5ark_value_set(m, key, v) : -1;
}

static int oom(h5ark_error *err) {
    return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

/* The folder's domain without its trailing '/' ("/" stays), and the path files.h takes for
 * it: with users from the data directory's root ("/home/a"), without relative to it. */
static int folder_path(const h5obj_args *a, char dir[PATH_MAX], const char **given,
                       h5ark_error *err) {
    if (h5obj_check_domain(a->domain, err)) return -1;
    size_t n = strlen(a->domain);
    while (n > 1 && a->domain[n - 1] == '/')
        n--;
    snprintf(dir, PATH_MAX, "%.*s", (int)n, a->domain);
    *given = file_access_on(a->fa) ? dir : dir + 1;
    return 0;
}

static void sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* One entry of a listing: {"name", "class", "owner", "created", "lastModified"}. */
static h5ark_value *entry_json(const h5obj_args *a, const char *shown, const char *abs,
                               bool folder) {
    struct stat st;
    double created = 0, modified = 0;
    if (stat(abs, &st) == 0) h5obj_times_of(abs, &st, &created, &modified);
    char creator[128];
    h5ark_value *m = h5ark_value_map();
    if (m && (set(m, "name", h5ark_value_str(shown)) ||
              set(m, "class", h5ark_value_str(folder ? "folder" : "domain")) ||
              set(m, "owner",
                  h5ark_value_str(h5obj_owner(a, folder ? NULL : abs, creator, sizeof creator))) ||
              set(m, "created", h5ark_value_float(created)) ||
              set(m, "lastModified", h5ark_value_float(modified))))
        h5ark_value_destroy(&m);
    return m;
}

int h5obj_folder_list(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    char dir[PATH_MAX], abs[PATH_MAX];
    const char *given;
    if (folder_path(a, dir, &given, err) || files_resolve_folder(a->fa, PERM_READ, given, abs, err))
        return -1;
    h5ark_value *entries = h5ark_value_array(), *list = h5ark_value_array();
    out->json = h5ark_value_map();
    int rc = entries && list && out->json ? 0 : oom(err);
    /* those the caller may read, by name, the daemon's own files left out */
    if (rc == 0) rc = files_list_folder(a->fa, abs, entries, err);
    bool past_marker = !a->marker;
    for (size_t i = 0; rc == 0 && i < h5ark_value_len(entries); i++) {
        const h5ark_value *e = h5ark_value_at(entries, i);
        const char *name = h5ark_value_get(e, "name")->as.s.ptr;
        bool folder = strcmp(h5ark_value_get(e, "kind")->as.s.ptr, "folder") == 0;
        char shown[PATH_MAX], path[PATH_MAX];
        if (snprintf(shown, sizeof shown, "%s/%s", strcmp(dir, "/") ? dir : "", name) >=
                (int)sizeof shown ||
            snprintf(path, sizeof path, "%s/%s", abs, name) >= (int)sizeof path)
            continue;
        if (!past_marker) { /* a page starts after the Marker, a domain's name */
            past_marker = strcmp(shown, a->marker) == 0;
            continue;
        }
        if (a->pattern && fnmatch(a->pattern, name, 0) != 0) continue;
        if (a->limit > 0 && (int64_t)h5ark_value_len(list) >= a->limit) break;
        h5ark_value *m = entry_json(a, shown, path, folder);
        if (!m || h5ark_value_push(list, m)) rc = oom(err);
    }
    h5ark_value_destroy(&entries);
    if (rc == 0 &&
        (set(out->json, "domains", list) || set(out->json, "hrefs", h5ark_value_array())))
        rc = oom(err);
    else if (rc == 0)
        return 0;
    h5ark_value_destroy(&list);
    return -1;
}

bool h5obj_is_folder(const h5obj_args *a) {
    char dir[PATH_MAX];
    const char *given;
    h5ark_error ignore = {0};
    return folder_path(a, dir, &given, &ignore) == 0 &&
           (a->domain[strlen(a->domain) - 1] == '/' || files_is_folder(a->fa, given));
}

int h5obj_folder_put(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    char dir[PATH_MAX], abs[PATH_MAX];
    const char *given;
    if (folder_path(a, dir, &given, err)) return -1;
    if (strcmp(dir, "/") == 0 || files_is_folder(a->fa, given))
        return h5ark_fail(err, H5ARK_ALREADY_EXISTS, "folder '%s' exists", dir);
    /* made in the folder above it, as a new file would be, missing parents made too */
    if (h5obj_resolve(&(h5obj_args){.domain = dir, .fa = a->fa}, PERM_CREATE, true, abs, err))
        return -1;
    if (mkdir(abs, 0755) != 0)
        return errno == EEXIST ? h5ark_fail(err, H5ARK_ALREADY_EXISTS, "domain '%s' exists", dir)
                               : h5ark_fail(err, H5ARK_IO_ERROR, "cannot make the folder '%s': %s",
                                            dir, strerror(errno));
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", abs);
    *strrchr(parent, '/') = '\0';
    sync_dir(parent);
    out->created = true;
    return h5obj_get_domain(a, out, err);
}

int h5obj_folder_delete(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    char dir[PATH_MAX], abs[PATH_MAX];
    const char *given;
    if (folder_path(a, dir, &given, err)) return -1;
    if (strcmp(dir, "/") == 0)
        return h5ark_fail(err, H5ARK_FORBIDDEN, "the data directory itself cannot be deleted");
    if (files_resolve_folder(a->fa, PERM_DELETE, given, abs, err)) return -1;
    if (rmdir(abs) != 0)
        return errno == ENOTEMPTY || errno == EEXIST
                   ? h5ark_fail(err, H5ARK_ALREADY_EXISTS, "folder '%s' is not empty", dir)
               : errno == ENOENT
                   ? h5ark_fail(err, H5ARK_NOT_FOUND, "folder '%s' not found", dir)
                   : h5ark_fail(err, H5ARK_IO_ERROR, "cannot remove the folder '%s': %s", dir,
                                strerror(errno));
    *strrchr(abs, '/') = '\0';
    sync_dir(abs);
    out->json = h5ark_value_map();
    return out->json ? 0 : oom(err);
}
