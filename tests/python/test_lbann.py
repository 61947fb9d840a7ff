"""pack: LBANN's HDF5 data reader (docs/LBANN.md; protocol/PROTOCOL.md, "pack"). The
schemas, samples and values LBANN's own tests assert (../shared/fixtures/lbann, skipped
when absent), full pipelines on files made here with h5py, sample lists of the three
formats, every error LBANN names, and mini-batches by `get` with row ranges and `rows`."""
import json
import shutil

import h5py
import numpy as np
import pytest

from conftest import SHARED_FIXTURES
from wire import Conn, unique

LBANN = SHARED_FIXTURES.parent / "lbann"


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
    # the same by `paths` where the sample is a top-level group
    if "/" not in spec["inputs"]["sample_id"]:
        args = case_args(conn, lbann_fixtures, case)
        folder = args.pop("sample_list").rsplit("/", 1)[0]
        again, _ = pack(conn, paths=[f"{folder}/*.h5"], **args)
        assert again["fields"] == res["fields"]
        for group, desc in res["groups"].items():
            assert np.array_equal(rows_of(conn, again["groups"][group]), rows_of(conn, desc))


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


# ---- pipelines on files made here --------------------------------------------------------

DATA_SCHEMA = """
# a field group whose metadata trickles down to its fields
images:
  metadata:
    channels: 3
    dims: [4, 2]
    layout: hwc
    transpose: chw
    scale: [0.5, 2.0, -1.0]
    bias: [1.0, 0.0, 0.25]
  img:
    metadata:
      ordering: 0
scalars:
  metadata:
    scale: 0.1
    bias: -1.0
  a:
    metadata: {ordering: 20}
  b:
    metadata: {ordering: 10}
  c:
    metadata: {ordering: 10, bias: 3.5}
label:
  metadata: {ordering: 0}
unused:
  metadata: {ordering: 1}
"""

EXPERIMENT_SCHEMA = """
images:
  metadata:
    pack: samples
    coerce: float
scalars:
  metadata:
    pack: responses
label:
"""


def write_samples(path, ids, seed, int_label=True):
    """Samples in a file as LBANN's readers find them: a top-level group per sample."""
    rng = np.random.default_rng(seed)
    want = {}
    with h5py.File(path, "w") as f:
        for sid in ids:
            g = f.create_group(sid)
            img = rng.normal(size=(4, 2, 3)) * 100
            sc = rng.normal(size=3)
            g["images/img"] = img
            for name, v in zip("abc", sc):
                g[f"scalars/{name}"] = np.array([v])
            g["label"] = np.array([len(want), 7], dtype="int32" if int_label else "float64")
            g["unused"] = np.zeros(2)
            want[sid] = (img, sc, g["label"][()])
    return want


def expected_rows(want):
    """What pack makes of write_samples' samples under the schemas above."""
    samples, responses, labels = [], [], []
    for img, (a, b, c), label in want.values():
        x = img.astype(np.float32).reshape(-1, 3)
        y = np.empty_like(x)
        for ch, (s, o) in enumerate(zip([0.5, 2.0, -1.0], [1.0, 0.0, 0.25])):
            y[:, ch] = (x[:, ch].astype(np.float64) * s + o).astype(np.float32)
        samples.append(y.T.ravel())  # channels first
        # orderings b 10, c 10 (a tie: schema order), a 20
        responses.append([b * 0.1 - 1.0, c * 0.1 + 3.5, a * 0.1 - 1.0])
        labels.append(label)
    return np.array(samples), np.array(responses), np.array(labels)


@pytest.fixture(scope="module")
def made(conn):
    folder = unique("made")
    (conn.dir / folder).mkdir()
    want = {}
    for k, ids in enumerate([["s2", "s0", "s1"], ["t0"], ["u1", "u0"]]):
        got = write_samples(conn.dir / folder / f"part{k}.h5", ids, k)
        want.update({sid: got[sid] for sid in sorted(got)})  # groups by name
    return folder, want


def test_pipeline_paths(conn, made):
    folder, want = made
    res, warnings = pack(conn, data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                         paths=[f"{folder}/part*.h5"])
    assert warnings == []
    assert res["samples"] == 6
    assert strings_of(conn, res["sample_ids"]) == list(want)
    samples, responses, labels = expected_rows(want)
    assert set(res["groups"]) == {"samples", "responses", "label"}
    got = rows_of(conn, res["groups"]["samples"])
    assert res["groups"]["samples"]["shape"] == [6, 24]
    assert got.dtype == np.float32 and np.array_equal(got, samples)
    assert np.array_equal(rows_of(conn, res["groups"]["responses"]), responses)
    got = rows_of(conn, res["groups"]["label"])
    assert got.dtype == np.int32 and np.array_equal(got, labels)
    f = res["fields"]
    assert f["images/img"] == {"group": "samples", "offset": 0, "length": 24,
                               "dims": [3, 4, 2], "dtype": "float32"}
    assert [f[p]["offset"] for p in ("scalars/b", "scalars/c", "scalars/a")] == [0, 1, 2]
    assert f["label"] == {"group": "label", "offset": 0, "length": 2, "dims": [2],
                          "dtype": "int32"}
    assert "unused" not in f


def test_pipeline_named(conn, made):
    folder, want = made
    prefix = unique("run") + "_"
    res, _ = pack(conn, data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                  paths=[f"{folder}/part0.h5", f"{folder}/part2.h5"], name=prefix)
    assert res["groups"]["samples"]["name"] == prefix + "samples"
    assert res["sample_ids"]["name"] == prefix + "sample_ids"
    assert strings_of(conn, res["sample_ids"]) == ["s0", "s1", "s2", "u0", "u1"]
    err = pack_fails(conn, "already_exists", prefix, data_schema=DATA_SCHEMA,
                     experiment_schema=EXPERIMENT_SCHEMA, paths=[f"{folder}/part0.h5"],
                     name=prefix)
    assert err


