/* awkward 2 arrays on disk (docs/FORMAT.md, "Awkward arrays"): a group with attributes
 * `form` (the form JSON, a string) and `length` (an integer), and one typed 1-D dataset per
 * buffer named `<form_key>-<attribute>`, as ak.to_buffers names them and awkward's
 * documentation stores them with h5py (a buffer_key with a folder puts them one group
 * down: `part0/node0-offsets`). The form is parsed in the probe to find the buffers; the
 * daemon reads them as pdarrays and builds the object with every check put makes
 * (objects/awkward.c), so a broken file is a schema_error naming the node. An awkward
 * group is read from one file: its buffers do not concatenate over files. */
#include "families.h"

#include "hdf5_util.h"
#include "layout.h"
#include "locales.h"
#include "objects/awkward.h"
#include "objects/awkward_form.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATTR_FORM   "form"
#define ATTR_LENGTH "length"

/* A scalar string attribute of at most AK_MAX_FORM_BYTES, malloc'd; NULL if absent or not
 * such a string. */
static char *read_text_attr(hid_t obj, const char *name) {
    char *out;
    h5u_read_text_attr(obj, name, AK_MAX_FORM_BYTES, &out);
    return out;
}

static bool has_attr(hid_t obj, const char *name) {
    int r = H5Aexists(obj, name);
    if (r < 0) H5Eclear2(H5E_DEFAULT);
    return r > 0;
}

static int detect(const schema_facts *f, schema_match *m) {
    (void)m;
    if (!f->is_group || f->has_objtype) return SCHEMA_NOT_MINE;
    /* the two attributes are the mark, as strong as an ObjType */
    return has_attr(f->obj, ATTR_FORM) && has_attr(f->obj, ATTR_LENGTH) ? SCHEMA_BY_OBJTYPE
                                                                        : SCHEMA_NOT_MINE;
}

/* Buffers in the form's preorder, with the dtype the form gives each. */
typedef struct {
    char (*names)[AK_MAX_KEY_BYTES + 16];
    h5ark_dtype *dtypes;
    bool *complex; /* a complex NumpyArray's data: h5py stores it as a compound {r, i} */
    size_t n;
} buffer_list;

static void buffer_list_free(buffer_list *b) {
    free(b->names);
    free(b->dtypes);
    free(b->complex);
}

static void collect(const ak_node *node, buffer_list *b) {
    ak_buffer_role roles[3];
    size_t nb = ak_node_buffers(node, roles);
    for (size_t i = 0; i < nb; i++) {
        ak_buffer_name(node, roles[i], b->names[b->n], sizeof b->names[b->n]);
        b->complex[b->n] = roles[i] == AK_BUF_DATA && node->per_item == 2;
        b->dtypes[b->n++] = ak_buffer_dtype(node, roles[i]);
    }
    for (size_t i = 0; i < node->ncontents; i++)
        collect(node->contents[i], b);
}

