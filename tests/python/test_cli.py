"""The h5ark command-line tool and the C library (libh5ark) against a real daemon: each
command's output, error codes on stderr with exit status 1, usage errors with exit status 2,
UTF-8 strings, and the library's own test program."""
import json
import os
import pathlib
import re
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import h5_pdarray, locale_file, project_version
from daemons import daemon_binary, free_tcp_endpoint, TOOL_SLOWDOWN
from wire import unique

REPO = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("H5ARK_CLI", str(REPO / "build" / "client" / "c" / "h5ark"))
CLIENT_TEST = os.environ.get("H5ARK_CLIENT_TEST",
                             str(REPO / "build" / "client" / "c" / "test_h5ark_client"))
COMMANDS = ["ping", "config", "status", "ls", "info", "create", "save", "writepart", "complete", "load", "pack", "get", "delete", "shutdown", "help"]


@pytest.fixture(scope="module", autouse=True)
def cli_binary():
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"h5ark not found at {CLI}: build first or set H5ARK_CLI")


def run(*args, endpoint=None, env_extra=None, timeout=60):
    env = dict(os.environ)
    env.pop("H5ARK_TOKEN_FILE", None)
    if endpoint is not None:
        env["H5ARK_ENDPOINT"] = endpoint
    else:
        env.pop("H5ARK_ENDPOINT", None)
    env.update(env_extra or {})
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture
def h5(daemon):
    """h5(*args) runs the tool against the module's daemon (endpoint from the environment)."""
    return lambda *args, **kw: run(*args, endpoint=daemon.endpoint, **kw)


def ok(proc):
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def failed(proc, code):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.startswith(f"h5ark: {code}: "), proc.stderr
    assert len(proc.stderr.strip()) > len(f"h5ark: {code}: ")
    return proc.stderr


