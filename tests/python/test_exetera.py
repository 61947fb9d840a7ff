"""readhdf and lshdf of ExeTera dataframes (docs/FORMAT.md, "ExeTera dataframes";
protocol/PROTOCOL.md, readhdf and lshdf): a dataframe group of field groups, each field
read by its `fieldtype` (indexedstring and fixedstring as strings, numeric as a pdarray of
its dtype, categorical as a categorical of ExeTera's labels, timestamp as float64), its
descriptor carrying `fieldtype` and `completed`, a warning for a field not completed,
`start`/`stop` row ranges, several files concatenated, lshdf's `field` entries, and
malformed fields refused by name. Against ExeTera's own files (../shared/fixtures/exetera,
skipped when absent) and against equivalent files made here with h5py."""
import json
import shutil

import h5py
import numpy as np
import pytest

from conftest import check_columns_must_agree
from wire import Conn, decode_strings, unique
from exetera_layout import add_field, categorical, indexed


# ---- reading what the daemon returns ---------------------------------------------------

def value(conn, desc):
    """pdarray -> ndarray; strings -> [str]; categorical -> [label]; dataframe -> {col: ...}."""
    hdr, frames = conn.ok("get", name=desc["name"])
    blob = b"".join(bytes(f) for f in frames)
    bufs, pos = {}, 0
    for spec in hdr.get("buffers", []):
        bufs[spec["name"]] = blob[pos:pos + spec["nbytes"]]
        pos += spec["nbytes"]
    return decode(desc, bufs)


def decode(desc, bufs, prefix=""):
    ot = desc["objtype"]
    if ot == "pdarray":
        return np.frombuffer(bufs.get(prefix + "values", b""),
                             np.dtype(desc["dtype"]).newbyteorder("<"))
    if ot == "strings":
        return decode_strings(bufs.get(prefix + "segments", b""), bufs.get(prefix + "values", b""))
    parts = {k: decode(v, bufs, prefix + k + "/") for k, v in desc["components"].items()}
    if ot == "categorical":
        return [parts["categories"][c] for c in parts["codes"].tolist()]
    return parts


def read(conn, paths, name, **kw):
    """readhdf of one object: (descriptor, value, warnings)."""
    hdr, _ = conn.ok("readhdf", paths=paths, datasets=[name], **kw)
    desc = hdr["result"]["objects"][name]
    got = value(conn, desc)
    conn.ok("delete", names=[desc["name"]])
    return desc, got, hdr.get("warnings", [])


def fail(conn, paths, name, **kw):
    hdr, _ = conn.raw("readhdf", paths=paths, datasets=[name], **kw)
    assert not hdr["ok"], hdr
    return hdr["error"]


def same(got, want):
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), got
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        assert got.tobytes() == want.tobytes(), (got, want)
    else:
        assert list(got) == list(want), (got, want)


def lshdf_entries(conn, path):
    hdr, _ = conn.ok("lshdf", path=path, recursive=True)
    return {e["path"].lstrip("/"): e for e in hdr["result"]["entries"]}


# ---- ExeTera's own file ------------------------------------------------------------------

def fixture_copy(conn, fixtures):
    sub = unique("exetera")
    (conn.dir / sub).mkdir()
    shutil.copy(fixtures / "session.hdf5", conn.dir / sub / "session.hdf5")
    return f"{sub}/session.hdf5"


def expected_value(fixtures, field, info):
    """What readhdf returns for a field of the fixture, from ExeTera's own reader's values."""
    path = fixtures / info["values"]
    if info["fieldtype"].startswith("categorical"):
        return info["labels"]
    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    vals = json.loads(path.read_text())
    if info.get("values_encoding") == "hex":
        # ExeTera's fixed strings: the bytes, trailing NULs (padding) stripped; a NUL before
        # other bytes is kept
        return [bytes.fromhex(v).rstrip(b"\0").decode() for v in vals]
    return vals


def expected_completed(layout, field, fieldtype):
    """`completed` of a field: the mark on `index` (indexed strings) or `values`."""
    ds = layout.get(f"{field}/{'index' if fieldtype == 'indexedstring' else 'values'}")
    mark = ds["attrs"].get("completed") if ds else None
    return mark["value"] if mark else None


def test_fixture_every_field(conn, exetera_fixtures):
    path = fixture_copy(conn, exetera_fixtures)
    expected = json.loads((exetera_fixtures / "expected_session.json").read_text())
    layout = json.loads((exetera_fixtures / "layout_session.json").read_text())
    assert len(expected) >= 20
    for field, info in expected.items():
        want = expected_value(exetera_fixtures, field, info)
        desc, got, warnings = read(conn, [path], field)
        assert desc["fieldtype"] == info["fieldtype"], (field, desc)
        assert desc["size"] == info["length"], (field, desc)
        completed = expected_completed(layout, field, info["fieldtype"])
        assert desc["completed"] == completed, (field, desc)
        named = [w for w in warnings if repr(field) in w or f"'{field}'" in w]
        assert bool(named) == (completed is not True), (field, warnings)
        ft = info["fieldtype"]
        if ft == "timestamp":
            assert desc["objtype"] == "pdarray" and desc["dtype"] == "float64", desc
        elif ft.startswith("numeric,"):
            assert desc["objtype"] == "pdarray" and desc["dtype"] == ft.split(",")[1], desc
        elif ft.startswith("categorical,"):
            assert desc["objtype"] == "categorical", desc
        else:
            assert desc["objtype"] == "strings", desc
        same(got, want)


