"""lshdf against a real daemon: Arkouda's own files, h5py files imitating Arkouda's layout,
types Arkouda cannot hold, links and cycles, limits, and every way a path or a file can be
wrong. After every error the daemon must still answer ping."""
import os
import shutil

import h5py
import numpy as np
import pytest

from wire import unique

OK_ERRORS = {"not_found", "bad_request", "forbidden", "schema_error", "io_error"}


def lshdf(call, path, recursive=None):
    args = {"path": path}
    if recursive is not None:
        args["recursive"] = recursive
    hdr, frames = call("lshdf", **args)
    assert not frames
    return hdr


def entries_of(call, path, recursive=None):
    hdr = lshdf(call, path, recursive)
    assert hdr["ok"], hdr.get("error")
    entries = hdr["result"]["entries"]
    for e in entries:
        for key in ("name", "path", "kind", "objtype", "dtype", "shape", "attrs"):
            assert key in e, (key, e)
        assert isinstance(e["attrs"], dict)
        assert e["path"].endswith("/" + e["name"])
    return entries


def by_path(entries):
    out = {e["path"]: e for e in entries}
    assert len(out) == len(entries), "a path is listed twice"
    return out


def assert_error(call, path, codes, recursive=None, mention=None):
    hdr = lshdf(call, path, recursive)
    assert not hdr["ok"], hdr
    code = hdr["error"]["code"]
    assert code in (codes if isinstance(codes, (set, tuple, list)) else {codes}), hdr["error"]
    assert hdr["error"]["message"]
    if mention:
        assert mention in hdr["error"]["message"], hdr["error"]
    ping(call)
    return hdr["error"]


def ping(call):
    hdr, _ = call("ping")
    assert hdr["ok"] and hdr["result"]["pong"] is True


def put_fixture(daemon, fixtures, name):
    dest = daemon.data_dir / unique("ark") / name
    dest.parent.mkdir(parents=True)
    shutil.copy(fixtures / name, dest)
    return str(dest.relative_to(daemon.data_dir))


def new_file(daemon, name="f.h5", **kwargs):
    """An h5py file in the data directory: returns (h5py.File, path relative to data dir)."""
    path = daemon.data_dir / unique("h5") / name
    path.parent.mkdir(parents=True)
    return h5py.File(path, "w", **kwargs), str(path.relative_to(daemon.data_dir))


def ark_attrs(obj, objtype, is_bool=False):
    """Arkouda's object attributes, in Arkouda's order and HDF5 types."""
    obj.attrs.create("ObjType", objtype, dtype="<i8")
    if is_bool:
        obj.attrs.create("isBool", 1, dtype="<i8")
    obj.attrs.create("file_version", 2.0, dtype="<f4")
    obj.attrs.create("arkouda_version", np.bytes_("v2024.06.21"))


def ark_strings(parent, name, strings, objtype_attrs=True, segments=True):
    g = parent.create_group(name)
    data = b"".join(s.encode() + b"\0" for s in strings)
    vals = g.create_dataset("values", data=np.frombuffer(data, dtype="u1"))
    if segments:
        offs = np.cumsum([0] + [len(s.encode()) + 1 for s in strings[:-1]]).astype("<i8")
        seg = g.create_dataset("segments", data=offs)
    if objtype_attrs:
        ark_attrs(g, 2)
        ark_attrs(vals, 1)
        if segments:
            ark_attrs(seg, 1)
    return g


# ---- Arkouda's own files ---------------------------------------------------------------