def usage(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.startswith("h5ark: "), proc.stderr
    assert proc.stdout == ""
    return proc.stderr


def table(text):
    """Parse a table printed by the tool into a list of dicts keyed by its header; columns
    start where their heading starts (cells may hold spaces: "[3, 4]", "80 B")."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    heads = lines[0].split()
    bounds = list(zip(starts, starts[1:] + [None]))
    return [{h: ln[a:b].strip() for h, (a, b) in zip(heads, bounds)} for ln in lines[1:]]


def put_strings(call, strs, name):
    data = b"".join(s.encode() + b"\0" for s in strs)
    offsets = np.cumsum([0] + [len(s.encode()) + 1 for s in strs[:-1]]).astype("<i8") \
        if strs else np.zeros(0, "<i8")
    hdr, _ = call("put", frames=[offsets.tobytes(), data],
                  buffers=[{"name": "segments", "nbytes": offsets.nbytes},
                           {"name": "values", "nbytes": len(data)}],
                  objtype="strings", dtype="str", shape=[len(strs)], name=name)
    assert hdr["ok"], hdr


# ---- help and usage -------------------------------------------------------------------

def test_help():
    out = ok(run("--help"))
    assert out.startswith("usage: h5ark")
    for cmd in COMMANDS:
        assert re.search(rf"^\s+{cmd}\s", out, re.M), cmd


@pytest.mark.parametrize("cmd", COMMANDS)
def test_command_help(cmd):
    out = ok(run(cmd, "--help"))
    assert out.startswith("usage: h5ark") and f" {cmd}" in out.splitlines()[0]


def test_help_command():
    assert ok(run("help")) == ok(run("--help"))
    for cmd in COMMANDS:
        assert ok(run("help", cmd)) == ok(run(cmd, "--help"))
    assert "--mode truncate|append|update" in ok(run("help", "save"))


def test_version():
    assert ok(run("--version")) == f"h5ark {project_version()}\n"
    daemon = subprocess.run([daemon_binary(), "--version"], capture_output=True, text=True,
                            timeout=60)
    assert (daemon.returncode, daemon.stdout) == (0, f"h5arkd {project_version()}\n")


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["--bogus", "ping"],
    ["--endpoint"],
    ["--timeout", "soon", "ping"],
    ["--connect-timeout", "soon", "ping"],
    ["--connect-timeout", "-1", "ping"],
    ["--connect-timeout"],
    ["help", "frobnicate"],
    ["help", "save", "load"],
    ["ping", "extra"],
    ["ping", "--bogus"],
    ["get"],
    ["get", "a", "b"],
    ["get", "a", "--start", "-1"],
    ["get", "a", "--max", "many"],
    ["get", "a", "--stop"],
    ["create", "x"],
    ["create", "x", "--size", "3", "--dtype", "complex128"],
    ["create", "x", "--size", "-3"],
    ["create", "x", "--size", "3", "--fill", "sparkles"],
    ["create", "x", "--size", "3", "--fill", "full"],
    ["create", "x", "--size", "3", "--fill", "full", "--value", "abc"],
    ["create", "x", "y", "--size", "3"],
    ["save", "x"],
    ["save", "--path", "f.h5"],
    ["save", "x", "y", "--path", "f.h5", "--dataset", "only_one"],
    ["save", "x", "--path", "f.h5", "--mode", "overwrite"],
    ["save", "x", "--path", "f.h5", "--file-type", "many"],
    ["save", "x", "--path", "f.h5", "--compression", "lzf"],
    ["save", "x", "--path", "f.h5", "--compression", "gzip", "--level", "0"],
    ["save", "x", "--path", "f.h5", "--compression", "gzip", "--level", "10"],
    ["save", "x", "--path", "f.h5", "--level", "5"],
    ["load"],
    ["load", "f.h5", "--start", "-1"],
    ["load", "f.h5", "--stop", "x"],
    ["ls"],
    ["ls", "a.h5", "b.h5"],
    ["pack", "x.h5"],
    ["pack", "--data-schema", "d.yaml"],
    ["pack", "--data-schema", "d.yaml", "--sample-list", "l.txt", "x.h5"],
    ["delete"],
])
def test_usage_errors(args):
    # no daemon is needed (or contacted) to reject bad usage
    usage(run(*args, endpoint="ipc:///nonexistent/h5ark.sock"))


def test_unreachable_daemon(tmp_path):
    proc = run("--timeout", "0.3", "ping", endpoint=f"ipc://{tmp_path}/nobody.sock")
    failed(proc, "io_error")
    assert "nobody.sock" in proc.stderr


def test_connect_timeout_from_environment_checked():
    err = usage(run("ping", env_extra={"H5ARK_CONNECT_TIMEOUT": "soon"}))
    assert "$H5ARK_CONNECT_TIMEOUT" in err
    # an option given wins over the variable
    usage(run("--connect-timeout", "x", "ping", env_extra={"H5ARK_CONNECT_TIMEOUT": "1"}))


def test_nothing_answering_fails_fast(tmp_path):
    """With nothing at the endpoint, a command fails after the connect timeout (default
    2 s; --connect-timeout, $H5ARK_CONNECT_TIMEOUT), not after --timeout (default 60 s).
    The bound checked is loose on purpose."""
    nobody = f"ipc://{tmp_path}/nobody.sock"
    for endpoint, args, env, seconds in (
            (nobody, ["create", "x", "--size", "3"], {}, 2),
            (free_tcp_endpoint(), ["ping"], {}, 2),
            (nobody, ["--connect-timeout", "1", "--timeout", "600", "info"], {}, 1),
            (nobody, ["info"], {"H5ARK_CONNECT_TIMEOUT": "1"}, 1),
            (nobody, ["--connect-timeout", "1", "info"], {"H5ARK_CONNECT_TIMEOUT": "5"}, 1)):
        start = time.monotonic()
        proc = run(*args, endpoint=endpoint, env_extra=env)
        assert time.monotonic() - start < 10, args
        err = failed(proc, "io_error")
        assert f"nothing answered at {endpoint} within {seconds} s" in err, err
        assert "is h5arkd running there" in err, err


def test_reply_slower_than_connect_timeout(slow_daemon):
    """The connect timeout bounds only the first contact (a ping): the command itself may
    take longer; --connect-timeout 0 sends no ping."""
    d = slow_daemon(delay=1.5)
    assert ok(run("--connect-timeout", "0.3", "info", endpoint=d.endpoint)) == "no objects\n"
    assert d.pings == 1
    assert ok(run("--connect-timeout", "0", "info", endpoint=d.endpoint)) == "no objects\n"
    assert d.pings == 1


def test_bad_endpoint():
    failed(run("--endpoint", "nonsense", "ping"), "bad_request")


# ---- commands ------------------------------------------------------------------------

def test_ping(h5, daemon):
    out = ok(h5("ping"))
    assert re.fullmatch(r"pong from \S+ in \d+\.\d+ ms\n", out), out
    assert daemon.endpoint in out


def test_endpoint_option_overrides_env(daemon):
    out = ok(run("--endpoint", daemon.endpoint, "ping", endpoint="ipc:///nonexistent/x.sock"))
    assert daemon.endpoint in out


def test_config(h5, daemon):
    out = ok(h5("config"))
    conf = dict(re.split(r"\s{2,}", ln.strip(), maxsplit=1) for ln in out.splitlines())
    assert conf["protocol"] == "1"
    assert conf["locales"] == "3"
    assert conf["endpoint"] == daemon.endpoint
    assert conf["auth"] == "false"
    for key in ("max_memory", "memory_used", "shard_cache", "memory_cached", "memory_resident"):
        assert re.fullmatch(r"\d+ \(.*B\)", conf[key]), (key, conf)
    for key in ("version", "hdf5_version", "zmq_version"):
        assert key in conf


def test_create_info_get(h5):
    a, f = unique("a"), unique("f")
    rows = table(ok(h5("create", a, "--dtype", "int64", "--size", "10", "--fill", "arange",
                       "--start", "0", "--stop", "10")))
    assert rows == [{"NAME": a, "OBJTYPE": "pdarray", "DTYPE": "int64", "SIZE": "10",
                     "SHAPE": "[10]", "NBYTES": "80 B"}]
    ok(h5("create", f, "--dtype", "float64", "--size", "4", "--fill", "full", "--value", "-2.5"))

    info = {r["NAME"]: r for r in table(ok(h5("info", a, f)))}
    assert set(info) == {a, f}
    assert info[a]["OBJTYPE"] == "pdarray" and info[a]["SHAPE"] == "[10]"
    assert info[f]["DTYPE"] == "float64" and info[f]["SIZE"] == "4"
    assert {a, f} <= {r["NAME"] for r in table(ok(h5("info")))}

    assert ok(h5("get", a)).split() == [str(i) for i in range(10)]
    assert ok(h5("get", a, "--start", "3", "--stop", "6")).split() == ["3", "4", "5"]
    assert ok(h5("get", f)).split() == ["-2.5"] * 4
    out = ok(h5("get", a, "--max", "4"))
    lines = out.splitlines()
    assert lines[:4] == ["0", "1", "2", "3"]
    assert len(lines) == 5 and "6 more" in lines[4]
    assert ok(h5("get", a, "--max", "0")).split() == [str(i) for i in range(10)]
    assert ok(h5("get", a, "--start", "5", "--stop", "5")) == ""


def test_create_fills(h5):
    n = unique("arange")  # arange needs no --size
    ok(h5("create", n, "--dtype", "int32", "--fill", "arange", "--start", "-4", "--stop", "4",
          "--step", "3"))
    assert ok(h5("get", n)).split() == ["-4", "-1", "2"]
    b = unique("b")
    ok(h5("create", b, "--dtype", "bool", "--size", "3", "--fill", "ones"))
    assert ok(h5("get", b)).split() == ["true"] * 3
    u = unique("u")
    ok(h5("create", u, "--dtype", "uint64", "--size", "2", "--fill", "full", "--value",
          "18446744073709551615"))
    assert ok(h5("get", u)).split() == ["18446744073709551615"] * 2
    r1, r2 = unique("r"), unique("r")
    for r in (r1, r2):
        ok(h5("create", r, "--dtype", "int64", "--size", "50", "--fill", "randint", "--low",
              "-3", "--high", "3", "--seed", "7"))
    v1 = ok(h5("get", r1, "--max", "0")).split()
    assert v1 == ok(h5("get", r2, "--max", "0")).split()
    assert len(v1) == 50 and all(-3 <= int(x) < 3 for x in v1)
    lin = unique("lin")
    ok(h5("create", lin, "--size", "5", "--fill", "linspace", "--start", "0", "--stop", "1"))
    assert [float(x) for x in ok(h5("get", lin)).split()] == [0, 0.25, 0.5, 0.75, 1]
    uni = unique("uni")
    ok(h5("create", uni, "--dtype", "float32", "--size", "20", "--fill", "uniform", "--low",
          "2", "--high", "3", "--seed", "1"))
    assert all(2 <= float(x) < 3 for x in ok(h5("get", uni)).split())


def test_get_float_edges(h5, call):
    name = unique("fl")
    vals = np.array([np.nan, np.inf, -np.inf, -0.0, 0.1, 1e300, 5e-324], dtype="<f8")
    hdr, _ = call("put", frames=[vals.tobytes()], buffers=[{"name": "values",
                                                              "nbytes": vals.nbytes}],
                  objtype="pdarray", dtype="float64", shape=[len(vals)], name=name)
    assert hdr["ok"], hdr
    out = ok(h5("get", name)).split()
    assert out == ["nan", "inf", "-inf", "-0.0", "0.1", "1e+300", "5e-324"]
    assert np.array([float(x) for x in out]).tobytes()[8:] == vals.tobytes()[8:]


def test_get_strings_utf8(h5, call):
    name = unique("s")
    strs = ["", "héllo wörld", "日本語", "🎉", 'say "hi"\\', "tab\there\nnewline", "x" * 70000,
            "last"]
    put_strings(call, strs, name)
    rows = table(ok(h5("info", name)))
    assert rows[0]["OBJTYPE"] == "strings" and rows[0]["DTYPE"] == "str"
    assert rows[0]["SIZE"] == str(len(strs))
    lines = ok(h5("get", name)).split("\n")
    assert lines[-1] == ""
    assert lines[:-1] == ['""', '"héllo wörld"', '"日本語"', '"🎉"', r'"say \"hi\"\\"',
                          r'"tab\there\nnewline"', '"' + "x" * 70000 + '"', '"last"']
    assert ok(h5("get", name, "--start", "1", "--stop", "3")) == '"héllo wörld"\n"日本語"\n'
    assert ok(h5("get", name, "--start", "7")) == '"last"\n'


def test_not_found(h5):
    missing = unique("missing")
    err = failed(h5("get", missing), "not_found")
    assert missing in err
    failed(h5("info", missing), "not_found")
    failed(h5("delete", missing), "not_found")


def test_errors_from_daemon(h5):
    name = unique("dup")
    ok(h5("create", name, "--dtype", "int8", "--size", "2"))
    failed(h5("create", name, "--dtype", "int8", "--size", "2"), "already_exists")
    failed(h5("get", name, "--start", "1", "--stop", "5"), "bad_request")
    failed(h5("create", unique("x"), "--dtype", "int8", "--size", "3", "--fill", "arange",
              "--stop", "10"), "bad_request")


def test_delete(h5):
    a, b = unique("d"), unique("d")
    ok(h5("create", a, "--size", "1"))
    ok(h5("create", b, "--size", "1"))
    # all or nothing: one unknown name deletes none
    failed(h5("delete", a, unique("nope")), "not_found")
    ok(h5("info", a))
    out = ok(h5("delete", a, b))
    assert out.splitlines() == [f"deleted {a}", f"deleted {b}"]
    failed(h5("info", a), "not_found")
    assert a not in ok(h5("info"))


# ---- HDF5 commands -------------------------------------------------------------------

def test_save_single_ls_load(h5, daemon, call):
    ints, strs = unique("ints"), unique("strs")
    ok(h5("create", ints, "--dtype", "int64", "--fill", "arange", "--stop", "7"))
    words = ["α", "", "βγ", "plain"]
    put_strings(call, words, strs)
    path = unique("cli") + ".h5"
    out = ok(h5("save", ints, strs, "--path", path, "--dataset", "i", "--dataset", "s",
                "--file-type", "single"))
    assert out.splitlines() == [f"wrote {path}"]
    f = daemon.data_dir / path
    with h5py.File(f, "r") as h:
        assert list(h["i"][()]) == list(range(7))
        assert set(h.keys()) == {"i", "s"}

    rows = {r["NAME"].lstrip("/"): r for r in table(ok(h5("ls", path)))}
    assert set(rows) == {"i", "s"}
    assert rows["i"]["KIND"] == "dataset" and rows["i"]["OBJTYPE"] == "pdarray"
    assert rows["i"]["DTYPE"] == "int64" and rows["i"]["SHAPE"] == "[7]"
    assert rows["s"]["OBJTYPE"] == "strings"
    rec = table(ok(h5("ls", path, "--recursive")))
    assert {r["NAME"].lstrip("/") for r in rec} >= {"i", "s"}
    assert len(rec) > len(rows)  # the strings group's members

    loaded = {r["DATASET"]: r for r in table(ok(h5("load", path)))}
    assert set(loaded) == {"i", "s"}
    assert loaded["i"]["OBJTYPE"] == "pdarray" and loaded["i"]["SIZE"] == "7"
    assert loaded["s"]["OBJTYPE"] == "strings" and loaded["s"]["SIZE"] == "4"
    assert ok(h5("get", loaded["i"]["NAME"])).split() == [str(i) for i in range(7)]
    assert ok(h5("get", loaded["s"]["NAME"])).splitlines() == ['"α"', '""', '"βγ"', '"plain"']

    only = table(ok(h5("load", path, "--dataset", "s")))
    assert [r["DATASET"] for r in only] == ["s"]
    rows = {r["DATASET"]: r for r in table(ok(h5("load", path, "--start", "1", "--stop", "3")))}
    assert ok(h5("get", rows["i"]["NAME"])).split() == ["1", "2"]
    assert ok(h5("get", rows["s"]["NAME"])).splitlines() == ['""', '"βγ"']
    tail = table(ok(h5("load", path, "--dataset", "i", "--start", "5")))
    assert ok(h5("get", tail[0]["NAME"])).split() == ["5", "6"]
    failed(h5("load", path, "--stop", "5"), "bad_request")  # 's' has 4 rows

    # truncating an existing file says so on stderr
    proc = h5("save", ints, "--path", path, "--file-type", "single")
    ok(proc)
    assert "h5ark: warning:" in proc.stderr and path in proc.stderr
    proc = h5("save", strs, "--path", path, "--dataset", "s2", "--mode", "append",
              "--file-type", "single")
    ok(proc)
    with h5py.File(f, "r") as h:
        assert set(h.keys()) == {ints, "s2"}


def test_ls_exetera_fields(h5, daemon):
    """An ExeTera field is one entry (its datasets are not listed) with its fieldtype,
    length and completed mark; a file without fields keeps the plain columns."""
    from exetera_layout import add_field, categorical, indexed
    path = unique("exls") + ".h5"
    with h5py.File(daemon.data_dir / path, "w") as f:
        df = f.create_group("df")
        add_field(df, "name", "indexedstring", **indexed(["a", "", "ccc"]))
        add_field(df, "age", "numeric,int32", values=np.arange(3, dtype=np.int32))
        add_field(df, "status", "categorical,int8",
                  **categorical([0, 1, 0], ["no", "yes"], [0, 1], np.int8))
        add_field(df, "partial", "numeric,float64", completed=None, values=np.zeros(3))
        add_field(df, "failed", "fixedstring,2", completed=False, values=np.array([b"ab"] * 3))
        f.create_dataset("plain", data=np.arange(4))
    rows = {r["NAME"].lstrip("/"): r for r in table(ok(h5("ls", path, "--recursive")))}
    assert set(rows) == {"df", "df/name", "df/age", "df/status", "df/partial", "df/failed",
                         "plain"}, rows
    assert rows["df"]["KIND"] == "group" and rows["df"]["OBJTYPE"] == "dataframe"
    want = {"df/name": ("strings", "indexedstring", "true"),
            "df/age": ("pdarray", "numeric,int32", "true"),
            "df/status": ("categorical", "categorical,int8", "true"),
            "df/partial": ("pdarray", "numeric,float64", "-"),
            "df/failed": ("strings", "fixedstring,2", "false")}
    for name, (objtype, fieldtype, completed) in want.items():
        r = rows[name]
        assert (r["KIND"], r["OBJTYPE"], r["FIELDTYPE"], r["LENGTH"], r["COMPLETED"]) == (
            "field", objtype, fieldtype, "3", completed), r
    assert rows["plain"]["FIELDTYPE"] == "-" and rows["plain"]["KIND"] == "dataset"
    top = table(ok(h5("ls", path)))
    assert {r["NAME"] for r in top} == {"df", "plain"} and "FIELDTYPE" not in top[0]
    # loading the dataframe and one field of it
    loaded = {r["DATASET"]: r for r in table(ok(h5("load", path, "--dataset", "df",
                                                   "--dataset", "df/name")))}
    assert loaded["df"]["OBJTYPE"] == "dataframe" and loaded["df"]["SIZE"] == "3"
    assert ok(h5("get", loaded["df/name"]["NAME"])).splitlines() == ['"a"', '""', '"ccc"']


def test_writepart_and_complete(h5, daemon):
    """writepart appends an object's rows to an ExeTera field (made with its file and
    dataframe), leaving it not completed; complete marks it; h5py sees both."""
    a, b = unique("wp"), unique("wp")
    ok(h5("create", a, "--dtype", "int32", "--fill", "arange", "--stop", "5"))
    ok(h5("create", b, "--dtype", "int32", "--fill", "arange", "--start", "5", "--stop", "8"))
    path = f"{unique('wpdir')}/parts.h5"
    assert ok(h5("writepart", a, "--path", path, "--field", "df/n")).split() == ["df/n", "5"]
    assert ok(h5("writepart", b, "--path", path, "--field", "df/n")).split() == ["df/n", "8"]
    with h5py.File(daemon.data_dir / path, "r") as f:
        assert list(f["df/n/values"][()]) == list(range(8))
        assert f["df/n"].attrs["fieldtype"] == "numeric,int32"
        assert "completed" not in f["df/n/values"].attrs
    assert ok(h5("complete", "--path", path, "--field", "df/n")).split() == [
        "df/n", "8", "completed"]
    with h5py.File(daemon.data_dir / path, "r") as f:
        assert f["df/n/values"].attrs["completed"] == 1
    rows = {r["NAME"].lstrip("/"): r for r in table(ok(h5("ls", path, "--recursive")))}
    assert (rows["df/n"]["LENGTH"], rows["df/n"]["COMPLETED"]) == ("8", "true"), rows
    # a part of another type, a field missing, bad usage
    f64 = unique("wp")
    ok(h5("create", f64, "--size", "2"))
    failed(h5("writepart", f64, "--path", path, "--field", "df/n"), "type_error")
    failed(h5("complete", "--path", path, "--field", "df/none"), "not_found")
    failed(h5("writepart", a, "--path", "../out.h5", "--field", "df/n"), "forbidden")
    for args in (["writepart", "--path", path, "--field", "df/n"],
                 ["writepart", a, "--path", path], ["complete", a, "--path", path, "--field",
                                                    "df/n"],
                 ["complete", "--path", path, "--field", "df/n", "--fieldtype", "timestamp"]):
        assert usage(h5(*args)).startswith("h5ark: usage: "), args


def test_save_compressed(h5, daemon):
    """--compression gzip --level N: chunked, shuffled, deflated at that level, as h5py
    reads it; without --level the daemon's default; none stays contiguous."""
    name = unique("gz")
    ok(h5("create", name, "--dtype", "int64", "--fill", "arange", "--stop", "300000"))
    for args, level in ((["--compression", "gzip", "--level", "7"], 7),
                        (["--compression", "gzip"], 4), (["--compression", "none"], None)):
        path = unique("cli_gz") + ".h5"
        ok(h5("save", name, "--path", path, "--file-type", "single", *args))
        with h5py.File(daemon.data_dir / path, "r") as h:
            d = h[name]
            assert d.compression == ("gzip" if level else None)
            assert d.compression_opts == level and d.shuffle == bool(level)
            assert (d[()] == np.arange(300000)).all()


