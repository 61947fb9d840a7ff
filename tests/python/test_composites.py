"""Composite objects against a real daemon, with nothing but pyzmq, msgpack and numpy:
segarray, dataframe, index / multiindex, reshape (pdarray <-> arrayview), bigint pdarrays
and tags; descriptors, component paths, empty objects, more locales than elements, and
every malformed constructor call (see protocol/PROTOCOL.md, "Composite objects")."""
import numpy as np
import pytest

from wire import (assert_alive, check_desc, decode_strings, encode_strings, fails, get, ok, put_array,
                  put_strings, send, unique)


# ---------------------------------------------------------------- helpers


def info(d, name):
    res = ok(send(d, "info", {"names": [name]}))
    assert len(res["objects"]) == 1, res
    return res["objects"][0]


def memory_used(d):
    return ok(send(d, "getconfig"))["memory_used"]


def i64(b):
    return np.frombuffer(b, dtype="<i8")


def u64(b):
    return np.frombuffer(b, dtype="<u8")


def segarray(d, segments, values, name=None):
    return send(d, "segarray", {"segments": segments, "values": values,
                                "name": name or unique("sa")})


def put_bigint(d, limbs, max_bits=None, name=None, buffers=None, shape=None):
    """limbs: list of uint64 arrays, least significant first."""
    data = [np.asarray(l, dtype="<u8").tobytes() for l in limbs]
    n = len(limbs[0]) if limbs else 0
    args = {"objtype": "pdarray", "dtype": "bigint", "shape": [shape if shape is not None else n],
            "name": name or unique("big")}
    if max_bits is not None:
        args["max_bits"] = max_bits
    if buffers is None:
        buffers = [{"name": f"Limb_{i}", "nbytes": len(b)} for i, b in enumerate(data)]
    return send(d, "put", args, [b"".join(data)] if any(data) else [], buffers)


def to_limbs(values, k):
    return [np.array([(v >> (64 * j)) & (2**64 - 1) for v in values], dtype=np.uint64)
            for j in range(k)]


def from_limbs(bufs, k):
    limbs = [u64(bufs[f"Limb_{j}"]) for j in range(k)]
    return [sum(int(limbs[j][i]) << (64 * j) for j in range(k)) for i in range(len(limbs[0]))]


# ---------------------------------------------------------------- segarray

def test_segarray_numeric(daemon):
    vals = put_array(daemon, np.arange(10, dtype=np.int64) * 3)
    segs = put_array(daemon, np.array([0, 3, 3, 7], dtype=np.int64))
    name = unique("sa")
    desc = ok(segarray(daemon, segs, vals, name))["object"]
    check_desc(desc, "segarray", "int64", 4, name, ["segments", "values"])
    assert desc["components"]["segments"]["objtype"] == "pdarray"
    assert desc["components"]["values"]["size"] == 10
    obj, bufs = get(daemon, name)
    assert obj["name"] == name
    assert list(bufs) == ["segments/values", "values/values"]
    assert list(i64(bufs["segments/values"])) == [0, 3, 3, 7]
    assert list(i64(bufs["values/values"])) == list(np.arange(10) * 3)
    # component paths in get and info
    obj, bufs = get(daemon, f"{name}/values")
    assert obj["name"] == f"{name}/values" and list(bufs) == ["values"]
    assert list(i64(bufs["values"])) == list(np.arange(10) * 3)
    d = info(daemon, f"{name}/segments")
    check_desc(d, "pdarray", "int64", 4, f"{name}/segments")
    # the components are shared: deleting the originals keeps the segarray whole
    ok(send(daemon, "delete", {"names": [vals, segs]}))
    _, bufs = get(daemon, name)
    assert list(i64(bufs["segments/values"])) == [0, 3, 3, 7]
    # element ranges do not apply to a segarray
    fails(send(daemon, "get", {"name": name, "start": 1}), "bad_request")


def test_segarray_of_strings(daemon):
    words = ["alpha", "", "gamma", "δέλτα", "e"]
    vals = put_strings(daemon, words)
    segs = put_array(daemon, np.array([0, 2, 2, 5], dtype=np.int64))
    name = unique("sas")
    desc = ok(segarray(daemon, segs, vals, name))["object"]
    check_desc(desc, "segarray", "str", 4, name, ["segments", "values"])
    assert desc["components"]["values"]["objtype"] == "strings"
    _, bufs = get(daemon, name)
    assert list(bufs) == ["segments/values", "values/segments", "values/values"]
    assert decode_strings(bufs["values/segments"], bufs["values/values"]) == words
    # a path two levels deep
    _, bufs = get(daemon, f"{name}/values")
    assert decode_strings(bufs["segments"], bufs["values"]) == words