def test_fixture_string_bytes(conn, exetera_fixtures):
    """The strings read are exactly ExeTera's stored bytes between its offsets."""
    path = fixture_copy(conn, exetera_fixtures)
    expected = json.loads((exetera_fixtures / "expected_session.json").read_text())
    for field, info in expected.items():
        if info["fieldtype"] != "indexedstring":
            continue
        index, raw = info["expected_index"], bytes.fromhex(info["expected_values_hex"])
        strs = [raw[a:b] for a, b in zip(index, index[1:])]
        _, got, _ = read(conn, [path], field)
        assert [s.encode() for s in got] == strs, field


def test_fixture_ranges(conn, exetera_fixtures):
    """start/stop against ExeTera's own data[1:3], data[0] and data[n-1]."""
    path = fixture_copy(conn, exetera_fixtures)
    reader = json.loads((exetera_fixtures / "reader_session.json").read_text())
    expected = json.loads((exetera_fixtures / "expected_session.json").read_text())
    checked = 0
    for field, r in reader.items():
        n = r["len"]
        if field not in expected or n < 3:
            continue
        full = expected_value(exetera_fixtures, field, expected[field])
        for lo, hi in ((1, 3), (0, 1), (n - 1, n), (0, n), (n, n)):
            want = full[lo:hi]
            desc, got, _ = read(conn, [path], field, start=lo, stop=hi)
            assert desc["size"] == hi - lo, (field, lo, hi, desc)
            assert desc["fieldtype"] == expected[field]["fieldtype"]
            same(got, want)
            checked += 1
        if "data[1:3]" in r and r["class"] in ("NumericField", "IndexedStringField"):
            _, got, _ = read(conn, [path], field, start=1, stop=3)
            assert len(got) == len(r["data[1:3]"])
            if r["class"] == "IndexedStringField":
                assert list(got) == r["data[1:3]"]
    assert checked > 40
    # row 9 of people/name holds a NUL: it reads as ExeTera's reader returns it
    want = reader["people/name"]["data[:]"]
    assert "\0" in want[9], want
    _, got, _ = read(conn, [path], "people/name", start=5, stop=len(want))
    assert got == want[5:], got


def test_fixture_dataframes(conn, exetera_fixtures):
    path = fixture_copy(conn, exetera_fixtures)
    expected = json.loads((exetera_fixtures / "expected_session.json").read_text())
    for df in ("small_df", "people_filtered"):
        desc, got, _ = read(conn, [path], df)
        assert desc["objtype"] == "dataframe", desc
        cols = sorted(k.split("/")[1] for k in expected if k.startswith(df + "/"))
        assert desc["columns"] == cols and list(desc["components"]) == cols, desc
        for c in cols:
            comp = desc["components"][c]
            assert comp["fieldtype"] == expected[f"{df}/{c}"]["fieldtype"], comp
            assert comp["completed"] is True, comp
            same(got[c], expected_value(exetera_fixtures, f"{df}/{c}", expected[f"{df}/{c}"]))
        # rows of every column
        desc, got, _ = read(conn, [path], df, start=1, stop=3)
        assert desc["size"] == 2
        for c in cols:
            same(got[c], expected_value(exetera_fixtures, f"{df}/{c}",
                                        expected[f"{df}/{c}"])[1:3])
    # `people`'s fields differ in length: not one table
    err = fail(conn, [path], "people")
    assert err["code"] == "type_error" and "'people'" in err["message"], err
    # reading the whole file leaves it out with a warning, and reads the others
    hdr, _ = conn.ok("readhdf", paths=[path])
    assert sorted(hdr["result"]["objects"]) == ["people_filtered", "small_df"], hdr
    assert [w for w in hdr["warnings"] if w.startswith("skipped") and "'people'" in w], hdr
    for desc in hdr["result"]["objects"].values():
        conn.ok("delete", names=[desc["name"]])


def test_fixture_lshdf(conn, exetera_fixtures):
    path = fixture_copy(conn, exetera_fixtures)
    expected = json.loads((exetera_fixtures / "expected_session.json").read_text())
    layout = json.loads((exetera_fixtures / "layout_session.json").read_text())
    entries = lshdf_entries(conn, path)
    for field, info in expected.items():
        e = entries[field]
        assert e["kind"] == "field", e
        assert e["fieldtype"] == info["fieldtype"], e
        assert e["length"] == info["length"], e
        assert e["completed"] == expected_completed(layout, field, info["fieldtype"]), e
        # one entry for the whole field: its datasets are not listed
        assert not [p for p in entries if p.startswith(field + "/")], field
    for df in ("small_df", "people_filtered"):
        assert entries[df]["kind"] == "group" and entries[df]["objtype"] == "dataframe"
    assert entries["small_df"]["shape"] == [4]
    # fields of different lengths: no table, as readhdf finds
    assert entries["people"]["objtype"] is None and entries["people"]["note"], entries["people"]


# ---- every value ExeTera's reader returns -----------------------------------------------
#
# An expectation per field: its fieldtype, its `completed` mark, and what ExeTera's own reader
# returns for it: "numbers" (an ndarray), "bytes" (the strings' bytes, a fixed string's
# trailing NULs stripped) or "codes" and "keys" (a categorical's stored codes and its key
# value -> name map). h5ark must return the same, a NUL inside a string included.