def test_save_distribute(h5, daemon):
    name = unique("dist")
    ok(h5("create", name, "--dtype", "float64", "--size", "30", "--fill", "linspace", "--start",
          "0", "--stop", "29"))
    path = unique("dist") + ".h5"
    out = ok(h5("save", name, "--path", path))
    files = [ln.removeprefix("wrote ") for ln in out.splitlines()]
    assert files == [locale_file(path, i) for i in range(3)]
    for fname in files:
        assert (daemon.data_dir / fname).is_file()
    stem = path.rpartition(".")[0]
    loaded = table(ok(h5("load", f"{stem}_LOCALE*.h5")))
    assert [r["DATASET"] for r in loaded] == [name]
    assert loaded[0]["SIZE"] == "30"
    assert [float(x) for x in ok(h5("get", loaded[0]["NAME"], "--max", "0")).split()] == \
        list(range(30))


def test_save_update(h5, daemon):
    """--mode update replaces the named datasets in the files, the others are kept."""
    x, y, new = unique("ux"), unique("uy"), unique("unew")
    ok(h5("create", x, "--dtype", "int64", "--fill", "arange", "--stop", "6"))
    ok(h5("create", y, "--dtype", "float64", "--size", "4", "--fill", "ones"))
    ok(h5("create", new, "--dtype", "int32", "--size", "9", "--fill", "full", "--value", "-7"))
    for file_type in ("single", "distribute"):
        path = unique("upd") + ".h5"
        out = ok(h5("save", x, y, "--path", path, "--dataset", "x", "--dataset", "y",
                    "--file-type", file_type))
        files = [daemon.data_dir / ln.removeprefix("wrote ") for ln in out.splitlines()]
        out = ok(h5("save", new, "--path", path, "--dataset", "x", "--mode", "update",
                    "--file-type", file_type))
        assert [daemon.data_dir / ln.removeprefix("wrote ") for ln in out.splitlines()] == files
        updated = h5_pdarray(files, "x")
        assert updated.dtype == np.int32 and list(updated) == [-7] * 9
        assert list(h5_pdarray(files, "y")) == [1.0] * 4
        loaded = {r["DATASET"]: r for r in table(ok(h5("load", path)))}
        assert ok(h5("get", loaded["x"]["NAME"])).split() == ["-7"] * 9
    # update replaces, it does not add
    failed(h5("save", new, "--path", path, "--dataset", "z", "--mode", "update"), "not_found")


