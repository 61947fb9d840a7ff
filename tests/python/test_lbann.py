"""pack: LBANN's HDF5 data reader (docs/LBANN.md; protocol/PROTOCOL.md, "pack"). The
schemas, samples and values LBANN's own tests assert (../shared/fixtures/lbann, skipped
when absent), full pipelines on files made here with h5py, sample lists of the three
formats, every error LBANN names, and mini-batches by `get` with row ranges and `rows`."""
import json
import shutil

import h5py
import numpy as np
import pytest

from conftest import SHARED_FIXTURES, Conn, unique

LBANN = SHARED_FIXTURES.parent / "lbann"


@pytest.fixture(scope="module")
def conn(daemon):
    return Conn(daemon)


@pytest.fixture
def lbann_fixtures():
    if not (LBANN / "cases.json").is_file():
        pytest.skip(f"LBANN fixtures not found at {LBANN} (../shared beside the repository)")
    return LBANN


def rows_of(conn, desc, **kw):
    """A 2-D arrayview (or a row range / row list of it) as a numpy array."""
    hdr, frames = conn.ok("get", name=desc["name"], **kw)
    blob = b"".join(bytes(f) for f in frames)
    obj = hdr["result"]["object"]
    arr = np.frombuffer(blob, dtype=np.dtype(obj["dtype"]).newbyteorder("<"))
    return arr.reshape(-1, obj["shape"][1])


def strings_of(conn, desc):
    return conn.get_strings(desc["name"])


def pack(conn, **args):
    hdr, _ = conn.ok("pack", **args)
    return hdr["result"], hdr.get("warnings", [])


def pack_fails(conn, code, *words, **args):
    err = conn.fail("pack", **args)
    assert err["code"] == code, err
    for w in words:
        assert w in err["message"], err
    return err["message"]


def stage(conn, src, rel):
    """Copy a fixture file into the daemon's data directory under `rel`."""
    dest = conn.dir / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest)
    return rel


# ---- LBANN's own cases -------------------------------------------------------------------

CASES = ["hrrl_pack", "hrrl_pack_foobar", "hrrl_pack_foobar_permute", "hrrl_file_ingest",
         "unet3d_2x2x2", "unet3d_4x4x4_with_2x2x2_schema", "unet3d_4x4x4", "c3fd", "cosmoflow",
         "repack_hwc_chw"]


def case_args(conn, fx, case):
    d = fx / "schemas" / f"{case}.data_schema.yaml"
    e = fx / "schemas" / f"{case}.experiment_schema.yaml"
    folder = unique("lb")
    stage(conn, fx / "samples" / f"{case}.h5", f"{folder}/{case}.h5")
    stage(conn, fx / "samples" / f"{case}.sample_list", f"{folder}/{case}.sample_list")
    args = {"data_schema": d.read_text(), "sample_list": f"{folder}/{case}.sample_list"}
    if e.is_file():
        args["experiment_schema"] = e.read_text()
    return args


