/* The memory the daemon may count on: the machine's, or less under a cgroup memory limit
 * (a container's `--memory`, a systemd unit's MemoryMax=). The default --max-memory is
 * half of the smaller, so that objects cannot grow past what the kernel lets the process
 * have before it kills it. */
#ifndef H5ARK_MEMLIMIT_H
#define H5ARK_MEMLIMIT_H

#include <stdint.h>

/* Test-only: a directory that stands in for `/`, under which proc/self/cgroup and
 * sys/fs/cgroup are read instead of the real ones. */
#define MEMLIMIT_ROOT_ENV "H5ARK_CGROUP_ROOT"

/* The smallest memory limit set on this process's cgroup or any of its ancestors, read
 * under root ("" for the real system): cgroup v2's memory.max, or v1's
 * memory.limit_in_bytes when the memory controller is on a v1 hierarchy. 0 when no limit
 * is set or none can be read. */
uint64_t memlimit_cgroup(const char *root);

/* The default --max-memory: half of phys, or of cgroup_limit when that is set (non-zero)
 * and smaller. */
uint64_t memlimit_default(uint64_t phys, uint64_t cgroup_limit);

/* A size as --max-memory takes it: "4G", "512M", "1048576" (K, M, G, T: powers of 1024, an
 * optional B after); -1 when malformed or overflowing. */
int memlimit_parse_bytes(const char *s, uint64_t *out);

#endif
