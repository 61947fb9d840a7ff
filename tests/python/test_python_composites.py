"""The h5ark Python package's composite classes against a real daemon: SegArray,
Categorical, GroupBy (and aggregations), DataFrame (pandas in and out), Index /
MultiIndex, N-d arrays, bigint and tagged arrays. Each goes client object -> daemon ->
get, and -> to_hdf -> read_hdf -> same class and values, the files checked with h5py;
results are compared with numpy and pandas."""

import h5py
import numpy as np
import pytest

from conftest import h5_pdarray, h5_strings
from wire import unique

import h5ark
from h5ark import codec
from h5ark.objects import class_for, make_object

pd = pytest.importorskip("pandas")

LOCALES = 3  # the `daemon` fixture's locale count


def files_of(daemon, path, file_type):
    """The files a to_hdf of `path` wrote, in locale order (absolute paths)."""
    if file_type == "single":
        return [str(daemon.data_dir / path)]
    stem, dot, ext = path.rpartition(".")
    return [str(daemon.data_dir / f"{stem}_LOCALE{i:04d}.{ext}") for i in range(LOCALES)]


def attr(node, key):
    value = node.attrs[key]
    return value.decode() if isinstance(value, bytes) else value


def h5_segarray(files, group):
    """Rows of a SegArray over files (segments restart in each file)."""
    rows = []
    for f in files:
        with h5py.File(f, "r") as h:
            node = h[f"{group}/values"]
            values = (h5_strings([f], f"{group}/values") if isinstance(node, h5py.Group)
                      else node[()].tolist())
            segments = h[f"{group}/segments"][()].tolist()
            if segments:
                assert segments[0] == 0, "segments are rebased per file"
            rows += [values[s:e] for s, e in zip(segments, segments[1:] + [len(values)])]
    return rows


def roundtrip(obj, daemon, file_type="distribute", **kwargs):
    """to_hdf then read_hdf: (the object read back, the files written)."""
    path = unique(obj.objtype) + ".h5"
    result = obj.to_hdf(path, dataset="obj", file_type=file_type, **kwargs)
    files = files_of(daemon, path, file_type)
    assert sorted(str(daemon.data_dir / f) for f in result["files"]) == sorted(files)
    back = obj._client.read_hdf(path if file_type == "single" else
                                path.replace(".h5", "_LOCALE*.h5"))
    return back, files


# -- offline: the codec and the class factory -------------------------------------------

def test_class_for_descriptors():
    def desc(objtype, dtype="int64", **more):
        return {"name": "x", "objtype": objtype, "dtype": dtype, "size": 0, **more}

    assert class_for(desc("pdarray")) is h5ark.pdarray
    assert class_for(desc("pdarray", "bigint")) is h5ark.pdarray
    assert class_for(desc("arrayview")) is h5ark.ArrayView
    assert class_for(desc("pdarray", tag="datetime64[ns]")) is h5ark.Datetime
    assert class_for(desc("pdarray", tag="timedelta64[ns]")) is h5ark.Timedelta
    assert class_for(desc("pdarray", "uint64", tag="ipv4")) is h5ark.IPv4
    assert class_for(desc("strings", "str")) is h5ark.Strings
    for objtype, cls in [("segarray", h5ark.SegArray), ("categorical", h5ark.Categorical),
                         ("groupby", h5ark.GroupBy), ("dataframe", h5ark.DataFrame),
                         ("index", h5ark.Index), ("multiindex", h5ark.MultiIndex)]:
        assert class_for(desc(objtype)) is cls
        obj = make_object(None, desc(objtype))
        assert type(obj) is cls and obj.name == "x"
    assert type(make_object(None, desc("mystery"))) is h5ark.H5arkObject


def test_codec_bigint_and_nested_buffers():
    values = [0, 1, 2 ** 64 - 1, 2 ** 64, 2 ** 130 + 7]
    args, buffers = codec.encode_bigint(values)
    assert args == {"objtype": "pdarray", "dtype": "bigint", "shape": [5], "max_bits": -1}
    assert [n for n, _ in buffers] == ["Limb_0", "Limb_1", "Limb_2"]
    assert all(b.dtype == np.dtype("<u8") for _, b in buffers)
    desc = {"objtype": "pdarray", "dtype": "bigint", "itemsize": 24,
            "components": {f"Limb_{i}": {} for i in range(3)}}
    by_name = {n: memoryview(b).cast("B") for n, b in buffers}
    assert codec.decode(desc, by_name).tolist() == values
    nested = {f"{n}/values": v for n, v in by_name.items()}  # generic component naming
    assert codec.decode(desc, nested).tolist() == values
    with pytest.raises(ValueError):
        codec.encode_bigint([-1])
    # A segarray of strings: buffers named "<component>/<buffer>".
    _, strs = codec.encode_strings(["a", "bc", "", "d"])
    sa = {"objtype": "segarray", "components": {
        "segments": {"objtype": "pdarray", "dtype": "int64", "shape": [2]},
        "values": {"objtype": "strings", "dtype": "str"}}}
    bufs = {"segments/values": np.array([0, 3], "<i8").view("B"),
            **{f"values/{n}": memoryview(np.frombuffer(bytes(b), "B") if isinstance(b, bytes)
                                         else b.view("B")) for n, b in strs}}
    decoded = codec.decode(sa, bufs)
    assert decoded["values"] == ["a", "bc", "", "d"]
    assert [r.tolist() for r in h5ark.SegArray._rows(sa, decoded)] == [["a", "bc", ""], ["d"]]


