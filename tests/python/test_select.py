"""take, slice, assign, concatenate, unique, broadcast and segmented_reduce (protocol/
PROTOCOL.md, "Selection and segments") on a real daemon, at one rank and at two: through the
native protocol, the Python client and the C client, values checked against numpy."""
import os
import re
import subprocess

import numpy as np
import pytest

import h5ark
from daemons import MPIRUN, Daemon, mpi_build
from wire import request

CLIENT_TEST = os.environ.get("H5ARK_CLIENT_TEST", "build/client/c/test_h5ark_client")


@pytest.fixture(scope="module", params=["R1", "R2"])
def endpoint(request, daemon):
    """The module's one-rank daemon, or one of two ranks under mpirun."""
    if request.param == "R1":
        yield daemon.endpoint
        return
    if MPIRUN is None or not mpi_build():
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    d = Daemon(ranks=2, locales=2)
    yield d.endpoint
    d.cleanup()


@pytest.fixture
def c(endpoint):
    client = h5ark.connect(endpoint, timeout=60)
    yield client
    client.clear()
    client.close()


def native(endpoint, cmd, **args):
    hdr, frames = request(endpoint, {"v": 1, "id": 7, "cmd": cmd, "args": args})
    return hdr, frames


def native_error(endpoint, cmd, code, *mentions, **args):
    hdr, _ = native(endpoint, cmd, **args)
    assert not hdr["ok"], hdr
    assert hdr["error"]["code"] == code, hdr["error"]
    for m in mentions:
        assert m in hdr["error"]["message"], hdr["error"]
    return hdr["error"]["message"]


RNG = np.random.default_rng(7)


def test_native_wire(endpoint, c):
    """Each command answers {"object": desc} (unique: its parts) over the raw protocol, and
    refuses what it does not take with the codes the document gives."""
    a = c.array(np.arange(10, dtype=np.int64) * 3)
    idx = c.array(np.array([9, -10], dtype=np.int64))
    hdr, _ = native(endpoint, "take", array=a.name, index=idx.name, name="picked")
    assert hdr["ok"], hdr
    desc = hdr["result"]["object"]
    assert (desc["name"], desc["dtype"], desc["size"]) == ("picked", "int64", 2)
    np.testing.assert_array_equal(c.info("picked")[0].to_ndarray(), [27, 0])
    hdr, _ = native(endpoint, "unique", keys=[a.name], groups=True)
    assert set(hdr["result"]) == {"permutation", "segments", "unique_key_idx"}
    hdr, _ = native(endpoint, "unique", keys=[a.name])
    assert set(hdr["result"]) == {"unique_key_idx"}
    native_error(endpoint, "take", "bad_request", "unknown argument 'idx'", array=a.name,
                 idx=idx.name)
    native_error(endpoint, "take", "not_found", "'index'", array=a.name, index="nothing_here")
    native_error(endpoint, "take", "bad_request", "out of bounds",
                 array=a.name, index=c.array(np.array([10])).name)
    native_error(endpoint, "take", "type_error", "integer or bool",
                 array=a.name, index=c.array(np.array([1.0])).name)
    native_error(endpoint, "take", "bad_request", "bool index",
                 array=a.name, index=c.array(np.array([True])).name)
    native_error(endpoint, "slice", "bad_request", "step is 0", array=a.name, start=0, stop=2,
                 step=0)
    native_error(endpoint, "slice", "bad_request", "outside", array=a.name, start=-5, stop=4)
    native_error(endpoint, "slice", "bad_request", "missing argument 'stop'", array=a.name,
                 start=0)
    native_error(endpoint, "assign", "bad_request", "not both", array=a.name, index=idx.name,
                 values=a.name, value=1)
    native_error(endpoint, "assign", "bad_request", "not neither", array=a.name,
                 index=idx.name)
    native_error(endpoint, "assign", "bad_request", "2 values for 10 positions",
                 array=a.name, index=c.array(np.ones(10, dtype=bool)).name, values=idx.name)
    native_error(endpoint, "assign", "type_error", "not a int64", array=a.name,
                 index=idx.name, value=2.5)
    native_error(endpoint, "concatenate", "bad_request", "names nothing", names=[])
    native_error(endpoint, "concatenate", "type_error", "one dtype",
                 names=[a.name, c.array(np.array([1.5])).name])
    native_error(endpoint, "unique", "bad_request", "'order'", keys=[a.name], order="hash")
    native_error(endpoint, "unique", "bad_request", "differ in length",
                 keys=[a.name, idx.name])
    native_error(endpoint, "broadcast", "bad_request", "out of order", segments=idx.name,
                 values=idx.name, size=10)
    native_error(endpoint, "segmented_reduce", "bad_request", "not served",
                 values=a.name, segments=c.array(np.array([0])).name, op="median")
    # nothing failed took the daemon or the array with it
    np.testing.assert_array_equal(a.to_ndarray(), np.arange(10) * 3)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "float64", "bool", "str"])
