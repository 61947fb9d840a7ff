"""The HSDS endpoint's changes (shared/HSDS_API.md §6-11), over HTTP against a real daemon:
h5pyd's sequences of requests (create a file, an anonymous dataset written then linked,
groups, links, attributes, resize), every file checked with h5py afterwards; the contract's
refusals; ids that stay the same across changes; a read token refused; and each change
atomic: under the fault table (ENOSPC and EIO at every call, ENOMEM at every allocation)
the file is as before or as after and the daemon serves on, and SIGKILL at random moments
never leaves a torn file."""
import json
import os
import random
import re
import threading

import h5py
import numpy as np
import pytest

from daemons import MPIRUN, mpi_build, TOOL_SLOWDOWN
from test_hsds import Endpoint, basic, hsds_daemon, ID
from wire import ok, put_array, send

WRITE, READ = "hsds-w-secret", "hsds-r-secret"
TEMP = re.compile(r"^\..*\.h5ark-tmp\.\d+\.\d+$")
OCTETS = {"Content-Type": "application/octet-stream"}


@pytest.fixture(scope="module")
def hsds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hsdsw")
    tokens = tmp / "tokens"
    tokens.write_text(f"{WRITE} write\n{READ} read\n")
    d, port = hsds_daemon(locales=2, token=WRITE, token_file=tokens)
    d.data_dir.mkdir(exist_ok=True)
    yield d, port
    d.cleanup()


@pytest.fixture
def ep(hsds):
    e = Endpoint(hsds[1], auth=basic("alice", WRITE))
    yield e
    e.conn.close()


def users_daemon(tmp_path, tokens, locales=1):
    """A daemon of users (`tokens`: the token file's text, whose tok-root is an admin's), its
    HSDS endpoint on a free port: (the daemon, the port)."""
    (tmp_path / "tokens").write_text(tokens)
    return hsds_daemon(locales=locales, token="tok-root", token_file=tmp_path / "tokens")


def call(ep, method, path, domain, body=None, status=200, headers=None, **params):
    raw = body if isinstance(body, (bytes, type(None))) else json.dumps(body)
    got, hdrs, text = ep.call(method, path, {"domain": domain, **params}, body=raw,
                              headers=headers)
    assert got == status, (method, path, params, got, text)
    assert hdrs["Content-Type"] == "application/json"
    out = json.loads(text)
    if status >= 400:
        assert out["message"]
    return out


def new_domain(ep, name, order=False):
    body = {"group": {"creationProperties": {"CreateOrder": 1}}} if order else None
    dom = call(ep, "PUT", "/", name, body, status=201)
    assert ID.match(dom["root"]) and dom["class"] == "domain"
    return dom["root"]


def create_dataset(ep, domain, parent, name, body, data=None, dtype=None):
    """h5pyd's create_dataset: anonymous POST, GET, PUT value, then the link."""
    dset = call(ep, "POST", "/datasets", domain, body, status=201)
    oid = dset["id"]
    assert ID.match(oid) and oid[0] == "d"
    assert call(ep, "GET", f"/datasets/{oid}", domain)["id"] == oid
    if data is not None:
        raw = np.ascontiguousarray(data, dtype=dtype).tobytes()
        call(ep, "PUT", f"/datasets/{oid}/value", domain, raw, headers=OCTETS)
    call(ep, "PUT", f"/groups/{parent}/links/{name}", domain, {"id": oid}, status=201)
    return oid


def temps(data_dir):
    return [p.name for p in data_dir.rglob("*") if TEMP.match(p.name)]


# ---- domains --------------------------------------------------------------------------


def test_create_and_delete_domain(ep, hsds):
    d = hsds[0]
    root = new_domain(ep, "/made/deep/a.h5", order=True)
    assert (d.data_dir / "made" / "deep" / "a.h5").is_file()
    with h5py.File(d.data_dir / "made" / "deep" / "a.h5", "r") as f:
        assert len(f) == 0
        assert f["/"].id.get_create_plist().get_link_creation_order()
    assert call(ep, "GET", "/", "/made/deep/a.h5")["root"] == root
    call(ep, "PUT", "/", "/made/deep/a.h5", status=409)
    assert call(ep, "PUT", "/", "/made/deep/a.h5", {"flush": 1})["root"] == root
    call(ep, "DELETE", "/", "/made/deep/a.h5")
    assert not (d.data_dir / "made" / "deep" / "a.h5").exists()
    call(ep, "GET", "/", "/made/deep/a.h5", status=404)
    call(ep, "DELETE", "/", "/made/deep/a.h5", status=404)
    for bad, status in [("/../x.h5", 403), ("x.h5", 400), ("/a//b.h5", 403)]:
        call(ep, "PUT", "/", bad, status=status)
    assert temps(d.data_dir) == []


def test_mode_w_replaces_a_file(ep, hsds):
    """h5pyd's mode "w": GET, DELETE when there, PUT."""
    d = hsds[0]
    with h5py.File(d.data_dir / "old.h5", "w") as f:
        f["x"] = [1, 2, 3]
    call(ep, "GET", "/", "/old.h5")
    call(ep, "DELETE", "/", "/old.h5")
    new_domain(ep, "/old.h5")
    with h5py.File(d.data_dir / "old.h5", "r") as f:
        assert list(f) == []