def test_codec_tags():
    ns = np.array([0, 1, -5, 10 ** 18], dtype="datetime64[ns]")
    args, buffers = codec.encode_pdarray(ns)
    assert args["dtype"] == "int64" and args["tag"] == "datetime64[ns]"
    with pytest.raises(TypeError):
        codec.encode_pdarray(ns.astype("datetime64[s]"))
    assert codec.format_ipv4(codec.parse_ipv4(["1.2.3.4", "255.255.255.255", 0])) == \
        ["1.2.3.4", "255.255.255.255", "0.0.0.0"]


# -- N-d arrays -------------------------------------------------------------------------

def test_nd_array_roundtrip(client, daemon):
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 1.5
    a = h5ark.array(want, name=unique("nd"))
    assert isinstance(a, h5ark.ArrayView) and a.objtype == "arrayview"
    assert a.shape == (2, 3, 4) and a.ndim == 3 and a.size == 24 and a.dtype == np.float32
    got = a.to_ndarray()
    assert got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(a.to_ndarray(1, 2), want[1:2])  # first-axis rows
    # Only the view is left in the registry (the flat upload is gone).
    assert [o.name for o in client.info()] == [a.name]


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_nd_array_hdf(client, daemon, file_type):
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 1.5
    a = h5ark.array(want)
    back, files = roundtrip(a, daemon, file_type)
    obj = back["obj"]
    assert isinstance(obj, h5ark.ArrayView) and obj.shape == (2, 3, 4)
    assert np.array_equal(obj.to_ndarray(), want)
    with h5py.File(files[0], "r") as h:
        assert attr(h["obj"], "ObjType") == 0 and attr(h["obj"], "Rank") == 3
        assert list(h["obj"].attrs["Shape"]) == [2, 3, 4]
    assert np.array_equal(h5_pdarray(files, "obj"), want.ravel())


def test_reshape(client, daemon):
    flat = client.arange(12)
    m = flat.reshape(3, 4)
    assert isinstance(m, h5ark.ArrayView) and m.shape == (3, 4)
    assert np.array_equal(m.to_ndarray(), np.arange(12).reshape(3, 4))
    assert h5ark.reshape(flat, (2, -1)).shape == (2, 6)
    back = m.reshape([12])
    assert type(back) is h5ark.pdarray and back.shape == (12,)
    assert np.array_equal(back.to_ndarray(), np.arange(12))
    assert m.reshape((2, 2, 3)).to_ndarray().shape == (2, 2, 3)
    with pytest.raises(h5ark.BadRequestError):
        flat.reshape(5, 3)
    with pytest.raises(h5ark.ObjectTypeError):
        client.reshape(client.array(["a", "b"]), [2, 1])
    with pytest.raises(h5ark.NotFoundError):
        client.reshape("no_such_object", [1])
    nd = client.array(np.ones((4, 5), dtype=bool))
    assert nd.to_ndarray().dtype == bool and nd.to_ndarray().shape == (4, 5)
    times = np.arange(6).astype("datetime64[ns]")
    t = client.array(times).reshape(6)  # rank 1 keeps a pdarray's tag
    assert isinstance(t, h5ark.Datetime) and np.array_equal(t.to_ndarray(), times)


# -- bigint -----------------------------------------------------------------------------

BIG = [0, 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 2 ** 100 + 12345, 2 ** 191 - 1, 7]


def test_bigint_put_get(client):
    b = h5ark.array(BIG, dtype="bigint", max_bits=-1)
    assert type(b) is h5ark.pdarray and b.dtype == "bigint"
    assert b.size == len(BIG) and b.max_bits == -1 and b.itemsize == 8 * 3
    assert b.to_list() == BIG
    got = b.to_ndarray()
    assert got.dtype == object and got.tolist() == BIG
    assert b.to_list(2, 6) == BIG[2:6]
    # Limbs are components (uint64 pdarrays, least significant first).
    limb1 = b.component("Limb_1")
    assert limb1.name == f"{b.name}/Limb_1" and limb1.dtype == np.uint64
    assert limb1.to_list() == [(v >> 64) & (2 ** 64 - 1) for v in BIG]
    reply = client.get(b)
    assert set(n.split("/")[0] for n in reply.buffers) == {"Limb_0", "Limb_1", "Limb_2"}
    # numpy object arrays of Python ints (and ints beyond 64 bits) are bigints unasked.
    auto = client.array(np.array(BIG, dtype=object))
    assert auto.dtype == "bigint" and auto.to_list() == BIG
    assert client.array([2 ** 70, 3]).dtype == "bigint"
    small = client.array([1, 2, 3], dtype="bigint")
    assert small.dtype == "bigint" and small.itemsize == 8 and small.to_list() == [1, 2, 3]
    assert client.array([], dtype="bigint").to_list() == []


def test_bigint_bounds(client):
    bounded = client.array([2 ** 70 - 1, 5], dtype="bigint", max_bits=70)
    assert bounded.max_bits == 70 and bounded.to_list() == [2 ** 70 - 1, 5]
    with pytest.raises(h5ark.ObjectTypeError):
        client.array([2 ** 70, 5], dtype="bigint", max_bits=70)
    with pytest.raises(ValueError):
        client.array([-1, 2], dtype="bigint")
    with pytest.raises(TypeError):
        client.array([1, 2], max_bits=8)


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_bigint_hdf(client, daemon, file_type):
    b = client.array(BIG, dtype="bigint", max_bits=200)
    back, files = roundtrip(b, daemon, file_type)
    obj = back["obj"]
    assert type(obj) is h5ark.pdarray and obj.dtype == "bigint" and obj.max_bits == 200
    assert obj.to_list() == BIG
    with h5py.File(files[0], "r") as h:
        g = h["obj"]
        assert isinstance(g, h5py.Group)
        assert attr(g, "isBigInt") == 1 and attr(g, "MaxBits") == 200
        assert attr(g, "NumLimbs") == 3
    limbs = [h5_pdarray(files, f"obj/Limb_{i}") for i in range(3)]
    assert [sum(int(limbs[i][j]) << (64 * i) for i in range(3))
            for j in range(len(BIG))] == BIG


