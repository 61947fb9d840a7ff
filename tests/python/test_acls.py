"""Files for a shared service (SERVICE.md §3, §4 quota.disk): homes and shared folders,
paths relative to the caller's home or from '/', HSDS's six permissions with the default
ACLs and `.h5ark-acl` files, getacl/setacl (atomic, under the fault table), listings that
show only what the caller may read (lshdf of folders, glob, the HTTP gateway, Arkouda's
lsany and globExpansion), file owners and quota.disk; for several users and groups, through
the native endpoint, the Arkouda endpoint and the HTTP gateway, and at two ranks for the
commands that write files."""
import json
import os
import random
import types
import urllib.error
import urllib.parse
import urllib.request

import h5py
import numpy as np
import pytest

from daemons import MPIRUN, Daemon, TOOL_SLOWDOWN, free_port, mpi_build
from test_arkouda_wire import Ak
from wire import assert_alive, request

TOKENS = """\
tok-alice write user=alice groups=physics
tok-bob write user=bob groups=physics,bio
tok-carol write user=carol groups=bio
tok-dave read user=dave
tok-root admin user=root
"""
EVERY = ["read", "create", "update", "delete", "readACL", "updateACL"]


class User:
    """Native requests with one user's token."""

    def __init__(self, d, token):
        self.d, self.token = d, token

    def raw(self, cmd, frames=(), buffers=None, **args):
        hdr = {"v": 1, "id": 7, "cmd": cmd, "args": args, "token": self.token}
        if buffers is not None:
            hdr["buffers"] = buffers
        return request(self.d.endpoint, hdr, frames, timeout_ms=int(60000 * TOOL_SLOWDOWN))[0]

    def ok(self, cmd, **args):
        hdr = self.raw(cmd, **args)
        assert hdr["ok"], (cmd, args, hdr)
        return hdr["result"]

    def fails(self, cmd, code, *words, **args):
        hdr = self.raw(cmd, **args)
        assert not hdr["ok"], (cmd, args, hdr)
        assert hdr["error"]["code"] == code, (cmd, args, hdr)
        for w in words:
            assert w in hdr["error"]["message"], (cmd, args, hdr)
        return hdr["error"]["message"]

    def put(self, arr):
        data = np.ascontiguousarray(arr, dtype="<i8").tobytes()
        hdr = self.raw("put", [data], [{"name": "values", "nbytes": len(data)}],
                       objtype="pdarray", dtype="int64", shape=[len(arr)])
        assert hdr["ok"], hdr
        return hdr["result"]["object"]["name"]

    def write(self, path, arr, **kw):
        """tohdf of a new array to path (one file unless file_type says otherwise)."""
        kw.setdefault("file_type", "single")
        return self.raw("tohdf", names=[self.put(arr)], datasets=["x"], path=path, **kw)


def users_daemon(tmp_path, ranks=None, extra=(), tokens=TOKENS, **kw):
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text(tokens)
    d = Daemon(locales=2, token="tok-root", token_file=tokens_file, ranks=ranks,
               extra_args=list(extra), **kw)
    d.data_dir.mkdir(exist_ok=True)
    return d


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    d = users_daemon(tmp_path_factory.mktemp("acls"), arkouda=True)
    yield d
    d.cleanup()


@pytest.fixture
def who(svc):
    return {name: User(svc, f"tok-{name}") for name in ["alice", "bob", "carol", "dave", "root"]}


def x_of(path):
    with h5py.File(path, "r") as f:
        return f["x"][()]


# ---- homes and paths -------------------------------------------------------------------


def test_a_relative_path_lies_in_the_callers_home(svc, who):
    assert who["alice"].write("homed.h5", np.arange(5))["result"]["files"] == ["homed.h5"]
    assert list(x_of(svc.data_dir / "home/alice/homed.h5")) == list(range(5))
    # bob's "homed.h5" is his own, in his own home
    assert who["bob"].write("homed.h5", np.arange(3))["ok"]
    assert list(x_of(svc.data_dir / "home/bob/homed.h5")) == [0, 1, 2]
    got = who["alice"].ok("readhdf", paths=["homed.h5"])
    assert got["files"] == ["homed.h5"]
    # the same file from '/', named in the reply as given back from '/' is not: own files
    # are named relative to the home
    got = who["alice"].ok("readhdf", paths=["/home/alice/homed.h5"])
    assert got["files"] == ["homed.h5"]
    # confinement as before: no way out of the data directory
    who["alice"].fails("readhdf", "forbidden", "leaves the data directory",
                       paths=["../../../etc/passwd"])


