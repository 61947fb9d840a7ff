"""The h5ark Python package against a real daemon: every client method, every dtype, strings,
HDF5 round trips checked with h5py, error codes, auth and shutdown."""
import pathlib
import shutil
import threading
import time

import h5py
import numpy as np
import pytest

from conftest import block_bounds, edge_values, h5_strings, locale_file, project_version
from daemons import free_tcp_endpoint, TOOL_SLOWDOWN
from wire import unique

import h5ark
from h5ark import wire

LOCALES = 3  # the `daemon` fixture's locale count
NUMERIC_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                  "float32", "float64", "bool"]


def assert_bitwise_equal(got, want):
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


def read_h5_concat(files, dataset):
    """Concatenate one dataset over files with h5py."""
    parts = []
    for f in files:
        with h5py.File(f, "r") as h:
            parts.append(h[dataset][()])
    return np.concatenate(parts)


# -- connection -------------------------------------------------------------------------

def test_ping_and_config(client):
    assert client.ping() is True
    config = client.config()
    assert config["protocol"] == 1
    assert config["locales"] == LOCALES
    assert config["auth"] is False
    for key in ("version", "max_memory", "memory_used", "hdf5_version", "zmq_version"):
        assert key in config
    before = config["memory_used"]
    a = client.zeros(1 << 17, dtype="int64")
    assert client.config()["memory_used"] >= before + a.nbytes


def test_version_is_the_project_version(client):
    assert h5ark.__version__ == project_version() == client.config()["version"]


def test_connect_without_daemon_times_out(tmp_path):
    with pytest.raises(h5ark.ReplyTimeoutError) as info:
        h5ark.connect(f"ipc://{tmp_path}/nobody.sock", timeout=0.3)
    assert isinstance(info.value, TimeoutError)
    assert isinstance(info.value, h5ark.H5arkError)
    assert info.value.code == "timeout"
    assert "nothing answered" in info.value.message and "nobody.sock" in info.value.message


def test_nothing_answering_fails_fast(tmp_path):
    """With nothing at the endpoint, the first request fails after the connect timeout
    (default 2 s), not after the request timeout; the bound checked is loose on purpose."""
    assert h5ark.DEFAULT_CONNECT_TIMEOUT == 2
    for endpoint in (f"ipc://{tmp_path}/nobody.sock", free_tcp_endpoint()):
        with h5ark.Client(endpoint) as c:
            assert (c.timeout, c.connect_timeout) == (h5ark.DEFAULT_TIMEOUT, 2)
            start = time.monotonic()
            with pytest.raises(h5ark.ReplyTimeoutError) as info:
                c.zeros(3)
            assert time.monotonic() - start < 10
        message = info.value.message
        assert endpoint in message and "nothing answered" in message, message
        assert "within 2 s" in message and "is h5arkd running there" in message, message
    start = time.monotonic()
    with pytest.raises(h5ark.ReplyTimeoutError) as info:
        h5ark.connect(f"ipc://{tmp_path}/nobody.sock", timeout=600, connect_timeout=1)
    assert time.monotonic() - start < 10
    assert "within 1 s" in info.value.message
    # without a connect timeout the request's own timeout applies
    with h5ark.Client(f"ipc://{tmp_path}/nobody.sock", timeout=0.5, connect_timeout=None) as c:
        with pytest.raises(h5ark.ReplyTimeoutError) as info:
            c.info()
    assert "within 0.5 s" in info.value.message


def test_reply_slower_than_connect_timeout(slow_daemon):
    """The connect timeout bounds the first contact only: once the daemon has answered, a
    request waits its whole timeout, and the contact is not made again unless a request
    times out."""
    d = slow_daemon(delay=1.5)
    with h5ark.Client(d.endpoint, connect_timeout=0.3) as c:
        assert c.info() == []
        assert c.info() == []
    assert d.pings == 1
    with h5ark.connect(d.endpoint, connect_timeout=0.3) as c:
        assert c.info() == []
    assert d.pings == 2
    # after a request timed out, the next one checks again that the daemon is there
    with h5ark.Client(d.endpoint, timeout=0.3, connect_timeout=5) as c:
        with pytest.raises(h5ark.ReplyTimeoutError, match="no reply to `info`"):
            c.info()
        c.timeout = 10
        assert c.info() == []
    assert d.pings == 4


