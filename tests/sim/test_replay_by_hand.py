"""Small traces whose waits, utilisation and fragmentation counts were worked out by hand.

All run on a Bow pod of 16 IPUs: one IPU-Link domain of 4 machines, slots
0..15, where a block of s IPUs must start at a multiple of s.
"""

from __future__ import annotations

import pytest

from vpod.sim.compare import pod_for_ipus
from vpod.sim.event_replay import Policy, Replay, replay
from vpod.sim.first_fit import FirstFitPlacer
from vpod.sim.jobs import Job
from vpod.sim.metrics import summarize
from vpod.sim.placers import BoundPlacer

from .helpers import Recording, trace

POD = 16


def first_fit(jobs: list[Job], policy: Policy) -> tuple[Replay, Recording]:
    placer = Recording(FirstFitPlacer(pod_for_ipus(POD)), slots=lambda grant: grant)
    return replay(jobs, placer, POD, policy), placer


def bound(jobs: list[Job], policy: Policy) -> Replay:
    return replay(jobs, BoundPlacer(POD), POD, policy)


def waits(result: Replay) -> list[float]:
    return [result.starts[job.index] - job.submit for job in result.jobs]


# Four 4-IPU jobs fill the pod; 0 and 3 end at 10, leaving slots 0-3 and 12-15
# free: 8 IPUs, but no aligned block of 8. Job 4 (8 IPUs) is then blocked by
# fragmentation until 1 and 2 end at 30. Job 5 (1 IPU, 3 s) queues behind it.
FRAGMENTED = trace(
    (0, 10, 4),
    (0, 30, 4),
    (0, 30, 4),
    (0, 10, 4),
    (1, 5, 8),
    (2, 3, 1),
)
WORK = 4 * 10 + 4 * 30 + 4 * 30 + 4 * 10 + 8 * 5 + 1 * 3


def test_fifo_first_fit_waits_for_an_aligned_block() -> None:
    """First-fit starts the 8-IPU head only at 30, and the 1-IPU job behind it with it."""
    result, _ = first_fit(FRAGMENTED, Policy.FIFO)
    assert waits(result) == [0, 0, 0, 0, 29, 28]
    assert result.fragmentation_blocked == frozenset({4})
    summary = summarize(result)
    assert summary.mean_wait_s == pytest.approx(57 / 6)
    assert summary.p99_wait_s == 29
    assert summary.makespan_s == 35
    assert summary.utilization == pytest.approx(WORK / (16 * 35))
    assert summary.fragmentation_blocked == 1
    assert summary.fragmented_s == 20  # head blocked by topology from 10 to 30
    assert summary.max_queue == 2


def test_fifo_bound_starts_as_soon_as_enough_ipus_are_free() -> None:
    """The bound starts the 8-IPU job at 10 and the 1-IPU job when it ends at 15."""
    result = bound(FRAGMENTED, Policy.FIFO)
    assert waits(result) == [0, 0, 0, 0, 9, 13]
    summary = summarize(result)
    assert summary.mean_wait_s == pytest.approx(22 / 6)
    assert summary.p99_wait_s == 13
    assert summary.makespan_s == 30
    assert summary.utilization == pytest.approx(WORK / (16 * 30))
    assert summary.fragmentation_blocked == 0


def test_backfill_starts_a_short_job_that_ends_before_the_reservation() -> None:
    """At 10 the head reserves slots 0-7 from 30; the 3 s job ends at 13 and goes first."""
    result, placer = first_fit(FRAGMENTED, Policy.BACKFILL)
    assert waits(result) == [0, 0, 0, 0, 29, 8]
    assert placer.reservations == [(4, 30)]
    assert result.fragmentation_blocked == frozenset({4})


def test_backfill_keeps_a_long_job_off_the_reserved_ipus() -> None:
    """A 50 s job would take slot 0, reserved for the head from 30: it waits for the head."""
    jobs = [*FRAGMENTED[:5], Job(5, "5", 2, 50, 1, 1)]
    result, _ = first_fit(jobs, Policy.BACKFILL)
    assert waits(result) == [0, 0, 0, 0, 29, 28]


def test_backfill_admits_a_long_job_placed_outside_the_reservation() -> None:
    """Only slots 12-15 are free at 10; a 100 s job there leaves the head's 0-7 alone."""
    jobs = trace(
        (0, 20, 4),  # slots 0-3
        (0, 20, 4),  # 4-7
        (0, 40, 4),  # 8-11
        (0, 10, 4),  # 12-15
        (1, 5, 8),  # head: fits only at 20, in 0-7
        (2, 100, 4),
    )
    result, placer = first_fit(jobs, Policy.BACKFILL)
    assert waits(result) == [0, 0, 0, 0, 19, 8]
    assert placer.reservations[-1] == (4, 20)
    assert result.fragmentation_blocked == frozenset()
    fifo, _ = first_fit(jobs, Policy.FIFO)
    assert waits(fifo) == [0, 0, 0, 0, 19, 18]


# The head (8 IPUs) finds 6 free at 1 and reserves the 8 free at 10, with no
# spare IPU. A long 4-IPU job would eat into it and waits; a short one that
# ends exactly at 10 may start.
SPARE = trace(
    (0, 10, 2),
    (0, 50, 8),
    (1, 5, 8),
    (2, 100, 4),
    (3, 7, 4),
)


def test_bound_backfill_spends_only_spare_ipus() -> None:
    """EASY with counts: the long job waits for the head, the short one starts at once."""
    result = bound(SPARE, Policy.BACKFILL)
    assert waits(result) == [0, 0, 9, 13, 0]


def test_bound_fifo_on_the_same_trace_holds_everyone_behind_the_head() -> None:
    """Without backfill the short job waits for the head to start and for room after it."""
    result = bound(SPARE, Policy.FIFO)
    assert waits(result) == [0, 0, 9, 13, 12]


def test_first_fit_backfill_on_the_same_trace_matches_the_bound() -> None:
    """First-fit reserves 0-7 at 10; the long job would go to 4-7, the short one may."""
    result, placer = first_fit(SPARE, Policy.BACKFILL)
    assert waits(result) == [0, 0, 9, 13, 0]
    assert placer.reservations == [(2, 10)]


def test_a_job_of_32_holds_a_partition_of_64() -> None:
    """Sizes round up to a partition size, and the busy IPUs count the whole partition."""
    jobs = trace((0, 10, 32), (0, 10, 1))
    result = replay(jobs, BoundPlacer(64), 64, Policy.FIFO)
    assert [job.size for job in jobs] == [64, 1]
    assert waits(result) == [0, 10]
    assert summarize(result).utilization == pytest.approx((64 * 10 + 10) / (64 * 20))


def test_jobs_submitted_together_queue_in_trace_order() -> None:
    """Ties in submission time go to the earlier row."""
    jobs = trace((5, 10, 16), (5, 10, 16), (5, 10, 16))
    result = bound(jobs, Policy.FIFO)
    assert waits(result) == [0, 10, 20]


def test_a_job_ending_frees_its_ipus_before_arrivals_at_that_time_are_placed() -> None:
    """Completions at a time are processed before the jobs submitted at that time."""
    jobs = trace((0, 10, 16), (10, 5, 16))
    result, _ = first_fit(jobs, Policy.FIFO)
    assert waits(result) == [0, 0]


def test_replay_refuses_jobs_larger_than_the_pod() -> None:
    """Oversized jobs must be dropped before a replay, or a fifo queue would never move."""
    with pytest.raises(ValueError, match="drop them before replaying"):
        bound(trace((0, 1, 64)), Policy.FIFO)