def fixture_expectations(fixtures):
    expected = json.loads((fixtures / "expected_session.json").read_text())
    layout = json.loads((fixtures / "layout_session.json").read_text())
    reader = json.loads((fixtures / "reader_session.json").read_text())
    out, used = {}, set()
    for field, info in expected.items():
        path = fixtures / info["values"]
        used.add(path.resolve())
        ft = info["fieldtype"]
        e = {"fieldtype": ft, "completed": expected_completed(layout, field, ft)}
        if ft.startswith("categorical,"):
            e["codes"] = np.load(path, allow_pickle=False)
            e["keys"] = dict(zip(info["key_values"], info["key_names"]))
            assert {int(k): v for k, v in reader[field]["keys"].items()} == e["keys"], field
        elif path.suffix == ".npy":
            e["numbers"] = np.load(path, allow_pickle=False)
        elif info.get("values_encoding") == "hex":
            e["bytes"] = [bytes.fromhex(v) for v in json.loads(path.read_text())]
        else:
            e["bytes"] = [v.encode() for v in json.loads(path.read_text())]
            index, raw = info["expected_index"], bytes.fromhex(info["expected_values_hex"])
            assert e["bytes"] == [raw[a:b] for a, b in zip(index, index[1:])], field
        out[field] = e
    # every file of expected/ is compared
    every = {p.resolve() for p in (fixtures / "expected").rglob("*") if p.is_file()}
    assert every and every == used, sorted(every - used)
    return out


def field_rows(e):
    return len(e["numbers"] if "numbers" in e else e["codes"] if "codes" in e else e["bytes"])


def check_expectations(conn, path, expectations):
    """Every field whole and in ranges, against what ExeTera's reader returns; a
    categorical's stored codes read as its `values` dataset; returns the reads compared."""
    compared = 0
    for field, e in expectations.items():
        n = field_rows(e)
        ranges = {(0, n), (n, n), (0, min(1, n)), (max(n - 1, 0), n), (min(1, n), min(3, n))}
        for lo, hi in sorted(ranges):
            desc, got, warnings = read(conn, [path], field, start=lo, stop=hi)
            assert desc["size"] == hi - lo, (field, lo, hi, desc)
            assert desc["fieldtype"] == e["fieldtype"], (field, desc)
            assert desc["completed"] == e["completed"], (field, desc)
            assert bool([w for w in warnings if f"'{field}'" in w]) == (e["completed"] is not True)
            if "numbers" in e:
                same(got, e["numbers"][lo:hi])
            elif "codes" in e:
                assert desc["objtype"] == "categorical", desc
                want = [e["keys"].get(int(c), NA) for c in e["codes"][lo:hi]]
                assert got == want, (field, lo, hi, got, want)
            else:
                assert desc["objtype"] == "strings", desc
                assert [s.encode() for s in got] == e["bytes"][lo:hi], (field, lo, hi, got)
            compared += 1
        if "codes" in e:
            # ExeTera's reader returns the stored codes: the field's `values` dataset
            _, got, _ = read(conn, [path], field + "/values")
            same(got, e["codes"])
            _, got, _ = read(conn, [path], field + "/key_names")
            assert got == [e["keys"][k] for k in e["keys"]], (field, got)
            compared += 1
    return compared


def test_fixture_every_expected_value(conn, exetera_fixtures):
    """h5ark against every value of the fixture's expected/ (ExeTera's reader's output)."""
    expectations = fixture_expectations(exetera_fixtures)
    assert len(expectations) >= 26
    assert check_expectations(conn, fixture_copy(conn, exetera_fixtures), expectations) > 100


