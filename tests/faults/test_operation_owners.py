"""Only a dead owner's operation is rolled back: a live controller's slow create is its own.

Two ``vipu-server`` processes on one PostgreSQL, the recovery settings short
(``--operation-deadline 2 --recovery-interval 1``) and every agent made slow
(each configure takes longer than the deadline, well inside the agent
timeout). A create sent to the controller that does not lead runs longer
than the deadline while the leader looks for abandoned operations every
second. The leader must leave it alone (its owner's lease is alive): the
create ends ACTIVE, and the store and every agent agree. Then the same
create is cut short by SIGKILL of its controller: once that controller's
owner lease expires (``--owner-lease-ttl 2``), the leader rolls it back, and
again the store and the agents agree.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest

from vpod.store import Store
from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb

from .consistency import disagreements, read_store
from .live import (
    ControllerProcess,
    LivePod,
    agent_fault,
    audit_count,
    build_pod,
    wait_until,
)

SLOW_MS = 4000
"""Each configure and release on every agent: twice the operation deadline."""
OPTIONS = (
    "--operation-deadline", "2",
    "--recovery-interval", "1",
    "--owner-lease-ttl", "2",
    "--agent-timeout", "10",
)  # fmt: skip
RECOVERY_WITHIN_S = 60.0

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def duo(tmp_path_factory: pytest.TempPathFactory, postgres_server: object) -> Iterator[LivePod]:
    from tests.pg import PostgresServer

    assert isinstance(postgres_server, PostgresServer)
    name = postgres_server.create_database()
    pod = build_pod(
        tmp_path_factory.mktemp("owners"),
        postgres_server.url(name),
        machines=4,
        agents_per_process=4,
        controllers=2,
        controller_options=OPTIONS,
    )
    try:
        yield pod
    finally:
        for agent_id in pod.agent_ids:
            agent_fault(pod.address(agent_id), None)
        pod.close()
        postgres_server.drop_database(name)


def _follower(pod: LivePod) -> ControllerProcess:
    """The controller that does not hold the leader lease (after one of them took it)."""

    def leader() -> str:
        with Store.open(pod.database_url) as store:
            lease = store.get_lease("leader")
        return lease.holder if lease is not None else ""

    wait_until(lambda: leader() in {c.replica_id for c in pod.controllers}, "a leader")
    (follower,) = [c for c in pod.controllers if c.replica_id != leader()]
    return follower


def _slow_agents(pod: LivePod, slow: bool) -> None:
    fault = agpb.Fault(kind=agpb.FAULT_AGENT_SLOW, delay_ms=SLOW_MS) if slow else None
    for agent_id in pod.agent_ids:
        agent_fault(pod.address(agent_id), fault)


def _addresses(pod: LivePod) -> dict[str, str]:
    return {a: pod.address(a) for a in pod.agent_ids}


def test_a_live_controllers_slow_create_is_not_rolled_back(duo: LivePod) -> None:
    follower = _follower(duo)
    client = follower.user()
    _slow_agents(duo, True)
    try:
        started = time.monotonic()
        created = client.create("slow-owned", 16, timeout=60)
        took = time.monotonic() - started
        # A recovery the leader began while the create ran needs its own slow release
        # calls to land: give it that long, and a few recovery rounds, before looking.
        time.sleep(SLOW_MS / 1000 + 3)
    finally:
        _slow_agents(duo, False)
    assert created == "slow-owned"
    assert took > 2.0  # longer than --operation-deadline: the race was on
    status = client.status("slow-owned")
    assert (status.ready_state, status.operation_state) == (pb.PS_ACTIVE, pb.POS_IDLE)
    assert audit_count(duo.database_url, "recover_partition", "slow-owned") == 0
    assert disagreements(duo.database_url, _addresses(duo)) == []
    record = read_store(duo.database_url).records["slow-owned"]
    assert record.operation_owner is None  # idle: nobody owns an operation on it
    client.remove("slow-owned")
    assert disagreements(duo.database_url, _addresses(duo)) == []


def test_a_dead_controllers_create_is_rolled_back_once_its_lease_expires(duo: LivePod) -> None:
    follower = _follower(duo)
    client = follower.user()
    _slow_agents(duo, True)
    try:
        future = client.users.CreatePartition.future(
            pb.CreatePartitionRequest(
                requirements=pb.PartitionRequirements(id="orphaned", size=16)
            ),
            timeout=60,
        )

        def in_flight() -> bool:
            record = read_store(duo.database_url).records.get("orphaned")
            return record is not None and record.state.busy

        wait_until(in_flight, "the create under way")
        owner = read_store(duo.database_url).records["orphaned"].operation_owner
        assert owner is not None
        assert owner.startswith(follower.replica_id + "/")
        follower.kill()
        with pytest.raises(grpc.RpcError):
            future.result()
        wait_until(
            lambda: "orphaned" not in read_store(duo.database_url).records,
            "the dead controller's create rolled back",
            RECOVERY_WITHIN_S,
        )
    finally:
        _slow_agents(duo, False)
    assert audit_count(duo.database_url, "recover_partition", "orphaned") == 1
    wait_until(
        lambda: disagreements(duo.database_url, _addresses(duo)) == [],
        "store and agents agree",
        RECOVERY_WITHIN_S,
    )
    follower.restart()
