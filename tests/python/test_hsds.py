"""The HSDS-compatible endpoint (--hsds-endpoint, shared/HSDS_API.md), over HTTP against a
real daemon on a real socket: every answer checked against what h5py reads from the same
files (made by h5py here, and Arkouda's own files from the shared fixtures), every error of
the contract, credentials, CORS, ids stable across restarts, several connections at once,
and the same operations as native commands."""
import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import threading
import time
import urllib.parse

import h5py
import numpy as np
import pytest

from conftest import SHARED_FIXTURES
from test_hostile_files import KNOWN_LIBRARY_FAILURES, base_files, mutations
from daemons import Daemon, free_port, TOOL_SLOWDOWN
from wire import ok, fails, send

WRITE, READ = "hsds-write-secret", "hsds-read-secret"
TIMEOUT = 30 * TOOL_SLOWDOWN
ID = re.compile(r"^[gdt]-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{6}-[0-9a-f]{6}$")
NUMBERS = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]


def basic(user, token):
    return "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()


class Endpoint:
    """HTTP/1.1 to the endpoint, one keep-alive connection per Endpoint."""

    def __init__(self, port, auth=basic("alice", WRITE)):
        self.port, self.auth = port, auth
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)

    def call(self, method, path, params=None, body=None, headers=None, auth=...):
        query = urllib.parse.urlencode(params or {})
        hdrs = dict(headers or {})
        auth = self.auth if auth is ... else auth
        if auth:
            hdrs["Authorization"] = auth
        self.conn.request(method, path + (f"?{query}" if query else ""), body=body,
                          headers=hdrs)
        r = self.conn.getresponse()
        return r.status, r.headers, r.read()

    def json(self, path, status=200, method="GET", **params):
        got, hdrs, body = self.call(method, path, params)
        assert got == status, (path, params, got, body)
        assert hdrs["Content-Type"] == "application/json"
        return json.loads(body)

    def error(self, path, status, method="GET", params=None, **kw):
        got, hdrs, body = self.call(method, path, params, **kw)
        assert got == status, (path, params, got, body)
        assert hdrs["Content-Type"] == "application/json"
        message = json.loads(body)["message"]
        assert message
        return message


def hsds_daemon(extra_args=(), **kwargs):
    """A Daemon(**kwargs) serving the HSDS endpoint on a free port, and that port."""
    port = free_port()
    return Daemon(extra_args=["--hsds-endpoint", f"127.0.0.1:{port}", *extra_args],
                  **kwargs), port


def known_crasher():
    """The bytes of a file the HDF5 library is known to crash on (test_hostile_files), or
    None when none can be made here."""
    for seed, base, sha, label, _ in KNOWN_LIBRARY_FAILURES:
        data = base_files().get(base)
        if data is not None and hashlib.sha256(data).hexdigest() == sha:
            return dict(mutations(base, data, seed))[label]
    return None


def make_files(data):
    with h5py.File(data / "plain.h5", "w") as f:
        f.attrs["title"] = "plain"
        f.attrs["count"] = np.int32(3)
        f.attrs["scale"] = np.arange(4.0)
        g = f.create_group("g1")
        g.attrs["note"] = np.bytes_(b"fixed")
        g.create_dataset("x", data=np.arange(12, dtype="<i4").reshape(3, 4))
        g.create_group("deeper").create_dataset("y", data=np.arange(5, dtype="u2"))
        for name in NUMBERS:
            f.create_dataset(f"num/{name}", data=np.arange(6).astype(name))
        f.create_dataset("num/be", data=np.arange(6, dtype=">f8"))
        f.create_dataset("fixed", data=np.array([b"ab", b"cde", b""], dtype="S5"))
        f.create_dataset("vlen", data=["héllo", "w", ""], dtype=h5py.string_dtype())
        f.create_dataset("vbytes", data=[b"raw", b"b"], dtype=h5py.string_dtype("ascii"))
        f.create_dataset("flags", data=np.array([True, False, True]))
        f.create_dataset("pairs", data=np.array([(1, 2.5), (3, 4.5)],
                                                dtype=[("a", "<i8"), ("b", "<f4")]))
        f.create_dataset("grow", data=np.arange(10.0), chunks=(4,), compression="gzip",
                         shuffle=True, maxshape=(None,), fillvalue=-1.0)
        f.create_dataset("scalar", data=7.5)
        f.create_dataset("empty", shape=None, dtype="f8")
        f.create_dataset("cube", data=np.arange(60, dtype="f4").reshape(3, 4, 5))
        f.create_dataset("huge", shape=(20_000_000,), dtype="f8", chunks=(1 << 20,))
        f["soft"] = h5py.SoftLink("/g1/x")
        f["ext"] = h5py.ExternalLink("other.h5", "/y")
        f["g1/again"] = f["fixed"]
        ordered = f.create_group("ordered", track_order=True)
        for name in ["zeta", "alpha", "mid"]:
            ordered.create_group(name)
    (data / "sub").mkdir()
    with h5py.File(data / "sub" / "nested.h5", "w") as f:
        f["v"] = np.arange(3)
    crasher = known_crasher()
    if crasher:
        (data / "crasher.h5").write_bytes(crasher)
    with h5py.File(data / "probe_dies.h5", "w") as f:  # H5ARK_TEST_PROBE_CRASH names it
        f["x"] = np.arange(3)
    (data / "text.h5").write_bytes(b"not an HDF5 file at all\n" * 10)
    (data / ".plain.h5.h5ark-twin").write_bytes(b"x")
    os.symlink("/etc/passwd", data / "escape.h5")
    fixture = SHARED_FIXTURES / "sample.hdf5"
    if fixture.exists():
        shutil.copy(fixture, data / "arkouda.h5")


