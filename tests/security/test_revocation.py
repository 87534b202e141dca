"""Every change to what a user may do applies at the user's next call, on every replica.

The same holds for the cloud's tokens: a token revoked, or its project deleted,
through one replica is refused by the other at the next call.

Two controllers (in this process, with one fake clock) share one SQLite store,
as replicas share PostgreSQL. ``bob`` is verified on replica B, so B
remembers his key (for :data:`~vpod.controller.auth.VERIFIED_TTL_S`); each
change is then made through replica A's use-cases, which B's caches never
hear of, and B's very next call must see it: no clock advances.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vpod.cloud.app import Cloud, build_cloud
from vpod.cloud.model import errors as cloud_errors
from vpod.cloud.settings import CloudSettings
from vpod.controller import errors
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import Controller, build_controller
from vpod.controller.caller import SYSTEM, Caller
from vpod.controller.clock import FakeClock
from vpod.controller.settings import Settings

MACHINES = 4
"""Bow-2000s in cluster ``pod``; allocations a1, a2, a3 take one each."""


@dataclass
class Replicas:
    a: Controller
    b: Controller
    key: str
    """bob's access key."""

    async def bob_on_b(self) -> Caller:
        return await self.b.auth.caller("bob", self.key, source="test", admin=False)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    settings = Settings(data_dir=tmp_path, secure=True)
    a = build_controller(settings, GrpcAgentGateway(), clock=clock)
    b = build_controller(settings, GrpcAgentGateway(), clock=clock)

    async def setup() -> str:
        ids = [f"ag{n}" for n in range(1, MACHINES + 1)]
        for n, agent_id in enumerate(ids, start=1):
            await a.inventory.create_agent(SYSTEM, agent_id, f"127.0.9.{n}", 8092)
        await a.inventory.create_cluster(SYSTEM, "pod", ids)
        for alloc, agent in (("a1", "ag1"), ("a2", "ag2"), ("a3", "ag3")):
            await a.inventory.create_allocation(SYSTEM, alloc, "pod", agent_ids=[agent])
        created = await a.inventory.create_user(SYSTEM, "bob", ["a1", "a2"])
        return created.access_key

    live = Replicas(a=a, b=b, key=asyncio.run(setup()))
    yield live
    b.close()
    a.close()


async def _revoke(r: Replicas) -> None:
    await r.a.inventory.revoke_allocation(SYSTEM, "bob", "a1")


async def _grant(r: Replicas) -> None:
    await r.a.inventory.grant_allocation(SYSTEM, "bob", "a3")


async def _remove_allocation_and_make_it_again(r: Replicas) -> None:
    # The same id, not granted to bob: the old grant must not carry over to the new one.
    await r.a.inventory.remove_allocation(SYSTEM, "a1")
    await r.a.inventory.create_allocation(SYSTEM, "a1", "pod", agent_ids=["ag4"])


async def _make_admin(r: Replicas) -> None:
    await r.a.ctx.db(r.a.ctx.db.store.set_user_admin, "bob", True)


async def _cloud_revoke(r: Replicas) -> None:
    await r.a.tenancy.revoke(SYSTEM, "bob", "a2")