def test_legacy_string(daemon, call, arkouda_fixtures):
    path = put_fixture(daemon, arkouda_fixtures, "Legacy_String.hdf5")
    top = entries_of(call, path)
    assert [e["path"] for e in top] == ["/_arkouda_metadata", "/strings_array"]
    meta, strings = top
    assert meta["kind"] == "group" and meta["objtype"] is None and meta["legacy"]
    assert meta["dtype"] is None and meta["shape"] is None
    assert meta["attrs"]["file_version"] == pytest.approx(1.0)
    assert meta["attrs"]["arkouda_version"] == "v2022.09.30"
    assert strings["kind"] == "group" and strings["objtype"] == "strings"
    assert strings["dtype"] == "str" and strings["shape"] == [3]
    assert "ObjType" not in strings["attrs"]

    allents = by_path(entries_of(call, path, recursive=True))
    assert set(allents) == {"/_arkouda_metadata", "/strings_array", "/strings_array/values",
                            "/strings_array/segments"}
    v = allents["/strings_array/values"]
    assert v["kind"] == "dataset" and v["dtype"] == "uint8" and v["shape"] == [12]
    assert v["objtype"] == "pdarray" and v["storage"] in ("contiguous", "compact", "chunked")
    s = allents["/strings_array/segments"]
    assert s["dtype"] == "int64" and s["shape"] == [3]


@pytest.mark.parametrize("name,legacy_meta", [("array_v0_LOCALE0000.hdf5", False),
                                              ("array_v1_LOCALE0000.hdf5", True)])
def test_legacy_arrays(daemon, call, arkouda_fixtures, name, legacy_meta):
    path = put_fixture(daemon, arkouda_fixtures, name)
    ents = by_path(entries_of(call, path))
    a = ents["/array"]
    assert a["name"] == "array" and a["kind"] == "dataset"
    assert a["objtype"] == "pdarray" and a["dtype"] == "int64" and a["shape"] == [50]
    assert a["attrs"] == {}
    assert a["storage"] == "contiguous" and a["filters"] == []
    if legacy_meta:
        m = ents["/_arkouda_metadata"]
        assert m["objtype"] is None and "legacy" in m
        assert m["attrs"]["file_version"] == pytest.approx(1.0)
    else:
        assert set(ents) == {"/array"}


@pytest.mark.parametrize("name", ["UnitTestHDF5_withOffsets_LOCALE0000",
                                  "UnitTestHDF5_noOffsets_LOCALE0000"])
def test_unit_test_strings(daemon, call, arkouda_fixtures, name):
    path = put_fixture(daemon, arkouda_fixtures, name)
    ents = by_path(entries_of(call, path))
    s = ents["/strings"]
    assert s["kind"] == "group" and s["objtype"] == "strings"
    assert s["dtype"] == "str" and s["shape"] == [5]  # one two three four five
    rec = by_path(entries_of(call, path, recursive=True))
    assert rec["/strings/values"]["shape"] == [len(b"one\0two\0three\0four\0five\0")]
    assert ("/strings/segments" in rec) == ("withOffsets" in name)


def test_sample_unallocated(daemon, call, arkouda_fixtures):
    path = put_fixture(daemon, arkouda_fixtures, "sample.hdf5")
    (e,) = entries_of(call, path)
    assert e["path"] == "/sample" and e["kind"] == "dataset"
    assert e["objtype"] == "pdarray" and e["dtype"] == "int32" and e["shape"] == [100]
    assert e["attrs"] == {}
    assert e["storage_bytes"] == 0


# ---- files imitating Arkouda's layout ----------------------------------------------------


def test_pdarray_with_attributes(daemon, call):
    f, path = new_file(daemon)
    with f:
        f.attrs.create("File_Format", 0, dtype="<i8")
        d = f.create_dataset("arr", data=np.arange(10, dtype="<i8"))
        ark_attrs(d, 1)
    (e,) = entries_of(call, path)
    assert e["objtype"] == "pdarray" and "inferred" not in e
    assert e["dtype"] == "int64" and e["shape"] == [10]
    assert e["attrs"] == {"ObjType": 1, "file_version": 2.0, "arkouda_version": "v2024.06.21"}
    assert list(e["attrs"]) == sorted(e["attrs"])  # no creation order tracked: by name


def test_strings_group(daemon, call):
    f, path = new_file(daemon)
    with f:
        ark_strings(f, "s", ["alpha", "", "gamma", "δέλτα"])
        ark_strings(f, "noseg", ["a", "b"], segments=False)
    ents = by_path(entries_of(call, path))
    s = ents["/s"]
    assert s["objtype"] == "strings" and s["dtype"] == "str" and s["shape"] == [4]
    assert s["attrs"]["ObjType"] == 2
    assert ents["/noseg"]["shape"] == [2]
    rec = by_path(entries_of(call, path, recursive=True))
    assert rec["/s/values"]["objtype"] == "pdarray" and rec["/s/values"]["dtype"] == "uint8"
    assert rec["/s/segments"]["attrs"]["ObjType"] == 1


