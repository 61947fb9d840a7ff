#!/usr/bin/env python3
"""The Docker image, tested without Docker.

Builds the runtime stage of docker/Dockerfile as a root file system: Debian bookworm from
debootstrap (--variant=minbase, close to debian:bookworm-slim), then the stage's own RUN,
COPY, USER, ... steps as the Dockerfile states them (packages, user, files), with the
daemon and the CLI built on this machine (bookworm too) as the build stage's `RUN cmake`
steps build them (their options: one rank, no MPI), into build-image/.
Then runs the image's ENTRYPOINT as its USER in namespaces of its own, as a container
runs: pid (the daemon is PID 1), network (its own loopback, no port clash with anything
else here), mount (a host data folder owned by another uid bind-mounted on /data, the
token secret on /run/secrets/h5ark_token, a memory cgroup on /sys/fs/cgroup), and checks:

  - the build stage installs scripts/setup's build packages, the same list (and Debian's
    nodejs and npm, which build the viewer page);
  - the binaries find every library they need in the image;
  - a data folder the user cannot write is refused with what to do (--user);
  - run as the folder's owner (docker run --user): the HEALTHCHECK passes, a put and a
    get go through, the files land in the host folder as that owner, the default
    --max-memory is half the memory cgroup's limit, SIGTERM to PID 1 stops it cleanly;
  - with a token secret: the HEALTHCHECK passes with it, fails with a wrong token or
    no daemon, a ping without the token is refused; an unreadable secret is refused;
  - with --http-endpoint, the viewer page (built as the build stage builds it) is served at
    /, its assets and the gateway's API beside it.

Needs root (debootstrap, chroot, mount, namespaces): skipped, saying so, otherwise.
Installs debootstrap (and iproute2) when missing; keeps the downloaded packages in
/var/cache/h5ark-rootfs-test. Takes about two minutes, most of it debootstrap.

    /usr/bin/python3 tests/docker/rootfs_test.py [--keep] [--build-dir DIR]
"""
import argparse
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"
MIRROR = os.environ.get("H5ARK_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CACHE = pathlib.Path("/var/cache/h5ark-rootfs-test")
# What debian:bookworm-slim has; debootstrap's minbase is that, with docs and locales kept.
BASE_IMAGE = "debian:bookworm-slim"
SLIM_SOURCES = ("deb http://deb.debian.org/debian bookworm main\n"
                "deb http://deb.debian.org/debian bookworm-updates main\n"
                "deb http://deb.debian.org/debian-security bookworm-security main\n")
DOCKER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_UID = HOST_GID = 20000  # the owner of the host's data folder: not the image's user
MEMORY_LIMIT = 512 << 20     # as `docker run --memory 512m`
TOKEN = "rootfs-test-token-5d8e7a6b"
# What the build stage may install beyond scripts/setup's build packages: the viewer page's
# tools (scripts/setup installs npm with --test; the build finds it or leaves the page out).
PAGE_PACKAGES = {"nodejs", "npm"}

results = {"passed": 0, "failed": 0}


def check(cond, what, detail=""):
    if cond:
        results["passed"] += 1
        print(f"ok   {what}", flush=True)
    else:
        results["failed"] += 1
        print(f"FAIL {what}" + (f": {detail}" if detail else ""), flush=True)
    return cond


def run(argv, **kw):
    kw.setdefault("check", True)
    return subprocess.run([str(a) for a in argv], **kw)


# ---- the Dockerfile, read as Docker reads it ---------------------------------------------

def instructions(path):
    """(INSTRUCTION, arguments) per step: comment lines dropped (also inside a continued
    step, as Docker does) and continuation lines joined."""
    steps, buf = [], ""
    for line in path.read_text().splitlines():
        if re.match(r"\s*#", line) or (not buf and not line.strip()):
            continue
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.strip().partition(" ")
        steps.append((word.upper(), rest.strip()))
        buf = ""
    return steps


def stages(steps):
    """[(FROM arguments, [steps])], in order."""
    out = []
    for ins, arg in steps:
        if ins == "FROM":
            out.append((arg, []))
        elif out:
            out[-1][1].append((ins, arg))
        else:
            raise SystemExit(f"rootfs: {DOCKERFILE}: {ins} before FROM")
    return out


def apt_packages(steps):
    """The packages of each `apt-get install` in the steps' RUNs, options left out."""
    pkgs = []
    for ins, arg in steps:
        if ins == "RUN" and "apt-get install" in arg:
            for part in arg.split("apt-get install")[1:]:
                pkgs += [w for w in shlex.split(part.split("&&")[0]) if not w.startswith("-")]
    return pkgs


def json_or_shell(arg):
    """An exec-form (JSON array) or shell-form command, as argv."""
    if arg.startswith("["):
        return json.loads(arg)
    return ["/bin/sh", "-c", arg]


def ignore_regex(pattern):
    """A .dockerignore pattern as a regular expression over context-relative paths."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return out


def dockerignored(rel, patterns):
    """Whether .dockerignore leaves `rel` out of the build context: the last pattern that
    matches it or a folder above it decides, a '!' one bringing it back."""
    parts, excluded = rel.split("/"), False
    for pat in patterns:
        neg = pat.startswith("!")
        rx = ignore_regex(pat[1:].strip("/") if neg else pat.strip("/"))
        if any(re.fullmatch(rx, "/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            excluded = not neg
    return excluded


def build_in_stage(steps, build_dir):
    """Configure and build here as the build stage's `RUN cmake` steps do (their options,
    targets and /src, /build mapped to the repository and build_dir), so that the image's
    binaries are the ones the Dockerfile would make (one rank, no MPI, say)."""
    runs = [arg for ins, arg in steps if ins == "RUN" and arg.startswith("cmake ")]
    if not runs:
        raise SystemExit("rootfs: the build stage has no `RUN cmake` step")
    for arg in runs:
        for part in arg.split("&&"):
            argv = shlex.split(part.replace('"$(nproc)"', str(os.cpu_count() or 1)))
            argv = [str(REPO) if a == "/src" else str(build_dir) if a == "/build" else a
                    for a in argv]
            run(argv, stdout=subprocess.DEVNULL)


def check_dockerignore(final):
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    secret = ["data/demo_LOCALE0000.h5", "token", "docker/data/x.h5", ".git/config",
              "build/server/h5arkd", "build-asan/CMakeCache.txt", "server.key",
              "client/python/h5ark/__pycache__/x.pyc"]
    kept = [p for p in secret if not dockerignored(p, patterns)]
    check(not kept, ".dockerignore keeps data, tokens, keys, build trees and .git out", str(kept))
    tracked = subprocess.run(["git", "-C", REPO, "ls-files"], capture_output=True,
                             text=True).stdout.split()
    needed = [p for p in tracked if re.search(r"(\.c|\.h|\.in|CMakeLists\.txt)$", p)]
    for ins, arg in final:
        if ins == "COPY" and "--from=" not in arg:
            needed += [w for w in shlex.split(arg)[:-1] if not w.startswith("--")]
    dropped = [p for p in needed if dockerignored(p, patterns)]
    check(needed and not dropped, ".dockerignore keeps every file the build needs",
          str(dropped))


def setup_build_packages():
    text = (REPO / "scripts" / "setup").read_text()
    m = re.search(r"^build_packages=\((.*?)^\)", text, re.S | re.M)
    if not m:
        raise SystemExit("rootfs: scripts/setup has no build_packages=( ... ) list")
    return [w for line in m.group(1).splitlines()
            for w in line.split("#")[0].split()]


# ---- the image's root file system ---------------------------------------------------------

class Image:
    """The final stage's file system and settings."""

    def __init__(self, root, build_dir):
        self.root = root
        self.build_dir = build_dir
        self.env = {"PATH": DOCKER_PATH}
        self.user = "0:0"
        self.workdir = "/"
        self.entrypoint, self.cmd = [], []
        self.healthcheck, self.health_timeout = None, 30.0

    def ids(self, user):
        """'name[:group]' or 'uid[:gid]' -> (uid, gid), from the image's passwd and group."""
        name, _, group = user.partition(":")

        def lookup(file, key, col):
            for line in (self.root / "etc" / file).read_text().splitlines():
                f = line.split(":")
                if f[0] == key:
                    return int(f[col])
            raise SystemExit(f"rootfs: no {key} in the image's /etc/{file}")
        uid = int(name) if name.isdigit() else lookup("passwd", name, 2)
        if group:
            gid = int(group) if group.isdigit() else lookup("group", group, 2)
        else:
            gid = next((int(line.split(":")[3]) for line in
                        (self.root / "etc" / "passwd").read_text().splitlines()
                        if int(line.split(":")[2]) == uid), 0)
        return uid, gid

    def home(self, uid):
        for line in (self.root / "etc" / "passwd").read_text().splitlines():
            f = line.split(":")
            if int(f[2]) == uid:
                return f[5]
        return "/"

    def chroot_argv(self, uid, gid, env, argv, workdir=None):
        """argv run in the image as uid:gid with exactly the container's environment."""
        full = {**self.env, "HOME": self.home(uid), "HOSTNAME": "h5ark-rootfs", **env}
        return ["chroot", f"--userspec={uid}:{gid}", f"--groups={gid}", self.root,
                "/usr/bin/env", "-i", *[f"{k}={v}" for k, v in full.items()],
                "/bin/sh", "-c", 'cd "$0" && exec "$@"', workdir or self.workdir, *argv]

    def apply(self, steps):
        for ins, arg in steps:
            if ins == "RUN":
                # with /proc and /dev/pts as a build step has them, in a mount namespace
                # of its own so that they go when the step ends
                uid, gid = self.ids(self.user)
                root = shlex.quote(str(self.root))
                argv = shlex.join(str(a) for a in self.chroot_argv(uid, gid, {}, json_or_shell(arg)))
                run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                     f"set -e; mount -t proc proc {root}/proc; "
                     f"mount -t devpts -o newinstance,ptmxmode=0666 devpts {root}/dev/pts; "
                     f"exec {argv}"], stdout=subprocess.DEVNULL)
            elif ins == "COPY":
                self.copy(shlex.split(arg))
            elif ins == "ENV":
                if "=" in arg.split()[0]:
                    for kv in shlex.split(arg):
                        k, _, v = kv.partition("=")
                        self.env[k] = v
                else:
                    k, _, v = arg.partition(" ")
                    self.env[k] = v.strip()
            elif ins == "USER":
                self.user = arg
                self.ids(arg)  # it must resolve now, as Docker's does at run time
            elif ins == "WORKDIR":
                self.workdir = arg
                (self.root / arg.lstrip("/")).mkdir(parents=True, exist_ok=True)
            elif ins == "VOLUME":
                for v in json_or_shell(arg) if arg.startswith("[") else arg.split():
                    (self.root / v.lstrip("/")).mkdir(parents=True, exist_ok=True)
            elif ins == "HEALTHCHECK":
                words = arg.split(None)
                while words and words[0].startswith("--"):
                    opt = words.pop(0)
                    if opt.startswith("--timeout="):
                        self.health_timeout = float(opt.split("=")[1].rstrip("s"))
                if words[:1] == ["NONE"]:
                    self.healthcheck = None
                else:
                    if words[:1] != ["CMD"]:
                        raise SystemExit(f"rootfs: cannot read HEALTHCHECK {arg}")
                    self.healthcheck = json_or_shell(arg.split("CMD", 1)[1].strip())
            elif ins == "ENTRYPOINT":
                self.entrypoint = json_or_shell(arg)
            elif ins == "CMD":
                self.cmd = json_or_shell(arg)
            elif ins in ("EXPOSE", "LABEL", "STOPSIGNAL", "ARG", "SHELL"):
                if ins == "SHELL":
                    raise SystemExit("rootfs: SHELL is not supported here; RUN uses /bin/sh -c")
            else:
                raise SystemExit(f"rootfs: {ins} in the runtime stage is unknown to this test")

    def copy(self, words):
        opts = [w for w in words if w.startswith("--")]
        paths = [w for w in words if not w.startswith("--")]
        srcs, dest = paths[:-1], paths[-1]
        from_stage = next((o.split("=", 1)[1] for o in opts if o.startswith("--from=")), None)
        chown = next((o.split("=", 1)[1] for o in opts if o.startswith("--chown=")), None)
        chmod = next((o.split("=", 1)[1] for o in opts if o.startswith("--chmod=")), None)
        into_dir = dest.endswith("/") or len(srcs) > 1
        target = self.root / dest.lstrip("/")
        (target if into_dir else target.parent).mkdir(parents=True, exist_ok=True)
        for src in srcs:
            if from_stage == "build":
                # The build stage builds in /build; this machine's build stands in for it.
                if not src.startswith("/build/"):
                    raise SystemExit(f"rootfs: COPY --from=build {src}: only /build/ is known")
                host = self.build_dir / src[len("/build/"):]
            elif from_stage:
                raise SystemExit(f"rootfs: COPY --from={from_stage} is unknown to this test")
            else:
                host = REPO / src
            out = target / host.name if into_dir else target
            if host.is_dir():  # as Docker copies a folder: its contents, into dest
                shutil.copytree(host, target, dirs_exist_ok=True)
                continue
            shutil.copy2(host, out)
            if chmod:
                os.chmod(out, int(chmod, 8))
            if chown:
                os.chown(out, *self.ids(chown))