def test_long_request_outlasts_connect_timeout(client, daemon):
    """A long first request on a fresh client with a short connect timeout succeeds."""
    big = client.uniform(4_000_000, seed=3)
    path = unique("slow") + ".h5"
    with h5ark.Client(daemon.endpoint, connect_timeout=0.1 * TOOL_SLOWDOWN, timeout=600) as c:
        c.to_hdf({"x": big.name}, path, file_type="single", compression="gzip",
                 compression_level=9)
    with h5py.File(daemon.data_dir / path, "r") as f:
        assert (f["x"][()] == big.to_ndarray()).all()


def test_strings_without_segments(client, daemon):
    """to_hdf(strings_segments=False): the strings' bytes alone, read back by their NULs."""
    words = ["x", "", "yz", "é"]
    s = client.array(words)
    path = unique("noseg") + ".h5"
    client.to_hdf({"w": s}, path, file_type="single", strings_segments=False)
    with h5py.File(daemon.data_dir / path, "r") as f:
        assert set(f["w"]) == {"values"}
        assert f["w/values"][()].tobytes() == "x\0\0yz\0é\0".encode()
    assert client.read_hdf(path)["w"].to_list() == words


def test_context_manager_closes(daemon):
    with h5ark.connect(daemon.endpoint) as c:
        assert c.ping()
        assert not c.closed
    assert c.closed
    with pytest.raises(h5ark.ConnectionClosedError):
        c.ping()


def test_module_functions_use_latest_client(daemon):
    first = h5ark.connect(daemon.endpoint)
    second = h5ark.connect(daemon.endpoint)
    assert h5ark.current_client() is second
    a = h5ark.arange(5)
    assert a._client is second
    assert h5ark.ping()
    assert h5ark.config()["locales"] == LOCALES
    assert h5ark.array([1, 2, 3]).to_list() == [1, 2, 3]
    assert h5ark.zeros(2).to_list() == [0.0, 0.0]
    assert h5ark.ones(2, dtype="int8").to_list() == [1, 1]
    assert h5ark.full(2, 7).to_list() == [7, 7]
    assert h5ark.linspace(0, 1, 3).to_list() == [0.0, 0.5, 1.0]
    assert h5ark.randint(0, 10, 4, seed=1).size == 4
    assert h5ark.uniform(4, seed=1).size == 4
    assert {o.name for o in h5ark.info()} >= {a.name}
    path = unique("module") + ".h5"
    h5ark.to_hdf({"a": a}, path, file_type="single")
    assert [e["name"] for e in h5ark.ls(path)] == ["a"]
    assert h5ark.read_hdf(path)["a"].to_list() == [0, 1, 2, 3, 4]
    assert a.name in h5ark.delete(a)
    assert h5ark.clear() >= 1
    h5ark.disconnect()
    assert second.closed and not first.closed
    with pytest.raises(h5ark.ConnectionClosedError):
        h5ark.zeros(3)
    first.close()


def test_stale_reply_is_dropped(client):
    # A reply to an earlier request (as after a timeout) must not be taken for the next one.
    with client._lock:
        client._socket.send(wire.pack_header({"v": 1, "id": 10 ** 9, "cmd": "getconfig"}))
    assert client.ping() is True
    assert client.config()["protocol"] == 1


def test_client_shared_by_threads(client):
    errors = []

    def work(seed):
        try:
            for i in range(10):
                data = np.arange(seed * 1000 + i, seed * 1000 + i + 500, dtype=np.int64)
                obj = client.array(data)
                assert np.array_equal(obj.to_ndarray(), data)
                obj.delete()
        except Exception as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# -- creation ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_zeros_ones_full(client, dtype):
    z, o = client.zeros(7, dtype=dtype), client.ones(7, dtype=dtype)
    assert z.dtype == np.dtype(dtype) and o.dtype == np.dtype(dtype)
    assert_bitwise_equal(z.to_ndarray(), np.zeros(7, dtype))
    assert_bitwise_equal(o.to_ndarray(), np.ones(7, dtype))
    edge = edge_values(dtype)[-1]
    f = client.full(5, edge, dtype=dtype)
    assert_bitwise_equal(f.to_ndarray(), np.full(5, edge, dtype))


def test_full_infers_dtype_and_keeps_special_values(client):
    assert client.full(3, 5).dtype == np.int64
    assert client.full(3, 2.5).dtype == np.float64
    assert client.full(3, True).to_list() == [True] * 3
    assert client.full(2, 2 ** 64 - 1, dtype="uint64").to_list() == [2 ** 64 - 1] * 2
    assert_bitwise_equal(client.full(2, -0.0).to_ndarray(), np.full(2, -0.0))
    assert np.isnan(client.full(2, float("nan")).to_ndarray()).all()


