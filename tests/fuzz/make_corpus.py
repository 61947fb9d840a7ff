"""Seed corpora for the fuzz targets: request headers the tests send, and small HDF5
files in Arkouda's and ExeTera's layouts (plus the fixtures of both when ../shared is
there)."""
import base64
import json
import pathlib
import shutil
import struct
import sys
import zlib

import h5py
import msgpack
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from exetera_layout import add_field  # noqa: E402

out = pathlib.Path(sys.argv[1])
(out / "request").mkdir(parents=True, exist_ok=True)
(out / "storage").mkdir(parents=True, exist_ok=True)

headers = [
    ({"v": 1, "id": 1, "cmd": "ping"}, []),
    ({"v": 1, "cmd": "getconfig"}, []),
    ({"v": 1, "cmd": "create", "args": {"dtype": "int16", "size": 9, "fill": "arange", "stop": 9}}, []),
    ({"v": 1, "cmd": "create", "args": {"dtype": "float32", "size": 5, "fill": "linspace",
                                        "start": 0, "stop": 1, "name": "x"}}, []),
    ({"v": 1, "cmd": "put", "args": {"dtype": "int32", "shape": [2]},
      "buffers": [{"name": "values", "nbytes": 8}]}, [b"\x01\x00\x00\x00\x02\x00\x00\x00"]),
    ({"v": 1, "cmd": "put", "args": {"objtype": "strings", "shape": [2]},
      "buffers": [{"name": "segments", "nbytes": 16}, {"name": "values", "nbytes": 5}]},
     [struct.pack("<qq", 0, 2), b"a\x00bc\x00"]),
    ({"v": 1, "cmd": "get", "args": {"name": "x", "start": 1}}, []),
    ({"v": 1, "cmd": "info", "args": {"names": ["x"]}}, []),
    ({"v": 1, "cmd": "delete", "args": {"names": ["x"]}}, []),
    ({"v": 1, "cmd": "tohdf", "args": {"names": ["x"], "path": "f.h5", "file_type": "single"}}, []),
    ({"v": 1, "cmd": "readhdf", "args": {"paths": ["f*.h5"], "tag_data": True}}, []),
    ({"v": 1, "cmd": "lshdf", "args": {"path": "f.h5", "recursive": True}}, []),
    ({"v": 1, "cmd": "readhdf", "args": {"paths": ["f.h5"], "start": 2, "stop": 5,
                                         "allow_errors": True}}, []),
    ({"v": 1, "cmd": "tohdf", "args": {"names": ["x"], "path": "e.h5", "format": "exetera",
                                       "group": "df", "fieldtype": "numeric,int32"}}, []),
    ({"v": 1, "cmd": "writepart", "args": {"path": "e.h5", "field": "df/x", "name": "x"}}, []),
    ({"v": 1, "cmd": "complete", "args": {"path": "e.h5", "field": "df/x"}}, []),
]
for i, (h, frames) in enumerate(headers):
    packed = msgpack.packb(h)
    payload = b"".join(frames)
    data = bytes([1 if payload else 0]) + struct.pack("<H", len(packed)) + packed + payload
    (out / "request" / f"seed{i:02d}").write_bytes(data)

def meta(obj, objtype):
    obj.attrs.create("ObjType", objtype, dtype="<i8")
    obj.attrs.create("file_version", 2.0, dtype="<f4")
    obj.attrs.create("arkouda_version", np.bytes_("v2026.07"))

with h5py.File(out / "storage" / "arkouda.h5", "w", libver="earliest") as f:
    f.attrs.create("File_Format", 0, dtype="<i8")
    meta(f.create_dataset("ints", data=np.arange(20, dtype="<i8")), 1)
    b = f.create_dataset("flags", data=np.array([1, 0, 1], dtype="u1"))
    meta(b, 1)
    b.attrs.create("isBool", 1, dtype="<i8")
    g = f.create_group("words")
    meta(g, 2)
    meta(g.create_dataset("values", data=np.frombuffer(b"ab\x00\x00cde\x00", "u1")), 1)
    meta(g.create_dataset("segments", data=np.array([0, 3, 4], "<i8")), 1)
with h5py.File(out / "storage" / "plain.h5", "w") as f:
    f.create_dataset("f32", data=np.linspace(0, 1, 10, dtype="<f4"))
    f.create_dataset("chunked", data=np.arange(100, dtype="<u2"), chunks=(10,), compression="gzip")

