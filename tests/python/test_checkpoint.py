"""Checkpoints (SERVICE.md §5) against real daemons: every objtype written by `checkpoint`
and restored at the next start with the same names, descriptors and bytes, at another
locale count and at one and two ranks; the data files read by h5py and by readhdf; busy
while a restore runs; a damaged newest checkpoint skipped; --checkpoint-keep,
--checkpoint-interval and --checkpoint-on-exit; ENOSPC/EIO at every call of a checkpoint
(the fault table) and SIGKILL at random moments of one, after which the previous
checkpoint is intact and restored; refusals with a clear error."""
import contextlib
import json
import os
import pathlib
import random
import signal
import time

import h5py
import msgpack
import numpy as np
import pytest
import zmq

from conftest import edge_values
from daemons import MPIRUN, TOOL_SLOWDOWN, Daemon, mpi_build, wait_for
from test_faults import calls_to_try, fault
from test_hdf_composites import Conn, build_all
from wire import DTYPES

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def ck_args(ck, *more):
    return ["--checkpoint-dir", str(ck), "--log-level", "notice", *more]


def complete(ck):
    """The complete checkpoints of folder ck, oldest first."""
    return sorted(p.name for p in ck.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and not p.name.endswith(".damaged"))


def temporaries(ck):
    return sorted(p.name for p in ck.iterdir() if p.name.startswith("."))


def wait_restored(c, timeout=60):
    """getconfig once the restore at start has ended."""
    def restored():
        hdr, _ = c.raw("getconfig")
        assert hdr["ok"], hdr
        return None if hdr["result"]["restoring"] else hdr["result"]
    return wait_for(restored, "end of the restore", timeout)


@contextlib.contextmanager
def started(ck, locales=2, *more, **kw):
    """A daemon on checkpoint folder ck once its restore at start has ended: its Conn
    (`.daemon` the Daemon) and getconfig."""
    d = Daemon(locales=locales, extra_args=ck_args(ck, *more), **kw)
    try:
        c = Conn(d)
        yield c, wait_restored(c)
    finally:
        d.cleanup()


def assert_restored(ck, want, locales=2):
    """A daemon started on ck holds exactly `want` (snapshot's); its getconfig."""
    with started(ck, locales) as (c, conf):
        assert_same(snapshot(c), want)
        return conf


def awkward(c):
    """An awkward array of lists of records (offsets, two fields)."""
    form = {"class": "ListOffsetArray", "offsets": "i64", "form_key": "n0",
            "content": {"class": "RecordArray", "fields": ["x", "y"], "form_key": "n1",
                        "contents": [{"class": "NumpyArray", "primitive": "int64",
                                      "form_key": "n2"},
                                     {"class": "NumpyArray", "primitive": "float64",
                                      "form_key": "n3"}]}}
    bufs = {"n0-offsets": np.array([0, 2, 2, 5], "<i8"),
            "n2-data": np.arange(5, dtype="<i8"), "n3-data": np.arange(5, dtype="<f8") / 4}
    data = [b.tobytes() for b in bufs.values()]
    hdr, _ = c.ok("put", data, buffers=[{"name": n, "nbytes": len(d)}
                                        for n, d in zip(bufs, data)],
                  objtype="awkward", form=json.dumps(form), length=3)
    return hdr["result"]["object"]["name"]


def build_everything(c):
    """Objects of every objtype and dtype; their names."""
    names = list(build_all(c).values())
    for dt in DTYPES:
        names.append(c.put(np.array(edge_values(dt), dtype=dt)))
    names.append(c.put(np.array([], "<f8")))
    names.append(c.put_strings(["", "a", "Grüße", "x" * 300, "nul\0inside"]))
    names.append(awkward(c))
    # names a client chose, one HDF5 would not take as it is
    for name in (".hidden", "with space", "Filename_Codes"):
        c.ok("put", [np.arange(4, dtype="<i2").tobytes()],
             buffers=[{"name": "values", "nbytes": 8}], objtype="pdarray", dtype="int16",
             shape=[4], name=name)
        names.append(name)
    return names


def snapshot(c):
    """{name: (descriptor, {buffer: bytes})} of every object of the daemon."""
    hdr, _ = c.ok("info")
    return {d["name"]: c.buffers(d["name"]) for d in hdr["result"]["objects"]}


def assert_same(got, want):
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name][0] == want[name][0], name  # every descriptor key
        assert got[name][1] == want[name][1], name  # the same bytes