@pytest.mark.parametrize("args", [(10,), (2, 20, 3), (10, 0, -2), (5, 5), (-7, 7, 4), (0,)])
def test_arange(client, args):
    a = client.arange(*args)
    want = np.arange(*args, dtype=np.int64)
    assert a.size == want.size == len(a)
    assert_bitwise_equal(a.to_ndarray(), want)


@pytest.mark.parametrize("dtype", ["int32", "uint16", "float64"])
def test_arange_dtype(client, dtype):
    assert_bitwise_equal(client.arange(0, 12, 2, dtype=dtype).to_ndarray(),
                         np.arange(0, 12, 2, dtype=dtype))


def test_linspace(client):
    got = client.linspace(-1.0, 2.0, 13).to_ndarray()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.linspace(-1.0, 2.0, 13), rtol=0, atol=1e-15)
    assert got[0] == -1.0 and got[-1] == 2.0
    assert client.linspace(0, 1, 1).size == 1
    assert client.linspace(0, 1, 0).size == 0


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint32"])
def test_randint(client, dtype):
    a = client.randint(-3 if dtype.startswith("int") else 3, 17, 10000, dtype=dtype, seed=42)
    got = a.to_ndarray()
    assert a.dtype == np.dtype(dtype) and got.dtype == np.dtype(dtype)
    assert got.min() >= (-3 if dtype.startswith("int") else 3) and got.max() < 17
    assert len(np.unique(got)) > 10  # not a constant
    again = client.randint(-3 if dtype.startswith("int") else 3, 17, 10000, dtype=dtype,
                           seed=42).to_ndarray()
    assert np.array_equal(got, again)
    other = client.randint(-3 if dtype.startswith("int") else 3, 17, 10000, dtype=dtype,
                           seed=43).to_ndarray()
    assert not np.array_equal(got, other)


def test_uniform(client):
    got = client.uniform(20000, low=-2.0, high=5.0, seed=7).to_ndarray()
    assert got.dtype == np.float64
    assert got.min() >= -2.0 and got.max() < 5.0
    assert abs(got.mean() - 1.5) < 0.1
    assert np.array_equal(got, client.uniform(20000, -2.0, 5.0, seed=7).to_ndarray())
    assert not np.array_equal(got, client.uniform(20000, -2.0, 5.0, seed=8).to_ndarray())
    default = client.uniform(100).to_ndarray()
    assert default.min() >= 0.0 and default.max() < 1.0


# -- put / get round trips --------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_roundtrip_edge_values(client, dtype):
    want = edge_values(dtype)
    obj = client.array(want)
    assert isinstance(obj, h5ark.pdarray)
    assert obj.dtype == want.dtype
    assert obj.size == len(obj) == want.size
    assert obj.shape == (want.size,)
    assert obj.itemsize == want.itemsize
    assert obj.nbytes == want.nbytes
    assert_bitwise_equal(obj.to_ndarray(), want)
    assert len(obj.to_list()) == want.size


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_roundtrip_empty(client, dtype):
    obj = client.array(np.array([], dtype=dtype))
    assert obj.size == 0 and obj.dtype == np.dtype(dtype)
    assert_bitwise_equal(obj.to_ndarray(), np.array([], dtype=dtype))
    assert obj.to_list() == []


def test_roundtrip_multi_frame(client):
    # Several 1 MiB frames plus a ragged tail in both directions.
    want = np.random.default_rng(3).standard_normal((3 << 17) + 5)
    obj = client.array(want)
    assert_bitwise_equal(obj.to_ndarray(), want)
    ints = np.arange((5 << 18) + 3, dtype=np.uint16)
    assert_bitwise_equal(client.array(ints).to_ndarray(), ints)


def test_roundtrip_non_native_and_strided_inputs(client):
    big_endian = np.arange(10, dtype=">i4")
    assert_bitwise_equal(client.array(big_endian).to_ndarray(), np.arange(10, dtype="int32"))
    strided = np.arange(20, dtype=np.float32)[::3]
    assert_bitwise_equal(client.array(strided).to_ndarray(), strided.copy())


def test_array_from_lists(client):
    assert client.array([1, -2, 3]).dtype == np.int64
    assert client.array([1.5, 2]).dtype == np.float64
    assert client.array([True, False]).to_list() == [True, False]
    assert client.array([2 ** 64 - 1]).dtype == np.uint64
    assert client.array([2 ** 64 - 1, 0], dtype="uint64").to_list() == [2 ** 64 - 1, 0]
    assert client.array(range(4), dtype="uint8").to_ndarray().dtype == np.uint8
    assert client.array([]).dtype == np.float64


