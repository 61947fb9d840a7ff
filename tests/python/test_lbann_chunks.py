"""pack's chunked and deflated fields beyond test_lbann's layouts: the fast paths of the
locales' reading (a chunk inflated in place, four channels repacked in registers) and
which fields the probe reads from their headers, each checked bit for bit against numpy
and h5py."""
import zlib

import h5py
import numpy as np
import pytest

from wire import unique
from test_lbann import pack, rows_of


FOUR_CHANNELS = """
img:
  metadata:
    dims: [7, 9]
    channels: 4
    layout: hwc
    transpose: chw
    scale: [0.5, 2.0, 0.25, -4.0]
    bias: [-1.0, 0.0, 1.0, 0.5]
    ordering: 0
"""


@pytest.mark.parametrize("storage", ["contiguous", "gzip_rows"])
def test_four_channels_repacked(conn, storage):
    """float32 images of four channels (63 pixels: whole groups of four and a rest)
    normalized per channel in double and repacked channels first, bit for bit as numpy
    does it; deflated in chunks of whole rows (two chunks that are runs of the field's
    bytes, one at its edge that is not) as contiguous."""
    folder = unique(f"four_{storage}")
    (conn.dir / folder).mkdir()
    rng = np.random.default_rng(4)
    imgs = rng.normal(size=(3, 7, 9, 4)).astype(np.float32) * 50
    kw = {} if storage == "contiguous" else {"chunks": (3, 9, 4), "compression": "gzip"}
    with h5py.File(conn.dir / folder / "s.h5", "w") as f:
        for i in range(3):
            f.create_group(f"s{i}").create_dataset("img", data=imgs[i], **kw)
    res, _ = pack(conn, data_schema=FOUR_CHANNELS, experiment_schema=FOUR_CHANNELS,
                  paths=[f"{folder}/s.h5"])
    x = imgs.reshape(3, 63, 4).astype(np.float64)
    y = (x * [0.5, 2.0, 0.25, -4.0] + [-1.0, 0.0, 1.0, 0.5]).astype(np.float32)
    want = y.transpose(0, 2, 1).reshape(3, -1)
    got = rows_of(conn, res["groups"]["img"])
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()
    conn.ok("clear")


def test_one_field_chunks_read_by_the_locales(conn):
    """Samples of a single field (and a field alone under its parent group) have their
    chunks found by the probe and inflated by the locales, as samples of many fields do:
    a damaged stream is the locales' error, and the clean file reads as h5py reads it."""
    folder = unique("one_field")
    (conn.dir / folder).mkdir()
    rng = np.random.default_rng(12)
    imgs = rng.random((2, 8, 9, 4), dtype=np.float32)
    for field in ("img", "g/img"):
        clean = conn.dir / folder / "clean.h5"
        with h5py.File(clean, "w") as f:
            for i in range(2):
                f.create_dataset(f"s{i}/{field}", data=imgs[i], chunks=(4, 9, 4),
                                 compression="gzip")
            info = f[f"s1/{field}"].id.get_chunk_info(1)
        schema = f"{field}:\n  metadata: {{ordering: 0}}\n" if field == "img" else \
            "g:\n  img:\n    metadata: {ordering: 0}\n"
        res, _ = pack(conn, data_schema=schema, experiment_schema=schema,
                      paths=[f"{folder}/clean.h5"])
        group = next(iter(res["groups"].values()))
        assert rows_of(conn, group).tobytes() == imgs.reshape(2, -1).tobytes(), field
        conn.ok("clear")
        bad = bytearray(clean.read_bytes())
        for k in range(info.byte_offset + 2, info.byte_offset + info.size - 4):
            bad[k] ^= 0x5a
        (conn.dir / folder / "bad.h5").write_bytes(bytes(bad))
        err = conn.fail("pack", data_schema=schema, experiment_schema=schema,
                        paths=[f"{folder}/bad.h5"])
        assert "is damaged: not a valid deflate stream" in err["message"], (field, err)
    conn.ok("ping")


def test_chunks_inflated_in_pairs(conn):
    """A field's deflated chunks of 1 KiB or more are inflated two at a time: an odd number
    of them (the last alone), literal-heavy, match-heavy and constant data, gzip levels 1 and
    9, shuffled, and a chunk whose deflate the filter mask skips between two that are not,
    all read as h5py reads them; a damaged stream, or one that inflates to less than a
    chunk, is an error naming that chunk's byte, whichever of a pair it is."""
    folder = unique("pairs")
    (conn.dir / folder).mkdir()
    rng = np.random.default_rng(23)
    imgs = np.stack([rng.random((40, 16, 4), dtype=np.float32),
                     np.tile(np.arange(64, dtype=np.float32), 40).reshape(40, 16, 4) % 7,
                     np.zeros((40, 16, 4), np.float32)])
    schema = "img:\n  metadata: {ordering: 0}\n"
    want = imgs.reshape(3, -1).tobytes()
    for kw in ({"compression": "gzip", "compression_opts": 1},
               {"compression": "gzip", "compression_opts": 9},
               {"compression": "gzip", "shuffle": True}):
        path = conn.dir / folder / "s.h5"
        with h5py.File(path, "w") as f:
            for i in range(3):  # chunks of 2 KiB: 5 of them
                f.create_dataset(f"s{i}/img", data=imgs[i], chunks=(8, 16, 4), **kw)
            if kw.get("shuffle"):  # chunk 2 of s0 stored shuffled only (mask: no deflate)
                plane = imgs[0, 16:24].reshape(-1).view(np.uint8).reshape(-1, 4).T
                f["s0/img"].id.write_direct_chunk((16, 0, 0), plane.tobytes(), filter_mask=2)
        res, _ = pack(conn, data_schema=schema, experiment_schema=schema,
                      paths=[f"{folder}/s.h5"])
        assert rows_of(conn, res["groups"]["img"]).tobytes() == want, kw
        conn.ok("clear")
    with h5py.File(path, "r") as f:
        chunks = [f["s1/img"].id.get_chunk_info(k) for k in range(5)]
    clean = path.read_bytes()
    for k in (0, 1, 4):  # the first and second of a pair, the last alone
        bad = bytearray(clean)
        c = chunks[k]
        for at in range(c.byte_offset + 2, c.byte_offset + c.size - 4):
            bad[at] ^= 0x5a
        (conn.dir / folder / "bad.h5").write_bytes(bytes(bad))
        err = conn.fail("pack", data_schema=schema, experiment_schema=schema,
                        paths=[f"{folder}/bad.h5"])
        assert f"chunk at byte {c.byte_offset} of the file is damaged" in err["message"], err
        assert "sample 's1'" in err["message"], err
    # a whole stream, but of a chunk's bytes less 8: the second of a pair
    with h5py.File(path, "r+") as f:
        part = imgs[2, 8:16].reshape(-1).view(np.uint8).reshape(-1, 4).T.tobytes()[:-8]
        f["s2/img"].id.write_direct_chunk((8, 0, 0), zlib.compress(part, 6), filter_mask=0)
        at = f["s2/img"].id.get_chunk_info(1).byte_offset
    err = conn.fail("pack", data_schema=schema, experiment_schema=schema,
                    paths=[f"{folder}/s.h5"])
    assert f"chunk at byte {at} of the file is damaged: it does not inflate to a whole chunk" \
        in err["message"], err
    conn.ok("ping")