def test_bigint_hdf_empty_shards(start_daemon):
    # Fewer elements than locales: some files hold 0-length limbs. Own daemon, so a
    # failure here cannot take the other tests' daemon down with it.
    d = start_daemon(locales=LOCALES)
    with h5ark.connect(d.endpoint, timeout=30) as c:
        for values in ([2 ** 70 + 1, 3], [5]):
            b = c.array(values, dtype="bigint")
            path = unique("bigsmall") + ".h5"
            b.to_hdf(path, dataset="b")
            assert c.read_hdf(path)["b"].to_list() == values


# -- tags -------------------------------------------------------------------------------

def test_datetime_timedelta_ipv4(client, daemon):
    times = np.array(["1969-12-31T23:59:59.999999999", "2024-02-29T12:00:00",
                      "2262-04-11T23:47:16.854775807"], dtype="datetime64[ns]")
    spans = np.array([-1, 0, 86_400 * 10 ** 9], dtype="timedelta64[ns]")
    t, s = h5ark.array(times), h5ark.array(spans)
    assert isinstance(t, h5ark.Datetime) and t.tag == "datetime64[ns]" and t.dtype == np.int64
    assert isinstance(s, h5ark.Timedelta) and s.tag == "timedelta64[ns]"
    assert t.to_ndarray().dtype == np.dtype("datetime64[ns]")
    assert np.array_equal(t.to_ndarray(), times) and np.array_equal(s.to_ndarray(), spans)
    ip = h5ark.ip_address(["10.0.0.1", "192.168.1.254", "255.255.255.255"])
    assert isinstance(ip, h5ark.IPv4) and ip.tag == "ipv4" and ip.dtype == np.uint64
    assert ip.to_list() == ["10.0.0.1", "192.168.1.254", "255.255.255.255"]
    assert ip.export_uint().tolist() == [0x0A000001, 0xC0A801FE, 0xFFFFFFFF]
    ip64 = client.array(np.array([1, 2], dtype=np.int64), tag="ipv4")
    assert isinstance(ip64, h5ark.IPv4) and ip64.to_list() == ["0.0.0.1", "0.0.0.2"]
    with pytest.raises(h5ark.ObjectTypeError):
        client.array(np.array([1.5]), tag="datetime64[ns]")  # tags are for int64
    with pytest.raises(ValueError):
        client.array(np.array([1]), tag="datetime64[us]")

    path = unique("tags") + ".h5"
    client.to_hdf({"t": t, "s": s, "ip": ip}, path)
    files = files_of(daemon, path, "distribute")
    back = client.read_hdf(path.replace(".h5", "_LOCALE*.h5"))
    assert isinstance(back["t"], h5ark.Datetime) and np.array_equal(back["t"].to_ndarray(), times)
    assert isinstance(back["s"], h5ark.Timedelta) and np.array_equal(back["s"].to_ndarray(), spans)
    assert isinstance(back["ip"], h5ark.IPv4) and back["ip"].to_list() == ip.to_list()
    with h5py.File(files[0], "r") as h:
        assert [attr(h[d], "ObjType") for d in ("t", "s", "ip")] == [7, 8, 9]
    assert np.array_equal(h5_pdarray(files, "t"), times.view(np.int64))


# -- SegArray ---------------------------------------------------------------------------

ROWS = [[1, 2, 3], [], [4], [5, 6], [], [7, 8, 9, 10], [11]]


def test_segarray_from_lists(client):
    sa = h5ark.SegArray(ROWS)
    assert isinstance(sa, h5ark.SegArray) and sa.objtype == "segarray"
    assert len(sa) == len(ROWS) and sa.dtype == np.int64
    assert list(sa.components) == ["segments", "values"]
    assert sa.to_list() == ROWS
    assert np.array_equal(sa.lengths, [len(r) for r in ROWS])
    assert isinstance(sa.segments, h5ark.pdarray) and sa.segments.name == f"{sa.name}/segments"
    assert sa.segments.to_list() == [0, 3, 3, 4, 6, 6, 10]
    assert sa.values.to_list() == [x for r in ROWS for x in r]
    nd = sa.to_ndarray()
    assert nd.dtype == object and all(np.array_equal(a, r) for a, r in zip(nd, ROWS))
    # Only the segarray is a registry name; its uploads were released.
    assert [o.name for o in client.info()] == [sa.name]
    # A component path is a name wherever one is accepted.
    assert client.info([f"{sa.name}/values"])[0].size == 11
    reply = client.get(sa)
    assert set(reply.buffers) == {"segments/values", "values/values"}


