"""lshdf and readhdf agree, and whole-file reads drop nothing silently, against a real daemon:
every composite of Arkouda's layout (and ExeTera's, and a DataFrame of columns of different
lengths) built whole with h5py and then with each of its parts taken away. lshdf lists the
broken one with objtype nil and a note naming what is wrong; readhdf of the whole file
returns the rest and names it in `warnings`; readhdf naming it alone is an error naming the
part; the Python client issues the warning; the fixtures of ../shared list and read alike."""
import json
import re
import warnings as pywarnings

import h5py
import numpy as np
import pytest

from conftest import SHARED_FIXTURES
from daemons import Daemon
from wire import Conn, unique

FIXTURES = SHARED_FIXTURES.parent


def ark(obj, objtype):
    obj.attrs.create("ObjType", objtype, dtype="<i8")
    return obj


def numbers(g, name, values, dtype="<i8", objtype=1):
    d = g.create_dataset(name, data=np.asarray(values, dtype))
    if objtype is not None:
        ark(d, objtype)
    return d


def strings(g, name, texts):
    s = ark(g.create_group(name), 2)
    raw = [t.encode() + b"\0" for t in texts]
    numbers(s, "values", np.frombuffer(b"".join(raw), "u1"), "u1")
    numbers(s, "segments", np.cumsum([0] + [len(r) for r in raw[:-1]]))
    return s


def categorical(g, name, codes=(0, 1, 1, 0)):
    c = ark(g.create_group(name), 4)
    numbers(c, "codes", codes)
    strings(c, "categories", ["x", "y"])
    numbers(c, "NA_Codes", [2])
    return c


# Each composite whole, and the parts whose absence breaks it: (builder, [(part, note words)]).
def make_strings(f):
    strings(f, "obj", ["a", "bc", ""])


def make_segarray(f):
    s = ark(f.create_group("obj"), 3)
    numbers(s, "segments", [0, 2, 2])
    numbers(s, "values", [1, 2, 3])


def make_categorical(f):
    categorical(f, "obj")


def make_groupby(f, key=None):
    g = ark(f.create_group("obj"), 5)
    g.attrs.create("NumKeys", 1, dtype="<i8")
    numbers(g, "permutation", [1, 0, 2])
    numbers(g, "segments", [0, 2])
    numbers(g, "unique_key_idx", [1, 2])
    if key:
        key(g, "KEY_0")
    else:
        numbers(g, "KEY_0", [5, 5, 7])


def make_groupby_cat(f):
    make_groupby(f, lambda g, name: categorical(g, name, [0, 0, 1]))


def make_dataframe(f):
    d = ark(f.create_group("obj"), 6)
    d.attrs.create("NumCols", 2, dtype="<i8")
    numbers(d, "a", [1, 2, 3])
    strings(d, "b", ["p", "q", "r"])


def make_index(f, levels=1):
    ix = ark(f.create_group("obj"), 12 if levels == 1 else 13)
    ix.attrs.create("NumIdx", levels, dtype="<i8")
    for i in range(levels):
        numbers(ix, f"IDX_{i}", [4, 5, 6])


def make_multiindex(f):
    make_index(f, 2)


def make_bigint(f):
    b = ark(f.create_group("obj"), 1)
    b.attrs.create("isBigInt", 1, dtype="<i8")
    b.attrs.create("MaxBits", -1, dtype="<i8")
    b.attrs.create("NumLimbs", 2, dtype="<i8")
    numbers(b, "Limb_0", [1, 2], "<u8")
    numbers(b, "Limb_1", [0, 1], "<u8")


def make_arrayview(f):
    d = numbers(f, "obj", np.arange(6), objtype=0)
    d.attrs.create("Rank", 2, dtype="<i8")
    d.attrs.create("Shape", [2, 3], dtype="<i8")


def make_exetera(f):
    df = f.create_group("obj")
    a = df.create_group("a")
    a.attrs["fieldtype"] = "numeric,int64"
    a.create_dataset("values", data=np.arange(3, dtype="<i8")).attrs["completed"] = np.uint8(1)
    b = df.create_group("b")
    b.attrs["fieldtype"] = "indexedstring"
    b.create_dataset("index", data=np.array([0, 1, 3, 3], "<i8")).attrs["completed"] = np.uint8(1)
    b.create_dataset("values", data=np.frombuffer(b"pqr", "u1"))


