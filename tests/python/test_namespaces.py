"""One object namespace per user (../shared/SERVICE.md §2, quota.memory and quota.objects of
§4): owners, OWNER/NAME, share/unshare, info/clear per user, shared objects as read-only
inputs, Arkouda's register/attach/list_registry/unregister, at one rank and at two; and a
load test of several users at once. Every user here is a token of a real token file."""
import json
import os
import threading
import types

import h5py
import numpy as np
import pytest

from daemons import MPIRUN, Daemon, mpi_build
from test_arkouda_wire import CREATED, Ak
from wire import fails, get_array, ok, put_array, put_strings, send

# alice and bob are in physics; carol in no group; root is an admin; quota holds quotas
TOKENS = """\
tok-alice write user=alice groups=physics
tok-bob write user=bob groups=physics
tok-carol write user=carol
tok-reader read user=carol
tok-root admin user=root
tok-quota write user=quota quota.memory=4096 quota.objects=3
"""
USERS = ("alice", "bob", "carol", "root", "quota")


def start(tmp_path, ranks=None, tokens=TOKENS):
    path = tmp_path / "tokens"
    path.write_text(tokens)
    if ranks:
        if MPIRUN is None or not mpi_build():
            pytest.skip("mpirun is not installed or h5arkd was built without MPI")
        return Daemon(locales=2, ranks=ranks, token="tok-root", token_file=path, arkouda=True)
    return Daemon(locales=3, token="tok-root", token_file=path, arkouda=True)


@pytest.fixture(params=[1, 2], ids=["1rank", "2ranks"])
def svc(request, tmp_path):
    """A daemon with users, at one rank and at two; {user: its caller} as `svc.as_`."""
    d = start(tmp_path, ranks=request.param if request.param > 1 else None)
    d.as_ = {u: types.SimpleNamespace(endpoint=d.endpoint, token=f"tok-{u}") for u in USERS}
    d.as_["reader"] = types.SimpleNamespace(endpoint=d.endpoint, token="tok-reader")
    try:
        yield d
        assert ok(send(d, "ping"))["pong"]
    finally:
        d.cleanup()


def names_of(info):
    return sorted((o["name"], o.get("owner")) for o in info["objects"])


def test_names_are_per_owner(svc):
    a, b = svc.as_["alice"], svc.as_["bob"]
    assert put_array(a, np.arange(10), name="x") == "x"
    assert put_array(b, np.arange(5) * 7, name="x") == "x"
    assert list(get_array(a, "x", "int64")) == list(range(10))
    assert list(get_array(b, "x", "int64")) == [0, 7, 14, 21, 28]
    desc = ok(send(a, "info", {"names": ["x"]}))["objects"][0]
    assert desc["owner"] == "alice" and desc["size"] == 10
    # a name the daemon makes is the caller's too
    made = put_array(b, np.arange(3))
    assert ok(send(b, "info", {"names": [made]}))["objects"][0]["owner"] == "bob"
    fails(send(a, "get", {"name": made}), "not_found", made)
    # the caller's own OWNER/NAME is its bare name
    assert list(get_array(a, "alice/x", "int64")) == list(range(10))
    made = ok(send(a, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [1],
                              "name": "alice/w"}, [b"\0" * 8], [{"name": "values", "nbytes": 8}]))
    assert made["object"]["name"] == "w"
    assert names_of(ok(send(a, "info"))) == [("w", "alice"), ("x", "alice")]


def test_unshared_is_not_found_exactly_as_missing(svc):
    a, b = svc.as_["alice"], svc.as_["bob"]
    put_array(a, np.arange(4), name="x")
    for name in ("alice/x", "alice/nope", "nobody/x"):
        msg = fails(send(b, "get", {"name": name}), "not_found")
        assert msg == f"no object named '{name}'"
        assert fails(send(b, "info", {"names": [name]}), "not_found") == msg
        assert fails(send(b, "delete", {"names": [name]}), "not_found") == msg
        assert fails(send(b, "share", {"names": [name], "with": ["*"]}), "not_found") == msg
    # nor can bob make alice's name
    fails(send(b, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [1],
                          "name": "alice/y"}, [b"\0" * 8], [{"name": "values", "nbytes": 8}]),
          "not_found", "alice/y")
    fails(send(a, "get", {"name": "alice/y"}), "not_found")
    assert names_of(ok(send(b, "info"))) == []


