"""IPUoF endpoints: applications attach to IPUs of active partitions, one at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from vpod.agent.client import AgentClient
from vpod.agent.errors import AgentRefused, Reason
from vpod.agent.fleet import EmulatedAgentHost
from vpod.agent.model import AgentEvent, EventKind, Fault, FaultKind, IpuAssignment, PartitionConfig

pytestmark = pytest.mark.anyio


class App:
    """A pretend IPUoF client holding one connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, host: EmulatedAgentHost, device_id: int) -> App:
        ident = host.machine.identity()
        reader, writer = await asyncio.open_connection(
            ident.ipuof_address, ident.ipu(device_id).server_port
        )
        return cls(reader, writer)

    async def say(self, line: str) -> str:
        self.writer.write(line.encode() + b"\n")
        await self.writer.drain()
        return await self.hear()

    async def hear(self) -> str:
        return (await self.reader.readline()).decode().strip()

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


class Events:
    """Waits for machine events without sleeping."""

    def __init__(self, host: EmulatedAgentHost) -> None:
        self.seen: list[AgentEvent] = []
        self._changed = asyncio.Event()
        self.unsubscribe = host.machine.subscribe(self._on)

    def _on(self, event: AgentEvent) -> None:
        self.seen.append(event)
        self._changed.set()

    async def wait_for(self, kind: EventKind) -> AgentEvent:
        while True:
            for event in self.seen:
                if event.kind is kind:
                    self.seen.remove(event)
                    return event
            self._changed.clear()
            await asyncio.wait_for(self._changed.wait(), timeout=10)


@pytest.fixture
async def events(host: EmulatedAgentHost) -> AsyncIterator[Events]:
    watcher = Events(host)
    yield watcher
    watcher.unsubscribe()


LOOPBACK = ("127.0.0.0/8",)
"""The applications of these tests connect from loopback: their partitions admit it."""


async def configure(
    agent: AgentClient,
    pid: str = "p1",
    devices: tuple[int, ...] = (3, 2),
    hosts: tuple[str, ...] = LOOPBACK,
) -> None:
    ipus = tuple(IpuAssignment(device_id=d, routing_id=r) for r, d in enumerate(devices))
    await agent.configure_partition(PartitionConfig(pid, 1, ipus), hosts=hosts)


async def test_attach_to_unconfigured_ipu_is_refused(host: EmulatedAgentHost) -> None:
    app = await App.connect(host, 0)
    answer = await app.say("ATTACH p1")
    assert answer.startswith("ERR ipu-not-configured ")
    assert await app.hear() == ""  # the server closed the connection
    await app.close()


async def test_attach_answers_with_routing_id(host: EmulatedAgentHost, agent: AgentClient) -> None:
    await configure(agent)
    app = await App.connect(host, 2)
    assert await app.say("ATTACH p1") == "OK ag1 2 1"
    assert await app.say("PING") == "PONG"
    assert (await agent.health()).ipus[2].attached
    assert await app.say("DETACH") == "BYE detached"
    await app.close()


async def test_second_attach_refused_until_first_detaches(
    host: EmulatedAgentHost, agent: AgentClient, events: Events
) -> None:
    """One application per IPU; closing the connection frees the IPU and reports a detach."""
    await configure(agent)
    first = await App.connect(host, 3)
    assert (await first.say("ATTACH p1")).startswith("OK")
    second = await App.connect(host, 3)
    refused = await second.say("ATTACH p1")
    assert refused.startswith("ERR ipu-attached ")
    await second.close()
    await first.close()
    detached = await events.wait_for(EventKind.DETACHED)
    assert (detached.device_id, detached.evicted) == (3, False)
    third = await App.connect(host, 3)
    assert (await third.say("ATTACH p1")).startswith("OK")
    await third.close()


async def test_attach_to_another_partition_is_refused(
    host: EmulatedAgentHost, agent: AgentClient
) -> None:
    await configure(agent, "p1", devices=(3,))
    app = await App.connect(host, 3)
    assert (await app.say("ATTACH p2")).startswith("ERR wrong-partition ")
    await app.close()


async def test_release_evicts_the_application(
    host: EmulatedAgentHost, agent: AgentClient, events: Events
) -> None:
    """Releasing the partition ends the attachment: the application reads BYE, then EOF."""
    await configure(agent)
    app = await App.connect(host, 2)
    assert (await app.say("ATTACH p1")).startswith("OK")
    await events.wait_for(EventKind.ATTACHED)
    await agent.release_partition("p1")
    assert await app.hear() == "BYE partition released"
    assert await app.hear() == ""
    detached = await events.wait_for(EventKind.DETACHED)
    assert detached.evicted
    await app.close()


async def test_a_reset_unless_attached_spares_a_partition_in_use(
    host: EmulatedAgentHost, agent: AgentClient
) -> None:
    """The controller's auto-reset asks the machine to reset only if no application holds
    an IPU of the partition: refused while one does (it keeps its attachment), done once it
    left. A plain reset still evicts."""
    await configure(agent)
    app = await App.connect(host, 2)
    assert (await app.say("ATTACH p1")).startswith("OK")
    with pytest.raises(AgentRefused) as in_use:
        await agent.reset_partition("p1", unless_attached=True)
    assert (in_use.value.code, in_use.value.reason) == ("FAILED_PRECONDITION", Reason.IPU_ATTACHED)
    assert "an application holds IPU 2 of agent ag1" in in_use.value.message
    assert await app.say("PING") == "PONG"
    assert (await agent.reset_partition("p1")).reset_count == 1
    assert await app.hear() == "BYE partition reset"
    await app.close()
    assert (await agent.reset_partition("p1", unless_attached=True)).reset_count == 2


async def test_ipu_fault_evicts_the_application(
    host: EmulatedAgentHost, agent: AgentClient
) -> None:
    await configure(agent)
    app = await App.connect(host, 3)
    assert (await app.say("ATTACH p1")).startswith("OK")
    await agent.inject_fault(Fault(FaultKind.IPU, device_id=3, reason="ECC"))
    assert (await app.hear()).startswith("BYE IPU faulted")
    await app.close()


async def test_malformed_first_line_is_refused(host: EmulatedAgentHost) -> None:
    app = await App.connect(host, 1)
    assert (await app.say("HELLO")).startswith("ERR invalid-request ")
    await app.close()


async def test_unknown_command_while_attached_keeps_the_attachment(
    host: EmulatedAgentHost, agent: AgentClient
) -> None:
    await configure(agent)
    app = await App.connect(host, 2)
    await app.say("ATTACH p1")
    assert (await app.say("FLY")).startswith("ERR invalid-request")
    assert await app.say("PING") == "PONG"
    await app.close()


async def test_rdma_ports_are_listening(host: EmulatedAgentHost) -> None:
    """The RDMA ports are taken like on a real machine; a connection there is closed at once."""
    ident = host.machine.identity()
    reader, writer = await asyncio.open_connection(ident.ipuof_address, ident.ipu(0).rdma_port)
    assert await reader.read() == b""
    writer.close()
