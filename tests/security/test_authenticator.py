"""The Authenticator and the audit log's read side, in process with a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from vpod.controller import errors
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import Controller, build_controller
from vpod.controller.audit_log import AuditLog, EventFilter
from vpod.controller.auth import DENIAL_AUDIT_INTERVAL_S, MAX_KEY_CHARS, VERIFIED_TTL_S
from vpod.controller.caller import SYSTEM, Caller
from vpod.controller.clock import FakeClock
from vpod.controller.credentials import hash_key, verify_key, verify_unknown
from vpod.controller.settings import Settings
from vpod.domain.entities import User
from vpod.store import AuditEvent

START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def controller(tmp_path: Path, clock: FakeClock) -> Iterator[Controller]:
    built = build_controller(
        Settings(data_dir=tmp_path, secure=True), GrpcAgentGateway(), clock=clock
    )
    built.ctx.db.store.add_user(User(id="alice"), hash_key("alice-key"))
    yield built
    built.close()


def denials(controller: Controller) -> list[AuditEvent]:
    return controller.ctx.db.store.list_events(action="authenticate")


def test_a_wrong_key_and_an_unknown_user_get_the_same_refusal(controller: Controller) -> None:
    async def refusal(user_id: str, key: str) -> str:
        with pytest.raises(errors.Unauthenticated) as caught:
            await controller.auth.caller(user_id, key, source="grpc:x", admin=False)
        return str(caught.value)

    assert asyncio.run(refusal("alice", "wrong")) == asyncio.run(refusal("nobody", "wrong"))
    assert asyncio.run(refusal("alice", "k" * (MAX_KEY_CHARS + 1))).startswith("unknown user")


def test_a_plain_user_gets_its_allocations_and_no_admin_endpoint(controller: Controller) -> None:
    async def scenario() -> Caller:
        with pytest.raises(errors.PermissionDenied, match="not an administrator"):
            await controller.auth.caller("alice", "alice-key", source="http:h:1", admin=True)
        return await controller.auth.caller("alice", "alice-key", source="http:h:1", admin=False)

    caller = asyncio.run(scenario())
    assert (caller.user_id, caller.admin, caller.allocation_ids) == ("alice", False, frozenset())
    assert caller.source == "http:h:1"


def test_refusals_are_logged_once_per_user_endpoint_and_host_per_interval(
    controller: Controller, clock: FakeClock
) -> None:
    """Retries from other ports of one host are the same caller; the interval lets one more in."""

    async def refuse(user_id: str, source: str, *, admin: bool = False) -> None:
        with pytest.raises(errors.ServiceError):
            await controller.auth.caller(user_id, "bad", source=source, admin=admin)

    async def scenario() -> None:
        await refuse("alice", "grpc:ipv4:10.0.0.1:1000")
        await refuse("alice", "grpc:ipv4:10.0.0.1:1001")
        await refuse("alice", "grpc:ipv4:10.0.0.1:1002", admin=True)
        await refuse("alice", "grpc:ipv4:10.0.0.2:1000")
        await refuse("", "http:10.0.0.1:5")
        clock.advance(DENIAL_AUDIT_INTERVAL_S)
        await refuse("alice", "grpc:ipv4:10.0.0.1:1003")

    asyncio.run(scenario())
    logged = [(e.actor, e.target, e.source, e.detail) for e in reversed(denials(controller))]
    assert logged == [
        (
            "alice",
            "user endpoint",
            "grpc:ipv4:10.0.0.1:1000",
            "unknown user id or wrong access key",
        ),
        (
            "alice",
            "admin endpoint",
            "grpc:ipv4:10.0.0.1:1002",
            "unknown user id or wrong access key",
        ),
        (
            "alice",
            "user endpoint",
            "grpc:ipv4:10.0.0.2:1000",
            "unknown user id or wrong access key",
        ),
        ("anonymous", "user endpoint", "http:10.0.0.1:5", "no credentials"),
        (
            "alice",
            "user endpoint",
            "grpc:ipv4:10.0.0.1:1003",
            "unknown user id or wrong access key",
        ),
    ]


def test_a_removed_user_is_refused_at_once_though_remembered(
    controller: Controller, clock: FakeClock
) -> None:
    """Verified keys are remembered a while, but with the hash they matched, which is read
    at every call: a user removed behind this replica's back (by another replica, here
    straight in the store) is refused at the next call, not after the cache expires."""

    async def scenario() -> None:
        await controller.auth.caller("alice", "alice-key", source="s", admin=False)
        controller.ctx.db.store.remove_user("alice")
        with pytest.raises(errors.Unauthenticated):
            await controller.auth.caller("alice", "alice-key", source="s", admin=False)
        clock.advance(VERIFIED_TTL_S)
        with pytest.raises(errors.Unauthenticated):
            await controller.auth.caller("alice", "alice-key", source="s", admin=False)

    asyncio.run(scenario())


def test_malformed_stored_hashes_match_nothing() -> None:
    for stored in ("", "plain", "scrypt$1$8$1$AAAA$AAAA", "scrypt$x$8$1$@@$@@", "md5$1$2$3$4$5"):
        assert not verify_key("anything", stored)
    assert not verify_unknown("anything")


# -- the audit log's read side ----------------------------------------------------------------


def fill(controller: Controller, count: int) -> None:
    """``count`` events a second apart; every third failed, the rest ok."""
    controller.ctx.db.store.append_events(
        AuditEvent(
            time=START + timedelta(seconds=i),
            actor="alice" if i % 2 else "bob",
            action="create_partition",
            target=f"p{i}",
            outcome="failed" if i % 3 == 0 else "ok",
        )
        for i in range(count)
    )


def listed(controller: Controller, caller: Caller, **filters: object) -> list[AuditEvent]:
    log = AuditLog(controller.ctx)
    return asyncio.run(log.list_events(caller, EventFilter(**filters)))  # type: ignore[arg-type]


def test_the_outcome_filter_reads_past_the_first_page(controller: Controller) -> None:
    """1,200 events, 400 failed: the newest 300 failures come back, in order."""
    fill(controller, 1200)
    failed = listed(controller, SYSTEM, outcome="failed", limit=300)
    assert [e.target for e in failed] == [f"p{i}" for i in range(1197, 297, -3)]
    assert [e.target for e in listed(controller, SYSTEM, outcome="failed", limit=1000)][-1] == "p0"


def test_filters_combine_with_naive_times_read_as_utc(controller: Controller) -> None:
    fill(controller, 12)
    window = listed(
        controller,
        SYSTEM,
        actor="alice",
        outcome="ok",
        since=datetime(2026, 1, 1, 0, 0, 2),
        until=datetime(2026, 1, 1, 0, 0, 9),
    )
    assert [e.target for e in window] == ["p7", "p5"]


@pytest.mark.parametrize(
    ("filters", "words"),
    [
        ({"limit": 0}, "limit must be between 1 and 1000"),
        ({"limit": 1001}, "limit must be between 1 and 1000"),
        ({"since": START, "until": START}, "must be before until"),
        ({"actor": "x" * 201}, "longer than 200"),
        ({"before_id": 0}, "before_id must be between 1 and"),
        ({"before_id": 2**64}, "before_id must be between 1 and"),
    ],
)
def test_nonsense_filters_are_invalid(
    controller: Controller, filters: dict[str, object], words: str
) -> None:
    with pytest.raises(errors.InvalidArgument, match=words):
        listed(controller, SYSTEM, **filters)


def test_only_admins_read_the_log(controller: Controller) -> None:
    with pytest.raises(errors.PermissionDenied, match="only admins may read the audit log"):
        listed(controller, Caller(user_id="alice", allocation_ids=frozenset()))
