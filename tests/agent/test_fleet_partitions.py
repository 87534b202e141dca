"""FleetConfigurePartition and FleetReleasePartition: one agent process configures and
releases a partition on every machine it serves promptly, each machine answering for itself;
and the controller's gRPC gateway asks that way once it heard the machines' heartbeats."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from vpod.agent import convert
from vpod.agent.client import AgentClient, ChannelPool
from vpod.agent.errors import AgentRefused, AgentUnavailable, Reason
from vpod.agent.fleet import AgentFleet
from vpod.agent.model import (
    ConfiguredPartition,
    ConfigureOutcome,
    Fault,
    FaultKind,
    IpuAssignment,
    PartitionConfig,
)
from vpod.agent.roster import FleetRoster
from vpod.agent.service import AgentService
from vpod.controller import agent_grpc
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.domain.entities import Agent
from vpod.wire import agent_pb2 as pb

from .conftest import emulated_fleet

pytestmark = pytest.mark.anyio


def _config(partition_id: str, devices: tuple[int, ...] = (0, 1)) -> PartitionConfig:
    ipus = tuple(IpuAssignment(device_id=d, routing_id=r) for r, d in enumerate(devices))
    return PartitionConfig(partition_id, 1, ipus)


def _agents(fleet: AgentFleet) -> list[Agent]:
    return [Agent(id=h.agent_id, host=h.host, port=h.port, key=h.key) for h in fleet.hosts]


async def test_one_call_configures_and_releases_every_machine_each_answering_for_itself() -> None:
    """Three machines in one call: two configured; the third refuses as its single call
    would have (its IPU is another partition's: FAILED_PRECONDITION, ipu-busy, the
    sentence); released in one call, a second release says it was not configured."""
    async with emulated_fleet(3, "127.92.0.1") as fleet, ChannelPool() as pool:
        ag1, ag2, ag3 = (pool.client(h.address, key=h.key) for h in fleet.hosts)
        await ag3.configure_partition(_config("other", (1,)))
        answers = await ag1.fleet_configure(
            {"ag1": _config("p"), "ag2": _config("p"), "ag3": _config("p")},
            hosts=("127.0.0.0/8",),
        )
        assert list(answers) == ["ag1", "ag2", "ag3"]
        assert answers["ag1"] is None
        assert answers["ag2"] is None
        refusal = answers["ag3"]
        assert isinstance(refusal, AgentRefused)
        assert (refusal.agent, refusal.code, refusal.reason) == (
            "ag3",
            "FAILED_PRECONDITION",
            Reason.IPU_BUSY,
        )
        assert "other" in refusal.message
        for client in (ag1, ag2):
            (held,) = await client.list_configurations()
            assert (held.config.partition_id, held.allowed_hosts) == ("p", ("127.0.0.0/8",))
        assert [c.config.partition_id for c in await ag3.list_configurations()] == ["other"]
        assert await ag2.fleet_release(["ag1", "ag2"], "p") == {"ag1": True, "ag2": True}
        assert await ag2.fleet_release(["ag1", "ag2"], "p") == {"ag1": False, "ag2": False}
        assert await ag1.list_configurations() == []


async def test_hung_slow_stopped_and_unknown_machines_are_left_out() -> None:
    """The process speaks only for machines that would answer themselves at once, even when
    asked through a hung one; it configures nothing on the others."""
    async with emulated_fleet(4, "127.93.0.1") as fleet, ChannelPool() as pool:
        clients = [pool.client(h.address, key=h.key) for h in fleet.hosts]
        await clients[0].inject_fault(Fault(FaultKind.AGENT_HANG, reason="test"))
        await clients[1].inject_fault(Fault(FaultKind.AGENT_SLOW, delay_s=0.5))
        await fleet.hosts[3].stop(0)
        wanted = {a: _config("p") for a in ("ag1", "ag2", "ag3", "ag4", "elsewhere")}
        answers = await clients[0].fleet_configure(wanted, timeout=2)
        assert answers == {"ag3": None}
        released = await clients[0].fleet_release(list(wanted), "p", timeout=2)
        assert released == {"ag3": True}


def _count_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The agent client's partition calls, by name, as the gateway makes them."""
    made: list[str] = []
    for name in (
        "configure_partition_changed",
        "release_partition",
        "fleet_configure",
        "fleet_release",
    ):
        real = getattr(AgentClient, name)

        async def counted(
            self: AgentClient, *args: Any, _real: Any = real, _n: str = name, **kwargs: Any
        ) -> Any:
            made.append(_n)
            return await _real(self, *args, **kwargs)

        monkeypatch.setattr(AgentClient, name, counted)
    return made


