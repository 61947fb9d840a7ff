"""tohdf and readhdf against a real daemon, with nothing but the wire protocol and h5py:
round trips of every dtype and of strings over both file types and both write modes on
daemons of 1, 3 and more locales than elements; the files checked against Arkouda's schema
(docs/FORMAT.md); files written by one locale count read by another; hand-made h5py
files; truncate warnings, append collisions and file-count rules; Arkouda's own fixtures;
the readhdf options; refused paths, missing and damaged files."""
import ctypes
import hashlib
import mmap
import os
import shutil

import h5py
import numpy as np
import pytest

from conftest import block_bounds, edge_values, locale_file
from wire import Conn as BaseConn, unique

LOCALES = 3  # the `daemon` fixture's locale count
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "bool"]
ERROR_CODES = {"bad_request", "not_found", "already_exists", "type_error", "schema_error",
               "io_error", "forbidden", "resource_limit"}


# ---- helpers ---------------------------------------------------------------------------

def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


class Conn(BaseConn):
    """With the error codes of the contract, and files."""

    def fail(self, cmd, **args):
        hdr, _ = self.raw(cmd, **args)
        assert not hdr["ok"], hdr
        assert hdr["error"]["code"] in ERROR_CODES, hdr
        return hdr["error"]

    def tohdf(self, names, path, **kw):
        hdr, _ = self.ok("tohdf", names=names, path=path, **kw)
        return hdr["result"]["files"], hdr.get("warnings", [])

    def readhdf(self, paths, **kw):
        if isinstance(paths, str):
            paths = [paths]
        hdr, _ = self.ok("readhdf", paths=paths, **kw)
        return hdr["result"]

    def read_values(self, paths, dataset, **kw):
        res = self.readhdf(paths, datasets=[dataset], **kw)
        desc = res["objects"][dataset]
        if desc["objtype"] == "strings":
            return self.get_strings(desc["name"])
        return self.get(desc["name"])


@pytest.fixture
def conn(daemon):
    daemon.data_dir.mkdir(exist_ok=True)
    return Conn(daemon)


def files_of(path, file_type, locales=LOCALES):
    return [locale_file(path, i) for i in range(locales)] if file_type == "distribute" else [path]


def check_object_attrs(obj, objtype, is_bool=False):
    """The metadata attributes of docs/FORMAT.md, with their HDF5 types and order."""
    attrs = obj.attrs
    assert attrs["ObjType"] == objtype
    assert attrs.get_id("ObjType").get_type().dtype == np.dtype("<i8")
    assert attrs.get_id("file_version").get_type().dtype == np.dtype("<f4")
    assert attrs["file_version"] == np.float32(2.0)
    vtype = attrs.get_id("arkouda_version").get_type()
    assert isinstance(vtype, h5py.h5t.TypeStringID) and not vtype.is_variable_str()
    assert vtype.get_strpad() == h5py.h5t.STR_NULLTERM
    assert vtype.get_cset() == h5py.h5t.CSET_ASCII
    version = attrs["arkouda_version"]
    assert isinstance(version, bytes) and len(version) + 1 == vtype.get_size()
    if is_bool:
        assert attrs["isBool"] == 1
        assert attrs.get_id("isBool").get_type().dtype == np.dtype("<i8")
    else:
        assert "isBool" not in attrs
    # creation order: the native order of attribute messages in an untracked header
    names = []
    h5py.h5a.iterate(obj.id, lambda n: names.append(n.decode()) or None,
                     index_type=h5py.h5.INDEX_NAME, order=h5py.h5.ITER_NATIVE)
    want = ["ObjType"] + (["isBool"] if is_bool else []) + ["file_version", "arkouda_version"]
    assert names == want


def check_dataset_layout(dset, dtype):
    assert dset.ndim == 1
    assert dset.chunks is None and dset.compression is None
    assert dset.id.get_create_plist().get_layout() == h5py.h5d.CONTIGUOUS
    assert dset.dtype == dtype and dset.dtype.byteorder in "<|="


def read_strings_file(h, group):
    values = h[f"{group}/values"][()].tobytes()
    segments = list(h[f"{group}/segments"][()]) + [len(values)]
    return [values[s:e - 1].decode() for s, e in zip(segments, segments[1:])]


# ---- pdarrays ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_pdarray_roundtrip_and_schema(conn, dtype, file_type):
    want = edge_values(dtype)
    name = conn.put(want)
    path = unique(f"rt_{dtype}") + ".h5"
    files, warnings = conn.tohdf([name], path, datasets=["vals"], file_type=file_type)
    assert files == files_of(path, file_type) and warnings == []
    disk_dtype = np.dtype("u1") if dtype == "bool" else np.dtype(dtype).newbyteorder("<")
    bounds = block_bounds(want.size, LOCALES) if file_type == "distribute" else [(0, want.size)]
    for f, (lo, hi) in zip(files, bounds):
        with h5py.File(conn.dir / f, "r") as h:
            assert h.attrs["File_Format"] == (1 if file_type == "distribute" else 0)
            assert h.attrs.get_id("File_Format").get_type().dtype == np.dtype("<i8")
            assert list(h.keys()) == ["vals"]
            d = h["vals"]
            check_dataset_layout(d, disk_dtype)
            assert d.shape == (hi - lo,)
            check_object_attrs(d, 1, is_bool=dtype == "bool")
            assert d[()].tobytes() == want[lo:hi].astype(disk_dtype).tobytes()
    back = conn.read_values(files, "vals")
    assert back.dtype == want.dtype
    assert back.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_arrays(conn, dtype):
    name = conn.put(np.array([], dtype=dtype))
    path = unique("empty") + ".h5"
    files, _ = conn.tohdf([name], path, datasets=["e"])
    assert len(files) == LOCALES
    for f in files:
        with h5py.File(conn.dir / f, "r") as h:
            assert h["e"].shape == (0,)
            check_object_attrs(h["e"], 1, is_bool=dtype == "bool")
    back = conn.read_values(files, "e")
    assert back.size == 0 and back.dtype == np.dtype(dtype)
    single, _ = conn.tohdf([name], unique("empty1") + ".h5", datasets=["e"], file_type="single")
    assert conn.read_values(single, "e").size == 0


