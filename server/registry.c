/* The object registry (see registry.h): a chained hash table of published objects. */
#include "registry.h"

#include "dist/ranks.h"
#include "shardcache.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An owner: a user that has published an object or made an array. Never freed before
 * registry_shutdown, so objects and arrays may point at it whatever the token file says. */
struct registry_account {
    char name[65];
    atomic_uint_fast64_t memory; /* bytes of live arrays charged to it */
    uint64_t objects;            /* objects published under its names (under lock) */
    struct registry_account *next;
};

typedef struct entry {
    object *obj;
    registry_account *owner; /* NULL: published with users off */
    struct entry *next;
} entry;

/* A grant of read access on an owner's name, to subjects ("bob", "g:physics", "*"). */
typedef struct grant {
    registry_account *owner;
    char *name;
    char **subjects;
    size_t n;
    struct grant *next;
} grant;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry **buckets;
static size_t nbuckets, nobjects;
static atomic_uint_fast64_t memory_used;
static atomic_uint_fast64_t changes; /* publishes and removals: has anything changed */
static uint64_t memory_limit;
static registry_account *accounts; /* under lock */
static grant *grants;              /* under lock */
static _Thread_local registry_scope scope;

static uint64_t hash(const registry_account *owner, const char *s) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)owner;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void registry_init(uint64_t max_memory) {
    memory_limit = max_memory;
    nbuckets = 1024;
    buckets = calloc(nbuckets, sizeof *buckets);
}

static void grant_free(grant *g) {
    for (size_t i = 0; i < g->n; i++)
        free(g->subjects[i]);
    free(g->subjects);
    free(g->name);
    free(g);
}

void registry_shutdown(void) {
    size_t n;
    registry_clear_all(&n, NULL);
    free(buckets);
    buckets = NULL;
    for (grant *g = grants, *next; g; g = next) {
        next = g->next;
        grant_free(g);
    }
    grants = NULL;
    for (registry_account *a = accounts, *next; a; a = next) {
        next = a->next;
        free(a);
    }
    accounts = NULL;
}

int registry_reserve_only(uint64_t bytes, h5ark_error *err) {
    uint64_t used = atomic_load(&memory_used);
    do {
        if (bytes > memory_limit || used > memory_limit - bytes)
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                              "needs %llu bytes but only %llu of the daemon's --max-memory "
                              "%llu are free",
                              (unsigned long long)bytes,
                              (unsigned long long)(used < memory_limit ? memory_limit - used : 0),
                              (unsigned long long)memory_limit);
    } while (!atomic_compare_exchange_weak(&memory_used, &used, used + bytes));
    return 0;
}

void registry_make_room(void) {
    uint64_t used = atomic_load(&memory_used);
    shardcache_fit(used < memory_limit ? memory_limit - used : 0);
}

int registry_reserve(uint64_t bytes, h5ark_error *err) {
    if (registry_reserve_only(bytes, err)) return -1;
    registry_make_room();
    return 0;
}

void registry_unreserve(uint64_t bytes) {
    atomic_fetch_sub(&memory_used, bytes);
}
int registry_scratch(uint64_t bytes, void **p, uint64_t *reserved, h5ark_error *err) {
    *p = NULL;
    if (registry_reserve(bytes, err)) return -1;
    if (!(*p = malloc(bytes ? bytes : 1))) {
        registry_unreserve(bytes);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory allocating %llu bytes",
                          (unsigned long long)bytes);
    }
    *reserved += bytes;
    return 0;
}

int registry_scratch_agreed(uint64_t bytes, void **p, uint64_t *reserved, h5ark_error *err) {
    return ranks_agree(registry_scratch(bytes, p, reserved, err), err);
}

uint64_t registry_memory_used(void) {
    return atomic_load(&memory_used);
}
uint64_t registry_memory_limit(void) {
    return memory_limit;
}

uint64_t registry_changes(void) {
    return atomic_load(&changes);
}

size_t registry_count(void) {
    pthread_mutex_lock(&lock);
    size_t n = nobjects;
    pthread_mutex_unlock(&lock);
    return n;
}

int registry_check_name(const char *name, h5ark_error *err) {
    size_t n = strlen(name);
    if (n == 0 || n >= REGISTRY_MAX_NAME)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "object names must be 1 to %d bytes long",
                          REGISTRY_MAX_NAME - 1);
    for (const char *p = name; *p; p++)
        if (iscntrl((unsigned char)*p) || *p == '/')
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "object name '%s' contains '/' or a control character", name);
    return 0;
}

