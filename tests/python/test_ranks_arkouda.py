"""The Arkouda endpoint of a daemon run as several ranks (docs/DESIGN.md, "Ranks"): the
commands converted give what they give at R = 1 (the wire tests below are those of
test_arkouda_wire.py, run against R = 2 and 3; they compare with numpy, which the one-rank
daemon matches in test_arkouda_wire.py), the seeded and order-dependent ones are compared
with a one-rank daemon of the same total locales."""
import json
import re

import h5py
import numpy as np
import pytest

from daemons import MPIRUN, Daemon, mpi_build
from wire import call, call_ok
import test_arkouda_wire as wire
from test_arkouda_wire import Ak, created_name, download, get_strings, put_strings, upload

# the wire tests run here again, against the daemon as several ranks (the fixtures below)
WIRE_TESTS = [
    "test_connect_handshake", "test_unknown_command", "test_malformed_requests",
    "test_wrong_arg_types", "test_delete_and_info", "test_array_round_trip",
    "test_array_verbatim_capture", "test_array_errors", "test_strings_round_trip",
    "test_strings_errors", "test_pdarray_files", "test_update_overwrite",
    "test_hdffileformat_from_the_attribute", "test_strings_files",
    "test_segarray_categorical_files", "test_groupby_index_files", "test_dataframe_snapshot",
    "test_tagged_pdarrays", "test_read_h5py_file_and_options", "test_file_commands_and_errors",
    "test_native_reads_what_arkouda_wrote", "test_failed_read_leaves_nothing",
    "test_arange_randint_create_set", "test_cast", "test_binopvv_int", "test_binops_mixed",
    "test_reductions", "test_reduction_errors", "test_bigint_read_fetch_write",
    "test_bigint_from_uint_arrays", "test_slice_dtypes", "test_indexing", "test_clients_at_once",
    "test_strings_compute", "test_segmented_split", "test_unique_and_broadcast",
    "test_strings_holding_nul",
    "test_unique_strings_in_arkouda_order", "test_segmented_reduction", "test_assign_scalar",
    "test_bigint_arange_and_max_bits", "test_bigint_compute",
]
# and its client fixture `ak`, which then connects to this module's `akd`
globals().update({name: getattr(wire, name) for name in WIRE_TESTS + ["ak"]})

pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (openmpi-bin)")

# (ranks, locales a rank): R = 3 has the one-rank wire suite's 3 locales, R = 2 has 4
LAYOUTS = [(2, 2), (3, 1)]


@pytest.fixture(scope="module", params=LAYOUTS, ids=["R2", "R3"])
def akd(request):
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    ranks, threads = request.param
    d = Daemon(ranks=ranks, locales=threads, arkouda=True)
    yield d
    d.cleanup()


@pytest.fixture(scope="module")
def single_ak(akd):
    """A one-rank daemon with the same total locales, its Arkouda endpoint."""
    d = Daemon(locales=akd.locales, arkouda=True)
    c = Ak(d.ak_endpoint)
    c.data_dir = d.data_dir
    yield c
    c.close()
    d.cleanup()


def test_generated_names_take_arkouda_form(ak, akd):
    """Names made at several ranks read as Arkouda's (id_<7>_<n>), distinct within one call
    and across calls, through either endpoint."""
    form = re.compile(r"^id_[0-9A-Za-z]{7}_\d+$")
    names = [upload(ak, np.arange(5, dtype=np.int64))[0] for _ in range(3)]
    s = put_strings(ak, ["a", "b", "a"])
    k, _, _ = upload(ak, np.array([2, 1, 2], dtype=np.int64))
    msg = ak.ok("unique", {"returnGroupStr": True, "assumeSortedStr": False, "nstr": 1,
                           "keynames": [k], "keytypes": ["pdarray"]})
    names += [created_name(p) for p in msg.split("+")] + [s]
    hdr, _ = call(akd.endpoint, "create", {"dtype": "int64", "fill": "arange", "stop": 4})
    assert hdr["ok"], hdr
    names.append(hdr["result"]["object"]["name"])
    assert all(form.match(n) for n in names), names
    assert len(set(names)) == len(names), names


