"""The cloud's exception tree: what its rules, use-cases and drivers raise.

::

    CloudError                     a Fault (vpod.domain.errors): a kind, a sentence a person
    │                              can act on, and ``temporary``: whether the same call may
    │                              succeed later
    ├── ServiceError               a use-case refused or could not finish (the service
    │                              layers' one tree, vpod.domain.errors)
    │   ├── InvalidArgument        bad name, flavor, size, request        HTTP 400
    │   ├── NotFound               unknown, or another project's          HTTP 404
    │   ├── AlreadyExists          the name or id is taken                HTTP 409
    │   ├── NoCapacity             no room, or over a quota               HTTP 409
    │   ├── FailedPrecondition     the status forbids it, or busy         HTTP 409
    │   ├── Unauthenticated        no token or a wrong one                HTTP 401
    │   ├── PermissionDenied       the wrong kind of token                HTTP 403
    │   └── Unavailable            temporary: database, controller, race  HTTP 503
    └── DriverError                a back end (compute, volumes) failed   permanent
        └── TemporaryDriverError   temporary: the back end may answer later

``CloudError`` is the pair (``ServiceError``, ``DriverError``) that ``except`` takes: the
service errors are the controller's too, so a controller error that reached the cloud is
one of the same kinds (:mod:`vpod.cloud.vipu` still hands them over as the plain kind,
the controller's own exception kept as the cause).

Temporary errors are what the task runner retries, with backoff, before it
rolls a task back (see :mod:`vpod.cloud.runner`); every other error fails
the task at once. The API maps the tree to HTTP once
(:mod:`vpod.cloud.api.errors`); the controller's own errors never cross into
the cloud's rules: :mod:`vpod.cloud.vipu` translates them at the door.
"""

from __future__ import annotations

from vpod.domain import errors as service
from vpod.domain.errors import Fault, Kind
from vpod.domain.errors import is_temporary as is_temporary

# The service layers' one tree, under the names the cloud's code raises and catches.
ServiceError = service.ServiceError
InvalidArgument = service.InvalidArgument
NotFound = service.NotFound
AlreadyExists = service.AlreadyExists
NoCapacity = service.NoCapacity
FailedPrecondition = service.FailedPrecondition
Unauthenticated = service.Unauthenticated
PermissionDenied = service.PermissionDenied
Unavailable = service.Unavailable


class DriverError(Fault):
    """A back end could not do what was asked, and asking again will not help."""

    kind = Kind.UNAVAILABLE  # to a caller: a back end failed, the message says which


class TemporaryDriverError(DriverError):
    """A back end could not do it now (busy, unreachable, timed out); it may later."""

    temporary = True


CloudError = (ServiceError, DriverError)
"""Everything the cloud raises on purpose, for ``except CloudError``: a service error or a
back end's failure (a bug, any other exception, is not one)."""
