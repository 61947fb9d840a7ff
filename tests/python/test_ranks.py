"""The daemon as several ranks under mpirun (docs/DESIGN.md, "Ranks"): the converted
commands give the same results at R = 2 and 3 as at R = 1 with the same total number of
locales, the others are refused with a clear error, idle ranks use no CPU, and a rank
killed with SIGKILL stops the daemon with an error naming it."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import threading
import time

import h5py
import numpy as np
import pytest

from conftest import SHARED_FIXTURES
from daemons import MPIRUN, Daemon, mpi_build, wait_for
from wire import call, call_ok, request

THREADS = 2  # locales per rank; the one-rank daemon compared with gets R * THREADS

pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (openmpi-bin)")


def values(frames, dtype):
    return np.frombuffer(b"".join(bytes(f) for f in frames), dtype=dtype)


@pytest.fixture(scope="module")
def singles():
    """One-rank daemons by number of locales, started when first needed."""
    started = {}
    yield started
    for d in started.values():
        d.cleanup()


@pytest.fixture(scope="module", params=[2, 3], ids=["R2", "R3"])
def multi(request):
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=request.param, locales=THREADS)
    yield d
    d.cleanup()


@pytest.fixture
def single(multi, singles):
    """A one-rank daemon with the multi-rank daemon's total number of locales."""
    total = multi.ranks * THREADS
    if total not in singles:
        singles[total] = Daemon(locales=total)
    return singles[total]


SCENARIOS = [
    ("int64 arange", {"dtype": "int64", "fill": "arange", "start": -5, "stop": 1000, "step": 3}),
    ("float64 linspace", {"dtype": "float64", "fill": "linspace", "start": 0, "stop": 1,
                          "size": 1001}),
    ("uint8 randint", {"dtype": "uint8", "fill": "randint", "low": 0, "high": 200, "seed": 7,
                       "size": 4097}),
    ("float32 uniform", {"dtype": "float32", "fill": "uniform", "seed": 3, "size": 5}),
    ("bool ones", {"dtype": "bool", "fill": "ones", "size": 2}),
    ("int16 full", {"dtype": "int16", "fill": "full", "value": -7, "size": 13}),
    ("empty", {"dtype": "int64", "fill": "zeros", "size": 0}),
]


def create_and_get(endpoint, args, start=None, stop=None):
    hdr, _ = call(endpoint, "create", args)
    assert hdr["ok"], hdr
    obj = hdr["result"]["object"]
    get_args = {"name": obj["name"]}
    if start is not None:
        get_args.update(start=start, stop=stop)
    hdr, frames = call(endpoint, "get", get_args)
    assert hdr["ok"], hdr
    return obj, values(frames, obj["dtype"] if obj["dtype"] != "bool" else "u1")


def test_getconfig_reports_ranks_and_hosts(multi):
    hdr, _ = call(multi.endpoint, "getconfig")
    assert hdr["ok"], hdr
    res = hdr["result"]
    assert res["ranks"] == multi.ranks
    assert len(res["hosts"]) == multi.ranks and all(res["hosts"])
    assert res["locales"] == multi.ranks * THREADS
    assert res["locales_per_rank"] == THREADS


def test_one_rank_reports_one(single):  # noqa: ARG001 - single needs multi
    hdr, _ = call(single.endpoint, "getconfig")
    assert hdr["result"]["ranks"] == 1 and len(hdr["result"]["hosts"]) == 1


@pytest.mark.parametrize("label,args", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_create_get_match_one_rank(multi, single, label, args):
    got_obj, got = create_and_get(multi.endpoint, args)
    want_obj, want = create_and_get(single.endpoint, args)
    for k in ("objtype", "dtype", "size", "shape", "nbytes"):
        assert got_obj[k] == want_obj[k], k
    np.testing.assert_array_equal(got, want)


def test_get_ranges_cross_ranks(multi, single):
    n = 1000
    for start, stop in [(0, n), (1, 999), (300, 700), (499, 501), (0, 0), (n, n), (998, n)]:
        args = {"dtype": "int64", "fill": "arange", "stop": n}
        _, got = create_and_get(multi.endpoint, args, start, stop)
        _, want = create_and_get(single.endpoint, args, start, stop)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, np.arange(start, stop))


@pytest.mark.parametrize("dtype,n", [("float64", 100_003), ("int32", 7), ("bool", 33),
                                     ("uint64", 1), ("int8", 0)])
def test_put_get_roundtrip(multi, dtype, n):
    rng = np.random.default_rng(n)
    a = (rng.integers(0, 2, n).astype(dtype) if dtype == "bool" else
         (rng.random(n) * 1000).astype(dtype))
    raw = a.tobytes()
    # frames that do not line up with the shards
    frames = [raw[i:i + 4099] for i in range(0, len(raw), 4099)] or [b""]
    hdr, _ = call(multi.endpoint, "put", {"dtype": dtype, "shape": [n]},
                  [{"name": "values", "nbytes": len(raw)}], frames if raw else ())
    assert hdr["ok"], hdr
    hdr, frames = call(multi.endpoint, "get", {"name": hdr["result"]["object"]["name"]})
    assert hdr["ok"], hdr
    assert b"".join(bytes(f) for f in frames) == raw


def test_put_bad_bool_on_another_rank(multi):
    a = np.zeros(60, dtype="u1")
    a[-1] = 2  # the last shard: another rank's
    hdr, _ = call(multi.endpoint, "put", {"dtype": "bool", "shape": [60], "name": "badbool"},
                  [{"name": "values", "nbytes": 60}], [a.tobytes()])
    assert not hdr["ok"] and hdr["error"]["code"] == "bad_request"
    assert "neither 0 nor 1" in hdr["error"]["message"]
    hdr, _ = call(multi.endpoint, "info", {"names": ["badbool"]})
    assert hdr["error"]["code"] == "not_found"  # published on no rank


def test_names_info_delete_clear(multi):
    hdr, _ = call(multi.endpoint, "create", {"dtype": "int64", "size": 10, "name": "named"})
    assert hdr["ok"], hdr
    hdr, _ = call(multi.endpoint, "create", {"dtype": "int64", "size": 10, "name": "named"})
    assert hdr["error"]["code"] == "already_exists"
    hdr, _ = call(multi.endpoint, "info", {"names": ["named"]})
    assert hdr["ok"] and hdr["result"]["objects"][0]["size"] == 10
    hdr, _ = call(multi.endpoint, "delete", {"names": ["named"]})
    assert hdr["ok"] and hdr["result"]["deleted"] == ["named"]
    hdr, _ = call(multi.endpoint, "get", {"name": "named"})
    assert hdr["error"]["code"] == "not_found"
    hdr, _ = call(multi.endpoint, "create", {"dtype": "int64", "size": 10})
    assert hdr["ok"]
    hdr, _ = call(multi.endpoint, "clear")
    assert hdr["ok"] and hdr["result"]["deleted"] >= 1
    hdr, _ = call(multi.endpoint, "info")
    assert hdr["ok"] and hdr["result"]["objects"] == []
    hdr, _ = call(multi.endpoint, "getconfig")
    assert hdr["result"]["memory_used"] == 0


