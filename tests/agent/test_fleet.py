"""Many emulated machines in one process, each on its own address; registration."""

from __future__ import annotations

import asyncio
import dataclasses
import socket

import grpc
import pytest

from vpod.agent.addressing import AddressMode
from vpod.agent.client import ChannelPool
from vpod.agent.fleet import AgentFleet, AgentStartError, FleetSettings
from vpod.agent.registration import Backoff, register_until_answered
from vpod.domain.catalog import MachineType
from vpod.wire import admin_pb2, admin_pb2_grpc

from .conftest import ephemeral_plan

pytestmark = pytest.mark.anyio


async def test_many_machines_each_on_its_own_address() -> None:
    """Eight agents from base 127.83.0.1 listen on 127.83.0.1..8 with distinct identities."""
    fleet = AgentFleet(
        FleetSettings(
            machines=8,
            id_prefix="m",
            machine_type=MachineType.M2000,
            plan=ephemeral_plan("127.83.0.1"),
            stop_grace=0,
        )
    )
    await fleet.start()
    try:
        async with ChannelPool() as pool:
            idents = await asyncio.gather(
                *(pool.client(h.address, key=h.key).get_identity() for h in fleet.hosts)
            )
        assert [i.agent_id for i in idents] == [f"m{n}" for n in range(1, 9)]
        assert [i.management_address.rsplit(":", 1)[0] for i in idents] == [
            f"127.83.0.{n}" for n in range(1, 9)
        ]
        assert [i.ipuof_address for i in idents] == [f"127.83.0.{n}" for n in range(1, 9)]
        assert len({i.serial for i in idents}) == 8
        assert all(i.machine_type is MachineType.M2000 for i in idents)
        line = fleet.ready_line()
        assert line.startswith("vipu-agent ready: m1=127.83.0.1:")
        assert line.count("=") == 8
    finally:
        await fleet.stop()


async def test_shared_address_mode_runs_machines_side_by_side() -> None:
    fleet = AgentFleet(
        FleetSettings(machines=3, plan=ephemeral_plan(mode=AddressMode.SHARED), stop_grace=0)
    )
    await fleet.start()
    try:
        assert {h.host for h in fleet.hosts} == {"127.0.0.1"}
        assert len({h.port for h in fleet.hosts}) == 3
        assert fleet.host("ag2").machine.identity().agent_id == "ag2"
    finally:
        await fleet.stop()


async def test_taken_port_fails_with_a_sentence(fleet: AgentFleet) -> None:
    """A second agent on a taken address:port refuses to start instead of sharing the port."""
    taken = fleet.hosts[0]
    plan = dataclasses.replace(ephemeral_plan(taken.host), agent_port=taken.port)
    clash = AgentFleet(FleetSettings(agent_ids=("other",), plan=plan))
    with pytest.raises(AgentStartError, match=f"cannot listen on {taken.address}"):
        await clash.start()
    await clash.stop()


def test_duplicate_agent_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        AgentFleet(FleetSettings(agent_ids=("a", "a"), plan=ephemeral_plan()))


class FakeController(admin_pb2_grpc.AgentRegistrationServiceServicer):
    """Records registrations and answers every one."""

    def __init__(self, expected: int) -> None:
        self.requests: list[admin_pb2.RegisterAgentRequest] = []
        self.expected = expected
        self.done = asyncio.Event()

    async def RegisterAgent(
        self, request: admin_pb2.RegisterAgentRequest, context: grpc.aio.ServicerContext
    ) -> admin_pb2.RegisterAgentReply:
        self.requests.append(request)
        if len(self.requests) >= self.expected:
            self.done.set()
        return admin_pb2.RegisterAgentReply(known=False, message="discovered")


async def start_controller(fake: FakeController, port: int = 0) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    admin_pb2_grpc.add_AgentRegistrationServiceServicer_to_server(fake, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, bound


async def test_agents_register_with_the_controller() -> None:
    """With --register each agent announces its id, address and identity once."""
    fake = FakeController(expected=2)
    server, port = await start_controller(fake)
    fleet = AgentFleet(
        FleetSettings(
            machines=2,
            plan=ephemeral_plan("127.84.0.1"),
            register=f"127.0.0.1:{port}",
            stop_grace=0,
        )
    )
    await fleet.start()
    try:
        await asyncio.wait_for(fake.done.wait(), timeout=10)
        got = sorted(fake.requests, key=lambda r: r.agent_id)
        assert [(r.agent_id, r.host) for r in got] == [("ag1", "127.84.0.1"), ("ag2", "127.84.0.2")]
        assert [r.port for r in got] == [h.port for h in fleet.hosts]
        assert got[0].serial == fleet.hosts[0].machine.identity().serial
        assert got[0].machine_type == "Bow-2000"
        assert got[0].boot_id
        assert [r.agent_key for r in got] == [h.key for h in fleet.hosts]
        assert got[0].agent_key != got[1].agent_key  # a key of its own per machine
    finally:
        await fleet.stop()
        await server.stop(0)


async def test_registration_retries_until_the_controller_is_up() -> None:
    """No controller yet: the agent backs off (0.5 s, 1 s, ...) and registers once it starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    fake = FakeController(expected=1)
    delays: list[float] = []
    servers: list[grpc.aio.Server] = []

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) == 2:
            server, _ = await start_controller(fake, port)
            servers.append(server)

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = await register_until_answered(
            channel,
            admin_pb2.RegisterAgentRequest(agent_id="ag1"),
            target=f"127.0.0.1:{port}",
            backoff=Backoff(initial=0.5, factor=2.0, maximum=30, jitter=0.0),
            timeout=5,
            sleep=fake_sleep,
        )
    try:
        assert reply.message == "discovered"
        assert delays[:2] == [0.5, 1.0]
        assert [r.agent_id for r in fake.requests] == ["ag1"]
    finally:
        for server in servers:
            await server.stop(0)


def test_backoff_is_capped_and_jittered() -> None:
    delays = Backoff(initial=1, factor=3, maximum=5, jitter=0.5).delays(lambda: 1.0)
    assert [next(delays) for _ in range(4)] == [1.5, 4.5, 7.5, 7.5]