def test_share_with_user_group_and_everyone(svc):
    a, b, c = svc.as_["alice"], svc.as_["bob"], svc.as_["carol"]
    for n in ("u", "g", "e"):
        put_array(a, np.arange(3) + ord(n), name=n)
    assert ok(send(a, "share", {"names": ["u"], "with": ["bob"]})) == {"grants": {"u": ["bob"]}}
    assert ok(send(a, "share", {"names": ["g"], "with": ["g:physics"]})) == {
        "grants": {"g": ["g:physics"]}}
    assert ok(send(a, "share", {"names": ["e"], "with": ["*", "bob"]})) == {
        "grants": {"e": ["*", "bob"]}}
    for who, readable in ((b, {"u", "g", "e"}), (c, {"e"})):
        for n in ("u", "g", "e"):
            r = send(who, "get", {"name": f"alice/{n}"})
            if n in readable:
                assert list(get_array(who, f"alice/{n}", "int64")) == [ord(n), ord(n) + 1,
                                                                       ord(n) + 2]
            else:
                fails(r, "not_found")
    # info lists one's own as `x` and what is shared as `alice/x`, each with its owner
    put_array(b, np.arange(1), name="mine")
    assert names_of(ok(send(b, "info"))) == [
        ("alice/e", "alice"), ("alice/g", "alice"), ("alice/u", "alice"), ("mine", "bob")]
    assert [o["name"] for o in ok(send(b, "info"))["objects"]] == [
        "mine", "alice/e", "alice/g", "alice/u"]
    assert names_of(ok(send(c, "info"))) == [("alice/e", "alice")]
    # unshare takes it back
    assert ok(send(a, "unshare", {"names": ["e"], "with": ["*"]})) == {"grants": {"e": ["bob"]}}
    fails(send(c, "get", {"name": "alice/e"}), "not_found")
    get_array(b, "alice/e", "int64")
    # only the owner shares; bad subjects are refused before anything changes
    fails(send(b, "share", {"names": ["alice/u"], "with": ["carol"]}), "forbidden")
    fails(send(a, "share", {"names": ["u", "g"], "with": ["bad name"]}), "bad_request",
          "bad name")
    fails(send(a, "share", {"names": ["u", "nope"], "with": ["carol"]}), "not_found", "nope")
    fails(send(c, "get", {"name": "alice/u"}), "not_found")


def test_grant_is_on_the_name(svc):
    a, b = svc.as_["alice"], svc.as_["bob"]
    put_array(a, np.arange(3), name="x")
    ok(send(a, "share", {"names": ["x"], "with": ["bob"]}))
    ok(send(a, "delete", {"names": ["x"]}))
    fails(send(b, "get", {"name": "alice/x"}), "not_found")
    put_array(a, np.array([9, 9]), name="x")
    assert list(get_array(b, "alice/x", "int64")) == [9, 9]


def test_delete_and_replace_only_by_owner_or_admin(svc):
    a, b, c, root = (svc.as_[u] for u in ("alice", "bob", "carol", "root"))
    put_array(a, np.arange(3), name="x")
    ok(send(a, "share", {"names": ["x"], "with": ["bob"]}))
    fails(send(b, "delete", {"names": ["alice/x"]}), "forbidden", "alice/x")
    fails(send(c, "delete", {"names": ["alice/x"]}), "not_found", "alice/x")
    # publishing over it: forbidden for one who may read it, not_found for others
    for who, code in ((b, "forbidden"), (c, "not_found")):
        fails(send(who, "binop", {"op": "+", "a": "alice/x", "b": "alice/x",
                                  "name": "alice/x"}), code)
    # nor change it in place: fill replaces its array under its name
    fails(send(b, "fill", {"array": "alice/x", "value": 7}), "forbidden", "alice/x")
    fails(send(c, "fill", {"array": "alice/x", "value": 7}), "not_found", "alice/x")
    # an admin may delete it but never create a name in another's namespace
    fails(send(root, "binop", {"op": "+", "a": "alice/x", "b": "alice/x", "name": "alice/q"}),
          "not_found", "alice/q")
    fails(send(root, "get", {"name": "alice/q"}), "not_found")
    # a shared object is an input: bob's result is bob's
    res = ok(send(b, "binop", {"op": "+", "a": "alice/x", "b": "alice/x", "name": "y"}))
    assert res["object"]["owner"] == "bob"
    assert list(get_array(b, "y", "int64")) == [0, 2, 4]
    assert list(get_array(a, "x", "int64")) == [0, 1, 2]
    # delete is all or nothing
    put_array(b, np.arange(1), name="z")
    fails(send(b, "delete", {"names": ["z", "alice/x"]}), "forbidden")
    get_array(b, "z", "int64")
    assert ok(send(root, "delete", {"names": ["alice/x"]})) == {"deleted": ["alice/x"]}
    fails(send(a, "get", {"name": "x"}), "not_found")
    # a read token may not delete even its user's objects
    put_array(c, np.arange(1), name="cx")
    fails(send(svc.as_["reader"], "delete", {"names": ["cx"]}), "unauthorized")
    get_array(svc.as_["reader"], "cx", "int64")


