"""The cloud's exception tree: what its rules, use-cases and drivers raise.

::

    CloudError                     a Fault (vpod.domain.errors): a kind, a sentence a person
    │                              can act on, and ``temporary``: whether the same call may
    │                              succeed later
    ├── ServiceError               a use-case refused or could not finish
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

Temporary errors are what the task runner retries, with backoff, before it
rolls a task back (see :mod:`vpod.cloud.runner`); every other error fails
the task at once. The API maps the tree to HTTP once
(:mod:`vpod.cloud.api.errors`); the controller's own errors never cross into
the cloud's rules: :mod:`vpod.cloud.vipu` translates them at the door.
"""

from __future__ import annotations

from vpod.domain.errors import Fault, Kind
from vpod.domain.errors import is_temporary as is_temporary


class CloudError(Fault):
    """Something the cloud could not do; the message says what and why."""


class ServiceError(CloudError):
    """A use-case refused a request or could not carry it out."""


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
    """The database, the controller or an agent could not be reached, or a race was lost."""

    kind = Kind.UNAVAILABLE
    temporary = True


class DriverError(CloudError):
    """A back end could not do what was asked, and asking again will not help."""

    kind = Kind.UNAVAILABLE  # to a caller: a back end failed, the message says which


class TemporaryDriverError(DriverError):
    """A back end could not do it now (busy, unreachable, timed out); it may later."""

    temporary = True
