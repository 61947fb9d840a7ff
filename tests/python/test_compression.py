"""tohdf with compression against real daemons of 1, 2 and 3 locales: pdarrays of several
dtypes, strings, a SegArray and every composite, single and distributed, in sizes whose
shards are uneven and whose chunks span shards; h5py sees shuffle then deflate, the chunk
shape of PROTOCOL.md, and chunks that are zlib streams of the very bytes HDF5 would compress
(shuffled, the last chunk padded), no larger than zlib makes them at the same level; the
files are the same whatever the locale count; readhdf gives the data back; append and
update; bad arguments write nothing; files h5py compressed (gzip with and without shuffle)
read back, their chunks inflated by the locales, and what is not a whole chunk's stream left
to HDF5; the Python client's to_hdf."""
import zlib

import h5py
import numpy as np
import pytest

from conftest import block_bounds, h5_strings
from daemons import Daemon
from wire import unique
from test_hdf_composites import Conn, build_all, locale_file, same, segarray

CHUNK_BYTES = 1 << 20
LOCALE_COUNTS = (1, 2, 3)


@pytest.fixture(scope="module")
def conns():
    """locale count -> Conn on a daemon of that many locales."""
    daemons = {n: Daemon(locales=n) for n in LOCALE_COUNTS}
    out = {}
    for n, d in daemons.items():
        d.data_dir.mkdir(exist_ok=True)
        out[n] = Conn(d)
    yield out
    for d in daemons.values():
        d.cleanup()


def chunk_elems(itemsize, n):
    return min(n, CHUNK_BYTES // itemsize)


def files_of(path, file_type, locales):
    return [locale_file(path, i) for i in range(locales)] if file_type == "distribute" else [path]


def parts_of(n, file_type, locales):
    return block_bounds(n, locales) if file_type == "distribute" else [(0, n)]


def check_compressed(dset, level, n):
    assert dset.compression == "gzip" and dset.compression_opts == level
    assert dset.shuffle
    assert dset.chunks == (chunk_elems(dset.dtype.itemsize, n),)
    # the pipeline any HDF5 reader runs backwards: shuffle first, then deflate at `level`
    dcpl = dset.id.get_create_plist()
    assert [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())] == [
        h5py.h5z.FILTER_SHUFFLE, h5py.h5z.FILTER_DEFLATE]
    assert tuple(dcpl.get_filter(1)[2]) == (level,)


def reference_chunks(data, level, tmp_path):
    """The chunks h5py itself writes for data (same chunk shape, gzip + shuffle)."""
    ref = tmp_path / f"ref_{unique('c')}.h5"
    with h5py.File(ref, "w") as h:
        h.create_dataset("d", data=data, chunks=(chunk_elems(data.dtype.itemsize, data.size),),
                         compression="gzip", compression_opts=level, shuffle=True)
    with h5py.File(ref, "r") as h:
        return chunk_bytes(h["d"])


def chunk_bytes(dset):
    """Every stored chunk of a 1-D dataset: (filter mask, bytes), in order."""
    step = dset.chunks[0]
    return [dset.id.read_direct_chunk((at,)) for at in range(0, dset.shape[0], step)]


# libdeflate stores chunks of at most this many bytes (fewer at higher levels) as they are,
# 11 bytes more than the data (docs/DESIGN.md).
TINY = 51
# What the zeros padding a dataset's last chunk may cost over zlib (docs/DESIGN.md).
PADDED = 256


def check_chunks(dset, data, level, tmp_path, slack=0.0):
    """dset's chunks against those h5py writes for the same data: both filters applied to
    every chunk (mask 0), each chunk a zlib stream of exactly the bytes HDF5 compresses
    (shuffled, the last chunk padded with zeros), and each no larger than Python's zlib makes
    those bytes at the same level, nor the dataset as a whole (`slack`: a fraction more
    allowed, for the data docs/DESIGN.md names). Returns (h5ark's bytes, zlib's bytes)."""
    ours, ref = chunk_bytes(dset), reference_chunks(data, level, tmp_path)
    assert len(ours) == len(ref)
    padded = dset.shape[0] % dset.chunks[0] != 0
    total = [0, 0]
    for i, ((mask, packed), (ref_mask, ref_packed)) in enumerate(zip(ours, ref)):
        assert mask == 0 and ref_mask == 0
        plain = zlib.decompress(packed)
        assert plain == zlib.decompress(ref_packed), f"chunk {i}"
        zsize = len(zlib.compress(plain, level))
        assert zsize == len(ref_packed)  # HDF5's deflate is zlib's at this level
        if len(plain) <= TINY and len(packed) == len(plain) + 11:
            pass  # stored
        elif padded and i == len(ours) - 1:
            assert len(packed) <= zsize * (1 + slack) + PADDED, (i, len(packed), zsize)
        else:
            assert len(packed) <= zsize * (1 + slack), (i, len(packed), zsize)
        total[0] += len(packed)
        total[1] += zsize
    if total[1] > 1000:
        assert total[0] <= total[1] * (1 + slack), total
    return total


