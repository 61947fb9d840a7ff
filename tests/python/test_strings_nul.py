"""Strings hold any bytes: a NUL inside a string is data, its end coming from the offsets,
never from a NUL (protocol/PROTOCOL.md, "Objects"; docs/FORMAT.md, "Strings"). Round trips
through put/get, tohdf/readhdf in single and distributed files (checked with h5py), the
ExeTera writer (checked with h5py), the gateway's /data/, the Python client and groupby;
the one layout that cannot hold a NUL (Strings without `segments`) refuses by name."""
import json
import urllib.request

import h5py
import numpy as np
import pytest

from conftest import h5_strings, locale_file
from daemons import MPIRUN, Daemon, free_port, mpi_build, TOOL_SLOWDOWN
from wire import Conn, decode_strings, encode_strings, unique

# NULs at the start, middle and end, alone, all-NUL, empty strings, mixed unicode
WORDS = ["", "\0", "a\0b", "\0lead", "trail\0", "\0\0\0", "", "héllo\0wörld", "plain",
         "\0é\0", "日本\0語", "x" * 40 + "\0" + "y" * 40, "\0\0", "z"]


def put(conn, strs, split=None):
    seg, val = encode_strings(strs)
    frames = [seg, val] if not split else [(seg + val)[i:i + split]
                                           for i in range(0, len(seg) + len(val), split)]
    hdr, _ = conn.ok("put", frames, buffers=[{"name": "segments", "nbytes": len(seg)},
                                            {"name": "values", "nbytes": len(val)}],
                     objtype="strings", dtype="str", shape=[len(strs)])
    return hdr["result"]["object"]


def get(conn, name, **kw):
    desc, bufs = conn.buffers(name, **kw)
    assert desc["objtype"] == "strings", desc
    return decode_strings(bufs.get("segments", b""), bufs.get("values", b""))


@pytest.mark.parametrize("strs", [WORDS, ["\0"], ["\0" * 5] * 7, ["", "\0", ""],
                                  [f"{i}\0{'é' * (i % 5)}\0" for i in range(1000)]],
                         ids=["mixed", "one-nul", "all-nul", "empties", "many"])
