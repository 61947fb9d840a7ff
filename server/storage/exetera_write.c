/* Writing ExeTera dataframes (docs/FORMAT.md, "ExeTera dataframes"): tohdf's format
 * "exetera", writepart and complete. A field is written as ExeTera writes it: a group with
 * `fieldtype`, `chunksize`, `timestamp` (and `nformat` or `strlen`), holding 1-D chunked
 * datasets with unlimited maxshape, chunked as h5py chooses, and the `completed` mark on the
 * field's non-empty data datasets once the field is finished.
 *
 * tohdf's changes go to a copy of the file (or a new file) beside it, which is flushed and
 * renamed over the file; writepart's and complete's go to the file's twin (twin.h), swapped
 * in whole. Either way a write that fails, or a daemon killed at any moment, leaves the
 * file as it was before the request or wholly after it (docs/DESIGN.md, "Writing ExeTera
 * fields in parts"). Each write holds its file's lock (twin_changes_lock), so two parts sent
 * at once to one file both land, and writes to different files go on at once. */
#include "storage.h"

#include "exetera_field.h"

#include "config.h"
#include "families.h"
#include "commit.h"
#include "files.h"
#include "temp_names.h"
#include "owners.h"
#include "layout.h"
#include "progress.h"
#include "sandbox.h"
#include "sysio.h"
#include "twin.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- files ---------------------------------------------------------------------------- */

/* A group or field name: a single HDF5 link name. */
static int check_name(const char *name, const char *what, h5ark_error *err) {
    if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        strcmp(name, LEGACY_METADATA_GROUP) == 0 || strlen(name) >= 1000)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "'%.100s' cannot be %s (empty, '/', '.', reserved or too long)", name,
                          what);
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20)
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "%s '%.100s' holds a control character", what,
                              name);
    return 0;
}

typedef struct {
    char rel[PATH_MAX], final[PATH_MAX], tmp[PATH_MAX];
    bool exists, tmp_made, twinned;
    twin_change twin;
    hid_t h5;
} ex_file;

/* Resolve the file (its directory created when create), and open for writing a copy of it
 * (a new file when fresh or missing), or its twin when in_place (twin.h: a part costs its
 * own size, not a copy of the file). must_exist: not_found when it is missing. */
static int ex_open(const file_access *fa, ex_file *f, const char *rel, bool fresh, bool must_exist,
                   bool in_place, h5ark_error *err) {
    f->h5 = H5I_INVALID_HID;
    f->tmp_made = f->twinned = false;
    snprintf(f->rel, sizeof f->rel, "%s", rel);
    if (files_resolve(fa, PERM_WRITE, rel, false, f->final, err)) {
        if (err->code != H5ARK_NOT_FOUND || must_exist) return -1;
        if (files_resolve(fa, PERM_WRITE, rel, true, f->final, err)) return -1;
    }
    struct stat st;
    f->exists = sysio.lstat(f->final, &st) == 0;
    if (!f->exists && errno != ENOENT)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot look at '%s': %s", rel, strerror(errno));
    if (!f->exists && must_exist)
        return h5ark_fail(err, H5ARK_NOT_FOUND, "'%s' does not exist", rel);
    if (f->exists && !S_ISREG(st.st_mode))
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "'%s' is not a file", rel);
    if (temp_name_for(f->final, f->tmp, sizeof f->tmp))
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "path '%s' is too long", rel);
    if (f->exists && !fresh) {
        if (sandbox_check_file(f->final, err)) return h5ark_fail_context(err, "'%s'", rel);
        htri_t hdf5 = h5u_is_hdf5(f->final);
        if (hdf5 <= 0) {
            H5Eclear2(H5E_DEFAULT);
            return h5ark_fail(err, H5ARK_SCHEMA_ERROR, "'%s' is not an HDF5 file", rel);
        }
        if (in_place) {
            if (twin_begin(&f->twin, f->final, rel, err)) return -1;
            f->twinned = true;
        } else {
            f->tmp_made = true;
            if (files_copy(f->final, f->tmp, rel, err)) return -1;
        }
        f->h5 = H5Fopen(f->twinned ? f->twin.twin : f->tmp, H5F_ACC_RDWR, h5u_fapl());
        if (f->h5 < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot open '%s'", rel);
        return 0;
    }
    f->tmp_made = true;
    f->h5 = H5Fcreate(f->tmp, H5F_ACC_EXCL, H5P_DEFAULT, h5u_fapl());
    if (f->h5 < 0) return h5u_fail(err, H5ARK_IO_ERROR, "cannot create a file beside '%s'", rel);
    h5u_io_clear();
    return 0;
}