@pytest.fixture(scope="module")
def hsds(tmp_path_factory):
    """A daemon with a write and a read token and the endpoint on a free port."""
    tmp = tmp_path_factory.mktemp("hsds")
    tokens = tmp / "tokens"
    tokens.write_text(f"{WRITE} write\n{READ} read\n")
    data = tmp / "data"
    data.mkdir()
    make_files(data)
    d, port = hsds_daemon(locales=2, token=WRITE, token_file=tokens, data_dir=data,
                          env={"H5ARK_TEST_PROBE_CRASH": "_dies"})
    yield d, port
    d.cleanup()


@pytest.fixture
def ep(hsds):
    e = Endpoint(hsds[1])
    yield e
    e.conn.close()


def root_of(ep, domain="/plain.h5"):
    return ep.json("/", domain=domain)["root"]


def walk(ep, domain, path):
    """The id of the object at path, by links from the root, as h5pyd finds it."""
    oid = root_of(ep, domain)
    for name in [p for p in path.split("/") if p]:
        link = ep.json(f"/groups/{oid}/links/{name}", domain=domain)["link"]
        oid = link["id"]
    return oid


# ---- server, credentials, CORS ---------------------------------------------------------


def test_about_and_info_need_no_token(hsds):
    e = Endpoint(hsds[1], auth=None)
    about = e.json("/about")
    assert about["hsds_version"].startswith("0.9") and about["state"] == "READY"
    assert about["username"] == "anonymous" and about["name"] == "h5ark"
    assert Endpoint(hsds[1]).json("/about")["username"] == "alice"
    info = e.json("/info")
    assert info["state"] == "READY" and info["node"] == {"type": "sn", "state": "READY"}


def test_getconfig_reports_the_endpoint(hsds):
    d, port = hsds
    assert ok(send(d, "getconfig"))["hsds_endpoint"] == f"127.0.0.1:{port}"


def test_credentials_basic_bearer_and_api_key(hsds):
    port = hsds[1]
    for auth in [basic("bob", WRITE), basic("", READ), f"Bearer {WRITE}"]:
        assert Endpoint(port, auth=auth).json("/", domain="/plain.h5")["class"] == "domain"
    e = Endpoint(port, auth=None)
    assert e.json("/", domain="/plain.h5", api_key=READ)["class"] == "domain"
    for auth in [None, basic("alice", "wrong"), "Bearer wrong", "Basic !!!", "Digest x"]:
        got, hdrs, body = e.call("GET", "/", {"domain": "/plain.h5"}, auth=auth)
        assert got == 401, (auth, body)
        assert hdrs["WWW-Authenticate"] == 'Basic realm="h5ark"'
        assert "token" in json.loads(body)["message"]


def test_owner_is_the_basic_user(hsds):
    assert Endpoint(hsds[1], auth=basic("carol", READ)).json(
        "/", domain="/plain.h5")["owner"] == "carol"
    assert Endpoint(hsds[1], auth=f"Bearer {READ}").json(
        "/", domain="/plain.h5")["owner"] == "h5ark"


def test_cors_preflight_and_origin(hsds):
    e = Endpoint(hsds[1], auth=None)
    got, hdrs, _ = e.call("OPTIONS", "/groups/anything", headers={"Origin": "http://x.test"})
    assert got == 204
    assert hdrs["Access-Control-Allow-Origin"] == "http://x.test"
    assert set(hdrs["Access-Control-Allow-Methods"].replace(" ", "").split(",")) == \
        {"GET", "PUT", "POST", "DELETE"}
    assert "Authorization" in hdrs["Access-Control-Allow-Headers"]
    got, hdrs, _ = Endpoint(hsds[1]).call("GET", "/", {"domain": "/plain.h5"})
    assert got == 200 and hdrs["Access-Control-Allow-Origin"] == "*"