def test_no_experiment_schema(conn, made):
    """Without an experiment schema every data-schema leaf is a field of its own."""
    folder, want = made
    schema = "label:\n  metadata: {ordering: 0}\nunused:\n"
    res, _ = pack(conn, data_schema=schema, paths=[f"{folder}/part1.h5"])
    assert set(res["groups"]) == {"label", "unused"}
    assert rows_of(conn, res["groups"]["unused"]).tolist() == [[0.0, 0.0]]


def test_minibatches(conn, made):
    """get by row range and by a list of rows: any order, repeats, out of range refused."""
    folder, want = made
    res, _ = pack(conn, data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                  paths=[f"{folder}/part*.h5"])
    samples, responses, _ = expected_rows(want)
    desc = res["groups"]["samples"]
    assert np.array_equal(rows_of(conn, desc, start=2, stop=5), samples[2:5])
    assert rows_of(conn, desc, start=6, stop=6).shape == (0, 24)
    for rows in ([5, 0, 3], [1, 1, 4, 1], [4, 5], [], list(range(6))[::-1]):
        hdr, _ = conn.ok("get", name=desc["name"], rows=rows)
        assert hdr["result"]["rows"] == len(rows)
        assert np.array_equal(rows_of(conn, desc, rows=rows), samples[rows].reshape(-1, 24))
    flat = conn.put(np.arange(10, dtype=np.int64))
    _, bufs = conn.buffers(flat, rows=[9, 0, 9])
    assert np.frombuffer(bufs["values"], "<i8").tolist() == [9, 0, 9]
    err = conn.fail("get", name=desc["name"], rows=[0, 6])
    assert err["code"] == "bad_request" and "row 6 (entry 1 of 'rows')" in err["message"]
    err = conn.fail("get", name=desc["name"], start=2, stop=7)
    assert err["code"] == "bad_request" and "6 rows" in err["message"]
    err = conn.fail("get", name=desc["name"], rows=[0], start=0)
    assert err["code"] == "bad_request"
    err = conn.fail("get", name=res["sample_ids"]["name"], rows=[0])
    assert err["code"] == "type_error"


# ---- sample lists ------------------------------------------------------------------------

def test_sample_lists(conn, made):
    folder, want = made
    lists = {
        "inc.txt": "CONDUIT_HDF5_INCLUSION\n3 0 2\n.\npart0.h5 2 0 s2 s0\npart2.h5 1 0 u1\n",
        "exc.txt": "CONDUIT_HDF5_EXCLUSION\n4 2 3\n.\npart0.h5 2 1 s1\npart1.h5 1 0\n"
                   "part2.h5 1 1 u0\n",
        "v2.txt": "MULTI-SAMPLE_INCLUSION_V2\n2 2\n.\npart2.h5 1 u0\npart1.h5  1  t0\n",
    }
    order = {"inc.txt": ["s2", "s0", "u1"], "exc.txt": ["s0", "s2", "t0", "u1"],
             "v2.txt": ["u0", "t0"]}
    for name, text in lists.items():
        (conn.dir / folder / name).write_text(text)
        res, _ = pack(conn, data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                      sample_list=f"{folder}/{name}")
        assert strings_of(conn, res["sample_ids"]) == order[name], name
        samples, _, _ = expected_rows({k: want[k] for k in order[name]})
        assert np.array_equal(rows_of(conn, res["groups"]["samples"]), samples)
    # a base directory relative to the data directory
    (conn.dir / unique("lists")).mkdir()
    (conn.dir / "based.txt").write_text(
        f"MULTI-SAMPLE_INCLUSION_V2\n1 1\n{folder}\npart1.h5 1 t0\n")
    res, _ = pack(conn, data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                  sample_list="based.txt")
    assert strings_of(conn, res["sample_ids"]) == ["t0"]


def test_lbann_sample_list_fixtures(conn, lbann_fixtures, made):
    """LBANN's own lists parse (their base directories are absolute: refused as every path
    outside the data directory is, after the list itself was read)."""
    folder, _ = made
    for name in ("probies_hdf5_legacy_sample_list.txt",
                 "probies_hdf5_multi_sample_inclusion_v2_sample_list.txt",
                 "exagan_exclusive.sample_list.txt", "exagan_inclusive.sample_list.txt",
                 "hdf5_hrrl_train_sample_list.txt"):
        rel = stage(conn, lbann_fixtures / "fixtures" / name, f"{folder}/{name}")
        pack_fails(conn, "forbidden", data_schema=DATA_SCHEMA, sample_list=rel)


def test_sample_list_errors(conn, made):
    folder, _ = made
    bad = {
        "kind.txt": ("CONDUIT_HDF5_SOMETHING\n1 0 1\n.\npart1.h5 1 0 t0\n", "line 1"),
        "header.txt": ("CONDUIT_HDF5_INCLUSION\n1 0\n.\npart1.h5 1 0 t0\n", "line 2"),
        "count.txt": ("CONDUIT_HDF5_INCLUSION\n2 0 1\n.\npart1.h5 1 0 t0\n",
                      "header counts 2"),
        "line.txt": ("CONDUIT_HDF5_INCLUSION\n2 0 1\n.\npart1.h5 2 0 t0\n", "line 4"),
        "exc.txt": ("CONDUIT_HDF5_EXCLUSION\n2 0 1\n.\npart0.h5 2 0\n", "the list says 2"),
        "short.txt": ("MULTI-SAMPLE_INCLUSION_V2\n1 1\n", "ends before its base"),
    }
    for name, (text, words) in bad.items():
        (conn.dir / folder / name).write_text(text)
        pack_fails(conn, "schema_error", words, data_schema=DATA_SCHEMA,
                   sample_list=f"{folder}/{name}")
    (conn.dir / folder / "missing.txt").write_text(
        "MULTI-SAMPLE_INCLUSION_V2\n1 1\n.\nnope.h5 1 t0\n")
    pack_fails(conn, "not_found", data_schema=DATA_SCHEMA, sample_list=f"{folder}/missing.txt")
    (conn.dir / folder / "up.txt").write_text("MULTI-SAMPLE_INCLUSION_V2\n1 1\n../..\nx.h5 1 t0\n")
    pack_fails(conn, "forbidden", data_schema=DATA_SCHEMA, sample_list=f"{folder}/up.txt")
    pack_fails(conn, "not_found", data_schema=DATA_SCHEMA, sample_list="no_such_list.txt")
    pack_fails(conn, "forbidden", data_schema=DATA_SCHEMA, sample_list="/etc/passwd")
    (conn.dir / folder / "nosample.txt").write_text(
        "MULTI-SAMPLE_INCLUSION_V2\n1 1\n.\npart1.h5 1 zz\n")
    pack_fails(conn, "schema_error", "sample 'zz'", "lacks field", data_schema=DATA_SCHEMA,
               experiment_schema=EXPERIMENT_SCHEMA, sample_list=f"{folder}/nosample.txt")