/* ---- namespaces ---------------------------------------------------------------------- */

/* An object a scope replaced under a name: kept until the scope is left, so that a publish
 * the other ranks refused can put it back. */
typedef struct registry_undo {
    object *obj, *old;           /* the new object and the one it replaced (references) */
    registry_account *from, *to; /* arrays of obj alone moved from the caller to the owner */
    struct registry_undo *next;
} registry_undo;

registry_scope registry_enter(const user *who, bool admin) {
    registry_scope previous = scope;
    scope = (registry_scope){who, admin, previous.users, NULL};
    return previous;
}

void registry_enter_users(const users_table *t) {
    if (t) scope.users = t;
}

void registry_leave(registry_scope previous) {
    for (registry_undo *u = scope.undo, *next; u; u = next) {
        next = u->next;
        object_release(u->obj);
        object_release(u->old);
        free(u);
    }
    scope = previous;
}

const char *registry_viewer(void) {
    return scope.who ? scope.who->name : NULL;
}

const char *registry_name_for(const object *obj, char *buf) {
    const char *viewer = registry_viewer();
    if (!obj->owner || !obj->name || (viewer && strcmp(viewer, obj->owner) == 0)) return obj->name;
    snprintf(buf, REGISTRY_MAX_NAME * 2, "%s/%s", obj->owner, obj->name);
    return buf;
}

/* The account named `name` (under lock); made when `make`. NULL: none, or out of memory. */
static registry_account *account_of(const char *name, bool make) {
    for (registry_account *a = accounts; a; a = a->next)
        if (strcmp(a->name, name) == 0) return a;
    if (!make || strlen(name) >= sizeof accounts->name) return NULL;
    registry_account *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    strcpy(a->name, name);
    a->next = accounts;
    accounts = a;
    return a;
}

/* The caller's account (under lock); NULL when users are off (or out of memory). */
static registry_account *me(void) {
    return scope.who ? account_of(scope.who->name, true) : NULL;
}

void registry_usage_of(const char *owner, uint64_t *memory, uint64_t *objects) {
    pthread_mutex_lock(&lock);
    registry_account *a = owner ? account_of(owner, false) : NULL;
    *memory = a ? atomic_load(&a->memory) : 0;
    *objects = a ? a->objects : 0;
    pthread_mutex_unlock(&lock);
}

int registry_charge(uint64_t bytes, registry_account **to, h5ark_error *err) {
    *to = NULL;
    if (!scope.who) return 0;
    pthread_mutex_lock(&lock);
    registry_account *a = me();
    uint64_t objects = a ? a->objects : 0;
    pthread_mutex_unlock(&lock);
    if (!a) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int64_t quota = scope.who->quota.objects;
    if (quota >= 0 && objects >= (uint64_t)quota)
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                          "quota.objects: '%s' holds %llu objects, the quota is %lld; delete "
                          "some first",
                          a->name, (unsigned long long)objects, (long long)quota);
    quota = scope.who->quota.memory;
    uint64_t used = atomic_load(&a->memory);
    do {
        if (quota >= 0 && (bytes > (uint64_t)quota || used > (uint64_t)quota - bytes))
            return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                              "quota.memory: '%s' uses %llu bytes and needs %llu more, the "
                              "quota is %lld bytes",
                              a->name, (unsigned long long)used, (unsigned long long)bytes,
                              (long long)quota);
    } while (!atomic_compare_exchange_weak(&a->memory, &used, used + bytes));
    *to = a;
    return 0;
}

void registry_uncharge(registry_account *account, uint64_t bytes) {
    if (account) atomic_fetch_sub(&account->memory, bytes);
}

static entry **find(const registry_account *owner, const char *name) {
    entry **e = &buckets[hash(owner, name) % nbuckets];
    while (*e && ((*e)->owner != owner || strcmp((*e)->obj->name, name) != 0))
        e = &(*e)->next;
    return e;
}

static grant *grant_of(const registry_account *owner, const char *name) {
    for (grant *g = grants; g; g = g->next)
        if (g->owner == owner && strcmp(g->name, name) == 0) return g;
    return NULL;
}

