"""The real placement engine behind the simulator's placer protocol.

The whole pod is one allocation, ``pod``, and every job asks the engine for a
partition of its size in it, exactly as the controller would. The engine's
snapshots are immutable, so keeping one per state, and forking it to find a
reservation, costs what the engine's own copy-on-write costs.
"""

from __future__ import annotations

from vpod.domain.topology import Pod
from vpod.placement import BEST_FIT, PartitionPlacement, PartitionRequest, Policy, Snapshot, place

from .jobs import Job
from .placers import SlotPlacer

ALLOCATION_ID = "pod"
"""The one allocation spanning the simulated pod."""


class EnginePlacer(SlotPlacer[Snapshot, PartitionPlacement]):
    """Places each job as a partition through :func:`vpod.placement.place`.

    ``policy`` is the engine's default unless a study asks for a variant.
    """

    def __init__(self, pod: Pod, policy: Policy = BEST_FIT) -> None:
        snapshot = Snapshot.build(pod, allocations={ALLOCATION_ID: range(pod.num_machines)})
        super().__init__(snapshot, pod.num_ipus)
        self.policy = policy

    def find(self, state: Snapshot, job: Job) -> PartitionPlacement | None:
        request = PartitionRequest(id=job.name, size=job.size, allocation_id=ALLOCATION_ID)
        result = place(state, request, policy=self.policy)
        return result if isinstance(result, PartitionPlacement) else None

    def with_job(self, state: Snapshot, _job: Job, grant: PartitionPlacement) -> Snapshot:
        return state.apply(grant)

    def without_job(self, state: Snapshot, job: Job, _grant: PartitionPlacement) -> Snapshot:
        return state.release_partition(job.name)

    def slots_of(self, grant: PartitionPlacement) -> int:
        mask = 0
        for slot in grant.slots:
            mask |= 1 << slot
        return mask
