"""Writing ExeTera dataframes (docs/FORMAT.md, "ExeTera dataframes"; protocol/PROTOCOL.md,
tohdf format exetera, writepart, complete): fields written with the attributes, attribute
types, dataset types, maxshape, chunks and `completed` marks ExeTera writes, compared
attribute by attribute with a file ExeTera itself made (found beside the Arkouda
fixtures, as test_exetera.py finds it; skipped when absent); round trips through readhdf
and h5py; the modes; fields written in parts and completed; the Python client's calls;
bad requests refused with the daemon still serving."""
import json

import h5py
import numpy as np
import pytest

from wire import unique


# ---- describing what is in a file, as HDF5 types ------------------------------------------

def h5type(tid):
    """An HDF5 type in words precise enough to tell any two types ExeTera writes apart."""
    cls = tid.get_class()
    if cls == h5py.h5t.STRING:
        return ("string", "vlen" if tid.is_variable_str() else tid.get_size(), tid.get_cset(),
                tid.get_strpad() if not tid.is_variable_str() else None)
    if cls == h5py.h5t.ENUM:
        members = {tid.get_member_name(i): tid.get_member_value(i) for i in range(tid.get_nmembers())}
        return ("enum", h5type(tid.get_super()), tuple(sorted(members.items())))
    if cls == h5py.h5t.INTEGER:
        return ("int", tid.get_size(), tid.get_sign(), tid.get_order())
    if cls == h5py.h5t.FLOAT:
        return ("float", tid.get_size(), tid.get_order())
    return ("class", cls)


def attr_types(obj):
    out = {}
    for name in obj.attrs:
        a = obj.attrs.get_id(name)
        out[name] = (h5type(a.get_type()), a.shape)
    return out


def describe(f, path):
    """A field: its group's attributes (types, and values but for the timestamp), and for
    each dataset its type, maxshape, chunks, fill value and attributes."""
    g = f[path]
    out = {"attrs": attr_types(g),
           "values": {k: v for k, v in g.attrs.items() if k != "timestamp"}}
    for name, d in g.items():
        out[name] = {"type": h5type(d.id.get_type()), "shape_rank": len(d.shape),
                     "maxshape": d.maxshape, "chunks": d.chunks, "compression": d.compression,
                     "fillvalue": bytes(np.asarray(d.fillvalue).tobytes()) if d.dtype.kind != "O" else None,
                     "attrs": attr_types(d),
                     "completed": {k: bool(v) for k, v in d.attrs.items()}}
    return out


def ok_alive(conn):
    conn.ok("ping")


# ---- objects -------------------------------------------------------------------------------

def categorical(conn, categories, codes):
    cats = conn.put_strings(categories)
    hdr, _ = conn.ok("categorical", codes=conn.put(np.asarray(codes, "<i8")), categories=cats)
    return hdr["result"]["object"]["name"]


def tohdf(conn, path, names, **kw):
    hdr, _ = conn.ok("tohdf", names=names, path=path, format="exetera", **kw)
    return hdr


def read_field(conn, path, field, fetch):
    """readhdf of one field: (descriptor, fetch(object name), warnings); the object is
    deleted afterwards."""
    hdr, _ = conn.ok("readhdf", paths=[path], datasets=[field])
    desc = hdr["result"]["objects"][field]
    got = fetch(desc["name"])
    conn.ok("delete", names=[desc["name"]])
    return desc, got, hdr.get("warnings", [])


def readback(conn, path, field):
    """(descriptor, {buffer: bytes}, warnings)."""
    return read_field(conn, path, field, lambda name: conn.buffers(name)[1])


def read_strings(conn, path, field):
    return read_field(conn, path, field, conn.get_strings)


def read_array(conn, path, field):
    return read_field(conn, path, field, conn.get)


# ---- against ExeTera's own file -------------------------------------------------------------

