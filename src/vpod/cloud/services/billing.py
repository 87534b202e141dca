"""Invoices: metering entries of a project, through the pure per-minute computation."""

from __future__ import annotations

from datetime import datetime

from ..billing import Invoice, MeterRecord, check_period, compute_invoice
from .context import CloudContext


class Billing:
    def __init__(self, ctx: CloudContext) -> None:
        self._ctx = ctx

    async def invoice(self, project_id: str, start: datetime, end: datetime) -> Invoice:
        """The project's invoice for ``[start, end)``; minutes after now are not charged."""
        check_period(start, end)
        await self._ctx.db(self._ctx.store.get_project, project_id)
        entries = await self._ctx.db(self._ctx.store.list_meter, project_id=project_id, before=end)
        records = [
            MeterRecord(
                time=e.time,
                project_id=e.project_id,
                resource_type=e.resource_type,
                resource_id=e.resource_id,
                resource_name=e.resource_name,
                item=e.item,
                quantity=e.quantity,
                unit_price_per_hour=e.unit_price_per_hour,
                billable=e.billable,
                state=e.state,
            )
            for e in entries
        ]
        return compute_invoice(
            records, project_id=project_id, start=start, end=end, until=self._ctx.clock.now()
        )
