"""Owner leases of operations on a fake clock: only a dead owner's operation is recovered.

Controller A plays the leader looking for abandoned operations
(:meth:`Pod.recovery_round`); replica B runs a create (or a reset) whose
agent call the scripted gateway holds in flight, for as long as the test
wants, while the clock moves past ``operation_deadline_s``. B keeps its owner
lease (``OwnerLease.renew``, what its lease task does every heartbeat) or
stops renewing it as a dead controller would. The process-level proof (a real
``vipu-server`` killed with SIGKILL on PostgreSQL) stays in
``tests/faults/test_operation_owners.py``.
"""

from __future__ import annotations

import asyncio

import pytest

from vpod.controller import errors
from vpod.controller.caller import SYSTEM
from vpod.controller.operation_owners import OwnerLease, lease_name
from vpod.domain.partition_states import OperationState, ReadyState

from .gateway import unavailable
from .pod import Pod

pytestmark = pytest.mark.anyio

DEADLINE_S = 30.0
LEASE_TTL_S = 10.0


async def _busy_owner(pod: Pod, pid: str) -> str:
    record = await pod.record(pid)
    assert record is not None
    assert record.state.busy
    assert record.operation_owner is not None
    return record.operation_owner


async def test_a_live_owners_slow_create_is_left_alone_however_old(pod: Pod) -> None:
    a, b = pod.controller, pod.replica()
    lease = OwnerLease(b.ctx)
    held = pod.gateway.on("configure", partition_id="slow", hold=True)
    create = asyncio.create_task(pod.create("slow", 16, on=b))
    await held.entered()
    owner = await _busy_owner(pod, "slow")
    assert owner == b.ctx.owner
    assert owner.startswith("harness-b/")
    # Far past the operation deadline, B renewing its lease all along (each renewal lasts
    # the TTL, so the lease runs out only if B stops).
    while pod.clock.monotonic() < 2 * DEADLINE_S:
        assert await lease.renew()
        pod.clock.advance(LEASE_TTL_S - 1)
        assert await pod.recovery_round() == 0
    assert await pod.record("slow") is not None
    held.release()
    created = await create
    assert (created.state.ready, created.state.operation) == (
        ReadyState.ACTIVE,
        OperationState.IDLE,
    )
    assert created.operation_owner is None  # idle: nobody owns an operation on it
    assert await pod.audit("recover_partition", "slow") == []
    assert a.ctx.owner != b.ctx.owner
    assert pod.disagreements() == []
    await b.partitions.remove(SYSTEM, "slow")
    assert pod.disagreements() == []


async def test_a_dead_owners_create_is_rolled_back_once_its_lease_expires(pod: Pod) -> None:
    b = pod.replica()
    lease = OwnerLease(b.ctx)
    assert await lease.renew()
    # B's configure never comes back in time: B died with the create in flight.
    held = pod.gateway.on("configure", partition_id="orphan", hold=True, fail=unavailable)
    create = asyncio.create_task(pod.create("orphan", 16, on=b))
    await held.entered()
    await _busy_owner(pod, "orphan")
    pod.clock.advance(LEASE_TTL_S - 1)
    assert await pod.recovery_round() == 0  # the lease still runs
    pod.clock.advance(2)
    assert await pod.recovery_round() == 1
    assert await pod.record("orphan") is None
    (recovered,) = await pod.audit("recover_partition", "orphan")
    assert recovered.detail == "abandoned creating rolled back"
    assert pod.gateway.holders_of("orphan") == []
    # Whatever the dead owner's task does when it wakes, it cannot bring the IPUs back.
    held.release()
    with pytest.raises(errors.Unavailable):
        await create
    assert pod.gateway.holders_of("orphan") == []
    assert pod.disagreements() == []
    assert await pod.recovery_round() == 0


async def test_an_operation_whose_owner_has_no_lease_falls_back_to_the_age_rule(
    pod: Pod,
) -> None:
    b = pod.replica()
    held = pod.gateway.on("configure", partition_id="old", hold=True, fail=unavailable)
    create = asyncio.create_task(pod.create("old", 4, on=b))
    await held.entered()
    owner = await _busy_owner(pod, "old")
    ctx = pod.controller.ctx
    assert await ctx.db(ctx.db.store.get_lease, lease_name(owner)) is None
    pod.clock.advance(DEADLINE_S - 1)
    assert await pod.recovery_round() == 0  # younger than the deadline: perhaps alive
    pod.clock.advance(2)
    assert await pod.recovery_round() == 1
    assert await pod.record("old") is None
    held.release()
    with pytest.raises(errors.Unavailable):
        await create
    assert pod.disagreements() == []


async def test_a_dead_owners_reset_is_run_again(pod: Pod) -> None:
    b = pod.replica()
    await pod.create("again", 4)
    lease = OwnerLease(b.ctx)
    assert await lease.renew()
    held = pod.gateway.on("reset", partition_id="again", hold=True, fail=unavailable)
    reset = asyncio.ensure_future(b.partitions.reset(SYSTEM, "again"))
    await held.entered()
    assert (await pod.record("again")) is not None
    pod.clock.advance(LEASE_TTL_S + 1)
    assert await pod.recovery_round() == 1
    record = await pod.record("again")
    assert record is not None
    assert (record.state.ready, record.state.operation) == (
        ReadyState.ACTIVE,
        OperationState.IDLE,
    )
    (recovered,) = await pod.audit("recover_partition", "again")
    assert recovered.detail == "abandoned reset finished"
    (agent_id,) = pod.gateway.holders_of("again")
    assert pod.gateway.machines[agent_id].configurations()[0].reset_count == 1
    held.release()
    with pytest.raises(errors.ServiceError):
        await reset
    assert pod.disagreements() == []


async def test_a_new_boot_is_a_new_owner_and_a_clean_stop_gives_the_lease_up(
    pod: Pod,
) -> None:
    """The lease names this boot: a restarted controller (same replica id) is another owner,
    so what the old process left is recovered once the old lease runs out. A controller that
    stops cleanly gives its lease up at once: its leftovers need not wait for the TTL."""
    b = pod.replica()
    c = pod.replica(b.settings.replica_id)  # B again, after a restart
    assert b.ctx.owner.split("/")[0] == c.ctx.owner.split("/")[0] == "harness-b"
    assert b.ctx.owner != c.ctx.owner
    judge = OwnerLease(pod.controller.ctx)
    old, new = OwnerLease(b.ctx), OwnerLease(c.ctx)
    assert await old.renew()
    assert await new.renew()
    assert await judge.alive([b.ctx.owner, c.ctx.owner]) == {b.ctx.owner: True, c.ctx.owner: True}
    pod.clock.advance(LEASE_TTL_S + 1)
    assert await new.renew()
    alive = await judge.alive([b.ctx.owner, c.ctx.owner, "nobody"])
    assert alive == {b.ctx.owner: False, c.ctx.owner: True}  # no row at all: not known

    pod.clock.advance(LEASE_TTL_S + 1)  # C's lease ran out too: only its keeper renews it
    keeper = asyncio.create_task(new.run())
    while await judge.alive([c.ctx.owner]) != {c.ctx.owner: True}:
        await asyncio.sleep(0)
    keeper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await keeper
    assert await judge.alive([c.ctx.owner]) == {c.ctx.owner: False}
