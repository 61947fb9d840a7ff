/* Permissions on files as commands (SERVICE.md §3): getacl setacl; and quota.disk, which
 * every command that writes files checks before it writes (command_disk_room). Each runs
 * on rank 0, which sees the files as every rank does. */
#include "commands.h"

#include "access.h"
#include "config.h"
#include "dist/ranks.h"
#include "storage/acl.h"
#include "storage/files.h"
#include "storage/owners.h"
#include "users.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int need_users(const file_access *fa, const char *cmd, h5ark_error *err) {
    if (file_access_on(fa)) return 0;
    return h5ark_fail(err, H5ARK_BAD_REQUEST,
                      "%s: ACLs apply when the token file names users, and it names none", cmd);
}

/* The folder a path stands for: itself, or a file's folder; fa must have perm there. */
static int acl_folder(const file_access *fa, const char *given, file_perm perm, char abs[PATH_MAX],
                      h5ark_error *err) {
    if (files_is_folder(fa, given)) return files_resolve_folder(fa, perm, given, abs, err);
    if (files_resolve(fa, perm, given, false, abs, err)) return -1;
    *strrchr(abs, '/') = '\0';
    return 0;
}

/* The home of a user of the token file that `given` names and that is not made yet (a
 * home is made on its user's first write there): its folder, relative to the data
 * directory, in rel; its ACL is then the defaults of a home (SERVICE.md §3). */
static bool unmade_home(const file_access *fa, const char *given, char rel[PATH_MAX]) {
    char abs[PATH_MAX];
    struct stat st;
    if (files_absolute(fa, given, abs, &(h5ark_error){0}) || lstat(abs, &st) == 0 ||
        errno != ENOENT)
        return false;
    const char *r = files_folder_rel(abs);
    if (strncmp(r, "home/", 5) != 0 || strchr(r + 5, '/')) return false;
    users_table *t = users_acquire();
    bool user = users_find(t, r + 5) != NULL;
    users_release(t);
    return user && snprintf(rel, PATH_MAX, "%s", r) < PATH_MAX;
}

/* rel (relative to the data directory) is the folder whose ACL `given` asks for, with
 * readACL there. */
static int read_acl_folder(const file_access *fa, const char *given, char rel[PATH_MAX],
                           h5ark_error *err) {
    char abs[PATH_MAX];
    if (!unmade_home(fa, given, rel)) {
        if (acl_folder(fa, given, PERM_READ_ACL, abs, err)) return -1;
        snprintf(rel, PATH_MAX, "%s", files_folder_rel(abs));
        return 0;
    }
    int may = acl_allows(fa, rel, PERM_READ_ACL, err);
    if (may < 0) return -1;
    return may ? 0 : h5ark_fail(err, H5ARK_FORBIDDEN, "no readACL permission on '%s'", given);
}

/* getacl {path}: {path, acl, from, default}: the ACL that governs the folder (or a file's
 * folder), the folder whose `.h5ark-acl` it is (as the caller names it; nil for the
 * defaults), and whether it is the defaults. Needs readACL. */
static int cmd_getacl(command_ctx *ctx, h5ark_error *err) {
    file_access fa = access_here();
    const char *given = arg_str(ctx, "path", "");
    char rel[PATH_MAX], from[PATH_MAX], shown[PATH_MAX + 1], fabs[PATH_MAX];
    acl a;
    bool dflt;
    if (need_users(&fa, "getacl", err) || read_acl_folder(&fa, given, rel, err) ||
        acl_of_folder(rel, &a, from, sizeof from, &dflt, err))
        return -1;
    h5ark_value *list = acl_to_value(&a);
    acl_free(&a);
    files_absolute(&(file_access){0}, from, fabs, &(h5ark_error){0});
    files_shown(&fa, fabs, shown, sizeof shown);
    int rc = list ? reply_set(ctx, "acl", list, err)
                  : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) rc = reply_set(ctx, "path", h5ark_value_str(given), err);
    if (rc == 0)
        rc = reply_set(ctx, "from", dflt ? h5ark_value_nil() : h5ark_value_str(shown), err);
    if (rc == 0) rc = reply_set(ctx, "default", h5ark_value_bool(dflt), err);
    return rc;
}

