"""The wire protocol against a real daemon, with nothing but pyzmq, msgpack and numpy:
every command except the HDF5 ones, every fill and dtype, payload framing, malformed input
of every kind, auth, memory limits, shutdown and concurrency (see protocol/PROTOCOL.md)."""
import os
import signal
import threading

import msgpack
import numpy as np
import pytest
import zmq

from wire import (DESC_KEYS, DTYPES, ITEMSIZE, LONG, assert_alive, check_desc, create,
                  decode_strings, encode_strings, fails, fails_any, fails_raw,
                  get_array, get_raw, get_strings, le_bytes, ok, one_frame, put_array,
                  put_strings, request, send, split_buffers, strings_buffers, unique)

LOCALES = 3  # the `daemon` fixture's locale count
INT_DTYPES = [d for d in DTYPES if d.startswith(("int", "uint"))]
FLOAT_DTYPES = ["float32", "float64"]

_ctx = zmq.Context.instance()


# ---------------------------------------------------------------- helpers


def delete(d, *names):
    return ok(send(d, "delete", {"names": list(names)}))["deleted"]


def exists(d, name):
    hdr, _ = send(d, "info", {"names": [name]})
    if hdr.get("ok"):
        return True
    assert hdr["error"]["code"] == "not_found", hdr
    return False


def chunks(data, size):
    return [data[i:i + size] for i in range(0, len(data), size)]


# ---------------------------------------------------------------- ping and getconfig

def test_ping_with_id(daemon):
    for id in (0, 1, 12345, 2**32 + 5, 2**64 - 1):
        assert ok(send(daemon, "ping", id=id), id=id) == {"pong": True}


def test_ping_without_id(daemon):
    hdr, frames = request(daemon.endpoint, {"v": 1, "cmd": "ping"})
    assert hdr.get("ok") is True and hdr["result"] == {"pong": True}, hdr
    assert "id" not in hdr and not frames, hdr


def test_ping_with_empty_args_and_nil_args(daemon):
    assert ok(send(daemon, "ping", {})) == {"pong": True}
    raw = msgpack.packb({"v": 1, "id": 3, "cmd": "ping", "args": None})
    assert ok(request(daemon.endpoint, {}, raw_header=raw), id=3) == {"pong": True}


def check_config(cfg, locales, auth=False):
    for key in ("version", "protocol", "locales", "max_memory", "memory_used", "auth",
                "hdf5_version", "zmq_version"):
        assert key in cfg, (key, cfg)
    assert isinstance(cfg["version"], str) and cfg["version"]
    assert cfg["protocol"] == 1
    assert cfg["locales"] == locales
    assert isinstance(cfg["max_memory"], int) and cfg["max_memory"] > 0
    assert isinstance(cfg["memory_used"], int) and 0 <= cfg["memory_used"] <= cfg["max_memory"]
    assert cfg["auth"] is auth
    for key in ("hdf5_version", "zmq_version"):
        assert isinstance(cfg[key], str)
        parts = cfg[key].split(".")
        assert len(parts) >= 2 and all(p.isdigit() for p in parts), cfg[key]


def test_getconfig(daemon):
    check_config(ok(send(daemon, "getconfig")), LOCALES)


@pytest.mark.parametrize("locales", [1, 5])
def test_getconfig_locales_follow_option(start_daemon, locales):
    d = start_daemon(locales=locales)
    check_config(ok(send(d, "getconfig")), locales)


def fake_cgroup(root, limit):
    """A cgroup v2 tree as a container sees it, with memory.max = limit, under root."""
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "cgroup").write_text("0::/\n")
    (root / "sys" / "fs" / "cgroup").mkdir(parents=True)
    (root / "sys" / "fs" / "cgroup" / "memory.max").write_text(f"{limit}\n")
    return {"H5ARK_CGROUP_ROOT": str(root)}


def test_default_max_memory_honours_cgroup_limit(start_daemon, tmp_path):
    # A container's memory limit below the machine's: the default is half of it, and the
    # shard cache a quarter of that.
    limit = 96 << 20
    d = start_daemon(env=fake_cgroup(tmp_path / "small", limit))
    cfg = ok(send(d, "getconfig"))
    assert cfg["max_memory"] == limit // 2
    assert cfg["shard_cache"] == limit // 8
    # an object past it is refused, rather than the kernel killing the daemon
    fails(send(d, "create", {"name": "big", "dtype": "uint8", "size": limit // 2 + 1,
                             "fill": "zeros"}), "resource_limit")
    # --max-memory given wins over the limit
    d2 = start_daemon(max_memory="80M", env=fake_cgroup(tmp_path / "given", limit))
    assert ok(send(d2, "getconfig"))["max_memory"] == 80 << 20
    # A limit above the machine's memory (v1's "unlimited", say) leaves half the machine's.
    d3 = start_daemon(env=fake_cgroup(tmp_path / "huge", 1 << 62))
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert ok(send(d3, "getconfig"))["max_memory"] == machine // 2


# ---------------------------------------------------------------- create

SIZES = [0, 1, 2, 1001]  # empty, fewer elements than locales, several per locale


@pytest.mark.parametrize("dtype", DTYPES)
def test_create_empty_zeros_ones(daemon, dtype):
    for n in SIZES:
        desc = create(daemon, dtype=dtype, size=n, fill="empty")
        check_desc(desc, "pdarray", dtype, n)
        assert len(get_array(daemon, desc["name"], dtype)) == n
        for fill, want in (("zeros", 0), ("ones", 1)):
            desc = create(daemon, dtype=dtype, shape=[n], fill=fill)
            check_desc(desc, "pdarray", dtype, n)
            got = get_array(daemon, desc["name"], dtype)
            assert got.tobytes() == le_bytes(np.full(n, want, dtype=dtype)), (fill, got[:8])


FULL_VALUES = {"int8": [-128, 127], "int16": [-32768, 32767], "int32": [-2**31, 2**31 - 1],
               "int64": [-2**63, 2**63 - 1, -5], "uint8": [255, 0], "uint16": [65535],
               "uint32": [2**32 - 1], "uint64": [2**64 - 1, 2**63], "float32": [-2.5, 1e30],
               "float64": [-2.5, 1e300, 7], "bool": [True, False]}


@pytest.mark.parametrize("dtype", DTYPES)
def test_create_full(daemon, dtype):
    for value in FULL_VALUES[dtype]:
        for n in (1, 2, 17):
            desc = create(daemon, dtype=dtype, size=n, fill="full", value=value)
            check_desc(desc, "pdarray", dtype, n)
            got = get_array(daemon, desc["name"], dtype)
            assert got.tobytes() == le_bytes(np.full(n, value, dtype=dtype)), (value, got)


def test_create_full_nonfinite_floats(daemon):
    for dtype in FLOAT_DTYPES:
        for value in (float("inf"), float("-inf"), -0.0):
            desc = create(daemon, dtype=dtype, size=4, fill="full", value=value)
            got = get_array(daemon, desc["name"], dtype)
            assert got.tobytes() == le_bytes(np.full(4, value, dtype=dtype)), (dtype, value)


