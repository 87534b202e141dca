"""What applications and users read about partitions: IPUoF configs and IPU attributes.

Building an IPUoF config needs facts only the agents know (the machine's
RDMA address, each IPU's ports and chip id, software versions). They are
asked once per agent boot (when it registers) and cached: they do not
change while an agent runs, and a re-registration with a new boot id asks
again. They are also recorded in the store (``agents.ipuof_facts``), at
the latest when a partition is configured on the agent: a dead agent does
not hide what the controller knows, its partitions' configurations are
served from the record (what an application does with an IPU whose machine
is down is its own affair; the partition's status names the unreachable
agent).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from google.protobuf.json_format import MessageToDict, ParseDict

from vpod.agent.convert import identity_from_wire, identity_to_wire
from vpod.agent.errors import AgentError
from vpod.agent.model import MachineIdentity
from vpod.domain.entities import Agent, Cluster
from vpod.domain.errors import DomainError
from vpod.domain.ipuof import IpuEndpoint, partition_ipuof_config
from vpod.domain.partition_states import ReadyState
from vpod.domain.topology import IpuRef
from vpod.store.records import AgentHealthState, PartitionIpu, PartitionRecord
from vpod.wire import agent_pb2
from vpod.wire.field_copy import copy_fields

from . import errors
from .caller import Caller
from .context import Context
from .inventory import Inventory


async def unreachable_agents(ctx: Context) -> dict[str, str]:
    """Agents the heartbeats found unreachable (as stored, so every replica agrees), by id."""
    health = await ctx.db(ctx.db.store.list_agent_health)
    return {h.agent_id: h.reason for h in health if h.state is AgentHealthState.UNREACHABLE}


def placed_ipus(record: PartitionRecord, cluster: Cluster) -> Iterator[tuple[PartitionIpu, IpuRef]]:
    """Each IPU of the partition with where it sits in its cluster's pod."""
    pod = cluster.pod()
    for ipu in record.ipus:
        yield ipu, pod.ipu(ipu.slot)


class AgentFactsCache:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._facts: dict[str, MachineIdentity] = {}

    def forget(self, agent_id: str) -> None:
        self._facts.pop(agent_id, None)

    async def of(self, agents: Iterable[Agent]) -> dict[str, MachineIdentity]:
        """Each agent's facts: cached, else asked (and recorded), else as last recorded."""
        wanted = list(agents)
        missing = [a for a in wanted if a.id not in self._facts]
        if missing:
            timeout = self._ctx.settings.agent_timeout_s
            results = await asyncio.gather(
                *(self._ctx.gateway.identity(a, timeout=timeout) for a in missing),
                return_exceptions=True,
            )
            silent: dict[str, AgentError] = {}
            for agent, result in zip(missing, results, strict=True):
                if isinstance(result, AgentError):
                    silent[agent.id] = result
                    continue
                if isinstance(result, BaseException):
                    raise result
                self._facts[agent.id] = result
                await self._record(result)
            if silent:
                return {**await self._recorded(silent), **self._known(wanted, silent)}
        return {a.id: self._facts[a.id] for a in wanted}

    async def remember(self, agents: Iterable[Agent]) -> None:
        """Make sure the store holds these agents' facts (at registration, and after a
        configure for an agent registered with another controller): best effort, an agent
        that died meanwhile is recorded when it is next heard."""
        with contextlib.suppress(errors.Unavailable):
            await self.of(agents)

    def _known(
        self, wanted: list[Agent], silent: dict[str, AgentError]
    ) -> dict[str, MachineIdentity]:
        return {a.id: self._facts[a.id] for a in wanted if a.id not in silent}

    async def _record(self, facts: MachineIdentity) -> None:
        data = MessageToDict(identity_to_wire(facts), preserving_proto_field_name=True)
        await self._ctx.db(self._ctx.db.store.set_ipuof_facts, facts.agent_id, data)

    async def _recorded(self, silent: dict[str, AgentError]) -> dict[str, MachineIdentity]:
        """The recorded facts of agents that did not answer; UNAVAILABLE for one never heard."""
        stored = await self._ctx.db(self._ctx.db.store.ipuof_facts, sorted(silent))
        found: dict[str, MachineIdentity] = {}
        for agent_id, failure in sorted(silent.items()):
            if agent_id not in stored:
                raise errors.Unavailable(
                    f"cannot read the IPUoF details of agent {agent_id}: {failure.message}"
                )
            found[agent_id] = identity_from_wire(
                ParseDict(stored[agent_id], agent_pb2.Identity(), ignore_unknown_fields=True)
            )
        return found


def agents_among(record: PartitionRecord, cluster: Cluster, agent_ids: Iterable[str]) -> list[str]:
    """Which of ``agent_ids`` drive a machine of the partition, sorted."""
    return sorted({cluster.agent_of(ipu.machine) for ipu in record.ipus} & set(agent_ids))


