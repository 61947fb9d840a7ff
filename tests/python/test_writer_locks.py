"""Writers of files lock the files they change, each its own (storage/twin.h): with a tohdf
held by the fault table (H5ARK_FAULTS=1, `fault` with pause_ms) in the middle of its write,
a change to another file goes through at once; a change to the same file waits for it and
both land; a distributed set's files are locked together while a single file is changed
beside them. At one rank and at two (the HSDS endpoint's changes, here its native commands,
run on rank 0 beside a tohdf of every rank)."""
import json
import threading
import time

import h5py
import numpy as np
import pytest

from daemons import Daemon, MPIRUN, mpi_build, TOOL_SLOWDOWN, wait_for

pytestmark = pytest.mark.not_under_valgrind(
    "hold windows of writers: timing, whose lock paths the release and ASan passes run")
from wire import ok, put_array, send

PAUSE_MS = 1500 * TOOL_SLOWDOWN
N = 128


@pytest.fixture(params=[1, 2], ids=["1rank", "2ranks"])
def d(request):
    if request.param == 2 and (MPIRUN is None or not mpi_build()):
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    dm = Daemon(locales=2, ranks=request.param if request.param > 1 else None,
                env={"H5ARK_FAULTS": "1"})
    try:
        dm.data_dir.mkdir(exist_ok=True)
        yield dm
        ok(send(dm, "ping"))
    finally:
        dm.cleanup()


def make_file(d, name, dataset="v"):
    with h5py.File(d.data_dir / name, "w") as f:
        f[dataset] = np.zeros(N, dtype="<i8")


def dataset_id(d, domain, name="v"):
    root = ok(send(d, "h5domain", {"domain": domain}))["root"]
    return ok(send(d, "h5link", {"domain": domain, "id": root, "name": name}))["link"]["id"]


def put_value(d, domain, oid, value):
    """One HSDS value write (the whole dataset), natively; its time in seconds."""
    t = time.monotonic()
    ok(send(d, "h5put_value", {"domain": domain, "id": oid,
                               "body": json.dumps({"value": value})}))
    return time.monotonic() - t


class HeldTohdf:
    """A tohdf (or another writer, `cmd`) that the fault table holds for PAUSE_MS at the nth
    file call from now (rank 0's), there once the constructor returns."""

    def __init__(self, d, args, nth=1, cmd="tohdf"):
        self.d = d
        self.reply = []
        ok(send(d, "fault", {"nth": nth, "pause_ms": PAUSE_MS}))
        self.thread = threading.Thread(target=lambda: self.reply.append(
            send(d, cmd, args, timeout_ms=120000 * TOOL_SLOWDOWN)))
        self.thread.start()
        wait_for(lambda: any(r["cmd"] == cmd for r in ok(send(d, "status"))["requests"]),
                 f"{cmd} in status", 30)
        # at the held call by now (at two ranks it lays out after a few collectives): a
        # request sent earlier could make that call itself and be held instead
        time.sleep(0.3 * TOOL_SLOWDOWN)

    def join(self):
        self.thread.join(120 * TOOL_SLOWDOWN)
        assert self.reply, "the held tohdf did not answer"
        return ok(self.reply[0])


def test_changes_to_different_files_overlap(d):
    """A value write to a.h5 is answered while a tohdf to b.h5 is held mid-write (before,
    one lock for every file made it wait for the tohdf)."""
    make_file(d, "a.h5")
    oid = dataset_id(d, "/a.h5")
    obj = put_array(d, np.arange(N, dtype=np.int64))
    held = HeldTohdf(d, {"names": [obj], "datasets": ["x"], "path": "b.h5", "file_type": "single"})
    put_value(d, "/a.h5", oid, [7] * N)
    assert not held.reply, "the write to a.h5 waited for the tohdf to b.h5"
    held.join()
    with h5py.File(d.data_dir / "a.h5", "r") as f:
        assert (f["v"][()] == 7).all()
    with h5py.File(d.data_dir / "b.h5", "r") as f:
        assert f["x"][()].tolist() == list(range(N))


def rename_call(d, args, cmd="tohdf"):
    """Of the file calls a tohdf (or `cmd`) with `args` makes on rank 0, the number of its
    first rename (its commit), counted on a run of it. Its files were read once before, as
    the held one's are (the sandbox's walk of a file it has seen is not made again)."""
    ok(send(d, "fault", {}))
    ok(send(d, cmd, args))
    calls = ok(send(d, "fault", {}))["io_calls"]
    return calls.index("rename") + 1


def test_changes_to_one_file_wait_and_both_land(d):
    """A tohdf appending to b.h5 is held at its commit, after it copied b.h5's old state; a
    value write to b.h5 meanwhile waits for it, then lands on the new file: b.h5 holds both
    (without the lock the write would be lost under the tohdf's copy)."""
    make_file(d, "counted.h5")
    dataset_id(d, "/counted.h5")
    make_file(d, "b.h5")
    oid = dataset_id(d, "/b.h5")
    obj = put_array(d, np.arange(N, dtype=np.int64))
    nth = rename_call(d, {"names": [obj], "datasets": ["x"], "path": "counted.h5", "file_type": "single",
                          "mode": "append"})
    held = HeldTohdf(d, {"names": [obj], "datasets": ["x"], "path": "b.h5", "mode": "append",
                          "file_type": "single"},
                     nth=nth)
    waited = put_value(d, "/b.h5", oid, [5] * N)
    held.join()
    assert waited > PAUSE_MS / 1000 / 3, f"the write to b.h5 did not wait ({waited:.3f} s)"
    with h5py.File(d.data_dir / "b.h5", "r") as f:
        assert f["x"][()].tolist() == list(range(N))
        assert (f["v"][()] == 5).all()


