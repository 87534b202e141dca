"""Temporary failures are retried with backoff before a task rolls back; permanent ones are not.

A live cloud (secure controller, emulated Bow-2000s, real HTTP) whose compute
driver fails chosen calls, temporarily (``TemporaryDriverError``: the back end
may answer later) or for good (``DriverError``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vpod.cloud.drivers import Layout, LocalCompute

from .conftest import ok, run_task
from .gates import GatedCompute
from .live import LiveCloud, start_cloud, stop_cloud

VPOD4 = "g2a-ai-fast-v1pod-4"
ATTEMPTS = 3
"""The default ``task_attempts``."""


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveCloud, GatedCompute]]:
    data_dir: Path = tmp_path_factory.mktemp("retries")
    compute = GatedCompute(LocalCompute(Layout(data_dir / "cloud")))
    live = start_cloud(data_dir, compute=compute)
    try:
        yield live, compute
    finally:
        stop_cloud(live)


def _phases(task: dict[str, Any]) -> list[str]:
    return [p["phase"] for p in task["phases"]]


def _create(live: LiveCloud, project: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Create a vPOD-4 and return its task (ended) and the cluster as it is then."""
    with live.client(live.project(project)) as http:
        task = run_task(live, http, "POST", "/clusters", json={"name": name, "flavor": VPOD4})
        return task, ok(http.get(f"/clusters/{name}"))


def _allocation_of(live: LiveCloud, cluster: dict[str, Any]) -> Any:
    """The vPOD's V-IPU allocation as the controller knows it (None: there is none)."""
    assert live.running is not None
    tenancy = live.running.controller.tenancy
    return live.run(tenancy.find_allocation(f"vpod-{cluster['id']}"))


def _delete(live: LiveCloud, project: str, name: str) -> None:
    with live.client(live.project(project)) as http:
        assert run_task(live, http, "DELETE", f"/clusters/{name}")["state"] == "FINISHED"


def test_a_temporary_driver_failure_is_retried_and_the_task_succeeds(
    gated: tuple[LiveCloud, GatedCompute],
) -> None:
    """The first create_server fails temporarily: the task enters RETRY, runs again from the
    start and finishes; the cluster is ACTIVE with its server; the warning says what happened."""
    live, compute = gated
    before = compute.calls.get("create_server", 0)
    compute.fail_next("create_server", "the hypervisor is busy", temporary=True)
    task, cluster = _create(live, "patient", "second-try")
    assert (task["state"], task["error"]) == ("FINISHED", "")
    phases = _phases(task)
    assert phases.count("RETRY") == 1
    assert phases[phases.index("RETRY") + 1 :] == task["expected_phases"]
    assert compute.calls["create_server"] - before == 2
    assert task["warnings"] == [
        f"attempt 1 of {ATTEMPTS} failed (the hypervisor is busy); tried again after 0.05 s"
    ]
    assert cluster["status"] == "ACTIVE"
    assert [s["status"] for s in cluster["servers"]] == ["ACTIVE"]
    _delete(live, "patient", "second-try")


def test_a_permanent_driver_failure_rolls_back_at_once(
    gated: tuple[LiveCloud, GatedCompute],
) -> None:
    """A permanent failure is not retried: one call, no RETRY phase, the creation rolled back
    to an ERROR cluster holding nothing, with the driver's sentence."""
    live, compute = gated
    before = compute.calls.get("create_server", 0)
    compute.fail_next("create_server", "the image is corrupt")
    task, cluster = _create(live, "hopeless", "no-retry")
    assert (task["state"], task["error"]) == ("ERROR", "the image is corrupt")
    assert "RETRY" not in _phases(task)
    assert compute.calls["create_server"] - before == 1
    assert (cluster["status"], cluster["servers"]) == ("ERROR", [])
    assert _allocation_of(live, cluster) is None
    _delete(live, "hopeless", "no-retry")


def test_exhausted_retries_roll_back(gated: tuple[LiveCloud, GatedCompute]) -> None:
    """A failure that stays temporary is tried ``task_attempts`` times, with a RETRY phase
    between attempts, then rolled back like a permanent one."""
    live, compute = gated
    before = compute.calls.get("create_server", 0)
    compute.fail_next("create_server", "the hypervisor is unreachable", temporary=True, times=5)
    task, cluster = _create(live, "unlucky", "worn-out")
    assert (task["state"], task["error"]) == ("ERROR", "the hypervisor is unreachable")
    assert _phases(task).count("RETRY") == ATTEMPTS - 1
    assert compute.calls["create_server"] - before == ATTEMPTS
    assert [w.split(" failed")[0] for w in task["warnings"]] == [
        f"attempt {n} of {ATTEMPTS}" for n in range(1, ATTEMPTS)
    ]
    assert (cluster["status"], cluster["servers"]) == ("ERROR", [])
    assert _allocation_of(live, cluster) is None
    compute.fail_next("create_server", "", times=0)
    _delete(live, "unlucky", "worn-out")