/* Whether the caller may read owner's `name` (under lock). */
static bool readable(const registry_account *owner, const char *name) {
    if (!scope.who || scope.admin || (owner && strcmp(owner->name, scope.who->name) == 0))
        return true;
    grant *g = grant_of(owner, name);
    for (size_t i = 0; g && i < g->n; i++) {
        const char *s = g->subjects[i];
        if (strcmp(s, "*") == 0 || strcmp(s, scope.who->name) == 0 ||
            (strncmp(s, "g:", 2) == 0 && user_in_group(scope.who, s + 2)))
            return true;
    }
    return false;
}

/* A name as the caller gave it, resolved (under lock): whose it is and its published name,
 * and what follows (a component path, or NULL). Users on: the caller's own object named
 * by the first part, else `OWNER/NAME`; users off: the first part. owner NULL and
 * ok false: no such owner. */
typedef struct target {
    registry_account *owner;
    char name[REGISTRY_MAX_NAME];
    const char *rest;
    bool ok;
} target;

static bool take_part(const char *s, char *out, const char **rest) {
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= REGISTRY_MAX_NAME) return false;
    memcpy(out, s, n);
    out[n] = '\0';
    *rest = slash ? slash + 1 : NULL;
    return true;
}

static target resolve(const char *name) {
    target t = {0};
    if (!take_part(name, t.name, &t.rest)) return t;
    t.owner = me();
    t.ok = true;
    if (!scope.who || *find(t.owner, t.name) || !t.rest) return t;
    /* OWNER/NAME[/component...] */
    char owner[REGISTRY_MAX_NAME];
    memcpy(owner, t.name, sizeof owner);
    t.ok = take_part(t.rest, t.name, &t.rest) && (t.owner = account_of(owner, false));
    return t;
}

static void not_found(const char *name, h5ark_error *err) {
    h5ark_fail(err, H5ARK_NOT_FOUND, "no object named '%.300s'", name);
}

object *registry_get(const char *name, h5ark_error *err) {
    /* "parent/component/..." reaches inside composites (published names have no '/') */
    pthread_mutex_lock(&lock);
    target t = resolve(name);
    entry *e = t.ok ? *find(t.owner, t.name) : NULL;
    object *obj = e && readable(e->owner, t.name) ? object_ref(e->obj) : NULL;
    pthread_mutex_unlock(&lock);
    for (const char *part = t.rest, *slash; obj && part; part = slash ? slash + 1 : NULL) {
        slash = strchr(part, '/');
        size_t len = slash ? (size_t)(slash - part) : strlen(part);
        object *child = NULL;
        for (size_t i = 0; i < obj->ncomponents; i++)
            if (strlen(obj->components[i].name) == len &&
                memcmp(obj->components[i].name, part, len) == 0)
                child = object_ref(obj->components[i].obj);
        object_release(obj);
        obj = child;
    }
    if (!obj) not_found(name, err);
    return obj;
}

/* Refuse the caller's change to another's name (under lock): forbidden when the caller may
 * read it, not_found when not (no one learns what others hold). */
static int not_theirs(const target *t, const char *name, const char *what, h5ark_error *err) {
    if (t->ok && *find(t->owner, t->name) && readable(t->owner, t->name))
        return h5ark_fail(err, H5ARK_FORBIDDEN, "only the owner of '%.300s' may %s it", name, what);
    not_found(name, err);
    return -1;
}

static void grow(void);

/* Bytes of obj's arrays charged to `a` that obj alone holds (no other object shares the
 * array or the component): what moves with obj to another owner. */
static uint64_t alone_bytes(const object *obj, const registry_account *a) {
    uint64_t n = 0;
    const darray *arrays[] = {obj->values, obj->segments};
    for (size_t i = 0; i < 2; i++)
        if (arrays[i] && arrays[i]->account == a && atomic_load(&arrays[i]->refs) == 1)
            n += arrays[i]->charged;
    for (size_t i = 0; i < obj->ncomponents; i++)
        if (atomic_load(&obj->components[i].obj->refs) == 1)
            n += alone_bytes(obj->components[i].obj, a);
    return n;
}

/* Move the charges of alone_bytes(obj, from) to `to` (under lock). */
static void rehome(object *obj, registry_account *from, registry_account *to) {
    darray *arrays[] = {obj->values, obj->segments};
    for (size_t i = 0; i < 2; i++)
        if (arrays[i] && arrays[i]->account == from && atomic_load(&arrays[i]->refs) == 1) {
            atomic_fetch_sub(&from->memory, arrays[i]->charged);
            atomic_fetch_add(&to->memory, arrays[i]->charged);
            arrays[i]->account = to;
        }
    for (size_t i = 0; i < obj->ncomponents; i++)
        if (atomic_load(&obj->components[i].obj->refs) == 1)
            rehome(obj->components[i].obj, from, to);
}

