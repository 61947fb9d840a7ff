"""concatenateStr and segmentedSplit of 1M strings through the Arkouda endpoint, the daemon as
R = 1, 2 and 3 ranks on this host with 6 locales in all at every R (6 x 1, 3 x 2, 2 x 3: as the
ranks group of bench.py), seconds per command (median, min and max of the runs) and, at R > 1,
the speed against R = 1 measured in the same run:

    H5ARKD=build/server/h5arkd /usr/bin/python3 bench/ranks_strings.py [runs, default 5]

concatenateStr joins 4 parts of 250k strings into 1M; segmentedSplit cuts 1M strings of
about 18 bytes at "," into 3M pieces and each string's first piece (return_segs). At R > 1
neither gathers the strings on rank 0 (docs/DESIGN.md, "The Arkouda endpoint at several
ranks")."""
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from daemons import Daemon  # noqa: E402
from test_arkouda_wire import Ak, created_name, put_strings  # noqa: E402

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
N = 1_000_000
LOCALES = 6
WORDS = [f"k{i % 1000},{i},v{i % 7}" for i in range(N)]


def measure(c):
    whole = put_strings(c, WORDS)
    parts = [put_strings(c, WORDS[k * N // 4:(k + 1) * N // 4]) for k in range(4)]
    out = {}
    for what, cmd, params in (
            ("concatenateStr 4 x 250k -> 1M", "concatenateStr",
             {"objType": "Strings", "names": parts, "mode": "append"}),
            ("segmentedSplit 1M -> 3M + first pieces", "segmentedSplit",
             {"parent_name": whole, "objtype": "Matcher", "max": 0, "return_segs": True,
              "pattern": ","})):
        times = []
        for _ in range(RUNS):
            t = time.perf_counter()
            msg = c.ok(cmd, params)
            times.append(time.perf_counter() - t)
            for made in msg.split("+"):
                if not made.startswith("created bytes"):
                    c.ok("delete", {"name": created_name(made)})
        out[what] = times
    return out


base = {}  # R = 1's times, the reference each R > 1 is a ratio against
for ranks in (1, 2, 3):
    d = Daemon(ranks=ranks if ranks > 1 else None, locales=LOCALES // ranks, arkouda=True)
    c = Ak(d.ak_endpoint)
    try:
        for what, times in measure(c).items():
            line = (f"R={ranks} x {LOCALES // ranks} loc  {what:40s}  median "
                    f"{statistics.median(times):.3f} s  min {min(times):.3f}  "
                    f"max {max(times):.3f}  ({RUNS} runs)")
            if ranks == 1:
                base[what] = times
            else:  # speed against R = 1: its median time over this R's, and the extremes
                ref = statistics.median(base[what])
                line += (f"  {ref / statistics.median(times):.2f}x R=1 "
                         f"(min {ref / max(times):.2f}, max {ref / min(times):.2f})")
            print(line, flush=True)
    finally:
        c.close()
        d.cleanup()