# ---- errors ------------------------------------------------------------------------------

def test_schema_errors(conn, made):
    folder, _ = made
    paths = [f"{folder}/part1.h5"]
    exp = EXPERIMENT_SCHEMA
    cases = [
        ("a:\n  metadata: {pack: x}\n", None, "field 'a': metadata has 'pack' but is missing "
         "'ordering'"),
        (DATA_SCHEMA, exp.replace("coerce: float", "coerce: float32"), "unknown coerce 'float32'"),
        (DATA_SCHEMA.replace("channels: 3", "channels: 0"), exp, "'channels' must be a positive"),
        (DATA_SCHEMA.replace("channels: 3", "channels: 5").replace(
            "[0.5, 2.0, -1.0]", "0.5").replace("[1.0, 0.0, 0.25]", "0.0"), exp,
         "5 channels do not divide its 24 elements"),
        (DATA_SCHEMA.replace("dims: [4, 2]", "dims: [4, 4]"), exp, "make 48 elements, not its 24"),
        (DATA_SCHEMA.replace("channels: 3", "channels: 2"), exp,
         "one per channel (2 channels; scale has 3"),
        (DATA_SCHEMA, exp.replace("pack: samples", "pack: responses"), "mixes dtypes"),
        (DATA_SCHEMA, exp + "unused:\n  metadata: {pack: responses}\n", None),
        (DATA_SCHEMA, exp.replace("label:", "label:\n  metadata: {pack: ints, ordering: 1}"),
         "field 'label' is int32; packed fields must be float32 or float64"),
        (DATA_SCHEMA, "nothere:\n", "selects 'nothere', which the data_schema does not have"),
        (DATA_SCHEMA.replace("layout: hwc", "layout: whc"), exp, "'layout' must be hwc"),
        (DATA_SCHEMA.replace("transpose: chw", "transpose: cdhw"), exp, "cannot be transposed"),
        (DATA_SCHEMA + "more:\n  metadata: {ordering: x}\n", None, "'ordering' must be a number"),
        ("", None, "select no field"),
    ]
    for data, e, words in cases:
        args = {"data_schema": data, "paths": paths}
        if e is not None:
            args["experiment_schema"] = e
        if words is None:
            conn.ok("pack", **args)  # a field joining a group with a tie: fine
            continue
        pack_fails(conn, "schema_error", words, **args)
    # a sample lacking a field, another's field of another size, and of another type
    odd = unique("odd")
    (conn.dir / odd).mkdir()
    write_samples(conn.dir / odd / "a.h5", ["x0", "x1"], 3)
    with h5py.File(conn.dir / odd / "a.h5", "a") as f:
        del f["x1/scalars/b"]
    pack_fails(conn, "schema_error", "sample 'x1' of '", "lacks field 'scalars/b'",
               data_schema=DATA_SCHEMA, experiment_schema=exp, paths=[f"{odd}/a.h5"])
    with h5py.File(conn.dir / odd / "a.h5", "a") as f:
        f["x1/scalars/b"] = np.array([1.0, 2.0])
    pack_fails(conn, "schema_error", "sample 'x1', field 'scalars/b': 2 elements where the "
               "first sample has 1", data_schema=DATA_SCHEMA, experiment_schema=exp,
               paths=[f"{odd}/a.h5"])
    with h5py.File(conn.dir / odd / "a.h5", "a") as f:
        del f["x1/scalars/b"]
        f["x1/scalars/b"] = np.array([1.0])
        del f["x1/label"]
        f["x1/label"] = np.array([1, 2], dtype="int64")
    pack_fails(conn, "schema_error", "sample 'x1', field 'label': int64 where the first sample "
               "has int32", data_schema=DATA_SCHEMA, experiment_schema=exp,
               paths=[f"{odd}/a.h5"])
    with h5py.File(conn.dir / odd / "a.h5", "a") as f:
        del f["x1/label"]
        f["x1/label"] = np.array([b"ab", b"cd"])
    pack_fails(conn, "schema_error", "sample 'x1' of '", "field 'label'", "strings",
               data_schema=DATA_SCHEMA,
               experiment_schema=exp, paths=[f"{odd}/a.h5"])
    with h5py.File(conn.dir / odd / "a.h5", "a") as f:  # a scalar: LBANN's are shape (1,)
        del f["x1/label"]
        f["x1/label"] = 5
    pack_fails(conn, "schema_error", "sample 'x1' of '", "field 'label'", "scalar",
               data_schema=DATA_SCHEMA, experiment_schema=exp, paths=[f"{odd}/a.h5"])


def test_malformed_yaml(conn, made):
    folder, _ = made
    for text, where in (("a:\n  metadata: {ordering: 0\nb: 1\n", "line 3"),
                        ("a: [1, 2\n", "line 2"), ("- a\n- b\n", "must be a mapping"),
                        ("a: &x {}\nb: *x\n", "aliases"), ("a: 1\na: 2\n", "duplicate key 'a'"),
                        ("a:\n\tb: 1\n", "line 2, column 1"), ("a: 1\n", "'a' must be a mapping")):
        msg = pack_fails(conn, "schema_error", where, data_schema=text,
                         paths=[f"{folder}/part1.h5"])
        assert "data_schema" in msg
    msg = pack_fails(conn, "schema_error", "experiment_schema: malformed YAML at line",
                     data_schema=DATA_SCHEMA, experiment_schema="x: [", paths=[f"{folder}/part1.h5"])