/* An admin's object going to `owner` in place of `old`: refused past the owner's
 * quota.memory (found in the scope's token table; where none is held, rank 0's decision
 * holds once the ranks agree). */
static int owner_room(const registry_account *owner, const object *obj, const object *old,
                      h5ark_error *err) {
    const user *u = scope.users ? users_find(scope.users, owner->name) : NULL;
    int64_t quota = u ? u->quota.memory : -1;
    if (quota < 0) return 0;
    registry_account *caller = me();
    uint64_t need = alone_bytes(obj, caller), used = atomic_load(&owner->memory);
    uint64_t freed = old ? alone_bytes(old, (registry_account *)owner) : 0;
    used -= freed < used ? freed : used;
    if (need <= (uint64_t)quota && used <= (uint64_t)quota - need) return 0;
    return h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                      "quota.memory: '%s' uses %llu bytes and needs %llu more, the quota is "
                      "%lld bytes",
                      owner->name, (unsigned long long)used, (unsigned long long)need,
                      (long long)quota);
}

/* Where a publish of `name` goes (under lock): the caller's namespace, or (an admin over
 * another's existing name) that owner's, *over set. -1 with err when it may not. */
static int publish_target(const char **name, target *t, registry_account **owner, bool *over,
                          h5ark_error *err) {
    *over = false;
    if (!*name || !scope.who || !strchr(*name, '/')) return 0;
    *t = resolve(*name);
    if (t->rest)
        return h5ark_fail(err, H5ARK_BAD_REQUEST, "object name '%.300s' contains '/'", *name);
    if (t->ok && t->owner != *owner) {
        if (!scope.admin) return not_theirs(t, *name, "replace", err);
        if (!*find(t->owner, t->name)) /* SERVICE.md §2: never created for another owner */
            return h5ark_fail(err, H5ARK_NOT_FOUND,
                              "no object named '%.300s': another user's name is replaced, never "
                              "created",
                              *name);
        *owner = t->owner;
        *over = true;
    } else if (!t->ok) {
        if (!scope.admin) return not_theirs(t, *name, "replace", err);
        return h5ark_fail(err, H5ARK_NOT_FOUND,
                          "no object named '%.300s': another user's name is replaced, never "
                          "created",
                          *name);
    }
    *name = t->name; /* the caller's own OWNER/NAME, or the owner's NAME */
    return 0;
}

/* Put obj in place of the object in *slot (under lock), kept to undo until the scope ends. */
static int swap_in(entry *e, object *obj, registry_account *from, registry_account *to,
                   h5ark_error *err) {
    registry_undo *u = malloc(sizeof *u);
    char *copy = strdup(e->obj->name);
    if (!u || !copy) {
        free(u);
        free(copy);
        return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (from && to && from != to) rehome(obj, from, to);
    free(obj->name);
    obj->name = copy;
    obj->owner = e->owner ? e->owner->name : NULL;
    *u = (registry_undo){object_ref(obj), e->obj, from, to, scope.undo};
    scope.undo = u;
    e->obj = object_ref(obj);
    atomic_fetch_add(&changes, 1);
    return 0;
}

static int publish_as(object *obj, const char *name, bool replace, h5ark_error *err) {
    char generated[48];
    pthread_mutex_lock(&lock);
    registry_account *caller = me(), *owner = caller;
    target t = {0};
    bool over;
    int rc = publish_target(&name, &t, &owner, &over, err);
    if (rc == 0 && name) rc = registry_check_name(name, err);
    if (rc == 0 && scope.who && !owner) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0 && !name) {
        /* generated names start with "id_", which client names may also use: skip taken ones
         * (the layer makes them the same on every rank of a call) */
        do
            ranks_call_name(generated, sizeof generated);
        while (*find(owner, generated));
        name = generated;
    }
    entry **slot = rc == 0 ? find(owner, name) : NULL;
    if (rc == 0 && *slot && (replace || over)) {
        rc = over ? owner_room(owner, obj, (*slot)->obj, err) : 0;
        if (rc == 0) rc = swap_in(*slot, obj, caller, owner, err);
        pthread_mutex_unlock(&lock);
        return rc;
    }
    if (rc == 0 && *slot)
        rc = h5ark_fail(err, H5ARK_ALREADY_EXISTS, "an object named '%s' already exists", name);
    int64_t quota = scope.who ? scope.who->quota.objects : -1;
    if (rc == 0 && quota >= 0 && owner->objects >= (uint64_t)quota)
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT,
                        "quota.objects: '%s' holds %llu objects, the quota is %lld; delete some "
                        "first",
                        owner->name, (unsigned long long)owner->objects, (long long)quota);
    entry *e = rc == 0 ? malloc(sizeof *e) : NULL;
    char *copy = rc == 0 ? strdup(name) : NULL;
    if (rc == 0 && (!e || !copy)) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc) {
        pthread_mutex_unlock(&lock);
        free(e);
        free(copy);
        return -1;
    }
    free(obj->name);
    obj->name = copy;
    obj->owner = owner ? owner->name : NULL;
    e->obj = object_ref(obj);
    e->owner = owner;
    e->next = NULL;
    *slot = e;
    if (owner) owner->objects++;
    if (++nobjects > nbuckets) grow();
    atomic_fetch_add(&changes, 1);
    pthread_mutex_unlock(&lock);
    return 0;
}