def test_getconfig_counts_every_rank(ak, akd):
    config = json.loads(ak.ok("getconfig", {}))
    assert config["numLocales"] == config["maxTaskPar"] == akd.locales
    assert config["numNodes"] == 1  # every rank on this host


def test_seeded_construction_matches_one_rank(ak, single_ak):
    for cmd, params, dtype, n in (
            ("randint<int64,1>", {"shape": "5000", "low": "-9", "high": "9", "seed": "3"},
             "int64", 5000),
            ("randint<float64,1>", {"shape": "777", "low": "0", "high": "1", "seed": "5"},
             "float64", 777),
            ("arange<int64,1>", {"start": 5, "stop": 4000, "step": 7}, "int64", 571)):
        got = download(ak, ak.created(cmd, params)[0], dtype, n)
        want = download(single_ak, single_ak.created(cmd, params)[0], dtype, n)
        np.testing.assert_array_equal(got, want)


def test_indexing_across_ranks(ak):
    arr = np.arange(1001, dtype=np.int64) * 3 - 100
    name, _, _ = upload(ak, arr)
    for start, stop, stride in ((1, 4, 1), (0, 1001, 3), (1000, -1, -2), (5, 5, 1), (0, 999, 7)):
        out, _, size = ak.created("[slice]<int64,1>", {"array": name, "starts": start,
                                                       "stops": stop, "strides": stride,
                                                       "max_bits": 0})
        np.testing.assert_array_equal(download(ak, out, "int64", size),
                                      arr[start:stop if stop >= 0 else None:stride])
    where = np.array([1000, -1, 0, 3, 500, 999, 2] * 30, dtype=np.int64)
    pos, _, _ = upload(ak, where)
    out, _, size = ak.created("[pdarray]", {"array": name, "idx": pos})
    np.testing.assert_array_equal(download(ak, out, "int64", size), arr[where])
    rng = np.random.default_rng(4)
    for keep in (arr % 2 == 0, rng.random(1001) < 0.05, arr < 0, np.zeros(1001, bool),
                 np.ones(1001, bool), np.arange(1001) > 900):
        mask, _, _ = upload(ak, keep)
        out, _, size = ak.created("[pdarray]", {"array": name, "idx": mask})
        assert size == keep.sum()
        np.testing.assert_array_equal(download(ak, out, "int64", size), arr[keep])
    # the first bad position of all, whichever rank holds it
    bad = np.zeros(600, dtype=np.int64)
    bad[450], bad[590] = 1001, -2000
    nbad, _, _ = upload(ak, bad)
    assert "index 1001 is out of bounds" in ak.error("[pdarray]", {"array": name, "idx": nbad})
    assert "step" in ak.error("[slice]<int64,1>", {"array": name, "starts": 0, "stops": 4,
                                                   "strides": 0})
    assert ak.ok("set<int64,1>", {"array": name, "dtype": "int64", "val": "-4"}) == \
        f"set element in {name}"
    np.testing.assert_array_equal(download(ak, name, "int64", 1001), np.full(1001, -4))


def test_elements_across_ranks(ak):
    """[int], str and repr read elements from the ranks holding them."""
    arr = np.arange(1000, dtype=np.int64) * 7 - 3
    name, _, _ = upload(ak, arr)
    for i in (0, 1, 249, 250, 499, 500, 998, -1, -1000):
        assert ak.ok("[int]<int64,1>", {"array": name, "idx": i}) == f"int64 {arr[i]}"
    assert "out of bounds" in ak.error("[int]<int64,1>", {"array": name, "idx": 1000})
    assert ak.ok("str", {"array": name, "printThresh": 100}) == "[-3 4 11 ... 6976 6983 6990]"
    small, _, _ = upload(ak, arr[:9])
    assert ak.ok("repr", {"array": small, "printThresh": 100}) == \
        "array([" + " ".join(str(v) for v in arr[:9]) + "])"
    f, _, _ = upload(ak, np.array([0.1, 2.5, -3.0, 4.0]))
    assert ak.ok("str", {"array": f, "printThresh": 100}) == "[0.1 2.5 -3 4]"


