"""tohdf, readhdf, lshdf, mode update and repack for composite objects against a real
daemon: SegArray (numeric and strings values), Categorical, GroupBy, DataFrame (both layouts,
ColumnOrder), Index and MultiIndex, ArrayView, bigint and tagged pdarrays, single and
distributed, truncate and append; files checked with h5py against docs/FORMAT.md; files
written by one locale count read by another; Arkouda's own omissions and older client-side
layouts built with h5py; empty objects; bad inputs with the daemon still answering."""

import h5py
import numpy as np
import pytest

from conftest import block_bounds, check_columns_must_agree, locale_file
from wire import Conn as BaseConn, unique

LOCALES = 3


class Conn(BaseConn):
    """With bigint puts and reads of any object."""

    def put_bigint(self, limbs, max_bits=-1):
        frames = [np.ascontiguousarray(l, "<u8").tobytes() for l in limbs]
        hdr, _ = self.ok("put", frames,
                         buffers=[{"name": f"Limb_{i}", "nbytes": len(f)} for i, f in enumerate(frames)],
                         objtype="pdarray", dtype="bigint", shape=[len(limbs[0])], max_bits=max_bits)
        return hdr["result"]["object"]["name"]

    def fetch(self, name):
        """A comparable Python value of any object: arrays, string lists, and for composites
        {"objtype", component: value...}."""
        return decode(*self.buffers(name), "")

    def tohdf(self, names, path, **kw):
        hdr, _ = self.ok("tohdf", names=names, path=path, **kw)
        return hdr["result"]["files"]

    def readhdf(self, paths, datasets=None, **kw):
        args = {"paths": paths, **kw}
        if datasets is not None:
            args["datasets"] = datasets
        hdr, _ = self.ok("readhdf", **args)
        return hdr["result"]["objects"]

    def alive(self):
        return self.raw("ping")[0]["ok"]


def decode(desc, bufs, prefix):
    comps = desc.get("components")
    if comps and desc["dtype"] != "bigint":
        out = {"objtype": desc["objtype"]}
        for cname, cdesc in comps.items():
            out[cname] = decode(cdesc, bufs, prefix + cname + "/")
        return out
    if desc["dtype"] == "bigint":
        return {"objtype": "bigint", "max_bits": desc.get("max_bits"),
                "limbs": [np.frombuffer(bufs.get(f"{prefix}Limb_{i}", b""), "<u8").tolist()
                          for i in range(len(comps or {}))] if comps else
                [np.frombuffer(v, "<u8").tolist() for k, v in sorted(bufs.items())]}
    if desc["objtype"] == "strings":
        values = bufs.get(prefix + "values", b"")
        segs = list(np.frombuffer(bufs.get(prefix + "segments", b""), "<i8")) + [len(values)]
        return [values[s:e - 1].decode() for s, e in zip(segs, segs[1:])][:desc["size"]]
    arr = np.frombuffer(bufs.get(prefix + "values", b""), np.dtype(desc["dtype"]).newbyteorder("<"))
    return {"dtype": desc["dtype"], "shape": desc["shape"], "tag": desc.get("tag"),
            "data": arr.tolist()}


def same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            (x != x and y != y) or same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.fixture(scope="module")
def conn(daemon):
    c = Conn(daemon)
    c.dir.mkdir(exist_ok=True)
    return c


# ---- builders ---------------------------------------------------------------------------

def segarray(c, segs, values):
    vname = c.put_strings(values) if values and isinstance(values[0], str) else \
        c.put(np.array(values, "<i8"))
    hdr, _ = c.ok("segarray", segments=c.put(np.array(segs, "<i8")), values=vname)
    return hdr["result"]["object"]["name"]


def categorical(c, values):
    hdr, _ = c.ok("categorical", values=c.put_strings(values))
    return hdr["result"]["object"]["name"]


