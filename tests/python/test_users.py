"""Users of a shared service (shared/SERVICE.md §1, quota.requests of §4): the token file with
users, groups, roles and quotas, refused naming its line and key; `whoami`; `reload` and
SIGHUP (a bad file refused, the old one staying; requests keep the table they arrived
with); quota.requests counting a user's requests from their arrival, queued included;
`shared/<group>/`; per-user log lines and metrics; through the native endpoint, Arkouda's
and the HTTP gateway, at one rank and at two where ranks matter."""
import json
import os
import re
import signal
import subprocess
import threading
import types
import urllib.error
import urllib.request

import numpy as np
import pytest

from daemons import (Daemon, MPIRUN, REPO, TOOL_SLOWDOWN, daemon_binary, free_port, mpi_build,
                     wait_for)
from wire import fails, ok, put_array, send

TOKENS = """# a team: two physicists (one also in chem), an admin
alice-tok write user=alice groups=physics,chem quota.requests=2 quota.memory=1G
alice-ro  read  user=alice groups=bio          quota.requests=2 quota.memory=1G
bob-tok         user=bob   groups=physics
root-tok  admin user=root
"""
SECRETS = ["alice-tok", "alice-ro", "bob-tok", "root-tok", "carol-tok"]
NO_QUOTAS = {"memory": None, "disk": None, "objects": None, "requests": None}


def as_user(d, token):
    """`d` as seen with another token: wire.send and put_array take it."""
    return types.SimpleNamespace(endpoint=d.endpoint, token=token, data_dir=d.data_dir)


def call(d, token, cmd, args=None, **kw):
    return send(as_user(d, token), cmd, args, **kw)


def two_ranks_or_skip(ranks):
    if ranks == 2 and (MPIRUN is None or not mpi_build()):
        pytest.skip("mpirun is not installed or h5arkd was built without MPI")


@pytest.fixture(params=[1, 2], ids=["one_rank", "two_ranks"])
def ranks(request):
    two_ranks_or_skip(request.param)
    return request.param


def start(tmp_path, text=TOKENS, ranks=1, token="root-tok", metrics=False, **kw):
    """A daemon on token file `text` (d.tokens); with `metrics`, serving them at
    d.metrics_port."""
    tokens = tmp_path / "tokens"
    tokens.write_text(text)
    kw.setdefault("locales", 2)
    port = free_port() if metrics else None
    if metrics:
        kw["extra_args"] = [*kw.get("extra_args", ()), "--metrics-endpoint", f"127.0.0.1:{port}"]
    d = Daemon(token=token, token_file=tokens, ranks=ranks if ranks > 1 else None, **kw)
    d.tokens, d.metrics_port = tokens, port
    return d


@pytest.fixture
def daemons():
    made = []
    yield made
    for d in made:
        d.cleanup()


