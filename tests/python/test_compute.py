"""Numeric compute as native commands (protocol/PROTOCOL.md, "Numeric compute"): binop,
cast, fill, reduce and cumsum on a real daemon, through the wire, the Python client and the
C client, every value checked against numpy."""
import itertools
import os
import re
import subprocess
import warnings

import numpy as np
import pytest

from daemons import MPIRUN, Daemon, mpi_build
from wire import request

DTYPES = ("int64", "uint64", "float64", "bool")
N = 1001  # over the daemon's three locales, unevenly
rng = np.random.default_rng(7)


def sample(dtype, zeros=True):
    """Values of dtype with zeros among them (integer // and % by 0), small enough that
    powers and products stay exact where numpy's would."""
    if dtype == "bool":
        return rng.integers(0, 2, N).astype(bool)
    if dtype == "float64":
        return rng.integers(-40, 40, N) / 4.0
    lo = 0 if dtype == "uint64" else -40
    v = rng.integers(lo, 40, N).astype(dtype)
    if not zeros:
        v[v == 0] = 3
    return v


def numpy_binop(op, x, y):
    """numpy's result of x op y, with Arkouda's integer division by 0 (0, as numpy gives)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if x.dtype == bool and y.dtype == bool and op in ("-", "/", "//", "%", "**", "<<", ">>"):
            # numpy refuses or floats some of these for bools; the daemon computes them as int64
            x, y = x.astype(np.int64), y.astype(np.int64)
            if op == "/":
                return x / y
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
                "//": np.floor_divide, "%": np.mod, "**": np.power, "==": np.equal,
                "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
                ">=": np.greater_equal, "&": np.bitwise_and, "|": np.bitwise_or,
                "^": np.bitwise_xor, "<<": np.left_shift, ">>": np.right_shift}[op](x, y)


def kind(dtype):
    return {"b": "bool", "u": "uint64", "f": "float64"}.get(np.dtype(dtype).kind, "int64")


def mixed_int(da, db):
    return {kind(da), kind(db)} == {"int64", "uint64"}


@pytest.fixture
def wire(daemon):
    def call(cmd, **args):
        hdr, frames = request(daemon.endpoint, {"v": 1, "cmd": cmd, "args": args})
        return hdr

    def ok(cmd, **args):
        hdr = call(cmd, **args)
        assert hdr["ok"], hdr
        return hdr["result"]

    def fail(cmd, code, words, **args):
        hdr = call(cmd, **args)
        assert not hdr["ok"] and hdr["error"]["code"] == code, hdr
        assert words in hdr["error"]["message"], hdr
        return hdr["error"]["message"]

    call.ok, call.fail = ok, fail
    return call


OPS = ("+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "&", "|", "^",
       "<<", ">>")


@pytest.mark.parametrize("da,db", itertools.product(DTYPES, DTYPES))
def test_binop_arrays(client, wire, da, db):
    """Every operator of two arrays of each pair of dtypes: numpy's dtype and values."""
    x, y = sample(da), sample(db)
    if db != "bool":
        y = np.abs(y) % 5 if db != "float64" else y  # small non-negative exponents and shifts
    a, b = client.array(x), client.array(y)
    for op in OPS:
        if op in ("&", "|", "^", "<<", ">>") and ("float64" in (da, db) or mixed_int(da, db)):
            assert wire.fail("binop", "type_error", op, op=op, a=a.name, b=b.name)
            continue
        want = numpy_binop(op, x, y)
        if op in ("<<", ">>") and "bool" in (da, db) and want.dtype == bool:
            want = want.astype(np.int64)
        desc = wire.ok("binop", op=op, a=a.name, b=b.name)["object"]
        got = client.info([desc["name"]])[0].to_ndarray()
        assert got.dtype == want.dtype, (op, da, db, got.dtype, want.dtype)
        if op == "**" and want.dtype == np.float64:  # libm's pow and numpy's differ in an ulp
            np.testing.assert_allclose(got, want, rtol=1e-15, err_msg=f"{da} {op} {db}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{da} {op} {db}")
        client.delete(desc["name"])