def test_segarray_empty(daemon):
    # no sub-arrays at all
    name = unique("sa0")
    desc = ok(segarray(daemon, put_array(daemon, np.array([], dtype=np.int64)),
                       put_array(daemon, np.array([], dtype=np.float64)), name))["object"]
    check_desc(desc, "segarray", "float64", 0, name, ["segments", "values"])
    _, bufs = get(daemon, name)
    assert bufs == {"segments/values": b"", "values/values": b""}
    # only empty sub-arrays, and empty sub-arrays at the end
    desc = ok(segarray(daemon, put_array(daemon, np.zeros(4, dtype=np.int64)),
                       put_array(daemon, np.array([], dtype=np.int32))))["object"]
    assert desc["size"] == 4 and desc["dtype"] == "int32"
    desc = ok(segarray(daemon, put_array(daemon, np.array([0, 2, 5, 5, 5], dtype=np.int64)),
                       put_array(daemon, np.arange(5, dtype=np.uint8))))["object"]
    assert desc["size"] == 5
    # empty strings values
    desc = ok(segarray(daemon, put_array(daemon, np.array([0, 0], dtype=np.int64)),
                       put_strings(daemon, [])))["object"]
    assert desc["size"] == 2 and desc["dtype"] == "str"


@pytest.mark.parametrize("segs,nvalues,mentions", [
    ([1, 2, 3], 5, "segments[0] = 1"),
    ([-1, 2, 3], 5, "segments[0] = -1"),
    ([0, 2, 1, 3], 5, "segments[2] = 1"),
    ([0, 2, 3, 6], 5, "[3] = 6"),
    ([0, 0, 0, 0, 0, 0, 0, 0, 9], 5, "[8] = 9"),
])
def test_segarray_bad_segments(daemon, segs, nvalues, mentions):
    s = put_array(daemon, np.array(segs, dtype=np.int64))
    v = put_array(daemon, np.arange(nvalues, dtype=np.int64))
    msg = fails(segarray(daemon, s, v), "bad_request", ["segments", mentions])
    assert "values" in msg or "start at 0" in msg or "decrease" in msg
    assert_alive(daemon)


def test_segarray_first_offender_across_locales(daemon):
    """The check runs on every locale; the error names the first bad element overall,
    including a decrease exactly at a shard boundary."""
    n = 3000  # 3 locales: shards start at 0, 1000, 2000
    segs = np.arange(n, dtype=np.int64)
    segs[2500] = 0    # bad on the last locale
    segs[1000] = 998  # bad at the first element of the second shard
    s = put_array(daemon, segs)
    v = put_array(daemon, np.zeros(n, dtype=np.int8))
    fails(segarray(daemon, s, v), "bad_request", "segments[1000] = 998")
    segs[1000] = 1000
    s = put_array(daemon, segs)
    fails(segarray(daemon, s, v), "bad_request", "segments[2500] = 0")
    segs[2500] = 2500
    s = put_array(daemon, segs)
    ok(segarray(daemon, s, v))


def test_segarray_bad_types(daemon):
    v = put_array(daemon, np.arange(5, dtype=np.int64))
    s32 = put_array(daemon, np.array([0, 1], dtype=np.int32))
    fails(segarray(daemon, s32, v), "type_error", ["segments", "int32"])
    sf = put_array(daemon, np.array([0, 1], dtype=np.float64))
    fails(segarray(daemon, sf, v), "type_error", "segments")
    s = put_array(daemon, np.array([0, 1], dtype=np.int64))
    fails(segarray(daemon, put_strings(daemon, ["a", "b"]), v), "type_error", "segments")
    sa = ok(segarray(daemon, s, v))["object"]["name"]
    fails(segarray(daemon, s, sa), "type_error", ["values", "segarray"])
    fails(segarray(daemon, s, "no_such_object"), "not_found", ["values", "no_such_object"])
    fails(segarray(daemon, "nope/segments", v), "not_found", "segments")
    fails(send(daemon, "segarray", {"segments": s}), "bad_request", "values")
    fails(send(daemon, "segarray", {"segments": s, "values": v, "bogus": 1}), "bad_request",
          "bogus")
    fails(send(daemon, "segarray", {"segments": 3, "values": v}), "bad_request", "segments")
    name = unique("dup")
    ok(segarray(daemon, s, v, name))
    fails(segarray(daemon, s, v, name), "already_exists", name)
    assert_alive(daemon)


