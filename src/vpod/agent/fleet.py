"""Many emulated machines in one process: the agent's composition root.

:class:`AgentFleet` builds one :class:`~vpod.agent.emulated.EmulatedMachine`
per agent id, puts each behind the async hardware seam
(:class:`~vpod.agent.emulated_backend.EmulatedBackend`) and hands it to an
:class:`~vpod.agent.host.AgentHost`, which knows only the protocols of
:mod:`vpod.agent.backend`. Every host runs in one process and one event
loop, each with its own addresses and ports (see
:mod:`vpod.agent.addressing`), and is optionally registered with a
controller in the background. This is where a hardware backend would be
chosen instead (ARCHITECTURE.md, "Agents").
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from vpod.domain.catalog import MachineType

from .addressing import AddressPlan, MachineAddress, agent_ids
from .emulated import EmulatedMachine
from .emulated_backend import EmulatedBackend
from .host import AgentHost, AgentStartError
from .registration import (
    Backoff,
    RegistrationTls,
    register_until_answered,
    registration_channel,
    registration_request,
)
from .roster import FleetRoster

__all__ = ["AgentFleet", "AgentStartError", "EmulatedAgentHost", "FleetSettings"]

REGISTRATIONS_IN_FLIGHT = 32
"""A fleet's registration calls in flight at once: well under a controller's 100 streams
per connection, so a 1,024-machine fleet registers in batches instead of being refused."""


class EmulatedAgentHost(AgentHost):
    """An agent host over an emulated machine of a fleet, listening and answering as the
    fleet's ``settings`` say. ``machine`` is the emulator itself, for tests and tools in the
    same process; the agent reaches it only through the seam."""

    def __init__(
        self,
        machine: EmulatedMachine,
        address: MachineAddress,
        settings: FleetSettings,
        roster: FleetRoster | None = None,
    ) -> None:
        backend = EmulatedBackend(machine)
        super().__init__(
            backend,
            address,
            ipuof=backend,
            controls=backend,
            listen_rdma=settings.listen_rdma,
            roster=roster,
            key=settings.agent_key,
            fault_injection=settings.fault_injection,
        )
        self.machine = machine


@dataclass(frozen=True)
class FleetSettings:
    """How many machines to emulate, and where. See ``vipu-agent --help``."""

    machines: int = 1
    id_prefix: str = "ag"
    first_index: int = 1
    agent_ids: tuple[str, ...] = ()
    """Explicit ids; when given they decide the number of machines."""
    machine_type: MachineType = MachineType.BOW2000
    seed: str = "vpod"
    plan: AddressPlan = field(default_factory=AddressPlan)
    listen_rdma: bool = True
    register: str | None = None
    """``HOST:PORT`` of a controller's registration endpoint, or None."""
    register_tls: RegistrationTls | None = None
    """TLS towards that endpoint (its CA, our client certificate); None: plain."""
    register_token: str = ""
    """The agent registration token a ``--secure`` controller asks for ("": none)."""
    advertise_host: str | None = None
    """Host the controller should dial, when not the address the agent listens on."""
    register_backoff: Backoff = field(default_factory=Backoff)
    stop_grace: float = 1.0
    agent_key: str | None = None
    """The key every machine of the fleet answers to (``--key-file``); None: a random key per
    machine at each start, told to the controller at registration."""
    fault_injection: bool = False
    """Accept InjectFault and ClearFault (``--enable-fault-injection``): tests and demos."""

    def ids(self) -> list[str]:
        if self.agent_ids:
            return list(self.agent_ids)
        return agent_ids(self.id_prefix, self.machines, self.first_index)


class AgentFleet:
    """Many emulated machines in one process. Start and stop it inside one event loop."""

    def __init__(
        self,
        settings: FleetSettings,
        *,
        clock: Callable[[], float] = time.time,
        new_boot_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        ids = settings.ids()
        if len(set(ids)) != len(ids):
            raise ValueError("agent ids must be unique: an id is listed twice")
        addresses = settings.plan.addresses(len(ids))
        self.settings = settings
        self.roster = FleetRoster(in_memory=True)  # it hosts only emulated machines
        self.hosts = [
            EmulatedAgentHost(
                EmulatedMachine(
                    agent_id,
                    machine_type=settings.machine_type,
                    seed=settings.seed,
                    boot_id=new_boot_id(),
                    clock=clock,
                ),
                address,
                settings,
                self.roster,
            )
            for agent_id, address in zip(ids, addresses, strict=True)
        ]
        self.registrations: list[asyncio.Task[object]] = []
        self._register_channel: grpc.aio.Channel | None = None

    def host(self, agent_id: str) -> EmulatedAgentHost:
        for host in self.hosts:
            if host.agent_id == agent_id:
                return host
        raise KeyError(f"no agent {agent_id} in this process")

    async def start(self) -> None:
        """Start every machine; if one cannot listen, stop the others and raise AgentStartError."""
        started: list[AgentHost] = []
        try:
            for host in self.hosts:
                await host.start()
                started.append(host)
        except BaseException:
            await asyncio.gather(*(h.stop(0) for h in started), return_exceptions=True)
            raise
        if self.settings.register:
            await self._start_registration(self.settings.register)

    async def _start_registration(self, target: str) -> None:
        self._register_channel = registration_channel(target, self.settings.register_tls)
        limit = asyncio.Semaphore(REGISTRATIONS_IN_FLIGHT)
        for host in self.hosts:
            request = registration_request(
                await host.backend.identity(),
                advertise_host=self.settings.advertise_host or host.host,
                port=host.port,
                agent_key=host.key,
            )
            task = asyncio.create_task(
                register_until_answered(
                    self._register_channel,
                    request,
                    target=target,
                    backoff=self.settings.register_backoff,
                    token=self.settings.register_token,
                    limit=limit,
                ),
                name=f"register-{host.agent_id}",
            )
            self.registrations.append(task)

    async def stop(self) -> None:
        for task in self.registrations:
            task.cancel()
        for task in self.registrations:
            # A registration that failed for an unexpected reason was logged by
            # asyncio already; it must not stop the shutdown.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.registrations.clear()
        if self._register_channel is not None:
            await self._register_channel.close()
            self._register_channel = None
        await asyncio.gather(*(h.stop(self.settings.stop_grace) for h in self.hosts))

    def ready_line(self) -> str:
        """One line saying every agent is serving: ``vipu-agent ready: ag1=HOST:PORT ...``."""
        agents = " ".join(f"{h.agent_id}={h.address}" for h in self.hosts)
        return f"vipu-agent ready: {agents}"