def refused_at_start(tmp_path, text):
    """The daemon's stderr when it refuses to start with token file `text`."""
    tokens = tmp_path / "tokens"
    tokens.write_text(text)
    proc = subprocess.run([daemon_binary(), "--token-file", str(tokens), "--endpoint",
                           f"ipc://{tmp_path}/s", "--data-dir", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=30 * TOOL_SLOWDOWN)
    assert proc.returncode != 0, proc
    for secret in SECRETS:
        assert secret not in proc.stderr
    return proc.stderr


@pytest.mark.parametrize("text,words", [
    ("alice-tok user=alice\nbob-tok read\n", ["line 2", "names no user while line 1 does"]),
    ("alice-tok read\nbob-tok user=bob\n", ["line 1", "names no user while line 2 does"]),
    ("alice-tok user=alice colour=blue\n", ["line 1, key colour", "unknown key"]),
    ("# c\nalice-tok user=alice quota.memory=4Q\n", ["line 2, key quota.memory", "not a size"]),
    ("alice-tok user=al/ice\n", ["line 1, key user", "a name is 1 to 64"]),
    ("alice-tok user=alice groups=ok,bad/one\n", ["line 1, key groups"]),
    ("alice-tok user=alice quota.requests=0\n", ["line 1, key quota.requests", "at least 1"]),
    ("alice-tok user=alice quota.objects=9\nbob-tok user=bob\nalice-ro read user=alice\n",
     ["lines 1 and 3", "user alice", "quota.objects"]),
    ("alice-tok user=alice\nalice-tok user=bob\n", ["lines 1 and 2 hold the same token"]),
    ("alice-tok superuser user=alice\n", ["line 1", "read, write or admin"]),
])
def test_a_bad_token_file_is_refused_naming_line_and_key(tmp_path, text, words):
    err = refused_at_start(tmp_path, text)
    for w in words:
        assert w in err, err


def test_a_token_file_over_a_mebibyte_is_refused(tmp_path):
    err = refused_at_start(tmp_path, "alice-tok user=alice\n" + "#" * (1 << 20) + "\n")
    assert "not a file of at most 1048576 bytes" in err, err


def test_an_old_style_file_has_no_users(tmp_path, daemons):
    daemons.append(start(tmp_path, "w-tok\nr-tok read\na-tok admin\n", token="w-tok"))
    d = daemons[0]
    for token, role in [("w-tok", "write"), ("r-tok", "read"), ("a-tok", "admin")]:
        me = ok(call(d, token, "whoami"))
        assert me["user"] is None and me["groups"] == [] and me["role"] == role
        assert me["quotas"] == NO_QUOTAS
        assert me["usage"]["requests"] is None and me["usage"]["disk"] is None
    assert not (d.data_dir / "shared").exists()
    # without users a write token still stops the daemon, as before
    ok(call(d, "w-tok", "shutdown"))
    assert d.proc.wait(30 * TOOL_SLOWDOWN) == 0


def test_whoami(tmp_path, daemons, ranks):
    daemons.append(start(tmp_path, ranks=ranks))
    d = daemons[0]
    for token, role in [("alice-tok", "write"), ("alice-ro", "read")]:
        me = ok(call(d, token, "whoami"))
        assert me["user"] == "alice" and me["role"] == role
        assert me["groups"] == ["bio", "chem", "physics"]  # the union of alice's lines
        assert me["quotas"] == {"memory": 1 << 30, "disk": None, "objects": None,
                                "requests": 2}
        usage = me["usage"]
        assert set(usage) == {"memory", "disk", "objects", "requests"}
        assert all(isinstance(usage[k], int) and usage[k] >= 0 for k in usage)
        assert usage["requests"] == 1  # this one
    me = ok(call(d, "bob-tok", "whoami"))
    assert (me["user"], me["role"], me["groups"], me["quotas"]) == \
        ("bob", "write", ["physics"], NO_QUOTAS)
    assert ok(call(d, "root-tok", "whoami"))["role"] == "admin"
    fails(call(d, "nobody", "whoami"), "unauthorized", "not valid")
    # every group named has its shared folder
    assert sorted(p.name for p in (d.data_dir / "shared").iterdir()) == \
        ["bio", "chem", "physics"]


def test_roles(tmp_path, daemons):
    daemons.append(start(tmp_path))
    d = daemons[0]
    fails(call(d, "alice-ro", "create", {"dtype": "int64", "size": 3}), "unauthorized",
          "may only read")
    ok(call(d, "alice-tok", "create", {"dtype": "int64", "size": 3}))
    # reload and shutdown are the admins'
    for token, role in [("alice-tok", "write"), ("alice-ro", "read")]:
        for cmd in ("reload", "shutdown"):
            fails(call(d, token, cmd), "forbidden", f"'{cmd}' needs the admin role", role)
    ok(call(d, "root-tok", "reload"))
    assert d.alive()
    ok(call(d, "root-tok", "shutdown"))
    assert d.proc.wait(30 * TOOL_SLOWDOWN) == 0


def test_a_client_cannot_claim_a_caller(tmp_path, daemons, ranks):
    """The `caller` rank 0 forwards to the other ranks is no header key of a client's."""
    daemons.append(start(tmp_path, ranks=ranks))
    d = daemons[0]
    claim = {"user": "root", "role": "admin", "groups": [], "quotas": {}}
    fails(send(as_user(d, "alice-ro"), "reload", caller=claim), "bad_request",
          "unknown header field 'caller'")
    fails(send(as_user(d, "alice-ro"), "create", {"dtype": "int64", "size": 2}, caller=claim),
          "bad_request", "unknown header field 'caller'")


NEW_TOKENS = """alice-tok write user=alice groups=physics quota.requests=2 quota.memory=1G
carol-tok write user=carol groups=chem,astro quota.objects=7
root-tok  admin user=root
"""


def test_reload(tmp_path, daemons, ranks):
    daemons.append(start(tmp_path, ranks=ranks))
    d = daemons[0]
    d.tokens.write_text(NEW_TOKENS)
    got = ok(call(d, "root-tok", "reload"))
    assert got == {"tokens": 3, "users": 3, "groups": ["astro", "chem", "physics"]}
    assert (d.data_dir / "shared" / "astro").is_dir()
    # the new file for the requests after it: a command of every rank with the new user
    ok(call(d, "carol-tok", "create", {"dtype": "int64", "size": 10, "fill": "arange",
                                       "stop": 10}))
    me = ok(call(d, "carol-tok", "whoami"))
    assert (me["groups"], me["quotas"]["objects"]) == (["astro", "chem"], 7)
    assert ok(call(d, "alice-tok", "whoami"))["groups"] == ["physics"]
    for gone in ("bob-tok", "alice-ro"):
        fails(call(d, gone, "ping"), "unauthorized", "not valid")
    # a bad file is refused with its reason, the one in force staying
    d.tokens.write_text(NEW_TOKENS + "dave-tok user=dave quota.disk=lots\n")
    msg = fails(call(d, "root-tok", "reload"), "bad_request", "line 4, key quota.disk",
                "not a size")
    for secret in SECRETS + ["dave-tok"]:
        assert secret not in msg
    ok(call(d, "carol-tok", "create", {"dtype": "int64", "size": 3}))
    fails(call(d, "dave-tok", "ping"), "unauthorized")
    d.tokens.unlink()
    fails(call(d, "root-tok", "reload"), "bad_request", "cannot read token file")
    ok(call(d, "carol-tok", "ping"))


def test_sighup(tmp_path, daemons, ranks):
    """SIGHUP to the daemon (under mpirun: to rank 0, which reads the token file)."""
    daemons.append(start(tmp_path, ranks=ranks, extra_args=["--log-level", "notice"]))
    d = daemons[0]

    def hangup():
        if ranks == 1:
            d.proc.send_signal(signal.SIGHUP)
        else:
            os.kill(d.rank_pids()[0], signal.SIGHUP)
    d.tokens.write_text(NEW_TOKENS)
    hangup()
    wait_for(lambda: call(d, "carol-tok", "ping")[0]["ok"], "SIGHUP's new token")
    fails(call(d, "bob-tok", "ping"), "unauthorized")
    assert (d.data_dir / "shared" / "astro").is_dir()
    # the new user's request runs on every rank
    ok(call(d, "carol-tok", "create", {"dtype": "int64", "size": 4}))
    d.tokens.write_text(NEW_TOKENS + "erin-tok user=erin groups=a,,b\n")
    hangup()
    wait_for(lambda: "line 4, key groups" in d.read_log(), "SIGHUP's refusal in the log")
    assert "the token file read before stays in force" in d.read_log()
    ok(call(d, "carol-tok", "ping"))
    fails(call(d, "erin-tok", "ping"), "unauthorized")
    assert d.alive()
    for secret in SECRETS + ["erin-tok"]:
        assert secret not in d.read_log()


class Held:
    """A tohdf of `token`'s that the fault table holds at its first file call for `ms`
    (the daemon runs with H5ARK_FAULTS=1); in `status` once started."""

    def __init__(self, d, token, ms, name="held.h5"):
        self.d = d
        who = as_user(d, token)
        obj = put_array(who, np.arange(10, dtype=np.int64))
        ok(send(who, "fault", {"nth": 1, "pause_ms": ms}))
        self.reply = []
        self.thread = threading.Thread(target=lambda: self.reply.append(send(
            who, "tohdf", {"names": [obj], "datasets": ["x"], "path": name},
            timeout_ms=60000 * TOOL_SLOWDOWN)))
        self.thread.start()
        wait_for(lambda: any(r["cmd"] == "tohdf" for r in
                             ok(call(d, "root-tok", "status"))["requests"]), "tohdf in status")

    def join(self):
        self.thread.join(60 * TOOL_SLOWDOWN)
        return self.reply[0]


def held_and_queued(d, ms):
    """alice's tohdf held for `ms` (with one handler, it holds the handler) and her whoami
    sent behind it (queued): (held, the whoami's thread, the list its reply goes to). The
    daemon serves metrics at d.metrics_port: the whoami has arrived once alice's requests
    counter (counted on arrival) has gone up, however long the way there took."""
    held = Held(d, "alice-tok", ms)
    before = metrics(d.metrics_port)["alice"]
    queued = []
    t = threading.Thread(target=lambda: queued.append(call(d, "alice-ro", "whoami")))
    t.start()
    wait_for(lambda: metrics(d.metrics_port)["alice"] == before + 1, "queued whoami's arrival")
    return held, t, queued


def test_quota_requests_counts_queued_requests(tmp_path, daemons, ranks):
    """alice may have 2 requests in flight: with one handler, one running (held) and one
    queued behind it, a third is busy at once, while bob is served."""
    daemons.append(start(tmp_path, ranks=ranks, env={"H5ARK_FAULTS": "1"}, metrics=True,
                         extra_args=["--handlers", "1"]))
    d = daemons[0]
    held, t, queued = held_and_queued(d, 1500 * TOOL_SLOWDOWN)
    msg = fails(call(d, "alice-tok", "ping"), "busy", "alice", "quota.requests")
    fails(call(d, "alice-ro", "getconfig"), "busy")  # every token of alice's counts
    # refused on arrival, not after the held: it still runs, the whoami still waits
    assert held.thread.is_alive() and t.is_alive()
    ok(call(d, "bob-tok", "ping"))
    ok(call(d, "root-tok", "getconfig"))
    assert "alice-tok" not in msg
    ok(held.join())
    t.join(60 * TOOL_SLOWDOWN)
    assert ok(queued[0])["usage"]["requests"] >= 1
    # once answered, nothing of alice's is in flight
    assert ok(call(d, "alice-tok", "whoami"))["usage"]["requests"] == 1


def test_usage_requests_counts_requests_in_flight(tmp_path, daemons):
    daemons.append(start(tmp_path, env={"H5ARK_FAULTS": "1"}))
    d = daemons[0]
    held = Held(d, "alice-tok", 1000 * TOOL_SLOWDOWN)
    assert ok(call(d, "alice-ro", "whoami"))["usage"]["requests"] == 2
    assert ok(call(d, "bob-tok", "whoami"))["usage"]["requests"] == 1
    ok(held.join())


def test_requests_keep_the_table_they_arrived_with(tmp_path, daemons):
    """A reload that removes alice: her request running and her request queued (one
    handler) both finish as admitted; her next request is refused."""
    daemons.append(start(tmp_path, env={"H5ARK_FAULTS": "1"}, metrics=True, extra_args=[
        "--handlers", "1", "--log-level", "info"]))
    d = daemons[0]
    held, t, queued = held_and_queued(d, 1000 * TOOL_SLOWDOWN)
    d.tokens.write_text("root-tok admin user=root\n")
    d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "SIGHUP: token file" in d.read_log(), "the reload")
    fails(call(d, "alice-tok", "ping"), "unauthorized")
    ok(held.join())
    t.join(60 * TOOL_SLOWDOWN)
    me = ok(queued[0])
    assert me["user"] == "alice" and me["groups"] == ["bio", "chem", "physics"]
    log = d.read_log()
    assert re.search(r"cmd=tohdf .*outcome=ok user=alice", log), log
    assert re.search(r"cmd=whoami .*outcome=ok user=alice", log), log


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        text = r.read().decode()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^h5ark_user_requests_total\{user="([^"]+)"\} (\d+)$', text, re.M)}