def test_concurrent_requests(multi):
    """Requests handled at once on several handler threads keep their messages apart."""
    import threading
    errors = []

    def work(k):
        try:
            for i in range(5):
                n = 1000 + 37 * k + i
                _, got = create_and_get(multi.endpoint, {"dtype": "int64", "fill": "arange",
                                                         "stop": n})
                np.testing.assert_array_equal(got, np.arange(n))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_conflicting_concurrent_requests(multi):
    """Clients working on one name at once (one creating and deleting it, others reading,
    grouping and writing it): every rank sees each request in the same state of the name, so
    every request is answered, each with a whole array or a clean error (the name is not
    there, or is there already). Before requests
    on every rank ran one at a time, a rank could find a name another had deleted, take other
    collective steps and wait forever."""
    stop = time.time() + 4
    problems, seen = [], {}

    def one(cmd, args):
        hdr, frames = request(multi.endpoint, {"v": 1, "id": 1, "cmd": cmd, "args": args},
                              timeout_ms=20000)
        code = "ok" if hdr["ok"] else hdr["error"]["code"]
        seen[(cmd, code)] = seen.get((cmd, code), 0) + 1
        if code not in ("ok", "not_found", "already_exists"):
            problems.append((cmd, hdr))
        elif cmd == "get" and hdr["ok"]:
            got = np.frombuffer(b"".join(frames), np.int64)
            if not np.array_equal(got, np.arange(got.size)) or got.size not in (1000, 50000):
                problems.append((cmd, got.size))

    def churn():
        try:
            while time.time() < stop:
                one("create", {"dtype": "int64", "fill": "arange", "stop": 50000, "name": "x"})
                one("delete", {"names": ["x"]})
        except Exception as e:  # noqa: BLE001 - reported below
            problems.append(e)

    def user(k):
        ops = [("get", {"name": "x"}), ("groupby", {"keys": ["x"]}),
               ("tohdf", {"names": ["x"], "path": f"conflict{k}.h5"}),
               ("create", {"dtype": "int64", "fill": "arange", "stop": 1000, "name": "x"})]
        try:
            i = 0
            while time.time() < stop:
                one(*ops[i % len(ops)])
                i += 1
        except Exception as e:  # noqa: BLE001 - reported below
            problems.append(e)

    threads = [threading.Thread(target=churn)] + \
        [threading.Thread(target=user, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems, (problems[:5], seen)
    # the name was there and gone again and again while the others worked on it
    assert seen.get(("get", "ok")) and seen.get(("delete", "ok")) and \
        seen.get(("create", "already_exists")), seen
    assert multi.proc.poll() is None
    call(multi.endpoint, "delete", {"names": ["x"]})
    for k in range(4):
        (multi.tmp / "data" / f"conflict{k}.h5").unlink(missing_ok=True)


def test_readers_together_writers_alone():
    """At several ranks a request that changes something runs alone and requests that only
    read run together: with every storage read delayed, a `get` sent while a `readhdf` (a
    writer) runs is answered only after it, and `get`s sent while the HTTP gateway reads a
    file (a reader) are each answered in milliseconds, never held for a delayed read."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    import socket
    import urllib.parse
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    delay = 1.0
    d = Daemon(ranks=2, locales=THREADS, env={"H5ARK_FAULTS": "1"},
                  extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    try:
        ep = d.endpoint
        big = np.arange(10_001, dtype=np.float64)
        with h5py.File(d.tmp / "data" / "r.h5", "w") as f:
            f["big"] = big
        call_ok(ep, "create", {"dtype": "int64", "fill": "arange", "stop": 10, "name": "x"})
        call_ok(ep, "fault", {"nth": 0, "delay_ms": int(delay * 1000)})
        done = {}

        def timed(key, fn):
            fn()
            done[key] = time.monotonic()

        writer = threading.Thread(target=timed, args=("readhdf", lambda: call_ok(
            ep, "readhdf", {"paths": ["r.h5"], "datasets": ["big"]})))
        writer.start()
        # the get goes once the readhdf is in flight (on a loaded machine, or under a tool,
        # a fixed pause may pass before the readhdf has even arrived)
        wait_for(lambda: any(e["cmd"] == "readhdf" for e in
                             call_ok(ep, "status", {})[0]["requests"]), "readhdf in status", 30)
        time.sleep(0.3)
        timed("get", lambda: call_ok(ep, "get", {"name": "x"}))
        writer.join(120)
        assert done["get"] > done["readhdf"], done  # the reader waited for the writer

        url = f"http://127.0.0.1:{port}/data/?" + urllib.parse.urlencode(
            {"file": "r.h5", "path": "/big", "format": "bin"})
        got = []
        reader = threading.Thread(target=lambda: got.append(urllib.request.urlopen(
            url, timeout=120).read()))
        reader.start()
        slowest = 0.0
        gets = 0
        while reader.is_alive():  # through the gateway's probe and then its read
            t = time.monotonic()
            frames = call_ok(ep, "get", {"name": "x"})[1]
            slowest = max(slowest, time.monotonic() - t)
            gets += 1
            assert np.frombuffer(b"".join(frames), np.int64).tolist() == list(range(10))
            time.sleep(0.05)
        reader.join()
        np.testing.assert_array_equal(np.frombuffer(got[0], np.float64), big)
        assert gets >= 5 and slowest < delay / 2, (gets, slowest)
        call_ok(ep, "fault", {"nth": 0})
    finally:
        d.cleanup()


def strings_payload(words):
    """segments and values buffers of a strings put."""
    data = [w.encode() + b"\0" for w in words]
    offs = np.cumsum([0] + [len(d) for d in data[:-1]]).astype("<i8") if data else \
        np.zeros(0, "<i8")
    return offs.tobytes(), b"".join(data)


def put_strings(endpoint, words, name=None):
    seg, val = strings_payload(words)
    args = {"objtype": "strings", "shape": [len(words)]}
    if name:
        args["name"] = name
    raw = seg + val
    frames = [raw[i:i + 37] for i in range(0, len(raw), 37)] or [b""]  # not on shard lines
    return call(endpoint, "put", args, [{"name": "segments", "nbytes": len(seg)},
                                         {"name": "values", "nbytes": len(val)}],
                frames if raw else ())


def get_strings(endpoint, name, start=None, stop=None):
    args = {"name": name}
    if start is not None:
        args.update(start=start, stop=stop)
    hdr, frames = call(endpoint, "get", args)
    assert hdr["ok"], hdr
    raw = b"".join(bytes(f) for f in frames)
    bufs = {b["name"]: b["nbytes"] for b in hdr["result"]["buffers"]} \
        if "buffers" in hdr["result"] else None
    return hdr, raw, bufs


WORDS = {
    "mixed": ["", "a", "bb", "ccc" * 50, "", "é", "x" * 1000] * 13 + ["last"],
    "one": ["only"],
    "empty strings": [""] * 17,
    "none": [],
    "long tail": ["a"] * 5 + ["z" * 100_000],
    "holding NULs": ["a\0b", "\0", "", "x\0", "\0\0\0é"] * 9,
}


@pytest.mark.parametrize("label", list(WORDS))
def test_strings_put_get_match_one_rank(multi, single, label):
    words = WORDS[label]
    hdr, _ = put_strings(multi.endpoint, words)
    assert hdr["ok"], hdr
    want_hdr, _ = put_strings(single.endpoint, words)
    got_obj, want_obj = hdr["result"]["object"], want_hdr["result"]["object"]
    for k in ("objtype", "dtype", "size", "shape", "nbytes"):
        assert got_obj.get(k) == want_obj.get(k), k
    n = len(words)
    ranges = [(None, None), (0, n), (1, n), (n // 3, 2 * n // 3), (n, n), (n // 2, n // 2 + 1)]
    for start, stop in [r for r in ranges if r[0] is None or r[0] <= r[1] <= n]:
        got = get_strings(multi.endpoint, got_obj["name"], start, stop)
        want = get_strings(single.endpoint, want_obj["name"], start, stop)
        assert got[1] == want[1], (start, stop)
        # the same reply but for the object's name
        assert repr(got[0]["result"]).replace(got_obj["name"], "N") == \
            repr(want[0]["result"]).replace(want_obj["name"], "N")
    # the whole: the words back
    _, raw, _ = get_strings(multi.endpoint, got_obj["name"])
    seg, val = strings_payload(words)
    assert raw == seg + val


def test_strings_malformed_on_another_rank(multi):
    words = ["abc"] * 60
    seg, val = strings_payload(words)
    val = val[:-1] + b"c"  # the last string, another rank's, ends in no NUL
    hdr, _ = call(multi.endpoint, "put", {"objtype": "strings", "shape": [60], "name": "bad"},
                  [{"name": "segments", "nbytes": len(seg)}, {"name": "values",
                                                              "nbytes": len(val)}],
                  [seg + val])
    assert not hdr["ok"] and hdr["error"]["code"] == "bad_request"
    assert "string 59 is malformed" in hdr["error"]["message"]
    hdr, _ = call(multi.endpoint, "info", {"names": ["bad"]})
    assert hdr["error"]["code"] == "not_found"


def object_bytes(endpoint, desc):
    """The reply bytes of a whole object (strings: segments then values)."""
    _, frames = call_ok(endpoint, "get", {"name": desc["name"]})
    return b"".join(bytes(f) for f in frames)


def same_result(got, want, got_ep, want_ep):
    """Two readhdf results alike: files, file errors, objects' descriptions but for their
    names, and every object's bytes."""
    assert got["files"] == want["files"]
    assert got["file_errors"] == want["file_errors"]
    assert sorted(got["objects"]) == sorted(want["objects"])
    for k, g in got["objects"].items():
        w = want["objects"][k]
        assert {**g, "name": ""} == {**w, "name": ""}, k
        assert object_bytes(got_ep, g) == object_bytes(want_ep, w), k


@pytest.fixture
def hdf_files(multi, single):
    """The same files in both daemons' data directories: written by the one-rank daemon
    (pdarrays of several dtypes and Strings, one file and per-locale files), copied over."""
    words = ["", "alpha", "b", "gamma" * 30, "é", ""] * 41 + ["end"]
    call_ok(single.endpoint, "clear")
    names = {}
    for label, args in [("i", {"dtype": "int64", "fill": "arange", "start": -3, "stop": 1234}),
                        ("f", {"dtype": "float64", "fill": "uniform", "seed": 5, "size": 777}),
                        ("b", {"dtype": "bool", "fill": "randint", "low": 0, "high": 2,
                               "seed": 2, "size": 99}),
                        ("u", {"dtype": "uint8", "fill": "randint", "low": 0, "high": 255,
                               "seed": 9, "size": 5})]:
        names[label] = call_ok(single.endpoint, "create", args)[0]["object"]["name"]
    hdr, _ = put_strings(single.endpoint, words)
    assert hdr["ok"], hdr
    names["s"] = hdr["result"]["object"]["name"]
    order = list(names)
    for file_type, path in [("single", "one.h5"), ("distribute", "parts")]:
        call_ok(single.endpoint, "tohdf", {"names": [names[k] for k in order], "datasets": order,
                                           "path": path, "file_type": file_type})
    call_ok(single.endpoint, "tohdf", {"names": [names["i"], names["s"]], "datasets": ["i", "s"],
                                       "path": "more.h5", "file_type": "single"})
    hdr, _ = put_strings(single.endpoint, ["x", ""])  # fewer strings than locales
    tiny = [hdr["result"]["object"]["name"], names["u"]]
    call_ok(single.endpoint, "tohdf", {"names": tiny, "datasets": ["s", "u"], "path": "tiny.h5",
                                       "file_type": "single"})
    seg = call_ok(single.endpoint, "create", {"dtype": "int64", "fill": "arange", "stop": 10,
                                              "step": 2})[0]["object"]["name"]
    sa = call_ok(single.endpoint, "segarray", {"segments": seg, "values": names["i"]})[0]
    call_ok(single.endpoint, "tohdf", {"names": [sa["object"]["name"]], "datasets": ["sa"],
                                       "path": "segarray.h5", "file_type": "single"})
    (single.data_dir / "broken.h5").write_bytes(b"not an HDF5 file at all" * 10)
    dest = multi.tmp / "data"
    dest.mkdir(exist_ok=True)
    for f in single.data_dir.iterdir():
        if f.is_file() and not f.name.startswith("."):
            shutil.copyfile(f, dest / f.name)
    return words


READS = [
    ("single file", {"paths": ["one.h5"]}),
    ("per-locale files", {"paths": ["parts_LOCALE*"]}),
    ("several files", {"paths": ["one.h5", "more.h5", "parts"], "datasets": ["i", "s"]}),
    ("ranged", {"paths": ["one.h5", "more.h5"], "datasets": ["i", "s"], "start": 100,
                "stop": 400}),
    ("ranged strings", {"paths": ["parts"], "datasets": ["s"], "start": 3, "stop": 7}),
    ("offsets from NULs", {"paths": ["one.h5", "more.h5"], "datasets": ["s"],
                           "calc_string_offsets": True}),
    ("tag_data", {"paths": ["one.h5", "parts"], "datasets": ["i", "s"], "tag_data": True}),
    ("tag_data from NULs", {"paths": ["more.h5", "one.h5"], "datasets": ["s"],
                            "tag_data": True, "calc_string_offsets": True}),
    ("allow_errors", {"paths": ["one.h5", "broken.h5", "more.h5"], "datasets": ["i"],
                      "allow_errors": True}),
    ("fewer rows than locales", {"paths": ["tiny.h5"]}),
    ("fewer strings than locales, from NULs", {"paths": ["tiny.h5", "tiny.h5"],
                                               "calc_string_offsets": True, "tag_data": True}),
    ("ranged to nothing", {"paths": ["one.h5"], "datasets": ["s", "i"], "start": 5,
                           "stop": 5}),
]


@pytest.mark.parametrize("label,args", READS, ids=[r[0] for r in READS])
def test_readhdf_matches_one_rank(multi, single, hdf_files, label, args):
    got, _ = call_ok(multi.endpoint, "readhdf", args)
    want, _ = call_ok(single.endpoint, "readhdf", args)
    same_result(got, want, multi.endpoint, single.endpoint)


def plain_strings_files(multi, single):
    """Plain HDF5 string datasets as h5py writes them, in both daemons' data directories."""
    import h5py
    words = ["", "alpha", "b", "gamma" * 30, "é", "x y "] * 23 + ["end"]
    for d in (multi.tmp / "data", single.data_dir):
        d.mkdir(exist_ok=True)
        with h5py.File(d / "plain_a.h5", "w") as f:
            f["v"] = np.array(words, dtype=h5py.string_dtype("utf-8"))
            f.create_dataset("fixed", data=np.array([w.encode() for w in words], dtype="S160"))
        with h5py.File(d / "plain_b.h5", "w") as f:
            f["v"] = np.array(words[:5], dtype=h5py.string_dtype("utf-8"))
            f.create_dataset("fixed", data=np.array([b"q", b""], dtype="S3"))
        with h5py.File(d / "plain_c.h5", "w") as f:
            f["v"] = np.array(["only"], dtype=h5py.string_dtype("utf-8"))
            f["fixed"] = np.array([b"z"], dtype="S1")


PLAIN = [
    ("one file", {"paths": ["plain_a.h5"]}),
    ("several files", {"paths": ["plain_a.h5", "plain_b.h5", "plain_c.h5"]}),
    ("ranged", {"paths": ["plain_a.h5", "plain_b.h5"], "datasets": ["v"], "start": 7,
                "stop": 141}),
    ("tag_data", {"paths": ["plain_c.h5", "plain_b.h5", "plain_a.h5"], "tag_data": True}),
    ("fewer strings than locales", {"paths": ["plain_c.h5", "plain_b.h5"],
                                    "datasets": ["fixed"]}),
]


def test_readhdf_whole_file_leaves_out_alike(multi, single):
    """A whole-file read at several ranks leaves out what one rank does, with the same
    warnings: a GroupBy without `segments` (refused by its metadata, in the probe) and one
    whose key is longer than its permutation (found by its data, as every rank builds it)."""
    import h5py
    for d in (multi.tmp / "data", single.data_dir):
        d.mkdir(exist_ok=True)
        with h5py.File(d / "leave_out.h5", "w") as f:
            f["ok"] = np.arange(50, dtype="<i8")
            for name, key in (("nosegs", 3), ("long", 4)):
                g = f.create_group(name)
                g.attrs["ObjType"] = np.int64(5)
                g.attrs["NumKeys"] = np.int64(1)
                g["permutation"] = np.array([1, 0, 2], "<i8")
                g["segments"] = np.array([0, 2], "<i8")
                g["unique_key_idx"] = np.array([1, 2], "<i8")
                g["KEY_0"] = np.arange(key, dtype="<i8")
            del f["nosegs/segments"]
    replies = []
    for ep in (multi.endpoint, single.endpoint):
        hdr, _ = call(ep, "readhdf", {"paths": ["leave_out.h5"]})
        assert hdr["ok"], hdr
        replies.append(hdr)
    got, want = replies
    assert got["warnings"] == want["warnings"], (got["warnings"], want["warnings"])
    assert [w for w in got["warnings"] if "'nosegs'" in w and "no 'segments'" in w], got
    assert [w for w in got["warnings"] if "'long'" in w and "4 rows" in w], got
    same_result(got["result"], want["result"], multi.endpoint, single.endpoint)
    assert list(got["result"]["objects"]) == ["ok"]


@pytest.mark.parametrize("label,args", PLAIN, ids=[r[0] for r in PLAIN])
def test_readhdf_plain_strings_match_one_rank(multi, single, label, args):
    plain_strings_files(multi, single)
    got, _ = call_ok(multi.endpoint, "readhdf", args)
    want, _ = call_ok(single.endpoint, "readhdf", args)
    same_result(got, want, multi.endpoint, single.endpoint)
    assert got["objects"]


EXETERA_READS = [
    {"paths": ["session.h5"], "datasets": ["df"]},
    {"paths": ["session.h5", "session2.h5"], "datasets": ["df"]},
    {"paths": ["session.h5"], "datasets": ["people"]},  # fields of several lengths: refused
    {"paths": ["session.h5"], "datasets": ["people/name", "people/status", "people/code",
                                           "people/ts"]},
    {"paths": ["session.h5", "session2.h5"], "datasets": ["people/status16"], "start": 1,
     "stop": 9},
]


@pytest.mark.parametrize("args", EXETERA_READS)
def test_readhdf_exetera_matches_one_rank(multi, single, args):
    """ExeTera dataframes and fields of every type (indexed and fixed strings, numbers,
    timestamps, categoricals), warnings included."""
    from test_exetera import make_session
    for d in (multi.tmp / "data", single.data_dir):
        d.mkdir(exist_ok=True)
        make_session(d / "session.h5")
        make_session(d / "session2.h5", shift=3)
    got, _ = call(multi.endpoint, "readhdf", args)
    want, _ = call(single.endpoint, "readhdf", args)
    if args["datasets"] == ["people"]:
        assert not want["ok"] and got["error"] == want["error"], (got, want)
        return
    assert got["ok"] and want["ok"], (got, want)
    assert normalized(multi.endpoint, got["result"]) == \
        normalized(single.endpoint, want["result"])
    assert got["result"]["objects"]


def test_readhdf_strings_values(multi, hdf_files):
    res, _ = call_ok(multi.endpoint, "readhdf", {"paths": ["one.h5"], "datasets": ["s"]})
    raw = object_bytes(multi.endpoint, res["objects"]["s"])
    seg, val = strings_payload(hdf_files)
    assert raw == seg + val


@pytest.mark.parametrize("args", [
    {"paths": ["missing.h5"]},
    {"paths": ["broken.h5"]},
    {"paths": ["one.h5"], "datasets": ["nope"]},
    {"paths": ["one.h5"], "datasets": ["s"], "start": 5, "stop": 100000},
])
def test_readhdf_errors_match_one_rank(multi, single, hdf_files, args):
    before = len(call_ok(multi.endpoint, "info")[0]["objects"])
    got, _ = call(multi.endpoint, "readhdf", args)
    want, _ = call(single.endpoint, "readhdf", args)
    assert not got["ok"] and got["error"] == want["error"]
    assert len(call_ok(multi.endpoint, "info")[0]["objects"]) == before  # nothing published


def stored_chunks(dset):
    """A chunked dataset's layout and filters, and every chunk's stored bytes."""
    if dset.chunks is None:
        return None
    out = [dset.chunks, dset.compression, dset.compression_opts, dset.shuffle]
    for i in range(dset.id.get_num_chunks()):
        info = dset.id.get_chunk_info(i)
        out.append((info.chunk_offset, dset.id.read_direct_chunk(info.chunk_offset)))
    return out


def h5_tree(path):
    """Every group and dataset of an HDF5 file: kind, attributes, dtype, shape and data,
    and a chunked dataset's filters and stored chunks."""
    import h5py
    out = {}

    def attrs(obj):
        return {k: np.asarray(v).tolist() for k, v in obj.attrs.items()}

    with h5py.File(path, "r") as f:
        out["/"] = ("group", attrs(f))

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                data = obj[()]
                # variable-length strings: their values, not the pointers h5py gives
                data = data.tolist() if data.dtype == object else data.tobytes()
                out[name] = ("dataset", attrs(obj), str(obj.dtype), obj.shape, data,
                             stored_chunks(obj))
            else:
                out[name] = ("group", attrs(obj))
        f.visititems(visit)
    return out


def data_files(d):
    return sorted(f.name for f in d.iterdir() if not f.name.startswith("."))


def make_objects(endpoint, words):
    """The same objects on any daemon: their names by label."""
    names = {}
    for label, args in [("i", {"dtype": "int64", "fill": "arange", "start": 7, "stop": 1000}),
                        ("f", {"dtype": "float32", "fill": "uniform", "seed": 1, "size": 333}),
                        ("b", {"dtype": "bool", "fill": "randint", "low": 0, "high": 2,
                               "seed": 4, "size": 21}),
                        ("e", {"dtype": "uint16", "fill": "zeros", "size": 0}),
                        # several chunks of 1 MiB, some across a rank boundary
                        ("L", {"dtype": "int64", "fill": "randint", "low": 0, "high": 1000,
                               "seed": 5, "size": 300001}),
                        ("u", {"dtype": "float64", "fill": "uniform", "seed": 2,
                               "size": 200003})]:
        names[label] = call_ok(endpoint, "create", args)[0]["object"]["name"]
    hdr, _ = put_strings(endpoint, words)
    assert hdr["ok"], hdr
    names["s"] = hdr["result"]["object"]["name"]
    hdr, _ = put_strings(endpoint, words[:3])
    names["t"] = hdr["result"]["object"]["name"]
    return names


TOHDF = [
    ("single", [{"file_type": "single", "keys": "ifbest"}]),
    ("distribute", [{"file_type": "distribute", "keys": "ifbest"}]),
    ("append single", [{"file_type": "single", "keys": "if"},
                       {"file_type": "single", "keys": "st", "mode": "append"}]),
    ("update distribute", [{"file_type": "distribute", "keys": "ifs"},
                           {"file_type": "distribute", "keys": "s", "mode": "update"}]),
    ("update single", [{"file_type": "single", "keys": "ifst"},
                       {"file_type": "single", "keys": "ti", "mode": "update"}]),
    ("append distribute", [{"file_type": "distribute", "keys": "e"},
                           {"file_type": "distribute", "keys": "bs", "mode": "append"}]),
    ("truncate over", [{"file_type": "single", "keys": "ifbest"},
                       {"file_type": "single", "keys": "t"}]),
    ("gzip single", [{"file_type": "single", "keys": "ifbestLu", "compression": "gzip"}]),
    ("gzip distribute", [{"file_type": "distribute", "keys": "ifbestLu",
                          "compression": "gzip", "compression_level": 1}]),
    ("gzip append single", [{"file_type": "single", "keys": "iL"},
                            {"file_type": "single", "keys": "su", "mode": "append",
                             "compression": "gzip", "compression_level": 9}]),
]


@pytest.mark.parametrize("label,steps", TOHDF, ids=[t[0] for t in TOHDF])
def test_tohdf_matches_one_rank(multi, single, label, steps):
    words = ["w%d" % (i * i) for i in range(150)] + ["", "ü" * 40]
    call_ok(multi.endpoint, "clear")
    call_ok(single.endpoint, "clear")
    dirs = {}
    for name, d in [("multi", multi), ("single", single)]:
        objs = make_objects(d.endpoint, words)
        ddir = d.tmp / "data" if name == "multi" else d.data_dir
        out = ddir / label.replace(" ", "_")
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for step in steps:
            keys = step["keys"]
            args = {"names": [objs[k] for k in keys], "datasets": list(keys),
                    "path": f"{out.name}/x.h5", "file_type": step["file_type"],
                    "mode": step.get("mode", "truncate")}
            for k in ("compression", "compression_level"):
                if k in step:
                    args[k] = step[k]
            res, _ = call_ok(d.endpoint, "tohdf", args)
            dirs.setdefault(name, []).append(res)
        dirs[name + "_dir"] = out
    assert dirs["multi"] == dirs["single"]  # files written and warnings alike
    got, want = dirs["multi_dir"], dirs["single_dir"]
    assert data_files(got) == data_files(want)
    assert [f for f in os.listdir(got) if f.startswith(".")] == []  # no temporaries left
    chunks = 0
    for f in data_files(got):
        tree = h5_tree(got / f)
        assert tree == h5_tree(want / f), f
        chunks += sum(len(v[5]) - 4 for v in tree.values() if v[0] == "dataset" and v[5])
    if any("compression" in step for step in steps):
        assert chunks >= 4  # the chunks compared were there
    # and read back alike at R > 1
    res, _ = call_ok(multi.endpoint, "readhdf", {"paths": [f"{got.name}/x*"]})
    want_res, _ = call_ok(single.endpoint, "readhdf", {"paths": [f"{want.name}/x*"]})
    same_result(res, want_res, multi.endpoint, single.endpoint)


@pytest.mark.parametrize("file_type", ["single", "distribute"])
@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
def test_tohdf_strings_without_segments_matches_one_rank(multi, single, file_type, gzip):
    """strings_segments false (Arkouda's save_offsets False): each file holds the strings'
    bytes alone, every rank's bytes where one daemon puts them."""
    import h5py
    words = ["w%d" % (i * 7) for i in range(300)] + ["", "ü" * 40, "x" * 70_000, ""]
    trees = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        hdr, _ = put_strings(d.endpoint, words, "s")
        assert hdr["ok"], hdr
        hdr, _ = put_strings(d.endpoint, ["kept", "segments"], "t")
        assert hdr["ok"], hdr
        ddir = d.tmp / "data" if name == "multi" else d.data_dir
        out = ddir / f"noseg_{file_type}_{gzip}"
        shutil.rmtree(out, ignore_errors=True)
        args = {"names": ["s", "t"], "path": f"{out.name}/x.h5", "file_type": file_type,
                "strings_segments": False}
        if gzip:
            args["compression"] = "gzip"
        res, _ = call_ok(d.endpoint, "tohdf", args)
        trees[name] = (res, data_files(out), {f: h5_tree(out / f) for f in data_files(out)})
        got = b""
        for f in data_files(out):
            with h5py.File(out / f, "r") as h:
                assert set(h["s"]) == {"values"}, f
                got += h["s/values"][()].tobytes()
        assert got == b"".join(w.encode() + b"\0" for w in words)
        # read back at this R: the strings found by their NULs
        res, _ = call_ok(d.endpoint, "readhdf", {"paths": [f"{out.name}/x*"], "datasets": ["s"]})
        (desc,) = res["objects"].values()
        _, raw, _ = get_strings(d.endpoint, desc["name"])
        assert raw == b"".join(strings_payload(words))
    assert trees["multi"] == trees["single"]
    hdr, _ = call(multi.endpoint, "tohdf", {"names": ["s"], "path": "bad.h5",
                                            "strings_segments": "no"})
    assert not hdr["ok"] and hdr["error"]["code"] == "bad_request", hdr


def test_repack_matches_one_rank(multi, single):
    """repack touches no object: rank 0 rewrites the files, as one daemon does."""
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        ddir = d.tmp / "data" if name == "multi" else d.data_dir
        (ddir / "rp").mkdir(parents=True, exist_ok=True)
        objs = make_objects(d.endpoint, ["ab", "c"] * 40)
        call_ok(d.endpoint, "tohdf", {"names": [objs["i"], objs["s"]], "datasets": ["i", "s"],
                                      "path": "rp/x.h5", "file_type": "single"})
        call_ok(d.endpoint, "tohdf", {"names": [objs["t"]], "datasets": ["s"], "path": "rp/x.h5",
                                      "file_type": "single", "mode": "update"})
        res, _ = call_ok(d.endpoint, "repack", {"path": "rp/x.h5"})
        out[name] = ([os.path.basename(f) for f in res["files"]], h5_tree(ddir / "rp" / "x.h5"))
    assert out["multi"] == out["single"]
    hdr, _ = call(multi.endpoint, "repack", {"path": "rp/missing.h5"})
    assert not hdr["ok"] and hdr["error"]["code"] == "not_found", hdr


def test_tohdf_exetera_matches_one_rank(multi, single):
    """tohdf in ExeTera's format: the objects gathered to rank 0, which writes the file as
    one rank does (numbers, strings indexed and fixed, a categorical, a dataframe, then
    appending and updating fields); its errors are one rank's."""
    words = ["w%d" % (i * 3) for i in range(300)] + ["", "é" * 9]
    out = []
    for d in (multi, single):
        names = make_objects(d.endpoint, words)
        codes = np.random.default_rng(9).integers(0, 3, len(words))
        call_ok(d.endpoint, "put", {"dtype": "int64", "shape": [len(codes)], "name": "xc"},
                [{"name": "values", "nbytes": codes.nbytes}], [codes.tobytes()])
        put_strings(d.endpoint, ["lo", "mid", "hi"], "xk")
        call_ok(d.endpoint, "categorical", {"codes": "xc", "categories": "xk", "name": "xcat"})
        put_strings(d.endpoint, words, "xs")
        call_ok(d.endpoint, "dataframe", {"columns": ["xs", "xcat", "xc"], "name": "xdf"})
        steps = [
            {"names": [names["L"], names["u"], names["s"], names["t"], "xcat"],
             "datasets": ["L", "u", "s", "t", "c"],
             "fieldtypes": ["", "", "", "fixedstring,4", ""]},
            {"names": [names["i"]], "datasets": ["i"], "mode": "append"},
            {"names": [names["f"]], "datasets": ["L"], "mode": "update"},
            {"names": ["xdf"], "group": "frame", "mode": "append"},
        ]
        replies = [call_ok(d.endpoint, "tohdf", {"path": "ex.h5", "format": "exetera", **st})[0]
                   for st in steps]
        # the wrong fieldtype for a pdarray: the file is left as it was
        err = call(d.endpoint, "tohdf", {"names": [names["i"]], "datasets": ["z"],
                                         "path": "ex.h5", "format": "exetera",
                                         "mode": "append",
                                         "fieldtype": "indexedstring"})[0]["error"]
        err["message"] = err["message"].replace(names["i"], "I")
        out.append((replies, err, h5_tree(d.tmp / "data" / "ex.h5")))
        for n in ("xdf", "xcat", "xc", "xk", "xs"):
            call_ok(d.endpoint, "delete", {"names": [n]})
    assert out[0][0] == out[1][0]
    assert out[0][1] == out[1][1] and out[0][1]["code"] == "type_error"
    assert out[0][2] == out[1][2]
    assert "df/L/values" in out[0][2] and "frame/xcat/values" in out[0][2], list(out[0][2])


def test_exetera_parts_match_one_rank(multi, single):
    """writepart gathers the part to rank 0, which writes it; complete is rank 0's alone:
    the files are those one rank writes, part by part (numbers over every rank, strings,
    a categorical), and the errors are its errors."""
    words = ["w%d" % (i * 7) for i in range(400)] + ["", "ü" * 30]
    out = []
    for d in (multi, single):
        names = make_objects(d.endpoint, words)
        codes = np.random.default_rng(5).integers(0, 3, 500)
        call_ok(d.endpoint, "put", {"dtype": "int64", "shape": [len(codes)], "name": "pc"},
                [{"name": "values", "nbytes": codes.nbytes}], [codes.tobytes()])
        put_strings(d.endpoint, ["lo", "mid", "hi"], "pk")
        call_ok(d.endpoint, "categorical", {"codes": "pc", "categories": "pk", "name": "pcat"})
        replies = []
        for field, name in [("df/n", names["L"]), ("df/n", names["i"]),
                            ("df/s", names["s"]), ("df/s", names["t"]), ("df/c", "pcat"),
                            ("df/c", "pcat"), ("df/f", names["u"])]:
            replies.append(call_ok(d.endpoint, "writepart", {"path": "parts.h5", "field": field,
                                                             "name": name})[0])
        for field in ("df/n", "df/s", "df/c"):
            replies.append(call_ok(d.endpoint, "complete", {"path": "parts.h5",
                                                            "field": field})[0])
        # a part of another type, and a field that is not there: the same errors
        errs = [call(d.endpoint, "writepart", {"path": "parts.h5", "field": "df/n",
                                               "name": names["s"]})[0]["error"],
                call(d.endpoint, "complete", {"path": "parts.h5",
                                              "field": "df/none"})[0]["error"]]
        for e in errs:
            e["message"] = e["message"].replace(names["s"], "S")
        out.append((replies, errs, h5_tree(d.tmp / "data" / "parts.h5")))
        for n in ("pc", "pk", "pcat"):
            call_ok(d.endpoint, "delete", {"names": [n]})
    assert out[0][0] == out[1][0]
    assert out[0][1] == out[1][1]
    assert out[0][2] == out[1][2]
    assert out[0][0][0]["rows"] == 300001 and out[0][1][0]["code"] == "type_error"


@pytest.fixture(scope="module")
def faulty():
    """Three ranks with fault injection on (docs/FAULTS.md)."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=3, locales=THREADS, env={"H5ARK_FAULTS": "1"})
    d.ranks = 3
    yield d
    d.cleanup()


def snapshot(d):
    """Every file in d (a directory such as the journals' is no file of a set)."""
    return {f.name: f.read_bytes() for f in d.iterdir() if f.is_file()}


def test_fault_rank_checked(faulty):
    hdr, _ = call(faulty.endpoint, "fault", {"nth": 1, "rank": 3})
    assert hdr["error"]["code"] == "bad_request" and "rank must be 0 to 2" in \
        hdr["error"]["message"]


@pytest.mark.parametrize("file_type", ["single", "distribute"])
@pytest.mark.parametrize("rank", [0, 1, 2])
def test_tohdf_failing_on_one_rank_replaces_nothing(faulty, file_type, rank):
    ep = faulty.endpoint
    data = faulty.tmp / "data"
    call_ok(ep, "clear")
    objs = make_objects(ep, ["abc", "de", "f"] * 50)
    out = data / f"fail_{file_type}_{rank}"
    out.mkdir(parents=True, exist_ok=True)
    args = {"names": [objs["i"], objs["s"]], "datasets": ["i", "s"],
            "path": f"{out.name}/x.h5", "file_type": file_type}
    call_ok(ep, "tohdf", args)  # the old files
    before = snapshot(out)
    new = {**args, "names": [objs["f"], objs["t"]]}
    # the rank's first I/O call in the write: on rank 0 it lays out the files, on the
    # others it opens a temporary to write its shards
    for nth in (1, 2, 5):
        call_ok(ep, "fault", {"class": "io", "nth": nth, "error": "ENOSPC", "rank": rank})
        hdr, _ = call(ep, "tohdf", new)
        fired = call_ok(ep, "fault", {"nth": 0})[0]
        if hdr["ok"]:  # the fault came after the last call of this write on that rank
            assert rank == 0 or fired["fired"] is None
            return
        assert hdr["error"]["code"] in ("io_error", "resource_limit"), hdr
        if rank:
            assert f"rank {rank}" in hdr["error"]["message"], hdr
        assert snapshot(out) == before  # every file old, no temporary left
    res, _ = call_ok(ep, "tohdf", new)  # and the daemon goes on
    assert snapshot(out) != before


@pytest.mark.parametrize("cls", ["io", "alloc"])
@pytest.mark.parametrize("rank", [0, 1, 2])
def test_tohdf_gzip_failing_on_one_rank_replaces_nothing(cls, rank):
    """A compressed write whose chunks cross ranks: an I/O error or a failed allocation on
    any one rank, at any of its first calls, gives an error naming it (or the write
    succeeds when the fault falls after its last call); never a hang or a partial file.
    An allocation failing inside a transfer between ranks ends the job, with that error
    (test_rank_that_gives_up_a_transfer_stops_the_job): the files are then old too."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = None
    failed = 0
    try:
        for nth in range(1, 41):
            if d is None:
                d = Daemon(ranks=3, locales=THREADS, env={"H5ARK_FAULTS": "1"})
                ep = d.endpoint
                objs = make_objects(ep, ["abc", "de", "f"] * 50)
                out = d.tmp / "data" / "gz"
                out.mkdir(parents=True, exist_ok=True)
                args = {"names": [objs["i"], objs["s"]], "datasets": ["i", "s"],
                        "path": "gz/x.h5", "compression": "gzip"}
                new = {**args, "names": [objs["L"], objs["t"]]}
                call_ok(ep, "tohdf", args)
                before = snapshot(out)
            # (the fault command's own reply may be what the fault hits)
            hdr, _ = call(ep, "fault", {"class": cls, "nth": nth, "rank": rank,
                                        "error": "ENOMEM" if cls == "alloc" else "ENOSPC"})
            if hdr["ok"]:
                hdr, _ = call(ep, "tohdf", new)
            if hdr["ok"]:
                call_ok(ep, "fault", {"nth": 0})
                call_ok(ep, "tohdf", args)  # the old files again
                before = snapshot(out)
                continue
            failed += 1
            assert hdr["error"]["code"] in ("io_error", "resource_limit"), hdr
            if rank:
                assert f"rank {rank}" in hdr["error"]["message"], (nth, hdr)
            if "the job cannot go on" in hdr["error"]["message"]:
                assert d.proc.wait(30) != 0
                after = snapshot(out)
                assert {k: v for k, v in after.items() if not k.startswith(".")} == before
                d.cleanup()
                d = None
                continue
            call_ok(ep, "fault", {"nth": 0})
            assert snapshot(out) == before  # every file old, no temporary left
        # ranks > 0 do no I/O in a compressed write: rank 0 writes every chunk
        assert failed > 0 or (cls == "io" and rank > 0)
        if d is not None:
            call_ok(ep, "tohdf", new)  # and the daemon goes on
            assert snapshot(out) != before
    finally:
        if d is not None:
            d.cleanup()


@pytest.fixture(scope="module")
def faulty_pair():
    """Two ranks with fault injection on."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=2, locales=THREADS, env={"H5ARK_FAULTS": "1"})
    yield d
    d.cleanup()


def read_rows(ep, path, dataset):
    hdr, _ = call(ep, "readhdf", {"paths": [path], "datasets": [dataset]})
    assert hdr["ok"], hdr
    name = hdr["result"]["objects"][dataset]["name"]
    hdr, frames = call(ep, "get", {"name": name})
    call_ok(ep, "delete", {"names": [name]})
    return list(np.frombuffer(b"".join(bytes(f) for f in frames), "<i8"))


@pytest.mark.parametrize("mode", ["truncate", "append", "update"])
def test_tohdf_set_fault_at_every_call_leaves_it_whole(faulty_pair, mode):
    """A distributed tohdf (2 ranks of 2 locales: 4 files) with an I/O error at each call of
    rank 0 (its layout, the flushes, the journal, the renames) and at each call of rank 1
    (its shards): a failed write leaves every file of the set byte for byte as it was, and
    readhdf reads the old rows; a write that succeeds (the fault after the commit point, or
    after the rank's last call) leaves every file new. Never a journal left behind."""
    ep, data = faulty_pair.endpoint, faulty_pair.tmp / "data"
    out = data / f"whole_{mode}"
    out.mkdir(parents=True, exist_ok=True)
    path = f"{out.name}/s.h5"
    old_rows, new_rows = list(range(7, 1000)), list(range(10**9, 10**9 + 993))
    a = call_ok(ep, "create", {"dtype": "int64", "fill": "arange", "start": 7, "stop": 1000})[0]
    b = call_ok(ep, "create", {"dtype": "int64", "fill": "arange", "start": 10**9,
                               "stop": 10**9 + 993})[0]
    call_ok(ep, "tohdf", {"names": [a["object"]["name"]], "datasets": ["x"], "path": path})
    before = snapshot(out)
    assert len(before) == 4, before
    dset = "y" if mode == "append" else "x"
    args = {"names": [b["object"]["name"]], "datasets": [dset], "path": path, "mode": mode}
    call_ok(ep, "fault", {"nth": 0})
    call_ok(ep, "tohdf", args)
    count = call_ok(ep, "fault", {"nth": 0})[0]["io"]
    outcomes = {"old": 0, "new": 0}
    for rank in (0, 1):
        for nth in range(1, count + 1 if rank == 0 else 200):
            for f in out.iterdir():
                f.unlink()
            for name, content in before.items():
                (out / name).write_bytes(content)
            call_ok(ep, "fault", {"class": "io", "nth": nth, "error": "EIO", "rank": rank})
            hdr, _ = call(ep, "tohdf", args)
            fired = call_ok(ep, "fault", {"nth": 0})[0]["fired"]
            what = (mode, rank, nth, fired, hdr)
            journals = data / ".h5ark-journal"
            assert not journals.exists() or not list(journals.iterdir()), what
            if hdr["ok"]:
                outcomes["new"] += 1
                assert snapshot(out).keys() == before.keys(), what
                assert read_rows(ep, path, dset) == new_rows, what
                if rank == 1 and fired is None:
                    break  # past rank 1's last call
                continue
            outcomes["old"] += 1
            assert hdr["error"]["code"] == "io_error", what
            assert snapshot(out) == before, what  # every file old, no temporary left
            assert read_rows(ep, path, "x") == old_rows, what
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes


def test_set_killed_between_renames_is_completed_at_start(tmp_path):
    """Two ranks killed (the whole job, SIGKILL) while rank 0 is between two renames of a
    distributed tohdf (held there by the fault table's pause): the set is mixed on disk
    until a new job starts on the data directory; its rank 0 completes the set before it
    serves, and readhdf reads the new rows."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    data = tmp_path / "data"
    d = Daemon(ranks=2, locales=THREADS, env={"H5ARK_FAULTS": "1"}, data_dir=data)
    try:
        ep = d.endpoint
        a = call_ok(ep, "create", {"dtype": "int64", "fill": "arange", "start": 7, "stop": 1000})[0]
        b = call_ok(ep, "create", {"dtype": "int64", "fill": "arange", "start": 10**9,
                                   "stop": 10**9 + 993})[0]
        call_ok(ep, "tohdf", {"names": [a["object"]["name"]], "datasets": ["x"], "path": "k.h5"})
        before = snapshot(data)
        args = {"names": [b["object"]["name"]], "datasets": ["x"], "path": "k.h5"}
        call_ok(ep, "fault", {"nth": 0})
        call_ok(ep, "tohdf", args)
        calls = call_ok(ep, "fault", {"nth": 0})[0]["io_calls"]
        for name, content in before.items():
            (data / name).write_bytes(content)
        renames = [k + 1 for k, c in enumerate(calls) if c == "rename"]
        assert len(renames) == 4, calls
        call_ok(ep, "fault", {"nth": renames[2], "pause_ms": 60000})
        def held_tohdf():
            try:
                call(ep, "tohdf", args)
            except TimeoutError:
                pass  # the job is killed while this waits: no reply is the point

        t = threading.Thread(target=held_tohdf, daemon=True)
        t.start()
        end = time.time() + 30
        while (data / "k_LOCALE0001.h5").read_bytes() == before["k_LOCALE0001.h5"]:
            assert time.time() < end, "the second rename did not come"
            time.sleep(0.005)
        d.kill()
    finally:
        d.cleanup()
    mixed = snapshot(data)
    assert mixed["k_LOCALE0000.h5"] != before["k_LOCALE0000.h5"]
    assert mixed["k_LOCALE0003.h5"] == before["k_LOCALE0003.h5"]
    d = Daemon(ranks=2, locales=THREADS, data_dir=data)
    try:
        # rank 0's line, forwarded by mpirun, may reach the log after the first reply
        d.wait_log("completed the write of a file set")
        assert not list((data / ".h5ark-journal").iterdir())
        assert not [p for p in data.iterdir() if ".h5ark-tmp." in p.name]
        assert read_rows(d.endpoint, "k.h5", "x") == list(range(10**9, 10**9 + 993))
    finally:
        d.cleanup()


def test_tohdf_rank_killed_leaves_old_or_new():
    """A rank killed while a write is under way: every file old or new (here old: the
    rank dies before it writes)."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=2, locales=THREADS)
    try:
        ep = d.endpoint
        n = 1 << 20
        name = call_ok(ep, "create", {"dtype": "int64", "fill": "arange", "stop": n})[0]["object"]["name"]
        small = call_ok(ep, "create", {"dtype": "int64", "fill": "zeros", "size": 10})[0]["object"]["name"]
        for ft in ("single", "distribute"):
            call_ok(ep, "tohdf", {"names": [small], "datasets": ["v"], "path": f"k_{ft}",
                                  "file_type": ft})
        old = snapshot(d.tmp / "data")
        import threading
        results = []
        t = threading.Thread(target=lambda: results.append(call(ep, "tohdf", {
            "names": [name], "datasets": ["v"], "path": "k_distribute",
            "file_type": "distribute"})[0]))
        # rank 1 stopped before the request reaches it: rank 0 lays the files out and waits
        # for it; then it dies
        pid = d.rank_pids()[1]
        os.kill(pid, signal.SIGSTOP)
        t.start()
        time.sleep(1)
        os.kill(pid, signal.SIGKILL)
        t.join(30)
        d.proc.wait(60)
        files = {f.name: f.read_bytes() for f in (d.tmp / "data").iterdir()
                 if not f.name.startswith(".")}
        assert not results or not results[0]["ok"], "the write ended before the kill"
        assert files == {f: c for f, c in old.items() if not f.startswith(".")}
    finally:
        d.cleanup()


def test_rank_that_gives_up_a_transfer_stops_the_job():
    """A rank that cannot start its part of a transfer (an allocation fails inside the
    transfer, after the ranks agreed to go on) would leave the others waiting for bytes
    that never come: it tells rank 0, which answers with an error naming it and ends the
    job, rather than hanging. Here: rank 1 sends rank 0 its compressed chunks of a tohdf,
    more of them than a transfer describes without allocating."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=2, locales=THREADS, env={"H5ARK_FAULTS": "1"})
    try:
        ep = d.endpoint
        name = call_ok(ep, "create", {"dtype": "int64", "fill": "zeros",
                                      "size": 5_000_000})[0]["object"]["name"]
        args = {"names": [name], "path": "z.h5", "compression": "gzip"}
        ended = None
        for nth in range(1, 200):
            hdr, _ = call(ep, "fault", {"class": "alloc", "nth": nth, "error": "ENOMEM",
                                        "rank": 1})
            assert hdr["ok"], hdr
            t = time.time()
            hdr, _ = call(ep, "tohdf", args)
            assert time.time() - t < 10
            if hdr["ok"]:  # past rank 1's last allocation
                break
            assert hdr["error"]["code"] in ("io_error", "resource_limit"), hdr
            assert "rank 1" in hdr["error"]["message"], hdr
            if "the job cannot go on" in hdr["error"]["message"]:
                ended = hdr["error"]["message"]
                break
        assert ended, "no allocation inside a transfer was failed"
        assert "rank 1 (host " in ended and "MPI could not start a transfer" in ended, ended
        assert d.proc.wait(30) != 0
        assert "the job cannot go on, stopping" in d.read_log()
        assert not (d.tmp / "data" / "z.h5").exists()
    finally:
        d.cleanup()


def test_wait_deadline_ends_the_job():
    """H5ARK_RANK_WAIT: a rank that has waited that long for another (alive, heartbeats
    flowing, but not sending what the wait expects) ends the job with an error naming the
    wait. Here rank 0 lays a tohdf's file out with every write delayed while rank 1 waits
    to hear how the layout went."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=2, locales=THREADS, env={"H5ARK_FAULTS": "1", "H5ARK_RANK_WAIT": "1"})
    try:
        ep = d.endpoint
        name = call_ok(ep, "create", {"dtype": "int64", "fill": "arange",
                                      "stop": 1000})[0]["object"]["name"]
        call_ok(ep, "tohdf", {"names": [name], "path": "w.h5", "file_type": "single"})  # quick
        call_ok(ep, "fault", {"nth": 0, "delay_ms": 1500})
        t = time.time()
        hdr, _ = call(ep, "tohdf", {"names": [name], "path": "w2.h5", "file_type": "single"})
        assert not hdr["ok"] and hdr["error"]["code"] == "io_error", hdr
        msg = hdr["error"]["message"]
        assert "rank 1" in msg and "(H5ARK_RANK_WAIT) for another rank" in msg, msg
        assert time.time() - t < 30
        assert d.proc.wait(30) != 0
        assert not (d.tmp / "data" / "w2.h5").exists()
    finally:
        d.cleanup()


def test_concurrent_strings_and_files(multi):
    """put/get of strings, tohdf and readhdf handled at once on several handler threads."""
    import threading
    errors = []
    (multi.tmp / "data").mkdir(exist_ok=True)

    def work(k):
        try:
            for i in range(3):
                words = [f"t{k}-{i}-{j}" * (j % 5) for j in range(50 + 13 * k + i)]
                hdr, _ = put_strings(multi.endpoint, words)
                assert hdr["ok"], hdr
                name = hdr["result"]["object"]["name"]
                ft = "single" if (k + i) % 2 else "distribute"
                call_ok(multi.endpoint, "tohdf", {"names": [name], "datasets": ["w"],
                                                  "path": f"conc_{k}_{i}", "file_type": ft})
                res, _ = call_ok(multi.endpoint, "readhdf", {"paths": [f"conc_{k}_{i}"]})
                raw = object_bytes(multi.endpoint, res["objects"]["w"])
                seg, val = strings_payload(words)
                assert raw == seg + val
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def put_array(endpoint, a):
    raw = a.tobytes()
    dtype = "bool" if a.dtype == np.bool_ else str(a.dtype)
    hdr, _ = call(endpoint, "put", {"dtype": dtype, "shape": [len(a)]},
                  [{"name": "values", "nbytes": len(raw)}], [raw] if raw else ())
    assert hdr["ok"], hdr
    return hdr["result"]["object"]["name"]


def group_keys(label):
    rng = np.random.default_rng(11)
    nan = np.float64("nan")
    return {
        "int64 few values": [rng.integers(0, 10, 1000)],
        "int64 many values": [rng.integers(-1 << 40, 1 << 40, 5003)],
        "float64 nan and zeros": [np.array([1.5, nan, -0.0, 0.0, -2.0, nan, 1.5, 0.0] * 37)],
        "uint64 high bits": [rng.integers(0, 4, 300).astype("u8") << np.uint64(63)],
        "two keys": [rng.integers(0, 3, 777).astype("i1"), rng.integers(0, 2, 777) == 1],
        "three keys": [rng.integers(0, 2, 100), rng.random(100) < 0.5,
                       rng.integers(0, 3, 100).astype("u2")],
        "one group": [np.zeros(500, "i4")],
        "sorted": [np.arange(400)],
        "reversed": [np.arange(400)[::-1].copy()],
        "fewer rows than locales": [np.array([3, 1, 3], "i8")],
        "empty": [np.zeros(0, "f4")],
        "large, skewed": [np.concatenate([np.zeros(150_000, "i8"),
                                          rng.integers(0, 1000, 60_000)])],
    }[label]


def test_groupby_reports_progress(multi):
    """`status` on rank 0 shows a groupby's rows as one daemon counts them (a sort a key,
    then the groups), rising, and nothing once it is done."""
    rows = 6_000_000
    name = f"prog{multi.ranks}"
    hdr, _ = call(multi.endpoint, "create", {"dtype": "int64", "fill": "randint", "low": 0,
                                             "high": 1 << 40, "size": rows, "seed": 3,
                                             "name": name})
    assert hdr["ok"], hdr
    reply = {}
    worker = threading.Thread(target=lambda: reply.update(
        call(multi.endpoint, "groupby", {"keys": [name, name]})[0]))
    worker.start()
    seen = []
    while worker.is_alive():
        hdr, _ = call(multi.endpoint, "status")
        assert hdr["ok"], hdr
        seen += [e for e in hdr["result"]["requests"] if e["cmd"] == "groupby"]
        time.sleep(0.005)
    worker.join()
    assert reply["ok"], reply
    measured = [e for e in seen if e["unit"] is not None]
    assert measured, seen
    for e in measured:
        assert e["unit"] == "rows" and e["total"] == 3 * rows, e
        assert e["done"] in (0, 2 * rows, 3 * rows), e
    dones = [e["done"] for e in measured]
    assert dones == sorted(dones), dones
    hdr, _ = call(multi.endpoint, "status")
    assert not [e for e in hdr["result"]["requests"] if e["cmd"] == "groupby"]
    call(multi.endpoint, "delete", {"names": [name, reply["result"]["object"]["name"]]})


GROUPS = ["int64 few values", "int64 many values", "float64 nan and zeros", "uint64 high bits",
          "two keys", "three keys", "one group", "sorted", "reversed",
          "fewer rows than locales", "empty", "large, skewed"]


@pytest.mark.parametrize("label", GROUPS)
def test_groupby_matches_one_rank(multi, single, label):
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        keys = [put_array(d.endpoint, k) for k in group_keys(label)]
        res, _ = call_ok(d.endpoint, "groupby", {"keys": keys})
        gb = res["object"]
        hdr, frames = call(d.endpoint, "get", {"name": gb["name"]})
        assert hdr["ok"], hdr
        text = repr(hdr["result"]).replace(gb["name"], "GB")
        for k, key in enumerate(keys):
            text = text.replace(f"'{key}'", f"'KEY{k}'")
        out[name] = (text, b"".join(bytes(f) for f in frames), repr(gb).replace(gb["name"], "GB"))
    assert out["multi"][0] == out["single"][0]
    assert out["multi"][1] == out["single"][1]
    assert out["multi"][2] == out["single"][2]


AGG_VALUES = {
    "int64": lambda rng, n: rng.integers(-1000, 1000, n),
    "float64 with nan": lambda rng, n: np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
    "bool": lambda rng, n: rng.random(n) < 0.3,
    "uint8": lambda rng, n: rng.integers(0, 255, n).astype("u1"),
}


@pytest.mark.parametrize("keys_label", ["int64 few values", "two keys", "fewer rows than locales",
                                        "empty", "large, skewed"])
@pytest.mark.parametrize("vals_label", list(AGG_VALUES))
def test_aggregate_matches_one_rank(multi, single, keys_label, vals_label):
    keys = group_keys(keys_label)
    vals = AGG_VALUES[vals_label](np.random.default_rng(5), len(keys[0]))
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        knames = [put_array(d.endpoint, k) for k in keys]
        vname = put_array(d.endpoint, vals)
        gb = call_ok(d.endpoint, "groupby", {"keys": knames})[0]["object"]["name"]
        got = []
        for op in ["count", "sum", "min", "max", "mean", "first", "nunique"]:
            args = {"groupby": gb, "op": op}
            if op != "count":
                args["values"] = vname
            hdr, _ = call(d.endpoint, "aggregate", args)
            if not hdr["ok"]:
                got.append((op, hdr["error"]))
                continue
            res = hdr["result"]
            objs = res["keys"] + [res["values"]]
            data = [object_bytes(d.endpoint, o) for o in objs]
            got.append((op, [{**o, "name": ""} for o in objs], data))
        out[name] = got
    assert out["multi"] == out["single"]


def named(endpoint, cmd, args, name):
    return call_ok(endpoint, cmd, {**args, "name": name})[0]["object"]


def build_composites(endpoint):
    """Composites of every kind over pdarrays and Strings, under fixed names; their
    descriptions by name."""
    call_ok(endpoint, "clear")
    rng = np.random.default_rng(21)
    n = 301
    vals = rng.integers(-50, 50, 1000)
    segs = np.sort(rng.integers(0, 1000, n))
    segs[0] = 0
    words = [f"w{i % 17}" * (i % 5) for i in range(n)]
    made = {}
    for name, a in [("vals", vals), ("segs", segs), ("ints", rng.integers(0, 9, n)),
                    ("floats", rng.random(n)), ("flags", rng.random(n) < 0.5),
                    ("grid", np.arange(24.0))]:
        raw = a.tobytes()
        dtype = "bool" if a.dtype == np.bool_ else str(a.dtype)
        hdr, _ = call(endpoint, "put", {"dtype": dtype, "shape": [len(a)], "name": name},
                      [{"name": "values", "nbytes": len(raw)}], [raw] if raw else ())
        assert hdr["ok"], hdr
        made[name] = hdr["result"]["object"]
    hdr, _ = put_strings(endpoint, words, "words")
    assert hdr["ok"], hdr
    seg_w = np.arange(0, n, 7)  # a segarray of Strings
    hdr, _ = call(endpoint, "put", {"dtype": "int64", "shape": [len(seg_w)], "name": "segw"},
                  [{"name": "values", "nbytes": seg_w.nbytes}], [seg_w.tobytes()])
    assert hdr["ok"], hdr
    made["sa"] = named(endpoint, "segarray", {"segments": "segs", "values": "vals"}, "sa")
    made["saw"] = named(endpoint, "segarray", {"segments": "segw", "values": "words"}, "saw")
    made["idx"] = named(endpoint, "index", {"levels": ["ints"], "names": ["k"]}, "idx")
    made["mi"] = named(endpoint, "index", {"levels": ["ints", "words"], "names": ["a", "b"]},
                       "mi")
    made["df"] = named(endpoint, "dataframe", {"columns": ["ints", "words", "sa", "flags"],
                                               "column_names": ["i", "w", "s", "f"],
                                               "index": "idx"}, "df")
    made["av"] = named(endpoint, "reshape", {"array": "grid", "shape": [2, 3, 4]}, "av")
    made["back"] = named(endpoint, "reshape", {"array": "av", "shape": [24]}, "back")
    return made


def test_composites_match_one_rank(multi, single):
    got, want = build_composites(multi.endpoint), build_composites(single.endpoint)
    assert got == want
    for name in got:
        g_hdr, g_frames = call(multi.endpoint, "get", {"name": name})
        w_hdr, w_frames = call(single.endpoint, "get", {"name": name})
        assert g_hdr["ok"] and w_hdr["ok"], (g_hdr, w_hdr)
        assert g_hdr["result"] == w_hdr["result"], name
        assert b"".join(bytes(f) for f in g_frames) == b"".join(bytes(f) for f in w_frames), name


@pytest.mark.parametrize("segs", [
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],  # not starting at 0
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 5, 13, 14, 15],  # decreasing on another rank
    [0, 1, 2, 3, 4, 5, 6, 7, 6, 9, 10, 11, 12, 13, 14, 15],  # decreasing at rank 1 (R = 2)
    [0, 1, 2, 3, 4, 5, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15],  # decreasing at rank 1 (R = 3)
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 99],  # past the end, last rank
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, -1],  # negative
])
def test_segarray_errors_match_one_rank(multi, single, segs):
    out = []
    for d in (multi, single):
        s = put_array(d.endpoint, np.array(segs, "i8"))
        v = put_array(d.endpoint, np.arange(20, dtype="i8"))
        hdr, _ = call(d.endpoint, "segarray", {"segments": s, "values": v, "name": "badsa"})
        assert not hdr["ok"]
        out.append(hdr["error"])
        hdr, _ = call(d.endpoint, "info", {"names": ["badsa"]})
        assert hdr["error"]["code"] == "not_found"  # published on no rank
    assert out[0] == out[1]


