"""Access control and encryption: tokens with roles, constant refusal of unknown tokens,
ZeroMQ CURVE, and the loopback default."""
import os
import subprocess

import msgpack
import numpy as np
import pytest
import zmq

from daemons import Daemon, daemon_binary, free_port, REPO
from wire import request

import h5ark

TOKENS = "# comment lines and blank lines are skipped\n\nwriter-secret write\nreader-secret read\nplain-secret\n"


@pytest.fixture
def guarded(tmp_path):
    token_file = tmp_path / "tokens"
    token_file.write_text(TOKENS)
    d = Daemon(locales=2, token="reader-secret", token_file=token_file)
    yield d
    d.cleanup()


def send(d, cmd, token, args=None, frames=(), buffers=None):
    hdr = {"v": 1, "id": 7, "cmd": cmd, "args": args or {}, "token": token}
    if buffers:
        hdr["buffers"] = buffers
    return request(d.endpoint, hdr, frames)[0]


def test_roles(guarded):
    for token in ("writer-secret", "plain-secret"):
        rep = send(guarded, "create", token, {"dtype": "int64", "size": 4, "fill": "arange", "stop": 4})
        assert rep["ok"], rep
    name = rep["result"]["object"]["name"]
    # a read token may look, not touch
    assert send(guarded, "ping", "reader-secret")["ok"]
    assert send(guarded, "getconfig", "reader-secret")["result"]["auth"] is True
    assert send(guarded, "info", "reader-secret")["ok"]
    assert send(guarded, "get", "reader-secret", {"name": name})["ok"]
    for cmd, args in [("create", {"dtype": "int64", "size": 1}),
                      ("delete", {"names": [name]}),
                      ("clear", {}),
                      ("tohdf", {"names": [name], "path": "x.h5"}),
                      ("readhdf", {"paths": ["x.h5"]}),
                      ("shutdown", {})]:
        rep = send(guarded, cmd, "reader-secret", args)
        assert not rep["ok"] and rep["error"]["code"] == "unauthorized", (cmd, rep)
        assert "read" in rep["error"]["message"]
    rep = send(guarded, "put", "reader-secret", {"dtype": "int8", "shape": [1]}, [b"\x01"],
               [{"name": "values", "nbytes": 1}])
    assert rep["error"]["code"] == "unauthorized"
    assert not (guarded.data_dir / "x.h5").exists() and not list(guarded.data_dir.glob("x_*"))
    # the object is still there, untouched
    assert send(guarded, "info", "writer-secret", {"names": [name]})["ok"]


@pytest.mark.parametrize("token", [None, "", "writer-secre", "writer-secret ", "WRITER-SECRET",
                                   "reader-secret write", "x" * 5000])
def test_bad_tokens(guarded, token):
    rep = send(guarded, "ping", token)
    assert not rep["ok"] and rep["error"]["code"] == "unauthorized", rep
    # an unknown command is not revealed before the token is checked
    rep = send(guarded, "no-such-command", token)
    assert rep["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("content", ["", "# only a comment\n", "tok superuser\n", "tok read extra\n",
                                     "tok user=a\ntok2\n"])
