"""The GPU host agent's loop: register the host with its inventory, then send samples.

The agent talks to the cloud API of the controller (``/api/cloud/v1/gpu-agents``)
over HTTP(S), authenticated like the IPU agents: the registration token an
administrator issued (``vipu-admin create agent-token``) in the header
``vipu-agent-token``; the first registration binds the host id to that
token. Registration is retried with backoff (with jitter) until the
controller answers, as the IPU agents do; a refused sample (the host was
removed, the controller forgot it) registers the host again. Sleep and
randomness are injected for tests.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import httpx

from ..registration import Backoff
from .backend import GpuBackend
from .health import HealthLimits, assess
from .model import GpuSample, HostInventory

log = logging.getLogger("vpod.agent.gpu")

API = "/api/cloud/v1/gpu-agents"
TOKEN_HEADER = "vipu-agent-token"
"""The same name the IPU agents' registration sends its token under (gRPC metadata)."""


@dataclass(frozen=True)
class HostIdentity:
    """What the operator says about the host (the GPUs say the rest)."""

    host_id: str
    role: str = "baremetal"
    """``baremetal`` (handed out whole) or ``hypervisor`` (GPU VMs take slices)."""
    fabric: str | None = None
    """InfiniBand fabric the host is cabled into."""
    model: str | None = None
    """The cloud's host model (``h100-80``); None: the controller derives it from the GPUs."""


class Refused(Exception):
    """The controller answered with a refusal (4xx): its sentence."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControllerLink:
    """HTTP calls to the controller's GPU agent routes."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        verify: str | bool = True,
        timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {TOKEN_HEADER: token} if token else {}
        self._client = httpx.AsyncClient(
            base_url=url.rstrip("/"),
            headers=headers,
            verify=verify,
            timeout=timeout_s,
            transport=transport,
        )

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = await self._client.post(API + path, json=body)
        if 400 <= reply.status_code < 500:
            try:
                body = reply.json()
                message = str(body.get("error", {}).get("message") or body)[:500]
            except (ValueError, AttributeError):
                message = reply.text[:300]
            raise Refused(reply.status_code, message)
        reply.raise_for_status()
        answer: dict[str, Any] = reply.json() if reply.content else {}
        return answer

    async def register(
        self, identity: HostIdentity, boot_id: str, inventory: HostInventory
    ) -> dict[str, Any]:
        return await self._post(
            "/register",
            {
                "host_id": identity.host_id,
                "role": identity.role,
                "fabric": identity.fabric,
                "model": identity.model,
                "boot_id": boot_id,
                "inventory": inventory.to_json(),
            },
        )

    async def report(self, host_id: str, boot_id: str, samples: list[GpuSample]) -> None:
        await self._post(
            f"/{host_id}/samples",
            {"boot_id": boot_id, "samples": [s.to_json() for s in samples]},
        )

    async def close(self) -> None:
        await self._client.aclose()


@dataclass(eq=False)
class GpuHostAgent:
    """One GPU host: its backend, who it is, and where it reports (every ``interval_s``)."""

    backend: GpuBackend
    identity: HostIdentity
    link: ControllerLink
    _: KW_ONLY
    interval_s: float = 2.0
    limits: HealthLimits = field(default_factory=HealthLimits)
    backoff: Backoff = field(default_factory=Backoff)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """Injected, as ``rand``, for tests."""
    rand: Callable[[], float] = random.random
    boot_id: str = field(init=False, default_factory=lambda: uuid.uuid4().hex)
    registered: asyncio.Event = field(init=False, default_factory=asyncio.Event)

    async def samples(self) -> list[GpuSample]:
        return [assess(r, self.limits) for r in await self.backend.sample()]

    async def register(self) -> None:
        """Register the host, retrying with backoff until the controller accepts it."""
        delays = self.backoff.delays(self.rand)
        attempt = 0
        host = self.identity.host_id
        while True:
            attempt += 1
            try:
                inventory = await self.backend.inventory()
                answer = await self.link.register(self.identity, self.boot_id, inventory)
            except (Refused, httpx.HTTPError, ValueError) as exc:
                delay = next(delays)
                refused = isinstance(exc, Refused)
                level = logging.ERROR if refused or attempt == 1 else logging.DEBUG
                log.log(
                    level,
                    "GPU host %s could not register (%s); retrying in %.1f s",
                    host,
                    exc or type(exc).__name__,
                    delay,
                )
                await self.sleep(delay)
                continue
            log.info("GPU host %s registered: %s", host, answer.get("message", ""))
            self.registered.set()
            return

    async def run(self) -> None:
        """Register, then report every ``interval_s`` until cancelled."""
        await self.register()
        while True:
            try:
                await self.link.report(self.identity.host_id, self.boot_id, await self.samples())
            except Refused as exc:
                log.warning(
                    "GPU host %s: samples refused (%s); registering again",
                    self.identity.host_id,
                    exc,
                )
                self.registered.clear()
                await self.register()
                continue
            except (httpx.HTTPError, ValueError) as exc:
                log.warning("GPU host %s: cannot report (%s)", self.identity.host_id, exc)
            await self.sleep(self.interval_s)
