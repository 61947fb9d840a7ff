"""h5ark: Python client of the h5ark daemon (in-memory arrays and Arkouda-compatible HDF5
over ZeroMQ + MessagePack).

    import h5ark
    h5ark.connect("tcp://127.0.0.1:5555")
    a = h5ark.arange(10)
    a[2:5], a[[0, -1]], np.asarray(a)      # numpy arrays; only the rows asked for are fetched
    a.to_hdf("a.h5", dataset="a")          # a_LOCALE0000.h5, a_LOCALE0001.h5, ...
    h5ark.read_hdf("a_LOCALE*.h5")["a"].to_ndarray()

    df = h5ark.DataFrame.from_pandas(pandas_df)        # composites, as in Arkouda
    keys, sums = h5ark.GroupBy(df["k"]).sum(df["v"])

Module-level functions act on the most recently connected client; `Client` methods of the
same names act on a given one.
"""
import functools
import inspect

from .client import (DEFAULT_CONNECT_TIMEOUT, DEFAULT_ENDPOINT, DEFAULT_TIMEOUT, Client,
                     ReadResult, Reply, Result, connect, current_client)
from .errors import (AlreadyExistsError, BadRequestError, BusyError, ConnectionClosedError,
                     ForbiddenError, H5arkError, H5arkWarning, InternalError,
                     NotFoundError, ObjectTypeError, ProtocolError, ReplyTimeoutError,
                     ResourceLimitError, SchemaError, StorageError, UnauthorizedError,
                     UnknownCommandError)
from .awkward import Awkward
from .lbann import Packed
from .objects import (ArrayView, Categorical, DataFrame, Datetime, GroupBy, H5arkObject,
                      Index, IPv4, MultiIndex, SegArray, Strings, Timedelta, pdarray)

# project(VERSION) in CMakeLists.txt is the version; the tests check that this agrees
__version__ = "0.1.0"

_FORWARDED = ("ping", "config", "status", "zeros", "ones", "full", "arange", "linspace", "randint",
              "uniform", "array", "ip_address", "reshape", "info", "delete", "clear", "share",
              "unshare", "to_hdf", "read_hdf", "repack", "ls", "shutdown", "put_awkward", "pack",
              "binop", "cast", "fill", "reduce", "cumsum", "limit_bits", "h5file")


def _forward(method_name):
    method = getattr(Client, method_name)

    @functools.wraps(method)
    def call(*args, **kwargs):
        return getattr(current_client(), method_name)(*args, **kwargs)

    # Show the method's signature without `self`.
    signature = inspect.signature(method)
    call.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])
    del call.__wrapped__
    return call


for _name in _FORWARDED:
    globals()[_name] = _forward(_name)
del _name


def awkward_array(form, length=None, buffers=None, name=None):
    """An awkward array in the daemon (an Awkward handle), from an ak.Array or from its
    form, length and buffers; see Client.put_awkward."""
    return current_client().put_awkward(form, length, buffers, name=name)


def disconnect():
    """Close the client the module-level functions use."""
    current_client().close()

__all__ = ["connect", "current_client", "Client", "Reply", "Result", "ReadResult",
           "H5arkObject", "pdarray", "Strings", "ArrayView", "Datetime", "Timedelta",
           "IPv4", "SegArray", "Categorical", "GroupBy", "DataFrame", "Index",
           "MultiIndex", "Awkward", "Packed", "awkward_array", "H5arkError", "H5arkWarning",
           "BadRequestError", "UnknownCommandError", "UnauthorizedError", "NotFoundError",
           "AlreadyExistsError", "ObjectTypeError", "SchemaError", "StorageError",
           "ForbiddenError", "ResourceLimitError", "BusyError", "InternalError",
           "ReplyTimeoutError", "ProtocolError", "ConnectionClosedError",
           "DEFAULT_ENDPOINT", "DEFAULT_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT", "disconnect",
           *_FORWARDED]

# ExeTera dataframes: written whole (to_exetera) or a field in parts (writepart, complete,
# exetera_writer)
_FORWARDED_EXETERA = ("to_exetera", "writepart", "complete", "exetera_writer")
for _name in _FORWARDED_EXETERA:
    globals()[_name] = _forward(_name)
del _name
__all__ += list(_FORWARDED_EXETERA)