def bigint_put(endpoint, values, k, max_bits=None, name=None):
    limbs = [np.array([(v >> (64 * j)) & (2**64 - 1) for v in values], dtype="<u8")
             for j in range(k)]
    raw = b"".join(a.tobytes() for a in limbs)
    args = {"objtype": "pdarray", "dtype": "bigint", "shape": [len(values)]}
    if name:
        args["name"] = name
    if max_bits is not None:
        args["max_bits"] = max_bits
    frames = [raw[i:i + 1001] for i in range(0, len(raw), 1001)] or [b""]
    return call(endpoint, "put", args,
                [{"name": f"Limb_{j}", "nbytes": a.nbytes} for j, a in enumerate(limbs)],
                frames if raw else ())


@pytest.mark.parametrize("n,k", [(1000, 3), (5, 1), (0, 2)])
def test_bigint_put_get_match_one_rank(multi, single, n, k):
    rng = np.random.default_rng(n)
    values = [int(rng.integers(0, 1 << 62)) << (64 * (i % k)) | i for i in range(n)]
    out = []
    for d in (multi, single):
        hdr, _ = bigint_put(d.endpoint, values, k, name=f"big_{n}_{k}")
        assert hdr["ok"], hdr
        desc = hdr["result"]["object"]
        hdr, frames = call(d.endpoint, "get", {"name": desc["name"]})
        assert hdr["ok"], hdr
        raw = b"".join(bytes(f) for f in frames)
        limbs = [np.frombuffer(raw[j * n * 8:(j + 1) * n * 8], "<u8") for j in range(k)]
        assert [sum(int(limbs[j][i]) << (64 * j) for j in range(k))
                for i in range(n)] == values
        hdr2, frames2 = call(d.endpoint, "get", {"name": desc["name"], "start": n // 3,
                                                 "stop": n // 2})
        assert hdr2["ok"], hdr2
        out.append((desc, hdr["result"], raw,
                    b"".join(bytes(f) for f in frames2)))
    assert out[0] == out[1]


def test_bigint_max_bits_error_matches_one_rank(multi, single):
    values = [1] * 40
    values[37] = 1 << 70  # on the last rank
    errors = []
    for d in (multi, single):
        hdr, _ = bigint_put(d.endpoint, values, 2, max_bits=64)
        assert not hdr["ok"]
        errors.append(hdr["error"])
    assert errors[0] == errors[1]
    assert "element 37 needs 71 bits" in errors[0]["message"]


CATEGORIES = {
    "with the NA text": ["N/A", "apple", "b", "cc" * 40, "", "dog", "e", "f", "g"],
    "without it": ["zeta", "alpha", "", "x" * 300, "beta", "q", "r"],
    "NA last, on the last rank": ["a", "b", "c", "d", "e", "f", "g", "N/A"],
    "one": ["only"],
    "none": [],
}


@pytest.mark.parametrize("label", list(CATEGORIES))
def test_categorical_from_codes_matches_one_rank(multi, single, label):
    cats = CATEGORIES[label]
    n = 1000
    codes = np.random.default_rng(3).integers(0, max(len(cats), 1), n if cats else 0)
    out = []
    for d in (multi, single):
        call_ok(d.endpoint, "clear")
        hdr, _ = call(d.endpoint, "put", {"dtype": "int64", "shape": [len(codes)],
                                          "name": "codes"},
                      [{"name": "values", "nbytes": codes.nbytes}],
                      [codes.tobytes()] if len(codes) else ())
        assert hdr["ok"], hdr
        hdr, _ = put_strings(d.endpoint, cats, "cats")
        assert hdr["ok"], hdr
        desc = call_ok(d.endpoint, "categorical", {"codes": "codes", "categories": "cats",
                                                   "name": "cat"})[0]["object"]
        hdr, frames = call(d.endpoint, "get", {"name": "cat"})
        assert hdr["ok"], hdr
        # a dataframe and a segarray over it, got through their components
        df = call_ok(d.endpoint, "dataframe", {"columns": ["cat", "codes"], "name": "df"})[0]
        hdr2, frames2 = call(d.endpoint, "get", {"name": "df"})
        assert hdr2["ok"], hdr2
        out.append((desc, hdr["result"], b"".join(bytes(f) for f in frames), df,
                    hdr2["result"], b"".join(bytes(f) for f in frames2)))
    assert out[0] == out[1]


def test_categorical_bad_code_matches_one_rank(multi, single):
    codes = np.zeros(50, "i8")
    codes[47] = 9  # on the last rank
    errors = []
    for d in (multi, single):
        c = put_array(d.endpoint, codes)
        hdr, _ = put_strings(d.endpoint, ["a", "b"])
        hdr, _ = call(d.endpoint, "categorical", {"codes": c,
                                                  "categories": hdr["result"]["object"]["name"]})
        assert not hdr["ok"]
        errors.append(hdr["error"])
    assert errors[0] == errors[1]
    assert "codes[47] = 9" in errors[0]["message"]


def composite_files(d, ddir, file_type, names):
    """Composites of every kind written by tohdf into ddir/<file_type>; the directory."""
    build_composites(d.endpoint)
    codes = np.random.default_rng(8).integers(0, 3, 301)
    hdr, _ = call(d.endpoint, "put", {"dtype": "int64", "shape": [301], "name": "codes"},
                  [{"name": "values", "nbytes": codes.nbytes}], [codes.tobytes()])
    assert hdr["ok"], hdr
    hdr, _ = put_strings(d.endpoint, ["x", "yy", "zzz"], "cats")
    assert hdr["ok"], hdr
    named(d.endpoint, "categorical", {"codes": "codes", "categories": "cats"}, "cat")
    hdr, _ = bigint_put(d.endpoint, [i << (60 + i % 9) for i in range(301)], 2, name="big")
    assert hdr["ok"], hdr
    named(d.endpoint, "groupby", {"keys": ["ints", "flags"]}, "gb")
    named(d.endpoint, "dataframe", {"columns": ["ints", "cat", "big"], "index": "mi"}, "df2")
    out = ddir / f"composites_{file_type}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    res, _ = call_ok(d.endpoint, "tohdf", {"names": names, "path": f"{out.name}/c.h5",
                                           "file_type": file_type})
    return out, res


