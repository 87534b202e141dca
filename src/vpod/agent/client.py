"""The controller's side of the agent protocol: :class:`AgentClient` and :class:`ChannelPool`.

Every method takes an optional per-call ``timeout`` (seconds; the client's
default otherwise), returns :mod:`vpod.agent.model` values, and raises only
the :class:`~vpod.agent.errors.AgentError` tree: gRPC errors never leak out.

    DEADLINE_EXCEEDED                         -> AgentTimeout (an AgentUnavailable)
    UNAVAILABLE, CANCELLED, RESOURCE_EXHAUSTED -> AgentUnavailable
    INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, ALREADY_EXISTS,
    ABORTED, OUT_OF_RANGE, PERMISSION_DENIED, UNAUTHENTICATED
                                              -> AgentRefused (.reason from "vpod-reason")
    anything else (INTERNAL, UNIMPLEMENTED ...) -> AgentFailed

Every call carries the agent's key (metadata ``vipu-agent-key``, :mod:`.trust`)
when the client was given one; an agent refuses calls without it
(``UNAUTHENTICATED``, an :class:`AgentRefused`).

Every rpc of the agent protocol is idempotent, so channels retry calls that
met UNAVAILABLE (up to 3 attempts within the call's deadline).

Channels are expensive to open and cheap to share: a controller keeps one
:class:`ChannelPool` and asks it for clients, so every call to an agent
reuses that agent's HTTP/2 connection.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Self, TypedDict, TypeVar, Unpack

import grpc

from vpod.wire import agent_pb2 as pb
from vpod.wire import agent_pb2_grpc as pb_grpc

from . import convert
from .errors import (
    REASON_KEY,
    AgentError,
    AgentFailed,
    AgentRefused,
    AgentTimeout,
    AgentUnavailable,
    InvalidRequest,
    Reason,
)
from .model import (
    ConfiguredPartition,
    ConfigureOutcome,
    EventBatch,
    Fault,
    LinkHealth,
    LinkTestKind,
    LinkTestResult,
    MachineHealth,
    MachineIdentity,
    PartitionConfig,
)
from .trust import KEY_METADATA

DEFAULT_TIMEOUT = 5.0
RETRY_SERVICE_CONFIG = json.dumps(
    {
        "methodConfig": [
            {
                "name": [{"service": "vpod.agent.v1.AgentService"}],
                "retryPolicy": {
                    "maxAttempts": 3,
                    "initialBackoff": "0.05s",
                    "maxBackoff": "0.5s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ]
    }
)
"""Every agent rpc is idempotent, so a call that found the agent unavailable (a dropped
connection, an agent restarting) is tried again twice within its deadline."""
CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.enable_retries", 1),
    ("grpc.service_config", RETRY_SERVICE_CONFIG),
    # Reconnect quickly after an agent comes back.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 5_000),
    # gRPC shares connections (subchannels) between channels to the same address by default,
    # so a fresh channel to a restarted agent would inherit the old one's connection, still
    # waiting out its reconnect backoff, and fail at once with the old "connection refused".
    # Each channel dials on its own instead (ChannelPool keeps one channel per address anyway).
    ("grpc.use_local_subchannel_pool", 1),
)

_UNAVAILABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}
_REFUSED = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED,
}

R = TypeVar("R")


def _reason(metadata: Iterable[tuple[str, Any]] | None) -> Reason:
    for key, value in metadata or ():
        if key == REASON_KEY:
            return _known_reason(value)
    return Reason.UNKNOWN


def _known_reason(value: str) -> Reason:
    try:
        return Reason(value)
    except ValueError:
        return Reason.UNKNOWN


_REFUSED_NAMES = frozenset(code.name for code in _REFUSED)


def machine_refusal(agent: str, address: str, refusal: pb.MachineRefusal) -> AgentError:
    """One machine's failed part of a fleet call, as the single call would have raised it."""
    if refusal.code in _REFUSED_NAMES:
        return AgentRefused(agent, refusal.message, _known_reason(refusal.reason), refusal.code)
    return AgentFailed(agent, f"agent {agent} at {address} failed: {refusal.message}", refusal.code)