def test_admin_publishes_over_anothers_name(svc):
    """SERVICE.md §2: an admin may publish over another's name; the object stays the owner's
    (owner, grants, usage and quotas), and a refused one leaves the old object whole."""
    a, b, root, q = (svc.as_[u] for u in ("alice", "bob", "root", "quota"))
    put_array(a, np.arange(3), name="x")
    ok(send(a, "share", {"names": ["x"], "with": ["bob"]}))
    # put: replaces alice's x, hers still
    res = ok(send(root, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [5],
                                "name": "alice/x"},
                  [np.arange(10, 15, dtype="<i8").tobytes()],
                  [{"name": "values", "nbytes": 40}]))
    assert (res["object"]["name"], res["object"]["owner"]) == ("alice/x", "alice")
    assert list(get_array(a, "x", "int64")) == [10, 11, 12, 13, 14]
    assert list(get_array(b, "alice/x", "int64")) == [10, 11, 12, 13, 14]  # still shared
    assert names_of(ok(send(a, "info"))) == [("x", "alice")]
    assert usage(a) == (40, 1) and usage(root) == (0, 0)
    # the replace paths: compute's output name, fill and assign in place
    ok(send(root, "binop", {"op": "*", "a": "alice/x", "b": "alice/x", "name": "alice/x"}))
    assert list(get_array(a, "x", "int64")) == [100, 121, 144, 169, 196]
    ok(send(root, "fill", {"array": "alice/x", "value": 7}))
    assert list(get_array(a, "x", "int64")) == [7] * 5
    assert usage(a) == (40, 1) and usage(root) == (0, 0)
    # the owner deletes it, and has its usage back
    ok(send(a, "delete", {"names": ["x"]}))
    assert usage(a) == (0, 0)
    # never created for another owner; another user may still not
    fails(send(root, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [1],
                             "name": "alice/x"}, [b"\0" * 8], [{"name": "values", "nbytes": 8}]),
          "not_found", "alice/x")
    put_array(b, np.arange(2), name="y")
    ok(send(b, "share", {"names": ["y"], "with": ["alice"]}))
    fails(send(a, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [1],
                          "name": "bob/y"}, [b"\0" * 8], [{"name": "values", "nbytes": 8}]),
          "forbidden", "bob/y")
    # the owner's quota.memory (4096) is the one checked, counting what the old one frees
    put_array(q, np.arange(100), name="q")  # 800 bytes
    msg = fails(send(root, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [513],
                                   "name": "quota/q"},
                     [b"\1" * 4104], [{"name": "values", "nbytes": 4104}]), "resource_limit")
    assert all(w in msg for w in ("quota.memory", "'quota'", "4104", "4096")), msg
    assert list(get_array(q, "q", "int64")) == list(range(100))  # the old one, whole
    assert usage(q) == (800, 1) and usage(root) == (0, 0)
    ok(send(root, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [512],
                          "name": "quota/q"},
            [np.arange(512, dtype="<i8").tobytes()], [{"name": "values", "nbytes": 4096}]))
    assert usage(q) == (4096, 1)
    assert list(get_array(q, "q", "int64")) == list(range(512))
    # through the Arkouda endpoint: an admin's register over bob's name
    ak = Ak(svc.ak_endpoint, token="tok-root", user="root")
    try:
        made = CREATED.match(ak.ok("arange<int64,1>", {"start": 0, "stop": 4, "step": 1}))
        assert ak.ok("register", {"name": "bob/y", "objType": "pdarray",
                                  "array": made.group(1)}) == "Registered PDARRAY"
        assert "never created" in ak.error("register", {"name": "bob/nope", "objType": "pdarray",
                                                        "array": made.group(1)})
    finally:
        ak.close()
    assert list(get_array(b, "y", "int64")) == [0, 1, 2, 3]
    assert list(get_array(a, "bob/y", "int64")) == [0, 1, 2, 3]
    assert [(o["name"], o["owner"]) for o in ok(send(b, "info"))["objects"]] == [("y", "bob")]