static int list_buffers(const ak_form *form, buffer_list *b, h5ark_error *err) {
    b->n = 0;
    b->names = calloc(form->nbuffers ? form->nbuffers : 1, sizeof *b->names);
    b->dtypes = calloc(form->nbuffers ? form->nbuffers : 1, sizeof *b->dtypes);
    b->complex = calloc(form->nbuffers ? form->nbuffers : 1, sizeof *b->complex);
    if (!b->names || !b->dtypes || !b->complex) {
        buffer_list_free(b);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    collect(form->root, b);
    return 0;
}

/* Where buffer `name` lies under the group: its child, or a child of one of its groups
 * (ak.to_buffers' buffer_key with a folder). 0 with `out` set, -1 when not found. */
static int find_buffer(hid_t group, const char *gpath, const char *name, h5u_names *kids, char *out,
                       size_t len) {
    if (h5u_link_exists(group, name) == 1) {
        snprintf(out, len, "%s/%s", gpath, name);
        return 0;
    }
    H5Eclear2(H5E_DEFAULT);
    for (size_t i = 0; i < kids->n; i++) {
        char sub[2 * AK_MAX_KEY_BYTES + 64];
        if (snprintf(sub, sizeof sub, "%s/%s", kids->v[i], name) >= (int)sizeof sub) continue;
        hid_t g = h5u_open_child(group, kids->v[i], H5O_TYPE_GROUP);
        if (g < 0) {
            H5Eclear2(H5E_DEFAULT);
            continue;
        }
        int r = h5u_link_exists(g, name);
        H5Oclose(g);
        H5Eclear2(H5E_DEFAULT);
        if (r == 1) {
            snprintf(out, len, "%s/%s", gpath, sub);
            return 0;
        }
    }
    return -1;
}

static int probe(const probe_ctx *pc, read_node *n, hid_t dset, h5ark_error *err) {
    (void)dset;
    if (n->nkids > 0 || n->fieldtype)
        return h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                          "awkward group '%s' is in more than one file; an awkward array is "
                          "read from one file",
                          n->path);
    hid_t g = H5Gopen2(pc->file, n->path, H5P_DEFAULT);
    if (g < 0) return h5u_fail(err, H5ARK_SCHEMA_ERROR, "'%s' cannot be opened", n->path);
    char what[1200];
    snprintf(what, sizeof what, "awkward group '%s'", n->path);
    int64_t length = -1;
    char *text = read_text_attr(g, ATTR_FORM);
    int rc = h5u_read_int_attr(g, ATTR_LENGTH, &length, what, err) == 1 ? 0 : -1;
    if (rc == 0 && (length < 0 || (uint64_t)length > OBJECT_MAX_ELEMENTS))
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: 'length' is %lld", what, (long long)length);
    else if (rc && err->code == H5ARK_OK)
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: 'length' is not an integer", what);
    if (rc == 0 && !text)
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: 'form' is not a string (of at most 1 MiB)",
                        what);
    ak_form *form = rc == 0 ? ak_form_parse(text, strlen(text), err) : NULL;
    if (rc == 0 && !form) {
        err->code = H5ARK_SCHEMA_ERROR;
        rc = h5ark_fail_context(err, "%s", what);
    }
    buffer_list bl = {0};
    h5u_names kids = {0};
    if (rc == 0) rc = list_buffers(form, &bl, err);
    if (rc == 0 && h5u_link_names(g, NULL, &kids, what, err) < 0) rc = -1;
    for (size_t i = 0; rc == 0 && i < bl.n; i++) {
        char path[2 * AK_MAX_KEY_BYTES + 1200];
        if (find_buffer(g, n->path, bl.names[i], &kids, path, sizeof path)) {
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "%s: buffer '%s' is missing", what,
                            bl.names[i]);
            break;
        }
        read_node *k = node_add_kid(n, bl.names[i], path, err);
        if (!k) {
            rc = -1;
            break;
        }
        k->component = true;
        if (bl.complex[i]) { /* h5py's compound {r, i}, or the floats as they are */
            k->kind = KIND_PDARRAY;
            rc = pdarray_probe_dataset(pc, &k->ds, H5I_INVALID_HID, false, PROBE_PAIRS, err);
        } else {
            rc = schema_probe(pc, k, err);
        }
        if (rc == 0 && k->kind != KIND_PDARRAY)
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "%s: buffer '%s' is %s, not a 1-D numeric dataset", what, bl.names[i],
                            schema_what(k->kind));
        else if (rc) { /* a buffer h5ark cannot hold (a compound type): this group's */
            err->code = H5ARK_SCHEMA_ERROR;
            h5ark_fail_context(err, "%s", what);
        }
    }
    h5u_names_free(&kids);
    buffer_list_free(&bl);
    ak_form_free(form);
    H5Gclose(g);
    if (rc == 0) { /* the form and length go to the daemon with the node */
        n->fieldtype = text;
        n->ndim = 1;
        n->shape[0] = (uint64_t)length;
        return 0;
    }
    free(text);
    return -1;
}

/* The buffers straight from the file into the object's shards, as an ak_source: each
 * locale reads its own ranges (no pdarray in between, no second copy of the bytes). */
typedef struct {
    const read_node *n;
    bool swap; /* the bytes are big-endian (readhdf's byteorder ">") */
    atomic_flag failed;
    h5ark_error err; /* the first failure's */
} file_source;

typedef struct {
    file_source *fs;
} file_source_ref;