@pytest.mark.parametrize("bad", [np.zeros(3, np.complex128), np.zeros(3, np.float16),
                                 np.array(["2020-01-01"], dtype="datetime64[D]")])
def test_array_rejects_unsupported_dtypes(client, bad):
    with pytest.raises(TypeError):
        client.array(bad)


def test_array_rejects_bare_string_keeps_nul(client):
    with pytest.raises(TypeError):
        client.array("abc")
    # a NUL in a string is data (test_strings_nul.py has the round trips through files)
    assert client.array(["a\0b", "\0", "", "c\0"]).to_list() == ["a\0b", "\0", "", "c\0"]


def test_get_element_range(client):
    a = client.arange(100)
    assert_bitwise_equal(a.to_ndarray(10, 20), np.arange(10, 20))
    assert a.to_list(start=95) == [95, 96, 97, 98, 99]
    assert a.to_list(stop=3) == [0, 1, 2]
    assert a.to_list(50, 50) == []
    s = client.array(["zero", "one", "", "three", "four"])
    assert s.to_list(1, 4) == ["one", "", "three"]
    assert s.to_list(start=3) == ["three", "four"]


def test_wire_encoding_matches_protocol(client, call):
    # Check the client's encoding against raw protocol messages, not against itself.
    data = np.array([1, -2, 3 ** 20], dtype=np.int64)
    obj = client.array(data)
    hdr, frames = call("get", name=obj.name)
    assert hdr["ok"], hdr
    assert b"".join(bytes(f) for f in frames) == data.astype("<i8").tobytes()
    s = client.array(["ab", "", "ü"])
    hdr, frames = call("get", name=s.name)
    assert hdr["ok"], hdr
    blob = b"".join(bytes(f) for f in frames)
    by_name, pos = {}, 0
    for spec in hdr["buffers"]:
        by_name[spec["name"]] = blob[pos:pos + spec["nbytes"]]
        pos += spec["nbytes"]
    assert by_name["values"] == b"ab\0\0\xc3\xbc\0"
    assert np.frombuffer(by_name["segments"], "<i8").tolist() == [0, 3, 4]
    # And a raw put, odd frame split included, reads back through the client.
    raw = np.array([0.5, -0.0, np.inf], "<f8").tobytes()
    hdr, _ = call("put", frames=[raw[:5], raw[5:]], buffers=[{"name": "values", "nbytes": 24}],
                  objtype="pdarray", dtype="float64", shape=[3])
    assert hdr["ok"], hdr
    got = client.info([hdr["result"]["object"]["name"]])[0]
    assert_bitwise_equal(got.to_ndarray(), np.array([0.5, -0.0, np.inf]))


# -- strings ----------------------------------------------------------------------------

def test_strings_roundtrip(client):
    texts = ["", "a", "Grüße", "日本語テキスト", "emoji 🎉🚀", "", "tab\tnew\nline", " "]
    s = client.array(texts)
    assert isinstance(s, h5ark.Strings)
    assert s.dtype == "str" and s.objtype == "strings"
    assert s.size == len(s) == len(texts)
    assert s.shape == (len(texts),)
    assert s.to_list() == texts
    arr = s.to_ndarray()
    assert arr.dtype == object and list(arr) == texts
    assert client.array(np.array(texts)).to_list() == texts


def test_strings_empty_list(client):
    for empty in ([], np.array([], dtype=str)):
        s = client.array(empty, dtype="str") if isinstance(empty, list) else client.array(empty)
        assert isinstance(s, h5ark.Strings)
        assert s.size == 0
        assert s.to_list() == []
        assert s.to_ndarray().shape == (0,)


def test_strings_large(client):
    huge = "ß" * 40000 + "x" * 1000  # > 64 KiB of UTF-8
    many = [f"{i:06d}" * (i % 97) for i in range(4000)]  # > 1 MiB in total
    texts = ["first", huge, ""] + many + ["last"]
    s = client.array(texts)
    got = s.to_list()
    assert len(got) == len(texts)
    assert got[1] == huge and got == texts


def test_strings_all_empty(client):
    assert client.array(["", "", ""]).to_list() == ["", "", ""]


# -- registry ---------------------------------------------------------------------------

def test_info_delete_clear(client):
    client.clear()
    a, s = client.arange(4), client.array(["x", "yy"])
    objs = {o.name: o for o in client.info()}
    assert set(objs) == {a.name, s.name}
    assert isinstance(objs[s.name], h5ark.Strings) and isinstance(objs[a.name], h5ark.pdarray)
    (only,) = client.info([a.name])
    assert only.name == a.name and only.size == 4 and only.dtype == np.int64
    assert [o.name for o in client.info(s)] == [s.name]
    assert a.refresh().size == 4
    assert client.delete(a) == [a.name]
    with pytest.raises(h5ark.NotFoundError):
        a.refresh()
    b, c = client.zeros(1), client.zeros(1)
    assert sorted(client.delete(b.name, [c])) == sorted([b.name, c.name])
    assert s.delete() == [s.name]
    assert client.info() == []
    client.zeros(1), client.zeros(2)
    assert client.clear() == 2
    assert client.info() == []