def test_bools(daemon, call):
    f, path = new_file(daemon)
    with f:
        d = f.create_dataset("arkbool", data=np.array([1, 0, 1], dtype="u1"))
        ark_attrs(d, 1, is_bool=True)
        f.create_dataset("h5pybool", data=np.array([True, False]))
        d = f.create_dataset("notbool", data=np.array([1, 0], dtype="u1"))
        d.attrs.create("isBool", 0, dtype="<i8")
    ents = by_path(entries_of(call, path))
    assert ents["/arkbool"]["dtype"] == "bool" and ents["/arkbool"]["objtype"] == "pdarray"
    assert ents["/arkbool"]["attrs"]["isBool"] == 1
    assert ents["/h5pybool"]["dtype"] == "bool" and ents["/h5pybool"]["objtype"] == "pdarray"
    assert ents["/notbool"]["dtype"] == "uint8"


@pytest.mark.parametrize("dtype", ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4",
                                   "f8", ">i4", ">f8"])
def test_widths(daemon, call, dtype):
    f, path = new_file(daemon)
    with f:
        f.create_dataset("x", data=np.arange(7).astype(dtype))
    (e,) = entries_of(call, path)
    dt = np.dtype(dtype)
    expect = {"i": "int", "u": "uint", "f": "float"}[dt.kind] + str(dt.itemsize * 8)
    assert e["dtype"] == expect and e["shape"] == [7] and e["objtype"] == "pdarray"
    if dt.byteorder == ">":
        assert e["dtype_detail"] == "big-endian"


@pytest.mark.parametrize("code,objtype,tag", [
    (0, "arrayview", None), (1, "pdarray", None), (7, "pdarray", "datetime64[ns]"),
    (8, "pdarray", "timedelta64[ns]"), (9, "pdarray", "ipv4"), (10, "bitvector", None),
    (11, "series", None)])
def test_dataset_objtypes(daemon, call, code, objtype, tag):
    f, path = new_file(daemon)
    with f:
        d = f.create_dataset("x", data=np.arange(6, dtype="<i8"))
        ark_attrs(d, code)
        if code == 0:
            d.attrs.create("Rank", 2, dtype="<i8")
            d.attrs.create("Shape", np.array([2, 3], dtype="<i8"))
    (e,) = entries_of(call, path)
    assert e["objtype"] == objtype and e.get("tag") == tag
    assert e["attrs"]["ObjType"] == code
    if code == 0:
        assert e["attrs"]["Shape"] == [2, 3] and e["attrs"]["Rank"] == 2


