"""What users cost a request: round trips of `ping` (answered on the router thread) and
`info` (a handler thread's) on two daemon builds, A (the reference) and B, in the same run,
runs alternating between them; B also with an old-style token file and with a token file
of users (each token's user, groups and quota.requests). Per request, microseconds (median,
min and max over the runs), and each figure against A without tokens (A's median over the
other's, and the extremes):

    /usr/bin/python3 bench/users_ab.py A/server/h5arkd B/server/h5arkd [runs] [requests]
"""
import os
import pathlib
import statistics
import sys
import tempfile
import time

import msgpack
import zmq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from daemons import Daemon  # noqa: E402

A, B = sys.argv[1], sys.argv[2]
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
N = int(sys.argv[4]) if len(sys.argv) > 4 else 5000
TMP = pathlib.Path(tempfile.mkdtemp(prefix="h5ark-users-ab-"))
FILES = {
    "old-style tokens": "bench-tok write\nreader read\n",
    "users": "bench-tok write user=bench groups=g1,g2 quota.requests=64 quota.memory=1G\n"
             + "".join(f"tok{i} read user=u{i} groups=g{i % 5}\n" for i in range(50)),
}


def start(binary, tokens):
    os.environ["H5ARKD"] = binary
    path = None
    if tokens:
        path = TMP / f"tokens-{len(tokens)}"
        path.write_text(tokens)
    return Daemon(locales=2, token="bench-tok" if tokens else None, token_file=path)


def per_request(d, cmd):
    """Seconds per request of N back-to-back `cmd` requests on one socket."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(d.endpoint)
    head = msgpack.packb({"v": 1, "id": 1, "cmd": cmd, "token": d.token}, use_bin_type=True)
    try:
        for _ in range(200):  # warm up
            sock.send(head)
            sock.recv_multipart()
        t = time.perf_counter()
        for _ in range(N):
            sock.send(head)
            reply = sock.recv_multipart()
        elapsed = time.perf_counter() - t
        assert msgpack.unpackb(reply[0], raw=False)["ok"], reply
        return elapsed / N
    finally:
        sock.close()


CASES = [("A", A, None), ("B", B, None)] + [(f"B, {k}", B, v) for k, v in FILES.items()]
times = {(case, cmd): [] for case, _, _ in CASES for cmd in ("ping", "info")}
for run in range(RUNS):
    for case, binary, tokens in CASES:
        d = start(binary, tokens)
        try:
            for cmd in ("ping", "info"):
                times[(case, cmd)].append(per_request(d, cmd))
        finally:
            d.cleanup()

print(f"{N} requests a run, {RUNS} runs; microseconds per request, median (min, max); "
      "speed against A without tokens: A's median over this median (extremes)")
for cmd in ("ping", "info"):
    ref = statistics.median(times[("A", cmd)])
    for case, _, _ in CASES:
        t = times[(case, cmd)]
        med = statistics.median(t)
        print(f"{cmd:5} {case:22} {med * 1e6:8.1f} us ({min(t) * 1e6:.1f}, {max(t) * 1e6:.1f})"
              f"   x{ref / med:.3f} ({ref / max(t):.3f}, {ref / min(t):.3f})")
