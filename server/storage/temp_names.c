/* The names of a write's temporaries and twins (see temp_names.h). */
#include "temp_names.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int temp_name_for(const char *final, char *out, size_t outlen) {
    static atomic_uint counter;
    const char *slash = strrchr(final, '/');
    int n = snprintf(out, outlen, "%.*s.%s.h5ark-tmp.%d.%u", (int)(slash - final + 1), final,
                     slash + 1, (int)getpid(), atomic_fetch_add(&counter, 1));
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

#define TWIN_SUFFIX ".h5ark-twin"

int twin_name_for(const char *final, char *out, size_t outlen) {
    const char *slash = strrchr(final, '/');
    int n =
        snprintf(out, outlen, "%.*s.%s" TWIN_SUFFIX, (int)(slash - final + 1), final, slash + 1);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Temporaries are named ".<name>.h5ark-tmp.<pid>.<n>": anything of that form left in the
 * data directory was being written when an earlier daemon died. So were twins. */
bool temp_name_is_left_over(const char *name) {
    size_t len = strlen(name), tl = strlen(TWIN_SUFFIX);
    if (name[0] == '.' && len > tl + 1 && strcmp(name + len - tl, TWIN_SUFFIX) == 0) return true;
    const char *mark = strstr(name, ".h5ark-tmp.");
    if (name[0] != '.' || !mark) return false;
    const char *p = mark + strlen(".h5ark-tmp.");
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p || *end != '.' || pid <= 0) return false;
    strtoul(end + 1, &end, 10);
    return *end == '\0';
}