def test_unique_matches_one_rank(ak, single_ak):
    keys = np.random.default_rng(2).integers(-40, 40, 3001)
    two = np.arange(3001) % 3

    def run(c):
        k, _, _ = upload(c, keys)
        t, _, _ = upload(c, two)
        msg = c.ok("unique", {"returnGroupStr": True, "assumeSortedStr": False, "nstr": 2,
                              "keynames": [k, t], "keytypes": ["pdarray", "pdarray"]})
        parts = [created_name(p) for p in msg.split("+")]
        sizes = [int(p.split()[3]) for p in msg.split("+")]
        return [download(c, p, "int64", n) for p, n in zip(parts, sizes)]

    got, want = run(ak), run(single_ak)
    assert len(got) == 3  # permutation, segments, unique key indices
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    uniq = sorted(set(zip(keys.tolist(), two.tolist())))
    uki = got[2]
    np.testing.assert_array_equal(keys[uki], [u[0] for u in uniq])
    np.testing.assert_array_equal(two[uki], [u[1] for u in uniq])
    perm = got[0]
    assert sorted(perm.tolist()) == list(range(3001))
    rows = list(zip(keys[perm].tolist(), two[perm].tolist()))
    assert rows == sorted(rows)
    # one Strings key of short strings: grouped in Arkouda's order (by the numbers of their
    # bytes), the unique key indices the first row of each group
    words = [w for w in np.random.default_rng(5).choice(
        ["b", "a", "ab", "", "ba", "aa", "b\u00e9", "zz"], 2001).tolist()]

    def run_strings(c, groups):
        msg = c.ok("unique", {"returnGroupStr": groups, "assumeSortedStr": False, "nstr": 1,
                              "keynames": [put_strings(c, words)], "keytypes": ["Strings"]})
        parts = msg.split("+")
        sizes = [int(p.split()[3]) for p in parts]
        return [download(c, created_name(p), "int64", k).tolist()
                for p, k in zip(parts, sizes)]

    for groups in (True, False):
        got = run_strings(ak, groups)
        assert got == run_strings(single_ak, groups)
        assert [words[i] for i in got[-1]] == sorted(set(words),
                                                     key=wire.arkouda_short_key(3))
        assert all(words.index(words[i]) == i for i in got[-1])


def test_cumsum_matches_one_rank(ak, single_ak):
    """Running sums carried from rank to rank: floats added in the one daemon's order."""
    rng = np.random.default_rng(9)
    arrays = (rng.integers(-10**15, 10**15, 5003), rng.normal(size=5003) * 1e10,
              rng.random(5003) < 0.5, rng.integers(0, 2**63, 5003).astype(np.uint64),
              np.zeros(0, dtype=np.int64), np.array([7], dtype=np.int64))
    for arr, initial in [(a, i) for a in arrays for i in (False, True)]:
        dtype = str(arr.dtype)
        out_dtype = {"bool": "int64"}.get(dtype, dtype)
        n = arr.size + initial
        got = ak.created(f"cumSum<{dtype},1>", {"x": upload(ak, arr)[0], "axis": 0,
                                                "includeInitial": initial})
        want = single_ak.created(f"cumSum<{dtype},1>", {"x": upload(single_ak, arr)[0],
                                                        "axis": 0, "includeInitial": initial})
        assert got[1:] == want[1:] == (out_dtype, n)
        g = download(ak, got[0], out_dtype, n)
        np.testing.assert_array_equal(g, download(single_ak, want[0], out_dtype, n))
        if dtype != "float64":
            expect = np.cumsum(arr, dtype=out_dtype)
            np.testing.assert_array_equal(g, np.concatenate([[0], expect]) if initial else
                                          expect)


