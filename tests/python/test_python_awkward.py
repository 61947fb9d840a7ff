"""The Python client's awkward arrays against a real daemon: Awkward handles from form,
length and buffers, round trips (get, to_hdf / read_hdf in awkward 2's and awkward0's
layouts) of lists of lists, records, options and strings, the files checked with h5py,
lshdf entries, and refusals as clear exceptions. awkward is not installed here: the
ak.Array path runs against a small stand-in module (FakeAwkward) with the signatures of
ak.to_buffers and ak.from_buffers, put in sys.modules for the test."""
import json
import shutil
import sys
import types

import h5py
import numpy as np
import pytest

from conftest import SHARED_FIXTURES
from test_awkward import CASES, to_list

import h5ark

ROUND_TRIP = ["listoffset_i32", "record", "tuple", "indexed_option", "bytemasked",
              "strings", "union", "regular"]


def values(handle):
    """The array's rows, read back from its buffers as ak.from_buffers would."""
    form = handle.form_dict()
    return to_list(form, handle.length, {k: v.tobytes() for k, v in handle.buffers().items()})


def jagged(n_lists=5):
    """A ListOffsetArray of float64: list i holds i values."""
    counts = np.arange(n_lists)
    offsets = np.zeros(n_lists + 1, "<i8")
    np.cumsum(counts, out=offsets[1:])
    form = {"class": "ListOffsetArray", "offsets": "i64", "form_key": "node0",
            "content": {"class": "NumpyArray", "primitive": "float64", "form_key": "node1"}}
    data = np.arange(offsets[-1], dtype="<f8") / 2
    return form, n_lists, {"node0-offsets": offsets, "node1-data": data}


@pytest.mark.parametrize("case", ROUND_TRIP)
def test_put_get(client, case):
    form, length, bufs, expected = CASES[case]
    a = client.put_awkward(form, length, bufs)
    assert isinstance(a, h5ark.Awkward) and a.objtype == "awkward"
    assert a.length == len(a) == length and json.loads(a.form) == form
    got = a.buffers()
    assert list(got) == list(bufs)
    for name, buf in bufs.items():
        assert all(isinstance(v, np.ndarray) for v in got.values())
        assert got[name].tobytes()[:buf.nbytes] == buf.tobytes()
    assert values(a) == expected


