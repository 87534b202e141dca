"""The cloud's model: statuses, records and errors, with no I/O and nothing from the layers
below but plain values. Drivers, rules, use-cases and the API all speak it."""

from __future__ import annotations

from . import errors
from .datasets import DatasetStorage, SealedStorage, StorageAttachment, StorageEndpoint
from .errors import CloudError, DriverError, ServiceError, TemporaryDriverError, is_temporary
from .hosts import GpuAgent, HealthChange, Host, HostGpu, HostUsage
from .metering import MeterEntry
from .records import Cluster, Keypair, Server, Task, Volume
from .reservations import PoolState, Reservation, ReservationStatus
from .results import Attachment, ClusterChange, VolumeChange
from .statuses import ClusterStatus, Operation, Phase, ServerStatus, TaskState, VolumeStatus
from .task_params import TaskParams
from .tenants import Project, Token

__all__ = [
    "Attachment",
    "CloudError",
    "Cluster",
    "ClusterChange",
    "ClusterStatus",
    "DatasetStorage",
    "DriverError",
    "GpuAgent",
    "HealthChange",
    "Host",
    "HostGpu",
    "HostUsage",
    "Keypair",
    "MeterEntry",
    "Operation",
    "Phase",
    "PoolState",
    "Project",
    "Reservation",
    "ReservationStatus",
    "SealedStorage",
    "Server",
    "ServerStatus",
    "ServiceError",
    "StorageAttachment",
    "StorageEndpoint",
    "Task",
    "TaskParams",
    "TaskState",
    "TemporaryDriverError",
    "Token",
    "Volume",
    "VolumeChange",
    "VolumeStatus",
    "errors",
    "is_temporary",
]
