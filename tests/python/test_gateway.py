"""The HTTP gateway (--http-endpoint): h5grove's API over the data directory, against a
real daemon on a real socket, every answer checked against what h5py reads from the same
files. Also what it refuses: paths out of the data directory, damaged files, requests
without the token, writes, selections that would read a large array whole; and that it
answers several connections at once."""
import json
import os
import pathlib
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import h5py
import numpy as np
import pytest

from daemons import Daemon, free_port, TOOL_SLOWDOWN, wait_for
from wire import request

TOKEN = "gateway-secret"
HTTP_TIMEOUT = 30 * TOOL_SLOWDOWN
BIG_ROWS, BIG_COLS = 3000, 3000  # 72 MB of float64: more than one request may read


def http(base, endpoint, params=None, token=TOKEN, method="GET", headers=None):
    """(status, headers, body bytes) of one request; the token as a Bearer header."""
    query = urllib.parse.urlencode(params or {})
    url = f"{base}{endpoint}" + (f"?{query}" if query else "")
    req = urllib.request.Request(url, method=method, headers=dict(headers or {}))
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def ok_json(base, endpoint, **params):
    status, hdrs, body = http(base, endpoint, params)
    assert status == 200, (endpoint, params, body)
    assert hdrs["Content-Type"] == "application/json"
    return json.loads(body)


def error(base, endpoint, status, params=None, **kw):
    got, hdrs, body = http(base, endpoint, params, **kw)
    assert got == status, (endpoint, params, got, body)
    message = json.loads(body)["message"]
    assert message
    return message


# scalar datasets, one of each kind h5web shows: as h5py writes each value
SCALARS = {
    "i8": np.int8(-7), "u16": np.uint16(65000), "i32": np.int32(-123456), "i64": np.int64(-2 ** 62),
    "u64": np.uint64(2 ** 64 - 1), "f32": np.float32(0.1), "f64": np.float64(-2.5e-300),
    "be": np.array(1.25, dtype=">f8"), "nan": np.float64("nan"), "yes": np.bool_(True),
    "no": np.bool_(False), "text": "héllo wörld", "empty": "", "fixed": np.bytes_(b"fixed"),
}
STRING_SCALARS = {"text", "empty", "fixed"}


def make_files(data_dir, client):
    """Plain h5py datasets of every dtype, groups, links and attributes; h5ark's own
    objects (Strings, Categorical, SegArray, DataFrame) written by the daemon."""
    with h5py.File(data_dir / "plain.h5", "w") as f:
        f["f64"] = np.linspace(-1.5, 2.5, 17)
        f["f32"] = np.array([0.1, np.nan, np.inf, -3.25], dtype=np.float32)
        f["i8"] = np.arange(-5, 5, dtype=np.int8)
        f["u16"] = np.arange(0, 60000, 5000, dtype=np.uint16)
        f["i64"] = np.array([-(2 ** 62), 0, 2 ** 62 + 7], dtype=np.int64)
        f["u64"] = np.array([0, 2 ** 64 - 1], dtype=np.uint64)
        f["img"] = np.arange(6 * 7, dtype=np.int32).reshape(6, 7)
        f["cube"] = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6) / 3
        f.create_dataset("chunked", data=np.arange(1000, dtype=np.int64), chunks=(100,),
                         compression="gzip", shuffle=True)
        f["grp/flags"] = np.array([True, False, True])
        f["grp/words"] = np.array([b"alpha", b"beta", b"gamma"])
        f["grp/utf"] = np.array(["é", "日本", "x"], dtype=h5py.string_dtype())
        f["grp"].attrs["title"] = "a group"
        f["grp"].attrs["scale"] = 2.5
        f["grp"].attrs["dims"] = np.array([3, 4, 5])
        f["img"].attrs["units"] = "counts"
        f["scalar"] = 3.5
        pair = np.dtype([("a", np.int32), ("b", np.float64)])
        f["pairs"] = np.zeros(3, dtype=pair)
        f["sc/pair"] = np.zeros((), dtype=pair)
        for name, value in SCALARS.items():
            f.create_dataset(f"sc/{name}", data=value)
        f["sc"].attrs["about"] = "one value each"
        f.attrs["title"] = "plain file"
        f.attrs["version"] = np.int32(3)
        f.attrs["ratio"] = 0.25
        f.attrs["levels"] = np.array([1, 2, 3], dtype=np.int64)
        f["empty"] = np.zeros(0, dtype=np.float32)
        f["empty2d"] = np.zeros((4, 0), dtype=np.int16)
        f["empty2d_rows"] = np.zeros((0, 3), dtype=np.uint32)
        f["soft"] = h5py.SoftLink("/img")
        f["ext"] = h5py.ExternalLink("/etc/passwd.h5", "/x")
    with h5py.File(data_dir / "big.h5", "w") as f:
        f.create_dataset("big", data=np.arange(BIG_ROWS * BIG_COLS, dtype=np.float64)
                         .reshape(BIG_ROWS, BIG_COLS), chunks=(100, BIG_COLS),
                         compression="gzip", compression_opts=1, shuffle=True)
    s = client.array(np.array(["red", "green", "blue", ""]))
    cat = client.categorical(values=client.array(np.array(["lo", "hi", "lo", "mid", "hi"])))
    seg = client.segarray(client.array(np.array([0, 2, 2], dtype=np.int64)),
                          client.array(np.arange(6, dtype=np.int64)))
    df = client.dataframe([client.array(np.arange(3, dtype=np.int64) * 10),
                           client.array(np.array(["p", "q", "r"]))], column_names=["num", "txt"])
    av = client.reshape(client.array(np.arange(24, dtype=np.float64) / 4), [2, 3, 4])
    client.to_hdf({"s": s, "cat": cat, "seg": seg, "df": df, "av": av}, "ark.h5",
                  file_type="single")
    client.to_exetera({"temp": client.array(np.array([1.5, -2.0, 3.25])),
                       "city": client.array(np.array(["Oslo", "Lima", "Pune"]))},
                      "exetera.h5", group="readings")
    (data_dir / "sub").mkdir()
    with h5py.File(data_dir / "sub" / "nested.h5", "w") as f:
        f["x"] = np.arange(3)


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    """A daemon with tokens and the gateway on a free port, the test files in its data
    directory; yields (daemon, base URL)."""
    import h5ark
    port = free_port()
    web = tmp_path_factory.mktemp("web")
    (web / "index.html").write_text("<!doctype html><title>viewer</title>\n")
    (web / "assets").mkdir()
    (web / "assets" / "app.js").write_text("console.log(1);\n")
    d = Daemon(locales=3, token=TOKEN,
               extra_args=["--http-endpoint", f"127.0.0.1:{port}", "--web-dir", str(web)])
    c = h5ark.connect(d.endpoint, token=TOKEN, timeout=60)
    make_files(d.data_dir, c)
    c.clear()
    c.close()
    yield d, f"http://127.0.0.1:{port}"
    d.cleanup()


