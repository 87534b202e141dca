"""What the replay asks of a placer, and the topology-free bound.

A placer decides where a job runs in the pod. Placing is two steps,
:meth:`Placer.propose` (where would it go now? no change) and
:meth:`Placer.commit`, because backfill must see *where* a job would go
before it may start it: a job may only take IPUs the queue's head has not
reserved. :meth:`Placer.reserve` answers the head's question "when, at the
earliest, and on which IPUs could I start if the running jobs end as the
trace says?".

Three placers implement this protocol: :class:`BoundPlacer` (here: counts
free IPUs, ignores topology, so it is a lower bound on waiting for any real
placer), :class:`~vpod.sim.first_fit.FirstFitPlacer` (lowest aligned free
block, no policy) and :class:`~vpod.sim.engine_placer.EnginePlacer` (the
real placement engine). The last two share :class:`SlotPlacer`, which
replays releases on immutable states to find a reservation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from .jobs import Job

G = TypeVar("G")
G_contra = TypeVar("G_contra", contravariant=True)
S = TypeVar("S")

Completion = tuple[float, Job]
"""A running job and the time it ends; :meth:`Placer.reserve` gets them sorted by time."""


class Reservation(Protocol[G_contra]):
    """The head's claim on the future: from ``start`` on, it will fit.

    ``admits`` says whether a job that would still be running at ``start``
    may take ``grant`` without breaking the claim. It may record the grant
    (a count-based reservation spends its spare IPUs), so the replay calls it
    only for jobs it then starts.
    """

    @property
    def start(self) -> float: ...

    def admits(self, job: Job, grant: G_contra) -> bool: ...


class Placer(Protocol[G]):
    """Places jobs in one pod; ``G`` is the placer's own record of where a job went."""

    def propose(self, job: Job) -> G | None:
        """Where ``job`` would go now, or ``None`` if no valid place is free. Changes nothing."""
        ...

    def commit(self, job: Job, grant: G) -> None:
        """Start ``job`` where :meth:`propose` said, just now."""
        ...

    def release(self, job: Job) -> None:
        """Free the IPUs of a committed ``job``."""
        ...

    def reserve(self, job: Job, completions: Sequence[Completion]) -> Reservation[G]:
        """The earliest time ``job`` fits if running jobs end at the given times (sorted)."""
        ...


class NeverFitsError(AssertionError):
    """A job cannot be placed even in an empty pod: a bug, jobs are checked up front."""


@dataclass(slots=True)
class CountReservation:
    """EASY's classic reservation: ``spare`` IPUs beyond the head's stay usable past ``start``."""

    start: float
    spare: int

    def admits(self, job: Job, _grant: int) -> bool:
        if job.size > self.spare:
            return False
        self.spare -= job.size
        return True


class BoundPlacer:
    """The topology-free bound: a job fits whenever enough IPUs are free, anywhere.

    No real placer can start a job earlier in the same queue order, so its
    waits are a lower bound to compare the engine and first-fit against.
    A grant is the job's size.
    """

    def __init__(self, num_ipus: int) -> None:
        self.num_ipus = num_ipus
        self.free = num_ipus

    def propose(self, job: Job) -> int | None:
        return job.size if job.size <= self.free else None

    def commit(self, _job: Job, grant: int) -> None:
        self.free -= grant

    def release(self, job: Job) -> None:
        self.free += job.size

    def reserve(self, job: Job, completions: Sequence[Completion]) -> CountReservation:
        free = self.free
        for index, (end, running) in enumerate(completions):
            free += running.size
            last_at_this_time = index + 1 == len(completions) or completions[index + 1][0] != end
            if free >= job.size and last_at_this_time:
                return CountReservation(start=end, spare=free - job.size)
        raise NeverFitsError(f"job {job.index} of {job.size} IPUs never fits {self.num_ipus}")


@dataclass(frozen=True, slots=True)
class SlotReservation(Generic[G]):
    """A claim on particular IPUs (``slots``, a bit mask) from ``start`` on.

    A job still running at ``start`` is admitted when its grant avoids every
    reserved slot; ``slots_of`` reads a grant as a bit mask.
    """

    start: float
    slots: int
    slots_of: Callable[[G], int]

    def admits(self, _job: Job, grant: G) -> bool:
        return not self.slots_of(grant) & self.slots


class SlotPlacer(ABC, Generic[S, G]):
    """A placer that chooses IPUs, over an immutable state ``S`` (cheap to keep and fork).

    Subclasses say how to find a place in a state, and how a grant changes a
    state; this class keeps the current state and answers reservations by
    replaying completions on copies of it.
    """

    def __init__(self, state: S, num_ipus: int) -> None:
        self.state = state
        self.num_ipus = num_ipus
        self.free = num_ipus
        self._grants: dict[int, G] = {}

    @abstractmethod
    def find(self, state: S, job: Job) -> G | None:
        """Where ``job`` goes in ``state``, or ``None`` when no valid block is free."""

    @abstractmethod
    def with_job(self, state: S, job: Job, grant: G) -> S:
        """``state`` with ``job`` running on ``grant``."""

    @abstractmethod
    def without_job(self, state: S, job: Job, grant: G) -> S:
        """``state`` with ``job`` (running on ``grant``) gone."""

    @abstractmethod
    def slots_of(self, grant: G) -> int:
        """The slots of a grant as a bit mask (bit ``s`` set for slot ``s``)."""

    def propose(self, job: Job) -> G | None:
        if job.size > self.free:
            return None
        return self.find(self.state, job)

    def commit(self, job: Job, grant: G) -> None:
        self.state = self.with_job(self.state, job, grant)
        self._grants[job.index] = grant
        self.free -= job.size

    def release(self, job: Job) -> None:
        grant = self._grants.pop(job.index)
        self.state = self.without_job(self.state, job, grant)
        self.free += job.size

    def reserve(self, job: Job, completions: Sequence[Completion]) -> SlotReservation[G]:
        """Release running jobs in order of their end on a copy of the state until ``job`` fits.

        The placer is asked only at the last completion of each distinct time
        and only once enough IPUs are free, so a reservation costs one release
        per running job and a few placement probes.
        """
        state = self.state
        free = self.free
        for index, (end, running) in enumerate(completions):
            state = self.without_job(state, running, self._grants[running.index])
            free += running.size
            if free < job.size:
                continue
            if index + 1 < len(completions) and completions[index + 1][0] == end:
                continue
            grant = self.find(state, job)
            if grant is not None:
                return SlotReservation(end, self.slots_of(grant), self.slots_of)
        raise NeverFitsError(f"job {job.index} of {job.size} IPUs never fits {self.num_ipus}")