def test_put_get_round_trip(conn, strs):
    desc = put(conn, strs, split=7 if len(strs) < 20 else None)
    assert desc["size"] == len(strs)
    assert desc["bytes"] == sum(len(s.encode()) + 1 for s in strs), desc
    assert get(conn, desc["name"]) == strs
    # ranges over the locale boundaries, each string whole with its NULs
    for lo, hi in ((0, 1), (1, len(strs)), (len(strs) // 3, 2 * len(strs) // 3 + 1)):
        assert get(conn, desc["name"], start=lo, stop=hi) == strs[lo:hi], (lo, hi)
    conn.ok("delete", names=[desc["name"]])


@pytest.mark.parametrize("segments,values", [
    ([0, 3], b"a\0b\0"),  # the byte before offset 3 is 'b', no NUL: string 0 does not end
    ([0], b"a\0b"),  # the last string ends in no NUL
    ([0, 1], b"\0\0\0"),  # fine: "", "\0"
])
def test_put_checks_the_byte_after_each_string(conn, segments, values):
    seg = np.array(segments, "<i8").tobytes()
    hdr, _ = conn.raw("put", [seg, values], buffers=[{"name": "segments", "nbytes": len(seg)},
                                                    {"name": "values", "nbytes": len(values)}],
                      objtype="strings", dtype="str", shape=[len(segments)])
    if values == b"\0\0\0":
        assert hdr["ok"], hdr
        assert get(conn, hdr["result"]["object"]["name"]) == ["", "\0"]
    else:
        assert not hdr["ok"] and hdr["error"]["code"] == "bad_request", hdr
        assert "NUL" in hdr["error"]["message"], hdr
    conn.ok("ping")


def check_arkouda_layout(files, group, strs):
    """Arkouda's layout: values uint8 with one NUL after each string, segments the offsets
    (from 0 in each file)."""
    got = []
    for f in files:
        with h5py.File(f, "r") as h:
            vals, segs = h[f"{group}/values"], h[f"{group}/segments"]
            assert vals.dtype == np.uint8 and segs.dtype == np.int64
            raw = vals[()].tobytes()
            offs = list(segs[()])
            assert not offs or offs[0] == 0
            assert all(raw[e - 1] == 0 for e in offs[1:] + [len(raw)] if e)
            got += [raw[s:e - 1].decode() for s, e in zip(offs, offs[1:] + [len(raw)])]
    assert got == strs
    assert h5_strings(files, group) == strs


@pytest.mark.parametrize("file_type", ["single", "distribute"])
def test_tohdf_readhdf(conn, file_type):
    desc = put(conn, WORDS * 3)
    path = f"{unique('nulh5')}.h5"
    conn.ok("tohdf", names=[desc["name"]], datasets=["s"], path=path, file_type=file_type)
    files = ([conn.dir / path] if file_type == "single"
             else [conn.dir / locale_file(path, i) for i in range(3)])
    check_arkouda_layout(files, "s", WORDS * 3)
    paths = [path] if file_type == "single" else [locale_file(path, i) for i in range(3)]
    for kw in ({}, {"start": 2, "stop": 30}, {"start": 40}):
        hdr, _ = conn.ok("readhdf", paths=paths, datasets=["s"], **kw)
        obj = hdr["result"]["objects"]["s"]
        lo, hi = kw.get("start", 0), kw.get("stop", len(WORDS) * 3)
        assert get(conn, obj["name"]) == (WORDS * 3)[lo:hi], kw
        conn.ok("delete", names=[obj["name"]])
    # a file h5py wrote in Arkouda's layout reads the same
    other = conn.dir / f"{unique('nulh5py')}.h5"
    seg, val = encode_strings(WORDS)
    with h5py.File(other, "w") as f:
        g = f.create_group("w")
        g["values"] = np.frombuffer(val, np.uint8)
        g["segments"] = np.frombuffer(seg, "<i8")
    hdr, _ = conn.ok("readhdf", paths=[other.name], datasets=["w"])
    assert get(conn, hdr["result"]["objects"]["w"]["name"]) == WORDS
    conn.ok("delete", names=[desc["name"], hdr["result"]["objects"]["w"]["name"]])


def test_without_segments_refuses_a_string_holding_nul(conn):
    """Without offsets each NUL ends a string: such strings cannot be written so."""
    desc = put(conn, ["ok", "fine", "a\0b", "\0"])
    path = f"{unique('nulseg')}.h5"
    err = conn.fail("tohdf", names=[desc["name"]], datasets=["s"], path=path,
                    file_type="single", strings_segments=False)
    assert err["code"] == "bad_request" and "'s'" in err["message"], err
    assert "string 2 " in err["message"] and "NUL" in err["message"], err
    assert not (conn.dir / path).exists()
    plain = put(conn, ["ok", "", "fine"])
    conn.ok("tohdf", names=[plain["name"]], datasets=["s"], path=path, file_type="single",
            strings_segments=False)
    hdr, _ = conn.ok("readhdf", paths=[path], datasets=["s"])
    assert get(conn, hdr["result"]["objects"]["s"]["name"]) == ["ok", "", "fine"]
    conn.ok("delete", names=[desc["name"], plain["name"], hdr["result"]["objects"]["s"]["name"]])


def test_exetera_writes_keep_nuls(conn):
    """tohdf format exetera and writepart: indexed strings hold the bytes as they are (h5py
    reads them back by `index`); fixed strings keep a NUL inside, and lose only trailing
    ones, the padding (as numpy reads them)."""
    words = WORDS[:6]
    path = f"{unique('nulex')}.hdf5"
    s = put(conn, words)["name"]
    conn.ok("tohdf", names=[s], datasets=["name"], group="df", path=path, format="exetera")
    fixed = ["AB", "Z\0Y", "\0\0\0Q", "ok\0\0", "", "é\0"]
    f = put(conn, fixed)["name"]
    conn.ok("tohdf", names=[f], datasets=["code"], group="df", path=path, format="exetera",
            mode="append", fieldtype="fixedstring,4")
    part = put(conn, ["\0p", "q\0"])["name"]
    conn.ok("writepart", path=path, field="df/parts", name=part)
    conn.ok("writepart", path=path, field="df/parts", name=s)
    conn.ok("complete", path=path, field="df/parts")
    with h5py.File(conn.dir / path, "r") as h:
        index, raw = h["df/name/index"][()], h["df/name/values"][()].tobytes()
        assert [raw[a:b].decode() for a, b in zip(index, index[1:])] == words
        assert h["df/code/values"][()].tobytes() == b"".join(w.encode().ljust(4, b"\0")
                                                             for w in fixed)
        index, raw = h["df/parts/index"][()], h["df/parts/values"][()].tobytes()
        assert [raw[a:b].decode() for a, b in zip(index, index[1:])] == ["\0p", "q\0"] + words
    for field, want in (("df/name", words), ("df/code", [w.rstrip("\0") for w in fixed]),
                        ("df/parts", ["\0p", "q\0"] + words)):
        hdr, _ = conn.ok("readhdf", paths=[path], datasets=[field])
        obj = hdr["result"]["objects"][field]
        assert get(conn, obj["name"]) == want, field
        conn.ok("delete", names=[obj["name"]])
    conn.ok("delete", names=[s, f, part])


def test_exetera_fixture_strings_holding_nul(conn, exetera_fixtures):
    """ExeTera's own file: every indexed string field reads as ExeTera's index and values
    say, the strings holding NULs among them."""
    expected = json.loads((exetera_fixtures / "expected_session.json").read_text())
    sub = unique("nulfx")
    (conn.dir / sub).mkdir()
    (conn.dir / sub / "session.hdf5").write_bytes((exetera_fixtures / "session.hdf5").read_bytes())
    holding = 0
    for field, info in expected.items():
        if info["fieldtype"] != "indexedstring":
            continue
        index, raw = info["expected_index"], bytes.fromhex(info["expected_values_hex"])
        want = [raw[a:b].decode() for a, b in zip(index, index[1:])]
        holding += sum("\0" in w for w in want)
        hdr, _ = conn.ok("readhdf", paths=[f"{sub}/session.hdf5"], datasets=[field])
        obj = hdr["result"]["objects"][field]
        assert get(conn, obj["name"]) == want, field
        conn.ok("delete", names=[obj["name"]])
    assert holding >= 1  # the fixture holds one (people/name row 9)


def groups(conn, keys):
    """groupby of strings keys (each a list), then count: {key tuple: rows}."""
    names = [put(conn, k)["name"] for k in keys]
    hdr, _ = conn.ok("groupby", keys=names)
    gb = hdr["result"]["object"]
    hdr, _ = conn.ok("aggregate", groupby=gb["name"], op="count")
    res = hdr["result"]
    cols = [get(conn, k["name"]) for k in res["keys"]]
    counts = conn.get(res["values"]["name"]).tolist()
    conn.ok("delete", names=names + [gb["name"], res["values"]["name"]] +
            [k["name"] for k in res["keys"]])
    assert gb["ngroups"] == len(counts)
    return dict(zip(zip(*cols), counts))


def test_groupby_tells_nul_strings_apart(conn):
    """"a", "a\0" and "a\0\0" are three keys; two keys of strings holding NULs do not run
    together ("a\0" + "b" is not "a" + "\0b")."""
    keys = ["a", "a\0", "a\0\0", "a", "", "\0", "a\0", ""]
    assert groups(conn, [keys]) == {(k,): keys.count(k) for k in set(keys)}
    a, b = ["a\0", "a", "a\0", "a"], ["b", "\0b", "b", "\0b"]
    assert groups(conn, [a, b]) == {("a\0", "b"): 2, ("a", "\0b"): 2}


def test_several_ranks_match_one_rank(tmp_path):
    """At several ranks (strings placed across ranks by offsets; groupby's records with NULs
    escaped): groupby, its strings keys gathered, tohdf and readhdf give what one rank gives."""
    if MPIRUN is None or not mpi_build():
        pytest.skip("no mpirun, or h5arkd built without MPI")
    rng = np.random.default_rng(3)
    pool = ["", "\0", "a", "a\0", "a\0\0", "\0a", "é\0", "b"]
    keys = [pool[i] for i in rng.integers(0, len(pool), 301)]
    other = [pool[i] for i in rng.integers(0, 3, 301)]
    multi, single = Daemon(ranks=3, locales=2), Daemon(locales=6)
    try:
        out = []
        for d in (multi, single):
            c = Conn(d)
            assert groups(c, [keys]) == {(k,): keys.count(k) for k in set(keys)}
            both = groups(c, [keys, other])
            assert sum(both.values()) == len(keys)
            assert set(both) == set(zip(keys, other))
            desc = put(c, keys)
            c.ok("tohdf", names=[desc["name"]], datasets=["s"], path="n.h5")
            files = [d.data_dir / locale_file("n.h5", i) for i in range(6)]
            check_arkouda_layout(files, "s", keys)
            hdr, _ = c.ok("readhdf", paths=["n_LOCALE*"], datasets=["s"], start=7, stop=250)
            assert get(c, hdr["result"]["objects"]["s"]["name"]) == keys[7:250]
            out.append(both)
        assert out[0] == out[1]
    finally:
        multi.cleanup()
        single.cleanup()


def test_gateway_data_sends_nuls(tmp_path):
    """/data/ of a Strings dataset and of a plain h5py fixed-string dataset: JSON \\u0000."""
    port = free_port()
    d = Daemon(locales=2, extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    try:
        c = Conn(d)
        seg, val = encode_strings(WORDS)
        with h5py.File(d.data_dir / "nul.h5", "w") as f:
            g = f.create_group("s")
            g["values"] = np.frombuffer(val, np.uint8)
            g["segments"] = np.frombuffer(seg, "<i8")
            g.attrs["ObjType"] = np.int64(2)
            f["fixed"] = np.array([b"Z\0Y", b"ab\0\0", b"\0\0\0Q"], "S4")
        base = f"http://127.0.0.1:{port}"

        def data(path):
            url = f"{base}/data/?file=nul.h5&path={path}"
            with urllib.request.urlopen(url, timeout=30 * TOOL_SLOWDOWN) as r:
                body = r.read()
            assert b"\\u0000" in body
            return json.loads(body)
        assert data("/s") == WORDS
        assert data("/fixed") == ["Z\0Y", "ab", "\0\0\0Q"]
        c.ok("ping")
    finally:
        d.cleanup()


def test_python_client_round_trip(daemon):
    import h5ark
    with h5ark.connect(daemon.endpoint) as c:
        s = c.array(WORDS)
        assert s.to_list() == WORDS
        assert list(s.to_ndarray()) == WORDS
        assert s.to_list(2, 5) == WORDS[2:5]
        path = f"{unique('nulpy')}.h5"
        c.to_hdf({"w": s}, path, file_type="single")
        assert c.read_hdf(path)["w"].to_list() == WORDS
        with pytest.raises(h5ark.H5arkError) as e:
            c.to_hdf({"w": s}, f"{unique('nulpy')}.h5", file_type="single",
                     strings_segments=False)
        assert "NUL" in str(e.value)
        c.delete(s)
