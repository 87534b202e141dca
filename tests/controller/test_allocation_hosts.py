"""Allocations' IPUoF hosts through the tenancy interface the cloud calls, with real agents.

An in-process controller on SQLite and two emulated machines serving gRPC on
loopback: ``Tenancy.set_allocation_hosts`` (and ``VipuPort``'s forward of it)
persists the hosts and pushes them to the agents of every partition of the
allocation at once; partitions created later get them at configure; an
allocation never given hosts admits the trusted host network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from vpod.agent.addressing import AddressMode, AddressPlan
from vpod.agent.fleet import AgentFleet, FleetSettings
from vpod.cloud.model import errors as cloud_errors
from vpod.cloud.vipu import VipuPort
from vpod.controller import errors
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import Controller, build_controller
from vpod.controller.caller import SYSTEM
from vpod.controller.settings import Settings
from vpod.domain.partitions import PartitionRequirements

TRUSTED = ("127.0.0.1/32",)


@pytest.fixture
def pod(tmp_path: Path) -> Iterator[tuple[Controller, AgentFleet, asyncio.AbstractEventLoop]]:
    loop = asyncio.new_event_loop()
    plan = AddressPlan(
        mode=AddressMode.PER_MACHINE,
        base_host="127.91.0.1",
        agent_port=0,
        server_port=0,
        rdma_port=0,
    )
    fleet = AgentFleet(FleetSettings(machines=2, plan=plan, stop_grace=0))

    async def start() -> Controller:
        await fleet.start()
        built = build_controller(
            Settings(data_dir=tmp_path, trusted_hosts=TRUSTED), GrpcAgentGateway()
        )
        for host in fleet.hosts:
            await built.inventory.create_agent(
                SYSTEM, host.agent_id, host.host, host.port, key=host.key
            )
        await built.inventory.create_cluster(SYSTEM, "pod", [h.agent_id for h in fleet.hosts])
        await built.inventory.create_allocation(SYSTEM, "vpod-c1", "pod", agent_ids=["ag1"])
        await built.inventory.create_allocation(SYSTEM, "vpod-c2", "pod", agent_ids=["ag2"])
        return built

    controller = loop.run_until_complete(start())
    yield controller, fleet, loop
    loop.run_until_complete(controller.ctx.gateway.close())
    loop.run_until_complete(fleet.stop())
    controller.close()
    loop.close()


async def _partition(controller: Controller, pid: str, allocation: str) -> None:
    await controller.partitions.create(
        SYSTEM, PartitionRequirements(id=pid, size=4, allocation_id=allocation)
    )


def test_hosts_reach_live_and_later_partitions_and_default_to_the_trusted_hosts(
    pod: tuple[Controller, AgentFleet, asyncio.AbstractEventLoop],
) -> None:
    controller, fleet, loop = pod
    ag1, ag2 = fleet.hosts
    tenancy = controller.tenancy

    async def scenario() -> None:
        await _partition(controller, "p1", "vpod-c1")
        await _partition(controller, "p2", "vpod-c2")
        assert ag1.access.hosts("p1") == TRUSTED  # never set: the trusted host network
        await tenancy.set_allocation_hosts("vpod-c1", ["10.0.0.5", "10.1.0.0/16"])
        await tenancy.set_allocation_hosts("vpod-c1", ["10.0.0.5", "10.1.0.0/16"])  # again
        assert ag1.access.hosts("p1") == ("10.0.0.5/32", "10.1.0.0/16")
        assert ag2.access.hosts("p2") == TRUSTED  # another allocation: untouched
        assert ag1.access.allows("p1", "10.1.2.3")
        assert not ag1.access.allows("p1", "127.0.0.1")
        stored = await tenancy.find_allocation("vpod-c1")
        assert stored is not None
        assert stored.hosts == ("10.0.0.5/32", "10.1.0.0/16")
        await controller.partitions.remove(SYSTEM, "p1")
        await _partition(controller, "p3", "vpod-c1")  # created later: gets them at configure
        assert ag1.access.hosts("p3") == ("10.0.0.5/32", "10.1.0.0/16")
        await tenancy.set_allocation_hosts("vpod-c1", [])  # back to the trusted hosts
        assert ag1.access.hosts("p3") == TRUSTED

    loop.run_until_complete(scenario())


def test_bad_or_unknown_allocations_are_refused_with_a_sentence(
    pod: tuple[Controller, AgentFleet, asyncio.AbstractEventLoop],
) -> None:
    controller, _, loop = pod
    port = VipuPort(controller.tenancy, ["pod"])

    async def scenario() -> None:
        with pytest.raises(errors.InvalidArgument, match="not an IP address or CIDR"):
            await controller.tenancy.set_allocation_hosts("vpod-c1", ["server-1"])
        with pytest.raises(errors.NotFound, match="allocation nowhere does not exist"):
            await controller.tenancy.set_allocation_hosts("nowhere", ["10.0.0.1"])
        with pytest.raises(cloud_errors.InvalidArgument):
            await port.set_allocation_hosts("vpod-c1", ["10.0.0.0/33"])
        with pytest.raises(cloud_errors.NotFound):
            await port.set_allocation_hosts("nowhere", ["10.0.0.1"])
        await port.set_allocation_hosts("vpod-c2", ["192.168.7.0/24"])
        listed = {a.id: a.hosts for a in await controller.inventory.list_allocations()}
        assert listed == {"vpod-c1": (), "vpod-c2": ("192.168.7.0/24",)}

    loop.run_until_complete(scenario())