def type_of(dtype):
    """h5grove's type object for a numpy dtype as the gateway sends it."""
    if dtype == np.bool_:
        return {"class": 8, "size": 1, "members": {"FALSE": 0, "TRUE": 1},
                "base": {"class": 0, "size": 1, "order": 0, "sign": 1}}
    if dtype.kind in "iu":
        return {"class": 0, "size": dtype.itemsize, "order": 0, "sign": int(dtype.kind == "i")}
    return {"class": 1, "size": dtype.itemsize, "order": 0}


STRING_TYPE = {"class": 3, "size": 16, "cset": 1, "strPad": 0, "vlen": True}


# ---- metadata --------------------------------------------------------------------------


def test_files_lists_the_data_directory(gw):
    d, base = gw
    (d.data_dir / ".hidden.h5").write_bytes(b"x")
    assert ok_json(base, "/files/") == ["ark.h5", "big.h5", "exetera.h5", "plain.h5",
                                        "sub/nested.h5"]
    assert ok_json(base, "/files") == ok_json(base, "/files/")


def test_getconfig_reports_the_gateway(gw):
    d, base = gw
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "getconfig", "token": TOKEN})
    assert f"http://{hdr['result']['http_endpoint']}" == base


def test_meta_of_the_root_lists_every_child(gw):
    d, base = gw
    meta = ok_json(base, "/meta/", file="plain.h5", path="/")
    assert meta["kind"] == "group"
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        names = sorted(f.keys())
    assert sorted(c["name"] for c in meta["children"]) == names
    kids = {c["name"]: c for c in meta["children"]}
    assert kids["grp"]["kind"] == "group" and "children" not in kids["grp"]
    assert kids["ext"] == {"name": "ext", "kind": "external_link",
                           "target_file": "/etc/passwd.h5", "target_path": "/x"}
    # a soft link is resolved (h5grove's resolve_links=only_valid): its target's metadata
    assert kids["soft"]["kind"] == "dataset" and kids["soft"]["shape"] == [6, 7]


@pytest.mark.parametrize("name", ["f64", "f32", "i8", "u16", "i64", "u64", "img", "cube",
                                  "chunked", "grp/flags"])
def test_meta_of_a_dataset_matches_h5py(gw, name):
    d, base = gw
    meta = ok_json(base, "/meta/", file="plain.h5", path=f"/{name}")
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        ds = f[name]
        assert meta["kind"] == "dataset" and meta["name"] == name.split("/")[-1]
        assert meta["shape"] == list(ds.shape)
        assert meta["type"] == type_of(ds.dtype)
        assert meta["chunks"] == (list(ds.chunks) if ds.chunks else None)
        if ds.compression:
            assert {"id": 1, "name": "gzip"} in meta["filters"]
            assert {"id": 2, "name": "shuffle"} in meta["filters"]
        else:
            assert meta["filters"] is None
        assert [a["name"] for a in meta["attributes"]] == sorted(ds.attrs.keys())


def test_meta_of_a_group_and_its_attributes(gw):
    d, base = gw
    meta = ok_json(base, "/meta", file="plain.h5", path="/grp/")
    assert meta["kind"] == "group" and meta["name"] == "grp"
    assert sorted(c["name"] for c in meta["children"]) == ["flags", "utf", "words"]
    attrs = {a["name"]: a for a in meta["attributes"]}
    assert attrs["title"]["type"] == STRING_TYPE and attrs["title"]["shape"] == []
    assert attrs["scale"]["type"]["class"] == 1
    assert attrs["dims"]["shape"] == [3] and attrs["dims"]["type"]["class"] == 0
    values = ok_json(base, "/attr/", file="plain.h5", path="/grp")
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        a = f["grp"].attrs
        assert values == {"title": a["title"], "scale": a["scale"], "dims": a["dims"].tolist()}
    assert ok_json(base, "/attr/", file="plain.h5", path="/grp", attr_keys="scale") == {
        "scale": 2.5}
    assert ok_json(base, "/attr/", file="plain.h5", path="/img") == {"units": "counts"}


def python_value(v):
    """An attribute's value as h5py reads it, as JSON gives it back."""
    return v.tolist() if isinstance(v, (np.ndarray, np.generic)) else v