# ---- groups and links -----------------------------------------------------------------


def test_groups_and_links(ep, hsds):
    d = hsds[0]
    dom = "/links.h5"
    root = new_domain(ep, dom)
    g = call(ep, "POST", "/groups", dom, {"link": {"id": root, "name": "g"}}, status=201)
    assert ID.match(g["id"]) and g["id"][0] == "g" and g["linkCount"] == 0
    call(ep, "POST", "/groups", dom, {"link": {"id": root, "name": "g"}}, status=409)
    sub = call(ep, "POST", "/groups", dom, {"creationProperties": {"CreateOrder": 1}}, status=201)
    # anonymous until linked: no listing shows it
    assert [x["title"] for x in call(ep, "GET", f"/groups/{root}/links", dom)["links"]] == ["g"]
    call(ep, "PUT", f"/groups/{g['id']}/links/sub", dom, {"id": sub["id"]}, status=201)
    call(ep, "PUT", f"/groups/{g['id']}/links/sub", dom, {"id": sub["id"]}, status=409)
    call(ep, "PUT", f"/groups/{root}/links/soft", dom, {"h5path": "/g/sub"}, status=201)
    call(ep, "PUT", f"/groups/{root}/links/ext", dom, {"h5path": "/x", "h5domain": "o.h5"},
         status=201)
    call(ep, "PUT", f"/groups/{root}/links/bad", dom, {"nothing": 1}, status=400)
    other = new_domain(ep, "/other.h5")
    call(ep, "PUT", f"/groups/{root}/links/alien", dom, {"id": other}, status=400)
    call(ep, "PUT", f"/groups/{root}/links/alien", dom, b"{not json", status=400)
    with h5py.File(d.data_dir / "links.h5", "r") as f:
        assert sorted(f) == ["ext", "g", "soft"]
        assert ".h5ark-unlinked" not in f
        assert f["g/sub"].id.get_create_plist().get_link_creation_order()
        assert f.get("soft", getlink=True).path == "/g/sub"
        assert f.get("ext", getlink=True).filename == "o.h5"
    assert call(ep, "GET", f"/groups/{g['id']}/links/sub", dom)["link"]["id"] == sub["id"]
    call(ep, "DELETE", f"/groups/{root}/links/soft", dom)
    call(ep, "DELETE", f"/groups/{root}/links/soft", dom, status=404)
    with h5py.File(d.data_dir / "links.h5", "r") as f:
        assert sorted(f) == ["ext", "g"]
    # ids stay what they were across changes
    assert call(ep, "GET", "/", dom)["root"] == root
    assert call(ep, "GET", f"/groups/{root}/links/g", dom)["link"]["id"] == g["id"]


# ---- datasets -------------------------------------------------------------------------


TYPES = [
    ("i1", {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}),
    ("u2", {"class": "H5T_INTEGER", "base": "H5T_STD_U16LE"}),
    ("<i4", "H5T_STD_I32LE"),
    ("u8", {"class": "H5T_INTEGER", "base": "H5T_STD_U64LE"}),
    ("f2", {"class": "H5T_FLOAT", "base": "H5T_IEEE_F16LE"}),
    ("f4", {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}),
    (">f8", {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64BE"}),
    ("?", {"class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
           "mapping": {"FALSE": 0, "TRUE": 1}}),
    ("S6", {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": 6,
            "strPad": "H5T_STR_NULLPAD"}),
    ([("a", "<i8"), ("b", "<f4")], {"class": "H5T_COMPOUND", "fields": [
        {"name": "a", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}},
        {"name": "b", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}}]}),
]


def test_datasets_of_every_type(ep, hsds):
    d = hsds[0]
    dom = "/types.h5"
    root = new_domain(ep, dom)
    want = {}
    for i, (dt, tj) in enumerate(TYPES):
        dt = np.dtype(dt)
        if dt.kind == "S":
            data = np.array([b"ab", b"cdefgh", b""], dtype=dt)
        elif dt.kind == "V":
            data = np.array([(1, 1.5), (-2, 2.5), (3, 0.0)], dtype=dt)
        else:
            data = np.array([0, 1, 1], dtype=dt)
        create_dataset(ep, dom, root, f"d{i}", {"type": tj, "shape": [3]}, data,
                       dt.newbyteorder("<") if dt.kind in "iuf" else dt)
        want[f"d{i}"] = data
    with h5py.File(d.data_dir / "types.h5", "r") as f:
        for name, data in want.items():
            assert f[name].dtype == data.dtype, name
            assert f[name][()].tolist() == data.tolist(), name
            assert f[name].chunks is None
        assert ".h5ark-unlinked" not in f


