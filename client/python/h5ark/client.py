"""The connection to one h5ark daemon and its commands."""
import itertools
import os
import math
import secrets
import threading
import time
import warnings
from collections.abc import Iterable, Mapping

import numpy as np
import zmq

from . import awkward as _awkward, codec, lbann as _lbann, objects, progress as _progress, wire
from .errors import ConnectionClosedError, H5arkWarning, ReplyTimeoutError, error_for
from .objects import H5arkObject, make_object

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"
DEFAULT_TIMEOUT = 120.0  # seconds; large tohdf/readhdf calls are long but finite
DEFAULT_CONNECT_TIMEOUT = 2.0  # seconds; a ping, the first contact, is answered at once


class Reply:
    """A successful reply: the `result` map, payload buffers by name, and warnings."""

    __slots__ = ("result", "buffers", "warnings")

    def __init__(self, result, buffers, warnings_):
        self.result, self.buffers, self.warnings = result, buffers, warnings_

    @property
    def nbytes(self):
        """Payload bytes the reply carried."""
        return sum(memoryview(b).nbytes for b in self.buffers.values())


class Result(dict):
    """A command's result map, with the reply's `warnings` (a list of str)."""

    def __init__(self, result, warnings_=()):
        super().__init__(result)
        self.warnings = list(warnings_)


class ReadResult(Result):
    """read_hdf's {dataset: object}, with `file_errors` (files skipped under allow_errors)
    and `warnings`. Under tag_data the objects include `Filename_Codes`, an int64 pdarray of
    each row's index in the files read, as Arkouda gives it."""

    def __init__(self, objects, file_errors=(), warnings_=()):
        super().__init__(objects, warnings_)
        self.file_errors = list(file_errors or ())


def _name_of(obj):
    if isinstance(obj, H5arkObject):
        return obj.name
    if isinstance(obj, str):
        return obj
    raise TypeError(f"expected an h5ark object or an object name, got {type(obj).__name__}")


def _is_bigint(x):
    """A bigint handle, or a Python int that no 64-bit dtype holds."""
    if isinstance(x, H5arkObject):
        return x.dtype == "bigint"
    return isinstance(x, int) and not isinstance(x, bool) and not -2**63 <= x < 2**64


def _names_of(objs):
    """A name, an object, or any nesting of iterables of them -> flat list of names."""
    if isinstance(objs, (str, H5arkObject)) or not isinstance(objs, Iterable):
        return [_name_of(objs)]
    return [name for obj in objs for name in _names_of(obj)]