def test_every_objtype_at_other_locale_counts(tmp_path):
    ck = tmp_path / "a" / "b" / "ck"  # made with its parents
    d = Daemon(locales=3, extra_args=ck_args(ck))
    try:
        c = Conn(d)
        assert wait_restored(c)["checkpoint"] is None
        build_everything(c)
        want = snapshot(c)
        hdr, _ = c.ok("checkpoint")
        res = hdr["result"]
        assert set(res) == {"checkpoint", "objects", "bytes", "seconds"}
        assert res["objects"] == len(want) and res["bytes"] > 0
        assert complete(ck) == [res["checkpoint"]] and temporaries(ck) == []
        conf = wait_restored(c)
        assert conf["checkpoint"]["id"] == res["checkpoint"]
        assert conf["checkpoint"]["objects"] == len(want)
        folder = ck / res["checkpoint"]
        manifest = json.loads((folder / "manifest.json").read_text())
        assert {o["name"] for o in manifest["objects"]} == set(want)
        for o in manifest["objects"]:
            assert o["owner"] is None and o["grants"] == []
            assert o["descriptor"] == want[o["name"]][0]
        # the data files are ordinary HDF5 in Arkouda's layout
        for f in manifest["files"]:
            with h5py.File(folder / f["name"], "r") as h:
                assert (folder / f["name"]).stat().st_size == f["bytes"]
                for o in manifest["objects"]:
                    if (o["file"] == "awkward.h5") == (f["name"] == "awkward.h5"):
                        assert o["dataset"] in h, (f, o)
        ints = next(n for n, (desc, _) in want.items() if desc["dtype"] == "int64"
                    and desc["objtype"] == "pdarray" and desc["size"] > 3)
        ds = next(o["dataset"] for o in manifest["objects"] if o["name"] == ints)
        parts = [h5py.File(folder / f"data_LOCALE{i:04d}.h5", "r")[ds][()] for i in range(3)]
        assert np.concatenate(parts).tobytes() == want[ints][1]["values"]
        # and by readhdf
        (d.data_dir / "copy").mkdir(parents=True)
        for f in folder.iterdir():
            (d.data_dir / "copy" / f.name).write_bytes(f.read_bytes())
        hdr, _ = c.ok("readhdf", paths=[f"copy/data_LOCALE{i:04d}.h5" for i in range(3)],
                      datasets=[ds])
        assert c.buffers(hdr["result"]["objects"][ds]["name"])[1] == want[ints][1]
    finally:
        d.cleanup()
    for locales in (2, 5):
        d = Daemon(locales=locales, extra_args=ck_args(ck))
        try:
            c = Conn(d)
            conf = wait_restored(c)
            assert conf["checkpoint"]["id"] == res["checkpoint"]
            assert_same(snapshot(c), want)
            assert "restored checkpoint" in d.read_log() and res["checkpoint"] in d.read_log()
        finally:
            d.cleanup()


@pytest.mark.skipif(MPIRUN is None or not mpi_build(),
                    reason="mpirun is not installed or h5arkd was built without MPI")
def test_one_rank_to_two_and_back(tmp_path):
    ck = tmp_path / "ck"
    with started(ck, 3) as (c, _):
        build_everything(c)
        want = snapshot(c)
        c.ok("checkpoint")
    d = Daemon(locales=2, ranks=2, extra_args=ck_args(ck), arkouda=True)
    try:
        c = Conn(d)
        assert wait_restored(c)["ranks"] == 2
        assert_same(snapshot(c), want)
        c.ok("delete", names=[next(iter(want))])
        del want[next(iter(want))]
        extra = c.put(np.arange(1000, dtype="<u4"), name="made_at_two_ranks")
        want[extra] = c.buffers(extra)
        # and a checkpoint of the data directory, loaded back over what changed
        c.ok("checkpoint", path="saves", name="two")
        c.ok("delete", names=[extra])
        assert c.ok("load_checkpoint", path="saves", name="two")[0]["result"]["objects"] == \
            len(want)
        assert_same(snapshot(c), want)
        # Arkouda's save and load at two ranks
        from test_arkouda_wire import Ak
        ak = Ak(d.ak_endpoint)
        assert ak.ok("save_checkpoint", {"name": "ak", "path": ".akdata", "mode": "error"}) == "ak"
        c.ok("delete", names=[extra])
        assert ak.ok("load_checkpoint", {"name": "ak", "path": ".akdata"}) == "ak"
        ak.close()
        assert_same(snapshot(c), want)
        hdr, _ = c.ok("checkpoint")
        assert hdr["result"]["objects"] == len(want)
    finally:
        d.cleanup()
    assert assert_restored(ck, want, 1)["checkpoint"]["id"] == hdr["result"]["checkpoint"]
    # --checkpoint-on-exit at two ranks: `shutdown` writes one before the ranks stop
    d = Daemon(locales=2, ranks=2, extra_args=ck_args(ck, "--checkpoint-on-exit"))
    try:
        c = Conn(d)
        wait_restored(c)
        c.put(np.arange(9, dtype="<i4"), name="at_exit")
        want = snapshot(c)
        before = set(complete(ck))
        d.shutdown()
        assert len(set(complete(ck)) - before) == 1
    finally:
        d.cleanup()
    assert_restored(ck, want, 3)


def test_empty_and_concurrent(tmp_path):
    """A checkpoint of no objects restores as none; checkpoints asked for at once are
    each whole, with ids of their own."""
    import threading
    ck = tmp_path / "ck"
    d = Daemon(locales=2, extra_args=ck_args(ck, "--checkpoint-keep", "50"))
    try:
        c = Conn(d)
        wait_restored(c)
        empty = c.ok("checkpoint")[0]["result"]
        assert empty["objects"] == 0
        c.put(np.arange(1 << 16, dtype="<i8"), name="x")
        results = []

        def one():
            results.append(Conn(d).raw("checkpoint")[0])
        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(r["ok"] for r in results), results
        ids = {r["result"]["checkpoint"] for r in results}
        assert len(ids) == 4 and ids <= set(complete(ck)) and temporaries(ck) == []
        want = snapshot(c)
    finally:
        d.cleanup()
    assert_restored(ck, want, locales=2)
    for newer in set(complete(ck)) - {empty["checkpoint"]}:
        (ck / newer).rename(ck / f"{newer}.damaged")
    d = Daemon(locales=2, extra_args=ck_args(ck))
    try:
        c = Conn(d)
        assert wait_restored(c)["checkpoint"]["id"] == empty["checkpoint"]
        assert c.ok("info")[0]["result"]["objects"] == []
    finally:
        d.cleanup()


