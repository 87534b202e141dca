"""Values the cloud layer keeps in the store: its resources as the domain defines them
(:mod:`vpod.domain.cloud`: projects, tokens, clusters, servers, hosts, their GPU agents and
GPUs, volumes, metering entries, keypairs, dataset storage and reservations), read from
their rows and written back as they are; a status read back is its ``StrEnum`` member
again. Only a task differs: its row keeps the parameters as the JSON object they were
written as (:class:`TaskRecord`), which the cloud's records door types by operation;
the store writes either (any :class:`~vpod.domain.cloud.resources.TaskFacts`).

The ``…Record`` names are the store's names for the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vpod.domain.cloud.datasets import SealedStorage, StorageAttachment
from vpod.domain.cloud.hosts import GpuAgent, HealthChange, Host, HostGpu, HostUsage
from vpod.domain.cloud.metering import MeterEntry
from vpod.domain.cloud.reservations import PoolState, Reservation
from vpod.domain.cloud.resources import Cluster, Keypair, Server, TaskFacts, Volume
from vpod.domain.cloud.tenants import Project, Token


@dataclass(frozen=True)
class TaskRecord(TaskFacts):
    """A task as its row keeps it: the parameters as the JSON object written."""

    params: dict[str, Any] = field(default_factory=dict)

    def params_json(self) -> dict[str, Any]:
        return dict(self.params)


ProjectRecord = Project
TokenRecord = Token
ClusterRecord = Cluster
ServerRecord = Server
VolumeRecord = Volume
HostRecord = Host
GpuAgentRecord = GpuAgent
HostGpuRecord = HostGpu
KeypairRecord = Keypair
StorageRecord = SealedStorage
AttachmentRecord = StorageAttachment
ReservationRecord = Reservation

__all__ = [
    "AttachmentRecord",
    "ClusterRecord",
    "GpuAgentRecord",
    "HealthChange",
    "HostGpuRecord",
    "HostRecord",
    "HostUsage",
    "KeypairRecord",
    "MeterEntry",
    "PoolState",
    "ProjectRecord",
    "ReservationRecord",
    "ServerRecord",
    "StorageRecord",
    "TaskRecord",
    "TokenRecord",
    "VolumeRecord",
]
