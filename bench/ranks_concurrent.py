"""Several clients at once against a daemon of R ranks (one host, 2 locales a rank): how much
their requests overlap. Each of K clients does N rounds of one kind of work; the reference is
the same K x N rounds by one client, measured in the same run, so the ratio is the speed-up
the daemon gives concurrent clients (1.0: none, K: perfect overlap).

    H5ARKD=build/server/h5arkd /usr/bin/python3 bench/ranks_concurrent.py [R K N runs]

Kinds: `get` (every client reads one shared 8 MB int64 array: readers run together) and
`mixed` (each client creates its own 8 MB array, gets it and deletes it: the create and the
delete change the registry and run alone on every rank, docs/DESIGN.md "Ranks")."""
import pathlib
import statistics
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from daemons import Daemon  # noqa: E402
from wire import call  # noqa: E402

R, K, N, RUNS = (int(x) for x in (sys.argv[1:5] if len(sys.argv) > 4 else (2, 4, 10, 5)))
ROWS = 1 << 20


def ok(endpoint, cmd, args):
    hdr, frames = call(endpoint, cmd, args)
    assert hdr["ok"], hdr
    return frames


def rounds(endpoint, kind, client, n):
    for _ in range(n):
        if kind == "get":
            ok(endpoint, "get", {"name": "shared"})
        else:
            name = f"c{client}"
            ok(endpoint, "create", {"dtype": "int64", "fill": "arange", "stop": ROWS, "name": name})
            ok(endpoint, "get", {"name": name})
            ok(endpoint, "delete", {"names": [name]})


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def together(endpoint, kind):
    threads = [threading.Thread(target=rounds, args=(endpoint, kind, k, N)) for k in range(K)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


d = Daemon(ranks=R if R > 1 else None, locales=2)
try:
    ok(d.endpoint, "create", {"dtype": "int64", "fill": "arange", "stop": ROWS, "name": "shared"})
    for kind in ("get", "mixed"):
        ratios, one, many = [], [], []
        for _ in range(RUNS):
            one.append(timed(lambda: rounds(d.endpoint, kind, 0, K * N)))
            many.append(timed(lambda: together(d.endpoint, kind)))
            ratios.append(one[-1] / many[-1])
        print(f"R={R} {kind:5s} {K} clients x {N}: {statistics.median(many):.3f} s "
              f"(one client the same work {statistics.median(one):.3f} s): "
              f"{statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}), "
              f"{RUNS} runs", flush=True)
finally:
    d.cleanup()
