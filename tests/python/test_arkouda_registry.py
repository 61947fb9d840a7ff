"""Arkouda's registry on the Arkouda endpoint (../shared/SERVICE.md §2): register, attach,
list_registry and unregister of every objType Arkouda's client registers, replayed as the
client (release 2026.07.15) sends them, at one rank and at two, with users. Each attach reply
is parsed as the client parses it: the assertions in `parse` below follow the client's
arkouda/numpy/util.py attach() and the from_return_msg of each class it names."""
import json
import re

import numpy as np
import pytest

from daemons import MPIRUN, Daemon, mpi_build
from test_arkouda_wire import Ak, encode_ak_strings, upload
from wire import ok, send

TOKENS = """\
tok-alice write user=alice groups=physics
tok-bob write user=bob groups=physics
tok-carol write user=carol
tok-root admin user=root
"""

# arkouda/numpy/pdarrayclass.py create_pdarray: "created NAME DTYPE SIZE NDIM SHAPE ITEMSIZE"
CREATED = re.compile(r"^created (\S+) (\w+) (\d+) 1 \[(\d+)\] (\d+)$")


@pytest.fixture(scope="module", params=[1, 2], ids=["1rank", "2ranks"])
def svc(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("akreg") / "tokens"
    path.write_text(TOKENS)
    ranks = request.param if request.param > 1 else None
    if ranks and (MPIRUN is None or not mpi_build()):
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    d = Daemon(locales=2, ranks=ranks, token="tok-root", token_file=path, arkouda=True)
    try:
        yield d
        assert ok(send(d, "ping"))["pong"]
    finally:
        d.cleanup()


@pytest.fixture
def users(svc):
    cs = {u: Ak(svc.ak_endpoint, token=f"tok-{u}", user=u) for u in ("alice", "bob", "carol")}
    yield cs
    for c in cs.values():
        c.close()


# ---- the client's side: what it sends, how it parses ----

def arr(ak, values, dtype=np.int64):
    return upload(ak, np.asarray(values, dtype=dtype))[0]


def strs(ak, values):
    data = encode_ak_strings(values)
    return ak.ok("arraySegString<uint8>", {"size": len(data)}, payload=data).split()[1]


def cat_parts(ak, codes, cats, na, grouping=None):
    """A Categorical's parts as the client holds them (the NA code a one-element array)."""
    parts = {"codes": arr(ak, codes), "categories": strs(ak, cats), "NA_codes": arr(ak, [na])}
    if grouping:
        parts["permutation"], parts["segments"] = arr(ak, grouping[0]), arr(ak, grouping[1])
    return parts


def pdarray_of(ak, text):
    """create_pdarray, then the values (tondarray)."""
    m = CREATED.match(text)
    assert m, text
    name, dtype = m.group(1), m.group(2)
    if dtype == "bigint":  # its values come limb by limb (bigint_to_uint_list)
        limbs = json.loads(ak.ok("bigint_to_uint_list", {"array": name}))
        values = [pdarray_of(ak, t) for t in limbs]
        return [sum(int(v[i]) << (64 * k) for k, v in enumerate(values))
                for i in range(int(m.group(3)))]
    frames = ak.raw(f"tondarray<{dtype},1>", {"array": name})
    assert len(frames) == 1
    return np.frombuffer(frames[0], dtype=dtype).tolist()


def strings_of(ak, text):
    """Strings.from_return_msg: "created ... 1+created bytes.size N" (arkouda/numpy/strings.py)."""
    head, nbytes = text.split("+")
    assert CREATED.match(head) and head.split()[2] == "str", text
    assert re.fullmatch(r"created bytes\.size \d+", nbytes), text
    name = head.split()[1]
    off = np.frombuffer(ak.raw("segStr-tondarray", {"obj": name, "comp": "offsets"})[0],
                        dtype=np.int64)
    val = ak.raw("segStr-tondarray", {"obj": name, "comp": "values"})[0]
    assert len(val) == int(nbytes.split()[2])
    ends = list(off[1:]) + [len(val)]
    return [val[s:e - 1].decode() for s, e in zip(off, ends)]


def typed(ak, text, allowed):
    """"TYPE+|+create", TYPE as the client compares it (upper case)."""
    typ, create = text.split("+|+", 1)
    assert typ in allowed, text
    return parse(ak, typ, create)


def parse(ak, objtype, create):
    """What the client builds of an attach reply, as plain values."""
    t = objtype.lower()
    if t in ("pdarray", "datetime", "timedelta", "ipv4"):
        return pdarray_of(ak, create)
    if t == "strings":
        return strings_of(ak, create)
    eles = json.loads(create)
    if t == "segarray":  # arkouda/numpy/segarray.py
        values = (strings_of(ak, eles["values"]) if eles["values"].split()[2] == "str"
                  else pdarray_of(ak, eles["values"]))
        return {"segments": pdarray_of(ak, eles["segments"]), "values": values}
    if t == "categorical":  # arkouda/pandas/categorical.py: perm and segments both or neither
        assert ("permutation" in eles) == ("segments" in eles)
        out = {"codes": pdarray_of(ak, eles["codes"]),
               "categories": strings_of(ak, eles["categories"]),
               "_akNAcode": pdarray_of(ak, eles["_akNAcode"])}
        if "segments" in eles:
            out["permutation"] = pdarray_of(ak, eles["permutation"])
            out["segments"] = pdarray_of(ak, eles["segments"])
        return out
    if t == "groupby":  # arkouda/pandas/groupbyclass.py: other keys sorted, TYPE+|+create
        out = {k: pdarray_of(ak, eles[k]) for k in ("permutation", "segments", "uki")}
        out["keys"] = [typed(ak, eles[k], ("PDARRAY", "STRINGS", "CATEGORICAL"))
                       for k in sorted(eles) if k not in ("permutation", "segments", "uki")]
        return out
    if t in ("index", "multiindex"):  # arkouda/pandas/index.py: a list of type+|+create
        assert isinstance(eles, list) and eles
        return [typed(ak, d, ("PDARRAY", "STRINGS", "CATEGORICAL")) for d in eles]
    if t == "dataframe":  # arkouda/pandas/dataframe.py: "index" is the index, STRINGS or not
        return {k: typed(ak, v, ("PDARRAY", "STRINGS") if k.lower() == "index" else
                         ("PDARRAY", "STRINGS", "IPV4", "DATETIME", "TIMEDELTA", "CATEGORICAL",
                          "SEGARRAY", "BITVECTOR"))
                for k, v in eles.items()}
    if t == "series":  # arkouda/pandas/series.py: "value" typed, "index" an Index's text
        return {"value": typed(ak, eles["value"], ("PDARRAY", "STRINGS", "CATEGORICAL")),
                "index": parse(ak, "index", eles["index"])}
    if t == "bitvector":  # arkouda/client_dtypes.py: width as given, reverse as JSON text
        # Arkouda's server gives both as strings ("64", "false")
        assert isinstance(eles["width"], str) and eles["reverse"].lower() in ("true", "false")
        return {"values": pdarray_of(ak, eles["values"]), "width": int(eles["width"]),
                "reverse": json.loads(eles["reverse"].lower())}
    raise AssertionError(f"attach answered an objType the client does not know: {objtype}")


# the client's classes' objType names (util.py compares them lower case)
CLIENT_TYPES = {"pdarray", "strings", "datetime", "timedelta", "ipv4", "segarray", "dataframe",
                "groupby", "categorical", "index", "multiindex", "series", "bitvector"}


def attach(ak, name):
    reply = json.loads(ak.ok("attach", {"name": name}))
    assert set(reply) == {"objType", "create"}
    assert reply["objType"].lower() in CLIENT_TYPES
    return reply["objType"], parse(ak, reply["objType"], reply["create"])


def registry(ak):
    """arkouda/core/infoclass.py list_registry(detailed=True)."""
    data = json.loads(ak.ok("list_registry"))
    objs = json.loads(data["Objects"]) if data["Objects"] != "" else []
    types = json.loads(data["Object_Types"]) if data["Object_Types"] != "" else []
    return list(zip(objs, types)), json.loads(data["Components"])


def symbols(ak):
    return sorted(i["name"] for i in json.loads(ak.ok("info", {"names": "__AllSymbols__"})))


# ---- what the client sends to register each objType, and what attach gives back ----

def reg_pdarray(ak):
    return {"objType": "pdarray", "array": arr(ak, [5, 6, 7])}, "PDARRAY", [5, 6, 7]


def reg_bigint(ak):
    big = 2**64 + 5
    made = ak.ok("big_int_creation", {"arrays": [arr(ak, [1, 0], np.uint64),
                                                 arr(ak, [5, 9], np.uint64)],
                                      "num_arrays": 2, "shape": ["2"], "max_bits": -1})
    name = CREATED.match(made).group(1)
    assert made.split()[2] == "bigint"
    return {"objType": "pdarray", "array": name}, "PDARRAY", [big, 9]


def reg_strings(ak):
    return {"objType": "Strings", "array": strs(ak, ["x", "", "yz"])}, "STRINGS", ["x", "", "yz"]


def reg_datetime(ak):
    # the client's Datetime wraps an int64 array it made: not tagged until registered
    return ({"objType": "Datetime", "array": arr(ak, [10**18, 2 * 10**18])}, "DATETIME",
            [10**18, 2 * 10**18])


def reg_timedelta(ak):
    return {"objType": "Timedelta", "array": arr(ak, [1, 2, 3])}, "TIMEDELTA", [1, 2, 3]


def reg_ipv4(ak):
    return ({"objType": "IPv4", "array": arr(ak, [3232235777], np.uint64)}, "IPV4",
            [3232235777])


def reg_segarray(ak):  # segarray.py register
    vals = strs(ak, ["a", "b", "c"])
    return ({"objType": "SegArray", "segments": arr(ak, [0, 1, 1]), "values": vals,
             "val_type": "Strings"}, "SEGARRAY",
            {"segments": [0, 1, 1], "values": ["a", "b", "c"]})


def reg_categorical(ak):  # categorical.py register: "" for a grouping it lacks
    p = cat_parts(ak, [1, 0, 1, 2], ["a", "b", "N/A"], 2)
    return ({"objType": "Categorical", "codes": p["codes"], "categories": p["categories"],
             "_akNAcode": p["NA_codes"], "segments": "", "permutation": ""}, "CATEGORICAL",
            {"codes": [1, 0, 1, 2], "categories": ["a", "b", "N/A"], "_akNAcode": [2]})


def reg_categorical_grouped(ak):
    p = cat_parts(ak, [1, 0, 1], ["x", "y", "N/A"], 2, ([1, 0, 2], [0, 1]))
    return ({"objType": "Categorical", "codes": p["codes"], "categories": p["categories"],
             "_akNAcode": p["NA_codes"], "segments": p["segments"],
             "permutation": p["permutation"]}, "CATEGORICAL",
            {"codes": [1, 0, 1], "categories": ["x", "y", "N/A"], "_akNAcode": [2],
             "permutation": [1, 0, 2], "segments": [0, 1]})


def reg_groupby(ak):  # groupbyclass.py register: a pdarray key and a Categorical key
    keys = [3, 1, 3, 2]
    key = arr(ak, keys)
    p = cat_parts(ak, [0, 1, 0, 1], ["u", "v", "N/A"], 2)
    perm = [1, 3, 0, 2]
    return ({"objType": "GroupBy", "segments": arr(ak, [0, 1, 2]), "permutation": arr(ak, perm),
             "uki": arr(ak, [1, 3, 0]), "num_keys": 2,
             "keys": [key, json.dumps(p)], "key_objTypes": ["pdarray", "Categorical"]},
            "GROUPBY",
            {"permutation": perm, "segments": [0, 1, 2], "uki": [1, 3, 0],
             "keys": [keys, {"codes": [0, 1, 0, 1], "categories": ["u", "v", "N/A"],
                             "_akNAcode": [2]}]})


def reg_index(ak):  # index.py Index.register
    return ({"objType": "Index", "num_idxs": 1, "idx_names": [strs(ak, ["r0", "r1"])],
             "idx_types": ["Strings"]}, "INDEX", [["r0", "r1"]])


def reg_multiindex(ak):  # index.py MultiIndex.register
    p = cat_parts(ak, [0, 0, 1], ["k", "N/A"], 1)
    return ({"objType": "MultiIndex", "num_idxs": 2,
             "idx_names": [arr(ak, [7, 8, 9]), json.dumps(p)],
             "idx_types": ["pdarray", "Categorical"]}, "MULTIINDEX",
            [[7, 8, 9], {"codes": [0, 0, 1], "categories": ["k", "N/A"], "_akNAcode": [1]}])


def reg_series(ak):  # series.py register
    return ({"objType": "Series", "num_idxs": 1, "idx_names": [strs(ak, ["i", "j"])],
             "idx_types": ["Strings"], "values": arr(ak, [1.5, 2.5], np.float64),
             "val_type": "pdarray"}, "SERIES", {"value": [1.5, 2.5], "index": [["i", "j"]]})


def reg_series_categorical(ak):
    p = cat_parts(ak, [1, 0], ["lo", "hi", "N/A"], 2)
    return ({"objType": "Series", "num_idxs": 1, "idx_names": [arr(ak, [4, 5])],
             "idx_types": ["pdarray"], "values": json.dumps(p), "val_type": "Categorical"},
            "SERIES", {"value": {"codes": [1, 0], "categories": ["lo", "hi", "N/A"],
                                 "_akNAcode": [2]}, "index": [[4, 5]]})


def reg_bitvector(ak):  # client_dtypes.py BitVector.register (Fields registers as one)
    return ({"objType": "BitVector", "values": arr(ak, [5, 3], np.uint64), "width": 4,
             "reverse": True}, "BITVECTOR", {"values": [5, 3], "width": 4, "reverse": True})


def reg_dataframe(ak):  # dataframe.py register: columns by name or as JSON of their parts
    p = cat_parts(ak, [0, 1, 0], ["a", "b", "N/A"], 2)
    sa = {"segments": arr(ak, [0, 2, 2]), "values": arr(ak, [1, 2, 3])}
    bv = {"name": arr(ak, [1, 2, 4], np.uint64), "width": 3, "reverse": False}
    cols = [arr(ak, [1, 2, 3]), strs(ak, ["p", "q", "r"]), json.dumps(p), json.dumps(sa),
            arr(ak, [1, 2, 3]), json.dumps(bv)]
    return ({"objType": "DataFrame", "idx": arr(ak, [10, 20, 30]), "num_cols": 6,
             "column_names": ["n", "s", "c", "sa", "when", "flags"], "columns": cols,
             "col_objTypes": ["pdarray", "Strings", "Categorical", "SegArray", "Datetime",
                              "BitVector"]},
            "DATAFRAME",
            {"n": [1, 2, 3], "s": ["p", "q", "r"],
             "c": {"codes": [0, 1, 0], "categories": ["a", "b", "N/A"], "_akNAcode": [2]},
             "sa": {"segments": [0, 2, 2], "values": [1, 2, 3]}, "when": [1, 2, 3],
             "flags": {"values": [1, 2, 4], "width": 3, "reverse": False},
             "Index": [10, 20, 30]})


CASES = [reg_pdarray, reg_bigint, reg_strings, reg_datetime, reg_timedelta, reg_ipv4,
         reg_segarray, reg_categorical, reg_categorical_grouped, reg_groupby, reg_index,
         reg_multiindex, reg_series, reg_series_categorical, reg_bitvector, reg_dataframe]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[4:] for c in CASES])
