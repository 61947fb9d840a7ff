/* Links of groups and attributes of objects, as the HSDS API lists them (HSDS_API.md §7,
 * §9). */
#include "storage/h5obj_int.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#define LIST_MAX 1000000 /* links or attributes one answer lists */

static int set(h5ark_value *m, const char *key, h5ark_value *v) {
    return v ? h5ark_value_set(m, key, v) : -1;
}

static int oom(h5ark_error *err) {
    return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

static bool is_root(const h5obj_file *f, hid_t g) {
    H5O_info_t a, b;
    return H5Oget_info2(g, &a, H5O_INFO_BASIC) >= 0 &&
           H5Oget_info2(f->fid, &b, H5O_INFO_BASIC) >= 0 && a.addr == b.addr;
}

/* Link and attribute names as the API takes them: one component, valid as a name. */
static int check_name(const char *name, const char *what, h5ark_error *err) {
    if (!name || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "'%s' is not a valid %s name", name ? name : "",
                          what);
    return 0;
}

/* Whether a listing takes `name`: 0 to leave it out, 1 to list it, -1 when the listing is
 * full (a page's Limit, or LIST_MAX). Names up to the Marker are left out. */
static int listing_takes(const h5obj_args *a, bool *past_marker, const h5ark_value *list,
                         const char *name) {
    if (a->marker && !*past_marker) {
        *past_marker = strcmp(name, a->marker) == 0;
        return 0;
    }
    if (a->pattern && fnmatch(a->pattern, name, 0) != 0) return 0;
    size_t n = h5ark_value_len(list);
    return (a->limit > 0 && (int64_t)n >= a->limit) || n >= LIST_MAX ? -1 : 1;
}

/* ---- links ------------------------------------------------------------------------- */

static h5ark_value *link_json(const h5obj_file *f, hid_t g, const char *name,
                              const H5L_info_t *info) {
    h5ark_value *m = h5ark_value_map();
    if (!m) return NULL;
    int rc =
        set(m, "title", h5ark_value_str(name)) || set(m, "created", h5ark_value_float(f->created));
    if (rc == 0 && info->type == H5L_TYPE_HARD) {
        H5O_info_t oi;
        if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
            H5Eclear2(H5E_DEFAULT);
            oi.type = H5O_TYPE_UNKNOWN;
        }
        char kind = oi.type == H5O_TYPE_GROUP ? 'g' : oi.type == H5O_TYPE_DATASET ? 'd' : 't';
        rc = set(m, "class", h5ark_value_str("H5L_TYPE_HARD")) ||
             set(m, "id", h5obj_id_value(f, kind, info->u.address)) ||
             set(m, "collection",
                 h5ark_value_str(kind == 'g'   ? "groups"
                                 : kind == 'd' ? "datasets"
                                               : "datatypes"));
    } else if (rc == 0) {
        size_t n = info->u.val_size;
        char *buf = malloc(n + 1);
        rc = buf && H5Lget_val(g, name, buf, n, H5P_DEFAULT) >= 0 ? 0 : -1;
        if (rc == 0) buf[n] = '\0';
        if (rc == 0 && info->type == H5L_TYPE_SOFT) {
            rc = set(m, "class", h5ark_value_str("H5L_TYPE_SOFT")) ||
                 set(m, "h5path", h5ark_value_str(buf));
        } else if (rc == 0 && info->type == H5L_TYPE_EXTERNAL) {
            const char *file = NULL, *path = NULL;
            unsigned flags;
            rc = H5Lunpack_elink_val(buf, n, &flags, &file, &path) < 0 ||
                 set(m, "class", h5ark_value_str("H5L_TYPE_EXTERNAL")) ||
                 set(m, "h5path", h5ark_value_str(path)) ||
                 set(m, "h5domain", h5ark_value_str(file));
        } else if (rc == 0) {
            rc = set(m, "class", h5ark_value_str("H5L_TYPE_USER_DEFINED"));
        }
        free(buf);
        H5Eclear2(H5E_DEFAULT);
    }
    if (rc) h5ark_value_destroy(&m);
    return m;
}