def test_another_users_home_is_refused_naming_the_right_and_the_path(svc, who):
    assert who["alice"].write("private.h5", np.arange(4))["ok"]
    who["bob"].fails("readhdf", "forbidden", "read", "'/home/alice/private.h5'",
                     paths=["/home/alice/private.h5"])
    who["bob"].fails("tohdf", "forbidden", "update", "'/home/alice/private.h5'",
                     names=[who["bob"].put(np.arange(2))], path="/home/alice/private.h5",
                     file_type="single")
    who["bob"].fails("rmhdf", "forbidden", "delete", path="/home/alice/private.h5")
    who["bob"].fails("lshdf", "forbidden", "read", path="/home/alice/private.h5")
    who["bob"].fails("tohdf", "forbidden", "create", "'/home/alice/new.h5'",
                     names=[who["bob"].put(np.arange(2))], path="/home/alice/new.h5",
                     file_type="single")
    assert not (svc.data_dir / "home/alice/new.h5").exists()
    assert list(x_of(svc.data_dir / "home/alice/private.h5")) == [0, 1, 2, 3]
    # an admin reads everything
    assert who["root"].ok("readhdf", paths=["/home/alice/private.h5"])["files"] == \
        ["/home/alice/private.h5"]


def test_shared_folders_are_their_groups(svc, who):
    for g in ["physics", "bio"]:
        (svc.data_dir / "shared" / g).mkdir(parents=True, exist_ok=True)
    assert who["alice"].write("/shared/physics/run.h5", np.arange(6))["result"]["files"] == \
        ["/shared/physics/run.h5"]
    assert who["bob"].ok("readhdf", paths=["/shared/physics/run.h5"])
    assert who["bob"].write("/shared/physics/run.h5", np.arange(2))["ok"]  # update
    who["carol"].fails("readhdf", "forbidden", "read", paths=["/shared/physics/run.h5"])
    who["carol"].fails("tohdf", "forbidden", "create", names=[who["carol"].put(np.arange(2))],
                       path="/shared/physics/c.h5", file_type="single")
    # readACL for all
    acl = who["carol"].ok("getacl", path="/shared/physics")
    assert acl["default"] is True and acl["from"] is None
    assert {e["subject"] for e in acl["acl"]} == {"g:physics", "default"}
    assert who["bob"].ok("getacl", path="/shared/physics")["acl"] == acl["acl"]  # members too
    who["carol"].fails("setacl", "forbidden", "updateACL", path="/shared/physics",
                       acl=[{"subject": "carol", "read": True}])
    # a member deletes a member's file
    assert who["bob"].ok("rmhdf", path="/shared/physics/run.h5")["deleted"] == \
        ["/shared/physics/run.h5"]


def test_getacl_of_a_home_not_made_yet(tmp_path):
    """A home is made on its user's first write; until then getacl answers the defaults it
    will have (SERVICE.md §3), to whoever may read them, and makes nothing."""
    d = users_daemon(tmp_path)
    try:
        who = {u: User(d, f"tok-{u}") for u in ("alice", "bob", "dave", "root")}
        home = d.data_dir / "home" / "alice"
        mine = [{"subject": "alice", **{p: True for p in EVERY}}]
        for path in (".", "", "/home/alice", "/home/alice/"):
            got = who["alice"].ok("getacl", path=path)
            assert (got["path"], got["acl"], got["from"], got["default"]) == \
                (path, mine, None, True)
        assert who["root"].ok("getacl", path="/home/alice")["acl"] == mine
        who["bob"].fails("getacl", "forbidden", "readACL", "'/home/alice'", path="/home/alice")
        assert who["dave"].ok("getacl", path=".")["acl"] == \
            [{"subject": "dave", **{p: True for p in EVERY}}]
        who["root"].fails("getacl", "not_found", path="/home/nobody")  # no such user
        assert not home.exists()  # asking makes nothing
        assert who["alice"].write("a.h5", np.arange(2))["ok"]
        assert who["alice"].ok("getacl", path=".")["acl"] == mine  # the same once made
        assert_alive(d)
    finally:
        d.cleanup()


