"""The cloud's exception tree: what its rules, use-cases and drivers raise.

::

    CloudError                     a sentence a person can act on; ``temporary`` says
    │                              whether the same call may succeed later
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

from typing import ClassVar


class CloudError(Exception):
    """Something the cloud could not do; the message says what and why."""

    temporary: ClassVar[bool] = False
    """True when trying the same thing again later may succeed."""


class ServiceError(CloudError):
    """A use-case refused a request or could not carry it out."""


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
    """The database, the controller or an agent could not be reached, or a race was lost."""

    temporary = True


class DriverError(CloudError):
    """A back end could not do what was asked, and asking again will not help."""


class TemporaryDriverError(DriverError):
    """A back end could not do it now (busy, unreachable, timed out); it may later."""

    temporary = True


def is_temporary(exc: BaseException) -> bool:
    """Whether retrying what raised ``exc`` may help (only the cloud's temporary errors)."""
    return isinstance(exc, CloudError) and exc.temporary