def test_objects_replaced_meanwhile_are_whole(tmp_path):
    """While checkpoints run, an object is replaced over and over (deleted, and another
    published under its name): each checkpoint holds it whole, as one version, or not at
    all."""
    import threading
    d = Daemon(locales=3)
    try:
        c = Conn(d)
        n = 1 << 18
        c.put(np.zeros(n, dtype="<i8"), name="v")
        stop = threading.Event()

        def replace():
            other, k = Conn(d), 0
            while not stop.is_set():
                k += 1
                hdr, _ = other.raw("create", dtype="int64", size=n, fill="full", value=k,
                                   name="w")
                assert hdr["ok"], hdr
                other.ok("delete", names=["v"])
                other.ok("concatenate", names=["w"], name="v")
                other.ok("delete", names=["w"])
        t = threading.Thread(target=replace)
        t.start()
        try:
            for i in range(6):
                hdr, _ = c.raw("checkpoint", path="saves", name=f"c{i}")
                assert hdr["ok"], hdr
        finally:
            stop.set()
            t.join()
        seen = set()
        for i in range(6):
            c.ok("clear")
            c.ok("load_checkpoint", path="saves", name=f"c{i}")
            names = {o["name"] for o in c.ok("info")[0]["result"]["objects"]}
            if "v" in names:
                v = c.get("v")
                assert len(v) == n and len(set(v.tolist())) == 1, i  # one version, whole
                seen.add(int(v[0]))
        assert seen, "no checkpoint held the object"
    finally:
        d.cleanup()


def big_objects(c, n=1 << 21):
    names = [c.put(np.arange(n, dtype="<i8") * k, name=f"big{k}") for k in range(3)]
    names.append(c.put_strings([f"s{i}" for i in range(20000)]))
    return names


def test_busy_while_restoring(tmp_path):
    ck = tmp_path / "ck"
    with started(ck) as (c, _):
        big_objects(c, 1 << 16)
        want = snapshot(c)
        c.ok("checkpoint")
    # every read of the restore made slow (test-only switch of the fault table)
    d = Daemon(locales=2, extra_args=ck_args(ck),
               env={"H5ARK_FAULTS": "1", "H5ARK_FAULTS_RESTORE_DELAY_MS": "150"})
    try:
        c = Conn(d)
        assert c.raw("ping")[0]["ok"]
        hdr, _ = c.raw("getconfig")
        assert hdr["result"]["restoring"] is True
        # status shows the restore and the bytes it has read
        deadline = time.time() + 30 * TOOL_SLOWDOWN
        while time.time() < deadline:
            hdr, _ = c.raw("status")
            running = [r for r in hdr["result"]["requests"] if r["cmd"] == "checkpoint_restore"]
            assert running, hdr
            if running[0]["unit"] == "bytes" and running[0]["total"]:
                break
            time.sleep(0.05)
        assert running[0]["unit"] == "bytes" and running[0]["done"] <= running[0]["total"]
        for cmd, args in (("info", {}), ("put", {}), ("checkpoint", {}), ("clear", {})):
            err = c.fail(cmd, **args)
            assert err["code"] == "busy" and "restore" in err["message"], (cmd, err)
        conf = wait_restored(c)
        assert conf["checkpoint"] is not None
        assert_same(snapshot(c), want)
    finally:
        d.cleanup()


def test_damaged_newest_is_skipped(tmp_path):
    ck = tmp_path / "ck"
    d = Daemon(locales=2, extra_args=ck_args(ck, "--checkpoint-keep", "5"))
    try:
        c = Conn(d)
        wait_restored(c)
        c.put(np.arange(100, dtype="<i8"), name="x")
        first = snapshot(c)
        ids = [c.ok("checkpoint")[0]["result"]["checkpoint"]]
        c.put(np.arange(5, dtype="<f4"), name="y")
        ids.append(c.ok("checkpoint")[0]["result"]["checkpoint"])
        c.put(np.arange(7, dtype="<u1"), name="z")
        ids.append(c.ok("checkpoint")[0]["result"]["checkpoint"])
    finally:
        d.cleanup()
    # the newest: bytes of a data file overwritten, its size kept (HDF5 cannot read it)
    f = ck / ids[2] / "data_LOCALE0000.h5"
    raw = bytearray(f.read_bytes())
    raw[:] = bytes(len(raw))
    f.write_bytes(raw)
    # the one before: its manifest cut short
    m = ck / ids[1] / "manifest.json"
    m.write_text(m.read_text()[:40])
    # and what a killed checkpoint left
    (ck / ".tmp-20990101T000000.000Z").mkdir()
    (ck / ".tmp-20990101T000000.000Z" / "data_LOCALE0000.h5").write_bytes(b"half")
    d = Daemon(locales=3, extra_args=ck_args(ck))
    try:
        c = Conn(d)
        conf = wait_restored(c)
        assert conf["checkpoint"]["id"] == ids[0]
        assert_same(snapshot(c), first)
        log = d.read_log()
        for i in (1, 2):
            assert f"{ids[i]} is damaged" in log, log
            assert (ck / f"{ids[i]}.damaged").is_dir()
        assert complete(ck) == [ids[0]] and temporaries(ck) == []
        # damaged ones are never counted by --checkpoint-keep (default 2)
        c.ok("checkpoint")
        c.ok("checkpoint")
        c.ok("checkpoint")
        assert len(complete(ck)) == 2
        assert (ck / f"{ids[1]}.damaged").is_dir() and (ck / f"{ids[2]}.damaged").is_dir()
    finally:
        d.cleanup()