def build_all(c):
    """name -> object of every composite type, empty ones included."""
    objs = {}
    objs["sa"] = segarray(c, [0, 0, 3, 3, 7, 7, 9], list(range(100, 110)))
    objs["sa_str"] = segarray(c, [0, 2, 2, 5], ["a", "bb", "", "dddd", "e", "ff", "g"])
    objs["sa_empty"] = segarray(c, [], [])
    objs["sa_allempty"] = segarray(c, [0, 0, 0, 0], [])
    objs["cat"] = categorical(c, ["x", "y", "y", "N/A", "x", "z"])
    hdr, _ = c.ok("categorical", values=c.put_strings(["b", "a", "b"]), keep_groups=True)
    objs["cat_groups"] = hdr["result"]["object"]["name"]
    hdr, _ = c.ok("groupby", keys=[c.put(np.array([3, 1, 3, 2, 1], "<i8")),
                                   c.put_strings(["p", "q", "p", "r", "q"])])
    objs["gb"] = hdr["result"]["object"]["name"]
    hdr, _ = c.ok("index", levels=[c.put(np.arange(6, dtype="<i8"))])
    objs["ix"] = hdr["result"]["object"]["name"]
    hdr, _ = c.ok("index", levels=[c.put(np.arange(6, dtype="<i8")),
                                   c.put_strings(list("abcdef"))])
    objs["mix"] = hdr["result"]["object"]["name"]
    cols = [c.put(np.arange(6, dtype="<f8") / 3), c.put_strings(list("uvwxyz")), objs["cat"]]
    hdr, _ = c.ok("dataframe", columns=cols, column_names=["zeta", "alpha", "mid"],
                  index=objs["ix"])
    objs["df"] = hdr["result"]["object"]["name"]
    hdr, _ = c.ok("dataframe", columns=[c.put(np.array([], "<i8")), c.put_strings([])],
                  column_names=["b", "a"])
    objs["df_empty"] = hdr["result"]["object"]["name"]
    hdr, _ = c.ok("reshape", array=c.put(np.arange(12, dtype="<i4")), shape=[2, 3, 2])
    objs["av"] = hdr["result"]["object"]["name"]
    objs["big"] = c.put_bigint([np.arange(5, dtype="<u8") + 2**63, np.arange(5, dtype="<u8")],
                               max_bits=100)
    objs["dt"] = c.put(np.array([0, 10**18, -5], "<i8"), tag="datetime64[ns]")
    objs["ip"] = c.put(np.array([3232235777, 0], "<u8"), tag="ipv4")
    return objs


# ---- round trips --------------------------------------------------------------------------

@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_roundtrip_every_type(conn, file_type):
    objs = build_all(conn)
    want = {k: conn.fetch(v) for k, v in objs.items()}
    path = unique("all") + ".h5"
    conn.tohdf(list(objs.values()), path, datasets=list(objs.keys()), file_type=file_type)
    got = conn.readhdf([path] if file_type == "single" else
                       [locale_file(path, i) for i in range(LOCALES)])
    assert list(got) == sorted(objs)  # link order
    for k, desc in got.items():
        assert same(conn.fetch(desc["name"]), want[k]), k
    assert got["df"]["objtype"] == "dataframe" and got["df"]["columns"] == ["zeta", "alpha", "mid"]
    assert got["gb"]["objtype"] == "groupby" and got["gb"]["ngroups"] == 3
    assert got["mix"]["objtype"] == "multiindex"
    assert got["av"]["shape"] == [2, 3, 2] and got["av"]["objtype"] == "arrayview"
    assert got["big"]["dtype"] == "bigint" and got["big"]["max_bits"] == 100
    assert got["dt"]["tag"] == "datetime64[ns]" and got["ip"]["tag"] == "ipv4"
    assert got["cat"]["na_value"] == "N/A"