def fixture_objects(conn, src, field):
    """The fixture's field as an h5ark object (and the fieldtype to ask for, if needed)."""
    g = src[field]
    ft = g.attrs["fieldtype"]
    if ft == "indexedstring":
        idx, raw = g["index"][:], g["values"][:].tobytes()
        strs = [raw[a:b].decode() for a, b in zip(idx, idx[1:])]
        return conn.put_strings(strs), None
    if ft.startswith("fixedstring"):
        strs = [v.split(b"\0")[0].decode() for v in g["values"][:]]
        return conn.put_strings(strs), ft
    if ft.startswith("categorical"):
        names = [n.decode() for n in g["key_names"][:]]
        keys = [int(k) for k in g["key_values"][:]]
        order = sorted(range(len(keys)), key=lambda i: keys[i])
        cats = [names[i] for i in order]
        index = {keys[i]: j for j, i in enumerate(order)}
        return categorical(conn, cats, [index[int(v)] for v in g["values"][:]]), ft
    vals = g["values"][:]
    if ft == "timestamp":
        return conn.put(vals.astype("<f8")), ft
    return conn.put(vals), None


SAME_AS_FIXTURE = ["small_df/a", "small_df/b", "small_df/c", "people/age", "people/big",
                   "people/flag", "people/height", "people/i16", "people/small", "people/u64",
                   "people/score", "people/ts", "people/status", "people/all_empty",
                   "people/empty_str", "people/name_parts"]


def test_layout_and_data_as_exetera_writes(conn, exetera_fixtures):
    """Each field written by h5ark from the values of ExeTera's own field has the same
    attributes (names, HDF5 types, values), dataset types, maxshape, chunks, fill values,
    `completed` marks and data."""
    layout = json.loads((exetera_fixtures / "layout_session.json").read_text())
    out = f"{unique('exw')}.hdf5"
    with h5py.File(exetera_fixtures / "session.hdf5", "r") as src:
        for field in SAME_AS_FIXTURE:
            df, name = field.split("/")
            obj, ft = fixture_objects(conn, src, field)
            kw = {"fieldtype": ft} if ft else {}
            tohdf(conn, out, [obj], datasets=[name], group=df,
                  mode="append" if field != SAME_AS_FIXTURE[0] else "truncate", **kw)
        with h5py.File(conn.dir / out, "r") as got:
            assert list(got.attrs) == [] and list(layout["/"]["attrs"]) == []
            for field in SAME_AS_FIXTURE:
                want, have = describe(src, field), describe(got, field)
                assert have == want, (field, have, want)
                for ds in src[field]:
                    a, b = src[f"{field}/{ds}"][:], got[f"{field}/{ds}"][:]
                    assert a.dtype == b.dtype, (field, ds, a, b)
                    if a.dtype.kind == "O":
                        assert a.tolist() == b.tolist(), (field, ds, a, b)
                    else:
                        assert a.tobytes() == b.tobytes(), (field, ds, a, b)
                # the JSON layout ExeTera's run recorded agrees on the attribute names
                assert set(layout[field]["attrs"]) == set(got[field].attrs), field
                for ds in src[field]:
                    entry = layout[f"{field}/{ds}"]
                    assert entry["chunks"] == list(got[f"{field}/{ds}"].chunks), (field, ds)
                    assert entry["maxshape"] == [None]
                    assert set(entry["attrs"]) == set(got[f"{field}/{ds}"].attrs), (field, ds)


def test_fixed_string_layout_as_exetera_writes(conn, exetera_fixtures):
    strs = ["AB", "ABCD", "", "é", "Z"]
    out = f"{unique('exw')}.hdf5"
    tohdf(conn, out, [conn.put_strings(strs)], datasets=["code"], group="people",
          fieldtype="fixedstring,4")
    with h5py.File(exetera_fixtures / "session.hdf5", "r") as src, \
            h5py.File(conn.dir / out, "r") as got:
        assert describe(got, "people/code") == describe(src, "people/code")
        assert got["people/code/values"][:].tolist() == [s.encode() for s in strs]
    desc, back, warnings = read_strings(conn, out, "people/code")
    assert back == strs and desc["fieldtype"] == "fixedstring,4" and desc["completed"] is True
    assert warnings == []


def test_categorical_int16_layout(conn, exetera_fixtures):
    """A categorical asked for as categorical,int16 has the layout of ExeTera's int16
    categorical (whose keys are its own: 0, 1, 2, 100)."""
    out = f"{unique('exw')}.hdf5"
    tohdf(conn, out, [categorical(conn, ["", "a", "é", "big"], [3, 2, 1, 0, 3])],
          datasets=["status16"], group="people", fieldtype="categorical,int16")
    with h5py.File(exetera_fixtures / "session.hdf5", "r") as src, \
            h5py.File(conn.dir / out, "r") as got:
        want, have = describe(src, "people/status16"), describe(got, "people/status16")
        assert have == want
        assert got["people/status16/values"][:].tolist() == [3, 2, 1, 0, 3]
        assert got["people/status16/key_values"][:].tolist() == [0, 1, 2, 3]