static int read_file(const void *ctx, size_t i, uint64_t offset, void *dst, uint64_t n) {
    file_source *fs = ((const file_source_ref *)ctx)->fs;
    const read_part *p = &fs->n->kids[i].ds.values;
    size_t size = h5ark_dtype_size(p->dtype);
    h5ark_error e = {0};
    if (size && offset % size == 0 && n % size == 0 &&
        read_part_range(p, offset / size, (offset + n) / size, dst, &e) == 0) {
        /* a complex number's floats each on its own, as numpy's byte order has them */
        if (fs->swap) ak_swap_bytes(dst, n, size);
        return 0;
    }
    if (!atomic_flag_test_and_set(&fs->failed)) fs->err = e;
    return -1;
}

static int build(read_node *n, bool strict, bool tags, object **obj, object **tag,
                 h5ark_error *err) {
    *obj = *tag = NULL;
    const char *text = n->fieldtype ? n->fieldtype : "";
    ak_form *form = ak_form_parse(text, strlen(text), err);
    if (!form) {
        err->code = H5ARK_SCHEMA_ERROR;
        return h5ark_fail_context(err, "awkward group '%s'", n->path);
    }
    buffer_list bl = {0};
    const char **names = calloc(n->nkids ? n->nkids : 1, sizeof *names);
    uint64_t *nbytes = calloc(n->nkids ? n->nkids : 1, sizeof *nbytes);
    int rc = names && nbytes ? list_buffers(form, &bl, err)
                             : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && bl.n != n->nkids)
        rc = h5ark_fail(err, H5ARK_INTERNAL, "awkward group '%s': %zu buffers, %zu read", n->path,
                        bl.n, n->nkids);
    for (size_t i = 0; rc == 0 && i < n->nkids; i++)
        if (n->kids[i].ds.values.n > 1) /* joined over files: offsets would not agree */
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "awkward group '%s' is in more than one file; an awkward array is "
                            "read from one file",
                            n->path);
    for (size_t i = 0; rc == 0 && i < n->nkids; i++) {
        read_part *p = &n->kids[i].ds.values;
        rc = pdarray_settle_dtype(&n->kids[i].ds, strict, err);
        /* the file's type must be the form's: the bytes are taken as the form says */
        if (rc == 0 && p->dtype != bl.dtypes[i])
            rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR,
                            "awkward group '%s': buffer '%s' holds %s but the form makes it %s",
                            n->path, n->kids[i].name, h5ark_dtype_name(p->dtype),
                            h5ark_dtype_name(bl.dtypes[i]));
        names[i] = n->kids[i].name;
        nbytes[i] = p->total * h5ark_dtype_size(p->dtype);
    }
    if (rc == 0) {
        file_source fs = {.n = n, .swap = n->swap_bytes, .failed = ATOMIC_FLAG_INIT};
        file_source_ref ref = {&fs};
        ak_source src = {n->nkids, names, nbytes, read_file, &ref};
        *obj = awkward_build(text, strlen(text), n->shape[0], &src, err);
        if (!*obj && atomic_flag_test_and_set(&fs.failed)) /* the file's error, as it was */
            *err = fs.err;
        else if (!*obj && err->code == H5ARK_BAD_REQUEST)
            err->code = H5ARK_SCHEMA_ERROR;
        if (!*obj) rc = h5ark_fail_context(err, "awkward group '%s'", n->path);
    }
    if (rc == 0 && tags) { /* every row comes from the one file */
        object *t = object_new_pdarray(H5ARK_INT64, (*obj)->size, err);
        int file =
            n->kids && n->nkids && n->kids[0].ds.values.n ? n->kids[0].ds.values.src[0].file : 0;
        for (int b = 0; t && b < t->values->nshards; b++)
            for (uint64_t k = 0; locales_is_local(b) && k < t->values->shards[b].count; k++)
                ((int64_t *)t->values->shards[b].data)[k] = file;
        if (!t) rc = -1;
        *tag = t;
    }
    free(names);
    free(nbytes);
    buffer_list_free(&bl);
    ak_form_free(form);
    if (rc) {
        object_release(*obj);
        object_release(*tag);
        *obj = *tag = NULL;
    }
    return rc;
}

