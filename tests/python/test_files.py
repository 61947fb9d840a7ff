"""glob, filetype, fileformat and rmhdf (protocol/PROTOCOL.md, "Files as files") on a real
daemon, over the native protocol and the Python client, on files h5py and the daemon
write."""
import h5py
import numpy as np
import pytest

import h5ark
from daemons import Daemon
from wire import request, unique


@pytest.fixture
def c(daemon):
    client = h5ark.connect(daemon.endpoint, timeout=60)
    yield client
    client.clear()
    client.close()


def native(daemon, cmd, **args):
    hdr, _ = request(daemon.endpoint, {"v": 1, "id": 3, "cmd": cmd, "args": args})
    return hdr


def test_glob_filetype_fileformat_rmhdf(c, daemon):
    d = daemon.data_dir
    base = unique("fset")
    c.to_hdf([c.array(np.arange(100))], f"{base}.h5", file_type="distribute")
    on_disk = sorted(p.name for p in d.iterdir() if p.name.startswith(base))
    assert len(on_disk) == 3 and all("_LOCALE" in n for n in on_disk)  # the 3 locales
    assert c.glob([f"{base}*"]) == on_disk
    assert c.glob(f"{base}.h5") == on_disk  # a distributed name stands for its set
    assert c.filetype(f"{base}.h5") == "hdf5"
    assert c.fileformat(f"{base}.h5") == "distribute"
    hdr = native(daemon, "fileformat", path=f"{base}.h5")
    assert hdr["ok"] and hdr["result"]["attribute"] is True
    assert hdr["result"]["file"] == on_disk[0]
    # written by another tool: no File_Format, told by the name
    plain = unique("plain")
    with h5py.File(d / f"{plain}.h5", "w") as f:
        f["x"] = np.arange(3)
    with h5py.File(d / f"{plain}_LOCALE0000.h5", "w") as f:
        f["x"] = np.arange(3)
    with h5py.File(d / f"{plain}_single.h5", "w") as f:
        f.attrs["File_Format"] = 0
    hdr = native(daemon, "fileformat", path=f"{plain}.h5")
    assert hdr["result"] == {"file": f"{plain}.h5", "file_format": "single",
                             "attribute": False}
    assert c.fileformat(f"{plain}_LOCALE0000.h5") == "distribute"
    assert c.fileformat(f"{plain}_single.h5") == "single"
    (d / f"{plain}.parquet").write_bytes(b"PAR1" + bytes(20))
    assert c.filetype(f"{plain}.parquet") == "parquet"
    (d / f"{plain}.txt").write_text("neither")
    with pytest.raises(h5ark.BadRequestError, match="neither HDF5 nor Parquet"):
        c.filetype(f"{plain}.txt")
    with pytest.raises(h5ark.SchemaError, match="not an HDF5 file"):
        c.fileformat(f"{plain}.txt")
    with h5py.File(d / f"{plain}_odd.h5", "w") as f:
        f.attrs["File_Format"] = "x"
    with pytest.raises(h5ark.SchemaError, match="File_Format"):
        c.fileformat(f"{plain}_odd.h5")
    # rmhdf: the set and the plain file, nothing else
    (d / f"{base}_dir").mkdir()
    assert sorted(c.rmhdf(f"{base}.h5")) == on_disk
    assert not any(p.name.startswith(base) and "_LOCALE" in p.name for p in d.iterdir())
    assert (d / f"{base}_dir").is_dir()
    assert c.rmhdf(f"{base}.h5") == []
    assert sorted(c.rmhdf(f"{plain}.h5")) == [f"{plain}.h5", f"{plain}_LOCALE0000.h5"]
    assert (d / f"{plain}_single.h5").exists()


def test_errors(c, daemon):
    hdr = native(daemon, "glob", paths=["no_such_file*"])
    assert not hdr["ok"] and hdr["error"]["code"] == "not_found"
    assert "no_such_file" in hdr["error"]["message"]
    hdr = native(daemon, "glob", paths=[])
    assert hdr["error"]["code"] == "bad_request"
    for cmd in ("filetype", "fileformat", "rmhdf"):
        hdr = native(daemon, cmd, path="../outside.h5")
        assert hdr["error"]["code"] == "forbidden", (cmd, hdr)
        hdr = native(daemon, cmd, path="/etc/passwd")
        assert hdr["error"]["code"] == "forbidden", (cmd, hdr)
        hdr = native(daemon, cmd)
        assert hdr["error"]["code"] == "bad_request" and "'path'" in hdr["error"]["message"]
    with pytest.raises(h5ark.NotFoundError):
        c.filetype("nothing_here.h5")
    assert c.ping()


def test_read_token(tmp_path):
    """A read token may glob and probe files, not remove them nor make objects."""
    tokens = tmp_path / "tokens"
    tokens.write_text("w write\nr read\n")
    d = Daemon(locales=2, token="r", token_file=tokens)
    try:
        (d.data_dir / "t_LOCALE0000.h5").write_bytes(b"PAR1")

        def send(cmd, token, **args):
            return request(d.endpoint, {"v": 1, "cmd": cmd, "args": args, "token": token})[0]

        assert send("glob", "r", paths=["t*"])["result"]["files"] == ["t_LOCALE0000.h5"]
        assert send("filetype", "r", path="t.h5")["result"]["type"] == "parquet"
        rep = send("create", "w", dtype="int64", size=3, fill="arange", stop=3)
        a = rep["result"]["object"]["name"]
        for cmd, args in [("rmhdf", {"path": "t.h5"}),
                          ("take", {"array": a, "index": a}),
                          ("slice", {"array": a, "start": 0, "stop": 1}),
                          ("assign", {"array": a, "index": a, "value": 1}),
                          ("concatenate", {"names": [a]}),
                          ("unique", {"keys": [a]}),
                          ("broadcast", {"segments": a, "values": a, "size": 3}),
                          ("segmented_reduce", {"values": a, "segments": a, "op": "sum"})]:
            rep = send(cmd, "r", **args)
            assert rep["error"]["code"] == "unauthorized", (cmd, rep)
        assert (d.data_dir / "t_LOCALE0000.h5").exists()
        assert send("rmhdf", "w", path="t.h5")["result"]["deleted"] == ["t_LOCALE0000.h5"]
    finally:
        d.cleanup()
