"""The fixtures the integration tests share: daemons (daemons.py, the one launcher) shared by
a module or made per test, a client on them (wire.py, the protocol as the tests speak it),
the fixture folders beside the repository, and where temporary files go."""
import os
import pathlib
import re
import shutil
import sys
import tempfile
import threading

import h5py
import msgpack
import numpy as np
import pytest
import zmq

from daemons import MPIRUN, REPO, TOOL_SLOWDOWN, Daemon, mpi_build
from wire import Conn, assert_alive

SHARED_FIXTURES = REPO.parent / "shared" / "fixtures" / "arkouda"
sys.path.insert(0, str(REPO / "client" / "python"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "not_under_valgrind(reason): skipped when the daemon runs under valgrind "
        "(H5ARKD_WRAPPER): a test of kills or timing, whose code paths the release and "
        "ASan passes run, and which valgrind, running a daemon's threads one at a time, "
        "only makes minutes longer")


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("H5ARKD_WRAPPER"):
        return
    for item in items:
        mark = item.get_closest_marker("not_under_valgrind")
        if mark:
            item.add_marker(pytest.mark.skip(reason=mark.args[0]))


def project_version():
    """The version in project() of CMakeLists.txt, which every program and client reports."""
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"^project\(h5ark VERSION (\S+)", text, re.M).group(1)


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


@pytest.fixture(scope="module")
def conn(daemon):
    """Conn (wire.py) on the module's daemon, its data directory made."""
    daemon.data_dir.mkdir(exist_ok=True)
    return Conn(daemon)


@pytest.fixture(params=[1, 2], ids=["one_rank", "two_ranks"])
def ranked_conn(request):
    """Conn on a daemon of its own, of one rank and then of two ranks under mpirun (skipped
    without MPI); the daemon must still answer after the test."""
    if request.param == 2 and (MPIRUN is None or not mpi_build()):
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    d = Daemon(locales=2, ranks=2) if request.param == 2 else Daemon(locales=3)
    try:
        yield Conn(d)
        assert_alive(d)
    finally:
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
    c = h5ark.connect(daemon.endpoint, timeout=60 * TOOL_SLOWDOWN)
    yield c
    if not c.closed:
        c.clear()
        c.close()


@pytest.fixture
def call(conn):
    """call(cmd, frames=(), buffers=None, **args) -> reply header, payloads; on the
    module's daemon."""
    return conn.raw


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