# ---- domains and folders ---------------------------------------------------------------


def test_domain_answers_root_times_limits(ep, hsds):
    d = hsds[0]
    dom = ep.json("/", domain="/plain.h5")
    assert dom["class"] == "domain" and ID.match(dom["root"]) and dom["root"][0] == "g"
    st = os.stat(d.data_dir / "plain.h5")
    assert dom["created"] <= dom["lastModified"] == pytest.approx(st.st_mtime, abs=1e-3)
    assert dom["limits"]["max_request_size"] >= 100 << 20
    assert "gzip" in dom["compressors"] and "." in dom["version"] and dom["owner"] == "alice"


def test_domain_verbose_counts_match_h5py(ep, hsds):
    d = hsds[0]
    dom = ep.json("/", domain="/plain.h5", verbose=1)
    groups, datasets = [1], []

    def visit(name, obj):
        (groups if isinstance(obj, h5py.Group) else datasets).append(name)

    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        f.visititems(visit)
        allocated = sum(f[n].id.get_storage_size() for n in datasets)
    # visititems sees each object once: g1/again is /fixed again
    assert dom["num_groups"] == len(groups) and dom["num_datasets"] == len(datasets)
    assert dom["num_objects"] == dom["num_groups"] + dom["num_datasets"]
    assert dom["allocated_bytes"] == allocated
    assert dom["total_size"] == (d.data_dir / "plain.h5").stat().st_size


def test_folders(ep):
    for domain in ["/", "/sub/", "/sub"]:
        folder = ep.json("/", domain=domain)
        assert folder["class"] == "folder" and "root" not in folder, domain
        assert folder["owner"] and folder["created"] <= folder["lastModified"]
    ep.error("/", 404, params={"domain": "/nothere/"})
    ep.error("/groups/g-00000000-00000000-0000-000000-000000", 400,
             params={"domain": "/sub/"})


@pytest.mark.parametrize("domain,status", [
    ("plain.h5", 400), ("/../plain.h5", 403), ("/sub/../plain.h5", 403), ("//plain.h5", 403),
    ("/./plain.h5", 403), ("/pl\x01ain.h5", 403), ("/escape.h5", 403), ("/missing.h5", 404),
    ("/.plain.h5.h5ark-twin", 404), ("/text.h5", 400),
])
def test_domain_errors(ep, domain, status):
    msg = ep.error("/", status, params={"domain": domain})
    if domain == "/text.h5":
        assert "not an HDF5 file" in msg


def test_hostile_file_is_probed_first(ep, hsds):
    """A file that crashes HDF5 when its attributes are read: the probe dies on it, not the
    daemon; refused with 400. The probe is made to die on probe_dies.h5 on any build; the
    library's own known crasher reads out of bounds, which a release build survives or not
    depending on what lies beyond the buffer, so of it only the daemon's survival is sure."""
    assert "crash" in ep.error("/", 400, params={"domain": "/probe_dies.h5"})
    if (hsds[0].data_dir / "crasher.h5").exists():
        status, _, body = ep.call("GET", "/", {"domain": "/crasher.h5"})
        assert status in (200, 400), (status, body)
    assert ep.json("/", domain="/plain.h5")["class"] == "domain"
    assert hsds[0].alive()


def test_missing_domain_parameter_and_unknown_paths(ep):
    ep.error("/", 400, params={})
    ep.error("/nonsense", 404, params={"domain": "/plain.h5"})
    ep.error("/groups", 405, params={"domain": "/plain.h5"})
    got, hdrs, _ = ep.call("PATCH", "/", {"domain": "/plain.h5"})
    assert got == 405 and hdrs["Allow"]


def test_arkouda_fixture_served_unchanged(ep, hsds):
    d = hsds[0]
    if not (d.data_dir / "arkouda.h5").exists():
        pytest.skip(f"Arkouda fixtures not found at {SHARED_FIXTURES}")
    root = root_of(ep, "/arkouda.h5")
    links = ep.json(f"/groups/{root}/links", domain="/arkouda.h5")["links"]
    with h5py.File(d.data_dir / "arkouda.h5", "r") as f:
        assert [link["title"] for link in links] == sorted(f.keys())
        for link in links:
            if link.get("collection") != "datasets":
                continue
            obj = f[link["title"]]
            got = ep.json(f"/datasets/{link['id']}/value", domain="/arkouda.h5")["value"]
            assert np.array_equal(np.asarray(got), obj[()]), link["title"]


# ---- ids --------------------------------------------------------------------------------