def test_long_save_outlasts_connect_timeout(h5, daemon):
    """A long command after a short --connect-timeout succeeds: the timeout bounds only
    the first contact."""
    name = unique("big")
    ok(h5("create", name, "--size", "4000000", "--fill", "uniform", "--seed", "3"))
    path = unique("slow") + ".h5"
    ok(h5("--connect-timeout", 0.1 * TOOL_SLOWDOWN, "--timeout", 600, "save", name, "--path",
          path, "--file-type", "single", "--compression", "gzip", "--level", "9", timeout=900))
    with h5py.File(daemon.data_dir / path, "r") as f:
        values = f[name][()]
    assert values.shape == (4000000,) and ((0 <= values) & (values < 1)).all()


def test_hdf_errors(h5):
    name = unique("e")
    ok(h5("create", name, "--size", "2"))
    failed(h5("save", name, "--path", "../outside.h5"), "forbidden")
    failed(h5("save", name, "--path", "/tmp/absolute.h5"), "forbidden")
    failed(h5("save", unique("nope"), "--path", unique("x") + ".h5"), "not_found")
    failed(h5("load", unique("no_such_file") + ".h5"), "not_found")
    failed(h5("ls", unique("no_such_file") + ".h5"), "not_found")
    failed(h5("ls", "../etc/passwd"), "forbidden")