def test_vlen_strings_binary_and_json(ep, hsds):
    d = hsds[0]
    dom = "/strings.h5"
    root = new_domain(ep, dom)
    tj = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"}
    oid = call(ep, "POST", "/datasets", dom, {"type": tj, "shape": [3]}, status=201)["id"]
    words = ["héllo", "", "world"]
    raw = b"".join(len(w.encode()).to_bytes(4, "little") + w.encode() for w in words)
    call(ep, "PUT", f"/datasets/{oid}/value", dom, raw, headers=OCTETS)
    call(ep, "PUT", f"/groups/{root}/links/s", dom, {"id": oid}, status=201)
    call(ep, "PUT", f"/datasets/{oid}/value", dom, {"value": ["z"]}, select="[1:2]")
    call(ep, "PUT", f"/datasets/{oid}/value", dom, raw[:-2], headers=OCTETS, status=400)
    with h5py.File(d.data_dir / "strings.h5", "r") as f:
        assert f["s"].dtype == h5py.string_dtype()
        assert [w.decode() for w in f["s"][()]] == ["héllo", "z", "world"]


def test_chunks_filters_fill_and_layout_rules(ep, hsds):
    d = hsds[0]
    dom = "/layout.h5"
    root = new_domain(ep, dom)
    f8 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
    gz = [{"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"},
          {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 5}]
    create_dataset(ep, dom, root, "kept", {
        "type": f8, "shape": [10, 6], "maxdims": [0, 6],
        "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [3, 2]},
                               "filters": gz, "fillValue": -1.5,
                               "fillTime": "H5D_FILL_TIME_ALLOC"}})
    create_dataset(ep, dom, root, "whole", {"type": f8, "shape": [100, 10],
                                            "creationProperties": {"filters": gz}})
    create_dataset(ep, dom, root, "grows", {"type": f8, "shape": [10], "maxdims": [0]})
    create_dataset(ep, dom, root, "scalar", {"type": f8, "shape": []}, np.float64(2.5))
    create_dataset(ep, dom, root, "null", {"type": f8, "shape": "H5S_NULL"})
    with h5py.File(d.data_dir / "layout.h5", "r") as f:
        k = f["kept"]
        assert k.chunks == (3, 2) and k.maxshape == (None, 6) and k.compression == "gzip"
        assert k.compression_opts == 5 and k.shuffle and k.fillvalue == -1.5
        assert (k[()] == -1.5).all()
        assert k.id.get_create_plist().get_fill_time() == h5py.h5d.FILL_TIME_ALLOC
        assert f["whole"].chunks == (100, 10)
        assert f["grows"].chunks is not None and f["grows"].maxshape == (None,)
        assert f["scalar"][()] == 2.5 and f["null"].shape is None
    for body in [
        {"type": f8, "shape": [4], "maxdims": [3]},
        {"type": f8, "shape": [4, 4], "maxdims": [4]},
        {"type": f8, "shape": [4], "creationProperties": {"layout": {"class": "H5D_CHUNKED",
                                                                     "dims": [5]}}},
        {"type": f8, "shape": [4], "creationProperties": {"layout": {"class": "H5D_CHUNKED",
                                                                     "dims": [2, 2]}}},
        {"type": f8, "shape": [4], "creationProperties": {"filters": [{"name": "lzf"}]}},
        {"type": f8, "shape": [4], "creationProperties": {"fillTime": "sometimes"}},
        {"type": {"class": "H5T_TIME"}, "shape": [4]},
        {"type": "H5T_STD_I9LE", "shape": [4]},
        {"type": f8, "shape": [-1]},
        {"shape": [4]},
    ]:
        call(ep, "POST", "/datasets", dom, body, status=400)


def test_values_selections_and_scalars_broadcast(ep, hsds):
    d = hsds[0]
    dom = "/values.h5"
    root = new_domain(ep, dom)
    i4 = {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
    oid = create_dataset(ep, dom, root, "x", {"type": i4, "shape": [4, 5]},
                         np.arange(20).reshape(4, 5), "<i4")
    call(ep, "PUT", f"/datasets/{oid}/value", dom, np.array([-1, -2], "<i4").tobytes(),
         headers=OCTETS, select="[1:3,4]")
    call(ep, "PUT", f"/datasets/{oid}/value", dom, np.array([9], "<i4").tobytes(),
         headers=OCTETS, select="[3,0:5:2]", element_count=1)
    call(ep, "PUT", f"/datasets/{oid}/value", dom, {"value": [[7, 8]]}, select="[0,0:2]")
    want = np.arange(20).reshape(4, 5)
    want[1:3, 4] = [-1, -2]
    want[3, 0:5:2] = 9
    want[0, 0:2] = [7, 8]
    with h5py.File(d.data_dir / "values.h5", "r") as f:
        assert f["x"][()].tolist() == want.tolist()
    got, _, body = ep.call("GET", f"/datasets/{oid}/value", {"domain": dom})
    assert json.loads(body)["value"] == want.tolist()
    for params, raw in [({"select": "[0:2,0]"}, b"\0" * 4), ({"select": "[0:5,0]"}, b"\0" * 20),
                        ({}, b"\0" * 3)]:
        call(ep, "PUT", f"/datasets/{oid}/value", dom, raw, headers=OCTETS, status=400, **params)


def test_resize(ep, hsds):
    d = hsds[0]
    dom = "/resize.h5"
    root = new_domain(ep, dom)
    f4 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}
    oid = create_dataset(ep, dom, root, "g", {
        "type": f4, "shape": [4, 2], "maxdims": [0, 3],
        "creationProperties": {"fillValue": 0.5}}, np.ones((4, 2)), "<f4")
    call(ep, "PUT", f"/datasets/{oid}/shape", dom, {"shape": [6, 3]}, status=201)
    assert call(ep, "GET", f"/datasets/{oid}/shape", dom)["shape"]["dims"] == [6, 3]
    with h5py.File(d.data_dir / "resize.h5", "r") as f:
        got = f["g"][()]
        assert got.shape == (6, 3) and (got[:4, :2] == 1).all() and (got[4:] == 0.5).all()
    call(ep, "PUT", f"/datasets/{oid}/shape", dom, {"shape": [2, 2]}, status=201)
    call(ep, "PUT", f"/datasets/{oid}/shape", dom, {"shape": [2, 4]}, status=400)
    call(ep, "PUT", f"/datasets/{oid}/shape", dom, {"shape": [2]}, status=400)
    fixed = create_dataset(ep, dom, root, "fixed", {"type": f4, "shape": [3]})
    call(ep, "PUT", f"/datasets/{fixed}/shape", dom, {"shape": [4]}, status=400)
    with h5py.File(d.data_dir / "resize.h5", "r") as f:
        assert f["g"].shape == (2, 2)


