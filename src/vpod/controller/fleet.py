"""Agent operations: registration, discovery, health, reconciliation, faults and link tests.

Reconciliation makes an agent hold exactly what the store says it should:
configurations the store does not know are released, missing ones are
applied again. It runs when an agent registers (a new boot id means the
machine lost its configuration, e.g. after ``vpod up`` restarts the pod) and
on demand.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from vpod.agent.errors import AgentError, AgentRefused, Reason
from vpod.agent.model import (
    ConfiguredPartition,
    Fault,
    LinkTestKind,
    LinkTestResult,
    PartitionConfig,
)
from vpod.domain.entities import Agent, Cluster
from vpod.domain.errors import DomainError
from vpod.domain.excerpts import excerpt
from vpod.domain.partition_states import OperationState
from vpod.store.records import AgentHealth, AgentHealthState

from . import errors
from .agent_gateway import fan_out
from .agent_health import AgentHealthBook
from .caller import SYSTEM, Caller
from .context import Context
from .inventory import Inventory
from .partition_views import AgentFactsCache
from .partitions import machine_configs

F = TypeVar("F", contravariant=True)


class _FaultChange(Protocol[F]):
    """The gateway's inject or clear call."""

    async def __call__(self, agent: Agent, fault: F, /, *, timeout: float) -> list[Fault]: ...


log = logging.getLogger("vpod.fleet")

RECONCILE_IN_FLIGHT = 32
"""Agents a reconciliation of the whole fleet calls at once."""
MAX_ADDRESS_CHARS = 253 + 6
"""A DNS name and a port: no address to probe is longer."""


@dataclass(frozen=True)
class Wanted:
    """What an agent should hold of one partition: its configuration and IPUoF hosts."""

    config: PartitionConfig
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class ConvergeSteps:
    """What bringing one agent in step with the store takes, in this order."""

    release: tuple[str, ...] = ()
    """Partitions it holds that the store does not want there (and no operation is changing)."""
    push_hosts: tuple[Wanted, ...] = ()
    """Partitions it holds as wanted, but with other IPUoF hosts."""
    configure: tuple[tuple[Wanted, bool], ...] = ()
    """Partitions to configure, each with whether another configuration of it is released
    first (it moved meanwhile)."""

    def __bool__(self) -> bool:
        return bool(self.release or self.push_hosts or self.configure)


def converge_steps(
    held: Sequence[ConfiguredPartition], wanted: Mapping[str, Wanted], busy: Set[str]
) -> ConvergeSteps:
    """What takes an agent holding ``held`` to ``wanted``; ``busy`` partitions are left to
    the operation changing them (none of it when the agent is in step)."""
    held_ids = {c.config.partition_id: c for c in held}
    push: list[Wanted] = []
    configure: list[tuple[Wanted, bool]] = []
    for partition_id, want in sorted(wanted.items()):
        current = held_ids.get(partition_id)
        if current is not None and _same_ipus(current.config, want.config):
            if current.allowed_hosts != want.hosts:
                push.append(want)
            continue
        configure.append((want, current is not None))
    return ConvergeSteps(
        release=tuple(sorted(set(held_ids) - set(wanted) - busy)),
        push_hosts=tuple(push),
        configure=tuple(configure),
    )


@dataclass(frozen=True)
class HealthView:
    reachable: bool
    reason: str
    last_seen: datetime | None
    faults: tuple[Fault, ...] = ()
    """Active injected faults, as the last heartbeat saw them."""
    boot_id: str = ""
    ipuof_address: str = ""


