"""A scripted agent gateway: emulated machines in memory, failures injected per call.

:class:`ScriptedGateway` implements the controller's
:class:`~vpod.controller.agent_gateway.AgentGateway` over one
:class:`~vpod.agent.emulated.EmulatedMachine` per agent, the same machine model
the real agent serves over gRPC. What the agent's service adds on top is kept
here too: a :class:`~vpod.agent.errors.MachineRefusal` becomes the
:class:`~vpod.agent.errors.AgentRefused` (reason and status code) the gRPC
client would raise, and each partition's IPUoF hosts are remembered.

A test scripts the calls it wants to go wrong with :meth:`ScriptedGateway.on`:
a :class:`Rule` matches an operation (``"configure"``, ``"release"``, ...)
on an agent, a partition or an IPU, for its first ``times`` matches, and then
fails it (UNAVAILABLE, a refusal), makes it slow (the fake clock advances;
past the call's deadline it times out, having acted or not), or holds it
until the test lets it go, so the test decides how concurrent calls
interleave. Every call is recorded in :attr:`ScriptedGateway.calls`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from vpod.agent.emulated import EmulatedMachine
from vpod.agent.errors import (
    AgentError,
    AgentRefused,
    AgentTimeout,
    AgentUnavailable,
    MachineRefusal,
    Reason,
)
from vpod.agent.ipuof_access import IpuofAccess
from vpod.agent.model import (
    ConfiguredPartition,
    Fault,
    FaultKind,
    LinkTestKind,
    LinkTestResult,
    MachineEndpoints,
    MachineHealth,
    MachineIdentity,
    PartitionConfig,
)
from vpod.controller.agent_gateway import Outcomes, configure_one_by_one, release_one_by_one
from vpod.controller.clock import FakeClock
from vpod.domain.entities import Agent
from vpod.wire.errors import grpc_status

T = TypeVar("T")

OPERATIONS = frozenset(
    {
        "configure",
        "set_partition_hosts",
        "release",
        "reset",
        "identity",
        "configurations",
        "fleet_configurations",
        "ipu_attributes",
        "health",
        "link_tests",
        "inject_fault",
        "clear_fault",
    }
)
"""What a rule may name: the gateway's calls that reach an agent."""


@dataclass(frozen=True)
class Call:
    """One call the controller made: what, to which agent, about which partition."""

    op: str
    agent_id: str
    partition_id: str = ""
    device_ids: tuple[int, ...] = ()


def unavailable(agent_id: str, cause: str = "connection refused (scripted)") -> AgentError:
    """What the gRPC client raises for an agent that cannot be reached."""
    return AgentUnavailable(
        agent_id, f"agent {agent_id} at harness is unavailable: {cause}", cause=cause
    )


def timed_out(agent_id: str) -> AgentError:
    """What the gRPC client raises when an agent's answer misses the deadline."""
    return AgentTimeout(
        agent_id,
        f"agent {agent_id} at harness did not answer in time; it may be hung or overloaded,"
        " and may still carry the call out",
        cause="deadline exceeded (scripted)",
    )


def refused(agent_id: str, message: str, reason: Reason = Reason.UNKNOWN) -> AgentError:
    """An agent that answered no (FAILED_PRECONDITION with ``reason``)."""
    return AgentRefused(agent_id, message, reason, "FAILED_PRECONDITION")


@dataclass
class Rule:
    """What happens to the calls it matches; made by :meth:`ScriptedGateway.on`.

    Exactly one of the effects applies, in this order: ``hold`` (wait for the test to
    :meth:`release` the call, then go on), ``slow_s`` (the clock advances; longer than
    the call's timeout is a timeout, the machine having acted when ``acts``), ``fail``.
    """

    op: str
    agent_id: str | None = None
    partition_id: str | None = None
    device_id: int | None = None
    times: int | None = 1
    """How many matching calls it applies to; None: every one."""
    fail: Callable[[str], AgentError] | None = None
    slow_s: float = 0.0
    acts: bool = False
    hold: bool = False
    matched: int = 0
    """Calls it applied to so far."""
    _entered: asyncio.Event = field(default_factory=asyncio.Event)
    _gate: asyncio.Event = field(default_factory=asyncio.Event)

    def matches(self, call: Call) -> bool:
        if self.times is not None and self.matched >= self.times:
            return False
        return (
            self.op == call.op
            and self.agent_id in (None, call.agent_id)
            and self.partition_id in (None, call.partition_id)
            and (self.device_id is None or self.device_id in call.device_ids)
        )

    async def entered(self) -> None:
        """Return once a call it holds is waiting (``hold`` rules)."""
        await self._entered.wait()

    def release(self) -> None:
        """Let the calls it holds go on."""
        self._gate.set()

    @property
    def spent(self) -> bool:
        return self.times is not None and self.matched >= self.times