# ---- containers: the entrypoint in namespaces of its own -----------------------------------

class MemoryCgroup:
    """A memory cgroup limited to `limit`, as Docker makes one for --memory; None when this
    machine lets none be made (then the memory check is skipped, saying why)."""

    def __init__(self, limit):
        self.path = self.version = None
        self.why_not = ""
        name = f"h5ark-rootfs-{os.getpid()}"
        v1 = pathlib.Path("/sys/fs/cgroup/memory")
        v2 = pathlib.Path("/sys/fs/cgroup")
        try:
            if (v1 / "memory.limit_in_bytes").exists():
                self.path, self.version = v1 / name, 1
                self.path.mkdir()
                (self.path / "memory.limit_in_bytes").write_text(str(limit))
            elif "memory" in (v2 / "cgroup.subtree_control").read_text().split():
                self.path, self.version = v2 / name, 2
                self.path.mkdir()
                (self.path / "memory.max").write_text(str(limit))
            else:
                self.why_not = "no cgroup v1 memory hierarchy, and v2's root has no memory controller"
        except OSError as e:
            self.why_not = f"cannot make a memory cgroup: {e}"
            self.path = None

    def mount_point(self):
        return "sys/fs/cgroup/memory" if self.version == 1 else "sys/fs/cgroup"

    def remove(self):
        if self.path and self.path.exists():
            for _ in range(50):
                try:
                    self.path.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


