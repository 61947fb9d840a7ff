"""Fields written in parts through the file's twin (docs/DESIGN.md, "Writing ExeTera fields
in parts"): a part is written to the hidden twin, swapped in whole, and repeated on the old
file, so that a part costs its own size, not a copy of the file. Checked here: that parts
really go in by swapping (the inodes trade places, nothing is copied), that file and twin
stay byte for byte the same, that `complete` and a restart remove the twin, that a file
changed some other way between parts keeps that change, that a reader holding the old file
open reads it unchanged, and that nothing lists or reads the twin."""
import os

import h5py
import numpy as np

from daemons import Daemon
from wire import Conn, unique


def twin_of(path):
    return path.parent / f".{path.name}.h5ark-twin"


def values(path, field):
    with h5py.File(path, "r") as h:
        return h[f"{field}/values"][()]


def part(c, path, field, arr):
    name = c.put(arr)
    c.ok("writepart", path=path, field=field, name=name)
    c.ok("delete", names=[name])


def test_parts_swap_with_the_twin(conn):
    c = conn
    name = unique("twin") + ".hdf5"
    path = c.dir / name
    first = np.arange(1000, dtype=np.int64)
    part(c, name, "df/x", first)                  # a new file: made beside and renamed
    assert not twin_of(path).exists()
    want = [first]
    for k in range(1, 6):
        before = os.stat(path).st_ino
        twin_before = os.stat(twin_of(path)).st_ino if twin_of(path).exists() else None
        arr = np.arange(k * 5000, k * 5000 + 777 * k, dtype=np.int64)
        part(c, name, "df/x", arr)
        want.append(arr)
        # the old file is now the twin, and the twin (once made) is the file
        assert os.stat(twin_of(path)).st_ino == before, k
        if twin_before is not None:
            assert os.stat(path).st_ino == twin_before, k
        assert path.read_bytes() == twin_of(path).read_bytes(), k
        assert list(values(path, "df/x")) == list(np.concatenate(want)), k
    c.ok("complete", path=name, field="df/x")
    assert not twin_of(path).exists()
    with h5py.File(path, "r") as h:
        assert "completed" in h["df/x/values"].attrs
        assert list(h["df/x/values"][()]) == list(np.concatenate(want))


def test_strings_and_categorical_parts_stay_level(conn):
    c = conn
    name = unique("twin_s") + ".hdf5"
    path = c.dir / name
    words = [f"w{i}" * (i % 7) for i in range(3000)]
    for k in range(4):
        s = c.put_strings(words[k * 700:(k + 1) * 700])
        c.ok("writepart", path=name, field="df/s", name=s)
        c.ok("delete", names=[s])
        if k:
            assert path.read_bytes() == twin_of(path).read_bytes(), k
    with h5py.File(path, "r") as h:
        idx, raw = h["df/s/index"][()], h["df/s/values"][()].tobytes()
        assert [raw[a:b].decode() for a, b in zip(idx, idx[1:])] == words[:2800]


def test_a_change_made_between_parts_is_kept(conn):
    c = conn
    name = unique("twin_ext") + ".hdf5"
    path = c.dir / name
    part(c, name, "df/x", np.arange(10, dtype=np.int64))
    part(c, name, "df/x", np.arange(10, 20, dtype=np.int64))
    with h5py.File(path, "r+") as h:                # someone else's change, in place
        h["df"].attrs["note"] = "kept"
        h["extra"] = np.arange(3)
    part(c, name, "df/x", np.arange(20, 30, dtype=np.int64))
    with h5py.File(path, "r") as h:
        assert h["df"].attrs["note"] == "kept"
        assert list(h["extra"][()]) == [0, 1, 2]
        assert list(h["df/x/values"][()]) == list(range(30))
    assert path.read_bytes() == twin_of(path).read_bytes()


