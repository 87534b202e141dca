"""Numbers and times checked against what the V-IPU wire carries, before a request is built.

Protobuf refuses a value its field cannot hold (``2**70`` in a ``uint32``, a
time before year 1 in UTC) with a bare ``ValueError`` or ``OverflowError``
that names neither the field nor the range, and a command line passing it on
would call that an internal error. The request builders pass what callers give
through these checks instead: an :class:`~.errors.OutOfRange` naming the
argument and what it may be.
"""

from __future__ import annotations

from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from vpod.domain.excerpts import excerpt
from vpod.domain.moments import TimeOutOfRange, utc_moment

from .errors import OutOfRange

UINT32_MAX = 2**32 - 1
"""The largest count a V-IPU request carries (its sizes, counts and ids are ``uint32``)."""
UINT64_MAX = 2**64 - 1


def whole(value: int, name: str, *, maximum: int = UINT32_MAX) -> int:
    """``value`` when it is a whole number from 0 to ``maximum``, else OutOfRange."""
    if not 0 <= value <= maximum:
        raise OutOfRange(f"{name} {excerpt(value)} is out of range: use 0 to {maximum}")
    return value


def stamp(moment: datetime, name: str) -> Timestamp:
    """``moment`` (naive: UTC) as a protobuf ``Timestamp``; OutOfRange outside years 1 to 9999
    in UTC."""
    try:
        utc = utc_moment(moment, name)
    except TimeOutOfRange as exc:
        raise OutOfRange(str(exc)) from None
    found = Timestamp()
    found.FromDatetime(utc)
    return found


__all__ = ["UINT32_MAX", "UINT64_MAX", "stamp", "whole"]
