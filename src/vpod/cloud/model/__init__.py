"""The cloud's model: statuses, records and errors, with no I/O and nothing from the layers
below but plain values. Drivers, rules, use-cases and the API all speak it."""

from __future__ import annotations

from . import errors
from .datasets import DatasetStorage, StorageEndpoint
from .errors import CloudError, DriverError, ServiceError, TemporaryDriverError, is_temporary
from .records import Cluster, Server, Task, Volume
from .reservations import Reservation, ReservationStatus
from .results import Attachment, ClusterChange, VolumeChange
from .statuses import ClusterStatus, Operation, Phase, ServerStatus, TaskState, VolumeStatus

__all__ = [
    "Attachment",
    "CloudError",
    "Cluster",
    "ClusterChange",
    "ClusterStatus",
    "DatasetStorage",
    "DriverError",
    "Operation",
    "Phase",
    "Reservation",
    "ReservationStatus",
    "Server",
    "ServerStatus",
    "ServiceError",
    "StorageEndpoint",
    "Task",
    "TaskState",
    "TemporaryDriverError",
    "Volume",
    "VolumeChange",
    "VolumeStatus",
    "errors",
    "is_temporary",
]