typedef struct {
    const h5obj_file *f;
    const h5obj_args *a;
    const json_t *titles; /* POST .../links {"titles"}: only these (NULL: all) */
    bool root;
    bool past_marker;
    h5ark_value *list;
    haddr_t *groups; /* follow_links: the groups found below */
    size_t ngroups, cap;
    int failed;
} links_state;

/* follow_links: a group reached by a hard link, to be listed once. */
static int note_group(links_state *s, hid_t g, const char *name, const H5L_info_t *info) {
    H5O_info_t oi;
    if (info->type != H5L_TYPE_HARD ||
        H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
        oi.type != H5O_TYPE_GROUP) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    for (size_t i = 0; i < s->ngroups; i++)
        if (s->groups[i] == info->u.address) return 0;
    if (s->ngroups == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        haddr_t *n = realloc(s->groups, cap * sizeof *n);
        if (!n) return -1;
        s->groups = n;
        s->cap = cap;
    }
    s->groups[s->ngroups++] = info->u.address;
    return 0;
}

static herr_t one_link(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
    links_state *s = arg;
    if (s->root && strcmp(name, H5OBJ_HOLD) == 0) return 0;
    bool asked = !s->titles;
    for (size_t i = 0; !asked && i < json_array_size(s->titles); i++)
        asked = json_is_string(json_array_get(s->titles, i)) &&
                strcmp(json_string_value(json_array_get(s->titles, i)), name) == 0;
    if (!asked) return 0;
    /* every group below is followed, its link listed or not (HSDS: a pattern picks the
     * links listed, not the groups walked) */
    if (s->a->follow_links && note_group(s, g, name, info)) {
        s->failed = 1;
        return -1;
    }
    int takes = listing_takes(s->a, &s->past_marker, s->list, name);
    if (takes <= 0) return takes < 0 ? 1 : 0;
    h5ark_value *l = link_json(s->f, g, name, info);
    if (!l || h5ark_value_push(s->list, l)) {
        s->failed = 1;
        return -1;
    }
    return 0;
}

static h5ark_value *list_group(links_state *s, hid_t g, h5ark_error *err) {
    s->list = h5ark_value_array();
    s->root = is_root(s->f, g);
    s->past_marker = false;
    if (!s->list) {
        oom(err);
        return NULL;
    }
    H5_index_t idx =
        s->a->create_order && h5obj_tracks_order(g) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
    hsize_t at = 0;
    if (H5Literate(g, idx, H5_ITER_INC, &at, one_link, s) < 0 || s->failed) {
        H5Eclear2(H5E_DEFAULT);
        h5ark_value_destroy(&s->list);
        if (s->failed)
            oom(err);
        else
            h5ark_fail(err, H5ARK_BAD_REQUEST, "the group's links cannot be listed");
        return NULL;
    }
    return s->list;
}

/* by_id[id] = list; takes id and list. */
static int put_list(h5ark_value *by_id, h5ark_value *id, h5ark_value *list) {
    int rc = by_id && id ? h5ark_value_set(by_id, id->as.s.ptr, list) : -1;
    if (!by_id || !id) h5ark_value_destroy(&list);
    h5ark_value_destroy(&id);
    return rc;
}

