"""What applications and users read about partitions: IPUoF configs and IPU attributes.

Building an IPUoF config needs facts only the agents know (the machine's
RDMA address, each IPU's ports and chip id, software versions). They are
asked once per agent boot and cached: they do not change while an agent
runs, and a re-registration with a new boot id drops the entry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from vpod.agent.errors import AgentError
from vpod.agent.model import MachineIdentity
from vpod.domain.entities import Agent
from vpod.domain.errors import DomainError
from vpod.domain.ipuof import IpuEndpoint, partition_ipuof_config
from vpod.domain.partition_states import ReadyState
from vpod.store.records import PartitionRecord

from . import errors
from .caller import Caller
from .context import Context
from .inventory import Inventory


class AgentFactsCache:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._facts: dict[str, MachineIdentity] = {}

    def forget(self, agent_id: str) -> None:
        self._facts.pop(agent_id, None)

    async def of(self, agents: Iterable[Agent]) -> dict[str, MachineIdentity]:
        wanted = list(agents)
        missing = [a for a in wanted if a.id not in self._facts]
        if missing:
            timeout = self._ctx.settings.agent_timeout_s
            results = await asyncio.gather(
                *(self._ctx.gateway.identity(a, timeout=timeout) for a in missing),
                return_exceptions=True,
            )
            for agent, result in zip(missing, results, strict=True):
                if isinstance(result, AgentError):
                    raise errors.Unavailable(
                        f"cannot read the IPUoF details of agent {agent.id}: {result.message}"
                    )
                if isinstance(result, BaseException):
                    raise result
                self._facts[agent.id] = result
        return {a.id: self._facts[a.id] for a in wanted}


class PartitionViews:
    def __init__(self, ctx: Context, inventory: Inventory, facts: AgentFactsCache) -> None:
        self._ctx = ctx
        self._inventory = inventory
        self._facts = facts

    async def ipuof_config(self, record: PartitionRecord, gcd_id: int | None) -> dict[str, Any]:
        """The wire's ``PartitionConfig`` as plain data (see ``vpod.domain.ipuof``)."""
        if record.state.ready is not ReadyState.ACTIVE:
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
        pod = cluster.pod()
        machines = sorted({ipu.machine for ipu in record.ipus})
        agents = await self._inventory.agents(cluster.agent_of(m) for m in machines)
        facts = await self._facts.of(agents)
        endpoints = []
        for ipu in record.ipus:
            ref = pod.ipu(ipu.slot)
            agent_facts = facts[cluster.agent_of(ref.machine)]
            ipu_facts = next(i for i in agent_facts.ipus if i.device_id == ref.device_id)
            endpoints.append(
                IpuEndpoint(
                    routing_id=ipu.routing_id,
                    segment_id=ipu.segment,
                    ip=agent_facts.ipuof_address,
                    server_port=ipu_facts.server_port,
                    rdma_port=ipu_facts.rdma_port,
                    device_id=ref.device_id,
                    chip_id=ipu_facts.chip_id,
                    gwsw_version=agent_facts.gateway_sw_version,
                    ipum_sw_version=agent_facts.ipum_sw_version,
                    ipu_id=ipu_facts.ipu_id,
                    ipu_arch_id=ipu_facts.ipu_arch_id,
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