def test_ids_stable_and_checked(ep, hsds):
    x = walk(ep, "/plain.h5", "g1/x")
    assert ID.match(x) and x[0] == "d"
    assert x == walk(Endpoint(hsds[1]), "/plain.h5", "g1/x")
    assert x[2:19] == root_of(ep)[2:19]  # one file, one prefix
    assert walk(ep, "/plain.h5", "fixed") == walk(ep, "/plain.h5", "g1/again")
    other = root_of(ep, "/sub/nested.h5")
    assert other[2:19] != x[2:19]
    ep.error(f"/groups/{other}", 404, params={"domain": "/plain.h5"})
    for bad in ["g-1234", "x" + x[1:], x.upper(), x[:-1] + "g", x + "0"]:
        ep.error(f"/datasets/{bad}", 400, params={"domain": "/plain.h5"})
    ep.error(f"/groups/{x}", 400, params={"domain": "/plain.h5"})  # a dataset's id
    nowhere = x[:20] + "7777-777777-777777"
    ep.error(f"/datasets/{nowhere}", 404, params={"domain": "/plain.h5"})


def test_ids_survive_a_restart(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with h5py.File(data / "f.h5", "w") as f:
        f.create_group("a/b").create_dataset("c", data=[1, 2])
    ids = []
    for _ in range(2):
        d, port = hsds_daemon(locales=1, data_dir=data)
        try:
            e = Endpoint(port, auth=None)
            ids.append((root_of(e, "/f.h5"), walk(e, "/f.h5", "a/b"), walk(e, "/f.h5", "a/b/c")))
        finally:
            d.cleanup()
    assert ids[0] == ids[1]


# ---- groups and links ------------------------------------------------------------------


def test_group_counts_and_alias(ep, hsds):
    d = hsds[0]
    root = root_of(ep)
    g = ep.json(f"/groups/{root}", domain="/plain.h5", getalias=1)
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        assert g["linkCount"] == len(f) and g["attributeCount"] == len(f.attrs)
        assert len(f["g1"]) == ep.json(f"/groups/{walk(ep, '/plain.h5', 'g1')}",
                                       domain="/plain.h5")["linkCount"]
    assert g["id"] == root == g["root"] and g["alias"] == ["/"] and g["domain"] == "/plain.h5"
    fixed = ep.json(f"/datasets/{walk(ep, '/plain.h5', 'fixed')}", domain="/plain.h5",
                    getalias=1)
    assert sorted(fixed["alias"]) == ["/fixed", "/g1/again"]


def test_links_list_every_kind(ep, hsds):
    d = hsds[0]
    root = root_of(ep)
    links = ep.json(f"/groups/{root}/links", domain="/plain.h5")["links"]
    with h5py.File(d.data_dir / "plain.h5", "r") as f:
        assert [link["title"] for link in links] == sorted(f.keys())
    by = {link["title"]: link for link in links}
    assert by["soft"]["class"] == "H5L_TYPE_SOFT" and by["soft"]["h5path"] == "/g1/x"
    assert by["ext"] == {**by["ext"], "class": "H5L_TYPE_EXTERNAL", "h5path": "/y",
                         "h5domain": "other.h5"}
    assert by["g1"]["class"] == "H5L_TYPE_HARD" and by["g1"]["collection"] == "groups"
    assert by["fixed"]["collection"] == "datasets" and ID.match(by["fixed"]["id"])
    one = ep.json(f"/groups/{root}/links/soft", domain="/plain.h5")
    assert one["link"] == by["soft"] and "lastModified" in one
    ep.error(f"/groups/{root}/links/nothere", 404, params={"domain": "/plain.h5"})
    ep.error(f"/groups/{root}/links/..", 400, params={"domain": "/plain.h5"})


def test_links_order_pages_and_patterns(ep):
    ordered = walk(ep, "/plain.h5", "ordered")
    titles = lambda **p: [link["title"] for link in ep.json(  # noqa: E731
        f"/groups/{ordered}/links", domain="/plain.h5", **p)["links"]]
    assert titles() == ["alpha", "mid", "zeta"]
    assert titles(CreateOrder=1) == ["zeta", "alpha", "mid"]
    assert titles(Limit=2) == ["alpha", "mid"]
    assert titles(Marker="alpha", Limit=1) == ["mid"]
    assert titles(pattern="*a") == ["alpha", "zeta"]


def test_links_follow_links(ep, hsds):
    g1 = walk(ep, "/plain.h5", "g1")
    got = ep.json(f"/groups/{g1}/links", domain="/plain.h5", follow_links=1)["links"]
    deeper = walk(ep, "/plain.h5", "g1/deeper")
    assert set(got) == {g1, deeper}
    assert [link["title"] for link in got[deeper]] == ["y"]


# ---- datasets: types, shapes, properties -------------------------------------------------


def dataset(ep, path, **params):
    return ep.json(f"/datasets/{walk(ep, '/plain.h5', path)}", domain="/plain.h5", **params)


def test_number_types(ep):
    for name in NUMBERS:
        dt = np.dtype(name)
        kind = {"i": "I", "u": "U"}.get(dt.kind)
        base = f"H5T_STD_{kind}{dt.itemsize * 8}LE" if kind else f"H5T_IEEE_F{dt.itemsize * 8}LE"
        want = {"class": "H5T_INTEGER" if kind else "H5T_FLOAT", "base": base}
        assert dataset(ep, f"num/{name}")["type"] == want, name
    assert dataset(ep, "num/be")["type"]["base"] == "H5T_IEEE_F64BE"


def test_other_types(ep):
    assert dataset(ep, "flags")["type"] == {
        "class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
        "mapping": {"FALSE": 0, "TRUE": 1}}
    assert dataset(ep, "fixed")["type"] == {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                            "length": 5, "strPad": "H5T_STR_NULLPAD"}
    assert dataset(ep, "vlen")["type"] == {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8",
                                           "length": "H5T_VARIABLE",
                                           "strPad": "H5T_STR_NULLTERM"}
    assert dataset(ep, "vbytes")["type"]["charSet"] == "H5T_CSET_ASCII"
    assert dataset(ep, "pairs")["type"] == {"class": "H5T_COMPOUND", "fields": [
        {"name": "a", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}},
        {"name": "b", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}}]}