async def test_the_gateway_asks_each_process_once_after_the_heartbeats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before a heartbeat the gateway knows no processes and asks each machine alone; after
    one, a partition on two machines of one process is one call each way; a machine whose
    own port is gone is asked alone and fails alone."""
    async with emulated_fleet(3, "127.94.0.1") as fleet:
        gateway = GrpcAgentGateway()
        agents = _agents(fleet)
        two = agents[:2]
        configs = {a.id: _config("p") for a in two}
        made = _count_calls(monkeypatch)
        try:
            assert await gateway.configure_all(two, configs, hosts=(), timeout=5) == (
                {"ag1": None, "ag2": None},
                {},
            )
            assert sorted(made) == ["configure_partition_changed"] * 2
            await gateway.fleet_health(agents[0], [(a.id, 0) for a in agents], timeout=5)
            made.clear()
            assert await gateway.release_all(two, "p", timeout=5) == (
                {"ag1": None, "ag2": None},
                {},
            )
            assert await gateway.configure_all(two, configs, hosts=(), timeout=5) == (
                {"ag1": None, "ag2": None},
                {},
            )
            assert made == ["fleet_release", "fleet_configure"]
            for host in fleet.hosts:
                held = [c.config.partition_id for c in await host.backend.configurations()]
                assert held == (["p"] if host.agent_id in configs else [])
            await fleet.hosts[0].stop(0)
            made.clear()
            done, failed = await gateway.release_all(two, "p", timeout=5)
            assert list(done) == ["ag2"]
            assert isinstance(failed["ag1"], AgentUnavailable)
            assert made[0] == "fleet_release"  # through ag1's port: gone, so each alone
            assert sorted(made[1:]) == ["release_partition"] * 2
        finally:
            await gateway.close()


async def test_every_partition_call_to_a_process_goes_through_its_heartbeat_member(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once the heartbeats went through ag1, partitions on any machines of the process, one
    machine alone included, are configured and released through ag1's address (one
    connection for the whole process), each machine answering for itself; when ag1's port
    is gone, each machine is asked alone at its own address until a heartbeat is answered
    again, and then through the member that heartbeat went through."""
    async with emulated_fleet(4, "127.96.0.1") as fleet:
        gateway = GrpcAgentGateway()
        agents = _agents(fleet)
        address = {a.id: a.address for a in agents}
        made: list[tuple[str, str]] = []
        for name in ("configure_partition_changed", "release_partition"):
            _record(monkeypatch, name, made)
        for name in ("fleet_configure", "fleet_release"):
            _record(monkeypatch, name, made)
        try:
            await gateway.fleet_health(agents[0], [(a.id, 0) for a in agents], timeout=5)
            for members, devices in (
                ([agents[2]], (0,)),
                (agents[1:3], (2, 3)),
                ([agents[3]], (0,)),
            ):
                configs = {a.id: _config(f"p{members[0].id}", devices) for a in members}
                done, failed = await gateway.configure_all(members, configs, hosts=(), timeout=5)
                assert (sorted(done), failed) == (sorted(configs), {})
            for host in fleet.hosts[1:]:
                held = [c.config.partition_id for c in await host.backend.configurations()]
                assert held, host.agent_id
            assert {at for _, at in made} == {address["ag1"]}
            assert [n for n, _ in made] == ["fleet_configure"] * 3
            await fleet.hosts[0].stop(0)
            made.clear()
            done, failed = await gateway.release_all([agents[3]], "pag4", timeout=5)
            assert (list(done), failed) == (["ag4"], {})
            assert made == [
                ("fleet_release", address["ag1"]),
                ("release_partition", address["ag4"]),
            ]
            await gateway.health(agents[1], timeout=5)  # ag2 answers alone: ask through it
            made.clear()
            done, failed = await gateway.release_all([agents[2]], "pag3", timeout=5)
            assert (list(done), failed) == (["ag3"], {})
            assert made == [("fleet_release", address["ag2"])]
        finally:
            await gateway.close()


