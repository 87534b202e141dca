"""Comparing placers in one run: dropped jobs, the report, the plot's averaging."""

from __future__ import annotations

from pathlib import Path

import pytest

from vpod.domain.errors import InvalidSpec
from vpod.placement import FIRST_FIT as ENGINE_FIRST_FIT
from vpod.sim.compare import BOUND, FIRST_FIT, compare, mean_wait_ratio, pod_for_ipus
from vpod.sim.engine_placer import EnginePlacer
from vpod.sim.event_replay import Policy, replay
from vpod.sim.first_fit import FirstFitPlacer
from vpod.sim.metrics import Summary, percentile_nearest_rank
from vpod.sim.placers import BoundPlacer
from vpod.sim.plot import window_averages
from vpod.sim.trace_csv import read_trace

from .helpers import trace

REFERENCES = {BOUND: lambda pod: BoundPlacer(pod.num_ipus), FIRST_FIT: FirstFitPlacer}


def test_jobs_larger_than_the_pod_are_dropped_and_counted() -> None:
    """A 64-IPU job on a 16-IPU pod is left out of every replay and reported as dropped."""
    jobs = trace((0, 10, 4), (1, 10, 64), (2, 10, 16))
    result = compare(jobs, 16, placers=REFERENCES)
    assert [job.index for job in result.dropped] == [1]
    report = result.as_dict()
    assert (report["jobs"], report["replayed"], report["dropped"]) == (3, 2, 1)
    assert set(result.replays[BOUND].starts) == {0, 2}


def test_a_trace_with_nothing_that_fits_is_refused() -> None:
    """When every job is larger than the pod there is nothing to compare."""
    with pytest.raises(InvalidSpec, match="none of the 1 jobs fits a pod of 16 IPUs"):
        compare(trace((0, 1, 64)), 16, placers=REFERENCES)


def test_report_has_every_placer_and_the_ratios_to_the_bound() -> None:
    """The JSON report holds each placer's figures and its mean wait over the bound's."""
    jobs = trace((0, 10, 4), (0, 30, 4), (0, 30, 4), (0, 10, 4), (1, 5, 8), (2, 3, 1))
    report = compare(jobs, 16, Policy.FIFO, placers=REFERENCES).as_dict()
    assert report["policy"] == "fifo"
    assert report["ipus"] == 16
    first_fit = report[FIRST_FIT]
    assert isinstance(first_fit, dict)
    assert first_fit["mean_wait_s"] == pytest.approx(57 / 6)
    assert first_fit["fragmentation_blocked"] == 1
    assert first_fit["by_size"]["8"] == {
        "jobs": 1,
        "mean_wait_s": 29,
        "max_wait_s": 29,
        "waited": 1,
        "fragmentation_blocked": 1,
    }
    assert report["mean_wait_over_bound"] == {FIRST_FIT: pytest.approx(57 / 22)}


def test_progress_counts_jobs_over_all_replays() -> None:
    """The progress callback ends at the number of replayed jobs times the placers."""
    seen: list[int] = []
    jobs = trace(*[(i, 5, 1) for i in range(100)])
    compare(jobs, 16, progress=seen.append, placers=REFERENCES)
    assert seen == sorted(seen)
    assert seen[-1] == 200


def _summary(mean_wait_s: float) -> Summary:
    return Summary(
        jobs=1,
        utilization=0.5,
        mean_wait_s=mean_wait_s,
        p99_wait_s=mean_wait_s,
        makespan_s=1.0,
        fragmentation_blocked=0,
        max_queue=0,
        fragmented_s=0.0,
        by_size=(),
    )


@pytest.mark.parametrize(
    ("numerator", "denominator", "ratio"), [(10.0, 5.0, 2.0), (0.0, 0.0, 1.0), (3.0, 0.0, None)]
)
def test_mean_wait_ratio(numerator: float, denominator: float, ratio: float | None) -> None:
    """Equal zero waits compare as 1; a wait over a zero bound has no finite ratio."""
    assert mean_wait_ratio(_summary(numerator), _summary(denominator)) == ratio


@pytest.mark.parametrize(
    ("values", "fraction", "expected"),
    [
        ([5.0], 0.99, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.0),
        (list(map(float, range(200))), 0.99, 197.0),
    ],
)
def test_percentile_by_nearest_rank(values: list[float], fraction: float, expected: float) -> None:
    """The p-th percentile is the ceil(p·n)-th smallest value."""
    assert percentile_nearest_rank(values, fraction) == expected


def test_window_averages_weigh_each_value_by_how_long_it_held() -> None:
    """A step function 4 on [0, 5), 0 on [5, 15), 8 on [15, 20] averages per window of 10."""
    assert window_averages([0, 5, 15], [4, 0, 8], 0, 20, 2) == [2.0, 4.0]
    assert window_averages([0, 5, 15], [4, 0, 8], 0, 20, 1) == [3.0]


def test_engine_with_the_first_fit_policy_replays_like_first_fit(real_trace: Path) -> None:
    """Two independent first-fit implementations (the engine's baseline policy and the
    simulator's bit masks) start every job of a real trace slice at the same time."""
    jobs = read_trace(real_trace)[:1500]
    pod = pod_for_ipus(64)
    for policy in Policy:
        ours = replay(jobs, FirstFitPlacer(pod), 64, policy)
        theirs = replay(jobs, EnginePlacer(pod, ENGINE_FIRST_FIT), 64, policy)
        assert ours.starts == theirs.starts