with h5py.File(out / "storage" / "exetera.h5", "w") as f:
    df = f.create_group("df")
    add_field(df, "n", "numeric,int32", chunks=4, values=np.arange(6, dtype="<i4"))
    add_field(df, "t", "timestamp", chunks=4, values=np.linspace(0, 5, 6))
    add_field(df, "s", "indexedstring", chunks=4, index=np.array([0, 1, 1, 3, 4, 4, 6], "<i8"),
              values=np.frombuffer(b"abcdef", "u1"))
    add_field(df, "c", "fixedstring,2", chunks=4,
              values=np.array([b"ab", b"c", b"", b"de", b"f", b"gh"]))
    add_field(df, "k", "categorical,int8", chunks=4, values=np.array([0, 1, 1, -1, 0, 1], "i1"),
              key_values=np.array([0, 1], "i1"),
              key_names=np.array(["no", "yes"], dtype=h5py.string_dtype()))
# awkward 2's layout (form and length attributes, typed buffers) and awkward0's (schema.json
# and byte blobs)
with h5py.File(out / "storage" / "awkward.h5", "w") as f:
    g = f.create_group("ak2")
    g.attrs["form"] = json.dumps({"class": "ListOffsetArray", "offsets": "i64", "form_key": "node0",
                                  "content": {"class": "NumpyArray", "primitive": "int64",
                                              "form_key": "node1"}})
    g.attrs["length"] = 2
    g["node0-offsets"] = np.array([0, 1, 3], "<i8")
    g["node1-data"] = np.arange(3, dtype="<i8")
    g = f.create_group("ak0")
    schema = {"awkward0": "0.15.5", "schema": {"call": ["awkward0", "JaggedArray", "fromcounts"],
              "args": [{"call": ["awkward0", "numpy", "frombuffer"], "args": [
                  {"read": "1"}, {"dtype": "int64"}, {"json": 2}]},
                  {"call": ["awkward0", "numpy", "frombuffer"], "args": [
                      {"read": "2"}, {"dtype": "float64"}, {"json": 3}]}]}}
    g["schema.json"] = np.frombuffer(json.dumps(schema).encode(), "u1")
    g["1"] = np.frombuffer(np.array([1, 2], "<i8").tobytes(), "u1")
    g["2"] = np.frombuffer(np.arange(3, dtype="<f8").tobytes(), "u1")
fixtures = pathlib.Path(__file__).resolve().parents[3] / "shared" / "fixtures"
for family in ("arkouda", "exetera", "awkward2", "awkward0"):
    shared = fixtures / family
    if shared.is_dir():
        for p in shared.iterdir():
            if p.is_file() and p.suffix not in (".md", ".json"):
                shutil.copy(p, out / "storage" / f"{family}-{p.name}")
# awkward forms: the JSON, a NUL, a length byte, then bytes the buffers are cut from
(out / "form").mkdir(parents=True, exist_ok=True)
node = lambda prim, key: {"class": "NumpyArray", "primitive": prim, "form_key": key}
forms = [
    node("int64", "n0"),
    {"class": "ListOffsetArray", "offsets": "i64", "content": node("float32", "n1"), "form_key": "n0"},
    {"class": "ListArray", "starts": "i32", "stops": "i32", "content": node("uint8", "n1"),
     "form_key": "n0"},
    {"class": "RegularArray", "size": 3, "content": node("int16", "n1"), "form_key": "n0"},
    {"class": "RecordArray", "fields": ["x", "y"], "contents": [node("int8", "n1"),
     {"class": "IndexedOptionArray", "index": "i64", "content": node("bool", "n3"),
      "form_key": "n2"}], "form_key": "n0"},
    {"class": "UnionArray", "tags": "i8", "index": "i64", "form_key": "n0",
     "contents": [node("float64", "n1"), {"class": "ByteMaskedArray", "mask": "i8",
                  "valid_when": True, "content": node("int32", "n3"), "form_key": "n2"}]},
    {"class": "BitMaskedArray", "mask": "u8", "valid_when": False, "lsb_order": True,
     "content": {"class": "UnmaskedArray", "content": node("complex128", "n2")}, "form_key": "n0"},
    {"class": "ListOffsetArray", "offsets": "i64", "form_key": "n0",
     "content": {"class": "EmptyArray"}, "parameters": {"__array__": "x"}},
]
forms.append({"awkward0": "0.15.5", "schema": {"call": ["awkward0", "JaggedArray", "fromcounts"],
              "args": [{"call": ["awkward0", "numpy", "frombuffer"], "args": [{"read": "1"},
              {"dtype": "int64"}, {"json": 3}]}, {"function": ["os", "system"]},
              {"tuple": [{"python": "gASV"}]}, {"dict": {"k": {"ref": 1}}}]}})