def make_exetera_like(path):
    """A file in the layout ExeTera writes (its dataframes, field attributes, chunked
    extendable datasets, `completed` marks), holding each case the fixture's README lists;
    returns its expectations."""
    words = WORDS + ["nul\0inside", "last"]
    codes = [b"AB", b"ABCD", b"", b"\xc3\xa9", b"Q\0R", b"\0\0\0\0", b"x\0\0\0"]
    status = {0: "", 1: "no", 2: "yes", 3: "unsure"}
    status16 = {0: "", 1: "a", 2: "é", 100: "big"}
    out = {}
    with h5py.File(path, "w") as f:
        p = f.create_group("people")
        add_field(p, "name", "indexedstring", **indexed(words))
        out["people/name"] = {"bytes": [w.encode() for w in words]}
        parts = ["a", "bb", "", "dddd", "é", "ff", "ggggggg"]
        g = add_field(p, "name_parts", "indexedstring", **indexed(parts[:4]))
        for dname, arr in indexed(parts).items():  # written in parts, then completed
            g[dname].resize((len(arr),))
            g[dname][:] = arr
        out["people/name_parts"] = {"bytes": [w.encode() for w in parts]}
        add_field(p, "all_empty", "indexedstring", **indexed(["", "", ""]))
        del p["all_empty/values"].attrs["completed"]  # as ExeTera leaves it
        out["people/all_empty"] = {"bytes": [b"", b"", b""]}
        add_field(p, "empty_str", "indexedstring", completed=None,
                  index=np.zeros(0, np.int64), values=np.zeros(0, np.uint8))
        out["people/empty_str"] = {"bytes": [], "completed": None}
        add_field(p, "code", "fixedstring,4", values=np.array(codes, "S4"))
        out["people/code"] = {"bytes": [c.rstrip(b"\0") for c in codes]}
        for k, arr in NUMBERS.items():
            add_field(p, k, f"numeric,{DTYPES[k]}", values=arr)
            out[f"people/{k}"] = {"numbers": arr}
        add_field(p, "incomplete", "numeric,float64", completed=None,
                  values=np.array([1.5, 2.5, 3.5]))
        out["people/incomplete"] = {"numbers": np.array([1.5, 2.5, 3.5]), "completed": None}
        add_field(p, "never_written", "numeric,float32", completed=None,
                  values=np.zeros(0, np.float32))
        out["people/never_written"] = {"numbers": np.zeros(0, np.float32), "completed": None}
        for name, keys, dtype, stored in (("status", status, np.int8, [1, 2, 0, 3, 2, 1]),
                                          ("status16", status16, np.int16, [100, 2, 1, 0, 100])):
            add_field(p, name, f"categorical,{np.dtype(dtype).name}",
                      **categorical(stored, list(keys.values()), list(keys), dtype))
            out[f"people/{name}"] = {"codes": np.array(stored, dtype), "keys": keys}
        ts = np.array([0.0, 1589266800.0, -2208988800.0, 2147483648.0, 1643889601.123456])
        add_field(p, "ts", "timestamp", values=ts)
        out["people/ts"] = {"numbers": ts}
        for df, rows in (("small_df", [0, 1, 2, 3]), ("people_filtered", [0, 2, 3])):
            d = f.create_group(df)
            a = np.array([5, 6, 7, 8], np.int32)[rows]
            b = [["w", "", "yy", "ü"][i] for i in rows]
            c = [[0, 1, 1, 0][i] for i in rows]
            add_field(d, "a", "numeric,int32", values=a)
            add_field(d, "b", "indexedstring", **indexed(b))
            add_field(d, "c", "categorical,int8", **categorical(c, ["x", "y"], [0, 1], np.int8))
            out[f"{df}/a"] = {"numbers": a}
            out[f"{df}/b"] = {"bytes": [w.encode() for w in b]}
            out[f"{df}/c"] = {"codes": np.array(c, np.int8), "keys": {0: "x", 1: "y"}}
    for field, e in out.items():
        e.setdefault("completed", True)
        with h5py.File(path, "r") as f:
            e["fieldtype"] = f[field].attrs["fieldtype"]
    return out


def test_made_every_expected_value(conn):
    """The same comparison on a file made here, so the suite stands without the fixture."""
    sub = unique("exlike")
    (conn.dir / sub).mkdir()
    expectations = make_exetera_like(conn.dir / sub / "session.h5")
    assert check_expectations(conn, f"{sub}/session.h5", expectations) > 100


# ---- files made here -----------------------------------------------------------------------

WORDS = ["alice", "", "Bob", "café", "日本語", "", "emoji 🎉", "x" * 300, "tab\tand\n"]
NUMBERS = {
    "i8": np.array([-128, 0, 127], np.int8), "u16": np.array([0, 65535, 7], np.uint16),
    "i32": np.array([30, 0, -1, 2 ** 31 - 1, -2 ** 31], np.int32),
    "u32": np.array([1, 2 ** 32 - 1], np.uint32),
    "i64": np.array([2 ** 63 - 1, -2 ** 63, 0, 42], np.int64),
    "u64": np.array([0, 2 ** 64 - 1, 5], np.uint64),
    "f32": np.array([170.9, np.nan, np.inf, -np.inf, -0.0, 1e-45], np.float32),
    "f64": np.array([1.5, np.nan, -np.inf], np.float64),
    "flag": np.array([True, False, True, True], bool),
    "u8": np.array([0, 255, 9], np.uint8), "i16": np.array([-32768, 32767, 7], np.int16),
}
DTYPES = {"i8": "int8", "u16": "uint16", "i32": "int32", "u32": "uint32", "i64": "int64",
          "u64": "uint64", "f32": "float32", "f64": "float64", "flag": "bool", "u8": "uint8",
          "i16": "int16"}


def make_session(path, words=WORDS, shift=0):
    """Every field type in dataframe `people`, and a same-length dataframe `df`."""
    with h5py.File(path, "w") as f:
        p = f.create_group("people")
        add_field(p, "name", "indexedstring", **indexed(words))
        add_field(p, "all_empty", "indexedstring", **indexed(["", "", ""]))
        add_field(p, "empty_str", "indexedstring", completed=None,
                  index=np.zeros(0, np.int64), values=np.zeros(0, np.uint8))
        add_field(p, "code", "fixedstring,4",
                  values=np.array([b"AB", b"ABCD", b"", b"\xc3\xa9"], "S4"))
        for k, arr in NUMBERS.items():
            add_field(p, k, f"numeric,{DTYPES[k]}", values=arr)
        add_field(p, "incomplete", "numeric,float64", completed=None,
                  values=np.array([1.5, 2.5, 3.5]))
        add_field(p, "marked_false", "numeric,int64", completed=False, values=np.arange(3))
        add_field(p, "status", "categorical,int8",
                  **categorical([1, 2, 0, 3, 2, 1, 9], ["", "no", "yes", "unsure"], [0, 1, 2, 3],
                                np.int8))
        add_field(p, "status16", "categorical,int16",
                  **categorical([100, 2, 1, 0, 100, 1000], ["", "a", "é", "big"], [0, 1, 2, 100],
                                np.int16))
        add_field(p, "ts", "timestamp",
                  values=np.array([0.0, 1589266800.5, -2208988800.0, 2147483647.000001]))
        d = f.create_group("df")
        add_field(d, "b_words", "indexedstring", **indexed(["w", "", "yy", "ü"]))
        add_field(d, "a_num", "numeric,int32", values=np.arange(4, dtype=np.int32) + shift)
        add_field(d, "c_cat", "categorical,int8",
                  **categorical([0, 1, 1, 0], ["x", "y"], [0, 1], np.int8))


