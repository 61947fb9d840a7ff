"""Awkward arrays (objtype `awkward`): a form (awkward 2's form JSON), a length and named
buffers, as `ak.to_buffers` gives them and `ak.from_buffers` takes them. awkward itself
is imported only when an `ak.Array` is given or asked for, so the client works without it.
"""
import json
import sys

import numpy as np

from .objects import H5arkObject

AWKWARD_MISSING = ("the awkward package is needed to make or take an ak.Array (pip install "
                   "awkward); without it use .form, .length and .buffers()")


def import_awkward():
    """The awkward module, imported on first use (sys.modules first: it may be loaded)."""
    module = sys.modules.get("awkward")
    if module is not None:
        return module
    try:
        import awkward
    except ImportError as exc:
        raise ImportError(AWKWARD_MISSING) from exc
    return awkward


def is_awkward_array(data):
    """True for an ak.Array (or ak.Record), checked without importing awkward."""
    module = sys.modules.get("awkward")
    kinds = tuple(k for k in (getattr(module, "Array", None), getattr(module, "Record", None))
                  if isinstance(k, type))
    return bool(kinds) and isinstance(data, kinds)


def to_buffers(array):
    """An ak.Array -> (form JSON str, length, {name: buffer})."""
    if not is_awkward_array(array):
        raise TypeError(f"expected an ak.Array, or form, length and buffers; got "
                        f"{type(array).__name__}")
    form, length, buffers = import_awkward().to_buffers(array)
    return form if isinstance(form, str) else form.to_json(), length, buffers


def encode(form, length, buffers):
    """The `put` args and buffers of an awkward array. The form goes as JSON text, which
    the daemon checks (a dict is serialised here; anything else is refused early)."""
    if isinstance(form, dict):
        form = json.dumps(form)
    elif hasattr(form, "to_json"):  # an ak.forms.Form
        form = form.to_json()
    if not isinstance(form, str):
        raise TypeError(f"form must be JSON text or a dict, not {type(form).__name__}")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise TypeError(f"length must be a non-negative int, not {length!r}")
    frames = []
    for name, buffer in buffers.items():
        arr = np.asarray(buffer)
        # Buffers travel little-endian (the form records no byte order).
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        frames.append((str(name), np.ascontiguousarray(arr).view(np.uint8).reshape(-1)))
    return {"objtype": "awkward", "form": form, "length": int(length)}, frames


class Awkward(H5arkObject):
    """An awkward array held by the daemon: `form` (JSON text), `length`, `buffers()`
    ({name: numpy array}, as ak.from_buffers takes them) and `to_awkward()`."""

    @property
    def form(self):
        return self.descriptor["form"]

    @property
    def length(self):
        return self.descriptor["length"]

    def form_dict(self):
        """The form parsed from its JSON."""
        return json.loads(self.form)

    def buffers(self):
        """{buffer name: numpy array}: the whole array's buffers, in the form's preorder,
        each of its component's element type (ak.from_buffers reads them by the form)."""
        reply = self._client.get(self.name)
        dtypes = {name: desc.get("dtype") for name, desc in self.components.items()}
        out = {}
        for name, data in reply.buffers.items():
            dtype = np.dtype(dtypes.get(name) or "uint8").newbyteorder("<")
            raw = np.frombuffer(data, dtype=np.uint8)
            out[name] = raw.view(dtype) if raw.nbytes % dtype.itemsize == 0 else raw
        return out

    def to_awkward(self):
        """The array as an ak.Array (needs the awkward package)."""
        ak = import_awkward()
        return ak.from_buffers(self.form, self.length, self.buffers())

    def __len__(self):
        return self.length

    def to_hdf(self, path, dataset=None, mode="truncate", file_type=None,
               format="awkward", compression=None, compression_level=None):
        """Write this array as `dataset` (default: its name) in awkward 2's HDF5 layout
        (`format="awkward"`) or awkward0's (`"awkward0"`, `compression` `default`,
        `all` or `none`); always one file."""
        return self._client.to_hdf({dataset or self.name: self}, path, mode=mode,
                                   file_type=file_type, compression=compression,
                                   compression_level=compression_level, format=format)

    def update_hdf(self, path, dataset=None, format="awkward", compression=None,
                   compression_level=None):
        """Replace `dataset` (default: this array's name) in the existing file at `path`."""
        return self.to_hdf(path, dataset, mode="update", format=format,
                           compression=compression, compression_level=compression_level)

    def __repr__(self):
        return f"Awkward(name={self.name!r}, length={self.length}, form={self.form!r})"
