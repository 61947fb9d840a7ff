/* repack: each file rewritten whole into a new file beside it (its groups, datasets,
 * attributes and links copied, so the space earlier updates left unused is not), which then
 * replaces it (commit.h). A file with external storage or a link outside it is refused. */
#include "write_files.h"

#include "commit.h"
#include "files.h"
#include "temp_names.h"
#include "progress.h"
#include "sandbox.h"
#include "twin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static herr_t external_cb(hid_t obj, const char *name, const H5O_info_t *info, void *data) {
    if (info->type != H5O_TYPE_DATASET) return 0;
    hid_t d = H5Dopen2(obj, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t dcpl = H5Dget_create_plist(d);
    int next = dcpl >= 0 ? H5Pget_external_count(dcpl) : -1;
    H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    if (dcpl >= 0) H5Pclose(dcpl);
    H5Dclose(d);
    if (next != 0 || layout == H5D_VIRTUAL) {
        snprintf(data, 1024, "%s", name);
        return 1;
    }
    return 0;
}

/* Copying reads every dataset: refuse data stored in other files. */
static int check_no_external(hid_t file, const char *shown, h5ark_error *err) {
    char found[1024] = "";
    herr_t r = H5Ovisit(file, H5_INDEX_NAME, H5_ITER_INC, external_cb, found);
    if (r > 0)
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "'%s': dataset '%s' keeps its data in other files (external or "
                          "virtual storage); h5ark does not copy it",
                          shown, found);
    if (r < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be walked", shown);
    return 0;
}

typedef struct {
    hid_t dst;
    h5ark_error *err;
    int rc;
} copy_job;

static herr_t copy_attr_cb(hid_t src, const char *name, const H5A_info_t *info, void *data) {
    (void)info;
    copy_job *job = data;
    hid_t a = H5Aopen(src, name, H5P_DEFAULT);
    hid_t type = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t space = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    size_t size = type >= 0 ? H5Tget_size(type) : 0;
    void *buf = n >= 0 && size > 0 ? calloc((size_t)n + 1, size) : NULL;
    hid_t out = H5I_INVALID_HID;
    bool vlen = type >= 0 && (H5Tdetect_class(type, H5T_VLEN) > 0 || H5Tis_variable_str(type) > 0);
    bool read = buf && H5Aread(a, type, buf) >= 0;
    if (!read || (out = H5Acreate2(job->dst, name, type, space, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
        H5Awrite(out, type, buf) < 0)
        job->rc = h5u_fail(job->err, H5ARK_IO_ERROR, "cannot copy the root attribute '%s'", name);
    if (read && vlen) H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf);
    free(buf);
    if (out >= 0) H5Aclose(out);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    if (a >= 0) H5Aclose(a);
    return job->rc ? -1 : 0;
}

static herr_t copy_link_cb(hid_t src, const char *name, const H5L_info_t *info, void *data) {
    copy_job *job = data;
    herr_t r = 0;
    if (info->type == H5L_TYPE_HARD) {
        r = h5u_copy_object(src, name, job->dst);
    } else if (info->type == H5L_TYPE_SOFT || info->type == H5L_TYPE_EXTERNAL) {
        size_t len = info->u.val_size;
        char *val = len < (1u << 20) ? malloc(len + 1) : NULL;
        r = val && H5Lget_val(src, name, val, len + 1, H5P_DEFAULT) >= 0 ? 0 : -1;
        if (r == 0 && info->type == H5L_TYPE_SOFT) {
            val[len] = '\0';
            r = H5Lcreate_soft(val, job->dst, name, H5P_DEFAULT, H5P_DEFAULT);
        } else if (r == 0) {
            const char *file = NULL, *obj = NULL;
            unsigned flags;
            r = H5Lunpack_elink_val(val, len, &flags, &file, &obj);
            if (r >= 0) r = H5Lcreate_external(file, obj, job->dst, name, H5P_DEFAULT, H5P_DEFAULT);
        }
        free(val);
    }
    if (r < 0) {
        job->rc = h5u_fail(job->err, H5ARK_IO_ERROR, "cannot copy '%s'", name);
        return -1;
    }
    return 0;
}

/* Copy every root attribute and top-level link of src into the new file dst. */
static int copy_contents(hid_t src, hid_t dst, const char *shown, h5ark_error *err) {
    if (check_no_external(src, shown, err)) return -1;
    copy_job job = {.dst = dst, .err = err};
    hsize_t idx = 0;
    if (H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, copy_attr_cb, &job) < 0 &&
        job.rc == 0)
        job.rc =
            h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot read the root attributes of '%s'", shown);
    idx = 0;
    if (job.rc == 0 && H5Literate(src, H5_INDEX_NAME, H5_ITER_INC, &idx, copy_link_cb, &job) < 0 &&
        job.rc == 0)
        job.rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot list the objects of '%s'", shown);
    return job.rc ? h5ark_fail_context(err, "copying '%s'", shown) : 0;
}

/* One file, under its lock (twin.h): the file read is the one replaced, so no twin is
 * levelled under the read and no twin_readers is needed. */
static int repack_file(const file_access *fa, const char *path, h5ark_value *files,
                       uint64_t *before, uint64_t *after, h5ark_error *err) {
    char shown[PATH_MAX];
    files_shown(fa, path, shown, sizeof shown);
    struct stat st;
    if (stat(path, &st) != 0)
        return h5ark_fail(err, errno == ENOENT ? H5ARK_NOT_FOUND : H5ARK_IO_ERROR,
                          "repack: '%s': %s", shown, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "repack: '%s' is not a file", shown);
    if (sandbox_check_file(path, err)) return h5ark_fail_context(err, "repack: '%s'", shown);
    htri_t hdf5 = h5u_is_hdf5(path);
    if (hdf5 <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "repack: '%s' is not an HDF5 file", shown);
    }
    char tmp[PATH_MAX];
    if (temp_name_for(path, tmp, sizeof tmp))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "repack: '%s': path too long", shown);
    hid_t src = H5Fopen(path, H5F_ACC_RDONLY, h5u_fapl());
    if (src < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "repack: '%s' cannot be opened", shown);
    hid_t dst = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, h5u_fapl());
    int rc = dst < 0
                 ? h5u_fail(err, H5ARK_IO_ERROR, "repack: cannot create a file beside '%s'", shown)
                 : copy_contents(src, dst, shown, err);
    H5Fclose(src);
    if (dst >= 0 && h5u_close_written(dst) && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "repack: cannot write the new '%s'", shown);
    if (rc == 0) rc = commit_file(tmp, path, err);
    if (rc) {
        write_remove_temp(tmp);
        return -1;
    }
    struct stat st2;
    *before += (uint64_t)st.st_size;
    *after += stat(path, &st2) == 0 ? (uint64_t)st2.st_size : 0;
    if (write_list_add(files, "%s", shown, err)) return -1;
    return 0;
}

/* A file at a time: changes to the others go on meanwhile. */
int storage_repack(const file_access *fa, char *const *paths, size_t npaths, h5ark_value *files,
                   uint64_t *before, uint64_t *after, h5ark_error *err) {
    h5u_quiet();
    *before = *after = 0;
    progress_sink *progress = progress_here();
    progress_start(progress, PROGRESS_FILES, npaths);
    for (size_t i = 0; i < npaths; i++) {
        pathlock_set held;
        const char *const one[] = {paths[i]};
        if (twin_changes_lock(&held, one, 1, err)) return -1;
        int rc = repack_file(fa, paths[i], files, before, after, err);
        twin_changes_unlock(&held);
        if (rc) return -1;
        progress_add(progress, 1);
    }
    return 0;
}
