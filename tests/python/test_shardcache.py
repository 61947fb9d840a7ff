"""The shard cache against a real daemon: memory of deleted arrays is reused by new ones
(getconfig's memory_cached goes down by exactly what a new array takes) with no byte of the
old array showing through: puts framed at odd boundaries for every dtype and 1 to 3
locales, strings, creates of every fill, readhdf; the cache gives way to live objects
within --max-memory and never makes a request fail that would fit; many clients at once;
`clear` empties it. The daemons here never release memory when idle (--idle-release 0), so
that a slow moment between two requests cannot empty the cache; test_memory.py tests the
release."""
import os
import subprocess
import threading
import time

import numpy as np
import pytest

from daemons import daemon_binary, wait_for
from wire import Conn

MiB = 1 << 20
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "bool"]
# odd frame sizes: not multiples of any itemsize, and a frame that is empty
ODD_FRAMES = [1, 7, MiB + 3, 0, 333_331, 2 * MiB - 5]


KEEP = ["--idle-release", "0"]


def config(c):
    return c.ok("getconfig")[0]["result"]


def settled(c, used=0):
    """getconfig once memory_used is `used`: a get's reply holds its array until ZeroMQ has
    sent the last frame, which may be just after the client has it all, so a delete right
    after a get may free the memory a moment later."""
    def cfg_once_settled():
        cfg = config(c)
        return cfg if cfg["memory_used"] == used else None
    return wait_for(cfg_once_settled, f"memory_used {used}")


def values_of(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    return rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, n, dtype=dt, endpoint=True)


def delete(c, *names):
    c.ok("delete", names=list(names))


