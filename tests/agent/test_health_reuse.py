"""An unchanged heartbeat answer is reused, and a reused answer is always the true one.

A process hosting 256 machines answers 256 heartbeats a second, nearly all
the same as the second before; the machine reuses its last answer without
events when its last event and its sensor readings are unchanged, and the
agent service re-sends the encoded reply for the same answer. The property
test checks the claim the reuse rests on (every change of what a machine
reports but its telemetry emits an event): after any sequence of operations,
the answer of a machine asked all along equals the answer of a twin that
replayed the same operations and is asked for the first time.
"""

from __future__ import annotations

import contextlib
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpod.agent import convert
from vpod.agent.client import HealthMemo
from vpod.agent.emulated import EmulatedMachine
from vpod.agent.emulated_backend import EmulatedBackend
from vpod.agent.errors import MachineRefusal
from vpod.agent.links import LINKS
from vpod.agent.model import Fault, FaultKind, IpuAssignment, PartitionConfig
from vpod.agent.service import AgentService
from vpod.domain.routing import IpuLinkRouting, SyncType
from vpod.wire import agent_pb2 as agpb

Op = tuple[Any, ...]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _config(pid: str, devices: tuple[int, ...], generation: int) -> PartitionConfig:
    return PartitionConfig(
        partition_id=pid,
        generation=generation,
        ipus=tuple(IpuAssignment(device_id=d, routing_id=r) for r, d in enumerate(devices)),
        ipulink_routing=IpuLinkRouting.DNC,
        sync_type=SyncType.GS2_DEFAULT,
    )


PIDS = st.sampled_from(["a", "b"])
DEVICES = st.sampled_from([(0,), (1,), (2,), (3,), (0, 1), (2, 3), (0, 1, 2, 3)])
OPS = st.one_of(
    st.tuples(st.just("configure"), PIDS, DEVICES, st.integers(1, 3)),
    st.tuples(st.just("release"), PIDS),
    st.tuples(st.just("reset"), PIDS),
    st.tuples(st.just("attach"), st.integers(0, 3)),
    st.tuples(st.just("detach"), st.integers(1, 6)),
    st.tuples(st.just("load"), st.integers(1, 6), st.sampled_from([0.0, 0.5, 1.0])),
    st.tuples(st.just("fault_ipu"), st.integers(0, 3)),
    st.tuples(st.just("fault_link"), st.sampled_from(sorted(LINKS))),
    st.tuples(st.just("clear"), st.sampled_from(["all", "ipu0", "link"])),
    st.tuples(st.just("tick"), st.sampled_from([0.0, 0.2, 3.0, 60.0])),
)


def _apply(machine: EmulatedMachine, clock: FakeClock, op: Op) -> None:
    kind = op[0]
    with contextlib.suppress(MachineRefusal):
        if kind == "configure":
            machine.configure(_config(op[1], op[2], op[3]))
        elif kind == "release":
            machine.release(op[1])
        elif kind == "reset":
            machine.reset(op[1])
        elif kind == "attach":
            machine.attach(None, op[1], client="app")
        elif kind == "detach":
            machine.detach(op[1])
        elif kind == "load":
            machine.set_load(op[1], op[2])
        elif kind == "fault_ipu":
            machine.inject_fault(Fault(FaultKind.IPU, device_id=op[1], reason="test"))
        elif kind == "fault_link":
            machine.inject_fault(Fault(FaultKind.LINK_DOWN, link_id=op[1], reason="test"))
        elif kind == "clear":
            target = {
                "all": None,
                "ipu0": Fault(FaultKind.IPU, device_id=0),
                "link": Fault(FaultKind.LINK_DOWN, link_id=sorted(LINKS)[0]),
            }[op[1]]
            machine.clear_fault(target)
        elif kind == "tick":
            clock.now += op[1]


def _fresh(ops: list[Op]) -> tuple[EmulatedMachine, FakeClock]:
    clock = FakeClock()
    machine = EmulatedMachine("ag1", clock=clock, boot_id="boot-1")
    for op in ops:
        _apply(machine, clock, op)
    return machine, clock


@settings(max_examples=150, deadline=None)
@given(st.lists(OPS, max_size=25))
def test_a_reused_answer_equals_one_built_afresh(ops: list[Op]) -> None:
    asked, clock = _fresh([])
    done: list[Op] = []
    for op in ops:
        _apply(asked, clock, op)
        done.append(op)
        last = asked.events_since(0).last_event
        for since in (0, last):
            twin, _ = _fresh(done)
            assert asked.health(since) == twin.health(since), (since, done)


