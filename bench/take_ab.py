"""An index's positions (take and assign with integer positions and with a bool mask) on two
daemon builds, A (the reference) and B, in the same run, runs alternating between them:
seconds per command (median, min and max) and B's speed against A (A's median over B's,
and the extremes):

    /usr/bin/python3 bench/take_ab.py A/server/h5arkd B/server/h5arkd [runs] [ranks] [rows]

Commands on an int64 array of `rows` (default 4M): take at as many random positions, take
where a mask is true (30% of the rows, at random), take where the second half of the rows
is true (at several ranks every position moves to another rank), and assign of a scalar
where the 30% mask is true. ranks: 1 (default) or more (mpirun, 4 locales / ranks each)."""
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from ab import ab_args, ab_daemon, alternate  # noqa: E402
from wire import LONG, ok, put_array, send  # noqa: E402

A, B, RUNS, RANKS = ab_args()
N = int(sys.argv[5]) if len(sys.argv) > 5 else 4_000_000
RNG = np.random.default_rng(11)
VALUES = np.arange(N, dtype=np.int64)
POSITIONS = RNG.integers(-N, N, N)
MASK = RNG.random(N) < 0.3
HALF = np.arange(N) >= N // 2


class Client:
    """What ab.alternate hands each command: the daemon (its requests are one socket each)."""

    def __init__(self, d):
        self.d = d

    def close(self):
        pass


def start(binary):
    d = ab_daemon(binary, RANKS)
    a, pos, mask, half = (put_array(d, x) for x in (VALUES, POSITIONS, MASK, HALF))
    cmds = {
        "take positions": ("take", {"array": a, "index": pos}),
        "take mask 30%": ("take", {"array": a, "index": mask}),
        "take mask 2nd half": ("take", {"array": a, "index": half}),
        "assign mask 30%": ("assign", {"array": a, "index": mask, "value": -1}),
    }
    return d, Client(d), cmds


def once(c, cmd, args):
    t = time.perf_counter()
    result = ok(send(c.d, cmd, args, timeout_ms=LONG))
    dt = time.perf_counter() - t
    if cmd == "take":
        ok(send(c.d, "delete", {"names": [result["object"]["name"]]}))
    return dt


alternate({"A": start(A), "B": start(B)}, once, RUNS, f"ranks {RANKS}, {RUNS} runs, {N} rows")
