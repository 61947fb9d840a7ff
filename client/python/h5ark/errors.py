"""Exceptions and warnings raised by the h5ark client.

Every error reply from the daemon becomes an H5arkError (or the subclass for its code),
so callers can catch one type, or one precise kind of failure, as they need.
"""


class H5arkError(Exception):
    """A request failed. `code` is the protocol's error code (`not_found`, `forbidden`, ...)
    or, for failures detected by the client itself, `timeout`, `bad_reply` or `closed`."""

    code = "internal"

    def __init__(self, code, message):
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self):
        return f"{self.code}: {self.message}"


class BadRequestError(H5arkError):
    code = "bad_request"


class UnknownCommandError(H5arkError):
    code = "unknown_command"


class UnauthorizedError(H5arkError):
    code = "unauthorized"


class NotFoundError(H5arkError):
    code = "not_found"


class AlreadyExistsError(H5arkError):
    code = "already_exists"


class ObjectTypeError(H5arkError):
    code = "type_error"


class SchemaError(H5arkError):
    code = "schema_error"


class StorageError(H5arkError):
    code = "io_error"


class ForbiddenError(H5arkError):
    code = "forbidden"


class ResourceLimitError(H5arkError):
    code = "resource_limit"


class BusyError(H5arkError):
    code = "busy"


class InternalError(H5arkError):
    code = "internal"


class ReplyTimeoutError(H5arkError, TimeoutError):
    """No reply arrived in time; also a builtin TimeoutError."""

    code = "timeout"


class ProtocolError(H5arkError):
    """The daemon's reply does not follow the wire protocol."""

    code = "bad_reply"


class ConnectionClosedError(H5arkError):
    """The client was closed, or no client is connected for the module-level functions."""

    code = "closed"


_BY_CODE = {cls.code: cls for cls in (
    BadRequestError, UnknownCommandError, UnauthorizedError, NotFoundError,
    AlreadyExistsError, ObjectTypeError, SchemaError, StorageError, ForbiddenError,
    ResourceLimitError, BusyError, InternalError)}


def error_for(code, message):
    """The exception for an error reply; unknown codes still give an H5arkError."""
    cls = _BY_CODE.get(code, H5arkError)
    return cls(code, message)


class H5arkWarning(UserWarning):
    """A warning the daemon attached to a successful reply (e.g. files overwritten)."""