/* A file the write made is its writer's (owners.h). */
static int ex_owned(const file_access *fa, const ex_file *f, int rc, h5ark_error *err) {
    if (rc || f->exists || !file_access_on(fa)) return rc;
    const char *made = f->final;
    return owners_created(fa->user, &made, 1, err);
}

/* Close the copy and put it in place (commit), or throw it away. A write the file driver
 * saw fail, though the library went on, fails the request. */
static int ex_close(ex_file *f, bool commit, h5ark_error *err) {
    int rc = 0;
    if (!commit) h5u_io_blame(f->h5, err); /* a file that could not be read is not to blame */
    if (commit && f->h5 >= 0) {
        h5ark_error seen = {.code = H5ARK_INTERNAL};
        snprintf(seen.message, sizeof seen.message, "cannot write '%.900s'", f->rel);
        h5u_io_blame(f->h5, &seen);
        if (seen.code != H5ARK_INTERNAL) {
            *err = seen;
            rc = -1;
            commit = false;
        }
    }
    if (f->h5 >= 0 && h5u_close_written(f->h5) && commit) {
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot write '%s'", f->rel);
        commit = false;
    }
    f->h5 = H5I_INVALID_HID;
    if (f->twinned) {
        f->twinned = false;
        if (!commit) {
            twin_abort(&f->twin);
            return rc;
        }
        return twin_commit(&f->twin, err);
    }
    if (commit && f->tmp_made) {
        rc = commit_file(f->tmp, f->final, err);
        if (rc == 0) f->tmp_made = false;
        if (rc == 0) twin_drop(f->final); /* a twin of the file it replaced is no use */
    }
    if (f->tmp_made && sysio.unlink(f->tmp) != 0 && errno != ENOENT) sysio.unlink(f->tmp);
    f->tmp_made = false;
    return rc;
}

/* The dataframe group of the file: opened, or created when create. */
static hid_t df_group(hid_t file, const char *rel, const char *group, bool create,
                      h5ark_error *err) {
    int there = h5u_link_exists(file, group);
    H5Eclear2(H5E_DEFAULT);
    if (there > 0) {
        hid_t g = h5u_open_child(file, group, H5O_TYPE_GROUP);
        H5Eclear2(H5E_DEFAULT);
        if (g < 0)
            h5ark_fail(err, H5ARK_TYPE_ERROR, "'%s' in '%s' is not a group", group, rel);
        else if (H5Aexists(g, ATTR_FIELDTYPE) > 0 || H5Aexists(g, ATTR_OBJTYPE) > 0) {
            H5Gclose(g);
            g = H5I_INVALID_HID;
            h5ark_fail(err, H5ARK_TYPE_ERROR,
                       "'%s' in '%s' is a field or an object, not an ExeTera dataframe", group,
                       rel);
        }
        H5Eclear2(H5E_DEFAULT);
        return g;
    }
    if (!create)
        return h5ark_fail(err, H5ARK_NOT_FOUND, "'%s' has no dataframe '%s'", rel, group), -1;
    hid_t g = H5Gcreate2(file, group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) h5u_fail(err, H5ARK_IO_ERROR, "cannot create the group '%s'", group);
    return g;
}

/* ---- the requests ---------------------------------------------------------------------- */

typedef struct {
    const char *name; /* field name */
    const object *obj;
    const char *label;     /* the object's name, in messages */
    const char *fieldtype; /* asked for, or NULL: the object's own */
    field_spec spec;
} ex_field;

