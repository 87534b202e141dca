"""Times callers send (filters, invoice periods): read once, the same way for every transport.

A caller may send a naive time (read as UTC), any UTC offset, or a moment
at the edge of what Python's ``datetime`` holds (year 1 or 9999). Converting
``9999-12-31T23:59:59-23:59`` to UTC leaves that range, so every time is
checked here, and one outside years 1 to 9999 in UTC raises
:class:`TimeOutOfRange` with a sentence, which each API turns into its
``InvalidArgument`` (instead of an ``OverflowError`` deep in the store).
gRPC ``Timestamp`` values are read here too: their seconds and nanos can be
anything an ``int64``/``int32`` holds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp


class TimeOutOfRange(ValueError):
    """A caller's time this API cannot represent; the message says what to give."""


EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)
_RANGE = f"between {EARLIEST.date().isoformat()} and {LATEST.date().isoformat()} in UTC"


def _offset(moment: datetime) -> str:
    minutes = int((moment.utcoffset() or timedelta(0)).total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def utc_moment(moment: datetime, name: str) -> datetime:
    """``moment`` in UTC (naive times are read as UTC); TimeOutOfRange when it cannot be."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):
        raise TimeOutOfRange(
            f"{name} ({moment.replace(tzinfo=None).isoformat()}{_offset(moment)}) is out of"
            f" range: give a time {_RANGE}"
        ) from None


def optional_utc(moment: datetime | None, name: str) -> datetime | None:
    return None if moment is None else utc_moment(moment, name)


def from_timestamp(stamp: Timestamp, name: str) -> datetime:
    """A protobuf ``Timestamp`` as an aware UTC time; TimeOutOfRange when it is not one."""
    if not 0 <= stamp.nanos < 1_000_000_000:
        raise TimeOutOfRange(
            f"{name} has nanos {stamp.nanos}: a Timestamp's nanos are 0 to 999,999,999"
        )
    epoch, second = datetime(1970, 1, 1, tzinfo=UTC), timedelta(seconds=1)
    low, high = (EARLIEST - epoch) // second, (LATEST - epoch) // second  # exact, not floats
    if not low <= stamp.seconds <= high:
        raise TimeOutOfRange(f"{name} is {stamp.seconds} seconds from 1970: give a time {_RANGE}")
    return utc_moment(stamp.ToDatetime(UTC), name)


__all__ = [
    "EARLIEST",
    "LATEST",
    "TimeOutOfRange",
    "from_timestamp",
    "optional_utc",
    "utc_moment",
]