@pytest.mark.parametrize("da", DTYPES)
def test_binop_scalars(client, wire, da):
    """An array and a scalar of each kind, on either side (reverse)."""
    x = sample(da)
    a = client.array(x)
    scalars = {"int64": np.int64(3), "uint64": np.uint64(3), "float64": np.float64(2.5),
               "bool": np.bool_(True)}
    for (sk, s), op, reverse in itertools.product(scalars.items(), ("+", "*", "//", "<", "-"),
                                                  (False, True)):
        if mixed_int(da, sk) or (sk == da == "bool" and op in ("-", "//")):
            continue
        want = numpy_binop(op, np.full(N, s), x) if reverse else numpy_binop(op, x, np.full(N, s))
        got = client.binop(a, op, s, reverse=reverse).to_ndarray()
        assert got.dtype == want.dtype, (da, op, sk, reverse, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{da} {op} {sk} {reverse}")
    # the value's own kind without value_dtype: a large integer is uint64, a float float64
    u = client.array(np.arange(5, dtype=np.uint64))
    got = client.binop(u, "+", 2**63).to_ndarray()
    np.testing.assert_array_equal(got, np.arange(5, dtype=np.uint64) + np.uint64(2**63))
    desc = wire.ok("binop", op="-", a=a.name, value=1.5)["object"]
    assert desc["dtype"] == "float64"


def test_integer_division_by_zero(client):
    """Integer // and % by 0 give 0, as Arkouda's server (and numpy, with a warning) do;
    float division by 0 gives inf and NaN as numpy's."""
    x = np.array([7, -7, 0, 5, -3], dtype=np.int64)
    z = client.array(np.zeros(5, dtype=np.int64))
    a = client.array(x)
    assert client.binop(a, "//", z).to_ndarray().tolist() == [0] * 5
    assert client.binop(a, "%", z).to_ndarray().tolist() == [0] * 5
    assert client.binop(a, "//", 0).to_ndarray().tolist() == [0] * 5
    u = client.array(x.astype(np.uint64))
    assert client.binop(u, "%", np.uint64(0)).to_ndarray().tolist() == [0] * 5
    with np.errstate(all="ignore"):
        want = x / 0
    np.testing.assert_array_equal(client.binop(a, "/", z).to_ndarray(), want)
    # a negative integer power is 0 (numpy refuses it)
    assert client.binop(a, "**", -1).to_ndarray().tolist() == [0] * 5


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce(client, wire, dtype):
    x = sample(dtype)
    a = client.array(x)
    with np.errstate(all="ignore"):
        want = {"all": np.all(x), "any": np.any(x), "sum": np.sum(x), "prod": np.prod(x),
                "max": np.max(x), "min": np.min(x), "argmax": np.argmax(x),
                "argmin": np.argmin(x), "is_sorted": bool(np.all(x[:-1] <= x[1:]))}
    if dtype == "bool":
        want["sum"], want["prod"] = np.int64(want["sum"]), np.int64(want["prod"])
    for op, w in want.items():
        r = wire.ok("reduce", array=a.name, op=op)
        got = client.reduce(a, op)
        assert got == w and type(got) is np.dtype(r["dtype"]).type, (op, got, w)
        wdt = {"argmax": "int64", "argmin": "int64"}.get(op, np.asarray(w).dtype.name)
        assert r["dtype"] == wdt, (op, r, w)
    s = client.array(np.sort(x))
    assert client.reduce(s, "is_sorted")


def test_reduce_nan_and_empty(client, wire):
    x = np.array([1.0, np.nan, 7.0, np.nan, -2.0])
    a = client.array(x)
    assert np.isnan(client.reduce(a, "max")) and np.isnan(client.reduce(a, "min"))
    assert client.reduce(a, "argmax") == np.argmax(x) == 1
    assert client.reduce(a, "argmin") == np.argmin(x) == 1
    e = client.array(np.zeros(0, dtype=np.int64))
    for op in ("max", "min", "argmax", "argmin"):
        wire.fail("reduce", "bad_request", "empty", array=e.name, op=op)
    assert client.reduce(e, "sum") == 0 and client.reduce(e, "all")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum(client, dtype):
    x = sample(dtype)
    a = client.array(x)
    want = np.cumsum(x)  # int64 for bool and signed, uint64, float64
    got = client.cumsum(a).to_ndarray()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    got = client.cumsum(a, include_initial=True).to_ndarray()
    np.testing.assert_array_equal(got, np.concatenate([np.zeros(1, want.dtype), want]))


@pytest.mark.parametrize("src", DTYPES)
def test_cast(client, src):
    x = sample(src)
    a = client.array(x)
    for dst in ("int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float32",
                "float64", "bool"):
        want = x.astype(dst) if not (src == "float64" and dst.startswith("uint")) else \
            np.abs(x).astype(dst)
        b = client.array(np.abs(x)) if src == "float64" and dst.startswith("uint") else a
        got = client.cast(b, dst).to_ndarray()
        assert got.dtype == want.dtype, (src, dst)
        np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst}")