@pytest.mark.parametrize("locales", [1, 5])
@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_other_locale_counts(start_daemon, locales, file_type):
    c = Conn(start_daemon(locales=locales))
    c.dir.mkdir(exist_ok=True)
    nums = np.array([-7, 2 ** 62], dtype=np.int64)  # fewer elements than 5 locales
    words = ["only", "två"]
    n1, n2 = c.put(nums), c.put_strings(words)
    path = unique("lc") + ".h5"
    files, _ = c.tohdf([n1, n2], path, datasets=["n", "w"], file_type=file_type)
    assert files == files_of(path, file_type, locales)
    bounds = block_bounds(2, locales) if file_type == "distribute" else [(0, 2)]
    for f, (lo, hi) in zip(files, bounds):
        with h5py.File(c.dir / f, "r") as h:
            assert h["n"].shape == (hi - lo,)
            assert h["w/segments"].shape == (hi - lo,)
            assert read_strings_file(h, "w") == words[lo:hi]
    res = c.readhdf(files)
    assert sorted(res["objects"]) == ["n", "w"]
    assert c.get(res["objects"]["n"]["name"]).tolist() == nums.tolist()
    assert c.get_strings(res["objects"]["w"]["name"]) == words


@pytest.mark.parametrize("locales", [1, 3, 5])
@pytest.mark.parametrize("file_type", ["distribute", "single"])
@pytest.mark.parametrize("mode", ["truncate", "append"])
def test_every_dtype_each_mode_and_locale_count(start_daemon, locales, file_type, mode):
    c = Conn(start_daemon(locales=locales))
    c.dir.mkdir(exist_ok=True)
    path = unique("all") + ".h5"
    c.tohdf([c.put(np.arange(3))], path, datasets=["first"], file_type=file_type)
    want = {dtype: edge_values(dtype) for dtype in DTYPES}
    want["tiny"] = np.array([9], dtype=np.int64)  # fewer elements than locales
    words = ["", "ab", "ü", "", "cde"]
    names = [c.put(v) for v in want.values()] + [c.put_strings(words)]
    files, warnings = c.tohdf(names, path, datasets=list(want) + ["words"], mode=mode,
                              file_type=file_type)
    assert files == files_of(path, file_type, locales)
    assert len(warnings) == (len(files) if mode == "truncate" else 0)
    for i, f in enumerate(files):
        with h5py.File(c.dir / f, "r") as h:
            keys = set(want) | {"words"} | ({"first"} if mode == "append" else set())
            assert set(h.keys()) == keys
            for dtype, v in want.items():
                lo, hi = block_bounds(v.size, locales)[i] if file_type == "distribute" else (0, v.size)
                assert h[dtype].shape == (hi - lo,)
    res = c.readhdf(files)
    assert set(res["objects"]) == set(want) | {"words"} | ({"first"} if mode == "append" else set())
    for dtype, v in want.items():
        got = c.get(res["objects"][dtype]["name"])
        assert got.dtype == v.dtype and got.tobytes() == v.tobytes()
    assert c.get_strings(res["objects"]["words"]["name"]) == words


def test_several_objects_share_files(conn):
    a, b = conn.put(np.arange(10, dtype=np.uint16)), conn.put(np.linspace(0, 1, 4))
    s = conn.put_strings(["x", "yy", "zzz", ""])
    path = unique("multi") + ".h5"
    files, _ = conn.tohdf([a, b, s], path, datasets=["a", "b", "s"])
    for f in files:
        with h5py.File(conn.dir / f, "r") as h:
            assert sorted(h.keys()) == ["a", "b", "s"]
    res = conn.readhdf(files)
    assert list(res["objects"]) == ["a", "b", "s"]
    assert conn.get(res["objects"]["a"]["name"]).tolist() == list(range(10))
    assert conn.get_strings(res["objects"]["s"]["name"]) == ["x", "yy", "zzz", ""]


# ---- strings ---------------------------------------------------------------------------

STRING_CASES = {
    "empty": [],
    "one_empty": [""],
    "blanks": ["", "", "a", "", ""],
    "utf8": ["alpha", "δέλτα", "日本語", "😀", "", "x y\tz"],
    "big": ["x" * 70000, "", "y" * 65537, "z"],
}


