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
The tree itself is the service layers' shared vocabulary, defined once in
:mod:`vpod.domain.errors`; this module names it for the controller.
"""

from __future__ import annotations

from vpod.domain.errors import (
    SERVICE_KINDS,
    AlreadyExists,
    DomainError,
    FailedPrecondition,
    InvalidArgument,
    NoCapacity,
    NotFound,
    PermissionDenied,
    ServiceError,
    Unauthenticated,
    Unavailable,
)
from vpod.domain.naming import check_id

__all__ = [
    "KINDS",
    "AlreadyExists",
    "FailedPrecondition",
    "InvalidArgument",
    "NoCapacity",
    "NotFound",
    "PermissionDenied",
    "ServiceError",
    "Unauthenticated",
    "Unavailable",
    "check_filter",
]

KINDS = SERVICE_KINDS
"""Every kind of service error a transport may answer with."""


def check_filter(kind: str, value: str | None) -> None:
    """A filter naming an id no entity can have is the caller's mistake, not an empty list."""
    if value:
        try:
            check_id(kind, value)
        except DomainError as exc:
            raise InvalidArgument(str(exc)) from None
