"""Every measure of the benchmark in one run, as one table: the daemon's figure, its
reference measured in the same run (the machine's raw limit, h5py, or the daemon itself
with one locale), and their ratio, median of the runs with min and max.

Run it from anywhere after building (bench/run uses the interpreter that has h5py):

    bench/run [--runs N] [--quick] [--only raw,h5py,small,range,exetera,awkward,writepart,memory,scaling,gzip,ranks,pack,packlayout,arkouda,checkpoint,hsds] [--netns]

The raw-socket and raw-I/O measures come from build/bench/h5ark-bench (C); the measures
against h5py, of many small files, of peak memory and of scaling with locales are made
here. bench/RESULTS.md says what each reference is.
"""
import argparse
import contextlib
import functools
import json
import math
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
import zlib

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
sys.path.insert(0, str(REPO / "client" / "python"))
try:  # --help answers without them; main() says which is missing
    import h5py
    import msgpack
    import numpy as np
    import zmq
    from conftest import block_bounds, h5_pdarray
    from daemons import Daemon, free_tcp_endpoint
    import h5ark
    import hsds_bench
    MISSING = None
except ImportError as e:
    MISSING = e

MIB = 1 << 20
RANGE_SMALL = 1 << 17  # rows of the small set of the ranged-read measure: 1 MiB
EX_RANGE = 1 << 17  # rows of the ExeTera ranged reads: 1 MiB of float64,
EX_RANGE_STR = 100_000  # and about 1 MiB of strings (10.5 bytes each on average)
EX_CHUNK = 1 << 20  # ExeTera's default chunksize: the rows of each write_part
WP_PART = 1 << 17  # rows of each part of the writepart stream: 1 MiB of float64


# ---- the table: one home for the statistics and their formatting ----

def at_least(x):
    return f">= {x}", lambda mine, ref, ratio: ratio >= x


def at_most(x):
    return f"<= {x}", lambda mine, ref, ratio: ratio <= x


# key -> (measure, reference, target text, whether the medians meet it), in table order.
# Every ratio is h5ark / reference, so throughputs want it high and latency and memory low.
def measures(a):
    size, keys = human_bytes(a.bytes), f"{a.keys / 1e6:g}M"
    small = f"{a.small_files:,} files x {a.small_elems:,} int64"
    return {
        "tohdf": (f"tohdf {size} int64, distributed", "write()+fsync, as many files",
                  *at_least(0.95)),
        "readhdf": ("readhdf of those files, warm", "pread() of the same files", *at_least(0.90)),
        "tohdf_h5py": (f"tohdf {size} int64, distributed", "h5py write, a file a locale",
                       *at_least(1.5)),
        "readhdf_h5py": ("readhdf of those files, warm", "h5py read of them + concatenate",
                         *at_least(2)),
        "putget": (f"put + get {size} over tcp", "raw ZeroMQ stream, 1 MiB frames",
                   *at_least(0.80)),
        "ping_median": ("ping round trip, median", "raw ZeroMQ echo, same bytes", *at_most(1.5)),
        "ping_p99": ("ping round trip, p99", "raw ZeroMQ echo, same bytes",
                     "< 1 ms", lambda mine, ref, ratio: mine < 1000),
        "small": (f"readhdf of {small}, a glob", "h5py loop: open, read, close, concat",
                  *at_least(5)),
        "limit_small": (f"machine: HDF5 C loop, {min(a.locales, 8)} processes",
                        "h5py loop: open, read, close, concat", "(limit)", None),
        "range_size": (f"readhdf {a.range_rows:,} rows of a {human_bytes(a.range_bytes)} set, cold",
                       f"the same rows of a {human_bytes(RANGE_SMALL * 8)} set", *at_most(1.5)),
        "range_h5py": (f"readhdf {a.range_rows:,} rows of a {human_bytes(a.range_bytes)} set, cold",
                       "h5py: open each file, slice, concat", *at_most(1.5)),
        "exetera_1": (f"readhdf ExeTera dataframe, {a.ex_rows / 1e6:g}M rows, 4 fields",
                      "h5py: each dataset read_direct, 1 process", *at_least(1.0)),
        "exetera_n": (f"readhdf ExeTera dataframe, {a.ex_rows / 1e6:g}M rows, 4 fields",
                      f"h5py: the same in {a.locales} processes", *at_least(1.0)),
        "exetera_range_num": (f"readhdf {EX_RANGE:,} rows of its float64 field",
                              "h5py: open, slice, close", *at_most(1.5)),
        "exetera_range_str": (f"readhdf {EX_RANGE_STR:,} rows of its indexed strings",
                              "h5py: open, slice index + values", *at_most(1.5)),
        **awkward_rows(a),
        **writepart_measures(a),
        "mem_tohdf": (f"peak memory: create + tohdf {size}", "the data size",
                      "<= 1.1x + 64 MiB", lambda mine, ref, ratio: mine <= 1.1 * ref + 64),
        "mem_readhdf": (f"peak memory: readhdf {size}", "the data size",
                        "<= 1.1x + 64 MiB", lambda mine, ref, ratio: mine <= 1.1 * ref + 64),
        "groupby_wide": (f"groupby {keys} int64, full range, 2 loc", "the same, 1 locale",
                         *at_least(1.7)),
        "groupby_narrow": (f"groupby {keys} int64 in [0, 1000), 2 loc", "the same, 1 locale",
                           *at_least(1.7)),
        "gzip": (f"tohdf gzip {keys} int64 in [0, 1000), 2 loc", "the same, 1 locale",
                 *at_least(1.7)),
        "gzip_speed": (f"tohdf gzip {keys} int64 in [0, 1000), {a.locales} loc",
                       f"zlib 4 in {a.locales} threads + h5py chunk writes", *at_least(1.5)),
        "gzip_deflate": (f"tohdf gzip {keys} int64 in [0, 1000), {a.locales} loc",
                         f"zlib 4 alone in {a.locales} threads", "(none)", None),
        "gzip_ratio": ("compression ratio of those chunks", "zlib level 4, same chunks",
                       *at_least(1.0)),
        "gzip_baseline": (f"tohdf gzip {keys} int64 in [0, 1000), {a.locales} loc",
                          "the same, the --baseline daemon", *at_least(1.5)),
        "gzip_read": ("readhdf of that file, warm", "h5py read of it", *at_least(2)),
        "gzip_read_baseline": ("readhdf of that file, warm", "the same, the --baseline daemon",
                               "(none)", None),
        "pack": (f"pack {a.pack_files * a.pack_per:,} samples (64x64x4 float32 + 4 scalars), "
                 f"{a.pack_files} files", "h5py read_direct loop + numpy transforms",
                 *at_least(10)),
        "pack_again": (f"pack the same {a.pack_files * a.pack_per:,} samples again, files "
                       "unchanged", "h5py read_direct loop + numpy transforms", "(none)", None),
        **{f"packlayout_{name}": (f"pack {a.layout_files * a.pack_per:,} samples, fields {how}",
                                  "h5py read_direct loop + numpy transforms", *at_least(10))
           for name, how, _, _ in PACK_LAYOUTS},
        **ranks_rows(a),
        "ak_upload": (f"Arkouda array<int64,1> upload {size}", "native put, same bytes",
                      *at_least(0.8)),
        "ak_download": (f"Arkouda tondarray<int64,1> {size}", "native get, same bytes",
                        *at_least(0.8)),
        "ak_upload_raw": (f"Arkouda array<int64,1> upload {size}",
                          "raw ZeroMQ REQ/REP, the bytes as one frame", *at_least(0.8)),
        "ak_download_raw": (f"Arkouda tondarray<int64,1> {size}",
                            "raw ZeroMQ REQ/REP, the bytes as one frame", *at_least(0.8)),
        "ak_ping": ("Arkouda note round trip, median", "native ping, REQ socket",
                    *at_most(1.5)),
        "ak_binop": (f"Arkouda binopvv<int64,int64,1> + of two {size}", "native binop, same arrays",
                     *at_least(0.8)),
        "ak_sum": (f"Arkouda sumAll<int64,1> of {size}", "native reduce sum, same array",
                   *at_least(0.8)),
        "checkpoint": (f"checkpoint {size} int64 + 1/8 of it in strings, {a.locales} loc",
                       "dd bs=16M conv=fsync, as many bytes, a process a file",
                       *at_least(0.8)),
        "checkpoint_restore": ("restore of that checkpoint (load_checkpoint), cold",
                               "pread() of its files into fresh memory, a thread a file, cold",
                               *at_least(0.8)),
        **hsds_bench.rows(a),
        # what two threads of this machine do against one, on the work above: its limit
        "limit_memory": ("machine: memory streaming, 2 threads", "the same, 1 thread",
                         "(limit)", None),
        "limit_zlib": ("machine: zlib level 4, 2 threads", "the same, 1 thread",
                       "(limit)", None),
    }


def awkward_rows(a):
    """The rows of the awkward group: the file uncompressed and with gzip, each against
    h5py in one process and in a.locales processes."""
    rows = {}
    for gz, how in (("", "uncompressed"), ("_gz", "gzip 4 + shuffle")):
        what = (f"readhdf awkward 2 layout, {a.ak_values / 1e6:g}M float64 in "
                f"{a.ak_lists / 1e6:g}M lists, {how}")
        rows[f"awkward{gz}_1"] = (what, "h5py: both buffers read_direct, 1 process",
                                  *at_least(1.0))
        rows[f"awkward{gz}_n"] = (what, f"h5py: the same in {a.locales} processes",
                                  *at_least(1.0))
    return rows


