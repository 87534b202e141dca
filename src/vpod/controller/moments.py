"""gRPC ``Timestamp`` values callers send, read as times :mod:`vpod.domain.moments` accepts.

A ``Timestamp``'s seconds and nanos can be anything an ``int64``/``int32``
holds; one outside years 1 to 9999 in UTC raises
:class:`~vpod.domain.moments.TimeOutOfRange` with a sentence, which the API
turns into its ``InvalidArgument``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

from vpod.domain.moments import EARLIEST, LATEST, RANGE_TEXT, TimeOutOfRange, utc_moment


def from_timestamp(stamp: Timestamp, name: str) -> datetime:
    """A protobuf ``Timestamp`` as an aware UTC time; TimeOutOfRange when it is not one."""
    if not 0 <= stamp.nanos < 1_000_000_000:
        raise TimeOutOfRange(
            f"{name} has nanos {stamp.nanos}: a Timestamp's nanos are 0 to 999,999,999"
        )
    epoch, second = datetime(1970, 1, 1, tzinfo=UTC), timedelta(seconds=1)
    low, high = (EARLIEST - epoch) // second, (LATEST - epoch) // second  # exact, not floats
    if not low <= stamp.seconds <= high:
        raise TimeOutOfRange(
            f"{name} is {stamp.seconds} seconds from 1970: give a time {RANGE_TEXT}"
        )
    return utc_moment(stamp.ToDatetime(UTC), name)