def test_group_objtypes(daemon, call):
    f, path = new_file(daemon)
    with f:
        sa = f.create_group("seg")
        ark_attrs(sa, 3)
        sa.create_dataset("values", data=np.arange(10, dtype="<f8"))
        sa.create_dataset("segments", data=np.array([0, 3, 3, 7], dtype="<i8"))
        cat = f.create_group("cat")
        ark_attrs(cat, 4)
        cat.create_dataset("codes", data=np.array([0, 1, 0, 2, 1], dtype="<i8"))
        ark_strings(cat, "categories", ["x", "y", "N/A"])
        cat.create_dataset("NA_Codes", data=np.array([2], dtype="<i8"))
        gb = f.create_group("gb")
        ark_attrs(gb, 5)
        gb.attrs.create("NumKeys", 1, dtype="<i8")
        df = f.create_group("df")
        ark_attrs(df, 6)
        df.attrs.create("NumCols", 2, dtype="<i8")
        for code, name in [(12, "idx"), (13, "midx")]:
            g = f.create_group(name)
            ark_attrs(g, code)
            g.attrs.create("NumIdx", 1, dtype="<i8")
        weird = f.create_group("weird")
        weird.attrs.create("ObjType", 99, dtype="<i8")
        # SegArray without attributes: inferred from segments + numeric values
        plain = f.create_group("plainseg")
        plain.create_dataset("values", data=np.arange(4, dtype="<i8"))
        plain.create_dataset("segments", data=np.array([0, 2], dtype="<i8"))
        # SegArray of strings: values is a Strings group
        ss = f.create_group("strseg")
        ark_strings(ss, "values", ["a", "bb", "c"], objtype_attrs=False)
        ss.create_dataset("segments", data=np.array([0, 1], dtype="<i8"))
        f.create_group("empty")
    ents = by_path(entries_of(call, path))
    assert ents["/seg"]["objtype"] == "segarray" and ents["/seg"]["dtype"] == "float64"
    assert ents["/seg"]["shape"] == [4]
    assert ents["/cat"]["objtype"] == "categorical" and ents["/cat"]["shape"] == [5]
    # marked but without their parts: no objtype (readhdf cannot read them), a note saying
    # what is missing; a DataFrame of no columns reads (empty)
    assert ents["/gb"]["objtype"] is None and ents["/gb"]["attrs"]["NumKeys"] == 1
    assert ents["/gb"]["note"] == "a GroupBy h5ark cannot read: no 'permutation'"
    assert ents["/df"]["objtype"] == "dataframe" and ents["/df"]["attrs"]["NumCols"] == 2
    for name, what in (("idx", "an Index"), ("midx", "a MultiIndex")):
        assert ents["/" + name]["objtype"] is None
        assert ents["/" + name]["note"] == f"{what} h5ark cannot read: no 'IDX_0'"
    assert ents["/weird"]["objtype"] is None and "99" in ents["/weird"]["note"]
    assert ents["/plainseg"]["objtype"] == "segarray" and ents["/plainseg"]["inferred"]
    assert ents["/plainseg"]["dtype"] == "int64" and ents["/plainseg"]["shape"] == [2]
    assert ents["/strseg"]["objtype"] == "segarray" and ents["/strseg"]["dtype"] == "str"
    assert ents["/empty"]["objtype"] is None and ents["/empty"]["dtype"] is None
    rec = by_path(entries_of(call, path, recursive=True))
    assert rec["/cat/categories"]["objtype"] == "strings"
    assert rec["/cat/categories"]["shape"] == [3]
    assert rec["/strseg/values"]["objtype"] == "strings"


def test_nested_recursive(daemon, call):
    f, path = new_file(daemon)
    with f:
        f.create_dataset("a/b/c/d", data=np.arange(3))
        f.create_dataset("a/x", data=np.arange(2))
        f.create_dataset("top", data=np.arange(1))
    top = entries_of(call, path)
    assert [e["path"] for e in top] == ["/a", "/top"]
    assert entries_of(call, path, recursive=False) == top
    rec = entries_of(call, path, recursive=True)
    # depth first, each group before its members
    assert [e["path"] for e in rec] == ["/a", "/a/b", "/a/b/c", "/a/b/c/d", "/a/x", "/top"]
    assert [e["name"] for e in rec] == ["a", "b", "c", "d", "x", "top"]
    assert [e["kind"] for e in rec] == ["group", "group", "group", "dataset", "dataset",
                                        "dataset"]


def test_creation_order(daemon, call):
    f, path = new_file(daemon, track_order=True)
    with f:
        for name in ["zeta", "alpha", "mid"]:
            f.create_dataset(name, data=np.arange(2))
        g = f.create_group("grp", track_order=True)
        g.attrs["z"] = 1
        g.attrs["a"] = 2
    ents = entries_of(call, path)
    assert [e["name"] for e in ents] == ["zeta", "alpha", "mid", "grp"]
    assert list(ents[-1]["attrs"]) == ["z", "a"]
    f, path = new_file(daemon)
    with f:
        for name in ["zeta", "alpha", "mid"]:
            f.create_dataset(name, data=np.arange(2))
    assert [e["name"] for e in entries_of(call, path)] == ["alpha", "mid", "zeta"]


