"""Clusters and their servers, with the claims a task makes on them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...model.metering import MeterEntry
from ...model.records import Cluster, Server, Task, Volume
from ...model.statuses import ClusterStatus
from .base import RecordsBase
from .convert import (
    cluster_of,
    meter_rows,
    row_of_cluster,
    row_of_server,
    row_of_task,
    row_of_volume,
    server_of,
)
from .projects import QuotaAdmit, store_admit
from .volumes import VolumeClaims


class ClusterRecords(RecordsBase):
    async def create_cluster(
        self,
        cluster: Cluster,
        servers: Sequence[Server],
        task: Task,
        *,
        new_volumes: Sequence[Volume] = (),
        attach: VolumeClaims | None = None,
        meter: Iterable[MeterEntry] = (),
        admit: QuotaAdmit | None = None,
    ) -> Cluster:
        """Record a new cluster with its servers, volumes and task, if the quotas admit it."""
        await self._db(
            self._store.create_cluster,
            row_of_cluster(cluster),
            [row_of_server(s) for s in servers],
            row_of_task(task),
            new_volumes=[row_of_volume(v) for v in new_volumes],
            attach=dict(attach or {}),
            meter=meter_rows(meter),
            admit=store_admit(admit),
        )
        return cluster

    async def get_cluster(self, cluster_id: str) -> Cluster:
        return cluster_of(await self._db(self._store.get_cluster, cluster_id))

    async def find_cluster(self, project_id: str, id_or_name: str) -> Cluster | None:
        return await self._found(cluster_of, self._store.find_cluster, project_id, id_or_name)

    async def list_clusters(self, project_id: str | None = None) -> list[Cluster]:
        return [cluster_of(c) for c in await self._db(self._store.list_clusters, project_id)]

    async def update_cluster(
        self, cluster_id: str, *, meter: Iterable[MeterEntry] = (), **changes: Any
    ) -> Cluster:
        return cluster_of(
            await self._db(
                self._store.update_cluster, cluster_id, meter=meter_rows(meter), **changes
            )
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
            self._store.update_idle_cluster,
            cluster_id,
            from_statuses,
            meter=meter_rows(meter),
            **changes,
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
        admit: QuotaAdmit | None = None,
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
            meter=meter_rows(meter),
            admit=store_admit(admit),
        )
        return task

    async def delete_cluster(self, cluster_id: str, meter: Iterable[MeterEntry] = ()) -> None:
        await self._db(self._store.delete_cluster, cluster_id, meter_rows(meter))

    # -- servers ------------------------------------------------------------------------------

    async def list_servers(self, cluster_ids: Iterable[str]) -> list[Server]:
        return [server_of(s) for s in await self._db(self._store.list_servers, list(cluster_ids))]

    async def add_servers(self, servers: Sequence[Server]) -> None:
        await self._db(self._store.add_servers, [row_of_server(s) for s in servers])

    async def update_server(self, server_id: str, **changes: Any) -> None:
        await self._db(self._store.update_server, server_id, **changes)

    async def delete_server(self, server_id: str) -> None:
        await self._db(self._store.delete_server, server_id)