def test_take_and_slice(c, dtype):
    n = 257
    if dtype == "str":
        data = np.array([f"w{i}" * (i % 4) for i in range(n)], dtype=object)
    else:
        data = (RNG.integers(0, 200, n) if dtype != "float64" else RNG.normal(size=n)).astype(
            dtype)
    a = c.array(list(data) if dtype == "str" else data)

    def fetch(obj):
        got = obj.to_ndarray()
        return np.array(list(got), dtype=object) if dtype == "str" else got

    pos = RNG.integers(-n, n, 500)
    np.testing.assert_array_equal(fetch(c.take(a, c.array(pos))), data[pos])
    mask = RNG.random(n) < 0.3
    np.testing.assert_array_equal(fetch(c.take(a, c.array(mask))), data[mask])
    np.testing.assert_array_equal(fetch(c.take(a, c.array(np.zeros(0, np.int64)))), data[:0])
    for s in (slice(3, 200, 7), slice(None, None, -1), slice(250, 2, -13), slice(5, 5),
              slice(None, None, 1000)):
        start, stop, step = s.indices(n)
        np.testing.assert_array_equal(fetch(c.slice(a, start, stop, step)), data[s])


@pytest.mark.parametrize("where", ["first", "last", "ends", "middle", "none", "all"])
def test_mask_positions_where_they_fall(c, where):
    """A mask's positions are made by the rank holding its rows and kept by the rank holding
    those rows of the result: trues all in one rank's rows, at both ends, none or all give
    the rows numpy gives, for take and for assign; and of integer positions out of bounds,
    the first is the one named, whichever rank holds it."""
    n = 1001
    i = np.arange(n)
    mask = {"first": i < 300, "last": i >= 640, "ends": (i < 50) | (i > 900),
            "middle": (i > 400) & (i < 560), "none": i < 0, "all": i >= 0}[where]
    data = i * 7 - 3
    a = c.array(data)
    np.testing.assert_array_equal(c.take(a, c.array(mask)).to_ndarray(), data[mask])
    c.array(data, name="target")
    c.assign("target", c.array(mask), value=-1)
    want = data.copy()
    want[mask] = -1
    np.testing.assert_array_equal(c.info("target")[0].to_ndarray(), want)
    pos = np.arange(n, dtype=np.int64)
    pos[[100, 990]] = [-2000, 5000]
    with pytest.raises(h5ark.BadRequestError, match="index -2000 is out of bounds for 1001 rows"):
        c.take(a, c.array(pos))
    pos[100] = 0
    with pytest.raises(h5ark.BadRequestError, match="index 5000 is out of bounds for 1001 rows"):
        c.take(a, c.array(pos))


def test_assign(c):
    base = RNG.integers(-1000, 1000, 300).astype(np.int32)
    a = c.array(base, name="target")
    pos = RNG.integers(-300, 300, 400)  # repeats: the last one written wins, as numpy
    vals = RNG.normal(scale=100, size=400)
    got = c.assign(a, c.array(pos), values=c.array(vals))
    want = base.copy()
    want[pos] = vals.astype(np.int32)
    assert got.name == "target" and got.dtype == np.int32
    np.testing.assert_array_equal(c.info("target")[0].to_ndarray(), want)
    mask = RNG.random(300) < 0.5
    c.assign("target", c.array(mask), value=-7)
    want[mask] = -7
    np.testing.assert_array_equal(c.info("target")[0].to_ndarray(), want)
    for dtype, value in (("bool", True), ("uint64", 2**64 - 1), ("float32", 0.25)):
        b = c.array(np.zeros(6, dtype=dtype))
        c.assign(b, c.array(np.array([1, -1])), value=value)
        want_b = np.zeros(6, dtype=dtype)
        want_b[[1, -1]] = value
        np.testing.assert_array_equal(c.info(b.name)[0].to_ndarray(), want_b)
    with pytest.raises(h5ark.ObjectTypeError, match="not a uint64"):
        c.assign(c.array(np.zeros(2, np.uint64)), c.array(np.array([0])), value=-1)
    with pytest.raises(h5ark.ObjectTypeError, match="not a bool"):
        c.assign(c.array(np.zeros(2, bool)), c.array(np.array([0])), value=2)


def test_concatenate(c):
    parts = [RNG.normal(size=k) for k in (0, 5, 301, 1)]
    got = c.concatenate([c.array(p) for p in parts], name="joined")
    assert got.name == "joined"
    np.testing.assert_array_equal(got.to_ndarray(), np.concatenate(parts))
    with pytest.raises(h5ark.ObjectTypeError, match="one dtype"):
        c.concatenate([c.array(parts[1]), c.array(np.arange(2))])
    with pytest.raises(h5ark.NotFoundError):
        c.concatenate([c.array(parts[1]), "no_such_part"])


