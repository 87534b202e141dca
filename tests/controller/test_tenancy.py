"""The tenancy use-cases the cloud calls: idempotent, and every change seen at once.

An in-process secure controller on SQLite with a fake clock; agents are
registered in the inventory (allocations are placed on the store's facts,
no agent is dialled).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vpod.controller import errors
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import Controller, build_controller
from vpod.controller.caller import SYSTEM
from vpod.controller.clock import FakeClock
from vpod.controller.settings import Settings
from vpod.controller.tenancy import NoAllocationFits

MACHINES = 4
"""Bow-2000s in cluster ``pod``: 16 IPUs."""


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    built = build_controller(
        Settings(data_dir=tmp_path, secure=True),
        GrpcAgentGateway(),
        clock=FakeClock(datetime(2026, 1, 1, tzinfo=UTC)),
    )

    async def pod() -> None:
        ids = [f"ag{n}" for n in range(1, MACHINES + 1)]
        for n, agent_id in enumerate(ids, start=1):
            await built.inventory.create_agent(SYSTEM, agent_id, f"127.0.9.{n}", 8092)
        await built.inventory.create_cluster(SYSTEM, "pod", ids)

    asyncio.run(pod())
    yield built
    built.close()


def test_allocations_come_from_the_first_cluster_with_room_and_once(
    controller: Controller,
) -> None:
    """ensure_allocation skips clusters that do not exist, creates once, returns it again;
    capacity counts what still fits, one allocation after another."""
    tenancy = controller.tenancy

    async def scenario() -> None:
        assert await tenancy.allocation_capacity(8, ["pod"]) == 2
        first = await tenancy.ensure_allocation(SYSTEM, "t1", 8, ["nowhere", "pod"])
        assert (first.cluster_id, first.size) == ("pod", 8)
        assert await tenancy.ensure_allocation(SYSTEM, "t1", 8, ["pod"]) == first
        assert await tenancy.allocation_capacity(8, ["pod", "nowhere"]) == 1
        assert await tenancy.allocation_capacity(4, ["pod"], limit=1) == 1
        await tenancy.ensure_allocation(SYSTEM, "t2", 8, ["pod"])
        with pytest.raises(NoAllocationFits) as refused:
            await tenancy.ensure_allocation(SYSTEM, "t3", 8, ["pod"])
        assert refused.value.size == 8
        assert [r.split(":")[0] for r in refused.value.reasons] == [
            "allocation t3 does not fit in cluster pod"
        ]
        await tenancy.remove_allocation(SYSTEM, "t2")
        await tenancy.remove_allocation(SYSTEM, "t2")  # gone already: nothing to do
        assert await tenancy.find_allocation("t2") is None
        assert await tenancy.allocation_capacity(8, ["pod"]) == 1

    asyncio.run(scenario())


def test_grants_revokes_and_new_keys_take_effect_at_once(controller: Controller) -> None:
    """A user whose verification the controller remembers sees a grant or a revoke on its next
    call, and a rotated key stops the old one at once; each change is audited."""
    tenancy, auth = controller.tenancy, controller.auth

    async def scenario() -> None:
        await tenancy.ensure_allocation(SYSTEM, "a1", 4, ["pod"])
        await tenancy.ensure_allocation(SYSTEM, "a2", 4, ["pod"])
        key = await tenancy.ensure_user(SYSTEM, "vpod-x", "a1")
        assert key is not None
        assert await tenancy.ensure_user(SYSTEM, "vpod-x", "a1") is None  # exists: key kept

        async def allocations(access_key: str) -> frozenset[str] | None:
            caller = await auth.caller("vpod-x", access_key, source="test", admin=False)
            return caller.allocation_ids

        assert await allocations(key) == {"a1"}
        await tenancy.grant(SYSTEM, "vpod-x", "a2")
        assert await allocations(key) == {"a1", "a2"}
        await tenancy.revoke(SYSTEM, "vpod-x", "a1")
        assert await allocations(key) == {"a2"}
        new_key = await tenancy.rotate_key(SYSTEM, "vpod-x")
        with pytest.raises(errors.Unauthenticated):
            await allocations(key)
        assert await allocations(new_key) == {"a2"}
        await tenancy.remove_user(SYSTEM, "vpod-x")
        await tenancy.remove_user(SYSTEM, "vpod-x")  # gone already: nothing to do
        await tenancy.revoke(SYSTEM, "vpod-x", "a2")  # likewise
        assert not await tenancy.user_exists("vpod-x")

    asyncio.run(scenario())
    audited = [
        (e.action, e.target, e.detail)
        for e in reversed(controller.store.list_events(actor=SYSTEM.user_id))
        if e.action in ("grant_allocation", "revoke_allocation", "rotate_key")
    ]
    assert audited == [
        ("grant_allocation", "vpod-x", "a1"),  # the repeated ensure_user
        ("grant_allocation", "vpod-x", "a2"),
        ("revoke_allocation", "vpod-x", "a1"),
        ("rotate_key", "vpod-x", ""),
    ]


def test_an_allocation_with_no_partitions_lists_none_and_a_gone_one_too(
    controller: Controller,
) -> None:
    tenancy = controller.tenancy

    async def scenario() -> None:
        await tenancy.ensure_allocation(SYSTEM, "empty", 4, ["pod"])
        assert await tenancy.partitions(SYSTEM, "empty") == []
        assert await tenancy.partitions(SYSTEM, "never-made") == []
        await tenancy.remove_partition(SYSTEM, "never-made")  # gone: nothing to do

    asyncio.run(scenario())