def test_whole_but_too_big_is_kept(tmp_path):
    """A checkpoint that does not fit in --max-memory is not damaged: it stays as it is,
    and --checkpoint-keep removes nothing until the next start."""
    ck = tmp_path / "ck"
    with started(ck) as (c, _):
        c.put(np.arange(1 << 20, dtype="<i8"), name="big")  # 8 MiB
        want = snapshot(c)
        first = c.ok("checkpoint")[0]["result"]["checkpoint"]
    with started(ck, 2, "--checkpoint-keep", "1", max_memory=4 << 20) as (c, conf):
        assert conf["checkpoint"] is None
        log = c.daemon.read_log()
        assert f"cannot restore checkpoint {ck / first}" in log and "memory" in log, log
        assert not (ck / f"{first}.damaged").exists()
        c.ok("checkpoint")
        c.ok("checkpoint")
        assert first in complete(ck) and len(complete(ck)) == 3
    assert_restored(ck, {}, 2)  # the newest, empty, is restored next; the big one is kept
    assert first in complete(ck)
    (ck / complete(ck)[-1]).rename(ck / f"{complete(ck)[-1]}.damaged")
    (ck / complete(ck)[-1]).rename(ck / f"{complete(ck)[-1]}.damaged")
    assert_restored(ck, want, 2)


def test_keep_interval_and_exit(tmp_path):
    ck = tmp_path / "ck"
    d = Daemon(locales=2, extra_args=ck_args(ck, "--checkpoint-keep", "3",
                                             "--checkpoint-interval", "0.2"))
    try:
        c = Conn(d)
        wait_restored(c)
        time.sleep(0.6)
        assert complete(ck) == []  # nothing to write yet: nothing changed
        c.put(np.arange(10, dtype="<i8"), name="a")
        wait_for(lambda: complete(ck), "a periodic checkpoint", 20)
        assert len(complete(ck)) == 1
        time.sleep(0.8)
        assert len(complete(ck)) == 1  # nothing changed since
        for i in range(4):
            c.put(np.arange(3, dtype="<i8"), name=f"b{i}")
            c.ok("checkpoint")
        assert len(complete(ck)) == 3
    finally:
        d.cleanup()
    with started(ck, 2, "--checkpoint-on-exit") as (c, _):
        before = set(complete(ck))
        c.put(np.arange(6, dtype="<f8"), name="late")
        want = snapshot(c)
        assert c.daemon.stop(signal.SIGTERM) == 0
        assert len(set(complete(ck)) - before) == 1
    with started(ck, 2, "--checkpoint-on-exit") as (c, _):
        assert_same(snapshot(c), want)
        c.ok("delete", names=["late"])
        del want["late"]
        c.daemon.shutdown()
    assert_restored(ck, want, locales=2)


def test_faults_at_every_call(tmp_path):
    ck = tmp_path / "ck"
    d = Daemon(locales=2, extra_args=ck_args(ck), env={"H5ARK_FAULTS": "1"})
    try:
        c = Conn(d)
        wait_restored(c)
        c.put(np.arange(300, dtype="<i8"), name="n")
        c.put_strings(["a", "bb", "", "Grüße"])
        awkward(c)
        want = snapshot(c)
        prev = c.ok("checkpoint")[0]["result"]["checkpoint"]
        fault(c)
        c.ok("checkpoint")
        counts = fault(c)
        for call in ("open", "pwrite", "fsync", "rename", "mkdir"):
            assert call in counts["io_calls"], counts
        fired = set()
        for klass, errors in (("io", ["ENOSPC", "EIO"]), ("alloc", ["ENOMEM"])):
            for error in errors:
                for k in calls_to_try(counts[f"{klass}_calls"]):
                    before = complete(ck)
                    fault(c, **{"class": klass, "nth": k, "error": error})
                    hdr, _ = c.raw("checkpoint")
                    report = fault(c)
                    what = (klass, error, k, report["fired"], hdr)
                    fired.add(report["fired"])
                    assert report["hdf5_open"] == 0, what
                    if hdr["ok"]:
                        assert len(complete(ck)) == 2, what
                    else:
                        assert hdr["error"]["code"] == ("resource_limit" if klass == "alloc"
                                                        else "io_error"), what
                        assert hdr["error"]["message"], what
                        assert complete(ck) == before, what  # the previous ones intact
                    assert temporaries(ck) == [], what
                    assert c.raw("ping")[0]["ok"]
        assert fired >= {"open", "pwrite", "fsync", "rename", "mkdir"}, fired
        assert prev in complete(ck) or len(complete(ck)) == 2
        # an overwrite in the data directory: the old folder whole, or the new one
        saves = c.daemon.data_dir / "saves"
        c.ok("checkpoint", path="saves", name="cp")
        old = (saves / "cp" / "manifest.json").read_text()
        fault(c)
        c.ok("checkpoint", path="saves", name="cp", mode="overwrite")
        calls = fault(c)["io_calls"]
        assert "exchange" in calls, calls
        for k in calls_to_try(calls):
            c.ok("checkpoint", path="saves", name="cp", mode="overwrite")
            old = (saves / "cp" / "manifest.json").read_text()
            fault(c, **{"class": "io", "nth": k, "error": "EIO"})
            hdr, _ = c.raw("checkpoint", path="saves", name="cp", mode="overwrite")
            fault(c)
            now = (saves / "cp" / "manifest.json").read_text()
            assert (now != old) == hdr["ok"], (k, hdr)
            assert sorted(p.name for p in saves.iterdir()) == ["cp"], (k, hdr)
            hdr, _ = c.raw("load_checkpoint", path="saves", name="cp")
            assert hdr["ok"], (k, hdr)
    finally:
        d.cleanup()
    assert_restored(ck, want, locales=3)


