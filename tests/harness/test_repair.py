"""Faults, auto-reset and relocation, driven round by round on a fake clock.

The machines report faults in their heartbeats, as hardware would; the test
runs the leader's rounds by hand (:meth:`Pod.heartbeat_round`: heartbeats,
then repair) and reads the partitions back from the store. Every partition
here has the default ``max_auto_reset_retries`` (3). The process-level test
that the leader runs these rounds on its own, and that a fault injected over
the admin API reaches them, stays in ``tests/faults/test_ipu_faults.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import pytest

from vpod.agent.model import Fault, FaultKind
from vpod.controller import errors
from vpod.controller.caller import SYSTEM
from vpod.domain.partition_states import OperationState, PartitionState, ReadyState
from vpod.store.records import PartitionRecord

from .gateway import unavailable
from .pod import Pod

pytestmark = pytest.mark.anyio

MAX_RETRIES = 3


def _ipu_fault(device_id: int) -> Fault:
    return Fault(FaultKind.IPU, device_id=device_id, reason="injected by the test")


def _link_fault(device_id: int) -> Fault:
    return Fault(FaultKind.LINK_DOWN, link_id=f"ipulink{2 * device_id}", reason="by the test")


async def _record(pod: Pod, pid: str) -> PartitionRecord:
    record = await pod.record(pid)
    assert record is not None, f"partition {pid} is gone"
    return record


def _state(record: PartitionRecord) -> tuple[ReadyState, OperationState]:
    return record.state.ready, record.state.operation


ACTIVE = (ReadyState.ACTIVE, OperationState.IDLE)


async def _ipuof_devices(pod: Pod, pid: str) -> list[tuple[str, int]]:
    """The (address, device id) of every IPU in the partition's IPUoF configuration."""
    config = await pod.controller.views.ipuof_config(await _record(pod, pid), None)
    return sorted((d["ip"], d["device_id"]) for g in config["gcd_configs"] for d in g["devices"])


@pytest.mark.parametrize(
    ("make_fault", "words"),
    [(_ipu_fault, "failed"), (_link_fault, "is down")],
    ids=["ipu", "ipu-link"],
)
async def test_a_fault_puts_the_partition_in_error_and_one_auto_reset_brings_it_back(
    pod: Pod, make_fault: Callable[[int], Fault], words: str
) -> None:
    """ERROR with the reason on the first round after the fault; no auto-reset while the
    hardware is faulty, however many rounds pass; once it heals, exactly one auto-reset on
    the next round makes it ACTIVE, stamped with that round's time."""
    await pod.steady()
    await pod.create("p", 4)
    agent_id, device = pod.ipus_of("p")[0]
    fault = make_fault(device)
    pod.fault(agent_id, fault)
    await pod.heartbeat_round()
    record = await _record(pod, "p")
    assert record.state.ready is ReadyState.ERROR
    assert any(agent_id in e and words in e for e in record.errors), record.errors
    assert record.auto_reset_retry_count == 0
    assert record.max_auto_reset_retries == MAX_RETRIES
    assert record.last_auto_reset_time is None
    for _ in range(5):
        await pod.heartbeat_round()
    assert (await _record(pod, "p")).auto_reset_retry_count == 0
    assert pod.gateway.calls_of("reset", "p") == []

    pod.heal(agent_id, fault)
    await pod.heartbeat_round()
    record = await _record(pod, "p")
    assert _state(record) == ACTIVE
    assert record.auto_reset_retry_count == 1
    assert record.last_auto_reset_time == pod.clock.now()
    assert record.errors == ()
    assert [e.outcome for e in await pod.audit("auto_reset_partition", "p")] == ["ok"]
    await pod.heartbeat_round()
    assert len(await pod.audit("auto_reset_partition", "p")) == 1
    assert pod.disagreements() == []


async def test_disable_auto_reset_keeps_the_partition_in_error(pod: Pod) -> None:
    """Two partitions fault and heal together; the one created with disable_auto_reset stays
    in ERROR with no attempt counted while the other is auto-reset, until a user resets it."""
    await pod.steady()
    await pod.create("auto", 4)
    await pod.create("manual", 4, disable_auto_reset=True)
    faults = [pod.ipus_of("auto")[0], pod.ipus_of("manual")[0]]
    for agent_id, device in faults:
        pod.fault(agent_id, _ipu_fault(device))
    await pod.heartbeat_round()
    assert (await _record(pod, "auto")).state.ready is ReadyState.ERROR
    assert (await _record(pod, "manual")).state.ready is ReadyState.ERROR
    for agent_id, device in faults:
        pod.heal(agent_id, _ipu_fault(device))
    await pod.heartbeat_round()
    assert _state(await _record(pod, "auto")) == ACTIVE
    manual = await _record(pod, "manual")
    assert manual.state.ready is ReadyState.ERROR
    assert manual.auto_reset_retry_count == 0
    assert manual.last_auto_reset_time is None
    await pod.controller.partitions.reset(SYSTEM, "manual")
    assert _state(await _record(pod, "manual")) == ACTIVE


