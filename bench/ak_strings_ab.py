"""The Arkouda endpoint's Strings commands on two daemon builds, A (the reference) and B,
in the same run, runs alternating between them: seconds per command (median, min and max)
and B's speed against A (A's median over B's, and the extremes):

    /usr/bin/python3 bench/ak_strings_ab.py A/server/h5arkd B/server/h5arkd [runs] [ranks]

Commands: concatenateStr (4 x 100k -> 400k), segmentedSplit (400k -> 1.2M with
return_segs), segmentedBinopvv and segmentedBinopvs (==, 400k), segmentedIndex
(sliceIndex of every other string, pdarrayIndex of 100k positions), randomStrings (400k,
seeded); and the bigint commands arange<bigint,1> (400k of two limbs),
bigint_to_uint_list and big_int_creation of it. ranks: 1 (default) or more (mpirun, locales 4 / ranks each)."""
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from ab import ab_args, ab_daemon, alternate  # noqa: E402
from test_arkouda_wire import Ak, created_name, put_strings  # noqa: E402

A, B, RUNS, RANKS = ab_args()
N = 400_000
WORDS = [f"k{i % 1000},{i},v{i % 7}" for i in range(N)]
OTHER = [w if i % 3 else w + "x" for i, w in enumerate(WORDS)]


def start(binary):
    d = ab_daemon(binary, RANKS, arkouda=True)
    c = Ak(d.ak_endpoint)
    whole, other = put_strings(c, WORDS), put_strings(c, OTHER)
    parts = [put_strings(c, WORDS[k * N // 4:(k + 1) * N // 4]) for k in range(4)]
    pos = created_name(c.ok("randint<int64,1>", {"shape": "100000", "low": "0",
                                                 "high": str(N), "seed": "3"}))
    big = created_name(c.ok("arange<bigint,1>", {"start": str(2**64), "stop": str(2**64 + N),
                                                  "step": "1"}))
    lo, hi = (created_name(m) for m in
              __import__("json").loads(c.ok("bigint_to_uint_list<bigint,1>", {"array": big})))
    cmds = {
        "concatenateStr": ("concatenateStr", {"objType": "Strings", "names": parts,
                                              "mode": "append"}),
        "segmentedSplit": ("segmentedSplit", {"parent_name": whole, "objtype": "Matcher",
                                              "max": 0, "return_segs": True, "pattern": ","}),
        "segmentedBinopvv ==": ("segmentedBinopvv", {"op": "==", "objType": "Strings",
                                                     "obj": whole, "otherType": "Strings",
                                                     "other": other, "left": True,
                                                     "delim": ""}),
        "segmentedBinopvs ==": ("segmentedBinopvs", {"op": "==", "objType": "Strings",
                                                     "obj": whole, "otherType": "str",
                                                     "other": "k5,5,v5"}),
        "segmentedIndex slice": ("segmentedIndex", {"subcmd": "sliceIndex", "objType": "Strings",
                                                    "dtype": "str", "obj": whole,
                                                    "key": f"[0, {N}, 2]"}),
        "segmentedIndex pdarray": ("segmentedIndex", {"subcmd": "pdarrayIndex",
                                                      "objType": "Strings", "dtype": "str",
                                                      "obj": whole, "key": pos}),
        "randomStrings": ("randomStrings", {"size": N, "dist": "uniform", "chars": "lowercase",
                                            "arg1": 1, "arg2": 20, "seed": 5}),
        "arange<bigint,1>": ("arange<bigint,1>", {"start": str(2**64), "stop": str(2**64 + N),
                                                  "step": "1"}),
        "bigint_to_uint_list": ("bigint_to_uint_list<bigint,1>", {"array": big}),
        "big_int_creation": ("big_int_creation<bigint,1>", {"num_arrays": 2, "shape": str(N),
                                                            "arrays": [hi, lo],
                                                            "max_bits": -1}),
    }
    return d, c, cmds


def once(c, cmd, params):
    t = time.perf_counter()
    msg = c.ok(cmd, params)
    dt = time.perf_counter() - t
    if msg.startswith("["):  # bigint_to_uint_list: a JSON list of created texts
        msg = "+".join(__import__("json").loads(msg))
    for made in msg.split("+"):
        if made.startswith("created ") and not made.startswith("created bytes"):
            c.ok("delete", {"name": created_name(made)})
    return dt


daemons = {"A": start(A), "B": start(B)}
alternate(daemons, once, RUNS, f"ranks {RANKS}, {RUNS} runs, {N} strings")
