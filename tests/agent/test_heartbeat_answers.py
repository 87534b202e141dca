"""Numbered heartbeat answers: a caller that says which answer and links it holds is sent
only what changed, over real gRPC, and decodes exactly what a whole answer would have said."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import grpc
import pytest

from vpod.agent import convert
from vpod.agent.client import ChannelPool, HealthMemo
from vpod.agent.errors import AgentUnavailable
from vpod.agent.model import Fault, FaultKind, IpuAssignment, MachineHealth, PartitionConfig
from vpod.wire import agent_pb2 as pb
from vpod.wire import agent_pb2_grpc as pb_grpc

from .conftest import emulated_fleet

pytestmark = pytest.mark.anyio


class CountingMemo(HealthMemo):
    """A memo that counts the forms of the answers it decodes."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: Counter[str] = Counter()

    def decode(self, message: pb.HealthReply) -> MachineHealth:
        form = "unchanged" if message.unchanged else "whole"
        self.forms["without links" if message.links_omitted else form] += 1
        return super().decode(message)


def _config(partition_id: str, devices: tuple[int, ...]) -> PartitionConfig:
    ipus = tuple(IpuAssignment(device_id=d, routing_id=r) for r, d in enumerate(devices))
    return PartitionConfig(partition_id, 1, ipus)


async def test_a_caller_holding_the_answer_gets_a_stub_and_one_holding_the_links_gets_none() -> (
    None
):
    async with emulated_fleet(2, "127.93.0.1") as fleet:
        host = fleet.hosts[0]
        async with grpc.aio.insecure_channel(host.address) as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            metadata = (("vipu-agent-key", host.key),)

            async def ask(**known: int) -> pb.FleetHealthReply:
                request = pb.FleetHealthRequest()
                for agent_id in ("ag1", "ag2"):
                    request.machines.add(agent_id=agent_id, since_event=10**6, **known)
                reply: pb.FleetHealthReply = await stub.FleetHealth(request, metadata=metadata)
                return reply

            whole = (await ask()).machines
            assert [m.agent_id for m in whole] == ["ag1", "ag2"]
            for answer in whole:
                assert answer.version
                assert answer.links_version
                assert answer.links
                assert len(answer.ipus) == 4
                assert not answer.unchanged
                assert not answer.links_omitted
            # Both machines' versions differ (each starts at random), so ask each for its own.
            again = pb.FleetHealthRequest()
            for answer in whole:
                again.machines.add(
                    agent_id=answer.agent_id,
                    since_event=10**6,
                    known_version=answer.version,
                    known_links_version=answer.links_version,
                )
            stubs = (await stub.FleetHealth(again, metadata=metadata)).machines
            for answer, short in zip(whole, stubs, strict=True):
                assert short.unchanged
                assert (short.version, short.links_version, short.boot_id) == (
                    answer.version,
                    answer.links_version,
                    answer.boot_id,
                )
                assert not short.ipus
                assert not short.links
                assert short.fleet_id == answer.fleet_id != ""

            # A partition changes ag1's answer but not its links: a new version, no links.
            host.machine.configure(_config("p", (0, 1)))
            again.machines[0].since_event = 0
            changed = (await stub.FleetHealth(again, metadata=metadata)).machines[0]
            assert not changed.unchanged
            assert changed.links_omitted
            assert not changed.links
            assert changed.version != whole[0].version
            assert [i.partition_id for i in changed.ipus[:2]] == ["p", "p"]
            assert changed.events  # the configuration is news

            # A link fault changes the links: they come whole, under a new links version.
            host.machine.inject_fault(Fault(kind=FaultKind.LINK_DOWN, link_id="ipulink0"))
            faulted = (await stub.FleetHealth(again, metadata=metadata)).machines[0]
            assert not faulted.links_omitted
            assert len(faulted.links) == len(whole[0].links)
            assert faulted.links_version != whole[0].links_version
            assert any(not link.up for link in faulted.links)


async def test_the_memo_decodes_what_whole_answers_say_through_every_kind_of_change() -> None:
    """Heartbeats through a memo (stubs, answers without links) and without one (whole
    answers) decode to the same health after each change: a partition, a holder's events,
    a link fault and its clearing, a release, and nothing at all."""
    async with emulated_fleet(1, "127.94.0.1") as fleet:
        host = fleet.hosts[0]
        machine = host.machine
        async with ChannelPool() as pool:
            client = pool.client(host.address, agent_id="ag1", key=host.key)
            memo = CountingMemo()
            since = 0

            async def both() -> tuple[MachineHealth, MachineHealth]:
                nonlocal since
                remembered = await client.fleet_health([("ag1", since)], memo=memo)
                whole = await client.fleet_health([("ag1", since)])
                (health,) = remembered
                since = health.events.last_event if health.events else since
                return health, whole[0]

            steps: list[Callable[[], object]] = [
                lambda: None,
                lambda: machine.configure(_config("p", (0, 1, 2, 3))),
                lambda: None,
                lambda: machine.inject_fault(Fault(kind=FaultKind.LINK_DOWN, link_id="gwlink0")),
                lambda: None,
                lambda: machine.clear_fault(None),
                lambda: machine.release("p"),
                lambda: None,
                lambda: None,
            ]
            for step in steps:
                step()
                # The change's events, then the quiet answer, then that answer again.
                for _ in range(3):
                    remembered, whole = await both()
                    assert remembered.ipus == whole.ipus
                    assert remembered.links == whole.links
                    assert remembered.faults == whole.faults
                    assert remembered.healthy == whole.healthy
                    assert remembered.boot_id == whole.boot_id
            # Every step's last answer was a stub; the partition's and the release's came
            # without links; the first answer, the fault's and its clearing's brought links.
            assert memo.forms["unchanged"] >= len(steps)
            assert memo.forms["without links"] >= 2
            assert memo.forms["whole"] >= 3


def test_a_stub_for_an_answer_no_longer_held_is_a_temporary_failure_that_heals() -> None:
    memo = HealthMemo()
    stub = pb.HealthReply(agent_id="ag9", boot_id="b", version=7, links_version=3, unchanged=True)
    with pytest.raises(AgentUnavailable, match="no longer holds"):
        memo.decode(stub)
    assert memo.known("ag9") == (0, 0)  # the next heartbeat asks for all of it
    bare = pb.HealthReply(agent_id="ag9", boot_id="b", version=8, links_version=3)
    bare.links_omitted = True
    with pytest.raises(AgentUnavailable, match="links"):
        memo.decode(bare)
    whole = convert.health_to_wire(
        MachineHealth(agent_id="ag9", boot_id="b", ipus=(), links=(), faults=(), events=None),
        ([], 3),
    )
    whole.version = 8
    assert memo.decode(whole).agent_id == "ag9"
    assert memo.known("ag9") == (8, 3)
