"""Objects from named parts and back (protocol/PROTOCOL.md, "Composite objects"): groupby of a
grouping given, categorical with na_code and its grouping, tag, unpack, and put of Strings
ended by their NULs, on a real daemon at one rank and at two under mpirun; files checked
with h5py."""
import os
import re
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ark
from wire import framed

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("H5ARK_CLI", str(REPO / "build" / "client" / "c" / "h5ark"))
CLIENT_TEST = os.environ.get("H5ARK_CLIENT_TEST",
                             str(REPO / "build" / "client" / "c" / "test_h5ark_client"))


def group_parts(conn, keys):
    """A computed groupby of `keys` and the names of its grouping parts."""
    hdr, _ = conn.ok("groupby", keys=keys)
    name = hdr["result"]["object"]["name"]
    return name, {p: f"{name}/{p}" for p in ("permutation", "segments", "unique_key_idx")}


def test_groupby_of_a_grouping_given(ranked_conn):
    c = ranked_conn
    data = np.array([5, 1, 5, 3, 1, 5, 9, 3, 3, 5] * 37, dtype=np.int64)
    key = c.put(data)
    computed, parts = group_parts(c, [key])
    hdr, _ = c.ok("groupby", keys=[key], **parts, name="given")
    desc = hdr["result"]["object"]
    assert (desc["objtype"], desc["size"], desc["ngroups"]) == ("groupby", data.size, 4)
    assert list(desc["components"]) == ["permutation", "segments", "unique_key_idx", "KEY_0"]
    for p in parts:
        np.testing.assert_array_equal(c.get(f"given/{p}"), c.get(f"{computed}/{p}"))
    # the given grouping aggregates as the computed one does
    hdr, _ = c.ok("aggregate", groupby="given", op="count")
    np.testing.assert_array_equal(c.get(hdr["result"]["values"]["name"]), [74, 111, 148, 37])
    # written as a GroupBy whose parts are the ones given
    c.ok("tohdf", names=["given"], path="gb.h5", file_type="single")
    with h5py.File(c.dir / "gb.h5", "r") as f:
        g = f["given"]
        perm = np.argsort(data, kind="stable")
        np.testing.assert_array_equal(g["permutation"][()], perm)
        np.testing.assert_array_equal(g["segments"][()], [0, 74, 185, 333])
        np.testing.assert_array_equal(g["KEY_0"][()], data)


def test_groupby_of_a_grouping_given_refused(ranked_conn):
    c = ranked_conn
    key = c.put(np.array([2, 1, 2, 0], dtype=np.int64))
    _, parts = group_parts(c, [key])
    half = {"permutation": parts["permutation"], "segments": parts["segments"]}
    assert "or none" in c.fail("groupby", keys=[key], **half)["message"]
    short = c.put(np.array([2, 1, 2], dtype=np.int64))
    err = c.fail("groupby", keys=[short], **parts)
    assert err["code"] == "bad_request" and "3 rows" in err["message"]
    bad = dict(parts, segments=c.put(np.array([1, 2], dtype=np.int64)))
    assert c.fail("groupby", keys=[key], **bad)["code"] == "bad_request"
    assert c.fail("groupby", keys=[key], **dict(parts, unique_key_idx="nope"))["code"] == \
        "not_found"


def put_categories(conn, strs):
    return conn.put_strings(strs)


