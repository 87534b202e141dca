"""What the controller does to partitions on its own: faults, auto-reset, relocation, clean-up.

All of it runs on the leader (see :mod:`.leader`) and goes through the same
state table and compare-and-set writes as user requests, so a repair and a
user's remove cannot both win.

- A fault (an IPU or IPU-Link of the partition fails, a GW-Link of a
  multi-segment partition's machine fails, or an agent stops answering)
  puts the partition in ERROR with the reason in its status.
- Auto-reset (unless ``disable_auto_reset``): a partition in ERROR whose
  hardware is healthy again is reset; a ``relocatable`` one whose IPUs are
  still faulty is moved to healthy IPUs of its allocation, keeping its id.
  Each attempt counts in ``auto_reset_retry_count`` and stamps
  ``last_auto_reset_time``; attempts stop at ``max_auto_reset_retries``.
  The count is per episode: it restarts from zero when trouble begins on a
  healthy (ACTIVE) partition — a fault, or an application detaching — and
  when a user resets the partition, so the maximum bounds the retries of one
  problem, not the automatic resets of a partition's whole life.
  An application detaching from a non-reconfigurable ACTIVE partition also
  triggers an auto-reset (vipu-system.md §4), sent with ``unless_attached``:
  a machine where another application holds an IPU of the partition refuses
  in the same step, and the attempt is ``deferred`` (audited, not counted).
- Abandoned operations (the controller that ran them died): creates are
  rolled back, removes finished, resets run again — once the operation is
  older than ``operation_deadline_s``, which is longer than any live
  operation can take.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable

from vpod.agent.errors import Reason
from vpod.domain.entities import Cluster
from vpod.domain.errors import IllegalTransition
from vpod.domain.partition_states import (
    Event,
    OperationState,
    PartitionState,
    ReadyState,
    allowed,
    transition,
)
from vpod.placement import Rejected, relocate
from vpod.placement.results import PartitionPlacement
from vpod.store.errors import Conflict
from vpod.store.records import PartitionChanges, PartitionRecord, ipus_of_placement

from . import errors
from .agent_gateway import describe_failures, fan_out, refused_for
from .caller import SYSTEM
from .context import Context
from .inventory import Inventory
from .operation_owners import OwnerLease
from .partitions import PartitionService, machine_configs

log = logging.getLogger("vpod.repair")


@dataclasses.dataclass(eq=False)
class PartitionRepair:
    """Puts partitions in ERROR, resets and relocates them, and finishes abandoned operations."""

    _ctx: Context
    _inventory: Inventory
    _p: PartitionService
    _steadily_answering: Callable[[str], bool]
    _owners: OwnerLease

    # ----------------------------------------------------------------- faults

    async def fault(self, record: PartitionRecord, reason: str) -> None:
        """Put a partition in ERROR with ``reason`` (harmless if it already is)."""
        if not allowed(record.state, Event.FAULT_DETECTED) or reason in record.errors:
            return
        # Trouble on a healthy partition starts a new episode: its automatic attempts
        # count from zero, so a long-lived partition is not left without any.
        fresh_episode = record.state.ready is ReadyState.ACTIVE
        also: PartitionChanges = {"auto_reset_retry_count": 0} if fresh_episode else {}
        try:
            await self._p.move_state(record, Event.FAULT_DETECTED, errors_=(reason,), also=also)
        except errors.ServiceError as exc:
            log.info("partition %s not marked faulty: %s", record.id, exc)
            return
        await self._ctx.audit(SYSTEM, "partition_fault", record.id, "detected", reason)

    # ------------------------------------------------------------- auto-reset

    def _steady(self, agent_id: str) -> bool:
        return self._steadily_answering(agent_id)

    def may_auto_reset(self, record: PartitionRecord) -> bool:
        return (
            not record.disable_auto_reset
            and not record.state.busy
            and record.auto_reset_retry_count < record.max_auto_reset_retries
        )

    async def auto_reset(
        self,
        record: PartitionRecord,
        why: str,
        *,
        fresh: bool = False,
        spare_attached: bool = False,
    ) -> bool:
        """Reset without a user asking; True when the partition is ACTIVE/IDLE afterwards.

        ``fresh``: the reason is new (an application detached from a healthy partition),
        so this is attempt 1 of a new episode rather than one more retry.
        ``spare_attached``: each agent resets only if no application holds an IPU of the
        partition there, in the same step (the controller's view of who is attached is a
        heartbeat old: another instance of a run may have attached since). Where one does,
        the partition stays as it is and the attempt is not counted: the last application
        to detach triggers the reset.
        """
        ctx = self._ctx
        if fresh and record.state.ready is ReadyState.ACTIVE:
            record = dataclasses.replace(record, auto_reset_retry_count=0)
        if not self.may_auto_reset(record) or not allowed(record.state, Event.AUTO_RESET_REQUESTED):
            return False
        cluster = await self._inventory.cluster(record.cluster_id)
        try:
            record = await self._p.update_record(
                record,
                state=_next(record, Event.AUTO_RESET_REQUESTED),
                auto_reset_retry_count=record.auto_reset_retry_count + 1,
                last_auto_reset_time=ctx.clock.now(),
            )
        except Conflict:
            return False  # someone else acted on it; the next round looks again
        agents = await self._p.agents_of(cluster, record)
        _, failed = await self._p.reset_on_agents(
            cluster, record, agents, unless_attached=spare_attached
        )
        in_use = {a: e for a, e in failed.items() if refused_for(e, Reason.IPU_ATTACHED)}
        if failed and len(in_use) == len(failed):
            await self._p.move_state(
                record,
                Event.RESET_DONE,
                errors_=(),
                also={"auto_reset_retry_count": record.auto_reset_retry_count - 1},
            )
            cause = describe_failures(in_use)
            log.info("not resetting %s: %s", record.id, cause)
            await ctx.audit(
                SYSTEM, "auto_reset_partition", record.id, "deferred", f"{why}; {cause}"
            )
            return True
        if failed:
            cause = describe_failures(failed)
            await self._p.move_state(record, Event.RESET_FAILED, errors_=(cause,))
            await ctx.audit(SYSTEM, "auto_reset_partition", record.id, "failed", f"{why}; {cause}")
            return False
        await self._p.move_state(record, Event.RESET_DONE, errors_=())
        await ctx.audit(SYSTEM, "auto_reset_partition", record.id, "ok", why)
        return True

    async def relocate(self, record: PartitionRecord, avoid: frozenset[int]) -> bool:
        """Move a relocatable partition off faulty IPUs, keeping its id; True on success."""
        ctx = self._ctx
        if not record.relocatable or not self.may_auto_reset(record):
            return False
        if not allowed(record.state, Event.RELOCATE_REQUESTED):
            return False
        cluster = await self._inventory.cluster(record.cluster_id)
        async with ctx.occupancy.lock(cluster.id):
            snapshot = await ctx.occupancy.get(cluster, fresh=True)
            placed = relocate(snapshot, record.id, avoid_slots=avoid)
            if isinstance(placed, Rejected):
                await self._count_attempt(record, f"relocation impossible: {placed}")
                return False
            assert isinstance(placed, PartitionPlacement)
            old_agents = await self._p.agents_of(cluster, record)
            try:
                moved = await self._p.update_record(
                    record,
                    state=_next(record, Event.RELOCATE_REQUESTED),
                    ipus=ipus_of_placement(placed),
                    auto_reset_retry_count=record.auto_reset_retry_count + 1,
                    last_auto_reset_time=ctx.clock.now(),
                )
            except Conflict:
                ctx.occupancy.forget(cluster.id)
                return False
            ctx.occupancy.put(cluster.id, snapshot.release_partition(record.id).apply(placed))
        # Moved in the store: release the old configuration everywhere first (the new one
        # keeps the partition's generation, and an agent refuses to change a configuration
        # in place), then configure the new IPUs.
        new_agents = await self._p.agents_of(cluster, moved)
        configs = machine_configs(cluster, moved)
        hosts = await self._p.hosts_of(moved)
        timeout = ctx.settings.agent_timeout_s
        await fan_out(old_agents, lambda a: ctx.gateway.release(a, record.id, timeout=timeout))
        _, failed = await fan_out(
            new_agents,
            lambda a: ctx.gateway.configure(a, configs[a.id], hosts=hosts, timeout=timeout),
        )
        if failed:
            cause = describe_failures(failed)
            await self._p.move_state(moved, Event.RELOCATE_FAILED, errors_=(cause,))
            await ctx.audit(SYSTEM, "relocate_partition", record.id, "failed", cause)
            return False
        await self._p.move_state(moved, Event.RELOCATED, errors_=())
        await ctx.audit(
            SYSTEM,
            "relocate_partition",
            record.id,
            "ok",
            f"moved to slots {list(moved.slots)} of cluster {cluster.id}",
        )
        return True

    async def _count_attempt(self, record: PartitionRecord, why: str) -> None:
        try:
            await self._p.update_record(
                record,
                auto_reset_retry_count=record.auto_reset_retry_count + 1,
                last_auto_reset_time=self._ctx.clock.now(),
                errors=(*record.errors, why) if why not in record.errors else record.errors,
            )
        except Conflict:
            return

    async def repair_round(self, faulty_slots: dict[str, frozenset[int]]) -> None:
        """Auto-reset or relocate every partition in ERROR that may be repaired."""
        ctx = self._ctx
        # Only the ERROR ones: this runs every second, and reading every partition of a
        # pod1024 under load cost more than the rest of the round.
        records = await ctx.db(ctx.db.store.list_partitions, ready_states=[ReadyState.ERROR])
        for record in records:
            if record.state.ready is not ReadyState.ERROR or not self.may_auto_reset(record):
                continue
            bad = faulty_slots.get(record.cluster_id, frozenset())
            unreachable = await self._unreachable_machines(record)
            cluster = await self._inventory.cluster(record.cluster_id)
            unreachable |= {
                m
                for m in {ipu.machine for ipu in record.ipus}
                if not self._steady(cluster.agent_of(m))
            }
            touched = bad.intersection(record.slots)
            if not touched and not unreachable:
                await self.auto_reset(record, "its hardware is healthy again")
            elif record.relocatable:
                avoid = bad | _slots_of_machines(cluster, unreachable)
                await self.relocate(record, frozenset(avoid))

    async def _unreachable_machines(self, record: PartitionRecord) -> set[int]:
        occupancy = await self._ctx.db(self._ctx.db.store.occupancy, record.cluster_id)
        return {
            m for m in {ipu.machine for ipu in record.ipus} if m in occupancy.unavailable_machines
        }

    # -------------------------------------------------- abandoned operations

    async def finish_abandoned(self) -> int:
        """Roll back or finish operations whose owner died; returns how many.

        A dead owner is one whose lease expired (:mod:`.operation_owners`); an operation
        with no owner, or an owner that never took its lease, is abandoned once older than
        ``operation_deadline_s``.
        """
        ctx = self._ctx
        deadline = ctx.settings.operation_deadline_s
        now = ctx.clock.now()
        busy = [r for r in await ctx.db(ctx.db.store.list_partitions) if r.state.busy]
        alive = await self._owners.alive(r.operation_owner for r in busy if r.operation_owner)
        count = 0
        for record in busy:
            owner_alive = alive.get(record.operation_owner or "")
            if owner_alive:
                continue  # its controller lives: however slow, the operation is its own
            if owner_alive is None and (now - record.updated_at).total_seconds() < deadline:
                continue
            try:
                await self._finish(record)
                count += 1
            except errors.ServiceError as exc:
                log.warning("could not finish the abandoned operation on %s: %s", record.id, exc)
        return count

    async def _finish(self, record: PartitionRecord) -> None:
        ctx = self._ctx
        cluster = await self._inventory.cluster(record.cluster_id)
        agents = await self._p.agents_of(cluster, record)
        timeout = ctx.settings.agent_timeout_s
        operation = record.state.operation
        if operation in (OperationState.CREATING, OperationState.REMOVING):
            # A create nobody finished is rolled back; a remove is finished. Agents that
            # cannot be reached now are cleaned up by reconciliation when they return.
            await fan_out(agents, lambda a: ctx.gateway.release(a, record.id, timeout=timeout))
            await self._p.forget_partition(cluster, record)
            what = "rolled back" if operation is OperationState.CREATING else "finished"
            await ctx.audit(
                SYSTEM,
                "recover_partition",
                record.id,
                "ok",
                f"abandoned {operation.name.lower()} {what}",
            )
            return
        _, failed = await self._p.reset_on_agents(cluster, record, agents)
        if failed:
            await self._p.move_state(
                record, Event.RESET_FAILED, errors_=(describe_failures(failed),)
            )
        else:
            await self._p.move_state(record, Event.RESET_DONE, errors_=())
        await ctx.audit(SYSTEM, "recover_partition", record.id, "ok", "abandoned reset finished")

    async def fault_partitions_on(
        self,
        cluster: Cluster,
        machines: Iterable[int],
        slots: Iterable[int],
        reason: str,
        *,
        multi_segment_only: bool = False,
    ) -> None:
        """ERROR for every partition of ``cluster`` on those machines or slots."""
        machine_set, slot_set = set(machines), set(slots)
        records = await self._ctx.db(self._ctx.db.store.list_partitions, cluster_id=cluster.id)
        for record in records:
            if multi_segment_only and record.spec.num_segments < 2:
                continue
            if slot_set.intersection(record.slots) or machine_set.intersection(
                ipu.machine for ipu in record.ipus
            ):
                await self.fault(record, reason)


def _next(record: PartitionRecord, event: Event) -> PartitionState:
    try:
        return transition(record.state, event, partition_id=record.id)
    except IllegalTransition as exc:
        raise errors.FailedPrecondition(str(exc)) from None


def _slots_of_machines(cluster: Cluster, machines: Iterable[int]) -> set[int]:
    pod = cluster.pod()
    return {slot for m in machines for slot in pod.machine_slots(m)}