CASES = {
    "strings": (make_strings, "Strings", ["values"]),
    "segarray": (make_segarray, "a SegArray", ["segments", "values"]),
    "categorical": (make_categorical, "a Categorical", ["codes", "categories", "categories/values"]),
    "groupby": (make_groupby, "a GroupBy", ["permutation", "segments", "unique_key_idx", "KEY_0"]),
    "groupby_cat": (make_groupby_cat, "a GroupBy", ["KEY_0/codes", "KEY_0/categories"]),
    "dataframe": (make_dataframe, "a DataFrame", ["b/values"]),
    "index": (make_index, "an Index", ["IDX_0"]),
    "multiindex": (make_multiindex, "a MultiIndex", ["IDX_1"]),
    "bigint": (make_bigint, "a bigint", ["Limb_0", "Limb_1"]),
    "exetera": (make_exetera, "an ExeTera dataframe", ["a/values", "b/index", "b/values"]),
}


def part_name(part):
    return part.split("/")[-1]


def build(conn, make, tweak):
    """A file holding `ok` (a whole pdarray) and `obj` made by make, then tweaked."""
    path = conn.dir / unique("agree") / "f.h5"
    path.parent.mkdir(parents=True)
    with h5py.File(path, "w") as f:
        numbers(f, "ok", [1, 2, 3])
        make(f)
        tweak(f)
    return str(path.relative_to(conn.dir))


def listed(conn, path):
    hdr, _ = conn.ok("lshdf", path=path)
    return {e["name"]: e for e in hdr["result"]["entries"]}


def read_whole(conn, path):
    hdr, _ = conn.ok("readhdf", paths=[path])
    return hdr["result"]["objects"], hdr.get("warnings", [])


def check_refused(conn, path, what, words):
    """obj is listed without an objtype and a note; a whole read returns `ok` and names obj;
    naming obj alone is an error saying the same."""
    e = listed(conn, path)["obj"]
    assert e["objtype"] is None, e
    assert e["note"].startswith(f"{what} h5ark cannot read: "), e
    for w in words:
        assert w in e["note"], (w, e)
    objects, warns = read_whole(conn, path)
    assert set(objects) == {"ok"}, objects
    named = [w for w in warns if w.startswith("skipped: 'obj'")]
    assert len(named) == 1, warns
    assert e["note"] in named[0], (e["note"], named)
    err = conn.fail("readhdf", paths=[path], datasets=["obj"])
    assert err["code"] in ("schema_error", "type_error"), err
    assert err["message"].endswith(f"'obj' is {e['note']}"), (err, e)
    conn.ok("ping")


@pytest.mark.parametrize("case", sorted(CASES))
def test_whole_composite_lists_and_reads(conn, case):
    make, _what, _parts = CASES[case]
    path = build(conn, make, lambda f: None)
    e = listed(conn, path)["obj"]
    assert e["objtype"] is not None and "note" not in e, e
    objects, warns = read_whole(conn, path)
    assert set(objects) == {"ok", "obj"} and not warns, (objects, warns)
    assert objects["obj"]["objtype"] == e["objtype"], (objects["obj"], e)


@pytest.mark.parametrize("case,part", [(c, p) for c in sorted(CASES) for p in CASES[c][2]])
def test_missing_part(conn, case, part):
    make, what, _parts = CASES[case]

    def drop(f):
        del f["obj/" + part]

    path = build(conn, make, drop)
    check_refused(conn, path, what, [f"no '{part_name(part)}'"])


@pytest.mark.parametrize("case,attr,words", [
    ("groupby", None, "no 'KEY_1'"),       # NumKeys says 2
    ("index", None, "no 'IDX_1'"),
    ("bigint", None, "no 'Limb_2'"),
    ("arrayview", "Rank", "'Rank'"),
    ("arrayview", "Shape", "'Shape'"),
])
def test_count_or_attribute_wrong(conn, case, attr, words):
    make, what, _ = CASES.get(case, (make_arrayview, "an ArrayView", []))
    count = {"groupby": "NumKeys", "index": "NumIdx", "bigint": "NumLimbs"}

    def tweak(f):
        o = f["obj"]
        if attr:
            del o.attrs[attr]
        else:
            o.attrs.create(count[case], int(o.attrs[count[case]]) + 1, dtype="<i8")

    path = build(conn, make, tweak)
    check_refused(conn, path, what, [words])


@pytest.mark.parametrize("case,count,prefix", [("groupby", "NumKeys", "KEY_"),
                                                ("bigint", "NumLimbs", "Limb_"),
                                                ("multiindex", "NumIdx", "IDX_")])
def test_numbered_parts_without_count(conn, case, count, prefix):
    """Without its count attribute, a composite's numbered parts run to the highest number
    found: a gap is a part missing, for lshdf and readhdf alike."""
    make, what, _ = CASES[case]

    def tweak(f):
        o = f["obj"]
        del o.attrs[count]
        f.copy(o[prefix + "0"], o, prefix + "2")
        if prefix + "1" in o:
            del o[prefix + "1"]

    path = build(conn, make, tweak)
    check_refused(conn, path, what, [f"no '{prefix}1'"])


