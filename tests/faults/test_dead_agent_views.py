"""A dead agent does not hide what the controller knows.

Two ``vipu-server`` processes on one PostgreSQL and four one-machine agent
processes. A partition is created through the first controller, which
records the IPUoF details its agents reported. Then its agent stops
answering management calls (slower than the agent timeout; its heartbeats
still answer, so the partition stays ACTIVE), and the second controller,
which never asked that agent anything, must still serve the partition's
IPUoF configuration, identical to the one read before, from the record.
Killed outright, the agent is named in the partition's status on both
controllers (GetPartitionStatus, what ``vipu get partition`` shows), with the reason,
and once the partition is ERROR for that silence its configuration is still served.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vpod.wire import admin_pb2 as apb
from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb

from .live import LivePod, agent_fault, agent_states, build_pod, locations, wait_until

OPTIONS = ("--agent-timeout", "2")
SILENT_MS = 6000
"""Management calls answered after this: three agent timeouts."""
RECORDED = "the IPUoF configuration is served from what the controller recorded"

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def duo(tmp_path_factory: pytest.TempPathFactory, postgres_server: object) -> Iterator[LivePod]:
    from tests.pg import PostgresServer

    assert isinstance(postgres_server, PostgresServer)
    name = postgres_server.create_database()
    pod = build_pod(
        tmp_path_factory.mktemp("views"),
        postgres_server.url(name),
        machines=4,
        agents_per_process=1,
        controllers=2,
        controller_options=OPTIONS,
    )
    try:
        yield pod
    finally:
        pod.close()
        postgres_server.drop_database(name)


def test_a_silent_agents_partition_config_is_served_from_the_record(duo: LivePod) -> None:
    first, second = (c.user() for c in duo.controllers)
    first.create("recorded", 4)
    before = first.config("recorded")
    (agent_id,) = {agent for agent, _ in locations(duo.controllers[0].admin(), "recorded")}
    agent_fault(duo.address(agent_id), agpb.Fault(kind=agpb.FAULT_AGENT_SLOW, delay_ms=SILENT_MS))
    try:
        served = second.config("recorded")
        assert second.status("recorded").ready_state == pb.PS_ACTIVE
    finally:
        agent_fault(duo.address(agent_id), None)
    assert served == before
    first.remove("recorded")


def test_a_dead_agent_is_named_in_its_partitions_status(duo: LivePod) -> None:
    first, second = (c.user() for c in duo.controllers)
    first.create("orphan-view", 4)
    before = first.config("orphan-view")
    (agent_id,) = {agent for agent, _ in locations(duo.controllers[0].admin(), "orphan-view")}
    process = duo.agent_process(agent_id)
    process.kill()
    try:
        wait_until(lambda: _offline(duo, agent_id), f"{agent_id} seen unreachable")
        # the leader marks the agent, then faults its partitions: a moment apart
        wait_until(
            lambda: first.status("orphan-view").ready_state == pb.PS_ERROR, "orphan-view in ERROR"
        )
        for client in (first, second):
            status = client.status("orphan-view")
            errors = list(status.errors)
            named = [e for e in errors if e.startswith(f"agent {agent_id} is unreachable")]
            assert named, errors
            assert RECORDED in named[0]
            # ERROR for the silence, and still served, as the status line says
            assert status.ready_state == pb.PS_ERROR
            assert client.config("orphan-view") == before
    finally:
        process.restart(duo.controllers[0].admin_address)
    wait_until(lambda: not _offline(duo, agent_id), f"{agent_id} back")
    first.remove("orphan-view", force=True)


def _offline(pod: LivePod, agent_id: str) -> bool:
    return bool(agent_states(pod.controllers[0].admin())[agent_id].state == apb.AGENT_OFFLINE)
