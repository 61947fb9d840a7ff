"""Crash safety: SIGKILL the daemon at random moments during tohdf (truncate, append and
update) and check every file with h5py: each must be exactly as before or exactly as after, never unreadable or half
written; and a restarted daemon removes the temporaries the dead one left."""
import os
import random
import signal
import time

import h5py
import msgpack
import pytest
import zmq

from conftest import Daemon, request

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
    for i in range(trials):
        d = Daemon(locales=2, data_dir=data_dir)
        try:
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
        finally:
            d.cleanup()
    # the harness must have caught writes both before and after they completed
    print(f"{mode}/{file_type}: {trials} kills, files before: {outcomes['before']}, "
          f"after: {outcomes['after']}")
    assert outcomes["before"] > 0 and outcomes["after"] > 0, outcomes
    # a fresh daemon removes the temporaries the killed ones left behind
    d = Daemon(locales=2, data_dir=data_dir)
    try:
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
        time.sleep(0.05)
        d.proc.send_signal(signal.SIGTERM)
        assert s.poll(120000), "no reply after SIGTERM"
        rep = msgpack.unpackb(s.recv_multipart()[0])
        s.close()
        assert rep["ok"] and rep["id"] == 5, rep
        assert d.proc.wait(120) == 0
        with h5py.File(data_dir / "term.h5", "r") as h:
            assert len(h["second"]) == big and int(h["second"][-1]) == big - 1
            assert ("first" in h) == (mode == "append")
        assert not [p for p in data_dir.rglob("*") if ".h5ark-tmp." in p.name]
    finally:
        d.cleanup()
