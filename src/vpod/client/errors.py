"""The one exception tree of :mod:`vpod.client` and how API answers map onto it.

Every failure a client call can meet is a :class:`VpodError` whose message is
one sentence a person can act on: the server's own sentence when the server
answered, else the client's diagnosis (which endpoint it could not reach and
what to check). ``code`` is the gRPC status name of the failure (the REST and
cloud APIs put the same names in their error bodies), ``status`` the HTTP
status when the failure came over HTTP.

The split that matters to a program is :class:`RetryableError` (the same
call may succeed later: unreachable, UNAVAILABLE, DEADLINE_EXCEEDED, HTTP 503
and 429) versus :class:`PermanentError` (the request or the configuration
must change first).
"""

from __future__ import annotations

from collections.abc import Mapping

from vpod.domain.excerpts import bounded


class VpodError(Exception):
    """Any failure of a :mod:`vpod.client` call; ``str()`` is the sentence to show."""

    code: str = "UNKNOWN"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        endpoint: str = "",
    ) -> None:
        message = bounded(message)  # a server's or a setting's sentence, whatever it quotes
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status
        """The HTTP status, for failures that came over HTTP."""
        self.endpoint = endpoint
        """``host:port`` or the base URL that was called."""


class RetryableError(VpodError):
    """The same call may succeed later; back off and retry."""


class Unreachable(RetryableError):
    """No connection to the endpoint: refused, unresolvable, no route, nothing in time."""

    code = "UNAVAILABLE"


class Unavailable(RetryableError):
    """The server answered that it cannot serve the call now (agents or database down, 503)."""

    code = "UNAVAILABLE"


class DeadlineExceeded(RetryableError):
    """The server was reached but did not answer before the deadline."""

    code = "DEADLINE_EXCEEDED"


class RateLimited(RetryableError):
    """The server asked to slow down (HTTP 429)."""

    code = "RESOURCE_EXHAUSTED"


class PermanentError(VpodError):
    """Retrying the same call will fail the same way: change the request or the setup."""


class InvalidArgument(PermanentError):
    """The request is malformed or names impossible values; the fix is in the request."""

    code = "INVALID_ARGUMENT"


class OutOfRange(InvalidArgument, ValueError):
    """A value the API cannot carry (a number beyond its field, a time outside years 1 to
    9999 in UTC), refused before anything is sent. Also a ``ValueError``, as Python's own
    refusals of such values are."""


class ConfigError(InvalidArgument):
    """A setting cannot be used; the message names the file, line or key and the fix."""


class NotConfigured(PermanentError):
    """No usable setting says where the API is or who is calling (cloud URL or token)."""

    code = "FAILED_PRECONDITION"


class NotFound(PermanentError):
    """No such object, or not one the caller may see."""

    code = "NOT_FOUND"


class Conflict(PermanentError):
    """The request conflicts with the current state (HTTP 409)."""

    code = "ABORTED"


class AlreadyExists(Conflict):
    """An object with this id exists already."""

    code = "ALREADY_EXISTS"


class FailedPrecondition(Conflict):
    """The object's state forbids the call now (still in use, wrong state ...)."""

    code = "FAILED_PRECONDITION"


class NoCapacity(Conflict):
    """No placement fits the request until other work frees hardware."""

    code = "RESOURCE_EXHAUSTED"


class Unauthenticated(PermanentError):
    """Missing or wrong credentials (user id and access key, or token)."""

    code = "UNAUTHENTICATED"


class PermissionDenied(PermanentError):
    """The caller is known but may not do this (not an administrator ...)."""

    code = "PERMISSION_DENIED"


class TlsError(PermanentError):
    """The TLS setup of client and server do not match (CA, certificates, TLS on/off)."""

    code = "UNAVAILABLE"


class WrongEndpoint(PermanentError):
    """The server does not serve this call: the address points at another API."""

    code = "UNIMPLEMENTED"


class ServerError(PermanentError):
    """The server failed in a way it did not explain (INTERNAL, UNKNOWN, HTTP 500): a bug."""

    code = "INTERNAL"


class TaskFailed(PermanentError):
    """A cloud task ended in ERROR; ``task`` is its last state."""

    code = "ABORTED"

    def __init__(self, message: str, task: object) -> None:
        super().__init__(message)
        self.task = task


class Timeout(RetryableError):
    """A wait helper gave up before the object reached the wanted state."""

    code = "DEADLINE_EXCEEDED"


ERROR_OF_CODE: Mapping[str, type[VpodError]] = {
    "INVALID_ARGUMENT": InvalidArgument,
    "OUT_OF_RANGE": InvalidArgument,
    "NOT_FOUND": NotFound,
    "ALREADY_EXISTS": AlreadyExists,
    "FAILED_PRECONDITION": FailedPrecondition,
    "ABORTED": Conflict,
    "RESOURCE_EXHAUSTED": NoCapacity,
    "UNAUTHENTICATED": Unauthenticated,
    "PERMISSION_DENIED": PermissionDenied,
    "UNAVAILABLE": Unavailable,
    "DEADLINE_EXCEEDED": DeadlineExceeded,
    "UNIMPLEMENTED": WrongEndpoint,
    "INTERNAL": ServerError,
    "UNKNOWN": ServerError,
    "DATA_LOSS": ServerError,
}
"""The class of a failure by its gRPC status name (also the ``code`` of HTTP error bodies)."""

ERROR_OF_HTTP_STATUS: Mapping[int, type[VpodError]] = {
    400: InvalidArgument,
    401: Unauthenticated,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    422: InvalidArgument,
    429: RateLimited,
    502: Unavailable,
    503: Unavailable,
    504: DeadlineExceeded,
}
"""The class of an HTTP failure whose body names no known code."""


def error_of_code(code: str, message: str, *, endpoint: str = "") -> VpodError:
    """The exception for a server's status ``code`` (gRPC name) and sentence."""
    return ERROR_OF_CODE.get(code, ServerError)(message, code=code, endpoint=endpoint)


def error_of_http(status: int, code: str, message: str, endpoint: str) -> VpodError:
    """The exception for an HTTP error reply: by its body's code, else by its status."""
    if status == 429:
        return RateLimited(message, code=code or None, status=status, endpoint=endpoint)
    cls = ERROR_OF_CODE.get(code) if code else None
    if cls is None:
        cls = ERROR_OF_HTTP_STATUS.get(status, ServerError if status >= 500 else InvalidArgument)
    return cls(message, code=code or None, status=status, endpoint=endpoint)


def one_line(text: str) -> str:
    """Collapse whitespace so a message from anywhere prints as one line."""
    return " ".join(text.split())
