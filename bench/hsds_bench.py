"""Group `hsds` of bench/run: the HSDS endpoint's value reads against h5py and its round trip
against a native ping, measured in the same run (bench/bench.py prints them)."""
import http.client
import json
import statistics
import time

import h5py
import numpy as np

from daemons import Daemon, free_port

COLS = 1 << 12  # float64 columns: 32 KiB a row; the slab read is a 16th of the rows
SMALL = 128          # float64 elements of the small slab: 1 KiB


def rows(a):
    size = f"{a.bytes / (1 << 30):g} GiB" if a.bytes >= 1 << 30 else f"{a.bytes >> 20} MiB"
    return {
        "hsds_slab": (f"HSDS value read of a {a.bytes >> 24} MiB hyperslab of a "
                      f"{size} dataset, warm", "h5py: open, read the same slab, close",
                      ">= 0.8", lambda mine, ref, ratio: ratio >= 0.8),
        "hsds_small": ("HSDS 1 KiB slab round trip, median", "native ping, same client machine",
                       "<= 2", lambda mine, ref, ratio: ratio <= 2),
    }


def measure(a, h5ark):
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
        for run in range(a.runs + 1):  # the first run warms the file
            t = time.perf_counter()
            body = get(f"/datasets/{xid}/value", select=select)
            mine = time.perf_counter() - t
            t = time.perf_counter()
            with h5py.File(path, "r") as f:
                got = f["x"][start:start + slab_rows, :]
            theirs = time.perf_counter() - t
            if want is None:
                want = got
                assert np.array_equal(np.frombuffer(body, "<f8").reshape(got.shape), got)
            if run:
                slab.append(nbytes / mine / 1e9)
                ref.append(nbytes / theirs / 1e9)
        pings = max(200, a.pings // 5)
        small, native = [], []
        c = h5ark.connect(d.endpoint)
        for run in range(a.runs):
            trips = []
            for _ in range(pings):
                t = time.perf_counter()
                get(f"/datasets/{xid}/value", select=f"[{run},0:{SMALL}]")
                trips.append(time.perf_counter() - t)
            small.append(statistics.median(trips) * 1e6)
            trips = []
            for _ in range(pings):
                t = time.perf_counter()
                c.ping()
                trips.append(time.perf_counter() - t)
            native.append(statistics.median(trips) * 1e6)
        conn.close()
        c.close()
    finally:
        d.cleanup()
    return {"hsds_slab": ("GB/s", slab, ref), "hsds_small": ("us", small, native)}