def test_storage_and_filters(daemon, call):
    f, path = new_file(daemon)
    with f:
        f.create_dataset("plain", data=np.arange(100))
        f.create_dataset("gz", data=np.arange(1000), chunks=(100,), compression="gzip",
                         compression_opts=4, shuffle=True, fletcher32=True)
        f.create_dataset("chunked", data=np.arange(1000), chunks=(250,))
        space = h5py.h5s.create_simple((4,))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
    ents = by_path(entries_of(call, path))
    assert ents["/plain"]["storage"] == "contiguous" and ents["/plain"]["filters"] == []
    gz = ents["/gz"]
    assert gz["storage"] == "chunked" and gz["chunks"] == [100]
    assert set(gz["filters"]) == {"shuffle", "gzip", "fletcher32"}
    assert gz["filters"].index("shuffle") < gz["filters"].index("gzip")
    assert ents["/chunked"]["storage"] == "chunked" and ents["/chunked"]["filters"] == []
    assert ents["/compact"]["storage"] == "compact" and ents["/compact"]["dtype"] == "int32"


def test_unsupported_types_are_described(daemon, call):
    f, path = new_file(daemon)
    with f:
        f.create_dataset("compound", data=np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")]))
        f.create_dataset("vlenstr", data=["x", "yy"], dtype=h5py.string_dtype())
        f.create_dataset("fixedstr", data=np.array([b"ab", b"cd"], dtype="S2"))
        f.create_dataset("twod", data=np.zeros((3, 4), dtype="<i8"))
        f.create_dataset("vlenint", (2,), dtype=h5py.vlen_dtype(np.int32))
        f.create_dataset("enum", data=np.array([0, 1, 2], dtype="u1"),
                         dtype=h5py.enum_dtype({"R": 0, "G": 1, "B": 2}, basetype="u1"))
        f.create_dataset("refs", (2,), dtype=h5py.ref_dtype)
        f.create_dataset("opaque", data=np.void(b"\x01\x02\x03"))
        f.create_dataset("arr", (2,), dtype=np.dtype(("<i4", (3,))))
        f.create_dataset("scalar", data=5)
        f.create_dataset("null", dtype="f4", shape=None)
    ents = by_path(entries_of(call, path))
    expect = {"/compound": "compound", "/vlenstr": "string", "/fixedstr": "string",
              "/twod": "int64", "/vlenint": "vlen", "/enum": "enum", "/refs": "reference",
              "/opaque": "opaque", "/arr": "array", "/scalar": "int64", "/null": "float32"}
    for p, dtype in expect.items():
        assert ents[p]["dtype"] == dtype, ents[p]
    # what readhdf reads by type and shape, lshdf names as readhdf would; the rest it cannot
    assert ents["/vlenstr"]["objtype"] == "strings" and ents["/vlenstr"]["inferred"]
    assert ents["/fixedstr"]["objtype"] == "strings" and ents["/fixedstr"]["inferred"]
    assert ents["/twod"]["objtype"] == "arrayview" and ents["/twod"]["inferred"]
    for p in ["/compound", "/vlenint", "/enum", "/refs", "/opaque", "/arr", "/null", "/scalar"]:
        assert ents[p]["objtype"] is None and "note" in ents[p], ents[p]
    assert ents["/twod"]["shape"] == [3, 4]
    assert ents["/scalar"]["shape"] == []
    assert ents["/null"]["shape"] is None
    assert "variable-length" in ents["/vlenstr"]["dtype_detail"]
    assert "fixed-length" in ents["/fixedstr"]["dtype_detail"]
    assert ents["/vlenint"]["dtype_detail"] == "variable-length sequence of int32"
    assert ents["/arr"]["dtype_detail"] == "array of int32, 12 bytes"


def test_attribute_values(daemon, call):
    f, path = new_file(daemon)
    with f:
        d = f.create_dataset("x", data=np.arange(3))
        d.attrs.create("i8", -5, dtype="<i8")
        d.attrs.create("u64", 2**64 - 1, dtype="<u8")
        d.attrs.create("f4", 1.5, dtype="<f4")
        d.attrs["fixed"] = np.bytes_("fixed text")
        d.attrs["vlen"] = "variable ünïcode"
        d.attrs.create("vlen_list", ["a", "bc"], dtype=h5py.string_dtype())
        d.attrs["small"] = np.array([1, 2, 3], dtype="<i4")
        d.attrs["empty"] = np.array([], dtype="<i4")
        d.attrs["floats"] = np.array([0.5, -1.0])
        d.attrs["big"] = np.arange(1000, dtype="<i4")
        d.attrs["matrix"] = np.zeros((2, 3))
        d.attrs["flag"] = True
        d.attrs["flags"] = np.array([True, False])
        d.attrs["comp"] = np.zeros(1, dtype=[("a", "<i4")])[0]
        d.attrs["badutf8"] = np.bytes_(b"ok\xff\xfe")
        d.attrs.create("nullspace", h5py.Empty("f8"))
        d.attrs.create("spacepad", np.bytes_("ab"), dtype=h5py.string_dtype("ascii", 2))
    (e,) = entries_of(call, path)
    a = e["attrs"]
    assert a["i8"] == -5 and a["u64"] == 2**64 - 1 and a["f4"] == 1.5
    assert a["fixed"] == "fixed text" and a["vlen"] == "variable ünïcode"
    assert a["vlen_list"] == ["a", "bc"]
    assert a["small"] == [1, 2, 3] and a["empty"] == [] and a["floats"] == [0.5, -1.0]
    assert isinstance(a["big"], str) and "1000" in a["big"] and "int32" in a["big"]
    assert isinstance(a["matrix"], str) and "2, 3" in a["matrix"]
    assert a["flag"] is True and a["flags"] == [True, False]
    assert isinstance(a["comp"], str) and "compound" in a["comp"]
    assert a["badutf8"].startswith("ok") and "\\x" in a["badutf8"]
    assert a["nullspace"] is None
    assert a["spacepad"] == "ab"


def test_hostile_names_are_valid_utf8(daemon, call):
    f, path = new_file(daemon)
    with f:
        f.create_dataset(b"caf\xe9", data=np.arange(2))  # Latin-1 bytes: not UTF-8
        f.create_dataset("ok", data=np.arange(2))
    ents = entries_of(call, path)  # the reply decodes: strings are UTF-8
    assert {e["name"] for e in ents} == {"caf\\xe9", "ok"}


# ---- links and cycles -----------------------------------------------------------------


def test_soft_and_external_links(daemon, call):
    f, path = new_file(daemon)
    with f:
        f.create_dataset("data", data=np.arange(4))
        f["soft"] = h5py.SoftLink("/data")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["ext"] = h5py.ExternalLink("other.h5", "/thing")
        f["outside"] = h5py.ExternalLink("/etc/passwd", "/x")
    ents = by_path(entries_of(call, path, recursive=True))
    assert ents["/data"]["kind"] == "dataset"
    assert ents["/soft"]["kind"] == "link" and ents["/soft"]["link_type"] == "soft"
    assert ents["/soft"]["target"] == "/data" and ents["/soft"]["objtype"] is None
    assert ents["/dangling"]["target"] == "/nowhere"
    assert ents["/ext"]["link_type"] == "external"
    assert ents["/ext"]["file"] == "other.h5" and ents["/ext"]["target"] == "/thing"
    assert ents["/outside"]["file"] == "/etc/passwd" and ents["/outside"]["dtype"] is None


def test_hard_link_cycle(daemon, call):
    f, path = new_file(daemon)
    with f:
        g = f.create_group("g")
        g.create_dataset("d", data=np.arange(3))
        h = g.create_group("h")
        h["up"] = g          # a group linking to its parent
        h["root"] = f["/"]   # and to the root
        g["self"] = g
        f["alias"] = g["d"]  # a second name for a dataset
    for recursive in (False, True):
        ents = entries_of(call, path, recursive=recursive)
        paths = [e["path"] for e in ents]
        assert len(paths) == len(set(paths))
        objects = [e for e in ents if e["kind"] in ("group", "dataset")]
        hard = {e["path"]: e["target"] for e in ents
                if e["kind"] == "link" and e.get("link_type") == "hard"}
        if recursive:
            assert [e["path"] for e in objects] == ["/alias", "/g", "/g/h"]
            assert hard == {"/g/d": "/alias", "/g/h/root": "/", "/g/h/up": "/g", "/g/self": "/g"}
        else:
            # by name order /alias comes first, so it is the dataset's listed name
            assert [(e["path"], e["kind"]) for e in ents] == [("/alias", "dataset"),
                                                              ("/g", "group")]
            assert hard == {}


def test_depth_limit(daemon, call):
    f, path = new_file(daemon)
    with f:
        f.create_group("/".join(["g"] * 80))
        f.create_dataset("shallow/x", data=np.arange(2))
    assert [e["path"] for e in entries_of(call, path)] == ["/g", "/shallow"]
    err = assert_error(call, path, "resource_limit", recursive=True)
    assert "deep" in err["message"]


def test_entry_limit(daemon, call):
    f, path = new_file(daemon, libver="latest")
    with f:
        d = f.create_dataset("d", data=np.arange(2))
        gid = f.id
        for i in range(100_001):
            h5py.h5o.link(d.id, gid, f"l{i:06d}".encode())
    err = assert_error(call, path, "resource_limit")
    assert "100000" in err["message"]


# ---- errors ------------------------------------------------------------------------------


def test_missing_file(daemon, call):
    assert_error(call, "no_such_file.h5", "not_found", mention="no_such_file.h5")
    assert_error(call, "no_such_dir/x.h5", "not_found")


def test_directory(daemon, call):
    d = daemon.data_dir / unique("dir")
    d.mkdir()
    assert_error(call, d.name, "bad_request")


@pytest.mark.parametrize("path", ["../x.h5", "a/../../x.h5", "/etc/hosts", "/tmp"])
def test_outside_paths(daemon, call, path):
    assert_error(call, path, "forbidden")


def test_symlink_outside(daemon, call, arkouda_fixtures):
    link = daemon.data_dir / unique("link")
    os.symlink(arkouda_fixtures / "array_v0_LOCALE0000.hdf5", link)
    assert_error(call, link.name, "forbidden")
    dirlink = daemon.data_dir / unique("dirlink")
    os.symlink(arkouda_fixtures, dirlink)
    assert_error(call, f"{dirlink.name}/array_v0_LOCALE0000.hdf5", "forbidden")


def test_symlink_inside(daemon, call, arkouda_fixtures):
    real = put_fixture(daemon, arkouda_fixtures, "array_v0_LOCALE0000.hdf5")
    link = daemon.data_dir / unique("inlink")
    os.symlink(daemon.data_dir / real, link)
    assert [e["path"] for e in entries_of(call, link.name)] == ["/array"]


def test_bad_arguments(daemon, call):
    hdr, _ = call("lshdf")
    assert hdr["error"]["code"] == "bad_request"
    hdr, _ = call("lshdf", path="x.h5", bogus=1)
    assert hdr["error"]["code"] == "bad_request"
    hdr, _ = call("lshdf", path=5)
    assert hdr["error"]["code"] == "bad_request"
    hdr, _ = call("lshdf", path="x.h5", recursive="yes")
    assert hdr["error"]["code"] == "bad_request"
    assert_error(call, "", "bad_request")
    ping(call)


def test_not_hdf5(daemon, call):
    p = daemon.data_dir / unique("text")
    p.write_text("this is not an HDF5 file\n" * 100)
    err = assert_error(call, p.name, "schema_error", mention=p.name)
    assert "not an HDF5 file" in err["message"]
    e = daemon.data_dir / unique("empty")
    e.write_bytes(b"")
    assert_error(call, e.name, "schema_error", mention=e.name)


def test_fifo_does_not_hang(daemon, call):
    p = daemon.data_dir / unique("fifo")
    os.mkfifo(p)
    assert_error(call, p.name, "bad_request")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(daemon, call, arkouda_fixtures):
    path = put_fixture(daemon, arkouda_fixtures, "array_v0_LOCALE0000.hdf5")
    os.chmod(daemon.data_dir / path, 0)
    assert_error(call, path, "io_error", mention=path)


def test_truncated(daemon, call, arkouda_fixtures):
    src = (arkouda_fixtures / "Legacy_String.hdf5").read_bytes()
    for n in [8, 100, 500, 1000, 2000, 3000, len(src) - 100, len(src) - 1]:
        p = daemon.data_dir / unique(f"trunc{n}")
        p.write_bytes(src[:n])
        hdr = lshdf(call, p.name, True)
        if not hdr["ok"]:
            assert hdr["error"]["code"] in {"schema_error", "io_error"}, hdr["error"]
            assert p.name in hdr["error"]["message"]
        ping(call)
    p = daemon.data_dir / unique("trunc_half")
    p.write_bytes(src[: len(src) // 2])
    err = assert_error(call, p.name, "schema_error", recursive=True, mention=p.name)
    assert "truncated" in err["message"] or "corrupt" in err["message"]


def test_unreadable_attribute(daemon, call):
    """A variable-length string attribute whose global heap is destroyed: a clear error
    naming the file, the object and the attribute."""
    f, path = new_file(daemon)
    with f:
        d = f.create_dataset("x", data=np.arange(3))
        d.attrs["note"] = "a variable-length string kept in the global heap"
    full = daemon.data_dir / path
    raw = bytearray(full.read_bytes())
    at = raw.find(b"GCOL")
    assert at > 0
    raw[at:at + 4] = b"XXXX"
    full.write_bytes(bytes(raw))
    err = assert_error(call, path, "schema_error", mention=path)
    assert "note" in err["message"] and "/x" in err["message"]


def test_many_requests_in_parallel(daemon, call, arkouda_fixtures):
    """lshdf from several handler threads at once: HDF5's one lock, per-thread errors."""
    import concurrent.futures
    good = put_fixture(daemon, arkouda_fixtures, "Legacy_String.hdf5")
    bad = daemon.data_dir / unique("bad")
    bad.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 50)

    def one(i):
        hdr = lshdf(call, good if i % 2 else bad.name, True)
        return hdr["ok"] or hdr["error"]["code"]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(64)))
    assert results[1::2] == [True] * 32
    assert set(results[0::2]) == {"schema_error"}
    ping(call)