def test_register_attach_unregister(users, case):
    """Each objType: registered from the client's temporaries; listed, its Components the
    client's names of the parts it sent (Arkouda's Registry.chpl registered_entries), which
    delete then leaves; attached and parsed as the client parses it (an array as the
    client's own); unregistered, after which the client's names go as any others."""
    alice = users["alice"]
    before = symbols(alice)
    args, objtype, want = case(alice)
    temporaries = [n for n in symbols(alice) if n not in before]
    sent = [t for t in temporaries if t in json.dumps(args)]
    name = f"reg_{case.__name__}"
    said = alice.ok("register", {"name": name, **args})
    assert said.startswith("Registered ") and said[11:].upper() in (objtype, "INDEX")
    # the client's objects send delete when they go: the parts it registered stay
    for t in temporaries:
        assert alice.ok("delete", {"name": t}) == (
            f"registered symbol, {t}, not deleted" if t in sent else f"deleted {t}")
    assert symbols(alice) == sorted(before + [name] + sent)
    objs, comps = registry(alice)
    assert (name, objtype) in objs
    assert sorted(comps) == sorted(sent)
    got_type, got = attach(alice, name)
    assert got_type == objtype
    assert got == want
    create = json.loads(alice.ok("attach", {"name": name}))["create"]
    if objtype in ("PDARRAY", "STRINGS", "DATETIME", "TIMEDELTA", "IPV4"):
        assert CREATED.match(create.split("+")[0]).group(1) == args["array"]
    else:
        # a composite's parts are named by their paths; deleting them, as the client's
        # objects do when they go, deletes nothing
        paths = set(re.findall(r"created (\S+) ", create)) - {"bytes.size"}
        paths -= set(symbols(alice))
        assert paths and all(p.startswith(name + "/") for p in paths)
        for p in paths:
            alice.ok("delete", {"name": p})
        assert attach(alice, name)[1] == got
    assert alice.ok("unregister", {"name": name}) == f"Unregistered {objtype} {name}"
    assert registry(alice) == ([], [])
    assert "no object named" in alice.error("attach", {"name": name})
    # the parts it kept, and what attach made for the client (a Categorical's _akNAcode),
    # are the client's to delete
    for n in symbols(alice):
        if n not in before:
            assert alice.ok("delete", {"name": n}) == f"deleted {n}"
    assert symbols(alice) == before