def test_named_objects(client):
    name = unique("mine")
    a = client.array([1, 2], name=name)
    assert a.name == name
    assert client.zeros(3, name=name + "z").name == name + "z"
    with pytest.raises(h5ark.AlreadyExistsError) as info:
        client.array(["x"], name=name)
    assert info.value.code == "already_exists"
    assert client.info([name])[0].to_list() == [1, 2]


def test_repr_is_readable(client):
    a = client.arange(3)
    text = repr(a)
    assert a.name in text and "int64" in text and "pdarray" in text and "3" in text
    s = client.array(["q"])
    assert s.name in repr(s) and "str" in repr(s)
    assert client.endpoint in repr(client)


# -- errors -----------------------------------------------------------------------------

def test_not_found(client):
    missing = unique("missing")
    for action in (lambda: client.info([missing]), lambda: client.delete(missing),
                   lambda: client.get(missing), lambda: client.read_hdf(missing + ".h5"),
                   lambda: client.ls(missing + ".h5"),
                   lambda: client.to_hdf([missing], missing + ".h5")):
        with pytest.raises(h5ark.NotFoundError) as info:
            action()
        assert info.value.code == "not_found"
        assert isinstance(info.value, h5ark.H5arkError)
        assert info.value.message and str(info.value).startswith("not_found")


@pytest.mark.parametrize("path", ["../x.h5", "/tmp/h5ark_forbidden.h5", "sub/../../x.h5"])
def test_forbidden_paths(client, daemon, path):
    a = client.arange(3)
    for file_type in ("single", "distribute"):
        with pytest.raises(h5ark.ForbiddenError) as info:
            client.to_hdf({"a": a}, path, file_type=file_type)
        assert info.value.code == "forbidden"
    for action in (lambda: client.read_hdf(path), lambda: client.ls(path)):
        with pytest.raises(h5ark.ForbiddenError):
            action()
    outside = daemon.data_dir.parent
    assert not list(outside.glob("x*.h5"))
    assert not list(pathlib.Path("/tmp").glob("h5ark_forbidden*.h5"))


def test_forbidden_symlink(client, daemon):
    daemon.data_dir.mkdir(exist_ok=True)
    link = daemon.data_dir / unique("escape")
    link.symlink_to(daemon.data_dir.parent)
    with pytest.raises(h5ark.ForbiddenError):
        client.to_hdf({"a": client.arange(3)}, f"{link.name}/x.h5", file_type="single")
    assert not (daemon.data_dir.parent / "x.h5").exists()


def test_unknown_command_and_bad_arguments(client):
    with pytest.raises(h5ark.UnknownCommandError) as info:
        client.request("no_such_command")
    assert info.value.code == "unknown_command"
    with pytest.raises(h5ark.BadRequestError) as info:
        client.request("ping", {"bogus": 1})
    assert "bogus" in info.value.message
    with pytest.raises(h5ark.BadRequestError):
        client.request("create", {"fill": "zeros", "dtype": "int64"})  # no size
    with pytest.raises(h5ark.H5arkError) as info:
        client.zeros(3, dtype="complex128")
    assert info.value.code in ("bad_request", "type_error")
    with pytest.raises(h5ark.BadRequestError):
        # Payload sizes that disagree with the header.
        client.request("put", {"objtype": "pdarray", "dtype": "int64", "shape": [2]},
                       [("values", b"\0" * 15)])
    assert client.ping()


def test_error_classes():
    err = h5ark.errors.error_for("not_found", "no object 'x'")
    assert type(err) is h5ark.NotFoundError and err.code == "not_found"
    assert err.message == "no object 'x'" and str(err) == "not_found: no object 'x'"
    other = h5ark.errors.error_for("brand_new_code", "m")
    assert type(other) is h5ark.H5arkError and other.code == "brand_new_code"


