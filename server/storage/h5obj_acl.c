/* A domain's ACL as HSDS's /acls routes give it (HSDS_API.md §2): the caller's rights on
 * the domain as every request is allowed by them (acl_allows), the entries of the ACL that
 * governs its folder (getacl's), and one user's entry changed as setacl changes a folder's
 * (acl_from_value, acl_write). Only with users: without, there are no ACLs (not_found,
 * which h5pyd's mode "a" takes as nothing to check). */
#include "storage/h5obj_int.h"

#include "storage/files.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static int users_only(const h5obj_args *a, h5ark_error *err) {
    if (file_access_on(a->fa)) return 0;
    return h5ark_fail(err, H5ARK_NOT_FOUND,
                      "ACLs apply when the token file names users, and it names none");
}

/* The folder of the domain's file, relative to the data directory; the caller must be
 * allowed to read the domain. */
static int domain_folder(const h5obj_args *a, char rel[PATH_MAX], h5ark_error *err) {
    h5obj_file f;
    if (users_only(a, err) || h5obj_locate(a, PERM_READ, &f, err)) return -1;
    *strrchr(f.abs, '/') = '\0';
    snprintf(rel, PATH_MAX, "%s", files_folder_rel(f.abs));
    return 0;
}

/* {"userName", "create", "read", ...}: HSDS's names are acl_perm_names. */
static h5ark_value *rights_value(const char *name, const bool allow[PERM_COUNT]) {
    h5ark_value *m = h5ark_value_map();
    int rc = h5ark_value_set(m, "userName", h5ark_value_str(name));
    for (int p = 0; rc == 0 && p < PERM_COUNT; p++)
        rc = h5ark_value_set(m, acl_perm_names[p], h5ark_value_bool(allow[p]));
    if (rc) h5ark_value_destroy(&m);
    return m;
}

static int answer(h5obj_answer *out, const char *key, h5ark_value *v, h5ark_error *err) {
    out->json = h5ark_value_map();
    if (!v || h5ark_value_set(out->json, key, v)) {
        h5ark_value_destroy(&out->json);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    return 0;
}

static int need_read_acl(const h5obj_args *a, const char *rel, h5ark_error *err) {
    int may = acl_allows(a->fa, rel, PERM_READ_ACL, err);
    if (may < 0) return -1;
    return may ? 0
               : h5ark_fail(err, H5ARK_FORBIDDEN,
                            "user %s lacks the permission readACL on domain '%s'", a->fa->user,
                            a->domain);
}

/* GET /acls/USER: the caller's own rights as they are decided; another user's entry of the
 * governing ACL (not_found when it names none), with readACL. GET /acls: every entry. */
int h5obj_acl_read(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    char rel[PATH_MAX], from[PATH_MAX];
    if (domain_folder(a, rel, err)) return -1;
    bool allow[PERM_COUNT];
    if (a->op == H5OBJ_ACL && strcmp(a->name, a->fa->user) == 0) {
        for (int p = 0; p < PERM_COUNT; p++) {
            int yes = acl_allows(a->fa, rel, (file_perm)p, err);
            if (yes < 0) return -1;
            allow[p] = yes;
        }
        return answer(out, "acl", rights_value(a->name, allow), err);
    }
    acl governing;
    bool dflt;
    if (need_read_acl(a, rel, err) || acl_of_folder(rel, &governing, from, sizeof from, &dflt, err))
        return -1;
    int rc = 0;
    if (a->op == H5OBJ_ACL) {
        size_t i = 0;
        while (i < governing.n && strcmp(governing.entries[i].subject, a->name) != 0)
            i++;
        rc = i == governing.n
                 ? h5ark_fail(err, H5ARK_NOT_FOUND, "the ACL of domain '%s' names no user '%s'",
                              a->domain, a->name)
                 : answer(out, "acl", rights_value(a->name, governing.entries[i].allow), err);
    } else {
        h5ark_value *list = h5ark_value_array();
        for (size_t i = 0; list && i < governing.n; i++)
            if (h5ark_value_push(
                    list, rights_value(governing.entries[i].subject, governing.entries[i].allow)))
                h5ark_value_destroy(&list);
        rc = answer(out, "acls", list, err);
    }
    acl_free(&governing);
    return rc;
}

/* The body's six booleans (a permission left out is false) as an ACL entry of `name`. */
static h5ark_value *entry_of_body(const h5obj_args *a, h5ark_error *err) {
    json_error_t je;
    json_t *j = a->body ? json_loadb(a->body, a->body_len, 0, &je) : NULL;
    h5ark_value *m = json_is_object(j) ? h5ark_value_map() : NULL;
    int rc = json_is_object(j) ? h5ark_value_set(m, "subject", h5ark_value_str(a->name))
                               : h5ark_fail(err, H5ARK_BAD_REQUEST,
                                            "the body is a JSON object of the permissions "
                                            "(\"read\": true, ...)");
    for (int p = 0; rc == 0 && p < PERM_COUNT; p++) {
        json_t *v = json_object_get(j, acl_perm_names[p]);
        if (v && !json_is_boolean(v))
            rc = h5ark_fail(err, H5ARK_BAD_REQUEST, "the permission %s is true or false",
                            acl_perm_names[p]);
        else if (h5ark_value_set(m, acl_perm_names[p], h5ark_value_bool(json_is_true(v))))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    json_decref(j);
    if (rc) h5ark_value_destroy(&m);
    return m;
}

/* PUT /acls/USER: USER's entry in the ACL of the domain's folder set to the body's rights,
 * the other entries kept (those it inherited copied into the folder's own), written as
 * setacl writes one; needs updateACL there. */
int h5obj_acl_write(const h5obj_args *a, h5obj_answer *out, h5ark_error *err) {
    char rel[PATH_MAX], from[PATH_MAX], folder[PATH_MAX], abs[PATH_MAX];
    if (domain_folder(a, rel, err)) return -1;
    /* the folder as the caller names it: from the data directory's root */
    if (snprintf(folder, sizeof folder, "/%s", rel) >= (int)sizeof folder)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "the domain '%s' is too long", a->domain);
    h5ark_value *entry = entry_of_body(a, err);
    if (!entry) return -1;
    acl governing, next;
    bool dflt;
    if (files_resolve_folder(a->fa, PERM_UPDATE_ACL, folder, abs, err) ||
        acl_of_folder(rel, &governing, from, sizeof from, &dflt, err)) {
        h5ark_value_destroy(&entry);
        return -1;
    }
    h5ark_value *list = acl_to_value(&governing);
    acl_free(&governing);
    size_t i = 0;
    for (; list && i < list->as.a.len; i++) {
        const h5ark_value *s = h5ark_value_get(list->as.a.items[i], "subject");
        if (s && strcmp(s->as.s.ptr, a->name) == 0) break;
    }
    if (list && i < list->as.a.len) {
        h5ark_value_destroy(&list->as.a.items[i]);
        list->as.a.items[i] = entry;
    } else if (h5ark_value_push(list, entry)) {
        h5ark_value_destroy(&list);
    }
    if (!list) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = acl_from_value(list, &next, err);
    h5ark_value_destroy(&list);
    if (rc) return -1;
    bool allow[PERM_COUNT] = {0};
    for (size_t k = 0; k < next.n; k++)
        if (strcmp(next.entries[k].subject, a->name) == 0)
            memcpy(allow, next.entries[k].allow, sizeof allow);
    rc = acl_write(abs, &next, folder, err);
    acl_free(&next);
    if (rc) return -1;
    out->created = true;
    return answer(out, "acl", rights_value(a->name, allow), err);
}
