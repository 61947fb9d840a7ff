"""Requests in flight and their progress: the daemon's `status` (from a second client, while
long requests run, and once they are gone), the Python client's progress bar and the
command-line tool's progress line, each shown on a terminal only (run under a
pseudo-terminal here) and only for requests that take more than a second.

Requests are made long with the test-only `fault` argument `delay_ms` (docs/FAULTS.md):
every pread, pwrite and fsync of the storage paths sleeps first, so a 128 MiB tohdf takes
seconds on any machine without writing gigabytes."""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import time

import msgpack
import pytest
import zmq

from daemons import Daemon, free_tcp_endpoint, REPO, TOOL_SLOWDOWN
from wire import request, unique

CLI = os.environ.get("H5ARK_CLI", str(REPO / "build" / "client" / "c" / "h5ark"))
ROWS = 16 * 1024 * 1024  # int64: 128 MiB, 16 MiB pieces, 4 per locale
DELAY_MS = 150
FIELDS = {"seq", "id", "cmd", "client", "peer", "started", "elapsed", "done", "total", "unit"}


@pytest.fixture(scope="module")
def daemon():
    """Two locales and one handler thread: a long request occupies every handler, and
    `status` must still answer."""
    d = Daemon(locales=2, extra_args=["--handlers", "1"], env={"H5ARK_FAULTS": "1"})
    yield d
    d.cleanup()


_ctx = zmq.Context.instance()


def call(daemon, cmd, identity=None, timeout_ms=None, **args):
    """One request on a fresh DEALER (with routing identity `identity`); the reply header."""
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if identity:
        sock.setsockopt(zmq.ROUTING_ID, identity.encode())
    sock.connect(daemon.endpoint)
    try:
        sock.send(msgpack.packb({"v": 1, "id": 5, "cmd": cmd, "args": args}))
        if not sock.poll(timeout_ms or 120000 * TOOL_SLOWDOWN):
            raise TimeoutError(f"no reply to {cmd}")
        return msgpack.unpackb(sock.recv_multipart()[0], raw=False)
    finally:
        sock.close()


def status(daemon, **args):
    hdr = call(daemon, "status", timeout_ms=5000 * TOOL_SLOWDOWN, **args)
    assert hdr["ok"], hdr
    return hdr["result"]["requests"]


@pytest.fixture(scope="module")
def big(daemon):
    """A 128 MiB int64 array and a distributed file set of it."""
    hdr = call(daemon, "create", dtype="int64", fill="arange", stop=ROWS, name="big")
    assert hdr["ok"], hdr
    hdr = call(daemon, "tohdf", names=["big"], path="big.h5")
    assert hdr["ok"], hdr
    return "big"


@pytest.fixture
def slow(daemon):
    """Storage calls slowed for the test, at full speed again after it."""
    assert call(daemon, "fault", delay_ms=DELAY_MS)["ok"]
    yield
    assert call(daemon, "fault")["ok"]


def watch(daemon, cmd, identity, poll=0.05, **args):
    """Run `cmd` from a client with routing identity `identity` and sample `status` (from
    another client) until its reply: (reply, [its status entries], status after)."""
    reply = {}
    worker = threading.Thread(target=lambda: reply.update(call(daemon, cmd, identity, **args)))
    worker.start()
    seen = []
    while worker.is_alive():
        for entry in status(daemon):
            if entry["client"] == identity:
                seen.append(entry)
        time.sleep(poll)
    worker.join()
    return reply, seen, status(daemon)


def test_status_of_an_idle_daemon_is_empty(daemon):
    assert status(daemon) == []
    assert status(daemon, client="nobody") == []
    hdr = call(daemon, "status", client=7)
    assert not hdr["ok"] and hdr["error"]["code"] == "bad_request", hdr
    assert "client" in hdr["error"]["message"]
    hdr = call(daemon, "status", clients="x")
    assert not hdr["ok"] and "clients" in hdr["error"]["message"], hdr


