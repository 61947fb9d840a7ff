"""groupby, aggregate and categorical against numpy and pandas, on a real daemon."""
import math

import numpy as np
import pandas as pd
import pytest

from wire import assert_alive, decode_strings, fails, ok, put_array, put_strings, send, unique
from wire import get as wire_get


NP_DTYPES = {"bool": np.bool_, "float32": np.float32, "float64": np.float64}


def get(d, name):
    """The object's descriptor and its contents: numpy array, list of str, or for
    composites a dict of component contents (categoricals also decoded to a list)."""
    desc, bufs = wire_get(d, name)
    return desc, decode(desc, bufs, "")


def decode(desc, bufs, prefix):
    if desc["objtype"] == "pdarray":
        return np.frombuffer(bufs[prefix + "values"], NP_DTYPES.get(desc["dtype"],
                                                                     np.dtype(desc["dtype"])))
    if desc["objtype"] == "strings":
        return decode_strings(bufs[prefix + "segments"], bufs[prefix + "values"])
    comps = {k: decode(c, bufs, prefix + k + "/") for k, c in desc["components"].items()}
    if desc["objtype"] == "categorical":
        comps["decoded"] = [comps["categories"][c] for c in comps["codes"]]
    return comps


def make_categorical(d, strs, **kw):
    s = put_strings(d, strs)
    res = ok(send(d, "categorical", dict(values=s, **kw)))
    return res["object"]["name"]


# ---- reference ----

def sort_key(v):
    """Python order matching the daemon's: NaN last and in one group, -0.0 == 0.0,
    strings by code point (= UTF-8 bytes)."""
    if isinstance(v, (float, np.floating)):
        return (1, 0.0) if math.isnan(v) else (0, float(v))
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    return v


def reference_groupby(cols):
    """cols: list of per-key row values (numbers or str; categoricals as their codes)."""
    n = len(cols[0])
    tuples = [tuple(sort_key(c[i]) for c in cols) for i in range(n)]
    perm = sorted(range(n), key=lambda i: tuples[i])  # Python's sort is stable
    segs = [p for p in range(n) if p == 0 or tuples[perm[p]] != tuples[perm[p - 1]]]
    return np.array(perm, np.int64), np.array(segs, np.int64)


def groupby(d, *names, **kw):
    res = ok(send(d, "groupby", dict(keys=list(names), **kw)))
    return res["object"]


def check_groupby(d, desc, cols):
    perm, segs = reference_groupby(cols)
    _, comps = get(d, desc["name"])
    assert desc["objtype"] == "groupby" and desc["dtype"] == "int64"
    assert desc["size"] == len(cols[0]) and desc["ngroups"] == len(segs)
    assert list(desc["components"])[:3] == ["permutation", "segments", "unique_key_idx"]
    assert [k for k in desc["components"] if k.startswith("KEY_")] == [
        f"KEY_{i}" for i in range(len(cols))]
    np.testing.assert_array_equal(comps["permutation"], perm)
    np.testing.assert_array_equal(comps["segments"], segs)
    np.testing.assert_array_equal(comps["unique_key_idx"], perm[segs] if len(segs) else [])
    return comps


rng = np.random.default_rng(12345)

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def random_column(kind, n, card=7):
    if kind in INT_DTYPES:
        info = np.iinfo(kind)
        pool = np.array(list({int(info.min), int(info.max), 0, 1} |
                             set(rng.integers(info.min, info.max, card, dtype=kind, endpoint=True)
                                 .tolist())), dtype=kind)
        return rng.choice(pool, n)
    if kind in ("float32", "float64"):
        pool = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.5, -2.25, 1e300 if kind ==
                         "float64" else 1e30], dtype=kind)
        return rng.choice(pool, n)
    if kind == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if kind == "str":
        pool = ["", "a", "ab", "b", "é", "日本", "a\u00e9", "zz", "Z", "a b"]
        return [pool[i] for i in rng.integers(0, len(pool), n)]
    raise ValueError(kind)