def test_parts_as_exetera_writes_them(conn, exetera_fixtures):
    """ExeTera's name_parts field was written in three parts and completed: the same parts
    through writepart and complete give the same datasets, marks and layout."""
    out = f"{unique('exw')}.hdf5"
    for part in (["a", "bb", ""], ["dddd", "é"], ["ff", "ggggggg"]):
        conn.ok("writepart", path=out, field="people/name_parts", name=conn.put_strings(part))
    with h5py.File(conn.dir / out, "r") as got:
        assert "completed" not in got["people/name_parts/index"].attrs
        assert "completed" not in got["people/name_parts/values"].attrs
    hdr, _ = conn.ok("complete", path=out, field="people/name_parts")
    assert hdr["result"]["rows"] == 7
    with h5py.File(exetera_fixtures / "session.hdf5", "r") as src, \
            h5py.File(conn.dir / out, "r") as got:
        assert describe(got, "people/name_parts") == describe(src, "people/name_parts")
        for ds in ("index", "values"):
            assert got[f"people/name_parts/{ds}"][:].tolist() == \
                src[f"people/name_parts/{ds}"][:].tolist()


def test_incomplete_numeric_as_exetera_leaves_it(conn, exetera_fixtures):
    out = f"{unique('exw')}.hdf5"
    conn.ok("writepart", path=out, field="people/incomplete",
            name=conn.put(np.array([1.5, 2.5], "<f8")))
    conn.ok("writepart", path=out, field="people/incomplete",
            name=conn.put(np.array([np.nan], "<f8")))
    with h5py.File(exetera_fixtures / "session.hdf5", "r") as src, \
            h5py.File(conn.dir / out, "r") as got:
        assert describe(got, "people/incomplete") == describe(src, "people/incomplete")
        assert got["people/incomplete/values"].shape == (3,)


# ---- round trips ------------------------------------------------------------------------------

def test_dataframe_round_trip(conn):
    n = 1000
    rng = np.random.default_rng(5)
    ints = rng.integers(-10**12, 10**12, n).astype("<i8")
    floats = rng.standard_normal(n).astype("<f4")
    strs = [("x" * (i % 7)) + "é" * (i % 3) for i in range(n)]
    cat = categorical(conn, ["lo", "mid", "hi"], (np.arange(n) % 3).tolist())
    cols = [conn.put(ints), conn.put(floats), conn.put_strings(strs), cat]
    hdr, _ = conn.ok("dataframe", columns=cols, column_names=["i", "f", "s", "c"])
    dfname = hdr["result"]["object"]["name"]
    out = f"{unique('exw')}/frame.hdf5"
    hdr = tohdf(conn, out, [dfname])
    assert hdr["result"]["files"] == [out]
    with h5py.File(conn.dir / out, "r") as f:
        assert sorted(f["df"]) == ["c", "f", "i", "s"]
        assert f["df/i"].attrs["fieldtype"] == "numeric,int64"
        assert f["df/f"].attrs["fieldtype"] == "numeric,float32"
        assert f["df/s"].attrs["fieldtype"] == "indexedstring"
        assert f["df/c"].attrs["fieldtype"] == "categorical,int8"
        assert f["df/i/values"][:].tolist() == ints.tolist()
        idx, raw = f["df/s/index"][:], f["df/s/values"][:].tobytes()
        assert [raw[a:b].decode() for a, b in zip(idx, idx[1:])] == strs
        names = [x.decode() for x in f["df/c/key_names"][:]]
        assert names == ["lo", "mid", "hi"]
        assert f["df/c/values"][:].tolist() == (np.arange(n) % 3).tolist()
    hdr, _ = conn.ok("readhdf", paths=[out], datasets=["df"])
    desc = hdr["result"]["objects"]["df"]
    assert desc["objtype"] == "dataframe" and desc["size"] == n
    assert hdr.get("warnings", []) == []
    comps = desc["components"]
    assert conn.get(comps["i"]["name"]).tolist() == ints.tolist()
    assert conn.get(comps["f"]["name"]).tolist() == floats.tolist()
    assert conn.get_strings(comps["s"]["name"]) == strs
    d, bufs = conn.buffers(comps["c"]["components"]["categories"]["name"])
    assert bufs["values"].split(b"\0")[:-1] == [b"lo", b"mid", b"hi", b"N/A"]
    codes = conn.get(comps["c"]["components"]["codes"]["name"])
    assert codes.tolist() == (np.arange(n) % 3).tolist()