def test_segarray_from_components_and_strings(client):
    values = client.array(np.arange(6, dtype=np.float32) / 2)
    segments = client.array([0, 2, 2, 5])
    sa = h5ark.SegArray(segments, values, name=unique("sa"))
    assert sa.dtype == np.float32
    assert sa.to_list() == [[0.0, 0.5], [], [1.0, 1.5, 2.0], [2.5]]
    assert sa.values.name == f"{sa.name}/values"
    assert segments.to_list() == [0, 2, 2, 5] and values.size == 6  # still there
    words = h5ark.SegArray([["a", "bb"], [], ["Grüße", ""], ["x"]])
    assert words.dtype == "str" and isinstance(words.values, h5ark.Strings)
    assert words.to_list() == [["a", "bb"], [], ["Grüße", ""], ["x"]]
    assert set(client.get(words).buffers) == {"segments/values", "values/segments",
                                               "values/values"}
    arrays = client.SegArray([np.array([1.5, 2.5]), np.array([], dtype=float)])
    assert arrays.to_list() == [[1.5, 2.5], []]
    empty = client.SegArray([[], []], dtype="int32")
    assert empty.to_list() == [[], []] and empty.dtype == np.int32


def test_segarray_errors(client):
    values = client.arange(5)
    with pytest.raises(h5ark.BadRequestError):
        client.segarray(client.array([1, 2]), values)          # segments[0] != 0
    with pytest.raises(h5ark.BadRequestError):
        client.segarray(client.array([0, 3, 2]), values)       # decreasing
    with pytest.raises(h5ark.BadRequestError):
        client.segarray(client.array([0, 6]), values)          # past the end
    with pytest.raises(h5ark.ObjectTypeError):
        client.segarray(client.array([0.0, 1.0]), values)      # not int64
    with pytest.raises(h5ark.NotFoundError):
        client.segarray("nope", values)


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_segarray_hdf(client, daemon, file_type):
    for rows in (ROWS, [["a", "bb"], [], ["ccc"], ["d", "e", "f"], []]):
        sa = client.SegArray(rows)
        back, files = roundtrip(sa, daemon, file_type)
        obj = back["obj"]
        assert isinstance(obj, h5ark.SegArray) and obj.to_list() == rows
        with h5py.File(files[0], "r") as h:
            assert attr(h["obj"], "ObjType") == 3
        assert h5_segarray(files, "obj") == rows


# -- Categorical ------------------------------------------------------------------------

WORDS = ["pear", "apple", "pear", "fig", "apple", "pear", "Zebra", ""]


def test_categorical_from_strings(client):
    c = h5ark.Categorical(WORDS)
    assert isinstance(c, h5ark.Categorical) and c.dtype == "str" and len(c) == len(WORDS)
    cats = sorted(set(WORDS), key=lambda s: s.encode()) + ["N/A"]
    assert c.categories.to_list() == cats
    assert c.codes.to_list() == [cats.index(w) for w in WORDS]
    assert c.na_value == "N/A" and c.na_code == len(cats) - 1
    assert c.to_list() == WORDS
    assert c.to_ndarray().dtype == object and c.to_ndarray().tolist() == WORDS
    assert c.permutation is None and c.segments is None
    s = client.array(WORDS)
    kept = client.Categorical(s, keep_groups=True, na_value="missing")
    assert kept.na_value == "missing" and kept.categories.to_list()[-1] == "missing"
    codes = kept.codes.to_ndarray()
    assert np.array_equal(kept.permutation.to_ndarray(), np.argsort(codes, kind="stable"))
    # As Arkouda keeps them: one group per distinct value (the appended NA has none).
    _, counts = np.unique(codes, return_counts=True)
    assert kept.segments.to_list() == np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()


def test_categorical_from_codes_and_pandas(client):
    c = h5ark.Categorical.from_codes([2, 0, 1, 0], ["a", "b", "c"])
    assert c.to_list() == ["c", "a", "b", "a"]
    assert c.categories.to_list() == ["a", "b", "c", "N/A"] and c.na_code == 3
    with pytest.raises(h5ark.BadRequestError):
        client.Categorical(codes=[0, 3], categories=["a", "b"])
    with pytest.raises(h5ark.ObjectTypeError):
        client.categorical(values=client.arange(3))
    pc = pd.Categorical(["x", None, "y", "x"], categories=["y", "x"])
    hc = h5ark.Categorical(pc)
    assert hc.to_list() == ["x", "N/A", "y", "x"]
    back = hc.to_pandas()
    assert list(back.categories) == ["y", "x"]
    assert back.isna().tolist() == [False, True, False, False]
    assert pd.Series(back).astype(object).fillna("?").tolist() == ["x", "?", "y", "x"]


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_categorical_hdf(client, daemon, file_type):
    c = client.Categorical(WORDS, keep_groups=True)
    back, files = roundtrip(c, daemon, file_type)
    obj = back["obj"]
    assert isinstance(obj, h5ark.Categorical) and obj.to_list() == WORDS
    assert obj.na_value == "N/A"
    assert np.array_equal(obj.permutation.to_ndarray(), c.permutation.to_ndarray())
    with h5py.File(files[0], "r") as h:
        g = h["obj"]
        assert attr(g, "ObjType") == 4
        assert {"codes", "categories", "NA_Codes", "permutation", "segments"} <= set(g)
    codes = h5_pdarray(files, "obj/codes")
    cats = h5_strings(files, "obj/categories")  # categories are distributed too
    assert [cats[k] for k in codes] == WORDS


# -- GroupBy ----------------------------------------------------------------------------

def _pandas_groups(keys, values):
    frame = pd.DataFrame({f"k{i}": k for i, k in enumerate(keys)} | {"v": values})
    return frame.groupby([f"k{i}" for i in range(len(keys))], sort=True, dropna=False)["v"]