fb = lambda key, dt, n: {"call": ["awkward0", "numpy", "frombuffer"],
                         "args": [{"read": key}, {"dtype": dt}, {"json": n}]}
forms += [
    {"awkward0": "0.15.5", "schema": {"call": ["awkward0", "JaggedArray", "fromcounts"],
                                      "args": [fb("1", "uint8", 4), fb("1", ">i2", 8)]}},
    {"awkward0": "0.15.5", "schema": {"call": ["awkward0", "Table", "frompairs"], "args": [
        {"pairs": [["x", fb("1", "int8", 3)], ["y", {"call": ["awkward0", "MaskedArray"],
                   "args": [fb("1", "bool", 3), fb("1", "<u2", 3), {"json": True}]}]]},
        {"json": 0}]}},
    {"awkward0": "0.15.5", "schema": {"call": ["awkward0", "UnionArray", "fromtags"], "args": [
        fb("1", "uint8", 2), {"list": [fb("1", "int32", 2), {"call": [
            "awkward0", "StringArray", "fromcounts"], "args": [fb("1", "uint8", 2),
            fb("1", "uint8", 8), {"json": "utf-8"}]}]}]}},
    {"awkward0": "0.15.5", "schema": fb("1", ["<u2", [2]], 2) | {"id": 3}},
    {"awkward0": "0.15.5", "schema": {"call": ["awkward0", "numpy", "frombuffer"], "args": [
        {"call": ["zlib", "decompress"], "args": [{"read": "1"}]}, {"dtype": "int64"},
        {"json": 1}]}},
] + [{"awkward0": "0.15.5", "schema": {"call": ["awkward0", "numpy", "frombuffer"], "args": [
        {"call": codec, "args": [{"read": "1"}]}, {"dtype": "uint8"}, {"json": 2}]}}
     for codec in (["lzma", "decompress"], ["lz4.block", "decompress"])]
# shared arrays (copied per use), chunked arrays (joined), record dtypes
jag = {"call": ["awkward0", "JaggedArray", "fromcounts"], "args": [fb("1", "uint8", 3) | {"id": 7},
                                                                   fb("1", "int16", 6)]}
forms += [
    {"awkward0": "0.15.5", "schema": {"call": ["awkward0", "Table", "frompairs"], "args": [
        {"pairs": [["a", jag | {"id": 8}], ["b", {"ref": 8}], ["c", {"ref": 7}]]}]}},
    {"awkward0": "0.15.5", "schema": {"call": ["awkward0", "ChunkedArray"], "args": [
        {"list": [jag, {"call": ["awkward0", "JaggedArray", "fromoffsets"],
                        "args": [fb("1", "uint8", 2), fb("1", "int16", 4)]}]}, {"json": [3, 1]}]}},
    {"awkward0": "0.15.5", "schema": {"call": ["awkward0", "ChunkedArray"], "args": [
        {"list": [fb("1", "<f4", 2), fb("1", "<f4", 3)]}]}},
    {"awkward0": "0.15.5", "schema": fb("1", [["a", ">i2"], ["b", [["x", "uint8"]]],
                                             ["c", "<f4", [2]]], 2)},
]
for i, f in enumerate(forms):
    tail = bytes([3]) + bytes(range(0, 64, 1))
    (out / "form" / f"seed{i:02d}").write_bytes(json.dumps(f).encode() + b"\0" + tail)
# found by fuzz_form: an .lzma header asking for a 2 GiB dictionary (refused, not allocated)
(out / "form" / "lzma-dictionary").write_bytes(base64.b64decode(
    "eyJhd2t3YXJkMCI6ICIwLjE1LjUiLCAic2NoZW1hIjogeyJjYWxsIjogWyJhd2t3YXJkMCIsICJudW1weSIsICJmcm9t"
    "YnVmZmVyIl0sICJhcmdzIjogW3siY2FsbCI6IFsibHptYSIsICJkZWNvbXByZXNzIl0sICJhcmdzIjogW3sicmVhZCI6"
    "ICIxIn1dfSAseyJkdHlwZSI6ICJ1aW50OCJ9LCB7Impzb24iOiAxfV19fQAAAAAAgAAAACAAAAAAAAAAAAAAAAAAAAAA"
    "AAAAAAAAAAAAPT4/"))