def put_column(d, kind, col):
    return put_strings(d, col) if kind == "str" else put_array(d, col)


# ---- groupby ----

@pytest.mark.parametrize("kind", INT_DTYPES + ["float32", "float64", "bool", "str"])
def test_groupby_one_key_every_type(daemon, kind):
    col = random_column(kind, 1000)
    desc = groupby(daemon, put_column(daemon, kind, col))
    check_groupby(daemon, desc, [col])


def test_groupby_floats_nan_payloads_and_zeros(daemon):
    a = np.array([np.nan, 0.0, -0.0, -np.inf, np.inf, np.nan, 1.0, -0.0], np.float64)
    a.view(np.uint64)[5] |= np.uint64(5)  # another NaN payload
    a = np.concatenate([a, -a])  # and NaNs with the sign bit set
    desc = groupby(daemon, put_array(daemon, a))
    comps = check_groupby(daemon, desc, [a])
    assert desc["ngroups"] == 6  # -inf -1 0 1 inf nan: NaNs are one group, and so are the zeros
    assert np.isnan(a[comps["unique_key_idx"][-1]])


@pytest.mark.parametrize("kinds", [("int64", "str"), ("str", "int8"), ("bool", "float64", "str"),
                                   ("uint64", "int32", "uint8"), ("float32", "float32")])
def test_groupby_multi_key(daemon, kinds):
    n = 3000
    cols = [random_column(k, n, card=4) for k in kinds]
    names = [put_column(daemon, k, c) for k, c in zip(kinds, cols)]
    check_groupby(daemon, groupby(daemon, *names), cols)


def test_groupby_matches_numpy_lexsort_and_pandas(daemon):
    n = 20000
    a = rng.integers(-50, 50, n).astype(np.int64)
    b = rng.integers(0, 5, n).astype(np.uint16)
    desc = groupby(daemon, put_array(daemon, a), put_array(daemon, b))
    _, comps = get(daemon, desc["name"])
    perm = np.lexsort((b, a))  # stable: ties keep row order
    np.testing.assert_array_equal(comps["permutation"], perm)
    sizes = pd.DataFrame({"a": a, "b": b}).groupby(["a", "b"], sort=True).size().to_numpy()
    np.testing.assert_array_equal(np.diff(np.append(comps["segments"], n)), sizes)
    first = pd.DataFrame({"a": a, "b": b, "i": np.arange(n)}).groupby(["a", "b"])["i"].first()
    np.testing.assert_array_equal(comps["unique_key_idx"], first.to_numpy())


def test_groupby_is_stable_with_one_group(daemon):
    n = 5001
    desc = groupby(daemon, put_array(daemon, np.full(n, 3, np.int32)),
                   put_strings(daemon, ["x"] * n))
    _, comps = get(daemon, desc["name"])
    np.testing.assert_array_equal(comps["permutation"], np.arange(n))
    np.testing.assert_array_equal(comps["segments"], [0])
    assert desc["ngroups"] == 1


def test_groupby_sorted_and_reversed_input(daemon):
    for a in (np.arange(10000, dtype=np.int64), np.arange(10000, dtype=np.int64)[::-1].copy()):
        check_groupby(daemon, groupby(daemon, put_array(daemon, a)), [a])


def test_groupby_categorical_key(daemon):
    strs = random_column("str", 2000)
    cat = make_categorical(daemon, strs)
    ints = random_column("int16", 2000, card=3)
    desc = groupby(daemon, cat, put_array(daemon, ints))
    _, cd = get(daemon, cat)
    check_groupby(daemon, desc, [cd["codes"], ints])
    assert desc["components"]["KEY_0"]["objtype"] == "categorical"