def test_categorical_na_code_and_grouping(ranked_conn):
    c = ranked_conn
    cats = put_categories(c, ["apple", "pear", "missing"])
    codes_np = np.array([0, 2, 1, 0, 2, 2], dtype=np.int64)
    codes = c.put(codes_np)
    hdr, _ = c.ok("categorical", codes=codes, categories=cats, na_code=2, name="cat")
    desc = hdr["result"]["object"]
    assert (desc["na_value"], desc["na_code"]) == ("missing", 2)
    assert desc["components"]["categories"]["size"] == 3  # nothing appended
    # without na_code the default NA value is appended
    hdr, _ = c.ok("categorical", codes=codes, categories=cats)
    assert hdr["result"]["object"]["components"]["categories"]["size"] == 4
    # the grouping kept as given, and written
    perm = c.put(np.argsort(codes_np, kind="stable").astype(np.int64))
    segs = c.put(np.array([0, 2, 3], dtype=np.int64))
    hdr, _ = c.ok("categorical", codes=codes, categories=cats, na_code=2, permutation=perm,
                  segments=segs, name="grouped")
    comps = hdr["result"]["object"]["components"]
    assert list(comps) == ["codes", "categories", "permutation", "segments"]
    c.ok("tohdf", names=["grouped"], path="cat.h5", file_type="single")
    with h5py.File(c.dir / "cat.h5", "r") as f:
        g = f["grouped"]
        assert g.attrs["ObjType"] == 4
        np.testing.assert_array_equal(g["codes"][()], codes_np)
        np.testing.assert_array_equal(g["NA_Codes"][()], [2])
        np.testing.assert_array_equal(g["permutation"][()], [0, 3, 2, 1, 4, 5])
        np.testing.assert_array_equal(g["segments"][()], [0, 2, 3])


def test_categorical_parts_refused(ranked_conn):
    c = ranked_conn
    cats = put_categories(c, ["a", "b"])
    codes = c.put(np.array([0, 1, 1], dtype=np.int64))
    perm = c.put(np.array([0, 1, 2], dtype=np.int64))
    assert "[0, 2)" in c.fail("categorical", codes=codes, categories=cats, na_code=2)["message"]
    assert c.fail("categorical", codes=codes, categories=cats, na_code=0,
                  na_value="x")["code"] == "bad_request"
    assert "together" in c.fail("categorical", codes=codes, categories=cats,
                                permutation=perm)["message"]
    assert c.fail("categorical", values=cats, na_code=0)["code"] == "bad_request"
    floats = c.put(np.zeros(3))
    assert c.fail("categorical", codes=codes, categories=cats, permutation=floats,
                  segments=perm)["code"] == "type_error"
    assert c.fail("categorical", codes=codes, categories=cats, permutation=c.put(
        np.arange(2, dtype=np.int64)), segments=perm)["code"] == "bad_request"


@pytest.mark.parametrize("tag,dtype,objtype", [("datetime64[ns]", np.int64, 7),
                                               ("timedelta64[ns]", np.int64, 8),
                                               ("ipv4", np.uint64, 9)])
def test_tag(ranked_conn, tag, dtype, objtype):
    c = ranked_conn
    data = np.arange(1000, 1000 + 777, dtype=dtype)
    hdr, _ = c.ok("tag", array=c.put(data), tag=tag, name="tagged")
    desc = hdr["result"]["object"]
    assert (desc["objtype"], desc["tag"], desc["size"]) == ("pdarray", tag, data.size)
    np.testing.assert_array_equal(c.get("tagged"), data)
    c.ok("tohdf", names=["tagged"], path="tag.h5", file_type="single")
    with h5py.File(c.dir / "tag.h5", "r") as f:
        assert f["tagged"].attrs["ObjType"] == objtype
        np.testing.assert_array_equal(f["tagged"][()], data)


def test_tag_refused(ranked_conn):
    c = ranked_conn
    assert c.fail("tag", array=c.put(np.zeros(3)), tag="datetime64[ns]")["code"] == "type_error"
    assert c.fail("tag", array=c.put(np.zeros(3, np.int64)), tag="week")["code"] == "bad_request"
    assert c.fail("tag", array=put_categories(c, ["x"]), tag="ipv4")["code"] == "type_error"
    assert c.fail("tag", array="nope", tag="ipv4")["code"] == "not_found"


