"""Handles on objects held by the daemon.

A handle is a name plus the descriptor the daemon returned for it; data moves only when
asked for (`to_ndarray`, `to_list`). Handles do not delete their object when garbage
collected: several handles may name one object, and objects read from files are meant to
outlive the Python session that loaded them. Call `delete()` or `Client.clear()`.
"""
import numpy as np

from . import codec


class H5arkObject:
    """Any object in the daemon's registry; composites (segarray, categorical, groupby,
    dataframe, index, ...) are returned as this class."""

    def __init__(self, client, descriptor):
        self._client = client
        self.descriptor = descriptor

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
    def components(self):
        """Component name -> descriptor, for composite objects; empty otherwise."""
        return dict(self.descriptor.get("components", {}))

    def __len__(self):
        return self.size

    def __repr__(self):
        return (f"{type(self).__name__}(name={self.name!r}, objtype={self.objtype!r}, "
                f"dtype={str(self.dtype)!r}, size={self.size}, shape={self.shape})")

    def refresh(self):
        """Re-read the descriptor from the daemon (raises NotFoundError once deleted)."""
        self.descriptor = self._client.info([self.name])[0].descriptor
        return self

    def delete(self):
        """Remove the object from the daemon's registry."""
        return self._client.delete(self)

    def to_hdf(self, path, dataset=None, mode="truncate", file_type="distribute"):
        """Write this object as `dataset` (default: its name) to `path`."""
        return self._client.to_hdf({dataset or self.name: self}, path, mode=mode,
                                   file_type=file_type)


class pdarray(H5arkObject):
    """A numeric array (also an N-d `arrayview`)."""

    @property
    def dtype(self):
        return np.dtype(self.descriptor["dtype"])

    def to_ndarray(self, start=None, stop=None):
        """The elements [start, stop) (default: all) as a numpy array."""
        reply = self._client.get(self.name, start=start, stop=stop)
        return codec.decode_pdarray(reply.result["object"], reply.buffers)

    def to_list(self, start=None, stop=None):
        return self.to_ndarray(start, stop).tolist()


class Strings(H5arkObject):
    """An array of UTF-8 strings."""

    @property
    def dtype(self):
        return codec.STR_DTYPE

    def to_list(self, start=None, stop=None):
        """The strings [start, stop) (default: all) as a list of str."""
        reply = self._client.get(self.name, start=start, stop=stop)
        return codec.decode_strings(reply.buffers)

    def to_ndarray(self, start=None, stop=None):
        """The strings [start, stop) as a numpy object array of str."""
        texts = self.to_list(start, stop)
        arr = np.empty(len(texts), dtype=object)
        arr[:] = texts
        return arr


_CLASSES = {"pdarray": pdarray, "arrayview": pdarray, "strings": Strings}


def make_object(client, descriptor):
    """The handle class for a descriptor's objtype."""
    return _CLASSES.get(descriptor.get("objtype"), H5arkObject)(client, descriptor)