def test_root_attributes(gw):
    """The root group's attributes, as h5grove lists them: in /meta/ of "/" (sorted by
    name) and in /attr/, with or without a path."""
    d, base = gw
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        want = {k: python_value(v) for k, v in f.attrs.items()}
    assert want == {"title": "plain file", "version": 3, "ratio": 0.25, "levels": [1, 2, 3]}
    meta = ok_json(base, "/meta/", file="plain.h5", path="/")
    assert meta["name"] == "" and meta["kind"] == "group"
    assert [a["name"] for a in meta["attributes"]] == sorted(want)
    attrs = {a["name"]: a for a in meta["attributes"]}
    assert attrs["title"] == {"name": "title", "shape": [], "type": STRING_TYPE}
    assert attrs["version"]["type"]["class"] == 0 and attrs["version"]["shape"] == []
    assert attrs["ratio"]["type"] == type_of(np.dtype(np.float64))
    assert attrs["levels"]["shape"] == [3]
    assert ok_json(base, "/attr/", file="plain.h5", path="/") == want
    assert ok_json(base, "/attr", file="plain.h5") == want
    assert ok_json(base, "/attr/", file="plain.h5", attr_keys="ratio") == {"ratio": 0.25}
    # the root is neither a child of itself nor a path below itself
    assert all(c["name"] for c in meta["children"])
    paths = ok_json(base, "/paths/", file="plain.h5", path="/")
    assert paths[0] == "/" and paths.count("/") == 1
    # a root without attributes
    assert ok_json(base, "/meta/", file="sub/nested.h5")["attributes"] == []
    assert ok_json(base, "/attr/", file="sub/nested.h5") == {}


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_scalar_datasets(gw, name):
    """Scalar datasets as h5grove answers them: shape [] in /meta/; in /data/ a bare JSON
    value (flatten leaves it so), the element's bytes (little-endian, as dtype=safe gives
    them; a string's bytes as stored), or a .npy of shape () (numbers only)."""
    import io
    d, base = gw
    path = f"/sc/{name}"
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        assert f[path].shape == ()
        value, dtype = f[path][()], f[path].dtype
    meta = ok_json(base, "/meta/", file="plain.h5", path=path)
    assert meta["kind"] == "dataset" and meta["name"] == name and meta["shape"] == []
    params = {"file": "plain.h5", "path": path}
    got = ok_json(base, "/data/", **params)
    assert ok_json(base, "/data", flatten="true", **params) == got
    status, hdrs, body = http(base, "/data", {**params, "format": "bin", "dtype": "safe"})
    assert status == 200 and hdrs["Content-Type"] == "application/octet-stream"
    assert "no selection" in error(base, "/data/", 400, {**params, "selection": "0"})
    if name in STRING_SCALARS:
        raw = value if isinstance(value, bytes) else value.encode()
        assert meta["type"] == STRING_TYPE
        assert got == raw.decode() and body == raw
        assert "npy" in error(base, "/data/", 400, {**params, "format": "npy"})
        return
    native = dtype.newbyteorder("<")
    assert meta["type"] == type_of(native)
    if np.isnan(value):
        assert got is None
    else:
        assert np.asarray(got, dtype=native) == value and type(got) is type(value.item())
    assert len(body) == dtype.itemsize
    np.testing.assert_array_equal(np.frombuffer(body, dtype=native)[0], value)
    status, _, body = http(base, "/data/", {**params, "format": "npy"})
    assert status == 200
    back = np.load(io.BytesIO(body))
    assert back.shape == () and back.dtype == native
    np.testing.assert_array_equal(back, value)


@pytest.mark.parametrize("endpoint,params", [
    ("meta", {"path": "/grp"}), ("attr", {"path": "/grp"}), ("data", {"path": "/img"}),
    ("paths", {"path": "/grp"}), ("files", None)])
def test_endpoints_with_and_without_a_trailing_slash(gw, endpoint, params):
    """h5web asks /meta, /attr, /data and /paths (h5grove 3 dropped the slash), older
    clients /meta/ ...: both answer the same."""
    d, base = gw
    params = {"file": "plain.h5", **params} if params else None
    bare, slashed = http(base, f"/{endpoint}", params), http(base, f"/{endpoint}/", params)
    assert bare[0] == slashed[0] == 200 and bare[2] == slashed[2]
    assert http(base, f"/{endpoint}//", params)[0] == 404


def test_h5ark_objects_are_shown_as_what_they_are(gw):
    """Strings and a Categorical are datasets of strings; a DataFrame a group of its
    columns (each what it is); a SegArray a group of its segments and values."""
    d, base = gw
    root = {c["name"]: c for c in ok_json(base, "/meta/", file="ark.h5", path="/")["children"]}
    assert root["s"]["kind"] == "dataset" and root["s"]["shape"] == [4]
    assert root["s"]["type"] == STRING_TYPE
    assert root["cat"]["kind"] == "dataset" and root["cat"]["type"] == STRING_TYPE
    assert root["cat"]["shape"] == [5]
    assert root["df"]["kind"] == "group" and root["seg"]["kind"] == "group"
    df = {c["name"]: c for c in ok_json(base, "/meta/", file="ark.h5", path="/df")["children"]}
    assert df["num"]["type"] == type_of(np.dtype(np.int64)) and df["num"]["shape"] == [3]
    assert df["txt"]["type"] == STRING_TYPE
    seg = ok_json(base, "/meta/", file="ark.h5", path="/seg")
    assert sorted(c["name"] for c in seg["children"]) == ["segments", "values"]
    # the parts of a Strings are no entities of their own
    error(base, "/meta/", 404, {"file": "ark.h5", "path": "/s/values"})
    paths = ok_json(base, "/paths/", file="ark.h5", path="/")
    assert paths[0] == "/" and "/df/txt" in paths and "/s" in paths
    assert not any(p.startswith("/s/") for p in paths)
    assert ok_json(base, "/paths/", file="ark.h5", path="/df") == ["/df", "/df/num", "/df/txt"]
    error(base, "/paths/", 400, {"file": "ark.h5", "path": "/s"})
    with h5py.File(d.data_dir / "ark.h5", "r") as f:
        assert "values" in f["s"] and "segments" in f["s"]  # the raw layout is there


@pytest.mark.parametrize("sel", [None, "1", "1,:,2", ":,::2,1:3", "-1,-1"])
def test_arkouda_arrayview_has_its_shape(gw, sel):
    """Arkouda's ArrayView is a flat dataset with its shape in an attribute: shown and
    sliced in that shape."""
    d, base = gw
    with h5py.File(d.data_dir / "ark.h5", "r") as f:
        assert f["av"].shape == (24,) and list(f["av"].attrs["Shape"]) == [2, 3, 4]
        arr = f["av"][()].reshape(2, 3, 4)
    assert ok_json(base, "/meta/", file="ark.h5", path="/av")["shape"] == [2, 3, 4]
    check_values(base, "ark.h5", "av", sel, arr)