def test_groupby_component_paths_and_name(daemon):
    strs = ["b", "a", "b", "c"]
    cat = make_categorical(daemon, strs)
    name = unique("mygb")
    desc = groupby(daemon, f"{cat}/categories", name=name)
    assert desc["name"] == name
    check_groupby(daemon, desc, [["a", "b", "c", "N/A"]])
    fails(send(daemon, "groupby", dict(keys=[f"{cat}/categories"], name=name)), "already_exists")


def test_groupby_empty(daemon):
    for kind in ("int64", "str", "float64"):
        col = random_column(kind, 0)
        desc = groupby(daemon, put_column(daemon, kind, col), put_array(daemon, np.zeros(0, "u1")))
        assert desc["size"] == 0 and desc["ngroups"] == 0
        _, comps = get(daemon, desc["name"])
        assert len(comps["permutation"]) == len(comps["segments"]) == 0
        res = ok(send(daemon, "aggregate", dict(groupby=desc["name"], op="count")))
        assert res["values"]["size"] == 0 and len(res["keys"]) == 2


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_groupby_more_locales_than_rows(start_daemon, n):
    d = start_daemon(locales=5)
    a = np.array([3, 1, 3, 2, 1, 0, 3][:n], np.int64)
    s = ["x", "", "x", "y", "", "z", "x"][:n]
    check_groupby(d, groupby(d, put_array(d, a)), [a])
    check_groupby(d, groupby(d, put_strings(d, s), put_array(d, a)), [s, a])
    res = ok(send(d, "aggregate", dict(groupby=groupby(d, put_array(d, a))["name"], op="sum", values=put_array(d, a))))
    _, sums = get(d, res["values"]["name"])
    np.testing.assert_array_equal(sums, pd.Series(a).groupby(a).sum().to_numpy())
    assert_alive(d)


def test_same_results_for_1_and_3_locales(start_daemon):
    n = 30000
    a = rng.integers(-1000, 1000, n).astype(np.int64)
    f = random_column("float64", n)
    s = random_column("str", n)
    results = []
    for locales in (1, 3, 4):
        d = start_daemon(locales=locales)
        desc = groupby(d, put_array(d, a), put_strings(d, s), put_array(d, f))
        _, comps = get(d, desc["name"])
        res = ok(send(d, "aggregate", dict(groupby=desc["name"], op="nunique", values=put_array(d, f))))
        _, nu = get(d, res["values"]["name"])
        results.append((comps["permutation"], comps["segments"], comps["unique_key_idx"], nu))
    for other in results[1:]:
        for x, y in zip(results[0], other):
            np.testing.assert_array_equal(x, y)
    check_groupby(d, desc, [a, s, f])