static void list(const schema_facts *f, schema_listing *out) {
    out->kind = "group"; /* one entry: its buffers are not objects of their own */
    int64_t length = -1;
    h5ark_error ignored = {0};
    if (h5u_read_int_attr(f->obj, ATTR_LENGTH, &length, "length", &ignored) != 1) length = -1;
    H5Eclear2(H5E_DEFAULT);
    char *text = read_text_attr(f->obj, ATTR_FORM);
    out->rows = length;
    out->extra = h5ark_value_map();
    if (out->extra &&
        (h5ark_value_set(out->extra, "length",
                         length >= 0 ? h5ark_value_int(length) : h5ark_value_nil()) ||
         h5ark_value_set(out->extra, "form", text ? h5ark_value_str(text) : h5ark_value_nil())))
        h5ark_value_destroy(&out->extra);
    free(text);
}

static bool writes(const object *obj) {
    return obj->objtype == H5ARK_AWKWARD;
}

/* A scalar variable-length UTF-8 string attribute, as h5py writes a str. */
static int write_text_attr(hid_t obj, const char *name, const char *text, h5ark_error *err) {
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR), a = H5I_INVALID_HID;
    int rc = t >= 0 && sp >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 &&
                     H5Tset_cset(t, H5T_CSET_UTF8) >= 0 &&
                     (a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT)) >= 0 &&
                     H5Awrite(a, t, &text) >= 0
                 ? 0
                 : h5u_fail(err, H5ARK_IO_ERROR, "cannot write attribute '%s'", name);
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    return rc;
}

static int awkward_write(hid_t loc, int file_index, const char *name, const object *obj, int part,
                         write_plan *plan, h5ark_error *err) {
    /* the buffers of an awkward array do not split into row ranges without rewriting its
     * offsets: one file holds it whole */
    if (part >= 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "tohdf: awkward array '%s' is written whole: use file_type 'single' "
                          "(the default when every object is awkward)",
                          name);
    if (plan->awkward0) {
        unsigned char *const *whole = NULL;
        for (size_t i = 0; i < plan->nak0; i++)
            if (plan->ak0_objects[i] == obj) whole = plan->ak0_whole[i];
        return awkward0_write(loc, name, obj, plan->awkward0, whole, err);
    }
    const char *form = awkward_form_json(obj);
    if (!form) return h5ark_fail(err, H5ARK_INTERNAL, "awkward array '%s' has no form", name);
    ak_form *parsed = ak_form_parse(form, strlen(form), err);
    buffer_list bl = {0};
    if (!parsed || list_buffers(parsed, &bl, err)) {
        ak_form_free(parsed);
        return h5ark_fail_context(err, "awkward array '%s'", name);
    }
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = g < 0 ? h5u_fail(err, H5ARK_IO_ERROR, "cannot create group '%s'", name)
                   : write_text_attr(g, ATTR_FORM, form, err) ||
                         h5u_write_int_attr(g, ATTR_LENGTH, (int64_t)obj->size, err);
    for (size_t i = 0; rc == 0 && i < obj->ncomponents; i++) {
        const darray *a = obj->components[i].obj->values;
        /* complex as h5py stores it (a compound {r, i}); compressed, the float pairs, as
         * the chunks are planned in elements of the darray */
        bool pairs = false;
        for (size_t k = 0; k < bl.n; k++)
            if (strcmp(bl.names[k], obj->components[i].name) == 0) pairs = bl.complex[k];
        rc = pairs && plan->gzip_level == 0
                 ? write_darray_pairs(g, file_index, obj->components[i].name, a, plan, err)
                 : write_darray_range(g, file_index, obj->components[i].name, a, 0, a->size,
                                      OBJTYPE_PDARRAY, a->dtype == H5ARK_BOOLEAN, 0, plan, err);
    }
    if (g >= 0 && H5Gclose(g) < 0 && rc == 0)
        rc = h5u_fail(err, H5ARK_IO_ERROR, "cannot close '%s'", name);
    buffer_list_free(&bl);
    ak_form_free(parsed);
    return rc ? h5ark_fail_context(err, "awkward array '%s'", name) : 0;
}

const schema_family schema_awkward = {
    .kind = KIND_AWKWARD,
    .what = "an awkward array",
    .objtype = "awkward",
    .detect = detect,
    .probe = probe,
    .build = build,
    .list = list,
    .writes = writes,
    .write = awkward_write,
};