def test_the_rest_is_read_for_all_and_written_by_admins(svc, who):
    assert who["root"].write("/top.h5", np.arange(3))["ok"]
    assert who["alice"].ok("readhdf", paths=["/top.h5"])["files"] == ["/top.h5"]
    assert who["dave"].ok("glob", paths=["/top.h5"])["files"] == ["/top.h5"]
    who["alice"].fails("tohdf", "forbidden", "update", "'/top.h5'",
                       names=[who["alice"].put(np.arange(1))], path="/top.h5",
                       file_type="single")
    who["alice"].fails("rmhdf", "forbidden", "delete", "'/top.h5'", path="/top.h5")
    who["alice"].fails("tohdf", "forbidden", "create", names=[who["alice"].put(np.arange(1))],
                       path="/elsewhere/new.h5", file_type="single")
    assert not (svc.data_dir / "elsewhere").exists()


# ---- ACL files ---------------------------------------------------------------------------


def test_setacl_shares_a_folder_and_getacl_reads_it(svc, who):
    alice, bob, carol = who["alice"], who["bob"], who["carol"]
    assert alice.write("pub/data.h5", np.arange(7))["ok"]
    bob.fails("readhdf", "forbidden", "read", paths=["/home/alice/pub/data.h5"])
    acl = [{"subject": "alice", **{p: True for p in EVERY}},
           {"subject": "bob", "read": True, "readACL": True},
           {"subject": "g:bio", "read": True, "create": True}]
    got = alice.ok("setacl", path="pub", acl=acl)
    assert got["path"] == "pub"
    written = json.loads((svc.data_dir / "home/alice/pub/.h5ark-acl").read_text())
    assert [e["subject"] for e in written] == ["alice", "bob", "g:bio"]
    assert written[1] == {"subject": "bob", "read": True, "create": False, "update": False,
                          "delete": False, "readACL": True, "updateACL": False}
    # bob's own entry decides: read, but not create although bio may
    assert bob.ok("readhdf", paths=["/home/alice/pub/data.h5"])["files"] == \
        ["/home/alice/pub/data.h5"]
    bob.fails("tohdf", "forbidden", "create", names=[bob.put(np.arange(1))],
              path="/home/alice/pub/b.h5", file_type="single")
    # carol has no entry of her own: bio's decides
    assert carol.ok("readhdf", paths=["/home/alice/pub/data.h5"])
    assert carol.write("/home/alice/pub/c.h5", np.arange(2))["ok"]
    carol.fails("tohdf", "forbidden", "update", names=[carol.put(np.arange(1))],
                path="/home/alice/pub/c.h5", file_type="single")
    # the ACL holds below the folder, and the home above keeps its defaults
    assert alice.write("pub/deeper/d.h5", np.arange(1))["ok"]
    assert bob.ok("readhdf", paths=["/home/alice/pub/deeper/d.h5"])
    bob.fails("readhdf", "forbidden", "read", paths=["/home/alice/homed.h5"])
    got = bob.ok("getacl", path="/home/alice/pub/deeper")
    assert got["default"] is False and got["from"] == "/home/alice/pub"
    assert got["acl"][1]["subject"] == "bob"
    assert alice.ok("getacl", path="pub/deeper/d.h5")["from"] == "pub"
    carol.fails("getacl", "forbidden", "readACL", path="/home/alice/pub")
    # a default entry for everyone else
    alice.ok("setacl", path="pub", acl=acl + [{"subject": "default", "read": True}])
    assert who["dave"].ok("glob", paths=["/home/alice/pub/data.h5"])


def test_the_acl_file_is_never_data(svc, who):
    alice = who["alice"]
    alice.ok("setacl", path=".", acl=[{"subject": "alice", **{p: True for p in EVERY}}])
    for path in [".h5ark-acl", "/home/alice/.h5ark-acl", "x/../.h5ark-acl"]:
        alice.fails("readhdf", "forbidden", "own file", paths=[path])
        alice.fails("tohdf", "forbidden", "own file", names=[alice.put(np.arange(1))],
                    path=path, file_type="single")
        alice.fails("rmhdf", "forbidden", "own file", path=path)
    who["root"].fails("readhdf", "forbidden", "own file", paths=["/.h5ark-owners"])
    assert alice.fails("glob", "not_found", paths=[".h5ark*"])
    assert ".h5ark-acl" not in [e["name"] for e in alice.ok("lshdf", path=".")["entries"]]
    json.loads((svc.data_dir / "home/alice/.h5ark-acl").read_text())