int h5obj_links(const h5obj_file *f, hid_t g, const h5obj_args *a, h5obj_answer *out,
                h5ark_error *err) {
    links_state s = {.f = f, .a = a};
    json_t *body = NULL;
    if (a->body && a->body_len) { /* the links of these titles */
        json_error_t je;
        body = json_loadb(a->body, a->body_len, 0, &je);
        s.titles = json_object_get(body, "titles");
        if (!json_is_array(s.titles)) {
            json_decref(body);
            return h5ark_fail(err, H5ARK_BAD_REQUEST, "the body is {\"titles\": [names]}");
        }
    }
    h5ark_value *list = list_group(&s, g, err);
    json_decref(body);
    s.titles = NULL;
    if (!list) return -1;
    out->json = h5ark_value_map();
    if (!out->json) {
        h5ark_value_destroy(&list);
        return oom(err);
    }
    if (!a->follow_links) return h5ark_value_set(out->json, "links", list) ? oom(err) : 0;
    /* every group below by hard links, each listed once, under its id */
    h5ark_value *by_id = h5ark_value_map();
    H5O_info_t oi;
    H5Oget_info2(g, &oi, H5O_INFO_BASIC);
    h5ark_value *id = h5obj_id_value(f, 'g', oi.addr);
    int rc = put_list(by_id, id, list);
    for (size_t i = 0; rc == 0 && i < s.ngroups; i++) {
        if (s.groups[i] == oi.addr) continue;
        hid_t sub = H5Oopen_by_addr(f->fid, s.groups[i]);
        h5ark_value *l = sub >= 0 ? list_group(&s, sub, err) : NULL;
        if (sub >= 0) H5Oclose(sub);
        rc = l ? put_list(by_id, h5obj_id_value(f, 'g', s.groups[i]), l) : -1;
    }
    free(s.groups);
    if (rc || h5ark_value_set(out->json, "links", by_id)) {
        h5ark_value_destroy(&by_id);
        return err->code ? -1 : oom(err);
    }
    return 0;
}

int h5obj_link(const h5obj_file *f, hid_t g, const h5obj_args *a, h5obj_answer *out,
               h5ark_error *err) {
    if (check_name(a->name, "link", err)) return -1;
    H5L_info_t info;
    if ((is_root(f, g) && strcmp(a->name, H5OBJ_HOLD) == 0) ||
        H5Lexists(g, a->name, H5P_DEFAULT) <= 0 ||
        H5Lget_info(g, a->name, &info, H5P_DEFAULT) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return h5ark_fail(err, H5ARK_NOT_FOUND, "link '%s' not found", a->name);
    }
    h5ark_value *l = link_json(f, g, a->name, &info);
    out->json = h5ark_value_map();
    if (!l || !out->json || h5ark_value_set(out->json, "link", l) || h5obj_times(out->json, f)) {
        if (!out->json) h5ark_value_destroy(&l);
        return oom(err);
    }
    return 0;
}

/* ---- attributes -------------------------------------------------------------------- */

static h5ark_value *attr_json(const h5obj_file *f, hid_t obj, const char *name, bool value,
                              bool modified, h5ark_error *err) {
    hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
    if (attr < 0) {
        H5Eclear2(H5E_DEFAULT);
        h5ark_fail(err, H5ARK_BAD_REQUEST, "attribute '%s' cannot be read", name);
        return NULL;
    }
    hid_t type = H5Aget_type(attr), space = H5Aget_space(attr);
    h5ark_value *m = h5ark_value_map();
    h5ark_value *t = type >= 0 ? h5obj_type_json(type, err) : NULL;
    h5ark_value *s = t && space >= 0 ? h5obj_shape_json(space, err) : NULL;
    int rc = m && s ? 0 : -1;
    if (rc == 0) {
        rc = set(m, "name", h5ark_value_str(name)) || h5ark_value_set(m, "type", t) ||
             h5ark_value_set(m, "shape", s);
        t = s = NULL;
    }
    if (rc == 0) rc = set(m, "created", h5ark_value_float(f->created));
    if (rc == 0 && modified) rc = set(m, "lastModified", h5ark_value_float(f->modified));
    bool null_space = space >= 0 && H5Sget_simple_extent_type(space) == H5S_NULL;
    if (rc == 0 && value && !null_space) {
        h5ark_value *v = h5obj_attr_value(attr, err);
        rc = v ? h5ark_value_set(m, "value", v) : -1;
    }
    h5ark_value_destroy(&t);
    h5ark_value_destroy(&s);
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    H5Aclose(attr);
    if (rc) {
        h5ark_value_destroy(&m);
        if (!err->code) oom(err);
    }
    return m;
}

typedef struct {
    const h5obj_file *f;
    const h5obj_args *a;
    bool past_marker;
    h5ark_value *list;
    h5ark_error *err;
} attrs_state;