def test_status_with_a_read_token(start_daemon, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("w-token write\nr-token read\n")
    d = start_daemon(locales=1, token="w-token", token_file=tokens)
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "status", "token": "r-token"})
    assert hdr["ok"] and hdr["result"]["requests"] == [], hdr
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "status"})
    assert hdr["error"]["code"] == "unauthorized", hdr


def test_status_gives_a_tcp_clients_address(start_daemon):
    d = start_daemon(locales=1, endpoint=free_tcp_endpoint(), env={"H5ARK_FAULTS": "1"})
    assert call(d, "create", dtype="int64", fill="arange", stop=1000, name="s")["ok"]
    assert call(d, "fault", delay_ms=DELAY_MS)["ok"]  # even a small file then takes a second
    reply, seen, after = watch(d, "tohdf", "tcp-client", names=["s"], path="s.h5")
    assert reply["ok"], reply
    assert seen and all(e["peer"] == "127.0.0.1" for e in seen), seen
    assert after == []
    assert call(d, "fault")["ok"]


def test_tohdf_progress_rises_to_total_then_is_gone(daemon, big, slow):
    ident = unique("tohdf")
    reply, seen, after = watch(daemon, "tohdf", ident, names=[big], path="w.h5")
    assert reply["ok"], reply
    assert seen, "the tohdf never showed in status"
    for e in seen:
        assert set(e) == FIELDS, e
        assert e["cmd"] == "tohdf" and e["id"] == 5 and e["client"] == ident, e
        # over ipc, ZeroMQ names the peer by its credentials, the process id last
        assert e["peer"] is None or e["peer"].endswith(f":{os.getpid()}"), e
        assert e["elapsed"] >= 0 and e["started"] > 1.6e9, e
    measured = [e for e in seen if e["unit"] is not None]
    assert measured, seen
    assert all(e["unit"] == "bytes" and e["total"] == ROWS * 8 for e in measured), measured
    dones = [e["done"] for e in measured]
    assert dones == sorted(dones), dones
    assert len(set(dones)) >= 3, dones  # it moved while the data went out
    assert dones[-1] == ROWS * 8, dones  # all of it, while the files are flushed
    # before the measure (files being laid out), nothing is claimed
    for e in seen[:len(seen) - len(measured)]:
        assert e["done"] is None and e["total"] is None, e
    elapsed = [e["elapsed"] for e in seen]
    assert elapsed == sorted(elapsed), elapsed
    assert after == []


def test_readhdf_progress_rises_then_is_gone(daemon, big, slow):
    ident = unique("readhdf")
    reply, seen, after = watch(daemon, "readhdf", ident, paths=["big.h5"])
    assert reply["ok"], reply
    measured = [e for e in seen if e["unit"] is not None]
    assert measured, seen
    assert all(e["cmd"] == "readhdf" and e["unit"] == "bytes" for e in measured), measured
    assert all(e["total"] == ROWS * 8 for e in measured), measured
    dones = [e["done"] for e in measured]
    assert dones == sorted(dones) and len(set(dones)) >= 2, dones
    assert dones[-1] <= ROWS * 8
    assert after == []
    call(daemon, "delete", names=[reply["result"]["objects"]["big"]["name"]])


def test_groupby_reports_rows(daemon, big):
    ident = unique("groupby")
    reply, seen, after = watch(daemon, "groupby", ident, poll=0.01, keys=[big])
    assert reply["ok"], reply
    assert seen, "the groupby never showed in status"
    assert all(e["cmd"] == "groupby" for e in seen), seen
    measured = [e for e in seen if e["unit"] is not None]  # none while memory is reserved
    assert measured, seen
    for e in measured:
        assert e["unit"] == "rows", e
        assert e["total"] == 2 * ROWS and 0 <= e["done"] <= e["total"], e  # a sort and a merge
    dones = [e["done"] for e in measured]
    assert dones == sorted(dones), dones
    assert after == []
    call(daemon, "delete", names=[reply["result"]["object"]["name"]])


