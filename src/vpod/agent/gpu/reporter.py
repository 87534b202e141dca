"""The GPU host agent's loop: register the host with its inventory, then send samples.

The agent talks to the cloud API of the controller (``/api/cloud/v1/gpu-agents``)
over HTTP(S), authenticated like the IPU agents: the registration token an
administrator issued (``vipu-admin create agent-token``) in the header
``vipu-agent-token``; the first registration binds the host id to that
token. Registration is retried with backoff (with jitter) until the
controller answers, as the IPU agents do; a refused sample (the host was
removed, the controller forgot it) registers the host again. Sleep and
randomness are injected for tests. The hosts of one process (``--emulate-hosts``)
share a :class:`BatchingLink`: one connection, and one request per interval for all
of their samples.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol

import httpx

from vpod.domain.errors import Kind
from vpod.wire.errors import HTTP_STATUS

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


def _status_of(code: str) -> int:
    """The HTTP status the single-host route answers a refusal of ``code`` with."""
    try:
        return HTTP_STATUS[Kind(code)]
    except ValueError:
        return 400


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
        await self.post_samples(Report(host_id, boot_id, [s.to_json() for s in samples]))

    async def post_samples(self, report: Report) -> None:
        """One host's samples, alone."""
        await self._post(
            f"/{report.host_id}/samples", {"boot_id": report.boot_id, "samples": report.samples}
        )

    async def report_many(self, reports: Sequence[Report]) -> list[Refused | None]:
        """Several hosts' samples in one request: each host's refusal, or None where taken.
        Raises :class:`Refused` for a refusal of the whole request (a 404 or 405: the
        controller predates the route)."""
        answer = await self._post(
            "/samples",
            {
                "reports": [
                    {"host_id": r.host_id, "boot_id": r.boot_id, "samples": r.samples}
                    for r in reports
                ]
            },
        )
        outcomes: list[Refused | None] = []
        for result in answer["results"]:
            error = result.get("error") or {}
            status = _status_of(str(error.get("code")))
            message = str(error.get("message") or "refused")
            outcomes.append(None if result["accepted"] else Refused(status, message))
        if len(outcomes) != len(reports):
            raise ValueError(f"the controller answered {len(outcomes)} of {len(reports)} hosts")
        return outcomes

    async def close(self) -> None:
        await self._client.aclose()


@dataclass(frozen=True)
class Report:
    """One host's samples, encoded, waiting to be sent with the others'."""

    host_id: str
    boot_id: str
    samples: list[dict[str, Any]]


class Link(Protocol):
    """Where a host's agent registers and reports: a :class:`ControllerLink` of its own, or a
    :class:`BatchingLink` shared by the hosts of one process."""

    async def register(
        self, identity: HostIdentity, boot_id: str, inventory: HostInventory
    ) -> dict[str, Any]: ...

    async def report(self, host_id: str, boot_id: str, samples: list[GpuSample]) -> None: ...


class BatchingLink:
    """The reports of the ``hosts`` hosts one process serves, sent in one request.

    A process emulating a few dozen hosts would otherwise send a request per host and
    interval; the controller's work per request (parsing, authenticating, reading the hosts'
    records) is then paid once. A report waits until every host has reported or
    ``window_s`` has passed, whichever comes first; each host's loop sleeps from the same
    answer, so their reports stay together. A controller without the batch route (404 or
    405) is sent each report alone from then on.
    """

    def __init__(self, link: ControllerLink, hosts: int, *, window_s: float = 0.2) -> None:
        self._link = link
        self._hosts = hosts
        self._window_s = window_s
        self._waiting: list[tuple[Report, asyncio.Future[None]]] = []
        self._flush: asyncio.TimerHandle | None = None
        self._batches = True
        self._sending: set[asyncio.Task[None]] = set()
        """Requests on their way (each task kept until it ends)."""

    async def register(
        self, identity: HostIdentity, boot_id: str, inventory: HostInventory
    ) -> dict[str, Any]:
        return await self._link.register(identity, boot_id, inventory)

    async def report(self, host_id: str, boot_id: str, samples: list[GpuSample]) -> None:
        if not self._batches:
            await self._link.report(host_id, boot_id, samples)
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._waiting.append((Report(host_id, boot_id, [s.to_json() for s in samples]), done))
        if len(self._waiting) >= self._hosts:
            self._send()
        elif self._flush is None:
            self._flush = loop.call_later(self._window_s, self._send)
        await done

    def _send(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        batch, self._waiting = self._waiting, []
        if batch:
            task = asyncio.create_task(self._sent(batch), name="gpu-samples")
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _sent(self, batch: list[tuple[Report, asyncio.Future[None]]]) -> None:
        """Send ``batch`` and settle every report of it, however the request ends: a host
        loop waiting on a report nobody settles would fall silent."""
        cause = "the request ended without an answer"
        try:
            await self._settle(batch)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            cause = str(exc) or type(exc).__name__
        finally:
            for _, done in batch:
                if not done.done():
                    done.set_exception(httpx.HTTPError(f"batched samples not sent: {cause}"))

    async def _settle(self, batch: list[tuple[Report, asyncio.Future[None]]]) -> None:
        try:
            outcomes = await self._link.report_many([report for report, _ in batch])
        except Refused as exc:
            if exc.status in (404, 405):
                log.info("the controller takes no batched samples: sending each host's alone")
                self._batches = False
                await asyncio.gather(*(self._alone(report, done) for report, done in batch))
                return
            outcomes = [exc] * len(batch)
        for (_, done), outcome in zip(batch, outcomes, strict=True):
            if done.done():
                continue
            if outcome is None:
                done.set_result(None)
            else:
                done.set_exception(outcome)

    async def _alone(self, report: Report, done: asyncio.Future[None]) -> None:
        try:
            await self._link.post_samples(report)
        except (Refused, httpx.HTTPError, ValueError) as exc:
            if not done.done():
                done.set_exception(exc)
        else:
            if not done.done():
                done.set_result(None)


@dataclass(eq=False)
class GpuHostAgent:
    """One GPU host: its backend, who it is, and where it reports (every ``interval_s``)."""

    backend: GpuBackend
    identity: HostIdentity
    link: Link
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