def test_decode_buffers_any_split():
    rng = np.random.default_rng(0)
    a, b = np.arange(1000, dtype="<f8"), b"tail bytes"
    specs, frames = wire.encode_buffers([("a", a), ("empty", b""), ("b", b)])
    blob = b"".join(bytes(f) for f in frames)
    for _ in range(100):
        cuts = sorted(rng.choice(len(blob) + 1, size=rng.integers(0, 8)).tolist())
        parts = [blob[i:j] for i, j in zip([0] + cuts, cuts + [len(blob)])]
        out = wire.decode_buffers(specs, parts)
        assert np.array_equal(np.frombuffer(out["a"], "<f8"), a)
        assert bytes(out["empty"]) == b"" and bytes(out["b"]) == b
    with pytest.raises(h5ark.ProtocolError):
        wire.decode_buffers(specs, [blob[:-1]])


# -- HDF5 -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_hdf_roundtrip_dtypes(client, daemon, dtype, file_type):
    want = edge_values(dtype)
    path = unique(f"rt_{dtype}") + ".h5"
    result = client.array(want).to_hdf(path, dataset="vals", file_type=file_type)
    files = ([locale_file(path, i) for i in range(LOCALES)] if file_type == "distribute"
             else [path])
    assert sorted(result["files"]) == sorted(files)
    on_disk = read_h5_concat([daemon.data_dir / f for f in files], "vals")
    assert np.array_equal(on_disk.astype(want.dtype), want, equal_nan=want.dtype.kind == "f")
    with h5py.File(daemon.data_dir / files[0], "r") as h:
        assert h["vals"].attrs["ObjType"] == 1
        assert h.attrs["File_Format"] == (1 if file_type == "distribute" else 0)
        if dtype == "bool":
            assert h["vals"].attrs["isBool"] == 1
    pattern = f"{path[:-3]}_LOCALE*.h5" if file_type == "distribute" else path
    back = client.read_hdf(pattern)["vals"].to_ndarray()
    # The reader may widen narrow types (as Arkouda does); the values must survive exactly.
    assert back.dtype.kind == want.dtype.kind or want.dtype.kind == "u"
    assert_bitwise_equal(back.astype(want.dtype), want)


def test_hdf_distribute_layout(client, daemon):
    path = unique("layout") + ".h5"
    a = client.arange(10)
    s = client.array(["alpha", "", "gamma", "δέλτα", "e"])
    result = client.to_hdf({"nums": a, "words": s}, path)
    files = [locale_file(path, i) for i in range(LOCALES)]
    assert sorted(result["files"]) == files
    assert result.warnings == []
    for (lo, hi), f in zip(block_bounds(10, LOCALES), files):
        with h5py.File(daemon.data_dir / f, "r") as h:
            assert h["nums"][()].tolist() == list(range(lo, hi))
            assert h["nums"].dtype == np.int64
            assert h["words"].attrs["ObjType"] == 2
            assert h["words/segments"].dtype == np.int64
            segments = h["words/segments"][()]
            assert segments.size == 0 or segments[0] == 0  # each file restarts at 0
    assert h5_strings([daemon.data_dir / f for f in files], "words") == s.to_list()
    back = client.read_hdf(f"{path[:-3]}_LOCALE*.h5")
    assert set(back) == {"nums", "words"}
    assert back["nums"].to_list() == list(range(10))
    assert back["words"].to_list() == ["alpha", "", "gamma", "δέλτα", "e"]
    assert back.file_errors == []
    part = client.read_hdf(f"{path[:-3]}_LOCALE*.h5", start=1, stop=4)
    assert part["nums"].to_list() == [1, 2, 3]
    assert part["words"].to_list() == ["", "gamma", "δέλτα"]
    assert client.read_hdf(path[:-3] + "_LOCALE*.h5", "nums", start=8)["nums"].to_list() == [8, 9]


def test_hdf_single_file_strings_and_default_datasets(client, daemon):
    path = unique("single") + ".h5"
    s = client.array(["x" * 70000, "", "y"], name=unique("s"))
    result = client.to_hdf([s], path, file_type="single")
    assert result["files"] == [path]
    assert h5_strings([daemon.data_dir / path], s.name) == ["x" * 70000, "", "y"]
    assert client.read_hdf(path, datasets=[s.name])[s.name].to_list() == s.to_list()