def test_clear_per_user_and_admin_all(svc):
    a, b, root = svc.as_["alice"], svc.as_["bob"], svc.as_["root"]
    for who in (a, b, root):
        put_array(who, np.arange(2), name="x")
        put_array(who, np.arange(2))
    assert ok(send(b, "clear")) == {"deleted": 2}
    assert names_of(ok(send(b, "info"))) == []
    assert len(ok(send(a, "info"))["objects"]) == 2
    fails(send(b, "clear", {"all": True}), "forbidden", "admin")
    assert len(ok(send(a, "info"))["objects"]) == 2
    # an admin reads everything, and clears everyone's
    assert ("alice/x", "alice") in names_of(ok(send(root, "info")))
    assert ok(send(root, "clear", {"all": True})) == {"deleted": 4}
    assert names_of(ok(send(a, "info"))) == []


def test_shared_inputs_of_every_kind_of_command(svc, tmp_path):
    a, b, c = svc.as_["alice"], svc.as_["bob"], svc.as_["carol"]
    keys = np.array([3, 1, 3, 2, 1, 3])
    put_array(a, keys, name="k")
    ok(send(a, "share", {"names": ["k"], "with": ["g:physics"]}))
    # groupby and aggregate over alice's array, by bob
    g = ok(send(b, "groupby", {"keys": ["alice/k"], "name": "g"}))["object"]
    assert g["owner"] == "bob" and g["ngroups"] == 3
    counts = ok(send(b, "aggregate", {"groupby": "g", "op": "count"}))
    assert counts
    fails(send(c, "groupby", {"keys": ["alice/k"]}), "not_found", "alice/k")
    # a composite of alice's: its components reached as alice/g2/...
    ok(send(a, "groupby", {"keys": ["k"], "name": "g2"}))
    ok(send(a, "share", {"names": ["g2"], "with": ["bob"]}))
    desc = ok(send(b, "info", {"names": ["alice/g2"]}))["objects"][0]
    assert desc["owner"] == "alice"
    assert desc["components"]["permutation"]["name"] == "alice/g2/permutation"
    perm = get_array(b, "alice/g2/permutation", "int64")
    assert list(keys[perm]) == sorted(keys)
    fails(send(c, "get", {"name": "alice/g2/permutation"}), "not_found")
    # tohdf of a shared object: bob writes alice's data into a file, checked with h5py
    files = ok(send(b, "tohdf", {"names": ["alice/k"], "datasets": ["k"], "path": "bk"}))
    written = []
    for name in sorted(files["files"]):
        with h5py.File(svc.data_dir / "home" / "bob" / name) as f:  # relative: bob's home
            written += list(f["k"][...])
    assert written == list(keys)
    # select
    s = ok(send(b, "slice", {"array": "alice/k", "start": 1, "stop": 4}))
    assert s["object"]["owner"] == "bob"
    assert list(get_array(b, s["object"]["name"], "int64")) == [1, 3, 2]
    fails(send(c, "slice", {"array": "alice/k", "start": 1, "stop": 4}), "not_found")


def usage(who):
    u = ok(send(who, "whoami"))["usage"]
    return u["memory"], u["objects"]