@pytest.mark.parametrize("case", sorted(STRING_CASES))
@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_strings_roundtrip_and_schema(conn, case, file_type):
    words = STRING_CASES[case]
    name = conn.put_strings(words)
    path = unique(f"s_{case}") + ".h5"
    files, _ = conn.tohdf([name], path, datasets=["s"], file_type=file_type)
    bounds = block_bounds(len(words), LOCALES) if file_type == "distribute" else [(0, len(words))]
    for f, (lo, hi) in zip(files, bounds):
        with h5py.File(conn.dir / f, "r") as h:
            g = h["s"]
            assert isinstance(g, h5py.Group) and sorted(g.keys()) == ["segments", "values"]
            check_object_attrs(g, 2)
            check_object_attrs(g["values"], 1)
            check_object_attrs(g["segments"], 1)
            check_dataset_layout(g["values"], np.dtype("u1"))
            check_dataset_layout(g["segments"], np.dtype("<i8"))
            part = words[lo:hi]
            assert g["segments"].shape == (len(part),)
            assert g["values"].shape == (sum(len(w.encode()) + 1 for w in part),)
            if part:
                assert g["segments"][0] == 0  # rebased in every file
            assert read_strings_file(h, "s") == part
    assert conn.read_values(files, "s") == words
    assert conn.read_values(files, "s", calc_string_offsets=True) == words


# ---- across locale counts and writers -----------------------------------------------------

@pytest.mark.parametrize("writer,reader", [(3, 2), (2, 3)])
def test_files_move_between_locale_counts(start_daemon, writer, reader):
    w, r = Conn(start_daemon(locales=writer)), Conn(start_daemon(locales=reader))
    for c in (w, r):
        c.dir.mkdir(exist_ok=True)
    nums = np.arange(-50, 51, dtype=np.int64) * 3
    words = [f"w{i}" * (i % 4) for i in range(23)]
    path = unique("move") + ".h5"
    files, _ = w.tohdf([w.put(nums), w.put_strings(words)], path, datasets=["n", "s"])
    assert len(files) == writer
    for f in files:
        shutil.copy(w.dir / f, r.dir / f)
    res = r.readhdf([f"{path[:-3]}_LOCALE*.h5"], tag_data=True)
    assert r.get(res["objects"]["n"]["name"]).tolist() == nums.tolist()
    assert r.get_strings(res["objects"]["s"]["name"]) == words
    tags = r.get(res["objects"]["Filename_Codes"]["name"])
    assert tags.tolist() == [b for b, (lo, hi) in enumerate(block_bounds(nums.size, writer))
                             for _ in range(lo, hi)]


def test_hand_written_uneven_files(conn):
    base = unique("hand")
    sizes = [0, 7, 2]
    words = [["never"][:0], ["a", "", "bcd", "é", "", "ff", "g"], ["hh", ""]]
    start = 0
    for i, n in enumerate(sizes):
        with h5py.File(conn.dir / f"{base}_LOCALE{i:04d}", "w") as h:
            h.attrs["File_Format"] = np.int64(1)
            d = h.create_dataset("v", data=np.arange(start, start + n, dtype="<i8"))
            d.attrs["ObjType"] = np.int64(1)
            g = h.create_group("s")
            g.attrs["ObjType"] = np.int64(2)
            raw = [w.encode() for w in words[i]]
            g["values"] = np.frombuffer(b"".join(x + b"\0" for x in raw), "u1")
            g["segments"] = np.cumsum([0] + [len(x) + 1 for x in raw[:-1]]).astype("<i8")[:len(raw)]
            start += n
    res = conn.readhdf([base], tag_data=True)  # a bare name stands for its _LOCALE set
    assert conn.get(res["objects"]["v"]["name"]).tolist() == list(range(9))
    assert conn.get_strings(res["objects"]["s"]["name"]) == words[1] + words[2]
    assert conn.get(res["objects"]["Filename_Codes"]["name"]).tolist() == [1] * 7 + [2] * 2
    assert conn.read_values([base], "s", calc_string_offsets=True) == words[1] + words[2]


def test_h5py_storage_variants(conn):
    """Data h5py stores in ways tohdf never does: chunked and compressed, big-endian,
    unallocated, compact, after a user block, and h5py's enum bools."""
    name = unique("variants") + ".h5"
    data = np.arange(1000, dtype=np.int64) * 7 - 3
    with h5py.File(conn.dir / name, "w", userblock_size=512) as h:
        h.create_dataset("chunked", data=data, chunks=(64,), compression="gzip")
        h.create_dataset("shuffled", data=data.astype("<f4"), chunks=(100,), shuffle=True,
                         compression="gzip")
        h.create_dataset("big", data=data.astype(">i4"))
        h.create_dataset("bigf", data=np.array([1.5, -0.0, np.inf], ">f8"))
        h.create_dataset("lazy", (10,), dtype="<u2")
        h.create_dataset("lazyfill", (4,), dtype="<i2", fillvalue=-9)
        h.create_dataset("flags", data=np.array([True, False, True]))
        h.create_dataset("plain", data=data)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((3,))
        h5py.h5d.create(h.id, b"compact", h5py.h5t.STD_I64LE, space, dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.array([4, 5, 6], "<i8"))
    res = conn.readhdf([name])
    got = {k: conn.get(v["name"]) for k, v in res["objects"].items()}
    assert got["chunked"].tolist() == data.tolist()
    assert got["shuffled"].dtype == np.float32 and got["shuffled"].tolist() == data.astype("f4").tolist()
    assert got["big"].dtype == np.int32 and got["big"].tolist() == data.tolist()
    assert got["bigf"].tolist() == [1.5, -0.0, np.inf] and np.signbit(got["bigf"][1])
    assert got["lazy"].dtype == np.uint16 and got["lazy"].tolist() == [0] * 10
    assert got["lazyfill"].tolist() == [-9] * 4
    assert got["flags"].dtype == np.bool_ and got["flags"].tolist() == [True, False, True]
    assert got["plain"].tolist() == data.tolist()
    assert got["compact"].tolist() == [4, 5, 6]


