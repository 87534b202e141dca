"""The domain's exception tree.

::

    DomainError                 a request breaks a rule of the system
    ├── InvalidSpec             a value is malformed or not allowed (-> INVALID_ARGUMENT, 400)
    └── IllegalTransition       a state machine refuses an operation (-> FAILED_PRECONDITION, 409)

Messages are sentences a person can act on: what is wrong and what is allowed.
"Does not fit" is not an exception: placement returns ``Rejected`` values.
"""

from __future__ import annotations


class DomainError(Exception):
    """A request breaks a rule of the system."""


class InvalidSpec(DomainError):
    """A value is malformed or outside what the system allows."""


class IllegalTransition(DomainError):
    """An operation is not allowed in the current state."""