def test_unique(c):
    keys = RNG.integers(0, 40, 1000)
    other = RNG.integers(0, 3, 1000).astype(np.uint8)
    k, o = c.array(keys), c.array(other)
    u = c.unique(k, groups=True)
    perm = u["permutation"].to_ndarray()
    segs = u["segments"].to_ndarray()
    uki = u["unique_key_idx"].to_ndarray()
    np.testing.assert_array_equal(perm, np.argsort(keys, kind="stable"))
    values, first = np.unique(keys, return_index=True)
    np.testing.assert_array_equal(uki, first)
    np.testing.assert_array_equal(keys[perm[segs]], values)
    pairs = sorted(set(zip(keys.tolist(), other.tolist())))
    uki2 = c.unique([k, o])["unique_key_idx"].to_ndarray()
    assert list(zip(keys[uki2].tolist(), other[uki2].tolist())) == pairs
    words = ["string 10", "string 2", "b", "string 2", "a"]
    s = c.array(words)
    by_bytes = c.unique(s)["unique_key_idx"].to_ndarray()
    assert [words[i] for i in by_bytes] == sorted(set(words))
    arkouda = c.unique(s, order="arkouda")["unique_key_idx"].to_ndarray()
    assert [words[i] for i in arkouda] == ["a", "b", "string 2", "string 10"]


def test_broadcast_and_segmented_reduce(c):
    keys = RNG.integers(0, 25, 600)
    u = c.unique(c.array(keys), groups=True)
    perm = u["permutation"].to_ndarray()
    segs = u["segments"].to_ndarray()
    per_group = RNG.normal(size=len(segs))
    sizes = np.diff(np.append(segs, len(keys)))
    out = c.broadcast(u["segments"], c.array(per_group), len(keys))
    np.testing.assert_array_equal(out.to_ndarray(), np.repeat(per_group, sizes))
    back = c.broadcast(u["segments"], c.array(per_group), len(keys),
                       permutation=u["permutation"]).to_ndarray()
    want = np.empty(len(keys))
    want[perm] = np.repeat(per_group, sizes)
    np.testing.assert_array_equal(back, want)
    with pytest.raises(h5ark.BadRequestError, match="permutation entry"):
        c.broadcast(u["segments"], c.array(per_group), len(keys),
                    permutation=c.array(np.full(len(keys), len(keys))))

    vals = RNG.integers(-50, 50, 1000)
    cuts = np.sort(RNG.integers(0, 1000, 40))
    cuts[0] = 0
    cuts[5] = cuts[6]  # an empty segment
    groups = np.split(vals, cuts[1:])
    v, sg = c.array(vals), c.array(cuts)
    for op, ref in (("sum", np.sum), ("count", len), ("nunique", lambda g: np.unique(g).size)):
        np.testing.assert_array_equal(c.segmented_reduce(v, sg, op).to_ndarray(),
                                      [ref(g) for g in groups])
    full = [i for i, g in enumerate(groups) if g.size]
    for op, ref in (("min", np.min), ("max", np.max), ("mean", np.mean)):
        got = c.segmented_reduce(v, sg, op).to_ndarray()
        np.testing.assert_allclose(got[full], [ref(groups[i]) for i in full])
    b = c.array(vals > 0)
    bgroups = np.split(vals > 0, cuts[1:])
    np.testing.assert_array_equal(c.segmented_reduce(b, sg, "any").to_ndarray(),
                                  [g.any() for g in bgroups])
    np.testing.assert_array_equal(c.segmented_reduce(b, sg, "all").to_ndarray(),
                                  [g.all() for g in bgroups])
    f = c.array(np.where(vals > 40, np.nan, vals / 2))
    np.testing.assert_array_equal(c.segmented_reduce(f, sg, "count", skip_nan=True)
                                  .to_ndarray(), [g.size for g in groups])
    with pytest.raises(h5ark.BadRequestError, match="skip_nan"):
        c.segmented_reduce(f, sg, "sum", skip_nan=True)
    with pytest.raises(h5ark.ObjectTypeError, match="bool"):
        c.segmented_reduce(v, sg, "any")
    with pytest.raises(h5ark.BadRequestError, match="out of order"):
        c.segmented_reduce(v, c.array(np.array([0, 9, 3])), "sum")


def test_c_client(endpoint):
    if not os.access(CLIENT_TEST, os.X_OK):
        pytest.fail(f"test_h5ark_client not found at {CLIENT_TEST}: build or set H5ARK_CLIENT_TEST")
    proc = subprocess.run([CLIENT_TEST, endpoint, "select"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"[1-9]\d* checks, 0 failed", proc.stdout), proc.stdout