@pytest.mark.parametrize("part", ["NA_Codes", "permutation", "segments"])
def test_categorical_optional_part_of_strings(conn, part):
    """A Categorical's optional parts may be absent, but present they must be numbers."""
    def tweak(f):
        c = f["obj"]
        if part in c:
            del c[part]
        c.create_dataset(part, data=np.array([b"a", b"b"], "S1"))

    path = build(conn, make_categorical, tweak)
    check_refused(conn, path, "a Categorical", [f"'{part}' is", "not a 1-D array of numbers"])


def test_arrayview_whole(conn):
    path = build(conn, make_arrayview, lambda f: None)
    assert listed(conn, path)["obj"]["objtype"] == "arrayview"
    objects, warns = read_whole(conn, path)
    assert objects["obj"]["objtype"] == "arrayview" and not warns


def test_dataframe_columns_differ_in_length(conn):
    def tweak(f):
        del f["obj/a"]
        numbers(f["obj"], "a", [1, 2])

    path = build(conn, make_dataframe, tweak)
    check_refused(conn, path, "a DataFrame", ["columns differ in length", "2 rows", "3"])


def test_exetera_fields_differ_in_length(conn):
    def tweak(f):
        del f["obj/a/values"]
        f["obj/a"].create_dataset("values", data=np.arange(2, dtype="<i8"))

    path = build(conn, make_exetera, tweak)
    check_refused(conn, path, "an ExeTera dataframe",
                  ["fields differ in length", "'a': 2 rows", "'b': 3"])


def test_exetera_fieldtype_unknown(conn):
    def tweak(f):
        f["obj/a"].attrs["fieldtype"] = "numeric,complex64"

    path = build(conn, make_exetera, tweak)
    check_refused(conn, path, "an ExeTera dataframe", ["'a' is an ExeTera field", "numeric,complex64"])
    # the field itself, listed recursively, says the same
    hdr, _ = conn.ok("lshdf", path=path, recursive=True)
    field = [e for e in hdr["result"]["entries"] if e["path"] == "/obj/a"][0]
    assert field["objtype"] is None and "numeric,complex64" in field["note"], field


def test_pdarray_objtype_on_strings(conn):
    """ObjType 1 on a dataset of HDF5 strings: not a pdarray for either."""
    def tweak(f):
        ark(f.create_dataset("obj", data=np.array([b"a", b"b"], "S1")), 1)

    path = build(conn, lambda f: None, tweak)
    check_refused(conn, path, "a pdarray", ["string values"])


def test_later_file_holds_more(conn):
    """Reading whole files reads the first file's objects; another file's other objects are
    named in warnings, not dropped without a word."""
    a = build(conn, lambda f: None, lambda f: None)
    b = build(conn, lambda f: numbers(f, "extra", [9]), lambda f: None)
    hdr, _ = conn.ok("readhdf", paths=[a, b])
    assert set(hdr["result"]["objects"]) == {"ok"}
    warns = hdr.get("warnings", [])
    assert [w for w in warns if w.startswith("not read: 'extra'") and b in w], warns
    # the other way round, `extra` reads from the first file and the second lacks it
    err = conn.fail("readhdf", paths=[b, a])
    assert "extra" in err["message"], err


def test_skipped_first_file_object_not_named_again(conn):
    """An object refused in the first file is named once (skipped), not again as missing
    from the first file when a later file holds it whole."""
    a = build(conn, make_segarray, lambda f: f.__delitem__("obj/values"))
    b = build(conn, make_segarray, lambda f: None)
    hdr, _ = conn.ok("readhdf", paths=[a, b])
    warns = hdr.get("warnings", [])
    assert [w for w in warns if w.startswith("skipped: 'obj'")], warns
    assert not [w for w in warns if w.startswith("not read")], warns


def test_python_client_warns(daemon, conn):
    import h5ark
    path = build(conn, make_groupby, lambda f: f.__delitem__("obj/segments"))
    c = h5ark.connect(daemon.endpoint, timeout=60)
    try:
        with pywarnings.catch_warnings(record=True) as caught:
            pywarnings.simplefilter("always")
            got = c.read_hdf(path)
        assert set(got.keys()) == {"ok"}, got
        texts = [str(w.message) for w in caught if issubclass(w.category, h5ark.H5arkWarning)]
        assert [t for t in texts if "'obj'" in t and "no 'segments'" in t], texts
        assert [w for w in got.warnings if "no 'segments'" in w], got.warnings
        with pytest.raises(h5ark.H5arkError, match="no 'segments'"):
            c.read_hdf(path, datasets=["obj"])
    finally:
        c.clear()
        c.close()


# ---- the fixtures of ../shared: what lshdf names, readhdf reads -----------------------------

