"""Load: 32 concurrent clients send a mix of requests (create, put, get, tohdf, readhdf,
lshdf, delete) for a minute. No error that should not happen, no lost reply, and memory
back where it started at the end."""
import os
import random
import threading
import time

import msgpack
import numpy as np
import zmq

from daemons import wait_for

CLIENTS = 32
SECONDS = float(os.environ.get("H5ARK_LOAD_SECONDS", "60"))


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Client:
    def __init__(self, endpoint):
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.next_id = 0

    def call(self, cmd, frames=(), buffers=None, **args):
        self.next_id += 1
        hdr = {"v": 1, "id": self.next_id, "cmd": cmd, "args": args}
        if buffers:
            hdr["buffers"] = buffers
        self.sock.send_multipart([msgpack.packb(hdr), *frames])
        if not self.sock.poll(120000):
            raise AssertionError(f"{cmd}: no reply within 120 s (lost)")
        parts = self.sock.recv_multipart()
        rep = msgpack.unpackb(parts[0])
        assert rep.get("id") == self.next_id, (cmd, rep)
        return rep, parts[1:]

    def ok(self, cmd, frames=(), buffers=None, **args):
        rep, payload = self.call(cmd, frames, buffers, **args)
        assert rep["ok"], (cmd, args, rep)
        return rep["result"], payload


def worker(endpoint, index, deadline, counts, failures):
    rng = random.Random(index)
    c = Client(endpoint)
    n = 0
    try:
        while time.time() < deadline:
            n += 1
            name = f"c{index}_{n}"
            size = rng.choice([0, 1, 7, 1000, 100_000])
            data = np.arange(size, dtype=np.int64) * index
            c.ok("put", [data.tobytes()], [{"name": "values", "nbytes": data.nbytes}],
                 dtype="int64", shape=[size], name=name)
            _, payload = c.ok("get", name=name)
            assert np.array_equal(np.frombuffer(b"".join(payload), np.int64), data)
            c.ok("create", dtype="float64", size=rng.randrange(1, 50_000), fill="uniform",
                 seed=n, name=name + "_u")
            if rng.random() < 0.3:
                path = f"load/c{index}_{n % 4}.h5"
                c.ok("tohdf", names=[name], path=path, file_type="single")
                entries, _ = c.ok("lshdf", path=path)
                assert [e["name"] for e in entries["entries"]] == [name]
                res, _ = c.ok("readhdf", paths=[path])
                back = res["objects"][name]["name"]
                _, payload = c.ok("get", name=back)
                assert np.array_equal(np.frombuffer(b"".join(payload), np.int64), data)
                c.ok("delete", names=[back])
                counts["hdf"] += 1
            # an error that should happen: it must be the right one
            rep, _ = c.call("get", name=name + "_missing")
            assert rep["error"]["code"] == "not_found", rep
            c.ok("delete", names=[name, name + "_u"])
            counts["rounds"] += 1
    except Exception as e:  # noqa: BLE001 - reported by the main thread
        failures.append(f"client {index}: {e!r}")
    finally:
        c.sock.close()


def test_load(start_daemon):
    d = start_daemon(locales=2)
    probe = Client(d.endpoint)
    base_used = probe.ok("getconfig")[0]["memory_used"]
    counts = {"rounds": 0, "hdf": 0}
    failures = []

    def run(seconds):
        deadline = time.time() + seconds
        threads = [threading.Thread(target=worker, args=(d.endpoint, i, deadline, counts, failures))
                   for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run(min(10.0, SECONDS / 4))  # warm up: the allocator's pools reach their working size
    rss_warm = rss_bytes(d.proc.pid)
    run(SECONDS)
    rss_end = rss_bytes(d.proc.pid)
    assert not failures, failures[:5]
    assert counts["rounds"] > CLIENTS, counts
    # a get's reply holds its array until ZeroMQ has sent the last frame, which may be just
    # after its client has it all and has deleted the array
    wait_for(lambda: probe.ok("getconfig")[0]["memory_used"] == base_used,
             "memory_used back to where it started")
    assert probe.ok("info")[0]["objects"] == []
    print(f"{CLIENTS} clients, {SECONDS:.0f} s: {counts['rounds']} rounds, {counts['hdf']} with "
          f"files; daemon RSS after warm-up {rss_warm >> 20} MiB, at the end {rss_end >> 20} MiB")
    assert rss_end <= rss_warm * 1.25 + (32 << 20), (rss_warm, rss_end)
    probe.sock.close()
