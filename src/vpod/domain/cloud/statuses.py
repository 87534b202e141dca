"""The statuses of the cloud's resources and the operations that change them.

Cluster statuses are the spec's (NEW, CREATING, ACTIVE, SUSPENDED, RESIZING,
REBUILDING, REBOOTING, DEGRADED, DELETING, ERROR); server statuses follow
Nova, volume statuses Cinder; task states and phases (``detailed_state``)
are the spec's. They are ``StrEnum``s, so a value is also the string the
API and the store carry.
"""

from __future__ import annotations

import enum


class ClusterStatus(enum.StrEnum):
    NEW = "NEW"
    CREATING = "CREATING"
    ACTIVE = "ACTIVE"
    SUSPENDED = "SUSPENDED"
    RESIZING = "RESIZING"
    REBUILDING = "REBUILDING"
    REBOOTING = "REBOOTING"
    DEGRADED = "DEGRADED"
    DELETING = "DELETING"
    ERROR = "ERROR"
    DELETED = "DELETED"
    """Only in metering records: the cluster is gone."""


class ServerStatus(enum.StrEnum):
    BUILD = "BUILD"
    ACTIVE = "ACTIVE"
    SHUTOFF = "SHUTOFF"
    SHELVED_OFFLOADED = "SHELVED_OFFLOADED"
    REBUILD = "REBUILD"
    REBOOT = "REBOOT"
    DELETED = "DELETED"
    ERROR = "ERROR"


class VolumeStatus(enum.StrEnum):
    CREATING = "creating"
    AVAILABLE = "available"
    ATTACHING = "attaching"
    IN_USE = "in-use"
    DETACHING = "detaching"
    DELETING = "deleting"
    ERROR = "error"
    DELETED = "deleted"
    """Only in metering records: the volume is gone."""


class TaskState(enum.StrEnum):
    NEW = "NEW"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    ERROR = "ERROR"

    @property
    def done(self) -> bool:
        return self in (TaskState.FINISHED, TaskState.ERROR)


class Phase(enum.StrEnum):
    """The task's ``detailed_state``."""

    NETWORK = "NETWORK"
    VIPU_CONTROLLER = "VIPU_CONTROLLER"
    IPU_SERVERS = "IPU_SERVERS"
    POPLAR_SERVERS = "POPLAR_SERVERS"
    POST_DEPLOY_SETUP = "POST_DEPLOY_SETUP"
    CLUSTER_SUSPEND = "CLUSTER_SUSPEND"
    CLUSTER_RESUME = "CLUSTER_RESUME"
    CLUSTER_RESIZE = "CLUSTER_RESIZE"
    CLUSTER_REBUILD = "CLUSTER_REBUILD"
    CLUSTER_CLEAN_UP = "CLUSTER_CLEAN_UP"
    RETRY = "RETRY"
    """Not the spec's: a temporary failure; the operation runs again from the start."""
    FINISHED = "FINISHED"
    ERROR = "ERROR"


class Operation(enum.StrEnum):
    CREATE = "create"
    DELETE = "delete"
    SUSPEND = "suspend"
    RESUME = "resume"
    RESIZE = "resize"
    REBUILD = "rebuild"
    REBOOT = "reboot"
    SET_METADATA = "set_metadata"
    VOLUME_CREATE = "volume_create"
    VOLUME_DELETE = "volume_delete"
    VOLUME_ATTACH = "volume_attach"
    VOLUME_DETACH = "volume_detach"
    DATASET_ATTACH = "dataset_attach"
    DATASET_DETACH = "dataset_detach"
