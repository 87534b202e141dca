"""The service layer's exception tree (a :class:`~vpod.domain.errors.Fault` each), mapped
once per transport by its kind (:mod:`vpod.wire.errors`).

::

    ServiceError
    ├── InvalidArgument      bad size, spec or name        gRPC INVALID_ARGUMENT   HTTP 400
    ├── NotFound             unknown partition, ...        gRPC NOT_FOUND          HTTP 404
    ├── AlreadyExists        duplicate id                  gRPC ALREADY_EXISTS     HTTP 409
    ├── NoCapacity           no placement fits             gRPC RESOURCE_EXHAUSTED HTTP 409
    ├── FailedPrecondition   state forbids the operation   gRPC FAILED_PRECONDITION HTTP 409
    ├── Unauthenticated      missing or wrong credentials  gRPC UNAUTHENTICATED    HTTP 401
    ├── PermissionDenied     authenticated but not allowed gRPC PERMISSION_DENIED  HTTP 403
    └── Unavailable          agents or database unreachable gRPC UNAVAILABLE       HTTP 503

Every message is a sentence a person can act on. Transports never see
exceptions from the store, the agents or the domain: use-cases translate them.
"""

from __future__ import annotations

from vpod.domain.errors import DomainError, Fault, Kind
from vpod.domain.naming import check_id


class ServiceError(Fault):
    """A use-case could not be carried out; the message says why."""


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


KINDS: tuple[type[ServiceError], ...] = (
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


def check_filter(kind: str, value: str | None) -> None:
    """A filter naming an id no entity can have is the caller's mistake, not an empty list."""
    if value:
        try:
            check_id(kind, value)
        except DomainError as exc:
            raise InvalidArgument(str(exc)) from None