# ---- auth and shutdown (daemons of their own) -----------------------------------------

def test_token(start_daemon, tmp_path):
    d = start_daemon(token="s3cret-token", locales=1)
    failed(run("ping", endpoint=d.endpoint), "unauthorized")
    tok = tmp_path / "tok"
    tok.write_text("  s3cret-token \n")
    assert "pong" in ok(run("--token-file", tok, "ping", endpoint=d.endpoint))
    assert "pong" in ok(run("ping", endpoint=d.endpoint,
                            env_extra={"H5ARK_TOKEN_FILE": str(tok)}))
    bad = tmp_path / "bad"
    bad.write_text("wrong\n")
    failed(run("--token-file", bad, "ping", endpoint=d.endpoint), "unauthorized")
    failed(run("--token-file", tmp_path / "missing", "ping", endpoint=d.endpoint), "io_error")


def test_token_file_of_the_daemon(start_daemon, tmp_path):
    # The daemon's own token file (comments, roles) serves the tool as it is: its first
    # token is used, as a container's healthcheck does with the token secret.
    tokens = tmp_path / "tokens"
    tokens.write_text("# tokens for the shared service\n\n  # indented comment\n"
                      "9f2c0e1d3b5a47c8 write\n5d8e7a6b4c3f2e1d read\n")
    d = start_daemon(token="9f2c0e1d3b5a47c8", token_file=tokens, locales=1)
    assert "pong" in ok(run("--token-file", tokens, "ping", endpoint=d.endpoint))
    only_comments = tmp_path / "only_comments"
    only_comments.write_text("# no token yet\n")
    failed(run("--token-file", only_comments, "ping", endpoint=d.endpoint), "unauthorized")


