"""Conversion between numpy / Python data and the buffers of `put` and `get`.

pdarray: one `values` buffer, little-endian, C order, bool as one byte 0/1.
strings: `segments` (int64 start offset of each string) and `values` (each string's
UTF-8 bytes followed by one NUL; a NUL inside a string is data, its end comes from the
offsets).
bigint: buffers `Limb_0` ... `Limb_{k-1}`, each n uint64, least significant limb first.
tagged pdarrays (`datetime64[ns]`, `timedelta64[ns]`, `ipv4`): int64 / uint64 values plus
the descriptor's `tag`.
composites: every component's buffers, named `<component>/<buffer>` recursively.
"""
import ipaddress

import numpy as np

from .errors import ProtocolError

NUMERIC_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                  "uint64", "float32", "float64", "bool")
STR_DTYPE = "str"
BIGINT_DTYPE = "bigint"
TAG_DATETIME, TAG_TIMEDELTA, TAG_IPV4 = "datetime64[ns]", "timedelta64[ns]", "ipv4"
TIME_TAGS = (TAG_DATETIME, TAG_TIMEDELTA)
TAGS = (*TIME_TAGS, TAG_IPV4)


def dtype_name(dtype):
    """The protocol's name for a dtype given as a name, a numpy dtype or a Python type."""
    if dtype is str or dtype == STR_DTYPE:
        return STR_DTYPE
    if isinstance(dtype, str) and dtype == BIGINT_DTYPE:
        return BIGINT_DTYPE
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None


def tag_of(arr):
    """The tag a numpy array is sent with: datetime64[ns] / timedelta64[ns] arrays carry
    theirs; other units are refused rather than silently converted."""
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "mM":
        return None
    if arr.dtype.name not in TIME_TAGS:
        raise TypeError(f"h5ark stores times in nanoseconds; convert {arr.dtype} with "
                        f".astype('{'datetime64' if arr.dtype.kind == 'M' else 'timedelta64'}[ns]')")
    return arr.dtype.name


def is_bigint_data(data, dtype=None):
    """Whether `array()` should send `data` as a bigint: asked for, or Python ints that
    do not fit a 64-bit dtype (numpy gives them an object array)."""
    if dtype is not None:
        return dtype_name(dtype) == BIGINT_DTYPE
    arr = data if isinstance(data, np.ndarray) else None
    if arr is None:
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in data):
            return False
        arr = np.asarray(data)
    return (arr.dtype.kind == "O" and arr.size > 0 and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr.flat))


def is_string_data(data, dtype=None):
    """Whether `array()` should send `data` as strings rather than as a pdarray."""
    if dtype is not None:
        return dtype_name(dtype) == STR_DTYPE
    if isinstance(data, np.ndarray):
        if data.dtype.kind == "U":
            return True
        # An empty object array holds no numbers either; treat it as an empty Strings.
        return data.dtype.kind == "O" and all(isinstance(s, str) for s in data.flat)
    return len(data) > 0 and all(isinstance(s, str) for s in data)


def encode_pdarray(data, dtype=None, tag=None):
    """numpy array or sequence -> (put args, [(buffer name, buffer)]). datetime64[ns] and
    timedelta64[ns] arrays are sent as int64 with their tag; `tag` sets one (ipv4)."""
    arr = np.asarray(data, dtype=None if dtype is None else dtype_name(dtype))
    time_tag = tag_of(arr)
    if time_tag is not None:
        if tag not in (None, time_tag):
            raise ValueError(f"a {arr.dtype} array cannot carry tag {tag!r}")
        arr, tag = arr.view(np.int64), time_tag
    if tag is not None and tag not in TAGS:
        raise ValueError(f"unknown tag {tag!r}; h5ark knows {', '.join(TAGS)}")
    if arr.dtype.name not in NUMERIC_DTYPES:
        raise TypeError(f"h5ark arrays hold {', '.join(NUMERIC_DTYPES)} or str; "
                        f"got dtype {arr.dtype}")
    # Only a big-endian or non-contiguous input is copied; the common case is sent in place.
    arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    args = {"objtype": "pdarray", "dtype": arr.dtype.name, "shape": list(arr.shape)}
    if tag is not None:
        args["tag"] = tag
    return args, [("values", arr)]


