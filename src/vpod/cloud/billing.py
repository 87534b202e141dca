"""Invoices computed per minute from metering records, for any period. Pure.

Metering appends one :class:`MeterRecord` per state change of a billed
resource (a cluster's compute, a volume): what it is billed as (``item``:
the flavor, or ``volume:TYPE``), how many units (servers, or GiB), the unit
price per hour at that moment, and whether it is billable in that state.
A record holds until the next record of the same resource.

The minute rule (decision): a change takes effect at the start of the UTC
minute in which it happens. So a resource is charged for every whole minute
``[m, m+1)`` whose *last* record before ``m + 1`` says billable: the minute
a cluster is created in is charged, the minute it is deleted or suspended
in is not, and a cluster that lives less than a minute within one minute
costs nothing. Period bounds are rounded down to the minute.

The rounding rule (decision): amounts are whole cents, and a line's amount
for a period is the difference of its *running total* rounded to the cent
(half up) at the period's end and at its start, the running total being the
exact ``minutes × quantity × unit price / 60`` of every minute the line was
ever charged, up to that moment. Rounded running totals telescope, so the
invoices of consecutive periods add up to the invoice of the whole period to
the cent, line by line and in total, and over time no fraction of a cent is
lost or charged twice (a 0.01-per-hour line charges one cent every hour, not
nothing every minute).

Nothing here reads a clock: the caller passes ``until`` (normally "now") so
an invoice for a period that has not ended stops at the present.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from .flavors import CURRENCY
from .model import errors
from .model.metering import MeterEntry

MINUTE = timedelta(minutes=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CENT = Decimal("0.01")
_BEFORE_ALL = -(2**62)
"""A minute before any record: the running total starts there."""


MeterRecord = MeterEntry
"""A billed resource entered a state at ``time``: billing reads metering's entries as they
are kept. ``resource_type`` is ``cluster`` or ``volume``; ``item`` what is sold (a flavor
name, or ``volume:standard``); ``quantity`` its units (1 per vPOD, servers of a GPU cluster,
GiB of a volume); ``state`` the resource's status, for people reading the records."""


@dataclass(frozen=True)
class InvoiceLine:
    resource_type: str
    resource_id: str
    resource_name: str
    item: str
    quantity: int
    unit_price_per_hour: Decimal
    minutes: int
    amount: Decimal
    """In cents: the line's running total to the cent at the period's end minus at its
    start (see the rounding rule above)."""
    billing: str = "on_demand"
    """``on_demand`` (per minute) or ``reserved`` (a reservation, per month)."""
    unit_price_per_month: Decimal | None = None
    """Reserved lines: the price of one unit for a month."""


@dataclass(frozen=True)
class Invoice:
    project_id: str
    start: datetime
    end: datetime
    lines: tuple[InvoiceLine, ...]
    currency: str = CURRENCY
    by_item: dict[str, Decimal] = field(default_factory=dict)

    @property
    def total(self) -> Decimal:
        return sum((line.amount for line in self.lines), Decimal(0)).quantize(CENT)

    @property
    def minutes(self) -> int:
        return sum(line.minutes for line in self.lines)