TOHDF_COMPOSITES = ["idx", "mi", "df2", "av", "back", "cat", "big", "gb"]


@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_tohdf_composites_match_one_rank(multi, single, file_type):
    names = TOHDF_COMPOSITES + ["sa", "saw", "df"]
    got, got_res = composite_files(multi, multi.tmp / "data", file_type, names)
    want, want_res = composite_files(single, single.data_dir, file_type, names)
    assert got_res == want_res
    assert data_files(got) == data_files(want)
    assert [f for f in os.listdir(got) if f.startswith(".")] == []
    for f in data_files(got):
        assert h5_tree(got / f) == h5_tree(want / f), f


def normalized(endpoint, result):
    """A readhdf result's objects with the names the daemon made replaced by the dataset's,
    and every object's reply (description and bytes) by dataset."""
    text = {}
    for ds, desc in sorted(result.get("objects", {}).items()):
        hdr, frames = call(endpoint, "get", {"name": desc["name"]})
        assert hdr["ok"], hdr
        t = repr((desc, hdr["result"])).replace(desc["name"], "@" + ds)
        text[ds] = (t, b"".join(bytes(f) for f in frames))
    return {**result, "objects": None}, text


READ_COMPOSITES = [
    {"paths": ["composites_single/c.h5"]},
    {"paths": ["composites_distribute/c_LOCALE*"]},
    {"paths": ["composites_single/c.h5", "composites_distribute/c_LOCALE*"],
     "datasets": ["idx", "cat", "big", "av", "gb"]},
    {"paths": ["composites_single/c.h5", "composites_distribute/c_LOCALE*"],
     "datasets": ["idx"]},
    {"paths": ["composites_single/c.h5", "composites_distribute/c_LOCALE*"],
     "datasets": ["cat"]},
    {"paths": ["composites_single/c.h5", "composites_distribute/c_LOCALE*"],
     "datasets": ["big"]},
    {"paths": ["composites_single/c.h5", "composites_distribute/c_LOCALE*"],
     "datasets": ["av"]},
    {"paths": ["composites_single/c.h5", "composites_distribute/c_LOCALE*"],
     "datasets": ["gb"]},
    {"paths": ["composites_single/c.h5"], "datasets": ["sa", "saw", "df"]},
    {"paths": ["composites_single/c.h5"], "datasets": ["sa", "cat"], "start": 17, "stop": 150},
    {"paths": ["composites_distribute/c_LOCALE*"], "datasets": ["av", "big"], "tag_data": True},
    {"paths": ["composites_distribute/c_LOCALE*"], "datasets": ["sa", "saw", "df"]},
]


