"""readhdf of any HDF5 file, and of parts of files, against a real daemon (PROTOCOL.md,
"Additions"): plain h5py files with no Arkouda attributes (1-D numbers as pdarrays, N-d
numbers as arrayviews concatenated along the first axis, fixed- and variable-length ASCII
and UTF-8 strings as strings, h5py's bool enum as bool, and types nothing can hold refused
by name, or skipped with a warning when no datasets were asked for); `start`/`stop` row
ranges of every object kind over multi-file sets, the daemon's own distributed files and
hand-made ones of uneven lengths (ranges inside a file, across file boundaries, empty, and
whole), checked against numpy slicing of the full read; `tag_data` as a `Filename_Codes`
pdarray; `allow_errors` skipping any file that cannot be read; and lshdf and readhdf
agreeing on what every top-level name of a file is."""
import shutil

import h5py
import numpy as np
import pytest

from conftest import block_bounds
from wire import Conn as BaseConn, decode_strings, unique

LOCALES = 3  # the `daemon` fixture's locale count
ERROR_CODES = {"bad_request", "not_found", "already_exists", "type_error", "schema_error",
               "io_error", "forbidden", "resource_limit"}
# lshdf's objtypes that name something readhdf returns (bitvector and series it does not)
READHDF_OBJTYPES = {"pdarray", "strings", "arrayview", "segarray", "categorical", "groupby", "awkward",
                    "dataframe", "index", "multiindex"}


# ---- the connection ------------------------------------------------------------------------

class Conn(BaseConn):
    def fail(self, cmd, **args):
        hdr, _ = self.raw(cmd, **args)
        assert not hdr["ok"], hdr
        assert hdr["error"]["code"] in ERROR_CODES, hdr
        assert hdr["error"]["message"], hdr
        return hdr["error"]

    def make(self, cmd, **args):
        hdr, _ = self.ok(cmd, **args)
        return hdr["result"]["object"]["name"]

    def put_bigint(self, limbs, max_bits=-1):
        frames = [np.ascontiguousarray(l, "<u8").tobytes() for l in limbs]
        hdr, _ = self.ok("put", frames, buffers=[{"name": f"Limb_{i}", "nbytes": len(f)}
                                                 for i, f in enumerate(frames)],
                         objtype="pdarray", dtype="bigint", shape=[len(limbs[0])],
                         max_bits=max_bits)
        return hdr["result"]["object"]["name"]

    def tohdf(self, names, path, **kw):
        hdr, _ = self.ok("tohdf", names=names, path=path, **kw)
        return hdr["result"]["files"]

    def read(self, paths, **kw):
        """readhdf: (result, warnings)."""
        hdr, _ = self.ok("readhdf", paths=paths, **kw)
        return hdr["result"], hdr.get("warnings", [])

    def fetch(self, name):
        """A row-sliceable value of any object (see decode)."""
        return decode(*self.buffers(name))

    def fetch_all(self, result):
        """{dataset: (descriptor, value)} of a readhdf result, the objects then deleted."""
        out = {k: (d, self.fetch(d["name"])) for k, d in result["objects"].items()}
        if out:
            self.ok("delete", names=[d["name"] for d, _ in out.values()])
        return out


# Parts of the contract not built yet; strict, so each fails loudly once it works.


@pytest.fixture(scope="module")
def conn(daemon):
    daemon.data_dir.mkdir(exist_ok=True)
    return Conn(daemon)


# ---- values of objects, and their rows -----------------------------------------------------

def decode(desc, bufs, prefix=""):
    """pdarray -> 1-D ndarray; arrayview -> ndarray of its shape; strings -> [str];
    segarray -> [[element...]] (one list per sub-array); categorical -> [str] (each code's
    category); dataframe, index, multiindex, groupby -> {"objtype", component: value}."""
    ot = desc["objtype"]
    if ot in ("pdarray", "arrayview"):
        assert desc["dtype"] != "bigint", desc
        arr = np.frombuffer(bufs.get(prefix + "values", b""),
                            np.dtype(desc["dtype"]).newbyteorder("<"))
        return arr.reshape(desc["shape"]) if ot == "arrayview" else arr
    if ot == "strings":
        return decode_strings(bufs.get(prefix + "segments", b""), bufs.get(prefix + "values", b""))
    parts = {k: decode(v, bufs, prefix + k + "/") for k, v in desc["components"].items()}
    if ot == "segarray":
        segs, vals = parts["segments"].tolist(), parts["values"]
        assert not segs or segs[0] == 0, segs[:5]
        ends = segs[1:] + [len(vals)]
        return [list(vals[s:e]) if isinstance(vals, list) else vals[s:e].tolist()
                for s, e in zip(segs, ends)]
    if ot == "categorical":
        cats = parts["categories"]
        return [cats[c] for c in parts["codes"].tolist()]
    return {"objtype": ot, **parts}


def cut(value, a, b):
    """Rows [a, b) of a value decode() made."""
    if isinstance(value, dict):
        return {k: v if k == "objtype" else cut(v, a, b) for k, v in value.items()}
    return value[a:b]


def nrows(value):
    if isinstance(value, dict):
        return nrows(next(v for k, v in value.items() if k != "objtype"))
    return value.shape[0] if isinstance(value, np.ndarray) else len(value)


def same(got, want):
    """Exact equality: arrays by dtype, shape and bytes (NaN payloads, -0.0), lists and
    dicts (in order) element by element."""
    if isinstance(want, dict):
        return isinstance(got, dict) and list(got) == list(want) and all(
            same(got[k], want[k]) for k in want)
    if isinstance(want, np.ndarray):
        return (isinstance(got, np.ndarray) and got.dtype == want.dtype
                and got.shape == want.shape and got.tobytes() == want.tobytes())
    return got == want


def check_rows(desc, got, full_desc, want, a, b, what):
    """An object read with start=a, stop=b against rows [a, b) of the full read."""
    assert desc["objtype"] == full_desc["objtype"], (what, a, b, desc)
    assert desc["dtype"] == full_desc["dtype"], (what, a, b, desc)
    if desc["objtype"] == "arrayview":
        assert desc["shape"] == [b - a] + full_desc["shape"][1:], (what, a, b, desc)
    else:
        assert desc["size"] == b - a, (what, a, b, desc)
    assert nrows(got) == b - a, (what, a, b)
    assert same(got, cut(want, a, b)), (what, a, b)