def test_status_answers_while_every_handler_is_busy(daemon, big, slow):
    """With its one handler thread writing, the daemon still answers status at once,
    while an ordinary request waits for the handler."""
    done = threading.Event()
    worker = threading.Thread(target=lambda: (call(daemon, "tohdf", "busy", names=[big],
                                                   path="busy.h5"), done.set()))
    worker.start()
    try:
        deadline = time.time() + 10 * TOOL_SLOWDOWN
        while not any(e["cmd"] == "tohdf" for e in status(daemon)):
            assert time.time() < deadline and not done.is_set(), "tohdf never listed"
            time.sleep(0.02)
        t0 = time.monotonic()
        listed = status(daemon)
        took = time.monotonic() - t0
        assert not done.is_set(), "the tohdf ended too soon to tell"
        assert [e["cmd"] for e in listed] == ["tohdf"], listed
        assert took < 1.0 * TOOL_SLOWDOWN, took
        with pytest.raises(TimeoutError):  # queued behind the tohdf
            call(daemon, "info", timeout_ms=200)
    finally:
        worker.join()


def test_python_status_from_a_second_client(daemon, big, slow):
    import h5ark
    a = h5ark.Client(daemon.endpoint, progress=False)
    b = h5ark.Client(daemon.endpoint, progress=False)
    try:
        result = {}
        worker = threading.Thread(target=lambda: result.update(a.to_hdf([big], "py.h5")))
        worker.start()
        mine = []
        while worker.is_alive():
            mine += [e for e in b.status() if e["client"] == a._identity]
            time.sleep(0.05)
        worker.join()
        assert result["files"], result
        assert mine and {e["cmd"] for e in mine} == {"tohdf"}, mine
        assert b.status() == []
        assert h5ark.status is not None  # module-level too
    finally:
        a.close()
        b.close()


# ---- what a person sees: under a pseudo-terminal, and not -------------------------------

def run_with_stderr(args, tty, env=None, timeout=120):
    """Run args with stderr on a pseudo-terminal (120 columns) or a pipe: (exit status,
    stdout, everything written to stderr)."""
    env = {**os.environ, **(env or {})}
    if not tty:
        proc = subprocess.run(args, capture_output=True, env=env, timeout=timeout * TOOL_SLOWDOWN,
                              stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            env=env)
    os.close(slave)
    chunks = []

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        out = proc.stdout.read()
        proc.wait(timeout * TOOL_SLOWDOWN)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join()
        os.close(master)
    return proc.returncode, out.decode(), b"".join(chunks).decode(errors="replace")


SCRIPT = """
import sys, time
sys.path.insert(0, {client!r})
import h5ark
progress = {{"auto": None, "off": False}}[sys.argv[1]]
c = h5ark.connect({endpoint!r}, progress=progress)
c.info()                                   # quick: never a bar
c.request("fault", {{"delay_ms": {delay}}})
try:
    c.to_hdf([{name!r}], {path!r})         # seconds: a bar on a terminal
finally:
    c.request("fault", {{}})
print("written")
"""


def python_run(daemon, name, mode, tty):
    script = SCRIPT.format(client=str(REPO / "client" / "python"), endpoint=daemon.endpoint,
                           delay=DELAY_MS, name=name, path=unique("bar") + ".h5")
    return run_with_stderr([sys.executable, "-c", script, mode], tty)


def test_python_bar_on_a_terminal(daemon, big):
    pytest.importorskip("tqdm")
    rc, out, err = python_run(daemon, big, "auto", tty=True)
    assert rc == 0 and out.strip() == "written", (rc, out, err)
    assert "tohdf:" in err and "%|" in err, err  # tqdm's bar: "tohdf:  37%|███▊ | 96.0M/128M"
    assert "128M" in err, err
    assert "info" not in err, err  # the quick request got none
    assert "\r" in err  # redrawn in place


