"""One launcher for the daemons the integration tests run: h5arkd as one process, or as
several ranks under mpirun, on a temporary endpoint and data directory; and the waits and
clean-ups that go with them."""
import contextlib
import os
import re
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from wire import request

REPO = pathlib.Path(__file__).resolve().parents[2]


def tool_slowdown():
    """How many times slower than the release build the daemon runs: under a tool
    (H5ARKD_WRAPPER, e.g. valgrind, one thread at a time) 12; a sanitizer build (ASan +
    UBSan, unoptimised: the build tree of H5ARKD says so) 3."""
    if os.environ.get("H5ARKD_WRAPPER"):
        return 12
    binary = os.environ.get("H5ARKD", str(REPO / "build" / "server" / "h5arkd"))
    cache = pathlib.Path(os.path.abspath(binary)).parents[1] / "CMakeCache.txt"
    try:
        return 3 if "H5ARK_SANITIZE:BOOL=ON" in cache.read_text() else 1
    except OSError:
        return 1


# Waits that bound a reply, and windows that must outlast a few requests, scale by this.
TOOL_SLOWDOWN = tool_slowdown()
MPIRUN = shutil.which("mpirun")
RANK_THREADS = 2  # locales per rank, unless a test says otherwise

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "ERROR: ThreadSanitizer")


def daemon_binary():
    # absolute: a test may run it from another folder (scripts/test gives a relative one)
    path = os.path.abspath(os.environ.get("H5ARKD", str(REPO / "build" / "server" / "h5arkd")))
    if not os.access(path, os.X_OK):
        pytest.exit(f"h5arkd not found at {path}: build first or set H5ARKD", returncode=2)
    return path


def mpi_build():
    """Whether this h5arkd was built with MPI (else it refuses to start under mpirun)."""
    cache = pathlib.Path(daemon_binary()).parents[1] / "CMakeCache.txt"
    return not cache.exists() or "MPI_C_FOUND:INTERNAL=1" in cache.read_text() or \
        "MPI_C_FOUND:BOOL=TRUE" in cache.read_text()