def test_bad_token_files(tmp_path, content):
    token_file = tmp_path / "tokens"
    token_file.write_text(content)
    proc = subprocess.run([daemon_binary(), "--token-file", str(token_file), "--endpoint",
                           f"ipc://{tmp_path}/s", "--data-dir", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "token" in proc.stderr.lower() or "expected" in proc.stderr


def test_curve(tmp_path):
    prefix = tmp_path / "server"
    out = subprocess.run([daemon_binary(), "--curve-keygen", str(prefix)], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    secret = (tmp_path / "server.key").read_text().strip()
    public = (tmp_path / "server.pub").read_text().strip()
    assert len(secret) == 40 and len(public) == 40
    assert (tmp_path / "server.key").stat().st_mode & 0o077 == 0
    assert zmq.curve_public(secret.encode()) == public.encode()
    # keygen refuses to overwrite an existing key
    again = subprocess.run([daemon_binary(), "--curve-keygen", str(prefix)], capture_output=True,
                           text=True, timeout=30)
    assert again.returncode != 0

    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([daemon_binary(), "--curve-secret-file", str(tmp_path / "server.key"),
                             "--endpoint", endpoint, "--data-dir", str(tmp_path / "data"),
                             "--locales", "2", "--log-level", "warn"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        ctx = zmq.Context.instance()
        client_pub, client_sec = zmq.curve_keypair()

        def curve_request(server_key, header, frames=(), timeout=3000):
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            if server_key is not None:
                s.curve_serverkey = server_key
                s.curve_publickey = client_pub
                s.curve_secretkey = client_sec
            s.connect(endpoint)
            try:
                s.send_multipart([msgpack.packb(header), *frames])
                if not s.poll(timeout):
                    return None
                parts = s.recv_multipart()
                return msgpack.unpackb(parts[0]), parts[1:]
            finally:
                s.close()

        rep = None
        for _ in range(50):
            rep = curve_request(public.encode(), {"v": 1, "cmd": "ping"}, timeout=200)
            if rep:
                break
        assert rep and rep[0]["ok"]
        cfg = curve_request(public.encode(), {"v": 1, "cmd": "getconfig"})[0]["result"]
        assert cfg["encrypted"] is True
        data = np.arange(300000, dtype=np.int64)
        rep = curve_request(public.encode(), {"v": 1, "cmd": "put", "args": {
            "dtype": "int64", "shape": [data.size], "name": "enc"},
            "buffers": [{"name": "values", "nbytes": data.nbytes}]}, [data.tobytes()])
        assert rep[0]["ok"], rep
        hdr, frames = curve_request(public.encode(), {"v": 1, "cmd": "get", "args": {"name": "enc"}})
        assert np.array_equal(np.frombuffer(b"".join(frames), np.int64), data)
        # the C client and its command-line tool, given the server's public key
        cli = os.environ.get("H5ARK_CLI", str(REPO / "build" / "client" / "c" / "h5ark"))
        out = subprocess.run([cli, "--endpoint", endpoint, "--server-key",
                              str(tmp_path / "server.pub"), "--timeout", "10", "get", "enc",
                              "--stop", "3"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.split() == ["0", "1", "2"], out
        # a plain client is refused at the handshake: it must give up within its timeout
        out = subprocess.run([cli, "--endpoint", endpoint, "--timeout", "1", "ping"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 1 and "io_error" in out.stderr, out
        with pytest.raises(h5ark.ReplyTimeoutError):
            h5ark.connect(endpoint, timeout=1)
        # the Python client, given the .pub file
        c = h5ark.connect(endpoint, server_key=str(tmp_path / "server.pub"), timeout=10)
        assert c.config()["encrypted"] is True
        assert c.ping()
        c.close()
        # a plain client, or one with the wrong server key, gets nothing
        assert curve_request(None, {"v": 1, "cmd": "ping"}, timeout=500) is None
        wrong_pub, _ = zmq.curve_keypair()
        assert curve_request(wrong_pub, {"v": 1, "cmd": "ping"}, timeout=500) is None
    finally:
        proc.terminate()
        assert proc.wait(30) == 0


def test_bad_key_file(tmp_path):
    key = tmp_path / "bad.key"
    key.write_text("not a key\n")
    proc = subprocess.run([daemon_binary(), "--curve-secret-file", str(key), "--endpoint",
                           f"ipc://{tmp_path}/s", "--data-dir", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and "Z85" in proc.stderr


def test_loopback_default():
    """Without --endpoint the daemon listens on loopback only."""
    out = subprocess.run([daemon_binary(), "--help"], capture_output=True, text=True, timeout=30)
    assert "tcp://127.0.0.1:5555" in out.stdout
