"""Faults on purpose: a daemon started with H5ARK_FAULTS=1 counts the system calls and
allocations of the storage paths (its own and its file probes'), and the test-only `fault`
command makes the Nth of them fail. For tohdf (truncate, append, update; single and
distributed; plain and compressed), ExeTera writes (tohdf format exetera, writepart,
complete), repack and readhdf (single and distributed sets, contiguous
and compressed, numbers and Strings), each call k = 1..N fails in turn with ENOSPC and EIO,
and each allocation with ENOMEM. After each: the reply is a clear error with the right code
(io_error, or resource_limit for memory; never schema_error: a healthy file is not to be
blamed) or a correct success, every file is byte for byte the old one or wholly the new
one, no temporary is left, and the daemon goes on serving."""
import os
import re
import time

import h5py
import numpy as np
import pytest

from conftest import locale_file
from daemons import Daemon, TOOL_SLOWDOWN
from wire import Conn

LOCALES = 2
N = 600
WORDS = ["alpha", "", "Grüße", "b" * 40, "z"]
# under a tool (ASan, valgrind) every request is slower: try a sample of the calls
SAMPLE = 12 if os.environ.get("H5ARKD_WRAPPER") else 0
TEMP = re.compile(r"^\..*\.h5ark-tmp\.\d+\.\d+$")


@pytest.fixture(scope="module")
def conn():
    d = Daemon(locales=LOCALES, env={"H5ARK_FAULTS": "1"})
    d.data_dir.mkdir(exist_ok=True)
    c = Conn(d)
    yield c
    d.cleanup()


def fault(c, **kw):
    """Report the calls since the last fault command, and arm the next (nth > 0)."""
    hdr, _ = c.raw("fault", **kw)
    assert hdr["ok"], hdr
    return hdr["result"]