# ---------------------------------------------------------------- index

def test_index_one_level(daemon):
    lvl = put_array(daemon, np.array([5, 3, 9], dtype=np.int64))
    name = unique("ix")
    desc = ok(send(daemon, "index", {"levels": [lvl], "name": name}))["object"]
    check_desc(desc, "index", "int64", 3, name, ["IDX_0"])
    assert desc["names"] == [None]
    _, bufs = get(daemon, name)
    assert list(bufs) == ["IDX_0/values"]
    assert list(i64(bufs["IDX_0/values"])) == [5, 3, 9]
    desc = ok(send(daemon, "index", {"levels": [lvl], "names": ["k"]}))["object"]
    assert desc["objtype"] == "index" and desc["names"] == ["k"]


def test_multiindex(daemon):
    a = put_array(daemon, np.array([1.5, 2.5], dtype=np.float64))
    b = put_strings(daemon, ["x", "yy"])
    name = unique("mi")
    desc = ok(send(daemon, "index", {"levels": [a, b], "names": ["f", "s"],
                                     "name": name}))["object"]
    check_desc(desc, "multiindex", "int64", 2, name, ["IDX_0", "IDX_1"])
    assert desc["names"] == ["f", "s"]
    assert desc["components"]["IDX_1"]["objtype"] == "strings"
    _, bufs = get(daemon, name)
    assert list(bufs) == ["IDX_0/values", "IDX_1/segments", "IDX_1/values"]
    assert decode_strings(bufs["IDX_1/segments"], bufs["IDX_1/values"]) == ["x", "yy"]
    assert info(daemon, f"{name}/IDX_1")["objtype"] == "strings"
    # empty levels
    desc = ok(send(daemon, "index", {"levels": [put_array(daemon, np.array([], np.int64)),
                                                put_strings(daemon, [])]}))["object"]
    assert desc["objtype"] == "multiindex" and desc["size"] == 0
    assert desc["names"] == [None, None]


def test_index_bad(daemon):
    a = put_array(daemon, np.arange(3, dtype=np.int64))
    b = put_array(daemon, np.arange(4, dtype=np.int64))
    c = put_array(daemon, np.arange(3, dtype=np.int64))
    fails(send(daemon, "index", {"levels": [a, c, b]}), "bad_request",
          ["levels'[2]", b, "4", "3"])
    fails(send(daemon, "index", {"levels": []}), "bad_request", "levels")
    fails(send(daemon, "index", {"levels": [a, c], "names": ["x"]}), "bad_request", "names")
    fails(send(daemon, "index", {"levels": [a, "missing_level"]}), "not_found",
          ["levels'[1]", "missing_level"])
    sa = ok(segarray(daemon, put_array(daemon, np.array([0, 1, 2], np.int64)), a))["object"]["name"]
    fails(send(daemon, "index", {"levels": [a, sa]}), "type_error", ["levels'[1]", "segarray"])
    fails(send(daemon, "index", {"levels": [a], "names": [1]}), "bad_request", "names")
    fails(send(daemon, "index", {}), "bad_request", "levels")
    assert_alive(daemon)


# ---------------------------------------------------------------- dataframe