def test_registered_names_stay(users, svc):
    """Arkouda's client's registration tests (tests/symbol_table_test.py test_clear,
    test_attach_weak_binding) as it sends them: clear and delete leave a registered name and
    the array it registered; attach gives that array back; once unregistered, its delete
    deletes it."""
    alice = users["alice"]
    shared = [n for n in symbols(alice) if "/" in n]  # others' objects shared with alice
    a, b = arr(alice, [1, 2, 3]), arr(alice, [4, 5])
    assert alice.ok("register", {"name": "a_reg", "objType": "pdarray", "array": a}) == \
        "Registered PDARRAY"
    assert registry(alice) == ([("a_reg", "PDARRAY")], [a])
    for n in (a, "a_reg"):
        assert alice.ok("delete", {"name": n}) == f"registered symbol, {n}, not deleted"
    assert alice.ok("clear") == "success"
    assert symbols(alice) == sorted(["a_reg", a] + shared)
    assert b not in symbols(alice)
    assert CREATED.match(json.loads(alice.ok("attach", {"name": "a_reg"}))["create"]).group(1) == a
    assert alice.ok("unregister", {"name": "a_reg"}) == "Unregistered PDARRAY a_reg"
    assert alice.ok("delete", {"name": a}) == f"deleted {a}"
    assert "no object named" in alice.error("[int]<int64,1>", {"array": a, "idx": 0})
    # a registered name another door deleted keeps nothing any more
    c = arr(alice, [7])
    alice.ok("register", {"name": "c_reg", "objType": "pdarray", "array": c})
    ok(send(native_caller(svc, "alice"), "delete", {"names": ["c_reg"]}))
    assert alice.ok("delete", {"name": c}) == f"deleted {c}"
    assert symbols(alice) == shared