def translate(agent: str, address: str, err: grpc.aio.AioRpcError) -> AgentError:
    """The :class:`AgentError` for a failed call to ``agent`` at ``address``."""
    code = err.code()
    details = err.details() or code.name
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return AgentTimeout(
            agent,
            f"agent {agent} at {address} did not answer in time; it may be hung or"
            " overloaded, and may still carry the call out",
            cause=details,
        )
    if code in _UNAVAILABLE:
        return AgentUnavailable(
            agent, f"agent {agent} at {address} is unavailable: {details}", cause=details
        )
    if code in _REFUSED:
        return AgentRefused(agent, details, _reason(err.trailing_metadata()), code.name)
    return AgentFailed(agent, f"agent {agent} at {address} failed: {details}", code.name)


class ClosedOnExit:
    """``async with`` it: :meth:`close` runs on the way out."""

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class HealthMemo:
    """Decodes heartbeats, reusing what the controller holds of each machine: a pod4096
    answers 1,024 heartbeats a second, nearly all of them the same as the second before.

    An agent that numbers its answers (:mod:`vpod.agent.heartbeat_answers`) is told which
    answer and links of each machine are held (:meth:`known`), and answers a stub for an
    answer still the same, or leaves out links still the same; the held ones are used. An
    agent that does not number them sends whole answers, and an answer equal to the last
    one (byte for byte) is not decoded again, nor links equal to the last ones.

    Only answers without events are held: events are news, never to be read twice."""

    HELD_PER_MACHINE = 2
    """Answers held per machine: a heartbeat and a repair's health call may cross."""

    def __init__(self) -> None:
        self._held: dict[str, dict[int, MachineHealth]] = {}
        self._last: dict[str, tuple[bytes, MachineHealth]] = {}
        self._links: dict[str, tuple[tuple[str, int], pb.HealthReply, tuple[LinkHealth, ...]]] = {}

    def known(self, agent_id: str) -> tuple[int, int]:
        """(answer version, links version) held of ``agent_id``'s machine (0: none)."""
        held = self._held.get(agent_id)
        links = self._links.get(agent_id)
        return (max(held) if held else 0, links[0][1] if links is not None else 0)

    def decode(self, message: pb.HealthReply) -> MachineHealth:
        agent = message.agent_id
        if message.unchanged:
            health = self._held.get(agent, {}).get(message.version)
            if health is None or health.boot_id != message.boot_id:
                self._held.pop(agent, None)  # the next heartbeat asks for the whole answer
                raise AgentUnavailable(
                    agent,
                    f"agent {agent} answered 'unchanged' for an answer ({message.version})"
                    " the controller no longer holds; the next heartbeat asks for all of it",
                )
            return health
        links = self._decoded_links(message)
        if message.events:
            return convert.health_from_wire(message, links)
        if message.version:
            health = convert.health_from_wire(message, links)
            held = self._held.setdefault(agent, {})
            held[message.version] = health
            while len(held) > self.HELD_PER_MACHINE:
                del held[min(held)]
            return health
        wire = message.SerializeToString(deterministic=True)
        last = self._last.get(agent)
        if last is not None and last[0] == wire:
            return last[1]
        health = convert.health_from_wire(message, links)
        self._last[agent] = (wire, health)
        return health

    def _decoded_links(self, message: pb.HealthReply) -> tuple[LinkHealth, ...]:
        known = self._links.get(message.agent_id)
        version = (message.boot_id, message.links_version)
        if known is not None:
            if message.links_version:  # the agent numbers its links: no need to compare
                if known[0] == version:
                    return known[2]
            elif known[1].links == message.links:
                return known[2]
        if message.links_omitted:
            self._links.pop(message.agent_id, None)  # the next heartbeat asks for them
            raise AgentUnavailable(
                message.agent_id,
                f"agent {message.agent_id} left out links ({message.links_version}) the"
                " controller no longer holds; the next heartbeat asks for them",
            )
        links = convert.links_from_wire(message.links)
        kept = pb.HealthReply() if message.links_version else pb.HealthReply(links=message.links)
        self._links[message.agent_id] = (version, kept, links)
        return links


class ConfigureOptions(TypedDict, total=False):
    """How :meth:`AgentClient.configure_partition` configures (both default to none)."""

    hosts: Sequence[str]
    """Who may attach to the partition over IPUoF: addresses or CIDRs."""
    timeout: float | None
    """Seconds for this call (None: the client's default)."""