def test_append_composites(conn):
    objs = build_all(conn)
    path = unique("app") + ".h5"
    keys = list(objs)
    conn.tohdf([objs[keys[0]]], path, datasets=[keys[0]])
    conn.tohdf([objs[k] for k in keys[1:]], path, datasets=keys[1:], mode="append")
    got = conn.readhdf([path])
    for k in keys:
        assert same(conn.fetch(got[k]["name"]), conn.fetch(objs[k])), k
    err = conn.fail("tohdf", names=[objs["sa"]], datasets=["sa"], path=path, mode="append")
    assert err["code"] == "already_exists"


def test_other_locale_counts(conn, start_daemon):
    objs = build_all(conn)
    want = {k: conn.fetch(v) for k, v in objs.items()}
    path = unique("x") + ".h5"
    conn.tohdf(list(objs.values()), path, datasets=list(objs.keys()))
    for locales in (1, 2, 5):
        d = start_daemon(locales=locales)
        other = Conn(d)
        import shutil
        shutil.copytree(conn.dir, other.dir, dirs_exist_ok=True)
        got = other.readhdf([locale_file(path, i) for i in range(LOCALES)])
        for k, desc in got.items():
            assert same(other.fetch(desc["name"]), want[k]), (locales, k)
        # and written back by that count, read by this daemon
        back = unique("back") + ".h5"
        other.tohdf([got[k]["name"] for k in objs], back, datasets=list(objs))
        shutil.copytree(other.dir, conn.dir, dirs_exist_ok=True)
        again = conn.readhdf([locale_file(back, i) for i in range(locales)])
        for k, desc in again.items():
            assert same(conn.fetch(desc["name"]), want[k]), (locales, "back", k)


# ---- the files, as h5py sees them ---------------------------------------------------------

def check_meta(obj, objtype):
    assert obj.attrs["ObjType"] == objtype
    assert obj.attrs["ObjType"].dtype == np.dtype("<i8")
    assert obj.attrs["file_version"].dtype == np.dtype("<f4")
    assert {"ObjType", "file_version", "arkouda_version"} <= set(obj.attrs)


def test_layouts(conn):
    objs = build_all(conn)
    path = unique("lay") + ".h5"
    conn.tohdf(list(objs.values()), path, datasets=list(objs.keys()), file_type="single")
    with h5py.File(conn.dir / path, "r") as h:
        assert h.attrs["File_Format"] == 0
        sa = h["sa"]
        check_meta(sa, 3)
        assert set(sa) == {"segments", "values"}
        assert sa["segments"].dtype == np.dtype("<i8")
        assert sa["segments"][()].tolist() == [0, 0, 3, 3, 7, 7, 9]
        check_meta(sa["values"], 1)
        check_meta(h["sa_str"]["values"], 2)
        assert h["sa_str"]["values"]["values"].dtype == np.dtype("u1")
        cat = h["cat"]
        check_meta(cat, 4)
        assert {"codes", "categories", "NA_Codes"} <= set(cat)
        cats = bytes(cat["categories"]["values"][()]).split(b"\0")[:-1]
        assert cats[cat["NA_Codes"][0]] == b"N/A"
        assert {"permutation", "segments"} <= set(h["cat_groups"])
        gb = h["gb"]
        check_meta(gb, 5)
        assert gb.attrs["NumKeys"] == 2
        assert {"segments", "permutation", "unique_key_idx", "KEY_0", "KEY_1"} == set(gb)
        check_meta(gb["KEY_1"], 2)
        check_meta(h["ix"], 12)
        assert h["ix"].attrs["NumIdx"] == 1 and set(h["ix"]) == {"IDX_0"}
        check_meta(h["mix"], 13)
        df = h["df"]
        check_meta(df, 6)
        assert df.attrs["NumCols"] == 3
        assert [s.decode() for s in df.attrs["ColumnOrder"]] == ["zeta", "alpha", "mid"]
        assert df.attrs["ColumnOrder"].dtype.kind == "S"
        assert set(df) == {"zeta", "alpha", "mid", "Index"}
        check_meta(df["Index"], 12)
        av = h["av"]
        check_meta(av, 0)
        assert av.attrs["Rank"] == 3 and av.attrs["Shape"].tolist() == [2, 3, 2]
        assert av.shape == (12,)
        big = h["big"]
        assert big.attrs["isBigInt"] == 1 and big.attrs["MaxBits"] == 100
        assert big.attrs["NumLimbs"] == 2
        assert big["Limb_0"].dtype == np.dtype("<u8")
        assert set(big.attrs) == {"ObjType", "file_version", "arkouda_version", "isBigInt",
                                  "MaxBits", "NumLimbs"}
        assert h["dt"].attrs["ObjType"] == 7 and h["ip"].attrs["ObjType"] == 9


