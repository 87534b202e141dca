"""PostgreSQL stops and starts again: the controller says so, then carries on.

A private PostgreSQL server (see :mod:`.restartable_pg`) is stopped with
``pg_ctl -m fast``, kept down for a few heartbeat rounds and started again,
while the controller keeps running. While it is down every call must fail
fast with UNAVAILABLE and a sentence naming the database (never INTERNAL or
UNKNOWN, never a hang); afterwards the same controller must serve again, and
its leader's background work (heartbeats, recovery, reconciliation) must
resume: operations cut short are finished or rolled back and the store and
the agents agree.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import grpc
import pytest

from vpod.wire import admin_pb2 as apb
from vpod.wire import virmgrpc_pb2 as pb

from .consistency import disagreements, read_store
from .live import LivePod, UserClient, agent_states, build_pod, rpc_code, wait_until
from .restartable_pg import RestartablePostgres, restartable_postgres
from .workload import Workload

OPTIONS = ("--operation-deadline", "2", "--recovery-interval", "1")
HEARTBEAT_ROUND_S = 1.0
DETECTION_BOUND_S = 3.0 + 3 * HEARTBEAT_ROUND_S
ANSWERS_WHILE_DOWN = {
    grpc.StatusCode.OK.name,
    grpc.StatusCode.UNAVAILABLE.name,
    grpc.StatusCode.RESOURCE_EXHAUSTED.name,
    grpc.StatusCode.FAILED_PRECONDITION.name,
    grpc.StatusCode.NOT_FOUND.name,  # removing a partition whose create was cut short
}

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def pg_pod(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LivePod, RestartablePostgres]]:
    with restartable_postgres() as (server, url):
        pod = build_pod(
            tmp_path_factory.mktemp("pgpod"),
            url,
            machines=4,
            agents_per_process=2,
            controller_options=OPTIONS,
        )
        try:
            yield pod, server
        finally:
            pod.close()


def _database_down_answer(client: UserClient) -> bool:
    code, message = rpc_code(lambda: client.create("while-down", 1, timeout=20))
    return code == grpc.StatusCode.UNAVAILABLE and "database" in message


def _outage(server: RestartablePostgres, probe: UserClient) -> None:
    """Stop the database, see the controller say so, keep it down for a few rounds, start it."""
    server.stop()
    try:
        wait_until(lambda: _database_down_answer(probe), "UNAVAILABLE naming the database", 30)
        time.sleep(3 * HEARTBEAT_ROUND_S)  # the leader's lease renewals fail meanwhile
    finally:
        server.start()
    wait_until(lambda: rpc_code(probe.ids)[0] == grpc.StatusCode.OK, "serving again")


def test_database_outage_under_load_answers_unavailable_then_serves_again(
    pg_pod: tuple[LivePod, RestartablePostgres],
) -> None:
    """While PostgreSQL is down under load, calls fail UNAVAILABLE with a sentence about the
    database (no INTERNAL, no UNKNOWN); once it is back the same controller serves creates
    again, and no create or remove it answered OK is undone."""
    pod, server = pg_pod
    probe = pod.controller.user()
    workload = Workload([pod.controller.user()], sizes=(1, 2, 4), prefix="pg", seed=3, keep=2)
    stop = threading.Event()
    load = threading.Thread(target=workload.run, args=(3, 100_000, stop), daemon=True)
    load.start()
    try:
        wait_until(lambda: workload.ledger.ops >= 20, "load under way")
        _outage(server, probe)
        code, message = rpc_code(probe.ids)
        assert code == grpc.StatusCode.OK, message
        after = workload.ledger.count("create", grpc.StatusCode.OK)
        wait_until(
            lambda: workload.ledger.count("create", grpc.StatusCode.OK) > after + 5,
            "creates succeed again",
            30,
        )
    finally:
        stop.set()
        load.join(timeout=60)
    assert not load.is_alive()
    ledger = workload.ledger
    assert ledger.count("create", grpc.StatusCode.UNAVAILABLE) > 0
    assert {code for _, code in ledger.codes} <= ANSWERS_WHILE_DOWN, ledger.messages
    unavailable = ledger.messages[("create", "UNAVAILABLE")]
    assert "database is unavailable" in unavailable, unavailable
    assert "retry" in unavailable, unavailable
    assert not ledger.lost_or_invented(read_store(pod.database_url).records, "pg")
    print(f"postgres outage: {ledger.table()}")


def test_background_work_resumes_after_a_database_outage(
    pg_pod: tuple[LivePod, RestartablePostgres],
) -> None:
    """After PostgreSQL comes back, the leader works again: an agent killed afterwards is
    marked unreachable within the bound and its partition goes to ERROR; operations cut
    short by the outage are finished, and the store and the agents agree."""
    pod, server = pg_pod
    probe = pod.controller.user()
    admin = pod.controller.admin()
    probe.remove_all()
    _outage(server, probe)
    probe.create("after-outage", 8)
    victim = pod.agents[0]
    addresses = {a: pod.address(a) for a in pod.agent_ids}
    victim.kill()
    try:
        wait_until(
            lambda: all(agent_states(admin)[a].state == apb.AGENT_OFFLINE for a in victim.ids),
            "the killed agents marked offline",
            DETECTION_BOUND_S,
        )
    finally:
        victim.restart(pod.controller.admin_address)
    wait_until(
        lambda: probe.status("after-outage").ready_state == pb.PS_ACTIVE,
        "partition back to ACTIVE",
        30,
    )
    wait_until(lambda: not disagreements(pod.database_url, addresses), "store and agents agree")