def test_quota_memory_exact_before_allocating(svc):
    q = svc.as_["quota"]
    assert usage(q) == (0, 0)
    put_array(q, np.arange(400), name="big")  # 3200 of 4096 bytes
    assert usage(q) == (3200, 1)
    msg = fails(send(q, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [200]},
                     [b"\0" * 1600], [{"name": "values", "nbytes": 1600}]), "resource_limit")
    assert all(w in msg for w in ("quota.memory", "3200", "1600", "4096")), msg
    assert names_of(ok(send(q, "info"))) == [("big", "quota")]  # nothing published
    # every path that makes arrays is checked: compute, groupby, readhdf, Arkouda's arange
    fails(send(q, "binop", {"op": "+", "a": "big", "b": "big"}), "resource_limit",
          "quota.memory")
    fails(send(q, "groupby", {"keys": ["big"]}), "resource_limit", "quota.memory")
    path = svc.data_dir / "home" / "quota" / "q.h5"  # "q.h5" from the user: in the home
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        f["v"] = np.arange(300)
    fails(send(q, "readhdf", {"paths": ["q.h5"], "datasets": ["v"]}), "resource_limit",
          "quota.memory")
    ak = Ak(svc.ak_endpoint, token="tok-quota")
    try:
        assert "quota.memory" in ak.error("arange<int64,1>", {"start": 0, "stop": 200, "step": 1})
    finally:
        ak.close()
    assert names_of(ok(send(q, "info"))) == [("big", "quota")]
    assert usage(q) == (3200, 1)
    # deleting gives it back, exactly
    ok(send(q, "delete", {"names": ["big"]}))
    assert usage(q) == (0, 0)
    put_array(q, np.arange(512), name="full")  # 4096: exactly the quota
    assert usage(q) == (4096, 1)
    fails(send(q, "put", {"objtype": "pdarray", "dtype": "int8", "shape": [1]},
                [b"\0"], [{"name": "values", "nbytes": 1}]), "resource_limit", "quota.memory")
    ok(send(q, "clear"))
    assert usage(q) == (0, 0)
    res = ok(send(q, "readhdf", {"paths": ["q.h5"], "datasets": ["v"]}))
    assert res["objects"]["v"]["owner"] == "quota"
    assert usage(q) == (2400, 1)
    # other users are not bound by it, nor counted in it
    put_array(svc.as_["alice"], np.arange(10000), name="a")
    assert usage(svc.as_["alice"]) == (80000, 1)
    assert usage(q) == (2400, 1)


def test_quota_objects(svc):
    q = svc.as_["quota"]
    for i in range(3):
        put_array(q, np.arange(1), name=f"o{i}")
    msg = fails(send(q, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [1]},
                     [b"\0" * 8], [{"name": "values", "nbytes": 8}]), "resource_limit")
    assert "quota.objects" in msg and "3" in msg
    assert usage(q) == (24, 3)
    ok(send(q, "delete", {"names": ["o0"]}))
    assert usage(q) == (16, 2)
    put_array(q, np.arange(1), name="o3")
    fails(send(q, "put", {"objtype": "pdarray", "dtype": "int64", "shape": [1]},
               [b"\0" * 8], [{"name": "values", "nbytes": 8}]), "resource_limit",
          "quota.objects")
    assert len(ok(send(q, "info"))["objects"]) == 3


def test_arkouda_namespaces_and_registry(svc):
    alice = Ak(svc.ak_endpoint, token="tok-alice", user="alice")
    bob = Ak(svc.ak_endpoint, token="tok-bob", user="bob")
    carol = Ak(svc.ak_endpoint, token="tok-carol", user="carol")
    try:
        made = CREATED.match(alice.ok("arange<int64,1>", {"start": 0, "stop": 5, "step": 1}))
        name = made.group(1)
        # Arkouda's names are the user's: bob does not see alice's
        assert "no object named" in bob.error("info", {"names": name})
        assert alice.ok("register", {"name": "reg", "objType": "pdarray",
                                     "array": name}) == "Registered PDARRAY"
        assert "already exists" in alice.error("register", {"name": "reg", "objType": "pdarray",
                                                            "array": name})
        reg = json.loads(alice.ok("list_registry"))
        assert json.loads(reg["Objects"]) == ["reg"]
        assert json.loads(reg["Object_Types"]) == ["PDARRAY"]
        assert json.loads(reg["Components"]) == [name]  # the client's array it registered
        att = json.loads(alice.ok("attach", {"name": "reg"}))
        assert att["objType"] == "PDARRAY"
        assert att["create"] == f"created {name} int64 5 1 [5] 8"
        # bob: not until shared, then read-only
        assert "no object named 'alice/reg'" in bob.error("attach", {"name": "alice/reg"})
        ok(send(svc.as_["alice"], "share", {"names": ["reg"], "with": ["bob"]}))
        att = json.loads(bob.ok("attach", {"name": "alice/reg"}))
        assert att["create"] == "created alice/reg int64 5 1 [5] 8"
        out = CREATED.match(bob.ok("binopvv<int64,int64,1>",
                                   {"op": "+", "a": "alice/reg", "b": "alice/reg"}))
        assert list(get_array(svc.as_["bob"], out.group(1), "int64")) == [0, 2, 4, 6, 8]
        assert "only the owner" in bob.error("delete", {"name": "alice/reg"})
        seen = {o["name"]: o["registered"] for o in json.loads(bob.ok("info", {
            "names": "__AllSymbols__"}))}
        assert seen == {"alice/reg": True, out.group(1): False}
        assert [o["name"] for o in json.loads(alice.ok("info", {
            "names": "__RegisteredSymbols__"}))] == ["reg"]
        assert "no object named" in carol.error("attach", {"name": "alice/reg"})
        assert json.loads(json.loads(bob.ok("list_registry"))["Objects"]) == []
        # unregister: the name goes, the array it came from stays
        assert "only the owner" in bob.error("unregister", {"name": "alice/reg"}) or \
            "not a registered" in bob.error("unregister", {"name": "alice/reg"})
        assert alice.ok("unregister", {"name": "reg"}) == "Unregistered PDARRAY reg"
        assert json.loads(json.loads(alice.ok("list_registry"))["Objects"]) == []
        assert "not a registered" in alice.error("unregister", {"name": name})
        assert list(get_array(svc.as_["alice"], name, "int64")) == [0, 1, 2, 3, 4]
        assert "ObjType Not Supported" in alice.error(
            "register", {"name": "df", "objType": "ArrayView", "array": name})
    finally:
        for c in (alice, bob, carol):
            c.close()


