"""Fixtures for agent tests: in-process agents on loopback with ephemeral ports.

Every listener uses port 0, so these tests never collide with each other or
with anything else on the host.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from vpod.agent.addressing import AddressMode, AddressPlan
from vpod.agent.client import AgentClient
from vpod.agent.fleet import AgentFleet, EmulatedAgentHost, FleetSettings


def ephemeral_plan(
    base: str = "127.0.0.1", mode: AddressMode = AddressMode.PER_MACHINE
) -> AddressPlan:
    """Addresses from ``base``, every port chosen by the kernel."""
    return AddressPlan(mode=mode, base_host=base, agent_port=0, server_port=0, rdma_port=0)


@asynccontextmanager
async def emulated_fleet(machines: int, first_address: str) -> AsyncIterator[AgentFleet]:
    """One agent process emulating ``machines`` machines from ``first_address``, fault
    injection on, stopped on the way out."""
    fleet = AgentFleet(
        FleetSettings(
            machines=machines,
            plan=ephemeral_plan(first_address),
            stop_grace=0,
            fault_injection=True,
        )
    )
    await fleet.start()
    try:
        yield fleet
    finally:
        await fleet.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def fleet() -> AsyncIterator[AgentFleet]:
    """One running Bow-2000 agent ``ag1`` that accepts fault injection."""
    running = AgentFleet(
        FleetSettings(machines=1, plan=ephemeral_plan(), stop_grace=0, fault_injection=True)
    )
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


@pytest.fixture
def host(fleet: AgentFleet) -> EmulatedAgentHost:
    return fleet.hosts[0]


@pytest.fixture
async def agent(host: EmulatedAgentHost) -> AsyncIterator[AgentClient]:
    """A client of ``ag1`` with a short default timeout, presenting the agent's key."""
    client = AgentClient(host.address, agent_id=host.agent_id, timeout=5.0, key=host.key)
    try:
        yield client
    finally:
        await client.close()