@pytest.mark.parametrize("acl,why", [
    ("nope", "array"),
    ([{"read": True}], "subject"),
    ([{"subject": "bob", "read": "yes"}], "boolean"),
    ([{"subject": "bob", "write": True}], "unknown key 'write'"),
    ([{"subject": "bob"}, {"subject": "bob"}], "twice"),
    ([{"subject": "b o b"}], "neither a user"),
    ([{"subject": "g:"}], "neither a user"),
])
def test_a_bad_acl_is_refused_and_the_old_one_stays(svc, who, acl, why):
    alice = who["alice"]
    good = [{"subject": "alice", **{p: True for p in EVERY}}]
    alice.ok("setacl", path=".", acl=good)
    before = (svc.data_dir / "home/alice/.h5ark-acl").read_bytes()
    alice.fails("setacl", "bad_request", why, path=".", acl=acl)
    assert (svc.data_dir / "home/alice/.h5ark-acl").read_bytes() == before
    alice.fails("setacl", "not_found", path="nowhere", acl=good)
    assert_alive(svc)


def test_acls_need_users(tmp_path):
    d = Daemon(locales=1)
    try:
        d.data_dir.mkdir(exist_ok=True)
        hdr = request(d.endpoint, {"v": 1, "id": 7, "cmd": "getacl", "args": {"path": "."}})[0]
        assert hdr["error"]["code"] == "bad_request" and "names none" in hdr["error"]["message"]
        # users off: paths from the data directory as before, '/' refused, a folder no file
        hdr = request(d.endpoint, {"v": 1, "id": 7, "cmd": "lshdf", "args": {"path": "/x.h5"}})[0]
        assert hdr["error"]["code"] == "forbidden" and "absolute" in hdr["error"]["message"]
        (d.data_dir / "sub").mkdir()
        (d.data_dir / "sub" / "f.h5").write_bytes(b"x")
        hdr = request(d.endpoint, {"v": 1, "id": 7, "cmd": "lshdf", "args": {"path": "sub"}})[0]
        assert hdr["error"]["code"] == "bad_request" and "directory" in hdr["error"]["message"]
    finally:
        d.cleanup()


# ---- listings ----------------------------------------------------------------------------


def test_lshdf_of_a_folder_lists_what_the_caller_may_read(svc, who):
    alice, bob = who["alice"], who["bob"]
    assert alice.write("l/one.h5", np.arange(3))["ok"]
    assert bob.write("l/two.h5", np.arange(3))["ok"]
    got = alice.ok("lshdf", path="l")["entries"]
    size = (svc.data_dir / "home/alice/l/one.h5").stat().st_size
    assert got == [{"name": "one.h5", "path": "l/one.h5", "kind": "file", "size": size}]
    top = {e["name"]: e for e in alice.ok("lshdf", path="/")["entries"]}
    assert top["home"] == {"name": "home", "path": "/home", "kind": "folder"}
    homes = [e["name"] for e in alice.ok("lshdf", path="/home")["entries"]]
    assert "alice" in homes and "bob" not in homes and "carol" not in homes
    assert "bob" in [e["name"] for e in who["root"].ok("lshdf", path="/home")["entries"]]
    bob.fails("lshdf", "forbidden", "read", "'/home/alice/l'", path="/home/alice/l")
    # a home not made yet lists as empty
    assert who["dave"].ok("lshdf", path=".")["entries"] == []


def test_globs_skip_what_the_caller_may_not_read(svc, who):
    alice, bob, carol = who["alice"], who["bob"], who["carol"]
    assert alice.write("g1.h5", np.arange(2))["ok"]
    assert bob.write("g2.h5", np.arange(2))["ok"]
    mine = alice.ok("glob", paths=["/home/*/g?.h5"])["files"]
    assert mine == ["g1.h5"]
    assert who["root"].ok("glob", paths=["/home/*/g?.h5"])["files"] == \
        ["/home/alice/g1.h5", "/home/bob/g2.h5"]
    carol.fails("glob", "not_found", paths=["/home/*/g?.h5"])
    # readhdf's patterns alike: bob's file is not read for alice
    got = alice.ok("readhdf", paths=["/home/*/g?.h5"])
    assert got["files"] == ["g1.h5"]
    # a plain name is refused, not skipped
    alice.fails("glob", "forbidden", "read", paths=["/home/bob/g2.h5"])


