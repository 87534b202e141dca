"""The placement engine's entry points: pure functions of a snapshot and a request.

``place`` answers one request; ``place_many`` answers several in a row as if
each success were committed before the next (a what-if: the caller's
snapshot is untouched); ``relocate`` finds new IPUs for an existing
partition. None of them has side effects: the caller commits a placement
(the controller in one database transaction, a simulator with
:meth:`Snapshot.apply`).

Errors: ``Rejected`` when the request is fine but does not fit now;
:class:`~vpod.domain.errors.InvalidSpec` when it could never be placed (a
caller bug, such as a size the system does not allow or an id that already
exists).
"""

from __future__ import annotations

from collections.abc import Iterable

from .allocations import place_allocation
from .partitions import place_partition
from .policy import BEST_FIT, Policy
from .requests import AllocationRequest, PartitionRequest
from .results import PartitionPlacement, Placement, Rejected
from .snapshot import Snapshot


def place(
    snapshot: Snapshot,
    request: AllocationRequest | PartitionRequest,
    *,
    policy: Policy = BEST_FIT,
) -> Placement | Rejected:
    """Where ``request`` goes in ``snapshot``, or the reasons it does not fit."""
    if isinstance(request, AllocationRequest):
        return place_allocation(snapshot, request, policy)
    return place_partition(snapshot, request, policy)


def place_many(
    snapshot: Snapshot,
    requests: Iterable[AllocationRequest | PartitionRequest],
    *,
    policy: Policy = BEST_FIT,
) -> list[Placement | Rejected]:
    """Place ``requests`` in order, each seeing the successes before it.

    A rejected request takes nothing, so later requests may still fit.
    """
    results: list[Placement | Rejected] = []
    current = snapshot
    for request in requests:
        result = place(current, request, policy=policy)
        if not isinstance(result, Rejected):
            current = current.apply(result)
        results.append(result)
    return results


def relocate(
    snapshot: Snapshot,
    partition_id: str,
    *,
    avoid_slots: Iterable[int] = frozenset(),
    policy: Policy = BEST_FIT,
) -> PartitionPlacement | Rejected:
    """New IPUs in the same allocation for partition ``partition_id``, same size and shape.

    The partition's own IPUs count as free (it moves), except unavailable ones
    and ``avoid_slots`` (IPUs reported failing that are not marked unavailable
    yet). The answer may reuse healthy IPUs the partition already holds. To
    commit: ``snapshot.release_partition(partition_id).apply(placement)``.
    """
    footprint = snapshot.partition(partition_id)
    segments = len({snapshot.pod.domain_of_slot(slot).index for slot in footprint.slots})
    request = PartitionRequest(
        id=partition_id,
        size=len(footprint.slots),
        allocation_id=footprint.allocation_id,
        num_segments=segments,
        num_gcds=footprint.num_gcds,
        reconfigurable=footprint.reconfigurable,
    )
    what_if = snapshot.release_partition(partition_id).mark_unavailable(slots=avoid_slots)
    result = place_partition(what_if, request, policy)
    if isinstance(result, Rejected):
        return Rejected(
            tuple(f"partition {partition_id} cannot move: {reason}" for reason in result.reasons)
        )
    return result