def test_unknown_metadata_key_warns(conn, made):
    folder, _ = made
    data = DATA_SCHEMA.replace("  metadata: {ordering: 0}\nunused", "  metadata: {ordering: 0, "
                               "xyz: 1234.5678}\nunused")
    _, warnings = pack(conn, data_schema=data, experiment_schema=EXPERIMENT_SCHEMA,
                       paths=[f"{folder}/part1.h5"])
    assert warnings == ["data_schema: 'label' has metadata key 'xyz', which LBANN does not know "
                        "(kept, not used)"]


def test_request_errors(conn, made):
    folder, _ = made
    pack_fails(conn, "bad_request", "one of them", data_schema=DATA_SCHEMA)
    pack_fails(conn, "bad_request", "one of them", data_schema=DATA_SCHEMA, paths=["x"],
               sample_list="y")
    pack_fails(conn, "bad_request", data_schema=DATA_SCHEMA, paths=["x"], bogus=1)
    pack_fails(conn, "bad_request", paths=["x"])
    pack_fails(conn, "bad_request", "'paths' is empty", data_schema=DATA_SCHEMA, paths=[])
    pack_fails(conn, "not_found", data_schema=DATA_SCHEMA, paths=[f"{folder}/none*.h5"])
    pack_fails(conn, "forbidden", data_schema=DATA_SCHEMA, paths=["../x.h5"])
    empty = unique("empty") + ".h5"
    h5py.File(conn.dir / empty, "w").close()
    pack_fails(conn, "schema_error", "no samples", data_schema=DATA_SCHEMA, paths=[empty])


