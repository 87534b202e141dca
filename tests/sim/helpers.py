"""Small builders and wrappers shared by the simulator's tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vpod.sim.jobs import Job, make_job
from vpod.sim.placers import Completion, Placer, Reservation


def trace(*rows: tuple[float, float, int]) -> list[Job]:
    """Jobs from ``(submit, duration, accelerators)`` rows, indexed in row order."""
    return [make_job(i, submit, duration, gpus) for i, (submit, duration, gpus) in enumerate(rows)]


class Recording:
    """Wraps a placer: records every reservation and checks that grants never overlap.

    ``slots`` reads a grant as a bit mask of slots (``None`` for the bound,
    which has no slots to check).
    """

    def __init__(self, inner: Placer[Any], slots: Any = None) -> None:
        self.inner = inner
        self.slots = slots
        self.busy = 0
        self.held: dict[int, int] = {}
        self.reservations: list[tuple[int, float]] = []

    def propose(self, job: Job) -> Any:
        return self.inner.propose(job)

    def commit(self, job: Job, grant: Any) -> None:
        if self.slots is not None:
            mask = self.slots(grant)
            assert mask.bit_count() == job.size, "a grant holds exactly the job's IPUs"
            assert not mask & self.busy, "two running jobs share an IPU"
            self.busy |= mask
            self.held[job.index] = mask
        self.inner.commit(job, grant)

    def release(self, job: Job) -> None:
        if self.slots is not None:
            self.busy &= ~self.held.pop(job.index)
        self.inner.release(job)

    def reserve(self, job: Job, completions: Sequence[Completion]) -> Reservation[Any]:
        reservation = self.inner.reserve(job, completions)
        self.reservations.append((job.index, reservation.start))
        return reservation
