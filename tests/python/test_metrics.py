"""The metrics endpoint (--metrics-endpoint) and the per-request log lines, against a real
daemon: the exposition is parsed strictly (Prometheus text format 0.0.4), counters must
move by exactly the requests made, and the HTTP side must survive whatever a client sends
while the daemon keeps serving ZeroMQ. docs/OPERATIONS.md is the contract."""
import math
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import h5py
import msgpack
import numpy as np
import pytest
import zmq

from conftest import project_version
from daemons import Daemon, daemon_binary, TOOL_SLOWDOWN
from wire import request, unique

HTTP_TIMEOUT = 10 * TOOL_SLOWDOWN
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_ctx = zmq.Context.instance()

# ---- a strict reader of the text exposition format ----------------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
SAMPLE = re.compile(rf"^({NAME})(?:\{{(.*)\}})? (\S+)$")
LABEL_PAIR = re.compile(rf'({LABEL})="((?:[^"\\\n]|\\[\\"n])*)"')
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_value(text):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    assert re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?", text), f"bad value {text!r}"
    return float(text)


def parse_labels(text):
    labels, pos = {}, 0
    while pos < len(text):
        m = LABEL_PAIR.match(text, pos)
        assert m, f"bad label set {{{text}}} at {pos}"
        assert m.group(1) not in labels, f"label {m.group(1)} twice in {{{text}}}"
        labels[m.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1),
                                    m.group(2))
        pos = m.end()
        if pos < len(text):
            assert text[pos] == ",", f"bad label set {{{text}}}"
            pos += 1
    return labels


def parse_exposition(text):
    """{family: {"type", "help", "samples": [(name, labels, value)]}}, checking the format
    as Prometheus reads it and the rules of each type."""
    assert text.endswith("\n"), "the exposition must end with a newline"
    families, current, seen = {}, None, set()
    for n, line in enumerate(text[:-1].split("\n"), 1):
        assert line, f"line {n}: empty line"
        if line.startswith("#"):
            m = re.fullmatch(rf"# (HELP|TYPE) ({NAME}) (.+)", line)
            assert m, f"line {n}: a comment that is not HELP or TYPE: {line!r}"
            kind, name, rest = m.groups()
            fam = families.setdefault(name, {"type": None, "help": None, "samples": []})
            assert not fam["samples"], f"line {n}: {kind} of {name} after its samples"
            if kind == "HELP":
                assert fam["help"] is None, f"line {n}: second HELP of {name}"
                fam["help"] = rest
            else:
                assert fam["type"] is None, f"line {n}: second TYPE of {name}"
                assert rest in TYPES, f"line {n}: unknown type {rest}"
                fam["type"] = rest
            current = name
            continue
        m = SAMPLE.match(line)
        assert m, f"line {n}: not a sample: {line!r}"
        name, labels, value = m.group(1), parse_labels(m.group(2) or ""), parse_value(m.group(3))
        fam = families.get(current)
        assert fam and fam["type"], f"line {n}: {name} before any TYPE"
        suffixes = {"histogram": ("_bucket", "_sum", "_count")}.get(fam["type"], ("",))
        assert name in [current + s for s in suffixes], \
            f"line {n}: {name} is not a sample of the {fam['type']} {current}"
        key = (name, tuple(sorted(labels.items())))
        assert key not in seen, f"line {n}: series {key} twice"
        seen.add(key)
        fam["samples"].append((name, labels, value))
    for name, fam in families.items():
        assert fam["type"] and fam["help"], f"{name} lacks HELP or TYPE"
        if fam["type"] == "counter":
            assert name.endswith("_total"), f"counter {name} must end in _total"
        for s_name, _, value in fam["samples"]:
            if fam["type"] in ("counter", "histogram") and not s_name.endswith("_sum"):
                assert value >= 0 and value == int(value), (s_name, value)
        if fam["type"] == "histogram":
            check_histogram(name, fam["samples"])
    return families


