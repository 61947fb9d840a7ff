"""A running daemon takes a stream of random and mutated messages: it stays up, answers
every well-framed request (exactly once, with its id when one could be read), and still
serves correct results afterwards."""
import json
import os
import random

import msgpack
import numpy as np
import pytest
import zmq

from wire import request

MESSAGES = int(os.environ.get("H5ARK_FUZZ_MESSAGES", "100000"))
IN_FLIGHT = 64

# Well-formed requests the mutations start from (no shutdown: stopping is not a failure).
SEEDS = [
    {"v": 1, "cmd": "ping"},
    {"v": 1, "cmd": "getconfig"},
    {"v": 1, "cmd": "info"},
    {"v": 1, "cmd": "create", "args": {"dtype": "int32", "size": 17, "fill": "arange", "stop": 17}},
    {"v": 1, "cmd": "create", "args": {"dtype": "float64", "size": 9, "fill": "uniform", "seed": 3}},
    {"v": 1, "cmd": "create", "args": {"dtype": "uint8", "size": 5, "fill": "full", "value": 7}},
    {"v": 1, "cmd": "get", "args": {"name": "keep", "start": 1, "stop": 3}},
    {"v": 1, "cmd": "info", "args": {"names": ["keep"]}},
    {"v": 1, "cmd": "delete", "args": {"names": ["nothing-here"]}},
    {"v": 1, "cmd": "lshdf", "args": {"path": "fuzz.h5"}},
    {"v": 1, "cmd": "readhdf", "args": {"paths": ["fuzz.h5"]}},
    {"v": 1, "cmd": "tohdf", "args": {"names": ["keep"], "path": "fuzz.h5", "file_type": "single"}},
    {"v": 1, "cmd": "put", "args": {"dtype": "int16", "shape": [3]},
     "buffers": [{"name": "values", "nbytes": 6}], "_frames": [b"\x01\x00\x02\x00\x03\x00"]},
    {"v": 1, "cmd": "put", "args": {"objtype": "strings", "shape": [2]},
     "buffers": [{"name": "segments", "nbytes": 16}, {"name": "values", "nbytes": 5}],
     "_frames": [np.array([0, 2], np.int64).tobytes() + b"a\x00bc\x00"]},
    {"v": 1, "cmd": "put", "args": {"objtype": "strings", "shape": [2]},  # a NUL inside
     "buffers": [{"name": "segments", "nbytes": 16}, {"name": "values", "nbytes": 5}],
     "_frames": [np.array([0, 4], np.int64).tobytes() + b"a\x00b\x00\x00"]},
]

VALUES = [None, True, False, 0, 1, -1, 2**63 - 1, -2**63, 2**64 - 1, 1.5, float("nan"), "", "x",
          "../../etc/passwd", "/abs", "\x00", "é" * 50, b"\xff\x00", [], {}, [1, "a"], {"k": 1},
          "int64", "str", "strings", "pdarray", "keep", 2**40, -7]


def mutate_value(rng, v, depth=0):
    r = rng.random()
    if r < 0.15 or depth > 3:
        return rng.choice(VALUES)
    if isinstance(v, dict) and v:
        v = dict(v)
        k = rng.choice(list(v))
        op = rng.random()
        if op < 0.2:
            del v[k]
        elif op < 0.35:
            v[rng.choice(["v", "id", "cmd", "args", "buffers", "token", "extra", k + "x"])] = \
                rng.choice(VALUES)
        else:
            v[k] = mutate_value(rng, v[k], depth + 1)
        return v
    if isinstance(v, list) and v:
        v = list(v)
        i = rng.randrange(len(v))
        v[i] = mutate_value(rng, v[i], depth + 1)
        if rng.random() < 0.2:
            v.append(rng.choice(VALUES))
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return rng.choice([v + 1, v - 1, -v, v * 1000003, 2**62, 0])
    if isinstance(v, str):
        return rng.choice([v[:-1], v + "x", v.upper(), "", v * 3])
    return rng.choice(VALUES)


def make_message(rng, i):
    """(frames, expects_reply_with_id): a multipart message with at least one frame."""
    kind = rng.random()
    if kind < 0.1:  # random bytes
        return [rng.randbytes(rng.randrange(0, 64))], None
    seed = dict(rng.choice(SEEDS))
    frames = list(seed.pop("_frames", []))
    header = mutate_value(rng, seed) if kind < 0.8 else seed
    if isinstance(header, dict):
        header = dict(header)
        header["id"] = i
    packed = msgpack.packb(header, use_bin_type=True)
    if kind > 0.9:  # bit flips in the packed header
        b = bytearray(packed)
        for _ in range(rng.randrange(1, 4)):
            j = rng.randrange(len(b))
            b[j] ^= 1 << rng.randrange(8)
        packed = bytes(b)
        return [packed, *frames], None
    if rng.random() < 0.1:
        frames = [f[: rng.randrange(len(f) + 1)] for f in frames] + [rng.randbytes(3)]
    return [packed, *frames], (i if isinstance(header, dict) else None)


