"""The event-driven replay of a trace through one placer.

Time jumps from event to event; an event is a job's arrival (its submission
time) or its completion (start + duration). At each distinct time the replay

1. releases every job that ends then (all of them, before anything starts),
2. queues every job submitted then, in trace order,
3. runs one scheduling pass under the queue policy, and
4. records the pod's busy IPUs and queue length for the timeline.

Scheduling pass, ``fifo`` (strict head of line): while the queue is not
empty, place its head; stop at the first head that does not fit.

Scheduling pass, ``backfill`` (EASY): first as fifo. If a head is left
blocked, it gets a *reservation*: the earliest completion time ``T`` at
which it would fit if the running jobs end as the trace says, computed by
the placer (for a placer that chooses IPUs, on which IPUs ``R``). Then every
other queued job, in queue order, starts now if it fits now and either ends
by ``T`` or leaves the reservation intact: for the bound, it needs no more
than the spare IPUs at ``T`` (those beyond the head's, which backfilled jobs
spend); for a placer that chooses IPUs, the block the placer picks for it
avoids ``R`` (if it does not, the job waits: the replay never overrules
where a placer puts a job). A reservation is recomputed whenever a job ends
or the head changes; arrivals and backfilled starts keep it, as they cannot
make the head start earlier and were admitted only if they leave it intact.
So the head never starts later than its first reservation.

A job counts as *fragmentation-blocked* if, at the end of the fifo phase of
some pass, it is the head, does not fit, and at least its size in IPUs is
free: the topology, not the load, holds it back. The bound never counts one.

Everything is deterministic: ties in time are broken by trace order, and the
placers are deterministic.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .jobs import Job
from .placers import NeverFitsError, Placer, Reservation

G = TypeVar("G")

ProgressCallback = Callable[[int], None]
"""Called with the number of jobs finished so far (now and then, and at the end)."""

_PROGRESS_EVERY = 64


class Policy(enum.StrEnum):
    """The queue discipline of a replay."""

    FIFO = "fifo"
    BACKFILL = "backfill"


@dataclass(frozen=True, slots=True)
class Timeline:
    """The state after each event time: parallel lists, one entry per distinct time."""

    times: list[float]
    busy: list[int]
    queued: list[int]
    fragmented: list[bool]
    """Whether the head of the queue was fragmentation-blocked at that time."""


@dataclass(frozen=True, slots=True)
class Replay:
    """What happened to every job of one replay."""

    jobs: Sequence[Job]
    starts: dict[int, float]
    """Start time of each job, by job index."""
    fragmentation_blocked: frozenset[int]
    """Indices of the jobs that were fragmentation-blocked at the head at least once."""
    timeline: Timeline
    num_ipus: int
    policy: Policy


def replay(
    jobs: Sequence[Job],
    placer: Placer[G],
    num_ipus: int,
    policy: Policy = Policy.FIFO,
    progress: ProgressCallback | None = None,
) -> Replay:
    """Replay ``jobs`` through ``placer`` on a pod of ``num_ipus`` IPUs.

    Every job must fit the pod (see :func:`vpod.sim.jobs.split_oversized`).
    """
    too_big = [job for job in jobs if job.size > num_ipus]
    if too_big:
        raise ValueError(
            f"{len(too_big)} job(s) need more than the pod's {num_ipus} IPUs"
            f" (job {too_big[0].index} needs {too_big[0].size}); drop them before replaying"
        )
    return _Replayer(jobs, placer, num_ipus, policy, progress).run()


class _Replayer(Generic[G]):
    """The mutable state of one replay; :func:`replay` is its only user."""

    def __init__(
        self,
        jobs: Sequence[Job],
        placer: Placer[G],
        num_ipus: int,
        policy: Policy,
        progress: ProgressCallback | None,
    ) -> None:
        self.jobs = jobs
        self.placer = placer
        self.num_ipus = num_ipus
        self.backfill = policy is Policy.BACKFILL
        self.policy = policy
        self.progress = progress
        self.busy = 0
        self.queue: list[Job] = []
        self.running: list[tuple[float, int, Job]] = []
        self.starts: dict[int, float] = {}
        self.blocked: set[int] = set()
        self.timeline = Timeline([], [], [], [])
        # Completions only ever free IPUs; between two of them the pod only
        # fills up. So a head that did not fit, or a size that found no
        # block, stays so until the next completion: remember both per epoch.
        self.epoch = 0
        self.failed_head: tuple[int, int] = (-1, -1)
        self.smallest_failed: tuple[int, int] = (num_ipus + 1, -1)
        self.reservation: tuple[int, int, Reservation[G] | None] = (-1, -1, None)
        # Jobs the reservation turned away, with the pod's version (epoch,
        # starts so far) at the time: see _backfill.
        self.started = 0
        self.denied: dict[int, tuple[int, int]] = {}

    def run(self) -> Replay:
        arrivals = sorted(self.jobs, key=lambda job: (job.submit, job.index))
        next_arrival = 0
        finished = 0
        running = self.running
        while next_arrival < len(arrivals) or running:
            now = math.inf
            if next_arrival < len(arrivals):
                now = arrivals[next_arrival].submit
            if running and running[0][0] < now:
                now = running[0][0]
            while running and running[0][0] == now:
                _, _, job = heapq.heappop(running)
                self.placer.release(job)
                self.busy -= job.size
                self.epoch += 1
                finished += 1
                if self.progress is not None and finished % _PROGRESS_EVERY == 0:
                    self.progress(finished)
            while next_arrival < len(arrivals) and arrivals[next_arrival].submit == now:
                self.queue.append(arrivals[next_arrival])
                next_arrival += 1
            fragmented = self._schedule(now)
            timeline = self.timeline
            timeline.times.append(now)
            timeline.busy.append(self.busy)
            timeline.queued.append(len(self.queue))
            timeline.fragmented.append(fragmented)
        if self.queue:
            raise NeverFitsError(
                f"{len(self.queue)} job(s) never started in an empty pod"
                f" (first: job {self.queue[0].index} of {self.queue[0].size} IPUs)"
            )
        if self.progress is not None:
            self.progress(finished)
        return Replay(
            jobs=self.jobs,
            starts=self.starts,
            fragmentation_blocked=frozenset(self.blocked),
            timeline=self.timeline,
            num_ipus=self.num_ipus,
            policy=self.policy,
        )

    def _start(self, job: Job, grant: G, now: float) -> None:
        self.started += 1
        self.placer.commit(job, grant)
        self.busy += job.size
        self.starts[job.index] = now
        heapq.heappush(self.running, (now + job.duration, job.index, job))

    def _schedule(self, now: float) -> bool:
        """One scheduling pass; whether the head is left fragmentation-blocked."""
        queue = self.queue
        started = 0
        while started < len(queue):
            head = queue[started]
            if self.failed_head == (head.index, self.epoch):
                break
            grant = self.placer.propose(head)
            if grant is None:
                self.failed_head = (head.index, self.epoch)
                break
            self._start(head, grant, now)
            started += 1
        if started:
            del queue[:started]
        if not queue:
            return False
        head = queue[0]
        fragmented = self.num_ipus - self.busy >= head.size
        if fragmented:
            self.blocked.add(head.index)
        if self.backfill and len(queue) > 1:
            self._backfill(now, head)
        return fragmented

    def _backfill(self, now: float, head: Job) -> None:
        """Start jobs behind the blocked ``head`` that leave its reservation intact.

        Sizes at or above ``limit`` cannot start now: more than the free IPUs,
        or no smaller than a size that found no block in this epoch. A job
        the reservation turned away stays turned away until the pod changes
        (a start or a completion): the placer would propose the same block,
        and its end only moves further past the reservation.
        """
        if self.smallest_failed[1] != self.epoch:
            self.smallest_failed = (self.num_ipus + 1, self.epoch)
        limit = min(self.smallest_failed[0], self.num_ipus - self.busy + 1)
        if limit <= 1:
            return
        reservation: Reservation[G] | None = None  # computed when first needed
        version = (self.epoch, self.started)
        denied = self.denied
        started: set[int] = set()
        for job in itertools.islice(self.queue, 1, None):
            if limit <= 1:
                break
            if job.size >= limit or denied.get(job.index) == version:
                continue
            grant = self.placer.propose(job)
            if grant is None:
                limit = job.size
                self.smallest_failed = (job.size, self.epoch)
                continue
            if reservation is None:
                reservation = self._reservation_for(head)
            if now + job.duration <= reservation.start or reservation.admits(job, grant):
                self._start(job, grant, now)
                started.add(job.index)
                version = (self.epoch, self.started)
                limit = min(limit, self.num_ipus - self.busy + 1)
            else:
                denied[job.index] = version
        if started:
            self.queue[:] = [job for job in self.queue if job.index not in started]

    def _reservation_for(self, head: Job) -> Reservation[G]:
        index, epoch, cached = self.reservation
        if cached is not None and index == head.index and epoch == self.epoch:
            return cached
        completions = [(end, job) for end, _, job in sorted(self.running)]
        reservation = self.placer.reserve(head, completions)
        self.reservation = (head.index, self.epoch, reservation)
        return reservation
