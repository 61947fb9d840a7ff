"""groupby on 10M int64 keys with 1 locale and with 2, in the same run: median of 5
(min, max) and the speed-up. Run from the repository root after scripts/setup:

    /usr/bin/python3 bench/groupby_scaling.py [--size N] [--runs R]
"""
import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from conftest import Daemon, request  # noqa: E402


def measure(locales, size, runs, fill):
    d = Daemon(locales=locales, max_memory=8 << 30)
    try:
        def call(cmd, **args):
            hdr, _ = request(d.endpoint, {"v": 1, "id": 1, "cmd": cmd, "args": args},
                             timeout_ms=600000)
            assert hdr["ok"], hdr
            return hdr["result"]

        keys = call("create", dtype="int64", size=size, seed=1, **fill)["object"]["name"]
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            g = call("groupby", keys=[keys])["object"]
            times.append(time.perf_counter() - t)
            call("delete", names=[g["name"]])
        return times, g["ngroups"]
    finally:
        d.stop()
        d.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    print(f"| keys ({a.size:,} int64) | 1 locale (s) | 2 locales (s) | speed-up |")
    print("|---|---|---|---|")
    for label, fill in [("random, full range", dict(fill="randint", low=-2**62, high=2**62)),
                        ("random in [0, 1000)", dict(fill="randint", low=0, high=1000))]:
        one, ng = measure(1, a.size, a.runs, fill)
        two, _ = measure(2, a.size, a.runs, fill)
        ratios = [x / y for x, y in zip(sorted(one), sorted(two))]
        print(f"| {label} ({ng:,} groups) | {statistics.median(one):.3f} | "
              f"{statistics.median(two):.3f} | {statistics.median(one) / statistics.median(two):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