@pytest.mark.not_under_valgrind("the SIGKILL harness: kills, not memory")
def test_sigkill_during_checkpoint(tmp_path):
    ck = tmp_path / "ck"
    rng = random.Random(26)
    d = Daemon(locales=2, extra_args=ck_args(ck, "--checkpoint-keep", "100"))
    try:
        c = Conn(d)
        wait_restored(c)
        big_objects(c)
        t0 = time.time()
        c.ok("checkpoint")
        window = 2 * (time.time() - t0)
        want = snapshot(c)
    finally:
        d.cleanup()
    outcomes = {"before": 0, "after": 0}
    # at least 10 kills; more, with the window moved towards the outcome not yet seen,
    # when a loaded machine makes every kill land on one side
    for trial in range(30):
        if trial >= 10 and outcomes["before"] and outcomes["after"]:
            break
        d = Daemon(locales=2, extra_args=ck_args(ck, "--checkpoint-keep", "100"))
        try:
            c = Conn(d)
            conf = wait_restored(c)
            assert conf["checkpoint"]["id"] == complete(ck)[-1]
            assert temporaries(ck) == []
            assert_same(snapshot(c), want)
            before = complete(ck)
            s = zmq.Context.instance().socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(d.endpoint)
            s.send(msgpack.packb({"v": 1, "id": 9, "cmd": "checkpoint"}))
            time.sleep(rng.uniform(0, window))
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            s.close()
            after = complete(ck)
            outcomes["before" if after == before else "after"] += 1
            window *= 1.3 if after == before else 0.8
            assert after[:len(before)] == before and len(after) - len(before) in (0, 1)
        finally:
            d.cleanup()
    print(f"checkpoint: {trial + 1} kills, {outcomes}")
    assert outcomes["before"] > 0 and outcomes["after"] > 0, outcomes
    d = Daemon(locales=3, extra_args=ck_args(ck))
    try:
        c = Conn(d)
        wait_restored(c)
        assert temporaries(ck) == []
        assert_same(snapshot(c), want)
    finally:
        d.cleanup()