def test_hostile_sample_files(conn, made):
    """Files that are not HDF5, or are cut short, give an error naming them; the daemon
    stays up."""
    folder, _ = made
    bad = unique("bad")
    (conn.dir / bad).mkdir()
    (conn.dir / bad / "junk.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 8)
    pack_fails(conn, "schema_error", "junk.h5", data_schema=DATA_SCHEMA,
               paths=[f"{bad}/junk.h5"])
    whole = (conn.dir / folder / "part0.h5").read_bytes()
    (conn.dir / bad / "cut.h5").write_bytes(whole[:len(whole) // 2])
    err = conn.fail("pack", data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                    paths=[f"{bad}/cut.h5"])
    assert err["code"] in ("schema_error", "io_error") and "cut.h5" in err["message"], err
    conn.ok("ping")


def test_lbann_docs_schemas(conn, lbann_fixtures, made):
    """LBANN's documented example selects fields with 'pack' and no 'ordering': refused
    naming the first, as LBANN's code does."""
    folder, _ = made
    fx = lbann_fixtures / "fixtures"
    pack_fails(conn, "schema_error", "field 'inputs/initial_modes': metadata has 'pack' but is "
               "missing 'ordering'",
               data_schema=(fx / "docs_hdf5_data_reader_rst_block0.yaml").read_text(),
               experiment_schema=(fx / "docs_hdf5_data_reader_rst_block1.yaml").read_text(),
               paths=[f"{folder}/part1.h5"])


def test_lbann_schema_inheritance(conn, lbann_fixtures):
    """CASES.md case 9 on the HRRL schemas: a node without metadata inherits its parent's,
    partial metadata keeps its own keys, the experiment's value wins, an unknown key is a
    warning."""
    spec = json.loads((lbann_fixtures / "cases.json").read_text())
    assert all(v for k, v in spec["_schema_inheritance_cases"].items() if k != "inheritance_plus warnings")
    data = (lbann_fixtures / "schemas/hrrl_pack.data_schema.yaml").read_text()
    data = data.replace("""Epmax:
  metadata:
    ordering: 10
    scale: 0.1
    bias: -1.0
""", """Epmax:
  metadata:
    ordering: 10
    scale: 0.1
    bias: -1.0
  horse:
    carrot:
    partial:
      metadata:
        bias: 1234.5
""").replace("""alpha:
  metadata:
    ordering: 60""", """alpha:
  metadata:
    xyz: 1234.5678
    ordering: 60""")
    exp = "Epmax:\n  metadata: {pack: responses}\nalpha:\n  metadata: {pack: responses, bias: %r}\n" \
        % (-2.5 * 1.23)
    folder = unique("inh")
    (conn.dir / folder).mkdir()
    with h5py.File(conn.dir / folder / "s.h5", "w") as f:
        f["000000334/Epmax/horse/carrot"] = np.array([15.0])
        f["000000334/Epmax/horse/partial"] = np.array([2.0])
        f["000000334/alpha"] = np.array([32.0])
    res, warnings = pack(conn, data_schema=data, experiment_schema=exp,
                         paths=[f"{folder}/s.h5"])
    assert warnings == ["data_schema: 'alpha' has metadata key 'xyz', which LBANN does not know "
                        "(kept, not used)"]
    got = rows_of(conn, res["groups"]["responses"])[0]
    assert [res["fields"][f]["offset"] for f in ("Epmax/horse/carrot", "Epmax/horse/partial",
                                                 "alpha")] == [0, 1, 2]
    assert got.tolist() == [15.0 * 0.1 - 1.0, 2.0 * 0.1 + 1234.5, 32.0 * 0.1 + -2.5 * 1.23]


# ---- the Python client -------------------------------------------------------------------

def test_python_pack_and_batches(client, made):
    import h5ark
    folder, want = made
    p = client.pack(DATA_SCHEMA, EXPERIMENT_SCHEMA, paths=f"{folder}/part*.h5")
    assert isinstance(p, h5ark.Packed) and p.samples == len(p) == 6
    assert p.sample_ids.to_list() == list(want)
    assert set(p.groups) == {"samples", "responses", "label"}
    assert isinstance(p.groups["samples"], h5ark.ArrayView)
    samples, responses, labels = expected_rows(want)
    assert np.array_equal(p.groups["samples"].to_ndarray(), samples)
    assert p.fields["images/img"]["dims"] == [3, 4, 2]
    seen = []
    for batch in p.batches(4, seed=7):
        n = batch["samples"].shape[0]
        assert batch["samples"].dtype == np.float32 and batch["samples"].shape[1] == 24
        assert batch["responses"].shape == (n, 3) and batch["label"].shape == (n, 2)
        seen.append(batch)
    assert [b["samples"].shape[0] for b in seen] == [4, 2]
    got = np.concatenate([b["samples"] for b in seen])
    # every sample once, in a shuffled order, rows kept together across groups
    order = [int(np.flatnonzero((samples == r).all(axis=1))[0]) for r in got]
    assert sorted(order) == list(range(6)) and order != list(range(6))
    assert np.array_equal(np.concatenate([b["responses"] for b in seen]), responses[order])
    again = [b["samples"] for b in p.batches(4, seed=7)]
    assert all(np.array_equal(a, b["samples"]) for a, b in zip(again, seen))  # seeded
    plain = list(p.batches(4, shuffle=False, drop_last=True))
    assert len(plain) == 1 == p.nbatches(4, drop_last=True)
    assert np.array_equal(plain[0]["samples"], samples[:4])
    img = p.field(plain[0], "images/img")
    assert img.shape == (4, 3, 4, 2) and np.array_equal(img.reshape(4, -1), samples[:4])
    only = next(p.batches(2, shuffle=False, groups=["responses"]))
    assert list(only) == ["responses"] and np.array_equal(only["responses"], responses[:2])
    with pytest.raises(h5ark.SchemaError, match="missing 'ordering'"):
        client.pack("a:\n  metadata: {pack: x}\n", paths=f"{folder}/part1.h5")
    with pytest.raises(h5ark.BadRequestError, match="out of range"):
        p.rows([6])


def test_probe_crash(start_daemon):
    """A sample file that crashes the library where it is decoded (H5ARK_TEST_PROBE_CRASH
    makes the probe die on it, as it would) is an error naming it; the daemon goes on and
    packs the other files."""
    d = start_daemon(locales=2, env={"H5ARK_TEST_PROBE_CRASH": "_dies"})
    c = Conn(d)
    write_samples(c.dir / "ok.h5", ["a0", "a1"], 1)
    write_samples(c.dir / "x_dies.h5", ["b0"], 2)
    for paths in (["x_dies.h5"], ["ok.h5", "x_dies.h5"]):
        err = c.fail("pack", data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                     paths=paths)
        assert err["code"] == "schema_error" and "x_dies.h5" in err["message"], err
    assert c.ok("info")[0]["result"]["objects"] == []  # nothing left of a failed pack
    res, _ = pack(c, data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                  paths=["ok.h5"])
    assert strings_of(c, res["sample_ids"]) == ["a0", "a1"]
    assert len(c.ok("info")[0]["result"]["objects"]) == 4  # sample_ids and three groups


def test_storage_layouts(conn):
    """Fields stored chunked and deflated, compact, big-endian or as narrower integers read
    as contiguous ones do."""
    folder = unique("layouts")
    (conn.dir / folder).mkdir()
    rng = np.random.default_rng(9)
    img = rng.normal(size=(3, 4, 2, 3))
    ints = rng.integers(-100, 100, size=(3, 5)).astype(np.int16)
    with h5py.File(conn.dir / folder / "s.h5", "w") as f:
        for i in range(3):
            g = f.create_group(f"s{i}")
            g.create_dataset("images/img", data=img[i], chunks=(2, 2, 3), compression="gzip",
                             shuffle=True)
            g.create_dataset("scalars/a", data=[1.0 + i], dtype=">f8")
            sp = h5py.h5s.create_simple((1,))
            plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            plist.set_layout(h5py.h5d.COMPACT)
            h5py.h5d.create(g.id, b"scalars/b", h5py.h5t.IEEE_F64LE, sp, plist).write(
                h5py.h5s.ALL, h5py.h5s.ALL, np.array([2.0 + i]))
            g["scalars/c"] = np.array([3.0 + i])
            g["label"] = ints[i]
            g["unused"] = np.zeros(2)
    exp = EXPERIMENT_SCHEMA.replace("label:", "label:\n  metadata: {coerce: long}")
    res, _ = pack(conn, data_schema=DATA_SCHEMA, experiment_schema=exp, paths=[f"{folder}/s.h5"])
    want = {f"s{i}": (img[i], [1.0 + i, 2.0 + i, 3.0 + i], ints[i]) for i in range(3)}
    samples, responses, _ = expected_rows(want)
    assert np.array_equal(rows_of(conn, res["groups"]["samples"]), samples)
    assert np.array_equal(rows_of(conn, res["groups"]["responses"]), responses)
    got = rows_of(conn, res["groups"]["label"])
    assert got.dtype == np.int64 and np.array_equal(got, ints)


def test_changed_files_probed_again(conn):
    """The probes' answers are remembered by file version (device, inode, size, mtime): the
    same files pack the same again, and a file rewritten in place, its samples and their
    places changed, is probed again, whatever was remembered of it."""
    folder = unique("again")
    (conn.dir / folder).mkdir()
    path = conn.dir / folder / "s.h5"
    args = dict(data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                paths=[f"{folder}/s.h5"])
    for ids, seed in ((["a0", "a1"], 1), (["a0", "a1"], 1), (["b0", "a0", "a1"], 2)):
        ino = path.stat().st_ino if path.exists() else None
        if ino is not None:
            with open(path, "r+b") as f:  # the same inode, rewritten
                f.truncate(0)
        want = write_samples(path, ids, seed)
        with h5py.File(path, "a") as f:  # the datasets' places differ with the seed
            f.attrs["pad"] = np.zeros(seed * 100)
        assert ino is None or path.stat().st_ino == ino
        want = {sid: want[sid] for sid in sorted(want)}
        res, _ = pack(conn, **args)
        assert strings_of(conn, res["sample_ids"]) == list(want)
        samples, responses, labels = expected_rows(want)
        assert np.array_equal(rows_of(conn, res["groups"]["samples"]), samples)
        assert np.array_equal(rows_of(conn, res["groups"]["responses"]), responses)
        assert np.array_equal(rows_of(conn, res["groups"]["label"]), labels)
    with h5py.File(path, "a") as f:  # a field gone: an error, not the remembered answer
        del f["a1/scalars/b"]
    pack_fails(conn, "schema_error", "sample 'a1' of '", "lacks field 'scalars/b'", **args)


def test_links_found_any_way(conn):
    """Fields are found the same whatever their groups hold: many other children, long
    names, soft links inside the file to a field or its group; top-level soft links and
    datasets are not samples."""
    folder = unique("links")
    (conn.dir / folder).mkdir()
    path = conn.dir / folder / "s.h5"
    want = write_samples(path, ["a0", "a1", "a2"], 4)
    with h5py.File(path, "a") as f:
        for k in range(40):  # more children than one pass keeps
            f[f"a0/{'x' * 60}{k:02d}"] = np.zeros(1)
            f[f"a0/scalars/{'y' * 60}{k:02d}"] = np.zeros(1)
        f.move("a1/label", "a1/" + "l" * 70)  # the field a soft link to a long name
        f["a1/label"] = h5py.SoftLink("/a1/" + "l" * 70)
        f.move("a2/scalars", "a2/elsewhere")  # its group a soft link
        f["a2/scalars"] = h5py.SoftLink("/a2/elsewhere")
        f["zz"] = h5py.SoftLink("/a0")  # not samples
        f["top"] = np.zeros(3)
    res, _ = pack(conn, data_schema=DATA_SCHEMA, experiment_schema=EXPERIMENT_SCHEMA,
                  paths=[f"{folder}/s.h5"])
    assert strings_of(conn, res["sample_ids"]) == ["a0", "a1", "a2"]
    samples, responses, labels = expected_rows(want)
    assert np.array_equal(rows_of(conn, res["groups"]["samples"]), samples)
    assert np.array_equal(rows_of(conn, res["groups"]["responses"]), responses)
    assert np.array_equal(rows_of(conn, res["groups"]["label"]), labels)
    with h5py.File(path, "a") as f:  # a soft link out of a sample: still an error
        del f["a1/label"]
        f["a1/label"] = h5py.SoftLink("/nowhere")
    pack_fails(conn, "schema_error", "sample 'a1'", "lacks field 'label'", data_schema=DATA_SCHEMA,
               experiment_schema=EXPERIMENT_SCHEMA, paths=[f"{folder}/s.h5"])


# ---- the probe's two ways to a field's metadata (docs/LBANN.md "Field metadata") ----

HEADER_FIELDS = ("contig", "compact", "chunked", "gzip", "attrs", "unwritten", "edges", "shuffled",
                 "fletcher")
HEADER_DATA_SCHEMA = "".join(f"{name}:\n  metadata: {{ordering: {k}}}\n"
                             for k, name in enumerate(HEADER_FIELDS))
HEADER_EXPERIMENT_SCHEMA = "".join(f"{name}:\n" for name in HEADER_FIELDS)
HEADER_DTYPES = ("i1", "u1", "<i2", ">i2", "<u2", "<i4", ">u4", "<u4", "<i8", ">i8", "<u8",
                 "<f4", ">f4", "<f8", ">f8", "<f2")


def compact_dataset(g, name, data):
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    plist.set_layout(h5py.h5d.COMPACT)
    space = h5py.h5s.create_simple(data.shape)
    h5py.h5d.create(g.id, name.encode(), h5py.h5t.py_create(data.dtype), space, plist).write(
        h5py.h5s.ALL, h5py.h5s.ALL, data)


def write_header_samples(path, dtype, seed, **file_args):
    """Three samples whose fields are stored every way a file can keep a plain dataset."""
    rng = np.random.default_rng(seed)
    want = {name: [] for name in HEADER_FIELDS}
    with h5py.File(path, "w", **file_args) as f:
        for i in range(3):
            g = f.create_group(f"s{i}")
            vals = {name: rng.integers(0, 100, size=(2, 3)).astype(dtype)
                    for name in HEADER_FIELDS}
            vals["unwritten"] = np.zeros((2, 3), dtype)  # its fill value
            g["contig"] = vals["contig"]
            compact_dataset(g, "compact", vals["compact"])
            g.create_dataset("chunked", data=vals["chunked"], chunks=(1, 3))
            g.create_dataset("gzip", data=vals["gzip"], compression="gzip", shuffle=True)
            # chunks over the edge, deflate alone; shuffle alone; a filter read by the library
            g.create_dataset("edges", data=vals["edges"], chunks=(2, 2), compression="gzip")
            g.create_dataset("shuffled", data=vals["shuffled"], chunks=(1, 3), shuffle=True)
            g.create_dataset("fletcher", data=vals["fletcher"], chunks=(2, 2), fletcher32=True)
            d = g.create_dataset("attrs", data=vals["attrs"])
            g.create_dataset("unwritten", shape=(2, 3), dtype=dtype)
            for k in range(40):  # a header that cannot grow in place: continuation messages
                d.attrs[f"attribute_{k:02d}"] = np.arange(k + 1)
            for name in HEADER_FIELDS:
                want[name].append(vals[name].ravel())
    return want


@pytest.fixture(scope="module")
def header_files(conn):
    """For each dtype, files with old (libver earliest: version 1 object headers) and new
    (latest: version 2) headers, with and without a user block."""
    folder = unique("headers")
    (conn.dir / folder).mkdir()
    files = {}
    for k, dtype in enumerate(HEADER_DTYPES):
        want = {name: [] for name in HEADER_FIELDS}
        paths = []
        for libver in ("earliest", "latest"):
            for userblock in (0, 512):
                rel = f"{folder}/{k:02d}_{libver}_{userblock}.h5"
                args = {"libver": libver, **({"userblock_size": userblock} if userblock else {})}
                got = write_header_samples(conn.dir / rel, dtype, len(paths) + 10 * k, **args)
                for name in HEADER_FIELDS:
                    want[name] += got[name]
                paths.append(rel)
        files[dtype] = (paths, want)
    return folder, files


def test_header_reader_matches_library(conn, start_daemon, header_files):
    """Fields packed with their metadata read from their object headers, and with every one
    asked of the library (H5ARK_PROBE_FALLBACK=1 in the probes' environment), come out bit
    for bit the same, and as h5py reads them, over every dtype, byte order, storage, header
    version and a user block; the errors of fields neither reads (a scalar, data in another
    file) are the same too."""
    folder, files = header_files
    lib = Conn(start_daemon(locales=2, data_dir=conn.dir, env={"H5ARK_PROBE_FALLBACK": "1"}))
    for dtype, (paths, want) in files.items():
        got = []
        for c in (conn, lib):
            res, _ = pack(c, data_schema=HEADER_DATA_SCHEMA,
                          experiment_schema=HEADER_EXPERIMENT_SCHEMA, paths=paths)
            got.append({name: rows_of(c, res["groups"][name]) for name in HEADER_FIELDS})
            c.ok("clear")
        for name in HEADER_FIELDS:
            mine, theirs = got[0][name], got[1][name]
            assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes(), (dtype, name)
            assert np.array_equal(mine, np.array(want[name]).astype(mine.dtype)), (dtype, name)
    for libver in ("earliest", "latest"):
        odd = f"{folder}/odd_{libver}.h5"
        with h5py.File(conn.dir / odd, "w", libver=libver) as f:
            g = f.create_group("s0")
            g["contig"] = np.zeros(3)
            g["scalar"] = 1.0
            g.create_dataset("outside", shape=(4,), dtype="f8", external=[("ext.bin", 0, 32)])
        for field, words in (("scalar", "is a scalar"), ("outside", "in other files")):
            schema = f"contig:\n{field}:\n"
            errs = [c.fail("pack", data_schema=schema, experiment_schema=schema, paths=[odd])
                    for c in (conn, lib)]
            assert errs[0] == errs[1] and words in errs[0]["message"], errs
    conn.ok("ping")


def header_messages(raw, addr):
    """A version 1 object header's messages in its first chunk: (type, place of its data)."""
    size = int.from_bytes(raw[addr + 8:addr + 12], "little")
    at, end, found = addr + 16, addr + 16 + size, []
    while at + 8 <= end:
        mtype = int.from_bytes(raw[at:at + 2], "little")
        msize = int.from_bytes(raw[at + 2:at + 4], "little")
        found.append((mtype, at + 8))
        at += 8 + msize
    return found


# ---- every layout a field can be stored in, read as h5py reads it (docs/LBANN.md) ----

LAYOUTS = {
    "contiguous": {},
    "compact": "compact",
    "chunked": {"chunks": True},
    "gzip": {"compression": "gzip"},
    "shuffle_gzip": {"compression": "gzip", "shuffle": True},
    "shuffle": {"chunks": True, "shuffle": True},
}
RAW_SCHEMA = "img:\n  metadata: {ordering: 0}\nx:\n  metadata: {ordering: 1}\nn:\n"


def write_layout(path, storage, libver, seed, img_chunks=None):
    """Samples of a 3-D float32 image, a float64 scalar and an int16 vector, stored as
    `storage` says (the image in img_chunks when given); what h5py reads of them."""
    rng = np.random.default_rng(seed)
    want = {"img": [], "x": [], "n": []}
    with h5py.File(path, "w", libver=libver) as f:
        for i in range(4):
            g = f.create_group(f"s{i}")
            vals = {"img": rng.random((7, 9, 4), dtype=np.float32),
                    "x": rng.random(1), "n": rng.integers(-999, 999, 5).astype(np.int16)}
            for name, v in vals.items():
                if storage == "compact":
                    compact_dataset(g, name, v)
                elif name == "img" and img_chunks:
                    g.create_dataset(name, data=v, chunks=img_chunks, **storage)
                else:
                    g.create_dataset(name, data=v, **storage)
            for name in vals:
                want[name].append(g[name][()].ravel())
    return want


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layouts_read_as_h5py(conn, layout):
    """Fields packed bit for bit as h5py reads them whatever their storage: contiguous,
    compact, chunked (h5py's chunks: edge chunks in every dimension), deflated, shuffled
    (with and without deflate), under a version 1 B-tree (libver earliest) or a fixed
    array or single chunk (latest)."""
    folder = unique(f"lay_{layout}")
    (conn.dir / folder).mkdir()
    for libver in ("earliest", "latest"):
        rel = f"{folder}/{libver}.h5"
        want = write_layout(conn.dir / rel, LAYOUTS[layout], libver, len(libver))
        args = dict(data_schema=RAW_SCHEMA, experiment_schema=RAW_SCHEMA, paths=[rel])
        res, _ = pack(conn, **args)
        for name, dtype in (("img", np.float32), ("x", np.float64), ("n", np.int16)):
            got = rows_of(conn, res["groups"][name])
            assert got.dtype == dtype and got.tobytes() == np.array(want[name]).tobytes(), \
                (libver, name)
        conn.ok("clear")
    conn.ok("ping")


def chunk_btree_nodes(raw):
    """Where the version 1 B-tree nodes of chunks are in a file's bytes."""
    at, found = raw.find(b"TREE\x01"), []
    while at >= 0:
        found.append(at)
        at = raw.find(b"TREE\x01", at + 1)
    return found


def test_hostile_chunks(conn):
    """Chunked fields whose index or chunks are damaged: a B-tree child or a fixed array
    element pointing outside the file, a chunk's stored size past it, a deflate stream
    with bytes flipped, the file cut in its chunks, a filter HDF5 does not know; a clear
    error naming the file (or the right values), and the daemon stays up."""
    folder = unique("hostile_chunks")
    (conn.dir / folder).mkdir()
    cases = []
    for libver in ("earliest", "latest"):
        path = conn.dir / folder / f"clean_{libver}.h5"
        want = write_layout(path, {"compression": "gzip", "shuffle": True}, libver, 5,
                            img_chunks=(4, 5, 2))
        raw = path.read_bytes()
        with h5py.File(path, "r") as f:
            info = f["s1/img"].id.get_chunk_info(1)
        start, size = info.byte_offset, info.size
        bad = bytearray(raw)
        for k in range(start + 2, start + size - 4):  # inside the stream, past its header
            bad[k] ^= 0x5a
        cases.append((f"stream_{libver}", bytes(bad)))
        cases.append((f"cut_{libver}", raw[:start + size // 2]))
        unknown = conn.dir / folder / f"unknown_{libver}.h5"
        shutil.copy(path, unknown)
        with h5py.File(unknown, "a") as f:
            del f["s2/img"]
            d = f.create_dataset("s2/img", shape=(7, 9, 4), dtype="f4", chunks=(7, 9, 4),
                                 compression=32123, allow_unknown_filter=True)
            d.id.write_direct_chunk((0, 0, 0), bytes(7 * 9 * 4 * 4))
        cases.append((f"unknown_{libver}", unknown.read_bytes()))
        if libver == "earliest":
            node = chunk_btree_nodes(raw)[0]
            rank1 = 4  # the image's rank + 1
            key = 8 + 8 * rank1
            child = node + 24 + key  # the first entry's child: its chunk
            for name, value in (("child", (1 << 40).to_bytes(8, "little")),
                                ("size", (1 << 31).to_bytes(4, "little"))):
                bad = bytearray(raw)
                at = child if name == "child" else node + 24
                bad[at:at + len(value)] = value
                cases.append((f"btree_{name}", bytes(bad)))
        else:
            fadb = raw.find(b"FADB")
            assert fadb > 0
            bad = bytearray(raw)
            bad[fadb + 14:fadb + 22] = (1 << 40).to_bytes(8, "little")  # the first element
            cases.append(("farray", bytes(bad)))
    for name, data in cases:
        rel = f"{folder}/{name}.h5"
        (conn.dir / rel).write_bytes(data)
        hdr, _ = conn.raw("pack", data_schema=RAW_SCHEMA, experiment_schema=RAW_SCHEMA,
                          paths=[rel])
        if "error" in hdr:
            err = hdr["error"]
            assert err["code"] in ("schema_error", "io_error"), (name, err)
            assert rel in err["message"], (name, err)
            if name.startswith("stream"):  # found where the locales inflate the chunks
                assert "field 'img': the chunk at byte" in err["message"], err
                assert "is damaged: not a valid deflate stream" in err["message"], err
        else:
            got = rows_of(conn, hdr["result"]["groups"]["img"])
            assert got.tobytes() == np.array(want["img"]).tobytes(), name
        conn.ok("clear")
        conn.ok("ping")


def test_hostile_headers(conn):
    """Fields whose object headers are damaged (bytes flipped, cut short, a continuation
    pointing at itself or past the end of the file) give a clear error naming the file, or
    the right values, and the daemon stays up."""
    folder = unique("hostile")
    (conn.dir / folder).mkdir()
    cases = []
    for libver in ("earliest", "latest"):
        path = conn.dir / folder / f"clean_{libver}.h5"
        want = write_header_samples(path, "<f8", 3, libver=libver)
        with h5py.File(path, "r") as f:
            addrs = {name: h5py.h5o.get_info(f[f"s1/{name}"].id).addr
                     for name in ("contig", "attrs")}
        raw = path.read_bytes()
        for start, stop in ((0, 4), (4, 16), (16, 40), (40, 120)):
            bad = bytearray(raw)
            for k in range(addrs["contig"] + start, addrs["contig"] + stop):
                bad[k] ^= 0xff
            cases.append((f"flip{start}_{libver}", bytes(bad)))
        cases.append((f"cut_{libver}", raw[:addrs["attrs"] + 20]))
        if libver == "earliest":
            msgs = header_messages(raw, addrs["attrs"])
            cont = [at for mtype, at in msgs if mtype == 0x10]
            assert cont, msgs  # the attributes overflowed the first chunk
            size = int.from_bytes(raw[addrs["attrs"] + 8:addrs["attrs"] + 12], "little")
            for name, target, length in (("self", addrs["attrs"] + 16, size),
                                         ("eof", len(raw) + 4096, 64),
                                         ("huge", 1 << 60, 1 << 40)):
                bad = bytearray(raw)
                bad[cont[0]:cont[0] + 16] = (target.to_bytes(8, "little")
                                             + length.to_bytes(8, "little"))
                cases.append((f"cont_{name}", bytes(bad)))
            # absurd dimensions: every byte of the dataspace's (the first message) sizes set
            bad = bytearray(raw)
            assert header_messages(raw, addrs["contig"])[0][0] == 1
            for k in range(addrs["contig"] + 32, addrs["contig"] + 48):
                bad[k] = 0xff
            cases.append(("dims", bytes(bad)))
    schema = "contig:\nattrs:\n"
    for name, data in cases:
        rel = f"{folder}/{name}.h5"
        (conn.dir / rel).write_bytes(data)
        hdr, frames = conn.raw("pack", data_schema=schema, experiment_schema=schema, paths=[rel])
        if "error" in hdr:
            err = hdr["error"]
            assert err["code"] in ("schema_error", "io_error", "type_error"), (name, err)
            assert rel in err["message"], (name, err)
        else:
            res = hdr["result"]
            for field in ("contig", "attrs"):
                assert np.array_equal(rows_of(conn, res["groups"][field]), want[field]), name
        conn.ok("clear")
        conn.ok("ping")