int registry_publish(object *obj, const char *name, h5ark_error *err) {
    return publish_as(obj, name, false, err);
}

int registry_replace(object *obj, const char *name, h5ark_error *err) {
    return publish_as(obj, name, true, err);
}

/* Unlink *slot (under lock); the caller releases the entry. */
static entry *unlink_entry(entry **slot) {
    entry *e = *slot;
    *slot = e->next;
    nobjects--;
    atomic_fetch_add(&changes, 1);
    if (e->owner) e->owner->objects--;
    return e;
}

static void entry_free(entry *e) {
    object_release(e->obj);
    free(e);
}

static int remove_as(const char *name, bool admin_may, bool check_only, h5ark_error *err) {
    pthread_mutex_lock(&lock);
    target t = resolve(name);
    entry **slot = t.ok ? find(t.owner, t.name) : NULL;
    entry *e = NULL;
    int rc = 0;
    if (slot && *slot && t.rest) { /* a component: nothing to delete, as before */
        if (!check_only || !readable(t.owner, t.name)) not_found(name, err), rc = -1;
    } else if (!slot || !*slot)
        not_found(name, err), rc = -1;
    else if (t.owner != me() && !(admin_may && scope.admin))
        rc = not_theirs(&t, name, "delete", err);
    else if (!check_only)
        e = unlink_entry(slot);
    pthread_mutex_unlock(&lock);
    if (e) entry_free(e);
    return rc;
}

void registry_unpublish(object *obj) {
    if (!obj->name) return;
    object *drop = NULL;
    entry *gone = NULL;
    pthread_mutex_lock(&lock);
    registry_account *owner = obj->owner ? account_of(obj->owner, false) : NULL;
    entry **slot = find(owner, obj->name);
    registry_undo **u = &scope.undo;
    while (*u && (*u)->obj != obj)
        u = &(*u)->next;
    if (*slot && (*slot)->obj == obj) {
        if (*u) { /* it replaced an object: that one is back */
            registry_undo *x = *u;
            *u = x->next;
            drop = obj;
            (*slot)->obj = x->old;
            if (x->from && x->to && x->from != x->to) rehome(obj, x->to, x->from);
            atomic_fetch_add(&changes, 1);
            object_release(x->obj);
            free(x);
        } else {
            gone = unlink_entry(slot);
        }
    }
    pthread_mutex_unlock(&lock);
    object_release(drop);
    if (gone) entry_free(gone);
}

int registry_remove(const char *name, h5ark_error *err) {
    return remove_as(name, false, false, err);
}

int registry_delete(const char *name, bool check_only, h5ark_error *err) {
    return remove_as(name, true, check_only, err);
}

