"""An IPU fault reported by a real agent: ERROR, then auto-reset, with no hand on the rounds.

The fault is injected into an emulated machine through the admin API (as
``vipu-admin inject fault`` does); the controller learns of it only from the
agent's heartbeats, like it would from real hardware, and its own leader loop
resets the partition once the fault clears. This is the process-level proof of
that wiring, once. The rules of repair (IPU-Link faults, ``disable_auto_reset``,
relocation and its IPUoF configuration, the retry limit) are tested round by
round on the in-process harness: ``tests/harness/test_repair.py``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb

from .conftest import FaultPod
from .live import audit_count, clear, inject, locations, wait_until

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


def test_fault_puts_partition_in_error_and_auto_reset_brings_it_back(pod: FaultPod) -> None:
    """A fault on one IPU of a partition: ERROR with the reason in its status; no auto-reset
    while the hardware is faulty; once cleared, exactly one auto-reset makes it ACTIVE, and
    the status reports that attempt and when it happened."""
    pid, words = "ipu-faulty", "failed"
    pod.user.create(pid, 4)
    agent_id, device = _first_ipu(pod, pid)
    fault = _ipu_fault(device)
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