def test_shutdown(start_daemon):
    d = start_daemon(locales=1)
    out = ok(run("shutdown", endpoint=d.endpoint))
    assert "stopping" in out
    assert d.proc.wait(30) == 0


# ---- the C library ---------------------------------------------------------------------

def run_client_test(*args):
    if not os.access(CLIENT_TEST, os.X_OK):
        pytest.fail(f"test_h5ark_client not found at {CLIENT_TEST}: build or set H5ARK_CLIENT_TEST")
    proc = subprocess.run([CLIENT_TEST, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\d+ checks, 0 failed", proc.stdout), proc.stdout


def test_c_library(daemon):
    run_client_test(daemon.endpoint, "basic")


def test_c_library_hdf(daemon):
    run_client_test(daemon.endpoint, "hdf")


def test_c_library_clear_and_shutdown(start_daemon):
    d = start_daemon(locales=2)
    run_client_test(d.endpoint, "destructive")
    assert d.proc.wait(30) == 0


def test_c_library_over_tcp(start_daemon):
    d = start_daemon(locales=2, endpoint=free_tcp_endpoint())
    run_client_test(d.endpoint, "basic")
    out = ok(run("ping", endpoint=None, env_extra={"H5ARK_ENDPOINT": d.endpoint}))
    assert d.endpoint in out


def test_getacl_setacl(start_daemon, tmp_path):
    """`h5ark getacl` / `h5ark setacl` and the C library's getacl/setacl against a daemon with
    users: an ACL written, read back by the daemon's rules (bob of g:physics then reads
    alice's folder), refusals as every command's."""
    tokens = tmp_path / "tokens"
    tokens.write_text("tok-alice write user=alice groups=physics\n"
                      "tok-bob write user=bob groups=physics\ntok-root admin user=root\n")
    d = start_daemon(token="tok-root", token_file=tokens, locales=2)
    for u in ("alice", "bob"):
        (tmp_path / f"{u}.token").write_text(f"tok-{u}\n")

    def as_(user, *args):
        return run("--token-file", tmp_path / f"{user}.token", *args, endpoint=d.endpoint)
    (d.data_dir / "home" / "alice" / "pub").mkdir(parents=True)
    with h5py.File(d.data_dir / "home" / "alice" / "pub" / "a.h5", "w") as f:
        f["x"] = np.arange(3)
    failed(as_("bob", "ls", "/home/alice/pub/a.h5"), "forbidden")
    failed(as_("bob", "getacl", "/home/alice/pub"), "forbidden")
    acl = '[{"subject": "alice", "read": true, "create": true, "update": true, ' \
          '"delete": true, "readACL": true, "updateACL": true}, ' \
          '{"subject": "g:physics", "read": true, "readACL": true}]'
    out = ok(as_("alice", "setacl", "pub", "--acl", acl))
    assert out.split("\n") == ["alice            read,create,update,delete,readACL,updateACL",
                                "g:physics        read,readACL", ""], out
    assert json.loads((d.data_dir / "home" / "alice" / "pub" / ".h5ark-acl").read_text())[1] \
        == {"subject": "g:physics", "read": True, "create": False, "update": False,
            "delete": False, "readACL": True, "updateACL": False}
    out = ok(as_("bob", "getacl", "/home/alice/pub/a.h5"))
    assert out.splitlines()[0].split() == ["from", "/home/alice/pub"], out
    assert out.splitlines()[2].split() == ["g:physics", "read,readACL"], out
    assert "x" in ok(as_("bob", "ls", "/home/alice/pub/a.h5"))
    # refusals: bob may not change it, a bad subject or bad JSON changes nothing
    failed(as_("bob", "setacl", "/home/alice/pub", "--acl", "[]"), "forbidden")
    err = failed(as_("alice", "setacl", "pub", "--acl", '[{"subject": "a b"}]'), "bad_request")
    assert "a b" in err
    for bad in ("{", '{"subject": "bob"}'):
        proc = as_("alice", "setacl", "pub", "--acl", bad)
        assert proc.returncode == 2 and "--acl" in proc.stderr, proc.stderr
    proc = as_("alice", "setacl", "pub")
    assert proc.returncode == 2 and "--acl" in proc.stderr, proc.stderr
    assert "g:physics" in ok(as_("bob", "getacl", "/home/alice/pub"))
    # the C library, as alice in her home
    os.environ["H5ARK_TEST_TOKEN"], os.environ["H5ARK_TEST_USER"] = "tok-alice", "alice"
    try:
        run_client_test(d.endpoint, "acl")
    finally:
        del os.environ["H5ARK_TEST_TOKEN"], os.environ["H5ARK_TEST_USER"]


def test_pack(h5, daemon, tmp_path):
    """pack from the tool: schemas read from files here, samples in the daemon's data
    directory; the arrays and the field map printed; errors as every command's."""
    folder = unique("clipack")
    (daemon.data_dir / folder).mkdir()
    with h5py.File(daemon.data_dir / folder / "s.h5", "w") as f:
        for i in range(3):
            f[f"s{i}/x"] = np.array([1.0 + i])
            f[f"s{i}/y"] = np.array([2.0 + i, 3.0])
            f[f"s{i}/n"] = np.arange(4, dtype=np.int32)
    data = tmp_path / "data.yaml"
    data.write_text("x:\n  metadata: {ordering: 2, scale: 2.0}\ny:\n  metadata: {ordering: 1}\n"
                    "n:\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text("x:\n  metadata: {pack: v}\ny:\n  metadata: {pack: v}\nn:\n")
    prefix = unique("p") + "_"
    out = ok(h5("pack", "--data-schema", data, "--experiment-schema", exp, "--name", prefix,
                f"{folder}/*.h5"))
    assert out.startswith(f"3 samples, their ids in {prefix}sample_ids\n"), out
    assert re.search(rf"^v\s+{prefix}v\s+arrayview\s+float64\s+9\s+\[3, 3\]", out, re.M), out
    assert re.search(rf"^n\s+{prefix}n\s+arrayview\s+int32\s+12\s+\[3, 4\]", out, re.M), out
    assert re.search(r"^x\s+v\s+2\s+1\s+\[1\]\s+float64$", out, re.M), out
    assert re.search(r"^y\s+v\s+0\s+2\s+\[2\]\s+float64$", out, re.M), out
    (daemon.data_dir / folder / "l.txt").write_text("MULTI-SAMPLE_INCLUSION_V2\n1 1\n.\ns.h5 1 s2\n")
    out = ok(h5("pack", "--data-schema", data, "--sample-list", f"{folder}/l.txt"))
    assert out.startswith("1 samples"), out
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: [1,\n")
    assert "line 2" in failed(h5("pack", "--data-schema", bad, f"{folder}/s.h5"), "schema_error")
    failed(h5("pack", "--data-schema", tmp_path / "none.yaml", f"{folder}/s.h5"), "io_error")