def test_a_reader_holding_the_old_file_reads_it_unchanged(conn):
    """h5py keeps a shared lock on a file it has open: the old file is left alone (the twin
    is made anew next time) and the reader goes on reading what it opened."""
    c = conn
    name = unique("twin_rd") + ".hdf5"
    path = c.dir / name
    part(c, name, "df/x", np.arange(100, dtype=np.int64))
    part(c, name, "df/x", np.arange(100, 200, dtype=np.int64))
    with h5py.File(path, "r") as reader:
        part(c, name, "df/x", np.arange(200, 300, dtype=np.int64))
        assert not twin_of(path).exists()           # not written while it is read
        part(c, name, "df/x", np.arange(300, 400, dtype=np.int64))
        assert list(reader["df/x/values"][()]) == list(range(200))
    assert list(values(path, "df/x")) == list(range(400))
    part(c, name, "df/x", np.arange(400, 500, dtype=np.int64))
    assert path.read_bytes() == twin_of(path).read_bytes()
    assert list(values(path, "df/x")) == list(range(500))


def test_reads_and_lists_never_see_the_twin(conn):
    c = conn
    sub = unique("twin_dir")
    name = f"{sub}/a.hdf5"
    for k in range(3):
        part(c, name, "df/x", np.arange(k * 10, k * 10 + 10, dtype=np.int64))
    assert twin_of(c.dir / name).exists()
    hdr, _ = c.ok("readhdf", paths=[f"{sub}/*"])
    assert list(hdr["result"]["objects"]) == ["df"], hdr
    c.ok("delete", names=[hdr["result"]["objects"]["df"]["name"]])
    hdr, _ = c.ok("readhdf", paths=[f"{sub}/*"], datasets=["df/x"])
    x = hdr["result"]["objects"]["df/x"]
    assert x["shape"] == [30], hdr
    c.ok("delete", names=[x["name"]])
    hdr, _ = c.ok("lshdf", path=name)
    assert ".h5ark-twin" not in repr(hdr), hdr


def test_a_restart_removes_twins(tmp_path):
    d = Daemon(locales=2)
    try:
        c = Conn(d)
        d.data_dir.mkdir(exist_ok=True)
        for k in range(2):
            part(c, "r.hdf5", "df/x", np.arange(k * 5, k * 5 + 5, dtype=np.int64))
        assert twin_of(d.data_dir / "r.hdf5").exists()
        d.stop()
        d2 = Daemon(locales=2, data_dir=d.data_dir)
        try:
            assert not twin_of(d.data_dir / "r.hdf5").exists()
            c2 = Conn(d2)
            part(c2, "r.hdf5", "df/x", np.arange(10, 15, dtype=np.int64))
            assert list(values(d.data_dir / "r.hdf5", "df/x")) == list(range(15))
        finally:
            d2.cleanup()
    finally:
        d.cleanup()


def test_reads_while_parts_land_see_whole_parts(conn):
    """readhdf in a loop while parts stream into the same field: every read succeeds and
    sees some number of whole parts, never a file half levelled."""
    import threading
    c = conn
    name = unique("twin_race") + ".hdf5"
    size = 20_000
    part(c, name, "df/x", np.arange(size, dtype=np.int64))
    stop, seen, errors = threading.Event(), [], []

    def read_loop():
        while not stop.is_set():
            hdr, _ = c.raw("readhdf", paths=[name], datasets=["df/x"])
            if not hdr["ok"]:
                errors.append(hdr)
                continue
            obj = hdr["result"]["objects"]["df/x"]
            got = c.get(obj["name"])
            c.ok("delete", names=[obj["name"]])
            if len(got) % size or list(got) != list(range(len(got))):
                errors.append(len(got))
            seen.append(len(got))

    t = threading.Thread(target=read_loop)
    t.start()
    try:
        for k in range(1, 12):
            part(c, name, "df/x", np.arange(k * size, (k + 1) * size, dtype=np.int64))
    finally:
        stop.set()
        t.join()
    assert not errors, errors[:3]
    assert seen and max(seen) <= 12 * size
    assert list(values(c.dir / name, "df/x")) == list(range(12 * size))