def test_log_lines_and_metrics_name_the_user(tmp_path, daemons):
    """Request log lines carry user=; the per-user counter has the first 100 users' names,
    every further user under "other"."""
    lines = [f"tok{i:03d} user=u{i:03d}" for i in range(103)] + ["root-tok admin user=root"]
    port = free_port()
    daemons.append(start(tmp_path, "\n".join(lines) + "\n", extra_args=[
        "--log-level", "info", "--metrics-endpoint", f"127.0.0.1:{port}"]))
    d = daemons[0]
    before = metrics(port)  # the readiness ping: root's
    for i in range(103):
        ok(call(d, f"tok{i:03d}", "ping"))
    ok(call(d, "tok000", "whoami"))
    fails(call(d, "tok000", "nosuch"), "unknown_command")
    fails(call(d, "wrong", "ping"), "unauthorized")
    got = metrics(port)
    assert got.get("root", 0) == before.get("root", 0)
    named = {k: v for k, v in got.items() if k not in ("other", "root")}
    assert len(named) == 99 and named["u000"] == 3 and named["u098"] == 1
    assert "u099" not in got and got["other"] == 4  # u099 .. u102
    log = d.wait_log(r"cmd=nosuch .*outcome=unknown_command user=u000$")
    assert re.search(r"cmd=whoami .*outcome=ok user=u000$", log, re.M), log
    unauth = [ln for ln in log.splitlines() if "outcome=unauthorized" in ln]
    assert unauth and all("user=" not in ln for ln in unauth)
    assert "tok000" not in log