@pytest.mark.parametrize("case", CASES)
def test_lbann_cases(conn, lbann_fixtures, case):
    """Every field after coerce / normalize / repack, and every packed group, equal to what
    LBANN's code computes (and, where its tests assert values, to those)."""
    spec = json.loads((lbann_fixtures / "cases.json").read_text())[case]
    res, warnings = pack(conn, **case_args(conn, lbann_fixtures, case))
    assert res["samples"] == 1
    assert strings_of(conn, res["sample_ids"]) == [spec["inputs"]["sample_id"]]
    exp = spec["expected"]
    meta = json.loads((lbann_fixtures / exp["metadata"]).read_text())
    assert set(res["fields"]) == set(exp["fields"]), res["fields"]
    for field, want in exp["fields"].items():
        f = res["fields"][field]
        values = np.load(lbann_fixtures / want["file"])
        assert f["dtype"] == want["dtype"] and f["length"] == want["n"]
        row = rows_of(conn, res["groups"][f["group"]])[0]
        got = row[f["offset"]:f["offset"] + f["length"]]
        assert got.dtype == values.dtype
        assert np.array_equal(got, values.ravel()), (field, got, values)
        if "pack" not in meta[field]:  # a field of its own: its group is its path
            assert f["group"] == field and f["offset"] == 0
    for group, want in exp["packed"].items():
        desc = res["groups"][group]
        assert desc["objtype"] == "arrayview" and desc["dtype"] == want["dtype"]
        assert desc["shape"] == [1, want["n"]]
        assert np.array_equal(rows_of(conn, desc)[0], np.load(lbann_fixtures / want["file"]))
        offsets = [res["fields"][f]["offset"] for f in want["order"]]
        assert offsets == sorted(offsets)  # packed in LBANN's ordering
    # LBANN's asserted raw packs (case 1: pack of the un-normalized sample)
    for path in sorted((lbann_fixtures / "expected" / case).glob("lbann_asserted_pack_raw_*.npy")):
        group = path.stem[len("lbann_asserted_pack_raw_"):]
        raw = np.load(path)
        order = exp["packed"][group]["order"]
        sample = h5py.File(lbann_fixtures / "samples" / f"{case}.h5", "r")
        sid = spec["inputs"]["sample_id"]
        assert np.array_equal(np.concatenate([sample[f"{sid}/{f}"][()] for f in order]), raw)
        # and ours is that pack, normalized field by field
        md = meta
        for f in order:
            got = rows_of(conn, res["groups"][group])[0]
            part = got[res["fields"][f]["offset"]:][:res["fields"][f]["length"]]
            x = sample[f"{sid}/{f}"][()]
            if md[f].get("coerce") == "float":
                x = x.astype(np.float32)
            sc, bi = md[f].get("scale"), md[f].get("bias")
            if sc is not None:
                sc, bi = np.ravel(sc)[0], np.ravel(bi)[0]
                x = (x.astype(np.float64) * sc + bi).astype(x.dtype)
            assert np.array_equal(part, x)
    assert not [w for w in warnings if "metadata key" in w]


def test_lbann_asserted_literals(conn, lbann_fixtures):
    """The literals LBANN's tests compare with: CosmoFlow's transposed volume, and the
    channels-first 3x4x4 volume of the repack test."""
    res, _ = pack(conn, **case_args(conn, lbann_fixtures, "cosmoflow"))
    full = res["fields"]["full"]
    got = rows_of(conn, res["groups"][full["group"]])[0][full["offset"]:][:full["length"]]
    assert np.allclose(got, np.load(lbann_fixtures / "expected/cosmoflow/lbann_asserted_full.npy"))
    assert full["dims"] == [4, 4, 4, 4]
    par = res["fields"]["unitPar"]
    got = rows_of(conn, res["groups"][par["group"]])[0]
    assert np.allclose(got, np.load(lbann_fixtures / "expected/cosmoflow/lbann_asserted_unitPar.npy"))
    res, _ = pack(conn, **case_args(conn, lbann_fixtures, "repack_hwc_chw"))
    vol = rows_of(conn, res["groups"]["volume"])[0]
    assert vol[:5].tolist() == [11.1, 12.1, 13.1, 14.1, 21.1] and vol[-1] == 44.3
    assert res["fields"]["volume"]["dims"] == [3, 4, 4]


def test_lbann_hrrl_responses(conn, lbann_fixtures):
    """The five normalized responses CASES.md gives for the HRRL file-ingest case."""
    res, _ = pack(conn, **case_args(conn, lbann_fixtures, "hrrl_file_ingest"))
    got = rows_of(conn, res["groups"]["responses"])[0]
    # CASES.md prints them to 16 digits
    assert np.allclose(got, [0.5248663410131202, 0.01629837144368852, 0.01927483845229475,
                            0.4181314665948688, 0.7682603177045304], rtol=1e-15, atol=0)
    assert [res["fields"][f]["offset"] for f in ("Epmax", "Etot", "N", "T", "alpha")] == \
        [0, 1, 2, 3, 4]