def check_histogram(name, samples):
    """Cumulative buckets in increasing `le`, ending at +Inf, whose count is _count."""
    series = {}
    for s_name, labels, value in samples:
        rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        entry = series.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if s_name.endswith("_bucket"):
            assert "le" in labels, f"{s_name} without le"
            entry["buckets"].append((parse_value(labels["le"]), value))
        elif s_name.endswith("_sum"):
            assert "le" not in labels
            entry["sum"] = value
        else:
            assert "le" not in labels
            entry["count"] = value
    for rest, e in series.items():
        les = [le for le, _ in e["buckets"]]
        counts = [c for _, c in e["buckets"]]
        assert les and les[-1] == math.inf, f"{name}{rest}: no +Inf bucket"
        assert les == sorted(les) and len(set(les)) == len(les), f"{name}{rest}: le order {les}"
        assert counts == sorted(counts), f"{name}{rest}: buckets not cumulative {counts}"
        assert e["count"] == counts[-1], f"{name}{rest}: _count {e['count']} != +Inf {counts[-1]}"
        assert e["sum"] is not None and e["sum"] >= 0, f"{name}{rest}: _sum {e['sum']}"


def samples(families):
    """{(sample name, sorted labels): value} over every family."""
    return {(n, tuple(sorted(lb.items()))): v
            for fam in families.values() for n, lb, v in fam["samples"]}


# ---- helpers ------------------------------------------------------------------------------

def http(url, method="GET"):
    """(status, headers, body) of one HTTP request, errors included."""
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def metrics_url(d):
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "getconfig"})
    assert hdr["ok"], hdr
    address = hdr["result"]["metrics_endpoint"]
    assert re.fullmatch(r"127\.0\.0\.1:\d+", address), address
    assert not address.endswith(":0")
    return f"http://{address}/metrics"


def scrape(d):
    status, headers, body = http(d.metrics_url)
    assert status == 200, (status, body)
    assert headers["Content-Type"] == CONTENT_TYPE
    return samples(parse_exposition(body.decode("utf-8")))


def value(s, name, **labels):
    return s.get((name, tuple(sorted(labels.items()))), 0)


def delta(before, after, name):
    """{labels: change} of every series of `name` that changed."""
    out = {}
    for key in set(before) | set(after):
        if key[0] == name and after.get(key, 0) != before.get(key, 0):
            out[key[1]] = after.get(key, 0) - before.get(key, 0)
    return out


def call(d, header, frames=(), raw_header=None):
    """One request on a fresh DEALER: (reply header, frames, bytes sent, bytes received),
    the bytes being the header and payload frames, as the daemon counts them."""
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(d.endpoint)
    try:
        head = raw_header if raw_header is not None else msgpack.packb(header, use_bin_type=True)
        sock.send_multipart([head, *frames])
        assert sock.poll(30000 * TOOL_SLOWDOWN), "no reply"
        parts = sock.recv_multipart()
        return (msgpack.unpackb(parts[0], raw=False), parts[1:],
                len(head) + sum(len(f) for f in frames), sum(len(p) for p in parts))
    finally:
        sock.close()


def wrapped(args):
    """The daemon's command line under H5ARKD_WRAPPER (valgrind), as conftest runs it."""
    return [*os.environ.get("H5ARKD_WRAPPER", "").split(), *args]


def put_header(i, name, n):
    return {"v": 1, "id": i, "cmd": "put",
            "args": {"objtype": "pdarray", "dtype": "int64", "shape": [n], "name": name},
            "buffers": [{"name": "values", "nbytes": 8 * n}]}


LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (error|warn|notice|info|debug) +(.*)$")
LOGFMT_PAIR = re.compile(r'([a-z_]+)=("(?:[^"\\]|\\\\|\\"|\\x[0-9a-f]{2})*"|[^\s"=]+)')


