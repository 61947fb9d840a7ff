/* One operation of the HSDS API (see h5obj.h): a read, a write, an ACL's or a folder's,
 * handed to the file that does it. Above them all: none of them calls back here. */
#include "storage/h5obj_int.h"

#include "storage/hdf5_util.h"
#include "storage/twin.h"

static int read_op(const h5obj_args *a, h5obj_answer *out, h5ark_error *err);

int h5obj_run(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    *out = (h5obj_answer){0};
    h5u_quiet();
    int rc;
    if (a->op == H5OBJ_ACLS || a->op == H5OBJ_ACL) {
        rc = h5obj_acl_read(a, out, err);
    } else if (a->op == H5OBJ_PUT_ACL) {
        rc = h5obj_acl_write(a, out, err);
    } else if (a->op >= H5OBJ_PUT_DOMAIN) {
        rc = h5obj_write(a, out, err);
    } else {
        twin_readers_enter(); /* a change levels a file's twin once its readers are done */
        rc = read_op(a, out, err);
        twin_readers_leave();
    }
    if (rc) h5obj_answer_free(out); /* a failure answers nothing */
    return rc;
}

static int read_op(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    if (a->op == H5OBJ_DOMAIN) return h5obj_get_domain(a, out, err);
    if (a->op == H5OBJ_FOLDER) return h5obj_folder_list(a, out, err);
    h5obj_file f;
    if (h5obj_open_file(a, &f, err)) return -1;
    h5ark_value *alias = NULL;
    hid_t obj =
        h5obj_open_id(&f, a->id, a->coll, a->op == H5OBJ_GET && a->getalias ? &alias : NULL, err);
    int rc = obj < 0 ? -1 : 0;
    H5I_type_t kind = obj >= 0 ? H5Iget_type(obj) : H5I_BADID;
    if (rc == 0 && kind != H5I_GROUP && (a->op == H5OBJ_LINKS || a->op == H5OBJ_LINK))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%s is not a group: it has no links", a->id);
    if (rc == 0 && kind != H5I_DATASET && (a->op == H5OBJ_SHAPE || a->op == H5OBJ_VALUE))
        rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "%s is not a dataset", a->id);
    if (rc == 0) {
        switch (a->op) {
        case H5OBJ_GET: rc = h5obj_get(&f, obj, a, &alias, out, err); break;
        case H5OBJ_SHAPE: rc = h5obj_shape(&f, obj, out, err); break;
        case H5OBJ_LINKS: rc = h5obj_links(&f, obj, a, out, err); break;
        case H5OBJ_LINK: rc = h5obj_link(&f, obj, a, out, err); break;
        case H5OBJ_ATTRS: rc = h5obj_attrs(&f, obj, a, out, err); break;
        case H5OBJ_ATTR: rc = h5obj_attr(&f, obj, a, out, err); break;
        case H5OBJ_VALUE: rc = h5obj_read_value(&f, obj, a, out, err); break;
        default: rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "unknown operation"); break;
        }
    }
    h5ark_value_destroy(&alias);
    if (obj >= 0) H5Oclose(obj);
    H5Eclear2(H5E_DEFAULT);
    if (rc) h5u_io_blame(f.fid, err); /* a file that could not be read is not to blame */
    h5obj_close_file(&f);
    if (rc) h5obj_answer_free(out);
    return rc;
}