int storage_exetera_write(const file_access *fa, const storage_item *items, size_t nitems,
                          const char *path, const char *group, storage_mode mode,
                          h5ark_value *files, h5ark_value *warnings, h5ark_error *err) {
    h5u_quiet();
    h5u_io_clear();
    if (check_name(group, "a dataframe group name", err)) return -1;
    /* the fields: each item, or a DataFrame's columns */
    size_t n = 0;
    for (size_t i = 0; i < nitems; i++)
        n += items[i].obj->objtype == H5ARK_DATAFRAME ? items[i].obj->ncomponents : 1;
    ex_field *fields = calloc(n ? n : 1, sizeof *fields);
    if (!fields) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; i < nitems && rc == 0; i++) {
        const object *obj = items[i].obj;
        const char *ft = items[i].fieldtype;
        if (obj->objtype != H5ARK_DATAFRAME) {
            fields[k++] = (ex_field){items[i].dataset, obj, items[i].dataset, ft, {0}};
            continue;
        }
        for (size_t c = 0; c < obj->ncomponents; c++) {
            if (strcmp(obj->components[c].name, "Index") == 0) continue;
            fields[k++] = (ex_field){
                obj->components[c].name, obj->components[c].obj, obj->components[c].name, ft, {0}};
        }
    }
    n = k;
    for (size_t i = 0; i < n && rc == 0; i++) {
        ex_field *f = &fields[i];
        rc = check_name(f->name, "a field name", err);
        for (size_t j = 0; j < i && rc == 0; j++)
            if (strcmp(fields[j].name, f->name) == 0)
                rc =
                    h5ark_fail(err, H5ARK_ALREADY_EXISTS,
                               "tohdf: field '%s' would be written twice by this request", f->name);
        if (rc == 0)
            rc = f->fieldtype ? exetera_spec_parse(f->fieldtype, &f->spec, err)
                              : exetera_spec_of(f->obj, f->label, &f->spec, err);
        if (rc == 0) rc = exetera_spec_fits(f->obj, f->label, &f->spec, err);
    }
    if (rc) {
        free(fields);
        return -1;
    }
    pathlock_set held; /* the file's: writes to others go on meanwhile */
    if (twin_changes_lock_named(&held, fa, path, err)) {
        free(fields);
        return -1;
    }
    ex_file file = {.h5 = H5I_INVALID_HID};
    hid_t df = H5I_INVALID_HID;
    bool fresh = mode == STORAGE_TRUNCATE;
    rc = ex_open(fa, &file, path, fresh, mode == STORAGE_UPDATE, false, err);
    if (rc == 0 && (df = df_group(file.h5, path, group, mode != STORAGE_UPDATE, err)) < 0) rc = -1;
    /* every rule checked before anything is written */
    for (size_t i = 0; i < n && rc == 0 && !fresh; i++) {
        field_spec old;
        int there = exetera_existing_field(df, group, fields[i].name, &old, err);
        if (there < 0)
            rc = -1;
        else if (mode == STORAGE_APPEND && there)
            rc = h5ark_fail(err, H5ARK_ALREADY_EXISTS,
                            "field '%s/%s' already exists in '%s'; nothing was written", group,
                            fields[i].name, path);
        else if (mode == STORAGE_UPDATE && !there)
            rc = h5ark_fail(err, H5ARK_NOT_FOUND,
                            "field '%s/%s' is not in '%s', so it cannot be updated; nothing was "
                            "written",
                            group, fields[i].name, path);
    }
    uint64_t rows = 0;
    for (size_t i = 0; i < n; i++)
        rows += fields[i].obj->size;
    progress_start(progress_here(), PROGRESS_ROWS, rows);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (mode == STORAGE_UPDATE && H5Ldelete(df, fields[i].name, H5P_DEFAULT) < 0)
            rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot replace the field '%s'", fields[i].name);
        if (rc == 0)
            rc = exetera_write_field(df, fields[i].name, fields[i].obj, &fields[i].spec, true, true,
                                     NULL, err);
        if (rc) h5ark_fail_context(err, "writing the field '%s/%s'", group, fields[i].name);
    }
    if (df >= 0) H5Gclose(df);
    bool existed = file.exists;
    if (ex_close(&file, rc == 0, err) && rc == 0) rc = -1;
    rc = ex_owned(fa, &file, rc, err);
    twin_changes_unlock(&held);
    char shown[PATH_MAX];
    files_shown(fa, file.final, shown, sizeof shown);
    if (rc == 0 && h5ark_value_push(files, h5ark_value_str(shown)))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && fresh && existed) {
        char msg[PATH_MAX + 64];
        snprintf(msg, sizeof msg, "overwrote the existing file '%s'", path);
        if (h5ark_value_push(warnings, h5ark_value_str(msg)))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    free(fields);
    return rc;
}

/* "group/name" split in two; bad_request otherwise. */
static int split_field(const char *field, char group[1024], char name[1024], h5ark_error *err) {
    const char *slash = strchr(field, '/');
    if (!slash || strchr(slash + 1, '/') || (size_t)(slash - field) >= 1000 ||
        strlen(slash + 1) >= 1000)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "field '%.100s' must be named \"<dataframe>/<field>\"", field);
    snprintf(group, 1024, "%.*s", (int)(slash - field), field);
    snprintf(name, 1024, "%s", slash + 1);
    return check_name(group, "a dataframe group name", err) ||
           check_name(name, "a field name", err);
}

