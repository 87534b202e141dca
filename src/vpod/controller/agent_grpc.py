"""The agent gateway over gRPC: one pooled channel per agent address.

Every call presents the agent's key (``Agent.key``, from the store): agents obey
only the controller that knows it (docs/adr/0002-agent-credentials.md).

Machines that share an agent process (an emulated pod: the ``fleet_id`` of
their heartbeats, learnt here as the answers pass) are configured and
released in one call per process and partition (at most
:data:`MACHINES_PER_CALL` machines a call): a 16-IPU partition across four
machines costs one call each way instead of four. A machine the process
leaves out of its answer, or every machine of a call that failed, is asked
alone; a call that ran out of time is each machine's timeout.

Those calls all go through one member of the process, the one its fleet
heartbeat was last asked through, even for a partition on one machine: so
every call to the process shares one connection. Through each partition's
own first machine, a pod1024's process had the controller hold 256
connections to it, a call or two on each at a time, every call paying its
connection's writes and wake-ups alone (docs/performance.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from vpod.agent.client import AgentClient, ChannelPool, HealthMemo
from vpod.agent.errors import AgentError, AgentTimeout, AgentUnavailable
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

from .agent_gateway import Outcomes, fan_out

T = TypeVar("T")

_LEFT_OUT = object()

MACHINES_PER_CALL = 64
"""Machines one fleet call configures or releases at most: a pod4096's 4,096-IPU partition
spans 1,024 machines of one process, and one call for all of them would have to finish
their work within one call's deadline; 16 calls of 64 each have their own."""