def test_groupby_large_single_keys_reuse_scratch(start_daemon):
    """One numeric key over runs large enough that the sort's scratch comes from, and goes
    back to, each locale's cache of freed memory: groupbys one after another (narrow keys
    that sort in one radix pass, full-range ones, ties across runs) all match numpy's
    stable sort on 1, 2 and 3 locales, however stale the reused scratch."""
    n = 400_003  # a run of 3 locales still needs blocks of over 1 MiB
    cols = [rng.integers(0, 1000, n).astype(np.int64),
            rng.integers(-2**62, 2**62, n).astype(np.int64),
            np.repeat(np.arange(7, dtype=np.int64)[::-1], n // 7 + 1)[:n],
            rng.random(n)]
    refs = []
    for a in cols:  # numpy's stable sort: no NaN or -0.0 here for the orders to differ on
        perm = np.argsort(a, kind="stable")
        s = a[perm]
        refs.append((perm, np.flatnonzero(np.r_[True, s[1:] != s[:-1]])))
    for locales in (1, 2, 3):
        d = start_daemon(locales=locales)
        for a, (perm, segs) in zip(cols + cols[:1], refs + refs[:1]):
            desc = groupby(d, put_array(d, a))
            _, comps = get(d, desc["name"])
            np.testing.assert_array_equal(comps["permutation"], perm)
            np.testing.assert_array_equal(comps["segments"], segs)
            np.testing.assert_array_equal(comps["unique_key_idx"], perm[segs])
            ok(send(d, "delete", dict(names=[desc["name"]])))
        cached = ok(send(d, "getconfig"))["memory_cached"]
        assert cached > 0, "the sort's scratch was not kept for reuse"


# ---- aggregate ----

def aggregate(d, gb, op, values=None, **kw):
    args = {"groupby": gb, "op": op, **kw}
    if values is not None:
        args["values"] = values
    res = ok(send(d, "aggregate", args))
    return res


def aggregate_values(d, gb, op, values=None):
    res = aggregate(d, gb, op, values)
    desc, arr = get(d, res["values"]["name"])
    return desc, arr


@pytest.fixture(scope="module")
def agg_data(daemon):
    n = 5000
    k1 = rng.integers(0, 40, n).astype(np.int32)
    k2 = random_column("str", n)
    gb = groupby(daemon, put_array(daemon, k1), put_strings(daemon, k2))["name"]
    df = pd.DataFrame({"k1": k1, "k2": k2})
    return gb, df, n


VALUE_KINDS = INT_DTYPES + ["float32", "float64", "bool"]


def values_for(kind, n):
    if kind in INT_DTYPES:
        info = np.iinfo(kind)
        return rng.integers(info.min, info.max, n, dtype=kind, endpoint=True)
    if kind == "bool":
        return rng.integers(0, 2, n).astype(bool)
    v = rng.normal(0, 100, n).astype(kind)
    v[rng.integers(0, n, n // 100)] = np.nan
    return v


@pytest.mark.parametrize("kind", VALUE_KINDS)
def test_aggregate_every_op(daemon, agg_data, kind):
    gb, df, n = agg_data
    vals = values_for(kind, n)
    vname = put_array(daemon, vals)
    _, comps = get(daemon, gb)
    perm, segs = comps["permutation"], comps["segments"]
    g = df.assign(v=vals).groupby(["k1", "k2"], sort=True)["v"]
    is_float = vals.dtype.kind == "f"

    desc, count = aggregate_values(daemon, gb, "count", vname)
    assert desc["dtype"] == "int64"
    np.testing.assert_array_equal(count, g.size().to_numpy())

    desc, s = aggregate_values(daemon, gb, "sum", vname)
    if is_float:
        assert desc["dtype"] == "float64"
        ref = np.add.reduceat(vals[perm].astype(np.float64), segs)  # NaN propagates
        np.testing.assert_allclose(s, ref, rtol=1e-9)
    else:
        want = "uint64" if vals.dtype.kind == "u" else "int64"
        assert desc["dtype"] == want
        ref = df.assign(v=vals.astype(want)).groupby(["k1", "k2"])["v"].sum().to_numpy()
        np.testing.assert_array_equal(s, ref)  # wraps as numpy does

    for op, ufunc in (("min", np.minimum), ("max", np.maximum)):
        desc, m = aggregate_values(daemon, gb, op, vname)
        assert desc["dtype"] == ("bool" if kind == "bool" else kind)
        ref = ufunc.reduceat(vals[perm], segs)  # NaN propagates
        np.testing.assert_array_equal(m, ref)
        if not is_float:
            pref = getattr(g, op)().to_numpy().astype(vals.dtype)
            np.testing.assert_array_equal(m, pref)

    desc, mean = aggregate_values(daemon, gb, "mean", vname)
    assert desc["dtype"] == "float64"
    if is_float:
        ref = np.add.reduceat(vals[perm].astype(np.float64), segs) / np.diff(np.append(segs, n))
    else:
        ref = g.mean().to_numpy()
    np.testing.assert_allclose(mean, ref, rtol=1e-9)

    desc, first = aggregate_values(daemon, gb, "first", vname)
    assert desc["dtype"] == ("bool" if kind == "bool" else kind)
    np.testing.assert_array_equal(first, vals[perm[segs]])
    if not is_float:
        np.testing.assert_array_equal(first, g.first().to_numpy().astype(vals.dtype))

    desc, nu = aggregate_values(daemon, gb, "nunique", vname)
    assert desc["dtype"] == "int64"
    np.testing.assert_array_equal(nu, g.nunique(dropna=False).to_numpy())


def test_aggregate_keys(daemon, agg_data):
    gb, df, n = agg_data
    res = aggregate(daemon, gb, "count")
    assert [k["objtype"] for k in res["keys"]] == ["pdarray", "strings"]
    assert res["keys"][0]["dtype"] == "int32"
    idx = df.groupby(["k1", "k2"], sort=True).size().index
    _, k1 = get(daemon, res["keys"][0]["name"])
    _, k2 = get(daemon, res["keys"][1]["name"])
    np.testing.assert_array_equal(k1, idx.get_level_values(0).to_numpy())
    assert k2 == list(idx.get_level_values(1))


def test_aggregate_strings_values(daemon, agg_data):
    gb, df, n = agg_data
    strs = random_column("str", n)
    sname = put_strings(daemon, strs)
    g = df.assign(v=strs).groupby(["k1", "k2"], sort=True)["v"]
    _, first = aggregate_values(daemon, gb, "first", sname)
    assert first == list(g.first())
    desc, nu = aggregate_values(daemon, gb, "nunique", sname)
    np.testing.assert_array_equal(nu, g.nunique().to_numpy())
    _, cnt = aggregate_values(daemon, gb, "count", sname)
    np.testing.assert_array_equal(cnt, g.size().to_numpy())


def test_aggregate_int64_sum_wraps_and_name(daemon):
    k = np.array([0, 0, 1], np.int64)
    v = np.array([2**62, 2**62, -2**63], np.int64)
    gb = groupby(daemon, put_array(daemon, k))["name"]
    name = unique("sum")
    res = aggregate(daemon, gb, "sum", put_array(daemon, v), name=name)
    assert res["values"]["name"] == name
    _, s = get(daemon, name)
    np.testing.assert_array_equal(s, np.array([-2**63, -2**63], np.int64))


def test_aggregate_categorical_keys_share_categories(daemon):
    strs = ["b", "a", "N/A", "b", "c", "a"]
    cat = make_categorical(daemon, strs)
    gb = groupby(daemon, cat)["name"]
    res = aggregate(daemon, gb, "count")
    key = res["keys"][0]
    assert key["objtype"] == "categorical" and key["na_value"] == "N/A"
    _, kc = get(daemon, key["name"])
    assert kc["decoded"] == ["N/A", "a", "b", "c"]
    catdesc, _ = get(daemon, cat)
    assert key["na_code"] == catdesc["na_code"]
    _, cnt = aggregate_values(daemon, gb, "count")
    np.testing.assert_array_equal(cnt, [1, 2, 2, 1])


# ---- categorical ----

def test_categorical_from_values(daemon):
    strs = random_column("str", 3000)
    name = make_categorical(daemon, strs)
    desc, comps = get(daemon, name)
    assert desc["objtype"] == "categorical" and desc["dtype"] == "str"
    assert desc["size"] == 3000 and list(desc["components"]) == ["codes", "categories"]
    cats = sorted(set(strs), key=lambda s: s.encode())
    assert comps["categories"] == cats + ["N/A"]
    assert desc["na_value"] == "N/A" and desc["na_code"] == len(cats)
    assert comps["codes"].dtype == np.int64
    assert comps["decoded"] == strs


def test_categorical_na_present_and_custom(daemon):
    strs = ["x", "", "N/A", "x", "é"]
    desc, comps = get(daemon, make_categorical(daemon, strs))
    assert comps["categories"] == ["", "N/A", "x", "é"] and desc["na_code"] == 1
    desc, comps = get(daemon, make_categorical(daemon, strs, na_value="missing"))
    assert comps["categories"] == ["", "N/A", "x", "é", "missing"]
    assert desc["na_value"] == "missing" and desc["na_code"] == 4
    assert comps["decoded"] == strs


def test_categorical_keep_groups(daemon):
    strs = random_column("str", 2000)
    desc, comps = get(daemon, make_categorical(daemon, strs, keep_groups=True))
    assert list(desc["components"]) == ["codes", "categories", "permutation", "segments"]
    perm, segs = reference_groupby([strs])
    np.testing.assert_array_equal(comps["permutation"], perm)
    np.testing.assert_array_equal(comps["segments"], segs)
    assert comps["decoded"] == strs


def test_categorical_empty(daemon):
    desc, comps = get(daemon, make_categorical(daemon, [], keep_groups=True))
    assert desc["size"] == 0 and comps["categories"] == ["N/A"] and desc["na_code"] == 0
    codes = put_array(daemon, np.zeros(0, np.int64))
    res = ok(send(daemon, "categorical", dict(codes=codes, categories=put_strings(daemon, []))))
    assert res["object"]["size"] == 0 and res["object"]["na_code"] == 0


def test_categorical_from_codes(daemon):
    cats = ["z", "a", "N/A", "é"]
    codes = rng.integers(0, 4, 1000).astype(np.int64)
    cname = put_strings(daemon, cats)
    res = ok(send(daemon, "categorical", dict(codes=put_array(daemon, codes), categories=cname)))
    desc = res["object"]
    assert desc["na_code"] == 2
    assert desc["components"]["categories"]["name"].endswith("/categories")
    _, comps = get(daemon, desc["name"])
    assert comps["categories"] == cats
    assert comps["decoded"] == [cats[c] for c in codes]
    # absent NA: appended to a new categories object, the old one unchanged
    res = ok(send(daemon, "categorical", dict(codes=put_array(daemon, codes), categories=cname, na_value="?")))
    assert res["object"]["na_code"] == 4
    _, comps = get(daemon, res["object"]["name"])
    assert comps["categories"] == cats + ["?"]
    assert get(daemon, cname)[1] == cats


def test_categorical_from_codes_more_locales(start_daemon):
    d = start_daemon(locales=5)
    res = ok(send(d, "categorical", dict(codes=put_array(d, np.array([1, 0], np.int64)), categories=put_strings(d, ["p", "q"]))))
    _, comps = get(d, res["object"]["name"])
    assert comps["decoded"] == ["q", "p"] and comps["categories"] == ["p", "q", "N/A"]
    desc, comps = get(d, make_categorical(d, ["b", "a", "b"], keep_groups=True))
    assert comps["decoded"] == ["b", "a", "b"]
    np.testing.assert_array_equal(comps["permutation"], [1, 0, 2])


def test_categorical_codes_out_of_range(daemon):
    cname = put_strings(daemon, ["a", "b"])
    codes = np.zeros(1000, np.int64)
    codes[700] = 2
    codes[900] = -1
    msg = fails(send(daemon, "categorical", dict(codes=put_array(daemon, codes), categories=cname)),
                "bad_request", "codes[700]")
    assert "2" in msg
    codes[700] = 0
    fails(send(daemon, "categorical", dict(codes=put_array(daemon, codes), categories=cname)),
          "bad_request", "codes[900]")
    assert_alive(daemon)


# ---- bad input ----

def test_bad_inputs(daemon):
    d = daemon
    a = put_array(d, np.arange(10, dtype=np.int64))
    b = put_array(d, np.arange(11, dtype=np.int64))
    s = put_strings(d, ["x"] * 10)
    big = put_array(d, np.arange(10, dtype=np.int64))
    fails(send(d, "groupby", dict(keys=[])), "bad_request", "keys")
    fails(send(d, "groupby"), "bad_request", "keys")
    fails(send(d, "groupby", dict(keys=[a, b])), "bad_request", "keys[1]")
    fails(send(d, "groupby", dict(keys=[a, "nope"])), "not_found", "keys[1]", "nope")
    fails(send(d, "groupby", dict(keys="a")), "bad_request", "keys")
    gb = groupby(d, a)["name"]
    fails(send(d, "groupby", dict(keys=[gb])), "type_error", gb)
    fails(send(d, "groupby", dict(keys=[a], bogus=1)), "bad_request", "bogus")
    fails(send(d, "aggregate", dict(groupby=gb, op="median", values=a)), "bad_request", "median")
    fails(send(d, "aggregate", dict(groupby=gb, op="sum")), "bad_request", "values")
    fails(send(d, "aggregate", dict(groupby=gb, op="sum", values=b)), "bad_request", "values", "11")
    fails(send(d, "aggregate", dict(groupby=gb, op="sum", values=s)), "type_error", "values")
    fails(send(d, "aggregate", dict(groupby=gb, op="min", values=s)), "type_error", "values")
    fails(send(d, "aggregate", dict(groupby=gb, op="mean", values=gb)), "type_error", "values")
    fails(send(d, "aggregate", dict(groupby=a, op="count")), "type_error", "groupby")
    fails(send(d, "aggregate", dict(groupby="nope", op="count")), "not_found", "groupby", "nope")
    fails(send(d, "aggregate", dict(groupby=gb, op="sum", values="nope")), "not_found", "values")
    fails(send(d, "categorical"), "bad_request", "values")
    fails(send(d, "categorical", dict(codes=a)), "bad_request", "categories")
    fails(send(d, "categorical", dict(values=s, codes=a, categories=s)), "bad_request", "values")
    fails(send(d, "categorical", dict(values=a)), "type_error", "values")
    fails(send(d, "categorical", dict(codes=s, categories=s)), "type_error", "codes")
    fails(send(d, "categorical", dict(codes=a, categories=a)), "type_error", "categories")
    fails(send(d, "categorical", dict(codes=put_array(d, np.zeros(3, np.int32)), categories=s)),
          "type_error", "codes")
    fails(send(d, "categorical", dict(codes=a, categories=s, keep_groups=True)), "bad_request",
          "keep_groups")
    fails(send(d, "categorical", dict(values="nope")), "not_found", "nope")
    fails(send(d, "categorical", dict(values=s, na_value=3)), "bad_request", "na_value")
    del big
    assert_alive(d)


def test_bad_key_objtypes(daemon):
    d = daemon
    a = put_array(d, np.arange(4, dtype=np.int64))
    # a segarray (when the daemon has the command) is not a key
    seg = put_array(d, np.array([0, 2], np.int64))
    hdr, _ = send(d, "segarray", dict(segments=seg, values=a))
    if hdr.get("ok"):
        fails(send(d, "groupby", dict(keys=[hdr["result"]["object"]["name"]])), "type_error",
              "segarray")
    # bigint pdarrays are not keys either
    hdr, _ = send(d, "put", dict(objtype="pdarray", dtype="bigint", shape=[4]), [np.arange(4, dtype="<u8").tobytes()], buffers=[{"name": "Limb_0", "nbytes": 32}])
    if hdr.get("ok"):
        fails(send(d, "groupby", dict(keys=[hdr["result"]["object"]["name"]])), "type_error", "bigint")
    assert_alive(d)


def test_resource_limit(start_daemon):
    d = start_daemon(locales=2, max_memory=3_000_000)
    a = put_array(d, np.arange(100_000, dtype=np.int64))  # 800 kB; sorting needs more
    fails(send(d, "groupby", dict(keys=[a])), "resource_limit")
    assert_alive(d)
    small = put_array(d, np.arange(1000, dtype=np.int64))
    check_groupby(d, groupby(d, small), [np.arange(1000)])