NA = "N/A"
EXPECT = {
    "people/name": WORDS, "people/all_empty": ["", "", ""], "people/empty_str": [],
    "people/code": ["AB", "ABCD", "", "é"], "people/incomplete": np.array([1.5, 2.5, 3.5]),
    "people/marked_false": np.arange(3),
    "people/status": ["no", "yes", "", "unsure", "yes", "no", NA],
    "people/status16": ["big", "é", "a", "", "big", NA],
    "people/ts": np.array([0.0, 1589266800.5, -2208988800.0, 2147483647.000001]),
    **{f"people/{k}": v for k, v in NUMBERS.items()},
}


@pytest.fixture(scope="module")
def made(conn):
    sub = unique("exmade")
    (conn.dir / sub).mkdir()
    make_session(conn.dir / sub / "a.h5")
    make_session(conn.dir / sub / "b.h5", words=["p", "", "qq"], shift=10)
    return f"{sub}/a.h5", f"{sub}/b.h5"


def test_made_every_field(conn, made):
    a, _ = made
    for field, want in EXPECT.items():
        desc, got, warnings = read(conn, [a], field)
        same(got, want)
        completed = {"people/empty_str": None, "people/incomplete": None,
                     "people/marked_false": False}.get(field, True)
        assert desc["completed"] == completed, (field, desc)
        assert bool([w for w in warnings if f"'{field}'" in w]) == (completed is not True)
        if isinstance(want, np.ndarray):
            assert desc["dtype"] == str(want.dtype)
        assert desc["fieldtype"]
    desc, got, _ = read(conn, [a], "people/status")
    assert desc["objtype"] == "categorical" and desc["na_value"] == NA


def test_made_dataframe_and_lshdf(conn, made):
    a, _ = made
    desc, got, _ = read(conn, [a], "df")
    assert desc["objtype"] == "dataframe" and desc["columns"] == ["a_num", "b_words", "c_cat"]
    assert [c["fieldtype"] for c in desc["components"].values()] == [
        "numeric,int32", "indexedstring", "categorical,int8"]
    same(got["a_num"], np.arange(4, dtype=np.int32))
    assert got["b_words"] == ["w", "", "yy", "ü"] and got["c_cat"] == ["x", "y", "y", "x"]
    entries = lshdf_entries(conn, a)
    e = entries["people/status16"]
    assert (e["kind"], e["fieldtype"], e["length"], e["completed"], e["objtype"]) == (
        "field", "categorical,int16", 6, True, "categorical")
    assert entries["people/empty_str"]["length"] == 0
    assert entries["people/empty_str"]["completed"] is None
    assert entries["people/marked_false"]["completed"] is False
    assert entries["people/f32"]["dtype"] == "float32" and entries["people/ts"]["dtype"] == "float64"
    assert entries["df"]["objtype"] == "dataframe" and entries["df"]["shape"] == [4]
    # readhdf of the whole file: `df` reads; `people`'s fields differ in length
    hdr, _ = conn.ok("readhdf", paths=[a])
    assert list(hdr["result"]["objects"]) == ["df"], hdr
    assert any("'people'" in w for w in hdr["warnings"]), hdr
    conn.ok("delete", names=[hdr["result"]["objects"]["df"]["name"]])