def test_legacy_bool_group(conn):
    name = unique("v1bool") + ".h5"
    with h5py.File(conn.dir / name, "w") as h:
        md = h.create_group("_arkouda_metadata")
        md.attrs["file_version"] = np.float32(1.0)
        h.create_group("flags")["booleans"] = np.array([1, 0, 0, 1], dtype="u1")
    res = conn.readhdf([name])
    assert list(res["objects"]) == ["flags"]
    back = conn.get(res["objects"]["flags"]["name"])
    assert back.dtype == np.bool_ and back.tolist() == [True, False, False, True]


# ---- write modes -------------------------------------------------------------------------

@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_truncate_warns_and_replaces(conn, file_type):
    path = unique("trunc") + ".h5"
    old = conn.put(np.arange(6))
    files, warnings = conn.tohdf([old], path, datasets=["old"], file_type=file_type)
    assert warnings == []
    files2, warnings = conn.tohdf([conn.put(np.arange(4))], path, datasets=["new"],
                                  file_type=file_type)
    assert files2 == files
    assert len(warnings) == len(files)
    for f, w in zip(files, warnings):
        assert f in w
    for f in files:
        with h5py.File(conn.dir / f, "r") as h:
            assert list(h.keys()) == ["new"]
    assert not [p for p in os.listdir(conn.dir) if "h5ark-tmp" in p]


def test_truncate_removes_stale_locale_files(conn):
    path = unique("stale") + ".h5"
    for i in (3, 4, 11):  # as a 5- or 12-locale run would have left them
        (conn.dir / locale_file(path, i)).write_bytes(b"old")
    files, warnings = conn.tohdf([conn.put(np.arange(5))], path, datasets=["x"])
    assert len(files) == LOCALES
    for i in (3, 4, 11):
        assert not (conn.dir / locale_file(path, i)).exists()
        assert any(locale_file(path, i) in w for w in warnings)
    assert conn.read_values([f"{path[:-3]}_LOCALE*.h5"], "x").tolist() == list(range(5))


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_append_adds_and_refuses_collisions(conn, file_type):
    path = unique("app") + ".h5"
    files, _ = conn.tohdf([conn.put(np.arange(5))], path, datasets=["a"], file_type=file_type)
    files2, warnings = conn.tohdf([conn.put_strings(["p", "q"])], path, datasets=["b"],
                                  mode="append", file_type=file_type)
    assert files2 == files and warnings == []
    sums = {f: sha(conn.dir / f) for f in files}
    err = conn.fail("tohdf", names=[conn.put(np.arange(2)), conn.put(np.arange(3))],
                    datasets=["fresh", "a"], path=path, mode="append", file_type=file_type)
    assert err["code"] == "already_exists"
    assert "'a'" in err["message"] and files[0] in err["message"]
    assert {f: sha(conn.dir / f) for f in files} == sums
    for f in files:
        with h5py.File(conn.dir / f, "r") as h:
            assert sorted(h.keys()) == ["a", "b"]
            assert h.attrs["File_Format"] == (1 if file_type == "distribute" else 0)
    res = conn.readhdf(files)
    assert conn.get(res["objects"]["a"]["name"]).tolist() == list(range(5))
    assert conn.get_strings(res["objects"]["b"]["name"]) == ["p", "q"]
    assert not [p for p in os.listdir(conn.dir) if "h5ark-tmp" in p]


def test_append_file_count_must_match(conn):
    path = unique("count") + ".h5"
    files, _ = conn.tohdf([conn.put(np.arange(5))], path, datasets=["a"])
    extra = conn.dir / locale_file(path, LOCALES)
    shutil.copy(conn.dir / files[0], extra)
    sums = {f: sha(conn.dir / f) for f in files}
    err = conn.fail("tohdf", names=[conn.put(np.arange(2))], datasets=["b"], path=path,
                    mode="append")
    assert str(LOCALES + 1) in err["message"] and str(LOCALES) in err["message"]
    extra.unlink()
    (conn.dir / files[2]).unlink()
    err = conn.fail("tohdf", names=[conn.put(np.arange(2))], datasets=["b"], path=path,
                    mode="append")
    assert str(LOCALES - 1) in err["message"]
    assert {f: sha(conn.dir / f) for f in files[:2]} == {f: sums[f] for f in files[:2]}
    assert not (conn.dir / files[2]).exists()


def test_append_creates_missing_files(conn):
    path = f"{unique('newdir')}/deeper/{unique('new')}.h5"
    files, _ = conn.tohdf([conn.put(np.arange(4))], path, datasets=["z"], mode="append")
    assert files == files_of(path, "distribute")
    assert conn.read_values(files, "z").tolist() == [0, 1, 2, 3]
    single, _ = conn.tohdf([conn.put(np.arange(2))], path, datasets=["z"], mode="append",
                           file_type="single")
    with h5py.File(conn.dir / single[0], "r") as h:
        assert h.attrs["File_Format"] == 0


def test_append_to_arkouda_written_file(conn, arkouda_fixtures):
    path = unique("ak_append") + ".hdf5"
    shutil.copy(arkouda_fixtures / "array_v1_LOCALE0000.hdf5", conn.dir / path)
    conn.tohdf([conn.put(np.array([1.5]))], path, datasets=["more"], mode="append",
               file_type="single")
    res = conn.readhdf([path])
    assert sorted(res["objects"]) == ["array", "more"]
    assert conn.get(res["objects"]["array"]["name"]).tolist() == list(range(50))