@pytest.mark.parametrize("locales", [1, 2, 3])
def test_put_reuses_memory_odd_frames_every_dtype(start_daemon, locales):
    """Each dtype is put, read back, deleted and put again with other values and other
    framing: the second put takes exactly its own size out of the cache, and both reads
    are exact, also element ranges across shard boundaries."""
    c = Conn(start_daemon(locales=locales, extra_args=KEEP))
    for k, dtype in enumerate(DTYPES):
        itemsize = np.dtype(dtype).itemsize
        n = (locales * 3 * MiB // 2) // itemsize + 3  # shards of ~1.5 MiB, not even
        first = values_of(dtype, n, 2 * k)
        a = c.put(first, split=ODD_FRAMES)
        assert np.array_equal(c.get(a), first), dtype
        delete(c, a)
        cfg = settled(c)
        assert cfg["memory_used"] == 0, cfg
        cached = cfg["memory_cached"]
        assert cached >= n * itemsize, (dtype, cfg)

        second = values_of(dtype, n, 2 * k + 1)
        b = c.put(second, split=ODD_FRAMES[::-1])
        cfg = config(c)
        assert cfg["memory_cached"] == cached - n * itemsize, (dtype, cfg)
        assert cfg["memory_used"] == n * itemsize, cfg
        assert np.array_equal(c.get(b), second), dtype
        mid = n // locales  # a range over the first shard boundary
        lo, hi = max(mid - 1000, 0), min(mid + 1001, n)
        assert np.array_equal(c.get(b, start=lo, stop=hi), second[lo:hi]), dtype
        delete(c, b)
    assert settled(c)["memory_used"] == 0


def test_create_on_cached_memory_shows_no_old_bytes(start_daemon):
    """An array of 0xAB bytes is deleted before each create of the same byte size: every
    fill gives its own values, `empty` and `zeros` all zero bytes."""
    c = Conn(start_daemon(locales=2, extra_args=KEEP))
    n = 3 * MiB
    old = np.full(8 * n, 0xAB, np.uint8)
    cases = [("uint8", "zeros", {}, np.zeros(8 * n, np.uint8)),
             ("int64", "empty", {}, np.zeros(n, np.int64)),
             ("float64", "zeros", {}, np.zeros(n)),
             ("int16", "ones", {}, np.ones(4 * n, np.int16)),
             ("int64", "full", {"value": -3}, np.full(n, -3, np.int64)),
             ("uint32", "arange", {"start": 0, "stop": 2 * n}, np.arange(2 * n, dtype=np.uint32)),
             ("bool", "zeros", {}, np.zeros(8 * n, bool))]
    for dtype, fill, extra, want in cases:
        delete(c, c.put(old, split=[MiB]))
        cached = settled(c)["memory_cached"]
        assert cached >= old.nbytes
        hdr, _ = c.ok("create", dtype=dtype, size=want.size, fill=fill, **extra)
        name = hdr["result"]["object"]["name"]
        assert config(c)["memory_cached"] == cached - old.nbytes, (dtype, fill)
        assert np.array_equal(c.get(name), want), (dtype, fill)
        delete(c, name)
        settled(c)


def test_strings_and_readhdf_on_cached_memory(start_daemon):
    c = Conn(start_daemon(locales=3, extra_args=KEEP))
    strs = [f"s{i}-" + "x" * (i % 37) for i in range(200_000)]
    s = c.put_strings(strs, split=ODD_FRAMES)
    assert c.get_strings(s) == strs
    assert c.get_strings(s, start=66_000, stop=134_000) == strs[66_000:134_000]
    c.ok("tohdf", names=[s], path="strs.h5")
    arr = values_of("float64", 3 * MiB // 8 * 3, 5)
    a = c.put(arr, split=ODD_FRAMES)
    c.ok("tohdf", names=[a], path="arr.h5")
    delete(c, s, a)
    # the same sizes again, other bytes
    other = [f"t{i}+" + "y" * (i % 37) for i in range(200_000)]
    s2 = c.put_strings(other, split=[999_999])
    assert c.get_strings(s2) == other
    delete(c, s2)
    for path, want in (("strs.h5", strs), ("arr.h5", arr)):
        cached = settled(c)["memory_cached"]
        hdr, _ = c.ok("readhdf", paths=[path.replace(".h5", "_LOCALE*.h5")])
        (desc,) = hdr["result"]["objects"].values()
        assert config(c)["memory_cached"] < cached, path
        if isinstance(want, list):
            assert c.get_strings(desc["name"]) == want
        else:
            assert np.array_equal(c.get(desc["name"]), want)
        delete(c, desc["name"])
    assert settled(c)["memory_used"] == 0


def test_cache_gives_way_within_max_memory(start_daemon):
    """Live plus cached bytes never pass --max-memory; a request that fits without the
    cache succeeds, one that does not fails as it would without it."""
    c = Conn(start_daemon(locales=2, max_memory="40M",
                          extra_args=["--shard-cache", "40M", *KEEP]))

    def check(used=None):
        cfg = config(c) if used is None else settled(c, used)
        assert cfg["memory_used"] + cfg["memory_cached"] <= cfg["max_memory"], cfg
        return cfg

    def put_and_read(arr, used, cached_at_most, frames=ODD_FRAMES):
        name = c.put(arr, split=frames)
        cfg = check()
        assert cfg["memory_used"] == used and cfg["memory_cached"] <= cached_at_most, cfg
        assert np.array_equal(c.get(name), arr)
        return name

    assert check()["shard_cache"] == 40 * MiB
    delete(c, c.put(values_of("int64", 3 * MiB, 1)))  # 24 MiB
    assert check(0)["memory_cached"] == 24 * MiB
    # the same size again takes the cached blocks, though 24 + 24 MiB would not fit
    delete(c, put_and_read(values_of("int64", 3 * MiB, 4), 24 * MiB, 0))
    assert check(0)["memory_cached"] == 24 * MiB
    # fits only if the cache lets go
    b = put_and_read(values_of("uint8", 32 * MiB, 2), 32 * MiB, 8 * MiB, frames=[MiB])
    hdr, _ = c.raw("create", dtype="uint8", size=9 * MiB, fill="zeros")
    assert hdr["error"]["code"] == "resource_limit", hdr
    delete(c, b)
    assert check(0)["memory_cached"] == 32 * MiB
    # 10 MiB per locale: both 16 MiB blocks are cut down and reused
    put_and_read(values_of("float32", 5 * MiB, 3), 20 * MiB, 0)
    hdr, _ = c.ok("create", dtype="float64", size=2 * MiB, fill="ones")  # 16 MiB more
    check()
    assert np.array_equal(c.get(hdr["result"]["object"]["name"]), np.ones(2 * MiB))
    delete(c, *(o["name"] for o in c.ok("info")[0]["result"]["objects"]))
    cfg = check(0)
    assert cfg["memory_used"] == 0 and cfg["memory_cached"] == 36 * MiB, cfg
    # nothing is left to reuse the memory for: clear gives it all back
    c.ok("clear")
    cfg = check(0)
    assert cfg["memory_used"] == 0 and cfg["memory_cached"] == 0, cfg


def test_cache_options(start_daemon):
    d = start_daemon(locales=2, max_memory="64M", extra_args=KEEP)
    c = Conn(d)
    assert config(c)["shard_cache"] == 16 * MiB  # a quarter of --max-memory
    assert config(c)["memory_cached"] == 0
    delete(c, c.put(np.zeros(MiB, np.uint8)))  # shards under 1 MiB are left to malloc
    assert settled(c)["memory_cached"] == 0
    delete(c, c.put(np.zeros(4 * MiB, np.uint8)))
    assert settled(c)["memory_cached"] == 4 * MiB

    c = Conn(start_daemon(locales=2, extra_args=["--shard-cache", "0", *KEEP]))
    delete(c, c.put(np.zeros(4 * MiB, np.uint8)))
    cfg = settled(c)
    assert cfg["shard_cache"] == 0 and cfg["memory_cached"] == 0, cfg

    for args, words in ((["--max-memory", "1G", "--shard-cache", "2G"], "must not exceed"),
                        (["--shard-cache", "lots"], "takes bytes")):
        proc = subprocess.run([daemon_binary(), "--endpoint", "ipc:///nonexistent/x", *args],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2 and words in proc.stderr, (args, proc.stderr)


def test_many_clients_reuse(start_daemon):
    """Clients put, check and delete arrays of a few sizes at once, so blocks pass between
    them through the cache all the time; every read is exact and nothing is left."""
    d = start_daemon(locales=2, extra_args=KEEP)
    failures, rounds = [], [0]
    deadline = time.time() + 8

    def worker(i):
        c = Conn(d)
        k = 0
        try:
            while time.time() < deadline:
                k += 1
                n = [2, 3, 5][(i + k) % 3] * MiB // 8
                arr = values_of("int64", n, 1000 * i + k)
                name = c.put(arr, split=[MiB + 8 * i + 1])
                assert np.array_equal(c.get(name), arr), (i, k)
                delete(c, name)
                rounds[0] += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            failures.append(f"client {i}: {e!r}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert rounds[0] > 6
    c = Conn(d)
    cfg = settled(c)
    assert cfg["memory_used"] == 0 and 0 < cfg["memory_cached"] <= cfg["shard_cache"], cfg
    assert c.ok("info")[0]["result"]["objects"] == []


def minor_faults(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def test_second_put_touches_no_fresh_memory(start_daemon):
    """Touching fresh pages is the cost the cache exists to save: once a put of 64 MiB has
    been served and deleted, the next one of the same size reuses both the shards and the
    memory its frames were received into, so the daemon takes hardly any page faults."""
    if os.environ.get("H5ARKD_WRAPPER"):
        pytest.skip("a daemon run under a tool (valgrind) has the tool's allocator")
    d = start_daemon(locales=2, extra_args=KEEP)
    with open(f"/proc/{d.proc.pid}/maps") as f:
        if "libasan" in f.read():
            pytest.skip("a sanitizer build has an allocator of its own")
    c = Conn(d)
    arr = values_of("uint8", 64 * MiB, 1)
    delete(c, c.put(arr, split=[MiB]))
    settled(c)
    before = minor_faults(d.proc.pid)
    name = c.put(arr, split=[MiB])
    faults = minor_faults(d.proc.pid) - before
    assert faults < 64 * MiB // 4096 // 10, faults  # a tenth of the pages, at most
    assert np.array_equal(c.get(name), arr)
