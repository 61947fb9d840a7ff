/* libFuzzer target: the ACL parser on untrusted text (a folder's .h5ark-acl). What parses
 * must come back the same through setacl's form (acl_to_value, acl_from_value). */
#include "config.h"
#include "storage/acl.h"

#include <stdlib.h>
#include <string.h>

config_t config; /* the daemon's is defined in main.c, which the target does not link */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
