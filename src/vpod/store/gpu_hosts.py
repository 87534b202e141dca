"""GPU host agents in the store: a host's agent, its GPUs and their health (tables in
:mod:`.gpu_schema`). One transaction per call.

A registration writes the host (new, or the one an operator registered by hand
with that id), its agent and its GPUs at once: a host whose GPUs changed
(one more, one gone) is rewritten whole, its slots being its GPUs' indexes.
New GPUs start unhealthy ("no health sample yet") until the agent's first
sample, so a GPU nobody has looked at is never handed out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update

from vpod.domain.cloud.hosts import NO_SAMPLE, GpuAgent, HealthChange, Host, HostGpu

from .cloud_schema import cloud_host_slots, cloud_hosts
from .errors import AlreadyExists, Conflict, StoreError
from .filters import where_given
from .gpu_schema import cloud_gpu_agents, cloud_host_gpus
from .row_records import record_of, values_of
from .table_group import TableGroup


def _agent(row: Any) -> GpuAgent:
    return record_of(GpuAgent, row)


def _gpu(row: Any) -> HostGpu:
    return record_of(HostGpu, row, details=dict(row.details or {}))


class GpuHostStore(TableGroup):
    def _explain_uuid(self, gpus: Sequence[HostGpu], host_id: str) -> StoreError:
        with self._db.read() as conn:
            for gpu in gpus:
                other = conn.scalar(
                    select(cloud_host_gpus.c.host_id).where(
                        cloud_host_gpus.c.uuid == gpu.uuid, cloud_host_gpus.c.host_id != host_id
                    )
                )
                if other is not None:
                    return AlreadyExists(
                        f"GPU {gpu.uuid} is registered on host {other} already: remove that"
                        " host first (one GPU is never on two hosts)"
                    )
        return Conflict(f"host {host_id} was registered by another request meanwhile")

    def register(self, host: Host, agent: GpuAgent, gpus: Sequence[HostGpu]) -> bool:
        """Write the host, its agent and its GPUs; True when the host is new. A host of the
        same id keeps its role and enabled flag but takes the agent's GPU count, fabric and
        model; GPUs with the same UUID keep their health."""
        with self._db.write(lambda: self._explain_uuid(gpus, host.id)) as conn:
            exists = conn.scalar(select(cloud_hosts.c.id).where(cloud_hosts.c.id == host.id))
            if exists is None:
                conn.execute(insert(cloud_hosts).values(**values_of(host)))
            else:
                conn.execute(
                    update(cloud_hosts)
                    .where(cloud_hosts.c.id == host.id)
                    .values(
                        slots=host.slots, fabric=host.fabric, model=host.model, address=host.address
                    )
                )
            known = {
                r.uuid: r
                for r in conn.execute(
                    select(cloud_host_gpus).where(cloud_host_gpus.c.host_id == host.id)
                )
            }
            conn.execute(delete(cloud_host_gpus).where(cloud_host_gpus.c.host_id == host.id))
            rows = []
            for gpu in gpus:
                before = known.get(gpu.uuid)
                values = values_of(gpu)
                if before is not None and before.idx == gpu.idx:
                    values.update(
                        healthy=before.healthy,
                        problems=before.problems,
                        changed_at=before.changed_at,
                    )
                rows.append(values)
            if rows:
                conn.execute(insert(cloud_host_gpus), rows)
            conn.execute(delete(cloud_gpu_agents).where(cloud_gpu_agents.c.host_id == host.id))
            conn.execute(insert(cloud_gpu_agents).values(**values_of(agent)))
            return exists is None

    def agent(self, host_id: str) -> GpuAgent | None:
        with self._db.read() as conn:
            row = conn.execute(
                select(cloud_gpu_agents).where(cloud_gpu_agents.c.host_id == host_id)
            ).one_or_none()
        return None if row is None else _agent(row)

    def host_exists(self, host_id: str) -> bool:
        with self._db.read() as conn:
            return (
                conn.scalar(select(cloud_hosts.c.id).where(cloud_hosts.c.id == host_id)) is not None
            )

    def record_health(
        self, changes_by_host: Mapping[str, Iterable[HealthChange]], at: datetime
    ) -> None:
        """The GPUs' new health, and each agent's report time: several hosts (one agent
        process's) in one transaction."""
        with self._db.write() as conn:
            for host_id, changes in changes_by_host.items():
                for change in changes:
                    conn.execute(
                        update(cloud_host_gpus)
                        .where(
                            cloud_host_gpus.c.host_id == host_id,
                            cloud_host_gpus.c.idx == change.idx,
                        )
                        .values(healthy=change.healthy, problems=change.problems, changed_at=at)
                    )
            if changes_by_host:
                conn.execute(
                    update(cloud_gpu_agents)
                    .where(cloud_gpu_agents.c.host_id.in_(list(changes_by_host)))
                    .values(reported_at=at)
                )

    def list_agents(self, host_ids: Iterable[str] | None = None) -> list[GpuAgent]:
        """Every host's agent, or those of ``host_ids``."""
        query = where_given(
            select(cloud_gpu_agents).order_by(cloud_gpu_agents.c.host_id),
            (host_ids, lambda: cloud_gpu_agents.c.host_id.in_(list(host_ids or ()))),
        )
        with self._db.read() as conn:
            return [_agent(r) for r in conn.execute(query)]

    def list_gpus(self, host_ids: Iterable[str] | None = None) -> list[HostGpu]:
        query = where_given(
            select(cloud_host_gpus).order_by(cloud_host_gpus.c.host_id, cloud_host_gpus.c.idx),
            (host_ids, lambda: cloud_host_gpus.c.host_id.in_(list(host_ids or ()))),
        )
        with self._db.read() as conn:
            return [_gpu(r) for r in conn.execute(query)]

    def server_slots(self, server_ids: Iterable[str]) -> dict[str, tuple[str, tuple[int, ...]]]:
        """Server id -> (its host, the slots it holds there, in order)."""
        held: dict[str, list[tuple[str, int]]] = defaultdict(list)
        ids = list(server_ids)
        with self._db.read() as conn:
            rows = conn.execute(
                select(cloud_host_slots).where(cloud_host_slots.c.server_id.in_(ids))
            )
            for row in rows:
                held[row.server_id].append((row.host_id, int(row.slot)))
        return {
            server: (pairs[0][0], tuple(sorted(slot for _, slot in pairs)))
            for server, pairs in held.items()
        }


__all__ = ["NO_SAMPLE", "GpuHostStore"]
