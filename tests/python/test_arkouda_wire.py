"""The Arkouda endpoint (--arkouda-endpoint): Arkouda's own wire dialect, spoken here with
nothing but pyzmq and json as Arkouda's client does (../shared/ARKOUDA_WIRE.md), against
a real daemon that shares its registry with the native endpoint."""
import json
import re

import pytest
import zmq

from conftest import Daemon, request

CREATED = re.compile(r"^created (id_[0-9A-Za-z]{7}_\d+) (\w+) (\d+) 1 \[(\d+)\] (\d+)$")


def ak_args(**params):
    """Arkouda's double encoding: a JSON list of JSON strings of {key, dtype, val}."""
    items = []
    for key, val in params.items():
        dtype = "str"
        if isinstance(val, bool):
            val, dtype = ("True" if val else "False"), "bool"
        elif isinstance(val, int):
            val, dtype = str(val), "int64"
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
def akd(tmp_path_factory):
    sock = tmp_path_factory.mktemp("ak") / "ak.sock"
    d = Daemon(locales=3, extra_args=["--arkouda-endpoint", f"ipc://{sock}"])
    d.ak_endpoint = f"ipc://{sock}"
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
    assert config["numLocales"] == 3
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
    sock = tmp_path / "akt.sock"
    d = Daemon(locales=2, token="sekrit", token_file=tokens,
               extra_args=["--arkouda-endpoint", f"ipc://{sock}"])
    try:
        anon = Ak(f"ipc://{sock}")
        r = anon.reply("connect")
        assert r["msgType"] == "ERROR" and "requires a token" in r["msg"]
        # an unknown command is not revealed without a token
        assert "requires a token" in anon.error("nosuch", {})
        bad = Ak(f"ipc://{sock}", token="wrong")
        assert "not valid" in bad.error("getconfig", {})
        good = Ak(f"ipc://{sock}", token="sekrit")
        assert good.ok("connect").startswith("connected")
        good.created("arange<int64,1>", {"start": 0, "stop": 3, "step": 1})
        reader = Ak(f"ipc://{sock}", token="looker")
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
