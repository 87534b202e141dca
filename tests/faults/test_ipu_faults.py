"""IPU and IPU-Link faults reported by agents: ERROR, auto-reset, relocation, retry limits.

Faults are injected into the emulated machines through the admin API (as
``vipu-admin inject fault`` does); the controller learns of them only from
the agents' heartbeats, like it would from real hardware. Every partition
here is created with the default ``max_auto_reset_retries`` (3).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb

from .conftest import FaultPod
from .live import agent_holdings, audit_count, clear, inject, locations, wait_until

MAX_RETRIES = 3
WITHIN_S = 30.0


def _state(pod: FaultPod, pid: str) -> int:
    return int(pod.user.status(pid).ready_state)


def _wait_state(pod: FaultPod, pid: str, state: int, what: str) -> pb.PartitionStatus:
    wait_until(lambda: _state(pod, pid) == state, what, WITHIN_S)
    return pod.user.status(pid)


def _first_ipu(pod: FaultPod, pid: str) -> tuple[str, int]:
    return locations(pod.admin, pid)[0]


def _ipu_fault(device_id: int) -> agpb.Fault:
    return agpb.Fault(kind=agpb.FAULT_IPU, device_id=device_id, reason="injected by the test")


def _link_fault(device_id: int) -> agpb.Fault:
    link = f"ipulink{2 * device_id}"
    return agpb.Fault(kind=agpb.FAULT_LINK_DOWN, link_id=link, reason="injected by the test")


@pytest.mark.parametrize(
    ("pid", "make_fault", "words"),
    [("ipu-faulty", _ipu_fault, "failed"), ("link-faulty", _link_fault, "is down")],
    ids=["ipu", "ipu-link"],
)
def test_fault_puts_partition_in_error_and_auto_reset_brings_it_back(
    pod: FaultPod, pid: str, make_fault: object, words: str
) -> None:
    """A fault on one IPU (or its IPU-Link) of a partition: ERROR with the reason in its
    status; no auto-reset while the hardware is faulty; once cleared, exactly one auto-reset
    makes it ACTIVE, and the status reports that attempt and when it happened."""
    assert callable(make_fault)
    pod.user.create(pid, 4)
    agent_id, device = _first_ipu(pod, pid)
    fault = make_fault(device)
    inject(pod.admin, agent_id, fault)
    status = _wait_state(pod, pid, pb.PS_ERROR, "in ERROR")
    assert any(agent_id in e and words in e for e in status.errors), status.errors
    assert status.auto_reset_retry_count == 0
    assert status.max_auto_reset_retries == MAX_RETRIES
    assert not status.HasField("last_auto_reset_time")

    cleared_at = datetime.now(UTC)
    clear(pod.admin, agent_id, fault)
    status = _wait_state(pod, pid, pb.PS_ACTIVE, "auto-reset to ACTIVE")
    assert status.operation_state == pb.POS_IDLE
    assert status.auto_reset_retry_count == 1
    assert audit_count(pod.live.database_url, "auto_reset_partition", pid) == 1
    reset_at = status.last_auto_reset_time.ToDatetime(tzinfo=UTC)
    assert cleared_at.timestamp() - 1 <= reset_at.timestamp() <= time.time() + 1
    assert list(status.errors) == []


def test_disable_auto_reset_keeps_the_partition_in_error(pod: FaultPod) -> None:
    """Two partitions fault and heal together; the one created with disable_auto_reset stays
    in ERROR with no attempt counted while the other is auto-reset, until a user resets it."""
    pod.user.create("auto", 4)
    pod.user.create("manual", 4, disable_auto_reset=True)
    faults = [_first_ipu(pod, "auto"), _first_ipu(pod, "manual")]
    for agent_id, device in faults:
        inject(pod.admin, agent_id, _ipu_fault(device))
    _wait_state(pod, "auto", pb.PS_ERROR, "auto in ERROR")
    _wait_state(pod, "manual", pb.PS_ERROR, "manual in ERROR")
    for agent_id, device in faults:
        clear(pod.admin, agent_id, _ipu_fault(device))
    _wait_state(pod, "auto", pb.PS_ACTIVE, "auto auto-reset")
    # The round that reset "auto" saw "manual" too, and must have left it alone.
    status = pod.user.status("manual")
    assert status.ready_state == pb.PS_ERROR
    assert status.auto_reset_retry_count == 0
    assert not status.HasField("last_auto_reset_time")
    pod.user.reset("manual")
    assert _state(pod, "manual") == pb.PS_ACTIVE


def test_relocatable_partition_moves_off_a_persistent_fault(pod: FaultPod) -> None:
    """A relocatable partition whose IPU stays faulty is moved to healthy IPUs of its
    allocation: same id, ACTIVE, one attempt counted, a new IPUoF configuration; the old
    machine no longer holds it and the new one does."""
    pod.user.create("mover", 4, relocatable=True)
    old_agent, device = _first_ipu(pod, "mover")
    old_devices = sorted((d.ip, d.device_id) for g in pod.user.config("mover").gcd_configs
                         for d in g.devices)  # fmt: skip
    inject(pod.admin, old_agent, _ipu_fault(device))
    wait_until(
        lambda: (
            _state(pod, "mover") == pb.PS_ACTIVE
            and {a for a, _ in locations(pod.admin, "mover")} != {old_agent}
        ),
        "mover relocated and ACTIVE",
        WITHIN_S,
    )
    status = pod.user.status("mover")
    assert status.partition_id == "mover"
    assert status.auto_reset_retry_count == 1
    assert status.HasField("last_auto_reset_time")
    new_agents = {a for a, _ in locations(pod.admin, "mover")}
    assert old_agent not in new_agents
    new_devices = sorted((d.ip, d.device_id) for g in pod.user.config("mover").gcd_configs
                         for d in g.devices)  # fmt: skip
    assert new_devices != old_devices
    assert len(new_devices) == 4
    assert "mover" not in [h.partition_id for h in agent_holdings(pod.live.address(old_agent))[1]]
    (new_agent,) = new_agents
    assert [h.partition_id for h in agent_holdings(pod.live.address(new_agent))[1]] == ["mover"]
    assert pod.user.ids() == ["mover"]


def test_relocation_attempts_stop_at_the_maximum(pod: FaultPod) -> None:
    """A relocatable partition with a persistent fault and nowhere to go: each round counts one
    attempt, the reason is in its status, and attempts stop at max_auto_reset_retries (later
    rounds, seen through another partition's auto-reset, add none)."""
    pod.user.create("stuck", 8, relocatable=True)
    pod.user.create("witness", 8)
    agent_id, device = _first_ipu(pod, "stuck")
    inject(pod.admin, agent_id, _ipu_fault(device))
    wait_until(
        lambda: pod.user.status("stuck").auto_reset_retry_count == MAX_RETRIES,
        "stuck used up its retries",
        WITHIN_S,
    )
    status = pod.user.status("stuck")
    assert status.ready_state == pb.PS_ERROR
    assert any("relocation impossible" in e for e in status.errors), status.errors

    witness_agent, witness_device = _first_ipu(pod, "witness")
    inject(pod.admin, witness_agent, _ipu_fault(witness_device))
    _wait_state(pod, "witness", pb.PS_ERROR, "witness in ERROR")
    clear(pod.admin, witness_agent, _ipu_fault(witness_device))
    _wait_state(pod, "witness", pb.PS_ACTIVE, "witness auto-reset")
    status = pod.user.status("stuck")
    assert status.auto_reset_retry_count == MAX_RETRIES
    assert status.ready_state == pb.PS_ERROR
