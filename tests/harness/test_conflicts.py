"""Conflict retries: concurrent creates racing for the same IPUs never share one.

Within one controller the occupancy lock serialises place-and-commit. Across
two controllers on one database (:meth:`Pod.replica`) each places on its own
cached snapshot; the database refuses the second commit of an IPU, and the
loser places again on a fresh snapshot. The scripted gateway holds a
configure in flight, so the second create runs while the first still holds
its reservation.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from vpod.controller import errors
from vpod.controller.app import Controller
from vpod.controller.caller import SYSTEM
from vpod.domain.partition_states import ReadyState
from vpod.store.errors import Conflict

from .pod import Pod

pytestmark = pytest.mark.anyio


class ReserveSpy:
    """Counts a controller's reservations and the conflicts the database answered."""

    def __init__(self, controller: Controller, monkeypatch: pytest.MonkeyPatch) -> None:
        store = controller.ctx.db.store
        self.calls = 0
        self.conflicts = 0
        real = store.reserve_partition

        def reserve(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            try:
                return real(*args, **kwargs)
            except Conflict:
                self.conflicts += 1
                raise

        monkeypatch.setattr(store, "reserve_partition", reserve)


async def _warm(pod: Pod, controller: Controller) -> None:
    """Give ``controller`` a cached snapshot of the empty pod (a create and a remove)."""
    await pod.create("warm", 1, on=controller)
    await controller.partitions.remove(SYSTEM, "warm")


async def test_concurrent_creates_on_one_controller_get_distinct_ipus(pod: Pod) -> None:
    first = pod.gateway.on("configure", partition_id="c1", hold=True)
    tasks = [asyncio.create_task(pod.create(f"c{n}", 4)) for n in range(1, 5)]
    await first.entered()  # c1 holds its reservation while the others place
    first.release()
    records = await asyncio.gather(*tasks)
    slots = [slot for r in records for slot in r.slots]
    assert sorted(slots) == list(range(16))
    assert all(r.state.ready is ReadyState.ACTIVE for r in records)
    assert pod.disagreements() == []


async def test_a_replica_that_loses_the_race_places_again_on_a_fresh_snapshot(
    pod: Pod, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A and B both cached an empty pod. A reserves slots 0..7 and is still configuring
    them when B asks for 8 IPUs: B's cached snapshot offers the same slots, the database
    refuses them (a Conflict), and B places again, on 8..15. Both end ACTIVE."""
    a = pod.controller
    b = pod.replica()
    await _warm(pod, a)
    await _warm(pod, b)
    spy = ReserveSpy(b, monkeypatch)
    held = pod.gateway.on("configure", partition_id="from-a", hold=True)
    create_a = asyncio.create_task(pod.create("from-a", 8, on=a))
    await held.entered()
    from_b = await pod.create("from-b", 8, on=b)
    held.release()
    from_a = await create_a
    assert spy.conflicts == 1
    assert spy.calls == 2
    assert sorted(from_a.slots) == list(range(8))
    assert sorted(from_b.slots) == list(range(8, 16))
    assert from_a.state.ready is ReadyState.ACTIVE
    assert from_b.state.ready is ReadyState.ACTIVE
    assert pod.disagreements() == []


async def test_two_replicas_racing_for_the_whole_pod_one_wins_and_the_other_is_told_so(
    pod: Pod, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = pod.controller
    b = pod.replica()
    await _warm(pod, a)
    await _warm(pod, b)
    spy = ReserveSpy(b, monkeypatch)
    held = pod.gateway.on("configure", partition_id="all-a", hold=True)
    create_a = asyncio.create_task(pod.create("all-a", 16, on=a))
    await held.entered()
    with pytest.raises(errors.NoCapacity, match="partition all-b of 16 IPUs does not fit"):
        await pod.create("all-b", 16, on=b)
    held.release()
    winner = await create_a
    assert spy.conflicts == 1  # it did try the slots A held, and was refused by the database
    assert sorted(winner.slots) == list(range(16))
    assert pod.gateway.calls_of("configure", "all-b") == []  # the loser reached no agent
    assert await pod.record("all-b") is None
    assert pod.disagreements() == []


async def test_the_same_id_from_two_replicas_is_created_once(pod: Pod) -> None:
    """Both replicas get the same create: one configures it, the other finds it in the
    store and answers with it once it is ACTIVE (or says it is still being created)."""
    a = pod.controller
    b = pod.replica()
    held = pod.gateway.on("configure", partition_id="twin", hold=True)
    create_a = asyncio.create_task(pod.create("twin", 4, on=a))
    await held.entered()
    with pytest.raises(errors.FailedPrecondition, match="already exists and is"):
        await pod.create("twin", 4, on=b)
    held.release()
    created = await create_a
    again = await pod.create("twin", 4, on=b)
    assert again.slots == created.slots
    assert len({c.agent_id for c in pod.gateway.calls_of("configure", "twin")}) == 1
    assert pod.disagreements() == []


async def test_a_cluster_that_changes_under_every_placement_is_unavailable_not_a_loop(
    pod: Pod, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every commit conflicts (other controllers keep taking the IPUs): after the bounded
    number of attempts the create gives up with UNAVAILABLE saying to retry."""
    store = pod.controller.ctx.db.store
    attempts: list[str] = []

    def always_taken(record: Any, **_: Any) -> Any:
        attempts.append(record.id)
        raise Conflict("IPU taken meanwhile (scripted)")

    monkeypatch.setattr(store, "reserve_partition", always_taken)
    with pytest.raises(errors.Unavailable, match=r"changed under 50 placements in a row.*retry"):
        await pod.create("busy", 4)
    assert attempts == ["busy"] * 50
    assert pod.gateway.calls == []