def test_file_locked_by_writer(daemon, call):
    """A file another program holds open for writing is locked by HDF5: busy, not corrupt."""
    f, path = new_file(daemon)
    with f:
        f.create_dataset("x", data=np.arange(3))
        f.flush()
        hdr = lshdf(call, path)
        if hdr["ok"]:
            pytest.skip("HDF5 file locking is disabled here (HDF5_USE_FILE_LOCKING)")
        assert hdr["error"]["code"] == "busy", hdr["error"]
        assert path in hdr["error"]["message"]
    assert [e["name"] for e in entries_of(call, path)] == ["x"]


def test_composites_without_attributes_inferred(daemon, call):
    """Groups with no ObjType are named by the children Arkouda's reader looks for."""
    f, path = new_file(daemon)
    with f:
        g = f.create_group("cat")
        g["codes"] = np.arange(3)
        ark_strings(g, "categories", ["a", "b", "N/A"], objtype_attrs=False)
        g = f.create_group("gb")
        for child in ("permutation", "unique_key_idx", "segments", "KEY_0"):
            g[child] = np.arange(3)
        f.create_group("ix")["IDX_0"] = np.arange(3)
        mi = f.create_group("mi")
        mi["IDX_0"] = np.arange(3)
        mi["IDX_1"] = np.arange(3)
        big = f.create_group("big")
        big["Limb_0"] = np.arange(3, dtype="<u8")
        f.create_group("plain")["other"] = np.arange(3)
    got = {e["name"]: e for e in entries_of(call, path)}
    for name, objtype in [("cat", "categorical"), ("gb", "groupby"), ("ix", "index"),
                          ("mi", "multiindex"), ("big", "pdarray")]:
        assert got[name]["objtype"] == objtype, got[name]
        assert got[name]["inferred"] is True
    assert got["plain"]["objtype"] is None