def ak_request(endpoint, token, cmd, args=""):
    import zmq
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 30000 * TOOL_SLOWDOWN)
    sock.connect(endpoint)
    try:
        sock.send(json.dumps({"user": "someone", "token": token, "cmd": cmd,
                              "format": "STRING", "args": args, "size": -1}).encode())
        return json.loads(sock.recv())
    finally:
        sock.close()


DAVE = TOKENS + "dave-tok write user=dave quota.requests=1\n"


def test_arkouda_access_token_is_the_user(tmp_path, daemons, ranks):
    port = free_port()
    daemons.append(start(tmp_path, DAVE, ranks=ranks, arkouda=True, env={"H5ARK_FAULTS": "1"},
                         extra_args=["--log-level", "info", "--metrics-endpoint",
                                     f"127.0.0.1:{port}"]))
    d = daemons[0]
    r = ak_request(d.ak_endpoint, "bob-tok", "connect")
    assert r["msgType"] == "NORMAL", r
    r = ak_request(d.ak_endpoint, "alice-ro", "create",
                   json.dumps([json.dumps({"key": "dtype", "dtype": "str", "val": "int64"}),
                               json.dumps({"key": "size", "dtype": "int64", "val": "3"})]))
    assert r["msgType"] == "ERROR" and "may only read" in r["msg"], r
    assert "not valid" in ak_request(d.ak_endpoint, "nobody", "getconfig")["msg"]
    assert metrics(port).get("bob") == 1
    d.wait_log(r"event=request .*outcome=ok user=bob$")
    # dave's quota.requests covers his Arkouda requests too
    held = Held(d, "dave-tok", 1500 * TOOL_SLOWDOWN)
    r = ak_request(d.ak_endpoint, "dave-tok", "getconfig")
    assert r["msgType"] == "ERROR" and "quota.requests" in r["msg"], r
    assert ak_request(d.ak_endpoint, "bob-tok", "getconfig")["msgType"] == "NORMAL"
    ok(held.join())
    assert ak_request(d.ak_endpoint, "dave-tok", "getconfig")["msgType"] == "NORMAL"