def writepart_measures(a):
    """The rows of the writepart group, three for each size of stream."""
    rows = {}
    for total in a.wp_sizes:
        stream = f"writepart {human_bytes(total)} float64, 1 MiB parts"
        rows[f"writepart_{total}"] = (f"{stream}, new file", "write()+fsync a part, 1 thread",
                                      "(none)", None)
        rows[f"writepart_h5py_{total}"] = (f"{stream}, new file",
                                           "h5py resize+write+flush, no fsync", "(none)", None)
        rows[f"writepart_last_{total}"] = (f"{stream}: the last part",
                                           "write()+fsync: the last part", "(none)", None)
    return rows


RANKS_LOCALES = 6  # total locales at every R: 6 x 1, 3 x 2, 2 x 3 (ranks x threads)
RANKS_WORK = ("tohdf", "tohdfgz", "readhdf", "putget", "groupby", "groupbystr", "pack")


def ranks_places(a):
    return ["local", "netns"] if a.netns else ["local"]


def ranks_rows(a):
    """The rows of the ranks group: each measure at R = 2, 3 against R = 1, and at every R
    against the raw reference (MPI or I/O) of the same bytes."""
    size, keys, t = human_bytes(a.ranks_bytes), f"{a.keys / 1e6:g}M", RANKS_LOCALES
    what = {"tohdf": (f"tohdf {size} int64, distributed", "pwrite()+fsync, as many files+threads"),
            "tohdfgz": (f"tohdf {size} int64, one file, gzip", None),
            "readhdf": ("readhdf of those files, warm", "pread() of them, as many threads"),
            "putget": (f"put + get {size}", "MPI: rank 0 sends each rank its block, and back"),
            "groupby": (f"groupby {keys} int64, full range", "MPI: alltoall of the keys"),
            "pack": (f"pack {ranks_pack_samples(a):,} samples (64x64x4 float32 + 4 scalars), "
                     "probes not remembered", None),
            "groupbystr": (f"groupby {a.keys / 4e6:g}M strings keys, 'key' + hex, ~1/4 distinct",
                           None)}
    rows = {}
    for place in ranks_places(a):
        where = "" if place == "local" else ", netns"
        for work in RANKS_WORK:
            measure, raw = what[work]
            for r in (1, 2, 3):
                if r == 1 and place == "netns":
                    continue
                label = f"{measure}, R={r} x {t // r} loc{where}"
                if r > 1:
                    rows[f"ranks_{work}_{place}_{r}_vs1"] = (label, f"the same, R=1 x {t} loc",
                                                           "(none)", None)
                if raw and (r > 1 or work in ("tohdf", "readhdf")):
                    rows[f"ranks_{work}_{place}_{r}_raw"] = (label, raw, "(none)", None)
    return rows


def ranks_pack_samples(a):
    """The ranks group's pack: files of a.pack_per samples, fewer than the pack group's."""
    return (5 if a.quick else 10) * a.pack_per


def human_bytes(n):
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / MIB:g} MiB"


def number(v):
    """About four significant digits, never an exponent."""
    digits = 0 if v == 0 else max(0, 3 - int(math.floor(math.log10(abs(v)))))
    return f"{v:,.{digits}f}"


def ratio(x):
    """Two decimals; two significant digits below 0.1, where two decimals say little."""
    return f"{x:.2f}" if x >= 0.1 else f"{x:#.2g}"


def row(a, key, result):
    measure, ref_name, target, meets = measures(a)[key]
    if isinstance(result, str):  # a measure that could not be made says why
        return [measure, ref_name, "", "", result, target, ""]
    unit, mine, ref = result
    ratios = [m / r for m, r in zip(mine, ref)]
    m, r, q = statistics.median(mine), statistics.median(ref), statistics.median(ratios)
    return [measure, ref_name, f"{number(m)} {unit}", f"{number(r)} {unit}",
            f"{ratio(q)} (min {ratio(min(ratios))}, max {ratio(max(ratios))})", target,
            "" if meets is None else "yes" if meets(m, r, q) else "no"]


def print_table(a, results):
    head = ["measure", "reference", "h5ark (median)", "reference (median)",
            "ratio h5ark/ref", "target", "met"]
    rows = [row(a, k, results[k]) for k in measures(a) if k in results]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))


def progress(text):
    print(f"bench: {text}", file=sys.stderr, flush=True)


# ---- the measures ----

def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def raw_measures(a):
    """ping, tohdf/readhdf against write()/pread(), put + get against a raw stream: the C
    program, which prints a line of samples a measure."""
    out = subprocess.run(
        [str(a.build / "bench" / "h5ark-bench"), "--daemon", a.daemon,
         "--dir", str(a.tmp), "--runs", str(a.runs), "--pings", str(a.pings),
         "--bytes", str(a.bytes), "--locales", str(a.locales)],
        stdout=subprocess.PIPE, text=True, check=True).stdout
    results = {}
    for text in out.splitlines():
        if text and not text.startswith("#"):
            key, unit, mine, ref = text.split("\t")
            results[key] = (unit, [float(v) for v in mine.split()], [float(v) for v in ref.split()])
    return results


@contextlib.contextmanager
def daemon(locales, data_dir=None):
    d = Daemon(locales=locales, data_dir=data_dir)
    try:
        yield d
    finally:
        d.cleanup()


def connect(d):
    return h5ark.connect(d.endpoint)


@contextlib.contextmanager
def client(locales):
    with daemon(locales) as d:
        yield connect(d), d.data_dir


def on_a_daemon(measure):
    """measure(a, client, data_dir) on a daemon of its own with a.locales locales."""
    @functools.wraps(measure)
    def run(a):
        with client(a.locales) as (c, data_dir):
            return measure(a, c, data_dir)

    return run


@on_a_daemon
def h5py_measures(a, c, data_dir):
    """tohdf and readhdf against h5py writing the same array into one file per locale
    (sequentially, a plain contiguous dataset, then fsync, as the daemon fsyncs) and
    reading the daemon's files back (each file's dataset, then one concatenated array,
    as the daemon holds one array)."""
    n = a.bytes // 8
    data = np.arange(n, dtype="<i8")
    c.arange(n, name="h5py_cmp")
    paths = [data_dir / f"h5py_LOCALE{b:04d}.h5" for b in range(a.locales)]
    gb = a.bytes / 1e9
    w, hw, r, hr = [], [], [], []

    def h5py_write():
        for path, (s, e) in zip(paths, block_bounds(n, a.locales)):
            with h5py.File(path, "w") as h:
                h.create_dataset("h5py_cmp", data=data[s:e])
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)

    for _ in range(a.runs):
        os.sync()
        files = []
        w.append(gb / timed(lambda: files.extend(
            c.to_hdf({"h5py_cmp": "h5py_cmp"}, "cmp.h5")["files"])))
        os.sync()
        hw.append(gb / timed(h5py_write))
        got = {}
        r.append(gb / timed(lambda: got.update(c.read_hdf("cmp_LOCALE*.h5"))))
        c.delete(got["h5py_cmp"])
        hr.append(gb / timed(lambda: h5_pdarray([data_dir / f for f in files], "h5py_cmp")))
    return {"tohdf_h5py": ("GB/s", w, hw), "readhdf_h5py": ("GB/s", r, hr)}


@on_a_daemon
def small_files_measure(a, c, data_dir):
    """readhdf of many small files by a glob, against an h5py loop over the same files."""
    folder = data_dir / "small"
    folder.mkdir()
    files = [folder / f"part_{i:05d}.h5" for i in range(a.small_files)]
    for i, path in enumerate(files):
        with h5py.File(path, "w") as h:
            h["v"] = np.arange(i * a.small_elems, (i + 1) * a.small_elems, dtype="<i8")
    # the limit: the HDF5 C library alone, in as many processes as the daemon has probes
    loop = [str(a.build / "bench" / "h5ark-hdf5-loop"), str(min(a.locales, 8)), "v",
            *map(str, files)]
    mine, ref, limit = [], [], []
    for _ in range(a.runs):
        got = {}
        mine.append(a.small_files / timed(lambda: got.update(c.read_hdf("small/part_*.h5"))))
        c.delete(got["v"])
        ref.append(a.small_files / timed(lambda: h5_pdarray(files, "v")))
        limit.append(a.small_files / float(subprocess.run(
            loop, stdout=subprocess.PIPE, text=True, check=True).stdout))
    return {"small": ("files/s", mine, ref), "limit_small": ("files/s", limit, ref)}


def forget(files):
    """Drop the files' pages from the page cache: what is read next comes from the disk."""
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