def test_shapes_layouts_and_properties(ep, hsds):
    x = dataset(ep, "g1/x", verbose=1)
    assert x["shape"] == {"class": "H5S_SIMPLE", "dims": [3, 4]}
    assert x["layout"] == {"class": "H5D_CONTIGUOUS"} and x["allocated_size"] == 48
    assert dataset(ep, "scalar")["shape"] == {"class": "H5S_SCALAR"}
    assert dataset(ep, "empty")["shape"] == {"class": "H5S_NULL"}
    grow = dataset(ep, "grow", verbose=1)
    assert grow["shape"] == {"class": "H5S_SIMPLE", "dims": [10], "maxdims": [0]}
    props = grow["creationProperties"]
    assert grow["layout"] == props["layout"] == {"class": "H5D_CHUNKED", "dims": [4]}
    assert props["filters"] == [
        {"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"},
        {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 4}]
    assert props["fillValue"] == -1.0 and grow["num_chunks"] == 3
    assert dataset(ep, "huge", verbose=1)["allocated_size"] == 0
    shape = ep.json(f"/datasets/{walk(ep, '/plain.h5', 'cube')}/shape", domain="/plain.h5")
    assert shape["shape"]["dims"] == [3, 4, 5] and "lastModified" in shape


# ---- values -------------------------------------------------------------------------------


def value(ep, path, select=None, binary=False, status=200):
    params = {"domain": "/plain.h5"}
    if select is not None:
        params["select"] = select
    headers = {"Accept": "application/octet-stream"} if binary else {}
    got, hdrs, body = ep.call("GET", f"/datasets/{walk(ep, '/plain.h5', path)}/value", params,
                              headers=headers)
    assert got == status, (path, select, got, body)
    if status != 200:
        return json.loads(body)["message"]
    if binary:
        assert hdrs["Content-Type"] == "application/octet-stream"
        return body
    assert hdrs["Content-Type"] == "application/json"
    return json.loads(body)["value"]


def test_values_json_match_h5py(ep, hsds):
    with h5py.File(hsds[0].data_dir / "plain.h5", "r") as f:
        for name in NUMBERS + ["be"]:
            assert value(ep, f"num/{name}") == f[f"num/{name}"][()].tolist(), name
        assert value(ep, "g1/x") == f["g1/x"][()].tolist()
        assert value(ep, "fixed") == ["ab", "cde", ""]
        assert value(ep, "vlen") == ["héllo", "w", ""]
        assert value(ep, "flags") in ([1, 0, 1], [True, False, True])
        assert value(ep, "pairs") == [[1, 2.5], [3, 4.5]]
        assert value(ep, "scalar") == 7.5
        assert value(ep, "empty") is None


def test_values_binary_match_h5py(ep, hsds):
    with h5py.File(hsds[0].data_dir / "plain.h5", "r") as f:
        for name in NUMBERS + ["be"]:
            want = f[f"num/{name}"][()]
            got = np.frombuffer(value(ep, f"num/{name}", binary=True), want.dtype.newbyteorder("<"))
            assert np.array_equal(got, want), name
        assert value(ep, "fixed", binary=True) == b"ab\0\0\0cde\0\0" + b"\0" * 5
        assert value(ep, "pairs", binary=True) == np.array(
            [(1, 2.5), (3, 4.5)], dtype=[("a", "<i8"), ("b", "<f4")]).tobytes()
        assert value(ep, "flags", binary=True) == b"\1\0\1"
    hello = "héllo".encode()
    assert value(ep, "vlen", binary=True) == \
        len(hello).to_bytes(4, "little") + hello + b"\1\0\0\0w" + b"\0\0\0\0"