def test_assign_and_concatenate_across_ranks(ak):
    """Rows sent to the ranks holding them; a row given twice keeps the last value."""
    rng = np.random.default_rng(6)
    arr = np.arange(2000, dtype=np.int64)
    name, _, _ = upload(ak, arr)
    where = rng.integers(-2000, 2000, 700)
    where[[10, 650]] = 1999  # twice, from different ranks: the later wins
    vals = rng.normal(size=700) * 1000
    w, _, _ = upload(ak, where)
    v, _, _ = upload(ak, vals)
    assert ak.ok("[pdarray]=pdarray", {"array": name, "idx": w, "value": v}) == \
        f"{name} success"
    expect = arr.copy()
    for k in range(700):
        expect[where[k]] = vals[k]
    np.testing.assert_array_equal(download(ak, name, "int64", 2000), expect)
    mask, _, _ = upload(ak, arr % 3 == 0)
    three, _, _ = upload(ak, -np.arange(667, dtype=np.int64))
    ak.ok("[pdarray]=pdarray", {"array": name, "idx": mask, "value": three})
    expect[arr % 3 == 0] = -np.arange(667)
    np.testing.assert_array_equal(download(ak, name, "int64", 2000), expect)
    bad, _, _ = upload(ak, np.array([0] * 1500 + [2000] + [5] * 10, dtype=np.int64))
    eleven, _, _ = upload(ak, np.zeros(1511, dtype=np.int64))
    assert "index 2000 is out of bounds" in ak.error(
        "[pdarray]=pdarray", {"array": name, "idx": bad, "value": eleven})
    np.testing.assert_array_equal(download(ak, name, "int64", 2000), expect)
    parts = [np.arange(n, dtype=np.int64) * (k + 1) for k, n in enumerate((0, 1, 999, 5, 3001))]
    names = [upload(ak, p)[0] for p in parts]
    out, _, size = ak.created("concatenate<int64,1>", {"names": names, "axis": 0})
    np.testing.assert_array_equal(download(ak, out, "int64", size), np.concatenate(parts))
    f, _, _ = upload(ak, np.array([1.0]))
    assert "one dtype" in ak.error("concatenate<int64,1>", {"names": [names[2], f], "axis": 0})


def test_unique_and_broadcast_across_ranks(ak, single_ak):
    """GroupBy's broadcast: each group's value over its rows, in the grouping's order or
    back in the rows' own (rows sent to other ranks)."""
    keys = np.random.default_rng(8).integers(0, 50, 4001)

    def run(c, permute, dtype):
        k, _, _ = upload(c, keys)
        parts = [created_name(p) for p in c.ok("unique", {
            "returnGroupStr": True, "assumeSortedStr": False, "nstr": 1, "keynames": [k],
            "keytypes": ["pdarray"]}).split("+")]
        ngroups = len(np.unique(keys))
        vals, _, _ = upload(c, (np.arange(ngroups) * 3 + 1).astype(dtype))
        out, _, size = c.created("gbbroadcast", {
            "permName": parts[0] if permute else "none", "segName": parts[1],
            "valName": vals, "permute": permute, "size": keys.size})
        return download(c, out, dtype, size)

    for permute in (False, True):
        for dtype in ("int64", "float64", "bool"):
            got = run(ak, permute, dtype)
            np.testing.assert_array_equal(got, run(single_ak, permute, dtype))
            rank_of = np.searchsorted(np.unique(keys), keys)
            want = (rank_of * 3 + 1).astype(dtype) if permute else \
                (np.sort(rank_of) * 3 + 1).astype(dtype)
            np.testing.assert_array_equal(got, want)
    seg, _, _ = upload(ak, np.array([0, 5, 3], dtype=np.int64))
    vals, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    assert "segment 2 (3) is out of order" in ak.error("gbbroadcast", {
        "permName": "none", "segName": seg, "valName": vals, "permute": False, "size": 9})
    seg, _, _ = upload(ak, np.array([0, 1000, 2000], dtype=np.int64))
    perm = np.arange(3000, dtype=np.int64)
    perm[2500], perm[2999] = 3000, -1
    p, _, _ = upload(ak, perm)
    assert "permutation entry 3000 is out of bounds" in ak.error("gbbroadcast", {
        "permName": p, "segName": seg, "valName": vals, "permute": True, "size": 3000})