def test_hdf_empty_arrays(client, daemon):
    path = unique("empty") + ".h5"
    client.to_hdf({"e": client.array(np.array([], np.float64)),
                   "t": client.array([], dtype="str"),
                   "one": client.array([4])}, path)
    for i in range(LOCALES):
        with h5py.File(daemon.data_dir / locale_file(path, i), "r") as h:
            assert h["e"].shape == (0,)
    back = client.read_hdf(f"{path[:-3]}_LOCALE*.h5", datasets=["one"])
    assert back["one"].to_list() == [4]


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_truncate_overwrites_and_warns(client, daemon, file_type):
    path = unique("trunc") + ".h5"
    client.to_hdf({"old": client.arange(6)}, path, file_type=file_type)
    with pytest.warns(h5ark.H5arkWarning):
        result = client.to_hdf({"new": client.arange(4)}, path, mode="truncate",
                               file_type=file_type)
    assert result.warnings
    names = [f for f in result["files"]]
    assert any(name in " ".join(result.warnings) for name in names)
    files = ([locale_file(path, i) for i in range(LOCALES)] if file_type == "distribute"
             else [path])
    for f in files:
        with h5py.File(daemon.data_dir / f, "r") as h:
            assert set(h.keys()) == {"new"}
    assert read_h5_concat([daemon.data_dir / f for f in files], "new").tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("file_type", ["distribute", "single"])
def test_append_mode(client, daemon, file_type):
    path = unique("app") + ".h5"
    first = client.to_hdf({"a": client.arange(5)}, path, file_type=file_type)
    second = client.to_hdf({"b": client.array(["p", "q"])}, path, mode="append",
                           file_type=file_type)
    assert sorted(second["files"]) == sorted(first["files"])
    assert second.warnings == []
    pattern = f"{path[:-3]}_LOCALE*.h5" if file_type == "distribute" else path
    back = client.read_hdf(pattern)
    assert back["a"].to_list() == list(range(5)) and back["b"].to_list() == ["p", "q"]
    with pytest.raises(h5ark.H5arkError) as info:
        client.to_hdf({"a": client.arange(2)}, path, mode="append", file_type=file_type)
    assert info.value.code == "already_exists"
    assert "a" in info.value.message
    # The refused append wrote nothing.
    assert client.read_hdf(pattern)["a"].to_list() == list(range(5))


def test_append_creates_missing_file(client, daemon):
    path = unique("newapp") + ".h5"
    client.to_hdf({"z": client.zeros(2)}, path, mode="append", file_type="single")
    assert (daemon.data_dir / path).exists()


def test_read_hdf_options(client, daemon):
    path = unique("opts") + ".h5"
    client.to_hdf({"n": client.arange(9), "s": client.array(["a", "bb", "", "ccc"])}, path)
    pattern = f"{path[:-3]}_LOCALE*.h5"
    only = client.read_hdf(pattern, datasets="n")
    assert list(only) == ["n"]
    assert client.read_hdf(pattern, datasets=["s"], calc_string_offsets=True)["s"].to_list() \
        == ["a", "bb", "", "ccc"]
    tagged = client.read_hdf(pattern, datasets=["n"], tag_data=True)
    assert tagged["n"].to_list() == list(range(9))
    assert list(tagged) == ["n", "Filename_Codes"]
    tags = tagged["Filename_Codes"].to_ndarray()
    assert tags.dtype == np.int64
    assert tags.tolist() == [b for b, (lo, hi) in enumerate(block_bounds(9, LOCALES))
                             for _ in range(lo, hi)]
    # A corrupt file among the matches: an error, or skipped and reported.
    junk = daemon.data_dir / locale_file(path, LOCALES)
    junk.write_bytes(b"this is not an HDF5 file" * 10)
    with pytest.raises(h5ark.H5arkError) as info:
        client.read_hdf(pattern)
    assert info.value.code in ("io_error", "schema_error")
    lenient = client.read_hdf(pattern, allow_errors=True)
    assert lenient["n"].to_list() == list(range(9))
    assert len(lenient.file_errors) == 1 and junk.name in lenient.file_errors[0]


def test_read_h5py_files_and_strict_types(client, daemon):
    daemon.data_dir.mkdir(exist_ok=True)
    base = unique("h5py")
    with h5py.File(daemon.data_dir / f"{base}_0.h5", "w") as h:
        h["v"] = np.array([1, -2, 3], dtype=np.int32)
        h["f"] = np.array([0.5, -0.0], dtype=np.float32)
        h["u"] = np.array([2 ** 64 - 1], dtype=np.uint64)
    with h5py.File(daemon.data_dir / f"{base}_1.h5", "w") as h:
        h["v"] = np.array([4, 5], dtype=np.int64)
    single = client.read_hdf(f"{base}_0.h5")
    assert single["v"].to_list() == [1, -2, 3] and single["v"].dtype.kind == "i"
    f = single["f"].to_ndarray()
    assert f.tolist() == [0.5, -0.0] and np.signbit(f[1])
    assert single["u"].to_list() == [2 ** 64 - 1] and single["u"].dtype == np.uint64
    with pytest.raises(h5ark.H5arkError) as info:
        client.read_hdf(f"{base}_*.h5", datasets=["v"], strict_types=True)
    assert info.value.code == "type_error"
    mixed = client.read_hdf(f"{base}_*.h5", datasets=["v"], strict_types=False)
    assert mixed["v"].to_list() == [1, -2, 3, 4, 5]