def encode_bigint(data, max_bits=-1):
    """Sequence of non-negative ints -> (put args, [("Limb_i", uint64 array), ...]); the
    limb count fits the largest value (at least one limb)."""
    values = [int(v) for v in (data.ravel() if isinstance(data, np.ndarray) else data)]
    if any(v < 0 for v in values):
        raise ValueError("bigint values must be non-negative (limbs are unsigned)")
    if max_bits is None:
        max_bits = -1
    width = max((v.bit_length() for v in values), default=0)
    nlimbs = max(1, -(-width // 64))
    mask = (1 << 64) - 1
    limbs = [np.fromiter(((v >> (64 * i)) & mask for v in values), dtype="<u8",
                         count=len(values)) for i in range(nlimbs)]
    args = {"objtype": "pdarray", "dtype": BIGINT_DTYPE, "shape": [len(values)],
            "max_bits": int(max_bits)}
    return args, [(f"Limb_{i}", limb) for i, limb in enumerate(limbs)]


def parse_ipv4(data):
    """IPv4 addresses as dotted strings, ipaddress objects or integers -> uint64 array."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "iu":
        return data.astype(np.uint64)
    return np.fromiter((int(ipaddress.IPv4Address(v)) for v in data), dtype=np.uint64)


def format_ipv4(numbers):
    """uint64 / int64 numbers -> dotted IPv4 strings."""
    return [str(ipaddress.IPv4Address(int(v) & 0xFFFFFFFF)) for v in numbers]


def encode_strings(strings):
    """Sequence of str -> (put args, [(buffer name, buffer)])."""
    texts = strings.tolist() if isinstance(strings, np.ndarray) else list(strings)
    encoded = []
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"Strings hold str values; got {type(text).__name__}")
        # a NUL in a string is data: the segments say where each string ends
        encoded.append(text.encode("utf-8"))
    lengths = np.fromiter((len(e) + 1 for e in encoded), dtype=np.int64, count=len(encoded))
    segments = np.zeros(len(encoded), dtype="<i8")
    np.cumsum(lengths[:-1], out=segments[1:])
    values = b"\0".join(encoded + [b""]) if encoded else b""
    args = {"objtype": "strings", "dtype": STR_DTYPE, "shape": [len(encoded)]}
    return args, [("segments", segments), ("values", values)]


def _buffer(buffers, name, objtype):
    try:
        return buffers[name]
    except KeyError:
        raise ProtocolError("bad_reply", f"`get` reply for a {objtype} lacks the "
                                         f"`{name}` buffer") from None


def decode_pdarray(descriptor, buffers, prefix=""):
    """`get` reply of a pdarray -> numpy array viewing the received frame when possible;
    a tagged time array comes back as datetime64[ns] / timedelta64[ns], a bigint as an
    object array of Python ints."""
    if descriptor.get("dtype") == BIGINT_DTYPE:
        return decode_bigint(descriptor, buffers, prefix)
    dtype = np.dtype(descriptor["dtype"]).newbyteorder("<")
    values = _buffer(buffers, prefix + "values", "pdarray")
    if values.nbytes % dtype.itemsize:
        raise ProtocolError("bad_reply", f"{values.nbytes} bytes is not a whole number "
                                         f"of {dtype.name} elements")
    arr = np.frombuffer(values, dtype=dtype)
    shape = tuple(descriptor.get("shape") or ())
    width = int(np.prod(shape[1:])) if len(shape) > 1 else 0
    if width and arr.size % width == 0:  # the whole array, or a range of its rows
        arr = arr.reshape((arr.size // width, *shape[1:]))
    arr = arr.astype(dtype.newbyteorder("="), copy=False)
    tag = descriptor.get("tag")
    if tag in TIME_TAGS and arr.dtype.itemsize == 8:
        arr = arr.view(tag)
    return arr


def decode_bigint(descriptor, buffers, prefix=""):
    """The `Limb_i` buffers of a bigint -> numpy object array of Python ints."""
    nlimbs = len(descriptor.get("components") or {}) or max(
        1, (descriptor.get("itemsize") or 8) // 8)
    limbs = []
    for i in range(nlimbs):
        name = f"{prefix}Limb_{i}"
        data = buffers.get(name, buffers.get(name + "/values"))
        if data is None:
            raise ProtocolError("bad_reply", f"`get` reply for a bigint lacks `{name}`")
        limbs.append(np.frombuffer(data, dtype="<u8"))
    if len({limb.size for limb in limbs}) > 1:
        raise ProtocolError("bad_reply", "bigint limbs differ in length")
    out = np.zeros(limbs[0].size, dtype=object)
    for limb in reversed(limbs):
        out = (out << 64) | limb.astype(object)
    return out


def decode_strings(buffers, prefix=""):
    """`get` reply of strings -> list of str."""
    segments = np.frombuffer(_buffer(buffers, prefix + "segments", "strings"), dtype="<i8")
    values = bytes(_buffer(buffers, prefix + "values", "strings"))
    if segments.size == 0:
        return []
    starts = (segments - segments[0]).tolist()  # a ranged get may keep absolute offsets
    ends = starts[1:] + [len(values)]
    if any(e <= s for s, e in zip(starts, ends)):
        raise ProtocolError("bad_reply", "string segments are not increasing offsets "
                                         "into the values buffer")
    # Each string ends with its NUL, one byte before the next string's start.
    return [values[s:e - 1].decode("utf-8") for s, e in zip(starts, ends)]


def decode(descriptor, buffers, prefix=""):
    """Any `get` reply -> Python data: a numpy array (pdarray, arrayview, bigint, tagged),
    a list of str (strings), or for a composite {component: decoded component} in order.
    `prefix` selects a component's buffers (`"values/"`)."""
    objtype = descriptor.get("objtype")
    if objtype == "strings":
        return decode_strings(buffers, prefix)
    if objtype in ("pdarray", "arrayview"):
        return decode_pdarray(descriptor, buffers, prefix)
    components = descriptor.get("components")
    if components is None:
        raise ProtocolError("bad_reply", f"cannot decode objtype {objtype!r}")
    return {name: decode(desc, buffers, f"{prefix}{name}/")
            for name, desc in components.items()}


def as_object_array(items):
    """A 1-D numpy object array holding `items` (lists, arrays or str) as elements."""
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):  # element by element: equal-length lists stay lists
        out[i] = item
    return out


def split_segments(values, segments):
    """Sub-arrays of `values` (numpy array or list) starting at each segment offset."""
    bounds = [int(s) for s in segments] + [len(values)]
    return [values[s:e] for s, e in zip(bounds, bounds[1:])]