def test_refusals(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(RuntimeError) as e:
        Daemon(locales=1, extra_args=["--checkpoint-dir", str(blocker / "ck")])
    assert str(blocker / "ck") in str(e.value)
    for bad in (["--checkpoint-keep", "0"], ["--checkpoint-interval", "-1"]):
        with pytest.raises(RuntimeError) as e:
            Daemon(locales=1, extra_args=["--checkpoint-dir", str(tmp_path / "x"), *bad])
        assert bad[0] in str(e.value)
    d = Daemon(locales=1)
    try:
        c = Conn(d)
        err = c.fail("checkpoint")
        assert err["code"] == "bad_request" and "--checkpoint-dir" in err["message"]
        assert c.raw("getconfig")[0]["result"]["checkpoint"] is None
        err = c.fail("checkpoint_restore", id="x")
        assert err["code"] == "unknown_command"
    finally:
        d.cleanup()
    tokens = tmp_path / "tokens"
    tokens.write_text("reader read\nwriter write\n")
    d = Daemon(locales=1, token="writer", token_file=tokens,
               extra_args=ck_args(tmp_path / "ck"))
    try:
        hdr, _ = Conn(d).raw("checkpoint")
        assert hdr["error"]["code"] == "unauthorized"  # no token
        from wire import request
        hdr, _ = request(d.endpoint, {"v": 1, "cmd": "checkpoint", "token": "reader"})
        assert hdr["error"]["code"] == "unauthorized"
        hdr, _ = request(d.endpoint, {"v": 1, "cmd": "checkpoint", "token": "writer"})
        assert hdr["ok"], hdr
    finally:
        d.cleanup()
    assert os.access(tmp_path, os.W_OK) and pathlib.Path(tmp_path / "ck").is_dir()


def test_arkouda_save_and_load_checkpoint(tmp_path):
    """save_checkpoint / load_checkpoint as Arkouda's client sends them (arkouda/pandas/io.py:
    {name, path, mode} and {name, path}), every objtype, answered with the name."""
    from test_arkouda_wire import Ak
    d = Daemon(locales=3, arkouda=True)
    try:
        c, ak = Conn(d), Ak(d.ak_endpoint)
        build_everything(c)
        want = snapshot(c)
        assert ak.ok("save_checkpoint", {"name": "cp1", "path": ".akdata",
                                         "mode": "error"}) == "cp1"
        folder = d.data_dir / ".akdata" / "cp1"
        manifest = json.loads((folder / "manifest.json").read_text())
        assert len(manifest["objects"]) == len(want)
        msg = ak.error("save_checkpoint", {"name": "cp1", "path": ".akdata", "mode": "error"})
        assert "already exists" in msg and "overwrite" in msg
        assert ak.ok("save_checkpoint", {"name": "cp1", "path": ".akdata",
                                         "mode": "overwrite"}) == "cp1"
        # Arkouda's default name is the server's own: one is made
        made = ak.ok("save_checkpoint", {"name": "", "path": ".akdata", "mode": "overwrite"})
        assert made and (d.data_dir / ".akdata" / made / "manifest.json").is_file()
        # objects changed and deleted after the save come back as they were saved
        some = sorted(want)[:3]
        c.ok("delete", names=some[:2])
        c.ok("delete", names=[some[2]])
        c.put(np.arange(3, dtype="<i8"), name=some[2])  # replaced by the load
        newer = c.put(np.arange(2, dtype="<i8"), name="made_after")
        assert ak.ok("load_checkpoint", {"name": "cp1", "path": ".akdata"}) == "cp1"
        got = snapshot(c)
        del got[newer]  # objects the checkpoint does not name stay
        assert_same(got, want)
        for bad, words in (({"name": "nothere", "path": ".akdata"}, "no checkpoint"),
                           ({"name": "../x", "path": ".akdata"}, "one folder name"),
                           ({"name": "cp1", "path": "/etc"}, "")):
            assert words in ak.error("load_checkpoint", bad)
        assert "mode" in ak.error("save_checkpoint", {"name": "x", "path": ".akdata",
                                                      "mode": "preserve_previous"})
        ak.close()
    finally:
        d.cleanup()


def test_arkouda_client_checkpoint_test(tmp_path):
    """Arkouda's client's tests/checkpoint_test.py as it sends them: arr[2] = v ([int]=val),
    save_checkpoint with its defaults (name "", path ".akdata", mode "overwrite") leaves
    <path>/<name>/server.md (Arkouda's server metadata), arr[3] = w, load_checkpoint gives
    arr back as saved. A folder in Arkouda's own format is refused, saying so."""
    from test_arkouda_wire import Ak, download, upload
    d = Daemon(locales=2, arkouda=True)
    try:
        ak = Ak(d.ak_endpoint)
        for dtype, v2, v3 in (("int64", "2", "3"), ("float64", "2.5", "3.5"),
                              ("bool", "True", "False")):
            name = upload(ak, np.zeros(10, dtype=dtype))[0]
            ak.ok(f"[int]=val<{dtype},1>", {"array": name, "idx": 2, "value": v2, "max_bits": 0})
            want = download(ak, name, dtype, 10).copy()
            made = ak.ok("save_checkpoint", {"name": "", "path": ".akdata", "mode": "overwrite"})
            meta = json.loads((d.data_dir / ".akdata" / made / "server.md").read_text())
            assert meta["numLocales"] == 2 and meta["serverid"].startswith("h5ark ")
            ak.ok(f"[int]=val<{dtype},1>", {"array": name, "idx": 3, "value": v3, "max_bits": 0})
            assert ak.ok("load_checkpoint", {"name": made, "path": ".akdata"}) == made
            np.testing.assert_array_equal(download(ak, name, dtype, 10), want)
        # tests/checkpoint_test.py's create_fake_cp: Arkouda's server.md and an entry's .md
        fake = d.data_dir / ".akdata" / "fake_cp"
        fake.mkdir()
        (fake / "server.md").write_text(json.dumps({"serverid": "id", "numLocales": 3}))
        (fake / "dummy.md").write_text(json.dumps({"entryName": "dummy"}))
        msg = ak.error("load_checkpoint", {"name": "fake_cp", "path": ".akdata"})
        assert "no manifest.json: it was written by Arkouda's own server" in msg, msg
        assert ak.ok("getconfig")
        ak.close()
    finally:
        d.cleanup()


def test_arkouda_checkpoint_at_an_absolute_path(tmp_path):
    """Arkouda's client sends the path it was given: an absolute one in the data directory
    (a folder not made yet, or the data directory itself) saves and loads there; with users
    it is from the data directory's root, by the caller's rights; one outside is refused."""
    from test_arkouda_wire import Ak
    d = Daemon(locales=2, arkouda=True)
    try:
        c, ak = Conn(d), Ak(d.ak_endpoint)
        c.put(np.arange(7, dtype="<i8"), name="v")
        want = snapshot(c)
        root = str(d.data_dir.resolve())
        for path, folder in ((f"{root}/abs/deeper", "abs/deeper"), (root, ""), (f"{root}/", "")):
            assert ak.ok("save_checkpoint", {"name": "cp", "path": path, "mode": "overwrite"}) \
                == "cp"
            assert (d.data_dir / folder / "cp" / "manifest.json").is_file()
            c.ok("delete", names=["v"])
            assert ak.ok("load_checkpoint", {"name": "cp", "path": path}) == "cp"
            assert_same(snapshot(c), want)
        outside = tmp_path / "outside"
        assert "outside the data directory" in ak.error(
            "save_checkpoint", {"name": "cp", "path": str(outside), "mode": "error"})
        assert not outside.exists()
        assert "outside the data directory" in ak.error(
            "load_checkpoint", {"name": "cp", "path": str(tmp_path)})
        ak.close()
    finally:
        d.cleanup()
    tokens = tmp_path / "tokens"
    tokens.write_text("tok-alice write user=alice\ntok-bob write user=bob\n"
                      "tok-root admin user=root\n")
    d = Daemon(locales=2, arkouda=True, token="tok-root", token_file=tokens)
    try:
        alice, bob = Ak(d.ak_endpoint, token="tok-alice"), Ak(d.ak_endpoint, token="tok-bob")
        alice.ok("arange<int64,1>", {"start": 0, "stop": 5, "step": 1})
        home = f"{d.data_dir.resolve()}/home/alice"
        assert alice.ok("save_checkpoint", {"name": "mine", "path": f"{home}/cks",
                                            "mode": "error"}) == "mine"
        assert (d.data_dir / "home" / "alice" / "cks" / "mine" / "manifest.json").is_file()
        assert alice.ok("load_checkpoint", {"name": "mine", "path": f"{home}/cks"}) == "mine"
        msg = bob.error("save_checkpoint", {"name": "his", "path": home, "mode": "error"})
        assert msg.endswith("no create permission on '/home/alice'"), msg
        assert not (d.data_dir / "home" / "alice" / "his").exists()
        alice.close()
        bob.close()
    finally:
        d.cleanup()


def test_native_checkpoint_in_the_data_directory(tmp_path):
    """checkpoint {path, name, mode} and load_checkpoint {path, name}, no --checkpoint-dir."""
    d = Daemon(locales=2)
    try:
        c = Conn(d)
        c.put(np.arange(50, dtype="<f8"), name="f")
        res = c.ok("checkpoint", path="saves", name="one")[0]["result"]
        assert res["checkpoint"] == "one" and res["objects"] == 1
        assert c.fail("checkpoint", path="saves", name="one")["code"] == "already_exists"
        assert c.fail("checkpoint", name="one")["code"] == "bad_request"
        assert c.fail("checkpoint", path="../out", name="x")["code"] == "forbidden"
        c.ok("delete", names=["f"])
        res = c.ok("load_checkpoint", path="saves", name="one")[0]["result"]
        assert res["objects"] == 1 and list(c.get("f")) == list(np.arange(50) * 1.0)
        assert c.fail("load_checkpoint", path="saves", name="two")["code"] == "not_found"
        # a load that fails part-way puts back what it replaced
        c.put(np.arange(5, dtype="<i2"), name="g")
        c.ok("checkpoint", path="saves", name="three")
        m = d.data_dir / "saves" / "three" / "manifest.json"
        manifest = json.loads(m.read_text())
        assert [o["name"] for o in manifest["objects"]] == ["f", "g"]
        manifest["objects"][1]["name"] = "g/bad"
        m.write_text(json.dumps(manifest))
        c.put(np.arange(3, dtype="<u1"), name="h")
        c.ok("delete", names=["f"])
        c.put(np.arange(7, dtype="<i8"), name="f")
        before = snapshot(c)
        err = c.fail("load_checkpoint", path="saves", name="three")
        assert err["code"] == "bad_request" and "g/bad" in err["message"], err
        assert_same(snapshot(c), before)
    finally:
        d.cleanup()


def test_clients(tmp_path):
    """The Python client's checkpoint / load_checkpoint and the CLI's checkpoint and
    load-checkpoint."""
    import h5ark
    from test_cli import CLI, failed, run
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"h5ark not found at {CLI}: build first or set H5ARK_CLI")
    ck = tmp_path / "ck"
    d = Daemon(locales=2, extra_args=ck_args(ck))
    try:
        with h5ark.connect(d.endpoint, timeout=60) as cl:
            cl.array(np.arange(20, dtype=np.int32), name="p")
            res = cl.checkpoint()
            assert res["objects"] == 1 and complete(ck) == [res["checkpoint"]]
            assert cl.config()["checkpoint"]["id"] == res["checkpoint"]
            assert cl.checkpoint(path="mine", name="c1")["checkpoint"] == "c1"
            with pytest.raises(h5ark.AlreadyExistsError):
                cl.checkpoint(path="mine", name="c1")
            assert cl.checkpoint(path="mine", name="c1", mode="overwrite")["objects"] == 1
            cl.delete("p")
            assert cl.load_checkpoint("mine", "c1")["objects"] == 1
            assert cl.info(["p"])[0].to_list() == list(range(20))
        out = run("checkpoint", endpoint=d.endpoint)
        assert out.returncode == 0, out
        ident, n, _, nbytes = out.stdout.split()[:4]
        assert ident in complete(ck) and n == "1" and int(nbytes) > 0
        out = run("checkpoint", "--path", "mine", "--name", "c2", endpoint=d.endpoint)
        assert out.returncode == 0 and out.stdout.startswith("c2 1 objects"), out
        failed(run("checkpoint", "--path", "mine", "--name", "c2", endpoint=d.endpoint),
               "already_exists")
        out = run("load-checkpoint", "--path", "mine", "--name", "c2", endpoint=d.endpoint)
        assert out.returncode == 0 and out.stdout.startswith("c2 1 objects"), out
        assert run("load-checkpoint", "--path", "mine", endpoint=d.endpoint).returncode == 2
    finally:
        d.cleanup()


