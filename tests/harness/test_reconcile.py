"""The leader's reconciliation reads the machines an agent process hosts in one call.

A pod4096 in one ``vipu-agent`` process is 1,024 machines: one
``ListConfigurations`` each every round was 1,024 calls to one process. Groups
of machines sharing a process (learnt from heartbeats) are read with one
``FleetConfigurations``; a machine the process leaves out is asked alone, and a
process that fails the call fails its machines for this round only.
"""

from __future__ import annotations

import pytest

from vpod.controller.caller import SYSTEM
from vpod.domain.entities import Agent

from .gateway import unavailable
from .pod import Pod

pytestmark = pytest.mark.anyio


async def _stray_on_ag2(pod: Pod) -> dict[str, Agent]:
    """Leave ``stays`` configured on ag2 only (the store forgot it: a forced remove), forget
    the calls made so far, and return the pod's agents by id."""
    await pod.create("stays", 8)
    pod.gateway.on("release", "ag2", fail=unavailable)
    await pod.controller.partitions.remove(SYSTEM, "stays", force=True)
    assert pod.gateway.holders_of("stays") == ["ag2"]
    pod.gateway.calls.clear()
    return {a.id: a for a in await pod.controller.inventory.list_agents()}


async def test_one_call_reads_a_process_and_the_reconciliation_converges(pod: Pod) -> None:
    by_id = await _stray_on_ag2(pod)
    failed = await pod.controller.fleet.reconcile_all(
        list(by_id.values()), [[by_id["ag3"], by_id["ag1"], by_id["ag2"], by_id["ag4"]]]
    )
    assert failed == {}
    assert [c.agent_id for c in pod.gateway.calls_of("fleet_configurations")] == ["ag3"]
    assert pod.gateway.calls_of("configurations") == []
    assert pod.gateway.holders_of("stays") == []
    assert pod.disagreements() == []


async def test_agents_outside_every_group_are_read_alone(pod: Pod) -> None:
    by_id = await _stray_on_ag2(pod)
    # ag4 is in no group; a group of one, and members not being reconciled, are no group.
    failed = await pod.controller.fleet.reconcile_all(
        [a for a in by_id.values() if a.id != "ag3"],
        [[by_id["ag1"], by_id["ag2"]], [by_id["ag3"]]],
    )
    assert failed == {}
    assert [c.agent_id for c in pod.gateway.calls_of("fleet_configurations")] == ["ag1"]
    assert [c.agent_id for c in pod.gateway.calls_of("configurations")] == ["ag4"]
    assert pod.gateway.holders_of("stays") == []


async def test_a_process_that_fails_the_call_fails_its_machines_this_round(pod: Pod) -> None:
    agents = list((await _stray_on_ag2(pod)).values())
    group = sorted(agents, key=lambda a: a.id)
    pod.gateway.on("fleet_configurations", "ag1", fail=unavailable, times=1)
    failed = await pod.controller.fleet.reconcile_all(agents, [group])
    assert sorted(failed) == ["ag1", "ag2", "ag3", "ag4"]
    assert {exc.agent for exc in failed.values()} == {"ag1"}  # the process asked
    assert pod.gateway.calls_of("configurations") == []
    assert pod.gateway.holders_of("stays") == ["ag2"]  # nothing was changed on a guess
    assert await pod.controller.fleet.reconcile_all(agents, [group]) == {}
    assert pod.gateway.holders_of("stays") == []


async def test_only_agents_out_of_step_get_a_call_beyond_the_reading(pod: Pod) -> None:
    # Every round reads the whole fleet; only the agents out of step are called again.
    by_id = await _stray_on_ag2(pod)
    agents = list(by_id.values())
    assert await pod.controller.fleet.reconcile_all(agents) == {}
    changing = [(c.op, c.agent_id) for c in pod.gateway.calls if c.op != "configurations"]
    assert changing == [("release", "ag2")]
    pod.gateway.calls.clear()
    assert await pod.controller.fleet.reconcile_all(agents, [agents]) == {}
    assert [c.op for c in pod.gateway.calls] == ["fleet_configurations"]
    assert pod.disagreements() == []
