"""The naive first-fit baseline: the lowest-index aligned free block, and no other policy.

It follows the placement rules (vipu-system.md §3) and nothing more: a job of
s IPUs, s up to a domain, takes the free block of s consecutive slots aligned
to s with the lowest first slot; a job of k whole domains takes the k
lowest-numbered domains that are entirely free. It is what a placer without
any fragmentation policy would do, so the engine should beat it.

The state is one integer used as a bit mask of busy slots (bit s = slot s).
Finding a block is a handful of big-integer operations, whatever the pod size.
"""

from __future__ import annotations

from vpod.domain.topology import Pod

from .jobs import Job
from .placers import SlotPlacer


def _runs_of_free(free: int, size: int) -> int:
    """Bits ``i`` such that slots ``i .. i+size-1`` are all free (``size`` a power of two)."""
    width = 1
    while width < size:
        free &= free >> width
        width <<= 1
    return free


class FirstFitPlacer(SlotPlacer[int, int]):
    """Lowest aligned free block first. Grants and the state are bit masks of slots."""

    def __init__(self, pod: Pod) -> None:
        super().__init__(0, pod.num_ipus)
        self._all = (1 << pod.num_ipus) - 1
        self._domain_ipus = pod.domains[0].ipus
        self._domains = [((1 << d.ipus) - 1) << d.first_slot for d in pod.domains]
        self._starts: dict[int, int] = {}
        size = 1
        while size <= self._domain_ipus:
            starts = 0
            for domain in pod.domains:
                for first in range(domain.first_slot, domain.end_slot - size + 1, size):
                    starts |= 1 << first
            self._starts[size] = starts
            size <<= 1

    def find(self, state: int, job: Job) -> int | None:
        size = job.size
        if size <= self._domain_ipus:
            starts = _runs_of_free(~state & self._all, size) & self._starts[size]
            if not starts:
                return None
            lowest = starts & -starts
            return ((1 << size) - 1) * lowest
        wanted, remainder = divmod(size, self._domain_ipus)
        if remainder:
            return None
        grant = 0
        for domain in self._domains:
            if not state & domain:
                grant |= domain
                wanted -= 1
                if not wanted:
                    return grant
        return None

    def with_job(self, state: int, _job: Job, grant: int) -> int:
        return state | grant

    def without_job(self, state: int, _job: Job, grant: int) -> int:
        return state & ~grant

    def slots_of(self, grant: int) -> int:
        return grant