class GrpcAgentGateway:
    """Implements :class:`~.agent_gateway.AgentGateway`. Create it inside the serving loop."""

    def __init__(self) -> None:
        self._pool = ChannelPool()
        self._health_memo = HealthMemo()
        self._closing: set[asyncio.Task[None]] = set()
        self._fleet_of: dict[str, str] = {}
        """Per agent: the process hosting it, from its last heartbeat ("": alone)."""
        self._fleet_via: dict[str, Agent] = {}
        """Per agent process: the member its partition calls go through."""

    def _client(self, agent: Agent) -> AgentClient:
        return self._pool.client(agent.address, agent_id=agent.id, key=agent.key)

    async def _call(self, agent: Agent, call: Callable[[AgentClient], Awaitable[T]]) -> T:
        """One call; if its channel was swapped for a fresh one meanwhile (the agent
        restarted, see :meth:`reconnect`), it is made once more on the new channel."""
        client = self._client(agent)
        try:
            return await call(client)
        except AgentUnavailable:
            fresh = self._client(agent)
            if fresh is client:
                raise
            return await call(fresh)

    async def configure(
        self,
        agent: Agent,
        config: PartitionConfig,
        *,
        hosts: Sequence[str],
        timeout: float,
    ) -> None:
        await self._call(
            agent, lambda c: c.configure_partition_changed(config, hosts=hosts, timeout=timeout)
        )

    async def set_partition_hosts(
        self, agent: Agent, partition_id: str, hosts: Sequence[str], *, timeout: float
    ) -> bool:
        return await self._call(
            agent, lambda c: c.set_partition_hosts(partition_id, hosts, timeout=timeout)
        )

    async def release(self, agent: Agent, partition_id: str, *, timeout: float) -> None:
        await self._call(agent, lambda c: c.release_partition(partition_id, timeout=timeout))

    async def reset(
        self, agent: Agent, partition_id: str, *, unless_attached: bool = False, timeout: float
    ) -> None:
        await self._call(
            agent,
            lambda c: c.reset_partition(
                partition_id, unless_attached=unless_attached, timeout=timeout
            ),
        )

    async def identity(self, agent: Agent, *, timeout: float) -> MachineIdentity:
        return await self._call(agent, lambda c: c.get_identity(timeout=timeout))

    async def identity_at(self, address: str, *, key: str, timeout: float) -> MachineIdentity:
        async with AgentClient(address, key=key) as client:
            return await client.get_identity(timeout=timeout)

    async def configurations(self, agent: Agent, *, timeout: float) -> list[ConfiguredPartition]:
        return await self._call(agent, lambda c: c.list_configurations(timeout=timeout))

    async def fleet_configurations(
        self, agent: Agent, agent_ids: Sequence[str], *, timeout: float
    ) -> dict[str, list[ConfiguredPartition]]:
        return await self._call(agent, lambda c: c.fleet_configurations(agent_ids, timeout=timeout))

    async def ipu_attributes(self, agent: Agent, *, timeout: float) -> dict[int, dict[str, str]]:
        return await self._call(agent, lambda c: c.list_ipu_attributes(timeout=timeout))

    async def health(self, agent: Agent, *, since_event: int = 0, timeout: float) -> MachineHealth:
        health = await self._call(
            agent, lambda c: c.health(since_event, timeout=timeout, memo=self._health_memo)
        )
        self._fleet_of[health.agent_id] = health.fleet_id
        if health.fleet_id:
            self._fleet_via.setdefault(health.fleet_id, agent)
        return health

    async def fleet_health(
        self, agent: Agent, machines: Sequence[tuple[str, int]], *, timeout: float
    ) -> list[MachineHealth]:
        answers = await self._call(
            agent, lambda c: c.fleet_health(machines, timeout=timeout, memo=self._health_memo)
        )
        for health in answers:
            self._fleet_of[health.agent_id] = health.fleet_id
        fleet = self._fleet_of.get(agent.id, "")
        if fleet:  # the heartbeats' choice, stable from round to round
            self._fleet_via[fleet] = agent
        return answers

    # -- one call per agent process

    async def configure_all(
        self,
        agents: Sequence[Agent],
        configs: Mapping[str, PartitionConfig],
        *,
        hosts: Sequence[str],
        timeout: float,
    ) -> Outcomes:
        return await self._per_process(
            agents,
            lambda a: self.configure(a, configs[a.id], hosts=hosts, timeout=timeout),
            lambda via, ids: self._call(
                via,
                lambda c: c.fleet_configure(
                    {i: configs[i] for i in ids}, hosts=hosts, timeout=timeout
                ),
            ),
        )

    async def release_all(
        self, agents: Sequence[Agent], partition_id: str, *, timeout: float
    ) -> Outcomes:
        return await self._per_process(
            agents,
            lambda a: self.release(a, partition_id, timeout=timeout),
            lambda via, ids: self._call(
                via, lambda c: c.fleet_release(ids, partition_id, timeout=timeout)
            ),
        )

    async def _per_process(
        self,
        agents: Sequence[Agent],
        alone: Callable[[Agent], Awaitable[None]],
        together: Callable[[Agent, list[str]], Awaitable[Mapping[str, AgentError | object]]],
    ) -> Outcomes:
        """``together`` once per agent process hosting any of ``agents`` (asked through
        the member its heartbeats go through), ``alone`` for machines of no known process
        and for the machines a process left out."""
        processes: dict[str, list[Agent]] = {}
        singles: list[Agent] = []
        for agent in agents:
            fleet = self._fleet_of.get(agent.id, "")
            if fleet in self._fleet_via:
                processes.setdefault(fleet, []).append(agent)
            else:
                singles.append(agent)
        done: dict[str, None] = {}
        failed: dict[str, AgentError] = {}

        async def one_call(via: Agent, members: list[Agent]) -> None:
            try:
                answers = await together(via, [a.id for a in members])
            except AgentTimeout as exc:  # the process is stuck: each machine's timeout
                for agent in members:
                    failed[agent.id] = AgentTimeout(
                        agent.id,
                        f"agent {agent.id} (asked with the machines of its process through"
                        f" {via.id}) did not answer in time; it may be hung or overloaded,"
                        " and may still carry the call out",
                        cause=exc.cause,
                    )
                return
            except AgentError:
                # That machine's port is gone, say: each is asked alone, and the process is
                # asked through nobody until a heartbeat is answered again.
                fleet = self._fleet_of.pop(via.id, "")
                if self._fleet_via.get(fleet) is via:
                    del self._fleet_via[fleet]
                answers = {}
            for agent in members:
                answer = answers.get(agent.id, _LEFT_OUT)
                if isinstance(answer, AgentError):
                    failed[agent.id] = answer
                elif answer is not _LEFT_OUT:
                    done[agent.id] = None
            left_out = [a for a in members if a.id not in answers]
            if left_out:
                alone_done, alone_failed = await fan_out(left_out, alone)
                done.update(alone_done)
                failed.update(alone_failed)

        async def each_alone() -> None:
            alone_done, alone_failed = await fan_out(singles, alone)
            done.update(alone_done)
            failed.update(alone_failed)

        calls = [
            one_call(self._fleet_via[fleet], members[i : i + MACHINES_PER_CALL])
            for fleet, members in processes.items()
            for i in range(0, len(members), MACHINES_PER_CALL)
        ]
        if singles:
            calls.append(each_alone())
        if len(calls) == 1:  # one process or one machine (nearly always): no task to start
            await calls[0]
        else:
            await asyncio.gather(*calls)
        return done, failed

    async def link_tests(
        self, agent: Agent, kinds: Iterable[LinkTestKind], *, timeout: float
    ) -> list[LinkTestResult]:
        return await self._call(agent, lambda c: c.run_link_tests(kinds, timeout=timeout))

    async def inject_fault(self, agent: Agent, fault: Fault, *, timeout: float) -> list[Fault]:
        return await self._call(agent, lambda c: c.inject_fault(fault, timeout=timeout))

    async def clear_fault(
        self, agent: Agent, fault: Fault | None, *, timeout: float
    ) -> list[Fault]:
        return await self._call(agent, lambda c: c.clear_fault(fault, timeout=timeout))

    async def reconnect(self, agent: Agent) -> None:
        # A pooled channel to a restarted agent may sit in reconnect backoff for seconds:
        # dial a new one. The old one is closed in the background, as closing waits for
        # the calls still on it.
        old = self._pool.detach(agent.address)
        if old is not None:
            task = asyncio.get_running_loop().create_task(old.close(grace=1.0))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        await self._pool.close()