@pytest.fixture
def grouped_data():
    rng = np.random.default_rng(11)
    n = 1000
    return {"ints": rng.integers(-5, 20, n), "words": rng.choice(["b", "a", "ç", "dd"], n),
            "vals": rng.standard_normal(n), "i32": rng.integers(-100, 100, n).astype(np.int32),
            "u8": rng.integers(0, 255, n).astype(np.uint8), "flags": rng.random(n) < 0.3}


def test_groupby_one_key(client, grouped_data):
    keys, vals = grouped_data["ints"], grouped_data["vals"]
    g = h5ark.GroupBy(client.array(keys))
    uniq, first_idx, counts = np.unique(keys, return_index=True, return_counts=True)
    assert isinstance(g, h5ark.GroupBy) and g.ngroups == len(uniq) and len(g) == keys.size
    assert g.dtype == "int64"
    perm = np.argsort(keys, kind="stable")
    assert np.array_equal(g.permutation.to_ndarray(), perm)
    assert np.array_equal(g.segments.to_ndarray(), np.concatenate([[0], np.cumsum(counts)[:-1]]))
    assert np.array_equal(g.unique_key_idx.to_ndarray(), first_idx)
    assert len(g.keys) == 1 and np.array_equal(g.keys[0].to_ndarray(), keys)
    expect = _pandas_groups([keys], vals)
    k, c = g.count()
    assert np.array_equal(k.to_ndarray(), uniq) and np.array_equal(c.to_ndarray(), counts)
    assert c.dtype == np.int64
    v = client.array(vals)
    for op in ("sum", "min", "max", "mean", "first", "nunique"):
        k, got = getattr(g, op)(v)
        assert np.array_equal(k.to_ndarray(), uniq)
        want = getattr(expect, op)().to_numpy()
        np.testing.assert_allclose(got.to_ndarray(), want, rtol=1e-12, err_msg=op)
    k, got = g.aggregate(vals, "max")  # numpy data is uploaded
    assert np.array_equal(got.to_ndarray(), expect.max().to_numpy())


def test_groupby_result_dtypes(client, grouped_data):
    g = client.GroupBy(grouped_data["ints"])
    expect = lambda name: _pandas_groups([grouped_data["ints"]], grouped_data[name])
    _, s = g.sum(grouped_data["i32"])
    assert s.dtype == np.int64 and np.array_equal(s.to_ndarray(), expect("i32").sum())
    _, s = g.sum(grouped_data["u8"])
    assert s.dtype == np.uint64 and np.array_equal(s.to_ndarray(), expect("u8").sum())
    _, s = g.sum(grouped_data["flags"])
    assert s.dtype == np.int64 and np.array_equal(s.to_ndarray(), expect("flags").sum())
    _, m = g.min(grouped_data["i32"])
    assert m.dtype == np.int32 and np.array_equal(m.to_ndarray(), expect("i32").min())
    _, m = g.mean(grouped_data["u8"])
    assert m.dtype == np.float64
    np.testing.assert_allclose(m.to_ndarray(), expect("u8").mean(), rtol=1e-12)
    _, f = g.first(client.array(grouped_data["words"].tolist()))
    assert isinstance(f, h5ark.Strings) and f.to_list() == expect("words").first().tolist()
    _, u = g.nunique(grouped_data["words"].tolist())
    assert u.dtype == np.int64 and u.to_list() == expect("words").nunique().tolist()


def test_groupby_strings_categorical_and_multikey(client, grouped_data):
    words, ints, vals = grouped_data["words"], grouped_data["ints"], grouped_data["vals"]
    gs = h5ark.GroupBy(client.array(words.tolist()))
    k, c = gs.count()
    want = pd.Series(words).value_counts().sort_index(key=lambda s: s.str.encode("utf-8"))
    assert isinstance(k, h5ark.Strings) and k.to_list() == want.index.tolist()
    assert c.to_list() == want.tolist()
    cat = client.Categorical(words.tolist())
    gc = client.GroupBy(cat)
    kc, sums = gc.sum(vals)
    assert isinstance(kc, h5ark.Categorical) and kc.to_list() == want.index.tolist()
    np.testing.assert_allclose(sums.to_ndarray(), _pandas_groups([words], vals).sum(),
                               rtol=1e-12)
    g2 = client.GroupBy(client.array(ints), client.array(words.tolist()))
    assert g2.nkeys == 2
    (k0, k1), means = g2.mean(vals)
    expect = _pandas_groups([ints, words], vals).mean()
    assert g2.ngroups == len(expect)
    assert list(zip(k0.to_list(), k1.to_list())) == expect.index.tolist()
    np.testing.assert_allclose(means.to_ndarray(), expect.to_numpy(), rtol=1e-12)
    same = h5ark.GroupBy([ints, words])  # one list of keys
    assert same.ngroups == g2.ngroups


def test_groupby_floats_nan_last(client):
    keys = np.array([2.5, np.nan, -1.0, 2.5, np.nan, -np.inf])
    k, c = client.GroupBy(keys).count()
    got = k.to_ndarray()
    assert np.array_equal(got[:-1], [-np.inf, -1.0, 2.5]) and np.isnan(got[-1])
    assert c.to_list() == [1, 1, 2, 2]