def with_unreachable_agents(
    record: PartitionRecord, cluster: Cluster, unreachable: Mapping[str, str]
) -> PartitionRecord:
    """``record`` with a line in its errors for each of its agents that cannot be reached
    (``unreachable``: agent id to the reason), as read now; nothing is stored."""
    agents = agents_among(record, cluster, unreachable)
    notes = [
        f"agent {a} is unreachable ({unreachable[a] or 'it stopped answering'}): the IPUoF"
        " configuration is served from what the controller recorded"
        for a in agents
    ]
    if not notes:
        return record
    return dataclasses.replace(record, errors=(*record.errors, *notes))


class PartitionViews:
    def __init__(self, ctx: Context, inventory: Inventory, facts: AgentFactsCache) -> None:
        self._ctx = ctx
        self._inventory = inventory
        self._facts = facts

    async def status(self, record: PartitionRecord) -> PartitionRecord:
        """The record as its status shows it: naming any of its agents that cannot be reached."""
        unreachable = await unreachable_agents(self._ctx)
        if not unreachable:
            return record
        cluster = await self._inventory.cluster(record.cluster_id)
        return with_unreachable_agents(record, cluster, unreachable)

    async def _serves_config(self, record: PartitionRecord) -> bool:
        """ACTIVE; or in ERROR, holding its configuration, because an agent of it stopped
        answering: the controller cannot see its IPUs, so it serves what it recorded (the
        status names the agent). A partition in ERROR for a fault its agents reported (an
        IPU, a link) is refused, as any other state: IPUoF clients wait on that refusal
        until the fault is repaired and the partition ACTIVE again."""
        state = record.state
        if state.ready is ReadyState.ACTIVE:
            return True
        if not state.holds_its_configuration:
            return False
        unreachable = await unreachable_agents(self._ctx)
        if not unreachable:
            return False
        cluster = await self._inventory.cluster(record.cluster_id)
        return bool(agents_among(record, cluster, unreachable))

    async def ipuof_config(self, record: PartitionRecord, gcd_id: int | None) -> dict[str, Any]:
        """The wire's ``PartitionConfig`` as plain data (see ``vpod.domain.ipuof``)."""
        if not await self._serves_config(record):
            raise errors.FailedPrecondition(
                f"partition {record.id} is {record.state.label}: its IPUoF config is available"
                " once it is ACTIVE"
            )
        if gcd_id is not None and not 0 <= gcd_id < record.spec.num_gcds:
            raise errors.InvalidArgument(
                f"partition {record.id} has {record.spec.num_gcds} GCD(s): use --gcd 0.."
                f"{record.spec.num_gcds - 1}"
            )
        cluster = await self._inventory.cluster(record.cluster_id)
        machines = sorted({ipu.machine for ipu in record.ipus})
        agents = await self._inventory.agents(cluster.agent_of(m) for m in machines)
        facts = await self._facts.of(agents)
        endpoints = []
        for ipu, ref in placed_ipus(record, cluster):
            agent_facts = facts[cluster.agent_of(ref.machine)]
            ipu_facts = next(i for i in agent_facts.ipus if i.device_id == ref.device_id)
            endpoints.append(
                copy_fields(
                    IpuEndpoint,
                    ipu_facts,
                    routing_id=ipu.routing_id,
                    segment_id=ipu.segment,
                    ip=agent_facts.ipuof_address,
                    gwsw_version=agent_facts.gateway_sw_version,
                    ipum_sw_version=agent_facts.ipum_sw_version,
                )
            )
        try:
            return partition_ipuof_config(
                record.spec,
                endpoints,
                machine_type=cluster.machine_type,
                ipuof_server_version=self._ctx.settings.ipuof_server_version,
                gcd_id=gcd_id,
            )
        except DomainError as exc:  # the store and the agents disagree: say so
            raise errors.Unavailable(f"partition {record.id}: {exc}") from exc

    async def ipu_attributes(
        self, caller: Caller, agent_ids: Iterable[str]
    ) -> dict[str, dict[int, dict[str, str]]]:
        """Attributes of every IPU of the agents the caller may see, by agent and device id."""
        wanted = set(agent_ids)
        visible: set[str] = set()
        clusters = {c.id: c for c in await self._inventory.list_clusters()}
        if caller.allocation_ids is None:
            visible = {a.id for a in await self._inventory.list_agents()}
        else:
            for allocation in await self._inventory.visible_allocations(caller):
                cluster = clusters.get(allocation.cluster_id)
                if cluster is not None:
                    visible.update(allocation.agent_ids(cluster))
        chosen = sorted(visible & wanted if wanted else visible)
        unknown = sorted(wanted - visible)
        if unknown:
            raise errors.NotFound(
                f"agent {unknown[0]} does not exist or is not in your allocations"
            )
        agents = await self._inventory.agents(chosen)
        timeout = self._ctx.settings.agent_timeout_s
        results = await asyncio.gather(
            *(self._ctx.gateway.ipu_attributes(a, timeout=timeout) for a in agents),
            return_exceptions=True,
        )
        out: dict[str, dict[int, dict[str, str]]] = {}
        for agent, result in zip(agents, results, strict=True):
            if isinstance(result, AgentError):
                out[agent.id] = {}
                continue
            if isinstance(result, BaseException):
                raise result
            out[agent.id] = result
        return out
