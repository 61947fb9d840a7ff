"""The HSDS endpoint's read handles kept open between requests, and large value answers
sent straight from the file (shared/HSDS_API.md §4, §8.2, §11), against a real daemon: a
file changed in place by h5py, or replaced by another renamed over it, between two
requests is answered as it is now; ids stay the same and are found by the kept file's
index; h5py opens a file for writing whenever no request runs on it; selections read from
the file's bytes match h5py's; and a slab sent from the file while the endpoint's own
writes land on it is always one whole state, never torn."""
import os
import pathlib
import socket
import threading
import time

import h5py
import numpy as np
import pytest

from daemons import TOOL_SLOWDOWN
from test_hsds import Endpoint, ID, hsds_daemon
from wire import ok, send

OCTETS = {"Accept": "application/octet-stream"}
SLOW = os.environ.get("H5ARKD_WRAPPER")  # under valgrind: fewer, smaller answers


@pytest.fixture(scope="module")
def hsds(tmp_path_factory):
    d, port = hsds_daemon(locales=2, data_dir=tmp_path_factory.mktemp("kept") / "data")
    d.data_dir.mkdir(exist_ok=True)
    yield d, port
    d.cleanup()


@pytest.fixture
def ep(hsds):
    e = Endpoint(hsds[1], auth=None)
    yield e
    e.conn.close()


def walk(ep, domain, path):
    oid = ep.json("/", domain=domain)["root"]
    for name in [p for p in path.split("/") if p]:
        oid = ep.json(f"/groups/{oid}/links/{name}", domain=domain)["link"]["id"]
    return oid


def binary(ep, domain, oid, select=None, dtype="<f8"):
    params = {"domain": domain, **({"select": select} if select else {})}
    status, hdrs, body = ep.call("GET", f"/datasets/{oid}/value", params, headers=OCTETS)
    assert status == 200, (select, status, body[:200])
    assert hdrs["Content-Type"] == "application/octet-stream"
    assert int(hdrs["Content-Length"]) == len(body)
    return np.frombuffer(body, dtype)


def test_a_change_by_h5py_between_requests_is_seen(ep, hsds):
    path = hsds[0].data_dir / "inplace.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(100_000.0)  # 800 KB: sent from the file
        f["small"] = np.arange(10, dtype="<i4")
    xid, sid = walk(ep, "/inplace.h5", "x"), walk(ep, "/inplace.h5", "small")
    assert (binary(ep, "/inplace.h5", xid) == np.arange(100_000.0)).all()
    assert (binary(ep, "/inplace.h5", sid, dtype="<i4") == np.arange(10)).all()
    # the same bytes' size, changed in place: only the file's times say so
    with h5py.File(path, "r+") as f:
        f["x"][:] = -np.arange(100_000.0)
        f["small"][3] = 99
    assert (binary(ep, "/inplace.h5", xid) == -np.arange(100_000.0)).all()
    assert binary(ep, "/inplace.h5", sid, dtype="<i4")[3] == 99
    # objects added: found by their links and by their ids (the index is the file's new one)
    with h5py.File(path, "r+") as f:
        f["g/new"] = np.arange(3, dtype="u1")
        f.attrs["added"] = 1
    nid = walk(ep, "/inplace.h5", "g/new")
    assert ep.json(f"/datasets/{nid}", domain="/inplace.h5")["shape"]["dims"] == [3]
    assert ep.json(f"/datasets/{nid}", domain="/inplace.h5", getalias=1)["alias"] == ["/g/new"]
    root = ep.json("/", domain="/inplace.h5")["root"]
    assert ep.json(f"/groups/{root}", domain="/inplace.h5")["attributeCount"] == 1
    # removed: its id no longer names anything
    with h5py.File(path, "r+") as f:
        del f["small"]
    ep.error(f"/datasets/{sid}", 404, params={"domain": "/inplace.h5"})


