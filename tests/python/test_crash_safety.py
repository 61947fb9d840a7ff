"""Crash safety: SIGKILL the daemon at random moments during tohdf (truncate, append and
update) and check every file with h5py: each must be exactly as before or exactly as after,
never unreadable or half written, and once a daemon starts again a distributed set is so as
a whole; SIGKILL at chosen calls of a set's commit, after which a restarted daemon
completes the set or leaves it old; the same during a stream of ExeTera writepart requests,
where every part acknowledged must be in the file and the field not completed; and a
restarted daemon removes the temporaries the dead one left."""
import os
import random
import signal
import subprocess
import time

import h5py
import numpy as np
import msgpack
import pytest
import zmq

from daemons import Daemon, daemon_binary, TOOL_SLOWDOWN, wait_for
from wire import request

TRIALS = int(os.environ.get("H5ARK_CRASH_TRIALS", "210"))
N = 1 << 21  # 16 MiB of int64 per write: long enough to be caught mid-way


def call(d, cmd, frames=(), buffers=None, **args):
    hdr = {"v": 1, "id": 1, "cmd": cmd, "args": args}
    if buffers:
        hdr["buffers"] = buffers
    rep = request(d.endpoint, hdr, frames, timeout_ms=60000)[0]
    assert rep["ok"], rep
    return rep["result"]


def state(pattern, data_dir):
    """{file: {dataset: (length, first, last)}} for every file matching pattern; raises if
    any of them cannot be read."""
    out = {}
    for f in sorted(data_dir.glob(pattern)):
        with h5py.File(f, "r") as h:
            out[f.name] = {k: (len(h[k]), int(h[k][0]) if len(h[k]) else None,
                               int(h[k][-1]) if len(h[k]) else None) for k in h.keys()}
    return out


