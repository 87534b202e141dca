"""Allocations of whole machines, users and their grants."""

from __future__ import annotations

import pytest

from tests.store.factories import add_allocation, add_cluster, at, record
from vpod.domain.entities import Allocation, User
from vpod.store import AlreadyExists, Conflict, NotFound, Store


def test_an_allocation_comes_back_as_it_was_added(store: Store) -> None:
    """get, find and list return the allocation that was stored."""
    add_cluster(store)
    allocation = add_allocation(store, "al1", (4, 5, 6, 7))
    assert store.get_allocation("al1") == allocation
    assert store.find_allocation("al1") == allocation
    assert store.find_allocation("nope") is None
    assert store.list_allocations() == [allocation]


def test_allocations_are_listed_by_id_and_filtered(store: Store) -> None:
    """Filters: a set of ids, a cluster, or both."""
    add_cluster(store, "c1", machines=4)
    add_cluster(store, "c2", machines=4)
    a = add_allocation(store, "a", (0,), "c1")
    b = add_allocation(store, "b", (0,), "c2")
    c = add_allocation(store, "c", (1,), "c1")
    assert store.list_allocations() == [a, b, c]
    assert store.list_allocations(ids={"c", "a", "zz"}) == [a, c]
    assert store.list_allocations(cluster_id="c2") == [b]
    assert store.list_allocations(ids=["a", "b"], cluster_id="c1") == [a]
    assert store.list_allocations(ids=[]) == []


def test_a_machine_is_in_one_allocation_only(store: Store) -> None:
    """The second allocation touching machine 1 is refused (retryable) and leaves no rows."""
    cluster = add_cluster(store, machines=4)
    add_allocation(store, "al1", (0, 1))
    with pytest.raises(Conflict, match=f"machine 1 \\(agent {cluster.agent_ids[1]}\\)") as e:
        add_allocation(store, "al2", (1,))
    assert e.value.retryable is True
    assert [a.id for a in store.list_allocations()] == ["al1"]
    add_allocation(store, "al2", (2, 3))  # nothing of the refused one is in the way


def test_an_allocation_must_use_machines_of_an_existing_cluster(store: Store) -> None:
    """Machines beyond the cluster, or a missing cluster, are NotFound with the valid range."""
    add_cluster(store, machines=4)
    with pytest.raises(NotFound, match=r"cluster c1 has machines 0\.\.3, not machine 4"):
        store.add_allocation(Allocation("al1", "c1", (4,)))
    with pytest.raises(NotFound, match="cluster c9 does not exist"):
        store.add_allocation(Allocation("al1", "c9", (0,)))
    assert store.list_allocations() == []


def test_a_duplicate_allocation_id_is_refused(store: Store) -> None:
    """A second allocation with a taken id is AlreadyExists."""
    add_cluster(store, machines=4)
    add_allocation(store, "al1", (0,))
    with pytest.raises(AlreadyExists, match="allocation al1 exists already"):
        add_allocation(store, "al1", (1,))


def test_an_allocation_with_partitions_cannot_be_removed(store: Store) -> None:
    """Removing refuses while partitions exist; afterwards its machines are free again."""
    add_cluster(store, machines=4)
    add_allocation(store, "al1", (0,))
    store.reserve_partition(record("p1", range(4)))
    with pytest.raises(Conflict, match=r"allocation al1 still has 1 partition \(p1\)"):
        store.remove_allocation("al1")
    store.release_partition("p1")
    store.remove_allocation("al1")
    assert store.list_allocations() == []
    add_allocation(store, "al2", (0,))
    with pytest.raises(NotFound):
        store.remove_allocation("al1")


def test_a_user_comes_back_with_its_grants_and_key_hash(store: Store) -> None:
    """Users come back with sorted grants, admin flag and key hash; unknown users are None."""
    add_cluster(store, machines=4)
    add_allocation(store, "b", (0,))
    add_allocation(store, "a", (1,))
    user = store.add_user(User("u1", allocation_ids=("b", "a")), "hash1")
    assert user == User("u1", allocation_ids=("a", "b"))  # grants come back sorted
    assert store.get_user("u1") == user
    assert store.get_user_key_hash("u1") == "hash1"
    assert store.find_user_with_hash("u1") == (user, "hash1")
    assert store.find_user_with_hash("u2") is None
    store.add_user(User("root", admin=True), "hash2")
    assert store.list_users() == [User("root", admin=True), user]