def test_strings_compute_across_ranks(ak, single_ak):
    params = {"size": "3000", "dist": "uniform", "chars": "alphanumeric", "arg1": "0",
              "arg2": "9", "seed": "11"}
    mine = ak.ok("randomStrings", params).split()[1]
    strs = get_strings(ak, mine)
    assert strs == get_strings(single_ak, single_ak.ok("randomStrings", params).split()[1])
    assert len(strs) == 3000 and len(set(strs)) > 2000
    other = put_strings(ak, strs[:1500] + ["zz"] * 1500)
    out, _, size = ak.created("segmentedBinopvv", {"op": "!=", "objType": "Strings",
                                                   "obj": mine, "otherType": "Strings",
                                                   "other": other, "left": False, "delim": ""})
    np.testing.assert_array_equal(download(ak, out, "bool", size),
                                  [a != b for a, b in zip(strs, strs[:1500] + ["zz"] * 1500)])
    for text in ("", strs[2999], strs[0], "nope"):
        out, _, size = ak.created("segmentedBinopvs", {"op": "==", "objType": "Strings",
                                                       "obj": mine, "otherType": "str",
                                                       "other": text})
        np.testing.assert_array_equal(download(ak, out, "bool", size), [x == text for x in strs])
    for i in (0, 1, 1499, 1500, 2999, -1, -3000):
        assert ak.ok("segmentedIndex", {"subcmd": "intIndex", "objType": "Strings",
                                        "dtype": "<U0", "obj": mine, "key": str(i)}) == \
            "item str " + json.dumps(strs[i])
    assert "bounds" in ak.error("segmentedIndex", {"subcmd": "intIndex", "objType": "Strings",
                                                   "obj": mine, "key": "3000"})
    # through rank 0: concatenated, split
    words = put_strings(ak, ["a,b", "", ",x,,", "héllo"] * 400)
    msg = ak.ok("concatenateStr", {"objType": "Strings", "names": [mine, words, mine],
                                   "mode": "append"})
    both = get_strings(ak, created_name(msg))
    assert both == strs + ["a,b", "", ",x,,", "héllo"] * 400 + strs
    msg = ak.ok("segmentedSplit", {"parent_name": words, "objtype": "Matcher", "max": 0,
                                   "return_segs": True, "pattern": ","})
    pieces_text, first_text = msg.split("+created ", 1)[0], msg.rsplit("+", 1)[1]
    pieces = get_strings(ak, pieces_text.split()[1])
    first = download(ak, created_name(first_text), "int64", 1600)
    want, want_first = [], []
    for w in ["a,b", "", ",x,,", "héllo"] * 400:
        want_first.append(len(want))
        want += w.split(",")
    assert pieces == want
    np.testing.assert_array_equal(first, want_first)
    want_msg = single_ak.ok("segmentedSplit", {
        "parent_name": put_strings(single_ak, ["a,b", "", ",x,,", "héllo"] * 400),
        "objtype": "Matcher", "max": 1, "return_segs": False, "pattern": ","})
    msg = ak.ok("segmentedSplit", {"parent_name": words, "objtype": "Matcher", "max": 1,
                                   "return_segs": False, "pattern": ","})
    assert get_strings(ak, msg.split()[1]) == get_strings(single_ak, want_msg.split()[1])
    # taken by position: gathered to rank 0, taken there, put back
    rng = np.random.default_rng(3)
    where = rng.integers(-3000, 3000, 2500)
    pos, _, _ = upload(ak, where)
    for sub, key, want in (("pdarrayIndex", pos, [strs[i] for i in where]),
                           ("sliceIndex", json.dumps(["2999", "-1", "-7"]), strs[::-7])):
        msg = ak.ok("segmentedIndex", {"subcmd": sub, "objType": "Strings", "dtype": "<U0",
                                       "obj": mine, "key": key})
        assert get_strings(ak, created_name(msg)) == want
    msg = ak.ok("[slice]<int64,1>", {"array": mine, "starts": 5, "stops": 2500, "strides": 3,
                                     "max_bits": 0})
    assert get_strings(ak, created_name(msg)) == strs[5:2500:3]
    mask, _, _ = upload(ak, np.array([len(x) % 2 == 0 for x in strs]))
    msg = ak.ok("[pdarray]", {"array": mine, "idx": mask})
    assert get_strings(ak, created_name(msg)) == [x for x in strs if len(x) % 2 == 0]
    bad, _, _ = upload(ak, np.array([0] * 2000 + [3000], dtype=np.int64))
    assert "out of bounds" in ak.error("[pdarray]", {"array": mine, "idx": bad})