def test_the_gateway_lists_and_reads_as_the_tokens_user(tmp_path):
    port = free_port()
    d = users_daemon(tmp_path, extra=["--http-endpoint", f"127.0.0.1:{port}"])
    try:
        alice, bob = User(d, "tok-alice"), User(d, "tok-bob")
        assert alice.write("a.h5", np.arange(4))["ok"]
        assert bob.write("b.h5", np.arange(4))["ok"]

        def get(route, token, **params):
            url = f"http://127.0.0.1:{port}{route}?" + urllib.parse.urlencode(params)
            req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
            try:
                with urllib.request.urlopen(req, timeout=30 * TOOL_SLOWDOWN) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()

        assert get("/files/", "tok-alice") == (200, ["a.h5"])
        assert get("/files/", "tok-root")[1] == ["/home/alice/a.h5", "/home/bob/b.h5"]
        status, body = get("/meta/", "tok-alice", file="a.h5", path="/x")
        assert status == 200 and body["name"] == "x", body
        status, body = get("/meta/", "tok-alice", file="/home/bob/b.h5", path="/x")
        assert status == 403 and "read" in body, body
        status, body = get("/paths/", "tok-alice", file="/home/bob/b.h5")
        assert status == 403, body
        assert get("/paths/", "tok-bob", file="b.h5")[0] == 200
    finally:
        d.cleanup()


def test_arkouda_lists_and_globs_as_the_tokens_user(svc, who):
    assert who["alice"].write("ak/ak1.h5", np.arange(3))["ok"]
    assert who["bob"].write("ak/ak2.h5", np.arange(3))["ok"]
    ak = Ak(svc.ak_endpoint, token="tok-alice", user="alice")
    try:
        pattern = str(svc.data_dir / "home" / "*" / "ak" / "*.h5")
        got = json.loads(ak.ok("globExpansion", {"filenames": [pattern], "file_count": 1}))
        assert got == [str(svc.data_dir / "home/alice/ak/ak1.h5")]
        assert json.loads(ak.ok("lsany", {"filename": str(svc.data_dir / "home/alice/ak/ak1.h5"),
                                          "col_delim": ",", "read_nested": True})) == ["x"]
        msg = ak.error("lsany", {"filename": str(svc.data_dir / "home/bob/ak/ak2.h5"),
                                 "col_delim": ",", "read_nested": True})
        assert "read" in msg, msg
        # a relative name lies in the home
        assert json.loads(ak.ok("lsany", {"filename": "ak/ak1.h5", "col_delim": ",",
                                          "read_nested": True})) == ["x"]
    finally:
        ak.close()


def test_arkouda_writes_and_reads_as_the_tokens_user(svc):
    from test_arkouda_wire import download, read_all, tohdf, upload
    alice = Ak(svc.ak_endpoint, token="tok-alice", user="alice")
    bob = Ak(svc.ak_endpoint, token="tok-bob", user="bob")
    try:
        na, _, _ = upload(alice, np.arange(5, dtype=np.int64))
        # an absolute path inside the data directory, and a relative one: in the home
        tohdf(alice, svc.data_dir / "home/alice/akw", "array", "pdarray", 0, values=na)
        tohdf(alice, "akrel", "array", "pdarray", 0, values=na)
        home = svc.data_dir / "home/alice"
        assert list(home.glob("akw_LOCALE*")) and list(home.glob("akrel_LOCALE*"))
        _, items = read_all(alice, ["array"], [f"{home}/akw*"])
        name = items[0]["created"].split()[1]
        np.testing.assert_array_equal(download(alice, name, "int64", 5), np.arange(5))
        msg = bob.error("readAllHdf", {
            "strict_types": True, "dset_size": 1, "filename_size": 1, "allow_errors": False,
            "calc_string_offsets": False, "dsets": ["array"],
            "filenames": [f"{home}/akw_LOCALE0000"], "tag_data": False})
        assert "read" in msg, msg
        nb, _, _ = upload(bob, np.arange(3, dtype=np.int64))
        msg = bob.error("tohdf", {"values": nb, "dset": "array", "write_mode": 0,
                                  "filename": str(home / "bobs"), "objType": "pdarray",
                                  "file_format": 1})
        assert "create" in msg, msg
        assert not list(home.glob("bobs*"))
    finally:
        alice.close()
        bob.close()


