"""Pure placement engine: snapshot + request -> Placement | Rejected.

Public surface::

    snapshot = Snapshot.build(pod, allocations={...}, partitions={...},
                              unavailable_slots=..., unavailable_machines=...)
    result = place(snapshot, PartitionRequest("p1", size=8, allocation_id="a1"))
    if isinstance(result, Rejected):
        print(result.reasons)            # sentences a person can act on
    else:
        snapshot = snapshot.apply(result)

No I/O, no clock, no randomness: the same snapshot and request always give
the same answer. See ``docs/placement.md`` for the model and the policy.
"""

from .engine import place, place_many, relocate
from .policy import BEST_FIT, FIRST_FIT, TIGHTEST_FIT, Policy
from .requests import AllocationRequest, PartitionRequest
from .results import (
    AllocationPlacement,
    PartitionPlacement,
    Placement,
    Rejected,
    Request,
    Segment,
)
from .snapshot import FreeBlock, FreeRun, PartitionFootprint, PlacementConflict, Snapshot

__all__ = [
    "BEST_FIT",
    "FIRST_FIT",
    "TIGHTEST_FIT",
    "AllocationPlacement",
    "AllocationRequest",
    "FreeBlock",
    "FreeRun",
    "PartitionFootprint",
    "PartitionPlacement",
    "PartitionRequest",
    "Placement",
    "PlacementConflict",
    "Policy",
    "Rejected",
    "Request",
    "Segment",
    "Snapshot",
    "place",
    "place_many",
    "relocate",
]