def test_reductions_across_ranks(ak):
    """Extremes and order breaks on the last rank, ties across ranks."""
    arr = np.arange(9000, dtype=np.int64)
    arr[8999], arr[10], arr[6000] = -5, 10**12, 10**12
    name, _, _ = upload(ak, arr)
    assert ak.ok("argmaxAll<int64,1>", {"x": name}) == "int64 10"
    assert ak.ok("argminAll<int64,1>", {"x": name}) == "int64 8999"
    assert ak.ok("minAll<int64,1>", {"x": name}) == "int64 -5"
    assert ak.ok("sumAll<int64,1>", {"x": name, "skipNan": False}) == f"int64 {int(arr.sum())}"
    assert ak.ok("isSortedAll<int64,1>", {"x": name}) == "bool false"
    s, _, _ = upload(ak, np.arange(9000, dtype=np.int64))
    assert ak.ok("isSortedAll<int64,1>", {"x": s}) == "bool true"
    f, _, _ = upload(ak, np.concatenate([np.ones(5000), [np.nan], np.ones(10)]))
    assert ak.ok("maxAll<float64,1>", {"x": f}) == "float64 nan"


def test_strings_among_keys_and_without_offsets(ak, single_ak, akd):
    """unique of a Strings key beside a pdarray key, and Strings written without their
    offsets (one file and per locale): the same as one daemon."""
    words = np.random.default_rng(8).choice(["x", "", "yy", "x\u00e9", "ab"], 1501).tolist()
    nums = np.arange(1501, dtype=np.int64) % 4

    def run(c, data_dir):
        s = put_strings(c, words)
        t, _, _ = upload(c, nums)
        parts = c.ok("unique", {"returnGroupStr": True, "assumeSortedStr": False, "nstr": 2,
                                "keynames": [s, t], "keytypes": ["Strings", "pdarray"]}).split("+")
        sizes = [int(p.split()[3]) for p in parts]
        got = [download(c, created_name(p), "int64", k).tolist() for p, k in zip(parts, sizes)]
        uki = got.pop()  # the first row of each group, which the client gathers the keys with
        got += [[words[i] for i in uki], nums[uki].tolist()]
        files = {}
        for fmt in (0, 1):
            c.ok("tohdf", {"values": s, "dset": "s", "write_mode": 0, "save_offsets": False,
                           "objType": "strings", "file_format": fmt,
                           "filename": str(data_dir / f"nooff{fmt}")})
            for path in sorted(data_dir.glob(f"nooff{fmt}*")):
                with h5py.File(path, "r") as f:
                    assert "segments" not in f["s"]
                    files[path.name] = f["s/values"][()].tobytes()
        return got, files

    got, files = run(ak, akd.data_dir)
    assert (got, files) == run(single_ak, single_ak.data_dir)
    pairs = sorted(set(zip([w.encode() for w in words], nums.tolist())))
    assert got[2] == [p[0].decode() for p in pairs] and got[3] == [p[1] for p in pairs]
    assert files["nooff0"] == b"".join(w.encode() + b"\0" for w in words)
    assert b"".join(v for k, v in sorted(files.items()) if k != "nooff0") == files["nooff0"]
    assert ak.ok("note", {"message": "still here"}) == "noted"


def strings_held(c, name):
    """A Strings' offsets and bytes as the daemon answers them, byte for byte."""
    return (c.raw("segStr-tondarray", {"obj": name, "comp": "offsets"})[0],
            c.raw("segStr-tondarray", {"obj": name, "comp": "values"})[0])


def strings_by_locale(c, name, data_dir, tag):
    """Each locale's strings as a per-locale tohdf writes them: how they are distributed."""
    c.ok("tohdf", {"values": name, "dset": "s", "write_mode": 0, "save_offsets": True,
                   "objType": "strings", "file_format": 1, "filename": str(data_dir / tag)})
    out = []
    for path in sorted(data_dir.glob(f"{tag}_LOCALE*")):
        with h5py.File(path, "r") as f:
            out.append((f["s/segments"][()].tolist(), f["s/values"][()].tobytes()))
    return out