def test_repack_and_exetera_writes_need_update(svc, who):
    alice, bob = who["alice"], who["bob"]
    assert alice.write("rp.h5", np.arange(50))["ok"]
    bob.fails("repack", "forbidden", "update", "'/home/alice/rp.h5'", path="/home/alice/rp.h5")
    assert alice.ok("repack", path="rp.h5")["files"] == ["rp.h5"]
    part = alice.put(np.arange(4))
    assert alice.ok("writepart", path="ex.h5", field="df/x", name=part)["rows"] == 4
    bob.fails("writepart", "forbidden", "update", path="/home/alice/ex.h5", field="df/x",
              name=bob.put(np.arange(4)))
    bob.fails("complete", "forbidden", "update", path="/home/alice/ex.h5", field="df/x")
    assert alice.ok("complete", path="ex.h5", field="df/x")["rows"] == 4
    rec = owners(svc)
    assert ("alice", "home/alice/ex.h5") in rec and ("alice", "home/alice/rp.h5") in rec


# ---- owners and quota.disk ---------------------------------------------------------------


def owners(d):
    """The owners' record replayed: its whole lines in order, "USER\tPATH[\tPATH...]", a
    later line overriding, USER "" for no one; a torn tail skipped."""
    p = d.data_dir / ".h5ark-owners"
    text = p.read_bytes().decode() if p.exists() else ""
    held = {}
    for line in text[:text.rfind("\n") + 1].splitlines():
        user, *paths = line.split("\t")
        for path in filter(None, paths):
            held[path] = user
    return sorted((user, path) for path, user in held.items() if user)


def test_files_made_through_the_daemon_have_owners(svc, who):
    (svc.data_dir / "home/carol").mkdir(parents=True, exist_ok=True)
    (svc.data_dir / "home/carol/old.h5").write_bytes(b"present before")
    assert who["carol"].write("made.h5", np.arange(2))["ok"]
    rec = owners(svc)
    assert ("carol", "home/carol/made.h5") in rec
    assert not any(p == "home/carol/old.h5" for _, p in rec)
    # an update keeps the owner; a delete forgets the file
    assert who["carol"].write("made.h5", np.arange(5))["ok"]
    assert ("carol", "home/carol/made.h5") in owners(svc)
    who["carol"].ok("rmhdf", path="made.h5")
    assert not any(p == "home/carol/made.h5" for _, p in owners(svc))


QUOTA_TOKENS = """\
tok-alice write user=alice quota.disk=60K
tok-bob write user=bob
tok-root admin user=root
"""


@pytest.mark.parametrize("ranks", [None, 2], ids=["one_rank", "two_ranks"])
def test_quota_disk_is_checked_before_writing(tmp_path, ranks):
    if ranks and (MPIRUN is None or not mpi_build()):
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    d = users_daemon(tmp_path, ranks=ranks, tokens=QUOTA_TOKENS)
    try:
        alice = User(d, "tok-alice")
        big = np.arange(4000)  # 32,000 bytes of int64
        assert alice.write("q1.h5", big, file_type="distribute")["ok"]
        used = sum(p.stat().st_size for p in (d.data_dir / "home/alice").glob("q1*"))
        assert 32000 <= used < 60 * 1024
        msg = alice.fails("tohdf", "resource_limit", "quota.disk", str(61440),
                          names=[alice.put(big)], path="q2.h5", file_type="distribute")
        assert str(used) in msg, msg
        assert not list((d.data_dir / "home/alice").glob("q2*"))
        # rewriting its own file gives its bytes back first
        assert alice.write("q1.h5", big, file_type="distribute")["ok"]
        # a delete gives the bytes back: exact afterwards
        alice.ok("rmhdf", path="q1.h5")
        assert alice.write("q2.h5", big, file_type="distribute")["ok"]
        # ExeTera parts count too
        alice.fails("writepart", "resource_limit", "quota.disk", path="parts.h5",
                    field="df/x", name=alice.put(big))
        # another user's files count for no one else
        assert User(d, "tok-bob").write("b.h5", np.arange(20000))["ok"]
        assert alice.write("small.h5", np.arange(10))["ok"]
        assert_alive(d)
    finally:
        d.cleanup()