def test_users_off_as_before(tmp_path):
    """No user= in the token file: one namespace, no owner in descriptors, share refused."""
    d = start(tmp_path, tokens="tok-root write\n")
    try:
        put_array(d, np.arange(3), name="x")
        desc = ok(send(d, "info"))["objects"][0]
        assert "owner" not in desc and desc["name"] == "x"
        fails(send(d, "share", {"names": ["x"], "with": ["bob"]}), "bad_request", "users")
        fails(send(d, "get", {"name": "root/x"}), "not_found")
        assert ok(send(d, "clear", {"all": True})) == {"deleted": 1}
    finally:
        d.cleanup()


@pytest.mark.parametrize("ranks", [1, 2], ids=["1rank", "2ranks"])
def test_load_several_users_never_see_each_other(tmp_path, ranks):
    """Four users at once, each making, reading, listing and deleting objects of the same
    names with their own values: no reply ever holds another user's object."""
    users = [f"u{i}" for i in range(4)]
    d = start(tmp_path, ranks=ranks if ranks > 1 else None,
              tokens="".join(f"tok-{u} write user={u}\n" for u in users) +
              "tok-root admin user=root\n")
    errors = []

    def work(i, u):
        who = types.SimpleNamespace(endpoint=d.endpoint, token=f"tok-{u}")
        try:
            for round_ in range(60 if ranks == 1 else 25):
                vals = np.full(50, i * 1000 + round_)
                put_array(who, vals, name="x")
                put_array(who, vals + 1)
                got = get_array(who, "x", "int64")
                if not (got == i * 1000 + round_).all():
                    errors.append(f"{u} read {got[:3]} in round {round_}")
                for o in ok(send(who, "info"))["objects"]:
                    if o["owner"] != u or "/" in o["name"]:
                        errors.append(f"{u} listed {o['owner']}'s {o['name']}")
                for other in users:
                    if other != u:
                        r = send(who, "get", {"name": f"{other}/x"})
                        if r[0].get("ok"):
                            errors.append(f"{u} read {other}/x")
                ok(send(who, "clear"))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(f"{u}: {e!r}")

    try:
        threads = [threading.Thread(target=work, args=(i, u)) for i, u in enumerate(users)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert ok(send(types.SimpleNamespace(endpoint=d.endpoint, token="tok-root"),
                       "info"))["objects"] == []
    finally:
        d.cleanup()


def test_python_client_share(tmp_path):
    """The Python client's share/unshare/clear(all) as one user and another."""
    import h5ark
    d = start(tmp_path)
    try:
        with h5ark.Client(d.endpoint, token="tok-alice") as alice, \
                h5ark.Client(d.endpoint, token="tok-bob") as bob, \
                h5ark.Client(d.endpoint, token="tok-root") as root:
            x = alice.array(np.arange(4), name="x")
            assert alice.share(x, ["bob", "g:physics"]) == {"x": ["bob", "g:physics"]}
            [seen] = bob.info(["alice/x"])
            assert seen.name == "alice/x" and list(seen.to_ndarray()) == [0, 1, 2, 3]
            assert alice.unshare("x", "bob") == {"x": ["g:physics"]}
            assert alice.unshare("x", "g:physics") == {"x": []}
            with pytest.raises(h5ark.H5arkError):
                bob.info(["alice/x"])
            with pytest.raises(h5ark.H5arkError):
                bob.clear(all=True)
            assert root.clear(all=True) == 1
    finally:
        d.cleanup()


def test_cli_share(tmp_path):
    """h5ark share / unshare, the C library's h5ark_client_share, as alice for bob."""
    from test_cli import CLI, run
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"h5ark not found at {CLI}: build first or set H5ARK_CLI")
    d = start(tmp_path)
    a, b = (types.SimpleNamespace(endpoint=d.endpoint, token=f"tok-{u}") for u in ("alice", "bob"))
    tok = tmp_path / "alice.token"
    tok.write_text("tok-alice\n")
    try:
        put_array(a, np.arange(3), name="x")
        out = run("--token-file", tok, "share", "x", "--with", "bob", "--with", "g:physics",
                  endpoint=d.endpoint)
        assert out.returncode == 0 and out.stdout == "x bob,g:physics\n", out
        assert list(get_array(b, "alice/x", "int64")) == [0, 1, 2]
        out = run("--token-file", tok, "unshare", "x", "--with", "bob", "--with", "g:physics",
                  endpoint=d.endpoint)
        assert out.returncode == 0 and out.stdout == "x\n", out
        fails(send(b, "get", {"name": "alice/x"}), "not_found")
        out = run("--token-file", tok, "share", "nope", "--with", "bob", endpoint=d.endpoint)
        assert out.returncode != 0 and "not_found" in out.stderr + out.stdout, out
        out = run("--token-file", tok, "share", "x", endpoint=d.endpoint)
        assert out.returncode != 0 and "--with" in out.stderr, out
    finally:
        d.cleanup()