def test_exetera_fields_are_datasets(gw):
    """An ExeTera dataframe is a group of its fields, each the dataset it reads as."""
    d, base = gw
    df = ok_json(base, "/meta/", file="exetera.h5", path="/readings")
    assert df["kind"] == "group"
    fields = {c["name"]: c for c in df["children"]}
    assert fields["temp"]["kind"] == "dataset" and fields["temp"]["shape"] == [3]
    assert fields["temp"]["type"] == type_of(np.dtype(np.float64))
    assert fields["city"]["type"] == STRING_TYPE
    assert ok_json(base, "/data/", file="exetera.h5", path="/readings/temp") == [1.5, -2.0, 3.25]
    assert ok_json(base, "/data/", file="exetera.h5", path="/readings/city",
                   selection="1:") == ["Lima", "Pune"]
    with h5py.File(d.data_dir / "exetera.h5", "r") as f:
        assert "values" in f["readings/temp"]  # a field is a group in the file


# ---- values ----------------------------------------------------------------------------

SELECTIONS = [None, "2:5", "::3", "-4:", "3", "-1", "1:100", "5:2", ":"]
ND_SELECTIONS = [None, "1", "1:4,::2", "-1,3", ":,2", "::2,1:6:2", "2,1:3"]


def numpy_selection(arr, sel):
    if sel is None:
        return arr
    items = []
    for item in sel.split(","):
        if ":" in item:
            items.append(slice(*[int(x) if x else None for x in item.split(":")]))
        else:
            items.append(int(item))
    return arr[tuple(items)]


def check_values(base, file, name, sel, arr):
    params = {"file": file, "path": f"/{name}"}
    if sel is not None:
        params["selection"] = sel
    try:
        expected = np.asarray(numpy_selection(arr, sel))
    except IndexError:
        assert "out of range" in error(base, "/data/", 400, params)
        return
    got = ok_json(base, "/data/", **params)
    want = expected.tolist()
    if expected.dtype.kind == "f":
        np.testing.assert_array_equal(np.array(got, dtype=np.float64).reshape(expected.shape),
                                      expected)
        assert "NaN" not in json.dumps(got)
    else:
        assert got == want, (name, sel)
    flat = ok_json(base, "/data/", flatten="true", **params)
    assert np.array(flat, dtype=object).shape == ((expected.size,) if expected.ndim else ())
    status, hdrs, body = http(base, "/data/", {**params, "format": "bin", "dtype": "safe"})
    assert status == 200 and hdrs["Content-Type"] == "application/octet-stream"
    np.testing.assert_array_equal(np.frombuffer(body, dtype=expected.dtype),
                                  expected.reshape(-1))


@pytest.mark.parametrize("sel", SELECTIONS)
@pytest.mark.parametrize("name", ["f64", "i8", "u16", "i64", "u64", "grp/flags", "chunked"])
def test_data_of_1d_datasets(gw, name, sel):
    d, base = gw
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        arr = f[name][()]
    check_values(base, "plain.h5", name, sel, arr)


@pytest.mark.parametrize("sel", [None, "1", "1:3", ":,:", "::2,:"])
@pytest.mark.parametrize("name", ["empty", "empty2d", "empty2d_rows"])
def test_data_of_empty_datasets(gw, name, sel):
    d, base = gw
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        arr = f[name][()]
    if sel and sel.count(",") >= arr.ndim:
        error(base, "/data/", 400, {"file": "plain.h5", "path": f"/{name}", "selection": sel})
        return
    check_values(base, "plain.h5", name, sel, arr)


@pytest.mark.parametrize("sel", ND_SELECTIONS)
@pytest.mark.parametrize("name", ["img", "cube", "soft"])
def test_data_of_nd_datasets(gw, name, sel):
    d, base = gw
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        arr = f[name][()]
    check_values(base, "plain.h5", name, sel, arr)


def test_float_specials_are_null_in_json_and_exact_in_bin(gw):
    d, base = gw
    got = ok_json(base, "/data/", file="plain.h5", path="/f32")
    assert got[0] == pytest.approx(0.1, rel=1e-7) and got[1] is None and got[2] is None
    assert got[3] == -3.25
    status, _, body = http(base, "/data/", {"file": "plain.h5", "path": "/f32", "format": "bin"})
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        np.testing.assert_array_equal(np.frombuffer(body, dtype=np.float32), f["f32"][()])


def test_data_as_npy(gw, tmp_path):
    d, base = gw
    for sel, path in [("1:5,2:", "/cube"), (None, "/img"), ("3", "/f64"), ("2,1", "/img")]:
        params = {"file": "plain.h5", "path": path, "format": "npy"}
        if sel:
            params["selection"] = sel
        status, _, body = http(base, "/data/", params)
        assert status == 200
        (tmp_path / "x.npy").write_bytes(body)
        with h5py.File(d.data_dir / "plain.h5", "r") as f:
            expected = numpy_selection(f[path][()], sel)
        np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), expected)


def test_strings_and_categoricals(gw):
    d, base = gw
    assert ok_json(base, "/data/", file="ark.h5", path="/s") == ["red", "green", "blue", ""]
    assert ok_json(base, "/data/", file="ark.h5", path="/s", selection="1:3") == ["green", "blue"]
    assert ok_json(base, "/data/", file="ark.h5", path="/s", selection="-2") == "blue"
    assert ok_json(base, "/data/", file="ark.h5", path="/cat") == ["lo", "hi", "lo", "mid", "hi"]
    assert ok_json(base, "/data/", file="ark.h5", path="/cat", selection="::2") == [
        "lo", "lo", "hi"]
    assert ok_json(base, "/data/", file="ark.h5", path="/df/txt", flatten="true") == [
        "p", "q", "r"]
    assert ok_json(base, "/data/", file="ark.h5", path="/df/num", selection="1:") == [10, 20]
    assert ok_json(base, "/data/", file="ark.h5", path="/seg/values") == list(range(6))
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        words = [w.decode() for w in f["grp/words"][()]]
        utf = [w.decode() for w in f["grp/utf"][()]]
    assert ok_json(base, "/data/", file="plain.h5", path="/grp/words") == words
    assert ok_json(base, "/data/", file="plain.h5", path="/grp/utf") == utf
    # strings have no binary form
    error(base, "/data/", 400, {"file": "ark.h5", "path": "/s", "format": "bin"})


