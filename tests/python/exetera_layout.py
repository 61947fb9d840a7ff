"""ExeTera's layout made with h5py (docs/FORMAT.md, "ExeTera dataframes"): a field group
as ExeTera writes one, for the tests and the fuzz corpus."""
import h5py
import numpy as np

# ExeTera's `completed` mark: an enum of 1-byte integers
COMPLETED = h5py.enum_dtype({"FALSE": 0, "TRUE": 1}, basetype="i1")


def add_field(df, name, fieldtype, completed=True, chunks=1024, **data):
    """A field group as ExeTera writes it: its attributes, 1-D resizable chunked datasets,
    and the completed mark (True, False, or None for none) where ExeTera puts it."""
    g = df.create_group(name)
    g.attrs["chunksize"] = np.int64(1 << 20)
    g.attrs["timestamp"] = np.int64(1 << 20)
    g.attrs.create("fieldtype", fieldtype, dtype=h5py.string_dtype())
    kind, _, rest = fieldtype.partition(",")
    if kind in ("numeric", "categorical"):
        g.attrs.create("nformat", rest, dtype=h5py.string_dtype())
    if kind == "fixedstring":
        g.attrs["strlen"] = np.int64(int(rest))
    for dname, arr in data.items():
        ds = g.create_dataset(dname, data=arr, maxshape=(None,), chunks=(chunks,))
        marked = dname in ("index", "values") if kind != "indexedstring" else True
        if completed is not None and marked and dname != "key_values" and dname != "key_names":
            ds.attrs.create("completed", 1 if completed else 0, dtype=COMPLETED)
    return g


def indexed(strs):
    raw = [s.encode() for s in strs]
    index = np.cumsum([0] + [len(b) for b in raw]).astype("<i8") if raw else np.zeros(0, "<i8")
    return {"index": index, "values": np.frombuffer(b"".join(raw), np.uint8)}


def categorical(codes, key_names, key_values, dtype):
    return {"values": np.array(codes, dtype),
            "key_values": np.array(key_values, np.int8),
            "key_names": np.array(key_names, dtype=h5py.string_dtype())}
