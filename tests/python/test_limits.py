"""Back-pressure and limits: past --max-message a request is refused with resource_limit,
past --max-queue with busy, at once, while the daemon keeps serving everyone else."""
import time

import msgpack
import numpy as np
import zmq

from daemons import TOOL_SLOWDOWN
from wire import request


def test_max_message(start_daemon):
    d = start_daemon(locales=2, extra_args=["--max-message", "1M"])
    big = np.zeros(2 << 20, np.uint8)
    hdr, _ = request(d.endpoint, {"v": 1, "id": 4, "cmd": "put",
                                  "args": {"dtype": "uint8", "shape": [big.size]},
                                  "buffers": [{"name": "values", "nbytes": big.size}]},
                     [big[: 1 << 20].tobytes(), big[1 << 20:].tobytes()])
    assert not hdr["ok"] and hdr["error"]["code"] == "resource_limit", hdr
    assert "maximum message size" in hdr["error"]["message"]
    small = np.arange(1000, dtype=np.int64)
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "put", "args": {"dtype": "int64",
                                  "shape": [small.size]},
                                  "buffers": [{"name": "values", "nbytes": small.nbytes}]},
                     [small.tobytes()])
    assert hdr["ok"], hdr
    assert request(d.endpoint, {"v": 1, "cmd": "getconfig"})[0]["result"]["memory_used"] == 8000


def test_queue_full_is_busy(start_daemon):
    """One handler, one queue slot: a slow request holds the handler, at most one waits, the
    rest are told `busy` at once; ping (answered by the router) still gets through."""
    d = start_daemon(locales=2, extra_args=["--handlers", "1", "--max-queue", "1"])
    slow = {"v": 1, "cmd": "create", "args": {"dtype": "float64", "size": 60_000_000,
                                              "fill": "uniform", "seed": 1}}
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(d.endpoint)
    for i in range(12):
        s.send(msgpack.packb({**slow, "id": i}))
    replies = {}
    t0 = time.time()
    busy_seen_at = None
    while len(replies) < 12:
        assert s.poll(120000), f"only {len(replies)} of 12 replies"
        rep = msgpack.unpackb(s.recv())
        replies[rep["id"]] = rep
        if rep.get("error", {}).get("code") == "busy" and busy_seen_at is None:
            busy_seen_at = time.time() - t0
            # while the slow ones run, the daemon still answers others
            assert request(d.endpoint, {"v": 1, "cmd": "ping"},
                           timeout_ms=5000 * TOOL_SLOWDOWN)[0]["ok"]
    s.close()
    codes = [r["error"]["code"] if not r["ok"] else "ok" for r in replies.values()]
    # the one running and, if the handler took it before the next arrived, the one queued
    assert 1 <= codes.count("ok") <= 2, codes
    assert codes.count("busy") == 12 - codes.count("ok"), codes
    assert set(codes) <= {"ok", "busy"}, codes
    for r in replies.values():
        if not r["ok"]:
            assert "try again" in r["error"]["message"]
    print(f"codes: {sorted(codes)}; first busy after {busy_seen_at:.3f} s")
