"""Properties of the replay on random small traces, for every placer and both policies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vpod.sim.compare import pod_for_ipus
from vpod.sim.engine_placer import EnginePlacer
from vpod.sim.event_replay import Policy, replay
from vpod.sim.first_fit import FirstFitPlacer
from vpod.sim.jobs import Job, make_job, split_oversized
from vpod.sim.metrics import summarize
from vpod.sim.placers import BoundPlacer, Placer

from .helpers import Recording
from .reference_replay import reference_starts

PlacerMaker = Callable[[int], tuple[Placer[Any], Any]]


def _bound(ipus: int) -> tuple[Placer[Any], Any]:
    return BoundPlacer(ipus), None


def _first_fit(ipus: int) -> tuple[Placer[Any], Any]:
    return FirstFitPlacer(pod_for_ipus(ipus)), lambda grant: grant


def _engine(ipus: int) -> tuple[Placer[Any], Any]:
    placer = EnginePlacer(pod_for_ipus(ipus))
    return placer, placer.slots_of


PLACERS: dict[str, PlacerMaker] = {"bound": _bound, "first_fit": _first_fit, "engine": _engine}

job_rows = st.lists(
    st.tuples(
        st.integers(0, 60),
        st.integers(0, 40),
        st.sampled_from([1, 1, 1, 2, 4, 4, 8, 16, 32, 64]),
    ),
    min_size=1,
    max_size=30,
)


def _jobs(rows: list[tuple[int, int, int]], ipus: int) -> list[Job]:
    jobs = [make_job(i, s, d, g) for i, (s, d, g) in enumerate(sorted(rows, key=lambda r: r[0]))]
    fits = split_oversized(jobs, ipus)[0]
    assume(fits)
    return fits


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("name", list(PLACERS))
@settings(max_examples=60, deadline=None)
@given(rows=job_rows, ipus=st.sampled_from([16, 64, 128]))
def test_replay_matches_the_plain_reference(
    name: str, policy: Policy, rows: list[tuple[int, int, int]], ipus: int
) -> None:
    """The replay's shortcuts change no start and no fragmentation count."""
    jobs = _jobs(rows, ipus)
    placer, _ = PLACERS[name](ipus)
    result = replay(jobs, placer, ipus, policy)
    plain, _ = PLACERS[name](ipus)
    starts, blocked = reference_starts(jobs, plain, ipus, policy)
    assert result.starts == starts
    assert result.fragmentation_blocked == blocked


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("name", list(PLACERS))
@settings(max_examples=60, deadline=None)
@given(rows=job_rows, ipus=st.sampled_from([16, 64, 128]))
def test_replay_invariants(
    name: str, policy: Policy, rows: list[tuple[int, int, int]], ipus: int
) -> None:
    """No IPU is shared, no job starts before submission, heads keep their reservation.

    Also: fifo starts jobs in submission order, the bound never counts a
    fragmentation-blocked job, and utilisation from the timeline equals the
    jobs' IPU-seconds over the span.
    """
    jobs = _jobs(rows, ipus)
    inner, slots = PLACERS[name](ipus)
    placer = Recording(inner, slots)
    result = replay(jobs, placer, ipus, policy)
    assert all(result.starts[job.index] >= job.submit for job in jobs)
    assert max(result.timeline.busy) <= ipus
    first_reservation: dict[int, float] = {}
    for head, start in placer.reservations:
        first_reservation.setdefault(head, start)
    for head, start in first_reservation.items():
        assert result.starts[head] <= start
    if policy is Policy.FIFO:
        in_order = [result.starts[job.index] for job in jobs]
        assert in_order == sorted(in_order)
    if name == "bound":
        assert not result.fragmentation_blocked
    summary = summarize(result)
    line = result.timeline
    busy_seconds = sum(
        line.busy[k] * (line.times[k + 1] - line.times[k]) for k in range(len(line.times) - 1)
    )
    if summary.makespan_s > 0:
        assert busy_seconds / (ipus * summary.makespan_s) == pytest.approx(summary.utilization)


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("name", ["first_fit", "engine"])
@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 40)), min_size=1, max_size=30),
    size=st.sampled_from([1, 2, 4, 8, 16]),
)
def test_jobs_of_one_size_never_fragment(
    name: str, policy: Policy, rows: list[tuple[int, int]], size: int
) -> None:
    """With a single job size, aligned blocks tile the pod: a placer equals the bound."""
    jobs = _jobs([(s, d, size) for s, d in rows], 64)
    placer, _ = PLACERS[name](64)
    result = replay(jobs, placer, 64, policy)
    reference = replay(jobs, BoundPlacer(64), 64, policy)
    assert result.starts == reference.starts
    assert not result.fragmentation_blocked


@pytest.mark.parametrize("name", list(PLACERS))
def test_replay_is_deterministic(name: str) -> None:
    """Two replays of the same trace give the same starts and the same timeline."""
    jobs = [
        make_job(i, i // 3, 5 + (i * 7) % 23, [1, 4, 2, 8, 1, 16, 64][i % 7]) for i in range(60)
    ]
    results = []
    for _ in range(2):
        placer, _ = PLACERS[name](64)
        results.append(replay(jobs, placer, 64, Policy.BACKFILL))
    assert results[0].starts == results[1].starts
    assert results[0].timeline == results[1].timeline
