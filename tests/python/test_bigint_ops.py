"""bigint compute as native commands (protocol/PROTOCOL.md, "Numeric compute"):
bigint_arange, bigint_limbs and bigint_from_limbs on a real daemon, at one rank and at two
under mpirun, every value checked against Python's own integers."""
import numpy as np
import pytest



def limbs_of(ranked_conn, name):
    """The values of bigint `name` from its limbs (bigint_limbs), and how many limbs."""
    hdr, _ = ranked_conn.ok("bigint_limbs", array=name)
    limbs = [ranked_conn.get(d["name"]) for d in hdr["result"]["limbs"]]
    assert all(d["dtype"] == "uint64" for d in hdr["result"]["limbs"])
    return [sum(int(limb[i]) << (64 * q) for q, limb in enumerate(limbs))
            for i in range(len(limbs[0]))], len(limbs)


@pytest.mark.parametrize("start,stop,step", [(0, 10, 1), (2**64 - 3, 2**64 + 500, 7),
                                             (2**200, 2**200 + 3 * 10**30, 10**28)])
def test_arange(ranked_conn, start, stop, step):
    hdr, _ = ranked_conn.ok("bigint_arange", start=str(start), stop=str(stop), step=str(step))
    desc = hdr["result"]["object"]
    want = list(range(start, stop, step))
    assert (desc["dtype"], desc["size"]) == ("bigint", len(want))
    got, k = limbs_of(ranked_conn, desc["name"])
    assert got == want
    assert k == max(1, (want[-1].bit_length() + 63) // 64)


def test_from_limbs(ranked_conn):
    rng = np.random.default_rng(4)
    hi, mid, lo = (rng.integers(0, 2**63, 301, dtype=np.uint64) for _ in range(3))
    names = [ranked_conn.put(a) for a in (hi, mid, lo)]  # most significant first
    hdr, _ = ranked_conn.ok("bigint_from_limbs", arrays=names)
    want = [(int(h) << 128) | (int(m) << 64) | int(low) for h, m, low in zip(hi, mid, lo)]
    assert limbs_of(ranked_conn, hdr["result"]["object"]["name"])[0] == want
    hdr, _ = ranked_conn.ok("bigint_from_limbs", arrays=names, max_bits=70)
    assert limbs_of(ranked_conn, hdr["result"]["object"]["name"])[0] == [w & ((1 << 70) - 1)
                                                                  for w in want]
    # zero top limbs are left out of bigint_limbs
    zero = ranked_conn.put(np.zeros(301, dtype=np.uint64))
    hdr, _ = ranked_conn.ok("bigint_from_limbs", arrays=[zero, names[2]])
    assert limbs_of(ranked_conn, hdr["result"]["object"]["name"]) == ([int(v) for v in lo], 1)


def test_refusals(ranked_conn):
    u = ranked_conn.put(np.arange(3, dtype=np.uint64))
    i = ranked_conn.put(np.arange(3))
    assert ranked_conn.fail("bigint_arange", start="-1", stop="5")["code"] == "bad_request"
    assert ranked_conn.fail("bigint_arange", start="0", stop="5", step="0")["code"] == "bad_request"
    assert ranked_conn.fail("bigint_arange", start="x", stop="5")["code"] == "bad_request"
    assert ranked_conn.fail("bigint_limbs", array=u)["code"] == "type_error"
    assert ranked_conn.fail("bigint_limbs", array="nope")["code"] == "not_found"
    assert ranked_conn.fail("bigint_from_limbs", arrays=[u, i])["code"] == "type_error"
    assert ranked_conn.fail("bigint_from_limbs", arrays=[])["code"] == "bad_request"
    assert ranked_conn.fail("bigint_from_limbs", arrays=[u], max_bits=-2)["code"] == "bad_request"
    short = ranked_conn.put(np.arange(2, dtype=np.uint64))
    assert ranked_conn.fail("bigint_from_limbs", arrays=[u, short])["code"] == "bad_request"


def test_python_client(ranked_conn):
    import h5ark
    c = h5ark.connect(ranked_conn.daemon.endpoint, timeout=60)
    big = c.bigint_arange(2**70, 2**70 + 50, 3)
    assert big.to_list() == list(range(2**70, 2**70 + 50, 3))
    limbs = c.bigint_limbs(big)
    assert [v.to_list() for v in limbs] == [[v & (2**64 - 1) for v in big.to_list()],
                                            [v >> 64 for v in big.to_list()]]
    again = c.bigint_from_limbs(list(reversed(limbs)), max_bits=66)
    assert again.to_list() == [v & (2**66 - 1) for v in big.to_list()]
    with pytest.raises(h5ark.BadRequestError):
        c.bigint_arange(5, 1, 0)

def big_from(ranked_conn, values, max_bits=-1):
    """A bigint array of Python ints (non-negative) through bigint_from_limbs."""
    k = max(1, max(v.bit_length() for v in values) + 63 >> 6) if values else 1
    limbs = [np.array([(v >> (64 * q)) & (2**64 - 1) for v in values], dtype=np.uint64)
             for q in range(k)]
    names = [ranked_conn.put(limb) for limb in reversed(limbs)]
    hdr, _ = ranked_conn.ok("bigint_from_limbs", arrays=names, max_bits=max_bits)
    return hdr["result"]["object"]["name"]


def py_op(op, x, y):
    """Python's own result of x op y (// and % by 0 give 0, as Arkouda's server)."""
    if op in ("//", "%") and y == 0:
        return 0
    return {"+": x + y, "-": x - y, "*": x * y, "//": x // y if y else 0, "%": x % y if y else 0,
            "&": x & y, "|": x | y, "^": x ^ y, "==": x == y, "!=": x != y, "<": x < y,
            "<=": x <= y, ">": x > y, ">=": x >= y}[op]


BIG = [2**200 + 7, 5, 0, 2**64, 2**64 - 1, 3 * 2**130 + 11] * 50 + [9]
INTS = [3, -4, 0, 2**63 - 1, -(2**63), 17] * 50 + [-1]
OPS = ["+", "-", "*", "//", "%", "&", "|", "^", "==", "!=", "<", "<=", ">", ">="]


@pytest.mark.parametrize("op", OPS)
def test_binop_arrays(ranked_conn, op):
    """bigint op int64 and bigint op bigint, with max_bits 256 (results wrap, negatives
    too), every value as Python computes it."""
    a = big_from(ranked_conn, BIG, max_bits=256)
    i = ranked_conn.put(np.array(INTS, dtype=np.int64))
    b = big_from(ranked_conn, list(reversed(BIG)))
    for other, ys in ((i, INTS), (b, list(reversed(BIG)))):
        hdr, _ = ranked_conn.ok("bigint_binop", op=op, a=a, b=other)
        desc = hdr["result"]["object"]
        want = [py_op(op, x, y) for x, y in zip(BIG, ys)]
        if op in ("==", "!=", "<", "<=", ">", ">="):
            assert desc["dtype"] == "bool"
            assert ranked_conn.get(desc["name"]).tolist() == want
        else:
            assert (desc["dtype"], desc["max_bits"]) == ("bigint", 256)
            assert limbs_of(ranked_conn, desc["name"])[0] == [w % 2**256 for w in want]


def test_binop_scalars(ranked_conn):
    """Arkouda's `ak.arange(n) + 2**200`: an int64 array with a bigint scalar (a decimal
    string) is a bigint; reverse puts the scalar first; unbounded, a negative result is
    refused naming the element, and nothing is published."""
    i = ranked_conn.put(np.arange(301))
    hdr, _ = ranked_conn.ok("bigint_binop", op="+", a=i, value=str(2**200))
    desc = hdr["result"]["object"]
    assert (desc["dtype"], desc["max_bits"], desc["size"]) == ("bigint", -1, 301)
    assert limbs_of(ranked_conn, desc["name"]) == ([n + 2**200 for n in range(301)], 4)
    hdr, _ = ranked_conn.ok("bigint_binop", op="-", a=desc["name"], value=str(2**201),
                            reverse=True)
    got = hdr["result"]["object"]["name"]
    assert limbs_of(ranked_conn, got)[0] == [2**200 - n for n in range(301)]
    before = len(ranked_conn.ok("info")[0]["result"]["objects"])
    err = ranked_conn.fail("bigint_binop", op="-", a=i, value="1")
    assert err["code"] == "type_error" and "element 0" in err["message"]
    assert len(ranked_conn.ok("info")[0]["result"]["objects"]) == before
    hdr, _ = ranked_conn.ok("bigint_binop", op="*", a=got, value=0)
    assert limbs_of(ranked_conn, hdr["result"]["object"]["name"]) == ([0] * 301, 1)
    hdr, _ = ranked_conn.ok("bigint_binop", op="<", a=i, value=str(2**70))
    assert ranked_conn.get(hdr["result"]["object"]["name"]).all()


def test_full_and_assign(ranked_conn):
    """Arkouda's `ak.zeros(n, dtype=bigint)` then `a[i] = v`: bigint_full and bigint_assign,
    the limbs growing with the value; with max_bits a negative value wraps."""
    hdr, _ = ranked_conn.ok("bigint_full", size=300)
    name = hdr["result"]["object"]["name"]
    assert limbs_of(ranked_conn, name) == ([0] * 300, 1)
    want = [0] * 300
    cur = 37
    idx = ranked_conn.put(np.array([0], dtype=np.int64))
    for n in (0, 150, 299, 1, 150):
        cur *= 347**30
        want[n] = cur
        idx = ranked_conn.put(np.array([n], dtype=np.int64))
        hdr, _ = ranked_conn.ok("bigint_assign", array=name, index=idx, value=str(cur))
        assert hdr["result"]["object"]["name"] == name
    assert limbs_of(ranked_conn, name)[0] == want
    mask = ranked_conn.put(np.arange(300) % 7 == 0)
    ranked_conn.ok("bigint_assign", array=name, index=mask, value=3)
    assert limbs_of(ranked_conn, name)[0] == [3 if n % 7 == 0 else w for n, w in enumerate(want)]
    hdr, _ = ranked_conn.ok("bigint_full", size=5, value="-1", max_bits=100)
    assert limbs_of(ranked_conn, hdr["result"]["object"]["name"]) == ([2**100 - 1] * 5, 2)
    # bigint_fill: every element, under the name, cut to the array's max_bits
    hdr, _ = ranked_conn.ok("bigint_fill", array=name, value=str(2**300 + 1))
    assert hdr["result"]["object"]["name"] == name
    assert limbs_of(ranked_conn, name) == ([2**300 + 1] * 300, 5)
    ranked_conn.ok("limitbits", array=name, max_bits=8)
    ranked_conn.ok("bigint_fill", array=name, value=-2)
    assert limbs_of(ranked_conn, name) == ([254] * 300, 1)


def test_compute_refusals(ranked_conn):
    """Bad input is refused with a clear error, and the daemon keeps serving."""
    a = big_from(ranked_conn, [1, 2, 3])
    f = ranked_conn.put(np.arange(3, dtype=np.float64))
    short = ranked_conn.put(np.arange(2))
    i = ranked_conn.put(np.arange(3))
    assert ranked_conn.fail("bigint_binop", op="/", a=a, value=1)["code"] == "bad_request"
    assert ranked_conn.fail("bigint_binop", op="+", a=a, b=f)["code"] == "type_error"
    assert ranked_conn.fail("bigint_binop", op="+", a=a, b=short)["code"] == "bad_request"
    assert ranked_conn.fail("bigint_binop", op="+", a=i, b=i)["code"] == "type_error"
    assert ranked_conn.fail("bigint_binop", op="+", a=a)["code"] == "bad_request"
    assert ranked_conn.fail("bigint_binop", op="+", a=a, value="12x")["code"] == "bad_request"
    assert ranked_conn.fail("bigint_binop", op="+", a=a, value=str(2**5000))["code"] == "bad_request"
    assert ranked_conn.fail("bigint_binop", op="+", a="nope", value=1)["code"] == "not_found"
    assert ranked_conn.fail("bigint_full", size=3, value="-2")["code"] == "type_error"
    assert ranked_conn.fail("bigint_assign", array=i, index=i, value=1)["code"] == "type_error"
    assert ranked_conn.fail("bigint_fill", array=i, value=1)["code"] == "type_error"
    assert ranked_conn.fail("bigint_fill", array=a, value="-1")["code"] == "type_error"
    assert ranked_conn.fail("bigint_assign", array=a, index=f, value=1)["code"] == "type_error"
    three = ranked_conn.put(np.array([3]))
    assert ranked_conn.fail("bigint_assign", array=a, index=three, value=1)["code"] == "bad_request"
    assert limbs_of(ranked_conn, a)[0] == [1, 2, 3]


def test_empty_and_wide(ranked_conn):
    """Empty arrays and an empty index are served; a bigint of more limbs than computing
    takes, and a negative value past 16384 bits of max_bits, are refused."""
    e = ranked_conn.put(np.zeros(0, dtype=np.int64))
    hdr, _ = ranked_conn.ok("bigint_binop", op="+", a=e, value=str(2**70))
    assert hdr["result"]["object"]["size"] == 0
    hdr, _ = ranked_conn.ok("bigint_full", size=4, value=5)
    name = hdr["result"]["object"]["name"]
    ranked_conn.ok("bigint_assign", array=name, index=e, value=7)
    assert limbs_of(ranked_conn, name)[0] == [5] * 4
    one = ranked_conn.put(np.ones(2, dtype=np.uint64))
    hdr, _ = ranked_conn.ok("bigint_from_limbs", arrays=[one] * 300)
    wide = hdr["result"]["object"]["name"]
    i = ranked_conn.put(np.array([0]))
    assert ranked_conn.fail("bigint_binop", op="+", a=wide, value=1)["code"] == "bad_request"
    assert ranked_conn.fail("bigint_assign", array=wide, index=i, value=1)["code"] == "bad_request"
    assert ranked_conn.fail("bigint_full", size=1, value=-1, max_bits=20000)["code"] == "bad_request"
