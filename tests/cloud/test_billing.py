"""Invoices from metering records: the minute rule, suspension, bare metal, periods that add up."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vpod.cloud.billing import MAX_DAYS, MeterRecord, compute_invoice, day_windows
from vpod.cloud.model import errors

T0 = datetime(2026, 3, 1, tzinfo=UTC)
PRICE = Decimal("6.00")  # 0.10 per minute


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def record(
    minute: float,
    billable: bool,
    *,
    resource: str = "c1",
    quantity: int = 1,
    project: str = "p",
    price: Decimal = PRICE,
    state: str = "ACTIVE",
) -> MeterRecord:
    return MeterRecord(
        time=at(minute),
        project_id=project,
        resource_type="cluster",
        resource_id=resource,
        resource_name=resource,
        item="flavor-x",
        quantity=quantity,
        unit_price_per_hour=price,
        billable=billable,
        state=state,
    )


def invoice(records: list[MeterRecord], start: float, end: float, until: float | None = None):  # type: ignore[no-untyped-def]
    return compute_invoice(
        records,
        project_id="p",
        start=at(start),
        end=at(end),
        until=at(until) if until is not None else None,
    )


def test_the_minute_of_creation_is_charged_the_minute_of_deletion_is_not() -> None:
    """Created at 10.5 min, deleted at 20.2 min: minutes 10..19 are charged (10 minutes)."""
    bill = invoice([record(10.5, True), record(20.2, False, state="DELETED")], 0, 60)
    assert bill.minutes == 10
    assert bill.total == Decimal("1.00")
    [line] = bill.lines
    assert (line.item, line.quantity, line.minutes, line.amount) == (
        "flavor-x",
        1,
        10,
        Decimal("1.000000"),
    )


def test_a_cluster_living_less_than_a_minute_within_one_minute_costs_nothing() -> None:
    """Create and delete inside the same minute: the last record of the minute says not billed."""
    assert invoice([record(5.1, True), record(5.9, False)], 0, 60).minutes == 0


def test_suspension_stops_billing_and_resume_restarts_it() -> None:
    """Active 0-10, suspended 10-40 (not billable), active again 40-45: 15 minutes."""
    history = [
        record(0, True),
        record(10, False, state="SUSPENDED"),
        record(40, True),
        record(45, False, state="DELETED"),
    ]
    assert invoice(history, 0, 60).minutes == 15


def test_bare_metal_keeps_billing_while_suspended() -> None:
    """A SUSPENDED record that stays billable (dedicated vPOD) is charged like ACTIVE."""
    history = [record(0, True), record(10, True, state="SUSPENDED"), record(45, False)]
    assert invoice(history, 0, 60).minutes == 45


def test_quantity_and_price_changes_split_lines() -> None:
    """A resize from 2 to 3 servers at minute 20 gives one line per configuration."""
    history = [record(0, True, quantity=2), record(20, True, quantity=3), record(30, False)]
    bill = invoice(history, 0, 60)
    assert [(line.quantity, line.minutes) for line in bill.lines] == [(2, 20), (3, 10)]
    assert bill.total == Decimal("4.00") + Decimal("3.00")


def test_the_period_cuts_the_history_and_nothing_after_now_is_charged() -> None:
    """Records before the period set the state at its start; ``until`` stops the charge."""
    history = [record(-100, True)]
    assert invoice(history, 0, 60).minutes == 60
    assert invoice(history, 0, 60, until=25.5).minutes == 25


def test_other_projects_are_not_on_the_invoice() -> None:
    """Only the project's own records count."""
    history = [record(0, True), record(0, True, project="other", resource="c2")]
    assert [line.resource_id for line in invoice(history, 0, 10).lines] == ["c1"]


def test_volumes_are_charged_per_gib() -> None:
    """100 GiB for 60 minutes at 0.00012 per GiB-hour is 0.012, billed as 0.01 (whole cents)."""
    volume = MeterRecord(
        time=at(0),
        project_id="p",
        resource_type="volume",
        resource_id="v1",
        resource_name="data",
        item="volume:standard",
        quantity=100,
        unit_price_per_hour=Decimal("0.00012"),
        billable=True,
        state="available",
    )
    bill = invoice([volume], 0, 60)
    assert bill.by_item == {"volume:standard": Decimal("0.01")}


def test_a_period_must_end_after_it_starts() -> None:
    """start >= end is refused with both times in the sentence, an empty period as one."""
    with pytest.raises(errors.InvalidArgument, match=r"ends .* before it starts"):
        invoice([], 10, 9)
    with pytest.raises(errors.InvalidArgument, match=r"ends .* when it starts .*: give an end"):
        invoice([], 10, 10)


