"""Agents that die, hang or turn slow under a live controller (real processes, real signals).

The controller's leader asks every agent for its health each second; an agent
silent for 3 s is unreachable: its machine leaves placement and partitions on
it go to ERROR with the reason in GetPartitionStatus.errors. When it answers
again it is reconciled (a restarted agent gets its configurations back) and
its partitions are reset automatically. The detection bound used below is
the setting plus a few heartbeat rounds of slack for a loaded machine; the
measured times are reported by ``benchmarks/failover.py``.
"""

from __future__ import annotations

import time

import grpc
import pytest

from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb

from .conftest import FaultPod
from .live import (
    agent_holdings,
    agent_states,
    audit_count,
    clear_all,
    inject,
    locations,
    rpc_code,
    wait_until,
)

UNREACHABLE_AFTER_S = 3.0
HEARTBEAT_ROUND_S = 1.0
DETECTION_BOUND_S = UNREACHABLE_AFTER_S + 3 * HEARTBEAT_ROUND_S
"""3 s of silence, plus the round that notices it, its 1 s call deadline and one spare round."""
RECOVERY_WITHIN_S = 30.0


def _machine_of(pod: FaultPod, pid: str) -> str:
    agents = {agent for agent, _ in locations(pod.admin, pid)}
    assert len(agents) == 1, f"{pid} was expected on one machine, is on {sorted(agents)}"
    return agents.pop()


def _fill_around_victim(pod: FaultPod) -> tuple[str, str]:
    """A 2-IPU victim, and every other machine filled, so only 2 IPUs of its machine are free.

    Returns (victim's agent, its agent process's name).
    """
    pod.user.create("victim", 2)
    victim_agent = _machine_of(pod, "victim")
    for n in range(3):
        pod.user.create(f"filler{n}", 4)
        assert _machine_of(pod, f"filler{n}") != victim_agent
    return victim_agent, pod.live.agent_process(victim_agent).name


def _state(pod: FaultPod, pid: str) -> int:
    return int(pod.user.status(pid).ready_state)


def test_killed_agent_is_unreachable_its_partition_fails_and_placement_avoids_it(
    pod: FaultPod,
) -> None:
    """SIGKILL one machine's agent: it is marked unreachable within the bound, the partition on
    it goes to ERROR naming the agent, others stay ACTIVE, and its free IPUs are no longer
    offered (a create that needs them is refused). Restarted, the agent is reachable again,
    the partition is configured on it again and auto-reset back to ACTIVE."""
    victim_agent, _ = _fill_around_victim(pod)
    proc = pod.live.agent_process(victim_agent)
    old_boot, _ = agent_holdings(pod.live.address(victim_agent))
    assert rpc_code(lambda: pod.user.create("probe", 2)) == (grpc.StatusCode.OK, "")
    pod.user.remove("probe")

    killed_at = time.monotonic()
    proc.kill()
    wait_until(lambda: pod.offline(victim_agent), f"{victim_agent} marked offline", 30)
    detected_s = time.monotonic() - killed_at
    assert detected_s <= DETECTION_BOUND_S, f"detection took {detected_s:.1f} s"

    status = pod.user.status("victim")
    wait_until(lambda: _state(pod, "victim") == pb.PS_ERROR, "victim in ERROR", 10)
    status = pod.user.status("victim")
    assert any(victim_agent in e and "not answered" in e for e in status.errors), status.errors
    assert all(_state(pod, f"filler{n}") == pb.PS_ACTIVE for n in range(3))

    code, message = rpc_code(lambda: pod.user.create("needs-dead-machine", 2))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, message
    assert "needs-dead-machine" in message
    assert "needs-dead-machine" not in pod.user.ids()

    proc.restart(pod.live.controller.admin_address)
    wait_until(lambda: pod.online(victim_agent), f"{victim_agent} online again", 30)
    new_boot, held = agent_holdings(pod.live.address(victim_agent))
    assert new_boot != old_boot
    wait_until(
        lambda: _state(pod, "victim") == pb.PS_ACTIVE, "victim auto-reset", RECOVERY_WITHIN_S
    )
    _, held = agent_holdings(pod.live.address(victim_agent))
    assert [h.partition_id for h in held] == ["victim"]
    status = pod.user.status("victim")
    assert status.operation_state == pb.POS_IDLE
    assert status.auto_reset_retry_count >= 1
    attempts = audit_count(pod.live.database_url, "auto_reset_partition", "victim")
    assert status.auto_reset_retry_count == attempts
    pod.user.create("needs-dead-machine", 2)
    assert _machine_of(pod, "needs-dead-machine") == victim_agent


def test_hung_agent_process_is_unreachable_then_recovers_with_its_state(pod: FaultPod) -> None:
    """SIGSTOP one agent process (it keeps its sockets but answers nothing): it is marked
    unreachable and its partition fails; after SIGCONT it is reachable again with the same
    boot and configuration, and the partition is auto-reset to ACTIVE."""
    victim_agent, _ = _fill_around_victim(pod)
    proc = pod.live.agent_process(victim_agent)
    boot, held_before = agent_holdings(pod.live.address(victim_agent))

    hung_at = time.monotonic()
    proc.hang()
    try:
        wait_until(lambda: pod.offline(victim_agent), f"{victim_agent} marked offline", 30)
        detected_s = time.monotonic() - hung_at
        assert detected_s <= DETECTION_BOUND_S, f"detection took {detected_s:.1f} s"
        wait_until(lambda: _state(pod, "victim") == pb.PS_ERROR, "victim in ERROR", 10)
        code, _ = rpc_code(lambda: pod.user.create("needs-hung-machine", 2))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        proc.resume()
    wait_until(lambda: pod.online(victim_agent), f"{victim_agent} online again", 30)
    wait_until(
        lambda: _state(pod, "victim") == pb.PS_ACTIVE, "victim auto-reset", RECOVERY_WITHIN_S
    )
    same_boot, held_after = agent_holdings(pod.live.address(victim_agent))
    assert same_boot == boot
    assert [h.partition_id for h in held_after] == [h.partition_id for h in held_before]
    assert pod.user.status("victim").auto_reset_retry_count == 1