class Container:
    """The image's entrypoint as `docker run [--user U:G] [-v data:/data] [--secret]` runs
    it: PID 1 of its own pid namespace, on a network namespace of its own, with its own
    mounts, and in the memory cgroup when there is one."""

    def __init__(self, image, tmp, name, data, user=None, secret=None, cgroup=None, env=None,
                 args=None):
        self.image, self.name = image, name
        self.uid, self.gid = image.ids(user or image.user)
        self.env = env or {}
        self.log_path = tmp / f"{name}.log"
        root = shlex.quote(str(image.root))
        # As root in the new namespaces, before the entrypoint: what Docker sets up.
        setup = [f"mount --bind {shlex.quote(str(data))} {root}/data",
                 f"mount -t proc proc {root}/proc",
                 f"mount -t tmpfs -o mode=0755 tmpfs {root}/run/secrets",
                 "ip link set lo up"]
        if secret:
            setup += [f"touch {root}/run/secrets/h5ark_token",
                      f"mount --bind {shlex.quote(str(secret))} {root}/run/secrets/h5ark_token"]
        if cgroup and cgroup.path:
            setup.append(f"mount --bind {cgroup.path} {root}/{cgroup.mount_point()}")
        argv = image.chroot_argv(self.uid, self.gid, self.env,
                                 image.entrypoint + (image.cmd if args is None else args))
        setup.append("exec " + shlex.join(str(a) for a in argv))
        join = f"echo $$ > {cgroup.path}/cgroup.procs && " if cgroup and cgroup.path else ""
        self.pid = None  # PID 1's host pid, once started()
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(
            ["sh", "-c", join + "exec unshare --pid --fork --net --mount --propagation private "
             "--cgroup sh -c " + shlex.quote("set -e; " + "; ".join(setup))],
            stdout=self.log, stderr=subprocess.STDOUT)

    def pid1(self):
        """The host pid of the container's PID 1 (the child of unshare)."""
        try:
            kids = pathlib.Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
            return int(kids.split()[0])
        except (OSError, IndexError, ValueError):
            return None

    def started(self, seconds=20):
        """Whether PID 1 has entered the image (so every mount is in place and it is in the
        container's namespaces), waiting for it up to `seconds`. Until then, entering the
        namespaces of a process of the container could enter the host's instead, and reach
        whatever listens on the host's port 5555."""
        deadline = time.monotonic() + seconds
        while self.pid is None and time.monotonic() < deadline and self.proc.poll() is None:
            pid = self.pid1()
            try:
                if pid and os.readlink(f"/proc/{pid}/root") == str(self.image.root) and \
                        os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net"):
                    self.pid = pid
            except OSError:
                pass
            time.sleep(0.05)
        return self.pid is not None

    def exec(self, argv, env=None, timeout=30, user=None):
        """`docker exec`: argv in the container's namespaces, as its user and environment."""
        if not self.started():
            return None, f"the container did not start: {self.output()}", 0.0
        uid, gid = (user if user else (self.uid, self.gid))
        cmd = ["nsenter", f"--target={self.pid}", "--net", "--mount", "--pid", "--",
               *self.image.chroot_argv(uid, gid, {**self.env, **(env or {})}, argv)]
        start = time.monotonic()
        try:
            p = subprocess.run([str(a) for a in cmd], capture_output=True, text=True,
                               timeout=timeout)
            return p.returncode, p.stdout + p.stderr, time.monotonic() - start
        except subprocess.TimeoutExpired:
            return None, f"no exit within {timeout} s", time.monotonic() - start

    def healthcheck(self, env=None):
        return self.exec(self.image.healthcheck, env=env, timeout=self.image.health_timeout)

    def wait_healthy(self, seconds=20, env=None):
        """Like the HEALTHCHECK's start period: the first passing check, or the last result."""
        deadline = time.monotonic() + seconds
        while True:
            rc, out, took = self.healthcheck(env)
            if rc == 0 or self.proc.poll() is not None or time.monotonic() > deadline:
                return rc, out
            time.sleep(0.2)

    def host_python(self, code, timeout=60):
        """Python on the host, in the container's network namespace (a published port)."""
        if not self.started():
            return None, f"the container did not start: {self.output()}"
        p = subprocess.run(["nsenter", f"--target={self.pid}", "--net", "--",
                            "/usr/bin/python3", "-c", code], capture_output=True, text=True,
                           timeout=timeout, env={**os.environ,
                                                 "PYTHONPATH": str(REPO / "client" / "python")})
        return p.returncode, p.stdout + p.stderr

    def output(self):
        self.log.flush()
        return self.log_path.read_text()

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=60):
        """`docker stop`: SIGTERM to PID 1, SIGKILL after the grace period."""
        if self.started() and self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
        rc = self.wait(timeout)
        if rc is None:
            self.kill()
        return rc

    def kill(self):
        if self.proc.poll() is None:
            pid = self.pid1()
            try:  # PID 1's death takes the whole pid namespace with it
                os.kill(pid or self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# ---- the test -------------------------------------------------------------------------------

def skip(reason):
    print(f"rootfs: SKIPPED: {reason}")
    sys.exit(0)


def interrupted(*_):
    print("rootfs: interrupted (SIGTERM): cleaning up", flush=True)
    sys.exit(143)


def ensure_tools():
    missing = [pkg for tool, pkg in (("debootstrap", "debootstrap"), ("ip", "iproute2"),
                                     ("npm", "npm"))  # npm: the build stage's page
               if not shutil.which(tool)]
    if missing:
        print(f"rootfs: installing {' '.join(missing)}", flush=True)
        run(["apt-get", "update", "-qq"])
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, stdout=subprocess.DEVNULL)