def write_seeds(target, seeds):
    """Each of `seeds` (bytes) as a file of the corpus of `target`."""
    (out / target).mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(seeds):
        (out / target / f"seed{i:02d}").write_bytes(seed)


# pack: a data schema, NUL, an experiment schema, NUL, a field's bytes; and sample lists
write_seeds("lbann", [
    b"img:\n  metadata:\n    dims: [2, 2]\n    channels: 2\n    layout: hwc\n"
    b"    transpose: chw\n    scale: [0.5, 2.0]\n    bias: [1, 0]\n    ordering: 0\n"
    b"x:\n  metadata: {ordering: 1, scale: 0.1, bias: -1.0}\n\0"
    b"img:\n  metadata: {pack: samples, coerce: float}\nx:\n  metadata: {pack: samples}\n\0"
    + bytes(range(64)),
    b"a:\n  metadata:\n    ordering: 0\n  b:\n    c:\n    metadata: {bias: 1}\n\0a/b:\n\0",
    b"CONDUIT_HDF5_INCLUSION\n2 0 1\n.\nf.h5 2 0 RUN_ID/000000001 RUN_ID/000000002\n",
    b"CONDUIT_HDF5_EXCLUSION\n1 1 1\nbase\nf.h5 1 1 x\n",
    b"MULTI-SAMPLE_INCLUSION_V2\n1 1\n.\nf.h5 1 s0\n",
])
# token files (shared/SERVICE.md §1): old style, users with groups and quotas, and refused
write_seeds("tokens", [
    b"# comment\n\nw-tok write\nr-tok read\nplain\na-tok admin\n",
    b"alice-tok write user=alice groups=physics,chem quota.requests=2 quota.memory=1G\n"
    b"alice-ro read user=alice groups=bio quota.requests=2 quota.memory=1G\n"
    b"bob-tok user=bob groups=physics quota.disk=512M quota.objects=10\n"
    b"root-tok admin user=root\r\n",
    b"a user=a\nb read\n",
    b"a user=a quota.memory=1G\nb user=a quota.memory=2G\n",
    b"a user=a groups=x,,y colour=blue\n",
])
# object headers: settings (sizes of offsets and lengths, base address, the header's
# address: fuzz_ohdr.c) and a small file's bytes, a seed per dataset of every kind
(out / "ohdr").mkdir(parents=True, exist_ok=True)
seeds = 0
for libver in ("earliest", "latest"):
    for userblock in (0, 512):
        path = out / "ohdr" / "file.h5"
        kw = {"libver": libver, **({"userblock_size": userblock} if userblock else {})}
        with h5py.File(path, "w", **kw) as f:
            f["contig"] = np.arange(6, dtype=">i2").reshape(2, 3)
            f.create_dataset("chunked", data=np.arange(8.0), chunks=(4,))
            f.create_dataset("unwritten", shape=(3,), dtype="<f4")
            d = f.create_dataset("attrs", data=np.arange(3, dtype="u8"))
            f["after"] = np.zeros(2)  # the header cannot grow in place: a continuation
            for k in range(12):
                d.attrs[f"a{k}"] = np.arange(k + 1)
            plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            plist.set_layout(h5py.h5d.COMPACT)
            h5py.h5d.create(f.id, b"compact", h5py.h5t.IEEE_F64LE, h5py.h5s.create_simple((2,)),
                            plist).write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([1.0, 2.0]))
            addrs = [h5py.h5o.get_info(f[name].id).addr for name in f]
        raw = path.read_bytes()
        path.unlink()
        for addr in addrs:
            settings = bytes([2 | 2 << 2, userblock & 0xff, userblock >> 8, addr & 0xff,
                              addr >> 8 & 0xff, addr >> 16 & 0xff, 0, 0])
            (out / "ohdr" / f"seed{seeds:02d}").write_bytes(settings + raw)
            seeds += 1