def test_agent_that_registers_and_dies_again_is_unreachable_again(pod: FaultPod) -> None:
    """An agent in a crash loop (registers with a new boot id, dies before answering): it is
    marked unreachable again within the bound, its machine stays out of placement, and no
    auto-reset is spent on its partition while it cannot answer."""
    victim_agent, _ = _fill_around_victim(pod)
    proc = pod.live.agent_process(victim_agent)
    listed = agent_states(pod.admin)[victim_agent]
    proc.kill()
    wait_until(lambda: pod.offline(victim_agent), f"{victim_agent} marked offline", 30)
    wait_until(lambda: _state(pod, "victim") == pb.PS_ERROR, "victim in ERROR", 10)
    with grpc.insecure_channel(pod.live.controller.admin_address) as channel:
        apb_grpc.AgentRegistrationServiceStub(channel).RegisterAgent(
            apb.RegisterAgentRequest(
                agent_id=victim_agent,
                host=listed.host,
                port=listed.port,
                machine_type=listed.machine_type,
                serial=listed.serial,
                boot_id="a-boot-that-dies-at-once",
            ),
            timeout=30,
        )
    try:
        wait_until(
            lambda: pod.offline(victim_agent),
            f"{victim_agent} marked offline again",
            DETECTION_BOUND_S,
        )
        assert pod.user.status("victim").auto_reset_retry_count == 0
    finally:
        proc.restart(pod.live.controller.admin_address)


def test_agent_hang_fault_fails_partitions_until_cleared(pod: FaultPod) -> None:
    """The agent's own hang fault (management calls never answer) is an unreachable agent too;
    clearing it brings the machine and its partition back."""
    victim_agent, _ = _fill_around_victim(pod)
    inject(pod.admin, victim_agent, agpb.Fault(kind=agpb.FAULT_AGENT_HANG, reason="test"))
    wait_until(lambda: pod.offline(victim_agent), f"{victim_agent} marked offline", 30)
    wait_until(lambda: _state(pod, "victim") == pb.PS_ERROR, "victim in ERROR", 10)
    clear_all(pod.admin, victim_agent)
    wait_until(
        lambda: _state(pod, "victim") == pb.PS_ACTIVE, "victim auto-reset", RECOVERY_WITHIN_S
    )


def test_slow_agent_within_the_deadline_serves_creates(pod: FaultPod) -> None:
    """An agent answering every call 300 ms late (under the 2 s agent deadline and the 1 s
    heartbeat deadline) stays reachable and a partition spanning it is created."""
    slow = pod.live.agent_ids[0]
    inject(pod.admin, slow, agpb.Fault(kind=agpb.FAULT_AGENT_SLOW, delay_ms=300))
    pod.user.create("wide", 16)
    assert _state(pod, "wide") == pb.PS_ACTIVE
    _, held = agent_holdings(pod.live.address(slow))
    assert [h.partition_id for h in held] == ["wide"]
    assert pod.online(slow)


@pytest.mark.slow
def test_slow_agent_over_the_deadline_fails_the_create_and_leaves_nothing(
    pod: FaultPod,
) -> None:
    """An agent answering 3 s late (over the 2 s agent deadline): create fails UNAVAILABLE
    naming it, the IPUs are released in the store at once, and once the agent is healthy
    again nothing of the failed partition is left on it."""
    slow = pod.live.agent_ids[0]
    inject(pod.admin, slow, agpb.Fault(kind=agpb.FAULT_AGENT_SLOW, delay_ms=3000))
    code, message = rpc_code(lambda: pod.user.create("late", 16))
    assert code == grpc.StatusCode.UNAVAILABLE, message
    assert slow in message
    assert "released" in message
    assert "late" not in pod.user.ids()
    clear_all(pod.admin, slow)
    wait_until(lambda: pod.online(slow), f"{slow} online", 30)
    wait_until(
        lambda: not agent_holdings(pod.live.address(slow))[1],
        f"{slow} holds nothing of the failed create",
        RECOVERY_WITHIN_S,
    )
    pod.user.create("late", 16)


def test_restarted_agent_takes_creates_as_soon_as_it_is_online(pod: FaultPod) -> None:
    """Kill the agent of an empty machine while the others are full; restart it; as soon as the
    admin API reports it online, a create that can only go on it succeeds."""
    for n in range(3):
        pod.user.create(f"full{n}", 4)
    used = {_machine_of(pod, f"full{n}") for n in range(3)}
    (free_agent,) = set(pod.live.agent_ids) - used
    proc = pod.live.agent_process(free_agent)
    proc.kill()
    wait_until(lambda: pod.offline(free_agent), f"{free_agent} marked offline", 30)
    proc.restart(pod.live.controller.admin_address)
    wait_until(lambda: pod.online(free_agent), f"{free_agent} online again", 30)
    outcome = rpc_code(lambda: pod.user.create("on-restarted", 4))
    assert outcome == (grpc.StatusCode.OK, ""), outcome[1]
