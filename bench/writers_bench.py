"""A 1 KiB value written through the HSDS endpoint to a.h5 while a large tohdf writes b.h5,
against the same write with nothing else running, measured in the same run: writers of
different files no longer wait for each other (docs/DESIGN.md, "Locks of files, and their
order").

    /usr/bin/python3 bench/writers_bench.py [--runs 5] [--mib 1024] [--h5arkd PATH]

Each run starts the tohdf (--mib of int64, one file), waits until `status` lists it and
a tenth of a second more, then times one value write; the reference is the median of
writes with nothing else running, taken in the same run. Prints median, min and max of
each and of their ratio (lower is better: 1 is no wait at all), and the tohdf's own time.
"""
import argparse
import http.client
import json
import os
import pathlib
import statistics
import sys
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from daemons import Daemon, free_port  # noqa: E402
from wire import ok, send  # noqa: E402

SMALL = 128  # float64 elements: 1 KiB


def stats(xs):
    return statistics.median(xs), min(xs), max(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mib", type=int, default=1024, help="size of the tohdf (int64), MiB")
    ap.add_argument("--h5arkd", default=str(REPO / "build" / "server" / "h5arkd"))
    ap.add_argument("--locales", type=int, default=2)
    a = ap.parse_args()
    os.environ["H5ARKD"] = a.h5arkd
    port = free_port()
    d = Daemon(locales=a.locales, extra_args=["--hsds-endpoint", f"127.0.0.1:{port}"])
    try:
        d.data_dir.mkdir(exist_ok=True)
        with h5py.File(d.data_dir / "a.h5", "w") as f:
            f["v"] = np.zeros(SMALL, dtype="<f8")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

        def call(method, path, body=None, headers=None):
            conn.request(method, f"{path}?domain=/a.h5", body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            assert r.status == 200, (r.status, data[:200])
            return data

        root = json.loads(call("GET", "/"))["root"]
        vid = json.loads(call("GET", f"/groups/{root}/links/v"))["link"]["id"]
        octets = {"Content-Type": "application/octet-stream"}

        def write(k):
            t = time.perf_counter()
            call("PUT", f"/datasets/{vid}/value", np.full(SMALL, k, dtype="<f8").tobytes(),
                 octets)
            return time.perf_counter() - t

        n = a.mib * (1 << 20) // 8
        big = ok(send(d, "create", {"dtype": "int64", "fill": "arange", "start": 0, "stop": n},
                      timeout_ms=600000))["object"]["name"]
        for k in range(20):  # warm
            write(k)
        idle, busy, ratios, tohdf_s = [], [], [], []
        for run in range(a.runs):
            ref = statistics.median(write(k) for k in range(21))
            done = []

            def tohdf():
                t = time.perf_counter()
                done.append(send(d, "tohdf", {"names": [big], "datasets": ["x"],
                                              "path": "b.h5", "file_type": "single"},
                                 timeout_ms=600000))
                tohdf_s.append(time.perf_counter() - t)

            th = threading.Thread(target=tohdf)
            th.start()
            while not done and not any(r["cmd"] == "tohdf"
                                       for r in ok(send(d, "status"))["requests"]):
                time.sleep(0.005)
            time.sleep(0.1)
            assert not done, "the tohdf ended before the write: give it more --mib"
            lat = write(run)
            during = not done
            th.join()
            ok(done[0])
            idle.append(ref)
            busy.append(lat)
            ratios.append(lat / ref)
            print(f"run {run + 1}: idle {ref * 1e3:.2f} ms, during the tohdf {lat * 1e3:.2f} ms"
                  f"{'' if during else ' (answered after it)'}, tohdf {tohdf_s[-1]:.2f} s",
                  file=sys.stderr)
        print(f"writers: {a.h5arkd}, {a.locales} locales, {a.runs} runs, tohdf of {a.mib} MiB")
        print(f"{'':44} {'median':>10} {'min':>10} {'max':>10}")
        for label, xs, scale in (
                ("HSDS 1 KiB write to a.h5 during tohdf, ms", busy, 1e3),
                ("the same with nothing else running, ms", idle, 1e3),
                ("ratio (1 = no wait)", ratios, 1),
                ("the tohdf to b.h5, s", tohdf_s, 1)):
            m, lo, hi = stats([x * scale for x in xs])
            print(f"{label:44} {m:10.2f} {lo:10.2f} {hi:10.2f}")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
