"""Statuses of clusters, servers, volumes and tasks; what each operation may start from. Pure.

Cluster statuses are the spec's (NEW, CREATING, ACTIVE, SUSPENDED, RESIZING,
REBUILDING, REBOOTING, DEGRADED, DELETING, ERROR). Suspend and resume have
no status of their own: the cluster stays ACTIVE (or SUSPENDED) until the
task finishes, and the task's ``detailed_state`` says CLUSTER_SUSPEND or
CLUSTER_RESUME meanwhile. A cluster runs one task at a time: any other
mutating call while a task is NEW or RUNNING is refused ("busy").

Server statuses follow Nova, volume statuses follow Cinder, task states and
``detailed_state`` phases are the spec's. ``PHASES`` lists the phases each
operation walks, in order, so clients can draw progress.
"""

from __future__ import annotations

from collections.abc import Mapping

from .flavors import Flavor
from .model import errors
from .model.statuses import ClusterStatus, Operation, Phase, ServerStatus, TaskState, VolumeStatus

__all__ = [
    "ALLOWED_FROM",
    "PHASES",
    "STATUS_DURING",
    "ClusterStatus",
    "Operation",
    "Phase",
    "ServerStatus",
    "TaskState",
    "VolumeStatus",
    "billable",
    "check_operation",
    "phases_of",
    "volume_billable",
]


P = Phase
PHASES: Mapping[tuple[Operation, bool], tuple[Phase, ...]] = {
    # (operation, is_vpod) -> phases in order; FINISHED closes every successful task.
    (Operation.CREATE, True): (
        P.NETWORK, P.VIPU_CONTROLLER, P.IPU_SERVERS, P.POPLAR_SERVERS, P.POST_DEPLOY_SETUP,
        P.FINISHED,
    ),
    (Operation.CREATE, False): (P.NETWORK, P.POPLAR_SERVERS, P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.SUSPEND, True): (P.CLUSTER_SUSPEND, P.FINISHED),
    (Operation.SUSPEND, False): (P.CLUSTER_SUSPEND, P.FINISHED),
    (Operation.RESUME, True): (P.CLUSTER_RESUME, P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.RESUME, False): (P.CLUSTER_RESUME, P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.RESIZE, False): (P.CLUSTER_RESIZE, P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.REBUILD, True): (P.CLUSTER_REBUILD, P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.REBUILD, False): (P.CLUSTER_REBUILD, P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.REBOOT, True): (P.POPLAR_SERVERS, P.FINISHED),
    (Operation.REBOOT, False): (P.POPLAR_SERVERS, P.FINISHED),
    (Operation.DELETE, True): (P.CLUSTER_CLEAN_UP, P.FINISHED),
    (Operation.DELETE, False): (P.CLUSTER_CLEAN_UP, P.FINISHED),
    (Operation.DATASET_ATTACH, True): (P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.DATASET_ATTACH, False): (P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.DATASET_DETACH, True): (P.POST_DEPLOY_SETUP, P.FINISHED),
    (Operation.DATASET_DETACH, False): (P.POST_DEPLOY_SETUP, P.FINISHED),
}  # fmt: skip
"""Volume tasks and metadata changes have no phases: ``detailed_state`` is null until FINISHED."""


def phases_of(operation: Operation, is_vpod: bool) -> tuple[Phase, ...]:
    return PHASES.get((operation, is_vpod), (Phase.FINISHED,))


S = ClusterStatus
_STEADY = frozenset({S.ACTIVE, S.DEGRADED})

ALLOWED_FROM: Mapping[Operation, frozenset[ClusterStatus]] = {
    Operation.SUSPEND: _STEADY | {S.ERROR},
    Operation.RESUME: frozenset({S.SUSPENDED}),
    Operation.RESIZE: _STEADY,
    Operation.REBUILD: _STEADY | {S.ERROR},
    Operation.REBOOT: _STEADY | {S.ERROR},
    Operation.SET_METADATA: frozenset(set(S) - {S.DELETING, S.DELETED}),
    Operation.VOLUME_ATTACH: _STEADY,
    Operation.VOLUME_DETACH: _STEADY | {S.SUSPENDED, S.ERROR},
    Operation.DATASET_ATTACH: _STEADY,
    Operation.DATASET_DETACH: _STEADY,
    Operation.DELETE: frozenset(set(S) - {S.DELETED}),
}
"""Statuses an operation on an existing cluster may start from."""

STATUS_DURING: Mapping[Operation, ClusterStatus] = {
    Operation.CREATE: S.CREATING,
    Operation.RESIZE: S.RESIZING,
    Operation.REBUILD: S.REBUILDING,
    Operation.REBOOT: S.REBOOTING,
    Operation.DELETE: S.DELETING,
}
"""The status a cluster shows while the operation runs (others keep theirs)."""

_ADVICE: Mapping[ClusterStatus, str] = {
    S.SUSPENDED: "resume it first (`vpod cluster resume`)",
    S.ERROR: "delete it, or rebuild it",
    S.NEW: "wait for it to be created",
    S.CREATING: "wait for it to be created",
    S.DELETING: "it is being deleted",
}


def check_operation(operation: Operation, status: ClusterStatus, flavor: Flavor, name: str) -> None:
    """Refuse (FailedPrecondition, or InvalidArgument for the flavor) what cannot start now."""
    if operation is Operation.SUSPEND and not flavor.suspendable:
        raise errors.InvalidArgument(
            f"cluster {name} is a bare-metal GPU cluster ({flavor.name}): bare-metal GPU servers"
            " cannot be suspended; delete the cluster to stop paying"
        )
    if operation is Operation.RESIZE and not flavor.resizable:
        raise errors.InvalidArgument(
            f"cluster {name} is a vPOD ({flavor.name}): its size is its flavor; create a"
            " cluster of a larger flavor instead of resizing"
        )
    if status in ALLOWED_FROM.get(operation, frozenset()):
        return
    if operation is Operation.SUSPEND and status is S.SUSPENDED:
        return  # idempotent: the service answers with a task that finishes at once
    if operation is Operation.RESUME and status in _STEADY:
        return  # idempotent likewise
    advice = _ADVICE.get(status, "wait until it is ACTIVE")
    raise errors.FailedPrecondition(
        f"cannot {operation.value.replace('_', ' ')} cluster {name}: it is {status.value}; {advice}"
    )


def billable(flavor: Flavor, status: ClusterStatus, *, holds_servers: bool = True) -> bool:
    """Whether compute is charged in ``status`` (metering writes it on every record).

    A cluster is billed from the moment it is being created until it is
    deleted, except: a virtual cluster is not billed while SUSPENDED; a NEW
    (queued) cluster is not billed yet; and a cluster in ERROR is billed only
    while it still holds servers (a failed creation is rolled back and holds
    none; a failed rebuild keeps its servers).
    """
    if status in (S.NEW, S.DELETED):
        return False
    if status is S.ERROR:
        return holds_servers
    if status is S.SUSPENDED:
        return flavor.billed_while_suspended
    return True


def volume_billable(status: VolumeStatus) -> bool:
    """Volumes cost their size from creation to deletion, attached or not."""
    return status not in (VolumeStatus.DELETED, VolumeStatus.ERROR)
