"""The agent's gRPC service and the controller's client, over real gRPC on loopback."""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from vpod.agent.addressing import AddressMode, AddressPlan
from vpod.agent.client import AgentClient, ChannelPool
from vpod.agent.errors import (
    AgentFailed,
    AgentRefused,
    AgentTimeout,
    AgentUnavailable,
    Reason,
)
from vpod.agent.fleet import AgentFleet, EmulatedAgentHost, FleetSettings
from vpod.agent.model import (
    EventKind,
    Fault,
    FaultKind,
    IpuAssignment,
    LinkTestKind,
    PartitionConfig,
)
from vpod.agent.trust import KEY_METADATA
from vpod.domain.catalog import MachineType
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.wire import agent_pb2, agent_pb2_grpc

pytestmark = pytest.mark.anyio


def config(
    pid: str = "p1", devices: tuple[int, ...] = (3, 2, 1, 0), generation: int = 1
) -> PartitionConfig:
    return PartitionConfig(
        partition_id=pid,
        generation=generation,
        ipus=tuple(IpuAssignment(device_id=d, routing_id=r) for r, d in enumerate(devices)),
        partition_size=len(devices),
        ipulink_routing=IpuLinkRouting.DNC,
        sync_type=SyncType.GS2_DEFAULT,
    )


async def test_identity_reports_bound_addresses(
    host: EmulatedAgentHost, agent: AgentClient
) -> None:
    """GetIdentity names the agent, its machine and the ports it actually listens on."""
    ident = await agent.get_identity()
    assert ident == host.machine.identity()
    assert ident.agent_id == "ag1"
    assert ident.machine_type is MachineType.BOW2000
    assert ident.management_address == host.address
    assert all(ipu.server_port > 0 and ipu.rdma_port > 0 for ipu in ident.ipus)
    assert len({ipu.server_port for ipu in ident.ipus}) == 4


async def test_ipu_attributes_over_the_wire(agent: AgentClient) -> None:
    attrs = await agent.list_ipu_attributes()
    assert sorted(attrs) == [0, 1, 2, 3]
    assert attrs[1]["board type"] == "Bow-2000"


async def test_configure_release_reset_are_idempotent(agent: AgentClient) -> None:
    """Repeating configure, release or reset after a timeout does no harm."""
    wanted = PartitionConfig(
        partition_id="p1",
        generation=1,
        ipus=(IpuAssignment(0, 0, segment_id=1, gcd_id=1),),
        partition_size=128,
        num_ipulink_segments=2,
        ipulink_routing=IpuLinkRouting.RINGSWNC,
        sync_type=SyncType.POD_NATIVE_DEFAULT,
        gw_routing=GwRouting.RING,
        reconfigurable=True,
    )
    first = await agent.configure_partition(wanted)
    again = await agent.configure_partition(wanted)
    assert first.changed
    assert not again.changed
    assert first.partition.config == wanted
    held = await agent.list_configurations()
    assert [c.config.partition_id for c in held] == ["p1"]
    assert (await agent.reset_partition("p1")).reset_count == 1
    assert (await agent.reset_partition("p1")).reset_count == 2
    assert await agent.release_partition("p1") is True
    assert await agent.release_partition("p1") is False
    assert await agent.list_configurations() == []


async def test_refusals_carry_code_and_reason(agent: AgentClient) -> None:
    """A refusal is AgentRefused with the status code name, the reason and a sentence."""
    await agent.configure_partition(config("p1", devices=(3, 2)))
    with pytest.raises(AgentRefused) as busy:
        await agent.configure_partition(config("p2", devices=(2,)))
    assert (busy.value.code, busy.value.reason) == ("FAILED_PRECONDITION", Reason.IPU_BUSY)
    assert "release that partition first" in busy.value.message
    with pytest.raises(AgentRefused) as unknown:
        await agent.reset_partition("ghost")
    assert (unknown.value.code, unknown.value.reason) == ("NOT_FOUND", Reason.UNKNOWN_PARTITION)
    with pytest.raises(AgentRefused) as invalid:
        await agent.configure_partition(config("p3", devices=(7,)))
    assert (invalid.value.code, invalid.value.reason) == (
        "INVALID_ARGUMENT",
        Reason.INVALID_REQUEST,
    )


async def test_unknown_enum_number_is_invalid(host: EmulatedAgentHost) -> None:
    """A routing type this agent does not know is refused, not stored."""
    async with grpc.aio.insecure_channel(host.address) as channel:
        stub = agent_pb2_grpc.AgentServiceStub(channel)
        request = agent_pb2.ConfigurePartitionRequest(
            config=agent_pb2.PartitionConfiguration(
                partition_id="p1",
                generation=1,
                ipus=[agent_pb2.IpuAssignment(device_id=0)],
                ipulink_routing_type=9,  # type: ignore[arg-type]
            )
        )
        key = ((KEY_METADATA, host.key),)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.ConfigurePartition(request, metadata=key)
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "IPU-Link routing type 9" in (info.value.details() or "")
        missing = agent_pb2.ConfigurePartitionRequest()
        with pytest.raises(grpc.aio.AioRpcError) as none:
            await stub.ConfigurePartition(missing, metadata=key)
        assert none.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_hung_agent_times_out_until_cleared(agent: AgentClient) -> None:
    """A hung agent answers nothing: callers get AgentTimeout (an AgentUnavailable)."""
    await agent.inject_fault(Fault(FaultKind.AGENT_HANG, reason="test"))
    with pytest.raises(AgentTimeout) as info:
        await agent.get_identity(timeout=0.2)
    assert isinstance(info.value, AgentUnavailable)
    assert "did not answer in time" in info.value.message
    pending = asyncio.create_task(agent.health(timeout=30))
    active = await agent.clear_fault(Fault(FaultKind.AGENT_HANG))
    assert active == []
    assert (await pending).healthy


