"""Partition use-cases: create, remove, reset, and what users read about partitions.

Create is reserve-then-configure: placement picks IPUs on a snapshot, one
transaction records the partition (PENDING/CREATING) and its IPUs (the
database refuses an IPU already taken), then every agent involved is
configured concurrently under a deadline. Only when all succeed does the
partition become ACTIVE/IDLE; if any fails, the others are released, the
reservation is deleted and the caller is told which agent failed and why.
Remove and reset follow the same pattern. Every state change is checked
against the domain's transition table and written with compare-and-set, so
two requests (or two controllers) cannot run conflicting operations.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Unpack

from vpod.agent.errors import AgentError, AgentRefused, Reason
from vpod.agent.model import IpuAssignment, PartitionConfig
from vpod.domain.entities import Agent, Allocation, Cluster
from vpod.domain.errors import DomainError, IllegalTransition, InvalidSpec
from vpod.domain.naming import check_id, natural_key
from vpod.domain.partition_states import (
    ABSENT,
    Event,
    OperationState,
    PartitionState,
    ReadyState,
    transition,
)
from vpod.domain.partitions import PartitionRequirements, PartitionSpec, resolve_partition_spec
from vpod.domain.topology import machine_and_device
from vpod.placement import PartitionRequest, Rejected, place
from vpod.placement.results import PartitionPlacement
from vpod.store.errors import Conflict
from vpod.store.records import AuditEvent, PartitionChanges, PartitionRecord, ipus_of_placement
from vpod.wire.field_copy import copy_fields

from . import errors
from .agent_gateway import describe_failures, fan_out, refused_for
from .caller import Caller, refuse_scoped
from .context import Context
from .inventory import Inventory
from .partition_views import AgentFactsCache
from .run_to_completion import runs_to_completion

log = logging.getLogger("vpod.partitions")

RESERVE_ATTEMPTS = 3
"""State moves retried after a concurrent change (see ``move_state``)."""
CONFLICT_ATTEMPTS = 50
"""Reservations retried on a fresh snapshot after losing a race for the same IPUs."""


class _IdTaken(errors.AlreadyExists):
    """A partition with the requested id exists (seen in the snapshot or by the store)."""

    def __init__(self) -> None:
        super().__init__("that partition id is taken: choose another id")


class _PlacedOnFaultyIpu(errors.Unavailable):
    """An agent refused a new partition because one of its IPUs is faulty: the snapshot that
    placed it predates the fault (another replica heard of it), so placing again may work."""


@dataclasses.dataclass(eq=False)
class PartitionService:
    """Create, remove, reset and read partitions (reserve, configure, commit)."""

    _ctx: Context
    _inventory: Inventory
    _facts: AgentFactsCache
    _recent: dict[str, PartitionRecord] = dataclasses.field(default_factory=dict, init=False)
    """The last version of each live partition this controller wrote."""

    # ---------------------------------------------------------------- reading

    async def get(
        self, caller: Caller, partition_id: str, *, for_change: bool = False
    ) -> PartitionRecord:
        """The partition, if it exists and the caller may see it (else NOT_FOUND either way).

        ``for_change``: the caller is about to change it with compare-and-set, so the
        copy this controller last wrote will do — if another controller changed it since,
        the write fails and is decided again on a fresh read.
        """
        record = self._recent.get(partition_id) if for_change else None
        if record is None:
            record = await self._ctx.db(self._ctx.db.store.find_partition, partition_id)
        if record is None or not caller.may_see(record.id, record.allocation_id):
            raise errors.NotFound(
                f"partition {partition_id} does not exist: `vipu list partitions` shows yours"
            )
        return record

    async def list_partitions(
        self, caller: Caller, *, allocation_id: str | None = None, cluster_id: str | None = None
    ) -> list[PartitionRecord]:
        if caller.partition_scope is not None:
            return await self._scoped_listing(caller, allocation_id, cluster_id)
        if allocation_id:
            await self._inventory.allocation_for(caller, allocation_id)
            wanted: frozenset[str] | None = frozenset({allocation_id})
        else:
            wanted = caller.allocation_ids
        records = await self._ctx.db(
            self._ctx.db.store.list_partitions, allocation_ids=wanted, cluster_id=cluster_id
        )
        return sorted(records, key=lambda r: natural_key(r.id))

    async def _scoped_listing(
        self, caller: Caller, allocation_id: str | None, cluster_id: str | None
    ) -> list[PartitionRecord]:
        """A partition key's listing: its partition (when it matches the filters), nothing else."""
        assert caller.partition_scope is not None
        record = await self._ctx.db(self._ctx.db.store.find_partition, caller.partition_scope)
        if record is None or not caller.may_see(record.id, record.allocation_id):
            return []
        if allocation_id and record.allocation_id != allocation_id:
            return []
        if cluster_id and record.cluster_id != cluster_id:
            return []
        return [record]

    # ----------------------------------------------------------------- create

    @runs_to_completion
    async def create(
        self,
        caller: Caller,
        req: PartitionRequirements,
        *,
        disable_auto_reset: bool = False,
        relocatable: bool = False,
    ) -> PartitionRecord:
        """Create and configure a partition; repeating an identical request is harmless."""
        refuse_scoped(caller, "create partitions")
        try:
            return await self._create_once(caller, req, disable_auto_reset, relocatable)
        except _PlacedOnFaultyIpu:
            # The IPUs were released and the stale snapshot dropped: place once more, on a
            # snapshot that has the stored faults.
            return await self._create_once(caller, req, disable_auto_reset, relocatable)

    async def _create_once(
        self,
        caller: Caller,
        req: PartitionRequirements,
        disable_auto_reset: bool,
        relocatable: bool,
    ) -> PartitionRecord:
        try:
            check_id("partition", req.id)
        except InvalidSpec as exc:
            raise errors.InvalidArgument(str(exc)) from None
        if req.size <= 0:
            raise errors.InvalidArgument(
                "partition size is required: use 1, 2, 4, 8, 16, 64 or a multiple of 64"
            )
        candidates = await self._inventory.candidate_allocations(
            caller, req.allocation_id, req.cluster_id
        )
        reasons: list[str] = []
        spec_errors: list[str] = []
        for allocation, cluster in candidates:
            try:
                spec = resolve_partition_spec(
                    dataclasses.replace(req, allocation_id=allocation.id, cluster_id=cluster.id),
                    pod=cluster.pod(),
                )
            except DomainError as exc:
                spec_errors.append(str(exc))
                continue
            try:
                outcome = await self._reserve(
                    caller, cluster, allocation, spec, disable_auto_reset, relocatable
                )
            except _IdTaken:
                existing = await self._ctx.db(self._ctx.db.store.find_partition, req.id)
                if existing is None:
                    # Removed meanwhile, or our snapshot was stale: reload and place again.
                    self._ctx.occupancy.forget(cluster.id)
                    outcome = await self._reserve(
                        caller, cluster, allocation, spec, disable_auto_reset, relocatable
                    )
                else:
                    return await self._repeat_of(caller, existing, req)
            if isinstance(outcome, Rejected):
                reasons.extend(outcome.reasons)
                continue
            return await self._configure_new(caller, cluster, outcome)
        if spec_errors and not reasons:
            raise errors.InvalidArgument(spec_errors[0])
        raise errors.NoCapacity(
            f"partition {req.id} of {req.size} IPUs does not fit: "
            + "; ".join(reasons or spec_errors)
        )

    async def _repeat_of(
        self, caller: Caller, existing: PartitionRecord, req: PartitionRequirements
    ) -> PartitionRecord:
        """A create for an id that exists: the same request again succeeds, another is refused."""
        if not caller.may_use(existing.allocation_id):
            raise errors.AlreadyExists(f"partition id {req.id} is taken: choose another id")
        same = await self._same_request(existing, req)
        if not same:
            raise errors.AlreadyExists(
                f"partition {req.id} already exists with {existing.spec.size} IPUs in allocation"
                f" {existing.allocation_id}: remove it first or choose another id"
            )
        if existing.state.ready is ReadyState.ACTIVE:
            return existing
        raise errors.FailedPrecondition(
            f"partition {req.id} already exists and is {existing.state.label}: wait for it to"
            " finish, or remove it with --force"
        )

    async def _same_request(self, existing: PartitionRecord, req: PartitionRequirements) -> bool:
        """Whether ``req`` resolves to exactly the spec ``existing`` was created with."""
        if req.allocation_id and req.allocation_id != existing.allocation_id:
            return False
        if req.cluster_id and req.cluster_id != existing.cluster_id:
            return False
        cluster = await self._inventory.cluster(existing.cluster_id)
        try:
            spec = resolve_partition_spec(
                dataclasses.replace(
                    req, allocation_id=existing.allocation_id, cluster_id=existing.cluster_id
                ),
                pod=cluster.pod(),
            )
        except DomainError:
            return False
        return spec == existing.spec

    async def _reserve(
        self,
        caller: Caller,
        cluster: Cluster,
        allocation: Allocation,
        spec: PartitionSpec,
        disable_auto_reset: bool,
        relocatable: bool,
    ) -> PartitionRecord | Rejected:
        ctx = self._ctx
        request = copy_fields(PartitionRequest, spec, allocation_id=allocation.id)
        async with ctx.occupancy.lock(cluster.id):
            rejected_fresh = False
            for attempt in range(CONFLICT_ATTEMPTS):
                # A refusal on the cached snapshot is checked once on a fresh one; a lost race
                # (another controller took the IPUs first) is placed again on a fresh one.
                snapshot = await ctx.occupancy.get(cluster, fresh=attempt > 0)
                if snapshot.has_partition(spec.id):
                    raise _IdTaken()
                placed = place(snapshot, request)
                if isinstance(placed, Rejected):
                    if rejected_fresh or attempt > 0:
                        return placed
                    rejected_fresh = True
                    continue
                assert isinstance(placed, PartitionPlacement)
                now = ctx.clock.now()
                record = PartitionRecord(
                    spec=dataclasses.replace(
                        spec, allocation_id=allocation.id, cluster_id=cluster.id
                    ),
                    ipus=ipus_of_placement(placed),
                    state=transition(ABSENT, Event.CREATE_REQUESTED, partition_id=spec.id),
                    created_at=now,
                    updated_at=now,
                    disable_auto_reset=disable_auto_reset,
                    relocatable=relocatable,
                    max_auto_reset_retries=ctx.settings.max_auto_reset_retries,
                    operation_owner=ctx.owner or None,
                )
                event = ctx.audit_event(
                    caller,
                    "create_partition",
                    spec.id,
                    "reserved",
                    f"{spec.size} IPUs in allocation {allocation.id}",
                )
                try:
                    stored = await ctx.db(ctx.db.store.reserve_partition, record, event=event)
                except Conflict:
                    continue
                except errors.AlreadyExists:
                    raise _IdTaken() from None
                ctx.occupancy.put(cluster.id, snapshot.apply(placed))
                self._recent[stored.id] = stored
                return stored
        raise errors.Unavailable(
            f"partition {spec.id}: cluster {cluster.id} changed under {CONFLICT_ATTEMPTS}"
            " placements in a row (other controllers are busy there); retry"
        )

    async def _configure_new(
        self, caller: Caller, cluster: Cluster, record: PartitionRecord
    ) -> PartitionRecord:
        agents = await self.agents_of(cluster, record)
        configs = _machine_configs(cluster, record)
        hosts = await self.hosts_of(record)
        timeout = self._ctx.settings.agent_timeout_s
        gateway = self._ctx.gateway
        _, failed = await gateway.configure_all(agents, configs, hosts=hosts, timeout=timeout)
        busy = [a for a in agents if refused_for(failed.get(a.id), Reason.IPU_BUSY)]
        if busy:  # maybe strays a lost race left behind: freed, then configured once more
            again, still = await fan_out(
                busy,
                lambda a: self._configure_after_busy(
                    a, configs[a.id], hosts, timeout, failed[a.id]
                ),
            )
            failed = {k: v for k, v in failed.items() if k not in again} | still
        if not failed:
            # What the agents reported for IPUoF is recorded now: a dead agent must not hide
            # the configuration of a partition that is ACTIVE on it.
            await self._facts.remember(agents)
            return await self.move_state(record, Event.CONFIGURED, errors_=())
        # Undo: release everywhere (release is idempotent), then give the IPUs back.
        await gateway.release_all(agents, record.id, timeout=timeout)
        await self.forget_partition(cluster, record)
        cause = describe_failures(failed)
        await self._ctx.audit(caller, "create_partition", record.id, "failed", cause)
        message = f"partition {record.id} could not be created and its IPUs were released: {cause}"
        if any(refused_for(e, Reason.IPU_FAULTED) for e in failed.values()):
            self._ctx.occupancy.forget(cluster.id)
            raise _PlacedOnFaultyIpu(message)
        raise errors.Unavailable(message)

    async def _configure_after_busy(
        self,
        agent: Agent,
        config: PartitionConfig,
        hosts: Sequence[str],
        timeout: float,
        refusal: AgentError,
    ) -> None:
        """Configure a new partition's part on ``agent``, which refused it as busy: IPUs
        the store gave this partition but the agent still holds for a partition the store
        does not know (a stray a lost race or an interrupted undo left behind) are freed,
        and the part configured once more. Nothing to free: the refusal stands."""
        if not await self._free_strays(agent, config, timeout):
            raise refusal
        await self._ctx.gateway.configure(agent, config, hosts=hosts, timeout=timeout)

    async def _free_strays(self, agent: Agent, config: PartitionConfig, timeout: float) -> int:
        """Release, on ``agent``, the partitions that hold IPUs of ``config`` and that the
        store does not have; returns how many. The store reserved these IPUs for
        ``config``'s partition, so whatever else the agent has on them is left over."""
        ctx = self._ctx
        ours = {ipu.device_id for ipu in config.ipus}
        freed = 0
        for held in await ctx.gateway.configurations(agent, timeout=timeout):
            other = held.config.partition_id
            if other == config.partition_id or not ours & {i.device_id for i in held.config.ipus}:
                continue
            if await ctx.db(ctx.db.store.find_partition, other) is not None:
                continue  # the store knows it: not ours to undo
            log.warning("releasing stray partition %s on %s (not in the store)", other, agent.id)
            await ctx.gateway.release(agent, other, timeout=timeout)
            freed += 1
        return freed

    # ----------------------------------------------------------------- remove

    @runs_to_completion
    async def remove(self, caller: Caller, partition_id: str, *, force: bool = False) -> None:
        refuse_scoped(caller, "remove it")
        record = await self.get(caller, partition_id, for_change=True)
        cluster = await self._inventory.cluster(record.cluster_id)
        request = Event.FORCE_REMOVE_REQUESTED if force else Event.REMOVE_REQUESTED
        record = await self.move_state(record, request)
        agents = await self.agents_of(cluster, record)
        timeout = self._ctx.settings.agent_timeout_s
        _, failed = await self._ctx.gateway.release_all(agents, record.id, timeout=timeout)
        if failed and not force:
            cause = describe_failures(failed)
            await self.move_state(record, Event.REMOVE_FAILED, errors_=(cause,))
            await self._ctx.audit(caller, "remove_partition", partition_id, "failed", cause)
            raise errors.Unavailable(
                f"partition {partition_id} could not be removed: {cause}; fix the agent or use"
                " --force"
            )
        detail = f"ignored: {describe_failures(failed)}" if failed else ""
        entry = self._ctx.audit_event(caller, "remove_partition", partition_id, "ok", detail)
        await self.forget_partition(cluster, record, event=entry)

    # ------------------------------------------------------------------ reset

    @runs_to_completion
    async def reset(self, caller: Caller, partition_id: str, *, relocatable: bool = False) -> None:
        record = await self.get(caller, partition_id)
        if relocatable and not record.relocatable:
            try:
                record = await self.update_record(record, relocatable=True)
            except Conflict:
                raise errors.FailedPrecondition(
                    f"partition {partition_id} changed while being reset: retry"
                ) from None
        cluster = await self._inventory.cluster(record.cluster_id)
        record = await self.move_state(record, Event.RESET_REQUESTED)
        agents = await self.agents_of(cluster, record)
        _, failed = await self.reset_on_agents(cluster, record, agents)
        if failed:
            cause = describe_failures(failed)
            await self.move_state(record, Event.RESET_FAILED, errors_=(cause,))
            await self._ctx.audit(caller, "reset_partition", partition_id, "failed", cause)
            raise errors.Unavailable(f"partition {partition_id} could not be reset: {cause}")
        # A person reset it: automatic attempts start counting again.
        await self.move_state(
            record, Event.RESET_DONE, errors_=(), also={"auto_reset_retry_count": 0}
        )
        await self._ctx.audit(caller, "reset_partition", partition_id, "ok", "")

    # ---------------------------------------------------------------- helpers

    async def reset_on_agents(
        self,
        cluster: Cluster,
        record: PartitionRecord,
        agents: list[Agent],
        *,
        unless_attached: bool = False,
    ) -> tuple[dict[str, None], dict[str, AgentError]]:
        """Reset the partition on every agent; one that lost it (it restarted) is given
        its configuration again first, since a reset means "as freshly configured".
        ``unless_attached``: an agent where an application holds one of its IPUs refuses
        (``Reason.IPU_ATTACHED``) instead of evicting it."""
        ctx = self._ctx
        timeout = ctx.settings.agent_timeout_s
        configs = _machine_configs(cluster, record)
        hosts = await self.hosts_of(record)

        async def reset(agent: Agent) -> None:
            try:
                await ctx.gateway.reset(
                    agent, record.id, unless_attached=unless_attached, timeout=timeout
                )
            except AgentRefused as exc:
                if exc.reason is not Reason.UNKNOWN_PARTITION:
                    raise
                await ctx.gateway.configure(agent, configs[agent.id], hosts=hosts, timeout=timeout)

        return await fan_out(agents, reset)

    async def move_state(
        self,
        record: PartitionRecord,
        event: Event,
        *,
        errors_: Sequence[str] | None = None,
        also: PartitionChanges | None = None,
    ) -> PartitionRecord:
        """Apply a life-cycle event with compare-and-set; refuse what the table refuses.

        ``also``: further changes written in the same update.

        The heartbeat monitor may mark the partition ERROR while an operation
        runs (it changes the ready state, never the operation): then the event
        is applied again to the fresh record, keeping the fault's reason.
        """
        ctx = self._ctx
        for _ in range(RESERVE_ATTEMPTS):
            try:
                state: PartitionState = transition(record.state, event, partition_id=record.id)
            except IllegalTransition as exc:
                raise errors.FailedPrecondition(str(exc)) from None
            changes: PartitionChanges = {**(also or {}), "state": state}
            if errors_ is not None:
                kept = [e for e in record.errors if e not in errors_] if errors_ else []
                changes["errors"] = (*kept, *errors_)
            try:
                return await self.update_record(record, **changes)
            except Conflict:
                fresh = await ctx.db(ctx.db.store.find_partition, record.id)
                if fresh is None:
                    raise errors.NotFound(
                        f"partition {record.id} does not exist (it was removed meanwhile)"
                    ) from None
                if fresh.state.operation is not record.state.operation:
                    break
                record = fresh
        raise errors.FailedPrecondition(
            f"partition {record.id} was changed by another request at the same time:"
            " check its status and retry"
        )

    async def update_record(
        self, record: PartitionRecord, **changes: Unpack[PartitionChanges]
    ) -> PartitionRecord:
        """Compare-and-set write; raises Conflict when the record moved meanwhile.

        A change of state names this controller as the owner of the operation it starts,
        and no owner once the partition is idle (:mod:`.operation_owners`).
        """
        ctx = self._ctx
        state = changes.get("state")
        if state is not None:
            changes["operation_owner"] = (ctx.owner or None) if state.busy else None
        try:
            updated: PartitionRecord = await ctx.db(
                ctx.db.store.update_partition_from, record, updated_at=ctx.clock.now(), **changes
            )
        except (Conflict, errors.NotFound):
            self._recent.pop(record.id, None)
            raise
        self._recent[updated.id] = updated
        return updated

    async def forget_partition(
        self, cluster: Cluster, record: PartitionRecord, *, event: AuditEvent | None = None
    ) -> None:
        """Delete the partition (committing ``event`` with it); give its IPUs back."""
        ctx = self._ctx
        self._recent.pop(record.id, None)
        async with ctx.occupancy.lock(cluster.id):
            try:
                await ctx.db(ctx.db.store.release_partition_from, record, event=event)
            except Conflict:  # changed meanwhile (e.g. marked ERROR): release what is there
                await ctx.db(ctx.db.store.release_partition, record.id, event=event)
            except errors.NotFound:
                pass  # already gone (a concurrent forced remove): nothing to give back
            snapshot = await ctx.occupancy.get(cluster)
            try:
                ctx.occupancy.put(cluster.id, snapshot.release_partition(record.id))
            except DomainError:
                ctx.occupancy.forget(cluster.id)

    async def hosts_of(self, record: PartitionRecord) -> tuple[str, ...]:
        """Who may attach to the partition over IPUoF: its allocation's hosts (CIDRs)."""
        return await self._inventory.allocation_hosts(record.allocation_id)

    async def agents_of(self, cluster: Cluster, record: PartitionRecord) -> list[Agent]:
        machines = sorted({ipu.machine for ipu in record.ipus})
        return await self._inventory.agents(cluster.agent_of(m) for m in machines)


