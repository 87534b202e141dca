"""The agent's gRPC service (``vpod.agent.v1.AgentService``) over a machine backend.

The request path stays light: convert the message, await the backend
(:class:`~vpod.agent.backend.MachineBackend`, async: a backend that blocks
runs its calls in a thread, so a slow call never holds up another RPC),
convert the answer. Refusals become status codes (one table,
:data:`STATUS_OF`) with the backend's sentence and the reason in trailing
metadata ``vpod-reason``; an unexpected exception becomes ``INTERNAL`` with a
sentence, never a traceback on the wire.

The agent-level faults live here, not in the backend, because they are
about the agent process rather than the machine: *hang* makes every
management call wait until the fault is cleared (callers see their deadline
pass), *slow* delays every management call. InjectFault and ClearFault are
exempt, so a hung agent can always be healed. Machine faults (a faulted
IPU, a link down) are the emulator's to make: they reach the backend's
:class:`~vpod.agent.backend.EmulatorControls`, which the service holds only
when fault injection is on.
"""

# Method names and signatures are fixed by the generated servicer base class.
# ruff: noqa: N802

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, NoReturn, TypeVar

import grpc

from vpod.domain.entities import MAX_FAULT_DELAY_MS
from vpod.domain.excerpts import bounded
from vpod.wire import agent_pb2 as pb
from vpod.wire import agent_pb2_grpc as pb_grpc
from vpod.wire.errors import grpc_status

from . import convert
from .backend import EmulatorControls, MachineBackend
from .errors import (
    REASON_KEY,
    InvalidRequest,
    MachineConflict,
    MachineRefusal,
    Reason,
)
from .heartbeat_answers import HeartbeatAnswers
from .ipuof_access import IpuofAccess
from .model import (
    AgentEvent,
    ConfiguredPartition,
    Fault,
    FaultKind,
)
from .roster import FleetRoster

log = logging.getLogger(__name__)


T = TypeVar("T")
Handler = Callable[["AgentService", Any, grpc.aio.ServicerContext], Awaitable[T]]
"""An rpc of :class:`AgentService`, as the generated servicer base names it."""


def _management_call(handler: Handler[T]) -> Handler[T]:
    """An rpc that first waits out the agent's own faults (hang, slow); what it raises
    reaches the caller as :meth:`AgentService._run` says."""
    return _served(handler, gate=True)


def _ungated_call(handler: Handler[T]) -> Handler[T]:
    """An rpc the agent's own faults do not hold up; errors as :func:`_management_call`."""
    return _served(handler, gate=False)


def _served(handler: Handler[T], *, gate: bool) -> Handler[T]:
    @functools.wraps(handler)
    async def serve(self: AgentService, request: Any, context: grpc.aio.ServicerContext) -> T:
        return await self._run(
            context, handler.__name__, lambda: handler(self, request, context), gate
        )

    return serve


async def _all(parts: list[Callable[[], Awaitable[T]]], *, side_by_side: bool) -> list[T]:
    """The machines' parts of a fleet call: side by side (a task each), or one after another
    where they finish without waiting (a task costs more than such a part)."""
    if side_by_side and len(parts) > 1:
        return await asyncio.gather(*(part() for part in parts))
    return [await part() for part in parts]