def test_unpack(ranked_conn):
    c = ranked_conn
    ints = np.arange(40, dtype=np.int64) * 3
    col = c.put(ints, name="col")
    cats = put_categories(c, ["x", "y"])
    codes = c.put(np.array([0, 1] * 20, dtype=np.int64))
    hdr, _ = c.ok("categorical", codes=codes, categories=cats, name="cat")
    hdr, _ = c.ok("dataframe", columns=[col, "cat"], column_names=["n", "c"], name="df")
    hdr, _ = c.ok("unpack", name="df")
    desc = hdr["result"]["object"]
    assert desc["objtype"] == "dataframe"
    n, cat = desc["components"]["n"], desc["components"]["c"]
    assert n["name"] == "col"  # published already: keeps its name
    parts = cat["components"]
    assert "/" not in parts["codes"]["name"] and "/" not in parts["categories"]["name"]
    np.testing.assert_array_equal(c.get(parts["codes"]["name"]), [0, 1] * 20)
    assert c.get_strings(parts["categories"]["name"])[:2] == ["x", "y"]
    assert c.fail("info", names=["df"])["code"] == "not_found"
    # the composite stays with keep; a part of one stays inside it
    c.ok("segarray", segments=c.put(np.array([0, 1], dtype=np.int64)), values=col, name="sa")
    hdr, _ = c.ok("unpack", name="sa", keep=True)
    segs = hdr["result"]["object"]["components"]["segments"]["name"]
    np.testing.assert_array_equal(c.get(segs), [0, 1])
    c.ok("info", names=["sa"])
    assert c.fail("unpack", name="col")["code"] == "type_error"
    assert c.fail("unpack", name="nope")["code"] == "not_found"


def test_unpack_read_composite(ranked_conn):
    c = ranked_conn
    keys = c.put(np.array([3, 1, 3, 2], dtype=np.int64))
    c.ok("groupby", keys=[keys], name="g")
    c.ok("tohdf", names=["g"], path="g.h5")
    hdr, _ = c.ok("readhdf", paths=["g.h5"])
    read = hdr["result"]["objects"]["g"]["name"]
    hdr, _ = c.ok("unpack", name=read)
    comps = hdr["result"]["object"]["components"]
    np.testing.assert_array_equal(c.get(comps["permutation"]["name"]), [1, 3, 0, 2])
    np.testing.assert_array_equal(c.get(comps["KEY_0"]["name"]), [3, 1, 3, 2])
    names = {d["name"] for d in c.ok("info")[0]["result"]["objects"]}
    assert read not in names and comps["segments"]["name"] in names


@pytest.mark.parametrize("strs", [["ab", "", "cde", "é" * 300], [], ["x"] * 5000])
def test_put_strings_at_nuls(ranked_conn, strs):
    c = ranked_conn
    values = b"".join(s.encode() + b"\0" for s in strs)
    hdr, _ = c.ok("put", framed([values], [7, 1000]) if values else (),
                  buffers=[{"name": "values", "nbytes": len(values)}], objtype="strings",
                  strings_segments=False)
    desc = hdr["result"]["object"]
    assert (desc["objtype"], desc["size"], desc["bytes"]) == ("strings", len(strs), len(values))
    assert c.get_strings(desc["name"]) == strs
    # a count given must be right
    hdr, _ = c.raw("put", [values] if values else (),
                   buffers=[{"name": "values", "nbytes": len(values)}], objtype="strings",
                   strings_segments=False, size=len(strs) + 1)
    assert not hdr["ok"] and "NULs" in hdr["error"]["message"]


