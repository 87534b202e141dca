"""FleetHealth and FleetConfigurations: one agent process answers for every machine it serves
promptly (heartbeats; what each has configured, for the controller's reconciliation)."""

from __future__ import annotations

import pytest

from vpod.agent.client import ChannelPool, HealthMemo
from vpod.agent.model import Fault, FaultKind, IpuAssignment, PartitionConfig

from .conftest import emulated_fleet

pytestmark = pytest.mark.anyio


async def test_one_call_answers_for_every_machine_of_the_process() -> None:
    """Four machines, one call through the third: four answers, one fleet id, own boot ids."""
    async with emulated_fleet(4, "127.84.0.1") as fleet:
        async with ChannelPool() as pool:
            via = pool.client(fleet.hosts[2].address, key=fleet.hosts[2].key)
            alone = await pool.client(fleet.hosts[0].address, key=fleet.hosts[0].key).health()
            answers = await via.fleet_health([(h.agent_id, 0) for h in fleet.hosts])
        assert [a.agent_id for a in answers] == ["ag1", "ag2", "ag3", "ag4"]
        assert {a.fleet_id for a in answers} == {fleet.roster.fleet_id} == {alone.fleet_id}
        assert len({a.boot_id for a in answers}) == 4
        assert all(a.healthy and len(a.ipus) == 4 for a in answers)


async def test_stopped_hung_slow_and_unknown_machines_are_left_out() -> None:
    """The process speaks only for machines that would answer themselves at once."""
    async with emulated_fleet(4, "127.85.0.1") as fleet:
        async with ChannelPool() as pool:
            await pool.client(fleet.hosts[1].address, key=fleet.hosts[1].key).inject_fault(
                Fault(FaultKind.AGENT_HANG, reason="test")
            )
            await pool.client(fleet.hosts[2].address, key=fleet.hosts[2].key).inject_fault(
                Fault(FaultKind.AGENT_SLOW, delay_s=0.5)
            )
            await fleet.hosts[3].stop(0)
            wanted = [(h.agent_id, 0) for h in fleet.hosts] + [("elsewhere", 0)]
            answers = await pool.client(
                fleet.hosts[0].address, key=fleet.hosts[0].key
            ).fleet_health(wanted, timeout=2)
        assert [a.agent_id for a in answers] == ["ag1"]


async def test_a_hung_machine_still_relays_its_neighbours() -> None:
    """Asked through a hung machine, the process answers for the others (not for it)."""
    async with emulated_fleet(2, "127.86.0.1") as fleet:
        async with ChannelPool() as pool:
            via = pool.client(fleet.hosts[0].address, key=fleet.hosts[0].key)
            await via.inject_fault(Fault(FaultKind.AGENT_HANG, reason="test"))
            answers = await via.fleet_health([("ag1", 0), ("ag2", 0)], timeout=2)
        assert [a.agent_id for a in answers] == ["ag2"]


async def test_events_and_changes_come_through_the_memo() -> None:
    """An unchanged answer is decoded once; a new event or fault is seen at once."""
    memo = HealthMemo()
    async with emulated_fleet(2, "127.87.0.1") as fleet:
        async with ChannelPool() as pool:
            via = pool.client(fleet.hosts[0].address, key=fleet.hosts[0].key)
            wanted = [("ag1", 0), ("ag2", 0)]
            first = await via.fleet_health(wanted, memo=memo)
            again = await via.fleet_health(
                [("ag1", first[0].events.last_event if first[0].events else 0), ("ag2", 0)],
                memo=memo,
            )
            assert again[1] is first[1]
            await pool.client(fleet.hosts[1].address, key=fleet.hosts[1].key).inject_fault(
                Fault(FaultKind.IPU, device_id=2, reason="ECC")
            )
            after = await via.fleet_health(wanted, memo=memo)
        assert not after[1].healthy
        assert after[1].events is not None
        assert after[1].events.events


async def test_one_call_lists_what_every_machine_of_the_process_holds() -> None:
    """Each machine's own configurations, a hung or stopped one left out, in request order."""
    async with emulated_fleet(4, "127.88.0.1") as fleet:
        async with ChannelPool() as pool:
            clients = [pool.client(h.address, key=h.key) for h in fleet.hosts]
            await clients[1].configure_partition(_config("p2"), hosts=["127.0.0.0/8"])
            await clients[3].configure_partition(_config("p4"), hosts=[])
            listed = await clients[0].fleet_configurations(
                ["ag4", "ag2", "ag1", "elsewhere", "ag3"]
            )
            assert list(listed) == ["ag4", "ag2", "ag1", "ag3"]
            assert {a: [c.config.partition_id for c in held] for a, held in listed.items()} == {
                "ag4": ["p4"],
                "ag2": ["p2"],
                "ag1": [],
                "ag3": [],
            }
            assert listed["ag2"][0].allowed_hosts == ("127.0.0.0/8",)
            assert listed["ag2"] == await clients[1].list_configurations()
            await clients[1].inject_fault(Fault(FaultKind.AGENT_HANG, reason="test"))
            await fleet.hosts[3].stop(0)
            left = await clients[0].fleet_configurations(["ag1", "ag2", "ag3", "ag4"], timeout=2)
        assert list(left) == ["ag1", "ag3"]


def _config(partition_id: str) -> PartitionConfig:
    return PartitionConfig(
        partition_id=partition_id, generation=1, ipus=(IpuAssignment(device_id=0, routing_id=0),)
    )