def test_dataframe(daemon):
    rows = 7
    ints = put_array(daemon, np.arange(rows, dtype=np.int64) - 3)
    strs = put_strings(daemon, [f"s{i}" * i for i in range(rows)])
    sa = ok(segarray(daemon, put_array(daemon, np.array([0, 1, 1, 4, 4, 6, 9], np.int64)),
                     put_array(daemon, np.arange(9, dtype=np.float32))))["object"]["name"]
    bools = put_array(daemon, np.arange(rows) % 2 == 0)
    names = ["zeta", "alpha", "mid", "b"]  # not alphabetical: the order must be kept
    name = unique("df")
    desc = ok(send(daemon, "dataframe", {"columns": [ints, strs, sa, bools],
                                         "column_names": names, "name": name}))["object"]
    check_desc(desc, "dataframe", "int64", rows, name, names)
    assert desc["columns"] == names
    assert desc["components"]["mid"]["objtype"] == "segarray"
    assert list(desc["components"]["mid"]["components"]) == ["segments", "values"]
    assert desc["components"]["mid"]["components"]["values"]["name"] == f"{name}/mid/values"
    _, bufs = get(daemon, name)
    assert list(bufs) == ["zeta/values", "alpha/segments", "alpha/values", "mid/segments/values",
                          "mid/values/values", "b/values"]
    assert list(i64(bufs["zeta/values"])) == list(range(-3, 4))
    assert decode_strings(bufs["alpha/segments"], bufs["alpha/values"]) == \
        [f"s{i}" * i for i in range(rows)]
    assert list(np.frombuffer(bufs["mid/values/values"], "<f4")) == list(range(9))
    assert bufs["b/values"] == bytes([1, 0, 1, 0, 1, 0, 1])
    # component paths, two levels deep
    obj, bufs = get(daemon, f"{name}/mid/values")
    assert obj["objtype"] == "pdarray" and obj["name"] == f"{name}/mid/values"
    assert info(daemon, f"{name}/alpha")["objtype"] == "strings"
    fails(send(daemon, "get", {"name": f"{name}/nope"}), "not_found", "nope")
    # a dataframe from component paths: default column names are their last parts
    desc = ok(send(daemon, "dataframe", {"columns": [f"{name}/zeta", f"{name}/alpha"]}))["object"]
    assert desc["columns"] == ["zeta", "alpha"]


def test_dataframe_default_names_and_index(daemon):
    a = put_array(daemon, np.arange(4, dtype=np.int64), name=unique("colA"))
    b = put_strings(daemon, ["w", "x", "y", "z"], name=unique("colB"))
    ix = put_array(daemon, np.array([10, 20, 30, 40], np.int64))
    desc = ok(send(daemon, "dataframe", {"columns": [b, a], "index": ix}))["object"]
    assert desc["columns"] == [b, a]
    assert list(desc["components"]) == [b, a, "Index"]
    idx = desc["components"]["Index"]
    assert idx["objtype"] == "index" and list(idx["components"]) == ["IDX_0"]
    _, bufs = get(daemon, desc["name"])
    assert list(i64(bufs["Index/IDX_0/values"])) == [10, 20, 30, 40]
    # an index object given directly, and a multiindex
    ixo = ok(send(daemon, "index", {"levels": [ix], "names": ["k"]}))["object"]["name"]
    desc = ok(send(daemon, "dataframe", {"columns": [a], "index": ixo}))["object"]
    assert desc["components"]["Index"]["names"] == ["k"]
    mi = ok(send(daemon, "index", {"levels": [ix, b]}))["object"]["name"]
    desc = ok(send(daemon, "dataframe", {"columns": [a, b], "column_names": ["x", "y"],
                                         "index": mi}))["object"]
    assert desc["components"]["Index"]["objtype"] == "multiindex"
    _, bufs = get(daemon, desc["name"])
    assert list(bufs) == ["x/values", "y/segments", "y/values", "Index/IDX_0/values",
                          "Index/IDX_1/segments", "Index/IDX_1/values"]


def test_dataframe_empty(daemon):
    s = put_strings(daemon, [])
    n = put_array(daemon, np.array([], dtype=np.float64))
    name = unique("df0")
    desc = ok(send(daemon, "dataframe", {"columns": [s, n], "column_names": ["s", "n"],
                                         "name": name}))["object"]
    check_desc(desc, "dataframe", "int64", 0, name, ["s", "n"])
    assert desc["components"]["s"]["objtype"] == "strings"
    _, bufs = get(daemon, name)
    assert bufs == {"s/segments": b"", "s/values": b"", "n/values": b""}
    # no columns at all
    desc = ok(send(daemon, "dataframe", {"columns": []}))["object"]
    assert desc["size"] == 0 and desc["columns"] == []