# ---- attributes ------------------------------------------------------------------------


def test_attributes(ep, hsds):
    d = hsds[0]
    dom = "/attrs.h5"
    root = new_domain(ep, dom)
    oid = create_dataset(ep, dom, root, "x", {"type": "H5T_STD_I8LE", "shape": [2]})
    vstr = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"}
    call(ep, "PUT", f"/groups/{root}/attributes/title", dom,
         {"type": vstr, "shape": [], "value": "héllo"}, status=201, replace=1)
    call(ep, "PUT", f"/groups/{root}/attributes/title", dom,
         {"type": vstr, "shape": [], "value": "again"}, status=201, replace=1)
    call(ep, "PUT", f"/groups/{root}/attributes/title", dom,
         {"type": vstr, "shape": [], "value": "no"}, status=409)
    call(ep, "PUT", f"/datasets/{oid}/attributes/scale", dom,
         {"type": "H5T_IEEE_F64LE", "shape": [2, 2], "value": [[1, 2], [3, 4.5]]}, status=201)
    call(ep, "PUT", f"/datasets/{oid}/attributes/none", dom,
         {"type": "H5T_IEEE_F64LE", "shape": "H5S_NULL"}, status=201)
    call(ep, "PUT", f"/groups/{root}/attributes", dom, {"attributes": {
        "a": {"type": "H5T_STD_I32LE", "shape": [], "value": 5},
        "b": {"type": vstr, "shape": [2], "value": ["p", "q"]}}}, status=201, replace=1)
    # all or none: the second is malformed, the first is not written either
    call(ep, "PUT", f"/groups/{root}/attributes", dom, {"attributes": {
        "c": {"type": "H5T_STD_I32LE", "shape": [], "value": 5},
        "d": {"type": "H5T_STD_I32LE", "shape": [2], "value": [1]}}}, status=400, replace=1)
    with h5py.File(d.data_dir / "attrs.h5", "r") as f:
        assert sorted(f.attrs) == ["a", "b", "title"]
        assert f.attrs["title"] == "again" and f.attrs["a"] == 5
        assert list(f.attrs["b"]) == ["p", "q"]
        assert f["x"].attrs["scale"].tolist() == [[1, 2], [3, 4.5]]
        assert f["x"].attrs.get_id("none").shape is None
    assert call(ep, "GET", f"/groups/{root}/attributes/title", dom)["value"] == "again"
    call(ep, "DELETE", f"/groups/{root}/attributes/title", dom)
    call(ep, "DELETE", f"/groups/{root}/attributes/title", dom, status=404)
    with h5py.File(d.data_dir / "attrs.h5", "r") as f:
        assert "title" not in f.attrs


# ---- tokens ------------------------------------------------------------------------------


def test_read_token_may_not_change(hsds):
    port = hsds[1]
    w = Endpoint(port, auth=basic("alice", WRITE))
    root = new_domain(w, "/guarded.h5")
    r = Endpoint(port, auth=f"Bearer {READ}")
    for method, path, body in [("PUT", "/", None), ("DELETE", "/", None),
                               ("POST", "/groups", {}),
                               ("PUT", f"/groups/{root}/attributes/a", {"type": "H5T_STD_I8LE",
                                                                        "shape": [],
                                                                        "value": 1})]:
        call(r, method, path, "/guarded.h5", body, status=403)
        call(Endpoint(port, auth=None), method, path, "/guarded.h5", body, status=401)
    assert call(r, "GET", "/", "/guarded.h5")["root"] == root


# ---- native commands ---------------------------------------------------------------------