@pytest.mark.parametrize("args", READ_COMPOSITES)
def test_readhdf_composites_match_one_rank(multi, single, args):
    # files written by the one-rank daemon, copied over
    for file_type in ["single", "distribute"]:
        names = TOHDF_COMPOSITES + ["sa", "saw", "df"]
        src, _ = composite_files(single, single.data_dir, file_type, names)
        dest = multi.tmp / "data" / src.name
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest)
    call_ok(multi.endpoint, "clear")
    call_ok(single.endpoint, "clear")
    got, _ = call(multi.endpoint, "readhdf", args)
    want, _ = call(single.endpoint, "readhdf", args)
    assert got["ok"] == want["ok"], (got, want)
    if not want["ok"]:
        assert got["error"] == want["error"]
        return
    assert normalized(multi.endpoint, got["result"]) == normalized(single.endpoint,
                                                                   want["result"])


@pytest.mark.parametrize("with_int", [False, True], ids=["categorical", "categorical and int"])
def test_groupby_categorical_key_matches_one_rank(multi, single, with_int):
    """A categorical key sorts by its codes, as with one rank; aggregate gives each group's
    key as a categorical (its codes taken across ranks, the categories shared)."""
    rng = np.random.default_rng(17)
    n = 2001
    codes = rng.integers(0, 4, n)
    ints = rng.integers(0, 3, n)
    vals = rng.integers(-100, 100, n)
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        for k, a in [("codes", codes), ("ints", ints), ("vals", vals)]:
            hdr, _ = call(d.endpoint, "put", {"dtype": "int64", "shape": [n], "name": k},
                          [{"name": "values", "nbytes": a.nbytes}], [a.tobytes()])
            assert hdr["ok"], hdr
        hdr, _ = put_strings(d.endpoint, ["zeta", "alpha", "", "mid"], "cats")
        assert hdr["ok"], hdr
        named(d.endpoint, "categorical", {"codes": "codes", "categories": "cats"}, "cat")
        keys = ["cat", "ints"] if with_int else ["cat"]
        gb = named(d.endpoint, "groupby", {"keys": keys}, "gb")
        hdr, frames = call(d.endpoint, "get", {"name": "gb"})
        assert hdr["ok"], hdr
        got = [gb, hdr["result"], b"".join(bytes(f) for f in frames)]
        for op in ["count", "sum", "first", "nunique"]:
            args = {"groupby": "gb", "op": op}
            if op != "count":
                args["values"] = "vals"
            res, _ = call_ok(d.endpoint, "aggregate", args)
            objs = res["keys"] + [res["values"]]
            got.append((op, [anonymous(o) for o in objs],
                        [object_bytes(d.endpoint, o) for o in objs]))
        out[name] = got
    assert out["multi"] == out["single"]
    assert out["multi"][3][1][0]["objtype"] == "categorical"  # the keys came back as such


def test_aggregate_count_of_strings_matches_one_rank(multi, single):
    """count reads no values, so strings values are counted at any R; the ops that read
    them are refused at R > 1."""
    keys = np.random.default_rng(4).integers(0, 5, 333)
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        hdr, _ = call(d.endpoint, "put", {"dtype": "int64", "shape": [len(keys)], "name": "k"},
                      [{"name": "values", "nbytes": keys.nbytes}], [keys.tobytes()])
        assert hdr["ok"], hdr
        hdr, _ = put_strings(d.endpoint, [f"s{i % 7}" for i in range(len(keys))], "s")
        assert hdr["ok"], hdr
        named(d.endpoint, "groupby", {"keys": ["k"]}, "gb")
        res, _ = call_ok(d.endpoint, "aggregate", {"groupby": "gb", "op": "count", "values": "s"})
        objs = res["keys"] + [res["values"]]
        out[name] = ([anonymous(o) for o in objs], [object_bytes(d.endpoint, o) for o in objs])
    assert out["multi"] == out["single"]


def anonymous(desc):
    """An object's description without the names the daemon made (its own and its
    components'), which differ between daemons."""
    out = {k: v for k, v in desc.items() if k != "name"}
    if "components" in out:
        out["components"] = {k: anonymous(v) for k, v in out["components"].items()}
    return out