def test_dataframe_bad(daemon):
    a = put_array(daemon, np.arange(3, dtype=np.int64))
    b = put_array(daemon, np.arange(3, dtype=np.int64))
    short = put_array(daemon, np.arange(2, dtype=np.int64))
    fails(send(daemon, "dataframe", {"columns": [a, b, short]}), "bad_request",
          ["columns'[2]", short, "2 rows", "3"])
    fails(send(daemon, "dataframe", {"columns": [a, b], "column_names": ["x", "y", "z"]}),
          "bad_request", "column_names")
    fails(send(daemon, "dataframe", {"columns": [a, b, a], "column_names": ["x", "y", "x"]}),
          "bad_request", ["column 2", "'x'", "column 0"])
    fails(send(daemon, "dataframe", {"columns": [a, a]}), "bad_request", "distinct")
    fails(send(daemon, "dataframe", {"columns": [a, "gone"]}), "not_found",
          ["columns'[1]", "gone"])
    fails(send(daemon, "dataframe", {"columns": [a], "index": "gone"}), "not_found", "index")
    fails(send(daemon, "dataframe", {"columns": [a], "index": short}), "bad_request",
          ["index", "2", "3"])
    fails(send(daemon, "dataframe", {"columns": [a, b], "column_names": ["x", "a/b"]}),
          "bad_request", "column name 1")
    fails(send(daemon, "dataframe", {"columns": [a], "column_names": [""]}), "bad_request",
          "column name 0")
    fails(send(daemon, "dataframe", {"columns": [a, b], "column_names": ["x", "Index"],
                                     "index": b}), "bad_request", "Index")
    df = ok(send(daemon, "dataframe", {"columns": [a]}))["object"]["name"]
    fails(send(daemon, "dataframe", {"columns": [a, df], "column_names": ["x", "y"]}),
          "type_error", ["columns'[1]", "dataframe"])
    sa = ok(segarray(daemon, put_array(daemon, np.array([0, 1, 2], np.int64)), a))["object"]["name"]
    fails(send(daemon, "dataframe", {"columns": [a], "index": sa}), "type_error",
          ["index", "segarray"])
    av = ok(send(daemon, "reshape", {"array": put_array(daemon, np.arange(6.0)),
                                     "shape": [3, 2]}))["object"]["name"]
    fails(send(daemon, "dataframe", {"columns": [a, av], "column_names": ["x", "y"]}),
          "type_error", "arrayview")
    fails(send(daemon, "dataframe", {"columns": a}), "bad_request", "columns")
    assert_alive(daemon)


def test_categorical_columns_and_levels(daemon):
    """Any object of the right length works as a column or level, categoricals included."""
    vals = put_strings(daemon, ["b", "a", "b", "c"])
    hdr, _ = send(daemon, "categorical", {"values": vals})
    if not hdr.get("ok") and hdr["error"]["code"] in ("unknown_command", "bad_request"):
        pytest.skip("the categorical command is not available in this build")
    cat = ok((hdr, []))["object"]["name"]
    a = put_array(daemon, np.arange(4, dtype=np.int64))
    desc = ok(send(daemon, "dataframe", {"columns": [a, cat], "column_names": ["n", "c"],
                                         "index": cat}))["object"]
    assert desc["components"]["c"]["objtype"] == "categorical"
    assert desc["components"]["Index"]["components"]["IDX_0"]["objtype"] == "categorical"
    desc = ok(send(daemon, "index", {"levels": [a, cat]}))["object"]
    assert desc["objtype"] == "multiindex"
    _, bufs = get(daemon, desc["name"])
    assert any(k.startswith("IDX_1/codes/") for k in bufs), list(bufs)


# ---------------------------------------------------------------- reshape / arrayview

def test_reshape_round_trip(daemon):
    data = np.arange(24, dtype=np.float64) * 1.5
    src = put_array(daemon, data)
    used = memory_used(daemon)
    name = unique("av")
    desc = ok(send(daemon, "reshape", {"array": src, "shape": [2, 3, 4], "name": name}))["object"]
    assert desc["objtype"] == "arrayview" and desc["name"] == name
    assert desc["shape"] == [2, 3, 4] and desc["ndim"] == 3 and desc["size"] == 24
    assert desc["dtype"] == "float64" and desc["itemsize"] == 8
    assert memory_used(daemon) == used  # shared, not copied
    obj, bufs = get(daemon, name)
    assert obj["shape"] == [2, 3, 4] and list(bufs) == ["values"]
    assert np.array_equal(np.frombuffer(bufs["values"], "<f8"), data)
    _, bufs = get(daemon, name, start=1, stop=2)  # first-axis rows
    assert np.array_equal(np.frombuffer(bufs["values"], "<f8"), data[12:24])
    # arrayview -> arrayview -> pdarray, after the source is gone
    ok(send(daemon, "delete", {"names": [src]}))
    av2 = ok(send(daemon, "reshape", {"array": name, "shape": [4, 6]}))["object"]
    assert av2["objtype"] == "arrayview" and av2["shape"] == [4, 6] and av2["ndim"] == 2
    flat = ok(send(daemon, "reshape", {"array": av2["name"], "shape": [24]}))["object"]
    assert flat["objtype"] == "pdarray" and flat["shape"] == [24] and flat["ndim"] == 1
    _, bufs = get(daemon, flat["name"])
    assert np.array_equal(np.frombuffer(bufs["values"], "<f8"), data)
    assert info(daemon, name)["shape"] == [2, 3, 4]
    # 32 dimensions is the limit; zero-size dimensions are fine for an empty array
    one = put_array(daemon, np.array([7], dtype=np.int16))
    desc = ok(send(daemon, "reshape", {"array": one, "shape": [1] * 32}))["object"]
    assert desc["ndim"] == 32 and desc["objtype"] == "arrayview"
    empty = put_array(daemon, np.array([], dtype=np.int64))
    desc = ok(send(daemon, "reshape", {"array": empty, "shape": [0, 5]}))["object"]
    assert desc["shape"] == [0, 5] and desc["size"] == 0
    _, bufs = get(daemon, desc["name"])
    assert bufs == {"values": b""}