def test_python_no_bar_without_a_terminal_or_when_off(daemon, big):
    pytest.importorskip("tqdm")
    rc, out, err = python_run(daemon, big, "auto", tty=False)
    assert rc == 0 and out.strip() == "written", (rc, out, err)
    assert "%|" not in err and "tohdf:" not in err, err
    rc, out, err = python_run(daemon, big, "off", tty=True)
    assert rc == 0 and out.strip() == "written", (rc, out, err)
    assert "%|" not in err and "tohdf:" not in err, err


def test_python_without_tqdm_runs_without_a_bar(daemon, big, tmp_path):
    """tqdm is optional: where it cannot be imported, requests run as ever, with no bar."""
    (tmp_path / "tqdm.py").write_text("raise ImportError('no tqdm here')\n")
    script = SCRIPT.format(client=str(REPO / "client" / "python"), endpoint=daemon.endpoint,
                           delay=DELAY_MS, name=big, path=unique("notqdm") + ".h5")
    rc, out, err = run_with_stderr([sys.executable, "-c", script, "auto"], tty=True,
                                   env={"PYTHONPATH": str(tmp_path)})
    assert rc == 0 and out.strip() == "written", (rc, out, err)
    assert "tohdf:" not in err, err


def cli(daemon, *args, tty):
    return run_with_stderr([CLI, "--endpoint", daemon.endpoint, *map(str, args)], tty)


def test_cli_line_on_a_terminal(daemon, big, slow):
    # slower still: the line shows a rate once it has watched the data for half a second
    assert call(daemon, "fault", delay_ms=2 * DELAY_MS)["ok"]
    path = unique("cli") + ".h5"
    rc, out, err = cli(daemon, "save", big, "--path", path, tty=True)
    assert rc == 0, (rc, out, err)
    assert "wrote " in out and "save:" not in out, out  # the line stays on stderr
    lines = [ln for ln in err.split("\r") if ln.startswith("save: ")]
    assert lines, repr(err)
    assert any("of 128.0 MiB (" in ln and "%)" in ln for ln in lines), lines
    assert any("/s" in ln for ln in lines), lines  # a rate, once it has one
    assert err.endswith("\r"), repr(err)  # cleared at the end
    assert err.replace("\r", "").strip().startswith("save:"), repr(err)


def test_cli_no_line_without_a_terminal(daemon, big, slow):
    rc, out, err = cli(daemon, "save", big, "--path", unique("cli") + ".h5", tty=False)
    assert rc == 0, (rc, out, err)
    assert err == "", err


def test_cli_no_line_for_a_quick_request(daemon):
    assert call(daemon, "create", dtype="int64", fill="arange", stop=1000, name="small")["ok"]
    rc, out, err = cli(daemon, "save", "small", "--path", unique("quick") + ".h5", tty=True)
    assert rc == 0 and "wrote " in out, (rc, out, err)
    assert err == "", repr(err)


def test_cli_status(daemon, big, slow):
    rc, out, err = cli(daemon, "status", tty=False)
    assert rc == 0 and out == "no requests in flight\n", (out, err)
    worker = threading.Thread(target=lambda: call(daemon, "tohdf", "cli-watched", names=[big],
                                                  path="cli-status.h5"))
    worker.start()
    try:
        deadline = time.time() + 10 * TOOL_SLOWDOWN
        while True:
            rc, out, err = cli(daemon, "status", tty=False)
            assert rc == 0, (out, err)
            if "tohdf" in out:
                break
            assert time.time() < deadline, out
            time.sleep(0.05)
    finally:
        worker.join()
    lines = out.splitlines()
    assert lines[0].split() == ["SEQ", "ID", "CLIENT", "PEER", "CMD", "ELAPSED", "DONE", "TOTAL",
                                "PERCENT"], out
    row = lines[1]
    assert "cli-watched" in row and "tohdf" in row, out
    assert row.split()[1] == "5", out  # the request's id