def test_timestamps(conn):
    out = f"{unique('exw')}.hdf5"
    ns = np.array([0, 1_589_266_800_123_456_000, -2_208_988_800_000_000_000, 1], "<i8")
    stamped = conn.put(ns, tag="datetime64[ns]")
    secs = conn.put(np.array([1.5, -3.25], "<f8"))
    tohdf(conn, out, [stamped, secs], datasets=["t", "s"], group="when")
    tohdf(conn, out, [secs], datasets=["x"], group="when", mode="append", fieldtype="timestamp")
    with h5py.File(conn.dir / out, "r") as f:
        assert f["when/t"].attrs["fieldtype"] == "timestamp"
        assert "nformat" not in f["when/t"].attrs
        assert f["when/t/values"].dtype == np.float64
        assert np.allclose(f["when/t/values"][:], ns / 1e9, rtol=0, atol=1e-6)
        assert f["when/s"].attrs["fieldtype"] == "numeric,float64"
        assert f["when/x"].attrs["fieldtype"] == "timestamp"
        assert f["when/x/values"][:].tolist() == [1.5, -3.25]
    desc, got, _ = read_array(conn, out, "when/x")
    assert desc["fieldtype"] == "timestamp" and got.tolist() == [1.5, -3.25]


def test_modes(conn):
    out = f"{unique('exw')}.hdf5"
    a, b = conn.put(np.arange(5, dtype="<i8")), conn.put(np.arange(3, dtype="<i4"))
    tohdf(conn, out, [a], datasets=["a"])
    err = conn.fail("tohdf", names=[a], datasets=["a"], path=out, format="exetera",
                    mode="append")
    assert err["code"] == "already_exists" and "df/a" in err["message"], err
    tohdf(conn, out, [b], datasets=["b"], mode="append")
    err = conn.fail("tohdf", names=[b], datasets=["zz"], path=out, format="exetera",
                    mode="update")
    assert err["code"] == "not_found" and "zz" in err["message"], err
    tohdf(conn, out, [b], datasets=["a"], mode="update")
    with h5py.File(conn.dir / out, "r") as f:
        assert sorted(f["df"]) == ["a", "b"]
        assert f["df/a"].attrs["fieldtype"] == "numeric,int32"
        assert f["df/a/values"][:].tolist() == [0, 1, 2]
        assert bool(f["df/a/values"].attrs["completed"])
    hdr = tohdf(conn, out, [a], datasets=["only"])
    assert any("overwrote" in w for w in hdr.get("warnings", [])), hdr
    with h5py.File(conn.dir / out, "r") as f:
        assert list(f["df"]) == ["only"]
    err = conn.fail("tohdf", names=[a], path=f"{unique('none')}.hdf5", format="exetera",
                    mode="update")
    assert err["code"] == "not_found", err
    # an Arkouda file gains a dataframe beside its objects
    ark = f"{unique('ark')}.h5"
    conn.ok("tohdf", names=[a], datasets=["arr"], path=ark, file_type="single")
    tohdf(conn, ark, [b], datasets=["b"], mode="append", group="frame")
    with h5py.File(conn.dir / ark, "r") as f:
        assert sorted(f) == ["arr", "frame"]
    err = conn.fail("tohdf", names=[b], datasets=["c"], path=ark, format="exetera",
                    mode="append", group="arr")
    assert err["code"] == "type_error", err
    ok_alive(conn)


# ---- parts --------------------------------------------------------------------------------------