class ScriptedGateway:
    """The agent gateway of an in-process controller: emulated machines, scripted failures."""

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock
        self.machines: dict[str, EmulatedMachine] = {}
        self._access: dict[str, IpuofAccess] = {}
        self._rules: list[Rule] = []
        self.calls: list[Call] = []
        self.reconnects: list[str] = []

    # ------------------------------------------------------------ the machines

    def add_machine(self, agent_id: str, ipuof_address: str = "127.0.0.1") -> EmulatedMachine:
        """An emulated Bow-2000 answering as ``agent_id``; ``ipuof_address`` is only named in
        the IPUoF configurations the controller serves (nothing dials it)."""
        endpoints = MachineEndpoints(ipuof_address=ipuof_address)
        machine = EmulatedMachine(agent_id, clock=self._epoch, endpoints=endpoints)
        self.machines[agent_id] = machine
        self._access[agent_id] = IpuofAccess()
        return machine

    def restart(self, agent_id: str) -> EmulatedMachine:
        """The agent restarted: a new boot, every configuration lost."""
        return self.add_machine(agent_id, self.machines[agent_id].endpoints.ipuof_address)

    def _epoch(self) -> float:
        return self._clock.now().timestamp()

    def holdings(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """Per agent: the partitions its machine holds and their device ids."""
        return {
            agent_id: {c.config.partition_id: c.config.device_ids for c in m.configurations()}
            for agent_id, m in sorted(self.machines.items())
        }

    def holders_of(self, partition_id: str) -> list[str]:
        """The agents whose machines hold ``partition_id``."""
        return [a for a, held in self.holdings().items() if partition_id in held]

    def hosts(self, agent_id: str, partition_id: str) -> tuple[str, ...]:
        """The IPUoF hosts the agent admits to ``partition_id``."""
        return self._access[agent_id].hosts(partition_id)

    # ------------------------------------------------------------- scripting

    def on(
        self,
        op: str,
        agent_id: str | None = None,
        *,
        partition_id: str | None = None,
        device_id: int | None = None,
        times: int | None = 1,
        fail: Callable[[str], AgentError] | None = None,
        slow_s: float = 0.0,
        acts: bool = False,
        hold: bool = False,
    ) -> Rule:
        """Script the next ``times`` calls of ``op`` that match; see :class:`Rule`."""
        if op not in OPERATIONS:
            raise ValueError(f"no agent call {op!r}: use one of {', '.join(sorted(OPERATIONS))}")
        if not (fail or slow_s or hold):
            raise ValueError("a rule needs an effect: fail, slow_s or hold")
        rule = Rule(
            op=op,
            agent_id=agent_id,
            partition_id=partition_id,
            device_id=device_id,
            times=times,
            fail=fail,
            slow_s=slow_s,
            acts=acts,
            hold=hold,
        )
        self._rules.append(rule)
        return rule

    def clear_rules(self) -> None:
        for rule in self._rules:
            rule.release()
        self._rules.clear()

    def calls_of(self, op: str, partition_id: str | None = None) -> list[Call]:
        return [c for c in self.calls if c.op == op and partition_id in (None, c.partition_id)]

    async def _enter(self, call: Call, timeout: float) -> bool:
        """Record the call and apply the first rule that matches. Raises what the rule
        fails it with; returns True when the machine acts but the answer comes after the
        deadline (the caller sees a timeout all the same)."""
        self.calls.append(call)
        if call.agent_id not in self.machines:
            raise unavailable(call.agent_id, "no such agent in the harness")
        rule = next((r for r in self._rules if r.matches(call)), None)
        if rule is None:
            return False
        rule.matched += 1
        if rule.hold:
            rule._entered.set()
            await rule._gate.wait()
        if rule.slow_s:
            self._clock.advance(min(rule.slow_s, timeout))
            if rule.slow_s >= timeout:
                if rule.acts:
                    return True
                raise timed_out(call.agent_id)
        if rule.fail is not None:
            raise rule.fail(call.agent_id)
        return False

    def _machine(self, agent_id: str) -> EmulatedMachine:
        return self.machines[agent_id]

    def _refusal(self, agent_id: str, exc: MachineRefusal) -> AgentRefused:
        return AgentRefused(agent_id, exc.message, exc.reason, grpc_status(exc).name)

    async def _run(self, call: Call, timeout: float, act: Callable[[EmulatedMachine], T]) -> T:
        late = await self._enter(call, timeout)
        try:
            result = act(self._machine(call.agent_id))
        except MachineRefusal as exc:
            raise self._refusal(call.agent_id, exc) from None
        if late:
            raise timed_out(call.agent_id)
        return result

    # -------------------------------------------------------- the gateway API

    async def configure(
        self, agent: Agent, config: PartitionConfig, *, hosts: Sequence[str], timeout: float
    ) -> None:
        access = self._access[agent.id]

        def act(machine: EmulatedMachine) -> None:
            networks = access.parse(hosts)
            machine.configure(config)
            access.set(config.partition_id, networks)

        call = Call("configure", agent.id, config.partition_id, config.device_ids)
        await self._run(call, timeout, act)

    async def set_partition_hosts(
        self, agent: Agent, partition_id: str, hosts: Sequence[str], *, timeout: float
    ) -> bool:
        access = self._access[agent.id]

        def act(machine: EmulatedMachine) -> bool:
            networks = access.parse(hosts)
            held = any(c.config.partition_id == partition_id for c in machine.configurations())
            if held:
                access.set(partition_id, networks)
            return held

        return await self._run(Call("set_partition_hosts", agent.id, partition_id), timeout, act)

    async def release(self, agent: Agent, partition_id: str, *, timeout: float) -> None:
        access = self._access[agent.id]

        def act(machine: EmulatedMachine) -> None:
            machine.release(partition_id)
            access.forget(partition_id)

        await self._run(Call("release", agent.id, partition_id), timeout, act)

    async def configure_all(
        self,
        agents: Sequence[Agent],
        configs: Mapping[str, PartitionConfig],
        *,
        hosts: Sequence[str],
        timeout: float,
    ) -> Outcomes:
        # One call per machine, each matched by the rules: what a test scripts per machine
        # holds whichever way a real gateway groups them.
        return await configure_one_by_one(self, agents, configs, hosts=hosts, timeout=timeout)

    async def release_all(
        self, agents: Sequence[Agent], partition_id: str, *, timeout: float
    ) -> Outcomes:
        return await release_one_by_one(self, agents, partition_id, timeout=timeout)

    async def reset(
        self, agent: Agent, partition_id: str, *, unless_attached: bool = False, timeout: float
    ) -> None:
        await self._run(
            Call("reset", agent.id, partition_id),
            timeout,
            lambda m: m.reset(partition_id, unless_attached=unless_attached),
        )

    async def identity(self, agent: Agent, *, timeout: float) -> MachineIdentity:
        return await self._run(Call("identity", agent.id), timeout, lambda m: m.identity())

    async def identity_at(self, address: str, *, key: str, timeout: float) -> MachineIdentity:
        raise unavailable(address, "the harness dials no address")

    async def configurations(self, agent: Agent, *, timeout: float) -> list[ConfiguredPartition]:
        return await self._run(
            Call("configurations", agent.id), timeout, lambda m: self._held(agent.id, m)
        )

    def _held(self, agent_id: str, machine: EmulatedMachine) -> list[ConfiguredPartition]:
        access = self._access[agent_id]
        return [
            dataclasses.replace(c, allowed_hosts=access.hosts(c.config.partition_id))
            for c in machine.configurations()
        ]

    async def fleet_configurations(
        self, agent: Agent, agent_ids: Sequence[str], *, timeout: float
    ) -> dict[str, list[ConfiguredPartition]]:
        # The harness's machines answer as one process when a test groups them (the
        # heartbeat monitor never does: their answers carry no fleet id).
        await self._enter(Call("fleet_configurations", agent.id), timeout)
        return {a: self._held(a, self.machines[a]) for a in agent_ids if a in self.machines}

    async def ipu_attributes(self, agent: Agent, *, timeout: float) -> dict[int, dict[str, str]]:
        return await self._run(
            Call("ipu_attributes", agent.id), timeout, lambda m: m.ipu_attributes()
        )

    async def health(self, agent: Agent, *, since_event: int = 0, timeout: float) -> MachineHealth:
        return await self._run(Call("health", agent.id), timeout, lambda m: m.health(since_event))

    async def fleet_health(
        self, agent: Agent, machines: Sequence[tuple[str, int]], *, timeout: float
    ) -> list[MachineHealth]:
        # Every emulated machine answers as its own process (fleet id ""), so the monitor
        # never asks for a fleet: this is here for the protocol's sake.
        await self._enter(Call("health", agent.id), timeout)
        return [self.machines[a].health(since) for a, since in machines if a in self.machines]

    async def link_tests(
        self, agent: Agent, kinds: Iterable[LinkTestKind], *, timeout: float
    ) -> list[LinkTestResult]:
        wanted = list(kinds)
        return await self._run(
            Call("link_tests", agent.id), timeout, lambda m: m.run_link_tests(wanted)
        )

    async def inject_fault(self, agent: Agent, fault: Fault, *, timeout: float) -> list[Fault]:
        if fault.kind in (FaultKind.AGENT_HANG, FaultKind.AGENT_SLOW):
            raise refused(agent.id, "the harness scripts agent faults with ScriptedGateway.on")
        return await self._run(
            Call("inject_fault", agent.id), timeout, lambda m: m.inject_fault(fault)
        )

    async def clear_fault(
        self, agent: Agent, fault: Fault | None, *, timeout: float
    ) -> list[Fault]:
        return await self._run(
            Call("clear_fault", agent.id), timeout, lambda m: m.clear_fault(fault)
        )

    async def reconnect(self, agent: Agent) -> None:
        self.reconnects.append(agent.id)

    async def close(self) -> None:
        self.clear_rules()
