"""Invoices: metering entries and reservations of a project, through the pure computation."""

from __future__ import annotations

from datetime import datetime

from ..billing import Invoice, MeterRecord, check_period, day_windows
from ..reservations import Plan
from ..reserved_billing import Utilisation, invoice_with_reservations, utilisation
from .context import CloudContext
from .reservations import plan_of


class Billing:
    def __init__(self, ctx: CloudContext) -> None:
        self._ctx = ctx

    async def _records(self, project_id: str, end: datetime) -> list[MeterRecord]:
        return await self._ctx.records.list_meter(project_id=project_id, before=end)

    async def utilisation(
        self, project_id: str, plans: list[Plan], start: datetime, end: datetime
    ) -> dict[str, Utilisation]:
        """Used unit-minutes and reserved unit-minutes of each plan within ``[start, end)``."""
        records = await self._records(project_id, end)
        return utilisation(records, plans, start=start, end=end, until=self._ctx.clock.now())

    async def invoice(self, project_id: str, start: datetime, end: datetime) -> Invoice:
        """The project's invoice for ``[start, end)``; minutes after now are not charged."""
        check_period(start, end)
        (invoice,) = await self._invoices(project_id, [(start, end)])
        return invoice

    async def daily(self, project_id: str, start: datetime, end: datetime) -> list[Invoice]:
        """The project's invoice of each day of ``[start, end)`` (:func:`day_windows`), from
        one read of its records: they add up to the period's invoice."""
        return await self._invoices(project_id, day_windows(start, end))

    async def _invoices(
        self, project_id: str, periods: list[tuple[datetime, datetime]]
    ) -> list[Invoice]:
        """The invoice of each of ``periods`` (consecutive), from one read of the records up
        to the last one's end."""
        await self._ctx.records.get_project(project_id)
        records = await self._records(project_id, periods[-1][1])
        plans = [
            plan_of(r) for r in await self._ctx.records.list_reservations(project_id=project_id)
        ]
        now = self._ctx.clock.now()
        return [
            invoice_with_reservations(
                records, plans, project_id=project_id, start=first, end=last, until=now
            )
            for first, last in periods
        ]
