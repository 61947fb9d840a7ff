"""Live fuzz of awkward input against a running daemon: mutated awkward0 schemas and blobs
(readhdf of awkward0 groups), mutated awkward 2 forms, lengths and buffers (put, and
readhdf of awkward 2 groups). Every reply is an error with a code other than `internal`,
or an object whose buffers read back as the form says; the daemon stays up and serves."""
import copy
import json
import lzma
import os
import random
import sys
import zlib

import h5py
import numpy as np

from conftest import SHARED_FIXTURES
from test_awkward import AK0_BLOBS, AK0_CASES, CASES, AkConn, ak0_schema, to_list

# a few seconds on the release build; fewer when the daemon runs under valgrind
ROUNDS = int(os.environ.get("H5ARK_FUZZ_AWKWARD",
                            "40" if os.environ.get("H5ARKD_WRAPPER") else "400"))
AK0 = SHARED_FIXTURES.parent / "awkward0"
sys.setrecursionlimit(20000)  # the deeply nested schemas are walked here too

WEIRD = [None, True, False, 0, -1, 1, 3, 2**31, 2**63 - 1, -2**63, 2**64, 1e308, -0.5, "",
         "x", "int64", ">c16", "record", [], {}, [0], [[["a", "int8"]], [2]], {"ref": 1},
         {"ref": -1}, {"ref": 10**12}, {"json": 2**62}, {"read": "nope"}, {"python": "gA=="},
         {"call": ["awkward0", "ChunkedArray"], "args": [{"list": []}]},
         {"call": ["awkward0", "Table", "frompairs"], "args": [{"pairs": []}]}]
CALLS = [["awkward0", n] for n in ("JaggedArray", "Table", "MaskedArray", "BitMaskedArray",
                                   "IndexedArray", "IndexedMaskedArray", "UnionArray",
                                   "ChunkedArray", "StringArray", "ObjectArray")] + \
    [["awkward0", "JaggedArray", "fromcounts"], ["awkward0", "JaggedArray", "fromoffsets"],
     ["awkward0", "UnionArray", "fromtags"], ["awkward0", "Table", "frompairs"],
     ["awkward0", "numpy", "frombuffer"], ["zlib", "decompress"], ["lzma", "decompress"],
     ["lz4.block", "decompress"]]


def nodes(v, out):
    """Every dict and list inside v, v included."""
    if isinstance(v, (dict, list)):
        out.append(v)
        for x in (v.values() if isinstance(v, dict) else v):
            nodes(x, out)
    return out


def mutate_json(rng, tree):
    tree = copy.deepcopy(tree)
    nested = False
    for _ in range(rng.randrange(1, 4)):
        target = rng.choice(nodes(tree, []))
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        op = rng.random()
        if (not keys or op < 0.1) and not nested:  # deep nesting around a node
            nested = True
            inner = copy.deepcopy(target)
            for _ in range(rng.choice([5, 100, 300])):
                inner = {"call": ["awkward0", "Table", "frompairs"], "args": [{"pairs": [["x", inner]]}]}
            if isinstance(target, dict):
                target.clear()
                target.update(inner)
            continue
        if not keys:
            continue
        k = rng.choice(keys)
        if op < 0.3:
            del target[k]
        elif op < 0.55:
            target[k] = copy.deepcopy(rng.choice(WEIRD))
        elif op < 0.65 and isinstance(target, dict) and "call" in target:
            target["call"] = list(rng.choice(CALLS))
        elif op < 0.8:  # a subtree from elsewhere (types that do not fit, shared ids)
            target[k] = copy.deepcopy(rng.choice(nodes(tree, [])))
        elif isinstance(target[k], int) and not isinstance(target[k], bool):
            target[k] = rng.choice([target[k] + 1, target[k] - 1, -target[k], target[k] * 2**40])
        else:
            target[k] = {"ref": rng.randrange(-2, 20)}
    return tree


def mutate_bytes(rng, b):
    op = rng.random()
    b = bytearray(b)
    if op < 0.3 and b:
        return bytes(b[:rng.randrange(len(b))])
    if op < 0.6 and b:
        for _ in range(rng.randrange(1, 6)):
            j = rng.randrange(len(b))
            b[j] ^= 1 << rng.randrange(8)
        return bytes(b)
    if op < 0.75:
        return bytes(b) + rng.randbytes(rng.randrange(1, 40))
    if op < 0.9:  # a valid stream of the wrong size, or of garbage
        data = rng.randbytes(rng.randrange(0, 200))
        return rng.choice([zlib.compress(data), lzma.compress(data), zlib.compress(bytes(b))[:-3]])
    return b""


def ak0_seeds():
    """(schema, blobs) pairs: the suite's readable awkward0 cases and, when present, the
    fixture's groups as awkward0 wrote them."""
    raw = np.arange(3, dtype="<i8").tobytes()
    blobs = {"1": raw, "xz": lzma.compress(raw), **AK0_BLOBS}
    seeds = [(ak0_schema(node), blobs) for node, code, _ in AK0_CASES.values()
             if not isinstance(code, str)]
    if AK0.is_dir():
        with h5py.File(AK0 / "awkward0.hdf5") as h:
            def visit(name, g):
                if isinstance(g, h5py.Group) and "schema.json" in g:
                    schema = json.loads(g["schema.json"][()].tobytes())
                    seeds.append((schema, {k: g[k][()].tobytes() for k in g if k != "schema.json"}))
            h.visititems(visit)
    return seeds