def written_share(file_name, file_type, locales=2, base=1 << 40):
    """(length, first, last) of array b in this file: all of it, or its block."""
    if file_type == "single":
        return (N, base, base + N - 1)
    i = int(file_name.split("_LOCALE")[1][:4])
    lo, hi = -(-N * i // locales), -(-N * (i + 1) // locales)
    return (hi - lo, base + lo, base + hi - 1)


def create(d, name, start):
    call(d, "create", dtype="int64", fill="arange", start=start, stop=start + N, name=name)


MODES = [("truncate", "single"), ("truncate", "distribute"), ("append", "single"),
         ("append", "distribute"), ("update", "single"), ("update", "distribute")]


@pytest.mark.parametrize("mode,file_type", MODES)
def test_kill_during_tohdf(tmp_path, mode, file_type):
    rng = random.Random(f"{mode}-{file_type}")
    trials = max(1, TRIALS // len(MODES))
    outcomes = {"before": 0, "after": 0}
    data_dir = tmp_path / "data"
    pattern = (f"crash_{mode}_{file_type}.h5" if file_type == "single"
               else f"crash_{mode}_{file_type}_LOCALE*.h5")
    window = None  # kills land in [0, window): twice as long as a whole write takes
    last = None  # (before, after) of the previous trial's set

    def check_whole_set():
        """Once a daemon has started again, the set is old or new as a whole (a kill
        between two renames left it mixed; the start completed it)."""
        if last is not None:
            now = state(pattern, data_dir)
            assert now in last, (now, last)

    for i in range(trials):
        d = Daemon(locales=2, data_dir=data_dir)
        try:
            check_whole_set()
            create(d, "a", 0)
            create(d, "b", 1 << 40)
            path = pattern.replace("_LOCALE*", "")
            # appends start from the same one-dataset file each time, so that every trial
            # copies as much as the timed one
            if i == 0 or mode == "append" or not list(data_dir.glob(pattern)):
                call(d, "tohdf", names=["a"], datasets=["x"], path=path, file_type=file_type)
            if window is None:
                # time one whole write of the kind the trials interrupt
                t0 = time.time()
                call(d, "tohdf", names=["a"], path=path, file_type=file_type, mode=mode,
                     datasets=["warm" if mode == "append" else "x"])
                window = 2 * (time.time() - t0)
            before = state(pattern, data_dir)
            # write whichever array x does not hold now, so that "after" differs from "before"
            x_now = next(iter(before.values()))["x"]
            src, base = ("a", 0) if x_now[1] != 0 else ("b", 1 << 40)
            args = {"names": [src], "path": path, "file_type": file_type, "mode": mode,
                    "datasets": [f"y{i}" if mode == "append" else "x"]}
            s = zmq.Context.instance().socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(d.endpoint)
            s.send(msgpack.packb({"v": 1, "id": 9, "cmd": "tohdf", "args": args}))
            time.sleep(rng.uniform(0, window))
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            s.close()
            after = state(pattern, data_dir)  # raises if any file is unreadable
            new = {f: written_share(f, file_type, base=base) for f in before}
            if mode in ("truncate", "update"):  # update replaces x, keeping the rest
                expect_after = {f: {**before[f], "x": new[f]} for f in before}
            else:
                expect_after = {f: {**before[f], f"y{i}": new[f]} for f in before}
            for f in before:
                if after[f] == before[f]:
                    outcomes["before"] += 1
                else:
                    assert after[f] == expect_after[f], (i, f, before[f], after[f])
                    outcomes["after"] += 1
            assert set(after) == set(before)
            last = (before, expect_after)
        finally:
            d.cleanup()
    # the harness must have caught writes both before and after they completed
    print(f"{mode}/{file_type}: {trials} kills, files before: {outcomes['before']}, "
          f"after: {outcomes['after']}")
    assert outcomes["before"] > 0 and outcomes["after"] > 0, outcomes
    # a fresh daemon removes the temporaries the killed ones left behind
    d = Daemon(locales=2, data_dir=data_dir)
    try:
        check_whole_set()
        assert not [p for p in data_dir.rglob("*") if ".h5ark-tmp." in p.name]
    finally:
        d.cleanup()


@pytest.mark.parametrize("mode", ["truncate", "append"])
def test_sigterm_during_write(tmp_path, mode):
    """SIGTERM while a large tohdf runs: the write finishes, its client gets the reply, the
    daemon exits 0, and no temporary file is left."""
    data_dir = tmp_path / "data"
    d = Daemon(locales=2, data_dir=data_dir)
    try:
        big = 1 << 25  # 256 MiB of int64
        call(d, "create", dtype="int64", fill="arange", stop=big, name="big")
        if mode == "append":
            call(d, "tohdf", names=["big"], datasets=["first"], path="term.h5", file_type="single")
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(d.endpoint)
        s.send(msgpack.packb({"v": 1, "id": 5, "cmd": "tohdf", "args": {
            "names": ["big"], "datasets": ["second"], "path": "term.h5", "file_type": "single",
            "mode": mode}}))
        # the signal once the write runs (a fixed pause may end before it has even arrived)
        wait_for(lambda: any(r["cmd"] == "tohdf" for r in call(d, "status")["requests"]),
                 "the tohdf in status")
        d.proc.send_signal(signal.SIGTERM)
        assert s.poll(120000 * TOOL_SLOWDOWN), "no reply after SIGTERM"
        rep = msgpack.unpackb(s.recv_multipart()[0])
        s.close()
        assert rep["ok"] and rep["id"] == 5, rep
        assert d.proc.wait(120 * TOOL_SLOWDOWN) == 0
        with h5py.File(data_dir / "term.h5", "r") as h:
            assert len(h["second"]) == big and int(h["second"][-1]) == big - 1
            assert ("first" in h) == (mode == "append")
        assert not [p for p in data_dir.rglob("*") if ".h5ark-tmp." in p.name]
    finally:
        d.cleanup()


PART = 1 << 15  # int64 rows of one numeric part (256 KiB)


def part_strings(k):
    """The strings of part k of the string field: their lengths vary with k and i."""
    return [f"p{k}-{i}-" + "x" * ((k * 7 + i) % 23) for i in range(k % 5 + 1)]


def exetera_state(path):
    """(numeric rows, string rows, completed marks) of the two fields, checked for
    consistency (h5py must read it all)."""
    with h5py.File(path, "r") as h:
        n = h["df/n/values"][:] if "df/n" in h else []
        assert list(n) == list(range(len(n)))  # parts land whole and in order
        strs = []
        if "df/s" in h:
            idx, raw = h["df/s/index"][:], h["df/s/values"][:].tobytes()
            assert len(idx) == 0 or (idx[0] == 0 and idx[-1] == len(raw))
            strs = [raw[a:b].decode() for a, b in zip(idx, idx[1:])]
        marks = [k for g in ("df/n", "df/s") if g in h for k, ds in h[g].items()
                 if "completed" in ds.attrs]
    return len(n), strs, marks


def reply_or_death(sock, proc, timeout=30.0):
    """The next reply on sock, or None as soon as the daemon has died."""
    end = time.time() + timeout
    while time.time() < end:
        if sock.poll(20):
            return msgpack.unpackb(sock.recv_multipart()[0])
        if proc.poll() is not None:
            return None
    raise AssertionError("no reply from a live daemon")


def test_kill_during_writepart(tmp_path):
    """SIGKILL at random moments during a stream of writepart requests (a numeric and an
    indexed string field, the file growing from trial to trial): every part acknowledged
    before the kill is in the file, the part in flight is there whole or not at all, the
    fields are not completed, and h5py and a restarted h5ark both read the file."""
    import threading
    rng = random.Random("writepart")
    trials = max(3, TRIALS // 7)
    data_dir = tmp_path / "data"
    path = "parts/stream.hdf5"
    acked_n = acked_s = 0  # numeric parts and string parts acknowledged over all trials
    want_strs = []
    caught = {"before": 0, "after": 0}
    for trial in range(trials):
        d = Daemon(locales=2, data_dir=data_dir)
        try:
            timer = threading.Timer(rng.uniform(0.02, 0.4),
                                    lambda p=d.proc: p.send_signal(signal.SIGKILL))
            s = zmq.Context.instance().socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(d.endpoint)
            timer.start()
            k, pending = 0, None
            while d.proc.poll() is None:
                k += 1
                if k % 2:  # numeric part
                    start = (acked_n) * PART
                    s.send(msgpack.packb({"v": 1, "id": k, "cmd": "create", "args": {
                        "dtype": "int64", "fill": "arange", "start": start,
                        "stop": start + PART, "name": "part"}}))
                    rep = reply_or_death(s, d.proc)
                    if rep is None:
                        break
                    assert rep["ok"], rep
                    pending = ("n", None)
                    args = {"path": path, "field": "df/n", "name": "part"}
                else:
                    strs = part_strings(acked_s)
                    raw = [x.encode() for x in strs]
                    values = b"".join(x + b"\0" for x in raw)
                    segs = b"".join(sum(len(x) + 1 for x in raw[:j]).to_bytes(8, "little")
                                    for j in range(len(raw)))
                    s.send_multipart([msgpack.packb({
                        "v": 1, "id": k, "cmd": "put",
                        "buffers": [{"name": "segments", "nbytes": len(segs)},
                                    {"name": "values", "nbytes": len(values)}],
                        "args": {"objtype": "strings", "dtype": "str", "shape": [len(raw)],
                                 "name": "spart"}}), segs, values])
                    rep = reply_or_death(s, d.proc)
                    if rep is None:
                        break
                    assert rep["ok"], rep
                    pending = ("s", strs)
                    args = {"path": path, "field": "df/s", "name": "spart"}
                s.send(msgpack.packb({"v": 1, "id": k, "cmd": "writepart", "args": args}))
                rep = reply_or_death(s, d.proc)
                if rep is None:
                    break
                assert rep["ok"], rep
                if pending[0] == "n":
                    acked_n += 1
                    assert rep["result"]["rows"] == acked_n * PART
                else:
                    acked_s += 1
                    want_strs += pending[1]
                    assert rep["result"]["rows"] == len(want_strs)
                pending = None
                # the next part's delete, so that names can be reused
                s.send(msgpack.packb({"v": 1, "id": k, "cmd": "delete",
                                      "args": {"names": ["part" if args["field"] == "df/n"
                                                         else "spart"]}}))
                if reply_or_death(s, d.proc) is None:
                    break
            timer.cancel()
            d.proc.wait()
            s.close()
            if not (data_dir / path).exists():
                assert acked_n == acked_s == 0
                continue
            rows, strs, marks = exetera_state(data_dir / path)
            assert marks == [], marks
            # what was acknowledged is there; the part in flight whole or not at all
            if pending and pending[0] == "n" and rows == (acked_n + 1) * PART:
                acked_n += 1
                caught["after"] += 1
            elif pending and pending[0] == "n":
                caught["before"] += 1
            if pending and pending[0] == "s" and strs == want_strs:
                caught["before"] += 1
            assert rows == acked_n * PART, (trial, rows, acked_n)
            if pending and pending[0] == "s" and strs == want_strs + pending[1]:
                acked_s += 1
                want_strs += pending[1]
                caught["after"] += 1
            assert strs == want_strs, (trial, len(strs), len(want_strs))
        finally:
            d.cleanup()
    print(f"writepart: {trials} kills, {acked_n} numeric and {acked_s} string parts; part in "
          f"flight lost {caught['before']}, landed {caught['after']}")
    assert acked_n > 0 and acked_s > 0
    # a restarted h5ark reads both fields, not completed, and removed the temporaries
    d = Daemon(locales=2, data_dir=data_dir)
    try:
        assert not [p for p in data_dir.rglob("*") if ".h5ark-tmp." in p.name]
        hdr, _ = request(d.endpoint, {"v": 1, "id": 1, "cmd": "readhdf", "args": {
            "paths": [path], "datasets": ["df/n", "df/s"]}})
        assert hdr["ok"], hdr
        objs = hdr["result"]["objects"]
        assert objs["df/n"]["size"] == acked_n * PART and objs["df/n"]["completed"] is None
        assert objs["df/s"]["size"] == len(want_strs) and objs["df/s"]["completed"] is None
        assert any("df/n" in w for w in hdr["warnings"]), hdr["warnings"]
        hdr, frames = request(d.endpoint, {"v": 1, "id": 2, "cmd": "get", "args": {
            "name": objs["df/s"]["name"]}})
        blob = b"".join(bytes(f) for f in frames)
        nseg = hdr["buffers"][0]["nbytes"]
        assert blob[nseg:].split(b"\0")[:-1] == [x.encode() for x in want_strs]
    finally:
        d.cleanup()


# ---- a file set killed mid-commit ------------------------------------------------------

SET_ROWS = 3001
SET_OLD, SET_NEW = 1 << 20, 1 << 30  # the first value of each write's rows


def set_values(path):
    """{dataset: [values]} of one file of the set (h5py must read it)."""
    with h5py.File(path, "r") as h:
        return {k: [int(v) for v in h[k][()]] for k in h.keys()}


def set_share(i, base, parts=3):
    lo, hi = -(-SET_ROWS * i // parts), -(-SET_ROWS * (i + 1) // parts)
    return list(range(base + lo, base + hi))


@pytest.mark.parametrize("mode", ["truncate", "append", "update"])
def test_kill_mid_commit_of_a_set(tmp_path, mode):
    """A distributed tohdf (3 locales) stopped by SIGKILL at chosen calls of its commit (the
    fault table's pause holds the daemon at the call): in the journal's write (before the
    commit point), between two renames, and at the journal's removal. The restarted daemon
    leaves the set old, or completes it, before it serves: every file old or every file
    new, no journal, no temporary, and the log says what it did. A truncate over a set an
    earlier daemon with more locales wrote also removes its extra file as part of the set."""
    data_dir = tmp_path / "data"
    sub = "odd dir %41"  # names in a journal are escaped; the set's name is its own
    set_dir = data_dir / sub
    env = {"H5ARK_FAULTS": "1"}
    files = [f"set_LOCALE{i:04d}.h5" for i in range(3)]
    journal_dir = data_dir / ".h5ark-journal"
    args = {"names": ["new"], "path": f"{sub}/set.h5", "file_type": "distribute", "mode": mode,
            "datasets": ["y" if mode == "append" else "x"]}

    def start():
        d = Daemon(locales=3, data_dir=data_dir, env=env)
        call(d, "create", dtype="int64", fill="arange", start=SET_OLD, stop=SET_OLD + SET_ROWS,
             name="old")
        call(d, "create", dtype="int64", fill="arange", start=SET_NEW, stop=SET_NEW + SET_ROWS,
             name="new")
        return d

    # the old set: for a truncate, one file more (an earlier daemon with 4 locales)
    d = Daemon(locales=4 if mode == "truncate" else 3, data_dir=data_dir)
    try:
        call(d, "create", dtype="int64", fill="arange", start=SET_OLD, stop=SET_OLD + SET_ROWS,
             name="old")
        call(d, "tohdf", names=["old", "old"], datasets=["x", "k"], path=f"{sub}/set.h5",
             file_type="distribute")
    finally:
        d.cleanup()
    old = {p.name: p.read_bytes() for p in set_dir.glob("set_LOCALE*.h5")}
    assert len(old) == (4 if mode == "truncate" else 3)

    def restore():
        for p in set_dir.glob("set_LOCALE*.h5"):
            p.unlink()
        for name, b in old.items():
            (set_dir / name).write_bytes(b)

    def is_new(i):
        try:
            got = set_values(set_dir / files[i])
        except OSError:
            return False
        return got.get(args["datasets"][0]) == set_share(i, SET_NEW)

    # the calls of one whole write
    d = start()
    try:
        call(d, "fault")
        call(d, "tohdf", **args)
        calls = call(d, "fault")["io_calls"]
    finally:
        d.cleanup()
    renames = [k + 1 for k, c in enumerate(calls) if c == "rename"]
    assert len(renames) == 3, calls
    unlinks = [k + 1 for k, c in enumerate(calls) if c == "unlink"]
    journal_pwrite = max(k + 1 for k, c in enumerate(calls[:renames[0]]) if c == "pwrite")
    points = [("journal written", journal_pwrite, "old",
               lambda: journal_dir.exists() and any(journal_dir.iterdir())),
              ("second rename", renames[1], "new", lambda: is_new(0)),
              ("third rename", renames[2], "new", lambda: is_new(1)),
              ("journal removed", unlinks[-1], "new", lambda: is_new(2))]
    if mode == "truncate":  # the extra file goes just before the last rename
        assert unlinks[0] < renames[2], calls
    for what, k, outcome, reached in points:
        restore()
        d = start()
        try:
            call(d, "fault", nth=k, pause_ms=60000)
            s = zmq.Context.instance().socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(d.endpoint)
            s.send(msgpack.packb({"v": 1, "id": 9, "cmd": "tohdf", "args": args}))
            wait_for(reached, what, 20)
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            s.close()
        finally:
            d.cleanup()
        if what in ("second rename", "third rename"):
            assert not all(is_new(i) for i in range(3)), what  # the set is mixed now
        d = Daemon(locales=3, data_dir=data_dir)
        try:
            log = d.read_log()
            now = sorted(p.name for p in set_dir.glob("set_LOCALE*.h5"))
            if outcome == "old":
                assert {n: (set_dir / n).read_bytes() for n in now} == old, what
                assert "dropped the journal" in log, (what, log)
            else:
                assert now == files, (what, now)
                assert all(is_new(i) for i in range(3)), what
                for i in range(3):  # the rest of each file as the write left it
                    got = set_values(set_dir / files[i])
                    assert got.get("k") == (None if mode == "truncate" else
                                            set_share(i, SET_OLD)), (what, i)
                if what != "journal removed":
                    assert "completed the write of a file set" in log, (what, log)
            assert not journal_dir.exists() or not list(journal_dir.iterdir()), what
            assert not [p for p in data_dir.rglob("*") if ".h5ark-tmp." in p.name], what
            # and readhdf reads the set as one write left it
            hdr, _ = request(d.endpoint, {"v": 1, "id": 1, "cmd": "readhdf", "args": {
                "paths": [f"{sub}/set.h5"], "datasets": [args["datasets"][0] if outcome == "new"
                                                  else "x"]}})
            assert hdr["ok"], hdr
            obj = next(iter(hdr["result"]["objects"].values()))
            hdr, frames = request(d.endpoint, {"v": 1, "id": 2, "cmd": "get",
                                               "args": {"name": obj["name"]}})
            got = np.frombuffer(b"".join(bytes(f) for f in frames), "<i8")
            base = SET_NEW if outcome == "new" else SET_OLD
            rows = SET_ROWS
            assert list(got) == list(range(base, base + rows)), what
        finally:
            d.cleanup()


def fnv1a(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & (1 << 64) - 1
    return h


def journal(lines):
    text = ("h5ark-journal 1\n" + "".join(line + "\n" for line in lines)).encode()
    return text + b"end %016x\n" % fnv1a(text)


def test_set_that_cannot_be_completed_stops_the_start(tmp_path):
    """A journal past its commit point whose rename fails at start (here its final name is a
    directory that is not empty): the daemon does not start, and says which set and which
    journal; a torn journal beside it is dropped all the same. Once the cause is gone, the
    next start completes the set."""
    data_dir = tmp_path / "data"
    (data_dir / ".h5ark-journal").mkdir(parents=True)
    (data_dir / "sub").mkdir()
    for i in range(2):
        (data_dir / "sub" / f".j_LOCALE{i:04d}.h5.h5ark-tmp.99.{i}").write_bytes(b"new %d" % i)
    (data_dir / "sub" / "j_LOCALE0000.h5").write_bytes(b"old 0")
    (data_dir / "sub" / "j_LOCALE0001.h5").mkdir()
    (data_dir / "sub" / "j_LOCALE0001.h5" / "in the way").write_bytes(b"")
    (data_dir / ".h5ark-journal" / "99.0").write_bytes(journal(
        [f"rename sub/.j_LOCALE{i:04d}.h5.h5ark-tmp.99.{i} sub/j_LOCALE{i:04d}.h5"
         for i in range(2)]))
    (data_dir / ".h5ark-journal" / "99.1").write_bytes(journal(["rename a b"])[:-3])
    proc = subprocess.run([daemon_binary(), "--endpoint", f"ipc://{tmp_path}/s.sock",
                           "--data-dir", str(data_dir), "--locales", "2"],
                          capture_output=True, text=True, timeout=60 * TOOL_SLOWDOWN)
    assert proc.returncode == 1, proc
    assert "cannot complete the write of the file set 'sub/j_LOCALE0000.h5'" in proc.stderr
    assert "journal '.h5ark-journal/99.0'" in proc.stderr, proc.stderr
    assert (data_dir / ".h5ark-journal" / "99.0").exists()  # kept, for the next start
    assert "dropped the journal '.h5ark-journal/99.1'" in proc.stderr, proc.stderr
    (data_dir / "sub" / "j_LOCALE0001.h5" / "in the way").unlink()
    (data_dir / "sub" / "j_LOCALE0001.h5").rmdir()
    d = Daemon(locales=2, data_dir=data_dir)
    try:
        log = d.read_log()
        assert "completed the write of a file set ('sub/j_LOCALE0000.h5' .. " \
               "'sub/j_LOCALE0001.h5', 2 files)" in log, log
        assert [(data_dir / "sub" / f"j_LOCALE{i:04d}.h5").read_bytes() for i in range(2)] \
            == [b"new 0", b"new 1"]
        assert not list((data_dir / ".h5ark-journal").iterdir())
        assert not [p for p in data_dir.rglob("*") if ".h5ark-tmp." in p.name]
    finally:
        d.cleanup()