def test_a_file_renamed_over_is_seen(ep, hsds):
    data = hsds[0].data_dir
    with h5py.File(data / "swap.h5", "w") as f:
        f["x"] = np.zeros(50_000)
    xid = walk(ep, "/swap.h5", "x")
    assert (binary(ep, "/swap.h5", xid) == 0).all()
    with h5py.File(data / "swap.tmp", "w") as f:
        f["pad"] = np.arange(7)  # the new file's x lies at another address
        f["x"] = np.full((300, 200), 2.5)
    os.replace(data / "swap.tmp", data / "swap.h5")
    new = walk(ep, "/swap.h5", "x")
    assert new != xid
    assert ep.json(f"/datasets/{new}", domain="/swap.h5")["shape"]["dims"] == [300, 200]
    assert (binary(ep, "/swap.h5", new) == 2.5).all()
    # the old id's address holds another dataset in the new file: that is what it names now
    assert ep.json(f"/datasets/{xid}", domain="/swap.h5")["shape"]["dims"] == [7]
    os.unlink(data / "swap.h5")
    ep.error("/", 404, params={"domain": "/swap.h5"})


def test_ids_stable_and_found_by_the_index(ep, hsds):
    path = hsds[0].data_dir / "ids.h5"
    with h5py.File(path, "w") as f:
        for i in range(20):
            f[f"g{i % 4}/d{i}"] = np.arange(i + 1)
        f["g1/again"] = f["g0/d0"]  # one object, two hard links
        f["g2/soft"] = h5py.SoftLink("/g3/d3")
    names = [f"g{i % 4}/d{i}" for i in range(20)]
    ids = {n: walk(ep, "/ids.h5", n) for n in names}
    assert all(ID.match(i) for i in ids.values())
    other = Endpoint(hsds[1], auth=None)
    try:
        for n, oid in ids.items():
            for e in (ep, other):
                got = e.json(f"/datasets/{oid}", domain="/ids.h5")
                assert got["id"] == oid and got["shape"]["dims"] == [int(n.split("d")[-1]) + 1]
            assert walk(other, "/ids.h5", n) == oid
    finally:
        other.conn.close()
    alias = ep.json(f"/datasets/{ids['g0/d0']}", domain="/ids.h5", getalias=1)["alias"]
    assert sorted(alias) == ["/g0/d0", "/g1/again"]
    # an endpoint write keeps every address: the same ids name the same objects after it
    status, _, body = ep.call("PUT", f"/datasets/{ids['g3/d7']}/value",
                              {"domain": "/ids.h5", "select": "[0:8]"},
                              body=np.arange(8, 16).astype("<i8").tobytes(),
                              headers={"Content-Type": "application/octet-stream"})
    assert status == 200, body
    assert (binary(ep, "/ids.h5", ids["g3/d7"], dtype="<i8") == np.arange(8, 16)).all()
    assert {n: walk(ep, "/ids.h5", n) for n in names} == ids
    with h5py.File(path, "r") as f:
        assert (f["g3/d7"][()] == np.arange(8, 16)).all()


def test_h5py_opens_for_writing_between_requests(ep, hsds):
    path = hsds[0].data_dir / "idle.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(40_000.0)
    xid = walk(ep, "/idle.h5", "x")
    for _ in range(3):
        binary(ep, "/idle.h5", xid)
    # the endpoint holds its handle open, but no lock on the file between requests
    with h5py.File(path, "r+") as f:
        f["x"][0] = 123.0
    assert binary(ep, "/idle.h5", xid, "[0:2]").tolist() == [123.0, 1.0]


@pytest.mark.parametrize("select", [
    None, "[10:300,:]", "[3:5,:]", "[7,:]", "[5,10:20]", "[511,255]", "[3:5,2:9]",
    "[0:10:2,:]", "[[1,5,9],:]", "[0:0,:]", "[100:512,0:256]",
])
def test_selections_read_from_the_file_match_h5py(ep, hsds, select):
    path = hsds[0].data_dir / "rows.h5"
    want = np.arange(512 * 256, dtype="<f8").reshape(512, 256)
    if not path.exists():
        with h5py.File(path, "w") as f:
            f["c"] = want                                     # contiguous, as stored
            f["be"] = want.astype(">f8")                      # converted by the library
            f.create_dataset("k", data=want, chunks=(64, 64))  # chunked
            f.create_dataset("unwritten", shape=(512, 256), dtype="<f8")
    index = tuple(eval(f"np.s_{select}")) if select else ()
    if select and select.startswith("[["):
        index = ([1, 5, 9], slice(None))
    for name in ("c", "be", "k", "unwritten"):
        got = binary(ep, "/rows.h5", walk(ep, "/rows.h5", name), select)
        expect = want[index] if name != "unwritten" else np.zeros_like(want)[index]
        assert got.tolist() == np.ravel(expect).tolist(), (name, select)