changes = st.lists(
    st.tuples(st.integers(0, 24 * 60 * 60), st.booleans(), st.integers(1, 4)),
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(changes, st.integers(0, 24 * 60 * 60), st.integers(0, 24 * 60 * 60))
def test_invoices_of_consecutive_periods_add_up(
    history: list[tuple[int, bool, int]], cut_a: int, cut_b: int
) -> None:
    """[a, c) bills exactly what [a, b) and [b, c) bill together, minute for minute."""
    records = [record(s / 60, b, quantity=q) for s, b, q in history]
    a, c = 0, 24 * 60 + 1
    b = min(cut_a, cut_b) / 60
    whole = invoice(records, a, c)
    first, second = (
        invoice(records, a, b if b > a else a + 1),
        invoice(records, b if b > a else a + 1, c),
    )
    assert first.minutes + second.minutes == whole.minutes
    assert sum(x.amount for x in first.lines + second.lines) == sum(x.amount for x in whole.lines)


PRICES = st.sampled_from(
    [
        Decimal("4.60"),
        Decimal("2.40"),
        Decimal("0.01"),
        Decimal("0.00012"),
        Decimal("34.00"),
        Decimal("1.95"),
        Decimal("8.90"),
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3 * 24 * 60 * 60), st.booleans(), st.integers(1, 200), PRICES),
        max_size=12,
    ),
    st.lists(st.integers(1, 3 * 24 * 60 - 1), max_size=8, unique=True),
    st.one_of(st.none(), st.integers(0, 3 * 24 * 60 * 60)),
)
def test_totals_of_consecutive_periods_sum_to_the_whole_to_the_cent(
    history: list[tuple[int, bool, int, Decimal]], cuts: list[int], now_s: int | None
) -> None:
    """Cut [a, c) anywhere into consecutive periods (seconds, not whole minutes, prices that
    do not divide by 60, a 'now' anywhere): the periods' totals, by line and by item, sum
    to exactly the whole period's, and every amount is whole cents."""
    records = [record(s / 60, b, quantity=q, price=p) for s, b, q, p in history]
    until = None if now_s is None else now_s / 60
    bounds = [0.0, *sorted(c + 0.5 for c in cuts), 3 * 24 * 60.0]
    whole = invoice(records, bounds[0], bounds[-1], until=until)
    parts = [invoice(records, a, b, until=until) for a, b in itertools.pairwise(bounds)]
    assert sum((p.total for p in parts), Decimal(0)) == whole.total
    assert sum(p.minutes for p in parts) == whole.minutes
    by_line: dict[tuple[str, int, Decimal], Decimal] = {}
    for part in parts:
        for line in part.lines:
            key = (line.resource_id, line.quantity, line.unit_price_per_hour)
            by_line[key] = by_line.get(key, Decimal(0)) + line.amount
    whole_lines = {
        (line.resource_id, line.quantity, line.unit_price_per_hour): line.amount
        for line in whole.lines
    }
    assert {k: v for k, v in by_line.items() if v or k in whole_lines} == whole_lines
    for bill in [whole, *parts]:
        assert all(line.amount == line.amount.quantize(Decimal("0.01")) for line in bill.lines)
        assert bill.total == sum((line.amount for line in bill.lines), Decimal(0))


def test_a_small_price_is_charged_in_cents_as_it_accrues_not_rounded_away() -> None:
    """0.01 per hour: each minute alone is worth nothing to the cent, yet an hour of
    one-minute invoices bills one cent in total, in the minute the running total reaches
    half a cent, as the one-hour invoice does."""
    records = [record(0, True, price=Decimal("0.01"))]
    minutes = [invoice(records, m, m + 1).total for m in range(60)]
    assert sum(minutes, Decimal(0)) == invoice(records, 0, 60).total == Decimal("0.01")
    assert minutes.count(Decimal("0.01")) == 1


_MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)
).map(lambda moment: moment.replace(tzinfo=UTC))


@given(_MOMENTS, st.integers(min_value=1, max_value=2 * MAX_DAYS * 86400 * 10**6))
@example(datetime(9999, 12, 1, tzinfo=UTC), 31 * 86400 * 10**6)  # the last day has no next
@example(datetime(9999, 12, 31, 12, tzinfo=UTC), 86400 * 10**6)
@example(datetime(1, 1, 1, tzinfo=UTC), 1)
@settings(max_examples=300)
def test_day_windows_cover_the_period_in_consecutive_days_or_refuse_it_clearly(
    start: datetime, length_us: int
) -> None:
    """Any period of years 1 to 9999, up to its last microsecond: consecutive windows of a
    day, the last one ending at the end; a period over MAX_DAYS days is InvalidArgument."""
    latest = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    end = start + min(timedelta(microseconds=length_us), latest - start)
    if end <= start or end - start > timedelta(days=MAX_DAYS):
        with pytest.raises(errors.InvalidArgument):
            day_windows(start, end)
        return
    windows = day_windows(start, end)
    assert windows[0][0] == start
    assert windows[-1][1] == end
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
    assert all(last - first == timedelta(days=1) for first, last in windows[:-1])
    assert timedelta(0) < windows[-1][1] - windows[-1][0] <= timedelta(days=1)
    assert len(windows) <= MAX_DAYS


def test_a_breakdown_longer_than_max_days_is_refused_with_the_limit() -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    with pytest.raises(errors.InvalidArgument, match=f"at most {MAX_DAYS} days"):
        day_windows(start, start + timedelta(days=MAX_DAYS, seconds=1))
    assert len(day_windows(start, start + timedelta(days=MAX_DAYS))) == MAX_DAYS
