"""A deliberately plain replay, to check the real one's shortcuts change nothing.

It follows the rules of :mod:`vpod.sim.event_replay` word for word and skips every
shortcut: each pass re-tries the head and every queued job, even when
nothing can have changed since the last pass. Only the reservation's
lifetime (recomputed after a completion or when the head changes) is shared,
because it is part of the rules, not an optimisation.
"""

from __future__ import annotations

from typing import Any

from vpod.sim.event_replay import Policy
from vpod.sim.jobs import Job
from vpod.sim.placers import Placer, Reservation


def reference_starts(
    jobs: list[Job], placer: Placer[Any], num_ipus: int, policy: Policy
) -> tuple[dict[int, float], set[int]]:
    """Start time of every job, and the fragmentation-blocked jobs."""
    pending = sorted(jobs, key=lambda job: (job.submit, job.index))
    running: list[tuple[float, int, Job]] = []
    queue: list[Job] = []
    starts: dict[int, float] = {}
    blocked: set[int] = set()
    busy = 0
    completions_seen = 0
    kept: tuple[int, int, Reservation[Any]] | None = None
    while pending or running:
        now = min([job.submit for job in pending[:1]] + [end for end, _, _ in running])
        for entry in sorted(entry for entry in running if entry[0] == now):
            running.remove(entry)
            placer.release(entry[2])
            busy -= entry[2].size
            completions_seen += 1
        while pending and pending[0].submit == now:
            queue.append(pending.pop(0))
        while queue:
            grant = placer.propose(queue[0])
            if grant is None:
                break
            job = queue.pop(0)
            placer.commit(job, grant)
            busy += job.size
            starts[job.index] = now
            running.append((now + job.duration, job.index, job))
        if not queue:
            continue
        head = queue[0]
        if num_ipus - busy >= head.size:
            blocked.add(head.index)
        if policy is Policy.FIFO:
            continue
        if kept is None or kept[:2] != (head.index, completions_seen):
            ordered = [(end, job) for end, _, job in sorted(running)]
            kept = (head.index, completions_seen, placer.reserve(head, ordered))
        reservation = kept[2]
        for job in list(queue[1:]):
            grant = placer.propose(job)
            if grant is None:
                continue
            if now + job.duration <= reservation.start or reservation.admits(job, grant):
                placer.commit(job, grant)
                busy += job.size
                starts[job.index] = now
                running.append((now + job.duration, job.index, job))
                queue.remove(job)
    return starts, blocked
