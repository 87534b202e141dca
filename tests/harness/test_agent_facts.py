"""An agent's IPUoF facts are learnt when it registers, not on the partition path.

Before, the first configure on each machine asked the agent for its identity
and wrote it to the store inside the create: on a pod1024 most creates for a
while paid that, which a pod64 does not (its 16 agents are asked once).
"""

from __future__ import annotations

import pytest

from vpod.controller.caller import SYSTEM
from vpod.domain.entities import Agent

from .pod import Pod

pytestmark = pytest.mark.anyio


async def _register(pod: Pod, agent_id: str) -> None:
    machine = pod.gateway.machines[agent_id]
    number = int(agent_id.removeprefix("ag"))
    await pod.controller.fleet.register(
        Agent(agent_id, "127.0.0.1", 9000 + number), boot_id=machine.boot_id
    )


async def test_registration_records_the_facts_and_creates_ask_for_none(pod: Pod) -> None:
    for agent_id in pod.agent_ids:
        await _register(pod, agent_id)
    asked = sorted(c.agent_id for c in pod.gateway.calls_of("identity"))
    assert asked == sorted(pod.agent_ids)
    recorded = pod.controller.store.ipuof_facts(list(pod.agent_ids))
    assert sorted(recorded) == sorted(pod.agent_ids)
    for agent_id in pod.agent_ids:
        machine = pod.gateway.machines[agent_id]
        assert recorded[agent_id]["agent_id"] == agent_id
        assert recorded[agent_id]["boot_id"] == machine.boot_id

    pod.gateway.calls.clear()
    await pod.create("whole", 16)
    await pod.controller.partitions.remove(SYSTEM, "whole")
    for size in (1, 2, 4, 8):
        await pod.create(f"p{size}", size)
    assert pod.gateway.calls_of("identity") == []
    assert pod.gateway.calls_of("configure")  # the creates did reach the agents


async def test_a_new_boot_is_asked_again_at_its_registration(pod: Pod) -> None:
    await _register(pod, "ag2")
    first = pod.controller.store.ipuof_facts(["ag2"])["ag2"]
    pod.gateway.restart("ag2")
    pod.gateway.calls.clear()
    await _register(pod, "ag2")
    assert [c.agent_id for c in pod.gateway.calls_of("identity")] == ["ag2"]
    again = pod.controller.store.ipuof_facts(["ag2"])["ag2"]
    assert again["boot_id"] == pod.gateway.machines["ag2"].boot_id != first["boot_id"]


async def test_the_same_boot_registering_again_is_not_asked_again(pod: Pod) -> None:
    await _register(pod, "ag3")
    pod.gateway.calls.clear()
    await _register(pod, "ag3")
    assert pod.gateway.calls_of("identity") == []
