"""Group `hsds` of bench/run: the HSDS endpoint's value reads against h5py and its round trip
against a native ping, measured in the same run (bench/bench.py prints them)."""
import http.client
import json
import socket
import statistics
import time

import h5py
import msgpack
import numpy as np
import zmq

from daemons import Daemon, free_port

COLS = 1 << 12  # float64 columns: 32 KiB a row; the slab read is a 16th of the rows
SMALL = 128          # float64 elements of the small slab: 1 KiB


def rows(a):
    size = f"{a.bytes / (1 << 30):g} GiB" if a.bytes >= 1 << 30 else f"{a.bytes >> 20} MiB"
    return {
        "hsds_slab": (f"HSDS value read of a {a.bytes >> 24} MiB hyperslab of a "
                      f"{size} dataset, warm", "h5py: open, read the same slab, close",
                      ">= 0.8", lambda mine, ref, ratio: ratio >= 0.8),
        "hsds_small": ("HSDS 1 KiB slab round trip, median (raw socket)",
                       "native ping, median (raw ZeroMQ DEALER)",
                       "<= 2", lambda mine, ref, ratio: ratio <= 2),
    }


def http_head(sock):
    """One HTTP/1.1 answer's head off a raw socket: (head, its Content-Length, the body's
    bytes that came with it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, rest = data.split(b"\r\n\r\n", 1)
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    return head, length, rest


def http_answer(sock):
    """The body of one HTTP/1.1 answer with a Content-Length, read off a raw socket."""
    _, length, body = http_head(sock)
    while len(body) < length:
        body += sock.recv(65536)
    return body


def http_answer_into(sock, out):
    """One HTTP/1.1 answer's body received straight into `out` (a writable buffer of its
    Content-Length), as a C client with a buffer of its own reads it: one copy."""
    head, length, rest = http_head(sock)
    view = memoryview(out).cast("B")
    assert length == len(view), (length, len(view), head[:200])
    view[:len(rest)] = rest
    got = len(rest)
    while got < length:
        n = sock.recv_into(view[got:])
        assert n, "the connection closed mid-answer"
        got += n
    return out


def measure(a):
    n_rows = a.bytes // (COLS * 8)
    slab_rows = n_rows // 16
    port = free_port()
    d = Daemon(locales=a.locales, extra_args=["--hsds-endpoint", f"127.0.0.1:{port}"])
    try:
        d.data_dir.mkdir(exist_ok=True)
        path = d.data_dir / "big.h5"
        with h5py.File(path, "w") as f:
            x = f.create_dataset("x", shape=(n_rows, COLS), dtype="<f8")
            block = np.arange(slab_rows * COLS, dtype="<f8").reshape(slab_rows, COLS)
            for r in range(0, n_rows, slab_rows):
                x[r:r + slab_rows] = block + r
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

        def get(path_, **params):
            query = "&".join(f"{k}={v}" for k, v in params.items())
            conn.request("GET", f"{path_}?domain=/big.h5&{query}",
                         headers={"Accept": "application/octet-stream"})
            r = conn.getresponse()
            body = r.read()
            assert r.status == 200, body[:200]
            return body

        root = json.loads(get("/"))["root"]
        xid = json.loads(get(f"/groups/{root}/links/x"))["link"]["id"]
        start = n_rows // 3
        select = f"[{start}:{start + slab_rows},:]"
        nbytes = slab_rows * COLS * 8
        want = None
        slab, ref = [], []
        conn.close()
        # the slab with a lean client too: a raw keep-alive socket whose answer lands in a
        # fresh array made as h5py makes its own (numpy.zeros: the same first touches)
        sock = socket.create_connection(("127.0.0.1", port))
        slab_req = (f"GET /datasets/{xid}/value?domain=/big.h5&select={select} HTTP/1.1\r\n"
                    "Host: bench\r\nAccept: application/octet-stream\r\n\r\n").encode()
        for run in range(a.runs + 1):  # the first run warms the file
            t = time.perf_counter()
            sock.sendall(slab_req)
            body = http_answer_into(sock, np.zeros((slab_rows, COLS), "<f8"))
            mine = time.perf_counter() - t
            t = time.perf_counter()
            with h5py.File(path, "r") as f:
                got = f["x"][start:start + slab_rows, :]
            theirs = time.perf_counter() - t
            if want is None:
                want = got
                assert np.array_equal(body, got)
            if run:
                slab.append(nbytes / mine / 1e9)
                ref.append(nbytes / theirs / 1e9)
        # the round trips with lean clients on both sides, so that the servers are compared:
        # HTTP/1.1 keep-alive on a raw socket, and a ZeroMQ DEALER with a packed header
        pings = max(200, a.pings // 5)
        small, native = [], []
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ctx = zmq.Context.instance()
        dealer = ctx.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(d.endpoint)
        ping = msgpack.packb({"v": 1, "id": 1, "cmd": "ping"})
        for run in range(a.runs):
            req = (f"GET /datasets/{xid}/value?domain=/big.h5&select=[{run},0:{SMALL}] HTTP/1.1\r\n"
                   "Host: bench\r\nAccept: application/octet-stream\r\n\r\n").encode()
            trips = []
            for _ in range(pings):
                t = time.perf_counter()
                sock.sendall(req)
                assert len(http_answer(sock)) == SMALL * 8
                trips.append(time.perf_counter() - t)
            small.append(statistics.median(trips) * 1e6)
            trips = []
            for _ in range(pings):
                t = time.perf_counter()
                dealer.send(ping)
                dealer.recv_multipart()
                trips.append(time.perf_counter() - t)
            native.append(statistics.median(trips) * 1e6)
        sock.close()
        dealer.close()
    finally:
        d.cleanup()
    return {"hsds_slab": ("GB/s", slab, ref), "hsds_small": ("us", small, native)}