# ---- Arkouda fixtures ------------------------------------------------------------------

FIXTURE_VALUES = {
    "Legacy_String.hdf5": {"strings_array": ["ABC", "DEF", "GHI"]},
    "array_v0_LOCALE0000.hdf5": {"array": list(range(50))},
    "array_v1_LOCALE0000.hdf5": {"array": list(range(50))},
    "UnitTestHDF5_withOffsets_LOCALE0000": {"strings": ["one", "two", "three", "four", "five"]},
    "UnitTestHDF5_noOffsets_LOCALE0000": {"strings": ["one", "two", "three", "four", "five"]},
    "sample.hdf5": {"sample": [0] * 100},
}


@pytest.mark.parametrize("fixture", sorted(FIXTURE_VALUES))
def test_arkouda_fixtures(conn, arkouda_fixtures, fixture):
    sub = unique("ak")
    (conn.dir / sub).mkdir()
    shutil.copy(arkouda_fixtures / fixture, conn.dir / sub / fixture)
    res = conn.readhdf([f"{sub}/{fixture}"])
    want = FIXTURE_VALUES[fixture]
    assert sorted(res["objects"]) == sorted(want)
    for dset, values in want.items():
        desc = res["objects"][dset]
        if isinstance(values[0], str):
            assert conn.get_strings(desc["name"]) == values
        else:
            got = conn.get(desc["name"])
            assert got.dtype.kind == "i" and got.tolist() == values
    if fixture == "sample.hdf5":
        assert res["objects"]["sample"]["dtype"] == "int32"


# ---- readhdf options ---------------------------------------------------------------------

def write_h5py(path, **datasets):
    with h5py.File(path, "w") as h:
        for k, v in datasets.items():
            h[k] = v


def test_strict_types(conn):
    base = unique("types")
    write_h5py(conn.dir / f"{base}_0.h5", i=np.array([1, -2], "<i4"), f=np.array([0.5], "<f4"),
               u=np.array([7], "<u4"), m=np.array([1, 2], "<i8"), n=np.array([3], "<i2"))
    write_h5py(conn.dir / f"{base}_1.h5", i=np.array([3], "<i8"), f=np.array([0.25], "<f8"),
               u=np.array([2 ** 64 - 1], "<u8"), m=np.array([0.5], "<f8"), n=np.array([-4], "<i2"))
    pattern = [f"{base}_*.h5"]
    for dset in ("i", "f", "u", "m"):
        err = conn.fail("readhdf", paths=pattern, datasets=[dset], strict_types=True)
        assert err["code"] == "type_error"
        assert f"{base}_0.h5" in err["message"] and f"{base}_1.h5" in err["message"]
    same = conn.read_values(pattern, "n", strict_types=True)
    assert same.dtype == np.int16 and same.tolist() == [3, -4]
    got = conn.read_values(pattern, "i", strict_types=False)
    assert got.dtype == np.int64 and got.tolist() == [1, -2, 3]
    got = conn.read_values(pattern, "f", strict_types=False)
    assert got.dtype == np.float64 and got.tolist() == [0.5, 0.25]
    got = conn.read_values(pattern, "u", strict_types=False)
    assert got.dtype == np.uint64 and got.tolist() == [7, 2 ** 64 - 1]
    err = conn.fail("readhdf", paths=pattern, datasets=["m"], strict_types=False)
    assert err["code"] == "type_error"


def test_kind_must_agree_across_files(conn):
    base = unique("kinds")
    write_h5py(conn.dir / f"{base}_0.h5", x=np.arange(3))
    with h5py.File(conn.dir / f"{base}_1.h5", "w") as h:
        h.create_group("x")["values"] = np.frombuffer(b"a\0", "u1")
    err = conn.fail("readhdf", paths=[f"{base}_*.h5"])
    assert err["code"] == "type_error"
    assert f"{base}_0.h5" in err["message"] and f"{base}_1.h5" in err["message"]


def test_allow_errors(conn):
    path = unique("lenient") + ".h5"
    files, _ = conn.tohdf([conn.put(np.arange(9)), conn.put_strings(["a", "bb", "", "c"])],
                          path, datasets=["n", "s"])
    junk = locale_file(path, LOCALES)
    (conn.dir / junk).write_bytes(b"this is not an HDF5 file" * 10)
    pattern = [f"{path[:-3]}_LOCALE*.h5"]
    err = conn.fail("readhdf", paths=pattern)
    assert err["code"] == "schema_error" and junk in err["message"]
    res = conn.readhdf(pattern, allow_errors=True, tag_data=True)
    assert len(res["file_errors"]) == 1 and res["file_errors"][0].startswith(f"{junk}: ")
    assert conn.get(res["objects"]["n"]["name"]).tolist() == list(range(9))
    assert conn.get_strings(res["objects"]["s"]["name"]) == ["a", "bb", "", "c"]
    # a dataset missing from one file: not_found naming both, or that file skipped
    write_h5py(conn.dir / junk, other=np.arange(3))
    err = conn.fail("readhdf", paths=pattern, datasets=["n"])
    assert err["code"] == "not_found" and junk in err["message"] and "'n'" in err["message"]
    res = conn.readhdf(pattern, datasets=["n"], allow_errors=True)
    assert len(res["file_errors"]) == 1 and junk in res["file_errors"][0]
    assert conn.get(res["objects"]["n"]["name"]).tolist() == list(range(9))
    # every file bad: an error even so
    err = conn.fail("readhdf", paths=[junk], datasets=["n"], allow_errors=True)
    assert err["code"] == "not_found"