def test_big_array_is_read_in_slices_only(gw):
    d, base = gw
    msg = error(base, "/data/", 413, {"file": "big.h5", "path": "/big"})
    assert "slice" in msg
    error(base, "/data/", 413, {"file": "big.h5", "path": "/big", "format": "bin"})
    row = BIG_ROWS - 2
    status, _, body = http(base, "/data/", {"file": "big.h5", "path": "/big",
                                           "selection": f"{row},:", "format": "bin"})
    assert status == 200
    got = np.frombuffer(body, dtype=np.float64)
    with h5py.File(d.data_dir / "big.h5", "r") as f:
        np.testing.assert_array_equal(got, f["big"][row])
    got = ok_json(base, "/data/", file="big.h5", path="/big", selection="10:13,5:8")
    assert got == (np.arange(BIG_ROWS * BIG_COLS, dtype=np.float64)
                   .reshape(BIG_ROWS, BIG_COLS)[10:13, 5:8]).tolist()
    assert memory_used_settles(d, TOKEN) == 0  # nothing kept after the answers


def memory_used_settles(d, token=None):
    """memory_used once the answers sent are freed (the server frees each body just after
    its last byte went out)."""
    def used():
        hdr, _ = request(d.endpoint, {"v": 1, "cmd": "getconfig", "token": token})
        return hdr["result"]["memory_used"]
    wait_for(lambda: used() == 0, "memory_used 0 once the answers are freed", 5)
    return used()


@pytest.mark.parametrize("sel", ["0:10:9223372036854775807", "-9223372036854775808:",
                                 "-9223372036854775808", ":9223372036854775807:3"])
def test_extreme_selections(gw, sel):
    d, base = gw
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        arr = f["f64"][()]
    check_values(base, "plain.h5", "f64", sel, arr)


@pytest.mark.parametrize("sel,why", [("x", "not an index"), ("1:2:0", "step"),
                                     ("99999999999999999999", "not an index"),
                                     ("1:99999999999999999999", "not a slice"),
                                     ("0,0", "more items"), ("6", "out of range"),
                                     ("1:a", "not a slice"), ("1:2:3:4", "not a slice")])
def test_bad_selections(gw, sel, why):
    d, base = gw
    msg = error(base, "/data/", 400, {"file": "plain.h5", "path": "/f64", "selection": sel if
                                      sel != "6" else "17"})
    assert why in msg


def test_what_is_not_a_readable_dataset(gw):
    d, base = gw
    assert "not an object h5ark reads" in error(base, "/data/", 422,
                                               {"file": "plain.h5", "path": "/pairs"})
    assert "compound" in error(base, "/data/", 422, {"file": "plain.h5", "path": "/sc/pair"})
    error(base, "/data/", 400, {"file": "plain.h5", "path": "/grp"})
    error(base, "/data/", 404, {"file": "plain.h5", "path": "/nope"})
    error(base, "/data/", 400, {"file": "plain.h5", "path": "/ext"})  # never followed
    error(base, "/data/", 400, {"file": "plain.h5", "path": "/f64", "format": "tiff"})
    error(base, "/data/", 400, {"file": "plain.h5", "path": "/f64", "dtype": "float16"})


# ---- refusals --------------------------------------------------------------------------


def test_paths_out_of_the_data_directory_are_forbidden(gw, tmp_path):
    d, base = gw
    outside = tmp_path / "outside.h5"
    with h5py.File(outside, "w") as f:
        f["secret"] = np.arange(4)
    (d.data_dir / "escape.h5").symlink_to(outside)
    (d.data_dir / "escape_dir").symlink_to(tmp_path)
    try:
        for file in ["../outside.h5", str(outside), "escape.h5", "escape_dir/outside.h5",
                     "sub/../../outside.h5"]:
            for ep in ["/meta/", "/data/", "/attr/"]:
                msg = error(base, ep, 403, {"file": file, "path": "/secret"})
                assert "secret" not in msg or "outside" not in msg.replace(file, "")
        assert "escape.h5" not in ok_json(base, "/files/")
    finally:
        (d.data_dir / "escape.h5").unlink()
        (d.data_dir / "escape_dir").unlink()
    assert "File not found" in error(base, "/meta/", 404, {"file": "missing.h5"})
    error(base, "/meta/", 400, {})
    error(base, "/meta/", 400, {"file": "sub"})
    error(base, "/meta/", 403, {"file": "a\x01b.h5"})


def test_damaged_files_get_an_error_and_the_daemon_serves_on(gw):
    d, base = gw
    (d.data_dir / "garbage.h5").write_bytes(os.urandom(4096))
    good = (d.data_dir / "plain.h5").read_bytes()
    (d.data_dir / "cut.h5").write_bytes(good[: len(good) // 3])
    for file in ["garbage.h5", "cut.h5"]:
        for ep in ["/meta/", "/data/", "/attr/", "/paths/"]:
            status, _, body = http(base, ep, {"file": file, "path": "/f64"})
            assert 400 <= status < 600, (file, ep, status)
            assert json.loads(body)["message"]
    assert ok_json(base, "/data/", file="plain.h5", path="/i8", selection="0:2") == [-5, -4]
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "ping", "token": TOKEN})
    assert hdr["ok"], hdr