def sample(dtype, n, seed):
    """Random-looking but compressible values."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.3
    if dt.kind == "f":
        return np.round(rng.standard_normal(n), 2).astype(dt)
    return rng.integers(0, 1000 if dt.itemsize > 1 else 200, n).astype(dt)


# ---- pdarrays ------------------------------------------------------------------------------

@pytest.mark.parametrize("locales", LOCALE_COUNTS)
@pytest.mark.parametrize("dtype", ["int64", "float64", "int16", "uint8", "bool"])
@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_pdarray(conns, tmp_path, locales, dtype, file_type):
    c = conns[locales]
    itemsize = np.dtype(dtype).itemsize
    # two and a half chunks and 3 more: shards of 2 and 3 locales are uneven, chunks span them
    n = 5 * (CHUNK_BYTES // itemsize) // 2 + 3
    data = sample(dtype, n, locales)
    name = c.put(data)
    path = unique("pd") + ".h5"
    files = c.tohdf([name], path, datasets=["x"], file_type=file_type, compression="gzip")
    assert files == files_of(path, file_type, locales)
    for f, (lo, hi) in zip(files, parts_of(n, file_type, locales)):
        with h5py.File(c.dir / f, "r") as h:
            d = h["x"]
            check_compressed(d, 4, hi - lo)
            assert d.dtype == np.dtype("u1" if dtype == "bool" else dtype)
            assert d.attrs["ObjType"] == 1 and ("isBool" in d.attrs) == (dtype == "bool")
            assert np.array_equal(d[()], data[lo:hi].view(d.dtype))
            check_chunks(d, data[lo:hi].view(d.dtype), 4, tmp_path,
                         NEAR_RANDOM[1] if itemsize == 1 else 0)
    got = c.readhdf(files, ["x"])["x"]
    assert got["dtype"] == dtype
    assert np.array_equal(np.array(c.fetch(got["name"])["data"], dtype), data)


@pytest.mark.parametrize("level", [1, 9])
def test_level_and_small_arrays(conns, tmp_path, level):
    c = conns[3]
    for n in (1, 5, 1000):  # fewer elements than locales, and a chunk smaller than 1 MiB
        data = np.arange(n, dtype="<i8") * 3
        path = unique("lvl") + ".h5"
        c.tohdf([c.put(data)], path, datasets=["x"], file_type="single", compression="gzip",
                compression_level=level)
        with h5py.File(c.dir / path, "r") as h:
            check_compressed(h["x"], level, n)
            assert h["x"].chunks == (n,)
            check_chunks(h["x"], data, level, tmp_path)
        assert c.fetch(c.readhdf([path], ["x"])["x"]["name"])["data"] == data.tolist()


def test_empty_datasets_stay_contiguous(conns):
    c = conns[2]
    path = unique("empty") + ".h5"
    c.tohdf([c.put(np.array([], "<i8")), c.put_strings([])], path, datasets=["e", "s"],
            file_type="single", compression="gzip")
    with h5py.File(c.dir / path, "r") as h:
        for d in (h["e"], h["s/values"], h["s/segments"]):
            assert d.shape == (0,) and d.chunks is None and d.compression is None
    got = c.readhdf([path])
    assert got["e"]["size"] == 0 and got["s"]["size"] == 0


# ---- libdeflate against zlib ----------------------------------------------------------------

def string_bytes(n, seed):
    """n bytes of Strings' values (words and their NULs)."""
    raw = b"".join(w.encode() + b"\0" for w in words(n // 6 + 1, seed))
    return np.frombuffer(raw[:n], "u1").copy()


def string_offsets(n, seed):
    return np.cumsum([0] + [len(w) + 1 for w in words(n - 1, seed)]).astype("<i8")


# How much larger than zlib's a chunk may be, at levels 1-3 and at 4-9: the exceptions
# docs/DESIGN.md measured (sorted int64, near-random bytes, Strings' offsets at 1-3).
NEAR_RANDOM = (0, 0.001)
KINDS = {
    # name: (data of about n bytes, slack at 1-3, slack at 4-9)
    "int64 keys": (lambda n: sample("int64", n // 8, 11), 0, 0),
    "float64": (lambda n: sample("float64", n // 8, 12), 0, 0),
    "random float64": (lambda n: np.random.default_rng(15).standard_normal(n // 8), 0, 0),
    "string bytes": (lambda n: string_bytes(n, 13), 0, 0),
    "string offsets": (lambda n: string_offsets(n // 8, 14), 0.15, 0),
    "sorted int64": (lambda n: np.arange(n // 8, dtype="<i8"), 0, 0.015),
    "spaced int64": (lambda n: np.arange(n // 8, dtype="<i8") * 1000 + 7, 0, 0),
    "random bytes": (lambda n: sample("uint8", n, 16), *NEAR_RANDOM),
    "bool": (lambda n: sample("bool", n, 17), 0, 0),
}


@pytest.mark.parametrize("level", [
    level if level in (1, 6, 9) else pytest.param(level, marks=pytest.mark.not_under_valgrind(
        "levels 1, 6 and 9 stand for the others: the same code with other settings"))
    for level in range(1, 10)])
def test_no_larger_than_zlib(conns, tmp_path, level):
    """Every chunk of every kind no larger than zlib's at the same level (but the measured
    exceptions), read back equal by h5py and readhdf."""
    c = conns[2]
    n = 2 * CHUNK_BYTES + 4096  # two whole chunks and a short one, over both locales
    for kind, (make, slack_fast, slack) in KINDS.items():
        data = make(n)
        path = unique("zl") + ".h5"
        c.tohdf([c.put(data)], path, datasets=["x"], file_type="single", compression="gzip",
                compression_level=level)
        with h5py.File(c.dir / path, "r") as h:
            check_compressed(h["x"], level, data.size)
            assert np.array_equal(h["x"][()], data), kind
            ours, theirs = check_chunks(h["x"], data, level, tmp_path,
                                        slack_fast if level < 4 else slack)
        got = c.readhdf([path], ["x"])["x"]
        assert np.array_equal(np.array(c.fetch(got["name"])["data"], data.dtype), data), kind


def test_default_level_ratio(conns, tmp_path):
    """The case tohdf's compression is measured on: int64 in [0, 1000), 1 MiB chunks, the
    default level: a ratio at least zlib's, over the whole file too."""
    c = conns[2]
    data = np.random.default_rng(5).integers(0, 1000, 8 * CHUNK_BYTES // 8).astype("<i8")
    path = unique("ratio") + ".h5"
    c.tohdf([c.put(data)], path, datasets=["x"], file_type="single", compression="gzip")
    with h5py.File(c.dir / path, "r") as h:
        check_compressed(h["x"], 4, data.size)
        ours, theirs = check_chunks(h["x"], data, 4, tmp_path)
        assert np.array_equal(h["x"][()], data)
    assert data.nbytes / ours >= data.nbytes / theirs > 5.5


@pytest.mark.parametrize("level", [1, 4, 9])
def test_incompressible(conns, tmp_path, level):
    """Data that deflate cannot shrink: each chunk comes out a little larger than the chunk
    (stored blocks), still a valid zlib stream with both filters applied, which every
    reader reads; no larger than zlib's own."""
    c = conns[3]
    rng = np.random.default_rng(level)
    for data in (rng.integers(-2**63, 2**63 - 1, CHUNK_BYTES // 8 + 5, dtype="<i8"),
                 rng.integers(0, 256, CHUNK_BYTES + 77).astype("u1"),
                 rng.integers(-2**63, 2**63 - 1, 3, dtype="<i8")):  # a 24-byte chunk
        path = unique("rand") + ".h5"
        c.tohdf([c.put(data)], path, datasets=["x"], file_type="single", compression="gzip",
                compression_level=level)
        with h5py.File(c.dir / path, "r") as h:
            check_compressed(h["x"], level, data.size)
            check_chunks(h["x"], data, level, tmp_path)
            mask, packed = chunk_bytes(h["x"])[0]
            assert len(packed) > h["x"].chunks[0] * data.itemsize  # grew, and is kept so
            assert np.array_equal(h["x"][()], data)
        got = c.readhdf([path], ["x"])["x"]
        assert np.array_equal(np.array(c.fetch(got["name"])["data"], data.dtype), data)


def test_same_chunks_whatever_the_locales(conns):
    """The chunks depend on the data and the level only: 1, 2 and 3 locales write the same
    bytes."""
    data = sample("float64", 3 * CHUNK_BYTES // 8 + 11, 9)
    seen = []
    for locales in LOCALE_COUNTS:
        c = conns[locales]
        path = unique("same") + ".h5"
        c.tohdf([c.put(data)], path, datasets=["x"], file_type="single", compression="gzip",
                compression_level=5)
        with h5py.File(c.dir / path, "r") as h:
            seen.append(chunk_bytes(h["x"]))
    assert seen[0] == seen[1] == seen[2]


# ---- strings and composites --------------------------------------------------------------

def words(n, seed):
    rng = np.random.default_rng(seed)
    return [f"w{v}" + "x" * (v % 13) for v in rng.integers(0, 100000, n)]


@pytest.mark.parametrize("locales", LOCALE_COUNTS)
@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_strings(conns, tmp_path, locales, file_type):
    c = conns[locales]
    strs = words(250001, locales)  # about 3 MiB of bytes, 2 MiB of offsets
    name = c.put_strings(strs)
    path = unique("str") + ".h5"
    files = c.tohdf([name], path, datasets=["s"], file_type=file_type, compression="gzip",
                    compression_level=6)
    for f, (lo, hi) in zip(files, parts_of(len(strs), file_type, locales)):
        with h5py.File(c.dir / f, "r") as h:
            raw = b"".join(s.encode() + b"\0" for s in strs[lo:hi])
            offsets = np.cumsum([0] + [len(s) + 1 for s in strs[lo:hi]])[:-1].astype("<i8")
            for d, want in ((h["s/values"], np.frombuffer(raw, "u1")), (h["s/segments"], offsets)):
                check_compressed(d, 6, want.size)
                assert np.array_equal(d[()], want)  # offsets restart at 0 in each file
                check_chunks(d, want, 6, tmp_path)
    assert h5_strings([c.dir / f for f in files], "s") == strs
    got = c.readhdf(files, ["s"])["s"]
    assert c.fetch(got["name"]) == strs


@pytest.mark.parametrize("locales", LOCALE_COUNTS)
@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_segarray(conns, locales, file_type):
    c = conns[locales]
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 40, 20000)  # about 390000 values: a file's span several shards
    segs = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype("<i8")
    vals = (np.arange(int(lengths.sum())) % 777).astype("<i8")
    name = segarray(c, segs.tolist(), vals.tolist())
    path = unique("seg") + ".h5"
    files = c.tohdf([name], path, datasets=["sa"], file_type=file_type, compression="gzip")
    for f, (lo, hi) in zip(files, parts_of(len(segs), file_type, locales)):
        vlo = segs[lo] if lo < len(segs) else len(vals)
        vhi = segs[hi] if hi < len(segs) else len(vals)
        with h5py.File(c.dir / f, "r") as h:
            check_compressed(h["sa/segments"], 4, hi - lo)
            check_compressed(h["sa/values"], 4, vhi - vlo)
            assert np.array_equal(h["sa/segments"][()], segs[lo:hi] - vlo)
            assert np.array_equal(h["sa/values"][()], vals[vlo:vhi])
    got = c.readhdf(files, ["sa"])["sa"]
    assert same(c.fetch(got["name"]), c.fetch(name))


@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_every_composite(conns, file_type):
    c = conns[3]
    objs = build_all(c)
    path = unique("all") + ".h5"
    files = c.tohdf(list(objs.values()), path, datasets=list(objs), file_type=file_type,
                    compression="gzip", compression_level=2)
    seen = []

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            seen.append(name)
            if obj.shape[0] == 0 or name.endswith("NA_Codes"):
                assert obj.compression is None
            else:
                check_compressed(obj, 2, obj.shape[0])

    for f in files:
        with h5py.File(c.dir / f, "r") as h:
            h.visititems(visit)
    assert any(s.endswith("values/values") for s in seen)
    got = c.readhdf(files, list(objs))
    for ds, name in objs.items():
        assert same(c.fetch(got[ds]["name"]), c.fetch(name)), ds


# ---- append and update -------------------------------------------------------------------

@pytest.mark.parametrize("locales", (1, 3))
@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_append_and_update(conns, locales, file_type):
    c = conns[locales]
    a = np.arange(300000, dtype="<i8") % 10
    b = np.arange(200003, dtype="<f8") / 4
    a2 = a[::-1].copy()
    path = unique("app") + ".h5"
    files = c.tohdf([c.put(a)], path, datasets=["a"], file_type=file_type)
    c.tohdf([c.put(b)], path, datasets=["b"], file_type=file_type, mode="append",
            compression="gzip")
    for f, (lo, hi) in zip(files, parts_of(b.size, file_type, locales)):
        with h5py.File(c.dir / f, "r") as h:
            assert h["a"].compression is None and h["a"].chunks is None
            check_compressed(h["b"], 4, hi - lo)
    c.tohdf([c.put(a2)], path, datasets=["a"], file_type=file_type, mode="update",
            compression="gzip", compression_level=8)
    for f, (lo, hi) in zip(files, parts_of(a.size, file_type, locales)):
        with h5py.File(c.dir / f, "r") as h:
            check_compressed(h["a"], 8, hi - lo)
            assert np.array_equal(h["a"][()], a2[lo:hi])
            assert h["b"].compression_opts == 4
    got = c.readhdf(files)
    assert c.fetch(got["a"]["name"])["data"] == a2.tolist()
    assert c.fetch(got["b"]["name"])["data"] == b.tolist()
    # and an uncompressed update turns it back into a contiguous dataset
    c.tohdf([c.put(a)], path, datasets=["a"], file_type=file_type, mode="update")
    with h5py.File(c.dir / files[0], "r") as h:
        assert h["a"].compression is None and h["a"].chunks is None


# ---- bad arguments -------------------------------------------------------------------------

@pytest.mark.parametrize("args, named", [
    ({"compression": "lz4"}, "compression"),
    ({"compression": "GZIP"}, "compression"),
    ({"compression": 1}, "compression"),
    ({"compression": "gzip", "compression_level": 0}, "compression_level"),
    ({"compression": "gzip", "compression_level": 10}, "compression_level"),
    ({"compression": "gzip", "compression_level": -1}, "compression_level"),
    ({"compression": "gzip", "compression_level": "x"}, "compression_level"),
    ({"compression": "gzip", "compression_level": 4.0}, "compression_level"),
    ({"compression": "gzip", "compression_level": 2**63}, "compression_level"),
    ({"compression_level": 4}, "compression_level"),
    ({"compression": "none", "compression_level": 4}, "compression_level"),
])
@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_bad_arguments_write_nothing(conns, args, named, file_type):
    c = conns[2]
    name = c.put(np.arange(10, dtype="<i8"))
    before = sorted(p.name for p in c.dir.iterdir())
    path = unique("bad") + ".h5"
    hdr, _ = c.raw("tohdf", names=[name], path=path, file_type=file_type, **args)
    assert not hdr["ok"] and hdr["error"]["code"] == "bad_request", hdr
    assert named in hdr["error"]["message"]
    assert sorted(p.name for p in c.dir.iterdir()) == before
    # and an existing file is left as it was
    files = c.tohdf([name], path, datasets=["x"], file_type=file_type)
    stamps = [(c.dir / f).read_bytes() for f in files]
    hdr, _ = c.raw("tohdf", names=[name], datasets=["y"], path=path, file_type=file_type,
                   mode="append", **args)
    assert hdr["error"]["code"] == "bad_request"
    assert [(c.dir / f).read_bytes() for f in files] == stamps


# ---- files compressed by h5py ----------------------------------------------------------------

@pytest.mark.parametrize("locales", LOCALE_COUNTS)
def test_read_h5py_compressed(conns, locales):
    c = conns[locales]
    rng = np.random.default_rng(3)
    ints = rng.integers(-5000, 5000, 123457).astype("<i8")
    floats = rng.standard_normal(54321).astype("<f4")
    small = rng.integers(0, 9, 99999).astype("u1")
    flags = rng.random(4321) < 0.5
    strs = words(30001, 4)
    raw = b"".join(s.encode() + b"\0" for s in strs)
    offsets = np.cumsum([0] + [len(s) + 1 for s in strs])[:-1].astype("<i8")
    path = unique("h5py") + ".h5"
    with h5py.File(c.dir / path, "w") as h:
        # chunks that match neither h5ark's nor the shards
        h.create_dataset("ints", data=ints, chunks=(1000,), compression="gzip", shuffle=True)
        h.create_dataset("floats", data=floats, chunks=(777,), compression="gzip",
                         compression_opts=9)  # gzip without shuffle
        h.create_dataset("small", data=small, chunks=(4096,), compression="gzip", shuffle=True)
        h.create_dataset("flags", data=flags, chunks=(100,), compression="gzip")
        g = h.create_group("s")
        g.attrs["ObjType"] = 2
        g.create_dataset("values", data=np.frombuffer(raw, "u1"), chunks=(5000,),
                         compression="gzip", shuffle=True)
        g.create_dataset("segments", data=offsets, chunks=(3000,), compression="gzip",
                         shuffle=True)
    got = c.readhdf([path])
    assert c.fetch(got["ints"]["name"])["data"] == ints.tolist()
    assert got["floats"]["dtype"] == "float32"
    assert c.fetch(got["floats"]["name"])["data"] == floats.tolist()
    assert c.fetch(got["small"]["name"])["data"] == small.tolist()
    assert got["flags"]["dtype"] == "bool"
    assert c.fetch(got["flags"]["name"])["data"] == flags.tolist()
    assert c.fetch(got["s"]["name"]) == strs
    # and h5ark's own compressed files, written with another locale count, read back here
    other = conns[LOCALE_COUNTS[(LOCALE_COUNTS.index(locales) + 1) % len(LOCALE_COUNTS)]]
    out = unique("cross") + ".h5"
    files = other.tohdf([other.put(ints)], out, datasets=["ints"], compression="gzip")
    for f in files:
        (c.dir / f).write_bytes((other.dir / f).read_bytes())
    assert c.fetch(c.readhdf(files, ["ints"])["ints"]["name"])["data"] == ints.tolist()


# ---- reading deflated chunks without HDF5 -------------------------------------------------

# readhdf inflates chunks of deflate or shuffle + deflate datasets itself (libdeflate, on the
# locales); anything else about a chunk (a filter skipped, a stream that is not a whole
# chunk's) is left to HDF5, which reads it or says what is wrong.

@pytest.mark.parametrize("locales", LOCALE_COUNTS)
def test_ranged_reads_of_compressed(conns, locales):
    """Rows [a, b) of a compressed dataset, across chunk and file edges, each locale
    inflating only the chunks that hold its rows."""
    c = conns[locales]
    per = CHUNK_BYTES // 8
    data = sample("int64", 3 * per + 123, 21)
    files = c.tohdf([c.put(data)], unique("rng") + ".h5", datasets=["x"],
                    file_type="distribute", compression="gzip")
    for a, b in ((0, data.size), (1, 2), (per - 1, per + 1), (per + 5, 3 * per + 100),
                 (data.size - 1, data.size), (17, 2 * per + 17)):
        got = c.readhdf(files, ["x"], start=a, stop=b)["x"]
        assert c.fetch(got["name"])["data"] == data[a:b].tolist(), (a, b)


def test_narrow_compressed_integers_widened(conns):
    """int32 segments and int8 codes, compressed by h5py, read as int64 (widened in place
    after inflating), and values without shuffle."""
    c = conns[2]
    strs = words(40001, 8)
    raw = b"".join(s.encode() + b"\0" for s in strs)
    offsets = np.cumsum([0] + [len(s) + 1 for s in strs])[:-1].astype("<i4")
    codes = np.random.default_rng(2).integers(0, 3, 70001).astype("i1")
    path = unique("narrow") + ".h5"
    with h5py.File(c.dir / path, "w") as h:
        g = h.create_group("s")
        g.attrs["ObjType"] = 2
        g.create_dataset("values", data=np.frombuffer(raw, "u1"), chunks=(7000,),
                         compression="gzip")
        g.create_dataset("segments", data=offsets, chunks=(3333,), compression="gzip",
                         shuffle=True)
        h.create_dataset("codes", data=codes, chunks=(1000,), compression="gzip", shuffle=True)
    got = c.readhdf([path])
    assert c.fetch(got["s"]["name"]) == strs
    assert c.fetch(got["codes"]["name"])["data"] == codes.tolist()


def test_chunks_left_to_hdf5(conns):
    """A chunk stored with its deflate skipped (filter mask 2: shuffled only), beside deflated
    ones, reads back through HDF5."""
    c = conns[3]
    data = np.arange(30000, dtype="<i8") * 5
    path = unique("mask") + ".h5"
    with h5py.File(c.dir / path, "w") as h:
        d = h.create_dataset("x", shape=data.shape, dtype="<i8", chunks=(10000,),
                             compression="gzip", shuffle=True)
        for at in range(0, data.size, 10000):
            part = np.ascontiguousarray(data[at:at + 10000].view("u1").reshape(-1, 8).T)
            if at == 10000:
                d.id.write_direct_chunk((at,), part.tobytes(), filter_mask=2)
            else:
                d.id.write_direct_chunk((at,), zlib.compress(part.tobytes(), 4))
    with h5py.File(c.dir / path, "r") as h:
        assert np.array_equal(h["x"][()], data)
    assert c.fetch(c.readhdf([path], ["x"])["x"]["name"])["data"] == data.tolist()


@pytest.mark.parametrize("damage", ["flipped", "short", "truncated"])
def test_damaged_streams(conns, damage):
    """A stream whose bytes were changed, one that inflates to less than a chunk (HDF5 would
    give whatever its buffer held for the rest) and one cut short: schema_error naming the
    file and dataset; the daemon goes on serving."""
    c = conns[2]
    data = sample("int64", 30000, 4)
    path = unique("bad") + ".h5"
    with h5py.File(c.dir / path, "w") as h:
        d = h.create_dataset("x", shape=data.shape, dtype="<i8", chunks=(10000,),
                             compression="gzip", shuffle=True)
        for at in range(0, data.size, 10000):
            plain = np.ascontiguousarray(data[at:at + 10000].view("u1").reshape(-1, 8).T)
            stream = zlib.compress(plain.tobytes(), 4)
            if at == 10000:
                if damage == "flipped":
                    stream = stream[:200] + bytes(b ^ 0x5A for b in stream[200:400]) + stream[400:]
                elif damage == "short":
                    stream = zlib.compress(plain.tobytes()[:50000], 4)
                else:
                    stream = stream[:len(stream) // 2]
            d.id.write_direct_chunk((at,), stream)
    hdr, _ = c.raw("readhdf", paths=[path], datasets=["x"])
    assert not hdr["ok"] and hdr["error"]["code"] == "schema_error", hdr
    msg = hdr["error"]["message"]
    assert path in msg and "'x'" in msg and "damaged" in msg, msg
    # rows in the good chunks only are read
    got = c.readhdf([path], ["x"], start=20000, stop=30000)["x"]
    assert c.fetch(got["name"])["data"] == data[20000:].tolist()
    c.tohdf([c.put(data)], path, datasets=["x"], file_type="single", compression="gzip")
    assert c.fetch(c.readhdf([path], ["x"])["x"]["name"])["data"] == data.tolist()


# ---- the Python client -----------------------------------------------------------------------

def test_python_client(daemon, client):
    import h5ark
    data = np.arange(400001, dtype=np.int64) % 1000
    a = client.array(data)
    path = unique("client") + ".h5"
    res = client.to_hdf({"a": a}, path, file_type="single", compression="gzip",
                        compression_level=7)
    with h5py.File(daemon.data_dir / res["files"][0], "r") as h:
        check_compressed(h["a"], 7, data.size)
        assert np.array_equal(h["a"][()], data)
    res = a.to_hdf(unique("obj") + ".h5", file_type="single", compression="gzip")
    with h5py.File(daemon.data_dir / res["files"][0], "r") as h:
        check_compressed(h[a.name], 4, data.size)
    back = client.read_hdf(path)["a"]
    assert np.array_equal(back.to_ndarray(), data)
    with pytest.raises(h5ark.H5arkError, match="compression_level"):
        client.to_hdf({"a": a}, unique("x") + ".h5", compression="gzip", compression_level=12)