def test_parts_numeric_strings_categorical(conn):
    out = f"{unique('exw')}/parts.hdf5"
    want_n, want_s, want_c = [], [], []
    for k in range(4):
        vals = np.arange(k * 10, k * 10 + k + 1, dtype="<i8")
        strs = [f"s{k}-{i}" * (i + 1) for i in range(k + 2)]
        labels = ["red", "green"][:1 + k % 2]
        codes = [(i + k) % len(labels) for i in range(3)]
        hdr, _ = conn.ok("writepart", path=out, field="df/n", name=conn.put(vals))
        want_n += vals.tolist()
        assert hdr["result"]["rows"] == len(want_n)
        conn.ok("writepart", path=out, field="df/s", name=conn.put_strings(strs))
        want_s += strs
        conn.ok("writepart", path=out, field="df/c", name=categorical(conn, labels, codes))
        want_c += [labels[c] for c in codes]
    for fld in ("n", "s", "c"):
        with h5py.File(conn.dir / out, "r") as f:
            for ds in f[f"df/{fld}"].values():
                assert "completed" not in ds.attrs, (fld, ds.name)
    desc, got, warnings = read_array(conn, out, "df/n")
    assert got.tolist() == want_n and desc["completed"] is None
    hdr, _ = conn.ok("lshdf", path=out, recursive=True)
    entries = {e["path"].lstrip("/"): e for e in hdr["result"]["entries"]}
    assert entries["df/n"]["kind"] == "field" and entries["df/n"]["completed"] is None
    assert entries["df/s"]["length"] == len(want_s)
    assert any("df/n" in w for w in warnings), warnings
    for fld in ("n", "s", "c"):
        conn.ok("complete", path=out, field=f"df/{fld}")
    desc, got, warnings = read_strings(conn, out, "df/s")
    assert got == want_s and desc["completed"] is True and warnings == []
    hdr, _ = conn.ok("lshdf", path=out, recursive=True)
    entries = {e["path"].lstrip("/"): e for e in hdr["result"]["entries"]}
    assert all(entries[f"df/{k}"]["completed"] is True for k in "nsc"), entries
    hdr, _ = conn.ok("readhdf", paths=[out], datasets=["df/c"])
    desc = hdr["result"]["objects"]["df/c"]
    cats = conn.get_strings(desc["components"]["categories"]["name"])
    codes = conn.get(desc["components"]["codes"]["name"])
    assert [cats[c] for c in codes] == want_c
    # another part clears the mark again
    conn.ok("writepart", path=out, field="df/n", name=conn.put(np.array([7], "<i8")))
    with h5py.File(conn.dir / out, "r") as f:
        assert "completed" not in f["df/n/values"].attrs
        assert f["df/n/values"].maxshape == (None,)
        assert f["df/n/values"][:].tolist() == want_n + [7]


def test_part_into_existing_fixed_and_indexed(conn):
    out = f"{unique('exw')}.hdf5"
    tohdf(conn, out, [conn.put_strings(["ab"])], datasets=["f"], fieldtype="fixedstring,3")
    conn.ok("writepart", path=out, field="df/f", name=conn.put_strings(["xyz", ""]))
    with h5py.File(conn.dir / out, "r") as f:
        assert f["df/f/values"][:].tolist() == [b"ab", b"xyz", b""]
    err = conn.fail("writepart", path=out, field="df/f", name=conn.put_strings(["long"]))
    assert err["code"] == "type_error" and "fixedstring,3" in err["message"], err
    with h5py.File(conn.dir / out, "r") as f:
        assert f["df/f/values"].shape == (3,)


def test_empty_parts(conn):
    out = f"{unique('exw')}.hdf5"
    conn.ok("writepart", path=out, field="df/s", name=conn.put_strings([]))
    conn.ok("writepart", path=out, field="df/s", name=conn.put_strings(["", "a"]))
    conn.ok("writepart", path=out, field="df/s", name=conn.put_strings([]))
    hdr, _ = conn.ok("complete", path=out, field="df/s")
    assert hdr["result"]["rows"] == 2
    with h5py.File(conn.dir / out, "r") as f:
        assert f["df/s/index"][:].tolist() == [0, 0, 1]
    desc, got, _ = read_strings(conn, out, "df/s")
    assert got == ["", "a"]


# ---- bad requests ------------------------------------------------------------------------------

