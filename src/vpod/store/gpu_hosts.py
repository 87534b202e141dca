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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update

from .cloud_records import HostRecord
from .cloud_schema import cloud_host_slots, cloud_hosts
from .engine import Database
from .errors import AlreadyExists, Conflict, StoreError
from .gpu_schema import cloud_gpu_agents, cloud_host_gpus

NO_SAMPLE = "no health sample yet"


@dataclass(frozen=True)
class GpuAgentRecord:
    host_id: str
    token_id: str | None
    boot_id: str
    hostname: str
    driver_version: str
    cuda_version: str
    backend: str
    registered_at: datetime
    reported_at: datetime


@dataclass(frozen=True)
class HostGpuRecord:
    host_id: str
    idx: int
    uuid: str
    name: str
    memory_mib: int
    pci_bus_id: str
    details: dict[str, Any]
    healthy: bool
    problems: str
    changed_at: datetime


@dataclass(frozen=True)
class HealthChange:
    idx: int
    healthy: bool
    problems: str


def _agent(row: Any) -> GpuAgentRecord:
    return GpuAgentRecord(**dict(row._mapping))


def _gpu(row: Any) -> HostGpuRecord:
    values = dict(row._mapping)
    values["details"] = dict(values["details"] or {})
    return HostGpuRecord(**values)


class GpuHostStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    def _explain_uuid(self, gpus: Sequence[HostGpuRecord], host_id: str) -> StoreError:
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

    def register(
        self, host: HostRecord, agent: GpuAgentRecord, gpus: Sequence[HostGpuRecord]
    ) -> bool:
        """Write the host, its agent and its GPUs; True when the host is new. A host of the
        same id keeps its role and enabled flag but takes the agent's GPU count, fabric and
        model; GPUs with the same UUID keep their health."""
        with self._db.write(lambda: self._explain_uuid(gpus, host.id)) as conn:
            exists = conn.scalar(select(cloud_hosts.c.id).where(cloud_hosts.c.id == host.id))
            if exists is None:
                conn.execute(insert(cloud_hosts).values(**_host_values(host)))
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
                values = {**_gpu_values(gpu)}
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
            conn.execute(insert(cloud_gpu_agents).values(**_agent_values(agent)))
            return exists is None

    def agent(self, host_id: str) -> GpuAgentRecord | None:
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

    def record_health(self, host_id: str, changes: Iterable[HealthChange], at: datetime) -> None:
        """The GPUs' new health, and the agent's report time."""
        with self._db.write() as conn:
            for change in changes:
                conn.execute(
                    update(cloud_host_gpus)
                    .where(
                        cloud_host_gpus.c.host_id == host_id, cloud_host_gpus.c.idx == change.idx
                    )
                    .values(healthy=change.healthy, problems=change.problems, changed_at=at)
                )
            conn.execute(
                update(cloud_gpu_agents)
                .where(cloud_gpu_agents.c.host_id == host_id)
                .values(reported_at=at)
            )

    def list_agents(self) -> list[GpuAgentRecord]:
        with self._db.read() as conn:
            rows = conn.execute(select(cloud_gpu_agents).order_by(cloud_gpu_agents.c.host_id))
            return [_agent(r) for r in rows]

    def list_gpus(self, host_ids: Iterable[str] | None = None) -> list[HostGpuRecord]:
        query = select(cloud_host_gpus).order_by(cloud_host_gpus.c.host_id, cloud_host_gpus.c.idx)
        if host_ids is not None:
            query = query.where(cloud_host_gpus.c.host_id.in_(list(host_ids)))
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


def _host_values(host: HostRecord) -> dict[str, Any]:
    return {
        "id": host.id,
        "role": host.role,
        "model": host.model,
        "slots": host.slots,
        "fabric": host.fabric,
        "address": host.address,
        "enabled": host.enabled,
        "registered_at": host.registered_at,
    }


def _gpu_values(gpu: HostGpuRecord) -> dict[str, Any]:
    return {
        "host_id": gpu.host_id,
        "idx": gpu.idx,
        "uuid": gpu.uuid,
        "name": gpu.name,
        "memory_mib": gpu.memory_mib,
        "pci_bus_id": gpu.pci_bus_id,
        "details": gpu.details,
        "healthy": gpu.healthy,
        "problems": gpu.problems,
        "changed_at": gpu.changed_at,
    }


def _agent_values(agent: GpuAgentRecord) -> dict[str, Any]:
    return {
        "host_id": agent.host_id,
        "token_id": agent.token_id,
        "boot_id": agent.boot_id,
        "hostname": agent.hostname,
        "driver_version": agent.driver_version,
        "cuda_version": agent.cuda_version,
        "backend": agent.backend,
        "registered_at": agent.registered_at,
        "reported_at": agent.reported_at,
    }


__all__ = ["NO_SAMPLE", "GpuAgentRecord", "GpuHostStore", "HealthChange", "HostGpuRecord"]