def test_distributed_segarray_rebased(conn):
    segs = [0, 0, 3, 3, 7, 7, 9]
    vals = list(range(100, 110))
    name = segarray(conn, segs, vals)
    path = unique("seg") + ".h5"
    conn.tohdf([name], path, datasets=["s"])
    bounds = block_bounds(len(segs), LOCALES)
    for i, (lo, hi) in enumerate(bounds):
        with h5py.File(conn.dir / locale_file(path, i), "r") as h:
            assert h.attrs["File_Format"] == 1
            vlo = segs[lo] if lo < len(segs) else len(vals)
            vhi = segs[hi] if hi < len(segs) else len(vals)
            assert h["s/segments"][()].tolist() == [s - vlo for s in segs[lo:hi]]
            assert h["s/values"][()].tolist() == vals[vlo:vhi]


def test_dataframe_columns_layout(conn):
    objs = build_all(conn)
    path = unique("cols") + ".h5"
    conn.tohdf([objs["df"]], path, dataframe_layout="columns", file_type="single")
    with h5py.File(conn.dir / path, "r") as h:
        assert [s.decode() for s in h.attrs["ColumnOrder"]] == ["zeta", "alpha", "mid"]
        assert {"zeta", "alpha", "mid", "Index"} == set(h)
    got = conn.readhdf([path])
    assert list(got) == ["zeta", "alpha", "mid", "Index"]
    err = conn.fail("tohdf", names=[objs["df"]], path=path, dataframe_layout="rows")
    assert err["code"] == "bad_request"


# ---- files made the way Arkouda (and older clients) make them ----------------------------

def meta(obj, objtype):
    obj.attrs["ObjType"] = np.int64(objtype)
    obj.attrs["file_version"] = np.float32(2.0)
    obj.attrs["arkouda_version"] = np.bytes_(b"v2026.07")


def strings_group(g, name, strs, attrs=True):
    sg = g.create_group(name)
    raw = b"".join(s.encode() + b"\0" for s in strs)
    sg["values"] = np.frombuffer(raw, "u1")
    sg["segments"] = np.cumsum([0] + [len(s) + 1 for s in strs[:-1]]).astype("<i8")[:len(strs)]
    if attrs:
        meta(sg, 2)
    return sg


