"""A real controller serving the cloud, on real emulated agents, in this process.

:func:`start_cloud` starts an :class:`AgentFleet` of emulated Bow-2000
machines and ``vpod.controller.server.serve`` (user gRPC, admin gRPC, HTTP)
with the cloud extension, on one event loop in a background thread, so tests
are plain functions talking HTTP (``httpx``), running the ``vpod`` and
``vipu`` CLIs as subprocesses, or calling the cloud's services directly
(:meth:`LiveCloud.run`). The controller runs with ``--secure``: every vPOD's
V-IPU user sees only its own allocation.

The cloud's clock is a :class:`FakeClock` that tests move by hand, so that
metering and invoices can be checked to the minute; the controller keeps the
system clock (heartbeats). :meth:`LiveCloud.restart` stops the controller
(interrupting running tasks, as a restart would) and serves the same data
directory again, with the same agents.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from vpod.agent.addressing import AddressMode, AddressPlan
from vpod.agent.fabric import claim_addresses, release_addresses
from vpod.agent.fleet import AgentFleet, FleetSettings
from vpod.cloud.app import Cloud
from vpod.cloud.drivers import ComputeDriver
from vpod.cloud.drivers.sandbox import sandbox_problem
from vpod.cloud.drivers.tenant_network import network_problem
from vpod.cloud.extension import CloudServer
from vpod.cloud.ids import SequentialIds
from vpod.cloud.settings import CloudSettings
from vpod.controller.caller import SYSTEM
from vpod.controller.clock import FakeClock
from vpod.controller.server import RunningServer, serve
from vpod.controller.settings import Settings
from vpod.web import WebConsole

T = TypeVar("T")
CALL_TIMEOUT_S = 120.0
"""A safety net for a hung call, not a performance threshold."""
POD_CLUSTER = "pod"
RETRY_S = 0.05
"""The first wait before a task runs again after a temporary failure (short, for tests)."""


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="live-cloud", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT_S) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(CALL_TIMEOUT_S)
        self.loop.close()


@dataclass
class LiveCloud:
    loop: LoopThread
    fleet: AgentFleet
    data_dir: Path
    clock: FakeClock
    machines: int
    compute: ComputeDriver | None = None
    secure: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    """Cloud settings beyond the defaults (e.g. ``storage_endpoints``)."""
    web: bool = False
    """Serve the web console too (browser tests)."""
    server: CloudServer | None = None
    running: RunningServer | None = None
    admin_token: str = ""
    fabric: list[str] = field(default_factory=list)
    """Link-local IPUoF addresses this cloud's machines hold (released when it stops)."""
    _stop: asyncio.Event | None = None
    _serving: asyncio.Future[None] | None = None
    _tokens: dict[str, str] = field(default_factory=dict)
    _ids: SequentialIds = field(default_factory=SequentialIds)

    @property
    def cloud(self) -> Cloud:
        assert self.server is not None
        assert self.server.cloud is not None
        return self.server.cloud

    @property
    def url(self) -> str:
        assert self.running is not None
        return f"http://127.0.0.1:{self.running.http_port}"

    @property
    def user_port(self) -> int:
        assert self.running is not None
        return self.running.user_port

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT_S) -> T:
        return self.loop.run(coro, timeout)

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(
            base_url=self.url + "/api/cloud/v1", headers=headers, timeout=CALL_TIMEOUT_S
        )

    def admin(self) -> httpx.Client:
        return self.client(self.admin_token)

    @property
    def metrics_token_file(self) -> Path:
        """The scrape token /metrics accepts (written on first use)."""
        path = self.data_dir / "metrics.token"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(24) + "\n")
        return path

    def metrics(self) -> str:
        """``GET /metrics`` as Prometheus scrapes it, with the scrape token."""
        token = self.metrics_token_file.read_text().strip()
        reply = httpx.get(
            self.url + "/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        reply.raise_for_status()
        return reply.text

    def project(self, project_id: str, **quotas: int) -> str:
        """Create a project (once) and return a token of it."""
        if project_id not in self._tokens:
            with self.admin() as http:
                reply = http.post("/admin/projects", json={"id": project_id, "quotas": quotas})
                assert reply.status_code == 201, reply.text
                self._tokens[project_id] = reply.json()["token"]["token"]
        return self._tokens[project_id]

    def wait(self, task_id: str) -> dict[str, Any]:
        """The task's JSON once it has ended."""
        task = self.run(self.cloud.runner.wait(task_id, CALL_TIMEOUT_S))
        from vpod.cloud.api.convert import task_out

        return task_out(task).model_dump(mode="json")

    def restart(self) -> None:
        """Stop the controller (running tasks are interrupted) and serve the data dir again."""
        self.run(self._shutdown())
        self.run(self._serve())

    async def _serve(self) -> None:
        settings = Settings(
            data_dir=self.data_dir,
            user_port=0,
            admin_port=0,
            http_port=0,
            secure=self.secure,
            agent_timeout_s=5.0,
            metrics_token_file=self.metrics_token_file,
        )
        overrides: dict[str, Any] = {"clock": self.clock, "ids": self._ids}
        if self.compute is not None:
            overrides["compute"] = self.compute
        extra = dict(self.settings)
        if not isolated_networks():
            # Tests run as root (here and in CI), where servers are sandboxed. Elsewhere the
            # cloud's own tests still run, deliberately unsandboxed (tests/cloud/test_sandbox.py
            # skips, saying why).
            extra.setdefault("unsafe_shared_host", True)
        cloud_settings = CloudSettings(
            data_dir=self.data_dir,
            vipu_clusters=(POD_CLUSTER,),
            task_poll_s=0.2,
            task_retry_s=RETRY_S,
            **extra,
        )
        self.server = CloudServer(cloud_settings, **overrides)
        ready: asyncio.Future[RunningServer] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()

        async def on_ready(running: RunningServer) -> None:
            assert self.server is not None
            self.server.listening(running)
            await _ensure_pod(running, self.fleet, self.machines)
            ready.set_result(running)

        self._serving = asyncio.ensure_future(
            serve(
                settings,
                ready=on_ready,
                stop=self._stop,
                extensions=[self.server, *([WebConsole()] if self.web else [])],
            )
        )
        done, _ = await asyncio.wait([ready, self._serving], return_when=asyncio.FIRST_COMPLETED)
        if self._serving in done:
            self._serving.result()
        self.running = ready.result()
        token_file = cloud_settings.admin_token_path
        self.admin_token = token_file.read_text().strip()

    async def _shutdown(self) -> None:
        if self._stop is not None and self._serving is not None:
            self._stop.set()
            await self._serving
        self._stop = self._serving = None


async def _ensure_pod(running: RunningServer, fleet: AgentFleet, machines: int) -> None:
    inventory = running.controller.inventory
    known = {a.id for a in await inventory.list_agents()}
    for host in fleet.hosts:
        if host.agent_id not in known:
            await inventory.create_agent(SYSTEM, host.agent_id, host.host, host.port, key=host.key)
    if POD_CLUSTER not in {c.id for c in await inventory.list_clusters()}:
        ids = [h.agent_id for h in fleet.hosts[:machines]]
        await inventory.create_cluster(SYSTEM, POD_CLUSTER, ids)


def start_cloud(
    data_dir: Path,
    *,
    machines: int = 4,
    compute: ComputeDriver | None = None,
    secure: bool = True,
    settings: dict[str, Any] | None = None,
    web: bool = False,
) -> LiveCloud:
    """A secure controller serving the cloud over ``machines`` emulated Bow-2000s (cluster
    ``pod``, the cloud's only V-IPU cluster)."""
    loop = LoopThread()

    # Where servers get networks of their own, the machines' IPUoF endpoints listen on
    # link-local fabric addresses they can be routed to (as `vpod up` does).
    fabric = claim_addresses(machines) if isolated_networks() else []

    async def start() -> LiveCloud:
        plan = AddressPlan(
            mode=AddressMode.PER_MACHINE,
            base_host="127.0.0.1",
            agent_port=0,
            server_port=0,
            rdma_port=0,
            ipuof_base_host=fabric[0] if fabric else None,
        )
        fleet = AgentFleet(
            FleetSettings(machines=machines, plan=plan, stop_grace=0, fault_injection=True)
        )
        await fleet.start()
        live = LiveCloud(
            loop=loop,
            fleet=fleet,
            data_dir=data_dir,
            clock=FakeClock(),
            machines=machines,
            compute=compute,
            secure=secure,
            settings=dict(settings or {}),
            fabric=fabric,
            web=web,
        )
        await live._serve()
        return live

    try:
        return loop.run(start())
    except BaseException:
        loop.close()
        release_addresses(fabric)
        raise


def stop_cloud(live: LiveCloud) -> None:
    async def stop() -> None:
        await live._shutdown()
        await live.fleet.stop()

    try:
        live.run(stop())
    except TimeoutError:
        _print_tasks(live.loop.loop)  # what the stop still waits on, for whoever reads the log
        raise
    finally:
        live.loop.close()
        release_addresses(live.fabric)


def _print_tasks(loop: asyncio.AbstractEventLoop) -> None:
    for task in list(asyncio.all_tasks(loop)):
        print(f"--- task {task.get_name()}: {task.get_coro()!r}", file=sys.stderr)
        try:
            task.print_stack(limit=12, file=sys.stderr)
        except TypeError:  # a compiled coroutine (grpc's) has frames without line numbers
            print("    (no Python stack)", file=sys.stderr)


def isolated_networks() -> bool:
    """Whether servers here get sandboxes and networks of their own (root, bwrap, nft)."""
    return sandbox_problem() is None and network_problem() is None