def test_groupby_errors(client):
    with pytest.raises(h5ark.BadRequestError):
        client.groupby([client.arange(3), client.arange(4)])
    g = client.GroupBy(client.arange(3))
    with pytest.raises(h5ark.BadRequestError):
        g.aggregate(client.arange(3), "median")
    with pytest.raises(h5ark.ObjectTypeError):
        g.sum(client.array(["a", "b", "c"]))
    with pytest.raises(h5ark.BadRequestError):
        g.sum(client.arange(4))
    with pytest.raises(h5ark.NotFoundError):
        client.groupby(["nope"])


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_groupby_hdf(client, daemon, grouped_data, file_type):
    g = client.GroupBy(client.array(grouped_data["ints"]),
                       client.array(grouped_data["words"].tolist()))
    back, files = roundtrip(g, daemon, file_type)
    obj = back["obj"]
    assert isinstance(obj, h5ark.GroupBy) and obj.ngroups == g.ngroups and obj.nkeys == 2
    for part in ("permutation", "segments", "unique_key_idx"):
        assert np.array_equal(getattr(obj, part).to_ndarray(), getattr(g, part).to_ndarray())
    assert isinstance(obj.keys[1], h5ark.Strings)
    assert obj.keys[1].to_list() == grouped_data["words"].tolist()
    with h5py.File(files[0], "r") as h:
        assert attr(h["obj"], "ObjType") == 5 and attr(h["obj"], "NumKeys") == 2
        assert {"permutation", "segments", "unique_key_idx", "KEY_0", "KEY_1"} <= set(h["obj"])
    assert np.array_equal(h5_pdarray(files, "obj/KEY_0"), grouped_data["ints"])


# -- Index / MultiIndex -----------------------------------------------------------------

def test_index_and_multiindex(client, daemon):
    idx = h5ark.Index(["r0", "r1", "r2"], names="row")
    assert isinstance(idx, h5ark.Index) and idx.objtype == "index" and idx.names == ["row"]
    assert idx.to_list() == ["r0", "r1", "r2"] and idx.nlevels == 1
    assert idx.to_pandas().equals(pd.Index(["r0", "r1", "r2"], name="row"))
    mi = client.MultiIndex([np.array([1, 1, 2]), ["a", "b", "a"]], names=["n", "s"])
    assert isinstance(mi, h5ark.MultiIndex) and mi.objtype == "multiindex"
    assert mi.names == ["n", "s"] and [type(l) for l in mi.levels] == [h5ark.pdarray, h5ark.Strings]
    assert mi.to_list() == [(1, "a"), (1, "b"), (2, "a")]
    want = pd.MultiIndex.from_arrays([[1, 1, 2], ["a", "b", "a"]], names=["n", "s"])
    assert mi.to_pandas().equals(want) and mi.to_pandas().names == ["n", "s"]
    anon = client.Index(np.arange(3))
    assert anon.names == [None]
    with pytest.raises(h5ark.BadRequestError):
        client.index([client.arange(2), client.arange(3)])


def test_index_hdf(client, daemon):
    idx = h5ark.Index(["r0", "r1", "r2"], names="row")
    mi = client.MultiIndex([np.array([1, 1, 2]), ["a", "b", "a"]], names=["n", "s"])
    for obj, objtype in ((idx, 12), (mi, 13)):
        back, files = roundtrip(obj, daemon)
        got = back["obj"]
        assert type(got) is type(obj) and got.to_list() == obj.to_list()
        assert got.names == obj.names
        with h5py.File(files[0], "r") as h:
            assert attr(h["obj"], "ObjType") == objtype
            assert attr(h["obj"], "NumIdx") == obj.nlevels


# -- DataFrame --------------------------------------------------------------------------

def sample_pandas(n=10):
    rng = np.random.default_rng(5)
    return pd.DataFrame({
        "zeta": rng.integers(-50, 50, n),
        "alpha": rng.standard_normal(n),
        "flag": rng.random(n) < 0.5,
        "word": pd.Series(rng.choice(["x", "yy", "", "Grüße"], n), dtype=object),
        "kind": pd.Categorical(rng.choice(["lo", "hi"], n), categories=["hi", "lo"]),
        "when": pd.to_datetime(rng.integers(0, 2 * 10 ** 18, n)),
        "small": rng.integers(0, 9, n).astype(np.uint8),
    })


def test_dataframe_from_pandas(client):
    pdf = sample_pandas()
    df = h5ark.DataFrame.from_pandas(pdf)
    assert isinstance(df, h5ark.DataFrame) and df.objtype == "dataframe"
    assert df.columns == list(pdf.columns) and len(df) == len(pdf)
    assert df.index is None
    assert isinstance(df["zeta"], h5ark.pdarray) and df["zeta"].name == f"{df.name}/zeta"
    assert isinstance(df["word"], h5ark.Strings)
    assert isinstance(df["kind"], h5ark.Categorical)
    assert isinstance(df["when"], h5ark.Datetime)
    assert df["word"].to_list() == pdf["word"].tolist()
    pd.testing.assert_frame_equal(df.to_pandas(), pdf)
    assert [o.name for o in client.info()] == [df.name]  # uploads released
    with pytest.raises(KeyError):
        df["nope"]