def test_reshape_bad(daemon):
    src = put_array(daemon, np.arange(12, dtype=np.int32))
    fails(send(daemon, "reshape", {"array": src, "shape": [5, 2]}), "bad_request",
          ["[5, 2]", "10", "12"])
    fails(send(daemon, "reshape", {"array": src, "shape": []}), "bad_request", "shape")
    fails(send(daemon, "reshape", {"array": src, "shape": [1] * 33}), "bad_request", "33")
    fails(send(daemon, "reshape", {"array": src, "shape": [2**40, 2**40, 2**40]}),
          "bad_request", "shape")
    fails(send(daemon, "reshape", {"array": src, "shape": [0, 12]}), "bad_request", "shape")
    fails(send(daemon, "reshape", {"array": src, "shape": [-3, -4]}), "bad_request", "shape")
    fails(send(daemon, "reshape", {"array": put_strings(daemon, ["a"]), "shape": [1, 1]}),
          "type_error", "strings")
    fails(send(daemon, "reshape", {"array": "nothing_here", "shape": [1]}), "not_found",
          "nothing_here")
    sa = ok(segarray(daemon, put_array(daemon, np.array([0], np.int64)), src))["object"]["name"]
    fails(send(daemon, "reshape", {"array": sa, "shape": [1]}), "type_error", "segarray")
    big = ok(put_bigint(daemon, to_limbs([1, 2], 1)))["object"]["name"]
    fails(send(daemon, "reshape", {"array": big, "shape": [2, 1]}), "type_error", "bigint")
    fails(send(daemon, "reshape", {"array": src}), "bad_request", "shape")
    assert_alive(daemon)


# ---------------------------------------------------------------- bigint

def test_bigint_round_trip(daemon):
    values = [0, 1, 2**64 - 1, 2**64, 2**100 + 12345, 2**127 + 2**63]
    name = unique("big")
    desc = ok(put_bigint(daemon, to_limbs(values, 2), name=name))["object"]
    check_desc(desc, "pdarray", "bigint", len(values), name, ["Limb_0", "Limb_1"])
    assert desc["max_bits"] == -1 and desc["itemsize"] == 16
    assert desc["shape"] == [len(values)] and desc["ndim"] == 1
    obj, bufs = get(daemon, name)
    assert list(bufs) == ["Limb_0", "Limb_1"]
    assert from_limbs(bufs, 2) == values
    _, bufs = get(daemon, name, start=2, stop=5)
    assert from_limbs(bufs, 2) == values[2:5]
    assert info(daemon, f"{name}/Limb_1")["dtype"] == "uint64"
    # with max_bits: values that fit are taken
    desc = ok(put_bigint(daemon, to_limbs([2**70 - 1, 5], 2), max_bits=70))["object"]
    assert desc["max_bits"] == 70
    desc = ok(put_bigint(daemon, to_limbs([0, 0], 3), max_bits=0))["object"]
    assert desc["max_bits"] == 0 and desc["itemsize"] == 24
    desc = ok(put_bigint(daemon, to_limbs([2**64 - 1], 1), max_bits=64))["object"]
    # empty
    desc = ok(put_bigint(daemon, [np.array([], np.uint64)]))["object"]
    assert desc["size"] == 0
    _, bufs = get(daemon, desc["name"])
    assert bufs == {"Limb_0": b""}
    # many elements over the locales, limbs in any buffer order
    vals = [i * 2**64 + i for i in range(1000)]
    limbs = to_limbs(vals, 2)
    data = [limbs[1].astype("<u8").tobytes(), limbs[0].astype("<u8").tobytes()]
    name = unique("bigr")
    ok(send(daemon, "put", {"objtype": "pdarray", "dtype": "bigint", "shape": [1000],
                            "name": name}, [b"".join(data)],
            [{"name": "Limb_1", "nbytes": 8000}, {"name": "Limb_0", "nbytes": 8000}]))
    _, bufs = get(daemon, name)
    assert from_limbs(bufs, 2) == vals
    # a bigint is a pdarray: it can be a dataframe column
    desc = ok(send(daemon, "dataframe", {"columns": [name]}))["object"]
    _, bufs = get(daemon, desc["name"])
    assert list(bufs) == [f"{name}/Limb_0", f"{name}/Limb_1"]


