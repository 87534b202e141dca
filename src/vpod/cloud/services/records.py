"""The cloud's resources in and out of the store: typed records at the store's door.

The store keeps rows with string statuses (``vpod.store.cloud_records``);
the cloud speaks its model (:mod:`vpod.cloud.model.records`), statuses as
enums. :class:`CloudRecords` offers the store's calls on clusters, servers,
volumes and tasks, each run through :class:`~.db.CloudDb` (so store errors
arrive as cloud errors) and converted here, both ways, once. A status
written is an enum member, which is already the string the store keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any, TypeVar

from vpod.store.cloud_records import (
    ClusterRecord,
    MeterEntry,
    ServerRecord,
    TaskRecord,
    VolumeRecord,
)
from vpod.store.cloud_store import Admit, CloudStore
from vpod.store.reservation_store import ReservationRecord

from ..model.records import Cluster, Server, Task, Volume
from ..model.reservations import Reservation
from ..model.statuses import ClusterStatus, Operation, Phase, ServerStatus, TaskState, VolumeStatus
from .db import CloudDb

R = TypeVar("R")


def _copy(kind: type[R], value: object, **typed: Any) -> R:
    """``value`` as a ``kind``: the fields of the same names, some given typed."""
    values = {f.name: getattr(value, f.name) for f in fields(kind)}  # type: ignore[arg-type]
    values.update(typed)
    return kind(**values)


def cluster_of(record: ClusterRecord) -> Cluster:
    return _copy(Cluster, record, status=ClusterStatus(record.status))


def server_of(record: ServerRecord) -> Server:
    return _copy(Server, record, status=ServerStatus(record.status))


def volume_of(record: VolumeRecord) -> Volume:
    return _copy(Volume, record, status=VolumeStatus(record.status))


def task_of(record: TaskRecord) -> Task:
    return _copy(
        Task,
        record,
        operation=Operation(record.operation),
        state=TaskState(record.state),
        detailed_state=Phase(record.detailed_state) if record.detailed_state else None,
        phases=[(Phase(phase), at) for phase, at in record.phases],
    )


def reservation_of(record: ReservationRecord) -> Reservation:
    return _copy(Reservation, record)


def row_of_reservation(reservation: Reservation) -> ReservationRecord:
    return _copy(ReservationRecord, reservation)


def row_of_cluster(cluster: Cluster) -> ClusterRecord:
    return _copy(ClusterRecord, cluster)


def row_of_server(server: Server) -> ServerRecord:
    return _copy(ServerRecord, server)


def row_of_volume(volume: Volume) -> VolumeRecord:
    return _copy(VolumeRecord, volume)


def row_of_task(task: Task) -> TaskRecord:
    return _copy(TaskRecord, task, phases=list(task.phases))


VolumeClaims = Mapping[str, tuple[Sequence[VolumeStatus], Mapping[str, Any]]]
"""Volume id -> (statuses it may be in, changes to apply when claimed)."""


class CloudRecords:
    """Typed store calls on clusters, servers, volumes and tasks."""

    def __init__(self, store: CloudStore, calls: CloudDb) -> None:
        self._store = store
        self._db = calls

    # -- clusters -----------------------------------------------------------------------------

    async def create_cluster(
        self,
        cluster: Cluster,
        servers: Sequence[Server],
        task: Task,
        *,
        new_volumes: Sequence[Volume] = (),
        attach: VolumeClaims | None = None,
        meter: Iterable[MeterEntry] = (),
        admit: Admit | None = None,
    ) -> Cluster:
        """Record a new cluster with its servers, volumes and task, if the quotas admit it."""
        await self._db(
            self._store.create_cluster,
            row_of_cluster(cluster),
            [row_of_server(s) for s in servers],
            row_of_task(task),
            new_volumes=[row_of_volume(v) for v in new_volumes],
            attach=dict(attach or {}),
            meter=meter,
            admit=admit,
        )
        return cluster

    async def get_cluster(self, cluster_id: str) -> Cluster:
        return cluster_of(await self._db(self._store.get_cluster, cluster_id))

    async def find_cluster(self, project_id: str, id_or_name: str) -> Cluster | None:
        found = await self._db(self._store.find_cluster, project_id, id_or_name)
        return None if found is None else cluster_of(found)

    async def list_clusters(self, project_id: str | None = None) -> list[Cluster]:
        return [cluster_of(c) for c in await self._db(self._store.list_clusters, project_id)]

    async def update_cluster(
        self, cluster_id: str, *, meter: Iterable[MeterEntry] = (), **changes: Any
    ) -> Cluster:
        return cluster_of(
            await self._db(self._store.update_cluster, cluster_id, meter=meter, **changes)
        )

    async def update_idle_cluster(
        self,
        cluster_id: str,
        from_statuses: Sequence[ClusterStatus],
        *,
        meter: Iterable[MeterEntry] = (),
        **changes: Any,
    ) -> bool:
        """Change a cluster no task holds, if its status is one of ``from_statuses``."""
        return await self._db(
            self._store.update_idle_cluster, cluster_id, from_statuses, meter=meter, **changes
        )

    async def start_cluster_task(
        self,
        cluster_id: str,
        task: Task,
        *,
        allowed: Sequence[ClusterStatus],
        changes: Mapping[str, Any] | None = None,
        new_servers: Sequence[Server] = (),
        new_volumes: Sequence[Volume] = (),
        attach: VolumeClaims | None = None,
        meter: Iterable[MeterEntry] = (),
        admit: Admit | None = None,
    ) -> Task:
        """Claim the cluster (and volumes) for ``task`` and record it, all or nothing."""
        await self._db(
            self._store.start_cluster_task,
            cluster_id,
            row_of_task(task),
            allowed=allowed,
            changes=changes,
            new_servers=[row_of_server(s) for s in new_servers],
            new_volumes=[row_of_volume(v) for v in new_volumes],
            attach=dict(attach or {}),
            meter=meter,
            admit=admit,
        )
        return task

    async def delete_cluster(self, cluster_id: str, meter: Iterable[MeterEntry] = ()) -> None:
        await self._db(self._store.delete_cluster, cluster_id, meter)

    # -- servers ------------------------------------------------------------------------------

    async def list_servers(self, cluster_ids: Iterable[str]) -> list[Server]:
        return [server_of(s) for s in await self._db(self._store.list_servers, list(cluster_ids))]

    async def add_servers(self, servers: Sequence[Server]) -> None:
        await self._db(self._store.add_servers, [row_of_server(s) for s in servers])

    async def update_server(self, server_id: str, **changes: Any) -> None:
        await self._db(self._store.update_server, server_id, **changes)

    async def delete_server(self, server_id: str) -> None:
        await self._db(self._store.delete_server, server_id)

    # -- volumes ------------------------------------------------------------------------------

    async def create_volume(
        self,
        volume: Volume,
        task: Task,
        *,
        meter: Iterable[MeterEntry] = (),
        admit: Admit | None = None,
    ) -> Volume:
        await self._db(
            self._store.create_volume,
            row_of_volume(volume),
            row_of_task(task),
            meter=meter,
            admit=admit,
        )
        return volume

    async def get_volume(self, volume_id: str) -> Volume:
        return volume_of(await self._db(self._store.get_volume, volume_id))

    async def find_volume(self, project_id: str, id_or_name: str) -> Volume | None:
        found = await self._db(self._store.find_volume, project_id, id_or_name)
        return None if found is None else volume_of(found)

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
            await self._db(self._store.update_volume, volume_id, meter=meter, **changes)
        )

    async def add_volumes(self, new: Sequence[Volume], meter: Iterable[MeterEntry] = ()) -> None:
        await self._db(self._store.add_volumes, [row_of_volume(v) for v in new], meter)

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
            meter=meter,
        )
        return task

    async def delete_volume(self, volume_id: str, meter: Iterable[MeterEntry] = ()) -> None:
        await self._db(self._store.delete_volume, volume_id, meter)

    # -- tasks --------------------------------------------------------------------------------

    async def add_task(self, task: Task) -> Task:
        await self._db(self._store.add_task, row_of_task(task))
        return task

    async def get_task(self, task_id: str) -> Task:
        return task_of(await self._db(self._store.get_task, task_id))

    async def list_tasks(
        self,
        *,
        project_id: str | None = None,
        resource_id: str | None = None,
        states: Sequence[TaskState] | None = None,
        limit: int = 100,
    ) -> list[Task]:
        """Tasks matching every filter given, newest first."""
        found = await self._db(
            self._store.list_tasks,
            project_id=project_id,
            resource_id=resource_id,
            states=states,
            limit=limit,
        )
        return [task_of(t) for t in found]

    async def update_task(self, task_id: str, **changes: Any) -> Task:
        return task_of(await self._db(self._store.update_task, task_id, **changes))

    async def enter_phase(
        self, task_id: str, phase: Phase, at: datetime, *, state: TaskState
    ) -> Task:
        """Record that the task reached ``phase`` (appended to its phase history)."""
        return task_of(await self._db(self._store.enter_phase, task_id, phase, at, state=state))

    async def finish_task(
        self,
        task_id: str,
        *,
        state: TaskState,
        at: datetime,
        detailed_state: Phase | None,
        error: str = "",
        warnings: Sequence[str] = (),
        cluster_changes: Mapping[str, Any] | None = None,
        volume_changes: Mapping[str, Mapping[str, Any]] | None = None,
        meter: Iterable[MeterEntry] = (),
    ) -> Task:
        """End a task, apply its last changes and free what it claimed, in one transaction."""
        return task_of(
            await self._db(
                self._store.finish_task,
                task_id,
                state=state,
                at=at,
                detailed_state=detailed_state,
                error=error,
                warnings=warnings,
                cluster_changes=cluster_changes,
                volume_changes=volume_changes,
                meter=meter,
            )
        )

    async def unfinished_tasks(self) -> list[Task]:
        """Tasks NEW or RUNNING, oldest first."""
        return [task_of(t) for t in await self._db(self._store.unfinished_tasks)]