@pytest.mark.parametrize("select,index", [
    ("[0:3,0:4]", np.s_[0:3, 0:4]), ("[0:3:2,1:4:2]", np.s_[0:3:2, 1:4:2]),
    ("[1,:]", np.s_[1:2, :]), ("[:,2:]", np.s_[:, 2:]), ("[2,3]", np.s_[2:3, 3:4]),
    ("[1:1,:]", np.s_[1:1, :]), ("[[2,0],1:3]", np.s_[[2, 0], 1:3]),
    ("[:,[3,0,0]]", np.s_[:, [3, 0, 0]]), ("[[0,2],[3,1]]", np.s_[[0, 2], [3, 1]]),
])
def test_selections(ep, hsds, select, index):
    with h5py.File(hsds[0].data_dir / "plain.h5", "r") as f:
        want = f["g1/x"][()][index]
    assert value(ep, "g1/x", select) == want.tolist()
    got = np.frombuffer(value(ep, "g1/x", select, binary=True), "<i4")
    assert np.array_equal(got, want.ravel())


def test_selections_with_lists_apart(ep, hsds):
    with h5py.File(hsds[0].data_dir / "plain.h5", "r") as f:
        want = f["cube"][()][[0, 2], 1:3, [4, 0]]  # lists apart: their axis first
    assert value(ep, "cube", "[[0,2],1:3,[4,0]]") == want.tolist()


@pytest.mark.parametrize("select", [
    "[-1:2,:]", "[0:2:0,:]", "[2:1,:]", "[0:2]", "[0:2,0:2,0:1]", "[0:4,:]", "[3,:]",
    "[[0,5],:]", "[[0,1],[0,1,2]]", "0:2,:", "[0:2,:]x", "[a,:]", "[[],:]",
])
def test_bad_selections(ep, select):
    assert value(ep, "g1/x", select, status=400)


def test_scalar_takes_no_selection(ep):
    assert value(ep, "scalar", "[0]", status=400)


def test_points_binary_and_json(ep, hsds):
    oid = walk(ep, "/plain.h5", "g1/x")
    pts = np.array([[2, 3], [0, 0], [1, 2]], dtype="<u8")
    got, hdrs, body = ep.call("POST", f"/datasets/{oid}/value", {"domain": "/plain.h5"},
                              body=pts.tobytes(),
                              headers={"Content-Type": "application/octet-stream",
                                       "Accept": "application/octet-stream"})
    assert got == 200 and hdrs["Content-Type"] == "application/octet-stream"
    assert np.frombuffer(body, "<i4").tolist() == [11, 0, 6]
    got, _, body = ep.call("POST", f"/datasets/{oid}/value", {"domain": "/plain.h5"},
                           body=json.dumps({"points": pts.tolist()}),
                           headers={"Content-Type": "application/json"})
    assert got == 200 and json.loads(body)["value"] == [11, 0, 6]
    got, _, body = ep.call("POST", f"/datasets/{oid}/value", {"domain": "/plain.h5"},
                           body=json.dumps({"select": "[[0,2],1]"}),
                           headers={"Content-Type": "application/json"})
    assert got == 200 and json.loads(body)["value"] == [[1], [9]]
    for bad in [np.array([[3, 0]], "<u8").tobytes(), b"\0" * 12]:
        got, _, body = ep.call("POST", f"/datasets/{oid}/value", {"domain": "/plain.h5"},
                               body=bad, headers={"Content-Type": "application/octet-stream"})
        assert got == 400, body
    got, _, body = ep.call("POST", f"/datasets/{oid}/value", {"domain": "/plain.h5"},
                           body=b"{nope", headers={"Content-Type": "application/json"})
    assert got == 400 and json.loads(body)["message"]


def test_too_large_answers_are_413(ep):
    assert "max_request_size" in value(ep, "huge", binary=True, status=413)
    assert value(ep, "huge", "[0:10]", binary=True) == b"\0" * 80


def test_value_of_a_group_is_refused(ep):
    g1 = walk(ep, "/plain.h5", "g1")
    ep.error(f"/datasets/{g1}/value", 400, params={"domain": "/plain.h5"})


# ---- attributes ---------------------------------------------------------------------------


