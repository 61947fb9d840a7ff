"""Fixtures shared by the integration tests: a real h5arkd on a temporary endpoint and
data directory, and a raw ZeroMQ + MessagePack client that knows only PROTOCOL.md."""
import contextlib
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import h5py
import msgpack
import numpy as np
import pytest
import zmq

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures" / "arkouda"
# A daemon run under a tool (H5ARKD_WRAPPER, e.g. valgrind) is many times slower and runs
# one thread at a time: waits that bound a reply scale by this.
TOOL_SLOWDOWN = 12 if os.environ.get("H5ARKD_WRAPPER") else 1
sys.path.insert(0, str(REPO / "client" / "python"))


def project_version():
    """The version in project() of CMakeLists.txt, which every program and client reports."""
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"^project\(h5ark VERSION (\S+)", text, re.M).group(1)


def daemon_binary():
    # absolute: a test may run it from another folder (scripts/test gives a relative one)
    path = os.path.abspath(os.environ.get("H5ARKD", str(REPO / "build" / "server" / "h5arkd")))
    if not os.access(path, os.X_OK):
        pytest.exit(f"h5arkd not found at {path}: build first or set H5ARKD", returncode=2)
    return path


class Daemon:
    """One h5arkd process. Stop it with stop(); it is also stopped at fixture teardown."""

    def __init__(self, locales=3, token=None, max_memory=None, extra_args=(), endpoint=None,
                 token_file=None, data_dir=None, env=None, preexec_fn=None):
        """`token` is sent with the readiness ping; it is written to a token file of its
        own unless `token_file` (a file of several tokens) is given. `env`: variables added
        to the daemon's environment; `preexec_fn`: run in the child before exec (the signal
        state it inherits, say)."""
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="h5ark-test-"))
        self.data_dir = pathlib.Path(data_dir) if data_dir else self.tmp / "data"
        self.endpoint = endpoint or f"ipc://{self.tmp}/h5arkd.sock"
        self.token = token
        # H5ARKD_WRAPPER runs the daemon under a tool, e.g. "valgrind --leak-check=full
        # --errors-for-leak-kinds=definite --error-exitcode=99"
        wrapper = os.environ.get("H5ARKD_WRAPPER", "").split()
        args = [*wrapper, daemon_binary(), "--endpoint", self.endpoint, "--locales", str(locales),
                "--data-dir", str(self.data_dir), "--log-level", "warn"]
        if token is not None and token_file is None:
            token_file = self.tmp / "token"
            token_file.write_text(token + "\n")
        if token_file is not None:
            args += ["--token-file", str(token_file)]
        if max_memory is not None:
            args += ["--max-memory", str(max_memory)]
        args += list(extra_args)
        self.log = open(self.tmp / "daemon.log", "w+")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})}, preexec_fn=preexec_fn)
        self._wait_ready()

    def _wait_ready(self):
        deadline = time.time() + 20 * TOOL_SLOWDOWN
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"h5arkd exited with {self.proc.returncode}: {self.read_log()}")
            try:
                hdr, _ = request(self.endpoint, {"v": 1, "cmd": "ping", "token": self.token},
                                 timeout_ms=500)
                if hdr.get("ok"):
                    return
            except TimeoutError:
                pass
            time.sleep(0.05)
        raise RuntimeError("h5arkd did not answer ping in time")

    def read_log(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        self.log.close()
        return self.proc.returncode

    def sanitizer_reports(self):
        """Reports an ASan/UBSan/LSan build of the daemon wrote to its log."""
        text = self.read_log() if not self.log.closed else (self.tmp / "daemon.log").read_text()
        return [line for line in text.splitlines() if any(
            mark in line for mark in SANITIZER_MARKS)]

    def cleanup(self):
        """Stop the daemon gracefully (so a sanitizer build checks for leaks at exit) and
        fail the test if it did not exit cleanly or a sanitizer complained."""
        problems = []
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(60)
                if self.proc.returncode != 0:
                    problems.append(f"h5arkd exited with {self.proc.returncode} on SIGTERM")
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problems.append("h5arkd did not stop within 60 s of SIGTERM")
        elif self.proc.returncode not in (0, -signal.SIGKILL, -signal.SIGTERM):
            problems.append(f"h5arkd died with status {self.proc.returncode}")
        problems += self.sanitizer_reports()
        log = (self.tmp / "daemon.log").read_text() if problems else ""
        if not self.log.closed:
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if problems:
            raise AssertionError("daemon problems:\n" + "\n".join(problems) + "\n--- log ---\n" + log[-20000:])


SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "ERROR: ThreadSanitizer")

