"""The h5ark Python package reading ExeTera files against a real daemon: read_hdf gives an
ExeTera dataframe as a DataFrame whose columns carry `fieldtype` and `completed`, a field
alone as the class it reads as, ranges, warnings for fields not completed (as `.warnings`
and as H5arkWarning), errors as H5arkError subclasses, to_pandas, and ls's field entries.
Files are made with h5py in ExeTera's layout (test_exetera.py), and ExeTera's own file is
read too when its fixtures are present."""
import shutil
import warnings

import h5py
import numpy as np
import pytest

from wire import unique
from exetera_layout import add_field, categorical, indexed

import h5ark


@pytest.fixture
def sub(daemon):
    name = unique("pyex")
    (daemon.data_dir / name).mkdir()
    return name


def make_file(path):
    with h5py.File(path, "w") as f:
        df = f.create_group("df")
        add_field(df, "age", "numeric,int32", values=np.array([30, 0, -1], np.int32))
        add_field(df, "name", "indexedstring", **indexed(["ann", "", "日本"]))
        add_field(df, "status", "categorical,int16",
                  **categorical([100, 0, 1], ["", "no", "big"], [0, 1, 100], np.int16))
        add_field(df, "code", "fixedstring,3", values=np.array([b"ab", b"xyz", b""], "S3"))
        add_field(df, "ts", "timestamp", completed=None,
                  values=np.array([0.0, 1.5, 1643889601.123456]))
        other = f.create_group("other")
        add_field(other, "flag", "numeric,bool", completed=False,
                  values=np.array([True, False]))


def test_read_dataframe(client, daemon, sub):
    make_file(daemon.data_dir / sub / "s.h5")
    with pytest.warns(h5ark.H5arkWarning, match="'df/ts'"):
        got = client.read_hdf(f"{sub}/s.h5", datasets="df")
    df = got["df"]
    assert isinstance(df, h5ark.DataFrame)
    assert df.columns == ["age", "code", "name", "status", "ts"] and len(df) == 3
    assert df.fieldtypes == {"age": "numeric,int32", "code": "fixedstring,3",
                             "name": "indexedstring", "status": "categorical,int16",
                             "ts": "timestamp"}
    assert [df[c].completed for c in df.columns] == [True, True, True, True, None]
    assert [w for w in got.warnings if "'df/ts'" in w and "not completed" in w], got.warnings
    assert isinstance(df["age"], h5ark.pdarray) and df["age"].dtype == np.int32
    assert isinstance(df["name"], h5ark.Strings) and isinstance(df["code"], h5ark.Strings)
    assert isinstance(df["status"], h5ark.Categorical)
    assert df["age"].to_ndarray().tolist() == [30, 0, -1]
    assert df["name"].to_list() == ["ann", "", "日本"]
    assert df["code"].to_list() == ["ab", "xyz", ""]
    assert df["status"].to_list() == ["big", "", "no"]
    assert df["ts"].to_ndarray().tolist() == [0.0, 1.5, 1643889601.123456]
    assert "fieldtype='numeric,int32'" in repr(df["age"])
    pdf = df.to_pandas()
    assert list(pdf.columns) == df.columns and pdf["status"].dtype.name == "category"
    assert pdf["name"].tolist() == ["ann", "", "日本"]
    # an Arkouda object carries neither
    assert df.fieldtype is None and df.completed is None
    plain = client.arange(3)
    assert plain.fieldtype is None and plain.completed is None
    assert "fieldtype" not in repr(plain)


def test_read_fields_and_ranges(client, daemon, sub):
    make_file(daemon.data_dir / sub / "s.h5")
    shutil.copy(daemon.data_dir / sub / "s.h5", daemon.data_dir / sub / "t.h5")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every field read here is completed
        got = client.read_hdf([f"{sub}/s.h5", f"{sub}/t.h5"],
                              datasets=["df/name", "df/status", "df/age"], start=2, stop=5)
    assert got["df/name"].to_list() == ["日本", "ann", ""]
    assert got["df/name"].fieldtype == "indexedstring" and got["df/name"].completed is True
    assert got["df/status"].to_list() == ["no", "big", ""]
    assert got["df/age"].to_ndarray().tolist() == [-1, 30, 0]
    assert got.warnings == []
    # the least mark of the files: False, named in the warnings
    with pytest.warns(h5ark.H5arkWarning):
        flag = client.read_hdf(f"{sub}/s.h5", datasets="other/flag")["other/flag"]
    assert flag.completed is False and flag.fieldtype == "numeric,bool"
    assert flag.to_ndarray().tolist() == [True, False]
    # whole files: both dataframes
    with pytest.warns(h5ark.H5arkWarning):
        every = client.read_hdf(f"{sub}/s.h5")
    assert sorted(every) == ["df", "other"]
    assert every["other"].fieldtypes == {"flag": "numeric,bool"}


def test_errors(client, daemon, sub):
    with h5py.File(daemon.data_dir / sub / "bad.h5", "w") as f:
        g = f.create_group("df")
        add_field(g, "nul", "fixedstring,3", values=np.array([b"a\0b"], "S3"))
        add_field(g, "odd", "numeric,complex128", values=np.zeros(1))
        add_field(g, "short", "indexedstring", index=np.array([0, 9]),
                  values=np.frombuffer(b"ab", np.uint8))
    rel = f"{sub}/bad.h5"
    # a NUL inside a fixed string is data, not an error
    assert client.read_hdf(rel, datasets="df/nul")["df/nul"].to_list() == ["a\0b"]
    with pytest.raises(h5ark.ObjectTypeError, match="df/odd"):
        client.read_hdf(rel, datasets="df/odd")
    with pytest.raises(h5ark.SchemaError, match="df/short"):
        client.read_hdf(rel, datasets="df/short")
    assert client.ping()


def test_ls(client, daemon, sub):
    make_file(daemon.data_dir / sub / "s.h5")
    entries = {e["path"].lstrip("/"): e for e in client.ls(f"{sub}/s.h5", recursive=True)}
    assert entries["df"]["objtype"] == "dataframe" and entries["df"]["kind"] == "group"
    e = entries["df/status"]
    assert (e["kind"], e["fieldtype"], e["length"], e["completed"], e["objtype"]) == (
        "field", "categorical,int16", 3, True, "categorical")
    assert entries["df/ts"]["completed"] is None
    assert entries["other/flag"]["completed"] is False
    assert not [p for p in entries if p.startswith("df/name/")]


def test_exetera_file(client, daemon, sub, exetera_fixtures):
    """ExeTera's own file, when its fixtures are present."""
    shutil.copy(exetera_fixtures / "session.hdf5", daemon.data_dir / sub / "session.hdf5")
    with pytest.warns(h5ark.H5arkWarning, match="skipped.*'people'"):
        got = client.read_hdf(f"{sub}/session.hdf5")
    assert sorted(got) == ["people_filtered", "small_df"]
    df = got["small_df"]
    assert df.fieldtypes == {"a": "numeric,int32", "b": "indexedstring", "c": "categorical,int8"}
    assert all(df[c].completed is True for c in df.columns)
    assert df.to_pandas().to_dict("list") == {"a": [5, 6, 7, 8], "b": ["w", "", "yy", "ü"],
                                              "c": ["x", "y", "y", "x"]}
