"""The daemon as three ranks on three "machines": network namespaces on a bridge
(netns_cluster.py), mpirun starting each rank in its namespace through an rsh agent as it
would through ssh, MPI and the ranks' ZeroMQ links over TCP between namespaces, the
endpoint on rank 0's namespace address, and this client outside every namespace (root
namespace, through the bridge). Results and files match a one-rank daemon with as many
locales; nothing is left behind."""
import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from daemons import Daemon, mpi_build
from wire import call, call_ok, request
from netns_cluster import UNSHARE, NetnsCluster, NetnsDaemon, unavailable
from test_ranks import (group_keys, h5_tree, object_bytes, put_array, put_key, put_strings,
                        same_result, strings_keys)

RANKS = 3
THREADS = 1  # locales per rank: 2 cores here; the one-rank daemon gets RANKS * THREADS

_why = unavailable() or (None if shutil.which("mpirun") else "mpirun is not installed")
pytestmark = pytest.mark.skipif(_why is not None, reason=str(_why))


@pytest.fixture(scope="module")
def cluster():
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    c = NetnsCluster(RANKS)
    try:
        with c:
            yield c
    finally:
        assert c.leftovers() == [], c.leftovers()


@pytest.fixture(scope="module")
def multi(cluster):
    d = NetnsDaemon(cluster, RANKS, THREADS)
    try:
        yield d
    finally:
        d.cleanup()


@pytest.fixture(scope="module")
def single():
    d = Daemon(locales=RANKS * THREADS)
    yield d
    d.cleanup()


def test_ranks_on_three_hosts(multi, cluster):
    res, _ = call_ok(multi.endpoint, "getconfig")
    assert res["ranks"] == RANKS and res["locales"] == RANKS * THREADS
    if UNSHARE:  # each rank in its own namespace, named after it, in order
        assert res["hosts"] == cluster.names
    # and the client is outside them all: the endpoint is not an address of this namespace
    assert cluster.addresses[0] not in subprocess.run(
        ["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout


def test_create_put_get_match_one_rank(multi, single):
    rng = np.random.default_rng(3)
    big = rng.random(1_000_003)  # 8 MB: most of it crosses the bridge twice
    words = ["", "alpha", "é" * 7, "x" * 5000] * 301
    for d in (multi, single):
        call_ok(d.endpoint, "clear")
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        got = []
        for args in [{"dtype": "int64", "fill": "arange", "start": -5, "stop": 100_000, "step": 3},
                     {"dtype": "float32", "fill": "uniform", "seed": 3, "size": 10_001},
                     {"dtype": "bool", "fill": "ones", "size": 2}]:
            obj = call_ok(d.endpoint, "create", args)[0]["object"]
            got.append(({**obj, "name": ""}, object_bytes(d.endpoint, obj)))
        name_big = put_array(d.endpoint, big)
        got.append(object_bytes(d.endpoint, {"name": name_big}))
        hdr, _ = put_strings(d.endpoint, words)
        assert hdr["ok"], hdr
        got.append(object_bytes(d.endpoint, hdr["result"]["object"]))
        out[name] = got
    assert out["multi"] == out["single"]
    assert out["multi"][3] == big.tobytes()


@pytest.mark.parametrize("file_type", ["single", "distribute", "gzip"])
def test_tohdf_readhdf_match_one_rank(multi, single, file_type):
    """gzip: one compressed file, every rank's chunks sent over the bridge to rank 0."""
    words = ["w%d" % (i * i) for i in range(3000)] + ["", "ü" * 40]
    dirs, res = {}, {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        objs = [call_ok(d.endpoint, "create", {"dtype": "int64", "fill": "arange", "stop": 50_000})[0],
                call_ok(d.endpoint, "create", {"dtype": "float64", "fill": "uniform", "seed": 1,
                                               "size": 33_333})[0]]
        names = [o["object"]["name"] for o in objs]
        hdr, _ = put_strings(d.endpoint, words)
        names.append(hdr["result"]["object"]["name"])
        out = d.data_dir / file_type
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        args = {"names": names, "datasets": ["i", "f", "s"], "path": f"{file_type}/x.h5",
                "file_type": "distribute" if file_type == "distribute" else "single"}
        if file_type == "gzip":
            args["compression"] = "gzip"
        res[name] = call_ok(d.endpoint, "tohdf", args)[0]
        dirs[name] = out
    assert res["multi"] == res["single"]
    files = sorted(os.listdir(dirs["multi"]))
    assert files == sorted(os.listdir(dirs["single"]))
    assert len(files) == (RANKS * THREADS if file_type == "distribute" else 1)
    for f in files:  # h5py reads what every rank wrote into the shared directory
        assert h5_tree(dirs["multi"] / f) == h5_tree(dirs["single"] / f), f
    got, _ = call_ok(multi.endpoint, "readhdf", {"paths": [f"{file_type}/x*"]})
    want, _ = call_ok(single.endpoint, "readhdf", {"paths": [f"{file_type}/x*"]})
    same_result(got, want, multi.endpoint, single.endpoint)


@pytest.mark.parametrize("label", ["int64 many values", "two keys", "large, skewed"])
def test_groupby_aggregate_match_one_rank(multi, single, label):
    keys = group_keys(label)
    vals = np.random.default_rng(5).integers(-1000, 1000, len(keys[0]))
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        knames = [put_array(d.endpoint, k) for k in keys]
        gb = call_ok(d.endpoint, "groupby", {"keys": knames})[0]["object"]
        hdr, frames = call(d.endpoint, "get", {"name": gb["name"]})
        assert hdr["ok"], hdr
        got = [b"".join(bytes(f) for f in frames)]
        vname = put_array(d.endpoint, vals)
        for op in ["count", "sum", "min", "nunique"]:
            args = {"groupby": gb["name"], "op": op}
            if op != "count":
                args["values"] = vname
            r = call_ok(d.endpoint, "aggregate", args)[0]
            got.append([object_bytes(d.endpoint, o) for o in r["keys"] + [r["values"]]])
        out[name] = got
    assert out["multi"] == out["single"]


@pytest.mark.parametrize("label", ["many duplicates", "strings and int", "long strings"])
def test_groupby_strings_keys_match_one_rank(multi, single, label):
    """Strings keys: their records sorted across the namespaces' ranks over TCP."""
    keys = strings_keys(label)
    words = [["q", "", "ä"][i % 3] for i in range(len(keys[0]))]
    out = {}
    for name, d in [("multi", multi), ("single", single)]:
        call_ok(d.endpoint, "clear")
        knames = [put_key(d.endpoint, k) for k in keys]
        gb = call_ok(d.endpoint, "groupby", {"keys": knames})[0]["object"]
        got = [object_bytes(d.endpoint, gb)]
        vname = put_key(d.endpoint, words)
        for op in ["count", "first", "nunique"]:
            r = call_ok(d.endpoint, "aggregate", {"groupby": gb["name"], "op": op, "values": vname})[0]
            got.append([object_bytes(d.endpoint, o) for o in r["keys"] + [r["values"]]])
        out[name] = got
    assert out["multi"] == out["single"]


def test_shutdown_stops_every_rank(multi, cluster):
    """Last: shutdown ends mpirun cleanly and no process is left in any namespace."""
    hdr, _ = request(multi.endpoint, {"v": 1, "cmd": "shutdown"})
    assert hdr["ok"], hdr
    assert multi.proc.wait(30) == 0, multi.read_log()
    deadline = time.time() + 10
    while any(cluster.pids().values()) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(cluster.pids().values()), cluster.pids()