def test_fill(client, wire):
    a = client.array(np.arange(10, dtype=np.int64), name="filled")
    old = a.to_ndarray()
    b = client.fill(a, 7)
    assert b.name == "filled" and b.to_ndarray().tolist() == [7] * 10
    np.testing.assert_array_equal(old, np.arange(10))
    f = client.array(np.zeros(4))
    assert client.fill(f, 2.5).to_ndarray().tolist() == [2.5] * 4
    t = client.array(np.zeros(3, bool))
    assert client.fill(t, True).to_ndarray().tolist() == [True] * 3
    u = client.array(np.zeros(3, np.uint64))
    assert client.fill(u, 2**64 - 1).to_ndarray().tolist() == [2**64 - 1] * 3
    wire.fail("fill", "type_error", "int64", array="filled", value=2.5)
    wire.fail("fill", "type_error", "uint64", array=u.name, value=-1)
    wire.fail("fill", "type_error", "bool", array=t.name, value=1)
    assert client.info(["filled"])[0].to_ndarray().tolist() == [7] * 10  # unchanged


def test_limitbits(client, wire):
    """A bigint's values cut to their low bits, under its name; max_bits reported."""
    vals = [2**100 + 5, 3, 2**64 - 1, 2**130 - 1, 0]
    for bits in (70, 64, 3, 0, -1):
        big = client.array(vals, dtype="bigint", name="big")
        out = client.limit_bits(big, bits)
        assert out.name == "big" and out.max_bits == bits
        assert out.to_list() == [v & ((1 << bits) - 1) if bits >= 0 else v for v in vals], bits
        client.delete("big")
    big = client.array(vals, dtype="bigint", name="big")
    wire.fail("limitbits", "bad_request", "-1 or more", array="big", max_bits=-2)
    ints = client.array(np.arange(3))
    wire.fail("limitbits", "type_error", "bigint", array=ints.name, max_bits=3)
    wire.fail("limitbits", "not_found", "no object", array="nope", max_bits=3)
    assert client.info(["big"])[0].to_list() == vals  # unchanged by the failures


def test_bigint_compute_from_the_client(client):
    """The Python client's bigint compute: binop and assign go to bigint_binop and
    bigint_assign for a bigint handle or an int beyond 64 bits; bigint_full."""
    from h5ark import ObjectTypeError
    ints = client.array(np.arange(5))
    big = client.binop(ints, "+", 2**200)
    assert big.dtype == "bigint" and big.to_list() == [2**200 + i for i in range(5)]
    assert client.binop(big, "*", big).to_list() == [(2**200 + i) ** 2 for i in range(5)]
    assert client.binop(big, "-", 2**201, reverse=True).to_list() == [2**200 - i
                                                                        for i in range(5)]
    assert client.binop(big, ">=", 2**200 + 3).to_ndarray().tolist() == [False] * 3 + [True] * 2
    with pytest.raises(ObjectTypeError, match="negative"):
        client.binop(ints, "-", 2**200)
    zeros = client.bigint_full(5, name="z")
    idx = client.array(np.array([1, -1]))
    out = client.assign(zeros, idx, value=2**90)
    assert out.name == "z" and out.to_list() == [0, 2**90, 0, 0, 2**90]
    assert client.bigint_full(2, -1, max_bits=70).to_list() == [2**70 - 1] * 2
    assert client.fill(out, 2**65).to_list() == [2**65] * 5