def test_calc_string_offsets(conn):
    path = unique("offs") + ".h5"
    raw = b"one\0two\0three\0"
    with h5py.File(conn.dir / path, "w") as h:
        g = h.create_group("s")
        g["values"] = np.frombuffer(raw, "u1")
        g["segments"] = np.array([0, 9, 2], "<i8")  # wrong
    err = conn.fail("readhdf", paths=[path], datasets=["s"])
    assert err["code"] == "schema_error" and "'s'" in err["message"] and path in err["message"]
    # reading the whole file, it is left out and named
    hdr, _ = conn.ok("readhdf", paths=[path])
    assert not hdr["result"]["objects"] and [w for w in hdr["warnings"] if "'s'" in w], hdr
    assert conn.read_values([path], "s", calc_string_offsets=True) == ["one", "two", "three"]
    bad = unique("nonul") + ".h5"
    with h5py.File(conn.dir / bad, "w") as h:
        h.create_group("s")["values"] = np.frombuffer(b"abc", "u1")
    err = conn.fail("readhdf", paths=[bad], datasets=["s"])
    assert err["code"] == "schema_error" and "NUL" in err["message"]
    hdr, _ = conn.ok("readhdf", paths=[bad])
    assert not hdr["result"]["objects"] and [w for w in hdr["warnings"] if "NUL" in w], hdr


def test_strings_across_files_without_segments(conn):
    names = []
    parts = [["a", "bb"], [], ["", "ccc", "d"], ["e"]]
    base = unique("nuls")
    for i, part in enumerate(parts):
        p = f"{base}_{i}.h5"
        with h5py.File(conn.dir / p, "w") as h:
            h.create_group("s")["values"] = np.frombuffer(
                b"".join(w.encode() + b"\0" for w in part), "u1")
        names.append(p)
    res = conn.readhdf(names, tag_data=True)
    assert conn.get_strings(res["objects"]["s"]["name"]) == sum(parts, [])
    assert conn.get(res["objects"]["Filename_Codes"]["name"]).tolist() == [0, 0, 2, 2, 2, 3]


@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_strings_written_without_segments(conn, file_type):
    """strings_segments false: each file holds the strings' bytes alone, which read back
    by their NULs."""
    words = ["a", "", "bb", "é" * 9, "ccc", "", "d"]
    s = conn.put_strings(words)
    path = unique("noseg") + ".h5"
    conn.tohdf([s], path, datasets=["s"], file_type=file_type, strings_segments=False)
    got = b""
    for f in files_of(path, file_type):
        with h5py.File(conn.dir / f, "r") as h:
            assert set(h["s"]) == {"values"}
            assert h["s"].attrs["ObjType"] == 2
            got += h["s/values"][()].tobytes()
    assert got == b"".join(w.encode() + b"\0" for w in words)
    assert conn.read_values(files_of(path, file_type), "s") == words
    err = conn.fail("tohdf", names=[s], path=path, strings_segments="no")
    assert err["code"] == "bad_request"


def test_default_datasets_skip_metadata(conn):
    path = unique("dflt") + ".h5"
    with h5py.File(conn.dir / path, "w") as h:
        h.create_group("_arkouda_metadata").attrs["file_version"] = np.float32(1.0)
        h["b"] = np.arange(3)
        h["a"] = np.arange(2.0)
    res = conn.readhdf([path])
    assert list(res["objects"]) == ["a", "b"]


def test_unsupported_datasets(conn):
    path = unique("odd") + ".h5"
    with h5py.File(conn.dir / path, "w") as h:
        h["compound"] = np.zeros(3, dtype=[("x", "<i4"), ("y", "<f8")])
        h["vlen"] = np.array(["a", "bc"], dtype=h5py.string_dtype())
        h["matrix"] = np.zeros((2, 3))
        h.create_dataset("enum", data=np.array([0, 1, 2], "i1"),
                         dtype=h5py.enum_dtype({"R": 0, "G": 1, "B": 2}, basetype="i1"))
        h["scalar"] = np.int64(5)
        h["fixed"] = np.array([b"ab", b"cd"], dtype="S2")
        h.create_group("bare")
        h.create_group("cat").attrs["ObjType"] = np.int64(4)
        h["ok"] = np.arange(2)
    for dset in ("compound", "enum", "scalar", "bare", "cat"):
        err = conn.fail("readhdf", paths=[path], datasets=[dset])
        assert err["code"] in ("type_error", "schema_error")
        assert dset in err["message"] and path in err["message"]
    assert conn.read_values([path], "ok").tolist() == [0, 1]
    # plain HDF5 strings and N-d arrays read by their type and shape
    res = conn.readhdf([path], datasets=["vlen", "fixed", "matrix"])
    assert res["objects"]["vlen"]["objtype"] == "strings"
    assert res["objects"]["fixed"]["objtype"] == "strings"
    assert res["objects"]["matrix"]["objtype"] == "arrayview"
    assert res["objects"]["matrix"]["shape"] == [2, 3]


