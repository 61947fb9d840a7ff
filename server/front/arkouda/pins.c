/* The client's names a registration keeps (pins.h). */
#include "front/arkouda/pins.h"
#include "entry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct pin {
    char *owner, *reg;
    json_t *names;
    struct pin *next;
} pin;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pin *pins; /* few: one per registered name */

/* The caller's user name, "" with users off. */
static const char *owner(void) {
    const caller *c = entry_caller();
    return c && c->user ? c->user->name : "";
}

static pin **find(const char *who, const char *reg) {
    pin **p = &pins;
    while (*p && (strcmp((*p)->owner, who) != 0 || strcmp((*p)->reg, reg) != 0))
        p = &(*p)->next;
    return p;
}

static void pin_free(pin *p) {
    free(p->owner);
    free(p->reg);
    json_decref(p->names);
    free(p);
}

/* Adds a name once; a JSON object's text adds the string values of its parts. */
static int add_name(json_t *out, const char *text) {
    if (!text || !*text) return 0;
    if (text[0] == '{') {
        json_t *parts = json_loads(text, 0, NULL);
        const char *key;
        json_t *v;
        int rc = 0;
        json_object_foreach(parts, key, v) {
            if (rc == 0 && json_is_string(v)) rc = add_name(out, json_string_value(v));
        }
        json_decref(parts);
        return rc;
    }
    size_t i;
    json_t *have;
    json_array_foreach(out, i, have) {
        if (strcmp(json_string_value(have), text) == 0) return 0;
    }
    return json_array_append_new(out, json_string(text));
}

json_t *ak_pins_of_request(const ak_request *in) {
    /* the arguments of Arkouda's register messages (RegistrationMsg.chpl) that name parts:
     * one name or JSON object each, or a JSON list of them */
    static const char *const one[] = {"array",      "segments",  "values",      "lengths", "codes",
                                      "categories", "_akNAcode", "permutation", "uki",     "idx"};
    static const char *const lists[] = {"keys", "columns", "idx_names"};
    json_t *out = json_array();
    int rc = out ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < sizeof one / sizeof one[0]; i++)
        rc = add_name(out, ak_arg(in, one[i]));
    for (size_t i = 0; rc == 0 && i < sizeof lists / sizeof lists[0]; i++) {
        const char *text = ak_arg(in, lists[i]);
        json_t *list = text ? json_loads(text, 0, NULL) : NULL, *item;
        size_t k;
        json_array_foreach(list, k, item) {
            if (rc == 0) rc = add_name(out, json_string_value(item));
        }
        json_decref(list);
    }
    if (rc) json_decref(out);
    return rc ? NULL : out;
}

int ak_pins_set(const char *reg, json_t *names) {
    pin *p = calloc(1, sizeof *p);
    if (p) {
        p->owner = strdup(owner());
        p->reg = strdup(reg);
    }
    if (!p || !p->owner || !p->reg || !names) {
        if (p) pin_free(p);
        json_decref(names);
        return -1;
    }
    p->names = names;
    ak_pins_drop(reg);
    pthread_mutex_lock(&lock);
    p->next = pins;
    pins = p;
    pthread_mutex_unlock(&lock);
    return 0;
}

void ak_pins_drop(const char *reg) {
    pthread_mutex_lock(&lock);
    pin **at = find(owner(), reg), *gone = *at;
    if (gone) *at = gone->next;
    pthread_mutex_unlock(&lock);
    if (gone) pin_free(gone);
}

json_t *ak_pins_get(const char *reg) {
    pthread_mutex_lock(&lock);
    pin *p = *find(owner(), reg);
    json_t *names = p ? json_deep_copy(p->names) : NULL;
    pthread_mutex_unlock(&lock);
    return names;
}

json_t *ak_pins_holders(const char *name) {
    json_t *out = json_array();
    const char *who = owner();
    pthread_mutex_lock(&lock);
    for (pin *p = pins; out && p; p = p->next) {
        if (strcmp(p->owner, who) != 0) continue;
        size_t i;
        json_t *n;
        json_array_foreach(p->names, i, n) {
            if (strcmp(json_string_value(n), name) == 0 &&
                json_array_append_new(out, json_string(p->reg))) {
                json_decref(out);
                out = NULL;
                break;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return out;
}