def mounts_under(path):
    prefix = str(path).rstrip("/") + "/"
    with open("/proc/self/mounts") as f:
        points = [line.split()[1].replace("\\040", " ") for line in f]
    return [p for p in points if p.startswith(prefix) or p == str(path)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="leave the temporary folder in place")
    ap.add_argument("--build-dir", default=str(REPO / "build-image"),
                    help="where the build stage's build is made, as the Dockerfile configures "
                         "it, for the image's h5arkd and h5ark (default build-image/)")
    opts = ap.parse_args()

    started = time.monotonic()
    timings = {}
    # What needs no root: the Dockerfile against scripts/setup and .dockerignore.
    steps = stages(instructions(DOCKERFILE))
    build_stage = next((s for f, s in steps if re.search(r"\bAS\s+build\b", f, re.I)), None)
    base, final = steps[-1]
    check(build_stage is not None, "the Dockerfile has a build stage named build")
    want, have = setup_build_packages(), apt_packages(build_stage or [])
    check(set(want) <= set(have) and set(have) - set(want) <= PAGE_PACKAGES,
          "the build stage installs scripts/setup's build packages (and the page's "
          f"{', '.join(sorted(PAGE_PACKAGES))})",
          f"only in scripts/setup: {sorted(set(want) - set(have))}, "
          f"only in the Dockerfile: {sorted(set(have) - set(want) - PAGE_PACKAGES)}")
    check_dockerignore(final)
    if not check(base == BASE_IMAGE, f"the runtime stage is FROM {BASE_IMAGE}", base):
        return

    if sys.platform != "linux":
        skip("the rest needs Linux (namespaces, chroot)")
    if os.geteuid() != 0:
        skip("the rest needs root: debootstrap, chroot, mount and namespaces (run it as root "
             "or with sudo)")
    probe = subprocess.run(["unshare", "--pid", "--fork", "--net", "--mount", "--cgroup", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        skip(f"the rest needs new namespaces, which this machine refuses: {probe.stderr.strip()}")
    # SIGTERM (a CI time limit) must still clean up: make it an exception.
    signal.signal(signal.SIGTERM, interrupted)

    ensure_tools()
    t = time.monotonic()
    run([REPO / "scripts" / "setup", "--no-build"], stdout=subprocess.DEVNULL)
    build_dir = pathlib.Path(opts.build_dir).resolve()
    build_in_stage(build_stage, build_dir)
    timings["build (as the build stage)"] = time.monotonic() - t

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="h5ark-rootfs-"))
    os.chmod(tmp, 0o755)
    root = tmp / "root"
    containers, cgroup = [], None
    try:
        t = time.monotonic()
        CACHE.mkdir(parents=True, exist_ok=True)
        run(["debootstrap", "--variant=minbase", f"--cache-dir={CACHE}", "bookworm", root, MIRROR],
            stdout=subprocess.DEVNULL)
        timings["debootstrap"] = time.monotonic() - t
        (root / "etc" / "apt" / "sources.list").write_text(SLIM_SOURCES)
        shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")

        t = time.monotonic()
        image = Image(root, build_dir)
        image.apply(final)
        timings["runtime stage"] = time.monotonic() - t
        (root / "run" / "secrets").mkdir(parents=True, exist_ok=True)
        for d in ("sys/fs/cgroup/memory",):
            (root / d).mkdir(parents=True, exist_ok=True)
        uid, gid = image.ids(image.user)
        check(uid != 0, f"the image runs as a user other than root ({image.user})")
        check(image.healthcheck is not None, "the image has a HEALTHCHECK")

        installed = subprocess.run(["chroot", root, "dpkg-query", "-W", "-f=${Package}\n"],
                                   capture_output=True, text=True).stdout.split()
        runtime = apt_packages(final)
        check(runtime and all(p in installed for p in runtime),
              f"the runtime packages are installed ({' '.join(runtime)})")
        for binary in ("h5arkd", "h5ark"):
            ldd = subprocess.run(["chroot", root, "ldd", f"/usr/local/bin/{binary}"],
                                 capture_output=True, text=True)
            check(ldd.returncode == 0 and "not found" not in ldd.stdout,
                  f"{binary} finds every library it needs in the image",
                  "\n".join(line for line in ldd.stdout.splitlines() if "not found" in line)
                  or ldd.stderr)

        # The host's data folder, owned by a uid that is not the image's user.
        hostdata = tmp / "hostdata"
        hostdata.mkdir(mode=0o755)
        os.chown(hostdata, HOST_UID, HOST_GID)
        cgroup = MemoryCgroup(MEMORY_LIMIT)
        t = time.monotonic()

        # 1. As the image's user, the folder is not writable: refused, saying what to do.
        c = Container(image, tmp, "unwritable", hostdata)
        containers.append(c)
        rc = c.wait(20)
        out = c.output()
        check(rc not in (0, None) and "--user" in out and "not writable" in out,
              "a data folder of another uid is refused with what to do (--user)",
              f"exit {rc}: {out}")
        c.kill()

        # 2. As the folder's owner (docker run --user), no token, in the memory cgroup.
        c = Container(image, tmp, "as-owner", hostdata, user=f"{HOST_UID}:{HOST_GID}",
                      cgroup=cgroup)
        containers.append(c)
        rc, out = c.wait_healthy()
        check(rc == 0, "run as the folder's owner: the HEALTHCHECK passes", f"{out}\n{c.output()}")
        check(c.started() and pathlib.Path(f"/proc/{c.pid}/comm").read_text().strip() == "h5arkd",
              "h5arkd is the container's PID 1 (the entrypoint execs it)")
        check("no token" in c.output(), "the entrypoint warns that no token is required",
              c.output())
        rc, out = c.host_python(
            "import json, numpy as np, h5ark\n"
            "h5ark.connect('tcp://127.0.0.1:5555')\n"
            "a = h5ark.array(np.arange(1000, dtype=np.int64) * 3, name='rootfs_a')\n"
            "h5ark.to_hdf({'a': a}, 'rootfs.h5', file_type='single')\n"
            "back = h5ark.read_hdf('rootfs.h5')['a'].to_ndarray()\n"
            "assert (back == np.arange(1000) * 3).all()\n"
            "print(json.dumps(dict(h5ark.config())))\n")
        check(rc == 0, "a put, a save and a load go through the container's port", out)
        config = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {}
        files = sorted(hostdata.glob("rootfs*.h5"))
        check(files and all(f.stat().st_uid == HOST_UID for f in files),
              "the saved file is in the host folder, owned by its owner",
              str([(f.name, f.stat().st_uid) for f in files]))
        rc, out, _ = c.exec(["h5ark", "get", "rootfs_a"])
        check(rc == 0 and out.split()[:3] == ["0", "3", "6"],
              "the image's h5ark gets the array", out)
        if cgroup.path:
            check(config.get("max_memory") == MEMORY_LIMIT // 2,
                  f"the default --max-memory is half the cgroup v{cgroup.version} memory limit",
                  f"max_memory {config.get('max_memory')}, limit {MEMORY_LIMIT}")
        else:
            print(f"skip the cgroup memory limit check: {cgroup.why_not}")
        rc = c.stop()
        check(rc == 0, "SIGTERM to PID 1 (docker stop) stops the daemon cleanly",
              f"exit {rc}: {c.output()}")
        c.kill()

        # 3. As the image's user, its own data folder, the token as a Docker secret.
        owned = tmp / "owned"
        owned.mkdir(mode=0o755)
        os.chown(owned, uid, gid)
        secret = tmp / "token"
        secret.write_text(f"# the token of the rootfs test\n{TOKEN} write\n")
        os.chmod(secret, 0o444)  # a Swarm secret's mode; a compose one keeps the file's
        wrong = owned / "wrong-token"
        wrong.write_text("not-the-token\n")
        c = Container(image, tmp, "with-token", owned, secret=secret)
        containers.append(c)
        rc, out = c.wait_healthy()
        check(rc == 0, "with a token secret: the HEALTHCHECK passes (it pings with the token)",
              f"{out}\n{c.output()}")
        check("token required" in c.output(), "the daemon requires the token", c.output())
        rc, out, _ = c.exec(["h5ark", "ping"], env={})
        check(rc not in (0, None) and "unauthorized" in out,
              "a ping without the token is refused", f"exit {rc}: {out}")
        rc, out, _ = c.healthcheck(env={"H5ARK_TOKEN_FILE": "/data/wrong-token"})
        check(rc not in (0, None), "the HEALTHCHECK fails with a wrong token", f"exit {rc}: {out}")
        rc, out, took = c.healthcheck(env={"H5ARK_ENDPOINT": "tcp://127.0.0.1:5556"})
        check(rc not in (0, None) and took < image.health_timeout,
              "the HEALTHCHECK fails, within its timeout, where no daemon answers",
              f"exit {rc} after {took:.1f} s: {out}")
        rc, out = c.host_python(
            "import numpy as np, h5ark\n"
            f"h5ark.connect('tcp://127.0.0.1:5555', token={TOKEN!r})\n"
            "a = h5ark.array(np.arange(5))\n"
            "assert a.to_ndarray().tolist() == [0, 1, 2, 3, 4]\n")
        check(rc == 0, "a put and a get with the token go through", out)
        rc = c.stop()
        check(rc == 0, "SIGTERM stops the daemon with a token cleanly", f"exit {rc}")
        c.kill()

        # 4. A secret the user cannot read: refused, saying what to do.
        unreadable = tmp / "token-0600"
        unreadable.write_text(TOKEN + "\n")
        os.chown(unreadable, HOST_UID, HOST_GID)
        os.chmod(unreadable, 0o600)
        c = Container(image, tmp, "unreadable-token", owned, secret=unreadable)
        containers.append(c)
        rc = c.wait(20)
        out = c.output()
        check(rc not in (0, None) and "cannot read the token file" in out,
              "a token secret the user cannot read is refused with what to do",
              f"exit {rc}: {out}")
        c.kill()

        # 5. The viewer page at / of --http-endpoint, from the image's share/h5ark/web.
        (owned / "page.h5").write_bytes(b"listed, not read")
        c = Container(image, tmp, "viewer-page", owned,
                      args=["--http-endpoint", "0.0.0.0:8080"])
        containers.append(c)
        c.wait_healthy()
        rc, out = c.host_python(
            "import json, re, urllib.request\n"
            "base = 'http://127.0.0.1:8080'\n"
            "page = urllib.request.urlopen(base + '/', timeout=10)\n"
            "html = page.read().decode()\n"
            "assert page.headers['Content-Type'].startswith('text/html'), page.headers\n"
            "assert '<div id=\"root\">' in html and 'built without' not in html, html\n"
            "assets = re.findall(r'(?:src|href)=\"\\./(assets/[^\"]+)\"', html)\n"
            "assert any(a.endswith('.js') for a in assets), html\n"
            "for a in assets:\n"
            "    assert len(urllib.request.urlopen(f'{base}/{a}', timeout=10).read()) > 0, a\n"
            "files = json.load(urllib.request.urlopen(base + '/files', timeout=10))\n"
            "assert 'page.h5' in files, files\n")
        check(rc == 0, "with --http-endpoint, the viewer page is served at /, with its assets "
              "and the API", f"{out}\n{c.output()}")
        c.stop()
        c.kill()
        timings["containers"] = time.monotonic() - t
    finally:
        for c in containers:
            c.kill()
        if cgroup:
            cgroup.remove()
        remove_tmp(tmp, opts.keep, "rootfs")

    timings["total"] = time.monotonic() - started
    print("rootfs: " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))


def remove_tmp(tmp, keep, who):
    """Unmount what is mounted under tmp, then remove it (unless keep); never through a
    mount that would not go."""
    for m in reversed(mounts_under(tmp)):
        subprocess.run(["umount", "-l", m])
    if mounts_under(tmp):
        print(f"{who}: mounts remain under {tmp}; not removing it", file=sys.stderr)
    elif keep:
        print(f"{who}: kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def run_checks(main, who):
    """main(), then the count of checks; the exit status says whether any failed."""
    try:
        main()
    finally:
        print(f"{who}: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    run_checks(main, "rootfs")
