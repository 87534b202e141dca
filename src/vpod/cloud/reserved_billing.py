"""Invoices with reservations: reserved lines per month, covered minutes off the on-demand
lines, and utilisation. Pure (see :mod:`.reservations` for the rules)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from .billing import Invoice, InvoiceLine, MeterRecord, check_period, compute_invoice, minute_of
from .reservations import Plan, cover, held_minutes, reserved_amount


def _window(start: datetime, end: datetime, until: datetime | None) -> tuple[int, int]:
    first, last = minute_of(start), minute_of(end)
    if until is not None:
        first, last = min(first, minute_of(until)), min(last, minute_of(until))
    return first, last


def reserved_item(plan: Plan) -> str:
    return f"reserved:{plan.flavor}"


def invoice_with_reservations(
    records: Iterable[MeterRecord],
    plans: Sequence[Plan],
    *,
    project_id: str,
    start: datetime,
    end: datetime,
    until: datetime | None = None,
) -> Invoice:
    """The project's invoice: on-demand lines (minutes its reservations did not cover) and
    one ``billing="reserved"`` line per reservation charged in the period."""
    check_period(start, end)
    first, last = _window(start, end, until)
    mine = [r for r in records if r.project_id == project_id]
    own_plans = [p for p in plans if p.project_id == project_id]
    covered = cover(mine, own_plans, first, last)
    invoice = compute_invoice(
        covered.records, project_id=project_id, start=start, end=end, until=until
    )
    reserved = []
    for plan in own_plans:
        amount = reserved_amount(plan, first, last)
        begin = max(first, minute_of(plan.starts_at))
        stop = min(last, minute_of(plan.billed_end))
        begun = plan.starts_at < end and (until is None or plan.starts_at <= until)
        if not begun or plan.billed_end <= start:
            continue  # not held in the period (one bought this minute is shown at once)
        reserved.append(
            InvoiceLine(
                resource_type="reservation",
                resource_id=plan.id,
                resource_name=f"{plan.units} × {plan.flavor} ({plan.term})",
                item=reserved_item(plan),
                quantity=plan.units,
                unit_price_per_hour=Decimal(0),
                minutes=max(0, stop - begin),
                amount=amount,
                billing="reserved",
                unit_price_per_month=plan.price_per_unit_month,
            )
        )
    by_item: dict[str, Decimal] = defaultdict(Decimal, invoice.by_item)
    for line in reserved:
        by_item[line.item] += line.amount
    return replace(
        invoice,
        lines=invoice.lines + tuple(reserved),
        by_item=dict(sorted(by_item.items())),
    )


@dataclass(frozen=True)
class Utilisation:
    used_unit_minutes: int
    reserved_unit_minutes: int

    @property
    def ratio(self) -> Fraction:
        if self.reserved_unit_minutes == 0:
            return Fraction(0)
        return Fraction(self.used_unit_minutes, self.reserved_unit_minutes)


def utilisation(
    records: Iterable[MeterRecord],
    plans: Sequence[Plan],
    *,
    start: datetime,
    end: datetime,
    until: datetime | None = None,
) -> dict[str, Utilisation]:
    """Per reservation: used unit-minutes ÷ reserved unit-minutes within the period."""
    check_period(start, end)
    first, last = _window(start, end, until)
    result: dict[str, Utilisation] = {}
    by_project: dict[str, list[Plan]] = defaultdict(list)
    for plan in plans:
        by_project[plan.project_id].append(plan)
    all_records = list(records)
    for project_id, group in by_project.items():
        mine = [r for r in all_records if r.project_id == project_id]
        used = cover(mine, group, first, last).used_unit_minutes
        for plan in group:
            held_first, held_last = held_minutes(plan)
            span = max(0, min(last, held_last) - max(first, held_first))
            result[plan.id] = Utilisation(used[plan.id], span * plan.units)
    return result