class Daemon:
    """One h5arkd: a process of its own, or with `ranks` the daemon as that many ranks
    started by mpirun (in a session of its own, so that a failed test can end mpirun and
    every rank at once). Stop it with stop() or shutdown(); cleanup() at teardown."""

    def __init__(self, locales=3, token=None, max_memory=None, extra_args=(), endpoint=None,
                 token_file=None, data_dir=None, env=None, preexec_fn=None, ranks=None,
                 arkouda=False):
        """`locales`: per rank. `token` is sent with the readiness ping; it is written to a
        token file of its own unless `token_file` (a file of several tokens) is given.
        `env`: variables added to the daemon's environment; `preexec_fn`: run in the child
        before exec (the signal state it inherits, say). `arkouda`: also serve Arkouda's
        dialect, at self.ak_endpoint."""
        self.ranks = ranks
        self.locales = locales * (ranks or 1)  # every rank's together
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="h5ark-ranks-" if ranks else "h5ark-test-"))
        self.data_dir = pathlib.Path(data_dir) if data_dir else self.tmp / "data"
        self.endpoint = endpoint or f"ipc://{self.tmp}/h5arkd.sock"
        self.token = token
        args = [daemon_binary(), "--endpoint", self.endpoint, "--locales", str(locales),
                "--data-dir", str(self.data_dir), "--log-level", "info" if ranks else "warn"]
        if token is not None and token_file is None:
            token_file = self.tmp / "token"
            token_file.write_text(token + "\n")
        if token_file is not None:
            args += ["--token-file", str(token_file)]
        if max_memory is not None:
            args += ["--max-memory", str(max_memory)]
        self.ak_endpoint = f"ipc://{self.tmp}/ak.sock" if arkouda else None
        if arkouda:
            args += ["--arkouda-endpoint", self.ak_endpoint]
        args += list(extra_args)
        env = {**os.environ, **(env or {})}
        if ranks:
            args = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                    "-np", str(ranks), *args]
            # Under a sanitizer build, leak checking is off for the ranks: Open MPI's
            # components are unloaded by MPI_Finalize with blocks still allocated, which
            # LeakSanitizer reports from an unknown module and no suppression can name. The
            # one-rank suite checks h5ark's own leaks; every other sanitizer check stays on.
            if env.get("ASAN_OPTIONS"):
                env["ASAN_OPTIONS"] += ":detect_leaks=0"
        else:
            # H5ARKD_WRAPPER runs the daemon under a tool, e.g. "valgrind --leak-check=full
            # --errors-for-leak-kinds=definite --error-exitcode=99"
            args = [*os.environ.get("H5ARKD_WRAPPER", "").split(), *args]
        self.log = open(self.tmp / "daemon.log", "w+")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     preexec_fn=preexec_fn, start_new_session=bool(ranks))
        try:
            wait_serving(self.proc, self.endpoint, (60 if ranks else 20) * TOOL_SLOWDOWN,
                         self.read_log, "h5arkd under mpirun" if ranks else "h5arkd",
                         token=token)
        except RuntimeError:
            self.kill()
            raise

    def read_log(self):
        self.log.flush()
        return (self.tmp / "daemon.log").read_text()

    def wait_log(self, pattern, seconds=10):
        """The log once `pattern` (a multi-line regex) is in it. A reply may reach the client
        before its log line reaches the file: under mpirun, rank 0's output is forwarded."""
        log = [""]

        def found():
            log[0] = self.read_log()
            return re.search(pattern, log[0], re.M)
        wait_for(found, lambda: f"line matching {pattern!r} in the log; its end:\n"
                 f"{log[0][-3000:]}", seconds)
        return log[0]

    def alive(self):
        return self.proc.poll() is None

    def rank_pids(self):
        """{rank: pid} of the h5arkd processes under mpirun (probes excluded)."""
        pids = {}
        for p in pathlib.Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                cmd = (p / "cmdline").read_bytes().split(b"\0")
                if self.endpoint.encode() not in cmd or b"--file-probe" in cmd:
                    continue
                env = dict(kv.split(b"=", 1) for kv in (p / "environ").read_bytes().split(b"\0")
                           if b"=" in kv)
                if b"OMPI_COMM_WORLD_RANK" in env and b"h5arkd" in cmd[0]:
                    pids[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(p.name)
            except OSError:
                continue
        return pids

    def kill(self):
        """SIGKILL the daemon (under mpirun: mpirun and every rank)."""
        if self.proc.poll() is None:
            if self.ranks:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
            self.proc.wait()

    def kill_during(self, work, seconds):
        """SIGKILL the daemon `seconds` into work(stop), which runs on a thread of its own;
        then set stop (a threading.Event) and wait for work to return (it must, once the
        daemon is dead or stop is set)."""
        stop = threading.Event()
        t = threading.Thread(target=work, args=(stop,))
        t.start()
        try:
            time.sleep(seconds)
            self.kill()
        finally:
            stop.set()
            t.join()

    def stop(self, sig=signal.SIGTERM, timeout=30 * TOOL_SLOWDOWN):
        """Send `sig` and wait for the exit; its status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise
        self.log.close()
        return self.proc.returncode

    def shutdown(self, timeout=60 * TOOL_SLOWDOWN):
        """Stop with the `shutdown` command; the exit status (mpirun's with ranks)."""
        hdr, _ = request(self.endpoint, {"v": 1, "cmd": "shutdown", "token": self.token})
        assert hdr["ok"], hdr
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the daemon did not stop within {timeout} s of shutdown: " +
                                 self.read_log())

    def sanitizer_reports(self):
        """Reports an ASan/UBSan/LSan build of the daemon wrote to its log."""
        text = (self.tmp / "daemon.log").read_text()
        return [line for line in text.splitlines() if any(
            mark in line for mark in SANITIZER_MARKS)]

    def cleanup(self):
        """One process: stop it gracefully (so a sanitizer build checks for leaks at exit)
        and fail the test if it did not exit cleanly or a sanitizer complained. Ranks: end
        mpirun and every rank, and remove what Open MPI left."""
        if self.ranks:
            self.kill()
            self.log.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
            remove_mpi_session(self.proc.pid)
            return
        problems = []
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(60 * TOOL_SLOWDOWN)  # a tool checks for leaks at exit
                if self.proc.returncode != 0:
                    problems.append(f"h5arkd exited with {self.proc.returncode} on SIGTERM")
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problems.append(f"h5arkd did not stop within {60 * TOOL_SLOWDOWN} s of SIGTERM")
        elif self.proc.returncode not in (0, -signal.SIGKILL, -signal.SIGTERM):
            problems.append(f"h5arkd died with status {self.proc.returncode}")
        problems += self.sanitizer_reports()
        log = (self.tmp / "daemon.log").read_text() if problems else ""
        if not self.log.closed:
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if problems:
            raise AssertionError("daemon problems:\n" + "\n".join(problems) + "\n--- log ---\n" + log[-20000:])


def wait_for(cond, what, seconds=10):
    """cond()'s first true value, polled until `seconds` (scaled under a tool) have passed;
    else fail naming `what` (a string, or a function giving one). An effect a reply does not
    wait for (a log line forwarded by mpirun, memory freed once the last byte went out, a
    request seen in `status`) is waited for so, then asserted."""
    end = time.time() + seconds * TOOL_SLOWDOWN
    while True:
        got = cond()
        if got:
            return got
        if time.time() >= end:
            raise AssertionError(f"no {what() if callable(what) else what} within "
                                 f"{seconds * TOOL_SLOWDOWN} s")
        time.sleep(0.02)


def wait_serving(proc, endpoint, seconds, read_log, what, token=None):
    """Wait until the daemon started as proc (mpirun, say) answers ping at endpoint; raise
    with its log when it exits first or does not answer within seconds."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {read_log()}")
        try:
            if request(endpoint, {"v": 1, "cmd": "ping", "token": token},
                       timeout_ms=500)[0].get("ok"):
                return
        except TimeoutError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not answer ping within {seconds} s: {read_log()}")


def remove_mpi_session(mpirun_pid):
    """Remove the session folder Open MPI's mpirun `mpirun_pid` made under TMPDIR
    (ompi.HOST.UID/pid.PID, some 8 MB), which it leaves when it is killed."""
    base = pathlib.Path(tempfile.gettempdir())
    for d in base.glob(f"ompi.*/pid.{mpirun_pid}"):
        shutil.rmtree(d, ignore_errors=True)
        with contextlib.suppress(OSError):
            d.parent.rmdir()  # when no other mpirun's is beside it


def free_port():
    """A loopback TCP port where, for now, nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_tcp_endpoint():
    """A loopback TCP endpoint where, for now, nothing listens."""
    return f"tcp://127.0.0.1:{free_port()}"