def test_dataframe_from_dict_with_index_and_segarray(client):
    a = client.arange(4)
    df = client.DataFrame({"b": ["p", "q", "r", "s"], "a": a,
                           "lists": [[1], [], [2, 3], [4, 5, 6]]},
                          index=client.Index(["w", "x", "y", "z"], names="key"))
    assert df.columns == ["b", "a", "lists"]
    assert isinstance(df["lists"], h5ark.SegArray) and df["lists"].to_list() == [[1], [], [2, 3], [4, 5, 6]]
    assert isinstance(df.index, h5ark.Index) and df.index.to_list() == ["w", "x", "y", "z"]
    out = df.to_pandas()
    assert list(out.columns) == ["b", "a", "lists"]
    assert out.index.equals(pd.Index(["w", "x", "y", "z"], name="key"))
    assert [list(v) for v in out["lists"]] == [[1], [], [2, 3], [4, 5, 6]]
    pdf = pd.DataFrame({"v": [1.5, 2.5, 3.5]},
                       index=pd.MultiIndex.from_arrays([[1, 1, 2], ["a", "b", "a"]],
                                                       names=["n", "s"]))
    multi = h5ark.DataFrame(pdf)
    assert isinstance(multi.index, h5ark.MultiIndex)
    pd.testing.assert_frame_equal(multi.to_pandas(), pdf)


def test_dataframe_errors_and_empty(client):
    with pytest.raises(h5ark.BadRequestError):
        client.dataframe([client.arange(3), client.arange(4)], column_names=["a", "b"])
    with pytest.raises(h5ark.BadRequestError):
        client.dataframe([client.arange(3), client.arange(3)], column_names=["a", "a"])
    with pytest.raises(h5ark.ObjectTypeError):
        client.dataframe([client.GroupBy(client.arange(3))], column_names=["g"])
    empty = pd.DataFrame({"a": np.array([], dtype=np.int64), "b": pd.Series([], dtype=object)})
    df = h5ark.DataFrame.from_pandas(empty)
    assert len(df) == 0 and df.columns == ["a", "b"]
    out = df.to_pandas()
    assert list(out.columns) == ["a", "b"] and len(out) == 0


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_dataframe_hdf_group_layout(client, daemon, file_type):
    pdf = sample_pandas(11)
    df = h5ark.DataFrame(pdf.set_index(pd.Index([f"r{i}" for i in range(11)], name="row")))
    back, files = roundtrip(df, daemon, file_type)
    obj = back["obj"]
    assert isinstance(obj, h5ark.DataFrame) and obj.columns == list(pdf.columns)
    pd.testing.assert_frame_equal(obj.to_pandas(), df.to_pandas())
    with h5py.File(files[0], "r") as h:
        g = h["obj"]
        assert attr(g, "ObjType") == 6 and attr(g, "NumCols") == len(pdf.columns)
        assert [c.decode() if isinstance(c, bytes) else c
                for c in g.attrs["ColumnOrder"]] == list(pdf.columns)
        assert set(pdf.columns) | {"Index"} <= set(g)
    assert h5_pdarray(files, "obj/zeta").tolist() == pdf["zeta"].tolist()
    assert h5_strings(files, "obj/word") == pdf["word"].tolist()


def test_dataframe_hdf_columns_layout(client, daemon):
    pdf = sample_pandas(7)
    df = h5ark.DataFrame.from_pandas(pdf)
    path = unique("dfcols") + ".h5"
    client.to_hdf({"df": df}, path, dataframe_layout="columns")
    files = files_of(daemon, path, "distribute")
    with h5py.File(files[0], "r") as h:
        assert set(pdf.columns) <= set(h)
        assert [c.decode() if isinstance(c, bytes) else c
                for c in h.attrs["ColumnOrder"]] == list(pdf.columns)
        assert attr(h["kind"], "ObjType") == 4 and attr(h["word"], "ObjType") == 2
    back = client.read_hdf(path.replace(".h5", "_LOCALE*.h5"))
    assert list(back) == list(pdf.columns)  # ColumnOrder honoured, not alphabetical
    assert isinstance(back["kind"], h5ark.Categorical)
    assert back["kind"].to_list() == pdf["kind"].astype(str).tolist()
    assert np.array_equal(back["when"].to_ndarray(), pdf["when"].to_numpy())


# -- update mode and repack -------------------------------------------------------------

def test_update_and_repack(client, daemon):
    path = unique("upd") + ".h5"
    keep = client.SegArray(ROWS)
    client.to_hdf({"a": client.arange(1000), "keep": keep}, path, file_type="single")
    client.array(np.full(2000, 7.5)).to_hdf(path, dataset="a", mode="update",
                                            file_type="single")
    back = client.read_hdf(path)
    assert back["a"].to_list() == [7.5] * 2000 and back["keep"].to_list() == ROWS
    h5ark.DataFrame({"x": [1, 2]}).update_hdf(path, dataset="keep", file_type="single")
    back = client.read_hdf(path)
    assert isinstance(back["keep"], h5ark.DataFrame) and back["keep"].columns == ["x"]
    with pytest.raises(h5ark.NotFoundError):
        client.to_hdf({"missing": client.arange(2)}, path, mode="update", file_type="single")
    result = client.repack(path)
    assert result["files"] == [path]
    assert result["bytes_after"] <= result["bytes_before"]
    again = client.read_hdf(path)
    assert again["a"].to_list() == [7.5] * 2000
    assert again["keep"].to_pandas()["x"].tolist() == [1, 2]
    dist = unique("rep") + ".h5"
    client.arange(10).to_hdf(dist, dataset="a")
    assert len(h5ark.repack(dist)["files"]) == LOCALES


# -- files written by others: the class comes from the file's layout --------------------

def _strings_group(parent, name, texts, objtype=True):
    g = parent.create_group(name)
    data = b"".join(t.encode() + b"\0" for t in texts)
    g.create_dataset("values", data=np.frombuffer(data, np.uint8))
    lengths = [len(t.encode()) + 1 for t in texts]
    g.create_dataset("segments", data=np.concatenate([[0], np.cumsum(lengths)[:-1]])
                     .astype(np.int64))
    if objtype:
        g.attrs["ObjType"] = np.int64(2)
    return g