def test_module_level_and_name(client):
    form, length, bufs = jagged()
    a = h5ark.awkward_array(json.dumps(form), length, bufs, name="jag")
    assert a.name == "jag" and client.info(["jag"])[0].form == a.form
    assert values(a) == [[float(v) / 2 for v in range(i * (i - 1) // 2, i * (i + 1) // 2)]
                         for i in range(5)]
    assert a.buffers()["node1-data"].dtype == np.float64


@pytest.mark.parametrize("case", ROUND_TRIP)
def test_hdf_awkward2(client, daemon, case):
    form, length, bufs, expected = CASES[case]
    a = client.put_awkward(form, length, bufs)
    res = a.to_hdf(f"ak2_{case}.h5", dataset="arr")
    assert res["files"] == [f"ak2_{case}.h5"]
    with h5py.File(daemon.data_dir / f"ak2_{case}.h5", "r") as f:
        g = f["arr"]
        assert json.loads(g.attrs["form"]) == form and int(g.attrs["length"]) == length
        assert sorted(g) == sorted(bufs)
    back = client.read_hdf(f"ak2_{case}.h5")["arr"]
    assert isinstance(back, h5ark.Awkward) and back.length == length
    assert values(back) == expected
    entry = [e for e in client.ls(f"ak2_{case}.h5") if e["name"] in ("arr", "/arr")][0]
    assert entry["objtype"] == "awkward" and entry["length"] == length


def test_hdf_written_by_h5py(client, daemon):
    """awkward's documented recipe: ak.to_buffers output stored with h5py."""
    form, length, bufs = jagged(7)
    with h5py.File(daemon.data_dir / "h5py_ak.h5", "w") as f:
        g = f.create_group("jag")
        g.attrs["form"] = json.dumps(form)
        g.attrs["length"] = length
        for name, buf in bufs.items():
            g.create_dataset(name, data=buf, compression="gzip")
    a = client.read_hdf("h5py_ak.h5")["jag"]
    got = a.buffers()
    for name, buf in bufs.items():
        np.testing.assert_array_equal(got[name], buf)


def test_read_hdf_byteorder_and_complex(client, daemon):
    """read_hdf's byteorder: buffers stored big-endian under little-endian types (as
    ak.to_buffers(byteorder=">") with h5py) read as ak.from_buffers(byteorder=">") reads
    them; h5py's complex buffers read as they are; a bad byteorder is an H5arkError.
    Then the shared fixture's `bigendian` group, when ../shared is there."""
    form, length, bufs = jagged(6)
    cform = {"class": "NumpyArray", "primitive": "complex64", "form_key": "c0"}
    cplx = np.array([1 + 2j, -0.5j, 3], "<c8")
    with h5py.File(daemon.data_dir / "order.h5", "w") as f:
        g = f.create_group("jag")
        g.attrs["form"] = json.dumps(form)
        g.attrs["length"] = length
        for name, buf in bufs.items():  # the bytes big-endian, the type little-endian
            g.create_dataset(name, data=buf.byteswap())
        g = f.create_group("cplx")
        g.attrs["form"] = json.dumps(cform)
        g.attrs["length"] = 3
        g["c0-data"] = cplx
    a = client.read_hdf("order.h5", datasets="jag", byteorder=">")["jag"]
    for name, buf in bufs.items():
        np.testing.assert_array_equal(a.buffers()[name], buf)
    c = client.read_hdf("order.h5", datasets="cplx")["cplx"]
    assert c.buffers()["c0-data"].tobytes() == cplx.tobytes()
    with pytest.raises(h5ark.H5arkError) as e:
        client.read_hdf("order.h5", datasets="jag")  # the swapped offsets are out of range
    assert e.value.code == "schema_error"
    with pytest.raises(h5ark.H5arkError) as e:
        client.read_hdf("order.h5", datasets="jag", byteorder="big")
    assert e.value.code == "bad_request" and "byteorder" in str(e.value)
    fixture = SHARED_FIXTURES.parent / "awkward2"
    if not fixture.is_dir():
        pytest.skip(f"awkward 2 fixtures not found at {fixture} (../shared beside the repository)")
    shutil.copy(fixture / "awkward2.hdf5", daemon.data_dir / "fx2.h5")
    b = client.read_hdf("fx2.h5", datasets="bigendian", byteorder=">")["bigendian"]
    assert values(b) == json.loads((fixture / "expected" / "bigendian.json").read_text())


@pytest.mark.parametrize("case", ["listoffset_i32", "record", "bytemasked", "strings"])
@pytest.mark.parametrize("policy", ["default", "none"])
def test_hdf_awkward0(client, daemon, case, policy):
    form, length, bufs, expected = CASES[case]
    a = client.put_awkward(form, length, bufs)
    path = f"ak0_{case}_{policy}.h5"
    a.to_hdf(path, dataset="arr", format="awkward0", compression=policy)
    with h5py.File(daemon.data_dir / path, "r") as f:
        schema = json.loads(f["arr/schema.json"][()].tobytes())
        assert "awkward0" in schema and "schema" in schema
    entry = [e for e in client.ls(path) if e["name"] in ("arr", "/arr")][0]
    assert entry["objtype"] == "awkward0" and entry["length"] == length
    back = client.read_hdf(path)["arr"]
    assert isinstance(back, h5ark.Awkward) and values(back) == expected


def test_client_to_hdf_format(client, daemon):
    form, length, bufs, expected = CASES["record"]
    a = client.put_awkward(form, length, bufs)
    client.to_hdf({"r": a}, "fmt.h5", file_type=None, format="awkward")
    assert values(client.read_hdf("fmt.h5")["r"]) == expected
    with pytest.raises(h5ark.BadRequestError, match="single"):
        a.to_hdf("dist.h5", file_type="distribute")


@pytest.mark.parametrize("fmt", ["awkward", "awkward0"])
def test_append_update(client, fmt):
    rec, strs = CASES["record"], CASES["strings"]
    a, b = client.put_awkward(*rec[:3]), client.put_awkward(*strs[:3])
    a.to_hdf(f"au_{fmt}.h5", dataset="x", format=fmt)
    b.to_hdf(f"au_{fmt}.h5", dataset="y", format=fmt, mode="append")
    b.update_hdf(f"au_{fmt}.h5", dataset="x", format=fmt)
    got = client.read_hdf(f"au_{fmt}.h5")
    assert values(got["x"]) == values(got["y"]) == strs[3]


def test_refusals(client):
    form, length, bufs = jagged()
    with pytest.raises(h5ark.BadRequestError, match="JSON"):
        client.put_awkward("{\"class\": ", length, bufs)
    with pytest.raises(h5ark.BadRequestError, match="unknown class"):
        client.put_awkward({"class": "PythonObject", "form_key": "n0"}, 1, {})
    short = dict(bufs, **{"node1-data": bufs["node1-data"][:3]})
    with pytest.raises(h5ark.BadRequestError):
        client.put_awkward(form, length, short)
    with pytest.raises(h5ark.BadRequestError):
        client.put_awkward(form, length, {"node0-offsets": bufs["node0-offsets"]})
    with pytest.raises(TypeError, match="length"):
        client.put_awkward(form, -1, bufs)
    with pytest.raises(TypeError, match="form"):
        client.put_awkward(42, length, bufs)
    with pytest.raises(TypeError, match="ak.Array"):
        client.put_awkward([[1.0], []])
    assert client.ping()


def test_no_awkward(client, monkeypatch):
    """Without awkward, to_awkward says what is missing and what to use instead."""
    monkeypatch.setitem(sys.modules, "awkward", None)  # import awkward then fails
    form, length, bufs = jagged()
    a = client.put_awkward(form, length, bufs)
    with pytest.raises(ImportError, match="awkward package.*buffers"):
        a.to_awkward()


class FakeArray:
    """Stands in for ak.Array: its form, length and buffers."""

    def __init__(self, form, length, buffers):
        self.form, self.length, self.buffers = form, length, buffers


@pytest.fixture
def fake_awkward(monkeypatch):
    """A module with ak.to_buffers(array) -> (form, length, container) and
    ak.from_buffers(form, length, container) as awkward 2 has them."""
    module = types.ModuleType("awkward")
    module.Array = FakeArray
    module.Record = type("Record", (), {})

    def to_buffers(array, container=None, buffer_key="{form_key}-{attribute}",
                   form_key="node{id}", **kwargs):
        return json.dumps(array.form), array.length, dict(array.buffers)

    def from_buffers(form, length, container, buffer_key="{form_key}-{attribute}",
                     **kwargs):
        return FakeArray(json.loads(form) if isinstance(form, str) else form, length,
                         dict(container))

    module.to_buffers, module.from_buffers = to_buffers, from_buffers
    monkeypatch.setitem(sys.modules, "awkward", module)
    return module


def test_ak_array_in_and_out(client, fake_awkward):
    form, length, bufs, expected = CASES["record"]
    for a in (client.put_awkward(FakeArray(form, length, bufs)),
              client.array(FakeArray(form, length, bufs)),
              h5ark.awkward_array(FakeArray(form, length, bufs), name="rec")):
        assert isinstance(a, h5ark.Awkward) and values(a) == expected
        out = a.to_awkward()
        assert isinstance(out, FakeArray) and out.form == form and out.length == length
        assert sorted(out.buffers) == sorted(bufs)
