/* Paths of the Arkouda dialect: Arkouda's client sends the paths it was given, absolute
 * ones too. They are made relative to the data directory here, once for every command that
 * takes one (hdf.c, checkpoint.c), and the native confinement (files.c) then applies. */
#include "front/arkouda/commands.h"
#include "access.h"
#include "config.h"
#include "storage/files.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ak_client_path(const char *given, bool folder, char out[PATH_MAX], h5ark_error *err) {
    if (given[0] != '/') {
        if (strlen(given) >= PATH_MAX)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "the path is too long");
        strcpy(out, given);
        return 0;
    }
    size_t cut = strcspn(given, "*?[");
    char prefix[PATH_MAX], real[PATH_MAX];
    if (cut >= sizeof prefix) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the path is too long");
    memcpy(prefix, given, cut);
    prefix[cut] = '\0';
    /* a folder may be resolved whole (the data directory itself); a file from its parent */
    for (bool whole = folder && !given[cut];; whole = false) {
        if (!whole) {
            char *slash = strrchr(prefix, '/');
            if (!slash) return h5ark_fail(err, H5ARK_BAD_REQUEST, "bad path '%.200s'", given);
            slash[slash == prefix ? 1 : 0] = '\0'; /* the parent; "/" stays */
            cut = strlen(prefix);
        }
        if (realpath(prefix, real)) break;
        if (cut == 1) return h5ark_fail(err, H5ARK_FORBIDDEN, "cannot resolve '%.200s'", given);
    }
    size_t dn = strlen(config.data_dir);
    if (strncmp(real, config.data_dir, dn) != 0 || (real[dn] != '\0' && real[dn] != '/'))
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "'%.300s' is outside the data directory; absolute paths must lie in %s",
                          given, config.data_dir);
    const char *inside = real + dn + (real[dn] == '/');
    const char *rest = given + cut + (given[cut] == '/');
    file_access fa = access_here();
    const char *root = file_access_on(&fa) ? "/" : "";
    int n = snprintf(out, PATH_MAX, "%s%s%s%s", root, inside, *inside && *rest ? "/" : "", rest);
    if (n < 0 || n >= PATH_MAX) return h5ark_fail(err, H5ARK_BAD_REQUEST, "the path is too long");
    if (!folder && !out[strlen(root)])
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%.200s' names no file", given);
    return 0;
}
