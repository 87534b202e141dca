"""Two ``vipu-server`` processes on one PostgreSQL: both serve, one leads, the other takes over.

Requests go to either controller; the background work (heartbeats,
auto-reset, recovery) runs only on the holder of the ``leader`` lease, a row
in the store. Which controller leads is read from that row (each names itself
``host:pid``) and cross-checked by behaviour: a dead agent is noticed once,
not once per controller. SIGKILL the leader and the other must take the lease
once it expires (3 s) and carry on with the background work.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import partial

import grpc
import pytest

from vpod.store import Store
from vpod.wire import admin_pb2 as apb
from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb

from .live import (
    ControllerProcess,
    LivePod,
    UserClient,
    agent_states,
    audit_count,
    build_pod,
    clear_all,
    inject,
    locations,
    rpc_code,
    wait_until,
)

LEASE_TTL_S = 3.0
HEARTBEAT_ROUND_S = 1.0
FAILOVER_BOUND_S = LEASE_TTL_S + 3 * HEARTBEAT_ROUND_S
"""The lease runs out, the next attempt takes it, plus a spare round for a loaded machine."""
DETECTION_BOUND_S = 3.0 + 3 * HEARTBEAT_ROUND_S

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def duo(tmp_path_factory: pytest.TempPathFactory, postgres_server: object) -> Iterator[LivePod]:
    from tests.pg import PostgresServer

    assert isinstance(postgres_server, PostgresServer)
    name = postgres_server.create_database()
    pod = build_pod(
        tmp_path_factory.mktemp("duo"),
        postgres_server.url(name),
        machines=4,
        agents_per_process=2,
        controllers=2,
    )
    try:
        yield pod
    finally:
        pod.close()
        postgres_server.drop_database(name)


def leader_of(pod: LivePod) -> str:
    with Store.open(pod.database_url) as store:
        lease = store.get_lease("leader")
    return lease.holder if lease is not None else ""


def _controller(pod: LivePod, replica_id: str) -> ControllerProcess:
    (found,) = [c for c in pod.controllers if c.alive() and c.replica_id == replica_id]
    return found


def _clients(pod: LivePod) -> list[UserClient]:
    return [c.user() for c in pod.controllers]


def test_both_controllers_serve_the_same_partitions(duo: LivePod) -> None:
    """A partition created through one controller is listed, configured and removable through
    the other; an id taken on one is taken on the other."""
    first, second = _clients(duo)
    first.create("shared", 4)
    assert "shared" in second.ids()
    assert second.status("shared").ready_state == pb.PS_ACTIVE
    assert len([d for g in second.config("shared").gcd_configs for d in g.devices]) == 4
    code, _ = rpc_code(lambda: second.create("shared", 8))
    assert code == grpc.StatusCode.ALREADY_EXISTS
    second.remove("shared")
    assert "shared" not in first.ids()


def test_exactly_one_controller_leads(duo: LivePod) -> None:
    """The lease names one of the two live controllers; only that one says it leads in its
    log; a dead agent is declared unreachable once (by the leader), not once per controller."""
    wait_until(lambda: bool(leader_of(duo)), "someone holds the lease")
    holder = leader_of(duo)
    assert holder in {c.replica_id for c in duo.controllers}
    leading = [c for c in duo.controllers if f"{c.replica_id} is now the leader" in c.log()]
    assert [c.replica_id for c in leading] == [holder]

    admin = duo.controller.admin()
    victim = duo.agents[1]
    agent_id = victim.ids[0]
    before = audit_count(duo.database_url, "agent_unreachable", agent_id)
    victim.kill()
    try:
        wait_until(
            lambda: audit_count(duo.database_url, "agent_unreachable", agent_id) > before,
            f"{agent_id} declared unreachable",
            30,
        )
        # Give a second heartbeat monitor, if there were one, every chance to do the same.
        time.sleep(3 * HEARTBEAT_ROUND_S)
        assert audit_count(duo.database_url, "agent_unreachable", agent_id) == before + 1
    finally:
        victim.restart(duo.controller.admin_address)
    wait_until(
        lambda: all(a.state == apb.AGENT_ONLINE for a in agent_states(admin).values()),
        "every agent online again",
    )


def test_follower_places_around_faulty_ipus(duo: LivePod) -> None:
    """With one IPU faulty, filling the pod with 1-IPU partitions through the controller that
    does not lead gives 15 partitions and then RESOURCE_EXHAUSTED, never a failed create."""
    holder = leader_of(duo)
    leader = _controller(duo, holder)
    follower = next(c for c in duo.controllers if c is not leader)
    admin = leader.admin()
    user = follower.user()
    user.create("probe", 1)
    agent_id, device = locations(admin, "probe")[0]
    user.remove("probe")
    inject(admin, agent_id, agpb.Fault(kind=agpb.FAULT_IPU, device_id=device))
    wait_until(lambda: bool(agent_states(admin)[agent_id].faults), "the leader saw the fault")
    try:
        outcomes = [rpc_code(partial(user.create, f"one{n}", 1))[0] for n in range(16)]
    finally:
        user.remove_all()
        clear_all(admin, agent_id)
    assert outcomes == [grpc.StatusCode.OK] * 15 + [grpc.StatusCode.RESOURCE_EXHAUSTED]


def test_killing_the_leader_hands_the_lease_over(duo: LivePod) -> None:
    """SIGKILL the leader: the other controller holds the lease within the bound and does the
    leader's work (a partition on an agent killed afterwards goes to ERROR); the killed
    controller, restarted, serves requests as a follower."""
    holder = leader_of(duo)
    leader = _controller(duo, holder)
    other = next(c for c in duo.controllers if c is not leader)
    user = other.user()
    user.create("watched", 8)
    watched_agents = {a for a, _ in locations(other.admin(), "watched")}
    victim = next(p for p in duo.agents if watched_agents <= set(p.ids))

    killed_at = time.monotonic()
    leader.kill()
    wait_until(lambda: leader_of(duo) == other.replica_id, "the other controller leads", 30)
    failover_s = time.monotonic() - killed_at
    assert failover_s <= FAILOVER_BOUND_S, f"failover took {failover_s:.1f} s"

    victim.kill()
    try:
        wait_until(
            lambda: user.status("watched").ready_state == pb.PS_ERROR,
            "the new leader noticed the dead agent",
            DETECTION_BOUND_S,
        )
    finally:
        victim.restart(other.admin_address)
    wait_until(lambda: user.status("watched").ready_state == pb.PS_ACTIVE, "auto-reset", 30)

    leader.restart()
    assert leader_of(duo) == other.replica_id
    assert "watched" in leader.user().ids()
    leader.user().remove("watched")
    print(f"two controllers: failover {failover_s:.1f} s")