class AgentClient(ClosedOnExit):
    """Typed async calls to one agent. Create it inside the event loop that will use it."""

    def __init__(
        self,
        address: str,
        *,
        agent_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        channel: grpc.aio.Channel | None = None,
        key: str = "",
    ) -> None:
        self.address = address
        self.agent = agent_id or address
        self.timeout = timeout
        self._metadata = ((KEY_METADATA, key),) if key else None
        self._owns_channel = channel is None
        self._channel = channel or grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._stub = pb_grpc.AgentServiceStub(self._channel)

    async def close(self) -> None:
        """Close the channel if this client opened it (a pool's channel stays open)."""
        if self._owns_channel:
            await self._channel.close()

    async def _call(
        self, method: Callable[..., Awaitable[Any]], request: Any, timeout: float | None
    ) -> Any:
        try:
            return await method(
                request,
                timeout=self.timeout if timeout is None else timeout,
                metadata=self._metadata,
            )
        except grpc.aio.AioRpcError as err:
            raise translate(self.agent, self.address, err) from None
        except grpc.aio.UsageError as err:
            raise AgentUnavailable(
                self.agent, f"the channel to agent {self.agent} is closed", cause=str(err)
            ) from None

    def _decode(self, build: Callable[[], R]) -> R:
        try:
            return build()
        except InvalidRequest as exc:
            raise AgentFailed(
                self.agent,
                f"agent {self.agent} answered with {exc.message}: upgrade the controller",
                "DATA_LOSS",
            ) from None

    # ---------------------------------------------------------------- calls

    async def get_identity(self, *, timeout: float | None = None) -> MachineIdentity:
        reply = await self._call(self._stub.GetIdentity, pb.GetIdentityRequest(), timeout)
        return self._decode(lambda: convert.identity_from_wire(reply))

    async def list_ipu_attributes(
        self, *, timeout: float | None = None
    ) -> dict[int, dict[str, str]]:
        reply = await self._call(
            self._stub.ListIpuAttributes, pb.ListIpuAttributesRequest(), timeout
        )
        return convert.attributes_from_wire(reply)

    async def configure_partition(
        self, config: PartitionConfig, **options: Unpack[ConfigureOptions]
    ) -> ConfigureOutcome:
        """Configure this machine's part of a partition; ``hosts`` (addresses or CIDRs) may
        attach to it over IPUoF (none: no host may)."""
        reply = await self._configure(config, **options)
        return self._decode(lambda: convert.outcome_from_wire(reply))

    async def configure_partition_changed(
        self, config: PartitionConfig, **options: Unpack[ConfigureOptions]
    ) -> bool:
        """:meth:`configure_partition` for a caller that knows the configuration it sent
        (the controller): only whether the machine changed, without decoding its echo."""
        return bool((await self._configure(config, **options)).changed)

    async def _configure(
        self, config: PartitionConfig, *, hosts: Sequence[str] = (), timeout: float | None = None
    ) -> pb.ConfigurePartitionReply:
        request = pb.ConfigurePartitionRequest(
            config=convert.config_to_wire(config), allowed_hosts=hosts
        )
        reply: pb.ConfigurePartitionReply = await self._call(
            self._stub.ConfigurePartition, request, timeout
        )
        return reply

    async def release_partition(self, partition_id: str, *, timeout: float | None = None) -> bool:
        """True when released now, False when it was not configured (already released)."""
        request = pb.ReleasePartitionRequest(partition_id=partition_id)
        reply = await self._call(self._stub.ReleasePartition, request, timeout)
        return bool(reply.released)

    async def reset_partition(
        self, partition_id: str, *, unless_attached: bool = False, timeout: float | None = None
    ) -> ConfiguredPartition:
        request = pb.ResetPartitionRequest(
            partition_id=partition_id, unless_attached=unless_attached
        )
        reply = await self._call(self._stub.ResetPartition, request, timeout)
        return self._decode(lambda: convert.configured_from_wire(reply.partition))

    async def set_partition_hosts(
        self, partition_id: str, hosts: Sequence[str], *, timeout: float | None = None
    ) -> bool:
        """Replace who may attach to the partition over IPUoF; False when it is not
        configured on this agent (nothing to change)."""
        request = pb.SetPartitionHostsRequest(partition_id=partition_id, allowed_hosts=hosts)
        reply = await self._call(self._stub.SetPartitionHosts, request, timeout)
        return bool(reply.configured)

    async def list_configurations(
        self, *, timeout: float | None = None
    ) -> list[ConfiguredPartition]:
        reply = await self._call(
            self._stub.ListConfigurations, pb.ListConfigurationsRequest(), timeout
        )
        return self._decode(lambda: [convert.configured_from_wire(p) for p in reply.partitions])

    async def fleet_configure(
        self,
        configs: Mapping[str, PartitionConfig],
        *,
        hosts: Sequence[str] = (),
        timeout: float | None = None,
    ) -> dict[str, AgentError | None]:
        """Configure each machine's part (by agent id) in one call: None where it is done,
        the error the single call would have raised where not; a machine the process does
        not serve promptly now is left out (ask it alone)."""
        request = pb.FleetConfigurePartitionRequest(
            machines=[
                pb.MachineConfigure(
                    agent_id=agent_id,
                    request=pb.ConfigurePartitionRequest(
                        config=convert.config_to_wire(config), allowed_hosts=hosts
                    ),
                )
                for agent_id, config in configs.items()
            ]
        )
        reply = await self._call(self._stub.FleetConfigurePartition, request, timeout)
        return {
            m.agent_id: machine_refusal(m.agent_id, self.address, m.refused)
            if m.HasField("refused")
            else None
            for m in reply.machines
        }

    async def fleet_release(
        self, agent_ids: Sequence[str], partition_id: str, *, timeout: float | None = None
    ) -> dict[str, AgentError | bool]:
        """Release the partition on each machine in one call: whether it was released now
        (False: it was not configured), or the error; machines left out as
        :meth:`fleet_configure`."""
        request = pb.FleetReleasePartitionRequest(agent_ids=agent_ids, partition_id=partition_id)
        reply = await self._call(self._stub.FleetReleasePartition, request, timeout)
        return {
            m.agent_id: machine_refusal(m.agent_id, self.address, m.refused)
            if m.HasField("refused")
            else bool(m.released.released)
            for m in reply.machines
        }

    async def fleet_configurations(
        self, agent_ids: Sequence[str], *, timeout: float | None = None
    ) -> dict[str, list[ConfiguredPartition]]:
        """What each of these machines of this agent's process has configured, by agent id;
        a machine the process does not serve promptly now is left out."""
        request = pb.FleetConfigurationsRequest(agent_ids=agent_ids)
        reply = await self._call(self._stub.FleetConfigurations, request, timeout)
        return self._decode(
            lambda: {
                m.agent_id: [convert.configured_from_wire(p) for p in m.partitions]
                for m in reply.machines
            }
        )

    async def run_link_tests(
        self, tests: Iterable[LinkTestKind] = (), *, timeout: float | None = None
    ) -> list[LinkTestResult]:
        request = pb.RunLinkTestsRequest(tests=[pb.LinkTestKind.ValueType(t.value) for t in tests])
        reply = await self._call(self._stub.RunLinkTests, request, timeout)
        return self._decode(lambda: [convert.link_test_result_from_wire(r) for r in reply.results])

    async def health(
        self,
        since_event: int = 0,
        *,
        timeout: float | None = None,
        memo: HealthMemo | None = None,
    ) -> MachineHealth:
        """A heartbeat: IPU and link state, faults, and events after ``since_event``.
        ``memo`` spares sending and decoding what is the same as before."""
        known, known_links = memo.known(self.agent) if memo is not None else (0, 0)
        request = pb.HealthRequest(
            since_event=since_event, known_version=known, known_links_version=known_links
        )
        reply = await self._call(self._stub.Health, request, timeout)
        decode = memo.decode if memo is not None else convert.health_from_wire
        return self._decode(lambda: decode(reply))

    async def fleet_health(
        self,
        machines: Sequence[tuple[str, int]],
        *,
        timeout: float | None = None,
        memo: HealthMemo | None = None,
    ) -> list[MachineHealth]:
        """Heartbeats of machines hosted by this agent's process, as (agent id, since event)
        pairs; a machine the process does not serve promptly now is left out. ``memo``
        spares decoding answers equal to the previous ones."""
        request = pb.FleetHealthRequest()
        for agent_id, since_event in machines:
            known, known_links = memo.known(agent_id) if memo is not None else (0, 0)
            request.machines.add(
                agent_id=agent_id,
                since_event=since_event,
                known_version=known,
                known_links_version=known_links,
            )
        reply = await self._call(self._stub.FleetHealth, request, timeout)
        decode = memo.decode if memo is not None else convert.health_from_wire
        return self._decode(lambda: [decode(m) for m in reply.machines])

    async def watch_events(self, since_event: int = 0) -> AsyncIterator[EventBatch]:
        """Events after ``since_event`` now, then each new batch as it happens (no deadline).

        The first batch always comes at once (possibly empty) and carries the
        agent's boot id. Stop by breaking out of the loop.
        """
        call = self._stub.WatchEvents(
            pb.WatchEventsRequest(since_event=since_event), metadata=self._metadata
        )
        try:
            async for message in call:
                yield self._decode(functools.partial(convert.batch_from_wire, message))
        except grpc.aio.AioRpcError as err:
            raise translate(self.agent, self.address, err) from None
        finally:
            call.cancel()

    async def inject_fault(self, fault: Fault, *, timeout: float | None = None) -> list[Fault]:
        """Start a fault; returns every active fault of the agent and its machine."""
        request = pb.InjectFaultRequest(fault=convert.fault_to_wire(fault))
        reply = await self._call(self._stub.InjectFault, request, timeout)
        return self._decode(lambda: [convert.fault_from_wire(f) for f in reply.active_faults])

    async def clear_fault(
        self, fault: Fault | None = None, *, timeout: float | None = None
    ) -> list[Fault]:
        """End the fault with the same target, or every fault when ``fault`` is None."""
        if fault is None:
            request = pb.ClearFaultRequest(all=True)
        else:
            request = pb.ClearFaultRequest(fault=convert.fault_to_wire(fault))
        reply = await self._call(self._stub.ClearFault, request, timeout)
        return self._decode(lambda: [convert.fault_from_wire(f) for f in reply.active_faults])