ARANGE = {"int8": [(-100, 100, 7), (100, -100, -9)], "int16": [(-1000, 1000, 13)],
          "int32": [(-5, 100000, 3)], "int64": [(10, -10, -3), (2**62, 2**62 + 50, 5)],
          "uint8": [(3, 250, 7)], "uint16": [(0, 65535, 1000)], "uint32": [(7, 100007, 11)],
          "uint64": [(2**63, 2**63 + 100, 9), (0, 1, 1)],
          "float32": [(-1.5, 10, 0.25), (8, -8, -0.5)], "float64": [(-1.5, 10.25, 0.125),
                                                                    (3, 3, 1), (0.5, 1e4, 1)]}


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])
def test_create_arange(daemon, dtype):
    for start, stop, step in ARANGE[dtype]:
        if dtype in INT_DTYPES:  # exact, also beyond int64
            want = np.array(list(range(start, stop, step)), dtype=dtype)
        else:
            want = np.arange(start, stop, step, dtype=dtype)
        desc = create(daemon, dtype=dtype, size=len(want), fill="arange", start=start, stop=stop,
                      step=step)
        check_desc(desc, "pdarray", dtype, len(want))
        got = get_array(daemon, desc["name"], dtype)
        assert got.tobytes() == le_bytes(want), (start, stop, step, got[:10], want[:10])


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])
def test_create_linspace(daemon, dtype):
    if dtype in FLOAT_DTYPES:
        cases = [(-1.0, 2.0, 13), (0.0, 1.0, 1001), (5.0, -5.0, 7), (3.0, 4.0, 1), (1.0, 2.0, 0)]
    else:
        cases = [(0, 100, 7), (0, 120, 2), (10, 10, 5), (0, 100, 1)]
    for start, stop, n in cases:
        want = np.linspace(start, stop, n).astype(dtype)
        desc = create(daemon, dtype=dtype, size=n, fill="linspace", start=start, stop=stop)
        check_desc(desc, "pdarray", dtype, n)
        got = get_array(daemon, desc["name"], dtype)
        assert got.tobytes() == le_bytes(want), (start, stop, n, got, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_create_uniform(daemon, dtype):
    cases = [(-2.0, 3.0, 42), (0.0, 1.0, 7)] + ([(1e6, 1e6 + 1, 1)] if dtype == "float64" else [])
    for low, high, seed in cases:
        desc = create(daemon, dtype=dtype, size=20000, fill="uniform", low=low, high=high,
                      seed=seed)
        check_desc(desc, "pdarray", dtype, 20000)
        got = get_array(daemon, desc["name"], dtype)
        assert np.all(got >= low) and np.all(got < high), (got.min(), got.max())
        assert len(np.unique(got)) > 100  # not constant
        again = get_array(daemon, create(daemon, dtype=dtype, size=20000, fill="uniform",
                                         low=low, high=high, seed=seed)["name"], dtype)
        assert again.tobytes() == got.tobytes()


RANDINT = {"int8": [(-128, 128), (-3, 2)], "int16": [(-32768, 32768)],
           "int32": [(-2**31, 2**31), (5, 9)], "int64": [(-2**63, 2**63 - 1), (-10, 10)],
           "uint8": [(0, 256), (250, 252)], "uint16": [(0, 65536)], "uint32": [(0, 2**32)],
           "uint64": [(0, 2**64 - 1), (2**63, 2**63 + 3)], "bool": [(0, 2)],
           "float32": [(-5, 5)], "float64": [(0, 1000)]}


@pytest.mark.parametrize("dtype", DTYPES)
def test_create_randint(daemon, dtype):
    for low, high in RANDINT[dtype]:
        n = 5000
        desc = create(daemon, dtype=dtype, size=n, fill="randint", low=low, high=high, seed=1234)
        check_desc(desc, "pdarray", dtype, n)
        got = get_array(daemon, desc["name"], dtype)
        if dtype == "bool":
            vals = got.view(np.uint8)
            assert set(vals.tolist()) == {0, 1}
            continue
        lo, hi = got.min(), got.max()
        if dtype in INT_DTYPES:
            assert low <= int(lo) and int(hi) < high, (low, high, lo, hi)
        else:
            assert lo >= low and hi < high, (low, high, lo, hi)
        if high - low <= 8:
            assert set(int(v) for v in got) == set(range(low, high)), set(got.tolist())
        else:
            assert len(np.unique(got)) >= min(high - low, 100)
        again = create(daemon, dtype=dtype, size=n, fill="randint", low=low, high=high, seed=1234)
        assert get_array(daemon, again["name"], dtype).tobytes() == got.tobytes()
        other = create(daemon, dtype=dtype, size=n, fill="randint", low=low, high=high, seed=4321)
        assert get_array(daemon, other["name"], dtype).tobytes() != got.tobytes()


def test_create_randint_without_seed(daemon):
    desc = create(daemon, dtype="int64", size=1000, fill="randint", low=-7, high=7)
    got = get_array(daemon, desc["name"], "int64")
    assert got.min() >= -7 and got.max() < 7


def test_random_fills_same_for_any_locale_count(start_daemon, daemon):
    one, five = start_daemon(locales=1), start_daemon(locales=5)
    cases = [dict(dtype="int64", size=10007, fill="randint", low=-10**12, high=10**12, seed=99),
             dict(dtype="uint8", size=7, fill="randint", low=0, high=256, seed=5),
             dict(dtype="int32", size=3, fill="randint", low=-50, high=50, seed=0),
             dict(dtype="float64", size=10007, fill="uniform", low=-1.0, high=1.0, seed=99),
             dict(dtype="float32", size=4, fill="uniform", low=0.0, high=10.0, seed=2**63)]
    for args in cases:
        results = []
        for d in (one, daemon, five):
            desc = create(d, **args)
            results.append(get_array(d, desc["name"], args["dtype"]).tobytes())
        assert results[0] == results[1] == results[2], args


def test_create_chosen_name_and_generated_names(daemon):
    name = unique("chosen")
    desc = create(daemon, dtype="int32", size=3, fill="ones", name=name)
    assert desc["name"] == name
    fails(send(daemon, "create", {"dtype": "int32", "size": 3, "fill": "zeros", "name": name}),
          "already_exists", mentions=name)
    fails(send(daemon, "put", {"objtype": "pdarray", "dtype": "int8", "shape": [1],
                               "name": name}, [b"\x05"], [{"name": "values", "nbytes": 1}]),
          "already_exists")
    assert get_array(daemon, name, "int32").tolist() == [1, 1, 1]  # the first one is kept
    a = create(daemon, dtype="int8", size=1, fill="zeros")["name"]
    b = create(daemon, dtype="int8", size=1, fill="zeros")["name"]
    assert a != b
    delete(daemon, name)
    create(daemon, dtype="int32", size=3, fill="zeros", name=name)  # free again after delete


# ---------------------------------------------------------------- put / get

EDGE = {
    "int8": np.array([-128, 127, 0, -1, 1], dtype="<i1"),
    "int16": np.array([-32768, 32767, 0, -1], dtype="<i2"),
    "int32": np.array([-2**31, 2**31 - 1, 0, -1], dtype="<i4"),
    "int64": np.array([-2**63, 2**63 - 1, 0, -1, 1], dtype="<i8"),
    "uint8": np.array([0, 255, 1, 128], dtype="<u1"),
    "uint16": np.array([0, 65535, 32768], dtype="<u2"),
    "uint32": np.array([0, 2**32 - 1, 2**31], dtype="<u4"),
    "uint64": np.array([0, 2**64 - 1, 2**63, 1], dtype="<u8"),
    # quiet NaN with payload, signalling NaN, negative NaN, +inf, -inf, -0.0, denormal, max
    "float32": np.array([0x7FC00123, 0x7F800001, 0xFFC00000, 0x7F800000, 0xFF800000,
                         0x80000000, 0x00000001, 0x7F7FFFFF], dtype="<u4").view("<f4"),
    "float64": np.array([0x7FF8000000000123, 0x7FF0000000000001, 0xFFF8000000000000,
                         0x7FF0000000000000, 0xFFF0000000000000, 0x8000000000000000, 1,
                         0x7FEFFFFFFFFFFFFF], dtype="<u8").view("<f8"),
    "bool": np.array([False, True, True, False, True]),
}


@pytest.mark.parametrize("dtype", DTYPES)
def test_put_get_edge_values(daemon, dtype):
    arr = EDGE[dtype]
    for reps in (1, 3):  # a few elements per locale, and fewer than locales below
        data = np.tile(arr, reps)
        name = put_array(daemon, data)
        got = get_array(daemon, name, dtype)
        assert got.tobytes() == le_bytes(data)
    for n in (0, 1, 2):
        name = put_array(daemon, arr[:n])
        assert get_array(daemon, name, dtype).tobytes() == le_bytes(arr[:n])


@pytest.mark.parametrize("dtype", DTYPES)
def test_put_get_random_round_trip(daemon, dtype):
    rng = np.random.default_rng(DTYPES.index(dtype))
    n = 100003
    if dtype == "bool":
        data = rng.integers(0, 2, n).astype(bool)
    else:
        data = rng.integers(0, 256, n * ITEMSIZE[dtype], dtype=np.uint8).view(dtype)
    name = put_array(daemon, data)
    got = get_array(daemon, name, dtype)
    assert got.tobytes() == le_bytes(data)
    res, bufs = get_raw(daemon, name, 0, n)
    check_desc(res["object"], "pdarray", dtype, n, name)


def test_put_empty_array_without_and_with_an_empty_frame(daemon):
    for frames in ([], [b""]):
        reply = send(daemon, "put", {"objtype": "pdarray", "dtype": "float64", "shape": [0]},
                     frames, [{"name": "values", "nbytes": 0}])
        desc = ok(reply)["object"]
        check_desc(desc, "pdarray", "float64", 0)
        hdr, got = send(daemon, "get", {"name": desc["name"]})
        ok((hdr, got))
        assert split_buffers(hdr, got) == {"values": b""}


def test_put_get_large_array_spans_many_reply_frames(daemon):
    data = np.arange(3 * 2**20 // 8 * 2 + 5, dtype="<f8") * 0.5  # about 6 MiB
    name = put_array(daemon, data, split=lambda b: chunks(b, 2**20))
    hdr, frames = send(daemon, "get", {"name": name}, timeout_ms=LONG)
    ok((hdr, frames))
    assert split_buffers(hdr, frames)["values"] == data.tobytes()
    assert get_array(daemon, name, "float64", 12345, 700001).tobytes() == \
        data[12345:700001].tobytes()


def test_get_ranges(daemon):
    data = np.arange(10, dtype="<i2") * 3 - 7
    name = put_array(daemon, data)
    for start, stop in ((0, 10), (3, 7), (0, 1), (9, 10), (5, 5), (0, 0), (10, 10), (2, 9)):
        got = get_array(daemon, name, "int16", start, stop)
        assert got.tolist() == data[start:stop].tolist(), (start, stop)
    assert get_array(daemon, name, "int16", start=4).tolist() == data[4:].tolist()
    assert get_array(daemon, name, "int16", stop=4).tolist() == data[:4].tolist()
    res, _ = get_raw(daemon, name, 2, 5)
    check_desc(res["object"], "pdarray", "int16", 10, name)  # describes the whole object
    for start, stop in ((5, 4), (0, 11), (11, 11), (10, 12)):
        fails(send(daemon, "get", {"name": name, "start": start, "stop": stop}), "bad_request")
    empty = put_array(daemon, np.zeros(0, dtype="<u4"))
    assert get_array(daemon, empty, "uint32", 0, 0).size == 0
    fails(send(daemon, "get", {"name": empty, "start": 0, "stop": 1}), "bad_request")


def test_put_by_size_instead_of_shape(daemon):
    data = np.array([1, 2, 3], dtype="<i4")
    desc = ok(send(daemon, "put", {"objtype": "pdarray", "dtype": "int32", "size": 3},
                   [data.tobytes()], [{"name": "values", "nbytes": 12}]))["object"]
    check_desc(desc, "pdarray", "int32", 3)
    assert get_array(daemon, desc["name"], "int32").tolist() == [1, 2, 3]


# ---------------------------------------------------------------- strings

STRS = ["", "a", "", "héllo wörld", "日本語のテキスト", "🙂 emoji", "x" * 70000, "tab\there", "end", ""]


def test_strings_round_trip(daemon):
    name = put_strings(daemon, STRS)
    assert get_strings(daemon, name) == STRS
    for size in (999, 65536, 3):
        split = put_strings(daemon, STRS, split=lambda b, s=size: chunks(b, s))
        assert get_strings(daemon, split) == STRS
    info = ok(send(daemon, "info", {"names": [name]}))["objects"]
    check_desc(info[0], "strings", "str", len(STRS), name)


def test_strings_edge_cases(daemon):
    for strs in ([], [""], ["", ""], ["only"], ["y" * (1 << 17)], ["a", "b"],
                 [""] * 50, ["é" * 40000, "", "ü" * 33000]):
        name = put_strings(daemon, strs)
        assert get_strings(daemon, name) == strs, [len(s) for s in strs]


def test_strings_get_ranges(daemon):
    name = put_strings(daemon, STRS)
    n = len(STRS)
    for start, stop in ((0, n), (3, 7), (1, 2), (6, 7), (n - 1, n), (4, 4), (0, 0), (n, n),
                        (5, n)):
        res, bufs = get_raw(daemon, name, start, stop)
        seg = np.frombuffer(bufs["segments"], dtype="<i8")
        assert len(seg) == stop - start, (start, stop, seg)
        if len(seg):
            assert seg[0] == 0, (start, stop, seg)  # relative to the first string returned
        assert decode_strings(bufs["segments"], bufs["values"]) == STRS[start:stop], (start, stop)
        check_desc(res["object"], "strings", "str", n, name)
    fails(send(daemon, "get", {"name": name, "start": 2, "stop": n + 1}), "bad_request")


def test_strings_many_short(daemon):
    strs = [str(i) * (i % 5) for i in range(10001)]
    name = put_strings(daemon, strs, split=lambda b: chunks(b, 4093))
    assert get_strings(daemon, name) == strs
    assert get_strings(daemon, name, 4999, 5007) == strs[4999:5007]


# ---------------------------------------------------------------- payload framing

def split_at(data, cuts):
    cuts = [0] + sorted(cuts) + [len(data)]
    return [data[a:b] for a, b in zip(cuts, cuts[1:])]


def test_payload_buffer_over_many_frames(daemon):
    data = np.arange(1000, dtype="<f8") / 3
    for size in (7, 13, 1000, 4096):
        name = put_array(daemon, data, split=lambda b, s=size: chunks(b, s))
        assert get_array(daemon, name, "float64").tobytes() == data.tobytes()


def test_payload_one_byte_frames(daemon):
    data = np.arange(-20, 30, dtype="<i8")
    name = put_array(daemon, data, split=lambda b: chunks(b, 1))
    assert get_array(daemon, name, "int64").tolist() == data.tolist()
    strs = ["ab", "", "ç", "xyz"]
    name = put_strings(daemon, strs, split=lambda b: chunks(b, 1))
    assert get_strings(daemon, name) == strs


def test_payload_frame_ends_one_buffer_and_starts_the_next(daemon):
    strs = ["alpha", "", "gamma delta", "日本", "z" * 100]
    seg, val = encode_strings(strs)
    splits = [
        lambda b: [b],  # both buffers in one frame
        lambda b: split_at(b, [len(seg) - 3, len(seg) + 5]),  # frame 2 spans the boundary
        lambda b: split_at(b, [len(seg)]),  # exactly at the boundary
        lambda b: split_at(b, [1, len(seg) + 1, len(b) - 1]),
        lambda b: [b[:5], b"", b[5:len(seg) + 2], b"", b"", b[len(seg) + 2:]],  # empty frames
    ]
    for split in splits:
        name = put_strings(daemon, strs, split=split)
        assert get_strings(daemon, name) == strs


def test_payload_random_splits(daemon):
    rng = np.random.default_rng(5)
    data = rng.integers(-2**31, 2**31, 50000, dtype=np.int64).astype("<i4")
    raw = data.tobytes()
    for _ in range(5):
        cuts = sorted(set(rng.integers(0, len(raw), 40).tolist()))
        name = put_array(daemon, data, split=lambda b, c=cuts: split_at(b, c))
        assert get_array(daemon, name, "int32").tobytes() == raw


# ---------------------------------------------------------------- info delete clear

def test_info_all_and_by_names(daemon):
    a = put_array(daemon, np.arange(5, dtype="<u2"), name=unique("info"))
    b = put_strings(daemon, ["x", "yy"], name=unique("info"))
    objs = ok(send(daemon, "info"))["objects"]
    assert isinstance(objs, list)
    by_name = {o["name"]: o for o in objs}
    for o in objs:
        assert DESC_KEYS <= set(o), o
    check_desc(by_name[a], "pdarray", "uint16", 5, a)
    check_desc(by_name[b], "strings", "str", 2, b)
    objs = ok(send(daemon, "info", {"names": [b, a]}))["objects"]
    assert [o["name"] for o in objs] == [b, a]
    check_desc(objs[1], "pdarray", "uint16", 5, a)
    assert ok(send(daemon, "info", {"names": []}))["objects"] == []
    fails(send(daemon, "info", {"names": [a, unique("missing")]}), "not_found")


def test_delete(daemon):
    a = create(daemon, dtype="int8", size=3, fill="zeros")["name"]
    b = put_strings(daemon, ["q"])
    assert sorted(delete(daemon, a, b)) == sorted([a, b])
    assert not exists(daemon, a) and not exists(daemon, b)
    fails(send(daemon, "get", {"name": a}), "not_found")


def test_delete_unknown_name_deletes_nothing(daemon):
    a = create(daemon, dtype="int8", size=3, fill="ones")["name"]
    missing = unique("missing")
    fails(send(daemon, "delete", {"names": [a, missing]}), "not_found", mentions=missing)
    assert exists(daemon, a)
    fails(send(daemon, "delete", {"names": [missing]}), "not_found")
    assert delete(daemon) == []
    assert delete(daemon, a) == [a]


def test_clear(start_daemon):
    d = start_daemon(locales=2)
    base = ok(send(d, "getconfig"))["memory_used"]
    assert ok(send(d, "clear")) == {"deleted": 0}
    create(d, dtype="int8", size=3, fill="zeros")
    create(d, dtype="float64", size=300, fill="ones")
    put_strings(d, ["a", "b"])
    assert ok(send(d, "clear")) == {"deleted": 3}
    assert ok(send(d, "info"))["objects"] == []
    cfg = ok(send(d, "getconfig"))
    assert cfg["memory_used"] == base, cfg


# ---------------------------------------------------------------- sockets and envelopes

def test_req_socket_client(daemon):
    sock = _ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(daemon.endpoint)
    try:
        def rpc(hdr, frames=()):
            sock.send_multipart([msgpack.packb(hdr), *frames])
            assert sock.poll(30000), "no reply"
            parts = sock.recv_multipart()
            return msgpack.unpackb(parts[0]), parts[1:]

        assert ok(rpc({"v": 1, "id": 11, "cmd": "ping"}), id=11) == {"pong": True}
        data = np.arange(100, dtype="<i8")
        desc = ok(rpc({"v": 1, "id": 12, "cmd": "put",
                       "args": {"objtype": "pdarray", "dtype": "int64", "shape": [100]},
                       "buffers": [{"name": "values", "nbytes": 800}]},
                      chunks(data.tobytes(), 300)), id=12)["object"]
        hdr, frames = rpc({"v": 1, "id": 13, "cmd": "get", "args": {"name": desc["name"]}})
        ok((hdr, frames), id=13)
        assert split_buffers(hdr, frames)["values"] == data.tobytes()
        fails(rpc({"v": 1, "id": 14, "cmd": "nope"}), "unknown_command", id=14)
        assert ok(rpc({"v": 1, "cmd": "ping"}), id=None) == {"pong": True}
    finally:
        sock.close()


def test_dealer_envelope_echo(daemon):
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(daemon.endpoint)
    try:
        # with an empty delimiter frame, as a REQ socket sends: it comes back
        sock.send_multipart([b"", msgpack.packb({"v": 1, "id": 21, "cmd": "ping"})])
        assert sock.poll(30000)
        parts = sock.recv_multipart()
        assert len(parts) == 2 and parts[0] == b"", parts
        assert msgpack.unpackb(parts[1])["id"] == 21
        # without one: none comes back
        sock.send_multipart([msgpack.packb({"v": 1, "id": 22, "cmd": "ping"})])
        assert sock.poll(30000)
        parts = sock.recv_multipart()
        assert len(parts) == 1, parts
        assert msgpack.unpackb(parts[0])["id"] == 22
        # an error reply, with the delimiter
        sock.send_multipart([b"", b"\xc1"])
        assert sock.poll(30000)
        parts = sock.recv_multipart()
        assert len(parts) == 2 and parts[0] == b"", parts
        fails((msgpack.unpackb(parts[1]), []), "bad_request", id=None)
    finally:
        sock.close()


def test_many_requests_in_flight_on_one_dealer(daemon):
    data = np.arange(400, dtype="<i8") * 7
    name = put_array(daemon, data)
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(daemon.endpoint)
    try:
        expect = {}
        for i in range(400):
            sock.send_multipart([msgpack.packb({"v": 1, "id": 1000 + i, "cmd": "get",
                                                "args": {"name": name, "start": i,
                                                         "stop": i + 1}})])
            expect[1000 + i] = ("get", i)
            if i % 4 == 0:
                sock.send_multipart([msgpack.packb({"v": 1, "id": 5000 + i, "cmd": "ping"})])
                expect[5000 + i] = ("ping", None)
            if i % 50 == 0:
                sock.send_multipart([msgpack.packb({"v": 1, "id": 9000 + i, "cmd": "get",
                                                    "args": {"name": unique("missing")}})])
                expect[9000 + i] = ("missing", None)
        seen = set()
        while len(seen) < len(expect):
            assert sock.poll(60000), f"{len(expect) - len(seen)} replies missing"
            parts = sock.recv_multipart()
            hdr = msgpack.unpackb(parts[0])
            id = hdr.get("id")
            assert id in expect and id not in seen, hdr
            seen.add(id)
            kind, i = expect[id]
            if kind == "ping":
                assert ok((hdr, []), id=id) == {"pong": True}
            elif kind == "missing":
                fails((hdr, parts[1:]), "not_found", id=id)
            else:
                ok((hdr, parts[1:]), id=id)
                got = np.frombuffer(split_buffers(hdr, parts[1:])["values"], dtype="<i8")
                assert got.tolist() == [i * 7], (id, got)
        assert not sock.poll(200), "an extra reply arrived"
    finally:
        sock.close()


# ---------------------------------------------------------------- shutdown and signals

def test_shutdown_command_exits_zero(start_daemon):
    d = start_daemon(locales=2)
    create(d, dtype="int64", size=1000, fill="ones")
    assert ok(send(d, "shutdown")) == {"stopping": True}
    assert d.proc.wait(30) == 0, d.read_log()


def test_shutdown_finishes_in_flight_work(start_daemon):
    d = start_daemon(locales=2)
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(d.endpoint)
    try:
        sock.send_multipart([msgpack.packb({"v": 1, "id": 1, "cmd": "create", "args": {
            "dtype": "float64", "size": 30_000_000, "fill": "uniform", "low": 0.0,
            "high": 1.0, "seed": 3}})])
        sock.send_multipart([msgpack.packb({"v": 1, "id": 2, "cmd": "shutdown"})])
        replies = {}
        while len(replies) < 2:
            assert sock.poll(LONG), f"replies so far: {replies}"
            hdr = msgpack.unpackb(sock.recv_multipart()[0])
            replies[hdr.get("id")] = hdr
        assert replies[2]["ok"] is True and replies[2]["result"] == {"stopping": True}, replies
        check_desc(ok((replies[1], []), id=1)["object"], "pdarray", "float64", 30_000_000)
    finally:
        sock.close()
    assert d.proc.wait(60) == 0, d.read_log()


def test_sigterm_exits_zero(start_daemon):
    d = start_daemon(locales=2)
    put_strings(d, ["a", "bc"])
    assert d.stop(signal.SIGTERM) == 0


def test_sigterm_with_work_in_flight_exits_zero(start_daemon):
    d = start_daemon(locales=2)
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(d.endpoint)
    try:
        sock.send_multipart([msgpack.packb({"v": 1, "id": 1, "cmd": "create", "args": {
            "dtype": "int64", "size": 20_000_000, "fill": "randint", "low": 0, "high": 9,
            "seed": 3}})])
        assert ok(send(d, "ping")) == {"pong": True}  # the create has been received
        assert d.stop(signal.SIGTERM) == 0
    finally:
        sock.close()


def test_sigint_exits_zero(start_daemon):
    d = start_daemon(locales=1)
    assert d.stop(signal.SIGINT) == 0


# ---------------------------------------------------------------- malformed headers

@pytest.mark.parametrize("raw", [
    b"\xc1",  # the one byte MessagePack never uses
    b"this is not msgpack",  # a fixint followed by junk
    b"\xff\xff\xff",
    b"",
    b"\x00" * 5,
], ids=["c1", "text", "ff", "empty", "zeros"])
def test_header_not_msgpack(daemon, raw):
    if raw == b"":
        # an empty first frame from a DEALER reads as a delimiter; send it behind a real one
        sock = _ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(daemon.endpoint)
        try:
            sock.send_multipart([b"", b""])
            assert sock.poll(30000), "no reply"
            parts = sock.recv_multipart()
            assert parts[0] == b"", parts
            fails((msgpack.unpackb(parts[1]), parts[2:]), "bad_request", id=None)
        finally:
            sock.close()
        assert_alive(daemon)
        return
    fails_raw(daemon, raw)


def test_header_truncated(daemon):
    full = msgpack.packb({"v": 1, "id": 5, "cmd": "ping", "args": {"x": "y" * 40}})
    for cut in (1, 2, 5, len(full) // 2, len(full) - 1):
        reply = request(daemon.endpoint, {}, raw_header=full[:cut])
        fails(reply, "bad_request", id=...)
        if "id" in reply[0]:
            assert reply[0]["id"] == 5, reply
    assert_alive(daemon)


def test_header_trailing_bytes(daemon):
    raw = msgpack.packb({"v": 1, "id": 5, "cmd": "ping"}) + b"\x01"
    reply = request(daemon.endpoint, {}, raw_header=raw)
    fails(reply, "bad_request", id=...)
    assert_alive(daemon)


@pytest.mark.parametrize("value", [[1, "v", 1], 5, -3, "ping", None, True, 1.5, b"bin"],
                         ids=["array", "int", "negint", "str", "nil", "bool", "float", "bin"])
def test_header_not_a_map(daemon, value):
    fails_raw(daemon, msgpack.packb(value, use_bin_type=True))


@pytest.mark.parametrize("raw", [
    b"\xdf\xff\xff\xff\xff\xa1v\x01",  # map32 of 2^32-1 pairs
    b"\xde\xff\xff\xa1v\x01",  # map16 of 65535 pairs
    b"\x83\xa1v\x01\xa3cmd\xa4ping",  # fixmap of 3 pairs, 2 given
    b"\x82\xa1v\x01\xa3cmd\xdd\xff\xff\xff\xff\x01",  # cmd: array32 of 2^32-1 items
    b"\x82\xa1v\x01\xa3cmd\xdb\xff\xff\xff\xff" + b"ping",  # cmd: str32 of 4 GiB
    b"\x82\xa1v\x01\xa3cmd\xc6\x7f\xff\xff\xff" + b"ping",  # cmd: bin32 of 2 GiB
    b"\x82\xa1v\x01\xa3cmd\xdc\xff\xff",  # cmd: array16 with no items
], ids=["map32", "map16", "fixmap", "array32", "str32", "bin32", "array16"])
def test_header_declares_more_than_it_has(daemon, raw):
    fails_raw(daemon, raw)


def nested(depth, leaf=b"\x01"):
    return b"\x91" * depth + leaf


@pytest.mark.parametrize("depth", [40, 1000, 200000])
def test_header_deeply_nested(daemon, depth):
    # {"v": 1, "id": 8, "cmd": "ping", "args": {"x": [[[...]]]}}
    raw = (b"\x84\xa1v\x01\xa2id\x08\xa3cmd\xa4ping\xa4args\x81\xa1x" + nested(depth))
    reply = request(daemon.endpoint, {}, raw_header=raw)
    fails(reply, "bad_request", id=...)
    fails_raw(daemon, nested(depth))
    fails_raw(daemon, b"\x81\xa1k" * depth + b"\x01")


def test_header_moderately_nested_is_read(daemon):
    # nesting well within any limit is a readable header; `x` is then an unknown argument
    raw = b"\x84\xa1v\x01\xa2id\x08\xa3cmd\xa4ping\xa4args\x81\xa1x" + nested(10)
    fails(request(daemon.endpoint, {}, raw_header=raw), "bad_request", id=8, mentions="'x'")


def test_header_with_ext_type(daemon):
    # {"v": 1, "id": 4, "cmd": "ping", "args": {"x": ext(1, b"\0")}}
    raw = b"\x84\xa1v\x01\xa2id\x04\xa3cmd\xa4ping\xa4args\x81\xa1x\xd4\x01\x00"
    reply = request(daemon.endpoint, {}, raw_header=raw)
    fails(reply, "bad_request", id=...)
    fails_raw(daemon, b"\xd4\x01\x00")
    assert_alive(daemon)


def test_header_map_with_non_string_keys(daemon):
    raw = msgpack.packb({"v": 1, "id": 3, "cmd": "ping", 5: "x"})
    fails(request(daemon.endpoint, {}, raw_header=raw), "bad_request", id=...)
    raw = msgpack.packb({"v": 1, "id": 3, "cmd": "ping", "args": {1: 2}})
    fails(request(daemon.endpoint, {}, raw_header=raw), "bad_request", id=...)
    assert_alive(daemon)


def test_header_with_empty_keys(start_daemon):
    # an empty string is a valid MessagePack map key: readable, then refused as unknown
    # (own daemon, so that a crash here does not take the shared one down)
    daemon = start_daemon(locales=2)
    fails(send(daemon, "ping", {"": 1}, id=38), "bad_request", id=38)
    fails(send(daemon, "create", {"dtype": "int8", "size": 1, "": None}, id=38),
          "bad_request", id=38)
    raw = msgpack.packb({"v": 1, "id": 39, "cmd": "ping", "": 0})
    fails_any(request(daemon.endpoint, {}, raw_header=raw), ("bad_request",), id=...)
    fails_raw(daemon, b"\x81\xa0\x01")  # {"": 1}
    raw = msgpack.packb({"": 0, "v": 1, "id": 39, "cmd": "ping"})
    fails_any(request(daemon.endpoint, {}, raw_header=raw), ("bad_request",), id=...)
    raw = msgpack.packb({"v": 1, "id": 39, "cmd": "ping", "args": {"x": {"": []}}})
    fails(request(daemon.endpoint, {}, raw_header=raw), "bad_request", id=39)
    assert_alive(daemon)


@pytest.mark.parametrize("v", [0, 2, "1", None, -1, 1.0, [1]], ids=repr)
def test_wrong_version(daemon, v):
    raw = msgpack.packb({"v": v, "id": 31, "cmd": "ping"})
    fails(request(daemon.endpoint, {}, raw_header=raw), "bad_request", id=31)
    assert_alive(daemon)


def test_missing_version(daemon):
    fails(request(daemon.endpoint, {"id": 32, "cmd": "ping"}), "bad_request", id=32)
    assert_alive(daemon)


def test_missing_cmd(daemon):
    fails(request(daemon.endpoint, {"v": 1, "id": 33}), "bad_request", id=33)
    fails(request(daemon.endpoint, {"v": 1}), "bad_request", id=None)
    fails(request(daemon.endpoint, {"v": 1, "id": 34, "args": {}}), "bad_request", id=34)
    assert_alive(daemon)


@pytest.mark.parametrize("cmd", [5, ["ping"], {"ping": 1}, True, 1.5, b"ping"], ids=repr)
def test_cmd_not_a_string(daemon, cmd):
    raw = msgpack.packb({"v": 1, "id": 35, "cmd": cmd}, use_bin_type=True)
    fails(request(daemon.endpoint, {}, raw_header=raw), "bad_request", id=35)
    assert_alive(daemon)


@pytest.mark.parametrize("id", [-1, "7", 1.5, [1]], ids=repr)
def test_id_not_a_uint(daemon, id):
    raw = msgpack.packb({"v": 1, "id": id, "cmd": "ping"})
    fails(request(daemon.endpoint, {}, raw_header=raw), "bad_request", id=None)
    assert_alive(daemon)


@pytest.mark.parametrize("cmd", ["nope", "", "PING", "ping ", "tohdf5", "x" * 5000, "pi\0ng"])
def test_unknown_command(daemon, cmd):
    fails(send(daemon, cmd, id=36), "unknown_command", id=36)
    assert_alive(daemon)


# ---------------------------------------------------------------- arguments

@pytest.mark.parametrize("cmd,args,arg", [
    ("ping", {"bogus": 1}, "bogus"),
    ("getconfig", {"verbose": True}, "verbose"),
    ("create", {"dtype": "int64", "size": 3, "fill": "zeros", "colour": "red"}, "colour"),
    ("get", {"name": "x", "step": 2}, "step"),
    ("info", {"name": "x"}, "name"),
    ("delete", {"names": [], "force": True}, "force"),
    ("clear", {"everything": True}, "everything"),
    ("shutdown", {"now": True}, "now"),
    ("put", {"objtype": "pdarray", "dtype": "int8", "shape": [0], "order": "C"}, "order"),
])
def test_unknown_argument(daemon, cmd, args, arg):
    fails(send(daemon, cmd, args), "bad_request", mentions=arg)
    assert_alive(daemon)


@pytest.mark.parametrize("cmd,args,arg", [
    ("get", {}, "name"),
    ("get", {"start": 0}, "name"),
    ("delete", {}, "names"),
    ("create", {"dtype": "int64", "size": 3, "fill": "full"}, "value"),
    ("create", {"dtype": "int64", "size": 3, "fill": "linspace", "start": 0}, "stop"),
    ("create", {"dtype": "int64", "size": 3, "fill": "randint", "low": 0}, "high"),
])
def test_missing_argument(daemon, cmd, args, arg):
    fails(send(daemon, cmd, args), "bad_request", mentions=arg)
    assert_alive(daemon)


@pytest.mark.parametrize("cmd,args,arg", [
    ("get", {"name": 5}, "name"),
    ("get", {"name": ["a"]}, "name"),
    ("get", {"name": "a", "start": -1}, "start"),
    ("get", {"name": "a", "stop": "3"}, "stop"),
    ("get", {"name": "a", "start": 1.5}, "start"),
    ("info", {"names": "a"}, "names"),
    ("info", {"names": [1, 2]}, "names"),
    ("delete", {"names": "a"}, "names"),
    ("delete", {"names": [None]}, "names"),
    ("create", {"dtype": 5, "size": 3}, "dtype"),
    ("create", {"dtype": "int64", "size": "ten"}, "size"),
    ("create", {"dtype": "int64", "size": -3}, "size"),
    ("create", {"dtype": "int64", "shape": 3}, "shape"),
    ("create", {"dtype": "int64", "shape": [-3]}, "shape"),
    ("create", {"dtype": "int64", "shape": ["3"]}, "shape"),
    ("create", {"dtype": "int64", "size": 3, "fill": 1}, "fill"),
    ("create", {"dtype": "int64", "size": 3, "fill": "full", "value": "one"}, "value"),
    ("create", {"dtype": "int64", "size": 3, "fill": "randint", "low": 0, "high": 5,
                "seed": -1}, "seed"),
    ("create", {"dtype": "float64", "size": 3, "fill": "uniform", "low": "0", "high": 1},
     "low"),
    ("create", {"dtype": "int64", "size": 3, "name": 7}, "name"),
    ("put", {"objtype": 1, "dtype": "int8", "shape": [0]}, "objtype"),
    ("put", {"objtype": "pdarray", "dtype": "int8", "shape": {"a": 1}}, "shape"),
])
def test_ill_typed_argument(daemon, cmd, args, arg):
    buffers = [{"name": "values", "nbytes": 0}] if cmd == "put" else None
    fails(send(daemon, cmd, args, buffers=buffers), "bad_request", mentions=arg)
    assert_alive(daemon)


@pytest.mark.parametrize("cmd,args", [
    ("create", {"dtype": "int64", "size": 3, "name": "a\0b"}),
    ("writepart", {"path": "p.h5", "field": "df/\0x", "name": "x"}),
])
def test_string_argument_holding_nul(daemon, cmd, args):
    """A string argument with a NUL byte in it is refused, saying so."""
    hdr, _ = send(daemon, cmd, args)
    fails((hdr, _), "bad_request")
    assert "NUL" in hdr["error"]["message"], hdr
    assert_alive(daemon)


@pytest.mark.parametrize("cmd,args,want", [
    ("tohdf", {"names": ["x"], "path": "p.h5", "strings_segments": "no"},
     "'strings_segments' must be a boolean, got str"),
    ("create", {"dtype": "int64", "size": "3"}, "'size' must be a non-negative integer, got str"),
])
def test_string_where_another_type_is_wanted(daemon, cmd, args, want):
    """A plain string given for an argument of another type is named as a string (not as a
    string holding a NUL byte)."""
    hdr, _ = send(daemon, cmd, args)
    fails((hdr, _), "bad_request")
    assert want in hdr["error"]["message"] and "NUL" not in hdr["error"]["message"], hdr
    assert_alive(daemon)


@pytest.mark.parametrize("args", [[1, 2], "x", 5, True, b"\x80"], ids=repr)
def test_args_not_a_map(daemon, args):
    raw = msgpack.packb({"v": 1, "id": 37, "cmd": "ping", "args": args}, use_bin_type=True)
    fails(request(daemon.endpoint, {}, raw_header=raw), "bad_request", id=37)
    assert_alive(daemon)


def test_unknown_values(daemon):
    fails(send(daemon, "create", {"dtype": "int64", "size": 3, "fill": "sparkly"}),
          "bad_request", mentions="sparkly")
    fails_any(send(daemon, "create", {"dtype": "complex128", "size": 3}),
              ("type_error", "bad_request"), mentions="complex128")
    fails_any(send(daemon, "put", {"objtype": "dataframe", "dtype": "int8", "shape": [1]},
                   [b"\x00"], [{"name": "values", "nbytes": 1}]), ("type_error", "bad_request"))
    fails_any(send(daemon, "put", {"objtype": "blob", "dtype": "int8", "shape": [1]},
                   [b"\x00"], [{"name": "values", "nbytes": 1}]), ("type_error", "bad_request"))
    assert_alive(daemon)


# ---------------------------------------------------------------- buffers and payloads

PUT8 = {"objtype": "pdarray", "dtype": "int64", "shape": [1]}


@pytest.mark.parametrize("buffers", [
    "values",
    {"name": "values", "nbytes": 8},
    [{"name": "values"}],
    [{"nbytes": 8}],
    [{"name": "values", "nbytes": -8}],
    [{"name": "values", "nbytes": "8"}],
    [{"name": "values", "nbytes": 8.0}],
    [{"name": 5, "nbytes": 8}],
    [5],
    [["values", 8]],
    [{"name": "values", "nbytes": 8, "extra": 1}],
    [{"name": "values", "nbytes": 2**64 - 1}, {"name": "x", "nbytes": 9}],
], ids=repr)
def test_buffers_malformed(daemon, buffers):
    fails(send(daemon, "put", PUT8, [b"\x01" * 8], buffers), "bad_request")
    assert_alive(daemon)


@pytest.mark.parametrize("frames", [[], [b"\x01" * 7], [b"\x01" * 9], [b"\x01" * 8, b"\x02"],
                                    [b"\x01" * 4, b"", b"\x01" * 3]],
                         ids=["none", "short", "long", "extra-frame", "short-split"])
def test_payload_size_differs_from_buffers(daemon, frames):
    fails(send(daemon, "put", PUT8, frames, [{"name": "values", "nbytes": 8}]), "bad_request")
    assert_alive(daemon)


def test_payload_without_buffers(daemon):
    fails(send(daemon, "ping", frames=[b"stray"]), "bad_request")
    fails(send(daemon, "ping", frames=[b"x"], buffers=[]), "bad_request")
    fails(send(daemon, "put", PUT8, [b"\x01" * 8]), "bad_request")
    assert_alive(daemon)


def test_put_wrong_buffer_names(daemon):
    one = [b"\x01" * 8]
    for buffers, frames in (
            ([{"name": "vals", "nbytes": 8}], one),
            ([{"name": "values", "nbytes": 8}, {"name": "extra", "nbytes": 0}], one),
            ([{"name": "values", "nbytes": 4}, {"name": "values", "nbytes": 4}], one),
            ([{"name": "segments", "nbytes": 8}], one),
            ([], [])):
        fails(send(daemon, "put", PUT8, frames, buffers), "bad_request")
    seg, val = encode_strings(["ab"])
    args = {"objtype": "strings", "dtype": "str", "shape": [1]}
    fails(send(daemon, "put", args, [val], [{"name": "values", "nbytes": len(val)}]),
          "bad_request", mentions="segments")
    fails(send(daemon, "put", args, [seg], [{"name": "segments", "nbytes": len(seg)}]),
          "bad_request", mentions="values")
    fails(send(daemon, "put", args, [val + seg],
               [{"name": "value", "nbytes": len(val)}, {"name": "segment", "nbytes": len(seg)}]),
          "bad_request")
    assert_alive(daemon)


@pytest.mark.parametrize("dtype,shape,nbytes", [
    ("int64", [3], 16), ("int64", [3], 32), ("int64", [0], 8), ("int16", [4], 7),
    ("float32", [2], 16), ("bool", [5], 4), ("uint8", [1], 0),
])
def test_put_values_size_mismatch(daemon, dtype, shape, nbytes):
    args = {"objtype": "pdarray", "dtype": dtype, "shape": shape}
    fails(send(daemon, "put", args, one_frame(b"\x00" * nbytes),
               [{"name": "values", "nbytes": nbytes}]), "bad_request")
    assert_alive(daemon)


def put_raw_strings(d, n, segments, values):
    seg = np.array(segments, dtype="<i8").tobytes()
    return send(d, "put", {"objtype": "strings", "dtype": "str", "shape": [n]},
                one_frame(seg + values), strings_buffers(seg, values))


@pytest.mark.parametrize("segments,values", [
    ([0, 5, 3], b"ab\0cd\0ef\0"),  # out of order
    ([0, 3, 3], b"ab\0cd\0ef\0"),  # equal: an empty slot with no NUL
    ([0, 3, 12], b"ab\0cd\0ef\0"),  # past the end
    ([0, 3, 9], b"ab\0cd\0ef\0"),  # exactly at the end: the last string has no bytes
    ([0, 3, -3], b"ab\0cd\0ef\0"),  # negative
    ([1, 3, 6], b"ab\0cd\0ef\0"),  # does not start at 0
    ([3, 6, 0], b"ab\0cd\0ef\0"),  # rotated
    ([0, 3, 6], b"ab\0cd\0efg"),  # the last string has no NUL
    ([0, 3, 6], b"abcdefgh\0"),  # the first strings have no NUL
    ([0, 2, 4], b"ab\0cd\0ef\0"),  # string 0 ends without its NUL
    ([0, 2**62, 2**63 - 1], b"ab\0cd\0ef\0"),
], ids=["order", "equal", "range", "at-end", "negative", "not-zero", "rotated", "no-nul-last",
        "no-nul-first", "nul-misplaced", "huge"])
def test_put_strings_malformed(daemon, segments, values):
    fails(put_raw_strings(daemon, 3, segments, values), "bad_request")
    assert_alive(daemon)


def test_put_strings_malformed_single_and_empty(daemon):
    fails(put_raw_strings(daemon, 1, [0], b"ab"), "bad_request")  # no NUL
    fails(put_raw_strings(daemon, 1, [0], b""), "bad_request")  # no bytes at all
    fails(put_raw_strings(daemon, 0, [], b"x\0"), "bad_request")  # bytes but no strings
    fails(put_raw_strings(daemon, 2, [0], b"a\0b\0"), "bad_request")  # segments too short
    assert_alive(daemon)


@pytest.mark.parametrize("raw", [b"\x00\x01\x02", b"\xff", b"\x01\x00\x01\x80", b"\x00" * 999 +
                                 b"\x02"], ids=["two", "ff", "80", "last"])
def test_put_bool_bytes_other_than_0_1(daemon, raw):
    fails(send(daemon, "put", {"objtype": "pdarray", "dtype": "bool", "shape": [len(raw)]},
               [raw], [{"name": "values", "nbytes": len(raw)}]), "bad_request")
    assert_alive(daemon)


def test_put_type_mismatches(daemon):
    either = ("type_error", "bad_request")
    fails_any(send(daemon, "put", {"objtype": "strings", "dtype": "int64", "shape": [1]},
                   [b"\0" * 8 + b"a\0"], [{"name": "segments", "nbytes": 8},
                                          {"name": "values", "nbytes": 2}]), either)
    fails_any(send(daemon, "put", {"objtype": "pdarray", "dtype": "str", "shape": [1]},
                   [b"a"], [{"name": "values", "nbytes": 1}]), either)
    fails_any(send(daemon, "create", {"dtype": "str", "size": 3}), either)
    assert_alive(daemon)


# ---------------------------------------------------------------- absurd sizes and memory

@pytest.mark.parametrize("args", [
    {"dtype": "int64", "size": 2**62, "fill": "zeros"},
    {"dtype": "int64", "size": 2**64 - 1, "fill": "empty"},
    {"dtype": "int8", "shape": [2**63], "fill": "ones"},
    {"dtype": "float64", "size": 2**62, "fill": "uniform", "low": 0, "high": 1, "seed": 1},
    {"dtype": "int64", "fill": "arange", "start": 0, "stop": 2**63 - 1, "step": 1},
    {"dtype": "int64", "fill": "arange", "start": -2**63, "stop": 2**63 - 1, "step": 1},
    {"dtype": "float64", "fill": "arange", "start": 0, "stop": 1e300, "step": 1e-300},
], ids=["size62", "size64", "shape63", "uniform62", "arange63", "arange-full", "arange-float"])
def test_absurd_create_sizes(daemon, args):
    fails_any(send(daemon, "create", args, timeout_ms=LONG), ("resource_limit", "bad_request"))
    assert_alive(daemon)


@pytest.mark.parametrize("shape", [[2, 3], [2**32, 2**32], [2**40, 2**40, 2**40], []], ids=repr)
def test_create_shape_not_one_dimension(daemon, shape):
    fails_any(send(daemon, "create", {"dtype": "int64", "shape": shape, "fill": "zeros"}),
              ("bad_request", "resource_limit"))
    assert_alive(daemon)


def test_absurd_put_sizes(daemon):
    either = ("resource_limit", "bad_request")
    for dtype, shape in (("int64", [2**40]), ("int8", [2**62]), ("uint64", [2**64 - 1]),
                         ("float64", [2**61])):
        fails_any(send(daemon, "put", {"objtype": "pdarray", "dtype": dtype, "shape": shape},
                       [b"\0" * 64], [{"name": "values", "nbytes": 64}]), either)
    fails_any(send(daemon, "put", {"objtype": "strings", "dtype": "str", "shape": [2**40]},
                   [b"\0" * 16], [{"name": "segments", "nbytes": 8},
                                  {"name": "values", "nbytes": 8}]), either)
    # a huge declared buffer with a small payload
    fails_any(send(daemon, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [2**40]},
                   [b"\0" * 64], [{"name": "values", "nbytes": 2**43}]), either)
    assert_alive(daemon)


def test_max_memory_enforced(start_daemon):
    d = start_daemon(locales=3, max_memory="1M")
    cfg = ok(send(d, "getconfig"))
    assert cfg["max_memory"] == 2**20, cfg
    base = cfg["memory_used"]
    fails(send(d, "create", {"dtype": "float64", "size": 200_000, "fill": "zeros"}),
          "resource_limit")
    fails(send(d, "create", {"dtype": "int8", "size": 2**20 + 1, "fill": "ones"}),
          "resource_limit")
    assert ok(send(d, "getconfig"))["memory_used"] == base  # failures leave nothing behind
    a = create(d, dtype="int64", size=50_000, fill="arange", start=0, stop=50_000, step=1)
    used = ok(send(d, "getconfig"))["memory_used"]
    assert used >= base + 400_000, (base, used)
    # the rest no longer fits, though it alone would
    fails(send(d, "create", {"dtype": "int64", "size": 90_000, "fill": "zeros"}),
          "resource_limit")
    big = np.zeros(90_000, dtype="<i8").tobytes()
    hdr, _ = send(d, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [90_000]},
                  chunks(big, 2**16), [{"name": "values", "nbytes": len(big)}])
    fails((hdr, []), "resource_limit")
    assert delete(d, a["name"]) == [a["name"]]
    assert ok(send(d, "getconfig"))["memory_used"] == base
    b = create(d, dtype="int64", size=90_000, fill="zeros")["name"]  # fits now
    assert ok(send(d, "getconfig"))["memory_used"] > base
    s = put_strings(d, ["abc"] * 1000)
    delete(d, b, s)
    assert ok(send(d, "getconfig"))["memory_used"] == base
    assert_alive(d)


def test_request_larger_than_memory_cap(start_daemon):
    d = start_daemon(locales=2, max_memory="1M")
    big = b"\0" * (3 * 2**19)  # 1.5 MiB
    args = {"objtype": "pdarray", "dtype": "uint8", "shape": [len(big)]}
    fails(send(d, "put", args, chunks(big, 2**18), [{"name": "values", "nbytes": len(big)}],
               id=61), "resource_limit", id=61)
    assert_alive(d)
    small = b"\1" * 1000
    name = ok(send(d, "put", {**args, "shape": [1000]}, [small],
                   [{"name": "values", "nbytes": 1000}]))["object"]["name"]
    assert get_array(d, name, "uint8").tobytes() == small


def test_object_names_too_long(daemon):
    fails_any(send(daemon, "create", {"dtype": "int8", "size": 1, "name": "n" * 100000}),
              ("bad_request", "resource_limit"))
    fails_any(send(daemon, "get", {"name": "n" * 5_000_000}),
              ("not_found", "bad_request", "resource_limit"))
    fails_any(send(daemon, "create", {"dtype": "int8", "size": 1, "name": ""}),
              ("bad_request",))
    assert_alive(daemon)


def test_delete_while_get_in_flight(daemon):
    data = np.arange(6_000_000, dtype="<i8")  # 48 MB, many reply frames
    raw = data.tobytes()
    for cmd in ("delete", "clear"):
        name = put_array(daemon, data, split=lambda b: chunks(b, 2**20))
        sock = _ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(daemon.endpoint)
        try:
            for i in range(4):
                sock.send_multipart([msgpack.packb({"v": 1, "id": 70 + i, "cmd": "get",
                                                    "args": {"name": name}})])
            args = {"names": [name]} if cmd == "delete" else None
            hdr, _ = send(daemon, cmd, args)
            assert hdr.get("ok") is True, hdr
            for _ in range(4):
                assert sock.poll(LONG), "no reply"
                parts = sock.recv_multipart()
                hdr = msgpack.unpackb(parts[0])
                if hdr.get("ok"):  # served before or while the object went away
                    assert split_buffers(hdr, parts[1:])["values"] == raw, hdr
                else:
                    fails((hdr, parts[1:]), "not_found", id=...)
        finally:
            sock.close()
        assert not exists(daemon, name)
    assert_alive(daemon)


def test_unknown_object_names(daemon):
    missing = unique("missing")
    fails(send(daemon, "get", {"name": missing}), "not_found", mentions=missing)
    fails(send(daemon, "get", {"name": missing, "start": 0, "stop": 0}), "not_found")
    fails(send(daemon, "info", {"names": [missing]}), "not_found", mentions=missing)
    fails(send(daemon, "delete", {"names": [missing]}), "not_found", mentions=missing)
    assert_alive(daemon)


# ---------------------------------------------------------------- auth

def test_token_auth(start_daemon):
    d = start_daemon(locales=2, token="s3cret")
    ep = d.endpoint
    fails(request(ep, {"v": 1, "id": 41, "cmd": "ping"}), "unauthorized", id=41)
    fails(request(ep, {"v": 1, "id": 42, "cmd": "ping", "token": "wrong"}), "unauthorized",
          id=42)
    for wrong in ("", "s3cre", "s3crett", "S3CRET", "s3cret\n", " s3cret"):
        fails(request(ep, {"v": 1, "id": 43, "cmd": "getconfig", "token": wrong}),
              "unauthorized", id=43)
    fails(request(ep, {"v": 1, "id": 44, "cmd": "create", "token": "nope",
                       "args": {"dtype": "int8", "size": 3}}), "unauthorized", id=44)
    fails_any(request(ep, {"v": 1, "id": 45, "cmd": "unknowncmd"}),
              ("unauthorized", "unknown_command"), id=45)
    fails_any(request(ep, {"v": 1, "id": 46, "cmd": "ping", "token": 5}),
              ("bad_request", "unauthorized"), id=46)
    fails_raw(d, b"\xc1")  # malformed input gets bad_request, token or not
    assert ok(request(ep, {"v": 1, "id": 47, "cmd": "ping", "token": "s3cret"}), id=47) == \
        {"pong": True}
    cfg = ok(send(d, "getconfig"))
    check_config(cfg, 2, auth=True)
    name = put_array(d, np.arange(4, dtype="<i4"))
    assert get_array(d, name, "int32").tolist() == [0, 1, 2, 3]
    fails(request(ep, {"v": 1, "id": 49, "cmd": "info"}), "unauthorized", id=49)
    fails(request(ep, {"v": 1, "id": 50, "cmd": "shutdown", "token": "x"}), "unauthorized",
          id=50)
    assert d.alive()
    assert ok(send(d, "shutdown")) == {"stopping": True}
    assert d.proc.wait(30) == 0


def test_no_auth_daemon_accepts_any_token(daemon):
    assert ok(send(daemon, "getconfig"))["auth"] is False
    assert ok(request(daemon.endpoint, {"v": 1, "id": 7, "cmd": "ping", "token": "whatever"}))


# ---------------------------------------------------------------- concurrency

def test_slow_request_does_not_block_pings(daemon):
    done, result = threading.Event(), {}

    def slow():
        try:
            result["reply"] = send(daemon, "create", {"dtype": "float64", "size": 200_000_000,
                                                      "fill": "uniform", "low": -1.0,
                                                      "high": 1.0, "seed": 11},
                                   timeout_ms=300000)
        except Exception as e:  # reported below
            result["error"] = e
        finally:
            done.set()

    t = threading.Thread(target=slow)
    t.start()
    pings = 0
    try:
        while not done.is_set() or pings < 20:
            assert ok(send(daemon, "ping", id=pings), id=pings) == {"pong": True}
            pings += 1
            if pings > 100000:
                break
    finally:
        t.join(310)
    assert "error" not in result, result
    desc = ok(result["reply"])["object"]
    check_desc(desc, "pdarray", "float64", 200_000_000)
    part = get_array(daemon, desc["name"], "float64", 99_999_000, 100_001_000)
    assert part.min() >= -1.0 and part.max() < 1.0
    delete(daemon, desc["name"])


def test_many_threads_mixed_requests(daemon):
    errors = []

    def worker(t):
        rng = np.random.default_rng(t)
        sock = _ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(daemon.endpoint)
        counter = [t * 100000]

        def rpc(cmd, args=None, frames=(), buffers=None):
            counter[0] += 1
            hdr = {"v": 1, "id": counter[0], "cmd": cmd}
            if args is not None:
                hdr["args"] = args
            if buffers is not None:
                hdr["buffers"] = buffers
            sock.send_multipart([msgpack.packb(hdr), *frames])
            if not sock.poll(60000):
                raise AssertionError(f"thread {t}: no reply to {cmd}")
            parts = sock.recv_multipart()
            reply = msgpack.unpackb(parts[0])
            assert reply.get("id") == counter[0], (reply, counter[0])
            return reply, parts[1:]

        try:
            names = []
            for i in range(200):
                kind = i % 8
                if kind == 0:
                    assert ok(rpc("ping"), id=None) == {"pong": True}
                elif kind == 1:
                    data = rng.integers(-1000, 1000, int(rng.integers(0, 300))).astype("<i4")
                    raw = data.tobytes()
                    desc = ok(rpc("put", {"objtype": "pdarray", "dtype": "int32",
                                          "shape": [data.size]}, one_frame(raw),
                                  [{"name": "values", "nbytes": len(raw)}]), id=None)["object"]
                    hdr, frames = rpc("get", {"name": desc["name"]})
                    ok((hdr, frames), id=None)
                    assert split_buffers(hdr, frames)["values"] == raw
                    names.append(desc["name"])
                elif kind == 2:
                    n = int(rng.integers(1, 500))
                    desc = ok(rpc("create", {"dtype": "int64", "size": n, "fill": "arange",
                                             "start": t, "stop": t + n, "step": 1}),
                              id=None)["object"]
                    hdr, frames = rpc("get", {"name": desc["name"], "start": n - 1, "stop": n})
                    ok((hdr, frames), id=None)
                    got = np.frombuffer(split_buffers(hdr, frames)["values"], dtype="<i8")
                    assert got.tolist() == [t + n - 1]
                    names.append(desc["name"])
                elif kind == 3:
                    strs = [f"t{t}-{i}-{k}" * k for k in range(int(rng.integers(0, 20)))]
                    seg, val = encode_strings(strs)
                    desc = ok(rpc("put", {"objtype": "strings", "dtype": "str",
                                          "shape": [len(strs)]}, one_frame(seg + val),
                                  strings_buffers(seg, val)), id=None)["object"]
                    hdr, frames = rpc("get", {"name": desc["name"]})
                    ok((hdr, frames), id=None)
                    bufs = split_buffers(hdr, frames)
                    assert decode_strings(bufs["segments"], bufs["values"]) == strs
                    names.append(desc["name"])
                elif kind == 4 and names:
                    objs = ok(rpc("info", {"names": names[-2:]}), id=None)["objects"]
                    assert [o["name"] for o in objs] == names[-2:]
                elif kind == 5:
                    fails(rpc("get", {"name": f"missing-{t}-{i}"}), "not_found", id=...)
                elif kind == 6 and names:
                    victim = names.pop(0)
                    assert ok(rpc("delete", {"names": [victim]}), id=None)["deleted"] == [victim]
                elif kind == 7:
                    cfg = ok(rpc("getconfig"), id=None)
                    assert cfg["locales"] == LOCALES
                else:
                    fails(rpc("frobnicate"), "unknown_command", id=...)
            if names:
                ok(rpc("delete", {"names": names}), id=None)
        except Exception as e:
            errors.append(f"thread {t}: {e!r}")
        finally:
            sock.close()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)
    assert not any(th.is_alive() for th in threads)
    assert not errors, errors
    assert_alive(daemon)


def test_daemon_survived_everything(daemon):
    """Runs last in this module: the shared daemon is still up and answering."""
    assert_alive(daemon)
    assert "AddressSanitizer" not in daemon.read_log()
    assert "runtime error" not in daemon.read_log()