static herr_t one_attr(hid_t obj, const char *name, const H5A_info_t *info, void *arg) {
    (void)info;
    attrs_state *s = arg;
    int takes = listing_takes(s->a, &s->past_marker, s->list, name);
    if (takes <= 0) return takes < 0 ? 1 : 0;
    h5ark_value *m = attr_json(s->f, obj, name, s->a->include_data, false, s->err);
    if (!m || h5ark_value_push(s->list, m)) {
        if (!s->err->code) oom(s->err);
        return -1;
    }
    return 0;
}

static bool attrs_in_order(hid_t obj) {
    H5I_type_t t = H5Iget_type(obj);
    hid_t cpl = t == H5I_GROUP     ? H5Gget_create_plist(obj)
                : t == H5I_DATASET ? H5Dget_create_plist(obj)
                                   : H5I_INVALID_HID;
    unsigned flags = 0;
    if (cpl >= 0) {
        H5Pget_attr_creation_order(cpl, &flags);
        H5Pclose(cpl);
    }
    return (flags & H5P_CRT_ORDER_TRACKED) && (flags & H5P_CRT_ORDER_INDEXED);
}

/* POST .../attributes {"attr_names"}: those, in the order given; one missing is not_found. */
static int attrs_by_name(const h5obj_file *f, hid_t obj, const h5obj_args *a, h5ark_value *list,
                         h5ark_error *err) {
    json_error_t je;
    json_t *body = json_loadb(a->body, a->body_len, 0, &je);
    const json_t *names = json_object_get(body, "attr_names");
    int rc = json_is_array(names)
                 ? 0
                 : h5ark_fail(err, H5ARK_BAD_REQUEST, "the body is {\"attr_names\": [names]}");
    for (size_t i = 0; rc == 0 && i < json_array_size(names); i++) {
        const char *name = json_string_value(json_array_get(names, i));
        if (check_name(name, "attribute", err))
            rc = -1;
        else if (H5Aexists(obj, name) <= 0)
            rc = h5ark_fail(err, H5ARK_NOT_FOUND, "attribute '%s' not found", name);
        h5ark_value *m = rc ? NULL : attr_json(f, obj, name, a->include_data, false, err);
        if (rc == 0 && (!m || h5ark_value_push(list, m))) rc = err->code ? -1 : oom(err);
    }
    H5Eclear2(H5E_DEFAULT);
    json_decref(body);
    return rc;
}

int h5obj_attrs(const h5obj_file *f, hid_t obj, const h5obj_args *a, h5obj_answer *out,
                h5ark_error *err) {
    attrs_state s = {.f = f, .a = a, .list = h5ark_value_array(), .err = err};
    if (!s.list) return oom(err);
    H5_index_t idx = a->create_order && attrs_in_order(obj) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
    hsize_t at = 0;
    if (a->body && a->body_len) {
        if (attrs_by_name(f, obj, a, s.list, err)) {
            h5ark_value_destroy(&s.list);
            return -1;
        }
    } else if (H5Aiterate2(obj, idx, H5_ITER_INC, &at, one_attr, &s) < 0) {
        H5Eclear2(H5E_DEFAULT);
        h5ark_value_destroy(&s.list);
        return err->code ? -1
                         : h5ark_fail(err, H5ARK_BAD_REQUEST, "the attributes cannot be listed");
    }
    out->json = h5ark_value_map();
    if (!out->json || h5ark_value_set(out->json, "attributes", s.list)) {
        if (!out->json) h5ark_value_destroy(&s.list);
        return oom(err);
    }
    return 0;
}

int h5obj_attr(const h5obj_file *f, hid_t obj, const h5obj_args *a, h5obj_answer *out,
               h5ark_error *err) {
    if (check_name(a->name, "attribute", err)) return -1;
    if (H5Aexists(obj, a->name) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return h5ark_fail(err, H5ARK_NOT_FOUND, "attribute '%s' not found", a->name);
    }
    out->json = attr_json(f, obj, a->name, true, true, err);
    return out->json ? 0 : -1;
}
