"""``--wait`` times each phase by the controller's timestamps, not by when it polled.

A task that ran through all its phases between two polls (or before the first)
is the case where times taken at print time all come out the same.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from vpod.cli.cloud_output import phase_durations, total_seconds
from vpod.client import Phase, Task, TaskState

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _task(steps: list[tuple[str, float]], state: TaskState, *, finished: bool) -> Task:
    phases = tuple(Phase(name, T0 + timedelta(seconds=at)) for name, at in steps)
    last = phases[-1].at
    return Task(
        id="t1",
        project_id="p",
        operation="create",
        resource_type="cluster",
        resource_id="c1",
        resource_name="c1",
        state=state,
        detailed_state=phases[-1].phase,
        phases=phases,
        expected_phases=(),
        created_at=T0 - timedelta(seconds=0.5),
        updated_at=last + timedelta(seconds=2),
        finished_at=last if finished else None,
    )


def test_each_phase_gets_its_own_time_and_the_total_runs_from_creation_to_the_end() -> None:
    task = _task(
        [("NETWORK", 0.0), ("VIPU_CONTROLLER", 1.25), ("IPU_SERVERS", 4.0), ("FINISHED", 4.5)],
        TaskState.FINISHED,
        finished=True,
    )
    assert phase_durations(task) == [
        ("NETWORK", 1.25),
        ("VIPU_CONTROLLER", 2.75),
        ("IPU_SERVERS", 0.5),
    ]
    assert total_seconds(task) == 5.0


def test_a_running_tasks_current_phase_runs_to_its_last_update() -> None:
    task = _task([("NETWORK", 0.0), ("IPU_SERVERS", 3.0)], TaskState.RUNNING, finished=False)
    assert phase_durations(task) == [("NETWORK", 3.0), ("IPU_SERVERS", 2.0)]
    assert total_seconds(task) == 5.5


def test_a_failed_task_ends_at_its_error() -> None:
    task = _task(
        [("NETWORK", 0.0), ("RETRY", 1.0), ("NETWORK", 3.0), ("ERROR", 3.5)],
        TaskState.ERROR,
        finished=False,
    )
    assert phase_durations(task) == [("NETWORK", 1.0), ("RETRY", 2.0), ("NETWORK", 0.5)]
    assert total_seconds(task) == 4.0


def test_a_task_that_has_not_started_has_no_phase_times_yet() -> None:
    task = _task([("FINISHED", 0.0)], TaskState.NEW, finished=False)
    assert phase_durations(dataclasses.replace(task, phases=())) == []
    assert phase_durations(task) == []
