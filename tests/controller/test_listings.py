"""What the listing use-case shows, and to whom (the one rule the gRPC and REST APIs share).

A real controller on SQLite; agents, clusters and allocations are created
through the inventory (none of that contacts an agent).
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
from vpod.controller.caller import SYSTEM, Caller
from vpod.controller.clock import FakeClock
from vpod.controller.listings import AllocationRow
from vpod.controller.settings import Settings


def _controller(data_dir: Path, *, secure: bool) -> Controller:
    controller = build_controller(
        Settings(data_dir=data_dir, secure=secure),
        GrpcAgentGateway(),
        clock=FakeClock(datetime(2026, 1, 1, tzinfo=UTC)),
    )

    async def populate() -> None:
        inventory = controller.inventory
        for n in range(1, 5):
            await inventory.create_agent(SYSTEM, f"ag{n}", "127.0.0.1", 9000 + n)
        await inventory.create_cluster(SYSTEM, "pod", ["ag1", "ag2", "ag3", "ag4"])
        await inventory.create_allocation(SYSTEM, "alloc-a", "pod", agent_ids=["ag1", "ag2"])
        await inventory.create_allocation(SYSTEM, "alloc-b", "pod", agent_ids=["ag3"])
        await inventory.create_user(SYSTEM, "ann", ["alloc-a"])
        await inventory.create_user(SYSTEM, "bob", ["alloc-a", "alloc-b"])

    asyncio.run(populate())
    return controller


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[Controller]:
    controller = _controller(tmp_path, secure=True)
    yield controller
    controller.close()


@pytest.fixture
def open_mode(tmp_path: Path) -> Iterator[Controller]:
    controller = _controller(tmp_path, secure=False)
    yield controller
    controller.close()


ANN = Caller(user_id="ann", allocation_ids=frozenset({"alloc-a"}))
ADMIN = Caller(user_id="root", admin=True)


def test_a_user_sees_only_the_allocations_granted_and_not_who_shares_them(
    secure: Controller,
) -> None:
    rows = asyncio.run(secure.listings.allocations(ANN))
    assert [(r.allocation.id, r.user_ids, r.num_partitions) for r in rows] == [("alloc-a", (), 0)]
    assert rows[0].cluster is not None
    assert rows[0].allocation.agent_ids(rows[0].cluster) == ("ag1", "ag2")


def test_an_admin_sees_every_allocation_with_its_users(secure: Controller) -> None:
    rows = asyncio.run(secure.listings.allocations(ADMIN))
    assert [(r.allocation.id, r.user_ids) for r in rows] == [
        ("alloc-a", ("ann", "bob")),
        ("alloc-b", ("bob",)),
    ]
    assert asyncio.run(secure.listings.allocations(ADMIN, "elsewhere")) == []


def test_in_open_mode_everyone_sees_the_users(open_mode: Controller) -> None:
    anonymous = Caller(user_id="anonymous")
    rows = asyncio.run(open_mode.listings.allocations(anonymous))
    assert [(r.allocation.id, r.user_ids) for r in rows] == [
        ("alloc-a", ("ann", "bob")),
        ("alloc-b", ("bob",)),
    ]


def test_agents_carry_their_cluster_and_allocation(secure: Controller) -> None:
    rows = asyncio.run(secure.listings.agents())
    assert [(r.agent.id, r.cluster_id, r.allocation_id) for r in rows] == [
        ("ag1", "pod", "alloc-a"),
        ("ag2", "pod", "alloc-a"),
        ("ag3", "pod", "alloc-b"),
        ("ag4", "pod", ""),
    ]
    assert [r.agent.id for r in asyncio.run(secure.listings.agents("nowhere"))] == []


def test_a_user_listing_partitions_of_an_allocation_not_theirs_is_told_not_found(
    secure: Controller,
) -> None:
    with pytest.raises(errors.NotFound, match="alloc-b does not exist or is not granted"):
        asyncio.run(secure.listings.partitions(ANN, allocation_id="alloc-b"))
    assert asyncio.run(secure.listings.partitions(ANN)) == []


def test_a_new_allocation_row_shows_it_in_its_cluster_with_no_users_or_partitions(
    secure: Controller,
) -> None:
    """The row both admin APIs answer a creation with: the same as the listing shows then."""

    async def create_and_list() -> tuple[AllocationRow, list[AllocationRow]]:
        made = await secure.inventory.create_allocation(SYSTEM, "alloc-c", "pod", agent_ids=["ag4"])
        new = await secure.listings.new_allocation(made)
        listed = [r for r in await secure.listings.allocations(ADMIN) if r.allocation.id == made.id]
        return new, listed

    new, listed = asyncio.run(create_and_list())
    assert listed == [new]
