"""Conversion between numpy / Python data and the buffers of `put` and `get`.

pdarray: one `values` buffer, little-endian, C order, bool as one byte 0/1.
strings: `segments` (int64 start offset of each string) and `values` (each string's
UTF-8 bytes followed by one NUL).
"""
import numpy as np

from .errors import ProtocolError

NUMERIC_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                  "uint64", "float32", "float64", "bool")
STR_DTYPE = "str"


def dtype_name(dtype):
    """The protocol's name for a dtype given as a name, a numpy dtype or a Python type."""
    if dtype is str or dtype == STR_DTYPE:
        return STR_DTYPE
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None


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


def encode_pdarray(data, dtype=None):
    """numpy array or sequence -> (put args, [(buffer name, buffer)])."""
    arr = np.asarray(data, dtype=None if dtype is None else dtype_name(dtype))
    if arr.dtype.name not in NUMERIC_DTYPES:
        raise TypeError(f"h5ark arrays hold {', '.join(NUMERIC_DTYPES)} or str; "
                        f"got dtype {arr.dtype}")
    # Only a big-endian or non-contiguous input is copied; the common case is sent in place.
    arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    args = {"objtype": "pdarray", "dtype": arr.dtype.name, "shape": list(arr.shape)}
    return args, [("values", arr)]


def encode_strings(strings):
    """Sequence of str -> (put args, [(buffer name, buffer)])."""
    texts = strings.tolist() if isinstance(strings, np.ndarray) else list(strings)
    encoded = []
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"Strings hold str values; got {type(text).__name__}")
        data = text.encode("utf-8")
        if b"\0" in data:
            # NUL terminates each string on the wire and on disk.
            raise ValueError(f"strings may not contain NUL characters: {text[:40]!r}")
        encoded.append(data)
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


def decode_pdarray(descriptor, buffers):
    """`get` reply of a pdarray -> numpy array viewing the received frame when possible."""
    dtype = np.dtype(descriptor["dtype"]).newbyteorder("<")
    values = _buffer(buffers, "values", "pdarray")
    if values.nbytes % dtype.itemsize:
        raise ProtocolError("bad_reply", f"{values.nbytes} bytes is not a whole number "
                                         f"of {dtype.name} elements")
    arr = np.frombuffer(values, dtype=dtype)
    shape = tuple(descriptor.get("shape") or ())
    if len(shape) > 1 and int(np.prod(shape)) == arr.size:
        arr = arr.reshape(shape)
    return arr.astype(dtype.newbyteorder("="), copy=False)


def decode_strings(buffers):
    """`get` reply of strings -> list of str."""
    segments = np.frombuffer(_buffer(buffers, "segments", "strings"), dtype="<i8")
    values = bytes(_buffer(buffers, "values", "strings"))
    if segments.size == 0:
        return []
    starts = (segments - segments[0]).tolist()  # a ranged get may keep absolute offsets
    ends = starts[1:] + [len(values)]
    if any(e <= s for s, e in zip(starts, ends)):
        raise ProtocolError("bad_reply", "string segments are not increasing offsets "
                                         "into the values buffer")
    # Each string ends with its NUL, one byte before the next string's start.
    return [values[s:e - 1].decode("utf-8") for s, e in zip(starts, ends)]
