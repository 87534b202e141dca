"""Typed records of the cloud API's replies (``/api/cloud/v1``).

Each is read through the cloud API's own shape of the reply (``vpod.wire.rest.cloud_*``,
marked with :func:`~.json_records.shaped`), then with
:func:`~.json_records.from_json`: fields by name, times as aware
datetimes, money as :class:`~decimal.Decimal`; ``raw`` keeps the JSON the
API answered (what ``vpod ... --json`` prints). Statuses the API documents
as open-ended (a cluster's, a server's, a volume's) stay strings; a task's
state is :class:`TaskState`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from vpod.wire.rest import (
    cloud_billing,
    cloud_clusters,
    cloud_datasets,
    cloud_flavors,
    cloud_hosts,
    cloud_projects,
    cloud_reservations,
    cloud_ssh,
    cloud_tasks,
    cloud_volumes,
)

from .json_records import WireRecord, shaped
from .raw_record import RawRecord


class TaskState(enum.StrEnum):
    NEW = "NEW"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    ERROR = "ERROR"

    @property
    def ended(self) -> bool:
        return self in (TaskState.FINISHED, TaskState.ERROR)


@shaped(cloud_flavors.FlavorOut)
class Flavor(cloud_flavors.FlavorSpec, WireRecord):
    """One entry of the catalog, with its prices and how many more fit now."""

    price_per_hour: Decimal
    price_per_month: Decimal
    currency: str
    capacity: int
    images: tuple[str, ...]


@dataclass(frozen=True)
class Phase:
    phase: str
    at: datetime


@shaped(cloud_tasks.TaskOut)
@dataclass(frozen=True)
class Task(RawRecord):
    """An asynchronous operation on a cluster or volume; every mutating call returns one."""

    id: str
    project_id: str
    operation: str
    resource_type: str
    resource_id: str
    resource_name: str
    state: TaskState
    detailed_state: str | None
    phases: tuple[Phase, ...]
    expected_phases: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    error: str = ""
    warnings: tuple[str, ...] = ()
    params: Mapping[str, Any] | None = None
    finished_at: datetime | None = None

    @property
    def ended(self) -> bool:
        return self.state.ended


@dataclass(frozen=True)
class ServerGpu:
    """A GPU a server holds, with its health and last sample (``None``: not known: a host
    without an agent, or no sample yet)."""

    index: int
    uuid: str | None
    name: str | None
    memory_mib: int | None
    healthy: bool | None
    problems: str = ""
    utilization_pct: int | None = None
    memory_used_mib: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    last_xid: int | None = None


class SshHostKey(cloud_clusters.SshHostKeyOut, WireRecord):
    """A server's sshd host key: ``key`` as known_hosts holds it, ``fingerprint`` as ssh
    shows it."""


@dataclass(frozen=True)
class Server:
    id: str
    name: str
    position: int
    status: str
    image: str
    address: str
    host_id: str | None
    gpus: tuple[ServerGpu, ...] = ()
    ssh_host_keys: tuple[SshHostKey, ...] = ()
    ssh_port: int | None = None
    """Its direct SSH port on the controller's host (None: reach it through the tunnel)."""


class Volume(cloud_volumes.VolumeOut, WireRecord):
    """A data or boot volume; ``status`` is Cinder's."""


class VipuAccess(cloud_clusters.VipuOut, WireRecord):
    """The V-IPU side of a vPOD: its cluster, allocation and scoped user."""


@dataclass(frozen=True)
class ClusterStorage:
    """The dataset storage a cluster's servers hold, and where its bucket is mounted."""

    name: str
    mount_path: str | None = None


@shaped(cloud_clusters.ClusterOut)
class CloudCluster(cloud_clusters.ClusterSummary, WireRecord):
    """An AI cluster: a vPOD (IPUs) or a GPU cluster, with its servers and volumes."""

    interfaces: tuple[Mapping[str, str], ...]
    network: Mapping[str, Any]
    metadata: Mapping[str, str]
    vipu: VipuAccess | None
    fabric: str | None
    task_id: str | None
    error: str
    created_at: datetime
    updated_at: datetime
    servers: tuple[Server, ...]
    volumes: tuple[Volume, ...]
    saved_partitions: tuple[str, ...] | None = None
    dataset_storage: ClusterStorage | None = None
    keypairs: tuple[str, ...] = ()
    """Names of the keypairs that may log in to its servers over SSH."""


class Exceeded(cloud_flavors.ExceededOut, WireRecord):
    """A quota a cluster would exceed, with the numbers."""


@shaped(cloud_flavors.LimitsOut)
@dataclass(frozen=True)
class Limits(RawRecord):
    """Whether a cluster would fit the project's quotas."""

    fits: bool
    exceeded: tuple[Exceeded, ...]
    usage: Mapping[str, int]
    reserved_free: int = 0
    """Units of the flavor the project's reservations hold and no cluster uses now."""