def calls_to_try(names):
    """Every call (k from 1; names: which function each was), or under a tool the first and
    last few, the first and last call of each function (the create's open, each fsync,
    rename, ...) and a spread between."""
    n = len(names)
    if not SAMPLE or n <= 3 * SAMPLE:
        return list(range(1, n + 1))
    step = max(1, n // SAMPLE)
    picked = set(range(1, 5)) | set(range(n - 5, n + 1)) | set(range(1, n + 1, step))
    for name in set(names):
        picked |= {names.index(name) + 1, n - names[::-1].index(name)}
    return sorted(k for k in picked if 1 <= k <= n)


def temps(data_dir):
    return [p.name for p in data_dir.rglob("*") if TEMP.match(p.name)]


def journals(data_dir):
    """The commit journals of file sets (docs/DESIGN.md, "Writing"): none once a write ends."""
    d = data_dir / ".h5ark-journal"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def strings_of(h, group):
    values = h[f"{group}/values"][()].tobytes()
    segs = list(h[f"{group}/segments"][()]) + [len(values)]
    return [values[a:b - 1].decode() for a, b in zip(segs, segs[1:])]


def shares(n, i, parts):
    lo, hi = -(-n * i // parts), -(-n * (i + 1) // parts)
    return lo, hi


def check_error(hdr, klass, what):
    err = hdr["error"]
    assert err["message"], (what, hdr)
    want = "resource_limit" if klass == "alloc" else "io_error"
    assert err["code"] == want, (what, hdr)
    if klass == "alloc":
        assert "out of memory" in err["message"], (what, hdr)


# ---- tohdf ------------------------------------------------------------------------------

class Objects:
    def __init__(self, c):
        self.old_nums = np.arange(N, dtype=np.int64)
        self.new_nums = np.arange(N, dtype=np.int64) * 7 + (1 << 33)
        self.old_words = WORDS
        self.new_words = [w.upper() + "!" for w in WORDS]
        self.keep_nums = np.arange(N, dtype=np.int64) * -3
        self.a_old, self.a_new = c.put(self.old_nums), c.put(self.new_nums)
        self.a_keep = c.put(self.keep_nums)
        self.s_old, self.s_new = c.put_strings(self.old_words), c.put_strings(self.new_words)


@pytest.fixture(scope="module")
def objs(conn):
    return Objects(conn)


def expected(objs, mode, file_type, index):
    """{dataset: values} a file holds after the write succeeded."""
    def part(v):
        if file_type == "single":
            return list(v)
        lo, hi = shares(len(v), index, LOCALES)
        return list(v[lo:hi])
    old = {"x": part(objs.old_nums), "s": part(objs.old_words), "k": part(objs.keep_nums)}
    if mode == "truncate":
        return {"x": part(objs.new_nums), "s": part(objs.new_words)}
    if mode == "append":
        return {**old, "y": part(objs.new_nums), "t": part(objs.new_words)}
    # update copies what it does not replace
    return {"x": part(objs.new_nums), "s": part(objs.new_words), "k": part(objs.keep_nums)}


def holds(path, want):
    with h5py.File(path, "r") as h:
        if sorted(h.keys()) != sorted(want):
            return False
        for k, v in want.items():
            got = strings_of(h, k) if isinstance(h[k], h5py.Group) else list(h[k][()])
            if got != v:
                return False
    return True


WRITES = [("new", "single", None), ("new", "distribute", None),
          ("truncate", "single", None), ("truncate", "distribute", None),
          ("append", "single", None), ("append", "distribute", None),
          ("update", "single", None), ("update", "distribute", None),
          ("truncate", "single", "gzip"), ("update", "distribute", "gzip")]


@pytest.mark.parametrize("mode,file_type,compression", WRITES)
def test_tohdf_faults(conn, objs, mode, file_type, compression):
    c, data_dir = conn, conn.dir
    # "new": a truncate to a file (and a directory) that do not exist yet
    fresh = mode == "new"
    name = f"w_{mode}_{file_type}_{compression or 'plain'}.h5"
    if fresh:
        name, mode = f"newdir_{file_type}/{name}", "truncate"
    files = ([name] if file_type == "single"
             else [locale_file(name, i) for i in range(LOCALES)])
    extra = {"compression": compression} if compression else {}
    # the old files, as an earlier write left them (None: no file)
    c.ok("tohdf", names=[objs.a_old, objs.s_old, objs.a_keep], datasets=["x", "s", "k"],
         path=name, file_type=file_type, **extra)
    old = {f: None if fresh else (data_dir / f).read_bytes() for f in files}
    if mode == "append":
        args = dict(names=[objs.a_new, objs.s_new], datasets=["y", "t"])
    else:
        args = dict(names=[objs.a_new, objs.s_new], datasets=["x", "s"])
    args.update(path=name, file_type=file_type, mode=mode, **extra)

    def restore():
        for f, b in old.items():
            if b is None:
                (data_dir / f).unlink(missing_ok=True)
            else:
                (data_dir / f).write_bytes(b)
        if fresh and (data_dir / name).parent.exists():
            (data_dir / name).parent.rmdir()  # empty: nothing left behind in it

    def check_files(ok, what):
        for i, f in enumerate(files):
            p = data_dir / f
            want = expected(objs, mode, file_type, i)
            if ok:
                assert holds(p, want), (what, f)
            elif file_type == "distribute":
                # a set is old or new as a whole: a write that failed left every file old
                assert (not p.exists() if old[f] is None else p.read_bytes() == old[f]), \
                    (what, f, "not the old file")
            elif old[f] is None:
                assert not p.exists() or holds(p, want), (what, f, "neither absent nor new")
            else:
                now = p.read_bytes()
                assert now == old[f] or holds(p, want), (what, f, "neither old nor new")
        assert temps(data_dir) == [], (what, temps(data_dir))
        assert journals(data_dir) == [], (what, journals(data_dir))
        if not ok and file_type == "distribute":
            # and readhdf gives the rows of the old write alone
            hdr, _ = c.raw("readhdf", paths=[name], datasets=["x"])
            if fresh:
                assert hdr["error"]["code"] == "not_found", (what, hdr)
            else:
                assert hdr["ok"], (what, hdr)
                x = hdr["result"]["objects"]["x"]["name"]
                assert list(c.get(x)) == list(objs.old_nums), what
                c.ok("delete", names=[x])

    fault(c)
    hdr, _ = c.raw("tohdf", **args)
    assert hdr["ok"], hdr
    counts = fault(c)
    check_files(True, "no fault")
    assert counts["io"] > 0 and counts["alloc"] > 0, counts
    assert len(counts["io_calls"]) == counts["io"], counts
    # what every write does: create or copy, write, flush, rename
    for call in ("open", "pwrite", "fsync", "rename"):
        assert call in counts["io_calls"], counts
    fired_calls = set()
    for klass, errors in (("io", ["ENOSPC", "EIO"]), ("alloc", ["ENOMEM"])):
        for error in errors:
            for k in calls_to_try(counts[f"{klass}_calls"]):
                restore()
                fault(c, **{"class": klass, "nth": k, "error": error})
                hdr, _ = c.raw("tohdf", **args)
                report = fault(c)
                what = (mode, file_type, compression, klass, error, k, report["fired"], hdr)
                assert report["fired"], what  # every call counted is reached again
                assert report["hdf5_open"] == 0, what  # nothing of HDF5's left open
                fired_calls.add(report["fired"])
                if not hdr["ok"]:
                    check_error(hdr, klass, what)
                check_files(hdr["ok"], what)
    # every function the write calls was made to fail at least once
    assert fired_calls >= {"open", "pwrite", "fsync", "rename", "close"}, fired_calls
    if not SAMPLE:  # (a sample's call k may be another function when the locales race)
        assert fired_calls >= set(counts["io_calls"]) | set(counts["alloc_calls"]), fired_calls
    if mode == "append":
        assert "copy_file_range" in fired_calls
    if fresh:
        assert "mkdir" in fired_calls
    # and the daemon still writes and reads correctly
    restore()
    hdr, _ = c.raw("tohdf", **args)
    assert hdr["ok"], hdr
    check_files(True, "after the faults")


@pytest.mark.parametrize("mode", ["truncate", "append"])
def test_readhdf_waits_for_a_set_being_put_in_place(conn, objs, mode):
    """A readhdf of a set arriving while a tohdf of it is between two renames (held there by
    the fault table's pause) waits for the commit and reads the new set whole: never the
    first file new and the second old."""
    import threading
    c, data_dir = conn, conn.dir
    name = f"commit_reader_{mode}.h5"
    files = [data_dir / locale_file(name, i) for i in range(LOCALES)]
    c.ok("tohdf", names=[objs.a_old], datasets=["x"], path=name)
    args = dict(names=[objs.a_new], datasets=["y" if mode == "append" else "x"], path=name,
                mode=mode)
    old = {f: f.read_bytes() for f in files}
    fault(c)
    c.ok("tohdf", **args)
    calls = fault(c)["io_calls"]
    renames = [k + 1 for k, call in enumerate(calls) if call == "rename"]
    assert len(renames) == LOCALES, calls
    for f, b in old.items():
        f.write_bytes(b)
    fault(c, nth=renames[1], pause_ms=1000 + 500 * TOOL_SLOWDOWN)
    wrote = []
    t = threading.Thread(target=lambda: wrote.append(c.raw("tohdf", **args)[0]))
    t.start()
    try:
        end = time.time() + 20 * TOOL_SLOWDOWN
        while files[0].read_bytes() == old[files[0]]:  # the first file is in place
            assert time.time() < end, "the first rename did not come"
            time.sleep(0.005)
        assert files[1].read_bytes() == old[files[1]]  # and the second not yet
        hdr, _ = c.raw("readhdf", paths=[name], datasets=[args["datasets"][0]])
    finally:
        t.join(30)
    fault(c)
    assert wrote and wrote[0]["ok"], wrote
    assert hdr["ok"], hdr
    x = hdr["result"]["objects"][args["datasets"][0]]["name"]
    assert list(c.get(x)) == list(objs.new_nums)
    c.ok("delete", names=[x])


def test_repack_faults(conn, objs):
    c, data_dir = conn, conn.dir
    name = "repack.h5"
    c.ok("tohdf", names=[objs.a_old, objs.s_old, objs.a_keep], datasets=["x", "s", "k"],
         path=name, file_type="single")
    # an update leaves the space of the old datasets behind, for repack to reclaim
    c.ok("tohdf", names=[objs.a_new, objs.s_new], datasets=["x", "s"], path=name,
         file_type="single", mode="update")
    old = (data_dir / name).read_bytes()
    want = expected(objs, "update", "single", 0)
    fault(c)
    assert c.raw("repack", path=name)[0]["ok"]
    counts = fault(c)
    for klass, errors in (("io", ["ENOSPC", "EIO"]), ("alloc", ["ENOMEM"])):
        for error in errors:
            for k in calls_to_try(counts[f"{klass}_calls"]):
                (data_dir / name).write_bytes(old)
                fault(c, **{"class": klass, "nth": k, "error": error})
                hdr, _ = c.raw("repack", path=name)
                report = fault(c)
                what = ("repack", klass, error, k, report["fired"], hdr)
                assert report["hdf5_open"] == 0, what
                if not hdr["ok"]:
                    assert report["fired"], what
                    check_error(hdr, klass, what)
                p = data_dir / name
                assert p.read_bytes() == old or holds(p, want), what
                if hdr["ok"]:
                    assert holds(p, want), what
                assert temps(data_dir) == [], what


# ---- readhdf ----------------------------------------------------------------------------

READS = [("single", None), ("distribute", None), ("single", "gzip"), ("distribute", "gzip")]


@pytest.mark.parametrize("file_type,compression", READS)
def test_readhdf_faults(conn, objs, file_type, compression):
    c, data_dir = conn, conn.dir
    name = f"r_{file_type}_{compression or 'plain'}.h5"
    extra = {"compression": compression} if compression else {}
    c.ok("tohdf", names=[objs.a_new, objs.s_new], datasets=["x", "s"], path=name,
         file_type=file_type, **extra)
    files = sorted(p.name for p in data_dir.glob(name.replace(".h5", "*")))
    before = {f: (data_dir / f).read_bytes() for f in files}

    def read_and_check():
        hdr, _ = c.raw("readhdf", paths=[name])
        if not hdr["ok"]:
            return hdr
        got = hdr["result"]["objects"]
        x = c.get(got["x"]["name"])
        s = c.get_strings(got["s"]["name"])
        assert list(np.asarray(x)) == list(objs.new_nums), hdr
        assert list(s) == objs.new_words, hdr
        c.ok("delete", names=[got["x"]["name"], got["s"]["name"]])
        return hdr

    fault(c)
    assert read_and_check()["ok"]
    counts = fault(c)
    assert counts["io"] > 0, counts
    for klass, errors in (("io", ["EIO", "ENOSPC"]), ("alloc", ["ENOMEM"])):
        for error in errors:
            for k in calls_to_try(counts[f"{klass}_calls"]):
                fault(c, **{"class": klass, "nth": k, "error": error})
                hdr, _ = c.raw("readhdf", paths=[name])
                report = fault(c)
                what = (file_type, compression, klass, error, k, report["fired"], hdr)
                assert report["hdf5_open"] == 0, what
                if hdr["ok"]:
                    got = hdr["result"]["objects"]
                    x = np.asarray(c.get(got["x"]["name"]))
                    s = list(c.get_strings(got["s"]["name"]))
                    assert list(x) == list(objs.new_nums), what
                    assert s == objs.new_words, what
                    c.ok("delete", names=[got["x"]["name"], got["s"]["name"]])
                else:
                    assert report["fired"], what
                    check_error(hdr, klass, what)
                for f, b in before.items():
                    assert (data_dir / f).read_bytes() == b, (what, f)
                assert temps(data_dir) == [], what
    fault(c)
    assert read_and_check()["ok"]


def test_fault_command_needs_the_switch():
    d = Daemon(locales=1)
    try:
        hdr, _ = Conn(d).raw("fault", nth=1)
        assert not hdr["ok"] and hdr["error"]["code"] == "forbidden", hdr
        assert "H5ARK_FAULTS=1" in hdr["error"]["message"]
    finally:
        d.cleanup()


# ---- ExeTera writes -----------------------------------------------------------------------

def exetera_fields(path):
    """{field: values} of the dataframe `df` (strings for indexed strings), and the fields'
    completed marks."""
    out, marks = {}, {}
    with h5py.File(path, "r") as h:
        for name, g in h["df"].items():
            if "index" in g:
                idx, raw = g["index"][()], g["values"][()].tobytes()
                out[name] = [raw[a:b].decode() for a, b in zip(idx, idx[1:])]
                marks[name] = "completed" in g["index"].attrs
            else:
                out[name] = list(g["values"][()])
                marks[name] = "completed" in g["values"].attrs
    return out, marks


EXETERA_WRITES = ["truncate", "append", "update", "writepart", "writepart_new", "complete"]


@pytest.mark.parametrize("what", EXETERA_WRITES)
def test_exetera_faults(conn, objs, what):
    """ExeTera writes: each call failed in turn leaves the file as it was (or, after the
    rename, wholly written), with a clear error, no temporary and nothing of HDF5's open."""
    c, data_dir = conn, conn.dir
    name = f"ex_{what}.hdf5"
    c.ok("tohdf", names=[objs.a_old, objs.s_old], datasets=["x", "s"], path=name,
         format="exetera")
    c.ok("writepart", path=name, field="df/p", name=objs.a_old)
    old = (data_dir / name).read_bytes()
    was, _ = exetera_fields(data_dir / name)
    cmd, args = "tohdf", dict(path=name, format="exetera")
    if what == "truncate":
        args.update(names=[objs.a_new], datasets=["x"])
        want = {"x": list(objs.new_nums)}
    elif what == "append":
        args.update(names=[objs.a_new, objs.s_new], datasets=["y", "t"], mode="append")
        want = {**was, "y": list(objs.new_nums), "t": objs.new_words}
    elif what == "update":
        args.update(names=[objs.a_new, objs.s_new], datasets=["x", "s"], mode="update")
        want = {**was, "x": list(objs.new_nums), "s": objs.new_words}
    elif what == "writepart":
        cmd, args = "writepart", dict(path=name, field="df/p", name=objs.a_new)
        want = {**was, "p": list(objs.old_nums) + list(objs.new_nums)}
    elif what == "writepart_new":
        cmd, args = "writepart", dict(path=name, field="df/w", name=objs.s_new)
        want = {**was, "w": objs.new_words}
    else:
        cmd, args = "complete", dict(path=name, field="df/p")
        want = was

    def check(ok, why):
        p = data_dir / name
        if not ok and p.read_bytes() == old:
            pass
        else:
            got, marks = exetera_fields(p)
            assert got == want, (why, got.keys())
            if what == "complete":
                assert marks["p"], why
        assert temps(data_dir) == [], (why, temps(data_dir))

    fault(c)
    hdr, _ = c.raw(cmd, **args)
    assert hdr["ok"], hdr
    counts = fault(c)
    check(True, "no fault")
    for klass, errors in (("io", ["ENOSPC", "EIO"]), ("alloc", ["ENOMEM"])):
        for error in errors:
            for k in calls_to_try(counts[f"{klass}_calls"]):
                (data_dir / name).write_bytes(old)
                fault(c, **{"class": klass, "nth": k, "error": error})
                hdr, _ = c.raw(cmd, **args)
                report = fault(c)
                why = (what, klass, error, k, report["fired"], hdr)
                assert report["hdf5_open"] == 0, why
                if not hdr["ok"]:
                    assert report["fired"], why
                    check_error(hdr, klass, why)
                check(hdr["ok"], why)
    (data_dir / name).write_bytes(old)
    hdr, _ = c.raw(cmd, **args)
    assert hdr["ok"], hdr
    check(True, "after the faults")
