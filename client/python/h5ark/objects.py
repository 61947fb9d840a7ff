"""Handles on objects held by the daemon.

A handle is a name plus the descriptor the daemon returned for it; data moves only when
asked for (`to_ndarray`, `to_list`, `to_pandas`, `np.asarray(obj)`, and `obj[key]`, which
indexes as numpy does and fetches only the rows the key names). Handles do not delete their object when
garbage collected: several handles may name one object, and objects read from files are
meant to outlive the Python session that loaded them. Call `delete()` or `Client.clear()`.

Every descriptor becomes the class for its objtype (and dtype / tag) through
`make_object`: pdarray, ArrayView, Datetime, Timedelta, IPv4, Strings, SegArray,
Categorical, GroupBy, DataFrame, Index, MultiIndex, and Awkward (awkward.py). The composite classes are also
constructors, like Arkouda's: `SegArray(segments, values)`, `Categorical(strings)`,
`GroupBy(keys)`, `DataFrame({...})`, `Index(values)`, `MultiIndex([...])`. They accept
handles or Python / numpy / pandas data, which is uploaded first; such uploads are
deleted once the composite holds them (components are shared by reference). They use the
current client unless given `client=`, and take `name=` for the new object's name.

A composite's components are handles too (`sa.values`, `df["col"]`, `g.permutation`),
named by their path `"<parent>/<component>"`.
"""
import math
import sys

import numpy as np

from . import codec
from .errors import H5arkError


def _client_or_current(client):
    if client is not None:
        return client
    from .client import current_client  # client.py imports this module
    return current_client()


# -- row selection ----------------------------------------------------------------------
# `obj[key]` fetches only the first-axis rows the key names: one ranged `get` per run of
# rows, the runs merged across short gaps so that a scattered selection costs a few
# requests rather than one per row.

# Skipping this much data inside one `get` costs about what another request does (on a
# network more, on loopback less): 4096 rows of int64, fewer of wider rows.
GAP_BYTES = 32 << 10
MAX_RANGES = 64   # `get` requests per selection (per component) at most
ITER_BYTES = 1 << 22  # iteration fetches about this much per request


def _row_key(key, shape, what):
    """An index key on an object of `shape` -> (rows, local): `rows` the first-axis rows to
    fetch, a range or an int64 array in the order wanted (repeats allowed), and `local` the
    key that, applied to an array of just those rows, gives what `key` gives on the whole
    array (numpy's semantics, as if the object were a numpy array)."""
    n, ndim = shape[0], len(shape)
    parts = key if isinstance(key, tuple) else (key,)
    used = 0
    for part in parts:
        if part is None or part is Ellipsis:
            continue
        if isinstance(part, np.ndarray) and part.dtype == bool:
            used += max(part.ndim, 1)
        else:
            used += 1
    if used > ndim:
        raise IndexError(f"too many indices for {what}: it has {ndim} "
                         f"dimension{'s' if ndim > 1 else ''}, the key indexes {used}")
    if not parts or parts[0] is None or parts[0] is Ellipsis:
        return range(n), key  # every row takes part; numpy does the rest
    first, rest = parts[0], parts[1:]
    if isinstance(first, (bool, np.bool_)):
        raise TypeError(f"a boolean scalar does not select rows of {what}; use a mask "
                        f"of length {n}")
    if isinstance(first, (int, np.integer)):
        i = int(first)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for {what} of {n} rows")
        i %= n
        return range(i, i + 1), (0, *rest) if isinstance(key, tuple) else 0
    if isinstance(first, slice):
        try:
            rows = range(*first.indices(n))
        except TypeError:
            raise TypeError(f"slice bounds must be integers or None, got {first}") from None
        return rows, (slice(None), *rest) if isinstance(key, tuple) else slice(None)
    if isinstance(first, (str, bytes, float, complex, dict, set)) or first is None:
        raise TypeError(f"{what} takes integer, slice, integer-array or boolean-mask "
                        f"indices, not {type(first).__name__}")
    arr = np.asarray(first)
    if arr.size == 0 and arr.dtype.kind not in "biu" and not isinstance(first, np.ndarray):
        arr = arr.astype(np.int64)  # [] selects nothing, as in numpy
    if arr.dtype.kind == "b":
        if arr.ndim == 0:
            raise TypeError(f"a boolean scalar does not select rows of {what}")
        if arr.shape != tuple(shape[:arr.ndim]):
            raise IndexError(f"boolean mask of shape {arr.shape} does not match {what} of "
                             f"shape {tuple(shape)}")
        hits = np.nonzero(arr)
        rows = hits[0].astype(np.int64)
        return rows, (np.arange(rows.size), *hits[1:], *rest)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} takes integer or boolean index arrays, not {arr.dtype}")
    if arr.size:
        low, high = arr.min(), arr.max()
        if low < -n or high >= n:
            bad = low if low < -n else high
            raise IndexError(f"index {bad} is out of range for {what} of {n} rows")
    flat = arr.astype(np.int64).ravel()
    flat = np.where(flat < 0, flat + n, flat)
    return flat, (np.arange(flat.size).reshape(arr.shape), *rest)


