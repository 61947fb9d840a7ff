"""Three (or more) "machines" on one host: network namespaces joined by a bridge in the
root namespace, and an rsh agent for mpirun that starts a host's processes in its
namespace. Each namespace has its own interfaces, addresses and host name (a UTS
namespace of its own), so MPI and ZeroMQ go over TCP between them as between machines;
the file system is shared, as a cluster's NFS would be. Needs root and `ip netns`.

    with NetnsCluster(3) as c:
        subprocess.run([*c.mpirun_args(3), "hostname"])   # h5aNNNNn0, h5aNNNNn1, ...

Used by tests/python/test_ranks_netns.py and bench/bench.py (group ranks)."""
import atexit
import fcntl
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import time

from daemons import daemon_binary, remove_mpi_session, wait_serving

IP = shutil.which("ip") or "/usr/sbin/ip"
UNSHARE = shutil.which("unshare")
LOCK = "/run/lock/h5ark-netns.lock" if os.path.isdir("/run/lock") else "/tmp/h5ark-netns.lock"

# ssh-style agent: mpirun calls `agent HOST COMMAND...` and expects HOST's shell to run the
# command. The host name is the namespace's; `unshare --uts` gives it that host name so
# that the daemon's `hosts` and Open MPI's processor names tell the ranks apart. The command
# is a shell line (mpirun may put `PATH=...; export PATH;` before orted), hence the eval.
# Without unshare the host name is left alone (it would be the machine's own).
AGENT = """#!/bin/sh
host=$1; shift
exec {ip} netns exec "$host" {prefix}sh -c '{rename}eval "$*"' "$host" "$@"
"""


def agent_script():
    if UNSHARE:
        return AGENT.format(ip=IP, prefix=UNSHARE + " --uts ", rename='hostname "$0"; ')
    return AGENT.format(ip=IP, prefix="", rename="")