class AgentService(pb_grpc.AgentServiceServicer):
    """Serves one machine. Create it inside the event loop that runs the server."""

    def __init__(
        self,
        backend: MachineBackend,
        roster: FleetRoster | None = None,
        *,
        access: IpuofAccess | None = None,
        fault_injection: bool = False,
        controls: EmulatorControls | None = None,
    ) -> None:
        """``controls``: the emulator's fault controls, used only when ``fault_injection``
        is on (None: the backend cannot fake machine faults, as hardware cannot)."""
        self._backend = backend
        self._controls = controls if fault_injection else None
        self._roster = roster
        self._access = access if access is not None else IpuofAccess()
        self._fault_injection = fault_injection
        self._hang: Fault | None = None
        self._slow: Fault | None = None
        self._healed = asyncio.Event()
        self._healed.set()
        self._answers = HeartbeatAnswers()

    @property
    def _parts_wait(self) -> bool:
        """Whether the machines' parts of a fleet call may wait (then they run side by side)."""
        return self._roster is None or not self._roster.in_memory

    def _with_hosts(self, held: ConfiguredPartition) -> ConfiguredPartition:
        hosts = self._access.hosts(held.config.partition_id)
        return dataclasses.replace(held, allowed_hosts=hosts)

    async def _evict_strangers(self, partition_id: str) -> None:
        """End the attachments to ``partition_id`` from hosts it no longer admits."""
        for held in await self._backend.attachments():
            host = held.client.rsplit(":", 1)[0].strip("[]")
            if held.partition_id == partition_id and not self._access.allows(partition_id, host):
                await self._backend.detach(
                    held.attachment_id,
                    evicted=True,
                    detail=f"host {host} is no longer admitted to partition {partition_id}",
                )

    def _require_fault_injection(self) -> None:
        if not self._fault_injection:
            raise MachineConflict(
                f"fault injection is off on agent {self._backend.agent_id}: it is a test and"
                " demo feature; start the agent with --enable-fault-injection to use it",
                Reason.FAULT_INJECTION_DISABLED,
            )

    def _require_controls(self) -> EmulatorControls:
        self._require_fault_injection()
        if self._controls is None:
            raise MachineConflict(
                f"agent {self._backend.agent_id} drives a machine that cannot fake IPU or link"
                " faults (only an emulated machine can); inject an agent fault (hang, slow)"
                " or use an emulated agent",
                Reason.FAULT_INJECTION_DISABLED,
            )
        return self._controls

    def agent_faults(self) -> list[Fault]:
        return [f for f in (self._hang, self._slow) if f is not None]

    @property
    def answers_promptly(self) -> bool:
        """Neither hung nor slowed: a fleet may answer a heartbeat for this machine."""
        return self._hang is None and self._slow is None

    def _prompt_members(self, agent_ids: Iterable[str]) -> list[tuple[str, AgentService]]:
        """(agent id, service) of the machines of this process, among ``agent_ids`` and in
        their order, that would answer now: a fleet call leaves the others out (stopped,
        hung, slowed or of another process) for the caller to ask alone, under their own
        deadlines."""
        roster = self._roster
        if roster is None:  # a machine alone in its process speaks only for itself
            own = self._backend.agent_id
            return [(a, self) for a in agent_ids if a == own and self.answers_promptly]
        members = ((a, roster.prompt(a)) for a in agent_ids)
        return [(a, m) for a, m in members if isinstance(m, AgentService)]

    async def health_reply(
        self, since_event: int, known_version: int = 0, known_links_version: int = 0
    ) -> pb.HealthReply:
        """A heartbeat's answer, shortened to what the caller lacks
        (:mod:`~vpod.agent.heartbeat_answers`)."""
        health = await self._backend.health(since_event)
        return self._answers.answer(
            health,
            tuple(self.agent_faults()),
            fleet_id=self._roster.fleet_id if self._roster is not None else None,
            known_version=known_version,
            known_links_version=known_links_version,
        )

    # ------------------------------------------------------------ plumbing

    async def _gate(self) -> None:
        """Emulate a slow or hung agent before a management call is handled."""
        if self._slow is not None:
            await asyncio.sleep(self._slow.delay_s)
        if self._hang is not None:
            await self._healed.wait()

    async def _abort(self, context: grpc.aio.ServicerContext, exc: MachineRefusal) -> NoReturn:
        await context.abort(
            grpc_status(exc),
            bounded(exc.message),  # a refusal quoting a huge field must still fit the metadata
            trailing_metadata=((REASON_KEY, exc.reason.value),),
        )
        raise AssertionError("context.abort returned")  # pragma: no cover

    async def _run(
        self,
        context: grpc.aio.ServicerContext,
        name: str,
        call: Callable[[], Awaitable[T]],
        gate: bool = True,
    ) -> T:
        """Run one rpc's work (every rpc but WatchEvents comes through here, by
        :func:`_management_call` or :func:`_ungated_call`): a refusal becomes its status
        code with the reason in trailing metadata, anything else ``INTERNAL`` and a log."""
        if gate and (self._slow is not None or self._hang is not None):
            await self._gate()
        try:
            return await call()
        except MachineRefusal as exc:
            await self._abort(context, exc)
        except Exception:
            log.exception("agent %s failed handling %s", self._backend.agent_id, name)
            await context.abort(
                grpc.StatusCode.INTERNAL,
                f"agent {self._backend.agent_id} failed handling {name}: see the agent's log",
            )
            raise  # pragma: no cover

    # ---------------------------------------------------------------- rpcs

    @_management_call
    async def GetIdentity(
        self, request: pb.GetIdentityRequest, context: grpc.aio.ServicerContext
    ) -> pb.Identity:
        return convert.identity_to_wire(await self._backend.identity())

    @_management_call
    async def ListIpuAttributes(
        self, request: pb.ListIpuAttributesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListIpuAttributesReply:
        backend = self._backend
        return convert.attributes_to_wire(backend.agent_id, await backend.ipu_attributes())

    @_management_call
    async def ConfigurePartition(
        self, request: pb.ConfigurePartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.ConfigurePartitionReply:
        return await self.configure_reply(request)

    async def configure_reply(
        self, request: pb.ConfigurePartitionRequest, *, echo: bool = True
    ) -> pb.ConfigurePartitionReply:
        """``echo``: the configured partition in the reply, not only whether it changed."""
        if not request.HasField("config"):
            raise InvalidRequest("ConfigurePartition needs a config: none was sent")
        config = convert.config_from_wire(request.config)
        networks = self._access.parse(request.allowed_hosts)
        outcome = await self._backend.configure(config)
        self._access.set(config.partition_id, networks)
        await self._evict_strangers(config.partition_id)
        if not echo:
            return pb.ConfigurePartitionReply(changed=outcome.changed)
        outcome = dataclasses.replace(outcome, partition=self._with_hosts(outcome.partition))
        return convert.outcome_to_wire(outcome)

    @_management_call
    async def ReleasePartition(
        self, request: pb.ReleasePartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReleasePartitionReply:
        return await self.release_reply(request.partition_id)

    async def release_reply(self, partition_id: str) -> pb.ReleasePartitionReply:
        released = await self._backend.release(partition_id)
        self._access.forget(partition_id)
        return pb.ReleasePartitionReply(released=released)

    # Not gated, as FleetHealth: a member that is hung or slowed is left out (the caller
    # asks it alone, under its own deadline), not a reason to hold up the others.
    @_ungated_call
    async def FleetConfigurePartition(
        self, request: pb.FleetConfigurePartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.FleetPartitionReply:
        wanted = {m.agent_id: m.request for m in request.machines}
        members = self._prompt_members(wanted)
        outcomes = await _all(
            [
                functools.partial(
                    m.machine_outcome,
                    a,
                    "configured",
                    functools.partial(m.configure_reply, wanted[a], echo=False),
                )
                for a, m in members
            ],
            side_by_side=self._parts_wait,
        )
        return pb.FleetPartitionReply(machines=outcomes)

    @_ungated_call
    async def FleetReleasePartition(
        self, request: pb.FleetReleasePartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.FleetPartitionReply:
        pid = request.partition_id
        members = self._prompt_members(request.agent_ids)
        outcomes = await _all(
            [
                functools.partial(
                    m.machine_outcome, a, "released", functools.partial(m.release_reply, pid)
                )
                for a, m in members
            ],
            side_by_side=self._parts_wait,
        )
        return pb.FleetPartitionReply(machines=outcomes)

    async def machine_outcome(
        self, agent_id: str, field: str, reply: Callable[[], Awaitable[Any]]
    ) -> pb.MachineOutcome:
        """One machine's part of a fleet call: its reply under ``field``, or what the single
        call's status would have said (a refusal's code, reason and sentence; INTERNAL)."""
        try:
            return pb.MachineOutcome(agent_id=agent_id, **{field: await reply()})
        except MachineRefusal as exc:
            refusal = pb.MachineRefusal(
                code=grpc_status(exc).name, reason=exc.reason.value, message=bounded(exc.message)
            )
        except Exception:
            log.exception("agent %s failed its part of a fleet call", agent_id)
            refusal = pb.MachineRefusal(
                code="INTERNAL",
                reason=Reason.UNKNOWN.value,
                message=f"agent {agent_id} failed its part of a fleet call: see the agent's log",
            )
        return pb.MachineOutcome(agent_id=agent_id, refused=refusal)

    @_management_call
    async def SetPartitionHosts(
        self, request: pb.SetPartitionHostsRequest, context: grpc.aio.ServicerContext
    ) -> pb.SetPartitionHostsReply:
        networks = self._access.parse(request.allowed_hosts)
        configured = any(
            c.config.partition_id == request.partition_id
            for c in await self._backend.configurations()
        )
        if configured:
            self._access.set(request.partition_id, networks)
            await self._evict_strangers(request.partition_id)
        return pb.SetPartitionHostsReply(configured=configured)

    @_management_call
    async def ResetPartition(
        self, request: pb.ResetPartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResetPartitionReply:
        held = await self._backend.reset(
            request.partition_id, unless_attached=request.unless_attached
        )
        return pb.ResetPartitionReply(partition=convert.configured_to_wire(self._with_hosts(held)))

    @_management_call
    async def ListConfigurations(
        self, request: pb.ListConfigurationsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListConfigurationsReply:
        return await self.configurations_reply()

    async def configurations_reply(self) -> pb.ListConfigurationsReply:
        """What this machine has configured, with the hosts that may attach to each."""
        backend = self._backend
        identity = await backend.identity()
        return pb.ListConfigurationsReply(
            agent_id=backend.agent_id,
            boot_id=identity.boot_id,
            partitions=[
                convert.configured_to_wire(self._with_hosts(c))
                for c in await backend.configurations()
            ],
        )

    # Not gated, as FleetHealth: a machine that cannot answer now is left out.
    @_ungated_call
    async def FleetConfigurations(
        self, request: pb.FleetConfigurationsRequest, context: grpc.aio.ServicerContext
    ) -> pb.FleetConfigurationsReply:
        members = self._prompt_members(request.agent_ids)
        reply = pb.FleetConfigurationsReply()
        reply.machines.extend(await asyncio.gather(*(m.configurations_reply() for _, m in members)))
        return reply

    @_management_call
    async def RunLinkTests(
        self, request: pb.RunLinkTestsRequest, context: grpc.aio.ServicerContext
    ) -> pb.RunLinkTestsReply:
        kinds = convert.link_tests_from_wire(request.tests)
        results = await self._backend.run_link_tests(kinds)
        return pb.RunLinkTestsReply(
            agent_id=self._backend.agent_id,
            results=[convert.link_test_result_to_wire(r) for r in results],
        )

    @_management_call
    async def Health(
        self, request: pb.HealthRequest, context: grpc.aio.ServicerContext
    ) -> pb.HealthReply:
        return await self.health_reply(
            request.since_event, request.known_version, request.known_links_version
        )

    # Not gated: this machine's own hang or slowness is the process's to report (it
    # leaves the machine out), not a reason to keep the others' answers waiting.
    @_ungated_call
    async def FleetHealth(
        self, request: pb.FleetHealthRequest, context: grpc.aio.ServicerContext
    ) -> pb.FleetHealthReply:
        asked = {m.agent_id: m for m in request.machines}
        members = self._prompt_members([m.agent_id for m in request.machines])
        reply = pb.FleetHealthReply()
        # Concurrently: a backend reading its hardware in a thread must not make the
        # whole fleet's answer as slow as the sum of its machines.
        answers = (
            m.health_reply(
                asked[a].since_event, asked[a].known_version, asked[a].known_links_version
            )
            for a, m in members
        )
        reply.machines.extend(await asyncio.gather(*answers))
        return reply

    async def WatchEvents(
        self, request: pb.WatchEventsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.WatchEventsReply]:
        """Send what happened after ``since_event`` at once, then each new batch of events."""
        await self._gate()
        wake = asyncio.Event()

        def on_event(_: AgentEvent) -> None:
            wake.set()

        unsubscribe = self._backend.subscribe(on_event)
        try:
            batch = await self._backend.events_since(request.since_event)
            cursor = batch.last_event
            yield convert.batch_to_wire(batch)
            while True:
                await wake.wait()
                wake.clear()
                await self._gate()
                batch = await self._backend.events_since(cursor)
                cursor = batch.last_event
                if batch.news:
                    yield convert.batch_to_wire(batch)
        finally:
            unsubscribe()

    # Not gated: a hung agent can always be healed.
    @_ungated_call
    async def InjectFault(
        self, request: pb.InjectFaultRequest, context: grpc.aio.ServicerContext
    ) -> pb.InjectFaultReply:
        self._require_fault_injection()
        fault = convert.fault_from_wire(request.fault)
        if fault.kind is FaultKind.AGENT_HANG:
            self._hang = fault
            self._healed.clear()
        elif fault.kind is FaultKind.AGENT_SLOW:
            if not 0 < fault.delay_s <= MAX_FAULT_DELAY_MS / 1000:
                raise InvalidRequest(
                    f"a slow agent needs a delay of 1 to {MAX_FAULT_DELAY_MS} ms,"
                    f" not {round(fault.delay_s * 1000)} ms"
                )
            self._slow = fault
        else:
            await self._require_controls().inject_fault(fault)
        log.warning("agent %s: fault injected: %s", self._backend.agent_id, fault.describe())
        return pb.InjectFaultReply(active_faults=await self._active_faults())

    @_ungated_call
    async def ClearFault(
        self, request: pb.ClearFaultRequest, context: grpc.aio.ServicerContext
    ) -> pb.ClearFaultReply:
        self._require_fault_injection()
        if request.all:
            self._clear_agent_faults(hang=True, slow=True)
            if self._controls is not None:
                await self._controls.clear_fault(None)
        else:
            fault = convert.fault_from_wire(request.fault)
            if fault.kind in (FaultKind.AGENT_HANG, FaultKind.AGENT_SLOW):
                self._clear_agent_faults(
                    hang=fault.kind is FaultKind.AGENT_HANG,
                    slow=fault.kind is FaultKind.AGENT_SLOW,
                )
            else:
                await self._require_controls().clear_fault(fault)
        return pb.ClearFaultReply(active_faults=await self._active_faults())

    def _clear_agent_faults(self, *, hang: bool, slow: bool) -> None:
        if hang:
            self._hang = None
            self._healed.set()
        if slow:
            self._slow = None

    async def _active_faults(self) -> list[pb.Fault]:
        machine = await self._controls.faults() if self._controls is not None else []
        return convert.faults_to_wire([*machine, *self.agent_faults()])
