"""The cloud's resources as typed, frozen values: clusters, servers, volumes, tasks and
keypairs.

Statuses are enums (:mod:`.statuses`), never bare strings; because they are
``StrEnum``s a status is also the string the API and the store carry. The
store reads its rows into these values (a status string back into its enum
member; one no member names, written by a later version, as stored) and
writes them as they are; only a task's parameters differ there: the row
keeps them as the JSON object :meth:`~.task_params.TaskParams.to_json`
writes, so the store's task (``vpod.store.cloud_records.TaskRecord``) and
:class:`Task` share :class:`TaskFacts`, differ by ``params``, and write the same JSON
(:meth:`TaskFacts.params_json`).
``dataclasses.replace`` makes changed copies.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .statuses import ClusterStatus, Operation, Phase, ServerStatus, TaskState, VolumeStatus
from .task_params import TaskParams


@dataclass(frozen=True)
class Cluster:
    """An AI cluster: a vPOD (Poplar servers and a V-IPU allocation) or a GPU cluster."""

    id: str
    project_id: str
    name: str
    flavor: str
    kind: str
    """The flavor's kind (``virtual_vpod``, ``dedicated_vpod``, ``gpu_baremetal``, ``gpu_vm``)."""
    status: ClusterStatus
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
class Server:
    """A Poplar server of a vPOD or a GPU server, VM or bare metal."""

    id: str
    cluster_id: str
    position: int
    name: str
    status: ServerStatus
    image: str
    created_at: datetime
    updated_at: datetime
    host_id: str | None = None
    address: str = ""


@dataclass(frozen=True)
class Volume:
    """A boot or data volume, attached to one server at most."""

    id: str
    project_id: str
    name: str
    size_gib: int
    volume_type: str
    boot: bool
    status: VolumeStatus
    created_at: datetime
    updated_at: datetime
    image: str | None = None
    cluster_id: str | None = None
    server_id: str | None = None
    delete_with_cluster: bool = False
    """Boot volumes made for a cluster go when it goes (Nova's delete_on_termination)."""
    active_task_id: str | None = None


@dataclass(frozen=True)
class TaskFacts(ABC):
    """What a task records, whatever form its parameters take: its operation, state,
    phases, and how it ended."""

    id: str
    project_id: str
    operation: Operation
    resource_type: str
    """``cluster`` or ``volume``."""
    resource_id: str
    resource_name: str
    state: TaskState
    created_at: datetime
    updated_at: datetime
    detailed_state: Phase | None = None
    phases: list[tuple[Phase, datetime]] = field(default_factory=list)
    """Every ``detailed_state`` the task went through, with when."""
    error: str = ""
    warnings: list[str] = field(default_factory=list)
    finished_at: datetime | None = None

    @abstractmethod
    def params_json(self) -> dict[str, Any]:
        """The parameters as the JSON object the task's row keeps."""


@dataclass(frozen=True)
class Task(TaskFacts):
    """A mutating call's work, its parameters typed."""

    params: TaskParams = field(default_factory=TaskParams)
    """What the operation is asked to do, typed by operation (:mod:`.task_params`)."""

    def params_json(self) -> dict[str, Any]:
        return self.params.to_json()


@dataclass(frozen=True)
class Keypair:
    """A project's SSH public key (Nova's keypair); the private half is never kept."""

    id: str
    project_id: str
    name: str
    key_type: str
    public_key: str
    fingerprint: str
    created_at: datetime
    clusters: tuple[str, ...] = ()
    """Names of the project's clusters it may log in to."""