CHANGES: dict[str, tuple[Callable[[Replicas], Awaitable[None]], frozenset[str] | None, bool]] = {
    "revoke": (_revoke, frozenset({"a2"}), False),
    "grant": (_grant, frozenset({"a1", "a2", "a3"}), False),
    "remove allocation, same id again": (
        _remove_allocation_and_make_it_again,
        frozenset({"a2"}),
        False,
    ),
    "admin flag": (_make_admin, None, True),
    "tenancy revoke": (_cloud_revoke, frozenset({"a1"}), False),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_on_one_replica_applies_at_the_next_call_on_another(
    replicas: Replicas, change: str
) -> None:
    make, allocations, admin = CHANGES[change]

    async def scenario() -> Caller:
        before = await replicas.bob_on_b()
        assert (before.allocation_ids, before.admin) == (frozenset({"a1", "a2"}), False)
        await make(replicas)
        return await replicas.bob_on_b()

    after = asyncio.run(scenario())
    assert (after.allocation_ids, after.admin) == (allocations, admin)


def test_what_the_former_holder_lists_changes_at_once(replicas: Replicas) -> None:
    """The listing a user sees on replica B drops a removed allocation at the next call."""

    async def listed() -> list[str]:
        caller = await replicas.bob_on_b()
        return [a.id for a in await replicas.b.inventory.visible_allocations(caller)]

    async def scenario() -> tuple[list[str], list[str]]:
        before = await listed()
        await _remove_allocation_and_make_it_again(replicas)
        replicas.b.inventory.invalidate()  # B's inventory view may lag a second; grants may not
        return before, await listed()

    before, after = asyncio.run(scenario())
    assert (before, after) == (["a1", "a2"], ["a2"])


def test_a_new_key_or_a_removed_user_is_refused_at_once_on_another_replica(
    replicas: Replicas,
) -> None:
    async def scenario() -> None:
        await replicas.bob_on_b()
        new_key = await replicas.a.tenancy.rotate_key(SYSTEM, "bob")
        with pytest.raises(errors.Unauthenticated):
            await replicas.bob_on_b()
        replicas.key = new_key
        assert (await replicas.bob_on_b()).allocation_ids == {"a1", "a2"}
        await replicas.a.inventory.remove_user(SYSTEM, "bob")
        with pytest.raises(errors.Unauthenticated):
            await replicas.bob_on_b()

    asyncio.run(scenario())


def test_a_remembered_key_is_not_hashed_again_when_only_grants_change(
    replicas: Replicas, scrypt_checks: list[str]
) -> None:
    """A changed access version costs a store read, not another scrypt check."""

    async def scenario() -> None:
        await replicas.bob_on_b()
        await _revoke(replicas)
        await replicas.bob_on_b()
        await _grant(replicas)
        assert (await replicas.bob_on_b()).allocation_ids == {"a2", "a3"}

    asyncio.run(scenario())
    assert len(scrypt_checks) == 1


def _clouds(replicas: Replicas, data_dir: Path) -> tuple[Cloud, Cloud]:
    settings = CloudSettings(data_dir=data_dir)
    return build_cloud(replicas.a, settings), build_cloud(replicas.b, settings)


def test_a_revoked_cloud_token_or_deleted_project_is_refused_at_once_on_another_replica(
    replicas: Replicas, tmp_path: Path
) -> None:
    a, b = _clouds(replicas, tmp_path)

    async def scenario() -> None:
        _, first = await a.projects.create("acme")
        second = await a.projects.issue_token("acme", "second")
        for new in (first, second):  # both verified, so remembered, on B
            assert (await b.projects.authenticate(new.token)).project_id == "acme"
        await a.projects.revoke_token(first.record.id)
        with pytest.raises(cloud_errors.Unauthenticated, match="unknown or revoked token"):
            await b.projects.authenticate(first.token)
        assert (await b.projects.authenticate(second.token)).project_id == "acme"
        await a.projects.remove("acme")
        with pytest.raises(cloud_errors.Unauthenticated, match="unknown or revoked token"):
            await b.projects.authenticate(second.token)

    asyncio.run(scenario())


def test_a_remembered_cloud_token_is_not_hashed_again(
    replicas: Replicas, tmp_path: Path, scrypt_checks: list[str]
) -> None:
    """Reading the token's record at every call costs a store read, not another scrypt; a
    made-up token id costs none."""
    a, b = _clouds(replicas, tmp_path)

    async def scenario() -> None:
        _, new = await a.projects.create("acme")
        for _ in range(3):
            assert (await b.projects.authenticate(new.token)).project_id == "acme"
        wrong = new.token[:-4] + ("AAAA" if not new.token.endswith("AAAA") else "BBBB")
        with pytest.raises(cloud_errors.Unauthenticated):
            await b.projects.authenticate(wrong)
        with pytest.raises(cloud_errors.Unauthenticated):  # no such token id: no slow check
            await b.projects.authenticate("vpod_ffffffffffffffff.made-up")

    asyncio.run(scenario())
    assert len(scrypt_checks) == 2  # the first call, and the wrong secret