async def test_auto_resets_that_fail_stop_at_the_maximum_and_a_user_reset_starts_over(
    pod: Pod,
) -> None:
    await pod.steady()
    await pod.create("flaky", 4)
    agent_id, device = pod.ipus_of("flaky")[0]
    pod.fault(agent_id, _ipu_fault(device))
    await pod.heartbeat_round()
    pod.heal(agent_id)
    failing = pod.gateway.on("reset", agent_id, partition_id="flaky", times=None, fail=unavailable)
    for _ in range(MAX_RETRIES + 3):
        await pod.heartbeat_round()
    record = await _record(pod, "flaky")
    assert record.state.ready is ReadyState.ERROR
    assert record.auto_reset_retry_count == MAX_RETRIES
    assert failing.matched == MAX_RETRIES  # no attempt past the maximum
    assert any("unavailable" in e for e in record.errors), record.errors
    outcomes = [e.outcome for e in await pod.audit("auto_reset_partition", "flaky")]
    assert outcomes == ["failed"] * MAX_RETRIES
    pod.gateway.clear_rules()
    await pod.controller.partitions.reset(SYSTEM, "flaky")
    record = await _record(pod, "flaky")
    assert _state(record) == ACTIVE
    assert record.auto_reset_retry_count == 0  # a person reset it: counting starts again


async def test_a_relocatable_partition_moves_off_a_persistent_fault(pod: Pod) -> None:
    """Same id, ACTIVE, one attempt counted, a new IPUoF configuration; the old machine no
    longer holds it, healthy IPUs of another machine do."""
    await pod.steady()
    await pod.create("mover", 4, relocatable=True)
    old_devices = await _ipuof_devices(pod, "mover")
    old_ipus = pod.ipus_of("mover")
    old_agent, device = old_ipus[0]
    pod.fault(old_agent, _ipu_fault(device))
    await pod.heartbeat_round()
    record = await _record(pod, "mover")
    assert _state(record) == ACTIVE
    assert record.id == "mover"
    assert record.auto_reset_retry_count == 1
    assert record.last_auto_reset_time == pod.clock.now()
    new_ipus = pod.ipus_of("mover")
    assert len(new_ipus) == 4
    assert old_agent not in {a for a, _ in new_ipus}
    assert old_agent not in pod.gateway.holders_of("mover")
    new_devices = await _ipuof_devices(pod, "mover")
    assert new_devices != old_devices
    assert len(new_devices) == 4
    (new_agent,) = {a for a, _ in new_ipus}
    assert list(pod.gateway.holdings()[new_agent]) == ["mover"]
    assert [r.id for r in await pod.controller.partitions.list_partitions(SYSTEM)] == ["mover"]
    (relocated,) = await pod.audit("relocate_partition", "mover")
    assert relocated.outcome == "ok"
    assert "moved to slots" in relocated.detail
    assert pod.disagreements() == []


async def test_relocation_attempts_stop_at_the_maximum(pod: Pod) -> None:
    """Nowhere to go (the pod is full): each round counts one attempt with the reason, up to
    max_auto_reset_retries; later rounds, seen through another partition's auto-reset, add
    none."""
    await pod.steady()
    await pod.create("stuck", 8, relocatable=True)
    await pod.create("witness", 8)
    agent_id, device = pod.ipus_of("stuck")[0]
    pod.fault(agent_id, _ipu_fault(device))
    for _ in range(MAX_RETRIES):
        await pod.heartbeat_round()
    record = await _record(pod, "stuck")
    assert record.auto_reset_retry_count == MAX_RETRIES
    assert record.state.ready is ReadyState.ERROR
    assert any("relocation impossible" in e for e in record.errors), record.errors

    witness_agent, witness_device = pod.ipus_of("witness")[0]
    pod.fault(witness_agent, _ipu_fault(witness_device))
    await pod.heartbeat_round()
    assert (await _record(pod, "witness")).state.ready is ReadyState.ERROR
    pod.heal(witness_agent, _ipu_fault(witness_device))
    await pod.heartbeat_round()
    assert _state(await _record(pod, "witness")) == ACTIVE
    record = await _record(pod, "stuck")
    assert record.auto_reset_retry_count == MAX_RETRIES
    assert record.state.ready is ReadyState.ERROR