class ChannelPool(ClosedOnExit):
    """One gRPC channel per agent address, shared by every client of that address.

    Create, use and close it inside one event loop (gRPC's asyncio channels
    belong to the loop that made them).
    """

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._clients: dict[tuple[str, str | None, float, str], AgentClient] = {}

    def __len__(self) -> int:
        return len(self._channels)

    def channel(self, address: str) -> grpc.aio.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
            self._channels[address] = channel
        return channel

    def client(
        self,
        address: str,
        *,
        agent_id: str | None = None,
        timeout: float | None = None,
        key: str = "",
    ) -> AgentClient:
        """A client over the pooled channel (closing the client leaves the channel open),
        presenting the agent key ``key``.

        Clients are cached too, so asking for one per call costs a dict lookup.
        """
        cache_key = (address, agent_id, self.timeout if timeout is None else timeout, key)
        client = self._clients.get(cache_key)
        if client is None:
            # An agent that restarted answers to a new key: forget its clients of old keys.
            for stale in [k for k in self._clients if k[:3] == cache_key[:3]]:
                del self._clients[stale]
            client = AgentClient(
                address,
                agent_id=agent_id,
                timeout=cache_key[2],
                channel=self.channel(address),
                key=key,
            )
            self._clients[cache_key] = client
        return client

    def detach(self, address: str) -> grpc.aio.Channel | None:
        """Take the channel of ``address`` out of the pool (the next call dials anew) and
        hand it to the caller to close."""
        for key in [k for k in self._clients if k[0] == address]:
            del self._clients[key]
        return self._channels.pop(address, None)

    async def discard(self, address: str) -> None:
        """Close the channel of ``address`` (e.g. when the agent was removed)."""
        channel = self.detach(address)
        if channel is not None:
            await channel.close()

    async def close(self) -> None:
        channels = list(self._channels.values())
        self._channels.clear()
        self._clients.clear()
        for channel in channels:
            await channel.close()