def test_put_strings_at_nuls_refused(ranked_conn):
    c = ranked_conn
    hdr, _ = c.raw("put", [b"ab\0c"], buffers=[{"name": "values", "nbytes": 4}],
                   objtype="strings", strings_segments=False)
    assert not hdr["ok"] and "end with a NUL" in hdr["error"]["message"]
    for extra in ("other", "segments"):
        hdr, _ = c.raw("put", [b"ab\0", b"x" * 8], buffers=[{"name": "values", "nbytes": 3},
                                                            {"name": extra, "nbytes": 8}],
                       objtype="strings", strings_segments=False)
        assert not hdr["ok"] and extra in hdr["error"]["message"], hdr
    # without strings_segments false the segments stay required
    hdr, _ = c.raw("put", [b"ab\0"], buffers=[{"name": "values", "nbytes": 3}],
                   objtype="strings", shape=[1])
    assert not hdr["ok"] and "segments" in hdr["error"]["message"]
    hdr, _ = c.raw("put", [b"\0" * 8], buffers=[{"name": "values", "nbytes": 8}],
                   dtype="int64", shape=[1], strings_segments=False)
    assert not hdr["ok"] and "strings only" in hdr["error"]["message"]


def test_python_client(ranked_conn):
    """The Python client's tag, unpack, strings_from_bytes and the categorical and groupby
    of parts."""
    c = h5ark.connect(ranked_conn.daemon.endpoint, timeout=60)
    try:
        ns = c.array(np.arange(5, dtype=np.int64) * 10**9)
        t = c.tag(ns, "datetime64[ns]")
        assert isinstance(t, h5ark.Datetime) and t.tag == "datetime64[ns]"
        s = c.strings_from_bytes(b"one\0\0three\0")
        assert s.to_list() == ["one", "", "three"]
        codes = c.array(np.array([1, 0, 2, 1], dtype=np.int64))
        cat = c.categorical(codes=codes, categories=s, na_code=1,
                            permutation=c.array(np.array([1, 0, 3, 2], dtype=np.int64)),
                            segments=c.array(np.array([0, 1, 3], dtype=np.int64)))
        assert cat.to_list() == ["", "one", "three", ""]
        assert c.info([cat])[0].descriptor["na_value"] == ""
        g = c.groupby(codes)
        parts = c.unpack(g, keep=True)
        again = c.groupby(codes, permutation=parts["permutation"], segments=parts["segments"],
                          unique_key_idx=parts["unique_key_idx"])
        assert again.descriptor["ngroups"] == 3
        np.testing.assert_array_equal(parts["permutation"].to_ndarray(), [1, 0, 3, 2])
        df = c.dataframe([codes, cat], column_names=["k", "c"])
        got = c.unpack(df)
        assert set(got) == {"k", "c"} and set(got["c"]) == {"codes", "categories",
                                                             "permutation", "segments"}
        assert got["k"].name == codes.name
        with pytest.raises(h5ark.ObjectTypeError):
            c.tag(s, "ipv4")
    finally:
        c.close()


def test_c_client(ranked_conn):
    """The C client's tag, unpack, put_strings_at_nuls, groupby and categorical_codes."""
    if not os.access(CLIENT_TEST, os.X_OK):
        pytest.fail(f"test_h5ark_client not found at {CLIENT_TEST}: build or set H5ARK_CLIENT_TEST")
    proc = subprocess.run([CLIENT_TEST, ranked_conn.daemon.endpoint, "parts"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"[1-9]\d* checks, 0 failed", proc.stdout), proc.stdout


def test_cli_unpack(ranked_conn):
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"h5ark not found at {CLI}: build first or set H5ARK_CLI")
    c = ranked_conn
    vals = c.put(np.arange(6, dtype=np.int64), name="vals")
    c.ok("segarray", segments=c.put(np.array([0, 4], dtype=np.int64), name="segs"), values=vals,
         name="sa")
    env = dict(os.environ, H5ARK_ENDPOINT=c.daemon.endpoint)
    env.pop("H5ARK_TOKEN_FILE", None)
    proc = subprocess.run([CLI, "unpack", "sa", "--keep"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["segments segs", "values vals"]
    c.ok("info", names=["sa"])
    proc = subprocess.run([CLI, "unpack", "vals"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode != 0 and "not a composite" in proc.stderr
