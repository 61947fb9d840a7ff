"""The Arkouda endpoint's uploads, file commands and symbol table on two daemon builds, A (the
reference) and B, in the same run, runs alternating between them: seconds per command
(median, min and max) and B's speed against A (A's median over B's, and the extremes):

    /usr/bin/python3 bench/ak_hdf_ab.py A/server/h5arkd B/server/h5arkd [runs] [ranks]

Commands: arraySegString (400k strings), tohdf of a Categorical given by its parts (codes,
categories, NA_codes, permutation, segments), of a GroupBy by its parts, of a Datetime,
readAllHdf of the GroupBy and of the Categorical (their parts published, then deleted),
info __AllSymbols__ and getconfig. ranks: 1 (default) or more (mpirun, locales 4 / ranks
each)."""
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from ab import ab_args, ab_daemon, alternate  # noqa: E402
from test_arkouda_wire import Ak, created_name, encode_ak_strings, put_strings  # noqa: E402

A, B, RUNS, RANKS = ab_args()
N = 400_000
WORDS = [f"k{i % 1000},{i}" for i in range(N)]
UPLOAD = encode_ak_strings(WORDS)


def made(c, cmd, params):
    return created_name(c.ok(cmd, params))


def start(binary):
    d = ab_daemon(binary, RANKS, arkouda=True)
    c = Ak(d.ak_endpoint)
    key = made(c, "randint<int64,1>", {"shape": str(N), "low": "0", "high": "1000", "seed": "3"})
    uniq = c.ok("unique", {"returnGroupStr": True, "assumeSortedStr": False, "nstr": 1,
                           "keynames": [key], "keytypes": ["pdarray"]})
    perm, segs, uki = (created_name(m) for m in uniq.split("+")[:3])
    cats = put_strings(c, [f"c{i}" for i in range(999)] + ["N/A"])
    na = made(c, "arange<int64,1>", {"start": "999", "stop": "1000", "step": "1"})
    stamps = made(c, "randint<int64,1>", {"shape": str(N), "low": "0", "high": str(10**18),
                                          "seed": "4"})
    path = str(d.data_dir)
    cat = {"objType": "categorical", "codes": key, "categories": cats, "NA_codes": na,
           "permutation": perm, "segments": segs}
    gb = {"objType": "GroupBy", "key_names": [key], "permutation": perm,
          "segments": segs, "unique_key_idx": uki}
    cmds = {
        "arraySegString": ("arraySegString<uint8>", {"size": len(UPLOAD)}, UPLOAD),
        "tohdf Categorical": ("tohdf", dict(cat, dset="cat", filename=f"{path}/cat.h5",
                                             write_mode=0, file_format=1)),
        "tohdf GroupBy": ("tohdf", dict(gb, dset="gb", filename=f"{path}/gb.h5", write_mode=0,
                                        file_format=1)),
        "tohdf Datetime": ("tohdf", {"objType": "Datetime", "values": stamps, "dset": "t",
                                     "filename": f"{path}/t.h5", "write_mode": 0,
                                     "file_format": 1}),
        "readAllHdf GroupBy": ("readAllHdf", {"dsets": ["gb"],
                                              "filenames": [f"{path}/gb.h5"]}),
        "readAllHdf Categorical": ("readAllHdf", {"dsets": ["cat"],
                                                  "filenames": [f"{path}/cat.h5"]}),
        "info __AllSymbols__": ("info", {"names": "__AllSymbols__"}),
        "getconfig": ("getconfig", {}),
    }
    return d, c, cmds


def names_in(text):
    """The created names anywhere in a reply's text (readAllHdf's nested forms too)."""
    return [w for w in text.replace('"', " ").replace("+", " ").split()
            if w.startswith("id_") and "_" in w[3:]]


def once(c, cmd, params, payload=None):
    before = {s["name"] for s in json.loads(c.ok("info", {"names": "__AllSymbols__"}))}
    t = time.perf_counter()
    msg = c.ok(cmd, params, payload=payload)
    dt = time.perf_counter() - t
    for name in set(names_in(msg)) - before:
        c.ok("delete", {"name": name})
    return dt


daemons = {"A": start(A), "B": start(B)}
for d, c, cmds in daemons.values():  # the files the reads read
    for what in ("tohdf Categorical", "tohdf GroupBy"):
        once(c, *cmds[what])
alternate(daemons, once, RUNS, f"ranks {RANKS}, {RUNS} runs, {N} rows")