@dataclass(eq=False)
class Fleet:
    """The agents as a fleet: registration, discovery, health, reconciliation, faults, tests."""

    _ctx: Context
    _inventory: Inventory
    _facts: AgentFactsCache
    _health: AgentHealthBook

    async def register(
        self, agent: Agent, *, boot_id: str, ipuof_address: str = ""
    ) -> tuple[bool, str]:
        known, message = await self._inventory.register_agent(agent)
        rebooted = self._health.registered(
            agent.id, boot_id, ipuof_address, self._ctx.clock.monotonic()
        )
        if rebooted:
            self._facts.forget(agent.id)
            await self._ctx.gateway.reconnect(agent)
        await self._ctx.db(
            self._ctx.db.store.set_agent_health,
            agent.id,
            AgentHealthState.REACHABLE,
            at=self._ctx.clock.now(),
            reason="",
        )
        self._health.believe(agent.id, AgentHealthState.REACHABLE)
        self._ctx.occupancy.forget()
        # Learn (and record) its IPUoF facts now, off the partition path: else the first
        # configure on each machine waits for them, most creates for a while on a big pod.
        await self._facts.remember([agent])
        try:
            changed = await self.reconcile(agent)
        except AgentError as exc:
            log.warning("reconciling %s after registration failed: %s", agent.id, exc)
            return known, message
        if changed:
            message += f"; reconciled {changed} configuration(s)"
        return known, message

    async def health_of(self, agent_id: str) -> HealthView:
        health = await self._ctx.db(self._ctx.db.store.get_agent_health, agent_id)
        return self._view(health)

    async def health_of_all(self) -> dict[str, HealthView]:
        """Every agent's health in one read (a pod4096 lists 1,024 agents: one query, not 1,024)."""
        stored = await self._ctx.db(self._ctx.db.store.list_agent_health)
        return {health.agent_id: self._view(health) for health in stored}

    def _view(self, health: AgentHealth) -> HealthView:
        agent_id = health.agent_id
        return HealthView(
            reachable=health.state is not AgentHealthState.UNREACHABLE,
            reason=health.reason,
            last_seen=health.last_heartbeat,
            faults=self._health.faults(agent_id),
            boot_id=self._health.boot_id(agent_id),
            ipuof_address=self._health.ipuof_address(agent_id),
        )

    async def reconcile(self, agent: Agent) -> int:
        """Make one agent hold exactly the store's configurations; returns how many changed.

        The agent is read before the store: a configuration it holds was reserved in
        the store before it was sent, so the store read that follows knows it (or knows
        it is gone). Partitions with an operation under way are left to that operation.
        """
        timeout = self._ctx.settings.agent_timeout_s
        held = await self._ctx.gateway.configurations(agent, timeout=timeout)
        wanted, busy = await self._wanted_configs()
        return await self._converge(agent, converge_steps(held, wanted.get(agent.id, {}), busy))

    async def reconcile_all(
        self, agents: Sequence[Agent], fleets: Iterable[Sequence[Agent]] = ()
    ) -> dict[str, AgentError]:
        """Reconcile many agents with one read of the store; returns the agents that failed.

        As in :meth:`reconcile`, every agent is read before the store. ``fleets`` are
        groups of these agents that share an agent process, each led by the member to ask:
        a group's configurations are read in one call to its process. At most
        ``RECONCILE_IN_FLIGHT`` calls are made at once, so a pod4096 neither floods its
        agents nor delays the controller's other calls."""
        held, failed = await self._read_held(agents, fleets)
        wanted, busy = await self._wanted_configs()

        steps = {
            a.id: converge_steps(held[a.id], wanted.get(a.id, {}), busy)
            for a in agents
            if a.id in held
        }
        # Nearly every agent holds what it should: only the others get a call of their own.
        behind = [a for a in agents if steps.get(a.id)]
        _, failed_after = await fan_out(
            behind, lambda a: self._converge(a, steps[a.id]), in_flight=RECONCILE_IN_FLIGHT
        )
        return failed | failed_after

    async def _read_held(
        self, agents: Sequence[Agent], fleets: Iterable[Sequence[Agent]]
    ) -> tuple[dict[str, list[ConfiguredPartition]], dict[str, AgentError]]:
        """What each agent holds, and the agents that could not be read. A process that
        fails a group's call fails its members this round (asking a process too busy to
        answer once for each of its machines alone would bury it); a member the process
        leaves out is asked alone."""
        gateway = self._ctx.gateway
        timeout = self._ctx.settings.agent_timeout_s
        ids = {a.id for a in agents}
        groups = [g for g in ([a for a in f if a.id in ids] for f in fleets) if len(g) > 1]

        async def read_group(members: list[Agent]) -> dict[str, list[ConfiguredPartition]]:
            return await gateway.fleet_configurations(
                members[0], [a.id for a in members], timeout=timeout
            )

        leaders = {g[0].id: g for g in groups}
        answers, group_failed = await fan_out(
            [g[0] for g in groups],
            lambda a: read_group(leaders[a.id]),
            in_flight=RECONCILE_IN_FLIGHT,
        )
        held: dict[str, list[ConfiguredPartition]] = {}
        failed: dict[str, AgentError] = {}
        for leader_id, exc in group_failed.items():
            failed.update({a.id: exc for a in leaders[leader_id]})
        for members in groups:
            found = answers.get(members[0].id, {})
            held.update({a.id: found[a.id] for a in members if a.id in found})

        async def read(agent: Agent) -> list[ConfiguredPartition]:
            return await gateway.configurations(agent, timeout=timeout)

        alone = [a for a in agents if a.id not in held and a.id not in failed]
        held_alone, failed_alone = await fan_out(alone, read, in_flight=RECONCILE_IN_FLIGHT)
        return held | held_alone, failed | failed_alone

    async def _wanted_configs(
        self,
    ) -> tuple[dict[str, dict[str, Wanted]], set[str]]:
        """What the store says each agent should hold (agent -> partition -> configuration
        and IPUoF hosts), and the partitions an operation is changing (that operation
        decides for them)."""
        ctx = self._ctx
        wanted: dict[str, dict[str, Wanted]] = {}
        busy: set[str] = set()
        for cluster in await self._inventory.list_clusters():
            for record in await ctx.db(ctx.db.store.list_partitions, cluster_id=cluster.id):
                if record.state.busy:
                    busy.add(record.id)
                    continue
                hosts = await self._inventory.allocation_hosts(record.allocation_id)
                for agent_id, config in machine_configs(cluster, record).items():
                    wanted.setdefault(agent_id, {})[record.id] = Wanted(config, hosts)
        return wanted, busy

    async def _converge(self, agent: Agent, steps: ConvergeSteps) -> int:
        ctx = self._ctx
        timeout = ctx.settings.agent_timeout_s
        changed = 0
        for partition_id in steps.release:
            await ctx.gateway.release(agent, partition_id, timeout=timeout)
            changed += 1
        for want in steps.push_hosts:  # a push of new hosts was missed
            await ctx.gateway.set_partition_hosts(
                agent, want.config.partition_id, want.hosts, timeout=timeout
            )
            changed += 1
        for want, moved in steps.configure:
            partition_id = want.config.partition_id
            if moved:  # moved elsewhere meanwhile: an agent never edits in place
                await ctx.gateway.release(agent, partition_id, timeout=timeout)
            await ctx.gateway.configure(agent, want.config, hosts=want.hosts, timeout=timeout)
            changed += 1
            # The store was read before this configure: a remove that released the partition
            # meanwhile would leave it configured here for good. Read again now it is in
            # place; a remove that starts later releases it itself.
            now = await ctx.db(ctx.db.store.find_partition, partition_id)
            if now is None or now.state.operation is OperationState.REMOVING:
                await ctx.gateway.release(agent, partition_id, timeout=timeout)
        if changed:
            await ctx.audit(SYSTEM, "reconcile_agent", agent.id, "ok", f"{changed} change(s)")
        return changed

    async def discover(
        self, caller: Caller, addresses: Sequence[str], *, add: bool, key: str = ""
    ) -> list[dict[str, Any]]:
        """Probe addresses for agents; optionally create the ones found. Each is asked with
        ``key`` (``vipu-agent --key-file``) or, without one, the key the agent at that
        address registered with: an agent answers nothing else."""
        known = {a.id for a in await self._inventory.list_agents()}
        found: list[dict[str, Any]] = []
        for address in addresses:
            if len(address) > MAX_ADDRESS_CHARS:
                raise errors.InvalidArgument(
                    f"address {excerpt(address, quote=True)} is not HOST:PORT: a host name has"
                    " at most 253 characters"
                )
            host, _, port_text = address.rpartition(":")
            entry: dict[str, Any] = {"host": host, "port": 0}
            if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
                entry["error"] = (
                    f"{excerpt(address, quote=True)} is not HOST:PORT with a port in 1..65535"
                )
                found.append(entry)
                continue
            entry["port"] = int(port_text)
            agent_key = key or await self._inventory.key_at(host, int(port_text))
            try:
                facts = await self._ctx.gateway.identity_at(
                    address, key=agent_key, timeout=self._ctx.settings.agent_timeout_s
                )
            except AgentError as exc:
                entry["error"] = exc.message
                found.append(entry)
                continue
            entry.update(
                agent_id=facts.agent_id,
                machine_type=facts.machine_type.value,
                serial=facts.serial,
                known=facts.agent_id in known,
            )
            if add and facts.agent_id not in known:
                try:
                    await self._inventory.create_agent(
                        caller,
                        facts.agent_id,
                        host,
                        int(port_text),
                        machine_type=facts.machine_type,
                        serial=facts.serial,
                        key=key,
                    )
                    entry["added"] = True
                except (errors.ServiceError, DomainError) as exc:
                    entry["error"] = str(exc)
            found.append(entry)
        return found

    async def _agent(self, agent_id: str) -> Agent:
        try:
            agents = await self._inventory.agents([agent_id])
        except errors.FailedPrecondition:
            raise errors.NotFound(
                f"agent {agent_id} does not exist: `vipu-admin list agents` shows them"
            ) from None
        return agents[0]

    async def inject_fault(self, caller: Caller, agent_id: str, fault: Fault) -> list[Fault]:
        faults = await self._emulator_faults(self._ctx.gateway.inject_fault, agent_id, fault)
        await self._ctx.audit(caller, "inject_fault", agent_id, "ok", fault.kind.name)
        return faults

    async def clear_fault(self, caller: Caller, agent_id: str, fault: Fault | None) -> list[Fault]:
        """End one fault, or every fault of the agent when ``fault`` is None."""
        faults = await self._emulator_faults(self._ctx.gateway.clear_fault, agent_id, fault)
        await self._ctx.audit(caller, "clear_fault", agent_id, "ok")
        return faults

    async def _emulator_faults(
        self, change: _FaultChange[F], agent_id: str, fault: F
    ) -> list[Fault]:
        """The agent's faults after ``change``; its refusal is the caller's to fix."""
        agent = await self._agent(agent_id)
        try:
            return await change(agent, fault, timeout=self._ctx.settings.agent_timeout_s)
        except AgentRefused as exc:
            raise _fault_refusal(exc) from None
        except AgentError as exc:
            raise errors.Unavailable(exc.message) from None

    async def test_cluster(
        self, caller: Caller, cluster_id: str, kinds: list[LinkTestKind]
    ) -> tuple[Cluster, dict[str, list[LinkTestResult]], dict[str, AgentError]]:
        """Run the link tests on every agent of a cluster at once."""
        cluster = await self._inventory.cluster(cluster_id)
        agents = [await self._agent(a) for a in cluster.agent_ids]
        timeout = self._ctx.settings.agent_timeout_s * 4
        done, failed = await fan_out(
            agents, lambda a: self._ctx.gateway.link_tests(a, kinds, timeout=timeout)
        )
        await self._ctx.audit(caller, "test_cluster", cluster_id, "failed" if failed else "ok")
        return cluster, done, failed


def _fault_refusal(exc: AgentRefused) -> errors.ServiceError:
    """An agent's refusal of a fault: off on that agent (a precondition) or a bad fault."""
    if exc.reason is Reason.FAULT_INJECTION_DISABLED:
        return errors.FailedPrecondition(exc.message)
    return errors.InvalidArgument(exc.message)


def _same_ipus(held: PartitionConfig, wanted: PartitionConfig) -> bool:
    return held.generation == wanted.generation and sorted(
        (i.device_id, i.routing_id) for i in held.ipus
    ) == sorted((i.device_id, i.routing_id) for i in wanted.ipus)
