/* Unit tests of the cgroup memory limit behind the default --max-memory, on cgroup trees
 * laid out in a temporary directory as the kernel shows them: v2 (in a container's own
 * namespace, and nested on a host), v1 (Docker's layout, and unlimited), hybrid, none. */
#include "check.h"
#include "memlimit.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define GiB (UINT64_C(1) << 30)

static char root[PATH_MAX];

/* Write text to root/rel, making its directories. */
static void put(const char *rel, const char *text) {
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) perror(path);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    CHECKF(f != NULL, "cannot write %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* A fresh, empty root for each case. */
static void fresh(void) {
    if (root[0]) nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    snprintf(root, sizeof root, "/tmp/h5ark-memlimit-XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        exit(1);
    }
}

int main(void) {
    /* v2 in a container's own cgroup namespace: "0::/", the limit at the mount point. */
    fresh();
    put("proc/self/cgroup", "0::/\n");
    put("sys/fs/cgroup/memory.max", "1073741824\n");
    CHECK_INT(memlimit_cgroup(root), GiB);

    /* v2 without a limit. */
    fresh();
    put("proc/self/cgroup", "0::/\n");
    put("sys/fs/cgroup/memory.max", "max\n");
    CHECK_INT(memlimit_cgroup(root), 0);

    /* v2 on a host: a unit's own limit and its slice's; the smaller binds. */
    fresh();
    put("proc/self/cgroup", "0::/system.slice/h5arkd.service\n");
    put("sys/fs/cgroup/system.slice/memory.max", "4294967296\n");
    put("sys/fs/cgroup/system.slice/h5arkd.service/memory.max", "max\n");
    CHECK_INT(memlimit_cgroup(root), 4 * GiB);
    put("sys/fs/cgroup/system.slice/h5arkd.service/memory.max", "2147483648\n");
    CHECK_INT(memlimit_cgroup(root), 2 * GiB);

    /* v2, the reported path above what is mounted (a container sharing the host's cgroup
     * namespace): the walk up reaches the container's own cgroup at the mount point. */
    fresh();
    put("proc/self/cgroup", "0::/system.slice/docker-0123abcd.scope\n");
    put("sys/fs/cgroup/memory.max", "536870912\n");
    CHECK_INT(memlimit_cgroup(root), GiB / 2);

    /* v1 as Docker mounts it: the container's cgroup at the memory mount point. */
    fresh();
    put("proc/self/cgroup", "12:cpu,cpuacct:/docker/0123abcd\n"
                            "4:memory:/docker/0123abcd\n"
                            "1:name=systemd:/docker/0123abcd\n");
    put("sys/fs/cgroup/memory/memory.limit_in_bytes", "3221225472\n");
    CHECK_INT(memlimit_cgroup(root), 3 * GiB);

    /* v1 unlimited is a huge number, which the default then ignores. */
    put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    CHECK(memlimit_cgroup(root) > (UINT64_C(1) << 62));
    CHECK_INT(memlimit_default(16 * GiB, memlimit_cgroup(root)), 8 * GiB);

    /* Hybrid: the memory controller on v1, the unified hierarchy empty of it. */
    fresh();
    put("proc/self/cgroup", "5:blkio,memory:/user.slice\n0::/user.slice\n");
    put("sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes", "1073741824\n");
    put("sys/fs/cgroup/user.slice/memory.max", "4294967296\n");
    CHECK_INT(memlimit_cgroup(root), GiB);

    /* Nothing to read: no limit. */
    fresh();
    CHECK_INT(memlimit_cgroup(root), 0);
    put("proc/self/cgroup", "0::/\n");
    CHECK_INT(memlimit_cgroup(root), 0);
    put("sys/fs/cgroup/memory.max", "garbage\n");
    CHECK_INT(memlimit_cgroup(root), 0);

    /* The default: half of the smaller of the machine's memory and the limit. */
    CHECK_INT(memlimit_default(16 * GiB, 0), 8 * GiB);
    CHECK_INT(memlimit_default(16 * GiB, 2 * GiB), GiB);
    CHECK_INT(memlimit_default(2 * GiB, 16 * GiB), GiB);
    CHECK_INT(memlimit_default(0, 2 * GiB), GiB);

    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    /* The real system must not make it fail, whatever it has. */
    uint64_t real = memlimit_cgroup("");
    printf("this process's cgroup memory limit: %llu (0: none)\n", (unsigned long long)real);
    return check_exit("test_memlimit");
}
