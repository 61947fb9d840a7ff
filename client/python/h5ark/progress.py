"""A progress bar for long requests.

A client's watcher thread is told when a request starts and ends. When one has run for a
second, the watcher asks the daemon for `status` on a socket of its own (the client's socket
is busy waiting for the reply) and shows the request's done/total with tqdm on stderr until
the reply comes. tqdm is optional: without it there is no bar. Nothing here may make a
request fail: any trouble with the bar ends the bar, not the request.
"""
import sys
import threading
import time

from . import wire

DELAY = 1.0  # seconds a request runs before its bar appears
INTERVAL = 0.25  # seconds between two looks at the daemon's status
STATUS_WAIT = 2.0  # seconds to wait for a status reply before giving the bar up

# Answered at once, or ending the connection: never worth a bar.
QUICK = frozenset({"ping", "getconfig", "status", "shutdown", "fault"})

_UNITS = {"bytes": {"unit": "B", "unit_scale": True, "unit_divisor": 1024},
          "rows": {"unit": " rows", "unit_scale": True},
          "files": {"unit": " files"}}


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def wanted(setting, cmd, stream=None):
    """Whether a request `cmd` may get a bar: `setting` False never, True whenever tqdm is
    installed, None (auto) only when `stream` (default stderr) is a terminal too."""
    if setting is False or cmd in QUICK:
        return False
    if setting is None:
        stream = sys.stderr if stream is None else stream
        try:
            if not stream.isatty():
                return False
        except (AttributeError, ValueError):  # no stream, or a closed one
            return False
    return _tqdm() is not None


class _Request:
    __slots__ = ("cmd", "id", "started", "finished")

    def __init__(self, cmd, request_id):
        self.cmd, self.id, self.started, self.finished = cmd, request_id, time.monotonic(), False


class _GiveUp(Exception):
    """The daemon does not answer `status` as hoped: no bar for this request."""


class Watcher:
    """One client's bars. begin() before waiting for a reply, end() once it has come; a
    thread of its own (started at the first begin) shows the bar of a request that outlasts
    DELAY, and end() returns only once that bar is gone."""

    def __init__(self, client):
        self._client = client
        self._cv = threading.Condition()
        self._current = None  # the _Request waiting for its reply
        self._showing = None  # the _Request whose bar is up
        self._closed = False
        self._thread = None

    def begin(self, cmd, request_id):
        with self._cv:
            if self._closed:
                return None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="h5ark-progress",
                                                daemon=True)
                self._thread.start()
            self._current = _Request(cmd, request_id)
            self._cv.notify_all()
            return self._current

    def end(self, req, finished):
        """The reply to `req` has come: `finished` (a success) fills its bar before it
        goes."""
        if req is None:
            return
        with self._cv:
            req.finished = finished
            if self._current is req:
                self._current = None
            self._cv.notify_all()
            while self._showing is req:
                self._cv.wait()

    def close(self):
        with self._cv:
            self._closed = True
            self._current = None
            self._cv.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self):
        while True:
            with self._cv:
                while self._current is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                req = self._current
                while self._current is req:
                    left = req.started + DELAY - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                if self._current is not req:
                    continue
                self._showing = req
            try:
                self._show(req)
            except Exception:  # the bar is a convenience: it must never break the request
                pass
            finally:
                with self._cv:
                    self._showing = None
                    self._cv.notify_all()

    def _running(self, req, wait):
        """Wait up to `wait` seconds for req's reply; True while it has not come."""
        with self._cv:
            if self._current is req and wait > 0:
                self._cv.wait(wait)
            return self._current is req

    def _show(self, req):
        tqdm = _tqdm()
        sock, bar, unit = self._client._side_socket(), None, None
        status_id = 0
        try:
            while self._running(req, 0):
                status_id += 1
                entry = self._look(sock, req, status_id)
                if entry is not None:
                    if bar is None or entry.get("unit") != unit:
                        if bar is not None:
                            bar.close()
                        unit = entry.get("unit")
                        bar = self._new_bar(tqdm, req, entry)
                    elif unit is not None:
                        bar.update(max(0, (entry.get("done") or 0) - bar.n))
                    else:
                        bar.refresh()
                if not self._running(req, INTERVAL):
                    break
        except _GiveUp:
            pass
        finally:
            sock.close(linger=0)
            if bar is not None:
                if req.finished and unit is not None and bar.total:
                    bar.update(bar.total - bar.n)
                bar.close()

    def _look(self, sock, req, status_id):
        """req's entry in the daemon's status, or None while it is not listed (still
        queued for a handler thread)."""
        header = {"v": wire.PROTOCOL_VERSION, "id": status_id, "cmd": "status",
                  "args": {"client": self._client._identity}}
        if self._client.token is not None:
            header["token"] = self._client.token
        sock.send(wire.pack_header(header))
        while True:
            if not sock.poll(int(STATUS_WAIT * 1000)):
                raise _GiveUp()
            reply = wire.unpack_header(sock.recv_multipart()[0])
            if reply.get("id") == status_id:
                break
        if not reply.get("ok"):  # a daemon without `status`, or a token it refuses
            raise _GiveUp()
        for entry in (reply.get("result") or {}).get("requests") or []:
            if entry.get("id") == req.id:
                return entry
        return None

    @staticmethod
    def _new_bar(tqdm, req, entry):
        unit = entry.get("unit")
        common = {"desc": req.cmd, "leave": False, "file": sys.stderr, "dynamic_ncols": True}
        if unit is None:  # nothing measured: the time it has taken
            return tqdm(total=None, bar_format="{desc}: {elapsed}", **common)
        return tqdm(total=entry.get("total"), initial=entry.get("done") or 0,
                    **_UNITS.get(unit, {}), **common)
