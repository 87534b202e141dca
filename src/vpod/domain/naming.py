"""Identifiers of agents, clusters, allocations, partitions and users.

One rule for every id, chosen so an id is safe everywhere it travels: in a
file name (``<partition>_gcd0.conf``, ``<user>.vipu-cli.hcl``), a Slurm job
name, a Kubernetes label value (at most 63 characters, starting with an
alphanumeric), a URL path segment and a database key. An id is 1 to 63
characters: a letter or digit, then letters, digits, ``.``, ``_`` or ``-``.
"""

from __future__ import annotations

import re

from .errors import InvalidSpec
from .excerpts import excerpt

ID_MAX_LENGTH = 63
ID_RULE = (
    f"use 1 to {ID_MAX_LENGTH} characters: a letter or digit first,"
    " then letters, digits, '.', '_' or '-'"
)
"""The rule in words, for help texts and error messages."""

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

ID_KINDS: tuple[str, ...] = ("agent", "cluster", "allocation", "partition", "user")
"""The kinds of entity that carry an id (the ``kind`` argument of :func:`check_id`)."""


def is_valid_id(value: str) -> bool:
    """Whether ``value`` follows the id rule (see :data:`ID_RULE`)."""
    return len(value) <= ID_MAX_LENGTH and _ID.fullmatch(value) is not None


def check_id(kind: str, value: str) -> str:
    """Return ``value`` if it is a valid id for an entity of ``kind``; raise otherwise.

    The message names the kind, the offending value and the rule, e.g.
    ``partition id 'my job' is not valid: use 1 to 63 characters: ...``.
    """
    if not isinstance(value, str):
        raise InvalidSpec(f"{kind} id must be a string, not {type(value).__name__}: {ID_RULE}")
    if not value:
        raise InvalidSpec(f"{kind} id is empty: {ID_RULE}")
    if len(value) > ID_MAX_LENGTH:
        raise InvalidSpec(f"{kind} id {value[:20]!r}... is {len(value)} characters long: {ID_RULE}")
    if _ID.fullmatch(value) is None:
        raise InvalidSpec(f"{kind} id {excerpt(value, quote=True)} is not valid: {ID_RULE}")
    return value


def check_unique_ids(kind: str, values: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Check every id in ``values`` and that none appears twice; return them as a tuple."""
    seen: set[str] = set()
    for value in values:
        check_id(kind, value)
        if value in seen:
            raise InvalidSpec(
                f"{kind} {excerpt(value, quote=True)} is listed twice: list each {kind} once"
            )
        seen.add(value)
    return tuple(values)


_DIGITS = re.compile(r"(\d+)")


def natural_key(value: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """Sort key that orders the numbers inside ids by value: ag2 before ag10, and
    ``pod16`` before ``pod128``. Digits sort before letters (as in ASCII), letters
    case-insensitively; ties (``ag01``, ``ag1``) fall back to the id as written."""
    parts = _DIGITS.split(value)
    key = tuple(
        (0, int(part)) if n % 2 else (1, part.casefold()) for n, part in enumerate(parts) if part
    )
    return key, value