def test_read_arkouda_fixtures(client, daemon, arkouda_fixtures):
    daemon.data_dir.mkdir(exist_ok=True)
    sub = daemon.data_dir / unique("ak")
    sub.mkdir()
    for name in ("Legacy_String.hdf5", "array_v0_LOCALE0000.hdf5",
                 "UnitTestHDF5_noOffsets_LOCALE0000"):
        shutil.copy(arkouda_fixtures / name, sub / name)
    legacy = client.read_hdf(f"{sub.name}/Legacy_String.hdf5")
    assert list(legacy) == ["strings_array"]
    assert legacy["strings_array"].to_list() == ["ABC", "DEF", "GHI"]
    assert client.read_hdf(f"{sub.name}/array_v0_LOCALE0000.hdf5")["array"].to_list() \
        == list(range(50))
    assert client.read_hdf(f"{sub.name}/UnitTestHDF5_noOffsets_LOCALE0000")["strings"] \
        .to_list() == ["one", "two", "three", "four", "five"]


def test_ls(client):
    path = unique("ls") + ".h5"
    client.to_hdf({"nums": client.arange(7), "words": client.array(["a", "b"])}, path,
                  file_type="single")
    entries = {e["name"]: e for e in client.ls(path)}
    assert set(entries) == {"nums", "words"}
    nums, words = entries["nums"], entries["words"]
    assert nums["kind"] == "dataset" and nums["objtype"] == "pdarray"
    assert nums["dtype"] == "int64" and list(nums["shape"]) == [7]
    assert nums["attrs"]["ObjType"] == 1
    assert words["kind"] == "group" and words["objtype"] == "strings"
    deep = client.ls(path, recursive=True)
    paths = [e["path"] for e in deep]
    assert any(p.rstrip("/").endswith("words/values") for p in paths)
    assert any(p.rstrip("/").endswith("words/segments") for p in paths)
    assert len(deep) > len(entries)


def test_object_methods_write_and_delete(client, daemon):
    path = unique("method") + ".h5"
    a = client.array(np.array([3, 1, 2], np.int16))
    a.to_hdf(path, file_type="single")
    with h5py.File(daemon.data_dir / path, "r") as h:
        assert list(h.keys()) == [a.name]
        assert h[a.name][()].tolist() == [3, 1, 2]
    s = client.array(["k"])
    s.to_hdf(path, dataset="strs", mode="append", file_type="single")
    assert client.read_hdf(path)["strs"].to_list() == ["k"]
    a.delete()
    with pytest.raises(h5ark.NotFoundError):
        a.to_ndarray()


# -- auth and shutdown ------------------------------------------------------------------

def test_token_auth(start_daemon):
    d = start_daemon(locales=2, token="s3cret")
    with pytest.raises(h5ark.UnauthorizedError) as info:
        h5ark.connect(d.endpoint, timeout=10)
    assert info.value.code == "unauthorized"
    with pytest.raises(h5ark.UnauthorizedError):
        h5ark.connect(d.endpoint, token="wrong", timeout=10)
    with h5ark.connect(d.endpoint, token="s3cret", timeout=10) as c:
        config = c.config()
        assert config["auth"] is True and config["locales"] == 2
        assert c.array(["secure", "ü"]).to_list() == ["secure", "ü"]
        assert_bitwise_equal(c.array(edge_values("int64")).to_ndarray(), edge_values("int64"))


def test_shutdown(start_daemon):
    d = start_daemon(locales=1)
    c = h5ark.connect(d.endpoint, timeout=10)
    c.array([1, 2, 3])
    assert c.shutdown()["stopping"] is True
    assert c.closed
    assert d.proc.wait(timeout=30) == 0
    with pytest.raises(h5ark.ReplyTimeoutError):
        h5ark.connect(d.endpoint, timeout=0.3)


def test_msgpack_header_has_no_bulk_bytes(client, monkeypatch):
    # Bulk data travels as payload frames; the header stays small whatever the array size.
    sizes = []
    original = wire.pack_header

    def spy(header):
        packed = original(header)
        sizes.append(len(packed))
        return packed

    monkeypatch.setattr(wire, "pack_header", spy)
    client.array(np.zeros(1 << 18))
    client.array(["z" * 100000])
    assert len(sizes) == 2 and max(sizes) < 1000
