"""Announcing an agent to its controller (``vipu-agent --register HOST:PORT``).

Registration is optional and must never stop an agent from serving: the
controller may start later, restart, or not implement registration yet. So
each agent retries with exponential backoff (with jitter, so a pod of agents
does not knock in step) until the controller answers, then stops. Sleep and
randomness are injected for tests.

When the controller's admin endpoint serves TLS (``vipu-server --tls``), the
agent dials it with :class:`RegistrationTls`: the CA that signed the
controller's certificate, and, when the controller requires client
certificates (``--tls-client-auth``), the agent's own certificate and key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc

from vpod.wire import admin_pb2, admin_pb2_grpc

from .model import MachineIdentity

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between attempts: ``initial * factor**n``, capped, with +/- ``jitter`` spread."""

    initial: float = 0.5
    factor: float = 2.0
    maximum: float = 30.0
    jitter: float = 0.2

    def delays(self, rand: Callable[[], float] = random.random) -> _Delays:
        return _Delays(self, rand)


class _Delays:
    def __init__(self, backoff: Backoff, rand: Callable[[], float]) -> None:
        self._backoff = backoff
        self._rand = rand
        self._next = backoff.initial

    def __iter__(self) -> _Delays:
        return self

    def __next__(self) -> float:
        b = self._backoff
        base = self._next
        self._next = min(b.maximum, base * b.factor)
        spread = 1.0 + b.jitter * (2.0 * self._rand() - 1.0)
        return max(0.0, base * spread)


@dataclass(frozen=True)
class RegistrationTls:
    """PEM bytes for a TLS channel to the controller: its CA, and our client pair if any."""

    ca: bytes
    cert: bytes | None = None
    key: bytes | None = None

    @classmethod
    def from_files(
        cls, ca: Path | None, cert: Path | None = None, key: Path | None = None
    ) -> RegistrationTls | None:
        """Read the files (None when no CA is named); ValueError says what is wrong."""
        if (cert is None) != (key is None):
            raise ValueError("give --tls-cert and --tls-key together (a certificate and its key)")
        if ca is None:
            if cert is not None:
                raise ValueError(
                    "--tls-cert needs --tls-ca: the CA that signed the controller's certificate"
                )
            return None

        def read(path: Path, option: str) -> bytes:
            try:
                return path.read_bytes()
            except OSError as exc:
                raise ValueError(f"cannot read {option} file {path}: {exc.strerror}") from None

        return cls(
            ca=read(ca, "--tls-ca"),
            cert=read(cert, "--tls-cert") if cert is not None else None,
            key=read(key, "--tls-key") if key is not None else None,
        )


def registration_channel(target: str, tls: RegistrationTls | None) -> grpc.aio.Channel:
    """A channel to the controller's admin endpoint: plain, or TLS (mutual with a client pair)."""
    if tls is None:
        return grpc.aio.insecure_channel(target)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=tls.ca, private_key=tls.key, certificate_chain=tls.cert
    )
    return grpc.aio.secure_channel(target, credentials)


def registration_request(
    identity: MachineIdentity, *, advertise_host: str, port: int, agent_key: str = ""
) -> admin_pb2.RegisterAgentRequest:
    """What the agent tells the controller about itself, with the key the controller must
    present on every call to it (:mod:`.trust`)."""
    return admin_pb2.RegisterAgentRequest(
        agent_id=identity.agent_id,
        host=advertise_host,
        port=port,
        machine_type=identity.machine_type.value,
        serial=identity.serial,
        ipuof_address=identity.ipuof_address,
        boot_id=identity.boot_id,
        agent_version=identity.agent_version,
        agent_key=agent_key,
    )


async def register_until_answered(
    channel: grpc.aio.Channel,
    request: admin_pb2.RegisterAgentRequest,
    *,
    target: str,
    backoff: Backoff | None = None,
    timeout: float = 5.0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
    token: str = "",
    limit: asyncio.Semaphore | None = None,
) -> admin_pb2.RegisterAgentReply:
    """Call RegisterAgent on ``channel`` until the controller answers; return its answer.

    Every failure (controller down, slow, refusing, not implementing the
    call) is logged and retried; only cancellation stops the loop. ``limit`` bounds the
    calls in flight that share it (a controller refuses streams past its cap). ``token`` is
    the agent registration token a ``--secure`` controller asks for (sent as
    metadata ``vipu-agent-token``).
    """
    stub = admin_pb2_grpc.AgentRegistrationServiceStub(channel)
    delays = (backoff or Backoff()).delays(rand)
    metadata = (("vipu-agent-token", token),) if token else None
    attempt = 0
    while True:
        attempt += 1
        try:
            async with limit or contextlib.nullcontext():
                reply: admin_pb2.RegisterAgentReply = await stub.RegisterAgent(
                    request, timeout=timeout, metadata=metadata
                )
        except grpc.aio.AioRpcError as err:
            delay = next(delays)
            refused = err.code() in (
                grpc.StatusCode.UNAUTHENTICATED,
                grpc.StatusCode.PERMISSION_DENIED,
            )
            level = logging.ERROR if refused else logging.WARNING
            if attempt > 1 and not (refused and attempt % 20 == 0):
                level = logging.DEBUG
            log.log(
                level,
                "agent %s could not register with controller %s (%s: %s); retrying in %.1f s",
                request.agent_id,
                target,
                err.code().name,
                err.details(),
                delay,
            )
            await sleep(delay)
            continue
        log.info(
            "agent %s registered with controller %s: %s",
            request.agent_id,
            target,
            reply.message or ("known" if reply.known else "discovered"),
        )
        return reply