def parse_logfmt(text):
    """key=value pairs separated by one space; quoted values unescaped to bytes."""
    out, pos = {}, 0
    while pos < len(text):
        m = LOGFMT_PAIR.match(text, pos)
        assert m, f"not logfmt at {pos}: {text!r}"
        v = m.group(2)
        if v.startswith('"'):
            v = re.sub(rb"\\x([0-9a-f]{2})|\\(.)",
                       lambda e: bytes([int(e.group(1), 16)]) if e.group(1) else e.group(2),
                       v[1:-1].encode("ascii"))
        out[m.group(1)] = v
        pos = m.end()
        if pos < len(text):
            assert text[pos] == " ", f"not logfmt at {pos}: {text!r}"
            pos += 1
    return out


def request_lines(d):
    """The daemon's per-request log lines, parsed, by id (requests without one under '-')."""
    out = {}
    for line in d.read_log().splitlines():
        m = LOG_LINE.match(line)
        if not m or "event=request" not in m.group(3):
            continue
        assert m.group(2) == "info", line
        fields = parse_logfmt(m.group(3))
        assert list(fields)[:7] == ["event", "cmd", "id", "ms", "bytes_in", "bytes_out",
                                    "outcome"], line
        out.setdefault(fields["id"], []).append(fields)
    return out


@pytest.fixture(scope="module")
def md():
    """A daemon with the endpoint on a port of its choosing and request lines logged."""
    d = Daemon(locales=2, extra_args=["--metrics-endpoint", "127.0.0.1:0", "--log-level", "info"])
    d.metrics_url = metrics_url(d)
    yield d
    d.cleanup()


# ---- the tests ----------------------------------------------------------------------------

def test_exposition_is_well_formed_and_complete(md):
    status, headers, body = http(md.metrics_url)
    assert status == 200 and headers["Content-Type"] == CONTENT_TYPE
    fams = parse_exposition(body.decode())
    want = {"h5ark_build_info": "gauge", "h5ark_start_time_seconds": "gauge",
            "h5ark_ranks": "gauge", "h5ark_locales": "gauge",
            "h5ark_requests_total": "counter", "h5ark_request_duration_seconds": "histogram",
            "h5ark_request_bytes_total": "counter", "h5ark_reply_bytes_total": "counter",
            "h5ark_memory_used_bytes": "gauge", "h5ark_memory_cached_bytes": "gauge",
            "h5ark_memory_limit_bytes": "gauge", "h5ark_shard_cache_limit_bytes": "gauge",
            "h5ark_objects": "gauge", "h5ark_files_read_total": "counter",
            "h5ark_files_written_total": "counter", "h5ark_probe_restarts_total": "counter"}
    assert {k: fams[k]["type"] for k in want if k in fams} == want
    s = samples(fams)
    assert value(s, "h5ark_build_info", version=project_version()) == 1
    assert value(s, "h5ark_ranks") == 1
    assert value(s, "h5ark_locales") == 2
    assert abs(value(s, "h5ark_start_time_seconds") - time.time()) < 3600
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "getconfig"})
    assert value(s, "h5ark_memory_limit_bytes") == hdr["result"]["max_memory"]
    assert value(s, "h5ark_shard_cache_limit_bytes") == hdr["result"]["shard_cache"]
    # HEAD: the headers of GET, no body
    status, headers, body = http(md.metrics_url, "HEAD")
    assert status == 200 and headers["Content-Type"] == CONTENT_TYPE and body == b""


