#!/usr/bin/env python3
"""The README's first command on a fresh machine, as a new user meets it.

Makes a minimal Debian bookworm root (debootstrap --variant=minbase) holding nothing but
git and a clean clone of this repository's HEAD, then, inside it, as root:

  - runs the README's first command exactly as its "Two commands" block gives it
    (`scripts/run`): it must install what it needs, build, and serve, until
    `build/client/c/h5ark ping` answers;
  - checks the install size the README gives for it against what it installed;
  - runs the README's tour as written (tests/readme_tour.py: its setup line, then every
    Python and shell block, each value a comment gives checked);
  - checks the size the README gives for what `scripts/test` adds, from apt's own
    figure for the packages `scripts/setup --test --list` names;
  - stops the daemon with SIGTERM: it exits cleanly; the clone is left clean (`git
    status`), and the configure step said which optional parts it left out.

Needs root (debootstrap, chroot, mount, a pid namespace) and Debian's mirror: skipped,
saying so, otherwise. The daemon listens on the README's endpoint, 127.0.0.1:5555, of
this machine's loopback (apt needs the network, so no network namespace): the test stops
at once if something already listens there. Downloaded packages are kept in
/var/cache/h5ark-rootfs-test. Takes three to five minutes.

    /usr/bin/python3 tests/docker/fresh_test.py [--keep]
"""
import argparse
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import rootfs_test as rootfs  # noqa: E402  the debootstrap root, checks and cleanup it uses
from rootfs_test import check, run  # noqa: E402

sys.path.insert(0, str(rootfs.REPO / "tests"))
import readme_tour as tour  # noqa: E402  the tour's blocks, as the README gives them

REPO = rootfs.REPO
README = REPO / "README.md"
CLONE = "/root/h5ark"           # where the new user's clone is, inside the root
PORT = 5555                     # the README's endpoint
BUILD_SECONDS = 1800            # install + build on a slow machine
SIZE_TOLERANCE = 0.15           # the README's "about N MB" against what was measured
APT_CACHE = rootfs.CACHE / "apt-archives"


def readme_commands():
    """The commands of the README's "Two commands" block, in order."""
    text = README.read_text()
    m = re.search(r"^## Two commands\n.*?^```sh\n(.*?)^```", text, re.M | re.S)
    if not m:
        raise SystemExit("fresh: README.md has no ```sh block under '## Two commands'")
    return [line.split("#")[0].strip() for line in m.group(1).splitlines()
            if line.split("#")[0].strip()]


def readme_size(after):
    """The README's 'about N MB' (or GB) that follows the text `after`, in MB."""
    text = re.sub(r"\s+", " ", README.read_text())
    m = re.search(re.escape(after) + r"[^.]*?about ([\d.,]+) (MB|GB)", text)
    if not m:
        raise SystemExit(f"fresh: README.md gives no 'about N MB' after '{after}'")
    value = float(m.group(1).replace(",", ""))
    return value * 1000 if m.group(2) == "GB" else value