async def test_slow_agent_answers_after_its_delay(agent: AgentClient) -> None:
    """A slow agent misses short deadlines and meets long ones; health lists the fault."""
    await agent.inject_fault(Fault(FaultKind.AGENT_SLOW, delay_s=0.3))
    with pytest.raises(AgentTimeout):
        await agent.get_identity(timeout=0.02)
    health = await agent.health(timeout=30)
    assert [(f.kind, f.delay_s) for f in health.faults] == [(FaultKind.AGENT_SLOW, 0.3)]
    await agent.clear_fault()
    assert (await agent.health()).faults == ()


async def test_slow_fault_needs_a_sane_delay(agent: AgentClient) -> None:
    with pytest.raises(AgentRefused, match="delay of 1 to 600000 ms"):
        await agent.inject_fault(Fault(FaultKind.AGENT_SLOW, delay_s=0))


async def test_ipu_fault_and_link_down_show_in_health(agent: AgentClient) -> None:
    await agent.inject_fault(Fault(FaultKind.IPU, device_id=2, reason="ECC"))
    active = await agent.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="gwlink1"))
    assert {f.kind for f in active} == {FaultKind.IPU, FaultKind.LINK_DOWN}
    health = await agent.health()
    assert not health.healthy
    assert [i.device_id for i in health.ipus if not i.healthy] == [2]
    assert "ECC" in health.ipus[2].fault
    assert [link.link_id for link in health.links if not link.up] == ["gwlink1"]
    results = {r.test: r for r in await agent.run_link_tests()}
    assert not results[LinkTestKind.GW_LINK].passed
    assert results[LinkTestKind.SYNC_LINK].passed
    await agent.clear_fault(Fault(FaultKind.IPU, device_id=2))
    assert [f.kind for f in await agent.clear_fault(None)] == []


async def test_health_returns_events_after_a_sequence(agent: AgentClient) -> None:
    await agent.configure_partition(config())
    await agent.release_partition("p1")
    health = await agent.health()
    assert health.events is not None
    assert [e.kind for e in health.events.events] == [EventKind.CONFIGURED, EventKind.RELEASED]
    later = await agent.health(since_event=health.events.last_event)
    assert later.events is not None
    assert later.events.events == ()


async def test_watch_events_streams_new_events(agent: AgentClient) -> None:
    """The first batch comes at once with the boot id; later batches as things happen."""
    stream = agent.watch_events()
    first = await anext(stream)
    assert first.events == ()
    assert first.boot_id
    await agent.configure_partition(config())
    batch = await anext(stream)
    assert [(e.kind, e.partition_id, e.generation) for e in batch.events] == [
        (EventKind.CONFIGURED, "p1", 1)
    ]
    await stream.aclose()


async def test_unreachable_agent_is_unavailable() -> None:
    """Nothing listening: AgentUnavailable (not a timeout), naming the agent and address."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with AgentClient(f"127.0.0.1:{port}", agent_id="ag9", timeout=5) as client:
        with pytest.raises(AgentUnavailable) as info:
            await client.get_identity()
    assert not isinstance(info.value, AgentTimeout)
    assert info.value.agent == "ag9"
    assert f"127.0.0.1:{port}" in info.value.message


async def test_unimplemented_is_agent_failed(host: EmulatedAgentHost) -> None:
    """Talking to something that is not an agent gives AgentFailed."""
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with AgentClient(f"127.0.0.1:{port}") as client:
            with pytest.raises(AgentFailed) as info:
                await client.get_identity()
        assert info.value.code == "UNIMPLEMENTED"
    finally:
        await server.stop(0)


async def test_channel_pool_shares_one_channel_per_address(host: EmulatedAgentHost) -> None:
    async with ChannelPool(timeout=3) as pool:
        a = pool.client(host.address, agent_id="ag1", key=host.key)
        b = pool.client(host.address, key=host.key)
        assert pool.channel(host.address) is pool.channel(host.address)
        assert pool.client(host.address, agent_id="ag1", key=host.key) is a
        assert len(pool) == 1
        assert a.timeout == 3
        await a.close()
        assert (await b.get_identity()).agent_id == "ag1"
        await pool.discard(host.address)
        assert len(pool) == 0


async def test_a_fresh_channel_does_not_inherit_a_dead_agents_backoff() -> None:
    """An agent comes back on the address where connections were refused: the pool's fresh
    channel (what the controller dials when an agent re-registers) reaches it at once, while
    the old channel's connection is still waiting out its reconnect backoff."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address = f"127.0.0.1:{port}"
    plan = AddressPlan(
        mode=AddressMode.PER_MACHINE,
        base_host="127.0.0.1",
        agent_port=port,
        server_port=0,
        rdma_port=0,
    )
    async with ChannelPool(timeout=0.5) as pool:
        for _ in range(4):  # every refused attempt lengthens the old connection's backoff
            with pytest.raises(AgentUnavailable):
                await pool.client(address).get_identity()
            await asyncio.sleep(0.3)
        fleet = AgentFleet(FleetSettings(machines=1, plan=plan, stop_grace=0))
        await fleet.start()
        old = pool.detach(address)
        try:
            fresh = pool.client(address, key=fleet.hosts[0].key)
            assert (await fresh.get_identity()).agent_id == "ag1"
        finally:
            if old is not None:
                await old.close()
            await fleet.stop()