def check_reply(conn, hdr, codes):
    """An error that is not internal, or each object made reads back as its form says."""
    if not hdr["ok"]:
        err = hdr["error"]
        assert err["code"] != "internal" and err["message"], err
        codes[err["code"]] = codes.get(err["code"], 0) + 1
        return
    objs = hdr["result"].get("objects") or {"put": hdr["result"]["object"]}
    for desc in objs.values():
        form, length, bufs = conn.get_ak(desc["name"])
        assert length == desc["length"]
        assert len(to_list(form, length, bufs)) == length
    codes["ok"] = codes.get("ok", 0) + 1


def test_fuzz_awkward0_readhdf(start_daemon):
    d = start_daemon(locales=3, max_memory="256M")
    conn = AkConn(d)
    rng = random.Random(20261125)
    seeds = ak0_seeds()
    with h5py.File(conn.dir / "ak0fuzz.h5", "w") as h:
        for i in range(ROUNDS):
            schema, blobs = rng.choice(seeds)
            blobs = dict(blobs)
            if rng.random() < 0.6:
                schema = mutate_json(rng, schema)
            if blobs and rng.random() < 0.5:
                k = rng.choice(list(blobs))
                blobs[k] = mutate_bytes(rng, blobs[k])
            text = json.dumps(schema).encode()
            if rng.random() < 0.05:  # not JSON at all
                text = text[:rng.randrange(len(text))]
            g = h.create_group(f"m{i}")
            g["schema.json"] = np.frombuffer(text, "u1")
            for k, v in blobs.items():
                g[k] = np.frombuffer(v, "u1")
    codes = {}
    for i in range(ROUNDS):
        hdr, _ = conn.raw("readhdf", paths=["ak0fuzz.h5"], datasets=[f"m{i}"])
        check_reply(conn, hdr, codes)
        conn.raw("clear")
    hdr, _ = conn.raw("lshdf", path="ak0fuzz.h5")  # the listing interprets them too
    assert hdr["ok"] and len(hdr["result"]["entries"]) == ROUNDS, hdr
    assert d.alive()
    # the mutations reach both outcomes
    assert codes.get("ok") and sum(codes.values()) - codes["ok"] > ROUNDS // 4, codes
    print(f"{ROUNDS} mutated awkward0 groups: {codes}")


def mutate_ak2(rng, form, length, bufs):
    bufs = {k: np.ascontiguousarray(v).tobytes() for k, v in bufs.items()}
    op = rng.random()
    if op < 0.4:
        form = mutate_json(rng, form)
    elif op < 0.55:
        length = rng.choice([length + 1, length - 1, 0, -1, 2**40, 2**64 - 1, length * 3])
    if bufs and rng.random() < 0.6:
        k = rng.choice(list(bufs))
        r = rng.random()
        if r < 0.7:
            bufs[k] = mutate_bytes(rng, bufs[k])
        elif r < 0.85:
            del bufs[k]
        else:
            bufs[k + "x"] = bufs.pop(k)
    return form, length, bufs


def test_fuzz_awkward2_put_and_readhdf(start_daemon):
    d = start_daemon(locales=3, max_memory="256M")
    conn = AkConn(d)
    rng = random.Random(25112026)
    names = sorted(CASES)
    codes = {}
    groups = []
    for i in range(ROUNDS):
        case = rng.choice(names)
        form, length, bufs = mutate_ak2(rng, *CASES[case][:3])
        if i % 4 == 0:  # also as an awkward 2 group, each buffer typed as the case has it
            types = {k: np.asarray(v).dtype for k, v in CASES[case][2].items()}
            groups.append((form, length, bufs, types))
        if not isinstance(length, int) or not 0 <= length < 2**64:
            length = 0
        hdr = conn.put_ak(json.dumps(form), length,
                          {k: np.frombuffer(v, "u1") for k, v in bufs.items()})
        check_reply(conn, hdr, codes)
        conn.raw("clear")
    with h5py.File(conn.dir / "ak2fuzz.h5", "w") as h:
        for i, (form, length, bufs, types) in enumerate(groups):
            g = h.create_group(f"g{i}")
            g.attrs["form"] = json.dumps(form)
            g.attrs["length"] = length if isinstance(length, int) and 0 <= length < 2**63 else -1
            for k, v in bufs.items():
                dt = types.get(k, np.dtype("u1"))
                g[k] = np.frombuffer(v[:len(v) // dt.itemsize * dt.itemsize], dt)
    for i in range(len(groups)):
        hdr, _ = conn.raw("readhdf", paths=["ak2fuzz.h5"], datasets=[f"g{i}"])
        check_reply(conn, hdr, codes)
        conn.raw("clear")
    assert d.alive()
    assert codes.get("ok") and sum(codes.values()) - codes["ok"] > ROUNDS // 4, codes
    print(f"{ROUNDS} mutated puts, {len(groups)} awkward 2 groups: {codes}")