def fixture_files():
    if not FIXTURES.is_dir():
        return []
    out = []
    for family in ("arkouda", "exetera", "awkward0", "awkward2", "lbann"):
        d = FIXTURES / family
        for p in sorted(d.rglob("*")) if d.is_dir() else []:
            if p.is_file() and p.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n":
                out.append(p)
    return out


# Objects that read only with an option of the request, which a whole-file read without it
# names in warnings: (fixture, object) -> the option, or None when the warning names it.
NEEDS_OPTION = {("awkward2.hdf5", "bigendian"): {"byteorder": ">"}}


def first_quoted(text):
    m = re.search(r"'([^']*)'", text)
    return m.group(1) if m else None


@pytest.mark.parametrize("fixture", fixture_files() or [None],
                         ids=lambda p: str(p.relative_to(FIXTURES)) if p else "none")
def test_fixtures_list_and_read_alike(conn, fixture):
    if fixture is None:
        pytest.skip(f"fixtures not found at {FIXTURES} (../shared beside the repository)")
    dest = conn.dir / unique("fx") / fixture.name
    dest.parent.mkdir(parents=True)
    dest.write_bytes(fixture.read_bytes())
    path = str(dest.relative_to(conn.dir))
    entries = listed(conn, path)
    hdr, _ = conn.ok("readhdf", paths=[path])
    objects, warns = hdr["result"]["objects"], hdr.get("warnings", [])
    skipped = {first_quoted(w): w for w in warns if w.startswith("skipped: ")}
    assert len(skipped) == len([w for w in warns if w.startswith("skipped: ")]), warns
    for name, e in entries.items():
        if e["kind"] == "link" or e.get("legacy"):
            continue
        if e["objtype"] is None:
            assert name in skipped and name not in objects, (name, e, warns)
            continue
        if name in objects:
            # awkward0's layout reads as an awkward array; bigints and tags as pdarrays
            read_as = {"awkward0": "awkward"}.get(e["objtype"], e["objtype"])
            assert objects[name]["objtype"] in (read_as, "pdarray"), (objects[name], e)
            continue
        # named by lshdf, not read whole: only for want of an option, which the warning or
        # the table above names; with it, it reads
        assert name in skipped, (name, e, warns)
        option = NEEDS_OPTION.get((fixture.name, name))
        if option is None:
            # awkward0: lshdf's note says it could not judge (its blobs decide), or the
            # request's whitelist would let it read
            assert "whitelist" in skipped[name] or "unknown" in e.get("note", ""), (e, skipped[name])
            continue
        got, _ = conn.ok("readhdf", paths=[path], datasets=[name], **option)
        assert got["result"]["objects"][name]["objtype"] == e["objtype"]
    # nothing read or skipped that lshdf does not name (the older split layouts fold two
    # names into one)
    for name in list(objects) + list(skipped):
        assert name in entries or any(k.startswith(name) for k in entries), name


# ---- Arkouda's endpoint: readAllHdf of whole files ------------------------------------------

@pytest.fixture(scope="module")
def akd():
    d = Daemon(locales=3, arkouda=True)
    yield d
    d.cleanup()


def test_read_all_hdf_names_what_it_leaves_out(akd):
    """readAllHdf with no dsets reads whole files: what it leaves out is in `warnings` (JSON
    text of a list, as `file_errors`) and the reply is a WARNING, which Arkouda's client
    issues as a Python warning; naming the object is an error with the same words."""
    from test_arkouda_wire import Ak
    conn = Conn(akd)
    path = build(conn, make_groupby, lambda f: f.__delitem__("obj/segments"))
    ak = Ak(akd.ak_endpoint)
    try:
        args = {"strict_types": True, "allow_errors": False, "calc_string_offsets": False,
                "tag_data": False, "filenames": [str(akd.data_dir / path)]}
        r = ak.reply("readAllHdf", {**args, "dset_size": 0, "dsets": []})
        assert r["msgType"] == "WARNING", r
        reply = json.loads(r["msg"])
        assert [i["dataset_name"] for i in json.loads(reply["items"])] == ["ok"], reply
        warns = json.loads(reply["warnings"])
        assert [w for w in warns if "'obj'" in w and "no 'segments'" in w], warns
        msg = ak.error("readAllHdf", {**args, "dset_size": 1, "dsets": ["obj"]})
        assert "no 'segments'" in msg, msg
        # a read that leaves nothing out stays NORMAL, without the key
        whole = build(conn, make_groupby, lambda f: None)
        r = ak.reply("readAllHdf", {**args, "filenames": [str(akd.data_dir / whole)],
                                    "dset_size": 0, "dsets": []})
        assert r["msgType"] == "NORMAL" and "warnings" not in json.loads(r["msg"]), r
    finally:
        ak.close()
