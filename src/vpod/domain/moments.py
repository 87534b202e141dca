"""Times people give (filters, invoice periods, ages): read the same way on every side.

A caller may give a naive time (read as UTC), any UTC offset, or a moment
at the edge of what Python's ``datetime`` holds (year 1 or 9999). Converting
``9999-12-31T23:59:59-23:59`` to UTC leaves that range, so every time is
checked here, and one outside years 1 to 9999 in UTC raises
:class:`TimeOutOfRange` with a sentence: the controller's APIs turn it into
their ``InvalidArgument``, the client and the command lines into theirs
(instead of an ``OverflowError`` deep in the store, or in a ``Timestamp``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class TimeOutOfRange(ValueError):
    """A caller's time this API cannot represent; the message says what to give."""


EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)
RANGE_TEXT = f"between {EARLIEST.date().isoformat()} and {LATEST.date().isoformat()} in UTC"


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
            f" range: give a time {RANGE_TEXT}"
        ) from None


def optional_utc(moment: datetime | None, name: str) -> datetime | None:
    return None if moment is None else utc_moment(moment, name)


__all__ = ["EARLIEST", "LATEST", "RANGE_TEXT", "TimeOutOfRange", "optional_utc", "utc_moment"]
