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
