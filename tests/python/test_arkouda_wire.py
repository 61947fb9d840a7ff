"""The Arkouda endpoint (--arkouda-endpoint): Arkouda's own wire dialect, spoken here with
nothing but pyzmq and json as Arkouda's client does (../shared/ARKOUDA_WIRE.md), against
a real daemon that shares its registry with the native endpoint."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import threading

import pytest
import zmq

from daemons import Daemon, daemon_binary
from wire import request

FIXTURES = pathlib.Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "arkouda"
# names: id_<7 letters>_<n>; at several ranks id_<request>[_<k>], the same on every rank
CREATED = re.compile(r"^created (id_(?:[0-9A-Za-z]{7}_)?\d+(?:_\d+)?) (\w+) (\d+) 1 \[(\d+)\] "
                     r"(\d+)$")


def ak_args(**params):
    """Arkouda's double encoding: a JSON list of JSON strings of {key, dtype, val}."""
    items = []
    for key, val in params.items():
        dtype = "str"
        if isinstance(val, bool):
            val, dtype = ("True" if val else "False"), "bool"
        elif isinstance(val, int):
            val, dtype = str(val), "int64"
        elif isinstance(val, float):
            val, dtype = str(val), "float64"
        elif isinstance(val, (list, tuple)):
            val = json.dumps([str(v) for v in val])
        items.append(json.dumps({"key": key, "dtype": dtype, "val": val}))
    return json.dumps(items)


class Ak:
    """A REQ socket speaking Arkouda's envelope."""

    def __init__(self, endpoint, token="", user="tester"):
        self.endpoint, self.token, self.user = endpoint, token, user
        self.ctx = zmq.Context.instance()
        self._open()

    def _open(self):
        self.sock = self.ctx.socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, 30000)
        self.sock.connect(self.endpoint)

    def close(self):
        self.sock.close()

    def send_raw(self, frames):
        self.sock.send_multipart(frames)
        return self.sock.recv_multipart()

    def envelope(self, cmd, params=None, binary=False, size=None):
        args = "" if params is None else ak_args(**params)
        n = -1 if params is None else len(params)
        return json.dumps({"user": self.user, "token": self.token, "cmd": cmd,
                           "format": "BINARY" if binary else "STRING", "args": args,
                           "size": n if size is None else size})

    def raw(self, cmd, params=None, payload=None):
        """The reply frames of one request."""
        head = self.envelope(cmd, params, binary=payload is not None)
        if payload is None:
            return self.send_raw([head.encode()])
        return self.send_raw([head.encode() + b"BINARY_PAYLOAD", payload])

    def reply(self, cmd, params=None, payload=None):
        frames = self.raw(cmd, params, payload)
        assert len(frames) == 1
        return json.loads(frames[0])

    def ok(self, cmd, params=None, payload=None):
        r = self.reply(cmd, params, payload)
        assert r["msgType"] == "NORMAL", r
        assert r["user"] == self.user and r["msgFormat"] == "STRING"
        return r["msg"]

    def error(self, cmd, params=None, payload=None):
        r = self.reply(cmd, params, payload)
        assert r["msgType"] == "ERROR", r
        return r["msg"]

    def created(self, cmd, params=None, payload=None):
        msg = self.ok(cmd, params, payload)
        m = CREATED.match(msg)
        assert m, msg
        return m.group(1), m.group(2), int(m.group(3))


@pytest.fixture(scope="module")
def akd():
    d = Daemon(locales=3, arkouda=True)
    yield d
    d.cleanup()


@pytest.fixture
def ak(akd):
    c = Ak(akd.ak_endpoint)
    yield c
    c.close()


def native(akd, cmd, **args):
    hdr, frames = request(akd.endpoint, {"v": 1, "cmd": cmd, "args": args})
    return hdr, frames


# ---- step 1: envelope, handshake, session, errors ----

def test_connect_handshake(ak, akd):
    msg = ak.ok("connect")
    assert msg.startswith("connected to arkouda server ipc://")
    config = json.loads(ak.ok("getconfig", {}))
    for key in ("arkoudaVersion", "regexMaxCaptures", "byteorder", "pythonVersion",
                "numLocales", "serverHostname", "ServerPort", "maxTaskPar", "physicalMemory"):
        assert key in config, key
    assert config["byteorder"] == "little"
    assert config["numLocales"] == akd.locales
    assert isinstance(config["regexMaxCaptures"], int)
    reg = json.loads(ak.ok("getRegistrationConfig", {}))
    assert reg["parameter_classes"]["array"]["nd"] == [1]
    assert ak.ok("note", {"message": "testing: TestHDF5"}) == "noted"
    assert ak.ok("disconnect").startswith("disconnected from arkouda server")


def test_connect_verbatim_envelope(ak):
    """The bytes the client sends, as captured."""
    frames = ak.send_raw([b'{"user": "root", "token": "", "cmd": "connect", "format": "STRING", '
                          b'"args": "", "size": -1}'])
    r = json.loads(frames[0])
    assert r["msgType"] == "NORMAL" and r["user"] == "root"
    assert set(r) == {"msg", "msgType", "msgFormat", "user"}


def test_unknown_command(ak):
    r = ak.reply("toParquet_multi", {"columns": ["a"], "num_cols": 1})
    assert r == {"msg": "Unrecognized command: toParquet_multi", "msgType": "ERROR",
                 "msgFormat": "STRING", "user": "tester"}
    assert ak.error("nosuch<int64,1>", {}) == "Unrecognized command: nosuch<int64,1>"



@pytest.mark.parametrize("frame", [
    b"not json",
    b"[1, 2]",
    b'{"user": "u", "cmd": 5, "format": "STRING", "args": "", "size": -1}',
    b'{"user": "u", "format": "STRING", "args": "", "size": -1}',
    b'{"user": "u", "cmd": "note", "format": "STRING", "args": "[1, 2", "size": 1}',
    b'{"user": "u", "cmd": "note", "format": "STRING", "args": "[\\"{}\\"]", "size": 1}',
    b'{"user": "u", "cmd": "note", "format": "STRING", "args": 7, "size": 1}',
    b'{"user": 3, "cmd": "note", "format": "STRING", "args": "", "size": 1}',
    b'{"user": "u", "cmd": "arange<int64", "format": "STRING", "args": "[]", "size": 0}',
    b'{"user": "u", "cmd": "note", "format": "BINARY", "args": "[]", "size": 0}',
    b'',
])
def test_malformed_requests(ak, frame):
    r = json.loads(ak.send_raw([frame])[0])
    assert r["msgType"] == "ERROR"
    assert r["msg"].startswith("Error")
    assert "msgFormat" in r and "user" in r
    assert ak.ok("note", {"message": "still here"}) == "noted"


def test_wrong_arg_types(ak):
    assert "argument 'stop' must be a number" in ak.error(
        "arange<int64,1>", {"start": 0, "stop": "ten", "step": 1})
    assert "missing argument 'name'" in ak.error("delete", {})
    assert "must be a JSON list" in ak.error("info", {"names": "[1, 2]"})
    assert ak.ok("note", {"message": "x"}) == "noted"


def test_delete_and_info(ak, akd):
    name, dtype, size = ak.created("arange<int64,1>", {"start": 0, "stop": 10, "step": 1})
    assert (dtype, size) == ("int64", 10)
    infos = json.loads(ak.ok("info", {"names": "__AllSymbols__"}))
    mine = [i for i in infos if i["name"] == name]
    assert mine == [{"name": name, "dtype": "int64", "size": 10, "ndim": 1, "shape": [10],
                     "itemsize": 8, "registered": False}]
    assert json.loads(ak.ok("info", {"names": "__RegisteredSymbols__"})) == []
    assert ak.ok("delete", {"name": name}) == f"deleted {name}"
    assert "no object named" in ak.error("delete", {"name": name})
    hdr, _ = native(akd, "info", names=[name])
    assert not hdr["ok"]


def test_clear():
    """ak.clear() (its pdarrayclass.py: `clear`, no arguments): every object goes but the
    registered names and the arrays they registered, as Arkouda's SymTab.clear; `success`."""
    d = Daemon(locales=2, arkouda=True)
    try:
        ak = Ak(d.ak_endpoint)
        a, b = (ak.created("arange<int64,1>", {"start": 0, "stop": n, "step": 1})[0]
                for n in (3, 4))
        hdr, _ = request(d.endpoint, {"v": 1, "cmd": "create", "args": {
            "dtype": "int64", "size": 2, "fill": "zeros"}})
        assert hdr["ok"], hdr
        ak.ok("register", {"name": "kept", "objType": "pdarray", "array": a})
        assert ak.ok("clear") == "success"  # b and the native one go
        assert sorted(i["name"] for i in json.loads(ak.ok("info", {"names": "__AllSymbols__"}))) \
            == sorted([a, "kept"]) and b != a
        ak.ok("unregister", {"name": "kept"})
        assert ak.ok("clear") == "success"
        assert json.loads(ak.ok("info", {"names": "__AllSymbols__"})) == []
        ak.close()
    finally:
        d.cleanup()


def test_one_registry(ak, akd):
    """An object made through either endpoint is visible through both, by one name."""
    hdr, _ = native(akd, "create", dtype="int64", size=5, fill="arange", stop=5)
    assert hdr["ok"]
    name = hdr["result"]["object"]["name"]
    assert re.match(r"^id_[0-9A-Za-z]{7}_\d+$", name)
    infos = json.loads(ak.ok("info", {"names": json.dumps([name])}))
    assert infos[0]["name"] == name and infos[0]["size"] == 5
    made, _, _ = ak.created("arange<int64,1>", {"start": 0, "stop": 4, "step": 1})
    hdr, _ = native(akd, "info", names=[made])
    assert hdr["ok"] and hdr["result"]["objects"][0]["size"] == 4
    assert ak.ok("delete", {"name": name}) == f"deleted {name}"
    native(akd, "delete", names=[made])