def test_usage_at_two_ranks_is_one_ranks(tmp_path):
    """whoami runs on rank 0: its usage.memory, usage.objects and usage.disk after the same
    work (puts, compute, groupby, a composite, files written per locale and read back) at
    two ranks equal the one-rank answer, as they go up and come back down."""
    if MPIRUN is None or not mpi_build():
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    path = tmp_path / "tokens"
    path.write_text(TOKENS)

    def work(d):
        a = types.SimpleNamespace(endpoint=d.endpoint, token="tok-alice")
        seen = []

        def note():
            u = ok(send(a, "whoami"))["usage"]
            seen.append((u["memory"], u["objects"], u["disk"]))

        put_array(a, np.arange(1001), name="x")
        put_strings(a, ["a", "bb", "ccc", "dddd", "eeeee"], name="s")
        note()
        ok(send(a, "binop", {"op": "+", "a": "x", "b": "x", "name": "y"}))
        put_array(a, np.array([3, 1, 3, 2, 1, 5, 3]), name="k")
        ok(send(a, "groupby", {"keys": ["k"], "name": "g"}))
        ok(send(a, "slice", {"array": "x", "start": 7, "stop": 700, "name": "z"}))
        note()
        ok(send(a, "tohdf", {"names": ["x", "s"], "datasets": ["x", "s"], "path": "run"}))
        ok(send(a, "tohdf", {"names": ["k"], "datasets": ["k"], "path": "one",
                             "file_type": "single"}))
        note()
        ok(send(a, "readhdf", {"paths": ["run_LOCALE*"], "datasets": ["x", "s"]}))
        note()
        ok(send(a, "delete", {"names": ["x", "g"]}))
        note()
        ok(send(a, "clear"))
        note()
        return seen

    one = Daemon(locales=4, token="tok-root", token_file=path)
    try:
        want = work(one)
    finally:
        one.cleanup()
    two = Daemon(locales=2, ranks=2, token="tok-root", token_file=path)
    try:
        got = work(two)
    finally:
        two.cleanup()
    assert got == want
    assert want[0][0] == 1001 * 8 + 5 * 8 + 20 and want[-1][:2] == (0, 0) and want[2][2] > 0
