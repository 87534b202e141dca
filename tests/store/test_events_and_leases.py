"""The audit log and leader leases."""

from __future__ import annotations

import pytest

from tests.store.factories import at
from vpod.store import Store
from vpod.store.events import MAX_DETAIL_CHARS


def _log(store: Store, t: float, actor: str, action: str, target: str) -> None:
    store.append_event(
        time=at(t), actor=actor, action=action, target=target, outcome="ok", source="grpc"
    )


def test_events_come_back_newest_first_with_ids(store: Store) -> None:
    """Appended events get ids and come back newest first, exactly as stored."""
    first = store.append_event(
        time=at(1),
        actor="u1",
        action="partition.create",
        target="partition/p1",
        outcome="ok",
        source="grpc 127.0.0.1",
        detail="8 IPUs in allocation al1",
    )
    _log(store, 2, "u2", "partition.remove", "partition/p1")
    listed = store.list_events()
    assert [e.action for e in listed] == ["partition.remove", "partition.create"]
    assert listed[1] == first
    assert first.id > 0
    assert first.time == at(1)


def test_events_are_filtered_by_every_criterion_given(store: Store) -> None:
    """since is inclusive, until exclusive; actor, action and target must match exactly."""
    _log(store, 1, "u1", "create", "p1")
    _log(store, 2, "u2", "create", "p2")
    _log(store, 3, "u1", "remove", "p1")
    _log(store, 4, "u1", "create", "p3")

    def targets(**filters: object) -> list[str]:
        return [e.target for e in store.list_events(**filters)]  # type: ignore[arg-type]

    assert targets(actor="u1") == ["p3", "p1", "p1"]
    assert targets(action="create", since=at(2)) == ["p3", "p2"]
    assert targets(target="p1", until=at(3)) == ["p1"]
    assert targets(limit=2) == ["p3", "p1"]
    page = store.list_events(limit=2)
    assert [e.target for e in store.list_events(before_id=page[-1].id)] == ["p2", "p1"]
    with pytest.raises(ValueError, match="limit"):
        store.list_events(limit=0)


def test_events_are_filtered_by_outcome(store: Store) -> None:
    """The outcome filter matches exactly and combines with the others; paging keeps it."""
    for n, outcome in enumerate(["ok", "refused", "ok", "failed", "refused"]):
        store.append_event(time=at(n), actor="u1", action="create", target=f"p{n}", outcome=outcome)
    refused = store.list_events(outcome="refused")
    assert [e.target for e in refused] == ["p4", "p1"]
    assert [e.target for e in store.list_events(outcome="ok", since=at(1))] == ["p2"]
    first = store.list_events(outcome="refused", limit=1)
    assert [e.target for e in store.list_events(outcome="refused", before_id=first[0].id)] == ["p1"]
    assert store.list_events(outcome="OK") == []


def test_old_events_can_be_pruned(store: Store) -> None:
    """prune_events deletes entries older than the cut-off and counts them."""
    for t in range(5):
        _log(store, t, "u", "a", "t")
    assert store.prune_events(before=at(3)) == 3
    assert [e.time for e in store.list_events()] == [at(4), at(3)]


def test_long_details_are_cut(store: Store) -> None:
    """Details longer than MAX_DETAIL_CHARS are cut, and stored cut."""
    event = store.append_event(
        time=at(0), actor="u", action="a", target="t", outcome="failed", detail="x" * 10_000
    )
    assert len(event.detail) == MAX_DETAIL_CHARS
    assert store.list_events()[0].detail == event.detail


def test_a_free_lease_is_acquired_and_held_against_others(store: Store) -> None:
    """The first contender gets term 1; another is refused until the lease expires."""
    assert store.get_lease("leader") is None
    assert store.try_acquire_lease("leader", "ctl-a", at(0), 10) is True
    assert store.try_acquire_lease("leader", "ctl-b", at(5), 10) is False
    lease = store.get_lease("leader")
    assert lease is not None
    assert (lease.holder, lease.expires_at, lease.term) == ("ctl-a", at(10), 1)


def test_the_holder_reacquires_without_changing_term(store: Store) -> None:
    """Acquiring again by the holder extends the lease in the same term."""
    store.try_acquire_lease("leader", "ctl-a", at(0), 10)
    assert store.try_acquire_lease("leader", "ctl-a", at(20), 10) is True
    lease = store.get_lease("leader")
    assert lease is not None
    assert (lease.expires_at, lease.term) == (at(30), 1)


def test_an_expired_lease_passes_to_a_new_holder_with_a_new_term(store: Store) -> None:
    """After expiry another contender takes it (term 2) and the old holder cannot renew."""
    store.try_acquire_lease("leader", "ctl-a", at(0), 10)
    assert store.try_acquire_lease("leader", "ctl-b", at(10), 10) is True
    lease = store.get_lease("leader")
    assert lease is not None
    assert (lease.holder, lease.term) == ("ctl-b", 2)
    assert store.renew_lease("leader", "ctl-a", at(11), 10) is False


def test_renewal_extends_only_a_live_lease(store: Store) -> None:
    """Renewal extends a lease until it expires; an expired or missing lease cannot be renewed."""
    store.try_acquire_lease("leader", "ctl-a", at(0), 10)
    assert store.renew_lease("leader", "ctl-a", at(9), 10) is True
    lease = store.get_lease("leader")
    assert lease is not None
    assert lease.expires_at == at(19)
    assert store.renew_lease("leader", "ctl-a", at(19), 10) is False  # expired at 19
    assert store.renew_lease("missing", "ctl-a", at(0), 10) is False


def test_a_released_lease_is_free_at_once(store: Store) -> None:
    """Only the holder can release; a released lease is taken at once, in a new term."""
    store.try_acquire_lease("leader", "ctl-a", at(0), 60)
    assert store.release_lease("leader", "ctl-b") is False
    assert store.release_lease("leader", "ctl-a") is True
    assert store.try_acquire_lease("leader", "ctl-b", at(1), 60) is True
    lease = store.get_lease("leader")
    assert lease is not None
    assert (lease.holder, lease.term) == ("ctl-b", 2)


def test_a_lease_needs_a_positive_ttl(store: Store) -> None:
    """A zero time to live is a caller bug (ValueError)."""
    with pytest.raises(ValueError, match="positive time to live"):
        store.try_acquire_lease("leader", "ctl-a", at(0), 0)