def test_a_file_that_kills_the_probe(start_daemon):
    port = free_port()
    d = start_daemon(locales=2, env={"H5ARK_TEST_PROBE_CRASH": "_dies"},
                     extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    for name in ["x_dies.h5", "fine.h5"]:
        with h5py.File(d.data_dir / name, "w") as f:
            f["v"] = np.arange(5)
    # the read's probe dies on the file (as on one that crashes the library): refused, and
    # a new probe serves the next request
    for _ in range(2):
        msg = error(base, "/data/", 422, {"file": "x_dies.h5", "path": "/v"}, token=None)
        assert "x_dies.h5" in msg
        assert ok_json_noauth(base, "/data/", file="fine.h5", path="/v") == list(range(5))
    assert d.alive()


def ok_json_noauth(base, endpoint, **params):
    status, _, body = http(base, endpoint, params, token=None)
    assert status == 200, body
    return json.loads(body)


def test_the_token_is_required(gw):
    d, base = gw
    params = {"file": "plain.h5", "path": "/i8"}
    assert "requires a token" in error(base, "/data/", 401, params, token=None)
    assert "not valid" in error(base, "/data/", 401, params, token="wrong")
    error(base, "/files/", 401, token=None)
    error(base, "/meta/", 401, params, token=TOKEN + "x")
    # the query argument works as the header does
    status, _, body = http(base, "/data/", {**params, "token": TOKEN}, token=None)
    assert status == 200 and json.loads(body) == list(range(-5, 5))
    status, _, _ = http(base, "/data/", params, token=None,
                        headers={"Authorization": f"Basic {TOKEN}"})
    assert status == 401
    # the page itself holds no data: served without a token
    status, _, body = http(base, "/", token=None)
    assert status == 200 and b"<title>viewer</title>" in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_the_gateway_only_reads(gw, method):
    d, base = gw
    before = (d.data_dir / "plain.h5").read_bytes()
    status, hdrs, body = http(base, "/data/", {"file": "plain.h5", "path": "/i8"},
                              method=method)
    assert status == 405 and hdrs["Allow"] == "GET, HEAD"
    assert method in json.loads(body)["message"]
    assert (d.data_dir / "plain.h5").read_bytes() == before
    status, _, _ = http(base, "/data/", {"file": "plain.h5", "path": "/i8"}, method="HEAD")
    assert status == 200
    assert memory_used_settles(d, TOKEN) == 0  # a body not sent is freed all the same


def test_static_files_and_traversal(gw):
    d, base = gw
    status, hdrs, body = http(base, "/assets/app.js", token=None)
    assert status == 200 and hdrs["Content-Type"].startswith("text/javascript")
    assert body == b"console.log(1);\n"
    for bad in ["/../../etc/passwd", "/assets/../../index.html", "/%2e%2e/%2e%2e/etc/passwd",
                "/nope.js", "/assets"]:
        status, _, body = http(base, bad, token=None)
        assert status == 404, (bad, status)
        assert b"root:" not in body


def test_without_a_built_page_root_says_how_to_get_it(start_daemon, tmp_path):
    port = free_port()
    empty = tmp_path / "empty"
    empty.mkdir()
    start_daemon(locales=1, extra_args=["--http-endpoint", f"127.0.0.1:{port}",
                                        "--web-dir", str(empty)])
    status, hdrs, body = http(f"http://127.0.0.1:{port}", "/", token=None)
    assert status == 200 and hdrs["Content-Type"].startswith("text/html")
    assert b"npm" in body and b"--web-dir" in body
    # the API works all the same
    status, _, body = http(f"http://127.0.0.1:{port}", "/files/", token=None)
    assert status == 200 and json.loads(body) == []


def test_bad_options(tmp_path):
    from daemons import daemon_binary
    import subprocess
    for args, why in [(["--http-endpoint", "nope:port"], "port"),
                      (["--http-endpoint", "127.0.0.1:1", "--web-dir", str(tmp_path / "none")],
                       "--web-dir")]:
        r = subprocess.run([daemon_binary(), "--data-dir", str(tmp_path / "d"), "--endpoint",
                            f"ipc://{tmp_path}/s", *args], capture_output=True, text=True,
                           timeout=30 * TOOL_SLOWDOWN)
        assert r.returncode != 0 and why in r.stderr, r.stderr


def test_directory_listing_ignores_what_is_not_a_file(gw):
    d, base = gw
    fifo = pathlib.Path(d.data_dir / "pipe")
    os.mkfifo(fifo)
    try:
        assert "pipe" not in ok_json(base, "/files/")
        error(base, "/meta/", 400, {"file": "pipe"})
    finally:
        fifo.unlink()


def test_a_changed_file_is_listed_anew(gw):
    """The listing is kept between requests only while the file is the same one."""
    d, base = gw
    for n in (3, 5, 2):
        with h5py.File(d.data_dir / "changing.h5", "w") as f:
            f["x"] = np.arange(n) * 2
            f[f"only_{n}"] = np.zeros(1)
        meta = ok_json(base, "/meta/", file="changing.h5", path="/")
        assert sorted(c["name"] for c in meta["children"]) == [f"only_{n}", "x"]
        assert ok_json(base, "/data/", file="changing.h5", path="/x") == list(range(0, 2 * n, 2))
    (d.data_dir / "changing.h5").unlink()
    error(base, "/meta/", 404, {"file": "changing.h5"})


def test_many_entries(gw):
    """A file of 3,000 datasets in 30 groups: every path found, paths listed once each."""
    d, base = gw
    with h5py.File(d.data_dir / "many.h5", "w") as f:
        for g in range(30):
            for i in range(100):
                f[f"g{g:02d}/d{i:03d}"] = np.array([g, i])
    try:
        paths = ok_json(base, "/paths/", file="many.h5", path="/")
        assert len(paths) == 1 + 30 + 3000 and len(set(paths)) == len(paths)
        meta = ok_json(base, "/meta/", file="many.h5", path="/g17")
        assert [c["name"] for c in meta["children"]] == [f"d{i:03d}" for i in range(100)]
        assert ok_json(base, "/data/", file="many.h5", path="/g29/d099") == [29, 99]
    finally:
        (d.data_dir / "many.h5").unlink()


def shared_hdf5_files():
    root = pathlib.Path(__file__).resolve().parents[3] / "shared" / "fixtures"
    if not root.is_dir():
        return root, []
    found = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            with open(p, "rb") as f:
                if f.read(8) == b"\x89HDF\r\n\x1a\n":
                    found.append(p)
    return root, found


def test_every_entity_of_the_shared_fixtures(start_daemon, tmp_path):
    """Every HDF5 file of ../shared/fixtures (Arkouda's, ExeTera's, awkward's, LBANN's),
    walked through the gateway: each path's metadata and attributes, and the first rows of
    each dataset, answer 200 or a clear refusal, and the daemon serves on."""
    root, files = shared_hdf5_files()
    if not files:
        pytest.skip(f"no fixtures at {root} (../shared beside the repository)")
    port = free_port()
    d = start_daemon(locales=2, extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    for p in files:  # copied: a symbolic link out of the data directory is refused
        dest = d.data_dir / p.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(p.read_bytes())
    answered = {"data": 0, "refused": 0}
    for p in files:
        file = str(p.relative_to(root))
        status, _, body = http(base, "/paths/", {"file": file, "path": "/"}, token=None)
        assert status == 200, (file, body)
        for path in json.loads(body):
            status, _, body = http(base, "/meta/", {"file": file, "path": path}, token=None)
            assert status == 200, (file, path, body)
            meta = json.loads(body)
            status, _, body = http(base, "/attr/", {"file": file, "path": path}, token=None)
            assert status == 200, (file, path, body)
            assert sorted(json.loads(body)) == sorted(a["name"] for a in meta.get(
                "attributes", []))
            if meta["kind"] != "dataset":
                continue
            params = {"file": file, "path": path, "flatten": "true"}
            if meta["shape"]:
                params["selection"] = "0:2"
            status, _, body = http(base, "/data/", params, token=None)
            if status == 200:
                values = json.loads(body)
                if meta["shape"]:
                    assert len(values) == min(2, meta["shape"][0]) * int(
                        np.prod(meta["shape"][1:])), (file, path, values)
                answered["data"] += 1
            else:
                assert status in (400, 413, 422), (file, path, status, body)
                assert json.loads(body)["message"]
                answered["refused"] += 1
    print(f"shared fixtures: {len(files)} files, {answered}")
    assert answered["data"] > 0
    assert ok_json_noauth(base, "/files/") == sorted(str(p.relative_to(root)) for p in files)


def test_hostile_files_through_the_gateway(start_daemon):
    """The damaged files of test_hostile_files (bit flips, overwritten blocks, truncations
    of Arkouda-like and h5py-made files) through the gateway: every answer is 200 or an
    error with a message, never a dropped connection, and the daemon serves on."""
    from test_hostile_files import make_cases
    port = free_port()
    d = start_daemon(locales=2, extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    cases = make_cases()
    assert len(cases) > 300
    statuses = {}

    def get(endpoint, params, what):
        status, _, body = http(base, endpoint, params, token=None)
        statuses[status] = statuses.get(status, 0) + 1
        if status != 200:
            assert 400 <= status < 600 and json.loads(body)["message"], (what, status, body)
        return status, body

    for i, (name, label, blob) in enumerate(cases):
        file = f"case{i % 4}.h5"
        (d.data_dir / file).write_bytes(blob)
        what = f"{name} {label}"
        status, body = get("/paths/", {"file": file, "path": "/"}, what)
        if status != 200:
            continue
        datasets = 0
        for path in json.loads(body)[:40]:
            status, body = get("/meta/", {"file": file, "path": path}, what)
            if status == 200 and json.loads(body).get("kind") == "dataset" and datasets < 5:
                datasets += 1
                get("/data/", {"file": file, "path": path, "selection": "0:2"}, what)
        assert d.alive(), what
    print(f"hostile files: {len(cases)} cases, answers by status {sorted(statuses.items())}")
    assert statuses.get(200) and len(statuses) > 1
    assert ok_json_noauth(base, "/files/") == [f"case{i}.h5" for i in range(4)]


# ---- several connections ---------------------------------------------------------------


def test_a_slow_read_holds_up_no_other_connection(start_daemon):
    """h5web fires several requests at once, each on a connection of its own: they are
    answered side by side. With every storage read delayed (the fault command's delay_ms),
    a /data/ read lasting seconds runs while /meta/, /attr/ and /files/ on other
    connections are answered again and again, each before it ends."""
    port = free_port()
    d = start_daemon(locales=2, env={"H5ARK_FAULTS": "1"},
                     extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    big = np.arange(100_000, dtype=np.float64)
    with h5py.File(d.data_dir / "slow.h5", "w") as f:
        f["big"] = big
    with h5py.File(d.data_dir / "quick.h5", "w") as f:
        f["x"] = np.arange(3)
        f["x"].attrs["note"] = "quick"
    delay = 0.3 * TOOL_SLOWDOWN  # per storage read: the read lasts several
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "fault",
                                  "args": {"nth": 0, "delay_ms": int(delay * 1000)}})
    assert hdr["ok"], hdr
    slow = {}

    def read_slowly():
        t = time.monotonic()
        slow["answer"] = http(base, "/data", {"file": "slow.h5", "path": "/big",
                                              "format": "bin"}, token=None)
        slow["took"], slow["done"] = time.monotonic() - t, time.monotonic()

    reader = threading.Thread(target=read_slowly)
    reader.start()
    time.sleep(0.3)
    rounds = []
    try:
        while reader.is_alive() and len(rounds) < 50:
            start = time.monotonic()
            meta = json.loads(http(base, "/meta", {"file": "quick.h5"}, token=None)[2])
            assert [c["name"] for c in meta["children"]] == ["x"]
            assert json.loads(http(base, "/attr", {"file": "quick.h5", "path": "/x"},
                                   token=None)[2]) == {"note": "quick"}
            assert "slow.h5" in json.loads(http(base, "/files", token=None)[2])
            rounds.append((start, time.monotonic()))
    finally:
        reader.join(120 * TOOL_SLOWDOWN)
        request(d.endpoint, {"v": 1, "cmd": "fault", "args": {"nth": 0}})
    status, _, body = slow["answer"]
    assert status == 200
    np.testing.assert_array_equal(np.frombuffer(body, np.float64), big)
    assert slow["took"] > 2 * delay, slow["took"]  # the read was slow indeed
    answered = [end for start, end in rounds if end < slow["done"]]
    assert len(answered) >= 2, (len(rounds), slow["took"])
    assert d.alive()


def test_many_connections_at_once(gw):
    """Twelve clients, each with its own connections, asking for metadata, attributes and
    values of several files at the same time: every answer is right."""
    d, base = gw
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        img, f64 = f["img"][()], f["f64"][()]
    problems = []

    def client(k):
        try:
            for i in range(15):
                row = (k + i) % img.shape[0]
                got = ok_json(base, "/data", file="plain.h5", path="/img", selection=str(row))
                assert got == img[row].tolist()
                status, _, body = http(base, "/data", {"file": "plain.h5", "path": "/f64",
                                                       "format": "bin"})
                assert status == 200 and np.array_equal(np.frombuffer(body), f64)
                assert ok_json(base, "/meta", file="ark.h5", path="/s")["shape"] == [4]
                assert ok_json(base, "/attr", file="plain.h5", path="/img") == {
                    "units": "counts"}
        except Exception as e:  # reported below, with the client that saw it
            problems.append((k, repr(e)))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120 * TOOL_SLOWDOWN)
    assert not problems, problems[:3]
    assert memory_used_settles(d, TOKEN) == 0


def test_answers_count_against_max_memory(start_daemon):
    """Answers go out side by side, so each one's memory (the values read, gathered and
    encoded) counts against --max-memory until it is sent: an answer that would pass the
    limit is 413 saying so, a smaller one goes through, and nothing stays counted."""
    port = free_port()
    limit = 4 << 20
    d = start_daemon(locales=1, max_memory=str(limit),
                     extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    values = np.arange(limit // 8 * 3 // 8, dtype=np.float64)  # 1.5 MiB: the read fits
    with h5py.File(d.data_dir / "m.h5", "w") as f:
        f["v"] = values
    params = {"file": "m.h5", "path": "/v", "format": "bin"}
    assert "--max-memory" in error(base, "/data", 413, params, token=None)
    status, _, body = http(base, "/data", {**params, "selection": "0:50000"}, token=None)
    assert status == 200
    np.testing.assert_array_equal(np.frombuffer(body), values[:50000])
    assert memory_used_settles(d) == 0
    assert d.alive()


def counted(metrics_url):
    """{(cmd, outcome): n} of h5ark_requests_total in one scrape."""
    with urllib.request.urlopen(metrics_url, timeout=HTTP_TIMEOUT) as r:
        text = r.read().decode()
    return {(m[1], m[2]): int(m[3]) for m in re.finditer(
        r'^h5ark_requests_total\{cmd="([^"]*)",outcome="([^"]*)"\} (\d+)$', text, re.M)}


def test_requests_in_status_and_the_metrics(start_daemon):
    """The gateway's requests go through the entry as the protocol's do: listed in `status`
    while they run, under their route's name (http_meta, http_data, ...), and counted in
    the metrics by route and outcome once answered; the viewer page's files are not."""
    port = free_port()
    d = start_daemon(locales=1, env={**os.environ, "H5ARK_FAULTS": "1"},
                     extra_args=["--http-endpoint", f"127.0.0.1:{port}",
                                 "--metrics-endpoint", "127.0.0.1:0"])
    base = f"http://127.0.0.1:{port}"
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "getconfig"})
    metrics_url = f"http://{hdr['result']['metrics_endpoint']}/metrics"
    with h5py.File(d.data_dir / "s.h5", "w") as f:
        f["v"] = np.arange(4000, dtype=np.float64)
    before = counted(metrics_url)
    assert ok_json_noauth(base, "/meta/", file="s.h5", path="/v")["shape"] == [4000]
    assert ok_json_noauth(base, "/attr/", file="s.h5", path="/v") == {}
    assert ok_json_noauth(base, "/data/", file="s.h5", path="/v", selection="0:3") == [0, 1, 2]
    assert "s.h5" in json.dumps(ok_json_noauth(base, "/files/"))
    assert http(base, "/meta/", {"file": "none.h5", "path": "/"}, token=None)[0] == 404
    assert http(base, "/data/", {"file": "s.h5", "path": "/v", "selection": "x"},
                token=None)[0] == 400
    http(base, "/", token=None)  # the page: no request of the API
    after = counted(metrics_url)
    assert {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)} == {
        ("http_meta", "ok"): 1, ("http_attr", "ok"): 1, ("http_data", "ok"): 1,
        ("http_files", "ok"): 1, ("http_meta", "not_found"): 1, ("http_data", "bad_request"): 1}

    # every read of the file's bytes slowed down: the read is seen in flight, then gone
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "fault", "args": {"delay_ms": 200}})
    assert hdr["ok"], hdr
    got = []
    reader = threading.Thread(target=lambda: got.append(
        http(base, "/data/", {"file": "s.h5", "path": "/v", "format": "bin"}, token=None)))
    reader.start()
    seen = []
    deadline = time.monotonic() + 30 * TOOL_SLOWDOWN
    while reader.is_alive() and not seen and time.monotonic() < deadline:
        hdr, _ = request(d.endpoint, {"v": 1, "cmd": "status"})
        seen = [r for r in hdr["result"]["requests"] if r["cmd"] == "http_data"]
        time.sleep(0.02)
    reader.join(60 * TOOL_SLOWDOWN)
    request(d.endpoint, {"v": 1, "cmd": "fault", "args": {"delay_ms": 0}})
    assert seen, "the gateway's read was never listed in status"
    assert got[0][0] == 200 and np.array_equal(np.frombuffer(got[0][2]), np.arange(4000.0))
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "status"})
    assert [r for r in hdr["result"]["requests"] if r["cmd"].startswith("http_")] == []
    assert counted(metrics_url)[("http_data", "ok")] == after[("http_data", "ok")] + 1