def _cover(rows, row_bytes):
    """Sorted distinct rows -> (starts, stops) of the runs to fetch: rows with less than
    GAP_BYTES between them share a run, and at most MAX_RANGES runs are made (the widest
    gaps split)."""
    gaps = np.diff(rows) - 1
    cuts = np.flatnonzero(gaps > max(1, GAP_BYTES // max(1, row_bytes)))
    if cuts.size >= MAX_RANGES:
        widest = np.argsort(gaps[cuts], kind="stable")[cuts.size - (MAX_RANGES - 1):]
        cuts = np.sort(cuts[widest])
    starts = np.concatenate((rows[:1], rows[cuts + 1]))
    stops = np.concatenate((rows[cuts], rows[-1:])) + 1
    return starts, stops


def _plan(rows, n, row_bytes):
    """rows (a range, or an int64 array in [0, n)) of `row_bytes` each -> ([(start, stop),
    ...] to fetch, and where each wanted row lies in the fetched runs laid end to end:
    None for all of them in order, else a slice or an index array)."""
    if isinstance(rows, range):
        if len(rows) == 0:
            return [(0, 0)], None  # one empty `get` still types the result
        if rows.step == 1:
            return [(rows.start, rows.stop)], None
        if rows.step == -1:
            return [(rows[-1], rows.start + 1)], slice(None, None, -1)
        rows = np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
    if rows.size == 0:
        return [(0, 0)], None
    starts, stops = _cover(np.unique(rows), row_bytes)
    offsets = np.concatenate(([0], np.cumsum(stops - starts)[:-1]))
    run = np.searchsorted(starts, rows, side="right") - 1
    positions = offsets[run] + (rows - starts[run])
    if positions.size == stops[-1] - starts[0] and starts.size == 1 and \
            np.array_equal(positions, np.arange(positions.size)):
        positions = None
    return list(zip(starts.tolist(), stops.tolist())), positions


def _joined(parts, positions):
    """The fetched runs laid end to end, then the wanted rows picked out of them."""
    data = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return data if positions is None else data[positions]


class H5arkObject:
    """Any object in the daemon's registry; the base of every handle class."""

    def __init__(self, client, descriptor):
        self._client = client
        self.descriptor = descriptor

    @classmethod
    def _wrap(cls, client, descriptor):
        """A handle of this class on an existing object, bypassing the constructor (which
        the composite classes use to build new objects)."""
        obj = cls.__new__(cls)
        H5arkObject.__init__(obj, client, descriptor)
        return obj

    def _adopt(self, other):
        """Become a handle on the object `other` names (end of a composite constructor)."""
        H5arkObject.__init__(self, other._client, other.descriptor)

    @property
    def name(self):
        return self.descriptor["name"]

    @property
    def objtype(self):
        return self.descriptor["objtype"]

    @property
    def dtype(self):
        return self.descriptor.get("dtype")

    @property
    def size(self):
        return self.descriptor["size"]

    @property
    def shape(self):
        return tuple(self.descriptor.get("shape", (self.size,)))

    @property
    def ndim(self):
        return self.descriptor.get("ndim", len(self.shape))

    @property
    def itemsize(self):
        return self.descriptor.get("itemsize")

    @property
    def nbytes(self):
        return self.descriptor.get("nbytes")

    @property
    def fieldtype(self):
        """For an object read from an ExeTera field (alone, or as a dataframe's column): the
        field's `fieldtype` attribute (`indexedstring`, `numeric,int32`, ...); else None."""
        return self.descriptor.get("fieldtype")

    @property
    def completed(self):
        """For an object read from an ExeTera field: True or False from the field's
        `completed` mark (over several files, the least of them), None when a file has no
        mark (a write never completed); None too for anything else. A field not completed
        is read as it stands, and read_hdf's warnings name it."""
        return self.descriptor.get("completed")

    @property
    def components(self):
        """Component name -> descriptor, in order, for composites; empty otherwise."""
        return dict(self.descriptor.get("components") or {})

    def component(self, key):
        """The handle of a component (named `"<parent>/<key>"` in the daemon)."""
        components = self.descriptor.get("components") or {}
        if key not in components:
            raise KeyError(f"{self.objtype} {self.name!r} has no component {key!r}; it has "
                           f"{', '.join(map(repr, components)) or 'none'}")
        return make_object(self._client, components[key])

    def _optional_component(self, key):
        return self.component(key) if key in (self.descriptor.get("components") or {}) \
            else None

    def _fetch(self, start=None, stop=None):
        """`get` the object and decode it (see codec.decode)."""
        reply = self._client.get(self.name, start=start, stop=stop)
        return codec.decode(reply.result["object"], reply.buffers)

    @classmethod
    def _python(cls, descriptor, data):
        """Decoded `get` data of an object of this class -> its natural Python value
        (numpy array for a column; overridden per class)."""
        return data

    @classmethod
    def _select(cls, client, descriptor, rows):
        """The decoded `get` data (as `codec.decode` gives it) of just the first-axis
        `rows` (a range, or an int64 array in the order wanted), fetching only those."""
        raise TypeError(f"a {descriptor.get('objtype')} has no rows to select; select "
                        f"from its components")

    def _what(self):
        return f"{type(self).__name__} {self.name!r}"

    @classmethod
    def _pandas(cls, descriptor, data):
        """The same as a pandas column or index (a Categorical stays categorical)."""
        return cls._python(descriptor, data)

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        field = "" if self.fieldtype is None else \
            f", fieldtype={self.fieldtype!r}, completed={self.completed!r}"
        return (f"{type(self).__name__}(name={self.name!r}, objtype={self.objtype!r}, "
                f"dtype={str(self.dtype)!r}, size={self.size}, shape={self.shape}{field})")

    def refresh(self):
        """Re-read the descriptor from the daemon (raises NotFoundError once deleted)."""
        self.descriptor = self._client.info([self.name])[0].descriptor
        return self

    def delete(self):
        """Remove the object from the daemon's registry."""
        return self._client.delete(self)

    def to_hdf(self, path, dataset=None, mode="truncate", file_type="distribute",
               dataframe_layout=None, compression=None, compression_level=None):
        """Write this object as `dataset` (default: its name) to `path`; mode `truncate`,
        `append` or `update` (replace the dataset in existing files); `compression`
        `gzip` at `compression_level` 1-9 as in Client.to_hdf."""
        return self._client.to_hdf({dataset or self.name: self}, path, mode=mode,
                                   file_type=file_type, dataframe_layout=dataframe_layout,
                                   compression=compression,
                                   compression_level=compression_level)

    def update_hdf(self, path, dataset=None, file_type="distribute", dataframe_layout=None,
                   compression=None, compression_level=None):
        """Replace `dataset` (default: this object's name) in the existing files at `path`."""
        return self.to_hdf(path, dataset, mode="update", file_type=file_type,
                           dataframe_layout=dataframe_layout, compression=compression,
                           compression_level=compression_level)


class _Rows:
    """numpy-style access to an object's rows (its first axis): `obj[key]` with an
    integer, a slice, a boolean mask or an integer array (for an N-d array, a tuple of
    keys as numpy takes them) fetches only the rows the key names and returns what numpy
    would return for the same key on `obj.to_ndarray()`; `np.asarray(obj)` fetches all."""

    def __getitem__(self, key):
        rows, local = _row_key(key, self.shape, self._what())
        data = self._select(self._client, self.descriptor, rows)
        return self._python(self.descriptor, data)[local]

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError(f"{self._what()} is held by the daemon: reading it makes "
                             f"a new array (copy=False cannot be honoured)")
        data = self.to_ndarray()
        return data if dtype is None else data.astype(dtype, copy=False)

    def __iter__(self):
        # a block of rows per request, not a request per row
        n = len(self)
        step = max(1, ITER_BYTES * n // max(1, self.nbytes or 0))
        for start in range(0, n, step):
            yield from self[start:start + step]


# -- arrays -----------------------------------------------------------------------------

class pdarray(_Rows, H5arkObject):
    """A numeric array; dtype `bigint` for arbitrary-precision integers (limbs as
    components `Limb_0` ...)."""

    @property
    def dtype(self):
        dtype = self.descriptor["dtype"]
        return dtype if dtype == codec.BIGINT_DTYPE else np.dtype(dtype)

    @property
    def tag(self):
        """`datetime64[ns]`, `timedelta64[ns]`, `ipv4` or None."""
        return self.descriptor.get("tag")

    @property
    def max_bits(self):
        """bigint only: the bit width values must fit in (-1: unbounded)."""
        return self.descriptor.get("max_bits")

    def to_ndarray(self, start=None, stop=None):
        """The elements [start, stop) (default: all; an ArrayView's first-axis rows) as a
        numpy array: N-d for an ArrayView, datetime64[ns] / timedelta64[ns] for tagged
        times, an object array of Python ints for a bigint."""
        reply = self._client.get(self.name, start=start, stop=stop)
        return self._python(reply.result["object"],
                            codec.decode_pdarray(reply.result["object"], reply.buffers))

    def to_list(self, start=None, stop=None):
        return self.to_ndarray(start, stop).tolist()

    @classmethod
    def _select(cls, client, descriptor, rows):
        shape = tuple(descriptor.get("shape") or (descriptor["size"],))
        width = math.prod(shape[1:])  # `get` ranges count first-axis rows
        ranges, positions = _plan(rows, shape[0], width * (descriptor.get("itemsize") or 8))
        parts = []
        for start, stop in ranges:
            reply = client.get(descriptor["name"], start=start, stop=stop)
            data = codec.decode_pdarray(reply.result["object"], reply.buffers)
            parts.append(data.reshape((stop - start, *shape[1:])))
        return _joined(parts, positions)

    def reshape(self, *shape, name=None):
        """The same data with another shape (shared, not copied): an ArrayView, or a
        pdarray for a 1-D shape. One dimension may be -1."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return self._client.reshape(self, shape, name=name)


class ArrayView(pdarray):
    """An N-d array: a flat pdarray's data with a `shape` (`to_ndarray()` is N-d; `len`
    and row selection are along the first axis)."""


class Datetime(pdarray):
    """int64 nanoseconds since the epoch, tagged `datetime64[ns]`."""


class Timedelta(pdarray):
    """int64 nanoseconds, tagged `timedelta64[ns]`."""


class IPv4(pdarray):
    """IPv4 addresses as uint64 (or int64) numbers, tagged `ipv4`. `to_list()` and
    `to_ndarray()` give dotted strings, `export_uint()` the numbers."""

    @classmethod
    def _python(cls, descriptor, data):
        return codec.as_object_array(codec.format_ipv4(data))

    def export_uint(self, start=None, stop=None):
        """The addresses as uint64 numbers."""
        reply = self._client.get(self.name, start=start, stop=stop)
        return codec.decode_pdarray(reply.result["object"], reply.buffers).astype(np.uint64)


class Strings(_Rows, H5arkObject):
    """An array of UTF-8 strings."""

    @property
    def dtype(self):
        return codec.STR_DTYPE

    @classmethod
    def _python(cls, descriptor, data):
        return codec.as_object_array(data)

    def to_list(self, start=None, stop=None):
        """The strings [start, stop) (default: all) as a list of str."""
        reply = self._client.get(self.name, start=start, stop=stop)
        return codec.decode_strings(reply.buffers)

    def to_ndarray(self, start=None, stop=None):
        """The strings [start, stop) as a numpy object array of str."""
        return codec.as_object_array(self.to_list(start, stop))

    @classmethod
    def _select(cls, client, descriptor, rows):
        size = descriptor["size"]
        # an offset plus the row's share of the text
        row_bytes = 8 + (descriptor.get("bytes") or 0) // max(1, size)
        ranges, positions = _plan(rows, size, row_bytes)
        parts = []
        for start, stop in ranges:
            reply = client.get(descriptor["name"], start=start, stop=stop)
            parts.append(codec.as_object_array(codec.decode_strings(reply.buffers)))
        return _joined(parts, positions)


# -- building composites from Python data -----------------------------------------------

def _is_pandas(data, kind):
    """isinstance(data, pandas.<kind>), without importing pandas when the caller did not."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(data, getattr(pd, kind))


def _is_nested(data):
    """A sequence of sequences (rows of a SegArray), not an N-d numpy array."""
    if isinstance(data, np.ndarray):
        return data.dtype.kind == "O" and data.ndim == 1 and data.size > 0 and all(
            isinstance(x, (list, tuple, np.ndarray)) for x in data)
    return (isinstance(data, (list, tuple)) and len(data) > 0
            and all(isinstance(x, (list, tuple, np.ndarray)) for x in data))


class _Uploads:
    """Objects uploaded while building a composite; deleted when it is built (the
    composite keeps its own references) or when building fails."""

    def __init__(self, client):
        self.client, self.objects = client, []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self.objects:
            return
        try:
            self.client.delete(*self.objects)
        except H5arkError:
            if exc is None:  # otherwise the failure that ended the build matters more
                raise

    def keep(self, obj):
        self.objects.append(obj)
        return obj

    def object(self, data, dtype=None):
        """A handle for `data`: itself if already one, else the uploaded data (pandas
        Series and Categorical, lists of lists as SegArray, numpy arrays, sequences)."""
        if isinstance(data, H5arkObject):
            return data
        if _is_pandas(data, "Series") or _is_pandas(data, "Index"):
            if str(data.dtype) == "category":
                data = data.array
            else:
                data = _pandas_values(data)
        if _is_pandas(data, "Categorical"):
            return self.keep(Categorical.from_pandas(data, client=self.client))
        if _is_nested(data):
            return self.keep(SegArray(data, dtype=dtype, client=self.client))
        return self.keep(self.client.array(data, dtype=dtype))


def _pandas_values(series):
    """A pandas Series / Index -> numpy data h5ark can send (str columns as str)."""
    if getattr(series.dtype, "tz", None) is not None:
        raise TypeError("timezone-aware datetimes are not supported; convert to UTC "
                        "and drop the zone (.dt.tz_convert(None))")
    values = series.to_numpy()
    return values.astype(object) if str(series.dtype) == "string" else values


# -- composites -------------------------------------------------------------------------

class SegArray(_Rows, H5arkObject):
    """An array of variable-length sub-arrays: `segments` (int64 start of each in
    `values`) and `values` (a pdarray or Strings).

        SegArray(segments, values)          # handles or numpy / list data
        SegArray([[1, 2], [], [3]])         # from rows (lists or arrays; str rows too)
    """

    def __init__(self, segments, values=None, *, dtype=None, name=None, client=None):
        client = _client_or_current(client)
        with _Uploads(client) as uploads:
            if values is None:
                segments, values = self._flatten(segments, dtype)
                dtype = None
            segs = uploads.object(segments, dtype="int64")
            vals = uploads.object(values, dtype=dtype)
            self._adopt(client.segarray(segs, vals, name=name))

    @staticmethod
    def _flatten(rows, dtype):
        rows = list(rows)
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        segments = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(lengths[:-1], out=segments[1:])
        items = [x for r in rows for x in (r.tolist() if isinstance(r, np.ndarray)
                                           and r.dtype.kind in "OU" else r)]
        if codec.is_string_data(items, dtype):
            return segments, items
        arrays = [np.asarray(r) for r in rows if len(r)]
        if dtype is not None:
            arrays = [a.astype(codec.dtype_name(dtype)) for a in arrays]
        if not arrays:
            return segments, np.array([], dtype=codec.dtype_name(dtype or "float64"))
        return segments, np.concatenate(arrays)

    @property
    def dtype(self):
        dtype = self.descriptor.get("dtype")
        return dtype if dtype in (codec.STR_DTYPE, codec.BIGINT_DTYPE) else np.dtype(dtype)

    @property
    def segments(self):
        return self.component("segments")

    @property
    def values(self):
        return self.component("values")

    @property
    def lengths(self):
        """The length of each sub-array (int64 numpy array)."""
        segments = self.segments.to_ndarray()
        return np.diff(np.append(segments, self.components["values"]["size"]))

    @classmethod
    def _rows(cls, descriptor, data):
        values = data["values"]
        if isinstance(values, list):
            values = codec.as_object_array(values)
        return codec.split_segments(values, data["segments"])

    @classmethod
    def _python(cls, descriptor, data):
        return codec.as_object_array(cls._rows(descriptor, data))

    @classmethod
    def _select(cls, client, descriptor, rows):
        # composites have no ranged `get`: fetch the segments of each run of rows, then
        # the values those segments span, from the components
        n = descriptor["size"]
        segs, vals = descriptor["components"]["segments"], descriptor["components"]["values"]
        ranges, positions = _plan(rows, n, 8)  # runs of segments; values follow them
        found, empty = [], None
        for start, stop in ranges:
            bounds = pdarray._select(client, segs, range(start, min(stop + 1, n)))
            if stop == n:
                bounds = np.append(bounds, vals["size"])
            values = class_for(vals)._select(client, vals, range(int(bounds[0]),
                                                                 int(bounds[-1])))
            if positions is None:  # one run, in order: no need to split it into rows
                return {"segments": bounds[:-1] - bounds[0], "values": values}
            empty = values[:0]
            bounds = (bounds - bounds[0]).tolist()
            found += [values[a:b] for a, b in zip(bounds, bounds[1:])]
        picked = _joined([codec.as_object_array(found)], positions)
        lengths = np.fromiter((len(r) for r in picked), dtype=np.int64, count=len(picked))
        segments = np.zeros(len(picked), dtype=np.int64)
        np.cumsum(lengths[:-1], out=segments[1:])
        return {"segments": segments, "values": np.concatenate([empty, *picked])}

    def to_ndarray(self):
        """An object array of the sub-arrays (numpy arrays; of str for strings)."""
        return self._python(self.descriptor, self._fetch())

    def to_list(self):
        """The sub-arrays as a list of lists."""
        return [row.tolist() for row in self._rows(self.descriptor, self._fetch())]


class Categorical(_Rows, H5arkObject):
    """Strings stored as int64 `codes` into distinct `categories` (plus the NA category).

        Categorical(strings_or_list, keep_groups=False, na_value="N/A")
        Categorical.from_codes(codes, categories, na_value="N/A")
        Categorical.from_pandas(pd.Categorical(...))    # missing values -> na_value
    """

    def __init__(self, values=None, *, codes=None, categories=None, na_value=None,
                 keep_groups=False, name=None, client=None):
        client = _client_or_current(client)
        if _is_pandas(values, "Categorical") or _is_pandas(values, "Series"):
            self._adopt(Categorical.from_pandas(values, na_value=na_value, name=name,
                                                client=client))
            return
        if (values is None) == (codes is None):
            raise TypeError("Categorical takes either values or codes and categories")
        if codes is not None and categories is None:
            raise TypeError("Categorical codes need categories")
        with _Uploads(client) as uploads:
            if values is not None:
                args = {"values": uploads.object(values, dtype="str"),
                        "keep_groups": bool(keep_groups)}
            else:
                args = {"codes": uploads.object(codes, dtype="int64"),
                        "categories": uploads.object(categories, dtype="str")}
            self._adopt(client.categorical(**args, na_value=na_value, name=name))

    @classmethod
    def from_codes(cls, codes, categories, na_value=None, name=None, client=None):
        return cls(codes=codes, categories=categories, na_value=na_value, name=name,
                   client=client)

    @classmethod
    def from_pandas(cls, data, na_value=None, name=None, client=None):
        """A pandas Categorical (or categorical Series) of str categories; missing
        values take the NA category."""
        data = getattr(data, "array", data)
        categories = list(data.categories)
        if not all(isinstance(c, str) for c in categories):
            raise TypeError("h5ark categories are strings; got non-str pandas categories")
        na = "N/A" if na_value is None else na_value
        codes = np.asarray(data.codes, dtype=np.int64)
        if (codes < 0).any():
            if na not in categories:
                categories = categories + [na]
            codes = np.where(codes < 0, categories.index(na), codes)
        return cls(codes=codes, categories=categories, na_value=na_value, name=name,
                   client=client)

    @property
    def codes(self):
        return self.component("codes")

    @property
    def categories(self):
        return self.component("categories")

    @property
    def permutation(self):
        """With keep_groups: the stable grouping of the values by category; else None."""
        return self._optional_component("permutation")

    @property
    def segments(self):
        """With keep_groups: the start of each category's group in `permutation`."""
        return self._optional_component("segments")

    @property
    def na_value(self):
        return self.descriptor.get("na_value")

    @property
    def na_code(self):
        return self.descriptor.get("na_code")

    @classmethod
    def _python(cls, descriptor, data):
        categories = codec.as_object_array(data["categories"])
        return categories[data["codes"]] if len(categories) else \
            np.empty(0, dtype=object)

    @classmethod
    def _pandas(cls, descriptor, data):
        """pd.Categorical with the NA category as missing values."""
        import pandas as pd
        codes, categories = np.asarray(data["codes"]), list(data["categories"])
        na_code = descriptor.get("na_code")
        if na_code is not None and 0 <= na_code < len(categories):
            del categories[na_code]
            codes = np.where(codes == na_code, -1, codes - (codes > na_code))
        return pd.Categorical.from_codes(codes, categories=categories)

    @classmethod
    def _select(cls, client, descriptor, rows):
        # the rows' codes, and every category (they are the dictionary, not rows)
        codes, categories = (descriptor["components"][k] for k in ("codes", "categories"))
        return {"codes": pdarray._select(client, codes, rows),
                "categories": Strings._select(client, categories, range(categories["size"]))}

    def to_ndarray(self):
        """The values as a numpy object array of str (the NA category as its text)."""
        return self._python(self.descriptor, self._fetch())

    def to_list(self):
        return self.to_ndarray().tolist()

    def to_pandas(self):
        return self._pandas(self.descriptor, self._fetch())


class GroupBy(H5arkObject):
    """The rows of one or more equal-length keys (pdarray, Strings, Categorical) grouped
    by key value: `permutation` (row indices in key order), `segments` (start of each
    group), `unique_key_idx` (first row of each group), `keys`, `ngroups`.

        g = GroupBy(keys)                   # one key or a list of keys
        keys, sums = g.sum(values)          # or g.aggregate(values, "sum")
    """

    def __init__(self, *keys, name=None, client=None):
        client = _client_or_current(client)
        if len(keys) == 1 and isinstance(keys[0], (list, tuple)) and keys[0] and all(
                isinstance(k, (H5arkObject, list, tuple, np.ndarray)) or _is_pandas(k, "Series")
                for k in keys[0]):
            keys = tuple(keys[0])
        if not keys:
            raise TypeError("GroupBy needs at least one key")
        with _Uploads(client) as uploads:
            self._adopt(client.groupby([uploads.object(k) for k in keys], name=name))

    @property
    def ngroups(self):
        return self.descriptor.get("ngroups")

    @property
    def nkeys(self):
        return sum(1 for c in self.descriptor.get("components", {}) if c.startswith("KEY_"))

    @property
    def keys(self):
        """The key objects grouped by (handles on the originals, shared by reference)."""
        return [self.component(f"KEY_{i}") for i in range(self.nkeys)]

    @property
    def permutation(self):
        return self.component("permutation")

    @property
    def segments(self):
        return self.component("segments")

    @property
    def unique_key_idx(self):
        return self.component("unique_key_idx")

    def aggregate(self, values, op, name=None):
        """(unique keys, aggregated values): the keys one handle per key (a single
        handle for one key), in group order; op is count sum min max mean first nunique."""
        client = self._client
        with _Uploads(client) as uploads:
            values = None if values is None else uploads.object(values)
            keys, result = client.aggregate(self, op, values, name=name)
        return (keys[0] if len(keys) == 1 else keys), result

    def count(self, name=None):
        """(unique keys, int64 size of each group)."""
        return self.aggregate(None, "count", name=name)

    def sum(self, values, name=None):
        return self.aggregate(values, "sum", name=name)

    def min(self, values, name=None):
        return self.aggregate(values, "min", name=name)

    def max(self, values, name=None):
        return self.aggregate(values, "max", name=name)

    def mean(self, values, name=None):
        return self.aggregate(values, "mean", name=name)

    def first(self, values, name=None):
        return self.aggregate(values, "first", name=name)

    def nunique(self, values, name=None):
        return self.aggregate(values, "nunique", name=name)


class Index(_Rows, H5arkObject):
    """A row index of one level (pdarray, Strings or Categorical); `names` are its
    labels (pandas' `name`).

        Index(values, names="when")
    """

    def __init__(self, values, names=None, *, name=None, client=None):
        self._build([values], [names] if isinstance(names, str) else names, name, client)

    def _build(self, levels, names, name, client):
        client = _client_or_current(client)
        with _Uploads(client) as uploads:
            self._adopt(client.index([uploads.object(v) for v in levels], names=names,
                                     name=name))

    @classmethod
    def from_pandas(cls, index, name=None, client=None):
        """A pandas Index or MultiIndex."""
        if _is_pandas(index, "MultiIndex"):
            levels = [index.get_level_values(i) for i in range(index.nlevels)]
            return MultiIndex(levels, names=list(index.names), name=name, client=client)
        return Index(index, names=index.name, name=name, client=client)

    @property
    def names(self):
        names = self.descriptor.get("names")
        return list(names) if names is not None else [None] * self.nlevels

    @property
    def dtype(self):
        """The values' dtype (the descriptor's is that of a row number)."""
        return self.levels[0].dtype

    @property
    def nlevels(self):
        return sum(1 for c in self.descriptor.get("components", {}) if c.startswith("IDX_"))

    @property
    def levels(self):
        return [self.component(f"IDX_{i}") for i in range(self.nlevels)]

    @classmethod
    def _level_values(cls, descriptor, data, pandas):
        out = []
        for key, desc in descriptor.get("components", {}).items():
            if key.startswith("IDX_"):
                kind = class_for(desc)
                out.append(kind._pandas(desc, data[key]) if pandas
                           else kind._python(desc, data[key]))
        return out

    @classmethod
    def _python(cls, descriptor, data):
        return cls._level_values(descriptor, data, False)[0]

    @classmethod
    def _select(cls, client, descriptor, rows):
        return {key: class_for(desc)._select(client, desc, rows)
                for key, desc in descriptor["components"].items() if key.startswith("IDX_")}

    @classmethod
    def _pandas(cls, descriptor, data):
        import pandas as pd
        names = descriptor.get("names")
        return pd.Index(cls._level_values(descriptor, data, True)[0],
                        name=names[0] if names else None)

    def to_ndarray(self):
        return self._python(self.descriptor, self._fetch())

    def to_list(self):
        return self.to_ndarray().tolist()

    def to_pandas(self):
        return self._pandas(self.descriptor, self._fetch())


class MultiIndex(Index):
    """A row index of several levels.

        MultiIndex([level0, level1], names=["a", "b"])
    """

    def __init__(self, levels, names=None, *, name=None, client=None):
        self._build(list(levels), names, name, client)

    @property
    def dtype(self):
        """object: the rows are tuples, as in pandas."""
        return np.dtype(object)

    @classmethod
    def _python(cls, descriptor, data):
        return codec.as_object_array(list(zip(*cls._level_values(descriptor, data, False))))

    @classmethod
    def _pandas(cls, descriptor, data):
        import pandas as pd
        return pd.MultiIndex.from_arrays(cls._level_values(descriptor, data, True),
                                         names=descriptor.get("names"))


class DataFrame(H5arkObject):
    """Named columns of equal length (pdarray, Strings, Categorical, SegArray), in order,
    with an optional index.

        DataFrame({"a": np.arange(3), "b": ["x", "y", "z"]}, index=Index(...))
        DataFrame.from_pandas(pandas_df)    # and .to_pandas()
        df.columns, df.index, df["a"], len(df)
    """

    def __init__(self, data, index=None, *, name=None, client=None):
        client = _client_or_current(client)
        if _is_pandas(data, "DataFrame"):
            self._adopt(DataFrame.from_pandas(data, name=name, client=client))
            return
        columns = dict(data)
        for column in columns:
            if not isinstance(column, str):
                raise TypeError(f"column names are str; got {column!r}")
        with _Uploads(client) as uploads:
            handles = [uploads.object(v) for v in columns.values()]
            if index is not None and not isinstance(index, H5arkObject):
                if _is_pandas(index, "Index"):
                    index = uploads.keep(Index.from_pandas(index, client=client))
                else:
                    index = uploads.object(index)
            self._adopt(client.dataframe(handles, column_names=list(columns),
                                         index=index, name=name))

    @classmethod
    def from_pandas(cls, df, name=None, client=None):
        """A pandas DataFrame: numeric, bool, datetime64/timedelta64[ns], str,
        categorical (str categories) and list-valued columns; a default RangeIndex is
        left out, any other index is kept (with its names)."""
        import pandas as pd
        index = df.index
        if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 \
                and index.name is None:
            index = None
        if not df.columns.is_unique:
            raise ValueError("h5ark DataFrame column names must be distinct")
        return cls({c: df[c] for c in df.columns}, index=index, name=name, client=client)

    @property
    def columns(self):
        """The column names, in order."""
        return list(self.descriptor.get("columns") or [])

    @property
    def index(self):
        """The index (Index, MultiIndex, pdarray or Strings), or None."""
        return self._optional_component("Index")

    @property
    def fieldtypes(self):
        """{column: its ExeTera `fieldtype`, or None}, in column order: for a dataframe read
        from an ExeTera file every column is a field (`df[c].completed` gives its mark)."""
        components = self.descriptor.get("components") or {}
        return {c: (components.get(c) or {}).get("fieldtype") for c in self.columns}

    @property
    def shape(self):
        """(rows, columns), as pandas gives it."""
        return (self.size, len(self.columns))

    @property
    def dtypes(self):
        """{column: its dtype}, in column order."""
        components = self.descriptor.get("components") or {}
        return {c: make_object(self._client, components[c]).dtype for c in self.columns}

    def __getitem__(self, key):
        """A column name gives that column's handle, a list of names a list of handles;
        an integer, a slice, a boolean mask or an integer array selects rows, fetched
        alone, as a pandas DataFrame (an integer: a pandas Series), like `.iloc`."""
        if isinstance(key, str):
            if key not in self.columns:
                raise KeyError(key)
            return self.component(key)
        if isinstance(key, (list, tuple)) and all(isinstance(c, str) for c in key):
            return [self[c] for c in key]
        if isinstance(key, tuple) or key is None or key is Ellipsis:
            raise TypeError(f"{self._what()} takes a column name, a list of them, or one "
                            f"row selection, not {key!r}")
        rows, local = _row_key(key, (self.size,), self._what())
        if isinstance(local, tuple) and local[0].ndim != 1:
            raise TypeError(f"row indices of {self._what()} must be 1-D")
        frame = self._frame(self.descriptor, self._select(self._client, self.descriptor, rows),
                            rows)
        return frame.iloc[0] if isinstance(local, int) else frame

    @classmethod
    def _select(cls, client, descriptor, rows):
        return {key: class_for(desc)._select(client, desc, rows)
                for key, desc in descriptor["components"].items()}

    @classmethod
    def _frame(cls, descriptor, data, rows=None):
        """A pandas DataFrame of decoded data; `rows` (the rows it holds, None: all) label
        it when it has no index of its own, as pandas' `.iloc` keeps the labels."""
        import pandas as pd
        components = descriptor["components"]
        columns = list(descriptor.get("columns") or [])

        def convert(key):
            return class_for(components[key])._pandas(components[key], data[key])

        if "Index" in components:
            index = convert("Index")
            if not isinstance(index, pd.Index):
                index = pd.Index(index)
        elif isinstance(rows, range):
            index = pd.RangeIndex(rows.start, rows.stop, rows.step)
        else:
            index = None if rows is None else pd.Index(rows)
        return pd.DataFrame({c: convert(c) for c in columns}, columns=columns, index=index)

    def __contains__(self, column):
        return column in self.columns

    def __iter__(self):
        return iter(self.columns)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError(f"{self._what()} is held by the daemon: reading it makes "
                             f"a new array (copy=False cannot be honoured)")
        return np.asarray(self.to_pandas(), dtype=dtype)

    def to_pandas(self):
        return self._frame(self.descriptor, self._fetch())

    def __repr__(self):
        return f"DataFrame(name={self.name!r}, columns={self.columns}, rows={self.size})"


_CLASSES = {"pdarray": pdarray, "arrayview": ArrayView, "strings": Strings,
            "segarray": SegArray, "categorical": Categorical, "groupby": GroupBy,
            "dataframe": DataFrame, "index": Index, "multiindex": MultiIndex}
_TAGGED = {codec.TAG_DATETIME: Datetime, codec.TAG_TIMEDELTA: Timedelta,
           codec.TAG_IPV4: IPv4}


def class_for(descriptor):
    """The handle class for a descriptor: by objtype, then tag for a pdarray."""
    if descriptor.get("objtype") == "awkward":
        from .awkward import Awkward  # awkward.py imports this module
        return Awkward
    cls = _CLASSES.get(descriptor.get("objtype"), H5arkObject)
    if cls is pdarray and descriptor.get("tag") in _TAGGED:
        cls = _TAGGED[descriptor["tag"]]
    return cls


def make_object(client, descriptor):
    """A handle of the right class on the object a descriptor describes."""
    return class_for(descriptor)._wrap(client, descriptor)