def test_requests_counted_by_command_and_outcome(md):
    before = scrape(md)
    name = unique("m")
    sent, received = {}, {}

    def tally(cmd, i, header=None, frames=(), raw=None, ok=True):
        hdr, _, out_b, in_b = call(md, header or {"v": 1, "id": i, "cmd": cmd}, frames, raw)
        assert hdr["ok"] is ok, hdr
        sent[cmd] = sent.get(cmd, 0) + out_b
        received[cmd] = received.get(cmd, 0) + in_b
        return hdr

    for i in range(7):
        tally("ping", 100 + i)
    data = np.arange(1000, dtype="<i8").tobytes()
    tally("put", 200, put_header(200, name, 1000), [data[:3000], data[3000:]])
    tally("get", 201, {"v": 1, "id": 201, "cmd": "get", "args": {"name": name}})
    tally("get", 202, {"v": 1, "id": 202, "cmd": "get", "args": {"name": name + "_no"}}, ok=False)
    tally("get", 203, {"v": 1, "id": 203, "cmd": "get", "args": {"nmae": name}}, ok=False)
    tally("delete", 204, {"v": 1, "id": 204, "cmd": "delete", "args": {"names": [name]}})
    tally("other", 205, {"v": 1, "id": 205, "cmd": "no such command"}, ok=False)
    tally("none", 206, raw=msgpack.packb({"v": 1, "id": 206}), ok=False)
    tally("none", None, raw=b"\xc1 not msgpack", ok=False)
    after = scrape(md)

    assert delta(before, after, "h5ark_requests_total") == {
        (("cmd", "ping"), ("outcome", "ok")): 7,
        (("cmd", "put"), ("outcome", "ok")): 1,
        (("cmd", "get"), ("outcome", "ok")): 1,
        (("cmd", "get"), ("outcome", "not_found")): 1,
        (("cmd", "get"), ("outcome", "bad_request")): 1,
        (("cmd", "delete"), ("outcome", "ok")): 1,
        (("cmd", "other"), ("outcome", "unknown_command")): 1,
        (("cmd", "none"), ("outcome", "bad_request")): 2,
    }
    counts = {"ping": 7, "put": 1, "get": 3, "delete": 1, "other": 1, "none": 2}
    assert delta(before, after, "h5ark_request_duration_seconds_count") == \
        {(("cmd", c),): n for c, n in counts.items()}
    assert delta(before, after, "h5ark_request_bytes_total") == \
        {(("cmd", c),): n for c, n in sent.items()}
    assert delta(before, after, "h5ark_reply_bytes_total") == \
        {(("cmd", c),): n for c, n in received.items()}
    assert received["get"] > 8000  # the payload is counted, not only the header
    # the scrapes themselves are not requests
    assert delta(after, scrape(md), "h5ark_requests_total") == {}


def test_histograms_agree_with_the_counts(md):
    for i in range(5):
        call(md, {"v": 1, "id": i, "cmd": "ping"})
    s = scrape(md)  # parse_exposition checked each histogram's own consistency
    for (name, labels), count in s.items():
        if name != "h5ark_request_duration_seconds_count":
            continue
        cmd = dict(labels)["cmd"]
        total = sum(v for (n, lb), v in s.items()
                    if n == "h5ark_requests_total" and dict(lb)["cmd"] == cmd)
        assert count == total, cmd
        assert s[("h5ark_request_duration_seconds_sum", labels)] < count * 60
    pings = {dict(lb)["le"]: v for (n, lb), v in s.items()
             if n == "h5ark_request_duration_seconds_bucket" and dict(lb)["cmd"] == "ping"}
    assert pings["+Inf"] >= 5 and pings["120"] == pings["+Inf"]


def test_objects_and_memory_gauges(md):
    def state():
        s = scrape(md)
        hdr, _ = request(md.endpoint, {"v": 1, "cmd": "getconfig"})
        info, _ = request(md.endpoint, {"v": 1, "cmd": "info"})
        cfg = hdr["result"]
        # the gauges come from the accounting getconfig reports
        assert value(s, "h5ark_memory_used_bytes") == cfg["memory_used"]
        assert value(s, "h5ark_memory_cached_bytes") == cfg["memory_cached"]
        assert value(s, "h5ark_objects") == len(info["result"]["objects"])
        return s

    s0 = state()
    n = 1 << 21  # 8 MiB a locale: large enough for the shard cache to keep when deleted
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "create",
                                   "args": {"dtype": "int64", "size": n, "fill": "ones"}})
    name = hdr["result"]["object"]["name"]
    s1 = state()
    assert value(s1, "h5ark_objects") == value(s0, "h5ark_objects") + 1
    assert value(s1, "h5ark_memory_used_bytes") == value(s0, "h5ark_memory_used_bytes") + 8 * n
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "delete", "args": {"names": [name]}})
    assert hdr["ok"]
    s2 = state()
    assert value(s2, "h5ark_objects") == value(s0, "h5ark_objects")
    assert value(s2, "h5ark_memory_used_bytes") == value(s0, "h5ark_memory_used_bytes")
    assert value(s2, "h5ark_memory_cached_bytes") >= value(s1, "h5ark_memory_cached_bytes")