int storage_exetera_part(const file_access *fa, const char *path, const char *field,
                         const object *obj, const char *label, const char *fieldtype, int64_t *rows,
                         h5ark_error *err) {
    h5u_quiet();
    h5u_io_clear();
    char group[1024], name[1024];
    field_spec want = {0};
    if (split_field(field, group, name, err)) return -1;
    if (fieldtype && exetera_spec_parse(fieldtype, &want, err)) return -1;
    if (!fieldtype && exetera_spec_of(obj, label, &want, err)) return -1;
    pathlock_set held; /* the file's: writes to others go on meanwhile */
    if (twin_changes_lock_named(&held, fa, path, err)) return -1;
    ex_file file = {.h5 = H5I_INVALID_HID};
    hid_t df = H5I_INVALID_HID;
    field_spec old;
    int there = 0;
    int rc = ex_open(fa, &file, path, false, false, true, err);
    if (rc == 0 && (df = df_group(file.h5, path, group, true, err)) < 0) rc = -1;
    if (rc == 0 && (there = exetera_existing_field(df, group, name, &old, err)) < 0) rc = -1;
    if (rc == 0 && there) {
        /* a part takes the field's type: strings fit either string kind, a categorical
         * any code width that holds it, a float64 a timestamp */
        bool same = strcmp(old.text, want.text) == 0 ||
                    (!fieldtype && old.kind == want.kind &&
                     (want.kind == FT_CATEGORICAL || want.kind == FT_FIXED)) ||
                    (!fieldtype && obj->objtype == H5ARK_STRINGS &&
                     (old.kind == FT_INDEXED || old.kind == FT_FIXED)) ||
                    (!fieldtype && old.kind == FT_TIMESTAMP && obj->dtype == H5ARK_FLOAT64);
        if (!same)
            rc = h5ark_fail(err, H5ARK_TYPE_ERROR,
                            "'%s' makes a field of fieldtype '%s', but '%s' in '%s' has "
                            "fieldtype '%s'; nothing was written",
                            label, want.text, field, path, old.text);
        else
            want = old;
    }
    if (rc == 0) rc = exetera_spec_fits(obj, label, &want, err);
    progress_start(progress_here(), PROGRESS_ROWS, obj->size);
    if (rc == 0) rc = exetera_write_field(df, name, obj, &want, !there, false, rows, err);
    if (df >= 0) H5Gclose(df);
    if (ex_close(&file, rc == 0, err) && rc == 0) rc = -1;
    rc = ex_owned(fa, &file, rc, err);
    twin_changes_unlock(&held);
    return rc;
}

int storage_exetera_complete(const file_access *fa, const char *path, const char *field,
                             int64_t *rows, h5ark_error *err) {
    h5u_quiet();
    h5u_io_clear();
    char group[1024], name[1024];
    if (split_field(field, group, name, err)) return -1;
    pathlock_set held; /* the file's: writes to others go on meanwhile */
    if (twin_changes_lock_named(&held, fa, path, err)) return -1;
    ex_file file = {.h5 = H5I_INVALID_HID};
    hid_t df = H5I_INVALID_HID, g = H5I_INVALID_HID;
    field_spec s;
    int rc = ex_open(fa, &file, path, false, true, true, err);
    if (rc == 0 && (df = df_group(file.h5, path, group, false, err)) < 0) rc = -1;
    int there = rc == 0 ? exetera_existing_field(df, group, name, &s, err) : -1;
    if (rc == 0 && there <= 0) {
        rc = -1;
        if (there == 0) h5ark_fail(err, H5ARK_NOT_FOUND, "'%s' has no field '%s'", path, field);
    }
    if (rc == 0 && (g = h5u_open_child(df, name, H5O_TYPE_GROUP)) < 0)
        rc = h5u_fail(err, H5ARK_SCHEMA_ERROR, "cannot open the field '%s'", field);
    if (rc == 0) rc = exetera_set_completed(g, s.kind, true, err);
    if (rc == 0) *rows = exetera_field_rows(g, s.kind);
    if (g >= 0) H5Gclose(g);
    if (df >= 0) H5Gclose(df);
    if (ex_close(&file, rc == 0, err) && rc == 0) rc = -1;
    if (rc == 0) twin_drop(file.final); /* the stream is over */
    twin_changes_unlock(&held);
    return rc;
}