class Project(cloud_projects.ProjectOut, WireRecord):
    """A project, its quotas and usage."""


class Token(cloud_projects.TokenOut, WireRecord):
    """An API token of a project; ``token`` is set only in the reply that made it."""


class ProjectCreated(cloud_projects.ProjectCreatedOut, WireRecord):
    """A new project and its first token (``token.token`` shown this once)."""

    project: Project
    token: Token


@dataclass(frozen=True)
class InvoiceLine:
    resource_type: str
    resource_id: str
    resource_name: str
    item: str
    quantity: int
    unit_price_per_hour: Decimal
    minutes: int
    amount: Decimal
    billing: str = "on_demand"
    """``on_demand`` (per minute) or ``reserved`` (a reservation, per month pro rata)."""
    unit_price_per_month: Decimal | None = None


class Utilisation(cloud_reservations.UtilisationOut, WireRecord):
    """How much of a reservation was used over a period."""


@shaped(cloud_reservations.ReservationOut)
@dataclass(frozen=True)
class Reservation(RawRecord):
    """A reservation plan: ``units`` of ``flavor`` for ``term``, billed every month."""

    id: str
    flavor: str
    pool: str
    units: int
    pool_units: int
    term: str
    status: str
    price_per_unit_month: Decimal
    price_per_month: Decimal
    currency: str
    starts_at: datetime
    ends_at: datetime
    cancelled_at: datetime | None
    billed_until: datetime
    utilisation: Utilisation


@shaped(cloud_billing.InvoiceOut)
@dataclass(frozen=True)
class Invoice(RawRecord):
    project_id: str
    start: datetime
    end: datetime
    currency: str
    total: Decimal
    minutes: int
    lines: tuple[InvoiceLine, ...]
    by_item: Mapping[str, Decimal]


@dataclass(frozen=True)
class InvoiceDay:
    start: datetime
    end: datetime
    total: Decimal
    minutes: int


@shaped(cloud_billing.InvoiceDaysOut)
@dataclass(frozen=True)
class InvoiceDays(RawRecord):
    """An invoice's total day by day (consecutive 24-hour periods from ``start``); the days
    add up to the period's invoice."""

    project_id: str
    start: datetime
    end: datetime
    currency: str
    total: Decimal
    days: tuple[InvoiceDay, ...]


class Shell(cloud_clusters.ShellOut, WireRecord):
    """How to reach a server's shell: ``relay`` (a WebSocket to ``connect`` through the
    cloud API, :meth:`~.cloud.CloudClient.open_shell`) or ``ssh`` to ``user@host -p port``."""


class Host(cloud_hosts.HostOut, WireRecord):
    """A registered GPU or Poplar host (administrators)."""


@shaped(cloud_clusters.MetadataOut)
@dataclass(frozen=True)
class MetadataUpdate(RawRecord):
    task: Task
    metadata: Mapping[str, str]


class StorageEndpoint(cloud_datasets.StorageEndpointOut, WireRecord):
    """An S3-compatible service the operator offers for dataset storage."""


@shaped(cloud_datasets.DatasetStorageOut)
@dataclass(frozen=True)
class DatasetStorage(RawRecord):
    """A bucket the project registered; ``access_key`` is masked (``AKIA…WXYZ``), and no
    answer carries the secret."""

    id: str
    name: str
    endpoint: str
    bucket: str
    access_key: str
    clusters: tuple[str, ...]
    created_at: datetime


@shaped(cloud_ssh.KeypairOut)
@dataclass(frozen=True)
class Keypair(RawRecord):
    """A project's SSH public key; ``private_key`` only in the answer that made it."""

    id: str
    name: str
    type: str
    fingerprint: str
    public_key: str
    clusters: tuple[str, ...]
    created_at: datetime
    private_key: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ServerSsh:
    position: int
    name: str
    status: str
    user: str
    host_keys: tuple[SshHostKey, ...]
    connect: str
    """The tunnel's path under the API's URL (a WebSocket carrying the SSH stream)."""
    direct_host: str | None = None
    """Where its direct SSH port listens, if the operator gives servers one."""
    direct_port: int | None = None


@shaped(cloud_ssh.ClusterSshOut)
@dataclass(frozen=True)
class ClusterSsh(RawRecord):
    """How to reach a cluster's servers over SSH."""

    cluster: str
    keypairs: tuple[str, ...]
    servers: tuple[ServerSsh, ...]


class Console(cloud_ssh.ConsoleOut, WireRecord):
    """A browser terminal on a server: open ``url`` in a browser logged in to the console."""
