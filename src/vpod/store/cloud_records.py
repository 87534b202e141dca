"""Values the cloud layer keeps in the store: projects, tokens, clusters, servers, hosts and
their GPU agents and GPUs, volumes, tasks, metering entries, SSH keypairs, dataset storage
and reservations.

Statuses travel as plain strings: the cloud layer (``vpod.cloud.states``)
owns their meaning, and its ``StrEnum`` members are strings, so they go in
as they are and come back as strings that convert with ``ClusterStatus(s)``.
All values are frozen; ``dataclasses.replace`` makes changed copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class ProjectRecord:
    id: str
    name: str
    quotas: dict[str, int]
    created_at: datetime


@dataclass(frozen=True)
class TokenRecord:
    """An API token: ``id`` is its public half, ``key_hash`` the slow hash of its secret half."""

    id: str
    project_id: str | None
    """``None`` for an administrator's token."""
    key_hash: str
    label: str
    created_at: datetime


@dataclass(frozen=True)
class ClusterRecord:
    id: str
    project_id: str
    name: str
    flavor: str
    kind: str
    status: str
    image: str
    server_count: int
    ipus: int
    gpu_family: str | None
    gpus: int
    created_at: datetime
    updated_at: datetime
    interfaces: list[dict[str, str]] = field(default_factory=list)
    network: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    vipu_cluster_id: str | None = None
    allocation_id: str | None = None
    vipu_user_id: str | None = None
    saved_partitions: list[dict[str, Any]] | None = None
    """Partition specs kept while suspended; ``None`` when nothing is saved."""
    fabric: str | None = None
    active_task_id: str | None = None
    error: str = ""


@dataclass(frozen=True)
class ServerRecord:
    id: str
    cluster_id: str
    position: int
    name: str
    status: str
    image: str
    created_at: datetime
    updated_at: datetime
    host_id: str | None = None
    address: str = ""


@dataclass(frozen=True)
class HostRecord:
    """A registered host: a GPU server or a bare-metal Poplar server."""

    id: str
    role: str
    model: str
    slots: int
    fabric: str | None
    address: str
    enabled: bool
    registered_at: datetime


@dataclass(frozen=True)
class HostUsage:
    host: HostRecord
    used_slots: frozenset[int]

    @property
    def free(self) -> tuple[int, ...]:
        return tuple(s for s in range(self.host.slots) if s not in self.used_slots)


@dataclass(frozen=True)
class VolumeRecord:
    id: str
    project_id: str
    name: str
    size_gib: int
    volume_type: str
    boot: bool
    status: str
    created_at: datetime
    updated_at: datetime
    image: str | None = None
    cluster_id: str | None = None
    server_id: str | None = None
    delete_with_cluster: bool = False
    """Boot volumes made for a cluster go when it goes (Nova's delete_on_termination)."""
    active_task_id: str | None = None


@dataclass(frozen=True)
class TaskRecord:
    id: str
    project_id: str
    operation: str
    resource_type: str
    resource_id: str
    resource_name: str
    state: str
    created_at: datetime
    updated_at: datetime
    detailed_state: str | None = None
    phases: list[tuple[str, datetime]] = field(default_factory=list)
    """Every ``detailed_state`` the task went through, with when."""
    params: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    warnings: list[str] = field(default_factory=list)
    finished_at: datetime | None = None


@dataclass(frozen=True)
class MeterEntry:
    """One metering record (see ``vpod.cloud.billing``); ``id`` is 0 until stored."""

    time: datetime
    project_id: str
    resource_type: str
    resource_id: str
    resource_name: str
    item: str
    quantity: int
    unit_price_per_hour: Decimal
    billable: bool
    state: str
    id: int = 0


# -- GPU host agents and their GPUs (:mod:`.gpu_hosts`) ----------------------------------------


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


# -- SSH keypairs (:mod:`.keypair_store`) ------------------------------------------------------


@dataclass(frozen=True)
class KeypairRecord:
    id: str
    project_id: str
    name: str
    key_type: str
    public_key: str
    fingerprint: str
    created_at: datetime


# -- dataset storage (:mod:`.dataset_store`) ---------------------------------------------------


@dataclass(frozen=True)
class StorageRecord:
    id: str
    project_id: str
    name: str
    endpoint: str
    bucket: str
    access_key_masked: str
    access_key_sealed: str
    secret_key_sealed: str
    created_at: datetime


@dataclass(frozen=True)
class AttachmentRecord:
    cluster_id: str
    storage_id: str
    mount_path: str | None


# -- reservation plans (:mod:`.reservation_store`) ---------------------------------------------


@dataclass(frozen=True)
class ReservationRecord:
    id: str
    project_id: str
    flavor: str
    pool: str
    units: int
    per_unit: int
    term: str
    price_per_unit_month: Decimal
    starts_at: datetime
    ends_at: datetime
    cancelled_at: datetime | None = None
    billed_until: datetime | None = None


@dataclass(frozen=True)
class PoolState:
    """A pool's unit rows and how many of them reservations hold now."""

    pool: str
    units: int
    held: int
