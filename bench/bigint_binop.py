"""bigint compute against int64 compute on one daemon, in the same run: seconds per command
(median, min and max) and each bigint command's speed against the native int64 binop on
the same array (its time over the bigint command's, per run: median, min and max):

    /usr/bin/python3 bench/bigint_binop.py build/server/h5arkd [runs] [ranks] [rows]

On an int64 array of `rows` (default 2M): the reference `binop` a + 1 (int64 out), then
`bigint_binop` a + 2**200 (Arkouda's `ak.arange(n) + 2**200`: four limbs out), that bigint
times a (five limbs), the bigint compared with 2**200 + n/2 (bool out), and a bigint with
max_bits 128 minus a (two limbs, wrapping). ranks: 1 (default) or more (mpirun)."""
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from ab import ab_daemon  # noqa: E402
from wire import LONG, ok, put_array, send  # noqa: E402

BINARY = sys.argv[1]
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
RANKS = int(sys.argv[3]) if len(sys.argv) > 3 else 1
N = int(sys.argv[4]) if len(sys.argv) > 4 else 2_000_000


def timed(d, cmd, args):
    t = time.perf_counter()
    result = ok(send(d, cmd, args, timeout_ms=LONG))
    return time.perf_counter() - t, result["object"]["name"]


def main():
    d = ab_daemon(BINARY, RANKS)
    try:
        a = put_array(d, np.arange(N, dtype=np.int64))
        _, big = timed(d, "bigint_binop", {"op": "+", "a": a, "value": str(2**200)})
        _, wrap = timed(d, "bigint_binop", {"op": "+", "a": a, "value": str(2**100)})
        ok(send(d, "limitbits", {"array": wrap, "max_bits": 128}))
        cmds = {
            "int64 a + 1 (reference)": ("binop", {"op": "+", "a": a, "value": 1}),
            "a + 2**200 (4 limbs)": ("bigint_binop", {"op": "+", "a": a, "value": str(2**200)}),
            "big * a (5 limbs)": ("bigint_binop", {"op": "*", "a": big, "b": a}),
            "big < 2**200 + n/2 (bool)": ("bigint_binop", {"op": "<", "a": big,
                                                           "value": str(2**200 + N // 2)}),
            "big128 - a (2 limbs, wraps)": ("bigint_binop", {"op": "-", "a": wrap, "b": a}),
        }
        times = {k: [] for k in cmds}
        for _ in range(RUNS):
            for what, (cmd, args) in cmds.items():
                dt, made = timed(d, cmd, args)
                times[what].append(dt)
                ok(send(d, "delete", {"names": [made]}))
    finally:
        d.cleanup()
    ref = times["int64 a + 1 (reference)"]
    print(f"ranks {RANKS}, {RUNS} runs, {N} rows: seconds (median, min, max); speed against "
          "the reference (its time over this, per run: median, min, max)")
    for what, ts in times.items():
        ratios = [r / t for r, t in zip(ref, ts)]
        print(f"{what:30} {statistics.median(ts):8.4f} {min(ts):8.4f} {max(ts):8.4f}   "
              f"x{statistics.median(ratios):.3f} ({min(ratios):.3f} .. {max(ratios):.3f})")


main()
