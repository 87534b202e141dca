"""The one error vocabulary every layer speaks, and the domain's own errors.

:class:`Fault` is the base of every error tree in vpod (the domain's below, the
controller's, the cloud's, the agent's and the store's): each says what *kind*
of failure it is (:class:`Kind`, named as gRPC names status codes), whether it
is *temporary* (the same call may succeed later), and carries a sentence a
person can act on. Transports map the kind once each: gRPC in
:func:`vpod.wire.errors.grpc_status`, HTTP in :func:`vpod.wire.errors.http_answer`,
command lines in :func:`vpod.cli.errors.run_cli`.

The domain's tree::

    DomainError                 a request breaks a rule of the system
    ├── InvalidSpec             a value is malformed or not allowed (-> INVALID_ARGUMENT, 400)
    └── IllegalTransition       a state machine refuses an operation (-> FAILED_PRECONDITION, 409)

Messages are sentences a person can act on: what is wrong and what is allowed.
"Does not fit" is not an exception: placement returns ``Rejected`` values.

The service layers' tree (:class:`ServiceError`: invalid argument, not found,
already exists, no capacity, failed precondition, unauthenticated, permission
denied, unavailable) is defined here once, so that every layer that answers
requests names its kinds the same way.
"""

from __future__ import annotations

import enum
from typing import ClassVar


class Kind(enum.StrEnum):
    """What kind of failure: the gRPC status name a transport answers it with."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    ABORTED = "ABORTED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    UNAVAILABLE = "UNAVAILABLE"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    INTERNAL = "INTERNAL"


class Fault(Exception):
    """A failure with a kind, a temporary-or-permanent flag and a sentence to act on."""

    kind: ClassVar[Kind] = Kind.INTERNAL
    temporary: ClassVar[bool] = False
    """True when trying the same thing again later may succeed."""


def is_temporary(exc: BaseException) -> bool:
    """Whether retrying what raised ``exc`` may help."""
    return isinstance(exc, Fault) and exc.temporary


class DomainError(Fault):
    """A request breaks a rule of the system."""

    kind = Kind.INVALID_ARGUMENT


class InvalidSpec(DomainError):
    """A value is malformed or outside what the system allows."""


class IllegalTransition(DomainError):
    """An operation is not allowed in the current state."""

    kind = Kind.FAILED_PRECONDITION


class ServiceError(Fault):
    """A use-case could not be carried out; the message says why. Each kind below is the
    status every transport answers with."""


class InvalidArgument(ServiceError):
    kind = Kind.INVALID_ARGUMENT


class NotFound(ServiceError):
    kind = Kind.NOT_FOUND


class AlreadyExists(ServiceError):
    kind = Kind.ALREADY_EXISTS


class NoCapacity(ServiceError):
    kind = Kind.RESOURCE_EXHAUSTED


class FailedPrecondition(ServiceError):
    kind = Kind.FAILED_PRECONDITION


class Unauthenticated(ServiceError):
    kind = Kind.UNAUTHENTICATED


class PermissionDenied(ServiceError):
    kind = Kind.PERMISSION_DENIED


class Unavailable(ServiceError):
    kind = Kind.UNAVAILABLE
    temporary = True


SERVICE_KINDS: tuple[type[ServiceError], ...] = (
    InvalidArgument,
    NotFound,
    AlreadyExists,
    NoCapacity,
    FailedPrecondition,
    Unauthenticated,
    PermissionDenied,
    Unavailable,
)
"""Every kind of service error a transport may answer with."""