def unavailable():
    """Why the namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not os.access(IP, os.X_OK):
        return "`ip` (iproute2) is not installed"
    if subprocess.run([IP, "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` is not available"
    # root without the capabilities (some containers) cannot make one: try
    probe = f"h5a{os.getpid()}probe"
    r = subprocess.run([IP, "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"`ip netns add` fails here: {r.stderr.strip()}"
    subprocess.run([IP, "netns", "del", probe], capture_output=True)
    return None


def _ip(*args, check=True):
    r = subprocess.run([IP, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _remove_stale():
    """Namespaces and bridges left by a run that was killed (its pid is in their names):
    a SIGKILLed pytest cannot clean up after itself, the next run does."""
    for line in _ip("netns", "list", check=False).splitlines():
        m = re.match(r"(h5a(\d+)n\d+)\b", line)
        if m and not _alive(int(m.group(2))):
            _kill_in(m.group(1))
            _ip("netns", "del", m.group(1), check=False)
    for m in re.finditer(r"^\d+: (h5a(\d+)(?:br|v\d+))[@:]", _ip("-o", "link", check=False), re.M):
        if not _alive(int(m.group(2))):
            _ip("link", "del", m.group(1), check=False)
    for d in pathlib.Path(tempfile.gettempdir()).glob("h5ark-netns-*-*"):
        pid = d.name.split("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def _kill_in(ns):
    """SIGKILL every process in namespace `ns` (orted daemonizes, so killing mpirun's
    process group does not reach it)."""
    for _ in range(20):
        pids = [int(p) for p in _ip("netns", "pids", ns, check=False).split()]
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def _free_subnet():
    """10.77.X: the first X no interface of the root namespace is on."""
    used = _ip("-4", "-o", "addr", check=False)
    for x in range(256):
        if f" 10.77.{x}." not in used:
            return f"10.77.{x}"
    raise RuntimeError("no free 10.77.X.0/24 subnet")


class NetnsCluster:
    def __init__(self, hosts=3):
        self.n = hosts
        tag = f"h5a{os.getpid()}"
        self.bridge = tag + "br"
        self.names = [f"{tag}n{i}" for i in range(hosts)]
        self.veths = [f"{tag}v{i}" for i in range(hosts)]
        self.made = []  # what exists, undone in reverse order
        self.tmp = None

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        atexit.register(self.close)  # also when the caller's finally never runs
        return self

    def __exit__(self, *exc):
        self.close()

    def _setup(self):
        # two runs at once (other checkouts) must not pick the same subnet: the choice and
        # the bridge's address are made under a lock
        with open(LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _remove_stale()
            self.prefix = _free_subnet()
            self.subnet = self.prefix + ".0/24"
            self.bridge_address = self.prefix + ".254"
            self.addresses = [f"{self.prefix}.{i + 1}" for i in range(self.n)]
            self.tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"h5ark-netns-{os.getpid()}-"))
            _ip("link", "add", self.bridge, "type", "bridge")
            self.made.append(("link", self.bridge))
            _ip("addr", "add", self.bridge_address + "/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for ns, veth, addr in zip(self.names, self.veths, self.addresses):
            _ip("netns", "add", ns)
            self.made.append(("netns", ns))
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self.made.append(("link", veth))
            _ip("link", "set", veth, "master", self.bridge, "up")
            _ip("-n", ns, "addr", "add", addr + "/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        self.agent = self.tmp / "agent"
        self.agent.write_text(agent_script())
        self.agent.chmod(0o755)
        self.hostfile = self.tmp / "hostfile"
        self.hostfile.write_text("".join(f"{ns} slots=1\n" for ns in self.names))

    def mpirun_args(self, ranks):
        """mpirun and its options for `ranks` ranks, one per namespace in order (rank 0 in
        the first); the program and its arguments follow."""
        return [shutil.which("mpirun") or "mpirun", "--allow-run-as-root",
                "--hostfile", str(self.hostfile), "-np", str(ranks), "--map-by", "node",
                "--mca", "plm_rsh_agent", str(self.agent),
                # every orted is started by mpirun's agent, in the root namespace
                "--mca", "plm_rsh_no_tree_spawn", "1",
                # orted stays mpirun's descendant (else it daemonizes, and is orphaned to
                # a pid 1 that may not reap it), so mpirun's process group holds them all
                "--leave-session-attached",
                "--bind-to", "none",
                "--mca", "btl_tcp_if_include", self.subnet,
                "--mca", "oob_tcp_if_include", self.subnet,
                "-x", "H5ARK_RANK0_ADDRESS=" + self.addresses[0]]

    def pids(self):
        return {ns: _ip("netns", "pids", ns, check=False).split() for ns in self.names}

    def kill_processes(self):
        for ns in self.names:
            _kill_in(ns)

    def close(self):
        """Every process in the namespaces, the links, namespaces, bridge and files: gone.
        Safe to call twice."""
        for kind, name in reversed(self.made):
            if kind == "netns":
                _kill_in(name)
        for kind, name in reversed(self.made):
            if kind == "link":
                # deleting our end takes the peer in the namespace with it, now rather than
                # when the namespace goes (which is asynchronous)
                _ip("link", "del", name, check=False)
            else:
                _ip("netns", "del", name, check=False)
        self.made = []
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def leftovers(self):
        """Names of ours still present (empty after close())."""
        names = set(_ip("netns", "list", check=False).split())
        links = _ip("-o", "link", check=False)
        return ([ns for ns in self.names if ns in names] +
                [ln for ln in [self.bridge, *self.veths] if re.search(rf"^\d+: {ln}[@:]", links,
                                                                      re.M)])


class NetnsDaemon:
    """h5arkd as `ranks` ranks of `threads` locales, one rank per namespace, rank 0 serving
    tcp://<first namespace's address>:5550+ranks; its data directory in the cluster's files."""

    def __init__(self, cluster, ranks, threads):
        self.cluster, self.ranks, self.threads = cluster, ranks, threads
        self.tmp = cluster.tmp / f"daemon-{ranks}"  # goes with the cluster, even after SIGKILL
        self.data_dir = self.tmp / "data"  # one file system for all: the cluster's NFS
        self.data_dir.mkdir(parents=True)
        self.endpoint = f"tcp://{cluster.addresses[0]}:{5550 + ranks}"  # one port a daemon
        self.log = open(self.tmp / "mpirun.log", "w+")
        self.proc = None
        try:
            self._start()
        except BaseException:
            self.cleanup()
            raise

    def _start(self):
        cluster = self.cluster
        # as in test_ranks.MpiDaemon: no leak check of the ranks under a sanitizer build
        # (Open MPI's unloaded components), every other check on
        asan = os.environ.get("ASAN_OPTIONS")
        env = {**os.environ, **({"ASAN_OPTIONS": asan + ":detect_leaks=0"} if asan else {})}
        self.proc = subprocess.Popen(
            [*cluster.mpirun_args(self.ranks), daemon_binary(), "--endpoint", self.endpoint,
             "--locales", str(self.threads), "--data-dir", str(self.data_dir),
             "--log-level", "info"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        wait_serving(self.proc, self.endpoint, 30, self.read_log, "h5arkd in the namespaces")

    def read_log(self):
        self.log.flush()
        return (self.tmp / "mpirun.log").read_text()

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.cluster.kill_processes()  # the orteds and ranks, daemonized away from mpirun
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.proc is not None:
            remove_mpi_session(self.proc.pid)
