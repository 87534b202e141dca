"""What the use-cases need from the agents, and the fan-out helper over them.

The use-cases speak to agents only through :class:`AgentGateway` (the gRPC
implementation is :class:`~.agent_grpc.GrpcAgentGateway`), in the agent
package's own terms: its model values and its exception tree, in which every
failure is an :class:`~vpod.agent.errors.AgentError` naming the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

from vpod.agent.errors import AgentError, AgentRefused, Reason
from vpod.agent.model import (
    ConfiguredPartition,
    Fault,
    LinkTestKind,
    LinkTestResult,
    MachineHealth,
    MachineIdentity,
    PartitionConfig,
)
from vpod.domain.entities import Agent

T = TypeVar("T")


class AgentGateway(Protocol):
    async def configure(
        self, agent: Agent, config: PartitionConfig, *, hosts: Sequence[str], timeout: float
    ) -> None:
        """Configure the agent's part of a partition; ``hosts`` (CIDRs) may attach to it
        over IPUoF."""

    async def set_partition_hosts(
        self, agent: Agent, partition_id: str, hosts: Sequence[str], *, timeout: float
    ) -> bool:
        """Replace who may attach to a configured partition; False if not configured there."""

    async def release(self, agent: Agent, partition_id: str, *, timeout: float) -> None: ...

    async def configure_all(
        self,
        agents: Sequence[Agent],
        configs: Mapping[str, PartitionConfig],
        *,
        hosts: Sequence[str],
        timeout: float,
    ) -> Outcomes:
        """:meth:`configure` every agent's part (``configs`` by agent id), as
        :func:`fan_out` sorts them; a gateway may ask machines sharing an agent process in
        one call (:func:`configure_one_by_one` asks each alone)."""

    async def release_all(
        self, agents: Sequence[Agent], partition_id: str, *, timeout: float
    ) -> Outcomes:
        """:meth:`release` the partition on every agent, as :meth:`configure_all`."""

    async def reset(
        self, agent: Agent, partition_id: str, *, unless_attached: bool = False, timeout: float
    ) -> None:
        """``unless_attached``: refused (``Reason.IPU_ATTACHED``) while an application holds
        an IPU of the partition there, checked by the agent in the same step as the reset."""

    async def identity(self, agent: Agent, *, timeout: float) -> MachineIdentity: ...

    async def identity_at(self, address: str, *, key: str, timeout: float) -> MachineIdentity:
        """The identity of whatever agent answers at ``address`` to ``key``."""

    async def configurations(
        self, agent: Agent, *, timeout: float
    ) -> list[ConfiguredPartition]: ...

    async def fleet_configurations(
        self, agent: Agent, agent_ids: Sequence[str], *, timeout: float
    ) -> dict[str, list[ConfiguredPartition]]:
        """What machines sharing ``agent``'s process have configured, by agent id; the
        machines it does not serve promptly are left out."""

    async def ipu_attributes(
        self, agent: Agent, *, timeout: float
    ) -> dict[int, dict[str, str]]: ...

    async def health(
        self, agent: Agent, *, since_event: int = 0, timeout: float
    ) -> MachineHealth: ...

    async def fleet_health(
        self, agent: Agent, machines: Sequence[tuple[str, int]], *, timeout: float
    ) -> list[MachineHealth]:
        """Heartbeats of machines sharing ``agent``'s process, as (agent id, since event);
        the machines it does not serve promptly are left out."""

    async def link_tests(
        self, agent: Agent, kinds: Iterable[LinkTestKind], *, timeout: float
    ) -> list[LinkTestResult]: ...

    async def inject_fault(self, agent: Agent, fault: Fault, *, timeout: float) -> list[Fault]: ...

    async def clear_fault(
        self, agent: Agent, fault: Fault | None, *, timeout: float
    ) -> list[Fault]: ...

    async def reconnect(self, agent: Agent) -> None:
        """Drop the connection to an agent (it restarted): the next call dials afresh."""

    async def close(self) -> None: ...


Outcomes = tuple[dict[str, None], dict[str, AgentError]]
"""What a call to many agents did: the agents it succeeded on, and each failed one's error."""


async def configure_one_by_one(
    gateway: AgentGateway,
    agents: Sequence[Agent],
    configs: Mapping[str, PartitionConfig],
    *,
    hosts: Sequence[str],
    timeout: float,
) -> Outcomes:
    """:meth:`AgentGateway.configure_all` with one call per agent."""
    return await fan_out(
        agents, lambda a: gateway.configure(a, configs[a.id], hosts=hosts, timeout=timeout)
    )


async def release_one_by_one(
    gateway: AgentGateway, agents: Sequence[Agent], partition_id: str, *, timeout: float
) -> Outcomes:
    """:meth:`AgentGateway.release_all` with one call per agent."""
    return await fan_out(agents, lambda a: gateway.release(a, partition_id, timeout=timeout))


FAN_OUT_IN_FLIGHT = 64
"""Calls a fan-out has in flight at once: a pod4096 partition spans 1,024 agents, and 1,024
calls at once would starve the controller's heartbeats and other callers."""


async def fan_out(
    agents: Iterable[Agent],
    call: Callable[[Agent], Awaitable[T]],
    *,
    in_flight: int = FAN_OUT_IN_FLIGHT,
) -> tuple[dict[str, T], dict[str, AgentError]]:
    """Call every agent, ``in_flight`` at a time; sort outcomes into successes and failures.

    An agent's refusal or silence is an :class:`AgentError` and is returned,
    not raised; any other exception is a bug and propagates.
    """
    agent_list = list(agents)
    if len(agent_list) == 1:  # the common case (a partition on one machine): no task, no gate
        (agent,) = agent_list
        try:
            return {agent.id: await call(agent)}, {}
        except AgentError as exc:
            return {}, {agent.id: exc}
    gate = asyncio.Semaphore(in_flight)

    async def gated(agent: Agent) -> T:
        async with gate:
            return await call(agent)

    results = await asyncio.gather(*(gated(a) for a in agent_list), return_exceptions=True)
    done: dict[str, T] = {}
    failed: dict[str, AgentError] = {}
    for agent, result in zip(agent_list, results, strict=True):
        if isinstance(result, AgentError):
            failed[agent.id] = result
        elif isinstance(result, BaseException):
            raise result
        else:
            done[agent.id] = result
    return done, failed


def refused_for(error: AgentError | None, reason: Reason) -> bool:
    """Whether the agent answered with a refusal for ``reason`` (not silence, not a bug)."""
    return isinstance(error, AgentRefused) and error.reason is reason


def describe_failures(failed: Mapping[str, AgentError]) -> str:
    """Every failure's sentence, in agent order, joined by semicolons."""
    return "; ".join(failed[a].message for a in sorted(failed))