def without_names(msg):
    """The reply with its names left out, once they are seen to take Arkouda's form."""
    made = r"created (\S+)( \w+ \d+ 1 )"  # (not "created bytes.size N")
    names = [m[0] for m in re.findall(made, msg)]
    assert names and all(re.match(r"^id_[0-9A-Za-z]{7}_\d+$", n) for n in names), msg
    return re.sub(made, r"created NAME\2", msg)


LONG = "é" * 40_000 + "x"  # 80001 bytes: longer than 64 KiB
CONCAT_PARTS = {
    # rows of several parts land on other ranks' locales, strings straddling shard bounds
    "several": [[f"w{i}" * (i % 7) for i in range(1001)], ["", "a", "Grüße"] * 5,
                [str(i) for i in range(333)], ["z" * (i % 50) for i in range(2999)]],
    "empty_parts": [[], ["a", "bb"], [], ["", "", ""], []],
    "empty_strings": [[""] * 17, [""], [""] * 1000],
    "unicode": [["日本語", "Ελληνικά", "😀" * 3, ""] * 101, ["ÿ" * 9] * 7],
    "long": [[LONG, "short", LONG[::-1]], ["m" * 70_000] * 3, ["tail"]],
    "one_part": [[f"only{i}" for i in range(777)]],
    "no_parts": [],
}


@pytest.mark.parametrize("case", list(CONCAT_PARTS))
def test_concatenate_strings_matches_one_rank(ak, single_ak, akd, case):
    """concatenateStr at several ranks: every rank's strings placed straight into the block
    distribution, the same object (reply, bytes, each locale's strings) as one daemon of the
    same total locales makes, and what Python's concatenation gives."""
    parts = CONCAT_PARTS[case]

    def run(c, data_dir):
        names = [put_strings(c, p) for p in parts]
        msg = c.ok("concatenateStr", {"objType": "Strings", "names": names, "mode": "append"})
        name = created_name(msg)
        return (without_names(msg), strings_held(c, name), get_strings(c, name),
                strings_by_locale(c, name, data_dir, f"cat_{case}"))

    got = run(ak, akd.data_dir)
    assert got == run(single_ak, single_ak.data_dir)
    assert got[2] == [s for p in parts for s in p]


def test_concatenate_strings_errors(ak):
    words = put_strings(ak, ["a", "b"])
    nums, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    msg = ak.error("concatenateStr", {"objType": "Strings", "names": [words, nums],
                                      "mode": "append"})
    assert "is not Strings" in msg, msg
    assert "nope" in ak.error("concatenateStr", {"objType": "Strings", "names": [words, "nope"],
                                                 "mode": "append"})
    assert ak.ok("note", {"message": "still here"}) == "noted"


SPLIT_WORDS = ([",lead", "trail,", ",,", ",", "", "no pattern here", "a,b,,c,d", ",x,,y,",
                "é,ü,日本,😀", "ab,,ab日本", "one,two"] * 97 +
               ["ab" * 30 + "," + "c" * 70_000 + ",,", "".join(f"{i}," for i in range(500))] +
               ["x,y"] * 301)


@pytest.mark.parametrize("pattern", [",", ",,", "日本", "ab"])
@pytest.mark.parametrize("max_", [0, 1, 2])
@pytest.mark.parametrize("segs", [True, False], ids=["segs", "nosegs"])
def test_split_matches_one_rank(ak, single_ak, akd, pattern, max_, segs):
    """segmentedSplit at several ranks: each rank splits its own strings, the pieces placed
    in the block distribution, each string's first piece numbered across ranks; the same
    replies, bytes and layout as one daemon, and Python's str.split."""

    def run(c, data_dir):
        name = put_strings(c, SPLIT_WORDS)
        msg = c.ok("segmentedSplit", {"parent_name": name, "objtype": "Matcher", "max": max_,
                                      "return_segs": segs, "pattern": pattern})
        pieces = created_name(msg)
        out = [without_names(msg), strings_held(c, pieces), get_strings(c, pieces)]
        if segs:
            first = msg.rsplit("+", 1)[1]
            out.append(download(c, created_name(first), "int64", len(SPLIT_WORDS)).tolist())
        if pattern == "," and max_ == 0:  # the layout over locales, once
            out.append(strings_by_locale(c, pieces, data_dir, f"split_{segs}"))
        return out

    got = run(ak, akd.data_dir)
    assert got == run(single_ak, single_ak.data_dir)
    want, first = [], []
    for w in SPLIT_WORDS:
        first.append(len(want))
        want += w.split(pattern, max_ if max_ else -1)
    assert got[2] == want
    if segs:
        assert got[3] == first


