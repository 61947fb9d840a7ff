"""Row selection on the Python client's objects against a real daemon: `obj[key]` for
every class with rows and every kind of key, checked against numpy (pandas' `.iloc` for
DataFrame) applied to the same data; `len`, `shape`, `dtype`, `np.asarray`, iteration;
errors raised before anything is sent; and, by watching the client's requests, that
only the rows asked for are fetched."""
import numpy as np
import pytest

from wire import unique

import h5ark
from h5ark import codec, objects

pd = pytest.importorskip("pandas")

N = 12000  # rows of every object: more than two gaps of GAP_BYTES of int64, so runs show
WIDE = (N, 2, 3)  # the ArrayView's shape
rng = np.random.default_rng(20240611)


def random_strings(n):
    pieces = np.array(["", "a", "bc", "Grüße", "ж", "long text ", "x" * 40, "€"], dtype=object)
    picks = rng.integers(0, len(pieces), (n, 3))
    return [f"{i}:" + "".join(pieces[p]) for i, p in enumerate(picks)] \
        if n else []


def random_rows(n, values):
    lengths = rng.integers(0, 5, n)
    lengths[:3] = [0, 1, 4]  # an empty sub-array among the first rows
    lengths[-2:] = [2, 0]  # and at the very end, after one that is not
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    return [values[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


SELECT_MASK = rng.random(N) < 0.01
KEYS = {
    "int0": 0, "int": 7, "np_int": np.int32(11), "last": N - 1, "neg": -1, "neg_first": -N,
    "slice": slice(10, 20), "all": slice(None), "reverse": slice(None, None, -1),
    "step": slice(3, 200, 7), "neg_step": slice(-5, -500, -9), "wide_step": slice(1, None, 5000),
    "reverse_wide_step": slice(None, None, -4500), "empty_slice": slice(20, 10),
    "clipped": slice(-10 ** 9, 10 ** 9), "tail": slice(-3, None), "open_start": slice(None, 5),
    "mask": SELECT_MASK, "mask_none": np.zeros(N, bool), "mask_all": np.ones(N, bool),
    "mask_list": [i % 4000 == 3 for i in range(N)],
    "idx_sorted": [2, 3, 5000, N - 1], "idx_scattered": np.array([N - 2, 4, -1, 4, 9000, -N, 5]),
    "idx_close": np.array([100, 103, 110, 101]), "idx_empty": [],
    "idx_np_empty": np.array([], dtype=np.int64), "idx_uint": np.array([4, 2], dtype=np.uint32),
    "idx_2d": np.array([[1, 2], [N - 1, 0]]),
}
WIDE_KEYS = {
    "row_col": (slice(2, 5), 1), "int_slice_int": (7, slice(None), 2),
    "fancy": ([1, 5, N - 1], [0, 1, 1], [2, 0, 1]), "fancy_apart": ([1, 9000], slice(None), [2, 0]),
    "mask_col": (SELECT_MASK, 1), "mask_2d": rng.random(WIDE[:2]) < 0.002,
    "mask_3d": rng.random(WIDE) < 0.001, "ellipsis": (Ellipsis, 0), "newaxis": (None, 3),
    "neg_tuple": (-1, -1, -1), "reverse_col": (slice(None, None, -2000), slice(None), 1),
    "empty_tuple": (),
}


class Traffic:
    """Every request the client sends, with its args and the payload bytes it got back."""

    def __init__(self):
        self.calls = []

    def __call__(self, cmd, args, reply):
        self.calls.append((cmd, dict(args), reply.nbytes))

    def clear(self):
        self.calls.clear()

    @property
    def gets(self):
        return [(a["name"], a.get("start"), a.get("stop"))
                for c, a, _ in self.calls if c == "get"]

    @property
    def nbytes(self):
        return sum(n for _, _, n in self.calls)


@pytest.fixture(scope="module")
def conn(daemon):
    c = h5ark.Client(daemon.endpoint, timeout=60)
    yield c
    c.clear()
    c.close()


@pytest.fixture
def traffic(conn):
    t = Traffic()
    conn.on_reply = t
    yield t
    conn.on_reply = None


def object_array(items):
    return codec.as_object_array(items)


@pytest.fixture(scope="module")
def data(conn):
    """{kind: (handle, what numpy would hold)}: the same data in the daemon and here."""
    out = {}
    ints = rng.integers(-2 ** 62, 2 ** 62, N)
    out["int64"] = (conn.array(ints), ints)
    floats = rng.standard_normal(N).astype(np.float32)
    floats[:4] = [np.nan, -0.0, np.inf, -np.inf]
    out["float32"] = (conn.array(floats), floats)
    flags = rng.random(N) < 0.3
    out["bool"] = (conn.array(flags), flags)
    small = rng.integers(0, 256, N).astype(np.uint8)
    out["uint8"] = (conn.array(small), small)
    times = rng.integers(-10 ** 18, 10 ** 18, N).astype("datetime64[ns]")
    out["datetime"] = (conn.array(times), times)
    spans = rng.integers(-10 ** 12, 10 ** 12, N).astype("timedelta64[ns]")
    out["timedelta"] = (conn.array(spans), spans)
    addresses = rng.integers(0, 2 ** 32, N).astype(np.uint64)
    out["ipv4"] = (conn.ip_address(addresses), object_array(codec.format_ipv4(addresses)))
    big = [int(v) * 2 ** 70 + i for i, v in enumerate(rng.integers(0, 2 ** 40, N))]
    out["bigint"] = (conn.array(big, dtype="bigint"), object_array(big))
    wide = rng.standard_normal(WIDE)
    out["arrayview"] = (conn.array(wide), wide)
    strings = random_strings(N)
    out["strings"] = (conn.array(strings), object_array(strings))
    rows = random_rows(N, rng.integers(-100, 100, 5 * N))
    out["segarray"] = (conn.SegArray(rows), object_array(rows))
    words = random_rows(N, np.array(random_strings(5 * N), dtype=object))
    out["segarray_str"] = (conn.SegArray([list(r) for r in words]), object_array(words))
    labels = rng.choice(["lo", "mid", "hi", "Grüße", ""], N).astype(object)
    out["categorical"] = (conn.Categorical(list(labels)), labels)
    out["index"] = (conn.Index(strings, names="k"), object_array(strings))
    multi = object_array(list(zip(ints.tolist(), strings)))
    out["multiindex"] = (conn.MultiIndex([ints, strings], names=["n", "s"]), multi)
    return out


def assert_same(got, want):
    """Equal in type, shape, dtype and every bit (NaN and -0.0 included)."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), type(got)
        assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
        if want.dtype == object:
            for g, w in zip(got.ravel(), want.ravel()):
                assert_same(g, w)
        else:
            assert got.tobytes() == want.tobytes(), (got, want)
    elif isinstance(want, np.generic):
        assert type(got) is type(want), (type(got), type(want))
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (got, want)
    else:
        assert type(got) is type(want) and got == want, (got, want)


ONE_D = ["int64", "float32", "bool", "uint8", "datetime", "timedelta", "ipv4", "bigint",
         "strings", "segarray", "segarray_str", "categorical", "index", "multiindex"]


@pytest.mark.parametrize("key", KEYS.values(), ids=KEYS.keys())
@pytest.mark.parametrize("kind", ONE_D)
def test_row_selection_is_numpy_selection(data, kind, key):
    obj, want = data[kind]
    assert_same(obj[key], want[key])


@pytest.mark.parametrize("key", [*KEYS.values(), *WIDE_KEYS.values()],
                         ids=[*KEYS.keys(), *WIDE_KEYS.keys()])
def test_arrayview_selection_is_numpy_selection(data, key):
    obj, want = data["arrayview"]
    assert_same(obj[key], want[key])


def test_selection_by_an_h5ark_mask(data):
    obj, want = data["int64"]
    mask_obj, mask = data["bool"]
    assert_same(obj[mask_obj], want[mask])
    indices = obj._client.array(np.array([5, -1, 9000]))
    assert_same(obj[indices], want[[5, -1, 9000]])


@pytest.mark.parametrize("kind", [*ONE_D, "arrayview"])
def test_len_shape_dtype_asarray(data, kind):
    obj, want = data[kind]
    assert len(obj) == len(want) and obj.shape == want.shape
    got = np.asarray(obj)
    assert_same(got, want)
    expected_dtype = {"strings": "str", "categorical": "str", "index": "str",
                      "multiindex": np.dtype(object), "segarray_str": "str", "bigint": "bigint",
                      "segarray": np.dtype("int64"), "datetime": np.dtype("int64"),
                      "timedelta": np.dtype("int64"), "ipv4": np.dtype("uint64")}
    assert obj.dtype == expected_dtype.get(kind, want.dtype)
    with pytest.raises(ValueError, match="copy=False"):
        obj.__array__(copy=False)


def test_asarray_with_dtype_and_iteration(data, traffic, monkeypatch):
    obj, want = data["int64"]
    assert_same(np.asarray(obj, dtype=np.float64), want.astype(np.float64))
    monkeypatch.setattr(objects, "ITER_BYTES", 8 * 1000)
    traffic.clear()
    assert [int(v) for v in obj] == want.tolist()
    assert len(traffic.gets) == N // 1000  # blocks of 1000 rows, not one request per row
    view, wide = data["arrayview"]
    rows = list(view)
    assert len(rows) == N and all(np.array_equal(r, w) for r, w in zip(rows, wide))
    words, strings = data["strings"]
    assert list(words) == strings.tolist()


# -- only the rows asked for are fetched ------------------------------------------------

def test_slice_fetches_its_rows_only(data, traffic):
    obj, want = data["int64"]
    traffic.clear()
    assert_same(obj[100:110], want[100:110])
    assert traffic.gets == [(obj.name, 100, 110)] and traffic.nbytes == 80
    traffic.clear()
    obj[-3:]
    assert traffic.gets == [(obj.name, N - 3, N)] and traffic.nbytes == 24
    traffic.clear()
    obj[50:20:-1]
    assert traffic.gets == [(obj.name, 21, 51)]
    traffic.clear()
    obj[42]
    assert traffic.gets == [(obj.name, 42, 43)] and traffic.nbytes == 8


def test_scattered_rows_fetch_a_run_each(data, traffic):
    obj, want = data["int64"]
    traffic.clear()
    assert_same(obj[[6000, 5, N - 10, 6000]], want[[6000, 5, N - 10, 6000]])
    assert traffic.gets == [(obj.name, 5, 6), (obj.name, 6000, 6001),
                            (obj.name, N - 10, N - 9)]
    assert traffic.nbytes == 24
    traffic.clear()
    mask = np.zeros(N, bool)
    mask[[17, 9000]] = True
    assert_same(obj[mask], want[mask])
    assert traffic.gets == [(obj.name, 17, 18), (obj.name, 9000, 9001)]
    traffic.clear()
    assert_same(obj[1::5000], want[1::5000])  # a step wider than a gap: a get per row
    assert traffic.gets == [(obj.name, r, r + 1) for r in (1, 5001, 10001)]
    traffic.clear()
    obj[[100, 103, 110]]  # near rows: one run
    assert traffic.gets == [(obj.name, 100, 111)]


def test_runs_are_capped(data, traffic, monkeypatch):
    obj, want = data["int64"]
    monkeypatch.setattr(objects, "MAX_RANGES", 2)
    rows = [0, 4200, N - 1]
    traffic.clear()
    assert_same(obj[rows], want[rows])
    # both gaps are wider than GAP_BYTES of int64, but only the widest splits
    assert traffic.gets == [(obj.name, 0, 4201), (obj.name, N - 1, N)]


def test_arrayview_ranges_are_rows(data, traffic):
    obj, want = data["arrayview"]
    traffic.clear()
    assert_same(obj[5:7, 1], want[5:7, 1])
    assert traffic.gets == [(obj.name, 5, 7)] and traffic.nbytes == 2 * 6 * 8
    traffic.clear()
    # rows of 48 bytes: 1000 rows apart is past GAP_BYTES, where 1000 of int64 are not
    assert_same(obj[[0, 1000]], want[[0, 1000]])
    assert traffic.gets == [(obj.name, 0, 1), (obj.name, 1000, 1001)]


def test_gaps_are_measured_in_bytes(data, traffic):
    small, want = data["uint8"]
    wide, _ = data["int64"]
    traffic.clear()
    assert_same(small[[0, 10000]], want[[0, 10000]])  # 10000 bytes apart: one run
    assert traffic.gets == [(small.name, 0, 10001)]
    traffic.clear()
    wide[[0, 10000]]  # 80000 bytes apart: two
    assert traffic.gets == [(wide.name, 0, 1), (wide.name, 10000, 10001)]


def test_strings_fetch_their_bytes_only(data, traffic):
    obj, want = data["strings"]
    traffic.clear()
    assert_same(obj[1000:1010], want[1000:1010])
    assert traffic.gets == [(obj.name, 1000, 1010)]
    text = sum(len(s.encode()) + 1 for s in want[1000:1010])
    assert traffic.nbytes == 10 * 8 + text


def test_segarray_fetches_segments_then_values(data, traffic):
    obj, want = data["segarray"]
    segments = obj.segments.to_ndarray()
    traffic.clear()
    assert_same(obj[1000:1003], want[1000:1003])
    segs, vals = obj.name + "/segments", obj.name + "/values"
    assert traffic.gets == [(segs, 1000, 1004), (vals, int(segments[1000]), int(segments[1003]))]
    nvalues = sum(len(r) for r in want[1000:1003])
    assert traffic.nbytes == 4 * 8 + nvalues * 8
    traffic.clear()
    obj[-2:]  # the last sub-array ends where the values end
    assert traffic.gets == [(segs, N - 2, N), (vals, int(segments[N - 2]), obj.values.size)]


def test_categorical_fetches_codes_of_its_rows(data, traffic):
    obj, want = data["categorical"]
    traffic.clear()
    assert_same(obj[5:9], want[5:9])
    categories = obj.categories
    assert traffic.gets == [(obj.name + "/codes", 5, 9),
                            (categories.name, 0, categories.size)]
    assert traffic.nbytes == 4 * 8 + 8 * categories.size + categories.descriptor["bytes"]


def test_errors_are_raised_before_anything_is_sent(data, traffic):
    obj, _ = data["int64"]
    view, _ = data["arrayview"]
    words, _ = data["strings"]
    traffic.clear()
    bad = [(obj, N, IndexError, "out of range"), (obj, -N - 1, IndexError, "out of range"),
           (obj, [0, N], IndexError, "out of range"), (obj, np.array([-N - 1]), IndexError, "out of range"),
           (obj, np.ones(N - 1, bool), IndexError, "mask of shape"),
           (obj, np.ones((N, 2), bool), IndexError, "too many indices"),
           (obj, 1.5, TypeError, "float"), (obj, [1.0, 2.0], TypeError, "float64"),
           (obj, np.array([0.5]), TypeError, "float64"), (obj, "a", TypeError, "str"),
           (obj, slice(1.5, 3), TypeError, "slice bounds"), (obj, True, TypeError, "boolean"),
           (obj, (1, 2), IndexError, "too many indices"),
           (view, (1, 2, 3, 4), IndexError, "too many indices"),
           (view, np.ones((N, 3), bool), IndexError, "mask of shape"),
           (words, N, IndexError, "out of range"), (words, [0.0], TypeError, "float64")]
    for target, key, error, text in bad:
        with pytest.raises(error, match=text):
            target[key]
    assert traffic.calls == []


def test_groupby_has_no_rows(conn):
    g = conn.GroupBy(conn.arange(5))
    with pytest.raises(TypeError):
        g[0:2]


# -- DataFrame --------------------------------------------------------------------------

def frame_data(n):
    return pd.DataFrame({
        "i": rng.integers(-1000, 1000, n),
        "f": rng.standard_normal(n),
        "s": pd.Series(random_strings(n), dtype=object),
        "c": pd.Categorical(rng.choice(["a", "b", None], n), categories=["a", "b"]),
        "t": pd.to_datetime(rng.integers(0, 2 * 10 ** 18, n)),
        "u": rng.integers(0, 9, n).astype(np.uint8),
    })


@pytest.fixture(scope="module")
def frames(conn):
    """{kind: (h5ark DataFrame, pandas DataFrame)}: without an index, with one, with a
    MultiIndex; each also holds a SegArray column, which pandas compares apart."""
    pdf = frame_data(N)
    lists = random_rows(N, rng.integers(0, 50, 5 * N))
    out = {}
    for kind, index in (("plain", None), ("index", pd.Index(random_strings(N), name="k")),
                        ("multi", pd.MultiIndex.from_arrays([np.arange(N) % 7, random_strings(N)],
                                                            names=["m", "n"]))):
        want = pdf if index is None else pdf.set_index(index)
        df = conn.DataFrame(want)
        segs = conn.SegArray(lists)
        df = conn.dataframe([*(df[c] for c in df.columns), segs],
                            column_names=[*want.columns, "seg"], index=df.index,
                            name=unique(kind))
        out[kind] = (df, want, object_array(lists))
    return out


# [] is a list of no column names; np.array([], int) selects no rows
FRAME_KEYS = {k: v for k, v in KEYS.items() if k not in ("idx_2d", "idx_empty")}


@pytest.mark.parametrize("key", FRAME_KEYS.values(), ids=FRAME_KEYS.keys())
@pytest.mark.parametrize("kind", ["plain", "index", "multi"])
def test_dataframe_rows_are_iloc(frames, kind, key):
    df, want, lists = frames[kind]
    got = df[key]
    expected = want.iloc[key]
    if isinstance(expected, pd.Series):
        assert_same(got.pop("seg"), lists[key])
        pd.testing.assert_series_equal(got, expected)
    else:
        assert_same(got.pop("seg").to_numpy(), lists[key])
        # an empty MultiIndex cannot tell what its levels held; pandas' .iloc keeps them
        pd.testing.assert_frame_equal(got, expected, check_index_type=len(expected) > 0)


def test_dataframe_shape_len_asarray_and_columns(frames):
    df, want, lists = frames["index"]
    assert len(df) == N and df.shape == (N, len(want.columns) + 1)
    assert df.dtypes == {"i": np.dtype("int64"), "f": np.dtype("float64"), "s": "str",
                         "c": "str", "t": np.dtype("int64"), "u": np.dtype("uint8"),
                         "seg": np.dtype("int64")}
    full = want.assign(seg=lists)
    got = np.asarray(df)
    assert got.shape == df.shape and got.dtype == object
    assert all(np.array_equal(g, w) if isinstance(w, np.ndarray) else g == w or (g != g and w != w)
               for g, w in zip(got.ravel(), np.asarray(full).ravel()))
    # names still select columns
    assert isinstance(df["s"], h5ark.Strings)
    assert [c.name for c in df[["i", "s"]]] == [df["i"].name, df["s"].name]
    assert list(df) == df.columns and "i" in df and df[[]] == []
    with pytest.raises(KeyError):
        df["nope"]
    for key in ((1, 2), None, np.array([[1, 2]]), 2.5):
        with pytest.raises(TypeError):
            df[key]
    with pytest.raises(IndexError, match="out of range"):
        df[N]


def test_dataframe_rows_fetch_their_rows_only(frames, traffic):
    df, want, lists = frames["multi"]
    traffic.clear()
    pd.testing.assert_frame_equal(df[100:105].drop(columns="seg"), want.iloc[100:105])
    assert traffic.gets, "nothing fetched"
    for name, start, stop in traffic.gets:
        if name.endswith("/categories"):
            assert (start, stop) == (0, 3)  # a categorical's dictionary: a, b, N/A
        elif name.endswith("seg/values"):
            assert stop - start == sum(len(r) for r in lists[100:105])
        else:
            assert stop - start in (5, 6), (name, start, stop)  # segments take one more
    whole = sum(c["nbytes"] for c in df.descriptor["components"].values())
    assert traffic.nbytes < whole / 200