/* setacl {path, acl}: the folder's `.h5ark-acl` replaced, atomically (acl.h); needs
 * updateACL. The caller's home is made when it is not there yet. */
static int cmd_setacl(command_ctx *ctx, h5ark_error *err) {
    file_access fa = access_here();
    const char *given = arg_str(ctx, "path", "");
    char abs[PATH_MAX];
    acl a;
    struct stat st;
    if (need_users(&fa, "setacl", err) ||
        (files_names_home(&fa, given) && files_make_home(&fa, err)) ||
        files_absolute(&fa, given, abs, err))
        return -1;
    if (!files_is_folder(&fa, given))
        return h5ark_fail(err, stat(abs, &st) == 0 ? H5ARK_BAD_REQUEST : H5ARK_NOT_FOUND,
                          "setacl: '%s' is not a folder", given);
    if (files_resolve_folder(&fa, PERM_UPDATE_ACL, given, abs, err) ||
        acl_from_value(arg_value(ctx, "acl"), &a, err))
        return -1;
    int rc = acl_write(abs, &a, given, err);
    h5ark_value *list = rc == 0 ? acl_to_value(&a) : NULL;
    acl_free(&a);
    if (rc) return -1;
    if (!list) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    rc = reply_set(ctx, "acl", list, err);
    if (rc == 0) rc = reply_set(ctx, "path", h5ark_value_str(given), err);
    return rc;
}

/* ---- quota.disk ---- */

typedef struct {
    const file_access *fa;
    int64_t quota;
    uint64_t need;
    const char *const *replaced;
    size_t nreplaced;
    const char *path; /* not NULL: the files replaced are path and its distributed set */
} disk_room;

static int room_on_root(void *ctx, h5ark_error *err) {
    const disk_room *r = ctx;
    if (!file_access_on(r->fa) || r->quota < 0) return 0;
    char **set = NULL, pattern[PATH_MAX];
    size_t nset = 0, tail;
    const char *patterns[] = {pattern, r->path};
    if (r->path && files_locale_glob(r->path, pattern, sizeof pattern, &tail) == 0 &&
        files_expand(r->fa, PERM_WRITE, patterns, 2, true, &set, &nset, err))
        return -1;
    uint64_t usage = files_disk_usage_of(r->fa->user);
    uint64_t given_back = set ? owners_bytes_among(r->fa->user, (const char *const *)set, nset)
                              : owners_bytes_among(r->fa->user, r->replaced, r->nreplaced);
    files_list_free(set, nset);
    return owners_quota_check(r->fa->user, r->quota, usage, r->need, given_back, err);
}

static int room(uint64_t need, const char *const *replaced, size_t nreplaced, const char *path,
                h5ark_error *err) {
    const caller *who = entry_caller();
    file_access fa = access_of(who);
    disk_room r = {&fa, who && who->user ? who->user->quota.disk : -1, need, replaced, nreplaced,
                   path};
    return ranks_on_root(room_on_root, &r, err);
}

int command_disk_room(uint64_t need, const char *const *replaced, size_t nreplaced,
                      h5ark_error *err) {
    return room(need, replaced, nreplaced, NULL, err);
}

int command_disk_room_at(const char *path, uint64_t need, bool replacing, h5ark_error *err) {
    return room(need, NULL, 0, replacing ? path : NULL, err);
}

const command_def acl_commands[] = {
    {"getacl", cmd_getacl, {{"path", ARG_STR, true}, {0}}, .read_only = true, .ranks = RANKS_ZERO},
    {"setacl",
     cmd_setacl,
     {{"path", ARG_STR, true}, {"acl", ARG_ANY, true}, {0}},
     .ranks = RANKS_ZERO},
    {0},
};
