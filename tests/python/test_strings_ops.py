"""Strings compute as native commands (protocol/PROTOCOL.md, "Strings compute"): compare,
split and concatenate of strings on a real daemon, at one rank and at two under mpirun,
every value checked against Python's own string operations."""
import os
import random
import re
import subprocess

import pytest

CLIENT_TEST = os.environ.get("H5ARK_CLIENT_TEST", "build/client/c/test_h5ark_client")
rng = random.Random(11)
WORDS = ["", "a", "b", "ab", "a,b", ",", ",,", "x,y,z", "héllo,wörld", "no comma", "a,,b,"]


def sample(n):
    return [",".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 4))) for _ in range(n)]


def test_compare(ranked_conn):
    a = sample(501)
    b = [s if rng.random() < 0.5 else rng.choice(WORDS) for s in a]
    na, nb = ranked_conn.put_strings(a), ranked_conn.put_strings(b)
    for op, want in (("==", [x == y for x, y in zip(a, b)]),
                     ("!=", [x != y for x, y in zip(a, b)])):
        hdr, _ = ranked_conn.ok("compare", strings=na, other=nb, op=op)
        desc = hdr["result"]["object"]
        assert (desc["objtype"], desc["dtype"], desc["size"]) == ("pdarray", "bool", len(a))
        assert list(ranked_conn.get(desc["name"])) == want, op
    for text in ("a,b", "", "héllo,wörld"):
        hdr, _ = ranked_conn.ok("compare", strings=na, text=text, op="==")
        assert list(ranked_conn.get(hdr["result"]["object"]["name"])) == [x == text for x in a]


def test_compare_refuses(ranked_conn):
    na, nb = ranked_conn.put_strings(["a", "b"]), ranked_conn.put_strings(["a"])
    assert ranked_conn.fail("compare", strings=na, other=nb, op="==")["code"] == "bad_request"
    assert ranked_conn.fail("compare", strings=na, text="a", op="<")["code"] == "bad_request"
    assert ranked_conn.fail("compare", strings=na, op="==")["code"] == "bad_request"
    assert ranked_conn.fail("compare", strings=na, other=na, text="a", op="==")["code"] == "bad_request"
    nums = ranked_conn.put(__import__("numpy").arange(2))
    assert ranked_conn.fail("compare", strings=nums, text="a", op="==")["code"] == "type_error"
    assert ranked_conn.fail("compare", strings="nope", text="a", op="==")["code"] == "not_found"


@pytest.mark.parametrize("max_", [0, 1, 2])
def test_split(ranked_conn, max_):
    a = sample(777)
    na = ranked_conn.put_strings(a)
    hdr, _ = ranked_conn.ok("split", strings=na, pattern=",", max=max_, segments=True)
    res = hdr["result"]
    want = [p for s in a for p in (s.split(",", max_) if max_ else s.split(","))]
    assert res["object"]["objtype"] == "strings"
    assert ranked_conn.get_strings(res["object"]["name"]) == want
    firsts, at = [], 0
    for s in a:
        firsts.append(at)
        at += len(s.split(",", max_) if max_ else s.split(","))
    assert list(ranked_conn.get(res["segments"]["name"])) == firsts
    hdr, _ = ranked_conn.ok("split", strings=na, pattern=",,")
    assert "segments" not in hdr["result"]
    assert ranked_conn.get_strings(hdr["result"]["object"]["name"]) == [
        p for s in a for p in s.split(",,")]


def test_split_refuses(ranked_conn):
    na = ranked_conn.put_strings(["a,b"])
    assert ranked_conn.fail("split", strings=na, pattern="")["code"] == "bad_request"
    assert ranked_conn.fail("split", strings="nope", pattern=",")["code"] == "not_found"


def test_concatenate_strings(ranked_conn):
    parts = [sample(n) for n in (5, 0, 300, 1)]
    names = [ranked_conn.put_strings(p) for p in parts]
    hdr, _ = ranked_conn.ok("concatenate", names=names)
    desc = hdr["result"]["object"]
    assert (desc["objtype"], desc["size"]) == ("strings", sum(map(len, parts)))
    assert ranked_conn.get_strings(desc["name"]) == [s for p in parts for s in p]
    nums = ranked_conn.put(__import__("numpy").arange(3))
    assert ranked_conn.fail("concatenate", names=[names[0], nums])["code"] == "type_error"


def xorshift_uniform(n, seed, lo, hi, chars):
    """The daemon's stream (xorshift64, protocol/PROTOCOL.md) drawn in Python: uniform
    lengths in [lo, hi), characters of `chars`."""
    m64 = (1 << 64) - 1
    state = (seed * 0x9e3779b97f4a7c15 + 1) & m64 or 1

    def nxt():
        nonlocal state
        state ^= (state << 13) & m64
        state ^= state >> 7
        state ^= (state << 17) & m64
        return state

    out = []
    for _ in range(n):
        length = int(lo + (nxt() >> 11) / 9007199254740992.0 * (hi - lo))
        out.append("".join(chars[nxt() % len(chars)] for _ in range(length)))
    return out


def test_random_strings(ranked_conn):
    hdr, _ = ranked_conn.ok("random_strings", size=403, dist="uniform", chars="lowercase",
                     arg1=0, arg2=9, seed=5)
    got = ranked_conn.get_strings(hdr["result"]["object"]["name"])
    assert got == xorshift_uniform(403, 5, 0, 9, "abcdefghijklmnopqrstuvwxyz")
    hdr, _ = ranked_conn.ok("random_strings", size=50, dist="lognormal", chars="numeric",
                     arg1=1.0, arg2=0.5)
    got = ranked_conn.get_strings(hdr["result"]["object"]["name"])
    assert len(got) == 50 and all(s.isdigit() or s == "" for s in got)
    for bad in ({"chars": "greek"}, {"dist": "normal"}, {"arg1": 5, "arg2": 2}):
        args = dict(size=3, dist="uniform", chars="numeric", arg1=0, arg2=4, **{})
        args.update(bad)
        assert ranked_conn.fail("random_strings", **args)["code"] == "bad_request"


def test_python_client(ranked_conn):
    import h5ark
    c = h5ark.connect(ranked_conn.daemon.endpoint, timeout=60)
    a, b = sample(300), sample(300)
    sa, sb = c.array(a), c.array(b)
    assert list(c.compare(sa, sb).to_ndarray()) == [x == y for x, y in zip(a, b)]
    assert list(c.compare(sa, "a,b", op="!=").to_ndarray()) == [x != "a,b" for x in a]
    pieces, firsts = c.split(sa, ",", segments=True)
    assert pieces.to_list() == [p for s in a for p in s.split(",")]
    assert list(firsts.to_ndarray()) == list(
        __import__("itertools").accumulate([0] + [len(s.split(",")) for s in a[:-1]]))
    assert c.split(sa, ",", max=1).to_list() == [p for s in a for p in s.split(",", 1)]
    assert c.concatenate([sa, sb]).to_list() == a + b
    r = c.random_strings(40, chars="uppercase", arg1=1, arg2=4, seed=3)
    assert r.to_list() == xorshift_uniform(40, 3, 1, 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    with pytest.raises(h5ark.BadRequestError):
        c.compare(sa, sb, op="<")


def test_c_client(ranked_conn):
    if not os.access(CLIENT_TEST, os.X_OK):
        pytest.fail(f"test_h5ark_client not found at {CLIENT_TEST}: build or set H5ARK_CLIENT_TEST")
    proc = subprocess.run([CLIENT_TEST, ranked_conn.daemon.endpoint, "ops"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"[1-9]\d* checks, 0 failed", proc.stdout), proc.stdout