def test_native_changes(hsds):
    d = hsds[0]
    root = ok(send(d, "h5put_domain", {"domain": "/native.h5"}))["root"]
    g = ok(send(d, "h5post_group", {"domain": "/native.h5",
                                    "body": json.dumps({"link": {"id": root, "name": "g"}})}))
    dset = ok(send(d, "h5post_dataset", {"domain": "/native.h5", "body": json.dumps(
        {"type": "H5T_STD_I64LE", "shape": [3]})}))
    ok(send(d, "h5put_value", {"domain": "/native.h5", "id": dset["id"],
                               "body": json.dumps({"value": [4, 5, 6]})}))
    ok(send(d, "h5put_link", {"domain": "/native.h5", "id": g["id"], "name": "v",
                              "body": json.dumps({"id": dset["id"]})}))
    ok(send(d, "h5put_attr", {"domain": "/native.h5", "id": g["id"], "name": "n",
                              "body": json.dumps({"type": "H5T_STD_I8LE", "shape": [],
                                                  "value": 3})}))
    with h5py.File(d.data_dir / "native.h5", "r") as f:
        assert f["g/v"][()].tolist() == [4, 5, 6] and f["g"].attrs["n"] == 3
    ok(send(d, "h5delete_domain", {"domain": "/native.h5"}))
    assert not (d.data_dir / "native.h5").exists()


# ---- atomic and durable --------------------------------------------------------------------


def fault_daemon():
    """A daemon whose system calls and allocations fail when told to (the fault table), its
    endpoint on a free port: (d, an Endpoint without credentials)."""
    d, port = hsds_daemon(locales=1, env={"H5ARK_FAULTS": "1"})
    d.data_dir.mkdir(exist_ok=True)
    return d, Endpoint(port, auth=None)


def fault(d, **kw):
    """Arm the fault table (kw: class, nth, error), or with none read and reset it."""
    hdr, _ = send(d, "fault", kw)
    assert hdr["ok"], hdr
    return hdr["result"]


