/* libFuzzer target: the ACL parser on untrusted text (a folder's .h5ark-acl). What parses
 * must come back the same through setacl's form (acl_to_value, acl_from_value). The same
 * bytes go to the owners' record's parser (storage/owners.h): every field it gives lies
 * inside its whole lines and holds no tab or newline. */
#include "config.h"
#include "storage/acl.h"
#include "storage/owners.h"

#include <stdlib.h>
#include <string.h>

config_t config; /* the daemon's is defined in main.c, which the target does not link */

typedef struct {
    const char *text;
    size_t len;
} span;

static int field_ok(const char *user, size_t ulen, const char *path, size_t plen, void *ctx) {
    const span *s = ctx;
    if (plen == 0 || user < s->text || path + plen > s->text + s->len || memchr(user, '\n', ulen) ||
        memchr(user, '\t', ulen) || memchr(path, '\n', plen) || memchr(path, '\t', plen))
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    span s = {(const char *)data, size};
    size_t valid = owners_parse(s.text, size, field_ok, &s);
    if (valid > size || (valid && data[valid - 1] != '\n') ||
        memchr(data + valid, '\n', size - valid))
        abort();
    acl a, b;
    h5ark_error err = {0};
    if (acl_parse_json((const char *)data, size, &a, &err) != 0) return 0;
    h5ark_value *v = acl_to_value(&a);
    if (v && acl_from_value(v, &b, &err) == 0) {
        if (a.n != b.n || (a.n && memcmp(a.entries, b.entries, a.n * sizeof *a.entries) != 0))
            abort();
        acl_free(&b);
    }
    h5ark_value_destroy(&v);
    acl_free(&a);
    return 0;
}