def test_a_set_and_a_single_file_at_once(d):
    """A distributed tohdf over an existing set is held: a value write to a.h5 beside it goes
    through meanwhile; one to a file of the set waits and lands on the new set."""
    obj = put_array(d, np.arange(N, dtype=np.int64))
    set_args = {"names": [obj], "datasets": ["x"], "path": "s.h5", "file_type": "distribute"}
    ok(send(d, "tohdf", set_args))
    make_file(d, "a.h5")
    a_id = dataset_id(d, "/a.h5")
    one = "s_LOCALE0001.h5"
    s_id = dataset_id(d, f"/{one}", "x")
    with h5py.File(d.data_dir / one, "r") as f:
        rows = f["x"].shape[0]
    held = HeldTohdf(d, set_args)
    put_value(d, "/a.h5", a_id, [3] * N)
    assert not held.reply, "the write to a.h5 waited for the set's tohdf"
    waited = put_value(d, f"/{one}", s_id, [-1] * rows)
    held.join()
    assert waited > PAUSE_MS / 1000 / 3, f"the write to {one} did not wait ({waited:.3f} s)"
    with h5py.File(d.data_dir / "a.h5", "r") as f:
        assert (f["v"][()] == 3).all()
    with h5py.File(d.data_dir / one, "r") as f:
        assert (f["x"][()] == -1).all()  # after the set was rewritten, not under it
    with h5py.File(d.data_dir / "s_LOCALE0000.h5", "r") as f:
        assert f["x"][()].tolist() == list(range(f["x"].shape[0]))


def test_repack_locks_a_file_at_a_time(d):
    """A repack of r1.h5 and r2.h5 held at r1's commit: a write to r2.h5 goes through meanwhile,
    one to r1.h5 waits for r1's repack; both are in the files after (r2's repacked with
    it, none put back stale)."""
    ids = {}
    for name in ("q1.h5", "q2.h5", "r1.h5", "r2.h5"):
        make_file(d, name)
        ids[name] = dataset_id(d, f"/{name}")
    nth = rename_call(d, {"path": "q*.h5"}, cmd="repack")
    held = HeldTohdf(d, {"path": "r*.h5"}, nth=nth, cmd="repack")
    put_value(d, "/r2.h5", ids["r2.h5"], [2] * N)
    assert not held.reply, "the write to r2.h5 waited for the repack of r1.h5"
    waited = put_value(d, "/r1.h5", ids["r1.h5"], [1] * N)
    assert held.join()["files"] == ["r1.h5", "r2.h5"]
    assert waited > PAUSE_MS / 1000 / 3, f"the write to r1.h5 did not wait ({waited:.3f} s)"
    for name, k in (("r1.h5", 1), ("r2.h5", 2)):
        with h5py.File(d.data_dir / name, "r") as f:
            assert (f["v"][()] == k).all(), name


def test_twins_evicted_beside_changes(d):
    """34 files changed one after another keep 32 twins (the least recently used goes, its
    file's lock free); then four clients change them at once, evicting while others
    change: every value lands."""
    names = [f"t{i:02d}.h5" for i in range(34)]
    ids = {}
    for name in names:
        make_file(d, name)
        ids[name] = dataset_id(d, f"/{name}")
    for name in names:
        put_value(d, f"/{name}", ids[name], [1] * N)
    assert len(list(d.data_dir.glob(".t*.h5.h5ark-twin"))) == 32

    def client(k):
        for name in names[k::4] * 2:
            put_value(d, f"/{name}", ids[name], [int(name[1:3]) + 10] * N)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120 * TOOL_SLOWDOWN)
    for name in names:
        with h5py.File(d.data_dir / name, "r") as f:
            assert (f["v"][()] == int(name[1:3]) + 10).all(), name


def test_rmhdf_waits_for_a_change_and_takes_the_twin(d):
    """rmhdf of a file a tohdf is replacing waits for it (the file's lock), then removes the
    file and the twin an HSDS change left beside it."""
    make_file(d, "gone.h5")
    put_value(d, "/gone.h5", dataset_id(d, "/gone.h5"), [3] * N)
    assert (d.data_dir / ".gone.h5.h5ark-twin").exists()
    name = put_array(d, np.arange(N, dtype=np.int64))
    held = HeldTohdf(d, {"names": [name], "datasets": ["w"], "path": "gone.h5",
                         "mode": "append", "file_type": "single"})
    t = time.monotonic()
    assert ok(send(d, "rmhdf", {"path": "gone.h5"}))["deleted"] == ["gone.h5"]
    assert time.monotonic() - t > PAUSE_MS / 1000 / 2, "rmhdf did not wait for the tohdf"
    held.join()
    assert not (d.data_dir / "gone.h5").exists()
    assert not list(d.data_dir.glob(".gone.h5*"))