def _record(monkeypatch: pytest.MonkeyPatch, name: str, made: list[tuple[str, str]]) -> None:
    """Record each call of the agent client's method ``name`` with the address it went to."""
    real = getattr(AgentClient, name)

    async def recorded(self: AgentClient, *args: Any, **kwargs: Any) -> Any:
        made.append((name, self.address))
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(AgentClient, name, recorded)


async def test_a_process_s_machines_are_asked_a_bounded_number_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At most ``MACHINES_PER_CALL`` machines a fleet call (each call has its own deadline):
    three machines two at a time are two calls, and all three are configured."""
    monkeypatch.setattr(agent_grpc, "MACHINES_PER_CALL", 2)
    async with emulated_fleet(3, "127.95.0.1") as fleet:
        gateway = GrpcAgentGateway()
        agents = _agents(fleet)
        made = _count_calls(monkeypatch)
        try:
            await gateway.fleet_health(agents[0], [(a.id, 0) for a in agents], timeout=5)
            configs = {a.id: _config("p") for a in agents}
            done, failed = await gateway.configure_all(agents, configs, hosts=(), timeout=5)
            assert (sorted(done), failed) == (["ag1", "ag2", "ag3"], {})
            assert made == ["fleet_configure", "fleet_configure"]
        finally:
            await gateway.close()


class _WaitingMachine:
    """A machine whose configure waits until every machine of the call has started its own:
    a backend that waits on hardware, as far as a fleet call can tell."""

    def __init__(self, agent_id: str, started: list[str], everyone: asyncio.Event) -> None:
        self.agent_id = agent_id
        self._started = started
        self._everyone = everyone

    @property
    def answers_promptly(self) -> bool:
        return True

    async def configure(self, config: PartitionConfig) -> ConfigureOutcome:
        self._started.append(self.agent_id)
        if len(self._started) == 2:
            self._everyone.set()
        await self._everyone.wait()
        return ConfigureOutcome(ConfiguredPartition(config), changed=True)

    async def attachments(self) -> list[object]:
        return []


async def _fleet_configure_of_two(*, in_memory: bool) -> pb.FleetPartitionReply:
    started: list[str] = []
    everyone = asyncio.Event()
    roster = FleetRoster(in_memory=in_memory)
    services = {}
    for agent_id in ("ag1", "ag2"):
        machine = _WaitingMachine(agent_id, started, everyone)
        services[agent_id] = AgentService(machine, roster)  # type: ignore[arg-type]
        roster.join(agent_id, services[agent_id])
    request = pb.FleetConfigurePartitionRequest(
        machines=[
            pb.MachineConfigure(
                agent_id=a,
                request=pb.ConfigurePartitionRequest(config=convert.config_to_wire(_config("p"))),
            )
            for a in ("ag1", "ag2")
        ]
    )
    call = services["ag1"].FleetConfigurePartition(request, None)  # type: ignore[arg-type]
    return await asyncio.wait_for(call, timeout=2)


async def test_the_parts_of_machines_that_may_wait_run_side_by_side() -> None:
    """A process whose machines may wait on their hardware runs their parts of a fleet call
    side by side: two machines that each wait for the other to start both finish. A fleet of
    emulated machines (``in_memory``) runs them one after another, which those two could not
    survive: its parts never wait."""
    reply = await _fleet_configure_of_two(in_memory=False)
    assert [(m.agent_id, m.configured.changed) for m in reply.machines] == [
        ("ag1", True),
        ("ag2", True),
    ]
    with pytest.raises(TimeoutError):
        await _fleet_configure_of_two(in_memory=True)