def ranges(n, cuts):
    """Row ranges over n rows whose files end at `cuts`: empty ones (at the ends and at
    every boundary), the whole, single rows, ranges inside one file, a whole file, ranges
    that start or end on a boundary and ranges across one or more boundaries."""
    cuts = sorted({c for c in cuts if 0 < c < n})
    out = {(0, 0), (n, n), (0, n), (0, 1), (n - 1, n), (1, n - 1)}
    points = [0] + cuts + [n]
    for c in cuts:
        out |= {(c, c), (c - 1, c + 1), (c, n), (0, c), (c - 3, c + 5), (c + 1, n), (c, c + 1)}
    for lo, hi in zip(points, points[1:]):
        out |= {(lo + 1, hi - 1), (lo, hi), (lo + 1, hi)}
    for lo, hi in zip(points, points[2:]):
        out.add((lo + 1, hi - 1))
    return sorted((a, b) for a, b in out if 0 <= a <= b <= n)


def file_cuts(rows, files=LOCALES, row_size=1):
    """Row numbers where the daemon's distributed files of `rows` rows of `row_size`
    elements each split (both sides, when a file ends inside a row)."""
    out = set()
    for lo, _ in block_bounds(rows * row_size, files)[1:]:
        out |= {lo // row_size, -(-lo // row_size)}
    return sorted(out)


def owners(lengths):
    """Each row's file index, for files of these lengths."""
    return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)


# ---- data ----------------------------------------------------------------------------------

ALPHABET = list("abcxyz") + ["é", "日", "😀", " ", "Ω"]


def words(rng, n, longest=9):
    return ["".join(rng.choice(ALPHABET, int(k))) for k in rng.integers(0, longest, n)]


def odd_floats(rng, n, dtype="<f8"):
    v = rng.normal(size=n).astype(dtype)
    for i, x in zip(rng.integers(0, max(n, 1), 4), (np.nan, -0.0, np.inf, -np.inf)):
        if n:
            v[i] = x
    return v


def write_strings_group(parent, name, strs, segments=None):
    """An Arkouda Strings group; `segments` replaces the true offsets."""
    g = parent.create_group(name)
    g.attrs["ObjType"] = np.int64(2)
    raw = [s.encode() for s in strs]
    g["values"] = np.frombuffer(b"".join(r + b"\0" for r in raw), "u1")
    offs = np.cumsum([0] + [len(r) + 1 for r in raw[:-1]]).astype("<i8")[:len(raw)]
    g["segments"] = offs if segments is None else np.array(segments, "<i8")
    return g


PLAIN_LENGTHS = [5, 0, 17, 1, 9, 260]
PLAIN_DATASETS = ["ints", "floats", "flags", "small", "vstr", "fstr", "mat", "cube"]


@pytest.fixture(scope="module")
def plain_set(conn):
    """Hand-made h5py files with no Arkouda attributes, of uneven lengths (one empty):
    (the files, relative to the data directory, in name order; {dataset: numpy array or
    list of str, all files concatenated})."""
    rng = np.random.default_rng(20240601)
    base = unique("plain")
    (conn.dir / base).mkdir()
    files, parts = [], {k: [] for k in PLAIN_DATASETS}
    for i, n in enumerate(PLAIN_LENGTHS):
        data = {
            "ints": rng.integers(-2 ** 62, 2 ** 62, n, dtype=np.int64),
            "floats": odd_floats(rng, n),
            "flags": rng.random(n) < 0.4,
            "small": rng.integers(-30000, 30000, n).astype("<i2"),
            "vstr": words(rng, n),
            "fstr": ["".join(rng.choice(list("abcdefgh"), int(k))) for k in rng.integers(0, 7, n)],
            "mat": rng.normal(size=(n, 3)).astype("<f4"),
            "cube": rng.integers(-99, 99, (n, 2, 4)).astype("<i4"),
        }
        f = f"{base}/part{i}.h5"
        with h5py.File(conn.dir / f, "w") as h:
            for k, v in data.items():
                if k == "vstr":
                    h.create_dataset(k, data=np.array(v, dtype=object), dtype=h5py.string_dtype())
                elif k == "fstr":  # a width of its own in each file, some strings filling it
                    width = max([len(s) for s in v] + [1]) + i % 2
                    h.create_dataset(k, data=np.array([s.encode() for s in v], dtype=f"S{width}"))
                else:
                    h.create_dataset(k, data=v)
                parts[k].append(v)
        files.append(f)
    want = {k: (sum(v, []) if k in ("vstr", "fstr") else np.concatenate(v))
            for k, v in parts.items()}
    return files, want