def minute_of(moment: datetime) -> int:
    """Minutes since the epoch, rounded down (the minute ``moment`` falls in)."""
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment}: pass an aware UTC time")
    return int((moment - _EPOCH) // MINUTE)


def _at_minute(minute: int) -> datetime:
    return _EPOCH + minute * MINUTE


def check_period(start: datetime, end: datetime) -> None:
    """A period asked for (an invoice's, a reservation's utilisation): aware, ``start < end``."""
    if start.tzinfo is None or end.tzinfo is None:
        raise errors.InvalidArgument("give the period's start and end with a time zone (e.g. ...Z)")
    if end <= start:
        when = "when" if end == start else "before"  # an empty period says so
        raise errors.InvalidArgument(
            f"the period ends ({end.isoformat()}) {when} it starts"
            f" ({start.isoformat()}): give an end after the start"
        )


MAX_DAYS = 366
"""The most days one daily breakdown holds (a year, leap or not)."""


def day_windows(start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """``[start, end)`` cut into consecutive 24-hour windows from ``start``, the last one
    ending at ``end``: the periods of a daily breakdown, which add up to the whole."""
    check_period(start, end)
    if end - start > MAX_DAYS * timedelta(days=1):
        raise errors.InvalidArgument(
            f"a daily breakdown covers at most {MAX_DAYS} days: give a shorter period"
            f" (this one is {(end - start).days + 1} days)"
        )
    day = timedelta(days=1)
    windows = []
    moment = start
    while moment < end:
        # Compared before adding: a day past year 9999's last would not exist.
        following = moment + day if end - moment > day else end
        windows.append((moment, following))
        moment = following
    return windows


_Key = tuple[str, str, str, str, int, Decimal]


def compute_invoice(
    records: Iterable[MeterRecord],
    *,
    project_id: str,
    start: datetime,
    end: datetime,
    until: datetime | None = None,
) -> Invoice:
    """The invoice of ``project_id`` for ``[start, end)``, charging nothing after ``until``.

    ``records`` may hold other projects' records and records outside the
    period (those before ``start`` say what state a resource was in when
    the period began); they are filtered here.
    """
    check_period(start, end)
    first = minute_of(start)
    last = minute_of(end)
    if until is not None:
        first = min(first, minute_of(until))
        last = min(last, minute_of(until))
    per_resource: dict[tuple[str, str], list[MeterRecord]] = defaultdict(list)
    for record in records:
        if record.project_id == project_id:
            per_resource[(record.resource_type, record.resource_id)].append(record)
    minutes: dict[_Key, int] = defaultdict(int)
    earlier: dict[_Key, int] = defaultdict(int)
    for history in per_resource.values():
        for key, count in _billable_minutes(history, first, last):
            minutes[key] += count
        for key, count in _billable_minutes(history, _BEFORE_ALL, first):
            earlier[key] += count
    lines = tuple(
        InvoiceLine(
            resource_type=key[0],
            resource_id=key[1],
            resource_name=key[2],
            item=key[3],
            quantity=key[4],
            unit_price_per_hour=key[5],
            minutes=count,
            amount=_cents(earlier[key] + count, key) - _cents(earlier[key], key),
        )
        for key, count in sorted(minutes.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1]))
        if count > 0
    )
    by_item: dict[str, Decimal] = defaultdict(Decimal)
    for line in lines:
        by_item[line.item] += line.amount
    return Invoice(
        project_id=project_id,
        start=_at_minute(minute_of(start)),
        end=_at_minute(minute_of(end)),
        lines=lines,
        by_item=dict(sorted(by_item.items())),
    )


def _cents(minutes: int, key: _Key) -> Decimal:
    """The running total of ``minutes`` charged minutes of a line, rounded half up to the cent."""
    exact = Fraction(minutes * key[4]) * Fraction(key[5]) * 100 / 60
    whole, part = divmod(exact, 1)
    cents = int(whole) + (1 if part >= Fraction(1, 2) else 0)
    return (Decimal(cents) / 100).quantize(CENT, rounding=ROUND_HALF_UP)


def _billable_minutes(
    history: Sequence[MeterRecord], first: int, last: int
) -> Iterable[tuple[_Key, int]]:
    """(line key, minutes) for one resource within minutes ``[first, last)``.

    Each record governs the minutes from its own minute up to the next
    record's minute; several records in one minute leave the last in charge.
    """
    ordered = sorted(history, key=lambda r: r.time)
    for index, record in enumerate(ordered):
        begin = minute_of(record.time)
        stop = minute_of(ordered[index + 1].time) if index + 1 < len(ordered) else last
        begin, stop = max(begin, first), min(stop, last)
        if record.billable and stop > begin:
            key = (
                record.resource_type,
                record.resource_id,
                record.resource_name,
                record.item,
                record.quantity,
                record.unit_price_per_hour,
            )
            yield key, stop - begin
