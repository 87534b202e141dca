"""Volumes, boot and data, and the claims a task makes on them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...model.metering import MeterEntry
from ...model.records import Task, Volume
from ...model.statuses import ClusterStatus, VolumeStatus
from .base import RecordsBase
from .convert import meter_rows, row_of_task, row_of_volume, volume_of
from .projects import QuotaAdmit, store_admit

VolumeClaims = Mapping[str, tuple[Sequence[VolumeStatus], Mapping[str, Any]]]
"""Volume id -> (statuses it may be in, changes to apply when claimed)."""


class VolumeRecords(RecordsBase):
    async def create_volume(
        self,
        volume: Volume,
        task: Task,
        *,
        meter: Iterable[MeterEntry] = (),
        admit: QuotaAdmit | None = None,
    ) -> Volume:
        await self._db(
            self._store.create_volume,
            row_of_volume(volume),
            row_of_task(task),
            meter=meter_rows(meter),
            admit=store_admit(admit),
        )
        return volume

    async def get_volume(self, volume_id: str) -> Volume:
        return volume_of(await self._db(self._store.get_volume, volume_id))

    async def find_volume(self, project_id: str, id_or_name: str) -> Volume | None:
        return await self._found(volume_of, self._store.find_volume, project_id, id_or_name)

    async def list_volumes(
        self, *, project_id: str | None = None, cluster_id: str | None = None
    ) -> list[Volume]:
        found = await self._db(
            self._store.list_volumes, project_id=project_id, cluster_id=cluster_id
        )
        return [volume_of(v) for v in found]

    async def update_volume(
        self, volume_id: str, *, meter: Iterable[MeterEntry] = (), **changes: Any
    ) -> Volume:
        return volume_of(
            await self._db(self._store.update_volume, volume_id, meter=meter_rows(meter), **changes)
        )

    async def add_volumes(self, new: Sequence[Volume], meter: Iterable[MeterEntry] = ()) -> None:
        await self._db(self._store.add_volumes, [row_of_volume(v) for v in new], meter_rows(meter))

    async def start_volume_task(
        self,
        volume_id: str,
        task: Task,
        *,
        allowed: Sequence[VolumeStatus],
        changes: Mapping[str, Any] | None = None,
        cluster: tuple[str, Sequence[ClusterStatus]] | None = None,
        meter: Iterable[MeterEntry] = (),
    ) -> Task:
        """Claim the volume (and ``cluster``: id, allowed statuses) for ``task``; record it."""
        await self._db(
            self._store.start_volume_task,
            volume_id,
            row_of_task(task),
            allowed=allowed,
            changes=changes,
            cluster=cluster,
            meter=meter_rows(meter),
        )
        return task

    async def delete_volume(self, volume_id: str, meter: Iterable[MeterEntry] = ()) -> None:
        await self._db(self._store.delete_volume, volume_id, meter_rows(meter))
