"""Summaries of one replay: the figures the simulator reports.

Definitions (all times in seconds):

- *wait* of a job: its start minus its submission.
- ``mean_wait_s``: the mean wait over the replayed jobs.
- ``p99_wait_s``: the 99th percentile of waits by nearest rank: the
  ``ceil(0.99 n)``-th smallest of the ``n`` waits (a wait some job had).
- ``makespan_s``: the last completion minus the first submission.
- ``utilization``: busy IPUs averaged over that span, divided by the pod's
  IPUs; a job keeps its whole partition busy (a job asking for 32 holds 64).
  It equals the IPU-seconds of all jobs over ``num_ipus * makespan_s``.
- ``fragmentation_blocked``: the number of jobs that were, at least once, at
  the head of the queue and did not fit although enough IPUs were free.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields

from .event_replay import Replay


@dataclass(frozen=True, slots=True)
class SizeWaits:
    """Waits of the jobs of one partition size."""

    size: int
    jobs: int
    mean_wait_s: float
    max_wait_s: float
    waited: int
    """How many of them waited at all."""
    fragmentation_blocked: int


@dataclass(frozen=True, slots=True)
class Summary:
    """The reported figures of one replay."""

    jobs: int
    utilization: float
    mean_wait_s: float
    p99_wait_s: float
    makespan_s: float
    fragmentation_blocked: int
    max_queue: int
    fragmented_s: float
    """How long, in total, the head of the queue was fragmentation-blocked."""
    by_size: tuple[SizeWaits, ...]

    def as_dict(self) -> dict[str, object]:
        """The summary as JSON-ready values (sizes keyed by their IPU count as text)."""
        figures = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "by_size"}
        sizes = {
            str(s.size): {k: v for k, v in asdict(s).items() if k != "size"} for s in self.by_size
        }
        return {**figures, "by_size": sizes}


def percentile_nearest_rank(values: Iterable[float], fraction: float) -> float:
    """The ``ceil(fraction * n)``-th smallest value (the smallest for tiny ``n``)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("a percentile of no values is undefined")
    rank = max(1, math.ceil(fraction * len(ordered)))
    return float(ordered[rank - 1])


def fragmented_seconds(replay: Replay) -> float:
    """Total time during which the head of the queue was fragmentation-blocked."""
    line = replay.timeline
    total = 0.0
    for k in range(len(line.times) - 1):
        if line.fragmented[k]:
            total += line.times[k + 1] - line.times[k]
    return total


def summarize(replay: Replay) -> Summary:
    """The figures of ``replay``."""
    jobs = replay.jobs
    if not jobs:
        raise ValueError("a replay of no jobs has no figures")
    waits = {job.index: replay.starts[job.index] - job.submit for job in jobs}
    first_submit = min(job.submit for job in jobs)
    last_end = max(replay.starts[job.index] + job.duration for job in jobs)
    makespan = last_end - first_submit
    work = sum(job.size * job.duration for job in jobs)
    utilization = work / (replay.num_ipus * makespan) if makespan > 0 else 0.0
    by_size: dict[int, list[float]] = {}
    blocked_by_size: dict[int, int] = {}
    for job in jobs:
        by_size.setdefault(job.size, []).append(waits[job.index])
        if job.index in replay.fragmentation_blocked:
            blocked_by_size[job.size] = blocked_by_size.get(job.size, 0) + 1
    return Summary(
        jobs=len(jobs),
        utilization=utilization,
        mean_wait_s=sum(waits.values()) / len(jobs),
        p99_wait_s=percentile_nearest_rank(waits.values(), 0.99),
        makespan_s=makespan,
        fragmentation_blocked=len(replay.fragmentation_blocked),
        max_queue=max(replay.timeline.queued, default=0),
        fragmented_s=fragmented_seconds(replay),
        by_size=tuple(
            SizeWaits(
                size=size,
                jobs=len(values),
                mean_wait_s=sum(values) / len(values),
                max_wait_s=max(values),
                waited=sum(1 for w in values if w > 0),
                fragmentation_blocked=blocked_by_size.get(size, 0),
            )
            for size, values in sorted(by_size.items())
        ),
    )
