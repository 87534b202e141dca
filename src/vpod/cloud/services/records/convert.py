"""Store rows to cloud model values and back: the only place both are named.

The store keeps rows with string statuses; the cloud speaks its model,
statuses as enums. A status written is an enum member, which is already the
string the store keeps. Task parameters are typed one kind per operation
(:mod:`vpod.cloud.model.task_params`), JSON in the row, validated when read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from vpod.store.cloud_records import (
    ClusterRecord,
    HostRecord,
    ProjectRecord,
    ServerRecord,
    TaskRecord,
    TokenRecord,
    VolumeRecord,
)
from vpod.store.cloud_records import (
    HostUsage as HostUsageRow,
)
from vpod.store.cloud_records import (
    MeterEntry as MeterRow,
)
from vpod.store.dataset_store import AttachmentRecord, StorageRecord
from vpod.store.gpu_hosts import GpuAgentRecord, HostGpuRecord
from vpod.store.gpu_hosts import HealthChange as HealthRow
from vpod.store.keypair_store import KeypairRecord
from vpod.store.reservation_store import PoolState as PoolRow
from vpod.store.reservation_store import ReservationRecord

from ...model import errors
from ...model.datasets import SealedStorage, StorageAttachment
from ...model.hosts import GpuAgent, HealthChange, Host, HostGpu, HostUsage
from ...model.metering import MeterEntry
from ...model.records import Cluster, Keypair, Server, Task, Volume
from ...model.reservations import PoolState, Reservation
from ...model.statuses import ClusterStatus, Operation, Phase, ServerStatus, TaskState, VolumeStatus
from ...model.task_params import TaskParams, params_kind
from ...model.tenants import Project, Token

R = TypeVar("R")


def _copy(kind: type[R], value: object, **typed: Any) -> R:
    """``value`` as a ``kind``: the fields of the same names, some given typed."""
    values = {f.name: getattr(value, f.name) for f in fields(kind)}  # type: ignore[arg-type]
    values.update(typed)
    return kind(**values)


# -- clusters, servers, volumes ---------------------------------------------------------------


def cluster_of(record: ClusterRecord) -> Cluster:
    return _copy(Cluster, record, status=ClusterStatus(record.status))


def server_of(record: ServerRecord) -> Server:
    return _copy(Server, record, status=ServerStatus(record.status))


def volume_of(record: VolumeRecord) -> Volume:
    return _copy(Volume, record, status=VolumeStatus(record.status))


def row_of_cluster(cluster: Cluster) -> ClusterRecord:
    return _copy(ClusterRecord, cluster)


def row_of_server(server: Server) -> ServerRecord:
    return _copy(ServerRecord, server)


def row_of_volume(volume: Volume) -> VolumeRecord:
    return _copy(VolumeRecord, volume)


# -- tasks ----------------------------------------------------------------------------------


_ADAPTERS: dict[type[TaskParams], TypeAdapter[TaskParams]] = {}


def _adapter(kind: type[TaskParams]) -> TypeAdapter[TaskParams]:
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


def params_of(task_id: str, operation: Operation, raw: dict[str, Any]) -> TaskParams:
    """A row's parameters as the operation's kind; keys older versions did not write take
    their defaults, keys this version does not know are left out."""
    try:
        return _adapter(params_kind(operation)).validate_python(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'parameters'}: {e['msg']}"
            for e in exc.errors()
        )
        raise errors.FailedPrecondition(
            f"task {task_id} ({operation}) holds parameters this version cannot read"
            f" ({problems}): the database was written by an incompatible version"
        ) from None


def task_of(record: TaskRecord) -> Task:
    operation = Operation(record.operation)
    return _copy(
        Task,
        record,
        operation=operation,
        state=TaskState(record.state),
        detailed_state=Phase(record.detailed_state) if record.detailed_state else None,
        phases=[(Phase(phase), at) for phase, at in record.phases],
        params=params_of(record.id, operation, record.params),
    )


def row_of_task(task: Task) -> TaskRecord:
    return _copy(TaskRecord, task, phases=list(task.phases), params=task.params.to_json())


# -- projects, tokens, hosts ------------------------------------------------------------------


def project_of(record: ProjectRecord) -> Project:
    return _copy(Project, record)


def row_of_project(project: Project) -> ProjectRecord:
    return _copy(ProjectRecord, project)


def token_of(record: TokenRecord) -> Token:
    return _copy(Token, record)


def row_of_token(token: Token) -> TokenRecord:
    return _copy(TokenRecord, token)


def host_of(record: HostRecord) -> Host:
    return _copy(Host, record)


def row_of_host(host: Host) -> HostRecord:
    return _copy(HostRecord, host)


def host_usage_of(usage: HostUsageRow) -> HostUsage:
    return HostUsage(host=host_of(usage.host), used_slots=usage.used_slots)


def gpu_agent_of(record: GpuAgentRecord) -> GpuAgent:
    return _copy(GpuAgent, record)


def row_of_gpu_agent(agent: GpuAgent) -> GpuAgentRecord:
    return _copy(GpuAgentRecord, agent)


def host_gpu_of(record: HostGpuRecord) -> HostGpu:
    return _copy(HostGpu, record)


def row_of_host_gpu(gpu: HostGpu) -> HostGpuRecord:
    return _copy(HostGpuRecord, gpu)


def row_of_health(change: HealthChange) -> HealthRow:
    return _copy(HealthRow, change)


# -- keypairs, dataset storage, reservations, metering ---------------------------------------


def keypair_of(record: KeypairRecord) -> Keypair:
    """The keypair as stored; who holds it (``clusters``) is the caller's to add."""
    return Keypair(**{f.name: getattr(record, f.name) for f in fields(record)})


def row_of_keypair(keypair: Keypair) -> KeypairRecord:
    return _copy(KeypairRecord, keypair)


def storage_of(record: StorageRecord) -> SealedStorage:
    return _copy(SealedStorage, record)


def row_of_storage(storage: SealedStorage) -> StorageRecord:
    return _copy(StorageRecord, storage)


def attachment_of(record: AttachmentRecord) -> StorageAttachment:
    return _copy(StorageAttachment, record)


def reservation_of(record: ReservationRecord) -> Reservation:
    return _copy(Reservation, record)


def row_of_reservation(reservation: Reservation) -> ReservationRecord:
    return _copy(ReservationRecord, reservation)


def pool_state_of(row: PoolRow) -> PoolState:
    return _copy(PoolState, row)


def meter_of(row: MeterRow) -> MeterEntry:
    return _copy(MeterEntry, row)


def meter_rows(entries: Iterable[MeterEntry]) -> list[MeterRow]:
    return [_copy(MeterRow, e) for e in entries]