def encode_strings(strs):
    """Strings (str or bytes) as the protocol's segments and values buffers."""
    enc = [s.encode("utf-8") if isinstance(s, str) else s for s in strs]
    offs, pos = [], 0
    for b in enc:
        offs.append(pos)
        pos += len(b) + 1
    return np.array(offs, dtype="<i8").tobytes(), b"".join(b + b"\0" for b in enc)


def decode_strings(seg, val):
    """The strings of segments and values buffers, checking their form as it goes."""
    offs = np.frombuffer(seg, dtype="<i8")
    if len(offs) == 0:
        assert val == b""
        return []
    assert offs[0] == 0, offs[:4]
    assert all(offs[i] < offs[i + 1] for i in range(len(offs) - 1)), offs
    ends = list(offs[1:]) + [len(val)]
    out = []
    for a, b in zip(offs, ends):
        assert val[b - 1:b] == b"\0", (a, b)
        out.append(val[a:b - 1].decode("utf-8"))
    return out


def locale_file(path, i):
    """Arkouda's distributed name: split at the last '.', unless it is in a directory."""
    head, sep, ext = path.rpartition(".")
    if sep and "/" not in ext and head and not head.endswith("/"):
        return f"{head}_LOCALE{i:04d}.{ext}"
    return f"{path}_LOCALE{i:04d}"


def h5_pdarray(files, path):
    """A dataset read with h5py from each file, concatenated."""
    parts = []
    for f in files:
        with h5py.File(f, "r") as h:
            parts.append(h[path][()])
    return np.concatenate(parts)


def h5_strings(files, group):
    """A Strings group read with h5py from each file, as Python strings."""
    out = []
    for f in files:
        with h5py.File(f, "r") as h:
            values = h[f"{group}/values"][()].tobytes()
            segments = list(h[f"{group}/segments"][()]) + [len(values)]
            out += [values[s:e - 1].decode("utf-8") for s, e in zip(segments, segments[1:])]
    return out


