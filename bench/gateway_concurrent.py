"""The HTTP gateway answering several connections at once, as h5web's page asks: K clients
each read N slices of 8 MB (`/data?format=bin`) of one file at the same time; the reference
is the same K x N reads by one client, in the same run, so the ratio is the speed-up the
gateway gives concurrent connections (1.0: none, K: perfect overlap). Also how long a
`/meta` waits while those reads run, against a `/meta` alone (1.0: not held up at all).

    H5ARKD=build/server/h5arkd /usr/bin/python3 bench/gateway_concurrent.py [K N runs]"""
import pathlib
import socket
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request

import h5py
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from conftest import Daemon  # noqa: E402

K, N, RUNS = (int(x) for x in (sys.argv[1:4] if len(sys.argv) > 3 else (4, 8, 5)))
ROWS, COLS = 64, 1 << 14  # 8 MB of float64 a slice (one row block)

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
base = f"http://127.0.0.1:{port}"


def get(endpoint, **params):
    url = f"{base}{endpoint}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=300) as r:
        return r.read()


def reads(client, n):
    for i in range(n):
        block = (client * n + i) % 8
        body = get("/data", file="g.h5", path="/m", format="bin",
                   selection=f"{block * ROWS}:{(block + 1) * ROWS}")
        assert len(body) == ROWS * COLS * 8


def together(target):
    threads = [threading.Thread(target=target, args=(k,)) for k in range(K)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t


def meta_time():
    t = time.perf_counter()
    get("/meta", file="g.h5", path="/m")
    return time.perf_counter() - t


def summary(name, values):
    print(f"{name}: median {statistics.median(values):.2f}, min {min(values):.2f}, "
          f"max {max(values):.2f} ({len(values)} runs)")


d = Daemon(locales=2, extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
try:
    with h5py.File(d.data_dir / "g.h5", "w") as f:
        f["m"] = np.arange(8 * ROWS * COLS, dtype=np.float64).reshape(8 * ROWS, COLS)
    reads(0, 1)  # the listing and the page cache, before any timing
    speedups, waits = [], []
    for _ in range(RUNS):
        t = time.perf_counter()
        for k in range(K):  # the reference: the same reads by one client
            reads(k, N)
        one = time.perf_counter() - t
        many = together(lambda k: reads(k, N))
        speedups.append(one / many)
        alone = min(meta_time() for _ in range(5))
        loaders = [threading.Thread(target=reads, args=(k, N)) for k in range(K)]
        for th in loaders:
            th.start()
        time.sleep(0.05)
        busy = meta_time()
        for th in loaders:
            th.join()
        waits.append(busy / alone)
    print(f"gateway, {K} clients x {N} reads of {ROWS * COLS * 8 >> 20} MB, 2 locales")
    summary("speed-up of K clients at once over one client (x)", speedups)
    summary("/meta during the reads over /meta alone (x)", waits)
finally:
    d.cleanup()
