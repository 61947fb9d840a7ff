"""The connection to one h5ark daemon and its commands."""
import itertools
import math
import threading
import time
import warnings
from collections.abc import Iterable, Mapping

import numpy as np
import zmq

from . import codec, wire
from .errors import ConnectionClosedError, H5arkWarning, ReplyTimeoutError, error_for
from .objects import H5arkObject, make_object

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"
DEFAULT_TIMEOUT = 120.0  # seconds; large tohdf/readhdf calls are long but finite


class Reply:
    """A successful reply: the `result` map, payload buffers by name, and warnings."""

    __slots__ = ("result", "buffers", "warnings")

    def __init__(self, result, buffers, warnings_):
        self.result, self.buffers, self.warnings = result, buffers, warnings_


class Result(dict):
    """A command's result map, with the reply's `warnings` (a list of str)."""

    def __init__(self, result, warnings_=()):
        super().__init__(result)
        self.warnings = list(warnings_)


class ReadResult(Result):
    """read_hdf's {dataset: object}, with `file_errors` (files skipped under allow_errors),
    `tags` ({dataset: int64 pdarray of each element's file index}, under tag_data) and
    `warnings`."""

    def __init__(self, objects, file_errors=(), tags=None, warnings_=()):
        super().__init__(objects, warnings_)
        self.file_errors = list(file_errors or ())
        self.tags = dict(tags or {})


def _name_of(obj):
    if isinstance(obj, H5arkObject):
        return obj.name
    if isinstance(obj, str):
        return obj
    raise TypeError(f"expected an h5ark object or an object name, got {type(obj).__name__}")


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
                 context=None):
        self.endpoint = endpoint
        self.token = token
        self.timeout = timeout
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._socket = (context or zmq.Context.instance()).socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
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
            header["id"] = next(self._ids)
            # copy=False: ZeroMQ sends straight from the caller's arrays. They stay
            # untouched until the reply shows the daemon has received everything.
            self._socket.send_multipart([wire.pack_header(header), *frames], copy=False)
            reply, payload = self._receive(header["id"], cmd)
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise error_for(error.get("code", "internal"),
                            error.get("message", "error reply without a message"))
        texts = reply.get("warnings") or []
        for text in texts:
            warnings.warn(f"{cmd}: {text}", H5arkWarning, stacklevel=3)
        buffers_in = wire.decode_buffers(reply.get("buffers") or [], payload)
        return Reply(reply.get("result") or {}, buffers_in, texts)

    def _receive(self, request_id, cmd):
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._socket.poll(None if remaining is None else int(remaining * 1000)):
                raise ReplyTimeoutError("timeout", f"no reply to `{cmd}` from "
                                                   f"{self.endpoint} within {self.timeout} s")
            frames = self._socket.recv_multipart(copy=False)
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

    def array(self, data, dtype=None, name=None):
        """Send a numpy array or a sequence: numbers and bools become a pdarray, str values
        a Strings. An empty sequence is a float64 pdarray unless dtype="str"."""
        if isinstance(data, (str, bytes)):
            raise TypeError("array() takes a sequence; wrap a single string in a list")
        if isinstance(data, H5arkObject):
            raise TypeError(f"{data.name!r} is already in the daemon")
        if not isinstance(data, np.ndarray):
            data = list(data)
        if codec.is_string_data(data, dtype):
            args, buffers = codec.encode_strings(data)
        else:
            args, buffers = codec.encode_pdarray(data, dtype)
        args["name"] = name
        return self._object(self.request("put", args, buffers))

    def get(self, obj, start=None, stop=None):
        """The raw `get` reply for an object's elements [start, stop)."""
        return self.request("get", {"name": _name_of(obj), "start": start, "stop": stop})

    def info(self, names=None):
        """Handles for the named objects (default: every object in the daemon)."""
        args = {} if names is None else {"names": _names_of(names)}
        return [make_object(self, d) for d in self.request("info", args).result["objects"]]

    def delete(self, *objs_or_names):
        """Delete objects given as handles or names; returns the deleted names."""
        return self.request("delete", {"names": _names_of(objs_or_names)}).result["deleted"]

    def clear(self):
        """Delete every object; returns how many were deleted."""
        return self.request("clear").result["deleted"]

    # -- HDF5 ------------------------------------------------------------------------

    def to_hdf(self, objects, path, mode="truncate", file_type="distribute"):
        """Write objects to HDF5 under `path` (relative to the daemon's data directory).
        `objects` is {dataset name: object or object name}, or objects / names whose
        datasets take the object names. Returns the result ({"files": [...]}) with
        `.warnings` (e.g. files overwritten); each warning is also issued as H5arkWarning."""
        if isinstance(objects, Mapping):
            datasets, names = list(objects), [_name_of(o) for o in objects.values()]
        else:
            datasets, names = None, _names_of(objects)
        reply = self.request("tohdf", {"names": names, "datasets": datasets, "path": path,
                                       "mode": mode, "file_type": file_type})
        return Result(reply.result, reply.warnings)

    def read_hdf(self, paths, datasets=None, strict_types=True, allow_errors=False,
                 calc_string_offsets=False, tag_data=False):
        """Read datasets (default: every top-level object) from files or glob patterns.
        Returns {dataset: object} with `.file_errors` listing files skipped under
        allow_errors and, under tag_data, `.tags` mapping each dataset to an int64 array
        of its elements' file indices."""
        args = {"paths": [paths] if isinstance(paths, str) else list(paths),
                "datasets": [datasets] if isinstance(datasets, str) else datasets,
                "strict_types": strict_types, "allow_errors": allow_errors,
                "calc_string_offsets": calc_string_offsets, "tag_data": tag_data}
        reply = self.request("readhdf", args)
        def handles(descriptors):
            return {ds: make_object(self, d) for ds, d in (descriptors or {}).items()}

        return ReadResult(handles(reply.result["objects"]), reply.result.get("file_errors"),
                          handles(reply.result.get("tags")), reply.warnings)

    def ls(self, path, recursive=False):
        """The groups and datasets of an HDF5 file: a list of entry maps."""
        return self.request("lshdf", {"path": path, "recursive": recursive}).result["entries"]


_current = None


def connect(endpoint=DEFAULT_ENDPOINT, token=None, timeout=DEFAULT_TIMEOUT):
    """Connect to a daemon, check that it answers, and make this client the one the
    module-level functions use."""
    global _current
    client = Client(endpoint, token=token, timeout=timeout)
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