def pipelined(sock, count, send_one):
    """Send count requests (send_one(i) sends the i-th), keeping IN_FLIGHT unanswered at a
    time, and yield each reply's frames until every request is answered."""
    sent = answered = 0
    while sent < count or answered < sent:
        while sent < count and sent - answered < IN_FLIGHT:
            send_one(sent)
            sent += 1
        if not sock.poll(30000):
            pytest.fail(f"no reply for 30 s after {sent} sent, {answered} answered")
        parts = sock.recv_multipart()
        if parts[0] == b"" and len(parts) > 1:
            parts = parts[1:]  # the request began with an empty frame: a REQ delimiter, echoed
        answered += 1
        yield parts


def test_live_fuzz(start_daemon):
    d = start_daemon(locales=3, max_memory="256M")
    for name in ("keep", "untouched"):  # the fuzz may name "keep", never "untouched"
        rep = request(d.endpoint, {"v": 1, "cmd": "create", "args": {
            "dtype": "int64", "size": 10, "fill": "arange", "stop": 10, "name": name}})[0]
        assert rep["ok"]
    rng = random.Random(20261121)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(d.endpoint)
    answered = 0
    expected_ids = {}
    codes = {}

    def send_one(i):
        frames, want_id = make_message(rng, i)
        sock.send_multipart(frames)
        if want_id is not None:
            expected_ids[want_id] = frames

    try:
        for parts in pipelined(sock, MESSAGES, send_one):
            answered += 1
            rep = msgpack.unpackb(parts[0], raw=False)
            assert rep.get("v") == 1 and isinstance(rep.get("ok"), bool), rep
            if not rep["ok"]:
                assert rep["error"]["code"] != "internal", rep
                assert rep["error"]["message"]
                codes[rep["error"]["code"]] = codes.get(rep["error"]["code"], 0) + 1
            if "id" in rep and rep["id"] in expected_ids:
                del expected_ids[rep["id"]]
    finally:
        sock.close()
    assert answered == MESSAGES
    # every request whose id could be read was answered with that id
    assert not expected_ids, f"{len(expected_ids)} requests with an id got no reply with it"
    assert d.alive()
    hdr, frames = request(d.endpoint, {"v": 1, "cmd": "get", "args": {"name": "untouched"}})
    assert hdr["ok"] and np.array_equal(np.frombuffer(b"".join(frames), np.int64), np.arange(10))
    print(f"{MESSAGES} messages, all answered; error codes: {codes}")


# ---- the Arkouda endpoint: Arkouda's JSON envelope, mutated ----

AK_MESSAGES = int(os.environ.get("H5ARK_FUZZ_AK_MESSAGES", "20000"))