def test_users_cannot_be_granted_missing_allocations(store: Store) -> None:
    """Granting a missing allocation is NotFound, at creation or later; a taken id is refused."""
    with pytest.raises(NotFound, match="allocation nope does not exist"):
        store.add_user(User("u1", allocation_ids=("nope",)), "h")
    assert store.list_users() == []
    store.add_user(User("u1"), "h")
    with pytest.raises(AlreadyExists, match="user u1 exists already"):
        store.add_user(User("u1"), "h")
    with pytest.raises(NotFound, match="allocation nope does not exist"):
        store.grant_allocation("u1", "nope")


def test_grant_and_revoke_are_idempotent(store: Store) -> None:
    """Granting twice or revoking twice changes nothing; an unknown user is NotFound."""
    add_cluster(store, machines=4)
    add_allocation(store, "al1", (0,))
    store.add_user(User("u1"), "h")
    assert store.grant_allocation("u1", "al1").allocation_ids == ("al1",)
    assert store.grant_allocation("u1", "al1").allocation_ids == ("al1",)
    assert store.revoke_allocation("u1", "al1").allocation_ids == ()
    assert store.revoke_allocation("u1", "al1").allocation_ids == ()
    with pytest.raises(NotFound, match="user ghost does not exist"):
        store.grant_allocation("ghost", "al1")


def test_removing_an_allocation_revokes_its_grants(store: Store) -> None:
    """Grants go with the allocation they name."""
    add_cluster(store, machines=4)
    add_allocation(store, "al1", (0,))
    store.add_user(User("u1", allocation_ids=("al1",)), "h")
    store.remove_allocation("al1")
    assert store.get_user("u1").allocation_ids == ()


def test_key_rotation_admin_flag_and_removal(store: Store) -> None:
    """Key hash and admin flag can change; a removed user is NotFound everywhere."""
    store.add_user(User("u1"), "old")
    store.set_user_key_hash("u1", "new")
    assert store.get_user_key_hash("u1") == "new"
    assert store.set_user_admin("u1", True).admin is True
    store.remove_user("u1")
    assert store.list_users() == []
    for call in (
        lambda: store.remove_user("u1"),
        lambda: store.get_user_key_hash("u1"),
        lambda: store.set_user_key_hash("u1", "x"),
    ):
        with pytest.raises(NotFound, match="user u1 does not exist"):
            call()


def test_users_keep_the_creation_time_the_caller_gives(store: Store) -> None:
    """add_user stores created_at; user_times reports it by user id, None when none was given
    (users created before vpod kept it)."""
    store.add_user(User("u1"), "hash1", created_at=at(5))
    store.add_user(User("old"), "hash2")
    assert store.user_times() == {"old": None, "u1": at(5)}
    store.remove_user("u1")
    assert store.user_times() == {"old": None}


def test_every_change_to_what_a_user_may_do_moves_its_access_version(store: Store) -> None:
    """A new key, the admin flag, a grant, a revoke and the removal of a granted allocation
    each bump the version (so replicas stop trusting what they remember); what changes
    nothing (a repeated grant, revoking what was not granted) and other users' changes
    leave it alone."""
    add_cluster(store, machines=4)
    add_allocation(store, "al1", (0,))
    add_allocation(store, "al2", (1,))
    store.add_user(User("u1", allocation_ids=("al1",)), "h")
    store.add_user(User("other"), "h2")

    def version() -> int:
        access = store.user_access("u1")
        assert access is not None
        return access[1]

    changes = [
        lambda: store.grant_allocation("u1", "al2"),
        lambda: store.revoke_allocation("u1", "al2"),
        lambda: store.set_user_admin("u1", True),
        lambda: store.set_user_key_hash("u1", "h-new"),
        lambda: store.remove_allocation("al1"),
    ]
    no_ops = [
        lambda: store.revoke_allocation("u1", "al2"),
        lambda: store.grant_allocation("other", "al2"),
        lambda: store.remove_allocation("al2"),  # granted to other only
    ]
    seen = [version()]
    for change in changes:
        change()
        seen.append(version())
    assert seen == sorted(set(seen)), f"a change left the version alone: {seen}"
    for no_op in no_ops:
        no_op()
        assert version() == seen[-1]
    assert store.user_access("u1") == ("h-new", seen[-1])
    assert store.find_user_with_access("u1") == (User("u1", admin=True), "h-new", seen[-1])
    assert store.user_access("nobody") is None
