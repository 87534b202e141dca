"""The cloud's model: statuses, records and errors, with no I/O and nothing from the layers
below but plain values. Drivers, rules, use-cases and the API all speak it."""

from __future__ import annotations

from . import errors
from .errors import CloudError, DriverError, ServiceError, TemporaryDriverError, is_temporary
from .statuses import ClusterStatus, Operation, Phase, ServerStatus, TaskState, VolumeStatus

__all__ = [
    "CloudError",
    "ClusterStatus",
    "DriverError",
    "Operation",
    "Phase",
    "ServerStatus",
    "ServiceError",
    "TaskState",
    "TemporaryDriverError",
    "VolumeStatus",
    "errors",
    "is_temporary",
]