def test_owners_and_grants_survive_a_restart(tmp_path):
    """With users on, the daemon's checkpoint holds every user's objects with their owners
    and grants (two users' `x` apart), and the restore gives each back to its owner, shared
    as before; a user's checkpoint in the data directory holds only that user's objects."""
    from wire import fails, get_array, ok, put_array, send
    tokens = tmp_path / "tokens"
    tokens.write_text("tok-alice write user=alice groups=physics\n"
                      "tok-bob write user=bob groups=physics\n"
                      "tok-carol write user=carol\n"
                      "tok-root admin user=root\n")
    ck = tmp_path / "ck"

    def daemon():
        d = Daemon(locales=2, token="tok-root", token_file=tokens, extra_args=ck_args(ck))
        wait_for(lambda: not ok(send(d, "getconfig"))["restoring"], "end of the restore", 60)
        d.as_ = {u: type("who", (), {"endpoint": d.endpoint, "token": f"tok-{u}"})
                 for u in ("alice", "bob", "carol", "root")}
        return d

    d = daemon()
    try:
        a, b, c = d.as_["alice"], d.as_["bob"], d.as_["carol"]
        put_array(a, np.arange(10), name="x")
        put_array(b, np.arange(4) * 3, name="x")
        ok(send(a, "share", {"names": ["x"], "with": ["g:physics"]}))
        # only an admin writes the daemon's checkpoints once users are on
        fails(send(a, "checkpoint"), "forbidden")
        assert ok(send(d.as_["root"], "checkpoint"))["objects"] == 2
        # alice's own checkpoint in her home holds her object alone
        assert ok(send(a, "checkpoint", {"path": "ck", "name": "mine"}))["objects"] == 1
    finally:
        d.cleanup()
    manifest = json.loads(next(p for p in ck.iterdir() if p.is_dir()).joinpath(
        "manifest.json").read_text())
    assert sorted((o["name"], o["owner"], o["grants"]) for o in manifest["objects"]) == \
        [("x", "alice", ["g:physics"]), ("x", "bob", [])]

    d = daemon()
    try:
        a, b, c = d.as_["alice"], d.as_["bob"], d.as_["carol"]
        assert list(get_array(a, "x", "int64")) == list(range(10))
        assert list(get_array(b, "x", "int64")) == [0, 3, 6, 9]
        assert list(get_array(b, "alice/x", "int64")) == list(range(10))  # still shared
        fails(send(c, "get", {"name": "alice/x"}), "not_found")
        fails(send(a, "get", {"name": "bob/x"}), "not_found")
    finally:
        d.cleanup()