@pytest.mark.parametrize("ranks", [None, 2], ids=["one_rank", "two_ranks"])
def test_writes_are_checked_at_two_ranks(tmp_path, ranks):
    if ranks and (MPIRUN is None or not mpi_build()):
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    d = users_daemon(tmp_path, ranks=ranks)
    try:
        alice, bob = User(d, "tok-alice"), User(d, "tok-bob")
        got = alice.write("r.h5", np.arange(10), file_type="distribute")
        assert got["ok"], got
        files = got["result"]["files"]
        assert files == [f"r_LOCALE{i:04d}.h5" for i in range(len(files))]
        assert all((d.data_dir / "home/alice" / f).exists() for f in files)
        assert alice.ok("readhdf", paths=["r.h5"])["files"] == files
        bob.fails("tohdf", "forbidden", "update", names=[bob.put(np.arange(10))],
                  path="/home/alice/r.h5")
        bob.fails("readhdf", "forbidden", "read", paths=["/home/alice/r_LOCALE0000.h5"])
        assert owners(d) == sorted(("alice", f"home/alice/{f}") for f in files)
        assert alice.ok("rmhdf", path="r.h5")["deleted"] == files
        assert_alive(d)
    finally:
        d.cleanup()


# ---- setacl under the fault table --------------------------------------------------------


def test_setacl_leaves_the_old_acl_or_the_new(tmp_path):
    d = users_daemon(tmp_path, env={"H5ARK_FAULTS": "1"})
    try:
        alice = User(d, "tok-alice")
        old = [{"subject": "alice", **{p: True for p in EVERY}}]
        new = old + [{"subject": "bob", "read": True}]
        alice.ok("setacl", path=".", acl=old)
        path = d.data_dir / "home/alice/.h5ark-acl"
        old_text = path.read_bytes()
        alice.ok("fault")
        alice.ok("setacl", path=".", acl=new)
        new_text = path.read_bytes()
        calls = alice.ok("fault")["io_calls"]
        assert {"open", "pwrite", "fsync", "rename"} <= set(calls), calls
        for error in ["ENOSPC", "EIO"]:
            for k in range(1, len(calls) + 1):
                alice.ok("setacl", path=".", acl=old)
                alice.ok("fault", **{"class": "io", "nth": k, "error": error})
                hdr = alice.raw("setacl", path=".", acl=new)
                report = alice.ok("fault")
                what = (error, k, calls[k - 1], report["fired"], hdr)
                assert report["fired"], what
                text = path.read_bytes()
                assert text in (old_text, new_text), what
                if not hdr["ok"]:
                    assert hdr["error"]["code"] == "io_error", what
                    assert "ACL" in hdr["error"]["message"], what
                if hdr["ok"]:
                    assert text == new_text, what
                assert [p.name for p in path.parent.iterdir() if "h5ark-tmp" in p.name] == [], what
        assert_alive(d)
    finally:
        d.cleanup()


def test_owners_record_is_old_or_new_under_faults(tmp_path):
    """The owners' record (a journal a change appends to, compacted past twice the files it
    owns) under the fault table: ENOSPC and EIO at each call of a tohdf that makes a file
    and of the rmhdf that deletes it, with and without a compaction in the change: the record
    says the files' owners as before or as after, never anything else, and no temporary stays."""
    d = users_daemon(tmp_path, env={"H5ARK_FAULTS": "1"})
    try:
        alice = User(d, "tok-alice")
        rec = d.data_dir / ".h5ark-owners"
        assert alice.write("keep.h5", np.arange(3))["ok"]
        before, after = [("alice", "home/alice/keep.h5")], \
            [("alice", "home/alice/keep.h5"), ("alice", "home/alice/new.h5")]
        dead = "".join(f"alice\thome/alice/gone{i}.h5\n\thome/alice/gone{i}.h5\n"
                       for i in range(40))
        name = alice.put(np.arange(4))

        def state(made, compacting):
            """new.h5 made (and recorded) or not, and a record that compacts at its next
            change when `compacting`."""
            if (d.data_dir / "home/alice/new.h5").exists():
                alice.ok("rmhdf", path="new.h5")
            if made:
                assert alice.raw("tohdf", names=[name], datasets=["x"], path="new.h5",
                                 file_type="single")["ok"]
            rec.write_text("".join(f"{u}\t{p}\n" for u, p in (after if made else before)) +
                           (dead if compacting else ""))

        changes = {"tohdf": (False, dict(names=[name], datasets=["x"], path="new.h5",
                                          file_type="single"), before, after),
                   "rmhdf": (True, dict(path="new.h5"), after, before)}
        for cmd, (made, args, old, new) in changes.items():
            for compacting in (False, True):
                state(made, compacting)
                alice.ok("fault")
                assert alice.raw(cmd, **args)["ok"]
                calls = alice.ok("fault")["io_calls"]
                assert owners(d) == new
                if compacting:  # the change compacted the journal
                    assert rec.read_text().count("\n") == len(new), rec.read_text()
                for error in ["ENOSPC", "EIO"]:
                    for k in range(1, len(calls) + 1):
                        state(made, compacting)
                        alice.ok("fault", **{"class": "io", "nth": k, "error": error})
                        hdr = alice.raw(cmd, **args)
                        report = alice.ok("fault")
                        what = (cmd, compacting, error, k, calls[k - 1], report["fired"], hdr)
                        assert report["fired"], what
                        got = owners(d)
                        assert got in (old, new), what
                        if hdr["ok"]:
                            assert got == new, what
                        assert not [p for p in d.data_dir.iterdir() if "h5ark-tmp" in p.name], \
                            what
        assert_alive(d)
    finally:
        d.cleanup()


