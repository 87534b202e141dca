"""A controller restart in the middle of a task: the task carries on and ends where it should.

The compute driver stops the task at a gate (creating the server, shelving
it); the controller is then stopped, which interrupts the task as a restart
would, and started again on the same data directory with the same agents.
The new runner finds the task RUNNING and runs it again; every step checks
what exists first, so nothing is done twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vpod.cloud.drivers import Layout, LocalCompute
from vpod.cloud.server_setup import refresh_endpoints
from vpod.controller.caller import SYSTEM

from .conftest import in_shell, ok, partition_ids, run_task
from .gates import GatedCompute
from .live import LiveCloud, start_cloud, stop_cloud


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveCloud, GatedCompute]]:
    data_dir: Path = tmp_path_factory.mktemp("restart")
    compute = GatedCompute(LocalCompute(Layout(data_dir / "cloud")))
    live = start_cloud(data_dir, compute=compute)
    try:
        yield live, compute
    finally:
        stop_cloud(live)


def allocations(live: LiveCloud) -> list[str]:
    controller = live.running.controller
    return [a.id for a in live.run(controller.inventory.list_allocations())]


def test_a_creation_interrupted_by_a_restart_finishes_afterwards(
    gated: tuple[LiveCloud, GatedCompute],
) -> None:
    """Stopped in POPLAR_SERVERS; after the restart the task FINISHES, with one allocation,
    and the server's vipu works with a key issued after the restart."""
    live, compute = gated
    gate = compute.hold("create_server")
    with live.client(live.project("patient")) as http:
        task = ok(
            http.post("/clusters", json={"name": "phoenix", "flavor": "g2a-ai-fast-v1pod-8"}), 202
        )
        gate.wait_entered()
        assert ok(http.get(f"/tasks/{task['id']}"))["detailed_state"] == "POPLAR_SERVERS"
        held = allocations(live)

    live.restart()

    with live.client(live.project("patient")) as http:
        done = live.wait(task["id"])
        assert done["state"] == "FINISHED", done
        phases = [p["phase"] for p in done["phases"]]
        assert phases[-3:] == ["POPLAR_SERVERS", "POST_DEPLOY_SETUP", "FINISHED"]
        cluster = ok(http.get("/clusters/phoenix"))
        assert cluster["status"] == "ACTIVE"
        assert allocations(live) == held
        assert cluster["vipu"]["allocation_id"] in held
        made = in_shell(
            http, "phoenix", "vipu create partition after --size 8 && vipu list partitions"
        )
        assert made.returncode == 0, made.stderr
        assert partition_ids(made.stdout) == ["after"]


def test_after_a_restart_on_another_port_servers_are_told_the_new_endpoint(
    gated: tuple[LiveCloud, GatedCompute],
) -> None:
    """The user API moved (port 0 picks a new one): the endpoint refresh rewrites vipu-cli.hcl
    and the environment, keeping the key, and vipu works again."""
    live = gated[0]
    old_port = live.user_port
    live.restart()
    assert live.user_port != old_port
    live.run(refresh_endpoints(live.cloud.ctx))
    with live.client(live.project("patient")) as http:
        listed = in_shell(http, "phoenix", "echo $IPUOF_VIPU_API_PORT; vipu list partitions")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.split()[0] == str(live.user_port)
        assert partition_ids(listed.stdout) == ["after"]


def test_a_suspension_interrupted_by_a_restart_finishes_and_resume_brings_partitions_back(
    gated: tuple[LiveCloud, GatedCompute],
) -> None:
    """Stopped while shelving (partitions saved and removed, allocation gone); after the restart
    the cluster is SUSPENDED with its partition saved once; resume re-creates it."""
    live, compute = gated
    with live.client(live.project("sleepy")) as http:
        created = run_task(
            live, http, "POST", "/clusters", json={"name": "dozer", "flavor": "g2a-ai-fast-v1pod-4"}
        )
        assert created["state"] == "FINISHED"
        assert in_shell(http, "dozer", "vipu create partition nap --size 4").returncode == 0
        allocation_id = ok(http.get("/clusters/dozer"))["vipu"]["allocation_id"]
        gate = compute.hold("shelve")
        task = ok(http.post("/clusters/dozer/suspend"), 202)
        gate.wait_entered()
        assert allocation_id not in allocations(live)

    live.restart()

    with live.client(live.project("sleepy")) as http:
        assert live.wait(task["id"])["state"] == "FINISHED"
        cluster = ok(http.get("/clusters/dozer"))
        assert (cluster["status"], cluster["saved_partitions"]) == ("SUSPENDED", ["nap"])
        assert cluster["servers"][0]["status"] == "SHELVED_OFFLOADED"
        assert run_task(live, http, "POST", "/clusters/dozer/resume")["state"] == "FINISHED"
        controller = live.running.controller
        [record] = live.run(
            controller.partitions.list_partitions(SYSTEM, allocation_id=allocation_id)
        )
        assert (record.id, record.spec.size) == ("nap", 4)
        listed = in_shell(http, "dozer", "vipu list partitions")
        assert partition_ids(listed.stdout) == ["nap"]