def test_bigint_max_bits_errors(daemon):
    fails(put_bigint(daemon, to_limbs([1, 2**70, 5], 2), max_bits=70), "type_error",
          ["element 1", "71 bits", "max_bits = 70"])
    fails(put_bigint(daemon, to_limbs([0, 0, 1], 2), max_bits=0), "type_error", "element 2")
    fails(put_bigint(daemon, to_limbs([3, 2**64], 2), max_bits=64), "type_error",
          ["element 1", "65 bits"])
    fails(put_bigint(daemon, to_limbs([255, 256], 1), max_bits=8), "type_error", "element 1")
    vals = [5] * 3000
    vals[2100] = 2**40
    vals[2900] = 2**50
    fails(put_bigint(daemon, to_limbs(vals, 1), max_bits=33), "type_error", "element 2100")
    fails(put_bigint(daemon, to_limbs([1], 1), max_bits=-2), "bad_request", "max_bits")
    fails(send(daemon, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [1],
                               "max_bits": 8}, [b"\0" * 8], [{"name": "values", "nbytes": 8}]),
          "bad_request", "max_bits")
    assert_alive(daemon)


def test_bigint_bad_buffers(daemon):
    l = np.arange(3, dtype="<u8").tobytes()
    base = {"objtype": "pdarray", "dtype": "bigint", "shape": [3]}

    def put_raw(buffers, frames):
        return send(daemon, "put", dict(base), frames, buffers)

    fails(put_raw([], []), "bad_request", "Limb_0")
    fails(put_raw([{"name": "values", "nbytes": 24}], [l]), "bad_request", "values")
    fails(put_raw([{"name": "Limb_0", "nbytes": 24}, {"name": "Limb_2", "nbytes": 24}], [l + l]),
          "bad_request", "Limb_2")
    fails(put_raw([{"name": "limb_0", "nbytes": 24}], [l]), "bad_request", "limb_0")
    fails(put_raw([{"name": "Limb_00", "nbytes": 24}], [l]), "bad_request", "Limb_00")
    fails(put_raw([{"name": "Limb_0", "nbytes": 24}, {"name": "Limb_0", "nbytes": 24}], [l + l]),
          "bad_request", "Limb_0")
    fails(put_raw([{"name": "Limb_0", "nbytes": 16}], [l[:16]]), "bad_request",
          ["Limb_0", "16"])
    fails(put_raw([{"name": "Limb_0", "nbytes": 24}, {"name": "Limb_1", "nbytes": 32}],
                  [l + l + b"\0" * 8]), "bad_request", ["Limb_1", "32"])
    fails(put_raw([{"name": "Limb_0", "nbytes": 24}], [l[:20]]), "bad_request")
    fails(send(daemon, "create", {"dtype": "bigint", "size": 3}), "type_error", "bigint")
    # a bigint is a SegArray's values as any pdarray is (Arkouda's layout holds it)
    seg = ok(send(daemon, "segarray", {"segments": put_array(daemon, np.array([0], np.int64)),
                                       "values": ok(put_bigint(daemon, to_limbs([1], 1)))
                                       ["object"]["name"]}))
    assert seg["object"]["objtype"] == "segarray", seg
    assert_alive(daemon)


# ---------------------------------------------------------------- tags

@pytest.mark.parametrize("tag,dtype", [("datetime64[ns]", "int64"), ("timedelta64[ns]", "int64"),
                                       ("ipv4", "uint64"), ("ipv4", "int64")])