@pytest.mark.parametrize("ranks", [(1, 1), (2, 2), (1, 2)], ids=["1rank", "2ranks", "1to2"])
def test_usage_survives_a_restart(tmp_path, ranks):
    """Objects restored at start are charged to their owners: each user's usage.memory and
    usage.objects equal what they were before the restart (at the rank count that wrote the
    checkpoint and at another), and quota.memory counts them. (Objects that share arrays, a
    GroupBy and its keys, come back with copies of their own, counted as what they hold.)"""
    from wire import fails, ok, put_array, put_strings, send
    if ranks != (1, 1) and (MPIRUN is None or not mpi_build()):
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    tokens = tmp_path / "tokens"
    tokens.write_text("tok-alice write user=alice\n"
                      "tok-bob write user=bob quota.memory=4096\n"
                      "tok-root admin user=root\n")
    ck = tmp_path / "ck"
    users = ("alice", "bob")

    def daemon(r):
        d = Daemon(locales=2, ranks=r if r > 1 else None, token="tok-root", token_file=tokens,
                   extra_args=ck_args(ck))
        wait_for(lambda: not ok(send(d, "getconfig"))["restoring"], "end of the restore", 60)
        d.as_ = {u: type("who", (), {"endpoint": d.endpoint, "token": f"tok-{u}"})
                 for u in users + ("root",)}
        return d

    def usage(d):
        return {u: ok(send(d.as_[u], "whoami"))["usage"] for u in users}

    d = daemon(ranks[0])
    try:
        a, b = d.as_["alice"], d.as_["bob"]
        put_array(a, np.arange(1000), name="x")
        put_strings(a, ["one", "two", "three"], name="s")
        put_array(a, np.array([3, 1, 3, 2]), name="k")
        ok(send(a, "binop", {"op": "+", "a": "k", "b": "k", "name": "k2"}))
        put_array(b, np.arange(400), name="big")  # 3200 of bob's 4096 bytes
        before = usage(d)
        assert before["bob"]["memory"] == 3200 and before["alice"]["objects"] == 4
        assert ok(send(d.as_["root"], "checkpoint"))["objects"] == 5
    finally:
        d.cleanup()

    d = daemon(ranks[1])
    try:
        after = usage(d)
        for u in users:
            assert (after[u]["memory"], after[u]["objects"]) == \
                (before[u]["memory"], before[u]["objects"]), (u, before, after)
        # bob's quota counts what was restored; deleting it gives the memory back
        b = d.as_["bob"]
        fails(send(b, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [200]},
                   [b"\0" * 1600], [{"name": "values", "nbytes": 1600}]),
              "resource_limit", "quota.memory")
        ok(send(b, "delete", {"names": ["big"]}))
        assert (usage(d)["bob"]["memory"], usage(d)["bob"]["objects"]) == (0, 0)
        put_array(b, np.arange(200), name="small")
    finally:
        d.cleanup()