def test_attributes(ep, hsds):
    root = root_of(ep)
    attrs = ep.json(f"/groups/{root}/attributes", domain="/plain.h5", IncludeData=1)
    with h5py.File(hsds[0].data_dir / "plain.h5", "r") as f:
        assert [a["name"] for a in attrs["attributes"]] == sorted(f.attrs)
    by = {a["name"]: a for a in attrs["attributes"]}
    assert by["title"]["value"] == "plain" and by["title"]["shape"] == {"class": "H5S_SCALAR"}
    assert by["count"]["type"] == {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
    assert by["scale"]["value"] == [0.0, 1.0, 2.0, 3.0]
    assert "value" not in ep.json(f"/groups/{root}/attributes",
                                  domain="/plain.h5")["attributes"][0]
    one = ep.json(f"/groups/{root}/attributes/scale", domain="/plain.h5")
    assert one["value"] == [0.0, 1.0, 2.0, 3.0] and one["shape"]["dims"] == [4]
    assert "lastModified" in one
    g1 = walk(ep, "/plain.h5", "g1")
    assert ep.json(f"/groups/{g1}/attributes/note", domain="/plain.h5")["value"] == "fixed"
    ep.error(f"/groups/{root}/attributes/nothere", 404, params={"domain": "/plain.h5"})
    x = walk(ep, "/plain.h5", "g1/x")
    assert ep.json(f"/datasets/{x}/attributes", domain="/plain.h5")["attributes"] == []


# ---- the door: concurrency, the daemon after errors, native commands ----------------------


def test_several_connections_at_once(hsds):
    port = hsds[1]
    errors = []

    def reader():
        try:
            e = Endpoint(port)
            for _ in range(10):
                assert value(e, "g1/x", "[0:3,1]") == [[1], [5], [9]]
            e.conn.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_native_commands(hsds):
    d = hsds[0]
    dom = ok(send(d, "h5domain", {"domain": "/plain.h5"}))
    root = dom["root"]
    links = ok(send(d, "h5links", {"domain": "/plain.h5", "id": root}))["links"]
    x = ok(send(d, "h5link", {"domain": "/plain.h5", "id": root, "name": "g1"}))["link"]["id"]
    xid = next(link["id"] for link in ok(send(d, "h5links", {"domain": "/plain.h5", "id": x}))[
        "links"] if link["title"] == "x")
    assert [link["title"] for link in links][:2] == ["cube", "empty"]
    assert ok(send(d, "h5get", {"domain": "/plain.h5", "id": xid}))["shape"]["dims"] == [3, 4]
    assert ok(send(d, "h5shape", {"domain": "/plain.h5", "id": xid}))["shape"]["dims"] == [3, 4]
    got = ok(send(d, "h5value", {"domain": "/plain.h5", "id": xid, "select": "[1,:]"}))
    assert np.frombuffer(got["value"], "<i4").tolist() == [4, 5, 6, 7]
    got = ok(send(d, "h5value", {"domain": "/plain.h5", "id": xid, "points": [2, 3, 0, 1],
                                 "json": True}))
    assert got["value"] == [11, 1]
    attr = ok(send(d, "h5attr", {"domain": "/plain.h5", "id": root, "name": "title"}))
    assert attr["value"] == "plain"
    assert len(ok(send(d, "h5attrs", {"domain": "/plain.h5", "id": root}))["attributes"]) == 3
    some = ok(send(d, "h5links", {"domain": "/plain.h5", "id": root,
                                  "body": json.dumps({"titles": ["g1"]})}))["links"]
    assert [link["title"] for link in some] == ["g1"]
    fails(send(d, "h5domain", {"domain": "/../x.h5"}), "forbidden")
    fails(send(d, "h5get", {"domain": "/plain.h5", "id": "g-bad"}), "bad_request")
    fails(send(d, "h5link", {"domain": "/plain.h5", "id": root, "name": "zz"}), "not_found")


def test_native_commands_need_a_token(hsds):
    d = hsds[0]
    hdr, _ = send(d, "h5domain", {"domain": "/plain.h5"}, token=None)
    assert hdr["ok"] is False and hdr["error"]["code"] == "unauthorized"


def test_links_by_titles(ep):
    """POST .../links {"titles"}: only the links named (h5pyd's get of several names); a
    read token may ask it."""
    root = root_of(ep)
    got, _, body = ep.call("POST", f"/groups/{root}/links", {"domain": "/plain.h5"},
                           body=json.dumps({"titles": ["soft", "g1", "nothere"]}))
    assert got == 200, body
    assert [link["title"] for link in json.loads(body)["links"]] == ["g1", "soft"]
    r = Endpoint(ep.port, auth=f"Bearer {READ}")
    got, _, body = r.call("POST", f"/groups/{root}/links", {"domain": "/plain.h5"},
                          body=json.dumps({"titles": ["g1"]}))
    assert got == 200 and len(json.loads(body)["links"]) == 1
    got, _, _ = ep.call("POST", f"/groups/{root}/links", {"domain": "/plain.h5"},
                        body=b"{\"titles\": 3}")
    assert got == 400


def counted(port):
    """{(cmd, outcome): n} of h5ark_requests_total in one scrape of the metrics."""
    text = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    text.request("GET", "/metrics")
    body = text.getresponse().read().decode()
    text.close()
    return {(m[1], m[2]): int(m[3]) for m in re.finditer(
        r'^h5ark_requests_total\{cmd="([^"]*)",outcome="([^"]*)"\} (\d+)$', body, re.M)}


def test_requests_in_status_metrics_and_log(tmp_path):
    """The endpoint's requests go through the entry as the protocol's do: listed in
    `status` while they run under their route's name (hsds_value, ...), counted in the
    metrics by route and outcome, and logged with the user the token names."""
    mport = free_port()
    tokens = tmp_path / "tokens"
    tokens.write_text("tok-alice write user=alice\ntok-root admin user=root\n")
    d, port = hsds_daemon(locales=1, token="tok-root", token_file=tokens,
                          env={"H5ARK_FAULTS": "1"},
                          extra_args=["--log-level", "info",
                                      "--metrics-endpoint", f"127.0.0.1:{mport}"])
    e = Endpoint(port, auth=basic("anyone", "tok-alice"))
    try:
        (d.data_dir / "home" / "alice").mkdir(parents=True)
        with h5py.File(d.data_dir / "home" / "alice" / "s.h5", "w") as f:
            f["v"] = np.arange(4000, dtype="<f8")
        dom = "/home/alice/s.h5"
        before = counted(mport)
        oid = walk(e, dom, "v")
        assert e.error("/", 404, params={"domain": "/home/alice/none.h5"})
        assert e.error(f"/datasets/{oid}/value", 400, params={"domain": dom, "select": "x"})
        after = counted(mport)
        assert {k: n - before.get(k, 0) for k, n in after.items()
                if n != before.get(k, 0)} == {
            ("hsds_domain", "ok"): 1, ("hsds_link", "ok"): 1, ("hsds_domain", "not_found"): 1,
            ("hsds_value", "bad_request"): 1}
        log = d.wait_log(r"cmd=hsds_value .*outcome=bad_request user=alice$")
        assert re.search(r"cmd=hsds_link .*outcome=ok user=alice$", log, re.M), log
        assert "tok-alice" not in log

        # every read of the file's bytes slowed down: the read is seen in flight, then gone
        ok(send(d, "fault", {"delay_ms": 200}))
        got = []
        reader = threading.Thread(target=lambda: got.append(Endpoint(
            port, auth=basic("a", "tok-alice")).call(
                "GET", f"/datasets/{oid}/value", {"domain": dom},
                headers={"Accept": "application/octet-stream"})))
        reader.start()
        seen = []
        while reader.is_alive() and not seen:
            seen = [r for r in ok(send(d, "status"))["requests"] if r["cmd"] == "hsds_value"]
            time.sleep(0.02)
        reader.join(TIMEOUT)
        ok(send(d, "fault", {"delay_ms": 0}))
        assert seen, "the endpoint's read was never listed in status"
        assert got[0][0] == 200
        assert np.array_equal(np.frombuffer(got[0][2], "<f8"), np.arange(4000.0))
        assert [r for r in ok(send(d, "status"))["requests"]
                if r["cmd"].startswith("hsds_")] == []
        assert counted(mport)[("hsds_value", "ok")] == after.get(("hsds_value", "ok"), 0) + 1
    finally:
        e.conn.close()
        d.cleanup()


def test_acls_need_users(ep):
    """Without users there are no ACLs: 404, which h5pyd's mode "a" takes as nothing to
    check."""
    assert "users" in ep.error("/acls/alice", 404, params={"domain": "/plain.h5"})
    assert "users" in ep.error("/acls", 404, params={"domain": "/plain.h5"})


def test_large_answers_one_after_another(ep, hsds):
    """Blocks of large answers are reused (the shard cache): each answer holds its own
    values, whatever the block held before, also when a smaller one is cut from it."""
    d = hsds[0]
    with h5py.File(d.data_dir / "large.h5", "w") as f:
        f["a"] = np.arange(300_000, dtype="<f8")
        f["b"] = -np.arange(300_000, dtype="<f8")
        f["c"] = np.arange(300_000, dtype="<i4")
    for name, select, want in [
            ("a", None, np.arange(300_000.0)), ("b", None, -np.arange(300_000.0)),
            ("a", "[100000:290000]", np.arange(100_000.0, 290_000.0)),
            ("b", "[0:300000:2]", -np.arange(0.0, 300_000.0, 2)),
            ("c", None, np.arange(300_000, dtype="<i4"))]:
        oid = walk(ep, "/large.h5", name)
        got, hdrs, body = ep.call("GET", f"/datasets/{oid}/value",
                                  {"domain": "/large.h5", **({"select": select} if select else {})},
                                  headers={"Accept": "application/octet-stream"})
        assert got == 200 and hdrs["Content-Type"] == "application/octet-stream"
        assert np.array_equal(np.frombuffer(body, want.dtype), want), (name, select)