def test_a_slab_sent_from_the_file_is_never_torn(hsds):
    """Whole-dataset reads (8 MiB, read from the file as they are sent) beside writes of one
    value everywhere: every answer is one value, never older than one answered before."""
    path = hsds[0].data_dir / "torn.h5"
    n, writes = (1 << 17, 6) if SLOW else (1 << 20, 24)
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros(n)
    port = hsds[1]
    reader, writer = Endpoint(port, auth=None), Endpoint(port, auth=None)
    xid = walk(reader, "/torn.h5", "x")
    done, written, seen, errors = threading.Event(), [0], [], []

    def write():
        try:
            for k in range(1, writes + 1):
                status, _, body = writer.call(
                    "PUT", f"/datasets/{xid}/value",
                    {"domain": "/torn.h5", "select": f"[0:{n}]", "element_count": 1},
                    body=np.float64(k).tobytes(),
                    headers={"Content-Type": "application/octet-stream"})
                assert status == 200, body
                written[0] = k
        except BaseException as e:  # noqa: B902 - reported by the test
            errors.append(e)
        finally:
            done.set()

    t = threading.Thread(target=write)
    t.start()
    try:
        while not done.is_set() or len(seen) < 3:
            before = written[0]
            got = binary(reader, "/torn.h5", xid)
            assert got.size == n
            assert (got == got[0]).all(), f"torn: values {np.unique(got)[:5]}"
            assert got[0] >= before
            seen.append(got[0])
    finally:
        t.join()
        reader.conn.close()
        writer.conn.close()
    assert not errors, errors
    assert seen == sorted(seen)
    with h5py.File(path, "r") as f:
        assert (f["x"][()] == writes).all()


def test_a_file_cut_short_while_its_answer_is_sent(hsds):
    """Another program, taking no lock, truncates a file while a large answer is being sent
    from it: that answer ends short, and the daemon serves on."""
    path = hsds[0].data_dir / "cut.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.ones(4 << 20)  # 32 MiB, more than the sockets' buffers hold
    ep = Endpoint(hsds[1], auth=None)
    xid = walk(ep, "/cut.h5", "x")
    s = socket.create_connection(("127.0.0.1", hsds[1]))
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        s.sendall(f"GET /datasets/{xid}/value?domain=/cut.h5 HTTP/1.1\r\nHost: t\r\n"
                  "Accept: application/octet-stream\r\n\r\n".encode())
        got = s.recv(1 << 16)
        assert got.startswith(b"HTTP/1.1 200")
        time.sleep(0.2)
        os.truncate(path, 4096)
        s.settimeout(30 * TOOL_SLOWDOWN)
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got += chunk
        assert len(got) < 32 << 20  # the connection was closed before the whole body
    finally:
        s.close()
    ep.error("/", 400, params={"domain": "/cut.h5"})  # no longer an HDF5 file
    with h5py.File(hsds[0].data_dir / "after.h5", "w") as f:
        f["x"] = np.arange(5.0)
    assert binary(ep, "/after.h5", walk(ep, "/after.h5", "x")).tolist() == [0, 1, 2, 3, 4]
    ep.conn.close()


def held_open(d, name):
    """The daemon's descriptors on a removed file `name` (its space not given back)."""
    fds = pathlib.Path(f"/proc/{d.proc.pid}/fd")
    held = []
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.endswith(f"/{name} (deleted)"):
            held.append(target)
    return held


@pytest.mark.parametrize("how", ["DELETE /", "rmhdf"])
def test_a_removed_file_is_let_go_at_once(ep, hsds, how):
    """A file read through the endpoint (its handle kept) and then removed by h5ark, with the
    endpoint's DELETE / or rmhdf: no descriptor of the daemon's holds it (nor its space)
    afterwards, though no other request has come to close idle handles."""
    d = hsds[0]
    name = f"removed_{how[0]}.h5"
    with h5py.File(d.data_dir / name, "w") as f:
        f["x"] = np.arange(50_000.0)
    xid = walk(ep, f"/{name}", "x")
    assert binary(ep, f"/{name}", xid)[7] == 7.0
    if how == "rmhdf":
        assert ok(send(d, "rmhdf", {"path": name}))["deleted"] == [name]
    else:
        status, _, body = ep.call("DELETE", "/", {"domain": f"/{name}"})
        assert status == 200, body
    assert not (d.data_dir / name).exists()
    assert held_open(d, name) == []