def _machine_configs(cluster: Cluster, record: PartitionRecord) -> dict[str, PartitionConfig]:
    """Split a partition into what each agent must configure."""
    per_machine: dict[int, list[IpuAssignment]] = defaultdict(list)
    for ipu in record.ipus:  # in routing order (a record's rule), so each machine's are too
        machine, device_id = machine_and_device(ipu.slot)
        per_machine[machine].append(
            IpuAssignment(
                device_id=device_id,
                routing_id=ipu.routing_id,
                segment_id=ipu.segment,
                gcd_id=ipu.gcd,
            )
        )
    spec = record.spec
    generation = int(record.created_at.timestamp() * 1_000_000)
    return {
        cluster.agent_of(machine): PartitionConfig(
            partition_id=record.id,
            generation=generation,
            ipus=tuple(ipus),
            partition_size=spec.size,
            num_ipulink_segments=spec.num_segments,
            ipulink_routing=spec.routing,
            sync_type=spec.sync_type,
            gw_routing=spec.gw_routing,
            reconfigurable=spec.reconfigurable,
        )
        for machine, ipus in per_machine.items()
    }


def machine_configs(cluster: Cluster, record: PartitionRecord) -> dict[str, PartitionConfig]:
    """Public for reconciliation: what every agent of a partition should hold."""
    return _machine_configs(cluster, record)


__all__ = ["OperationState", "PartitionService", "machine_configs"]