def native_caller(svc, user):
    """A native caller of that user."""
    class Caller:
        endpoint, token = svc.endpoint, f"tok-{user}"
    return Caller


def test_two_users(users, svc):
    """Names are the caller's; another's registered objects are invisible until shared,
    then attach read-only under OWNER/NAME; each user's list_registry is their own."""
    alice, bob, carol = users["alice"], users["bob"], users["carol"]
    args, _, want = reg_dataframe(alice)
    assert alice.ok("register", {"name": "frame", **args}) == "Registered DataFrame"
    args, _, bwant = reg_segarray(bob)
    assert bob.ok("register", {"name": "frame", **args}) == "Registered SegArray"
    assert ("frame", "DATAFRAME") in registry(alice)[0]
    assert ("frame", "SEGARRAY") in registry(bob)[0]
    assert attach(bob, "frame") == ("SEGARRAY", bwant)
    for who in (bob, carol):
        assert "no object named 'alice/frame'" in who.error("attach", {"name": "alice/frame"})
    ok(send(native_caller(svc, "alice"), "share", {"names": ["frame"], "with": ["bob"]}))
    typ, got = attach(bob, "alice/frame")
    assert typ == "DATAFRAME" and got == want
    reply = json.loads(json.loads(bob.ok("attach", {"name": "alice/frame"}))["create"])
    assert CREATED.match(reply["n"].split("+|+")[1]).group(1) == "alice/frame/n"
    assert {k: v.split("+|+")[0] for k, v in reply.items()} == {
        "n": "PDARRAY", "s": "STRINGS", "c": "CATEGORICAL", "sa": "SEGARRAY", "when": "DATETIME",
        "flags": "BITVECTOR", "Index": "PDARRAY"}
    assert "no object named" in carol.error("attach", {"name": "alice/frame"})
    # read-only: bob can neither unregister nor delete alice's, nor see it in his registry
    assert "only the owner" in bob.error("unregister", {"name": "alice/frame"})
    assert "only the owner" in bob.error("delete", {"name": "alice/frame"})
    assert [o for o, _ in registry(bob)[0]].count("frame") == 1
    assert "alice/frame" not in [o for o, _ in registry(bob)[0]]
    assert bob.ok("unregister", {"name": "frame"}) == "Unregistered SEGARRAY frame"
    assert attach(alice, "frame")[1] == want
    assert alice.ok("unregister", {"name": "frame"}) == "Unregistered DATAFRAME frame"