async def test_the_last_application_to_detach_triggers_one_auto_reset(pod: Pod) -> None:
    """An application detaching from a non-reconfigurable partition resets it (vipu-system
    §4), but not while another application (another instance of the run) still holds one of
    its IPUs: that one is not evicted. The last to leave triggers exactly one reset."""
    await pod.steady()
    await pod.create("app", 4)
    (agent_id,) = pod.gateway.holders_of("app")
    machine = pod.gateway.machines[agent_id]
    devices = [d for _, d in pod.ipus_of("app")]
    leaving = machine.attach("app", devices[0], "127.0.0.1:4000")
    staying = machine.attach("app", devices[1], "127.0.0.1:4001")
    await pod.heartbeat_round()
    machine.detach(leaving.attachment_id)
    for _ in range(3):  # three rounds: time enough for a reset that must not come
        await pod.heartbeat_round()
    assert pod.gateway.calls_of("reset", "app") == []
    assert [a.attachment_id for a in machine.attachments()] == [staying.attachment_id]
    assert (await _record(pod, "app")).last_auto_reset_time is None
    machine.detach(staying.attachment_id)
    await pod.heartbeat_round()
    assert len(pod.gateway.calls_of("reset", "app")) == 1
    (held,) = machine.configurations()
    assert held.reset_count == 1
    record = await _record(pod, "app")
    assert _state(record) == ACTIVE
    assert record.auto_reset_retry_count == 1
    assert record.last_auto_reset_time == pod.clock.now()
    (reset,) = await pod.audit("auto_reset_partition", "app")
    assert reset.detail == f"an application detached from {agent_id}"
    await pod.heartbeat_round()
    assert len(pod.gateway.calls_of("reset", "app")) == 1  # one detach, one reset


async def test_an_application_that_attaches_after_the_heartbeat_is_not_evicted_by_the_reset(
    pod: Pod,
) -> None:
    """The instances of one run on two machines: the first detaches, and the second attaches
    after the leader read the heartbeats but before its reset reaches that machine (seen in
    a loaded run: the second instance died with "partition reset"). Each machine checks for
    applications in the same step as the reset, so the second keeps its IPU; the attempt is
    not counted, and the second's own detach triggers the one real reset."""
    await pod.steady()
    await pod.create("run", 8)
    first_agent, second_agent = pod.gateway.holders_of("run")
    first, second = pod.gateway.machines[first_agent], pod.gateway.machines[second_agent]
    first_ipu = next(d for a, d in pod.ipus_of("run") if a == first_agent)
    second_ipu = next(d for a, d in pod.ipus_of("run") if a == second_agent)
    leaving = first.attach("run", first_ipu, "127.0.0.1:4000")
    await pod.heartbeat_round()
    first.detach(leaving.attachment_id)
    held = pod.gateway.on("reset", second_agent, partition_id="run", hold=True)
    round_ = asyncio.create_task(pod.heartbeat_round())
    await held.entered()  # the leader decided on the heartbeats: nobody holds an IPU
    late = second.attach("run", second_ipu, "127.0.0.1:4001")
    held.release()
    await round_
    assert [a.attachment_id for a in second.attachments()] == [late.attachment_id]
    record = await _record(pod, "run")
    assert _state(record) == ACTIVE
    assert record.auto_reset_retry_count == 0
    (deferred,) = await pod.audit("auto_reset_partition", "run")
    assert deferred.outcome == "deferred"
    assert f"IPU {second_ipu} of agent {second_agent}" in deferred.detail
    second.detach(late.attachment_id)
    await pod.heartbeat_round()
    assert [c.reset_count for c in second.configurations()] == [1]
    assert (await _record(pod, "run")).auto_reset_retry_count == 1
    outcomes = sorted(e.outcome for e in await pod.audit("auto_reset_partition", "run"))
    assert outcomes == ["deferred", "ok"]


async def test_a_detach_from_a_partition_without_auto_reset_resets_nothing(pod: Pod) -> None:
    """``disable_auto_reset``: the application leaving is not followed by a reset, however
    many rounds pass, and the next application attaches to the partition as it is."""
    await pod.steady()
    await pod.create("keep", 1, disable_auto_reset=True)
    ((agent_id, device),) = pod.ipus_of("keep")
    machine = pod.gateway.machines[agent_id]
    first = machine.attach("keep", device, "127.0.0.1:4000")
    await pod.heartbeat_round()
    machine.detach(first.attachment_id)
    for _ in range(3):
        await pod.heartbeat_round()
    assert pod.gateway.calls_of("reset", "keep") == []
    record = await _record(pod, "keep")
    assert record.last_auto_reset_time is None
    assert _state(record) == ACTIVE
    again = machine.attach("keep", device, "127.0.0.1:4002")
    assert again.partition_id == "keep"