def test_tags(daemon, tag, dtype):
    arr = np.array([0, 1, 3232235777], dtype=dtype)
    name = put_array(daemon, arr, tag=tag)
    d = info(daemon, name)
    assert d["tag"] == tag and d["dtype"] == dtype and d["objtype"] == "pdarray"
    _, bufs = get(daemon, name)
    assert np.array_equal(np.frombuffer(bufs["values"], np.dtype(dtype).newbyteorder("<")), arr)
    desc = ok(send(daemon, "create", {"dtype": dtype, "size": 4, "fill": "arange", "stop": 4,
                                      "tag": tag}))["object"]
    assert desc["tag"] == tag
    # kept by a 1-d reshape and inside composites
    flat = ok(send(daemon, "reshape", {"array": name, "shape": [3]}))["object"]
    assert flat["tag"] == tag
    df = ok(send(daemon, "dataframe", {"columns": [name]}))["object"]
    assert df["components"][name]["tag"] == tag


def test_untagged_has_no_tag(daemon):
    assert "tag" not in info(daemon, put_array(daemon, np.arange(3, dtype=np.int64)))


def test_tags_bad(daemon):
    data = np.arange(2, dtype="<u8").tobytes()

    def put_tag(dtype, tag, objtype="pdarray"):
        args = {"objtype": objtype, "dtype": dtype, "shape": [2], "tag": tag}
        return send(daemon, "put", args, [data], [{"name": "values", "nbytes": 16}])

    fails(put_tag("uint64", "datetime64[ns]"), "type_error", ["datetime64[ns]", "uint64"])
    fails(put_tag("float64", "timedelta64[ns]"), "type_error", "float64")
    fails(put_tag("int32", "ipv4"), "type_error", "int32")
    fails(put_tag("uint64", "date"), "bad_request", "tag")
    seg, val = encode_strings(["a", "b"])
    fails(send(daemon, "put", {"objtype": "strings", "shape": [2], "tag": "ipv4"}, [seg + val],
               [{"name": "segments", "nbytes": len(seg)}, {"name": "values", "nbytes": len(val)}]),
          "type_error", "tag")
    fails(send(daemon, "put", {"objtype": "pdarray", "dtype": "bigint", "shape": [2],
                               "tag": "ipv4"}, [data], [{"name": "Limb_0", "nbytes": 16}]),
          "type_error", "bigint")
    fails(send(daemon, "create", {"dtype": "float64", "size": 2, "tag": "datetime64[ns]"}),
          "type_error", "float64")
    fails(send(daemon, "create", {"dtype": "int64", "size": 2, "tag": 7}), "bad_request", "tag")
    assert_alive(daemon)


# ---------------------------------------------------------------- more locales than elements

def test_more_locales_than_elements(start_daemon):
    d = start_daemon(locales=5)
    # segarray: 2 sub-arrays over 5 locales, 3 values
    s = put_array(d, np.array([0, 2], np.int64))
    v = put_strings(d, ["a", "bb", "ccc"])
    desc = ok(segarray(d, s, v))["object"]
    _, bufs = get(d, desc["name"])
    assert list(i64(bufs["segments/values"])) == [0, 2]
    assert decode_strings(bufs["values/segments"], bufs["values/values"]) == ["a", "bb", "ccc"]
    # the check crosses empty shards to compare neighbours
    fails(segarray(d, put_array(d, np.array([0, 3, 1], np.int64)), v), "bad_request",
          "segments[2] = 1")
    fails(segarray(d, put_array(d, np.array([0, 4], np.int64)), v), "bad_request", "[1] = 4")
    # dataframe and index of 2 rows
    a = put_array(d, np.array([1, 2], np.int64))
    b = put_strings(d, ["x", ""])
    df = ok(send(d, "dataframe", {"columns": [a, b], "column_names": ["a", "b"],
                                  "index": b}))["object"]
    _, bufs = get(d, df["name"])
    assert list(i64(bufs["a/values"])) == [1, 2]
    assert decode_strings(bufs["b/segments"], bufs["b/values"]) == ["x", ""]
    assert decode_strings(bufs["Index/IDX_0/segments"], bufs["Index/IDX_0/values"]) == ["x", ""]
    # reshape and bigint with fewer elements than locales
    r = put_array(d, np.array([1.0, 2.0, 3.0]))
    av = ok(send(d, "reshape", {"array": r, "shape": [3, 1]}))["object"]
    _, bufs = get(d, av["name"])
    assert list(np.frombuffer(bufs["values"], "<f8")) == [1.0, 2.0, 3.0]
    big = ok(put_bigint(d, to_limbs([2**65, 7], 2), max_bits=66))["object"]
    _, bufs = get(d, big["name"])
    assert from_limbs(bufs, 2) == [2**65, 7]
    fails(put_bigint(d, to_limbs([2**65, 7], 2), max_bits=65), "type_error", "element 0")
    assert_alive(d)