def _arange_size(start, stop, step):
    if step == 0:
        raise ValueError("arange step must not be 0")
    if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        return max(0, -((int(start) - int(stop)) // int(step)))  # exact ceil for integers
    return max(0, math.ceil((stop - start) / step))


class Client:
    """One DEALER connection to a daemon. Requests are serialised by a lock, so a client
    may be shared by threads; replies are matched to requests by `id`, so a reply that
    arrives after its request timed out is recognised and dropped."""

    def __init__(self, endpoint=DEFAULT_ENDPOINT, token=None, timeout=DEFAULT_TIMEOUT,
                 context=None, server_key=None, connect_timeout=DEFAULT_CONNECT_TIMEOUT,
                 progress=None):
        """`timeout`: seconds a request waits for its reply (None: forever).
        `connect_timeout`: until the daemon has answered once (and again after a request
        timed out), each request is preceded by a ping that waits at most this long (and no
        longer than `timeout`), so that an endpoint where nothing answers fails at once
        rather than after `timeout`; None: no ping, the request's own timeout applies.
        `server_key`: the daemon's CURVE public key (the 40-character text of the .pub
        file `h5arkd --curve-keygen` writes, or a path to that file) to encrypt with.
        `progress`: a request still running after a second shows a progress bar (tqdm, on
        stderr, when tqdm is installed): None (auto) when stderr is a terminal, True
        always, False never. The bar follows the daemon's `status` on a second socket."""
        self.endpoint = endpoint
        self.token = token
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._answered = False  # a reply has arrived: a daemon is there
        # on_reply(cmd, args, reply), after each successful request: to watch the traffic
        self.on_reply = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.progress = progress
        self._watcher = _progress.Watcher(self)
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        # a routing identity of our own, by which `status` tells this client's requests
        self._identity = f"py-{secrets.token_hex(8)}"
        self._socket.setsockopt(zmq.ROUTING_ID, self._identity.encode("ascii"))
        # a DEALER with no peer yet (or a refused handshake) blocks in send: bound that too
        if timeout is not None:
            self._socket.setsockopt(zmq.SNDTIMEO, int(timeout * 1000))
        self._curve = server_key is not None
        self._server_key = _read_key(server_key) if server_key is not None else None
        if server_key is not None:
            public, secret = zmq.curve_keypair()
            self._socket.curve_serverkey = self._server_key
            self._socket.curve_publickey = public
            self._socket.curve_secretkey = secret
        self._socket.connect(endpoint)

    # -- transport -------------------------------------------------------------------

    def request(self, cmd, args=None, buffers=()):
        """Send one command and wait for its reply. `args` entries that are None are left
        out; `buffers` is a list of (name, bytes-like) sent as payload frames. Returns a
        Reply; an error reply raises the H5arkError subclass for its code."""
        header = {"v": wire.PROTOCOL_VERSION, "cmd": cmd,
                  "args": {k: v for k, v in (args or {}).items() if v is not None}}
        if self.token is not None:
            header["token"] = self.token
        specs, frames = wire.encode_buffers(buffers)
        if specs:
            header["buffers"] = specs
        with self._lock:
            if self._socket is None:
                raise ConnectionClosedError("closed", "the client is closed")
            wait = self.timeout
            if not self._answered and self.connect_timeout is not None:
                first = self.connect_timeout if wait is None else min(wait, self.connect_timeout)
                if cmd == "ping":
                    wait = first
                else:
                    # any reply will do, an error included: the request gets its own
                    ping = {"v": wire.PROTOCOL_VERSION, "cmd": "ping", "token": self.token}
                    self._exchange({k: v for k, v in ping.items() if v is not None}, (), first)
            watch = _progress.wanted(self.progress, cmd)
            reply, payload = self._exchange(header, frames, wait, watch)
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise error_for(error.get("code", "internal"),
                            error.get("message", "error reply without a message"))
        texts = reply.get("warnings") or []
        for text in texts:
            warnings.warn(f"{cmd}: {text}", H5arkWarning, stacklevel=3)
        buffers_in = wire.decode_buffers(reply.get("buffers") or [], payload)
        out = Reply(reply.get("result") or {}, buffers_in, texts)
        if self.on_reply is not None:
            self.on_reply(cmd, header["args"], out)
        return out

    def _exchange(self, header, frames, wait, watch=False):
        """Send one request (the lock held) and wait up to `wait` seconds for its reply;
        `watch`: with a progress bar should it run long."""
        cmd = header["cmd"]
        header["id"] = next(self._ids)
        # copy=False: ZeroMQ sends straight from the caller's arrays. They stay
        # untouched until the reply shows the daemon has received everything.
        try:
            self._socket.send_multipart([wire.pack_header(header), *frames], copy=False)
        except zmq.Again:
            raise ReplyTimeoutError("timeout", f"`{cmd}`: no connection to {self.endpoint} "
                                               f"within {self.timeout} s (is h5arkd running "
                                               f"there, and does it need server_key?)")
        if not watch:
            return self._receive(header["id"], cmd, wait)
        watched, reply = self._watcher.begin(cmd, header["id"]), None
        try:
            reply = self._receive(header["id"], cmd, wait)
            return reply
        finally:
            self._watcher.end(watched, finished=bool(reply and reply[0].get("ok")))

    def _side_socket(self):
        """A second socket to the daemon, for `status` while the first waits for a reply."""
        sock = self._context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        if self._server_key is not None:
            public, secret = zmq.curve_keypair()
            sock.curve_serverkey = self._server_key
            sock.curve_publickey = public
            sock.curve_secretkey = secret
        sock.connect(self.endpoint)
        return sock

    def _receive(self, request_id, cmd, wait):
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._socket.poll(None if remaining is None else int(remaining * 1000)):
                if not self._answered:
                    hint = ", and is server_key its own" if self._curve else ""
                    raise ReplyTimeoutError("timeout", f"nothing answered at {self.endpoint} "
                                                       f"within {wait:g} s: is h5arkd running "
                                                       f"there{hint}?")
                self._answered = False  # the daemon may be gone: the next request checks
                raise ReplyTimeoutError("timeout", f"no reply to `{cmd}` from "
                                                   f"{self.endpoint} within {wait:g} s")
            frames = self._socket.recv_multipart(copy=False)
            self._answered = True
            reply = wire.unpack_header(frames[0].buffer)
            # A reply without an id answers a header the daemon could not read: ours.
            if reply.get("id", request_id) == request_id:
                return reply, [f.buffer for f in frames[1:]]

    def close(self):
        """Close the connection; objects in the daemon are kept."""
        global _current
        with self._lock:
            if self._socket is not None:
                self._socket.close(linger=0)
                self._socket = None
        self._watcher.close()
        if _current is self:
            _current = None

    @property
    def closed(self):
        return self._socket is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return f"<h5ark.Client {self.endpoint} {state}>"

    # -- administration --------------------------------------------------------------

    def ping(self):
        """True when the daemon answers."""
        return bool(self.request("ping").result.get("pong"))

    def config(self):
        """The daemon's configuration (version, locales, memory, auth, library versions)."""
        return Result(self.request("getconfig").result)

    def status(self):
        """The requests the daemon is running now, oldest first: a list of maps with `seq`,
        `id`, `cmd`, `client`, `peer`, `started`, `elapsed`, `done`, `total` and `unit`
        (`bytes`, `rows` or `files`; done, total and unit are None for a request that
        reports no measure). Answered at once, however busy the daemon is."""
        return self.request("status").result["requests"]

    def whoami(self):
        """Who this client's token names (a daemon with users: protocol/PROTOCOL.md,
        "Users"): `user`, `role`, `groups`, `quotas` and `usage` ({memory, disk, objects,
        requests}); a quota not set is None, and `user` is None without users."""
        return Result(self.request("whoami").result)

    def reload(self):
        """Have the daemon read its token file again (an admin's): `tokens`, `users` and
        `groups` of the file now in force. A bad file raises, the old one staying."""
        return Result(self.request("reload").result)

    def shutdown(self):
        """Ask the daemon to finish in-flight work and exit; closes this client."""
        result = Result(self.request("shutdown").result)
        self.close()
        return result

    # -- objects ---------------------------------------------------------------------

    def _object(self, reply):
        return make_object(self, reply.result["object"])

    def _create(self, fill, size, dtype, name=None, **params):
        args = {"fill": fill, "dtype": codec.dtype_name(dtype), "size": int(size),
                "name": name, **params}
        return self._object(self.request("create", args))

    def zeros(self, size, dtype="float64", name=None):
        """A new array of `size` zeros."""
        return self._create("zeros", size, dtype, name)

    def ones(self, size, dtype="float64", name=None):
        """A new array of `size` ones."""
        return self._create("ones", size, dtype, name)

    def full(self, size, value, dtype=None, name=None):
        """`size` copies of `value`; dtype defaults to value's (int64, float64 or bool)."""
        if dtype is None:
            dtype = np.asarray(value).dtype
        return self._create("full", size, dtype, name, value=value)

    def arange(self, start, stop=None, step=1, dtype="int64", name=None):
        """start, start+step, ... up to (not including) stop; arange(n) is 0..n-1."""
        if stop is None:
            start, stop = 0, start
        return self._create("arange", _arange_size(start, stop, step), dtype, name,
                            start=start, stop=stop, step=step)

    def linspace(self, start, stop, num, name=None):
        """`num` evenly spaced float64 values from start to stop, both included."""
        return self._create("linspace", num, "float64", name, start=start, stop=stop)

    def randint(self, low, high, size, dtype="int64", seed=None, name=None):
        """Random integers in [low, high); a seed makes them reproducible."""
        return self._create("randint", size, dtype, name, low=low, high=high, seed=seed)

    def uniform(self, size, low=0.0, high=1.0, seed=None, name=None):
        """Random float64 values in [low, high); a seed makes them reproducible."""
        return self._create("uniform", size, "float64", name, low=low, high=high, seed=seed)

    def array(self, data, dtype=None, name=None, max_bits=None, tag=None):
        """Send a numpy array or a sequence: numbers and bools become a pdarray, str values
        a Strings. An empty sequence is a float64 pdarray unless dtype="str".
        N-d numpy arrays become an ArrayView (sent flat, then reshaped).
        datetime64[ns] / timedelta64[ns] arrays become int64 tagged with their type;
        `tag="ipv4"` tags int64 / uint64 addresses (see ip_address).
        dtype="bigint" (or Python ints beyond 64 bits) sends non-negative integers of any
        size as uint64 limbs; `max_bits` bounds them (default -1: unbounded)."""
        if isinstance(data, (str, bytes)):
            raise TypeError("array() takes a sequence; wrap a single string in a list")
        if isinstance(data, H5arkObject):
            raise TypeError(f"{data.name!r} is already in the daemon")
        if _awkward.is_awkward_array(data):
            return self.put_awkward(data, name=name)
        if not isinstance(data, np.ndarray):
            data = list(data)
        if codec.is_bigint_data(data, dtype):
            args, buffers = codec.encode_bigint(data, max_bits)
        elif max_bits is not None:
            raise TypeError("max_bits applies to dtype='bigint' only")
        elif codec.is_string_data(data, dtype):
            if tag is not None:
                raise TypeError("strings take no tag")
            args, buffers = codec.encode_strings(data)
        elif isinstance(data, np.ndarray) and data.ndim > 1:
            flat = self.array(data.reshape(-1), dtype=dtype, tag=tag)
            try:
                return self.reshape(flat, data.shape, name=name)
            finally:
                flat.delete()
        else:
            args, buffers = codec.encode_pdarray(data, dtype, tag)
        args["name"] = name
        return self._object(self.request("put", args, buffers))

    def put_awkward(self, array, length=None, buffers=None, name=None):
        """An awkward array as an Awkward handle: either an `ak.Array` (sent through
        `ak.to_buffers`; awkward imported only then), or its form (JSON str or dict),
        length and buffers ({name: bytes-like}, as `ak.to_buffers` names them)."""
        form = array
        if buffers is None:
            form, length, buffers = _awkward.to_buffers(array)
        elif length is None:
            raise TypeError("put_awkward(form, length, buffers): length is missing")
        args, frames = _awkward.encode(form, length, buffers)
        args["name"] = name
        return self._object(self.request("put", args, frames))

    def ip_address(self, addresses, name=None):
        """IPv4 addresses (dotted strings, ipaddress objects or integers) as a uint64
        pdarray tagged `ipv4` (an IPv4 handle)."""
        if isinstance(addresses, str):
            addresses = [addresses]
        return self.array(codec.parse_ipv4(addresses), name=name, tag=codec.TAG_IPV4)

    def get(self, obj, start=None, stop=None, rows=None):
        """The raw `get` reply for an object's elements [start, stop) (an ArrayView's
        first-axis rows), or with `rows` those rows (any order, repeats allowed)."""
        args = {"name": _name_of(obj), "start": start, "stop": stop}
        if rows is not None:
            args = {"name": _name_of(obj), "rows": [int(r) for r in rows]}
        return self.request("get", args)

    def info(self, names=None):
        """Handles for the named objects (default: every object in the daemon)."""
        args = {} if names is None else {"names": _names_of(names)}
        return [make_object(self, d) for d in self.request("info", args).result["objects"]]

    def delete(self, *objs_or_names):
        """Delete objects given as handles or names; returns the deleted names."""
        return self.request("delete", {"names": _names_of(objs_or_names)}).result["deleted"]

    def clear(self, all=False):
        """Delete every object (with users on: the caller's own; all=True: everyone's, for
        an admin); returns how many were deleted."""
        return self.request("clear", {"all": True} if all else {}).result["deleted"]

    def share(self, objs_or_names, with_):
        """Let users, "g:GROUP"s or "*" (with_: a str or a list) read the caller's objects,
        as "OWNER/NAME"; returns {name: subjects} (protocol/PROTOCOL.md, "One namespace
        per user")."""
        return self._grants("share", objs_or_names, with_)

    def unshare(self, objs_or_names, with_):
        """Take back what share gave; returns {name: subjects left}."""
        return self._grants("unshare", objs_or_names, with_)

    def _grants(self, cmd, objs_or_names, with_):
        subjects = [with_] if isinstance(with_, str) else list(with_)
        args = {"names": _names_of(objs_or_names), "with": subjects}
        return self.request(cmd, args).result["grants"]

    # -- checkpoints (protocol/PROTOCOL.md, "Checkpoints") --------------------------------

    def checkpoint(self, path=None, name=None, mode=None):
        """Write every object as a checkpoint: with no arguments a new one in the daemon's
        --checkpoint-dir (the admin role when users are on), else the folder `path/name` of
        the data directory (name None: a new one; mode "error", the default, refuses one
        that exists, "overwrite" replaces it). A Result with `checkpoint` (its id or name),
        `objects`, `bytes` and `seconds`; a long one shows a progress bar."""
        args = {k: v for k, v in (("path", path), ("name", name), ("mode", mode))
                if v is not None}
        return Result(self.request("checkpoint", args).result)

    def load_checkpoint(self, path, name):
        """Publish the objects of the checkpoint folder `path/name` of the data directory,
        over objects of the same names; a Result as checkpoint's."""
        return Result(self.request("load_checkpoint", {"path": path, "name": name}).result)

    # -- numeric compute (protocol/PROTOCOL.md, "Numeric compute") --------------------

    def binop(self, a, op, b, reverse=False, name=None):
        """`a op b` elementwise with numpy's result dtype (`+ - * / // % ** == != < <= > >=
        & | ^ << >>`): b is an array (a handle or a name) of a's size, or a scalar (a
        number, bool or numpy scalar, whose numpy dtype it keeps); reverse=True computes
        `b op a` for a scalar b. With a bigint handle, or an int beyond 64 bits, it is
        bigint_binop."""
        if _is_bigint(a) or _is_bigint(b):
            return self.bigint_binop(a, op, b, reverse=reverse, name=name)
        args = {"op": op, "a": _name_of(a), "name": name}
        if isinstance(b, (H5arkObject, str)):
            args["b"] = _name_of(b)
            if reverse:
                args["reverse"] = True
            return self._object(self.request("binop", args))
        if isinstance(b, np.generic):
            kind = {"b": "bool", "u": "uint64", "f": "float64"}.get(b.dtype.kind, "int64")
            args["value_dtype"], b = kind, b.item()
        args["value"] = b
        if reverse:
            args["reverse"] = True
        return self._object(self.request("binop", args))

    def cast(self, array, dtype, name=None):
        """A new array of `array`'s values as `dtype` (numpy's astype)."""
        return self._object(self.request("cast", {"array": _name_of(array),
                                                  "dtype": codec.dtype_name(dtype),
                                                  "name": name}))

    def fill(self, array, value):
        """Every element of `array` set to `value`: the handle of the filled array, which
        takes over the name (readers of the old one keep it). For a bigint: bigint_fill."""
        if _is_bigint(array) or _is_bigint(value):
            return self.bigint_fill(array, value)
        if isinstance(value, np.generic):
            value = value.item()
        return self._object(self.request("fill", {"array": _name_of(array), "value": value}))

    def reduce(self, array, op):
        """One value of the whole array, as a numpy scalar: op is `all any sum prod max min
        argmax argmin is_sorted`."""
        result = self.request("reduce", {"array": _name_of(array), "op": op}).result
        return np.dtype(result["dtype"]).type(result["value"])

    def cumsum(self, array, include_initial=False, name=None):
        """The running sums of `array` (int64 for bool and signed, uint64, float64); with
        include_initial a 0 first."""
        return self._object(self.request("cumsum", {"array": _name_of(array),
                                                    "include_initial": include_initial,
                                                    "name": name}))

    def limit_bits(self, array, max_bits):
        """A bigint array's values cut to their low `max_bits` bits (-1: unbounded) and its
        max_bits set: the handle of the result, which takes over the name."""
        return self._object(self.request("limitbits", {"array": _name_of(array),
                                                       "max_bits": int(max_bits)}))

    def bigint_binop(self, a, op, b, reverse=False, name=None):
        """`a op b` as integers of any size (`+ - * // % & | ^ == != < <= > >=`): a and b
        arrays (bigint, integer or bool; one a bigint), or b a Python int (reverse=True:
        `b op a`). A bigint of the operands' largest max_bits, its values cut to it (they
        wrap); unbounded, a negative result is refused. Comparisons give bool arrays."""
        args = {"op": op, "a": _name_of(a), "name": name}
        if isinstance(b, (H5arkObject, str)):
            args["b"] = _name_of(b)
        else:
            args["value"], args["reverse"] = str(int(b)), bool(reverse)
        return self._object(self.request("bigint_binop", args))

    def bigint_full(self, size, value=0, max_bits=-1, name=None):
        """A bigint pdarray of `size` copies of the Python int `value`, cut to max_bits
        (-1: unbounded, then value must not be negative)."""
        return self._object(self.request("bigint_full", {
            "size": int(size), "value": str(int(value)), "max_bits": int(max_bits),
            "name": name}))

    def bigint_fill(self, array, value):
        """Every element of the bigint `array` set to the Python int `value` (cut to its
        max_bits): the handle of the filled array, which takes over the name."""
        return self._object(self.request("bigint_fill", {"array": _name_of(array),
                                                         "value": str(int(value))}))

    def bigint_assign(self, array, index, value):
        """array[index] = value (a Python int, cut to the array's max_bits) for a bigint
        array, its limbs growing as the value needs; the changed array replaces `array`
        under its name. Its new handle."""
        return self._object(self.request("bigint_assign", {
            "array": _name_of(array), "index": _name_of(index), "value": str(int(value))}))

    def bigint_arange(self, start, stop, step=1, name=None):
        """A bigint pdarray of range(start, stop, step) (non-negative Python ints of up to
        4096 bits), computed on the daemon."""
        return self._object(self.request("bigint_arange", {
            "start": str(int(start)), "stop": str(int(stop)), "step": str(int(step)),
            "name": name}))

    def bigint_limbs(self, array):
        """A bigint's uint64 limbs as new pdarrays, least significant first, as many as
        its largest value needs."""
        result = self.request("bigint_limbs", {"array": _name_of(array)}).result
        return [make_object(self, d) for d in result["limbs"]]

    def bigint_from_limbs(self, arrays, max_bits=-1, name=None):
        """A bigint from uint64 pdarrays of one length, most significant first, its values
        cut to max_bits (-1: unbounded)."""
        return self._object(self.request("bigint_from_limbs", {
            "arrays": _names_of(arrays), "max_bits": int(max_bits), "name": name}))

    # -- composites: the daemon's constructors on existing objects -------------------
    # The classes (h5ark.SegArray, Categorical, GroupBy, DataFrame, Index, MultiIndex)
    # build from Python data too; Client.SegArray(...) etc. are those on this client.

    def reshape(self, array, shape, name=None):
        """`array` (pdarray or ArrayView) with another shape, data shared: an ArrayView,
        or a pdarray for a 1-D shape. One dimension may be -1."""
        shape = [int(n) for n in shape]
        if shape.count(-1) == 1:
            rest = math.prod(n for n in shape if n != -1)
            size = array.size if isinstance(array, H5arkObject) else None
            if size is None:
                size = self.info([array])[0].size
            shape[shape.index(-1)] = size // rest if rest else 0
        return self._object(self.request("reshape", {"array": _name_of(array),
                                                     "shape": shape, "name": name}))

    def segarray(self, segments, values, name=None):
        """A SegArray of existing objects: int64 `segments` (start of each sub-array)
        and `values` (pdarray or Strings)."""
        return self._object(self.request("segarray", {
            "segments": _name_of(segments), "values": _name_of(values), "name": name}))

    def categorical(self, values=None, codes=None, categories=None, na_value=None,
                    keep_groups=None, na_code=None, permutation=None, segments=None,
                    name=None):
        """A Categorical of an existing Strings `values`, or of int64 `codes` and
        Strings `categories`. From codes, `na_code` names the category that is the NA
        value (instead of `na_value`), and int64 `permutation` and `segments` (both or
        neither) are kept as its grouping, as a file or Arkouda holds them."""
        args = {"values": values, "codes": codes, "categories": categories,
                "permutation": permutation, "segments": segments}
        args = {k: _name_of(v) for k, v in args.items() if v is not None}
        return self._object(self.request("categorical", {
            **args, "na_value": na_value, "keep_groups": keep_groups, "na_code": na_code,
            "name": name}))

    def groupby(self, keys, permutation=None, segments=None, unique_key_idx=None, name=None):
        """A GroupBy of existing keys (one object or a list). With `permutation`,
        `segments` and `unique_key_idx` (all three: a grouping computed before, or read)
        the grouping is checked and kept, not computed."""
        parts = {"permutation": permutation, "segments": segments,
                 "unique_key_idx": unique_key_idx}
        parts = {k: _name_of(v) for k, v in parts.items() if v is not None}
        return self._object(self.request("groupby", {"keys": _names_of(keys), **parts,
                                                     "name": name}))

    def tag(self, array, tag, name=None):
        """The int64 (or, for "ipv4", uint64) pdarray `array` tagged "datetime64[ns]",
        "timedelta64[ns]" or "ipv4", the data shared, not copied."""
        return self._object(self.request("tag", {"array": _name_of(array), "tag": tag,
                                                 "name": name}))

    def unpack(self, composite, keep=False):
        """Every array and Strings inside `composite`, each published under a name of its
        own (shared, not copied; one published already keeps its name): a dict from
        component name to handle, a nested dict for a nested composite. The composite is
        deleted unless `keep`."""
        desc = self.request("unpack", {"name": _name_of(composite),
                                       "keep": True if keep else None}).result["object"]

        def parts(d):
            return {k: make_object(self, c)
                    if c["objtype"] in ("pdarray", "arrayview", "strings") else parts(c)
                    for k, c in d["components"].items()}
        return parts(desc)

    def strings_from_bytes(self, values, name=None):
        """Strings from bytes in which each string is followed by a NUL and holds none
        (the daemon finds where each starts: no offsets are sent)."""
        values = bytes(values)
        return self._object(self.request("put", {"objtype": "strings",
                                                 "strings_segments": False, "name": name},
                                         [("values", values)]))

    def aggregate(self, groupby, op, values=None, name=None):
        """Aggregate `values` per group of `groupby` with op (count sum min max mean first
        nunique) -> ([unique-key handle per key], values handle)."""
        result = self.request("aggregate", {
            "groupby": _name_of(groupby), "op": op,
            "values": None if values is None else _name_of(values), "name": name}).result
        return ([make_object(self, d) for d in result["keys"]],
                make_object(self, result["values"]))

    def dataframe(self, columns, column_names=None, index=None, name=None):
        """A DataFrame of existing column objects, in order."""
        return self._object(self.request("dataframe", {
            "columns": _names_of(columns),
            "column_names": None if column_names is None else list(column_names),
            "index": None if index is None else _name_of(index), "name": name}))

    def index(self, levels, names=None, name=None):
        """An Index (one level) or MultiIndex of existing objects."""
        return self._object(self.request("index", {
            "levels": _names_of(levels), "names": None if names is None else list(names),
            "name": name}))

    # -- selection and segments ----------------------------------------------------------

    def take(self, array, index, name=None):
        """The rows of `array` (pdarray or Strings) at the positions of the integer array
        `index` (negative ones from the end), or where the bool array `index` is true."""
        return self._object(self.request("take", {
            "array": _name_of(array), "index": _name_of(index), "name": name}))

    def slice(self, array, start, stop, step=1, name=None):
        """The rows range(start, stop, step) of `array`, indices as slice.indices() gives
        them (start and stop in [-1, len])."""
        return self._object(self.request("slice", {
            "array": _name_of(array), "start": int(start), "stop": int(stop),
            "step": int(step), "name": name}))

    def assign(self, array, index, values=None, value=None):
        """array[index] = values (an array, one per position) or value (one number or bool);
        the changed array replaces `array` under its name. Its new handle."""
        if (values is None) == (value is None):
            raise ValueError("assign takes values or value")
        if values is None and (_is_bigint(array) or _is_bigint(value)):
            return self.bigint_assign(array, index, value)
        if isinstance(value, np.generic):
            value = value.item()
        return self._object(self.request("assign", {
            "array": _name_of(array), "index": _name_of(index),
            "values": None if values is None else _name_of(values), "value": value}))

    def concatenate(self, arrays, name=None):
        """Arrays of one dtype, or Strings, end to end."""
        return self._object(self.request("concatenate", {"names": _names_of(arrays),
                                                         "name": name}))

    # -- strings compute -------------------------------------------------------------

    def compare(self, strings, other, op="=="):
        """Where strings[i] == (op "==") or != (op "!=") other[i] (Strings of the same
        size) or the str `other`: a bool pdarray."""
        args = {"strings": _name_of(strings), "op": op}
        if isinstance(other, str):
            args["text"] = other
        else:
            args["other"] = _name_of(other)
        return self._object(self.request("compare", args))

    def split(self, strings, pattern, max=0, segments=False, name=None):
        """Each string cut at the literal `pattern` (at most `max` cuts; 0: all): the pieces
        as Strings, or with segments=True (pieces, the index of each string's first piece)."""
        result = self.request("split", {"strings": _name_of(strings), "pattern": pattern,
                                        "max": int(max), "segments": bool(segments),
                                        "name": name}).result
        pieces = make_object(self, result["object"])
        return (pieces, make_object(self, result["segments"])) if segments else pieces

    def random_strings(self, size, chars="alphanumeric", dist="uniform", arg1=1, arg2=10,
                       seed=None, name=None):
        """`size` random strings of the character set `chars` (uppercase lowercase numeric
        alphabetic alphanumeric printable): lengths uniform in [arg1, arg2), or lognormal
        of log-mean arg1 and log-sd arg2; the same strings for the same seed."""
        return self._object(self.request("random_strings", {
            "size": int(size), "dist": dist, "chars": chars, "arg1": float(arg1),
            "arg2": float(arg2), "seed": None if seed is None else int(seed), "name": name}))

    def unique(self, keys, groups=False, order=None):
        """The grouping of the keys' rows: {"unique_key_idx": handle} (the first row of each
        group), with groups also "permutation" and "segments". order "arkouda": one Strings
        key of short strings in Arkouda's order."""
        result = self.request("unique", {"keys": _names_of(keys), "groups": bool(groups),
                                         "order": order}).result
        return {k: make_object(self, d) for k, d in result.items()}

    def broadcast(self, segments, values, size, permutation=None, name=None):
        """Each group's value (one per segment) over the `size` rows of its segment, in
        group order, or with `permutation` in the rows' own order."""
        return self._object(self.request("broadcast", {
            "segments": _name_of(segments), "values": _name_of(values), "size": int(size),
            "permutation": None if permutation is None else _name_of(permutation),
            "name": name}))

    def segmented_reduce(self, values, segments, op, skip_nan=None, name=None):
        """One value per segment of `values` (in segment order): count sum min max mean
        nunique any all."""
        return self._object(self.request("segmented_reduce", {
            "values": _name_of(values), "segments": _name_of(segments), "op": op,
            "skip_nan": skip_nan, "name": name}))

    def SegArray(self, *args, **kwargs):
        """h5ark.SegArray on this client."""
        return objects.SegArray(*args, client=self, **kwargs)

    def Categorical(self, *args, **kwargs):
        """h5ark.Categorical on this client."""
        return objects.Categorical(*args, client=self, **kwargs)

    def GroupBy(self, *keys, **kwargs):
        """h5ark.GroupBy on this client."""
        return objects.GroupBy(*keys, client=self, **kwargs)

    def DataFrame(self, *args, **kwargs):
        """h5ark.DataFrame on this client (a dict of columns or a pandas DataFrame)."""
        return objects.DataFrame(*args, client=self, **kwargs)

    def Index(self, *args, **kwargs):
        """h5ark.Index on this client."""
        return objects.Index(*args, client=self, **kwargs)

    def MultiIndex(self, *args, **kwargs):
        """h5ark.MultiIndex on this client."""
        return objects.MultiIndex(*args, client=self, **kwargs)

    # -- HDF5 ------------------------------------------------------------------------

    def to_hdf(self, objects, path, mode="truncate", file_type="distribute",
               dataframe_layout=None, compression=None, compression_level=None,
               format=None, strings_segments=None):
        """Write objects to HDF5 under `path` (relative to the daemon's data directory).
        `objects` is {dataset name: object or object name}, or objects / names whose
        datasets take the object names. mode: `truncate`, `append`, or `update` (replace
        existing datasets in place). Composites are written in Arkouda's layouts;
        `dataframe_layout` is `group` (default) or `columns`. `compression="gzip"` writes
        chunked datasets through shuffle and deflate, at `compression_level` 1-9 (default
        4), as h5py's `compression="gzip", shuffle=True`. Returns the result
        ({"files": [...]}) with `.warnings` (e.g. files overwritten); each warning is also
        issued as H5arkWarning. `format` names the layout of awkward objects: `awkward`
        (awkward 2's) or `awkward0` (with `compression` `default`, `all` or `none`); they
        are written to one file, so `file_type` None leaves the choice to the daemon.
        `strings_segments=False` writes Strings as their bytes alone, without offsets
        (Arkouda's `save_offsets=False`)."""
        if isinstance(objects, Mapping):
            datasets, names = list(objects), [_name_of(o) for o in objects.values()]
        else:
            datasets, names = None, _names_of(objects)
        reply = self.request("tohdf", {"names": names, "datasets": datasets, "path": path,
                                       "mode": mode, "file_type": file_type,
                                       "dataframe_layout": dataframe_layout,
                                       "compression": compression,
                                       "compression_level": compression_level,
                                       "format": format,
                                       "strings_segments": strings_segments})
        return Result(reply.result, reply.warnings)

    def repack(self, path):
        """Rewrite files (a file, glob or distributed name) without the space left by
        replaced datasets: {"files", "bytes_before", "bytes_after"}."""
        reply = self.request("repack", {"path": path})
        return Result(reply.result, reply.warnings)

    def read_hdf(self, paths, datasets=None, strict_types=True, allow_errors=False,
                 calc_string_offsets=False, tag_data=False, start=None, stop=None,
                 whitelist=None, byteorder=None):
        """Read datasets (default: every top-level object) from files or glob patterns.
        Returns {dataset: handle of the object's class (pdarray, Strings, SegArray,
        DataFrame, ...)} with `.file_errors` listing files skipped under
        allow_errors, `.warnings` (objects skipped reading whole files, ExeTera fields not
        completed; each also issued as H5arkWarning) and, under tag_data,
        `Filename_Codes`: an int64 array of each row's file index. `start`/`stop` read only
        those rows of the files' concatenation. `whitelist`: awkward0's allow-list for
        awkward0 groups (default: awkward0's own); `byteorder` ">": awkward 2 groups whose
        buffers were stored big-endian (ak.to_buffers(byteorder=">")), as
        ak.from_buffers(byteorder=">") reads them. An ExeTera dataframe reads as a DataFrame
        whose columns carry `fieldtype` and `completed`; a field alone
        (`datasets="df/field"`) as a pdarray, Strings or Categorical carrying them."""
        args = {"paths": [paths] if isinstance(paths, str) else list(paths),
                "datasets": [datasets] if isinstance(datasets, str) else datasets,
                "strict_types": strict_types, "allow_errors": allow_errors,
                "calc_string_offsets": calc_string_offsets, "tag_data": tag_data}
        if start is not None:
            args["start"] = start
        if stop is not None:
            args["stop"] = stop
        if whitelist is not None:
            args["whitelist"] = [list(spec) for spec in whitelist]
        if byteorder is not None:
            args["byteorder"] = byteorder
        reply = self.request("readhdf", args)
        def handles(descriptors):
            return {ds: make_object(self, d) for ds, d in (descriptors or {}).items()}

        return ReadResult(handles(reply.result["objects"]), reply.result.get("file_errors"),
                          reply.warnings)

    def ls(self, path, recursive=False):
        """The groups and datasets of an HDF5 file: a list of entry maps. An ExeTera field
        is one entry of kind `field` with `fieldtype`, `length` and `completed`; an awkward
        array (awkward 2's or awkward0's layout) one entry of kind `group` with objtype
        `awkward` or `awkward0`, `length` and `form`."""
        return self.request("lshdf", {"path": path, "recursive": recursive}).result["entries"]

    def h5file(self, domain, mode="r"):
        """The HDF5 file `domain` (its path from the data directory, starting with '/'),
        h5py-like (h5py_like.File): groups, datasets and attributes read and changed in place
        through the HSDS endpoint's native commands."""
        from .h5py_like import File  # a module name apart from h5ark.h5file, the function
        return File(self, domain, mode)

    def glob(self, paths):
        """The files names and glob patterns stand for (a distributed name its set), relative
        to the data directory."""
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        return self.request("glob", {"paths": [os.fspath(p) for p in paths]}).result["files"]

    def filetype(self, path):
        """"hdf5" or "parquet": the signature of the first file `path` stands for."""
        return self.request("filetype", {"path": os.fspath(path)}).result["type"]

    def fileformat(self, path):
        """"single" or "distribute": the first file's File_Format attribute, or its name."""
        return self.request("fileformat", {"path": os.fspath(path)}).result["file_format"]

    def rmhdf(self, path):
        """Remove the file `path` and its distributed set; the files removed."""
        return self.request("rmhdf", {"path": os.fspath(path)}).result["deleted"]

    def getacl(self, path):
        """The ACL that governs a folder (or a file's folder) when the daemon has users:
        {"path", "acl": [{"subject", "read", "create", "update", "delete", "readACL",
        "updateACL"}], "from": the folder holding it or None for the defaults, "default"}."""
        return self.request("getacl", {"path": os.fspath(path)}).result

    def setacl(self, path, acl):
        """Replace a folder's ACL (a list of {"subject": user, "g:GROUP" or "default", and
        the permissions it grants: "read": True, ...}); the ACL as written."""
        return self.request("setacl", {"path": os.fspath(path), "acl": list(acl)}).result["acl"]

    # -- LBANN sample packing ----------------------------------------------------------

    def pack(self, data_schema, experiment_schema=None, paths=None, sample_list=None,
             name=None):
        """LBANN's HDF5 data reader done by the daemon: the schemas (YAML text) applied to
        the samples of `paths` (files or globs: each top-level group a sample) or of an
        LBANN `sample_list`. Returns a Packed: `groups` ({group: ArrayView [samples,
        width]}), `fields` (where each field lies in its group's rows), `sample_ids`, and
        `batches(batch_size, shuffle, seed, drop_last)` of numpy mini-batches. `name`:
        a prefix for the objects' names."""
        if isinstance(paths, str):
            paths = [paths]
        reply = self.request("pack", {"data_schema": data_schema,
                                      "experiment_schema": experiment_schema,
                                      "paths": list(paths) if paths is not None else None,
                                      "sample_list": sample_list, "name": name})
        return _lbann.Packed(self, reply.result, reply.warnings)

    # -- ExeTera dataframes ------------------------------------------------------------

    def to_exetera(self, objects, path, group="df", mode="truncate", fieldtype=None):
        """Write objects as the fields of the ExeTera dataframe `group` of the file `path`
        (tohdf format "exetera"). `objects` as for to_hdf ({field name: object} or objects,
        whose fields take the object names); a DataFrame writes each of its columns.
        mode: `truncate` (a new file), `append` (add fields) or `update` (replace
        fields). `fieldtype` (e.g. "timestamp", "fixedstring,8") applies to every object,
        or, a {field name: fieldtype} mapping, to the fields it names (the rest keep their
        own). Every field written is completed. Returns the result ({"files": [...]})."""
        if isinstance(objects, Mapping):
            datasets, names = list(objects), [_name_of(o) for o in objects.values()]
        else:
            datasets, names = None, _names_of(objects)
        args = {"names": names, "datasets": datasets, "path": path, "format": "exetera",
                "group": group, "mode": mode}
        if isinstance(fieldtype, Mapping):
            fields = datasets or names
            unknown = set(fieldtype) - set(fields)
            if unknown:
                raise ValueError(f"fieldtype names fields not written: {sorted(unknown)}")
            args["fieldtypes"] = [fieldtype.get(f, "") for f in fields]
        else:
            args["fieldtype"] = fieldtype
        reply = self.request("tohdf", args)
        return Result(reply.result, reply.warnings)

    def writepart(self, path, field, obj, fieldtype=None):
        """Append the rows of `obj` (an object or its name) to the ExeTera field `field`
        ("dataframe/field") of the file `path`, creating what is missing; the field is left
        not completed. Returns the result ({"field", "rows"}: the field's rows now)."""
        reply = self.request("writepart", {"path": path, "field": field,
                                           "name": _name_of(obj), "fieldtype": fieldtype})
        return Result(reply.result, reply.warnings)

    def complete(self, path, field):
        """Mark the ExeTera field `field` of the file `path` completed."""
        reply = self.request("complete", {"path": path, "field": field})
        return Result(reply.result, reply.warnings)

    class ExeteraWriter:
        """Writes one ExeTera field in parts; see Client.exetera_writer."""

        def __init__(self, client, path, field, fieldtype=None):
            self.client, self.path, self.field, self.fieldtype = client, path, field, fieldtype
            self.rows = None  # the field's rows after the last part

        def write_part(self, part):
            """Append a part: an h5ark object, an object name, or data that array() takes
            (sent, written, and deleted again)."""
            if isinstance(part, (H5arkObject, str)):
                result = self.client.writepart(self.path, self.field, part, self.fieldtype)
            else:
                obj = self.client.array(part)
                try:
                    result = self.client.writepart(self.path, self.field, obj, self.fieldtype)
                finally:
                    obj.delete()
            self.rows = result["rows"]
            return result

        def complete(self):
            self.rows = self.client.complete(self.path, self.field)["rows"]

        def __enter__(self):
            return self

        def __exit__(self, exc_type, exc, tb):
            if exc_type is None:
                self.complete()
            return False

    def exetera_writer(self, path, field, fieldtype=None):
        """A context manager writing the ExeTera field `field` ("dataframe/field") of `path`
        in parts: `with client.exetera_writer("a.hdf5", "df/x") as w: w.write_part(arr)`.
        The field is completed when the block ends normally, and left not completed when
        it ends with an exception."""
        return Client.ExeteraWriter(self, path, field, fieldtype)


_current = None


def _read_key(key):
    """A Z85 CURVE key given as text, bytes, or the path of a file holding it."""
    if isinstance(key, (bytes, bytearray)):
        key = key.decode("ascii")
    text = str(key).strip()
    if len(text) != 40 and os.path.exists(text):
        with open(text) as f:
            text = f.readline().strip()
    if len(text) != 40:
        raise ValueError("a CURVE key is 40 Z85 characters (the .pub file h5arkd --curve-keygen "
                         "writes)")
    return text.encode("ascii")


def connect(endpoint=DEFAULT_ENDPOINT, token=None, timeout=DEFAULT_TIMEOUT, server_key=None,
            connect_timeout=DEFAULT_CONNECT_TIMEOUT, progress=None):
    """Connect to a daemon, check that it answers within `connect_timeout` seconds, and
    make this client the one the module-level functions use. `server_key` turns on CURVE
    encryption, `progress` the bars of long requests (see Client)."""
    global _current
    client = Client(endpoint, token=token, timeout=timeout, server_key=server_key,
                    connect_timeout=connect_timeout, progress=progress)
    try:
        client.ping()
    except BaseException:
        client.close()
        raise
    _current = client
    return client


def current_client():
    """The most recently connected client that is still open."""
    if _current is None:
        raise ConnectionClosedError("closed", "not connected: call h5ark.connect() first")
    return _current