async def test_a_silent_agent_is_unreachable_after_the_threshold_and_recovers(pod: Pod) -> None:
    """An agent silent for ``unreachable_after_s`` (3 s: three rounds of 1 s, not two) puts
    its partitions in ERROR saying so; when it answers again steadily, they are auto-reset."""
    await pod.steady()
    await pod.create("far", 4)
    (agent_id,) = pod.gateway.holders_of("far")
    pod.gateway.on("health", agent_id, times=None, fail=unavailable)
    for _ in range(2):
        await pod.heartbeat_round()
    assert _state(await _record(pod, "far")) == ACTIVE
    await pod.heartbeat_round()
    record = await _record(pod, "far")
    assert record.state.ready is ReadyState.ERROR
    assert any(f"agent {agent_id} has not answered for 3.0 s" in e for e in record.errors)
    assert [e.outcome for e in await pod.audit("agent_unreachable", agent_id)] == ["detected"]

    pod.gateway.clear_rules()
    await pod.heartbeat_round()  # answers once: reachable again, but not yet steady
    assert (await _record(pod, "far")).state.ready is ReadyState.ERROR
    await pod.heartbeat_round()
    record = await _record(pod, "far")
    assert _state(record) == ACTIVE
    assert record.auto_reset_retry_count == 1
    assert pod.disagreements() == []


async def test_a_silent_agents_partition_in_error_still_serves_its_recorded_config(
    pod: Pod,
) -> None:
    """Once its agent is found unreachable the partition is ERROR, and its IPUoF
    configuration is still served, as before the silence, on a replica that never asked
    that agent anything (from what the controller recorded); its status names the agent.
    A reset under way is not served: the partition may be moving."""
    await pod.steady()
    record = await pod.create("far", 4)
    before = await pod.controller.views.ipuof_config(record, None)
    (agent_id,) = pod.gateway.holders_of("far")
    for op in ("health", "identity"):
        pod.gateway.on(op, agent_id, times=None, fail=unavailable)
    for _ in range(3):
        await pod.heartbeat_round()
    record = await _record(pod, "far")
    assert _state(record) == (ReadyState.ERROR, OperationState.IDLE)

    replica = pod.replica()
    assert await replica.views.ipuof_config(record, None) == before
    status = await replica.views.status(record)
    named = [e for e in status.errors if e.startswith(f"agent {agent_id} is unreachable")]
    assert named, status.errors
    assert "served from what the controller recorded" in named[0]

    moving = dataclasses.replace(
        record, state=PartitionState(ReadyState.ERROR, OperationState.RESETTING)
    )
    with pytest.raises(errors.FailedPrecondition, match="available once it is ACTIVE"):
        await replica.views.ipuof_config(moving, None)


async def test_a_partition_in_error_for_a_reported_fault_refuses_its_config(pod: Pod) -> None:
    """A failed IPU its agent reports puts the partition in ERROR, and its configuration is
    refused as in any state but ACTIVE: IPUoF clients wait on that refusal until the
    partition is repaired (an agent that answers is no reason to serve a recorded copy)."""
    await pod.steady()
    record = await pod.create("broken", 2)
    ((agent_id, device), *_) = pod.ipus_of("broken")
    pod.fault(agent_id, _ipu_fault(device))
    await pod.heartbeat_round()
    record = await _record(pod, "broken")
    assert record.state.ready is ReadyState.ERROR
    with pytest.raises(errors.FailedPrecondition, match="is ERROR: its IPUoF config is avail"):
        await pod.controller.views.ipuof_config(record, None)


async def test_a_create_placed_on_an_ipu_another_replica_knows_is_faulty_is_placed_again(
    pod: Pod,
) -> None:
    """Replica A's cached snapshot predates a fault that replica B (the leader) heard of and
    stored. A places on the faulty IPU, the machine refuses it (IPU faulted), A releases
    it and places once more on a fresh snapshot, which has the stored fault: the create
    succeeds elsewhere, and the caller never hears of the first try."""
    a, b = pod.controller, pod.replica()
    probe = await pod.create("probe", 1, on=a)  # A caches the empty pod
    ((agent_id, device),) = pod.ipus_of("probe")
    await a.partitions.remove(SYSTEM, "probe")
    pod.fault(agent_id, _ipu_fault(device))
    await b.leader.monitor.tick()  # B hears of the fault and stores it; A has not
    record = await pod.create("p", 1, on=a)
    assert record.state.ready is ReadyState.ACTIVE
    assert record.slots != probe.slots
    tries = pod.gateway.calls_of("configure", "p")
    assert len(tries) == 2
    assert (tries[0].agent_id, tries[0].device_ids) == (agent_id, (device,))
    assert (agent_id, device) not in pod.ipus_of("p")
    outcomes = sorted(e.outcome for e in await pod.audit("create_partition", "p"))
    assert outcomes == ["failed", "reserved", "reserved"]
    assert pod.disagreements() == []