@pytest.mark.not_under_valgrind("the SIGKILL harness: kills, not memory")
def test_owners_record_survives_sigkill(tmp_path):
    """tohdf of new files and rmhdf of some, while the daemon is killed at random moments:
    the owners' record always says every answered creation and deletion, and a daemon
    started on it counts the user's disk usage from it exactly."""
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    data = tmp_path / "data"
    data.mkdir()
    rng = random.Random(11)
    answered, n = {}, [0]
    for trial in range(int(os.environ.get("H5ARK_CRASH_TRIALS", "5"))):
        d = Daemon(locales=1, token="tok-root", token_file=tokens, data_dir=data)
        try:
            name = User(d, "tok-alice").put(np.arange(4))

            def ask(cmd, **args):
                hdr = {"v": 1, "id": 7, "cmd": cmd, "args": args, "token": "tok-alice"}
                return request(d.endpoint, hdr, timeout_ms=int(1000 * TOOL_SLOWDOWN))[0]

            def writer(stop):
                asked = None  # the file of the request in flight: unknown if unanswered
                try:
                    while not stop.is_set():
                        n[0] += 1
                        asked = f = f"f{n[0]}.h5"
                        if ask("tohdf", names=[name], datasets=["x"], path=f,
                               file_type="single")["ok"]:
                            answered[f] = True
                        asked = f"f{n[0] - 1}.h5"
                        if n[0] % 3 == 0 and ask("rmhdf", path=asked)["ok"]:
                            answered[asked] = False
                except TimeoutError:  # the daemon was killed, or is slow: either way unknown
                    answered.pop(asked, None)

            d.kill_during(writer, rng.uniform(0.05, 0.5) * TOOL_SLOWDOWN)
        finally:
            d.cleanup()
        held = dict((p, u) for u, p in owners(types.SimpleNamespace(data_dir=data)))
        for f, made in answered.items():
            assert held.get(f"home/alice/{f}") == ("alice" if made else None), (trial, f)
    assert any(answered.values())
    d = Daemon(locales=1, token="tok-root", token_file=tokens, data_dir=data)
    try:
        held = owners(d)
        assert held and {u for u, _ in held} == {"alice"}
        disk = sum((data / p).stat().st_size for _, p in held if (data / p).exists())
        assert User(d, "tok-alice").ok("whoami")["usage"]["disk"] == disk
    finally:
        d.cleanup()


def test_the_python_client_reads_and_sets_acls(svc):
    import h5ark
    c = h5ark.Client(svc.endpoint, token="tok-carol", timeout=60 * TOOL_SLOWDOWN)
    try:
        c.setacl(".", [{"subject": "carol", **{p: True for p in EVERY}},
                       {"subject": "g:physics", "read": True}])
        got = c.getacl(".")
        assert got["from"] == "." and got["default"] is False
        assert [e["subject"] for e in got["acl"]] == ["carol", "g:physics"]
        assert got["acl"][1] == {"subject": "g:physics", "read": True, "create": False,
                                 "update": False, "delete": False, "readACL": False,
                                 "updateACL": False}
        with pytest.raises(h5ark.H5arkError) as e:
            c.getacl("/home/alice")
        assert e.value.code == "forbidden" and "readACL" in str(e.value)
    finally:
        c.close()