def test_files_read_and_written(md):
    def files():
        s = scrape(md)
        return value(s, "h5ark_files_read_total"), value(s, "h5ark_files_written_total")

    r0, w0 = files()
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "create",
                                   "args": {"dtype": "int64", "size": 1000, "fill": "ones"}})
    name = hdr["result"]["object"]["name"]
    path = unique("files") + ".h5"
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "tohdf", "args": {"names": [name], "path": path}})
    assert hdr["ok"] and len(hdr["result"]["files"]) == 2, hdr
    assert files() == (r0, w0 + 2)
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "tohdf", "args": {
        "names": [name], "path": "single_" + path, "file_type": "single"}})
    assert hdr["ok"], hdr
    assert files() == (r0, w0 + 3)
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "readhdf", "args": {"paths": [path]}})
    assert hdr["ok"] and len(hdr["result"]["files"]) == 2, hdr
    assert files() == (r0 + 2, w0 + 3)
    # a file that cannot be read is not counted as read
    (md.data_dir / "junk.h5").write_bytes(b"not hdf5")
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "readhdf", "args": {
        "paths": ["single_" + path, "junk.h5"], "allow_errors": True}})
    assert hdr["ok"] and len(hdr["result"]["file_errors"]) == 1, hdr
    assert files() == (r0 + 3, w0 + 3)
    # a failed write writes nothing
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "tohdf", "args": {
        "names": [name], "path": "../outside.h5"}})
    assert hdr["error"]["code"] == "forbidden"
    assert files() == (r0 + 3, w0 + 3)
    # an ExeTera field written in parts: each part and the completion put the file in place
    parts = unique("parts") + ".h5"
    for _ in range(2):
        hdr, _ = request(md.endpoint, {"v": 1, "cmd": "writepart", "args": {
            "path": parts, "field": "df/x", "name": name}})
        assert hdr["ok"], hdr
    hdr, _ = request(md.endpoint, {"v": 1, "cmd": "complete", "args": {"path": parts,
                                                                       "field": "df/x"}})
    assert hdr["ok"], hdr
    assert files() == (r0 + 3, w0 + 6)
    request(md.endpoint, {"v": 1, "cmd": "delete", "args": {"names": [name]}})


def test_http_errors(md):
    base = md.metrics_url[:-len("/metrics")]
    for path in ("/", "/metricsx", "/metrics/", "/api/metrics", "/favicon.ico"):
        status, _, body = http(base + path)
        assert status == 404, path
        assert b"GET /metrics" in body
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        status, headers, _ = http(md.metrics_url, method)
        assert status == 405, method
        assert headers["Allow"] == "GET, HEAD"
    assert http(base + "/nothing", "POST")[0] == 404
    assert http(md.metrics_url + "?x=1")[0] == 200  # a query string changes nothing