def test_arkouda_omissions_and_legacy(conn):
    path = unique("ak") + ".h5"
    with h5py.File(conn.dir / path, "w") as h:
        # single-file Categorical: children without attributes
        c = h.create_group("cat")
        meta(c, 4)
        c["codes"] = np.array([1, 0, 1], "<i8")
        strings_group(c, "categories", ["a", "b", "N/A"], attrs=False)
        c["NA_Codes"] = np.array([2], "<i8")
        # distributed SegArray of strings: `values` without attributes
        s = h.create_group("segs")
        meta(s, 3)
        s["segments"] = np.array([0, 1], "<i8")
        strings_group(s, "values", ["x", "y", "z"], attrs=False)
        # Index with an unmarked level
        ix = h.create_group("ix")
        meta(ix, 12)
        ix.attrs["NumIdx"] = np.int64(1)
        ix["IDX_0"] = np.array([5, 6, 7], "<i4")
        # GroupBy with 11 keys: KEY_10 after KEY_9
        gb = h.create_group("gb")
        meta(gb, 5)
        gb.attrs["NumKeys"] = np.int64(11)
        gb["permutation"] = np.array([0, 1], "<i8")
        gb["segments"] = np.array([0, 1], "<i8")
        gb["unique_key_idx"] = np.array([0, 1], "<i8")
        for k in range(11):
            gb[f"KEY_{k}"] = np.array([k, k], "<i8")
        # DataFrame without ColumnOrder: link (name) order
        df = h.create_group("df")
        meta(df, 6)
        df.attrs["NumCols"] = np.int64(2)
        df["b"] = np.array([1, 2], "<i8")
        df["a"] = np.array([3.0, 4.0], "<f8")
        ixg = df.create_group("Index")
        meta(ixg, 12)
        ixg["IDX_0"] = np.array([0, 1], "<i8")
        # older client-side layouts
        h["old_segments"] = np.array([0, 2], "<i8")
        h["old_values"] = np.array([1, 2, 3], "<i8")
        h["oc.codes"] = np.array([0, 1, 0], "<i8")
        strings_group(h, "oc.categories", ["u", "v"], attrs=False)
        h["oc._akNAcode"] = np.array([1], "<i8")
    got = conn.readhdf([path])
    assert set(got) == {"cat", "segs", "ix", "gb", "df", "old", "oc"}
    cat = conn.fetch(got["cat"]["name"])
    assert cat["codes"]["data"] == [1, 0, 1] and cat["categories"] == ["a", "b", "N/A"]
    assert got["cat"]["objtype"] == "categorical"
    segs = conn.fetch(got["segs"]["name"])
    assert segs["values"] == ["x", "y", "z"] and segs["segments"]["data"] == [0, 1]
    assert conn.fetch(got["ix"]["name"])["IDX_0"]["data"] == [5, 6, 7]
    gbd = conn.fetch(got["gb"]["name"])
    assert [k for k in gbd if k.startswith("KEY_")] == [f"KEY_{k}" for k in range(11)]
    assert gbd["KEY_10"]["data"] == [10, 10]
    assert got["df"]["columns"] == ["a", "b"]
    assert got["old"]["objtype"] == "segarray"
    assert conn.fetch(got["old"]["name"])["values"]["data"] == [1, 2, 3]
    assert got["oc"]["objtype"] == "categorical" and got["oc"]["na_value"] == "v"
    # and what h5ark read, written and read again
    back = unique("back") + ".h5"
    conn.tohdf([d["name"] for d in got.values()], back, datasets=list(got), file_type="single")
    again = conn.readhdf([back])
    for k in got:
        assert same(conn.fetch(again[k]["name"]), conn.fetch(got[k]["name"])), k


def test_lshdf_objtypes(conn):
    objs = build_all(conn)
    path = unique("ls") + ".h5"
    conn.tohdf(list(objs.values()), path, datasets=list(objs.keys()), file_type="single")
    hdr, _ = conn.ok("lshdf", path=path)
    kinds = {e["name"]: e.get("objtype") for e in hdr["result"]["entries"]}
    assert kinds["sa"] == "segarray" and kinds["cat"] == "categorical"
    assert kinds["gb"] == "groupby" and kinds["df"] == "dataframe"
    assert kinds["ix"] == "index" and kinds["mix"] == "multiindex"
    assert kinds["av"] == "arrayview" and kinds["big"] == "pdarray"
    tags = {e["name"]: e.get("tag") for e in hdr["result"]["entries"]}
    assert tags["dt"] == "datetime64[ns]" and tags["ip"] == "ipv4"


# ---- update and repack --------------------------------------------------------------------

