/* Unit tests of the registry's namespaces: names per owner, OWNER/NAME and grants, usage
 * charged by arrays and given back with them, the quotas refused before allocating, and
 * what a checkpoint needs (registry_grants_of, registry_restore). */
#include "check.h"
#include "config.h"
#include "locales.h"
#include "registry.h"

#include <stdlib.h>

config_t config; /* the daemon's is defined in main.c, which tests do not link */

static const char *const physics[] = {"physics"};
static const user alice = {.name = "alice",
                           .groups = physics,
                           .ngroups = 1,
                           .quota = {.memory = 1000, .disk = -1, .objects = 2, .requests = -1}};
static const user bob = {.name = "bob", .quota = {-1, -1, -1, -1}};

static object *array(uint64_t n) {
    h5ark_error err;
    object *o = object_new_pdarray(H5ARK_INT64, n, &err);
    CHECK(o != NULL);
    return o;
}

static void test_names_and_grants(void) {
    h5ark_error err;
    registry_scope outer = registry_enter(&alice, false);
    object *x = array(10);
    CHECK(registry_publish(x, "x", &err) == 0);
    object_release(x);
    registry_enter(&bob, false);
    object *bx = array(1);
    CHECK(registry_publish(bx, "x", &err) == 0); /* bob's own x */
    object_release(bx);
    CHECK(registry_get("alice/x", &err) == NULL && err.code == H5ARK_NOT_FOUND);
    object *y = array(1);
    CHECK(registry_publish(y, "alice/y", &err) != 0 && err.code == H5ARK_NOT_FOUND);
    object_release(y);

    registry_enter(&alice, false);
    const char *with[] = {"g:physics"};
    h5ark_value *grants = NULL;
    CHECK(registry_share("x", with, 1, true, &grants, &err) == 0);
    CHECK(grants && h5ark_value_len(grants) == 1);
    h5ark_value_destroy(&grants);

    registry_enter(&bob, false);
    object *got = registry_get("alice/x", &err);
    CHECK(got == NULL); /* bob is in no group */
    const char *const bobs_groups[] = {"physics"};
    user bob2 = bob;
    bob2.groups = bobs_groups;
    bob2.ngroups = 1;
    registry_enter(&bob2, false);
    got = registry_get("alice/x", &err);
    CHECK(got && got->size == 10 && strcmp(got->owner, "alice") == 0);
    CHECK(registry_remove("alice/x", &err) != 0 && err.code == H5ARK_FORBIDDEN);
    h5ark_value *of = got ? registry_grants_of(got) : NULL;
    CHECK(of && h5ark_value_len(of) == 1 &&
          strcmp(h5ark_value_at(of, 0)->as.s.ptr, "g:physics") == 0);
    h5ark_value_destroy(&of);
    object_release(got);
    registry_leave(outer);
}

static void test_usage_and_quotas(void) {
    h5ark_error err;
    uint64_t mem, objs;
    registry_scope outer = registry_enter(&alice, false);
    registry_usage_of("alice", &mem, &objs);
    CHECK_INT(mem, 80); /* x: 10 int64 */
    CHECK_INT(objs, 1);
    object *big = object_new_pdarray(H5ARK_INT64, 200, &err); /* 1600 > 1000 */
    CHECK(big == NULL && err.code == H5ARK_RESOURCE_LIMIT && strstr(err.message, "quota.memory"));
    registry_usage_of("alice", &mem, &objs);
    CHECK_INT(mem, 80); /* nothing charged by the refusal */
    object *y = array(100);
    CHECK(registry_publish(y, NULL, &err) == 0);
    registry_usage_of("alice", &mem, &objs);
    CHECK_INT(mem, 880);
    CHECK_INT(objs, 2);
    object *z = object_new_pdarray(H5ARK_INT8, 1, &err); /* at quota.objects */
    CHECK(z == NULL && strstr(err.message, "quota.objects"));
    CHECK(registry_remove(y->name, &err) == 0);
    registry_usage_of("alice", &mem, &objs);
    CHECK_INT(mem, 880); /* y is still held here */
    CHECK_INT(objs, 1);
    object_release(y);
    registry_usage_of("alice", &mem, &objs);
    CHECK_INT(mem, 80);
    registry_leave(outer);
}

static void test_restore(void) {
    h5ark_error err;
    const char *grants[] = {"bob", "*"};
    object *r = array(3);
    CHECK(registry_restore(r, "carol", "r", grants, 2, &err) == 0);
    CHECK(strcmp(r->owner, "carol") == 0);
    h5ark_value *of = registry_grants_of(r);
    CHECK(of && h5ark_value_len(of) == 2);
    h5ark_value_destroy(&of);
    object_release(r);
    registry_scope outer = registry_enter(&bob, false);
    object *got = registry_get("carol/r", &err);
    CHECK(got != NULL);
    object_release(got);
    registry_leave(outer);
    size_t n;
    CHECK(registry_clear_all(&n, &err) == 0);
    CHECK_INT(n, 3);
    uint64_t mem, objs;
    registry_usage_of("alice", &mem, &objs);
    CHECK_INT(mem, 0);
    CHECK_INT(objs, 0);
}

int main(void) {
    if (locales_start(2, 0, 1) != 0) return 1;
    registry_init(UINT64_C(1) << 30);
    test_names_and_grants();
    test_usage_and_quotas();
    test_restore();
    registry_shutdown();
    locales_stop();
    return check_exit("test_namespaces");
}