def test_errors(client, wire, daemon):
    """Every bad request gets a clear error, publishes nothing and leaves the daemon serving."""
    a = client.array(np.arange(5, dtype=np.int64))
    short = client.array(np.arange(3, dtype=np.int64))
    f = client.array(np.arange(5, dtype=np.float64))
    s = client.array(["x", "y"])
    before = {o.name for o in client.info()}
    wire.fail("binop", "bad_request", "differ in size: 5 and 3", op="+", a=a.name, b=short.name)
    wire.fail("binop", "not_found", "no object", op="+", a=a.name, b="nope")
    wire.fail("binop", "not_found", "no object", op="+", a="nope", value=1)
    wire.fail("binop", "type_error", "numeric", op="+", a=s.name, b=s.name)
    wire.fail("binop", "bad_request", "operator", op="@", a=a.name, b=a.name)
    wire.fail("binop", "type_error", "float64", op="&", a=f.name, b=a.name)
    wire.fail("binop", "bad_request", "either", op="+", a=a.name, b=a.name, value=1)
    wire.fail("binop", "bad_request", "either", op="+", a=a.name)
    wire.fail("binop", "bad_request", "reverse", op="+", a=a.name, b=a.name, reverse=True)
    wire.fail("binop", "type_error", "value_dtype", op="+", a=a.name, value=1,
              value_dtype="str")
    wire.fail("binop", "type_error", "uint64", op="+", a=a.name, value=-1, value_dtype="uint64")
    wire.fail("binop", "bad_request", "missing", op="+")
    wire.fail("cast", "type_error", "dtype", array=a.name, dtype="str")
    wire.fail("cast", "type_error", "numeric", array=s.name, dtype="int64")
    wire.fail("reduce", "bad_request", "unknown op", array=a.name, op="median")
    wire.fail("reduce", "type_error", "numeric", array=s.name, op="sum")
    wire.fail("cumsum", "not_found", "no object", array="nope")
    wire.fail("fill", "not_found", "no object", array="nope", value=1)
    assert {o.name for o in client.info()} == before
    assert client.ping()


def test_read_token(start_daemon, tmp_path):
    """reduce creates nothing: a read token may run it; binop needs a write token."""
    tokens = tmp_path / "tokens"
    tokens.write_text("w-secret write\nr-secret read\n")
    d = start_daemon(locales=2, token_file=tokens, token="w-secret")

    def call(cmd, token, **args):
        return request(d.endpoint, {"v": 1, "cmd": cmd, "token": token, "args": args})[0]

    made = call("create", "w-secret", fill="arange", stop=10, dtype="int64")
    name = made["result"]["object"]["name"]
    r = call("reduce", "r-secret", array=name, op="sum")
    assert r["ok"] and r["result"]["value"] == 45, r
    r = call("binop", "r-secret", op="+", a=name, b=name)
    assert not r["ok"] and r["error"]["code"] == "unauthorized", r


def test_c_client(daemon):
    """The C library's compute calls (tests/c_client/test_client.c, test_compute)."""
    exe = os.environ.get("H5ARK_CLIENT_TEST", "build/client/c/test_h5ark_client")
    if not os.access(exe, os.X_OK):
        pytest.fail(f"test_h5ark_client not found at {exe}: build or set H5ARK_CLIENT_TEST")
    proc = subprocess.run([exe, daemon.endpoint, "compute"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"[1-9]\d* checks, 0 failed", proc.stdout), proc.stdout


def test_at_two_ranks():
    """The same commands at two ranks of two locales each give what one daemon gives:
    elementwise work on each rank's rows, reductions and running sums across the ranks."""
    if MPIRUN is None or not mpi_build():
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    import h5ark
    d = Daemon(locales=2, ranks=2)
    try:
        c = h5ark.connect(d.endpoint, timeout=60)
        x, y = sample("int64"), sample("float64")
        a, b = c.array(x), c.array(y)
        np.testing.assert_array_equal(c.binop(a, "*", b).to_ndarray(), x * y)
        np.testing.assert_array_equal(c.binop(a, "//", 7, reverse=True).to_ndarray(),
                                      numpy_binop("//", np.full(N, 7), x))
        np.testing.assert_array_equal(c.cast(b, "int32").to_ndarray(), y.astype(np.int32))
        for op in ("sum", "prod", "max", "argmin", "is_sorted", "any"):
            assert c.reduce(a, op) == numpy_reduce(op, x), op
        assert c.reduce(c.array(np.sort(y)), "is_sorted")
        np.testing.assert_array_equal(c.cumsum(b).to_ndarray(), np.cumsum(y))
        np.testing.assert_array_equal(c.cumsum(a, include_initial=True).to_ndarray(),
                                      np.concatenate([[0], np.cumsum(x)]))
        assert c.fill(a, -3).to_ndarray().tolist() == [-3] * N
        with pytest.raises(h5ark.BadRequestError, match="differ in size"):
            c.binop(a, "+", c.array(np.arange(3)))
        big = c.limit_bits(c.array([2**100 + 5, 7], dtype="bigint"), 65)
        assert big.to_list() == [5, 7]
        c.close()
    finally:
        d.cleanup()


def numpy_reduce(op, x):
    return {"sum": np.sum, "prod": np.prod, "max": np.max, "argmin": np.argmin,
            "any": np.any, "is_sorted": lambda v: bool(np.all(v[:-1] <= v[1:]))}[op](x)
