"""Metering entries, as invoices read them (written with the changes they record)."""

from __future__ import annotations

from datetime import datetime

from ...model.metering import MeterEntry
from .base import RecordsBase
from .convert import meter_of


class MeterRecords(RecordsBase):
    async def list_meter(
        self,
        *,
        project_id: str | None = None,
        resource_id: str | None = None,
        before: datetime | None = None,
    ) -> list[MeterEntry]:
        """Metering entries in time order, filtered by every criterion given."""
        found = await self._db(
            self._store.list_meter, project_id=project_id, resource_id=resource_id, before=before
        )
        return [meter_of(e) for e in found]