def test_split_of_nothing_and_errors(ak, single_ak):
    for c in (ak, single_ak):
        empty = put_strings(c, [])
        msg = c.ok("segmentedSplit", {"parent_name": empty, "objtype": "Matcher", "max": 0,
                                      "return_segs": True, "pattern": ","})
        assert get_strings(c, created_name(msg)) == []
        assert download(c, created_name(msg.rsplit("+", 1)[1]), "int64", 0).size == 0
    words = put_strings(ak, ["a,b"])
    assert "regular expressions" in ak.error("segmentedSplit", {
        "parent_name": words, "objtype": "Matcher", "max": 0, "return_segs": True,
        "pattern": "a|b"})
    nums, _, _ = upload(ak, np.arange(3, dtype=np.int64))
    assert "not strings" in ak.error("segmentedSplit", {
        "parent_name": nums, "objtype": "Matcher", "max": 0, "return_segs": True,
        "pattern": ","})
    assert ak.ok("note", {"message": "still here"}) == "noted"


def arkouda_at_two_ranks(max_memory):
    """A daemon of 2 ranks x 2 locales serving Arkouda's dialect within --max-memory, and a
    client of it (skipped without MPI)."""
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=2, locales=2, arkouda=True, max_memory=max_memory)
    return d, Ak(d.ak_endpoint)


def test_strings_results_within_max_memory():
    """concatenateStr and segmentedSplit whose results (and the scratch that moves them
    between ranks) do not fit --max-memory: resource_limit, nothing published, every
    rank's memory given back (the whole budget can be taken after), the daemon up."""
    d, c = arkouda_at_two_ranks("64M")
    try:
        words = ["a,bc," * 20 + str(i) for i in range(60_000)]  # 6 MB of bytes
        s = put_strings(c, words)
        commas = put_strings(c, ["," * 199] * 60_000)  # 12 M pieces: 96 MB of offsets
        used = call_ok(d.endpoint, "getconfig")[0]["memory_used"]
        before = symbols(c)
        for cmd, params in (
                ("concatenateStr", {"objType": "Strings", "names": [s] * 20, "mode": "append"}),
                ("segmentedSplit", {"parent_name": commas, "objtype": "Matcher", "max": 0,
                                    "return_segs": True, "pattern": ","})):
            for _ in range(2):  # the same again: what the first took was given back
                msg = c.error(cmd, params)
                assert "--max-memory" in msg, msg
                assert call_ok(d.endpoint, "getconfig")[0]["memory_used"] == used
                assert symbols(c) == before
        # every rank's budget is whole again: an array of nearly all of it fits
        free = 64 * 2**20 - used
        big, _, _ = c.created("create<int64,1>", {"shape": str(2 * (free - 2**20) // 8)})
        c.ok("delete", {"name": big})
        msg = c.ok("concatenateStr", {"objType": "Strings", "names": [s, s], "mode": "append"})
        assert get_strings(c, created_name(msg)) == words * 2
        msg = c.ok("segmentedSplit", {"parent_name": s, "objtype": "Matcher", "max": 2,
                                      "return_segs": False, "pattern": ","})
        assert get_strings(c, created_name(msg)) == [p for w in words for p in w.split(",", 2)]
    finally:
        c.close()
        d.cleanup()


def symbols(c):
    return {o["name"] for o in json.loads(c.ok("info", {"names": "__AllSymbols__"}))}
