"""The protocol as the integration tests speak it (protocol/PROTOCOL.md), with nothing
but pyzmq, msgpack and numpy: one request, the checks of a reply, objects put and got,
and Conn, the same calls with keyword arguments on one daemon."""
import uuid

import msgpack
import numpy as np
import zmq

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "bool"]
ERROR_CODES = {"bad_request", "unknown_command", "unauthorized", "not_found", "already_exists",
               "type_error", "schema_error", "io_error", "forbidden", "resource_limit", "busy",
               "internal"}
DESC_KEYS = {"name", "objtype", "dtype", "size", "shape", "ndim", "itemsize", "nbytes"}
ITEMSIZE = {d: np.dtype(d).itemsize for d in DTYPES}
LONG = 120000  # ms to wait for replies to big requests

_ctx = zmq.Context.instance()


def request(endpoint, header, frames=(), timeout_ms=30000, raw_header=None):
    """Send one request on a fresh DEALER socket and return (reply_header, payload_frames).
    `raw_header` (bytes) replaces the packed header, to send malformed ones."""
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    try:
        head = raw_header if raw_header is not None else msgpack.packb(
            {k: v for k, v in header.items() if v is not None}, use_bin_type=True)
        sock.send_multipart([head, *frames], copy=False)
        if not sock.poll(timeout_ms):
            raise TimeoutError(f"no reply within {timeout_ms} ms")
        parts = sock.recv_multipart()
        return msgpack.unpackb(parts[0], raw=False), parts[1:]
    finally:
        sock.close()


def encode_strings(strs):
    """Strings (str or bytes) as the protocol's segments and values buffers."""
    enc = [s.encode("utf-8") if isinstance(s, str) else s for s in strs]
    offs, pos = [], 0
    for b in enc:
        offs.append(pos)
        pos += len(b) + 1
    return np.array(offs, dtype="<i8").tobytes(), b"".join(b + b"\0" for b in enc)


def decode_strings(seg, val):
    """The strings of segments and values buffers, checking their form as it goes."""
    offs = np.frombuffer(seg, dtype="<i8")
    if len(offs) == 0:
        assert val == b""
        return []
    assert offs[0] == 0, offs[:4]
    assert all(offs[i] < offs[i + 1] for i in range(len(offs) - 1)), offs
    ends = list(offs[1:]) + [len(val)]
    out = []
    for a, b in zip(offs, ends):
        assert val[b - 1:b] == b"\0", (a, b)
        out.append(val[a:b - 1].decode("utf-8"))
    return out


def framed(buffers, split=None):
    """Payload frames for `buffers` (bytes, in order): one frame each, or with `split` (a
    list of frame sizes, used in turn) the bytes of all of them cut at those sizes, so
    frames may end mid-element and one frame may end one buffer and start the next."""
    if not split:
        return list(buffers)
    data, out, pos, i = b"".join(buffers), [], 0, 0
    while pos < len(data):
        out.append(data[pos:pos + split[i % len(split)]])
        pos += split[i % len(split)]
        i += 1
    return out