def test_bad_requests(conn):
    out = f"{unique('exw')}.hdf5"
    ints = conn.put(np.arange(4, dtype="<i8"))
    strs = conn.put_strings(["a", "b", "c", "d"])
    conn.ok("writepart", path=out, field="df/n", name=ints)
    hdr, _ = conn.ok("segarray", segments=conn.put(np.array([0, 2], "<i8")),
                     values=conn.put(np.arange(4, dtype="<i8")))
    seg = hdr["result"]["object"]["name"]
    cases = [
        # wrong types, missing objects
        (dict(cmd="writepart", path=out, field="df/x", name=seg), "type_error"),
        (dict(cmd="writepart", path=out, field="df/x", name="no-such-object"), "not_found"),
        (dict(cmd="writepart", path=out, field="df/x", name=5), "bad_request"),
        (dict(cmd="writepart", path=out, field="df/x"), "bad_request"),
        (dict(cmd="tohdf", names=[seg], path=out, format="exetera"), "type_error"),
        # a part whose type differs from the field's
        (dict(cmd="writepart", path=out, field="df/n", name=strs), "type_error"),
        (dict(cmd="writepart", path=out, field="df/n",
              name=conn.put(np.arange(2, dtype="<f8"))), "type_error"),
        (dict(cmd="writepart", path=out, field="df/n", name=ints, fieldtype="numeric,int32"),
         "type_error"),
        # field names
        *[(dict(cmd="writepart", path=out, field=f, name=ints), "bad_request")
          for f in ("n", "df/", "/n", "a/b/c", "df/.", "./n", "", "df/a\nb", "x" * 1200 + "/n")],
        (dict(cmd="complete", path=out, field="n"), "bad_request"),
        (dict(cmd="tohdf", names=[ints], path=out, format="exetera", group="a/b"), "bad_request"),
        (dict(cmd="tohdf", names=[ints], datasets=["a/b"], path=out, format="exetera"),
         "bad_request"),
        # hostile paths
        *[(dict(cmd="writepart", path=p, field="df/n", name=ints), "forbidden")
          for p in ("/etc/x.hdf5", "../x.hdf5", "a/../../x.hdf5")],
        (dict(cmd="complete", path="/etc/passwd", field="df/n"), "forbidden"),
        (dict(cmd="tohdf", names=[ints], path="../x.hdf5", format="exetera"), "forbidden"),
        # malformed fieldtypes
        *[(dict(cmd="writepart", path=out, field="df/q", name=ints, fieldtype=ft), "bad_request")
          for ft in ("", "numeric", "numeric,int", "numeric,str", "fixedstring,0",
                     "fixedstring,-1", "fixedstring,4x", "categorical,float64", "categorical,bool",
                     "text", "timestamp,", "x" * 500, "numeric,int64\x01")],
        (dict(cmd="tohdf", names=[ints], path=out, format="exetera", fieldtype="nope"),
         "bad_request"),
        # a fieldtype the object cannot be
        (dict(cmd="writepart", path=out, field="df/q", name=ints, fieldtype="indexedstring"),
         "type_error"),
        (dict(cmd="writepart", path=out, field="df/q", name=strs, fieldtype="numeric,int64"),
         "type_error"),
        (dict(cmd="writepart", path=out, field="df/q", name=ints, fieldtype="timestamp"),
         "type_error"),
        (dict(cmd="tohdf", names=[strs], path=out, format="exetera", fieldtype="fixedstring,0"),
         "bad_request"),
        # complete: nothing to complete
        (dict(cmd="complete", path=out, field="df/none"), "not_found"),
        (dict(cmd="complete", path=out, field="nodf/n"), "not_found"),
        (dict(cmd="complete", path=f"{unique('missing')}.hdf5", field="df/n"), "not_found"),
        # tohdf options that do not go together
        (dict(cmd="tohdf", names=[ints], path=out, format="exetera", file_type="single"),
         "bad_request"),
        (dict(cmd="tohdf", names=[ints], path=out, format="exetera", compression="gzip"),
         "bad_request"),
        (dict(cmd="tohdf", names=[ints], path=out, format="parquet"), "bad_request"),
        (dict(cmd="tohdf", names=[ints], path=out, group="df"), "bad_request"),
        (dict(cmd="tohdf", names=[ints, ints], datasets=["a", "a"], path=out, format="exetera"),
         "already_exists"),
    ]
    for args, code in cases:
        cmd = args.pop("cmd")
        hdr, _ = conn.raw(cmd, **args)
        assert not hdr["ok"], (cmd, args, hdr)
        assert hdr["error"]["code"] == code, (cmd, args, hdr["error"])
        assert hdr["error"]["message"], hdr
        ok_alive(conn)
    # nothing was changed by any of them
    with h5py.File(conn.dir / out, "r") as f:
        assert list(f) == ["df"] and list(f["df"]) == ["n"]
        assert f["df/n/values"][:].tolist() == [0, 1, 2, 3]
    # not an HDF5 file; a directory; a field that is no field
    (conn.dir / "plain.hdf5").write_bytes(b"not hdf5 at all")
    err = conn.fail("writepart", path="plain.hdf5", field="df/n", name=ints)
    assert err["code"] == "schema_error", err
    assert (conn.dir / "plain.hdf5").read_bytes() == b"not hdf5 at all"
    (conn.dir / "adir.hdf5").mkdir()
    err = conn.fail("writepart", path="adir.hdf5", field="df/n", name=ints)
    assert err["code"] == "bad_request" and "directory" in err["message"], err
    ark = f"{unique('ark')}.h5"
    conn.ok("tohdf", names=[ints], datasets=["arr"], path=ark, file_type="single")
    err = conn.fail("writepart", path=ark, field="arr/n", name=ints)
    assert err["code"] == "type_error", err
    with h5py.File(conn.dir / ark, "w") as f:
        f.create_group("df").create_group("odd")
        fixed = f["df"].create_group("fixed")
        fixed.attrs["fieldtype"] = "numeric,int64"
        fixed.create_dataset("values", data=np.arange(3))
    err = conn.fail("writepart", path=ark, field="df/fixed", name=ints)
    assert err["code"] == "schema_error" and "maxshape" in err["message"], err
    err = conn.fail("writepart", path=ark, field="df/odd", name=ints)
    assert err["code"] == "type_error" and "not an ExeTera field" in err["message"], err
    err = conn.fail("complete", path=ark, field="df/odd")
    assert err["code"] == "type_error", err
    ok_alive(conn)