def test_register_errors(users):
    """Bad registrations: a clear error, nothing made left behind, the daemon serving."""
    alice = users["alice"]
    a = arr(alice, [1, 2, 3])
    s = strs(alice, ["x"])
    before = symbols(alice)
    assert "ObjType Not Supported by Registry: ArrayView" in alice.error(
        "register", {"name": "r", "objType": "ArrayView", "array": a})
    assert "argument 'segments'" in alice.error(
        "register", {"name": "r", "objType": "SegArray", "values": a})
    assert "argument 'width' must be 1 to 64" in alice.error(
        "register", {"name": "r", "objType": "BitVector", "values": a, "width": 0,
                     "reverse": False})
    assert "argument 'num_keys' is 2 but 'keys' lists 1" in alice.error(
        "register", {"name": "r", "objType": "GroupBy", "segments": a, "permutation": a,
                     "uki": a, "num_keys": 2, "keys": [a], "key_objTypes": ["pdarray"]})
    assert "unique_key_idx" in alice.error(
        "register", {"name": "r", "objType": "GroupBy", "segments": arr(alice, [0, 1]),
                     "permutation": arr(alice, [0, 1, 2]), "uki": arr(alice, [0, 9]),
                     "num_keys": 1, "keys": [a], "key_objTypes": ["pdarray"]})
    assert "column 'b' is a BitVector: a JSON object" in alice.error(
        "register", {"name": "r", "objType": "DataFrame", "idx": a, "num_cols": 1,
                     "column_names": ["b"], "columns": [json.dumps({"name": a, "width": 0,
                                                                    "reverse": False})],
                     "col_objTypes": ["BitVector"]})
    sa = {"objType": "SegArray", "segments": arr(alice, [0]), "values": s}
    alice.ok("register", {"name": "sa", **sa})
    assert "argument 'idx' names a segarray" in alice.error(
        "register", {"name": "r", "objType": "DataFrame", "idx": "sa", "num_cols": 1,
                     "column_names": ["c"], "columns": [a], "col_objTypes": ["pdarray"]})
    assert "a level must be a pdarray, strings or categorical" in alice.error(
        "register", {"name": "r", "objType": "Index", "num_idxs": 1, "idx_names": ["sa"],
                     "idx_types": ["SegArray"]})
    alice.ok("unregister", {"name": "sa"})
    assert "no object named 'nope'" in alice.error(
        "register", {"name": "r", "objType": "Categorical", "codes": "nope", "categories": s,
                     "_akNAcode": a, "segments": "", "permutation": ""})
    assert "Registered PDARRAY" == alice.ok("register", {"name": "r", "objType": "pdarray",
                                                        "array": a})
    assert "already exists" in alice.error(
        "register", {"name": "r", "objType": "SegArray", "segments": arr(alice, [0]),
                     "values": a})
    alice.ok("unregister", {"name": "r"})
    # nothing the failed registrations made stays (the arrays uploaded for them aside)
    left = [n for n in symbols(alice) if n not in before]
    assert all(CREATED.match(f"created {n} int64 1 1 [1] 8") for n in left)
    assert not [n for n in left if "/" in n]
    assert registry(alice) == ([], [])
