"""Running emulated machines: one :class:`AgentHost` per machine, many in an :class:`AgentFleet`.

An agent host is what a real IPU-Machine runs: the agent's gRPC server on the
management address and the IPUoF endpoints of its four IPUs. A fleet runs
any number of hosts in one process and one event loop, each with its own
addresses and ports (see :mod:`vpod.agent.addressing`), and optionally
registers each with a controller in the background.

gRPC servers are created with ``grpc.so_reuseport`` off: with it on (gRPC's
default on Linux) two agents could silently share one port. Each answers only
calls that carry its agent key (:mod:`.trust`), which it tells the
controller when it registers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from vpod.domain.catalog import MachineType
from vpod.wire import agent_pb2_grpc

from .addressing import AddressPlan, MachineAddress, agent_ids, join_host_port
from .emulated import EmulatedMachine
from .ipuof import IpuofEndpoints
from .ipuof_access import IpuofAccess
from .model import MachineEndpoints
from .registration import (
    Backoff,
    RegistrationTls,
    register_until_answered,
    registration_channel,
    registration_request,
)
from .roster import FleetRoster
from .service import AgentService
from .trust import ControllerKeyCheck, new_agent_key

log = logging.getLogger(__name__)

SERVER_OPTIONS: tuple[tuple[str, int], ...] = (("grpc.so_reuseport", 0),)
REGISTRATIONS_IN_FLIGHT = 32
"""A fleet's registration calls in flight at once: well under a controller's 100 streams
per connection, so a 1,024-machine fleet registers in batches instead of being refused."""


class AgentStartError(Exception):
    """An agent could not start listening; the message says where and what to change."""


class AgentHost:
    """One emulated machine with its gRPC server and IPUoF endpoints."""

    def __init__(
        self,
        machine: EmulatedMachine,
        address: MachineAddress,
        *,
        listen_rdma: bool = True,
        roster: FleetRoster | None = None,
        key: str | None = None,
        fault_injection: bool = False,
    ) -> None:
        self.machine = machine
        self.plan = address
        self.key = key or new_agent_key()
        """The secret every call to this agent must carry (random unless given)."""
        self.access = IpuofAccess()
        self._roster = roster
        self._listen_rdma = listen_rdma
        self._fault_injection = fault_injection
        self._server: grpc.aio.Server | None = None
        self._ipuof: IpuofEndpoints | None = None
        self._service: AgentService | None = None
        self._port = 0

    @property
    def agent_id(self) -> str:
        return self.machine.agent_id

    @property
    def host(self) -> str:
        return self.plan.host

    @property
    def port(self) -> int:
        """The bound gRPC port (after :meth:`start`)."""
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` of the agent's gRPC endpoint (after :meth:`start`)."""
        return join_host_port(self.plan.host, self._port)

    @property
    def ipuof_ports(self) -> tuple[int, ...]:
        """The bound IPUoF server ports, by device id (after :meth:`start`)."""
        return self._ipuof.server_ports if self._ipuof is not None else ()

    @property
    def service(self) -> AgentService:
        if self._service is None:
            raise RuntimeError(f"agent {self.agent_id} is not started")
        return self._service

    async def start(self) -> None:
        plan = self.plan
        ipuof = IpuofEndpoints(
            self.machine, plan.ipuof_host, plan.server_ports, plan.rdma_ports, access=self.access
        )
        try:
            await ipuof.start(listen_rdma=self._listen_rdma)
        except OSError as exc:
            raise AgentStartError(
                f"agent {self.agent_id} cannot listen for IPUoF on {plan.ipuof_host} ports"
                f" {_ports(plan.server_ports)} / {_ports(plan.rdma_ports)}: {exc.strerror or exc};"
                " choose another --address-base or IPUoF base ports"
            ) from exc
        self._ipuof = ipuof
        server = grpc.aio.server(
            options=SERVER_OPTIONS, interceptors=[ControllerKeyCheck(self.agent_id, self.key)]
        )
        self._service = AgentService(
            self.machine, self._roster, access=self.access, fault_injection=self._fault_injection
        )
        agent_pb2_grpc.add_AgentServiceServicer_to_server(self._service, server)
        wanted = join_host_port(plan.host, plan.agent_port)
        try:
            port = server.add_insecure_port(wanted)
        except RuntimeError:
            port = 0
        if port == 0:
            await ipuof.stop()
            raise AgentStartError(
                f"agent {self.agent_id} cannot listen on {wanted}: the address is in use or"
                " not assigned to this host; choose another --address-base or --agent-port"
            )
        await server.start()
        self._server = server
        self._port = port
        if self._roster is not None:
            self._roster.join(self.agent_id, self._service)
        self.machine.set_endpoints(
            MachineEndpoints(
                management_address=self.address,
                ipuof_address=plan.ipuof_host,
                server_ports=ipuof.server_ports,
                rdma_ports=ipuof.rdma_ports,
            )
        )

    async def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving: in-flight calls get ``grace`` seconds; applications are detached."""
        if self._roster is not None:
            self._roster.leave(self.agent_id)
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        if self._ipuof is not None:
            await self._ipuof.stop()
            self._ipuof = None


def _ports(ports: tuple[int, ...]) -> str:
    return f"{ports[0]}-{ports[-1]}" if ports and ports[0] else "any"


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
        self.roster = FleetRoster()
        self.hosts = [
            AgentHost(
                EmulatedMachine(
                    agent_id,
                    machine_type=settings.machine_type,
                    seed=settings.seed,
                    boot_id=new_boot_id(),
                    clock=clock,
                ),
                address,
                listen_rdma=settings.listen_rdma,
                roster=self.roster,
                key=settings.agent_key,
                fault_injection=settings.fault_injection,
            )
            for agent_id, address in zip(ids, addresses, strict=True)
        ]
        self.registrations: list[asyncio.Task[object]] = []
        self._register_channel: grpc.aio.Channel | None = None

    def host(self, agent_id: str) -> AgentHost:
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
            self._start_registration(self.settings.register)

    def _start_registration(self, target: str) -> None:
        self._register_channel = registration_channel(target, self.settings.register_tls)
        limit = asyncio.Semaphore(REGISTRATIONS_IN_FLIGHT)
        for host in self.hosts:
            request = registration_request(
                host.machine.identity(),
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