def unique(prefix="t"):
    """A file or object name no other test uses on a shared daemon."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def send(d, cmd, args=None, frames=(), buffers=None, id=7, timeout_ms=60000, **header):
    """One request to daemon `d` (token added when `d` has one), or to an endpoint given by
    its address; returns (header, frames)."""
    hdr = {"v": 1, "id": id, "cmd": cmd, "token": getattr(d, "token", None)}
    if args is not None:
        hdr["args"] = args
    if buffers is not None:
        hdr["buffers"] = buffers
    hdr.update(header)
    return request(d if isinstance(d, str) else d.endpoint, hdr, frames, timeout_ms=timeout_ms)


def call(d, cmd, args=None, buffers=None, frames=()):
    """send with the arguments in the order the ranks tests give them (args, buffers,
    frames), to a daemon or an endpoint's address, within request's 30 s: (header,
    frames)."""
    return send(d, cmd, args or {}, frames, buffers, timeout_ms=30000)


def call_ok(d, cmd, args=None, buffers=None, frames=()):
    """call, its reply checked (ok): (result, frames)."""
    reply = call(d, cmd, args, buffers, frames)
    return ok(reply), reply[1]


def ok(reply, id=7):
    hdr, _ = reply
    assert hdr.get("ok") is True, hdr
    assert hdr.get("v") == 1, hdr
    assert "error" not in hdr, hdr
    if id is not None:
        assert hdr.get("id") == id, hdr
    assert isinstance(hdr.get("result"), dict), hdr
    return hdr["result"]


def fails(reply, code, *words, id=7, mentions=()):
    """Check an error reply: the code, a non-empty message naming each of `words` (and of
    `mentions`: a word or a list), the id (None: none; ...: any)."""
    hdr, frames = reply
    assert hdr.get("ok") is False, hdr
    assert hdr.get("v") == 1, hdr
    err = hdr.get("error")
    assert isinstance(err, dict), hdr
    assert err.get("code") in ERROR_CODES, hdr
    assert err.get("code") == code, hdr
    assert isinstance(err.get("message"), str) and err["message"].strip(), hdr
    mentions = list(mentions) if isinstance(mentions, (list, tuple)) else [mentions]
    for word in list(words) + mentions:
        for w in (word if isinstance(word, (list, tuple)) else [word]):
            assert w in err["message"], hdr
    if id is None:
        assert "id" not in hdr, hdr
    elif id is not ...:
        assert hdr.get("id") == id, hdr
    assert "result" not in hdr, hdr
    assert not frames, hdr
    return err["message"]


def fails_any(reply, codes, **kw):
    """An error reply whose code is any of `codes` (the contract allows either)."""
    err = reply[0].get("error")
    code = err.get("code") if isinstance(err, dict) else None
    return fails(reply, code if code in codes else codes[0], **kw)


def fails_raw(d, raw, code="bad_request", id=None):
    """Send `raw` bytes as the header frame; expect `code` and a daemon still answering."""
    reply = request(d.endpoint, {}, raw_header=raw)
    msg = fails(reply, code, id=id)
    assert_alive(d)
    return msg


def assert_alive(d):
    assert d.alive(), d.read_log()
    hdr, _ = request(d.endpoint, {"v": 1, "id": 99, "cmd": "ping", "token": d.token},
                     timeout_ms=30000)
    assert hdr.get("ok") is True and hdr.get("id") == 99 and hdr["result"] == {"pong": True}, hdr


def split_buffers(hdr, frames):
    """The reply's payload as {buffer name: bytes}, checking the byte count."""
    data = b"".join(bytes(f) for f in frames)
    bufs = hdr.get("buffers", [])
    assert isinstance(bufs, list), hdr
    assert sum(b["nbytes"] for b in bufs) == len(data), (hdr, len(data))
    out, pos = {}, 0
    for b in bufs:
        assert set(b) == {"name", "nbytes"}, b
        out[b["name"]] = data[pos:pos + b["nbytes"]]
        pos += b["nbytes"]
    return out


def check_desc(desc, objtype, dtype, size, name=None, components=None):
    """A descriptor's keys and values (PROTOCOL.md, "Objects"); `components`: their names, in
    order, each named `<name>/<component>`."""
    assert DESC_KEYS <= set(desc), desc
    assert desc["objtype"] == objtype, desc
    assert desc["dtype"] == dtype, desc
    assert desc["size"] == size, desc
    assert isinstance(desc["name"], str) and desc["name"], desc
    if name is not None:
        assert desc["name"] == name, desc
    if objtype == "pdarray":
        assert desc["shape"] == [size] and desc["ndim"] == 1, desc
        if dtype in ITEMSIZE:
            assert desc["itemsize"] == ITEMSIZE[dtype], desc
            assert desc["nbytes"] == size * ITEMSIZE[dtype], desc
    else:
        assert isinstance(desc["itemsize"], int) and isinstance(desc["nbytes"], int), desc
    if components is not None:
        assert list(desc["components"]) == components, desc
        for c, cd in desc["components"].items():
            assert cd["name"] == f"{desc['name']}/{c}", (c, cd)


def dtype_name(arr):
    return "bool" if arr.dtype == np.bool_ else arr.dtype.name


def le_bytes(arr):
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()


def one_frame(data):
    return [data] if data else []


def put_array(d, arr, name=None, split=one_frame, dtype=None, **args):
    """`put` of a pdarray (args: more of put's arguments, `tag` say); its name."""
    arr = np.asarray(arr)
    data = le_bytes(arr)
    dtype = dtype or dtype_name(arr)
    args = {"objtype": "pdarray", "dtype": dtype, "shape": [int(arr.size)], **args}
    if name is not None:
        args["name"] = name
    reply = send(d, "put", args, split(data), [{"name": "values", "nbytes": len(data)}],
                 timeout_ms=LONG)
    desc = ok(reply)["object"]
    check_desc(desc, "pdarray", dtype, int(arr.size), name)
    return desc["name"]


def get_raw(d, name, start=None, stop=None, **args):
    """`get` of an object: its result map and {buffer name: bytes}."""
    args = {"name": name, **args}
    if start is not None:
        args["start"] = start
    if stop is not None:
        args["stop"] = stop
    hdr, frames = send(d, "get", args, timeout_ms=LONG)
    res = ok((hdr, frames))
    return res, split_buffers(hdr, frames)


