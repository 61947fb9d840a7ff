"""What files' permissions cost (SERVICE.md §3): the same requests on two daemons of one
build over the same files, one without users (the reference) and one whose token file names
users, so that every path is judged against its folder's ACL. Prints, for each request,
the median time with users over the median without, and min and max of the per-run ratios.

    bench/acl_paths.py [--runs N] [--files N]

The requests: a glob over every file of two homes (every match's folder judged, half of
them skipped), a readhdf of one small file (a request's fixed cost), and an lshdf of a
file (resolving one path).
"""
import argparse
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
import numpy as np  # noqa: E402
from daemons import Daemon  # noqa: E402
from wire import request  # noqa: E402

TOKENS = "tok-alice write user=alice groups=physics\ntok-bob write user=bob\n"


def call(d, token, cmd, **args):
    hdr, _ = request(d.endpoint, {"v": 1, "id": 7, "cmd": cmd, "args": args, "token": token})
    assert hdr["ok"], hdr
    return hdr["result"]


def lay_out(root, files):
    """files small HDF5 files in home/alice and home/bob (half each), and one more."""
    import h5py
    for who in ["alice", "bob"]:
        (root / "home" / who).mkdir(parents=True, exist_ok=True)
    for i in range(files):
        with h5py.File(root / "home" / ("alice", "bob")[i % 2] / f"f{i:05d}.h5", "w") as f:
            f["x"] = np.arange(4)


def timed(fn, reps):
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--files", type=int, default=2000)
    a = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="h5ark-acl-bench-"))
    data = tmp / "data"
    lay_out(data, a.files)
    (tmp / "tokens").write_text(TOKENS)
    (tmp / "plain").write_text("tok-alice\n")
    on = Daemon(locales=2, token="tok-alice", token_file=tmp / "tokens", data_dir=data)
    off = Daemon(locales=2, token="tok-alice", token_file=tmp / "plain", data_dir=data,
                 endpoint=f"ipc://{tmp}/off.sock")
    try:
        n = len(call(on, "tok-alice", "glob", paths=["/home/*/*.h5"])["files"])
        assert n == (a.files + 1) // 2, n
        assert len(call(off, "tok-alice", "glob", paths=["home/*/*.h5"])["files"]) == a.files
        cases = [
            ("glob of two homes", 5,
             lambda: call(on, "tok-alice", "glob", paths=["/home/*/*.h5"]),
             lambda: call(off, "tok-alice", "glob", paths=["home/*/*.h5"])),
            ("readhdf of one file", 50,
             lambda: call(on, "tok-alice", "readhdf", paths=["f00000.h5"]),
             lambda: call(off, "tok-alice", "readhdf", paths=["home/alice/f00000.h5"])),
            ("lshdf of one file", 50,
             lambda: call(on, "tok-alice", "lshdf", path="f00000.h5"),
             lambda: call(off, "tok-alice", "lshdf", path="home/alice/f00000.h5")),
        ]
        print(f"{'request':<22} {'users (ms)':>11} {'none (ms)':>10} "
              f"{'ratio median':>13} {'min':>6} {'max':>6}")
        for name, reps, mine, ref in cases:
            ts, rs = [], []
            for _ in range(a.runs):  # alternating, so that a busy moment hits both
                ts.append(timed(mine, reps))
                rs.append(timed(ref, reps))
            ratios = [t / r for t, r in zip(ts, rs)]
            print(f"{name:<22} {statistics.median(ts) * 1e3:>11.3f} "
                  f"{statistics.median(rs) * 1e3:>10.3f} {statistics.median(ratios):>13.2f} "
                  f"{min(ratios):>6.2f} {max(ratios):>6.2f}")
    finally:
        on.cleanup()
        off.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