def http_get(base, path, token):
    req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=30 * TOOL_SLOWDOWN) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_gateway_token_is_the_user(tmp_path, daemons):
    port, mport = free_port(), free_port()
    daemons.append(start(tmp_path, DAVE, env={"H5ARK_FAULTS": "1"}, extra_args=[
        "--http-endpoint", f"127.0.0.1:{port}", "--metrics-endpoint", f"127.0.0.1:{mport}",
        "--log-level", "info"]))
    d = daemons[0]
    base = f"http://127.0.0.1:{port}"
    status, body = http_get(base, "/files/", "bob-tok")
    assert status == 200, body
    assert http_get(base, "/files/", "nobody")[0] == 401
    assert metrics(mport).get("bob") == 1
    # dave has one request in flight at most: while one is held, his gateway request is busy
    held = Held(d, "dave-tok", 1500 * TOOL_SLOWDOWN)
    status, body = http_get(base, "/files/", "dave-tok")
    assert status == 503 and "quota.requests" in json.loads(body)["message"], body
    assert http_get(base, "/files/", "bob-tok")[0] == 200
    ok(held.join())
    assert http_get(base, "/files/", "dave-tok")[0] == 200
    # its log lines name the user, as the other doors' do; never a token
    log = d.wait_log(r"cmd=http_files .*outcome=busy user=dave$")
    assert re.search(r"cmd=http_files .*outcome=ok user=bob$", log, re.M), log
    unauth = [ln for ln in log.splitlines() if "cmd=http_files" in ln and "unauthorized" in ln]
    assert unauth and all("user=" not in ln for ln in unauth), unauth
    assert "bob-tok" not in log and "dave-tok" not in log