def test_changes_under_the_fault_table(tmp_path):
    """Each system call (ENOSPC, EIO) and allocation (ENOMEM) of one change fails in turn:
    the answer is an error or a success, the file is the old one or the new one, no
    temporary is left and the daemon serves on."""
    d, ep = fault_daemon()
    try:
        dom = "/faults.h5"
        root = new_domain(ep, dom)
        f8 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
        oid = create_dataset(ep, dom, root, "x", {
            "type": f8, "shape": [64], "maxdims": [0],
            "creationProperties": {"filters": [{"name": "gzip"}]}}, np.zeros(64), "<f8")
        path = d.data_dir / "faults.h5"
        new = np.arange(64.0)

        def change():
            return ep.call("PUT", f"/datasets/{oid}/value", {"domain": dom},
                           body=new.tobytes(), headers=OCTETS)

        def values():
            with h5py.File(path, "r") as f:
                return f["x"][()]

        old = path.read_bytes()
        fault(d)
        assert change()[0] == 200
        counts = fault(d)
        tried = 0
        for klass, errors in (("io", ["ENOSPC", "EIO"]), ("alloc", ["ENOMEM"])):
            names = counts[f"{klass}_calls"]
            step = max(1, len(names) // (12 if os.environ.get("H5ARKD_WRAPPER") else 60))
            for error in errors:
                for k in range(1, len(names) + 1, step):
                    path.write_bytes(old)
                    fault(d, **{"class": klass, "nth": k, "error": error})
                    status, _, body = change()
                    report = fault(d)
                    what = (klass, error, k, status, body)
                    got = values()
                    assert (got == 0).all() or (got == new).all(), what
                    if status == 200:
                        assert (got == new).all(), what
                    else:
                        assert report["fired"], what
                        assert status in (413, 500), what
                        assert json.loads(body)["message"], what
                    assert temps(d.data_dir) == [], what
                    tried += 1
        assert tried > 10
        assert call(ep, "GET", "/", dom)["root"] == root
    finally:
        d.cleanup()


@pytest.mark.not_under_valgrind("the SIGKILL harness: kills, not memory")
def test_sigkill_never_tears_a_file(tmp_path):
    """Writes of a whole dataset, each of one value everywhere, while the daemon is killed
    at random moments: the file always opens, holds one value everywhere, never older than
    the last answered write."""
    data = tmp_path / "data"
    data.mkdir()
    with h5py.File(data / "k.h5", "w") as f:
        f.create_dataset("x", data=np.zeros(1 << 18), chunks=(1 << 14,), compression="gzip")
    rng = random.Random(7)
    trials = int(os.environ.get("H5ARK_CRASH_TRIALS", "12"))
    value = 0
    for trial in range(trials):
        d, port = hsds_daemon(locales=1, data_dir=data)
        try:
            ep = Endpoint(port, auth=None)
            root = call(ep, "GET", "/", "/k.h5")["root"]
            oid = call(ep, "GET", f"/groups/{root}/links/x", "/k.h5")["link"]["id"]
            acked = [value]

            def writer(stop):
                n = acked[-1]
                e = Endpoint(port, auth=None)
                while not stop.is_set():
                    n += 1
                    try:
                        status, _, _ = e.call("PUT", f"/datasets/{oid}/value", {
                            "domain": "/k.h5", "element_count": "1"},
                            body=np.float64(n).tobytes(), headers=OCTETS)
                    except Exception:  # noqa: BLE001 - the daemon was killed
                        return
                    if status == 200:
                        acked.append(n)

            d.kill_during(writer, rng.uniform(0.05, 0.6) * TOOL_SLOWDOWN)
        finally:
            d.cleanup()
        with h5py.File(data / "k.h5", "r") as f:
            got = f["x"][()]
        assert (got == got[0]).all(), trial
        assert got[0] >= acked[-1], (trial, got[0], acked[-1])
        value = int(got[0])
    assert value > 0


# ---- the Python client's h5py-like File, at one rank and at two -----------------------------


def test_python_client_file(ranked_conn):
    """h5ark's File over the native commands: what it writes h5py reads as written; what
    h5py wrote it reads back."""
    import h5ark
    d = ranked_conn.daemon
    d.data_dir.mkdir(exist_ok=True)
    c = h5ark.Client(d.endpoint, token=getattr(d, "token", None), timeout=60)
    try:
        f = c.h5file("/py/run.h5", "w")
        x = f.create_dataset("grp/x", data=np.arange(10.0), chunks=(4,), maxshape=(None,),
                             compression="gzip", shuffle=True, fillvalue=-1.0)
        x[2:4] = [7, 8]
        x.resize((12,))
        f["grp"].attrs["units"] = "m"
        f.create_dataset("words", data=["a", "bé", ""])
        assert x.shape == (12,) and x.maxshape == (None,) and x.chunks == (4,)
        assert x[:].tolist() == [0, 1, 7, 8, 4, 5, 6, 7, 8, 9, -1, -1]
        assert sorted(f) == ["grp", "words"] and "grp/x" in f and "nope" not in f
        assert f["grp"].attrs["units"] == "m"
        assert list(f["words"][:]) == ["a", "bé", ""]
        with h5py.File(d.data_dir / "py" / "run.h5", "r") as h:
            assert h["grp/x"][()].tolist() == x[:].tolist()
            assert h["grp/x"].compression == "gzip" and h["grp/x"].fillvalue == -1
            assert h["grp"].attrs["units"] == "m"
        with pytest.raises(KeyError):
            f["nope"]
        del f["words"]
        assert list(f) == ["grp"]
        with pytest.raises(FileExistsError):
            c.h5file("/py/run.h5", "x")
        r = c.h5file("/py/run.h5", "r")
        assert r["grp/x"][[0, 3]].tolist() == [0, 8]
        # the module-level h5ark.h5file stays the function once the File's module is loaded
        import h5ark
        assert callable(h5ark.h5file) and not isinstance(h5ark.h5file, type(h5ark))
    finally:
        c.close()


def test_endpoint_at_two_ranks():
    """The endpoint is rank 0's: the same answers when the daemon is two ranks."""
    if MPIRUN is None or not mpi_build():
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")
    d, port = hsds_daemon(locales=1, ranks=2)
    try:
        d.data_dir.mkdir(exist_ok=True)
        ep = Endpoint(port, auth=None)
        root = new_domain(ep, "/ranks.h5")
        oid = create_dataset(ep, "/ranks.h5", root, "x", {"type": "H5T_STD_I16LE", "shape": [5]},
                             np.arange(5), "<i2")
        got, _, body = ep.call("GET", f"/datasets/{oid}/value", {"domain": "/ranks.h5",
                                                                  "select": "[1:4]"})
        assert got == 200 and json.loads(body)["value"] == [1, 2, 3]
        with h5py.File(d.data_dir / "ranks.h5", "r") as f:
            assert f["x"][()].tolist() == [0, 1, 2, 3, 4]
    finally:
        d.cleanup()


def test_changes_serialised_with_tohdf():
    """tohdf (mode update, which copies the file and puts the copy in place) and HSDS value
    writes to another dataset of the same file, at the same time, round after round: after
    each round the file holds both rounds' values, none lost to the other's put in place."""
    d, port = hsds_daemon(locales=2)
    try:
        d.data_dir.mkdir(exist_ok=True)
        n = 1 << 16
        with h5py.File(d.data_dir / "both.h5", "w") as f:
            f["a"] = np.zeros(n, dtype="<i8")
            f["b"] = np.zeros(n, dtype="<i8")
        ep = Endpoint(port, auth=None)
        root = call(ep, "GET", "/", "/both.h5")["root"]
        bid = call(ep, "GET", f"/groups/{root}/links/b", "/both.h5")["link"]["id"]
        for k in range(1, 13):
            name = put_array(d, np.full(n, k, dtype="<i8"))
            done = []
            t = threading.Thread(target=lambda: done.append(send(d, "tohdf", {
                "names": [name], "datasets": ["a"], "path": "both.h5", "mode": "update",
                "file_type": "single"})))
            t.start()
            for _ in range(3):
                call(ep, "PUT", f"/datasets/{bid}/value", "/both.h5",
                     np.full(n, k, dtype="<i8").tobytes(), headers=OCTETS)
            t.join()
            ok(done[0])
            with h5py.File(d.data_dir / "both.h5", "r") as f:
                assert (f["a"][()] == k).all() and (f["b"][()] == k).all(), k
    finally:
        d.cleanup()


def test_a_body_over_the_limit_is_refused_unread(ep, hsds):
    """A body announced over max_request_size is answered 413 from its headers alone."""
    import socket
    root = new_domain(ep, "/big-body.h5")
    limit = call(ep, "GET", "/", "/big-body.h5")["limits"]["max_request_size"]
    with socket.create_connection(("127.0.0.1", hsds[1]), timeout=30) as s:
        s.sendall((f"PUT /groups/{root}/attributes/a?domain=/big-body.h5 HTTP/1.1\r\n"
                   f"Host: t\r\nAuthorization: {basic('alice', WRITE)}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {limit + 1}\r\n\r\n")
                  .encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert call(ep, "GET", f"/groups/{root}/attributes", "/big-body.h5")["attributes"] == []


def test_users_and_acls(tmp_path):
    """With users (shared/SERVICE.md §3), the token decides who asks and the ACLs what they
    may do: alice makes a file in her home and reads it; bob may neither read nor change
    it (403 naming the permission) and may not make a file there; a shared group folder
    takes its members' files; an admin reads everything."""
    d, port = users_daemon(tmp_path, locales=2,
                           tokens="tok-alice write user=alice groups=physics\n"
                                  "tok-bob write user=bob groups=physics\n"
                                  "tok-carol write user=carol\n"
                                  "tok-root admin user=root\n")
    eps = {u: Endpoint(port, auth=basic("anyone", f"tok-{u}"))
           for u in ("alice", "bob", "carol", "root")}
    try:
        a, b, c, root = (eps[u] for u in ("alice", "bob", "carol", "root"))
        new_domain(a, "/home/alice/a.h5")
        assert h5py.is_hdf5(d.data_dir / "home" / "alice" / "a.h5")
        assert call(a, "GET", "/", "/home/alice/a.h5")["class"] == "domain"
        msg = call(b, "GET", "/", "/home/alice/a.h5", status=403)["message"]
        assert "read" in msg and "/home/alice/a.h5" in msg, msg
        assert "create" in call(b, "PUT", "/", "/home/alice/b.h5", status=403)["message"]
        assert "delete" in call(b, "DELETE", "/", "/home/alice/a.h5", status=403)["message"]
        root_id = call(a, "GET", "/", "/home/alice/a.h5")["root"]
        call(b, "POST", "/groups", "/home/alice/a.h5",
             {"link": {"id": root_id, "name": "g"}}, status=403)
        call(a, "POST", "/groups", "/home/alice/a.h5",
             {"link": {"id": root_id, "name": "g"}}, status=201)
        # a shared group's folder: its members make and read files, others do not
        new_domain(b, "/shared/physics/run.h5")
        assert call(a, "GET", "/", "/shared/physics/run.h5")["class"] == "domain"
        call(c, "GET", "/", "/shared/physics/run.h5", status=403)
        # an admin reads everything
        assert call(root, "GET", "/", "/home/alice/a.h5")["root"] == root_id
        with h5py.File(d.data_dir / "home" / "alice" / "a.h5") as f:
            assert list(f) == ["g"]
    finally:
        for e in eps.values():
            e.conn.close()
        d.cleanup()


def test_owner_and_acl_routes(tmp_path):
    """With users, GET /'s owner is the file's creator (recorded by PUT /, so quota.disk
    counts it), else the caller; GET /acls/USER answers the caller's own rights as every
    request is allowed by them, another user's entry with readACL; GET /acls the governing
    ACL's entries; PUT /acls/USER changes one entry as setacl does (updateACL)."""
    d, port = users_daemon(tmp_path, locales=1,
                           tokens="tok-alice write user=alice groups=physics\n"
                                  "tok-bob write user=bob groups=physics\n"
                                  "tok-root admin user=root\n")
    a, b, root = (Endpoint(port, auth=basic("anyone", f"tok-{u}"))
                  for u in ("alice", "bob", "root"))
    names = ["read", "create", "update", "delete", "readACL", "updateACL"]

    def rights(ep, domain, user, status=200):
        got = call(ep, "GET", f"/acls/{user}", domain, status=status)
        return got if status != 200 else {k: got["acl"][k] for k in names}

    try:
        mine = "/home/alice/a.h5"
        new_domain(a, mine)
        assert call(a, "GET", "/", mine)["owner"] == "alice"
        assert call(root, "GET", "/", mine)["owner"] == "alice"  # the creator, not the caller
        size = (d.data_dir / "home" / "alice" / "a.h5").stat().st_size
        assert ok(send(d, "whoami", token="tok-alice"))["usage"]["disk"] == size
        # a file no request made: the caller
        (d.data_dir / "shared" / "physics").mkdir(parents=True, exist_ok=True)
        with h5py.File(d.data_dir / "shared" / "physics" / "old.h5", "w") as f:
            f["v"] = np.arange(3)
        assert call(b, "GET", "/", "/shared/physics/old.h5")["owner"] == "bob"
        assert call(a, "GET", "/", "/home/alice/")["owner"] == "alice"

        # the caller's own rights, as they are decided
        assert rights(a, mine, "alice") == dict.fromkeys(names, True)
        assert rights(root, mine, "root") == dict.fromkeys(names, True)
        assert rights(b, "/shared/physics/old.h5", "bob") == {
            "read": True, "create": True, "update": True, "delete": True, "readACL": True,
            "updateACL": False}
        assert "read" in rights(b, mine, "bob", status=403)["message"]
        # a member reads the shared folder's ACL (readACL for all), which has no alice entry
        assert "alice" in rights(b, "/shared/physics/old.h5", "alice", status=404)["message"]
        assert "bob" in rights(a, mine, "bob", status=404)["message"]
        assert [e["userName"] for e in call(a, "GET", "/acls", mine)["acls"]] == ["alice"]

        # alice lets bob read her home's files: bob reads, may not change the ACL
        got = call(a, "PUT", "/acls/bob", mine, {"read": True}, status=201)["acl"]
        assert got["userName"] == "bob" and got["read"] and not got["update"]
        assert call(b, "GET", "/", mine)["owner"] == "alice"
        assert rights(b, mine, "bob") == {**dict.fromkeys(names, False), "read": True}
        assert rights(a, mine, "bob") == rights(b, mine, "bob")
        assert "updateACL" in call(b, "PUT", "/acls/bob", mine, {"update": True},
                                   status=403)["message"]
        call(b, "POST", "/groups", mine, {"link": {"id": call(a, "GET", "/", mine)["root"],
                                                    "name": "g"}}, status=403)
        acl = ok(send(d, "getacl", {"path": "/home/alice"}, token="tok-alice"))
        assert {e["subject"]: e["read"] for e in acl["acl"]} == {"alice": True, "bob": True}
        assert sorted(e["userName"] for e in call(a, "GET", "/acls", mine)["acls"]) == [
            "alice", "bob"]
        assert (d.data_dir / "home" / "alice" / ".h5ark-acl").exists()
        # bad bodies and names change nothing
        call(a, "PUT", "/acls/bob", mine, {"read": "yes"}, status=400)
        call(a, "PUT", "/acls/bob", mine, b"not json", status=400)
        call(a, "PUT", "/acls/no%20one", mine, {"read": True}, status=400)
        assert rights(b, mine, "bob")["read"] is True
        assert b.call("DELETE", "/acls/bob", {"domain": mine})[0] == 405
        call(a, "GET", "/acls/alice", "/home/alice/none.h5", status=404)
    finally:
        for e in (a, b, root):
            e.conn.close()
        d.cleanup()


def test_quota_disk_checked_before_writing(tmp_path):
    """quota.disk (SERVICE.md §4) holds for the endpoint's writes as for tohdf's: PUT / (and
    the native h5put_domain) refuses a file that would pass it before making anything, and a
    change that would grow the user's file past it is refused with the file as it was
    (413, as resource_limit maps); the user's disk usage stays exact throughout."""
    d, port = users_daemon(tmp_path, locales=1,
                           tokens="tok-alice write user=alice quota.disk=2000\n"
                                  "tok-bob write user=bob\n"
                                  "tok-root admin user=root\n")
    a, b = (Endpoint(port, auth=basic("anyone", f"tok-{u}")) for u in ("alice", "bob"))
    home = d.data_dir / "home" / "alice"

    def disk():
        return ok(send(d, "whoami", token="tok-alice"))["usage"]["disk"]

    try:
        root = new_domain(a, "/home/alice/a.h5")
        one = (home / "a.h5").stat().st_size
        assert disk() == one and 2 * one <= 2000 < 3 * one
        new_domain(a, "/home/alice/b.h5")
        msg = call(a, "PUT", "/", "/home/alice/c.h5", status=413)["message"]
        assert "quota.disk" in msg and str(2 * one) in msg and str(one) in msg, msg
        assert "2000" in msg, msg
        reply = send(d, "h5put_domain", {"domain": "/home/alice/c.h5"}, token="tok-alice")
        assert reply[0]["error"]["code"] == "resource_limit", reply[0]
        assert sorted(p.name for p in home.iterdir()) == ["a.h5", "b.h5"]  # nothing made
        assert disk() == 2 * one
        # growing a file of hers past it: refused, the file as it was
        before = (home / "a.h5").read_bytes()
        dset = call(a, "POST", "/datasets", "/home/alice/a.h5",
                    {"type": "H5T_STD_I64LE", "shape": [1000],
                     "link": {"id": root, "name": "big"}}, status=413)
        assert "quota.disk" in dset["message"]
        assert (home / "a.h5").read_bytes() == before
        with h5py.File(home / "a.h5") as f:
            assert list(f) == []
        assert disk() == 2 * one
        # deleting gives it back; a small change then fits
        call(a, "DELETE", "/", "/home/alice/b.h5")
        assert disk() == one
        call(a, "POST", "/groups", "/home/alice/a.h5", {"link": {"id": root, "name": "g"}},
             status=201)
        assert disk() == (home / "a.h5").stat().st_size > one
        # another user is not bound by it
        new_domain(b, "/home/bob/big.h5")
        call(b, "POST", "/datasets", "/home/bob/big.h5",
             {"type": "H5T_STD_I64LE", "shape": [1000], "layout": {"class": "H5D_COMPACT"}},
             status=201)
        assert ok(send(d, "ping"))["pong"]
    finally:
        for e in (a, b):
            e.conn.close()
        d.cleanup()
