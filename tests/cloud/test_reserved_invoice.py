"""A reservation is on its owner's invoice from the moment it is bought, not a minute later."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from vpod.cloud.reservations import Plan, add_months
from vpod.cloud.reserved_billing import invoice_with_reservations

MONTH_START = datetime(2026, 3, 1, tzinfo=UTC)


def _plan(starts_at: datetime) -> Plan:
    return Plan(
        id="rsv-1",
        project_id="p",
        flavor="g2a-ai-fast-v1pod-4",
        units=2,
        term="1y",
        price_per_unit_month=Decimal("1226.40"),
        starts_at=starts_at,
        ends_at=add_months(starts_at, 12),
    )


@pytest.mark.parametrize("seconds_since", [0, 1, 59])
def test_a_reservation_bought_this_minute_is_on_the_invoice_at_once(seconds_since: int) -> None:
    bought = MONTH_START + timedelta(days=3, hours=5, minutes=7, seconds=10)
    now = bought + timedelta(seconds=seconds_since)
    invoice = invoice_with_reservations(
        [],
        [_plan(bought)],
        project_id="p",
        start=MONTH_START,
        end=MONTH_START + timedelta(days=31),
        until=now,
    )
    lines = [line for line in invoice.lines if line.billing == "reserved"]
    assert len(lines) == 1
    assert lines[0].resource_id == "rsv-1"
    assert lines[0].quantity == 2
    assert lines[0].unit_price_per_month == Decimal("1226.40")


def test_a_reservation_outside_the_period_is_not_on_it() -> None:
    bought = MONTH_START + timedelta(days=40)
    invoice = invoice_with_reservations(
        [],
        [_plan(bought)],
        project_id="p",
        start=MONTH_START,
        end=MONTH_START + timedelta(days=31),
        until=bought + timedelta(days=1),
    )
    assert [line for line in invoice.lines if line.billing == "reserved"] == []
