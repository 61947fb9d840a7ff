"""Framing of h5ark messages: the MessagePack header and the raw payload frames.

Bulk bytes never pass through MessagePack. Outgoing buffers are cut into memoryview
slices (no copy; ZeroMQ references them); incoming frames are split back into buffers by
the `nbytes` the header lists, copying only a buffer that spans several frames.
"""
import msgpack
import numpy as np

from .errors import ProtocolError

PROTOCOL_VERSION = 1
FRAME_BYTES = 1 << 20  # senders should use frames of about 1 MiB


def _pack_default(value):
    # numpy scalars and arrays reach headers through user arguments (sizes, seeds, fills).
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot send a {type(value).__name__} in a request header")


def pack_header(header):
    return msgpack.packb(header, use_bin_type=True, default=_pack_default)


def unpack_header(data):
    try:
        header = msgpack.unpackb(data, raw=False)
    except Exception as exc:
        raise ProtocolError("bad_reply", f"reply header is not MessagePack: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("bad_reply", "reply header is not a map")
    if header.get("v") != PROTOCOL_VERSION:
        raise ProtocolError("bad_reply",
                            f"reply has protocol version {header.get('v')!r}, expected 1")
    return header


def as_bytes_view(buffer):
    """A flat unsigned-byte memoryview of any C-contiguous buffer, without copying."""
    view = memoryview(buffer)
    if not view.c_contiguous:
        raise ValueError("payload buffers must be C-contiguous")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def encode_buffers(buffers):
    """[(name, buffer), ...] -> (the header's `buffers` list, payload frames).
    Each buffer is sliced into frames of at most FRAME_BYTES; empty ones add no frame."""
    specs, frames = [], []
    for name, buffer in buffers:
        view = as_bytes_view(buffer)
        specs.append({"name": name, "nbytes": view.nbytes})
        for start in range(0, view.nbytes, FRAME_BYTES):
            frames.append(view[start:start + FRAME_BYTES])
    return specs, frames


def decode_buffers(specs, frames):
    """Split payload frames into {name: memoryview} by the `nbytes` of each spec, whatever
    the frame boundaries. A buffer inside one frame is a view of it; one that spans
    frames is gathered into one new buffer."""
    if not isinstance(specs, list):
        raise ProtocolError("bad_reply", "reply `buffers` is not an array")
    views = [as_bytes_view(f) for f in frames]
    try:
        sizes = [(s["name"], int(s["nbytes"])) for s in specs]
    except (TypeError, KeyError, ValueError):
        raise ProtocolError("bad_reply", f"malformed reply `buffers`: {specs!r}") from None
    expected, received = sum(n for _, n in sizes), sum(v.nbytes for v in views)
    if expected != received:
        raise ProtocolError("bad_reply", f"reply lists {expected} payload bytes "
                                         f"but carries {received}")
    out = {}
    frame, offset = 0, 0
    for name, nbytes in sizes:
        # Skip exhausted (or empty) frames so `frame` points at the next byte.
        while frame < len(views) and offset == views[frame].nbytes:
            frame, offset = frame + 1, 0
        if nbytes == 0:
            out[name] = memoryview(b"")
        elif offset + nbytes <= views[frame].nbytes:
            out[name] = views[frame][offset:offset + nbytes]
            offset += nbytes
        else:
            # np.empty, unlike bytearray, does not zero-fill memory about to be overwritten.
            gathered = memoryview(np.empty(nbytes, dtype=np.uint8))
            filled = 0
            while filled < nbytes:
                while offset == views[frame].nbytes:
                    frame, offset = frame + 1, 0
                take = min(nbytes - filled, views[frame].nbytes - offset)
                gathered[filled:filled + take] = views[frame][offset:offset + take]
                filled += take
                offset += take
            out[name] = gathered
    return out