AK_SEEDS = [
    ("connect", None, None),
    ("getconfig", {}, None),
    ("note", {"message": "fuzz"}, None),
    ("info", {"names": "__AllSymbols__"}, None),
    ("delete", {"name": "nothing-here"}, None),
    ("arange<int64,1>", {"start": "0", "stop": "10", "step": "1"}, None),
    ("randint<float64,1>", {"shape": "9", "low": "0", "high": "1", "seed": "3"}, None),
    ("array<int64,1>", {"dtype": "int64", "shape": '["2"]', "seg_string": "False"},
     np.arange(2, dtype=np.int64).tobytes()),
    ("arraySegString<uint8>", {"size": "5"}, b"a\x00bc\x00"),
    ("tondarray<int64,1>", {"array": "keep"}, None),
    ("bigint_to_uint_list<bigint,1>", {"array": "big"}, None),
    ("[int]<bigint,1>", {"array": "big", "idx": "1"}, None),
    ("[slice]<bigint,1>", {"array": "big", "starts": "0", "stops": "2", "strides": "1",
                           "max_bits": "-1"}, None),
    ("tondarray<bigint,1>", {"array": "big"}, None),
    ("tohdf", {"values": "big", "dset": "b", "write_mode": "0", "filename": "fz_big",
               "objType": "pdarray", "file_format": "0", "save_offsets": "False"}, None),
    ("hdffileformat", {"filename": "fz_big*"}, None),
    ("big_int_creation<bigint,1>", {"arrays": '["keep", "untouched"]', "num_arrays": "2",
                                    "shape": '["10"]', "max_bits": "70"}, None),
    ("segStr-tondarray", {"obj": "keep", "comp": "values"}, None),
    ("binopvs<int64,int64,1>", {"op": "+", "a": "keep", "value": "3"}, None),
    ("binopvv<int64,int64,1>", {"op": "==", "a": "keep", "b": "keep"}, None),
    ("sumAll<int64,1>", {"x": "keep", "skipNan": "False"}, None),
    ("[slice]<int64,1>", {"array": "keep", "starts": "1", "stops": "8", "strides": "2"}, None),
    ("[pdarray]", {"array": "keep", "idx": "keep"}, None),
    ("cumSum<int64,1>", {"x": "keep", "axis": "0", "includeInitial": "True"}, None),
    ("unique", {"returnGroupStr": "True", "keynames": '["keep"]', "keytypes": '["pdarray"]'},
     None),
    ("unique", {"returnGroupStr": "True", "nstr": "0", "keynames": '["keep", "mask"]',
                "keytypes": '["pdarray", "pdarray"]'}, None),
    ("gbbroadcast", {"permName": "none", "segName": "keep", "valName": "keep",
                     "permute": "False", "size": "10"}, None),
    ("[pdarray]", {"array": "keep", "idx": "mask"}, None),
    ("[pdarray]=pdarray", {"array": "keep", "idx": "keep", "value": "keep"}, None),
    ("[int]<int64,1>", {"array": "keep", "idx": "-1"}, None),
    ("concatenate<int64,1>", {"names": '["keep", "untouched"]', "axis": "0",
                              "offsets": '["0", "10"]'}, None),
    ("set<int64,1>", {"array": "keep", "dtype": "int64", "val": "3"}, None),
    ("cast<int64,float64,1>", {"name": "keep"}, None),
    ("str<int64,1>", {"array": "keep", "printThresh": "5"}, None),
    ("argmaxAll<int64,1>", {"x": "keep"}, None),
    ("segmentedBinopvv", {"op": "==", "objType": "Strings", "obj": "words",
                          "otherType": "Strings", "other": "words", "left": "False",
                          "delim": ""}, None),
    ("segmentedBinopvs", {"op": "==", "objType": "Strings", "obj": "words",
                          "otherType": "str", "other": "b"}, None),
    ("segmentedBinopvs", {"op": "!=", "objType": "Strings", "obj": "words",
                          "otherType": "str", "other": "c\x00d"}, None),
    ("segmentedIndex", {"subcmd": "pdarrayIndex", "objType": "Strings", "dtype": "<U0",
                        "obj": "words", "key": "keep"}, None),
    ("segmentedIndex", {"subcmd": "intIndex", "objType": "Strings", "dtype": "<U0",
                        "obj": "words", "key": "1"}, None),
    ("unique", {"returnGroupStr": "True", "assumeSortedStr": "False", "nstr": "2",
                "keynames": '["words"]', "keytypes": '["Strings"]'}, None),
    ("tohdf", {"values": "words", "dset": "s", "write_mode": "0", "filename": "akfuzz_s",
               "objType": "strings", "file_format": "1", "save_offsets": "True"}, None),
    ("readAllHdf", {"dsets": '["s"]', "filenames": '["akfuzz_s*"]'}, None),
    ("tohdf", {"values": "keep", "dset": "a", "write_mode": "0", "filename": "akfuzz",
               "objType": "pdarray", "file_format": "0"}, None),
    ("readAllHdf", {"dsets": '["a"]', "filenames": '["akfuzz"]'}, None),
    ("lsany", {"filename": "akfuzz"}, None),
    ("getfiletype", {"filename": "/etc/passwd"}, None),
    ("randomStrings", {"size": "5", "dist": "uniform", "chars": "numeric", "arg1": "1",
                       "arg2": "4", "seed": "1"}, None),
    ("segmentedSplit", {"parent_name": "keep", "objtype": "Matcher", "max": "0",
                        "return_segs": "True", "pattern": ","}, None),
    ("segmentedIndex", {"subcmd": "sliceIndex", "objType": "Strings", "obj": "words",
                        "key": '["0", "2", "1"]'}, None),
]

AK_VALUES = ["", "x", "-1", "0", "99999999999999999999", str(2**62), "1.5", "nan", "True",
             "[", "[]", '["keep"]', '[1, 2]', '{"segments": "keep"}', "keep", "big",
             "../../etc/passwd", "/", "\x00", "é" * 20, "None", "mask", "words", '["words"]',
             "Strings", "pdarray", "-9223372036854775808", "4", "1e300"]


def ak_envelope(rng, cmd, params, binary):
    args = "" if params is None else json.dumps(
        [json.dumps({"key": k, "dtype": "str", "val": v}) for k, v in params.items()])
    env = {"user": "fuzz", "token": "", "cmd": cmd, "format": "BINARY" if binary else "STRING",
           "args": args, "size": -1 if params is None else len(params)}
    return env