def test_tokens(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("sekrit write\nlooker read\n")
    d = Daemon(locales=2, token="sekrit", token_file=tokens, arkouda=True)
    try:
        anon = Ak(d.ak_endpoint)
        r = anon.reply("connect")
        assert r["msgType"] == "ERROR" and "requires a token" in r["msg"]
        # an unknown command is not revealed without a token
        assert "requires a token" in anon.error("nosuch", {})
        bad = Ak(d.ak_endpoint, token="wrong")
        assert "not valid" in bad.error("getconfig", {})
        good = Ak(d.ak_endpoint, token="sekrit")
        assert good.ok("connect").startswith("connected")
        good.created("arange<int64,1>", {"start": 0, "stop": 3, "step": 1})
        reader = Ak(d.ak_endpoint, token="looker")
        assert reader.ok("getconfig", {})
        assert "may only read" in reader.error("arange<int64,1>", {"start": 0, "stop": 3,
                                                                    "step": 1})
        for c in (anon, bad, good, reader):
            c.close()
    finally:
        d.cleanup()


def test_off_by_default(akd):
    hdr, _ = native(akd, "ping")
    assert hdr["ok"]
    assert f"Arkouda clients at {akd.ak_endpoint}" in akd.read_log()
    d = Daemon(locales=1)
    try:
        assert "Arkouda" not in d.read_log()
    finally:
        d.cleanup()


# ---- step 2: transfer ----

import numpy as np  # noqa: E402


def upload(ak, arr):
    dtype = {"int64": "int64", "float64": "float64", "bool": "bool", "uint64": "uint64"}[
        str(arr.dtype)]
    return ak.created(f"array<{dtype},1>", {"dtype": dtype, "shape": [str(arr.size)],
                                            "seg_string": False}, payload=arr.tobytes())


def download(ak, name, dtype, n):
    frames = ak.raw(f"tondarray<{dtype},1>", {"array": name})
    assert len(frames) == 1
    assert len(frames[0]) == n * np.dtype(dtype).itemsize
    return np.frombuffer(frames[0], dtype=dtype)


@pytest.mark.parametrize("arr", [
    np.array([-52, 63, 84, 52] * 250, dtype=np.int64),
    np.random.default_rng(1).normal(size=1000),
    np.array([True, False, False, True]),
    np.array([0, 1, 2**63 + 3, 2**64 - 1], dtype=np.uint64),
    np.arange(300_000, dtype=np.int64),  # several locales, several frames
    np.zeros(0, dtype=np.float64),
], ids=["int64", "float64", "bool", "uint64", "large", "empty"])
def test_array_round_trip(ak, akd, arr):
    name, dtype, size = upload(ak, arr)
    assert dtype == str(arr.dtype) and size == arr.size
    np.testing.assert_array_equal(download(ak, name, dtype, arr.size), arr)
    # the same bytes through the native endpoint
    hdr, frames = native(akd, "get", name=name)
    assert hdr["ok"]
    np.testing.assert_array_equal(np.frombuffer(b"".join(frames), dtype=arr.dtype), arr)
    assert ak.ok("delete", {"name": name}) == f"deleted {name}"


def test_array_verbatim_capture(ak):
    """array<bool,1> as captured: 4 bytes 01000001."""
    head = (b'{"user": "root", "token": "", "cmd": "array<bool,1>", "format": "BINARY", "args": '
            b'"[\\"{\\\\\\"key\\\\\\": \\\\\\"dtype\\\\\\", \\\\\\"dtype\\\\\\": \\\\\\"str\\\\\\", '
            b'\\\\\\"val\\\\\\": \\\\\\"bool\\\\\\"}\\", \\"{\\\\\\"key\\\\\\": \\\\\\"shape\\\\\\", '
            b'\\\\\\"dtype\\\\\\": \\\\\\"int64\\\\\\", \\\\\\"val\\\\\\": \\\\\\"[\\\\\\\\\\\\\\"4'
            b'\\\\\\\\\\\\\\"]\\\\\\"}\\", \\"{\\\\\\"key\\\\\\": \\\\\\"seg_string\\\\\\", '
            b'\\\\\\"dtype\\\\\\": \\\\\\"bool\\\\\\", \\\\\\"val\\\\\\": \\\\\\"False\\\\\\"}\\"]", '
            b'"size": 3}BINARY_PAYLOAD')
    r = json.loads(ak.send_raw([head, bytes.fromhex("01000001")])[0])
    m = CREATED.match(r["msg"])
    assert m and m.group(2) == "bool" and m.group(3) == "4", r
    frames = ak.raw("tondarray<bool,1>", {"array": m.group(1)})
    assert frames == [bytes.fromhex("01000001")]


def test_array_errors(ak):
    arr = np.arange(4, dtype=np.int64)
    # byte count that does not match the shape
    msg = ak.error("array<int64,1>", {"dtype": "int64", "shape": ["5"], "seg_string": False},
                   payload=arr.tobytes())
    assert "bytes" in msg
    assert "shape" in ak.error("array<int64,1>", {"dtype": "int64", "shape": ["-1"]},
                               payload=b"")
    assert "shape" in ak.error("array<int64,1>", {"dtype": "int64",
                                                  "shape": ["99999999999999999999999"]},
                               payload=b"")
    # huge: refused, not allocated
    msg = ak.error("array<int64,1>", {"dtype": "int64", "shape": [str(2**60)]}, payload=b"x")
    assert msg.startswith("Error executing command")
    assert "bool" in ak.error("array<bool,1>", {"dtype": "bool", "shape": ["2"]},
                              payload=b"\x00\x07")
    # BINARY format needed, and a STRING command takes no bytes
    r = json.loads(ak.send_raw([ak.envelope("array<int64,1>", {"shape": ["1"]}).encode()])[0])
    assert r["msgType"] == "ERROR" and "BINARY" in r["msg"]
    assert "dtype" in ak.error("array<str,1>", {"shape": ["1"]}, payload=b"a\x00")
    assert ak.ok("note", {"message": "x"}) == "noted"


def test_tondarray_errors_are_raw_frames(ak):
    frames = ak.raw("tondarray<int64,1>", {"array": "id_nothere_1"})
    assert len(frames) == 1 and frames[0].startswith(b"Error: ") and b"id_nothere_1" in frames[0]
    name, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    frames = ak.raw("tondarray<float64,1>", {"array": name})
    assert frames[0].startswith(b"Error: ")
    frames = ak.raw("tondarray<int64,1>", {})
    assert frames[0].startswith(b"Error: ") and b"array" in frames[0]
    ak.ok("delete", {"name": name})


def encode_ak_strings(strs):
    return b"".join(s.encode() + b"\x00" for s in strs)


@pytest.mark.parametrize("strs", [["ab", "", "cde", '"q"'], [], ["x" * 1000] * 300,
                                  ["héllo", "wörld"]], ids=["small", "none", "long", "utf8"])
def test_strings_round_trip(ak, akd, strs):
    data = encode_ak_strings(strs)
    msg = ak.ok("arraySegString<uint8>", {"size": len(data)}, payload=data)
    m = re.match(r"^created (id_\w+) str (\d+) 1 \[(\d+)\] 1\+created bytes.size (\d+)$", msg)
    assert m, msg
    name = m.group(1)
    assert int(m.group(2)) == len(strs) and int(m.group(4)) == len(data)
    offsets = ak.raw("segStr-tondarray", {"obj": name, "comp": "offsets"})
    values = ak.raw("segStr-tondarray", {"obj": name, "comp": "values"})
    assert len(offsets) == 1 and len(values) == 1
    off = np.frombuffer(offsets[0], dtype=np.int64)
    assert values[0] == data
    expect = np.cumsum([0] + [len(s.encode()) + 1 for s in strs])[:-1]
    np.testing.assert_array_equal(off, expect)
    # the native endpoint sees the same strings
    hdr, _ = native(akd, "info", names=[name])
    assert hdr["result"]["objects"][0]["objtype"] == "strings"
    ak.ok("delete", {"name": name})


def test_strings_errors(ak):
    assert "NUL" in ak.error("arraySegString<uint8>", {"size": 2}, payload=b"ab")
    assert "size" in ak.error("arraySegString<uint8>", {"size": 5}, payload=b"ab\x00")
    frames = ak.raw("segStr-tondarray", {"obj": "id_nope_1", "comp": "values"})
    assert frames[0].startswith(b"Error: ")
    name, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    assert ak.raw("segStr-tondarray", {"obj": name, "comp": "offsets"})[0].startswith(b"Error: ")
    ak.ok("delete", {"name": name})


# ---- step 3: HDF5 I/O ----

import h5py  # noqa: E402


def put_strings(ak, strs):
    data = encode_ak_strings(strs)
    msg = ak.ok("arraySegString<uint8>", {"size": len(data)}, payload=data)
    return msg.split()[1]


def get_strings(ak, name):
    off = np.frombuffer(ak.raw("segStr-tondarray", {"obj": name, "comp": "offsets"})[0],
                        dtype=np.int64)
    val = ak.raw("segStr-tondarray", {"obj": name, "comp": "values"})[0]
    ends = list(off[1:]) + [len(val)]
    return [val[s:e - 1].decode() for s, e in zip(off, ends)]


def tohdf(ak, path, dset, obj_type, write_mode=0, file_format=1, **parts):
    return ak.ok("tohdf", {**parts, "dset": dset, "write_mode": write_mode, "filename": str(path),
                           "objType": obj_type, "file_format": file_format})


def read_all(ak, dsets, filenames, **opts):
    params = {"strict_types": True, "dset_size": len(dsets), "filename_size": len(filenames),
              "allow_errors": False, "calc_string_offsets": False, "dsets": list(dsets),
              "filenames": [str(f) for f in filenames], "tag_data": False}
    params.update(opts)
    reply = json.loads(ak.ok("readAllHdf", params))
    return reply, json.loads(reply["items"])


def created_name(text):
    m = re.match(r"^created (\S+) (\w+) (\d+) 1 \[(\d+)\] (\d+)", text)
    assert m, text
    return m.group(1)


def locale_files(path, n):
    return [f"{path}_LOCALE{i:04d}" for i in range(n)]


def test_pdarray_files(ak, akd):
    base = akd.data_dir / "ak_pd" / "pda_test"
    base.parent.mkdir(exist_ok=True)
    a = np.arange(10, dtype=np.int64) * 7
    f = np.linspace(0, 1, 10)
    b = np.array([True, False] * 5)
    na, _, _ = upload(ak, a)
    nf, _, _ = upload(ak, f)
    nb, _, _ = upload(ak, b)
    assert tohdf(ak, base, "array", "pdarray", 0, values=na) == "Dataset written successfully!"
    tohdf(ak, base, "floats", "pdarray", 1, values=nf)
    tohdf(ak, base, "bools", "pdarray", 1, values=nb)
    parts = locale_files(base, akd.locales)
    got = []
    for p in parts:
        with h5py.File(p, "r") as h:
            assert h.attrs["File_Format"] == 1
            assert h["array"].attrs["ObjType"] == 1
            assert h["bools"].attrs["isBool"] == 1
            got.append(h["array"][:])
    np.testing.assert_array_equal(np.concatenate(got), a)
    # what the client sends before reading
    assert ak.ok("getfiletype", {"filename": f"{base}_LOCALE*"}) == "HDF5"
    assert ak.ok("hdffileformat", {"filename": f"{base}*"}) == "distribute"
    assert json.loads(ak.ok("lsany", {"filename": parts[0], "col_delim": ",",
                                      "read_nested": True})) == ["array", "bools", "floats"]
    reply, items = read_all(ak, ["array", "bools", "floats"], [f"{base}_LOCALE*"])
    assert [i["dataset_name"] for i in items] == ["array", "bools", "floats"]
    assert [i["arkouda_type"] for i in items] == ["PDARRAY"] * 3
    assert set(reply) == {"items"}
    for item, arr in zip(items, (a, b, f)):
        name = created_name(item["created"])
        np.testing.assert_array_equal(download(ak, name, str(arr.dtype), arr.size), arr)
    # single file, and a path relative to the data directory
    tohdf(ak, "ak_pd/single.h5", "array", "pdarray", 0, 0, values=na)
    with h5py.File(akd.data_dir / "ak_pd" / "single.h5", "r") as h:
        assert h.attrs["File_Format"] == 0
        np.testing.assert_array_equal(h["array"][:], a)
    assert ak.ok("hdffileformat", {"filename": str(akd.data_dir / "ak_pd" / "single.h5")}) == \
        "single"


def test_update_overwrite(ak, akd):
    base = akd.data_dir / "ak_upd"
    na, _, _ = upload(ak, np.arange(5, dtype=np.int64))
    nb, _, _ = upload(ak, np.arange(5, dtype=np.int64) + 100)
    tohdf(ak, base, "array", "pdarray", 0, values=na)
    ak.ok("tohdf", {"values": nb, "dset": "array", "write_mode": 1, "filename": str(base),
                    "objType": "pdarray", "file_format": 1, "overwrite": True})
    _, items = read_all(ak, ["array"], [f"{base}*"])
    got = download(ak, created_name(items[0]["created"]), "int64", 5)
    np.testing.assert_array_equal(got, np.arange(5) + 100)
    # update_hdf(repack=False), as Arkouda's tests assert it: the replaced dataset's space
    # is not given back, so a file never shrinks; the client's repack (a read and a
    # truncating write of what is left) shrinks it
    big, _, _ = upload(ak, np.arange(30000, dtype=np.int64))
    small, _, _ = upload(ak, np.arange(15, dtype=np.int64))
    other, _, _ = upload(ak, np.arange(30000, dtype=np.int64) * 2)
    tohdf(ak, base, "array", "pdarray", 0, values=big)
    tohdf(ak, base, "array_2", "pdarray", 1, values=other)
    files = locale_files(base, akd.locales)
    sizes = [os.path.getsize(f) for f in files]
    ak.ok("tohdf", {"values": small, "dset": "array", "write_mode": 1, "filename": str(base),
                    "objType": "pdarray", "file_format": 1, "overwrite": True})
    assert all(os.path.getsize(f) >= n for f, n in zip(files, sizes))
    got = []
    for f in files:
        with h5py.File(f, "r") as h:
            assert sorted(h) == ["array", "array_2"]
            got.append(h["array"][:])
    np.testing.assert_array_equal(np.concatenate(got), np.arange(15))
    tohdf(ak, base, "array", "pdarray", 0, values=small)
    tohdf(ak, base, "array_2", "pdarray", 1, values=other)
    assert sum(os.path.getsize(f) for f in files) < sum(sizes)


def test_hdffileformat_from_the_attribute(ak, akd):
    """The File_Format root attribute decides, not the name; names only when it is absent."""
    d = akd.data_dir / "ak_fmt"
    d.mkdir(exist_ok=True)
    cases = {"single_LOCALE0000": 0, "plain.h5": 1, "bare_LOCALE0001": None, "bare.h5": None}
    for fname, fmt in cases.items():
        with h5py.File(d / fname, "w") as h:
            h["x"] = np.arange(3)
            if fmt is not None:
                h.attrs["File_Format"] = np.int64(fmt)
    want = {"single_LOCALE0000": "single", "plain.h5": "distribute",
            "bare_LOCALE0001": "distribute", "bare.h5": "single"}
    for fname, form in want.items():
        assert ak.ok("hdffileformat", {"filename": str(d / fname)}) == form, fname
    # what tohdf wrote in single mode under a _LOCALE-like name
    na, _, _ = upload(ak, np.arange(4, dtype=np.int64))
    tohdf(ak, d / "one_LOCALE0000", "array", "pdarray", 0, 0, values=na)
    assert ak.ok("hdffileformat", {"filename": str(d / "one_LOCALE*")}) == "single"
    (d / "junk.h5").write_bytes(b"not hdf5 at all")
    assert "HDF5" in ak.error("hdffileformat", {"filename": str(d / "junk.h5")})
    with h5py.File(d / "odd.h5", "w") as h:
        h.attrs["File_Format"] = "text"
    assert "File_Format" in ak.error("hdffileformat", {"filename": str(d / "odd.h5")})


def test_strings_files(ak, akd):
    base = akd.data_dir / "ak_str"
    strs = ["alpha", "", "gamma", "dé", "x" * 50]
    name = put_strings(ak, strs)
    ak.ok("tohdf", {"values": name, "dset": "strings_array", "write_mode": 0,
                    "filename": str(base), "dtype": "<U0", "save_offsets": True,
                    "objType": "strings", "file_format": 1})
    got = []
    for p in locale_files(base, akd.locales):
        with h5py.File(p, "r") as h:
            g = h["strings_array"]
            assert g.attrs["ObjType"] == 2
            vals = bytes(g["values"][:])
            got += [s.decode() for s in vals.split(b"\x00")[:-1]]
    assert got == strs
    _, items = read_all(ak, ["strings_array"], [f"{base}*"])
    assert items[0]["arkouda_type"] == "STRINGS"
    assert re.match(r"^created \S+ str 5 1 \[5\] 1\+created bytes.size \d+$", items[0]["created"])
    assert get_strings(ak, created_name(items[0]["created"])) == strs


def test_strings_without_offsets(ak, akd):
    """save_offsets False: `values` alone, and readAllHdf counts the strings by their NULs."""
    base = akd.data_dir / "ak_nooff"
    strs = ["alpha", "", "gamma", "dé", "x" * 50, ""]
    name = put_strings(ak, strs)
    for fmt in (1, 0):
        ak.ok("tohdf", {"values": name, "dset": "s", "write_mode": 0, "filename": str(base),
                        "dtype": "<U0", "save_offsets": False, "objType": "strings",
                        "file_format": fmt})
        files = locale_files(base, akd.locales) if fmt else [base]
        got = []
        for p in files:
            with h5py.File(p, "r") as h:
                assert h["s"].attrs["ObjType"] == 2
                assert set(h["s"]) == {"values"}
                got += [b.decode() for b in bytes(h["s/values"][:]).split(b"\x00")[:-1]]
        assert got == strs
        _, items = read_all(ak, ["s"], [f"{base}*" if fmt else str(base)])
        assert items[0]["arkouda_type"] == "STRINGS"
        assert get_strings(ak, created_name(items[0]["created"])) == strs
    # save_offsets True keeps them; a wrong type is refused
    ak.ok("tohdf", {"values": name, "dset": "s", "write_mode": 0, "filename": str(base),
                    "save_offsets": True, "objType": "strings", "file_format": 0})
    with h5py.File(base, "r") as h:
        assert set(h["s"]) == {"values", "segments"}
    assert "save_offsets" in ak.error("tohdf", {"values": name, "dset": "s", "write_mode": 0,
                                                "filename": str(base), "save_offsets": "maybe",
                                                "objType": "strings"})
    fixture = FIXTURES / "UnitTestHDF5_noOffsets_LOCALE0000"
    if fixture.is_file():
        d = akd.data_dir / "ak_fix"
        d.mkdir(exist_ok=True)
        shutil.copy(fixture, d / fixture.name)
        _, items = read_all(ak, ["strings"], [str(d / fixture.name)])
        with h5py.File(fixture, "r") as h:
            want = [b.decode() for b in bytes(h["strings/values"][:]).split(b"\x00")[:-1]]
        assert get_strings(ak, created_name(items[0]["created"])) == want


BIG = [0, 1, 2**64, 5 * 2**64 + 7, 2**130 + 3, 10**38, 2**192 - 1]


def write_bigint_file(path, dset, values, nlimbs, max_bits=-1):
    """Arkouda's bigint layout: a group of uint64 limbs, least significant first."""
    with h5py.File(path, "a") as h:
        h.attrs["File_Format"] = np.int64(0)
        g = h.create_group(dset)
        for key, v in (("ObjType", 1), ("isBigInt", 1), ("MaxBits", max_bits),
                       ("NumLimbs", nlimbs)):
            g.attrs[key] = np.int64(v)
        g.attrs["file_version"] = np.float32(2.0)
        for i in range(nlimbs):
            g[f"Limb_{i}"] = np.array([(v >> (64 * i)) & (2**64 - 1) for v in values],
                                      dtype=np.uint64)


def bigint_values(ak, name, n):
    """What Arkouda's client does for to_ndarray of a bigint: bigint_to_uint_arrays
    (the limbs, least significant first, reversed by the client), tondarray of each."""
    limbs = json.loads(ak.ok("bigint_to_uint_list<bigint,1>", {"array": name}))
    for text in limbs:
        assert CREATED.match(text).group(2) == "uint64", text
    arrs = [download(ak, created_name(t), "uint64", n).astype(object)
            for t in reversed(limbs)]
    return [sum(int(a[i]) << (64 * (len(arrs) - k - 1)) for k, a in enumerate(arrs))
            for i in range(n)], len(limbs)


def test_bigint_read_fetch_write(ak, akd):
    d = akd.data_dir / "ak_big"
    d.mkdir(exist_ok=True)
    write_bigint_file(d / "big.h5", "big", BIG, 3)
    write_bigint_file(d / "big.h5", "small", [3, 2**64 - 1, 0], 2)  # a high limb all zero
    _, items = read_all(ak, ["big", "small"], [d / "big.h5"])
    assert [i["arkouda_type"] for i in items] == ["PDARRAY", "PDARRAY"]
    m = CREATED.match(items[0]["created"])
    assert m and m.groups()[1:] == ("bigint", str(len(BIG)), str(len(BIG)), "16"), m
    name = m.group(1)
    assert bigint_values(ak, name, len(BIG)) == (BIG, 3)
    small = created_name(items[1]["created"])
    assert bigint_values(ak, small, 3) == ([3, 2**64 - 1, 0], 1)
    info = json.loads(ak.ok("info", {"names": name}))
    assert [(i["dtype"], i["size"], i["itemsize"]) for i in info] == [("bigint", len(BIG), 16)]
    # the limb arrays are objects of their own: deleting one leaves the bigint whole
    limbs = json.loads(ak.ok("bigint_to_uint_list", {"array": name}))
    ak.ok("delete", {"name": created_name(limbs[0])})
    assert bigint_values(ak, name, len(BIG))[0] == BIG
    for i, v in enumerate(BIG):
        assert ak.ok("[int]<bigint,1>", {"array": name, "idx": i}) == f"bigint {v}"
    assert ak.ok("[int]<bigint,1>", {"array": name, "idx": -1}) == f"bigint {BIG[-1]}"
    assert "out of bounds" in ak.error("[int]<bigint,1>", {"array": name, "idx": len(BIG)})
    # tohdf of the bigint, as pdarray.to_hdf sends it, in Arkouda's layout
    for fmt in (0, 1):
        out = d / f"out{fmt}"
        tohdf(ak, out, "b", "pdarray", 0, fmt, values=name, dtype="bigint")
        files = locale_files(out, akd.locales) if fmt else [out]
        got = []
        for f in files:
            with h5py.File(f, "r") as h:
                g = h["b"]
                assert g.attrs["isBigInt"] == 1 and g.attrs["ObjType"] == 1
                k = int(g.attrs["NumLimbs"])
                assert set(g) == {f"Limb_{i}" for i in range(k)}
                limb = [g[f"Limb_{i}"][:] for i in range(k)]
                got += [sum(int(limb[i][r]) << (64 * i) for i in range(k))
                        for r in range(len(limb[0]))]
        assert got == BIG
        _, back = read_all(ak, ["b"], [f"{out}*" if fmt else out])
        assert bigint_values(ak, created_name(back[0]["created"]), len(BIG))[0] == BIG
    # what is not served on bigint answers an error, and the daemon goes on
    idx, _, _ = upload(ak, np.array([0, 2], dtype=np.int64))
    for cmd, params in (("[slice]<bigint,1>", {"array": name, "starts": 0, "stops": 2,
                                               "strides": 1, "max_bits": -1}),
                        ("sumAll<bigint,1>", {"x": name, "skipNan": False}),
                        ("cast<bigint,uint64,1>", {"name": name}),
                        ("tondarray<bigint,1>", None)):
        if params is None:
            frames = ak.raw(cmd, {"array": name})
            assert frames[0].startswith(b"Error: "), frames
        else:
            assert ak.reply(cmd, params)["msgType"] == "ERROR", cmd
    # [pdarray] of a bigint gathers its limbs (GroupBy's unique keys of a bigint key)
    got, _, size = ak.created("[pdarray]", {"array": name, "idx": idx})
    assert bigint_values(ak, got, size)[0] == [BIG[0], BIG[2]]
    # bad inputs
    ints, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    assert "not bigint" in ak.error("bigint_to_uint_list<bigint,1>", {"array": ints})
    assert "no object named" in ak.error("bigint_to_uint_list<bigint,1>", {"array": "id_nope_1"})
    assert "'array'" in ak.error("bigint_to_uint_list<bigint,1>", {})
    assert "1-dimensional" in ak.error("bigint_to_uint_list<bigint,2>", {"array": name})


def test_bigint_compute(ak):
    """What the client sends to compute on bigints: `ak.arange(n) + 2**200`
    (binopvs<int64,bigint,1>), the binops of bigint with bigint and int64 arrays and
    scalars (vv, vs, sv; results wrap at max_bits as Arkouda's server masks them),
    `ak.zeros(n, dtype=bigint)` (create<bigint,1>), `a[i] = v` ([int]=val<bigint,1>),
    `a[mask] = v` ([pdarray]=val) and str/repr of a bigint."""
    n = 300
    ints, _, _ = upload(ak, np.arange(n, dtype=np.int64))
    big, dtype, size = ak.created("binopvs<int64,bigint,1>",
                                  {"op": "+", "a": ints, "value": 2**200})
    assert (dtype, size) == ("bigint", n)
    assert bigint_values(ak, big, n) == ([2**200 + i for i in range(n)], 4)
    prod, _, _ = ak.created("binopvv<bigint,int64,1>", {"op": "*", "a": big, "b": ints})
    assert bigint_values(ak, prod, n)[0] == [(2**200 + i) * i for i in range(n)]
    rev, _, _ = ak.created("binopsv<bigint,bigint,1>", {"op": "-", "a": big, "value": 2**201})
    assert bigint_values(ak, rev, n)[0] == [2**200 - i for i in range(n)]
    less, dtype, _ = ak.created("binopvs<bigint,bigint,1>",
                                {"op": "<", "a": big, "value": 2**200 + 7})
    assert dtype == "bool"
    assert download(ak, less, "bool", n).tolist() == [i < 7 for i in range(n)]
    ak.ok("set_max_bits<bigint,1>", {"array": big, "max_bits": 64})
    wrapped, _, _ = ak.created("binopvs<bigint,int64,1>", {"op": "-", "a": big, "value": 3})
    assert ak.ok("get_max_bits<bigint,1>", {"array": wrapped}) == "64"
    assert bigint_values(ak, wrapped, n)[0] == [(i - 3) % 2**64 for i in range(n)]
    # unbounded, a negative result is refused (h5ark's bigints are unsigned)
    assert "negative" in ak.error("binopvs<int64,bigint,1>", {"op": "-", "a": ints,
                                                              "value": 2**200})
    assert "operator" in ak.error("binopvv<bigint,bigint,1>", {"op": "/", "a": big, "b": big})
    # ak.zeros(n, dtype=bigint), then the checkpoint test's a[i] = v of growing values
    zeros, dtype, size = ak.created("create<bigint,1>", {"shape": n})
    assert (dtype, size) == ("bigint", n)
    want, cur = [0] * n, 37
    for i in (0, 1, 150, n - 1):
        cur *= 347**40
        want[i] = cur
        assert ak.ok("[int]=val<bigint,1>", {"array": zeros, "idx": i - n if i else 0,
                                             "value": cur, "max_bits": -1}) == ""
        assert ak.ok("[int]<bigint,1>", {"array": zeros, "idx": i}) == f"bigint {cur}"
    assert bigint_values(ak, zeros, n)[0] == want
    mask, _, _ = upload(ak, np.arange(n) % 100 == 1)
    ak.ok("[pdarray]=val", {"array": zeros, "idx": mask, "dtype": "bigint", "value": 2**70})
    want = [2**70 if i % 100 == 1 else w for i, w in enumerate(want)]
    assert bigint_values(ak, zeros, n)[0] == want
    assert "out of bounds" in ak.error("[int]=val<bigint,1>", {"array": zeros, "idx": n,
                                                               "value": 1, "max_bits": -1})
    assert "negative" in ak.error("[int]=val<bigint,1>", {"array": zeros, "idx": 0,
                                                          "value": -1, "max_bits": -1})
    # ak.full / ak.ones of bigint: create, then set<bigint,1>; ak.cast(ints, ak.bigint)
    assert ak.ok("set<bigint,1>", {"array": zeros, "dtype": "bigint", "val": 2**100}) == (
        f"set element in {zeros}")
    assert bigint_values(ak, zeros, n)[0] == [2**100] * n
    cast, dtype, _ = ak.created("cast<int64,bigint,1>", {"name": ints})
    assert dtype == "bigint" and bigint_values(ak, cast, n)[0] == list(range(n))
    again, _, _ = ak.created("cast<bigint,bigint,1>", {"name": rev})
    assert bigint_values(ak, again, n)[0] == [2**200 - i for i in range(n)]
    assert "bigint" in ak.error("cast<bigint,int64,1>", {"name": rev})
    # str and repr: numpy's text, three and three around "..." past printThresh
    assert ak.ok("str", {"array": rev, "printThresh": 100}) == (
        f"[{2**200} {2**200 - 1} {2**200 - 2} ... {2**200 - 297} {2**200 - 298} "
        f"{2**200 - 299}]")
    small, _, _ = ak.created("binopvs<int64,bigint,1>", {"op": "+", "a": ints, "value": 2**64})
    three, _, _ = ak.created("[pdarray]", {"array": small, "idx": upload(
        ak, np.array([0, 1, 299]))[0]})
    assert ak.ok("repr", {"array": three, "printThresh": 100}) == (
        f"array([{2**64} {2**64 + 1} {2**64 + 299}])")


def test_bigint_arange_and_max_bits(ak, akd):
    """What ak.arange(..., dtype=bigint) and ak.arange(..., max_bits=m) send: arange of
    bigint, then get_max_bits / set_max_bits (Arkouda's server cuts the values in place)."""
    start = 2**200
    m = CREATED.match(ak.ok("arange<bigint,1>", {"start": start, "stop": start + 5, "step": 1}))
    assert m and m.group(2) == "bigint" and m.group(3) == "5", m
    name = m.group(1)
    assert bigint_values(ak, name, 5) == ([start + i for i in range(5)], 4)
    assert ak.ok("get_max_bits<bigint,1>", {"array": name}) == "-1"
    for a, b, step in ((0, 10, 3), (2**64 - 2, 2**64 + 3, 2), (7, 7, 1), (5, 3, 1)):
        n, _, size = ak.created("arange<bigint,1>", {"start": a, "stop": b, "step": step})
        assert bigint_values(ak, n, size)[0] == list(range(a, b, step))
    # set_max_bits: every value cut to its low bits, the array's name kept
    assert ak.ok("set_max_bits<bigint,1>", {"array": name, "max_bits": 201}) == \
        "Sucessfully set max_bits"
    assert ak.ok("get_max_bits<bigint,1>", {"array": name}) == "201"
    assert bigint_values(ak, name, 5)[0] == [start + i for i in range(5)]
    ak.ok("set_max_bits<bigint,1>", {"array": name, "max_bits": 66})
    assert bigint_values(ak, name, 5)[0] == [(start + i) & (2**66 - 1) for i in range(5)]
    # a SegArray of bigint values and a GroupBy of a bigint key go to files in Arkouda's
    # layout (the values a bigint group) and come back
    base = akd.data_dir / "ak_bigseg"
    big, _, _ = ak.created("arange<bigint,1>", {"start": start, "stop": start + 10, "step": 1})
    segs, _, _ = upload(ak, np.array([0, 2, 4, 6, 8], dtype=np.int64))
    tohdf(ak, base, "segarray", "SegArray", 0, values=big, segments=segs)
    with h5py.File(f"{base}_LOCALE0000", "r") as h:
        assert h["segarray/values"].attrs["isBigInt"] == 1
        assert set(h["segarray/values"]) == {f"Limb_{i}" for i in range(4)}
    perm, _, _ = upload(ak, np.arange(10, dtype=np.int64))
    gsegs, _, _ = upload(ak, np.arange(10, dtype=np.int64))
    ak.ok("tohdf", {"num_keys": 1, "key_names": [big], "key_dtypes": ["bigint"],
                    "key_objTypes": ["pdarray"], "unique_key_idx": perm, "permutation": perm,
                    "segments": gsegs, "dset": "groupby", "write_mode": 1,
                    "filename": str(base), "objType": "GroupBy", "file_format": 1})
    _, items = read_all(ak, ["segarray", "groupby"], [f"{base}*"])
    sa = json.loads(items[0]["created"])
    np.testing.assert_array_equal(download(ak, created_name(sa["segments"]), "int64", 5),
                                  [0, 2, 4, 6, 8])
    assert bigint_values(ak, created_name(sa["values"]), 10)[0] == \
        [start + i for i in range(10)]
    key = json.loads(items[1]["created"])["KEY_0"].split("+|+")[1]
    assert bigint_values(ak, created_name(key), 10)[0] == [start + i for i in range(10)]
    # bad inputs: an error each, the daemon serving on
    for args, words in (({"start": -1, "stop": 5, "step": 1}, "unsigned"),
                        ({"start": 0, "stop": 5, "step": 0}, "step"),
                        ({"start": "ten", "stop": 5, "step": 1}, "not an integer"),
                        ({"start": 0, "stop": 2**5000, "step": 1}, "bits")):
        assert words in ak.error("arange<bigint,1>", args)
    ints, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    assert "not bigint" in ak.error("get_max_bits<bigint,1>", {"array": ints})
    assert "not bigint" in ak.error("set_max_bits<bigint,1>", {"array": ints, "max_bits": 3})
    assert "max_bits" in ak.error("set_max_bits<bigint,1>", {"array": name, "max_bits": -2})


def test_bigint_from_uint_arrays(ak):
    """big_int_creation, as bigint_from_uint_arrays sends it: limbs most significant first."""
    vals = [0, 1, 2**64 + 5, 2**127 + 2**64 * 9 + 3, 2**128 - 1]
    hi = np.array([v >> 64 for v in vals], dtype=np.uint64)
    lo = np.array([v & (2**64 - 1) for v in vals], dtype=np.uint64)
    nhi, _, _ = upload(ak, hi)
    nlo, _, _ = upload(ak, lo)
    for max_bits in (-1, 70, 64, 3, 0):
        m = CREATED.match(ak.ok("big_int_creation<bigint,1>", {
            "arrays": [nhi, nlo], "num_arrays": 2, "shape": [str(len(vals))],
            "max_bits": max_bits}))
        assert m and m.group(2) == "bigint" and m.group(5) == "16", m
        want = [v if max_bits < 0 else v & ((1 << max_bits) - 1) for v in vals]
        assert bigint_values(ak, m.group(1), len(vals))[0] == want, max_bits
    ints, _, _ = upload(ak, np.arange(5, dtype=np.int64))
    short, _, _ = upload(ak, np.arange(2, dtype=np.uint64))
    for arrays, words in (([ints], "not a uint64"), ([nhi, short], "elements"),
                          ([], "1 to 4096"), (["id_none_9"], "no object named")):
        assert words in ak.error("big_int_creation<bigint,1>", {
            "arrays": arrays, "num_arrays": len(arrays), "shape": ["5"], "max_bits": -1})
    assert "max_bits" in ak.error("big_int_creation<bigint,1>", {
        "arrays": [nlo], "num_arrays": 1, "shape": ["5"], "max_bits": -2})


def test_segarray_categorical_files(ak, akd):
    base = akd.data_dir / "ak_seg"
    seg, _, _ = upload(ak, np.array([0, 2, 2, 5], dtype=np.int64))
    val, _, _ = upload(ak, np.arange(7, dtype=np.int64))
    tohdf(ak, base, "segarray", "SegArray", 0, values=val, segments=seg)
    # a Categorical as the client sends it: codes, categories, NA_codes, grouping
    cats = put_strings(ak, ["a", "b", "N/A"])
    codes, _, _ = upload(ak, np.array([1, 0, 1, 2], dtype=np.int64))
    nac, _, _ = upload(ak, np.array([2], dtype=np.int64))
    perm, _, _ = upload(ak, np.array([1, 0, 2, 3], dtype=np.int64))
    segs, _, _ = upload(ak, np.array([0, 1, 3], dtype=np.int64))
    tohdf(ak, base, "cat", "categorical", 1, codes=codes, categories=cats, NA_codes=nac,
          permutation=perm, segments=segs)
    with h5py.File(f"{base}_LOCALE0000", "r") as h:
        assert h["segarray"].attrs["ObjType"] == 3
        assert h["cat"].attrs["ObjType"] == 4
        assert set(h["cat"]) >= {"codes", "categories", "NA_Codes"}
    _, items = read_all(ak, ["cat", "segarray"], [f"{base}*"])
    assert [i["arkouda_type"] for i in items] == ["CATEGORICAL", "SEGARRAY"]
    cat = json.loads(items[0]["created"])
    assert set(cat) == {"codes", "categories", "_akNAcode", "permutation", "segments"}
    np.testing.assert_array_equal(download(ak, created_name(cat["codes"]), "int64", 4),
                                  [1, 0, 1, 2])
    assert get_strings(ak, created_name(cat["categories"])) == ["a", "b", "N/A"]
    np.testing.assert_array_equal(download(ak, created_name(cat["_akNAcode"]), "int64", 1), [2])
    sa = json.loads(items[1]["created"])
    assert set(sa) == {"segments", "values"}
    np.testing.assert_array_equal(download(ak, created_name(sa["segments"]), "int64", 4),
                                  [0, 2, 2, 5])
    np.testing.assert_array_equal(download(ak, created_name(sa["values"]), "int64", 7),
                                  np.arange(7))
    # the parts are objects of their own, as Arkouda's client expects
    infos = json.loads(ak.ok("info", {"names": "__AllSymbols__"}))
    names = {i["name"] for i in infos}
    assert created_name(sa["values"]) in names
    assert all("/" not in n for n in names)


def test_groupby_index_files(ak, akd):
    base = akd.data_dir / "ak_gb"
    keys = np.array([3, 1, 3, 2, 1], dtype=np.int64)
    key, _, _ = upload(ak, keys)
    perm, _, _ = upload(ak, np.argsort(keys, kind="stable").astype(np.int64))
    segs, _, _ = upload(ak, np.array([0, 2, 3], dtype=np.int64))
    uki, _, _ = upload(ak, np.array([1, 3, 0], dtype=np.int64))
    ak.ok("tohdf", {"num_keys": 1, "key_names": [key], "key_dtypes": ["int64"],
                    "key_objTypes": ["pdarray"], "unique_key_idx": uki, "permutation": perm,
                    "segments": segs, "dset": "groupby", "write_mode": 0,
                    "filename": str(base), "objType": "GroupBy", "file_format": 1})
    i1, _, _ = upload(ak, np.arange(100, dtype=np.int64))
    i2, _, _ = upload(ak, np.arange(100, dtype=np.int64) * 2)
    ak.ok("tohdf", {"dset": "index", "write_mode": 1, "filename": str(base), "objType": "Index",
                    "num_idx": 1, "idx": [i1], "idx_objTypes": ["pdarray"],
                    "idx_dtypes": ["int64"], "file_format": 1})
    ak.ok("tohdf", {"dset": "mindex", "write_mode": 1, "filename": str(base),
                    "objType": "MultiIndex", "num_idx": 2, "idx": [i1, i2],
                    "idx_objTypes": ["pdarray", "pdarray"], "idx_dtypes": ["int64", "int64"],
                    "file_format": 1})
    with h5py.File(f"{base}_LOCALE0000", "r") as h:
        assert h["groupby"].attrs["ObjType"] == 5 and h["groupby"].attrs["NumKeys"] == 1
        assert h["index"].attrs["ObjType"] == 12
        assert h["mindex"].attrs["ObjType"] == 13 and h["mindex"].attrs["NumIdx"] == 2
    _, items = read_all(ak, ["groupby", "index", "mindex"], [f"{base}*"])
    assert [i["arkouda_type"] for i in items] == ["GROUPBY", "INDEX", "MULTIINDEX"]
    gb = json.loads(items[0]["created"])
    assert set(gb) == {"permutation", "segments", "uki", "KEY_0"}
    assert gb["KEY_0"].startswith("PDARRAY+|+created ")
    np.testing.assert_array_equal(
        download(ak, created_name(gb["KEY_0"].split("+|+")[1]), "int64", 5), keys)
    np.testing.assert_array_equal(download(ak, created_name(gb["uki"]), "int64", 3), [1, 3, 0])
    idx = json.loads(items[1]["created"])
    assert len(idx) == 1 and idx[0].startswith("PDARRAY+|+created ")
    midx = json.loads(items[2]["created"])
    assert len(midx) == 2
    np.testing.assert_array_equal(
        download(ak, created_name(midx[1].split("+|+")[1]), "int64", 100), np.arange(100) * 2)
    # a GroupBy whose parts disagree is refused
    bad, _, _ = upload(ak, np.array([0, 9, 3], dtype=np.int64))
    msg = ak.error("tohdf", {"num_keys": 1, "key_names": [key], "unique_key_idx": bad,
                             "permutation": perm, "segments": segs, "dset": "g2",
                             "write_mode": 1, "filename": str(base), "objType": "GroupBy"})
    assert "unique_key_idx" in msg


def test_dataframe_snapshot(ak, akd):
    base = akd.data_dir / "ak_df" / "snapshot_test_SNAPSHOT"
    base.parent.mkdir(exist_ok=True)
    c1, _, _ = upload(ak, np.array([1, 2, 3, 4], dtype=np.int64))
    seg, _, _ = upload(ak, np.array([0, 1, 1, 3], dtype=np.int64))
    val, _, _ = upload(ak, np.arange(5, dtype=np.float64))
    s = put_strings(ak, ["w", "x", "y", "z"])
    index, _, _ = upload(ak, np.arange(4, dtype=np.int64))
    ak.ok("tohdf", {"filename": str(base), "dset": "df", "file_format": 1, "write_mode": 0,
                    "objType": "DataFrame", "num_cols": 3,
                    "column_names": ["c_1", "c_2", "c_3"],
                    "column_objTypes": ["pdarray", "SegArray", "Strings"],
                    "column_dtypes": ["int64", "float64", "<U0"],
                    "columns": [c1, json.dumps({"segments": seg, "values": val}), s],
                    "index": index})
    with h5py.File(f"{base}_LOCALE0000", "r") as h:
        assert h["df"].attrs["ObjType"] == 6 and h["df"].attrs["NumCols"] == 3
        assert {"Index", "c_1", "c_2", "c_3"} <= set(h["df"])
    _, items = read_all(ak, ["df"], locale_files(base, akd.locales))
    assert items[0]["arkouda_type"] == "DATAFRAME"
    df = json.loads(items[0]["created"])
    assert set(df) == {"Index", "c_1", "c_2", "c_3"}
    assert df["Index"].startswith("PDARRAY+|+created ")
    assert df["c_3"].startswith("STRINGS+|+created ")
    typ, form = df["c_2"].split("+|+", 1)
    assert typ == "SEGARRAY"
    sa = json.loads(form)
    np.testing.assert_array_equal(download(ak, created_name(sa["values"]), "float64", 5),
                                  np.arange(5.0))
    assert get_strings(ak, created_name(df["c_3"].split("+|+")[1])) == ["w", "x", "y", "z"]


@pytest.mark.parametrize("obj_type,objtype_code,dtype,read_type", [
    ("Datetime", 7, "int64", "DATETIME"), ("Timedelta", 8, "int64", "TIMEDELTA"),
    ("IPv4", 9, "uint64", "IPV4")])
def test_tagged_pdarrays(ak, akd, obj_type, objtype_code, dtype, read_type):
    base = akd.data_dir / f"ak_{obj_type}"
    arr = np.arange(10, dtype=dtype) + 1000
    name, _, _ = upload(ak, arr)
    tohdf(ak, base, "array", obj_type, 0, values=name)
    with h5py.File(f"{base}_LOCALE0000", "r") as h:
        assert h["array"].attrs["ObjType"] == objtype_code
    _, items = read_all(ak, ["array"], [f"{base}*"])
    assert items[0]["arkouda_type"] == read_type
    assert re.match(rf"^created \S+ {dtype} 10 1 \[10\] 8$", items[0]["created"])


def test_read_h5py_file_and_options(ak, akd):
    d = akd.data_dir / "ak_opts"
    d.mkdir(exist_ok=True)
    for i in range(2):
        with h5py.File(d / f"part{i}.h5", "w") as h:
            h["x"] = np.arange(3, dtype=np.int64) + 10 * i
    reply, items = read_all(ak, ["x"], [str(d / "part*.h5")], tag_data=True)
    assert [i["dataset_name"] for i in items] == ["Filename_Codes", "x"]
    codes = download(ak, created_name(items[0]["created"]), "int64", 6)
    np.testing.assert_array_equal(codes, [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(download(ak, created_name(items[1]["created"]), "int64", 6),
                                  [0, 1, 2, 10, 11, 12])
    # allow_errors: a file that is not HDF5 is skipped and reported
    (d / "part9.h5").write_bytes(b"not hdf5 at all")
    reply, items = read_all(ak, ["x"], [str(d / "part*.h5")], allow_errors=True)
    assert reply["allow_errors"] == "true" and reply["file_error_count"] == "1"
    errors = json.loads(reply["file_errors"])
    assert len(errors) == 1 and "part9.h5" in errors[0]
    assert created_name(items[0]["created"])
    msg = ak.error("readAllHdf", {"dsets": ["x"], "filenames": [str(d / "part*.h5")],
                                  "allow_errors": False})
    assert "part9.h5" in msg


def test_file_commands_and_errors(ak, akd):
    d = akd.data_dir / "ak_files"
    d.mkdir(exist_ok=True)
    for i in range(3):
        (d / f"pq_LOCALE{i:04d}").write_bytes(b"PAR1....")
    (d / "keep_LOCALE0000").write_bytes(b"x")
    files = json.loads(ak.ok("globExpansion", {"file_count": 1, "filenames": [str(d / "pq*")]}))
    assert [pathlib_name(f) for f in files] == [f"pq_LOCALE{i:04d}" for i in range(3)]
    assert ak.ok("getfiletype", {"filename": str(d / "pq_LOCALE*")}) == "Parquet"
    assert ak.ok("deleteMatchingFilenames", {"prefix": str(d / "pq")}) == \
        "Files deleted successfully!"
    assert sorted(p.name for p in d.iterdir()) == ["keep_LOCALE0000"]
    # missing files: the words the client looks for
    assert "does not exist" in ak.error("getfiletype", {"filename": str(d / "nope*")})
    assert "does not exist" in ak.error("lsany", {"filename": str(d / "nope")})
    assert "does not exist" in ak.error("hdffileformat", {"filename": str(d / "nope*")})
    assert "nope" in ak.error("readAllHdf", {"dsets": ["a"], "filenames": [str(d / "nope*")]})
    # absolute paths only inside the data directory
    for outside in ("/etc/passwd", "/tmp", f"{akd.data_dir}/../escape", "/"):
        assert "outside the data directory" in ak.error("getfiletype", {"filename": outside})
    name, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    msg = ak.error("tohdf", {"values": name, "dset": "a", "write_mode": 0,
                             "filename": "/tmp/ak_escape", "objType": "pdarray"})
    assert "outside the data directory" in msg
    assert not any(name.startswith("ak_escape") for name in os.listdir("/tmp"))
    # a symbolic link out of the data directory, in the directories or as the file
    outside = akd.tmp / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "f").write_bytes(b"theirs")
    (akd.data_dir / "ak_link").symlink_to(outside)
    (akd.data_dir / "ak_file_link_LOCALE0000").symlink_to(outside / "f")
    for path in (akd.data_dir / "ak_link" / "x", akd.data_dir / "ak_file_link"):
        msg = ak.error("tohdf", {"values": name, "dset": "a", "write_mode": 0,
                                 "filename": str(path), "objType": "pdarray",
                                 "file_format": 0 if "ak_link" in str(path) else 1})
        assert "outside the data directory" in msg or "leads out of the data directory" in msg, msg
    assert [p.name for p in outside.iterdir()] == ["f"]
    assert (outside / "f").read_bytes() == b"theirs"
    msg = ak.error("tohdf", {"values": name, "dset": "a", "write_mode": 0,
                             "filename": "../escape", "objType": "pdarray"})
    assert msg.startswith("Error executing command tohdf") and "leaves the data directory" in msg
    assert "objType" in ak.error("tohdf", {"values": name, "dset": "a", "write_mode": 0,
                                           "filename": str(d / "w"), "objType": "Parquet"})
    assert "write_mode" in ak.error("tohdf", {"values": name, "dset": "a", "write_mode": 7,
                                              "filename": str(d / "w"), "objType": "pdarray"})
    assert "no object named" in ak.error("tohdf", {"values": "id_zz_0", "dset": "a",
                                                   "write_mode": 0, "filename": str(d / "w"),
                                                   "objType": "pdarray"})
    assert ak.ok("note", {"message": "alive"}) == "noted"


def pathlib_name(p):
    return p.rsplit("/", 1)[-1]


def test_native_reads_what_arkouda_wrote(ak, akd):
    """One storage: a file written through the Arkouda endpoint reads natively."""
    base = akd.data_dir / "ak_cross"
    name, _, _ = upload(ak, np.arange(6, dtype=np.int64))
    tohdf(ak, base, "array", "pdarray", 0, values=name)
    hdr, _ = native(akd, "readhdf", paths=["ak_cross*"], datasets=["array"])
    assert hdr["ok"], hdr
    desc = hdr["result"]["objects"]["array"]
    assert desc["size"] == 6
    np.testing.assert_array_equal(download(ak, desc["name"], "int64", 6), np.arange(6))


# ---- step 4: compute ----

def test_arange_randint_create_set(ak):
    name, dtype, size = ak.created("arange<int64,1>", {"start": -10, "stop": 10, "step": 3})
    np.testing.assert_array_equal(download(ak, name, "int64", size), np.arange(-10, 10, 3))
    name, dtype, size = ak.created("arange<uint64,1>", {"start": 9223372036854775811,
                                                        "stop": 9223372036854775815, "step": 1})
    assert dtype == "uint64"
    np.testing.assert_array_equal(download(ak, name, "uint64", 4),
                                  np.arange(9223372036854775811, 9223372036854775815,
                                            dtype=np.uint64))
    msg = ak.error("arange<bigint,1>", {"start": 2**200, "stop": 2**200 + 3, "step": -1})
    assert msg == ("Error executing command arange<bigint,1>: argument 'step' is negative (-1): "
                   "bigints here are unsigned")
    name, _, _ = ak.created("randint<int64,1>", {"shape": "1000", "low": "-5", "high": "5",
                                                 "seed": "1"})
    v = download(ak, name, "int64", 1000)
    assert v.min() >= -5 and v.max() < 5 and len(set(v)) > 5
    again, _, _ = ak.created("randint<int64,1>", {"shape": "1000", "low": "-5", "high": "5",
                                                  "seed": "1"})
    np.testing.assert_array_equal(download(ak, again, "int64", 1000), v)
    name, _, _ = ak.created("randint<float64,1>", {
        "shape": "100", "low": "-4294967296.00000000000000000",
        "high": "4294967296.00000000000000000", "seed": "-1"})
    f = download(ak, name, "float64", 100)
    assert f.min() >= -2**32 and f.max() < 2**32 and len(set(f)) == 100
    name, _, _ = ak.created("randint<bool,1>", {"shape": "1000", "low": "0", "high": "1",
                                                "seed": "-1"})
    b = download(ak, name, "bool", 1000)
    assert b.any() and not b.all()
    name, dtype, size = ak.created("create<int64,1>", {"shape": "20"})
    assert (dtype, size) == ("int64", 20)
    assert ak.ok("set<int64,1>", {"array": name, "dtype": "int64", "val": "7"}) == \
        f"set element in {name}"
    np.testing.assert_array_equal(download(ak, name, "int64", 20), np.full(20, 7))
    assert "val" in ak.error("set<int64,1>", {"array": name, "dtype": "int64", "val": "x"})
    assert "shape" in ak.error("randint<int64,1>", {"shape": "-3", "low": "0", "high": "1"})
    assert ak.error("create<int64,1>", {"shape": str(2**62)}).startswith("Error executing")


@pytest.mark.parametrize("src,dst", [("int64", "uint64"), ("int64", "bool"),
                                     ("int64", "float64"), ("int64", "int64"),
                                     ("uint64", "uint64"), ("bool", "int64"), ("bool", "bool"),
                                     ("float64", "float64"), ("float64", "int64")])
def test_cast(ak, src, dst):
    base = np.array([-3, 0, 1, 2, 250], dtype=np.int64)
    arr = {"int64": base, "uint64": base.astype(np.uint64), "bool": base > 0,
           "float64": base * 1.5}[src]
    name, _, _ = upload(ak, arr)
    out, dtype, size = ak.created(f"cast<{src},{dst},1>", {"name": name})
    assert dtype == dst
    np.testing.assert_array_equal(download(ak, out, dst, size), arr.astype(dst))


@pytest.mark.parametrize("op", ["==", "!=", "<", ">=", "+", "-", "*", "//", "%", "/", "**",
                                "&", "|", "^", "<<", ">>"])
def test_binopvv_int(ak, op):
    a = np.array([-7, 0, 5, 9, 3, 2**62], dtype=np.int64)
    b = np.array([2, 3, -5, 9, 0, 4], dtype=np.int64)
    na, _, _ = upload(ak, a)
    nb, _, _ = upload(ak, b)
    out, dtype, size = ak.created("binopvv<int64,int64,1>", {"op": op, "a": na, "b": nb})
    with np.errstate(all="ignore"):
        if op in ("<<", ">>", "**"):
            b = np.abs(b)
            nb, _, _ = upload(ak, b)
            out, dtype, size = ak.created("binopvv<int64,int64,1>", {"op": op, "a": na, "b": nb})
        expect = eval(f"a {op} b")
        if op in ("//", "%"):
            expect = np.where(b == 0, 0, expect)
    assert dtype == str(expect.dtype)
    np.testing.assert_array_equal(download(ak, out, dtype, size), expect)


def test_binops_mixed(ak):
    f = np.array([0.5, -1.5, np.nan, 3.0])
    g = np.array([0.5, 2.0, np.nan, -1.0])
    nf, _, _ = upload(ak, f)
    ng, _, _ = upload(ak, g)
    out, dtype, _ = ak.created("binopvv<float64,float64,1>", {"op": "==", "a": nf, "b": ng})
    np.testing.assert_array_equal(download(ak, out, "bool", 4), f == g)
    u = np.array([1, 2**64 - 1, 3, 0], dtype=np.uint64)
    nu, _, _ = upload(ak, u)
    out, dtype, _ = ak.created("binopvv<uint64,uint64,1>", {"op": "+", "a": nu, "b": nu})
    assert dtype == "uint64"
    np.testing.assert_array_equal(download(ak, out, "uint64", 4), u + u)
    bo = np.array([True, False, True, False])
    nbo, _, _ = upload(ak, bo)
    out, dtype, _ = ak.created("binopvv<bool,bool,1>", {"op": "^", "a": nbo, "b": nbo})
    assert dtype == "bool" and not download(ak, out, "bool", 4).any()
    out, dtype, _ = ak.created("binopvs<bool,bool,1>", {"op": "^", "a": nbo, "value": True})
    np.testing.assert_array_equal(download(ak, out, "bool", 4), ~bo)
    i = np.array([5, -3, 0, 12], dtype=np.int64)
    ni, _, _ = upload(ak, i)
    for op, expect in ((">", i > 0), (">=", i >= 0), ("!=", i != 0), ("==", i == 0),
                       ("-", i - 4), ("*", i * 4), ("//", i // 4)):
        out, dtype, size = ak.created("binopvs<int64,int64,1>", {"op": op, "a": ni,
                                                                  "value": 4 if op in "-*//"
                                                                  else 0})
        np.testing.assert_array_equal(download(ak, out, dtype, size), expect)
    out, dtype, _ = ak.created("binopsv<int64,int64,1>", {"op": "-", "a": ni, "value": 1})
    np.testing.assert_array_equal(download(ak, out, "int64", 4), 1 - i)
    # 5.5 - i: the client names the array's dtype first and the scalar's second
    out, dtype, _ = ak.created("binopsv<int64,float64,1>", {"op": "-", "a": ni, "value": 5.5})
    assert dtype == "float64"
    np.testing.assert_array_equal(download(ak, out, "float64", 4), 5.5 - i)
    out, dtype, _ = ak.created("binopvv<int64,float64,1>", {"op": "+", "a": ni, "b": nf})
    assert dtype == "float64"
    np.testing.assert_array_equal(download(ak, out, "float64", 4), i + f)
    # errors
    short, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    assert "size" in ak.error("binopvv<int64,int64,1>", {"op": "+", "a": ni, "b": short})
    assert "operator" in ak.error("binopvv<int64,int64,1>", {"op": "@", "a": ni, "b": ni})
    assert "float64" in ak.error("binopvv<float64,float64,1>", {"op": "&", "a": nf, "b": ng})
    assert "value" in ak.error("binopvs<int64,int64,1>", {"op": "+", "a": ni, "value": "x"})
    s = put_strings(ak, ["a"])
    assert "pdarray" in ak.error("binopvv<int64,int64,1>", {"op": "+", "a": s, "b": s})


@pytest.mark.parametrize("arr", [
    np.array([3, -1, 7, 7, 0, 2], dtype=np.int64),
    np.arange(100_000, dtype=np.int64) % 977,
    np.array([0.5, 2.5, -1.0]),
    np.array([1, 2**64 - 1, 5], dtype=np.uint64),
    np.array([True, False, True]),
    np.array([True, True]),
    np.sort(np.arange(50_000, dtype=np.int64) % 77),
], ids=["small", "large", "float", "uint", "bool", "alltrue", "sorted"])
def test_reductions(ak, arr):
    name, dtype, _ = upload(ak, arr)

    def red(op):
        return ak.ok(f"{op}<{dtype},1>", {"x": name, "skipNan": False})

    assert red("allAll") == f"bool {str(bool(arr.all())).lower()}"
    assert red("anyAll") == f"bool {str(bool(arr.any())).lower()}"
    total = arr.sum()
    sum_dtype = "uint64" if dtype == "uint64" else "float64" if dtype == "float64" else "int64"
    assert red("sumAll") == f"{sum_dtype} {total:g}" if dtype == "float64" else \
        red("sumAll") == f"{sum_dtype} {int(total)}"
    sorted_ok = bool(np.all(arr[:-1] <= arr[1:]))
    assert red("isSortedAll") == f"bool {str(sorted_ok).lower()}"
    assert ak.ok(f"argmaxAll<{dtype},1>", {"x": name}) == f"int64 {int(np.argmax(arr))}"
    if dtype == "bool":
        assert red("maxAll") == f"bool {str(bool(arr.max())).lower()}"
    elif dtype == "float64":
        assert red("maxAll") == f"float64 {arr.max():g}"
        assert red("minAll") == f"float64 {arr.min():g}"
    else:
        assert red("maxAll") == f"{dtype} {int(arr.max())}"
        assert red("minAll") == f"{dtype} {int(arr.min())}"


def test_reduction_errors(ak):
    name, _, _ = upload(ak, np.zeros(0, dtype=np.int64))
    assert ak.ok("sumAll<int64,1>", {"x": name, "skipNan": False}) == "int64 0"
    assert "empty" in ak.error("maxAll<int64,1>", {"x": name})
    assert "not" in ak.error("sumAll<float64,1>", {"x": name})
    assert "no object" in ak.error("sumAll<int64,1>", {"x": "id_none_1"})


def test_cumsum_str(ak):
    arr = np.array([4, -2, 7, 0, 11], dtype=np.int64)
    name, _, _ = upload(ak, arr)
    out, dtype, size = ak.created("cumSum<int64,1>", {"x": name, "axis": 0,
                                                      "includeInitial": False})
    np.testing.assert_array_equal(download(ak, out, "int64", size), np.cumsum(arr))
    big = np.arange(200_000, dtype=np.int64)
    nbig, _, _ = upload(ak, big)
    out, _, size = ak.created("cumSum<int64,1>", {"x": nbig, "axis": 0, "includeInitial": True})
    np.testing.assert_array_equal(download(ak, out, "int64", size),
                                  np.concatenate([[0], np.cumsum(big)]))
    bo, _, _ = upload(ak, np.array([True, True, False]))
    out, dtype, _ = ak.created("cumSum<bool,1>", {"x": bo, "axis": 0, "includeInitial": False})
    assert dtype == "int64"
    assert ak.ok("str", {"array": name, "printThresh": 100}) == "[4 -2 7 0 11]"
    assert ak.ok("repr", {"array": name, "printThresh": 100}) == "array([4 -2 7 0 11])"
    assert ak.ok("str", {"array": nbig, "printThresh": 100}) == \
        "[0 1 2 ... 199997 199998 199999]"
    u, _, _ = upload(ak, np.array([2**64 - 116, 2**64 - 115], dtype=np.uint64))
    assert ak.ok("str", {"array": u, "printThresh": 100}) == \
        "[18446744073709551500 18446744073709551501]"
    f, _, _ = upload(ak, np.array([0.1, 2.5, -3.0]))
    assert ak.ok("str", {"array": f, "printThresh": 100}) == "[0.1 2.5 -3]"


def test_indexing(ak):
    arr = np.arange(20, dtype=np.int64) * 3
    name, _, _ = upload(ak, arr)
    assert ak.ok("[int]<int64,1>", {"array": name, "idx": 0}) == "int64 0"
    assert ak.ok("[int]<int64,1>", {"array": name, "idx": -1}) == "int64 57"
    assert "out of bounds" in ak.error("[int]<int64,1>", {"array": name, "idx": 20})
    u, _, _ = upload(ak, np.array([2**64 - 116], dtype=np.uint64))
    assert ak.ok("[int]<uint64,1>", {"array": u, "idx": 0}) == "uint64 18446744073709551500"
    for start, stop, stride in ((1, 4, 1), (0, 20, 3), (19, -1, -2), (5, 5, 1), (0, 20, 7)):
        out, _, size = ak.created("[slice]<int64,1>", {"array": name, "starts": start,
                                                       "stops": stop, "strides": stride,
                                                       "max_bits": 0})
        expect = arr[start:stop if stop >= 0 else None:stride]
        np.testing.assert_array_equal(download(ak, out, "int64", size), expect)
    assert "slice" in ak.error("[slice]<int64,1>", {"array": name, "starts": -5, "stops": 4,
                                                    "strides": 1})
    assert "step" in ak.error("[slice]<int64,1>", {"array": name, "starts": 0, "stops": 4,
                                                   "strides": 0})
    mask, _, _ = upload(ak, arr % 2 == 0)
    out, _, size = ak.created("[pdarray]", {"array": name, "idx": mask})
    np.testing.assert_array_equal(download(ak, out, "int64", size), arr[arr % 2 == 0])
    pos, _, _ = upload(ak, np.array([3, -1, 0, 3], dtype=np.int64))
    out, _, size = ak.created("[pdarray]", {"array": name, "idx": pos})
    np.testing.assert_array_equal(download(ak, out, "int64", size), arr[[3, -1, 0, 3]])
    bad, _, _ = upload(ak, np.array([0, 20], dtype=np.int64))
    assert "out of bounds" in ak.error("[pdarray]", {"array": name, "idx": bad})
    short, _, _ = upload(ak, np.array([True]))
    assert "bool index" in ak.error("[pdarray]", {"array": name, "idx": short})
    # assignment: in place, under the same name
    vals, _, _ = upload(ak, np.array([-1, -2], dtype=np.int64))
    where, _, _ = upload(ak, np.array([0, 19], dtype=np.int64))
    assert ak.ok("[pdarray]=pdarray", {"array": name, "idx": where, "value": vals}) == \
        f"{name} success"
    expect = arr.copy()
    expect[[0, 19]] = [-1, -2]
    np.testing.assert_array_equal(download(ak, name, "int64", 20), expect)
    assert "values" in ak.error("[pdarray]=pdarray", {"array": name, "idx": where,
                                                      "value": short})
    # concatenate
    a2, _, _ = upload(ak, np.array([7, 8], dtype=np.int64))
    out, _, size = ak.created("concatenate<int64,1>", {"names": [name, a2], "axis": 0,
                                                        "offsets": ["0", "20"]})
    np.testing.assert_array_equal(download(ak, out, "int64", size), np.concatenate([expect,
                                                                                    [7, 8]]))
    f, _, _ = upload(ak, np.array([1.0]))
    assert "one dtype" in ak.error("concatenate<int64,1>", {"names": [name, f], "axis": 0})


def test_unique_and_broadcast(ak):
    keys = np.array([5, 1, 5, 3, 1, 5], dtype=np.int64)
    k, _, _ = upload(ak, keys)
    msg = ak.ok("unique", {"returnGroupStr": True, "assumeSortedStr": False, "nstr": 1,
                           "keynames": [k], "keytypes": ["pdarray"]})
    parts = msg.split("+")
    assert len(parts) == 3
    perm = download(ak, created_name(parts[0]), "int64", 6)
    segs = download(ak, created_name(parts[1]), "int64", 3)
    # the unique key indices: the first row of each group, which the client gathers the
    # keys with (groupbyclass.unique: pda[unique_key_indices]), not the keys themselves
    uki = download(ak, created_name(parts[2]), "int64", 3)
    np.testing.assert_array_equal(perm, np.argsort(keys, kind="stable"))
    np.testing.assert_array_equal(segs, [0, 2, 3])
    np.testing.assert_array_equal(uki, [1, 3, 0])
    np.testing.assert_array_equal(keys[uki], [1, 3, 5])
    msg = ak.ok("unique", {"returnGroupStr": False, "keynames": [k], "keytypes": ["pdarray"]})
    np.testing.assert_array_equal(download(ak, created_name(msg), "int64", 3), [1, 3, 0])
    s = put_strings(ak, ["b", "a", "b"])
    msg = ak.ok("unique", {"returnGroupStr": False, "keynames": [s], "keytypes": ["Strings"]})
    np.testing.assert_array_equal(download(ak, created_name(msg), "int64", 2), [1, 0])
    # gbbroadcast: each group's value over its rows
    seg_name = created_name(parts[1])
    vals, _, _ = upload(ak, np.array([10, 30, 50], dtype=np.int64))
    out, _, size = ak.created("gbbroadcast", {"permName": "none", "segName": seg_name,
                                              "valName": vals, "permute": False, "size": 6})
    np.testing.assert_array_equal(download(ak, out, "int64", size), [10, 10, 30, 50, 50, 50])
    out, _, size = ak.created("gbbroadcast", {"permName": created_name(parts[0]),
                                              "segName": seg_name, "valName": vals,
                                              "permute": True, "size": 6})
    np.testing.assert_array_equal(download(ak, out, "int64", size), keys * 10)
    assert "segment" in ak.error("gbbroadcast", {"permName": "none", "segName": vals,
                                                 "valName": vals, "permute": False, "size": 6})
    bad_perm, _, _ = upload(ak, np.array([0, 1, 2, 3, 4, 99], dtype=np.int64))
    assert "permutation" in ak.error("gbbroadcast", {"permName": bad_perm, "segName": seg_name,
                                                     "valName": vals, "permute": True,
                                                     "size": 6})


def arkouda_short_key(t):
    """Arkouda's server's sort key of a string of fewer than 16 bytes (its bytesToUintArr):
    big-endian numbers of its bytes, one of all of them when no string is longer than 8
    bytes, else one of its first half and one of the rest."""
    def num(b):
        return int.from_bytes(b, "big")
    return lambda s: (num(s.encode()),) if t <= 8 else \
        (num(s.encode()[:len(s.encode()) // 2]), num(s.encode()[len(s.encode()) // 2:]))


@pytest.mark.parametrize("strs", [
    [f"string {i}" for i in range(51)][::-1] + ["string 7"],  # Categorical's categories
    ["b", "abc", "", "zz", "a", "abc", "ba"],
    ["a much longer string", "b", "a", "b"],  # 16 bytes or more: by bytes
], ids=["digits", "short", "long"])
def test_unique_strings_in_arkouda_order(ak, strs):
    """One Strings key groups as Arkouda's server groups it, so that a Categorical made of
    it lists its categories in the same order ("string 2" before "string 10")."""
    s = put_strings(ak, strs)
    msg = ak.ok("unique", {"returnGroupStr": True, "assumeSortedStr": False, "nstr": 1,
                           "keynames": [s], "keytypes": ["Strings"]})
    perm_t, segs_t, uki_t = msg.split("+")
    uki = download(ak, created_name(uki_t), "int64", len(set(strs)))
    longest = max(len(x.encode()) for x in strs)
    key = arkouda_short_key(longest) if longest < 16 else (lambda x: x.encode())
    want = sorted(set(strs), key=key)
    assert [strs[i] for i in uki] == want
    # the first row of each group, and the permutation stable
    assert all(strs.index(strs[i]) == i for i in uki)
    perm = download(ak, created_name(perm_t), "int64", len(strs))
    assert list(perm) == sorted(range(len(strs)), key=lambda i: key(strs[i]))
    segs = download(ak, created_name(segs_t), "int64", len(want))
    assert [strs[perm[g]] for g in segs] == want


def test_segmented_reduction(ak):
    """What GroupBy's reductions and SegArray's comparisons send: one value per segment of
    values already in segment order."""
    vals = np.array([3, -1, 4, 1, 5, 9, 2, 6], dtype=np.int64)
    segs = np.array([0, 3, 3, 5], dtype=np.int64)  # an empty segment too
    v, _, _ = upload(ak, vals)
    sg, _, _ = upload(ak, segs)
    b, _, _ = upload(ak, vals > 2)
    groups = np.split(vals, segs[1:])

    def reduce(op, values=v, **extra):
        args = {"values": values, "segments": sg, "op": op, "skip_nan": True, "ddof": 1}
        name, dtype, size = ak.created("segmentedReduction", {**args, **extra})
        assert size == 4
        return download(ak, name, dtype, size)

    np.testing.assert_array_equal(reduce("sum"), [g.sum() for g in groups])
    np.testing.assert_array_equal(reduce("count"), [g.size for g in groups])
    np.testing.assert_array_equal(reduce("max")[[0, 2, 3]], [g.max()
                                                             for g in groups if g.size])
    np.testing.assert_array_equal(reduce("nunique"), [np.unique(g).size for g in groups])
    # bools: sum as int64, any and all (an empty segment is all True, any False)
    bg = np.split(vals > 2, segs[1:])
    np.testing.assert_array_equal(reduce("sum", b), [g.sum() for g in bg])
    np.testing.assert_array_equal(reduce("all", b), [g.all() for g in bg])
    np.testing.assert_array_equal(reduce("any", b), [g.any() for g in bg])
    # every segment empty (no values at all)
    none, _, _ = upload(ak, np.zeros(0, dtype=np.int64))
    zeros, _, _ = upload(ak, np.zeros(5, dtype=np.int64))
    for op in ("nunique", "count", "sum"):
        out, _, size = ak.created("segmentedReduction", {"values": none, "segments": zeros,
                                                         "op": op, "skip_nan": True, "ddof": 1})
        np.testing.assert_array_equal(download(ak, out, "int64", size), [0] * 5)
    f, _, _ = upload(ak, np.array([0.5, np.nan, 1.5, 2, 3, 4, 5, 6]))
    np.testing.assert_array_equal(reduce("count", f), [3, 0, 2, 3])
    np.testing.assert_array_equal(reduce("sum", f, skip_nan=False)[2:], [5.0, 15.0])
    # refused with a reason, the daemon serving on
    base = {"values": v, "segments": sg, "skip_nan": True, "ddof": 1}
    assert "not served" in ak.error("segmentedReduction", {**base, "op": "median"})
    assert "skip_nan" in ak.error("segmentedReduction", {**base, "values": f, "op": "sum"})
    assert "bool" in ak.error("segmentedReduction", {**base, "op": "all"})
    bad, _, _ = upload(ak, np.array([0, 5, 3], dtype=np.int64))
    assert "out of order" in ak.error("segmentedReduction", {**base, "segments": bad,
                                                              "op": "sum"})
    assert "int64" in ak.error("segmentedReduction", {**base, "segments": f, "op": "sum"})
    np.testing.assert_array_equal(reduce("sum"), [g.sum() for g in groups])


def test_assign_scalar(ak):
    """[pdarray]=val: array[idx] = one value, as SegArray's == sends it (a bool mask)."""
    for dtype, value, text in (("bool", True, "True"), ("int64", -7, "-7"),
                               ("float64", 2.5, "2.5"), ("uint64", 2**64 - 1, str(2**64 - 1))):
        a = np.zeros(6, dtype=dtype)
        name, _, _ = upload(ak, a)
        mask, _, _ = upload(ak, np.array([True, False, True, False, False, True]))
        assert ak.ok("[pdarray]=val", {"array": name, "idx": mask, "dtype": dtype,
                                       "value": text}) == f"{name} success"
        a[[0, 2, 5]] = value
        np.testing.assert_array_equal(download(ak, name, dtype, 6), a)
        pos, _, _ = upload(ak, np.array([1, -1], dtype=np.int64))
        ak.ok("[pdarray]=val", {"array": name, "idx": pos, "dtype": dtype, "value": text})
        a[[1, -1]] = value
        np.testing.assert_array_equal(download(ak, name, dtype, 6), a)
    assert "not a int64" in ak.error("[pdarray]=val", {"array": upload(ak, np.zeros(2,
                                                      dtype=np.int64))[0], "idx": pos,
                                                      "dtype": "int64", "value": "ten"})
    far, _, _ = upload(ak, np.array([9], dtype=np.int64))
    assert "bounds" in ak.error("[pdarray]=val", {"array": name, "idx": far, "dtype": dtype,
                                                  "value": text})


def test_assign_one_element(ak, akd):
    """[int]=val<T,1>: arr[i] = v as the client's __setitem__ sends it (the index made
    non-negative, the value in format_other's text, max_bits), answered with Arkouda's empty
    success; nothing of the index it takes is left behind."""
    before = json.loads(ak.ok("info", {"names": "__AllSymbols__"}))
    for dtype, value, text in (("int64", 2, "2"), ("float64", 2.5, "2.5"), ("bool", True, "True"),
                               ("uint64", 2**64 - 1, str(2**64 - 1))):
        a = np.zeros(5, dtype=dtype)
        name, _, _ = upload(ak, a)
        assert ak.ok(f"[int]=val<{dtype},1>", {"array": name, "idx": 2, "value": text,
                                               "max_bits": 0}) == ""
        a[2] = value
        np.testing.assert_array_equal(download(ak, name, dtype, 5), a)
        ak.ok(f"[int]=val<{dtype},1>", {"array": name, "idx": -1, "value": text, "max_bits": 0})
        a[-1] = value
        np.testing.assert_array_equal(download(ak, name, dtype, 5), a)
        assert "out of bounds" in ak.error(f"[int]=val<{dtype},1>", {
            "array": name, "idx": 5, "value": text, "max_bits": 0})
        assert "no object named 'nope'" in ak.error(f"[int]=val<{dtype},1>", {
            "array": "nope", "idx": 0, "value": text, "max_bits": 0})
        ak.ok("delete", {"name": name})
    name, _, _ = upload(ak, np.zeros(2, dtype=np.int64))
    assert "not a int64" in ak.error("[int]=val<int64,1>", {"array": name, "idx": 0,
                                                                "value": "ten", "max_bits": 0})
    ak.ok("delete", {"name": name})
    assert json.loads(ak.ok("info", {"names": "__AllSymbols__"})) == before
    assert native(akd, "ping")[0]["result"]["pong"]


def test_strings_compute(ak):
    msg = ak.ok("randomStrings", {"size": "100", "dist": "uniform", "chars": "uppercase",
                                  "arg1": "1", "arg2": "16", "seed": "7"})
    m = re.match(r"^created (\S+) str 100 1 \[100\] 1\+created bytes.size (\d+)$", msg)
    assert m, msg
    strs = get_strings(ak, m.group(1))
    assert len(strs) == 100 and all(1 <= len(x) < 16 and x.isupper() for x in strs)
    again = ak.ok("randomStrings", {"size": "100", "dist": "uniform", "chars": "uppercase",
                                    "arg1": "1", "arg2": "16", "seed": "7"})
    assert get_strings(ak, again.split()[1]) == strs
    msg = ak.error("randomStrings", {"size": str(2**47), "dist": "uniform", "chars": "numeric",
                                     "arg1": "1", "arg2": "2", "seed": "1"})
    assert "memory" in msg or "limit" in msg, msg
    other = put_strings(ak, strs[:50] + ["x"] * 50)
    out, _, size = ak.created("segmentedBinopvv", {"op": "==", "objType": "Strings",
                                                   "obj": m.group(1), "otherType": "Strings",
                                                   "other": other, "left": False, "delim": ""})
    np.testing.assert_array_equal(download(ak, out, "bool", 100), [True] * 50 + [False] * 50)
    words = put_strings(ak, ["N/A", "b", "N/A", ""])
    out, _, _ = ak.created("segmentedBinopvs", {"op": "==", "objType": "Strings", "obj": words,
                                                "otherType": "str", "other": "N/A"})
    np.testing.assert_array_equal(download(ak, out, "bool", 4), [True, False, True, False])
    out, _, _ = ak.created("segmentedBinopvs", {"op": "!=", "objType": "Strings", "obj": words,
                                                "otherType": "str", "other": ""})
    np.testing.assert_array_equal(download(ak, out, "bool", 4), [True, True, True, False])
    assert "==" in ak.error("segmentedBinopvs", {"op": "<", "objType": "Strings", "obj": words,
                                                 "otherType": "str", "other": ""})
    assert ak.ok("segmentedIndex", {"subcmd": "intIndex", "objType": "Strings", "dtype": "<U0",
                                    "obj": words, "key": "1"}) == 'item str "b"'
    idx, _, _ = upload(ak, np.array([3, 1, 1], dtype=np.int64))
    msg = ak.ok("segmentedIndex", {"subcmd": "pdarrayIndex", "objType": "Strings",
                                   "dtype": "<U0", "obj": words, "key": idx})
    assert get_strings(ak, created_name(msg)) == ["", "b", "b"]
    msg = ak.ok("segmentedIndex", {"subcmd": "sliceIndex", "objType": "Strings", "dtype": "<U0",
                                   "obj": words, "key": json.dumps(["1", "4", "2"])})
    assert get_strings(ak, created_name(msg)) == ["b", ""]
    assert "bounds" in ak.error("segmentedIndex", {"subcmd": "intIndex", "objType": "Strings",
                                                   "obj": words, "key": "9"})
    msg = ak.ok("concatenateStr", {"objType": "Strings", "names": [words, other],
                                   "mode": "append"})
    assert get_strings(ak, created_name(msg)) == ["N/A", "b", "N/A", ""] + strs[:50] + \
        ["x"] * 50
    assert "Strings" in ak.error("concatenateStr", {"objType": "Strings", "names": [idx],
                                                    "mode": "append"})


def test_groupby_with_categorical_key(ak, akd):
    """A GroupBy whose key is a Categorical: the client sends it as a JSON object of its
    parts, and reads it back as CATEGORICAL+|+{...}."""
    base = akd.data_dir / "ak_gbcat"
    cats = put_strings(ak, ["x", "y", "N/A"])
    codes, _, _ = upload(ak, np.array([1, 0, 1], dtype=np.int64))
    nac, _, _ = upload(ak, np.array([2], dtype=np.int64))
    perm, _, _ = upload(ak, np.array([1, 0, 2], dtype=np.int64))
    segs, _, _ = upload(ak, np.array([0, 1], dtype=np.int64))
    uki, _, _ = upload(ak, np.array([1, 0], dtype=np.int64))
    key = {"codes": codes, "categories": cats, "NA_codes": nac}
    ak.ok("tohdf", {"num_keys": 1, "key_names": json.dumps([key]),
                    "key_dtypes": ["dtype[int64]"], "key_objTypes": ["Categorical"],
                    "unique_key_idx": uki, "permutation": perm, "segments": segs,
                    "dset": "g", "write_mode": 0, "filename": str(base), "objType": "GroupBy",
                    "file_format": 0})
    with h5py.File(base, "r") as h:
        assert h["g"].attrs["ObjType"] == 5
        assert h["g"]["KEY_0"].attrs["ObjType"] == 4
    _, items = read_all(ak, ["g"], [str(base)])
    gb = json.loads(items[0]["created"])
    typ, form = gb["KEY_0"].split("+|+", 1)
    assert typ == "CATEGORICAL"
    cat = json.loads(form)
    np.testing.assert_array_equal(download(ak, created_name(cat["codes"]), "int64", 3),
                                  [1, 0, 1])
    assert get_strings(ak, created_name(cat["categories"])) == ["x", "y", "N/A"]


def test_segmented_split(ak):
    strs = ["a,b,,c", "", "no commas", ",x,"]
    name = put_strings(ak, strs)
    msg = ak.ok("segmentedSplit", {"parent_name": name, "objtype": "Matcher", "max": 0,
                                   "return_segs": True, "pattern": ","})
    first, second = msg.split("+created bytes.size ")[0], msg.split("+")[-1]
    pieces = [p for s in strs for p in s.split(",")]
    assert re.match(rf"^created \S+ str {len(pieces)} 1 ", first), msg
    assert get_strings(ak, created_name(first)) == pieces
    np.testing.assert_array_equal(download(ak, created_name(second), "int64", 4),
                                  np.cumsum([0] + [len(s.split(",")) for s in strs])[:-1])
    msg = ak.ok("segmentedSplit", {"parent_name": name, "objtype": "Matcher", "max": 1,
                                   "return_segs": False, "pattern": ","})
    assert get_strings(ak, created_name(msg)) == [p for s in strs for p in s.split(",", 1)]
    assert "regular expressions" in ak.error("segmentedSplit", {
        "parent_name": name, "objtype": "Matcher", "max": 0, "return_segs": True,
        "pattern": "[,;]"})


NUL_WORDS = ["a\0b", "", "\0", "x\0", "\0\0\0", "héllo\0wörld", "a", "\0lo\0"]


def native_strings(akd, strs):
    """Strings put through the native endpoint (arraySegString has no offsets: each NUL
    ends a string there, as at Arkouda's server)."""
    seg = np.cumsum([0] + [len(s.encode()) + 1 for s in strs])[:-1].astype("<i8").tobytes()
    val = encode_ak_strings(strs)
    hdr, _ = request(akd.endpoint, {"v": 1, "cmd": "put", "args": {
        "objtype": "strings", "dtype": "str", "shape": [len(strs)]}, "buffers": [
        {"name": "segments", "nbytes": len(seg)}, {"name": "values", "nbytes": len(val)}]},
        [seg, val])
    assert hdr["ok"], hdr
    return hdr["result"]["object"]["name"]


def test_strings_holding_nul(ak, akd):
    """A NUL inside a string is data through the Strings commands: segStr-tondarray's
    offsets (from which Arkouda's client cuts each string), intIndex, slices, gathers,
    comparisons with a string holding NULs, concatenation, split, and tohdf/readAllHdf."""
    name = native_strings(akd, NUL_WORDS)
    assert get_strings(ak, name) == NUL_WORDS
    for i, w in enumerate(NUL_WORDS):
        msg = ak.ok("segmentedIndex", {"subcmd": "intIndex", "objType": "Strings",
                                       "dtype": "<U0", "obj": name, "key": str(i)})
        assert msg.startswith("item str ") and json.loads(msg[9:]) == w, (i, msg)
    msg = ak.ok("segmentedIndex", {"subcmd": "sliceIndex", "objType": "Strings", "dtype": "<U0",
                                   "obj": name, "key": json.dumps(["1", "8", "2"])})
    assert get_strings(ak, created_name(msg)) == NUL_WORDS[1:8:2]
    idx, _, _ = upload(ak, np.array([5, 0, 4, 4], dtype=np.int64))
    msg = ak.ok("segmentedIndex", {"subcmd": "pdarrayIndex", "objType": "Strings",
                                   "dtype": "<U0", "obj": name, "key": idx})
    assert get_strings(ak, created_name(msg)) == [NUL_WORDS[i] for i in (5, 0, 4, 4)]
    n = len(NUL_WORDS)
    for other in ("a\0b", "a", "\0", "\0\0\0", ""):
        out, _, _ = ak.created("segmentedBinopvs", {"op": "==", "objType": "Strings",
                                                    "obj": name, "otherType": "str",
                                                    "other": other})
        np.testing.assert_array_equal(download(ak, out, "bool", n),
                                      [w == other for w in NUL_WORDS], err_msg=repr(other))
    assert "NUL" in ak.error("segmentedBinopvs", {"op": "==", "objType": "Strings",
                                                  "obj": "x\0y", "otherType": "str",
                                                  "other": "a"})
    rev = native_strings(akd, NUL_WORDS[::-1])
    out, _, _ = ak.created("segmentedBinopvv", {"op": "!=", "objType": "Strings", "obj": name,
                                                "otherType": "Strings", "other": rev,
                                                "left": False, "delim": ""})
    np.testing.assert_array_equal(download(ak, out, "bool", n),
                                  [a != b for a, b in zip(NUL_WORDS, NUL_WORDS[::-1])])
    msg = ak.ok("concatenateStr", {"objType": "Strings", "names": [name, rev], "mode": "append"})
    assert get_strings(ak, created_name(msg)) == NUL_WORDS + NUL_WORDS[::-1]
    msg = ak.ok("segmentedSplit", {"parent_name": name, "objtype": "Matcher", "max": 0,
                                   "return_segs": True, "pattern": "l"})
    first, second = msg.split("+created bytes.size ")[0], msg.split("+")[-1]
    assert get_strings(ak, created_name(first)) == [p for w in NUL_WORDS for p in w.split("l")]
    np.testing.assert_array_equal(download(ak, created_name(second), "int64", n),
                                  np.cumsum([0] + [len(w.split("l")) for w in NUL_WORDS])[:-1])
    base = akd.data_dir / "ak_nul"
    ak.ok("tohdf", {"values": name, "dset": "s", "write_mode": 0, "filename": str(base),
                    "dtype": "<U0", "save_offsets": True, "objType": "strings",
                    "file_format": 1})
    _, items = read_all(ak, ["s"], [f"{base}*"])
    assert get_strings(ak, created_name(items[0]["created"])) == NUL_WORDS
    assert "NUL" in ak.error("tohdf", {"values": name, "dset": "s", "write_mode": 0,
                                       "filename": str(base), "dtype": "<U0",
                                       "save_offsets": False, "objType": "strings",
                                       "file_format": 1})


def test_failed_read_leaves_nothing(ak, akd):
    """A readAllHdf that fails part way (an awkward array, which Arkouda's client cannot
    hold, after a pdarray) publishes nothing; lsany takes a glob."""
    data = np.arange(4, dtype=np.int64)
    form = {"class": "NumpyArray", "primitive": "int64", "inner_shape": [], "parameters": {},
            "form_key": "n0"}
    hdr, _ = request(akd.endpoint, {"v": 1, "cmd": "put", "args": {
        "objtype": "awkward", "form": json.dumps(form), "length": 4, "name": "ak_big"},
        "buffers": [{"name": "n0-data", "nbytes": 32}]}, [data.tobytes()])
    assert hdr["ok"], hdr
    name, _, _ = upload(ak, np.arange(4, dtype=np.int64))
    hdr, _ = request(akd.endpoint, {"v": 1, "cmd": "tohdf", "args": {
        "names": [name, "ak_big"], "datasets": ["a", "z"], "path": "ak_fail.h5",
        "file_type": "single"}})
    assert hdr["ok"], hdr
    assert json.loads(ak.ok("lsany", {"filename": str(akd.data_dir / "ak_fail*")})) == ["a", "z"]
    before = {i["name"] for i in json.loads(ak.ok("info", {"names": "__AllSymbols__"}))}
    msg = ak.error("readAllHdf", {"dsets": ["a", "z"],
                                  "filenames": [str(akd.data_dir / "ak_fail.h5")]})
    assert "awkward" in msg
    after = {i["name"] for i in json.loads(ak.ok("info", {"names": "__AllSymbols__"}))}
    assert after == before
    request(akd.endpoint, {"v": 1, "cmd": "delete", "args": {"names": ["ak_big"]}})


WIRE_DOC = pathlib.Path(__file__).resolve().parents[3] / "shared" / "ARKOUDA_WIRE.md"


# Where the capture's server refused what Arkouda's own server serves, Arkouda's source wins:
# the reply its SequenceMsg.arange gives (a bigint of three elements).
SOURCE_WINS = {
    "arange<bigint,1>": {"msg": "created id_x bigint 3 1 [3] 16", "msgType": "NORMAL",
                         "msgFormat": "STRING", "user": "root"},
}


def captured_exchanges():
    """(cmd, request text, reply) of ARKOUDA_WIRE.md section 4 that name no object and
    carry no bytes: those a fresh daemon can answer as the capture's server did (or, in
    SOURCE_WINS, as Arkouda's server does)."""
    if not WIRE_DOC.is_file():
        return []
    text = WIRE_DOC.read_text()
    out = []
    for m in re.finditer(r"^## `([^`]+)`\n\nrequest:\n```\n([^`]*)\n```\nreply:\n```\n([^`]*)\n```",
                         text, re.M):
        cmd, req, rep = m.groups()
        if "id_" in req or "BINARY" in req or rep.endswith("[truncated]"):
            continue
        if cmd in ("lsany", "getfiletype", "readAllHdf", "hdffileformat"):
            continue  # they read the capture's files (test_pdarray_files reads ours)
        out.append((cmd, req, SOURCE_WINS.get(cmd, json.loads(rep))))
    return out


@pytest.mark.skipif(not WIRE_DOC.is_file(),
                    reason=f"the capture {WIRE_DOC} is not there (../shared beside the repository)")
@pytest.mark.parametrize("cmd,req,captured", captured_exchanges() or [(None, None, None)],
                         ids=[c[0] for c in captured_exchanges()] or ["none"])
def test_captured_requests_verbatim(ak, akd, cmd, req, captured):
    """The captured client's requests, byte for byte (but for the capture's data directory,
    made ours), get replies of the captured shape."""
    req = req.replace("/srv/h5ark/data", str(akd.data_dir))
    frames = ak.send_raw([req.encode()])
    assert len(frames) == 1
    mine = json.loads(frames[0])
    assert mine["msgType"] == captured["msgType"], (mine, captured)
    assert mine["user"] == captured["user"] and mine["msgFormat"] == "STRING"
    want, got = captured["msg"], mine["msg"]
    if want.startswith("created "):
        # the same dtype, size, shape and itemsize; the name is Arkouda's form, another one
        # (random strings: their byte count is the draw's)
        def shape(t):
            return re.sub(r"bytes.size \d+", "bytes.size N", re.sub(r"id_\w+", "NAME", t))
        assert shape(got) == shape(want)
    elif want.startswith("{"):
        assert set(json.loads(want)) <= set(json.loads(got))
    elif want.startswith(("connected to", "disconnected from")):
        assert got.split(" tcp")[0].split(" ipc")[0] == want.split(" tcp")[0]
    else:
        assert got == want


def test_bad_endpoint_stops_at_start(tmp_path):
    for value, words in (("bogus://nowhere", "cannot listen on bogus://nowhere"),
                         ("", "--arkouda-endpoint needs an endpoint")):
        out = subprocess.run(
            [daemon_binary(), "--endpoint", f"ipc://{tmp_path}/n.sock", "--data-dir",
             str(tmp_path / "data"), "--locales", "1", "--arkouda-endpoint", value],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        assert out.returncode != 0 and words in out.stdout, out.stdout


@pytest.mark.parametrize("arr", [np.arange(10, dtype=np.uint64) + 2**63, np.arange(10) % 3 == 0,
                                 np.linspace(0, 1, 10)], ids=["uint64", "bool", "float64"])
def test_slice_dtypes(ak, arr):
    name, dtype, _ = upload(ak, arr)
    out, got_dtype, size = ak.created(f"[slice]<{dtype},1>", {"array": name, "starts": 0,
                                                             "stops": 4, "strides": 1,
                                                             "max_bits": 0})
    assert got_dtype == dtype
    np.testing.assert_array_equal(download(ak, out, dtype, size), arr[0:4])


def test_clients_at_once(akd):
    """Several Arkouda clients at once, each on its own REQ socket, with a native one: every
    client gets its own replies."""
    failures = []

    def work(seed):
        c = Ak(akd.ak_endpoint, user=f"user{seed}")
        try:
            for i in range(15):
                arr = np.arange(1000 + seed * 7 + i, dtype=np.int64) * seed
                name, _, size = upload(c, arr)
                assert size == arr.size
                np.testing.assert_array_equal(download(c, name, "int64", size), arr)
                assert c.ok("sumAll<int64,1>", {"x": name, "skipNan": False}) == \
                    f"int64 {int(arr.sum())}"
                assert c.ok("delete", {"name": name}) == f"deleted {name}"
        except Exception as e:  # reported by the main thread
            failures.append(repr(e))
        finally:
            c.close()

    threads = [threading.Thread(target=work, args=(s,)) for s in range(1, 5)]
    for t in threads:
        t.start()
    for _ in range(20):
        assert native(akd, "ping")[0]["ok"]
    for t in threads:
        t.join(120)
    assert not failures, failures