def test_read_arkouda_style_file(client, daemon):
    """An h5py file in Arkouda's layouts (children of the categorical without attributes,
    as Arkouda writes single files): read_hdf gives each dataset its class."""
    path = unique("arkouda") + ".h5"
    daemon.data_dir.mkdir(parents=True, exist_ok=True)
    with h5py.File(daemon.data_dir / path, "w") as h:
        h.attrs["File_Format"] = np.int64(0)
        sa = h.create_group("sa")
        sa.attrs["ObjType"] = np.int64(3)
        sa.create_dataset("segments", data=np.array([0, 2, 2], np.int64))
        sa.create_dataset("values", data=np.array([1.5, 2.5, 3.5, 4.5]))
        for child in sa.values():
            child.attrs["ObjType"] = np.int64(1)
        cat = h.create_group("cat")
        cat.attrs["ObjType"] = np.int64(4)
        cat.create_dataset("codes", data=np.array([1, 0, 1, 2], np.int64))
        _strings_group(cat, "categories", ["a", "b", "N/A"], objtype=False)
        cat.create_dataset("NA_Codes", data=np.array([2], np.int64))
        t = h.create_dataset("t", data=np.array([0, 10 ** 18], np.int64))
        t.attrs["ObjType"] = np.int64(7)
        av = h.create_dataset("av", data=np.arange(6, dtype=np.int64))
        av.attrs["ObjType"] = np.int64(0)
        av.attrs["Rank"] = np.int64(2)
        av.attrs["Shape"] = np.array([2, 3], np.int64)
        big = h.create_group("big")
        big.attrs["ObjType"] = np.int64(1)
        big.attrs["isBigInt"], big.attrs["MaxBits"], big.attrs["NumLimbs"] = \
            np.int64(1), np.int64(-1), np.int64(2)
        big.create_dataset("Limb_0", data=np.array([5, 0], np.uint64))
        big.create_dataset("Limb_1", data=np.array([0, 1], np.uint64))
        df = h.create_group("df")
        df.attrs["ObjType"], df.attrs["NumCols"] = np.int64(6), np.int64(2)
        df.create_dataset("a", data=np.array([3, 1], np.int64)).attrs["ObjType"] = np.int64(1)
        _strings_group(df, "b", ["x", "yz"])
    objs = client.read_hdf(path)
    assert isinstance(objs["sa"], h5ark.SegArray)
    assert objs["sa"].to_list() == [[1.5, 2.5], [], [3.5, 4.5]]
    assert isinstance(objs["cat"], h5ark.Categorical)
    assert objs["cat"].to_list() == ["b", "a", "b", "N/A"] and objs["cat"].na_code == 2
    assert isinstance(objs["t"], h5ark.Datetime)
    assert objs["t"].to_ndarray().tolist() == np.array([0, 10 ** 18], "datetime64[ns]").tolist()
    assert isinstance(objs["av"], h5ark.ArrayView) and objs["av"].shape == (2, 3)
    assert np.array_equal(objs["av"].to_ndarray(), np.arange(6).reshape(2, 3))
    assert objs["big"].dtype == "bigint" and objs["big"].to_list() == [5, 2 ** 64]
    assert isinstance(objs["df"], h5ark.DataFrame) and objs["df"].columns == ["a", "b"]
    pd.testing.assert_frame_equal(objs["df"].to_pandas(),
                                  pd.DataFrame({"a": [3, 1], "b": ["x", "yz"]}))


def test_groupby_over_dataframe_columns(client):
    pdf = pd.DataFrame({"k": ["b", "a", "b", "c", "a"], "v": [1, 2, 3, 4, 5]})
    df = h5ark.DataFrame.from_pandas(pdf)
    keys, sums = h5ark.GroupBy(df["k"]).sum(df["v"])  # component paths as arguments
    want = pdf.groupby("k")["v"].sum()
    assert keys.to_list() == want.index.tolist() and sums.to_list() == want.tolist()
    with_index = client.DataFrame({"v": df["v"]}, index=df["k"])
    assert isinstance(with_index.index, h5ark.Index)  # a Strings index becomes an Index
    assert with_index.to_pandas().index.tolist() == pdf["k"].tolist()
    assert with_index.columns == ["v"]


def test_composites_append_and_columns_layout_with_index(client, daemon):
    path = unique("many") + ".h5"
    sa, cat = client.SegArray(ROWS), client.Categorical(WORDS)
    client.to_hdf({"sa": sa}, path)
    client.to_hdf({"cat": cat}, path, mode="append")
    df = client.DataFrame({"n": np.arange(3), "s": ["a", "b", "c"]},
                          index=client.Index(np.array([10, 20, 30]), names="id"))
    client.to_hdf({"df": df}, path, mode="append", dataframe_layout="columns")
    with pytest.raises(h5ark.AlreadyExistsError):
        client.to_hdf({"sa": sa}, path, mode="append")
    back = client.read_hdf(path.replace(".h5", "_LOCALE*.h5"))
    assert back["sa"].to_list() == ROWS and back["cat"].to_list() == WORDS
    assert isinstance(back["Index"], h5ark.Index) and back["Index"].to_list() == [10, 20, 30]
    assert back["n"].to_list() == [0, 1, 2] and back["s"].to_list() == ["a", "b", "c"]
    assert [k for k in back if k in ("n", "s")] == ["n", "s"]
