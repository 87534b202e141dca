"""SIGKILL the controller in the middle of creates and removes; after a restart nothing is lost.

Worker threads create and remove partitions of random sizes; at a random
moment the controller is killed (no clean-up of any kind), then restarted on
the same PostgreSQL database. The restarted controller must take the leader
lease once the dead one's expires, finish or roll back every operation the
dead one left (``--operation-deadline 2`` makes them count as abandoned after
2 s instead of 30) and reconcile the agents (``--recovery-interval 1``).
Then the store and the agents, each read directly, must agree, and every
answer the clients got must still hold (see :mod:`.workload`).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import grpc
import pytest

from vpod.wire import agent_pb2 as agpb

from .consistency import disagreements, read_store
from .live import LivePod, agent_fault, audit_actions, build_pod, wait_until
from .workload import Workload

ROUNDS = 3
RECOVERY_WITHIN_S = 45.0
OPTIONS = ("--operation-deadline", "2", "--recovery-interval", "1", "--agent-timeout", "2")

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def crash_pod(tmp_path: Path, postgres_url: str) -> Iterator[LivePod]:
    pod = build_pod(
        tmp_path, postgres_url, machines=8, agents_per_process=4, controller_options=OPTIONS
    )
    try:
        yield pod
    finally:
        pod.close()


def _addresses(pod: LivePod) -> dict[str, str]:
    return {a: pod.address(a) for a in pod.agent_ids}


def _agree(pod: LivePod) -> bool:
    return not disagreements(pod.database_url, _addresses(pod))


def _ops_beyond(workload: Workload, count: int) -> bool:
    return workload.ledger.ops >= count


def _operation_in_flight(pod: LivePod) -> bool:
    return any(r.state.busy for r in read_store(pod.database_url).records.values())


def test_controller_killed_mid_operations_recovers_without_losing_anything(
    crash_pod: LivePod,
) -> None:
    """Several rounds of: load, SIGKILL, restart. In even rounds one agent answers 400 ms late
    and the kill comes while the store shows an operation in flight; in odd rounds it comes at
    a random moment. After each restart, no partition is stuck CREATING/REMOVING, every ACTIVE
    one is configured on exactly its agents, agents hold nothing the store does not know, and
    no answered create or remove is undone; abandoned operations were finished or rolled back."""
    pod = crash_pod
    controller = pod.controller
    slow_agent = pod.address(pod.agent_ids[0])
    workload = Workload(
        [controller.user()],
        sizes=(1, 2, 4, 8),
        prefix="crash",
        seed=7,
        keep=3,
        stop_on_unknown=True,
    )
    rng = random.Random(11)
    for round_no in range(ROUNDS):
        in_flight_kill = round_no % 2 == 0
        if in_flight_kill:
            agent_fault(slow_agent, agpb.Fault(kind=agpb.FAULT_AGENT_SLOW, delay_ms=400))
        stop = threading.Event()
        load = threading.Thread(target=workload.run, args=(4, 10_000, stop), daemon=True)
        before = workload.ledger.ops
        load.start()
        wait_until(partial(_ops_beyond, workload, before + 8), "load under way")
        if in_flight_kill:
            wait_until(lambda: _operation_in_flight(pod), "an operation in flight", 30)
        else:
            time.sleep(rng.uniform(0.0, 1.0))
        controller.kill()
        stop.set()
        load.join(timeout=60)
        assert not load.is_alive(), "the workers did not stop after the controller died"
        agent_fault(slow_agent, None)

        controller.restart()
        # A new channel: the old one's connections are gone with the old process.
        workload.clients = [controller.user()]
        wait_until(
            lambda: _agree(pod),
            f"store and agents agree after restart {round_no}",
            RECOVERY_WITHIN_S,
        )
        view = read_store(pod.database_url)
        problems = workload.ledger.lost_or_invented(view.records, "crash")
        assert not problems, problems
        workload.ledger.settle(view.records, "crash")
        workload.forget_unknown(view.records)
        assert all(r.state.label == "ACTIVE" for r in view.records.values()), {
            r.id: r.state.label for r in view.records.values()
        }

    ledger = workload.ledger
    assert ledger.count("create", grpc.StatusCode.OK) > 0
    assert ledger.count("remove", grpc.StatusCode.OK) > 0
    recovered = audit_actions(pod.database_url, "recover_partition")
    assert recovered > 0
    print(f"controller crash: {ROUNDS} kills; {ledger.table()}; {recovered} abandoned finished")
    # The controller still serves normally after all that: everything left can be removed.
    client = workload.clients[0]
    for pid in sorted(read_store(pod.database_url).records):
        client.remove(pid)
    assert not read_store(pod.database_url).records
    assert _agree(pod), disagreements(pod.database_url, _addresses(pod))