def test_memory_limit(start_daemon):
    c = Conn(start_daemon(locales=2, max_memory=1 << 20))
    c.dir.mkdir(exist_ok=True)
    write_h5py(c.dir / "big.h5", big=np.zeros(1 << 18, "<i8"))
    err = c.fail("readhdf", paths=["big.h5"])
    assert err["code"] == "resource_limit"
    assert c.raw("ping")[0]["ok"]


# ---- paths and damaged files ------------------------------------------------------------

@pytest.mark.parametrize("path", ["../x.h5", "/etc/passwd", "sub/../../x.h5"])
@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_forbidden_paths(conn, path, file_type):
    before = sorted(os.listdir(conn.dir.parent))
    err = conn.fail("tohdf", names=[conn.put(np.arange(3))], path=path, file_type=file_type)
    assert err["code"] == "forbidden"
    assert sorted(os.listdir(conn.dir.parent)) == before
    err = conn.fail("readhdf", paths=[path])
    assert err["code"] == "forbidden"


def test_symlink_out_of_data_dir(conn, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    write_h5py(outside / "secret.h5", x=np.arange(3))
    link = unique("escape")
    (conn.dir / link).symlink_to(outside)
    for file_type in ("single", "distribute"):
        err = conn.fail("tohdf", names=[conn.put(np.arange(3))], path=f"{link}/x.h5",
                        file_type=file_type)
        assert err["code"] == "forbidden"
    assert sorted(os.listdir(outside)) == ["secret.h5"]
    err = conn.fail("readhdf", paths=[f"{link}/secret.h5"])
    assert err["code"] == "forbidden"
    filelink = unique("filelink") + ".h5"
    (conn.dir / filelink).symlink_to(outside / "secret.h5")
    err = conn.fail("tohdf", names=[conn.put(np.arange(3))], path=filelink, file_type="single")
    assert err["code"] == "forbidden"
    assert conn.fail("readhdf", paths=[filelink])["code"] == "forbidden"


def test_missing_files(conn):
    err = conn.fail("readhdf", paths=[unique("nothing") + ".h5"])
    assert err["code"] == "not_found"
    err = conn.fail("readhdf", paths=[unique("nothing") + "_*.h5"])
    assert err["code"] == "not_found"


def test_damaged_files(conn):
    path = unique("whole") + ".h5"
    files, _ = conn.tohdf([conn.put(np.arange(100000))], path, datasets=["x"],
                          file_type="single")
    data = (conn.dir / path).read_bytes()
    cases = {
        "text.h5": b"plain text, not HDF5\n" * 50,
        "empty.h5": b"",
        "head.h5": data[:1000],
        "half.h5": data[:len(data) // 2],
        "nosuper.h5": b"\0" * 8 + data[8:],
    }
    for name, content in cases.items():
        (conn.dir / name).write_bytes(content)
        hdr, _ = conn.raw("readhdf", paths=[name])
        assert not hdr["ok"]
        assert hdr["error"]["code"] in ("schema_error", "io_error"), (name, hdr)
        assert name in hdr["error"]["message"]
        assert conn.raw("ping")[0]["ok"]
        err = conn.fail("tohdf", names=[conn.put(np.arange(3))], path=name, mode="append",
                        file_type="single")
        assert err["code"] in ("schema_error", "io_error")
        assert (conn.dir / name).read_bytes() == content


def test_links_out_of_the_file_refused(conn, tmp_path):
    """HDF5 can point at other files from inside one: an external link, raw data stored
    externally, or a virtual dataset. None of them may read outside the data directory."""
    secret = tmp_path / "secret.h5"
    write_h5py(secret, x=np.arange(3))
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.arange(4, dtype="<i8").tobytes())
    path = unique("links") + ".h5"
    with h5py.File(conn.dir / path, "w") as h:
        h["ext"] = h5py.ExternalLink(str(secret), "/x")
        h.create_dataset("rawext", (4,), dtype="<i8", external=[(str(raw), 0, 32)])
        layout = h5py.VirtualLayout(shape=(3,), dtype="<i8")
        layout[:] = h5py.VirtualSource(str(secret), "x", shape=(3,))
        h.create_virtual_dataset("virtual", layout)
        h["soft"] = h5py.SoftLink("/inside")
        h["inside"] = np.arange(2)
    for dset in ("ext", "rawext", "virtual"):
        err = conn.fail("readhdf", paths=[path], datasets=[dset])
        assert err["code"] == "forbidden" and dset in err["message"]
    assert conn.read_values([path], "soft").tolist() == [0, 1]


@pytest.mark.parametrize("chunked", [False, True])
def test_soft_links_to_external_links_refused(conn, tmp_path, chunked):
    """A soft link is a path inside the file, but the path may pass through an external
    link: the daemon must never follow it, whether reached by a name given, a nested or
    relative soft link, or a dataset read through the library (chunked, compressed)."""
    secret = tmp_path / "secret.h5"
    with h5py.File(secret, "w") as h:
        h.create_dataset("x", data=np.arange(1000, 1100), chunks=(10,) if chunked else None,
                         compression="gzip" if chunked else None)
    path = unique("softext") + ".h5"
    with h5py.File(conn.dir / path, "w") as h:
        h["ext"] = h5py.ExternalLink(str(secret), "/x")
        h["via_soft"] = h5py.SoftLink("/ext")
        h["g/nested"] = h5py.SoftLink("/via_soft")
        h["g/relative"] = h5py.SoftLink("nested")  # relative to g
        h["loop"] = h5py.SoftLink("/loop")
        h["long"] = h5py.SoftLink("/" + "x" * 3000)
        h["inside"] = np.arange(3)
        h["to_inside"] = h5py.SoftLink("/inside")
        h["pad"] = np.zeros(20000)  # the file is larger than any offset in the other one
    for dset in ("via_soft", "g/nested", "g/relative"):
        err = conn.fail("readhdf", paths=[path], datasets=[dset])
        assert err["code"] == "forbidden", err
        assert "another file" in err["message"] and "/ext" in err["message"], err
    err = conn.fail("readhdf", paths=[path], datasets=["loop"])
    assert err["code"] == "schema_error" and "soft links" in err["message"], err
    err = conn.fail("readhdf", paths=[path], datasets=["long"])  # leads nowhere, at length
    assert err["code"] in ("not_found", "schema_error") and "long" in err["message"], err
    assert conn.read_values([path], "to_inside").tolist() == [0, 1, 2]
    assert conn.raw("ping")[0]["ok"]

    # a file holding such links can still be appended to and updated: the links are kept
    # as links, and nothing of the other file is copied in
    for mode, name in (("append", "added"), ("update", "inside")):
        rep, _ = conn.raw("tohdf", names=[conn.put(np.arange(5))], datasets=[name], path=path,
                          mode=mode, file_type="single")
        assert rep["ok"], rep
    with h5py.File(conn.dir / path, "r") as h:
        link = h.get("ext", getlink=True)
        assert isinstance(link, h5py.ExternalLink) and link.path == "/x"
        assert h.get("via_soft", getlink=True).path == "/ext"
        assert h["inside"][:].tolist() == list(range(5)) and h["added"][:].tolist() == list(range(5))
    assert (conn.dir / path).stat().st_size < secret.stat().st_size + 200_000


def test_glob_matches_resolved(conn, tmp_path):
    """A glob's matches: a link to a file inside is read as that file, a dangling link and a
    directory that match are skipped, a link out of the data directory (of a file, or of a
    directory the pattern passes through) is forbidden, matches spread over several
    directories keep their order, and a file named twice is read once."""
    base = unique("globs")
    for d in ("d1", "d2"):
        (conn.dir / base / d).mkdir(parents=True)
    write_h5py(conn.dir / base / "d1" / "a.h5", v=np.arange(0, 3))
    write_h5py(conn.dir / base / "d1" / "b.h5", v=np.arange(3, 5))
    write_h5py(conn.dir / base / "d2" / "a.h5", v=np.arange(5, 6))
    (conn.dir / base / "d2" / "c.h5").symlink_to(conn.dir / base / "d1" / "a.h5")
    (conn.dir / base / "d2" / "dangling.h5").symlink_to(conn.dir / base / "nowhere.h5")
    (conn.dir / base / "d2" / "sub.h5").mkdir()

    res = conn.readhdf([f"{base}/d*/*.h5"], datasets=["v"])
    assert res["files"] == [f"{base}/d1/a.h5", f"{base}/d1/b.h5", f"{base}/d2/a.h5"]
    assert conn.get(res["objects"]["v"]["name"]).tolist() == list(range(6))
    # the same files named by several patterns, and through a link, are read once each
    res = conn.readhdf([f"{base}/d1/a.h5", f"{base}/d*/*.h5", f"{base}/d2/c.h5"],
                       datasets=["v"])
    assert res["files"] == [f"{base}/d1/a.h5", f"{base}/d1/b.h5", f"{base}/d2/a.h5"]
    assert conn.get(res["objects"]["v"]["name"]).tolist() == list(range(6))

    outside = tmp_path / "outside"
    outside.mkdir()
    write_h5py(outside / "secret.h5", v=np.arange(100, 103))
    (conn.dir / base / "d2" / "out.h5").symlink_to(outside / "secret.h5")
    err = conn.fail("readhdf", paths=[f"{base}/d2/*.h5"])
    assert err["code"] == "forbidden" and "link out of the data directory" in err["message"]
    (conn.dir / base / "d2" / "out.h5").unlink()
    (conn.dir / base / "dout").symlink_to(outside)
    err = conn.fail("readhdf", paths=[f"{base}/d*/*.h5"])
    assert err["code"] == "forbidden", err
    assert conn.raw("ping")[0]["ok"]


def resident_fraction(fd, size):
    """How much of the file behind fd is in the page cache (mincore on a mapping that is
    never touched, so that nothing is paged in by asking)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    assert addr not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    try:
        assert libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) == 0
    finally:
        libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))
    return sum(v & 1 for v in vec) / pages


def test_replaced_file_leaves_the_page_cache(conn):
    """tohdf in truncate mode drops the cached pages of the file it replaces before writing
    the new one (the new bytes are then cached in memory the kernel already holds); a
    reader that still has the old version open reads it whole, from disk."""
    path = unique("cache") + ".h5"
    old = np.arange(4 << 20, dtype=np.int64)  # 32 MiB
    conn.tohdf([conn.put(old)], path, datasets=["v"], file_type="single")
    fd = os.open(conn.dir / path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        before = hashlib.sha256(os.pread(fd, size, 0)).hexdigest()  # and now it is cached
        assert resident_fraction(fd, size) > 0.9
        conn.tohdf([conn.put(-old)], path, datasets=["v"], file_type="single")
        assert resident_fraction(fd, size) < 0.1
        assert hashlib.sha256(os.pread(fd, size, 0)).hexdigest() == before  # still whole
    finally:
        os.close(fd)
    assert (conn.read_values([path], "v") == -old).all()
