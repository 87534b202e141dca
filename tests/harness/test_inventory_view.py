"""A controller's inventory view: checked against the store's inventory version every second
(one row), reloaded only when it moved, so another controller's change is seen within a
second and an unchanged pod of 1,024 agents is not read again every second."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from vpod.controller import errors
from vpod.controller.caller import SYSTEM

from .pod import ALLOCATION, Pod

pytestmark = pytest.mark.anyio


def _count_calls(monkeypatch: pytest.MonkeyPatch, target: object, name: str) -> list[int]:
    calls = [0]
    original: Callable[..., Any] = getattr(target, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, counted)
    return calls


async def test_an_unchanged_inventory_is_checked_not_reloaded(
    pod: Pod, monkeypatch: pytest.MonkeyPatch
) -> None:
    inventory = pod.controller.inventory
    store = pod.controller.ctx.db.store
    await inventory.recent_agents()
    reloads = _count_calls(monkeypatch, store, "list_agents")
    checks = _count_calls(monkeypatch, store, "inventory_version")
    for _ in range(5):
        pod.clock.advance(1.0)
        assert [a.id for a in await inventory.recent_agents()] == list(pod.agent_ids)
    assert (checks[0], reloads[0]) == (5, 0)
    await pod.heartbeat_round()  # heartbeats write health and times: not the inventory
    pod.clock.advance(1.0)
    await inventory.recent_agents()
    assert reloads[0] == 0


async def test_another_controllers_change_is_seen_within_a_second(pod: Pod) -> None:
    inventory = pod.controller.inventory
    assert (await inventory.allocation_for(SYSTEM, ALLOCATION)).id == ALLOCATION
    await pod.replica().inventory.remove_allocation(SYSTEM, ALLOCATION)
    pod.clock.advance(1.0)
    with pytest.raises(errors.NotFound):
        await inventory.allocation_for(SYSTEM, ALLOCATION)