def raw_http(port, data, read=True):
    """Send bytes on a fresh connection; what came back (b"" when the server closed it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:  # the server may close before reading it all
            pass
        out = b""
        while read:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
        return out


def test_malformed_http_is_refused_and_the_daemon_serves_on(md):
    port = int(md.metrics_url.split(":")[2].split("/")[0])
    before = scrape(md)
    replies = [
        raw_http(port, b"\x00\x01\x02\xff garbage\r\n\r\n"),
        raw_http(port, bytes(range(256)) * 64),
        raw_http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"),
        raw_http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                 + b"".join(b"X-%d: y\r\n" % i for i in range(20_000)) + b"\r\n"),
        raw_http(port, b"GET /" + b"m" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
        raw_http(port, b"GET /metrics HTTP/9.9\r\n\r\n"),
        raw_http(port, b"GET /metrics HTTP/1.1\r\nContent-Length: -5\r\nHost: x\r\n\r\n"),
        raw_http(port, b"GET /metr"),  # cut short
    ]
    for r in replies:  # refused with a 4xx/5xx, or closed; never a 200
        assert r == b"" or re.match(rb"HTTP/1\.[01] [45]\d\d ", r), r[:200]
    # a body, even a malformed one, is never read: the answer comes from the headers
    r = raw_http(port, b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: x\r\n\r\n"
                 b"zz\r\n")
    assert r == b"" or re.match(rb"HTTP/1\.[01] \d\d\d ", r), r[:200]
    # a client that stalls mid-request does not hold up others
    stalled = socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT)
    stalled.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    try:
        after = scrape(md)
        hdr, _, _, _ = call(md, {"v": 1, "id": 1, "cmd": "ping"})
        assert hdr["ok"]
    finally:
        stalled.close()
    assert md.alive()
    assert delta(before, after, "h5ark_requests_total") == {}  # HTTP never counts as requests
    # a well-formed request on a raw socket is answered whole
    r = raw_http(port, b"GET /metrics HTTP/1.0\r\n\r\n")
    assert r.startswith(b"HTTP/1.") and b" 200 " in r.split(b"\r\n")[0]
    assert b"h5ark_requests_total" in r


def test_request_log_lines(md):
    name = unique("log")
    data = np.arange(10, dtype="<i8").tobytes()
    made = {}
    for i, (header, frames, raw) in enumerate([
            ({"v": 1, "cmd": "ping"}, (), None),
            (put_header(0, name, 10), [data], None),
            ({"v": 1, "cmd": "get", "args": {"name": name}}, (), None),
            ({"v": 1, "cmd": "get", "args": {"name": name + "_none"}}, (), None),
            ({"v": 1, "cmd": 'odd "cmd"\n\x01 é'}, (), None),
            ({"v": 1, "cmd": "x" * 500}, (), None),
            ({"v": 1, "cmd": "ping\0tail"}, (), None),
    ]):
        rid = 910_000 + i
        header = {**header, "id": rid}
        hdr, _, out_b, in_b = call(md, header, frames, raw)
        made[str(rid)] = (header["cmd"], hdr, out_b, in_b)
    lines = request_lines(md)
    for rid, (cmd, hdr, out_b, in_b) in made.items():
        assert len(lines.get(rid, [])) == 1, (rid, lines.get(rid))
        f = lines[rid][0]
        assert f["event"] == "request"
        shown = f["cmd"] if isinstance(f["cmd"], bytes) else f["cmd"].encode()
        assert shown == cmd.encode()[:64], (shown, cmd)
        assert f["outcome"] == ("ok" if hdr["ok"] else hdr["error"]["code"])
        assert int(f["bytes_in"]) == out_b and int(f["bytes_out"]) == in_b
        assert re.fullmatch(r"\d+\.\d{3}", f["ms"]) and float(f["ms"]) < 60_000
    # a request without an id, or whose header cannot be read
    call(md, None, raw_header=b"\x92\x01\x02")
    assert any(f["cmd"] == "-" and f["outcome"] == "bad_request" for f in request_lines(md)["-"])


def test_router_answers_and_probe_restarts_are_counted(start_daemon):
    """Requests the router answers itself (too large, busy) count too; a file probe that
    dies on a file counts as a restart."""
    d = start_daemon(locales=2, env={"H5ARK_TEST_PROBE_CRASH": "_dies"},
                     extra_args=["--metrics-endpoint", "0", "--max-message", "4096",
                                 "--handlers", "1", "--max-queue", "1"])
    d.metrics_url = metrics_url(d)
    before = scrape(d)
    payload = b"\0" * 8000
    hdr, _, out_b, _ = call(d, put_header(1, "big", 1000), [payload])
    assert hdr["error"]["code"] == "resource_limit", hdr
    with h5py.File(d.data_dir / "x_dies.h5", "w") as f:
        f["x"] = np.arange(3)
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "readhdf", "args": {"paths": ["x_dies.h5"]}})
    assert hdr["error"]["code"] == "schema_error" and "crash" in hdr["error"]["message"], hdr
    after = scrape(d)
    assert delta(before, after, "h5ark_requests_total") == {
        (("cmd", "put"), ("outcome", "resource_limit")): 1,
        (("cmd", "readhdf"), ("outcome", "schema_error")): 1}
    assert delta(before, after, "h5ark_request_bytes_total")[(("cmd", "put"),)] == out_b
    assert value(after, "h5ark_probe_restarts_total") == \
        value(before, "h5ark_probe_restarts_total") + 1
    # many slow requests at once on one handler with a queue of one: some are busy
    before = after
    sock = _ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(d.endpoint)
    try:
        for i in range(8):
            sock.send(msgpack.packb({"v": 1, "id": i, "cmd": "create", "args": {
                "dtype": "float64", "size": 1 << 22, "fill": "uniform", "seed": i}}))
        outcomes = {}
        for _ in range(8):
            assert sock.poll(120000 * TOOL_SLOWDOWN)
            hdr = msgpack.unpackb(sock.recv(), raw=False)
            key = "ok" if hdr["ok"] else hdr["error"]["code"]
            outcomes[key] = outcomes.get(key, 0) + 1
    finally:
        sock.close()
    assert set(outcomes) <= {"ok", "busy"} and outcomes.get("busy", 0) >= 1, outcomes
    assert delta(before, scrape(d), "h5ark_requests_total") == {
        (("cmd", "create"), ("outcome", k)): n for k, n in outcomes.items()}
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "ping"})
    assert hdr["ok"]


def test_port_in_use_is_a_clear_error_at_start(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = subprocess.run(wrapped([daemon_binary(), "--endpoint", f"ipc://{tmp_path}/s.sock",
                                    "--data-dir", str(tmp_path / "data"), "--locales", "1",
                                    "--metrics-endpoint", str(port)]),
                           capture_output=True, text=True, timeout=60 * TOOL_SLOWDOWN)
    assert r.returncode == 1, r
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in r.stderr, r.stderr
    assert "listening on" not in r.stdout


@pytest.mark.parametrize("address,message", [
    ("::1:9100", "an IPv6 address is written [ADDRESS]:PORT"),
    (":9100", "has no host before the port"),
    ("127.0.0.1:65536", "the port must be a number from 0 to 65535"),
    ("127.0.0.1:http", "the port must be a number from 0 to 65535"),
])
def test_malformed_address_is_a_usage_error(tmp_path, address, message):
    r = subprocess.run([daemon_binary(), "--data-dir", str(tmp_path), "--metrics-endpoint",
                        address], capture_output=True, text=True, timeout=30 * TOOL_SLOWDOWN)
    assert r.returncode == 2 and message in r.stderr, r


def test_off_by_default_and_quiet_at_the_default_level(tmp_path):
    """No endpoint unless asked for; at the default level (notice) no request lines, but
    the daemon's own events."""
    args = [daemon_binary(), "--endpoint", f"ipc://{tmp_path}/s.sock", "--data-dir",
            str(tmp_path / "data"), "--locales", "1"]
    proc = subprocess.Popen(wrapped(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.time() + 30 * TOOL_SLOWDOWN
        while True:
            try:
                hdr, _ = request(f"ipc://{tmp_path}/s.sock", {"v": 1, "cmd": "getconfig"},
                                 timeout_ms=500)
                break
            except TimeoutError:
                assert time.time() < deadline and proc.poll() is None
        assert hdr["result"]["metrics_endpoint"] is None
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60 * TOOL_SLOWDOWN)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "metrics" not in out
    assert "event=request" not in err
    assert re.search(r"Z notice +stopped cleanly", err), err