@pytest.fixture(scope="module")
def own_set(conn):
    """Objects of every rangeable kind made with the daemon's commands and written with
    tohdf across the daemon's 3 locales: (files, {dataset: original value})."""
    rng = np.random.default_rng(7)
    c = conn
    n = 2000
    objs = {
        "i64": c.put(rng.integers(-2 ** 62, 2 ** 62, n, dtype=np.int64)),
        "f64": c.put(odd_floats(rng, n)),
        "b": c.put(rng.random(n) < 0.3),
        "s": c.put_strings(words(rng, n)),
    }
    objs["av2"] = c.make("reshape", array=c.put(odd_floats(rng, 301 * 7)), shape=[301, 7])
    objs["av3"] = c.make("reshape", array=c.put(np.arange(600, dtype="<i4") - 300),
                         shape=[50, 4, 3])

    def segarray(m, string_values=False):
        lens = rng.integers(0, 7, m)
        lens[rng.integers(0, m, m // 5)] = 0
        segs = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype("<i8")
        total = int(lens.sum())
        vals = (c.put_strings(words(rng, total)) if string_values
                else c.put(rng.integers(-1000, 1000, total, dtype=np.int64)))
        return c.make("segarray", segments=c.put(segs), values=vals)

    def categorical(m, **kw):
        vals = list(rng.choice(["red", "green", "blue", "N/A", "日本", "x y"], m))
        return c.make("categorical", values=c.put_strings(vals), **kw)

    objs["seg"] = segarray(400)
    objs["seg_str"] = segarray(150, string_values=True)
    objs["cat"] = categorical(600)
    objs["cat_groups"] = categorical(90, keep_groups=True)
    rows = 500
    cols = [c.put(rng.integers(-50, 50, rows, dtype=np.int64)), c.put(odd_floats(rng, rows)),
            c.put(rng.random(rows) < 0.5), c.put_strings(words(rng, rows)),
            categorical(rows), segarray(rows)]
    objs["df"] = c.make("dataframe", columns=cols,
                        column_names=["i", "f", "b", "s", "c", "sa"],
                        index=c.put(np.arange(rows, dtype=np.int64) * 3 - 7))
    objs["ix"] = c.make("index", levels=[c.put(rng.integers(0, 9, 300, dtype=np.int64))])
    objs["mix"] = c.make("index", levels=[c.put(rng.integers(0, 9, 300, dtype=np.int64)),
                                          c.put_strings(words(rng, 300))])
    path = unique("own") + ".h5"
    files = c.tohdf(list(objs.values()), path, datasets=list(objs))
    assert len(files) == LOCALES
    return files, {k: c.fetch(v) for k, v in objs.items()}


# ---- plain HDF5: what each dataset becomes -------------------------------------------------

def test_plain_1d_numbers_are_pdarrays(conn):
    """Every numeric dtype and h5py's bool, in two files of uneven lengths, as pdarrays of
    that dtype."""
    base = unique("nums")
    dtypes = ["<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8", "<f4", "<f8", "?"]
    rng = np.random.default_rng(1)
    parts = []
    for i, n in enumerate((11, 4)):
        data = {}
        for dt in dtypes:
            if dt == "?":
                data["bool"] = rng.random(n) < 0.5
            elif dt[1] == "f":
                data[np.dtype(dt).name] = odd_floats(rng, n, dt)
            else:
                info = np.iinfo(dt)
                data[np.dtype(dt).name] = rng.integers(info.min, info.max, n, dtype=dt,
                                                       endpoint=True)
        with h5py.File(conn.dir / f"{base}_{i}.h5", "w") as h:
            for k, v in data.items():
                h[k] = v
        parts.append(data)
    res, warnings = conn.read([f"{base}_*.h5"])
    assert warnings == []
    got = conn.fetch_all(res)
    assert sorted(got) == sorted(parts[0])
    for k, (desc, value) in got.items():
        want = np.concatenate([p[k] for p in parts])
        assert desc["objtype"] == "pdarray" and desc["dtype"] == k, desc
        assert desc["shape"] == [15] and desc["ndim"] == 1
        assert same(value, want), k


def test_h5py_bool_enum(conn):
    """h5py stores numpy bools as an enum of int8 (FALSE=0, TRUE=1): read as dtype bool,
    across files (an empty one included)."""
    base = unique("bools")
    parts = [np.array([True, False, True]), np.array([], bool), np.array([False, False, True, True])]
    for i, p in enumerate(parts):
        with h5py.File(conn.dir / f"{base}_{i}.h5", "w") as h:
            h["flags"] = p
            t = h["flags"].id.get_type()
            assert isinstance(t, h5py.h5t.TypeEnumID) and t.get_super().get_size() == 1
    res, _ = conn.read([f"{base}_*.h5"], datasets=["flags"])
    (desc, value), = conn.fetch_all(res).values()
    assert desc["objtype"] == "pdarray" and desc["dtype"] == "bool"
    assert same(value, np.concatenate(parts))


@pytest.mark.parametrize("shape_tail,dtype", [((3,), "<f8"), ((1,), "<i2"), ((2, 4), "<i4"),
                                             ((3, 1, 2), "<u8"), ((2, 2), "?")])
def test_plain_nd_is_arrayview(conn, shape_tail, dtype):
    """An N-d numeric dataset (N >= 2) is an arrayview of its shape; several files are
    concatenated along the first axis (an empty file included)."""
    base = unique("nd")
    rng = np.random.default_rng(len(shape_tail))
    parts = []
    for i, rows in enumerate((4, 0, 7, 1)):
        v = rng.integers(0, 2 ** 15, (rows,) + shape_tail).astype(dtype)
        with h5py.File(conn.dir / f"{base}_{i}.h5", "w") as h:
            h["m"] = v
        parts.append(v)
    want = np.concatenate(parts)
    res, _ = conn.read([f"{base}_{i}.h5" for i in range(4)])
    (desc, value), = conn.fetch_all(res).values()
    assert desc["objtype"] == "arrayview", desc
    assert desc["shape"] == list(want.shape) and desc["ndim"] == want.ndim
    assert desc["size"] == want.size and desc["dtype"] == np.dtype(dtype).name
    assert same(value, want)


def test_plain_nd_big_endian_and_chunked(conn):
    path = unique("ndvar") + ".h5"
    a = np.arange(60, dtype=">i4").reshape(5, 12) * -3
    b = np.linspace(0, 1, 24).reshape(2, 3, 4)
    with h5py.File(conn.dir / path, "w") as h:
        h["big"] = a
        h.create_dataset("zipped", data=b, chunks=(1, 3, 2), compression="gzip", shuffle=True)
    got = conn.fetch_all(conn.read([path])[0])
    assert got["big"][0]["objtype"] == "arrayview" and got["big"][0]["dtype"] == "int32"
    assert same(got["big"][1], a.astype("<i4"))
    assert got["zipped"][0]["shape"] == [2, 3, 4] and same(got["zipped"][1], b)


@pytest.mark.parametrize("shapes", [[(4, 3), (2, 4)], [(2, 3, 2), (2, 3, 3)],
                                    [(4, 3), (2, 3, 1)], [(3, 2), (0, 5)]])
def test_plain_nd_other_dimensions_differ(conn, shapes):
    """Files whose N-d datasets differ beyond the first axis cannot be concatenated."""
    base = unique("ndbad")
    for i, shape in enumerate(shapes):
        with h5py.File(conn.dir / f"{base}_{i}.h5", "w") as h:
            h["m"] = np.zeros(shape)
    err = conn.fail("readhdf", paths=[f"{base}_*.h5"])
    assert err["code"] == "schema_error", err
    assert "m" in err["message"]
    err = conn.fail("readhdf", paths=[f"{base}_*.h5"], datasets=["m"], start=0, stop=1)
    assert err["code"] in ("schema_error", "bad_request"), err
    assert conn.raw("ping")[0]["ok"]


def fixed_string_dataset(h, name, strs, size, pad=h5py.h5t.STR_NULLPAD, cset=h5py.h5t.CSET_ASCII):
    """A dataset of fixed-length HDF5 strings of `size` bytes, with that padding and
    character set, written through the file type itself (no conversion)."""
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(size)
    tid.set_strpad(pad)
    tid.set_cset(cset)
    dset = h5py.h5d.create(h.id, name.encode(), tid, h5py.h5s.create_simple((len(strs),)))
    if strs:
        dset.write(h5py.h5s.ALL, h5py.h5s.ALL,
                   np.array([s.encode() for s in strs], f"S{size}"), mtype=tid)


STRING_KINDS = {
    # kind: per-file lists of strings (written as that kind of HDF5 string)
    "fixed_ascii": [["ab", "", "abc"], [], ["hello", "x", "", "full8chr"]],
    "fixed_utf8": [["é", "日本", ""], ["😀x", "ab", "ééééé"]],
    "fixed_nullterm": [["abcde", "", "x"], ["q"]],
    "vlen_ascii": [["a", "", "longer text here"], ["z"] * 3],
    "vlen_utf8": [["δέλτα", "", "日本語", "😀"], [], ["tab\there", "x" * 300]],
    "vlen_chunked": [[f"w{i}" * (i % 5) for i in range(100)], ["end"]],
}


@pytest.mark.parametrize("kind", sorted(STRING_KINDS))
def test_plain_strings(conn, kind):
    """A 1-D dataset of HDF5 strings, fixed or variable length, ASCII or UTF-8, is a
    strings object; fixed-length padding (trailing NULs) is removed, a string filling its
    width is kept whole, and files of different widths concatenate."""
    base = unique(kind)
    parts = STRING_KINDS[kind]
    for i, strs in enumerate(parts):
        enc = [s.encode() for s in strs]
        with h5py.File(conn.dir / f"{base}_{i}.h5", "w") as h:
            width = max([len(e) for e in enc] + [1])
            if kind == "fixed_ascii":
                h.create_dataset("s", data=np.array(enc, f"S{width}"))
            elif kind == "fixed_utf8":
                fixed_string_dataset(h, "s", strs, width, cset=h5py.h5t.CSET_UTF8)
            elif kind == "fixed_nullterm":
                fixed_string_dataset(h, "s", strs, width + 1, pad=h5py.h5t.STR_NULLTERM)
            elif kind == "vlen_ascii":
                h.create_dataset("s", data=np.array(enc, dtype=object),
                                 dtype=h5py.string_dtype("ascii"))
            elif kind == "vlen_utf8":
                h.create_dataset("s", data=np.array(strs, dtype=object), dtype=h5py.string_dtype())
            else:
                h.create_dataset("s", data=np.array(strs, dtype=object), dtype=h5py.string_dtype(),
                                 chunks=(min(16, len(strs)),), compression="gzip")
        with h5py.File(conn.dir / f"{base}_{i}.h5", "r") as h:  # as h5py reads it back
            assert [x.decode() if isinstance(x, bytes) else x
                    for x in h["s"].asstr()[()]] == strs
    want = sum(parts, [])
    res, warnings = conn.read([f"{base}_{i}.h5" for i in range(len(parts))])
    assert warnings == []
    assert list(res["objects"]) == ["s"]
    desc = res["objects"]["s"]
    assert desc["objtype"] == "strings" and desc["dtype"] == "str", desc
    assert desc["size"] == len(want)
    assert desc["bytes"] == sum(len(s.encode()) + 1 for s in want)
    assert conn.get_strings(desc["name"]) == want


UNREPRESENTABLE = ["bad_compound", "bad_objref", "bad_regref", "bad_opaque", "bad_vlen_int",
                   "bad_array", "bad_group"]


def unrepresentable_file(conn, path, n=4):
    """A file of datasets nothing can hold beside readable ones (`keep_*`); returns the
    readable ones' values."""
    keep = {"keep_n": np.arange(n, dtype=np.int64) * 5, "keep_m": np.ones((n, 2), "<f4"),
            "keep_s": [f"s{i}" for i in range(n)], "keep_b": np.arange(n) % 2 == 0}
    with h5py.File(conn.dir / path, "w") as h:
        h["keep_n"] = keep["keep_n"]
        h["keep_m"] = keep["keep_m"]
        h.create_dataset("keep_s", data=np.array(keep["keep_s"], dtype=object),
                         dtype=h5py.string_dtype())
        h["keep_b"] = keep["keep_b"]
        h["bad_compound"] = np.zeros(n, dtype=[("x", "<i4"), ("y", "<f8")])
        refs = h.create_dataset("bad_objref", (n,), dtype=h5py.ref_dtype)
        refs[0] = h["keep_n"].ref
        regs = h.create_dataset("bad_regref", (n,), dtype=h5py.regionref_dtype)
        regs[0] = h["keep_n"].regionref[0:1]
        h.create_dataset("bad_opaque", data=np.array([b"\x01\x02"] * n, dtype="V2"))
        vl = h.create_dataset("bad_vlen_int", (n,), dtype=h5py.vlen_dtype(np.int32))
        vl[0] = np.arange(3, dtype=np.int32)
        h.create_dataset("bad_array", (n,), dtype=np.dtype(("<i4", (3,))))
        other = h.create_group("bad_group")  # another system's group: nothing claims it
        other.attrs["layout"] = "numeric,int32"  # (a `fieldtype` would make it ExeTera's)
        other["values"] = np.arange(n, dtype="<i4")
    return keep


@pytest.mark.parametrize("dset", UNREPRESENTABLE)
def test_unrepresentable_dataset_asked_for(conn, dset):
    """A dataset no object can represent, named in `datasets`: type_error naming it."""
    path = unique("odd") + ".h5"
    unrepresentable_file(conn, path)
    err = conn.fail("readhdf", paths=[path], datasets=[dset])
    assert err["code"] == "type_error", err
    assert dset in err["message"], err
    err = conn.fail("readhdf", paths=[path], datasets=["keep_n", dset])
    assert err["code"] == "type_error" and dset in err["message"], err


def test_unrepresentable_datasets_skipped_with_warnings(conn):
    """With no `datasets`, what cannot be represented is skipped and named in the reply's
    warnings; everything else in the files is read (from both files)."""
    base = unique("skip")
    keeps = [unrepresentable_file(conn, f"{base}_{i}.h5", n) for i, n in enumerate((4, 3))]
    hdr, _ = conn.ok("readhdf", paths=[f"{base}_*.h5"])
    warnings = hdr.get("warnings")
    assert isinstance(warnings, list) and all(isinstance(w, str) for w in warnings), hdr
    for dset in UNREPRESENTABLE:
        assert any(dset in w for w in warnings), (dset, warnings)
    assert not any("keep_" in w for w in warnings), warnings
    got = conn.fetch_all(hdr["result"])
    assert sorted(got) == ["keep_b", "keep_m", "keep_n", "keep_s"]
    assert got["keep_n"][0]["objtype"] == "pdarray"
    assert same(got["keep_n"][1], np.concatenate([k["keep_n"] for k in keeps]))
    assert got["keep_m"][0]["objtype"] == "arrayview" and got["keep_m"][0]["shape"] == [7, 2]
    assert same(got["keep_m"][1], np.concatenate([k["keep_m"] for k in keeps]))
    assert got["keep_s"][1] == keeps[0]["keep_s"] + keeps[1]["keep_s"]
    assert got["keep_b"][0]["dtype"] == "bool"
    assert same(got["keep_b"][1], np.concatenate([k["keep_b"] for k in keeps]))


# ---- ranges ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dset", PLAIN_DATASETS)
def test_range_plain_files(conn, plain_set, dset):
    """Rows [start, stop) of hand-made files of lengths 5, 0, 17, 1, 9, 260: every range
    kind, against the full read (itself checked against the data written)."""
    files, want = plain_set
    res, _ = conn.read(files, datasets=[dset])
    (full_desc, full), = conn.fetch_all(res).values()
    expect = want[dset]
    assert same(full, expect), dset
    cuts = np.cumsum(PLAIN_LENGTHS)[:-1].tolist()
    for a, b in ranges(len(expect), cuts):
        res, _ = conn.read(files, datasets=[dset], start=a, stop=b)
        assert list(res["objects"]) == [dset]
        (desc, got), = conn.fetch_all(res).values()
        check_rows(desc, got, full_desc, full, a, b, dset)


def test_range_every_dataset_at_once(conn, plain_set):
    """With no `datasets`, the range applies to every object read, each getting exactly
    those rows (a glob naming the files)."""
    files, _ = plain_set
    pattern = [files[0].rsplit("/", 1)[0] + "/part*.h5"]
    full = conn.fetch_all(conn.read(pattern)[0])
    assert sorted(full) == sorted(PLAIN_DATASETS)
    total = sum(PLAIN_LENGTHS)
    for a, b in [(0, 0), (3, 30), (5, 22), (22, 23), (31, total), (0, total), (total, total)]:
        got = conn.fetch_all(conn.read(pattern, start=a, stop=b)[0])
        assert sorted(got) == sorted(PLAIN_DATASETS), (a, b)
        for k, (desc, value) in got.items():
            check_rows(desc, value, full[k][0], full[k][1], a, b, k)


OWN_NAMES = ["i64", "f64", "b", "s", "av2", "av3", "seg", "seg_str", "cat", "cat_groups", "df",
             "ix", "mix"]


def own_cuts(name, full_desc, rows):
    if full_desc["objtype"] == "arrayview":
        return file_cuts(rows, row_size=int(np.prod(full_desc["shape"][1:])))
    return file_cuts(rows)


@pytest.mark.parametrize("name", OWN_NAMES)
def test_range_daemon_written_files(conn, own_set, name):
    """Rows of every object kind the daemon writes, from its distributed files (3 locales):
    pdarray (int64, float64, bool), strings, arrayview (2-D, 3-D; the files split inside
    rows), segarray (numeric, strings), categorical, dataframe, index, multiindex."""
    files, originals = own_set
    res, _ = conn.read(files, datasets=[name])
    (full_desc, full), = conn.fetch_all(res).values()
    assert same(full, originals[name]), name
    rows = nrows(full)
    for a, b in ranges(rows, own_cuts(name, full_desc, rows)):
        res, _ = conn.read(files, datasets=[name], start=a, stop=b)
        (desc, got), = conn.fetch_all(res).values()
        check_rows(desc, got, full_desc, full, a, b, name)
        if full_desc["objtype"] == "dataframe":
            assert desc["columns"] == full_desc["columns"]
        if full_desc["objtype"] == "categorical":
            assert desc["na_value"] == full_desc["na_value"]


def test_range_equal_length_objects_together(conn, own_set):
    """Several objects of the same length in one request, by the distributed set's bare
    name: each has exactly the rows asked for."""
    files, _ = own_set
    names = ["i64", "f64", "b", "s"]
    bare = files[0].replace("_LOCALE0000", "")
    full = conn.fetch_all(conn.read([bare], datasets=names)[0])
    for a, b in [(0, 0), (10, 20), (660, 680), (667, 1334), (1, 1999), (2000, 2000), (0, 2000)]:
        got = conn.fetch_all(conn.read([bare], datasets=names, start=a, stop=b)[0])
        assert list(got) == names
        for k in names:
            check_rows(got[k][0], got[k][1], full[k][0], full[k][1], a, b, k)


@pytest.mark.parametrize("locales", [1, 5])
def test_range_other_locale_counts(conn, own_set, start_daemon, locales):
    """A daemon of another locale count reads ranges of the 3-locale files, and of the
    files it writes itself."""
    files, originals = own_set
    other = Conn(start_daemon(locales=locales))
    other.dir.mkdir(exist_ok=True)
    for f in files:
        shutil.copy(conn.dir / f, other.dir / f)
    names = ["i64", "s", "av2", "seg_str", "df"]
    res, _ = other.read(files, datasets=names)
    full = {k: (d, other.fetch(d["name"])) for k, d in res["objects"].items()}
    mine = other.tohdf([d["name"] for d, _ in full.values()], unique("mine") + ".h5",
                       datasets=names)
    assert len(mine) == locales
    for k in names:
        full_desc, value = full[k]
        assert same(value, originals[k]), k
        rows = nrows(value)
        row_size = int(np.prod(full_desc["shape"][1:])) if full_desc["objtype"] == "arrayview" else 1
        for fileset, count in ((files, LOCALES), (mine, locales)):
            cuts = file_cuts(rows, count, row_size)
            for a, b in ranges(rows, cuts)[::3] + [(0, rows)]:
                res, _ = other.read(fileset, datasets=[k], start=a, stop=b)
                (desc, got), = other.fetch_all(res).values()
                check_rows(desc, got, full_desc, value, a, b, (k, count))


def test_range_out_of_bounds(conn, own_set, plain_set):
    """start > stop, stop past the rows (even where it is within the elements of an
    arrayview or the values of a segarray), and ill-typed bounds: bad_request."""
    files, _ = own_set
    cases = [("i64", 5, 4), ("i64", 0, 2001), ("i64", 2001, 2001), ("s", 0, 2001),
             ("s", 10, 9), ("av2", 0, 302), ("av2", 302, 302), ("av3", 0, 51),
             ("seg", 0, 401), ("cat", 0, 601), ("df", 0, 501), ("df", 400, 300),
             ("ix", 0, 301), ("mix", 300, 301)]
    for name, a, b in cases:
        err = conn.fail("readhdf", paths=files, datasets=[name], start=a, stop=b)
        assert err["code"] == "bad_request", (name, a, b, err)
    for bad in ({"start": -1, "stop": 3}, {"start": "1", "stop": 3}, {"start": 0, "stop": 1.5},
                {"start": 0, "stop": [3]}):
        err = conn.fail("readhdf", paths=files, datasets=["i64"], **bad)
        assert err["code"] == "bad_request", (bad, err)
    pfiles, _ = plain_set
    total = sum(PLAIN_LENGTHS)
    err = conn.fail("readhdf", paths=pfiles, datasets=["mat"], start=0, stop=total + 1)
    assert err["code"] == "bad_request", err
    # the largest range is fine
    res, _ = conn.read(pfiles, datasets=["mat"], start=total, stop=total)
    assert conn.fetch_all(res)["mat"][0]["shape"] == [0, 3]
    assert conn.raw("ping")[0]["ok"]


def test_range_groupby_has_no_rows(conn):
    """A GroupBy has no rows to select: bad_request naming it; without a range it reads."""
    keys = conn.put(np.array([3, 1, 3, 2, 1], "<i8"))
    gb = conn.make("groupby", keys=[keys])
    path = unique("gbr") + ".h5"
    conn.tohdf([gb], path, datasets=["gb"], file_type="single")
    err = conn.fail("readhdf", paths=[path], datasets=["gb"], start=0, stop=2)
    assert err["code"] == "bad_request" and "GroupBy" in err["message"] and "gb" in err["message"]
    res, _ = conn.read([path], datasets=["gb"])
    assert res["objects"]["gb"]["objtype"] == "groupby"


def test_range_one_bound(conn, plain_set):
    """start alone reads to the end; stop alone reads from the first row."""
    files, want = plain_set
    res, _ = conn.read(files, datasets=["ints"], start=20)
    assert same(conn.fetch_all(res)["ints"][1], want["ints"][20:])
    res, _ = conn.read(files, datasets=["vstr"], stop=23)
    assert conn.fetch_all(res)["vstr"][1] == want["vstr"][:23]


FIXTURE_RANGES = {
    "Legacy_String.hdf5": ("strings_array", ["ABC", "DEF", "GHI"], [(1, 3), (0, 1), (3, 3)]),
    "UnitTestHDF5_noOffsets_LOCALE0000": ("strings", ["one", "two", "three", "four", "five"],
                                          [(1, 4), (4, 5), (0, 0)]),
    "UnitTestHDF5_withOffsets_LOCALE0000": ("strings", ["one", "two", "three", "four", "five"],
                                            [(2, 5), (0, 2)]),
    "array_v1_LOCALE0000.hdf5": ("array", list(range(50)), [(10, 45), (49, 50), (0, 50)]),
    "sample.hdf5": ("sample", [0] * 100, [(95, 100), (0, 7)]),
}


def test_range_arkouda_fixtures(conn, arkouda_fixtures):
    sub = unique("akr")
    (conn.dir / sub).mkdir()
    for fixture, (dset, values, spans) in FIXTURE_RANGES.items():
        shutil.copy(arkouda_fixtures / fixture, conn.dir / sub / fixture)
        for a, b in spans:
            res, _ = conn.read([f"{sub}/{fixture}"], datasets=[dset], start=a, stop=b)
            (desc, got), = conn.fetch_all(res).values()
            assert desc["size"] == b - a, (fixture, a, b, desc)
            assert (got if isinstance(got, list) else got.tolist()) == values[a:b], (fixture, a, b)


# ---- tag_data --------------------------------------------------------------------------------

def codes_of(conn, res):
    assert "tags" not in res, res
    desc = res["objects"]["Filename_Codes"]
    assert desc["objtype"] == "pdarray" and desc["dtype"] == "int64", desc
    return conn.get(desc["name"])


def test_tag_data_plain_files(conn, plain_set):
    """`Filename_Codes` gives each row's index in the files as resolved: a glob's order, or
    the order the names are given in."""
    files, want = plain_set
    pattern = [files[0].rsplit("/", 1)[0] + "/part*.h5"]
    res, _ = conn.read(pattern, datasets=["ints", "vstr", "cube"], tag_data=True)
    assert res["files"] == files
    assert sorted(res["objects"]) == ["Filename_Codes", "cube", "ints", "vstr"]
    assert conn.get(res["objects"]["ints"]["name"]).tolist() == want["ints"].tolist()
    assert codes_of(conn, res).tolist() == owners(PLAIN_LENGTHS).tolist()
    order = [5, 2, 0, 4, 1, 3]
    res, _ = conn.read([files[i] for i in order], datasets=["fstr"], tag_data=True)
    assert res["files"] == [files[i] for i in order]
    assert codes_of(conn, res).tolist() == owners([PLAIN_LENGTHS[i] for i in order]).tolist()
    starts = np.concatenate([[0], np.cumsum(PLAIN_LENGTHS)])
    assert conn.get_strings(res["objects"]["fstr"]["name"]) == sum(
        (want["fstr"][starts[i]:starts[i + 1]] for i in order), [])
    # an N-d array: one code a first-axis row, not one an element
    res, _ = conn.read(pattern, datasets=["cube"], tag_data=True)
    assert codes_of(conn, res).tolist() == owners(PLAIN_LENGTHS).tolist()
    res, _ = conn.read(pattern, datasets=["cube"], tag_data=True, start=3, stop=24)
    assert codes_of(conn, res).tolist() == owners(PLAIN_LENGTHS)[3:24].tolist()


def test_tag_data_daemon_written_files(conn, own_set):
    """Codes of the daemon's distributed files: each locale's block of rows."""
    files, _ = own_set
    res, _ = conn.read(files, datasets=["i64", "s"], tag_data=True)
    assert sorted(res["objects"]) == ["Filename_Codes", "i64", "s"]
    want = owners([hi - lo for lo, hi in block_bounds(2000, LOCALES)])
    assert codes_of(conn, res).tolist() == want.tolist()


@pytest.mark.parametrize("name", ["seg", "cat", "df", "ix"])
def test_tag_data_composite_rows(conn, own_set, name):
    """For a segarray, categorical, dataframe or index, a row is a sub-array, a code, a
    dataframe row, an index entry."""
    files, originals = own_set
    rows = nrows(originals[name])
    res, _ = conn.read(files, datasets=[name], tag_data=True)
    want = owners([hi - lo for lo, hi in block_bounds(rows, LOCALES)])
    assert codes_of(conn, res).tolist() == want.tolist()


def test_tag_data_with_range(conn, plain_set):
    """With start and stop, the codes are those of the rows read."""
    files, want = plain_set
    full = owners(PLAIN_LENGTHS)
    for a, b in ranges(len(full), np.cumsum(PLAIN_LENGTHS)[:-1].tolist())[::2]:
        res, _ = conn.read(files, datasets=["floats", "mat"], tag_data=True, start=a, stop=b)
        assert codes_of(conn, res).tolist() == full[a:b].tolist(), (a, b)
        got = conn.fetch_all(res)
        assert same(got["floats"][1], want["floats"][a:b]), (a, b)


# ---- allow_errors ----------------------------------------------------------------------------

def lenient_set(conn):
    """Two good files and one of each kind of bad one, in a directory of their own:
    (dir, {role: file}, values of the good files)."""
    d = unique("lenient")
    (conn.dir / d).mkdir()
    good = {"good0": (np.arange(4, dtype=np.int64), ["a", "", "ccc", "é"]),
            "good1": (np.arange(10, 13, dtype=np.int64), ["x", "yy", "z"])}
    names = {role: f"{d}/{role}.h5" for role in ("good0", "good1", "notes", "gone",
                                                  "nodata", "broken")}
    for role, (n, s) in good.items():
        with h5py.File(conn.dir / names[role], "w") as h:
            h["n"] = n
            write_strings_group(h, "s", s)
    (conn.dir / names["notes"]).write_text("plain text, not HDF5\n" * 20)
    with h5py.File(conn.dir / names["nodata"], "w") as h:
        h["other"] = np.arange(3)
    with h5py.File(conn.dir / names["broken"], "w") as h:
        h["n"] = np.arange(100, 105, dtype=np.int64)
        write_strings_group(h, "s", ["p", "q"], segments=[0, 50])  # past the values
    return d, names, good


def test_without_allow_errors_each_bad_file_fails(conn):
    _, names, _ = lenient_set(conn)
    expect = {"gone": "not_found", "notes": "schema_error", "nodata": "not_found",
              "broken": "schema_error"}
    for role, code in expect.items():
        err = conn.fail("readhdf", paths=[names["good0"], names[role], names["good1"]],
                        datasets=["n", "s"])
        assert err["code"] == code, (role, err)
        assert names[role] in err["message"], (role, err)


def test_allow_errors_skips_every_kind_of_bad_file(conn):
    """A missing file named explicitly, a non-HDF5 file, a file lacking the dataset and a
    file with a broken schema are each skipped and named in file_errors; the good files
    are read whole, and their rows tagged with their own files."""
    _, names, good = lenient_set(conn)
    order = ["good0", "notes", "gone", "good1", "nodata", "broken"]
    res, _ = conn.read([names[r] for r in order], datasets=["n", "s"], allow_errors=True,
                       tag_data=True)
    errors = res["file_errors"]
    assert isinstance(errors, list) and len(errors) == 4, errors
    for role in ("notes", "gone", "nodata", "broken"):
        assert sum(names[role] in e for e in errors) == 1, (role, errors)
    for role in ("good0", "good1"):
        assert not any(names[role] in e for e in errors), (role, errors)
    assert conn.get(res["objects"]["n"]["name"]).tolist() == \
        good["good0"][0].tolist() + good["good1"][0].tolist()
    assert conn.get_strings(res["objects"]["s"]["name"]) == good["good0"][1] + good["good1"][1]
    codes = codes_of(conn, res).tolist()
    assert [res["files"][c] for c in codes] == [names["good0"]] * 4 + [names["good1"]] * 3


def test_allow_errors_missing_file(conn):
    """A missing file among those named: not_found, or skipped with allow_errors."""
    _, names, good = lenient_set(conn)
    err = conn.fail("readhdf", paths=[names["gone"], names["good1"]])
    assert err["code"] == "not_found" and names["gone"] in err["message"]
    res, _ = conn.read([names["gone"], names["good1"]], allow_errors=True)
    assert len(res["file_errors"]) == 1 and names["gone"] in res["file_errors"][0]
    assert conn.get(res["objects"]["n"]["name"]).tolist() == good["good1"][0].tolist()
    assert conn.get_strings(res["objects"]["s"]["name"]) == good["good1"][1]


def test_allow_errors_nothing_readable(conn):
    _, names, _ = lenient_set(conn)
    for paths in ([names["gone"]], [names["notes"], names["gone"]],
                  [names["broken"], names["nodata"]]):
        hdr, _ = conn.raw("readhdf", paths=paths, datasets=["n", "s"], allow_errors=True)
        assert not hdr["ok"], (paths, hdr)
        assert hdr["error"]["code"] in ERROR_CODES, hdr
    assert conn.raw("ping")[0]["ok"]


def test_allow_errors_with_range(conn):
    """The range is over the rows of the files read."""
    _, names, good = lenient_set(conn)
    both = good["good0"][0].tolist() + good["good1"][0].tolist()
    paths = [names["good0"], names["notes"], names["good1"]]
    for a, b in [(2, 6), (4, 4), (0, 7), (5, 7)]:
        res, _ = conn.read(paths, datasets=["n"], allow_errors=True, start=a, stop=b)
        assert len(res["file_errors"]) == 1
        assert conn.get(res["objects"]["n"]["name"]).tolist() == both[a:b], (a, b)


# ---- lshdf and readhdf agree ---------------------------------------------------------------

# objtypes whose lshdf shape is their row count (an arrayview's is its stored dataset's)
ROWS_AGREE = ("pdarray", "strings", "segarray", "categorical")


def disagreements(conn, path, read_paths=None, recursive=False):
    """For each top-level group and dataset lshdf lists in `path`: readhdf of that name
    (from `read_paths`, default the file alone: a distributed file is read with its set)
    must return the objtype lshdf gives it, and where readhdf fails (other than finding that
    very type broken: schema_error) lshdf must claim no objtype readhdf returns. Returns (names checked, problems)."""
    read_paths = read_paths or [path]
    hdr, _ = conn.ok("lshdf", path=path, recursive=recursive)
    checked, problems = [], []
    for e in hdr["result"]["entries"]:
        if e["kind"] not in ("group", "dataset"):
            continue
        name = e["path"].lstrip("/")
        checked.append(name)
        # awkward0's layout reads as an awkward array
        objtype = "awkward" if e["objtype"] == "awkward0" else e["objtype"]
        claimed = objtype if objtype in READHDF_OBJTYPES else None
        rep, _ = conn.raw("readhdf", paths=read_paths, datasets=[name])
        if rep["ok"]:
            obj = rep["result"]["objects"].get(name)
            got = obj["objtype"] if obj else None
            if obj:
                conn.ok("delete", names=[obj["name"]])
            if got != claimed:
                problems.append(f"{path}: {name!r}: lshdf says {e['objtype']!r}, "
                                f"readhdf returns {got!r}")
            elif (got in ROWS_AGREE and read_paths == [path] and e.get("shape")
                  and len(e["shape"]) == 1 and e["shape"][0] != obj["size"]):
                problems.append(f"{path}: {name!r}: lshdf says {e['shape'][0]} rows, "
                                f"readhdf reads {obj['size']}")
        elif (e["objtype"] == "awkward0"
              and rep["error"]["code"] in ("forbidden", "type_error")):
            # awkward0's layout: a function outside the whitelist is forbidden, a structure
            # with no awkward 2 equivalent a type_error naming it (PROTOCOL.md)
            pass
        elif claimed is not None and rep["error"]["code"] != "schema_error":
            # schema_error: readhdf took it for that type and found it broken (a GroupBy
            # without its segments), which is lshdf's claim too
            problems.append(f"{path}: {name!r}: lshdf says {e['objtype']!r}, readhdf "
                            f"fails: {rep['error']}")
    return checked, problems


def every_objtype(c):
    """name -> object of every kind tohdf writes, empty ones included."""
    rng = np.random.default_rng(3)
    o = {"ints": c.put(np.arange(6, dtype=np.int64)), "flags": c.put(np.arange(6) % 3 == 0),
         "words": c.put_strings(["a", "", "bc", "日本", "x", "y"]),
         "empty": c.put(np.array([], np.float32)),
         "dt": c.put(np.array([0, 10 ** 18, -5], "<i8"), tag="datetime64[ns]"),
         "td": c.put(np.array([7], "<i8"), tag="timedelta64[ns]"),
         "ip": c.put(np.array([3232235777, 0], "<u8"), tag="ipv4"),
         "big": c.put_bigint([np.arange(5, dtype="<u8") + 2 ** 63, np.arange(5, dtype="<u8")],
                             max_bits=100)}
    o["av"] = c.make("reshape", array=c.put(np.arange(12, dtype="<i4")), shape=[2, 3, 2])
    o["sa"] = c.make("segarray", segments=c.put(np.array([0, 0, 3], "<i8")),
                     values=c.put(rng.integers(0, 9, 5, dtype=np.int64)))
    o["sa_str"] = c.make("segarray", segments=c.put(np.array([0, 2], "<i8")),
                         values=c.put_strings(["p", "", "q"]))
    o["cat"] = c.make("categorical", values=c.put_strings(["x", "y", "x", "N/A"]))
    o["cat_groups"] = c.make("categorical", values=c.put_strings(["b", "a", "b"]),
                             keep_groups=True)
    o["gb"] = c.make("groupby", keys=[c.put(np.array([3, 1, 3, 2], "<i8")),
                                      c.put_strings(["p", "q", "p", "r"])])
    o["ix"] = c.make("index", levels=[c.put(np.arange(4, dtype=np.int64))])
    o["mix"] = c.make("index", levels=[c.put(np.arange(4, dtype=np.int64)),
                                       c.put_strings(list("abcd"))])
    o["df"] = c.make("dataframe", columns=[c.put(np.arange(4) / 3), c.put_strings(list("uvwx")),
                                           o["cat"]],
                     column_names=["zeta", "alpha", "mid"], index=o["ix"])
    o["df_empty"] = c.make("dataframe", columns=[c.put(np.array([], "<i8"))], column_names=["e"])
    return o


def agreement_files(conn, case):
    """The files of one agreement case (paths relative to the data directory): one file,
    or the files of one distributed set."""
    if case in ("tohdf_single", "tohdf_distributed"):
        objs = every_objtype(conn)
        return conn.tohdf(list(objs.values()), unique(case) + ".h5", datasets=list(objs),
                          file_type="single" if case == "tohdf_single" else "distribute")
    if case == "tohdf_columns":
        objs = every_objtype(conn)
        return conn.tohdf([objs["df"]], unique(case) + ".h5", dataframe_layout="columns",
                          file_type="single")
    path = unique(case) + ".h5"
    with h5py.File(conn.dir / path, "w") as h:
        if case == "inferred_groups":
            # Arkouda's composites with no ObjType attribute: named by their children
            g = h.create_group("gb_full")
            g["KEY_0"] = np.array([2, 1, 2, 3], "<i8")
            g["permutation"] = np.array([1, 0, 2, 3], "<i8")
            g["segments"] = np.array([0, 1, 3], "<i8")
            g["unique_key_idx"] = np.array([1, 0, 3], "<i8")
            g = h.create_group("gb_min")  # KEY_0 and permutation only
            g["KEY_0"] = np.array([2, 1, 2], "<i8")
            g["permutation"] = np.array([1, 0, 2], "<i8")
            g = h.create_group("cat")
            g["codes"] = np.array([0, 1, 0], "<i8")
            s = write_strings_group(g, "categories", ["a", "N/A"])
            del s.attrs["ObjType"]
            g["NA_Codes"] = np.array([1], "<i8")
            h.create_group("ix")["IDX_0"] = np.arange(3)
            mi = h.create_group("mi")
            mi["IDX_0"] = np.arange(3)
            mi["IDX_1"] = np.arange(3.0)
            sa = h.create_group("sa")
            sa["segments"] = np.array([0, 2], "<i8")
            sa["values"] = np.arange(5)
            s = write_strings_group(h, "strs", ["u", "vv"])
            del s.attrs["ObjType"]
            h.create_group("big")["Limb_0"] = np.arange(3, dtype="<u8")
            h.create_group("other")["thing"] = np.arange(3)
            h.create_group("nothing")
        else:  # plain_types: what plain HDF5 holds
            h["i8"] = np.arange(5, dtype="i1")
            h["u64"] = np.arange(5, dtype="<u8")
            h["f2"] = np.arange(3, dtype="f2")
            h["f4"] = np.arange(3, dtype="<f4")
            h["flags"] = np.array([True, False])
            h["empty1d"] = np.array([], "<i8")
            h["mat"] = np.zeros((3, 4))
            h["cube"] = np.zeros((2, 3, 4), "<i2")
            h["empty2d"] = np.zeros((0, 3))
            h["fstr"] = np.array([b"ab", b"c"], "S2")
            h.create_dataset("vstr", data=np.array(["x", "yy"], dtype=object),
                             dtype=h5py.string_dtype())
            h.create_dataset("rgb", data=np.array([0, 1, 2], "u1"),
                             dtype=h5py.enum_dtype({"R": 0, "G": 1, "B": 2}, basetype="u1"))
            h["comp"] = np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")])
            h.create_dataset("vint", (2,), dtype=h5py.vlen_dtype(np.int32))
            h.create_dataset("oref", (2,), dtype=h5py.ref_dtype)
            h.create_dataset("opq", data=np.array([b"\x01\x02"] * 2, dtype="V2"))
            h.create_dataset("arr", (2,), dtype=np.dtype(("<i4", (3,))))
            h["scalar"] = np.int64(5)
            h.create_dataset("null", dtype="f4", shape=None)
            h.create_group("grp")["inner"] = np.arange(2)
    return [path]


AGREEMENT_CASES = ["tohdf_single", "tohdf_distributed", "tohdf_columns", "inferred_groups",
                   "plain_types"]


@pytest.mark.parametrize("case", AGREEMENT_CASES)
def test_lshdf_agrees_with_readhdf(conn, case):
    problems = []
    files = agreement_files(conn, case)
    for path in files:
        checked, found = disagreements(conn, path, files)
        assert len(checked) >= 2, (path, checked)
        problems += found
    assert not problems, "\n".join(problems)


def test_lshdf_agrees_with_readhdf_every_fixture(conn, arkouda_fixtures):
    """Every group and dataset, at every depth, of every HDF5 file among the fixtures of
    every system (Arkouda, ExeTera, awkward, LBANN)."""
    sub = unique("akls")
    (conn.dir / sub).mkdir()
    problems, seen = [], set()
    for src in sorted(arkouda_fixtures.parent.rglob("*")):
        if not src.is_file() or not h5py.is_hdf5(src):
            continue
        name = "_".join(src.relative_to(arkouda_fixtures.parent).parts)
        shutil.copy(src, conn.dir / sub / name)
        checked, found = disagreements(conn, f"{sub}/{name}", recursive=True)
        assert checked, name
        problems += found
        seen.add(src.relative_to(arkouda_fixtures.parent).parts[0])
    assert "arkouda" in seen, seen
    assert not problems, "\n".join(problems)