def get(d, name, **args):
    """`get` of an object: its descriptor and {buffer name: bytes}."""
    res, bufs = get_raw(d, name, **args)
    return res["object"], bufs


def get_array(d, name, dtype, start=None, stop=None):
    res, bufs = get_raw(d, name, start, stop)
    assert list(bufs) == ["values"], bufs.keys()
    assert res["object"]["dtype"] == dtype and res["object"]["objtype"] == "pdarray", res
    return np.frombuffer(bufs["values"], dtype=np.dtype(dtype).newbyteorder("<"))


def strings_buffers(seg, val):
    return [{"name": "segments", "nbytes": len(seg)}, {"name": "values", "nbytes": len(val)}]


def put_strings(d, strs, name=None, split=one_frame):
    seg, val = encode_strings(strs)
    args = {"objtype": "strings", "dtype": "str", "shape": [len(strs)]}
    if name is not None:
        args["name"] = name
    desc = ok(send(d, "put", args, split(seg + val), strings_buffers(seg, val),
                   timeout_ms=LONG))["object"]
    check_desc(desc, "strings", "str", len(strs), name)
    return desc["name"]


def get_strings(d, name, start=None, stop=None):
    res, bufs = get_raw(d, name, start, stop)
    assert list(bufs) == ["segments", "values"], bufs.keys()
    assert res["object"]["objtype"] == "strings" and res["object"]["dtype"] == "str", res
    return decode_strings(bufs["segments"], bufs["values"])


def create(d, **args):
    return ok(send(d, "create", args, timeout_ms=LONG))["object"]


class Conn:
    """The protocol calls the integration tests share, on one daemon."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.dir = daemon.data_dir

    def raw(self, cmd, frames=(), buffers=None, **args):
        hdr = {"v": 1, "id": 7, "cmd": cmd, "args": args}
        if buffers is not None:
            hdr["buffers"] = buffers
        return request(self.daemon.endpoint, hdr, frames, timeout_ms=120000)

    def ok(self, cmd, frames=(), buffers=None, **args):
        hdr, payload = self.raw(cmd, frames, buffers, **args)
        assert hdr["ok"], hdr
        return hdr, payload

    def fail(self, cmd, **args):
        hdr, _ = self.raw(cmd, **args)
        assert not hdr["ok"], hdr
        assert hdr["error"]["message"], hdr
        return hdr["error"]

    def put(self, arr, split=None, **kw):
        """Put a pdarray; `split`: frame sizes to cut the payload into (see framed)."""
        arr = np.ascontiguousarray(arr)
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        hdr, _ = self.ok("put", framed([data], split),
                         buffers=[{"name": "values", "nbytes": len(data)}],
                         objtype="pdarray", dtype=str(arr.dtype), shape=[arr.size], **kw)
        return hdr["result"]["object"]["name"]

    def put_strings(self, strings, split=None):
        raw = [s.encode() for s in strings]
        values = b"".join(s + b"\0" for s in raw)
        segs = np.cumsum([0] + [len(s) + 1 for s in raw[:-1]]).astype("<i8")[:len(raw)]
        hdr, _ = self.ok("put", framed([segs.tobytes(), values], split),
                         buffers=[{"name": "segments", "nbytes": segs.nbytes},
                                  {"name": "values", "nbytes": len(values)}],
                         objtype="strings", dtype="str", shape=[len(raw)])
        return hdr["result"]["object"]["name"]

    def buffers(self, name, **kw):
        """get `name` (kw: start, stop): its descriptor and {buffer name: bytes}."""
        hdr, frames = self.ok("get", name=name, **kw)
        blob = b"".join(bytes(f) for f in frames)
        out, pos = {}, 0
        for spec in hdr.get("buffers", []):
            out[spec["name"]] = blob[pos:pos + spec["nbytes"]]
            pos += spec["nbytes"]
        return hdr["result"]["object"], out

    def get(self, name, **kw):
        desc, bufs = self.buffers(name, **kw)
        assert desc["objtype"] == "pdarray"
        return np.frombuffer(bufs.get("values", b""), dtype=np.dtype(desc["dtype"]).newbyteorder("<"))

    def get_strings(self, name, **kw):
        desc, bufs = self.buffers(name, **kw)
        assert desc["objtype"] == "strings"
        values = bufs.get("values", b"")
        segs = list(np.frombuffer(bufs.get("segments", b""), "<i8")) + [len(values)]
        return [values[s:e - 1].decode() for s, e in zip(segs, segs[1:])]