def unique(prefix):
    """A file or object name no other test uses on a shared daemon."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def block_bounds(n, parts):
    """[start, stop) of each part of n elements in Arkouda's block distribution."""
    return [(-(-n * b // parts), -(-n * (b + 1) // parts)) for b in range(parts)]


def edge_values(dtype):
    """Values at the edges of a dtype's range, plus the awkward floats (NaN with a payload,
    infinities, -0.0, the smallest normal and subnormal)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([True, False, True, True, False], dtype=dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [info.min, info.min + 1, 0, 1, 2, info.max - 1, info.max]
        if dt.kind == "i":
            vals += [-1, -2]
        return np.array(vals, dtype=dt)
    info = np.finfo(dt)
    uint = np.dtype(f"u{dt.itemsize}")
    payload_nan = np.array([int(np.array(np.nan, dt).view(uint)) | 0x5], uint).view(dt)[0]
    return np.array([np.nan, payload_nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.25, info.max,
                     -info.max, info.tiny, np.nextafter(dt.type(0), dt.type(1))], dtype=dt)


_ctx = zmq.Context.instance()


def request(endpoint, header, frames=(), timeout_ms=30000, raw_header=None):
    """Send one request on a fresh DEALER socket and return (reply_header, payload_frames).
    `raw_header` (bytes) replaces the packed header, to send malformed ones."""
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    try:
        head = raw_header if raw_header is not None else msgpack.packb(
            {k: v for k, v in header.items() if v is not None}, use_bin_type=True)
        sock.send_multipart([head, *frames], copy=False)
        if not sock.poll(timeout_ms):
            raise TimeoutError(f"no reply within {timeout_ms} ms")
        parts = sock.recv_multipart()
        return msgpack.unpackb(parts[0], raw=False), parts[1:]
    finally:
        sock.close()


def wait_serving(proc, endpoint, seconds, read_log, what):
    """Wait until the daemon started as proc (mpirun, say) answers ping at endpoint; raise
    with its log when it exits first or does not answer within seconds."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {read_log()}")
        try:
            if request(endpoint, {"v": 1, "cmd": "ping"}, timeout_ms=500)[0].get("ok"):
                return
        except TimeoutError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer ping within {seconds} s: {read_log()}")


def remove_mpi_session(mpirun_pid):
    """Remove the session folder Open MPI's mpirun `mpirun_pid` made under TMPDIR
    (ompi.HOST.UID/pid.PID, some 8 MB), which it leaves when it is killed."""
    base = pathlib.Path(tempfile.gettempdir())
    for d in base.glob(f"ompi.*/pid.{mpirun_pid}"):
        shutil.rmtree(d, ignore_errors=True)
        with contextlib.suppress(OSError):
            d.parent.rmdir()  # when no other mpirun's is beside it


def free_tcp_endpoint():
    """A loopback TCP endpoint where, for now, nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


class SlowDaemon:
    """A stand-in daemon that answers `ping` at once and every other command `delay`
    seconds later, with an empty list of objects: a request that outlasts a client's
    connect timeout, however fast the machine. `pings` counts the pings."""

    def __init__(self, tmp, delay):
        self.endpoint = f"ipc://{tmp}/slow.sock"
        self.delay, self.pings = delay, 0
        self._sock = _ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.bind(self.endpoint)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            if not self._sock.poll(50):
                continue
            identity, head, *_ = self._sock.recv_multipart()
            hdr = msgpack.unpackb(head, raw=False)
            if hdr.get("cmd") == "ping":
                self.pings += 1
                result = {"pong": True}
            else:
                self._stop.wait(self.delay)
                result = {"objects": []}
            reply = {"v": 1, "id": hdr.get("id"), "ok": True, "result": result}
            self._sock.send_multipart([identity, msgpack.packb(reply, use_bin_type=True)])

    def close(self):
        self._stop.set()
        self._thread.join()
        self._sock.close()


@pytest.fixture
def slow_daemon(tmp_path):
    """slow_daemon(delay) -> a SlowDaemon, closed at teardown."""
    made = []

    def make(delay):
        made.append(SlowDaemon(tmp_path, delay))
        return made[-1]

    yield make
    for d in made:
        d.close()


class Conn:
    """The protocol calls the integration tests share, on one daemon."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.dir = daemon.data_dir

    def raw(self, cmd, frames=(), buffers=None, **args):
        hdr = {"v": 1, "id": 7, "cmd": cmd, "args": args}
        if buffers is not None:
            hdr["buffers"] = buffers
        return request(self.daemon.endpoint, hdr, frames, timeout_ms=120000)

    def ok(self, cmd, frames=(), buffers=None, **args):
        hdr, payload = self.raw(cmd, frames, buffers, **args)
        assert hdr["ok"], hdr
        return hdr, payload

    def fail(self, cmd, **args):
        hdr, _ = self.raw(cmd, **args)
        assert not hdr["ok"], hdr
        assert hdr["error"]["message"], hdr
        return hdr["error"]

    def put(self, arr, split=None, **kw):
        """Put a pdarray; `split`: frame sizes to cut the payload into (see framed)."""
        arr = np.ascontiguousarray(arr)
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        hdr, _ = self.ok("put", framed([data], split),
                         buffers=[{"name": "values", "nbytes": len(data)}],
                         objtype="pdarray", dtype=str(arr.dtype), shape=[arr.size], **kw)
        return hdr["result"]["object"]["name"]

    def put_strings(self, strings, split=None):
        raw = [s.encode() for s in strings]
        values = b"".join(s + b"\0" for s in raw)
        segs = np.cumsum([0] + [len(s) + 1 for s in raw[:-1]]).astype("<i8")[:len(raw)]
        hdr, _ = self.ok("put", framed([segs.tobytes(), values], split),
                         buffers=[{"name": "segments", "nbytes": segs.nbytes},
                                  {"name": "values", "nbytes": len(values)}],
                         objtype="strings", dtype="str", shape=[len(raw)])
        return hdr["result"]["object"]["name"]

    def buffers(self, name, **kw):
        """get `name` (kw: start, stop): its descriptor and {buffer name: bytes}."""
        hdr, frames = self.ok("get", name=name, **kw)
        blob = b"".join(bytes(f) for f in frames)
        out, pos = {}, 0
        for spec in hdr.get("buffers", []):
            out[spec["name"]] = blob[pos:pos + spec["nbytes"]]
            pos += spec["nbytes"]
        return hdr["result"]["object"], out

    def get(self, name, **kw):
        desc, bufs = self.buffers(name, **kw)
        assert desc["objtype"] == "pdarray"
        return np.frombuffer(bufs.get("values", b""), dtype=np.dtype(desc["dtype"]).newbyteorder("<"))

    def get_strings(self, name, **kw):
        desc, bufs = self.buffers(name, **kw)
        assert desc["objtype"] == "strings"
        values = bufs.get("values", b"")
        segs = list(np.frombuffer(bufs.get("segments", b""), "<i8")) + [len(values)]
        return [values[s:e - 1].decode() for s, e in zip(segs, segs[1:])]


def framed(buffers, split=None):
    """Payload frames for `buffers` (bytes, in order): one frame each, or with `split` (a
    list of frame sizes, used in turn) the bytes of all of them cut at those sizes, so
    frames may end mid-element and one frame may end one buffer and start the next."""
    if not split:
        return list(buffers)
    data, out, pos, i = b"".join(buffers), [], 0, 0
    while pos < len(data):
        out.append(data[pos:pos + split[i % len(split)]])
        pos += split[i % len(split)]
        i += 1
    return out


@pytest.fixture(scope="session", autouse=True)
def temp_under_basetemp(tmp_path_factory):
    """Every temporary file of the run under pytest's basetemp (which the build gives as
    --basetemp=<build>/pytest-tmp): the daemons' folders and Open MPI's session folders
    (mpirun and its ranks take TMPDIR), so that nothing is left in /tmp. A folder whose
    path is too long for the Unix sockets in it (108 bytes, with Open MPI's names under
    it) is a short one in /tmp instead, removed at the end."""
    tmp = tmp_path_factory.mktemp("tmp", numbered=False)
    short = None
    if len(str(tmp)) > 48:
        tmp = short = pathlib.Path(tempfile.mkdtemp(prefix="h5ark-tests-"))
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(tmp), str(tmp)
    yield tmp
    if saved[0] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved[0]
    tempfile.tempdir = saved[1]
    if short:
        shutil.rmtree(short, ignore_errors=True)


@pytest.fixture(scope="module")
def daemon():
    """A daemon with 3 locales shared by a test module."""
    d = Daemon(locales=3)
    yield d
    d.cleanup()


@pytest.fixture
def start_daemon():
    """Factory for daemons with other settings; all are stopped at teardown."""
    started = []

    def start(**kwargs):
        d = Daemon(**kwargs)
        started.append(d)
        return d

    yield start
    for d in started:
        d.cleanup()


@pytest.fixture
def client(daemon):
    """The Python package's client on the module's daemon; clears the registry after."""
    import h5ark
    c = h5ark.connect(daemon.endpoint, timeout=60)
    yield c
    if not c.closed:
        c.clear()
        c.close()


@pytest.fixture
def call(daemon):
    """call(cmd, frames=(), **args) -> reply header, payloads; on the module's daemon."""

    def do(cmd, frames=(), buffers=None, **args):
        hdr = {"v": 1, "id": 1, "cmd": cmd, "args": args}
        if buffers is not None:
            hdr["buffers"] = buffers
        return request(daemon.endpoint, hdr, frames)

    return do


@pytest.fixture
def arkouda_fixtures():
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"Arkouda fixtures not found at {SHARED_FIXTURES} (../shared beside the repository)")
    return SHARED_FIXTURES


EXETERA_FIXTURES = SHARED_FIXTURES.parent / "exetera"


@pytest.fixture
def exetera_fixtures():
    if not (EXETERA_FIXTURES / "session.hdf5").is_file():
        pytest.skip(f"ExeTera fixtures not found at {EXETERA_FIXTURES} (../shared beside the repository)")
    return EXETERA_FIXTURES


def check_columns_must_agree(conn, names):
    """names: three files whose group `df` has the columns (fields) [a, b], [a, b, c] and [a].
    Whichever file comes first gives the columns; a later one lacking one, or holding one
    the files before it do not, is a schema_error naming the file and the column, and with
    allow_errors that file is skipped and named."""
    for files, bad, col in (([0, 1], 1, "c"), ([0, 2], 2, "b"), ([1, 0], 0, "c")):
        paths = [names[i] for i in files]
        for kw in ({"datasets": ["df"]}, {}):
            err = conn.fail("readhdf", paths=paths, **kw)
            assert err["code"] == "schema_error", (files, err)
            assert f"{bad}.h5" in err["message"], err
            assert f"'{col}'" in err["message"] or f"df/{col}" in err["message"], err
        hdr, _ = conn.ok("readhdf", paths=paths, datasets=["df"], allow_errors=True)
        assert len(hdr["result"]["file_errors"]) == 1, hdr
        assert f"{bad}.h5" in hdr["result"]["file_errors"][0], hdr
        df = hdr["result"]["objects"]["df"]
        assert df["size"] == 3 and df["columns"] == (["a", "b"] if files[0] == 0 else
                                                      ["a", "b", "c"]), df
        conn.ok("delete", names=[df["name"]])