def test_too_many_categories_for_int8(conn):
    out = f"{unique('exw')}.hdf5"
    cats = [f"c{i}" for i in range(300)]
    err = conn.fail("tohdf", names=[categorical(conn, cats, [0, 299])], path=out,
                    format="exetera", fieldtype="categorical,int16")
    assert err["code"] == "type_error" and "int8" in err["message"], err
    ok_alive(conn)


# ---- the Python client ----------------------------------------------------------------------

def test_python_client_writer(client, daemon):
    import h5ark
    out = f"{unique('exw')}.hdf5"
    with client.exetera_writer(out, "df/n") as w:
        w.write_part(np.arange(5, dtype=np.int64))
        w.write_part(client.array(np.arange(5, 8, dtype=np.int64)))
        assert w.rows == 8
    assert w.rows == 8
    with h5py.File(daemon.data_dir / out, "r") as f:
        assert f["df/n/values"][:].tolist() == list(range(8))
        assert bool(f["df/n/values"].attrs["completed"])
    # an exception in the block leaves the field not completed
    with pytest.raises(RuntimeError):
        with client.exetera_writer(out, "df/s") as w:
            w.write_part(["a", "bc"])
            raise RuntimeError("stop")
    with h5py.File(daemon.data_dir / out, "r") as f:
        assert "completed" not in f["df/s/index"].attrs
        assert f["df/s/index"][:].tolist() == [0, 1, 3]
    assert client.complete(out, "df/s")["rows"] == 2
    # a part of the wrong type is the daemon's type_error
    with pytest.raises(h5ark.ObjectTypeError):
        client.writepart(out, "df/n", client.array(["x"]))
    # whole fields, and the module-level functions
    df = client.DataFrame({"a": client.array(np.array([1.5, 2.5])),
                           "b": client.array(["x", "yy"])})
    res = h5ark.to_exetera(df, out, group="frame", mode="append")
    assert res["files"] == [out]
    got = client.read_hdf(out, datasets=["frame"])["frame"]
    assert got["a"].to_ndarray().tolist() == [1.5, 2.5]
    assert got["b"].to_ndarray().tolist() == ["x", "yy"]
    assert h5ark.writepart(out, "frame/c", client.array([True, False]))["rows"] == 2
    with h5ark.exetera_writer(out, "frame/d", fieldtype="timestamp") as w:
        w.write_part(np.array([0.5]))
    with h5py.File(daemon.data_dir / out, "r") as f:
        assert f["frame/c"].attrs["fieldtype"] == "numeric,bool"
        assert f["frame/d"].attrs["fieldtype"] == "timestamp"
        assert bool(f["frame/d/values"].attrs["completed"])


