/* The cgroup memory limit behind the default --max-memory (memlimit.h). */
#include "memlimit.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One limit file's value; 0 for "max", an unreadable file or anything malformed. */
static uint64_t read_limit(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[64] = "";
    char *got = fgets(buf, sizeof buf, f);
    fclose(f);
    if (!got || buf[0] < '0' || buf[0] > '9') return 0; /* "max": no limit */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno || (*end && *end != '\n')) return 0;
    return (uint64_t)v;
}

/* The smallest limit in file `name` of mount/cgroup and of each of its ancestors up to the
 * mount point. Limits of ancestors bind too; and inside a container the path the kernel
 * reports may lie above the part of the tree mounted there, so the walk also reaches the
 * container's own cgroup at the mount point. */
static uint64_t walk_up(const char *mount, const char *cgroup, const char *name) {
    char rel[PATH_MAX], path[PATH_MAX * 2];
    snprintf(rel, sizeof rel, "%s", cgroup);
    uint64_t best = 0;
    for (;;) {
        size_t n = strlen(rel);
        while (n > 0 && rel[n - 1] == '/')
            rel[--n] = '\0';
        snprintf(path, sizeof path, "%s%s/%s", mount, rel, name);
        uint64_t v = read_limit(path);
        if (v && (!best || v < best)) best = v;
        char *slash = strrchr(rel, '/');
        if (n == 0) break;
        if (slash)
            *slash = '\0';
        else
            rel[0] = '\0';
    }
    return best;
}

uint64_t memlimit_cgroup(const char *root) {
    char path[PATH_MAX], line[PATH_MAX + 64], v1[PATH_MAX] = "", v2[PATH_MAX] = "";
    bool have_v1 = false, have_v2 = false;
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "r");
    /* Lines are ID:CONTROLLERS:PATH; v2's unified hierarchy is "0::PATH". */
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = '\0';
        const char *controllers = c1 + 1, *cg = c2 + 1;
        if (strcmp(line, "0") == 0 && !*controllers) {
            snprintf(v2, sizeof v2, "%s", cg);
            have_v2 = true;
            continue;
        }
        for (const char *p = controllers; *p;) { /* "cpu,memory": is memory among them? */
            size_t len = strcspn(p, ",");
            if (len == 6 && strncmp(p, "memory", 6) == 0) {
                snprintf(v1, sizeof v1, "%s", cg);
                have_v1 = true;
            }
            p += len + (p[len] == ',');
        }
    }
    if (f) fclose(f);
    char mount[PATH_MAX];
    /* A v1 memory controller takes precedence: on a hybrid system the unified hierarchy
     * then has no memory controller. Without /proc/self/cgroup, try both mount points. */
    if (have_v1 || !have_v2) {
        snprintf(mount, sizeof mount, "%s/sys/fs/cgroup/memory", root);
        uint64_t v = walk_up(mount, v1, "memory.limit_in_bytes");
        if (v || have_v1) return v;
    }
    snprintf(mount, sizeof mount, "%s/sys/fs/cgroup", root);
    return walk_up(mount, v2, "memory.max");
}

uint64_t memlimit_default(uint64_t phys, uint64_t cgroup_limit) {
    uint64_t m = cgroup_limit && (!phys || cgroup_limit < phys) ? cgroup_limit : phys;
    return m / 2;
}

/* "4G", "512M", "1048576" -> bytes; -1 when malformed or overflowing. */
int memlimit_parse_bytes(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*s)) return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return -1;
    int shift = 0;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: return -1;
    }
    if (*end && end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2])) return -1;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}
