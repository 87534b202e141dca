"""The service layer's exception tree, mapped once per transport.

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

from vpod.domain.errors import DomainError
from vpod.domain.naming import check_id


class ServiceError(Exception):
    """A use-case could not be carried out; the message says why."""


class InvalidArgument(ServiceError):
    pass


class NotFound(ServiceError):
    pass


class AlreadyExists(ServiceError):
    pass


class NoCapacity(ServiceError):
    pass


class FailedPrecondition(ServiceError):
    pass


class Unauthenticated(ServiceError):
    pass


class PermissionDenied(ServiceError):
    pass


class Unavailable(ServiceError):
    pass


def check_filter(kind: str, value: str | None) -> None:
    """A filter naming an id no entity can have is the caller's mistake, not an empty list."""
    if value:
        try:
            check_id(kind, value)
        except DomainError as exc:
            raise InvalidArgument(str(exc)) from None