def ak_message(rng):
    kind = rng.random()
    if kind < 0.08:
        return [rng.randbytes(rng.randrange(0, 64))]
    cmd, params, payload = rng.choice(AK_SEEDS)
    params = dict(params) if params is not None else None
    if params and kind < 0.6:
        for _ in range(rng.randrange(1, 3)):
            key = rng.choice(list(params) + ["extra"])
            op = rng.random()
            if op < 0.2 and key in params:
                del params[key]
            else:
                params[key] = rng.choice(AK_VALUES)
            if not params:
                break
    if kind > 0.9:
        cmd = rng.choice([cmd + "x", cmd.split("<")[0], cmd + ">", "<", "", "[pdarray]=pdarray",
                          "cast<int64,bool,1>", "set<int64,1>", "create<int64,1>"])
    env = ak_envelope(rng, cmd, params, payload is not None)
    if rng.random() < 0.1:
        env[rng.choice(list(env))] = rng.choice([None, 1, [], {}, "x"])
    text = json.dumps(env).encode()
    if rng.random() < 0.08:
        b = bytearray(text)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        text = bytes(b)
    if payload is not None:
        if rng.random() < 0.2:
            payload = payload[: rng.randrange(len(payload) + 1)]
        return [text + b"BINARY_PAYLOAD", payload]
    return [text]


def ak_fuzz(endpoint, ak_endpoint, count, seed):
    """Seed `keep`, `untouched` and `big` through the native endpoint, send count mutated
    Arkouda envelopes (pipelined) to ak_endpoint; every reply must be one well-formed frame.
    Returns the reply kinds counted."""
    for name in ("keep", "untouched"):
        assert request(endpoint, {"v": 1, "cmd": "create", "args": {
            "dtype": "int64", "size": 10, "fill": "arange", "stop": 10, "name": name}})[0]["ok"]
    limbs = np.arange(6, dtype=np.uint64) << np.uint64(60)  # a bigint of two limbs
    assert request(endpoint, {"v": 1, "cmd": "put", "args": {
        "dtype": "bigint", "shape": [3], "name": "big"},
        "buffers": [{"name": "Limb_0", "nbytes": 24}, {"name": "Limb_1", "nbytes": 24}]},
        [limbs[:3].tobytes(), limbs[3:].tobytes()])[0]["ok"]
    assert request(endpoint, {"v": 1, "cmd": "put", "args": {
        "dtype": "bool", "shape": [10], "name": "mask"},
        "buffers": [{"name": "values", "nbytes": 10}]},
        [bytes([1, 0, 0, 1, 1, 0, 1, 0, 0, 1])])[0]["ok"]
    assert request(endpoint, {"v": 1, "cmd": "put", "args": {
        "objtype": "strings", "shape": [4], "name": "words"},
        "buffers": [{"name": "segments", "nbytes": 32}, {"name": "values", "nbytes": 9}]},
        [np.array([0, 2, 4, 8], np.int64).tobytes() + b"a\x00b\x00c\x00d\x00\x00"])[0]["ok"]
    rng = random.Random(seed)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(ak_endpoint)
    answered = 0
    kinds = {}
    try:
        for parts in pipelined(sock, count, lambda i: sock.send_multipart(ak_message(rng))):
            answered += 1
            assert len(parts) == 1, parts  # Arkouda's client reads one frame
            frame = parts[0]
            if frame.startswith(b"{"):
                rep = json.loads(frame)
                assert rep["msgType"] in ("NORMAL", "WARNING", "ERROR") and "user" in rep, rep
                assert "without a reason" not in rep["msg"], rep
                kinds[rep["msgType"]] = kinds.get(rep["msgType"], 0) + 1
            else:  # a binary reply or a raw error frame
                kinds["binary"] = kinds.get("binary", 0) + 1
    finally:
        sock.close()
    assert answered == count
    hdr, frames = request(endpoint, {"v": 1, "cmd": "get", "args": {"name": "untouched"}})
    assert hdr["ok"] and np.array_equal(np.frombuffer(b"".join(frames), np.int64), np.arange(10))
    assert kinds.get("NORMAL") and kinds.get("ERROR") and kinds.get("binary")
    return kinds


def test_live_fuzz_arkouda(start_daemon):
    d = start_daemon(locales=3, max_memory="256M", arkouda=True)
    kinds = ak_fuzz(d.endpoint, d.ak_endpoint, AK_MESSAGES,
                    int(os.environ.get("H5ARK_FUZZ_SEED", "20261125")))
    assert d.alive()
    print(f"{AK_MESSAGES} Arkouda messages, all answered: {kinds}")