def test_made_ranges(conn, made):
    a, b = made
    for field, want in EXPECT.items():
        n = len(want)
        for lo, hi in ((0, n), (1, min(3, n)), (n // 2, n), (n, n)):
            if lo > hi:
                continue
            desc, got, _ = read(conn, [a], field, start=lo, stop=hi)
            same(got, want[lo:hi])
    # across the two files
    both = WORDS + ["p", "", "qq"]
    for lo, hi in ((0, len(both)), (5, 11), (8, 10), (9, 12), (len(WORDS), len(WORDS))):
        _, got, _ = read(conn, [a, b], "people/name", start=lo, stop=hi)
        assert got == both[lo:hi], (lo, hi)
    err = fail(conn, [a], "people/name", start=3, stop=len(WORDS) + 1)
    assert err["code"] == "bad_request", err


def test_made_two_files(conn, made):
    a, b = made
    _, got, _ = read(conn, [a, b], "people/name")
    assert got == WORDS + ["p", "", "qq"]
    _, got, _ = read(conn, [a, b], "people/i32")
    same(got, np.concatenate([NUMBERS["i32"], NUMBERS["i32"]]))
    _, got, _ = read(conn, [a, b], "people/status")
    assert got == EXPECT["people/status"] * 2
    desc, got, _ = read(conn, [a, b], "df")
    same(got["a_num"], np.concatenate([np.arange(4), np.arange(4) + 10]).astype(np.int32))
    assert got["b_words"] == ["w", "", "yy", "ü"] * 2
    assert got["c_cat"] == ["x", "y", "y", "x"] * 2
    hdr, _ = conn.ok("readhdf", paths=[a, b], datasets=["people/name"], tag_data=True)
    assert "Filename_Codes" in hdr["result"]["objects"]


def test_fixed_string_nul_inside(conn):
    """NULs pad a fixed string's end and are stripped (the format's rule, as ExeTera's reader
    and numpy do); one before other bytes is data and kept, whole and in ranges, and in a
    whole-file read of the dataframe. A plain h5py fixed-string dataset (NULLPAD) follows
    the same rule; a NULLTERM one ends at its first NUL, its format's rule."""
    sub = unique("exnul")
    (conn.dir / sub).mkdir()
    rows = [b"AB", b"ABCD", b"", b"\xc3\xa9", b"Z\0Y", b"\0\0\0Q", b"ok\0\0", b"\0\0\0\0"]
    want = [r.rstrip(b"\0").decode() for r in rows]
    assert want[4] == "Z\0Y" and want[5] == "\0\0\0Q"
    with h5py.File(conn.dir / sub / "f.h5", "w") as f:
        add_field(f.create_group("df"), "code", "fixedstring,4", values=np.array(rows, "S4"))
        # as ExeTera's reader returns them: numpy's S strips the trailing NULs only
        assert [v.decode() for v in f["df/code/values"][:]] == want
    rel = f"{sub}/f.h5"
    for lo, hi in ((0, 8), (0, 4), (4, 5), (5, 8), (6, 7)):
        _, got, _ = read(conn, [rel], "df/code", start=lo, stop=hi)
        assert got == want[lo:hi], (lo, hi, got)
    hdr, bufs = conn.ok("readhdf", paths=[rel])
    df = hdr["result"]["objects"]["df"]
    assert df["objtype"] == "dataframe" and value(conn, df)["code"] == want, df
    conn.ok("delete", names=[df["name"]])
    with h5py.File(conn.dir / sub / "plain.h5", "w") as f:
        f.create_dataset("s", data=np.array(rows, "S4"))
        assert f["s"].id.get_type().get_strpad() == h5py.h5t.STR_NULLPAD
        tid = h5py.h5t.C_S1.copy()
        tid.set_size(4)
        tid.set_strpad(h5py.h5t.STR_NULLTERM)
        space = h5py.h5s.create_simple((len(rows),))
        h5py.h5d.create(f.id, b"term", tid, space).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.array(rows, "S4"), mtype=tid)
    _, got, _ = read(conn, [f"{sub}/plain.h5"], "s")
    assert got == want, got
    _, got, _ = read(conn, [f"{sub}/plain.h5"], "term")
    assert got == [r.split(b"\0")[0].decode() for r in rows], got
    conn.ok("ping")


def test_many_strings(conn, start_daemon):
    """Indexed strings of every length from 0 to 70 in random order, over two files, read
    whole and in ranges by daemons of 1, 2 and 3 locales: each string is moved up by the
    NULs before it, short and long, near the start of a locale's bytes and far from it."""
    rng = np.random.default_rng(7)
    sub = unique("exmany")
    (conn.dir / sub).mkdir()
    files, words = [], []
    for k, count in enumerate((3001, 1999)):
        part = ["".join(chr(97 + (i + j) % 26) for j in range(n))
                for i, n in enumerate(rng.integers(0, 71, count))]
        part[:5] = ["", "", "a", "", "b" * 40]
        with h5py.File(conn.dir / sub / f"{k}.h5", "w") as f:
            add_field(f.create_group("df"), "s", "indexedstring", **indexed(part))
        files.append(f"{sub}/{k}.h5")
        words += part
    daemons = [conn] + [Conn(start_daemon(locales=L, data_dir=conn.dir)) for L in (1, 2)]
    for c in daemons:
        _, got, _ = read(c, files, "df/s")
        assert got == words
        for lo, hi in ((1, 2), (17, 4000), (2999, 3003), (3001, 5000)):
            _, got, _ = read(c, files, "df/s", start=lo, stop=hi)
            assert got == words[lo:hi], (lo, hi)
    # NULs in strings of the second file (inside, first, last, alone) are data: each string
    # still ends where `index` says, over every locale boundary
    nuls = [w.encode() for w in words[3001:]]
    for i, b in ((0, b"\0"), (1, b"ab\0cd"), (1500, b"\0\0x"), (1998, b"y\0")):
        nuls[i] = b + nuls[i]
    with h5py.File(conn.dir / sub / "1.h5", "w") as f:
        add_field(f.create_group("df"), "s", "indexedstring",
                  index=np.cumsum([0] + [len(b) for b in nuls]).astype("<i8"),
                  values=np.frombuffer(b"".join(nuls), np.uint8))
    words = words[:3001] + [b.decode() for b in nuls]
    for c in daemons:
        _, got, _ = read(c, files, "df/s")
        assert got == words
        for lo, hi in ((2999, 3003), (4500, 4502), (3001, 5000)):
            _, got, _ = read(c, files, "df/s", start=lo, stop=hi)
            assert got == words[lo:hi], (lo, hi)


def test_chunked_datasets(conn, start_daemon):
    """Chunked datasets without filters are read a raw chunk at a time (whole chunks, and
    partial first and last ones of a range); chunks never written (the fill value), filters,
    another byte order and a dtype that is widened go through HDF5: all agree with h5py."""
    sub = unique("exchunks")
    (conn.dir / sub).mkdir()
    n = 10_000
    with h5py.File(conn.dir / sub / "c.h5", "w") as f:
        f.create_dataset("plain", data=np.arange(n, dtype="<i8") * 3, chunks=(37,))
        f.create_dataset("bytes", data=(np.arange(n) % 251).astype("u1"), chunks=(100,),
                         maxshape=(None,))
        holes = f.create_dataset("holes", (n,), "<f8", chunks=(64,), fillvalue=-1.5)
        holes[100:700] = np.arange(600) / 7
        holes[5000:5003] = 9.0
        f.create_dataset("gzip", data=np.arange(n, dtype="<i4"), chunks=(50,), compression="gzip")
        f.create_dataset("big_endian", data=np.arange(n, dtype=">i8"), chunks=(128,))
        f.create_dataset("one_chunk", data=np.arange(5, dtype="<u2"), chunks=(1000,),
                         maxshape=(None,))
        add_field(f.create_group("df"), "codes", "categorical,int16",
                  **categorical(np.arange(n) % 3, ["a", "b", "c"], [0, 1, 2], np.int16))
    rel = f"{sub}/c.h5"
    with h5py.File(conn.dir / rel, "r") as f:
        want = {k: f[k][()] for k in ("plain", "bytes", "holes", "gzip", "big_endian",
                                      "one_chunk")}
    want["big_endian"] = want["big_endian"].astype("<i8")
    labels = ["abc"[i % 3] for i in range(n)]
    for c in (conn, Conn(start_daemon(locales=2, data_dir=conn.dir))):
        for name, arr in want.items():
            for lo, hi in ((0, len(arr)), (1, 2), (36, 38), (37, 74), (99, 7001), (len(arr), len(arr))):
                hi = min(hi, len(arr))
                lo = min(lo, hi)
                _, got, _ = read(c, [rel], name, start=lo, stop=hi)
                same(got, arr[lo:hi].astype(arr.dtype.newbyteorder("=")))
        _, got, _ = read(c, [rel], "df/codes", start=5, stop=9000)
        assert got == labels[5:9000]
    # narrower integers beside int64 (strict_types false) are widened as they are read
    with h5py.File(conn.dir / sub / "wide.h5", "w") as f:
        f.create_dataset("v", data=np.arange(-3, 997, dtype="<i8"), chunks=(10,))
    for dt in ("i1", "u1", "i2", "u2", "i4", "u4"):
        info = np.iinfo(dt)
        arr = np.resize(np.array([info.min, info.max, 0, 1, info.min + 1, 7], dt), 1001)
        with h5py.File(conn.dir / sub / f"n_{dt}.h5", "w") as f:
            f.create_dataset("v", data=arr, chunks=(16,))
        whole = np.concatenate([arr.astype(np.int64), np.arange(-3, 997)])
        for lo, hi in ((0, 2001), (3, 1500), (15, 17)):
            _, got, _ = read(conn, [f"{sub}/n_{dt}.h5", f"{sub}/wide.h5"], "v", start=lo,
                             stop=hi, strict_types=False)
            same(got, whole[lo:hi])


# ---- malformed fields --------------------------------------------------------------------

BAD = {
    "hostile_type": ("numeric,complex128", {"values": np.zeros(2)}, "type_error"),
    "long_type": ("numeric," + "x" * 5000, {"values": np.zeros(2)}, "type_error"),
    "zero_fixed": ("fixedstring,0", {"values": np.zeros(2, "S1")}, "type_error"),
    "float_cats": ("categorical,float32",
                   {"values": np.zeros(2, np.float32), "key_values": np.zeros(1, np.int8),
                    "key_names": np.array(["a"], dtype=h5py.string_dtype())}, "type_error"),
    "float_codes": ("categorical,int8",
                    {"values": np.zeros(2, np.float32), "key_values": np.zeros(1, np.int8),
                     "key_names": np.array(["a"], dtype=h5py.string_dtype())}, "type_error"),
    "keys_mismatch": ("categorical,int8",
                      {"values": np.zeros(2, np.int8), "key_values": np.arange(2, dtype=np.int8),
                       "key_names": np.array(["a"], dtype=h5py.string_dtype())}, "schema_error"),
    "wrong_dtype": ("numeric,int32", {"values": np.zeros(2)}, "type_error"),
    "wrong_codes": ("categorical,int8",
                    {"values": np.zeros(2, np.int16), "key_values": np.zeros(1, np.int8),
                     "key_names": np.array(["a"], dtype=h5py.string_dtype())}, "type_error"),
    "key_clash": ("categorical,int8",
                  {"values": np.zeros(2, np.int8), "key_values": np.zeros(2, np.int8),
                   "key_names": np.array(["a", "b"], dtype=h5py.string_dtype())},
                  "schema_error"),
    "big_codes": ("categorical,int64",
                  {"values": np.array([2 ** 62, -2 ** 63, 1], np.int64),
                   "key_values": np.array([1], np.int8),
                   "key_names": np.array(["one"], dtype=h5py.string_dtype())}, None),
    "ts_ints": ("timestamp", {"values": np.zeros(2, np.int64)}, "type_error"),
    "index_from_1": ("indexedstring", {"index": np.array([1, 2, 3]),
                                       "values": np.frombuffer(b"abc", np.uint8)}, "schema_error"),
    "index_past": ("indexedstring", {"index": np.array([0, 2, 9]),
                                     "values": np.frombuffer(b"abc", np.uint8)}, "schema_error"),
    "index_short": ("indexedstring", {"index": np.array([0, 1, 2]),
                                      "values": np.frombuffer(b"abc", np.uint8)}, "schema_error"),
    "index_down": ("indexedstring", {"index": np.array([0, 3, 1, 3]),
                                     "values": np.frombuffer(b"abc", np.uint8)}, "schema_error"),
    "index_huge": ("indexedstring", {"index": np.array([0, 2 ** 62, 3]),
                                     "values": np.frombuffer(b"abc", np.uint8)}, "schema_error"),
    "index_empty": ("indexedstring", {"index": np.zeros(0, np.int64),
                                      "values": np.frombuffer(b"abc", np.uint8)}, "schema_error"),
    "index_floats": ("indexedstring", {"index": np.array([0.0, 3.0]),
                                       "values": np.frombuffer(b"abc", np.uint8)}, "type_error"),
    "no_values": ("numeric,int64", {}, "schema_error"),
    # a NUL is a string's data, not a malformation: read below
    "nul_inside": ("indexedstring", {"index": np.array([0, 3]),
                                     "values": np.frombuffer(b"a\0c", np.uint8)}, None),
}


def test_malformed_fields(conn):
    sub = unique("exbad")
    (conn.dir / sub).mkdir()
    path = conn.dir / sub / "bad.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("bad")
        for name, (ft, data, _) in BAD.items():
            add_field(g, name, "numeric,int8" if name == "long_type" else ft, **data)
            if name == "long_type":
                g[name].attrs.create("fieldtype", ft, dtype=h5py.string_dtype())
        g.create_group("not_text").attrs["fieldtype"] = np.int64(3)
        g.create_group("bytes_type").attrs["fieldtype"] = np.bytes_(b"numeric,\xff\xfe")
    rel = f"{sub}/bad.h5"
    for name, (_, _, code) in {**BAD, "not_text": (0, 0, "type_error"),
                               "bytes_type": (0, 0, "type_error")}.items():
        if code is None:
            continue
        err = fail(conn, [rel], f"bad/{name}")
        assert err["code"] == code, (name, err)
        assert f"bad/{name}" in err["message"], (name, err)
        assert len(err["message"]) < 2000, err
    _, got, _ = read(conn, [rel], "bad/nul_inside")
    assert got == ["a\0c"], got
    # codes far outside int8's keys are NA
    _, got, _ = read(conn, [rel], "bad/big_codes")
    assert got == ["N/A", "N/A", "one"]
    # the daemon keeps running, and lshdf lists every field of the file
    conn.ok("ping")
    entries = lshdf_entries(conn, rel)
    assert entries["bad/hostile_type"]["kind"] == "field"
    assert entries["bad/hostile_type"]["objtype"] is None
    assert entries["bad/index_past"]["length"] == 2


def test_fields_disagreeing_across_files(conn):
    sub = unique("exdiff")
    (conn.dir / sub).mkdir()
    for i, ft in enumerate(("numeric,int32", "numeric,int64")):
        with h5py.File(conn.dir / sub / f"{i}.h5", "w") as f:
            add_field(f.create_group("df"), "x", ft, values=np.arange(3, dtype=ft.split(",")[1]))
    err = fail(conn, [f"{sub}/0.h5", f"{sub}/1.h5"], "df/x")
    assert err["code"] == "type_error" and "df/x" in err["message"], err


def test_fields_differ_across_files(conn):
    """A dataframe's fields come from its first file, as a DataFrame's columns do: a later
    file lacking one, or holding one the files before it do not, is a schema_error naming the
    file and the field (skipped and named under allow_errors), never a field left out."""
    sub = unique("exfields")
    (conn.dir / sub).mkdir()
    for i, fields in enumerate((["a", "b"], ["a", "b", "c"], ["a"])):
        with h5py.File(conn.dir / sub / f"{i}.h5", "w") as f:
            g = f.create_group("df")
            for name in fields:
                add_field(g, name, "numeric,int32", values=np.arange(3, dtype=np.int32))
    names = [f"{sub}/{i}.h5" for i in range(3)]
    check_columns_must_agree(conn, names)
    # one field of the dataframe reads from every file that has it
    _, got, _ = read(conn, names[:2], "df/b")
    same(got, np.tile(np.arange(3, dtype=np.int32), 2))
    conn.ok("ping")


def test_lshdf_agrees_with_readhdf(conn, made):
    """Every group and dataset lshdf lists, at every depth, reads as the objtype it gives."""
    from test_read_any import disagreements
    a, _ = made
    checked, problems = disagreements(conn, a, recursive=True)
    assert "people" in checked and "df" in checked, checked
    assert not problems, "\n".join(problems)


def test_skipped_file_says_nothing_of_its_fields(conn):
    """allow_errors: a file skipped for a broken field leaves no warning of its own fields."""
    sub = unique("exskip")
    (conn.dir / sub).mkdir()
    with h5py.File(conn.dir / sub / "0.h5", "w") as f:
        add_field(f.create_group("df"), "x", "indexedstring", **indexed(["a", "b"]))
    with h5py.File(conn.dir / sub / "1.h5", "w") as f:
        add_field(f.create_group("df"), "x", "indexedstring", completed=None,
                  index=np.array([0, 5]), values=np.frombuffer(b"ab", np.uint8))
    hdr, _ = conn.ok("readhdf", paths=[f"{sub}/0.h5", f"{sub}/1.h5"], datasets=["df/x"],
                     allow_errors=True)
    assert len(hdr["result"]["file_errors"]) == 1 and "df/x" in hdr["result"]["file_errors"][0]
    assert not hdr.get("warnings"), hdr
    conn.ok("delete", names=[hdr["result"]["objects"]["df/x"]["name"]])