# the HSDS endpoint's parser (fuzz_hsds.c): a part byte, a shape byte, then the text
(out / "hsds").mkdir(parents=True, exist_ok=True)
hsds = [
    b"\0\0/home/a.h5", b"\0\0/a/../b//c", b"\0\0YWxpY2U6c2VjcmV0",
    b"\1\x13[0:3:1,[1,2],4]", b"\1\x0a[1:,:]", b"\1\x02[[0,1],[1,0],0:5:2]",
    b"\2\x01" + bytes(16),
    b'\3\0{"type": "H5T_STD_I32LE", "shape": [2, 2], "maxdims": [0, 2], "value": [[1, 2], [3, 4]]}',
    b'\3\0{"type": {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": "H5T_STD_I8LE"},'
    b' {"name": "b", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": 3}}]},'
    b' "shape": [2], "value": [[1, "ab"], [2, "c"]]}',
    b'\3\0{"type": {"class": "H5T_STRING", "length": "H5T_VARIABLE"}, "shape": [3],'
    b' "value": ["x", "y", "zz"]}',
    b'\3\0{"type": {"class": "H5T_ENUM", "base": "H5T_STD_I8LE", "mapping": {"FALSE": 0,'
    b' "TRUE": 1}}, "shape": [], "value": true}',
    b'\3\0{"type": {"class": "H5T_ARRAY", "dims": [2], "base": "H5T_IEEE_F16LE"}, "shape": [1],'
    b' "value": [[1.5, 1e10]]}',
    b'\3\0{"type": {"class": "H5T_COMPOUND", "fields": [{"name": "n", "type": "H5T_STD_I32LE"},'
    b' {"name": "s", "type": {"class": "H5T_STRING", "length": "H5T_VARIABLE"}}]}, "shape": [2],'
    b' "value": [[1, "ab"], [2, ""]], "fields": "s:n"}',
    b'\3\0{"type": {"class": "H5T_VLEN", "base": "H5T_STD_I16"}, "shape": [3],'
    b' "value": [[1, 2], [], [3]]}',
]
for i, seed in enumerate(hsds):
    (out / "hsds" / f"seed{i:02d}").write_bytes(seed)
print(f"corpus in {out}")

# ACL files (.h5ark-acl): good ones and near misses; and an owners record
(out / "acl").mkdir(parents=True, exist_ok=True)
acls = [
    b'[{"subject": "alice", "read": true, "create": true, "update": true, "delete": true, '
    b'"readACL": true, "updateACL": true}]',
    b'[{"subject": "g:physics", "read": true}, {"subject": "default", "readACL": true}]',
    b'[{"subject": "bob"}, {"subject": "bob"}]',
    b'[{"subject": "b o b", "read": 1}]',
    b'{"subject": "alice"}',
    b'[]',
    # the owners' record (fuzz_acl feeds it the same bytes): a change a line, a torn tail
    b'alice\thome/alice/a.h5\nbob\tshared/p/r_LOCALE0000.h5\tshared/p/r_LOCALE0001.h5\n'
    b'\thome/alice/a.h5\nbob\thome/b',
]
for i, seed in enumerate(acls):
    (out / "acl" / f"seed{i:02d}").write_bytes(seed)
# pack's pair decoder (fuzz_inflate.c): a mode byte, two output sizes, then the streams'
# bytes; odd modes have zlib make the streams of the payloads (level, strategy, a flip)
pair_a, pair_b = bytes(range(256)) * 3, b"h5ark " * 120
write_seeds("inflate", [
    bytes([1, 0, 0, 0, 0]) + pair_a + pair_b,
    bytes([1 | 9 << 1, 0, 0, 0, 0]) + pair_b + pair_b,
    bytes([1 | 2 << 5, 0, 0, 0, 0]) + pair_a + pair_a,
    bytes([7, 5, 0, 0, 0]) + pair_a + pair_b,
    bytes([0, len(pair_b) & 255, len(pair_b) >> 8, len(pair_b) & 255, len(pair_b) >> 8])
    + zlib.compress(pair_b, 6) * 2,  # two streams as they come, of equal lengths
    bytes([0, len(pair_b) & 255, len(pair_b) >> 8, len(pair_b) & 255, len(pair_b) >> 8])
    + (zlib.compress(pair_b, 6) + b"x\x9c") * 2,  # bytes after each stream's Adler-32
])
