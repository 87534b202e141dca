"""One agent per machine: an :class:`AgentHost` serves one machine backend.

An agent host is what a real IPU-Machine runs: the agent's gRPC server on the
management address and, where the backend needs a software IPUoF server
(an emulated machine), the IPUoF endpoints of its four IPUs. It knows the
machine only through the protocols of :mod:`vpod.agent.backend`; which
backend it serves is the composition root's choice (:mod:`vpod.agent.fleet`,
which runs many hosts in one process).

gRPC servers are created with ``grpc.so_reuseport`` off: with it on (gRPC's
default on Linux) two agents could silently share one port. Each answers only
calls that carry its agent key (:mod:`.trust`), which it tells the
controller when it registers.
"""

from __future__ import annotations

import logging

import grpc

from vpod.wire import agent_pb2_grpc

from .addressing import MachineAddress, join_host_port
from .backend import EmulatorControls, IpuofSessions, MachineBackend
from .ipuof import IpuofEndpoints
from .ipuof_access import IpuofAccess
from .model import MachineEndpoints
from .roster import FleetRoster
from .service import AgentService
from .trust import ControllerKeyCheck, new_agent_key

log = logging.getLogger(__name__)

SERVER_OPTIONS: tuple[tuple[str, int], ...] = (("grpc.so_reuseport", 0),)


class AgentStartError(Exception):
    """An agent could not start listening; the message says where and what to change."""


class AgentHost:
    """One machine backend with its gRPC server (and IPUoF endpoints when it needs them)."""

    def __init__(
        self,
        backend: MachineBackend,
        address: MachineAddress,
        *,
        ipuof: IpuofSessions | None = None,
        controls: EmulatorControls | None = None,
        listen_rdma: bool = True,
        roster: FleetRoster | None = None,
        key: str | None = None,
        fault_injection: bool = False,
    ) -> None:
        """``ipuof``: the hooks of a software IPUoF server for this machine (None: the
        hardware serves IPUoF itself); ``controls``: its emulator's fault controls, served
        only with ``fault_injection`` on."""
        self.backend = backend
        self.plan = address
        self.key = key or new_agent_key()
        """The secret every call to this agent must carry (random unless given)."""
        self.access = IpuofAccess()
        self._roster = roster
        self._listen_rdma = listen_rdma
        self._fault_injection = fault_injection
        self._sessions = ipuof
        self._controls = controls
        self._server: grpc.aio.Server | None = None
        self._ipuof: IpuofEndpoints | None = None
        self._service: AgentService | None = None
        self._port = 0

    @property
    def agent_id(self) -> str:
        return self.backend.agent_id

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
        ipuof = await self._start_ipuof(self._sessions) if self._sessions is not None else None
        server = grpc.aio.server(
            options=SERVER_OPTIONS, interceptors=[ControllerKeyCheck(self.agent_id, self.key)]
        )
        self._service = AgentService(
            self.backend,
            self._roster,
            access=self.access,
            fault_injection=self._fault_injection,
            controls=self._controls,
        )
        agent_pb2_grpc.add_AgentServiceServicer_to_server(self._service, server)
        wanted = join_host_port(plan.host, plan.agent_port)
        try:
            port = server.add_insecure_port(wanted)
        except RuntimeError:
            port = 0
        if port == 0:
            if ipuof is not None:
                await ipuof.stop()
                self._ipuof = None
            raise AgentStartError(
                f"agent {self.agent_id} cannot listen on {wanted}: the address is in use or"
                " not assigned to this host; choose another --address-base or --agent-port"
            )
        self._port = port
        # Before serving, so that no call sees the machine without its addresses.
        await self.backend.set_endpoints(
            MachineEndpoints(
                management_address=self.address,
                ipuof_address=plan.ipuof_host,
                # Without a software IPUoF server the ports are the hardware's own.
                server_ports=ipuof.server_ports if ipuof else plan.server_ports,
                rdma_ports=ipuof.rdma_ports if ipuof else plan.rdma_ports,
            )
        )
        await server.start()
        self._server = server
        if self._roster is not None:
            self._roster.join(self.agent_id, self._service)

    async def _start_ipuof(self, sessions: IpuofSessions) -> IpuofEndpoints:
        plan = self.plan
        ipuof = IpuofEndpoints(
            sessions, plan.ipuof_host, plan.server_ports, plan.rdma_ports, access=self.access
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
        return ipuof

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