class Root:
    """A minbase bookworm root; commands run in it as root with the user's environment."""

    def __init__(self, path):
        self.path = path

    def argv(self, command, cwd="/root"):
        env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME=/root", "LANG=C.UTF-8", "TERM=dumb"]
        return ["chroot", self.path, "/usr/bin/env", "-i", *env, "/bin/bash", "-c",
                f"cd {shlex.quote(cwd)} && {command}"]

    def sh(self, command, cwd="/root", timeout=600):
        p = subprocess.run(self.argv(command, cwd), capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr

    def installed_mb(self):
        rc, out = self.sh("dpkg-query -W -f='${Installed-Size}\\n'")
        return sum(int(x) for x in out.split() if x.isdigit()) / 1024 if rc == 0 else 0.0


def port_taken(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def near(measured, stated):
    return abs(measured - stated) <= SIZE_TOLERANCE * max(stated, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="leave the temporary folder in place")
    opts = ap.parse_args()

    started, timings = time.monotonic(), {}
    commands = readme_commands()
    check(commands[:1] == ["scripts/run"] and len(commands) == 2,
          "the README gives two commands for a fresh machine, scripts/run first", str(commands))
    if os.geteuid() != 0:
        rootfs.skip("needs root: debootstrap, chroot and mounts (run it as root or with sudo)")
    if port_taken(PORT):
        check(False, f"nothing else listens on 127.0.0.1:{PORT}, the README's endpoint",
              "stop what listens there and run again")
        return
    signal.signal(signal.SIGTERM, rootfs.interrupted)
    rootfs.ensure_tools()

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="h5ark-fresh-"))
    os.chmod(tmp, 0o755)
    root = Root(tmp / "root")
    daemon, log = None, None
    try:
        t = time.monotonic()
        rootfs.CACHE.mkdir(parents=True, exist_ok=True)
        run(["debootstrap", "--variant=minbase", f"--cache-dir={rootfs.CACHE}", "bookworm",
             root.path, rootfs.MIRROR], stdout=subprocess.DEVNULL)
        (root.path / "etc" / "apt" / "sources.list").write_text(rootfs.SLIM_SOURCES)
        (root.path / "etc" / "resolv.conf").write_text(pathlib.Path("/etc/resolv.conf").read_text())
        # what a new machine has mounted; apt's downloads kept between runs
        APT_CACHE.mkdir(parents=True, exist_ok=True)
        run(["mount", "-t", "proc", "proc", root.path / "proc"])
        run(["mount", "--bind", APT_CACHE, root.path / "var/cache/apt/archives"])
        rc, out = root.sh("apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
                          "apt-get install -y -qq --no-install-recommends git ca-certificates")
        if not check(rc == 0, "the fresh root gets git", out):
            return
        run(["git", "clone", "-q", "--no-hardlinks", REPO, root.path / CLONE.lstrip("/")])
        timings["fresh root with git and the clone"] = time.monotonic() - t
        before_mb = root.installed_mb()

        # The README's first command, exactly; its log beside the root.
        t = time.monotonic()
        log = open(tmp / "scripts-run.log", "w+")
        daemon = subprocess.Popen(
            ["unshare", "--pid", "--fork", *root.argv(f"exec {commands[0]}", CLONE)],
            stdout=log, stderr=subprocess.STDOUT)
        answered, out = False, ""
        deadline = time.monotonic() + BUILD_SECONDS
        while time.monotonic() < deadline and daemon.poll() is None:
            if (root.path / CLONE.lstrip("/") / "build/client/c/h5ark").exists():
                rc, out = root.sh("build/client/c/h5ark --connect-timeout 2 ping", CLONE, 30)
                if rc == 0:
                    answered = True
                    break
            time.sleep(3)
        timings["scripts/run until ping answers"] = time.monotonic() - t
        log.seek(0)
        run_log = log.read()
        if not check(answered, f"`{commands[0]}` installs, builds and serves: "
                     "`build/client/c/h5ark ping` answers",
                     f"exit {daemon.poll()}; ping: {out.strip()}\n{run_log[-4000:]}"):
            return
        check("MPI: not found" in run_log,
              "the configure step says MPI is left out, and why", run_log[-2000:])
        installed = root.installed_mb() - before_mb
        stated = readme_size("`scripts/run` installs only what building and running need")
        check(near(installed, stated),
              f"scripts/run installed {installed:.0f} MB; the README says about {stated:.0f} MB")

        # The tour: its setup line(s) before Python exists, then every block as written.
        t = time.monotonic()
        found = tour.blocks(README, ("python", "sh"), "A five-minute tour")
        first_python = next(i for i, b in enumerate(found) if b[0] == "python")
        for kind, line, code in found[:first_python]:
            for at, command in tour.shell_lines(line, code):
                rc, out = root.sh(command, CLONE, 900)
                check(rc == 0, f"README.md:{at}: `{command}` before the tour's Python", out[-2000:])
        rc, out = root.sh("/usr/bin/python3 tests/readme_tour.py", CLONE, 600)
        check(rc == 0, "the README's tour runs as written and gives what it says", out[-4000:])
        timings["the tour"] = time.monotonic() - t

        # What scripts/test would add, as apt counts it.
        rc, out = root.sh("scripts/setup --test --list", CLONE)
        packages = out.split() if rc == 0 else []
        rc, out = root.sh("apt-get install --no-install-recommends --assume-no "
                          + " ".join(packages))
        m = re.search(r"After this operation, ([\d.,]+) ([kMG]B) of additional", out)
        scale = {"kB": 1 / 1000, "MB": 1, "GB": 1000}
        adds = float(m.group(1).replace(",", "")) * scale[m.group(2)] if m else -1
        stated = readme_size("`scripts/test` adds the test tools")
        check(m and near(adds, stated),
              f"scripts/test adds {adds:.0f} MB as apt counts it; the README says about "
              f"{stated:.0f} MB", out[-1000:])

        # SIGTERM to the daemon (the pid namespace's first process): a clean stop.
        pid1 = int(pathlib.Path(f"/proc/{daemon.pid}/task/{daemon.pid}/children")
                   .read_text().split()[0])
        os.kill(pid1, signal.SIGTERM)
        try:
            rc = daemon.wait(60)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, "SIGTERM stops the daemon cleanly", f"exit {rc}")
        rc, out = root.sh("git status --porcelain", CLONE)
        check(rc == 0 and not out.strip(), "the clone is left clean (git status)", out)
    finally:
        if daemon and daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        if log:
            log.close()
        rootfs.remove_tmp(tmp, opts.keep, "fresh")
    timings["total"] = time.monotonic() - started
    print("fresh: " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))


if __name__ == "__main__":
    rootfs.run_checks(main, "fresh")
