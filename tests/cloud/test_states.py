"""Which operations may start from which cluster status; phases; what is billed when."""

from __future__ import annotations

import pytest

from vpod.cloud.flavors import find_flavor
from vpod.cloud.model import errors
from vpod.cloud.states import (
    ClusterStatus,
    Operation,
    Phase,
    VolumeStatus,
    billable,
    check_operation,
    phases_of,
    volume_billable,
)

VIRTUAL = find_flavor("g2a-ai-fast-v1pod-8")
DEDICATED = find_flavor("bm1-ai-small-v1pod-4")
GPU_BM = find_flavor("bm3-ai-1xlarge-h100-80-8")
GPU_VM = find_flavor("g3-ai-24-232-1250-h100-80-1")
S = ClusterStatus

# (operation, status, flavor, refused with) — None: allowed
CASES = [
    (Operation.SUSPEND, S.ACTIVE, VIRTUAL, None),
    (Operation.SUSPEND, S.DEGRADED, VIRTUAL, None),
    (Operation.SUSPEND, S.SUSPENDED, VIRTUAL, None),  # idempotent
    (Operation.SUSPEND, S.CREATING, VIRTUAL, "it is CREATING; wait for it to be created"),
    (Operation.SUSPEND, S.ACTIVE, GPU_BM, "bare-metal GPU servers cannot be suspended"),
    (Operation.SUSPEND, S.ACTIVE, GPU_VM, None),
    (Operation.RESUME, S.SUSPENDED, DEDICATED, None),
    (Operation.RESUME, S.ACTIVE, VIRTUAL, None),  # idempotent
    (Operation.RESUME, S.DELETING, VIRTUAL, "it is DELETING; it is being deleted"),
    (Operation.RESIZE, S.ACTIVE, GPU_BM, None),
    (Operation.RESIZE, S.ACTIVE, VIRTUAL, "its size is its flavor"),
    (Operation.RESIZE, S.SUSPENDED, GPU_VM, "it is SUSPENDED; resume it first"),
    (Operation.REBUILD, S.ERROR, VIRTUAL, None),
    (Operation.REBOOT, S.SUSPENDED, VIRTUAL, "resume it first"),
    (Operation.VOLUME_ATTACH, S.SUSPENDED, VIRTUAL, "resume it first"),
    (Operation.VOLUME_DETACH, S.SUSPENDED, VIRTUAL, None),
    (Operation.DELETE, S.ERROR, VIRTUAL, None),
    (Operation.DELETE, S.SUSPENDED, DEDICATED, None),
]


@pytest.mark.parametrize(("operation", "status", "flavor", "refusal"), CASES)
def test_operations_start_only_from_their_statuses(
    operation: Operation, status: ClusterStatus, flavor: object, refusal: str | None
) -> None:
    """The table of the spec's statuses: allowed, idempotent, or refused with advice."""
    if refusal is None:
        check_operation(operation, status, flavor, "c1")  # type: ignore[arg-type]
        return
    with pytest.raises((errors.FailedPrecondition, errors.InvalidArgument), match=refusal):
        check_operation(operation, status, flavor, "c1")  # type: ignore[arg-type]


def test_vpod_creation_walks_the_spec_phases_in_order() -> None:
    """NETWORK, VIPU_CONTROLLER, IPU_SERVERS, POPLAR_SERVERS, POST_DEPLOY_SETUP, FINISHED."""
    assert [p.value for p in phases_of(Operation.CREATE, True)] == [
        "NETWORK",
        "VIPU_CONTROLLER",
        "IPU_SERVERS",
        "POPLAR_SERVERS",
        "POST_DEPLOY_SETUP",
        "FINISHED",
    ]
    assert Phase.VIPU_CONTROLLER not in phases_of(Operation.CREATE, False)
    assert phases_of(Operation.SUSPEND, True)[0] is Phase.CLUSTER_SUSPEND
    assert phases_of(Operation.DELETE, False)[0] is Phase.CLUSTER_CLEAN_UP
    assert phases_of(Operation.VOLUME_ATTACH, True) == (Phase.FINISHED,)


def test_virtual_clusters_are_not_billed_while_suspended_bare_metal_is() -> None:
    """Suspension stops compute billing for VMs only; a queued cluster is never billed."""
    assert not billable(VIRTUAL, S.SUSPENDED)
    assert not billable(GPU_VM, S.SUSPENDED)
    assert billable(DEDICATED, S.SUSPENDED)
    assert billable(VIRTUAL, S.CREATING)
    assert billable(VIRTUAL, S.DEGRADED)
    assert not billable(GPU_BM, S.NEW)
    assert not billable(GPU_BM, S.DELETED)


def test_an_error_cluster_is_billed_only_while_it_holds_servers() -> None:
    """A rolled-back creation costs nothing; a failed rebuild keeps its servers and bills."""
    assert not billable(GPU_BM, S.ERROR, holds_servers=False)
    assert billable(GPU_BM, S.ERROR, holds_servers=True)


def test_volumes_are_billed_from_creation_to_deletion() -> None:
    """Attached or not, a volume costs its size until it is deleted."""
    assert volume_billable(VolumeStatus.AVAILABLE)
    assert volume_billable(VolumeStatus.IN_USE)
    assert not volume_billable(VolumeStatus.DELETED)