@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_update_and_repack(conn, file_type):
    big = conn.put(np.arange(200000, dtype="<i8"))
    other = segarray(conn, [0, 1, 3], [1, 2, 3, 4])
    path = unique("upd") + ".h5"
    files = conn.tohdf([big, other], path, datasets=["a", "b"], file_type=file_type)

    def contents(f):
        with h5py.File(conn.dir / f, "r") as h:
            return {k: (h[k][()].tolist() if isinstance(h[k], h5py.Dataset) else
                        {c: h[k][c][()].tolist() for c in h[k]}) for k in h}

    before = {f: contents(f) for f in files}
    size_before = {f: (conn.dir / f).stat().st_size for f in files}
    small = conn.put(np.arange(10, dtype="<i8") * 7)
    conn.tohdf([small], path, datasets=["a"], mode="update", file_type=file_type)
    for f in files:
        after = contents(f)
        assert after["b"] == before[f]["b"]
        # as HDF5 unlinking a dataset in place: its space stays in the file until repack
        assert (conn.dir / f).stat().st_size >= size_before[f]
    got = conn.readhdf(files)
    assert conn.fetch(got["a"]["name"])["data"] == (np.arange(10) * 7).tolist()
    sizes = sum((conn.dir / f).stat().st_size for f in files)
    hdr, _ = conn.ok("repack", path=path)
    res = hdr["result"]
    assert sorted(res["files"]) == sorted(files)
    assert res["bytes_before"] == sizes and res["bytes_after"] < res["bytes_before"]
    got = conn.readhdf(files)
    assert conn.fetch(got["b"]["name"]) == conn.fetch(other)
    err = conn.fail("tohdf", names=[small], datasets=["zz"], path=path, mode="update",
                    file_type=file_type)
    assert err["code"] == "not_found"


def test_bad_inputs(conn):
    junk = unique("junk") + ".h5"
    (conn.dir / junk).write_bytes(b"not hdf5 at all" * 10)
    assert conn.fail("repack", path=junk)["code"] == "schema_error"
    assert conn.fail("repack", path="../x.h5")["code"] == "forbidden"
    assert conn.fail("repack", path="/etc/passwd")["code"] == "forbidden"
    assert conn.fail("repack", path=unique("none") + ".h5")["code"] == "not_found"
    name = conn.put(np.arange(3, dtype="<i8"))
    assert conn.fail("tohdf", names=[name], path=unique("nofile") + ".h5", mode="update",
                     file_type="single")["code"] == "not_found"
    assert conn.fail("tohdf", names=[name], path="../up.h5", mode="update")["code"] == "forbidden"
    # malformed composites in files
    path = unique("bad") + ".h5"
    with h5py.File(conn.dir / path, "w") as h:
        s = h.create_group("s")
        meta(s, 3)
        s["segments"] = np.array([0, 5], "<i8")  # past the values
        s["values"] = np.array([1, 2], "<i8")
        c = h.create_group("c")
        meta(c, 4)
        c["codes"] = np.array([0, 9], "<i8")  # no such category
        strings_group(c, "categories", ["a"])
        g = h.create_group("g")
        meta(g, 5)  # no children
        a = h.create_dataset("av", data=np.arange(4))
        meta(a, 0)
        a.attrs["Rank"] = np.int64(2)
        a.attrs["Shape"] = np.array([3, 3], "<i8")
    for dset in ("s", "c", "g", "av"):
        err = conn.fail("readhdf", paths=[path], datasets=[dset])
        assert err["code"] == "schema_error", (dset, err)
    assert conn.alive()


def test_dataframe_columns_differ_across_files(conn):
    """A DataFrame's columns come from the first file: a later file lacking one, or holding
    one the files before it do not, is a schema_error naming the file and the column (and
    with allow_errors that file is skipped and named), never a column silently left out."""
    sub = unique("dfcols")
    (conn.dir / sub).mkdir()
    for i, cols in enumerate((["a", "b"], ["a", "b", "c"], ["a"])):
        with h5py.File(conn.dir / sub / f"{i}.h5", "w") as h:
            g = h.create_group("df")
            meta(g, 6)
            for c in cols:
                meta(g.create_dataset(c, data=np.arange(3, dtype="<i8")), 1)
    names = [f"{sub}/{i}.h5" for i in range(3)]
    check_columns_must_agree(conn, names)
    assert conn.alive()