def test_clients_whoami_and_reload(tmp_path, daemons):
    """The Python client's whoami() and reload(), and `h5ark whoami` / `h5ark reload`."""
    import h5ark
    from h5ark.errors import ForbiddenError
    daemons.append(start(tmp_path))
    d = daemons[0]
    with h5ark.connect(d.endpoint, token="alice-tok", timeout=30) as c:
        me = c.whoami()
        assert (me["user"], me["role"], me["groups"]) == ("alice", "write",
                                                          ["bio", "chem", "physics"])
        assert me["quotas"]["requests"] == 2 and me["usage"]["requests"] == 1
        with pytest.raises(ForbiddenError, match="needs the admin role"):
            c.reload()
    d.tokens.write_text(NEW_TOKENS)
    with h5ark.connect(d.endpoint, token="root-tok", timeout=30) as c:
        assert c.reload() == {"tokens": 3, "users": 3, "groups": ["astro", "chem", "physics"]}
    cli = os.environ.get("H5ARK_CLI", str(REPO / "build" / "client" / "c" / "h5ark"))
    (tmp_path / "carol.token").write_text("carol-tok\n")
    (tmp_path / "root.token").write_text("root-tok\n")

    def run(token_file, *args):
        return subprocess.run([cli, "--endpoint", d.endpoint, "--token-file",
                               str(tmp_path / token_file), *args], capture_output=True,
                              text=True, timeout=30 * TOOL_SLOWDOWN)
    out = run("carol.token", "whoami")
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(None, 1) for line in out.stdout.splitlines())
    assert lines["user"] == "carol" and lines["role"] == "write"
    assert lines["groups"] == '["astro", "chem"]'
    assert lines["objects"] == "0 of 7" and lines["requests"] == "1 (no quota)"
    assert lines["memory"] == "0 (no quota)"
    out = run("carol.token", "reload")
    assert out.returncode != 0 and "admin role" in out.stderr
    out = run("root.token", "reload")
    assert out.returncode == 0 and "3 token(s), 3 user(s)" in out.stdout, out