def test_an_unchanged_machine_returns_the_same_answer_and_a_change_a_new_one() -> None:
    machine, clock = _fresh([])
    last = machine.events_since(0).last_event
    first = machine.health(last)
    clock.now += 5
    assert machine.health(last) is first  # idle: same events, same readings
    machine.configure(_config("p", (0, 1), 1))
    changed = machine.health(last)
    assert changed is not first
    assert changed.events is not None
    assert changed.events.events
    last = machine.events_since(0).last_event
    quiet = machine.health(last)
    assert quiet.ipus[0].partition_id == "p"
    assert quiet.events is not None
    assert not quiet.events.events
    attachment = machine.attach("p", 0, client="app")
    last = machine.events_since(0).last_event
    machine.set_load(attachment.attachment_id, 1.0)
    loaded = machine.health(last)
    clock.now += 1
    warmer = machine.health(last)
    assert warmer is not loaded  # the sensors moved: a new answer
    assert warmer.ipus[0].telemetry != loaded.ipus[0].telemetry


@pytest.mark.anyio
async def test_the_service_sends_the_same_reply_again_until_the_answer_changes() -> None:
    machine, clock = _fresh([])
    service = AgentService(EmulatedBackend(machine), fault_injection=True)
    last = machine.events_since(0).last_event
    first = await service.health_reply(last)
    clock.now += 2
    assert await service.health_reply(last) is first
    machine.inject_fault(Fault(FaultKind.IPU, device_id=2, reason="hot"))
    faulted = await service.health_reply(last)
    assert faulted is not first
    assert not faulted.ipus[2].healthy
    last = machine.events_since(0).last_event
    quiet = await service.health_reply(last)
    assert await service.health_reply(last) is quiet
    slow = agpb.Fault(kind=agpb.FAULT_AGENT_SLOW, delay_ms=100)
    # The context is only used to refuse a call; this one is valid.
    await service.InjectFault(agpb.InjectFaultRequest(fault=slow), cast(Any, None))
    slowed = await service.health_reply(last)
    assert slowed is not quiet  # the same machine answer, but the agent's faults changed
    assert [f.kind for f in slowed.faults][-1] == agpb.FAULT_AGENT_SLOW
    assert await service.health_reply(last) is slowed


def test_the_controller_memo_reuses_unchanged_links_and_sees_a_link_go_down() -> None:
    """The controller's side: an answer with events is decoded anew but keeps the decoded
    links while they are the same; a link going down is seen at once."""
    machine, _ = _fresh([])
    memo = HealthMemo()
    first = memo.decode(convert.health_to_wire(machine.health(0)))
    machine.configure(_config("p", (0, 1), 1))
    configured = memo.decode(convert.health_to_wire(machine.health(0)))
    assert configured.events is not None
    assert configured.events.events
    assert configured.ipus[0].partition_id == "p"
    assert configured.links is first.links
    link = sorted(LINKS)[0]
    machine.inject_fault(Fault(FaultKind.LINK_DOWN, link_id=link, reason="cable"))
    down = memo.decode(convert.health_to_wire(machine.health(0)))
    assert down.links is not first.links
    assert [lk.up for lk in down.links if lk.link_id == link] == [False]
    assert down == convert.health_from_wire(convert.health_to_wire(machine.health(0)))


@pytest.mark.anyio
async def test_links_carry_a_version_that_moves_only_when_they_change() -> None:
    """The agent numbers its links, so the controller's memo reuses them without comparing
    35 links per answer; a link fault moves the number, and so does a restarted agent on a
    machine that kept its boot id (its first number is random, never 1 again)."""
    machine, clock = _fresh([])
    service = AgentService(EmulatedBackend(machine), fault_injection=True)
    memo = HealthMemo()
    first = await service.health_reply(0)
    assert first.links_version
    decoded = memo.decode(first)
    machine.configure(_config("p", (0, 1), 1))
    clock.now += 1
    configured = await service.health_reply(0)
    assert configured.links_version == first.links_version
    assert memo.decode(configured).links is decoded.links
    link = sorted(LINKS)[1]
    machine.inject_fault(Fault(FaultKind.LINK_DOWN, link_id=link, reason="cable"))
    down = await service.health_reply(0)
    assert down.links_version != first.links_version
    seen = memo.decode(down)
    assert [lk.up for lk in seen.links if lk.link_id == link] == [False]
    assert seen == convert.health_from_wire(down)
    machine.clear_fault(None)
    restarted = AgentService(EmulatedBackend(machine), fault_injection=True)
    again = await restarted.health_reply(0)
    assert again.boot_id == down.boot_id
    assert again.links_version not in (first.links_version, down.links_version)
    assert memo.decode(again).links == convert.links_from_wire(again.links)
    assert all(lk.up for lk in memo.decode(again).links)


def test_an_answer_without_a_links_version_is_still_compared() -> None:
    """An agent of an older release sends no version: the memo compares the links."""
    machine, _ = _fresh([])
    memo = HealthMemo()
    first = memo.decode(convert.health_to_wire(machine.health(0)))
    link = sorted(LINKS)[2]
    machine.inject_fault(Fault(FaultKind.LINK_DOWN, link_id=link, reason="cable"))
    down = memo.decode(convert.health_to_wire(machine.health(0)))
    assert down.links is not first.links
    assert [lk.up for lk in down.links if lk.link_id == link] == [False]