@on_a_daemon
def range_measure(a, c, data_dir):
    """readhdf start/stop: the same number of rows, across a file boundary, from a large
    set and from a small one of as many files (cold: the files' pages dropped before each
    read), and h5py reading those rows of the large set the way its users slice."""
    nfiles, rows = 4, a.range_rows
    sets = {}
    for name, total in (("big", a.range_bytes // 8), ("small", RANGE_SMALL)):
        files = [data_dir / f"{name}_{k}.h5" for k in range(nfiles)]
        for f, (lo, hi) in zip(files, block_bounds(total, nfiles)):
            with h5py.File(f, "w") as h:
                d = h.create_dataset("v", (hi - lo,), "<i8")
                for s in range(lo, hi, 32 * MIB):  # 256 MiB at a time
                    e = min(hi, s + 32 * MIB)
                    d[s - lo:e - lo] = np.arange(s, e, dtype="<i8")
        start = block_bounds(total, nfiles)[2][0] - rows // 2  # across files 1 and 2
        sets[name] = (files, start, start + rows)
    os.sync()

    def daemon_read(name):
        files, start, stop = sets[name]
        forget(files)
        t = time.perf_counter()
        got = c.read_hdf(f"{name}_*.h5", "v", start=start, stop=stop)["v"]
        took = time.perf_counter() - t
        assert got.to_list()[::rows - 1] == [start, stop - 1]
        c.delete(got)
        return took

    def h5py_read(name):
        files, start, stop = sets[name]
        forget(files)
        t = time.perf_counter()
        parts, at = [], 0
        for f in files:
            with h5py.File(f, "r") as h:
                d = h["v"]
                lo, hi = max(start - at, 0), min(stop - at, d.shape[0])
                if lo < hi:
                    parts.append(d[lo:hi])
                at += d.shape[0]
        got = np.concatenate(parts)
        took = time.perf_counter() - t
        assert got[0] == start and got.size == rows
        return took

    big, small, peer = [], [], []
    for _ in range(a.runs):
        for fn, name, out in ((daemon_read, "big", big), (daemon_read, "small", small),
                              (h5py_read, "big", peer)):
            out.append(statistics.median(fn(name) * 1e3 for _ in range(20)))
    return {"range_size": ("ms", big, small), "range_h5py": ("ms", big, peer)}


def exetera_file(path, rows):
    """A dataframe `df` as ExeTera writes one (see docs/FORMAT.md, "ExeTera dataframes"):
    field groups with `fieldtype`, `chunksize`, `timestamp` and `nformat`; each dataset 1-D,
    extendable, chunked as h5py chooses for the first part, written a part of EX_CHUNK rows
    at a time (write_part) and marked `completed` at the end. Fields: `count` numeric,int64,
    `score` numeric,float64, `status` categorical,int8 (4 keys) and `name` indexedstring
    (0-20 lowercase letters). Returns {dataset path: its bytes}."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 21, rows)
    index = np.zeros(rows + 1, np.int64)
    np.cumsum(lengths, out=index[1:])
    columns = {
        "count": ("numeric,int64", {"values": rng.integers(-2**62, 2**62, rows)}),
        "score": ("numeric,float64", {"values": rng.standard_normal(rows)}),
        "status": ("categorical,int8", {"values": rng.integers(0, 4, rows, dtype=np.int8)}),
        "name": ("indexedstring", {"index": index,
                                   "values": rng.integers(97, 123, int(index[-1]), np.uint8)}),
    }
    completed = h5py.enum_dtype({"FALSE": 0, "TRUE": 1}, basetype="i1")
    sizes = {}
    with h5py.File(path, "w") as f:
        df = f.create_group("df")
        for name, (fieldtype, data) in columns.items():
            g = df.create_group(name)
            g.attrs["chunksize"] = np.int64(EX_CHUNK)
            g.attrs["timestamp"] = np.int64(EX_CHUNK)
            g.attrs.create("fieldtype", fieldtype, dtype=h5py.string_dtype())
            kind, _, nformat = fieldtype.partition(",")
            if nformat:
                g.attrs.create("nformat", nformat, dtype=h5py.string_dtype())
            for part in range(0, rows, EX_CHUNK):
                end = min(rows, part + EX_CHUNK)
                pieces = {"values": (part, end)}
                if kind == "indexedstring":  # a part's strings: its offsets and bytes
                    pieces = {"index": (part + (part > 0), end + 1),
                              "values": (int(index[part]), int(index[end]))}
                for dname, (lo, hi) in pieces.items():
                    arr = data[dname][lo:hi]
                    if part == 0:
                        g.create_dataset(dname, data=arr, maxshape=(None,))
                    else:
                        ds = g[dname]
                        at = ds.shape[0]
                        ds.resize((at + arr.size,))
                        ds[at:] = arr
            if kind == "categorical":
                g.create_dataset("key_values", data=np.arange(4, dtype=np.int8), maxshape=(None,))
                g.create_dataset("key_names", data=["", "no", "yes", "unsure"],
                                 dtype=h5py.string_dtype(), maxshape=(None,))
            for dname in data:
                g[dname].attrs.create("completed", 1, dtype=completed)
                sizes[f"df/{name}/{dname}"] = data[dname].nbytes
    return sizes


_EX_BUFFERS = {}  # the 2-process reference's shared memory, inherited by its workers


def _exetera_read_share(args):
    """A worker of the h5py reference: its share of every dataset into shared memory."""
    path, share, shares = args
    with h5py.File(path, "r") as f:
        for name, buf in _EX_BUFFERS.items():
            lo, hi = block_bounds(buf.size, shares)[share]
            if hi > lo:
                f[name].read_direct(buf, np.s_[lo:hi], np.s_[lo:hi])
        if share == 0:
            f["df/status/key_names"][()]
    return share


def exetera_measure(a):
    """readhdf of an ExeTera dataframe against h5py reading the same datasets into numpy:
    whole datasets with read_direct into arrays allocated (and touched) once before the
    runs, in one process, and in a.locales processes each reading its block of every
    dataset into shared memory (a pool forked before the runs); the daemon reads into the
    memory it keeps from the previous run's objects, so both sides write into touched
    memory. Then ranged reads of about 1 MiB, warm: rows of the float64 field, and of the
    string field (h5py reads the offsets, then the bytes between them)."""
    import mmap
    import multiprocessing

    data_dir = a.tmp / "exetera"
    data_dir.mkdir()
    path = data_dir / "exetera.h5"
    sizes = exetera_file(path, a.ex_rows)
    gb = sum(sizes.values()) / 1e9
    with h5py.File(path, "r") as f:
        progress(f"exetera: {gb:.2f} GB in {len(sizes)} datasets, chunks of "
                 + ", ".join(f"{f[n].chunks[0]:,}" for n in sizes))
        dtypes = {n: f[n].dtype for n in sizes}
    local = {n: np.zeros(sizes[n] // dtypes[n].itemsize, dtypes[n]) for n in sizes}
    for n in sizes:
        shared = np.frombuffer(mmap.mmap(-1, max(sizes[n], 1)), dtypes[n])
        shared[:] = 0
        _EX_BUFFERS[n] = shared[:sizes[n] // dtypes[n].itemsize]
    pool = multiprocessing.get_context("fork").Pool(a.locales)
    try:
        with daemon(a.locales, data_dir) as d:
            return exetera_runs(a, connect(d), path, gb, local, pool)
    finally:
        pool.terminate()
        pool.join()
        _EX_BUFFERS.clear()


def exetera_runs(a, c, path, gb, local, pool):
    def h5ark_read():
        got = c.read_hdf("exetera.h5", datasets="df")["df"]
        assert got.size == a.ex_rows and got.columns == ["count", "name", "score", "status"]
        return got

    def h5py_read():
        with h5py.File(path, "r") as f:
            for name, buf in local.items():
                f[name].read_direct(buf)
            f["df/status/key_names"][()]

    def h5py_pool():
        pool.map(_exetera_read_share, [(str(path), k, a.locales) for k in range(a.locales)])

    mid = a.ex_rows // 2
    num = (mid, mid + EX_RANGE)
    strs = (mid, mid + EX_RANGE_STR)

    def h5ark_range(field, lo, hi):
        t = time.perf_counter()
        got = c.read_hdf("exetera.h5", datasets=f"df/{field}", start=lo, stop=hi)[f"df/{field}"]
        took = time.perf_counter() - t
        assert got.size == hi - lo
        c.delete(got)
        return took

    def h5py_range_num():
        t = time.perf_counter()
        with h5py.File(path, "r") as f:
            got = f["df/score/values"][num[0]:num[1]]
        took = time.perf_counter() - t
        assert got.size == EX_RANGE
        return took

    def h5py_range_str():
        t = time.perf_counter()
        with h5py.File(path, "r") as f:
            offsets = f["df/name/index"][strs[0]:strs[1] + 1]
            got = f["df/name/values"][offsets[0]:offsets[-1]]
        took = time.perf_counter() - t
        assert got.size == offsets[-1] - offsets[0]
        return took

    # one read of each first: pages cached, the daemon's memory and the arrays touched
    c.delete(h5ark_read())
    h5py_read()
    h5py_pool()
    mine, one, many = [], [], []
    rn, rn_ref, rs, rs_ref = [], [], [], []
    for _ in range(a.runs):
        got = []
        mine.append(gb / timed(lambda: got.append(h5ark_read())))
        c.delete(got[0])
        one.append(gb / timed(h5py_read))
        many.append(gb / timed(h5py_pool))
        rn.append(statistics.median(h5ark_range("score", *num) * 1e3 for _ in range(20)))
        rn_ref.append(statistics.median(h5py_range_num() * 1e3 for _ in range(20)))
        rs.append(statistics.median(h5ark_range("name", *strs) * 1e3 for _ in range(20)))
        rs_ref.append(statistics.median(h5py_range_str() * 1e3 for _ in range(20)))
    return {"exetera_1": ("GB/s", mine, one), "exetera_n": ("GB/s", mine, many),
            "exetera_range_num": ("ms", rn, rn_ref), "exetera_range_str": ("ms", rs, rs_ref)}


_AK_BUFFERS = {}  # the multi-process reference's shared memory, inherited by its workers


def _awkward_read_share(args):
    """A worker of the h5py reference: its block of each buffer into shared memory."""
    path, share, shares = args
    with h5py.File(path, "r") as f:
        for name, buf in _AK_BUFFERS.items():
            lo, hi = block_bounds(buf.size, shares)[share]
            if hi > lo:
                f[name].read_direct(buf, np.s_[lo:hi], np.s_[lo:hi])
    return share


def awkward_file(path, offsets, data, compress):
    """A jagged array as awkward's documentation stores ak.to_buffers output with h5py:
    a group with the form and length, a dataset a buffer. Compressed, the chunks are
    1 MiB (h5py's automatic ones would be far smaller), with shuffle."""
    form = {"class": "ListOffsetArray", "offsets": "i64", "form_key": "node0",
            "content": {"class": "NumpyArray", "primitive": "float64", "form_key": "node1"}}
    def opts(buf):
        return dict(compression="gzip", shuffle=True, chunks=(min(1 << 17, buf.size),)) \
            if compress else {}

    with h5py.File(path, "w") as f:
        g = f.create_group("jagged")
        g.attrs["form"] = json.dumps(form)
        g.attrs["length"] = len(offsets) - 1
        g.create_dataset("node0-offsets", data=offsets, **opts(offsets))
        g.create_dataset("node1-data", data=data, **opts(data))


def awkward_measure(a):
    """readhdf of a jagged array (ListOffsetArray of float64) in awkward 2's HDF5 layout,
    uncompressed and gzip, against h5py reading the same two buffers into numpy as an
    expert would: read_direct into arrays allocated and touched once before the runs, in
    one process, and in a.locales processes each reading its block of each buffer into
    shared memory (a pool forked before the runs). GB/s counts the buffers' bytes."""
    import mmap
    import multiprocessing

    data_dir = a.tmp / "awkward"
    data_dir.mkdir()
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 2 * a.ak_values // a.ak_lists + 1, a.ak_lists)
    counts[-1] += a.ak_values - counts.sum()  # exactly ak_values inner values
    while counts[-1] < 0:  # the draw overshot: take the excess from earlier lists
        i = int(np.argmax(counts))
        take = min(counts[i], -counts[-1])
        counts[i] -= take
        counts[-1] += take
    offsets = np.zeros(a.ak_lists + 1, "<i8")
    np.cumsum(counts, out=offsets[1:])
    data = rng.random(a.ak_values)
    sizes = {"jagged/node0-offsets": offsets, "jagged/node1-data": data}
    gb = (offsets.nbytes + data.nbytes) / 1e9
    files = {"": "ak.h5", "_gz": "ak_gz.h5"}
    for gz, name in files.items():
        awkward_file(data_dir / name, offsets, data, gz == "_gz")
    local = {n: np.zeros_like(v) for n, v in sizes.items()}
    for n, v in sizes.items():
        shared = np.frombuffer(mmap.mmap(-1, max(v.nbytes, 1)), v.dtype)
        shared[:] = 0
        _AK_BUFFERS[n] = shared[:v.size]
    pool = multiprocessing.get_context("fork").Pool(a.locales)
    out = {}
    try:
        with daemon(a.locales, data_dir) as d:
            c = connect(d)
            for gz, name in files.items():
                progress(f"awkward: {name}, {(data_dir / name).stat().st_size / 1e6:.0f} MB")
                out.update(awkward_runs(a, c, data_dir / name, gz, gb, local, pool, sizes))
    finally:
        pool.terminate()
        pool.join()
        _AK_BUFFERS.clear()
    return out


def awkward_runs(a, c, path, gz, gb, local, pool, expected):
    def h5ark_read():
        got = c.read_hdf(path.name)["jagged"]
        assert got.objtype == "awkward" and got.length == a.ak_lists
        return got

    def h5py_read():
        with h5py.File(path, "r") as f:
            for name, buf in local.items():
                f[name].read_direct(buf)

    def h5py_pool():
        pool.map(_awkward_read_share, [(str(path), k, a.locales) for k in range(a.locales)])

    # one read of each first: pages cached, memory touched; and all three read it right
    first = h5ark_read()
    got = first.buffers()
    h5py_read()
    h5py_pool()
    for n, v in expected.items():
        key = n.split("/")[1]
        assert np.array_equal(got[key], v) and np.array_equal(local[n], v)
        assert np.array_equal(_AK_BUFFERS[n], v)
    del got
    c.delete(first)
    mine, one, many = [], [], []
    for _ in range(a.runs):
        held = []
        mine.append(gb / timed(lambda: held.append(h5ark_read())))
        c.delete(held[0])
        one.append(gb / timed(h5py_read))
        many.append(gb / timed(h5py_pool))
    return {f"awkward{gz}_1": ("GB/s", mine, one), f"awkward{gz}_n": ("GB/s", mine, many)}


@on_a_daemon
def writepart_measure(a, c, data_dir):
    """writepart streaming a float64 field into a new file, a part of WP_PART rows (1 MiB)
    at a time, each part acknowledged when durable (the daemon appends to the file's twin,
    fsyncs it, swaps it with the file and repeats the part's writes on the old file:
    docs/DESIGN.md), for each size of
    a.wp_sizes. The parts are put into the daemon once, before the runs: the time is the
    writepart calls' alone. References, in the same data directory: the same bytes
    appended to a new file with write() and an fsync after each part, on one thread (each
    part durable before the next: the least the machine does for that promise), and h5py
    appending each part to a resizable dataset of 1 MiB chunks with a flush after each
    (not durable: no fsync, and a kill in the middle can leave the file broken). Rows: the
    whole stream's throughput, and the last part's latency (which must not grow with the
    file)."""
    rng = np.random.default_rng(1)
    parts = {}
    for total in a.wp_sizes:
        data = rng.standard_normal(total // 8)
        parts[total] = [(data[i:i + WP_PART], c.array(data[i:i + WP_PART]))
                        for i in range(0, data.size, WP_PART)]

    def h5ark_stream(total):
        path = data_dir / "wp.hdf5"
        path.unlink(missing_ok=True)
        lasts = []
        t = time.perf_counter()
        for _, obj in parts[total]:
            s = time.perf_counter()
            got = c.writepart("wp.hdf5", "df/score", obj)
            lasts.append(time.perf_counter() - s)
        took = time.perf_counter() - t
        assert got["rows"] == total // 8
        c.complete("wp.hdf5", "df/score")  # and the twin goes
        path.unlink()
        return took, lasts[-1]

    def raw_stream(total):
        path = data_dir / "wp.raw"
        lasts = []
        t = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        dfd = os.open(data_dir, os.O_RDONLY)
        os.fsync(dfd)  # the new file's name durable, as the daemon's rename is
        os.close(dfd)
        for arr, _ in parts[total]:
            s = time.perf_counter()
            os.write(fd, memoryview(arr).cast("B"))
            os.fsync(fd)
            lasts.append(time.perf_counter() - s)
        os.close(fd)
        took = time.perf_counter() - t
        assert path.stat().st_size == total
        path.unlink()
        return took, lasts[-1]

    def h5py_stream(total):
        path = data_dir / "wp.h5"
        t = time.perf_counter()
        with h5py.File(path, "w") as f:
            d = f.create_dataset("score", (0,), "<f8", maxshape=(None,), chunks=(WP_PART,))
            for arr, _ in parts[total]:
                at = d.shape[0]
                d.resize((at + arr.size,))
                d[at:] = arr
                f.flush()
        took = time.perf_counter() - t
        path.unlink()
        return took

    results = {}
    for total in a.wp_sizes:
        mb = total / 1e6
        mine, ref, peer, last, ref_last = [], [], [], [], []
        for _ in range(a.runs):
            for stream, rate, lat in ((h5ark_stream, mine, last), (raw_stream, ref, ref_last)):
                os.sync()
                took, at_last = stream(total)
                rate.append(mb / took)
                lat.append(at_last * 1e3)
            os.sync()
            peer.append(mb / h5py_stream(total))
        results[f"writepart_{total}"] = ("MB/s", mine, ref)
        results[f"writepart_h5py_{total}"] = ("MB/s", mine, peer)
        results[f"writepart_last_{total}"] = ("ms", last, ref_last)
    return results


def vm_hwm_mib(pid):
    """The process's peak resident memory (VmHWM), in MiB."""
    for text in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith("VmHWM:"):
            return int(text.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/PID/status")


def memory_measure(a):
    """Peak memory of a fresh daemon that creates the array and writes it, and of another
    that reads it back: the bench's other objects would otherwise be counted."""
    data_dir = a.tmp / "memory"
    data_dir.mkdir()
    size = a.bytes / MIB
    written, read = [], []
    for _ in range(a.runs):
        for peaks, work in ((written, lambda c: c.to_hdf({"m": c.arange(a.bytes // 8)}, "m.h5")),
                            (read, lambda c: c.read_hdf("m_LOCALE*.h5"))):
            with daemon(a.locales, data_dir) as d:
                work(connect(d))
                peaks.append(vm_hwm_mib(d.proc.pid))
    return {"mem_tohdf": ("MiB", written, [size] * a.runs),
            "mem_readhdf": ("MiB", read, [size] * a.runs)}


def scaling_measures(a):
    """groupby and tohdf with gzip on a daemon with 2 locales against one with 1 locale,
    both running, the calls alternating so that both see the same load; then the
    machine's own 2 vs 1 thread scaling on the same kinds of work."""
    with client(2) as (two, _), client(1) as (one, _):
        clients = [two, one]
        keys = {key: [c.randint(low, high, a.keys, seed=1) for c in clients]
                for key, low, high in (("groupby_wide", -2**62, 2**62),
                                       ("groupby_narrow", 0, 1000))}
        mkeys = a.keys / 1e6
        results = {}
        for key, arrays in keys.items():
            rates = [[], []]
            for _ in range(a.runs):
                for c, arr, rate in zip(clients, arrays, rates):
                    g = []
                    rate.append(mkeys / timed(lambda: g.append(c.groupby([arr]))))
                    c.delete(g[0])
            results[key] = ("Mkeys/s", *rates)
        results["gzip"] = gzip_measure(a, clients, keys["groupby_narrow"])
    results.update(thread_limits(a))
    return results


def thread_limits(a):
    """The machine's own scaling from 1 thread to 2 on the kinds of work the 2 vs 1 rows do:
    streaming through memory (a radix sort's passes, a merge) and deflating. numpy's
    ufuncs and zlib release the GIL, so Python threads run them side by side."""
    n = a.keys * 4  # uint64 elements in each of two arrays: far past every cache
    data = np.arange(a.keys, dtype=np.int64) % 1000
    raw = data.tobytes()

    def stream(src, dst):
        for _ in range(3):
            np.bitwise_xor(src, 12345, out=dst)

    def deflate(part):
        zlib.compress(part, 4)

    def rate(threads, work, args, amount):
        ts = [threading.Thread(target=work, args=args[i]) for i in range(threads)]

        def run():
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        return amount / timed(run)

    mem, zl = ([], []), ([], [])
    for _ in range(a.runs):
        for threads, out_mem, out_zl in ((2, mem[0], zl[0]), (1, mem[1], zl[1])):
            per = n // threads
            bufs = [(np.ones(per, np.uint64), np.ones(per, np.uint64)) for _ in range(threads)]
            out_mem.append(rate(threads, stream, bufs, 3 * n * 16 / 1e9))
            step = len(raw) // threads
            parts = [(raw[i * step:(i + 1) * step],) for i in range(threads)]
            out_zl.append(rate(threads, deflate, parts, len(raw) / 1e6))
    return {"limit_memory": ("GB/s", *mem), "limit_zlib": ("MB/s", *zl)}


def ranks_measures(a):
    """readhdf, tohdf, put + get, groupby and pack on the daemon as R = 1, 2 and 3 ranks on
    this host (mpirun --oversubscribe, ipc endpoint), each with RANKS_LOCALES locales in all, and
    with --netns at R = 2, 3 in network namespaces (tests/python/netns_cluster.py, tcp
    endpoint through the bridge). All the daemons run at once, idle but for the one
    measured; each measure alternates with its raw reference run by run:
    h5ark-mpi-move with the same mpirun for the bytes ranks move, and pwrite/pread of the
    same bytes in as many threads as locales for the files."""
    from daemons import mpi_build
    mover = a.build / "bench" / "h5ark-mpi-move"
    if shutil.which("mpirun") is None or not mpi_build() or not mover.exists():
        return {k: "n/a (no MPI build)" for k in ranks_rows(a)}
    t, n, nbytes = RANKS_LOCALES, a.ranks_bytes // 8, a.ranks_bytes
    with contextlib.ExitStack() as stack:
        daemons = {("local", 1): stack.enter_context(daemon(t))}
        for r in (2, 3):
            d = Daemon(ranks=r, locales=t // r)
            stack.callback(d.cleanup)
            daemons[("local", r)] = d
        mpirun = {"local": lambda r: [shutil.which("mpirun"), "--allow-run-as-root",
                                      "--oversubscribe", "--bind-to", "none", "-np", str(r)]}
        if a.netns:
            from netns_cluster import NetnsCluster, NetnsDaemon, unavailable
            why = unavailable()
            if why:
                raise RuntimeError(f"--netns: {why}")
            cluster = stack.enter_context(NetnsCluster(3))
            for r in (2, 3):
                d = NetnsDaemon(cluster, r, t // r)
                stack.callback(d.cleanup)
                daemons[("netns", r)] = d
            mpirun["netns"] = cluster.mpirun_args
        clients = {k: connect(d) for k, d in daemons.items()}
        data = np.random.default_rng(1).integers(-2**62, 2**62, n)
        nwords = a.keys // 4
        words = [f"key{v:x}" for v in np.random.default_rng(2).integers(0, nwords // 4, nwords)]
        samples = {}  # (work, place, r) -> ([h5ark], [raw])
        # the same sample files in every daemon's data directory
        made = pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory())) / "rkpack"
        pack_files(argparse.Namespace(pack_files=ranks_pack_samples(a) // a.pack_per,
                                      pack_per=a.pack_per), made)
        for d in daemons.values():
            shutil.copytree(made, d.data_dir / "rkpack")
        npack, first_pack = ranks_pack_samples(a), {}

        def add(work, place, r, mine, raw=None):
            got = samples.setdefault((work, place, r), ([], []))
            got[0].append(mine)
            got[1].append(raw)

        for run in range(a.runs):
            progress(f"ranks: run {run + 1} of {a.runs}")
            for (place, r), c in clients.items():
                ddir = daemons[(place, r)].data_dir
                (ddir / "rk").mkdir(parents=True, exist_ok=True)
                arr = c.array(data)
                secs = timed(lambda: c.request("tohdf", {"names": [arr.name], "path": "rk/x",
                                                         "file_type": "distribute"}))
                files = sorted((ddir / "rk").glob("x*"))
                raw_dir = ddir / "raw"
                raw_dir.mkdir(exist_ok=True)
                add("tohdf", place, r, nbytes / 1e9 / secs,
                    nbytes / 1e9 / timed(lambda: raw_write(raw_dir, data, t)))
                got = []
                secs = timed(lambda: got.append(c.request("readhdf", {"paths": ["rk/x*"]})))
                for o in got[0].result["objects"].values():
                    c.delete(o["name"])
                add("readhdf", place, r, nbytes / 1e9 / secs,
                    nbytes / 1e9 / timed(lambda: raw_read(files)))
                # compressed into one file: at R > 1 every chunk goes to rank 0, which writes
                secs = timed(lambda: c.request("tohdf", {"names": [arr.name], "path": "rk/z.h5",
                                                         "compression": "gzip"}))
                add("tohdfgz", place, r, nbytes / 1e9 / secs)
                c.delete(arr)
                holder = []
                secs = timed(lambda: (holder.append(c.array(data)), c.get(holder[0])))
                c.delete(holder[0])
                keys = c.randint(-2**62, 2**62, a.keys, seed=1)
                g = []
                ksecs = timed(lambda: g.append(c.groupby([keys])))
                c.delete(g[0], keys)
                move = [None, None]
                if r > 1:  # the bytes MPI moves for them, by MPI alone, the same mpirun
                    out = subprocess.run([*mpirun[place](r), str(mover), str(nbytes),
                                          str(a.keys * 8)], stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, check=True)
                    move = [float(v) for v in out.stdout.split()]
                add("putget", place, r, 2 * nbytes / 1e9 / secs,
                    move[0] and 2 * nbytes / 1e9 / move[0])  # as if the array's rate
                add("groupby", place, r, a.keys / 1e6 / ksecs,
                    move[1] and a.keys / 1e6 / move[1])
                skeys = c.array(words)
                g = []
                ssecs = timed(lambda: g.append(c.groupby([skeys])))
                c.delete(g[0], skeys)
                add("groupbystr", place, r, nwords / 1e6 / ssecs)
                # pack: a new mtime, so that the probes' remembered answers are not used
                stamp = time.time_ns() + run
                for path in (ddir / "rkpack").iterdir():
                    os.utime(path, ns=(stamp, stamp))
                got = {}
                secs = timed(lambda: got.update(p=c.pack(PACK_DATA_SCHEMA, PACK_EXPERIMENT_SCHEMA,
                                                         paths="rkpack/samples_*.h5")))
                if run == 0:  # every R packs the same rows
                    rows = [0, npack // 3, npack - 1]
                    batch = got["p"].rows(rows)
                    first = first_pack.setdefault("rows", batch)
                    for grp in ("samples", "responses"):
                        assert np.array_equal(batch[grp], first[grp]), (place, r, grp)
                c.clear()
                add("pack", place, r, npack / secs)
    results = {}
    for (work, place, r), (mine, raw) in samples.items():
        unit = "samples/s" if work == "pack" else "Mkeys/s" if work.startswith("groupby") else "GB/s"
        if r > 1:
            results[f"ranks_{work}_{place}_{r}_vs1"] = (unit, mine, samples[(work, "local", 1)][0])
        if raw[0] is not None:
            results[f"ranks_{work}_{place}_{r}_raw"] = (unit, mine, raw)
    return results


def raw_write(folder, data, threads):
    """pwrite + fsync of `data` into `threads` files, one thread each, as tohdf's blocks."""
    raw = memoryview(data).cast("B")
    n = len(raw)

    def one(i):
        with open(folder / f"part{i}", "wb") as f:
            os.pwrite(f.fileno(), raw[n * i // threads:n * (i + 1) // threads], 0)
            os.fsync(f.fileno())
    run_threads(one, threads)


def raw_read(files):
    """pread of each whole file into fresh memory, one thread a file."""
    def one(i):
        with open(files[i], "rb") as f:
            buf = bytearray(os.fstat(f.fileno()).st_size)
            f.readinto(buf)
    run_threads(one, len(files))


def dd_write(folder, sizes):
    """dd (C, 16 MiB blocks, conv=fsync) of sizes[i] bytes into file i, a process each, all
    at once: the best this machine's disk takes, which a Python writer here does not reach."""
    procs = [subprocess.Popen(["dd", "if=/dev/zero", f"of={folder / f'part{i}'}", "bs=16M",
                               f"count={n}", "iflag=count_bytes", "conv=fsync"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for i, n in enumerate(sizes)]
    for p in procs:
        if p.wait() != 0:
            raise RuntimeError("dd failed")


def run_threads(fn, count):
    ts = [threading.Thread(target=fn, args=(i,)) for i in range(count)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()


def checkpoint_measure(a):
    """checkpoint (every object into --checkpoint-dir) against dd writing and fsyncing as
    many bytes into as many files as it writes, a process each; then the restore's reader
    (load_checkpoint, the code the restore at start runs, into memory the clear before gave
    back) against pread of those files into fresh memory, both with the files dropped from
    the page cache first."""
    ck = a.tmp / "data" / "ck"
    n = a.bytes // 8
    words = [f"w{i:06d}" for i in range(a.bytes // 8 // 8)]  # ~1/8 of the bytes, in strings
    d = Daemon(locales=a.locales, data_dir=a.tmp / "data", extra_args=["--checkpoint-dir", str(ck)])
    mine, ref, rmine, rref = [], [], [], []
    try:
        c = connect(d)
        c.arange(n, name="numbers")
        c.array(words, name="words")
        ref_dir = a.tmp / "ckref"
        res = c.checkpoint()  # the reference writes as many bytes, into as many files
        sizes = [p.stat().st_size for p in (ck / res["checkpoint"]).iterdir()
                 if p.suffix == ".h5"]
        ref_dir.mkdir()  # one untimed write first: the first is slow here, whatever writes it
        dd_write(ref_dir, sizes)
        shutil.rmtree(ref_dir)
        for run in range(a.runs):
            def write_ref():
                ref_dir.mkdir()
                ref.append(sum(sizes) / timed(lambda: dd_write(ref_dir, sizes)) / 1e9)
                shutil.rmtree(ref_dir)

            def read_ref():
                forget(files)
                rref.append(res["bytes"] / timed(lambda: raw_read(files)) / 1e9)
            if run % 2:  # alternately first and second, so both see the same load
                write_ref()
            for p in ck.iterdir():
                shutil.rmtree(p)
            t = time.perf_counter()
            res = c.checkpoint()
            mine.append(res["bytes"] / (time.perf_counter() - t) / 1e9)
            files = sorted(p for p in (ck / res["checkpoint"]).iterdir() if p.suffix == ".h5")
            if run % 2 == 0:
                write_ref()
                read_ref()
            forget(files)
            c.clear()
            t = time.perf_counter()
            c.load_checkpoint("ck", res["checkpoint"])
            rmine.append(res["bytes"] / (time.perf_counter() - t) / 1e9)
            if run % 2:
                read_ref()
        c.close()
    finally:
        d.cleanup()
    return {"checkpoint": ("GB/s", mine, ref), "checkpoint_restore": ("GB/s", rmine, rref)}


def gzip_measure(a, clients, arrays):
    """tohdf with gzip compression; a daemon that does not know the argument yet answers
    bad_request naming it."""
    mb, rates = a.keys * 8 / 1e6, [[], []]
    for _ in range(a.runs):
        for c, arr, rate in zip(clients, arrays, rates):
            try:
                rate.append(mb / timed(lambda: c.request(
                    "tohdf", {"names": [arr.name], "path": "gzip.h5", "compression": "gzip"})))
            except h5ark.BadRequestError as e:
                if "compression" not in str(e):
                    raise
                return "n/a (daemon has no compression)"
    return ("MB/s", *rates)


def gzip_zlib_measure(a):
    """tohdf with gzip at the default level (4) against zlib making the same chunks: the
    keys of the 2 vs 1 rows (int64 in [0, 1000)), one file, so that the daemon's chunks are
    exactly the reference's: 1 MiB each, shuffled as HDF5's filter does (the last one padded
    with zeros). The reference compresses them with Python's zlib at level 4 in as many
    threads as the daemon has locales (zlib releases the GIL), each thread taking every
    locales-th chunk, then writes them into a dataset of the same layout and filters with
    h5py's write_direct_chunk and fsyncs the file: the same file made with zlib. The shuffle
    is done before the runs, so the reference is timed without it. A second row times the
    reference's compression alone. The daemon's time is the whole request: gathering,
    shuffling and compressing, HDF5 writing the chunks, fsync and rename. Ratios: the data's
    bytes over the chunks' (the dataset's storage size, on both sides)."""
    n, threads = a.keys, a.locales
    data = np.random.default_rng(1).integers(0, 1000, n).astype("<i8")
    per = MIB // 8
    chunks = []
    for lo in range(0, n, per):
        part = data[lo:lo + per]
        if part.size < per:
            part = np.concatenate([part, np.zeros(per - part.size, part.dtype)])
        chunks.append(np.ascontiguousarray(part.view(np.uint8).reshape(-1, 8).T).tobytes())
    mb = data.nbytes / 1e6
    speed, alone, ratio, base = ([], []), [], ([], []), []
    reads, base_reads = ([], []), []
    with contextlib.ExitStack() as stack:
        c, data_dir = stack.enter_context(client(a.locales))
        arr = c.array(data)
        if a.baseline:  # another build's daemon, e.g. one from before a change
            own = os.environ["H5ARKD"]
            os.environ["H5ARKD"] = str(a.baseline)
            try:
                old, _ = stack.enter_context(client(a.locales))
            finally:
                os.environ["H5ARKD"] = own
            old_arr = old.array(data)
        packed = [b""] * len(chunks)
        ref_path = data_dir / "gzip_zlib_ref.h5"

        def compress(k):
            for i in range(k, len(chunks), threads):
                packed[i] = zlib.compress(chunks[i], 4)

        def zlib_compress():
            ts = [threading.Thread(target=compress, args=(k,)) for k in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

        def zlib_file():
            zlib_compress()
            with h5py.File(ref_path, "w") as h:
                d = h.create_dataset("x", shape=(n,), dtype="<i8", chunks=(per,),
                                     compression="gzip", compression_opts=4, shuffle=True)
                for i, p in enumerate(packed):
                    d.id.write_direct_chunk((i * per,), p)
            fd = os.open(ref_path, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)

        def h5ark_run():
            c.request("tohdf", {"names": [arr.name], "path": "gzip_zlib.h5",
                                "compression": "gzip", "file_type": "single"})

        def baseline_run():
            old.request("tohdf", {"names": [old_arr.name], "path": "gzip_zlib.h5",
                                  "compression": "gzip", "file_type": "single"})

        h5ark_run(), zlib_file()  # first-touch costs out of the runs, on both sides
        if a.baseline:
            baseline_run()
        for _ in range(a.runs):
            if a.baseline:
                base.append(mb / timed(baseline_run))
            speed[0].append(mb / timed(h5ark_run))
            speed[1].append(mb / timed(zlib_file))
            alone.append(mb / timed(zlib_compress))
            for path, out in ((data_dir / "gzip_zlib.h5", ratio[0]), (ref_path, ratio[1])):
                with h5py.File(path, "r") as h:
                    d = h[arr.name] if out is ratio[0] else h["x"]
                    assert d.compression == "gzip" and d.shuffle and d.chunks == (per,)
                    out.append(data.nbytes / d.id.get_storage_size())
            with h5py.File(ref_path, "r") as h:  # the reference made the right file
                assert np.array_equal(h["x"][:per], data[:per])
            # reading the daemon's file back: readhdf (a fresh object each time, deleted
            # after) against h5py reading the dataset whole into one array
            got = []
            reads[0].append(mb / timed(lambda: got.append(c.read_hdf("gzip_zlib.h5"))))
            c.delete(list(got[0].values())[0])

            def h5py_read():
                with h5py.File(data_dir / "gzip_zlib.h5", "r") as h:
                    h[arr.name][()]

            reads[1].append(mb / timed(h5py_read))
            if a.baseline:
                got = []
                old_path = "gzip_zlib.h5"
                base_reads.append(mb / timed(lambda: got.append(old.read_hdf(old_path))))
                old.delete(list(got[0].values())[0])
    out = {"gzip_speed": ("MB/s", *speed), "gzip_deflate": ("MB/s", speed[0], alone),
           "gzip_ratio": ("x", *ratio)}
    out["gzip_read"] = ("MB/s", *reads)
    if a.baseline:
        out["gzip_baseline"] = ("MB/s", speed[0], base)
        out["gzip_read_baseline"] = ("MB/s", reads[0], base_reads)
    return out


PACK_SCALE = [0.5, 2.0, 0.25, 4.0]
PACK_BIAS = [-1.0, 0.0, 1.0, 0.5]
PACK_DATA_SCHEMA = f"""
image:
  metadata:
    dims: [64, 64]
    channels: 4
    layout: hwc
    transpose: chw
    scale: {PACK_SCALE}
    bias: {PACK_BIAS}
    ordering: 0
params:
  metadata:
    scale: 0.1
    bias: -1.0
  a: {{metadata: {{ordering: 10}}}}
  b: {{metadata: {{ordering: 20}}}}
  c: {{metadata: {{ordering: 30}}}}
  d: {{metadata: {{ordering: 40}}}}
"""
PACK_EXPERIMENT_SCHEMA = """
image:
  metadata: {pack: samples, coerce: float}
params:
  metadata: {pack: responses}
"""


def pack_files(a, folder):
    """a.pack_files files of a.pack_per samples: a group per sample holding a channels-last
    64x64x4 float32 image and four float64 scalars (shape (1,), as LBANN's writer stores
    them)."""
    folder.mkdir()
    rng = np.random.default_rng(5)
    paths = []
    for k in range(a.pack_files):
        path = folder / f"samples_{k:04d}.h5"
        with h5py.File(path, "w") as f:
            for i in range(a.pack_per):
                g = f.create_group(f"{k * a.pack_per + i:09d}")
                g["image"] = rng.random((64, 64, 4), dtype=np.float32)
                for name in "abcd":
                    g[f"params/{name}"] = rng.random(1)
        paths.append(path)
    return paths


# The layouts of the packlayout group: (name, what, libver, the datasets' storage). compact
# holds the scalars in their object headers (the image, 64 KiB, is more than a header holds:
# it stays contiguous); chunked lets h5py choose the chunks ((32, 32, 2) for the image).
PACK_LAYOUTS = [
    ("contiguous", "contiguous", "earliest", {}),
    ("compact", "compact (the scalars; the image contiguous)", "earliest", "compact"),
    ("chunked", "chunked, v1 B-tree", "earliest", {"chunks": True}),
    ("gzip", "chunked + gzip, v1 B-tree", "earliest", {"compression": "gzip"}),
    ("shuffle_gzip", "chunked + shuffle + gzip, v1 B-tree", "earliest",
     {"compression": "gzip", "shuffle": True}),
    ("gzip_latest", "chunked + shuffle + gzip, libver latest (fixed array, single chunk)",
     "latest", {"compression": "gzip", "shuffle": True}),
]


def layout_files(a, folder, libver, storage):
    """pack_files' samples with every dataset stored as `storage` says."""
    folder.mkdir()
    rng = np.random.default_rng(5)
    paths = []
    for k in range(a.layout_files):
        path = folder / f"samples_{k:04d}.h5"
        with h5py.File(path, "w", libver=libver) as f:
            for i in range(a.pack_per):
                g = f.create_group(f"{k * a.pack_per + i:09d}")
                img, pars = rng.random((64, 64, 4), dtype=np.float32), rng.random(4)
                if storage == "compact":
                    g["image"] = img
                    p = g.create_group("params")
                    for name, v in zip("abcd", pars):
                        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                        plist.set_layout(h5py.h5d.COMPACT)
                        h5py.h5d.create(p.id, name.encode(), h5py.h5t.IEEE_F64LE,
                                        h5py.h5s.create_simple((1,)), plist).write(
                            h5py.h5s.ALL, h5py.h5s.ALL, np.array([v]))
                else:
                    g.create_dataset("image", data=img, **storage)
                    for name, v in zip("abcd", pars):
                        g.create_dataset(f"params/{name}", data=[v], **storage)
        paths.append(path)
    return paths


@on_a_daemon
def pack_layouts_measure(a, c, data_dir):
    """A first pack of the pack group's samples stored in each layout of PACK_LAYOUTS, each
    against the h5py + numpy reference on the same files, run after run."""
    out = {}
    for name, _, libver, storage in PACK_LAYOUTS:
        paths = layout_files(a, data_dir / f"pl_{name}", libver, storage)
        glob = f"pl_{name}/samples_*.h5"
        n = a.layout_files * a.pack_per
        mine, ref = [], []
        for run in range(a.runs):
            stamp = time.time_ns() + run  # a new version: no remembered probe answers
            for path in paths:
                os.utime(path, ns=(stamp, stamp))
            got, want = {}, {}
            mine.append(n / timed(lambda: got.update(p=c.pack(
                PACK_DATA_SCHEMA, PACK_EXPERIMENT_SCHEMA, paths=glob))))
            ref.append(n / timed(lambda: want.update(zip("sr", h5py_pack(paths)))))
            if run == 0:  # the same tensors, every row
                batch = got["p"].rows(list(range(n)))
                assert np.allclose(batch["samples"], want["s"], rtol=1e-6, atol=1e-6), name
                assert np.allclose(batch["responses"], want["r"], rtol=1e-12, atol=0), name
            c.clear()
        out[f"packlayout_{name}"] = ("samples/s", mine, ref)
    return out


def h5py_pack(paths):
    """What an expert writes with h5py: each file opened once, each sample's datasets read
    with read_direct into preallocated arrays, then the transforms vectorised in numpy."""
    ids = []
    for path in paths:
        with h5py.File(path, "r") as f:
            ids.extend((path, sid) for sid in sorted(f))
    n = len(ids)
    raw = np.empty((n, 64, 64, 4), np.float32)
    par = np.empty((n, 4), np.float64)
    row = 0
    for path in paths:
        with h5py.File(path, "r") as f:
            for sid in sorted(f):
                g = f[sid]
                g["image"].read_direct(raw, dest_sel=np.s_[row])
                for k, name in enumerate("abcd"):
                    g["params"][name].read_direct(par, dest_sel=np.s_[row, k:k + 1])
                row += 1
    raw *= np.array(PACK_SCALE, np.float32)
    raw += np.array(PACK_BIAS, np.float32)
    samples = np.ascontiguousarray(raw.transpose(0, 3, 1, 2)).reshape(n, -1)
    return samples, par * 0.1 - 1.0


@on_a_daemon
def pack_measure(a, c, data_dir):
    """pack of many sample files (LBANN's HDF5 data reader's work: coerce, per-channel
    normalize, HWC -> CHW, pack) against h5py + numpy doing the same in this process."""
    paths = pack_files(a, data_dir / "pack")
    n = a.pack_files * a.pack_per
    mine, again, ref = [], [], []
    for run in range(a.runs):
        # a new mtime: the daemon remembers its probes' answers by file version, and the
        # first pack of files it has not seen is the one measured here
        stamp = time.time_ns() + run
        for path in paths:
            os.utime(path, ns=(stamp, stamp))
        got = {}
        mine.append(n / timed(lambda: got.update(p=c.pack(
            PACK_DATA_SCHEMA, PACK_EXPERIMENT_SCHEMA, paths="pack/samples_*.h5"))))
        c.clear()  # and again, the files unchanged: their answers remembered
        again.append(n / timed(lambda: got.update(p=c.pack(
            PACK_DATA_SCHEMA, PACK_EXPERIMENT_SCHEMA, paths="pack/samples_*.h5"))))
        want = {}
        ref.append(n / timed(lambda: want.update(zip("sr", h5py_pack(paths)))))
        if run == 0:  # the same tensors (the reference computes in float32, pack in double)
            p = got["p"]
            rows = [0, n // 2, n - 1]
            batch = p.rows(rows)
            assert np.allclose(batch["samples"], want["s"][rows], rtol=1e-6, atol=1e-6)
            assert np.allclose(batch["responses"], want["r"][rows], rtol=1e-12, atol=0)
        c.clear()
        want.clear()
    return {"pack": ("samples/s", mine, ref), "pack_again": ("samples/s", again, ref)}


def arkouda_measure(a):
    """The Arkouda endpoint against the native one on one daemon, both over tcp loopback
    from REQ sockets (as Arkouda's client uses): upload of a.bytes of int64 (array<int64,1>,
    one frame, against put in 1 MiB frames), download (tondarray, one frame, against get),
    a small round trip (note against ping), and compute: binopvv + and sumAll against the
    native binop and reduce they translate onto (GB/s of input)."""
    n = a.bytes // 8
    data = np.arange(n, dtype="<i8")
    ak_end = free_tcp_endpoint()
    d = Daemon(locales=a.locales, endpoint=free_tcp_endpoint(),
               extra_args=["--arkouda-endpoint", ak_end])
    ctx = zmq.Context.instance()
    ak, nat = ctx.socket(zmq.REQ), ctx.socket(zmq.REQ)
    ak.connect(ak_end)
    nat.connect(d.endpoint)

    def ak_call(cmd, params, payload=None):
        args = json.dumps([json.dumps({"key": k, "dtype": "str", "val": v})
                           for k, v in params.items()])
        env = json.dumps({"user": "bench", "token": "", "cmd": cmd,
                          "format": "BINARY" if payload is not None else "STRING",
                          "args": args, "size": len(params)}).encode()
        if payload is None:
            ak.send(env)
        else:
            ak.send_multipart([env + b"BINARY_PAYLOAD", payload], copy=False)
        return ak.recv(copy=False)

    def nat_call(header, frames=()):
        nat.send_multipart([msgpack.packb(header), *frames], copy=False)
        return nat.recv_multipart(copy=False)

    view = memoryview(data).cast("B")
    chunks = [view[i:i + MIB] for i in range(0, len(view), MIB)]
    gb = a.bytes / 1e9
    up, nup, down, ndown, ping, nping = [], [], [], [], [], []
    binop, nbinop, total, ntotal = [], [], [], []
    rup, rdown, up2, down2 = [], [], [], []
    # the dialect's own limit: one frame of the same bytes each way between two REQ/REP
    # sockets (the far end a thread here: it receives into, and sends from, fresh memory
    # as a server must)
    raw_end = free_tcp_endpoint()
    rep = ctx.socket(zmq.REP)
    rep.bind(raw_end)

    def raw_server():
        for _ in range(2 * a.runs):
            msg = rep.recv(copy=False)
            if len(msg) > 16:
                rep.send(b"ok")
            else:
                rep.send(np.frombuffer(view, dtype=np.uint8).copy(), copy=False)

    server = threading.Thread(target=raw_server)
    server.start()
    raw = ctx.socket(zmq.REQ)
    raw.connect(raw_end)
    def ak_up():
        t = time.perf_counter()
        reply = json.loads(bytes(ak_call("array<int64,1>", {
            "dtype": "int64", "shape": json.dumps([str(n)]), "seg_string": "False"}, view)))
        up.append(gb / (time.perf_counter() - t))
        return reply["msg"].split()[1]

    def nat_up():
        t = time.perf_counter()
        hdr = msgpack.unpackb(bytes(nat_call(
            {"v": 1, "cmd": "put", "args": {"dtype": "int64", "shape": [n]},
             "buffers": [{"name": "values", "nbytes": a.bytes}]}, chunks)[0]))
        nup.append(gb / (time.perf_counter() - t))
        return hdr["result"]["object"]["name"]

    def ak_down(name):
        t = time.perf_counter()
        frame = ak_call("tondarray<int64,1>", {"array": name})
        down.append(gb / (time.perf_counter() - t))
        assert len(frame) == a.bytes

    def nat_down(name):
        t = time.perf_counter()
        got = sum(len(f) for f in nat_call({"v": 1, "cmd": "get", "args": {"name": name}})[1:])
        ndown.append(gb / (time.perf_counter() - t))
        assert got == a.bytes

    xs = [msgpack.unpackb(bytes(nat_call({"v": 1, "cmd": "create", "args": {
        "dtype": "int64", "fill": "arange", "start": k, "stop": n + k}})[0]))["result"]["object"]["name"]
        for k in (0, 5)]
    try:
        for run in range(a.runs):
            # alternate which side goes first, so neither always meets a warmer cache
            if run % 2:
                native, name = nat_up(), ak_up()
                nat_down(native)
                ak_down(name)
            else:
                name, native = ak_up(), nat_up()
                ak_down(name)
                nat_down(native)
            ak_call("delete", {"name": name})
            nat_call({"v": 1, "cmd": "delete", "args": {"names": [native]}})
            # the same Arkouda transfers again, each beside its one-frame reference
            t = time.perf_counter()
            raw.send(view, copy=False)
            raw.recv()
            rup.append(gb / (time.perf_counter() - t))
            name = ak_up()
            up2.append(up.pop())
            t = time.perf_counter()
            raw.send(b"get")
            frame = raw.recv(copy=False)
            rdown.append(gb / (time.perf_counter() - t))
            assert len(frame) == a.bytes
            del frame
            ak_down(name)
            down2.append(down.pop())
            ak_call("delete", {"name": name})
            pings, npings = [], []
            for _ in range(a.pings):
                t = time.perf_counter()
                ak_call("note", {"message": "bench"})
                pings.append(time.perf_counter() - t)
                t = time.perf_counter()
                nat_call({"v": 1, "cmd": "ping"})
                npings.append(time.perf_counter() - t)
            ping.append(statistics.median(pings) * 1e6)
            nping.append(statistics.median(npings) * 1e6)
            # compute, the same two arrays through either door, alternating who goes first
            for door in ("ak", "nat") if run % 2 == 0 else ("nat", "ak"):
                t = time.perf_counter()
                if door == "ak":
                    made = json.loads(bytes(ak_call("binopvv<int64,int64,1>", {
                        "op": "+", "a": xs[0], "b": xs[1]})))["msg"].split()[1]
                    binop.append(2 * gb / (time.perf_counter() - t))
                    t = time.perf_counter()
                    ak_call("sumAll<int64,1>", {"x": xs[0], "skipNan": "False"})
                    total.append(gb / (time.perf_counter() - t))
                else:
                    made = msgpack.unpackb(bytes(nat_call({"v": 1, "cmd": "binop", "args": {
                        "op": "+", "a": xs[0], "b": xs[1]}})[0]))["result"]["object"]["name"]
                    nbinop.append(2 * gb / (time.perf_counter() - t))
                    t = time.perf_counter()
                    nat_call({"v": 1, "cmd": "reduce", "args": {"array": xs[0], "op": "sum"}})
                    ntotal.append(gb / (time.perf_counter() - t))
                nat_call({"v": 1, "cmd": "delete", "args": {"names": [made]}})
    finally:
        ak.close()
        nat.close()
        raw.close()
        server.join(timeout=60)
        rep.close()
        d.cleanup()
    return {"ak_upload": ("GB/s", up, nup), "ak_download": ("GB/s", down, ndown),
            "ak_upload_raw": ("GB/s", up2, rup), "ak_download_raw": ("GB/s", down2, rdown),
            "ak_ping": ("us", ping, nping), "ak_binop": ("GB/s", binop, nbinop),
            "ak_sum": ("GB/s", total, ntotal)}


GROUPS = {"raw": ("ping, tohdf/readhdf vs write/pread, put + get (h5ark-bench)", raw_measures),
          "h5py": ("tohdf/readhdf vs h5py", h5py_measures),
          "small": ("readhdf of small files vs an h5py loop", small_files_measure),
          "range": ("readhdf start/stop of a large set vs a small one and h5py", range_measure),
          "exetera": ("readhdf of an ExeTera dataframe vs h5py", exetera_measure),
          "awkward": ("readhdf of a jagged awkward array vs h5py + numpy", awkward_measure),
          "writepart": ("writepart of a field in 1 MiB parts vs write+fsync and h5py",
                        writepart_measure),
          "memory": ("peak memory of fresh daemons", memory_measure),
          "scaling": ("groupby and gzip tohdf, 2 locales vs 1", scaling_measures),
          "gzip": ("gzip tohdf vs zlib on the same chunks", gzip_zlib_measure),
          "ranks": ("the daemon as R = 1, 2, 3 ranks vs R = 1 and raw MPI / I/O", ranks_measures),
          "pack": ("pack of LBANN samples vs an h5py + numpy loop", pack_measure),
          "packlayout": ("a first pack of LBANN samples in each HDF5 layout vs an h5py + "
                         "numpy loop", pack_layouts_measure),
          "arkouda": ("the Arkouda endpoint's transfer and round trip vs the native one",
                      arkouda_measure),
          "checkpoint": ("checkpoint and its restore vs write+fsync and pread of the same bytes",
                         checkpoint_measure),
          "hsds": ("the HSDS endpoint's slab read vs h5py, its round trip vs a native ping",
                   lambda *args: hsds_bench.measure(*args))}  # imported only with the packages


def main():
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, help="runs of every measure (default 5, quick 3)")
    ap.add_argument("--quick", action="store_true", help="small sizes and 3 runs, to try it")
    ap.add_argument("--only", default=",".join(GROUPS),
                    help=f"comma-separated groups of measures, of {', '.join(GROUPS)}")
    ap.add_argument("--build", type=pathlib.Path, default=REPO / "build",
                    help="the build directory (default build/)")
    ap.add_argument("--baseline", type=pathlib.Path,
                    help="group gzip: also time this h5arkd (another build) on the same work")
    ap.add_argument("--locales", type=int, default=2,
                    help="locales of the daemons, but for the 1 vs 2 scaling (default 2)")
    ap.add_argument("--netns", action="store_true",
                    help="group ranks: also R = 2, 3 in network namespaces (root)")
    a = ap.parse_args()
    if MISSING:
        sys.exit(f"bench: {MISSING} (scripts/setup --test installs what the benchmark needs; "
                 "bench/run runs it with /usr/bin/python3, which has them)")
    only = a.only.split(",")
    if not set(only) <= set(GROUPS):
        ap.error(f"--only takes {', '.join(GROUPS)}")
    a.runs = a.runs or (3 if a.quick else 5)
    a.bytes = (64 if a.quick else 1024) * MIB
    a.pings = 1000 if a.quick else 5000
    a.small_files, a.small_elems = (200 if a.quick else 1000), 1000
    a.keys = 1_000_000 if a.quick else 10_000_000
    a.ranks_bytes = (32 if a.quick else 256) * MIB
    a.range_bytes, a.range_rows = (256 if a.quick else 10240) * MIB, 1000
    a.ex_rows = 1_000_000 if a.quick else 10_000_000
    a.ak_values, a.ak_lists = (1_000_000, 100_000) if a.quick else (10_000_000, 1_000_000)
    a.wp_sizes = [16 * MIB, (32 if a.quick else 128) * MIB]
    a.pack_files, a.pack_per = (20 if a.quick else 100), 200
    a.layout_files = 10 if a.quick else 25
    # the daemons started from here (tests/python/conftest.py) honour H5ARKD too
    a.daemon = os.environ.setdefault("H5ARKD", str(a.build / "server" / "h5arkd"))
    warnings.simplefilter("ignore", h5ark.H5arkWarning)  # "overwrote ..." on every rerun

    a.tmp = pathlib.Path(tempfile.mkdtemp(prefix="h5ark-bench-"))
    tempfile.tempdir = str(a.tmp)  # the daemons' own directories go there too
    started, load = time.time(), os.getloadavg()[0]
    results, failed = {}, []
    try:
        for name in only:
            what, measure = GROUPS[name]
            progress(what)
            try:
                results.update(measure(a))
            except Exception as e:  # the other measures are still worth a table
                traceback.print_exc()
                failed.append(f"{name} ({type(e).__name__}: {e})")
    finally:
        shutil.rmtree(a.tmp, ignore_errors=True)

    print(f"bench/run: {a.locales} locales, {a.runs} runs, {human_bytes(a.bytes)}, "
          f"{a.pings} pings a run; {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
          f"{time.time() - started:.0f} s")
    if "ranks" in only:  # its own sizes and locales
        print(f"group ranks: {RANKS_LOCALES} locales in all at every R, "
              f"{human_bytes(a.ranks_bytes)}, {a.keys / 1e6:g}M keys"
              f"{', and in network namespaces' if a.netns else ''}")
    print()
    print_table(a, results)
    print("\nratio = h5ark / reference, run by run (throughput: higher is better; latency and "
          "memory: lower); GB = 1e9 bytes, MB = 1e6")
    if failed:
        print("not measured: " + "; ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