def strings_keys(label):
    """Keys of a strings groupby: lists of str (strings keys) or numpy arrays."""
    rng = np.random.default_rng(23)
    words = ["pear", "apple", "", "fig", "apple pie", "äpfel", "日本", "z", "a\u00e9", "ß"]
    return {
        "many duplicates": [[words[i] for i in rng.integers(0, len(words), 3001)]],
        "all unique": [[f"u{v:x}" for v in rng.permutation(1700)]],
        "empty strings": [["" if v else "x" for v in rng.random(500) < 0.8]],
        "one group": [["same"] * 411],
        "fewer rows than locales": [["b", "", "b"]],
        "empty": [[]],
        "long strings": [["L" * 70_000, "short", "M" * 65_537, "short", "L" * 70_000, ""]
                         + ["x"] * 40],
        "unicode": [[chr(0x41 + int(v)) * int(v % 3) + "\u00ff\U0001F600"[: int(v % 3)]
                     for v in rng.integers(0, 300, 900)]],
        "strings and int": [[words[i] for i in rng.integers(0, 4, 1200)],
                            rng.integers(0, 3, 1200)],
        "int and strings": [rng.integers(-2, 2, 1200).astype("i2"),
                            [words[i] for i in rng.integers(0, 5, 1200)]],
        "two strings": [[words[i] for i in rng.integers(0, 3, 999)],
                        [words[i] for i in rng.integers(3, 6, 999)]],
    }[label]


STRINGS_GROUPS = ["many duplicates", "all unique", "empty strings", "one group",
                  "fewer rows than locales", "empty", "long strings", "unicode",
                  "strings and int", "int and strings", "two strings"]


def put_key(endpoint, key):
    if isinstance(key, list):
        hdr, _ = put_strings(endpoint, key)
        assert hdr["ok"], hdr
        return hdr["result"]["object"]["name"]
    return put_array(endpoint, key)


def numpy_groups(keys):
    """The permutation, segments and first rows numpy gives: a stable sort by the key
    tuple, strings by their UTF-8 bytes."""
    cols = [np.array([w.encode() for w in k] + [b""], dtype=object)[:-1]
            if isinstance(k, list) else np.asarray(k) for k in keys]
    n = len(cols[0])
    perm = np.arange(n)
    for c in reversed(cols):  # LSD: each a stable sort
        perm = perm[np.argsort(c[perm], kind="stable")]
    starts = [i for i in range(n)
              if i == 0 or any(c[perm[i]] != c[perm[i - 1]] for c in cols)]
    return perm, np.array(starts, "i8"), perm[starts] if n else perm


@pytest.mark.parametrize("label", STRINGS_GROUPS)
def test_groupby_strings_keys_match_one_rank(multi, single, label):
    """A groupby of strings keys (alone or with numeric keys) sorts the strings' records
    across ranks: the same groupby as one rank, and as numpy."""
    keys = strings_keys(label)
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        knames = [put_key(d.endpoint, k) for k in keys]
        gb = named(d.endpoint, "groupby", {"keys": knames}, "gb")
        parts = {}
        for c in ["permutation", "segments", "unique_key_idx"]:
            _, frames = call_ok(d.endpoint, "get", {"name": gb["components"][c]["name"]})
            parts[c] = values(frames, "<i8")
        out[name] = (anonymous(gb), parts)
    assert out["multi"][0] == out["single"][0]
    perm, seg, uik = numpy_groups(keys)
    for name in out:
        got = out[name][1]
        assert np.array_equal(got["permutation"], perm), name
        assert np.array_equal(got["segments"], seg), name
        assert np.array_equal(got["unique_key_idx"], uik), name


@pytest.mark.parametrize("label", ["many duplicates", "empty strings", "fewer rows than locales",
                                   "empty", "long strings", "strings and int"])
def test_aggregate_strings_keys_match_one_rank(multi, single, label):
    """Every op over the groups of strings keys, with numeric and strings values: the group
    keys come back as strings taken across ranks, as with one rank."""
    keys = strings_keys(label)
    n = len(keys[0])
    rng = np.random.default_rng(8)
    vals = {"int64": rng.integers(-1000, 1000, n),
            "float64": np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
            "bool": rng.random(n) < 0.4}
    words = [["q", "", "r", "ä"][int(v)] for v in rng.integers(0, 4, n)]
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        knames = [put_key(d.endpoint, k) for k in keys]
        vnames = {k: put_array(d.endpoint, v) for k, v in vals.items()}
        vnames["strings"] = put_key(d.endpoint, words)
        named(d.endpoint, "groupby", {"keys": knames}, "gb")
        got = []
        for vk, vname in vnames.items():
            ops = ["count", "first", "nunique"] if vk == "strings" else \
                ["count", "sum", "min", "max", "mean", "first", "nunique"]
            for op in ops:
                res, _ = call_ok(d.endpoint, "aggregate", {"groupby": "gb", "op": op, "values": vname})
                objs = res["keys"] + [res["values"]]
                got.append((vk, op, [anonymous(o) for o in objs],
                            [object_bytes(d.endpoint, o) for o in objs]))
        out[name] = got
    assert out["multi"] == out["single"]
    # and against numpy: the keys of each group, the int64 sums, the strings' nunique
    perm, seg, uik = numpy_groups(keys)
    bounds = list(seg) + [n]
    by = {(vk, op): data for vk, op, _, data in out["multi"]}
    if isinstance(keys[0], list):
        seg_bytes, val_bytes = strings_payload([keys[0][i] for i in uik])
        assert by[("int64", "sum")][0] == seg_bytes + val_bytes
    sums = [vals["int64"][perm[a:b]].sum() for a, b in zip(bounds, bounds[1:])]
    assert by[("int64", "sum")][-1] == np.array(sums, "<i8").tobytes()
    nun = [len({words[i] for i in perm[a:b]}) for a, b in zip(bounds, bounds[1:])]
    assert by[("strings", "nunique")][-1] == np.array(nun, "<i8").tobytes()
    seg_bytes, val_bytes = strings_payload([words[i] for i in uik])
    assert by[("strings", "first")][-1] == seg_bytes + val_bytes


def test_strings_group_errors_match_one_rank(multi, single):
    """Bad requests around strings groups: the same error at R ranks as at one, and the
    daemon goes on."""
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        put_key(d.endpoint, ["a", "b", "a"])
        hdr, _ = put_strings(d.endpoint, ["a", "b", "a"], "s3")
        assert hdr["ok"], hdr
        hdr, _ = put_strings(d.endpoint, ["x", "y"], "s2")
        assert hdr["ok"], hdr
        named(d.endpoint, "groupby", {"keys": ["s3"]}, "gb")
        got = []
        for cmd, args in [("groupby", {"keys": ["s3", "s2"]}),
                          ("groupby", {"keys": ["s3", "nothing"]}),
                          ("aggregate", {"groupby": "gb", "op": "first", "values": "s2"}),
                          ("aggregate", {"groupby": "gb", "op": "sum", "values": "s3"}),
                          ("aggregate", {"groupby": "s3", "op": "first", "values": "s3"}),
                          ("categorical", {"values": "gb"}),
                          ("categorical", {"values": "s3", "codes": "s3"})]:
            hdr, _ = call(d.endpoint, cmd, args)
            got.append(hdr["error"] if not hdr["ok"] else hdr)
        out[name] = got
        assert call(d.endpoint, "ping")[0]["ok"]
    assert out["multi"] == out["single"]
    assert all("code" in e and e["code"] != "unknown_command" for e in out["multi"]), out


@pytest.mark.parametrize("label", ["many duplicates", "empty strings", "long strings", "unicode",
                                   "empty"])
@pytest.mark.parametrize("na", ["N/A", "apple", ""])
def test_categorical_from_values_matches_one_rank(multi, single, label, na):
    """A categorical made from strings values (the distributed groupby of the strings): the
    same codes, categories (NA appended when absent) and groups as one rank."""
    words = strings_keys(label)[0]
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        vname = put_key(d.endpoint, words)
        got = []
        for keep in [False, True]:
            cat = named(d.endpoint, "categorical",
                        {"values": vname, "na_value": na, "keep_groups": keep}, f"c{keep}")
            got.append((anonymous(cat), {c: object_bytes(d.endpoint, v)
                                         for c, v in sorted(cat["components"].items())}))
        out[name] = got
    assert out["multi"] == out["single"]
    cats = sorted({w.encode() for w in words})
    if na.encode() not in cats:
        cats.append(na.encode())
    comps = out["multi"][0][1]
    seg_bytes, val_bytes = strings_payload([c.decode() for c in cats])
    assert comps["categories"] == seg_bytes + val_bytes
    codes = np.frombuffer(comps["codes"], "<i8")
    assert [cats[c] for c in codes] == [w.encode() for w in words]


def test_groupby_keys_not_in_blocks_match_one_rank(multi, single):
    """An awkward array's buffer is laid out as its rows lie, not in blocks: as a key (alone,
    with a strings key) and as values it is fetched to where the block distribution puts
    its rows, and every groupby and aggregate is that of one rank."""
    from test_awkward import lo, np_node
    rng = np.random.default_rng(29)
    n = 2500
    off = np.concatenate([[0], np.cumsum(rng.integers(0, 9, n))]).astype("<i8")
    m = int(off[-1])
    data = rng.integers(-6, 6, m).astype("<i4")
    words = [["p", "", "qq", "ä"][int(v)] for v in rng.integers(0, 4, m)]
    ints = rng.integers(0, 50, m)
    form = lo(np_node("int32", "n1"), "n0")
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        hdr, _ = call(d.endpoint, "put", {"objtype": "awkward", "form": json.dumps(form),
                                          "length": n, "name": "aw"},
                      [{"name": "n0-offsets", "nbytes": off.nbytes},
                       {"name": "n1-data", "nbytes": data.nbytes}],
                      [off.tobytes(), data.tobytes()])
        assert hdr["ok"], hdr
        s = put_key(d.endpoint, words)
        v = put_array(d.endpoint, ints)
        got = []
        for g, keys in enumerate((["aw/n1-data"], [s, "aw/n1-data"], [v, "aw/n1-data"])):
            gb = named(d.endpoint, "groupby", {"keys": keys}, f"gb{g}")
            got.append(anonymous(gb))
            got.append(object_bytes(d.endpoint, gb))
            for op, vals in [("sum", "aw/n1-data"), ("first", "aw/n1-data"),
                             ("nunique", s), ("max", v)]:
                res, _ = call_ok(d.endpoint, "aggregate",
                                 {"groupby": f"gb{g}", "op": op, "values": vals})
                objs = res["keys"] + [res["values"]]
                got.append((op, [anonymous(o) for o in objs],
                            [object_bytes(d.endpoint, o) for o in objs]))
        out[name] = got
    assert out["multi"] == out["single"]
    perm, seg, _ = numpy_groups([data])
    gb_bytes = out["single"][1]
    assert np.array_equal(np.frombuffer(gb_bytes[:m * 8], "<i8"), perm)  # permutation first


def put_awkward(endpoint, form, length, bufs):
    names = list(bufs)
    data = [np.ascontiguousarray(bufs[k]).tobytes() for k in names]
    return call(endpoint, "put", {"objtype": "awkward", "form": json.dumps(form),
                                  "length": length},
                [{"name": k, "nbytes": len(d)} for k, d in zip(names, data)], data)