def test_a_fieldtype_for_each_object(conn):
    """`fieldtypes`: one per name, "" for the object's own; the rules around it."""
    out = f"{unique('exw')}.hdf5"
    s = conn.put_strings(["ab", "c", "def"])
    t = conn.put(np.array([0.5, 1.5, 2.5]))
    n = conn.put(np.arange(3, dtype="<i8"))
    conn.ok("tohdf", names=[s, t, n], datasets=["s", "t", "n"], path=out, format="exetera",
            fieldtypes=["fixedstring,3", "timestamp", ""])
    with h5py.File(conn.dir / out, "r") as f:
        assert f["df/s"].attrs["fieldtype"] == "fixedstring,3"
        assert f["df/s/values"][:].tolist() == [b"ab", b"c", b"def"]
        assert f["df/t"].attrs["fieldtype"] == "timestamp"
        assert f["df/n"].attrs["fieldtype"] == "numeric,int64"
    err = conn.fail("tohdf", names=[s, t], path=out, format="exetera", fieldtypes=["timestamp"])
    assert err["code"] == "bad_request" and "1 entries for 2 names" in err["message"], err
    err = conn.fail("tohdf", names=[s], path=out, format="exetera", fieldtypes=["indexedstring"],
                    fieldtype="indexedstring")
    assert err["code"] == "bad_request" and "not both" in err["message"], err
    err = conn.fail("tohdf", names=[s], path=out, fieldtypes=["indexedstring"])
    assert err["code"] == "bad_request" and "need format exetera" in err["message"], err
    err = conn.fail("tohdf", names=[s, n], path=out, format="exetera",
                    fieldtypes=["", "indexedstring"])
    assert err["code"] == "type_error", err
    with h5py.File(conn.dir / out, "r") as f:   # refused requests left it as it was
        assert sorted(f["df"]) == ["n", "s", "t"]
    ok_alive(conn)


def test_python_fieldtype_mapping(client, daemon):
    out = f"{unique('exw')}.hdf5"
    client.to_exetera({"when": client.array(np.array([1.0, 2.0])),
                       "code": client.array(["x", "yz"])}, out,
                      fieldtype={"when": "timestamp"})
    with h5py.File(daemon.data_dir / out, "r") as f:
        assert f["df/when"].attrs["fieldtype"] == "timestamp"
        assert f["df/code"].attrs["fieldtype"] == "indexedstring"
    with pytest.raises(ValueError, match="nope"):
        client.to_exetera({"when": client.array(np.array([1.0]))}, out,
                          fieldtype={"nope": "timestamp"})


def test_wide_fixed_strings_in_blocks(conn):
    """Fixed strings of 1 MiB each: written a block of rows at a time, every one padded."""
    out = f"{unique('exw')}.hdf5"
    strs = [f"w{i}" * (i + 1) for i in range(20)]
    tohdf(conn, out, [conn.put_strings(strs)], datasets=["wide"], fieldtype="fixedstring,1048576")
    with h5py.File(conn.dir / out, "r") as f:
        d = f["df/wide/values"]
        assert d.dtype == np.dtype("S1048576") and d.shape == (20,)
        assert d.chunks[0] < 20  # h5py's rule keeps chunks near 1 MiB
        assert [d[i] for i in (0, 15, 16, 19)] == [strs[i].encode() for i in (0, 15, 16, 19)]
    desc, got, _ = read_strings(conn, out, "df/wide")
    assert got == strs


def test_parts_sent_at_once_all_land(conn):
    """Parts sent together from several threads to one file (two fields) all land."""
    import threading
    out = f"{unique('exw')}.hdf5"
    parts = [conn.put(np.arange(k * 100, k * 100 + 100, dtype="<i8")) for k in range(8)]
    errors = []

    def send(k):
        hdr, _ = conn.raw("writepart", path=out, field=f"df/f{k % 2}", name=parts[k])
        if not hdr["ok"]:
            errors.append(hdr)

    threads = [threading.Thread(target=send, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with h5py.File(conn.dir / out, "r") as f:
        for j in range(2):
            got = sorted(f[f"df/f{j}/values"][:].tolist())
            want = sorted(v for k in range(j, 8, 2) for v in range(k * 100, k * 100 + 100))
            assert got == want, j