/* Unlink every entry of `owner` (all: every entry) and, for an owner, its grants. */
static size_t clear_where(bool all, const registry_account *owner) {
    pthread_mutex_lock(&lock);
    entry *gone = NULL;
    size_t n = 0;
    for (size_t i = 0; buckets && i < nbuckets; i++)
        for (entry **slot = &buckets[i]; *slot;) {
            if (!all && (*slot)->owner != owner) {
                slot = &(*slot)->next;
                continue;
            }
            entry *e = unlink_entry(slot);
            e->next = gone;
            gone = e;
            n++;
        }
    for (grant **g = &grants; *g;) {
        grant *x = *g;
        if (all || x->owner == owner) {
            *g = x->next;
            grant_free(x);
        } else {
            g = &x->next;
        }
    }
    atomic_fetch_add(&changes, 1); /* grants too are in a checkpoint */
    pthread_mutex_unlock(&lock);
    for (entry *e = gone, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    return n;
}

size_t registry_clear(void) {
    if (!scope.who) return clear_where(true, NULL);
    pthread_mutex_lock(&lock);
    registry_account *owner = me();
    pthread_mutex_unlock(&lock);
    return owner ? clear_where(false, owner) : 0;
}

int registry_clear_all(size_t *deleted, h5ark_error *err) {
    if (scope.who && !scope.admin)
        return h5ark_fail(err, H5ARK_FORBIDDEN,
                          "clear of every user's objects needs the admin role");
    *deleted = clear_where(true, NULL);
    return 0;
}

/* A share's subject: a user name, "g:GROUP" or "*" (SERVICE.md §1's names). */
static bool subject_ok(const char *s) {
    if (strcmp(s, "*") == 0) return true;
    if (strncmp(s, "g:", 2) == 0) s += 2;
    size_t n = strlen(s);
    if (n == 0 || n > 64) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_.-", *s)) return false;
    return true;
}

static int grant_change(grant *g, const char *subject, bool share) {
    size_t i = 0;
    while (i < g->n && strcmp(g->subjects[i], subject) != 0)
        i++;
    if (!share) {
        if (i < g->n) {
            free(g->subjects[i]);
            g->subjects[i] = g->subjects[--g->n];
        }
        return 0;
    }
    if (i < g->n) return 0;
    char **more = realloc(g->subjects, (g->n + 1) * sizeof *more);
    if (more) g->subjects = more;
    char *copy = more ? strdup(subject) : NULL;
    if (!copy) return -1;
    g->subjects[g->n++] = copy;
    return 0;
}

static int by_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int registry_share(const char *name, const char *const *subjects, size_t n, bool share,
                   h5ark_value **out, h5ark_error *err) {
    *out = NULL;
    for (size_t i = 0; i < n; i++)
        if (!subject_ok(subjects[i]))
            return h5ark_fail(err, H5ARK_BAD_REQUEST,
                              "'%.100s' is not a user, g:GROUP or *: share with those",
                              subjects[i]);
    if (!scope.who)
        return h5ark_fail(err, H5ARK_BAD_REQUEST,
                          "sharing needs users (a token file naming user=): every caller "
                          "already sees every object");
    pthread_mutex_lock(&lock);
    target t = resolve(name);
    entry *e = t.ok && !t.rest ? *find(t.owner, t.name) : NULL;
    int rc = 0;
    if (!e)
        not_found(name, err), rc = -1;
    else if (t.owner != me() && !scope.admin)
        rc = not_theirs(&t, name, share ? "share" : "unshare", err);
    grant *g = rc ? NULL : grant_of(t.owner, t.name);
    if (rc == 0 && !g && share) {
        if (!(g = calloc(1, sizeof *g)) || !(g->name = strdup(t.name))) {
            free(g);
            g = NULL;
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
        } else {
            g->owner = t.owner;
            g->next = grants;
            grants = g;
        }
    }
    for (size_t i = 0; rc == 0 && g && i < n; i++)
        if (grant_change(g, subjects[i], share))
            rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    h5ark_value *list = rc == 0 ? h5ark_value_array() : NULL;
    if (g && g->n) qsort(g->subjects, g->n, sizeof *g->subjects, by_str);
    if (rc == 0) atomic_fetch_add(&changes, 1);
    for (size_t i = 0; list && g && i < g->n; i++)
        if (h5ark_value_push(list, h5ark_value_str(g->subjects[i]))) h5ark_value_destroy(&list);
    pthread_mutex_unlock(&lock);
    if (rc == 0 && !list) return h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    *out = list;
    return rc;
}

h5ark_value *registry_grants_of(const object *obj) {
    h5ark_value *list = h5ark_value_array();
    pthread_mutex_lock(&lock);
    registry_account *owner = obj->owner ? account_of(obj->owner, false) : NULL;
    grant *g = obj->name ? grant_of(owner, obj->name) : NULL;
    for (size_t i = 0; list && g && i < g->n; i++)
        if (h5ark_value_push(list, h5ark_value_str(g->subjects[i]))) h5ark_value_destroy(&list);
    pthread_mutex_unlock(&lock);
    return list;
}

/* Charge obj's arrays that no account holds (read with no caller in scope) to `to`: the
 * owner's usage is then what it was before the checkpoint. Uncharged as ever when the
 * arrays go. A darray shared by two objects (an arrayview's) is charged once. */
static void adopt(object *obj, registry_account *to) {
    darray *arrays[] = {obj->values, obj->segments};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
        if (arrays[i] && !arrays[i]->account) {
            arrays[i]->account = to;
            atomic_fetch_add(&to->memory, arrays[i]->charged);
        }
    for (size_t i = 0; i < obj->ncomponents; i++)
        adopt(obj->components[i].obj, to);
}

int registry_restore(object *obj, const char *owner, const char *name, const char *const *grants,
                     size_t ngrants, h5ark_error *err) {
    /* as the owner would publish and share it, an admin's scope for the grants; no quota
     * refuses what the owner held before */
    user as = {.name = owner, .quota = {-1, -1, -1, -1}};
    registry_scope previous = registry_enter(owner ? &as : NULL, true);
    h5ark_value *list = NULL;
    int rc = 0;
    if (owner) {
        pthread_mutex_lock(&lock);
        registry_account *to = me();
        if (to) adopt(obj, to);
        pthread_mutex_unlock(&lock);
        if (!to) rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    }
    if (rc == 0) rc = registry_publish(obj, name, err);
    if (rc == 0 && owner && ngrants &&
        (rc = registry_share(name, grants, ngrants, true, &list, err)) != 0)
        registry_remove(name, NULL); /* all of it or none */
    h5ark_value_destroy(&list);
    registry_leave(previous);
    return rc;
}

static void grow(void) {
    size_t n = nbuckets * 2;
    entry **nb = calloc(n, sizeof *nb);
    if (!nb) return; /* keep the old table: longer chains, still correct */
    for (size_t i = 0; i < nbuckets; i++)
        for (entry *e = buckets[i], *next; e; e = next) {
            next = e->next;
            size_t h = hash(e->owner, e->obj->name) % n;
            e->next = nb[h];
            nb[h] = e;
        }
    free(buckets);
    buckets = nb;
    nbuckets = n;
}

/* The caller's own first, by name; then others', by owner and name. */
static int by_owner_name(const void *a, const void *b) {
    const object *x = *(object *const *)a, *y = *(object *const *)b;
    const char *v = registry_viewer();
    bool xo = !x->owner || (v && strcmp(x->owner, v) == 0);
    bool yo = !y->owner || (v && strcmp(y->owner, v) == 0);
    if (xo != yo) return xo ? -1 : 1;
    int c = !xo ? strcmp(x->owner, y->owner) : 0;
    return c ? c : strcmp(x->name, y->name);
}

object **registry_list(size_t *count) {
    pthread_mutex_lock(&lock);
    object **list = malloc((nobjects ? nobjects : 1) * sizeof *list);
    size_t n = 0;
    if (list)
        for (size_t i = 0; i < nbuckets; i++)
            for (entry *e = buckets[i]; e; e = e->next)
                if (!scope.who ? !e->owner : readable(e->owner, e->obj->name))
                    list[n++] = object_ref(e->obj);
    pthread_mutex_unlock(&lock);
    if (list) qsort(list, n, sizeof *list, by_owner_name);
    *count = n;
    return list;
}

object **registry_list_of(bool everyone, size_t *count) {
    pthread_mutex_lock(&lock);
    registry_account *mine = me();
    object **list = malloc((nobjects ? nobjects : 1) * sizeof *list);
    size_t n = 0;
    if (list)
        for (size_t i = 0; i < nbuckets; i++)
            for (entry *e = buckets[i]; e; e = e->next)
                if (everyone || e->owner == mine) list[n++] = object_ref(e->obj);
    pthread_mutex_unlock(&lock);
    if (list) qsort(list, n, sizeof *list, by_owner_name);
    *count = n;
    return list;
}

void registry_list_free(object **list, size_t count) {
    for (size_t i = 0; i < count; i++)
        object_release(list[i]);
    free(list);
}
