"""Two daemon builds, A (the reference) and B, timed in the same run, their runs alternating:
what the *_ab.py benchmarks share."""
import os
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from daemons import Daemon  # noqa: E402


def ab_args():
    """A's and B's h5arkd, runs (5) and ranks (1) from the command line: A B [runs] [ranks]."""
    return (sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 5,
            int(sys.argv[4]) if len(sys.argv) > 4 else 1)


def ab_daemon(binary, ranks, **kwargs):
    """A Daemon(**kwargs) of `binary`, 4 locales in all: one process, or `ranks` under
    mpirun."""
    os.environ["H5ARKD"] = binary
    return Daemon(ranks=ranks if ranks > 1 else None, locales=4 // ranks, **kwargs)


def alternate(daemons, once, runs, title):
    """daemons: {"A": (daemon, client, commands), "B": ...}, commands mapping a label to the
    arguments of once(client, *args), which returns seconds. Runs each command `runs` times
    on A then B in turn, stops both daemons, and prints per command A's and B's seconds
    (median, min, max) and B's speed against A (A's median over B's, and the extremes)."""
    times = {k: {w: [] for w in daemons["A"][2]} for k in daemons}
    try:
        for _ in range(runs):
            for what in daemons["A"][2]:
                for k in ("A", "B"):
                    _, c, cmds = daemons[k]
                    times[k][what].append(once(c, *cmds[what]))
    finally:
        for d, c, _ in daemons.values():
            c.close()
            d.cleanup()
    print(title)
    for what in times["A"]:
        a, b = times["A"][what], times["B"][what]
        ref = statistics.median(a)
        print(f"{what:24s} A median {ref:.4f} s (min {min(a):.4f} max {max(a):.4f})  "
              f"B median {statistics.median(b):.4f} s (min {min(b):.4f} max {max(b):.4f})  "
              f"B speed {ref / statistics.median(b):.2f}x (min {ref / max(b):.2f}, "
              f"max {ref / min(b):.2f})", flush=True)