def test_awkward_put_matches_one_rank(multi, single):
    """put of awkward arrays (every node type of the awkward suite, and one whose rows and
    contents split over the ranks), get back, and the errors of bad buffers: at R ranks as
    at one."""
    from test_awkward import CASES, lo, np_node
    rng = np.random.default_rng(3)
    n = 3000
    off = np.concatenate([[0], np.cumsum(rng.integers(0, 6, n))]).astype("<i8")
    cases = {k: v[:3] for k, v in CASES.items()}
    cases["big"] = (lo(np_node("int32", "n1"), "n0"), n,
                    {"n0-offsets": off, "n1-data": rng.integers(-9, 9, off[-1]).astype("<i4")})
    bad = off.copy()
    bad[n * 3 // 4] = 10**9
    cases["big_bad"] = (cases["big"][0], n, {**cases["big"][2], "n0-offsets": bad})
    cases["short"] = (cases["big"][0], n, {**cases["big"][2], "n1-data": np.zeros(3, "<i4")})
    for name, (form, length, bufs) in cases.items():
        got, _ = put_awkward(multi.endpoint, form, length, bufs)
        want, _ = put_awkward(single.endpoint, form, length, bufs)
        assert got["ok"] == want["ok"], (name, got, want)
        if not got["ok"]:
            assert got["error"] == want["error"], (name, got, want)
            continue
        g, w = got["result"]["object"], want["result"]["object"]
        assert unnamed(g) == unnamed(w), name
        assert object_bytes(multi.endpoint, g) == object_bytes(single.endpoint, w), name
    hdr, _ = call(multi.endpoint, "ping")
    assert hdr["ok"]


def cpu_ticks(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_idle_ranks_use_no_cpu(multi):
    pids = multi.rank_pids()
    assert len(pids) == multi.ranks, pids
    time.sleep(1)
    before = {r: cpu_ticks(p) for r, p in pids.items()}
    time.sleep(5)
    hz = os.sysconf("SC_CLK_TCK")
    for r, p in pids.items():
        used = (cpu_ticks(p) - before[r]) / hz
        assert used < 0.1, f"rank {r} used {used:.2f} s of CPU in 5 s while idle"


def resident(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def test_every_rank_gives_memory_back_when_idle():
    """Each rank keeps freed shards for the next request and gives them back to the system
    once idle, as a single daemon does (docs/DESIGN.md, "Memory")."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    if os.environ.get("H5ARKD_WRAPPER") or os.environ.get("ASAN_OPTIONS"):
        pytest.skip("resident sizes mean nothing under valgrind's or ASan's allocator")
    d = Daemon(ranks=2, locales=THREADS, extra_args=("--idle-release", "0.5"))
    try:
        pids = d.rank_pids()
        start = {r: resident(p) for r, p in pids.items()}
        hdr, _ = call(d.endpoint, "create", {"dtype": "int64", "fill": "arange", "start": 0,
                                             "stop": 64 << 20, "name": "big"})
        assert hdr["ok"], hdr
        held = {r: resident(p) for r, p in pids.items()}
        for r in pids:  # 256 MiB a rank
            assert held[r] - start[r] > 200 << 20, (r, start[r], held[r])
        assert call(d.endpoint, "delete", {"names": ["big"]})[0]["ok"]
        deadline = time.time() + 10
        while time.time() < deadline:
            now = {r: resident(p) for r, p in pids.items()}
            if all(now[r] - start[r] < 64 << 20 for r in pids):
                break
            time.sleep(0.25)
        for r in pids:
            assert now[r] - start[r] < 64 << 20, \
                f"rank {r}: {start[r] >> 20} MiB at start, {now[r] >> 20} MiB 10 s after the delete"
    finally:
        d.cleanup()


def test_shutdown_stops_every_rank():
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=3, locales=THREADS)
    try:
        hdr, _ = call(d.endpoint, "create", {"dtype": "int64", "size": 100})
        assert hdr["ok"]
        pids = d.rank_pids()
        assert d.shutdown() == 0, d.read_log()
        log = d.read_log()
        for r in range(3):
            assert f"rank {r}: stopped cleanly" in log, log
        assert not any(pathlib.Path(f"/proc/{p}").exists() for p in pids.values())
    finally:
        d.cleanup()


@pytest.mark.parametrize("victim", [1, 2])
def test_killed_rank_stops_job_with_clear_error(victim):
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=3, locales=THREADS)
    try:
        hdr, _ = call(d.endpoint, "create", {"dtype": "int64", "size": 100, "name": "a"})
        assert hdr["ok"]
        os.kill(d.rank_pids()[victim], signal.SIGKILL)
        try:
            status = d.proc.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError("the job did not end within 60 s of a rank's death: " +
                                 d.read_log())
        log = d.read_log()
        assert status != 0
        assert f"rank 0: rank {victim} (host " in log and "has gone" in log, log
        assert "the job cannot go on" in log
    finally:
        d.cleanup()


PACK_FILES = {"p0.h5": ["s2", "s0", "s1", "s4", "s3"], "p1.h5": ["t0"],
              "p2.h5": ["u%d" % i for i in range(7)], "tiny.h5": ["v1", "v0"]}


@pytest.fixture
def pack_files(multi, single):
    """LBANN sample files (test_lbann's schemas) in both daemons' data directories: three
    files of 13 samples (more than the locales), a file of 2 (fewer), three images stored
    chunked and compressed in two files (their chunks in the probes' answers and the plan),
    a sample list, and a file whose last sample lacks a field. Returns {sample id: what write_samples wrote}."""
    from test_lbann import write_samples
    src = single.data_dir / "pk"
    src.mkdir(parents=True, exist_ok=True)
    want = {}
    for k, (name, ids) in enumerate(PACK_FILES.items()):
        got = write_samples(src / name, ids, k)
        want.update({sid: got[sid] for sid in sorted(got)})
    with h5py.File(src / "p2.h5", "a") as f:  # one sample's image chunked and compressed
        img = f["u3/images/img"][()]
        del f["u3/images/img"]
        f.create_dataset("u3/images/img", data=img, chunks=(2, 2, 3), compression="gzip")
    with h5py.File(src / "p0.h5", "a") as f:  # chunks of another file, on another rank
        for sid in ("s1", "s3"):
            img = f[f"{sid}/images/img"][()]
            del f[f"{sid}/images/img"]
            f.create_dataset(f"{sid}/images/img", data=img, chunks=(3, 1, 3), shuffle=True,
                             compression="gzip")
    write_samples(src / "bad.h5", ["w0", "w1", "w2"], 9)
    with h5py.File(src / "bad.h5", "a") as f:
        del f["w2/scalars/b"]
    write_samples(src / "bad2.h5", ["y0", "y1"], 10)  # its first sample lacks a field
    with h5py.File(src / "bad2.h5", "a") as f:
        del f["y0/label"]
    write_samples(src / "odd.h5", ["o0", "o1", "o2"], 11)  # o1's image of another size
    with h5py.File(src / "odd.h5", "a") as f:
        del f["o1/images/img"]
        f["o1/images/img"] = np.zeros((2, 2, 3))
    (src / "junk.h5").write_bytes(b"not an HDF5 file, " * 100)
    (src / "inc.txt").write_text("CONDUIT_HDF5_INCLUSION\n6 0 3\n.\np2.h5 4 0 u5 u0 u3 u6\n"
                                 "p1.h5 1 0 t0\ntiny.h5 1 0 v1\n")
    (src / "exc.txt").write_text("CONDUIT_HDF5_EXCLUSION\n10 2 2\n.\np0.h5 4 1 s1\n"
                                 "p2.h5 6 1 u2\n")
    dest = multi.tmp / "data" / "pk"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest)
    return want


PACKS = [
    ("paths, glob", {"paths": ["pk/p*.h5"]}),
    ("paths, fewer samples than locales", {"paths": ["pk/tiny.h5"]}),
    ("paths, one sample", {"paths": ["pk/p1.h5"]}),
    # the probes run on every rank, each on a block of the files (R = 2: 2 + 2, R = 3:
    # 2 + 1 + 1), or on fewer ranks than there are (R = 3: a rank with no file)
    ("paths, files on every rank", {"paths": ["pk/p0.h5", "pk/p1.h5", "pk/p2.h5", "pk/tiny.h5"]}),
    ("paths, fewer files than ranks", {"paths": ["pk/tiny.h5", "pk/p1.h5"]}),
    ("inclusion list", {"sample_list": "pk/inc.txt"}),
    ("exclusion list", {"sample_list": "pk/exc.txt"}),
    ("no experiment schema", {"paths": ["pk/p0.h5", "pk/tiny.h5"], "experiment_schema": None}),
]


def pack_args(args):
    from test_lbann import DATA_SCHEMA, EXPERIMENT_SCHEMA
    out = {"data_schema": DATA_SCHEMA, "experiment_schema": EXPERIMENT_SCHEMA, **args}
    return {k: v for k, v in out.items() if v is not None}


def ids_of(endpoint, desc):
    _, raw, _ = get_strings(endpoint, desc["name"])
    return [s.decode() for s in raw[8 * desc["size"]:].split(b"\0")[:-1]]


@pytest.mark.parametrize("label,args", PACKS, ids=[p[0] for p in PACKS])
def test_pack_matches_one_rank(multi, single, pack_files, label, args):
    """pack at several ranks: the same fields, groups (shape, dtype, block distribution) and
    values as one rank with as many locales, and the values LBANN's rules give."""
    from test_lbann import expected_rows
    got, _ = call_ok(multi.endpoint, "pack", pack_args(args))
    want, _ = call_ok(single.endpoint, "pack", pack_args(args))
    assert got["samples"] == want["samples"] and got["fields"] == want["fields"]
    assert sorted(got["groups"]) == sorted(want["groups"])
    ids = ids_of(multi.endpoint, got["sample_ids"])
    assert ids == ids_of(single.endpoint, want["sample_ids"]) and len(ids) == got["samples"]
    for g, desc in got["groups"].items():
        w = want["groups"][g]
        assert {**desc, "name": ""} == {**w, "name": ""}, g
        assert object_bytes(multi.endpoint, desc) == object_bytes(single.endpoint, w), g
    if args.get("experiment_schema", "") is not None:  # test_lbann's schemas
        samples, responses, labels = expected_rows({i: pack_files[i] for i in ids})
        for g, rows in (("samples", samples), ("responses", responses), ("label", labels)):
            desc = got["groups"][g]
            _, frames = call_ok(multi.endpoint, "get", {"name": desc["name"]})
            np.testing.assert_array_equal(
                values(frames, desc["dtype"]).reshape(desc["shape"]), rows)
    for ep, res in ((multi.endpoint, got), (single.endpoint, want)):
        call_ok(ep, "delete", {"names": [res["sample_ids"]["name"]] +
                               [d["name"] for d in res["groups"].values()]})


def test_pack_named_and_batches(multi, single, pack_files):
    """Named results, and a shuffled mini-batch by `get` with `rows` across ranks."""
    got, _ = call_ok(multi.endpoint, "pack", pack_args({"paths": ["pk/p*.h5"], "name": "pk_"}))
    want, _ = call_ok(single.endpoint, "pack", pack_args({"paths": ["pk/p*.h5"], "name": "pk_"}))
    assert got["groups"]["samples"]["name"] == "pk_samples"
    assert got["sample_ids"]["name"] == "pk_sample_ids"
    rows = list(np.random.default_rng(3).permutation(got["samples"]))[:9] + [0, 12, 0]
    rows = [int(r) for r in rows]
    for g in got["groups"]:
        a, fa = call(multi.endpoint, "get", {"name": f"pk_{g}", "rows": rows})
        b, fb = call(single.endpoint, "get", {"name": f"pk_{g}", "rows": rows})
        assert a["ok"] and b["ok"], (a, b)
        assert b"".join(bytes(f) for f in fa) == b"".join(bytes(f) for f in fb)
    desc = got["groups"]["samples"]
    _, whole = call_ok(multi.endpoint, "get", {"name": desc["name"]})
    _, batch = call_ok(multi.endpoint, "get", {"name": desc["name"], "rows": rows})
    np.testing.assert_array_equal(values(batch, "f4").reshape(-1, 24),
                                  values(whole, "f4").reshape(-1, 24)[rows])
    hdr, _ = call(multi.endpoint, "pack", pack_args({"paths": ["pk/p1.h5"], "name": "pk_"}))
    assert hdr["error"]["code"] == "already_exists", hdr
    for ep in (multi.endpoint, single.endpoint):
        call_ok(ep, "delete", {"names": ["pk_sample_ids", "pk_samples", "pk_responses", "pk_label"]})


PACK_ERRORS = [
    ("missing field", {"paths": ["pk/p0.h5", "pk/p2.h5", "pk/bad.h5"]}),
    ("missing sample", {"paths": ["pk/nothere*.h5"]}),
    # the third of four files is rank 1's (R = 2 and 3), the fourth the last rank's
    ("missing field, rank 1's files", {"paths": ["pk/p0.h5", "pk/p1.h5", "pk/bad.h5", "pk/p2.h5"]}),
    ("missing fields, rank 1's and the last rank's files",
     {"paths": ["pk/p0.h5", "pk/p1.h5", "pk/bad.h5", "pk/bad2.h5"]}),
    ("missing field of a first sample, the last rank's files",
     {"paths": ["pk/p0.h5", "pk/p1.h5", "pk/p2.h5", "pk/bad2.h5"]}),
    ("other size, the last rank's files",
     {"paths": ["pk/p0.h5", "pk/p1.h5", "pk/p2.h5", "pk/odd.h5"]}),
    ("corrupt file, rank 1's files", {"paths": ["pk/p0.h5", "pk/p1.h5", "pk/junk.h5", "pk/p2.h5"]}),
    ("corrupt file, the last rank's files",
     {"paths": ["pk/p0.h5", "pk/p1.h5", "pk/p2.h5", "pk/junk.h5"]}),
    ("bad schema", {"paths": ["pk/p0.h5"], "experiment_schema": "nothere:\n"}),
    ("mixed dtypes", {"paths": ["pk/p0.h5"],
                      "experiment_schema": "images:\n  metadata: {pack: x, coerce: float}\n"
                                           "label:\n  metadata: {pack: x}\n"}),
]


@pytest.mark.parametrize("label,args", PACK_ERRORS, ids=[p[0] for p in PACK_ERRORS])
def test_pack_errors_match_one_rank(multi, single, pack_files, label, args):
    """A sample lacking a field in the last rank's block, and the other refusals: the error
    one rank gives, nothing published, and the daemon goes on."""
    before = call_ok(multi.endpoint, "info", {})[0]["objects"]
    got, _ = call(multi.endpoint, "pack", pack_args(args))
    want, _ = call(single.endpoint, "pack", pack_args(args))
    assert not got["ok"] and got["error"] == want["error"], (got, want)
    expect = {"missing field": "sample 'w2' of 'pk/bad.h5' lacks field 'scalars/b'",
              "missing field, rank 1's files": "sample 'w2' of 'pk/bad.h5' lacks field",
              "missing fields, rank 1's and the last rank's files": "sample 'w2' of 'pk/bad.h5'",
              "missing field of a first sample, the last rank's files":
                  "sample 'y0' of 'pk/bad2.h5' lacks field 'label'",
              "other size, the last rank's files":
                  "sample 'o1', field 'images/img': 12 elements where the first sample has 24",
              "corrupt file, rank 1's files": "'pk/junk.h5'",
              "corrupt file, the last rank's files": "'pk/junk.h5'"}.get(label)
    if expect:
        assert expect in got["error"]["message"], got
        assert got["error"]["code"] == "schema_error", got
    assert call_ok(multi.endpoint, "info", {})[0]["objects"] == before
    assert call(multi.endpoint, "ping")[0]["ok"]


@pytest.mark.parametrize("rank", [1, 2])
def test_pack_read_failing_on_one_rank_publishes_nothing(faulty, rank):
    """A sample file that cannot be read on a rank > 0 (an I/O error injected on its first
    read): every rank fails with that one error, nothing is published, and pack works
    after."""
    from test_lbann import write_samples
    data = faulty.tmp / "data" / "pkf"
    data.mkdir(parents=True, exist_ok=True)
    write_samples(data / "a.h5", ["x%d" % i for i in range(9)], 1)
    args = pack_args({"paths": ["pkf/a.h5"]})
    call_ok(faulty.endpoint, "clear")
    before = call_ok(faulty.endpoint, "info", {})[0]["objects"]
    call_ok(faulty.endpoint, "fault", {"class": "io", "nth": 1, "error": "EIO", "rank": rank})
    hdr, _ = call(faulty.endpoint, "pack", args)
    fired = call_ok(faulty.endpoint, "fault", {"nth": 0})[0]
    assert not hdr["ok"] and hdr["error"]["code"] == "io_error", (hdr, fired)
    assert "pkf/a.h5" in hdr["error"]["message"], hdr
    assert call_ok(faulty.endpoint, "info", {})[0]["objects"] == before
    res, _ = call_ok(faulty.endpoint, "pack", args)
    assert res["samples"] == 9


def test_pack_probe_failing_on_rank_1(faulty):
    """The probes run on every rank: an I/O error injected in rank 1's first call (its
    probe of the second of three files) is the error of the whole pack, naming that file;
    nothing is published, and pack works after."""
    from test_lbann import write_samples
    data = faulty.tmp / "data" / "pkp"
    shutil.rmtree(data, ignore_errors=True)  # new files: the probes remember none
    data.mkdir(parents=True)
    for k, name in enumerate("abc"):
        write_samples(data / f"{name}.h5", [f"{name}{i}" for i in range(4)], k)
    args = pack_args({"paths": ["pkp/a.h5", "pkp/b.h5", "pkp/c.h5"]})
    call_ok(faulty.endpoint, "clear")
    before = call_ok(faulty.endpoint, "info", {})[0]["objects"]
    call_ok(faulty.endpoint, "fault", {"class": "io", "nth": 1, "error": "EIO", "rank": 1})
    hdr, _ = call(faulty.endpoint, "pack", args)
    fired = call_ok(faulty.endpoint, "fault", {"nth": 0})[0]
    assert not hdr["ok"] and hdr["error"]["code"] == "io_error", (hdr, fired)
    # rank 1's probe of b.h5 failed (not a read after the probes)
    assert hdr["error"]["message"].startswith("samples of 'pkp/b.h5': "), hdr
    assert call_ok(faulty.endpoint, "info", {})[0]["objects"] == before
    res, _ = call_ok(faulty.endpoint, "pack", args)
    assert res["samples"] == 12
    call_ok(faulty.endpoint, "clear")


@pytest.mark.parametrize("ranks", [2, 3])
def test_pack_plan_past_max_memory(ranks, tmp_path):
    """The plan every rank holds is counted against --max-memory: 300 samples whose plan
    (about 95 bytes a sample) passes 24 KiB fail with the resource_limit one rank gives,
    on every rank, nothing published; a small pack works after."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    from test_lbann import write_samples
    src = tmp_path / "pkm"
    src.mkdir()
    for k in range(3):
        write_samples(src / f"m{k}.h5", [f"s{k}_{i:03d}" for i in range(100)], k)
    write_samples(src / "x.h5", ["x0", "x1"], 5)
    multi = Daemon(ranks=ranks, locales=THREADS, extra_args=("--max-memory", "24K"))
    single = Daemon(locales=ranks * THREADS, max_memory="24K")
    try:
        for data in (multi.tmp / "data", single.data_dir):
            shutil.copytree(src, data / "pkm")
        args = pack_args({"paths": ["pkm/m*.h5"]})
        got, _ = call(multi.endpoint, "pack", args)
        want, _ = call(single.endpoint, "pack", args)
        # the same error but for the bytes: the plan holds the files' absolute paths
        for hdr in (got, want):
            assert not hdr["ok"] and hdr["error"]["code"] == "resource_limit", hdr
            assert hdr["error"]["message"].startswith("pack: the plan of 300 samples: needs "), hdr
        assert call_ok(multi.endpoint, "info", {})[0]["objects"] == []
        res, _ = call_ok(multi.endpoint, "pack", pack_args({"paths": ["pkm/x.h5"]}))
        assert res["samples"] == 2
        assert multi.shutdown() == 0
    finally:
        multi.cleanup()
        single.cleanup()


def get_rows_of(endpoint, create_args, rows, reshape=None):
    name = call_ok(endpoint, "create", create_args)[0]["object"]["name"]
    if reshape:
        name = call_ok(endpoint, "reshape", {"array": name, "shape": reshape})[0]["object"]["name"]
    return call(endpoint, "get", {"name": name, "rows": rows})


ROWS_CASES = [
    # rows across every rank, out of order, repeated, runs crossing shard and rank bounds
    ("pdarray", {"dtype": "int64", "fill": "arange", "stop": 1000}, None,
     [999, 0, 500, 501, 502, 3, 3, 250, 251, 749, 750, 998, 1, 0]),
    ("pdarray, one run over all", {"dtype": "float32", "fill": "uniform", "seed": 5,
                                   "size": 777}, None, list(range(777))),
    ("arrayview", {"dtype": "int16", "fill": "arange", "stop": 3 * 301}, [301, 3],
     [300, 0, 150, 151, 75, 76, 77, 225, 0]),
    ("bool", {"dtype": "bool", "fill": "ones", "size": 50}, None, [49, 0, 25]),
    ("no rows", {"dtype": "int64", "fill": "zeros", "size": 10}, None, []),
]


@pytest.mark.parametrize("label,args,shape,rows", ROWS_CASES, ids=[c[0] for c in ROWS_CASES])
def test_get_rows_matches_one_rank(multi, single, label, args, shape, rows):
    """get with `rows` gathers each rank's pieces to rank 0 in the order given: the same
    reply as one rank's."""
    got_hdr, got = get_rows_of(multi.endpoint, args, rows, shape)
    want_hdr, want = get_rows_of(single.endpoint, args, rows, shape)
    assert got_hdr["ok"] and want_hdr["ok"], (got_hdr, want_hdr)
    assert got_hdr["result"]["rows"] == want_hdr["result"]["rows"] == len(rows)
    assert b"".join(bytes(f) for f in got) == b"".join(bytes(f) for f in want)
    if label == "pdarray":
        np.testing.assert_array_equal(values(got, "i8"), rows)


def test_get_rows_bad_at_several_ranks(multi, single):
    """A row out of range is refused as at one rank, and the daemon goes on."""
    args = {"dtype": "int64", "fill": "arange", "stop": 10, "name": "rows_bad"}
    got, _ = get_rows_of(multi.endpoint, args, [1, 10])
    want, _ = get_rows_of(single.endpoint, args, [1, 10])
    assert not got["ok"] and got["error"] == want["error"], (got, want)
    assert call(multi.endpoint, "ping")[0]["ok"]
    for ep in (multi.endpoint, single.endpoint):
        call_ok(ep, "delete", {"names": ["rows_bad"]})


def test_http_gateway_at_several_ranks():
    """Rank 0 serves the HTTP gateway: metadata as at one rank, and /data/ reads values
    spread over every rank's locales (each rank reads its part, rank 0 gathers them) that
    are the file's, as at one rank; a bad read is an error and the ranks go on."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    import io
    import json
    import socket
    import urllib.error
    import urllib.parse
    import urllib.request
    import h5py
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = Daemon(ranks=2, locales=THREADS, env={"H5ARK_FAULTS": "1"},
                  extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"

    def get(route, **q):
        url = f"{base}{route}?{urllib.parse.urlencode(q)}"
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.read()

    try:
        rng = np.random.default_rng(5)
        x = np.arange(7, dtype=np.int32)
        big = rng.standard_normal(10_001)
        grid = np.arange(97 * 5, dtype=np.int64).reshape(97, 5)
        words = [f"w{i}" * (i % 4) for i in range(41)]
        with h5py.File(d.tmp / "data" / "g.h5", "w") as f:
            f["x"] = x
            f["big"] = big
            f["grid"] = grid
            f["words"] = np.array(words, dtype=h5py.string_dtype())
        meta = json.loads(get("/meta/", file="g.h5", path="/x"))
        assert meta["kind"] == "dataset" and meta["shape"] == [7]
        assert json.loads(get("/data/", file="g.h5", path="/x")) == x.tolist()
        got = np.frombuffer(get("/data/", file="g.h5", path="/big", format="bin"), np.float64)
        np.testing.assert_array_equal(got, big)
        got = np.load(io.BytesIO(get("/data/", file="g.h5", path="/big", format="npy",
                                     selection="4990:5020:3")))
        np.testing.assert_array_equal(got, big[4990:5020:3])
        assert json.loads(get("/data/", file="g.h5", path="/grid",
                              selection="40:60:7,1:4")) == grid[40:60:7, 1:4].tolist()
        assert json.loads(get("/data/", file="g.h5", path="/words")) == words
        assert json.loads(get("/data/", file="g.h5", path="/words",
                              selection="15:30")) == words[15:30]
        with pytest.raises(urllib.error.HTTPError) as e:
            get("/data/", file="g.h5", path="/nothing")
        assert e.value.code == 404
        # a client cannot call the ranks' internal read
        hdr, _ = call(d.endpoint, "gateway_read", {"path": str(d.tmp / "data" / "g.h5"),
                                                  "dataset": "x", "start": 0, "stop": 7})
        assert hdr["error"]["code"] == "unknown_command"
        hdr, _ = call(d.endpoint, "getconfig")
        assert hdr["result"]["http_endpoint"] == f"127.0.0.1:{port}"
        # nothing kept after the answers (a body is freed just after its last byte went out)
        wait_for(lambda: call_ok(d.endpoint, "getconfig")[0]["memory_used"] == 0,
                 "memory_used 0 after the answers")
        # a shutdown during a read waits for it: the read is answered, every rank stops
        assert call(d.endpoint, "fault", {"nth": 0, "delay_ms": 300})[0]["ok"]
        got = []
        reader = threading.Thread(target=lambda: got.append(
            get("/data/", file="g.h5", path="/big", format="bin")))
        reader.start()
        wait_for(lambda: any(e["cmd"] == "http_data" for e in
                             call_ok(d.endpoint, "status")[0]["requests"]), "the read in status")
        assert d.shutdown() == 0
        reader.join(60)
        np.testing.assert_array_equal(np.frombuffer(got[0], np.float64), big)
    finally:
        d.cleanup()


def awkward_files(data_dirs):
    """Awkward groups in both layouts, in each daemon's data directory: every awkward 2
    node type of the awkward suite, a large nested array whose rows and contents split at
    locale (and rank) bounds, broken ones, and awkward0 groups (the suite's and, when
    present, the shared fixtures')."""
    import lzma

    import h5py
    from test_awkward import (AK0_BLOBS, AK0_CASES, CASES, H5_CASES, ak0_group, ak0_schema,
                              lo, np_node, write_group)
    rng = np.random.default_rng(11)
    n = 5000
    off = np.concatenate([[0], np.cumsum(rng.integers(0, 5, n))]).astype("<i8")
    ioff = np.concatenate([[0], np.cumsum(rng.integers(0, 3, off[-1]))]).astype("<i8")
    idx = np.where(rng.random(ioff[-1]) < 0.2, -1, np.arange(ioff[-1])).astype("<i8")
    big = (lo(lo({"class": "IndexedOptionArray", "index": "i64",
                  "content": np_node("float64", "n3"), "form_key": "n2"}, "n1"), "n0"), n,
           {"n0-offsets": off, "n1-offsets": ioff, "n2-index": idx,
            "n3-data": rng.standard_normal(ioff[-1])})
    bad = ioff.copy()
    bad[len(bad) * 2 // 3] = -5  # found on whichever rank holds it
    raw = np.arange(3, dtype="<i8").tobytes()
    for d in data_dirs:
        d.mkdir(exist_ok=True)
        with h5py.File(d / "ak2.h5", "w") as h:
            for case in H5_CASES:
                form, length, bufs, _ = CASES[case]
                write_group(h, case, form, length, bufs)
            write_group(h, "big", *big)
            write_group(h, "big_bad", big[0], big[1], {**big[2], "n1-offsets": bad})
            write_group(h, "big_be", big[0], big[1], {k: v.byteswap() for k, v in big[2].items()})
        with h5py.File(d / "ak0.h5", "w") as h:
            for name, (node, code, _) in AK0_CASES.items():
                ak0_group(h, name, ak0_schema(node), {
                    "1": raw, "xz": lzma.compress(raw),
                    "alone": lzma.compress(raw, format=lzma.FORMAT_ALONE), **AK0_BLOBS})
        fixture = SHARED_FIXTURES.parent / "awkward0" / "awkward0.hdf5"
        if fixture.exists():
            shutil.copy(fixture, d / "fx_ak0.h5")
    return [name for name, (_, code, _) in AK0_CASES.items() if not isinstance(code, str)]


def unnamed(desc):
    """A description without the names the daemon chose (its own and its components')."""
    out = {**desc, "name": ""}
    if "components" in out:
        out["components"] = {k: unnamed(v) for k, v in out["components"].items()}
    return out


def same_awkward(got, want, got_ep, want_ep):
    assert got["files"] == want["files"] and got["file_errors"] == want["file_errors"]
    assert sorted(got["objects"]) == sorted(want["objects"])
    for k, g in got["objects"].items():
        w = want["objects"][k]
        assert unnamed(g) == unnamed(w), k
        assert object_bytes(got_ep, g) == object_bytes(want_ep, w), k


def test_awkward_matches_one_rank(multi, single):
    """readhdf of awkward groups (both layouts) gives at R ranks what it gives at one: the
    same descriptions, the same buffers from get, the same errors; tohdf writes the same
    awkward 2 groups and the same awkward0 groups."""
    import h5py
    from test_awkward import H5_CASES
    readable = awkward_files([multi.tmp / "data", single.data_dir])
    for args in [{"paths": ["ak2.h5"], "datasets": [c]} for c in ["big"] + sorted(
                     set(h5py.File(multi.tmp / "data" / "ak2.h5")) - {"big", "big_bad", "big_be"})] + \
                [{"paths": ["ak2.h5"], "datasets": ["big_be"], "byteorder": ">"}] + \
                [{"paths": ["ak0.h5"], "datasets": [c]} for c in readable] + \
                [{"paths": ["ak2.h5"], "datasets": ["big"], "tag_data": True}]:
        got, _ = call_ok(multi.endpoint, "readhdf", args)
        want, _ = call_ok(single.endpoint, "readhdf", args)
        same_awkward(got, want, multi.endpoint, single.endpoint)
    if (multi.tmp / "data" / "fx_ak0.h5").exists():
        got, _ = call_ok(multi.endpoint, "readhdf", {"paths": ["fx_ak0.h5"], "datasets": ["chunked"]})
        want, _ = call_ok(single.endpoint, "readhdf", {"paths": ["fx_ak0.h5"], "datasets": ["chunked"]})
        same_awkward(got, want, multi.endpoint, single.endpoint)
    for args in [{"paths": ["ak2.h5"], "datasets": ["big_bad"]},
                 {"paths": ["ak0.h5"], "datasets": ["indexed_out"]},
                 {"paths": ["ak0.h5"], "datasets": ["cycle"]}]:
        got, _ = call(multi.endpoint, "readhdf", args)
        want, _ = call(single.endpoint, "readhdf", args)
        assert not got["ok"] and got["error"] == want["error"], (args, got, want)
    # the big-endian copy, swapped as each rank reads its shards, is `big`
    be, _ = call_ok(multi.endpoint, "readhdf", {"paths": ["ak2.h5"], "datasets": ["big_be"],
                                                "byteorder": ">"})
    assert not call(multi.endpoint, "readhdf", {"paths": ["ak2.h5"], "datasets": ["big_be"]})[0]["ok"]
    le, _ = call_ok(multi.endpoint, "readhdf", {"paths": ["ak2.h5"], "datasets": ["big"]})
    assert object_bytes(multi.endpoint, be["objects"]["big_be"]) == \
        object_bytes(multi.endpoint, le["objects"]["big"])
    # tohdf of what was read: the files hold the same groups
    got, _ = call_ok(multi.endpoint, "readhdf", {"paths": ["ak2.h5"], "datasets": ["big"]})
    want, _ = call_ok(single.endpoint, "readhdf", {"paths": ["ak2.h5"], "datasets": ["big"]})
    for ep, res in [(multi.endpoint, got), (single.endpoint, want)]:
        call_ok(ep, "tohdf", {"names": [res["objects"]["big"]["name"]], "datasets": ["big"],
                              "path": "back.h5"})
    with h5py.File(multi.tmp / "data" / "back.h5") as a, \
            h5py.File(single.data_dir / "back.h5") as b:
        assert dict(a["big"].attrs) == dict(b["big"].attrs)
        assert set(a["big"]) == set(b["big"]) == {"n0-offsets", "n1-offsets", "n2-index",
                                                  "n3-data"}
        for k in a["big"]:
            assert np.array_equal(a["big"][k][()], b["big"][k][()]), k
    # awkward0's layout: rank 0 gathers each buffer for its blobs; the same files as at one
    # rank (schema.json and every blob, zlib-compressed by the policy or not), read back alike
    cases = ["big"] + H5_CASES
    objs = {}
    for ep in (multi.endpoint, single.endpoint):
        res, _ = call_ok(ep, "readhdf", {"paths": ["ak2.h5"], "datasets": cases})
        objs[ep] = [res["objects"][c]["name"] for c in cases]
    for policy in ("default", "all", "none"):
        path = f"back0_{policy}.h5"
        for ep in (multi.endpoint, single.endpoint):
            call_ok(ep, "tohdf", {"names": objs[ep], "datasets": cases, "path": path,
                                  "format": "awkward0", "compression": policy})
        with h5py.File(multi.tmp / "data" / path) as a, h5py.File(single.data_dir / path) as b:
            assert set(a) == set(b) == set(cases)
            for c in cases:
                assert set(a[c]) == set(b[c]) and len(a[c]) > 1, c
                for k in a[c]:
                    assert a[c][k][()].tobytes() == b[c][k][()].tobytes(), (policy, c, k)
            if policy != "none":  # big's offsets pass 8192 bytes: a zlib blob
                assert b"zlib" in a["big"]["schema.json"][()].tobytes()
        got, _ = call_ok(multi.endpoint, "readhdf", {"paths": [path], "datasets": cases})
        want, _ = call_ok(single.endpoint, "readhdf", {"paths": [path], "datasets": cases})
        same_awkward(got, want, multi.endpoint, single.endpoint)


def test_gather_to_rank0_within_max_memory():
    """writepart and tohdf exetera hold the other ranks' shards on rank 0: past its
    --max-memory that is resource_limit, no file is written, and the daemon goes on."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=2, locales=THREADS, extra_args=["--max-memory", str(1200 * 1024)])
    try:
        n = 200000  # 1.6 MB of int64: 0.8 MB on each rank, 1.6 MB on rank 0 gathered
        name = call_ok(d.endpoint, "create", {"dtype": "int64", "fill": "arange", "stop": n})[0][
            "object"]["name"]
        for cmd, args in [("writepart", {"path": "m.h5", "field": "df/n", "name": name}),
                          ("tohdf", {"names": [name], "path": "m.h5", "format": "exetera"})]:
            hdr, _ = call(d.endpoint, cmd, args)
            assert not hdr["ok"] and hdr["error"]["code"] == "resource_limit", hdr
            assert not (d.tmp / "data" / "m.h5").exists()
        # within the limit it is written, and memory was given back
        small = call_ok(d.endpoint, "create", {"dtype": "int64", "fill": "arange",
                                               "stop": 1000})[0]["object"]["name"]
        assert call_ok(d.endpoint, "writepart", {"path": "m.h5", "field": "df/n",
                                                 "name": small})[0]["rows"] == 1000
        call_ok(d.endpoint, "delete", {"names": [name, small]})
        assert call_ok(d.endpoint, "getconfig")[0]["memory_used"] == 0
    finally:
        d.cleanup()


def test_groupby_strings_within_max_memory():
    """A groupby of strings keys reserves its records and scratch against each rank's
    --max-memory: past it that is resource_limit, nothing is published, the daemon goes on
    and gives the memory back."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=2, locales=THREADS, extra_args=["--max-memory", str(1500 * 1024)])
    try:
        words = [f"key-{i % 5000:07d}-{'x' * 12}" for i in range(40000)]  # ~1.3 MB in all
        hdr, _ = put_strings(d.endpoint, words, "big")
        assert hdr["ok"], hdr
        used = call_ok(d.endpoint, "getconfig")[0]["memory_used"]
        hdr, _ = call(d.endpoint, "groupby", {"keys": ["big"], "name": "gb"})
        assert not hdr["ok"] and hdr["error"]["code"] == "resource_limit", hdr
        assert call(d.endpoint, "info", {"names": ["gb"]})[0]["error"]["code"] == "not_found"
        assert call_ok(d.endpoint, "getconfig")[0]["memory_used"] == used
        hdr, _ = put_strings(d.endpoint, words[:300], "small")
        assert hdr["ok"], hdr
        gb = named(d.endpoint, "groupby", {"keys": ["small"]}, "gb")
        assert gb["components"]["segments"]["size"] == len(set(words[:300]))
        call_ok(d.endpoint, "clear")
        assert call_ok(d.endpoint, "getconfig")[0]["memory_used"] == 0
    finally:
        d.cleanup()
